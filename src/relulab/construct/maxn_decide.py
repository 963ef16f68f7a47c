"""Exact decision for a finite family of second-layer orbits: does it contain a
two-hidden-layer max_n (first layer ``relu(x_i - x_j)``)?

The output weights are free, so this is ``b in span(A)`` over Q for the integer system of
:mod:`relulab.construct.maxn_colgen` (hyperplane rows, then the n - 1 linear rows; one
column per orbit, in the ``orbit_column`` convention scaled to integers).  Everything
heavy is done modulo primes below 2^31 (numpy int64 elimination: products stay below
2^62) and everything claimed is then checked in exact integers:

* a column basis ``Pc`` and a row basis ``R0`` of it (rank r) modulo a prime;
* the basis solution ``S x = b[R0]`` (``S = A[R0, Pc]``) modulo several primes, combined by
  the Chinese remainder theorem and rational reconstruction;
* ``found``: ``A[:, Pc] x = b`` holds on every row, checked exactly (a rational solution);
* ``infeasible``: a row i with non-zero exact residual gives ``y = e_i - z`` with
  ``z^T S = A[i, Pc]`` (reconstructed the same way), and ``y^T A = 0`` on **every** column
  and ``y^T b != 0`` are checked in exact integers: a proof that no combination of the
  family's orbits is max_n.  (If a prime is unlucky the rank or the reconstruction is
  wrong and the exact checks fail: status ``unknown``, never a wrong verdict.)

Example:
    >>> from relulab.construct import item_family
    >>> decide_family(5, item_family(5, (1,))).status
    'infeasible'
    >>> decide_family(5, item_family(5, (1, 2))).status
    'found'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..results import Result
from .maxmin import ConstructionError
from .maxn import PairTerm
from .maxn_colgen import orbit_column
from .maxn_modular import _PRIMES, _solve_rational, _unsatisfied_rows, basis_mod, exact_matvec

__all__ = ["FamilyDecision", "columns_system", "family_system", "decide_family", "decide_system", "check_certificate"]

@dataclass(frozen=True)
class FamilyDecision(Result):
    """Verdict of :func:`decide_family`: ``found`` (exact rational solution on the
    basis columns, every equation checked), ``infeasible`` (exact certificate
    ``certificate``: ``{row index: integer}`` with ``y^T A = 0`` on every column and
    ``y^T b != 0``, checked) or ``unknown`` (reconstruction failed: no verdict).

    Example:
        >>> from relulab.construct import item_family
        >>> d = decide_family(5, item_family(5, (1,)))
        >>> d.status, d.rank, d.n_columns, len(d.certificate)
        ('infeasible', 3, 7, 4)
    """

    n: int
    status: str
    rank: int
    n_rows: int
    n_columns: int
    certificate: dict[int, int] | None
    solution: dict[int, Fraction] | None


def columns_system(n: int, cols: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]]
                   ) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """The integer system (A, b, hyperplane keys) of keyed orbit columns ``(sorted
    encoded hyperplane keys, integer bend coefficients, integer linear part)``: A's rows
    the hyperplanes (sorted keys) then the n - 1 linear rows scaled by n; b is 0 on
    hyperplanes and ``n - m - 1`` on linear row m.  Item orbits (:func:`family_system`)
    and block orbits (``maxn_mixed``) share it.

    Example:
        >>> from relulab.construct import item_family
        >>> from relulab.construct.maxn_colgen import orbit_column
        >>> cols = [orbit_column(t, 4, divisor=False)[:3] for t in item_family(4, (1,))]
        >>> A, b, keys = columns_system(4, cols)
        >>> A.shape == (len(keys) + 3, len(cols)), b[-3:].tolist()
        (True, [3, 2, 1])
    """
    keys = sorted({int(k) for c in cols for k in c[0].tolist()})
    pos = {k: i for i, k in enumerate(keys)}
    R = len(keys)
    A = np.zeros((R + n - 1, len(cols)), dtype=np.int64)
    for j, (kk, coef, lin) in enumerate(cols):
        A[[pos[int(k)] for k in kk.tolist()], j] = coef
        A[R:, j] = n * np.asarray(lin, dtype=np.int64)
    b = np.zeros(R + n - 1, dtype=np.int64)
    b[R:] = [n - m - 1 for m in range(n - 1)]
    return A, b, keys


def family_system(n: int, terms: Sequence[PairTerm]) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """The integer system of ``terms`` for n inputs: (A, b, hyperplane keys) with A's
    rows the hyperplanes (sorted keys) then the n - 1 linear rows scaled by n; column j is
    ``n * orbit_column`` (so its unknown is term j's output weight divided by its
    divisor, an invertible rescaling) and b is 0 on hyperplanes, ``n - m - 1`` on linear
    row m (:func:`columns_system` of the terms' orbit columns).

    Example:
        >>> from relulab.construct import item_family
        >>> A, b, keys = family_system(4, item_family(4, (1, 2)))
        >>> A.shape[0] == len(keys) + 3, b[-3:].tolist()
        (True, [3, 2, 1])
    """
    return columns_system(n, [orbit_column(t, n, divisor=False)[:3] for t in terms])


def check_certificate(A: np.ndarray, b: np.ndarray, y: dict[int, int]) -> bool:
    """True when the integer vector y (``{row: value}``) has ``y^T A = 0`` on every
    column and ``y^T b != 0``, in exact integers: no combination of A's columns is b.

    Example:
        >>> A = np.array([[1, 2], [2, 4]]); b = np.array([1, 1])
        >>> check_certificate(A, b, {0: 2, 1: -1})
        True
    """
    rows = sorted(y)
    yv = [int(y[r]) for r in rows]
    lhs = exact_matvec(np.asarray(A)[rows].T, yv)  # in blocks: no object copy of A
    return bool(all(v == 0 for v in lhs) and sum(v * int(w) for v, w in zip(yv, np.asarray(b)[rows].tolist(),
                                                                          strict=True)) != 0)


def decide_family(n: int, terms: Sequence[PairTerm]) -> FamilyDecision:
    """Decide exactly whether the orbits ``terms`` contain a two-hidden-layer max_n
    (module docstring).

    Example:
        >>> from relulab.construct import item_family
        >>> d = decide_family(5, item_family(5, (1,)))
        >>> A, b, _ = family_system(5, item_family(5, (1,)))
        >>> check_certificate(A, b, d.certificate)
        True
    """
    if not isinstance(n, (int, np.integer)) or n < 3:
        raise ConstructionError(f"decide_family: n must be an integer >= 3, got {n!r}")
    terms = [t for t in terms if t.k <= n]
    if not terms:
        raise ConstructionError("decide_family: the family has no term on at most n coordinates")
    A, b, _ = family_system(n, terms)
    return decide_system(n, A, b)


def decide_system(n: int, A: np.ndarray, b: np.ndarray) -> FamilyDecision:
    """Decide exactly whether ``A u = b`` has a rational solution, for an integer system
    in the convention of :func:`family_system` (any columns: item orbits, block orbits,
    or both); the verdict of :func:`decide_family`.

    Example:
        >>> A = np.array([[1, 1], [2, 2], [0, 1]]); b = np.array([0, 0, 3])
        >>> d = decide_system(3, A, b)
        >>> d.status, d.solution
        ('found', {0: Fraction(-3, 1), 1: Fraction(3, 1)})
        >>> decide_system(3, A, np.array([1, 0, 0])).status
        'infeasible'
    """
    R, m = A.shape
    p = _PRIMES[0]
    pc = basis_mod(A, p)
    r0 = basis_mod(A[:, pc].T, p)
    r = len(pc)

    def verdict(status: str, cert=None, sol=None) -> FamilyDecision:
        return FamilyDecision(n, status, r, R, m, cert, sol)

    S = A[np.ix_(r0, pc)]
    x = _solve_rational(S, b[r0])
    if x is None:
        return verdict("unknown")
    bad = _unsatisfied_rows(A[:, pc], x, b)
    if not bad:
        return verdict("found", sol={int(pc[j]): x[j] for j in range(r)})
    i = bad[0]
    z = _solve_rational(S.T, A[i, pc]) if r else []
    if z is None:
        return verdict("unknown")
    dz = math.lcm(*(v.denominator for v in z)) if z else 1
    y = {int(r0[j]): -int(z[j] * dz) for j in range(r) if z[j] != 0}
    y[i] = y.get(i, 0) + dz
    g = math.gcd(*y.values())
    y = {k: v // g for k, v in y.items() if v}
    if not check_certificate(A, b, y):
        return verdict("unknown")
    return verdict("infeasible", cert=y)
