"""The verifier on exact (Fraction) networks whose weights are not float64 numbers, on
networks without hidden layers, on a MILP that fails at once, and verify-batch's
expected answers under paths spelled another way."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest
from conftest import run_cli

from relulab import Box, Network
from relulab.io import save_model
from relulab.spec import OutputConstraint, Specification
from relulab.verify import maximize, output_range, verify


def _cancelling() -> Network:
    """2^60 (relu((1 + 2^-60) x) - relu(x)) = x on [0, 1]; rounded to float64 it is 0."""
    e = F(1, 2**60)
    return Network([[[1 + e], [F(1)]], [[F(2**60), F(-(2**60))]]], [[F(0), F(0)], [F(0)]], exact=True)


@pytest.mark.parametrize("method", ["auto", "input-split", "relu-split", "milp"])
def test_a_property_the_float_rounding_hides_is_not_called_holds(method):
    """Unsafe y >= 0.5 on [0, 1]: violated at x = 1 (y = 1).  Every prover worked on the
    rounded network (y = 0) and answered 'holds'."""
    net = _cancelling()
    spec = Specification(Box([0.0], [1.0]), [OutputConstraint(np.array([[-1.0]]), np.array([-0.5]))])
    r = verify(net, spec, timeout=20, method=method)
    assert r.status != "holds"
    if r.status == "violated":
        x = F(float(r.counterexample[0]))
        assert net(np.array([[x]], dtype=object))[0, 0] >= F(1, 2)


def test_maximum_of_an_exact_network_brackets_its_exact_value():
    net = _cancelling()
    r = maximize(net, Box([0.0], [1.0]), c=[1.0], time_limit=20)
    x = F(float(r.x[0]))
    assert F(r.value) == net(np.array([[x]], dtype=object))[0, 0]   # the exact value at x
    assert r.value <= 1.0 <= r.bound                                  # the true maximum is 1
    rr = output_range(net, Box([0.0], [1.0]), time_limit=20)
    assert rr.lo_bound[0] <= 0.0 <= rr.lo[0] and rr.hi[0] <= 1.0 <= rr.hi_bound[0]


def test_rounding_bound_is_none_for_float_weights_and_tiny_for_thirds():
    from relulab.bounds import float_rounding_bound

    float_weights = Network([[[F(1, 2)], [F(-3)]], [[F(1), F(1, 4)]]], [[F(0), F(1)], [F(0)]], exact=True)
    assert float_rounding_bound(float_weights, Box([-1.0], [1.0])) is None
    thirds = Network([[[F(1, 3)], [F(-2, 3)]], [[F(1, 3), F(1)]]], [[F(1, 7), F(0)], [F(0)]], exact=True)
    e = float_rounding_bound(thirds, Box([-1.0], [1.0]))
    assert e is not None and 0 < e[0] < 1e-15
    # and it bounds the true difference at sampled points (exact arithmetic)
    X = np.linspace(-1, 1, 41)
    g = thirds.float()
    for x in X:
        exact = thirds(np.array([[F(float(x))]], dtype=object))[0, 0]
        assert abs(exact - F(float(g(np.array([[x]]))[0, 0]))) <= F(float(e[0])) + F(1, 2**60)


def test_a_network_without_hidden_layers_is_split_without_error():
    """y = 2 x0 - x1 + 0.5 (max 2.5): unsafe y >= 2.5000001 holds only inside the rounding
    margin, so input splitting split the box and failed (concatenating no bounds)."""
    aff = Network([[[2.0, -1.0]]], [[0.5]])
    spec = Specification(Box([0, 0], [1, 1]), [OutputConstraint(np.array([[-1.0]]), np.array([-2.5000001]))])
    assert verify(aff, spec, timeout=5, method="input-split").status in ("holds", "unknown")
    far = Specification(Box([0, 0], [1, 1]), [OutputConstraint(np.array([[-1.0]]), np.array([-2.6]))])
    assert verify(aff, far, timeout=5, method="input-split").status == "holds"


def test_a_milp_that_fails_at_once_is_numerical_not_a_timeout():
    net = Network([[[1e20], [-1e20]], [[1e-20, 1e-20]]], [[0.0, 0.0], [0.0]])
    spec = Specification(Box([-1.0], [1.0]), [OutputConstraint(np.array([[-1.0]]), np.array([-5.0]))])
    r = verify(net, spec, timeout=20, method="milp")
    if r.status == "unknown":
        assert r.reason.startswith("numerical"), r.reason


def test_expected_answers_match_instances_whatever_the_path_spelling(tmp_path, capsys, monkeypatch):
    """expected.csv with absolute paths against instances.csv with relative ones: nothing
    was matched and the table said 'wrong 0'."""
    monkeypatch.chdir(tmp_path)
    save_model(Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]]), tmp_path / "abs.npz")
    head = "(declare-const X_0 Real)(declare-const Y_0 Real)(assert (>= X_0 0))(assert (<= X_0 1))"
    (tmp_path / "p_holds.vnnlib").write_text(head + "(assert (>= Y_0 5))\n")
    (tmp_path / "p_viol.vnnlib").write_text(head + "(assert (>= Y_0 0.5))\n")
    (tmp_path / "inst.csv").write_text("abs.npz,p_holds.vnnlib,5\nabs.npz,p_viol.vnnlib,5\n")
    (tmp_path / "exp.csv").write_text(
        f"onnx,vnnlib,expected\n{tmp_path}/abs.npz,{tmp_path}/p_holds.vnnlib,violated\n"
        f"{tmp_path}/abs.npz,{tmp_path}/p_viol.vnnlib,holds\n")   # both deliberately wrong
    import json

    code, out, _ = run_cli(capsys, "verify-batch", "inst.csv", "--expected", "exp.csv", "--workers", "1", "--json")
    d = json.loads(out)
    assert d["run"]["expected_matched"] == 2
    assert sum(row.get("wrong", 0) for row in d["summary"]) == 2


def _cancelling_sum(seed: int, n: int = 50):
    """y = sum_j w_j relu(x_j) + b with w_j in [1e8, 2e8) and b = -(sum w) rounded: at
    x = 1 the terms of 1e10 cancel, and the float64 forward pass is off by about 1e-6.
    Returns the network, the exact y(1) and the float64 y(1)."""
    rng = np.random.default_rng(seed)
    w = 1e8 + 1e8 * rng.random(n)
    b = -float(np.sum(w))
    net = Network([np.eye(n), w[None]], [np.zeros(n), [b]])
    exact = sum((F(v) for v in w), F(0)) + F(b)
    return net, exact, float(net(np.ones((1, n)))[0, 0])


def test_float64_counterexample_gate_covers_the_rounding_of_cancelling_terms(monkeypatch):
    """Networks above EXACT_RECHECK_MAX_PARAMS are checked in float64: the margin must scale
    with the terms each sum adds up.  Scaled by the outputs alone, a float y(1) above the
    threshold passed while the exact y(1) (the maximum) is below it: 'violated' for a
    property that holds."""
    import relulab.verify._counterexample as cx

    monkeypatch.setattr(cx, "EXACT_RECHECK_MAX_PARAMS", 0)   # the float64 check, as for big nets
    tried = 0
    for seed in range(200):
        net, exact, fl = _cancelling_sum(seed)
        if not F(fl) > exact:
            continue
        tried += 1
        t = (F(fl) + exact) / 2        # the float value is unsafe, the exact one is not
        terms = [(Box(np.zeros(50), np.ones(50)), np.array([[-1.0]]), np.array([-float(t)]))]
        assert not cx.certify_counterexample(net, np.ones(50), terms).ok
        if tried == 3:
            break
    assert tried == 3
    # a violation far beyond the rounding still passes the float gate
    far = [(Box(np.zeros(50), np.ones(50)), np.array([[-1.0]]), np.array([1.0]))]
    assert cx.certify_counterexample(net, np.ones(50), far).ok


def test_structured_counterexample_gate_covers_the_rounding_of_cancelling_terms():
    """The same for a structured model's gate (no dense network to evaluate exactly)."""
    pytest.importorskip("torch")
    from relulab.crown import BoundGraph
    from relulab.verify.verifier import _structured_check

    for seed in range(200):
        net, exact, fl = _cancelling_sum(seed)
        if F(fl) > exact:
            break
    g = BoundGraph.from_network(net)
    err = g.forward_error(np.ones((1, 50)))[0]
    assert err >= abs(float(F(fl) - exact))          # the bound covers the actual error
    t = (F(fl) + exact) / 2
    terms = [(Box(np.zeros(50), np.ones(50)), np.array([[-1.0]]), np.array([-float(t)]))]
    assert not _structured_check(g, np.ones(50), terms).ok
    far = [(Box(np.zeros(50), np.ones(50)), np.array([[-1.0]]), np.array([1.0]))]
    assert _structured_check(g, np.ones(50), far).ok


def _hidden_by_rounding():
    """2^60 relu(x0 + x1 - 1) on [0, 1] x [0, 2^-53]: the neuron's maximum is 2^-53 (f =
    128 at (1, 2^-53)), but 1 + 2^-53 - 1 rounds to 0 and the neuron read dead."""
    net = Network([[[1.0, 1.0]], [[2.0**60]]], [[-1.0], [0.0]])
    return net, Box([0.0, 0.0], [1.0, 2.0**-53])


def test_bounds_keep_a_neuron_whose_maximum_is_within_rounding_of_zero():
    from relulab.bounds import interval_bounds, symbolic_bounds

    net, box = _hidden_by_rounding()
    assert net.exact()(np.array([[F(1), F(2**-53)]], dtype=object))[0, 0] == 128
    for b in (interval_bounds(net, box), symbolic_bounds(net, box), symbolic_bounds(net.exact(), box)):
        assert b.out_hi[0] >= 128 and b.n_inactive == 0


@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize("method", ["input-split", "relu-split"])
def test_a_neuron_lost_to_rounding_does_not_prove_holds(method, exact):
    """f = 1000 relu(x0 + x1 - 1e8) on [0, 1e8] x [0, 7e-9]: f reaches 7e-6 exactly, and
    'f <= 1e-6' read 'holds' (a dead neuron, then a final bound whose input terms of 1e11
    rounded away the 7e-6 while the margin scaled with the ReLU terms only)."""
    net = Network([[[1.0, 1.0]], [[1e3]]], [[-1e8], [0.0]])
    box = Box([0.0, 0.0], [1e8, 7e-9])
    spec = Specification(box, [OutputConstraint(np.array([[-1.0]]), np.array([-1e-6]))])
    r = verify(net.exact() if exact else net, spec, timeout=10, method=method)
    assert r.status != "holds"
    net2, box2 = _hidden_by_rounding()
    spec2 = Specification(box2, [OutputConstraint(np.array([[-1.0]]), np.array([-1.0]))])
    assert verify(net2.exact() if exact else net2, spec2, timeout=10, method=method).status != "holds"


def test_the_torch_engine_keeps_a_neuron_within_rounding_of_zero_and_a_structural_zero_decided():
    """The torch engine's float64 bounds: the neuron of 2^60 relu(x0 + x1 - 1) stays
    unstable (its bounds were [0, 0]), while relu(relu(x) + relu(-x)), whose lower bound 0
    is exact (every term 0), stays stably active."""
    pytest.importorskip("torch")
    from relulab.crown import BoundGraph, bound

    net, box = _hidden_by_rounding()
    gb = bound(BoundGraph.from_network(net), box.lo[None], box.hi[None], method="crown")
    assert gb.upper[0, 0] >= 128
    two = Network([np.array([[1.0], [-1.0]]), np.array([[1.0, 1.0]]), np.array([[1.0]])],
                  [np.zeros(2), np.zeros(1), np.zeros(1)])
    gb2 = bound(BoundGraph.from_network(two), np.array([[-1.0]]), np.array([[1.0]]), method="crown")
    lo, hi = (np.ravel(v) for v in gb2.pre["relu1"])
    assert lo[0] == 0.0 and hi[0] > 0        # stably active: its lower bound 0 is exact
    lo, hi = (np.ravel(v) for v in gb.pre["relu0"])
    assert lo[0] < 0 < hi[0]


def test_eval_of_an_exact_model_gives_its_exact_outputs(tmp_path, capsys):
    """relulab eval printed the float64 rounding's outputs, 0 where the model gives 1."""
    import json

    path = tmp_path / "exact.npz"
    save_model(_cancelling(), path)
    code, out, err = run_cli(capsys, "eval", path, "--x", "1", "--x", "0.5", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["exact"] is True
    want = [float(_cancelling()(np.array([[F(v)]], dtype=object))[0, 0]) for v in (1, F(1, 2))]
    assert [row[0] for row in d["outputs"]] == want == [1.0, 0.5]
    code, out, _ = run_cli(capsys, "eval", path, "--x", "1")
    assert "rational arithmetic" in out


def test_output_range_past_its_limit_builds_no_more_milps(monkeypatch):
    """Every bound paid ~0.7 s of fixed work (encoding, LPs, incumbent search) whatever the
    limit: range --timeout 0.3 ran 14-61 s on a 50-300-300-300-10 net.  Past the limit
    the remaining bounds come from the symbolic bounds and samples: sound, marked."""
    from relulab.verify import milp

    calls = []
    real = milp.encode
    monkeypatch.setattr(milp, "encode", lambda *a, **k: calls.append(1) or real(*a, **k))
    rng = np.random.default_rng(0)
    net = Network([rng.normal(size=(20, 4)), rng.normal(size=(20, 20)), rng.normal(size=(3, 20))],
                  [rng.normal(size=20), rng.normal(size=20), rng.normal(size=3)])
    box = Box(-np.ones(4), np.ones(4))
    r = output_range(net, box, time_limit=1e-6)
    assert calls == [] and r.status == "time_limit"
    X = box.sample(2000, rng)
    Y = net(X)
    assert np.all(r.lo_bound <= Y.min(0) + 1e-9) and np.all(Y.max(0) <= r.hi_bound + 1e-9)
    assert np.allclose(net(r.argmin)[np.arange(3), np.arange(3)], r.lo)
    assert np.allclose(net(r.argmax)[np.arange(3), np.arange(3)], r.hi)


@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize("method", ["input-split", "relu-split"])
def test_an_unstable_neuron_keeps_its_outward_upper_bound(method, exact):
    """1000 relu(x0 + x1 - 1e10) on [0, 1e10] x [0, 2.8e-6]: the neuron's upper bound
    rounded to 1.9e-6 (not to 0: its sign stayed open), its relaxation lost the rest, and
    'f >= 2.5e-3' (max 2.8e-3, exactly) read holds."""
    net = Network([[[1.0, 1.0]], [[1000.0]]], [[-1e10], [0.0]])
    box = Box([0.0, 0.0], [1e10, 2.8e-6])
    top = net.exact()(np.array([[F(1e10), F(2.8e-6)]], dtype=object))[0, 0]
    assert top > F(25, 10000)
    spec = Specification(box, [OutputConstraint(np.array([[-1.0]]), np.array([-2.5e-3]))])
    assert verify(net.exact() if exact else net, spec, timeout=10, method=method).status != "holds"


def _cancelling_tent(nd: int = 10, K: float = 1e4):
    """f = 2^40 (relu(x) + relu(c x) - relu(x)) - 2^40 c relu(x - T) with c = 0.8 2^-53 and
    T a thin tent in z: exactly f = 2^40 c min(x, T), max 9.8e-5 at x = 1, z = m; in
    float64 2^40 x + 2^40 c x rounds to 2^40 x and f <= 0."""
    c, W = 0.8 * 2.0 ** -53, 2.0 ** 40
    m = np.round(np.random.default_rng(3).uniform(0.2, 0.8, nd), 6)
    d = 1 + nd
    W1, b1 = np.zeros((4 + 2 * nd, d)), np.zeros(4 + 2 * nd)
    W1[0, 0], W1[1, 0], W1[2, 0], W1[3, 0] = 1, c, 1, 1
    for i in range(nd):
        W1[4 + i, 1 + i], b1[4 + i] = 1, -m[i]
        W1[4 + nd + i, 1 + i], b1[4 + nd + i] = -1, m[i]
    W2, b2 = np.zeros((5, 4 + 2 * nd)), np.zeros(5)
    W2[0, 0] = W2[1, 1] = W2[2, 2] = W2[3, 3] = 1
    W2[4, 4:], b2[4] = -K, 1
    W3 = np.zeros((4, 5))
    W3[0, 0] = W3[1, 1] = W3[2, 2] = W3[3, 3] = 1
    W3[3, 4] = -1
    net = Network([W1, W2, W3, np.array([[W, W, -W, -W * c]])], [b1, b2, np.zeros(4), np.zeros(1)])
    return net, Box(np.zeros(d), np.ones(d)), np.concatenate([[1.0], m])


@pytest.mark.parametrize("method", ["input-split", "relu-split"])
def test_a_final_coefficient_cancelled_by_rounding_does_not_prove_holds(method):
    net, box, w = _cancelling_tent()
    assert net.exact()(np.array([[F(v) for v in w]], dtype=object))[0, 0] > F(5, 100000)
    spec = Specification(box, [OutputConstraint(np.array([[-1.0]]), np.array([-5e-5]))])
    for model in (net, net.exact()):
        assert verify(model, spec, timeout=15, method=method).status != "holds"
