"""Command line, third audit: explain says when its regions are not certified and what
ties a proof allowed, relulab reads back the wide ONNX files it writes, reports holding
numbers too long to print are written by their size (and no file is left by a command
that fails), and bad options are named in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import run_cli

from relulab import Network
from relulab.io import load_model, save_model


def _thin(tmp_path):
    """Logits of size 1e-12: class 1 wins only on the strip 0.5e-12 < x0 < 1.5e-12."""
    net = Network([np.array([[1.0, 0.0], [1.0, 0.0]]), np.array([[0.0, 0.0], [1.0, -2.0]])],
                  [np.array([0.0, -1e-12]), np.array([0.5e-12, 0.0])])
    path = tmp_path / "thin.npz"
    save_model(net, path)
    return net, path


def test_explain_rules_say_when_the_regions_are_not_certified(tmp_path, capsys):
    # "exact by construction" was printed whatever the enumeration said (it had 2 near ties)
    net, path = _thin(tmp_path)
    code, out, err = run_cli(capsys, "explain", path, "--rules", "--box", "-1:1")
    assert code == 0, err
    assert "exact by construction" not in out and "NOT certified" in out
    code, out, _ = run_cli(capsys, "explain", path, "--rules", "--box", "-1:1", "--json")
    assert json.loads(out)["info"]["near_ties"] >= 1
    code, out, _ = run_cli(capsys, "explain", path, "--rules", "--box", "-1:1", "--markdown")
    assert "**Not certified:**" in out
    # the strip is real: class 1 at (1e-12, 0), class 0 at (-0.5, 0)
    assert np.argmax(net([1e-12, 0.0])) == 1 and np.argmax(net([-0.5, 0.0])) == 0


def test_why_says_what_ties_its_proof_allowed(tmp_path, capsys):
    # two contradicting rules were both "certified": x0 <= 1.5e-12 -> class 1 (false for
    # x0 < 0.5e-12) and "always -> class 0"; each allowed a tie far above the margin 5e-13
    _, path = _thin(tmp_path)
    code, out, err = run_cli(capsys, "explain", path, "--x", "-0.5,0")
    assert code == 0, err
    assert "minimal, certified up to ties of" in out and "minimal, certified)" not in out
    # (1e-12, 0) lies 5e-13 from the strip's edge, below the radius search's resolution
    # (about 1e-9): with the strict row broken at its tie no box is proven, and it says so
    code, out, err = run_cli(capsys, "explain", path, "--x", "1e-12,0")
    assert code == 0, err
    text = " ".join(out.split())
    assert "minimal, certified)" not in text
    assert "within the radius search's resolution" in text or "certified up to ties of" in text


def test_a_wide_onnx_file_is_read_back_without_its_dense_identity(tmp_path, monkeypatch):
    # a Gemm after a ReLU densified the width x width identity: 2-15000-1 read in 52 s and
    # 1.8 GB, 2-40000-1 (a 1.3 MB file) not at all; under 0.1 GB a 2-6000-1 file (288 MB
    # dense) was refused
    rng = np.random.default_rng(0)
    w = 6000
    net = Network([rng.normal(size=(w, 2)), rng.normal(size=(1, w))], [rng.normal(size=w), np.zeros(1)])
    save_model(net, tmp_path / "wide.onnx")
    monkeypatch.setenv("RELULAB_MEMORY_GB", "0.1")
    back = load_model(tmp_path / "wide.onnx")
    X = rng.normal(size=(64, 2))
    assert back.widths == (w,) and np.allclose(back(X), net(X), rtol=1e-12, atol=1e-12)


def test_a_report_with_an_integer_too_long_to_print_is_written_by_its_size(tmp_path, capsys):
    # 2^14300 pieces: Python refuses int -> str past 4300 digits; the command failed with a
    # raw ValueError after its -o file was written
    out_file = tmp_path / "saw.npz"
    code, out, err = run_cli(capsys, "construct", "sawtooth", "--depth", "14300", "-o", out_file, "--json")
    assert code == 0, err
    rep = json.loads(out)
    assert rep["pieces_on_[0,1]"] == "~5.3572e+4304"   # 2^14300 = 5.3572... x 10^4304
    assert out_file.exists()
    code, out, err = run_cli(capsys, "pathnorm", out_file, "--q", "0", "--json")
    assert code == 0 and json.loads(out)["n_paths"].startswith("~"), err


def test_pathnorm_text_of_an_exact_network_beyond_float64(tmp_path, capsys):
    # float() of a 10^857 Fraction raised OverflowError in the text table
    path = tmp_path / "saw.npz"
    code, _, err = run_cli(capsys, "construct", "sawtooth", "--depth", "1100", "-o", path)
    assert code == 0, err
    code, out, err = run_cli(capsys, "pathnorm", path)
    assert code == 0, err
    from fractions import Fraction

    from relulab.params import path_norm

    exact = path_norm(load_model(path), 1)
    assert isinstance(exact, Fraction) and exact > 10**800
    digits = len(str(exact.numerator // exact.denominator))
    assert f"e+{digits - 1}" in out   # the leading digits and the exponent of the 1-norm


def test_huge_text_reads_leading_digits_and_exponent():
    from fractions import Fraction

    from relulab.results import huge_text, to_jsonable

    assert huge_text(7 * 10**5000) == "~7.0000e+5000"
    assert huge_text(Fraction(-1, 8 * 10**4500)) == "~-1.2500e-4501"
    # past what Python prints (4,300 digits) the size alone; below, exactly
    assert to_jsonable({"n": 2**20000, "small": 2**5000}) == {"n": huge_text(2**20000), "small": 2**5000}


@pytest.mark.parametrize("argv, message", [
    (["construct", "integral", "--poly", "x^2", "--width", "16", "--radius", "-1"], "radius must be > 0, got -1"),
    (["construct", "refine", "--mask", "chaikin", "--steps", "2000"], "relulab builds at most 1000 steps"),
])
def test_construct_values_are_named_plainly(capsys, argv, message):
    code, _, err = run_cli(capsys, *argv)
    assert code == 1 and message in err and "Fraction(" not in err, err


def test_feature_names_from_a_binary_file_and_figures_without_suffix(tmp_path, capsys):
    net_path = tmp_path / "m2.npz"
    code, _, err = run_cli(capsys, "construct", "max", "--n", "2", "-o", net_path)
    code, _, err = run_cli(capsys, "explain", net_path, "--x", "0.1,0.2", "--features", net_path)
    assert code == 1 and "not a text file of names" in err and "UnicodeDecodeError" not in err
    data = tmp_path / "d.csv"
    data.write_text("x,y\n0,0\n1,1\n2,0\n")
    code, _, err = run_cli(capsys, "fit-minnorm", data, "--plot", tmp_path / "adir")
    assert code == 1 and "no suffix" in err and "'.'" not in err


def test_an_activation_network_target_is_checked_before_the_work(tmp_path, capsys, monkeypatch):
    import relulab.construct as C

    net_path = tmp_path / "m2.npz"
    run_cli(capsys, "construct", "max", "--n", "2", "-o", net_path)
    calls = []
    monkeypatch.setattr(C, "approximate_relu_network", lambda *a, **k: calls.append(1))
    code, _, err = run_cli(capsys, "construct", "activation", net_path, "--act", "gelu",
                           "-o", tmp_path / "act.npz")
    assert code == 1 and "saves as .onnx or .pt" in err and calls == []
