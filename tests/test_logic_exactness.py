"""What relulab.logic calls exact or proved must be exact, and its inputs are checked.

Each case came from an audit: a float verifier's "equal" taken as a proof, a skip folded
in float64, a Fraction box rounded, step texts and simplification that expanded shared
sums, unbounded rescaled nodes, unreadable shared printing, and bad arguments.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest

from relulab import Network
from relulab.domain import DomainError
from relulab.errors import RelulabError
from relulab.logic import (
    EqualityResult,
    SubstitutionGraph,
    derive,
    equal_on_cube,
    evaluate,
    node_rewrite,
    parse,
    simplify,
    to_formula,
    to_network,
    to_text,
)
from relulab.logic.extract import ExtractionError
from relulab.logic.formula import FormulaError, oplus, size, var
from relulab.logic.graph import GraphError
from relulab.logic.printing import tree_size
from relulab.logic.rewrites import formulas_equal
from relulab.logic.simplify import AC_MAX_OPERANDS


def _float_equal(*args, **kwargs):
    """The float verifier's answer: equal up to its tolerance, not exact."""
    return EqualityResult("equal", "verifier", False, "max |f - g| <= 1e-7 (MILP bound)")


def test_a_float_equal_is_no_proof_for_formulas_equal(monkeypatch):
    import relulab.logic.equality as E

    monkeypatch.setattr(E, "equal_on_cube", _float_equal)
    assert formulas_equal(parse("x1"), parse("x1 ⊙ x1"), 1) is False


def test_a_float_equal_is_no_proof_for_derive(monkeypatch):
    import importlib

    # two different networks (their normal forms differ, so derive compares them on the
    # cube); the stand-in verifier calls them equal without a proof
    monkeypatch.setattr(importlib.import_module("relulab.logic.derive"), "equal_on_cube", _float_equal)
    a = Network([[[1, 1], [1, -1]], [[1, 1]]], [[-1, 0], [0]]).exact()
    b = Network([[[2, 1]], [[1]]], [[-1], [0]]).exact()
    r = derive(a, b)
    assert r.status != "found" and not r.verified


@pytest.mark.parametrize("net", [
    Network([[[0.1]]], [[0.2]], skip=([[0.2]], [0.1])),
    Network([[[0.1]], [[0.3]]], [[0.2], [0.7]], skip=([[0.2]], [0.1])),
])
def test_a_float_skip_is_folded_exactly(net):
    g = to_formula(net)
    ex = net.exact()
    for k in range(5):
        x = [Fraction(k, 4)]
        assert g.evaluate(x)[0] == ex(x)[0]     # exact, not within rounding
    assert equal_on_cube(to_network(g), net).status == "equal"


def test_an_exact_box_that_float64_cannot_hold_is_refused():
    c = Fraction(1 / 3)                          # the float just below 1/3
    f = Network([[[1]], [[1]]], [[-c], [0]], exact=True)
    g = Network([[[0]], [[0]]], [[0], [0]], exact=True)
    assert f([Fraction(1, 3)])[0] > 0            # f and g differ at x = 1/3
    with pytest.raises(DomainError, match="equal_on_cube: box bound 1/3 is not a float64 number"):
        equal_on_cube(f, g, ([Fraction(0)], [Fraction(1, 3)]))
    with pytest.raises(DomainError, match="to_formula"):
        to_formula(f, ([Fraction(0)], [Fraction(1, 3)]))
    # bounds that are floats still work, and the answer is right on them
    assert equal_on_cube(f, g, ([Fraction(0)], [Fraction(1, 4)])).status == "equal"
    assert equal_on_cube(f, g, ([Fraction(0)], [Fraction(1, 2)])).status == "different"


def test_rational_weights_keep_their_shared_form_through_simplify():
    # relu(x/2 + 1234/10^4): the node formula is a doubling sum of delta terms, a small
    # shared graph whose tree has about 1234 leaves; simplifying (and the step's text)
    # expanded the tree, and for 123456789/10^9 took all memory
    net = Network([[[Fraction(1, 2)]], [[1]]], [[Fraction(1234, 10**4)], [0]], exact=True)
    g = to_formula(net)
    phi = g.layers[0][0].formula
    s = simplify(phi)
    # a chain is flattened (and sorted) up to AC_MAX_OPERANDS operands only; the tree
    # has 9,350 nodes, and expanding it took time quadratic in that
    assert size(s) <= size(phi) + 2 * AC_MAX_OPERANDS < tree_size(phi) / 4
    for k in range(9):
        x = [Fraction(k, 8)]
        assert evaluate(s, x) == evaluate(phi, x)
    g2, step = node_rewrite(g, 0, 0, simplify, check="trusted")
    assert len(step.before) <= 200 and len(step.after) <= 200
    assert equal_on_cube(to_network(g2), net).status == "equal"


def test_a_steep_rescaled_neuron_is_refused_by_size():
    net = Network([[[1]], [[1]]], [[-(1 - Fraction(1, 20000))], [0]], exact=True)   # relu(x - 1 + 1/20000)
    with pytest.raises(ExtractionError, match="neuron 1 of layer 1 is steep"):
        to_formula(net)
    ok = Network([[[1]], [[1]]], [[-(1 - Fraction(1, 50))], [0]], exact=True)
    assert equal_on_cube(to_network(to_formula(ok)), ok).status == "equal"


def test_shared_printing_reads_back():
    phi = var(1)
    for _ in range(14):                          # a tree of 2^15 - 1 nodes
        phi = oplus(phi, phi)
    text = to_text(phi)
    assert ":=" in text                          # printed with named shared terms
    assert parse(text) is phi
    assert parse(to_text(phi, ascii=True)) is phi
    with pytest.raises(FormulaError, match="t2 is not defined"):
        parse("t1 := x1 + x1\nt2 * x1")
    with pytest.raises(FormulaError, match="defined twice"):
        parse("t1 := x1\nt1 := x2\nt1")


@pytest.mark.parametrize("call, match", [
    (lambda: to_network(parse("x1"), 1.5), "n_inputs must be an integer"),
    (lambda: to_network(parse("x1"), "2"), "n_inputs must be an integer"),
    (lambda: SubstitutionGraph("2", [], [[1]], [0]), "n_inputs must be an integer"),
    (lambda: simplify("x1"), "simplify: expected a Formula"),
    (lambda: to_text("x1"), "to_text: expected a Formula"),
])
def test_bad_arguments_give_one_error_naming_them(call, match):
    with pytest.raises(RelulabError, match=match):
        call()


def test_bad_graph_numbers_and_derive_budgets_and_flat_boxes():
    from relulab.logic import Node

    with pytest.raises(GraphError, match=r"readout\[0\]\[0\] must be a finite number"):
        SubstitutionGraph(1, [[Node(parse("x1"))]], [[float("nan")]], [0])
    net = Network([[[1, 1]], [[1]]], [[-1], [0]]).exact()
    with pytest.raises(RelulabError, match="max_steps must be an integer >= 0"):
        derive(net, net, max_steps=-1)
    with pytest.raises(DomainError, match="equal_on_cube: the box has width 0 in x2"):
        equal_on_cube(net, net, ([0, 0.5], [1, 0.5]))


def test_exactness_checks_leave_equal_networks_equal():
    # the new refusals do not touch ordinary inputs: a network and its formula agree
    net = Network([[[1, -2], [3, 1]], [[1, -1]]], [[1, 0], [0]]).exact()
    g = to_formula(net)
    for x in itertools.product([Fraction(k, 3) for k in range(4)], repeat=2):
        assert g.evaluate(list(x))[0] == net(list(x))[0]


@pytest.mark.parametrize("e", [12, 20])
def test_equal_on_cube_evaluates_exactly_where_float_and_exact_patterns_disagree(e):
    # f - g = eps everywhere; the float enumeration reads the pre-activation eps as 0, the
    # exact pattern disagrees, and "equal" (not exact) came back from the float verifier
    from fractions import Fraction

    from relulab import Network
    from relulab.logic import equal_on_cube

    eps = Fraction(1, 10**e)
    f = Network([[[1], [1]], [[1, -1]], [[1]]], [[0, 0], [eps], [0]], exact=True)
    g = Network([[[1], [1]], [[1, -1]], [[0]]], [[0, 0], [eps], [0]], exact=True)
    assert f([Fraction(1, 2)])[0] - g([Fraction(1, 2)])[0] == eps       # the independent fact
    r = equal_on_cube(f, g)
    assert r.status == "different" and r.exact
    assert f(list(r.witness))[0] != g(list(r.witness))[0]


def test_equal_on_cube_never_answers_equal_from_the_float_verifier():
    # x on [0, 1] and x plus a bump of height 2^-50 and width 2^-54 at 1/2: the regions miss
    # the bump and the float verifier finds max |f - g| within its tolerance
    a, e, h = Fraction(1, 2), Fraction(1, 2**55), Fraction(1, 2**50)
    s = h / e
    g = Network([[[1]], [[1]]], [[0], [0]]).exact()
    f = Network([[[1], [1], [1], [1]], [[1, s, -2 * s, s]]], [[0, -a, -a - e, -a - 2 * e], [0]]).exact()
    assert f([a + e])[0] - g([a + e])[0] == h  # they differ
    r = equal_on_cube(f, g, timeout=60)
    assert r.status in ("different", "unknown") and not r.equal
    if r.status == "different":
        assert f(list(r.witness)) != g(list(r.witness))
