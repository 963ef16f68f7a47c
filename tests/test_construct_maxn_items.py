"""The exhaustive item family (construct.maxn_items) and the stored two-hidden-layer
networks for n = 7 and 8 that are too large for Fraction arrays.

Independent checks: the orbit enumeration against a brute-force canonical form (minimum
over all permutations); the exact integer evaluator against the Fraction network and
against max itself on random rationals (10^4 vectors, ties included) and on permutations
of a random rational vector; a perturbed solution must be caught.  The n = 8 cone
certificate (about 2 minutes) runs in experiments/maxn_items.py.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from relulab.construct import (
    MAXN_LARGE,
    ConstructionError,
    ExactEvaluator,
    PairTerm,
    eval_max_pairs,
    item_family,
    item_orbits,
    max_n_two_hidden,
    stored_max_pairs,
)


def _items(k: int) -> list[tuple]:
    return [("x", i) for i in range(k)] + [("m", i, j) for i in range(k) for j in range(i + 1, k)]


def _brute_orbits(s: int, k: int) -> set[tuple]:
    """Exact S_k-orbits of the s-item terms on all k coordinates: canonical form = the
    least (2C, 2v) over all relabellings (the term's function determines (2C, 2v))."""
    items = _items(k)
    perms = list(itertools.permutations(range(k)))
    out = set()
    for P in itertools.combinations_with_replacement(items, s):
        for N in itertools.combinations_with_replacement(items, s):
            if set(P) & set(N) or len({c for it in P + N for c in it[1:]}) != k:
                continue
            C, v = PairTerm(k, P, N).canonical()
            out.add(min((tuple(C[np.ix_(p, p)].ravel().tolist()), tuple(v[list(p)].tolist()))
                        for p in perms))
    return out


@pytest.mark.parametrize(("s", "k"), [(1, 3), (2, 3), (2, 4), (3, 3)])
def test_item_orbits_one_per_orbit(s: int, k: int) -> None:
    got = item_orbits(s, k)
    assert len(got) == len(_brute_orbits(s, k))
    forms = set()
    for t in got:  # pairwise in different orbits, and each uses all k coordinates
        C, v = t.canonical()
        perms = list(itertools.permutations(range(k)))
        forms.add(min((tuple(C[np.ix_(p, p)].ravel().tolist()), tuple(v[list(p)].tolist()))
                      for p in perms))
        assert t.k == k and len({c for it in t.pos + t.neg for c in it[1:]}) == k
    assert len(forms) == len(got)


def test_item_family_counts_and_bad_input() -> None:
    assert len(item_family(4, masses=(1,))) == sum(len(item_orbits(1, k)) for k in (2, 3, 4))
    assert item_orbits(1, 5) == []  # two items cover at most four coordinates
    for bad in ((0, 3), (2, 0), (1.5, 3)):
        with pytest.raises(ConstructionError, match="item_orbits"):
            item_orbits(*bad)
    with pytest.raises(ConstructionError, match="item_family: n"):
        item_family(1)
    with pytest.raises(ConstructionError, match="item_family: masses"):
        item_family(4, masses=())


def test_evaluator_agrees_with_the_fraction_network() -> None:
    rng = np.random.default_rng(5)
    X = [[Fraction(int(a), int(b)) for a, b in zip(rng.integers(-50, 50, 5), rng.integers(1, 7, 5),
                                                   strict=True)] for _ in range(30)]
    net = max_n_two_hidden(5)
    want = list(ExactEvaluator(net)(np.array(X, dtype=object))[:, 0])
    assert eval_max_pairs(5, stored_max_pairs(5), X) == want == [max(x) for x in X]


def test_evaluator_catches_a_perturbed_solution() -> None:
    terms = list(stored_max_pairs(6).terms)
    t, c = terms[0]
    bad = [(t, c * Fraction(11, 10)), *terms[1:]]
    X = [[0, 1, 3, 7, 12, 20], [5, -2, 9, 9, 1, 0], [1, 2, 4, 8, 16, 32]]
    assert eval_max_pairs(6, bad, X) != [max(x) for x in X]
    with pytest.raises(ConstructionError, match="rows of 6 numbers"):
        eval_max_pairs(6, terms, [[1, 2, 3]])


def _random_rationals(rng: np.random.Generator, count: int, n: int) -> list[list[Fraction]]:
    p = rng.integers(-10**4, 10**4, (count, n))
    q = rng.integers(1, 11, (count, n))
    X = [[Fraction(int(a), int(b)) for a, b in zip(pr, qr, strict=True)] for pr, qr in zip(p, q, strict=True)]
    for r in X[:50]:  # ties
        r[1:3] = [r[0], r[0]]
    return X


@pytest.mark.slow
@pytest.mark.parametrize("n", [7, 8])
def test_large_stored_networks_equal_max(n: int) -> None:
    """10^4 random rational vectors, and permutations of one random rational vector
    (all 5,040 for n = 7; 1,000 random ones of the 40,320 for n = 8), exactly."""
    assert n in MAXN_LARGE
    rng = np.random.default_rng(700 + n)
    X = _random_rationals(rng, 10_000, n)
    vec = X[-1]
    perms = list(itertools.permutations(range(n)))
    if n == 8:
        perms = [perms[i] for i in rng.choice(len(perms), 1000, replace=False)]
    X += [[vec[i] for i in p] for p in perms]
    assert eval_max_pairs(n, stored_max_pairs(n), X) == [max(x) for x in X]


def test_eight_inputs_stored_solution() -> None:
    s = stored_max_pairs(8)  # every equation of the reduced system, exactly
    assert s.status == "found" and s.widths == (58, 306_252) and len(s.terms) == 36
    assert s.widths[1] - 2 == sum(t.orbit_size(8) for t, _ in s.terms)
    assert math.factorial(8) % s.terms[0][0].orbit_size(8) == 0
    with pytest.raises(ConstructionError, match="306252 second-layer neurons"):
        max_n_two_hidden(8)


@pytest.mark.slow
def test_eight_inputs_certified_on_every_cone() -> None:
    """The exact certificate of the stored n = 8 network's integer arrays: the symmetry
    proof (a transposition and an 8-cycle permute its 306,252 neurons) and the one cone
    x_1 >= ... >= x_8 cover all 40,320 ordering cones (about a minute)."""
    from relulab.construct import certify_max_pairs

    c = certify_max_pairs(8, stored_max_pairs(8))
    assert c.status == "certified" and c.by_symmetry and c.cones_covered == math.factorial(8)
    assert c.widths == (58, 306_252) and c.hyperplanes_checked > 0
