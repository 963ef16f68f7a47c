"""Graph hints, domains, time and size limits of relulab.logic (fourth logic audit).

Each case failed before its fix: a wrong affine hint compiled instead of the formula, graphs
of different boxes called derivable, an inverted readout that did not replay, normal forms
and equality checks that ran before any deadline, an unbounded staircase, the auto method
counting a layer's nodes once per neuron, and raw errors for bad arguments.
"""

from __future__ import annotations

import random
from fractions import Fraction as F

import numpy as np
import pytest

from relulab import Network
from relulab.bounds import _rounding_of
from relulab.errors import RelulabError
from relulab.limits import ResourceLimitError
from relulab.logic import (
    Node,
    SubstitutionGraph,
    collapse_layer,
    const,
    derive,
    equal_on_cube,
    fingerprint,
    identifiability,
    invert,
    node_rewrite,
    normal_form,
    parse,
    replay,
    size,
    to_formula,
    to_network,
    truncated_affine,
)
from relulab.logic.formula import FormulaError
from relulab.logic.graph import GraphError
from relulab.logic.truncated import staircase_nodes


def test_a_node_whose_affine_hint_is_not_its_formula_is_refused():
    # formula x1 with the hint sigma(0 y + 0) = 0: to_network compiled the hint (0) while
    # evaluate read the formula (1), and derive "found" a way to the zero graph
    with pytest.raises(GraphError, match="not truncated_affine"):
        Node(parse("x1"), ((F(0),), F(0)))
    for bad in ("junk", ((float("nan"),), 0), ((1,),)):
        with pytest.raises(GraphError, match="affine must be"):
            Node(parse("x1"), bad)
    # the canonical term of its own hint is accepted, and compiles to the same function
    phi = truncated_affine([1, 1], -1)
    g = SubstitutionGraph(2, [[Node(phi, ((1, 1), -1))]], [[1]], [0])
    net = to_network(g)
    for p in [(F(1), F(1, 2)), (F(1, 3), F(1)), (F(0), F(0))]:
        assert net(list(p))[0] == g.evaluate(list(p))[0]


@pytest.mark.parametrize("domain, match", [
    (((1,), (0,)), "lo = 1 >= hi = 0"),
    (((0, 0), (1, 1)), "2 and 2 bounds for 1 input"),
    ("abc", "domain must be"),
])
def test_a_graph_domain_is_checked(domain, match):
    with pytest.raises(GraphError, match=match):
        SubstitutionGraph(1, [[Node(parse("x1"))]], [[1]], [0], domain=domain)


def test_derive_refuses_graphs_that_stand_for_different_boxes():
    # identical unit-cube formulas on [0, 1] and [0, 2]: the networks differ at x = 1/2
    g1 = to_formula(Network([[[1]], [[1]]], [[0], [0]]).exact(), ([0], [1]))
    g2 = to_formula(Network([[[F(1, 2)]], [[1]]], [[0], [0]]).exact(), ([0], [2]))
    assert to_network(g1)([F(1, 2)]) != to_network(g2)([F(1, 2)])
    assert not g1.same(g2)
    with pytest.raises(RelulabError, match="different input boxes"):
        derive(g1, g2)
    with pytest.raises(RelulabError, match="2 and 1 inputs"):
        derive(Network([[[1, 1]], [[1]]], [[0], [0]]).exact(), Network([[[1]], [[1]]], [[0], [0]]).exact())


def test_the_inverse_of_a_derivation_with_a_readout_step_replays_to_the_start():
    a = Network([[[1, 1], [1, -1]], [[1, 1]]], [[-1, 0], [0]]).exact()
    b = Network([[[1, 1], [1, -1], [1, 0], [1, 0]], [[1, 1, 1, -1]]], [[-1, 0, 0, 0], [0]]).exact()
    r = derive(a, b)
    assert r.status == "found" and r.counts.get("readout", 0) >= 1
    A = to_formula(a, method="rescale")
    graphs = [A]
    for st in r.steps:
        graphs.append(replay(graphs[-1], [st]))
    assert replay(graphs[-1], invert(tuple(graphs), r.steps)).same(A)


def _deep_pair():
    rng = np.random.default_rng(0)
    dims = [3, 30, 30, 1]
    f = Network([rng.normal(size=(b, a)) for a, b in zip(dims[:-1], dims[1:], strict=True)],
                [rng.normal(size=b) for b in dims[1:]])
    return f, f.deepen(4)


def test_no_time_means_no_normal_form_work(monkeypatch):
    import importlib

    nf = importlib.import_module("relulab.logic.normal_form")  # the package exports the function
    calls = []
    real = nf._canonical_node
    monkeypatch.setattr(nf, "_canonical_node", lambda node, *rest: calls.append(1) or real(node, *rest))
    f, g = _deep_pair()
    r = normal_form(to_formula(f, method="rescale"), timeout=0)
    assert r.partial and r.steps == () and not calls
    d = derive(f, g, timeout=0)
    assert d.status == "not found within budget" and not calls
    full = normal_form(to_formula(f, method="rescale"))
    assert not full.partial and calls


def test_equal_on_cube_skips_the_normal_forms_it_has_no_time_for(monkeypatch):
    import relulab.symmetry as S

    calls = []
    real = S.canonical
    monkeypatch.setattr(S, "canonical", lambda *a, **k: calls.append(1) or real(*a, **k))
    f, g = _deep_pair()
    r = equal_on_cube(f.exact(), g.exact(), timeout=0.0)
    assert r.status == "unknown" and not calls
    assert equal_on_cube(f.exact(), f.exact(), timeout=None).status == "equal" and calls


def test_truncated_affine_refuses_a_staircase_beyond_the_memory_budget():
    with pytest.raises(ResourceLimitError, match="truncated_affine"):
        truncated_affine([1e300], F(1, 2))
    from relulab.limits import memory_limit

    with memory_limit(10**6), pytest.raises(ResourceLimitError, match="weight 1 = 2e"):
        truncated_affine([2000], -1000)


def _tent_iterates(n: int) -> Network:
    """The tent map iterated n times as an exact network (2n - 1 hidden layers of width <= 3);
    each node's formula grows with its depth, so the whole graph has about 6 n^2 nodes."""
    from relulab.logic import parse

    lines = ["t1 := x1"] + [f"t{k} := (t{k-1} + t{k-1}) & ~(t{k-1} * t{k-1})" for k in range(2, n + 1)]
    return to_network(parse("\n".join(lines + [f"t{n}"])))


def test_extraction_counts_all_its_formula_nodes_against_the_memory_budget():
    # each node passed its own check, and a 1,797-layer tent network took 1.9 GB over a
    # 1.83 GB budget before an error named a small node (aud_log5 #5): the nodes of the
    # whole graph are now counted (an upper bound: refused just below the real size)
    from relulab.limits import memory_limit
    from relulab.logic.truncated import NODE_BYTES

    net = _tent_iterates(60)
    real = to_formula(net).formula_size
    with memory_limit(int(NODE_BYTES * real * 0.99)), pytest.raises(ResourceLimitError, match="of layer"):
        to_formula(net)
    with memory_limit(int(NODE_BYTES * real * 1.5)):        # the count is not far above the real size
        assert to_formula(net).formula_size == real


def test_staircase_node_estimate_is_an_upper_bound():
    rng = random.Random(0)
    for _ in range(300):
        ws = [F(rng.randint(-30, 30), rng.choice([1, 1, 2, 3, 7, 64])) for _ in range(rng.randint(1, 4))]
        b = F(rng.randint(-40, 40), rng.choice([1, 2, 5]))
        assert size(truncated_affine(ws, b)) <= staircase_nodes(ws, b)


def test_auto_keeps_the_staircase_up_to_64_nodes():
    # 11 copies of relu(x1) summed: 11 + 11 staircase nodes (within 64), pure MV
    net = Network([np.ones((11, 1)), np.ones((1, 11))], [np.zeros(11), np.zeros(1)]).exact()
    g = to_formula(net)
    assert g.method == "staircase" and g.algebra == "MV" and g.n_nodes <= 64
    assert to_network(g)([F(2, 3)]) == net([F(2, 3)])


def test_rounding_of_float_valued_fractions_is_zero_and_others_positive():
    rng = random.Random(1)
    vals = [F(rng.randint(-2**60, 2**60), 2**rng.randint(0, 1100)) for _ in range(400)]
    vals += [F(1, 3), F(2**53 + 1), F(2**1023), F(3, 2**1074), F(2**-1074), 7, 2**80 + 1]
    exact = np.array(vals, dtype=object)
    rounded = np.array([float(v) for v in vals])
    out = _rounding_of(exact, rounded)
    for v, r, e in zip(vals, rounded, out, strict=True):
        assert (e == 0) == (F(r) == v)
        assert F(e) >= abs(v - F(r))


@pytest.mark.parametrize("call, where", [
    (lambda g: collapse_layer(g, "a"), "layer must be an integer"),
    (lambda g: node_rewrite(g, 0, 1.5, parse("x1")), "index must be an integer"),
    (lambda g: replay(g, [1, 2]), "replay: expected Steps"),
    (lambda g: g.evaluate([float("nan"), 0]), "the point must hold finite numbers"),
    (lambda g: normal_form(g, max_sweeps="a"), "normal_form: max_sweeps"),
    (lambda g: normal_form(g, timeout="a"), "normal_form: timeout"),
    (lambda g: fingerprint("x1"), "fingerprint: expected a Formula"),
    (lambda g: const("a"), "const: expected 0 or 1"),
    (lambda g: parse("x1 d3(x2)"), "unexpected 'δ3'"),
    (lambda g: Node("x1"), "Node: the formula must be a Formula"),
    (lambda g: equal_on_cube(Network([[[1.0]], [[1.0]]], [[0.0], [0.0]]),
                             Network([[[1.0]], [[1.0]]], [[0.0], [0.0]]), timeout="a"), "equal_on_cube: timeout"),
    (lambda g: identifiability(Network([[[1.0]], [[1.0]]], [[0.0], [0.0]]), n_points="a"),
     "identifiability: n_points"),
    (lambda g: equal_on_cube(Network([[[10**400]], [[F(1, 10**400)]]], [[0], [0]]).exact(),
                             Network([[[1]], [[1]]], [[0], [0]]).exact()), "equal_on_cube: f or g"),
])
def test_bad_arguments_get_one_clear_error(call, where):
    g = to_formula(Network([[[1.0, 2.0], [-1.0, 1.0]], [[1.0, -1.0]]], [[0.0, 0.5], [0.0]]))
    with pytest.raises((RelulabError, FormulaError), match=where):
        call(g)


def test_simplify_looks_at_the_clock_at_every_node(monkeypatch):
    # the clock was read every 256 nodes, and one round over a 1,270-node formula of an
    # ACAS Xu network ran 5 s past a 2 s limit (aud_cli5 #3)
    import importlib
    import types

    from relulab.logic import parse

    S = importlib.import_module("relulab.logic.simplify")
    phi = parse(" ⊕ ".join(f"¬¬x{i}" for i in range(1, 301)))
    reads, steps = [0], [0]

    def clock() -> float:
        reads[0] += 1
        return 0.0 if reads[0] <= 10 else 1.0        # the deadline passes at the 11th read

    real_step = S._step

    def counted(*a, **k):
        steps[0] += 1
        return real_step(*a, **k)

    monkeypatch.setattr(S, "time", types.SimpleNamespace(monotonic=clock))   # this module's clock only
    monkeypatch.setattr(S, "_step", counted)
    out, how = S.simplify_rounds(phi, 0.5)
    assert how == "time limit" and out is phi and steps[0] <= 10


def test_absorption_reads_dual_chains_only_up_to_the_operand_cap(monkeypatch):
    # a shared meet chain doubled per level (600 * 2^16 operands) was flattened whole by
    # the absorption test inside one step: 11-13 s past a 2 s deadline, and normal_form
    # (timeout=2) simplified without its deadline (25.8 s) (aud_log5 #2)
    import importlib
    from fractions import Fraction
    from functools import reduce

    from relulab.logic.formula import evaluate, join, meet, var

    S = importlib.import_module("relulab.logic.simplify")
    caps = []
    real = S._flatten

    def spy(op, node, cap=None):
        caps.append(cap)
        return real(op, node, cap)

    monkeypatch.setattr(S, "_flatten", spy)
    A = reduce(meet, [var(i) for i in range(1, 31)])
    M = meet(A, reduce(meet, [var(i) for i in range(31, 61)]))
    for _ in range(6):
        M = meet(M, M)
    phi = join(M, var(61))
    out, done = S.simplify_until(phi, None)
    assert caps and all(c is not None for c in caps)
    rng = np.random.default_rng(0)
    for _ in range(20):
        p = [Fraction(int(v), 64) for v in rng.integers(0, 65, 61)]
        assert evaluate(out, p) == evaluate(phi, p) == max(min(p[:60]), p[60])


def test_the_staircase_estimate_counts_the_steps_built():
    # a rescaled node (constant near 1 - m) builds about m steps, and the bound counted
    # m^2 / 2: relu(x - 0.9994) was refused as 1.82 GB, a random 2-3-1-1 net as 4.18 GB,
    # for formulas of a few MB (aud_log5 #3); the estimate must still bound the real size
    from fractions import Fraction

    from relulab import Network
    from relulab.limits import memory_limit
    from relulab.logic import to_formula
    from relulab.logic.formula import postorder
    from relulab.logic.truncated import staircase_nodes, truncated_affine

    rnd = random.Random(0)
    for _ in range(200):
        ws = [Fraction(rnd.randint(-40, 40), rnd.choice([1, 2, 3, 7])) for _ in range(rnd.randint(1, 3))]
        b = Fraction(rnd.randint(-60, 60), rnd.choice([1, 2, 5]))
        built = sum(1 for _ in postorder(truncated_affine(ws, b)))
        assert built <= staircase_nodes(ws, b) <= 40 * max(built, 1) + 200
    steep = Network([np.array([[1.0]]), np.array([[1.0]])], [np.array([-0.9994]), np.array([0.0])])
    with memory_limit(300 * 2**20):
        g = to_formula(steep)
    for x in (0.0, 0.9994, 0.9997, 1.0):
        assert abs(float(g.evaluate([Fraction(x)])[0]) - max(0.0, x - 0.9994)) < 1e-12  # tol: float input


def test_printing_a_long_chain_holds_text_linear_in_its_length():
    # every sub-term's text was kept: the sum of all prefixes of a chain, 522 MB for 50 KB
    # of text and 3.9 GB (a raw MemoryError) for a 90 KB from-formula (aud_log5 #1)
    import tracemalloc

    from relulab.logic import parse, to_text

    s = " + ".join(f"x{1 + i % 2}" for i in range(4000))
    phi = parse(s)
    tracemalloc.start()
    out = to_text(phi, ascii=True)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert out == s and parse(out) is not None
    assert peak < 200 * len(out)         # the text and per-node bookkeeping, not ~n^2 / 2 characters
    shared = to_text(phi, shared=True)
    assert parse(shared.splitlines()[-1]) is not None or "t1 :=" not in shared
