"""Branch and bound over input boxes with interval Jacobian bounds (LipBaB style).

Each box gets CROWN pre-activation bounds (:func:`relulab.bounds.crown_batch`, batched
over many boxes), then interval bounds of every Jacobian entry by the backward pass of
:mod:`relulab.lipschitz.upper`; the operator norm of the entrywise magnitudes bounds the
constant on the box.  The box with the largest bound is split along its widest side
(relative to the domain); boxes whose bound is below the best certified lower bound
(Jacobians at box centres) are dropped; the worst boxes with few unstable neurons get
their exact maximum (:mod:`relulab.lipschitz.exact_box`) and are closed when it is
attained or below the best value.  The constant over the domain is at most the
largest open bound: a valid upper bound whenever the search stops, exact in the limit
(small boxes make every neuron stable).  For low input dimensions only.

Example:
    >>> import numpy as np
    >>> from relulab import Network, Box
    >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]])
    >>> r = by_bab(net, Box([-1], [1]), 1.0, None, max_boxes=200)
    >>> r.lower, round(r.upper, 5), r.complete
    (2.0, 2.0, True)
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..bounds import float_layers
from ..domain import Box
from ..network import Network
from .exact_box import box_max, pattern_stack
from .jacobians import certified_mask, jacobians
from .lower import batch_norms
from .result import LipschitzWitness
from .rounding import box_preactivations, jacobian_slack
from .witness import certify_point

__all__ = ["by_bab", "BaBOutcome", "meet_in_middle_bound", "output_functionals", "box_jacobian_bounds", "interval_norm_bound", "box_norm_bounds",
           "forward_norm_bound", "forward_directions", "start_boxes", "pattern_bounds"]

# a box whose bound is within the exactness tolerance of the best value cannot change
# the status: drop it (interval bounds never close exactly on region boundaries)
DROP_TOL = 5e-7  # tol: half of the front door's LIP_REL_TOL: a finished search reads "exact"
# relative to a bound on every Jacobian's norm (negligible_norm): what a box's bound may
# exceed the best value by and still be dropped when that value is 0
NEGLIGIBLE_REL = 1e-12  # tol: float64 rounding of a product of layer norms


# boxes with at most this many unstable neurons get every pattern's Jacobian (2^k of
# them), for at most PATTERN_BOXES of the worst boxes per batch
PATTERN_MAX_UNSTABLE = 8
PATTERN_BOXES = 256
# and at most this many patterns (Jacobians) in all per batch
PATTERN_BUDGET = 16384
# of those, the worst few per batch have their best pattern's region looked for (an LP)
PATTERN_WITNESSES = 4
# random points probed in each of the boxes with the largest bounds, per batch
PROBE_BOXES = 64
PROBE_POINTS = 8
# boxes per batch given their exact maximum (exact_box.box_max) when at most
# BAB_EXACT_UNSTABLE neurons are unstable, with at most BAB_EXACT_LPS LPs each: ranking
# 2^U patterns of a deep network costs O(2^U) Jacobians, so this stays below exact_box's
# own limit (a batch of the search must stay cheap next to the interval bounds)
EXACT_BOXES = 160
# every box also gets the meet-in-the-middle bound (p, q in {1, inf}): off, because on ACAS
# Xu it is ~1.4x tighter per box but slows each batch enough that 20 CPU s end looser
MEET_IN_MIDDLE = False
BAB_EXACT_UNSTABLE = 8
# with a deadline, this share of the remaining time refreshes the open boxes' inherited
# bounds at the end (_refresh) instead of splitting further.  Off: on ACAS Xu 2_2 (p = 1,
# 20 CPU s) 0.2 ended at 5.3x (final refresh only: 8.0x) against 4.2x without
FLUSH_SHARE = 0.0
FLUSH_MIN = 0.02
BAB_EXACT_LPS = 16


@dataclass(frozen=True)
class BaBOutcome:
    """What the branch and bound reached: ``lower <= L <= upper``, the best witness,
    ``complete`` (every box closed), boxes examined, seconds, boxes given the exact route
    and ``open_boxes``: ``(lo, hi, bound)`` arrays of the boxes left open, largest bound first.

    Example:
        >>> from relulab import Network, Box
        >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> o = by_bab(net, Box([-1], [1]), 2, None)
        >>> o.lower, o.complete, bool(o.upper - o.lower <= 1e-6 * o.lower)
        (2.0, True, True)
    """
    lower: float
    upper: float
    witness: LipschitzWitness | None
    complete: bool
    n_boxes: int
    seconds: float
    n_exact: int = 0
    open_boxes: tuple | None = None


def _backward(Ws, pre, skip, B):
    Gc = np.broadcast_to(Ws[-1], (B, *Ws[-1].shape)).copy()
    Gr = np.zeros_like(Gc)
    for k in range(len(Ws) - 2, -1, -1):
        zl, zu = pre[k]
        act = (zl >= 0)[:, None, :]
        ina = (zu <= 0)[:, None, :]
        gl, gu = Gc - Gr, Gc + Gr
        hl = np.where(act, gl, np.where(ina, 0.0, np.minimum(gl, 0.0)))
        hu = np.where(act, gu, np.where(ina, 0.0, np.maximum(gu, 0.0)))
        Hc, Hr = (hl + hu) / 2, (hu - hl) / 2
        Gc, Gr = Hc @ Ws[k], Hr @ np.abs(Ws[k])
    if skip is not None:
        Gc = Gc + skip[0]
    return Gc, Gr


def forward_directions(d: int, p: float) -> np.ndarray | None:
    """Input directions whose images bound ``||J||_{p->q}`` (rows, each of unit p-norm):
    the unit vectors for ``p = 1`` (vertices of the l1 ball), the sign vectors up to a
    global sign for ``p = inf`` (vertices of the cube, ``d <= MAX_SIGN_DIM``); None for
    other ``p`` (no finite vertex set).

    Example:
        >>> forward_directions(2, 1).tolist(), forward_directions(2, float("inf")).tolist()
        ([[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [1.0, -1.0]])
    """
    from .norms import MAX_SIGN_DIM

    if p == 1 or d == 1:  # (one input: the only sign vector is [1], up to sign)
        return np.eye(d)
    if np.isinf(p) and d <= MAX_SIGN_DIM:
        rest = np.array(np.meshgrid(*[[1.0, -1.0]] * (d - 1), indexing="ij")).reshape(d - 1, -1).T
        return np.hstack([np.ones((rest.shape[0], 1)), rest])
    return None


def forward_norm_bound(Ws, pre, skip, dirs: np.ndarray, q: float, d: int | None = None) -> np.ndarray:
    """Forward-mode (Jacobian-vector product) interval bound per box: for every direction
    ``s`` (rows of ``dirs``), interval bounds of ``J s`` through ``u_k = D_k W_k u_{k-1}``
    with ``D_k`` fixed on stable neurons and ``[0, 1]`` on unstable ones, then the largest
    ``q``-norm of the entrywise magnitudes.  With the vertex directions of
    :func:`forward_directions` this bounds ``||J||_{p->q}`` (a convex function of ``s`` is
    maximal at a vertex of the unit ball).  The first layer is exact, so this is often
    much tighter than the backward pass when the input dimension is small.  ``d``: only
    the first ``d`` inputs vary (the homogenised problem); default all.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> from relulab.bounds import float_layers
        >>> Ws, bs, skip = float_layers(Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]]))
        >>> pre = [(np.array([[-1.0, -1.0]]), np.array([[1.0, 1.0]]))]   # one box: both unstable
        >>> forward_norm_bound(Ws, pre, skip, np.eye(1), 1.0).tolist()    # |2 a - b| <= 2
        [2.0]
    """
    from .norms import vector_norm

    yc, yr = _forward(Ws, pre, skip, dirs, d)
    mag = np.abs(yc) + yr
    return np.max(vector_norm(mag, q, axis=2), axis=1)


def _forward(Ws, pre, skip, dirs, d):
    """Centre and radius (B, S, m) of interval bounds of ``J s`` for the rows ``s`` of ``dirs``."""
    B = pre[0][0].shape[0] if pre else 1
    dirs = np.asarray(dirs, dtype=np.float64)
    n_in = Ws[0].shape[1]
    if d is not None and d < n_in:
        dirs = np.hstack([dirs, np.zeros((dirs.shape[0], n_in - d))])
    uc = np.broadcast_to(dirs, (B, *dirs.shape))          # (B, S, n_in)
    ur = np.zeros_like(uc)
    for k in range(len(Ws) - 1):
        W = Ws[k]
        yc, yr = uc @ W.T, ur @ np.abs(W).T
        yl, yu = yc - yr, yc + yr
        zl, zu = pre[k]
        act = (zl >= 0)[:, None, :]
        ina = (zu <= 0)[:, None, :]
        ul = np.where(act, yl, np.where(ina, 0.0, np.minimum(yl, 0.0)))
        uu = np.where(act, yu, np.where(ina, 0.0, np.maximum(yu, 0.0)))
        uc, ur = (ul + uu) / 2, (uu - ul) / 2
    yc, yr = uc @ Ws[-1].T, ur @ np.abs(Ws[-1]).T
    if skip is not None:
        yc = yc + np.broadcast_to(dirs, (B, *dirs.shape)) @ skip[0].T
    return yc, yr


def output_functionals(m: int, q: float | None) -> np.ndarray | None:
    """Rows ``c`` with ``||y||_q = max_c |c . y|`` for ``y`` in R^m: ``[1]`` for one output,
    the unit vectors for ``q = inf``, the sign vectors up to a global sign for ``q = 1``
    (``m <= MAX_SIGN_DIM``); None otherwise.

    Example:
        >>> output_functionals(2, 1).tolist(), output_functionals(2, float("inf")).tolist()
        ([[1.0, 1.0], [1.0, -1.0]], [[1.0, 0.0], [0.0, 1.0]])
    """
    from .norms import MAX_SIGN_DIM

    if m == 1:
        return np.ones((1, 1))
    if q is not None and np.isinf(q):
        return np.eye(m)
    if q == 1 and m <= MAX_SIGN_DIM:
        return forward_directions(m, float("inf"))
    return None


def meet_in_middle_bound(Ws, pre, skip, V: np.ndarray, C: np.ndarray, layers=None) -> np.ndarray:
    """Per box, an upper bound of ``max_{c, v} |c^T J v|`` (rows of ``C`` and ``V``) over the
    Jacobians of the box: ``c^T J v = sum_i a_i d_i y_i`` at every hidden layer, with
    ``y`` the forward image of ``v`` before the layer's ReLU, ``a`` the backward image of
    ``c`` after it (both as intervals, the first and last weight matrices exact) and ``d_i``
    the neuron's slope (fixed when stable, anywhere in [0, 1] when not).  Each term's
    extreme is a corner product, and the smallest bound over the layers (all hidden
    layers, or the indices in ``layers``, and the input) is kept.  Unlike
    the norm of the Jacobian's entrywise intervals, this keeps the correlation between the
    entries a functional combines: with ``V``, ``C`` from :func:`forward_directions` and
    :func:`output_functionals` it bounds ``||J||_{p->q}`` for ``p, q in {1, inf}``.

    Example:
        >>> import numpy as np
        >>> Ws = [np.array([[1.0], [-1.0]]), np.array([[2.0, 1.0]])]    # 2 relu(x) + relu(-x)
        >>> pre = [(np.array([[-1.0, -1.0]]), np.array([[1.0, 1.0]]))]   # both unstable
        >>> meet_in_middle_bound(Ws, pre, None, np.eye(1), np.ones((1, 1))).tolist()
        [2.0]
    """
    B = pre[0][0].shape[0] if pre else 1
    n_in = Ws[0].shape[1]
    V = np.asarray(V, dtype=np.float64)
    if V.shape[1] < n_in:  # the homogenised problem: t does not move
        V = np.hstack([V, np.zeros((V.shape[0], n_in - V.shape[1]))])
    uc = np.broadcast_to(V, (B, *V.shape))
    ur = np.zeros_like(uc)
    ys = []
    for k in range(len(Ws) - 1):
        yc, yr = uc @ Ws[k].T, ur @ np.abs(Ws[k]).T
        ys.append((yc, yr))
        ul, uu = _relu_slope_interval(yc - yr, yc + yr, pre[k])
        uc, ur = (ul + uu) / 2, (uu - ul) / 2
    ac = np.broadcast_to(C @ Ws[-1], (B, C.shape[0], Ws[-1].shape[1])).copy()
    ar = np.zeros_like(ac)
    ub = np.full((B, C.shape[0], V.shape[0]), np.inf)
    lb = -ub
    for k in range(len(Ws) - 2, -1, -1):
        if layers is not None and k not in layers:
            hl, hu = _relu_slope_interval(ac - ar, ac + ar, pre[k])
            ac, ar = ((hl + hu) / 2) @ Ws[k], ((hu - hl) / 2) @ np.abs(Ws[k])
            continue
        zl, zu = pre[k]
        act = (zl >= 0)[:, None, None, :]
        uns = ((zl < 0) & (zu > 0))[:, None, None, :]
        yc, yr = ys[k]
        al, au = (ac - ar)[:, :, None, :], (ac + ar)[:, :, None, :]
        yl, yu = (yc - yr)[:, None, :, :], (yc + yr)[:, None, :, :]
        c1, c2, c3, c4 = al * yl, al * yu, au * yl, au * yu
        hi = np.maximum(np.maximum(c1, c2), np.maximum(c3, c4))
        lo = np.minimum(np.minimum(c1, c2), np.minimum(c3, c4))
        hi = np.where(act, hi, np.where(uns, np.maximum(hi, 0.0), 0.0))
        lo = np.where(act, lo, np.where(uns, np.minimum(lo, 0.0), 0.0))
        ub = np.minimum(ub, hi.sum(axis=-1))
        lb = np.maximum(lb, lo.sum(axis=-1))
        hl, hu = _relu_slope_interval(ac - ar, ac + ar, pre[k])
        ac, ar = ((hl + hu) / 2) @ Ws[k], ((hu - hl) / 2) @ np.abs(Ws[k])
    lin_c = np.einsum("bcn,sn->bcs", ac, V)
    lin_r = np.einsum("bcn,sn->bcs", ar, np.abs(V))
    ub = np.minimum(ub, lin_c + lin_r)
    lb = np.maximum(lb, lin_c - lin_r)
    if skip is not None:
        sv = C @ skip[0] @ V.T
        ub, lb = ub + sv, lb + sv
    return np.max(np.maximum(ub, -lb), axis=(1, 2))


def _relu_slope_interval(lo, hi, pre_k):
    """``[lo, hi]`` times the slope of each neuron (1 active, 0 inactive, [0, 1] unstable);
    the neuron axis last, the box axis first."""
    zl, zu = pre_k
    shape = (zl.shape[0],) + (1,) * (lo.ndim - 2) + (zl.shape[1],)
    act, ina = (zl >= 0).reshape(shape), (zu <= 0).reshape(shape)
    return (np.where(act, lo, np.where(ina, 0.0, np.minimum(lo, 0.0))),
            np.where(act, hi, np.where(ina, 0.0, np.maximum(hi, 0.0))))


def box_norm_bounds(Ws, bs, skip, lo: np.ndarray, hi: np.ndarray, p: float, q: float | None,
                    d: int | None = None, pattern_max: int = 0, pattern_boxes: int = 0,
                    best_patterns: dict | None = None,
                    pre: list | None = None, meet: bool = False,
                    slack: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Upper bounds of ``||J||_{p->q}`` on each box (``lo``, ``hi`` of shape (B, n)): the
    norm bound (:func:`interval_norm_bound`) of the entrywise Jacobian intervals of the
    backward pass intersected with those of the forward pass along each unit vector,
    and for ``p = inf`` also the forward bound over the cube's vertices
    (:func:`forward_norm_bound`); also the backward centre and radius.  With
    ``pattern_max``, the ``pattern_boxes`` worst boxes with at most that many unstable
    neurons also get :func:`pattern_bounds`.  ``d``: Jacobian in the first ``d`` inputs only (default all).
    ``pre``: the boxes' pre-activation bounds when already computed (``crown_batch``).
    ``meet``: also :func:`meet_in_middle_bound` (``p, q in {1, inf}``; about twice as tight
    on ACAS Xu boxes, at a few times the cost of the interval passes).
    Each bound includes the rounding slack of :func:`relulab.lipschitz.rounding.jacobian_slack`
    (``slack``: already computed for these boxes).

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> from relulab.bounds import float_layers
        >>> Ws, bs, skip = float_layers(Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]]))
        >>> ub, _, _ = box_norm_bounds(Ws, bs, skip, np.array([[0.5], [-1.0]]), np.array([[1.0], [1.0]]), 1, None)
        >>> ub.round(9).tolist()
        [2.0, 2.0]
    """
    if pre is None:
        pre = box_preactivations(Ws, bs, lo, hi)
    n_in = lo.shape[1]
    d = n_in if d is None else d
    Gc, Gr = _backward(Ws, pre, skip, lo.shape[0])
    # the forward pass along each unit vector bounds each Jacobian column: intersect the
    # two entrywise intervals (both hold, so their intersection does)
    fc, fr = _forward(Ws, pre, skip, np.eye(d), d)
    fc, fr = fc.transpose(0, 2, 1), fr.transpose(0, 2, 1)
    jl = np.maximum(Gc[:, :, :d] - Gr[:, :, :d], fc - fr)
    ju = np.minimum(Gc[:, :, :d] + Gr[:, :, :d], fc + fr)
    ju = np.maximum(ju, jl)  # rounding can cross them by an ulp where both are tight
    ub = interval_norm_bound((jl + ju) / 2, (ju - jl) / 2, p, q)
    dirs = forward_directions(d, p) if np.isinf(p) else None
    if dirs is not None:
        qq = 1.0 if Ws[-1].shape[0] == 1 else (p if q is None else q)  # one output: |J s|
        ub = np.minimum(ub, forward_norm_bound(Ws, pre, skip, dirs, qq, d))
    if meet:
        C = output_functionals(Ws[-1].shape[0], p if q is None else q)
        V = forward_directions(d, p) if p == 1 or np.isinf(p) else None
        if C is not None and V is not None:
            # the middle hidden layer alone gives the bound of all layers on most ACAS Xu
            # boxes, at a fraction of the cost
            ub = np.minimum(ub, meet_in_middle_bound(Ws, pre, skip, V, C, layers=[(len(Ws) - 1) // 2]))
    if pattern_max:
        ub = np.minimum(ub, pattern_bounds(Ws, pre, skip, ub, p, q, d, pattern_max, pattern_boxes,
                                           best_patterns))
    # every bound above is a float evaluation: add what rounding can have taken off
    ub = ub + (jacobian_slack(Ws, pre, skip, p, q, d, len(lo)) if slack is None else slack)
    return ub, Gc, Gr


def pattern_bounds(Ws, pre, skip, ub: np.ndarray, p: float, q: float | None, d: int,
                   max_unstable: int = PATTERN_MAX_UNSTABLE, max_boxes: int = PATTERN_BOXES,
                   best_patterns: dict | None = None) -> np.ndarray:
    """Per box, the largest ``||J||`` over every activation pattern of its unstable
    neurons (stable ones fixed), for the ``max_boxes`` boxes with the largest ``ub`` that
    have at most ``max_unstable`` unstable neurons; ``inf`` for the others.  Every
    full-dimensional region in the box has one of these patterns, so the maximum is an
    upper bound (tight when the patterns are realised).  Interval bounds lose the
    cancellations inside products of large weights; this does not, which is what closes
    the small boxes left around points where several neurons switch.

    Example:
        >>> import numpy as np
        >>> Ws = [np.array([[1.0], [-1.0]]), np.array([[2.0, 1.0]])]
        >>> pre = [(np.array([[-1.0, -1.0]]), np.array([[1.0, 1.0]]))]
        >>> pattern_bounds(Ws, pre, None, np.array([3.0]), 1.0, None, 1).tolist()   # 2 relu(x) + relu(-x)
        [2.0]
    """
    from .lower import batch_norms

    B = len(ub)
    out = np.full(B, np.inf)
    if not pre:  # an affine map: the other bounds are exact already
        return out
    unst = np.concatenate([(lo < 0) & (hi > 0) for lo, hi in pre], axis=1)
    act = np.concatenate([lo >= 0 for lo, _hi in pre], axis=1) & ~unst
    n_u = unst.sum(axis=1)
    cand = np.flatnonzero(n_u <= max_unstable)
    cand = cand[np.argsort(-ub[cand])][:max_boxes]
    # at most PATTERN_BUDGET patterns per call: the worst boxes first
    cand = cand[np.cumsum(2.0 ** n_u[cand]) <= PATTERN_BUDGET]
    for b in cand:
        iu = np.flatnonzero(unst[b])
        P = 1 << len(iu)
        masks = np.broadcast_to(act[b], (P, act.shape[1])).copy()
        masks[:, iu] = (np.arange(P)[:, None] >> np.arange(len(iu))[None, :]) & 1
        G = pattern_stack(Ws, act[b], unst[b])
        if skip is not None:
            G = G + skip[0]
        nrm = batch_norms(G[:, :, :d], p, q, end="upper")
        j = int(np.argmax(nrm))
        out[b] = float(nrm[j])
        if best_patterns is not None:
            best_patterns[int(b)] = masks[j].copy()
    return out


def box_jacobian_bounds(Ws, bs, skip, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Centre and radius ``(Gc, Gr)``, each (B, m, d), of interval bounds of the Jacobian
    on each box (``lo``, ``hi`` of shape (B, d)): ``|J - Gc| <= Gr`` entrywise.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> from relulab.bounds import float_layers
        >>> Ws, bs, skip = float_layers(Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]]))
        >>> Gc, Gr = box_jacobian_bounds(Ws, bs, skip, np.array([[0.5], [-1.0]]), np.array([[1.0], [1.0]]))
        >>> (Gc - Gr).ravel().tolist(), (Gc + Gr).ravel().tolist()   # x > 0: slope 2; [-1, 1]: slope in [-1, 2]
        ([2.0, -1.0], [2.0, 2.0])
    """
    pre = box_preactivations(Ws, bs, lo, hi)
    return _backward(Ws, pre, skip, lo.shape[0])


def interval_norm_bound(Gc: np.ndarray, Gr: np.ndarray, p: float, q: float | None) -> np.ndarray:
    """Upper bound of ``||J||_{p->q}`` over ``|J - Gc| <= Gr``: the smaller of the norm of the
    entrywise magnitudes (lp norms are monotone) and ``||Gc|| + ||Gr||`` (exact when the
    interval is a point).

    Example:
        >>> import numpy as np
        >>> Gc, Gr = np.array([[[1.0, -2.0]]]), np.array([[[0.5, 0.0]]])
        >>> interval_norm_bound(Gc, Gr, 2, None).tolist(), interval_norm_bound(Gc, 0 * Gr, 1, None).tolist()
        ([2.5], [2.0])
    """
    a = batch_norms(np.abs(Gc) + Gr, p, q, end="upper")
    b = batch_norms(Gc, p, q, end="upper") + np.where(np.any(Gr > 0, axis=(1, 2)),
                                                  batch_norms(Gr, p, q, end="upper"), 0.0)
    return np.minimum(a, b)


def _faces(d: int) -> tuple[np.ndarray, np.ndarray]:
    """The outer faces ``x_i = +-1`` and ``t = 1`` of ``[-1, 1]^d x [0, 1]``."""
    lo = np.tile(np.r_[-np.ones(d), 0.0], (2 * d + 1, 1))
    hi = np.tile(np.ones(d + 1), (2 * d + 1, 1))
    for i in range(d):
        hi[2 * i, i] = -1.0
        lo[2 * i + 1, i] = 1.0
    lo[2 * d, d] = 1.0
    return lo, hi


def start_boxes(Ws, bs, skip, box: Box) -> tuple[np.ndarray, np.ndarray]:
    """The boxes the search starts from: ``box`` itself, or, for a bias-free network and
    a box with the origin inside, its ``2 d`` faces.  A bias-free network's regions are
    cones from the origin, and every box around the origin hits all of them, so splitting
    never makes the neurons near the origin stable; but every open cone also meets the
    box's boundary in a relatively open set, and bounds on the (closed) faces cover the
    Jacobians of all regions touching them.

    Example:
        >>> import numpy as np
        >>> from relulab import Network, Box
        >>> from relulab.bounds import float_layers
        >>> Ws, bs, skip = float_layers(Network([[[1.0, -1.0]], [[1.0]]], [[0.0], [0.0]]))
        >>> lo, hi = start_boxes(Ws, bs, skip, Box([-1, -2], [1, 2]))
        >>> len(lo), lo[0].tolist(), hi[0].tolist()
        (4, [-1.0, -2.0], [-1.0, 2.0])
    """
    lo, hi = box.lo, box.hi
    bias_free = all(not np.any(b) for b in bs) and (skip is None or not np.any(skip[1]))
    if not (bias_free and np.all(lo < 0) and np.all(hi > 0)):
        return lo[None].copy(), hi[None].copy()
    d = len(lo)
    L, H = np.tile(lo, (2 * d, 1)), np.tile(hi, (2 * d, 1))
    for i in range(d):
        H[2 * i, i] = lo[i]
        L[2 * i + 1, i] = hi[i]
    return L, H


def negligible_norm(Ws, sk) -> float:
    """A Jacobian norm negligible for this network: ``NEGLIGIBLE_REL`` times the product
    of its layers' Frobenius norms (plus the skip's), which bounds every ``p -> q`` norm
    of every Jacobian up to a dimension factor.  Boxes whose bound is within it of the
    best value are dropped; the drop tolerance was ``DROP_TOL * (1 + best)``, absolute
    below 1, and a constant of 1e-8 ended after one box with a 2.2x bracket.

    Example:
        >>> round(negligible_norm([np.eye(2), 3 * np.eye(2)], None) / NEGLIGIBLE_REL, 9)   # sqrt(2) * 3 sqrt(2)
        6.0
    """
    prod = 1.0
    for W in Ws:
        prod *= float(np.linalg.norm(W))
    if sk is not None:
        prod += float(np.linalg.norm(sk[0]))
    return NEGLIGIBLE_REL * prod


def _refresh(Ws, bs, sk, p, q, d, OL, OH, OU, best, batch, deadline, clock, negligible):
    """Fresh bounds for the open boxes whose inherited (parent's) bound is the largest:
    a split box's children enter the queue with their parent's bound and get their own
    only when popped, so when the search stops the largest open bound is usually a stale
    one, far above what the box itself would get.  Until the deadline, the stale boxes
    above the largest fresh bound get their bounds (no splitting), largest first; the
    smaller of the two is kept (both hold) and boxes below the best value are dropped;
    also the largest bound among those."""
    fresh = np.zeros(len(OU), dtype=bool)
    dropped = 0.0
    while clock() <= deadline and len(OU):
        order = np.argsort(-OU)
        if fresh[order[0]]:
            break  # the largest bound is already a box's own
        top_fresh = OU[order[fresh[order]][0]] if fresh.any() else -np.inf
        stale = order[~fresh[order]]
        cand = stale[OU[stale] > top_fresh][:batch]
        pre = box_preactivations(Ws, bs, OL[cand], OH[cand])
        ub, _, _ = box_norm_bounds(Ws, bs, sk, OL[cand], OH[cand], p, q, d, PATTERN_MAX_UNSTABLE,
                                   PATTERN_BOXES, None, pre=pre)
        OU[cand] = np.minimum(OU[cand], ub)
        fresh[cand] = True
        keep = OU > best * (1 + DROP_TOL) + negligible
        dropped = max(dropped, float(np.max(OU[~keep], initial=0.0)))
        OL, OH, OU, fresh = OL[keep], OH[keep], OU[keep], fresh[keep]
    return OL, OH, OU, dropped


def by_bab(net: Network, box: Box | None, p: float, q: float | None, deadline: float | None = None,
           *, batch: int = 1024, max_boxes: int | None = None, seed: int = 0,
           clock=None, exact_boxes: int = EXACT_BOXES) -> BaBOutcome:
    """Input-splitting branch and bound for the Lipschitz constant over a box, or over
    R^d (``box`` None): then over the outer faces of ``[-1, 1]^d x [0, 1]`` for the
    homogenised network (every cone of it meets them away from the apex, see
    :mod:`relulab.lipschitz.jacobians`), with the Jacobian in ``x`` only.  Over a box, the
    ``exact_boxes`` worst boxes per batch with at most ``BAB_EXACT_UNSTABLE`` unstable
    neurons get their exact maximum (:func:`relulab.lipschitz.exact_box.box_max`).

    Example:
        >>> from relulab import Network, Box
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 3.0]]], [[0.0, 0.0], [0.0]])   # relu(x) + 3 relu(-x)
        >>> o = by_bab(net, Box([-1], [1]), 1, None)
        >>> o.lower, o.complete, bool(o.upper <= 3 * (1 + 1e-6))
        (3.0, True, True)
        >>> deep = Network([[[1.0, 2.0], [-1.0, 1.0], [0.5, -1.0]], [[1.0, -2.0, 1.0], [-1.0, 1.0, 2.0]],
        ...                 [[1.0, -2.0]]], [[0.0, 0.5, -0.2], [0.1, 0.0], [0.0]])
        >>> cut = by_bab(deep, Box([-1, -1], [1, 1]), 1, None, max_boxes=1)   # stopped early: a bracket
        >>> ex = by_bab(deep, Box([-1, -1], [1, 1]), 1, None)
        >>> ex.complete, bool(cut.lower <= ex.lower <= cut.upper)
        (True, True)
    """
    from .milp import homogeneous_problem, region_witness

    t0 = time.perf_counter()
    clock = time.time if clock is None else clock  # time.process_time: a CPU-seconds deadline
    d = net.input_dim
    if box is None:
        H, ext = homogeneous_problem(net)
        Ws, bs, sk = float_layers(H)
        OL, OH = _faces(d)
        width0 = ext.hi - ext.lo
    else:
        Ws, bs, sk = float_layers(net)
        OL, OH = start_boxes(Ws, bs, sk, box)
        width0 = box.hi - box.lo
    OU = np.full(len(OL), np.inf)
    negligible = negligible_norm(Ws, sk)
    influence = np.abs(Ws[0]).sum(axis=0) + 1e-12 * width0  # tol: tie-break so untouched inputs still split
    best_w: LipschitzWitness | None = None
    best = 0.0
    closed_upper = 0.0   # the largest bound of a box closed by its exact maximum
    dropped_upper = 0.0  # the largest bound of a box dropped below the best value

    def alive(U):
        """The boxes whose bound exceeds the best value (within DROP_TOL); the largest
        bound of the others enters ``dropped_upper`` (closed boxes, at -inf, do not)."""
        nonlocal dropped_upper
        keep = U > best * (1 + DROP_TOL) + negligible
        dropped_upper = max(dropped_upper, float(np.max(U[~keep], initial=0.0)))
        return keep
    n_exact = 0
    rng = np.random.default_rng(seed)
    seen = 0
    # the last share of the time refreshes the bounds of the open boxes (_refresh); when
    # that leaves the largest bound a fresh one early, splitting resumes (then refreshes
    # again in the last share of what is left)
    budget = None if deadline is None else max(deadline - clock(), 0.0)
    stop = None if deadline is None else deadline - FLUSH_SHARE * budget
    while len(OU):
        if deadline is not None and clock() > deadline:
            break
        if stop is not None and clock() > stop:
            OL, OH, OU, gone = _refresh(Ws, bs, sk, p, q, d, OL, OH, OU, best, batch, deadline, clock, negligible)
            dropped_upper = max(dropped_upper, gone)
            rest = deadline - clock()
            if rest <= FLUSH_MIN * budget:
                break
            stop = deadline - FLUSH_SHARE * rest
            continue
        if max_boxes is not None and seen >= max_boxes:
            break
        k = min(batch, len(OU))
        idx = np.argpartition(-OU, k - 1)[:k] if len(OU) > k else np.arange(len(OU))
        rest = np.ones(len(OU), dtype=bool)
        rest[idx] = False
        lo, hi, parent = OL[idx], OH[idx], OU[idx]
        OL, OH, OU = OL[rest], OH[rest], OU[rest]
        seen += k
        pats: dict = {}
        pre = box_preactivations(Ws, bs, lo, hi)
        slack = jacobian_slack(Ws, pre, sk, p, q, d, k)   # also for the exact maxima below
        ub, Gc, Gr = box_norm_bounds(Ws, bs, sk, lo, hi, p, q, d, PATTERN_MAX_UNSTABLE, PATTERN_BOXES, pats,
                                     pre=pre, meet=MEET_IN_MIDDLE, slack=slack)
        ub = np.minimum(ub, parent)
        if box is not None and exact_boxes:
            # the worst boxes with few unstable neurons: their exact maximum (patterns
            # ranked by norm, unrealised ones refuted by LP) closes them or lowers their bound
            U = sum(np.sum((a < 0) & (b > 0), axis=1) for a, b in pre) if pre else np.zeros(k, int)
            cand = np.flatnonzero((U <= BAB_EXACT_UNSTABLE) & (ub > best * (1 + DROP_TOL)))
            for b in cand[np.argsort(-ub[cand])][:exact_boxes]:
                if deadline is not None and clock() > deadline:
                    break
                m = box_max(net, lo[b], hi[b], [(a[b], c[b]) for a, c in pre], p, q, best,
                            rel_tol=DROP_TOL, source="bab", max_lps=BAB_EXACT_LPS)
                n_exact += 1
                if m.witness is not None and m.witness.norm > best:
                    best, best_w = m.witness.norm, m.witness
                    live = alive(OU)
                    OL, OH, OU = OL[live], OH[live], OU[live]
                if m.closed:
                    # box_max's norms are float evaluations too: the slack in ub[b] covers them
                    closed_upper = max(closed_upper, min(float(ub[b]), m.upper + float(slack[b])))
                    ub[b] = -np.inf   # closed: never split
                else:
                    ub[b] = min(ub[b], m.upper + float(slack[b]))
        if box is not None:
            # the pattern attaining a box's bound may be a thin region that sampling
            # misses: its Chebyshev centre (an LP) is a certified witness when it exists
            for b in sorted(pats, key=lambda b: -ub[b])[:PATTERN_WITNESSES]:
                if ub[b] > best * (1 + DROP_TOL):
                    w = region_witness(net, pats[b], Box(lo[b], hi[b]), p, q, "bab")
                    if w is not None and w.norm > best:
                        best, best_w = w.norm, w
                        live = alive(OU)
                        OL, OH, OU = OL[live], OH[live], OU[live]
        C = (lo + hi) / 2
        # the boxes with the largest bounds are where a larger norm may hide: a few
        # random points in each of them besides every centre
        top = np.argsort(-ub)[:PROBE_BOXES]
        R = lo[top, None, :] + (hi - lo)[top, None, :] * rng.random((len(top), PROBE_POINTS, lo.shape[1]))
        C = np.vstack([C, R.reshape(-1, lo.shape[1])])
        if box is None:  # a point (x, t) of the cone stands for x / t
            C = C[C[:, d] > 0]
            C = C[:, :d] / C[:, d:]
        J, mg = jacobians(net, C)
        vals = np.where(certified_mask(mg), batch_norms(J, p, q), -np.inf) if len(C) else np.array([-np.inf])
        i = int(np.argmax(vals))
        if vals[i] > best:
            w = certify_point(net, C[i], p, q, "bab", box)
            if w is not None and w.norm > best:
                best, best_w = w.norm, w
                live = alive(OU)
                OL, OH, OU = OL[live], OH[live], OU[live]
        keep = alive(ub)
        lo, hi, ub = lo[keep], hi[keep], ub[keep]
        if len(ub) == 0:
            continue
        # split where the Jacobian bound says the function moves most across the box
        # (width times the bound of |dJ/dx_j| summed over outputs: "smear"); the first
        # layer's weights break ties where the Jacobian bound is zero
        sens = (np.abs(Gc) + Gr).sum(axis=1)[keep][:, : lo.shape[1]]
        if sens.shape[1] < lo.shape[1]:  # the homogenised problem: t gets the first layer's weight
            sens = np.hstack([sens, np.zeros((len(sens), lo.shape[1] - sens.shape[1]))])
        rel = (hi - lo) * (sens + 1e-9 * influence)  # tol: tie-break only
        dim = np.argmax(rel, axis=1)
        rows = np.arange(len(lo))
        mid = (lo[rows, dim] + hi[rows, dim]) / 2
        hi1, lo2 = hi.copy(), lo.copy()
        hi1[rows, dim] = mid
        lo2[rows, dim] = mid
        OL = np.concatenate([OL, lo, lo2])
        OH = np.concatenate([OH, hi1, hi])
        OU = np.concatenate([OU, ub, ub])
    if deadline is not None and len(OU):
        OL, OH, OU, gone = _refresh(Ws, bs, sk, p, q, d, OL, OH, OU, best, batch, deadline, clock, negligible)
        dropped_upper = max(dropped_upper, gone)
    # every box was split, closed (closed_upper) or dropped (dropped_upper) or is open
    upper = max(float(np.max(OU, initial=0.0)), closed_upper, dropped_upper)
    order = np.argsort(-OU)
    return BaBOutcome(best, max(upper, best), best_w, len(OU) == 0, seen, time.perf_counter() - t0, n_exact,
                      (OL[order], OH[order], OU[order]))
