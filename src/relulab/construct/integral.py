"""Integral representations of polynomials by two-layer ReLU networks, and their quadrature.

Every polynomial p on the ball ``|x| <= R`` of R^d is written exactly as

    p(x) = const + <g, x> + E_w[ integral over b of a(w, b) relu(<w, x> - b) db ]

with w uniform on the unit sphere, b in an interval and a polynomial density a: an
infinitely wide two-layer ReLU network (Barron's view, as in A. Lee, "Explicit integral
representations and quantitative bounds for two-layer ReLU networks", 2026).  The
construction (ours, in exact rational arithmetic; the paper's body was not available
here, only its abstract):

1. Ridge densities.  Each homogeneous part p_k (k >= 2) is ``E_w[c_k(w) <w, x>^k]`` for
   one homogeneous c_k of degree k: the operator ``c -> E_w[c(w) <w, .>^k]`` is positive
   definite on those polynomials (its kernel is a Gram kernel), so c_k solves a rational
   linear system built from the exact sphere moments.  c_k is the minimum-L2(sphere)
   density (the projection onto spherical harmonics of degree <= k with k's parity).
2. Ridge powers as ReLU integrals (Taylor's formula with integral remainder), |t| <= R:

   * plain form: ``t^k = (-R)^k + k(-R)^(k-1)(t + R) + int_{-R}^{R} k(k-1) b^(k-2) relu(t - b) db``
     (b over [-R, R], an affine correction);
   * sharpened form: expanded at 0 on both sides and folded with ``(w, b) -> (-w, -b)``:
     ``E_w[c_k(w) t^k] = E_w[int_0^R 2 k(k-1) b^(k-2) c_k(w) relu(t - b) db]`` (b over [0, R],
     no correction: the neurons only fire where <w, x> > b >= 0), and, when the data lie
     on a sphere |x| = r, p is first replaced by its **harmonic extension** from that
     sphere (the harmonic polynomial equal to p there: ``p = q + (|x|^2 - r^2) s``,
     ``Laplace q = 0``, solved exactly), which drops the |x|^2-multiples of p.

Finite networks come from quadrature of the (w, b) integral: ``rule="grid"`` (midpoint
in b; d = 1: w = +-1, all weights rational, the network is **exact** (Fractions) for a
rational R; d = 2: equispaced angles, float64) or ``rule="mc"`` (Monte Carlo: w uniform,
b uniform; float64; any d).  For Monte Carlo the L2(D) error obeys

    E ||f_N - p||^2_{L2(D)} = (V - ||p - affine||^2) / N <= V / N,
    V = |b-range|^2 E_{w, b, x~D}[a(w, b)^2 relu(<w, x> - b)^2],

the quantitative bound compared in ``experiments/integral_repr.py`` (V estimated by
sampling).

Example:
    >>> rep = integral_representation("x^2 + xy", radius=1)
    >>> net = quadrature_network(rep, 4096, rule="grid")
    >>> X = np.random.default_rng(0).uniform(-0.7, 0.7, (200, 2))
    >>> bool(np.abs(net(X)[:, 0] - rep.target(X)).max() < 1e-3)
    True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import RelulabError
from ..network import Network, NetworkError
from ..results import Result
from ._builder import check_size
from ._errors import ConstructionError
from .polynomial import Polynomial, monomials, parse_polynomial, solve_exact, sphere_moment

__all__ = ["IntegralRepresentation", "integral_representation", "harmonic_extension",
           "quadrature_network", "sample_distribution", "l2_error", "mc_variance",
           "QuadratureReport", "quadrature_report"]

FORMS = ("plain", "sharpened")
MAX_EXACT_SYSTEM = 600  # monomials per exact Gauss-Jordan solve (cubic cost in Fractions)
# Polynomials of higher degree are refused: the exact sphere moments cost about degree^2
# (x^16000 0.15 s, x^128000 11 s, x^99999999 did not finish), and a loop over every
# degree up to x^99999999's ran for minutes before any of them
MAX_DEGREE = 10_000
RULES = ("grid", "mc")
DISTRIBUTIONS = ("ball", "sphere")

Poly = dict[tuple[int, ...], Fraction]


# ------------------------------------------------------------------ polynomial algebra
def _add(p: Poly, q: Poly, s: Fraction = Fraction(1)) -> Poly:
    out = dict(p)
    for m, c in q.items():
        out[m] = out.get(m, Fraction(0)) + s * c
    return {m: c for m, c in out.items() if c != 0}


def _mul(p: Poly, q: Poly) -> Poly:
    out: Poly = {}
    for m1, c1 in p.items():
        for m2, c2 in q.items():
            m = tuple(a + b for a, b in zip(m1, m2, strict=True))
            out[m] = out.get(m, Fraction(0)) + c1 * c2
    return {m: c for m, c in out.items() if c != 0}


def _laplacian(p: Poly) -> Poly:
    out: Poly = {}
    for m, c in p.items():
        for i, e in enumerate(m):
            if e >= 2:
                mm = list(m)
                mm[i] -= 2
                out[tuple(mm)] = out.get(tuple(mm), Fraction(0)) + c * e * (e - 1)
    return {m: c for m, c in out.items() if c != 0}


def _as_poly(poly: Polynomial | str, dim: int | None = None, where: str = "integral_representation") -> Polynomial:
    """``poly`` as a :class:`Polynomial` of degree at most :data:`MAX_DEGREE`.

    Example:
        >>> _as_poly("x^20001")
        Traceback (most recent call last):
        ...
        relulab.errors.RelulabError: integral_representation: the polynomial has degree 20001, above the limit of 10000
    """
    if isinstance(poly, str):
        poly = parse_polynomial(poly, dim)
    elif not isinstance(poly, Polynomial):
        raise RelulabError(f"expected a Polynomial or its text, got {type(poly).__name__}")
    if poly.degree > MAX_DEGREE:
        raise RelulabError(f"{where}: the polynomial has degree {poly.degree}, above the limit of {MAX_DEGREE}")
    return poly


def _rational(v: Any, what: str) -> Fraction:
    try:
        f = Fraction(str(v)) if isinstance(v, float) else Fraction(v)
    except (TypeError, ValueError, ZeroDivisionError):
        raise RelulabError(f"{what}: expected a number, got {v!r}") from None
    return f


def harmonic_extension(poly: Polynomial | str, sphere_radius: Any = 1) -> Polynomial:
    """The harmonic polynomial q equal to ``poly`` on the sphere ``|x| = r``: the unique
    solution of ``poly = q + (|x|^2 - r^2) s``, ``Laplace q = 0`` (exact).

    Example:
        >>> str(harmonic_extension("x^2 + y^2 + x*y", 2))
        'x*y + 4'
    """
    p = _as_poly(poly, where="harmonic_extension")
    r = _rational(sphere_radius, "harmonic_extension: sphere_radius")
    if r <= 0:
        raise RelulabError(f"harmonic_extension: sphere_radius must be > 0, got {sphere_radius}")
    d, n = p.dim, p.degree
    if n < 2:
        return p
    basis = [m for k in range(n - 1) for m in monomials(d, k)]       # s has degree <= n - 2
    if len(basis) > MAX_EXACT_SYSTEM:
        raise RelulabError(f"harmonic_extension: degree {n} in {d} variables needs an exact solve "
                           f"with {len(basis)} unknowns (limit {MAX_EXACT_SYSTEM})")
    rows = {m: i for i, m in enumerate(basis)}                       # Laplace(...) too
    quad: Poly = {tuple(2 if j == i else 0 for j in range(d)): Fraction(1) for i in range(d)}
    quad[(0,) * d] = -r * r
    # Laplace((|x|^2 - r^2) m) for each basis monomial m: the columns of the system
    A = [[Fraction(0)] * len(basis) for _ in basis]
    for j, m in enumerate(basis):
        for mm, c in _laplacian(_mul(quad, {m: Fraction(1)})).items():
            A[rows[mm]][j] += c
    rhs = [Fraction(0)] * len(basis)
    for mm, c in _laplacian(p.terms).items():
        rhs[rows[mm]] += c
    s = dict(zip(basis, solve_exact(A, rhs), strict=True))
    q = _add(p.terms, _mul(quad, {m: c for m, c in s.items() if c != 0}), Fraction(-1))
    return Polynomial(d, q)


def _ridge_density(pk: Poly, d: int, k: int) -> Poly:
    """c_k (homogeneous of degree k) with E_w[c_k(w) <w, x>^k] = p_k(x), exactly.  The
    moment E[w^(b+g)] vanishes unless b and g have the same parity in every coordinate,
    so the system splits into one block per parity pattern."""
    basis = list(monomials(d, k))
    fact = math.factorial(k)
    blocks: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
    for m in basis:
        blocks.setdefault(tuple(e % 2 for e in m), []).append(m)
    out: Poly = {}
    for block in blocks.values():
        rhs = [pk.get(g, Fraction(0)) for g in block]
        if not any(rhs):
            continue
        if len(block) > MAX_EXACT_SYSTEM:
            raise RelulabError(f"integral_representation: degree {k} in {d} variables needs an exact "
                               f"solve with {len(block)} unknowns (limit {MAX_EXACT_SYSTEM})")
        A = []
        for g in block:
            multinom = fact // math.prod(math.factorial(e) for e in g)
            A.append([multinom * sphere_moment(tuple(a + b for a, b in zip(g, bb, strict=True)))
                      for bb in block])
        out.update({m: c for m, c in zip(block, solve_exact(A, rhs), strict=True) if c != 0})
    return out


# ------------------------------------------------------------------ the representation
@dataclass(frozen=True)
class IntegralRepresentation:
    """``p(x) = const + <linear, x> + E_w[int_{b_lo}^{b_hi} a(w, b) relu(<w, x> - b) db]``
    for ``|x| <= radius`` (and ``|x| = sphere_radius`` when the harmonic extension was
    taken), ``a(w, b) = fold * sum_k k(k-1) b^(k-2) c_k(w)``, w uniform on the sphere.

    Example:
        >>> rep = integral_representation("x^3", radius=2)
        >>> str(rep.exact_value([Fraction(3, 2)]))        # exact integration (d = 1)
        '27/8'
    """

    target: Polynomial
    represented: Polynomial
    form: str
    radius: Fraction
    sphere_radius: Fraction | None
    b_lo: Fraction
    b_hi: Fraction
    fold: int
    ridge: dict[int, Poly] = field(default_factory=dict)
    const: Fraction = Fraction(0)
    linear: tuple[Fraction, ...] = ()

    @property
    def dim(self) -> int:
        return self.target.dim

    def density_coefficients(self, W: np.ndarray) -> np.ndarray:
        """alpha[i, j] with ``a(w_i, b) = sum_j alpha[i, j] b^j`` (float64)."""
        W = np.atleast_2d(np.asarray(W, dtype=np.float64))
        n = max(self.ridge, default=2)
        alpha = np.zeros((len(W), max(n - 1, 1)))
        for k, ck in self.ridge.items():
            val = np.zeros(len(W))
            for m, c in ck.items():
                val += float(c) * np.prod(W ** np.array(m), axis=1)
            alpha[:, k - 2] += self.fold * k * (k - 1) * val
        return alpha

    def density(self, W: np.ndarray, B: np.ndarray) -> np.ndarray:
        """a(w_i, b_i) for rows w_i of W and entries b_i of B (float64)."""
        alpha = self.density_coefficients(W)
        B = np.asarray(B, dtype=np.float64)
        return np.sum(alpha * B[:, None] ** np.arange(alpha.shape[1]), axis=1)

    def density_exact(self, w: Any, b: Any) -> Fraction:
        """a(w, b) exactly at a rational w (need not be a unit vector) and b."""
        w = [Fraction(v) for v in w]
        b = Fraction(b)
        out = Fraction(0)
        for k, ck in self.ridge.items():
            cw = sum((c * math.prod((wi ** e for wi, e in zip(w, m, strict=True)), start=Fraction(1))
                      for m, c in ck.items()), Fraction(0))
            out += self.fold * k * (k - 1) * b ** (k - 2) * cw
        return out

    def _inner(self, alpha: np.ndarray, t: np.ndarray) -> np.ndarray:
        """int_{b_lo}^{b_hi} sum_j alpha_j b^j relu(t - b) db, exactly per (row, t)."""
        lo = float(self.b_lo)
        up = np.clip(t, lo, float(self.b_hi))
        out = np.zeros(np.broadcast(alpha[..., 0], t).shape)
        for j in range(alpha.shape[-1]):
            def F(b: np.ndarray, j: int = j) -> np.ndarray:
                return t * b ** (j + 1) / (j + 1) - b ** (j + 2) / (j + 2)
            out = out + alpha[..., j] * (F(up) - F(np.full_like(up, lo)))
        return out

    def quadrature_value(self, X: Any, n_nodes: int = 256) -> np.ndarray:
        """The integral evaluated numerically at the rows of X (d <= 2): the b-integral
        in closed form, the sphere exactly (d = 1: w = +-1) or by Gauss-Legendre on the arc
        where a neuron can fire (d = 2).  Independent of the Taylor identity: a check.

        Example:
            >>> rep = integral_representation("x^2*y - y^3 + x", radius=1, form="sharpened")
            >>> x = np.array([[0.3, -0.4]])
            >>> bool(abs(rep.quadrature_value(x)[0] - rep.target(x)[0]) < 1e-12)
            True
        """
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        d = self.dim
        if X.shape[1] != d:
            raise RelulabError(f"quadrature_value: X has {X.shape[1]} columns, expected {d}")
        aff = float(self.const) + X @ np.array([float(v) for v in self.linear])
        if d == 1:
            W = np.array([[1.0], [-1.0]])
            alpha = self.density_coefficients(W)
            t = X @ W.T                                        # (n, 2)
            return aff + 0.5 * self._inner(alpha[None, :, :], t).sum(axis=1)
        if d != 2:
            raise RelulabError("quadrature_value: only d <= 2 (use quadrature_network for more)")
        g, gw = np.polynomial.legendre.leggauss(n_nodes)
        out = np.empty(len(X))
        for i, x in enumerate(X):
            phi = math.atan2(x[1], x[0])
            if self.b_lo >= 0:   # neurons fire only where <w, x> > 0: the half circle around x
                th, wt = phi + g * (math.pi / 2), gw * (math.pi / 2)
            else:                # the integrand is a trigonometric polynomial: whole circle
                th, wt = phi + g * math.pi, gw * math.pi
            W = np.stack([np.cos(th), np.sin(th)], axis=1)
            vals = self._inner(self.density_coefficients(W), W @ x)
            out[i] = aff[i] + float(wt @ vals) / (2 * math.pi)
        return out

    def exact_value(self, x: Any) -> Fraction:
        """The integral at a rational point, exactly (d = 1: w = +-1 with mass 1/2 each,
        the b-integral by antiderivatives in Fractions).

        Example:
            >>> rep = integral_representation("x^4 - 2x^2", radius=1, form="sharpened")
            >>> rep.exact_value([Fraction(1, 3)]) == rep.target.exact([Fraction(1, 3)])
            True
        """
        if self.dim != 1:
            raise RelulabError("exact_value: exact integration is implemented for d = 1 only "
                               "(use quadrature_value for d = 2)")
        xv = Fraction(x[0]) if isinstance(x, (list, tuple)) else Fraction(x)
        total = self.const + self.linear[0] * xv
        for w in (1, -1):
            t = w * xv
            up = min(max(t, self.b_lo), self.b_hi)
            poly: dict[int, Fraction] = {}
            for k, ck in self.ridge.items():
                cw = sum((c * Fraction(w) ** m[0] for m, c in ck.items()), Fraction(0))
                poly[k - 2] = poly.get(k - 2, Fraction(0)) + self.fold * k * (k - 1) * cw
            for j, aj in poly.items():
                def F(b: Fraction, j: int = j, t: Fraction = t) -> Fraction:
                    return t * b ** (j + 1) / (j + 1) - b ** (j + 2) / (j + 2)
                total += Fraction(1, 2) * aj * (F(up) - F(self.b_lo))
        return total

    def describe(self) -> dict:
        """A plain summary (exact numbers as strings).

        Example:
            >>> integral_representation("x^2").describe()["b_range"]
            ['-1', '1']
        """
        return {"target": str(self.target), "represented": str(self.represented), "form": self.form,
                "dim": self.dim, "radius": str(self.radius),
                "sphere_radius": None if self.sphere_radius is None else str(self.sphere_radius),
                "b_range": [str(self.b_lo), str(self.b_hi)], "fold": self.fold,
                "ridge_densities": {str(k): str(Polynomial(self.dim, c)) for k, c in self.ridge.items()},
                "affine": {"const": str(self.const), "linear": [str(v) for v in self.linear]}}


def integral_representation(poly: Polynomial | str, radius: Any = 1, form: str = "plain",
                            sphere_radius: Any = None, dim: int | None = None) -> IntegralRepresentation:
    """The exact integral representation of ``poly`` on ``|x| <= radius`` (module
    docstring).  ``form="sharpened"`` folds b onto [0, R]; with ``sphere_radius=r`` (<= R)
    it also replaces poly by its harmonic extension from ``|x| = r`` (then the
    representation is valid on that sphere only).

    Example:
        >>> rep = integral_representation("x^2 + y^2", radius=1, form="sharpened", sphere_radius=1)
        >>> str(rep.represented), rep.ridge                # |x|^2 = 1 on the sphere
        ('1', {})
    """
    p = _as_poly(poly, dim)
    R = _rational(radius, "integral_representation: radius")
    if R <= 0:
        raise RelulabError(f"integral_representation: radius must be > 0, got {radius}")
    if form not in FORMS:
        raise RelulabError(f"integral_representation: form must be one of {', '.join(FORMS)}, got {form!r}")
    r = None
    q = p
    if sphere_radius is not None:
        if form != "sharpened":
            raise RelulabError("integral_representation: sphere_radius (harmonic extension) "
                               "belongs to form='sharpened'")
        r = _rational(sphere_radius, "integral_representation: sphere_radius")
        if not 0 < r <= R:
            raise RelulabError(f"integral_representation: need 0 < sphere_radius <= radius, got {sphere_radius!r}")
        q = harmonic_extension(p, r)
    d = p.dim
    const = q.homogeneous(0).terms.get((0,) * d, Fraction(0))
    linear = [q.terms.get(tuple(1 if j == i else 0 for j in range(d)), Fraction(0)) for i in range(d)]
    ridge: dict[int, Poly] = {}
    for k in sorted({sum(m) for m in q.terms if sum(m) >= 2}):   # the degrees present only
        ridge[k] = _ridge_density(q.homogeneous(k).terms, d, k)
    if form == "plain":
        for k, ck in ridge.items():
            Ec = sum((c * sphere_moment(m) for m, c in ck.items()), Fraction(0))
            const += (-R) ** k * (1 - k) * Ec
            for i in range(d):
                Ecw = sum((c * sphere_moment(tuple(e + (1 if j == i else 0) for j, e in enumerate(m)))
                           for m, c in ck.items()), Fraction(0))
                linear[i] += k * (-R) ** (k - 1) * Ecw
        return IntegralRepresentation(p, q, form, R, r, -R, R, 1, ridge, const, tuple(linear))
    return IntegralRepresentation(p, q, form, R, r, Fraction(0), R, 2, ridge, const, tuple(linear))


# ------------------------------------------------------------------ finite networks
def _affine_neurons(rep: IntegralRepresentation, exact: bool) -> tuple[list, list, list]:
    """Two neurons relu(<g, x>) - relu(-<g, x>) = <g, x> for the linear part (none if g = 0)."""
    g = list(rep.linear) if exact else [float(v) for v in rep.linear]
    if all(v == 0 for v in g):
        return [], [], []
    return [g, [-v for v in g]], [0, 0], [1, -1]


def quadrature_network(rep: IntegralRepresentation, width: int, rule: str = "grid",
                       seed: int = 0) -> Network:
    """A two-layer ReLU network from a quadrature of the representation with at most
    ``width`` integral neurons (plus 2 for a nonzero linear part): ``2 (width // 2)`` in
    1-D, ``n (width // n)`` for ``n`` angles in 2-D (``net.widths`` says how many).

    * ``grid``, d = 1: w = +-1, midpoints of ``width // 2`` cells of the b-range; all
      weights rational: an **exact** (Fraction) network for a rational radius.
    * ``grid``, d = 2: ``n`` equispaced angles x ``width // n`` b-midpoints (n about
      sqrt(width)), float64.
    * ``mc``: w uniform on the sphere, b uniform on the b-range (seeded), float64, any d.

    Example:
        >>> rep = integral_representation("x^2", radius=1)
        >>> net = quadrature_network(rep, 8)
        >>> net.is_exact, net.widths, str(net([Fraction(1, 3)])[0])   # x^2 = 1/9: coarse
        (True, (8,), '1/12')
    """
    if rule not in RULES:
        raise RelulabError(f"quadrature_network: rule must be one of {', '.join(RULES)}, got {rule!r}")
    if not isinstance(width, (int, np.integer)) or width < 2:
        raise RelulabError(f"quadrature_network: width must be an integer >= 2, got {width!r}")
    # before building: --width 1e6 ended in a 149 GiB MemoryError after 53 s
    check_size(f"quadrature_network(width={width})", neurons=int(width) + 2)
    d = rep.dim
    lo, hi = rep.b_lo, rep.b_hi
    if rule == "grid" and d == 1:
        m = int(width) // 2
        h = (hi - lo) / m
        rows, bias, outw = [], [], []
        for w in (1, -1):
            for j in range(m):
                b = lo + (2 * j + 1) * h / 2
                rows.append([Fraction(w)])
                bias.append(-b)
                outw.append(Fraction(1, 2) * h * rep.density_exact([w], b))
        ar, ab, ao = _affine_neurons(rep, True)
        rows, bias, outw = rows + [[Fraction(v) for v in r] for r in ar], bias + ab, outw + ao
        W1 = np.array(rows, dtype=object)
        b1 = np.array([Fraction(v) for v in bias], dtype=object)
        W2 = np.array([[Fraction(v) for v in outw]], dtype=object)
        return Network([W1, W2], [b1, np.array([rep.const], dtype=object)], exact=True)
    flo, fhi = float(lo), float(hi)
    if rule == "grid":
        if d != 2:
            raise RelulabError("quadrature_network: rule 'grid' is for d <= 2; use rule='mc'")
        n_ang = max(2, int(round(math.sqrt(width))))
        m = max(1, int(width) // n_ang)
        th = 2 * math.pi * (np.arange(n_ang) + 0.5) / n_ang
        Wd = np.stack([np.cos(th), np.sin(th)], axis=1)
        hb = (fhi - flo) / m
        bs = flo + hb * (np.arange(m) + 0.5)
        W = np.repeat(Wd, m, axis=0)
        B = np.tile(bs, n_ang)
        v = rep.density(W, B) * hb / n_ang
    else:
        rng = np.random.default_rng(seed)
        W = rng.normal(size=(int(width), d))
        W /= np.linalg.norm(W, axis=1, keepdims=True)
        B = rng.uniform(flo, fhi, size=int(width))
        v = rep.density(W, B) * (fhi - flo) / int(width)
    ar, ab, ao = _affine_neurons(rep, False)
    W1 = np.vstack([W, np.array(ar, dtype=float).reshape(-1, d)])
    b1 = np.concatenate([-B, np.array(ab, dtype=float)])
    W2 = np.concatenate([v, np.array(ao, dtype=float)])[None, :]
    return Network([W1, W2], [b1, np.array([float(rep.const)])])


# ------------------------------------------------------------------ errors and bounds
def sample_distribution(dist: str, n: int, dim: int, radius: float = 1.0, seed: int = 0) -> np.ndarray:
    """n points of D: ``"ball"`` (uniform in the ball of ``radius``) or ``"sphere"``
    (uniform on the sphere of ``radius``).

    Example:
        >>> X = sample_distribution("sphere", 5, 3, 2.0)
        >>> np.allclose(np.linalg.norm(X, axis=1), 2.0)
        True
    """
    if dist not in DISTRIBUTIONS:
        raise RelulabError(f"distribution must be one of {', '.join(DISTRIBUTIONS)}, got {dist!r}")
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(int(n), dim))
    G /= np.linalg.norm(G, axis=1, keepdims=True)
    if dist == "sphere":
        return radius * G
    return radius * G * rng.random((int(n), 1)) ** (1.0 / dim)


def l2_error(net: Network, poly: Polynomial, X: np.ndarray) -> float:
    """sqrt(mean (net(x) - poly(x))^2) over the sample X: the L2(D) error, sampled.

    Example:
        >>> rep = integral_representation("x^2")
        >>> X = sample_distribution("ball", 1000, 1)
        >>> l2_error(quadrature_network(rep, 64), rep.target, X) < 1e-3
        True
    """
    try:
        fnet = net.float()
    except NetworkError:
        raise ConstructionError("l2_error: the network's exact weights exceed float64 (above 1.8e308; "
                                "the polynomial's degree and the radius set their size): lower "
                                "the degree or the radius") from None
    Y = np.asarray(fnet(X), dtype=np.float64)[:, 0]
    return float(np.sqrt(np.mean((Y - poly(X)) ** 2)))


def mc_variance(rep: IntegralRepresentation, X: np.ndarray, n_wb: int = 4000, seed: int = 1) -> float:
    """V = |b-range|^2 E[a(w, b)^2 relu(<w, x> - b)^2] over w uniform, b uniform, x in X
    (sampled, ``n_wb`` draws of (w, b)): ``sqrt(V / N)`` bounds the RMS L2(D) error of the
    Monte Carlo network; exactly, ``E ||f_N - p||^2 = (V - ||p - affine||^2) / N``.

    Example:
        >>> rep = integral_representation("x^2")
        >>> X = sample_distribution("ball", 500, 1)
        >>> 0 < mc_variance(rep, X) < 100
        True
    """
    rng = np.random.default_rng(seed)
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    ell = float(rep.b_hi - rep.b_lo)
    total, done = 0.0, 0
    while done < int(n_wb):          # chunks keep the (x, w) matrix small
        m = min(2000, int(n_wb) - done)
        W = rng.normal(size=(m, rep.dim))
        W /= np.linalg.norm(W, axis=1, keepdims=True)
        B = rng.uniform(float(rep.b_lo), float(rep.b_hi), size=m)
        A = rep.density(W, B)
        Rl = np.maximum(X @ W.T - B, 0.0)
        total += float(np.sum(np.mean((A[None, :] * Rl) ** 2, axis=0)))
        done += m
    return ell ** 2 * total / done


@dataclass(frozen=True)
class QuadratureReport(Result):
    """A finite network from the representation and its measured L2(D) error.

    ``l2_error`` is sampled on ``n_samples`` points of D (``status`` "sampled");
    ``mc_bound`` is ``sqrt(V / width)`` (the RMS bound for rule "mc"; None for "grid").

    Example:
        >>> r = quadrature_report("x^2 + xy", 256, rule="mc", dist="ball", n_samples=2000)
        >>> r.status, r.exact, r.hidden_width
        ('sampled', False, 256)
    """

    polynomial: str
    form: str
    rule: str
    width: int
    hidden_width: int
    exact: bool
    distribution: str
    l2_error: float
    mc_bound: float | None
    n_samples: int
    status: str
    representation: dict


def quadrature_report(poly: Polynomial | str, width: int, rule: str = "grid", form: str = "plain",
                      radius: Any = 1, dist: str = "ball", n_samples: int = 20000,
                      seed: int = 0) -> QuadratureReport:
    """Build the representation, its quadrature network, and measure the L2(D) error
    (D uniform on the ball of ``radius``, or on its sphere: then the sharpened form takes
    the harmonic extension from that sphere).

    Example:
        >>> quadrature_report("x^3 - x", 64, n_samples=2000).l2_error < 1e-2
        True
    """
    sphere = radius if (dist == "sphere" and form == "sharpened") else None
    rep = integral_representation(poly, radius, form, sphere)
    net = quadrature_network(rep, width, rule, seed)
    try:
        r = float(rep.radius)
    except OverflowError:   # (a raw "integer division result too large for a float")
        raise ConstructionError("quadrature_report: the radius is beyond float64 (1.8e308), where "
                                "the L2 error is measured; give a smaller radius") from None
    X = sample_distribution(dist, n_samples, rep.dim, r, seed + 7)
    err = l2_error(net, rep.target, X)
    bound = math.sqrt(mc_variance(rep, X[:4000]) / width) if rule == "mc" else None
    return QuadratureReport(str(rep.target), form, rule, int(width), net.n_neurons, net.is_exact,
                            dist, err, bound, int(len(X)), "sampled", rep.describe())
