"""Training, fourth audit: data far from the origin (the 1-D pattern list is complete only
when its count says so; minimal-norm fits are solved translated, where the problem is the
same), and kinks closer than 1e-12 are kinks."""

from __future__ import annotations

from fractions import Fraction as Fr

import numpy as np
import pytest

from relulab import Network
from relulab.train import collapse_threshold, convex_fit, minnorm_classifier, minnorm_interpolant
from relulab.train.minnorm import function_cost, kinks_of
from relulab.train.patterns import activation_patterns


def _one_neuron_objective(x, y, lam) -> tuple[Fr, float]:
    """A balanced neuron active only at the last point, and its objective in Fractions."""
    Xa = np.column_stack([x, np.ones(x.size)])
    w = np.array([1.0, -(x[-1] - 1.0)])
    w /= np.linalg.norm(w)
    r = np.maximum(Xa @ w, 0.0)
    c = (y @ r - lam) / (r @ r)
    s = np.sqrt(c)
    W1, b1, W2 = s * w[0], s * w[1], s
    F = Fr
    out = [F(W2) * max(F(W1) * F(xi) + F(b1), F(0)) for xi in x]
    return (sum((o - F(yi)) ** 2 for o, yi in zip(out, y, strict=True)) / 2
            + F(lam) * (F(W1) ** 2 + F(b1) ** 2 + F(W2) ** 2) / 2), lam


@pytest.mark.parametrize("offset", [1e8, 1e9])
def test_a_pattern_list_of_data_far_from_zero_is_complete_only_when_it_is(offset):
    # float angles merged nearly parallel rows: 2 of 9 patterns, "complete", and the zero
    # network called the GLOBAL optimum while one neuron beat it
    x = offset + np.arange(5.0)
    y = np.array([0.0, 0.0, 1.0, -2.0, 1.0])
    M, _, complete = activation_patterns(np.column_stack([x, np.ones(5)]), 1000)
    assert not complete or M.shape[1] == 9
    Xa = np.column_stack([x, np.ones(5)])
    w = np.array([1.0, -(x[-1] - 1.0)])
    w /= np.linalg.norm(w)
    lam = 0.5 * abs(y @ np.maximum(Xa @ w, 0.0))
    better, _ = _one_neuron_objective(x, y, lam)
    fit = convex_fit(x[:, None], y, lam=lam)
    if fit.global_optimum:
        assert Fr(fit.objective) <= better * (1 + Fr(1, 10**6))
    t = collapse_threshold(x[:, None], y)
    assert not (t.exact and t.lam < lam)   # the neuron above shows the threshold exceeds lam


def test_the_pattern_list_of_ordinary_1d_data_is_still_complete():
    x = np.array([0.0, 1.0, 2.5, 3.0, 4.0])
    M, _, complete = activation_patterns(np.column_stack([x, np.ones(5)]), 1000)
    assert complete and M.shape[1] == 9


def _secant_tv(x, y) -> Fr:
    """The exact minimal cost of a free-bias interpolant with a skip: the total variation
    of the secant slopes (the linear spline attains it)."""
    xs, ys = [Fr(float(v)) for v in x], [Fr(float(v)) for v in y]
    slopes = [(ys[i + 1] - ys[i]) / (xs[i + 1] - xs[i]) for i in range(len(xs) - 1)]
    return sum(abs(slopes[i + 1] - slopes[i]) for i in range(len(slopes) - 1))


@pytest.mark.parametrize("offset", [1e9, 3e9])
def test_minnorm_of_data_far_from_zero_is_the_translated_fit(offset):
    # cost 14.5 "certified >= 14.5" for an optimum of 13.5 (x = 3e9 + k); the classifier 6
    # for 4
    k = np.arange(6.0)
    y = np.array([0.0, 1.0, -1.0, 2.0, 0.5, 0.0])
    opt = _secant_tv(offset + k, y)
    r = minnorm_interpolant(offset + k, y, bias="free", skip=True)
    assert Fr(r.lower_bound) <= opt * (1 + Fr(1, 10**9)) and Fr(r.cost) >= opt * (1 - Fr(1, 10**9))
    # (a float evaluation at x ~ 3e9 rounds w x + b by ~ eps 3e9 |w|: 1e-6 here)
    assert np.allclose(r.network((offset + k)[:, None]).ravel(), y, atol=1e-5)  # tol: float at 3e9
    labels = np.array([1, 1, -1, -1, 1, 1])
    far = minnorm_classifier(offset + k, labels, bias="free", skip=True)
    near = minnorm_classifier(k, labels, bias="free", skip=True)
    assert far.lower_bound <= near.cost * (1 + 1e-9) and far.cost == pytest.approx(near.cost, rel=1e-6)
    assert np.all(labels * far.network((offset + k)[:, None]).ravel() >= 1 - 1e-5)  # tol: float at 3e9


def test_kinks_closer_than_1e12_are_kinks():
    # a tent with kinks at 0, 1e-13 and 2e-13 (cost 4) read as the zero function, cost 0
    e = 1e-13
    tent = Network([[[1.0], [1.0], [1.0]], [[1 / e, -2 / e, 1 / e]]], [[0.0, -e, -2 * e], [0.0]])
    t, s, _, _ = kinks_of(tent)
    assert t.size == 3 and np.allclose(s * e, [1.0, -2.0, 1.0])
    assert function_cost(tent, "free", True) == pytest.approx(4 / e, rel=1e-9)
    # data 1e-12 apart: cost and "certified" bound 1e12, exact optimum 3e12
    x = np.array([0.0, 1.0, 2.0, 3.0]) * 1e-12
    y = np.array([0.0, 1.0, 0.0, 0.0])
    r = minnorm_interpolant(x, y, bias="free", skip=True)
    opt = _secant_tv(x, y)
    assert Fr(r.lower_bound) <= opt * (1 + Fr(1, 10**9)) and Fr(r.cost) >= opt * (1 - Fr(1, 10**9))
