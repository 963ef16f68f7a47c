"""Exact minimal-norm univariate two-layer ReLU networks (regression and classification).

The model is ``f(x) = d + [c x] + sum_j a_j relu(w_j x + b_j)`` with a free output bias
``d`` (always), a free affine skip ``c x`` (optional) and the squared-l2 penalty
``(1/2) sum_j (a_j^2 + w_j^2)`` (free biases) or ``(1/2) sum_j (a_j^2 + w_j^2 + b_j^2)``
(penalised biases).  Rescaling ``a -> a/s, (w, b) -> s (w, b)`` leaves ``f`` unchanged, so
at the optimum ``|a_j| = ||(w_j[, b_j])||`` and the penalty equals ``sum_j |a_j| |w_j|`` or
``sum_j |a_j| ||(w_j, b_j)||``.  In function space (``f`` CPWL with kinks ``t_k``, slope
jumps ``s_k = f'(t_k+) - f'(t_k-)``, end slopes ``L = f'(-inf)``, ``R = f'(+inf)``) the
smallest penalty of any network computing ``f`` (its *representation cost*) is:

* free biases, skip:         ``sum_k |s_k|``  (total variation of ``f'``)
* free biases, no skip:      ``max(sum_k |s_k|, |L + R|)``  (a unit facing left is a unit
  facing right plus an affine function, and affine functions are not free)
* penalised biases, skip:    ``sum_k |s_k| sqrt(1 + t_k^2)``
* penalised biases, no skip: ``min sum_k (|r_k| + |l_k|) sqrt(1 + t_k^2)`` over splits
  ``r_k + l_k = s_k`` into right- and left-facing units with ``sum r_k = R``,
  ``sum l_k = -L`` (a small LP; extra kinks of zero jump at ``t = 0`` carry affine parts).

A kink at ``t`` made by a unit costs ``|a||w| = |s|`` with free biases and
``|a| ||(w, b)|| = |s| sqrt(1 + t^2)`` with penalised biases (``b = -w t``).

The optimisation over functions is a linear program over kink measures.  With free biases an
averaging argument (``f'`` has mean equal to the secant slope on every data interval, and the
total variation of a step function does not exceed that of any function with the same means)
shows that kinks at the data points suffice, so one LP is exact.  With penalised biases the
weight ``sqrt(1 + t^2)`` makes positions matter; the semi-infinite LP is solved exactly by
column generation: the dual of the restricted LP gives a piecewise-linear function ``g(t)``
and a kink at ``t`` can improve the objective only where ``|g(t)| > sqrt(1 + t^2)``, whose
maximiser on each data interval is found in closed form (``t* = beta / alpha``).  Scaling the
dual by the largest violation gives a certified lower bound, so every result carries an
optimality gap.  Same-sign kinks in one data interval are finally merged at their centroid
(by Jensen this never costs more with a convex weight, and it keeps every data value).

References (abstracts in ``shared/seeds``): minimal-norm interpolation and l2-regularised
classification by univariate two-layer ReLU networks (free biases: the optimal classifiers
hug every label switch; penalised biases: the optimum has exactly one kink in every
intermediate same-label segment; a free skip leaves the functions unchanged); Savarese et
al. (2019) for the free-bias cost ``max(TV(f'), |f'(-inf) + f'(+inf)|)``.

Example:
    >>> import numpy as np
    >>> r = minnorm_interpolant([0.0, 1.0, 2.0], [0.0, 1.0, 0.0], bias="free", skip=True)
    >>> round(r.cost, 9), np.allclose(r.network([[0.0], [1.0], [2.0]]).ravel(), [0, 1, 0])
    (2.0, True)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import RelulabError, is_positive_seconds
from ..limits import Deadline
from ..lp import LPModel, solve
from ..network import Network
from ..tolerance import (
    EQUIV_TOL,
    FEAS_TOL,
    GAP_TOL,
    HIGHS_DEFAULT_TOL,
    MINNORM_LP_TOL,
    PROOF_MARGIN,
    ROUNDOFF,
    TINY,
    or_default,
    power_of_two_exponent,
)

LP_FLOOR_SECONDS = 0.1  # the least time one LP is handed under a time limit
# the largest |x| fitted: differences x - t and the weight sqrt(1 + t^2) stay finite
MAX_DATA = 1e150

__all__ = [
    "MinNormError",
    "MinNormDataError",
    "MinNormResult",
    "OptimalSet",
    "Zone",
    "minnorm_interpolant",
    "minnorm_classifier",
    "minnorm_on_grid",
    "function_cost",
    "parameter_cost",
    "kinks_of",
    "in_optimal_set",
]

_BIAS = ("free", "penalized")


class MinNormError(RelulabError):
    """A univariate minimal-norm problem that cannot be posed or solved."""


class MinNormDataError(MinNormError):
    """Bad data for a univariate minimal-norm problem (shapes, duplicates, labels): the
    command line names the data file in front of it."""


# --------------------------------------------------------------------------- data
# free-bias data whose centre is farther from 0 than this many spreads is solved translated
FAR_DATA = 8.0
# free-bias data whose closest points lie more than 2^X_RANGE_EXP apart, or whose spread is
# below 2^-X_RANGE_EXP, are solved scaled by a power of two (see _scaled_solve)
X_RANGE_EXP = 16


def _check_bias(bias: str) -> str:
    b = str(bias).lower().replace("penalised", "penalized")
    if b not in _BIAS:
        raise MinNormError(f"bias must be 'free' or 'penalized', got {bias!r}")
    return b


def _as_column(v: Any, name: str) -> np.ndarray:
    """``v`` as a 1-D array: ``(n,)`` or one column ``(n, 1)``.  Anything wider is refused
    rather than flattened: the problems here are univariate, and reading an ``(n, k)``
    array as ``n k`` scalar points would silently solve a different problem."""
    try:
        a = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise MinNormDataError(f"{name} must be an array of numbers ({e})") from None
    if a.ndim > 2 or (a.ndim == 2 and a.shape[1] != 1):
        raise MinNormDataError(f"{name} must be univariate, shape (n,) or (n, 1); got shape {a.shape}")
    return a.reshape(-1)


def _prep(x: Any, y: Any, task: str) -> tuple[np.ndarray, np.ndarray]:
    x = _as_column(x, "x")
    y = _as_column(y, "labels" if task == "classification" else "y")
    if x.size == 0 or x.shape != y.shape:
        raise MinNormDataError(f"x and y must be non-empty and of equal length ({x.size} vs {y.size})")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise MinNormDataError("x and y must be finite numbers")
    if task == "classification":
        labs = set(np.unique(y).tolist())
        if labs <= {0.0, 1.0} and 0.0 in labs:
            y = 2.0 * y - 1.0
        elif not labs <= {-1.0, 1.0}:
            raise MinNormDataError(f"labels must be -1/+1 (or 0/1), got {sorted(labs)[:5]}")
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    same = x[1:] == x[:-1]  # not np.diff: 1e308 - (-1e308) overflows (refused below)
    dup = np.nonzero(same)[0]
    for i in dup:
        if y[i] != y[i + 1]:
            raise MinNormDataError(
                f"x = {x[i]!r} appears twice with different targets ({y[i]!r}, {y[i + 1]!r})"
            )
    keep = np.concatenate([[True], ~same])
    x, y = x[keep], y[keep]
    big = float(np.max(np.abs(x)))
    if big > MAX_DATA:  # x - t and t^2 (the penalised weight) overflow float64 beyond
        raise MinNormDataError(f"x reaches {big:.3g}; relulab fits x up to {MAX_DATA:g} in size: "
                           "rescale x (a free-bias fit scales with it)")
    return x, y


def _relative_gap(cost: float, lower: float) -> float:
    """``(cost - lower) / cost``: relative to the cost itself (relative to max(1, cost) it
    was absolute for costs below 1, and x of size 1e10 has costs of 1e-10, so any gap
    passed).

    Example:
        >>> _relative_gap(2e-10, 1e-10), _relative_gap(0.0, 0.0), _relative_gap(4.0, 4.0)
        (0.5, 0.0, 0.0)
    """
    if cost <= 0:
        return 0.0 if lower >= cost else float("inf")
    return max(cost - lower, 0.0) / cost


def _weight(t: np.ndarray, bias: str) -> np.ndarray:
    t = np.asarray(t, dtype=np.float64)
    return np.ones_like(t) if bias == "free" else np.sqrt(1.0 + t * t)


# ------------------------------------------------------------------ the kink LP
def _features(x: np.ndarray, t: np.ndarray, orient: np.ndarray) -> np.ndarray:
    """Column k evaluated at the data: (x - t_k)_+ (right) or (t_k - x)_+ (left)."""
    D = x[:, None] - t[None, :]
    return np.maximum(D * orient[None, :], 0.0)


@dataclass
class _LPOut:
    status: str
    value: float
    d: float
    c: float
    coef: np.ndarray
    duals: np.ndarray | None
    x_full: np.ndarray | None


def _kink_lp(
    x: np.ndarray,
    y: np.ndarray,
    t: np.ndarray,
    orient: np.ndarray,
    w: np.ndarray,
    task: str,
    skip: bool,
    extra_ub: tuple[np.ndarray, np.ndarray] | None = None,
    objective: np.ndarray | None = None,
    maximize: bool = False,
    time_limit: float | Callable[[], float | None] | None = None,
) -> _LPOut:
    """min sum_k w_k |coef_k| s.t. the data constraints, kinks fixed at ``t`` (columns
    [d, c?, p_1..p_K, n_1..n_K] with coef = p - n).  ``time_limit`` may be a function
    giving the seconds left, asked once the LP is built (building a dense LP on thousands
    of points takes seconds of its own)."""
    n, K = x.size, t.size
    F = _features(x, t, orient)
    nfree = 2 if skip else 1
    base = np.ones((n, 1)) if not skip else np.column_stack([np.ones(n), x])
    rows = np.hstack([base, F, -F])
    c = np.concatenate([np.zeros(nfree), w, w]) if objective is None else np.asarray(objective, float)
    # Solve in z' = z * scale, each column scaled to largest entry 1: with data 1e-10
    # apart the features fall below HiGHS's small-matrix value (1e-9) and would be dropped
    # (feasible data called infeasible).  Same LP: same value, row duals and z.
    scale = np.max(np.abs(rows), axis=0)
    scale[~(scale > 0)] = 1.0
    rows = rows / scale
    c = c / scale
    lb = np.concatenate([np.full(nfree, -np.inf), np.zeros(2 * K)])
    # ... and regression values scaled to largest 1 (z, the value and every right-hand
    # side scale with them; the row duals do not): HiGHS's absolute feasibility
    # tolerance (1e-7) would let zero meet values of 1e-15
    ys = float(np.max(np.abs(y))) if task == "regression" else 1.0
    ys = ys if ys > 0 else 1.0
    A_ub = b_ub = A_eq = b_eq = None
    if task == "regression":
        A_eq, b_eq = rows, y / ys
    else:
        A_ub, b_ub = -y[:, None] * rows, -np.ones(n)
    if extra_ub is not None:
        Ae, be = extra_ub
        Ae = np.asarray(Ae, float) / scale
        be = np.asarray(be, float) / ys
        A_ub = Ae if A_ub is None else np.vstack([A_ub, Ae])
        b_ub = be if b_ub is None else np.concatenate([b_ub, be])
    lp = LPModel(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, lb=lb, maximize=maximize)
    seconds = time_limit() if callable(time_limit) else time_limit
    if seconds is not None:
        lp.set_time_limit(seconds)
    lp.set_feasibility_tol(primal=MINNORM_LP_TOL, dual=MINNORM_LP_TOL)
    r = lp.solve()
    if r.status == "error":
        # HiGHS gave up at the tight tolerance (data of size 1e-6 without a skip: costs
        # near 1e6 after the column scaling); at its own defaults it solves them, and the
        # lower bound does not rest on them (it is the scaled dual's value)
        lp.set_feasibility_tol(primal=HIGHS_DEFAULT_TOL, dual=HIGHS_DEFAULT_TOL)
        r = lp.solve()
    if not r.ok:
        return _LPOut(r.status, np.nan, 0.0, 0.0, np.zeros(K), None, None)
    z = r.x / scale * ys
    coef = z[nfree: nfree + K] - z[nfree + K:]
    duals = None
    if r.duals is not None:
        # the data rows come first among ub rows, or are the eq rows (after all ub rows)
        if task == "regression":
            nub = 0 if A_ub is None else A_ub.shape[0]
            duals = r.duals[nub: nub + n]
        else:
            duals = r.duals[:n] * (-y)  # multiplier on the row written as +y_i f(x_i)
    return _LPOut("optimal", float(r.objective) * ys, float(z[0]), float(z[1]) if skip else 0.0,
                  coef, duals, z)


def _max_violation(
    x: np.ndarray, m: np.ndarray, bias: str, skip: bool
) -> tuple[float, list[tuple[float, int]]]:
    """Largest ratio |g(t)| / w(t) over all t and orientations, and the maximisers per
    interval whose ratio exceeds 1 (the columns to add).

    ``g(t) = sum_i m_i (x_i - t)_+`` for right-facing units and
    ``sum_i m_i (t_k - x_i)_+`` for left-facing ones; on each data interval it is linear.
    """
    n = x.size
    mx = m * x
    # suffix sums for right units: active i > j on (x_j, x_{j+1}); prefix sums for left units
    suf_m = np.concatenate([np.cumsum(m[::-1])[::-1], [0.0]])  # suf_m[j] = sum_{i>=j}
    suf_mx = np.concatenate([np.cumsum(mx[::-1])[::-1], [0.0]])
    pre_m = np.concatenate([[0.0], np.cumsum(m)])  # pre_m[j] = sum_{i<j}
    pre_mx = np.concatenate([[0.0], np.cumsum(mx)])
    ends = np.concatenate([[-np.inf], x, [np.inf]])
    # an end slope counts as zero up to the rounding of the sums that form it
    beta_tol = FEAS_TOL * float(np.sum(np.abs(m)))
    best = 0.0
    adds: list[tuple[float, int]] = []
    orients = (1,) if skip else (1, -1)
    for o in orients:
        for j in range(n + 1):  # interval (ends[j], ends[j+1]); data index j-1 .. j
            a, b = ends[j], ends[j + 1]
            if o == 1:  # active: x_i > t, i >= j
                alpha, beta = suf_mx[j], -suf_m[j]
            else:  # active: x_i < t, i < j
                alpha, beta = -pre_mx[j], pre_m[j]
            ratio, targ = _interval_max(alpha, beta, a, b, bias, beta_tol)
            best = max(best, ratio)
            if ratio > 1.0 + 1e-10:  # tol: a strict improvement
                adds.append((targ, o))
    return best, adds


def _free_basis(x: np.ndarray, skip: bool) -> np.ndarray:
    """The free terms' columns at the data: ones (the output bias), and ``x`` centred
    (the skip; centring spans the same space, and keeps it well conditioned far from 0)."""
    if not skip:
        return np.ones((x.size, 1))
    return np.column_stack([np.ones_like(x), x - float(np.mean(x))])


def _project_free(m: np.ndarray, x: np.ndarray, skip: bool) -> np.ndarray:
    """The regression dual ``m`` projected onto the constraints of the free terms
    (``sum m = 0`` for the output bias, also ``sum m x = 0`` with the skip): the LP meets
    them only to its tolerance, which times ``m`` of 1e10 (data 1e-10 apart) read as an
    unbounded end slope.  Projected, ``m . y`` is the dual value the bound uses."""
    B = _free_basis(x, skip)
    coef, *_ = np.linalg.lstsq(B, m, rcond=None)
    return m - B @ coef


def _project_free_signed(m: np.ndarray, x: np.ndarray, y: np.ndarray, skip: bool) -> np.ndarray:
    """The classification dual ``m`` (``m_i y_i >= 0``) projected onto the free terms'
    constraints as :func:`_project_free` does, on its support only and keeping its signs
    (entries whose sign the projection flips are dropped and the rest projected again);
    the zero dual (feasible, value 0) when none is left.  Unprojected, the LP's leftover ``sum m`` times an
    output bias of 1e10 (two clusters 2e10 apart) went into a 'certified' bound above a
    classifier checked exactly.

    Example:
        >>> m = _project_free_signed(np.array([1.0, -1.0 + 1e-9]), np.array([0.0, 1.0]), np.array([1.0, -1.0]), False)
        >>> bool(abs(m.sum()) < 1e-15), bool(np.all(m * np.array([1.0, -1.0]) >= 0))
        (True, True)
    """
    support = (m * y) > 0
    out = np.zeros_like(m)
    for _ in range(8):
        if not support.any():
            break
        out[:] = 0.0
        out[support] = _project_free(m[support], x[support], skip)
        flipped = support & ((out * y) < 0)
        if not flipped.any():
            return out
        support &= ~flipped
    return np.zeros_like(m)


def _interval_max(alpha: float, beta: float, a: float, b: float, bias: str,
                  beta_tol: float = FEAS_TOL) -> tuple[float, float]:
    """max over t in [a, b] of |alpha + beta t| / w(t), and where."""
    cands = [v for v in (a, b) if np.isfinite(v)]
    if bias == "penalized":
        if alpha != 0.0:
            ts = beta / alpha
            if a <= ts <= b:
                cands.append(ts)
        if a < 0.0 < b:
            cands.append(0.0)
    if not cands:
        cands = [0.0]
    cands_a = np.array(cands)
    vals = np.abs(alpha + beta * cands_a) / _weight(cands_a, bias)
    k = int(np.argmax(vals))
    ratio, targ = float(vals[k]), float(cands_a[k])
    # on an unbounded end |alpha + beta t| / w(t) tends to |beta| (w = sqrt(1+t^2)) or to
    # infinity (w = 1, beta != 0); beta vanishes up to rounding because d is free
    if (not np.isfinite(a) or not np.isfinite(b)) and abs(beta) > beta_tol:
        lim = abs(beta) if bias == "penalized" else np.inf
        if lim > ratio:
            ratio = lim
            targ = (-1e6 if not np.isfinite(a) else 1e6)
    return ratio, targ


# ------------------------------------------------------------------ results
@dataclass(frozen=True)
class Zone:
    """A place where an optimal function may have a kink: a data point (``lo == hi``), an
    open gap between consecutive data points, or a tail (``-inf``/``inf`` end); with the
    convexities (slope increase / decrease) that some optimal function has there.

    Example:
        >>> r = minnorm_interpolant([0, 1, 2], [0, 1, 0], bias="free", skip=True)
        >>> [(z.lo, z.hi) for z in r.optimal_set.zones if z.concave]     # the peak at x = 1
        [(1.0, 1.0)]
    """

    lo: float
    hi: float
    convex: bool
    concave: bool

    def to_dict(self) -> dict[str, Any]:
        return {"lo": self.lo, "hi": self.hi, "convex": self.convex, "concave": self.concave}


@dataclass(frozen=True)
class OptimalSet:
    """Description of the set of all optimal functions (free biases).

    ``zones`` lists, for every data point, gap and tail, whether an optimal function can
    have a convex and / or a concave kink there; a function is optimal exactly when it
    meets the data constraints and its representation cost equals ``cost``
    (:func:`in_optimal_set`).  ``value_ranges`` gives, for each data point, the smallest
    and largest value of an optimal function there (a single value for interpolation;
    +-inf where optimal functions are unbounded there; NaN where the probe LP did not
    finish, e.g. at the time limit).

    Example:
        >>> r = minnorm_interpolant([0, 1, 2], [0, 1, 0], bias="free", skip=True)
        >>> s = r.optimal_set
        >>> s.cost == r.cost, s.value_ranges.tolist()       # interpolation: one value per point
        (True, [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    """

    cost: float
    zones: tuple[Zone, ...]
    value_ranges: np.ndarray

    def to_dict(self) -> dict[str, Any]:
        return {"cost": self.cost, "zones": [z.to_dict() for z in self.zones],
                "value_ranges": self.value_ranges.tolist()}


@dataclass(frozen=True)
class MinNormResult:
    """An exact minimal-norm network and its certificate.

    ``cost`` is the optimal penalty ``min (1/2)||theta||^2`` (the representation cost of
    ``network``'s function), ``lower_bound`` a certified lower bound (equal up to the LP
    tolerance); ``kinks`` / ``jumps`` are the kink positions and slope changes of the
    returned function; ``optimal_set`` describes all optima (free biases).

    ``unique`` is ``True`` only when certified (up to the LP tolerance): the certified dual
    function confines the kinks of every optimal function to finitely many positions, and
    probe LPs over those positions give every function whose cost is within the tolerance
    of the optimum the same values (at every such position and beyond both ends).  It is
    ``False`` when two such functions differ by more than ``1e-3`` (relative) somewhere,
    and ``None`` when undecided (``describe=False``, a partial result, or an interval on
    which kinks could sit anywhere).  Neither bias setting guarantees uniqueness.

    ``status`` is ``"optimal"`` when the certified relative gap
    ``(cost - lower_bound) / cost`` is at most ``GAP_TOL``; otherwise
    ``"time_limit"`` or ``"stalled"`` (column generation stopped improving, or hit its
    iteration cap), and ``partial`` is True: ``cost`` is the cost of the returned network
    (an upper bound) and ``lower_bound`` is still certified.

    Example:
        >>> r = minnorm_interpolant([0, 1, 2, 3], [0, 1, 1, 0], bias="penalized", skip=True)
        >>> r.task, r.bias, r.status, bool(abs(r.cost - r.lower_bound) <= 1e-6 * r.cost)
        ('regression', 'penalized', 'optimal', True)
    """

    network: Network
    cost: float
    lower_bound: float
    bias: str
    skip: bool
    task: str
    x: np.ndarray
    y: np.ndarray
    kinks: np.ndarray
    jumps: np.ndarray
    unique: bool | None
    optimal_set: OptimalSet | None = None
    iterations: int = 1
    info: dict[str, Any] = field(default_factory=dict)
    status: str = "optimal"

    @property
    def gap(self) -> float:
        return float(self.cost - self.lower_bound)

    @property
    def partial(self) -> bool:
        """True when the certified relative gap was not closed to ``GAP_TOL`` (time limit,
        stalled or iteration cap): ``cost`` is then only an upper bound."""
        return self.status != "optimal"

    def in_optimal_set(self, f: Network, tol: float | None = None) -> bool:
        """Whether the univariate one-hidden-layer network ``f`` computes an optimal function."""
        return in_optimal_set(f, self, tol=tol)

    def to_dict(self) -> dict[str, Any]:
        net = self.network
        out: dict[str, Any] = {
            "task": self.task, "bias": self.bias, "skip": self.skip,
            "cost": self.cost, "lower_bound": self.lower_bound, "gap": self.gap,
            "unique": self.unique, "n_kinks": int(self.kinks.size),
            "kinks": self.kinks.tolist(), "jumps": self.jumps.tolist(),
            "iterations": self.iterations, "width": net.widths[0],
            "network": {"W1": net.weights[0].ravel().tolist(), "b1": net.biases[0].tolist(),
                        "W2": net.weights[1].ravel().tolist(), "b2": net.biases[1].tolist(),
                        "skip": None if net.skip is None else float(net.skip[0][0, 0])},
        }
        if self.optimal_set is not None:
            out["optimal_set"] = self.optimal_set.to_dict()
        out["status"], out["partial"] = self.status, bool(self.partial)
        # data far from 0: the float network may miss the data (see _centred_solve)
        out.update({k: self.info[k] for k in ("network_fit_error", "network_min_margin", "network_note")
                    if k in self.info})
        return out


# ------------------------------------------------------------------ networks
def _build_network(t: np.ndarray, orient: np.ndarray, coef: np.ndarray, d: float, c: float,
                   bias: str, skip: bool) -> Network:
    """A balanced network (|a| = ||(w[, b])||) whose units are coef_k * phi_k."""
    keep = coef != 0.0
    t, orient, coef = t[keep], orient[keep], coef[keep]
    if t.size == 0:
        W1, b1, W2 = np.zeros((1, 1)), np.zeros(1), np.zeros((1, 1))
    else:
        wt = _weight(t, bias)
        rho = np.sqrt(np.abs(coef) * wt)  # |a| = ||(w[, b])|| = rho, cost rho^2
        # unit: a relu(w x + b) with w = o * rho / wt, b = -w t gives a*rho/wt (o(x - t))_+
        w = orient * rho / wt
        b = -w * t
        a = coef * wt / rho
        W1, b1, W2 = w[:, None], b, a[None, :]
    sk = (np.array([[c]]), np.zeros(1)) if skip else None
    return Network([W1, W2], [b1, np.array([d])], sk)


def kinks_of(net: Network, tol: float | None = None) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Kinks, slope jumps and end slopes ``(t, s, L, R)`` of a univariate network with one
    hidden layer (units at the same position merged, zero jumps dropped).

    Example:
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])  # |x|
        >>> t, s, L, R = kinks_of(net); t.tolist(), s.tolist(), L, R
        ([0.0], [2.0], -1.0, 1.0)
    """
    tol = or_default(tol, ROUNDOFF)
    net = net.float()
    if net.input_dim != 1 or net.output_dim != 1 or net.n_hidden_layers != 1:
        raise MinNormError(
            f"expected a univariate network with one hidden layer and one output, got {net!r}"
        )
    w = net.weights[0][:, 0]
    b = net.biases[0]
    a = net.weights[1][0]
    c = 0.0 if net.skip is None else float(net.skip[0][0, 0])
    act = w != 0.0
    t = -b[act] / w[act]
    s = a[act] * np.abs(w[act])
    right = w[act] > 0
    L = c - float(np.sum(s[~right]))
    R = c + float(np.sum(s[right]))
    if t.size == 0:
        return np.zeros(0), np.zeros(0), L, R
    tu, su = _merge_kinks(t, s)
    # relative to the largest jump only: with data 1e15 apart every slope is near 1e-15,
    # and a floor of 1 dropped every kink (the cost then read 1e-15 for 3e-15)
    nz = np.abs(su) > tol * float(np.max(np.abs(s)))
    return tu[nz], su[nz], L, R


KINK_MERGE_ULPS = 4   # kinks this many ulps apart are one: -b/w rounds b, w and the quotient


def _merge_kinks(t: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kinks ``t`` with jumps ``s``, sorted, and those within the rounding of their own
    position (``KINK_MERGE_ULPS`` ulps) merged, jumps summed.  A wider tolerance merges
    real kinks: 1e-12 of |t| is thousands of ulps, and a tent 2e-3 wide at 3e9 read as
    cost 0 (true 4000).

    Example:
        >>> t, s = _merge_kinks(np.array([0.5, 1 / 3, np.nextafter(0.5, 1.0)]), np.array([1.0, 2.0, -1.0]))
        >>> t.tolist(), s.tolist()
        ([0.3333333333333333, 0.5], [2.0, 0.0])
    """
    order = np.argsort(t, kind="stable")
    t, s = t[order], s[order]
    near = np.diff(t) <= KINK_MERGE_ULPS * np.spacing(np.maximum(np.abs(t[1:]), np.abs(t[:-1])))
    groups = np.concatenate([[0], np.cumsum(~near)])
    n = int(groups[-1]) + 1
    tu = np.array([t[groups == g][0] for g in range(n)]) + 0.0   # (-0.0 reads 0.0)
    su = np.bincount(groups, weights=s, minlength=n)
    return tu, su


def function_cost(net: Network, bias: str = "free", skip: bool = False) -> float:
    """Representation cost of the function a univariate one-hidden-layer network computes:
    the least penalty ``(1/2)||theta||^2`` of any network in the model class (free or
    penalised biases, with or without a free skip) computing the same function.

    Example:
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])  # |x|
        >>> function_cost(net, "free", skip=True), function_cost(net, "free", skip=False)
        (2.0, 2.0)
    """
    bias = _check_bias(bias)
    t, s, L, R = kinks_of(net)
    if bias == "free":
        V = float(np.sum(np.abs(s)))
        return V if skip else max(V, abs(L + R))
    if skip:
        return float(np.sum(np.abs(s) * _weight(t, bias)))
    # split every jump into right- and left-facing parts; a zero-jump kink at 0 carries
    # an affine part at the least price
    tt = np.concatenate([t, [0.0]])
    ss = np.concatenate([s, [0.0]])
    K = tt.size
    wt = _weight(tt, bias)
    # variables r+ r- l+ l- (each K)
    cvec = np.concatenate([wt, wt, wt, wt])
    I = np.eye(K)
    Z = np.zeros(K)
    A_eq = np.vstack([
        np.hstack([I, -I, I, -I]),  # r + l = s
        np.concatenate([np.ones(K), -np.ones(K), Z, Z])[None, :],  # sum r = R
        np.concatenate([Z, Z, np.ones(K), -np.ones(K)])[None, :],  # sum l = -L
    ])
    b_eq = np.concatenate([ss, [R, -L]])
    # solve for jumps scaled to largest 1 (the cost is homogeneous): HiGHS's absolute
    # feasibility tolerance (1e-7) would let zero meet jumps of 1e-15
    m = float(np.max(np.abs(b_eq)))
    if m == 0.0:
        return 0.0
    r = solve(cvec, A_eq=A_eq, b_eq=b_eq / m, lb=np.zeros(4 * K))
    if not r.ok:  # always feasible (every jump split as it is): a numerical failure
        raise MinNormError(
            f"the representation-cost LP ended with status {r.status}, a numerical failure: "
            f"kinks from {float(tt.min()):.3g} to {float(tt.max()):.3g} give weights sqrt(1 + t^2) "
            "spanning too many orders of magnitude for HiGHS; rescale x")
    return float(r.objective) * m


def parameter_cost(net: Network, bias: str = "free") -> float:
    """The penalty ``(1/2) sum_j (a_j^2 + w_j^2 [+ b_j^2])`` of a one-hidden-layer network's
    own parameters (skip and output bias are free).

    Example:
        >>> parameter_cost(Network([[[2.0]], [[1.0]]], [[1.0], [0.0]]), "penalized")
        3.0
    """
    bias = _check_bias(bias)
    net = net.float()
    if net.input_dim != 1 or net.output_dim != 1 or net.n_hidden_layers != 1:
        raise MinNormError(f"parameter_cost: expected a univariate network with one hidden layer and "
                           f"one output, got {net!r}")
    tot = float(np.sum(net.weights[0] ** 2) + np.sum(net.weights[1] ** 2))
    if bias == "penalized":
        tot += float(np.sum(net.biases[0] ** 2))
    return 0.5 * tot


# ------------------------------------------------------------------ solvers
def _solve(x: np.ndarray, y: np.ndarray, bias: str, skip: bool, task: str,
           describe: bool, max_iter: int = 200,
           time_limit: float | None = None) -> MinNormResult:
    # each LP is handed what the limit leaves (not only each round), at least 0.1 s (an
    # LP gets a few iterations; none starts once the deadline is past)
    deadline = Deadline(time_limit, floor=LP_FLOOR_SECONDS)
    left, late = deadline.left, deadline.expired

    # Regression values are solved for scaled to largest 1 and mapped back (the problem is
    # homogeneous in y): the gap tests, merges and probes then see the same numbers
    # whatever the data's units (values of 1e-15 passed every absolute test at once)
    ys = float(np.max(np.abs(y))) if task == "regression" else 1.0
    ys = ys if ys > 0 else 1.0
    y_data, y = y, y / ys
    orients = (1.0,) if skip else (1.0, -1.0)
    t = np.concatenate([x for _ in orients])
    o = np.concatenate([np.full(x.size, v) for v in orients])
    if bias == "penalized":
        t = np.concatenate([t, np.zeros(len(orients))])
        o = np.concatenate([o, np.array(orients)])
    it = 0
    ratio = np.inf
    best_lower = -np.inf
    gaps: list[float] = []
    stop = "stalled"  # how the loop ended when the gap is not closed (the status says so)
    out: _LPOut | None = None
    while True:
        it += 1
        new = _kink_lp(x, y, t, o, _weight(t, bias), task, skip, time_limit=left)
        if new.status == "time_limit" and out is not None:
            stop = "time_limit"  # the last round's solution and bound stand
            t, o = t[: out.coef.size], o[: out.coef.size]
            break
        if new.status == "time_limit":
            raise MinNormError(f"the time limit ({time_limit:g} s) ran out in the first LP, on {x.size} "
                               "points: no network to return; give more time")
        if new.status != "optimal":
            # distinct x can always be interpolated or separated by kinks at the data: any
            # other status is numerical (slopes dy/dx far from 1, coefficients HiGHS drops)
            gap = float(np.min(np.diff(x))) if x.size > 1 else 0.0
            raise MinNormError(
                f"the minimal-norm LP ended with status {new.status}, a numerical failure: the "
                f"{task} constraints can always be met for distinct x (here, after relulab's own "
                f"rescaling, x spans [{x[0]:.3g}, {x[-1]:.3g}], closest two {gap:.3g} apart, |y| up "
                f"to {float(np.max(np.abs(y))):.3g}); rescale x and y to moderate sizes")
        out = new
        m = (_project_free(out.duals, x, skip) if task == "regression"
             else _project_free_signed(out.duals, x, y, skip))
        ratio, adds = _max_violation(x, m, bias, skip)
        if not m.any() and out.duals.any():   # no dual kept its signs: columns from the LP's own
            _, adds = _max_violation(x, out.duals, bias, skip)
        # every round's scaled dual is feasible: its value is a certified lower bound
        best_lower = max(best_lower, float(m @ y) / max(1.0, ratio))
        gap = _relative_gap(out.value, best_lower)
        gaps.append(gap)
        if not adds or gap <= GAP_TOL:
            break
        if it >= max_iter or (len(gaps) > 5 and gap > 0.5 * gaps[-6]):
            stop = "stalled"  # the certified gap no longer shrinks (LP accuracy reached)
            break
        if late():
            stop = "time_limit"
            break
        new_t = np.array([a[0] for a in adds])
        new_o = np.array([float(a[1]) for a in adds])
        # a maximiser already present means the LP duals are only approximately feasible
        fresh = [k for k in range(new_t.size)
                 if not np.any((np.abs(t - new_t[k]) <= 1e-13 * max(1.0, abs(new_t[k])))  # tol: same kink
                               & (o == new_o[k]))]
        if not fresh:
            break
        t = np.concatenate([t, new_t[fresh]])
        o = np.concatenate([o, new_o[fresh]])
    value = out.value
    lower = best_lower
    coef = out.coef.copy()
    tk, ok, ck, shift = t, o, coef, 0.0
    dd, cc = out.d, out.c
    if bias == "penalized":
        tk, ok, ck, shift = _merge(x, t, o, coef)
        dd += shift
        # re-solve on the merged positions only: a basic solution there drops the
        # near-zero leftovers that column generation's finite tolerance leaves behind
        pos = np.unique(tk)
        tk2 = np.concatenate([pos for _ in orients])
        ok2 = np.concatenate([np.full(pos.size, v) for v in orients])
        # (skipped when the time is up: it only polishes)
        out2 = _kink_lp(x, y, tk2, ok2, _weight(tk2, bias), task, skip, time_limit=left) \
            if not late() else _LPOut("time_limit", np.nan, 0.0, 0.0, np.zeros(0), None, None)
        merged_cost = float(np.sum(np.abs(ck) * _weight(tk, bias)))
        if out2.status == "optimal" and out2.value <= merged_cost * (1 + ROUNDOFF) + 1e-15:  # tol: not costlier
            tk, ok, ck, dd, cc = tk2, ok2, out2.coef, out2.d, out2.c
    # units whose share of the cost is below the LP's accuracy are its leftovers, not kinks
    share = np.abs(ck) * _weight(tk, bias)
    ck = np.where(share > MINNORM_LP_TOL * float(np.sum(share)), ck, 0.0)
    cost = function_cost(_build_network(tk, ok, ck, dd, cc, bias, skip), bias, skip)
    # merging never raises the cost; the LP value is the certified upper bound otherwise
    cost = min(cost, value)
    # the certified bound is not lowered to a computed cost (that hid a wrong kink merge);
    # a cost below it by rounding reads as the bound
    cost = max(cost, lower)
    status = "optimal" if _relative_gap(cost, lower) <= GAP_TOL else stop
    opt_set = None
    if bias == "free" and describe and not late():
        opt_set = _describe_free(x, y, skip, task, value, deadline)
        opt_set = None if late() else OptimalSet(  # a probe cut by the limit decides nothing
            cost=opt_set.cost * ys, zones=opt_set.zones, value_ranges=opt_set.value_ranges * ys)
    unique = None
    if describe and status == "optimal" and not late():  # probe LPs: not past the limit
        keep = ck != 0.0
        unique = _uniqueness(x, y, bias, skip, task, out.duals / max(1.0, ratio), value,
                             tk[keep], ok[keep], deadline)
        unique = None if late() else unique
    # back to the data's units
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = (ck * ys, dd * ys, cc * ys)
    if not all(np.all(np.isfinite(v)) for v in scaled):  # |y| near 1e308: a NaN weight said nothing of the data
        raise MinNormDataError(f"the fitted weights overflow float64 at this data scale (y's scale "
                               f"{ys:.3g}); rescale y")
    net = _build_network(tk, ok, *scaled, bias, skip)
    kt, ks, _, _ = kinks_of(net)
    return MinNormResult(
        network=net, cost=float(cost * ys), lower_bound=float(lower * ys), bias=bias,
        skip=skip, task=task, x=x, y=y_data, kinks=kt, jumps=ks, unique=unique,
        optimal_set=opt_set, iterations=it, info={"max_dual_ratio": float(ratio),
                                                  "n_columns": int(t.size)},
        status=status,
    )


_CONTACT = 1e-6  # tol: a dual ratio this close to 1 may carry an optimal kink (LP accuracy)


def _contacts(x: np.ndarray, g: np.ndarray, bias: str, skip: bool):
    """Positions (and orientations) where the feasible dual function ``g`` (scaled so
    that ``|g(t)| <= w(t)`` everywhere) comes within ``_CONTACT`` of the weight: by
    complementary slackness only there can an optimal function have a kink.  ``None`` when
    the near-contact set contains a whole interval or escapes to infinity."""
    n = x.size
    mx = g * x
    suf_m = np.concatenate([np.cumsum(g[::-1])[::-1], [0.0]])
    suf_mx = np.concatenate([np.cumsum(mx[::-1])[::-1], [0.0]])
    pre_m = np.concatenate([[0.0], np.cumsum(g)])
    pre_mx = np.concatenate([[0.0], np.cumsum(mx)])
    ends = np.concatenate([[-np.inf], x, [np.inf]])
    found: list[tuple[float, float]] = []
    for o in ((1.0,) if skip else (1.0, -1.0)):
        for j in range(n + 1):
            a, b = ends[j], ends[j + 1]
            if o == 1.0:
                alpha, beta = suf_mx[j], -suf_m[j]
            else:
                alpha, beta = -pre_mx[j], pre_m[j]
            bounded = np.isfinite(a) and np.isfinite(b)
            if bias == "free":
                va = abs(alpha + beta * a) if np.isfinite(a) else None
                vb = abs(alpha + beta * b) if np.isfinite(b) else None
                if not bounded:
                    # g is constant up to rounding on a tail (the output bias is free)
                    if abs(beta) > FEAS_TOL or abs(alpha) >= 1.0 - _CONTACT:
                        return None
                    continue
                near = [va >= 1.0 - _CONTACT, vb >= 1.0 - _CONTACT]
                if near[0] and near[1] and (alpha + beta * a) * (alpha + beta * b) > 0:
                    return None  # |g| = 1 on the whole gap: kinks could sit anywhere in it
                found += [(float(v), o) for v, nr in zip((a, b), near, strict=True) if nr]
            else:
                if not bounded and abs(beta) >= 1.0 - _CONTACT:
                    return None  # the supremum is approached at infinity
                if bounded:
                    # |alpha + beta t| / sqrt(1 + t^2) is quasi-concave where alpha + beta t
                    # keeps its sign (its level sets are {linear >= c * convex}): near the
                    # weight at both ends, it is near it on the whole gap (at x ~ 1e6 the
                    # weight is ~|t| and a second optimum 1e-12 off differed by 50 %)
                    ga, gb = alpha + beta * a, alpha + beta * b
                    if (ga * gb > 0 and abs(ga) / np.sqrt(1.0 + a * a) >= 1.0 - _CONTACT
                            and abs(gb) / np.sqrt(1.0 + b * b) >= 1.0 - _CONTACT):
                        return None
                cands = [v for v in (a, b) if np.isfinite(v)]
                if alpha != 0.0 and a <= beta / alpha <= b:
                    cands.append(beta / alpha)
                for v in cands:
                    if abs(alpha + beta * v) / np.sqrt(1.0 + v * v) >= 1.0 - _CONTACT:
                        found.append((float(v), o))
    return sorted(set(found))


def _uniqueness(x: np.ndarray, y: np.ndarray, bias: str, skip: bool, task: str,
                g: np.ndarray | None, opt: float, sol_t: np.ndarray,
                sol_o: np.ndarray, deadline: Deadline = Deadline(None)) -> bool | None:
    """Decide whether the optimal function is unique (see :class:`MinNormResult`).  The
    candidate kinks are the near-contact points of the dual and the returned network's
    own kinks (the dual is only accurate to the LP tolerance, so its tangent points are
    approximate)."""
    if g is None:
        return None
    cont = _contacts(x, g, bias, skip)
    if cont is None:
        return None
    if skip:
        sol_o = np.ones_like(sol_o)  # a left unit is a right unit plus an affine part
    cont = sorted(set(cont) | {(float(a), float(b)) for a, b in zip(sol_t, sol_o, strict=True)})
    t = np.array([c[0] for c in cont], dtype=np.float64)
    o = np.array([c[1] for c in cont], dtype=np.float64)
    w = _weight(t, bias)
    base = _kink_lp(x, y, t, o, w, task, skip, time_limit=deadline.left)
    if base.status != "optimal" or base.value > opt + PROOF_MARGIN * max(1.0, opt):
        return None  # the contact set does not reach the optimum: not decided here
    c_opt = base.value
    nfree = 2 if skip else 1
    cost_row = np.concatenate([np.zeros(nfree), w, w])[None, :]
    pts = np.unique(np.concatenate([t, x[[0, -1]]]))
    pts = np.concatenate([[pts[0] - 1.0], pts, [pts[-1] + 1.0]])
    rows = [np.concatenate([[1.0], [p] if skip else [], F, -F])
            for p, F in zip(pts, _features(pts, t, o), strict=True)]
    scale = max(1.0, float(np.max(np.abs(y))), float(np.max(np.abs(x))))

    def widths(slack: float) -> np.ndarray | None:
        """Spread of the values at ``pts`` over the functions of cost <= c_opt + slack."""
        out = np.zeros(len(rows))
        for i, row in enumerate(rows):
            if deadline.expired():
                return None   # undecided: the caller reports unique=None
            vals = []
            for mx in (True, False):
                r = _kink_lp(x, y, t, o, w, task, skip,
                             extra_ub=(cost_row, np.array([c_opt + slack])),
                             objective=row, maximize=mx, time_limit=deadline.left)
                if r.status == "unbounded":
                    out[i] = np.inf
                    break
                if r.status != "optimal":
                    return None
                vals.append(r.value)
            else:
                out[i] = vals[0] - vals[1]
        return out

    s1 = FEAS_TOL * max(1.0, c_opt)
    w1 = widths(s1)
    if w1 is None:
        return None
    if np.max(w1) <= EQUIV_TOL * scale:
        return True
    # the spread is concave and nondecreasing in the slack (parametric LP), so the spread
    # at slack 0 is at most (w2 - q w1) / (1 - q) with w2 the spread at slack q * s1
    q = 0.01
    w2 = widths(q * s1)
    if w2 is None:
        return None
    if np.max(w2) > 1e3 * EQUIV_TOL * scale:
        return False
    w0 = np.where(np.isfinite(w1), (w2 - q * w1) / (1.0 - q), w2)
    if np.max(w0) <= EQUIV_TOL * scale:
        return True
    return None


def _merge(x: np.ndarray, t: np.ndarray, o: np.ndarray, coef: np.ndarray):
    """Move all kinks of one sign inside one closed data interval to their |coef|-weighted
    centroid ``tb``, keeping each orientation's total: data values change by one common
    constant (returned, absorbed by the free output bias) and the cost does not rise
    (Jensen, the weight is convex).  A right unit ``r (x - t)_+`` and a left unit
    ``l (t' - x)_+`` moved to ``tb`` shift the values on both sides of the interval by the
    same ``sum_k coef_k (tb - t_k)`` over right units, because ``tb`` is the centroid."""
    top = float(np.max(np.abs(coef))) if coef.size else 1.0
    nz = np.abs(coef) > 1e-13 * top  # tol: rounding (relative: data 1e15 apart has coefficients near 1e-15)
    t, o, coef = t[nz], o[nz], coef[nz]
    seg = np.searchsorted(x, t, side="right") - 1  # t == x_j goes with [x_j, x_{j+1}]
    keys: dict[tuple[int, bool], list[int]] = {}
    for k in range(t.size):
        keys.setdefault((int(seg[k]), bool(coef[k] > 0)), []).append(k)
    T, O, C = [], [], []
    shift = 0.0
    for _, ks in sorted(keys.items()):
        ks = np.array(ks)
        wts = np.abs(coef[ks])
        tb = float(np.sum(wts * t[ks]) / np.sum(wts))
        for ov in (1.0, -1.0):
            sel = ks[o[ks] == ov]
            if sel.size == 0:
                continue
            if ov == 1.0:
                shift += float(np.sum(coef[sel] * (tb - t[sel])))
            T.append(tb)
            O.append(ov)
            C.append(float(np.sum(coef[sel])))
    return np.array(T), np.array(O), np.array(C), shift


def _describe_free(x: np.ndarray, y: np.ndarray, skip: bool, task: str,
                   opt: float, deadline: Deadline = Deadline(None)) -> OptimalSet:
    """Probe LPs: over the optimal set, how large can a convex / concave kink in each
    zone be, and what values can the function take at each data point."""
    n = x.size
    span = max(1.0, float(x[-1] - x[0]))
    probes: list[tuple[float, float]] = [(-np.inf, x[0])]
    for j in range(n):
        probes.append((x[j], x[j]))
        if j + 1 < n:
            probes.append((x[j], x[j + 1]))
    probes.append((x[-1], np.inf))
    scale = max(1.0, opt)
    slack = FEAS_TOL * scale
    zones = []
    orients = (1.0,) if skip else (1.0, -1.0)
    base_t = np.concatenate([x for _ in orients])
    base_o = np.concatenate([np.full(n, v) for v in orients])
    for lo, hi in probes:
        if deadline.expired():
            break   # the caller discards a description cut by the limit
        if lo == hi:
            pos = lo
            t, o = base_t, base_o
        else:
            pos = (x[0] - span) if not np.isfinite(lo) else (x[-1] + span) if not np.isfinite(hi) \
                else 0.5 * (lo + hi)
            t = np.concatenate([base_t, np.full(len(orients), pos)])
            o = np.concatenate([base_o, np.array(orients)])
        K = t.size
        nfree = 2 if skip else 1
        w = np.ones(K)
        at = np.abs(t - pos) <= 1e-15 * max(1.0, abs(pos))  # tol: same float
        cost_row = np.concatenate([np.zeros(nfree), w, w])[None, :]
        # jump at pos = sum of coefficients of units there (either orientation)
        jump = np.concatenate([np.zeros(nfree), at.astype(float), -at.astype(float)])
        flags = []
        for sgn in (1.0, -1.0):
            r = _kink_lp(x, y, t, o, w, task, skip, extra_ub=(cost_row, np.array([opt + slack])),
                         objective=sgn * jump, maximize=True, time_limit=deadline.left)
            flags.append(r.status == "optimal" and r.value > PROOF_MARGIN * scale)
        zones.append(Zone(float(lo), float(hi), convex=flags[0], concave=flags[1]))
    # value ranges at the data points
    ranges = np.zeros((n, 2))
    if task == "regression":
        ranges[:, 0] = ranges[:, 1] = y
    else:
        t, o = base_t, base_o
        K = t.size
        nfree = 2 if skip else 1
        w = np.ones(K)
        cost_row = np.concatenate([np.zeros(nfree), w, w])[None, :]
        F = _features(x, t, o)
        base = np.ones((n, 1)) if not skip else np.column_stack([np.ones(n), x])
        rows = np.hstack([base, F, -F])
        for i in range(n):
            if deadline.expired():
                break
            for col, mx in ((0, False), (1, True)):
                r = _kink_lp(x, y, t, o, w, task, skip,
                             extra_ub=(cost_row, np.array([opt + slack])),
                             objective=rows[i], maximize=mx, time_limit=deadline.left)
                # unbounded: optimal functions take arbitrarily large (small) values
                # there; NaN is kept for a probe that did not finish (time limit, error)
                ranges[i, col] = (r.value if r.status == "optimal" else
                                  (np.inf if mx else -np.inf) if r.status == "unbounded" else np.nan)
    return OptimalSet(cost=float(opt), zones=tuple(zones), value_ranges=ranges)


def _check_time_limit(time_limit: Any, error: type[RelulabError] = MinNormError) -> float | None:
    """None, or seconds > 0 as a float; NaN, negative and non-numbers raise ``error`` (one
    clear line, not silently 'no limit' or an instant stop).  Also convex training's."""
    if time_limit is not None and not is_positive_seconds(time_limit):
        raise error(f"time_limit must be a positive number of seconds or None, got {time_limit!r}")
    return None if time_limit is None else float(time_limit)


def minnorm_interpolant(x: Any, y: Any, bias: str = "free", skip: bool = False, *,
                        describe: bool = True, time_limit: float | None = None) -> MinNormResult:
    """The exact minimal-norm univariate two-layer ReLU network with ``f(x_i) = y_i``.

    Args:
        x, y: the data, shape ``(n,)`` or ``(n, 1)`` (wider arrays are refused, not
            flattened); repeated ``x`` must have equal ``y``.
        bias: ``"free"`` (biases not penalised) or ``"penalized"``.
        skip: include a free affine skip ``c x`` (the output bias is always free).
        describe: with free biases, also describe the whole optimal set (probe LPs); and
            decide ``unique`` (probe LPs; ``None`` without them).
        time_limit: seconds for the whole fit: every LP is handed the time left; when
            it runs out the result has ``status="time_limit"`` and ``partial=True``
            (``cost`` an upper bound, ``lower_bound`` certified; ``unique`` and
            ``optimal_set`` None), or, if not even the first LP finished, a
            :class:`MinNormError` says so.

    Returns:
        A :class:`MinNormResult` (network, optimal cost, certified lower bound, kinks,
        ``status`` / ``partial``, ``unique``: True only when certified).

    Example:
        >>> r = minnorm_interpolant([0, 1, 2, 3], [0, 1, 1, 0], bias="penalized", skip=True)
        >>> r.unique, r.status, r.gap <= 1e-6 * r.cost, r.kinks.round(12).tolist()
        (True, 'optimal', True, [1.5])
    """
    bias = _check_bias(bias)
    tl = _check_time_limit(time_limit)
    x, y = _prep(x, y, "regression")
    return _scaled_solve(x, y, bias, bool(skip), "regression", describe, tl)


def minnorm_classifier(x: Any, labels: Any, bias: str = "free", skip: bool = False, *,
                       describe: bool = True, time_limit: float | None = None) -> MinNormResult:
    """The exact minimal-norm univariate two-layer ReLU classifier with margin:
    ``labels_i f(x_i) >= 1`` (labels -1/+1, or 0/1).  ``describe`` and ``time_limit`` as
    in :func:`minnorm_interpolant` (the result's ``status`` / ``partial`` say whether the
    time limit cut column generation short).  Optimal classifiers are often not unique
    (e.g. cost 0 with a skip: every separating line), and ``unique`` says so.

    Example:
        >>> r = minnorm_classifier([0, 1, 2, 3], [1, 1, -1, -1], bias="free", skip=True)
        >>> [round(float(v), 6) for v in r.network([[1.0], [2.0]]).ravel()]  # hugs the switch
        [1.0, -1.0]
    """
    bias = _check_bias(bias)
    tl = _check_time_limit(time_limit)
    x, y = _prep(x, labels, "classification")
    return _scaled_solve(x, y, bias, bool(skip), "classification", describe, tl)


def _scaled_solve(x: np.ndarray, y: np.ndarray, bias: str, skip: bool, task: str, describe: bool,
                  time_limit: float | None) -> MinNormResult:
    """:func:`_centred_solve` on free-bias data whose closest two points lie more than
    2^X_RANGE_EXP apart, or whose spread is below 2^-X_RANGE_EXP, scaled by an even power
    of two ``2^j`` that brings both towards 1 (the problem does not change:
    ``f(x) = g(2^j x)``), and the result scaled back exactly.  HiGHS's tolerances are
    absolute: data 1e12 apart stopped "stalled" 50 % above the optimum, and data 1e-20
    apart ended in a numerical failure.  (Data with unit gaps and a spread of 2e10 stay
    as they are: scaled to a unit spread, their gaps of 6e-11 failed.)"""
    xs = np.sort(x.ravel())
    gaps = np.diff(xs)
    gaps = gaps[gaps > 0]
    spread = float(xs[-1] - xs[0])
    if bias != "free" or not np.isfinite(spread) or not gaps.size:
        return _centred_solve(x, y, bias, skip, task, describe, time_limit)
    e_gap, e_spread = power_of_two_exponent([gaps.min()]), power_of_two_exponent([spread])
    if e_gap <= X_RANGE_EXP and e_spread >= -X_RANGE_EXP:
        return _centred_solve(x, y, bias, skip, task, describe, time_limit)
    e = (e_gap + e_spread) // 2
    j = -e - (-e) % 2   # even: the network is scaled back balanced, 2^(j/2) per layer
    xsc = np.ldexp(x, j)
    if not (np.all(np.isfinite(xsc)) and np.array_equal(np.ldexp(xsc, -j), x)):
        return _centred_solve(x, y, bias, skip, task, describe, time_limit)   # not exact (subnormal)
    r = _centred_solve(xsc, y, bias, skip, task, describe, time_limit)
    up, down, h = math.ldexp(1.0, j), math.ldexp(1.0, -j), math.ldexp(1.0, j // 2)
    net = r.network
    W1, b1 = np.asarray(net.weights[0], float), np.asarray(net.biases[0], float)
    W2, b2 = np.asarray(net.weights[1], float), np.asarray(net.biases[1], float)
    # a relu(w 2^j x + b) = (a h) relu((w h) x + b / h) with h = 2^(j/2); the skip c 2^j x
    sk = None if net.skip is None else (np.asarray(net.skip[0], float) * up, np.asarray(net.skip[1], float))
    moved = Network([W1 * h, W2 * h], [b1 / h, b2], sk)
    opt = r.optimal_set
    if opt is not None:
        opt = OptimalSet(opt.cost * up, tuple(Zone(z.lo * down, z.hi * down, z.convex, z.concave)
                                              for z in opt.zones), opt.value_ranges)
    info = {**r.info, "solved_with_x_times": up}
    if "solved_translated_by" in info:
        info["solved_translated_by"] = info["solved_translated_by"] * down
    return dataclasses.replace(r, network=moved, cost=r.cost * up, lower_bound=r.lower_bound * up,
                               x=x, kinks=r.kinks * down, jumps=r.jumps * up, optimal_set=opt, info=info)


def _centred_solve(x: np.ndarray, y: np.ndarray, bias: str, skip: bool, task: str, describe: bool,
                   time_limit: float | None) -> MinNormResult:
    """:func:`_solve` on data far from the origin (free biases: the problem does not
    change under a translation) moved next to it by a data value, when every difference
    is exact, and the result moved back.  At x = 3e9 + k the dual's free-term conditions
    (sum m = 0, sum m x = 0) were met only to 1e-7 of 3e9, and the "certified" bound of
    an interpolant was 14.5 for an optimum of 13.5."""
    from fractions import Fraction

    xs = x.ravel()
    spread = float(np.max(xs) - np.min(xs))
    shift = float(xs[np.argmin(np.abs(xs - np.median(xs)))])
    far = bias == "free" and spread > 0 and abs(shift) > FAR_DATA * spread
    if not far or not all(Fraction(float(v - shift)) == Fraction(float(v)) - Fraction(shift) for v in xs):
        return _solve(x, y, bias, skip, task, describe, time_limit=time_limit)
    r = _solve(x - shift, y, bias, skip, task, describe, time_limit=time_limit)
    net = r.network
    W1, b1 = np.asarray(net.weights[0], float), np.asarray(net.biases[0], float)
    W2, b2 = np.asarray(net.weights[1], float), np.asarray(net.biases[1], float)
    skip_w = None if net.skip is None else np.asarray(net.skip[0], float)
    # relu(w (x - s) + b) = relu(w x + (b - w s)); c (x - s) = c x - c s
    b1 = b1 - W1[:, 0] * shift
    b2 = b2 - (0.0 if skip_w is None else skip_w[:, 0] * shift)
    moved = Network([W1, W2], [b1, b2], None if skip_w is None else (skip_w, np.zeros(1)))
    opt = r.optimal_set
    if opt is not None:
        opt = OptimalSet(opt.cost, tuple(Zone(z.lo + shift, z.hi + shift, z.convex, z.concave)
                                          for z in opt.zones), opt.value_ranges)
    info = {**r.info, "solved_translated_by": -shift}
    # moved back in float64, w x + b cancels at x = 3e9: the network is the float rounding
    # of the optimal function, and its forward pass may miss the data; say by how much
    vals = moved(x.reshape(-1, 1))[:, 0]
    if task == "regression":
        miss = float(np.max(np.abs(vals - y)))
        if miss > PROOF_MARGIN * max(float(np.max(np.abs(y))), TINY):
            info["network_fit_error"] = miss
    else:
        low = float(np.min(y * vals))
        if low < 1.0 - PROOF_MARGIN:
            info["network_min_margin"] = low
    if "network_fit_error" in info or "network_min_margin" in info:
        info["network_note"] = ("the network is the float64 rounding of the optimal function moved back "
                                "from the translated solve: its forward pass misses the data by the "
                                "amount given (the cost and its certificate are the optimum's)")
    return dataclasses.replace(r, network=moved, x=x, kinks=r.kinks + shift, optimal_set=opt, info=info)


def minnorm_on_grid(x: Any, y: Any, grid: Any, bias: str = "free", skip: bool = False,
                    task: str = "regression") -> tuple[float, Network]:
    """Brute-force reference: the least cost when kinks may only sit on ``grid`` (one LP
    with a column for every grid point and orientation).  Its value is at least the exact
    optimum and tends to it as the grid is refined.

    Example:
        >>> v, _ = minnorm_on_grid([0, 1, 2], [0, 1, 0], np.linspace(-1, 3, 41), skip=True)
        >>> round(v, 9)
        2.0
    """
    bias = _check_bias(bias)
    if task not in ("regression", "classification"):
        raise MinNormError(f"task must be 'regression' or 'classification', got {task!r}")
    x, y = _prep(x, y, task)
    try:
        g = np.asarray(grid, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as e:
        raise MinNormError(f"grid must be an array of numbers ({e})") from None
    if g.size == 0 or not np.all(np.isfinite(g)):
        raise MinNormError("grid must be a non-empty array of finite numbers")
    orients = (1.0,) if skip else (1.0, -1.0)
    t = np.concatenate([g for _ in orients])
    o = np.concatenate([np.full(g.size, v) for v in orients])
    out = _kink_lp(x, y, t, o, _weight(t, bias), task, bool(skip))
    if out.status != "optimal":
        raise MinNormError(f"grid LP ended with status {out.status}")
    net = _build_network(t, o, out.coef, out.d, out.c, bias, bool(skip))
    return out.value, net


def in_optimal_set(f: Network, result: MinNormResult, tol: float | None = None) -> bool:
    """Whether ``f`` (univariate, one hidden layer) computes an optimal function of the
    problem solved in ``result``: it meets the data constraints (to ``tol``) and its
    representation cost is at most the optimum (relative ``tol``).

    Example:
        >>> r = minnorm_interpolant([0, 1, 2], [0, 1, 0], skip=True)
        >>> in_optimal_set(r.network, r), in_optimal_set(r.network * 2.0, r)
        (True, False)
    """
    tol = or_default(tol, PROOF_MARGIN)
    # first: it names a network that is not univariate with one hidden layer (the forward
    # pass below raised a raw shape error for two inputs)
    c = function_cost(f, result.bias, result.skip)
    vals = f.float()(result.x[:, None])[:, 0]
    # both tests relative to the problem's own sizes: floors of 1 made them absolute, and
    # values of 1e-8 accepted the zero network (costs of 1e-9: three times the optimum)
    scale = float(np.max(np.abs(result.y)))
    if result.task == "regression":
        if np.max(np.abs(vals - result.y)) > tol * (scale if scale > 0 else 1.0):
            return False
    elif np.min(result.y * vals) < 1.0 - tol:
        return False
    return bool(c <= result.cost * (1.0 + tol))
