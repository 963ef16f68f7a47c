"""Integral representations of polynomials by two-layer ReLU networks (construct.integral)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from relulab.construct.integral import (
    harmonic_extension,
    integral_representation,
    l2_error,
    mc_variance,
    quadrature_network,
    sample_distribution,
)
from relulab.construct.polynomial import Polynomial, parse_polynomial, sphere_moment
from relulab.errors import RelulabError

small_q = st.fractions(min_value=-3, max_value=3, max_denominator=7)


@given(coefs=st.lists(small_q, min_size=1, max_size=7), radius=st.sampled_from(["1", "2", "3/2"]),
       form=st.sampled_from(["plain", "sharpened"]), t=st.fractions(min_value=-1, max_value=1,
                                                                    max_denominator=11))
def test_1d_representation_is_exact(coefs, radius, form, t) -> None:
    # every polynomial of degree <= 6 in 1-D, at rational points of [-R, R], in Fractions
    p = Polynomial(1, {(k,): c for k, c in enumerate(coefs)})
    rep = integral_representation(p, radius, form)
    x = t * Fraction(radius)
    assert rep.exact_value([x]) == p.exact([x])


def _poly_scale(p: Polynomial, R: float) -> float:
    return sum(abs(float(c)) * R ** sum(m) for m, c in p.terms.items())


@pytest.mark.parametrize("text", ["x^2 + xy", "x^3*y - 2y^2 + x - 1", "x^4 + y^4 + 3x^2*y^2 - x^5",
                                  "1/3 x^6 - y^3 + x*y"])
@pytest.mark.parametrize("form", ["plain", "sharpened"])
def test_2d_representation_by_quadrature(text: str, form: str) -> None:
    # the b-integral is in closed form, the angle by 256-point Gauss-Legendre on an arc
    # where the integrand is a trigonometric polynomial of degree <= 2 deg p (plain) or a
    # smooth function (sharpened): the quadrature is exact up to round-off, i.e. a few
    # hundred terms of size <= scale: 1e-11 x scale leaves a margin of 100x over 1e-16 x 256
    rep = integral_representation(text, radius=2, form=form)
    X = np.random.default_rng(1).uniform(-1.4, 1.4, (25, 2))
    err = np.abs(rep.quadrature_value(X) - rep.target(X)).max()
    assert err < 1e-11 * _poly_scale(rep.target, 2.0)


def test_ridge_densities_against_trapezoid() -> None:
    # E_w[c_k(w) <w, x>^k] = p_k(x): the trapezoid rule with 64 angles is exact for
    # trigonometric polynomials of degree < 64 (here <= 2k = 10)
    p = parse_polynomial("x^5 - 3x^2*y^3 + 2x*y^4")
    rep = integral_representation(p, 1)
    th = 2 * np.pi * np.arange(64) / 64
    W = np.stack([np.cos(th), np.sin(th)], axis=1)
    ck = Polynomial(2, rep.ridge[5])
    x = np.array([0.3, -0.7])
    val = np.mean(ck(W) * (W @ x) ** 5)
    assert abs(val - p(x[None])[0]) < 1e-13


def test_sphere_moments_against_known_values() -> None:
    assert sphere_moment((2, 0, 0)) == Fraction(1, 3)
    assert sphere_moment((4, 0, 0)) == Fraction(1, 5)
    assert sphere_moment((2, 2, 0)) == Fraction(1, 15)
    assert sphere_moment((3, 1)) == 0
    th = 2 * np.pi * np.arange(32) / 32        # d = 2: exact trapezoid
    for a, b in [(4, 0), (2, 2), (6, 2), (0, 8)]:
        num = np.mean(np.cos(th) ** a * np.sin(th) ** b)
        assert abs(num - float(sphere_moment((a, b)))) < 1e-15
    assert sphere_moment((2,)) == 1 and sphere_moment((0,)) == 1     # d = 1: w = +-1


def test_harmonic_extension() -> None:
    p = parse_polynomial("x^4 - 3x^2*y + y^2*x^2 + 5y - 2 + x^3")
    for r in (Fraction(1), Fraction(5, 2)):
        q = harmonic_extension(p, r)
        # harmonic: the Laplacian vanishes coefficientwise
        lap: dict = {}
        for m, c in q.terms.items():
            for i, e in enumerate(m):
                if e >= 2:
                    mm = list(m)
                    mm[i] -= 2
                    lap[tuple(mm)] = lap.get(tuple(mm), 0) + c * e * (e - 1)
        assert all(v == 0 for v in lap.values())
        # equal to p on the sphere |x| = r at rational points (Pythagorean triples)
        for a, b, c in [(3, 4, 5), (5, 12, 13), (8, 15, 17), (-7, 24, 25)]:
            for s1, s2 in [(1, 1), (-1, 1), (1, -1)]:
                x = [r * s1 * Fraction(a, c), r * s2 * Fraction(b, c)]
                assert q.exact(x) == p.exact(x)


def test_sharpened_on_sphere_represents_p_there() -> None:
    rep = integral_representation("x^2*y + x^2 + y^2 + xy^3", radius=1, form="sharpened", sphere_radius=1)
    th = np.linspace(0, 2 * np.pi, 13)
    X = np.stack([np.cos(th), np.sin(th)], axis=1)
    assert np.abs(rep.quadrature_value(X) - rep.target(X)).max() < 1e-12
    # and it is not p inside the ball
    assert abs(rep.quadrature_value([[0.1, 0.2]])[0] - rep.target([[0.1, 0.2]])[0]) > 0.1


def test_1d_grid_network_is_exact_and_converges() -> None:
    rep = integral_representation("x^3 - 2x^2 + x/2", radius=1)
    X = sample_distribution("ball", 4000, 1)
    errs = []
    for N in (8, 32, 128, 512):
        net = quadrature_network(rep, N)
        assert net.is_exact and net.widths == (N + 2,)
        errs.append(l2_error(net, rep.target, X))
    # midpoint rule: error O(N^-2), so each 4x in width divides it by about 16
    assert all(b < a / 8 for a, b in zip(errs, errs[1:], strict=False)), errs


def test_2d_grid_and_mc_errors_decrease() -> None:
    rep = integral_representation("x^2 + xy - y^3", radius=1, form="sharpened")
    X = sample_distribution("ball", 3000, 2, seed=3)
    grid = [l2_error(quadrature_network(rep, N, "grid"), rep.target, X) for N in (64, 256, 1024, 4096)]
    assert all(b < a for a, b in zip(grid, grid[1:], strict=False)), grid
    # Monte Carlo: RMS over 8 seeds; 16x the width divides the expected error by 4
    def rms(N: int) -> float:
        return math.sqrt(np.mean([l2_error(quadrature_network(rep, N, "mc", s), rep.target, X) ** 2
                                  for s in range(8)]))
    a, b = rms(128), rms(2048)
    assert b < a / 2
    # and the measured RMS error sits below the bound sqrt(V / N) (V sampled)
    V = mc_variance(rep, X)
    assert b < math.sqrt(V / 2048) * 1.5


def test_sharpened_variance_is_smaller() -> None:
    X = sample_distribution("ball", 2000, 3)
    for text in ("x1^2 + x2*x3", "x1^3 - x2^2*x3 + x3"):
        Vp = mc_variance(integral_representation(text, 1, "plain"), X)
        Vs = mc_variance(integral_representation(text, 1, "sharpened"), X)
        assert Vs < Vp


@given(coefs=st.lists(small_q, min_size=1, max_size=6), d=st.integers(1, 4), seed=st.integers(0, 99))
def test_polynomial_text_round_trip(coefs, d, seed) -> None:
    rng = np.random.default_rng(seed)
    p = Polynomial(d, {tuple(int(v) for v in rng.integers(0, 4, d)): c for c in coefs})
    assert parse_polynomial(str(p), d) == p


def test_exact_network_onnx_export_agrees() -> None:
    ort = pytest.importorskip("onnxruntime")
    from relulab.io.onnx import network_to_onnx

    rep = integral_representation("x^3 - 2x^2 + x/2", Fraction(3, 2), "sharpened")
    net = quadrature_network(rep, 64)
    assert net.is_exact
    sess = ort.InferenceSession(network_to_onnx(net).SerializeToString(),
                                providers=["CPUExecutionProvider"])
    xs = [Fraction(k, 17) for k in range(-25, 26)]
    exact = np.array([float(net([x])[0]) for x in xs])
    got = sess.run(None, {"input": np.array([[float(x)] for x in xs])})[0][:, 0]
    assert np.all(np.abs(got - exact) <= 1e-12 * np.maximum(1.0, np.abs(exact)))


def test_bad_input() -> None:
    for text in ("", "x^", "x + + ", "2q", "x1 + y", "x^2.5", "x^-1"):
        with pytest.raises(RelulabError):
            parse_polynomial(text)
    with pytest.raises(RelulabError, match="radius"):
        integral_representation("x^2", radius=0)
    with pytest.raises(RelulabError, match="form"):
        integral_representation("x^2", form="fancy")
    with pytest.raises(RelulabError, match="sphere_radius"):
        integral_representation("x^2", 1, "sharpened", sphere_radius=2)
    with pytest.raises(RelulabError, match="sphere_radius"):
        integral_representation("x^2", 1, "plain", sphere_radius=1)
    rep = integral_representation("x1^2 + x2*x3", 1)
    with pytest.raises(RelulabError, match="grid"):
        quadrature_network(rep, 64, "grid")
    with pytest.raises(RelulabError, match="rule"):
        quadrature_network(rep, 64, "simpson")
    with pytest.raises(RelulabError, match="width"):
        quadrature_network(rep, 1, "mc")
    with pytest.raises(RelulabError, match="d = 1"):
        rep.exact_value([0, 0, 0])
    with pytest.raises(RelulabError, match="dim"):
        parse_polynomial("x*y*z", dim=2)
    with pytest.raises(RelulabError, match="limit"):
        integral_representation("x1^10", 1, dim=12)


def test_a_degree_beyond_the_limit_is_refused_before_any_work() -> None:
    # x^99999999 looped over every degree up to it, and x^300000 ran its sphere moments for
    # minutes, with no error (aud_con5 #1); the limit's own degree is still represented
    from relulab.construct.integral import MAX_DEGREE

    for text in (f"x^{MAX_DEGREE + 1} + y", "x^300000", "x^99999999"):
        with pytest.raises(RelulabError, match="above the limit"):
            integral_representation(text)
        with pytest.raises(RelulabError, match="harmonic_extension: the polynomial has degree"):
            harmonic_extension(text)
    rep = integral_representation(f"x^{MAX_DEGREE} - x^3")
    assert rep.exact_value([Fraction(1, 2)]) == Fraction(1, 2) ** MAX_DEGREE - Fraction(1, 8)
    assert sorted(rep.ridge) == [3, MAX_DEGREE]
