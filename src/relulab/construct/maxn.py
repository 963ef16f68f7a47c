"""max_n with two hidden layers whose first layer only computes ``relu(x_i - x_j)``.

**The structured family.**  The first hidden layer holds ``relu(x_i - x_j)`` for every
ordered pair (plus ``relu(+-sum x)`` to carry the linear term); so it "knows" every
pairwise maximum ``m_ij = max(x_i, x_j) = (x_i + x_j)/2 + (relu(x_i-x_j) + relu(x_j-x_i))/2``.
A second-layer neuron is ``relu(g)`` with ``g = sum(pos items) - sum(neg items)``,
an item being an input ``x_i`` or a pair maximum ``m_ij`` (a :class:`PairTerm` on k local
coordinates).  The output is ``sum_terms c_t * (sum over the S_n-orbit of relu(g_t))
+ (1/n) sum x``.

**Symmetry reduction.**  max is symmetric, so a solution may be averaged over S_n: only
one coefficient per orbit.  On the ordering cone ``s_1 >= ... >= s_n`` every ``relu(x_i -
x_j)`` is linear, so each member of an orbit is ``relu(B . t)`` for a linear form B in the
gaps ``t_m = s_m - s_{m+1} >= 0``.  A sum of ``relu(B . t)`` over distinct hyperplanes
through the open orthant is linear iff the net coefficient of every hyperplane is zero.
So *max = network on one cone* is the finite linear system over Q

    for every hyperplane H cutting the open orthant:  sum_t c_t coef_t(H) = 0
    linear part:  sum_t c_t lin_t = (1 - m/n)_m,

and any solution gives a network equal to max on the cone, hence (by symmetry) on R^n.
:func:`search_max_pairs` builds this system for a family of candidate orbits, asks HiGHS
for a sparse vertex solution (weight = orbit size, i.e. neurons), and re-solves it on the
vertex's support exactly in rationals; every equation is then checked exactly.

**Certificate** (:func:`certify_max_cones`): works on the network alone.  In an ordering
cone every first-layer neuron must be sign-constant (checked on the cone's rays), so every
second-layer pre-activation is an exact linear form; the bends of the output along each
hyperplane must cancel exactly and the remaining linear form must be ``x_(top)``.  With
an exact structural symmetry proof (:func:`relulab.construct.maxn_cert.is_symmetric_int`) the one cone
``x_1 >= ... >= x_n`` covers all n! cones (f o sigma = f and max o sigma = max), and the
n! cones cover R^n; without it every cone is checked.

**Recursion** (:func:`max_n_deep`): a first layer of ``relu(y_a - y_b)`` lets one
substitute group maxima: ``relu(y_a - y_b) = max(G_a u G_b) - max(G_b)`` is the output of
a network of depth h for groups with ``|G_a u G_b| <= cap(h)``; so with a two-hidden-layer
base for n0 inputs, ``cap(h + 1) = ceil(cap(h)/2) + (n0 - 1) floor(cap(h)/2)`` and
``cap(1) = 2`` (a 12-input base gives ``2 * 6^(h-1)``; the stored bases go up to 6).

**Stored:** certified networks for n <= 6 (:func:`max_n_two_hidden`), n = 7 (142,137
second-layer neurons) and n = 8 (306,252, from every orbit with s <= 3 items:
:func:`relulab.construct.item_family`): float64 build, :func:`certify_max_pairs` on their
integer arrays, exact evaluation by :func:`relulab.construct.eval_max_pairs`; n = 9 and
10 (24,593,726 and 275,875,517 second-layer neurons, from the s <= 3 items and the s = 4
segment orbits of :func:`relulab.construct.segment_orbits`): orbit-factorised only
(:mod:`relulab.construct.maxn_orbits`).

Example:
    >>> net = max_n_two_hidden(5)
    >>> net.n_hidden_layers, net([3, -1, 7, 2, 0])[0]
    (2, Fraction(7, 1))
    >>> certify_max_cones(net, 5).status
    'certified'
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

from ..limits import Deadline
from ..network import Network
from ..results import Result
from .maxmin import ConstructionError
from .maxn_blocks import MAXN_BLOCKS, max_blocks_network, stored_max_blocks
from .maxn_cert import (
    MaxNCertificate,
    _bend_rows,
    _certify,
    certify_arrays,
    int_layers,
    min_weight_support,
    pair_first_layer,
    solve_rational,
)

__all__ = [
    "PairTerm",
    "MaxPairsSolution",
    "MaxNCertificate",
    "candidate_terms",
    "random_terms",
    "search_max_pairs",
    "max_pairs_network",
    "certify_max_cones",
    "certify_max_pairs",
    "certify_arrays",
    "stored_max_pairs",
    "max_n_two_hidden",
    "deep_capacity",
    "deep_layers",
    "log6_layers",
    "MAXN_STORED",
    "MAXN_LARGE",
    "two_hidden_available",
]

Item = tuple  # ("x", i) or ("m", i, j) with i < j, on local coordinates


def _item_str(it: Item) -> str:
    return f"x{it[1]}" if it[0] == "x" else f"m{it[1]}{it[2]}" if max(it[1:]) < 10 else f"m{it[1]},{it[2]}"


_PERM_STABILIZER_K = 8  # up to here the stabiliser is counted over all k! permutations


def _automorphism_count(C: np.ndarray, v: np.ndarray) -> int:
    """Number of permutations p with ``C[p][:, p] == C`` and ``v[p] == v``: the
    automorphisms of the graph with vertex colours v and edge weights C (networkx's
    VF2 matcher), without listing the k! permutations."""
    import networkx as nx
    from networkx.algorithms import isomorphism

    G = nx.Graph()
    G.add_nodes_from((i, {"v": int(v[i])}) for i in range(len(v)))
    G.add_edges_from((i, j, {"w": int(C[i, j])}) for i in range(len(v)) for j in range(i + 1, len(v))
                     if C[i, j] != 0)
    gm = isomorphism.GraphMatcher(G, G, node_match=lambda a, b: a["v"] == b["v"],
                                  edge_match=lambda a, b: a["w"] == b["w"])
    return sum(1 for _ in gm.isomorphisms_iter())


def _active_form(t: PairTerm) -> tuple[np.ndarray, np.ndarray, int]:
    """The doubled form ``(2C, 2v)`` of t restricted to the coordinates it uses, and the
    number of coordinates it does not use (a term embedded in more coordinates)."""
    C, v = t.canonical()
    active = np.nonzero((v != 0) | (C != 0).any(axis=1))[0]
    return C[np.ix_(active, active)], v[active], t.k - len(active)


@dataclass(frozen=True)
class PairTerm:
    """``g = sum(pos) - sum(neg)`` on k local coordinates; items are ``("x", i)`` (an
    input) or ``("m", i, j)`` (``max(x_i, x_j)``, i < j).  The second-layer neurons of a
    term are ``relu(g o sigma)`` for all placements of the k coordinates among the n
    inputs (its S_n-orbit).

    Example:
        >>> t = PairTerm(3, (("m", 0, 1),), (("x", 2),))        # relu(max(x0, x1) - x2)
        >>> str(t), t.orbit_size(3), t.orbit_size(5)
        ('relu(m01 - x2)', 3, 30)
    """

    k: int
    pos: tuple[Item, ...]
    neg: tuple[Item, ...]

    def __str__(self) -> str:
        return (f"relu({' + '.join(map(_item_str, self.pos))} - "
                f"{' - '.join(map(_item_str, self.neg))})")

    def canonical(self) -> tuple[np.ndarray, np.ndarray]:
        """``g = sum_{i<j} C[i, j] |x_i - x_j| + v . x`` (unique: the |x_i - x_j| bend on
        distinct hyperplanes), as doubled integers ``(2C, 2v)``."""
        C = np.zeros((self.k, self.k), dtype=np.int64)
        v = np.zeros(self.k, dtype=np.int64)
        for sgn, items in ((1, self.pos), (-1, self.neg)):
            for it in items:
                if it[0] == "x":
                    v[it[1]] += 2 * sgn
                else:
                    i, j = it[1], it[2]
                    v[i] += sgn
                    v[j] += sgn
                    C[i, j] += sgn
                    C[j, i] += sgn
        return C, v

    def alphas(self) -> np.ndarray:
        """For every ordering tau of the k coordinates (tau[0] the largest), the linear form
        of g on that cone written in sorted order: row ``(a_tau[r])_r`` (k! rows)."""
        perms = _perms(self.k)
        pos = np.argsort(perms, axis=1)  # pos[t, c] = rank of coordinate c
        A = np.zeros(perms.shape, dtype=np.int64)
        rows = np.arange(len(perms))
        for sgn, items in ((1, self.pos), (-1, self.neg)):
            for it in items:
                if it[0] == "x":
                    r = pos[:, it[1]]
                else:
                    r = np.minimum(pos[:, it[1]], pos[:, it[2]])  # the larger input wins
                np.add.at(A, (rows, r), sgn)
        return A

    def stabilizer_size(self) -> int:
        """Number of permutations of the k coordinates that leave g unchanged: the
        coordinates g does not use permute freely (a factorial), the others are counted
        over all their permutations (up to 8 of them) or as the automorphisms of g's
        weighted graph (:func:`_automorphism_count`)."""
        C, v, inert = _active_form(self)
        if len(v) > _PERM_STABILIZER_K:
            return _automorphism_count(C, v) * math.factorial(inert)
        perms = _perms(len(v))
        cand = perms[(v[perms] == v).all(axis=1)]
        return sum(1 for p in cand if np.array_equal(C[np.ix_(p, p)], C)) * math.factorial(inert)

    def orbit_size(self, n: int) -> int:
        """Number of distinct neurons ``relu(g o sigma)`` for n inputs."""
        if self.k > n:
            return 0
        return math.factorial(n) // math.factorial(n - self.k) // self.stabilizer_size()

    def depends_on_all(self) -> bool:
        C, v = self.canonical()
        return bool(np.all((v != 0) | (C != 0).any(axis=1)))

    def to_dict(self) -> dict:
        return {"k": self.k, "pos": [list(i) for i in self.pos], "neg": [list(i) for i in self.neg],
                "text": str(self)}

    @staticmethod
    def from_dict(d: dict) -> PairTerm:
        def item(x: Sequence) -> Item:
            return ("x", int(x[1])) if x[0] == "x" else ("m", int(x[1]), int(x[2]))
        return PairTerm(int(d["k"]), tuple(item(x) for x in d["pos"]), tuple(item(x) for x in d["neg"]))


@functools.lru_cache(maxsize=16)
def _perms(k: int) -> np.ndarray:
    return np.array(list(itertools.permutations(range(k))), dtype=np.int64).reshape(-1, k)


def _items(k: int) -> list[Item]:
    return [("x", i) for i in range(k)] + [("m", i, j) for i in range(k) for j in range(i + 1, k)]


def _useful(t: PairTerm) -> np.ndarray | None:
    """The alphas of t, or None when t is useless (constant sign on every cone, so
    linear or zero, or not depending on all its coordinates)."""
    if set(t.pos) & set(t.neg) or not t.depends_on_all():
        return None
    A = t.alphas()
    pref = np.cumsum(A, axis=1)[:, :-1]
    if (pref >= 0).all() or (pref <= 0).all():
        return None
    return A


def _orbit_key(A: np.ndarray) -> tuple:
    return tuple(sorted(map(tuple, A.tolist())))


def _is_new_orbit(t: PairTerm, seen: set[tuple]) -> bool:
    """True (and the orbit recorded in ``seen``) when ``t`` is useful and its orbit is not
    in ``seen`` yet: the de-duplication of the listed and the sampled term families."""
    A = _useful(t)
    if A is None:
        return False
    key = (t.k, _orbit_key(A))
    if key in seen:
        return False
    seen.add(key)
    return True


class _TimeUp(Exception):
    """The time limit ran out while the candidate family was being built."""


def candidate_terms(mass: int, kmax: int) -> list[PairTerm]:
    """All terms with ``mass`` items on each side on at most ``kmax`` coordinates, one per
    orbit function (terms whose orbit sums agree on the sorted cone are merged).

    Example:
        >>> [str(t) for t in candidate_terms(1, 3)]
        ['relu(x0 - x1)', 'relu(x0 - m12)', 'relu(m01 - x2)', 'relu(m01 - m02)']
    """
    return _candidate_terms(mass, kmax, Deadline(None))


def _candidate_terms(mass: int, kmax: int, deadline: Deadline) -> list[PairTerm]:
    """:func:`candidate_terms`, stopping with ``_TimeUp`` once ``deadline`` has expired."""
    seen: set[tuple] = set()
    out = []
    for k in range(2, kmax + 1):
        its = _items(k)
        for P in itertools.combinations_with_replacement(its, mass):
            if deadline.expired():
                raise _TimeUp
            for N in itertools.combinations_with_replacement(its, mass):
                used = {c for it in P + N for c in it[1:]}
                if len(used) != k:
                    continue
                t = PairTerm(k, P, N)
                if _is_new_orbit(t, seen):
                    out.append(t)
    return out


def random_terms(mass: int, kmax: int, count: int, seed: int = 0,
                 exclude: Sequence[PairTerm] = ()) -> list[PairTerm]:
    """``count`` random distinct useful terms with ``mass`` items a side on 3..kmax
    coordinates (a sample of a family too large to list).

    Example:
        >>> len(random_terms(3, 5, 10, seed=1))
        10
    """
    rng = np.random.default_rng(seed)
    seen = {(t.k, _orbit_key(t.alphas())) for t in exclude}
    out: list[PairTerm] = []
    tries = 0
    while len(out) < count and tries < 100 * count:
        tries += 1
        k = int(rng.integers(3, kmax + 1))
        its = _items(k)
        P = tuple(sorted(its[i] for i in rng.integers(0, len(its), mass)))
        N = tuple(sorted(its[i] for i in rng.integers(0, len(its), mass)))
        if len({c for it in P + N for c in it[1:]}) != k:
            continue
        t = PairTerm(k, P, N)
        if _is_new_orbit(t, seen):
            out.append(t)
    return out


# ------------------------------------------------------------------ the linear system
@functools.lru_cache(maxsize=64)
def _placements(n: int, k: int) -> np.ndarray:
    """S[p, m, j] = 1 when coordinate j placed at rank p_j counts in gap m (p_j <= m)."""
    ps = list(itertools.combinations(range(n), k))
    S = np.zeros((len(ps), n - 1, k), dtype=np.int64)
    for a, p in enumerate(ps):
        for j, pj in enumerate(p):
            S[a, pj:, j] = 1
    return S


def _column(t: PairTerm, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The orbit sum of t on the sorted cone, as (hyperplane keys K (rows: primitive
    integer forms in the gaps t, first non-zero entry positive), coefficients (ints),
    linear part (ints), divisor): orbit sum = (sum_K coef relu(K t) + lin . t) / divisor."""
    A = t.alphas()
    uq, counts = np.unique(A, axis=0, return_counts=True)
    S = _placements(n, t.k)
    B = np.einsum("pmk,tk->tpm", S, uq)
    w = np.repeat(counts, S.shape[0])
    K, mult, lin = _bend_rows(B.reshape(-1, n - 1), w)
    uK, inv = np.unique(K, axis=0, return_inverse=True)
    coef = np.zeros(len(uK), dtype=np.int64)
    np.add.at(coef, inv.ravel(), mult)
    return uK, coef, lin, t.stabilizer_size()



@dataclass(frozen=True)
class MaxPairsSolution(Result):
    """A two-hidden-layer representation of max_n in the structured family: orbit
    coefficients (exact) of :class:`PairTerm` s; ``status`` is "found" (every equation
    checked exactly), "infeasible" (HiGHS finds no solution in this candidate family: a
    float64 verdict about the family, not an exact proof), "unknown" (the time limit or a
    solver failure stopped the LP) or "failed" (the LP's vertex did not survive exact
    re-solving).

    Example:
        >>> s = search_max_pairs(4)
        >>> s.status, s.n_neurons == max_pairs_network(4, s).n_neurons
        ('found', True)
    """

    n: int
    status: str
    terms: tuple[tuple[PairTerm, Fraction], ...]
    n_candidates: int
    n_hyperplanes: int
    n_equations_checked: int

    @property
    def widths(self) -> tuple[int, int]:
        extra = 3 if self.n == 2 else 2  # the carry of sum x (and |x0 - x1| / 2 for n = 2)
        return (self.n * (self.n - 1) + 2, sum(t.orbit_size(self.n) for t, _ in self.terms) + extra)

    @property
    def n_neurons(self) -> int:
        return sum(self.widths)

    def to_dict(self) -> dict:
        return {"n": self.n, "status": self.status,
                "terms": [{**t.to_dict(), "coef": str(c), "orbit_size": t.orbit_size(self.n)}
                          for t, c in self.terms],
                "n_candidates": self.n_candidates, "n_hyperplanes": self.n_hyperplanes,
                "n_equations_checked": self.n_equations_checked,
                "widths": list(self.widths) if self.status == "found" else None}


def _system(terms: Sequence[PairTerm], n: int):
    rows: dict[tuple, int] = {}
    entries: list[tuple[int, int, Fraction]] = []
    lins = []
    for c, t in enumerate(terms):
        K, coef, lin, div = _column(t, n)
        for key, v in zip(map(tuple, K.tolist()), coef.tolist(), strict=True):
            if v:
                entries.append((rows.setdefault(key, len(rows)), c, Fraction(v, div)))
        lins.append([Fraction(int(v), div) for v in lin])
    target = [1 - Fraction(m + 1, n) for m in range(n - 1)]
    return rows, entries, lins, target


def _exact_solve(cols: list[int], entries, lins, target, n_rows: int) -> list[Fraction] | None:
    """Solve the system restricted to ``cols`` exactly (Gaussian elimination over Q on
    all its equations); None if inconsistent or not uniquely solvable."""
    idx = {c: i for i, c in enumerate(cols)}
    k = len(cols)
    eqs: dict[int, list[Fraction]] = {}
    for r, c, v in entries:
        if c in idx:
            eqs.setdefault(r, [Fraction(0)] * (k + 1))[idx[c]] += v
    M = list(eqs.values())
    for m in range(len(target)):
        M.append([lins[c][m] for c in cols] + [target[m]])
    return solve_rational(M, k)


def _check(terms: Sequence[tuple[PairTerm, Fraction]], n: int) -> tuple[bool, int, int]:
    """Exact check of every equation for the given coefficients: (ok, #hyperplanes, #eqs)."""
    rows, entries, lins, target = _system([t for t, _ in terms], n)
    tot = [Fraction(0)] * len(rows)
    for r, c, v in entries:
        tot[r] += terms[c][1] * v
    lin = [sum((terms[c][1] * lins[c][m] for c in range(len(terms))), Fraction(0))
           for m in range(n - 1)]
    ok = all(v == 0 for v in tot) and lin == target
    return ok, len(rows), len(rows) + n - 1


def search_max_pairs(n: int, terms: Sequence[PairTerm] | None = None,
                     time_limit: float | None = None) -> MaxPairsSolution:
    """Search a two-hidden-layer max_n network with first layer ``relu(x_i - x_j)``
    (module docstring): the exact linear system over the candidate orbits ``terms``
    (default :func:`candidate_terms` with mass 2 on up to ``min(n, 6)`` coordinates),
    a sparse vertex from HiGHS (weights = neurons per orbit), exact re-solve and exact
    check of every equation.

    Example:
        >>> s = search_max_pairs(5)
        >>> s.status, s.widths
        ('found', (22, 77))
    """
    from scipy import sparse


    if not isinstance(n, (int, np.integer)) or n < 2:
        raise ConstructionError(f"search_max_pairs: n must be an integer >= 2, got {n!r}")
    if n == 2:
        return MaxPairsSolution(2, "found", (), 0, 0, 1)
    deadline = Deadline(time_limit)
    try:
        cands = [t for t in (terms if terms is not None else _candidate_terms(2, min(n, 6), deadline))
                 if t.k <= n]
    except _TimeUp:
        return MaxPairsSolution(n, "unknown", (), 0, 0, 0)
    rows, entries, lins, target = _system(cands, n)
    if deadline.at is not None:
        time_limit = deadline.left()
        if time_limit <= 0:
            return MaxPairsSolution(n, "unknown", (), len(cands), len(rows), 0)
    m = len(cands)
    R = len(rows)
    I = [r for r, _, _ in entries] + [R + i for i in range(n - 1) for _ in range(m)]
    J = [c for _, c, _ in entries] + [c for _ in range(n - 1) for c in range(m)]
    V = [float(v) for _, _, v in entries] + [float(lins[c][i]) for i in range(n - 1) for c in range(m)]
    A = sparse.csr_matrix((V, (I, J)), shape=(R + n - 1, m))
    b = np.concatenate([np.zeros(R), np.array([float(v) for v in target])])
    w = np.array([t.orbit_size(n) for t in cands], dtype=np.float64)
    status, support = min_weight_support(w, A, b, time_limit)
    if status == "unknown":
        # on the raw rows of the n = 8 system (s = 3 items) HiGHS stops with an "error"
        # status; rows scaled to max |entry| 1 solve (same feasible set; the exact
        # re-solve below is on the raw system)
        scale = 1.0 / np.maximum(abs(A).max(axis=1).toarray().ravel(), 1e-300)  # tol: zero rows
        status, support = min_weight_support(w, sparse.diags(scale) @ A, b * scale, time_limit)
    if status == "infeasible":
        return MaxPairsSolution(n, "infeasible", (), m, R, R + n - 1)
    if status != "optimal":
        return MaxPairsSolution(n, "unknown", (), m, R, 0)
    exact = _exact_solve(support, entries, lins, target, R)
    if exact is None:
        return MaxPairsSolution(n, "failed", (), m, R, 0)
    sol = tuple((cands[c], v) for c, v in zip(support, exact, strict=True) if v != 0)
    ok, nh, ne = _check(list(sol), n)
    return MaxPairsSolution(n, "found" if ok else "failed", sol, m, nh, ne)


# ------------------------------------------------------------------ the network
def _member_rows(t: PairTerm, n: int, pi: np.ndarray, pj: np.ndarray) -> np.ndarray:
    """The distinct second-layer rows (integer numerators over 2n on the pair features
    ``relu(x_i - x_j)``, in the order of ``pi, pj``) of the orbit of t, one per distinct
    placement of its k coordinates among the n inputs, in the order of first occurrence
    along the lexicographic placements (vectorised: no Python loop over placements)."""
    C, v = t.canonical()
    k = t.k
    inv = _inverse_placements(n, k)
    Cp = np.zeros((k + 1, k + 1), dtype=np.int64)
    Cp[:k, :k] = C
    vp = np.concatenate([v, [0]]).astype(np.int64)
    a, b = inv[:, pi], inv[:, pj]
    rows = np.ascontiguousarray(n * Cp[a, b] + vp[a] - vp[b])
    keys = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, first = np.unique(keys, return_index=True)  # byte-wise: equal rows, equal keys
    return rows[np.sort(first)]


@functools.lru_cache(maxsize=32)
def _inverse_placements(n: int, k: int) -> np.ndarray:
    """inv[p, input] = the local coordinate placed at ``input`` by the p-th injective map
    of k coordinates into n inputs (lexicographic), or k where none is."""
    P = np.array(list(itertools.permutations(range(n), k)), dtype=np.int64).reshape(-1, k)
    inv = np.full((len(P), n), k, dtype=np.int64)
    np.put_along_axis(inv, P, np.broadcast_to(np.arange(k, dtype=np.int64), P.shape), axis=1)
    return inv


def _pairs_arrays(n: int, solution: MaxPairsSolution | Sequence[tuple[PairTerm, Fraction]]
                  ) -> tuple[np.ndarray, np.ndarray, list[Fraction]]:
    """(first layer A1 (integers), second layer numerators N2 over 2n, output weights) of
    the network of a structured solution (see :func:`max_pairs_network`)."""
    terms = solution.terms if isinstance(solution, MaxPairsSolution) else tuple(solution)
    if not isinstance(n, (int, np.integer)) or n < 2:
        raise ConstructionError(f"max_pairs_network: n must be an integer >= 2, got {n!r}")
    A1, pi, pj = pair_first_layer(n)
    F1 = A1.shape[0]
    nums, outs = [], []  # second-layer rows as integer numerators over 2n
    for t, c in terms:
        if t.k > n:
            raise ConstructionError(f"max_pairs_network: term {t} needs {t.k} > n = {n} inputs")
        rows = _member_rows(t, n, pi, pj)
        nums.append(np.concatenate([rows, np.zeros((len(rows), 2), dtype=np.int64)], axis=1))
        outs += [Fraction(c)] * len(rows)
    if n == 2:  # max(x0, x1) = (x0 + x1)/2 + |x0 - x1|/2: no term, one neuron |x0 - x1|/2
        nums.append(np.array([n, n, 0, 0]))
        outs.append(Fraction(1))
    carry = np.zeros((2, F1), dtype=np.int64)
    carry[0, -2] = carry[1, -1] = 2 * n
    N2 = np.concatenate([np.asarray(r, dtype=np.int64).reshape(-1, F1) for r in nums] + [carry])
    outs += [Fraction(1, n), Fraction(-1, n)]
    return A1, N2, outs


def max_pairs_network(n: int, solution: MaxPairsSolution | Sequence[tuple[PairTerm, Fraction]],
                      exact: bool = True) -> Network:
    """The exact network of a structured solution: first layer ``relu(x_i - x_j)`` for all
    ordered pairs and ``relu(+-sum x)``; second layer one neuron per orbit member
    (``g = sum_{i<j} C_ij |x_i - x_j| + v.x`` with ``v.x = (1/n) sum_{i,j} v_i (x_i - x_j)``)
    plus two carrying ``sum x``; output ``sum c_t (orbit sum) + (1/n) sum x``.  Permuting
    the inputs permutes the neurons, so the symmetry proof applies.  ``exact=False`` builds
    the float64 network directly (for solutions too large for Fraction arrays).

    Example:
        >>> net = max_pairs_network(3, [(PairTerm(3, (("m", 0, 1),), (("x", 2),)), Fraction(1, 3))])
        >>> net.widths, net([1, 5, 2])[0]
        ((8, 5), Fraction(5, 1))
    """
    A1, N2, outs = _pairs_arrays(n, solution)
    F1 = A1.shape[0]
    if not exact:
        return Network([A1.astype(np.float64), N2 / (2 * n), np.array([[float(v) for v in outs]])],
                       [np.zeros(F1), np.zeros(len(N2)), np.zeros(1)])
    W1 = np.empty(A1.shape, dtype=object)
    for idx, v in np.ndenumerate(A1):
        W1[idx] = Fraction(int(v))
    W2 = np.empty(N2.shape, dtype=object)
    for idx, v in np.ndenumerate(N2):
        W2[idx] = Fraction(int(v), 2 * n)
    W3 = np.array([outs], dtype=object)
    zeros = [np.full(F1, Fraction(0), dtype=object), np.full(len(N2), Fraction(0), dtype=object),
             np.full(1, Fraction(0), dtype=object)]
    return Network([W1, W2, W3], zeros, exact=True)


# ------------------------------------------------------------------ the certificate
def certify_max_cones(net: Network, n: int, use_symmetry: bool | None = None) -> MaxNCertificate:
    """Certify exactly that a two-hidden-layer, bias-free network whose first-layer neurons
    are sign-constant on ordering cones computes max of n inputs on R^n (module docstring),
    in integer arithmetic (:mod:`relulab.construct.maxn_cert`).  ``use_symmetry`` None:
    one cone when the exact symmetry proof succeeds, else all n! cones (small n only).

    Example:
        >>> certify_max_cones(max_n_two_hidden(3), 3, use_symmetry=False).cones_checked
        6
    """
    if net.input_dim != n or net.output_dim != 1:
        raise ConstructionError(f"certify_max_cones: need a network R^{n} -> R, got {net!r}")
    net = net.exact()
    if net.n_hidden_layers != 2 or net.skip is not None or any(
            v != 0 for b in net.biases for v in b):
        return MaxNCertificate(n=n, widths=tuple(net.widths), hidden_layers=net.n_hidden_layers,
                               status="not applicable", cones_checked=0, cones_covered=0,
                               by_symmetry=False, hyperplanes_checked=0,
                               reason="needs two hidden layers, no biases, no skip connection")
    W1, W2, W3 = net.weights
    A1, d1, A2, d2, w = int_layers(W1, W2, W3[0])
    return _certify(A1, A2, w, d1 * d2, n, tuple(net.widths), use_symmetry)


def certify_max_pairs(n: int, solution: MaxPairsSolution | Sequence[tuple[PairTerm, Fraction]],
                      use_symmetry: bool | None = None) -> MaxNCertificate:
    """:func:`certify_max_cones` for the network ``max_pairs_network(n, solution)`` without
    building it as Fraction arrays: the same integer arrays the builder produces are
    checked (for solutions with hundreds of thousands of neurons, e.g. n = 7).

    Example:
        >>> certify_max_pairs(5, stored_max_pairs(5)).status
        'certified'
    """
    A1, N2, outs = _pairs_arrays(n, solution)
    return _certify(A1, N2, outs, 2 * n, n, (A1.shape[0], N2.shape[0]), use_symmetry)


# ------------------------------------------------------------------ stored solutions
def _load(section: str) -> dict[int, list[tuple[PairTerm, Fraction]]]:
    text = importlib.resources.files("relulab.construct").joinpath("data/maxn.json").read_text()
    data = json.loads(text).get(section, {})
    return {int(k): [(PairTerm.from_dict(t), Fraction(t["coef"])) for t in v["terms"]]
            for k, v in data.items()}


@functools.lru_cache(maxsize=1)
def _orbit_data() -> dict[int, dict]:
    """The orbit-factorised solutions (data/maxn_orbits.json; read by
    :mod:`relulab.construct.maxn_orbits`), keyed by n."""
    text = importlib.resources.files("relulab.construct").joinpath("data/maxn_orbits.json").read_text()
    return {int(k): v for k, v in json.loads(text)["solutions"].items()}


# solutions whose exact networks max_n_two_hidden builds; and larger ones (n = 7) whose
# network is built in float64 and certified from its integer arrays (certify_max_pairs)
MAXN_STORED: dict[int, list[tuple[PairTerm, Fraction]]] = _load("solutions")
MAXN_LARGE: dict[int, list[tuple[PairTerm, Fraction]]] = _load("large")


def stored_max_pairs(n: int) -> MaxPairsSolution:
    """The stored solution for n (found by :func:`search_max_pairs`; re-checked exactly
    here, every equation of the system): :data:`MAXN_STORED` (networks built and certified
    by :func:`max_n_two_hidden`) or :data:`MAXN_LARGE` (n = 7: 142,137 and n = 8: 306,252
    second-layer neurons; their networks are certified by :func:`certify_max_pairs` in
    about one and two minutes).

    Example:
        >>> stored_max_pairs(6).status
        'found'
    """
    if n not in MAXN_STORED and n not in MAXN_LARGE and n != 2:
        raise ConstructionError(f"max_n_two_hidden: no stored two-hidden-layer solution for n = {n} "
                                f"(stored as weight matrices: {sorted({*MAXN_STORED, *MAXN_LARGE})}; "
                                f"per orbit, too large for matrices: {sorted(_orbit_data())}, see "
                                f"stored_max_orbits); search_max_pairs(n) may find one")
    terms = MAXN_STORED.get(n) or MAXN_LARGE.get(n, [])
    ok, nh, ne = _check(terms, n) if n > 2 else (True, 0, 1)
    return MaxPairsSolution(n, "found" if ok else "failed", tuple(terms), len(terms), nh, ne)


# the largest block solution max_n_two_hidden builds as Fraction arrays (second-layer neurons)
_MAX_EXACT_NEURONS = 60000


@functools.lru_cache(maxsize=16)
def max_n_two_hidden(n: int) -> Network:
    """An exact network with **two** hidden layers computing ``max(x_1..x_n)`` on R^n
    whose first layer is ``relu(x_i - x_j)`` (all ordered pairs) and ``relu(+-sum x)``:
    from the stored item solution of :func:`search_max_pairs` (:data:`MAXN_STORED`,
    n <= 6) or else the stored block solution of
    :func:`relulab.construct.search_max_blocks` (:data:`relulab.construct.MAXN_BLOCKS`).
    Certify it with :func:`certify_max_cones`.

    Example:
        >>> max_n_two_hidden(4).widths
        (14, 20)
    """
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 2:
        raise ConstructionError(f"max_n_two_hidden: n must be an integer >= 2, got {n!r}")
    n = int(n)
    if n not in MAXN_STORED and n != 2 and n in MAXN_BLOCKS:
        sol = stored_max_blocks(n)
        if sol.status != "found":
            raise ConstructionError(f"max_n_two_hidden: the stored block solution for n = {n} fails its check")
        if sol.widths[1] > _MAX_EXACT_NEURONS:
            raise ConstructionError(
                f"max_n_two_hidden: the stored block solution for n = {n} has {sol.widths[1]} "
                f"second-layer neurons, too many for Fraction arrays; use "
                f"max_blocks_network({n}, stored_max_blocks({n}), exact=False), eval_max_blocks "
                f"and certify_max_blocks")
        return max_blocks_network(n, sol)
    if n in MAXN_LARGE and n not in MAXN_STORED:
        raise ConstructionError(
            f"max_n_two_hidden: the stored solution for n = {n} has {stored_max_pairs(n).widths[1]} "
            f"second-layer neurons, too many for Fraction arrays; build it with "
            f"max_pairs_network({n}, stored_max_pairs({n}), exact=False) and certify it with "
            f"certify_max_pairs({n}, stored_max_pairs({n}))")
    if n in _orbit_data() and n not in MAXN_STORED and n not in MAXN_LARGE:
        raise ConstructionError(
            f"max_n_two_hidden: the stored solution for n = {n} has {len(_orbit_data()[n]['terms'])} orbits, "
            f"too many second-layer neurons for weight matrices (orbit_widths counts them); it is kept "
            f"orbit-factorised: stored_max_orbits({n}), certify_max_orbits and eval_max_orbits")
    sol = stored_max_pairs(n)
    if sol.status != "found":
        raise ConstructionError(f"max_n_two_hidden: the stored solution for n = {n} fails its check")
    return max_pairs_network(n, sol)


def two_hidden_available() -> list[int]:
    """Every n for which :func:`max_n_two_hidden` builds an exact network.

    Example:
        >>> two_hidden_available()[:5]
        [2, 3, 4, 5, 6]
    """
    return list(_available())


@functools.lru_cache(maxsize=1)
def _available() -> tuple[int, ...]:
    blocks = [n for n in MAXN_BLOCKS if stored_max_blocks(n).widths[1] <= _MAX_EXACT_NEURONS]
    return tuple(sorted({2, *MAXN_STORED, *blocks}))


# ------------------------------------------------------------------ recursion
def _bases(bases: Sequence[int] | None) -> list[int]:
    """The requested bases (any n of :func:`two_hidden_available`); by default the item
    solutions (small networks, fast to substitute) and 2."""
    if bases is None:
        return sorted({2, *MAXN_STORED})
    avail = two_hidden_available()
    bad = [b for b in bases if b not in avail]
    if bad:
        raise ConstructionError(f"max_n_deep: no two-hidden-layer base for n = {bad} (stored: {avail})")
    return sorted(set(bases))


def _split(size: int, n0: int, cap: int) -> list[int] | None:
    """Group sizes (as equal as possible, largest first) splitting ``size`` items into at
    most n0 groups with every union of two groups at most ``cap``; None if impossible."""
    groups = min(n0, size)
    q, r = divmod(size, groups)
    sizes = [q + 1] * r + [q] * (groups - r)
    top2 = sizes[0] + (sizes[1] if len(sizes) > 1 else 0)
    return sizes if top2 <= cap else None


def deep_capacity(hidden_layers: int, bases: Sequence[int] | None = None) -> int:
    """The largest n that :func:`max_n_deep` handles with ``hidden_layers`` hidden layers:
    ``cap(1) = 2`` and ``cap(h + 1) = max over bases n0 of the largest n that splits into
    n0 groups with every two of them together at most cap(h)`` (for a base of 12 inputs:
    ``2 * 6^(h-1)``, i.e. ``ceil(log_6(n / 2)) + 1`` hidden layers).

    Example:
        >>> [deep_capacity(h, bases=[2, 4]) for h in (1, 2, 3, 4)]    # binary tree
        [2, 4, 8, 16]
        >>> [deep_capacity(h, bases=[6]) for h in (1, 2, 3)]
        [2, 6, 18]
    """
    if hidden_layers < 1:
        raise ConstructionError(f"deep_capacity: hidden_layers must be >= 1, got {hidden_layers}")
    cap = 2
    for _ in range(hidden_layers - 1):
        best = cap
        for n0 in _bases(bases):
            if n0 < 3:
                continue
            # n0 groups: one of ceil(cap/2), the others floor(cap/2)
            best = max(best, (cap + 1) // 2 + (n0 - 1) * (cap // 2))
        cap = best
    return cap


def log6_layers(n: int) -> int:
    """The published bound ``ceil(log_6(n / 2)) + 1`` hidden layers for max of n >= 2 inputs
    (two-hidden-layer networks for n <= 12 substituted recursively), in integers: the least
    h with ``2 * 6^(h-1) >= n``.  For CPWL functions on R^d use n = d + 1.

    Example:
        >>> [log6_layers(n) for n in (2, 3, 12, 13, 72, 73)]
        [1, 2, 2, 3, 3, 4]
    """
    if not isinstance(n, (int, np.integer)) or n < 2:
        raise ConstructionError(f"log6_layers: n must be an integer >= 2, got {n!r}")
    h = 1
    while 2 * 6 ** (h - 1) < n:
        h += 1
    return h


def deep_layers(n: int, bases: Sequence[int] | None = None) -> int:
    """Fewest hidden layers :func:`max_n_deep` needs for max of n inputs.

    Example:
        >>> deep_layers(64, bases=[2, 4]), deep_layers(6, bases=[6]), deep_layers(7, bases=[6])
        (6, 2, 3)
    """
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ConstructionError(f"deep_layers: n must be an integer >= 1, got {n!r}")
    if n == 1:
        return 1
    h = 1
    while deep_capacity(h, bases) < n:
        h += 1
    return h
