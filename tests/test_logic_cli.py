"""`relulab formula` and `relulab from-formula`: output, JSON, round trip, one-line errors."""

from __future__ import annotations

import json
from fractions import Fraction as F

import numpy as np
from typer.testing import CliRunner

from relulab import Network
from relulab.cli import app
from relulab.io import load_model, save_model
from relulab.logic import evaluate, parse

runner = CliRunner()


def test_formula_command_prints_the_graph_and_json(tmp_path):
    p = tmp_path / "n.npz"
    save_model(Network([[[1, 1], [1, -1]], [[1, 1]]], [[-1, 0], [0]]), p)
    res = runner.invoke(app, ["formula", str(p), "--simplify"])
    assert res.exit_code == 0, res.output
    assert "L0.1 = x1 ⊙ x2" in res.stdout and "algebra MV" in res.stdout
    res = runner.invoke(app, ["formula", str(p), "--json", "--flat"])
    d = json.loads(res.stdout)
    assert d["algebra"] == "MV" and d["widths"] == [2, 2]
    # the flat formulas, read back, give the network's output exactly
    net = load_model(p).exact()
    phis = [parse(t) for t in d["flat"]]
    for a in range(4):
        for b in range(4):
            x = [F(a, 3), F(b, 3)]
            y = sum(F(c) * evaluate(phi, x) for c, phi in zip(d["readout"][0], phis, strict=False)) + F(d["offset"][0])
            assert y == net(np.array(x, dtype=object))[0]


def test_from_formula_writes_the_network(tmp_path):
    out = tmp_path / "f.npz"
    res = runner.invoke(app, ["from-formula", "x1 -> x2", "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["n_neurons"] == 1
    net = load_model(out).exact()
    for a in range(5):
        for b in range(5):
            x = [F(a, 4), F(b, 4)]
            assert net(np.array(x, dtype=object))[0] == min(F(1), 1 - x[0] + x[1])


def test_bad_formulas_are_one_line_errors(tmp_path):
    from relulab.cli import main

    out = str(tmp_path / "f.npz")
    for args, needle in [(["from-formula", "x1 -> (x2", "-o", out], "column 10"),
                         (["from-formula", "x1 + x3", "--inputs", "2", "-o", out], "x3")]:
        res = runner.invoke(app, args)
        assert res.exit_code != 0
        try:
            main(args)
        except SystemExit as e:
            assert e.code == 1
        assert needle in str(res.exception)


def test_formula_simplify_is_time_limited_and_says_so(tmp_path, monkeypatch):
    import importlib
    import types

    from relulab.logic import simplify
    from relulab.logic.simplify import simplify_until

    p = tmp_path / "n.npz"
    save_model(Network([[[1, 1], [1, -1]], [[1, 1]]], [[-1, 0], [0]]), p)
    full = json.loads(runner.invoke(app, ["formula", str(p), "--simplify", "--json"]).stdout)
    assert full["simplified"] == "complete"
    # a clock far past any deadline: the time limit is spent before the first round ends
    monkeypatch.setattr(importlib.import_module("relulab.logic.simplify"), "time",
                        types.SimpleNamespace(monotonic=lambda: 1e12))
    cut = runner.invoke(app, ["formula", str(p), "--simplify", "--json", "--time-limit", "5"])
    assert cut.exit_code == 0, cut.output
    d = json.loads(cut.stdout)
    assert d["simplified"] == "partial (time limit)"
    plain = json.loads(runner.invoke(app, ["formula", str(p), "--json"]).stdout)
    assert d["layers"] == plain["layers"]                     # nothing half-rewritten
    phi = parse("¬¬x1 ⊕ 0")
    assert simplify_until(phi, 0.0) == (phi, False)           # a deadline already past
    assert simplify_until(phi, None)[0] == simplify(phi)
    assert "simplification partial" in runner.invoke(app, ["formula", str(p), "--simplify"]).stdout


def test_from_formula_says_when_a_float_format_rounded_the_weights(tmp_path):
    # δ3 needs the weight 1/3: .onnx holds its float64 rounding, .npz the exact rational
    for suffix, exact in ((".onnx", False), (".npz", True)):
        out = tmp_path / f"d3{suffix}"
        res = runner.invoke(app, ["from-formula", "δ3(x1)", "-o", str(out), "--json"])
        assert res.exit_code == 0, res.output
        assert json.loads(res.stdout)["saved_exact"] is exact
        back = load_model(out)
        assert (back.exact()([F(1)])[0] == F(1, 3)) is exact
        res = runner.invoke(app, ["from-formula", "δ3(x1)", "-o", str(out)])
        assert ("rounded to float64" in res.stdout) is not exact


def test_formula_time_limit_covers_the_extraction(tmp_path):
    # the extraction ran without a clock (a 1,797-layer network took 56 s; aud_log5 #5)
    from relulab.logic import to_network

    n = 80
    lines = ["t1 := x1"] + [f"t{k} := (t{k-1} + t{k-1}) & ~(t{k-1} * t{k-1})" for k in range(2, n + 1)]
    p = tmp_path / "tent.npz"
    save_model(to_network(parse("\n".join(lines + [f"t{n}"]))), p)
    res = runner.invoke(app, ["formula", str(p), "--time-limit", "0.001"])
    assert res.exit_code == 1 and "time limit ended the extraction" in str(res.exception)
    assert runner.invoke(app, ["formula", str(p), "--json"]).exit_code == 0
