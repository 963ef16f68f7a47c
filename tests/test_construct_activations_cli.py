"""`relulab construct activation` and `relulab construct integral`."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import run_cli as run


def test_activation_cli_reports_sampled_sup_error(tmp_path, capsys):
    out_path = tmp_path / "g.onnx"
    code, out, err = run(capsys, "construct", "activation", "example:tiny_2d.onnx", "--act", "tanh",
                         "--scale", "200", "--box", "-1:1", "-o", str(out_path), "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["status"] == "sampled" and d["gadget"] == "sigmoidal"
    assert d["hidden_widths"] == [3 * w for w in d["relu_widths"] for _ in range(2)]
    assert 0 < d["sup_error"] < 0.05 and d["params"] > 0
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(str(out_path), providers=["CPUExecutionProvider"])
    from relulab.construct import replace_relu
    from relulab.domain import Box
    from relulab.examples import example_path
    from relulab.io import load_model

    net = load_model(example_path("tiny_2d.onnx"))
    rho = replace_relu(net, "tanh", Box([-1, -1], [1, 1]), 200)
    X = np.random.default_rng(0).uniform(-1, 1, (50, 2))
    # same formula, different tanh kernels: 1e-16 differences amplified by t^3 = 8e6
    assert np.allclose(sess.run(None, {"input": X})[0], rho(X), rtol=1e-7, atol=1e-7)


def test_activation_cli_errors(capsys):
    code, out, err = run(capsys, "construct", "activation", "example:tiny_2d.onnx", "--act", "relu6")
    assert code == 1 and "known: leakyrelu" in err and err.count("\n") == 1
    code, out, err = run(capsys, "construct", "activation", "example:tiny_2d.onnx")
    assert code == 1 and "--act" in err
    code, out, err = run(capsys, "construct", "max", "--n", "3", "--act", "gelu")
    assert code == 1 and "does not apply" in err
    code, out, err = run(capsys, "construct", "activation", "example:tiny_2d.onnx", "--act", "swish:beta")
    assert code == 1 and "key=value" in err


def test_activation_cli_parameters(capsys):
    code, out, err = run(capsys, "construct", "activation", "example:tiny_2d.onnx", "--act",
                         "leakyrelu:negative_slope=0.3", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["activation_params"] == {"negative_slope": 0.3} and d["sup_error"] < 1e-12


def test_integral_cli(tmp_path, capsys):
    out_path = tmp_path / "i.npz"
    code, out, err = run(capsys, "construct", "integral", "--poly", "x^3 - x/2", "--width", "64",
                         "-o", str(out_path), "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["exact"] is True and d["status"] == "sampled" and d["l2_error"] < 1e-2
    code, out, err = run(capsys, "construct", "integral", "--poly", "x^2+xy", "--width", "256",
                         "--rule", "mc", "--form", "sharpened", "--dist", "sphere", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["mc_bound"] > 0 and d["representation"]["sphere_radius"] == "1"
    code, out, err = run(capsys, "construct", "integral", "--poly", "x^^2", "--width", "8")
    assert code == 1 and "polynomial" in err
