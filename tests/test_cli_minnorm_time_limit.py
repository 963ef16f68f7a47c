"""`fit-minnorm --time-limit` and `convert` refusing an `example:` destination.

The time-limit tests do not depend on timing: a limit of 1e-9 s always runs out at the
first check, which column generation (penalised biases) makes after its first round, and
the shipped data set needs more than one round.
"""

from __future__ import annotations

import json

import pytest
from conftest import run_cli as run

DATA = "example:data_1d.csv"
TINY = "1e-9"


def _fit(capsys, *extra: str) -> dict:
    code, out, err = run(capsys, "fit-minnorm", DATA, "--bias", "penalized", *extra, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("classify", [False, True])
def test_time_limit_stops_column_generation_and_keeps_the_bound(classify, capsys, tmp_path):
    extra: tuple[str, ...] = ()
    data = DATA
    if classify:
        # the shipped x with labels + + - - + + - - ... (the penalised classifier needs
        # more than one round of column generation for them)
        from relulab.examples import example_path

        rows = example_path("data_1d.csv").read_text().splitlines()[1:]
        xs = [r.split(",")[0] for r in rows]
        labs = ["1" if i % 4 < 2 else "-1" for i in range(len(xs))]
        (tmp_path / "lab.csv").write_text("\n".join(f"{a},{b}" for a, b in zip(xs, labs, strict=True)) + "\n")
        data, extra = str(tmp_path / "lab.csv"), ("--classify",)
    code, out, err = run(capsys, "fit-minnorm", data, "--bias", "penalized", *extra, "--json")
    assert code == 0, err
    full = json.loads(out)
    code, out, err = run(capsys, "fit-minnorm", data, "--bias", "penalized", *extra,
                         "--time-limit", TINY, "--json")
    assert code == 0, err
    cut = json.loads(out)
    assert full["time_limit"] is None and full["partial"] is False
    assert cut["time_limit"] == pytest.approx(1e-9)
    assert cut["status"] == "time_limit" and cut["partial"] is True
    assert cut["iterations"] < full["iterations"]
    # the lower bound stays certified: it cannot exceed the optimum of the unlimited run
    # (whose certified bracket is closed), and the partial network's cost is an upper bound
    tol = 1e-7 * max(1.0, full["cost"])
    assert cut["lower_bound"] <= full["cost"] + tol
    assert cut["cost"] >= full["lower_bound"] - tol
    assert cut["lower_bound"] <= cut["cost"]
    assert cut["unique"] is None


def test_time_limit_text_says_partial(capsys):
    code, out, err = run(capsys, "fit-minnorm", DATA, "--bias", "penalized", "--time-limit", TINY)
    text = " ".join(out.split())
    assert code == 0, err
    assert "PARTIAL" in text and "stopped by --time-limit" in text
    assert "lower bound certified" in text and "upper bound" in text
    # an unlimited run is not labelled partial
    code, out, _ = run(capsys, "fit-minnorm", DATA, "--bias", "penalized")
    assert code == 0 and "PARTIAL" not in out and "--time-limit" not in out


def test_generous_time_limit_changes_nothing(capsys):
    full = _fit(capsys)
    roomy = _fit(capsys, "--time-limit", "3600")
    assert roomy["status"] == full["status"] == "optimal" and roomy["partial"] is False
    assert roomy["cost"] == pytest.approx(full["cost"], rel=1e-9)


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_bad_time_limit_is_one_line_exit_1(value, capsys):
    code, out, err = run(capsys, "fit-minnorm", DATA, f"--time-limit={value}")
    lines = err.strip().splitlines()
    assert code == 1 and out == "" and len(lines) == 1, err
    assert "--time-limit must be a positive number of seconds" in lines[0]


def test_time_limit_that_is_not_a_number_is_a_usage_error(capsys):
    code, out, err = run(capsys, "fit-minnorm", DATA, "--time-limit", "abc")
    errors = [ln for ln in err.splitlines() if ln.startswith("Error")]
    assert code == 2 and out == ""
    assert len(errors) == 1 and "Invalid value for '--time-limit'" in errors[0], err


@pytest.mark.parametrize("dst", ["example:x.npz", "example:tiny_2d.onnx", "example:x"])
def test_convert_refuses_an_example_destination(dst, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "convert", "example:tiny_2d.nnet", dst)
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1, err
    assert dst in lines[0] and "DST" in lines[0] and "read-only" in lines[0]
    assert list(tmp_path.iterdir()) == []   # nothing written, in particular no "example:..."


def test_convert_still_reads_an_example_and_writes_a_path(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "convert", "example:tiny_2d.nnet", "out.npz", "--json")
    assert code == 0, err
    assert json.loads(out)["max_abs_difference"] == 0.0 and (tmp_path / "out.npz").is_file()


@pytest.mark.parametrize("argv", [
    ["construct", "max", "--n", "3", "-o", "example:m.npz"],
    ["canonical", "example:tiny_2d.onnx", "-o", "example:c.npz"],
    ["reduce", "example:tiny_2d.onnx", "-o", "example:r.npz", "--box", "-1:1"],
    ["regions", "example:tiny_2d.onnx", "--box", "-1:1", "--out", "example:r.jsonl"],
    ["regions", "example:tiny_2d.onnx", "--box", "-1:1", "--plot", "example:r.png"],
    ["fit-minnorm", DATA, "--save", "example:f.npz"],
    ["fit-minnorm", DATA, "--plot", "example:f.png"],
])
def test_every_output_option_refuses_an_example_name(argv, capsys, tmp_path, monkeypatch):
    # these options used to write a file literally named "example:...", which every
    # command then reads as a shipped example's name, never as that file
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *argv)
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1, err
    assert "example:" in lines[0] and "read-only" in lines[0]
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith("example:")]
