"""Region enumeration split over cells of the box and run in parallel, then stitched.

The box is cut into cells (a k-d split that halves the cell with the most estimated
regions, estimated by the distinct activation patterns of sample points), each cell is
enumerated on its own (a local process or a Ray task, :mod:`relulab.parallel`), and the
pieces are stitched exactly:

* The set of inputs with a given activation pattern is convex, so all the pieces that
  carry one pattern are parts of one region, and the region is their union.
* A facet of the union lies on a neuron's hyperplane or on the outer box: the union's
  facets are the pieces' facets without the cuts between cells (one row per hyperplane).
* A vertex of the union is a vertex of the piece that holds it: the union's vertices are
  the pieces' vertices (merged where two cells found the same point) at which the
  union's tight facets have rank ``d``.
* A region found whole in one cell keeps that cell's interior point; a region cut by the
  cells gets the centroid of its vertices (a valid interior point, not necessarily the
  one a single process picks). The radius, ``touches_domain`` and the affine map follow;
  the adjacency graph comes from the facets, as for any set.

Counting keeps only the patterns of each cell and counts the distinct ones.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..domain import Box
from ..errors import RelulabError
from ..network import Network
from ..tolerance import RANK_TOL, ROUNDOFF
from ._types import RegionSet

__all__ = ["split_cells", "enumerate_stitched", "count_stitched"]

# sample points per cell for the region-count estimate that balances the cells
ESTIMATE_SAMPLES = 512
# a vertex found by two cells is one point when the coordinates agree to this (relative),
# and a facet is tight at a vertex within it: the cells compute the same intersection in
# different arithmetic order, so they differ by rounding only (distinct vertices of a
# nearly degenerate region can lie 1e-7 apart: the tolerance must stay far below that)
VERTEX_TOL = 100 * ROUNDOFF


def _estimate(net: Network, box: Box, rng: np.random.Generator) -> int:
    """Distinct activation patterns among sample points of ``box`` (a lower bound on its
    region count; proportional enough to balance the cells)."""
    X = rng.uniform(box.lo, box.hi, size=(ESTIMATE_SAMPLES, box.dim))
    P = net.pattern_vector(X).astype(np.uint8)
    return len({row.tobytes() for row in np.packbits(P, axis=1)}) if P.shape[1] else 1


def split_cells(net: Network, box: Box, n_cells: int, seed: int = 0) -> list[Box]:
    """Cut ``box`` into ``n_cells`` boxes: repeatedly halve the cell with the largest
    estimated region count across its longest side.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> net = Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
        >>> cells = split_cells(net, Box([-1, -1], [1, 1]), 4)
        >>> len(cells), float(sum(np.prod(c.hi - c.lo) for c in cells))
        (4, 4.0)
    """
    rng = np.random.default_rng(seed)
    cells = [(_estimate(net, box, rng), box)]
    while len(cells) < n_cells:
        k = max(range(len(cells)), key=lambda i: cells[i][0])
        _, c = cells.pop(k)
        axis = int(np.argmax(c.hi - c.lo))
        for half in c.split(axis):
            cells.append((_estimate(net, half, rng), half))
    cells.sort(key=lambda t: -t[0])           # heaviest first: the last worker is not alone
    return [c for _, c in cells]


class _CellTask:
    """Enumerate one cell (runs in a worker) with ``enumerate_fn`` (the one-process
    enumeration, passed in by the caller); ``patterns_only`` for counting."""

    def __init__(self, net: Network, enumerate_fn: Any, patterns_only: bool = False) -> None:
        self.net, self.enumerate_fn, self.patterns_only = net, enumerate_fn, patterns_only

    def __call__(self, cell: tuple[np.ndarray, np.ndarray]) -> Any:
        if self.patterns_only:
            # counting: ``enumerate_fn`` gives the patterns only, (packed, partial)
            return self.enumerate_fn(self.net, Box(*cell))
        rs = self.enumerate_fn(self.net, Box(*cell), vertices=True)
        rs._table = rs._edges = rs._skeleton = None      # nothing the stitch needs
        rs.net = None
        return rs


def _run_cells(net: Network, box: Box, cells: int | None, parallel: str, workers: int | None,
               address: str | None, patterns_only: bool,
               enumerate_fn: Any) -> tuple[list[Box], list[Any]]:
    from ..parallel import pmap

    if not isinstance(box, Box):
        raise RelulabError("parallel enumeration splits a Box domain; give a Box")
    # two cells per worker: enough to balance, and every cut adds stitching work
    n = cells if cells is not None else 2 * (workers or 2)
    if n < 1:
        raise RelulabError(f"cells must be at least 1, got {n}")
    boxes = split_cells(net, box, n)
    out: list[Any] = [None] * len(boxes)
    for i, res in pmap(_CellTask(net, enumerate_fn, patterns_only), [(b.lo, b.hi) for b in boxes],
                       backend="ray" if parallel == "ray" else "local", workers=workers,
                       address=address):
        if isinstance(res, dict) and res.get("status") == "error":
            raise RelulabError(f"cell {i} of the parallel enumeration failed: {res['reason']}")
        out[i] = res
    if any(r is None for r in out):
        raise KeyboardInterrupt
    return boxes, out


def count_stitched(net: Network, box: Box, patterns_fn: Any, *, parallel: str = "local",
                   workers: int | None = None, cells: int | None = None,
                   address: str | None = None) -> int:
    """The number of regions, counted over cells in parallel (distinct patterns).

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> net = Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
        >>> from relulab.regions._enumerate import region_patterns
        >>> count_stitched(net, Box([-1, -1], [1, 1]), region_patterns, workers=1, cells=3)
        4
    """
    _, parts = _run_cells(net, box, cells, parallel, workers, address, True, patterns_fn)
    if any(partial for _, partial in parts):
        raise RelulabError("a cell stopped early (memory budget); the count would be partial")
    P = np.concatenate([p for p, _ in parts], axis=0)
    return int(np.unique(P, axis=0).shape[0]) if P.shape[0] else 0


def enumerate_stitched(net: Network, box: Box, enumerate_fn: Any, *, parallel: str = "local",
                       workers: int | None = None, cells: int | None = None,
                       address: str | None = None) -> RegionSet:
    """Every region of ``net`` in ``box``, enumerated over cells in parallel and stitched
    (the same regions, facets, vertices and graph as one process; module docstring).

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> net = Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
        >>> from relulab.regions import enumerate as enumerate_regions
        >>> rs = enumerate_stitched(net, Box([-1, -1], [1, 1]), enumerate_regions, workers=1, cells=3)
        >>> len(rs), sorted(rs.patterns.sum(1).tolist())
        (4, [0, 1, 1, 2])
    """
    t0 = time.perf_counter()
    boxes, parts = _run_cells(net, box, cells, parallel, workers, address, False, enumerate_fn)
    rs = _stitch(net, box, boxes, parts)
    rs.seconds = time.perf_counter() - t0
    rs.info.update(engine="stitched", cells=len(boxes), parallel=parallel)
    rs.net = net.float() if net.is_exact else net
    return rs


# ------------------------------------------------------------------ stitching
def _stitch(net: Network, box: Box, boxes: list[Box], parts: list[RegionSet]) -> RegionSet:
    d = box.dim
    N = parts[0].n_neurons
    m = parts[0].affine.shape[1]
    packed = np.concatenate([p.packed_patterns for p in parts], axis=0)
    # facet ids of the cells' own box rows: kept (as the outer box's row) on the outer
    # boundary, dropped on a cut between cells
    f_ids, f_A, f_b, f_owner = [], [], [], []
    v_pts, v_owner, v_on_cut = [], [], []
    aff = np.concatenate([p.affine for p in parts], axis=0)
    base = 0
    for c, p in zip(boxes, parts, strict=True):
        fr = np.repeat(np.arange(len(p)), np.diff(p.facet_ptr)) + base
        ids = p.facet_ids.copy()
        row = ids - N
        dom = ids >= N
        axis = np.where(row < d, row, row - d)
        outer = np.where(row < d, c.hi[np.clip(axis, 0, d - 1)] == box.hi[np.clip(axis, 0, d - 1)],
                         c.lo[np.clip(axis, 0, d - 1)] == box.lo[np.clip(axis, 0, d - 1)])
        keep = ~dom | outer
        f_ids.append(ids[keep])
        f_A.append(p.facet_A[keep])
        f_b.append(p.facet_b[keep])
        f_owner.append(fr[keep])
        v_pts.append(p.vertices)
        v_owner.append(np.repeat(np.arange(len(p)), np.diff(p.vertex_ptr)) + base)
        # a piece's vertex off every cut between cells is a vertex of the whole region;
        # only the ones on a cut need the extremality test below
        lo_cut = (c.lo != box.lo)[None, :] & (np.abs(p.vertices - c.lo[None, :])
                                              <= VERTEX_TOL * (1.0 + np.abs(c.lo[None, :])))
        hi_cut = (c.hi != box.hi)[None, :] & (np.abs(p.vertices - c.hi[None, :])
                                              <= VERTEX_TOL * (1.0 + np.abs(c.hi[None, :])))
        v_on_cut.append(np.any(lo_cut | hi_cut, axis=1))
        base += len(p)
    f_ids = np.concatenate(f_ids)
    f_A = np.concatenate(f_A)
    f_b = np.concatenate(f_b)
    f_owner = np.concatenate(f_owner)
    v_pts = np.concatenate(v_pts)
    v_owner = np.concatenate(v_owner)
    v_on_cut = np.concatenate(v_on_cut)
    # one region per pattern
    _, first, group = np.unique(packed, axis=0, return_index=True, return_inverse=True)
    group = group.reshape(-1)
    order = np.argsort(first, kind="stable")          # regions in order of first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    reg_of_piece = rank[group]
    n = order.size
    # facets: one row per (region, hyperplane id)
    fr = reg_of_piece[f_owner]
    key = fr.astype(np.int64) * (N + 2 * d + 1) + f_ids
    _, fi = np.unique(key, return_index=True)         # sorted by region, then id
    fr, f_ids, f_A, f_b = fr[fi], f_ids[fi], f_A[fi], f_b[fi]
    fptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(fr, minlength=n), out=fptr[1:])
    # vertices: a region found whole in one cell keeps its vertex list; a region cut by
    # the cells keeps its pieces' vertices off the cuts, and those on a cut merged where two
    # cells found the same point and kept where the region's tight facets have rank d
    vr = reg_of_piece[v_owner]
    counts = np.bincount(reg_of_piece, minlength=n)
    is_merged = counts > 1
    keep_v = ~(is_merged[vr] & v_on_cut)
    cand = np.flatnonzero(~keep_v)
    ok = np.zeros(cand.size, dtype=bool)
    if cand.size:
        # every (candidate vertex, facet of its region) pair at once
        cr = vr[cand]
        nf = np.diff(fptr)[cr]
        pair_c = np.repeat(np.arange(cand.size), nf)
        starts = np.repeat(fptr[cr], nf)
        pair_f = starts + (np.arange(pair_c.size) - np.repeat(np.cumsum(nf) - nf, nf))
        slack = np.abs(f_b[pair_f] - np.einsum("pd,pd->p", f_A[pair_f], v_pts[cand][pair_c]))
        tight = slack <= VERTEX_TOL * (1.0 + np.abs(f_b[pair_f]))
        n_tight = np.bincount(pair_c[tight], minlength=cand.size)
        # a vertex of the region has d tight facets of full rank (a point on a cut between
        # cells has d - 1 of the region's own); simple vertices by one batched determinant
        simple = np.flatnonzero(n_tight == d)
        if simple.size:
            rows = pair_f[tight][np.isin(pair_c[tight], simple)]
            M = f_A[rows].reshape(simple.size, d, d)
            ok[simple] = np.abs(np.linalg.det(M)) > RANK_TOL
        offs = np.concatenate([[0], np.cumsum(nf)])     # the pairs of a candidate are contiguous
        for q in np.flatnonzero(n_tight > d):          # degenerate vertices
            sl = slice(offs[q], offs[q + 1])
            ok[q] = np.linalg.matrix_rank(f_A[pair_f[sl][tight[sl]]], tol=RANK_TOL) == d
    cand = cand[ok]
    # one point per vertex found by several cells: sort, then merge neighbours that agree
    if cand.size:
        P = v_pts[cand]
        o = np.lexsort((*P.T[::-1], vr[cand]))
        cand, P = cand[o], P[o]
        same = np.zeros(cand.size, dtype=bool)
        same[1:] = (vr[cand][1:] == vr[cand][:-1]) & np.all(
            np.abs(P[1:] - P[:-1]) <= VERTEX_TOL * (1.0 + np.abs(P[:-1])), axis=1)
        cand = cand[~same]
    vr = np.concatenate([vr[keep_v], vr[cand]])
    V = np.concatenate([v_pts[keep_v], v_pts[cand]])
    vo = np.argsort(vr, kind="stable")
    vr, V = vr[vo], V[vo]
    vptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(vr, minlength=n), out=vptr[1:])
    interior = np.zeros((n, d))
    np.add.at(interior, vr, V)
    interior /= np.maximum(np.diff(vptr), 1)[:, None]
    # a region cut by the cells gets the centroid of its whole vertex list; the others
    # keep their cell's values exactly
    radius = np.full(n, np.inf)
    if fr.size:
        slack = f_b - np.einsum("fd,fd->f", f_A, interior[fr])
        has = np.diff(fptr) > 0
        radius[has] = np.minimum.reduceat(slack, fptr[:-1][has])
    touches = np.bincount(fr[f_ids >= N], minlength=n) > 0
    piece_interior = np.concatenate([p.interior for p in parts], axis=0)
    piece_radius = np.concatenate([p.radius for p in parts], axis=0)
    single = ~is_merged
    src = first[order]                                 # a piece of each region
    interior[single] = piece_interior[src[single]]
    radius[single] = piece_radius[src[single]]
    out = RegionSet(
        dim=d, widths=parts[0].widths, packed_patterns=packed[src], vertex_ptr=vptr,
        vertices=V, facet_ptr=fptr, facet_ids=f_ids, facet_A=f_A, facet_b=f_b,
        interior=interior, radius=radius, affine=aff[src].reshape(n, m, d + 1),
        bounded=np.ones(n, dtype=bool), touches_domain=touches,
        partial=any(p.partial for p in parts), domain=box, method="subdivision",
    )
    return out
