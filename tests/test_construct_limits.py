"""Constructions refuse sizes they cannot build in reasonable time and memory, at once
and in one line, instead of running for minutes or being killed (the max/min trees
already did; the audit found sawtooth --depth 10**7, gate XOR of 10**5 inputs, adder
--bits 10**5 and others running on or exhausting memory)."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from relulab.construct import (
    ConstructionError,
    compile_circuit,
    gate,
    hierarchy_network,
    monomial,
    random_3cnf,
    refinement_network,
    ripple_carry_adder,
    sawtooth,
)
from relulab.construct._builder import MAX_BUILD_LAYERS, MAX_BUILD_NEURONS, Builder
from relulab.limits import ResourceLimitError


@pytest.mark.parametrize("build", [
    lambda: sawtooth(10**7),
    lambda: monomial(10**5, 3),
    lambda: hierarchy_network(2, 10**7),
    lambda: refinement_network([1, 1], 10**5),
    lambda: random_3cnf(5, 2 * 10**7, 0),
    lambda: compile_circuit(ripple_carry_adder(10**5)),
    lambda: compile_circuit(gate("XOR", 10**5)),
])
def test_huge_constructions_are_refused_before_the_work(build):
    with pytest.raises((ConstructionError, ResourceLimitError), match="at most|memory budget"):
        build()


def test_the_builder_stops_at_its_caps_whatever_the_construction():
    b = Builder(1)
    (x,) = b.inputs()
    with pytest.raises(ConstructionError, match=f"at most {MAX_BUILD_LAYERS}"):
        for _ in range(MAX_BUILD_LAYERS + 1):
            x = b.relu(x)
            b.close()
    b = Builder(1)
    (x,) = b.inputs()
    with pytest.raises(ConstructionError, match=f"at most {MAX_BUILD_NEURONS}"):
        for _ in range(MAX_BUILD_NEURONS + 1):
            b.relu(x)


def test_sizes_below_the_caps_still_build_and_are_right():
    net = sawtooth(12)
    assert net.n_hidden_layers == 12
    c = ripple_carry_adder(6)
    assert compile_circuit(c).n_hidden_layers == 6


def test_cli_refine_with_many_steps_skips_only_the_piece_count(capsys):
    # --steps 40 built its network in a second, then counted the iterate's ~2^40 pieces
    code, out, err = run_cli(capsys, "construct", "refine", "--mask", "chaikin", "--steps", "40", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert str(d["iterate_pieces"]).startswith("not counted") and "wide_network_neurons" not in d
    assert d["hidden_layers"] == 3 * 40 + 3
    code, out, _ = run_cli(capsys, "construct", "refine", "--mask", "chaikin", "--steps", "3", "--json")
    assert code == 0 and json.loads(out)["iterate_pieces"] == 3 * 2**3 - 1


def test_cli_subdivision_takes_named_masks(capsys):
    code, out, err = run_cli(capsys, "construct", "subdivision", "--mask", "chaikin", "--steps", "2", "--json")
    assert code == 0, err
    code2, out2, _ = run_cli(capsys, "construct", "subdivision", "--mask", "1/4,3/4,3/4,1/4", "--steps", "2", "--json")
    assert code2 == 0 and json.loads(out)["breakpoints"] == json.loads(out2)["breakpoints"] == 12


def test_cli_refine_reports_the_float64_error_against_the_exact_iterate(capsys):
    # the big-M constants grow like (2 rho)^k: the ONNX export of four-point k = 6 is off
    # the exact iterate by ~5e-12, which the report did not say
    from fractions import Fraction

    import numpy as np

    from relulab.construct import MASKS, evaluate_cpwl, refinement_network, subdivision_iterate

    code, out, err = run_cli(capsys, "construct", "refine", "--mask", "four-point", "--steps", "6", "--json")
    assert code == 0, err
    text = json.loads(out)["float64_max_error"]
    reported = float(text.split()[0])
    assert "sampled" in text and "257 random points" in text
    # independently: the float64 network against the exact iterate at other points
    bp, vals = subdivision_iterate(MASKS["four-point"], [0, 1, 2], [0, 1, 0], 6)
    X = np.random.default_rng(1).uniform(-0.5, float(bp[-1]) + 0.5, 400)
    f = refinement_network(MASKS["four-point"], 6).float()
    err2 = np.max(np.abs(f(X[:, None]).ravel() - [float(evaluate_cpwl(bp, vals, Fraction(x))) for x in X]))
    assert 0 < reported < 1e-9 and 0 < err2 < 1e-9
    assert reported / 100 < err2 < reported * 100  # the same order of magnitude


@pytest.mark.parametrize("n,h,message", [
    (20000, 9, "describes max of at most 2048 inputs"),  # listed ~n^2 nodes for minutes first
    (3, 99999999999, "relulab builds at most 500"),    # looped H times: MemoryError
    (5, 2000, "relulab builds at most 500"),           # RecursionError
])
def test_max_deep_refuses_sizes_it_cannot_build_before_listing_nodes(n, h, message):
    from relulab.construct import max_deep

    with pytest.raises(ConstructionError, match=message):
        max_deep(n, h)


def test_max_deep_dense_cap_refuses_early_and_never_below_the_real_first_layer(capsys, tmp_path):
    # `construct max --n 2000 --hidden-layers 7` listed 2.2 million nodes (25-55 s) before
    # refusing to expand them; the cap now stops at the first layer's count, and it is a
    # lower bound: a cap equal to the real first-layer weight count never refuses
    from relulab.construct import max_deep

    for n, h in [(9, 3), (12, 3), (20, 3), (33, 4), (40, 5)]:
        dm = max_deep(n, h)
        first = n * dm.widths[0]
        assert max_deep(n, h, max_dense_weights=first).widths == dm.widths
        with pytest.raises(ResourceLimitError, match="dense weights in its first layer"):
            max_deep(n, h, max_dense_weights=n * 2)  # fewer than 2 pair neurons: refused
    with pytest.raises(ResourceLimitError, match="more than 20,000,000 dense weights"):
        max_deep(2000, 7, max_dense_weights=2 * 10**7)
    code, out, err = run_cli(capsys, "construct", "max", "--n", "2000", "--hidden-layers", "7", "-o", str(tmp_path / "m.onnx"))
    assert code == 1 and "more than 20,000,000 dense weights" in err and "eval_max_deep" in err


@pytest.mark.parametrize("n", [32, 64])
def test_max_deep_at_the_issue_sizes_still_builds_exactly(n):
    # a description for eval_max_deep, not a network: 8.9 million neurons at n = 32 is fine
    from fractions import Fraction

    from relulab.construct import eval_max_deep, max_deep

    dm = max_deep(n)
    x = [Fraction((7 * i) % n - 30, 1 + i % 5) for i in range(n)]
    assert eval_max_deep(dm, [x]) == [max(x)]


def test_max_messages_and_depth_report_name_the_stored_two_hidden_layer_solutions(capsys):
    # n = 9, 10 have certified two-hidden-layer networks (per orbit) but the report said
    # "fewest 3" and the error listed only 3..8; eval_max_orbits' errors said eval_max_pairs
    from relulab.construct import eval_max_orbits, max_n_two_hidden, stored_max_orbits

    with pytest.raises(ConstructionError, match=r"per orbit, too large for matrices: \[9, 10\]"):
        max_n_two_hidden(11)
    for n in (9, 10):
        code, out, err = run_cli(capsys, "construct", "max", "--n", str(n), "--hidden-layers", "3", "--json")
        assert code == 0, err
        assert json.loads(out)["fewest_hidden_layers_here"] == 2
    with pytest.raises(ConstructionError, match="^eval_max_orbits: inputs over a common denominator"):
        eval_max_orbits(9, stored_max_orbits(9), [[2**45] + [0] * 8])
