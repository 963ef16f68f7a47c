"""Orbit-factorised two-hidden-layer max_n (construct.maxn_orbits) and the s = 4 segment
family (construct.maxn_items.segment_orbits) that reaches n = 9.

The certificate and the evaluation are checked against the array-based certificate and
evaluator of construct.maxn (independent code: they build every neuron's weights), against
max itself on random rationals with ties, and on broken solutions (refuted).
"""

from __future__ import annotations

import itertools
import os
import random
from fractions import Fraction

import pytest

from relulab.construct import ConstructionError, item_family, stored_max_pairs
from relulab.construct.maxn import PairTerm, certify_max_pairs
from relulab.construct.maxn_decide import decide_family
from relulab.construct.maxn_items import eval_max_pairs, matching_orbits, segment_orbits
from relulab.construct.maxn_orbits import (
    MAXN_ORBIT_SIZES,
    certify_max_orbits,
    eval_max_orbits,
    eval_sum_of_maxes_two_hidden,
    orbit_widths,
    stored_max_orbits,
)


def _rand(n: int, count: int, seed: int) -> list[list[Fraction]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        x = [Fraction(rng.randint(-40, 40), rng.randint(1, 5)) for _ in range(n)]
        if rng.random() < 0.4:
            x[rng.randrange(n)] = max(x)  # a tie at the top
        out.append(x)
    return out


def _canon(k: int, red: frozenset, blue: frozenset) -> tuple:
    """Brute-force canonical form of a red/blue edge pair under S_k."""
    def relabel(es: frozenset, p: tuple) -> tuple:
        return tuple(sorted(tuple(sorted((p[a], p[b]))) for a, b in es))

    return min((relabel(red, p), relabel(blue, p)) for p in itertools.permutations(range(k)))


def _assert_one_per_class(k: int, sides: list, terms: list) -> None:
    """The terms are one per S_k-class of the pairs (red, blue) of edge-disjoint sides
    from ``sides`` covering the k vertices (brute force over all pairs and relabellings)."""
    classes = set()
    for red in sides:
        for blue in sides:
            if set(red) & set(blue) or len({v for e in red + blue for v in e}) != k:
                continue
            classes.add(_canon(k, frozenset(red), frozenset(blue)))
    got = [_canon(k, frozenset((a, b) for _, a, b in t.pos), frozenset((a, b) for _, a, b in t.neg))
           for t in terms]
    assert len(got) == len(set(got)) == len(classes)
    assert set(got) == classes


@pytest.mark.parametrize("s,k", [(1, 4), (2, 4), (2, 5), (2, 6)])
def test_segment_orbits_one_per_isomorphism_class(s, k):
    edges = [(i, j) for i in range(k) for j in range(i + 1, k)]
    _assert_one_per_class(k, list(itertools.combinations(edges, s)), segment_orbits(s, k))


@pytest.mark.parametrize("s,k", [(1, 4), (2, 4), (2, 5), (2, 6), (3, 6)])
def test_matching_orbits_one_per_isomorphism_class(s, k):
    # the sides are matchings: s pairwise disjoint edges
    edges = [(i, j) for i in range(k) for j in range(i + 1, k)]
    matchings = [m for m in itertools.combinations(edges, s) if len({v for e in m for v in e}) == 2 * s]
    _assert_one_per_class(k, matchings, matching_orbits(s, k))
    with pytest.raises(ConstructionError, match="matching_orbits"):
        matching_orbits(0, 4)


def test_segment_family_reaches_what_the_items_alone_cannot():
    # n = 7: s <= 2 items are exactly infeasible; adding the s = 3 segment orbits on all 7
    # coordinates gives an exact solution (and likewise n = 8 from s <= 2 items)
    assert decide_family(7, item_family(7, (2,))).status == "infeasible"
    assert decide_family(7, item_family(7, (2,)) + segment_orbits(3, 7)).status == "found"
    assert decide_family(8, item_family(8, (1, 2)) + segment_orbits(3, 8)).status == "found"


@pytest.mark.parametrize("n", [4, 5, 6])
def test_certificate_agrees_with_the_array_certificate(n):
    sol = list(stored_max_pairs(n).terms)
    assert certify_max_orbits(n, sol).status == certify_max_pairs(n, sol).status == "certified"
    t, c = sol[-1]
    bad = sol[:-1] + [(t, c * Fraction(3, 2))]
    assert certify_max_orbits(n, bad).status == "failed"
    assert certify_max_pairs(n, bad).status == "failed"
    assert certify_max_orbits(n, sol[:-1]).status == "failed"


def test_certificate_widths_and_cover():
    c = certify_max_orbits(6, stored_max_pairs(6))
    assert c.by_symmetry and c.cones_checked == 1 and c.cones_covered == 720
    assert c.widths == orbit_widths(6, stored_max_pairs(6)) == stored_max_pairs(6).widths


def test_translation_variant_term_is_refuted():
    t = PairTerm(3, (("m", 0, 1), ("x", 2)), (("x", 2),))  # 2 items against 1
    assert certify_max_orbits(3, [(t, Fraction(1))]).status == "failed"


@pytest.mark.parametrize("n", [5, 6])
def test_evaluation_agrees_with_the_array_network_and_max(n):
    sol = stored_max_pairs(n)
    X = _rand(n, 12, seed=n)
    assert eval_max_orbits(n, sol, X) == eval_max_pairs(n, sol, X) == [max(x) for x in X]
    assert eval_max_orbits(n, sol, X, method="chains") == [max(x) for x in X]
    t, c = sol.terms[0]
    bad = [(t, c + Fraction(1, 7))] + list(sol.terms[1:])
    assert eval_max_orbits(n, bad, X) == eval_max_pairs(n, bad, X) == \
        eval_max_orbits(n, bad, X, method="chains")
    assert eval_max_orbits(n, bad, X) != [max(x) for x in X]


def test_bad_input():
    sol = stored_max_pairs(4)
    with pytest.raises(ConstructionError, match="n must be"):
        certify_max_orbits(2, sol)
    with pytest.raises(ConstructionError, match="coordinates"):
        certify_max_orbits(3, sol)
    with pytest.raises(ConstructionError, match="at most 12"):
        eval_max_orbits(13, sol, [[0] * 13])
    with pytest.raises(ConstructionError, match="method='chains'"):
        eval_max_orbits(11, sol, [[0] * 11])
    with pytest.raises(ConstructionError, match="method"):
        eval_max_orbits(4, sol, [[0] * 4], method="fast")
    with pytest.raises(ConstructionError, match="no stored"):
        stored_max_orbits(12)
    with pytest.raises(ConstructionError, match="segment_orbits"):
        segment_orbits(0, 4)


def test_stored_n9_is_max():
    assert 9 in MAXN_ORBIT_SIZES
    sol = stored_max_orbits(9)
    assert sol.widths[0] == 74 and sol.widths[1] > 10**6  # certified through the CLI test below
    X = _rand(9, 2, seed=9)
    assert eval_max_orbits(9, sol, X) == [max(x) for x in X]
    # the evaluation sees a broken coefficient (its certificate would fail too: refuted in
    # test_certificate_agrees_with_the_array_certificate; here it would cost another 25 s)
    t, c = sol.terms[-1]
    bad = list(sol.terms[:-1]) + [(t, c * 2)]
    assert eval_max_orbits(9, bad, X[:1]) != [max(X[0])]
    Y = _rand(9, 300, seed=90)  # the gap-form evaluation, many inputs
    assert eval_max_orbits(9, sol, Y, method="chains") == [max(y) for y in Y]


def test_stored_n10_evaluates_to_max():
    """n = 10: one random rational input with a tie, every one of the 275,875,517
    second-layer neurons evaluated (about 25 s); the certificate is the long test below."""
    assert 10 in MAXN_ORBIT_SIZES
    sol = stored_max_orbits(10)
    assert all(len(t.pos) == len(t.neg) for t, _ in sol.terms)
    x = [Fraction(7, 2), -3, Fraction(7, 2), 0, Fraction(-5, 3), 2, 1, Fraction(1, 4), -8, 3]
    assert eval_max_orbits(10, sol, [x]) == [Fraction(7, 2)]


def test_stored_n10_is_certified():
    """The 425 orbit columns by the subset-lattice DP (about 25 s; 8 minutes with the
    explicit 10! chains)."""
    sol = stored_max_orbits(10)
    cert = certify_max_orbits(10, sol)
    assert cert.status == "certified" and cert.cones_covered == 3628800
    assert cert.widths == orbit_widths(10, sol)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("RELULAB_LONG_TESTS"),
                    reason="a second n = 10 certificate (about 25 s); set RELULAB_LONG_TESTS=1")
def test_broken_n10_is_refuted():
    sol = stored_max_orbits(10)
    t, c = sol.terms[0]
    assert certify_max_orbits(10, [(t, c * 2)] + list(sol.terms[1:])).status == "failed"


def _cpwl_terms(d: int, ks: list[int], seed: int) -> list:
    rng = random.Random(seed)
    return [((-1) ** i, [[Fraction(rng.randint(-9, 9), rng.randint(1, 3)) for _ in range(d)] for _ in range(k)],
             [Fraction(rng.randint(-9, 9), 2) for _ in range(k)]) for i, k in enumerate(ks)]


def _cpwl_value(terms: list, x: list) -> Fraction:
    def affine(row: list, c: Fraction) -> Fraction:
        return sum((a * v for a, v in zip(row, x, strict=True)), c)

    return sum((s * max(affine(row, c) for row, c in zip(A, cs, strict=True)) for s, A, cs in terms),
               Fraction(0))


def test_cpwl_on_r8_with_two_hidden_layers():
    """d = 8: a term with 9 affine maps goes through the orbit-factorised max_9."""
    terms = _cpwl_terms(8, [9, 3, 1], seed=8)
    X = _rand(8, 3, seed=81)
    assert eval_sum_of_maxes_two_hidden(terms, X) == [_cpwl_value(terms, x) for x in X]
    with pytest.raises(ConstructionError, match="11 affine maps"):
        eval_sum_of_maxes_two_hidden(_cpwl_terms(10, [11], seed=1), _rand(10, 1, seed=1))


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("RELULAB_LONG_TESTS"),
                    reason="every neuron of the 10-input network at 2 points (about 1 CPU-minute); "
                           "set RELULAB_LONG_TESTS=1")
def test_cpwl_on_r9_with_two_hidden_layers():
    terms = _cpwl_terms(9, [10, 4], seed=9)
    X = _rand(9, 2, seed=91)
    assert eval_sum_of_maxes_two_hidden(terms, X) == [_cpwl_value(terms, x) for x in X]


def test_cli_reports_the_factorised_network_with_its_certificate(capsys):
    import json

    from conftest import run_cli

    code, out, _ = run_cli(capsys, "construct", "max", "--n", "9", "--hidden-layers", "2", "--json")
    rep = json.loads(out)
    assert code == 0 and rep["hidden_widths"] == [74, 24593726] and rep["orbits"] == 430
    assert rep["certificate"]["status"] == "certified" and rep["certificate"]["cones_covered"] == 362880
    assert rep["saved_to"] is None and rep["fewest_hidden_layers_here"] == 2


def test_cli_refuses_to_save_the_factorised_network(capsys, tmp_path, monkeypatch):
    from conftest import run_cli

    import relulab.construct as C

    # the refusal is what is tested here; the certificate runs in the test above
    monkeypatch.setattr(C, "certify_max_orbits", lambda n, sol: C.MaxNCertificate(
        n, "certified", (0, 0), 2, 1, 1, True, 0, None))
    target = tmp_path / "max9.onnx"
    code, _, err = run_cli(capsys, "construct", "max", "--n", "9", "--hidden-layers", "2", "-o", target)
    assert code == 1 and "24,593,726 second-layer neurons" in err and "stored_max_orbits" in err
    assert len(err.strip().splitlines()) == 1 and not target.exists()
