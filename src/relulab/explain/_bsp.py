"""Binary space partition of a 2-D box into convex cells of one decision each.

The pieces (one convex polygon per linear region and decision) tile the box.  The
decision boundary is made of the piece edges that separate two decisions; each split
uses the full line through one such edge (the one whose line cuts the fewest other
boundary edges), so a cell's rule can cut through linear regions, which merging whole
pieces cannot.  A cell is a leaf when every piece inside it has the same decision: its
polygon is then exactly a subset of that decision's set.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..network import Network
from ..tolerance import MATCH_RTOL, PROBE_STEP
from .decision import Decision

# Pieces (or cell parts) with less than this fraction of the box's area after a cut are
# the rounding noise of cutting along a line through their edge.
AREA_TOL = 1e-12  # tol: area fraction left by cutting along an edge's own line
# A cell is filled by one decision's pieces when their areas add up to its own but for
# this relative rounding error of the cuts.
FILL_REL = 1e-11  # tol: relative rounding of the areas of cut pieces
# A point is on a line when its signed distance is below this (times the box size).
LINE_TOL = 1e-10  # tol: a point this close (x box size) lies on the line


def area(P: np.ndarray) -> float:
    """The area of the polygon ``P`` (vertices in order), by the shoelace formula about
    its first vertex: on raw coordinates its rounding is |x|^2 eps, 2e-4 of a box of
    width 2 at x = 1e6, and cells read full of one decision that were not.

    Example:
        >>> area(np.array([[1e6 + 0.1, 1e6], [1e6 + 0.6, 1e6], [1e6 + 0.1, 1e6 + 0.25]]))   # legs 0.5, 0.25
        0.0625
    """
    if len(P) < 3:
        return 0.0
    Q = P - P[0]
    x, y = Q[:, 0], Q[:, 1]
    s = x[:-1] @ y[1:] - y[:-1] @ x[1:] + x[-1] * y[0] - y[-1] * x[0]
    return float(0.5 * abs(s))


def clip(P: np.ndarray, a: np.ndarray, b: float, tol: float) -> np.ndarray:
    """The convex polygon ``P`` (ordered) cut by ``a x <= b``."""
    s = P @ a - b
    if np.all(s <= tol):
        return P
    if np.all(s >= -tol):
        return P[:0]
    out = []
    n = len(P)
    for k in range(n):
        p, q = P[k], P[(k + 1) % n]
        sp_, sq = s[k], s[(k + 1) % n]
        if sp_ <= 0:
            out.append(p)
        if (sp_ < 0 < sq) or (sq < 0 < sp_):
            out.append(p + sp_ / (sp_ - sq) * (q - p))
    return np.array(out).reshape(-1, 2)


def boundary_segments(net: Network, decisions: list[Decision], polys: list[np.ndarray],
                      labels: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Edges of the pieces whose other side has another decision: (n, 2, 2) end points.

    The other side is probed just outside the edge's midpoint by a forward pass (label
    -1: none of ``decisions``)."""
    P, Q, own = [], [], []
    for poly, lab in zip(polys, labels, strict=True):
        P.append(poly)
        Q.append(np.concatenate([poly[1:], poly[:1]]))
        own.append(np.full(len(poly), lab))
    P, Q, own = np.vstack(P), np.vstack(Q), np.concatenate(own)
    E = Q - P
    L = np.linalg.norm(E, axis=1)
    scale = float(np.max(hi - lo))
    ok = L > LINE_TOL * scale
    P, Q, E, L, own = P[ok], Q[ok], E[ok], L[ok], own[ok]
    N = np.stack([E[:, 1], -E[:, 0]], axis=1) / L[:, None]  # outward for counter-clockwise
    probe = (P + Q) / 2 + PROBE_STEP * scale * N
    inside = np.all((probe > lo) & (probe < hi), axis=1)
    P, Q, own, probe = P[inside], Q[inside], own[inside], probe[inside]
    Y = net(probe)
    other = np.full(len(probe), -1)
    for k, dec in enumerate(decisions):
        other[dec.holds(Y)] = k
    keep = other != own
    P, Q = P[keep], Q[keep]
    # each edge is seen from both sides: keep one copy (end points in lexicographic order)
    swap = (P[:, 0] > Q[:, 0]) | ((P[:, 0] == Q[:, 0]) & (P[:, 1] > Q[:, 1]))
    P2, Q2 = np.where(swap[:, None], Q, P), np.where(swap[:, None], P, Q)
    key = np.round(np.hstack([P2, Q2]) / (scale * MATCH_RTOL))
    _, first = np.unique(key, axis=0, return_index=True)
    first = np.sort(first)
    return np.stack([P2[first], Q2[first]], axis=1)


def _best_line(S: np.ndarray, tol: float) -> tuple[np.ndarray, float]:
    """Among the lines through the segments ``S``, the one cutting the fewest others
    (ties: the longest segment)."""
    P, Q = S[:, 0], S[:, 1]
    E = Q - P
    L = np.linalg.norm(E, axis=1)
    A = np.stack([E[:, 1], -E[:, 0]], axis=1) / L[:, None]
    b = np.einsum("ij,ij->i", A, P)
    sP = P @ A.T - b[None, :]   # (segment j, line i)
    sQ = Q @ A.T - b[None, :]
    cuts = ((sP < -tol) & (sQ > tol)) | ((sP > tol) & (sQ < -tol))
    score = cuts.sum(0) - L / (L.max() + 1.0)
    i = int(np.argmin(score))
    return A[i], float(b[i])


def _split_segments(S: np.ndarray, a: np.ndarray, b: float, tol: float):
    sP = S[:, 0] @ a - b
    sQ = S[:, 1] @ a - b
    on = (np.abs(sP) <= tol) & (np.abs(sQ) <= tol)
    left = ~on & (sP <= tol) & (sQ <= tol)
    right = ~on & (sP >= -tol) & (sQ >= -tol)
    cross = ~on & ~left & ~right
    L, R = [S[left]], [S[right]]
    if cross.any():
        C = S[cross]
        t = (sP[cross] / (sP[cross] - sQ[cross]))[:, None]
        M = C[:, 0] + t * (C[:, 1] - C[:, 0])
        first_left = sP[cross] < 0
        a1 = np.stack([C[:, 0], M], axis=1)
        a2 = np.stack([M, C[:, 1]], axis=1)
        L.append(np.where(first_left[:, None, None], a1, a2))
        R.append(np.where(first_left[:, None, None], a2, a1))
    return np.concatenate(L), np.concatenate(R)


class _Pieces:
    """Convex polygons stored flat: vertices ``V``, offsets ``ptr``, labels, areas."""

    def __init__(self, V: np.ndarray, ptr: np.ndarray, lab: np.ndarray, ar: np.ndarray) -> None:
        self.V, self.ptr, self.lab, self.ar = V, ptr, lab, ar

    @staticmethod
    def of(polys: list[np.ndarray], labels: list[int], areas: list[float]) -> _Pieces:
        if not polys:
            return _Pieces(np.zeros((0, 2)), np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64),
                           np.zeros(0))
        ptr = np.concatenate([[0], np.cumsum([len(p) for p in polys])])
        return _Pieces(np.vstack(polys), ptr, np.asarray(labels, dtype=np.int64),
                       np.asarray(areas, dtype=float))

    def __len__(self) -> int:
        return len(self.lab)

    def poly(self, i: int) -> np.ndarray:
        return self.V[self.ptr[i]:self.ptr[i + 1]]

    def select(self, keep: np.ndarray) -> _Pieces:
        idx = np.flatnonzero(keep)
        cnt = np.diff(self.ptr)[idx]
        ptr = np.concatenate([[0], np.cumsum(cnt)])
        rows = np.repeat(self.ptr[idx], cnt) + (np.arange(ptr[-1]) - np.repeat(ptr[:-1], cnt))
        return _Pieces(self.V[rows], ptr, self.lab[idx], self.ar[idx])

    def split(self, a: np.ndarray, b: float, tol: float, amin: float) -> tuple[_Pieces, _Pieces]:
        """The pieces on each side of ``a x = b``; only the crossing ones are clipped."""
        if len(self) == 0:
            return self, self
        sv = self.V @ a - b
        smax = np.maximum.reduceat(sv, self.ptr[:-1])
        smin = np.minimum.reduceat(sv, self.ptr[:-1])
        left = smax <= tol
        right = smin >= -tol
        cross = ~left & ~right
        out = []
        for sgn, side in ((1.0, left), (-1.0, right)):
            base = self.select(side)
            polys, labs, ars = [base.V], list(base.lab), list(base.ar)
            ptr_extra = []
            for i in np.flatnonzero(cross):
                q = clip(self.poly(i), sgn * a, sgn * b, tol)
                if len(q) >= 3 and (aq := area(q)) > amin:
                    polys.append(q)
                    ptr_extra.append(len(q))
                    labs.append(int(self.lab[i]))
                    ars.append(aq)
            ptr = np.concatenate([base.ptr, base.ptr[-1] + np.cumsum(ptr_extra, dtype=np.int64)])
            out.append(_Pieces(np.vstack(polys) if len(polys) > 1 else base.V, ptr,
                               np.asarray(labs, dtype=np.int64), np.asarray(ars, dtype=float)))
        return out[0], out[1]


def bsp(polys: list[np.ndarray], labels: np.ndarray, segments: np.ndarray, lo: np.ndarray,
        hi: np.ndarray, max_depth: int = 200, deadline: Any = None) -> list[tuple[np.ndarray, int]] | None:
    """Convex cells ``(polygon, decision index)`` tiling the part of the box covered by
    the pieces: a cell is a leaf of decision ``k`` when the pieces of ``k`` fill it, and
    is dropped when no piece meets it (the pieces may cover one decision only).  None when
    ``deadline`` (a :class:`relulab.limits.Deadline`) expires first."""
    scale = float(np.max(hi - lo))
    tol = LINE_TOL * scale
    amin = AREA_TOL * float(np.prod(hi - lo))
    # the cut vertices carry the rounding of the coordinates (|x| eps), which is a share
    # |x| / width of the box: the "full" test allows for it (at 1e6 on a box of width 2,
    # 1e-10 of the area, above FILL_REL)
    fill_rel = max(FILL_REL, 64.0 * np.finfo(float).eps * float(np.max(np.abs(np.r_[lo, hi]))) / scale)
    box = np.array([[lo[0], lo[1]], [hi[0], lo[1]], [hi[0], hi[1]], [lo[0], hi[1]]])
    ars = [area(p) for p in polys]
    keep = [i for i, ar in enumerate(ars) if ar > amin]
    start = _Pieces.of([polys[i] for i in keep], [int(labels[i]) for i in keep], [ars[i] for i in keep])
    stack = [(box, area(box), start, segments, 0)]
    out: list[tuple[np.ndarray, int]] = []
    while stack:
        if deadline is not None and deadline.expired():
            return None
        cell, acell, pcs, S, depth = stack.pop()
        if len(pcs) == 0 or pcs.ar.sum() <= amin:
            continue
        tot = np.bincount(pcs.lab, weights=pcs.ar)
        full = np.flatnonzero(tot >= acell * (1 - fill_rel))
        if full.size:
            out.append((cell, int(full[0])))
            continue
        if len(S) == 0 or depth >= max_depth:
            # no boundary edge left to cut along (a degenerate boundary): the pieces
            # themselves are exact cells
            out += [(pcs.poly(i), int(pcs.lab[i])) for i in range(len(pcs))]
            continue
        a, b = _best_line(S, tol)
        SL, SR = _split_segments(S, a, b, tol)
        PL, PR = pcs.split(a, b, tol, amin)
        for sgn, Sx, Px in ((1.0, SL, PL), (-1.0, SR, PR)):
            c = clip(cell, sgn * a, sgn * b, tol)
            ac = area(c)
            if ac > amin:
                stack.append((c, ac, Px, Sx, depth + 1))
    return out
