"""Multivariate polynomials with rational coefficients: parsing, evaluation, moments.

A :class:`Polynomial` is a map from exponent tuples to Fractions.  Text such as
``"x^2 + xy - 3/2 z^3"`` or ``"x1*x2 + 0.5 x3^2"`` is read by
:func:`parse_polynomial` (variables ``x, y, z`` or ``x1, x2, ...``; juxtaposition or
``*`` multiplies; ``^`` or ``**`` raises to a non-negative integer power; ``/ number``
divides, from the left: ``x/3/4`` is ``x/12``; a sign after ``*`` is refused).
:func:`sphere_moment` gives ``E[w^alpha]`` for w uniform on the unit sphere, exactly.

Example:
    >>> p = parse_polynomial("x^2 + xy")
    >>> p.dim, p.degree, str(p.exact([1, 2]))
    (2, 2, '3')
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations_with_replacement
from typing import Any

import numpy as np

from ..errors import RelulabError

__all__ = ["Polynomial", "parse_polynomial", "sphere_moment", "monomials", "solve_exact"]

Mono = tuple[int, ...]
_LETTERS = "xyz"
# ("**" is a power, as in Python; it read as two products, and x**2 as 2 x)
_TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d*)?(?:/\d+)?|\.\d+)|(x_?\d+|[a-z])|(\^|\*\*)|(\*)|([+-])|(/))")


@dataclass(frozen=True)
class Polynomial:
    """A polynomial in ``dim`` variables: ``terms`` maps exponent tuples to Fractions
    (no zero coefficients).

    Example:
        >>> p = Polynomial(2, {(2, 0): Fraction(1), (1, 1): Fraction(1)})
        >>> p([[1.0, 2.0], [0.5, 0.0]]).tolist(), str(p)
        ([3.0, 0.25], 'x^2 + x*y')
    """

    dim: int
    terms: dict[Mono, Fraction]

    def __post_init__(self) -> None:
        if self.dim < 1:
            raise RelulabError(f"polynomial: dimension must be >= 1, got {self.dim}")
        clean = {}
        for m, c in self.terms.items():
            if len(m) != self.dim or any(e < 0 for e in m):
                raise RelulabError(f"polynomial: exponent {m} does not fit dimension {self.dim}")
            c = Fraction(c)
            if c != 0:
                clean[tuple(int(e) for e in m)] = c
        object.__setattr__(self, "terms", dict(sorted(clean.items(), key=lambda t: (-sum(t[0]), [-e for e in t[0]]))))

    @property
    def degree(self) -> int:
        return max((sum(m) for m in self.terms), default=0)

    def homogeneous(self, k: int) -> Polynomial:
        """The degree-k part."""
        return Polynomial(self.dim, {m: c for m, c in self.terms.items() if sum(m) == k})

    def __call__(self, X: Any) -> np.ndarray:
        """float64 values at the rows of X (n, dim)."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        if X.shape[1] != self.dim:
            raise RelulabError(f"polynomial: input has {X.shape[1]} columns, expected {self.dim}")
        out = np.zeros(len(X))
        for m, c in self.terms.items():
            out += float(c) * np.prod(X ** np.array(m), axis=1)
        return out

    def exact(self, x: Sequence[Any]) -> Fraction:
        """The exact value at one rational point."""
        xs = [Fraction(v) for v in x]
        if len(xs) != self.dim:
            raise RelulabError(f"polynomial: point has {len(xs)} coordinates, expected {self.dim}")
        return sum((c * math.prod((xi ** e for xi, e in zip(xs, m, strict=True)), start=Fraction(1))
                    for m, c in self.terms.items()), Fraction(0))

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        names = list(_LETTERS) if self.dim <= 3 else [f"x{i + 1}" for i in range(self.dim)]
        parts = []
        for m, c in self.terms.items():
            fac = "*".join(n if e == 1 else f"{n}^{e}" for n, e in zip(names, m, strict=False) if e)
            mag = abs(c)
            body = fac if fac and mag == 1 else (f"{mag}*{fac}" if fac else str(mag))
            parts.append(("- " if c < 0 else "+ ") + body)
        s = " ".join(parts)
        return s[2:] if s.startswith("+ ") else "-" + s[2:]


def _nonzero(token: str) -> Fraction | None:
    """The token's nonzero value, or None (zero, or not a number Fraction reads)."""
    try:
        v = Fraction(token)
    except (ValueError, ZeroDivisionError):
        return None
    return v if v != 0 else None


def parse_polynomial(text: str, dim: int | None = None) -> Polynomial:
    """Read ``"x^2 + xy"``, ``"x1*x2 - 1/2 x3^4 + 2"``.  ``dim`` defaults to the largest
    variable used (``y`` means dim >= 2).  Bad text: one :class:`RelulabError` naming the
    column.

    Example:
        >>> str(parse_polynomial("2xy^2 - 0.5"))
        '2*x*y^2 - 1/2'
    """
    if not isinstance(text, str) or not text.strip():
        raise RelulabError("polynomial: empty text")
    pos = 0
    tokens: list[tuple[str, str, int]] = []
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise RelulabError(f"polynomial {text!r}: cannot read column {pos + 1} ({text[pos:pos + 8]!r})")
        kind = ["num", "var", "pow", "mul", "sign", "div"][next(i for i in range(6) if m.group(i + 1) is not None)]
        tokens.append((kind, m.group(m.lastindex or 0), m.start(m.lastindex or 0)))
        pos = m.end()
    raw: list[tuple[Fraction, dict[int, int]]] = []
    i = 0
    letters = numbered = False
    while i < len(tokens):
        sign = Fraction(1)
        while i < len(tokens) and tokens[i][0] == "sign":
            sign = -sign if tokens[i][1] == "-" else sign
            i += 1
        coef, exps, seen = Fraction(1), {}, False
        while i < len(tokens) and tokens[i][0] != "sign":
            kind, val, col = tokens[i]
            if kind == "mul":
                if i + 1 >= len(tokens) or tokens[i + 1][0] in ("sign", "mul"):
                    # x*-1 was read as x - 1, a new term
                    raise RelulabError(f"polynomial {text!r}: '*' must be followed by a number or a "
                                       f"variable (column {col + 1}); write -x, not x*-1")
                i += 1
                continue
            if kind == "num":
                try:
                    coef *= Fraction(val)
                except (ValueError, ZeroDivisionError):
                    raise RelulabError(f"polynomial {text!r}: cannot read the number {val!r} "
                                       f"(column {col + 1})") from None
                i += 1
            elif kind == "div":       # x/2: divide by a number
                if i + 1 >= len(tokens) or tokens[i + 1][0] != "num" or _nonzero(tokens[i + 1][1]) is None:
                    raise RelulabError(f"polynomial {text!r}: '/' must be followed by a nonzero number "
                                       f"(column {col + 1})")
                # x/3/4 divides by 3, then by 4 (the number token "3/4" is split: x/3/4 read
                # as x / (3/4) = 4/3 x)
                for part in tokens[i + 1][1].split("/"):
                    q = _nonzero(part)
                    if q is None:
                        raise RelulabError(f"polynomial {text!r}: '/' must be followed by a nonzero "
                                           f"number (column {col + 1})")
                    coef /= q
                i += 2
            elif kind == "var":
                if val[0] == "x" and len(val) > 1:
                    idx = int(val.lstrip("x_")) - 1
                    numbered = True
                    if idx < 0:
                        raise RelulabError(f"polynomial {text!r}: variables are numbered from x1 (column {col + 1})")
                elif val in _LETTERS:
                    idx = _LETTERS.index(val)
                    letters = True
                else:
                    raise RelulabError(f"polynomial {text!r}: unknown variable {val!r} at column {col + 1} "
                                       "(use x, y, z or x1, x2, ...)")
                e = 1
                if i + 1 < len(tokens) and tokens[i + 1][0] == "pow":
                    if i + 2 >= len(tokens) or tokens[i + 2][0] != "num" or not tokens[i + 2][1].isdigit():
                        raise RelulabError(f"polynomial {text!r}: '^' must be followed by an integer "
                                           f"(column {tokens[i + 1][2] + 1})")
                    e = int(tokens[i + 2][1])
                    i += 2
                exps[idx] = exps.get(idx, 0) + e
                i += 1
            else:
                raise RelulabError(f"polynomial {text!r}: unexpected '^' at column {col + 1}")
            seen = True
        if not seen:
            raise RelulabError(f"polynomial {text!r}: a sign without a term")
        raw.append((sign * coef, exps))
    if letters and numbered:
        raise RelulabError(f"polynomial {text!r}: mix of x, y, z and x1, x2, ... variables")
    used = max((max(e) + 1 for _, e in raw if e), default=1)
    d = used if dim is None else int(dim)
    if d < used:
        raise RelulabError(f"polynomial {text!r}: uses {used} variables but dim = {d}")
    terms: dict[Mono, Fraction] = {}
    for c, exps in raw:
        m = tuple(exps.get(j, 0) for j in range(d))
        terms[m] = terms.get(m, Fraction(0)) + c
    return Polynomial(d, terms)


def monomials(dim: int, k: int) -> Iterator[Mono]:
    """The exponent tuples of degree exactly k in ``dim`` variables.

    Example:
        >>> list(monomials(2, 2))
        [(2, 0), (1, 1), (0, 2)]
    """
    for combo in combinations_with_replacement(range(dim), k):
        m = [0] * dim
        for j in combo:
            m[j] += 1
        yield tuple(m)


def _double_factorial(n: int) -> int:
    return math.prod(range(n, 0, -2)) if n > 0 else 1


def sphere_moment(alpha: Sequence[int]) -> Fraction:
    """``E[w^alpha]`` for w uniform on the unit sphere of R^d (d = len(alpha)), exactly:
    0 unless every exponent is even, else ``prod (a_i - 1)!! / (d (d + 2) ... (d + |a| - 2))``.

    Example:
        >>> str(sphere_moment((2, 0, 0))), str(sphere_moment((2, 2))), str(sphere_moment((1, 1)))
        ('1/3', '1/8', '0')
    """
    if any(a % 2 for a in alpha):
        return Fraction(0)
    d, half = len(alpha), sum(alpha) // 2
    num = math.prod(_double_factorial(a - 1) for a in alpha)
    den = math.prod(d + 2 * j for j in range(half))
    return Fraction(num, den)


def solve_exact(A: list[list[Fraction]], b: list[Fraction]) -> list[Fraction]:
    """The solution of the square nonsingular rational system ``A x = b`` (Gauss-Jordan).

    Example:
        >>> [str(v) for v in solve_exact([[2, 1], [1, 3]], [3, 5])]
        ['4/5', '7/5']
    """
    n = len(A)
    M = [[Fraction(v) for v in row] + [Fraction(bv)] for row, bv in zip(A, b, strict=True)]
    for col in range(n):
        piv = next((r for r in range(col, n) if M[r][col] != 0), None)
        if piv is None:
            raise RelulabError("exact solve: the system is singular")
        M[col], M[piv] = M[piv], M[col]
        inv = 1 / M[col][col]
        M[col] = [v * inv for v in M[col]]
        for r in range(n):
            if r != col and M[r][col] != 0:
                f = M[r][col]
                M[r] = [a - f * c for a, c in zip(M[r], M[col], strict=True)]
    return [M[r][n] for r in range(n)]
