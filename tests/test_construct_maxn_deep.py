"""Recursive substitution into certified two-hidden-layer max bases (construct.maxn_deep):
checked against max on random rational vectors with ties, on every ordering of a vector,
against the dense network's exact forward pass, and the CPWL sums of maxima against their
formula; the depth formulas against the real logarithm."""

from __future__ import annotations

import dataclasses
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from relulab.construct import (
    ConstructionError,
    certified_bases,
    certify_max_deep,
    deep_cap,
    deep_depth,
    deep_max_network,
    eval_max_deep,
    eval_sum_of_maxes,
    max_deep,
    max_n_deep,
    sum_of_maxes_deep,
    sum_of_maxes_network,
)
from relulab.construct._exact import ExactEvaluator

SMALL = [3, 4, 5, 6]


def _vectors(n: int, count: int, seed: int) -> list[list[Fraction]]:
    """Random rationals; half the rows get a tie at the maximum, some all equal."""
    rng = np.random.default_rng(seed)
    num = rng.integers(-60, 60, (count, n))
    den = rng.integers(1, 7, (count, n))
    X = [[Fraction(int(a), int(b)) for a, b in zip(r, d, strict=True)] for r, d in zip(num, den, strict=True)]
    for r in X[: count // 2]:
        r[int(rng.integers(n))] = max(r)
    X[-1] = [Fraction(-3, 2)] * n
    return X


def test_depth_formula_with_the_certified_bases() -> None:
    assert certified_bases() == [3, 4, 5, 6, 7, 8]
    # the 8-input base: cap(h) = 2 * 4^(h-1), i.e. ceil(log_4(n / 2)) + 1 hidden layers
    assert [deep_cap(h) for h in range(1, 7)] == [2 * 4 ** (h - 1) for h in range(1, 7)]
    for n in range(3, 3000):
        if n not in (8, 32, 128, 512, 2048):
            assert deep_depth(n) == math.ceil(math.log(n / 2) / math.log(4)) + 1
    # bases 3..6: log base 3, as the dense default of max_n_deep
    assert [deep_cap(h, SMALL) for h in range(1, 6)] == [2, 6, 18, 54, 162]


@pytest.mark.parametrize("n", [3, 7, 12, 13, 33, 64])
def test_random_rational_vectors_with_ties(n: int) -> None:
    dm = max_deep(n, bases=SMALL)
    assert dm.hidden_layers == deep_depth(n, SMALL)
    count = 10_000 if n <= 13 else 1500  # experiments/maxn_deep.py runs 10^4 up to n = 64
    X = _vectors(n, count, seed=n)
    assert eval_max_deep(dm, X) == [max(r) for r in X]
    assert certify_max_deep(dm).status == "certified"


@pytest.mark.parametrize("n,bases", [(6, [3]), (7, [4]), (7, SMALL)])
def test_every_ordering_of_a_vector(n: int, bases) -> None:
    # one point in every ordering cone (and in the cones' walls, through the ties)
    dm = max_deep(n, bases=bases)
    base = [Fraction(k * k - 7, 3) for k in range(n)]
    X = [list(p) for p in itertools.permutations(base)]
    X += [[base[(i * 3) % n] if i % 2 else base[0] for i in range(n)]]  # ties
    assert eval_max_deep(dm, X) == [max(r) for r in X]


@pytest.mark.parametrize("n,bases", [(5, SMALL), (9, SMALL), (12, [4, 6]), (8, [3])])
def test_dense_network_agrees_with_the_factorised_evaluation(n: int, bases) -> None:
    dm = max_deep(n, bases=bases)
    net = deep_max_network(dm)
    assert net.n_hidden_layers == dm.hidden_layers and tuple(net.widths) == dm.widths
    X = _vectors(n, 200, seed=3 * n)
    Y = ExactEvaluator(net)(np.array(X, dtype=object))[:, 0]
    assert list(Y) == eval_max_deep(dm, X) == [max(r) for r in X]
    netf = deep_max_network(dm, exact=False)
    Xf = np.array(X, dtype=np.float64)
    assert np.allclose(netf(Xf)[:, 0], Xf.max(axis=1), rtol=1e-12, atol=1e-12)


def test_large_bases_lower_the_depth() -> None:
    # 20 inputs: 3 hidden layers with a 7-input base on top (4 with bases 3..6)
    dm = max_deep(20)
    assert dm.hidden_layers == 3 and deep_depth(20, SMALL) == 4 and max(dm.bases_used) >= 7
    X = _vectors(20, 25, seed=20)
    assert eval_max_deep(dm, X) == [max(r) for r in X]
    with pytest.raises(ConstructionError, match="evaluate it exactly with eval_max_deep"):
        deep_max_network(dm)


def test_padding_shares_and_max_n_deep() -> None:
    dm = max_deep(5, hidden_layers=4, bases=SMALL)
    assert dm.hidden_layers == 4 and dm.widths[-1] == 2  # carried at the top
    net = max_n_deep(5, hidden_layers=4)
    assert net([1, 9, 3, Fraction(19, 2), 0])[0] == Fraction(19, 2)
    # fewer inputs than base inputs: a group repeats (max unchanged)
    dm = max_deep(4, bases=[5])
    assert eval_max_deep(dm, [[1, 7, 3, 7], [0, -1, -2, -3]]) == [7, 0]


def test_certificate_refuses_broken_structures() -> None:
    dm = max_deep(13, bases=SMALL)
    assert certify_max_deep(dm).status == "certified"
    top = list(dm.levels[-1])
    S, kind, b, kids = top[0]
    swapped = ((S, kind, b, (kids[1], kids[0], *kids[2:])),)  # two groups' nodes exchanged
    bad = dataclasses.replace(dm, levels=(*dm.levels[:-1], swapped))
    c = certify_max_deep(bad)
    assert c.status == "failed" and "children do not match" in c.reason
    X = _vectors(13, 50, seed=1)
    assert eval_max_deep(bad, X) != [max(r) for r in X]  # the evaluator sees it too
    lv = list(dm.levels)
    lv[-2] = tuple(lv[-2][:-1]) + ((lv[-2][-1][0], "leaf", 0, ()),)
    assert certify_max_deep(dataclasses.replace(dm, levels=tuple(lv))).status == "failed"


def test_sum_of_maxes_is_exact_on_every_piece() -> None:
    # random CPWL functions on R^d as sums of +-max of d + 1 affine maps
    rng = np.random.default_rng(7)
    for d in (1, 2, 3, 4):
        terms = [(int(s), rng.integers(-4, 5, (d + 1, d)).tolist(), rng.integers(-3, 4, d + 1).tolist())
                 for s in (1, -1, 1)]
        H, nets = sum_of_maxes_deep(terms)
        assert H == deep_depth(d + 1) == (1 if d == 1 else 2)
        net = sum_of_maxes_network(terms)
        assert net.n_hidden_layers == H
        X = [[Fraction(int(a), int(b)) for a, b in zip(rng.integers(-30, 30, d), rng.integers(1, 5, d),
                                                       strict=True)] for _ in range(400)]

        def f(x, terms=terms):
            return sum(s * max(sum((Fraction(a) * v for a, v in zip(Ak, x, strict=True)), Fraction(ck))
                               for Ak, ck in zip(A, c, strict=True)) for s, A, c in terms)

        # every piece: a point where each term's argmax is a given map (found among the samples)
        pieces = {tuple(int(np.argmax([float(sum(Fraction(a) * v for a, v in zip(Ak, x, strict=True)) + ck)
                                       for Ak, ck in zip(A, c, strict=True)])) for _, A, c in terms)
                  for x in X}
        assert len(pieces) > 1
        want = [f(x) for x in X]
        assert eval_sum_of_maxes(terms, X) == want
        assert ExactEvaluator(net)(np.array(X, dtype=object))[:, 0].tolist() == want


def test_bad_input() -> None:
    for bad in (1, 0, -2, 2.5, True):
        with pytest.raises(ConstructionError, match="n must be an integer >= 2"):
            max_deep(bad)
    with pytest.raises(ConstructionError, match="2 hidden layers cannot compute max of 9"):
        max_deep(9, hidden_layers=2)
    with pytest.raises(ConstructionError, match="no two-hidden-layer base for n = \\[40\\]"):
        max_deep(9, bases=[40])
    dm = max_deep(4)
    with pytest.raises(ConstructionError, match="rows of 4 numbers"):
        eval_max_deep(dm, [[1, 2, 3]])
    with pytest.raises(ConstructionError, match="rational numbers"):
        eval_max_deep(dm, [[1, 2, 3, float("nan")]])
    with pytest.raises(ConstructionError, match="sign"):
        sum_of_maxes_deep([(2, [[1]], [0])])
    with pytest.raises(ConstructionError, match="term 1 has 2 columns"):
        sum_of_maxes_deep([(1, [[1]], [0]), (1, [[1, 2]], [0])])
    with pytest.raises(ConstructionError, match="hidden_layers must be an integer >= 1"):
        deep_cap(0)


@pytest.mark.parametrize("a,c", [(0, 3), (3, 0), (1, 2)])
def test_a_wrong_template_term_fails_the_proof_whatever_the_points(monkeypatch, a, c):
    # the template check compared 3 random points: a term relu(y_c - y_a), zero wherever
    # y_a >= y_c, passed when all 3 had y_a >= y_c and the proof said "certified" for a
    # network off max by 5/24.  It now checks every ordering cone's generators.
    import dataclasses

    import relulab.construct.maxn_deep as D

    b = 4
    good = D._base(b)
    T = good.T.copy()
    T[0, D._union_slot(b, a, c)] += good.tden   # + relu(y_c - y_a) in row 0
    T[0, a] -= good.tden
    bad = dataclasses.replace(good, T=T)
    orig = D._base
    monkeypatch.setattr(D, "_base", lambda n0: bad if n0 == b else orig(n0))
    cert = D.certify_max_deep(D.max_deep(4, bases=[4]))
    assert cert.status == "failed" and "template" in cert.reason
    monkeypatch.setattr(D, "_base", orig)
    assert D.certify_max_deep(D.max_deep(4, bases=[4])).status == "certified"
