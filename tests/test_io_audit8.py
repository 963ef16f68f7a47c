"""Fixes from the eighth audit of model exchange: external data of any dense tensor (a
Constant's too) is read next to the model, not in the working directory (a sparse
tensor's is refused); a model that declares no opset is refused."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto as T  # noqa: E402
from onnx import helper as H  # noqa: E402
from onnx import numpy_helper as NH  # noqa: E402

from relulab.errors import FormatError  # noqa: E402
from relulab.io import load_model  # noqa: E402

W = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])


def _constant_model() -> onnx.ModelProto:
    nodes = [H.make_node("Constant", [], ["Wc"], value=NH.from_array(W, "Wc")),
             H.make_node("MatMul", ["x", "Wc"], ["z"]), H.make_node("Relu", ["z"], ["y"])]
    g = H.make_graph(nodes, "g", [H.make_tensor_value_info("x", T.DOUBLE, [1, 3])],
                     [H.make_tensor_value_info("y", T.DOUBLE, [1, 2])])
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_a_constants_external_data_is_read_next_to_the_model(tmp_path, monkeypatch):
    """Run from a folder holding an unrelated w.bin, the model read relu(-W x) = 0 (and
    verify said "holds"); from one without it, a raw onnx ValidationError."""
    model_dir, elsewhere = tmp_path / "model", tmp_path / "cwd"
    model_dir.mkdir()
    elsewhere.mkdir()
    onnx.save_model(_constant_model(), str(model_dir / "m.onnx"), save_as_external_data=True,
                    location="w.bin", size_threshold=0, convert_attribute=True)
    (elsewhere / "w.bin").write_bytes((-W).tobytes())
    monkeypatch.chdir(elsewhere)
    net = load_model(str(model_dir / "m.onnx"))
    X = np.random.default_rng(0).uniform(-2, 2, size=(16, 3))
    want = np.concatenate([ort.InferenceSession(str(model_dir / "m.onnx")).run(None, {"x": x[None]})[0]
                           for x in X])
    assert np.allclose(net(X), want, rtol=1e-12, atol=1e-12)
    pytest.importorskip("torch")
    from relulab.verify import load_for_verify

    graph = load_for_verify(str(model_dir / "m.onnx"), structured=True)   # the reader of conv models
    assert np.allclose(np.asarray(graph.forward(X)), want, rtol=1e-12, atol=1e-12)


def test_a_model_declaring_no_opset_is_refused(tmp_path):
    """An IR-version-2 file without opset_import means opset 1: an old-style Add bias
    with broadcast=1, axis=1 was read along the last axis, as opset 17."""
    m = _constant_model()
    del m.opset_import[:]
    m.ir_version = 2
    path = tmp_path / "old.onnx"
    path.write_bytes(m.SerializeToString())
    with pytest.raises(FormatError, match="declares no ONNX opset"):
        load_model(str(path))
