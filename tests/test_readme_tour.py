"""README's tour runs as written: the Python block executes, every `relulab` line exits 0,
and the shipped example files are what ``write_example_files`` makes."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli as run

from relulab.examples import example_files, resolve, write_example_files
from relulab.io import load_model
from relulab.io.vnnlib import load_vnnlib

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks(lang: str) -> list[str]:
    text = README.read_text()
    tour = text[text.index("## A tour"):text.index("## What is in it")]
    return re.findall(rf"```{lang}\n(.*?)```", tour, flags=re.S)


def test_readme_python_tour_runs():
    (code,) = _blocks("python")
    exec(compile(code, "README.md", "exec"), {})


def _tour_lines() -> list[list[str]]:
    (block,) = _blocks("bash")
    lines = [ln.split("#")[0].strip() for ln in block.splitlines()]
    return [shlex.split(ln)[1:] for ln in lines if ln.startswith("relulab ")]


@pytest.mark.parametrize("args", _tour_lines(), ids=lambda a: " ".join(a[:2]))
def test_readme_cli_tour_line_runs(args, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *args)
    assert code == 0, err
    assert out.strip()
    for a, b in zip(args, args[1:], strict=False):
        if a in ("-o", "--plot"):
            assert (tmp_path / b).stat().st_size > 0


def test_shipped_examples_are_reproducible(tmp_path):
    written = {p.name for p in write_example_files(tmp_path)}
    assert written == set(example_files())
    for name, shipped in example_files().items():
        fresh = tmp_path / name
        if shipped.suffix in (".npz", ".onnx", ".nnet"):
            a, b = load_model(shipped), load_model(fresh)
            X = np.random.default_rng(0).uniform(-1, 1, size=(64, a.input_dim))
            assert np.array_equal(a.float()(X), b.float()(X))
        elif shipped.suffix == ".vnnlib":
            pa, pb = load_vnnlib(shipped), load_vnnlib(fresh)
            assert all(np.array_equal(ca.input_box.lo, cb.input_box.lo)
                       and all(np.array_equal(ta.d, tb.d) for ta, tb in zip(ca.unsafe, cb.unsafe, strict=True))
                       for ca, cb in zip(pa.cases, pb.cases, strict=True))
        else:
            assert shipped.read_text() == fresh.read_text()


def test_example_properties_say_what_they_claim():
    from relulab.verify import verify

    net = load_model(resolve("example:tiny_2d.onnx"))
    assert verify(net, load_vnnlib(resolve("example:tiny_2d_holds.vnnlib")), timeout=60).status == "holds"
    r = verify(net, load_vnnlib(resolve("example:tiny_2d_violated.vnnlib")), timeout=60)
    assert r.status == "violated"


def test_unknown_example_is_one_line_error(capsys):
    code, _, err = run(capsys, "info", "example:nope.onnx")
    assert code == 1 and "no shipped example" in err and len(err.strip().splitlines()) == 1
