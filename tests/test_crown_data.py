"""relulab.crown on the real models of ../shared/data (skipped when absent): ACAS Xu and the
four VNN-COMP 2022 benchmarks.  Forward passes against onnxruntime / relulab.io, CROWN
against relulab.bounds on ACAS Xu, soundness against samples of the VNN-LIB boxes."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")

from relulab.bounds import crown_batch, float_layers, output_rounding  # noqa: E402
from relulab.crown import BoundGraph, bound  # noqa: E402
from relulab.io import load_model  # noqa: E402
from relulab.io.vnnlib import load_vnnlib  # noqa: E402

VNN = {
    "collins_rul_cnn": ("NN_rul_small_window_20.onnx", "if_then_5levels_w20.vnnlib"),
    "rl_benchmarks": ("cartpole.onnx", None),
    "reach_prob_density": ("robot.onnx", None),
    "sri_resnet_a": ("resnet_3b2_bn_mixup_adv_4.0_bs128_lr-1.onnx", "cifar10_spec_idx_1551_eps_0.00198.vnnlib"),
}


def test_acasxu_graph_matches_dense_network_and_crown(acasxu_dir):
    for net_id, prop in (("1_1", 1), ("2_3", 3)):
        path = acasxu_dir / "onnx" / f"ACASXU_run2a_{net_id}_batch_2000.onnx"
        bg = BoundGraph.from_onnx(path)
        net = load_model(path)
        box = load_vnnlib(acasxu_dir / "vnnlib" / f"prop_{prop}.vnnlib").cases[0].input_box
        X = np.random.default_rng(0).uniform(box.lo, box.hi, (500, 5))
        assert np.abs(bg.forward(X) - net(X)).max() < 1e-9
        gb = bound(bg, box.lo, box.hi)
        Ws, bs, skip = float_layers(net)
        _, low = crown_batch(Ws, bs, box.lo[None], box.hi[None], skip=skip)
        # the same CROWN bound; each engine moves it outward by its own bound of the
        # rounding (terms' sizes times the operations behind them), at most the numpy one
        C = np.concatenate([np.eye(5), -np.eye(5)])
        R = output_rounding(Ws, bs, skip, box.lo[None], box.hi[None], C, np.zeros(10))[0]
        assert np.all(np.abs(gb.lower[0] - low[0, :5]) <= R[:5] + 1e-9)
        assert np.all(np.abs(gb.upper[0] + low[0, 5:]) <= R[5:] + 1e-9)


@pytest.mark.parametrize("bench", sorted(VNN))
def test_vnncomp_models_forward_and_sound(shared_data, bench):
    d = shared_data / "vnncomp2022" / bench
    if not d.is_dir():
        pytest.skip(f"{d} not found")
    model, spec = VNN[bench]
    bg = BoundGraph.from_onnx(d / "onnx" / model)
    rng = np.random.default_rng(1)
    sess = ort.InferenceSession(str(d / "onnx" / model))
    name = sess.get_inputs()[0].name
    X = rng.uniform(0, 1, (3, *bg.input_shape)).astype(np.float32)
    ref = np.concatenate([sess.run(None, {name: X[i : i + 1]})[0].reshape(1, -1) for i in range(3)])
    assert np.abs(bg.forward(X) - ref).max() <= 1e-5 * max(1.0, np.abs(ref).max())
    if spec is not None:
        box = load_vnnlib(d / "vnnlib" / spec).cases[0].input_box
        lo, hi = box.lo, box.hi
    else:
        c = rng.uniform(-0.5, 0.5, bg.input_dim)
        lo, hi = c - 0.05, c + 0.05
    # CROWN on the ResNet takes seconds: intervals only there (the benchmark times CROWN)
    method = "ibp" if bench == "sri_resnet_a" else "crown"
    gb = bound(bg, lo, hi, method=method)
    S = rng.uniform(lo, hi, (1000, bg.input_dim))
    Y = bg.forward(S)
    assert np.all(Y.min(0) >= gb.lower[0] - 1e-7) and np.all(Y.max(0) <= gb.upper[0] + 1e-7)
