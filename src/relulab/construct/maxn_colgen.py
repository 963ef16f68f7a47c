"""Column generation for the two-hidden-layer max_n system over candidate families too
large to list as a matrix.

The system is the one of :func:`relulab.construct.search_max_pairs` (one unknown per
S_n-orbit of second-layer neurons ``relu(g)``, ``g`` a :class:`PairTerm`; one equation per
hyperplane of the gap space plus the n - 1 linear rows).  Its unknowns are free, so the
question "does the family contain max_n" is ``b in span(A)``.  Here the restricted
problem is ``min ||A_W u - b||_1`` over a working set W of orbits (HiGHS through
:mod:`relulab.lp`); its dual ``y`` (``A_W^T y = 0``, ``|y| <= 1``, and 0 on hyperplanes
no working column bends along: their residual is 0, so 0 is an optimal dual there)
prices every other candidate: a column ``a`` with ``y . a != 0`` has a negative reduced
cost (for ``+u`` or ``-u``) in the full problem.  The best-scoring candidates (``|y . a|``,
column scaled to max |entry| 1) join W and the loop repeats until the residual
is zero (then the support is re-solved over Q and every equation checked exactly:
status ``found``), no candidate prices out (``stalled``: a float verdict about the
priced candidates, not a proof) or the time budget ends (``partial``).

**Columns fast** (:func:`orbit_column`).  On the sorted cone the coefficient of the gap
``t_m`` in ``g o sigma`` is ``f(S_m)``, ``S_m`` the coordinates placed at the m largest
inputs, and ``f(S) = sum_{i in S, j not in S} C_ij + sum_{i in S} v_i`` (cut function of
the term's integer form ``(2C, 2v)``): so for n >= 7 a term is one table of f over the
2^n subsets, read along all n! chains of subsets, instead of permuting the term n!
times.  The chains are not listed (:func:`chain_histogram`): a dynamic programme over
the subset lattice carries, level by level, the distinct pairs (top-m set, values of f
so far) with their number of chains, so the cost follows the number of distinct prefixes
(about 2.7 million states at the widest level for a 12-coordinate term, 12! = 479
million chains) and the column of a 10-input term takes about 0.03 s instead of 1 s
for the 3.6 million explicit chains (:func:`_chain_matrix`, kept as the tests'
reference).  For n < 7 the placement method of :mod:`relulab.construct.maxn` is used.
All give the column in the same convention (orbit sum =
``(sum coef relu(K t) + lin . t) / divisor``); the tests compare them exactly.

Candidates are generated lazily (:func:`random_item_terms`: s items a side on k
coordinates, at random, deduplicated by their column), so no multi-million-column matrix
is ever formed.

Example:
    >>> from relulab.construct import item_family
    >>> res = colgen_max_pairs(5, item_family(5, (1, 2)), [], time_limit=60)
    >>> res.status, res.solution.status
    ('found', 'found')
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..limits import Deadline
from ..results import Result
from .maxmin import ConstructionError
from .maxn import (
    _PERM_STABILIZER_K,
    MaxPairsSolution,
    PairTerm,
    _active_form,
    _column,
    _items,
    _perms,
)
from .maxn_cert import _bend_rows, min_weight_support
from .maxn_items import _invariant
from .maxn_modular import solve_exact

__all__ = ["orbit_column", "chain_histogram", "random_item_terms", "ColGenResult", "colgen_max_pairs"]

_RESIDUAL_ZERO = 1e-7  # L1 residual below which the float LP counts as feasible  # tol: LP zero
_SUPPORT_ZERO = 1e-9  # relative size below which an LP value is read as zero  # tol: LP zero
_MAX_CHAIN_K = 12  # the key encoding packs n - 1 gap entries into 62 bits (5 bits each at n = 12)
_MAX_EXPLICIT_CHAINS = 10  # _chain_matrix lists n! chains: 10! = 3.6e6 (130 MB of masks)
_MAX_DP_STATES = 30_000_000  # (set, prefix) states of one level of chain_histogram (memory bound)
_MAX_MISSES = 100_000  # random draws without a valid term before random_item_terms gives up
_PRICE_MARGIN = 1e-7  # a dual score must exceed this to count as pricing out  # tol: LP zero


# ------------------------------------------------------------------ columns
@functools.lru_cache(maxsize=4)
def _chains(n: int) -> np.ndarray:
    """Bit masks of the top-m sets along every ordering of n coordinates: (n!, n - 1)
    (the explicit reference for :func:`chain_histogram`; n <= 10)."""
    if n > _MAX_EXPLICIT_CHAINS:
        raise ConstructionError(f"_chains: {n}! explicit chains are too many; use chain_histogram")
    perms = np.array(list(itertools.permutations(range(n))), dtype=np.int64)
    bits = np.left_shift(np.int64(1), perms)
    return np.cumsum(bits, axis=1)[:, :-1].astype(np.int32)


@functools.lru_cache(maxsize=8)
def _subset_bits(n: int) -> np.ndarray:
    idx = np.arange(2**n, dtype=np.int64)
    return ((idx[:, None] >> np.arange(n)) & 1).astype(np.int64)


def _cut_table(t: PairTerm, n: int) -> np.ndarray:
    """f(S) for every subset S of the n coordinates, from the doubled form (2C, 2v)."""
    C, v = t.canonical()
    Cn = np.zeros((n, n), dtype=np.int64)
    Cn[:t.k, :t.k] = C
    vn = np.zeros(n, dtype=np.int64)
    vn[:t.k] = v
    B = _subset_bits(n)
    return B @ (Cn.sum(axis=1) + vn) - ((B @ Cn) * B).sum(axis=1)


def chain_histogram(table: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct vectors ``(f(S_1), ..., f(S_(n-1)))`` of a set function f (``table``,
    indexed by bit mask over n coordinates) along all n! maximal chains ``S_1 < S_2 < ...``
    of subsets, with the number of chains giving each: (vectors (L, n - 1), counts (L,)).

    A dynamic programme over the subset lattice: level m holds the distinct pairs
    (S_m, prefix id) with their chain counts, the prefixes ``(f(S_1), ..., f(S_m))``
    interned level by level, so nothing of size n! is formed.  The counts sum to n!.

    Example:
        >>> f = np.array([0, 1, 1, 2])           # |S| on 2 coordinates
        >>> B, c = chain_histogram(f, 2)
        >>> B.tolist(), c.tolist()
        ([[1]], [2])
    """
    if not isinstance(n, (int, np.integer)) or n < 2:
        raise ConstructionError(f"chain_histogram: n must be an integer >= 2, got {n!r}")
    table = np.asarray(table, dtype=np.int64)
    if table.shape != (2**n,):
        raise ConstructionError(f"chain_histogram: the table must have 2**{n} entries, got {table.shape}")
    lo = int(table.min())
    V = int(table.max()) - lo + 1
    full = (1 << n) - 1
    bits = np.left_shift(np.int64(1), np.arange(n, dtype=np.int64))
    S = np.zeros(1, dtype=np.int64)
    pid = np.zeros(1, dtype=np.int64)
    cnt = np.ones(1, dtype=np.int64)
    parents: list[np.ndarray] = []
    values: list[np.ndarray] = []
    for _ in range(1, n):
        grown = S[:, None] | bits[None, :]
        r, c = np.nonzero(grown != S[:, None])
        if len(r) > _MAX_DP_STATES:
            raise ConstructionError(f"chain_histogram: {len(r)} chain states at one level, more than "
                                    f"{_MAX_DP_STATES} (memory bound)")
        nS = grown[r, c]
        # intern the extended prefixes: (parent prefix id, new value)
        ext, ext_id = np.unique(pid[r] * V + (table[nS] - lo), return_inverse=True)
        parents.append(ext // V)
        values.append(ext % V + lo)
        state, state_id = np.unique(ext_id.astype(np.int64) * (full + 1) + nS, return_inverse=True)
        cnt = np.bincount(state_id, weights=cnt[r]).astype(np.int64)
        S, pid = state & full, state >> n
    counts = np.bincount(pid, weights=cnt, minlength=len(values[-1])).astype(np.int64)
    B = np.zeros((len(values[-1]), n - 1), dtype=np.int64)
    idx = np.arange(len(values[-1]))
    for m in range(n - 2, -1, -1):  # walk every final prefix back to the root
        B[:, m] = values[m][idx]
        idx = parents[m][idx]
    return B, counts


def _key_bits(n: int) -> int:
    return 62 // (n - 1)


def encode(K: np.ndarray, n: int) -> np.ndarray:
    """One int64 per hyperplane row (mixed radix); entries must fit the radix."""
    bits = _key_bits(n)
    half = 1 << (bits - 1)
    if K.size and int(np.abs(K).max()) >= half:
        raise ConstructionError(f"orbit_column: a hyperplane entry {int(np.abs(K).max())} is too "
                                f"large for the key encoding (< {half} for n = {n})")
    out = np.zeros(len(K), dtype=np.int64)
    for m in range(K.shape[1]):
        out = (out << bits) + (K[:, m] + half)
    return out


def decode(keys: np.ndarray, n: int) -> np.ndarray:
    bits = _key_bits(n)
    half = 1 << (bits - 1)
    K = np.zeros((len(keys), n - 1), dtype=np.int64)
    k = np.asarray(keys, dtype=np.int64).copy()
    for m in range(n - 2, -1, -1):
        K[:, m] = (k & ((1 << bits) - 1)) - half
        k >>= bits
    return K


def _chain_matrix(t: PairTerm, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The cut table along all n! explicit chains, each with count 1 (reference for
    :func:`chain_histogram`, n <= 10)."""
    B = _cut_table(t, n)[_chains(n)]
    return B, np.ones(len(B), dtype=np.int64)


def _full_column(t: PairTerm, n: int, divisor: bool = True, explicit: bool = False
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """orbit_column from the cut table along all n! chains (:func:`chain_histogram`, or
    the explicit chains with ``explicit=True``); ``divisor=False``: 0 in place of the
    divisor (the pricing does not need it)."""
    B, w = _chain_matrix(t, n) if explicit else chain_histogram(_cut_table(t, n), n)
    K, mult, lin = _bend_rows(B, w)
    keys, inv = np.unique(encode(K, n), return_inverse=True)
    coef = np.bincount(inv.ravel(), weights=mult, minlength=len(keys)).astype(np.int64)
    # the chains count every neuron |Stab_n| times and the form is doubled
    return keys, coef, lin, 2 * _stabilizer_size(t) * math.factorial(n - t.k) if divisor else 0


def _stabilizer_size(t: PairTerm) -> int:
    """PairTerm.stabilizer_size, vectorised over the permutations in blocks (unused
    coordinates and more than 8 used ones as in PairTerm)."""
    C, v, inert = _active_form(t)
    if len(v) > _PERM_STABILIZER_K:
        return t.stabilizer_size()
    perms = _perms(len(v))
    cand = perms[(v[perms] == v).all(axis=1)]
    tot = 0
    for a in range(0, len(cand), 20000):
        p = cand[a:a + 20000]
        tot += int((C[p[:, :, None], p[:, None, :]] == C).all(axis=(1, 2)).sum())
    return tot * math.factorial(inert)


def orbit_column(t: PairTerm, n: int, divisor: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The orbit sum of ``t`` on the sorted cone as (sorted int64 hyperplane keys,
    integer coefficients, integer linear part, divisor): orbit sum =
    ``(sum coef relu(K t) + lin . t) / divisor`` with K the decoded keys (primitive
    integer gap forms, first non-zero entry positive).

    Example:
        >>> t = PairTerm(3, (("x", 0), ("x", 0)), (("x", 1), ("x", 2)))   # relu(2 x0 - x1 - x2)
        >>> keys, coef, lin, div = orbit_column(t, 3)     # = 2 t1 + t2 + relu(t2 - t1)
        >>> decode(keys, 3).tolist(), [int(c) for c in coef], lin.tolist(), div
        ([[1, -1]], [2], [2, 4], 2)
    """
    if t.k > n:
        raise ConstructionError(f"orbit_column: the term has {t.k} coordinates, more than n = {n}")
    if n > _MAX_CHAIN_K:
        raise ConstructionError(f"orbit_column: n = {n} inputs; at most {_MAX_CHAIN_K} are supported "
                                f"(the hyperplane keys pack n - 1 gap entries into one int64)")
    if n >= 7:
        return _full_column(t, n, divisor)
    K, coef, lin, div = _column(t, n)
    keep = coef != 0
    keys = encode(K[keep], n)
    order = np.argsort(keys)
    return keys[order], coef[keep][order], lin, div


# ------------------------------------------------------------------ candidates
def random_item_terms(n: int, k: int, s: int, count: int, seed: int = 0,
                      disjoint: bool = False) -> Iterable[PairTerm]:
    """Lazily yield ``count`` random terms with ``s`` items a side (inputs ``x_i`` and
    pair maxima ``m_ij``, multisets, no item on both sides) using all ``k`` coordinates.
    Duplicates (same orbit) are possible; the column generation drops them by column.
    ``disjoint``: the items of each side use pairwise different coordinates (sums of
    maxima over disjoint pairs, the structured end of the family).

    Example:
        >>> [t.k for t in random_item_terms(6, 4, 2, 3)]
        [4, 4, 4]
    """
    if not 2 <= k <= n or s < 1 or count < 0:
        raise ConstructionError(f"random_item_terms: need 2 <= k <= n and s >= 1, got n={n}, k={k}, s={s}")
    if k > 4 * s:
        raise ConstructionError(f"random_item_terms: {2 * s} items cover at most {4 * s} coordinates, k = {k}")
    rng = np.random.default_rng(seed)
    items = _items(k)
    made = 0
    misses = 0  # draws since the last term kept: an impossible (k, s, disjoint) ends the stream
    while made < count and misses < _MAX_MISSES:
        misses += 1
        P = tuple(sorted(items[i] for i in rng.integers(0, len(items), s)))
        N = tuple(sorted(items[i] for i in rng.integers(0, len(items), s)))
        if set(P) & set(N) or len({c for it in P + N for c in it[1:]}) != k:
            continue
        if disjoint and any(len({c for it in side for c in it[1:]}) != sum(len(it) - 1 for it in side)
                            for side in (P, N)):
            continue
        made += 1
        misses = 0
        yield PairTerm(k, P, N)


# ------------------------------------------------------------------ the loop
@dataclass(frozen=True)
class ColGenResult(Result):
    """Outcome of :func:`colgen_max_pairs`: ``status`` ``found`` (exact solution:
    ``solution``), ``stalled`` (no priced candidate can lower the L1 residual: a float
    verdict about the candidates priced, not a proof), ``partial`` (time budget or
    candidates exhausted while the residual was still positive), ``failed`` (the LP said
    feasible but the exact re-solve on its support did not hold);  ``residual`` is the
    last L1 residual, ``priced`` the number of distinct candidate columns priced.

    Example:
        >>> from relulab.construct import item_family
        >>> r = colgen_max_pairs(4, item_family(4, (1,)), [], time_limit=30)
        >>> r.status, r.residual == 0.0
        ('found', True)
    """

    n: int
    status: str
    solution: MaxPairsSolution | None
    working_set: int
    priced: int
    rounds: int
    residual: float
    seconds: float
    history: tuple[tuple[int, int, float], ...]  # (round, working set, residual)


class _Pool:
    """Working-set columns and the hyperplane rows they touch."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.rows: dict[int, int] = {}
        self.terms: list[PairTerm] = []
        self.cols: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]] = []
        self.seen: set[bytes] = set()
        self.model = None  # the live LP of solve_warm

    def signature(self, col) -> bytes:
        keys, coef, lin, div = col
        g = math.gcd(*(int(c) for c in coef), *(int(v) for v in lin)) or 1
        return keys.tobytes() + (coef // g).tobytes() + (lin // g).tobytes()

    def fresh_column(self, t: PairTerm):
        """``t``'s orbit column, or None when it is empty or equal (up to scale) to one
        already seen; a returned column counts as seen."""
        col = orbit_column(t, self.n, divisor=False)
        sig = self.signature(col)
        if _empty(col) or sig in self.seen:
            return None
        self.seen.add(sig)
        return col

    def add(self, t: PairTerm, col) -> None:
        for k in col[0].tolist():
            self.rows.setdefault(k, len(self.rows))
        self.terms.append(t)
        self.cols.append(col)

    def matrix(self, target: np.ndarray):
        """The working system, every column scaled to max |entry| 1: (A, b, scales)."""
        from scipy import sparse

        R, n1, m = len(self.rows), self.n - 1, len(self.cols)
        I, J, V = [], [], []
        scales = np.ones(m)
        for j, (keys, coef, lin, _) in enumerate(self.cols):
            sc = 1.0 / max(1, int(np.abs(coef).max(initial=0)), int(np.abs(lin).max(initial=0)))
            scales[j] = sc
            I.extend(self.rows[k] for k in keys.tolist())
            J.extend([j] * len(keys))
            V.extend((coef * sc).tolist())
            nz = np.nonzero(lin)[0]
            I.extend((R + nz).tolist())
            J.extend([j] * len(nz))
            V.extend((lin[nz] * sc).tolist())
        A = sparse.csr_matrix((V, (I, J)), shape=(R + n1, m))
        return A, np.concatenate([np.zeros(R), target]), scales

    def solve(self, target: np.ndarray, time_limit: float | None):
        """min ||A u - b||_1 on the working set (HiGHS)."""
        from scipy import sparse

        from ..lp import solve

        A, b, _ = self.matrix(target)
        R1, m = A.shape
        eye = sparse.identity(R1, format="csr")
        M = sparse.hstack([A, eye, -eye]).tocsr()
        c = np.concatenate([np.zeros(m), np.ones(2 * R1)])
        lb = np.concatenate([np.full(m, -np.inf), np.zeros(2 * R1)])
        return solve(c, A_eq=M, b_eq=b, lb=lb, time_limit=time_limit)

    def _scaled(self, j: int) -> tuple[np.ndarray, np.ndarray, float]:
        keys, coef, lin, _ = self.cols[j]
        sc = 1.0 / max(1, int(np.abs(coef).max(initial=0)), int(np.abs(lin).max(initial=0)))
        return coef * sc, lin * sc, sc

    def solve_warm(self, target: np.ndarray, time_limit: float | None):
        """min ||A u - b||_1 on the working set, as one live HiGHS model that grows by
        the new rows (hyperplanes), their slack pairs and the new columns every round, so
        each re-solve starts from the last basis.  Returns (LPResult, duals on
        ``self.rows`` order, duals of the linear rows, values of the working columns)."""
        from scipy import sparse

        from ..lp import INF, LPModel

        n1 = self.n - 1
        if self.model is None:
            keys = list(self.rows)
            self.mrow = {k: i for i, k in enumerate(keys)}
            self.lin0 = len(keys)
            R1 = len(keys) + n1
            eye = sparse.identity(R1, format="csr")
            b = np.concatenate([np.zeros(len(keys)), target])
            self.model = LPModel(np.ones(2 * R1), A_eq=sparse.hstack([eye, -eye]).tocsr(), b_eq=b,
                                 lb=np.zeros(2 * R1))
            self.model.use_primal_simplex()  # new columns keep the basis primal feasible
            self.mcol: list[int] = []
        m = self.model
        new = range(len(self.mcol), len(self.cols))
        fresh = [k for j in new for k in self.cols[j][0].tolist() if k not in self.mrow]
        fresh = list(dict.fromkeys(fresh))
        if fresh:
            first = m.n_rows
            m.add_rows(sparse.csr_matrix((len(fresh), m.n)), np.zeros(len(fresh)), np.zeros(len(fresh)))
            for i, k in enumerate(fresh):
                self.mrow[k] = first + i
            r = np.arange(first, first + len(fresh))
            S = sparse.csc_matrix((np.concatenate([np.ones(len(r)), -np.ones(len(r))]),
                                   (np.concatenate([r, r]), np.arange(2 * len(r)))),
                                  shape=(m.n_rows, 2 * len(r)))
            m.add_cols(np.ones(2 * len(r)), np.zeros(2 * len(r)), np.full(2 * len(r), INF), S)
        if len(new):
            I, J, V = [], [], []
            for c, j in enumerate(new):
                coef, lin, _ = self._scaled(j)
                I.extend(self.mrow[k] for k in self.cols[j][0].tolist())
                J.extend([c] * len(coef))
                V.extend(coef.tolist())
                nz = np.nonzero(lin)[0]
                I.extend((self.lin0 + nz).tolist())
                J.extend([c] * len(nz))
                V.extend(lin[nz].tolist())
            first_col = m.n
            m.add_cols(np.zeros(len(new)), np.full(len(new), -INF), np.full(len(new), INF),
                       sparse.csc_matrix((V, (I, J)), shape=(m.n_rows, len(new))))
            self.mcol.extend(range(first_col, first_col + len(new)))
        m.set_time_limit(time_limit)
        res = m.solve()
        if res.status != "optimal" or res.duals is None or res.x is None:
            return res, None, None, None
        d = res.duals
        y = np.zeros(len(self.rows))
        for k, i in self.rows.items():
            y[i] = d[self.mrow[k]]
        return res, y, d[self.lin0:self.lin0 + n1], res.x[self.mcol]

    def sparse_support(self, target: np.ndarray, time_limit: float | None) -> list[int] | None:
        """A vertex of the working system minimising ``sum orbit size * |output weight|``
        (the neuron count's L1 surrogate), as its support; None when HiGHS gives none."""
        A, b, scales = self.matrix(target)
        w = np.array([_orbit_size(t, self.n) for t in self.terms], dtype=np.float64)
        divs = np.array([c[3] if c[3] else orbit_column(t, self.n)[3]
                         for t, c in zip(self.terms, self.cols, strict=True)], dtype=np.float64)
        status, support = min_weight_support(w * scales * divs, A, b, time_limit)
        return support if status == "optimal" else None


def _orbit_size(t: PairTerm, n: int) -> int:
    return math.factorial(n) // math.factorial(n - t.k) // _stabilizer_size(t)


def _empty(col) -> bool:
    return len(col[0]) == 0 and not col[2].any()


def _quick_price(t: PairTerm, n: int, keys: np.ndarray, yk: np.ndarray, ylin: np.ndarray) -> float:
    """_price of a term on all n coordinates without assembling its column: every
    distinct chain gap form (:func:`chain_histogram`) is normalised and looked up among
    the working rows (sorted ``keys`` with duals ``yk``) directly."""
    K, mult, lin = _bend_rows(*chain_histogram(_cut_table(t, n), n))
    e = encode(K, n)
    if len(keys) == 0:
        a = 0.0
    else:
        pos = np.minimum(np.searchsorted(keys, e), len(keys) - 1)
        hit = keys[pos] == e
        a = float(np.dot(yk[pos[hit]], mult[hit]))
    a += float(np.dot(ylin, lin))
    # scale as _price: the largest |coefficient| of the assembled column is not known
    # here; an upper bound (the sum of all chain weights) keeps the test conservative
    # only up to that scale, so compare the unscaled value with the margin
    return abs(a)


def _price(col, rows: dict[int, int], y: np.ndarray, ylin: np.ndarray) -> float:
    """|y . a| for the column scaled to max |entry| 1; rows the working set does not
    touch yet have dual 0 (their residual is 0, any dual in [-1, 1] is optimal)."""
    keys, coef, lin, _ = col
    idx = np.array([rows.get(k, -1) for k in keys.tolist()], dtype=np.int64)
    old = idx >= 0
    a = float(np.dot(y[idx[old]], coef[old])) + float(np.dot(ylin, lin))
    return abs(a) / max(1.0, float(np.abs(coef).max(initial=0)), float(np.abs(lin).max(initial=0)))


def _exact(pool: _Pool, support: list[int], n: int) -> MaxPairsSolution | None:
    """Re-solve the support over Q (modular elimination + rational reconstruction,
    :func:`relulab.construct.maxn_modular.solve_exact`) and check every equation it
    touches in exact integers; the output weight of term j is ``x_j * divisor_j``."""
    sub = [pool.cols[j] for j in support]
    rows: dict[int, int] = {}
    for keys, *_ in sub:
        for k in keys.tolist():
            rows.setdefault(k, len(rows))
    R, k = len(rows), len(sub)
    A = np.zeros((R + n - 1, k), dtype=np.int64)
    for j, (keys, coef, lin, _) in enumerate(sub):
        A[[rows[int(key)] for key in keys.tolist()], j] = coef
        A[R:, j] = n * lin  # linear rows times n: integer right-hand side n - m - 1
    b = np.zeros(R + n - 1, dtype=np.int64)
    b[R:] = [n - m - 1 for m in range(n - 1)]
    x = solve_exact(A, b)
    if x is None:
        return None
    terms = []
    for j in range(k):
        if x[j] != 0:
            t = pool.terms[support[j]]
            div = sub[j][3] or orbit_column(t, n)[3]
            terms.append((t, x[j] * div))
    return MaxPairsSolution(n, "found", tuple(terms), len(pool.terms), R, R + n - 1)


def colgen_max_pairs(n: int, initial: Sequence[PairTerm], candidates: Iterable[PairTerm],
                     time_limit: float | None = None, batch: int = 200, chunk: int = 2000,
                     lp_time_limit: float | None = None, reserve_size: int = 3000,
                     minimise: bool = True, log=None) -> ColGenResult:
    """Column generation (module docstring) for max_n with two hidden layers: start
    from the orbits ``initial``, price ``candidates`` (any iterable, consumed lazily in
    chunks of ``chunk``) by the restricted problem's duals, add the ``batch`` best that
    price out, repeat.  ``time_limit`` (seconds) bounds the whole loop; the result is
    ``partial`` when it ends first.

    Example:
        >>> from relulab.construct import item_family
        >>> r = colgen_max_pairs(5, item_family(5, (1,)), item_family(5, (2,)), time_limit=60)
        >>> r.status, r.solution.n_equations_checked > 0
        ('found', True)
    """
    if not isinstance(n, (int, np.integer)) or n < 3:
        raise ConstructionError(f"colgen_max_pairs: n must be an integer >= 3, got {n!r}")
    t0 = time.monotonic()
    # every LP gets at least a second, even when less of the whole limit is left
    deadline = Deadline(time_limit, floor=1.0)

    pool = _Pool(n)
    for t in initial:
        if t.k > n:
            continue
        col = pool.fresh_column(t)
        if col is not None:
            pool.add(t, col)
    target = np.array([1 - (m + 1) / n for m in range(n - 1)])
    it = iter(candidates)
    history: list[tuple[int, int, float]] = []
    priced = 0
    residual = math.inf
    status = "partial"
    sol = None
    rounds = 0
    exhausted = False
    dropped = False
    quick_seen: set[tuple] = set()
    reserve: list[tuple[PairTerm, tuple]] = []
    while not deadline.expired():
        rounds += 1
        lp_limit = deadline.left()  # None: no limit
        if lp_time_limit is not None:
            lp_limit = lp_time_limit if lp_limit is None else min(lp_time_limit, lp_limit)
        res, y, ylin, u = pool.solve_warm(target, lp_limit)
        if y is None:
            status = "partial"
            break
        residual = float(res.objective)
        history.append((rounds, len(pool.cols), residual))
        if log:
            log(f"round {rounds}: {len(pool.cols)} columns, {len(pool.rows)} rows, residual {residual:.3g}, "
                f"priced {priced}, {time.monotonic() - t0:.0f} s")
        if residual <= _RESIDUAL_ZERO:
            m = len(pool.cols)
            top = max(1e-300, float(np.abs(u).max(initial=0)))  # tol: empty guard
            support = [j for j in range(m) if abs(u[j]) > _SUPPORT_ZERO * top]
            sol = None
            if minimise:
                lean = pool.sparse_support(target, deadline.left())
                if lean:
                    sol = _exact(pool, lean, n)
            if sol is None:
                sol = _exact(pool, support, n)
            status = "found" if sol is not None else "failed"
            break
        # columns were scaled in the LP; the dual condition A^T y = 0 is scale-free.
        # Candidates priced earlier without pricing out wait in ``reserve`` (the duals
        # change every round) and are priced again with the fresh stream.
        scored: list[tuple[float, PairTerm, tuple]] = []
        for t, col in reserve:
            scored.append((_price(col, pool.rows, y, ylin), t, col))
        seen_chunk = 0
        quick_keys = quick_y = None
        while seen_chunk < chunk and not deadline.expired() and not exhausted:
            t = next(it, None)
            if t is None:
                exhausted = True
                break
            if t.k > n:
                continue
            if t.k == n and n >= 7:
                # quick price first (no column assembled); only candidates that price
                # out are built, the others are not kept for later rounds
                inv = _invariant(t.pos, t.neg, t.k)
                if inv in quick_seen:
                    continue
                quick_seen.add(inv)
                seen_chunk += 1
                priced += 1
                if quick_keys is None:
                    quick_keys = np.array(sorted(pool.rows), dtype=np.int64)
                    quick_y = y[[pool.rows[k] for k in quick_keys.tolist()]]
                if _quick_price(t, n, quick_keys, quick_y, ylin) <= _PRICE_MARGIN:
                    dropped = True
                    continue
            col = pool.fresh_column(t)
            if col is None:
                continue
            if not (t.k == n and n >= 7):
                seen_chunk += 1
                priced += 1
            scored.append((_price(col, pool.rows, y, ylin), t, col))
        scored.sort(key=lambda z: -z[0])
        good = [z for z in scored if z[0] > _PRICE_MARGIN]
        for _, t, col in good[:batch]:
            pool.add(t, col)
        rest = scored[len(good[:batch]):]
        dropped = dropped or len(rest) > reserve_size
        reserve = [(t, col) for _, t, col in rest[:reserve_size]]
        if not good and exhausted:
            # every candidate was priced against these duals (unless some were dropped
            # from a full reserve earlier: then no verdict about the whole stream)
            status = "partial" if dropped else "stalled"
            break
    return ColGenResult(n, status, sol, len(pool.cols), priced, rounds,
                        residual if math.isfinite(residual) else float("nan"),
                        time.monotonic() - t0, tuple(history))
