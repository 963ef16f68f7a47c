"""decision_rules: the rules tile the box exactly (areas add up), agree with a dense
grid, are convex (each rule's H-representation has exactly the rule's area), and hold
on 10^5 samples inside each."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import ConvexHull, HalfspaceIntersection

from relulab import Box, Network
from relulab.explain import ExplainError, all_decisions, decision_rules
from relulab.explain.decision import sign_decision


def _net(seed: int, d: int = 2, h: int = 8, m: int = 3) -> Network:
    rng = np.random.default_rng(seed)
    return Network([rng.normal(size=(h, d)), rng.normal(size=(h, h)) / np.sqrt(h),
                    rng.normal(size=(m, h))],
                   [rng.normal(size=h) * 0.3, rng.normal(size=h) * 0.3, rng.normal(size=m) * 0.1])


def _labels(net, X):
    decs = all_decisions(net)
    Y = net(X)
    out = np.full(len(X), "", dtype=object)
    for dec in decs:
        out[dec.holds(Y)] = dec.label
    return out


def _near_tie(net, X, tol=1e-7):
    Y = net(X)
    if Y.shape[1] == 1:
        return np.abs(Y[:, 0]) < tol
    S = np.sort(Y, axis=1)
    return S[:, -1] - S[:, -2] < tol


def _hrep_area(rule, box: Box) -> float:
    """Area of {box, A x <= b}, computed by qhull (independent of relulab)."""
    A = np.vstack([rule.A, np.eye(2), -np.eye(2)])
    b = np.concatenate([rule.b, box.hi, -box.lo])
    c = rule.vertices.mean(0)
    hs = HalfspaceIntersection(np.hstack([A, -b[:, None]]), c)
    return float(ConvexHull(hs.intersections).volume)


@pytest.mark.parametrize("seed,m", [(0, 1), (1, 2), (2, 3), (3, 3), (4, 1)])
@pytest.mark.parametrize("method", ["bsp", "merge"])
def test_rules_tile_the_box_agree_with_a_grid_and_are_convex(seed, m, method):
    net = _net(seed, m=m)
    box = Box([-1, -1.5], [2, 1])
    dr = decision_rules(net, box, method=method)
    area = float(np.prod(box.widths))
    assert dr.covered_fraction == pytest.approx(1.0, abs=1e-9)
    assert sum(v["volume_fraction"] for v in dr.decisions.values()) == pytest.approx(1.0, abs=1e-9)
    g = np.linspace(0, 1, 301)
    G = np.stack(np.meshgrid(box.lo[0] + g * box.widths[0], box.lo[1] + g * box.widths[1]),
                 -1).reshape(-1, 2)
    ok = ~_near_tie(net, G)
    pred = dr.predict(G)
    assert np.all(pred[ok] == _labels(net, G)[ok])
    for r in dr.rules:
        # convex and exactly the rule: the polygon A x <= b (inside the box) has the
        # rule's own area, so it is the union of the pieces merged into it
        assert _hrep_area(r, box) == pytest.approx(r.volume_fraction * area, rel=1e-7, abs=1e-12)
    assert dr.n_rules <= dr.n_pieces


def test_every_rule_holds_on_samples_and_is_certified():
    net = _net(7, h=6, m=3)
    box = Box([-1, -1], [1, 1])
    dr = decision_rules(net, box, certify_rules=True)
    assert dr.certified is True
    decs = {d.label: d for d in all_decisions(net)}
    rng = np.random.default_rng(0)
    for r in dr.rules:
        lo, hi = r.vertices.min(0), r.vertices.max(0)
        X = np.empty((0, 2))
        while len(X) < 100_000:
            Z = lo + rng.random((200_000, 2)) * (hi - lo)
            X = np.vstack([X, Z[r.contains(Z, tol=0.0) & box.contains(Z)]])
        Y = net(X[:100_000])
        assert np.sum(decs[r.decision].margin(Y) > 1e-9 * (1 + np.abs(Y).max())) == 0


def test_one_neuron_rule_is_its_halfspace():
    net = Network([[[2.0, -1.0]]], [[0.5]])
    dr = decision_rules(net, Box([-1, -1], [1, 1]), "positive")
    assert dr.n_rules == 1
    r = dr.rules[0]
    assert r.A.shape == (1, 2)
    n = -np.array([2.0, -1.0]) / np.sqrt(5)
    np.testing.assert_allclose(r.A[0], n, atol=1e-9)
    np.testing.assert_allclose(r.b[0], 0.5 / np.sqrt(5), atol=1e-9)
    # x1 <= 2 x0 + 0.5 inside [-1, 1]^2: the integral of clip(2 x0 + 0.5, -1, 1) + 1 over
    # x0 is 0 + 1 + 1.5 = 2.5 of the square's 4
    assert r.volume_fraction == pytest.approx(0.625, abs=1e-12)


def test_three_inputs_merge_tiles_the_box():
    net = _net(11, d=3, h=5, m=2)
    box = Box([-1, -1, -1], [1, 1, 1])
    dr = decision_rules(net, box)
    assert dr.method == "merge"
    assert dr.covered_fraction == pytest.approx(1.0, abs=1e-8)
    X = box.sample(20_000, 3)
    ok = ~_near_tie(net, X)
    assert np.all(dr.predict(X)[ok] == _labels(net, X)[ok])


def test_single_decision_and_markdown():
    net = _net(2, m=1)
    box = Box([-1, -1], [1, 1])
    dr = decision_rules(net, box, sign_decision(False), features=["speed", "gap"])
    assert all(r.decision == "negative" for r in dr.rules)
    full = decision_rules(net, box)
    assert dr.decisions["negative"]["volume_fraction"] == pytest.approx(
        full.decisions["negative"]["volume_fraction"], abs=1e-9)
    md = dr.markdown()
    assert md.startswith("### Decision rules") and ("`speed`" in md or "`gap`" in md or "always" in md)
    assert dr.to_dict()["n_rules"] == dr.n_rules


def test_decision_rule_map_plot(tmp_path):
    pytest.importorskip("matplotlib")
    from relulab import plot

    net = _net(1, m=2)
    dr = decision_rules(net, Box([-1, -1], [1, 1]))
    p = tmp_path / "rules.png"
    fig = plot.decision_rules2d(dr, labels=("a", "b"), trajectory=[[0, 0], [0.5, 0.2]],
                                arrows=[([0, 0], [0.1, 0.1])], path=str(p))
    assert p.stat().st_size > 0
    assert len(fig.axes[0].collections[0].get_paths()) == dr.n_rules


def test_certification_has_no_false_negative_from_solver_tolerances():
    # an exact rule whose decision rows never exceed 0 (an independent LP per activation
    # pattern gives 1e-16); relulab.verify.maximize, at HiGHS's default tolerances,
    # bounds it by 1e-6 > RULE_TOL: the tight explanation MILP must decide
    W1 = np.array([[-0.906, 2.087], [1.256, 0.724], [0.829, -1.021], [-0.512, 1.052],
                   [-0.458, 0.289]])
    b1 = np.array([0.666, 0.309, -1.067, -0.177, -0.411])
    W2 = np.array([[-1.748, -1.553, -1.548, -0.475, 0.101], [-2.356, 0.097, 1.462, -0.986, -0.427],
                   [0.21, 0.922, -0.413, -0.157, 1.763]])
    net = Network([W1, W2], [b1, np.array([0.264, 0.545, 0.145])])
    dr = decision_rules(net, Box([-0.19, -0.5], [0.86, 1.3]), method="merge", certify_rules=True)
    assert dr.certified is True
    assert all(r.max_violation <= 1e-7 for r in dr.rules)


def test_certification_never_accepts_a_rule_broken_by_a_hair():
    # f = relu(x0) - relu(-x0) = x0; the rule x0 >= -1e-6 -> positive is false by 1e-6
    # (10 x RULE_TOL): within the recheck margin, so the tight MILP must confirm it
    from relulab.explain._certify import certify

    net = Network([[[1.0, 0.0], [-1.0, 0.0]], [[1.0, -1.0]]], [[0.0, 0.0], [0.0]])
    ok, worst = certify(net, Box([-1, -1], [1, 1]), np.array([[-1.0, 0.0]]), np.array([1e-6]),
                        sign_decision(True))
    # the sound bound covers the true violation 1e-6, widened only by the tolerance error
    assert not ok and 1e-6 <= worst <= 1.1e-6
    ok, _ = certify(net, Box([-1, -1], [1, 1]), np.array([[-1.0, 0.0]]), np.array([0.0]),
                    sign_decision(True))
    assert ok


def test_predict_checks_its_input():
    net = _net(3)
    dr = decision_rules(net, Box([-1, -1], [1, 1]))
    with pytest.raises(ExplainError, match=r"predict: X has shape \(1, 3\); give \(n, 2\)"):
        dr.predict(np.zeros((1, 3)))
    with pytest.raises(ExplainError, match="row 1 of X contains NaN"):
        dr.predict([[0.0, 0.0], [np.nan, 0.0]])
    assert dr.predict([0.0, 0.0]).shape == (1,)
    assert dr.predict(np.zeros((0, 2))).shape == (0,)


def test_a_degenerate_union_is_not_merged_and_leaves_the_clusters_as_they_were():
    # qhull's topology error on a degenerate vertex set escaped decision_rules (5-input
    # networks): a union whose hull qhull cannot build is simply not merged
    from relulab.explain.rules import _Clusters, _Piece

    V1 = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]])
    V2 = np.array([[1.0, 1, 0], [1, 0, 0], [0, 1, 0]])
    cl = _Clusters([_Piece(V1, 0.5), _Piece(V2, 0.5)])
    assert cl.try_merge(0, 1) is False
    assert cl.find(1) == 1 and np.array_equal(cl.V[0], V1) and np.array_equal(cl.V[1], V2)


def test_the_time_limit_cuts_the_rules_short_but_keeps_them_exact():
    rng = np.random.default_rng(7)
    net = Network([rng.normal(size=(40, 5)), rng.normal(size=(40, 40)) / 4, rng.normal(size=(3, 40))],
                  [rng.normal(size=40) * 0.3, rng.normal(size=40) * 0.3, np.zeros(3)])
    dr = decision_rules(net, Box(-np.ones(5), np.ones(5)), time_limit=3.0)
    assert dr.partial and dr.covered_fraction < 1 and len(dr.rules) > 0
    assert dr.info.get("merge_stopped_at_time_limit") is True
    # every rule kept is exact: its decision is the network's argmax on points inside it
    for r in dr.rules[:50]:
        P = r.vertices.mean(0, keepdims=True)
        assert str(all_decisions(net)[int(np.argmax(net(P)[0]))].label) == str(r.decision)
    for bad in (0, -1.0, float("nan"), "a"):
        with pytest.raises(ExplainError, match="time_limit must be a positive number"):
            decision_rules(net, Box(-np.ones(5), np.ones(5)), time_limit=bad)


@pytest.mark.parametrize("d, r", [(3, 1e-3), (4, 1e-2)])
def test_merged_rules_do_not_swallow_a_small_region_of_another_decision(d, r):
    # f = 1 - ||x - c||_1 / r: positive in a small l1 ball. The negative pieces around it
    # merged into "always -> negative" (the hull's volume test allows 1e-9 of slack), a
    # rule holding at c where f = +1
    box = Box(-np.ones(d), np.ones(d))
    c = np.linspace(-0.3, 0.2, d)
    W1 = np.vstack([np.eye(d), -np.eye(d)])
    net = Network([W1, -np.ones((1, 2 * d)) / r], [np.concatenate([-c, c]), np.array([1.0])])
    assert net(c[None])[0, 0] == pytest.approx(1.0)      # the independent fact
    dr = decision_rules(net, box)
    assert not [ru for ru in dr.rules if ru.decision == "negative" and ru.contains(c, tol=0)]
    assert dr.predict(c)[0] == "positive"
    # and the rules still agree with the network on random points (off the boundary)
    X = np.random.default_rng(0).uniform(-1, 1, size=(400, d))
    y = net(X)[:, 0]
    far = np.abs(y) > 1e-6
    assert np.array_equal(dr.predict(X[far]) == "positive", y[far] > 0)
