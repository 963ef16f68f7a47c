"""Branch and bound over input boxes with interval Jacobian bounds (LipBaB style).

Each box gets CROWN pre-activation bounds (:func:`relulab.bounds.crown_batch`, batched
over many boxes), then interval bounds of every Jacobian entry by the backward pass of
:mod:`relulab.lipschitz.upper`; the operator norm of the entrywise magnitudes bounds the
constant on the box.  The box with the largest bound is split along its widest side
(relative to the domain); boxes whose bound is below the best certified lower bound
(Jacobians at box centres) are dropped.  The constant over the domain is at most the
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

from ..bounds import crown_batch, float_layers
from ..domain import Box
from ..network import Network
from .jacobians import certified_mask, jacobians
from .lower import batch_norms
from .result import LipschitzWitness
from .witness import certify_point

__all__ = ["by_bab", "BaBOutcome", "box_jacobian_bounds", "interval_norm_bound"]

# a box whose bound is within the exactness tolerance of the best value cannot change
# the status: drop it (interval bounds never close exactly on region boundaries)
DROP_TOL = 5e-7  # tol: half of the front door's LIP_REL_TOL: a finished search reads "exact"


@dataclass(frozen=True)
class BaBOutcome:
    """What the branch and bound reached: ``lower <= L <= upper``, the best witness,
    ``complete`` (every box closed), boxes examined and seconds.

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
    pre, _ = crown_batch(Ws, bs, lo, hi, intermediate="hybrid")
    B = lo.shape[0]
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


def by_bab(net: Network, box: Box | None, p: float, q: float | None, deadline: float | None = None,
           *, batch: int = 1024, max_boxes: int | None = None) -> BaBOutcome:
    """Input-splitting branch and bound for the Lipschitz constant over a box, or over
    R^d (``box`` None): then over the outer faces of ``[-1, 1]^d x [0, 1]`` for the
    homogenised network (every cone of it meets them away from the apex, see
    :mod:`relulab.lipschitz.jacobians`), with the Jacobian in ``x`` only.

    Example:
        >>> from relulab import Network, Box
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 3.0]]], [[0.0, 0.0], [0.0]])   # relu(x) + 3 relu(-x)
        >>> o = by_bab(net, Box([-1], [1]), 1, None)
        >>> o.lower, o.complete, bool(o.upper <= 3 * (1 + 1e-6))
        (3.0, True, True)
        >>> cut = by_bab(net, Box([-1], [1]), 1, None, max_boxes=1)   # stopped early: a bracket
        >>> cut.complete, bool(cut.lower <= 3.0 <= cut.upper)
        (False, True)
    """
    from .milp import homogeneous_problem

    t0 = time.perf_counter()
    d = net.input_dim
    if box is None:
        H, ext = homogeneous_problem(net)
        Ws, bs, sk = float_layers(H)
        OL, OH = _faces(d)
        width0 = ext.hi - ext.lo
    else:
        Ws, bs, sk = float_layers(net)
        OL, OH = box.lo[None].copy(), box.hi[None].copy()
        width0 = box.hi - box.lo
    OU = np.full(len(OL), np.inf)
    influence = np.abs(Ws[0]).sum(axis=0) + 1e-12 * width0  # tol: tie-break so untouched inputs still split
    best_w: LipschitzWitness | None = None
    best = 0.0
    seen = 0
    while len(OU):
        if deadline is not None and time.time() > deadline:
            break
        if max_boxes is not None and seen >= max_boxes:
            break
        k = min(batch, len(OU))
        idx = np.argpartition(-OU, k - 1)[:k] if len(OU) > k else np.arange(len(OU))
        rest = np.ones(len(OU), dtype=bool)
        rest[idx] = False
        lo, hi, parent = OL[idx], OH[idx], OU[idx]
        OL, OH, OU = OL[rest], OH[rest], OU[rest]
        seen += k
        Gc, Gr = box_jacobian_bounds(Ws, bs, sk, lo, hi)
        ub = np.minimum(interval_norm_bound(Gc[:, :, :d], Gr[:, :, :d], p, q), parent)
        C = (lo + hi) / 2
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
                alive = OU > best + DROP_TOL * (1 + best)
                OL, OH, OU = OL[alive], OH[alive], OU[alive]
        keep = ub > best + DROP_TOL * (1 + best)
        lo, hi, ub = lo[keep], hi[keep], ub[keep]
        if len(ub) == 0:
            continue
        # split where the first layer's pre-activations move most across the box
        rel = (hi - lo) * influence
        dim = np.argmax(rel, axis=1)
        rows = np.arange(len(lo))
        mid = (lo[rows, dim] + hi[rows, dim]) / 2
        hi1, lo2 = hi.copy(), lo.copy()
        hi1[rows, dim] = mid
        lo2[rows, dim] = mid
        OL = np.concatenate([OL, lo, lo2])
        OH = np.concatenate([OH, hi1, hi])
        OU = np.concatenate([OU, ub, ub])
    upper = float(np.max(OU)) if len(OU) else best + DROP_TOL * (1 + best)
    return BaBOutcome(best, max(upper, best), best_w, len(OU) == 0, seen, time.perf_counter() - t0)
