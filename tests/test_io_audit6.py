"""io audit 6: index-map operators and VNN-LIB text within the memory budget; files
that are not regular files named as such (aud_io6)."""

import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as H  # noqa: E402
from onnx import numpy_helper as NH  # noqa: E402

from relulab.errors import FormatError  # noqa: E402
from relulab.io import load_model  # noqa: E402
from relulab.io.vnnlib import load_vnnlib  # noqa: E402
from relulab.limits import ResourceLimitError, memory_limit  # noqa: E402


def _save(tmp_path, nodes, inits, shape, name="m.onnx", dtype=T.DOUBLE):
    g = H.make_graph(nodes, "g", [H.make_tensor_value_info("x", dtype, shape)],
                     [H.make_tensor_value_info("y", dtype, None)], initializer=inits)
    m = H.make_model(g, opset_imports=[H.make_opsetid("", 17)])
    m.ir_version = 8
    p = str(tmp_path / name)
    onnx.save(m, p)
    return p


def test_a_tiny_gather_of_a_million_indices_is_refused_by_the_budget(tmp_path):
    # a 150-byte file built a 40 x 1e6 map past a 0.5 GB budget (1e8: a raw MemoryError)
    p = _save(tmp_path, [H.make_node("ConstantOfShape", ["s"], ["i"], value=NH.from_array(np.array([0], np.int64))),
                         H.make_node("Gather", ["x", "i"], ["y"], axis=1)],
              [NH.from_array(np.array([10**6], np.int64), "s")], [1, 40])
    with memory_limit(10**8), pytest.raises(ResourceLimitError, match="Gather.*1000000 outputs"):
        load_model(p)
    # a small Gather still loads, and computes what onnxruntime does
    q = _save(tmp_path, [H.make_node("Gather", ["x", "i"], ["y"], axis=1)],
              [NH.from_array(np.array([3, 0, 3], np.int64), "i")], [1, 4], name="s.onnx")
    net = load_model(q)
    x = np.array([[1.0, 2.0, 3.0, 4.0]])
    assert net(x).tolist() == [[4.0, 1.0, 4.0]]


def test_concat_and_pad_of_huge_outputs_are_refused(tmp_path):
    p = _save(tmp_path, [H.make_node("Concat", ["x"] * 5000, ["y"], axis=1)], [], [1, 40], name="c.onnx")
    with memory_limit(10**7), pytest.raises(ResourceLimitError, match="Concat"):
        load_model(p)
    q = _save(tmp_path, [H.make_node("Pad", ["x", "p"], ["y"])],
              [NH.from_array(np.array([0, 0, 0, 10**7], np.int64), "p")], [1, 4], name="p.onnx")
    with memory_limit(10**8), pytest.raises(ResourceLimitError, match="Pad"):
        load_model(q)


def test_the_structured_reader_checks_a_huge_pad(tmp_path):
    pytest.importorskip("torch")
    from relulab.crown import BoundGraph
    from relulab.crown.builder import GraphError

    p = _save(tmp_path, [H.make_node("Pad", ["x", "p"], ["a"]), H.make_node("Conv", ["a", "w"], ["y"])],
              [NH.from_array(np.array([0, 0, 0, 0, 0, 0, 0, 10**7], np.int64), "p"),
               NH.from_array(np.ones((1, 1, 1, 1), np.float32), "w")], [1, 1, 2, 2], dtype=T.FLOAT)
    with memory_limit(10**8), pytest.raises((ResourceLimitError, GraphError), match="padded tensor"):
        BoundGraph.from_onnx(p)


def test_vnnlib_text_is_checked_against_the_budget(tmp_path):
    p = tmp_path / "big.vnnlib"
    p.write_text("(declare-const X_0 Real)(declare-const Y_0 Real)(assert (<= X_0 1))(assert (>= X_0 0))\n"
                 + "(assert (<= Y_0 1))\n" * 50000)
    with memory_limit(10**7), pytest.raises(ResourceLimitError, match="parsing its"):
        load_vnnlib(p)
    prop = load_vnnlib(p)   # within the default budget it loads
    assert prop.cases[0].unsafe[0].C.shape[0] == 50000


def test_a_pipe_or_device_is_not_called_missing(tmp_path):
    fifo = tmp_path / "m.onnx"
    os.mkfifo(fifo)
    with pytest.raises(FormatError, match="not a regular file \\(a pipe\\)"):
        load_model(fifo)
    dev = tmp_path / "z.vnnlib"
    dev.symlink_to("/dev/zero")
    with pytest.raises(FormatError, match="not a regular file \\(a device\\)"):
        load_vnnlib(dev)
    with pytest.raises(FormatError, match="no such file"):
        load_model(tmp_path / "none.onnx")


def test_a_torchscript_archive_is_named_as_such(tmp_path):
    torch = pytest.importorskip("torch")
    m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    p = tmp_path / "trace.pt"
    torch.jit.save(torch.jit.trace(m, torch.zeros(1, 3)), str(p))
    with pytest.raises(FormatError, match="TorchScript archive"):
        load_model(p)
    q = tmp_path / "plain.pt"
    torch.save(m, str(q))      # the module itself still loads, and computes what torch does
    x = np.random.default_rng(0).normal(size=(5, 3))
    with torch.no_grad():
        ref = m.double()(torch.from_numpy(x)).numpy()
    assert np.allclose(load_model(q)(x), ref, rtol=1e-6, atol=1e-6)
