"""`relulab construct`: every kind builds, saves, round-trips, and reports sizes as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from relulab import construct as C
from relulab.cli import app
from relulab.io import load_model

runner = CliRunner()


def _run(args: list[str]) -> dict:
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


CASES = [
    (["max", "--n", "6"], C.max_n(6)),
    (["min", "--n", "5"], C.min_n(5)),
    (["sawtooth", "--depth", "4"], C.sawtooth(4)),
    (["tent"], C.tent()),
    (["square", "--m", "3"], C.yarotsky_square(3)),
    (["product", "--m", "2"], C.product(2)),
    (["monomial", "--k", "3", "--m", "2"], C.monomial(3, 2)),
    (["cpwl1d", "--breakpoints", "0,1/2,1", "--values", "0,1,0", "--left-slope", "-1"],
     C.cpwl_1d([0, C.maxmin.F("1/2"), 1], [0, 1, 0], -1, 0)),
    (["gate", "--op", "xor", "--k", "3"], C.compile_circuit(C.gate("XOR", 3))),
    (["dnf", "--terms", "1 -2; 2 3"], C.compile_circuit(C.dnf([[1, -2], [2, 3]], 3))),
    (["adder", "--bits", "3"], C.compile_circuit(C.ripple_carry_adder(3))),
    (["comparator", "--bits", "2"], C.compile_circuit(C.comparator(2))),
    (["sat-gadget", "--random", "5,12,3"], C.sat_gadget(C.random_3cnf(5, 12, 3), 5)),
    (["turing", "--machine", "binary-increment"],
     C.compile_turing_machine(C.binary_increment())),
]


@pytest.mark.parametrize("args, want", CASES, ids=[c[0][0] for c in CASES])
def test_construct_kinds_round_trip(args: list[str], want, tmp_path: Path) -> None:
    out = tmp_path / "net.npz"
    rep = _run(["construct", *args, "-o", str(out), "--json"])
    assert rep["hidden_widths"] == list(want.widths) and rep["exact"] is True
    assert rep["neurons"] == want.n_neurons
    back = load_model(out)
    assert back == want  # exact entries survive the native format


def test_construct_reports_facts(tmp_path: Path) -> None:
    rep = _run(["construct", "sawtooth", "--depth", "7", "--json"])
    assert rep["pieces_on_[0,1]"] == 128
    rep = _run(["construct", "square", "--m", "2", "--json"])
    assert rep["exact_max_error"]["max_abs_error"] == "1/64"
    rep = _run(["construct", "adder", "--bits", "2", "--json"])
    assert rep["exhaustive_check"]["ok"] is True
    net_file = tmp_path / "fa.net"
    net_file.write_text("input a b c\noutput s co\ns = XOR a b c\nco = MAJ a b c\n")
    rep = _run(["construct", "circuit", "--file", str(net_file), "--json"])
    assert rep["hidden_widths"] == [5] and rep["exhaustive_check"]["n_checked"] == 8
    cnf = tmp_path / "f.cnf"
    cnf.write_text("p cnf 3 2\n1 2 3 0\n-1 -2 -3 0\n")
    rep = _run(["construct", "sat-gadget", "--file", str(cnf), "--json"])
    assert rep["unsat"] == 0 and rep["neurons"] == 8
    lat = tmp_path / "abs.json"
    lat.write_text(json.dumps({"A": [[1], [-1]], "c": [0, 0], "groups": [[0], [1]]}))
    rep = _run(["construct", "lattice", "--file", str(lat), "--json"])
    assert rep["size_vs_published_bound"]["neurons"] <= rep["size_vs_published_bound"]["bound_neurons"]


@pytest.mark.parametrize(
    "args, msg",
    [
        (["construct", "nope"], "unknown construction 'nope'"),
        (["construct", "max"], "--n is required"),
        (["construct", "turing", "--machine", "zz"], "unknown machine 'zz'"),
        (["construct", "circuit", "--file", "/nonexistent.net"], "no such file"),
        (["construct", "cpwl1d", "--breakpoints", "0,a", "--values", "1,2"], "cannot read"),
        # an option the construction does not take is refused, naming what it takes
        (["construct", "max", "--n", "3", "--bits", "4"], "--bits does not apply (it takes --n, --hidden-layers)"),
        (["construct", "tent", "--depth", "2"], "--depth does not apply (it takes no options)"),
        (["construct", "sawtooth", "--depth", "2", "--left-slope", "1"], "--left-slope does not"),
    ],
)
def test_construct_errors(args: list[str], msg: str, capsys) -> None:
    from relulab.cli import main

    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 1
    assert msg in capsys.readouterr().err.replace("\n", " ")


def test_tour_section_runs() -> None:
    import io

    from rich.console import Console

    from relulab.cli.construct import tour

    buf = io.StringIO()
    tour(Console(file=buf, width=200))
    text = buf.getvalue()
    assert "64 linear pieces" in text and "accept" in text and "64/64" in text


def test_constructions_run_in_onnxruntime(tmp_path: Path) -> None:
    """An independent evaluator: the exported ONNX graph of a construction, in onnxruntime."""
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    import numpy as np

    try:
        from relulab.io.onnx import save_onnx  # noqa: F401
    except ImportError:
        pytest.skip("ONNX export is not available in this checkout")
    out = tmp_path / "saw.onnx"
    _run(["construct", "sawtooth", "--depth", "8", "-o", str(out), "--json"])
    sess = ort.InferenceSession(str(out))
    X = np.array([[j / 256] for j in range(257)], dtype=np.float64)
    dtype = np.float32 if sess.get_inputs()[0].type == "tensor(float)" else np.float64
    y = sess.run(None, {sess.get_inputs()[0].name: X.astype(dtype)})[0]
    assert np.array_equal(np.asarray(y, dtype=float).ravel(), np.arange(257) % 2)
    out = tmp_path / "adder.onnx"
    _run(["construct", "adder", "--bits", "3", "-o", str(out), "--json"])
    sess = ort.InferenceSession(str(out))
    import itertools

    bits = np.array(list(itertools.product((0, 1), repeat=6)), dtype=np.float64)
    S = np.asarray(sess.run(None, {sess.get_inputs()[0].name: bits.astype(dtype)})[0], dtype=float)
    a = bits[:, :3] @ [1, 2, 4]
    b = bits[:, 3:] @ [1, 2, 4]
    assert np.array_equal(S @ [1, 2, 4, 8], a + b)


def test_turing_from_json_file_and_run(tmp_path: Path) -> None:
    spec = {
        "name": "flip",
        "states": ["go", "stop"],
        "symbols": ["_", "0", "1"],
        "halting": ["stop"],
        "transitions": [["go", "0", "go", "1", "R"], ["go", "1", "go", "0", "R"],
                        ["go", "_", "stop", "_", "S"]],
    }
    f = tmp_path / "flip.json"
    f.write_text(json.dumps(spec))
    rep = _run(["construct", "turing", "--file", str(f), "--input", "0110100", "--json"])
    assert rep["run"]["tape"] == "1001011" and rep["run"]["agrees_with_simulator"]
    assert rep["run"]["steps"] == 8 and rep["hidden_layers"] == 3
    f.write_text(json.dumps({**spec, "transitions": [["go", "0", "go", "1", "X"]]}))
    res = runner.invoke(app, ["construct", "turing", "--file", str(f)])
    assert res.exit_code != 0
    from relulab.construct import machine_from_json
    from relulab.errors import FormatError

    with pytest.raises(FormatError, match="move must be L, R or S"):
        machine_from_json(f.read_text(), str(f))
    with pytest.raises(FormatError, match="invalid JSON"):
        machine_from_json("{", "m.json")


def test_every_construction_lists_only_known_options() -> None:
    from dataclasses import fields

    from relulab.cli.construct import FLAGS, KINDS, REGISTRY, Options, build

    names = {f.name for f in fields(Options)}
    assert set(FLAGS) == names and list(KINDS) == list(REGISTRY)
    for kind, c in REGISTRY.items():
        assert set(c.options) <= names, kind
    # every option is taken by some construction
    assert set().union(*(c.options for c in REGISTRY.values())) == names
    net, _ = build("max", n=3)
    assert net.input_dim == 3



def test_a_recurrent_turing_run_says_whether_it_halted(monkeypatch) -> None:
    # a run cut by the step limit (100,000) reported its last state as the final one
    import relulab.cli.construct as cc

    rep = _run(["construct", "turing", "--machine", "binary-increment", "--input", "1011", "--json"])
    assert rep["run"]["halted"] is True and rep["run"]["agrees_with_simulator"]
    monkeypatch.setattr(cc, "TURING_STEP_LIMIT", 3)
    rep = _run(["construct", "turing", "--machine", "binary-increment", "--input", "1011", "--json"])
    assert rep["run"]["halted"] is False and rep["run"]["steps"] == 3 and rep["run"]["step_limit"] == 3


def test_a_turing_run_stops_at_the_steps_asked_for(tmp_path: Path) -> None:
    # a machine that moves right forever ran 100,000 exact steps (200 s) with no way to stop it
    machine = {"name": "right-forever", "states": ["q"], "symbols": ["_", "1"], "halting": [],
               "transitions": [["q", "_", "q", "1", "R"], ["q", "1", "q", "1", "R"]]}
    path = tmp_path / "loop.json"
    path.write_text(json.dumps(machine))
    rep = _run(["construct", "turing", "--file", str(path), "--input", "1", "--steps", "40", "--json"])
    run = rep["run"]
    assert run["halted"] is False and run["steps"] == 40 and run["step_limit"] == 40
    assert run["agrees_with_simulator"] and run["tape"] == "1" * 40   # cells 0..39 written
    res = runner.invoke(app, ["construct", "turing", "--machine", "binary-increment", "--steps", "5"])
    assert res.exit_code != 0 and "--steps: applies to a recurrent run" in str(res.exception)


def test_a_float_file_of_an_exact_construction_says_it_is_rounded(tmp_path: Path) -> None:
    # max2h --n 5 has weights like 4/15: the .onnx file holds them rounded, and differs from
    # max (read back exactly), yet the report said only "exact" and "saved to"
    from fractions import Fraction

    from relulab.io import load_model

    rep = _run(["construct", "max2h", "--n", "5", "-o", str(tmp_path / "m5.onnx"), "--json"])
    x = [Fraction(v) for v in (-3, -2, -5, -2, 3)]
    assert rep["saved_exact"] is False
    assert load_model(tmp_path / "m5.onnx").exact()(x)[0] != max(x)    # the independent fact
    rep = _run(["construct", "max2h", "--n", "5", "-o", str(tmp_path / "m5.npz"), "--json"])
    assert rep["saved_exact"] is True and load_model(tmp_path / "m5.npz").exact()(x)[0] == max(x)
    res = runner.invoke(app, ["construct", "max2h", "--n", "5", "-o", str(tmp_path / "m5.onnx")])
    assert res.exit_code == 0 and "weights rounded to float64" in res.output
