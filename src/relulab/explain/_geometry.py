"""Polyhedral helpers: a region's H-representation from its activation pattern,
redundancy removal, vertices, volumes and the convex-union test used by merging."""

from __future__ import annotations

import time

import numpy as np

from ..lp import INF, LPModel, chebyshev_center
from ..network import Network
from ..tolerance import FEAS_TOL, MIN_RADIUS, TINY
from ._bsp import area

# Relative volume mismatch under which conv(P u Q) counts as equal to P u Q: far below
# any region a float enumeration resolves (region volumes are >= ~1e-12 of the box).
HULL_REL_TOL = 1e-9  # tol: relative volume mismatch of a hull and a union
# Hull edges shorter than this fraction of the polygon's extent are rounding artefacts
# (two copies of one vertex computed in two regions); their end points are merged.
SHORT_EDGE = 1e-9  # tol: shorter hull edges are two copies of one vertex
# A constraint row with a smaller norm is a zero row (rounding of cancelled weights).
ZERO_ROW = 1e-14  # tol: norm of a row that is zero but for float rounding


def pattern_hrep(net: Network, pattern: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(G, h)``: the region ``G x <= h`` of ``pattern``, one row per hidden neuron
    (active: ``z >= 0``; inactive: ``z <= 0``), rows scaled to unit norm (a neuron
    constant on the input gets a zero row, ``0 <= h``)."""
    G, h = net.float().region_inequalities(pattern)
    G, h = np.array(G, dtype=float), np.array(h, dtype=float)
    nrm = np.linalg.norm(G, axis=1)
    ok = nrm > 0
    G[ok] /= nrm[ok, None]
    h[ok] /= nrm[ok]
    return G, h


def normalize_rows(A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows scaled to unit norm; zero rows dropped when satisfied (``0 <= b``)."""
    A = np.atleast_2d(np.asarray(A, float))
    b = np.asarray(b, float).reshape(-1)
    nrm = np.linalg.norm(A, axis=1)
    keep = nrm > ZERO_ROW  # a zero row says nothing about the direction
    A, b, nrm = A[keep], b[keep], nrm[keep]
    return A / nrm[:, None], b / nrm


def interior(A: np.ndarray, b: np.ndarray, lo=None, hi=None) -> tuple[np.ndarray | None, float]:
    """Chebyshev centre and radius of ``{A x <= b, lo <= x <= hi}`` (None when empty)."""
    if lo is not None:
        d = A.shape[1]
        eye = np.eye(d)
        fin_hi, fin_lo = np.isfinite(hi), np.isfinite(lo)
        A = np.vstack([A, eye[fin_hi], -eye[fin_lo]])
        b = np.concatenate([b, hi[fin_hi], -lo[fin_lo]])
    return chebyshev_center(A, b)


def irredundant(A: np.ndarray, b: np.ndarray, keep_first: int = 0, deadline: float | None = None) -> np.ndarray:
    """Indices of the rows of ``A x <= b`` (a full-dimensional, bounded set) that are
    facets.  Row ``i`` is redundant when ``max a_i x`` over the rows still kept (row ``i``
    relaxed by 1) stays within ``b_i``; a redundant row is dropped before the next test,
    so of two rows within rounding of each other one survives (testing each against all
    the others dropped both, and a search never crossed that facet); rows are tested
    loosest first, so of a chain of such rows the tightest survives.  Duplicates keep
    their first copy.  Past ``deadline`` (a ``time.monotonic()`` value) the untested rows
    are all kept: extra rows describe the same set.

    Example:
        >>> A = np.array([[1.0, 0.0], [1.0, 1e-12], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
        >>> irredundant(A, np.array([0.5, 0.5, 1.0, 1.0, 1.0])).tolist()
        [0, 2, 3, 4]
    """
    A, b = np.asarray(A, float), np.asarray(b, float)
    n = A.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    # exact duplicates first (same unit row, same offset): keep one
    key = np.round(np.hstack([A, b[:, None]]), 12)
    _, first = np.unique(key, axis=0, return_index=True)
    cand = np.sort(first)
    # the loosest rows first (largest distance from an interior point): of a chain of
    # near-parallel rows each within the tolerance of the next, testing the tightest first
    # dropped it and then each next one, and only the loosest (1e-9 x 59 out) survived
    ctr, _ = chebyshev_center(A[cand], b[cand])
    if ctr is not None:
        nrm = np.linalg.norm(A[cand], axis=1)
        dist = (b[cand] - A[cand] @ ctr) / np.where(nrm > 0, nrm, 1.0)
        cand = cand[np.argsort(-dist, kind="stable")]
    A2, b2 = A[cand], b[cand]
    model = LPModel(np.zeros(A.shape[1]), A_ub=A2, b_ub=b2 + 0.0)
    out = []
    for r in range(len(cand)):
        if deadline is not None and time.monotonic() > deadline:
            out.extend(int(c) for c in cand[r:])
            break
        model.set_row_bounds(r, -INF, float(b2[r] + 1.0))
        model.set_objective(A2[r], maximize=True)
        res = model.solve()
        if res.status != "optimal" or res.objective > b2[r] + FEAS_TOL * (1 + abs(b2[r])):
            model.set_row_bounds(r, -INF, float(b2[r]))
            out.append(int(cand[r]))
        else:
            model.set_row_bounds(r, -INF, INF)  # redundant: no longer supports the others
    return np.array(sorted(out), dtype=np.int64)


def vertices(A: np.ndarray, b: np.ndarray, center: np.ndarray | None = None) -> np.ndarray:
    """Vertices of the bounded, full-dimensional polytope ``A x <= b``."""
    d = A.shape[1]
    if center is None:
        center, r = chebyshev_center(A, b)
        if center is None or r <= MIN_RADIUS:
            return np.zeros((0, d))
    if d == 1:
        a = A[:, 0]
        up = b[a > 0] / a[a > 0]
        dn = b[a < 0] / a[a < 0]
        return np.array([[dn.max()], [up.min()]])
    from scipy.spatial import HalfspaceIntersection

    # qhull's tolerances are absolute: the problem is moved to its centre and scaled by the
    # centre's distance to the nearest facet (a box of width 1e-8 in 3-D failed "feasible
    # point is not clearly inside halfspace"), and the vertices moved back
    c = np.asarray(center, float)
    nrm = np.linalg.norm(A, axis=1)
    nrm[~(nrm > 0)] = 1.0
    slack = (b - A @ c) / nrm
    scale = float(np.min(slack)) if slack.size else 1.0
    if not scale > 0:
        return np.zeros((0, d))
    An = A / nrm[:, None]
    hs = HalfspaceIntersection(np.hstack([An, -(slack / scale)[:, None]]), np.zeros(d))
    V = c + scale * hs.intersections
    return V[np.all(np.isfinite(V), axis=1)]


def volume(V: np.ndarray) -> float:
    """Volume of the convex hull of the points ``V`` (0 for degenerate sets)."""
    n, d = V.shape
    if n <= d:
        return 0.0
    if d == 1:
        return float(V.max() - V.min())
    if d == 2:
        return _polygon_area(V)
    from scipy.spatial import ConvexHull, QhullError

    # centred and scaled to size 1 (qhull's tolerances are absolute), the volume scaled back
    c = V.mean(axis=0)
    scale = float(np.max(np.abs(V - c)))
    if not scale > 0:
        return 0.0
    try:
        return float(ConvexHull((V - c) / scale).volume) * scale ** d
    except QhullError:
        return 0.0


def _hull2d(P: np.ndarray) -> np.ndarray:
    """Convex hull (counter-clockwise) of 2-D points by the monotone chain."""
    P = P[np.lexsort((P[:, 1], P[:, 0]))]
    if len(P) > 1:
        P = P[np.concatenate([[True], np.any(P[1:] != P[:-1], axis=1)])]
    if len(P) <= 2:
        return P
    pts = [(float(a), float(b)) for a, b in P]

    def half(points):
        out: list = []
        for px, py in points:
            while len(out) >= 2:
                (ax, ay), (bx, by) = out[-2], out[-1]
                if (bx - ax) * (py - ay) - (by - ay) * (px - ax) > 0:
                    break
                out.pop()
            out.append((px, py))
        return out

    lower, upper = half(pts), half(pts[::-1])
    H = np.array(lower[:-1] + upper[:-1])
    # vertices a rounding error apart would give an edge with a meaningless normal
    diam = float(np.max(H.max(0) - H.min(0))) if len(H) else 0.0
    nxt = np.concatenate([H[1:], H[:1]])
    keep = np.sqrt(np.sum((H - nxt) ** 2, axis=1)) > SHORT_EDGE * max(diam, TINY)
    return H[keep] if keep.sum() >= 3 else H


def _polygon_area(V: np.ndarray) -> float:
    H = _hull2d(V)
    if len(H) < 3:
        return 0.0
    return area(H)   # the shoelace formula about a vertex (on raw coordinates: |x|^2 eps)


def hull(V: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(A, b, vertices)`` of the convex hull of ``V``, rows of unit norm."""
    d = V.shape[1]
    if d == 1:
        lo, hi = float(V.min()), float(V.max())
        return np.array([[1.0], [-1.0]]), np.array([hi, -lo]), np.array([[lo], [hi]])
    if d == 2:
        H = _hull2d(V)
        E = np.concatenate([H[1:], H[:1]]) - H
        N = np.stack([E[:, 1], -E[:, 0]], axis=1)  # outward normals of a CCW polygon
        N /= np.linalg.norm(N, axis=1, keepdims=True)
        return N, np.einsum("ij,ij->i", N, H), H
    from scipy.spatial import ConvexHull

    ch = ConvexHull(V)
    A, b = ch.equations[:, :d], -ch.equations[:, d]
    key = np.round(np.hstack([A, b[:, None]]), 10)
    _, first = np.unique(key, axis=0, return_index=True)
    first = np.sort(first)
    return A[first], b[first], V[ch.vertices]


def union_is_convex(VP: np.ndarray, volP: float, VQ: np.ndarray, volQ: float,
                    scale: float) -> bool:
    """Whether the union of two convex polytopes with disjoint interiors (vertex sets
    ``VP``, ``VQ``) is convex: it always lies inside the hull of its vertices, and
    equals it exactly when the volumes agree (to :data:`HULL_REL_TOL` of ``scale``)."""
    vh = volume(np.vstack([VP, VQ]))
    return vh <= volP + volQ + HULL_REL_TOL * scale
