"""Upper bounds on the Lipschitz constant.

* :func:`product_bound`: ``||W_L||_{p->q} ... ||W_1||_{p->p}`` (ReLU is 1-Lipschitz in
  every l^p norm, coordinatewise), plus the skip's norm.
* :func:`interval_jacobian_bound` (Fast-Lip / RecurJac style): interval bounds of
  every Jacobian entry by a backward pass in which each neuron's derivative is fixed
  by the pre-activation bounds (1 stably active, 0 stably inactive, [0, 1] unstable),
  then the operator norm of the entrywise largest magnitudes (lp norms are monotone).
* :func:`sdp_bound` (LipSDP-neuron, Fazlyab et al. 2019) for ``p = q = 2``: the
  incremental quadratic constraints ``(dphi - a dz)(b dz - dphi) >= 0`` of each neuron
  (slopes in ``[a, b]``: ``[0, 1]``, or ``[1, 1]`` / ``[0, 0]`` for stable neurons)
  with one multiplier per neuron, and the S-procedure; solved with cvxpy (Clarabel,
  else SCS).  The solver's multipliers are then re-checked in float64: the reported
  bound is the smallest ``rho`` for which the matrix inequality holds with those
  multipliers (a Schur complement and one eigenvalue), so solver inaccuracy cannot
  make it too small.

Example:
    >>> import numpy as np
    >>> from relulab import Network, Box
    >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]])
    >>> product_bound(net, 2, None), round(interval_jacobian_bound(net, Box([-1], [1]), 2, None), 9)
    (3.1622776601683795, 2.0)
"""

from __future__ import annotations

import numpy as np

from ..bounds import float_layers
from ..domain import Box, Polytope
from ..errors import RelulabError, require
from ..network import Network
from .norms import operator_norm

__all__ = ["product_bound", "interval_jacobian_bound", "sdp_bound", "SDP_MAX_SIZE"]

# LipSDP's matrix has d + neurons + outputs rows; beyond this the conic solvers take
# minutes on this kind of machine, so method="auto" skips the SDP.
SDP_MAX_SIZE = 700


def product_bound(net: Network, p: float, q: float | None) -> float:
    """The product of the layers' operator norms (a global bound).

    Example:
        >>> from relulab import Network
        >>> product_bound(Network([[[3.0]], [[2.0]]], [[1.0], [0.0]]), 1, None)
        6.0
    """
    Ws, _, sk = float_layers(net)
    q_out = q if q is not None else p
    val = _layer_norm(Ws[-1], p, q_out)
    for W in Ws[:-1]:
        val *= _layer_norm(W, p, p)
    if sk is not None:
        val += _layer_norm(sk[0], p, q_out)
    return float(val)


# above this many entries a layer's spectral norm in the product bound is the cheap
# bound min(Frobenius, sqrt(||A||_1 ||A||_inf)) instead of a full SVD (a 3000 x 3000
# layer's SVD took 15 s of a 0.5 s limit)
SVD_MAX_ENTRIES = 250_000


def _layer_norm(A: np.ndarray, p: float, q: float) -> float:
    """An upper bound on ``||A||_{p->q}`` for the product bound: the exact norm, except
    the spectral norm of a large layer (cheap upper bounds, rounded up)."""
    if p == 2 and q == 2 and A.size > SVD_MAX_ENTRIES and min(A.shape) > 1:
        aA = np.abs(A)
        fro = float(np.sqrt(np.sum(A * A)))
        mixed = float(np.sqrt(aA.sum(axis=0).max() * aA.sum(axis=1).max()))
        return min(fro, mixed) * (1.0 + 1e-12)  # tol: the sums' rounding, upwards
    return operator_norm(A, p, q).upper


def _jacobian_interval(net: Network, domain: Box | Polytope | None, p: float,
                       q: float | None) -> tuple[np.ndarray, np.ndarray, float]:
    """Centre and radius of interval bounds of the Jacobian over the domain (R^d when None),
    and the rounding slack of their ``p -> q`` norm (:mod:`relulab.lipschitz.rounding`)."""
    from .milp import backward_intervals, homogeneous_problem
    from .rounding import domain_preactivations, jacobian_slack

    d = net.input_dim
    if domain is None:
        H, dom = homogeneous_problem(net)
    else:
        H, dom = net, domain
    Ws, _, sk = float_layers(H)
    pre = domain_preactivations(H, dom)
    m = net.output_dim
    lo, hi = np.empty((m, d)), np.empty((m, d))
    for i in range(m):
        e = np.eye(m)[i]
        _, _, (wl, wu) = backward_intervals(Ws, pre, e, e, sk)
        lo[i], hi[i] = wl[:d], wu[:d]
    slack = jacobian_slack(Ws, [(a[None], b[None]) for a, b in pre], sk, p, q, d)[0]
    return (lo + hi) / 2, (hi - lo) / 2, float(slack)


def interval_jacobian_bound(net: Network, domain: Box | Polytope | None, p: float,
                            q: float | None) -> float:
    """Fast-Lip style bound from interval bounds of the Jacobian over ``domain``
    (all of R^d when None, through the homogenised network).

    Example:
        >>> from relulab import Network, Box
        >>> net = Network([[[1.0], [1.0]], [[1.0, -1.0]]], [[5.0, -5.0], [0.0]])
        >>> round(interval_jacobian_bound(net, Box([-1], [1]), 1, None), 9)   # only one neuron is on
        1.0
    """
    from .bab import interval_norm_bound

    c, r, slack = _jacobian_interval(net, domain, p, q)
    return float(interval_norm_bound(c[None], r[None], p, q)[0]) + slack


def _sectors(net: Network, domain: Box | Polytope | None) -> tuple[np.ndarray, np.ndarray]:
    """Slope bounds ``[a, b]`` of every hidden neuron between two points of the domain."""
    N = net.n_neurons
    if domain is None:
        return np.zeros(N), np.ones(N)
    from .rounding import domain_preactivations

    pre = domain_preactivations(net, domain)
    lo = np.concatenate([a for a, _ in pre])
    hi = np.concatenate([b for _, b in pre])
    a = np.where(lo >= 0, 1.0, 0.0)
    b = np.where(hi <= 0, 0.0, 1.0)
    return a, b


def _lifted(net: Network):
    Ws, _, sk = float_layers(net)
    d, N, m = net.input_dim, net.n_neurons, net.output_dim
    n = d + N
    R = np.zeros((N, n))
    O = np.zeros((m, n))
    starts = [0, d]  # start of each block of xi: the input, then every hidden layer
    for W in Ws[:-1]:
        starts.append(starts[-1] + W.shape[0])
    # block k of xi holds dphi_k (block 0 = dx); neuron rows of layer k read block k
    row = 0
    for k, W in enumerate(Ws[:-1]):
        R[row: row + W.shape[0], starts[k]: starts[k] + W.shape[1]] = W
        row += W.shape[0]
    O[:, starts[-2]: starts[-1]] = Ws[-1]
    if sk is not None:
        O[:, :d] += sk[0]
    E = np.hstack([np.zeros((N, d)), np.eye(N)])
    return R, E, O


def _min_rho(t, a, b, R, E, O, d):
    """Smallest rho with ``rho Px - O^T O - sum t_i S_i >= 0`` (PSD) for fixed
    multipliers, where ``S_i`` is neuron ``i``'s sector form; inf when no rho works."""
    ab, s2 = t * a * b, t * (a + b) / 2
    K = (R.T * ab) @ R - (R.T * s2) @ E - (E.T * s2) @ R + (E.T * t) @ E - O.T @ O
    K = (K + K.T) / 2
    Kxx, Kxp, Kpp = K[:d, :d], K[:d, d:], K[d:, d:]
    if Kpp.shape[0]:
        ev, V = np.linalg.eigh(Kpp)
        scale = max(1.0, float(np.max(np.abs(ev))))
        if ev[0] <= 1e-10 * scale:  # tol: Schur complement needs a safely positive block
            return np.inf
        Sch = Kxx - (Kxp @ V) @ np.diag(1.0 / ev) @ (Kxp @ V).T
    else:
        Sch = Kxx
    lam = float(np.linalg.eigvalsh(-(Sch + Sch.T) / 2)[-1])
    return max(lam, 0.0) * (1 + 1e-9) + 1e-12  # tol: round rho up: the bound stays sound


def sdp_bound(net: Network, domain: Box | Polytope | None = None, *, solver: str | None = None,
              time_limit: float | None = None) -> float:
    """LipSDP-neuron upper bound of the l2 Lipschitz constant (``p = q = 2``) over
    ``domain`` (stable neurons get exact slopes) or all of R^d (None).

    The default (``solver`` None or "CLARABEL") is the reduced local SDP of
    :func:`relulab.lipschitz.sdp.local_sdp_bound` (stable neurons eliminated, Clarabel
    called directly); any other cvxpy solver name ("SCS", ...) builds the full-size
    program through cvxpy, an independent formulation of the same bound.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
        >>> round(sdp_bound(net), 4)
        1.0
    """
    if solver is None or solver.upper() == "CLARABEL":
        from .sdp import local_sdp_bound

        return local_sdp_bound(net, domain, time_limit=time_limit)
    cp = require("cvxpy", "sdp")
    d, N, m = net.input_dim, net.n_neurons, net.output_dim
    a, b = _sectors(net, domain)
    R, E, O = _lifted(net)
    n = d + N
    rho = cp.Variable(nonneg=True)
    t = cp.Variable(N, nonneg=True)
    Px = np.zeros((n, n))
    Px[:d, :d] = np.eye(d)
    ab, s2 = cp.multiply(t, a * b), cp.multiply(t, (a + b) / 2)
    M = rho * Px + R.T @ cp.diag(ab) @ R - R.T @ cp.diag(s2) @ E - E.T @ cp.diag(s2) @ R \
        + E.T @ cp.diag(t) @ E
    big = cp.bmat([[M, O.T], [O, np.eye(m)]])
    big = (big + big.T) / 2
    prob = cp.Problem(cp.Minimize(rho), [big >> 0])
    names = [solver] if solver else ["CLARABEL", "SCS"]
    last = None
    for name in names:
        try:
            kw = {}
            if time_limit is not None and name == "SCS":
                kw["time_limit_secs"] = float(time_limit)
            if time_limit is not None and name == "CLARABEL":
                kw["time_limit"] = float(time_limit)
            prob.solve(solver=name, **kw)
        except Exception as e:  # a solver may be missing or fail numerically
            last = e
            continue
        if t.value is None:
            continue
        tv = np.maximum(np.asarray(t.value, dtype=np.float64), 0.0)
        r = _min_rho(tv, a, b, R, E, O, d)
        if not np.isfinite(r):
            # multipliers on the boundary of the cone: a touch more weight on -dphi^2
            r = _min_rho(tv * (1 + 1e-6) + 1e-9 * (1 + tv.max(initial=0.0)), a, b, R, E, O, d)  # tol: nudge into the cone
        if np.isfinite(r):
            return float(np.sqrt(r))
    raise RelulabError(f"lipschitz: the SDP solver did not return a usable solution ({last})")
