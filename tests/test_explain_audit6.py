"""Explanations audit 6: strict rows broken at their tie, sound radii at large
pre-activations, exact networks, and decision rules under a time limit (aud_exp6)."""

from fractions import Fraction as F

import numpy as np
import pytest

from relulab import Box, Network, explain
from relulab.explain.decision import ExplainError

BOX = Box([-1.0, -1.0], [1.0, 1.0])


def _dec(net: Network, label: str):
    """The decision a result names ("positive", "class 2", ...)."""
    return explain.as_decision(net, int(label.split()[1]) if label.startswith("class ") else label)


def _dead_plateau() -> Network:
    # f = relu(x0) - relu(x0 - 0.5) - 0.5: -0.5 for x0 <= 0, x0 - 0.5 on [0, 0.5] and
    # exactly 0 ("positive": f >= 0) on x0 >= 0.5, a quarter of the box
    return Network([np.array([[1.0, 0.0], [1.0, 0.0]]), np.array([[1.0, -1.0]])],
                   [np.array([0.0, -0.5]), np.array([-0.5])])


def _tied_classes() -> Network:
    # f0 = 0, f1 = relu(0.5 - x0): class 1 for x0 < 0.5, a tie (class 0) for x0 >= 0.5
    return Network([np.array([[-1.0, 0.0]]), np.array([[0.0], [1.0]])], [np.array([0.5]), np.zeros(2)])


def _dead_plateau_and_a_far_positive() -> Network:
    # _dead_plateau + 4 relu(x1 - 0.9): positive by a margin only for x1 > 0.9, 0.6 away
    # from (0, 0.3) in linf; the tie plateau x0 >= 0.5 (x1 <= 0.9) is 0.5 away
    return Network([np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), np.array([[1.0, -1.0, 4.0]])],
                   [np.array([0.0, -0.5, -0.9]), np.array([-0.5])])


def _tied_classes_and_a_far_winner() -> Network:
    # f0 = 4 relu(x1 - 0.9), f1 = relu(0.5 - x0): class 0 wins by a margin only for
    # x1 > 0.9; it wins by a tie on x0 >= 0.5 (x1 <= 0.9)
    return Network([np.array([[0.0, 1.0], [-1.0, 0.0]]), np.array([[4.0, 0.0], [0.0, 1.0]])],
                   [np.array([-0.9, 0.5]), np.zeros(2)])


@pytest.mark.parametrize("make", [_dead_plateau, _tied_classes, _dead_plateau_and_a_far_positive,
                                  _tied_classes_and_a_far_winner])
def test_a_strict_decision_stops_at_a_region_of_ties(make) -> None:
    net = make()
    x = np.array([0.0, 0.3])
    r = explain.why(net, x, BOX)
    dec = _dec(net, r.decision)
    # the decision is broken on x0 >= 0.5 by a forward pass: the radius stops there
    assert not dec.holds(net(np.array([[0.5, 0.3], [0.9, -0.7]]))).any()
    assert r.radius <= 0.5
    assert r.rule is not None and r.rule.certified
    # no point inside the rule gets the other decision (dense grid of the box; a rule is
    # closed, and a tie on its own boundary is allowed)
    g = np.stack(np.meshgrid(np.linspace(-1, 1, 201), np.linspace(-1, 1, 201)), -1).reshape(-1, 2)
    inside = g[np.all(g @ r.rule.A.T < r.rule.b - 1e-9, axis=1)]
    assert len(inside) > 100 and dec.holds(net(inside)).all()


def test_the_radius_is_proven_at_large_pre_activations() -> None:
    # f = relu(x + 2^40) - relu(2^40) - 0.3 (= x - 0.3 in rationals): the MILP fallback's
    # optimum 0.300049 passed the boundary, and f(0.3) is positive by a forward pass
    T = 2.0**40
    net = Network([[[1.0], [0.0]], [[1.0, -1.0]]], [[T, T], [-0.3]])
    r = explain.why(net, [0.0], Box([-1.0], [1.0]))
    g = np.linspace(0.0, 1.0, 200001)[:, None]
    first = float(g[np.argmax(net(g)[:, 0] >= 0), 0])   # the first input that is positive
    assert r.decision == "negative" and 0 < r.radius < first


def test_an_exact_network_that_float64_cannot_hold_is_refused() -> None:
    net = Network([[[F(1)]]], [[F(-1, 3)]])     # x - 1/3: negative at the float nearest 1/3
    for call in (lambda: explain.why(net, [1 / 3], Box([0.0], [1.0])),
                 lambda: explain.decision_rules(net, Box([0.0], [1.0])),
                 lambda: explain.why_not(net, [1 / 3], "negative", Box([0.0], [1.0]))):
        with pytest.raises(ExplainError, match=r"bias 1 of layer 1 .* -1/3"):
            call()
    # an exact network of float64 numbers is its float copy: explained as such
    ok = Network([[[F(1)]]], [[F(-1, 4)]])
    assert explain.why(ok, [0.5], Box([0.0], [1.0])).decision == "positive"


def _wide_2d(rng: np.random.Generator | None = None) -> Network:
    rng = np.random.default_rng(1) if rng is None else rng
    d, h = 2, 64
    W = [rng.normal(size=(h, d)) / np.sqrt(d), rng.normal(size=(h, h)) / np.sqrt(h),
         rng.normal(size=(3, h)) / np.sqrt(h)]
    B = [rng.normal(size=h) * 0.1, rng.normal(size=h) * 0.1, rng.normal(size=3) * 0.1]
    return Network(W, B)


@pytest.mark.parametrize("seconds", [1.0, 2.5])
def test_decision_rules_cut_by_the_time_limit_keep_every_exact_piece(seconds) -> None:
    # a merge cut by the limit gave 0 rules (covered 0 %) after a complete enumeration,
    # and the 2-D partition ran 6x past the limit with no deadline
    net = _wide_2d()
    dr = explain.decision_rules(net, BOX, time_limit=seconds)
    assert dr.n_rules > 0 and dr.n_rules == len(dr.rules)
    assert sum(v["rules"] for v in dr.decisions.values()) == dr.n_rules
    assert dr.covered_fraction == pytest.approx(sum(r.volume_fraction for r in dr.rules))
    if not dr.partial:
        assert dr.covered_fraction == pytest.approx(1.0, abs=1e-9)
    # every rule is exact: its vertices' centroid gets its decision by a forward pass
    for r in dr.rules[:: max(1, len(dr.rules) // 50)]:
        c = r.vertices.mean(axis=0)
        assert _dec(net, r.decision).holds(net(c[None]))[0]


@pytest.mark.parametrize("scale", [1.0, 1e4, 1e6])
def test_scaling_the_outputs_changes_no_explanation(scale) -> None:
    # aud_exp6 #1: at logits of 1e4 the certified minimal rule was lost (an absolute 1e-7
    # tie tolerance against the solver's relative few 1e-8)
    rng = np.random.default_rng(5)
    W0 = [rng.normal(size=(4, 2)), rng.normal(size=(3, 4))]
    B0 = [rng.normal(size=4) * 0.5, rng.normal(size=3) * 0.5]
    ref = explain.why(Network(W0, B0), [0.1, -0.2], BOX)
    net = Network([W0[0], W0[1] * scale], [B0[0], B0[1] * scale])
    r = explain.why(net, [0.1, -0.2], BOX)
    assert r.decision == ref.decision and r.rule.certified and r.rule.minimal
    np.testing.assert_allclose(r.rule.b, ref.rule.b, rtol=1e-6, atol=1e-9)


def test_a_why_not_short_of_optimal_says_why() -> None:
    # aud_exp6 #6: an l1 search stopped at 2.4 s of 10 with "feasible" and no reason
    rng = np.random.default_rng(1)
    net = _wide_2d(rng)
    x = rng.uniform(-0.5, 0.5, 2)   # the auditor's point, drawn after the weights
    k = int(np.argmax(net(x[None])[0]))
    r = explain.why_not(net, x, (k + 1) % 3, BOX, norm="l1", time_limit=3)
    if r.status != "optimal":
        assert r.certificate.get("reason")
    assert r.lower_bound <= r.distance


def test_a_loose_bound_of_the_rows_makes_no_tie() -> None:
    # aud_sess13b #1: f = x - 0.5 + relu(1e8 x) - relu(1e8 x) (= x - 0.5): a sound bound of
    # |f| over the box is 1e8, and a tie of 1e-7 of it (10 output units) certified
    # "always negative" on [-1, 1], where f reaches 0.5
    from relulab.explain._certify import certify

    net = Network([np.array([[1.0], [1e8], [1e8]]), np.array([[1.0, 1.0, -1.0]])],
                  [np.array([1.0, 0.0, 0.0]), np.array([-1.5])])   # relu(x + 1) - 1.5 = x - 0.5
    box = Box([-1.0], [1.0])
    assert net(np.array([[1.0]]))[0, 0] == pytest.approx(0.5)
    dec = explain.as_decision(net, "negative")
    ok, bound = certify(net, box, np.zeros((0, 1)), np.zeros(0), dec)
    assert not ok and bound >= 0.5
    dr = explain.decision_rules(net, box, certify_rules=True)
    for r in dr.rules:
        assert not r.certified or r.max_violation <= 1e-6
