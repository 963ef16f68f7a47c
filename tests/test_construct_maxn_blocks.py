"""max_n with two hidden layers from block-symmetric neurons (relulab.construct.maxn_blocks).

Independent checks: the chain formula Q against direct evaluation of the neuron; the
stored networks evaluated exactly (integer arithmetic, the network's own arrays, no
symmetry used) against max on every permutation of a random rational vector and on
random rational vectors; the certificate on all n! cones without the symmetry shortcut;
perturbed solutions that must be refused; the recursion built on the block bases.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from relulab.construct import (
    MAXN_BLOCKS,
    BlockTerm,
    ConstructionError,
    block_candidates,
    certify_max_blocks,
    certify_max_cones,
    eval_max_blocks,
    max_blocks_arrays,
    max_blocks_network,
    max_n_deep,
    max_n_two_hidden,
    search_max_blocks,
    stored_max_blocks,
    two_hidden_available,
)

STORED = sorted(MAXN_BLOCKS)


def _rational_vector(rng: np.random.Generator, n: int) -> list[Fraction]:
    """Distinct-ish rationals with small denominators (ties are allowed and tested too)."""
    return [Fraction(int(rng.integers(-50, 51)), int(rng.integers(1, 7))) for _ in range(n)]


def test_chain_formula_matches_direct_evaluation():
    """Q(c) along the sorted order reproduces g(x) = sum C_ij |x_i - x_j| + v.x exactly."""
    rng = np.random.default_rng(0)
    for t in block_candidates(6, kappa_max=1, v_max=1)[::97]:
        labels = list(rng.permutation([b for b, s in enumerate(t.sizes) for _ in range(s)]))
        x = sorted(_rational_vector(rng, t.n), reverse=True)
        kap = {(b, b2): k for b, b2, k in t.kappa}
        g = sum((kap.get(tuple(sorted((labels[i], labels[j]))), 0) * abs(x[i] - x[j])
                 for i in range(t.n) for j in range(i + 1, t.n)), Fraction(0))
        g += sum(t.v[labels[i]] * x[i] for i in range(t.n))
        cnt = [0] * len(t.sizes)
        via_q = Fraction(0)
        for m in range(t.n - 1):
            cnt[labels[m]] += 1
            via_q += t.q(cnt) * (x[m] - x[m + 1])
        assert g == via_q


@pytest.mark.parametrize("n", STORED)
def test_stored_solution_is_certified(n):
    sol = stored_max_blocks(n)
    assert sol.status == "found"
    cert = certify_max_blocks(n, sol)
    assert cert.status == "certified" and cert.by_symmetry
    assert cert.cones_covered == math.factorial(n)
    assert cert.widths == sol.widths and cert.widths[0] == n * (n - 1) + 2


@pytest.mark.parametrize("n", [n for n in STORED if n <= 5])
def test_certificate_on_every_cone_without_symmetry(n):
    cert = certify_max_blocks(n, stored_max_blocks(n), use_symmetry=False)
    assert cert.status == "certified" and not cert.by_symmetry
    assert cert.cones_checked == math.factorial(n)


@pytest.mark.parametrize("n", [n for n in STORED if n <= 8])
def test_every_permutation_of_a_random_vector(n):
    rng = np.random.default_rng(n)
    x = _rational_vector(rng, n)
    X = [list(p) for p in itertools.permutations(x)]
    if n > 6:  # keep the test fast: a derandomized sample of the n! orderings
        X = [X[i] for i in rng.choice(len(X), 720, replace=False)]
    assert eval_max_blocks(n, stored_max_blocks(n), X) == [max(x)] * len(X)


@pytest.mark.parametrize("n", STORED)
def test_random_rational_vectors(n):
    rng = np.random.default_rng(100 + n)
    count = 10_000 if n <= 6 else 2_000
    X = [_rational_vector(rng, n) for _ in range(count)]
    X[0] = [Fraction(3)] * n  # all tied
    X[1] = [Fraction(-1, 3)] * (n - 1) + [Fraction(2)]
    assert eval_max_blocks(n, stored_max_blocks(n), X) == [max(r) for r in X]


def test_exact_network_agrees_with_integer_evaluation():
    n = STORED[0]
    net = max_blocks_network(n, stored_max_blocks(n))
    x = [Fraction(5, 2), Fraction(-1), Fraction(7, 3), Fraction(0), Fraction(1), Fraction(2)][:n]
    assert net(x)[0] == max(x) == eval_max_blocks(n, stored_max_blocks(n), [x])[0]
    assert certify_max_cones(net, n).status == "certified"
    flt = max_blocks_network(n, stored_max_blocks(n), exact=False)
    assert abs(float(flt([float(v) for v in x])[0]) - float(max(x))) < 1e-9  # tol: float64 copy


def test_search_finds_and_certifies():
    s = search_max_blocks(4)
    assert s.status == "found"
    assert certify_max_blocks(4, s).status == "certified"
    assert eval_max_blocks(4, s, [[1, 9, 3, 9], [-2, -5, -1, -7]]) == [9, -1]


def test_search_reports_infeasible_family():
    fam = [BlockTerm((2, 1), ((0, 0, 2),), (1, -2))]  # one orbit cannot be max of 3
    assert search_max_blocks(3, fam).status == "infeasible"


def test_perturbed_solution_is_refused():
    n = STORED[0]
    terms = list(stored_max_blocks(n).terms)
    t, c = terms[0]
    bad = [(t, c * Fraction(11, 10))] + terms[1:]
    cert = certify_max_blocks(n, bad)
    assert cert.status == "failed" and cert.reason
    assert eval_max_blocks(n, bad, [[Fraction(v) for v in range(n)]])[0] != n - 1 or \
        eval_max_blocks(n, bad, [[Fraction(v * v) for v in range(n)]])[0] != (n - 1) ** 2


def test_arrays_layout_matches_recursion_contract():
    """First layer: ordered pairs then +-sum; second layer ends with the two carries."""
    n = STORED[0]
    A1, N2, w = max_blocks_arrays(n, stored_max_blocks(n))
    assert A1.shape == (n * (n - 1) + 2, n)
    assert all(sorted(r.tolist()) == [-1] + [0] * (n - 2) + [1] for r in A1[:-2])
    assert (N2[:-2, -2:] == 0).all() and w[-2:] == [Fraction(1, n), Fraction(-1, n)]


def test_max_n_two_hidden_and_deep_use_block_bases():
    avail = two_hidden_available()
    assert set(avail) >= {2, 3, 4, 5, 6}
    big = max(avail)
    net = max_n_two_hidden(big)
    assert net.n_hidden_layers == 2
    x = [Fraction(v, 3) for v in (4, -7, 11, 2, 0, 9, -1, 5, 3, 8, 6, 1)[:big]]
    assert net(x)[0] == max(x)
    deep = max_n_deep(big + 1, hidden_layers=3, bases=[big])
    y = [Fraction((7 * i) % 13 - 6, 1 + i % 3) for i in range(big + 1)]
    assert deep.n_hidden_layers == 3 and deep(y)[0] == max(y)


def test_bad_input():
    with pytest.raises(ConstructionError, match="n must be"):
        search_max_blocks(1)
    with pytest.raises(ConstructionError, match="sum_b a_b v_b"):
        BlockTerm((2, 1), (), (1, 1))
    with pytest.raises(ConstructionError, match="outside"):
        BlockTerm((2, 1), ((0, 2, 1),), (1, -2))
    with pytest.raises(ConstructionError, match="not 4"):
        search_max_blocks(4, [BlockTerm((2, 1), ((0, 0, 1),), (1, -2))])
    with pytest.raises(ConstructionError, match="no stored block solution"):
        stored_max_blocks(99)
    with pytest.raises(ConstructionError, match="entries"):
        eval_max_blocks(STORED[0], stored_max_blocks(STORED[0]), [[1, 2]])
    with pytest.raises(ConstructionError, match="do not sum"):
        block_candidates(5, sizes=[(2, 2)])
