"""max_n with two hidden layers from block-symmetric second-layer neurons.

The first hidden layer is the one the recursion of :func:`relulab.construct.max_n_deep`
needs: ``relu(x_i - x_j)`` for every ordered pair (and ``relu(+-sum x)``).  A second-layer
neuron is then ``relu(g)`` with ``g = sum_{i<j} C_ij |x_i - x_j| + v . x`` (``sum v = 0``).

**The family.**  A :class:`BlockTerm` fixes block sizes ``a_1 + ... + a_r = n`` and small
integers: ``kappa[b, b']`` (the coefficient C_ij of every pair i in block b, j in block b')
and ``v[b]`` (the coefficient of every x_i in block b, with ``sum_b a_b v_b = 0``).  Its
neurons are ``relu(g)`` for every ordered split of the n inputs into blocks of those
sizes (its S_n-orbit, ``n! / prod a_b!`` splits), all with the same output weight; the
large stabiliser ``S_a1 x ... x S_ar`` keeps the orbits small.

**The linear system.**  On the ordering cone ``x_1 >= ... >= x_n`` with gaps
``t_m = x_m - x_{m+1} >= 0``, ``|x_i - x_j|`` and ``x_i`` are linear in t, and the
coefficient of t_m in g is ``Q(c)``, where ``c_b`` counts the block-b inputs among the m
largest and

    Q(c) = sum_b kappa_bb (a_b c_b - c_b^2) + sum_{b<b'} kappa_bb' (a_b' c_b + a_b c_b' - 2 c_b c_b')
           + sum_b v_b c_b.

So each split is a monotone lattice path from 0 to a in the box ``prod [0, a_b]`` and its
neuron is ``relu(sum_m Q(path_m) t_m)`` on the cone.  A sum of such relus over distinct
hyperplanes through the open orthant is linear iff the net coefficient of every
hyperplane is zero, so "output = max on the cone" is the finite linear system over Q

    for every hyperplane H cutting the open orthant:  sum_terms c_T bend_T(H) = 0,
    linear part:  sum_terms c_T lin_T = (1 - m/n)_m,

one unknown per orbit (the output weight).  Any solution is a network equal to max on
the cone, hence on R^n (it is symmetric: :func:`relulab.construct.maxn_cert.is_symmetric_int`
proves it exactly from the weights).  :func:`search_max_blocks` builds the system, asks
HiGHS for a sparse vertex (weights = neurons per orbit), re-solves on its support in
rationals and checks every equation exactly; :func:`certify_max_blocks` certifies the
network itself (:func:`relulab.construct.certify_max_cones` on its integer arrays).

Example:
    >>> sol = stored_max_blocks(5)
    >>> sol.status, certify_max_blocks(5, sol).status
    ('found', 'certified')
"""

from __future__ import annotations

import functools
import importlib.resources
import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..network import Network
from ..results import Result
from .maxmin import ConstructionError
from .maxn_cert import (
    MaxNCertificate,
    _bend_rows,
    certify_arrays,
    min_weight_support,
    pair_first_layer,
    solve_rational,
)

__all__ = [
    "BlockTerm",
    "MaxBlocksSolution",
    "block_candidates",
    "search_max_blocks",
    "max_blocks_arrays",
    "max_blocks_network",
    "certify_max_blocks",
    "stored_max_blocks",
    "eval_max_blocks",
    "MAXN_BLOCKS",
]

_FLOAT_EXACT = 2**52  # integers below this add and multiply exactly in float64
_INT64_SAFE = 2**62  # int64 sums below this cannot overflow
_LP_ZERO = 1e-9  # relative size below which an LP coefficient is read as zero  # tol: LP zeros


@dataclass(frozen=True)
class BlockTerm:
    """One orbit of second-layer neurons: block ``sizes`` (sum n), ``kappa`` as
    ``((b, b2, k), ...)`` with b <= b2 (coefficient k of ``|x_i - x_j|`` for i in block b,
    j in block b2, i != j) and ``v`` (coefficient of x_i in block b; ``sum a_b v_b = 0``).

    Example:
        >>> t = BlockTerm((2, 1), ((0, 0, 1), (0, 1, -1)), (1, -2))
        >>> t.n, t.splits(), t.q([1, 0]), t.q([2, 1])
        (3, 3, 1, 0)
    """

    sizes: tuple[int, ...]
    kappa: tuple[tuple[int, int, int], ...]
    v: tuple[int, ...]

    def __post_init__(self) -> None:
        r = len(self.sizes)
        if r < 1 or any(s < 1 for s in self.sizes) or len(self.v) != r:
            raise ConstructionError(f"BlockTerm: bad block sizes {self.sizes} / v {self.v}")
        if any(not (0 <= b <= b2 < r) for b, b2, _ in self.kappa):
            raise ConstructionError(f"BlockTerm: kappa {self.kappa} names a block outside 0..{r - 1}")
        if sum(a * x for a, x in zip(self.sizes, self.v, strict=True)) != 0:
            raise ConstructionError(f"BlockTerm: sum_b a_b v_b must be 0, got v = {self.v}")

    @property
    def n(self) -> int:
        return sum(self.sizes)

    def __str__(self) -> str:
        ks = " ".join(f"k{b}{b2}={k:+d}" for b, b2, k in self.kappa if k)
        vs = " ".join(f"v{b}={x:+d}" for b, x in enumerate(self.v) if x)
        return f"blocks{self.sizes}[{ks}{' ' if ks and vs else ''}{vs}]"

    def q(self, c: Sequence[int]) -> int:
        """``Q(c)``: the coefficient of the gap after the m largest inputs when c_b of
        them lie in block b (module docstring)."""
        a = self.sizes
        tot = sum(x * cb for x, cb in zip(self.v, c, strict=True))
        for b, b2, k in self.kappa:
            if b == b2:
                tot += k * (a[b] * c[b] - c[b] * c[b])
            else:
                tot += k * (a[b2] * c[b] + a[b] * c[b2] - 2 * c[b] * c[b2])
        return tot

    def splits(self) -> int:
        """Number of ordered splits of the n inputs into the blocks (neurons before
        merging equal ones)."""
        return math.factorial(self.n) // math.prod(math.factorial(s) for s in self.sizes)

    def to_dict(self) -> dict:
        return {"sizes": list(self.sizes), "kappa": [list(k) for k in self.kappa if k[2]],
                "v": list(self.v), "text": str(self)}

    @staticmethod
    def from_dict(d: dict) -> BlockTerm:
        return BlockTerm(tuple(int(s) for s in d["sizes"]),
                         tuple((int(b), int(b2), int(k)) for b, b2, k in d["kappa"]),
                         tuple(int(x) for x in d["v"]))


# ------------------------------------------------------------------ the family
def _compositions(n: int, r: int) -> list[tuple[int, ...]]:
    """Block sizes a_1 >= ... >= a_r >= 1 summing to n."""
    out: list[tuple[int, ...]] = []

    def rec(rem: int, k: int, mx: int, cur: tuple[int, ...]) -> None:
        if k == 0:
            if rem == 0:
                out.append(cur)
            return
        for s in range(min(rem, mx), 0, -1):
            rec(rem - s, k - 1, s, cur + (s,))

    rec(n, r, n, ())
    return out


@functools.lru_cache(maxsize=32)
def _paths(sizes: tuple[int, ...]) -> np.ndarray:
    """Counts along every split: P[p, m, b] = number of block-b inputs among the m + 1
    largest, for every sequence of block labels with the given sizes (m < n - 1)."""
    n, r = sum(sizes), len(sizes)
    seqs: list[list[int]] = []

    def rec(cnt: list[int], seq: list[int]) -> None:
        if len(seq) == n:
            seqs.append(seq[:])
            return
        for b in range(r):
            if cnt[b] < sizes[b]:
                cnt[b] += 1
                seq.append(b)
                rec(cnt, seq)
                seq.pop()
                cnt[b] -= 1

    rec([0] * r, [])
    L = np.array(seqs, dtype=np.int64).reshape(-1, n)
    return np.cumsum(np.eye(r, dtype=np.int64)[L], axis=1)[:, :-1, :]


def _names(sizes: tuple[int, ...]) -> list[tuple]:
    r = len(sizes)
    names: list[tuple] = [("k", b, b) for b in range(r) if sizes[b] >= 2]
    names += [("k", b, b2) for b in range(r) for b2 in range(b + 1, r)]
    return names + [("v", b) for b in range(r)]


def _features(sizes: tuple[int, ...]) -> np.ndarray:
    """F[p, m, f]: the basis functions of Q (one per name) along every path."""
    C = _paths(sizes)
    a = sizes
    fs = []
    for nm in _names(sizes):
        if nm[0] == "v":
            fs.append(C[..., nm[1]])
        elif nm[1] == nm[2]:
            b = nm[1]
            fs.append(a[b] * C[..., b] - C[..., b] ** 2)
        else:
            b, b2 = nm[1], nm[2]
            fs.append(a[b2] * C[..., b] + a[b] * C[..., b2] - 2 * C[..., b] * C[..., b2])
    return np.stack(fs, axis=-1)


def _term(sizes: tuple[int, ...], coefs: Sequence[int]) -> BlockTerm:
    kappa, v = [], [0] * len(sizes)
    for nm, c in zip(_names(sizes), coefs, strict=True):
        if nm[0] == "v":
            v[nm[1]] = int(c)
        elif c:
            kappa.append((nm[1], nm[2], int(c)))
    return BlockTerm(sizes, tuple(kappa), tuple(v))


def _coefs(t: BlockTerm) -> np.ndarray:
    k = {(b, b2): c for b, b2, c in t.kappa}
    return np.array([k.get((nm[1], nm[2]), 0) if nm[0] == "k" else t.v[nm[1]]
                     for nm in _names(t.sizes)], dtype=np.int64)


def _coef_grid(sizes: tuple[int, ...], kappa_max: int, v_max: int,
               kappa_terms: int | None = None) -> np.ndarray:
    """All primitive integer coefficient vectors, one of each +-pair (relu(-g) =
    relu(g) - g: the same orbit up to a linear term), with sum a_b v_b = 0, on the grid
    where (in units of 1/2) cross-block kappa is at most kappa_max, in-block kappa an even
    number at most 2 kappa_max and |v| <= 2 v_max (so half-integer cross terms like
    ``max(x_i, x_j) = (x_i + x_j + |x_i - x_j|) / 2`` are in the family); at most
    ``kappa_terms`` non-zero kappa entries when given."""
    names = _names(sizes)
    ki = [i for i, nm in enumerate(names) if nm[0] == "k"]
    vi = [i for i, nm in enumerate(names) if nm[0] == "v"]
    krng = [range(-2 * kappa_max, 2 * kappa_max + 1, 2) if names[i][1] == names[i][2]
            else range(-kappa_max, kappa_max + 1) for i in ki]
    Kg = np.array(list(itertools.product(*krng)), dtype=np.int64).reshape(-1, len(ki))
    if kappa_terms is not None:
        Kg = Kg[(Kg != 0).sum(axis=1) <= kappa_terms]
    Vg = np.array(list(itertools.product(range(-2 * v_max, 2 * v_max + 1), repeat=len(vi))),
                  dtype=np.int64).reshape(-1, len(vi))
    Vg = Vg[Vg @ np.array([sizes[names[i][1]] for i in vi]) == 0]
    Q = np.zeros((len(Kg) * len(Vg), len(names)), dtype=np.int64)
    Q[:, ki] = np.repeat(Kg, len(Vg), axis=0)
    Q[:, vi] = np.tile(Vg, (len(Kg), 1))
    Q = Q[(Q != 0).any(axis=1)]
    Q = Q[np.gcd.reduce(np.abs(Q), axis=1) == 1]
    first = Q[np.arange(len(Q)), (Q != 0).argmax(axis=1)]
    return Q[first > 0]


def block_candidates(n: int, max_blocks: int = 3, kappa_max: int = 1, v_max: int = 2,
                     sizes: Sequence[Sequence[int]] | None = None,
                     kappa_terms: int | None = None) -> list[BlockTerm]:
    """Every :class:`BlockTerm` for n inputs with at most ``max_blocks`` blocks (or the
    given block ``sizes``) on the coefficient grid of ``kappa_max`` and ``v_max`` (in-block
    kappa and v in steps of 1, cross-block kappa in steps of 1/2, after scaling by 2) that
    bends somewhere inside the ordering cone (others are linear there: useless); at most
    ``kappa_terms`` non-zero kappa entries when given.

    Example:
        >>> [str(t) for t in block_candidates(3, kappa_max=1, v_max=1)][:2]
        ['blocks(2, 1)[v0=+1 v1=-2]', 'blocks(2, 1)[k00=+2 k01=-1]']
    """
    if not isinstance(n, (int, np.integer)) or n < 3:
        raise ConstructionError(f"block_candidates: n must be an integer >= 3, got {n!r}")
    comps = ([tuple(sorted((int(s) for s in a), reverse=True)) for a in sizes] if sizes is not None
             else [a for r in range(2, max_blocks + 1) for a in _compositions(n, r)])
    out = []
    for a in comps:
        if sum(a) != n:
            raise ConstructionError(f"block_candidates: block sizes {a} do not sum to n = {n}")
        F = _features(a)
        Q = _coef_grid(a, kappa_max, v_max, kappa_terms)
        for s in range(0, len(Q), 4096):
            B = np.einsum("pmf,qf->qpm", F, Q[s:s + 4096])
            mixed = ((B > 0).any(axis=2) & (B < 0).any(axis=2)).any(axis=1)
            out += [_term(a, q) for q in Q[s:s + 4096][mixed]]
    return out


# ------------------------------------------------------------------ the linear system
def _column(t: BlockTerm) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The orbit sum of t on the sorted cone: (hyperplane keys K (primitive, first
    non-zero entry positive), bend coefficients, linear part), all integers."""
    K, mult, lin = _bend_rows(_features(t.sizes) @ _coefs(t))
    uK, inv = np.unique(K, axis=0, return_inverse=True)
    coef = np.zeros(len(uK), dtype=np.int64)
    np.add.at(coef, inv.ravel(), mult)
    return uK, coef, lin


@dataclass(frozen=True)
class MaxBlocksSolution(Result):
    """A two-hidden-layer representation of max_n by block terms: exact orbit output
    weights; ``status`` "found" (every equation of the system checked exactly),
    "infeasible" (HiGHS finds none in this family: a float64 verdict about the family,
    not an exact proof), "unknown" (time limit / solver failure) or "failed" (the LP
    vertex did not survive exact re-solving).

    Example:
        >>> s = stored_max_blocks(4)
        >>> s.status, s.widths
        ('found', (14, 32))
    """

    n: int
    status: str
    terms: tuple[tuple[BlockTerm, Fraction], ...]
    n_candidates: int
    n_hyperplanes: int
    n_equations_checked: int

    @functools.cached_property
    def widths(self) -> tuple[int, int]:
        """(first, second) hidden-layer widths of :func:`max_blocks_network` (distinct
        neurons after merging equal ones; the two carries of sum x included)."""
        if self.status != "found":
            return (self.n * (self.n - 1) + 2, 0)
        _, N2, _ = max_blocks_arrays(self.n, self)
        return (self.n * (self.n - 1) + 2, int(N2.shape[0]))

    def to_dict(self) -> dict:
        return {"n": self.n, "status": self.status,
                "terms": [{**t.to_dict(), "coef": str(c), "splits": t.splits()} for t, c in self.terms],
                "n_candidates": self.n_candidates, "n_hyperplanes": self.n_hyperplanes,
                "n_equations_checked": self.n_equations_checked,
                "widths": list(self.widths) if self.status == "found" else None}


def _check(n: int, terms: Sequence[tuple[BlockTerm, Fraction]]) -> tuple[bool, int, int]:
    """Every equation of the system, exactly: (ok, #hyperplanes, #equations)."""
    bends: dict[bytes, Fraction] = {}
    lin = [Fraction(0)] * (n - 1)
    for t, c in terms:
        if t.n != n:
            return False, 0, 0
        K, coef, ln = _column(t)
        for row, v in zip(K, coef.tolist(), strict=True):
            key = row.tobytes()
            bends[key] = bends.get(key, Fraction(0)) + c * v
        lin = [a + c * int(b) for a, b in zip(lin, ln.tolist(), strict=True)]
    target = [1 - Fraction(m + 1, n) for m in range(n - 1)]
    ok = all(v == 0 for v in bends.values()) and lin == target
    return ok, len(bends), len(bends) + n - 1


def _exact_solve(cols: list[tuple[np.ndarray, np.ndarray, np.ndarray]], n: int) -> list[Fraction] | None:
    """The system restricted to the given columns, solved exactly (Gauss over Q on all
    its equations); None when inconsistent or not uniquely solvable."""
    k = len(cols)
    rows: dict[bytes, list[Fraction]] = {}
    for j, (K, coef, _) in enumerate(cols):
        for row, v in zip(K, coef.tolist(), strict=True):
            rows.setdefault(row.tobytes(), [Fraction(0)] * (k + 1))[j] += v
    M = list(rows.values())
    for m in range(n - 1):
        M.append([Fraction(int(c[2][m])) for c in cols] + [1 - Fraction(m + 1, n)])
    return solve_rational(M, k)


def _sparse_system(cands: Sequence[BlockTerm], n: int):
    """The float64 system (hyperplane rows, then the n - 1 linear-part rows) over the
    candidates, built per block sizes in vectorised batches; hyperplanes are keyed by a
    64-bit hash of their primitive integer form (a collision can only make the LP
    answer "failed" later: the solution is re-solved and checked exactly).  Columns with a
    hyperplane no other column bends along must be zero and are dropped, repeatedly.
    Returns (matrix or None when every column was dropped, number of hyperplanes)."""
    from scipy import sparse

    mult = np.random.default_rng(12345).integers(1, 2**62, size=n - 1, dtype=np.int64) | 1
    groups: dict[tuple[int, ...], list[int]] = {}
    for j, t in enumerate(cands):
        groups.setdefault(t.sizes, []).append(j)
    keys, colids, vals = [], [], []
    lin = np.zeros((len(cands), n - 1), dtype=np.int64)
    for sizes, idx in groups.items():
        F = _features(sizes)
        Q = np.array([_coefs(cands[j]) for j in idx], dtype=np.int64)
        for s0 in range(0, len(idx), 1024):
            B = np.einsum("pmf,qf->qpm", F, Q[s0:s0 + 1024])
            ids = np.array(idx[s0:s0 + 1024])
            nonneg = (B >= 0).all(axis=2)
            mixed = ~nonneg & ~(B <= 0).all(axis=2)
            lin[ids] += (B * nonneg[..., None]).sum(axis=1)
            q, _ = np.nonzero(mixed)
            Bm = B[mixed]
            g = np.gcd.reduce(np.abs(Bm), axis=1)
            K = Bm // g[:, None]
            neg = K[np.arange(len(K)), (K != 0).argmax(axis=1)] < 0
            np.add.at(lin, ids[q[neg]], Bm[neg])  # relu(-lam K) = lam relu(K) - lam K
            K[neg] = -K[neg]
            with np.errstate(over="ignore"):
                h = (K * mult).sum(axis=1)
            pair = np.stack([ids[q], h], axis=1)
            up, inv = np.unique(pair, axis=0, return_inverse=True)
            gs = np.zeros(len(up), dtype=np.int64)
            np.add.at(gs, inv.ravel(), g)
            colids.append(up[:, 0])
            keys.append(up[:, 1])
            vals.append(gs)
    col = np.concatenate(colids)
    uh, row = np.unique(np.concatenate(keys), return_inverse=True)
    M = sparse.csr_matrix((np.concatenate(vals).astype(np.float64), (row.ravel(), col)),
                          shape=(len(uh), len(cands)))
    alive = np.ones(len(cands), dtype=bool)
    while True:  # a hyperplane bent along by a single live column forces that column to 0
        Mc = M[:, alive].tocsr()
        single = np.nonzero(np.diff(Mc.indptr) == 1)[0]
        if len(single) == 0:
            break
        dead = np.unique(Mc[single].tocoo().col)
        alive[np.nonzero(alive)[0][dead]] = False
    M = M.multiply(alive[None, :]).tocsr()
    M.eliminate_zeros()
    M = M[np.diff(M.indptr) > 0]
    # each hyperplane row says "= 0": scale it to max |entry| 1 (HiGHS stalls with an
    # "error" status on the raw integer rows for n = 7)
    M = sparse.diags(1.0 / np.abs(M).max(axis=1).toarray().ravel()) @ M
    if not alive.any():
        return None, len(uh)
    L = sparse.csr_matrix((lin * alive[:, None]).T.astype(np.float64))
    return sparse.vstack([M, L]).tocsr(), len(uh)


def search_max_blocks(n: int, terms: Sequence[BlockTerm] | None = None,
                      time_limit: float | None = None) -> MaxBlocksSolution:
    """Search max_n with two hidden layers among block terms (module docstring): the
    exact linear system over the candidate orbits ``terms`` (default
    :func:`block_candidates` with at most 3 blocks, |kappa| <= 1, |v| <= 2), a sparse
    vertex from HiGHS (weights = neurons per orbit), exact re-solve on its support and an
    exact check of every equation.

    Example:
        >>> s = search_max_blocks(5)
        >>> s.status, certify_max_blocks(5, s).status
        ('found', 'certified')
    """


    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 3:
        raise ConstructionError(f"search_max_blocks: n must be an integer >= 3, got {n!r}")
    n = int(n)
    cands = list(terms) if terms is not None else block_candidates(n)
    bad = [t for t in cands if t.n != n]
    if bad:
        raise ConstructionError(f"search_max_blocks: term {bad[0]} is for n = {bad[0].n}, not {n}")
    m = len(cands)
    if m == 0:
        return MaxBlocksSolution(n, "infeasible", (), 0, 0, n - 1)
    A, R = _sparse_system(cands, n)
    if A is None:
        return MaxBlocksSolution(n, "infeasible", (), m, R, R + n - 1)
    b = np.concatenate([np.zeros(A.shape[0] - (n - 1)), [1 - (k + 1) / n for k in range(n - 1)]])
    w = np.array([t.splits() for t in cands], dtype=np.float64)
    w /= w.max()
    status, support = min_weight_support(w, A, b, time_limit, zero=_LP_ZERO)
    if status == "infeasible":
        return MaxBlocksSolution(n, "infeasible", (), m, R, R + n - 1)
    if status != "optimal":
        return MaxBlocksSolution(n, "unknown", (), m, R, 0)
    exact = _exact_solve([_column(cands[j]) for j in support], n)
    if exact is None:
        return MaxBlocksSolution(n, "failed", (), m, R, 0)
    sol = tuple((cands[j], v) for j, v in zip(support, exact, strict=True) if v != 0)
    ok, nh, ne = _check(n, sol)
    return MaxBlocksSolution(n, "found" if ok else "failed", sol, m, nh, ne)


# ------------------------------------------------------------------ the network
def _splits(sizes: tuple[int, ...]) -> np.ndarray:
    """Block label of every input, for every ordered split (rows)."""
    n = sum(sizes)
    out = []
    for seq in set(itertools.permutations([b for b, s in enumerate(sizes) for _ in range(s)])):
        out.append(seq)
    return np.array(sorted(out), dtype=np.int64).reshape(-1, n)


def max_blocks_arrays(n: int, solution: MaxBlocksSolution | Sequence[tuple[BlockTerm, Fraction]]
                      ) -> tuple[np.ndarray, np.ndarray, list[Fraction]]:
    """Integer arrays of :func:`max_blocks_network`: first layer ``A1`` (rows
    ``relu(x_i - x_j)`` for ordered pairs, then ``relu(+-sum x)``), second layer
    numerators ``N2`` over n (equal neurons merged), output weights.

    Example:
        >>> A1, N2, w = max_blocks_arrays(4, stored_max_blocks(4))
        >>> A1.shape, N2.shape[1], len(w) == N2.shape[0]
        ((14, 4), 14, True)
    """
    terms = solution.terms if isinstance(solution, MaxBlocksSolution) else tuple(solution)
    if not isinstance(n, (int, np.integer)) or n < 3:
        raise ConstructionError(f"max_blocks_network: n must be an integer >= 3, got {n!r}")
    A1, pi, pj = pair_first_layer(n)
    F1 = A1.shape[0]
    rows, outs = [], []
    for t, c in terms:
        if t.n != n:
            raise ConstructionError(f"max_blocks_network: term {t} is for n = {t.n}, not {n}")
        r = len(t.sizes)
        kap = np.zeros((r, r), dtype=np.int64)
        for b, b2, k in t.kappa:
            kap[b, b2] = kap[b2, b] = k
        v = np.array(t.v, dtype=np.int64)
        L = _splits(t.sizes)  # (S, n) block labels
        # weight of relu(x_i - x_j) in g: C_ij + (v_i - v_j)/n, as numerators over n
        num = n * kap[L[:, pi], L[:, pj]] + v[L[:, pi]] - v[L[:, pj]]
        rows.append(np.concatenate([num, np.zeros((len(L), 2), dtype=np.int64)], axis=1))
        outs += [Fraction(c)] * len(L)
    N2 = np.concatenate(rows) if rows else np.zeros((0, F1), dtype=np.int64)
    U, inv = np.unique(N2, axis=0, return_inverse=True)
    tot = [Fraction(0)] * len(U)
    for k, u in enumerate(inv.ravel().tolist()):
        tot[u] += outs[k]
    keep = [u for u in range(len(U)) if tot[u] != 0]
    carry = np.zeros((2, F1), dtype=np.int64)
    carry[0, -2] = carry[1, -1] = n
    return A1, np.concatenate([U[keep], carry]), [tot[u] for u in keep] + [Fraction(1, n), Fraction(-1, n)]


def max_blocks_network(n: int, solution: MaxBlocksSolution | Sequence[tuple[BlockTerm, Fraction]],
                       exact: bool = True) -> Network:
    """The network of a block solution: first layer ``relu(x_i - x_j)`` (ordered pairs)
    and ``relu(+-sum x)``, second layer one neuron per distinct orbit member plus two
    carrying sum x, output ``sum c_T (orbit sum) + (1/n) sum x``; bias-free.
    ``exact=False`` builds the float64 copy.

    Example:
        >>> net = max_blocks_network(4, stored_max_blocks(4))
        >>> net.n_hidden_layers, net([3, -1, 7, 2])[0]
        (2, Fraction(7, 1))
    """
    A1, N2, outs = max_blocks_arrays(n, solution)
    if not exact:
        return Network([A1.astype(np.float64), N2 / n, np.array([[float(v) for v in outs]])],
                       [np.zeros(len(A1)), np.zeros(len(N2)), np.zeros(1)])
    W1 = np.vectorize(lambda v: Fraction(int(v)), otypes=[object])(A1)
    W2 = np.vectorize(lambda v: Fraction(int(v), n), otypes=[object])(N2)
    zero = Fraction(0)
    return Network([W1, W2, np.array([outs], dtype=object)],
                   [np.full(len(A1), zero, dtype=object), np.full(len(N2), zero, dtype=object),
                    np.full(1, zero, dtype=object)], exact=True)


def eval_max_blocks(n: int, solution: MaxBlocksSolution | Sequence[tuple[BlockTerm, Fraction]],
                    X: Sequence[Sequence[object]]) -> list[Fraction]:
    """Exact outputs of :func:`max_blocks_network` at the rows of X (rationals), computed
    in integer arithmetic (the rows scaled to a common denominator; Python integers when
    int64 could overflow) and vectorised: the network's own arrays, no symmetry used.

    Example:
        >>> eval_max_blocks(4, stored_max_blocks(4), [[1, 5, Fraction(11, 2), -2]])
        [Fraction(11, 2)]
    """
    A1, N2, outs = max_blocks_arrays(n, solution)
    rows = [[Fraction(v) for v in r] for r in X]
    if any(len(r) != n for r in rows):
        raise ConstructionError(f"eval_max_blocks: every input needs {n} entries")
    den = math.lcm(*(v.denominator for r in rows for v in r)) if rows else 1
    Xi = np.array([[int(v * den) for v in r] for r in rows], dtype=object).reshape(-1, n)
    big = max((abs(int(v)) for v in Xi.ravel()), default=0)
    bound = big * int(np.abs(A1).sum(axis=1).max()) * int(np.abs(N2).sum(axis=1).max())
    D = math.lcm(*(v.denominator for v in outs))
    wi = [int(v * D) for v in outs]
    if bound < _FLOAT_EXACT and bound * sum(abs(w) for w in wi) < _INT64_SAFE:
        # every partial sum is an integer below 2^52 (float64 exact), the output below 2^62
        H1 = np.maximum(Xi.astype(np.float64) @ A1.T.astype(np.float64), 0)
        H2 = np.rint(np.maximum(H1 @ N2.T.astype(np.float64), 0)).astype(np.int64)
        tot = H2 @ np.array(wi, dtype=np.int64)
    else:
        H1 = np.maximum(Xi @ A1.T.astype(object), 0)
        H2 = np.maximum(H1 @ N2.T.astype(object), 0)
        tot = H2.dot(np.array(wi, dtype=object))
    return [Fraction(int(t), n * den * D) for t in tot.tolist()]


def certify_max_blocks(n: int, solution: MaxBlocksSolution | Sequence[tuple[BlockTerm, Fraction]],
                       use_symmetry: bool | None = None) -> MaxNCertificate:
    """:func:`relulab.construct.certify_max_cones` for :func:`max_blocks_network` on its
    integer arrays (exact symmetry proof, then the one ordering cone; or all n! cones
    with ``use_symmetry=False``).  Returns a :class:`relulab.construct.MaxNCertificate`.

    Example:
        >>> c = certify_max_blocks(5, stored_max_blocks(5))
        >>> c.status, c.cones_covered
        ('certified', 120)
    """
    A1, N2, outs = max_blocks_arrays(n, solution)
    return certify_arrays(A1, N2, outs, n, n, use_symmetry)


# ------------------------------------------------------------------ stored solutions
def _load() -> dict[int, list[tuple[BlockTerm, Fraction]]]:
    res = importlib.resources.files("relulab.construct").joinpath("data/maxn_blocks.json")
    if not res.is_file():
        return {}
    data = json.loads(res.read_text()).get("solutions", {})
    return {int(k): [(BlockTerm.from_dict(t), Fraction(t["coef"])) for t in v["terms"]]
            for k, v in data.items()}


# n -> orbit output weights of block terms, found by search_max_blocks
# (experiments/maxn_blocks.py --write); re-checked exactly by stored_max_blocks
MAXN_BLOCKS: dict[int, list[tuple[BlockTerm, Fraction]]] = _load()


@functools.lru_cache(maxsize=16)
def stored_max_blocks(n: int) -> MaxBlocksSolution:
    """The stored block solution for n (:data:`MAXN_BLOCKS`), every equation of its
    system re-checked exactly here.

    Example:
        >>> stored_max_blocks(6).status
        'found'
    """
    if n not in MAXN_BLOCKS:
        raise ConstructionError(f"stored_max_blocks: no stored block solution for n = {n} "
                                f"(stored: {sorted(MAXN_BLOCKS)})")
    terms = MAXN_BLOCKS[n]
    ok, nh, ne = _check(n, terms)
    return MaxBlocksSolution(n, "found" if ok else "failed", tuple(terms), len(terms), nh, ne)
