"""The 3-CNF hardness gadget against brute force, in exact arithmetic."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from relulab.construct import (
    ExactEvaluator,
    check_gadget,
    min_unsat,
    parse_dimacs,
    random_3cnf,
    round_half,
    sat_gadget,
)
from relulab.errors import FormatError


@pytest.mark.parametrize("seed", range(8))
def test_gadget_max_equals_m_minus_unsat_over_3(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 10))
    m = int(rng.integers(3, 7 * n))  # dense formulas often are unsatisfiable
    clauses = random_3cnf(n, m, rng)
    chk = check_gadget(clauses, n, n_samples=150, rng=seed)
    assert chk.ok, chk
    # an independent brute force of unsat: count per assignment directly
    best = min(
        sum(not any((x[abs(lit) - 1] == 1) == (lit > 0) for lit in cl) for cl in clauses)
        for x in itertools.product((0, 1), repeat=n)
    )
    assert chk.unsat == best and chk.expected == Fraction(m - best, 3)


def test_gadget_structure_and_unsat_formula() -> None:
    # all 8 sign patterns on 3 variables: exactly one clause fails for every assignment
    clauses = [tuple(s * v for s, v in zip(signs, (1, 2, 3), strict=True))
               for signs in itertools.product((1, -1), repeat=3)]
    net = sat_gadget(clauses, 3)
    assert net.widths == (4 * 8,)
    W = net.weights[0]
    assert max(sum(1 for v in row if v != 0) for row in W) <= 3  # fan-in at most 3
    assert min_unsat(clauses, 3)[0] == 1
    chk = check_gadget(clauses, 3, n_samples=300)
    assert chk.ok and chk.max_boolean == Fraction(7, 3)


def test_rounding_never_decreases_on_halves_and_random_points() -> None:
    rng = np.random.default_rng(11)
    n = 6
    clauses = random_3cnf(n, 20, rng)
    ev = ExactEvaluator(sat_gadget(clauses, n))
    # every point of {0, 1/2, 1}^n (ties at 1/2 included) and random thirds/sevenths
    pts = [list(p) for p in itertools.product((Fraction(0), Fraction(1, 2), Fraction(1)), repeat=n)]
    pts += [[Fraction(int(v), 21) for v in rng.integers(0, 22, n)] for _ in range(300)]
    X = np.array(pts, dtype=object)
    R = np.array([round_half(p) for p in pts], dtype=object)
    gx, gr = ev(X)[:, 0], ev(R)[:, 0]
    assert all(b >= a for a, b in zip(gx, gr, strict=True))
    unsat = min_unsat(clauses, n)[0]
    assert max(gx) <= Fraction(len(clauses) - unsat, 3)


def test_gadget_maximised_by_verifier() -> None:
    try:
        from relulab.verify import maximize
    except ImportError:
        pytest.skip("relulab.verify.maximize is not available yet (verification issue)")
    from relulab import Box

    rng = np.random.default_rng(5)
    n, m = 7, 30
    clauses = random_3cnf(n, m, rng)
    net = sat_gadget(clauses, n)
    res = maximize(net, Box(np.zeros(n), np.ones(n)))
    want = Fraction(m - min_unsat(clauses, n)[0], 3)
    assert res.status == "optimal"
    assert abs(float(res.value) - float(want)) <= 1e-6
    assert float(getattr(res, "bound", res.value)) <= float(want) + 1e-6  # proven upper bound
    x = [Fraction(float(v)) for v in np.asarray(res.x, dtype=float).reshape(-1)]
    # the maximiser, rounded, is a Boolean optimum (the rounding property)
    g = ExactEvaluator(net)
    assert g(np.array([round_half(x)], dtype=object))[0, 0] == want


def test_dimacs() -> None:
    clauses, n = parse_dimacs("c demo\np cnf 3 2\n1 -2 3 0\n-1 2 0\n")
    assert n == 3 and clauses == [(1, -2, 3), (-1, 2)]
    assert sat_gadget(clauses, n).widths == (7,)
    with pytest.raises(FormatError, match="no 'p cnf' header"):
        parse_dimacs("1 2 3 0\n")
    with pytest.raises(FormatError, match=":2: clause literals must be integers"):
        parse_dimacs("p cnf 3 1\n1 x 3 0\n", "f.cnf")


def test_a_sat_gadget_too_large_for_memory_is_refused_before_it_is_built():
    # 60,000 clauses on 60,000 variables ran 268 s of building before the memory refusal
    from relulab.construct import random_3cnf, sat_gadget
    from relulab.limits import ResourceLimitError, memory_limit

    clauses = random_3cnf(2000, 3000, 0)
    with memory_limit(2**20), pytest.raises(ResourceLimitError, match="exact sat gadget"):
        sat_gadget(clauses, 2000)


def test_a_dimacs_file_must_have_the_clauses_its_header_declares():
    # a truncated file (or a wrong header) passed silently: the gadget was built for fewer clauses
    with pytest.raises(FormatError, match=r"f\.cnf:2: the header declares 3 clauses, the file has 2"):
        parse_dimacs("c x\np cnf 3 3\n1 -2 3 0\n-1 2 0\n", "f.cnf")
    assert parse_dimacs("p cnf 3 2\n1 -2 3 0\n-1 2 0\n%\n0\n")[0] == [(1, -2, 3), (-1, 2)]   # SATLIB's ending


def test_a_one_input_gate_refuses_another_fan_in():
    # gate("NOT", 3) silently built a 1-input gate
    from relulab.construct import gate

    with pytest.raises(FormatError, match="NOT takes one input"):
        gate("NOT", 3)
    assert gate("NOT").inputs == ("x1",) and len(gate("AND").inputs) == 2
