"""ONNX models that are invalid, from old opsets, or that onnxruntime can only run in
float32 are refused or still cross-checked, never read as another function (from an
audit, each against onnxruntime)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from relulab.crown import BoundGraph  # noqa: E402
from relulab.errors import FormatError  # noqa: E402
from relulab.io.onnx import crosscheck_onnxruntime, onnx_to_network  # noqa: E402
from relulab.io.vnnlib import parse_vnnlib  # noqa: E402

F, D = TensorProto.FLOAT, TensorProto.DOUBLE


def _model(nodes, x_shape, inits=(), opset=17, dtype=F):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", dtype, x_shape)],
                          [helper.make_tensor_value_info("y", dtype, None)], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8 if opset >= 7 else 3
    return m


def test_old_opsets_are_refused_by_both_readers():
    # Add-6 with broadcast=1, axis=1 lines b up with axis 1; it was read with numpy's
    # suffix broadcasting, and onnxruntime (no opset-6 kernel) could not catch it
    b = numpy_helper.from_array(np.array([10.0, 20.0, 30.0], np.float32), "b")
    m = _model([helper.make_node("Add", ["x", "b"], ["a"], broadcast=1, axis=1),
                helper.make_node("Relu", ["a"], ["y"])], [1, 3, 3], [b], opset=6)
    with pytest.raises(FormatError, match="ONNX opset 6 is not supported"):
        onnx_to_network(m)
    with pytest.raises(Exception, match="ONNX opset 6 is not supported"):
        BoundGraph.from_onnx(m)


@pytest.mark.parametrize("case", ["gemm_c", "conv_kernel_shape", "squeeze13_axes_attr"])
def test_invalid_models_are_refused_not_read_otherwise(case):
    r = np.random.default_rng(0)
    if case == "gemm_c":        # C (4, 1) under a (1, 4) product: was a 4 x 4 outer sum
        m = _model([helper.make_node("Gemm", ["x", "W", "C"], ["y"])], [1, 3],
                   [numpy_helper.from_array(r.standard_normal((3, 4)).astype(np.float32), "W"),
                    numpy_helper.from_array(r.standard_normal((4, 1)).astype(np.float32), "C")])
        match = "does not broadcast"
    elif case == "conv_kernel_shape":
        m = _model([helper.make_node("Conv", ["x", "W"], ["y"], kernel_shape=[2, 2])], [1, 1, 5, 5],
                   [numpy_helper.from_array(r.standard_normal((2, 1, 3, 3)).astype(np.float32), "W")])
        match = "kernel_shape"
    else:                       # opset 13 takes axes as an input; the attribute was ignored
        m = _model([helper.make_node("Squeeze", ["x"], ["y"], axes=[0])], [1, 3])
        match = "axes"
    with pytest.raises(FormatError, match=match):
        onnx_to_network(m)


def test_float64_convolutions_are_cross_checked_through_float32():
    # onnxruntime has no float64 Conv kernel: the check compared nothing and passed a
    # reading that is off by 100
    r = np.random.default_rng(0)
    m = _model([helper.make_node("Conv", ["x", "W"], ["c"]), helper.make_node("Relu", ["c"], ["y"])],
               [1, 1, 5, 5], [numpy_helper.from_array(r.standard_normal((2, 1, 3, 3)), "W")], dtype=D)
    net = onnx_to_network(m)
    crosscheck_onnxruntime(m, net, "conv64")                      # the right reading passes
    with pytest.raises(FormatError, match="disagrees with onnxruntime"):
        crosscheck_onnxruntime(m, lambda X: net(X) + 100.0, "conv64")


def test_a_float32_model_that_overflows_is_refused():
    # x * (1e30 * 1e30): inf in float32 (onnxruntime), folded to a finite 1e60 in float64
    z = numpy_helper.from_array(np.full(3, 1e30, np.float32), "z")
    m = _model([helper.make_node("Mul", ["z", "z"], ["q"]), helper.make_node("Mul", ["x", "q"], ["a"]),
                helper.make_node("Relu", ["a"], ["y"])], [1, 3], [z])
    net = onnx_to_network(m)
    with pytest.raises(FormatError, match="overflow"):
        crosscheck_onnxruntime(m, net, "overflow")


def test_a_vnnlib_disjunct_with_an_empty_box_is_false_not_an_error():
    text = """
    (declare-const X_0 Real)
    (declare-const Y_0 Real)
    (assert (or (and (>= X_0 0) (<= X_0 0.4)) (and (>= X_0 0.6) (<= X_0 1))))
    (assert (or (<= X_0 0.5) (<= Y_0 0)))
    """
    prop = parse_vnnlib(text)
    boxes = sorted((float(c.input_box.lo[0]), float(c.input_box.hi[0])) for c in prop.cases)
    assert boxes == [(0.0, 0.4), (0.6, 1.0)]
    # every disjunct empty: still an error naming the box
    with pytest.raises(Exception, match="empty input box"):
        parse_vnnlib("""
        (declare-const X_0 Real)
        (declare-const Y_0 Real)
        (assert (or (and (>= X_0 1) (<= X_0 0)) (and (>= X_0 3) (<= X_0 2))))
        (assert (<= Y_0 0))
        """)


def test_memory_budget_while_lowering_stays_a_memory_error(tmp_path):
    """A dense lowering beyond the memory budget is a ResourceLimitError (verify answers
    unknown (memory)); the per-node handler re-raised it as a FormatError naming the node."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from relulab.io import load_model
    from relulab.limits import ResourceLimitError, memory_limit

    n = 256
    D = TensorProto.DOUBLE

    def T(a, name):
        return numpy_helper.from_array(np.asarray(a, dtype=np.float64), name)

    nodes = [helper.make_node("Sub", ["x", "c"], ["a"]), helper.make_node("Relu", ["a"], ["p"]),
             helper.make_node("Neg", ["a"], ["na"]), helper.make_node("Relu", ["na"], ["q"]),
             helper.make_node("Concat", ["p", "q"], ["pq"], axis=1), helper.make_node("Flatten", ["pq"], ["f"]),
             helper.make_node("Gemm", ["f", "Wu", "bu"], ["u"], transB=1), helper.make_node("Relu", ["u"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", D, [1, 1, 16, 16])],
                          [helper.make_tensor_value_info("y", D, [1, 1])],
                          [T(np.full((1, 1, 16, 16), 0.5), "c"), T(-np.ones((1, 2 * n)), "Wu"), T([20.0], "bu")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    path = tmp_path / "wide.onnx"
    onnx.save(m, str(path))
    assert load_model(path).input_dim == n           # fine under the default budget
    with memory_limit(1 << 20), pytest.raises(ResourceLimitError, match="dense hidden layer"):
        load_model(path)
