"""Binary subdivision schemes: mask checks, convergence, and iterates by the scheme itself.

A finitely supported mask ``a_0..a_K`` defines the refinement operator
``(R f)(x) = sum_j a_j f(2x - j)`` and the subdivision operator on sequences
``(S c)_i = sum_j a_(i - 2j) c_j``.  The two are tied by the cascade identity

    ``(R^n f_0)(x) = sum_N c_n(N) f_0(2^n x - N)``  with  ``c_n = S^n delta_0``,

which :func:`subdivision_iterate` uses to compute the iterate ``f_n`` (breakpoints and
values, exactly) independently of :func:`relulab.construct.refinement_iterate` (which
applies R to the previous iterate).

:func:`scheme_convergence` decides what can be decided about convergence: the sum
rule ``sum_j a_(2j) = sum_j a_(2j+1) = 1`` is necessary (its failure is a proof of
non-convergence); contractivity of a power of the difference scheme
(``a(z) = (1 + z) b(z)``, ``||S_b^m||_inf < 1``) is sufficient (Dyn's criterion),
checked exactly in rationals up to ``max_power``.

Example:
    >>> scheme_convergence([Fraction(1, 8), Fraction(1, 2), Fraction(3, 4), Fraction(1, 2), Fraction(1, 8)]).status
    'convergent'
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from ..results import Result
from ._builder import F
from .maxmin import ConstructionError

__all__ = ["parse_mask", "ConvergenceCheck", "scheme_convergence", "subdivision_coefficients",
           "subdivision_iterate", "check_seed", "evaluate_cpwl", "check_iterate_size",
           "MAX_ITERATE_BREAKPOINTS"]

# f_n has up to n_seed (K (2^n - 1) + 1) candidate breakpoints (iterate_size), each an
# exact Fraction: beyond this many, computing them takes minutes and gigabytes
MAX_ITERATE_BREAKPOINTS = 1_000_000


def iterate_size(mask: Sequence[Fraction], n_seed: int, n: int) -> int:
    """An upper bound of the candidate breakpoints of ``f_n`` (``n_seed`` seed breakpoints
    b): every one is ``(b + N) / 2^n`` with ``0 <= N <= K (2^n - 1)`` (K = len(mask) - 1).

    Example:
        >>> iterate_size([1, 1], 3, 2)     # 3 seed breakpoints times N = 0..3
        12
    """
    return n_seed * ((len(mask) - 1) * (2 ** n - 1) + 1) if n < 64 else 2 ** 64


def check_iterate_size(mask: Sequence[Fraction], n_seed: int, n: int, what: str) -> None:
    """Refuse an iterate with more than ``MAX_ITERATE_BREAKPOINTS`` possible breakpoints.

    Example:
        >>> check_iterate_size([1, 1], 3, 40, "f_40")
        Traceback (most recent call last):
        relulab.construct._errors.ConstructionError: f_40: the iterate after 40 steps has up to 3298534883328 breakpoints; relulab computes at most 1000000
    """
    size = iterate_size(mask, n_seed, n)
    if size > MAX_ITERATE_BREAKPOINTS:
        raise ConstructionError(f"{what}: the iterate after {n} steps has up to {size} breakpoints; "
                                f"relulab computes at most {MAX_ITERATE_BREAKPOINTS}")


def evaluate_cpwl(bp: Sequence[Fraction], vals: Sequence[Fraction], x: Fraction) -> Fraction:
    """The compactly supported CPWL function with these breakpoints and values at x
    (zero outside ``[bp[0], bp[-1]]``; the end values are expected to be 0).

    Example:
        >>> from fractions import Fraction as F
        >>> [str(evaluate_cpwl([0, 1, 2], [0, 1, 0], F(x))) for x in ("-1", "1/2", "3/2", "5")]
        ['0', '1/2', '1/2', '0']
    """
    if x < bp[0] or x > bp[-1]:
        return Fraction(0)
    if x == bp[-1]:
        return vals[-1]
    i = bisect_right(bp, x) - 1
    t = (x - bp[i]) / (bp[i + 1] - bp[i])
    return vals[i] + t * (vals[i + 1] - vals[i])


def parse_mask(mask: object) -> list[Fraction]:
    """The mask as exact coefficients ``a_0..a_K``.  Accepts a finite sequence (index =
    position) or a ``{index: coefficient}`` dict with non-negative integer keys;
    anything that is not finitely supported (an iterator, a generator, a callable) or
    has a non-finite entry is refused.  Trailing zeros are dropped.

    Example:
        >>> [str(a) for a in parse_mask({0: "1/2", 2: "1/2", 1: 1})]
        ['1/2', '1', '1/2']
    """
    if isinstance(mask, (str, bytes)):
        raise ConstructionError("refinement mask: give a list of coefficients, not a string "
                                "(the CLI takes '1/2,1,1/2')")
    if isinstance(mask, Mapping):
        items = list(mask.items())
        if any(not isinstance(k, int) or isinstance(k, bool) or k < 0 for k, _ in items):
            raise ConstructionError("refinement mask: dict keys must be integers >= 0")
        size = max((k for k, _ in items), default=-1) + 1
        coeffs: list[object] = [0] * size
        for k, v in items:
            coeffs[k] = v
    elif isinstance(mask, Sequence):
        coeffs = list(mask)
    else:
        raise ConstructionError(
            f"refinement mask must be finitely supported: give a finite list or an "
            f"{{index: coefficient}} dict, not {type(mask).__name__}")
    out = []
    for i, v in enumerate(coeffs):
        if isinstance(v, float) and not math.isfinite(v):
            raise ConstructionError(f"refinement mask: coefficient {i} is {v}")
        try:
            out.append(F(v))
        except (TypeError, ValueError, ZeroDivisionError):
            raise ConstructionError(f"refinement mask: coefficient {i} ({v!r}) is not a number") from None
    while out and out[-1] == 0:
        out.pop()
    if not out:
        raise ConstructionError("refinement mask: all coefficients are zero (or the mask is empty)")
    return out


@dataclass(frozen=True)
class ConvergenceCheck(Result):
    """What is known about the uniform convergence of the subdivision scheme.

    ``status``: ``"convergent"`` (proved: a power of the difference scheme contracts),
    ``"divergent"`` (proved: the sum rule fails), ``"unknown"`` (sum rule holds, no
    contracting power up to ``max_power``).  ``even_sum`` / ``odd_sum``: the two sums of
    the sum rule; ``power`` and ``norm``: the first m with ``||S_b^m||_inf < 1`` and
    that norm (None when not found).

    Example:
        >>> scheme_convergence([1, 1]).to_dict()["status"]    # box spline of order 1
        'unknown'
    """

    status: str
    even_sum: Fraction
    odd_sum: Fraction
    power: int | None
    norm: Fraction | None
    reason: str


def _poly_mul(p: list[Fraction], q: list[Fraction]) -> list[Fraction]:
    out = [Fraction(0)] * (len(p) + len(q) - 1)
    for i, a in enumerate(p):
        if a:
            for j, b in enumerate(q):
                out[i + j] += a * b
    return out


def _upsample(p: list[Fraction], s: int) -> list[Fraction]:
    out = [Fraction(0)] * ((len(p) - 1) * s + 1)
    for i, a in enumerate(p):
        out[i * s] = a
    return out


def scheme_convergence(mask: object, max_power: int = 8) -> ConvergenceCheck:
    """Sum rule (necessary) and Dyn's contractivity test of the difference scheme
    (sufficient), exactly.  The norm of ``S_b^m`` is the largest sum of ``|b^[m]_i|``
    over one residue class mod ``2^m``, with ``b^[m](z) = prod_(i<m) b(z^(2^i))``.

    Example:
        >>> c = scheme_convergence([Fraction(-1, 16), 0, Fraction(9, 16), 1, Fraction(9, 16), 0, Fraction(-1, 16)])
        >>> c.status, c.power, str(c.norm)                 # the four-point scheme
        ('convergent', 1, '5/8')
    """
    a = parse_mask(mask)
    even, odd = sum(a[0::2], Fraction(0)), sum(a[1::2], Fraction(0))
    if even != 1 or odd != 1:
        return ConvergenceCheck("divergent", even, odd, None, None,
                                f"sum rule fails: even coefficients sum to {even}, odd to {odd} "
                                "(both must be 1)")
    # a(z) = (1 + z) b(z): synthetic division by (z + 1); the remainder is a(-1) = 0
    b = [Fraction(0)] * (len(a) - 1)
    carry = Fraction(0)
    for i in range(len(a) - 1):
        carry = a[i] - carry
        b[i] = carry
    bm = list(b)
    for m in range(1, max_power + 1):
        if m > 1:
            bm = _poly_mul(bm, _upsample(b, 2 ** (m - 1)))
        step = 2 ** m
        norm = max(sum((abs(v) for v in bm[r::step]), Fraction(0)) for r in range(min(step, len(bm))))
        if norm < 1:
            return ConvergenceCheck("convergent", even, odd, m, norm,
                                    f"||S_b^{m}||_inf = {norm} < 1 (difference scheme contracts)")
    return ConvergenceCheck("unknown", even, odd, None, None,
                            f"sum rule holds but no power m <= {max_power} of the difference "
                            "scheme contracts")


def subdivision_coefficients(mask: object, n: int) -> list[Fraction]:
    """``c_n = S^n delta_0`` (supported on ``0..K(2^n - 1)``), exactly.

    Example:
        >>> [str(c) for c in subdivision_coefficients([Fraction(1, 2), 1, Fraction(1, 2)], 1)]
        ['1/2', '1', '1/2']
    """
    a = parse_mask(mask)
    c = [Fraction(1)]
    for _ in range(n):
        new = [Fraction(0)] * (2 * (len(c) - 1) + len(a))
        for j, cj in enumerate(c):
            if cj:
                for t, at in enumerate(a):
                    new[2 * j + t] += at * cj
        c = new
    return c


def check_seed(seed_bp: Sequence[object], seed_vals: Sequence[object]) -> tuple[list[Fraction], list[Fraction]]:
    """The seed as exact lists, checked: >= 2 strictly increasing breakpoints, as many
    finite values, zero at both ends (compact support, continuous).

    Example:
        >>> check_seed([0, 1, 2], [0, 1, 0])[0]
        [Fraction(0, 1), Fraction(1, 1), Fraction(2, 1)]
    """
    for name, seq in (("breakpoint", seed_bp), ("value", seed_vals)):
        for i, v in enumerate(seq):
            if isinstance(v, float) and not math.isfinite(v):
                raise ConstructionError(f"refinement seed: non-finite {name} {i} ({v})")
    if len(seed_bp) < 2 or len(seed_bp) != len(seed_vals):
        raise ConstructionError("refinement seed: needs >= 2 breakpoints and as many values "
                                f"(got {len(seed_bp)} and {len(seed_vals)})")
    bp, vals = [F(v) for v in seed_bp], [F(v) for v in seed_vals]
    if any(bp[i + 1] <= bp[i] for i in range(len(bp) - 1)):
        raise ConstructionError("refinement seed: breakpoints must increase strictly")
    if vals[0] != 0 or vals[-1] != 0:
        raise ConstructionError("refinement seed: must vanish at its end breakpoints "
                                "(compactly supported and continuous)")
    return bp, vals


def subdivision_iterate(mask: object, seed_bp: Sequence[object], seed_vals: Sequence[object],
                        n: int) -> tuple[list[Fraction], list[Fraction]]:
    """Breakpoints and values of ``f_n = R^n f_0`` from the cascade identity
    ``f_n(x) = sum_N c_n(N) f_0(2^n x - N)``: every breakpoint lies in
    ``(b + N) / 2^n`` (b a seed breakpoint); redundant ones (no slope change) dropped.

    Example:
        >>> chaikin = [Fraction(1, 4), Fraction(3, 4), Fraction(3, 4), Fraction(1, 4)]
        >>> bp, vals = subdivision_iterate(chaikin, [0, 1, 2], [0, 1, 0], 1)
        >>> [str(v) for v in vals]
        ['0', '1/4', '3/4', '3/4', '1/4', '0']
    """
    if not isinstance(n, int) or n < 0:
        raise ConstructionError(f"refinement steps must be an integer >= 0, got {n!r}")
    bp, vals = check_seed(seed_bp, seed_vals)
    check_iterate_size(parse_mask(mask), len(bp), n, "subdivision_iterate")
    c = subdivision_coefficients(mask, n)
    scale = 2 ** n
    support = [N for N, v in enumerate(c) if v != 0]
    cand = sorted({(b + N) / scale for b in bp for N in support})

    def value(x: Fraction) -> Fraction:
        z = scale * x
        lo, hi = math.floor(z - bp[-1]), math.ceil(z - bp[0])
        return sum((c[N] * evaluate_cpwl(bp, vals, z - N) for N in range(max(lo, 0), min(hi, len(c) - 1) + 1)
                    if c[N]), Fraction(0))

    out_v = [value(x) for x in cand]
    keep_b, keep_v = [cand[0]], [out_v[0]]
    for i in range(1, len(cand) - 1):
        s1 = (out_v[i] - keep_v[-1]) / (cand[i] - keep_b[-1])
        s2 = (out_v[i + 1] - out_v[i]) / (cand[i + 1] - cand[i])
        if s1 != s2:
            keep_b.append(cand[i])
            keep_v.append(out_v[i])
    keep_b.append(cand[-1])
    keep_v.append(out_v[-1])
    return keep_b, keep_v
