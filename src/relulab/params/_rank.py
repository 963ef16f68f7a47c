"""Matrix rank two ways: numerically with the singular-value gap reported, and exactly over Q.

The exact rank clears denominators row by row (row scaling keeps the rank) and runs
Gaussian elimination on Python integers, dividing every new row by the gcd of its
entries so the numbers stay small.  No floating point is involved.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..errors import RelulabError
from ..limits import Deadline, check_bytes, memory_budget
from ..results import Result
from ..tolerance import TINY

__all__ = ["RankInfo", "numerical_rank", "exact_rank", "rank_from_singular_values", "DENSE_SVD_ENTRIES"]


# up to this many entries the rank always comes from a dense SVD; above it, from a dense SVD
# when the memory budget allows one, else from the Gram matrix (see numerical_rank)
DENSE_SVD_ENTRIES = 20_000_000


@dataclass(frozen=True)
class RankInfo(Result):
    """A numerical rank and the evidence for it.

    ``rank`` counts singular values above ``tol`` (numpy's default rule,
    ``max(shape) * eps * sigma_max``). ``gap`` is ``sigma_kept / sigma_dropped``, the
    ratio of the smallest kept to the largest dropped singular value (``inf`` when nothing
    was dropped or the dropped one is 0): a large gap (say > 1e6) means the rank is
    unambiguous.  ``lower_bound`` is True when ``rank`` is only a lower bound: the Gram
    route (``method="gram"``) cannot resolve singular values below
    ``sigma_max * sqrt(max(shape) * eps)``, so genuine ones there are not counted.

    Example:
        >>> info = numerical_rank(np.array([[1.0, 2.0], [2.0, 4.0], [0.0, 1.0]]))
        >>> info.rank, info.shape, info.gap > 1e6       # a clear gap: the rank is unambiguous
        (2, (3, 2), True)
    """

    rank: int
    shape: tuple[int, int]
    tol: float
    sigma_max: float
    sigma_kept: float | None
    sigma_dropped: float | None
    gap: float
    method: str
    lower_bound: bool = False


def _check_tol(tol, who: str = "numerical_rank") -> None:
    if tol is None:
        return
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.integer, np.floating)) \
            or not (math.isfinite(tol) and tol >= 0):
        raise RelulabError(f"{who}: tol must be a finite number >= 0 (a singular-value cutoff), got {tol!r}")


def rank_from_singular_values(
    s: np.ndarray, shape: tuple[int, int], method: str, tol: float | None = None
) -> RankInfo:
    """Decide the rank from singular values ``s`` (any order) of a matrix of ``shape``."""
    _check_tol(tol, "rank_from_singular_values")
    s = np.sort(np.abs(np.asarray(s, dtype=float)))[::-1]
    smax = float(s[0]) if s.size else 0.0
    if tol is None:
        tol = max(shape) * np.finfo(float).eps * smax
    r = int(np.sum(s > tol))
    kept = float(s[r - 1]) if r > 0 else None
    dropped = float(s[r]) if r < s.size else None
    if dropped is None or dropped == 0.0:
        gap = math.inf
    else:
        gap = (kept or 0.0) / dropped
    return RankInfo(r, (int(shape[0]), int(shape[1])), float(tol), smax, kept, dropped, gap, method)


def _column_powers_of_two(A: np.ndarray) -> np.ndarray:
    """Per column, the power of two nearest below its largest entry (1 for a zero column).

    Example:
        >>> _column_powers_of_two(np.array([[3.0, 0.0], [-1e-9, 0.0]])).tolist()
        [2.0, 1.0]
    """
    top = np.max(np.abs(A), axis=0, initial=0.0)
    ok = (top > 0) & np.isfinite(top)
    out = np.ones(A.shape[1])
    out[ok] = 2.0 ** np.floor(np.log2(top[ok]))
    return out


def numerical_rank(M, tol: float | None = None) -> RankInfo:
    """Numerical rank of a dense or scipy.sparse matrix.

    A dense SVD (``method="svd"``) whenever the matrix has at most ``DENSE_SVD_ENTRIES``
    entries or its dense SVD fits the memory budget (:mod:`relulab.limits`); without a
    ``tol`` its columns are first scaled by powers of two to a largest entry in [1, 2),
    so the reported singular values are those of the scaled matrix (the rank does not
    depend on column scaling, and a rescaling symmetry then leaves it unchanged).  Otherwise the
    singular values come from the eigenvalues of the Gram matrix of the smaller side of the
    column-normalised matrix (``method="gram"``).  The Gram matrix squares the condition
    number, so it resolves singular values only down to
    ``sigma_max * sqrt(max(shape) * eps)``: that is the cutoff there (or ``tol`` if
    larger), and when something is cut ``lower_bound`` is True (smaller genuine singular
    values cannot be told from rounding).  A matrix whose Gram matrix does not fit the
    budget either raises :class:`~relulab.limits.ResourceLimitError`.

    Example:
        >>> numerical_rank(np.array([[1.0, 2.0], [2.0, 4.0]])).rank
        1
    """
    import scipy.sparse as sp

    _check_tol(tol)
    shape = M.shape
    if 0 in shape:
        return RankInfo(0, (int(shape[0]), int(shape[1])), 0.0, 0.0, None, None, math.inf, "empty")
    m, n = int(shape[0]), int(shape[1])
    k = min(m, n)
    sparse = sp.issparse(M)
    # the dense copy (for sparse input), the copy LAPACK overwrites, and its workspace
    dense_bytes = 8.0 * m * n * (2 if sparse else 1) + 8.0 * (m * n + 4 * k * k + 10 * max(m, n))
    if m * n <= DENSE_SVD_ENTRIES or dense_bytes <= memory_budget():
        A = M.toarray() if sparse else np.asarray(M, dtype=float)
        if tol is None:
            # columns to unit norm (each by a power of two: exact): the rank does not
            # change, and a parameter symmetry that rescales columns by 1e8 no longer moves
            # the cutoff through genuine singular values (rank 17 for 19, "gap 3e6")
            A = A / _column_powers_of_two(A)
        # scaled by a power of two (exact) so that the SVD cannot overflow: finite entries
        # near 1e308 gave a largest singular value of inf and rank 0 (it is 3)
        top = float(np.max(np.abs(A), initial=0.0))
        sc = 2.0 ** math.floor(math.log2(top)) if 0 < top < math.inf else 1.0
        s = np.linalg.svd(A / sc, compute_uv=False)
        info = rank_from_singular_values(s, shape, "svd", None if tol is None else tol / sc)
        if sc == 1.0:
            return info
        with np.errstate(over="ignore"):
            return dataclasses.replace(
                info, tol=info.tol * sc, sigma_max=info.sigma_max * sc,
                sigma_kept=None if info.sigma_kept is None else info.sigma_kept * sc,
                sigma_dropped=None if info.sigma_dropped is None else info.sigma_dropped * sc)
    check_bytes(8.0 * (3 * k * k + (0 if sparse else m * n)),
                f"the {k} x {k} Gram matrix for the rank of a {m} x {n} matrix (too big for a dense SVD)")
    A = sp.csc_matrix(M) if sparse else np.asarray(M, dtype=float)
    if sparse:
        norms = np.sqrt(np.asarray(A.multiply(A).sum(axis=0)).ravel())
    else:
        norms = np.linalg.norm(A, axis=0)
    norms[norms == 0] = 1.0
    if sparse:
        A = A @ sp.diags(1.0 / norms)
        G = (A.T @ A) if n <= m else (A @ A.T)
        G = G.toarray()
    else:
        A = A / norms
        G = A.T @ A if n <= m else A @ A.T
    ev = np.linalg.eigvalsh(G)
    s = np.sqrt(np.clip(ev, 0.0, None))
    # The Gram matrix squares the condition number: the float floor is sqrt(eps), not eps.
    floor = max(float(s.max()), TINY) * np.sqrt(max(shape) * np.finfo(float).eps)
    info = rank_from_singular_values(s, shape, "gram", floor if tol is None else max(float(tol), floor))
    return dataclasses.replace(info, lower_bound=info.rank < k)


def _row_to_ints(row) -> list[int]:
    fr = [v if isinstance(v, Fraction) else Fraction(v) for v in row]
    den = 1
    for v in fr:
        den = den * v.denominator // math.gcd(den, v.denominator)
    return [int(v * den) for v in fr]


class RankTimeLimit(RelulabError):
    """:func:`exact_rank` ran out of its time limit (``done`` of ``total`` columns)."""

    def __init__(self, done: int, total: int) -> None:
        super().__init__(f"the exact rank ran out of time after {done} of {total} columns")
        self.done, self.total = done, total


def exact_rank(M, progress=None, time_limit: float | None = None) -> int:
    """The exact rank over the rationals of a matrix of Fractions, ints or floats.

    Floats count as the exact binary rationals they store. ``progress(done, total)``, when
    given, is called after each column of the elimination (for a progress bar).
    ``time_limit`` (seconds): past it, :class:`RankTimeLimit` is raised between columns
    (an elimination on big integers can take hours; there is no partial rank to give).

    Example:
        >>> from fractions import Fraction as F
        >>> exact_rank([[F(1, 3), F(2, 3)], [F(1), F(2)]])
        1
    """
    deadline = Deadline(time_limit)
    A = np.asarray(M, dtype=object)
    if A.ndim != 2:
        raise ValueError("exact_rank needs a 2-D matrix")
    rows = []
    for k, r in enumerate(A):
        if k % 64 == 0 and deadline.expired():   # big rows take long to bring to integers
            raise RankTimeLimit(0, A.shape[1])
        r = _row_to_ints(r)
        if any(r):
            rows.append(r)
    if not rows:
        return 0
    n_cols = A.shape[1]
    rank = 0
    for c in range(n_cols):
        if progress is not None:
            progress(c, n_cols)
        if deadline.expired():
            raise RankTimeLimit(c, n_cols)
        piv = next((i for i in range(rank, len(rows)) if rows[i][c] != 0), None)
        if piv is None:
            continue
        rows[rank], rows[piv] = rows[piv], rows[rank]
        p = rows[rank]
        pc = p[c]
        for i in range(rank + 1, len(rows)):
            if deadline.expired():
                raise RankTimeLimit(c, n_cols)
            r = rows[i]
            rc = r[c]
            if rc == 0:
                continue
            new = [pc * a - rc * b for a, b in zip(r, p, strict=True)]
            g = math.gcd(*new)
            rows[i] = [v // g for v in new] if g > 1 else new
        rank += 1
        if rank == len(rows):
            break
    return rank
