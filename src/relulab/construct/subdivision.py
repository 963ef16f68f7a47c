"""Iterates of a binary refinement (subdivision) operator, exactly, and as a wide network.

For a finite mask ``a_0..a_K`` the refinement operator acts on functions by
``(R f)(x) = sum_j a_j f(2x - j)``.  Starting from a CPWL seed ``f_0`` (breakpoints and
values, zero outside), the iterates ``f_n = R^n f_0`` are CPWL with breakpoints on a
grid that halves each step.  :func:`refinement_iterate` computes ``f_n`` exactly (its
breakpoints and values in rational arithmetic); :func:`subdivision_network` turns it
into the naive wide one-hidden-layer network (:func:`relulab.construct.cpwl_1d`), one
neuron per breakpoint.

The fixed-width networks whose depth grows linearly with n are in
:mod:`relulab.construct.refine`; :func:`relulab.construct.refine_scheme.subdivision_iterate`
computes the same iterates by a second algorithm (the cascade coefficients).

Example:
    >>> chaikin = [F('1/4'), F('3/4'), F('3/4'), F('1/4')]
    >>> bp, vals = refinement_iterate(chaikin, [0, 1, 2], [0, 1, 0], 1)
    >>> [str(b) for b in bp], [str(v) for v in vals]
    (['0', '1/2', '1', '3/2', '2', '5/2'], ['0', '1/4', '3/4', '3/4', '1/4', '0'])
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from ..network import Network
from ._builder import F
from .cpwl import cpwl_1d
from .maxmin import ConstructionError
from .refine_scheme import check_iterate_size, check_seed, evaluate_cpwl, parse_mask

__all__ = ["refinement_iterate", "subdivision_network", "evaluate_cpwl", "cascade_value"]


def _check(mask: object, bp: Sequence[object], vals: Sequence[object],
           n: int) -> tuple[list[Fraction], list[Fraction], list[Fraction]]:
    """The mask (:func:`parse_mask`: a finite list or an ``{index: coefficient}`` dict)
    and the seed (:func:`check_seed`) as exact lists, and the steps, checked."""
    a = parse_mask(mask)
    bp_q, vals_q = check_seed(bp, vals)
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ConstructionError(f"subdivision: steps must be an integer >= 0, got {n!r}")
    check_iterate_size(a, len(bp_q), n, "subdivision")
    return a, bp_q, vals_q


def refinement_iterate(mask: Sequence[object], seed_bp: Sequence[object],
                       seed_vals: Sequence[object], n: int) -> tuple[list[Fraction], list[Fraction]]:
    """Breakpoints and values of ``f_n = R^n f_0`` (exact).  The breakpoints of f_n lie in
    ``{(b + j) / 2 : b a breakpoint of f_(n-1), j = 0..K}`` (plus the support ends);
    the values there follow from ``f_n(x) = sum_j a_j f_(n-1)(2x - j)``; redundant
    breakpoints (no slope change) are dropped.

    Example:
        >>> from fractions import Fraction as F
        >>> hat = [F(1, 2), 1, F(1, 2)]                    # the hat is refinable: R f = f
        >>> bp, vals = refinement_iterate(hat, [0, 1, 2], [0, 1, 0], 2)
        >>> [str(b) for b in bp], [str(v) for v in vals]
        (['0', '1', '2'], ['0', '1', '0'])
    """
    a, bp, vals = _check(mask, seed_bp, seed_vals, n)
    for _ in range(n):
        cand = sorted({(b + j) / 2 for b in bp for j in range(len(a))})
        new_vals = [sum((a[j] * evaluate_cpwl(bp, vals, 2 * x - j) for j in range(len(a))),
                        Fraction(0)) for x in cand]
        bp, vals = _simplify(cand, new_vals)
    return bp, vals


def _simplify(bp: list[Fraction], vals: list[Fraction]) -> tuple[list[Fraction], list[Fraction]]:
    keep_b, keep_v = [bp[0]], [vals[0]]
    for i in range(1, len(bp) - 1):
        s1 = (vals[i] - keep_v[-1]) / (bp[i] - keep_b[-1])
        s2 = (vals[i + 1] - vals[i]) / (bp[i + 1] - bp[i])
        if s1 != s2:
            keep_b.append(bp[i])
            keep_v.append(vals[i])
    keep_b.append(bp[-1])
    keep_v.append(vals[-1])
    # the function is 0 outside its breakpoints: an end point with 0 on both sides is no
    # kink (a mask with a leading 0 kept one, and the network built a neuron for it)
    while len(keep_b) > 2 and keep_v[0] == 0 and keep_v[1] == 0:
        del keep_b[0], keep_v[0]
    while len(keep_b) > 2 and keep_v[-1] == 0 and keep_v[-2] == 0:
        del keep_b[-1], keep_v[-1]
    return keep_b, keep_v


def cascade_value(mask: Sequence[object], seed_bp: Sequence[object], seed_vals: Sequence[object],
                  n: int, x: object) -> Fraction:
    """``f_n(x)`` straight from the definition, by recursion ``(K+1)^n`` calls deep (an
    independent check of :func:`refinement_iterate` for small n).

    Example:
        >>> from fractions import Fraction as F
        >>> chaikin = [F(1, 4), F(3, 4), F(3, 4), F(1, 4)]
        >>> bp, vals = refinement_iterate(chaikin, [0, 1, 2], [0, 1, 0], 2)
        >>> all(cascade_value(chaikin, [0, 1, 2], [0, 1, 0], 2, b) == v for b, v in zip(bp, vals))
        True
    """
    a, bp, vals = _check(mask, seed_bp, seed_vals, 0)

    def f(k: int, y: Fraction) -> Fraction:
        if k == 0:
            return evaluate_cpwl(bp, vals, y)
        return sum((a[j] * f(k - 1, 2 * y - j) for j in range(len(a)) if a[j] != 0), Fraction(0))

    return f(n, F(x))


def subdivision_network(mask: Sequence[object], n: int, seed_bp: Sequence[object] | None = None,
                        seed_vals: Sequence[object] | None = None) -> Network:
    """The naive wide network of ``f_n``: one hidden layer, one neuron per breakpoint of
    ``f_n`` plus one (``cpwl_1d`` with zero end slopes).  The default seed is the hat
    ``0, 1, 0`` at ``0, 1, 2``.

    Example:
        >>> subdivision_network([F('1/2'), 1, F('1/2')], 3).widths   # the hat is refinable
        (4,)
    """
    seed_bp = [0, 1, 2] if seed_bp is None else seed_bp
    seed_vals = [0, 1, 0] if seed_vals is None else seed_vals
    bp, vals = refinement_iterate(mask, seed_bp, seed_vals, n)
    return cpwl_1d(bp, vals)
