"""Near ties: a region thinner than the engine's sign tolerance (relative to the domain's
scale) is not found, and the result must then not be certified.

The truth is checked independently: the regions of the same network on a small box (where
every feature is large against the tolerance) are regions of the big box too, since the
big box contains the small one; and a run with a much finer tolerance finds the thin ones.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from relulab import Box, Network, Polytope, construct, lipschitz, regions
from relulab.errors import RelulabError, UncertifiedCount
from relulab.regions import _engine

# three lines x = 0, y = 0, x + y = 1/2: 7 regions in the plane, one a triangle of area 1/8
W1 = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
B1 = np.array([0.0, 0.0, -0.5])


def triangle_net(out=(1.0, 1.0, 1.0)) -> Network:
    return Network([W1, np.array([out])], [B1, np.zeros(1)])


def big_box(s: float, d: int = 2) -> Box:
    return Box(-s * np.ones(d), s * np.ones(d))


def lopsided_box(s: float) -> Box:
    # as big, but x >= -1 cuts through the structure of R^2, so the whole space's count
    # cannot stand in for the box's (regions.count must refuse, not substitute)
    return Box([-1.0, -s], [s, s])


def test_all_seven_regions_exist_in_the_big_box():
    # the oracle: the 7 patterns on [-1, 1]^2 are all full-dimensional inside the big box
    small = regions.enumerate(triangle_net(), big_box(1.0))
    assert len(small) == 7 and small.certified
    assert len({tuple(p) for p in small.patterns.tolist()}) == 7


@pytest.mark.parametrize("engine", ["auto", "cells"])
def test_huge_box_that_loses_the_triangle_is_not_certified(engine):
    rs = regions.enumerate(triangle_net(), big_box(1e11), engine=engine)
    if len(rs) < 7:
        assert not rs.certified
        assert rs.info["near_ties"] >= 1
        assert rs.summary()["near_ties"] >= 1 and rs.summary()["certified"] is False
    else:
        assert len(rs) == 7


def test_count_refuses_and_store_says_uncertified(tmp_path):
    with pytest.raises(RelulabError, match="too close to call|so large"):
        regions.count(triangle_net(), lopsided_box(1e11))
    # a box holding all of R^2's structure has the whole space's count (7, as on [-1, 1]^2)
    assert regions.count(triangle_net(), big_box(1e11)) == 7
    s = regions.write_regions(triangle_net(), tmp_path / "r.jsonl", big_box(1e11))
    assert s.status == "uncertified" and s.regions == 6
    report: dict = {}
    got = list(regions.iter_regions(triangle_net(), big_box(1e11), report=report))
    assert len(got) == 6 and report["certified"] is False and report["near_ties"] >= 1


def test_moderate_box_is_still_certified_and_counted():
    rs = regions.enumerate(triangle_net(), big_box(1e10))
    assert len(rs) == 7 and rs.certified and rs.summary()["near_ties"] == 0
    assert regions.count(triangle_net(), big_box(1e10)) == 7


def test_lipschitz_does_not_call_a_set_with_a_lost_region_exact():
    # f = 3 (relu(x + y - 1/2) - relu(x) - relu(y)): the gradient (-3, -3), norm 3 sqrt 2,
    # only on the thin triangle; everywhere else the norm is at most 3
    net = triangle_net((-3.0, -3.0, 3.0))
    r = lipschitz.lipschitz(net, big_box(1e11), p=2, method="enumerate")
    truth = 3.0 * np.sqrt(2.0)
    assert r.upper >= truth * (1 - 1e-9)
    assert r.status != "exact" or abs(r.lower - truth) <= 1e-9 * truth


def _count_at(net: Network, box: Box, tol: float, monkeypatch) -> tuple[int, int]:
    monkeypatch.setattr(_engine, "SIGN_TOL", tol)
    pb = _engine.Problem(net, box)
    X0, F0, ptr0, _ = _engine.initial_polytope(pb)
    n = sum(ch.batch.n for ch in _engine.run(pb, X0, F0, ptr0))
    return n, pb.near_ties


def test_certified_counts_agree_with_a_finer_tolerance(monkeypatch):
    # random networks on boxes up to 1e8: whenever no near tie is reported, the count
    # equals the count at a 1000 times finer tolerance (which resolves thinner regions)
    rng = np.random.default_rng(7)
    seen_ties = 0
    for _ in range(12):
        dims = [2, int(rng.integers(6, 14)), int(rng.integers(6, 14)), 1]
        Ws = [rng.standard_normal((dims[i + 1], dims[i])) for i in range(3)]
        bs = [rng.standard_normal(dims[i + 1]) for i in range(3)]
        net = Network(Ws, bs)
        box = big_box(float(10.0 ** rng.integers(5, 9)))
        n, ties = _count_at(net, box, 1e-11, monkeypatch)
        fine, _ = _count_at(net, box, 1e-14, monkeypatch)
        if ties == 0:
            assert n == fine
        else:
            seen_ties += 1
            assert n <= fine
    assert seen_ties >= 1  # the seed gives boxes where near ties occur


def test_degenerate_constructions_raise_no_near_tie():
    # vertices exactly on hyperplanes (rounding noise only) are not near ties
    saw = regions.enumerate(construct.sawtooth(8).float(), Box([0.0], [1.0]))
    assert len(saw) == 256 and saw.certified
    m = construct.max_n(5).float()
    rs = regions.enumerate(m, big_box(1.0, 5), engine="cells")
    assert rs.certified and "near_ties" not in rs.info
    assert regions.count(m, big_box(1.0, 5)) == len(rs)


def test_identifiability_does_not_decide_on_a_set_with_a_lost_region():
    from relulab.logic import identifiability

    net = triangle_net((-3.0, -3.0, 3.0))
    assert identifiability(net, big_box(1.0)).status == "locally identifiable"
    r = identifiability(net, big_box(1e11))
    assert r.status == "unknown" or r.n_regions == 7


def test_parallel_paths_report_the_near_tie_too():
    box = big_box(1e11)
    rs = regions.enumerate(triangle_net(), box, parallel="local", workers=2, cells=4)
    assert len(rs) == 7 or (not rs.certified and rs.info["near_ties"] >= 1)
    with pytest.raises(RelulabError, match="too close to call|so large"):
        regions.count(triangle_net(), lopsided_box(1e11), parallel="local", workers=2, cells=4)


@pytest.mark.parametrize("eps", [1e-10, 1e-9, 1e-7, 1e-5])
def test_bfs_lists_a_thin_spike_or_does_not_certify(eps):
    # relu(eps - |x - c|): four regions on [-1, 1], two of them eps wide.  The BFS's
    # facet LPs work at 1e-9 and its step across a facet is 1e-6: a thinner region was
    # skipped (or jumped over) while the set still said certified
    c = 0.3
    net = Network([[[1.0], [-1.0]], [[-1.0, -1.0]], [[1.0 / eps]]], [[-c, c], [eps], [0.0]])
    truth = np.array([-0.5, c - eps / 2, c + eps / 2, 0.9])   # one point inside each region
    want = {p.tobytes() for p in net.pattern_vector(truth[:, None])}
    assert len(want) == 4
    rs = regions.enumerate(net, Box([-1], [1]), method="bfs")
    got = {p.tobytes() for p in rs.patterns}
    assert got <= want
    if rs.certified:
        assert got == want
    else:
        assert rs.info["unresolved"] > 0


def test_training_recorder_records_nan_for_an_uncertified_count():
    # RegionCount used to let regions.count's refusal end the training run
    from relulab.dynamics import RegionCount, train
    from relulab.errors import UncertifiedCount

    with pytest.raises(UncertifiedCount):
        regions.count(triangle_net(), lopsided_box(1e11))
    X = np.array([[0.1, 0.2], [0.3, -0.4]])
    y = np.array([1.0, 0.0])
    rec = [RegionCount(box=lopsided_box(1e11)), RegionCount(box=big_box(1.0))]
    rec[1].name = "regions_small"
    with pytest.warns(UserWarning, match="no certified count at step 0"):
        t = train(triangle_net(), X, y, lr=1e-12, steps=2, every=1, record=rec)
    assert t.status != "error"
    assert np.all(np.isnan(t.records["regions"]))        # a tiny step: the same tie each time
    assert t.records["regions_small"].tolist() == [7, 7, 7]


def test_cancelled_terms_are_not_read_as_a_sign():
    # layer 1 adds B ~ 1e6 to x and y, layer 2 takes it away again: the lines x = 0,
    # y = 0 and x + y = c with c = 1.16e-10 exactly (7 regions).  Composed in float64, c
    # is lost in the rounding of the sums of 1e6's (it came out as 0: 6 regions,
    # certified); the count must be 7 or the set uncertified (and count must refuse)
    B = np.array([1000000.671587634, 1000000.8450230915, 1000000.9387518285])
    b3 = 3000002.455362554
    c = Fraction(b3) - sum(Fraction(v) for v in B)
    assert c > 0
    net = Network([np.array([[1.0, 0], [0, 1.0], [0, 0]]),
                   np.array([[1.0, 0, 0], [0, 1.0, 0], [-1.0, -1.0, -1.0]]), np.ones((1, 3))],
                  [B, np.array([-B[0], -B[1], b3]), np.zeros(1)])
    box = Box([-1.0, -1.0], [1.0, 1.0])
    rs = regions.enumerate(net, box)
    assert len(rs) == 7 or (not rs.certified and rs.info["near_ties"] > 0)
    if not rs.certified:
        with pytest.raises(UncertifiedCount):
            regions.count(net, box)
    # the same lines without the cancelling 1e6's: certified, 7 regions
    plain = Network([np.eye(2), np.array([[1.0, 0], [0, 1.0], [-1.0, -1.0]]), np.ones((1, 3))],
                    [np.zeros(2), np.array([0.0, 0.0, 0.25]), np.zeros(1)])
    rs = regions.enumerate(plain, box)
    assert len(rs) == 7 and rs.certified


@pytest.mark.parametrize("w", [1e-12, -1e-12, 6e-13])
def test_bfs_near_twin_hyperplanes_are_not_certified(w):
    # z1 = x - 0.3 and z2 = 0.3 + w - x: each hyperplane's redundancy LP is blocked by
    # the other (1e-12 away), so the region x > 0.3 (length 0.7) was missed with
    # certified=True.  The exact patterns at -0.5, 0.3 + w/2 and 0.9 are three
    net = Network([np.array([[1.0], [-1.0]]), np.ones((1, 2))], [np.array([-0.3, 0.3 + w]), np.zeros(1)])
    exact = net.exact()
    truth = {tuple(bool(v > 0) for v in exact.preactivations(np.array([[x]], dtype=object))[0][0])
             for x in (Fraction(-1, 2), Fraction(0.3) + Fraction(w) / 2, Fraction(9, 10))}
    rs = regions.enumerate(net, Box([-1.0], [1.0]), method="bfs")
    assert len(rs) == len(truth) or (not rs.certified and rs.info["unresolved"] > 0)
    # twins farther apart than the LPs' accuracy are two facets: certified, 3 regions
    far = Network([np.array([[1.0], [-1.0]]), np.ones((1, 2))], [np.array([-0.3, 0.3 + 1e-3]), np.zeros(1)])
    rs = regions.enumerate(far, Box([-1.0], [1.0]), method="bfs")
    assert len(rs) == 3 and rs.certified


def test_unbounded_near_twins_beyond_the_box_are_not_certified():
    # layer 2: h0 - 100 and 100 + 1e-10 - h0, beyond the first artificial box: in the
    # certificate's LPs each row hid the other's facet, and 4 regions were certified
    # where the half-plane x > 100 holds more (its pattern is found by exact evaluation)
    X, w = 100.0, 1e-10
    net = Network([np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]]),
                   np.array([[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]]), np.ones((1, 2))],
                  [np.zeros(3), np.array([-X, X + w]), np.zeros(1)])
    pts = [(-5, 1), (-5, -1), (5, 1), (5, -1), (200, 1), (200, -1), (X + w / 2, 1), (X + w / 2, -1)]
    exact = net.exact()
    truth = {tuple(bool(v > 0) for z in exact.preactivations(np.array([[Fraction(a), Fraction(b)]], dtype=object))
                   for v in z[0]) for a, b in pts}
    rs = regions.enumerate(net, Polytope.whole_space(2))
    assert rs.certified is False or len(rs) >= len(truth)
    if not rs.certified:
        with pytest.raises(UncertifiedCount):
            regions.count(net, Polytope.whole_space(2))


def test_a_box_far_larger_than_the_network_is_counted_from_the_whole_space():
    # on [-1e15, 1e15]^2 the sign tolerance (1e4) swallows features of size 1: the box's
    # own enumeration merged 108 regions into 30 and called them certified.  The count
    # must equal the one on [-1e6, 1e6]^2 (certified, and the box holds every vertex) and
    # the whole space's; the enumeration itself is not certified
    rng = np.random.default_rng(3)
    net = Network([rng.normal(size=(8, 2)), rng.normal(size=(8, 8)), rng.normal(size=(1, 8))],
                  [rng.normal(size=8), rng.normal(size=8), np.zeros(1)])
    ref = regions.count(net, big_box(1e6))
    assert ref == regions.count(net, Polytope.whole_space(2))
    assert regions.count(net, big_box(1e15)) == ref
    assert regions.count(net, big_box(1e200)) == ref
    rs = regions.enumerate(net, big_box(1e15))
    assert not rs.certified and "coarse_domain" in rs.info
    # a huge box that does not hold the whole space's structure is refused
    half = Box([0.0, -1e15], [1e15, 1e15])
    with pytest.raises(UncertifiedCount):
        regions.count(net, half)


def _exact_signs(net: Network, point) -> tuple[int, ...]:
    """Pre-activation signs of a one-hidden-layer net at a rational point, exactly."""
    W, b = net.weights[0], net.biases[0]
    z = [sum(Fraction(float(W[i, j])) * point[j] for j in range(len(point))) + Fraction(float(b[i]))
         for i in range(W.shape[0])]
    return tuple(int(v > 0) for v in z), tuple((v > 0) - (v < 0) for v in z)


@pytest.mark.parametrize("w", [1e-10, 5e-11, 3e-11, 1e-11])
def test_a_resolved_thin_slab_is_kept_by_enumerate(w):
    # lines y = 0, y = w and x + y = 1 on [-1, 1]^2: 5 regions.  The flatness test of the
    # assembly (RANK_TOL = 1e-9) dropped both slab pieces, 3 regions "certified", while
    # regions.count said 5
    net = Network([np.array([[0.0, 1.0], [0.0, 1.0], [1.0, 1.0]]), np.ones((1, 3))],
                  [np.array([0.0, -w, -1.0]), np.zeros(1)])
    box = Box([-1.0, -1.0], [1.0, 1.0])
    rs = regions.enumerate(net, box)
    got = {tuple(int(v) for v in p) for p in rs.patterns.astype(int).tolist()}
    assert rs.certified or w < 5e-11     # near the sign tolerance it may only be uncertified
    if rs.certified:
        # exact witnesses: a rational interior point of each slab piece
        for pt in [(Fraction(0), Fraction(w) / 2), (Fraction(1) - Fraction(w) / 4, Fraction(w) / 2)]:
            pattern, signs = _exact_signs(net, pt)
            assert 0 not in signs and pattern in got
        assert len(rs) == regions.count(net, box) == 5
    else:
        with pytest.raises(UncertifiedCount):
            regions.count(net, box)


def test_whole_space_count_keeps_a_thin_slab():
    # y = 0, y = 1e-9, x = 0, x + y = 0 on R^2: 9 regions; the flat test gave 7
    net = Network([np.array([[0.0, 1.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]), np.ones((1, 4))],
                  [np.array([0.0, -1e-9, 0.0, 0.0]), np.zeros(1)])
    assert regions.count(net, Polytope.whole_space(2)) == 9
    assert regions.count(net, Box([-1.0, -1.0], [1.0, 1.0])) == 9


# ------------------------------------------------------------------ features far below a huge box's tolerance
def test_one_far_neuron_does_not_hide_the_small_features_of_a_huge_box():
    """relu(x), relu(x - 0.5), relu(x + 1e3) on [-1e13, 1e13]: breakpoints -1000, 0, 0.5,
    4 regions.  The coarse-domain guard looked at the farthest hyperplane only (1000 from
    the origin, above the tolerance 100), and 3 regions came back certified."""
    net = Network([[[1.0], [1.0], [1.0]], [[1.0, 1.0, 1.0]]], [[0.0, -0.5, 1e3], [0.0]])
    box = Box([-1e13], [1e13])
    rs = regions.enumerate(net, box)
    assert len(rs) == 4 or not rs.certified
    try:
        assert regions.count(net, box) == 4   # the whole-space stand-in
    except UncertifiedCount:
        pass


def test_a_random_network_with_one_far_neuron_is_not_miscounted():
    """A 2-8-1 network plus one line 1e12 from the origin, on [-1e13, 1e13]^2: 46 regions
    (Zaslavsky: the 9 lines are in general position and cross inside the box); 25 came
    back certified."""
    from itertools import combinations

    rng = np.random.default_rng(0)
    W = np.vstack([rng.normal(size=(8, 2)), [[1.0, 0.3]]])
    b = np.concatenate([rng.normal(size=8) * 0.3, [1e12]])
    net = Network([W, np.ones((1, 9))], [b, np.zeros(1)])
    S = 1e13
    crossings = [np.linalg.solve(W[[i, j]], -b[[i, j]]) for i, j in combinations(range(9), 2)]
    assert all(np.all(np.abs(p) < S) for p in crossings)   # general position inside the box
    rs = regions.enumerate(net, Box([-S, -S], [S, S]))
    assert len(rs) == 1 + 9 + 36 or not rs.certified
    try:
        assert regions.count(net, Box([-S, -S], [S, S])) == 46
    except UncertifiedCount:
        pass


def test_exact_neurons_that_float64_makes_one_are_not_certified():
    """x - 1/3 and x - (1/3 + 1e-20): 3 regions on [-1, 1]; rounded to float64 the two
    lines coincide and 2 regions came back certified."""
    third = Fraction(1, 3)
    net = Network([np.array([[Fraction(1)], [Fraction(1)]], dtype=object),
                   np.array([[Fraction(1), Fraction(-1)]], dtype=object)],
                  [np.array([-third, -(third + Fraction(1, 10**20))], dtype=object),
                   np.array([Fraction(0)], dtype=object)])
    assert regions.along_segment(net, [Fraction(-1)], [Fraction(1)]).n_pieces == 3
    rs = regions.enumerate(net, Box([-1.0], [1.0]))
    assert len(rs) == 3 or not rs.certified
    with pytest.raises(UncertifiedCount, match="rounded to float64"):
        regions.count(net, Box([-1.0], [1.0]))
    # exact rows that are truly one hyperplane (proportional) are no such case
    same = Network([np.array([[Fraction(1)], [Fraction(3)]], dtype=object),
                    np.array([[Fraction(1), Fraction(1)]], dtype=object)],
                   [np.array([-third, Fraction(-1)], dtype=object), np.array([Fraction(0)], dtype=object)])
    assert regions.count(same, Box([-1.0], [1.0])) == 2


def test_a_slice_says_when_its_partition_is_not_certified():
    """Lines x = 0, y = 0, x + y = 0.5 on the window [-1e11, 1e11]^2: 7 polygons, 6 found;
    the slice called itself the exact partition and carried no flag."""
    net = Network([np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), np.ones((1, 3))],
                  [np.array([0.0, 0.0, -0.5]), np.zeros(1)])
    S = 1e11
    sl = regions.slice2d(net, window=(-S, S, -S, S))
    rs = regions.enumerate(net, Box([-S, -S], [S, S]))
    assert sl.certified == rs.certified and sl.to_dict()["certified"] == rs.certified
    assert len(sl) == 7 or not sl.certified
    small = regions.slice2d(net, window=(-1.0, 1.0, -1.0, 1.0))
    assert small.certified and len(small) == 7 and small.near_ties == 0


def test_a_deeper_layer_feature_below_the_tolerance_is_not_certified():
    """relu(x), relu(x - 1e12), then relu(h1 - 0.5): kinks at 0, 0.5 and 1e12, so 4
    regions on [-1e13, 1e13] (the exact segment says so).  The kink at 0.5 made by the
    second layer was merged below the near-tie threshold: 3 regions, certified."""
    net = Network([[[1.0], [1.0]], [[1.0, 0.0]], [[1.0]]], [[0.0, -1e12], [-0.5], [0.0]])
    dom = Box([-1e13], [1e13])
    assert regions.along_segment(net.exact(), [-10**13], [10**13]).n_pieces == 4
    rs = regions.enumerate(net, dom)
    assert len(rs) == 4 or not rs.certified
    try:
        assert regions.count(net, dom) == 4   # a count, if any, must be the right one
    except UncertifiedCount:
        pass


def test_far_neuron_hides_no_features_of_a_wide_first_layer():
    """200 lines within 0.01 of the origin in general position plus one 1e12 away, on
    [-1e14, 1e14]^2: 20,300 regions (Zaslavsky).  Above 20,000 first-layer vertices the
    feature check was skipped, and 599 regions came back certified."""
    rng = np.random.default_rng(1)
    n = 200
    th = np.pi * (np.arange(n) + rng.uniform(0.1, 0.9, n)) / n
    W = np.vstack([np.column_stack([np.cos(th), np.sin(th)]), [[0.6, 0.8]]])
    b = np.append(rng.uniform(-0.01, 0.01, n), 1e12)
    net = Network([W, np.ones((1, n + 1))], [b, np.zeros(1)])
    dom = Box([-1e14, -1e14], [1e14, 1e14])
    rs = regions.enumerate(net, dom)
    assert len(rs) == 1 + (n + 1) + n * (n + 1) // 2 or not rs.certified
    with pytest.raises(UncertifiedCount):
        regions.count(net, dom)


def test_whole_space_certificate_stops_at_the_time_limit(monkeypatch):
    """The certificate's LPs (one per row of every region at the artificial box) ignored
    the deadline: 17 s past a 1 s limit on a 3-45-1 net.  Here each facet LP is slowed;
    the result must come back partial and uncertified instead of running them all."""
    import time

    import relulab.regions._unbounded as unb

    real = unb.is_facet

    def slow(*args, **kwargs):
        time.sleep(0.05)
        return real(*args, **kwargs)

    monkeypatch.setattr(unb, "is_facet", slow)
    rng = np.random.default_rng(0)
    net = Network([rng.normal(size=(12, 3)), rng.normal(size=(1, 12))], [rng.normal(size=12), np.zeros(1)])
    rs = regions.enumerate(net, Polytope.whole_space(3), time_limit=1.0)
    assert rs.partial and not rs.certified and "time limit" in str(rs.info.get("stopped"))
