"""Local LipSDP for ``p = q = 2``: the neuron-wise SDP on the neurons that are unstable
on the domain only, solved with Clarabel, re-verified in float64, and refined by
splitting the input box.

Reduced lifting.  Over a box, relulab's pre-activation bounds (CROWN) fix every stable
neuron: a stably inactive one contributes nothing, a stably active one is linear.  The
increments between two points of the box are then ``xi = (dx, dphi_U)`` with one
coordinate per *unstable* neuron: layer by layer ``dz_k = W_k dphi_{k-1}`` is a linear
form of ``xi``, ``dphi_k`` copies it on active neurons, is 0 on inactive ones and is a
coordinate of ``xi`` on unstable ones; the output increment is ``O xi``.  An unstable
ReLU has slope in ``[0, 1]`` between any two points, ``dphi_i (dz_i - dphi_i) >= 0``,
so with multipliers ``t >= 0`` (S-procedure)::

    rho ||dx||^2 - ||O xi||^2 - sum_i t_i dphi_i (dz_i - dphi_i) >= 0  for all xi

(a PSD condition of size ``d + #unstable``) gives ``L <= sqrt(rho)``.  This is LipSDP-neuron
(Fazlyab et al. 2019) with the stable neurons' slopes fixed exactly, so it is never
looser than the full-size SDP with sectors ``[1, 1]`` / ``[0, 0]``, and it is much smaller.
(Coupling multipliers between neurons, LipSDP-network's ``T``, are *not* used: Pauli et
al. 2021 show they are invalid for slope-restricted nonlinearities in general.)

Soundness.  The solver's multipliers ``t`` are kept; in float64 the smallest ``rho``
with ``M(rho, t) = rho P_x - K(t) >= 0`` is computed by a Schur complement, then
``M`` at that ``rho`` (rounded up) is checked by :func:`verified_psd`: its smallest
eigenvalue must exceed ``EIG_SAFETY * n * eps * ||M||_F``, an upper bound of the
error of a backward-stable symmetric eigensolver (Weyl's inequality).  When the check
fails ``rho`` grows geometrically until it passes, so a solver inaccuracy can only make
the bound looser, never too small.

Splitting (:func:`sdp_bab`).  The constant over a box is the largest constant over the
pieces of any partition (it is the largest Jacobian norm over full-dimensional
regions, and each region meets some piece in a full-dimensional set), so the largest
local bound over the leaves of a split is an upper bound.  Small boxes make most
neurons stable; once a piece has at most ``EXACT_MAX_UNSTABLE`` unstable neurons its
exact maximum is found by ranking the ``2^U`` activation patterns by Jacobian norm and
testing them, largest first, for a full-dimensional region in the piece (one LP each,
:mod:`relulab.lipschitz.exact_box`), so the piece closes after finitely many steps.
Pieces whose bound is below the best witness are dropped.  The SDP bounds the start box
(an early bound if the search is stopped); on the pieces, where it costs seconds per
solve and rarely drops one, splitting to the exact route is faster.

Example:
    >>> from relulab import Network, Box
    >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]])   # 2 relu(x) + relu(-x)
    >>> round(local_sdp_bound(net, Box([-1], [1])), 6)
    2.0
    >>> o = sdp_bab(net, Box([-1], [1]), time_limit=5)
    >>> o.complete, o.lower, bool(o.upper <= 2 * (1 + 1e-6))
    (True, 2.0, True)
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field

import numpy as np

from ..bounds import float_layers
from ..domain import Box, Polytope
from ..errors import RelulabError
from ..limits import ResourceLimitError, check_bytes
from ..network import Network
from ..results import Result
from .result import LipschitzWitness
from .witness import certify_point

# local_sdp_bound is reached through upper.sdp_bound (exported: a verified bound at any
# time limit, or an error), so it is not exported twice
__all__ = ["ReducedLift", "reduced_lift", "verified_psd", "sdp_bab", "SDPBaBOutcome", "EIG_SAFETY"]

# the computed smallest eigenvalue of a symmetric n x n matrix is within about
# n * eps * ||M||_F of the true one (backward-stable eigensolver + Weyl); this factor
# covers the constant hidden in that estimate and the rounding in forming M
EIG_SAFETY = 64.0
# each failed PSD check raises rho by this factor (and an absolute step)
RHO_GROWTH = 1e-8  # tol: relative increase of rho per failed verification
# relative enlargements of the solver's multipliers tried when they sit on the boundary
NUDGES = (1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4)  # tol: nudges into the PSD cone
# a box whose bound is within this relative gap of the best witness cannot change the
# bracket beyond the front door's exactness tolerance (LIP_REL_TOL = 1e-6): drop it
SDP_DROP_TOL = 5e-7  # tol: half of LIP_REL_TOL, as in bab.DROP_TOL
# split pieces get an SDP only with at least this many unstable neurons (default: never,
# only the start boxes get one): on 2-input networks with up to 3 x 16 or 2 x 32 neurons,
# splitting down to the exact route (exact_box) closes in a few seconds, while each SDP
# solve on a piece with 20-60 unstable neurons costs 1-3 s and rarely drops the piece
SDP_MIN_UNSTABLE = 10**9
# the share of sdp_bab's time limit kept for the start box's SDP when the split stops open
SDP_SHARE = 0.3


@dataclass(frozen=True)
class ReducedLift:
    """The reduced LipSDP data on a domain: ``xi = (dx, dphi_U)`` of size ``d + U``;
    ``Z`` (U, n): each unstable neuron's ``dz`` as a linear form of ``xi``; ``O`` (m, n):
    the output increment; ``d`` the input dimension.

    Example:
        >>> from relulab import Network, Box
        >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 3.0], [0.0]])
        >>> r = reduced_lift(net, Box([-1], [1]))      # neuron 2 (-x + 3) is stably active
        >>> r.Z.tolist(), r.O.tolist()
        ([[1.0, 0.0]], [[-1.0, 2.0]])
    """
    Z: np.ndarray
    O: np.ndarray
    d: int

    @property
    def n_unstable(self) -> int:
        """Number of unstable neurons (SDP multipliers)."""
        return int(self.Z.shape[0])


def reduced_lift(net: Network, domain: Box | Polytope | None,
                 pre: list[tuple[np.ndarray, np.ndarray]] | None = None) -> ReducedLift:
    """Build :class:`ReducedLift` from pre-activation bounds on ``domain`` (every neuron
    unstable when ``domain`` is None, i.e. all of R^d).

    Example:
        >>> from relulab import Network
        >>> reduced_lift(Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]]), None).n_unstable
        2
    """
    Ws, _, sk = float_layers(net)
    d = net.input_dim
    if pre is None and domain is not None:
        from .rounding import domain_preactivations

        pre = domain_preactivations(net, domain)
    if pre is None:
        pre = [(-np.ones(W.shape[0]), np.ones(W.shape[0])) for W in Ws[:-1]]
    # unstable unless proven stable (a NaN bound proves nothing)
    unst = [~((lo >= 0) | (hi <= 0)) for lo, hi in pre]
    U = int(sum(int(u.sum()) for u in unst))
    n = d + U
    Phi = np.zeros((d, n))
    Phi[:, :d] = np.eye(d)
    Phi0 = Phi
    Zs = []
    col = d
    for W, (lo, _hi), u in zip(Ws[:-1], pre, unst, strict=True):
        Z = W @ Phi
        act = (lo >= 0) & ~u
        nxt = np.zeros_like(Z)
        nxt[act] = Z[act]
        iu = np.flatnonzero(u)
        Zs.append(Z[iu])
        nxt[iu, col + np.arange(len(iu))] = 1.0
        col += len(iu)
        Phi = nxt
    O = Ws[-1] @ Phi
    if sk is not None:
        O = O + sk[0] @ Phi0
    Zm = np.vstack(Zs) if Zs else np.zeros((0, n))
    return ReducedLift(Zm, O, d)


def _sector_matrix(lift: ReducedLift, t: np.ndarray) -> np.ndarray:
    """``K(t) = O^T O + sum_i t_i S_i`` with ``S_i = sym(e_i z_i^T) - e_i e_i^T``."""
    d, U = lift.d, lift.n_unstable
    K = lift.O.T @ lift.O
    if U:
        E = np.zeros((U, d + U))
        E[np.arange(U), d + np.arange(U)] = 1.0
        C = (E.T * t) @ lift.Z
        K = K + (C + C.T) / 2 - (E.T * t) @ E
    return (K + K.T) / 2


def verified_psd(M: np.ndarray) -> bool:
    """Whether the symmetric matrix ``M`` is PSD with a margin that covers the error of
    the float64 eigenvalue computation (``EIG_SAFETY * n * eps * ||M||_F``).

    Example:
        >>> import numpy as np
        >>> verified_psd(np.diag([1.0, 0.5])), verified_psd(np.diag([1.0, 0.0]))
        (True, False)
    """
    M = (M + M.T) / 2
    n = M.shape[0]
    if n == 0:
        return True
    if not np.all(np.isfinite(M)):
        return False
    margin = EIG_SAFETY * n * np.finfo(float).eps * float(np.linalg.norm(M))
    try:
        return bool(np.linalg.eigvalsh(M)[0] > margin)
    except np.linalg.LinAlgError:
        # (weights of 1e200: "Eigenvalues did not converge" escaped to the caller) no
        # verification, so no bound from these multipliers
        return False


def _certified_rho(lift: ReducedLift, t: np.ndarray) -> float:
    """The smallest verified ``rho`` for the multipliers ``t`` (inf when none works)."""
    d = lift.d
    K = _sector_matrix(lift, t)
    Kxx, Kxp, Kpp = K[:d, :d], K[:d, d:], K[d:, d:]
    if Kpp.shape[0]:
        # rho P_x - K >= 0 needs -Kpp > 0; then rho >= lambda_max(Kxx + Kxp (-Kpp)^-1 Kpx)
        ev, V = np.linalg.eigh(-Kpp)
        if ev[0] <= 0:
            return np.inf
        B = Kxp @ V
        Sch = Kxx + (B / ev) @ B.T
    else:
        Sch = Kxx
    rho = max(float(np.linalg.eigvalsh((Sch + Sch.T) / 2)[-1]), 0.0)
    Px = np.zeros_like(K)
    Px[np.arange(d), np.arange(d)] = 1.0
    # start the search just above rho (relative), with a floor far below the matrix's
    # scale so that a zero rho can grow too
    step = RHO_GROWTH * max(rho, 1e-6 * float(np.linalg.norm(K)), np.finfo(float).tiny)  # tol: floor relative to ||K||
    for _ in range(60):
        rho_try = rho + step
        if verified_psd(rho_try * Px - K):
            return rho_try
        step *= 4.0
    return np.inf


# Clarabel factors the PSD cone's block of its KKT system densely: m = n (n + 1) / 2 rows
# for a cone of order n, so an iteration costs about m^3 / 3 flops.  Measured on one core
# (n = 25 to 85): a whole solve runs at 0.1-0.7 GFLOP/s in that measure, over about 20
# iterations.
SDP_FLOPS_PER_S = 5e8
SDP_ITERATIONS = 20


def _check_sdp_size(n: int, time_limit: float | None) -> None:
    """Refuse (``ResourceLimitError``, which the callers take as "no SDP bound") a local
    SDP whose dense KKT block would not fit the memory budget, or one of whose iterations
    would outlast ``time_limit``: Clarabel checks its time limit only between iterations."""
    m = n * (n + 1) // 2
    check_bytes(3 * 8.0 * m * m, f"the local SDP (a PSD cone of order {n}; its KKT block has {m} rows)")
    one_iteration = m**3 / 3 / SDP_FLOPS_PER_S / SDP_ITERATIONS
    if time_limit is not None and one_iteration > time_limit:
        raise ResourceLimitError(f"the local SDP (a PSD cone of order {n}) needs about "
                                 f"{one_iteration:.3g} s per iteration; {time_limit:.3g} s are left")


def _solve_clarabel(lift: ReducedLift, time_limit: float | None) -> tuple[np.ndarray | None, bool]:
    """Multipliers ``t`` of ``min rho s.t. rho P_x - K(t) >= 0, t >= 0`` (Clarabel), and
    whether its time limit stopped it (the multipliers may still verify)."""
    import clarabel
    import scipy.sparse as sp

    d, U = lift.d, lift.n_unstable
    n = d + U
    _check_sdp_size(n, time_limit)
    iu, ju = np.triu_indices(n)           # Clarabel: upper triangle, column-major
    order = np.lexsort((iu, ju))
    iu, ju = iu[order], ju[order]
    w = np.where(iu == ju, 1.0, np.sqrt(2.0))

    def svec(A: np.ndarray) -> np.ndarray:
        return A[iu, ju] * w

    # M(x) = -O^T O + rho P_x - sum_i t_i S_i must be PSD; Clarabel wants b - A x in K
    cols = []
    Px = np.zeros((n, n))
    Px[np.arange(d), np.arange(d)] = 1.0
    cols.append(-svec(Px))
    for i in range(U):
        e = np.zeros(n)
        e[d + i] = 1.0
        S = (np.outer(e, lift.Z[i]) + np.outer(lift.Z[i], e)) / 2 - np.outer(e, e)
        cols.append(svec(S))
    A_psd = np.column_stack(cols)
    b_psd = svec(-lift.O.T @ lift.O)
    A = sp.vstack([sp.csc_matrix(-np.eye(U + 1)), sp.csc_matrix(A_psd)]).tocsc()
    b = np.concatenate([np.zeros(U + 1), b_psd])
    q = np.zeros(U + 1)
    q[0] = 1.0
    P = sp.csc_matrix((U + 1, U + 1))
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    if time_limit is not None:
        settings.time_limit = float(max(time_limit, 1e-3))
    cones = [clarabel.NonnegativeConeT(U + 1), clarabel.PSDTriangleConeT(n)]
    sol = clarabel.DefaultSolver(P, q, A, b, cones, settings).solve()
    timed_out = sol.status == clarabel.SolverStatus.MaxTime
    x = np.asarray(sol.x, dtype=np.float64)
    if x.size != U + 1 or not np.all(np.isfinite(x)):
        return None, timed_out
    return np.maximum(x[1:], 0.0), timed_out


def local_sdp_bound(net: Network, domain: Box | Polytope | None = None, *,
                    pre: list[tuple[np.ndarray, np.ndarray]] | None = None,
                    time_limit: float | None = None) -> float:
    """Local LipSDP upper bound of the l2 constant (``p = q = 2``) over ``domain``
    (all of R^d when None): stable neurons eliminated, the SDP solved by Clarabel and
    the bound re-verified in float64 (module docstring).  ``pre``: pre-activation
    bounds already computed on ``domain``.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
        >>> round(local_sdp_bound(net), 6)
        1.0
    """
    lift = reduced_lift(net, domain, pre)
    if lift.n_unstable == 0:  # one affine piece: its spectral norm, computed twice for safety
        return float(np.linalg.norm(lift.O, 2) * (1 + RHO_GROWTH))
    t, timed_out = _solve_clarabel(lift, time_limit)
    rho = np.inf if t is None else _certified_rho(lift, t)
    if not np.isfinite(rho) and t is not None:
        # multipliers on the boundary of the cone (the dphi block is singular): any
        # t >= 0 is valid, so try a few slightly larger ones and keep the best bound
        base = 1.0 + float(t.max())
        for eps in NUDGES:
            rho = min(rho, _certified_rho(lift, t * (1 + eps) + eps * 1e-3 * base))
    if not np.isfinite(rho) and timed_out:
        # the limit, not the SDP, ended it (it read "no verifiable multipliers", partial False)
        from ..limits import ResourceLimitError

        raise ResourceLimitError(f"the local SDP stopped at its time limit ({time_limit:.3g} s) before "
                                 "its multipliers could be verified")
    if not np.isfinite(rho):
        raise RelulabError("lipschitz: the local SDP gave no verifiable multipliers")
    return float(np.sqrt(rho))


@dataclass(frozen=True)
class SDPBaBOutcome(Result):
    """What :func:`sdp_bab` reached: ``lower <= L <= upper`` (l2), the best witness,
    ``complete`` (every box closed), boxes solved, SDPs solved and seconds.

    Example:
        >>> from relulab import Network, Box
        >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> o = sdp_bab(net, Box([-1], [1]), time_limit=5)
        >>> o.lower, o.complete
        (2.0, True)
    """
    lower: float
    upper: float
    witness: LipschitzWitness | None
    complete: bool
    n_boxes: int
    n_sdps: int
    seconds: float
    info: dict = field(default_factory=dict)


def _children(Ws, bs, sk, lo, hi, influence):
    """Both halves of the box along every side it can be split, with their CROWN bounds:
    ``(dims, L, H, pre, n_unstable)``; the halves of side ``dims[k]`` are rows ``2k, 2k+1``."""
    from .rounding import box_preactivations

    dims = np.flatnonzero((hi - lo) * influence > 0)
    if dims.size == 0:
        dims = np.array([int(np.argmax(hi - lo))])
    mid = (lo[dims] + hi[dims]) / 2
    L = np.repeat(lo[None], 2 * len(dims), axis=0)
    H = np.repeat(hi[None], 2 * len(dims), axis=0)
    r = np.arange(len(dims))
    H[2 * r, dims] = mid
    L[2 * r + 1, dims] = mid
    pre = box_preactivations(Ws, bs, L, H)
    U = sum(np.sum((a < 0) & (b > 0), axis=1) for a, b in pre) if pre else np.zeros(len(L), int)
    return dims, L, H, pre, np.asarray(U)


def sdp_bab(net: Network, box: Box, *, time_limit: float | None = 30.0,
            max_boxes: int | None = None, samples: int = 2000,
            exact_max_unstable: int | None = None, sdp_min_unstable: int | None = None,
            sdp_root: bool = True) -> SDPBaBOutcome:
    """Branch and bound for the l2 constant over ``box``: best-first splitting of the
    piece with the largest bound.  Each piece gets the interval/forward Jacobian bound;
    a piece with at most ``exact_max_unstable`` unstable neurons gets its exact maximum
    (:func:`relulab.lipschitz.exact_box.box_max`: patterns ranked by norm, realised ones
    found by LP) and is closed (when the LP budget suffices).  When the split stops open
    (time or ``max_boxes``), the start box gets the local LipSDP bound (``sdp_root``,
    in the last ``SDP_SHARE`` of the time); split pieces get it only with at least
    ``sdp_min_unstable`` unstable neurons (default :data:`SDP_MIN_UNSTABLE`).
    A piece is split along the side whose halves leave the fewest unstable neurons.
    Witnesses come from sampling, piece centres and the exact pieces.
    Stops when the bracket closes, at ``time_limit`` seconds or after ``max_boxes``
    pieces; the upper bound is valid whenever it stops (module docstring).

    Example:
        >>> from relulab import Network, Box
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 3.0]]], [[0.0, 0.0], [0.0]])   # relu(x) + 3 relu(-x)
        >>> o = sdp_bab(net, Box([-1], [1]), max_boxes=1)
        >>> bool(o.lower <= 3.0 <= o.upper)
        True
    """
    from .bab import box_norm_bounds, start_boxes
    from .exact_box import EXACT_MAX_UNSTABLE, box_max
    from .lower import sampled_lower
    from .rounding import box_preactivations

    t0 = time.perf_counter()
    if not isinstance(box, Box):
        raise RelulabError("lipschitz: sdp_bab splits boxes; give a Box")
    if net.input_dim != box.dim:
        raise RelulabError(f"lipschitz: the box has dimension {box.dim}, the network {net.input_dim} inputs")
    kmax = EXACT_MAX_UNSTABLE if exact_max_unstable is None else int(exact_max_unstable)
    smin = SDP_MIN_UNSTABLE if sdp_min_unstable is None else int(sdp_min_unstable)
    deadline = None if time_limit is None else time.time() + time_limit
    # the split runs first (it closes small networks in seconds); the start boxes' SDP,
    # needed only when it does not close, gets the last SDP_SHARE of the time
    split_deadline = None if time_limit is None else time.time() + (1 - SDP_SHARE) * time_limit
    Ws, bs, sk = float_layers(net)
    q = None if net.output_dim == 1 else 2.0
    best_w = sampled_lower(net, box, 2.0, q, n=samples,
                           deadline=None if deadline is None else time.time() + 0.1 * time_limit)
    best = best_w.norm if best_w is not None else 0.0
    influence = np.abs(Ws[0]).sum(axis=0) + 1e-12 * (box.hi - box.lo)  # tol: tie-break so untouched inputs still split
    stats = {"n_boxes": 0, "n_sdps": 0, "n_exact": 0, "n_lps": 0}
    closed_upper = 0.0   # the largest bound of a piece closed above the drop threshold

    def drop(ub: float) -> bool:
        return ub <= best * (1 + SDP_DROP_TOL)

    def evaluate(L, H, pre, parents, smin):
        """Bounds of the pieces (rows of L, H): the heap entries of those left open; an
        SDP on pieces with at least ``smin`` unstable neurons (and more than ``kmax``)."""
        nonlocal best, best_w, closed_upper
        ub, _, _ = box_norm_bounds(Ws, bs, sk, L, H, 2.0, q, pre=pre)
        ub = np.minimum(ub, parents)
        out = []
        for j in range(len(L)):
            stats["n_boxes"] += 1
            lo, hi = L[j], H[j]
            w = certify_point(net, (lo + hi) / 2, 2.0, q, "sdp_bab", box)
            if w is not None and w.norm > best:
                best, best_w = w.norm, w
            u = float(ub[j])
            if drop(u):
                continue
            pj = [(a[j], b[j]) for a, b in pre]
            U = int(sum(int(np.sum((a < 0) & (b > 0))) for a, b in pj))
            if U <= kmax:
                m = box_max(net, lo, hi, pj, 2.0, q, best, rel_tol=SDP_DROP_TOL, source="sdp_bab")
                stats["n_exact"] += 1
                stats["n_lps"] += m.n_lps
                if m.witness is not None and m.witness.norm > best:
                    best, best_w = m.witness.norm, m.witness
                u = min(u, m.upper)
                if m.closed:
                    closed_upper = max(closed_upper, u)
                    continue
            elif U >= smin:
                tl = None if deadline is None else max(deadline - time.time(), 1e-3)
                stats["n_sdps"] += 1
                try:
                    u = min(u, local_sdp_bound(net, Box(lo, hi), pre=pj, time_limit=tl))
                except RelulabError:
                    pass
            if not drop(u):
                out.append((u, lo, hi))
        return out

    SL, SH = start_boxes(Ws, bs, sk, box)       # the box, or its faces (bias-free networks)
    pre0 = box_preactivations(Ws, bs, SL, SH)
    heap = []
    counter = 0
    for u, lo, hi in evaluate(SL, SH, pre0, np.full(len(SL), np.inf), smin):
        heap.append((-u, counter, lo, hi))
        counter += 1
    heapq.heapify(heap)
    root = max([-h[0] for h in heap], default=best)
    U0 = int(max((sum(int(np.sum((a[j] < 0) & (b[j] > 0))) for a, b in pre0) for j in range(len(SL))),
                 default=0))
    while heap:
        if drop(-heap[0][0]):
            heap = []
            break
        if split_deadline is not None and time.time() > split_deadline:
            break
        if max_boxes is not None and stats["n_boxes"] >= max_boxes:
            break
        nub, _, lo, hi = heapq.heappop(heap)
        dims, L, H, pre, U = _children(Ws, bs, sk, lo, hi, influence)
        # the side whose halves leave the fewest unstable neurons (ties: the widest)
        score = U[0::2] + U[1::2] - 1e-9 * ((hi - lo) * influence)[dims]  # tol: tie-break only
        k = int(np.argmin(score))
        rows = [2 * k, 2 * k + 1]
        for u, clo, chi in evaluate(L[rows], H[rows], [(a[rows], b[rows]) for a, b in pre],
                                    np.full(2, -nub), smin):
            heapq.heappush(heap, (-u, counter, clo, chi))
            counter += 1
    open_upper = -heap[0][0] if heap else best * (1 + SDP_DROP_TOL)
    upper = max(open_upper, closed_upper, best)
    root_sdp = None
    if heap and sdp_root:
        # the split stopped open: the local LipSDP over the start boxes bounds everything
        root_sdp = 0.0
        for j in range(len(SL)):
            tl = None if deadline is None else deadline - time.time()
            if tl is not None and tl <= 0:
                root_sdp = None
                break
            stats["n_sdps"] += 1
            try:
                pj = [(a[j], b[j]) for a, b in pre0]
                root_sdp = max(root_sdp, local_sdp_bound(net, Box(SL[j], SH[j]), pre=pj, time_limit=tl))
            except RelulabError:
                root_sdp = None
                break
        if root_sdp is not None:
            upper = max(best, min(upper, root_sdp))
    return SDPBaBOutcome(float(best), float(upper), best_w, not heap, stats["n_boxes"], stats["n_sdps"],
                         time.perf_counter() - t0,
                         {"root_bound": float(root), "root_unstable": U0, "exact_boxes": stats["n_exact"],
                          "lps": stats["n_lps"], "root_sdp": root_sdp})
