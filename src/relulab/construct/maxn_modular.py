"""Exact linear algebra over Q for integer systems, by arithmetic modulo primes below 2^31
(numpy int64: products stay below 2^62), the Chinese remainder theorem and rational
reconstruction; every result is checked in exact integers before it is returned, so an
unlucky prime can only cost a "no answer", never a wrong one.

Used by :mod:`relulab.construct.maxn_decide` (is b in the column span of A?) and
:mod:`relulab.construct.maxn_colgen` (the exact re-solve of an LP support).

Example:
    >>> import numpy as np
    >>> A = np.array([[2, 1], [1, 3], [3, 4]]); b = np.array([3, 5, 8])
    >>> solve_exact(A, b)
    [Fraction(4, 5), Fraction(7, 5)]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

__all__ = ["solve_exact", "basis_mod", "exact_matvec"]

_PRIMES = (2147483629, 2147483587, 2147483579, 2147483563, 2147483549, 2147483543,
           2147483497, 2147483489, 2147483477, 2147483423, 2147483399, 2147483353)


_FLINT_MIN_ENTRIES = 200_000  # matrices at least this large go to FLINT when it is installed


def _flint():
    """python-flint's module, or None when it is not installed (numpy elimination then)."""
    try:
        import flint
    except ImportError:  # optional: pip install python-flint (the [fast] extra)
        return None
    return flint


_ROW_BLOCK_ENTRIES = 20_000_000  # entries per block of the exact products (bounds the Python objects)


def _small_list(M: np.ndarray) -> list[int]:
    """M's entries as a flat list of Python ints, unreduced: the many small ones (0 and
    small counts) are CPython's cached int objects, so the list costs about 8 bytes per
    entry instead of about 40 for reduced residues (the difference between a 20,000 x
    15,000 matrix fitting in memory or not)."""
    return np.asarray(M, dtype=np.int64).ravel().tolist()


def _nmod_mat(M: np.ndarray, p: int):
    R, m = M.shape
    M = np.asarray(M, dtype=np.int64)
    # FLINT reduces negative and large entries itself; entries of magnitude >= p first
    entries = _small_list(M) if not M.size or int(np.abs(M).max()) < p else _small_list(np.mod(M, p))
    return _flint().nmod_mat(R, m, entries, p)


def exact_matvec(M: np.ndarray, x: Sequence[int]) -> list[int]:
    """``M x`` in exact integers for an int64 matrix M and a vector of (arbitrarily large)
    Python ints, in row blocks so that no object array of M's size is formed (FLINT's
    fmpz_mat products when python-flint is installed, numpy object dots otherwise).

    Example:
        >>> exact_matvec(np.array([[1, 2], [3, -4]]), [10**30, 1])
        [1000000000000000000000000000002, 2999999999999999999999999999996]
    """
    M = np.asarray(M, dtype=np.int64)
    R, k = M.shape
    if len(x) != k:
        raise ValueError(f"exact_matvec: the matrix has {k} columns, the vector {len(x)} entries")
    if R == 0:
        return []
    if k == 0:
        return [0] * R
    out: list[int] = []
    step = max(1, _ROW_BLOCK_ENTRIES // k)
    fl = _flint()
    if fl is not None:
        X = fl.fmpz_mat(k, 1, [int(v) for v in x])
        for a in range(0, R, step):
            blk = M[a:a + step]
            out += [int(v) for v in (fl.fmpz_mat(blk.shape[0], k, _small_list(blk)) * X).entries()]
        return out
    xo = np.array([int(v) for v in x], dtype=object)
    for a in range(0, R, step):
        out += [int(v) for v in M[a:a + step].astype(object).dot(xo)]
    return out


def _unsatisfied_rows(A: np.ndarray, x: Sequence[Fraction], rhs: np.ndarray) -> list[int]:
    """The rows i with ``(A x)_i != rhs_i``, in exact integers (x over a common
    denominator, the product by :func:`exact_matvec`)."""
    den = math.lcm(*(v.denominator for v in x)) if len(x) else 1
    lhs = exact_matvec(A, [int(v * den) for v in x])
    return [i for i, (v, w) in enumerate(zip(lhs, np.asarray(rhs).tolist(), strict=True)) if v != int(w) * den]


def basis_mod(M: np.ndarray, p: int, backend: str = "auto") -> list[int]:
    """Pivot columns of M modulo p (row reduction, in order): a column basis of M over Q
    when p is not unlucky.  ``backend``: ``"numpy"`` (int64 row operations), ``"flint"``
    (FLINT's reduced row echelon form through python-flint, about 15x faster on a
    3000 x 9000 matrix of rank 2000) or ``"auto"`` (FLINT for large matrices when it is
    installed); both give the same pivots.

    Example:
        >>> basis_mod(np.array([[1, 2, 3], [2, 4, 7]]), 2147483629)
        [0, 2]
    """
    if backend not in ("auto", "numpy", "flint"):
        raise ValueError(f"basis_mod: backend must be 'auto', 'numpy' or 'flint', got {backend!r}")
    use_flint = backend == "flint" or (backend == "auto" and M.size >= _FLINT_MIN_ENTRIES
                                       and _flint() is not None)
    if use_flint and min(M.shape) > 0:
        E, r = _nmod_mat(M, p).rref()
        # the pivots increase strictly down the echelon form, so one walk along the rows
        # finds them in at most r + m entry reads (E.entries() would list all R * m
        # entries as Python objects: over 10 GB at 14,000 x 17,000)
        piv, j = [], 0
        for i in range(r):
            while int(E[i, j]) == 0:
                j += 1
            piv.append(j)
            j += 1
        return piv
    A = np.mod(M, p).astype(np.int64)
    piv: list[int] = []
    r = 0
    R, m = A.shape
    for c in range(m):
        if r == R:
            break
        nz = np.nonzero(A[r:, c])[0]
        if nz.size == 0:
            continue
        i = r + int(nz[0])
        if i != r:
            A[[r, i]] = A[[i, r]]
        inv = pow(int(A[r, c]), p - 2, p)
        A[r] = (A[r] * inv) % p
        below = r + 1 + np.nonzero(A[r + 1:, c])[0]
        if below.size:
            A[below] = (A[below] - (A[below, c:c + 1] * A[r]) % p) % p
        piv.append(c)
        r += 1
    return piv


def _solve_mod(S: np.ndarray, rhs: np.ndarray, p: int) -> np.ndarray | None:
    """x with S x = rhs modulo p (S square), or None when singular mod p (FLINT for
    large S when it is installed)."""
    k = S.shape[0]
    if S.size >= _FLINT_MIN_ENTRIES and _flint() is not None:
        Sm = _nmod_mat(S, p)
        if Sm.rank() < k:
            return None
        x = Sm.solve(_nmod_mat(np.asarray(rhs).reshape(k, 1), p))
        return np.array([int(v) for v in x.entries()], dtype=np.int64)
    A = np.concatenate([np.mod(S, p), np.mod(rhs, p)[:, None]], axis=1).astype(np.int64)
    for c in range(k):
        nz = np.nonzero(A[c:, c])[0]
        if nz.size == 0:
            return None
        i = c + int(nz[0])
        if i != c:
            A[[c, i]] = A[[i, c]]
        A[c] = (A[c] * pow(int(A[c, c]), p - 2, p)) % p
        other = np.nonzero(A[:, c])[0]
        other = other[other != c]
        if other.size:
            A[other] = (A[other] - (A[other, c:c + 1] * A[c]) % p) % p
    return A[:, k]


def _rational(a: int, m: int) -> Fraction | None:
    """Rational reconstruction of a modulo m (|num|, den <= sqrt(m / 2))."""
    bound = math.isqrt(m // 2)
    r0, r1, s0, s1 = m, a % m, 0, 1
    while r1 > bound:
        q = r0 // r1
        r0, r1, s0, s1 = r1, r0 - q * r1, s1, s0 - q * s1
    if s1 == 0 or abs(s1) > bound or math.gcd(r1, abs(s1)) != 1:
        return None
    return Fraction(r1, s1)


def _solve_rational(S: np.ndarray, rhs: np.ndarray) -> list[Fraction] | None:
    """The exact solution of S x = rhs (S square, non-singular over Q) by CRT over
    primes until the reconstruction is stable and satisfies the system exactly; for large
    S with python-flint installed, FLINT's exact rational solve instead (no bound on the
    size of the solution's numerators and denominators), checked the same way."""
    if S.size >= _FLINT_MIN_ENTRIES and _flint() is not None:
        fl = _flint()
        k = S.shape[0]
        try:
            X = fl.fmpz_mat(k, k, _small_list(S)).solve(fl.fmpz_mat(k, 1, _small_list(np.asarray(rhs))))
        except ZeroDivisionError:  # singular
            return None
        cand = [Fraction(int(e.p), int(e.q)) for e in X.entries()]
        return None if _unsatisfied_rows(S, cand, rhs) else cand
    mod, res = 1, None
    prev: list[Fraction] | None = None
    for p in _PRIMES:
        x = _solve_mod(S, rhs, p)
        if x is None:
            continue
        xs = [int(v) for v in x]
        if res is None:
            res, mod = xs, p
        else:
            res = [r + mod * (((v - r) * pow(mod, -1, p)) % p) for r, v in zip(res, xs, strict=True)]
            mod *= p
        cand = [_rational(r, mod) for r in res]
        if any(c is None for c in cand):
            continue
        if cand == prev and not _unsatisfied_rows(S, cand, rhs):
            return cand
        prev = cand
    return None


def solve_exact(A: np.ndarray, b: np.ndarray) -> list[Fraction] | None:
    """A rational x with ``A x = b`` exactly (integer A, b), or None when there is none
    (or a prime was unlucky): basis columns and rows modulo a prime, the basis solution
    by CRT and rational reconstruction (other columns 0), then ``A x = b`` checked on every
    row in exact integers.

    Example:
        >>> solve_exact(np.array([[1, 1], [1, 1]]), np.array([1, 2])) is None
        True
    """
    A = np.asarray(A, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    p = _PRIMES[0]
    pc = basis_mod(A, p)
    if not pc:
        return [Fraction(0)] * A.shape[1] if not b.any() else None
    r0 = basis_mod(A[:, pc].T, p)
    x = _solve_rational(A[np.ix_(r0, pc)], b[r0])
    if x is None:
        return None
    full = [Fraction(0)] * A.shape[1]
    for j, v in zip(pc, x, strict=True):
        full[j] = v
    return None if _unsatisfied_rows(A[:, pc], x, b) else full
