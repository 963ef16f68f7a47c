"""Model files a user writes with ordinary tools (fourth io audit): skips computed between
two ReLUs, infinite Clip bounds from Constant nodes, sparse initializers, symlinked
targets of convert, and exact .npz rationals of any length.  Each case failed before its
fix."""

from __future__ import annotations

import os
from fractions import Fraction

import numpy as np
import pytest
from typer.testing import CliRunner

from relulab import Network
from relulab.cli import app
from relulab.io import load_model, save_model

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

F32 = TensorProto.FLOAT


def _ort(path, X):
    s = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    name = s.get_inputs()[0].name
    return np.concatenate([s.run(None, {name: X[i:i + 1].astype(np.float32)})[0] for i in range(len(X))])


def _model(nodes, inits, n_in, n_out, sparse=()):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F32, [1, n_in])],
                          [helper.make_tensor_value_info("y", F32, [1, n_out])], inits,
                          sparse_initializer=list(sparse))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _w(name, a):
    return numpy_helper.from_array(np.asarray(a, dtype=np.float32), name)


def test_a_skip_computed_between_two_relus_reaches_the_output(tmp_path):
    # y = o(relu(b(relu(a(x))))) + s(x), with s(x) computed after the first ReLU
    rng = np.random.default_rng(0)
    A, B, O, S = (rng.normal(size=s) for s in [(3, 4), (4, 4), (4, 2), (3, 2)])
    nodes = [helper.make_node("MatMul", ["x", "A"], ["z1"]), helper.make_node("Relu", ["z1"], ["h1"]),
             helper.make_node("MatMul", ["x", "S"], ["sk"]),
             helper.make_node("MatMul", ["h1", "B"], ["z2"]), helper.make_node("Relu", ["z2"], ["h2"]),
             helper.make_node("MatMul", ["h2", "O"], ["o"]), helper.make_node("Add", ["o", "sk"], ["y"])]
    p = tmp_path / "skipmid.onnx"
    onnx.save(_model(nodes, [_w("A", A), _w("B", B), _w("O", O), _w("S", S)], 3, 2), p)
    net = load_model(p)
    X = rng.normal(size=(50, 3))
    assert np.allclose(net(X), _ort(p, X), rtol=1e-5, atol=1e-5)


def test_an_infinite_clip_bound_from_a_constant_node_is_no_bound(tmp_path):
    lo = helper.make_tensor("lo", F32, [], [-np.inf])
    hi = helper.make_tensor("hi", F32, [], [1.0])
    nodes = [helper.make_node("Constant", [], ["lo"], value=lo), helper.make_node("Constant", [], ["hi"], value=hi),
             helper.make_node("Clip", ["x", "lo", "hi"], ["y"])]
    p = tmp_path / "clip.onnx"
    onnx.save(_model(nodes, [], 3, 3), p)
    X = np.array([[-5.0, 0.5, 3.0]])
    assert np.allclose(load_model(p)(X), [[-5.0, 0.5, 1.0]])
    # an infinite constant that feeds anything else is still refused
    nodes[2] = helper.make_node("Add", ["x", "lo"], ["y"])
    onnx.save(_model(nodes, [], 3, 3), p)
    with pytest.raises(Exception, match="NaN or infinite"):
        load_model(p)


def test_sparse_initializers_are_read(tmp_path):
    vals = numpy_helper.from_array(np.array([2.0, -1.0], dtype=np.float32), "W")
    idx = numpy_helper.from_array(np.array([1, 4], dtype=np.int64), "W_idx")
    sp = helper.make_sparse_tensor(vals, idx, [3, 2])
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Relu", ["h"], ["y"])]
    p = tmp_path / "sparse.onnx"
    onnx.save(_model(nodes, [], 3, 2, sparse=[sp]), p)
    X = np.random.default_rng(1).normal(size=(20, 3))
    assert np.allclose(load_model(p)(X), _ort(p, X), atol=1e-6)


def test_convert_through_a_symlink_writes_the_format_of_the_name_given(tmp_path):
    src = tmp_path / "m.npz"
    save_model(Network([[[1.0, -1.0]], [[2.0]]], [[0.5], [0.0]]), src)
    (tmp_path / "runs").mkdir()
    target = tmp_path / "runs" / "weights.npz"
    target.write_bytes(b"")
    link = tmp_path / "out.onnx"
    os.symlink(target, link)
    res = CliRunner().invoke(app, ["convert", str(src), str(link)])
    assert res.exit_code == 0, res.output
    back = load_model(link)   # ONNX, read through the link by its own name
    assert np.allclose(back([[1.0, 0.25]]), [[2.0 * 1.25]])


def test_npz_keeps_rationals_of_any_length(tmp_path):
    import sys

    before = sys.get_int_max_str_digits()
    big = Fraction(3, 10**5000)
    net = Network([np.array([[big]], dtype=object)], [np.array([Fraction(-(10**4500) - 1, 7)], dtype=object)],
                  exact=True)
    p = tmp_path / "long.npz"
    save_model(net, p)
    assert load_model(p) == net
    assert sys.get_int_max_str_digits() == before   # the process setting is left alone


def test_nnet_text_is_checked_against_the_memory_budget_before_parsing(tmp_path):
    from relulab.io.nnet import save_nnet
    from relulab.limits import ResourceLimitError, memory_limit

    rng = np.random.default_rng(0)
    p = tmp_path / "m.nnet"
    save_nnet(Network([rng.normal(size=(40, 5)), rng.normal(size=(1, 40))], [np.zeros(40), np.zeros(1)]), p)
    size = p.stat().st_size
    with memory_limit(int(3 * size)), pytest.raises(ResourceLimitError, match="parsing its"):
        load_model(p)
    assert load_model(p).widths == (40,)


def test_lowering_a_dense_model_is_checked_against_the_memory_budget(tmp_path):
    from relulab.limits import memory_limit

    # relu(x - c) and relu(c - x) in two layers, the first carried through the second:
    # each layer's dense form passes its own check, the emitted layers did not have one
    n = 1024
    c = np.linspace(0.25, 0.75, n)
    nodes = [helper.make_node("Sub", ["x", "c"], ["a"]), helper.make_node("Relu", ["a"], ["p"]),
             helper.make_node("Neg", ["a"], ["na"]), helper.make_node("Relu", ["na"], ["q"]),
             helper.make_node("Concat", ["p", "q"], ["pq"], axis=1),
             helper.make_node("Gemm", ["pq", "W", "b"], ["u"], transB=1), helper.make_node("Relu", ["u"], ["y"])]
    p = tmp_path / "dense.onnx"
    onnx.save(_model(nodes, [_w("c", c[None]), _w("W", -np.ones((1, 2 * n))), _w("b", [20.0])], n, 1), p)
    with memory_limit(20 * 2**20), pytest.raises(Exception, match="the dense hidden layer of"):
        load_model(p)
    assert load_model(p).input_dim == n


def test_a_torch_module_used_twice_is_read_at_both_places():
    torch = pytest.importorskip("torch")
    from relulab.io.torch import from_torch

    torch.manual_seed(0)
    relu = torch.nn.ReLU()
    lin = torch.nn.Linear(3, 3)
    # one ReLU instance after two layers, and a Linear used twice (tied weights)
    for seq in (torch.nn.Sequential(torch.nn.Linear(2, 4), relu, torch.nn.Linear(4, 4), relu, torch.nn.Linear(4, 1)),
                torch.nn.Sequential(torch.nn.Linear(2, 3), relu, lin, relu, lin, relu, torch.nn.Linear(3, 1))):
        seq = seq.double()
        net = from_torch(seq)
        X = np.random.default_rng(0).normal(size=(50, 2))
        with torch.no_grad():
            want = seq(torch.as_tensor(X)).numpy()
        assert np.allclose(net(X), want, rtol=0, atol=1e-12)
