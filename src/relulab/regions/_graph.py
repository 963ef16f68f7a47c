"""The adjacency (dual) graph of the polyhedral complex of linear regions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import RelulabError
from ..network import Network
from ..results import Result
from ..tolerance import PROBE_STEP, scaled_tol
from ._bfs import _facet_center
from ._types import RegionSet, neuron_label, pattern_index

__all__ = ["adjacency", "graph", "graph_summary", "GraphSummary"]


def _check_set(rs: Any, net: Any, where: str) -> None:
    """One error for a wrong argument: a RegionSet, and a network of its input size."""
    if not isinstance(rs, RegionSet):
        raise RelulabError(f"{where}: expected a RegionSet (regions.enumerate), got {type(rs).__name__}")
    if net is not None and not (isinstance(net, Network) and net.input_dim == rs.dim):
        raise RelulabError(f"{where}: net must be the Network the regions came from "
                           f"({rs.dim} inputs), got {net!r}")


def adjacency(rs: RegionSet, net: Network | None = None) -> np.ndarray:
    """Edges ``(i, j, neuron)`` of the dual graph, ``i < j``, as an (E, 3) int array.

    Two regions are joined when they share a facet; the facet lies on the hyperplane
    of ``neuron``, and the two activation patterns differ in that neuron (and only in
    it, unless another neuron shares or bends along the same hyperplane: a duplicate, a
    negated copy or a deeper neuron, which flips with it).  A
    facet whose pattern-flipped neighbour is missing (possible only at degenerate
    input, where a bent hyperplane runs along the facet) is resolved by stepping a
    little across the facet's centre and locating the region there.

    Example:
        >>> import numpy as np
        >>> from relulab import Box, Network, regions
        >>> net = Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
        >>> rs = regions.enumerate(net, Box([-1, -1], [1, 1]))
        >>> E = adjacency(rs)
        >>> E.shape, all((rs[i].pattern != rs[j].pattern).sum() == 1 for i, j, _ in E)
        ((4, 3), True)
    """
    _check_set(rs, net, "adjacency")
    n = len(rs)
    N = rs.n_neurons
    if n == 0 or N == 0:
        return np.zeros((0, 3), dtype=np.int64)
    if rs._edges is not None and not rs.partial:
        # the skeleton engine found each facet with both of its regions
        return rs._edges
    fr = np.repeat(np.arange(n), np.diff(rs.facet_ptr))
    fid = rs.facet_ids
    isn = fid < N
    r = fr[isn]
    j = fid[isn]
    P = rs.packed_patterns[r].copy()
    byte = j // 8
    bit = (7 - (j % 8)).astype(np.uint8)
    P[np.arange(P.shape[0]), byte] ^= (np.uint8(1) << bit)
    s = rs.pattern_table().find(P)
    # the neighbour must carry the same neuron as a facet
    key_all = fr.astype(np.int64) * (N + 1) + np.where(isn, fid, N)
    key_sorted = np.sort(key_all)
    ok = s >= 0
    q = s[ok] * (N + 1) + j[ok]
    pos = np.searchsorted(key_sorted, q)
    pos = np.minimum(pos, key_sorted.shape[0] - 1)
    good = np.zeros_like(ok)
    good[np.flatnonzero(ok)] = key_sorted[pos] == q
    E = np.stack([r[good], s[good], j[good]], axis=1)
    # degenerate leftovers: probe across the facet.  A partial set's frontier facets have
    # their neighbours missing because those were never enumerated: probing each of them
    # (10 s for 37k regions found in 5 s) would find nothing but degenerate edges, and
    # the graph of a partial set is partial anyway
    miss = np.flatnonzero(~good)
    if miss.size and not rs.partial:
        net = net if net is not None else rs.net
        if net is not None:
            E = np.concatenate([E, _probe(rs, net, np.flatnonzero(isn)[miss])], axis=0)
    E = E[E[:, 0] != E[:, 1]]
    lo = np.minimum(E[:, 0], E[:, 1])
    hi = np.maximum(E[:, 0], E[:, 1])
    E = np.unique(np.stack([lo, hi, E[:, 2]], axis=1), axis=0)
    # one edge per pair of regions (a degenerate facet may lie on two hyperplanes)
    _, first = np.unique(E[:, :2], axis=0, return_index=True)
    return E[np.sort(first)]


def _probe(rs: RegionSet, net: Network, facets: np.ndarray) -> np.ndarray:
    """Edges found by stepping across facets (global facet indices)."""
    n = len(rs)
    fr = np.repeat(np.arange(n), np.diff(rs.facet_ptr))
    out = []
    for f in facets:
        r = int(fr[f])
        a, b = rs.facet_A[f], rs.facet_b[f]
        V = rs.vertices[rs.vertex_ptr[r] : rs.vertex_ptr[r + 1]]
        if len(V) == 0:
            # no vertices kept (parallel runs keep them in the skeleton only): the
            # centre of the facet from the region's facet rows, by one LP
            lo, hi = rs.facet_ptr[r], rs.facet_ptr[r + 1]
            A_r, b_r = rs.facet_A[lo:hi], rs.facet_b[lo:hi]
            nr = np.linalg.norm(A_r, axis=1)
            if np.any(nr == 0):
                continue
            c = _facet_center(A_r / nr[:, None], b_r / nr, int(f - lo))
            if c is None:
                continue
        else:
            on = np.abs(V @ a - b) <= scaled_tol(np.abs(V).max())
            if not on.any():
                continue
            c = V[on].mean(0)
        eps = PROBE_STEP * (1 + float(np.abs(c).max()))
        p = c + eps * a
        if rs.domain is not None and not bool(rs.domain.contains(p, tol=0.0)):
            continue
        # locate's near-zero fallback: a deeper neuron identically 0 on the region across
        # the facet reads 1e-16 at the probe, and its raw pattern matched no region (an
        # edge between two regions on a line carried by duplicate neurons was missed)
        s = rs.locate(p[None])[0] if rs.net is not None else pattern_index(rs, net.pattern_vector(p[None]))[0]
        if s >= 0 and s != r:
            out.append((r, s, int(rs.facet_ids[f])))
    return np.array(out, dtype=np.int64).reshape(-1, 3)


@dataclass(frozen=True)
class GraphSummary(Result):
    """Summary statistics of the dual graph.

    Example:
        >>> import numpy as np
        >>> from relulab import Box, Network, regions
        >>> net = Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
        >>> rs = regions.enumerate(net, Box([-1, -1], [1, 1]))
        >>> s = graph_summary(graph(rs), rs)
        >>> s.max_degree, s.bounded, s.touching_domain, s.dim
        (2, 4, 4, 2)
    """

    regions: int
    edges: int
    avg_degree: float
    max_degree: int
    diameter: int | None
    bounded: int
    touching_domain: int
    connected: bool
    dim: int


def graph(rs: RegionSet, net: Network | None = None) -> Any:
    """The networkx graph of the complex: node ``i`` is region ``i`` (attributes
    ``pattern``, ``bounded``, ``touches_domain``, ``interior_point``); an edge joins
    two regions sharing a facet and carries ``neuron`` (flat id) and ``layer``/``index``.

    Example:
        >>> import numpy as np
        >>> from relulab import Network, Box, regions
        >>> net = Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
        >>> G = regions.graph(regions.enumerate(net, Box([-1, -1], [1, 1])))
        >>> G.number_of_nodes(), G.number_of_edges()
        (4, 4)
    """
    import networkx as nx

    E = adjacency(rs, net)
    G = nx.Graph()
    pats = rs.patterns
    for i in range(len(rs)):
        G.add_node(
            i,
            pattern="".join("1" if p else "0" for p in pats[i]),
            bounded=bool(rs.bounded[i]),
            touches_domain=bool(rs.touches_domain[i]),
            interior_point=rs.interior[i],
        )
    for a, b, j in E.tolist():
        layer, idx = neuron_label(rs.widths, j)
        G.add_edge(a, b, neuron=j, layer=layer, index=idx)
    G.graph["summary"] = graph_summary(G, rs)
    return G


def exact_diameter(A: Any) -> int:
    """Exact diameter of a connected graph (sparse adjacency matrix): eccentricity
    bounds (Takes and Kosters' BoundingDiameters) with breadth-first searches done by
    scipy, so usually only a handful of searches are needed."""
    from scipy.sparse.csgraph import shortest_path

    n = A.shape[0]
    lo = np.zeros(n)
    hi = np.full(n, np.inf)
    cand = np.ones(n, dtype=bool)
    d_lo, d_hi = 0.0, np.inf
    pick_high = True
    v = int(np.argmax(np.diff(A.indptr)))  # start at a node of maximum degree
    while cand.any() and d_lo < d_hi:
        dist = shortest_path(A, method="D", unweighted=True, indices=v)
        e = float(dist.max())
        lo = np.maximum(lo, np.maximum(dist, e - dist))
        hi = np.minimum(hi, e + dist)
        d_lo = max(d_lo, float(lo.max()))
        d_hi = min(d_hi, float(hi.max()))
        cand[v] = False
        cand &= ~((hi <= d_lo) & (lo >= d_hi / 2)) & ~(lo == hi)
        if not cand.any():
            break
        idx = np.flatnonzero(cand)
        v = int(idx[np.argmax(hi[idx])] if pick_high else idx[np.argmin(lo[idx])])
        pick_high = not pick_high
    return int(d_lo)


def graph_summary(G: Any, rs: RegionSet | None = None, *, diameter: bool = True) -> GraphSummary:
    """Regions, edges, average and maximum degree, diameter (exact, by networkx with
    bounds; ``None`` when the graph is disconnected or ``diameter=False``), and the
    numbers of bounded and domain-touching regions.

    Example:
        >>> import numpy as np
        >>> from relulab import Box, Network, regions
        >>> net = Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
        >>> rs = regions.enumerate(net, Box([-1, -1], [1, 1]))
        >>> s = graph_summary(graph(rs), rs)
        >>> s.regions, s.edges, s.avg_degree, s.diameter, s.connected
        (4, 4, 2.0, 2, True)
    """
    import networkx as nx

    if not isinstance(G, nx.Graph):
        raise RelulabError(f"graph_summary: expected the networkx graph of regions.graph(rs), got {type(G).__name__}")
    n = G.number_of_nodes()
    m = G.number_of_edges()
    degs = [d for _, d in G.degree()]
    conn = n > 0 and nx.is_connected(G)
    diam = None
    if diameter and conn:
        diam = exact_diameter(nx.to_scipy_sparse_array(G, format="csr")) if n > 1 else 0
    bounded = sum(1 for _, a in G.nodes(data="bounded") if a)
    touching = sum(1 for _, a in G.nodes(data="touches_domain") if a)
    return GraphSummary(
        regions=n,
        edges=m,
        avg_degree=(2.0 * m / n) if n else 0.0,
        max_degree=max(degs) if degs else 0,
        diameter=diam,
        bounded=bounded,
        touching_domain=touching,
        connected=bool(conn),
        dim=rs.dim if rs is not None else -1,
    )
