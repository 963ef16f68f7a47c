"""Explanations (fifth audit): counterfactuals called nearest only within the proven gap
and never dropped on a tie, 2-D rules invariant under moving the box far from 0, and no
"on the decision boundary" claim where a positive radius was proved."""

from __future__ import annotations

import numpy as np
import pytest

from relulab import Box, Network, explain


def test_an_optimal_counterfactual_sits_within_the_proven_gap():
    """f = 0.1 x0 from x = (0.5, 0): the answer was 'optimal' at 0.50001 (a polish at a
    100x margin preferred to the MILP's own point), 2e-5 above the proven bound."""
    net = Network([np.array([[1.0, 0.0], [-1.0, 0.0]]), np.array([[0.1, -0.1]])], [np.zeros(2), np.zeros(1)])
    for norm in ("l1", "linf"):
        r = explain.why_not(net, [0.5, 0.0], "negative", Box([-1, -1], [1, 1]), norm=norm)
        assert r.counterfactual is not None and net(r.counterfactual[None])[0, 0] < 0
        assert r.distance < 0.5 + 1e-7            # every x0 < 0 is a counterfactual
        if r.status == "optimal":
            assert r.distance <= r.lower_bound * (1 + 1e-9) + 1e-15


@pytest.mark.parametrize("s", [1e-4, 1e-5])
def test_a_counterfactual_is_kept_when_the_milp_optimum_sits_on_a_tie(s):
    """f = relu(x0 - 0.5) + s x0 from x = (1, 0): any x0 < 0 is negative (linf distance 1),
    but the MILP's optimum is the tie x0 = 0; with no time limit the answer was 'unknown:
    no counterfactual found in time' and the sampled counterfactual was dropped."""
    net = Network([np.array([[1.0, 0.0], [1.0, 0.0], [-1.0, 0.0]]), np.array([[1.0, s, -s]])],
                  [np.array([-0.5, 0.0, 0.0]), np.array([0.0])])
    r = explain.why_not(net, [1.0, 0.0], "negative", Box([-1, -1], [1, 1]), norm="linf")
    assert r.status in ("optimal", "feasible")
    assert net(r.counterfactual[None])[0, 0] < 0
    assert r.distance <= 1.0 + 1e-6 and r.lower_bound <= r.distance
    assert "in time" not in r.text()


def test_two_d_rules_do_not_change_when_the_box_moves_far_from_zero():
    rng = np.random.default_rng(2)
    W1, b1 = rng.normal(size=(8, 2)), rng.normal(size=8) * 0.5
    W2, b2 = rng.normal(size=(1, 8)), rng.normal(size=1) * 0.3
    P0 = np.random.default_rng(1).uniform(-1, 1, (4000, 2))
    shares = []
    for off in (0.0, 1e6):
        o = np.full(2, off)
        net = Network([W1, W2], [b1 - W1 @ o, b2])
        dr = explain.decision_rules(net, Box(o - 1, o + 1))
        assert abs(dr.covered_fraction - 1.0) < 1e-9 and not dr.partial
        y = net(o + P0)[:, 0]
        truth = np.where(y >= 0, "positive", "negative")
        far = np.abs(y) > 1e-6
        assert np.all(dr.predict(o + P0)[far] == truth[far])     # the forward pass decides
        shares.append(dr.decisions["positive"]["volume_fraction"])
    assert abs(shares[0] - shares[1]) < 1e-6


def test_a_proven_radius_below_the_push_resolution_is_no_boundary_claim():
    """f = x0 - 1e6 at x = (1e6 + 5e-4, 0): the cube of radius 5e-4 keeps the decision, but
    the answer said 'x lies on the decision boundary'."""
    net = Network([np.array([[1.0, 0.0], [-1.0, 0.0]]), np.array([[1.0, -1.0]])],
                  [np.array([-1e6, 1e6]), np.zeros(1)])
    x = np.array([1e6 + 5e-4, 0.0])
    r = explain.why(net, x, Box([1e6 - 1, -1], [1e6 + 1, 1]))
    assert r.radius > 1e-4
    assert "boundary" not in str(r.info.get("no_rule") or "")
    assert r.rule is not None
    # the rule's box lies within the proven cube and keeps the decision (forward pass)
    pts = np.random.default_rng(0).uniform(x - 0.9 * r.radius, x + 0.9 * r.radius, (500, 2))
    assert np.all(net(pts)[:, 0] > 0)


def _scaled_net(s: float, d: int) -> Network:
    """f = relu(x0) - 2 relu(-x0) + x1 - 0.3 s (inputs beyond x1 unused)."""
    W = np.zeros((4, d))
    W[0, 0], W[1, 0], W[2, 1], W[3, 1] = 1.0, -1.0, 1.0, -1.0
    return Network([W, np.array([[1.0, -2.0, 1.0, -1.0]])], [np.zeros(4), np.array([-0.3 * s])])


@pytest.mark.parametrize("s", [1e-7, 1e-9])
def test_predict_on_a_tiny_box_agrees_with_the_forward_pass(s):
    """predict relaxed every rule by an absolute 1e-9: on [-1e-9, 1e-9]^2 the first rule
    took 56 % of the points."""
    net = _scaled_net(s, 2)
    dr = explain.decision_rules(net, Box(-s * np.ones(2), s * np.ones(2)))
    P = np.random.default_rng(0).uniform(-s, s, (5000, 2))
    y = net(P)[:, 0]
    far = np.abs(y) > 1e-3 * s
    assert np.all(dr.predict(P)[far] == np.where(y >= 0, "positive", "negative")[far])


@pytest.mark.parametrize("s", [1e-8, 1e-9])
def test_three_d_rules_on_a_tiny_box_are_right_or_refused(s):
    """A raw QhullError, or 'always -> negative' covering 25 % of the box (not partial)."""
    from relulab.explain.decision import ExplainError

    net = _scaled_net(s, 3)
    try:
        dr = explain.decision_rules(net, Box(-s * np.ones(3), s * np.ones(3)))
    except ExplainError as e:
        assert "rescale" in str(e)
        return
    assert abs(dr.covered_fraction - 1.0) < 1e-6
    P = np.random.default_rng(0).uniform(-s, s, (3000, 3))
    y = net(P)[:, 0]
    far = np.abs(y) > 1e-3 * s
    assert np.all(dr.predict(P)[far] == np.where(y >= 0, "positive", "negative")[far])


def test_a_chain_of_near_parallel_facets_keeps_the_tightest():
    """f = 1e6 sum_{i<60} relu(x0 - 0.5 - i 1e-9) - 0.1 at x = 0: the region's facet is
    x0 <= 0.5 (neuron 1.1); tested tightest first, each row in turn was dropped against
    the next, and the rule read x0 <= 0.500000059 (neuron 1.60)."""
    k = 60
    W1 = np.zeros((k, 2))
    W1[:, 0] = 1.0
    net = Network([W1, np.full((1, k), 1e6)], [-(0.5 + 1e-9 * np.arange(k)), np.array([-0.1])])
    r = explain.why(net, np.zeros(2), Box([-1, -1], [1, 1]))
    b = r.region_rule.b[np.argmax(r.region_rule.A[:, 0])]
    assert abs(b - 0.5) < 1e-10
    assert r.region_facets == ("neuron 1.1",)


def test_l2_why_not_pulls_a_tie_point_inside_and_finds_the_nearest_counterfactual():
    """A 2-6-3 classifier whose logits pass through a ReLU: the nearest class-0 points lie
    where every logit is 0 (class 0 wins the tie).  The QP's points sit on that region's
    boundary and failed the forward pass; l2 answered "feasible" at 0.924 where a grid
    finds class 0 at 0.857.  Now a point pulled towards the interior passes."""
    rng = np.random.default_rng(100)
    d, h, m = 2, 6, 3
    net = Network([rng.normal(size=(h, d)), rng.normal(size=(m, h)), np.eye(m)],
                  [rng.normal(size=h) * 0.5, rng.normal(size=m) * 0.3, np.zeros(m)])
    box = Box(-np.ones(d), np.ones(d))
    x = rng.uniform(-0.8, 0.8, d)
    r = explain.why_not(net, x, 0, box, norm="l2")
    g = np.linspace(-1, 1, 801)
    P = np.array(np.meshgrid(g, g)).reshape(2, -1).T
    ok = np.argmax(net(P), 1) == 0
    grid = float(np.min(np.linalg.norm(P[ok] - x, axis=1)))
    assert r.status == "optimal", (r.status, r.certificate.get("reason"))
    z = np.asarray(r.counterfactual)
    assert int(np.argmax(net(z[None])[0])) == 0 and box.contains(z)
    assert r.lower_bound <= r.distance <= grid + 1e-9
    assert abs(np.linalg.norm(z - x) - r.distance) <= 1e-12
