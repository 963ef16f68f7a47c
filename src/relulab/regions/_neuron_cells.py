"""Region enumeration over cells cut along first-layer hyperplanes: no region is cut.

A first-layer neuron's hyperplane is a hyperplane of the whole complex, so every region
lies on one side of it.  Cutting the box along the hyperplanes of ``k`` first-layer
neurons gives up to ``2^k`` cells (one per sign choice), and every region lies in exactly
one cell, whole.  Each cell is enumerated on its own with those neurons' signs fixed
(their hyperplanes are facets of the cell's domain, not added again), so:

* the cells' regions together are exactly the regions of the box: nothing is merged;
* a region's facet on a cutting hyperplane is a domain facet of its cell, relabelled
  as the neuron's facet: the same row ``(-w, b)`` or ``(w, -b)`` one process builds
  from the neuron, bit for bit;
* the dual graph is the union of the cells' graphs plus the edges across the cutting
  hyperplanes: a region with a facet on neuron ``j``'s hyperplane (on its active side)
  meets the region whose pattern differs in bit ``j`` only (in general position no
  other neuron changes sign at a generic point of that facet);
* the vertex skeleton is the union of the cells' skeletons, a vertex on a cutting
  hyperplane kept from one of the cells that hold it.

The cutting neurons are chosen to balance the cells' estimated region counts: the
weight of a sample point is the number of ``d``-subsets of the hyperplanes passing
near it (by the network's local linearisation), a proxy for the vertices, hence the
regions, around it.  What a cell sends back is its region arrays as they are (no
Python object per region); the driver concatenates them.
"""

from __future__ import annotations

import os
import time
from math import comb
from typing import Any

import numpy as np

from ..domain import Box, DomainError, Polytope
from ..errors import RelulabError, is_int_at_least
from ..network import Network
from . import _engine as E
from ._arrays import EngineRun, RegionArrays
from ._assembly import stream_cells, with_problem_ties
from ._skeleton import Degenerate, TooBig, skeleton_regions
from ._types import RegionSet, Skeleton

__all__ = ["estimate_regions", "choose_split_neurons", "neuron_cells", "enumerate_neuron_cells",
           "run_cells", "ONE_PROCESS_REGIONS"]

# sample points of the box for the estimate that balances the cells
SPLIT_SAMPLES = 4096
# "near" for the density estimate: this fraction of the box's mean side
NEAR_FRACTION = 0.1
# below this estimated number of regions (and with no ``cells`` asked for) a parallel
# enumeration or count runs in one process: starting workers and moving regions between
# processes would cost about as much as the work (5-D, 48,067 regions: 0.45 s in one
# process, about break-even on 2 workers; 4-D, 80,487 regions: 11 s in one process,
# 5.5 s on 2 workers with 8 cells)
ONE_PROCESS_REGIONS = 50_000
# largest number of cutting neurons (2^k cells)
MAX_SPLIT_NEURONS = 10
# cells per worker by default: several cells per worker let the heaviest-first order
# even out the estimate's errors, and smaller cells cost less per region (5-D, 1.26M
# regions, CPU seconds of the two workers together: 25.8 with 4 cells, 21.9 with 8,
# 21.5 with 16; one process 25.6)
CELLS_PER_WORKER = 4
# more cells than this is a typo: splitting into them is the slow part (a pattern estimate,
# or a sign cell, each)
MAX_CELLS = 4096


def _local_weights(net: Network, X: np.ndarray, box: Box) -> tuple[np.ndarray, np.ndarray]:
    """First-layer pre-activations at the sample points and each point's weight: the
    number of ``d``-subsets of the neuron hyperplanes within the near distance (distance
    to a neuron's hyperplane by its local linearisation ``|z| / |grad z|``)."""
    d = box.dim
    near = NEAR_FRACTION * float(np.mean(box.hi - box.lo))
    Ws = [np.asarray(W, dtype=np.float64) for W in net.weights]
    bs = [np.asarray(b, dtype=np.float64) for b in net.biases]
    H, J = X, np.broadcast_to(np.eye(d), (X.shape[0], d, d))
    counts = np.zeros(X.shape[0], dtype=np.int64)
    Z1 = None
    for k in range(len(net.widths)):
        Z = H @ Ws[k].T + bs[k]
        G = np.einsum("ij,njd->nid", Ws[k], J)
        g = np.sqrt(np.einsum("nid,nid->ni", G, G))
        with np.errstate(divide="ignore", invalid="ignore"):
            dist = np.where(g > 0, np.abs(Z) / g, np.inf)
        counts += (dist < near).sum(1)
        if k == 0:
            Z1 = Z
        act = Z > 0
        H, J = np.maximum(Z, 0.0), G * act[:, :, None]
    w = np.array([comb(int(c), d) for c in range(int(counts.max(initial=0)) + 1)], float)
    return Z1, w[counts]


# the last sample (network, corners, result): estimating, choosing the neurons and
# ordering the cells of one run use the same sample (it only plans the work)
_LAST: list = []


def _sample(net: Network, box: Box) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sample points of the estimates (fixed seed), their first-layer
    pre-activations and their weights."""
    if _LAST and _LAST[0] is net and np.array_equal(_LAST[1], box.lo) \
            and np.array_equal(_LAST[2], box.hi):
        return _LAST[3]
    X = np.random.default_rng(0).uniform(box.lo, box.hi, size=(SPLIT_SAMPLES, box.dim))
    if not net.widths:
        out = X, np.zeros((X.shape[0], 0)), np.ones(X.shape[0])
    else:
        out = (X, *_local_weights(net, X, box))
    _LAST[:] = [net, box.lo.copy(), box.hi.copy(), out]
    return out


# regions per unit of the mean weight, per dimension: regions ~ C1 * C2^d * mean weight
# * vol(box) / near^d, fitted on random networks of benchmarks/parallel.py's kind in 2-D
# to 5-D (within a factor 1.5 there); an estimate, used only to plan the work
_FIT_C1, _FIT_C2 = 1.58, 0.313


def estimate_regions(net: Network, box: Box) -> int:
    """A rough estimate of the number of regions of ``net`` in ``box`` (from the
    hyperplanes passing near sample points; within a factor of about 2 on random
    networks), used to plan parallel work, never as an answer.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> rng = np.random.default_rng(0)
        >>> net = Network([rng.normal(size=(12, 2)), rng.normal(size=(1, 12))],
        ...               [rng.normal(size=12), np.zeros(1)])
        >>> from relulab import regions
        >>> n, est = regions.count(net), estimate_regions(net, Box([-1, -1], [1, 1]))
        >>> bool(n / 3 < est < 3 * n)
        True
    """
    if not net.widths:
        return 1
    _, _, w = _sample(net, box)
    d = box.dim
    near = NEAR_FRACTION * float(np.mean(box.hi - box.lo))
    vol = float(np.prod(box.hi - box.lo))
    return max(1, int(round(_FIT_C1 * _FIT_C2**d * float(w.mean()) * vol / near**d)))


def choose_split_neurons(net: Network, box: Box, k: int) -> list[int]:
    """Up to ``k`` first-layer neurons whose hyperplanes cut ``box`` into cells of
    balanced estimated region counts (greedy: each next neuron makes the heaviest cell
    lightest); fewer when fewer hyperplanes cross the box.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> net = Network([np.eye(2), np.ones((1, 2))], [np.array([0.0, 0.9]), np.zeros(1)])
        >>> choose_split_neurons(net, Box([-1, -1], [1, 1]), 1)   # x = 0 halves the box
        [0]
    """
    if not net.widths:
        return []
    _, Z1, w = _sample(net, box)
    W0 = np.asarray(net.weights[0], dtype=np.float64)
    b0 = np.asarray(net.biases[0], dtype=np.float64)
    # a hyperplane crosses the box when the box's extreme values have both signs
    mid, half = (box.hi + box.lo) / 2, (box.hi - box.lo) / 2
    c = W0 @ mid + b0
    r = np.abs(W0) @ half
    cand = [j for j in range(W0.shape[0]) if np.any(W0[j]) and abs(c[j]) < r[j]]
    if w.sum() <= 0:
        w = np.ones_like(w)
    cell = np.zeros(Z1.shape[0], dtype=np.int64)
    chosen: list[int] = []
    pos = Z1 > 0
    for _ in range(min(k, MAX_SPLIT_NEURONS)):
        best, best_key = None, None
        for j in cand:
            if j in chosen:
                continue
            sub = 2 * cell + pos[:, j]
            cw = np.bincount(sub, weights=w, minlength=2 ** (len(chosen) + 1))
            key = (cw.max(), float((cw**2).sum()))
            if best_key is None or key < best_key:
                best, best_key = j, key
        if best is None:
            break
        chosen.append(best)
        cell = 2 * cell + pos[:, best]
    return chosen


def _cell_domain(net: Network, box: Box, neurons: list[int], signs: tuple[bool, ...]) -> Polytope:
    """The box's rows (Box.to_polytope() order), then one row per cutting neuron: its
    active side ``-(w x + b) <= 0`` or its inactive side ``w x + b <= 0``."""
    d = box.dim
    W0 = np.asarray(net.weights[0], dtype=np.float64)
    b0 = np.asarray(net.biases[0], dtype=np.float64)
    A = [np.eye(d), -np.eye(d)]
    b = [box.hi, -box.lo]
    for j, s in zip(neurons, signs, strict=True):
        sg = -1.0 if s else 1.0
        A.append(sg * W0[j][None])
        b.append(np.array([-sg * b0[j]]))
    return Polytope(np.vstack(A), np.concatenate(b), check_empty=False)


def neuron_cells(net: Network, box: Box, neurons: list[int]) -> list[tuple[bool, ...]]:
    """The sign choices of ``neurons`` whose cells in ``box`` are full-dimensional
    (an LP each), heaviest first by the same estimate that chose the neurons.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> net = Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
        >>> sorted(neuron_cells(net, Box([-1, -1], [1, 1]), [0, 1]))
        [(False, False), (False, True), (True, False), (True, True)]
    """
    from ..lp import chebyshev_center

    k = len(neurons)
    _, Z1, w = _sample(net, box)
    code = np.zeros(Z1.shape[0], dtype=np.int64)
    for j in neurons:
        code = 2 * code + (Z1[:, j] > 0)
    est = np.bincount(code, weights=w, minlength=2**k)
    out = []
    for c in range(2**k):
        signs = tuple(bool((c >> (k - 1 - t)) & 1) for t in range(k))
        dom = _cell_domain(net, box, neurons, signs)
        x, rad = chebyshev_center(dom.A, dom.b)
        if x is not None and rad > _THIN * float(np.max(box.hi - box.lo)):
            out.append((float(est[c]), signs))
    out.sort(key=lambda t: -t[0])
    return [s for _, s in out]


# a cell whose inscribed ball is thinner than this (relative to the box) holds no region
# the engine could resolve: both engines reject such a domain as not full-dimensional
_THIN = 1e-9  # tol: a cell this thin is numerically empty


class _Part:
    """One cell's regions as arrays, facets and skeleton relabelled to the whole box."""

    def __init__(self, arrays: RegionArrays, edges: np.ndarray | None,
                 skeleton: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
                 partial: bool, engine: str, near_ties: int = 0) -> None:
        self.arrays, self.edges, self.skeleton = arrays, edges, skeleton
        self.partial, self.engine, self.near_ties = partial, engine, near_ties


class _NeuronCellTask:
    """Enumerate one cell (runs in a worker)."""

    def __init__(self, net: Network, box: Box, neurons: list[int]) -> None:
        self.net, self.lo, self.hi, self.neurons = net, box.lo, box.hi, neurons

    def __call__(self, item: tuple[tuple[bool, ...], bool]) -> _Part:
        signs, vertices = item
        box = Box(self.lo, self.hi)
        dom = _cell_domain(self.net, box, self.neurons, signs)
        pb = E.Problem(self.net, dom)
        pb.start_box = box
        fixed = dict(zip(self.neurons, signs, strict=True))
        try:
            # (the problem's own ties as one process adds them: a cell run without them
            # certified 2 regions of an exact network that has 3)
            run = with_problem_ties(pb, skeleton_regions(pb, vertices=vertices, fixed=fixed))
        except (Degenerate, TooBig) as e:
            run = EngineRun(engine="cells", fallback=str(e))
            try:
                run.chunks = list(stream_cells(pb, False, None, run))
            except DomainError:
                run.chunks = []                 # a numerically empty cell: no regions
        if run.chunks:
            arrays = RegionArrays.concat(run.chunks)
        else:
            arrays = RegionArrays.empty(pb.d, pb.Ws[-1].shape[0], pb.N)
        return _relabel(pb, arrays, run, self.neurons, signs, vertices)


def _relabel(pb: E.Problem, a: RegionArrays, run: EngineRun, neurons: list[int],
             signs: tuple[bool, ...], vertices: bool) -> _Part:
    """Rename the cell's cutting rows (domain rows 2d, 2d + 1, ...) as their neurons,
    re-sort each region's facets by id as one process has them, and keep the skeleton's
    vertices on cutting hyperplanes only in the cell on the active side of them all."""
    N, d = pb.N, pb.d
    ids = a.facet_ids
    rename = np.arange(pb.n_ids, dtype=np.int64)
    rename[N + 2 * d + np.arange(len(neurons))] = neurons
    new = rename[ids]
    n = a.n
    fr = np.repeat(np.arange(n), np.diff(a.facet_ptr))
    if len(neurons) and np.any(new != ids):
        o = np.lexsort((new, fr))
        a.facet_ids, a.facet_A, a.facet_b = new[o], a.facet_A[o], a.facet_b[o]
        a.touches_domain = np.bincount(fr[a.facet_ids >= N], minlength=n) > 0
    skel = None
    if run.skeleton is not None:
        sk = run.skeleton
        sid = rename[sk.ids]
        on = (sk.ids >= N + 2 * d) & (sk.ids < N + 2 * d + len(neurons))
        t_on = np.where(on, sk.ids - (N + 2 * d), 0)
        s_arr = np.asarray(signs, dtype=bool)
        keep = ~np.any(on & ~s_arr[t_on], axis=1) if len(neurons) else np.ones(sk.X.shape[0], bool)
        S = sk.signs[keep].copy()
        for t, j in enumerate(neurons):
            rows = np.flatnonzero(np.any(on[keep] & (t_on[keep] == t), axis=1))
            S[rows, j >> 3] &= np.uint8(~(128 >> (j & 7)) & 0xFF)
        skel = (sk.X[keep], sid[keep], S)
    return _Part(a, run.edges, skel, run.partial, run.engine, run.near_ties)


def enumerate_neuron_cells(net: Network, box: Box, *, parallel: str = "local",
                           workers: int | None = None, cells: int | None = None,
                           address: str | None = None, vertices: bool = True) -> RegionSet:
    """Every region of ``net`` in ``box``, enumerated over cells cut along first-layer
    hyperplanes in parallel (module docstring): the same regions, facets, vertices and
    graph as one process, no region cut.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> net = Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
        >>> rs = enumerate_neuron_cells(net, Box([-1, -1], [1, 1]), workers=1, cells=4)
        >>> len(rs), sorted(rs.patterns.sum(1).tolist()), rs.info["cells"]
        (4, [0, 1, 1, 2], 4)
    """
    t0 = time.perf_counter()
    if workers is None:
        workers = os.cpu_count() or 1
    if cells is not None and not is_int_at_least(cells, 1):
        raise RelulabError(f"cells must be an integer between 1 and {MAX_CELLS}, got {cells!r}")
    n_cells = cells if cells is not None else CELLS_PER_WORKER * workers
    if not 1 <= n_cells <= MAX_CELLS:
        raise RelulabError(f"cells must be between 1 and {MAX_CELLS}, got {n_cells}"
                           + ("" if cells is not None else f" ({CELLS_PER_WORKER} per worker)"))
    k = int(np.ceil(np.log2(n_cells))) if n_cells > 1 else 0
    neurons = choose_split_neurons(net, box, k)
    signs = neuron_cells(net, box, neurons)
    task = _NeuronCellTask(net, box, neurons)
    parts = run_cells(task, [(s, vertices) for s in signs], parallel, workers, address,
                      allow_partial=True)
    # Ctrl-C: every finished cell's regions are whole and exact; the set is partial
    interrupted = any(p is None for p in parts)
    if not interrupted and not vertices and any(p.skeleton is None for p in parts):
        # a cell fell back to vertex lists: vertex lists everywhere (the skeleton of the
        # other cells would miss the vertices on hyperplanes shared with that cell)
        again = [i for i, p in enumerate(parts) if p.skeleton is not None]
        redo = run_cells(task, [(signs[i], True) for i in again], parallel, workers, address)
        for i, p in zip(again, redo, strict=True):
            parts[i] = p
    done = [p for p in parts if p is not None]
    rs = _concat(box, net, done, neurons, interrupted=interrupted)
    rs.seconds = time.perf_counter() - t0
    rs.info.update(engine="stitched", split="first-layer hyperplanes", split_neurons=neurons,
                   cells=len(signs), parallel=parallel,
                   cell_engines=sorted({p.engine for p in done}))
    if interrupted:
        rs.info.update(interrupted=True, cells_finished=len(done))
    rs.net = net.float() if net.is_exact else net
    return rs


def run_cells(task: Any, items: list, parallel: str, workers: int | None,
              address: str | None, allow_partial: bool = False) -> list[Any]:
    """Every item's result, in item order, on the local pool or Ray (a failed cell
    raises; an interrupted map raises KeyboardInterrupt, or with ``allow_partial``
    leaves None for the items not finished)."""
    from ..parallel import pmap

    out: list[Any] = [None] * len(items)
    for i, res in pmap(task, items, backend="ray" if parallel == "ray" else "local",
                       workers=workers, address=address):
        if isinstance(res, dict) and res.get("status") == "error":
            raise RelulabError(f"cell {i} of the parallel enumeration failed: {res['reason']}")
        out[i] = res
    if any(r is None for r in out) and not allow_partial:
        raise KeyboardInterrupt
    return out


def _concat(box: Box, net: Network, parts: list[_Part], neurons: list[int],
            interrupted: bool = False) -> RegionSet:
    """One region set from the cells' parts (cell after cell), with the dual graph when
    every cell has one, completed across the cutting hyperplanes (``interrupted``: some
    cells are missing; the set is partial and has no graph)."""
    d = box.dim
    widths = tuple(int(w) for w in net.widths)
    N = int(sum(widths))
    m = int(np.asarray(net.weights[-1]).shape[0])
    nonempty = [p.arrays for p in parts if p.arrays.n]
    arrays = RegionArrays.concat(nonempty) if nonempty else RegionArrays.empty(d, m, N)
    rs = RegionSet(dim=d, widths=widths, **arrays.as_fields(),
                   partial=interrupted or any(p.partial for p in parts), domain=box, method="subdivision")
    ties = sum(p.near_ties for p in parts)
    if ties:
        # a region thinner than the sign tolerance may be merged (see _engine._count_ties)
        rs.certified = False
        rs.info["near_ties"] = ties
    if parts and all(p.skeleton is not None for p in parts):   # (none: interrupted before any cell)
        rs._skeleton = Skeleton(*(np.concatenate([p.skeleton[i] for p in parts])
                                  for i in range(3)))
    if all(p.edges is not None for p in parts) and not rs.partial:
        cross = _cross_edges(rs, neurons)
        if cross is not None:
            # the cells' edges with their regions renumbered, then the crossing ones
            sizes = [p.edges.shape[0] for p in parts] + [cross.shape[0]]
            E_ = np.empty((sum(sizes), 3), dtype=np.int64)
            e0 = r0 = 0
            for p in parts:
                e1 = e0 + p.edges.shape[0]
                np.add(p.edges[:, :2], r0, out=E_[e0:e1, :2])
                E_[e0:e1, 2] = p.edges[:, 2]
                e0, r0 = e1, r0 + p.arrays.n
            E_[e0:] = cross
            rs._edges = E_
    return rs


def _cross_edges(rs: RegionSet, neurons: list[int]) -> np.ndarray | None:
    """Edges across the cutting hyperplanes: a region on the active side of neuron
    ``j`` with a facet on it, and the region with the same pattern but bit ``j`` off
    (None when some such region is missing: not in general position)."""
    n = len(rs)
    if not neurons or n == 0:
        return np.zeros((0, 3), np.int64)
    table = rs.pattern_table()
    out = []
    for j in neurons:
        r = np.searchsorted(rs.facet_ptr, np.flatnonzero(rs.facet_ids == j), side="right") - 1
        r = r[(rs.packed_patterns[r, j >> 3] & np.uint8(128 >> (j & 7))) != 0]
        Q = rs.packed_patterns[r].copy()
        Q[:, j >> 3] &= np.uint8(~(128 >> (j & 7)) & 0xFF)
        other = table.find(Q)
        if np.any(other < 0):
            return None
        out.append(np.stack([np.minimum(r, other), np.maximum(r, other),
                             np.full(r.size, j)], axis=1))
    return np.concatenate(out)
