"""Linear regions: counts against theory, coverage and disjointness by sampling, the
adjacency graph against its definition, slices, and the LP-BFS cross-check."""

from __future__ import annotations

import itertools
from fractions import Fraction
from math import comb

import numpy as np
import pytest
from conftest import random_network

from relulab import Box, Network, Polytope, regions
from relulab.errors import RelulabError
from relulab.tolerance import MIN_RADIUS, STRICT_TOL


def _patset(rs) -> set[bytes]:
    return {bytes(r) for r in rs.packed_patterns}


# ------------------------------------------------------------------ theory
@pytest.mark.parametrize("d,n", [(1, 7), (2, 12), (3, 10), (4, 8)])
def test_hyperplane_arrangement_count(d, n):
    rng = np.random.default_rng(d * 100 + n)
    W = rng.normal(size=(n, d))
    b = rng.normal(size=n)
    verts = [np.linalg.solve(W[list(c)], -b[list(c)]) for c in itertools.combinations(range(n), d)]
    M = 1.5 * float(np.abs(verts).max()) + 1.0
    net = Network([W, rng.normal(size=(1, n))], [b, np.zeros(1)])
    box = Box(-M * np.ones(d), M * np.ones(d))
    expected = sum(comb(n, i) for i in range(d + 1))
    assert regions.count(net, box) == expected
    rs = regions.enumerate(net, box)
    assert len(rs) == expected
    assert len(_patset(rs)) == expected


def _tent() -> Network:
    # t(x) = 2 relu(x) - 4 relu(x - 1/2): the tent map on [0, 1]
    F = Fraction
    return Network([[[F(1)], [F(1)]], [[F(2), F(-4)]]], [[F(0), F(-1, 2)], [F(0)]])


@pytest.mark.parametrize("L", [1, 2, 3, 5])
def test_sawtooth_pieces_exact(L):
    t = _tent()
    net = t
    for _ in range(L - 1):
        net = t.compose(net)
    seg = regions.along_segment(net, [Fraction(0)], [Fraction(1)])
    assert seg.n_pieces == 2**L
    assert list(seg.breakpoints) == [Fraction(k, 2**L) for k in range(2**L + 1)]
    # values alternate 0, 1, 0, ... and slopes are +-2^L
    assert list(seg.values[:, 0]) == [k % 2 for k in range(2**L + 1)]
    assert {abs(s) for s in seg.slopes[:, 0]} == {2**L}
    # the float enumeration of the 1-D complex gives the same intervals
    rs = regions.enumerate(net.float(), Box([0.0], [1.0]))
    assert len(rs) == 2**L
    ends = sorted({round(float(v), 12) for v in rs.vertices[:, 0]})
    assert ends == [k / 2**L for k in range(2**L + 1)]


# ------------------------------------------------------------ random nets
NETS = [
    ([2, 8, 6, 1], 0),
    ([2, 10, 10, 2], 1),
    ([3, 7, 5, 1], 2),
    ([3, 6, 4, 3, 1], 3),
]


@pytest.fixture(scope="module", params=NETS, ids=lambda p: "-".join(map(str, p[0])))
def case(request):
    dims, seed = request.param
    net = random_network(np.random.default_rng(seed), dims, skip=(seed == 1))
    d = dims[0]
    box = Box(-np.ones(d), np.ones(d))
    return net, box, regions.enumerate(net, box)


def test_cover_and_affine_maps(case):
    net, box, rs = case
    X = box.sample(10_000, rng=7)
    idx = rs.locate(X)
    assert np.all(idx >= 0)  # every sampled pattern was enumerated
    # the point satisfies its region's H-representation, and the region's affine map
    # reproduces the network
    for i in np.unique(idx):
        R = rs[int(i)]
        pts = X[idx == i]
        assert np.all(R.contains(pts, tol=1e-9))
        C, c = R.affine
        assert np.allclose(pts @ C.T + c, net(pts), atol=1e-9)


def test_interior_points_strict_and_disjoint(case):
    net, box, rs = case
    N = rs.n_neurons
    pats = rs.patterns
    P = rs.interior
    Z = np.concatenate(net.preactivations(P), axis=1)
    assert np.all(np.abs(Z) > 0)
    assert np.array_equal(Z > 0, pats)  # the interior point has the region's pattern
    assert np.all(box.contains(P, tol=0.0))
    assert np.all(rs.radius > MIN_RADIUS)
    for i in range(len(rs)):
        R = rs[i]
        assert np.all(R.slack(R.interior_point) > STRICT_TOL)
        assert R.A.shape[0] >= rs.dim + 1  # bounded regions have at least d + 1 facets
    # disjoint: each interior point lies (strictly) in exactly one region
    inside = np.zeros(len(rs), dtype=int)
    for i in range(len(rs)):
        R = rs[i]
        inside += np.all(P @ R.A.T < R.b - STRICT_TOL, axis=1)
    assert np.all(inside == 1)
    assert len(_patset(rs)) == len(rs)
    assert N == net.n_neurons


def test_matches_lp_bfs(case):
    net, box, rs = case
    bf = regions.enumerate(net, box, method="bfs")
    assert _patset(bf) == _patset(rs)
    # the minimal H-representations agree (facet ids per pattern)
    mine = {bytes(rs.packed_patterns[i]): set(rs[i].facet_ids.tolist()) for i in range(len(rs))}
    for i in range(len(bf)):
        assert set(bf[i].facet_ids.tolist()) == mine[bytes(bf.packed_patterns[i])]


def test_graph_edges_are_single_flips_across_shared_facets(case):
    net, box, rs = case
    G = regions.graph(rs)
    pats = rs.patterns
    assert G.number_of_nodes() == len(rs)
    for a, b, data in G.edges(data=True):
        diff = np.flatnonzero(pats[a] != pats[b])
        assert diff.tolist() == [data["neuron"]]
        assert data["neuron"] in rs[a].facet_ids and data["neuron"] in rs[b].facet_ids
        # the two regions really touch: a point on the shared facet is in both
        Ra, Rb = rs[a], rs[b]
        row = int(np.flatnonzero(Ra.facet_ids == data["neuron"])[0])
        on = np.abs(Ra.vertices @ Ra.A[row] - Ra.b[row]) < 1e-9
        mid = Ra.vertices[on].mean(0)
        assert Rb.contains(mid, tol=1e-8)
    # every neuron facet has a neighbour across it (general position)
    n_neuron_facets = int(sum((rs[i].facet_ids < rs.n_neurons).sum() for i in range(len(rs))))
    assert 2 * G.number_of_edges() == n_neuron_facets
    s = G.graph["summary"]
    assert s.connected and s.regions == len(rs) and s.diameter >= 1
    import networkx as nx

    assert s.diameter == nx.diameter(G)
    assert s.touching_domain == int(rs.touches_domain.sum())


def test_slice_polygons_tile_window():
    net = random_network(np.random.default_rng(5), [3, 9, 7, 1])
    rng = np.random.default_rng(1)
    o, u, v = rng.normal(size=3), rng.normal(size=3), rng.normal(size=3)
    win = (-1.5, 2.0, -0.5, 1.0)
    sl = regions.slice2d(net, o, u, v, window=win)
    areas = np.array([p.area for p in sl.polygons])
    assert np.all(areas > 0)
    assert np.isclose(areas.sum(), 3.5 * 1.5, rtol=1e-10)
    # each polygon's affine map matches the network at its centroid
    for p in sl.polygons:
        st = p.vertices.mean(0)
        assert np.allclose(p.C @ st + p.c, net(sl.to_point(st))[0], atol=1e-9)


def test_along_segment_matches_sampling():
    net = random_network(np.random.default_rng(8), [3, 12, 9, 2])
    a, b = -np.ones(3), np.array([1.0, 0.5, 1.0])
    seg = regions.along_segment(net, a, b)
    t = np.linspace(0, 1, 4001)
    X = a + t[:, None] * (b - a)
    assert np.allclose(seg(t), net(X), atol=1e-9)
    # each kink is a real change of the activation pattern
    for tk in seg.kinks:
        pa = net.pattern_vector((a + (tk - 1e-7) * (b - a))[None])
        pb = net.pattern_vector((a + (tk + 1e-7) * (b - a))[None])
        assert np.any(pa != pb)
    # and between kinks the pattern is constant
    mids = (seg.breakpoints[1:] + seg.breakpoints[:-1]) / 2
    P = net.pattern_vector(a + mids[:, None] * (b - a))
    assert np.array_equal(P, seg.patterns)


# ---------------------------------------------------------- other domains
def test_whole_space_matches_bfs():
    net = random_network(np.random.default_rng(11), [2, 6, 5, 1])
    rs = regions.enumerate(net, Polytope.whole_space(2))
    bf = regions.enumerate(net, Polytope.whole_space(2), method="bfs")
    assert rs.certified
    assert _patset(rs) == _patset(bf)
    unb = {bytes(rs.packed_patterns[i]) for i in range(len(rs)) if not rs.bounded[i]}
    unb_bf = {bytes(bf.packed_patterns[i]) for i in range(len(bf)) if not bf.bounded[i]}
    assert unb == unb_bf and len(unb) > 0
    assert not rs.touches_domain.any()
    G = regions.graph(rs)
    assert G.graph["summary"].connected


def test_polytope_domain_matches_bfs_and_sampling():
    net = random_network(np.random.default_rng(12), [2, 9, 6, 1])
    P = Polytope([[1, 1], [-1, 0.2], [0.3, -1], [1, -2]], [1, 0.8, 0.9, 1.5])
    rs = regions.enumerate(net, P)
    bf = regions.enumerate(net, P, method="bfs")
    assert _patset(rs) == _patset(bf)
    X = P.sample(3000, rng=3)
    assert np.all(rs.locate(X) >= 0)
    assert np.all(P.contains(rs.interior, tol=-1e-12))


def test_degenerate_arrangement():
    # three lines through the origin, one of them twice, and one line along a box facet
    W = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 1.0], [1.0, 0.0]])
    b = np.array([0.0, 0.0, 0.0, 0.0, -1.0])  # last: x = 1, the box's right facet
    net = Network([W, np.ones((1, 5))], [b, np.zeros(1)])
    box = Box([-1, -1], [1, 1])
    rs = regions.enumerate(net, box)
    assert len(rs) == 6
    # (the LP-BFS assumes neighbours differ in one neuron, false for a doubled neuron;
    # dense sampling is the reference here)
    X = box.sample(20_000, rng=0)
    sampled = {bytes(r) for r in np.packbits(net.pattern_vector(X), axis=1)}
    assert sampled == _patset(rs)
    assert np.all(rs.locate(X) >= 0)
    areas = [regions.slice2d(net).polygons[i].area for i in range(6)]
    assert np.isclose(sum(areas), 4.0)
    G = regions.graph(rs)
    assert G.number_of_edges() == 6 and max(d for _, d in G.degree()) == 2


def test_deep_degenerate_construction():
    # |x| - |y| built with a second layer whose neuron is dead on a whole region
    W1 = np.array([[1.0, 0], [-1, 0], [0, 1], [0, -1]])
    W2 = np.array([[1.0, 1, 0, 0], [0, 0, 1, 1], [1, 1, -1, -1]])
    net = Network([W1, W2, np.array([[1.0, -1, 0]])], [np.zeros(4), np.zeros(3), np.zeros(1)])
    box = Box([-1, -1], [1, 1])
    rs = regions.enumerate(net, box)
    bf = regions.enumerate(net, box, method="bfs")
    assert _patset(rs) == _patset(bf)
    X = box.sample(4000, rng=0)
    assert np.all(rs.locate(X) >= 0)
    assert np.isclose(sum(p.area for p in regions.slice2d(net).polygons), 4.0)


# ---------------------------------------------------------- API behaviour
def test_streaming_partial_and_count():
    net = random_network(np.random.default_rng(4), [2, 12, 12, 1])
    full = regions.enumerate(net)
    assert not full.partial
    assert regions.count(net) == len(full)
    streamed = list(regions.iter_regions(net))
    assert {r.pattern.tobytes() for r in streamed} == {
        p.tobytes() for p in full.patterns
    }
    part = regions.enumerate(net, max_regions=10)
    assert part.partial and len(part) == 10
    assert _patset(part) <= _patset(full)


def test_exact_network_and_no_hidden_layer():
    net = random_network(np.random.default_rng(2), [2, 5, 1]).exact()
    assert regions.count(net) == regions.count(net.float())
    lin = Network([np.ones((1, 2))], [np.zeros(1)])
    rs = regions.enumerate(lin)
    assert len(rs) == 1 and rs[0].A.shape == (4, 2)


def test_bad_domain_errors():
    from relulab.errors import RelulabError

    net = random_network(np.random.default_rng(2), [2, 5, 1])
    with pytest.raises(RelulabError):
        regions.enumerate(net, Box([0, 0, 0], [1, 1, 1]))
    with pytest.raises(RelulabError):
        regions.enumerate(net, Box([0, 0], [0, 1]))
    with pytest.raises(RelulabError):
        regions.enumerate(net, method="nope")


def test_engines_agree(case):
    """The shared-vertex skeleton and the per-region engine give the same complex."""
    net, box, rs = case
    assert rs.info["engine"] == "skeleton"
    cells = regions.enumerate(net, box, engine="cells")
    assert cells.info["engine"] == "cells"
    a = {bytes(rs.packed_patterns[i]): i for i in range(len(rs))}
    assert set(a) == _patset(cells)
    for j in range(len(cells)):
        i = a[bytes(cells.packed_patterns[j])]
        R, Q = rs[i], cells[j]
        assert set(R.facet_ids.tolist()) == set(Q.facet_ids.tolist())
        assert R.vertices.shape == Q.vertices.shape
        assert np.all(R.slack(R.interior_point) > STRICT_TOL)
        assert np.allclose(R.affine[0], Q.affine[0]) and np.allclose(R.affine[1], Q.affine[1])
    assert np.array_equal(regions.adjacency(rs)[:, 2].size, regions.adjacency(cells)[:, 2].size)


def test_degenerate_input_falls_back():
    W = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    net = Network([W, np.ones((1, 3))], [np.zeros(3), np.zeros(1)])
    rs = regions.enumerate(net)
    assert rs.info["engine"] == "cells" and "fallback" in rs.info
    assert len(rs) == 6


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_integer_weights_many_hyperplanes_through_points(seed):
    # small integer weights: many neurons through the origin and through common
    # points, identically-zero neurons on whole regions (degenerate input)
    rng = np.random.default_rng(seed)
    Ws = [rng.integers(-2, 3, size=(8, 2)), rng.integers(-2, 3, size=(6, 8)), np.ones((1, 6))]
    bs = [rng.integers(-1, 2, size=8), rng.integers(-1, 2, size=6), np.zeros(1)]
    net = Network([W.astype(float) for W in Ws], [b.astype(float) for b in bs])
    box = Box([-2, -2], [2, 2])
    rs = regions.enumerate(net, box)
    cells = regions.enumerate(net, box, engine="cells")
    assert _patset(rs) == _patset(cells)
    assert np.all(rs.radius > MIN_RADIUS)
    X = box.sample(4000, rng=seed)
    hits = np.zeros(len(X), dtype=int)
    for i in range(len(rs)):
        R = rs[i]
        inside = np.all(X @ R.A.T <= R.b + 1e-12, axis=1)
        hits += inside
        C, c = R.affine
        assert np.allclose(X[inside] @ C.T + c, net(X[inside]), atol=1e-9)
    assert np.all(hits == 1)
    assert np.isclose(sum(p.area for p in regions.slice2d(net, window=(-2, 2, -2, 2)).polygons),
                      16.0)


def test_chebyshev_centres():
    net = random_network(np.random.default_rng(6), [2, 6, 5, 1])
    rs = regions.enumerate(net)
    ch = regions.enumerate(net, centers="chebyshev")
    assert np.all(ch.radius >= rs.radius - 1e-12)
    for i in range(len(ch)):
        R = ch[i]
        x, r = R.chebyshev_center()
        assert np.isclose(r, R.radius, rtol=1e-7)
        assert np.all(R.slack(R.interior_point) >= R.radius - 1e-9)


def test_ctrl_c_returns_partial_exact_regions(monkeypatch):
    from relulab.regions import _engine

    net = random_network(np.random.default_rng(4), [2, 12, 12, 1])
    full = regions.enumerate(net)
    orig = _engine._apply_neuron
    calls = {"n": 0}

    def interrupted(pb, b):
        calls["n"] += 1
        if calls["n"] > 80:
            raise KeyboardInterrupt
        return orig(pb, b)

    monkeypatch.setattr(_engine, "MAX_BATCH_REGIONS", 8)  # many small batches
    monkeypatch.setattr(_engine, "_apply_neuron", interrupted)
    part = regions.enumerate(net, engine="cells")
    assert part.partial and part.info.get("interrupted")
    assert 0 < len(part) < len(full)
    assert _patset(part) <= _patset(full)


def test_region_set_typed_fields_and_lazy_vertices():
    # the typed model: the network is a field, info holds only how the set was computed;
    # lazily recovered vertices (skeleton kept) equal the stored vertex lists, and the
    # skeleton's dual-graph edges equal the ones found from the facets
    net = random_network(np.random.default_rng(11), [3, 7, 6, 1])
    box = Box(-np.ones(3), np.ones(3))
    lazy = regions.enumerate(net, box, vertices=False)
    full = regions.enumerate(net, box, vertices=True)
    cells = regions.enumerate(net, box, engine="cells")
    assert lazy.net is not None and set(lazy.info) <= {"engine", "fallback", "interrupted"}
    assert lazy.info["engine"] == "skeleton" and len(lazy) == len(full) == len(cells)
    for i in range(0, len(lazy), max(1, len(lazy) // 7)):
        a = np.unique(np.round(lazy[i].vertices, 9), axis=0)
        b = np.unique(np.round(full[i].vertices, 9), axis=0)
        assert a.shape == b.shape and np.allclose(a, b)
    E_skel = {tuple(e) for e in regions.adjacency(full).tolist()}
    # the cell engine numbers regions differently: compare by activation pattern
    pk = {p.tobytes(): i for i, p in enumerate(full.patterns)}
    pc = [pk[p.tobytes()] for p in cells.patterns]
    E_cells = {(min(pc[a], pc[b]), max(pc[a], pc[b]), j)
               for a, b, j in regions.adjacency(cells).tolist()}
    assert E_skel == E_cells
    X = box.sample(200, 3)
    assert np.array_equal(full.locate(X), lazy.locate(X))


def test_memory_budget_stops_enumeration_with_an_exact_partial_answer(monkeypatch):
    """With a tiny budget the skeleton engine hands over to the streaming engine, which
    stops with what it has (marked partial, with the reason); what it has is exact."""
    rng = np.random.default_rng(5)
    net = Network([rng.normal(size=(12, 2)), rng.normal(size=(12, 12)), rng.normal(size=(1, 12))],
                  [rng.normal(size=12) * 0.3, rng.normal(size=12) * 0.3, np.zeros(1)])
    box = Box([-1, -1], [1, 1])
    full = regions.enumerate(net, box)
    n_full = regions.count(net, box)
    assert len(full) == n_full and not full.partial
    monkeypatch.setenv("RELULAB_MEMORY_GB", str(40e3 / 2**30))       # 40 kB
    rs = regions.enumerate(net, box)
    assert rs.partial and "memory budget" in rs.info["stopped"]
    assert rs.info.get("fallback", "").startswith("memory")
    assert 0 < len(rs) < len(full)
    have = {r.pattern.tobytes() for r in full}
    assert all(r.pattern.tobytes() in have for r in rs)           # a subset of the true regions
    X = np.array([r.interior_point for r in rs])
    assert np.array_equal(net.pattern_vector(X).astype(bool), np.array([r.pattern for r in rs]))
    # counting streams: the budget changes the engine, not the answer
    assert regions.count(net, box) == n_full
    with pytest.raises(RelulabError, match="memory budget"):
        regions.enumerate(net, box, engine="skeleton")


def test_count_agrees_with_enumeration_on_degenerate_input():
    """tiny_2d (a shipped example) has a vertex where the skeleton engine cannot tell the
    regions apart; counting must then fall back like enumeration does (it used to give
    55 instead of 56)."""
    from relulab.examples import load_example

    net = load_example("tiny_2d")
    box = Box([-1, -1], [1, 1])
    n_bfs = len(regions.enumerate(net, box, method="bfs"))
    g = np.linspace(-1, 1, 801)
    X = np.array(np.meshgrid(g, g)).reshape(2, -1).T
    n_grid = len({p.tobytes() for p in net.pattern_vector(X).astype(np.uint8)})
    assert regions.count(net, box) == len(regions.enumerate(net, box)) == n_bfs
    assert n_grid <= n_bfs


# ------------------------------------------------------------------ degenerate corners (audit)
def test_unbounded_certificate_sees_a_repeated_neuron_far_outside_the_first_box():
    """Two neurons +-(y - eps x - 1) share one line, which meets the half-plane y <= 0
    only at x <= -1/eps, far outside the first artificial box.  Relaxing one copy of a
    repeated row leaves the other, so the facet test must run per distinct half-space,
    else the one-region answer is wrongly certified complete."""
    eps = 1e-3
    W1 = np.array([[-eps, 1.0], [eps, -1.0]])
    net = Network([W1, np.ones((1, 2))], [np.array([-1.0, 1.0]), np.zeros(1)])
    H = Polytope([[0.0, 1.0]], [0.0])
    rs = regions.enumerate(net, H)
    # the independent count: one line cutting a half-plane gives two regions
    single = Network([W1[:1], np.ones((1, 1))], [np.array([-1.0]), np.zeros(1)])
    assert len(regions.enumerate(single, H, method="bfs")) == 2
    assert len(rs) == 2 and rs.certified
    assert regions.count(net, H) == 2
    far = np.array([[-2000.0, -0.5], [0.0, -0.5]])
    assert sorted(rs.locate(far).tolist()) == [0, 1]


def test_a_neuron_identically_zero_on_a_region_counts_once_in_every_engine():
    """relu(x + y) - relu(x) - relu(y) is exactly 0 on the positive quadrant: that region
    has one pattern (the neuron inactive), though float evaluation may give +1e-17."""
    net = Network([[[1.0, 1.0], [1.0, 0.0], [0.0, 1.0]], [[1.0, -1.0, -1.0]], [[1.0]]],
                  [[0.0, 0.0, 0.0], [0.0], [0.0]])
    box = Box([-1.0, -1.0], [0.2, 0.4])
    counts = {m: len(regions.enumerate(net, box, method=m)) for m in ("subdivision", "bfs")}
    counts["cells"] = len(regions.enumerate(net, box, engine="cells"))
    # brute force: distinct (first-layer pattern) cells, the second neuron being 0 or
    # negative (never positive: relu(x+y) <= relu(x) + relu(y))
    g = np.linspace(-1, 0.2, 301)[1:-1] + 1e-7, np.linspace(-1, 0.4, 301)[1:-1] + 1e-7
    X = np.stack(np.meshgrid(*g), -1).reshape(-1, 2)
    first = {tuple(p) for p in (X @ np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 1.0]]).T > 0)}
    assert set(counts.values()) == {len(first)}
    rs = regions.enumerate(net, box)
    assert rs.locate([[0.1, 0.2]])[0] >= 0


def test_float_segment_merges_breakpoints_a_few_ulps_apart():
    """h = relu(x + 1); h - 1 and 3h - 3 both vanish at x = 0, computed a few ulps apart
    in float: one breakpoint, as in the exact network."""
    net = Network([[[1.0]], [[1.0], [3.0]], [[1.0, 1.0]]], [[1.0], [-1.0, -3.0], [0.0]])
    a, b = -0.9041526867532810, 0.5276254947008465
    seg = regions.along_segment(net, [a], [b])
    exact = regions.along_segment(net.exact(), [a], [b])
    assert seg.n_pieces == exact.n_pieces == 2
    assert np.allclose(seg.points.ravel(), [float(v) for v in np.ravel(exact.points)])


def test_count_refuses_an_uncertified_unbounded_enumeration():
    """Lines y = 0 and y = 1e-7 x + 1 cross at x = -1e7, beyond every artificial box the
    enumeration tries: the count is not certified, so count() says so instead of 3."""
    net = Network([[[0.0, 1.0], [-1e-7, 1.0]], [[1.0, 1.0]]], [[0.0, -1.0], [0.0]])
    R2 = Polytope.whole_space(2)
    assert not regions.enumerate(net, R2).certified
    with pytest.raises(RelulabError, match="could not be certified"):
        regions.count(net, R2)
    # two lines in general position: 4 regions, the count found with a big enough box
    assert len(regions.enumerate(net, R2, big=1e8)) == 4
    # the float LP search misses the far sliver: it does not claim completeness there
    assert not regions.enumerate(net, R2, method="bfs").certified


def test_locate_a_batch_where_some_points_need_the_near_zero_fallback():
    # a neuron that vanishes on a whole region reads +-1e-16 in a batched forward pass; the
    # fallback for those points reshaped with the batch size and crashed
    rng = np.random.default_rng(9012)
    d, L = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    widths = [int(rng.integers(2, {1: 7, 2: 5, 3: 3}[d] + 1)) for _ in range(L)]
    dims = [d, *widths, 1]
    Ws = [rng.integers(-1, 2, size=(dims[i + 1], dims[i])).astype(float) for i in range(len(dims) - 1)]
    bs = [rng.integers(-1, 2, size=dims[i + 1]) / 2.0 for i in range(len(dims) - 1)]
    net = Network(Ws, bs)
    rs = regions.enumerate(net, Box([-1], [1]))
    X = np.random.default_rng(1).uniform(-1, 1, size=(2000, 1))
    idx = rs.locate(X)
    assert np.array_equal(idx, np.concatenate([rs.locate(x[None]) for x in X]))
    assert np.all(idx >= 0)
    assert all(rs[i].contains(x, tol=1e-9) for i, x in zip(idx[:200], X[:200], strict=True))


def test_locate_says_minus_one_outside_the_domain():
    net = Network([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    rs = regions.enumerate(net, Box([-1, -1], [1, 1]))
    X = np.array([[5.0, 5.0], [-100.0, 3.0], [0.5, 0.5]])
    idx = rs.locate(X)
    assert idx[0] == -1 and idx[1] == -1 and idx[2] >= 0 and rs[idx[2]].contains(X[2])


def test_summary_counts_vertices_also_where_lists_are_not_stored():
    rng = np.random.default_rng(5)
    net = Network([rng.normal(size=(4, 3)), rng.normal(size=(1, 4))], [rng.normal(size=4) * .5, np.zeros(1)])
    rs = regions.enumerate(net, Box(-np.ones(3), np.ones(3)))
    assert rs.summary()["vertices_per_region"] == pytest.approx(np.mean([len(R.vertices) for R in rs]))


def test_exact_segment_with_float_or_integer_endpoints_is_exact():
    from fractions import Fraction

    rng = np.random.default_rng(3)
    for _ in range(10):
        net = Network([rng.integers(-3, 4, (3, 1)), rng.integers(-3, 4, (1, 3))],
                      [rng.integers(-3, 4, 3), rng.integers(-3, 4, 1)]).exact()
        seg = regions.along_segment(net, [-1], [2])                 # numpy ints: no overflow
        assert seg.values[-1][0] == net([[Fraction(2)]])[0][0]
    net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]]).exact()   # |x|
    a, b = [-0.3], [0.7]                                           # b - a is inexact in float
    seg = regions.along_segment(net, a, b)
    assert seg.values[-1][0] == Fraction(0.7) and seg.values[0][0] == Fraction(0.3)
    kink = seg.points[1][0]
    assert kink == 0                                               # the kink of |x| exactly


@pytest.mark.parametrize("far", [1e4, 1e7, 1e9, 1e11])
def test_lines_crossing_far_away_are_found_or_not_certified(far):
    # y = 0 and y = x / far - 1 cross at x = far: four regions of the plane.  HiGHS drops
    # coefficients below 1e-9, so its facet test once missed the crossing at 1e9 and the
    # enumeration said certified with 3 regions.
    net = Network([[[0.0, 1.0], [-1.0 / far, 1.0]], [[1.0, 1.0]]], [[0.0, 1.0], [0.0]])
    rs = regions.enumerate(net, Polytope.whole_space(2))
    W = np.array([[0.0, 0.5], [0.0, -0.5], [2 * far, 0.5], [2 * far, -0.5]])
    assert len({tuple(p) for p in net.pattern_vector(W).astype(int).tolist()}) == 4
    if rs.certified:
        assert len(rs) == 4
    found = rs.locate(W)
    for i, x in zip(found, W, strict=True):   # a point is located only in a region holding it
        assert i == -1 or np.array_equal(rs[i].pattern, net.pattern_vector(x[None])[0])


def test_a_bounded_region_sticking_out_of_the_artificial_box_is_enclosed():
    # on the orthant x >= -0.5 one bounded region reaches y = 236, beyond the first box
    # (half-width 16): it was flagged unbounded with vertices clipped to the box
    from scipy.optimize import linprog

    W = [[[-1.2384295102186706, 2.210466699081639, 0.40349011528578077],
          [-0.3032052266978392, -0.006873660994607694, -1.912778646110806],
          [-0.9459207820516016, -0.8415153476959655, -0.6638754669490003]],
         [[0.4794846628648541, -0.09365036971144328, -0.02964491005060567],
          [-0.12180272069514225, -0.5185262638110543, -0.35092979227132487]],
         [[-2.0103107099384547, -0.7675977296930119]]]
    B = [[0.016657470069895576, 0.5133213448583358, 0.12449056019706801],
         [0.6188426509389885, -0.4719046550423135], [-0.03008387188450338]]
    net = Network(W, B)
    rs = regions.enumerate(net, Polytope(-np.eye(3), 0.5 * np.ones(3)))
    assert rs.certified
    for R in rs:
        ext = []
        for e in np.concatenate([np.eye(3), -np.eye(3)]):
            r = linprog(-e, A_ub=R.A, b_ub=R.b, bounds=[(None, None)] * 3, method="highs")
            ext.append(np.inf if r.status == 3 else -r.fun)
        assert bool(np.all(np.isfinite(ext))) == R.bounded
        if R.bounded:   # its vertices reach its true extent
            assert np.allclose(np.concatenate([R.vertices.max(0), -R.vertices.min(0)]), ext, atol=1e-6)


@pytest.mark.parametrize("kw, match", [({"max_regions": -1}, "max_regions must be a positive integer"),
                                       ({"max_regions": 2.5}, "max_regions must be a positive integer"),
                                       ({"vertices": "foo"}, "vertices must be True, False or 'auto'"),
                                       ({"big": -1}, "big .* must be a positive number"),
                                       ({"big": float("nan")}, "big .* must be a positive number")])
def test_malformed_enumeration_options_are_one_clear_error(kw, match):
    net = Network([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    with pytest.raises(RelulabError, match=match):
        regions.enumerate(net, Polytope.whole_space(2), **kw)


def test_neuron_label_refuses_negative_ids():
    from relulab.regions import neuron_label

    with pytest.raises(IndexError):
        neuron_label((3, 2), -1)


def test_batch_size_follows_the_memory_budget_and_a_failed_allocation_is_partial(monkeypatch):
    import relulab.regions._engine as E

    rng = np.random.default_rng(2)
    net = Network([rng.normal(size=(14, 4)), rng.normal(size=(1, 14))], [rng.normal(size=14) * .3, np.zeros(1)])
    box = Box(-np.ones(4), np.ones(4))
    pb = E.Problem(net, box)
    assert E.slot_cap(pb, budget=2**40) == E.MAX_BATCH_SLOTS          # a large budget: unchanged
    small = E.slot_cap(pb, budget=50 * 2**20)
    assert 1_000 <= small < E.MAX_BATCH_SLOTS                          # 50 MB: smaller batches
    # the same regions with tiny batches (every batch halved early)
    full = regions.enumerate(net, box, engine="cells")
    monkeypatch.setattr(E, "slot_cap", lambda pb, budget=None: 1_000)
    tiny = regions.enumerate(net, box, engine="cells")
    assert {r.pattern.tobytes() for r in tiny} == {r.pattern.tobytes() for r in full}
    # an allocation that fails anyway ends the enumeration partial, with what it has
    real = E._apply_neuron
    calls = [0]

    def failing(pb, b):
        calls[0] += 1
        if calls[0] > 20:
            raise MemoryError("Unable to allocate 197 MiB")
        return real(pb, b)

    monkeypatch.setattr(E, "_apply_neuron", failing)
    rs = regions.enumerate(net, box, engine="cells")
    assert rs.partial and "memory: an allocation failed" in rs.info["stopped"]
    have = {r.pattern.tobytes() for r in full}
    assert all(r.pattern.tobytes() in have for r in rs)
    calls[0] = 0
    with pytest.raises(RelulabError, match="counting regions: an allocation failed"):
        regions.count(net, box, engine="cells")


def test_a_region_cap_streams_small_batches_with_the_same_regions(monkeypatch):
    # with max_regions the engine halves batches early, so the first regions come out
    # after a small share of the work (max_regions=20 on an 8-60-60-1 net took 93 s
    # before, for one 60,000-region batch); the regions themselves do not change
    import relulab.regions._engine as E

    rng = np.random.default_rng(4)
    net = Network([rng.normal(size=(16, 3)), rng.normal(size=(10, 16)) / 3, rng.normal(size=(1, 10))],
                  [rng.normal(size=16) * .3, rng.normal(size=10) * .3, np.zeros(1)])
    box = Box(-np.ones(3), np.ones(3))
    pb = E.Problem(net, box)
    full = regions.enumerate(net, box, engine="cells")
    assert len(full) > 300
    X0, F0, p0, _ = E.initial_polytope(pb)
    sizes = [ch.batch.n for ch in E.run(pb, X0, F0, p0, max_batch=16)]
    assert len(sizes) > 10 and max(sizes) <= 32 and sum(sizes) == len(full)
    from conftest import record_kwarg

    seen = record_kwarg(monkeypatch, E, "run", "max_batch")
    part = regions.enumerate(net, box, engine="cells", max_regions=20)
    assert len(part) == 20 and part.partial and seen == [64]
    have = {r.pattern.tobytes() for r in full}
    assert all(r.pattern.tobytes() in have for r in part)


def test_a_time_limit_returns_the_regions_found_so_far_marked_partial(tmp_path, capsys):
    import json

    from conftest import run_cli

    from relulab.io import save_model

    rng = np.random.default_rng(5)
    net = Network([rng.normal(size=(14, 3)), rng.normal(size=(10, 14)) / 3, rng.normal(size=(1, 10))],
                  [rng.normal(size=14) * .3, rng.normal(size=10) * .3, np.zeros(1)])
    box = Box(-np.ones(3), np.ones(3))
    full = {p.tobytes() for p in regions.enumerate(net, box).patterns}
    cut = regions.enumerate(net, box, time_limit=1e-6)      # spent at the first neuron
    assert cut.partial and "time limit" in cut.info["stopped"]
    assert len(cut) < len(full) and all(p.tobytes() in full for p in cut.patterns)
    assert not cut.to_dict()["certified"]
    whole = regions.enumerate(net, Polytope.whole_space(3), time_limit=1e-6)
    assert whole.partial and not whole.certified
    for bad in (0, -1.0, float("nan"), "3"):
        with pytest.raises(RelulabError, match="time_limit"):
            regions.enumerate(net, box, time_limit=bad)
    with pytest.raises(RelulabError, match="time_limit"):
        regions.enumerate(net, box, time_limit=1.0, method="bfs")
    path = tmp_path / "m.npz"
    save_model(net, path)
    for extra in ([], ["--count"]):
        code, out, _ = run_cli(capsys, "regions", str(path), "--time-limit", "0.000001", "--json", *extra)
        d = json.loads(out)
        assert code == 0 and d["partial"] and not d["certified"] and "time limit" in d["stopped"]
    code, _, err = run_cli(capsys, "regions", str(path), "--time-limit", "-2")
    assert code != 0 and "--time-limit" in err


def test_iter_regions_honours_its_deadline_on_unbounded_domains_too():
    # on R^d the stream goes through the certified enumeration first; it ignored the
    # deadline there (lipschitz over R^d could overrun its limit)
    import time

    rng = np.random.default_rng(6)
    net = Network([rng.normal(size=(14, 3)), rng.normal(size=(10, 14)) / 3, rng.normal(size=(1, 10))],
                  [rng.normal(size=14) * .3, rng.normal(size=10) * .3, np.zeros(1)])
    whole = Polytope.whole_space(3)
    full = {p.tobytes() for p in regions.enumerate(net, whole).patterns}
    report: dict = {}
    got = [r.pattern.tobytes() for r in regions.iter_regions(net, whole, deadline=time.time(), report=report)]
    assert report["partial"] and "time limit" in report["stopped"]
    assert len(got) < len(full) and set(got) <= full
    done: dict = {}
    assert len(list(regions.iter_regions(net, whole, report=done))) == len(full) and not done["partial"]


def test_networks_whose_values_overflow_float64_are_refused_not_miscounted(tmp_path, capsys):
    # hyperplanes x = -1 and x = 0 with weights 1e308: the engine counted 1 region,
    # certified, where there are 2 (five overflow warnings on the way)
    from conftest import run_cli

    from relulab.errors import RelulabError
    from relulab.io import save_model

    huge = Network([[[1e308], [-1e308]], [[1e308, 1e308]]], [[1e308, 0.0], [0.0]])
    for call in (lambda: regions.count(huge, Box([-1], [1])),
                 lambda: regions.enumerate(huge, Box([-1], [1])),
                 lambda: list(regions.iter_regions(huge, Box([-1], [1]))),
                 lambda: regions.enumerate(huge, Polytope.whole_space(1))):
        with pytest.raises(RelulabError, match="beyond float64"):
            call()
    path = tmp_path / "huge.npz"
    save_model(huge, path)
    code, out, err = run_cli(capsys, "regions", str(path), "--count")
    assert code == 1 and "beyond float64" in err and len(err.strip().splitlines()) == 1
    # the same arrangement at a scale float64 holds: counted, and right (dense sampling)
    fine = Network([[[1e299], [-1e299]], [[1.0, 1.0]]], [[1e299, 0.0], [0.0]])
    X = np.linspace(-1, 1, 2001)[1:-1, None]  # x = -1 alone has its own (measure-zero) pattern
    assert regions.count(fine, Box([-1], [1])) == len({tuple(p) for p in fine.pattern_vector(X)}) == 2


def test_slow_steps_under_a_time_limit_shrink_the_batches_and_lose_no_region(monkeypatch):
    # with a deadline a neuron step slower than STOP_STEP_SECONDS halves the batches (a
    # 12-30-30-2 network overran a 6 s limit by 6.7 s); at 0 s every step is "slow", so
    # the batches shrink to single regions, and the enumeration must still be the same
    import relulab.regions._engine as E

    net = random_network(np.random.default_rng(8), [3, 12, 9, 1], scale=2.0)
    box = Box(-np.ones(3), np.ones(3))
    full = regions.enumerate(net, box)
    sizes: list[int] = []
    real_run = E.run

    def spy(*args, **kwargs):
        for ch in real_run(*args, **kwargs):
            sizes.append(ch.batch.n)
            yield ch

    monkeypatch.setattr(E, "STOP_STEP_SECONDS", 0.0)
    monkeypatch.setattr(E, "run", spy)
    slow = regions.enumerate(net, box, time_limit=1e6)
    assert not slow.partial and slow.certified
    assert sorted(p.tobytes() for p in slow.patterns) == sorted(p.tobytes() for p in full.patterns)
    assert len(full) > 40 and max(sizes) <= 2 and sum(sizes) == len(full)
