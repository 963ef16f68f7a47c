"""Output paths that cannot be written are refused before the work, not after it."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli as run

import relulab.cli.construct
import relulab.extract
import relulab.regions
import relulab.verify


def _forbid(monkeypatch, owner, name: str) -> None:
    def fail(*args, **kwargs):
        raise AssertionError(f"{name} ran before the output path was checked")

    monkeypatch.setattr(owner, name, fail)


CASES = [
    (relulab.cli.construct, "build", ["construct", "max", "--n", "4", "-o"], "x.npz", "-o"),
    (relulab.extract, "extract_relu", ["extract", "example:tiny_2d.onnx", "-o"], "x.npz", "-o"),
    (relulab.verify, "verify", ["verify", "example:tiny_2d.onnx", "example:tiny_2d_holds.vnnlib",
                                "--out"], "r.txt", "--out"),
    (relulab.regions, "write_regions", ["regions", "example:tiny_2d.onnx", "--out"], "r.jsonl", "--out"),
]


@pytest.mark.parametrize(("owner", "name", "args", "leaf", "flag"), CASES, ids=[c[1] for c in CASES])
def test_a_target_under_a_file_is_refused_before_the_work(capsys, monkeypatch, tmp_path: Path,
                                                          owner, name, args, leaf, flag) -> None:
    blocker = tmp_path / "plain_file"
    blocker.write_text("x")
    _forbid(monkeypatch, owner, name)
    code, _, err = run(capsys, *args, str(blocker / "sub" / leaf))
    assert code == 1 and f"{flag} " in err and "plain_file is not a folder" in err
    assert "Traceback" not in err and sorted(p.name for p in tmp_path.iterdir()) == ["plain_file"]


def test_a_folder_as_target_is_refused_before_the_work(capsys, monkeypatch, tmp_path: Path) -> None:
    (tmp_path / "out.txt").mkdir()
    _forbid(monkeypatch, relulab.verify, "verify")
    code, _, err = run(capsys, "verify", "example:tiny_2d.onnx", "example:tiny_2d_holds.vnnlib",
                       "--out", str(tmp_path / "out.txt"))
    assert code == 1 and "out.txt: it is a folder" in err


def test_a_missing_folder_is_still_created_when_written(capsys, tmp_path: Path) -> None:
    target = tmp_path / "new" / "deeper" / "max4.npz"
    code, _, err = run(capsys, "construct", "max", "--n", "4", "-o", str(target))
    assert code == 0 and target.is_file(), err


@pytest.mark.parametrize("widths", [",", "", " , "])
def test_extract_widths_without_numbers_is_an_error(capsys, monkeypatch, widths: str) -> None:
    _forbid(monkeypatch, relulab.extract, "extract_relu")
    code, _, err = run(capsys, "extract", "example:tiny_2d.onnx", "--widths", widths)
    assert code == 1 and "--widths: cannot read" in err


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_folder_that_cannot_be_made_is_refused_before_the_work(capsys, monkeypatch) -> None:
    # as root os.access says /proc is writable: the probe write is what sees it is not
    _forbid(monkeypatch, relulab.verify, "verify")
    code, _, err = run(capsys, "verify", "example:tiny_2d.onnx", "example:tiny_2d_holds.vnnlib",
                       "--out", "/proc/no_such_folder/r.txt")
    assert code == 1 and err.startswith("error: --out /proc/no_such_folder/r.txt: cannot write in /proc")


def test_verify_batch_reads_expected_before_running(capsys, monkeypatch, tmp_path: Path) -> None:
    import relulab.cli.verify as cli_verify

    _forbid(monkeypatch, cli_verify, "run_batch")
    (tmp_path / "x.onnx").write_bytes(b"")  # never read: the run is forbidden
    (tmp_path / "p.vnnlib").write_text("")
    (tmp_path / "inst.csv").write_text("x.onnx,p.vnnlib,10\n")
    code, _, err = run(capsys, "verify-batch", tmp_path / "inst.csv", "--expected", tmp_path / "missing.csv")
    assert code == 1 and "missing.csv" in err and "run_batch ran" not in err


@pytest.mark.parametrize(("args", "msg"), [
    (["construct", "dnf", "--terms", "1 -2; 2 3", "--vars", "-1"], "--vars: a formula needs at least 1 variable"),
    (["construct", "dnf", "--terms", "1 -2; 2 3", "--vars", "0"], "--vars: a formula needs at least 1 variable"),
    (["construct", "gate", "--op", "FOO"], "unknown gate 'FOO'; use one of AND"),
    (["range", "example:tiny_2d.onnx", "--box", "1:-1"], "--box 1:-1: empty box"),
    (["range", "example:tiny_2d.onnx", "--box", "nan:1"], "--box nan:1: box bounds must be finite"),
    (["explain", "example:tiny_2d.onnx", "--x", "nan,0"], "--x nan,0: the input must be finite"),
])
def test_small_errors_name_their_option(capsys, args, msg) -> None:
    code, _, err = run(capsys, *args)
    assert code == 1 and msg in err and len(err.strip().splitlines()) == 1


def test_a_ragged_csv_error_gives_no_numpy_advice(capsys, tmp_path: Path) -> None:
    (tmp_path / "rag.csv").write_text("0,0\n1\n")
    code, _, err = run(capsys, "eval", "example:tiny_2d.onnx", "--csv", tmp_path / "rag.csv")
    assert code == 1 and "rag.csv: cannot read a numeric CSV" in err and "usecols" not in err


def test_verify_batch_refuses_an_instance_given_twice(capsys, tmp_path: Path) -> None:
    # the results are keyed by model and property: the second row's answer replaced the
    # first one's, and the report showed one answer twice
    (tmp_path / "m.onnx").write_bytes(b"")
    (tmp_path / "p.vnnlib").write_text("")
    (tmp_path / "inst.csv").write_text("m.onnx,p.vnnlib,1\n./m.onnx,p.vnnlib,30\n")
    code, _, err = run(capsys, "verify-batch", tmp_path / "inst.csv")
    assert code == 1 and "inst.csv:2: repeats the model and property of line 1" in err
