"""Construct audit 6: memory estimates that count the exact coefficients and the float
copies, the radius beyond float64, and the square's exact error said when skipped
(aud_con6)."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from relulab.construct import comparator, compile_circuit, yarotsky_square
from relulab.limits import ResourceLimitError


def test_a_comparator_is_refused_from_its_arguments_before_the_work(monkeypatch):
    # a 1000-bit comparator reads ~10^6 arguments (0.95 GB measured at 1500 bits): it had
    # passed a check of 112 bytes an argument and then the budget, for minutes at 3000 bits
    monkeypatch.setenv("RELULAB_MEMORY_GB", "0.2")
    with pytest.raises(ResourceLimitError, match="compile_circuit"):
        compile_circuit(comparator(1000))
    # a small comparator still compiles, and is right on every input
    net = compile_circuit(comparator(3))
    for v in range(64):
        bits = [(v >> k) & 1 for k in range(6)]
        a = sum(b << k for k, b in enumerate(bits[:3]))
        b = sum(b << k for k, b in enumerate(bits[3:]))
        assert tuple(int(y) for y in net([bits])[0]) == (int(a > b), int(a == b), int(a < b))


def test_the_builder_counts_the_digits_of_its_coefficients(monkeypatch):
    # the 1/4^s read-out of a deep square holds m^2 / 4 bytes of digits (2.5 GB at m =
    # 100,000): counted only as references it passed the budget by 1.5 times
    # (m = 20,000: 23 MB of references, 50 MB of digits in the read-out)
    monkeypatch.setenv("RELULAB_MEMORY_GB", "0.04")
    with pytest.raises(ResourceLimitError, match="exact network"):
        yarotsky_square(20000)
    assert yarotsky_square(200).n_hidden_layers == 200


def test_refine_is_sized_with_its_float_copies(capsys, monkeypatch):
    monkeypatch.setenv("RELULAB_MEMORY_GB", "0.5")
    code, out, err = run_cli(capsys, "construct", "refine", "--mask", "four-point", "--steps", "100")
    assert code != 0 and "float copies" in err and "Traceback" not in err


def test_integral_radius_beyond_float64_is_named(capsys):
    code, out, err = run_cli(capsys, "construct", "integral", "--poly", "x^2", "--width", "8",
                             "--radius", "1e400")
    assert code != 0 and "radius" in err and "OverflowError" not in err


def test_the_square_says_when_its_exact_error_is_not_computed(capsys):
    code, out, _ = run_cli(capsys, "construct", "square", "--m", "12", "--json")
    assert code == 0
    assert "not computed" in json.loads(out)["exact_max_error"]
    code, out, _ = run_cli(capsys, "construct", "square", "--m", "3", "--json")
    # the exact error of m = 3 is 2^(-8), at a piece's midpoint
    assert json.loads(out)["exact_max_error"]["max_abs_error"] == "1/256"
