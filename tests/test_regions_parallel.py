"""Region enumeration split over cells and stitched equals one process: the same
patterns, facets (by hyperplane), vertices and adjacency graph; valid interior points;
the same count. With cells that cut many regions, on random 2-D and 3-D networks, and
on Ray when it is installed."""

from __future__ import annotations

import numpy as np
import pytest

from relulab import Box, Network, regions


def _net(d, widths, seed):
    rng = np.random.default_rng(seed)
    dims = [d, *widths, 1]
    return Network([rng.normal(size=(dims[i + 1], dims[i])) for i in range(len(dims) - 1)],
                   [rng.normal(size=dims[i + 1]) * 0.5 for i in range(len(dims) - 1)])


def _by_pattern(rs):
    return {r.pattern.tobytes(): r for r in rs}


def assert_same_regions(one, st, net):
    a, b = _by_pattern(one), _by_pattern(st)
    assert set(a) == set(b) and len(st) == len(one)
    for k, r in a.items():
        s = b[k]
        assert sorted(r.facet_ids.tolist()) == sorted(s.facet_ids.tolist())
        va = np.array(sorted(map(tuple, np.round(r.vertices, 9))))
        vb = np.array(sorted(map(tuple, np.round(s.vertices, 9))))
        assert va.shape == vb.shape and np.allclose(va, vb, atol=1e-8)
        assert np.allclose(r.affine[0], s.affine[0]) and np.allclose(r.affine[1], s.affine[1])
        assert s.contains(s.interior_point) and s.radius > 0
        assert net.pattern_vector(s.interior_point[None])[0].astype(bool).tolist() == s.pattern.tolist()
        assert r.touches_domain == s.touches_domain
    ga, gb = regions.graph(one), regions.graph(st)
    ea = {frozenset((one[i].pattern.tobytes(), one[j].pattern.tobytes())) for i, j in ga.edges()}
    eb = {frozenset((st[i].pattern.tobytes(), st[j].pattern.tobytes())) for i, j in gb.edges()}
    assert ea == eb


@pytest.mark.parametrize("d,widths,seed,cells", [(2, [12, 12], 0, 7), (2, [16, 16, 16], 1, 9),
                                                 (3, [10, 10], 2, 6), (3, [12, 8], 3, 11)])
def test_stitched_enumeration_equals_one_process(d, widths, seed, cells):
    net = _net(d, widths, seed)
    box = Box(-np.ones(d), np.ones(d))
    one = regions.enumerate(net, box, vertices=True)
    st = regions.enumerate(net, box, parallel="local", workers=2, cells=cells)
    assert st.info["engine"] == "stitched" and not st.partial
    assert_same_regions(one, st, net)
    assert regions.count(net, box, parallel="local", workers=2, cells=cells) == len(one)


def test_cells_cover_the_box_and_cut_regions():
    from relulab.regions._stitch import split_cells

    net = _net(2, [16, 16], 4)
    box = Box([-1, -1], [1, 1])
    cells = split_cells(net, box, 8)
    assert len(cells) == 8
    assert np.isclose(sum(np.prod(c.hi - c.lo) for c in cells), 4.0)
    pieces = sum(len(regions.enumerate(net, c)) for c in cells)
    assert pieces > len(regions.enumerate(net, box))          # regions were cut and merged


def test_parallel_arguments_are_checked():
    from relulab.errors import RelulabError

    net = _net(2, [4], 0)
    with pytest.raises(RelulabError, match="parallel"):
        regions.enumerate(net, parallel="spark")
    with pytest.raises(RelulabError, match="max_regions"):
        regions.enumerate(net, parallel="local", max_regions=3)
    from relulab import Polytope

    with pytest.raises(RelulabError, match="Box"):
        regions.enumerate(net, Polytope.whole_space(2), parallel="local", workers=1)
    # a flat box: the one-process message, not the estimate's ZeroDivisionError
    for fn in (regions.enumerate, regions.count):
        with pytest.raises(RelulabError, match="full-dimensional box"):
            fn(net, Box([0, -1], [0, 1]), parallel="local", workers=2)


def test_stitched_on_ray_equals_one_process():
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'relulab[ray]')")
    import os

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    started = not ray.is_initialized()
    if started:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        net = _net(2, [12, 12], 7)
        box = Box([-1, -1], [1, 1])
        st = regions.enumerate(net, box, parallel="ray", workers=2, cells=5)
        one = regions.enumerate(net, box, vertices=True)
        assert_same_regions(one, st, net)
        assert regions.count(net, box, parallel="ray", workers=2, cells=9) == len(one)
    finally:
        if started:
            ray.shutdown()


# ------------------------------------------------------------------ ownership (count)
@pytest.mark.parametrize("d,widths,seed,cells", [(2, [10, 10], 11, 23), (2, [14, 6], 12, 40),
                                                 (3, [8, 8], 13, 17), (3, [6, 6, 6], 14, 30)])
def test_each_region_is_owned_by_exactly_one_cell(d, widths, seed, cells):
    """Every cell decides alone which regions it owns (lowest vertex off the cuts): the
    owned counts add up to the one-process count, and a brute-force check by patterns
    says the same region is never owned twice nor missed."""
    from relulab.regions._stitch import _CountTask, split_cells

    net = _net(d, widths, seed)
    box = Box(-np.ones(d), np.ones(d))
    boxes = split_cells(net, box, cells)
    task = _CountTask(net, box)
    answers = [task((c.lo, c.hi, "own")) for c in boxes]
    assert all(kind == "own" for kind, _ in answers)          # general position: no fallback
    owned = sum(k for _, k in answers)
    pieces = [regions.enumerate(net, c) for c in boxes]
    assert sum(len(p) for p in pieces) > owned                 # the cells really cut regions
    one = regions.enumerate(net, box)
    assert owned == len(one)
    assert regions.count(net, box, parallel="local", workers=2, cells=cells) == len(one)


def test_owner_is_the_cell_of_the_lowest_vertex():
    """The owner found by each cell is the cell holding the region's lowest vertex
    (computed from the one-process region's vertex list with the same direction)."""
    from relulab.regions._engine import Problem
    from relulab.regions._skeleton import skeleton_owned_count
    from relulab.regions._stitch import _foreign_ids, split_cells

    net = _net(2, [8, 8], 21)
    box = Box([-1, -1], [1, 1])
    one = regions.enumerate(net, box, vertices=True)
    g = np.random.default_rng(7).normal(size=2)            # the skeleton's direction
    lowest = np.array([r.vertices[np.argmin(r.vertices @ g)] for r in one])
    boxes = split_cells(net, box, 13)
    for c in boxes:
        pb = Problem(net, c)
        owned, _ = skeleton_owned_count(pb, _foreign_ids(c, box, pb.N, pb.n_ids))
        # strictly inside across the cuts; the outer box's faces belong to their cell
        lo_ok = np.where(c.lo == box.lo, lowest >= c.lo - 1e-12, lowest > c.lo)
        hi_ok = np.where(c.hi == box.hi, lowest <= c.hi + 1e-12, lowest < c.hi)
        inside = np.all(lo_ok & hi_ok, axis=1)
        assert owned == int(inside.sum())


def test_degenerate_cells_fall_back_to_patterns():
    """Hyperplanes through one point (not general position): the cell holding it cannot
    decide ownership, and the count falls back to distinct patterns over every cell."""
    W1 = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, -2.0]])
    net = Network([W1, np.ones((3, 4)), np.ones((1, 3))],
                  [np.zeros(4), np.array([0.1, -0.2, 0.3]), np.zeros(1)])
    box = Box([-1, -1], [1, 1])
    one = regions.enumerate(net, box)
    for cells in (2, 5, 9):
        assert regions.count(net, box, parallel="local", workers=2, cells=cells) == len(one)
        st = regions.enumerate(net, box, parallel="local", workers=2, cells=cells)
        assert_same_regions(one, st, net)


def test_degenerate_and_general_cells_mix_in_3d():
    """In 3-D (no vertex lists by default) some cells keep a skeleton and others fall
    back to the per-region engine: the general cells are redone with vertex lists and
    everything is merged, equal to one process."""
    from relulab.regions._stitch import _CellTask, split_cells

    W1 = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0], [1.0, 1.0, 1.0], [1.0, -2.0, 0.5]])
    net = Network([W1, np.random.default_rng(0).normal(size=(4, 5)), np.ones((1, 4))],
                  [np.zeros(5), np.array([0.1, -0.2, 0.3, 0.2]), np.zeros(1)])
    box = Box(-np.ones(3), np.ones(3))
    boxes = split_cells(net, box, 6)
    kinds = {_CellTask(net, box, regions.enumerate)((c.lo, c.hi, False)).general for c in boxes}
    assert kinds == {True, False}                               # really a mix
    one = regions.enumerate(net, box, vertices=True)
    st = regions.enumerate(net, box, parallel="local", workers=2, cells=6)
    assert_same_regions(one, st, net)
    assert regions.count(net, box, parallel="local", workers=2, cells=6) == len(one)


def test_stitched_skeleton_gives_the_vertices_and_graph_in_3d():
    """Without vertex lists (the 3-D default) the stitched set keeps the cells'
    skeletons off the cuts: every region's vertices come back as one process finds them,
    and the graph comes from the cells' graphs."""
    net = _net(3, [9, 9], 31)
    box = Box(-np.ones(3), np.ones(3))
    st = regions.enumerate(net, box, parallel="local", workers=2, cells=7)
    assert st._skeleton is not None and st.vertex_ptr[-1] == 0 and st._edges is not None
    assert_same_regions(regions.enumerate(net, box, vertices=True), st, net)
    # the graph from the cells equals the graph rebuilt from the facets
    E_cells = st._edges
    st._edges = None
    E_facets = regions.adjacency(st)
    assert {tuple(e) for e in E_cells.tolist()} == {tuple(e) for e in E_facets.tolist()}


# ------------------------------------------------------------------ property test
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=12, deadline=None)
@given(d=st.integers(1, 3), w1=st.integers(1, 9), w2=st.integers(0, 6),
       seed=st.integers(0, 10**6), cells=st.integers(1, 24))
def test_ownership_count_and_stitch_equal_one_process(d, w1, w2, seed, cells):
    """Random small networks of depth 1-2 in 1-3 dimensions and any number of cells, in
    one process (workers=1 runs the cells inline: the same code as in a worker)."""
    net = _net(d, [w1] + ([w2] if w2 else []), seed)
    box = Box(-np.ones(d), np.ones(d))
    one = regions.enumerate(net, box, vertices=True)
    assert regions.count(net, box, parallel="local", workers=1, cells=cells) == len(one)
    st_ = regions.enumerate(net, box, parallel="local", workers=1, cells=cells)
    assert_same_regions(one, st_, net)


@settings(max_examples=10, deadline=None)
@given(d=st.integers(2, 3), w=st.integers(2, 6), seed=st.integers(0, 10**6),
       cells=st.integers(2, 12))
def test_degenerate_integer_networks_stitch_like_one_process(d, w, seed, cells):
    """Small integer weights and biases put many hyperplanes through common points and
    along cuts-to-be: cells fall back to patterns / vertex lists, still exact."""
    rng = np.random.default_rng(seed)
    net = Network([rng.integers(-2, 3, size=(w, d)).astype(float),
                   rng.integers(-2, 3, size=(1, w)).astype(float)],
                  [rng.integers(-1, 2, size=w) * 0.5, np.zeros(1)])
    box = Box(-np.ones(d), np.ones(d))
    one = regions.enumerate(net, box, vertices=True)
    assert regions.count(net, box, parallel="local", workers=1, cells=cells) == len(one)
    assert_same_regions(one, regions.enumerate(net, box, parallel="local", workers=1,
                                               cells=cells), net)


def test_a_cell_too_big_for_the_skeleton_is_counted_in_halves():
    """Under a memory budget the whole box's skeleton does not fit: the cell is cut in
    halves (ownership stays relative to the outer box) and the count is still exact,
    without falling back to exchanging patterns."""
    from relulab.limits import memory_limit
    from relulab.regions._engine import Problem
    from relulab.regions._skeleton import TooBig, skeleton_count
    from relulab.regions._stitch import _CountTask

    net = _net(2, [12, 12], 5)
    box = Box([-1, -1], [1, 1])
    n = len(regions.enumerate(net, box))
    with memory_limit(100_000):
        with pytest.raises(TooBig):
            skeleton_count(Problem(net, box))
        assert _CountTask(net, box)((box.lo, box.hi, "own")) == ("own", n)
        assert regions.count(net, box, parallel="local", workers=1, cells=3) == n


def test_cuts_avoid_hyperplanes_through_round_coordinates():
    """Zero biases put every first-layer hyperplane through the centre of the box; the
    cuts are placed off the middle, so the cells stay in general position and count by
    ownership (a cut through the centre would make every cell fall back)."""
    from relulab.regions._stitch import _CountTask, split_cells

    rng = np.random.default_rng(8)
    net = Network([rng.normal(size=(2, 2)), rng.normal(size=(1, 2))], [np.zeros(2), np.zeros(1)])
    box = Box([-1, -1], [1, 1])
    boxes = split_cells(net, box, 6)
    answers = [_CountTask(net, box)((c.lo, c.hi, "own")) for c in boxes]
    assert all(kind == "own" for kind, _ in answers)
    assert sum(k for _, k in answers) == len(regions.enumerate(net, box)) == 4


def test_graph_of_a_parallel_run_with_a_repeated_neuron_in_3d():
    """Neurons x0 and -x0 share a plane; crossing it needs the step-across probe, which
    used to read the (empty) vertex array of a parallel run.  Same edges as one process."""
    W1 = np.array([[1.0, 0, 0], [-1.0, 0, 0], [0, 1.0, 0]])
    net = Network([W1, np.ones((1, 3))], [np.zeros(3), np.zeros(1)])
    box = Box(-np.ones(3), np.ones(3))
    one = regions.enumerate(net, box)
    par = regions.enumerate(net, box, parallel="local", workers=2, cells=6)

    def edges(rs):
        E = regions.adjacency(rs)
        pats = [bytes(p) for p in rs.packed_patterns]
        return {frozenset((pats[int(a)], pats[int(b)])) for a, b in np.asarray(E)[:, :2]}

    assert len(par) == len(one) == 4
    assert edges(par) == edges(one) and len(edges(one)) == 4   # the 2 x 2 grid of quadrants


def test_an_interrupted_parallel_enumeration_returns_its_finished_cells_as_partial(monkeypatch):
    # Ctrl-C is documented to return the regions found so far, marked partial; with
    # parallel= it raised KeyboardInterrupt and returned nothing.  An interrupted pmap
    # ends quietly with the items finished so far: here, the first half of the cells.
    import relulab.parallel as P

    real = P.pmap

    def interrupted_pmap(fn, items, **kw):
        items = list(items)
        for i, res in real(fn, items, **kw):
            if i < len(items) // 2:
                yield i, res

    net = _net(2, [12, 8], 3)
    box = Box([-1, -1], [1, 1])
    full = _by_pattern(regions.enumerate(net, box))
    monkeypatch.setattr(P, "pmap", interrupted_pmap)
    rs = regions.enumerate(net, box, parallel="local", workers=1, cells=8)
    assert rs.partial and rs.info["interrupted"] and rs.info["cells_finished"] == rs.info["cells"] // 2
    assert 0 < len(rs) < len(full)
    for r in rs:  # every region returned is whole and exact
        f = full[r.pattern.tobytes()]
        assert np.allclose(sorted(map(tuple, r.vertices)), sorted(map(tuple, f.vertices)))
    with pytest.raises(KeyboardInterrupt):  # a count cannot be partial: it still refuses
        regions.count(net, box, parallel="local", workers=1, cells=8)


def test_a_run_interrupted_before_any_cell_finished_is_an_empty_partial_set():
    # aud_cli6 #1: Ctrl-C before the first cell finished ended in "ValueError: need at
    # least one array to concatenate" (exit 1) where one process answers 0 regions, partial
    from relulab.regions._neuron_cells import _concat

    net = Network([np.array([[1.0, 0.0], [0.0, 1.0]]), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
    rs = _concat(Box([-1, -1], [1, 1]), net, [], [0, 1], interrupted=True)
    assert len(rs) == 0 and rs.partial
