"""The command-line contract of docs/cli.md, for every registered command.

Every command is documented there with a runnable example and the keys of its JSON; the
example runs, its --json output parses and has exactly those keys, --help works and reads
naturally, bad input exits 1 with one line naming the culprit, and partial answers say so.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from conftest import run_cli as run

from relulab.examples import example_path

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def _rows() -> dict[str, tuple[list[str], set[str] | None, bool]]:
    """command -> (example argv, documented keys or None, output is a list)."""
    text = DOC.read_text()
    table = text[text.index("<!-- contract"):]
    rows = {}
    for line in table.splitlines():
        m = re.match(r"\|\s*([\w-]+)\s*\|\s*`relulab ([^`]*)`\s*\|\s*(.*?)\s*\|\s*$", line)
        if not m:
            continue
        cmd, example, keys = m.groups()
        argv = shlex.split(example)
        assert argv[0] == cmd, line
        if keys.startswith("(no JSON"):
            rows[cmd] = (argv, None, False)
        elif keys.startswith("a list of {"):
            rows[cmd] = (argv, set(k.strip() for k in keys[len("a list of {"):-1].split(",")), True)
        else:
            rows[cmd] = (argv, {k.strip() for k in keys.split(",")}, False)
    return rows


ROWS = _rows()


def _commands() -> set[str]:
    from relulab.cli import app

    names = {c.name or c.callback.__name__ for c in app.registered_commands}
    names |= {g.name for g in app.registered_groups}
    return names


def test_every_command_is_documented():
    assert _commands() == set(ROWS), "docs/cli.md and the registered commands differ"


def _prepare(tmp_path: Path) -> None:
    for name in ("tiny_2d.onnx", "tiny_2d_holds.vnnlib"):
        (tmp_path / name).write_bytes(example_path(name).read_bytes())
    (tmp_path / "instances.csv").write_text("tiny_2d.onnx,tiny_2d_holds.vnnlib,10\n")


@pytest.mark.parametrize("cmd", sorted(c for c in ROWS if ROWS[c][1] is not None))
def test_json_has_the_documented_keys(cmd, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _prepare(tmp_path)
    argv, keys, is_list = ROWS[cmd]
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    d = json.loads(out)
    if is_list:
        assert isinstance(d, list) and d and all(set(item) == keys for item in d)
    else:
        assert set(d) == keys


@pytest.mark.parametrize("cmd", sorted(ROWS))
def test_help_works_and_reads_naturally(cmd, capsys):
    code, out, _ = run(capsys, cmd, "--help")
    assert code == 0 and "Usage: relulab " + cmd in " ".join(out.split())
    assert "<bool>" not in out and not re.search(r"\{[a-z_]+\}", out)


def _bad(argv: list[str]) -> list[str] | None:
    """The example with its first file argument replaced by a missing file."""
    for i, a in enumerate(argv):
        if a.startswith("example:") or a.endswith(".csv"):
            return [*argv[:i], "missing" + Path(a.split(":")[-1]).suffix, *argv[i + 1:]]
    return None


@pytest.mark.parametrize("cmd", sorted(c for c in ROWS if _bad(ROWS[c][0])))
def test_missing_input_file_is_one_line_exit_1(cmd, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = _bad(ROWS[cmd][0])
    code, out, err = run(capsys, *bad)
    missing = next(a for a in bad if a.startswith("missing"))
    assert code == 1 and missing in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("argv", [["construct", "max", "--n", "0"], ["construct", "nope"], ["examples", "path", "nope"],
                                  ["range", "example:tiny_2d.onnx", "--time-limit", "-1"],
                                  ["regions", "example:tiny_2d.onnx", "--max-regions", "0"]])
def test_bad_values_exit_1(argv, capsys):
    code, _, err = run(capsys, *argv)
    assert code == 1 and len(err.strip().splitlines()) == 1


def test_usage_errors_exit_2(capsys):
    code, _, _ = run(capsys, "info")                       # missing argument
    assert code == 2
    code, _, _ = run(capsys, "range", "example:tiny_2d.onnx", "--time-limit", "soon")
    assert code == 2


def test_partial_regions_are_labelled(capsys):
    code, out, _ = run(capsys, "regions", "example:tiny_2d.onnx", "--max-regions", "3", "--json")
    d = json.loads(out)
    assert code == 0 and d["partial"] is True and d["regions"] == 3
    code, out, _ = run(capsys, "regions", "example:tiny_2d.onnx", "--max-regions", "3")
    assert "(partial)" in out
    code, out, _ = run(capsys, "regions", "example:tiny_2d.onnx", "--count", "--max-regions", "3", "--json")
    d = json.loads(out)
    assert d["partial"] is True and d["regions"] == 3
    code, out, _ = run(capsys, "regions", "example:tiny_2d.onnx", "--count", "--json")
    d = json.loads(out)
    assert d["partial"] is False and d["regions"] > 3


def test_plot_that_cannot_be_drawn_is_refused_before_enumeration(tmp_path, capsys, monkeypatch):
    import numpy as np

    import relulab.regions as R
    from relulab import Network
    from relulab.io import save_model

    save_model(Network([np.ones((4, 3)), np.ones((1, 4))], [np.zeros(4), np.zeros(1)]),
               tmp_path / "d3.npz")
    calls = []
    monkeypatch.setattr(R, "enumerate", lambda *a, **k: calls.append(1))
    code, _, err = run(capsys, "regions", tmp_path / "d3.npz", "--plot", tmp_path / "p.png")
    assert code == 1 and "--plot" in err and not calls and not (tmp_path / "p.png").exists()
