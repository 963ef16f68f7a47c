"""Empirical risk minimisation over a narrow ReLU architecture by batched multi-start
Levenberg-Marquardt.

:func:`fit_multistart` fits ``restarts`` fully connected ReLU networks with ``depth``
hidden layers of ``width`` units to ``(X, y)`` under the squared loss, all restarts as
one batched array: for a layered ReLU network the Jacobian of the output with respect to
layer ``k``'s weights is the outer product of a backward vector (read off the activation
pattern) and the forward activation, so the per-sample Jacobian of every restart is a few
batched products, and a Levenberg-Marquardt step is a small ``(P, P)`` solve per restart
(``P`` parameters: 21 for depth 3, width 2, input dimension 2).  The restart with the
lowest *training* loss is the estimate (an approximation of ERM over the class; test data
never enter).  When that loss is zero up to ``tol`` times the targets' variance, the
estimate is an empirical risk minimiser of the class up to that tolerance (the loss is
>= 0) and the
status says ``interpolated``; otherwise it is only the best local solution found
(``partial``).  :func:`fit_basin_hopping` continues from the best restarts: each round it
refits perturbed copies of them and keeps a copy when it lowers the training loss.

Starts: ``"he"`` (He weights, each hidden unit's kink at a random quantile, between 10% and
90%, of its pre-activations on the training points, so no unit starts dead), ``"fold"`` (random compositions of one-dimensional piecewise-linear maps: every unit
of a hidden layer reads the same random direction of the previous layer, rescaled to span
[0, 1] on the training points, with kinks uniform in [0, 1]), or given
networks (:class:`~relulab.Network`) of the right shape plus ``N(0, noise^2)`` on every parameter.

Example:
    >>> import numpy as np
    >>> t = np.linspace(0, 2 * np.pi, 24, endpoint=False)
    >>> X = np.c_[np.cos(t), np.sin(t)]; y = np.abs(X[:, 0])
    >>> fit = fit_multistart(X, y, depth=1, width=2, restarts=16, seed=0)
    >>> fit.status, bool(np.allclose(fit.network(X)[:, 0], y, atol=1e-6))
    ('interpolated', True)
"""

from __future__ import annotations

import dataclasses
import numbers
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import is_int_at_least, is_positive_seconds
from ..limits import Deadline, ResourceLimitError, check_bytes, dense_flop_rate
from ..network import Network
from ..results import Result
from ..tolerance import or_default, power_of_two_exponent
from ._model import DynamicsError

__all__ = ["MultistartFit", "fit_multistart", "fit_basin_hopping"]

# a fit "interpolates" when its training MSE is below this x the targets' variance: float64
# least squares on these sizes reaches ~1e-30, a wrong local minimum stays above ~1e-4
INTERP_TOL = 1e-10  # tol: relative training MSE counted as zero (see above)
STOP_FACTOR = 1e-10  # tol: a restart stops iterating at tol x this (float64 reaches it; 'zero' is tol)
LAMBDA_START = 1e-2  # initial Levenberg-Marquardt damping (relative to the Gauss-Newton diagonal)
LAMBDA_DOWN, LAMBDA_UP = 0.3, 4.0  # damping update after an accepted / rejected step
LAMBDA_MIN = 1e-12  # tol: below this the damped step equals the Gauss-Newton step anyway
LAMBDA_MAX = 1e10  # a restart whose damping exceeds this is stuck (no descent direction left)
DAMP_FLOOR = 1e-12  # tol: keeps the damped system regular where a unit is dead (zero column)
BLOCK_ENTRIES = 4_000_000  # restarts per block: block * n * P Jacobian entries at most (memory)
TIMED_BLOCK_ENTRIES = 500_000  # the same under a time limit (one iteration of a block is the clock's step)
START_KINDS = ("he", "fold")
HOP_SCALES = (0.03, 0.1, 0.3)  # relative perturbation sizes of a basin-hopping child (one drawn per child)
HOP_SHIFT = 0.3  # additive part of a child's perturbation (moves parameters that are near 0)
KINK_QUANTILES = (0.1, 0.9)  # a random start's kinks lie between these quantiles of the unit's inputs


@dataclass(frozen=True)
class MultistartFit(Result):
    """Outcome of :func:`fit_multistart`.

    Attributes:
        status: ``"interpolated"`` (the best restart's training MSE is <= ``tol`` x the
            targets' variance: an empirical risk minimiser of the class, up to ``tol``),
            ``"partial"`` (the best local solution found; not shown to minimise the risk),
            or ``"time_limit"`` (stopped by the time limit; the best found so far).
        train_mse: training MSE of every restart at the end (``inf`` for restarts not run
            before the time limit: a restart counts as run once its block of restarts has
            done a Levenberg-Marquardt iteration).
        best: index of the restart with the lowest training MSE.
        network: that restart as a :class:`~relulab.Network`.
        interpolating_fraction: fraction of restarts that interpolate (as for ``status``).
        depth, width, restarts, iterations: the class, the number of starts, and the
            Levenberg-Marquardt iterations run (the most any restart ran).
        completed: restarts that ran at least one iteration (or needed none); fewer than
            ``restarts`` only after a time limit.  Starts are drawn block by block, so
            restarts never reached have no parameters (``predict`` and ``networks`` refuse
            them with a ``DynamicsError``).
        seconds: wall-clock time.

    Example:
        >>> import numpy as np
        >>> X = np.array([[-1.0], [0.0], [1.0], [2.0]]); y = np.maximum(X[:, 0], 0)
        >>> fit = fit_multistart(X, y, depth=1, width=1, restarts=8, seed=1)
        >>> fit.status, fit.to_dict()["depth"]
        ('interpolated', 1)
    """

    status: str
    train_mse: np.ndarray
    best: int
    network: Network
    interpolating_fraction: float
    depth: int
    width: int
    restarts: int
    completed: int
    iterations: int
    seconds: float
    _params: Any = None  # (started restarts, P) final parameters of the restarts started (not serialised)
    _dims: tuple = ()

    def to_dict(self) -> dict:
        d = super().to_dict()
        d["network"] = {"weights": [w.tolist() for w in self.network.weights],
                        "biases": [b.tolist() for b in self.network.biases]}
        return d

    def predict(self, Z: Any, which: Any = None) -> np.ndarray:
        """Outputs at the rows of ``Z`` of the restarts ``which`` (indices; when None, all
        restarts started: all of them unless a time limit stopped the fit), shape
        ``(len(which), m)``.

        Example:
            >>> import numpy as np
            >>> X = np.array([[-1.0], [0.0], [1.0]]); y = np.maximum(X[:, 0], 0)
            >>> fit = fit_multistart(X, y, depth=1, width=1, restarts=4, seed=0)
            >>> fit.predict(X, [fit.best]).shape
            (1, 3)
        """
        try:
            Z = np.asarray(Z, dtype=float)
        except (TypeError, ValueError):
            raise DynamicsError("predict: Z must be an array of real numbers") from None
        if Z.ndim != 2 or Z.shape[1] != self._dims[0] or not np.all(np.isfinite(Z)):
            raise DynamicsError(f"predict: Z must be a finite (n, {self._dims[0]}) array, got shape {Z.shape}")
        th = self._params if which is None else self._params[self._rows(which)]
        return _forward(th, self._dims, Z)[0]

    def networks(self, which: Any) -> list[Network]:
        """The restarts ``which`` (indices) as networks.

        Example:
            >>> import numpy as np
            >>> X = np.array([[-1.0], [0.0], [1.0]]); y = np.maximum(X[:, 0], 0)
            >>> fit = fit_multistart(X, y, depth=1, width=1, restarts=4, seed=0)
            >>> len(fit.networks([0, 1]))
            2
        """
        return [_to_network(self._params[i], self._dims) for i in self._rows(which)]

    def _rows(self, which: Any) -> np.ndarray:
        idx = np.atleast_1d(np.asarray(which))
        if idx.dtype.kind not in "iu" or np.any(idx < 0) or np.any(idx >= self.restarts):
            raise DynamicsError(f"which: restart indices must be integers in [0, {self.restarts}), got {which!r}")
        if np.any(idx >= len(self._params)):
            raise DynamicsError(f"which: restarts from {len(self._params)} on were never started "
                                "(the time limit stopped the fit first)")
        return idx


def fit_multistart(
    X: Any,
    y: Any,
    depth: int,
    width: int,
    restarts: int = 64,
    max_iter: int = 200,
    seed: int = 0,
    start: Any = "he",
    noise: float = 0.0,
    tol: float | None = None,
    time_limit: float | None = None,
) -> MultistartFit:
    """Least-squares fit of ``restarts`` ReLU networks (``depth`` hidden layers of ``width``)
    by batched Levenberg-Marquardt; the restart with the lowest training MSE is kept.

    Args:
        X, y: training inputs ``(n, d)`` and targets ``(n,)``, finite.
        depth, width: the architecture class (``depth >= 1`` hidden layers).
        restarts: number of independent starts.
        max_iter: Levenberg-Marquardt iterations per restart (each restart stops earlier
            when it interpolates or its damping exceeds ``LAMBDA_MAX``).
        seed: seed of the starts.
        start: ``"he"``, ``"fold"`` (see the module docstring), a Network of this shape, or
            a list of ``restarts`` such Networks (one start each).
        noise: standard deviation added to every parameter of a Network start.
        tol: relative training MSE counted as zero (default ``INTERP_TOL``).
        time_limit: seconds; when reached the fit stops and returns the best so far with
            status ``"time_limit"``.

    Example:
        >>> import numpy as np
        >>> X = np.linspace(-1, 1, 9)[:, None]; y = np.abs(X[:, 0])
        >>> fit = fit_multistart(X, y, depth=2, width=2, restarts=32, seed=0)
        >>> fit.status, fit.interpolating_fraction > 0
        ('interpolated', True)
    """
    X, y = _check_data(X, y)
    _check_fit_args("fit_multistart", depth, width, restarts, max_iter, seed, noise, time_limit, tol)
    tol = or_default(tol, INTERP_TOL)
    dims = (X.shape[1],) + (int(width),) * int(depth) + (1,)
    given = _given_starts(dims, int(restarts), start)   # (refused before any work)
    sx, sy = _data_scales(X, y)
    fit = _multistart(X / sx, y / sy, dims, int(restarts), int(max_iter), seed,
                      start if given is None else _to_units(given, dims, 1 / sx, 1 / sy), noise, tol,
                      Deadline(time_limit))
    return _in_units(fit, sx, sy)


def _multistart(X: np.ndarray, y: np.ndarray, dims: tuple, R: int, max_iter: int, seed: int, start: Any,
                noise: float, tol: float, deadline: Deadline) -> MultistartFit:
    """:func:`fit_multistart` on checked data in the units the fit runs in."""
    depth, width = len(dims) - 2, dims[1]
    P = sum(dims[k + 1] * (dims[k] + 1) for k in range(len(dims) - 1))
    # every restart's parameters and loss are kept; one block's Jacobians and starts on top
    # (and, with at least as many samples as parameters, three P x P systems of one restart)
    square = 8.0 * 3 * P * P if X.shape[0] >= P else 0.0
    # a block holds at least one restart, whose Jacobian alone may exceed BLOCK_ENTRIES
    block = max(BLOCK_ENTRIES, X.shape[0] * P)
    check_bytes(8.0 * R * (P + 1) + 8.0 * 6 * block + square,
                f"fit_multistart: restarts={R} (the parameters of {R} networks with {P} parameters each)")
    t0 = time.monotonic()
    rng = np.random.default_rng(seed)
    given = start if isinstance(start, np.ndarray) else None

    def make(a: int, b: int) -> np.ndarray:  # the starts of restarts a..b-1, drawn when their block runs
        return _starts(X, dims, b - a, rng, start if given is None else given[a:b], noise)

    scale = _target_scale(y)
    th, losses, iters, stopped, completed = _run(R, P, make, dims, X, y, max_iter, tol * scale * STOP_FACTOR, deadline)
    best = int(np.argmin(losses))
    inter = np.isfinite(losses) & (losses <= tol * scale)
    status = "interpolated" if inter[best] else ("time_limit" if stopped else "partial")
    return MultistartFit(status, losses, best, _to_network(th[best], dims), float(inter.mean()), int(depth),
                         int(width), R, completed, iters, time.monotonic() - t0, th, dims)


def _target_scale(y: np.ndarray) -> float:
    """The targets' variance, the yardstick of "interpolated", floored at the rounding of
    the targets themselves (a floor of 1e-12 of their mean square was above the variance
    of targets varying by 1e-11 of their size, and a fit explaining 30 % of it was
    "interpolated")."""
    eps = float(np.finfo(np.float64).eps)
    return max(float(np.var(y)), 64.0 * eps * eps * float(np.mean(y**2)), 1e-300)  # tol: zero-variance targets


# Data whose largest entry lies outside [2^-DATA_RANGE_EXP, 2^DATA_RANGE_EXP] are fitted
# divided by a power of two near that entry (the network is scaled back exactly): the
# starts, damping floors and the variance floor of "interpolated" assume sizes near 1,
# and targets of 1e-155 or 1e160 were called "interpolated" by fits that explain nothing
# (a variance below the 1e-300 floor; an MSE and a variance both overflowing to inf).
DATA_RANGE_EXP = 8


def _power_of_two_scale(v: np.ndarray) -> float:
    """1 for data of moderate size, else the power of two that brings its largest entry
    into [1, 2) (2^1023 at most: rounding log2 of 1.7e308 up gave 2^1024 = inf)."""
    e = power_of_two_exponent(v)
    return 1.0 if -DATA_RANGE_EXP <= e < DATA_RANGE_EXP else float(2.0**e)


def _data_scales(X: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Powers of two ``(sx, sy)``: the fit runs on ``X / sx`` and ``y / sy``."""
    return _power_of_two_scale(X), _power_of_two_scale(y)


def _to_units(th: np.ndarray, dims: tuple, sx: float, sy: float) -> np.ndarray:
    """Parameter rows of ``x -> sy f(x / sx)`` from those of ``f`` (exact: powers of two):
    the first layer's weights divided by ``sx``, the last layer's weights and bias times ``sy``."""
    th = np.array(th, dtype=float)
    if sx != 1.0:
        th[:, :dims[1] * dims[0]] /= sx
    if sy != 1.0:
        th[:, th.shape[1] - dims[-2] - 1:] *= sy
    return th


def _in_units(fit: MultistartFit, sx: float, sy: float) -> MultistartFit:
    """A fit made on ``X / sx``, ``y / sy`` in the data's own units."""
    if sx == 1.0 and sy == 1.0:
        return fit
    with np.errstate(over="ignore"):   # an MSE beyond float64 reads inf
        th = _to_units(fit._params, fit._dims, sx, sy)
        mse = fit.train_mse * (sy * sy)
    if not np.all(np.isfinite(th[fit.best])):
        raise DynamicsError("fit: the fitted network's weights overflow float64 in the data's units "
                            f"(the fit ran on X / {sx:.3g} and y / {sy:.3g}); rescale X or y")
    return dataclasses.replace(fit, train_mse=mse, network=_to_network(th[fit.best], fit._dims), _params=th)


def fit_basin_hopping(
    X: Any,
    y: Any,
    depth: int,
    width: int,
    restarts: int = 1024,
    chains: int = 32,
    children: int = 8,
    rounds: int = 20,
    max_iter: int = 100,
    seed: int = 0,
    tol: float | None = None,
    time_limit: float | None = None,
) -> MultistartFit:
    """Multi-start Levenberg-Marquardt followed by basin hopping: the ``chains`` restarts
    with the lowest training MSE (of ``restarts`` He starts) each spawn ``children``
    perturbed copies per round (every parameter ``p -> p (1 + s g) + HOP_SHIFT s g'``,
    ``g, g'`` standard normal, ``s`` drawn from ``HOP_SCALES``), refitted by
    Levenberg-Marquardt; a chain moves to its best child when that lowers the training
    MSE.  Stops when the best chain interpolates (an empirical risk minimiser up to ``tol``, as in
    :func:`fit_multistart`), after ``rounds`` rounds, or at the time limit.  Only training
    data are used.  The result describes the chains (``train_mse``, ``predict``,
    ``networks`` index them); ``restarts`` counts every Levenberg-Marquardt run and
    ``iterations`` the rounds.

    Example:
        >>> import numpy as np
        >>> X = np.linspace(-1, 1, 9)[:, None]; y = np.abs(X[:, 0])
        >>> fit = fit_basin_hopping(X, y, depth=2, width=2, restarts=16, chains=4, seed=0)
        >>> fit.status
        'interpolated'
    """
    X, y = _check_data(X, y)
    for name, v in (("chains", chains), ("children", children), ("rounds", rounds)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < (0 if name == "rounds" else 1):
            raise DynamicsError(f"fit_basin_hopping: {name} must be a positive integer, got {v!r}")
    t0 = time.monotonic()
    _check_fit_args("fit_basin_hopping", depth, width, restarts, max_iter, seed, 0.0, time_limit, tol)
    tol = or_default(tol, INTERP_TOL)
    deadline = Deadline(time_limit)  # the whole search, the first multistart included
    sx, sy = _data_scales(X, y)
    X, y = X / sx, y / sy   # the search runs in these units; the result is scaled back
    dims = (X.shape[1],) + (int(width),) * int(depth) + (1,)
    first = _multistart(X, y, dims, int(restarts), int(max_iter), seed, "he", 0.0, tol, deadline)
    keep = np.argsort(first.train_mse)[:chains]
    keep = keep[keep < len(first._params)]  # a time limit may leave restarts unstarted
    pool, pl = first._params[keep].copy(), first.train_mse[keep].copy()
    scale = _target_scale(y)
    rng = np.random.default_rng([seed, 1])
    runs, done, stopped = first.completed, 0, first.status == "time_limit"
    # the children and their two perturbations (21 GB for 10^8 children raised numpy's raw
    # MemoryError)
    check_bytes(8.0 * 3 * len(pool) * children * pool.shape[1],
                f"fit_basin_hopping: {len(pool)} chains x {children} children")
    while done < rounds and not stopped and pl.min() > tol * scale:
        kids = np.repeat(pool, children, axis=0)
        s = rng.choice(HOP_SCALES, size=(len(kids), 1))
        kids = kids * (1 + s * rng.standard_normal(kids.shape)) + HOP_SHIFT * s * rng.standard_normal(kids.shape)
        kids, kl, _, stopped, completed = _run(len(kids), kids.shape[1], lambda a, b, k=kids: k[a:b], dims, X, y,
                                               max_iter, tol * scale * STOP_FACTOR, deadline)
        runs += completed
        kl = kl.reshape(len(pool), children)
        j = np.argmin(kl, axis=1)
        better = kl[np.arange(len(pool)), j] < pl
        idx = np.flatnonzero(better)
        pool[idx] = kids[idx * children + j[idx]]
        pl[idx] = kl[idx, j[idx]]
        done += 1
    best = int(np.argmin(pl))
    inter = np.isfinite(pl) & (pl <= tol * scale)
    status = "interpolated" if inter[best] else ("time_limit" if stopped else "partial")
    return _in_units(MultistartFit(status, pl, best, _to_network(pool[best], dims), float(inter.mean()),
                                   int(depth), int(width), runs, runs, done, time.monotonic() - t0, pool, dims),
                     sx, sy)


def _check_fit_args(where: str, depth, width, restarts, max_iter, seed, noise, time_limit, tol) -> None:
    for name, v, lo in (("depth", depth, 1), ("width", width, 1), ("restarts", restarts, 1), ("max_iter", max_iter, 0),
                        ("seed", seed, 0)):
        if not is_int_at_least(v, lo):
            raise DynamicsError(f"{where}: {name} must be an integer >= {lo}, got {v!r}")
    if not (isinstance(noise, (int, float, np.integer, np.floating)) and np.isfinite(noise) and noise >= 0):
        raise DynamicsError(f"{where}: noise must be a finite number >= 0, got {noise!r}")
    if time_limit is not None and not is_positive_seconds(time_limit):
        raise DynamicsError(f"{where}: time_limit must be > 0 seconds, got {time_limit!r}")
    if tol is not None and not (isinstance(tol, numbers.Real) and not isinstance(tol, bool)
                                and np.isfinite(tol) and tol > 0):
        raise DynamicsError(f"{where}: tol must be a finite number > 0, got {tol!r}")


def _run(R: int, P: int, make: Any, dims: tuple, X: np.ndarray, y: np.ndarray, max_iter: int, zero: float,
         deadline: Deadline) -> tuple[np.ndarray, np.ndarray, int, bool, int]:
    """Levenberg-Marquardt on ``R`` rows in memory-bounded blocks; ``make(a, b)`` gives the
    starts of rows ``a..b-1`` when their block comes up.  The deadline is checked before
    every block (after the first) and before every iteration.  A row counts as run once its
    block has done an iteration (or needed none); rows not run keep training MSE inf.
    Returns (params of the rows drawn, MSE of all rows, iterations, stopped by the
    deadline, rows run)."""
    try:  # zeros: untouched pages cost nothing, so restarts never reached cost no time
        th = np.zeros((R, P))
        losses = np.full(R, np.inf)
    except MemoryError:
        raise ResourceLimitError(f"fit_multistart: {R} restarts of {P} parameters do not fit in memory") from None
    # smaller blocks under a time limit: the clock is read once per iteration of a block
    # (with n >= P the damped systems are P x P: those entries count too)
    per_row = X.shape[0] * P + (P * P if X.shape[0] >= P else 0)
    block = max(1, (BLOCK_ENTRIES if deadline.at is None else TIMED_BLOCK_ENTRIES) // per_row)
    iters, stopped, completed, drawn = 0, False, 0, 0
    for a in range(0, R, block):
        b = min(a + block, R)
        if a > 0 and deadline.expired():
            stopped = True
            break
        th[a:b], lb, it, stop = _lm(make(a, b), dims, X, y, max_iter, zero, deadline)
        drawn = b
        iters = max(iters, it)
        if it > 0 or not stop:  # every row of the block did an iteration, or needed none
            losses[a:b] = lb
            completed = b
        if stop:  # the time limit: later blocks are not run
            stopped = True
            break
    return th[:drawn], losses, iters, stopped, completed


def _check_data(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    try:
        X = np.asarray(X, dtype=float)
        y = np.asarray(y, dtype=float)
    except (TypeError, ValueError):
        raise DynamicsError("fit_multistart: X and y must be arrays of real numbers (ragged rows, "
                            "strings or complex entries given)") from None
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise DynamicsError(f"fit_multistart: X must be a non-empty (n, d) array, got shape {X.shape}")
    if y.shape != (X.shape[0],):
        raise DynamicsError(f"fit_multistart: y must have shape ({X.shape[0]},), got {y.shape}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise DynamicsError("fit_multistart: X and y must be finite (found NaN or inf)")
    return X, y


def _given_starts(dims: tuple, R: int, start: Any) -> np.ndarray | None:
    """The parameter rows of Network starts (one per restart), or None for a random kind."""
    one = isinstance(start, Network)
    if one:
        start = [start]
    if isinstance(start, (list, tuple)):
        if (not one and len(start) != R) or not all(isinstance(net, Network) for net in start):
            raise DynamicsError(f"fit_multistart: a list of starts must hold `restarts` = {R} Networks")
        rows = []
        for net in start:
            if net.skip is not None:
                raise DynamicsError("fit_multistart: a start network has a skip connection; the class "
                                    "fitted has none")
            shape = tuple([net.weights[0].shape[1]] + [w.shape[0] for w in net.weights])
            if shape != dims:
                raise DynamicsError(f"fit_multistart: start network has layer sizes {shape}, expected {dims}")
            rows.append(np.concatenate([np.r_[w.ravel(), b] for w, b in zip(net.weights, net.biases, strict=True)]))
        th = np.array(rows, dtype=float)
        return np.broadcast_to(th, (R, th.shape[1])) if one else th
    if isinstance(start, str) and start in START_KINDS:
        return None
    raise DynamicsError(f"fit_multistart: start must be one of {START_KINDS} or a Network, got {start!r}")


def _starts(X: np.ndarray, dims: tuple, R: int, rng: np.random.Generator, start: Any, noise: float) -> np.ndarray:
    if isinstance(start, np.ndarray):  # given starts (rows of parameters)
        return start + noise * rng.standard_normal(start.shape)
    if start not in START_KINDS:
        raise DynamicsError(f"fit_multistart: start must be one of {START_KINDS} or a Network, got {start!r}")
    if start == "fold":
        return _fold_starts(X, dims, R, rng)
    H = np.broadcast_to(X, (R,) + X.shape)
    parts = []
    L = len(dims) - 2
    for k in range(L + 1):
        W = rng.standard_normal((R, dims[k + 1], dims[k])) * np.sqrt(2.0 / dims[k])
        Z = H @ W.transpose(0, 2, 1)
        if k < L:  # each unit's kink at a random quantile (10-90%) of its inputs: none starts dead
            q = rng.uniform(KINK_QUANTILES[0], KINK_QUANTILES[1], (R, dims[k + 1])) * (X.shape[0] - 1)
            Zs = np.sort(Z, axis=1)
            lo = np.floor(q).astype(int)
            hi = np.minimum(lo + 1, X.shape[0] - 1)
            z_lo = np.take_along_axis(Zs, lo[:, None, :], axis=1)[:, 0, :]
            z_hi = np.take_along_axis(Zs, hi[:, None, :], axis=1)[:, 0, :]
            b = -(z_lo + (q - lo) * (z_hi - z_lo))
        else:
            b = np.zeros((R, 1))
        parts += [W.reshape(R, -1), b]
        H = np.maximum(Z + b[:, None, :], 0.0)
    return np.concatenate(parts, axis=1)


def _fold_starts(X: np.ndarray, dims: tuple, R: int, rng: np.random.Generator) -> np.ndarray:
    """Random compositions of one-dimensional piecewise-linear maps: every unit of hidden
    layer ``k`` reads the same scalar ``v_k`` (a random direction of the previous layer,
    rescaled to span [0, 1] on the training points), with kinks uniform in [0, 1]; the
    output layer is random (Levenberg-Marquardt fits a linear layer in one step)."""
    H = np.broadcast_to(X, (R,) + X.shape)
    parts = []
    L = len(dims) - 2
    for k in range(L + 1):
        a = rng.standard_normal((R, dims[k]))
        if k == L:
            parts += [a, np.zeros((R, 1))]
            break
        v = np.einsum("rnd,rd->rn", H, a)
        lo, span = v.min(axis=1), np.maximum(np.ptp(v, axis=1), 1e-12)  # tol: a constant direction
        kinks = rng.uniform(0.0, 1.0, (R, dims[k + 1]))
        W = np.repeat((a / span[:, None])[:, None, :], dims[k + 1], axis=1)
        b = -(lo / span)[:, None] - kinks
        parts += [W.reshape(R, -1), b]
        H = np.maximum(np.einsum("rnd,rud->rnu", H, W) + b[:, None, :], 0.0)
    return np.concatenate(parts, axis=1)


def _unpack(th: np.ndarray, dims: tuple) -> tuple[list[np.ndarray], list[np.ndarray]]:
    Ws, bs, o = [], [], 0
    for k in range(len(dims) - 1):
        m = dims[k + 1] * dims[k]
        Ws.append(th[:, o:o + m].reshape(-1, dims[k + 1], dims[k]))
        o += m
        bs.append(th[:, o:o + dims[k + 1]])
        o += dims[k + 1]
    return Ws, bs


def _to_network(th: np.ndarray, dims: tuple) -> Network:
    Ws, bs = _unpack(th[None], dims)
    return Network([w[0].copy() for w in Ws], [b[0].copy() for b in bs])


def _forward(th: np.ndarray, dims: tuple, X: np.ndarray, jac: bool = False) -> tuple[np.ndarray, Any]:
    """Outputs ``(R, n)`` and, with ``jac``, the Jacobian ``(R, n, P)`` in the packing order."""
    Ws, bs = _unpack(th, dims)
    R, n = th.shape[0], X.shape[0]
    Hs, Zs = [np.broadcast_to(X, (R,) + X.shape)], []
    for k in range(len(Ws)):
        Z = Hs[-1] @ Ws[k].transpose(0, 2, 1) + bs[k][:, None, :]
        Zs.append(Z)
        if k < len(Ws) - 1:
            Hs.append(np.maximum(Z, 0.0))
    f = Zs[-1][..., 0]
    if not jac:
        return f, None
    blocks = []
    G = np.ones((R, n, 1))  # d output / d pre-activations of layer k, per sample
    for k in range(len(Ws) - 1, -1, -1):
        dW = (G[..., :, None] * Hs[k][..., None, :]).reshape(R, n, -1)
        blocks.append(np.concatenate([dW, G], axis=2))
        if k > 0:
            G = (G @ Ws[k]) * (Zs[k - 1] > 0)
    return f, np.concatenate(blocks[::-1], axis=2)


def _damped_step(J: np.ndarray, g: np.ndarray, damp: np.ndarray) -> np.ndarray:
    """``(J^T J + diag(damp))^-1 g`` for each row of a batch (J: (r, n, P); damp > 0).

    With fewer samples than parameters (n < P) by the Woodbury identity,
    ``D^-1 g - D^-1 J^T (I + J D^-1 J^T)^-1 J D^-1 g``: an n x n solve per restart instead
    of P x P (at width 60, depth 2: P = 3,901, and the P x P systems of one block took
    5.8 GB and seconds per iteration, past both limits).

    Example:
        >>> rng = np.random.default_rng(0)
        >>> J, g, d = rng.normal(size=(2, 3, 5)), rng.normal(size=(2, 5)), rng.uniform(1, 2, (2, 5))
        >>> want = np.linalg.solve(J.transpose(0, 2, 1) @ J + d[:, :, None] * np.eye(5), g[..., None])[..., 0]
        >>> bool(np.allclose(_damped_step(J, g, d), want))
        True
    """
    n, P = J.shape[1], J.shape[2]
    if n >= P:
        M = J.transpose(0, 2, 1) @ J + damp[:, :, None] * np.eye(P)
        return np.linalg.solve(M, g[..., None])[..., 0]
    u = g / damp
    JD = J / damp[:, None, :]
    K = JD @ J.transpose(0, 2, 1)
    K[:, np.arange(n), np.arange(n)] += 1.0
    v = np.linalg.solve(K, (J @ u[..., None]))[..., 0]
    return u - (JD.transpose(0, 2, 1) @ v[..., None])[..., 0]


def _step_seconds(r: int, n: int, P: int) -> float:
    """Estimated seconds of one Levenberg-Marquardt iteration of ``r`` restarts (``n``
    samples, ``P`` parameters): the damped systems (:func:`_damped_step`) and the Jacobian."""
    flops = r * (n * P * min(n, P) + min(n, P) ** 3 / 3.0 + 8.0 * n * P)
    return flops / dense_flop_rate()


def _lm(th: np.ndarray, dims: tuple, X: np.ndarray, y: np.ndarray, max_iter: int, zero: float,
        deadline: Deadline) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """Levenberg-Marquardt on every row of ``th`` at once (Marquardt's diagonal scaling);
    a row stops when its MSE is <= ``zero`` or its damping exceeds LAMBDA_MAX."""
    th = th.copy()
    f, J = _forward(th, dims, X, jac=True)
    r = f - y
    loss = np.mean(r**2, axis=1)
    lam = np.full(len(th), LAMBDA_START)
    it = 0
    for it in range(1, max_iter + 1):
        act = np.flatnonzero((loss > zero) & (lam < LAMBDA_MAX))
        if act.size == 0 or deadline.expired() or (
                deadline.at is not None and _step_seconds(act.size, X.shape[0], th.shape[1]) > deadline.left()):
            # (an iteration is one uninterrupted batch of solves: one that would end past
            # the limit is not started; with n >= P one took 10 s past a 1 s limit)
            return th, loss, it - 1, act.size > 0
        Ja, ra = J[act], r[act]
        g = (Ja.transpose(0, 2, 1) @ ra[..., None])[..., 0]
        diag = np.einsum("rnp,rnp->rp", Ja, Ja)  # the diagonal of J^T J
        damp = lam[act, None] * diag + DAMP_FLOOR * (1.0 + diag.max(axis=1))[:, None]
        new = th[act] - _damped_step(Ja, g, damp)
        f2, J2 = _forward(new, dims, X, jac=True)
        r2 = f2 - y
        loss2 = np.mean(r2**2, axis=1)
        ok = np.isfinite(loss2) & (loss2 < loss[act])
        good = act[ok]
        th[good], r[good], J[good], loss[good] = new[ok], r2[ok], J2[ok], loss2[ok]
        lam[good] = np.maximum(lam[good] * LAMBDA_DOWN, LAMBDA_MIN)
        lam[act[~ok]] *= LAMBDA_UP
    return th, loss, it, False
