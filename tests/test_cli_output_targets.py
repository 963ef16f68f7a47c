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
