"""Exact decision for two-hidden-layer max_n families whose systems are too tall to
eliminate directly: decide a random integer row sketch, then check on the full system.

For n >= 11 a family's system has tens of thousands of hyperplane rows (a 5 + 5 segment
orbit alone bends along about 20,000 hyperplanes at n = 11) while its rank is a few
thousand, so :func:`relulab.construct.decide_system` would eliminate a matrix far taller
than it needs.  Here the hyperplane rows ``A_h`` are first compressed by an integer
sketch ``G`` (every hyperplane row is added, with a random coefficient in {+-1, +-2}, to
two random rows of ``G A_h``; the n - 1 linear rows, which carry the right-hand side,
are kept), and the sketched system ``S u = G b`` is decided exactly by
:func:`relulab.construct.decide_system`.  Both of its verdicts transfer, and both are
checked on the full system in exact integers:

* ``found``: ``S u = G b`` only says ``A u - b`` lies in the kernel of G; so
  ``A u = b`` is checked on every hyperplane and linear row of the *unsketched* columns
  (Python integers over a common denominator).  If the sketch was unlucky (G not
  injective on the column space) the check fails and the result is ``unknown``.
* ``infeasible``: decide_system's certificate z has ``z^T S = 0`` on every column and
  ``z^T G b != 0``, so ``y = G^T z`` has ``y^T A = 0`` and ``y^T b != 0``: an exact proof
  that no combination of the family is max_n, re-checked column by column on the keyed
  columns.

Example:
    >>> from relulab.construct import item_family
    >>> from relulab.construct.maxn_mixed import pair_column
    >>> cols = [pair_column(t, 5) for t in item_family(5, (1, 2))]
    >>> decide_sketched(5, cols).status
    'found'
    >>> decide_sketched(5, [pair_column(t, 5) for t in item_family(5, (1,))]).status
    'infeasible'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..results import Result
from .maxmin import ConstructionError
from .maxn_decide import decide_system

__all__ = ["SketchedDecision", "decide_sketched", "check_solution_columns"]

Column = tuple[np.ndarray, np.ndarray, np.ndarray]
_COPIES = 2  # sketch rows each hyperplane row is added to


@dataclass(frozen=True)
class SketchedDecision(Result):
    """Verdict of :func:`decide_sketched`: ``found`` (``solution``: column index ->
    exact rational weight, ``A u = b`` checked on the full system), ``infeasible``
    (``certificate``: hyperplane key or ``"lin m"`` -> integer, ``y^T A = 0`` on every
    column and ``y^T b != 0`` checked on the full system) or ``unknown`` (the sketch or a
    prime was unlucky: no verdict).  ``sketch_rows`` rows stood for ``n_rows``.

    Example:
        >>> from relulab.construct import item_family
        >>> from relulab.construct.maxn_mixed import pair_column
        >>> d = decide_sketched(4, [pair_column(t, 4) for t in item_family(4, (1,))])
        >>> d.status, d.n_columns
        ('found', 7)
    """

    n: int
    status: str
    rank: int
    n_rows: int
    sketch_rows: int
    n_columns: int
    solution: dict[int, Fraction] | None
    certificate: dict[str, int] | None


def _row_index(cols: Sequence[Column]) -> tuple[np.ndarray, list[np.ndarray]]:
    keys = np.unique(np.concatenate([np.asarray(c[0], dtype=np.int64) for c in cols]))
    return keys, [np.searchsorted(keys, np.asarray(c[0], dtype=np.int64)) for c in cols]


def check_solution_columns(n: int, cols: Sequence[Column], solution: dict[int, Fraction]) -> bool:
    """True when ``sum_j solution[j] * column_j`` has a zero bend on every hyperplane and
    the linear part of max - mean (times n: ``n - m - 1`` on linear row m), in exact
    integers over a common denominator.

    Example:
        >>> c = (np.array([5]), np.array([1]), np.array([1, 0]))
        >>> d = (np.array([5]), np.array([-2]), np.array([0, 1]))
        >>> check_solution_columns(3, [c, d], {0: Fraction(2, 3), 1: Fraction(1, 3)})
        True
        >>> check_solution_columns(3, [c, d], {0: Fraction(1, 3), 1: Fraction(2, 3)})
        False
    """
    used = [(j, Fraction(v)) for j, v in solution.items() if v != 0]
    den = math.lcm(*(v.denominator for _, v in used)) if used else 1
    bends: dict[int, int] = {}
    linear = [0] * (n - 1)
    for j, v in used:
        w = int(v * den)
        keys, coef, lin = cols[j]
        for k, c in zip(np.asarray(keys).tolist(), np.asarray(coef).tolist(), strict=True):
            bends[k] = bends.get(k, 0) + w * c
        for m in range(n - 1):
            linear[m] += w * int(lin[m])
    if any(v != 0 for v in bends.values()):
        return False
    return [n * v for v in linear] == [den * (n - m - 1) for m in range(n - 1)]


def _check_certificate_columns(n: int, cols: Sequence[Column], y_keys: dict[int, int],
                               y_lin: list[int]) -> bool:
    """``y^T A = 0`` on every keyed column and ``y^T b != 0`` (A's linear rows are n * lin)."""
    for keys, coef, lin in cols:
        tot = sum(y_keys.get(k, 0) * c for k, c in zip(np.asarray(keys).tolist(),
                                                        np.asarray(coef).tolist(), strict=True))
        tot += sum(y_lin[m] * n * int(lin[m]) for m in range(n - 1))
        if tot != 0:
            return False
    return sum(y_lin[m] * (n - m - 1) for m in range(n - 1)) != 0


def decide_sketched(n: int, cols: Sequence[Column], sketch_rows: int | None = None,
                    seed: int = 0) -> SketchedDecision:
    """Decide exactly whether the keyed orbit columns ``cols`` (``pair_column`` /
    ``block_column`` convention) contain max_n, through a random integer row sketch of
    ``sketch_rows`` hyperplane rows (default: the number of columns plus 50, at most the
    number of hyperplanes) and the exact checks of the module docstring.

    Example:
        >>> from relulab.construct import item_family
        >>> from relulab.construct.maxn_mixed import pair_column
        >>> d = decide_sketched(6, [pair_column(t, 6) for t in item_family(6, (1, 2))], sketch_rows=28)
        >>> d.status, d.sketch_rows, d.n_rows
        ('found', 33, 40)
    """
    if not isinstance(n, (int, np.integer)) or n < 3:
        raise ConstructionError(f"decide_sketched: n must be an integer >= 3, got {n!r}")
    if not cols:
        raise ConstructionError("decide_sketched: no columns")
    keys, rows_of = _row_index(cols)
    R, m = len(keys), len(cols)
    r = min(R, sketch_rows if sketch_rows is not None else m + 50)
    if sketch_rows is not None and sketch_rows < 1:
        raise ConstructionError(f"decide_sketched: sketch_rows must be >= 1, got {sketch_rows!r}")
    rng = np.random.default_rng(seed)
    # G: every hyperplane row i goes to the distinct rows dest[i, c] with coefficient
    # sign[i, c]; with no fewer sketch rows than hyperplanes, G is the identity
    if r >= R or r < _COPIES:
        r = R
        dest = np.repeat(np.arange(R)[:, None], _COPIES, axis=1)
        sign = np.zeros((R, _COPIES), dtype=np.int64)
        sign[:, 0] = 1
    else:
        first = rng.integers(0, r, R)
        dest = np.stack([first, (first + rng.integers(1, r, R)) % r], axis=1)
        sign = rng.choice(np.array([-2, -1, 1, 2], dtype=np.int64), (R, _COPIES))
    St = np.zeros((m, r + n - 1), dtype=np.int64)  # built by columns, transposed once
    for j, ((_, coef, lin), idx) in enumerate(zip(cols, rows_of, strict=True)):
        coef = np.asarray(coef, dtype=np.int64)
        for c in range(_COPIES):
            np.add.at(St[j], dest[idx, c], sign[idx, c] * coef)
        St[j, r:] = n * np.asarray(lin, dtype=np.int64)
    S = np.ascontiguousarray(St.T)
    del St
    if int(np.abs(S).max(initial=0)) >= 2**62 // max(1, m):
        raise ConstructionError("decide_sketched: sketched entries too large for the int64 elimination")
    b = np.zeros(r + n - 1, dtype=np.int64)
    b[r:] = [n - q - 1 for q in range(n - 1)]
    d = decide_system(n, S, b)

    def verdict(status: str, sol=None, cert=None) -> SketchedDecision:
        return SketchedDecision(n, status, d.rank, R + n - 1, r + n - 1, m, sol, cert)

    if d.status == "found":
        sol = {j: v for j, v in d.solution.items() if v != 0}
        return verdict("found", sol=sol) if check_solution_columns(n, cols, sol) else verdict("unknown")
    if d.status == "infeasible":
        z = d.certificate
        y_keys: dict[int, int] = {}
        for i in range(R):  # y = G^T z on the hyperplane rows
            v = sum(int(sign[i, c]) * z.get(int(dest[i, c]), 0) for c in range(_COPIES))
            if v:
                y_keys[int(keys[i])] = v
        y_lin = [z.get(r + q, 0) for q in range(n - 1)]
        if not _check_certificate_columns(n, cols, y_keys, y_lin):
            return verdict("unknown")
        cert = {str(k): v for k, v in y_keys.items()}
        cert.update({f"lin {q}": v for q, v in enumerate(y_lin) if v})
        return verdict("infeasible", cert=cert)
    return verdict("unknown")
