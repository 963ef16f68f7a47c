"""Back-substitution sums a node's coefficients over its consumers and the constant over
every node it passes: the rounding radius counts those additions (a node fed into 1,024
branches summed back by a tree of Adds got CROWN bounds of [-12800, 12800] for 65408)."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _fan_model(tmp_path, K: int, bias: float = 0.0):
    """X feeds K Mul nodes (1, 2^-54, ..., 2^-54, -1), summed by a balanced tree of Adds,
    then (plus ``bias``) Relu and times 2^60: exactly 2^60 relu((K - 2) 2^-54 x + bias)."""
    from onnx import TensorProto as TP
    from onnx import helper as oh
    from onnx import numpy_helper as nh

    h = 2.0 ** -54
    s = [1.0] + [h] * (K - 2) + [-1.0]
    nodes, names = [], []
    inits = [nh.from_array(np.array([[2.0 ** 60]]), "big"), nh.from_array(np.array([[bias]]), "bias")]
    for i in range(K):
        inits.append(nh.from_array(np.array([[s[i]]]), f"c{i}"))
        nodes.append(oh.make_node("Mul", ["X", f"c{i}"], [f"m{i}"]))
        names.append(f"m{i}")
    n = 0
    while len(names) > 1:
        nxt = []
        for i in range(0, len(names), 2):
            nodes.append(oh.make_node("Add", [names[i], names[i + 1]], [f"s{n}"]))
            nxt.append(f"s{n}")
            n += 1
        names = nxt
    nodes += [oh.make_node("Add", [names[0], "bias"], ["z"]), oh.make_node("Relu", ["z"], ["r"]),
              oh.make_node("Mul", ["r", "big"], ["Y"])]
    g = oh.make_graph(nodes, "fan", [oh.make_tensor_value_info("X", TP.DOUBLE, [1, 1])],
                      [oh.make_tensor_value_info("Y", TP.DOUBLE, [1, 1])], inits)
    m = oh.make_model(g, opset_imports=[oh.make_opsetid("", 13)])
    m.ir_version = 8
    path = tmp_path / f"fan{K}.onnx"
    onnx.save(m, path)

    def exact(x: float) -> F:
        z = sum(F(v) for v in s) * F(x) + F(bias)
        return F(2) ** 60 * max(z, F(0))

    return path, exact


@pytest.mark.parametrize("K, bias", [(1024, 0.0), (512, -2e-14), (256, 0.0)])
@pytest.mark.parametrize("method", ["ibp", "crown", "alpha"])
def test_bounds_of_a_wide_fan_out_hold_the_exact_and_the_float_values(tmp_path, K, bias, method):
    from relulab.crown import BoundGraph, bound

    path, exact = _fan_model(tmp_path, K, bias)
    bg = BoundGraph.from_onnx(str(path))
    sess = ort.InferenceSession(str(path))
    for lo, hi in ((1.0, 1.0), (0.5, 1.0)):
        gb = bound(bg, [[lo]], [[hi]], method=method)
        L, U = F(float(gb.lower[0, 0])), F(float(gb.upper[0, 0]))
        for x in np.linspace(lo, hi, 5):
            assert L <= exact(x) <= U
            assert L <= F(float(sess.run(None, {"X": np.array([[x]])})[0][0, 0])) <= U
