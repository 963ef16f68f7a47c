"""Explanations against brute force, from an audit: a target that holds only on a tie,
outputs far below 1, near-tied regions, points within rounding of the boundary, time
limits shared across rows, feature bounds that exclude x, and a tiny time limit."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from relulab import Box, Network
from relulab.explain import ExplainError, decision_rules, why, why_not

_N5_W = [[[-0.8505767232649584, -1.4046948398010997], [-0.2634272807550614, 0.44594951843058384], [1.2049593103003347, 0.11636120835001473], [-0.5861710019336182, -0.8323852665088914]], [[-0.7186989040770666, 1.2000143167493336, 0.1521618303814563, -1.2991011318296886], [-0.06277214461276936, -0.8724194800835614, -0.4719660705461659, -0.3660043674576431], [-0.5349850287241827, 0.41503385276496707, -0.04731447894396687, -0.44207344352445355], [0.3072283699178377, 0.6223914802959929, -1.2322675285542577, -0.19254759477412053]], [[-0.028414305783051173, -0.22825331321886672, -0.7859448788401846, -0.29714274785481953], [-0.8184966762717818, -1.0164065596535545, 0.16858929934491984, -0.8320124534185245], [0.87772207588372, 0.537440741905377, -1.498362519337291, 0.204096652059366], [-0.8262874706857837, 0.024792915118701894, 0.03272399442706621, -1.4913223411733405]], [[0.5535314233842631, -0.8242295722773048, -0.24846816952493755, -0.6303548763166583], [1.086548466691254, 0.42615982484121995, 1.8237993771339092, 0.4814372843117404], [0.6337445502893815, 0.6305121571990051, -0.4549586519321637, -0.052521334978786555]]]
_N5_B = [[0.22462373122037735, 0.49043491288757324, 0.08183063275341652, -0.3699985992092315], [-0.29422420681320377, -0.051946567458609615, -0.3868256240261576, 0.0062071182112773595], [-0.070026757129731, -0.0767370094198173, 0.28860015955292834, -0.3544340423868647], [0.14848505225161673, -1.0899059880706727, 0.27188415857706655]]


@pytest.mark.parametrize("norm", ["l1", "linf"])
def test_a_target_that_holds_only_on_a_tie_is_reachable(norm):
    # f = -relu(x0) is 0, so "positive" (f >= 0), on the half x0 <= 0; with a margin on
    # every target row, why_not said no counterfactual exists
    net = Network([[[1.0, 0.0]], [[-1.0]]], [[0.0], [0.0]])
    r = why_not(net, [0.5, 0.0], "positive", Box([-1, -1], [1, 1]), norm=norm)
    assert r.status == "optimal" and r.exists
    assert r.distance == pytest.approx(0.5, abs=1e-7)
    assert net(r.counterfactual[None])[0, 0] >= 0
    # a 2-2-3 classifier whose outputs are all 0 on a quadrant: class 0 wins the tie there
    clf = Network([[[1.0, 0.0], [0.0, 1.0]], [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]],
                  [[0.0, 0.0], [0.0, 0.0, 0.0]])
    r = why_not(clf, [0.5, 0.3], 0, Box([-1, -1], [1, 1]), norm=norm)
    assert r.status == "optimal" and np.argmax(clf(r.counterfactual[None])[0]) == 0
    assert r.distance == pytest.approx({"l1": 0.8, "linf": 0.5}[norm], abs=1e-6)


def test_outputs_far_below_one_are_refused_or_explained_by_their_signs():
    box = Box([-1, -1], [1, 1])
    for s in (1e-9, 1e-10):
        net = Network([[[s, 0.0]]], [[0.0]])             # negative exactly on x0 < 0
        with pytest.raises(ExplainError, match="below what its MILPs resolve"):
            why(net, [0.5, 0.0], box)
        with pytest.raises(ExplainError, match="below what its MILPs resolve"):
            why_not(net, [0.5, 0.0], "negative", box, norm="linf")
        rules = {r.text(): r.volume_fraction for r in decision_rules(net, box).rules}
        assert rules == pytest.approx({"x0 >= 0 -> positive": 0.5, "x0 <= 0 -> negative": 0.5})
    net = Network([[[1e-6, 0.0]]], [[0.0]])                # still resolved: a right rule
    r = why(net, [0.5, 0.0], box)
    X = np.random.default_rng(0).uniform(-1, 1, (4000, 2))
    inside = np.all(X @ r.rule.A.T <= r.rule.b, axis=1)
    assert inside.any() and np.all(net(X[inside])[:, 0] >= 0)


@pytest.mark.parametrize("eps", [1e-12, 5e-10])
def test_a_region_won_by_a_hair_goes_to_its_winner(eps):
    # outputs (0, eps) everywhere: class 1 on the whole box; the rules gave it to class 0
    # (a "tie" within the tolerance) and certified that
    net = Network([[[1.0, 0.0]], [[0.0], [0.0]]], [[0.0], [0.0, eps]])
    dr = decision_rules(net, Box([-1, -1], [1, 1]), certify_rules=True)
    assert [r.decision for r in dr.rules] == ["class 1"] and dr.rules[0].certified
    X = np.random.default_rng(0).uniform(-1, 1, (500, 2))
    assert np.all(dr.predict(X) == "class 1")
    # an exact tie still goes to the first class, as argmax does
    tie = Network([[[1.0, 0.0]], [[0.0], [0.0]]], [[0.0], [5.0, 5.0]])
    assert [r.decision for r in decision_rules(tie, Box([-1, -1], [1, 1])).rules] == ["class 0"]


@pytest.mark.parametrize("x", [[0.362004489031197, 0.16886258672302962],
                               [0.41111904322214676, 0.1806574821400204],
                               [0.362004489031197, 0.16886258672302965]])
def test_why_at_points_within_rounding_of_the_boundary(x):
    # the side pushes crossed x and the next slab was an "empty box" DomainError
    net = Network(_N5_W, _N5_B)
    r = why(net, x, Box([-1, -1], [1, 1]))
    assert r.decision == f"class {int(np.argmax(net(np.array([x]))[0]))}"
    if r.rule is not None:
        assert np.all(r.rule.A @ np.asarray(x) <= r.rule.b + 1e-12)      # x is in its rule


def test_certification_shares_one_time_limit_across_decision_rows(monkeypatch):
    # each decision row's MILP got the whole limit: a 3-class rule took twice the limit
    C = importlib.import_module("relulab.explain._certify")
    given = []
    real = C.max_output

    def spy(net, region, c, time_limit=None):
        given.append(time_limit)
        return real(net, region, c, time_limit)

    monkeypatch.setattr(C, "max_output", spy)
    net = Network([[[1.0, 0.5], [-1.0, 2.0]], [[3.0, 0.0], [0.0, 1.0], [0.0, 0.0]]],
                  [[0.0, 0.1], [5.0, 0.0, 0.0]])
    ok, _ = C.certify(net, Box([-1, -1], [1, 1]), np.zeros((0, 2)), np.zeros(0),
                      importlib.import_module("relulab.explain.decision").class_decision(0, 3), 6.0)
    assert ok and len(given) == 2
    assert given[0] <= 6.0 / 2 + 1e-9 and given[1] <= 6.0   # a share each, not 6 s each
    given.clear()
    # decision_rules hands certification the time left (it had none: 300 s past a 5 s limit)
    R = importlib.import_module("relulab.explain.rules")
    seen = []
    monkeypatch.setattr(R, "certify", lambda *a: (seen.append(a[5] if len(a) > 5 else None), (True, 0.0))[1])
    decision_rules(net, Box([-1, -1], [1, 1]), certify_rules=True, time_limit=30)
    assert seen and all(t is not None and 0 < t <= 30 for t in seen)


@pytest.mark.parametrize("norm, truth", [("linf", 0.9), ("l1", 1.4)])
def test_why_not_with_bounds_that_exclude_x(norm, truth):
    # f = x0 at x = (0.5, 0.9) with x1 bounded to [-1, 0]: samples on rays from x left the
    # space and the answer was "unknown: no counterfactual found in time"
    net = Network([[[1.0, 0.0]]], [[0.0]])
    r = why_not(net, [0.5, 0.9], "negative", Box([-1, -1], [1, 1]), norm=norm, bounds={"x1": (-1, 0)})
    assert r.status == "optimal"
    assert r.distance == pytest.approx(truth, abs=1e-6)
    z = r.counterfactual
    assert z[1] <= 0 + 1e-9 and net(z[None])[0, 0] < 0


def test_a_tiny_time_limit_is_named_not_the_domain(monkeypatch):
    regions = importlib.import_module("relulab.regions")

    class Empty:
        partial = True

        def __len__(self):
            return 0

    monkeypatch.setattr(regions, "enumerate", lambda *a, **k: Empty())
    with pytest.raises(ExplainError, match="time limit .* ended the region enumeration"):
        decision_rules(Network([[[1.0, 0.0]]], [[0.0]]), Box([-1, -1], [1, 1]), time_limit=1e-3)


# ------------------------------------------------------------------ a common offset of the logits
def _offset_classifier(off: float) -> Network:
    rng = np.random.default_rng(0)
    W1, b1, W2 = rng.normal(size=(6, 2)), rng.normal(size=6) * 0.3, rng.normal(size=(3, 6))
    return Network([W1, W2], [b1, np.full(3, off)])


def test_decision_rules_do_not_change_with_a_common_offset_of_the_logits():
    """Adding 1e9 to every logit changes no decision: the rules' volumes per class were
    0.72 / 0.20 (true 0.57 / 0.43) with 8 % of the box left out, because wins by 1 were
    within the tolerance of 1e-9 of the outputs' size."""
    from relulab.explain import decision_rules

    box = Box([-1.0, -1.0], [1.0, 1.0])
    X = np.random.default_rng(1).uniform(-1, 1, size=(20000, 2))
    base = _offset_classifier(0.0)(X)
    srt = np.sort(base, axis=1)
    clear = srt[:, -1] - srt[:, -2] > 1e-3
    for off in (0.0, 1e9):
        r = decision_rules(_offset_classifier(off), box)
        vol = r.to_dict()["decisions"]
        assert r.to_dict()["covered_fraction"] == pytest.approx(1.0, abs=1e-9)
        for k in range(3):
            want = float(np.mean(np.argmax(base, axis=1) == k))
            assert vol[f"class {k}"]["volume_fraction"] == pytest.approx(want, abs=0.01)
        pred = np.array([int(str(p).split()[-1]) for p in r.predict(X[clear])])
        assert np.array_equal(pred, np.argmax(base[clear], axis=1))


def test_why_gives_the_same_certified_rule_with_a_common_offset():
    """why at a point of class 2 read 'always (anywhere in the domain) -> class 2' (not
    certified, violated by 1.6) under an offset of 1e9: its break margin was 1e-8 of the
    outputs' size, 10, above every row's value."""
    from relulab.explain import why

    box = Box([-1.0, -1.0], [1.0, 1.0])
    x = np.array([0.031, -0.428])
    ref = why(_offset_classifier(0.0), x, box).rule
    got = why(_offset_classifier(1e9), x, box).rule
    assert got.decision == ref.decision and got.certified and ref.certified
    assert got.A.shape[0] >= 1   # a real box, not "always"
    # the rule holds where the sampled base network says so (clear points only)
    X = np.random.default_rng(2).uniform(-1, 1, size=(20000, 2))
    inside = np.all(X @ got.A.T <= got.b + 1e-12, axis=1)
    Y = _offset_classifier(0.0)(X[inside])
    srt = np.sort(Y, axis=1)
    clear = srt[:, -1] - srt[:, -2] > 1e-6
    assert np.all(np.argmax(Y[clear], axis=1) == int(got.decision.split()[-1]))
