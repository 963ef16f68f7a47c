"""The exact Lipschitz constant over a small box: the largest Jacobian norm over the
activation patterns of the box's unstable neurons that are realised by a
full-dimensional region inside the box.

Over a box, pre-activation bounds fix every stable neuron, so every linear region that
meets the box has one of the ``2^U`` patterns of its ``U`` unstable neurons.  The
patterns are sorted by the norm of their Jacobian (largest first) and tested in that
order with one LP each (the Chebyshev centre of the pattern's region, centre in the
box): the first pattern whose region is full-dimensional gives the exact maximum over
the box, and its centre is a witness re-checked by a forward pass.  Patterns whose norm
is below a floor (the best lower bound known elsewhere) are never tested: the box
cannot raise the constant.  The search is capped (``max_lps``); a box that hits the cap
keeps the norm of the first untested pattern as a valid upper bound.

A box that is flat in some coordinates (the faces the search starts from for a
bias-free network) is handled in its free coordinates: a point of a face strictly
inside a region certifies that region as full-dimensional.

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> from relulab.lipschitz.milp import preactivation_bounds
    >>> from relulab import Box
    >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]])   # 2 relu(x) + relu(-x)
    >>> pre = preactivation_bounds(net, Box([-1], [1]))
    >>> m = box_max(net, np.array([-1.0]), np.array([1.0]), pre, 2.0, None)
    >>> m.upper, m.closed, m.witness.norm
    (2.0, True, 2.0)
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..bounds import float_layers
from ..lp import LPError, chebyshev_center_zoomed, no_interior
from ..network import Network
from ..tolerance import or_default
from .lower import batch_norms
from .result import LipschitzWitness
from .witness import certify_point

__all__ = ["BoxMax", "box_max", "pattern_norms", "pattern_stack", "EXACT_MAX_UNSTABLE"]

# 2^12 patterns per box are cheap to rank (one batched product); more are rarely needed
# once a box is small enough for its maximum to matter
EXACT_MAX_UNSTABLE = 16
# LPs per box before the search gives up and lets the box be split instead
MAX_LPS = 48


@dataclass(frozen=True)
class BoxMax:
    """The outcome of :func:`box_max`: ``upper`` bounds the constant over the box;
    ``closed`` when nothing in the box exceeds ``upper`` *and* ``upper`` is either
    attained (``witness``) or below the floor; ``n_lps`` LPs solved.

    Example:
        >>> BoxMax(1.0, True, None, 0).closed
        True
    """
    upper: float
    closed: bool
    witness: LipschitzWitness | None
    n_lps: int


def pattern_norms(Ws: list[np.ndarray], pre: list[tuple[np.ndarray, np.ndarray]], skip, d: int,
                  p: float, q: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Every activation pattern of the unstable neurons (stable ones fixed by ``pre``, one
    ``(lo, hi)`` pair of vectors per hidden layer) as boolean rows ``(P, N)`` over all
    hidden neurons, and the upper end of each pattern's Jacobian norm ``(P,)``
    (Jacobian in the first ``d`` inputs).

    Example:
        >>> import numpy as np
        >>> Ws = [np.array([[1.0], [-1.0]]), np.array([[2.0, 1.0]])]
        >>> masks, nrm = pattern_norms(Ws, [(np.array([-1.0, -1.0]), np.array([1.0, 1.0]))], None, 1, 2.0, None)
        >>> masks.astype(int).tolist(), nrm.tolist()
        ([[0, 0], [1, 0], [0, 1], [1, 1]], [0.0, 2.0, 1.0, 1.0])
    """
    unst = np.concatenate([(lo < 0) & (hi > 0) for lo, hi in pre]) if pre else np.zeros(0, bool)
    act = np.concatenate([lo >= 0 for lo, _hi in pre]) & ~unst if pre else np.zeros(0, bool)
    iu = np.flatnonzero(unst)
    P = 1 << len(iu)
    masks = np.broadcast_to(act, (P, act.size)).copy()
    masks[:, iu] = ((np.arange(P)[:, None] >> np.arange(len(iu))[None, :]) & 1).astype(bool)
    G = pattern_stack(Ws, act, unst)
    if skip is not None:
        G = G + skip[0]
    return masks, batch_norms(np.ascontiguousarray(G[:, :, :d]), p, q, end="upper")


def pattern_stack(Ws: list[np.ndarray], act: np.ndarray, unst: np.ndarray) -> np.ndarray:
    """The Jacobians ``(2^U, m, n)`` (no skip term) of every pattern of the ``U`` unstable
    neurons (``unst``, flat over the hidden layers; the others active where ``act``), in
    the order of :func:`pattern_norms` (bit ``j`` of the index: the ``j``-th unstable
    neuron, layer by layer).  The product runs from the output back and branches on a
    layer's unstable neurons only when it reaches that layer, so the wide matrix products
    are shared by every pattern that differs in earlier layers only.

    Example:
        >>> import numpy as np
        >>> Ws = [np.array([[1.0], [-1.0]]), np.array([[2.0, 1.0]])]
        >>> pattern_stack(Ws, np.array([False, False]), np.array([True, True]))[:, 0, 0].tolist()
        [0.0, 2.0, -1.0, 1.0]
    """
    G = np.asarray(Ws[-1], dtype=np.float64)[None]
    off = int(act.size)
    for k in range(len(Ws) - 2, -1, -1):
        n = Ws[k].shape[0]
        off -= n
        a, u = act[off: off + n], np.flatnonzero(unst[off: off + n])
        M = np.broadcast_to(a, (1 << len(u), n)).astype(np.float64)
        M[:, u] = (np.arange(1 << len(u))[:, None] >> np.arange(len(u))[None, :]) & 1
        # index = (later layers' bits) * 2^u + this layer's bits
        G = (G[:, None, :, :] * M[None, :, None, :]).reshape(-1, G.shape[1], n) @ Ws[k]
    return G


def _chebyshev_in_box(A, b, lo, hi) -> tuple[np.ndarray | None, float]:
    """Chebyshev centre (in the box, free coordinates only) and radius of ``{A x <= b}``."""
    free = hi > lo
    b = b - A[:, ~free] @ lo[~free]
    A = A[:, free]
    nz = np.linalg.norm(A, axis=1) > 0
    if np.any(b[~nz] < 0):
        return None, -np.inf
    A, b = A[nz], b[nz]
    x = lo.astype(np.float64).copy()
    if A.shape[0] == 0:
        x[free] = (lo[free] + hi[free]) / 2
        return x, np.inf
    # zoomed: a radius of 0 within the LP's tolerances is no proof of an empty region
    xf, rad = chebyshev_center_zoomed(A, b, lo[free], hi[free])
    if xf is None:
        return None, -np.inf
    x[free] = xf
    return x, rad


def _first_bad_prefix(A: np.ndarray, b: np.ndarray, lo, hi) -> tuple[int, int]:
    """The smallest ``t`` such that the first ``t`` rows of ``A x <= b`` leave no ball of
    positive radius in the box (all ``len(b)`` rows are known to), by
    bisection, and the LPs it took.  More rows only shrink the set, so "bad" is monotone."""
    good, bad, n = 0, len(b), 0
    while bad - good > 1:
        mid = (good + bad) // 2
        n += 1
        try:
            x, rad = _chebyshev_in_box(A[:mid], b[:mid], lo, hi)
        except LPError:  # not shown empty: a longer prefix is kept (it prunes less)
            good = mid
            continue
        if no_interior(x, rad):
            bad = mid
        else:
            good = mid
    return bad, n


def box_max(net: Network, lo: np.ndarray, hi: np.ndarray, pre: list[tuple[np.ndarray, np.ndarray]],
            p: float, q: float | None, floor: float = 0.0, *, max_lps: int = MAX_LPS,
            rel_tol: float | None = None, source: str = "box_max",
            deadline: float | None = None) -> BoxMax:
    """The largest ``||J||_{p->q}`` over the full-dimensional regions inside the box
    ``[lo, hi]`` (module docstring); ``pre``: sound pre-activation bounds on the box (one
    ``(lo, hi)`` pair per hidden layer).  Patterns with norm at most ``floor * (1 +
    rel_tol)`` are not tested (``rel_tol`` default 0: only patterns at or below the floor).
    ``deadline`` (a ``time.time()`` moment) stops the search like the LP cap.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 3.0]]], [[0.0, 0.0], [0.0]])   # relu(x) + 3 relu(-x)
        >>> pre = [(np.array([0.5, -1.5]), np.array([1.0, -0.5]))]   # the box [0.5, 1]: x > 0
        >>> m = box_max(net, np.array([0.5]), np.array([1.0]), pre, 1.0, None)
        >>> m.upper, m.closed, m.witness.norm, m.n_lps
        (1.0, True, 1.0, 1)
    """
    rel_tol = or_default(rel_tol, 0.0)
    Ws, bs, sk = float_layers(net)
    fnet = net.float()
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    masks, nrm = pattern_norms(Ws, pre, sk, net.input_dim, p, q)
    order = np.argsort(-nrm, kind="stable")
    # the unstable neurons in layer order: the sign constraint of one of them depends only
    # on the states of neurons in earlier layers, so the first t of them form a problem
    # of their own; stable neurons' constraints hold on the whole box and are left out
    iu = np.flatnonzero(np.concatenate([(a < 0) & (c > 0) for a, c in pre])) if pre else np.zeros(0, int)
    alive = np.ones(len(nrm), dtype=bool)
    n_lps = 0
    for i in order:
        if not alive[i]:
            continue  # refuted with a prefix of an earlier pattern
        if nrm[i] <= floor * (1 + rel_tol):
            return BoxMax(float(nrm[i]), True, None, n_lps)
        if n_lps >= max_lps or (deadline is not None and time.time() > deadline):
            return BoxMax(float(nrm[i]), False, None, n_lps)
        n_lps += 1
        A, b = fnet.region_inequalities(fnet.split_pattern(masks[i]))
        A, b = A[iu], b[iu]
        try:
            x, rad = _chebyshev_in_box(A, b, lo, hi)
        except LPError:
            # HiGHS failed on this region (rows of very mixed magnitudes): it is neither
            # refuted nor realised, so its norm stays the bound and the caller splits
            return BoxMax(float(nrm[i]), False, None, n_lps)
        if no_interior(x, rad):
            # no full-dimensional region with this pattern in the box: find the shortest
            # prefix of its unstable neurons that already has none and drop every pattern
            # sharing that prefix (they all have a subset of its region)
            t, k = _first_bad_prefix(A, b, lo, hi)
            n_lps += k
            alive &= ~np.all(masks[:, iu[:t]] == masks[i, iu[:t]], axis=1)
            continue
        w = certify_point(net, x, p, q, source)
        if w is None:
            # the region exists but its centre is not certifiably interior: keep its
            # norm as the bound and let the caller split
            return BoxMax(float(nrm[i]), False, None, n_lps)
        return BoxMax(float(nrm[i]), True, w, n_lps)
    # no pattern is realised: only possible through rounding; claim nothing
    return BoxMax(float(nrm[order[0]]) if len(order) else 0.0, False, None, n_lps)
