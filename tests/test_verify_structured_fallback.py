"""verify reads every ONNX model relulab reads: operators the structured bounder lacks
(MaxPool with padding or ceil_mode, circular padding's Slice) fall back to the dense
network (they used to end with 'MaxPool with padding is not supported')."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from relulab import Box  # noqa: E402
from relulab.spec import OutputConstraint, Property, Specification  # noqa: E402
from relulab.verify import load_for_verify, verify  # noqa: E402

MODELS = {
    "maxpool_padding": lambda nn: nn.Sequential(nn.Conv2d(1, 2, 2), nn.ReLU(), nn.MaxPool2d(3, stride=2, padding=1),
                                                nn.Flatten(), nn.Linear(8, 1)),
    "avgpool_ceil": lambda nn: nn.Sequential(nn.Conv2d(1, 2, 2), nn.ReLU(), nn.AvgPool2d(2, stride=2, ceil_mode=True),
                                             nn.Flatten(), nn.Linear(8, 1)),
    "conv_circular": lambda nn: nn.Sequential(nn.Conv2d(1, 2, 3, padding=1, padding_mode="circular"), nn.ReLU(),
                                              nn.Flatten(), nn.Linear(50, 1)),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_verify_falls_back_to_the_dense_network(name, tmp_path):
    torch.manual_seed(0)
    m = MODELS[name](torch.nn).eval()
    path = tmp_path / f"{name}.onnx"
    torch.onnx.export(m, torch.zeros(1, 1, 5, 5), str(path), input_names=["x"], output_names=["y"],
                      opset_version=13, dynamo=False, dynamic_axes={"x": {0: "n"}, "y": {0: "n"}})
    net = load_for_verify(str(path))
    rng = np.random.default_rng(0)
    lo, hi = np.zeros(25), np.full(25, 0.1)
    X = rng.uniform(lo, hi, size=(4000, 25)).astype(np.float32)
    sess = ort.InferenceSession(str(path))
    y = sess.run(None, {"x": X.reshape(-1, 1, 5, 5)})[0][:, 0]
    top = float(y.max())
    box = Box(lo, hi)
    # above every sampled output by a wide margin vs below the largest: holds / violated
    for t, allowed in ((top + 1.0, {"holds", "unknown"}), (top - 1e-3, {"violated", "unknown"})):
        prop = Property([Specification(box, [OutputConstraint(np.array([[-1.0]]), np.array([-t]))])])
        r = verify(net, prop, timeout=20)
        assert r.status in allowed, (name, t, r.status)
        if r.status == "violated":
            x = np.asarray(r.counterexample, np.float32).reshape(1, 1, 5, 5)
            assert np.all(r.counterexample >= lo) and np.all(r.counterexample <= hi)
            assert sess.run(None, {"x": x})[0][0, 0] >= t - 1e-5


def test_a_model_neither_reader_takes_is_refused_naming_the_file(tmp_path):
    # the structured reader's error named the node but not the model file
    from onnx import helper, numpy_helper

    from relulab.errors import FormatError

    W = np.full((2, 1, 2, 2), np.nan, np.float32)
    g = helper.make_graph([helper.make_node("Conv", ["x", "W"], ["y"], name="c")], "g",
                          [helper.make_tensor_value_info("x", 1, [1, 1, 3, 3])],
                          [helper.make_tensor_value_info("y", 1, [1, 2, 2, 2])], [numpy_helper.from_array(W, "W")])
    path = tmp_path / "nan_conv.onnx"
    path.write_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
    with pytest.raises(FormatError, match=f"^{path}: node 'c' \\(Conv\\)"):
        load_for_verify(str(path))


def test_a_structured_model_is_lowered_once_per_verify(monkeypatch):
    # method="auto" lowered it to choose the method, and each run of the portfolio
    # (input splitting, then ReLU splitting) lowered it again
    from relulab import Network
    from relulab.crown import BoundGraph

    rng = np.random.default_rng(0)
    net = Network([rng.normal(size=(6, 12)), rng.normal(size=(1, 6))], [rng.normal(size=6), np.zeros(1)])
    bg = BoundGraph.from_network(net)
    calls = []
    real = BoundGraph.to_network
    monkeypatch.setattr(BoundGraph, "to_network", lambda self: calls.append(1) or real(self))
    lo, hi = -np.ones(12), np.ones(12)
    top = float(np.max(net(rng.uniform(lo, hi, size=(20000, 12)))))
    # y >= top + 100 cannot happen: holds, decided by the portfolio (12 inputs)
    p = Property([Specification(Box(lo, hi), [OutputConstraint(np.array([[-1.0]]), np.array([-(top + 100.0)]))])])
    r = verify(bg, p, timeout=30)
    assert r.status == "holds" and len(calls) == 1, (r, calls)
