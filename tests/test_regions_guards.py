"""The BFS cross-check on thin domains, the Chebyshev centres under a time limit, and
one-line errors for bad arguments of relulab.regions."""

from __future__ import annotations

import time

import numpy as np
import pytest
from conftest import random_network
from conftest import run_cli as run

from relulab import Box, Network, Polytope, regions
from relulab.errors import RelulabError

THREE_LINES = Network([[[1, 0], [0, 1], [1, 1]], [[1, 1, 1]]], [[0, 0, 0], [0]])


@pytest.mark.parametrize("h", [1e-2, 1e-5, 1e-6, 3e-7])
def test_bfs_finds_every_region_of_a_thin_box(h) -> None:
    # three lines through the origin cut [-1, 1] x [-h, h] into 6 regions; bfs found 1
    # at h = 1e-6 (its start nudge of 1e-4 left the box, and steps of 1e-6 left it too),
    # marked certified
    box = Box([-1, -h], [1, h])
    sub, bfs = regions.enumerate(THREE_LINES, box), regions.enumerate(THREE_LINES, box, method="bfs")
    assert len(sub) == 6 and sorted(map(bytes, sub.patterns)) == sorted(map(bytes, bfs.patterns))


def test_bfs_finds_the_regions_next_to_lines_outside_a_thin_box() -> None:
    net = Network([[[1, 0], [0, 1], [0, 1], [0, -1]], [[1, 1, 1, 1]]], [[0, 0, -2e-6, -2e-6], [0]])
    box = Box([-1, -1e-6], [1, 1e-6])
    assert len(regions.enumerate(net, box, method="bfs")) == len(regions.enumerate(net, box)) == 4


def test_bfs_radius_of_an_unbounded_region_is_its_balls() -> None:
    # |x| on R: the radius was 1e300 for an interior point 1e6 from its facet
    net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    rs = regions.enumerate(net, Polytope.whole_space(1), method="bfs")
    for r in rs:
        assert r.radius <= abs(float(r.interior_point[0])) + 1e-9


def test_chebyshev_centres_stop_at_the_time_limit_and_say_so(monkeypatch) -> None:
    # one LP per region ran after the deadline (21 s for a 3 s limit)
    import relulab.lp

    net = random_network(np.random.default_rng(2), [2, 12, 1], scale=2.0)
    box = Box([-1, -1], [1, 1])
    real = relulab.lp.chebyshev_center

    def slow(*args, **kwargs):
        time.sleep(0.05)
        return real(*args, **kwargs)

    monkeypatch.setattr(relulab.lp, "chebyshev_center", slow)
    rs = regions.enumerate(net, box, centers="chebyshev", time_limit=0.3)
    full = regions.enumerate(net, box)
    assert len(rs) == len(full) > 20 and "time limit" in rs.info["centers"]
    assert all(bool(np.all(r.A @ r.interior_point < r.b)) for r in rs)   # still interior points


@pytest.mark.parametrize(("call", "msg"), [
    (lambda: list(regions.iter_regions(THREE_LINES, Box([-1, -1], [1, 1]), max_regions=2.5)), "max_regions"),
    (lambda: list(regions.iter_regions(THREE_LINES, Box([-1, -1], [1, 1]), max_regions=0)), "max_regions"),
    (lambda: regions.enumerate(np.eye(2)), "expected a relulab Network"),
    (lambda: regions.slice2d(THREE_LINES, window=(-1, 1, 1)), "window must be four numbers"),
    (lambda: regions.along_segment(THREE_LINES, "ab", "cd"), "the ends a and b must be finite points"),
    (lambda: regions.graph([1, 2]), "expected a RegionSet"),
    (lambda: regions.graph_summary(regions.enumerate(THREE_LINES, Box([-1, -1], [1, 1]))),
     "expected the networkx graph"),
])
def test_bad_arguments_are_one_error(call, msg) -> None:
    with pytest.raises(RelulabError, match=msg):
        call()


def test_write_regions_refuses_a_fractional_cap(tmp_path) -> None:
    with pytest.raises(RelulabError, match="max_regions must be a positive integer"):
        regions.write_regions(THREE_LINES, tmp_path / "r.jsonl", Box([-1, -1], [1, 1]), max_regions=2.5)


def test_read_regions_names_a_file_that_is_not_utf8_or_not_regions(tmp_path) -> None:
    (tmp_path / "bin.jsonl").write_bytes(b"\xff\xfe\x00 not text")
    with pytest.raises(RelulabError, match="bin.jsonl:1: not a region file"):
        list(regions.read_regions(tmp_path / "bin.jsonl"))
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"x": [1, 2]}), tmp_path / "other.parquet")
    with pytest.raises(RelulabError, match="other.parquet: row 1 is not a region record"):
        list(regions.read_regions(tmp_path / "other.parquet"))


def test_cli_flat_box_names_the_option(capsys) -> None:
    code, _, err = run(capsys, "regions", "example:tiny_2d.onnx", "--box", "0:0,-1:1", "--count")
    assert code == 1 and "--box 0:0,-1:1: region enumeration needs a full-dimensional box" in err


@pytest.mark.parametrize("call, match", [
    (lambda net: regions.slice2d(None), "slice2d: expected a relulab Network"),
    (lambda net: regions.along_segment(None, [0.0, 0.0], [1.0, 1.0]), "along_segment: expected a relulab Network"),
    (lambda net: regions.along_segment(net, [float("nan"), 0.0], [1.0, 1.0]), "ends a and b must be finite"),
    (lambda net: regions.slice2d(net, origin=[float("nan"), 0.0]), "origin, u and v must be finite"),
    (lambda net: list(regions.iter_regions(net, deadline="soon")), "deadline must be"),
    (lambda net: list(regions.iter_regions(net, report=[])), "report must be a dict"),
    (lambda net: regions.enumerate(net, parallel="local", workers=1, cells=1.5), "cells must be an integer"),
])
def test_bad_slice_segment_and_stream_arguments_are_named(call, match):
    """They raised AttributeError / TypeError, or blamed a NaN weight of the network."""
    from relulab import Network
    from relulab.errors import RelulabError

    net = Network([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    with pytest.raises(RelulabError, match=match):
        call(net)


def test_adjacency_finds_the_edge_on_a_line_of_duplicate_neurons():
    """Two regions share a facet on x = y, carried by two duplicate neurons; across it a
    deeper neuron vanishes on the whole neighbour and reads 1e-16 at the probe: the raw
    pattern matched no region and the edge was missed.  The exact arrangement (Fraction
    polygon clipping, independently) has 5 regions and 5 edges, this one among them."""
    Ws = [[[0, -1], [-1, 1], [-1, 1]], [[-1, 1, 0], [1, -1, 0], [-1, 0, -1]], [[1, 1, 1], [1, -1, -1]],
          [[0, 1], [0, -1], [-1, 1]]]
    bs = [[1, 0, 0], [1, -1, 0], [1, 0], [-1, -1, 1]]
    net = Network([np.array(W, float) for W in Ws] + [np.ones((1, 3))],
                  [np.array(b, float) for b in bs] + [np.zeros(1)])
    rs = regions.enumerate(net, Box([-1, -1], [1, 1]))
    key = ["".join("1" if v else "0" for v in p) for p in rs.patterns]
    edges = {frozenset((key[i], key[j])) for i, j, _ in regions.adjacency(rs).tolist()}
    assert len(rs) == 5 and len(edges) == 5
    assert frozenset(("10010011000", "11110011000")) in edges


def test_a_count_over_the_whole_space_stopped_by_memory_says_so():
    """It said the artificial box 'could not be certified complete' and suggested a larger
    box; the memory budget ended it (as the docs say: ResourceLimitError, as on a box)."""
    from relulab.limits import ResourceLimitError, memory_limit

    rng = np.random.default_rng(0)
    net = Network([rng.normal(size=(40, 3)), rng.normal(size=(40, 40)), rng.normal(size=(1, 40))],
                  [rng.normal(size=40) * .3, rng.normal(size=40) * .3, np.zeros(1)])
    with memory_limit(2 * 10**6), pytest.raises(ResourceLimitError, match="regions.count: memory"):
        regions.count(net, Polytope.whole_space(3))


def test_a_segment_says_when_it_merged_breakpoints_farther_apart_than_rounding():
    """A spike of height 1 and width 2e-6 at x = 1e-6, on the segment [-1e6, 1e6]: its
    three kinks are 5e-13 apart in the segment's parameter and were merged into one,
    silently (the form said f = -1.5e-5 where f = 1).  On [-1, 1] they are resolved; the
    exact copy resolves them everywhere."""
    S = 1e6
    net = Network([[[1.0], [1.0], [1.0]], [[S, -2 * S, S]]], [[0.0, -1e-6, -2e-6], [0.0]])
    far = regions.along_segment(net, [-1e6], [1e6])
    assert far.n_pieces == 4 or not far.certified
    near = regions.along_segment(net, [-1.0], [1.0])
    assert near.certified and near.n_pieces == 4 and near.near_breakpoints == 0
    from fractions import Fraction

    ex = regions.along_segment(net.exact(), [Fraction(-10**6)], [Fraction(10**6)])
    assert ex.certified and ex.n_pieces == 4


def test_segment_json_says_whether_it_is_certified():
    h = 1e-8
    net = Network([[[1.0], [1.0], [1.0]], [[1 / h, -2 / h, 1 / h]]], [[0.0, -h, -2 * h], [0.0]])
    seg = regions.along_segment(net, [-1e6], [1e6])
    d = seg.to_dict()
    assert d["certified"] == seg.certified and d["near_breakpoints"] == seg.near_breakpoints


def test_segment_kinks_tens_of_ulps_apart_are_not_certified():
    """A spike of height 1 at x = 1e-8 on [-1e6, 1e6]: its kinks are 22 ulps of t apart;
    they were merged (2 pieces of 4) with the segment still certified."""
    h = 1e-8
    net = Network([[[1.0], [1.0], [1.0]], [[1 / h, -2 / h, 1 / h]]], [[0.0, -h, -2 * h], [0.0]])
    seg = regions.along_segment(net, [-1e6], [1e6])
    exact = regions.along_segment(net.exact(), [-10**6], [10**6])
    assert exact.n_pieces == 4
    assert seg.n_pieces == 4 or not seg.certified


@pytest.mark.parametrize("call, msg", [
    (lambda n: regions.along_segment(n.exact(), [float("inf"), 0], [1, 1]), "finite points"),
    (lambda n: regions.along_segment(n, [-1e308, 0], [1e308, 1]), "overflows float64"),
    (lambda n: regions.along_segment(n, [0, 0], [1, 1], tol="x"), "tol must be a number"),
    (lambda n: regions.along_segment(n, [0, 0], [1, 1], tol=float("nan")), "tol must be a number"),
    (lambda n: regions.slice2d(n, u=[1, 0], v=[0, 1, 0]), "v has 3 entries"),
    (lambda n: regions.slice2d(n, origin="ab"), "points of numbers"),
    (lambda n: regions.enumerate(n).locate("ab"), "points must be numbers"),
    (lambda n: regions.write_regions(n, None), "path must be a file name"),
])
def test_region_inputs_are_named(call, msg):
    from relulab.errors import RelulabError

    net = Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
    with pytest.raises(RelulabError, match=msg):
        call(net)
    with pytest.raises(TypeError, match="indexed by an integer"):
        regions.enumerate(net)["a"]


def test_layers_that_underflow_are_refused():
    """relu(s (h1 - h2)) with h = relu(s (x +- 1)): kinks at -1, 0, 1 (4 regions) for any
    s > 0; at s = 1e-170 the composed map underflowed and 3 regions came back certified."""
    from relulab.errors import RelulabError

    s = 1e-170
    net = Network([[[s], [-s]], [[s, -s]], [[1.0]]], [[s, s], [0.0], [0.0]])
    with pytest.raises(RelulabError, match="below float64's range"):
        regions.count(net, Box([-2.0], [2.0]))
    one = Network([[[1.0], [-1.0]], [[1.0, -1.0]], [[1.0]]], [[1.0, 1.0], [0.0], [0.0]])
    assert regions.count(one, Box([-2.0], [2.0])) == 4


def test_segment_pattern_of_a_neuron_identically_zero_is_inactive():
    """Layer 3's third neuron is h1 - h2 + 2 with h2 = h1 + 2: identically 0 on the
    segment.  Its float pre-activation kept +1e-16 and read active (the exact run, the
    forward pass and the region engine read it inactive: ties are inactive)."""
    Ws = [[[-1.3503734812323618, -0.6148541695252585, -0.14925394401266923],
           [-0.7134978692186584, -0.6702191180891651, -0.7946902083608175]],
          [[0.0, 1.0], [0.0, 1.0]], [[1.0, 1.0], [-1.0, -2.0], [1.0, -1.0], [0.0, -1.0]],
          [[-1.0366316570331293, 0.3099081709040746, -1.959253159068491, -0.1474619966965854],
           [0.41185445804472415, 0.2550230199110351, 0.7519808711020289, 0.3888847061490008]]]
    bs = [[-1.3405033531624244, -0.22142196459370653], [0.0, 2.0], [2.0, 1.0, 2.0, 0.0],
          [0.7276525301453647, 0.7647644555356454]]
    net = Network(Ws, bs)
    a, b = [1.0, 2.0, -3.0], [1.0, -1.0, 1.0]
    sf = regions.along_segment(net, a, b)
    se = regions.along_segment(net.exact(), a, b)
    assert sf.patterns.tolist() == se.patterns.tolist()


def test_the_graph_of_a_partial_set_does_not_probe_its_frontier(monkeypatch):
    """regions --graph --time-limit 5 spent 10 s more probing across every frontier facet
    of the 37k regions found (their neighbours were never enumerated)."""
    import numpy as np

    from relulab import Box, Network, regions
    from relulab.regions import _graph

    rng = np.random.default_rng(0)
    net = Network([rng.normal(size=(12, 3)), rng.normal(size=(1, 12))], [rng.normal(size=12), np.zeros(1)])
    rs = regions.enumerate(net, Box(-np.ones(3), np.ones(3)), max_regions=20)
    assert rs.partial

    def no_probe(*a, **k):
        raise AssertionError("probed the frontier of a partial set")

    monkeypatch.setattr(_graph, "_probe", no_probe)
    G = regions.graph(rs, net)
    for a, b in G.edges():                     # every edge joins regions one flip apart
        assert (rs[a].pattern != rs[b].pattern).sum() >= 1
