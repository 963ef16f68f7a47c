"""Boolean circuits compiled to one network: exhaustive exact checks, sizes, netlist errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from relulab.construct import (
    ExactEvaluator,
    check_circuit,
    comparator,
    compile_circuit,
    dnf,
    gate,
    parse_circuit,
    ripple_carry_adder,
)
from relulab.errors import FormatError


def _all_inputs(n: int) -> np.ndarray:
    return np.array(list(itertools.product((0, 1), repeat=n)), dtype=object).reshape(-1, n)


TRUTH = {
    "AND": lambda b: int(all(b)),
    "OR": lambda b: int(any(b)),
    "NAND": lambda b: 1 - int(all(b)),
    "NOR": lambda b: 1 - int(any(b)),
    "XOR": lambda b: sum(b) % 2,
    "XNOR": lambda b: 1 - sum(b) % 2,
    "MAJ": lambda b: int(sum(b) > len(b) / 2),
    "THR2": lambda b: int(sum(b) >= 2),
}
NEURONS = {"AND": 1, "OR": 1, "NAND": 1, "NOR": 1, "MAJ": 2, "THR2": 2}


@pytest.mark.parametrize("op", sorted(TRUTH))
@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_gates_exhaustive(op: str, k: int) -> None:
    if op == "THR2" and k < 2:
        with pytest.raises(FormatError, match="THR2 needs at least 2 inputs"):
            gate(op, k)
        return
    net = compile_circuit(gate(op, k))
    X = _all_inputs(k)
    Y = net(X)
    assert [int(y) for y in Y[:, 0]] == [TRUTH[op](row) for row in X.tolist()]
    assert net.widths == ((k if op in ("XOR", "XNOR") else NEURONS[op]),)


def test_not_and_buf_are_affine() -> None:
    for op, f in (("NOT", lambda b: 1 - b), ("BUF", lambda b: b)):
        net = compile_circuit(gate(op))
        assert net.n_hidden_layers == 0
        assert net([[0], [1]])[:, 0].tolist() == [f(0), f(1)]


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_ripple_carry_adder(n: int) -> None:
    c = ripple_carry_adder(n)
    net = compile_circuit(c)
    assert net.n_hidden_layers == n
    X = _all_inputs(2 * n)
    Y = ExactEvaluator(net)(X)
    for row, y in zip(X.tolist(), Y, strict=True):
        a = sum(bit << i for i, bit in enumerate(row[:n]))
        b = sum(bit << i for i, bit in enumerate(row[n:]))
        assert sum(int(v) << i for i, v in enumerate(y)) == a + b
        assert all(v in (0, 1) for v in y)
    assert check_circuit(c, net).ok


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_comparator(n: int) -> None:
    net = compile_circuit(comparator(n))
    assert net.n_hidden_layers == (3 if n > 1 else 2)
    X = _all_inputs(2 * n)
    Y = ExactEvaluator(net)(X)
    for row, y in zip(X.tolist(), Y, strict=True):
        a = sum(bit << i for i, bit in enumerate(row[:n]))
        b = sum(bit << i for i, bit in enumerate(row[n:]))
        assert [int(v) for v in y] == [int(a > b), int(a == b), int(a < b)]


@pytest.mark.parametrize("seed", range(5))
def test_random_dnf(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 8))
    terms = []
    for _ in range(int(rng.integers(1, 6))):
        vs = rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False) + 1
        terms.append([int(v) * int(rng.choice([-1, 1])) for v in vs])
    net = compile_circuit(dnf(terms, n))
    assert net.widths == (len(terms), 1)
    X = _all_inputs(n)
    Y = ExactEvaluator(net)(X)
    for row, y in zip(X.tolist(), Y, strict=True):
        want = any(all(row[abs(lit) - 1] == (1 if lit > 0 else 0) for lit in t) for t in terms)
        assert y[0] == int(want)


def test_netlist_text_round_trip_and_float_copy() -> None:
    text = """
    # full adder, statements out of order on purpose
    input a b cin
    output s cout
    cout = MAJ a b cin
    s = XOR t cin
    t = XOR a b
    """
    c = parse_circuit(text, "fa.net")
    net = compile_circuit(c)
    X = _all_inputs(3)
    for row, y in zip(X.tolist(), net.float()(np.array(X, dtype=float)), strict=True):
        assert list(y) == [sum(row) % 2, int(sum(row) >= 2)]
    again = parse_circuit(c.to_text())
    assert compile_circuit(again) == net


@pytest.mark.parametrize(
    "text, msg",
    [
        ("input a\noutput y\ny = FOO a", "x.net:3: unknown gate 'FOO'"),
        ("input a\noutput y\ny = AND a b", "x.net:3: signal 'b' is not defined"),
        ("input a\noutput y\ny = AND a z\nz = OR y a", "cycle"),
        ("input a\noutput y\ny = AND a\ny = OR a", "x.net:4: signal 'y' is defined twice"),
        ("input a\noutput y\ny AND a", "x.net:3: expected 'NAME = GATE ARG...'"),
        ("output y\ny = NOT y", "no 'input' line"),
        ("input a\noutput q\ny = NOT a", "output 'q' is not defined"),
        ("input a\noutput y\ny = NOT a a", "x.net:3: NOT takes one input"),
    ],
)
def test_netlist_errors(text: str, msg: str) -> None:
    with pytest.raises(FormatError, match=msg):
        parse_circuit(text, "x.net")


def test_malformed_numbers_are_one_construction_error() -> None:
    """NaN or inf where an exact number is needed, a float where an integer is, a float
    literal, an unreadable polynomial coefficient: one RelulabError each, naming it."""
    import re

    from relulab.construct import (
        comparator,
        cpwl_1d,
        dnf,
        max_n,
        max_of_mins,
        parse_polynomial,
        refinement_iterate,
        ripple_carry_adder,
        sat_gadget,
    )
    from relulab.errors import RelulabError

    nan = float("nan")
    cases = [
        (lambda: cpwl_1d([0, nan], [0, 1]), "nan"),
        (lambda: cpwl_1d([0, 1], [0, float("inf")]), "inf"),
        (lambda: max_of_mins([[nan]], [0], [[0]]), "nan"),
        (lambda: refinement_iterate([0.5, 1, 0.5], [0, nan, 2], [0, 1, 0], 1), "nan"),
        (lambda: max_n(2.5), "max_n: n must be an integer"),
        (lambda: ripple_carry_adder(2.5), "adder: n must be an integer"),
        (lambda: comparator(1.5), "comparator: n must be an integer"),
        (lambda: sat_gadget([(1.5, 2, 3)], 3), "literal 1.5"),
        (lambda: dnf([[1.5]], 2), "literal 1.5"),
        (lambda: parse_polynomial("1/0 x"), "column"),
        (lambda: parse_polynomial("1.5/2 x"), "column"),
    ]
    for fn, what in cases:
        with pytest.raises(RelulabError, match=re.escape(what)):
            fn()


@pytest.mark.parametrize("op", ["THR²", "THR٣"])
def test_a_threshold_gate_needs_ascii_digits(op: str) -> None:
    # "THR²" passed str.isdigit and then failed int() with a raw ValueError; "THR٣" (an
    # Arabic-Indic 3) was silently read as THR3
    with pytest.raises(FormatError, match="unknown gate"):
        gate(op, 3)
