"""The symmetry commands through the real entry point."""

from __future__ import annotations

import json
import re

import numpy as np
from conftest import run_cli as run

from relulab import Box, Network
from relulab.io import load_model, save_model
from relulab.symmetry import random_symmetry


def _padded() -> Network:
    # relu(x1), 2 relu(x1) (duplicate), relu(x1 + x2 - 9) (dead on [-1, 1]^2), relu(x2)
    W = [[1.0, 0.0], [2.0, 0.0], [1.0, 1.0], [0.0, 1.0]]
    return Network([W, [[1.0, 0.5, 4.0, -1.0]]], [[0.0, 0.0, -9.0, 0.0], [0.5]])


def test_canonical_reduce_equiv_round_trip(tmp_path, capsys):
    src = tmp_path / "net.npz"
    net = _padded()
    save_model(net, src)
    code, out, _ = run(capsys, "canonical", str(src), "-o", str(tmp_path / "c.npz"), "--json")
    assert code == 0
    d = json.loads(out)
    assert d["widths_after"] == [3] and d["merged"] == [{"layer": 0, "neurons": [0, 1]}]
    code, out, _ = run(capsys, "canonical", str(src), "-o", str(tmp_path / "c2.npz"), "--box", "-1:1", "--json")
    d = json.loads(out)
    assert d["widths_after"] == [2] and d["dead"] == [[0, 2]] and d["sample_max_deviation"] < 1e-12

    code, out, _ = run(capsys, "reduce", str(src), "-o", str(tmp_path / "r.npz"), "--box", "-1:1", "--json")
    assert code == 0
    d = json.loads(out)
    assert d["neurons_after"] == 2 and d["check"]["status"] == "equal"
    red = load_model(tmp_path / "r.npz")
    X = Box([-1, -1], [1, 1]).sample(1000, 0)
    assert np.allclose(red(X), net(X), atol=1e-12)

    code, out, _ = run(capsys, "equiv", str(src), str(tmp_path / "r.npz"), "--box", "-1:1", "--json")
    assert code == 0 and json.loads(out)["status"] == "equal"
    # on a larger box the dead neuron wakes up: different, with a witness
    code, out, _ = run(capsys, "equiv", str(src), str(tmp_path / "r.npz"), "--box", "-6:6", "--json")
    d = json.loads(out)
    assert d["status"] == "different"
    w = np.array(d["witness"])
    assert abs(float(net(w)[0] - red(w)[0])) == d["gap"] > 0


def test_equiv_whole_space_and_text_output(tmp_path, capsys):
    net = Network([[[1.0, 2.0], [-1.0, 0.5]], [[1.0, 2.0]]], [[0.5, 0.0], [0.0]])
    save_model(net, tmp_path / "a.npz")
    save_model(random_symmetry(net, 3), tmp_path / "b.npz")
    code, out, _ = run(capsys, "equiv", str(tmp_path / "a.npz"), str(tmp_path / "b.npz"), "--whole-space")
    assert code == 0 and "equal" in out and "algebraic" in out


def test_errors_are_one_line(tmp_path, capsys):
    save_model(_padded(), tmp_path / "a.npz")
    save_model(Network([[[1.0]]], [[0.0]]), tmp_path / "one.npz")
    code, _, err = run(capsys, "equiv", str(tmp_path / "a.npz"), str(tmp_path / "one.npz"))
    assert code == 1 and "input sizes differ" in err and "Traceback" not in err
    code, _, err = run(capsys, "reduce", str(tmp_path / "a.npz"), "-o", str(tmp_path / "x.npz"), "--box", "0:1,0:1,0:1")
    assert code == 1 and "3 intervals" in err


def test_canonical_reports_a_float_merge_that_changed_the_function(tmp_path, capsys):
    # near-twin neurons (biases 1e-12 apart, outgoing weights +-1e12) were merged and the
    # "normal form" differed from the model by 1, with exit 0 and no warning
    twins = Network([[[1.0], [1.0], [1.0]], [[1e12, -1e12, 1.0]]], [[0.5, 0.5 + 1e-12, 0.0], [0.0]])
    src, dst = tmp_path / "twins.npz", tmp_path / "can.npz"
    save_model(twins, src)
    code, out, err = run(capsys, "canonical", src, "-o", dst, "--json")
    d = json.loads(out)
    # a changed function is not written unasked (it was written, with exit 3, before)
    assert code == 3 and d["same_on_samples"] is False and "nothing written" in err
    assert d["out"] is None and not dst.exists()
    code, out, err = run(capsys, "canonical", src, "-o", dst, "--allow-unverified")
    X = np.linspace(-2, 2, 401)[:, None]
    dev = float(np.max(np.abs(twins(X) - load_model(dst)(X))))
    assert dev > 0.5  # the merge did change the function (checked independently)
    assert code == 3 and "WARNING" in err and "anyway" in err
    # an ordinary rescaled copy is the same function: exit 0
    net = Network([[[1.0, -2.0], [0.5, 0.3]], [[1.0, 2.0]]], [[0.1, -0.2], [0.0]])
    save_model(random_symmetry(net, np.random.default_rng(0)), src)
    code, out, err = run(capsys, "canonical", src, "-o", dst, "--json")
    assert code == 0 and json.loads(out)["same_on_samples"] is True and not err


def test_model_outputs_are_checked_before_the_work(tmp_path, capsys, monkeypatch):
    # reduce and canonical refused a bad -o only after the verifier (21 s), extract after the
    # attack (50-60 s); none of the work may start now
    import relulab.extract
    import relulab.symmetry

    def boom(*a, **k):
        raise AssertionError("the work started before -o was checked")

    monkeypatch.setattr(relulab.symmetry, "reduce", boom)
    monkeypatch.setattr(relulab.symmetry, "canonical", boom)
    monkeypatch.setattr(relulab.extract, "extract_relu", boom)
    for cmd in (["reduce", "example:tiny_2d.onnx"], ["canonical", "example:tiny_2d.onnx"],
                ["extract", "example:tiny_2d.onnx"]):
        for target, msg in ((tmp_path / "out.txt", "-o .*out.txt: unknown model format"),
                            ("example:x.npz", "example:")):
            code, out, err = run(capsys, *cmd, "-o", target)
            assert code == 1 and len(err.strip().splitlines()) == 1, (cmd, err)
            assert re.search(msg, err), (cmd, err)
    assert not list(tmp_path.iterdir())


def test_extract_says_when_nothing_is_written(tmp_path, capsys):
    # a partial attack wrote no file and said nothing about it (exit 0)
    target = tmp_path / "x.npz"
    code, out, err = run(capsys, "extract", "example:tiny_2d.onnx", "--time-limit", "0.5", "-o", target)
    assert code == 0
    if target.exists():  # recovered in time after all: then it says so
        assert "written to" in " ".join(out.split())
    else:
        assert f"nothingwrittento{target}:nonetworkwasrecovered" in "".join(out.split())


def test_equiv_witness_equal_as_floats_says_the_exact_difference(tmp_path, capsys):
    # --tol 0 on a rescaled copy: "different" with f(x) and g(x) printed identical
    rng = np.random.default_rng(2)
    n = Network([rng.normal(size=(6, 2)), rng.normal(size=(1, 6))], [rng.normal(size=6) * 0.5,
                                                                      rng.normal(size=1) * 0.5])
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    save_model(n, a)
    save_model(random_symmetry(n, 7), b)
    code, out, err = run(capsys, "equiv", a, b, "--tol", "0", "--json")
    d = json.loads(out)
    if d["status"] != "different":
        return  # nothing to print: only a 'different' answer has a witness
    from fractions import Fraction

    fv = [float(Fraction(v)) for v in d["f_value"]]
    gv = [float(Fraction(v)) for v in d["g_value"]]
    code, out, err = run(capsys, "equiv", a, b, "--tol", "0")
    flat = " ".join(out.split())
    assert ("equal as floats, they differ by" in flat) == (fv == gv)


def test_help_texts_are_reflowed_and_unwritable_targets_name_themselves(capsys):
    code, out, err = run(capsys, "reduce", "--help")
    flat = " ".join(out.split())
    assert "equal to the input on the box" in flat  # one sentence, no hard break inside
    code, out, err = run(capsys, "canonical", "example:tiny_2d.onnx", "-o", "/proc/x.npz")
    assert code == 1 and err.strip() == "error: -o /proc/x.npz: cannot write in /proc (No such file or directory)"
