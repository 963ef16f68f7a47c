"""The exhaustive item family for the two-hidden-layer max_n search, and exact evaluation
of the (large) networks it yields.

:mod:`relulab.construct.maxn` searches max_n among second-layer neurons
``relu(sum(s items) - sum(s items))`` (items: inputs ``x_i`` and pair maxima ``m_ij``).
Its default family (s = 2) stops at n = 6, and a random sample of s = 3 terms gave
n = 7.  Here the s-item terms are listed **exhaustively, one per S_k-orbit**
(:func:`item_orbits`): the first side P runs over orbit representatives of s-multisets
of items, the second side N over every s-multiset, and a term is kept when it uses all k
coordinates and its invariant (below) is new.  For s = 3 and n = 8 this is 6,309 orbits
(s = 2 and 3, k <= 8) on 1,428 hyperplanes, and HiGHS finds the system feasible; the
neuron-minimising vertex has 36 orbits (306,252 second-layer neurons), which survive the
exact re-solve and the exact cone certificate (see docs/construct.md).

The orbit invariant is a one-round colour refinement of the doubled integer form
``(2C, 2v)`` of the term (each coordinate coloured by its v entry and its C row, then by
the colours of its neighbours): equal orbits always get equal invariants; two distinct
orbits with the same invariant are merged, which can only shrink the family (a smaller
candidate set, never a wrong network: every solution is checked exactly).

:func:`eval_max_pairs` evaluates a stored solution's network exactly on rational inputs
without building Fraction arrays (integer-valued float64 products, with bounds proving
every product and sum exact), for networks with hundreds of thousands of neurons.

Example:
    >>> len(item_orbits(2, 4))
    70
    >>> from relulab.construct import stored_max_pairs
    >>> eval_max_pairs(4, stored_max_pairs(4), [[3, -1, 7, 2]])
    [Fraction(7, 1)]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction

import numpy as np

from .maxmin import ConstructionError
from .maxn import MaxPairsSolution, PairTerm, _items, _pairs_arrays

__all__ = ["item_orbits", "item_family", "segment_orbits", "matching_orbits", "eval_max_pairs"]

_FLOAT_EXACT = 2**53  # integers of absolute value below this add and multiply exactly in float64
_CHUNK = 2 * 10**7  # entries of one (inputs x neurons) block of the evaluation (memory bound)


def _invariant(P: tuple, N: tuple, k: int) -> tuple:
    """An S_k-invariant of the term ``sum P - sum N`` (one round of colour refinement)."""
    C, v = PairTerm(k, P, N).canonical()
    col = [(int(v[i]), tuple(sorted(C[i].tolist()))) for i in range(k)]
    ref = [(col[i], tuple(sorted((int(C[i, j]), col[j]) for j in range(k) if j != i)))
           for i in range(k)]
    return tuple(sorted(ref))


def item_orbits(s: int, k: int) -> list[PairTerm]:
    """Every term with exactly ``s`` items on each side (multisets, no item on both
    sides) using all ``k`` coordinates, one per invariant class of its S_k-orbit
    (module docstring).

    Example:
        >>> [str(t) for t in item_orbits(1, 3)]
        ['relu(x0 - m12)', 'relu(m01 - x2)', 'relu(m01 - m02)']
    """
    if not isinstance(s, (int, np.integer)) or not isinstance(k, (int, np.integer)) or s < 1 or k < 1:
        raise ConstructionError(f"item_orbits: s and k must be integers >= 1, got s={s!r}, k={k!r}")
    if k > 2 * 2 * s:
        return []  # 2s items cover at most 4s coordinates
    items = _items(k)
    return _two_sided_orbits(lambda: itertools.combinations_with_replacement(items, s), k)


def _two_sided_orbits(sides: Callable[[], Iterable[tuple]], k: int) -> list[PairTerm]:
    """Terms ``sum P - sum N`` with P and N from ``sides()`` (P up to the invariant of
    its own S_k-orbit), no item on both sides, covering all k coordinates; one per
    invariant class."""
    reps: dict[tuple, tuple] = {}
    for P in sides():
        reps.setdefault(_invariant(P, (), k), P)
    out: dict[tuple, PairTerm] = {}
    for P in reps.values():
        cov = {c for it in P for c in it[1:]}
        taken = set(P)
        for N in sides():
            if taken.intersection(N) or len(cov.union(c for it in N for c in it[1:])) != k:
                continue
            out.setdefault(_invariant(P, N, k), PairTerm(k, P, N))
    return list(out.values())


def segment_orbits(s: int, k: int) -> list[PairTerm]:
    """Every term with ``s`` *distinct* pair maxima on each side and no input item
    (``relu(m_a1b1 + ... - m_c1d1 - ...)``, no pair on both sides) using all ``k``
    coordinates, one per invariant class of its S_k-orbit: a red and a blue simple graph
    with s edges each, edge-disjoint, covering the k vertices.  With ``item_family(n,
    (2, 3))`` the s = 4 orbits on all n coordinates contain max_9 (3,584 orbits) and max_10
    (1,929), where the s <= 3 items alone provably do not (``experiments/maxn_orbits.py``).

    Example:
        >>> [str(t) for t in segment_orbits(1, 4)]
        ['relu(m01 - m23)']
        >>> len(segment_orbits(2, 6))
        8
    """
    if not isinstance(s, (int, np.integer)) or not isinstance(k, (int, np.integer)) or s < 1 or k < 2:
        raise ConstructionError(f"segment_orbits: need integers s >= 1 and k >= 2, got s={s!r}, k={k!r}")
    if k > 4 * s:
        return []  # 2s segments cover at most 4s coordinates
    edges = [("m", i, j) for i in range(k) for j in range(i + 1, k)]
    return _two_sided_orbits(lambda: itertools.combinations(edges, s), k)


def _component_types(s: int) -> list[tuple[str, int, int, int, int]]:
    """Connected 2-edge-coloured graphs with at most one red and one blue edge at each
    vertex and at most s edges of each colour: alternating paths (e >= 1 edges; for odd e
    red-heavy or blue-heavy) and alternating cycles (even e >= 4), as (kind, edges, red,
    blue, vertices)."""
    out = []
    for e in range(1, 2 * s + 1):
        if e % 2 == 0:
            out.append(("path", e, e // 2, e // 2, e + 1))
            if e >= 4:
                out.append(("cycle", e, e // 2, e // 2, e))
        else:
            out.append(("path+", e, (e + 1) // 2, (e - 1) // 2, e + 1))  # starts and ends red
            out.append(("path-", e, (e - 1) // 2, (e + 1) // 2, e + 1))  # starts and ends blue
    return [c for c in out if c[2] <= s and c[3] <= s]


def _lay_out(comps: Sequence[tuple[str, int, int, int, int]]) -> tuple[tuple, tuple]:
    """Red and blue edge lists of the components placed on consecutive vertices."""
    red, blue = [], []
    v0 = 0
    for kind, e, _, _, nv in comps:
        verts = list(range(v0, v0 + nv))
        first_red = kind != "path-"
        for i in range(e):
            a, b = verts[i], verts[(i + 1) % nv]
            (red if (i % 2 == 0) == first_red else blue).append(("m", min(a, b), max(a, b)))
        v0 += nv
    return tuple(sorted(red)), tuple(sorted(blue))


def matching_orbits(s: int, k: int) -> list[PairTerm]:
    """Every term ``relu(sum of s pair maxima - sum of s pair maxima)`` whose two sides
    are **matchings** (pairwise disjoint pairs) and which uses all ``k`` coordinates, one per
    S_k-orbit, listed exactly: the red and blue edges form disjoint alternating paths and
    cycles, and an orbit is a multiset of such components (kind, length).  A small,
    structured corner of :func:`segment_orbits` whose columns have few hyperplanes
    (about 1,500 at s = 5 on 11 coordinates against about 20,000 for a random 5 + 5 term).

    Example:
        >>> [str(t) for t in matching_orbits(1, 4)]
        ['relu(m01 - m23)']
        >>> len(matching_orbits(2, 6)), len(segment_orbits(2, 6))
        (3, 8)
    """
    if not isinstance(s, (int, np.integer)) or not isinstance(k, (int, np.integer)) or s < 1 or k < 2:
        raise ConstructionError(f"matching_orbits: need integers s >= 1 and k >= 2, got s={s!r}, k={k!r}")
    types = _component_types(int(s))
    out: list[PairTerm] = []

    def grow(start: int, comps: list, red: int, blue: int, verts: int) -> None:
        if red == s and blue == s:
            if verts == k:
                out.append(PairTerm(k, *_lay_out(comps)))
            return
        for i in range(start, len(types)):
            _, _, r, b, nv = types[i]
            if red + r <= s and blue + b <= s and verts + nv <= k:
                grow(i, comps + [types[i]], red + r, blue + b, verts + nv)

    grow(0, [], 0, 0, 0)
    return out


def item_family(n: int, masses: Sequence[int] = (2, 3)) -> list[PairTerm]:
    """The candidate family of :func:`relulab.construct.search_max_pairs` for n inputs:
    :func:`item_orbits` for every s in ``masses`` and every k = 2..n.  ``(2, 3)`` with
    n = 8 gives the 6,309 orbits of the stored max_8 solution's search.

    Example:
        >>> len(item_family(4, masses=(1,)))
        7
    """
    if not isinstance(n, (int, np.integer)) or n < 2:
        raise ConstructionError(f"item_family: n must be an integer >= 2, got {n!r}")
    if not masses or any(not isinstance(s, (int, np.integer)) or s < 1 for s in masses):
        raise ConstructionError(f"item_family: masses must be integers >= 1, got {masses!r}")
    return [t for s in masses for k in range(2, n + 1) for t in item_orbits(int(s), k)]


def _as_integers(X: Sequence[Sequence[object]], n: int, caller: str = "eval_max_pairs") -> tuple[np.ndarray, int]:
    """Rows of rationals as one integer matrix over a common denominator (errors name
    ``caller``)."""
    rows = [[Fraction(v) for v in r] for r in X]
    if not rows or any(len(r) != n for r in rows):
        raise ConstructionError(f"{caller}: X must be a non-empty list of rows of {n} numbers")
    den = math.lcm(*(v.denominator for r in rows for v in r))
    ints = [[int(v * den) for v in r] for r in rows]
    big = max(abs(v) for r in ints for v in r)
    if big >= 2**40:
        raise ConstructionError(f"{caller}: inputs over a common denominator reach {big}; "
                                f"too large for the exact integer evaluation (< 2**40)")
    return np.array(ints, dtype=np.int64), den


def eval_max_pairs(n: int, solution: MaxPairsSolution | Sequence[tuple[PairTerm, Fraction]],
                   X: Sequence[Sequence[object]]) -> list[Fraction]:
    """Exact outputs of ``max_pairs_network(n, solution)`` on the rows of X (rationals),
    from the integer arrays its builder uses, vectorised: every float64 product and sum
    below is of integers bounded below 2**53 (checked), so nothing is rounded.

    Example:
        >>> from relulab.construct import stored_max_pairs
        >>> eval_max_pairs(5, stored_max_pairs(5), [[Fraction(1, 3), 2, -5, 2, 0]])
        [Fraction(2, 1)]
    """
    Xi, den = _as_integers(X, n)
    A1, N2, outs = _pairs_arrays(n, solution)  # f(x) = sum_k outs_k relu(N2_k relu(A1 x)) / (2n)
    H1 = np.maximum(Xi @ A1.T, 0)
    h1max = int(H1.max(initial=0))
    n2sum = int(np.abs(N2).sum(axis=1).max(initial=0))
    gmax = h1max * n2sum
    if gmax >= _FLOAT_EXACT:
        raise ConstructionError("eval_max_pairs: second-layer values could exceed 2**53; "
                                "scale the inputs down")
    groups: dict[Fraction, list[int]] = {}
    for k, w in enumerate(outs):
        if w != 0:
            groups.setdefault(Fraction(w), []).append(k)
    H1f = H1.astype(np.float64)
    tot = [Fraction(0)] * len(Xi)
    step = max(1, _CHUNK // max(1, len(Xi)))
    for w, idx in groups.items():
        if gmax * len(idx) >= _FLOAT_EXACT:
            raise ConstructionError("eval_max_pairs: a sum of second-layer values could exceed "
                                    "2**53; scale the inputs down")
        acc = np.zeros(len(Xi), dtype=np.float64)
        for a in range(0, len(idx), step):
            rows = N2[idx[a:a + step]].astype(np.float64)
            acc += np.maximum(H1f @ rows.T, 0.0).sum(axis=1)
        tot = [t + w * int(v) for t, v in zip(tot, acc.tolist(), strict=True)]
    return [t / (2 * n * den) for t in tot]
