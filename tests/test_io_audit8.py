"""Fixes from the eighth audit of model exchange: external data of any dense tensor (a
Constant's too) is read next to the model, not in the working directory (a sparse
tensor's is refused); a model that declares no opset is refused; a constant cast to an
8-bit float saturates as ONNX defines (numpy gave NaN)."""

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


def _float8_model(to: int, saturate: int | None) -> onnx.ModelProto:
    Wf = np.array([[1000.0, 0.3], [-1e6, 2.0]], dtype=np.float32)
    kw = {} if saturate is None else {"saturate": saturate}
    nodes = [H.make_node("Constant", [], ["w"], value=NH.from_array(Wf, "w")),
             H.make_node("Cast", ["w"], ["w8"], to=to, **kw),
             H.make_node("Cast", ["w8"], ["wf"], to=T.FLOAT),
             H.make_node("MatMul", ["x", "wf"], ["z"]), H.make_node("Relu", ["z"], ["y"])]
    g = H.make_graph(nodes, "g", [H.make_tensor_value_info("x", T.FLOAT, [1, 2])],
                     [H.make_tensor_value_info("y", T.FLOAT, [1, 2])])
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 21)])
    m.ir_version = 10
    return m


@pytest.mark.parametrize("to", [T.FLOAT8E4M3FN, T.FLOAT8E5M2, T.FLOAT8E4M3FNUZ, T.FLOAT8E5M2FNUZ])
@pytest.mark.parametrize("saturate", [None, 1])
def test_a_constant_cast_to_float8_saturates_as_onnxruntime_does(tmp_path, to, saturate):
    """ONNX's Cast to an 8-bit float clamps to the type's largest finite value by default;
    numpy's cast gave NaN (E4M3) or inf (E5M2), and the model was refused as having
    NaN weights.  Independent check: onnxruntime, by both readers."""
    from relulab.crown import BoundGraph

    path = tmp_path / "f8.onnx"
    onnx.save(_float8_model(to, saturate), str(path))
    X = np.random.default_rng(1).standard_normal((20, 2)).astype(np.float32)
    sess = ort.InferenceSession(str(path))
    want = np.vstack([sess.run(None, {"x": x[None]})[0] for x in X])
    got = load_model(path).forward(X.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-3)
    got_graph = BoundGraph.from_onnx(str(path)).forward(X.astype(np.float64)).reshape(want.shape)
    np.testing.assert_allclose(got_graph, want, rtol=1e-6, atol=1e-3)


def test_a_constant_cast_without_saturation_keeps_the_models_nan_and_is_refused(tmp_path):
    path = tmp_path / "f8.onnx"
    onnx.save(_float8_model(T.FLOAT8E4M3FN, 0), str(path))
    with pytest.raises(FormatError, match="NaN or infinite"):
        load_model(path)


def test_a_constant_cast_to_a_4_bit_float_is_refused_by_name():
    from relulab.io.onnx import cast_constant

    with pytest.raises(FormatError, match="FLOAT4E2M1"):
        cast_constant(np.array([1.0]), T.FLOAT4E2M1, True, "node 'c'")


@pytest.mark.parametrize("to", [T.FLOAT8E4M3FN, T.FLOAT8E5M2, T.FLOAT8E4M3FNUZ, T.FLOAT8E5M2FNUZ])
def test_a_saturating_float8_cast_of_an_infinity_is_the_largest_value_as_onnx_reference_says(to):
    """(A first version gave NaN for the FNUZ types; the ONNX table says FLT_MAX.)"""
    from onnx.reference import ReferenceEvaluator

    from relulab.io.onnx import cast_constant

    a = np.array([np.inf, -np.inf, 1e300, 3.0], dtype=np.float32)
    g = H.make_graph([H.make_node("Cast", ["a"], ["b"], to=to), H.make_node("Cast", ["b"], ["c"], to=T.FLOAT)],
                     "g", [H.make_tensor_value_info("a", T.FLOAT, [4])], [H.make_tensor_value_info("c", T.FLOAT, [4])])
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 21)])
    with np.errstate(over="ignore"):
        want = ReferenceEvaluator(m).run(None, {"a": a})[0].astype(np.float64)
    np.testing.assert_array_equal(cast_constant(a, to, True, "c"), want)
