"""Univariate CPWL, sawtooth and Yarotsky constructions, checked in exact arithmetic."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from relulab.construct import (
    ConstructionError,
    count_pieces,
    cpwl_1d,
    monomial,
    monomial_error,
    product,
    product_error,
    sawtooth,
    square_error,
    tent,
    univariate_pieces,
    yarotsky_square,
)


def _interp(bp, vals, sl, sr, x):
    """Independent evaluation of the CPWL specification."""
    if x <= bp[0]:
        return vals[0] + sl * (x - bp[0])
    if x >= bp[-1]:
        return vals[-1] + sr * (x - bp[-1])
    for i in range(len(bp) - 1):
        if bp[i] <= x <= bp[i + 1]:
            t = (x - bp[i]) / (bp[i + 1] - bp[i])
            return vals[i] + t * (vals[i + 1] - vals[i])
    raise AssertionError


@pytest.mark.parametrize("seed", range(8))
def test_cpwl_1d_exact(seed: int) -> None:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 12))
    bp = sorted({Fraction(int(v), 7) for v in rng.integers(-100, 100, 3 * k)})[:k]
    k = len(bp)
    vals = [Fraction(int(v), 5) for v in rng.integers(-20, 20, k)]
    sl, sr = Fraction(int(rng.integers(-5, 6)), 2), Fraction(int(rng.integers(-5, 6)), 3)
    net = cpwl_1d(bp, vals, sl, sr)
    assert net.is_exact and net.widths == (k + 1,)
    pts = list(bp) + [bp[0] - 3, bp[-1] + Fraction(5, 2)]
    pts += [Fraction(int(v), int(d)) for v, d in zip(rng.integers(-150, 150, 100),
                                                     rng.integers(1, 11, 100), strict=True)]
    Y = net(np.array([[p] for p in pts], dtype=object))
    for p, y in zip(pts, Y[:, 0], strict=True):
        assert y == _interp(bp, vals, sl, sr, p)
    # the exact pieces: one breakpoint wherever the slope changes
    slopes = [sl] + [(vals[i + 1] - vals[i]) / (bp[i + 1] - bp[i]) for i in range(k - 1)] + [sr]
    want = [bp[i] for i in range(k) if slopes[i] != slopes[i + 1]]
    pieces = univariate_pieces(net, bp[0] - 1, bp[-1] + 1)
    assert [p.lo for p in pieces[1:]] == want
    assert [p.slope for p in pieces] == [s for i, s in enumerate(slopes)
                                         if i == 0 or slopes[i - 1] != s]


def test_cpwl_1d_errors() -> None:
    with pytest.raises(ConstructionError, match="increase strictly"):
        cpwl_1d([0, 0], [1, 2])
    with pytest.raises(ConstructionError, match="2 breakpoints but 1 values"):
        cpwl_1d([0, 1], [1])


@pytest.mark.parametrize("L", range(1, 10))
def test_sawtooth_has_2_to_the_L_pieces(L: int) -> None:
    net = sawtooth(L)
    assert net.widths == (2,) * L and net.n_neurons == 2 * L
    pieces = univariate_pieces(net, 0, 1)
    assert len(pieces) == 2**L
    assert all(abs(p.slope) == 2**L for p in pieces)
    assert [p.lo for p in pieces] == [Fraction(j, 2**L) for j in range(2**L)]
    # values at the dyadic grid alternate 0, 1, 0, ...
    X = np.array([[Fraction(j, 2**L)] for j in range(2**L + 1)], dtype=object)
    assert net(X)[:, 0].tolist() == [j % 2 for j in range(2**L + 1)]


@pytest.mark.parametrize("L", [3, 6])
def test_sawtooth_piece_count_independent(L: int) -> None:
    # an independent count: exact slopes between consecutive points of a fine grid
    net = sawtooth(L)
    N = 2 ** (L + 2)
    X = np.array([[Fraction(j, N)] for j in range(N + 1)], dtype=object)
    y = net(X)[:, 0]
    slopes = [(y[j + 1] - y[j]) * N for j in range(N)]
    changes = sum(1 for j in range(N - 1) if slopes[j] != slopes[j + 1])
    assert changes + 1 == 2**L
    assert count_pieces(tent(), 0, 1) == 2


@pytest.mark.parametrize("m", range(0, 7))
def test_yarotsky_square_error_is_exactly_the_bound(m: int) -> None:
    net = yarotsky_square(m)
    N = 2**m
    assert net.n_hidden_layers == m
    if m:
        assert net.widths == (2,) + (3,) * (m - 1)
    # it interpolates x^2 at i/N and is linear in between
    X = np.array([[Fraction(i, N)] for i in range(N + 1)], dtype=object)
    assert net(X)[:, 0].tolist() == [Fraction(i, N) ** 2 for i in range(N + 1)]
    assert count_pieces(net, 0, 1) == N
    rep = square_error(m)
    assert rep.exact and rep.max_abs_error == Fraction(1, 2 ** (2 * m + 2)) == rep.bound
    (x,) = rep.argmax
    assert (x * 2 * N) % 2 == 1  # a midpoint (2i+1)/(2N)
    # no random point does better than the exact maximum
    rng = np.random.default_rng(m)
    pts = [Fraction(int(v), 997) for v in rng.integers(0, 998, 200)]
    Y = net(np.array([[p] for p in pts], dtype=object))[:, 0]
    assert max(abs(y - p * p) for p, y in zip(pts, Y, strict=True)) <= rep.max_abs_error


@pytest.mark.parametrize("m", [1, 2, 3])
def test_product_error_exact(m: int) -> None:
    net = product(m)
    assert net.n_hidden_layers == m and net.n_neurons == 9 * m - 3
    rep = product_error(m)
    delta = Fraction(1, 2 ** (2 * m + 2))
    # the bound 2 delta is attained at (0, 2^-m): there f_m((x+y)/2) errs by delta
    # at a midpoint and f_m(y) is exact at a node
    assert rep.max_abs_error == 2 * delta == rep.bound
    corner = np.array([[Fraction(0), Fraction(1, 2**m)]], dtype=object)
    assert net(corner)[0, 0] - 0 == 2 * delta
    rng = np.random.default_rng(m)
    P = np.array([[Fraction(int(a), 64), Fraction(int(b), 64)] for a, b in
                  rng.integers(0, 65, (300, 2))], dtype=object)
    Y = net(P)[:, 0]
    errs = [abs(y - p[0] * p[1]) for p, y in zip(P, Y, strict=True)]
    assert max(errs) <= rep.max_abs_error
    # every f_m is exact at 0 and 1, so p(1, 1) = 1 exactly
    assert net(np.array([[1, 1]], dtype=object))[0, 0] == 1


@pytest.mark.parametrize("k", [2, 3, 4])
def test_monomial_error(k: int) -> None:
    m = 3
    net = monomial(k, m)
    assert net.n_hidden_layers == m + (k - 2) * (m + 1)
    rep = monomial_error(k, m)
    assert rep.max_abs_error <= rep.upper <= rep.bound
    rng = np.random.default_rng(k)
    pts = [Fraction(int(v), 1009) for v in rng.integers(0, 1010, 150)]
    Y = net(np.array([[p] for p in pts], dtype=object))[:, 0]
    assert max(abs(y - p**k) for p, y in zip(pts, Y, strict=True)) <= rep.upper
    if k == 2:
        assert rep.exact and rep.max_abs_error == Fraction(1, 2 ** (2 * m + 2))
