"""Explanations near small and nearly repeated features (fourth explain audit).

Each case failed before its fix: two facets 5e-10 apart dropped together (l2 said "no
counterfactual exists" for half the box), a decision's pocket dropped or swallowed by
volume, a feature pinned by its bounds skipped by the l1 cover (a wrong "optimal"), margins
sized by the outputs at x, any time limit skipping the radius MILP, and truthy strings
taken for True.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from relulab import Box, Network
from relulab.explain import ExplainError, decision_rules, why, why_not

_geometry = importlib.import_module("relulab.explain._geometry")


def test_near_duplicate_facets_keep_one_of_the_pair():
    # x0 <= 0.5 and x0 + 1e-12 x1 <= 0.5 in the square: each looks redundant given the other
    A = np.array([[1.0, 0.0], [1.0, 1e-12], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    b = np.array([0.5, 0.5, 1.0, 1.0, 1.0])
    keep = _geometry.irredundant(A, b)
    assert len(set(keep.tolist()) & {0, 1}) == 1 and {2, 3, 4} <= set(keep.tolist())
    # past its deadline every untested row is kept (the same set)
    assert _geometry.irredundant(A, b, deadline=0.0).tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("norm", ["l1", "l2", "linf"])
def test_two_boundaries_5e_10_apart_do_not_hide_the_target(norm):
    # f = relu(x0 - 0.5) + relu(x0 - 0.5 - 5e-10) - 0.1: positive for x0 >= 0.55
    net = Network([[[1.0, 0.0], [1.0, 0.0]], [[1.0, 1.0]]], [[-0.5, -0.5 - 5e-10], [-0.1]])
    r = why_not(net, [0.0, 0.0], "positive", Box([-1, -1], [1, 1]), norm=norm)
    assert r.status == "optimal" and r.distance == pytest.approx(0.55, rel=1e-6)
    assert net(r.counterfactual[None])[0, 0] > 0
    w = why(net, [0.0, 0.0], Box([-1, -1], [1, 1]))
    assert w.region_rule.text() != "always (anywhere in the domain) -> negative"


def test_an_empty_region_search_is_no_proof_without_the_milp_bound(monkeypatch):
    # the l2 search stood in by one that "finds nothing": the MILP bound of the target's
    # best margin (0.9 > 0) must overrule it
    net = Network([[[1.0, 0.0]], [[1.0]]], [[-0.5], [-0.1]])
    W = importlib.import_module("relulab.explain.why_not")
    monkeypatch.setattr(W, "l2_search", lambda *a, **k: {"status": "infeasible", "regions": 1})
    monkeypatch.setattr(W, "bounds_exclude", lambda *a, **k: (False, None))
    r = why_not(net, [0.0, 0.0], "positive", Box([-1, -1], [1, 1]), norm="l2")
    assert r.status in ("feasible", "unknown") and r.exists is not False
    if r.status == "feasible":
        assert net(r.counterfactual[None])[0, 0] > 0


@pytest.mark.parametrize("d, r", [(2, 1e-6), (3, 1e-4)])
def test_a_small_pocket_of_another_decision_keeps_its_rule(d, r):
    # f = 1 - |x - c|_1 / r: +1 at c, positive on an l1 ball of radius r
    c = np.linspace(-0.3, 0.3, d)
    net = Network([np.vstack([np.eye(d), -np.eye(d)]), -np.ones((1, 2 * d)) / r],
                  [np.concatenate([-c, c]), np.array([1.0])])
    dr = decision_rules(net, Box(-np.ones(d), np.ones(d)))
    assert dr.predict(c)[0] == "positive"
    assert not any(q.decision == "negative" and q.contains(c, tol=0) for q in dr.rules)
    assert dr.decisions["positive"]["volume_fraction"] > 0


def test_l1_with_a_feature_pinned_away_from_x():
    # f = x1 + 1.2 x2 - 0.3 (three inputs), x0 pinned at 0.5: (0.5, 0, 0.25) is at l1 distance 0.75
    w = np.array([0.0, 1.0, 1.2])
    net = Network([np.vstack([w, -w]), [[1.0, -1.0]]], [[-0.3, 0.3], [0.0]])
    r = why_not(net, [0.0, 0.0, 0.0], "positive", Box(-np.ones(3), np.ones(3)), norm="l1",
                bounds={"x0": (0.5, 0.5)})
    assert r.distance == pytest.approx(0.75, rel=1e-6) and r.lower_bound <= 0.75 + 1e-9


def test_margins_do_not_grow_with_the_outputs_at_x():
    # f = 1e6 relu(x0 - 0.5) + 1e-3 x0: 5e5 at x = (1, 0); negative for every x0 < 0
    net = Network([[[1.0, 0.0], [1.0, 0.0], [-1.0, 0.0]], [[1e6, 1e-3, -1e-3]]], [[-0.5, 0.0, 0.0], [0.0]])
    for norm in ("l1", "l2"):
        r = why_not(net, [1.0, 0.0], "negative", Box([-1, -1], [1, 1]), norm=norm)
        assert r.exists and r.distance < 1.0001 and r.lower_bound <= r.distance
        assert net(r.counterfactual[None])[0, 0] < 0


def test_a_time_limit_does_not_skip_the_radius_milp():
    rng = np.random.default_rng(0)
    net = Network([rng.normal(size=(4, 2)), rng.normal(size=(3, 4))], [rng.normal(size=4), np.zeros(3)])
    box, x = Box([-1, -1], [1, 1]), np.array([0.1, 0.2])
    free = why(net, x, box)
    limited = why(net, x, box, time_limit=60.0)
    assert free.status == "complete"
    assert limited.status == "complete" and limited.radius == pytest.approx(free.radius, rel=1e-6)


@pytest.mark.parametrize("call", [
    lambda net: why(net, [0.5, 0.0], Box([-1, -1], [1, 1]), certify_rules="no"),
    lambda net: decision_rules(net, Box([-1, -1], [1, 1]), merge="no"),
    lambda net: decision_rules(net, Box([-1, -1], [1, 1]), certify_rules=1),
])
def test_flags_must_be_booleans(call):
    net = Network([[[1.0, 0.0]]], [[0.0]])
    with pytest.raises(ExplainError, match="must be True or False"):
        call(net)
