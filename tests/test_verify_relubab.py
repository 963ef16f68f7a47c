"""Branch and bound over ReLU splits (relulab.verify.relu_bab) against the exact MILP.

Random small networks with 20-100 inputs: every answer of the branch and bound must
agree with the MILP's (``maximize`` for one row, ``milp_term`` for a conjunction), both
answers occur, and every counterexample is re-checked here by a forward pass.  Both
bound engines run (numpy CROWN with clamped splits; torch alpha/beta-CROWN when torch is
installed).
"""

from __future__ import annotations

import numpy as np
import pytest

from relulab import Box, Network
from relulab.errors import RelulabError
from relulab.spec import OutputConstraint, Specification
from relulab.tolerance import FEAS_TOL
from relulab.verify import maximize, verify
from relulab.verify.branching import babsr_scores, backward_coeffs, choose_fsb
from relulab.verify.milp import milp_term
from relulab.verify.relu_bab import crown_available, relu_split

ENGINES = ["numpy", "crown"] if crown_available() else ["numpy"]


def _net(rng: np.random.Generator, dims: list[int]) -> Network:
    Ws = [rng.normal(size=(dims[k + 1], dims[k])) / np.sqrt(dims[k]) for k in range(len(dims) - 1)]
    bs = [rng.normal(size=dims[k + 1]) * 0.3 for k in range(len(dims) - 1)]
    return Network(Ws, bs)


def _instance(seed: int):
    """A random network with 20-100 inputs, a box and one unsafe term with its MILP answer
    (None when too close to call)."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(20, 101))
    conj = seed % 3 == 2
    dims = [d, int(rng.integers(3, 9)), int(rng.integers(2, 7)), 3 if conj else 1]
    net = _net(rng, dims)
    r = rng.uniform(0.1, 0.5)
    box = Box(-r * np.ones(d), r * np.ones(d))
    if not conj:
        m = maximize(net, box)
        gap = (1 + abs(m.value)) * rng.choice([-0.03, -0.01, 0.01, 0.03])
        thr = m.value + gap
        C, dv = np.array([[-1.0]]), np.array([-thr])  # unsafe: f(x) >= thr
        truth = "violated" if m.value >= thr else "holds"
        return net, box, C, dv, truth
    # unsafe: y0 >= y1 + t1 and y0 >= y2 + t2 (a conjunction, as in classification specs)
    C = np.array([[-1.0, 1.0, 0.0], [-1.0, 0.0, 1.0]])
    y = net(box.sample(200, rng)) @ C.T
    dv = np.quantile(y, 0.02, axis=0) * rng.uniform(0.5, 1.5)
    status, _, _ = milp_term(net, box, C, dv)
    return net, box, C, dv, (status if status != "unknown" else None)


@pytest.mark.parametrize("chunk", range(4))
def test_relu_bab_agrees_with_milp(chunk):
    """100 instances in all (25 per chunk); holds and violated both occur."""
    seen = {"holds": 0, "violated": 0}
    for seed in range(25 * chunk, 25 * chunk + 25):
        net, box, C, dv, truth = _instance(seed)
        if truth is None:
            continue
        engine = ENGINES[seed % len(ENGINES)]
        r = relu_split(net, box, C, dv, timeout=60, engine=engine)
        assert r.status == truth, (seed, engine, r.status, truth, r.reason)
        seen[truth] += 1
        if r.status == "violated":
            x = r.counterexample
            assert box.contains(x)
            assert np.all(C @ net(x) <= dv + FEAS_TOL)
    assert seen["holds"] >= 3 and seen["violated"] >= 3, seen


def test_verify_uses_relu_split_above_eight_inputs_and_agrees():
    rng = np.random.default_rng(42)
    net = _net(rng, [30, 8, 6, 1])
    box = Box(-0.4 * np.ones(30), 0.4 * np.ones(30))
    m = maximize(net, box)
    hold = Specification(box, [OutputConstraint(np.array([[-1.0]]), np.array([-(m.value + 0.01)]))])
    viol = Specification(box, [OutputConstraint(np.array([[-1.0]]), np.array([-(m.value - 0.01)]))])
    r = verify(net, hold, timeout=30)
    assert (r.status, r.method) == ("holds", "relu-split")
    r = verify(net, viol, timeout=30, attack_time=0.0)
    assert r.status == "violated" and r.method in ("relu-split", "attack", "milp")
    assert box.contains(r.counterexample) and net(r.counterexample)[0] >= m.value - 0.01 - FEAS_TOL
    # forcing input splitting on the same property gives the same answer
    assert verify(net, hold, timeout=30, method="input-split").status == "holds"
    assert verify(net, hold, timeout=30, method="milp").status == "holds"


def test_structured_graph_input_agrees_with_the_network():
    if not crown_available():
        pytest.skip("torch is not installed: no relulab.crown engine")
    from relulab.crown import BoundGraph

    rng = np.random.default_rng(5)
    net = _net(rng, [24, 8, 6, 2])
    box = Box(-0.3 * np.ones(24), 0.3 * np.ones(24))
    c = np.array([1.0, -1.0])
    m = maximize(net, box, c)
    for gap, want in ((0.02, "holds"), (-0.02, "violated")):
        spec = Specification(box, [OutputConstraint(-c[None], np.array([-(m.value + gap)]))])
        r = verify(BoundGraph.from_network(net), spec, timeout=30)
        assert r.status == want and r.method != "input-split"
        if want == "violated":
            assert float(c @ net(r.counterexample)) >= m.value + gap - FEAS_TOL


def _hard_case():
    """60 inputs, three layers of 80: the threshold sits 5% of the way from the sampled
    maximum to the CROWN bound (not decided in 30 s by the numpy engine)."""
    from relulab.bounds import crown_batch, float_layers

    rng = np.random.default_rng(7)
    dims = [60, 80, 80, 80, 1]
    Ws = [rng.normal(size=(dims[k + 1], dims[k])) / np.sqrt(dims[k]) for k in range(4)]
    bs = [rng.normal(size=dims[k + 1]) * 0.1 for k in range(4)]
    net = Network(Ws, bs)
    box = Box(-np.ones(60), np.ones(60))
    smax = float(net(box.sample(20000, rng)).max())
    Wf, bf, _ = float_layers(net)
    _, low = crown_batch(Wf, bf, box.lo[None], box.hi[None], C=np.array([[-1.0]]))
    thr = smax + 0.05 * (-low[0, 0] - smax)
    return net, Specification(box, [OutputConstraint(np.array([[-1.0]]), np.array([-thr]))])


def test_two_second_timeout_returns_unknown_and_stops():
    import time

    net, spec = _hard_case()
    # warm the engine first (importing torch is loading time, not verification time)
    verify(_net(np.random.default_rng(0), [12, 3, 1]), Specification(
        Box(-np.ones(12), np.ones(12)), [OutputConstraint(np.array([[1.0]]), np.array([-100.0]))]))
    t0 = time.monotonic()
    r = verify(net, spec, timeout=2.0)
    wall = time.monotonic() - t0
    assert (r.status, r.reason) == ("unknown", "timeout")
    # a hang detector, not a speed claim (the machines are shared and noisy): the limit
    # was overrun 2x under load, never by tens of seconds
    assert wall < 30.0, wall
    assert r.vnncomp == "timeout"


def test_tiny_memory_budget_returns_unknown_with_the_reason():
    net, spec = _hard_case()
    for engine in ENGINES:
        r = verify(net, spec, timeout=20, memory=100_000, engine=engine)
        assert r.status == "unknown" and r.reason.startswith("memory:"), r.reason
    r = relu_split(net, spec.input_box, spec.unsafe[0].C, spec.unsafe[0].d, memory=50_000)
    assert r.status == "unknown" and r.reason.startswith("memory:")
    # and the input-splitting path on a small-input network
    small = _net(np.random.default_rng(1), [3, 30, 30, 1])
    s3 = Specification(Box(-np.ones(3), np.ones(3)), [OutputConstraint(np.array([[-1.0]]), np.array([-50.0]))])
    r = verify(small, s3, timeout=20, memory=10_000, method="input-split")
    assert r.status == "unknown" and r.reason.startswith("memory:")


def test_leaves_are_decided_by_lp_when_bounds_cannot_prune():
    """A network whose maximum sits exactly at the threshold's side of a kink: with the
    numpy engine, splitting every neuron reaches linear pieces the LP decides."""
    rng = np.random.default_rng(11)
    net = _net(rng, [20, 5, 4, 1])
    box = Box(-np.ones(20), np.ones(20))
    m = maximize(net, box)
    for gap in (1e-4, -1e-4):
        r = relu_split(net, box, np.array([[-1.0]]), np.array([-(m.value + gap)]), engine="numpy",
                       attack_time=0.0, attack_every=0)
        assert r.status == ("holds" if gap > 0 else "violated")
        if gap > 0:  # the proof needed linear pieces decided by LP
            assert r.stats["leaves"] > 0
        else:
            assert net(r.counterexample)[0] >= m.value + gap - FEAS_TOL


def test_branching_scores_and_fsb():
    rng = np.random.default_rng(3)
    net = _net(rng, [4, 6, 5, 1])
    Ws = [np.asarray(W) for W in net.weights]
    # all neurons active: the backward coefficients are the products of the weights
    lo = [np.ones((1, 6)), np.ones((1, 5))]
    from relulab.bounds import relax_relu

    relax = [relax_relu(a, a + 1.0) for a in lo]
    lam = backward_coeffs(Ws, relax, np.array([[1.0]]))
    assert np.allclose(lam[1], Ws[2]) and np.allclose(lam[0], Ws[2] @ Ws[1])
    # stable neurons can never be chosen; unstable ones score >= 0
    s = babsr_scores(np.array([[-1.0, 0.5, -2.0]]), np.array([[1.0, 2.0, -1.0]]), np.array([[-1.0, -1.0, 5.0]]))
    assert s[0, 0] >= 0 and s[0, 1] == -np.inf and s[0, 2] == -np.inf
    # FSB picks an unstable neuron, or -1 when there is none
    pre = [(np.array([[-1.0] * 6]), np.array([[1.0] * 6])), (np.array([[-1.0] * 5]), np.array([[1.0] * 5]))]
    pick = choose_fsb(Ws, [np.asarray(b) for b in net.biases], pre, np.array([[1.0]]), np.zeros(1),
                      -np.ones((1, 4)), np.ones((1, 4)))
    assert 0 <= pick[0] < 11
    stable = [(np.ones((1, 6)), 2 * np.ones((1, 6))), (np.ones((1, 5)), 2 * np.ones((1, 5)))]
    assert choose_fsb(Ws, [np.asarray(b) for b in net.biases], stable, np.array([[1.0]]), np.zeros(1),
                      -np.ones((1, 4)), np.ones((1, 4))).tolist() == [-1]


def test_bad_arguments():
    net = _net(np.random.default_rng(0), [10, 3, 1])
    box = Box(-np.ones(10), np.ones(10))
    spec = Specification(box, [OutputConstraint(np.array([[1.0]]), np.array([0.0]))])
    with pytest.raises(RelulabError, match="engine"):
        relu_split(net, box, np.array([[1.0]]), np.array([0.0]), engine="gpu")
    with pytest.raises(RelulabError, match="rows"):
        relu_split(net, box, np.array([[1.0]]), np.array([0.0, 1.0]))
    with pytest.raises(RelulabError, match="coordinates"):
        relu_split(net, Box(-np.ones(3), np.ones(3)), np.array([[1.0]]), np.array([0.0]))
    with pytest.raises(RelulabError, match="columns"):
        relu_split(net, box, np.array([[1.0, 2.0]]), np.array([0.0]))
    with pytest.raises(RelulabError, match="finite"):
        relu_split(net, box, np.array([[np.nan]]), np.array([0.0]))
    with pytest.raises(RelulabError, match="method"):
        verify(net, spec, method="magic")
    with pytest.raises(RelulabError, match="memory"):
        verify(net, spec, memory=0)
    with pytest.raises(RelulabError, match="timeout"):
        verify(net, spec, timeout=-1)


def test_convolutional_graph_agrees_with_the_milp_on_its_dense_form():
    """A small conv net kept structured (relulab.crown) against the MILP of its dense form."""
    if not crown_available():
        pytest.skip("torch is not installed: no relulab.crown engine")
    import torch

    from relulab.crown import BoundGraph

    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                            torch.nn.Linear(2 * 4 * 4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 2))
    bg = BoundGraph.from_torch(m.double().eval(), (1, 6, 6))
    dense = bg.to_network()
    rng = np.random.default_rng(0)
    x0 = rng.uniform(0, 1, 36)
    box = Box(np.clip(x0 - 0.1, 0, 1), np.clip(x0 + 0.1, 0, 1))
    X = box.sample(50, rng)
    assert np.allclose(bg.forward(X), dense(X))
    c = np.array([1.0, -1.0])
    top = maximize(dense, box, c).value
    for gap, want in ((0.01, "holds"), (-0.01, "violated")):
        thr = top + gap * (1 + abs(top))
        spec = Specification(box, [OutputConstraint(-c[None], np.array([-thr]))])
        r = verify(bg, spec, timeout=30)
        assert r.status == want, (gap, r.status, r.reason)
        if want == "violated":
            assert box.contains(r.counterexample) and float(c @ dense(r.counterexample)) >= thr - FEAS_TOL
        else:
            assert r.method == "relu-split"


@pytest.mark.parametrize("engine", ENGINES)
def test_skip_connections_and_affine_networks(engine):
    """Networks with an affine input->output skip, and with no hidden layer at all."""
    for s in range(6):
        rng = np.random.default_rng(100 + s)
        d = 15
        net = Network([rng.normal(size=(6, d)) / 4, rng.normal(size=(1, 6)) / 2],
                      [rng.normal(size=6) * 0.3, np.zeros(1)],
                      (rng.normal(size=(1, d)) * 0.2, rng.normal(size=1)))
        if s == 0:
            net = Network([rng.normal(size=(1, d))], [np.zeros(1)])
        box = Box(-np.ones(d), np.ones(d))
        m = maximize(net, box).value
        for gap, want in ((0.01, "holds"), (-0.01, "violated")):
            r = relu_split(net, box, np.array([[-1.0]]), np.array([-(m + gap)]), engine=engine,
                           attack_time=0.0, attack_every=0)
            assert r.status == want, (s, gap, r.status, r.reason)
            if want == "violated":
                assert net(r.counterexample)[0] >= m + gap - FEAS_TOL


def test_large_graph_settings_with_reused_intermediate_bounds_agree_with_milp(monkeypatch):
    """The large-graph settings (children keeping their parent's intermediate bounds,
    optimised once at the root) forced on small networks: the same answers as the MILP."""
    if not crown_available():
        pytest.skip("torch is not installed: no relulab.crown engine")
    import relulab.verify.relu_bab as rb

    monkeypatch.setattr(rb, "REUSE_NEURONS", 0)
    seen = {"holds": 0, "violated": 0}
    for seed in range(200, 222):
        net, box, C, dv, truth = _instance(seed)
        if truth is None:
            continue
        r = relu_split(net, box, C, dv, timeout=60, engine="crown")
        assert r.status == truth, (seed, r.status, truth, r.reason)
        seen[truth] += 1
        if r.status == "violated":
            assert box.contains(r.counterexample)
            assert np.all(C @ net(r.counterexample) <= dv + FEAS_TOL)
    assert seen["holds"] >= 3 and seen["violated"] >= 3, seen


@pytest.mark.parametrize("large", [False, True])
def test_terms_of_one_box_share_the_root_bounds_and_agree_with_milp(monkeypatch, large):
    """A property with several unsafe terms on one box (a classification property): the
    root bound is computed once (root_proven) and reused by each term's search; ``large``:
    with the settings of graphs above 4000 ReLUs, whose root state is kept and reused."""
    if not crown_available():
        pytest.skip("torch is not installed: no relulab.crown engine")
    import relulab.verify.relu_bab as rb
    from relulab.spec import Property

    if large:
        monkeypatch.setattr(rb, "REUSE_NEURONS", 0)

    for seed in range(5):
        rng = np.random.default_rng(300 + seed)
        net = _net(rng, [24, 10, 8, 4])
        box = Box(-0.3 * np.ones(24), 0.3 * np.ones(24))
        y0 = net(box.center)
        k = int(np.argmax(y0))
        terms, truths = [], []
        for j in range(4):
            if j == k:
                continue
            c = np.zeros(4)
            c[k], c[j] = -1.0, 1.0           # unsafe: y_j >= y_k + t
            t = float(-maximize(net, box, -c).value) * rng.uniform(0.6, 1.4) if seed % 2 else 0.0
            terms.append(OutputConstraint(c[None], np.array([-t])))
            truths.append(milp_term(net, box, c[None], np.array([-t]))[0])
        if "unknown" in truths:
            continue
        want = "violated" if "violated" in truths else "holds"
        r = verify(net, Property([Specification(box, terms)]), timeout=60, engine="crown",
                   method="relu-split")
        assert r.status == want, (seed, r.status, want, r.reason)
        if want == "violated":
            x = r.counterexample
            assert box.contains(x) and any(np.all(u.C @ net(x) <= u.d + FEAS_TOL) for u in terms)


def test_structured_graph_finds_a_rare_counterexample_from_the_bound_minimisers(monkeypatch):
    """A graph treated as too large to lower (no dense network, no leaf LPs): the unsafe
    set is the corner sum(x) > 39.6 of [0, 1]^40, which random points, random corners and
    PGD (zero gradient outside it) miss; the minimiser of the root's linear bound is that
    corner, so the branch and bound answers violated, re-checked here by a forward pass."""
    if not crown_available():
        pytest.skip("torch is not installed: no relulab.crown engine")
    import relulab.verify.relu_bab as rb
    from relulab.crown import BoundGraph
    from relulab.verify.graph_attack import pgd_graph

    d = 40
    W1 = np.vstack([np.ones(d), np.eye(d)[0]])
    net = Network([W1, np.array([[1.0, -0.001]])], [np.array([-39.6, 0.0]), np.zeros(1)])
    bg = BoundGraph.from_network(net)
    box = Box(np.zeros(d), np.ones(d))
    C, dv = np.array([[-1.0]]), np.array([-0.05])   # unsafe: y >= 0.05
    assert pgd_graph(bg, box, [(C, dv)], time_limit=0.5) is None
    monkeypatch.setattr(rb, "DENSE_MAX_NEURONS", 0)
    r = relu_split(bg, box, C, dv, timeout=30, engine="crown")
    assert r.status == "violated", r
    assert box.contains(r.counterexample)
    assert np.all(C @ net(r.counterexample) <= dv + FEAS_TOL)


def _residual_onnx(path, seed: int) -> None:
    """Conv -> ReLU -> [Conv -> ReLU -> Conv] + skip -> ReLU -> Gemm -> ReLU -> Gemm, as
    an ONNX file: its dense lowering carries the skip through extra neurons."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    inits = []

    def w(name, *shape, scale=1.0):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    c, H, W = 2, 3, 3
    nodes = [
        helper.make_node("Conv", ["x", w("w1", c, 1, 1, 1), w("b1", c, scale=0.5)], ["c1"]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", w("w2", c, c, 3, 3, scale=0.7), w("b2", c, scale=0.3)], ["c2"], pads=[1] * 4),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Conv", ["r2", w("w3", c, c, 3, 3, scale=0.7), w("b3", c, scale=0.3)], ["c3"], pads=[1] * 4),
        helper.make_node("Add", ["c3", "r1"], ["a"]),
        helper.make_node("Relu", ["a"], ["r3"]),
        helper.make_node("Flatten", ["r3"], ["f"]),
        helper.make_node("Gemm", ["f", w("w4", 4, c * H * W, scale=0.3), w("b4", 4, scale=0.3)], ["g"], transB=1),
        helper.make_node("Relu", ["g"], ["r4"]),
        helper.make_node("Gemm", ["r4", w("w5", 1, 4), w("b5", 1)], ["y"], transB=1),
    ]
    g = helper.make_graph(nodes, "res", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, H, W])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(path))


@pytest.mark.parametrize("seed", range(3))
def test_residual_graph_agrees_with_the_milp_on_its_dense_form(tmp_path, seed):
    """A residual block read as a structured graph: its dense lowering has more neurons
    than the graph has ReLUs (the carried skip), so the graph's split vectors do not
    index it.  The branch and bound once fed them to its leaf LPs and its candidate
    probe (a crash); now such leaves stay open in relu_split on the graph, and verify
    splits the lowering itself, which decides."""
    if not crown_available():
        pytest.skip("torch is not installed: no relulab.crown engine")
    from relulab.io import load_model
    from relulab.verify import load_for_verify

    p = tmp_path / "res.onnx"
    _residual_onnx(p, seed)
    graph, dense = load_for_verify(str(p)), load_model(p)
    assert type(graph).__name__ == "BoundGraph"
    assert sum(dense.widths) > graph.n_neurons
    rng = np.random.default_rng(seed)
    x0 = rng.uniform(-1, 1, 9)
    box = Box(x0 - 0.4, x0 + 0.4)
    top = maximize(dense, box).value
    C = np.array([[-1.0]])
    for gap, want in ((1e-4, "holds"), (-1e-4, "violated")):
        thr = top + gap * (1 + abs(top))
        r = relu_split(graph, box, C, np.array([-thr]), engine="crown", check_net=dense,
                       attack_time=0.0, attack_every=0, timeout=30)
        assert r.status in (want, "unknown"), (seed, gap, r.status)
        if r.status == "unknown":
            assert r.reason.startswith(("incomplete", "timeout")), r.reason
        spec = Specification(box, [OutputConstraint(C, np.array([-thr]))])
        for method in ("auto", "relu-split"):
            # verify runs the ReLU splitting on the small lowering itself: complete again
            r = verify(graph, spec, timeout=60, method=method, attack_time=0.0)
            assert r.status == want, (seed, gap, method, r.status, r.reason)
            if want == "violated":
                assert box.contains(r.counterexample)
                assert float(dense(r.counterexample)[0]) >= thr - FEAS_TOL


def test_relu_split_of_a_residual_graph_is_complete_on_its_lowering(tmp_path):
    """Within 1e-6 of the optimum, the bounds cannot prune every linear piece: each needs
    its LP, which only the lowering's own neurons allow (on the graph: 'incomplete')."""
    if not crown_available():
        pytest.skip("torch is not installed: no relulab.crown engine")
    from relulab.io import load_model
    from relulab.verify import load_for_verify

    p = tmp_path / "res.onnx"
    _residual_onnx(p, 5)
    graph, dense = load_for_verify(str(p)), load_model(p)
    rng = np.random.default_rng(5)
    x0 = rng.uniform(-1, 1, 9)
    box = Box(x0 - 0.4, x0 + 0.4)
    thr = maximize(dense, box).value
    thr += 1e-6 * (1 + abs(thr))
    spec = Specification(box, [OutputConstraint(np.array([[-1.0]]), np.array([-thr]))])
    r = verify(graph, spec, timeout=120, method="relu-split", attack_time=0.0)
    assert r.status == "holds", (r.status, r.reason)


def test_graph_attack_sizes_its_batch_to_the_time_left(monkeypatch):
    """A step of the structured attack on a large graph (16 points of a CIFAR ResNet:
    0.8 s) outlasted a short attack budget (0.05 s) by itself: the first step now runs on
    one point to measure the cost, and no later batch may take more than a quarter of
    the time left. A graph made slow on purpose (0.02 s per point) shows the batch sizes."""
    if not crown_available():
        pytest.skip("torch is not installed: no relulab.crown engine")
    import time

    from relulab.crown import BoundGraph
    from relulab.verify.graph_attack import pgd_graph

    net = Network([np.array([[1.0, 1.0], [1.0, -1.0]]), np.array([[1.0, 1.0]])], [np.zeros(2), np.zeros(1)])
    fast = BoundGraph.from_network(net).converted("float64")
    batches: list[int] = []
    delay = [0.02]   # seconds per point

    class Slow:
        def run(self, X):
            if X.requires_grad:   # the attack's steps (not the forward pass that confirms)
                batches.append(int(X.shape[0]))
                time.sleep(delay[0] * X.shape[0])
            return fast.run(X)

        def torch_dtype(self):
            return fast.torch_dtype()

    bg = BoundGraph.from_network(net)
    monkeypatch.setattr(type(bg), "converted", lambda self, dtype: Slow())
    box = Box([-1.0, -1.0], [1.0, 1.0])
    never = [(np.array([[1.0]]), np.array([-100.0]))]   # unsafe: y <= -100, impossible
    assert pgd_graph(bg, box, never, time_limit=0.01) is None
    assert batches == [1]                 # the probe alone: no 16-point step after it
    batches.clear()
    assert pgd_graph(bg, box, never, time_limit=0.4) is None
    # a quarter of at most 0.4 s is at most 5 points of 0.02 s (the old rounds took 16)
    assert batches[0] == 1 and max(batches) <= 5, batches
    batches.clear()
    delay[0] = 0.002
    assert pgd_graph(bg, box, never, time_limit=2.0) is None
    assert max(batches) == 16             # with time to spare, full rounds as before


@pytest.mark.parametrize("seed", range(6))
def test_large_graph_route_where_the_first_layer_cancels(monkeypatch, seed):
    """y = relu(K - sum(x - C0)) on 256 inputs near C0 = 1e5 (box 1e-3 wide), y = 0.4 at the
    corner x = lo: a first layer adding up terms of 2.6e7 to 0.4.  In float32 (the route of
    graphs above 4000 ReLUs until 2026-12-06) its bounds [-2, -0.9] called the neuron dead
    and the violated property read "holds" on every seed.  No attack: the bounds and the
    leaf LPs decide alone."""
    if not crown_available():
        pytest.skip("torch is not installed: no relulab.crown engine")
    import relulab.verify.relu_bab as rb

    monkeypatch.setattr(rb, "REUSE_NEURONS", 0)
    n, C0 = 256, 1e5
    rng = np.random.default_rng(seed)
    lo = C0 + rng.random(n) * 0.5
    K = float(np.sum(lo - C0)) + 0.4
    net = Network([np.vstack([-np.ones(n), np.zeros(n)]), [[1.0, 0.0]]], [[K + n * C0, 0.0], [0.0]])
    assert net(lo[None])[0, 0] > 0.39
    r = relu_split(net, Box(lo, lo + 1e-3), -np.ones((1, 1)), np.array([-0.35]), timeout=30,
                   engine="crown", attack_time=0.0)
    assert r.status == "violated" and net(r.counterexample[None])[0, 0] >= 0.35


def _large_graph_verdict(monkeypatch, net, box, C, d):
    import relulab.verify.relu_bab as rb

    monkeypatch.setattr(rb, "REUSE_NEURONS", 0)   # the settings of graphs above 4000 ReLUs
    return relu_split(net, box, C, d, timeout=30, engine="crown", attack_time=0.0)


def test_large_graph_route_where_biases_are_beyond_float32(monkeypatch):
    """y1 - y2 = 30 everywhere, from output biases 1e9 + 60 and 1e9 + 30: in float32 they
    read 1e9 + 64 and 1e9, and "y1 - y2 > 50" read "holds"."""
    if not crown_available():
        pytest.skip("torch is not installed: no relulab.crown engine")
    net = Network([[[1.0], [-1.0]], [[1.0, 0.5], [1.0, 0.5]]], [[0.0, 0.0], [1e9 + 60, 1e9 + 30]])
    r = _large_graph_verdict(monkeypatch, net, Box([0.0], [1.0]), np.array([[1.0, -1.0]]), np.array([50.0]))
    assert r.status != "holds"
    if r.status == "violated":
        y = net(r.counterexample[None])[0]
        assert y[0] - y[1] <= 50


def test_large_graph_route_where_a_later_layer_cancels(monkeypatch):
    """A second-layer neuron A relu(x + a) - A relu(x + b) + c with A = 2.1e13 is +2.8e-5 on
    the whole box (terms of 3e13): float32 calls it dead."""
    if not crown_available():
        pytest.skip("torch is not installed: no relulab.crown engine")
    A, ba, bb, c = 21378344081285.254, 1.4589970700998818, 1.458997070099877, -0.10440499098819735
    net = Network([[[1.0], [1.0]], [[A, -A]], [[1e6]]], [[ba, bb], [c], [0.0]])
    from fractions import Fraction

    # about 27.8 everywhere on [0, 1] in exact arithmetic (float64 evaluation loses it too)
    assert net.exact()(np.array([Fraction(1, 2)], dtype=object))[0] > 20
    r = _large_graph_verdict(monkeypatch, net, Box([0.0], [1.0]), -np.ones((1, 1)), np.array([-1.0]))
    assert r.status != "holds"   # "y < 1 on the box" is false


def _offset_pair_network(m1: float, m2: float, P: float = 1000.0, eps: float = 4e-3, nd: int = 4):
    """y = tent + P (relu(x0 - m1) - relu(x0 - m2)) on x0 near 48: the pair adds
    P (m2 - m1) everywhere, and the tent (a bump of height eps at x = c) makes the
    maximum eps + P (m2 - m1) (aud_ver5: a physical-unit input on a small box)."""
    c = 0.002 + 0.001 * np.arange(nd)
    W1 = np.zeros((2 + 2 * nd, 1 + nd))
    b1 = np.zeros(2 + 2 * nd)
    W1[0, 0] = W1[1, 0] = 1.0
    b1[0], b1[1] = -m1, -m2
    for i in range(nd):
        W1[2 + i, 1 + i], b1[2 + i] = 1.0, -c[i]
        W1[2 + nd + i, 1 + i], b1[2 + nd + i] = -1.0, c[i]
    W2 = np.zeros((3, 2 + 2 * nd))           # tent, and r1, r2 passed on (both >= 0)
    W2[0, 2:] = -1.0
    W2[1, 0] = W2[2, 1] = 1.0
    net = Network([W1, W2, [[1.0, P, -P]]], [b1, [eps, 0.0, 0.0], [0.0]])
    lo = np.r_[48 - 1e-3, np.zeros(nd)]
    hi = np.r_[48 + 1e-3, np.full(nd, 0.01)]
    return net, Box(lo, hi), np.r_[48.0, c]


def test_float32_check_sees_constants_that_round_together():
    """m1 = 47.998003 and m2 = 47.998007 are one float32 number: the float32 copy loses
    P (m2 - m1) = 3.7e-3 everywhere, far beyond a float32 proof's margin; float32
    constants (the common ONNX case) move nothing."""
    if not crown_available():
        pytest.skip("torch is not installed: no relulab.crown engine")
    from relulab.crown import BoundGraph, float32_unsafe

    m1, m2 = 47.99800304412842, 47.99800678253174
    assert np.float32(m1) == np.float32(m2)
    net, box, _ = _offset_pair_network(m1, m2)
    bg = BoundGraph.from_network(net)
    why = float32_unsafe(bg, box.lo[None], box.hi[None], 100.0, rows=[[-1.0]], tolerance=[2.5e-5])
    assert why is not None and "rounding the weights to float32" in why
    f1 = float(np.float32(m1))
    f2 = float(np.nextafter(np.float32(f1), np.float32(49), dtype=np.float32))
    net32, box32, _ = _offset_pair_network(f1, f2, P=1.0)
    assert float32_unsafe(BoundGraph.from_network(net32), box32.lo[None], box32.hi[None], 100.0,
                          rows=[[-1.0]], tolerance=[2.5e-5]) is None


def test_large_graph_route_where_constants_round_together(monkeypatch):
    """The property "y < P (m2 - m1) + eps / 2" is false (at x = c, y = P (m2 - m1) + eps
    in exact arithmetic); float32 bounds, whose copy of the network has no offset, read it
    as "holds" from the root bound alone."""
    if not crown_available():
        pytest.skip("torch is not installed: no relulab.crown engine")
    from fractions import Fraction

    m1, m2 = 47.99800304412842, 47.99800678253174
    net, box, c = _offset_pair_network(m1, m2)
    thr = 1000.0 * (m2 - m1) + 2e-3
    assert net.exact()(np.array([Fraction(v) for v in c], dtype=object))[0] > Fraction(thr)
    r = _large_graph_verdict(monkeypatch, net, box, -np.ones((1, 1)), np.array([-thr]))
    assert r.status != "holds"
    if r.status == "violated":
        assert net(r.counterexample[None])[0, 0] >= thr


def test_no_bound_starts_after_the_deadline(monkeypatch):
    """A large graph can use up a short time limit before its first bound; a bound started
    after it ran a full float64 interval pass (3 s past a 1 s limit on 393k ReLUs).  Past
    the deadline the bounder returns vacuous bounds, marked incomplete, without bounding."""
    if not crown_available():
        pytest.skip("torch is not installed: no relulab.crown engine")
    import time

    import relulab.crown as crown
    import relulab.verify.relu_bab as rb

    calls = []
    real_bound = crown.bound

    def counted(*args, **kwargs):
        calls.append(1)
        return real_bound(*args, **kwargs)

    monkeypatch.setattr(crown, "bound", counted)
    net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    gb = rb._GraphBounder(crown.BoundGraph.from_network(net), np.ones((1, 1)), np.array([-2.0]), net)
    S = np.zeros((1, 2), dtype=np.int8)
    late = gb.bound(np.array([-1.0]), np.array([1.0]), S, None, time.monotonic() - 1.0)
    assert not calls and np.isneginf(late.low).all() and not late.complete
    on_time = gb.bound(np.array([-1.0]), np.array([1.0]), S, None, time.monotonic() + 30.0)
    assert calls and on_time.low[0, 0] > 0     # |x| >= -2 holds: the real bound proves it


def _thin_live_neuron_network(nd: int = 4):
    """y = 2^32 relu(relu(x0 + x1 - 1) - sum_i |x_i - c_i|) on x0 in [1 - 2^-20, 1],
    x1 in [0, 2^-25], x_i in [c_i - 1e-6, c_i + 1e-6]: y = 128 at x0 = 1, x1 = 2^-25,
    x_i = c_i, where float32 reads 1 + 2^-25 - 1 as 0 (aud_ver6: a 4,118-ReLU graph,
    routed to float32 bounds then, answered "y >= 64" holds)."""
    c = np.array([float(np.float32(0.3 + 0.1 * i)) for i in range(nd)])
    W1 = np.zeros((1 + 2 * nd, 2 + nd))
    b1 = np.zeros(1 + 2 * nd)
    W1[0, :2], b1[0] = 1.0, -1.0
    for i in range(nd):
        W1[1 + i, 2 + i], b1[1 + i] = 1.0, -c[i]
        W1[1 + nd + i, 2 + i], b1[1 + nd + i] = -1.0, c[i]
    W2 = np.full((1, 1 + 2 * nd), -1.0)
    W2[0, 0] = 1.0
    net = Network([W1, W2, [[2.0 ** 32]]], [b1, [0.0], [0.0]])
    lo = np.r_[1 - 2.0 ** -20, 0.0, c - 1e-6]
    hi = np.r_[1.0, 2.0 ** -25, c + 1e-6]
    witness = np.r_[1.0, 2.0 ** -25, c]
    return net, Box(lo, hi), witness


def test_float32_bounds_carry_their_rounding_and_the_large_graph_route_is_not_fooled(monkeypatch):
    if not crown_available():
        pytest.skip("torch is not installed: no relulab.crown engine")
    from fractions import Fraction

    from relulab.crown import BoundGraph, bound

    net, box, witness = _thin_live_neuron_network()
    assert net.exact()(np.array([Fraction(v) for v in witness], dtype=object))[0] == 128
    bg = BoundGraph.from_network(net)
    for dtype in ("float32", "float64"):
        for method in ("ibp", "crown", "alpha"):
            up = bound(bg, box.lo[None], box.hi[None], [[1.0]], method=method, dtype=dtype).upper[0, 0]
            assert up >= 128, (dtype, method, up)     # float32 read -0.0 before
    r = _large_graph_verdict(monkeypatch, net, box, -np.ones((1, 1)), np.array([-64.0]))
    assert r.status != "holds"
    if r.status == "violated":
        assert net.exact()(np.array([Fraction(v) for v in r.counterexample], dtype=object))[0] >= 64


def test_a_graph_above_4000_relus_is_not_proved_in_float32():
    """The same thin neuron beside 4,096 ReLUs that feed nothing: above 4000 ReLUs branch
    and bound used to bound in float32, and answered "y >= 64" holds in 3 s."""
    if not crown_available():
        pytest.skip("torch is not installed: no relulab.crown engine")
    net, box, _ = _thin_live_neuron_network()
    (W1, W2, W3), (b1, b2, b3) = net.weights, net.biases
    pad = 4096
    wide = Network([np.vstack([W1, np.zeros((pad, W1.shape[1]))]),
                    np.hstack([W2, np.zeros((W2.shape[0], pad))]), W3],
                   [np.r_[b1, np.zeros(pad)], b2, b3])
    assert sum(w.shape[0] for w in wide.weights[:-1]) > 4000
    r = relu_split(wide, box, -np.ones((1, 1)), np.array([-64.0]), timeout=8, engine="crown",
                   attack_time=0.0, attack_every=0)
    assert r.status != "holds", r
    if r.status == "violated":
        assert wide(r.counterexample[None])[0, 0] >= 64


def test_the_root_state_of_a_large_graph_serves_every_term(monkeypatch):
    """With the settings of graphs above 4000 ReLUs, root_proven keeps the root's state for
    the terms' searches; a property whose terms the MILP proves must read "holds" (a
    leftover of the float32 route made this path raise)."""
    if not crown_available():
        pytest.skip("torch is not installed: no relulab.crown engine")
    import relulab.verify.relu_bab as rb
    from relulab.crown import BoundGraph
    from relulab.spec import Property

    monkeypatch.setattr(rb, "REUSE_NEURONS", 0)
    rng = np.random.default_rng(7)
    net = _net(rng, [24, 10, 8, 4])
    box = Box(-0.3 * np.ones(24), 0.3 * np.ones(24))
    terms = []
    for j in range(1, 4):
        c = np.zeros(4)
        c[0], c[j] = -1.0, 1.0
        d = -float(maximize(net, box, -c).value) - 0.05   # 0.05 below min (y_j - y_0)
        terms.append(OutputConstraint(c[None], np.array([d])))
        assert milp_term(net, box, c[None], np.array([d]))[0] == "holds"
    for model in (net, BoundGraph.from_network(net)):
        r = verify(model, Property([Specification(box, terms)]), timeout=60, engine="crown",
                   method="relu-split")
        assert r.status == "holds", (type(model).__name__, r.status, r.reason)
