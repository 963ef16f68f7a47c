"""MV formulas: the textbook identities, parsing and printing, simplification."""

from __future__ import annotations

import random
from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from relulab.errors import RelulabError
from relulab.logic import (
    ONE,
    ZERO,
    FormulaError,
    FormulaSyntaxError,
    div,
    evaluate,
    impl,
    join,
    meet,
    neg,
    odot,
    oplus,
    parse,
    scal,
    simplify,
    to_network,
    to_text,
    truncated_affine,
    var,
)

rationals = st.fractions(min_value=0, max_value=1, max_denominator=50)
x, y, z = var(1), var(2), var(3)


def sig(t):
    return min(F(1), max(F(0), t))


@given(rationals, rationals, rationals)
def test_mv_axioms_on_rational_points(a, b, c):
    p = [a, b, c]

    def ev(phi):
        return evaluate(phi, p)

    # (MV1)-(MV6) of Chang's axiomatisation
    assert ev(oplus(x, oplus(y, z))) == ev(oplus(oplus(x, y), z))
    assert ev(oplus(x, y)) == ev(oplus(y, x))
    assert ev(oplus(x, ZERO)) == a
    assert ev(neg(neg(x))) == a
    assert ev(oplus(x, neg(ZERO))) == 1
    assert ev(oplus(neg(oplus(neg(x), y)), y)) == ev(oplus(neg(oplus(neg(y), x)), x))
    # x ⊕ ¬x = 1, x ⊙ ¬x = 0 and the derived operations' truth functions
    assert ev(oplus(x, neg(x))) == 1
    assert ev(odot(x, neg(x))) == 0
    assert ev(odot(x, y)) == max(F(0), a + b - 1)
    assert ev(join(x, y)) == max(a, b) == ev(oplus(odot(x, neg(y)), y))
    assert ev(meet(x, y)) == min(a, b) == ev(neg(join(neg(x), neg(y))))
    assert ev(impl(x, y)) == min(F(1), 1 - a + b) == ev(oplus(neg(x), y))
    # divisible and Riesz operations
    assert ev(div(3, x)) == a / 3
    assert ev(oplus(oplus(div(3, x), div(3, x)), div(3, x))) == a
    assert ev(scal(F(2, 7), x)) == F(2, 7) * a


def test_evaluate_checks_its_input():
    with pytest.raises(FormulaError, match="outside"):
        evaluate(x, [F(3, 2)])
    with pytest.raises(FormulaError, match="x3"):
        evaluate(oplus(x, z), [F(1, 2), F(1, 2)])
    with pytest.raises(FormulaError, match="non-rational"):
        evaluate(x, [float("nan")])
    with pytest.raises(FormulaError, match="Riesz scalar"):
        scal(float("nan"), x)


@pytest.mark.parametrize(
    "text, fn",
    [
        ("x1 ⊕ x2", lambda a, b: min(F(1), a + b)),
        ("x1 ⊙ x2", lambda a, b: max(F(0), a + b - 1)),
        ("x1 ∨ x2", max),
        ("x1 ∧ x2", min),
        ("x1 → x2", lambda a, b: min(F(1), 1 - a + b)),
    ],
)
def test_small_operations_are_their_known_small_networks(text, fn):
    phi = parse(text)
    net = to_network(phi)
    # max, min and truncated sums need exactly one ReLU (a + b - relu(a + b - 1), ...)
    assert net.n_neurons == 1 and net.widths == (1,)
    grid = [F(i, 6) for i in range(7)]
    for a in grid:
        for b in grid:
            v = net(np.array([a, b], dtype=object))[0]
            assert v == fn(a, b) == evaluate(phi, [a, b])


def test_truncated_affine_against_brute_force():
    rng = random.Random(0)
    for alg in ("MV", "divisible MV", "Riesz MV"):
        for _ in range(60):
            m = rng.randint(1, 3)
            if alg == "MV":
                ws = [rng.randint(-3, 3) for _ in range(m)]
                b = rng.randint(-3, 3)
            else:
                ws = [F(rng.randint(-9, 9), rng.randint(1, 5)) for _ in range(m)]
                b = F(rng.randint(-9, 9), rng.randint(1, 5))
            phi = truncated_affine(ws, b, alg)
            ops = {n.op for n in _nodes(phi)}
            assert ("div" in ops) <= (alg == "divisible MV")
            assert ("scal" in ops) <= (alg == "Riesz MV")
            for _ in range(8):
                p = [F(rng.randint(0, 12), 12) for _ in range(m)]
                assert evaluate(phi, p) == sig(sum(w * v for w, v in zip(ws, p, strict=False)) + b)


def _nodes(phi):
    from relulab.logic.formula import postorder

    return list(postorder(phi))


def _random_text(rng: random.Random, depth: int) -> str:
    if depth == 0 or rng.random() < 0.2:
        return rng.choice(["x1", "x2", "x3", "0", "1"])
    r = rng.random()
    if r < 0.15:
        return "~" + _random_text(rng, depth - 1)
    if r < 0.25:
        return f"d{rng.randint(1, 3)}({_random_text(rng, depth - 1)})"
    if r < 0.3:
        return "1/3@" + _random_text(rng, depth - 1)
    op = rng.choice(["+", "*", "|", "&", "->"])
    return f"({_random_text(rng, depth - 1)} {op} {_random_text(rng, depth - 1)})"


def test_print_parse_round_trip_and_simplify_keeps_truth_function():
    rng = random.Random(3)
    for _ in range(200):
        phi = parse(_random_text(rng, 5))
        assert parse(to_text(phi)) is phi
        assert parse(to_text(phi, ascii=True)) is phi
        s = simplify(phi)
        for _ in range(4):
            p = [F(rng.randint(0, 8), 8) for _ in range(3)]
            assert evaluate(s, p) == evaluate(phi, p)


def test_simplify_textbook_identities():
    assert simplify(parse("x1 ⊕ ¬x1")) is ONE
    assert simplify(parse("x1 ⊙ ¬x1")) is ZERO
    assert simplify(parse("¬¬x1")) is x
    assert simplify(parse("x1 ∨ (x1 ∧ x2)")) is x
    assert simplify(parse("x2 ⊕ x1")) is simplify(parse("x1 ⊕ x2"))
    assert simplify(parse("¬(¬x1 ⊕ ¬x2)")) is simplify(parse("x1 ⊙ x2"))
    assert simplify(parse("d2(d3(x1))")) is div(6, x)


@pytest.mark.parametrize(
    "text, col",
    [("x1 + ", 6), ("x1 + (x2", 9), ("x1 ++ x2", 5), ("x1 $ x2", 4), ("2", 1), ("x0", 1), ("x1 - x2", 4)],
)
def test_syntax_errors_give_the_column(text, col):
    with pytest.raises(FormulaSyntaxError) as e:
        parse(text)
    assert e.value.position == col
    assert f"column {col}" in str(e.value)
    assert "\n" not in str(e.value)
    assert isinstance(e.value, RelulabError)


def test_variable_beyond_n_is_one_clear_error():
    with pytest.raises(FormulaError, match="x4.*beyond the 2 input"):
        parse("x1 + x4", n_vars=2)
    with pytest.raises(FormulaError, match="x3 but the network has 2 input"):
        to_network(parse("x1 + x3"), n_inputs=2)


@pytest.mark.parametrize("text, col", [("1/0@x1", 1), ("0/0·x1", 1), ("x1 + 3/00·x2", 6)])
def test_a_zero_denominator_is_a_syntax_error(text, col):
    with pytest.raises(FormulaSyntaxError, match=f"column {col}: the number .* has a zero denominator"):
        parse(text)


def test_a_formula_on_too_many_inputs_is_refused_before_it_is_built():
    # x99999999 would build 10^8 input expressions (about 47 GB) and be killed by the
    # operating system; within a small budget it is one clear refusal instead.
    from relulab.limits import ResourceLimitError, memory_limit

    many = " ∨ ".join(f"(x{i} -> x{i + 1})" for i in range(1, 80))
    with memory_limit(2 * 2**20):
        with pytest.raises(ResourceLimitError, match="to_network"):
            to_network(parse("x1 -> x99999999"))
        # the inputs' expressions fit (2,000 inputs) but 79 first-layer rows of 2,000 do not
        with pytest.raises(ResourceLimitError, match="weight entries"):
            to_network(parse(many), 2000)
    assert to_network(parse(many), 2000).widths[0] >= 79  # the default budget builds it
    net = to_network(parse("x1 -> x2000"))  # within the default budget it builds
    assert net.input_dim == 2000 and net.exact()([F(1)] + [F(0)] * 1999)[0] == 0


def test_a_formula_nested_past_the_recursion_limit_is_one_clear_error():
    # a raw RecursionError before; a right-nested chain of 3,000 implications is the same
    for text in ("~" * 100_000 + "x1", "(" * 5000 + "x1" + ")" * 5000,
                 " -> ".join(f"x{i % 5 + 1}" for i in range(3000))):
        with pytest.raises(RelulabError, match="nested too deeply to read"):
            parse(text)
    assert evaluate(parse("~" * 50 + "x1"), [F(1, 3)]) == F(1, 3)  # moderate nesting reads
    for n in (-1, 0, 1.5):
        with pytest.raises(RelulabError, match="number of inputs must be an integer >= 1"):
            parse("x1 + x2", n_vars=n)


def test_a_stray_variable_is_named_as_written():
    # "x1 x2" said "unexpected '2'": the variable token kept only its digits
    with pytest.raises(FormulaSyntaxError, match=r"column 4: unexpected 'x2' after a complete formula"):
        parse("x1 x2")
