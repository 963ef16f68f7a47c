"""relulab.dynamics: the training loop against hand-written GD and closed-form gradient
flow, recorders against relulab's forward pass and scipy clustering, bad input."""

from __future__ import annotations

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from relulab import Box, Network  # noqa: E402
from relulab.dynamics import (  # noqa: E402
    Alignment,
    DistanceTo,
    DynamicsError,
    EffectiveWidth,
    RegionCount,
    effective_width,
    linear_dichotomies,
    mlp,
    plateaus,
    saddle_events,
    ternary_patterns,
    train,
)
from relulab.dynamics.dichotomies import cover_count  # noqa: E402


# ----------------------------------------------------------------- gradient flow, closed form
def _two_neuron_model(eps: float):
    """Neuron j is active on data point j only (orthogonal data), balanced at scale eps."""
    m = mlp([2, 2, 1], bias=False, out_bias=False)
    with torch.no_grad():
        m.body[0].weight.copy_(torch.tensor([[eps, -eps], [-eps, eps]], dtype=torch.float64))
        m.body[2].weight.fill_(eps)
    return m


def _logistic(t, s, y, eps):
    """f(x_j)(t) for one balanced neuron on one point of norm s with target y:
    v = a u obeys dv/dt = 2 s v (y - s v), v(0) = eps^2, and f = s v."""
    K = y / s
    return s * K / (1.0 + (K / eps**2 - 1.0) * np.exp(-2.0 * s * y * t))


def test_two_neuron_gradient_flow_order_and_plateaus():
    eps, lr = 1e-4, 5e-3
    s, yv = np.array([1.0, 2.0]), np.array([1.2, 1.0])
    X = np.diag(s)
    t = train(_two_neuron_model(eps), X, yv, loss="sse", optimizer="flow", lr=lr,
              steps=2600, every=10, record=["norms", "outputs", "patterns"])
    assert t.flow.ok and t.flow.checked > 100
    # the whole output trajectory follows the closed-form flow (time = lr * step)
    time = t.record_steps * lr
    for j in range(2):
        exact = _logistic(time, s[j], yv[j], eps)
        assert np.max(np.abs(t.records["outputs"][:, j, 0] - exact)) < 0.02
    # rates 2 s y: 4 for neuron 1, 2.4 for neuron 0 -> neuron 1 activates first
    ev = saddle_events(t)
    assert ev.activation_order == (1, 0)
    levels = [0.5 * (yv @ yv), 0.5 * yv[0] ** 2, 0.0]
    assert len(ev.plateaus) == 3
    for p, want in zip(ev.plateaus, levels, strict=True):
        assert abs(p.loss - want) < 1e-2 * levels[0]
    # the escape times match the logistic midpoints ln(K / eps^2 - 1) / (2 s y)
    for jump, j in zip(ev.jumps, (1, 0), strict=True):
        mid = np.log(yv[j] / s[j] / eps**2 - 1) / (2 * s[j] * yv[j]) / lr
        assert jump.start <= mid <= jump.end
    # patterns never change: each neuron stays on its own point
    assert t.pattern_changes().steps.size == 0


def test_flow_check_rejects_large_steps():
    X = np.random.default_rng(0).normal(size=(10, 2))
    y = X[:, 0] - X[:, 1]
    ok = train(mlp([2, 5, 1], seed=1), X, y, optimizer="flow", lr=1e-3, steps=200, record=[])
    bad = train(mlp([2, 5, 1], seed=1), X, y, optimizer="flow", lr=1.5, steps=200, record=[])
    assert ok.flow.ok and ok.flow.max_rel_error < 0.05
    assert not bad.flow.ok


# ----------------------------------------------------------------- GD vs hand-written numpy
def _numpy_gd(W1, b1, W2, b2, X, y, lr, steps, wd):
    n = X.shape[0]
    params, losses = [], []
    for _ in range(steps + 1):
        Z = X @ W1.T + b1
        H = np.maximum(Z, 0.0)
        F = H @ W2.T + b2
        R = F - y
        pen = sum(float(np.sum(p * p)) for p in (W1, b1, W2, b2))
        losses.append(0.5 * np.sum(R * R) / n + 0.5 * wd * pen)
        params.append(np.concatenate([W1.ravel(), b1, W2.ravel(), b2]))
        G = R / n
        gW2 = G.T @ H + wd * W2
        gb2 = G.sum(axis=0) + wd * b2
        D = (G @ W2) * (Z > 0)
        gW1 = D.T @ X + wd * W1
        gb1 = D.sum(axis=0) + wd * b1
        W1, b1, W2, b2 = W1 - lr * gW1, b1 - lr * gb1, W2 - lr * gW2, b2 - lr * gb2
    return np.array(params), np.array(losses)


@pytest.mark.parametrize("wd", [0.0, 0.05])
def test_gd_equals_numpy_gd(wd):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(7, 3))
    y = rng.normal(size=(7, 2))
    W1, b1 = rng.normal(size=(4, 3)), rng.normal(size=4) * 0.3
    W2, b2 = rng.normal(size=(2, 4)), rng.normal(size=2)
    net = Network([W1, W2], [b1, b2])
    t = train(net, X, y, optimizer="gd", lr=0.05, steps=60, every=1, weight_decay=wd,
              record=["params"], device="cpu")
    want_p, want_l = _numpy_gd(W1, b1, W2, b2, X, y, 0.05, 60, wd)
    assert np.max(np.abs(t.records["params"] - want_p)) < 1e-10
    assert np.max(np.abs(t.loss - want_l)) < 1e-10
    # the final network is the last parameter vector
    assert np.max(np.abs(t.network.weights[0].ravel() - want_p[-1, :12])) < 1e-10


# ----------------------------------------------------------------- recorders
def test_patterns_agree_with_network_forward_pass():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 2))
    y = np.sin(3 * X[:, 0]) * X[:, 1]
    m = mlp([2, 6, 5, 1], seed=2)
    t = train(m, X, y, optimizer="sgd", batch_size=8, momentum=0.9, lr=0.05, steps=300,
              every=10, record=["params", "patterns", "norms"])
    shapes = [(6, 2), (6,), (5, 6), (5,), (1, 5), (1,)]
    changed = 0
    for k, p in enumerate(t.records["params"]):
        parts, i = [], 0
        for sh in shapes:
            size = int(np.prod(sh))
            parts.append(p[i:i + size].reshape(sh))
            i += size
        net = Network(parts[0::2], parts[1::2])
        want = np.concatenate(net.activation_pattern(X), axis=1)
        assert np.array_equal(t.records["patterns"][k], want)
        changed += k > 0 and not np.array_equal(want, t.records["patterns"][k - 1])
    ch = t.pattern_changes()
    assert ch.steps.size == changed > 0
    assert ch.flips.sum() == np.sum(t.records["patterns"][1:] != t.records["patterns"][:-1])


def _planted(rng, k, copies, d, jitter):
    dirs = rng.normal(size=(k, d))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    rows = np.repeat(dirs, copies, axis=0)
    rows = rows + jitter * rng.normal(size=rows.shape)
    return rows * rng.uniform(0.5, 3.0, size=(rows.shape[0], 1))


@pytest.mark.parametrize("seed", range(5))
def test_effective_width_matches_scipy_clustering(seed):
    from scipy.cluster.hierarchy import fcluster, linkage

    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 7))
    V = _planted(rng, k, 5, 4, 1e-4)
    U = V / np.linalg.norm(V, axis=1, keepdims=True)
    tol = 1e-2
    ref = len(set(fcluster(linkage(U, "single"), t=tol, criterion="distance")))
    assert effective_width(V, tol=tol) == ref == k
    # through the recorder on a module holding the planted directions
    m = mlp([3, V.shape[0], 1], seed=0)
    with torch.no_grad():
        m.body[0].weight.copy_(torch.from_numpy(V[:, :3]))
        m.body[0].bias.copy_(torch.from_numpy(V[:, 3]))
    t = train(m, rng.normal(size=(5, 3)), np.zeros(5), steps=0, record=[EffectiveWidth()])
    assert int(t.records["effective_width"][0]) == k


def test_effective_width_min_share_ignores_small_neurons():
    V = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    assert effective_width(V, outgoing=[[1.0, 1.0, 1e-6]], min_share=1e-3) == 2
    assert effective_width(V, outgoing=[[1.0, 1.0, 1e-6]]) == 3


def test_alignment_region_and_distance_recorders():
    rng = np.random.default_rng(1)
    x = np.linspace(-1, 1, 9)[:, None]
    y = np.abs(x[:, 0])
    m = mlp([1, 5, 1], seed=4)
    ref = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    t = train(m, x, y, optimizer="adam", lr=0.02, steps=200, every=50,
              record=[Alignment(targets=[[1.0], [-1.0]]), RegionCount(segment=([-1.0], [1.0])),
                      DistanceTo(reference=ref, points=rng.uniform(-1, 1, (20, 1)))])
    A = t.records["alignment"]
    assert A.shape == (5, 5, 2) and np.allclose(np.abs(A), 1.0)  # 1-D weights: cos = +-1
    net = t.network
    w, b = net.weights[0][:, 0], net.biases[0]
    kinks = {float(v) for v in -b[w != 0] / w[w != 0] if -1 < v < 1}
    assert t.records["regions"][-1] == len(kinks) + 1
    assert t.records["distance"][-1] < t.records["distance"][0]
    box = train(m, x, y, steps=0,
                record=[RegionCount(box=Box([-1.0], [1.0]))])
    assert box.records["regions"][0] >= 1


def test_sgd_adamw_noise_and_stop_rules():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 2))
    y = X @ np.array([1.0, -2.0])
    for opt in ("sgd", "adam", "adamw"):
        t = train(mlp([2, 8, 1], seed=0), X, y, optimizer=opt, lr=0.01, steps=100,
                  batch_size=10, weight_decay=1e-3, record=[])
        assert t.status == "completed" and t.loss.size == 101
        # with minibatches the recorded loss is the full-data objective, unless asked not
        full = train(mlp([2, 8, 1], seed=0), X, y, optimizer=opt, lr=0.01, steps=20,
                     batch_size=10, record=[], full_loss=False)
        assert np.array_equal(full.recorded_loss, full.loss[full.record_steps])
    t = train(mlp([2, 8, 1], seed=0), X, y, lr=0.05, steps=5000, loss_tol=1e-2, record=[])
    assert t.status == "stopped" and t.final_loss <= 1e-2 and t.steps < 5000
    t = train(mlp([2, 8, 1], seed=0), X, y, lr=0.05, steps=500, every=5, record=[],
              stop=lambda ctx, loss: ctx.step >= 20)
    assert t.status == "stopped" and t.steps == 20
    a = train(mlp([2, 8, 1], seed=0), X, y, lr=0.01, steps=50, noise=1e-3, seed=1, record=[])
    b = train(mlp([2, 8, 1], seed=0), X, y, lr=0.01, steps=50, noise=1e-3, seed=2, record=[])
    assert a.final_loss != b.final_loss


def test_no_decay_keeps_skip_free():
    X = np.linspace(-1, 1, 5)[:, None]
    m = mlp([1, 3, 1], skip=True, seed=0)
    t = train(m, X, 2 * X[:, 0], lr=0.1, steps=300, weight_decay=0.5, no_decay=("skip",),
              record=[])
    # a free skip fits the linear target with no penalty: loss -> ~0
    assert t.final_loss < 0.05 and t.network.skip is not None


def test_no_decay_as_one_string_is_one_prefix():
    # "body.0.bias" was iterated letter by letter: 'b' matched every body.* name and
    # weight decay was silently off for every parameter
    import torch

    X, y = np.eye(3), np.array([1.0, 2.0, 3.0])
    m = mlp([3, 4, 1], seed=0)
    base = train(m, X, y, weight_decay=0.0, steps=1, every=1, record=[]).loss[0]
    with torch.no_grad():
        penalty = sum(float((p ** 2).sum()) for n, p in m.named_parameters() if n != "body.0.bias")
    for no_decay in ("body.0.bias", ["body.0.bias"]):
        t = train(m, X, y, weight_decay=0.5, no_decay=no_decay, steps=1, every=1, record=[])
        assert t.loss[0] == pytest.approx(base + 0.25 * penalty, rel=1e-12)
    with pytest.raises(DynamicsError, match="no_decay: expected parameter-name prefixes"):
        train(m, X, y, weight_decay=0.5, no_decay=[3], steps=1, record=[])


# ----------------------------------------------------------------- saddles
def test_plateau_detection_on_a_staircase():
    L = np.concatenate([np.full(300, 3.0), np.linspace(3, 2, 20), np.full(300, 2.0),
                        np.linspace(2, 0, 20), np.full(300, 0.0)])
    runs, _ = plateaus(L, window=4)
    assert len(runs) == 3
    assert runs[0][0] == 0 and abs(runs[1][0] - 320) <= 4 and abs(runs[2][0] - 640) <= 4


# ----------------------------------------------------------------- dichotomies
@pytest.mark.parametrize("n,d", [(5, 1), (6, 2), (7, 2), (6, 3)])
def test_linear_dichotomies_general_position(n, d):
    from relulab.dynamics.dichotomies import _arrangement_cells

    X = np.random.default_rng(n * 10 + d).normal(size=(n, d))
    assert linear_dichotomies(X) == cover_count(n, d + 1)
    # the exact general-position shortcut against the region enumeration of the arrangement
    assert _arrangement_cells(np.hstack([X, np.ones((n, 1))])) == cover_count(n, d + 1)


@pytest.mark.parametrize("eps", [1e-9, 1e-12, 1e-14, 1e-16])
def test_linear_dichotomies_nearly_collinear_points_are_counted_exactly(eps):
    # (2, eps) is off the line of (0, 0), (1, 0) by eps: general position (Cover: 14).
    # The float enumeration merged the thin cells and said 12 at 1e-14, with no warning
    X = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, eps], [0.0, 1.0]])
    assert linear_dichotomies(X) == 14 == cover_count(4, 3)
    assert linear_dichotomies([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [3.0, 0.0]]) == 8   # on a line: 2 * 4


def test_linear_dichotomies_degenerate_and_nearly_degenerate_is_exact():
    # only {0, 1, 2} is collinear here ((1, 1 + 1e-14) is off its line): the same matroid
    # as the well-conditioned set below, so the same count, which the region enumeration
    # of that set gives independently
    from relulab.dynamics.dichotomies import _arrangement_cells

    X = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [1.0, 1.0 + 1e-14], [2.0, 1.0]])
    twin = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [1.0, 2.0], [2.0, 1.0]])
    assert linear_dichotomies(X) == _arrangement_cells(np.hstack([twin, np.ones((6, 1))])) == 30


def test_many_degenerate_and_nearly_degenerate_points_are_not_certified():
    # past Whitney's 12 points the float enumeration counts; a subset independent by
    # 1e-14 of its scale is below its resolution, so the count is refused
    from relulab.errors import UncertifiedCount

    rng = np.random.default_rng(3)
    X = np.vstack([[[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [0.0, 5.0], [1.0, 5.0 + 1e-14], [2.0, 5.0]],
                   rng.uniform(-3, 3, (8, 2))])
    with pytest.raises(UncertifiedCount, match="nearly degenerate"):
        linear_dichotomies(X)


def test_whitney_count_equals_the_region_enumeration_on_degenerate_grids():
    from relulab.dynamics.dichotomies import _arrangement_cells, _whitney_cells

    rng = np.random.default_rng(0)
    for _ in range(6):
        P = np.unique(rng.integers(0, 3, size=(8, 2)).astype(float), axis=0)   # many collinear
        Pa = np.hstack([P, np.ones((len(P), 1))])
        assert _whitney_cells(Pa) == _arrangement_cells(Pa)


def test_repeated_points_count_once_and_few_points_get_their_2_to_the_n():
    # 0, 0, e1 and 2 e1 + 1e-14 e2 in R^3: three distinct independent points, 2^3 = 8
    # (the enumeration said 6, with the duplicate hiding the near-degeneracy)
    assert linear_dichotomies([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0, 1e-14, 0.0]]) == 8
    assert linear_dichotomies([[1.0, 2.0], [-2.0, -4.0], [0.0, 1.0]], bias=False) == 4   # two lines


def test_linear_dichotomies_degenerate_and_brute_force():
    X = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [0.0, 1.0]])  # three collinear
    P = linear_dichotomies(X)
    rng = np.random.default_rng(0)
    V = rng.normal(size=(200000, 3))
    seen = {tuple(r) for r in ternary_patterns(V, X) if 0 not in r}
    assert P == len(seen) < cover_count(4, 3)


# ----------------------------------------------------------------- bad input
def test_bad_input_one_clear_error_each():
    X = np.zeros((4, 2))
    with pytest.raises(DynamicsError, match="4 rows but y has shape"):
        train(mlp([2, 3, 1]), X, np.zeros(3))
    with pytest.raises(DynamicsError, match="non-finite value"):
        train(mlp([2, 3, 1]), np.array([[0.0, np.nan]] * 4), np.zeros(4))
    with pytest.raises(DynamicsError, match="unknown recorder 'norm'"):
        train(mlp([2, 3, 1]), X, np.zeros(4), record=["norm"])
    tanh = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))
    with pytest.raises(DynamicsError, match="recorder 'patterns' needs a ReLU network"):
        train(tanh.double(), X, np.zeros(4), record=["patterns"])
    with pytest.raises(DynamicsError, match="unknown optimizer"):
        train(mlp([2, 3, 1]), X, np.zeros(4), optimizer="lbfgs")
    with pytest.raises(DynamicsError, match="unknown loss"):
        train(mlp([2, 3, 1]), X, np.zeros(4), loss="hinge3")
    with pytest.raises(DynamicsError, match="model has 1 outputs"):
        train(mlp([2, 3, 1]), X, np.zeros((4, 2)))
    # a non-ReLU module trains fine when nothing needs ReLU structure
    t = train(tanh.double(), X, np.zeros(4), steps=2, record=["params"])
    assert t.network is None and t.records["params"].shape[0] == 2


def test_dynamics_plots(tmp_path):
    pytest.importorskip("matplotlib")
    from relulab import plot

    X = np.diag([1.0, 2.0])
    t = train(_two_neuron_model(1e-3), X, [1.0, 1.0], loss="sse", lr=0.02, steps=600,
              record=["norms", Alignment(targets=np.eye(2))])
    for f, name in ((plot.loss_plateaus, "a"), (plot.neuron_norms, "b"),
                    (plot.alignment_heatmap, "c")):
        f(t, path=str(tmp_path / f"{name}.png"))
        assert (tmp_path / f"{name}.png").stat().st_size > 1000


def test_divergence_and_time_limit_are_partial():
    X = np.random.default_rng(0).normal(size=(10, 2)) * 10
    t = train(mlp([2, 4, 1], seed=0), X, X[:, 0] ** 2, lr=10.0, steps=2000, every=5, record=[])
    assert t.status == "diverged" and t.partial and t.steps < 2000
    t = train(mlp([2, 4, 1], seed=0), X, X[:, 0], lr=1e-4, steps=10**7, time_limit=0.2,
              record=["norms"])
    assert t.status == "time_limit" and t.partial and t.record_steps[-1] == t.steps


def test_results_serialise_to_json():
    import json

    t = train(mlp([2, 3, 1], skip=True), np.eye(2), [1.0, 2.0], optimizer="flow", steps=30,
              record=["norms", "patterns"])
    d = json.loads(json.dumps(t.to_dict()))
    assert d["status"] == "completed" and len(d["loss"]) == 31 and d["flow"]["checked"] >= 1
    assert np.allclose(np.array(d["network"]["weights"][0]), t.network.weights[0])
    ev = json.loads(json.dumps(saddle_events(t).to_dict()))
    assert "activation_order" in ev and "plateaus" in ev


def test_bad_training_settings_are_one_error_not_an_endless_run():
    """steps=2.5 never equals the loop's integer step (it ran until killed); negative
    noise, weight decay or momentum and a NaN time limit had no effect silently."""
    X, y = np.eye(3), np.ones(3)
    bad = [dict(steps=2.5), dict(steps="5"), dict(every=0), dict(noise=-1.0), dict(weight_decay=-1.0),
           dict(momentum=-1.0, optimizer="sgd"), dict(time_limit=float("nan")), dict(lr=float("inf"))]
    for kw in bad:
        with pytest.raises(DynamicsError):
            train(mlp([3, 4, 1]), X, y, record=[], device="cpu", **kw)


def test_a_time_limited_sgd_run_records_the_full_data_objective():
    """The record made when the time limit stops an SGD run holds the full-data
    objective like every other record (it held the last minibatch's loss)."""
    import torch

    rng = np.random.default_rng(0)
    X = rng.normal(size=(64, 3))
    y = np.sin(X[:, 0])
    t = train(mlp([3, 8, 1]), X, y, optimizer="sgd", lr=0.01, batch_size=4, steps=10**7, every=10**6,
              time_limit=0.3, record=["params"], device="cpu")
    assert t.status == "time_limit"
    model = t.model
    with torch.no_grad():
        dt = next(model.parameters()).dtype
        full = float(0.5 * ((model(torch.as_tensor(X, dtype=dt)).reshape(-1).double()
                             - torch.as_tensor(y)) ** 2).mean())
    assert t.recorded_loss[-1] == pytest.approx(full, rel=1e-5)


def test_more_bad_arguments_are_one_clear_error_each():
    # each raised a raw TypeError (stop=3 only at the first record, after training began),
    # accepted lr=True as 1.0, or ignored momentum without a word
    from relulab.dynamics import fit_multistart, kernel_ridge, random_ntk_network
    from relulab.dynamics.kernels import KernelError

    X, y = np.eye(3), np.array([1.0, 2.0, 3.0])
    cases = [
        (lambda: train(mlp([3, 2, 1]), X, y, stop=3, steps=2), DynamicsError, "stop=3: need a function"),
        (lambda: train(mlp([3, 2, 1]), X, y, lr=True, steps=2), DynamicsError, "lr=True: need a positive"),
        (lambda: train(mlp([3, 2, 1]), X, y, lr="0.1", steps=2), DynamicsError, "lr='0.1': need a positive"),
        (lambda: train(mlp([3, 2, 1]), X, y, momentum=0.9, optimizer="gd", steps=2), DynamicsError,
         "momentum applies to optimizer='sgd' only"),
        (lambda: kernel_ridge(np.eye(2), np.ones(2), np.eye(2), ridge="a"), KernelError, "ridge: expected"),
        (lambda: fit_multistart(X, y, depth=1, width=2, time_limit="5"), DynamicsError, "time_limit must be > 0"),
        (lambda: fit_multistart(X, y, depth=1, width=2, tol="a"), DynamicsError, "tol must be a finite number"),
        (lambda: random_ntk_network(3, 2.5), KernelError, "must be integers >= 1"),
    ]
    for call, err, msg in cases:
        with pytest.raises(err, match=re.escape(msg)):
            call()


@pytest.mark.parametrize("n", [108, 130])
def test_linear_dichotomies_past_200000_subsets_is_still_decided_exactly(n):
    # a triple 1e-12 off collinear among n planar points: C(n, 3) > 200,000, where the
    # exact check used to stop and the float enumeration missed two cells
    rng = np.random.default_rng(3)
    X = np.r_[[[0.0, 3.0], [1.0, 3.0 + 1e-12], [2.0, 3.0]], rng.normal(size=(n - 3, 2)) * 10]
    assert linear_dichotomies(X) == cover_count(n, 3)


def test_linear_dichotomies_refuses_what_it_cannot_certify(monkeypatch):
    import relulab.dynamics.dichotomies as dich
    from relulab.errors import UncertifiedCount

    monkeypatch.setattr(dich, "MINOR_CHECK_MAX", 10)
    X = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises(UncertifiedCount, match="subsets"):
        linear_dichotomies(X)


def test_linear_dichotomies_near_ties_are_refused_without_a_whole_space_detour():
    # one collinear triple and one 1e-10 off collinear among 110 planar points: the cell
    # count on the box has near ties, and the whole-space count it then tried (one LP per
    # facet of a central arrangement, which the box already holds) ran for minutes
    from relulab.errors import UncertifiedCount

    rng = np.random.default_rng(1)
    X = np.r_[[[0, 0], [1, 1], [2, 2]], [[0, 3], [1, 3 + 1e-10], [2, 3]], rng.normal(size=(104, 2)) * 10]
    with pytest.raises(UncertifiedCount, match="too close to call"):
        linear_dichotomies(X)


def test_linear_dichotomies_time_limit_refuses_or_counts_exactly():
    from relulab.errors import RelulabError, UncertifiedCount

    rng = np.random.default_rng(2)
    # degenerate (collinear triples), so neither Cover's count nor Whitney's formula applies
    X = np.r_[[[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [0.0, 5.0], [1.0, 5.0], [2.0, 5.0]],
              rng.integers(-50, 50, size=(60, 2)).astype(float)]
    want = linear_dichotomies(X)
    assert linear_dichotomies(X, time_limit=600) == want
    with pytest.raises(UncertifiedCount, match="time limit ran out"):
        linear_dichotomies(X, time_limit=1e-9)  # tol: a limit that has passed at the first check
    with pytest.raises(RelulabError, match="time_limit must be a positive number"):
        linear_dichotomies(X, time_limit=0)


@pytest.mark.parametrize("rel", [1e-9, 1e-11])
def test_multistart_does_not_call_a_poor_fit_of_nearly_constant_targets_interpolated(rel):
    from relulab.dynamics import fit_multistart

    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 2))
    noise = rng.normal(size=12)
    y = 1.0 + rel * noise
    fit = fit_multistart(X, y, depth=1, width=1, restarts=8, seed=0)
    explained = 1 - np.mean((fit.network(X)[:, 0] - y) ** 2) / np.var(y)
    assert fit.status != "interpolated" or explained > 0.99


def test_the_record_a_time_limit_forces_does_not_count_segment_regions():
    import warnings

    from relulab.dynamics import RegionCount, mlp, train

    X = np.random.default_rng(0).normal(size=(30, 2))
    m = mlp([2, 64, 64, 1], seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = train(m, X, X[:, 0], steps=10**6, every=10**6, time_limit=0.3,
                  record=[RegionCount(segment=([-10.0, -10.0], [10.0, 10.0]))])
    assert t.status == "time_limit"
    counts = t.records["regions"]
    assert counts[0] >= 1 and np.isnan(counts[-1])   # the step-0 count, none after the limit


@pytest.mark.parametrize("call, match", [
    (lambda: __import__("relulab.dynamics", fromlist=["KernelRidge"]).KernelRidge(
        kernel=lambda A, B: np.full((len(A), len(B)), np.nan)).fit(np.eye(2), [1, 2]), "Gram matrix"),
    (lambda: __import__("relulab.dynamics", fromlist=["KernelRidge"]).KernelRidge().fit(np.eye(2), ["a", "b"]),
     "y: expected numbers"),
    (lambda: __import__("relulab.dynamics", fromlist=["ternary_patterns"]).ternary_patterns([[1, 2], [1]], [[1.0]]),
     "ternary_patterns: the directions"),
    (lambda: __import__("relulab.dynamics", fromlist=["effective_width"]).effective_width([["a", "b"]]),
     "effective_width: V must be"),
    (lambda: __import__("relulab.dynamics", fromlist=["effective_width"]).effective_width(np.ones((2, 2, 2))),
     "one row per neuron"),
    (lambda: __import__("relulab.dynamics", fromlist=["monte_carlo_ntk"]).monte_carlo_ntk(
        np.eye(2), width=4, keep_kernels="no"), "keep_kernels"),
])
def test_dynamics_bad_arguments_get_one_error(call, match):
    from relulab.errors import RelulabError

    with pytest.raises(RelulabError, match=match):
        call()
