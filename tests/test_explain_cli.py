"""The `relulab explain` command: why, why not, rules; JSON against the library; errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from relulab import Box, Network
from relulab.cli import main
from relulab.explain import decision_rules, why_not
from relulab.io import save_model


def _run(capsys, args):
    try:
        main(args)
        code = 0
    except SystemExit as e:
        code = e.code
    return code, capsys.readouterr()


@pytest.fixture()
def model(tmp_path):
    rng = np.random.default_rng(1)
    net = Network([rng.normal(size=(8, 2)), rng.normal(size=(8, 8)) / 3, rng.normal(size=(3, 8))],
                  [rng.normal(size=8) * 0.3, rng.normal(size=8) * 0.3, np.zeros(3)])
    p = tmp_path / "m.npz"
    save_model(net, p)
    names = tmp_path / "names.txt"
    names.write_text("speed\ngap\n")
    return net, str(p), str(names)


def test_why_not_json_matches_library(model, capsys):
    net, p, names = model
    code, out = _run(capsys, ["explain", p, "--x", "0.2,-0.4", "--why-not", "0", "--norm", "l2",
                              "--features", names, "--json"])
    assert code == 0
    d = json.loads(out.out)
    r = why_not(net, [0.2, -0.4], 0, Box([-1, -1], [1, 1]), norm="l2")
    assert d["status"] == r.status == "optimal"
    assert d["distance"] == pytest.approx(r.distance, rel=1e-9)
    assert {c["feature"] for c in d["changed"]} <= {"speed", "gap"}


def test_why_text_and_rules_json(model, capsys):
    net, p, names = model
    code, out = _run(capsys, ["explain", p, "--x", "0.2,-0.4", "--features", names])
    assert code == 0 and "decision rule" in out.out and "speed" in out.out
    code, out = _run(capsys, ["explain", p, "--rules", "--box", "-1:1", "--json"])
    assert code == 0
    d = json.loads(out.out)
    assert d["n_rules"] == decision_rules(net, Box([-1, -1], [1, 1])).n_rules
    code, out = _run(capsys, ["explain", p, "--rules", "--markdown"])
    assert code == 0 and out.out.startswith("### Decision rules")


def test_immutable_feature_and_errors(model, capsys):
    net, p, names = model
    code, out = _run(capsys, ["explain", p, "--x", "0.2,-0.4", "--why-not", "1", "--features", names,
                              "--immutable", "gap", "--json"])
    assert code == 0
    d = json.loads(out.out)
    if d["counterfactual"] is not None:
        assert d["counterfactual"][1] == -0.4
    for args, msg in ((["--x", "3,0"], "outside the domain"),
                      (["--x", "0.2,-0.4", "--why-not", "1", "--immutable", "speedy"], "unknown feature"),
                      (["--x", "0.2,-0.4", "--why-not", "2"], "already the decision"),
                      (["--x", "0.2,-0.4", "--why-not", "1", "--norm", "l7"], "unknown norm"),
                      ([], "give --x")):
        code, out = _run(capsys, ["explain", p, *args])
        assert code == 1 and msg in out.err and len(out.err.strip().splitlines()) == 1


@pytest.mark.parametrize("drop_witnesses", [False, True])
def test_markdown_says_what_the_text_and_json_say(model, capsys, monkeypatch, drop_witnesses):
    # the Markdown wrote "minimal" for every rule (JSON: minimal false), left out "partial"
    # and the reason there was no rule, and the why-not text doubled "unknown: unknown:"
    import dataclasses

    import relulab.explain as E

    net, p, names = model
    real_why = E.why
    seen = {}

    def why(*a, **k):
        r = real_why(*a, **k)
        if drop_witnesses:  # a rule without its witnesses is not shown minimal
            r = dataclasses.replace(r, rule=dataclasses.replace(r.rule, witnesses=()))
        seen["minimal"] = r.rule.minimal
        return r

    monkeypatch.setattr(E, "why", why)
    code, out = _run(capsys, ["explain", p, "--x", "0.2,-0.4", "--markdown"])
    assert code == 0, out.err
    assert seen["minimal"] is not drop_witnesses
    assert ("(minimal, certified" in out.out) == seen["minimal"]
    assert ("(not shown minimal, certified" in out.out) == (not seen["minimal"])
    monkeypatch.setattr(E, "why", real_why)

    def stopped(*a, **k):
        r = real_why(*a, **k)
        return dataclasses.replace(r, rule=None, info={**r.info, "stopped": "the radius search ended "
                                                       "at the time limit"})

    monkeypatch.setattr(E, "why", stopped)
    code, out = _run(capsys, ["explain", p, "--x", "0.2,-0.4", "--markdown"])
    assert code == 0 and "**Partial:** the radius search ended at the time limit" in out.out
    assert "No decision rule: no certified rule" in out.out


def test_why_not_unknown_is_not_doubled(model, capsys, monkeypatch):
    import dataclasses

    import relulab.explain as E

    net, p, names = model
    real = E.why_not

    def unknown(*a, **k):
        r = real(*a, **k)
        return dataclasses.replace(r, status="unknown", exists=None, counterfactual=None, distance=None)

    monkeypatch.setattr(E, "why_not", unknown)
    for extra in ([], ["--markdown"]):
        code, out = _run(capsys, ["explain", p, "--x", "0.2,-0.4", "--why-not", "0", *extra])
        assert code == 0 and "unknown" in out.out and "unknown: unknown" not in out.out
        assert "**unknown**: unknown" not in out.out


def test_small_cli_errors_name_their_flag_and_stay_one_line(model, capsys, tmp_path):
    # --inputs 0 said "parse: ...", --method foo "to_formula: ...", --quantiles "" showed a
    # numpy repr, extract --scale 1e300 leaked a RuntimeWarning, and one --features name
    # was read as a file name
    net, p, names = model
    cases = [
        (["from-formula", "x1", "-o", str(tmp_path / "a.npz"), "--inputs", "0"], "--inputs must be"),
        (["formula", "example:xor.npz", "--method", "foo"], "--method: unknown method 'foo'"),
        (["fit-quantile", "example:data_1d.csv", "--quantiles", ""], "--quantiles: no numbers given"),
    ]
    for argv, msg in cases:
        code, out = _run(capsys, argv)
        assert code == 1 and msg in out.err and len(out.err.strip().splitlines()) == 1, (argv, out.err)
    # at 1e300 the fidelity MILPs fail numerically ("unknown", no longer an error): the
    # answer is partial, never "complete", and no numpy warning leaks
    code, out = _run(capsys, ["extract", "example:tiny_2d.onnx", "--scale", "1e300", "--json"])
    assert code == 0 and json.loads(out.out)["status"] != "complete" and out.err == ""
    one = Network([[[1.0]], [[1.0]]], [[0.0], [-0.5]])
    q = tmp_path / "one.npz"
    save_model(one, q)
    code, out = _run(capsys, ["explain", str(q), "--x", "0.1", "--features", "speed", "--json"])
    assert code == 0 and "speed" in out.out


def test_options_of_another_mode_are_refused_not_dropped(model, capsys):
    # --norm l3 and --immutable zz without --why-not, and --x 9,9 with --rules, ran with
    # exit 0 and were silently ignored (aud_cli5 #4); in their own mode they still work
    net, p, names = model
    cases = [
        (["--x", "0.1,0.2", "--norm", "linf"], "--norm applies to --why-not only"),
        (["--x", "0.1,0.2", "--immutable", "x1"], "--immutable applies to --why-not only"),
        (["--rules", "--x", "9,9"], "--x does not apply to --rules"),
        (["--rules", "--why-not", "1"], "--why-not does not apply to --rules"),
    ]
    for extra, msg in cases:
        code, out = _run(capsys, ["explain", p, *extra])
        assert code == 1 and msg in out.err and len(out.err.strip().splitlines()) == 1, (extra, out.err)
    code, out = _run(capsys, ["explain", p, "--x", "0.1,0.2", "--why-not", "1", "--norm", "linf", "--json"])
    assert code == 0
    got = json.loads(out.out)
    lib = why_not(net, np.array([0.1, 0.2]), 1, Box(-np.ones(2), np.ones(2)), norm="linf")
    assert got["distance"] == pytest.approx(lib.distance, rel=1e-9, abs=1e-12)
