"""Functional dimension: the rank of the Jacobian of parameters -> outputs on a batch.

For a batch ``X`` of ``n`` points the realisation map ``theta -> (f_theta(x_1), ..,
f_theta(x_n))`` is piecewise polynomial in ``theta``; at a point where no pre-activation
is exactly zero it is differentiable and its Jacobian is computed here in closed form
(the activation pattern fixes a linear region, in which ``df_o/dW_k[j, i] =
delta_k[o, j] * h_{k-1}[i]`` and ``df_o/db_k[j] = delta_k[o, j]`` with ``delta`` the
back-propagated pattern-masked products).  Its rank is the *batch functional
dimension*; with enough generic points it is the functional dimension of the
parameter.  Rescaling a hidden neuron (incoming weights and bias times ``c``, outgoing
times ``1/c``) does not change the function, so the rank is at most
``n_params - n_hidden`` (minus the output size with a skip, whose offset duplicates the
output bias).  Grillo and Montufar (2026) show that for layered networks whose input
and hidden widths are all at least two this bound is attained on an open set of
parameters.

The rank is computed numerically (SVD, singular-value gap reported) and, on request,
exactly: the network and the points are taken as rationals (a float is the exact
binary fraction it stores) and the Jacobian's rank is found by integer Gaussian
elimination.

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> from relulab.params import functional_dimension
    >>> rng = np.random.default_rng(1)
    >>> net = Network([rng.normal(size=(3, 2)), rng.normal(size=(1, 3))],
    ...               [rng.normal(size=3), rng.normal(size=1)])
    >>> fd = functional_dimension(net, rng.normal(size=(40, 2)) * 3, exact=True)
    >>> fd.rank, fd.exact_rank, fd.bound
    (10, 10, 10)
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..errors import RelulabError, is_positive_seconds
from ..limits import Deadline, check_bytes
from ..network import Network
from ._rank import RankInfo, RankTimeLimit, _check_tol, exact_rank, numerical_rank
from .vector import parameter_layout

__all__ = [
    "FunctionalDimension",
    "realization_jacobian",
    "functional_dimension",
    "rescaling_bound",
    "switching_network",
]


@dataclass(frozen=True)
class FunctionalDimension:
    """Batch functional dimension of a network on ``n_points`` inputs.

    Attributes:
        rank: the numerical rank of the realisation Jacobian.
        exact_rank: its rank in rational arithmetic, or None if not asked for.
        bound: ``n_params - n_hidden`` (minus the output size when there is a skip): the
            most the rescaling symmetries allow.
        n_params, n_hidden, n_points, n_outputs: sizes; the Jacobian is
            ``(n_points * n_outputs, n_params)``.
        dead_neurons: hidden neurons inactive at every point of the batch.
        boundary_points: points with some pre-activation zero, or within float64's
            rounding of zero in the float pass (the Jacobian there is the one-sided one
            of the side its pattern took, and the numerical rank's float pattern may
            differ from the exact one).
        numerical: the singular values at the cut (:class:`RankInfo`).
        exact_stopped: why an asked-for exact rank is missing (its time limit), else None.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> rng = np.random.default_rng(1)
        >>> net = Network([rng.normal(size=(3, 2)), rng.normal(size=(1, 3))],
        ...               [rng.normal(size=3), rng.normal(size=1)])
        >>> fd = functional_dimension(net, rng.normal(size=(40, 2)) * 3)
        >>> fd.rank == fd.bound == fd.n_params - fd.n_hidden, fd.dead_neurons, fd.numerical.method
        (True, 0, 'svd')
    """

    rank: int
    exact_rank: int | None
    bound: int
    n_params: int
    n_hidden: int
    n_points: int
    n_outputs: int
    dead_neurons: int
    boundary_points: int
    numerical: RankInfo
    exact_stopped: str | None = None

    @property
    def complete(self) -> bool:
        """False when an asked-for exact rank ran out of its time limit."""
        return self.exact_stopped is None

    @property
    def deficit(self) -> int:
        """``bound - rank`` (the exact rank when computed)."""
        return self.bound - (self.exact_rank if self.exact_rank is not None else self.rank)

    def to_dict(self) -> dict:
        return {
            "rank": self.rank,
            "exact_rank": self.exact_rank,
            "bound": self.bound,
            "deficit": self.deficit,
            "n_params": self.n_params,
            "n_hidden": self.n_hidden,
            "n_points": self.n_points,
            "n_outputs": self.n_outputs,
            "dead_neurons": self.dead_neurons,
            "boundary_points": self.boundary_points,
            "numerical": self.numerical.to_dict(),
            "exact_stopped": self.exact_stopped,
            "complete": self.complete,
        }


def rescaling_bound(net: Network) -> int:
    """``n_params - n_hidden`` (minus ``output_dim`` with a skip): the largest possible
    functional dimension given the rescaling symmetries.

    Example:
        >>> from relulab import Network
        >>> rescaling_bound(Network([[[1.0], [-2.0]], [[3.0, 4.0]]], [[0.5, 0.0], [1.0]]))   # 7 - 2
        5
    """
    if net.n_hidden_layers == 0:
        # an affine map: with a skip, its weights duplicate the layer's as well as its bias
        return (net.input_dim + 1) * net.output_dim
    extra = net.output_dim if net.skip is not None else 0
    return net.n_params - net.n_neurons - extra


def _as_batch(net: Network, X, exact: bool) -> np.ndarray:
    try:
        X = np.asarray(X, dtype=object if exact else float)
        if exact:
            np.asarray(X, dtype=float)   # the same check for non-numbers as a float batch
    except (TypeError, ValueError) as e:
        raise RelulabError(f"points: must be numbers ({e})") from None
    if X.ndim == 1:
        X = X[None, :]
    if X.ndim != 2 or X.shape[1] != net.input_dim:
        raise RelulabError(
            f"points have shape {np.shape(X)}; the network takes {net.input_dim} inputs "
            "(an (n, d) batch)"
        )
    finite = np.vectorize(lambda v: isinstance(v, Fraction) or np.isfinite(float(v)), otypes=[bool])
    if X.size and not np.all(finite(X)):
        row = int(np.nonzero(~np.all(finite(X), axis=1))[0][0])
        raise RelulabError(f"points: row {row} contains NaN or infinite entries")
    if exact:
        X = np.vectorize(lambda v: v if isinstance(v, Fraction) else Fraction(v), otypes=[object])(
            X
        )
    return X


def realization_jacobian(net: Network, X) -> np.ndarray:
    """The Jacobian of ``theta -> (f_theta(x_1), .., f_theta(x_n))`` at ``net``'s parameters.

    Shape ``(n * m, n_params)``: row ``p * m + o`` is output ``o`` at point ``p``; columns
    follow :func:`relulab.params.parameter_vector`.  Exact (object dtype, Fractions) for an
    exact network.  A zero pre-activation counts as inactive (the pattern convention of
    :class:`~relulab.Network`).

    Example:
        >>> from relulab import Network
        >>> net = Network([[[2.0]], [[3.0]]], [[1.0], [0.0]])
        >>> realization_jacobian(net, [[1.0]]).tolist()   # d/d(W1, b1, W2, b2) at x = 1
        [[3.0, 3.0, 3.0, 1.0]]
    """
    exact = net.is_exact
    X = _as_batch(net, X, exact)
    n = X.shape[0]
    lay = parameter_layout(net)
    m = net.output_dim
    dtype = object if exact else float
    zero = Fraction(0) if exact else 0.0
    one = Fraction(1) if exact else 1.0
    Hs = [X]
    masks = []
    H = X
    for W, b in zip(net.weights[:-1], net.biases[:-1], strict=True):
        Z = H @ W.T + b
        mask = np.asarray(Z > 0, dtype=bool)
        masks.append(mask)
        H = np.where(mask, Z, zero)
        Hs.append(H)
    # object entries hold a pointer each (and a Fraction); floats 8 bytes; the layer
    # products below take about as much again
    check_bytes(2.0 * n * m * lay.size * (64 if exact else 8),
                f"the Jacobian of the realization map ({n * m} rows x {lay.size} parameters)")
    J = np.empty((n, m, lay.size), dtype=dtype)
    J[...] = zero
    eye = np.full((m, m), zero, dtype=dtype)
    for o in range(m):
        eye[o, o] = one
    G = np.broadcast_to(eye, (n, m, m))  # df/dz_L
    for k in range(net.depth - 1, -1, -1):
        nk, nprev = lay.dims[k + 1], lay.dims[k]
        Hprev = Hs[k]
        w0, b0 = lay.w_offset[k], lay.b_offset[k]
        J[:, :, w0 : w0 + nk * nprev] = (G[:, :, :, None] * Hprev[:, None, None, :]).reshape(
            n, m, nk * nprev
        )
        J[:, :, b0 : b0 + nk] = G
        if k > 0:
            G = np.where(masks[k - 1][:, None, :], G @ net.weights[k], zero)
    if net.skip is not None:
        s0 = lay.skip_offset
        d = net.input_dim
        for o in range(m):
            J[:, o, s0 + o * d : s0 + (o + 1) * d] = X
            J[:, o, s0 + m * d + o] = one
    return J.reshape(n * m, lay.size)


def switching_network(dims, X, seed: int = 0, max_tries: int = 200) -> Network:
    """A random network whose every hidden neuron is active on some points of ``X`` and
    inactive on others (no dead and no always-active neuron on the batch).

    Weights are Gaussian with variance ``1 / fan_in``; each hidden neuron's bias puts its
    threshold at a random quantile (25-75 %) of its pre-activation over the batch, so the
    neuron switches inside the data.  The draw is repeated (up to ``max_tries``) until
    every neuron switches.  This is how the experiments sample "generic" parameters for
    a given input distribution: plain Gaussian draws often contain dead or always-active
    neurons, whose functional dimension is lower.

    Example:
        >>> import numpy as np
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> net = switching_network([2, 3, 3, 1], X, seed=1)
        >>> Z = np.concatenate(net.preactivations(X), axis=1)
        >>> bool(np.all((Z > 0).any(0) & (Z <= 0).any(0)))
        True
    """
    dims = [int(v) for v in dims]
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[1] != dims[0]:
        raise RelulabError(f"points have shape {X.shape}; dims[0] = {dims[0]}")
    rng = np.random.default_rng(seed)
    for _ in range(max_tries):
        Ws, bs = [], []
        H = X
        ok = True
        for k in range(len(dims) - 1):
            W = rng.normal(size=(dims[k + 1], dims[k])) / np.sqrt(dims[k])
            Z = H @ W.T
            if k < len(dims) - 2:
                qs = rng.uniform(0.25, 0.75, size=dims[k + 1])
                b = -np.array([np.quantile(Z[:, j], qs[j]) for j in range(dims[k + 1])])
                # ties (e.g. points the previous layer maps to 0) must not all sit on the
                # threshold: nudge it by a hair of the spread
                b = b - 1e-3 * (Z.std(axis=0) + 1e-12) * rng.uniform(-1, 1, size=dims[k + 1])  # tol: nudge > 0 at zero spread
                Z = Z + b
                if not np.all((Z > 0).any(axis=0) & (Z <= 0).any(axis=0)):
                    ok = False
                    break
                H = np.maximum(Z, 0.0)
            else:
                b = rng.normal(size=dims[k + 1]) * 0.3
            Ws.append(W)
            bs.append(b)
        if ok:
            return Network(Ws, bs)
    raise RelulabError(
        f"no network with dims {dims} found whose neurons all switch on the batch "
        f"in {max_tries} draws"
    )


# points per chunk of the exact (Fraction) Jacobian between deadline checks
EXACT_CHUNK = 32


def _chunked(fn, X: np.ndarray, deadline: Deadline) -> np.ndarray | None:
    """``fn`` over the rows of ``X`` in chunks of ``EXACT_CHUNK``, stacked; None once the
    deadline has passed between chunks."""
    out = []
    for i in range(0, X.shape[0], EXACT_CHUNK):
        if deadline.expired():
            return None
        out.append(fn(X[i:i + EXACT_CHUNK]))
    return np.concatenate(out, axis=0) if out else fn(X[:0])


def functional_dimension(
    net: Network, X, *, exact: bool = False, tol: float | None = None, progress=None,
    time_limit: float | None = None,
) -> FunctionalDimension:
    """The batch functional dimension of ``net`` on the points ``X``.

    Args:
        net: the network (float or exact).
        X: an ``(n, d)`` batch; for a full answer ``n * output_dim`` should exceed the
            bound, and the points should cross every neuron's boundary.
        exact: also compute the rank exactly in rational arithmetic (small networks:
            the cost is cubic in the number of parameters, on big integers).
        tol: singular-value cutoff (a finite number >= 0) for the numerical rank (default
            numpy's rule).
        progress: ``progress(done, total)`` is called as the exact elimination advances.
        time_limit: seconds for the exact rank; past them ``exact_rank`` is None and
            ``exact_stopped`` says so (the numerical rank is always given).

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> net = Network([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0]]], [[-100.0, 0.5], [0.0]])
        >>> fd = functional_dimension(net, np.random.default_rng(0).normal(size=(30, 2)))
        >>> fd.dead_neurons, fd.rank, fd.bound   # neuron 0 never fires
        (1, 4, 7)
    """
    _check_tol(tol, "functional_dimension")
    if time_limit is not None and not is_positive_seconds(time_limit):
        raise RelulabError(f"functional_dimension: time_limit must be a positive number of "
                           f"seconds, got {time_limit!r}")
    Xf = _as_batch(net.float(), X, False)
    if Xf.shape[0] == 0:
        # no points, no Jacobian rows: rank 0 would call every neuron dead
        raise RelulabError("functional_dimension: no points given; the rank needs at least one")
    netf = net.float()
    with np.errstate(over="ignore", invalid="ignore"):
        J = realization_jacobian(netf, Xf)
    if not np.all(np.isfinite(J)):  # its singular values would be NaN and the rank read 0
        raise RelulabError("functional_dimension: the Jacobian at these points overflows float64 "
                           "(inputs or activations near 1e308); give points of a smaller size")
    info = numerical_rank(J, tol)
    er = stopped = None
    if exact:
        if time_limit is not None and not is_positive_seconds(time_limit):
            raise RelulabError(f"functional_dimension: time_limit must be a positive number of "
                               f"seconds, got {time_limit!r}")
        deadline = Deadline(time_limit, floor=0.0)  # the exact Jacobian counts too
        Xe = _as_batch(net, X, True)
        nete = net.exact()
        # the exact Jacobian and patterns in chunks of points, the deadline checked between
        # them: on 2,000 points of a 4-30-30-1 network they took 30 s before the rank began
        J_e = _chunked(lambda P: realization_jacobian(nete, P), Xe, deadline)
        if J_e is None:
            stopped = (f"the exact Jacobian ran out of time before the rank began "
                       f"(time limit {time_limit:g} s)")
        else:
            try:
                er = exact_rank(J_e, progress=progress, time_limit=deadline.left())
            except RankTimeLimit as e:
                stopped = f"{e} (time limit {time_limit:g} s)"
        # dead / boundary judged exactly too, while time is left (else in float64)
        pats = _chunked(lambda P: np.concatenate(nete.preactivations(P), axis=1), Xe, deadline) \
            if nete.n_hidden_layers else None
        pats = [pats] if pats is not None else netf.preactivations(Xf)
    else:
        pats = netf.preactivations(Xf)
    if pats:
        Z = np.concatenate(pats, axis=1)
        dead = int(np.sum(~np.any(Z > 0, axis=0)))
        # a float pre-activation within its rounding bound of 0 may have the other sign
        # exactly: the float Jacobian (the numerical rank's) is then of a neighbouring
        # region (a grid point read rank 6, gap 1e15, where the exact rank is 5)
        boundary = int(np.sum(np.any(Z == 0, axis=1) | _near_boundary(netf, Xf)))
    else:
        dead = boundary = 0
    return FunctionalDimension(
        rank=info.rank,
        exact_rank=er,
        bound=rescaling_bound(net),
        n_params=net.n_params,
        n_hidden=net.n_neurons,
        n_points=int(Xf.shape[0]),
        n_outputs=net.output_dim,
        dead_neurons=dead,
        boundary_points=boundary,
        numerical=info,
        exact_stopped=stopped,
    )


def _near_boundary(netf: Network, X: np.ndarray) -> np.ndarray:
    """Per point, whether a float64 hidden pre-activation lies within its rounding bound
    of 0 (:meth:`Network.rounding_bounds`)."""
    near = np.zeros(np.shape(X)[0], dtype=bool)
    for Z, E in netf.rounding_bounds(X)[:-1]:
        near |= np.any(np.abs(Z) <= E, axis=1)
    return near
