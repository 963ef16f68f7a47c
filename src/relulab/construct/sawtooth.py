"""Depth and approximation: the tent map, sawtooths, Yarotsky's x^2, products, monomials.

* ``tent()``: ``g(x) = 2 relu(x) - 4 relu(x - 1/2)``, the tent map on [0, 1].
* ``sawtooth(L)``: ``g`` composed L times: width 2, L hidden layers, 2^L pieces on [0, 1].
* ``yarotsky_square(m)``: ``f_m(x) = x - sum_{s<=m} g_s(x) / 4^s``, the piecewise-linear
  interpolant of x^2 at the 2^m + 1 points i / 2^m; its error on [0, 1] is exactly
  ``2^(-2m-2)`` (Yarotsky 2017).
* ``product(m)``: ``xy = 2((x+y)/2)^2 - x^2/2 - y^2/2`` with each square by ``f_m``.
* ``monomial(k, m)``: ``x^k`` as ``x * x^(k-1)`` by repeated products (clipped to [0, 1]).

The worst-case errors are measured exactly (:func:`square_error`, :func:`product_error`,
:func:`monomial_error`): the network's pieces are found in rational arithmetic and the
error is maximised on each piece in closed form.

Example:
    >>> square_error(3).max_abs_error == Fraction(1, 2 ** 8)
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..network import Network
from ._builder import Builder, Expr, F, check_size  # noqa: F401 - F is used by the doctests
from .cpwl import univariate_pieces
from .maxmin import ConstructionError

__all__ = [
    "tent",
    "sawtooth",
    "yarotsky_square",
    "product",
    "monomial",
    "ErrorReport",
    "square_error",
    "product_error",
    "monomial_error",
]

HALF = Fraction(1, 2)


def _check_int(name: str, v: int, lo: int) -> None:
    if not isinstance(v, (int, np.integer)) or v < lo:
        raise ConstructionError(f"{name} must be an integer >= {lo}, got {v!r}")


def tent() -> Network:
    """The tent map ``g(x) = 2x`` on [0, 1/2], ``2 - 2x`` on [1/2, 1] (0 left of 0):
    one hidden layer of 2 neurons, ``g(x) = 2 relu(x) - 4 relu(x - 1/2)``.

    Example:
        >>> [str(v) for v in tent()([[F('1/4')], [F('3/4')]]).ravel()]
        ['1/2', '1/2']
    """
    return sawtooth(1)


def _tent_layer(b: Builder, t: Expr) -> Expr:
    return b.relu(t) * 2 - b.relu(t - HALF) * 4


def sawtooth(depth: int) -> Network:
    """The L-fold tent map ``g o ... o g``: ``L = depth`` hidden layers of width 2;
    on [0, 1] it has exactly ``2^L`` linear pieces (slopes ``+-2^L``), taking values
    0 at even and 1 at odd multiples of ``2^-L``.

    Example:
        >>> sawtooth(3).widths
        (2, 2, 2)
    """
    _check_int("sawtooth depth", depth, 1)
    check_size(f"sawtooth({depth})", layers=depth)
    b = Builder(1)
    (t,) = b.inputs()
    for _ in range(depth):
        t = _tent_layer(b, t)
        b.close()
    return b.build([t])


def _square_layers(b: Builder, ts: list[Expr], m: int,
                   carry: list[Expr] | None = None) -> tuple[list[Expr], list[Expr]]:
    """Yarotsky chains for every signal in ``ts`` (assumed in [0, 1]) run side by side
    for ``m`` layers; ``carry`` (non-negative signals) ride along.  Each chain costs
    2 neurons in its first layer and 3 in later ones."""
    carry = list(carry or [])
    if m == 0:
        return list(ts), carry
    gs, accs = [], []
    for t in ts:
        u = b.relu(t)
        g = u * 2 - b.relu(t - HALF) * 4
        gs.append(g)
        accs.append(u - g / 4)
    carry = [b.relu(c) for c in carry]
    b.close()
    for s in range(2, m + 1):
        for i in range(len(ts)):
            g = _tent_layer(b, gs[i])
            accs[i] = b.relu(accs[i]) - g / 4**s
            gs[i] = g
        carry = [b.relu(c) for c in carry]
        b.close()
    return accs, carry


def yarotsky_square(m: int) -> Network:
    """``f_m``: the interpolant of x^2 at ``i / 2^m`` (i = 0..2^m), exact on [0, 1]
    (the network's formula holds for inputs in [0, 1]).

    Size: ``m`` hidden layers of widths ``(2, 3, ..., 3)`` (``3m - 1`` neurons);
    ``m = 0`` gives the identity.  Error: ``max |f_m(x) - x^2| = 2^(-2m-2)`` on [0, 1],
    attained at the midpoints ``(2i + 1) / 2^(m+1)``.

    Example:
        >>> yarotsky_square(2)([[F('1/4')], [F('3/8')]]).ravel().tolist()
        [Fraction(1, 16), Fraction(5, 32)]
    """
    _check_int("yarotsky m", m, 0)
    check_size(f"yarotsky_square({m})", layers=m)
    b = Builder(1)
    (x,) = b.inputs()
    (sq,), _ = _square_layers(b, [x], m)
    return b.build([sq])


def _product_signals(b: Builder, x: Expr, y: Expr, m: int,
                     carry: list[Expr] | None = None) -> tuple[Expr, list[Expr]]:
    (su, sx, sy), carried = _square_layers(b, [(x + y) / 2, x, y], m, carry)
    return su * 2 - sx / 2 - sy / 2, carried


def product(m: int) -> Network:
    """Approximate ``x * y`` on [0, 1]^2 by polarisation,
    ``2 f_m((x+y)/2) - f_m(x)/2 - f_m(y)/2``.

    Size: ``m`` hidden layers of widths ``(6, 9, ..., 9)`` (``9m - 3`` neurons).  Error:
    ``|p(x, y) - xy| <= 2 * 2^(-2m-2)`` (each f_m over-estimates by at most 2^(-2m-2));
    :func:`product_error` measures it exactly.

    Example:
        >>> product(3)([[1, 1], [0, F('1/2')]]).ravel().tolist()
        [Fraction(1, 1), Fraction(0, 1)]
    """
    _check_int("product m", m, 1)
    check_size(f"product({m})", layers=m)
    b = Builder(2)
    x, y = b.inputs()
    p, _ = _product_signals(b, x, y, m)
    return b.build([p])


def monomial(k: int, m: int) -> Network:
    """Approximate ``x^k`` on [0, 1]: ``x^2`` by ``f_m``, then ``x^j = x * x^(j-1)`` by
    :func:`product` after clipping ``x^(j-1)`` to [0, 1] (one layer, 2 neurons).

    Size: ``m + (k - 2)(m + 1)`` hidden layers for k >= 2 (k = 1 is the identity).
    The error is measured exactly by :func:`monomial_error`.

    Example:
        >>> monomial(3, 4)([[1], [0]]).ravel().tolist()
        [Fraction(1, 1), Fraction(0, 1)]
    """
    _check_int("monomial degree k", k, 1)
    _check_int("monomial m", m, 1)
    check_size(f"monomial({k}, {m})", layers=m + max(k - 2, 0) * (m + 1))
    b = Builder(1)
    (x,) = b.inputs()
    if k == 1:
        return b.build([x])
    (p,), (xc,) = _square_layers(b, [x], m, [x])
    for _ in range(3, k + 1):
        clipped = b.relu(p) - b.relu(p - 1)
        xc = b.relu(xc)
        b.close()
        p, (xc,) = _product_signals(b, xc, clipped, m, [xc])
    return b.build([p])


# ------------------------------------------------------------ exact errors
@dataclass(frozen=True)
class ErrorReport:
    """Worst-case error of an approximation, measured in rational arithmetic.

    ``max_abs_error`` is exact when ``exact`` is True; otherwise the true value lies in
    ``[max_abs_error, upper]`` (an algebraic maximiser bracketed to width 2^-80).

    Example:
        >>> r = square_error(2)            # Yarotsky's x^2 with 2 sawtooth terms on [0, 1]
        >>> str(r.max_abs_error), r.exact, [str(a) for a in r.argmax], r.n_pieces
        ('1/64', True, ['1/8'], 4)
    """

    max_abs_error: Fraction
    upper: Fraction
    exact: bool
    argmax: tuple[Fraction, ...]
    bound: Fraction
    n_pieces: int

    def to_dict(self) -> dict:
        return {
            "max_abs_error": str(self.max_abs_error),
            "upper": str(self.upper),
            "exact": self.exact,
            "argmax": [str(v) for v in self.argmax],
            "bound": str(self.bound),
            "max_abs_error_float": float(self.max_abs_error),
            "n_pieces": self.n_pieces,
        }


def _delta(m: int) -> Fraction:
    return Fraction(1, 2 ** (2 * m + 2))


def _poly_err_on_piece(s: Fraction, c: Fraction, a: Fraction, b: Fraction, k: int
                       ) -> tuple[Fraction, Fraction, Fraction]:
    """max over [a, b] (a >= 0) of |s x + c - x^k|: (lower, upper, argmax).  The error
    ``e = s x + c - x^k`` is concave on x >= 0, so its minimum is at an end and its
    maximum at the root of ``s = k x^(k-1)`` when that lies in [a, b]."""
    def e(x: Fraction) -> Fraction:
        return s * x + c - x**k

    cands = [(abs(e(a)), abs(e(a)), a), (abs(e(b)), abs(e(b)), b)]
    de = lambda x: s - k * x ** (k - 1)  # noqa: E731 - decreasing on x >= 0
    if de(a) > 0 > de(b):
        if k == 2:
            r = s / 2
            cands.append((abs(e(r)), abs(e(r)), r))
        else:
            lo, hi = a, b
            while hi - lo > Fraction(1, 2**80):
                mid = (lo + hi) / 2
                if de(mid) > 0:
                    lo = mid
                else:
                    hi = mid
            # concavity: e(r) <= e(lo) + e'(lo) (r - lo) with e'(lo) >= 0
            low = max(e(lo), e(hi))
            up = e(lo) + de(lo) * (hi - lo)
            if low >= 0:
                cands.append((low, up, lo))
    best = max(cands, key=lambda t: t[0])
    upper = max(t[1] for t in cands)
    return best[0], upper, best[2]


def square_error(m: int) -> ErrorReport:
    """Exact ``max_{x in [0,1]} |f_m(x) - x^2|`` for :func:`yarotsky_square`; the theory
    says it equals ``2^(-2m-2)``.

    Example:
        >>> str(square_error(1).max_abs_error)
        '1/16'
    """
    return _univariate_error(yarotsky_square(m), 2, _delta(m))


def monomial_error(k: int, m: int) -> ErrorReport:
    """``max_{x in [0,1]} |M(x) - x^k|`` for :func:`monomial` (exact for k <= 2; for
    k >= 3 a rational bracket of width < 2^-70 around the algebraic maximum).
    ``bound`` is the crude a-priori bound ``(k - 1) * 3 * 2^(-2m-2)``.

    Example:
        >>> r = monomial_error(2, 2)       # k = 2 is the square: exact
        >>> str(r.max_abs_error), r.exact, r.max_abs_error <= r.bound
        ('1/64', True, True)
    """
    return _univariate_error(monomial(k, m), k, (k - 1) * 3 * _delta(m))


def _univariate_error(net: Network, k: int, bound: Fraction) -> ErrorReport:
    pieces = univariate_pieces(net, 0, 1)
    best = (Fraction(-1), Fraction(0), Fraction(0))
    upper = Fraction(0)
    for p in pieces:
        lo, up, arg = _poly_err_on_piece(p.slope, p.intercept, p.lo, p.hi, k)
        upper = max(upper, up)
        if lo > best[0]:
            best = (lo, up, arg)
    return ErrorReport(best[0], upper, best[0] == upper, (best[2],), bound, len(pieces))


def product_error(m: int) -> ErrorReport:
    """Exact ``max_{[0,1]^2} |p(x, y) - xy|`` for :func:`product`.

    Why this is exact: the network is affine on every cell cut out by the lines
    ``x = i/N``, ``y = j/N``, ``x + y = k/N`` (N = 2^m); there the error is an affine
    function minus ``xy``, whose Hessian is indefinite, so no cell has an interior
    extremum.  The maximum therefore lies on those lines; along each one the network
    restricted to the segment is univariate, its pieces are found exactly and the
    error (a quadratic in the line parameter) is maximised in closed form.

    Example:
        >>> product_error(1).max_abs_error <= product_error(1).bound
        True
    """
    net = product(m)
    N = 2**m
    segs = []  # (start point, direction) with parameter t in [0, 1]
    for i in range(N + 1):
        segs.append(((Fraction(i, N), Fraction(0)), (Fraction(0), Fraction(1))))
        segs.append(((Fraction(0), Fraction(i, N)), (Fraction(1), Fraction(0))))
    for k in range(1, 2 * N):
        s = Fraction(k, N)
        if s <= 1:
            segs.append(((Fraction(0), s), (s, -s)))
        else:
            segs.append(((s - 1, Fraction(1)), (2 - s, s - 2)))
    best = (Fraction(-1), (Fraction(0), Fraction(0)))
    n_pieces = 0
    for (px, py), (dx, dy) in segs:
        # the network along x = p + t d, t in [0, 1]
        line = Network([[[dx], [dy]]], [[px, py]], exact=True)
        sub = net.compose(line)
        for pc in univariate_pieces(sub, 0, 1):
            n_pieces += 1
            # error(t) = s t + c - (px + t dx)(py + t dy) = A t^2 + B t + C
            A = -dx * dy
            B = pc.slope - (px * dy + py * dx)
            C = pc.intercept - px * py
            ts = [pc.lo, pc.hi]
            if A != 0:
                t0 = -B / (2 * A)
                if pc.lo < t0 < pc.hi:
                    ts.append(t0)
            for t in ts:
                v = abs(A * t * t + B * t + C)
                if v > best[0]:
                    best = (v, (px + t * dx, py + t * dy))
    return ErrorReport(best[0], best[0], True, best[1], 2 * _delta(m), n_pieces)
