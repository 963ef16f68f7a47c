"""ONNX exchange: ACAS Xu against onnxruntime, conv graphs against torch and onnxruntime,
exact save/load round trips, and the errors on bad files."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")

from conftest import random_network  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from relulab import FormatError, Network  # noqa: E402
from relulab.errors import RelulabError  # noqa: E402
from relulab.io import load_model, save_model  # noqa: E402
from relulab.io.onnx import load_onnx, network_to_onnx, onnx_to_network, save_onnx  # noqa: E402

TOL = 1e-9


def _session(model) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def _rel_err(a: np.ndarray, b: np.ndarray) -> float:
    """Largest difference relative to the scale of the reference outputs (at least 1)."""
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def _to_float64_batched(model):
    """A copy of a float32 model with every float tensor DOUBLE (float32 -> float64 is
    exact) and a symbolic batch axis, so onnxruntime computes the same real function
    as the float32 model, in float64 arithmetic."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    for t in g.initializer:
        if t.data_type == TensorProto.FLOAT:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float64), t.name))
    for vi in [*g.input, *g.output, *g.value_info]:
        tt = vi.type.tensor_type
        if tt.elem_type == TensorProto.FLOAT:
            tt.elem_type = TensorProto.DOUBLE
    inits = {t.name for t in g.initializer}
    for vi in [*g.input, *g.output]:
        if vi.name not in inits and vi.type.tensor_type.shape.dim:
            vi.type.tensor_type.shape.dim[0].dim_param = "N"
    del g.value_info[:]
    return m


def _batched(model):
    m = onnx.ModelProto()
    m.CopyFrom(model)
    inits = {t.name for t in m.graph.initializer}
    for vi in [*m.graph.input, *m.graph.output]:
        if vi.name not in inits:
            vi.type.tensor_type.shape.dim[0].dim_param = "N"
    return m


_BOUND = re.compile(r"\(assert\s+\((<=|>=)\s+X_(\d+)\s+([-+0-9.eE]+)\)\)")


def _vnnlib_box(path: Path, dim: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """The input box of an ACAS Xu property (its `(assert (<= X_i c))` lines)."""
    lo, hi = np.full(dim, -np.inf), np.full(dim, np.inf)
    for op, i, c in _BOUND.findall(path.read_text()):
        if op == "<=":
            hi[int(i)] = min(hi[int(i)], float(c))
        else:
            lo[int(i)] = max(lo[int(i)], float(c))
    assert np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(lo <= hi)
    return lo, hi


# ------------------------------------------------------------------------ ACAS Xu
@pytest.fixture(scope="module")
def acas_points(acasxu_dir: Path) -> np.ndarray:
    rng = np.random.default_rng(0)
    pts = []
    for k in range(1, 5):
        lo, hi = _vnnlib_box(acasxu_dir / "vnnlib" / f"prop_{k}.vnnlib")
        pts.append(rng.uniform(lo, hi, size=(250, 5)))
    return np.concatenate(pts)


def test_acasxu_all_45_match_onnxruntime(acasxu_dir: Path, acas_points: np.ndarray) -> None:
    """Each ACAS Xu network, loaded by relulab, agrees with onnxruntime on 1,000 points
    drawn from the input boxes of properties 1-4 (250 each).

    What makes the 1e-9 honest: the models are float32, and onnxruntime evaluates them in
    float32, which carries ~1e-7 relative rounding error of its own.  relulab widens the
    float32 weights exactly to float64, so it computes the same real-valued function as
    the model in float64.  The reference is therefore onnxruntime on a float64 copy of the
    same model (every float32 tensor widened exactly): both sides evaluate one function
    in float64, and they must agree to 1e-9 relative, entry by entry (atol 1e-12 only
    for outputs near 0; observed: identical).  Against the
    float32 model itself we check 1e-5: the float32 rounding, not a loading difference.
    """
    files = sorted((acasxu_dir / "onnx").glob("ACASXU_run2a_*_batch_2000.onnx"))
    assert len(files) == 45
    X = acas_points
    X4 = X.reshape(-1, 1, 1, 5)
    for f in files:
        net = load_onnx(f)
        assert (net.input_dim, net.widths, net.output_dim) == (5, (50,) * 6, 5)
        ours = net(X)
        model = onnx.load(str(f))
        name = next(i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer})
        ref64 = _session(_to_float64_batched(model)).run(None, {name: X4})[0]
        np.testing.assert_allclose(ours, ref64.reshape(ours.shape), rtol=TOL, atol=1e-12, err_msg=f.name)
        ref32 = _session(_batched(model)).run(None, {name: X4.astype(np.float32)})[0]
        assert _rel_err(ours, ref32.reshape(ours.shape).astype(np.float64)) <= 1e-5, f.name


def test_acasxu_through_load_model_and_round_trip(acasxu_dir: Path, tmp_path: Path) -> None:
    f = acasxu_dir / "onnx" / "ACASXU_run2a_1_1_batch_2000.onnx"
    net = load_model(f)
    assert net == load_onnx(f)
    save_model(net, tmp_path / "acas.onnx")
    assert load_onnx(tmp_path / "acas.onnx") == net
    save_model(net, tmp_path / "acas.npz")
    assert load_model(tmp_path / "acas.npz") == net


# ---------------------------------------------------------------- round trips
@pytest.mark.parametrize(
    "dims,skip",
    [([3, 1], False), ([4, 7, 2], False), ([5, 6, 6, 6, 3], False), ([2, 4, 3, 1], True), ([3, 2], True)],
)
def test_save_load_round_trip_exact(dims, skip, tmp_path: Path) -> None:
    rng = np.random.default_rng(len(dims) + 10 * skip)
    net = random_network(rng, dims, skip=skip)
    p = tmp_path / "n.onnx"
    save_onnx(net, p)
    back = load_onnx(p)
    if skip and len(dims) == 2:
        # no hidden layer: the skip is merged into the one affine layer (documented)
        assert back.skip is None and back.depth == 1
    else:
        assert back == net
    X = rng.normal(size=(200, dims[0]))
    y = _session(onnx.load(str(p))).run(None, {"input": X})[0]
    assert _rel_err(y, net(X)) <= 1e-12
    assert _rel_err(back(X), net(X)) <= 1e-12


def test_round_trip_of_exact_network_rounds_to_float(tmp_path: Path) -> None:
    from fractions import Fraction

    net = Network([[[Fraction(1, 3), Fraction(2)]], [[Fraction(-1, 2)]]], [[Fraction(0)], [Fraction(1, 7)]])
    save_onnx(net, tmp_path / "e.onnx")
    assert load_onnx(tmp_path / "e.onnx") == net.float()


def test_saved_model_is_valid_double_onnx(tmp_path: Path) -> None:
    net = random_network(np.random.default_rng(3), [3, 5, 2], skip=True)
    m = network_to_onnx(net)
    onnx.checker.check_model(m, full_check=True)
    assert {t.data_type for t in m.graph.initializer} == {TensorProto.DOUBLE}
    ops = [n.op_type for n in m.graph.node]
    assert set(ops) == {"Gemm", "Relu", "Add"}


# ------------------------------------------------- hand-built conv / pool graphs
def _f32(a: np.ndarray) -> np.ndarray:
    """float32-representable values, so the float32 ONNX model and the float64 torch
    module hold the very same numbers."""
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def _build_conv_model(rng: np.random.Generator):
    """A small CNN written directly as an ONNX graph (float32), with its torch twin in
    float64 holding the same numbers.  Exercises Sub/Div normalisation, Conv with pads,
    strides and groups, BatchNormalization, LeakyRelu, MaxPool, AveragePool, Flatten via
    Shape/Gather/Concat/Reshape, Gemm with transB and alpha/beta, MatMul + Add, Constant,
    Identity and a final Relu-free layer."""
    nn = torch.nn
    C, H, W = 2, 7, 6
    mean = _f32(rng.normal(size=(1, C, 1, 1)))
    std = _f32(rng.uniform(0.5, 2.0, size=(1, C, 1, 1)))
    k1 = _f32(rng.normal(size=(4, 1, 3, 3)))  # groups=2
    b1 = _f32(rng.normal(size=4))
    g, be, rm, rv = (_f32(rng.normal(size=4)), _f32(rng.normal(size=4)), _f32(rng.normal(size=4)),
                     _f32(rng.uniform(0.5, 2, size=4)))
    k2 = _f32(rng.normal(size=(3, 4, 2, 2)))
    b2 = _f32(rng.normal(size=3))
    # after conv1 (pad 1, stride 1): 4x7x6; maxpool 2 stride 2 pad (0,0,1,0): 4x4x3
    # conv2 2x2 stride 1: 3x3x2; avgpool 2 stride 1 count_include_pad=0: 3x2x1 -> 6
    G = _f32(rng.normal(size=(5, 6)))  # Gemm B with transB=1
    gc = _f32(rng.normal(size=5))
    M2 = _f32(rng.normal(size=(5, 3)))
    a2 = _f32(rng.normal(size=3))
    alpha, beta = 0.5, 2.0

    def t(a, name):
        return numpy_helper.from_array(np.asarray(a, dtype=np.float32), name)

    nodes = [
        helper.make_node("Constant", [], ["mean"], value=t(mean, "mean")),
        helper.make_node("Sub", ["x", "mean"], ["xs"], name="sub"),
        helper.make_node("Div", ["xs", "std"], ["xn"], name="div"),
        helper.make_node("Conv", ["xn", "k1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1], group=2),
        helper.make_node("BatchNormalization", ["c1", "g", "be", "rm", "rv"], ["n1"], name="bn1", epsilon=1e-3),
        helper.make_node("LeakyRelu", ["n1"], ["r1"], name="leaky", alpha=0.2),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="maxpool", kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 1, 0]),
        helper.make_node("Conv", ["p1", "k2", "b2"], ["c2"], name="conv2"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("AveragePool", ["r2"], ["p2"], name="avgpool", kernel_shape=[2, 2], strides=[1, 1]),
        helper.make_node("Identity", ["p2"], ["p2i"], name="ident"),
        helper.make_node("Shape", ["p2i"], ["shp"], name="shape"),
        helper.make_node("Gather", ["shp", "zero"], ["n0"], name="gather", axis=0),
        helper.make_node("Unsqueeze", ["n0", "ax0"], ["n0u"], name="unsq"),
        helper.make_node("Concat", ["n0u", "minus1"], ["newshape"], name="concat", axis=0),
        helper.make_node("Reshape", ["p2i", "newshape"], ["flat"], name="reshape"),
        helper.make_node("Gemm", ["flat", "G", "gc"], ["z3"], name="gemm", transB=1, alpha=alpha, beta=beta),
        helper.make_node("Relu", ["z3"], ["r3"], name="relu3"),
        helper.make_node("MatMul", ["r3", "M2"], ["z4"], name="matmul"),
        helper.make_node("Add", ["z4", "a2"], ["y"], name="add"),
    ]
    inits = [t(std, "std"), t(k1, "k1"), t(b1, "b1"), t(g, "g"), t(be, "be"), t(rm, "rm"), t(rv, "rv"),
             t(k2, "k2"), t(b2, "b2"), t(G, "G"), t(gc, "gc"), t(M2, "M2"), t(a2, "a2"),
             numpy_helper.from_array(np.array(0, dtype=np.int64), "zero"),
             numpy_helper.from_array(np.array([0], dtype=np.int64), "ax0"),
             numpy_helper.from_array(np.array([-1], dtype=np.int64), "minus1")]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", C, H, W])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)

    class Norm(nn.Module):
        def forward(self, x):
            return (x - torch.from_numpy(mean)) / torch.from_numpy(std)

    conv1 = nn.Conv2d(2, 4, 3, padding=1, groups=2)
    # ONNX float attributes are float32: the twin uses the same float32 values
    bn = nn.BatchNorm2d(4, eps=float(np.float32(1e-3)))
    conv2 = nn.Conv2d(4, 3, 2)
    lin1, lin2 = nn.Linear(6, 5), nn.Linear(5, 3)
    with torch.no_grad():
        for p, v in [(conv1.weight, k1), (conv1.bias, b1), (bn.weight, g), (bn.bias, be),
                     (bn.running_mean, rm), (bn.running_var, rv), (conv2.weight, k2), (conv2.bias, b2),
                     (lin1.weight, alpha * G), (lin1.bias, beta * gc), (lin2.weight, M2.T), (lin2.bias, a2)]:
            p.copy_(torch.from_numpy(np.asarray(v, dtype=np.float64)))
    # ONNX pads MaxPool with -inf: the twin pads explicitly with -inf
    twin = nn.Sequential(Norm(), conv1, bn, nn.LeakyReLU(float(np.float32(0.2))), nn.ConstantPad2d((0, 0, 0, 1), float("-inf")),
                         nn.MaxPool2d(2), conv2, nn.ReLU(), nn.AvgPool2d(2, stride=1), nn.Flatten(), lin1,
                         nn.ReLU(), lin2)
    return model, twin.double().eval(), (C, H, W)


def test_conv_graph_matches_torch_and_onnxruntime() -> None:
    rng = np.random.default_rng(1)
    model, twin, shape = _build_conv_model(rng)
    net = onnx_to_network(model)
    X = rng.normal(size=(300, int(np.prod(shape))))
    ours = net(X)
    ref32 = _session(model).run(None, {"x": X.reshape(-1, *shape).astype(np.float32)})[0]
    assert _rel_err(ours, ref32.astype(np.float64)) <= 1e-5
    # float64 reference: the same layers, same numbers, in torch
    ref = twin(torch.from_numpy(X.reshape(-1, *shape))).detach().numpy()
    assert _rel_err(ours, ref) <= TOL


def _single_op_model(nodes, inits, in_shape, opset=13, out_name="y"):
    out = onnx.ValueInfoProto()
    out.name = out_name  # type left for onnxruntime to infer
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
                              [out], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _arr(a, name, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(a, dtype=dtype), name)


@pytest.mark.parametrize(
    "case",
    ["leaky", "prelu", "clip", "clip_low", "pool_same", "pool_ceil", "avg_pad", "conv_same", "conv_dil",
     "global", "transpose_slice", "squeeze_concat", "pad_const", "mul_neg_sum", "opset9",
     "clip_inf", "clip_inverted", "pad_crop", "clip_far", "clip_far_low", "clip_f32max"],
)
def test_more_operators_match_onnxruntime(case: str) -> None:
    rng = np.random.default_rng(abs(hash(case)) % 2**32)
    shape = [1, 2, 5, 6]
    opset = 13
    if case == "leaky":
        nodes = [helper.make_node("LeakyRelu", ["x"], ["y"], alpha=0.3)]
        inits = []
    elif case == "prelu":
        nodes = [helper.make_node("PRelu", ["x", "s"], ["y"])]
        inits = [_arr(rng.normal(size=(2, 1, 1)), "s")]
    elif case == "clip":
        nodes = [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])]
        inits = [_arr(-0.5, "lo"), _arr(0.7, "hi")]
    elif case == "clip_low":
        nodes = [helper.make_node("Clip", ["x", "lo"], ["y"])]
        inits = [_arr(-0.5, "lo")]
    elif case == "clip_inf":  # an infinite bound is no bound
        nodes = [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])]
        inits = [_arr(-np.inf, "lo"), _arr(0.7, "hi")]
    elif case == "clip_far":  # lo + relu(x - lo) read 0 for every x with lo = -1e20
        nodes = [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])]
        inits = [_arr(-1e20, "lo"), _arr(1e20, "hi")]
    elif case == "clip_far_low":
        nodes = [helper.make_node("Clip", ["x", "lo"], ["y"])]
        inits = [_arr(-1e20, "lo")]
    elif case == "clip_f32max":  # float32's maximum: no bound
        nodes = [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])]
        inits = [_arr(np.finfo(np.float32).min, "lo"), _arr(0.7, "hi")]
    elif case == "clip_inverted":  # min > max: every output is max (Clip-13)
        nodes = [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])]
        inits = [_arr(0.5, "lo"), _arr(-0.25, "hi")]
    elif case == "pad_crop":  # negative pads crop
        nodes = [helper.make_node("Pad", ["x", "pads", "v"], ["y"], mode="constant")]
        inits = [_arr([0, 0, -1, 2, 0, -1, 0, -2], "pads", np.int64), _arr(0.25, "v")]
    elif case == "pool_same":
        nodes = [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")]
        inits = []
    elif case == "pool_ceil":
        nodes = [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 3], strides=[2, 2], ceil_mode=1, dilations=[1, 1])]
        inits = []
    elif case == "avg_pad":
        nodes = [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                  count_include_pad=1)]
        inits = []
    elif case == "conv_same":
        nodes = [helper.make_node("Conv", ["x", "k"], ["y"], auto_pad="SAME_LOWER", strides=[1, 2])]
        inits = [_arr(rng.normal(size=(3, 2, 2, 3)), "k")]
    elif case == "conv_dil":
        nodes = [helper.make_node("Conv", ["x", "k", "b"], ["y"], dilations=[2, 1], pads=[1, 0, 2, 1], strides=[2, 1],
                                  group=2)]
        inits = [_arr(rng.normal(size=(4, 1, 2, 3)), "k"), _arr(rng.normal(size=4), "b")]
    elif case == "global":
        nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("GlobalMaxPool", ["r"], ["m"]),
                 helper.make_node("GlobalAveragePool", ["x"], ["a"]), helper.make_node("Add", ["m", "a"], ["y"])]
        inits = []
    elif case == "transpose_slice":
        nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 3, 1, 2]),
                 helper.make_node("Slice", ["t", "st", "en", "ax", "sp"], ["y"])]
        inits = [_arr([1, 4], "st", np.int64), _arr([5, 0], "en", np.int64), _arr([1, 3], "ax", np.int64),
                 _arr([2, -1], "sp", np.int64)]
    elif case == "squeeze_concat":
        nodes = [helper.make_node("ReduceSum", ["c"], ["cs"], keepdims=0),  # constant folded
                 helper.make_node("Flatten", ["x"], ["f"], axis=2),
                 helper.make_node("Unsqueeze", ["f", "a0"], ["u"]),
                 helper.make_node("Squeeze", ["u", "a0"], ["s"]),
                 helper.make_node("Mul", ["s", "cs"], ["sm"]),
                 helper.make_node("Concat", ["s", "sm", "k"], ["y"], axis=1)]
        inits = [_arr(rng.normal(size=(1, 1, 30)), "c"), _arr([0], "a0", np.int64), _arr(rng.normal(size=(2, 5)), "k")]
    elif case == "pad_const":
        nodes = [helper.make_node("Pad", ["x", "pads", "v"], ["y"], mode="constant")]
        inits = [_arr([0, 0, 1, 2, 0, 1, 0, 1], "pads", np.int64), _arr(0.25, "v")]
    elif case == "mul_neg_sum":
        nodes = [helper.make_node("Mul", ["x", "m"], ["a"]), helper.make_node("Neg", ["x"], ["b"]),
                 helper.make_node("Relu", ["b"], ["c"]),
                 helper.make_node("Sum", ["c", "m", "c"], ["y"])]
        inits = [_arr(rng.normal(size=(6,)), "m")]
    else:  # opset 9 attribute forms of Unsqueeze/Squeeze/Slice, and Gemm transA
        opset = 9
        shape = [1, 6]
        nodes = [helper.make_node("Unsqueeze", ["x"], ["u"], axes=[0]),
                 helper.make_node("Squeeze", ["u"], ["s"], axes=[0]),
                 helper.make_node("Slice", ["s"], ["sl"], starts=[1], ends=[5], axes=[1]),
                 helper.make_node("Transpose", ["sl"], ["t"]),
                 helper.make_node("Gemm", ["t", "B", "C"], ["y"], transA=1, transB=0, alpha=1.5, beta=-0.5)]
        inits = [_arr(rng.normal(size=(4, 3)), "B"), _arr(rng.normal(size=(1, 3)), "C")]
    model = _single_op_model(nodes, inits, shape, opset)
    net = onnx_to_network(model)
    X = rng.normal(size=(64, int(np.prod(shape))))
    sess = _session(model)
    ref = np.stack([sess.run(None, {"x": x.reshape(shape).astype(np.float32)})[0].reshape(-1) for x in X])
    assert ref.shape == (64, net.output_dim)
    assert _rel_err(net(X.astype(np.float32).astype(np.float64)), ref.astype(np.float64)) <= 2e-6


@pytest.mark.parametrize("op", ["AveragePool", "MaxPool"])
def test_pool_attribute_grid_matches_onnxruntime(op: str) -> None:
    """Asymmetric pads, ceil_mode, count_include_pad and dilations (opset 19)."""
    rng = np.random.default_rng(7)
    grid = [
        dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1),
        dict(kernel_shape=[3, 2], strides=[2, 2], pads=[0, 1, 1, 0], ceil_mode=1, count_include_pad=0),
        dict(kernel_shape=[2, 2], strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=1, dilations=[2, 2]),
        dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1),
    ]
    for kw in grid:
        if op == "MaxPool":
            kw.pop("count_include_pad", None)
        model = _single_op_model([helper.make_node(op, ["x"], ["y"], **kw)], [], [1, 2, 6, 7], opset=19)
        _compare_with_ort(model, [1, 2, 6, 7], rng, n=20)


# -------------------------------------------------------------------- bad input
def test_truncated_file(acasxu_dir: Path, tmp_path: Path) -> None:
    data = (acasxu_dir / "onnx" / "ACASXU_run2a_1_1_batch_2000.onnx").read_bytes()
    for cut in (len(data) // 2, 100, 7, 0):
        p = tmp_path / f"cut{cut}.onnx"
        p.write_bytes(data[:cut])
        with pytest.raises(FormatError, match=re.escape(str(p))):
            load_onnx(p)


def test_garbage_and_missing_file(tmp_path: Path) -> None:
    p = tmp_path / "junk.onnx"
    p.write_bytes(b"\x00\xffnot a model at all" * 10)
    with pytest.raises(FormatError, match="junk.onnx"):
        load_onnx(p)
    with pytest.raises(FormatError, match="no such file"):
        load_onnx(tmp_path / "absent.onnx")


def _save(model, path: Path) -> Path:
    onnx.save(model, str(path))
    return path


def test_unsupported_operator_names_node_and_type(tmp_path: Path) -> None:
    nodes = [helper.make_node("Gemm", ["x", "W"], ["z"], name="fc", transB=1),
             helper.make_node("Sigmoid", ["z"], ["y"], name="squash")]
    model = _single_op_model(nodes, [_arr(np.ones((3, 4)), "W")], [1, 4])
    p = _save(model, tmp_path / "sig.onnx")
    with pytest.raises(FormatError, match=r"sig\.onnx: node 'squash' \(Sigmoid\): unsupported operator Sigmoid"):
        load_onnx(p)
    nodes = [helper.make_node("Softmax", ["x"], ["y"])]  # unnamed node
    p = _save(_single_op_model(nodes, [], [1, 4]), tmp_path / "soft.onnx")
    with pytest.raises(FormatError, match=r"node '#0' \(Softmax\): unsupported operator"):
        load_onnx(p)


def test_mismatched_shapes(tmp_path: Path) -> None:
    nodes = [helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")]
    p = _save(_single_op_model(nodes, [_arr(np.ones((4, 3)), "W")], [1, 5]), tmp_path / "mm.onnx")
    with pytest.raises(FormatError, match=r"mm\.onnx: node 'mm' \(MatMul\): .*"):
        load_onnx(p)
    nodes = [helper.make_node("Gemm", ["x", "W"], ["y"], name="gm", transB=1)]
    p = _save(_single_op_model(nodes, [_arr(np.ones((3, 4)), "W")], [1, 5]), tmp_path / "gm.onnx")
    with pytest.raises(FormatError, match=r"node 'gm' \(Gemm\): Gemm operands of shapes \(1, 5\) and \(4, 3\)"):
        load_onnx(p)
    nodes = [helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")]
    p = _save(_single_op_model(nodes, [_arr([3, -1], "s", np.int64)], [1, 5]), tmp_path / "rs.onnx")
    with pytest.raises(FormatError, match=r"node 'rs' \(Reshape\): cannot reshape"):
        load_onnx(p)


def test_nan_weights(tmp_path: Path) -> None:
    W = np.ones((3, 4))
    W[1, 2] = np.nan
    nodes = [helper.make_node("Gemm", ["x", "W"], ["y"], name="fc", transB=1)]
    p = _save(_single_op_model(nodes, [_arr(W, "W")], [1, 4]), tmp_path / "nan.onnx")
    with pytest.raises(FormatError, match=r"nan\.onnx: node 'fc' \(Gemm\): initializer 'W' contains NaN"):
        load_onnx(p)


@pytest.mark.parametrize("opset", [1, 6, 7, 13, 99, 7.5, True])
def test_export_opset_is_one_onnxruntime_runs(opset, tmp_path: Path) -> None:
    net = Network([[[1.0, -2.0], [0.5, 1.0]], [[1.0, 1.0]]], [[0.0, 1.0], [0.5]])
    if opset in (7, 13) and not isinstance(opset, bool):
        p = tmp_path / "n.onnx"
        save_onnx(net, p, opset=opset)
        X = np.random.default_rng(0).normal(size=(5, 2))
        assert np.allclose(_session(onnx.load(str(p))).run(None, {"input": X})[0], net(X), rtol=1e-12)
    else:
        with pytest.raises(RelulabError, match="opset must be an integer from 7"):
            save_onnx(net, tmp_path / "n.onnx", opset=opset)
        assert not list(tmp_path.iterdir())


def test_exporting_an_exact_entry_beyond_float64_is_one_clear_error(tmp_path: Path) -> None:
    from fractions import Fraction

    net = Network([[[Fraction(10) ** 400]]], [[Fraction(0)]])
    with pytest.raises(RelulabError, match="layer 1: weight: an entry is too large for float64"):
        save_onnx(net, tmp_path / "big.onnx")
    assert not list(tmp_path.iterdir())


def test_division_by_a_zero_constant_names_the_node(tmp_path: Path) -> None:
    nodes = [helper.make_node("Div", ["x", "s"], ["y"], name="scale")]
    p = _save(_single_op_model(nodes, [_arr([1.0, 0.0, 2.0], "s")], [1, 3]), tmp_path / "div.onnx")
    with pytest.raises(FormatError, match=r"div\.onnx: node 'scale' \(Div\): divides .* by a constant containing 0"):
        load_onnx(p)


def test_other_structural_errors(tmp_path: Path) -> None:
    # product of two input-dependent tensors
    nodes = [helper.make_node("Mul", ["x", "x"], ["y"], name="sq")]
    p = _save(_single_op_model(nodes, [], [1, 3]), tmp_path / "sq.onnx")
    with pytest.raises(FormatError, match=r"node 'sq' \(Mul\): multiplies two input-dependent"):
        load_onnx(p)
    # two graph inputs
    graph = helper.make_graph([helper.make_node("Add", ["x", "z"], ["y"])], "g",
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 3]) for n in "xz"],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])])
    p = _save(helper.make_model(graph), tmp_path / "two.onnx")
    with pytest.raises(FormatError, match=r"two\.onnx: the graph has 2 inputs"):
        load_onnx(p)
    # an undefined input
    nodes = [helper.make_node("Add", ["x", "ghost"], ["y"], name="add")]
    p = _save(_single_op_model(nodes, [], [1, 3]), tmp_path / "ghost.onnx")
    with pytest.raises(FormatError, match=r"input 'ghost' is not defined"):
        load_onnx(p)


def _compare_with_ort(model, shape, rng, n=64) -> Network:
    net = onnx_to_network(model)
    X = rng.normal(size=(n, int(np.prod(shape)))).astype(np.float32)
    sess = _session(model)
    ref = np.stack([sess.run(None, {"x": x.reshape(shape)})[0].reshape(-1) for x in X])
    assert _rel_err(net(X.astype(np.float64)), ref.astype(np.float64)) <= 2e-6
    return net


def test_residual_blocks_and_parallel_branches() -> None:
    """Skip connections between hidden layers and parallel Relu branches: the values
    needed later are carried through the hidden layers as relu(v) - relu(-v) (or relu(v)
    when v >= 0 is known)."""
    rng = np.random.default_rng(11)
    # ResNet block: relu(conv(relu(conv(x))) + x), then a linear head
    nodes = [helper.make_node("Conv", ["x", "k1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "k2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "x"], ["s"]),
             helper.make_node("Relu", ["s"], ["r2"]),
             helper.make_node("Conv", ["r2", "k3"], ["c3"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c3"], ["r3"]),
             helper.make_node("Add", ["r3", "r2"], ["s2"]),  # a skip from a hidden layer
             helper.make_node("Flatten", ["s2"], ["f"]),
             helper.make_node("Gemm", ["f", "G"], ["y"], transB=1)]
    inits = [_arr(rng.normal(size=(2, 2, 3, 3)), "k1"), _arr(rng.normal(size=(2, 2, 3, 3)), "k2"),
             _arr(rng.normal(size=(2, 2, 3, 3)), "k3"), _arr(rng.normal(size=(3, 32)), "G")]
    net = _compare_with_ort(_single_op_model(nodes, inits, [1, 2, 4, 4]), [1, 2, 4, 4], rng)
    # x (32 signed values) rides through layer 1 as 64 units; r2 (>= 0) through layer 3 as 32
    assert net.widths == (32 + 64, 32, 32 + 32)
    # parallel branches, and a direct input term at the output (the network's skip)
    nodes = [helper.make_node("MatMul", ["x", "A"], ["a"]), helper.make_node("Relu", ["a"], ["ra"]),
             helper.make_node("MatMul", ["x", "B"], ["b"]), helper.make_node("Relu", ["b"], ["rb"]),
             helper.make_node("Concat", ["ra", "rb"], ["cat"], axis=1),
             helper.make_node("MatMul", ["cat", "C"], ["o"]),
             helper.make_node("MatMul", ["x", "S"], ["sk"]), helper.make_node("Add", ["o", "sk"], ["y"])]
    inits = [_arr(rng.normal(size=(3, 4)), "A"), _arr(rng.normal(size=(3, 5)), "B"),
             _arr(rng.normal(size=(9, 2)), "C"), _arr(rng.normal(size=(3, 2)), "S")]
    model = _single_op_model(nodes, inits, [1, 3])
    net = _compare_with_ort(model, [1, 3], rng)
    # layer 1: relu(xA) and x carried as +-x; layer 2: relu(xB) and relu(xA) (>= 0)
    assert net.skip is not None and net.widths == (4 + 6, 5 + 4)
    X = rng.normal(size=(100, 3))
    ref64 = _session(_to_float64_batched(model)).run(None, {"x": X})[0]
    assert _rel_err(net(X), ref64) <= TOL
    # a value live across the levels of a MaxPool tree
    nodes = [helper.make_node("Conv", ["x", "k"], ["c"]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["m"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Flatten", ["m"], ["fm"]), helper.make_node("Gemm", ["fm", "G1"], ["a"], transB=1),
             helper.make_node("GlobalAveragePool", ["c"], ["g"]),
             helper.make_node("Flatten", ["g"], ["fg"]), helper.make_node("Gemm", ["fg", "G2"], ["b"], transB=1),
             helper.make_node("Add", ["a", "b"], ["y"])]
    inits = [_arr(rng.normal(size=(2, 1, 2, 2)), "k"), _arr(rng.normal(size=(3, 8)), "G1"),
             _arr(rng.normal(size=(3, 2)), "G2")]
    _compare_with_ort(_single_op_model(nodes, inits, [1, 1, 5, 5]), [1, 1, 5, 5], rng)


def test_input_skip_into_output_is_read_as_network_skip(tmp_path: Path) -> None:
    """x -> relu(x W1) W2 + x S: the direct x term becomes the network's skip."""
    rng = np.random.default_rng(5)
    W1, W2, S = rng.normal(size=(3, 4)), rng.normal(size=(4, 2)), rng.normal(size=(3, 2))
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["a"]), helper.make_node("Relu", ["a"], ["h"]),
             helper.make_node("MatMul", ["h", "W2"], ["o"]), helper.make_node("MatMul", ["x", "S"], ["s"]),
             helper.make_node("Add", ["o", "s"], ["y"])]
    model = _single_op_model(nodes, [_arr(W1, "W1"), _arr(W2, "W2"), _arr(S, "S")], ["N", 3])
    net = onnx_to_network(model)
    assert net.skip is not None and net.widths == (4,)
    X = rng.normal(size=(50, 3)).astype(np.float32)
    ref = _session(model).run(None, {"x": X})[0]
    assert _rel_err(net(X.astype(np.float64)), ref.astype(np.float64)) <= 1e-5


def _cli(capsys, *args) -> tuple[int, str]:
    from relulab.cli import main

    try:
        main(list(args))
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    out = capsys.readouterr()
    return code, out.out + out.err


def test_cli_reports_bad_onnx_in_one_line(tmp_path: Path, capsys) -> None:
    nodes = [helper.make_node("Sigmoid", ["x"], ["y"], name="squash")]
    bad = _save(_single_op_model(nodes, [], [1, 4]), tmp_path / "sig.onnx")
    cut = tmp_path / "cut.onnx"
    cut.write_bytes((bad.read_bytes() * 3)[:37])
    W = np.ones((3, 4))
    W[0, 0] = np.nan
    nan = _save(_single_op_model([helper.make_node("Gemm", ["x", "W"], ["y"], name="fc", transB=1)],
                                 [_arr(W, "W")], [1, 4]), tmp_path / "nan.onnx")
    for p, msg in [(bad, "node 'squash' (Sigmoid)"), (cut, "cut.onnx"), (nan, "contains NaN")]:
        code, text = _cli(capsys, "info", str(p))
        assert code == 1
        assert "Traceback" not in text and msg in text
        assert len(text.strip().splitlines()) == 1
    good = tmp_path / "good.onnx"
    save_onnx(random_network(np.random.default_rng(0), [3, 4, 2]), good)
    code, text = _cli(capsys, "convert", str(good), str(tmp_path / "good.npz"))
    assert code == 0, text
    assert load_model(tmp_path / "good.npz") == load_onnx(good)


def test_bad_batchnorm_variance_and_nan_slope_are_named_at_their_node(tmp_path: Path, capsys) -> None:
    # a negative variance gave a RuntimeWarning, then "graph output 'y': layer 1: weight
    # contains NaN"; a NaN LeakyRelu alpha named "layer 2"
    bn = _single_op_model([helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn")],
                          [_arr([1.0, 1.0], "s"), _arr([0.0, 0.0], "b"), _arr([0.0, 0.0], "m"),
                           _arr([1.0, -2.0], "v")], [1, 2, 3])
    leaky = _single_op_model([helper.make_node("LeakyRelu", ["x"], ["y"], name="lk", alpha=float("nan"))], [], [1, 4])
    for model, name, msg in [(bn, "bn.onnx", "node 'bn' (BatchNormalization): channel 1 has running variance -2.0"),
                             (leaky, "lk.onnx", "node 'lk' (LeakyRelu): the negative slope")]:
        p = _save(model, tmp_path / name)
        code, text = _cli(capsys, "info", str(p))
        assert code == 1 and msg in text and name in text, text
        assert len(text.strip().splitlines()) == 1 and "Warning" not in text


def test_a_constant_node_too_large_for_the_memory_budget_is_refused(tmp_path: Path, capsys, monkeypatch) -> None:
    # a 248-byte model (ConstantOfShape [15000, 15000] -> ReduceSum) took 3.6 GB under a
    # 1 GB budget: constant nodes went to onnx's evaluator unchecked
    nodes = [helper.make_node("ConstantOfShape", ["shp"], ["big"], name="alloc",
                              value=numpy_helper.from_array(np.array([1.0], np.float64))),
             helper.make_node("ReduceSum", ["big"], ["s"], name="sum", keepdims=0),
             helper.make_node("Cast", ["s"], ["s32"], to=TensorProto.FLOAT, name="cast"),
             helper.make_node("Add", ["x", "s32"], ["y"], name="add")]
    model = _single_op_model(nodes, [_arr([15000, 15000], "shp", np.int64)], [1, 3], opset=17)
    p = _save(model, tmp_path / "alloc.onnx")
    monkeypatch.setenv("RELULAB_MEMORY_GB", "1")
    code, text = _cli(capsys, "info", str(p))
    assert code == 1 and len(text.strip().splitlines()) == 1
    assert "node 'alloc' (ConstantOfShape): its constant output (2.25e+08 entries) needs" in text
    # a small one is evaluated (and agrees with onnxruntime)
    small = _single_op_model(nodes, [_arr([3, 4], "shp", np.int64)], [1, 3], opset=17)
    _compare_with_ort(small, [1, 3], np.random.default_rng(0), n=5)


def test_model_exported_by_torch(tmp_path: Path) -> None:
    """A CNN exported by torch's own exporter reads back as the network from_torch builds
    (the exporter folds BatchNorm into the convolution in float32, hence 1e-5)."""
    import warnings

    from relulab.io.torch import from_torch

    nn = torch.nn
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.BatchNorm2d(2), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Flatten(), nn.Linear(18, 4), nn.LeakyReLU(0.1), nn.Linear(4, 2)).eval()
    with torch.no_grad():
        m[1].running_mean.normal_()
        m[1].running_var.uniform_(0.5, 2.0)
    p = tmp_path / "exported.onnx"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(m, (torch.randn(1, 1, 6, 6),), str(p), dynamo=False, opset_version=13,
                              input_names=["x"], dynamic_axes={"x": {0: "N"}})
    except Exception as e:  # the legacy exporter may be missing from a torch build
        pytest.skip(f"torch cannot export ONNX here ({type(e).__name__})")
    net = load_onnx(p)
    ref = from_torch(m, (1, 6, 6))
    assert net.widths == ref.widths
    X = np.random.default_rng(0).normal(size=(100, 36))
    assert _rel_err(net(X), ref(X)) <= 1e-5
    y = _session(onnx.load(str(p))).run(None, {"x": X.reshape(-1, 1, 6, 6).astype(np.float32)})[0]
    assert _rel_err(net(X.astype(np.float32).astype(np.float64)), y.astype(np.float64)) <= 1e-5


# ------------------------------------------------------------------ node order (audit)
def _graph_model(nodes):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [1, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [1, 2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


@pytest.mark.parametrize("case", ["residual first", "dead branch"])
def test_any_topological_node_order_reads_like_onnxruntime(case):
    """relu(x) + x + relu(-x) with the residual Add listed before the second branch (a
    valid ONNX order), and the same graph with an activation that never reaches the
    output: both used to be refused as 'a skip into a hidden layer'."""
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Add", ["a", "x"], ["s"]),
             helper.make_node("Neg", ["x"], ["n"]), helper.make_node("Relu", ["n"], ["b"]),
             helper.make_node("Add", ["s", "b"], ["y"])]
    if case == "dead branch":
        nodes.insert(2, helper.make_node("Relu", ["s"], ["unused"]))
    m = _graph_model(nodes)
    net = onnx_to_network(m)
    X = np.random.default_rng(0).normal(size=(50, 2))
    sess = ort.InferenceSession(m.SerializeToString())
    ref = np.vstack([sess.run(None, {"x": X[i:i + 1]})[0] for i in range(len(X))])
    assert np.allclose(net(X), ref, rtol=1e-12, atol=1e-12)


def test_load_onnx_refuses_a_reading_that_disagrees_with_onnxruntime(tmp_path: Path, monkeypatch) -> None:
    # defence in depth: each operator is read by hand; a misread one must be refused at
    # load time, naming the file, not answered for as another function
    pytest.importorskip("onnxruntime")
    import relulab.io.onnx as io_onnx

    net = Network([[[1.0, -1.0], [2.0, 1.0]], [[1.0, -3.0]]], [[0.5, -0.5], [0.0]])
    p = tmp_path / "n.onnx"
    save_onnx(net, p)
    assert load_onnx(p) == net
    monkeypatch.setitem(io_onnx._HANDLERS, "Relu", io_onnx._HANDLERS["Identity"])   # a "misread" Relu
    with pytest.raises(FormatError, match=f"^{re.escape(str(p))}: relulab's reading of the model disagrees"):
        load_onnx(p)


@pytest.mark.parametrize("op", ["RandomNormal", "RandomUniform"])
def test_a_random_operator_is_refused_not_frozen(op: str) -> None:
    # a RandomNormal on no input was evaluated once and frozen: another function than
    # the one onnxruntime computes (dropout in training mode was already refused)
    from relulab.crown import BoundGraph, GraphError

    m = _single_op_model([helper.make_node(op, [], ["r"], shape=[1, 2], dtype=TensorProto.FLOAT, name="rnd"),
                          helper.make_node("Add", ["x", "r"], ["y"])], [], [1, 2])
    with pytest.raises(FormatError, match="node 'rnd' .*random operator"):
        onnx_to_network(m)
    with pytest.raises(GraphError, match="node 'rnd' .*random operator"):
        BoundGraph.from_onnx(m)


def test_crosscheck_allows_float32_rounding_of_large_intermediate_values(tmp_path: Path) -> None:
    # relu(x + 1e6) - 1e6 in float32 is off by ~0.03 from the float64 reading: rounding in
    # the model's own precision, not a misread; it was refused
    pytest.importorskip("onnxruntime")
    m = _single_op_model([helper.make_node("Add", ["x", "big"], ["a"]), helper.make_node("Relu", ["a"], ["r"]),
                          helper.make_node("Sub", ["r", "big"], ["y"])],
                         [numpy_helper.from_array(np.array([1e6], np.float32), "big")], [1, 4])
    p = tmp_path / "big.onnx"
    p.write_bytes(m.SerializeToString())
    net = load_onnx(p)
    assert np.allclose(net(np.array([[0.5, -0.25, 2.0, 0.0]])), [[0.5, -0.25, 2.0, 0.0]], atol=1e-9)


@pytest.mark.parametrize("shape", [[4], [2, 4]])
def test_crosscheck_also_runs_without_a_batch_axis_or_with_a_fixed_batch(tmp_path: Path, monkeypatch, shape) -> None:
    # inputs of shape (4,) or (2, 4) were never run by onnxruntime: the check was skipped
    pytest.importorskip("onnxruntime")
    import relulab.io.onnx as io_onnx

    m = _single_op_model([helper.make_node("Relu", ["x"], ["y"])], [], shape)
    p = tmp_path / "r.onnx"
    p.write_bytes(m.SerializeToString())
    load_onnx(p)
    monkeypatch.setitem(io_onnx._HANDLERS, "Relu", io_onnx._HANDLERS["Identity"])   # a "misread" Relu
    with pytest.raises(FormatError, match="disagrees with onnxruntime"):
        load_onnx(p)


def test_a_sparse_initializer_with_a_negative_index_is_refused(tmp_path):
    # numpy wrapped index -1 around to the last entry, where ONNX and onnxruntime refuse it
    # (and with onnxruntime refusing, no cross-check ran)
    from onnx import numpy_helper as nh

    from relulab.io.onnx import load_onnx

    vals = nh.from_array(np.array([2.0]), "W")
    sp = helper.make_sparse_tensor(vals, nh.from_array(np.array([-1], np.int64), "W_idx"), [3, 2])
    g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [1, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [1, 2])], sparse_initializer=[sp])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = tmp_path / "neg.onnx"
    onnx.save(m, path)
    with pytest.raises(FormatError, match="index is negative"):
        load_onnx(path)
