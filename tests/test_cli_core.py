"""The core commands through the real entry point: output, --json, one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import run_cli as run

from relulab.examples import example_path, load_example
from relulab.io import load_model


def test_info_json(capsys):
    code, out, _ = run(capsys, "info", str(example_path("tiny_2d")), "--json")
    assert code == 0
    d = json.loads(out)
    net = load_example("tiny_2d")
    assert d["hidden_widths"] == list(net.widths)
    assert d["params"] == net.n_params == sum(layer["params"] for layer in d["layers"])


def test_eval_matches_forward(capsys):
    code, out, _ = run(capsys, "eval", str(example_path("tiny_2d")), "--x", "0.1,-0.2", "--x", "1 1", "--json")
    assert code == 0
    d = json.loads(out)
    net = load_example("tiny_2d")
    assert np.allclose(d["outputs"], net(np.array([[0.1, -0.2], [1, 1]])))


def test_convert_round_trip(tmp_path, capsys):
    dst = tmp_path / "copy.npz"
    code, out, _ = run(capsys, "convert", str(example_path("tiny_2d")), str(dst), "--json")
    assert code == 0 and json.loads(out)["max_abs_difference"] == 0.0
    assert load_model(dst) == load_example("tiny_2d")


@pytest.mark.parametrize(
    "args,message",
    [
        (("info", "missing.npz"), "missing.npz: no such file"),
        (("info", "model.xyz"), "unknown model format '.xyz'"),
        (("eval", "EX", "--x", "1,2,3"), "input 1 has 3 values; the model takes 2"),
        (("eval", "EX", "--x", "1,abc"), "cannot read numbers"),
        (("eval", "EX"), "give at least one input"),
        (("eval", "EX", "--x", "1,,2"), "--x: empty value in '1,,2'"),  # was read as 1,2
        (("eval", "EX", "--x", "1_0,2"), "--x: cannot read numbers"),  # was read as 10,2
        (("regions", "EX", "--box", "0:1_0"), "--box: cannot read '0:1_0'"),  # was 0:10
        (("--input-shape", "1,x", "info", "EX"), "--input-shape: cannot read '1,x'"),  # was (1,)
        (("info", "DIR"), "a directory, not a file"),
    ],
)
def test_errors_are_one_line_without_traceback(capsys, args, message):
    import tempfile

    args = [str(example_path("tiny_2d")) if a == "EX" else tempfile.mkdtemp(suffix=".onnx") if a == "DIR" else a
            for a in args]
    code, out, err = run(capsys, *args)
    assert code == 1
    assert message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_corrupt_native_file(tmp_path, capsys):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 truncated")
    code, _, err = run(capsys, "info", str(bad))
    assert code == 1 and "not a readable .npz archive" in err and "Traceback" not in err


def test_tour_runs(capsys):
    code, out, _ = run(capsys, "tour")
    assert code == 0
    assert "XOR" in out and "5/6" in out


@pytest.mark.parametrize("argv, culprit", [
    (["range", "example:tiny_2d.onnx", "--timeout", "nan"], "--timeout"),
    (["equiv", "example:tiny_2d.onnx", "example:tiny_2d.nnet", "--timeout", "-1"], "--timeout"),
    (["reduce", "example:tiny_2d.onnx", "-o", "{tmp}/r.npz", "--timeout", "-1"], "--timeout"),
    (["fit-convex", "example:data_1d.csv", "--lam", "0.01", "--time-limit", "-1"], "--time-limit"),
    (["lipschitz", "example:tiny_2d.onnx", "--time-limit", "0"], "--time-limit"),
    (["regions", "example:tiny_2d.onnx", "--ray", "bogus"], "--ray"),
    (["regions", "example:tiny_2d.onnx", "--whole-space", "--box", "0:0.5"], "--whole-space"),
    (["verify-batch", "{tmp}/ok.csv", "--workers", "1", "--timeout", "-5"], "--timeout"),
    # every verifier command takes --time-limit too, and its error names the option as typed
    (["range", "example:tiny_2d.onnx", "--time-limit", "0"], "--time-limit"),
    (["verify", "example:tiny_2d.onnx", "example:tiny_2d_holds.vnnlib", "--time-limit", "0"], "--time-limit"),
    (["equiv", "example:tiny_2d.onnx", "example:tiny_2d.nnet", "--time-limit", "-1"], "--time-limit"),
    (["reduce", "example:tiny_2d.onnx", "-o", "{tmp}/r.npz", "--time-limit", "-1"], "--time-limit"),
    (["verify-batch", "{tmp}/ok.csv", "--workers", "1", "--time-limit", "-5"], "--time-limit"),
    (["verify-batch", "{tmp}/other.csv", "--workers", "1"], "other.csv:1"),
    (["verify-batch", "{tmp}/ok.csv", "--workers", "1", "--results", "example:r.jsonl"], "--results"),
    (["verify", "example:tiny_2d.onnx", "example:tiny_2d_holds.vnnlib", "--memory", "inf"], "--memory"),
    (["range", "example:tiny_2d.onnx", "--memory", "1e300"], "--memory"),
    (["eval", "example:tiny_2d.onnx", "--csv", "{tmp}/empty.csv"], "empty.csv"),
    (["construct", "gate", "--op", "and", "--k", "0"], "--k"),
    (["construct", "max", "--n", "100000"], "max_n(100000)"),
    (["fit-quantile", "{tmp}/onerow.csv"], "onerow.csv"),
])
def test_bad_limits_and_options_exit_1_with_one_line(capsys, tmp_path, monkeypatch, argv, culprit):
    """A negative or NaN time limit, an unknown --ray, --box with --whole-space, a CSV that
    is not a benchmark list: exit 1 and one line naming the option, nothing written."""

    (tmp_path / "ok.csv").write_text(
        f"onnx,vnnlib,timeout\n{example_path('tiny_2d.onnx')},{example_path('tiny_2d_holds.vnnlib')},10\n")
    (tmp_path / "other.csv").write_text("x,y\n1,2\nfoo,2\n")
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "onerow.csv").write_text("0.5,1.0\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *[a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert code == 1, (argv, code, out, err)
    assert len(err.strip().splitlines()) == 1 and culprit in err, err
    assert not (tmp_path / "r.npz").exists() and not (tmp_path / "example:r.jsonl").exists()


@pytest.mark.parametrize("name", ["[red]x:smile:.npz", "a[bold]b:new:.onnx"])
def test_error_line_prints_the_file_name_as_given(tmp_path, capsys, name):
    # the message is data: rich markup and emoji codes in it are printed as typed
    path = str(tmp_path / name)
    code, _, err = run(capsys, "info", path)
    assert code == 1
    assert err.count("\n") <= 1 and name in err


def test_convert_that_fails_leaves_no_target_and_keeps_an_old_one(tmp_path, capsys):
    # an exact weight 10^400 saves as .npz but cannot be compared in float64: the target
    # was left behind (and an existing one overwritten) before the error
    from fractions import Fraction as F

    from relulab import Network
    from relulab.io import save_model

    src = tmp_path / "huge.npz"
    save_model(Network([[[F(10**400), F(1)], [F(1), F(-1)]], [[F(1), F(1)]]], [[F(0), F(0)], [F(0)]]), src)
    code, _, err = run(capsys, "convert", src, tmp_path / "out.npz")
    assert code == 1 and "huge.npz" in err and "float64" in err
    assert not (tmp_path / "out.npz").exists()
    (tmp_path / "old.npz").write_bytes(b"keep me")
    code, _, _ = run(capsys, "convert", src, tmp_path / "old.npz")
    assert code == 1 and (tmp_path / "old.npz").read_bytes() == b"keep me"
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name] == []


@pytest.mark.parametrize("argv", [
    ["fit-minnorm", "example:data_1d.csv", "--save", "{keep}", "--plot", "example:p.png"],
    ["fit-minnorm", "example:data_1d.csv", "--save", "{keep}", "--plot", "{tmp}/p.txt"],
    ["fit-quantile", "example:data_1d.csv", "--epochs", "2", "--save", "{keep}", "--plot", "{tmp}/q.txt"],
    ["fit-convex", "example:data_1d.csv", "--lam", "0.1", "--save", "{tmp}/z.txt"],
])
def test_bad_output_paths_are_refused_before_anything_is_written(argv, tmp_path, capsys):
    # --save was written (over an existing file) before a bad --plot failed
    keep = tmp_path / "keep.npz"
    keep.write_bytes(b"keep me")
    args = [a.format(keep=keep, tmp=tmp_path) for a in argv]
    code, _, err = run(capsys, *args)
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert keep.read_bytes() == b"keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.npz"]


def test_convert_and_info_print_file_names_as_typed(tmp_path, capsys):
    # names were read as rich markup: '[bold]' vanished from the output, and a closing
    # tag ('c[/x].onnx') made convert fail after writing the file (MarkupError)
    target = tmp_path / "m[bold].onnx"
    code, out, err = run(capsys, "convert", "example:tiny_2d.onnx", target)
    assert code == 0, err
    assert "m[bold].onnx" in out.replace("\n", "")
    code, out, _ = run(capsys, "info", target)
    assert code == 0 and "m[bold].onnx" in out


def test_construct_hierarchy_prints_an_integer_too_long_for_python_as_its_size(capsys):
    # the scale 2^(d k) passed Python's 4300-digit limit of int -> str: a ValueError
    code, out, err = run(capsys, "construct", "hierarchy", "--d", "2", "--k", "20000", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["scale"] == "2^20000 <= value < 2^20001"


def test_eval_table_shows_outputs_that_look_like_markup(tmp_path, capsys):
    # "[inf, 10]" was read as rich markup and the output cell came out empty (exit 0),
    # with numpy's overflow warnings on stderr
    from relulab import Network
    from relulab.io import save_model

    path = tmp_path / "big.npz"
    save_model(Network([np.array([[1e308], [1.0]])], [np.zeros(2)]), path)
    code, out, err = run(capsys, "eval", path, "--x", "10", "--x", "1")
    assert code == 0
    assert "[inf, 10]" in out and "[1e+308, 1]" in out
    assert "RuntimeWarning" not in err


@pytest.mark.parametrize("name", ["noext", "out.txt", "out.onnx.bak"])
def test_convert_refuses_an_unknown_target_format_by_its_own_name(tmp_path, capsys, name):
    # the suffix was checked on the temporary file beside it: "...noext.blhi8pbr: unknown
    # model format '.blhi8pbr'"
    code, _, err = run(capsys, "convert", "example:tiny_2d.nnet", tmp_path / name)
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert f"{tmp_path / name}: unknown model format" in err
    assert list(tmp_path.iterdir()) == []


def test_exact_model_beyond_float64_is_refused_naming_the_file(tmp_path, capsys):
    # an exact .npz with a weight of 10^400: eval said "layer 1: weight: ... too large"
    # without the file; info, which computes nothing, still describes it
    from fractions import Fraction

    from relulab import Network
    from relulab.io import native

    W1 = np.array([[Fraction(10) ** 400]], dtype=object)
    one, zero = np.array([[Fraction(1)]], dtype=object), np.array([Fraction(0)], dtype=object)
    path = tmp_path / "huge.npz"
    native.save(Network([W1, one], [zero, zero], exact=True), path)
    code, out, err = run(capsys, "eval", str(path), "--x", "1")
    assert code == 1 and str(path) in err and "too large for float64" in err and len(err.strip().splitlines()) == 1
    code, out, err = run(capsys, "info", str(path), "--json")
    assert code == 0 and json.loads(out)["exact"] is True
    # an exact model inside float64 still evaluates
    native.save(Network([W1 / Fraction(10) ** 398, one], [zero, zero], exact=True), path)
    code, out, err = run(capsys, "eval", str(path), "--x", "1", "--json")
    assert code == 0 and json.loads(out)["outputs"] == [[100.0]]


def test_eval_recomputes_rows_that_overflow_inside_the_network(tmp_path, capsys):
    # relu(1e308 x) - relu(1e308 x) = 0: float64 gave inf - inf = nan, printed with exit 0
    from relulab import Network
    from relulab.io import save_model

    net = Network([[[1e308], [1e308]], [[1.0, -1.0]]], [[0.0, 0.0], [0.0]])
    path = tmp_path / "cancel.npz"
    save_model(net, path)
    code, out, err = run(capsys, "eval", path, "--x", "10", "--x", "1e-300", "--json")
    assert code == 0, err
    d = json.loads(out)
    exact = net.exact()([[10], [1e-300]])
    assert d["outputs"] == [[float(exact[0, 0])], [float(exact[1, 0])]] == [[0.0], [0.0]]
    assert d["recomputed_exactly"] == [0] and d["active_neurons"] == [2, 2]
    code, out, err = run(capsys, "eval", path, "--x", "10")
    assert code == 0 and "[0]" in out and "at input 1; recomputed in exact rational arithmetic" in " ".join(out.split())


@pytest.mark.parametrize("suffix", [".onnx", ".nnet"])
def test_convert_of_an_exact_model_says_its_weights_were_rounded(tmp_path, capsys, suffix):
    # 1/3 written to a float format: the check compared float with float and said 0
    from fractions import Fraction

    from relulab import Network
    from relulab.io import native

    F = Fraction
    net = Network([np.array([[F(1, 3)], [F(1)]], dtype=object), np.array([[F(3), F(0)]], dtype=object)],
                  [np.array([F(0), F(0)], dtype=object), np.array([F(0)], dtype=object)], exact=True)
    src, dst = tmp_path / "third.npz", tmp_path / f"third{suffix}"
    native.save(net, src)
    code, out, err = run(capsys, "convert", src, dst, "--json")
    d = json.loads(out)
    back = load_model(dst)
    true_diff = abs(back.exact()([[3]])[0, 0] - net([[3]])[0, 0])
    assert code == 0 and d["rounded_to_float64"] is True and true_diff > 0
    assert d["max_abs_difference"] > 0
    code, out, err = run(capsys, "convert", src, tmp_path / "same.npz", "--json")
    d = json.loads(out)
    assert d["rounded_to_float64"] is False and d["max_abs_difference"] == 0.0


@pytest.mark.parametrize("argv", [
    ["fit-minnorm", "example:data_1d.csv", "-o", "{tmp}/a.npz"],
    ["fit-convex", "example:data_1d.csv", "--lam", "0.1", "--out", "{tmp}/a.npz"],
    ["fit-quantile", "example:data_1d.csv", "--epochs", "2", "-o", "{tmp}/a.npz"],
    ["construct", "max", "--n", "3", "--out", "{tmp}/a.npz"],
])
def test_every_command_that_writes_a_network_takes_o_and_out(argv, tmp_path, capsys):
    """-o/--out is the output option of extract, canonical, reduce, from-formula and
    regions; the fit commands only had --save and construct only -o/--output."""
    code, _, err = run(capsys, *[a.format(tmp=tmp_path) for a in argv])
    assert code == 0, err
    assert load_model(tmp_path / "a.npz").input_dim >= 1
