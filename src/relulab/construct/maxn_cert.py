"""Integer core of the ordering-cone certificate of :mod:`relulab.construct.maxn`.

A bias-free two-hidden-layer network ``f(x) = sum_k w_k relu(W2_k relu(W1 x))`` is written
over integers, ``W1 = A1 / d1`` and ``W2 = A2 / d2`` (int64 when the bounds allow, else
Python integers), so that the symmetry proof and the cone checks run vectorised and
exactly even for hundreds of thousands of neurons; only the output weights stay Fractions
(grouped by value).

Example:
    >>> import numpy as np
    >>> A1, d1, A2, d2, w = int_layers(np.array([[1, -1], [-1, 1]]), np.array([[1, 1]]),
    ...                                [Fraction(1, 2)])
    >>> A1.tolist(), d1, A2.tolist(), d2, w
    ([[1, -1], [-1, 1]], 1, [[1, 1]], 1, [Fraction(1, 2)])
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..results import Result

# min_weight_support is shared by the two max_n searches, not exported: its status string
# is read by them, which wrap it in their own result types
__all__ = ["int_layers", "is_symmetric_int", "cone_check_int", "MaxNCertificate", "certify_arrays",
           "pair_first_layer", "solve_rational"]


def _bend_rows(B: np.ndarray, w: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split a sum of neurons ``sum_r w_r relu(B_r . t)`` over the sorted cone (t >= 0)
    into bends and a linear part: rows that are >= 0 (<= 0) everywhere are linear (zero);
    a mixed row ``B_r = lam K`` with ``K`` primitive and its first non-zero entry positive
    bends along ``K``, and a negatively oriented one uses ``relu(-lam K) = lam relu(K) -
    lam K``.  Returns (K per mixed row, its multiplicity ``lam w``, the linear part), all
    integers (``w`` defaults to 1)."""
    w = np.ones(len(B), dtype=np.int64) if w is None else w
    lin = np.zeros(B.shape[1], dtype=np.int64)
    nonneg = (B >= 0).all(axis=1)
    lin += (B[nonneg] * w[nonneg, None]).sum(axis=0)
    mixed = ~nonneg & ~(B <= 0).all(axis=1)
    B, w = B[mixed], w[mixed]
    g = np.gcd.reduce(np.abs(B), axis=1)
    K = B // g[:, None]
    neg = K[np.arange(len(K)), (K != 0).argmax(axis=1)] < 0
    lin += (B[neg] * w[neg, None]).sum(axis=0)
    K[neg] = -K[neg]
    return K, g * w, lin


_INT64_SAFE = 2**62  # bound below which int64 sums and products cannot overflow


def _to_int(W: np.ndarray) -> tuple[np.ndarray, int]:
    flat = [Fraction(v) for v in np.asarray(W, dtype=object).ravel()]
    d = math.lcm(*(v.denominator for v in flat)) if flat else 1
    A = np.array([int(v * d) for v in flat], dtype=object).reshape(np.shape(W))
    big = max((abs(int(v)) for v in A.ravel()), default=0)
    return (A.astype(np.int64) if big < 2**31 else A), d


def int_layers(W1: np.ndarray, W2: np.ndarray, w3: Sequence[object]
               ) -> tuple[np.ndarray, int, np.ndarray, int, list[Fraction]]:
    """``(A1, d1, A2, d2, w)`` with ``W1 = A1 / d1``, ``W2 = A2 / d2`` and the output weights
    ``w`` as Fractions.

    Example:
        >>> int_layers(np.array([[Fraction(1, 2)]]), np.array([[3]]), [1])[:2]
        (array([[1]]), 2)
    """
    A1, d1 = _to_int(W1)
    A2, d2 = _to_int(W2)
    return A1, d1, A2, d2, [Fraction(v) for v in w3]


def _merge(A2: np.ndarray, w: Sequence[Fraction]) -> tuple[np.ndarray, list[Fraction]]:
    """Identical second-layer neurons merged (their output weights summed, zeros dropped)."""
    U, inv = np.unique(A2, axis=0, return_inverse=True)
    tot = [Fraction(0)] * len(U)
    for k, u in enumerate(inv.ravel().tolist()):
        tot[u] += w[k]
    keep = [u for u in range(len(U)) if tot[u] != 0]
    return U[keep], [tot[u] for u in keep]


def _canon(A2: np.ndarray, w: Sequence[Fraction]) -> tuple[np.ndarray, np.ndarray]:
    """Rows sorted lexicographically with a weight id column: equal multisets of
    (row, weight) pairs give equal arrays."""
    ids = {v: i for i, v in enumerate(sorted(set(w)))}
    M = np.concatenate([np.asarray(A2), np.array([[ids[v]] for v in w], dtype=A2.dtype)
                        .reshape(-1, 1)], axis=1)
    order = np.lexsort(M.T[::-1])
    return M[order], np.array(sorted(ids, key=ids.get), dtype=object)


def is_symmetric_int(A1: np.ndarray, A2: np.ndarray, w: Sequence[Fraction], n: int) -> bool:
    """Exact proof that ``f(sigma x) = f(x)`` for every permutation sigma of the n inputs:
    for a transposition and an n-cycle (they generate S_n) permuting the input columns of
    A1 must permute its rows, and the induced relabelling of the first-layer features must
    map the multiset of (second-layer neuron, output weight) onto itself.

    Example:
        >>> A1 = np.array([[1, -1], [-1, 1]]); A2 = np.array([[1, 1]])
        >>> is_symmetric_int(A1, A2, [Fraction(1)], 2), is_symmetric_int(A1, np.array([[1, 0]]), [Fraction(1)], 2)
        (True, False)
    """
    if n < 2:
        return True
    A2m, wm = _merge(A2, w)
    base, base_w = _canon(A2m, wm)
    index: dict[tuple, int] = {}
    for r, row in enumerate(A1.tolist()):
        if tuple(row) in index:
            return False  # duplicate first-layer rows: merge them first
        index[tuple(row)] = r
    gens = [[1, 0, *range(2, n)], [*range(1, n), 0]]
    for g in gens:
        P = A1[:, g]
        try:
            pi = [index[tuple(row)] for row in P.tolist()]
        except KeyError:
            return False
        if len(set(pi)) != len(pi):
            return False
        B = np.empty_like(A2m)
        B[:, pi] = A2m  # B[:, pi(r)] = A2[:, r]
        got, got_w = _canon(B, wm)
        if got.shape != base.shape or not np.array_equal(got, base) or list(got_w) != list(base_w):
            return False
    return True


def cone_check_int(A1: np.ndarray, A2: np.ndarray, w: Sequence[Fraction], scale: int,
                   rays: np.ndarray, top: int) -> tuple[str, int, str | None]:
    """Check ``f = x_top`` on the simplicial cone spanned by the rows of ``rays`` (integers),
    where ``f(x) = sum_k w_k relu(A2_k relu(A1 x)) / scale``.  Returns (verdict, number of
    bending hyperplanes, reason): "ok"; "not applicable" (a first-layer neuron changes sign
    inside: no verdict); "failed" (the output bends inside, or its linear form is not
    x_top: f is not max here).

    Example:
        >>> A1 = np.array([[1, -1], [-1, 1]]); A2 = np.array([[1, 1], [0, 0]])
        >>> rays = np.array([[1, 1], [1, -1]])                 # the cone x_0 >= x_1, both signs of sum
        >>> cone_check_int(A1, A2, [Fraction(1, 2), Fraction(0)], 1, rays, 0)[0]   # |x0 - x1|/2 != x0
        'failed'
    """
    n = rays.shape[1]
    obj = A1.dtype == object or A2.dtype == object
    R = rays.astype(object) if obj else rays.astype(np.int64)
    V1 = A1.dot(R.T)
    mixed = (V1.min(axis=1) < 0) & (V1.max(axis=1) > 0)
    if mixed.any():
        return "not applicable", 0, f"first-layer neuron {int(np.nonzero(mixed)[0][0])} changes sign inside"
    active = V1.max(axis=1) > 0
    A1a = A1 * active[:, None]
    if not obj:
        bound = int(np.abs(A2).sum(axis=1).max(initial=0)) * int(np.abs(A1a).max(initial=0)) * n * n
        if bound >= _INT64_SAFE:
            A1a, A2, R = A1a.astype(object), A2.astype(object), R.astype(object)
    L = A2.dot(A1a)  # second-layer pre-activations as integer linear forms on this cone
    Lr = L.dot(R.T)
    wid = {v: i for i, v in enumerate(sorted(set(w)))}
    wk = np.array([wid[v] for v in w], dtype=np.int64)
    wvals = sorted(wid, key=wid.get)
    nonzero_w = np.array([v != 0 for v in wvals])[wk]
    lo, hi = Lr.min(axis=1), Lr.max(axis=1)
    lin_rows = (lo >= 0) & nonzero_w
    bend_rows = (lo < 0) & (hi > 0) & nonzero_w
    linear = [Fraction(0)] * n
    if bend_rows.any():
        Lb = L[bend_rows]
        if obj:
            g = np.array([math.gcd(*(int(v) for v in row)) for row in Lb], dtype=object)
        else:
            g = np.gcd.reduce(np.abs(Lb), axis=1)
        first = Lb[np.arange(len(Lb)), (Lb != 0).argmax(axis=1)]
        sgn = np.where(first < 0, -1, 1)
        K = Lb // g[:, None] * sgn[:, None]
        lam = g
        U, inv = np.unique(K, axis=0, return_inverse=True)
        wb = wk[bend_rows]
        tot = [Fraction(0)] * len(U)
        for u, wi, la in zip(inv.ravel().tolist(), wb.tolist(), lam.tolist(), strict=True):
            tot[u] += wvals[wi] * int(la)
        bad = [u for u in range(len(U)) if tot[u] != 0]
        if bad:
            return "failed", len(U), f"the output bends along {U[bad[0]].tolist()}"
        neg = np.zeros(len(L), dtype=bool)
        neg[np.nonzero(bend_rows)[0][first < 0]] = True  # relu(-lam K) = lam relu(K) - lam K
        lin_rows = lin_rows | neg
        nh = len(U)
    else:
        nh = 0
    for i, v in enumerate(wvals):
        sel = lin_rows & (wk == i)
        if v != 0 and sel.any():
            s = L[sel].sum(axis=0)
            linear = [a + v * int(b) for a, b in zip(linear, s.tolist(), strict=True)]
    want = [Fraction(scale) if i == top else Fraction(0) for i in range(n)]
    if linear != want:
        return "failed", nh, f"the output is {[str(v / scale) for v in linear]} . x"
    return "ok", nh, None


@dataclass(frozen=True)
class MaxNCertificate(Result):
    """Exact proof (or refutation) that a network equals max of n inputs on R^n
    (:func:`certify_max_cones`).  ``cones_checked`` ordering cones were checked exactly;
    ``cones_covered`` = n! when the symmetry proof (or the full check) covers R^n.

    Example:
        >>> A1 = np.array([[1, -1], [-1, 1], [1, 1], [-1, -1]])
        >>> A2 = np.array([[1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
        >>> c = certify_arrays(A1, A2, [Fraction(1, 2)] * 2 + [Fraction(-1, 2)], 1, 2)
        >>> c.status, c.cones_checked, c.cones_covered, c.by_symmetry
        ('certified', 1, 2, True)
    """

    n: int
    status: str  # "certified" | "failed" (proved different from max) | "not applicable"
    widths: tuple[int, ...]
    hidden_layers: int
    cones_checked: int
    cones_covered: int
    by_symmetry: bool
    hyperplanes_checked: int
    reason: str | None


def _subcones(order: Sequence[int], n: int) -> list[np.ndarray]:
    """The ordering cone ``x_o0 >= ... >= x_o(n-1)`` as two simplicial cones (split by the
    sign of sum x, which the carrying neurons need): rays ``+-1`` and
    ``p_m = r_m - (m/n) 1`` with ``r_m`` the indicator of the m largest (integers: scaled by n)."""
    P = np.zeros((n - 1, n), dtype=np.int64)
    for m in range(n - 1):
        P[m, :] = -(m + 1)
        P[m, list(order[: m + 1])] += n
    one = np.ones((1, n), dtype=np.int64)
    return [np.concatenate([one, P]), np.concatenate([-one, P])]


def _certify(A1: np.ndarray, A2: np.ndarray, w: list[Fraction], scale: int, n: int,
             widths: tuple[int, ...], use_symmetry: bool | None) -> MaxNCertificate:
    base = dict(n=n, widths=widths, hidden_layers=2)
    sym = is_symmetric_int(A1, A2, w, n) if use_symmetry is not False else False
    if use_symmetry and not sym:
        return MaxNCertificate(**base, status="not applicable", cones_checked=0, cones_covered=0,
                               by_symmetry=False, hyperplanes_checked=0,
                               reason="the network is not exactly symmetric")
    orders = [tuple(range(n))] if sym else itertools.permutations(range(n))
    nh = 0
    k = 0
    for k, order in enumerate(orders):
        for half, rays in zip(("sum x >= 0", "sum x <= 0"), _subcones(order, n), strict=True):
            verdict, h, why = cone_check_int(A1, A2, w, scale, rays, order[0])
            nh += h
            if verdict != "ok":
                where = f"the cone x_{list(order)} decreasing, {half}"
                return MaxNCertificate(**base, status=verdict, cones_checked=k + 1, cones_covered=k,
                                       by_symmetry=sym, hyperplanes_checked=nh,
                                       reason=f"{why} in {where}")
    return MaxNCertificate(**base, status="certified", cones_checked=k + 1,
                           cones_covered=math.factorial(n), by_symmetry=sym,
                           hyperplanes_checked=nh, reason=None)


def certify_arrays(A1: np.ndarray, A2: np.ndarray, w: Sequence[object], scale: int, n: int,
                   use_symmetry: bool | None = None) -> MaxNCertificate:
    """:func:`relulab.construct.certify_max_cones` for the bias-free network ``f(x) = sum_k w_k
    relu(A2_k relu(A1 x)) / scale`` given by integer arrays (first layer A1, second layer
    numerators A2, output weights w): for networks too large for Fraction arrays.

    Example:
        >>> A1 = np.array([[1, -1], [-1, 1], [1, 1], [-1, -1]])
        >>> A2 = np.array([[1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
        >>> certify_arrays(A1, A2, [Fraction(1, 2)] * 2 + [Fraction(-1, 2)], 1, 2).status
        'certified'
    """
    w = [Fraction(v) for v in w]
    return _certify(A1, A2, w, scale, n, (A1.shape[0], A2.shape[0]), use_symmetry)


def min_weight_support(w: np.ndarray, A, b: np.ndarray, time_limit: float | None,
                       zero: float = 1e-9) -> tuple[str, list[int]]:  # tol: LP zeros
    """A vertex of ``A x = b`` minimising ``sum w_j |x_j|`` (HiGHS, x split as x+ - x-),
    returned as its status and its support: the columns whose value is not an LP zero
    (relative to the largest). Status "infeasible" (HiGHS's "infeasible or unbounded" is
    read as infeasible: the objective is >= 0 on x+, x- >= 0), "unknown" (time limit or a
    solver failure) or "optimal". The support is re-solved exactly by the callers.

    Example:
        >>> from scipy import sparse
        >>> A = sparse.csr_matrix(np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]))
        >>> min_weight_support(np.array([1.0, 1.0, 1.0]), A, np.array([1.0, 1.0]), None)
        ('optimal', [1])
    """
    from scipy import sparse

    from ..lp import solve

    m = A.shape[1]
    res = solve(np.concatenate([w, w]), A_eq=sparse.hstack([A, -A]).tocsr(), b_eq=b,
                lb=np.zeros(2 * m), time_limit=time_limit)
    if res.status in ("infeasible", "infeasible_or_unbounded"):
        return "infeasible", []
    if res.status != "optimal" or res.x is None:
        return "unknown", []
    x = res.x[:m] - res.x[m:]
    top = max(1.0, float(np.abs(x).max()))
    return "optimal", [j for j in range(m) if abs(x[j]) > zero * top]


def pair_first_layer(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The structured first layer both max_n two-hidden-layer families share: integer rows
    ``relu(x_i - x_j)`` for every ordered pair ``i != j`` (in row-major order), then
    ``relu(sum x)`` and ``relu(-sum x)``; returned with the pairs' ``i`` and ``j`` indices.

    Example:
        >>> A1, pi, pj = pair_first_layer(3)
        >>> A1.shape, A1[0].tolist(), A1[-1].tolist(), (int(pi[0]), int(pj[0]))
        ((8, 3), [1, -1, 0], [-1, -1, -1], (0, 1))
    """
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
    A1 = np.zeros((len(pairs) + 2, n), dtype=np.int64)
    for r, (i, j) in enumerate(pairs):
        A1[r, i], A1[r, j] = 1, -1
    A1[-2, :], A1[-1, :] = 1, -1
    pi = np.array([i for i, _ in pairs], dtype=np.int64)
    pj = np.array([j for _, j in pairs], dtype=np.int64)
    return A1, pi, pj


def solve_rational(M: list[list[Fraction]], k: int) -> list[Fraction] | None:
    """The unique solution of the augmented rational system ``M`` (rows ``[a_1..a_k, b]``)
    by Gauss-Jordan elimination over Q, or None when it is inconsistent or not uniquely
    solvable: the exact re-solve both max_n searches apply to an LP vertex's support.

    Example:
        >>> F = Fraction
        >>> solve_rational([[F(1), F(1), F(3)], [F(1), F(-1), F(1)], [F(2), F(0), F(4)]], 2)
        [Fraction(2, 1), Fraction(1, 1)]
        >>> solve_rational([[F(1), F(1), F(3)]], 2) is None      # not unique
        True
    """
    piv: list[tuple[int, list[Fraction]]] = []
    for row in M:
        for pc, pr in piv:
            if row[pc] != 0:
                f = row[pc]
                row = [a - f * b for a, b in zip(row, pr, strict=True)]
        lead = next((j for j in range(k) if row[j] != 0), None)
        if lead is None:
            if row[k] != 0:
                return None  # inconsistent
            continue
        pv = row[lead]
        row = [a / pv for a in row]
        piv = [(pc, [a - pr[lead] * b for a, b in zip(pr, row, strict=True)] if pr[lead] else pr)
               for pc, pr in piv]
        piv.append((lead, row))
    if len(piv) < k:
        return None
    x = [Fraction(0)] * k
    for pc, pr in piv:
        x[pc] = pr[k]
    return x
