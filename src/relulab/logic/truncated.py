"""Truncated affine functions ``σ(w·x + b) = min(1, max(0, w·x + b))`` as MV terms.

The construction (McNaughton / Mundici style):

1. a negative coefficient becomes a positive one on the negated variable,
   ``w x = |w| ¬x - |w|``;
2. each coefficient ``a = ⌊a⌋ + f`` gives ``⌊a⌋`` copies of its literal plus one atom
   ``f·literal`` (``f = p/q``: ``δ_q`` summed ``p`` times by ⊕ in a divisible algebra, the
   Riesz scalar ``f ·`` otherwise); the fractional part of the constant becomes the atom
   ``f·1``; every atom takes values in [0, 1];
3. with atoms ``t_1 .. t_m`` and an integer ``k``, ``T(i, k) = σ(t_i + ... + t_m + k)``
   obeys ``T(i, k) = (T(i+1, k) ⊕ t_i) ⊙ T(i+1, k+1)`` (check the four cases ``A <= -1``,
   ``-1 <= A <= 0``, ``0 <= A <= 1``, ``A >= 1`` for ``A = t_{i+1} + ... + k``), with
   ``T(i, k) = 1`` for ``k >= 1`` and ``0`` for ``k + (m - i + 1) <= 0``.  Shared
   sub-terms keep the DAG at O(m^2) nodes.

Integer weights need only ⊕, ⊙, ¬ (the MV axioms); rational ones δ_n (divisible MV);
real ones the scalars (Riesz MV).

Example:
    >>> from fractions import Fraction as F
    >>> from relulab.logic import evaluate, to_text
    >>> to_text(truncated_affine([1, 1], -1))      # max(0, x1 + x2 - 1)
    'x1 ⊙ x2'
    >>> phi = truncated_affine([F(1, 2), -2], F(1, 3))
    >>> evaluate(phi, [F(1), F(1, 10)]) == min(1, max(0, F(1, 2) - F(2, 10) + F(1, 3)))
    True
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from contextvars import ContextVar
from fractions import Fraction
from typing import Any

import numpy as np

from .formula import ALGEBRAS, ONE, ZERO, Formula, FormulaError, div, neg, odot, oplus, scal, var

__all__ = ["truncated_affine", "weights_algebra", "sigma"]


def sigma(t: Fraction) -> Fraction:
    """min(1, max(0, t)).

    Example:
        >>> from fractions import Fraction
        >>> sigma(Fraction(3, 2)), sigma(Fraction(-1)), sigma(Fraction(1, 3))
        (Fraction(1, 1), Fraction(0, 1), Fraction(1, 3))
    """
    return min(Fraction(1), max(Fraction(0), t))


def weights_algebra(values: Sequence[Any], real: bool = False) -> str:
    """``"MV"`` for integers, ``"divisible MV"`` for rationals, ``"Riesz MV"`` when
    ``real`` (the numbers stand for real numbers, e.g. floats) and some is not an integer.

    Example:
        >>> weights_algebra([1, -2, 0]), weights_algebra([0.5, 1]), weights_algebra([0.1], real=True)
        ('MV', 'divisible MV', 'Riesz MV')
    """
    if all(Fraction(v).denominator == 1 for v in values):
        return "MV"
    return "Riesz MV" if real else "divisible MV"


def _sum_copies(a: Formula, p: int) -> Formula:
    """⊕ of ``p >= 1`` copies of ``a`` (by doubling: O(log p) shared nodes).  Used only
    where the sum stays <= 1, so no truncation happens."""
    result = None
    power = a
    while p:
        if p & 1:
            result = power if result is None else oplus(result, power)
        p >>= 1
        if p:
            power = oplus(power, power)
    assert result is not None
    return result


def _fraction_atom(f: Fraction, lit: Formula, algebra: str) -> Formula:
    """An atom with value ``f · lit`` for ``0 < f < 1``."""
    if algebra == "Riesz MV":
        return scal(f, lit)
    if algebra != "divisible MV":
        raise FormulaError(f"the weight {f} is not an integer: the MV algebra needs integer weights")
    return _sum_copies(div(f.denominator, lit), f.numerator)


def truncated_affine(weights: Sequence[Any], bias: Any, algebra: str | None = None) -> Formula:
    """An MV term whose truth function is ``min(1, max(0, sum_i w_i x_i + b))``.

    Args:
        weights: ``w_1 .. w_m`` (Fractions, ints or floats, taken exactly); variable
            ``x_i`` goes with ``w_i``.
        bias: ``b``.
        algebra: ``"MV"``, ``"divisible MV"`` or ``"Riesz MV"``; default: the weakest
            one the numbers need (integers: MV, otherwise divisible MV).

    Example:
        >>> str(truncated_affine([1, 1], -1))
        'x1 ⊙ x2'
    """
    ws = [_exact_number(w, f"weight {i}") for i, w in enumerate(weights, start=1)]
    b = _exact_number(bias, "bias")
    if algebra is not None and algebra not in ALGEBRAS:
        raise FormulaError(f"truncated_affine: algebra must be one of {', '.join(ALGEBRAS)} or None, "
                           f"got {algebra!r}")
    if algebra is None:
        algebra = weights_algebra([*ws, b])
    return _truncated_counted(ws, b, algebra, staircase_nodes(ws, b))


def _truncated_counted(ws: list[Fraction], b: Fraction, algebra: str, nodes: int) -> Formula:
    """:func:`truncated_affine` on exact numbers whose :func:`staircase_nodes` count
    ``nodes`` is known (the extraction counts every node once against its total budget;
    counting again here doubled the cost of a steep neuron's check)."""
    _check_size(ws, b, nodes)
    atoms: list[Formula] = []
    const = b
    for i, w in enumerate(ws, start=1):
        if w == 0:
            continue
        lit = var(i)
        if w < 0:
            lit = neg(lit)
            const += w  # w x = |w| (1 - x) - |w|
            w = -w
        whole = math.floor(w)
        atoms.extend([lit] * whole)
        if w != whole:
            atoms.append(_fraction_atom(w - whole, lit, algebra))
    k = math.floor(const)
    if const != k:
        atoms.append(_fraction_atom(const - k, ONE, algebra))
    return _staircase(atoms, k)


# Bytes per formula node of the staircase (measured: 2,000,000 nodes in 1.1 GB), with a margin.
NODE_BYTES = 700
# Staircases of up to this many atoms have their steps counted level by level (an int64
# array of this length); longer ones get the closed bound.
_COUNTED_LEVELS = 10**7


def staircase_nodes(weights: Sequence[Fraction], bias: Fraction) -> int:
    """An upper bound on the number of formula nodes :func:`truncated_affine` builds: its
    ``m`` atoms (one per unit of ``|w_i|``, one per fractional part) and the integer part
    ``k`` of the constant give the steps of :func:`_staircase` that are not known
    constants (counted level by level; past ``_COUNTED_LEVELS`` atoms bounded by
    ``m * min(1 - k, (m + 1) / 2 + 1)``), two nodes each, plus the atoms' own nodes.

    Example:
        >>> staircase_nodes([Fraction(2000)], Fraction(-1000))
        2002002
    """
    const = bias + sum((w for w in weights if w < 0), Fraction(0))
    fracs = [abs(w) - math.floor(abs(w)) for w in weights] + [const - math.floor(const)]
    m = sum(math.floor(abs(w)) for w in weights) + sum(1 for f in fracs if f)
    # the atoms themselves: a literal (2 nodes) or a fraction p/q of one (a doubling sum)
    atoms = 2 * len(weights) + sum(2 * f.numerator.bit_length() + 3 for f in fracs if f)
    k = math.floor(const)
    if k >= 1 or k + m <= 0:
        return atoms + 1
    if m > _COUNTED_LEVELS:  # the closed bound: m levels of at most min(1 - k, m/2 + 1) steps
        return 2 * m * min(1 - k, (m + 1) // 2 + 1) + atoms
    # the steps _staircase builds, counted: at level i the pairs (i, k') with
    # max(k, i - m + 1) <= k' <= min(0, k + i), two nodes each.  The closed bound above
    # counted m^2 / 2 steps for a rescaled node (k near 1 - m), which builds about m:
    # relu(x - 0.9994) was refused as 1.82 GB for a formula of a few MB
    i = np.arange(m, dtype=np.int64)
    per_level = np.minimum(0, k + i) - np.maximum(k, i - m + 1) + 1
    return 2 * int(np.maximum(per_level, 0).sum()) + atoms


def _check_size(ws: list[Fraction], b: Fraction, n: int) -> None:
    from ..limits import check_bytes

    big = max(range(len(ws)), key=lambda i: abs(ws[i]), default=None)
    where = "" if big is None else f" (weight {big + 1} = {float(ws[big]):.3g})"
    check_bytes(float(NODE_BYTES) * n, f"truncated_affine: the staircase of about {n:.3g} formula nodes{where}")


def _exact_number(v: Any, what: str) -> Fraction:
    """``v`` as an exact Fraction (floats taken at their exact value); one error otherwise."""
    try:
        return Fraction(v)
    except (TypeError, ValueError, OverflowError):
        raise FormulaError(f"truncated_affine: {what} must be a finite number, got {v!r}") from None


#: a ``time.monotonic()`` moment past which :func:`_staircase` stops (None: no limit); the
#: extraction sets it, as one steep neuron's staircase ran 5-7 s past a 1 s limit
STAIRCASE_DEADLINE: ContextVar[float | None] = ContextVar("staircase_deadline", default=None)


class StaircaseOutOfTime(FormulaError):
    """:data:`STAIRCASE_DEADLINE` passed while a staircase was being built."""


def _staircase(atoms: list[Formula], k0: int) -> Formula:
    """σ(t_1 + ... + t_m + k0) for atoms with values in [0, 1], by the recursion above,
    computed bottom-up (no Python recursion); the clock (:data:`STAIRCASE_DEADLINE`) is
    read at every level."""
    m = len(atoms)
    deadline = STAIRCASE_DEADLINE.get()

    def known(i: int, k: int) -> Formula | None:
        if k >= 1:
            return ONE
        if k + (m - i) <= 0:
            return ZERO
        return None

    # level[k] = T(i, k) for the k needed at level i (k0 .. k0 + i).
    nxt: dict[int, Formula] = {}
    for i in range(m, -1, -1):
        if deadline is not None and time.monotonic() > deadline:
            raise StaircaseOutOfTime(f"the time limit ended the extraction in a staircase of {m} atoms "
                                     f"(at level {m - i})")
        cur: dict[int, Formula] = {}
        for k in range(k0, k0 + i + 1):
            t = known(i, k)
            if t is None:  # then i < m
                A = nxt[k]
                B = nxt[k + 1]
                t_i = atoms[i]
                if B is ONE:
                    t = t_i if A is ZERO else oplus(A, t_i)
                elif A is ZERO:
                    t = odot(t_i, B)
                else:
                    t = odot(oplus(A, t_i), B)
            cur[k] = t
        nxt = cur
    return nxt[k0]
