"""Region enumeration split over cells of the box and run in parallel, then stitched.

The box is cut into cells (a k-d split that halves the cell with the most estimated
regions, estimated by the distinct activation patterns of sample points), each cell is
enumerated on its own (a local process or a Ray task, :mod:`relulab.parallel`).

Counting needs no exchange of regions: every region is *owned* by the one cell that
holds its lowest vertex (for the skeleton engine's fixed generic direction), and each
cell decides locally which of its pieces it owns (:func:`skeleton_owned_count`): a piece
whose lowest vertex lies on no cut between cells.  Each cell sends back one integer.
When a cell is not in general position (or too big for the skeleton engine) ownership
cannot be decided locally; the count then falls back to distinct activation patterns
over all cells, which is exact in every case.

Enumeration stitches the pieces exactly:

* The set of inputs with a given activation pattern is convex, so all the pieces that
  carry one pattern are parts of one region, and the region is their union.  A piece
  whose pattern no other cell found is a whole region and is kept as it is.
* A facet of the union lies on a neuron's hyperplane or on the outer box: the union's
  facets are the pieces' facets without the cuts between cells (one row per hyperplane).
* A vertex of the union is a vertex of the piece that holds it.  In a cell that the
  skeleton engine ran (general position, checked by the engine) no vertex of the complex
  lies on a cut, so the union's vertices are exactly the pieces' vertices off the cuts,
  dropped inside the worker; the skeletons of such cells, without their points on cuts,
  are together the skeleton of the whole complex.  A cell that fell back to the
  per-region engine sends its points on cuts too, and the driver keeps those at which the
  union's tight facets have rank ``d`` (merged where two cells found the same point).
* A region cut by the cells keeps the interior point of its piece with the largest
  inscribed ball (a valid interior point, not necessarily the one a single process picks)
  and its radius is measured against the union's facets.
* The adjacency graph is the union of the cells' graphs: two regions that share a facet
  are neighbours inside every cell that holds a piece of that facet.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from ..domain import Box
from ..errors import RelulabError
from ..network import Network
from ..tolerance import RANK_TOL, ROUNDOFF
from . import _engine as E
from ._assembly import cell_patterns
from ._hashing import as_words, group_rows
from ._neuron_cells import MAX_CELLS, run_cells
from ._skeleton import Degenerate, TooBig, skeleton_owned_count
from ._types import RegionSet, Skeleton

__all__ = ["split_cells", "enumerate_stitched", "count_stitched"]

# sample points per cell for the region-count estimate that balances the cells
ESTIMATE_SAMPLES = 512
# a vertex found by two cells is one point when the coordinates agree to this (relative),
# and a facet is tight at a vertex within it: the cells compute the same intersection in
# different arithmetic order, so they differ by rounding only (distinct vertices of a
# nearly degenerate region can lie 1e-7 apart: the tolerance must stay far below that)
VERTEX_TOL = 100 * ROUNDOFF
# cells are cut this fraction of a side away from the midpoint: structured networks put
# hyperplanes through round coordinates (0, 0.5), and a cut along a hyperplane would make
# every cell degenerate (the slow, exchange-everything path)
CUT_OFFSET = (5**0.5 - 2) / 10


def _estimate(net: Network, box: Box, rng: np.random.Generator) -> int:
    """Distinct activation patterns among sample points of ``box`` (a lower bound on its
    region count; proportional enough to balance the cells)."""
    X = rng.uniform(box.lo, box.hi, size=(ESTIMATE_SAMPLES, box.dim))
    P = net.pattern_vector(X).astype(np.uint8)
    return len({row.tobytes() for row in np.packbits(P, axis=1)}) if P.shape[1] else 1


# a cell whose skeleton would not fit the memory budget is cut in two (and so on, at
# most this many times): ownership is relative to the outer box, so the halves' counts add
MAX_CELL_SPLITS = 12


def _cut(cell: Box) -> tuple[Box, Box]:
    axis = int(np.argmax(cell.hi - cell.lo))
    return cell.split(axis, cell.lo[axis] + (0.5 + CUT_OFFSET) * (cell.hi[axis] - cell.lo[axis]))


def split_cells(net: Network, box: Box, n_cells: int, seed: int = 0) -> list[Box]:
    """Cut ``box`` into ``n_cells`` boxes: repeatedly cut the cell with the largest
    estimated region count across its longest side (near its middle).

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
        for half in _cut(c):
            cells.append((_estimate(net, half, rng), half))
    cells.sort(key=lambda t: -t[0])           # heaviest first: the last worker is not alone
    return [c for _, c in cells]


def _cut_rows(cell: Box, box: Box) -> np.ndarray:
    """Which of the cell's box rows (``x <= hi`` per axis, then ``x >= lo``) are cuts
    between cells rather than faces of the outer box."""
    return np.concatenate([cell.hi != box.hi, cell.lo != box.lo])


def _foreign_ids(cell: Box, box: Box, N: int, n_ids: int) -> np.ndarray:
    """A mask over the hyperplane ids of the cell's problem: True on the cuts."""
    f = np.zeros(n_ids, dtype=bool)
    rows = _cut_rows(cell, box)
    f[N : N + rows.size] = rows
    return f


def _engine_patterns(pb: E.Problem) -> np.ndarray:
    """Packed patterns of every region from the per-region engine (any input)."""
    X0, F0, ptr0, _ = E.initial_polytope(pb)
    out = [np.packbits(ch.pattern, axis=1) if pb.N else np.zeros((ch.batch.n, 0), np.uint8)
           for ch in E.run(pb, X0, F0, ptr0)]
    E.refuse_near_ties(pb, "regions.count")
    return np.concatenate(out, axis=0) if out else np.zeros((0, (pb.N + 7) // 8), np.uint8)


class _CountTask:
    """Count one cell (runs in a worker): ``("own", regions owned)`` in general position,
    else ``("patterns", packed patterns of all its pieces)``; the item's mode
    ``"patterns"`` asks for the patterns directly."""

    def __init__(self, net: Network, box: Box) -> None:
        self.net, self.lo, self.hi = net, box.lo, box.hi

    def __call__(self, item: tuple[np.ndarray, np.ndarray, str]) -> tuple[str, Any]:
        lo, hi, mode = item
        cell = Box(lo, hi)
        if mode == "own":
            try:
                return "own", self.owned(cell, 0)
            except (Degenerate, TooBig):
                pass
        return "patterns", _engine_patterns(E.Problem(self.net, cell)) if mode == "own" \
            else cell_patterns(E.Problem(self.net, cell))

    def owned(self, cell: Box, depth: int) -> int:
        """Regions owned by ``cell``; a cell too big for the skeleton engine is counted
        in halves (raises :class:`Degenerate`, or :class:`TooBig` past the last split)."""
        pb = E.Problem(self.net, cell)
        try:
            return skeleton_owned_count(pb, _foreign_ids(cell, Box(self.lo, self.hi),
                                                         pb.N, pb.n_ids))[0]
        except TooBig:
            if depth >= MAX_CELL_SPLITS:
                raise
        return sum(self.owned(half, depth + 1) for half in _cut(cell))


# default cells per worker.  Counting: ownership makes a cut cost only the boundary
# work, so several cells per worker balance the load (heaviest first).  Enumeration: every
# region cut by a cell is enumerated in pieces and merged by the driver, and in 5-D
# most regions are cut once there are a few cells per worker: one cell per worker.
COUNT_CELLS_PER_WORKER = 4
ENUMERATE_CELLS_PER_WORKER = 1


def _n_cells(cells: int | None, workers: int | None, per_worker: int) -> int:
    if workers is None:
        workers = os.cpu_count() or 1
    n = cells if cells is not None else per_worker * workers
    if not 1 <= n <= MAX_CELLS:  # each cell costs a pattern estimate (4,000 cells: 41 s)
        raise RelulabError(f"cells must be between 1 and {MAX_CELLS}, got {n}"
                           + ("" if cells is not None else f" ({per_worker} per worker)"))
    return n


def _check_box(box: Any) -> None:
    if not isinstance(box, Box):
        raise RelulabError("parallel enumeration splits a Box domain; give a Box")


def count_stitched(net: Network, box: Box, *, parallel: str = "local",
                   workers: int | None = None, cells: int | None = None,
                   address: str | None = None) -> int:
    """The number of regions, counted over cells in parallel (each cell counts the
    regions it owns; module docstring).

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> net = Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
        >>> count_stitched(net, Box([-1, -1], [1, 1]), workers=1, cells=3)
        4
    """
    _check_box(box)
    boxes = split_cells(net, box, _n_cells(cells, workers, COUNT_CELLS_PER_WORKER))
    task = _CountTask(net, box)
    res = run_cells(task, [(b.lo, b.hi, "own") for b in boxes], parallel, workers, address)
    if all(kind == "own" for kind, _ in res):
        return int(sum(n for _, n in res))
    # some cell could not decide ownership: distinct patterns over every cell instead
    again = [i for i, (kind, _) in enumerate(res) if kind == "own"]
    redo = run_cells(task, [(boxes[i].lo, boxes[i].hi, "patterns") for i in again], parallel,
                workers, address)
    for i, r in zip(again, redo, strict=True):
        res[i] = r
    P = np.concatenate([p for _, p in res], axis=0)
    if P.shape[0] == 0:
        return 0
    return int(group_rows(as_words(P), stable=False)[1].shape[0])


# ------------------------------------------------------------------ enumeration
class _Piece:
    """What a cell sends back for stitching: its pieces with the cut facets removed,
    which pieces touch a cut, their vertices (those on cuts dropped where the skeleton
    engine vouches for general position, else flagged), and the cell's dual-graph edges
    and skeleton when the skeleton engine ran."""

    def __init__(self, rs: RegionSet, cell: Box, box: Box) -> None:
        N, d = rs.n_neurons, rs.dim
        n = len(rs)
        self.general = rs.info.get("engine") == "skeleton"
        self.partial = rs.partial
        self.widths = rs.widths
        self.packed, self.affine = rs.packed_patterns, rs.affine
        self.interior, self.radius = rs.interior, rs.radius
        foreign = _foreign_ids(cell, box, N, N + 2 * d + 1)
        fr = np.repeat(np.arange(n), np.diff(rs.facet_ptr))
        on_cut = foreign[np.minimum(rs.facet_ids, N + 2 * d)]
        self.cut = np.bincount(fr[on_cut], minlength=n) > 0
        keep = ~on_cut
        self.facet_ptr = _ptr(fr[keep], n)
        self.facet_ids, self.facet_A, self.facet_b = (
            rs.facet_ids[keep], rs.facet_A[keep], rs.facet_b[keep])
        # vertex lists (empty when the skeleton was kept instead)
        rows = _cut_rows(cell, box)
        planes = np.concatenate([cell.hi, cell.lo])
        V = rs.vertices
        v_cut = np.zeros(V.shape[0], dtype=bool)
        for r in np.flatnonzero(rows):
            c = planes[r]
            v_cut |= np.abs(V[:, r % d] - c) <= VERTEX_TOL * (1.0 + abs(c))
        vr = np.repeat(np.arange(n), np.diff(rs.vertex_ptr))
        if self.general:
            self.vertex_ptr, self.vertices = _ptr(vr[~v_cut], n), V[~v_cut]
            self.v_cut = np.zeros(self.vertices.shape[0], dtype=bool)
        else:
            self.vertex_ptr, self.vertices, self.v_cut = rs.vertex_ptr, V, v_cut
        self.has_vertices = rs._skeleton is None
        self.skeleton = None
        if rs._skeleton is not None:
            sk = rs._skeleton
            own = ~foreign[np.minimum(sk.ids, N + 2 * d)].any(axis=1)
            self.skeleton = (sk.X[own], sk.ids[own], sk.signs[own])
        self.edges = rs._edges if self.general else None

    def __len__(self) -> int:
        return int(self.packed.shape[0])


def _ptr(owner: np.ndarray, n: int) -> np.ndarray:
    """Offsets of rows grouped by owner (rows already in owner order)."""
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=n), out=ptr[1:])
    return ptr


class _CellTask:
    """Enumerate one cell (runs in a worker) with ``enumerate_fn`` (the one-process
    enumeration, passed in by the caller) and prepare its pieces for the stitch."""

    def __init__(self, net: Network, box: Box, enumerate_fn: Any) -> None:
        self.net, self.lo, self.hi, self.enumerate_fn = net, box.lo, box.hi, enumerate_fn

    def __call__(self, item: tuple[np.ndarray, np.ndarray, bool]) -> _Piece:
        lo, hi, vertices = item
        cell = Box(lo, hi)
        rs = self.enumerate_fn(self.net, cell, vertices=vertices)
        return _Piece(rs, cell, Box(self.lo, self.hi))


def enumerate_stitched(net: Network, box: Box, enumerate_fn: Any, *, parallel: str = "local",
                       workers: int | None = None, cells: int | None = None,
                       address: str | None = None, vertices: bool = True) -> RegionSet:
    """Every region of ``net`` in ``box``, enumerated over cells in parallel and stitched
    (the same regions, facets, vertices and graph as one process; module docstring).
    ``vertices=False`` keeps the skeleton of the complex instead of vertex lists (each
    region's vertices are found when asked for), as one process does.

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
    _check_box(box)
    boxes = split_cells(net, box, _n_cells(cells, workers, ENUMERATE_CELLS_PER_WORKER))
    task = _CellTask(net, box, enumerate_fn)
    parts = run_cells(task, [(b.lo, b.hi, vertices) for b in boxes], parallel, workers, address)
    if not vertices and not all(p.skeleton is not None for p in parts):
        # a cell fell back to vertex lists: vertex lists everywhere, to merge them
        again = [i for i, p in enumerate(parts) if not p.has_vertices]
        redo = run_cells(task, [(boxes[i].lo, boxes[i].hi, True) for i in again], parallel,
                    workers, address)
        for i, p in zip(again, redo, strict=True):
            parts[i] = p
    rs = _stitch(box, parts)
    rs.seconds = time.perf_counter() - t0
    rs.info.update(engine="stitched", cells=len(boxes), parallel=parallel)
    rs.net = net.float() if net.is_exact else net
    return rs


# ------------------------------------------------------------------ stitching
def _gather(ptr: np.ndarray, pieces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of the given pieces, in that order (``ptr``: row offsets per piece), and
    their counts."""
    cnt = ptr[pieces + 1] - ptr[pieces]
    out = np.zeros(pieces.size + 1, dtype=np.int64)
    np.cumsum(cnt, out=out[1:])
    rows = np.repeat(ptr[pieces] - out[:-1], cnt) + np.arange(out[-1])
    return rows, cnt


def _cat_ptr(parts: list[_Piece], key: str) -> np.ndarray:
    outs, off = [np.zeros(1, dtype=np.int64)], 0
    for p in parts:
        q = getattr(p, key)
        outs.append(q[1:] + off)
        off += int(q[-1])
    return np.concatenate(outs)


def _stitch(box: Box, parts: list[_Piece]) -> RegionSet:
    """One region set from the cells' pieces: whole regions first (in cell order), then
    the regions cut by the cells, each the union of its pieces (module docstring).
    Linear in the size of the pieces apart from sorting the merged regions' facets."""
    d = box.dim
    N = int(sum(parts[0].widths))
    n_ids = N + 2 * d + 1
    m = parts[0].affine.shape[1]
    packed = np.concatenate([p.packed for p in parts], axis=0)
    n_pieces = packed.shape[0]
    # pieces with one pattern are parts of one region
    if n_pieces:
        order, starts, lens = group_rows(as_words(packed), stable=True)
    else:
        order = starts = lens = np.zeros(0, dtype=np.int64)
    glen = np.empty(n_pieces, dtype=np.int64)
    glen[order] = np.repeat(lens, lens)
    whole = np.flatnonzero(glen == 1)                   # pieces that are whole regions
    multi = lens > 1
    firsts = order[starts[multi]]
    by_first = np.argsort(firsts, kind="stable")        # cut regions in order of appearance
    n_whole, n_cut = whole.size, by_first.size
    n = n_whole + n_cut
    reg_of_piece = np.empty(n_pieces, dtype=np.int64)
    reg_of_piece[whole] = np.arange(n_whole)
    rank = np.empty(n_cut, dtype=np.int64)
    rank[by_first] = n_whole + np.arange(n_cut)
    in_multi = np.repeat(multi, lens)
    reg_of_piece[order[in_multi]] = np.repeat(rank, lens[multi])
    # every piece in region order (the pieces of a cut region next to each other)
    cut_pieces = order[in_multi]
    cut_pieces = cut_pieces[np.argsort(reg_of_piece[cut_pieces], kind="stable")]
    porder = np.concatenate([whole, cut_pieces])
    src = porder[np.concatenate([[True], reg_of_piece[porder][1:] != reg_of_piece[porder][:-1]])] \
        if n_pieces else porder                         # one piece of each region
    merged = np.arange(n) >= n_whole
    # facets: whole regions as they are; a cut region's are its pieces' (cuts removed in
    # the workers), one row per hyperplane id
    rows, cnt = _gather(_cat_ptr(parts, "facet_ptr"), porder)
    fr = np.repeat(reg_of_piece[porder], cnt)
    f_ids = np.concatenate([p.facet_ids for p in parts])[rows]
    f_A = np.concatenate([p.facet_A for p in parts])[rows]
    f_b = np.concatenate([p.facet_b for p in parts])[rows]
    k0 = int(cnt[:n_whole].sum())
    _, fi = np.unique(fr[k0:] * n_ids + f_ids[k0:], return_index=True)   # by region, then id
    keep = np.concatenate([np.arange(k0), k0 + fi])
    fr, f_ids, f_A, f_b = fr[keep], f_ids[keep], f_A[keep], f_b[keep]
    fptr = _ptr(fr, n)
    # vertices: the pieces' vertices (general cells dropped their points on cuts), and
    # from other cells the points on cuts that are vertices of the union
    rows, cnt = _gather(_cat_ptr(parts, "vertex_ptr"), porder)
    vr = np.repeat(reg_of_piece[porder], cnt)
    v_pts = np.concatenate([p.vertices for p in parts])[rows]
    v_cut = np.concatenate([p.v_cut for p in parts])[rows] & merged[vr]
    if v_cut.any():
        cand = _union_vertices(np.flatnonzero(v_cut), vr, v_pts, fptr, f_A, f_b, d)
        sel = np.concatenate([np.flatnonzero(~v_cut), cand])
        sel = sel[np.argsort(vr[sel], kind="stable")]
        vr, v_pts = vr[sel], v_pts[sel]
    vptr = _ptr(vr, n)
    # interior point: a whole region keeps its own; a cut one takes the point of its
    # piece with the largest ball, measured again against the union's facets
    p_int = np.concatenate([p.interior for p in parts])
    p_rad = np.concatenate([p.radius for p in parts])
    interior, radius = p_int[src], p_rad[src]
    if n_cut:
        cp = cut_pieces[np.lexsort((-p_rad[cut_pieces], reg_of_piece[cut_pieces]))]
        cr = reg_of_piece[cp]
        best = cp[np.concatenate([[True], cr[1:] != cr[:-1]])]
        interior[n_whole:] = p_int[best]
        f0 = int(fptr[n_whole])
        slack = f_b[f0:] - np.einsum("fd,fd->f", f_A[f0:], interior[fr[f0:]])
        sub = fptr[n_whole:] - f0
        has = np.diff(sub) > 0
        rad = np.full(n_cut, np.inf)
        rad[has] = np.minimum.reduceat(slack, sub[:-1][has])
        radius[n_whole:] = rad
    touches = np.bincount(fr[f_ids >= N], minlength=n) > 0
    aff = np.concatenate([p.affine for p in parts], axis=0)
    out = RegionSet(
        dim=d, widths=parts[0].widths, packed_patterns=packed[src], vertex_ptr=vptr,
        vertices=v_pts, facet_ptr=fptr, facet_ids=f_ids, facet_A=f_A, facet_b=f_b,
        interior=interior, radius=radius, affine=aff[src].reshape(n, m, d + 1),
        bounded=np.ones(n, dtype=bool), touches_domain=touches,
        partial=any(p.partial for p in parts), domain=box, method="subdivision",
    )
    if all(p.skeleton is not None for p in parts):
        out._skeleton = Skeleton(*(np.concatenate([p.skeleton[k] for p in parts])
                                   for k in range(3)))
    if all(p.edges is not None for p in parts):
        out._edges = _union_edges(parts, reg_of_piece, n)
    return out


def _union_edges(parts: list[_Piece], reg_of_piece: np.ndarray, n: int) -> np.ndarray:
    """The cells' dual-graph edges between regions, each pair once (two convex regions
    share at most one facet)."""
    offs = np.concatenate([[0], np.cumsum([len(p) for p in parts])]).astype(np.int64)
    E_ = np.concatenate([reg_of_piece[p.edges[:, :2] + offs[k]] for k, p in enumerate(parts)])
    if E_.shape[0] == 0:
        return np.zeros((0, 3), dtype=np.int64)
    nrn = np.concatenate([p.edges[:, 2] for p in parts])
    lo, hi = np.minimum(E_[:, 0], E_[:, 1]), np.maximum(E_[:, 0], E_[:, 1])
    _, first = np.unique(lo * n + hi, return_index=True)
    return np.stack([lo[first], hi[first], nrn[first]], axis=1)


def _union_vertices(cand: np.ndarray, vr: np.ndarray, v_pts: np.ndarray, fptr: np.ndarray,
                    f_A: np.ndarray, f_b: np.ndarray, d: int) -> np.ndarray:
    """The candidates (points on cuts of merged regions, from cells that were not in
    general position) that are vertices of their region's union, one per point: those at
    which the union's tight facets have rank ``d``."""
    if cand.size == 0:
        return cand
    ok = np.zeros(cand.size, dtype=bool)
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
    for q in np.flatnonzero(n_tight > d):           # degenerate vertices
        sl = slice(offs[q], offs[q + 1])
        ok[q] = np.linalg.matrix_rank(f_A[pair_f[sl][tight[sl]]], tol=RANK_TOL) == d
    cand = cand[ok]
    if cand.size == 0:
        return cand
    # one point per vertex found by several cells: sort, then merge neighbours that agree
    P = v_pts[cand]
    o = np.lexsort((*P.T[::-1], vr[cand]))
    cand, P = cand[o], P[o]
    same = np.zeros(cand.size, dtype=bool)
    same[1:] = (vr[cand][1:] == vr[cand][:-1]) & np.all(
        np.abs(P[1:] - P[:-1]) <= VERTEX_TOL * (1.0 + np.abs(P[:-1])), axis=1)
    return cand[~same]
