"""Exact decision for two-hidden-layer max_n families whose systems are too tall to
eliminate at once: decide a subset of the rows, check the answer on all of them, add
the rows it violates, repeat (row generation).

For n >= 11 a family's system has tens of thousands of hyperplane rows while its rank is
a few thousand, so :func:`relulab.construct.decide_system` would eliminate a matrix far
taller than it needs.  Here the n - 1 linear rows (which carry the right-hand side) and
a random subset of the hyperplane rows are decided exactly by ``decide_system``, which
keeps the rows' own small integers (a random mixing of rows would make the basis
solutions' denominators explode beyond the rational reconstruction).  Both verdicts are
then settled on the *full* keyed columns:

* ``infeasible`` on a subset of rows is a proof for the whole system (the certificate
  is zero on the rows not taken); it is re-checked column by column in exact integers.
* ``found`` on a subset of rows gives a candidate u; ``A u - b`` is computed on every
  hyperplane modulo a prime (a non-zero residue proves a violation) and the violated
  rows join the subset for the next round; when no residue is left the whole system is
  checked in exact integers (:func:`check_solution_columns`) and the result is ``found``.

Every round adds rows that are independent of those taken, so the loop ends; a budget of
rounds (``max_rounds``) gives ``unknown`` when hit, a time budget (``time_limit``,
checked between rounds: the elimination of a round is not interrupted) ``partial``.

Example:
    >>> from relulab.construct import item_family
    >>> from relulab.construct.maxn_mixed import pair_column
    >>> cols = [pair_column(t, 5) for t in item_family(5, (1, 2))]
    >>> decide_rows(5, cols, initial_rows=4).status
    'found'
    >>> decide_rows(5, [pair_column(t, 5) for t in item_family(5, (1,))]).status
    'infeasible'
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..results import Result
from .maxmin import ConstructionError
from .maxn_decide import decide_system

__all__ = ["RowGenDecision", "decide_rows", "check_solution_columns"]

Column = tuple[np.ndarray, np.ndarray, np.ndarray]
_CHECK_PRIME = 2_147_483_629  # residues of A u - b on every hyperplane are computed modulo this


@dataclass(frozen=True)
class RowGenDecision(Result):
    """Verdict of :func:`decide_rows`: ``found`` (``solution``: column index -> exact
    rational weight, ``A u = b`` checked on every row of the full system), ``infeasible``
    (``certificate``: hyperplane key (as a string) or ``"lin m"`` -> integer, ``y^T A = 0``
    on every column and ``y^T b != 0``, checked), ``unknown`` (a prime was unlucky or the
    round budget ended: no verdict) or ``partial`` (the time budget ended after ``rounds``
    rounds: no verdict; ``rank`` is the last row subset's).  ``rows_used`` of ``n_rows`` rows were eliminated.

    Example:
        >>> from relulab.construct import item_family
        >>> from relulab.construct.maxn_mixed import pair_column
        >>> d = decide_rows(4, [pair_column(t, 4) for t in item_family(4, (1,))])
        >>> d.status, d.n_columns
        ('found', 7)
    """

    n: int
    status: str
    rank: int
    n_rows: int
    rows_used: int
    n_columns: int
    rounds: int
    seconds: float
    solution: dict[int, Fraction] | None
    certificate: dict[str, int] | None


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


def _violated_rows(rows_of: Sequence[np.ndarray], cols: Sequence[Column], R: int,
                   solution: dict[int, Fraction]) -> np.ndarray:
    """Hyperplane rows whose residual ``(A u)_i`` (b is 0 there) is non-zero modulo a
    prime: each of them is violated in exact arithmetic too."""
    p = _CHECK_PRIME
    used = [(j, Fraction(v)) for j, v in solution.items() if v != 0]
    den = math.lcm(*(v.denominator for _, v in used)) if used else 1
    acc = np.zeros(R, dtype=np.int64)
    for j, v in used:
        w = int(v * den) % p
        coef = np.mod(np.asarray(cols[j][1], dtype=np.int64), p)
        idx = rows_of[j]
        acc[idx] = (acc[idx] + coef * w % p) % p
    return np.nonzero(acc)[0]


def _subsystem(n: int, cols: Sequence[Column], rows_of: Sequence[np.ndarray], take: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """The dense integer system on the hyperplane rows ``take`` (sorted) plus the n - 1
    linear rows (times n), in the convention of :func:`columns_system`."""
    r = len(take)
    A = np.zeros((r + n - 1, len(cols)), dtype=np.int64)
    for j, ((_, coef, lin), idx) in enumerate(zip(cols, rows_of, strict=True)):
        pos = np.searchsorted(take, idx)
        hit = (pos < r) & (take[np.minimum(pos, r - 1)] == idx) if r else np.zeros(len(idx), dtype=bool)
        A[pos[hit], j] = np.asarray(coef, dtype=np.int64)[hit]
        A[r:, j] = n * np.asarray(lin, dtype=np.int64)
    b = np.zeros(r + n - 1, dtype=np.int64)
    b[r:] = [n - q - 1 for q in range(n - 1)]
    return A, b


def decide_rows(n: int, cols: Sequence[Column], initial_rows: int | None = None,
                batch: int | None = None, max_rounds: int = 60, seed: int = 0,
                log=None, time_limit: float | None = None) -> RowGenDecision:
    """Decide exactly whether the keyed orbit columns ``cols`` (``pair_column`` /
    ``block_column`` convention) contain max_n by row generation (module docstring):
    ``initial_rows`` random hyperplane rows to start (default: the number of columns, at
    most all of them), at most ``batch`` violated rows added per round (default: the
    same number); ``time_limit`` seconds, checked before each new round (``partial``
    when it has passed).

    Example:
        >>> from relulab.construct import item_family
        >>> from relulab.construct.maxn_mixed import pair_column
        >>> d = decide_rows(6, [pair_column(t, 6) for t in item_family(6, (1, 2))], initial_rows=10)
        >>> d.status, d.rows_used < d.n_rows
        ('found', True)
    """
    if not isinstance(n, (int, np.integer)) or n < 3:
        raise ConstructionError(f"decide_rows: n must be an integer >= 3, got {n!r}")
    if not cols:
        raise ConstructionError("decide_rows: no columns")
    if time_limit is not None and not time_limit >= 0:
        raise ConstructionError(f"decide_rows: time_limit must be a number >= 0, got {time_limit!r}")
    if max_rounds < 1:
        raise ConstructionError(f"decide_rows: max_rounds must be >= 1, got {max_rounds!r}")
    if (initial_rows is not None and initial_rows < 1) or (batch is not None and batch < 1):
        raise ConstructionError(f"decide_rows: initial_rows and batch must be >= 1, got "
                                f"{initial_rows!r}, {batch!r}")
    t0 = time.monotonic()
    keys = np.unique(np.concatenate([np.asarray(c[0], dtype=np.int64) for c in cols]))
    # int32 row indices: the index arrays are as long as the columns (memory at n = 11)
    rows_of = [np.searchsorted(keys, np.asarray(c[0], dtype=np.int64)).astype(np.int32) for c in cols]
    R, m = len(keys), len(cols)
    rng = np.random.default_rng(seed)
    first = min(R, initial_rows if initial_rows is not None else m)
    take = np.sort(rng.choice(R, first, replace=False)) if first else np.zeros(0, dtype=np.int64)
    step = batch if batch is not None else max(m, 1)
    state = {"rank": 0, "rounds": 0}

    def verdict(status: str, sol=None, cert=None) -> RowGenDecision:
        return RowGenDecision(n, status, state["rank"], R + n - 1, len(take) + n - 1, m, state["rounds"],
                              round(time.monotonic() - t0, 2), sol, cert)

    for rounds in range(1, max_rounds + 1):
        A, b = _subsystem(n, cols, rows_of, take)
        d = decide_system(n, A, b)
        state.update(rank=d.rank, rounds=rounds)
        if log:
            log(f"round {rounds}: {len(take)} of {R} hyperplane rows, rank {d.rank}, {d.status}, "
                f"{time.monotonic() - t0:.0f} s")
        if d.status == "unknown":
            return verdict("unknown")
        if d.status == "infeasible":
            r = len(take)
            y_keys = {int(keys[take[i]]): v for i, v in d.certificate.items() if i < r and v}
            y_lin = [d.certificate.get(r + q, 0) for q in range(n - 1)]
            if not _check_certificate_columns(n, cols, y_keys, y_lin):
                return verdict("unknown")
            cert = {str(k): v for k, v in y_keys.items()}
            cert.update({f"lin {q}": v for q, v in enumerate(y_lin) if v})
            return verdict("infeasible", cert=cert)
        sol = {j: v for j, v in d.solution.items() if v != 0}
        bad = _violated_rows(rows_of, cols, R, sol)
        if len(bad) == 0:
            return verdict("found", sol=sol) if check_solution_columns(n, cols, sol) else verdict("unknown")
        if len(bad) > step:
            bad = np.sort(rng.choice(bad, step, replace=False))
        take = np.union1d(take, bad)
        if time_limit is not None and time.monotonic() - t0 > time_limit:
            return verdict("partial")
    return verdict("unknown")
