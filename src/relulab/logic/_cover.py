"""Exact certificates that linear regions found in floating point cover a box.

A float region enumeration can miss a region thinner than its tolerances (the sliver
``1 - 1e-12 <= x <= 1`` of ``relu(x - (1 - 1e-12))``) and then report a region that
is slightly too large in its place; float volumes cannot tell.  Here every region found
is re-described exactly, as the polytope ``P = {x in box : s_i z_i(x) >= 0}`` of the
exact activation pattern at a rational point strictly inside it (``z_i`` the neuron's
pre-activation, affine on ``P``).  Its float vertices are snapped to exact points by
solving the rows tight there in rational arithmetic, and only points that satisfy every
row of ``P`` exactly are kept.  :func:`volume_lower_bound` then bounds ``vol(P)`` from
below, exactly, by the pyramid recursion over faces; the bound is ``vol(P)`` when the
snapped points are all of ``P``'s vertices.  Regions with different exact patterns have
disjoint interiors, so when the bounds add up to the box's volume the closed regions
cover the box (what they miss would be an open set of volume zero: empty).

Example:
    >>> from fractions import Fraction as F
    >>> import numpy as np
    >>> rows = int_rows([((F(-1), F(0)), F(0)), ((F(0), F(-1)), F(0)), ((F(3), F(3)), F(1))])
    >>> pts = snap_vertices(np.array([[0, 0], [1 / 3, 0], [0, 1 / 3]]), rows)  # float vertices
    >>> pts[1], volume_lower_bound(pts, rows)
    ((Fraction(0, 1), Fraction(1, 3)), Fraction(1, 18))
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from ..network import Network

__all__ = ["Row", "IRow", "exact_cell", "box_rows", "int_rows", "snap_vertices", "volume_lower_bound"]

Row = tuple[tuple[Fraction, ...], Fraction]  # (a, beta): the constraint a . x <= beta
Point = tuple[Fraction, ...]

# A row counts as tight at a float vertex when its residual is below this x its scale.
SNAP_RTOL = 1e-6  # tol: only picks candidate rows; every snapped point is checked exactly
# At most this many d-subsets of tight rows are solved per float vertex (degenerate ones).
MAX_SUBSETS = 256


def exact_cell(H: Network, x: Point) -> tuple[list[bool], list[bool], list[Row]] | None:
    """The exact activation pattern of ``H`` at ``x`` and the rows of its region.

    Returns ``(signs, degenerate, rows)``: per hidden neuron its sign at ``x`` and
    whether its pre-activation is identically zero near ``x``; ``rows`` ``a . y <= beta``
    (one per non-degenerate neuron) describe the closure of the set where the pattern is
    the same.  None when ``x`` lies on a kink (some pre-activation is zero there but not
    identically zero).
    """
    d = len(x)
    A = np.array([[Fraction(int(i == j)) for j in range(d)] for i in range(d)], dtype=object)
    c = np.array([Fraction(0)] * d, dtype=object)
    xv = np.array(x, dtype=object)
    signs: list[bool] = []
    degen: list[bool] = []
    rows: list[Row] = []
    for W, b in zip(H.weights[:-1], H.biases[:-1], strict=True):
        A, c = W @ A, W @ c + b
        z = A @ xv + c
        keep = []
        for i, zi in enumerate(z):
            if zi == 0:
                if any(v != 0 for v in A[i]):
                    return None  # on a kink
                degen.append(True)
                signs.append(False)
                keep.append(False)
                continue
            on = bool(zi > 0)
            degen.append(False)
            signs.append(on)
            keep.append(on)
            # active: z >= 0, i.e. -A_i y <= c_i; inactive: z <= 0, i.e. A_i y <= -c_i
            a = tuple(Fraction(-v if on else v) for v in A[i])
            rows.append((a, Fraction(c[i] if on else -c[i])))
        mask = np.array(keep, dtype=bool)
        A = np.where(mask[:, None], A, Fraction(0))
        c = np.where(mask, c, Fraction(0))
    return signs, degen, rows


def box_rows(lo: Sequence[Fraction], hi: Sequence[Fraction]) -> list[Row]:
    """The rows ``-y_i <= -lo_i`` and ``y_i <= hi_i`` of the box ``[lo, hi]``."""
    d = len(lo)
    out: list[Row] = []
    for i in range(d):
        e = tuple(Fraction(int(i == j)) for j in range(d))
        out.append((tuple(-v for v in e), -Fraction(lo[i])))
        out.append((e, Fraction(hi[i])))
    return out


# -- integer arithmetic: rows and points are scaled to integers (Fractions are slow)
IRow = tuple[tuple[int, ...], int]  # (a, beta) with a . y <= beta, a != 0, gcd 1
IPoint = tuple[tuple[int, ...], int]  # (numerators, denominator > 0)


def int_rows(rows: list[Row]) -> list[IRow]:
    """The rows scaled to coprime integers, duplicates and rows without ``y`` dropped
    (``0 <= beta`` holds at the point the region was built from)."""
    out: dict[IRow, None] = {}
    for a, beta in rows:
        if all(v == 0 for v in a):
            continue
        den = math.lcm(*(Fraction(v).denominator for v in (*a, beta)))
        ints = [int(v * den) for v in (*a, beta)]
        g = math.gcd(*ints)
        ints = [v // g for v in ints]
        out[(tuple(ints[:-1]), ints[-1])] = None
    return list(out)


def _det(M: list[list[int]]) -> int:
    """Determinant of an integer matrix (Bareiss: exact, fraction-free)."""
    A = [list(r) for r in M]
    n = len(A)
    sign, prev = 1, 1
    for k in range(n - 1):
        if A[k][k] == 0:
            swap = next((r for r in range(k + 1, n) if A[r][k] != 0), None)
            if swap is None:
                return 0
            A[k], A[swap] = A[swap], A[k]
            sign = -sign
        for i in range(k + 1, n):
            for j in range(k + 1, n):
                A[i][j] = (A[i][j] * A[k][k] - A[i][k] * A[k][j]) // prev
        prev = A[k][k]
    return sign * A[n - 1][n - 1] if n else 1


def _solve(M: list[list[int]], rhs: list[int]) -> IPoint | None:
    """The solution of the square integer system ``M y = rhs`` (Cramer), None if singular."""
    D = _det(M)
    if D == 0:
        return None
    nums = [_det([[*r[:i], v, *r[i + 1:]] for r, v in zip(M, rhs, strict=True)]) for i in range(len(M))]
    if D < 0:
        D, nums = -D, [-v for v in nums]
    g = math.gcd(D, *nums)
    return tuple(v // g for v in nums), D // g


def _feasible(u: IPoint, rows: list[IRow]) -> bool:
    num, den = u
    return all(sum(ai * ni for ai, ni in zip(a, num, strict=True)) <= beta * den for a, beta in rows)


def _tight(u: IPoint, row: IRow) -> bool:
    num, den = u
    return sum(ai * ni for ai, ni in zip(row[0], num, strict=True)) == row[1] * den


def _basis(vectors: list[Sequence[int]]) -> list[int]:
    """Indices of the first maximal linearly independent subset of integer ``vectors``."""
    echelon: list[tuple[int, list[int]]] = []  # (pivot column, row)
    keep = []
    for t, v in enumerate(vectors):
        r = list(v)
        for col, e in echelon:
            if r[col]:
                r = [x * e[col] - r[col] * y for x, y in zip(r, e, strict=True)]
        piv = next((c for c, x in enumerate(r) if x), None)
        if piv is None:
            continue
        g = math.gcd(*r)
        echelon.append((piv, [x // g for x in r]))
        keep.append(t)
    return keep


def snap_vertices(vertices: np.ndarray, irows: list[IRow]) -> list[Point]:
    """Exact points of ``{y : a . y <= beta for all rows}`` (rows from :func:`int_rows`)
    near the float ``vertices``.

    For each vertex, the rows tight there (up to :data:`SNAP_RTOL`) are solved exactly:
    first ``d`` independent ones; when that point is feasible and every tight row passes
    exactly through it, it is the only exact vertex there; otherwise every ``d``-subset of
    the tight rows (up to :data:`MAX_SUBSETS`) is solved.  Only points that satisfy all
    rows exactly are returned.
    """
    V = np.asarray(vertices, dtype=float)
    if V.size == 0 or not irows:
        return []
    d = V.shape[1]
    Af = np.array([[float(v) for v in a] for a, _ in irows])
    bf = np.array([float(beta) for _, beta in irows])
    scale = 1.0 + np.abs(Af).sum(axis=1) * (1.0 + float(np.abs(V).max())) + np.abs(bf)
    out: set[IPoint] = set()
    for v in V:
        res = np.abs(Af @ v - bf) / scale
        tight = [int(i) for i in np.argsort(res, kind="stable") if res[i] <= SNAP_RTOL]
        first = [tight[t] for t in _basis([irows[i][0] for i in tight])]
        if len(first) < d:
            continue
        u = _solve([list(irows[i][0]) for i in first], [irows[i][1] for i in first])
        if u is not None and _feasible(u, irows) and all(_tight(u, irows[i]) for i in tight):
            out.add(u)
            continue
        for sub in itertools.islice(itertools.combinations(tight, d), MAX_SUBSETS):
            u = _solve([list(irows[i][0]) for i in sub], [irows[i][1] for i in sub])
            if u is not None and u not in out and _feasible(u, irows):
                out.add(u)
    return sorted(tuple(Fraction(n, den) for n in num) for num, den in out)


def _cross(vectors: list[list[int]]) -> list[int]:
    """The integer normal of ``j - 1`` independent vectors in Z^j (signed minors)."""
    j = len(vectors[0])
    return [(-1) ** k * _det([[*r[:k], *r[k + 1:]] for r in vectors]) for k in range(j)]


def volume_lower_bound(points: list[Point], irows: list[IRow]) -> Fraction:
    """A lower bound, exact in rational arithmetic, of the volume of the polytope
    ``P = {y : a . y <= beta for all rows}`` (rows from :func:`int_rows`) from points of
    ``P``: the volume of their convex hull counted over the faces of ``P`` (equal to
    ``vol(P)`` when ``points`` holds all of ``P``'s vertices).  Pyramids from one point
    over distinct faces are interior-disjoint and lie in ``P``: nothing counts twice."""
    if not points:
        return Fraction(0)
    d = len(points[0])
    # Integer coordinates: scale by the common denominator L (volumes by L^d).
    L = math.lcm(*(Fraction(v).denominator for p in points for v in p))
    P = [tuple(int(v * L) for v in p) for p in points]
    if len(P) < d + 1 or len(_basis([[a - b for a, b in zip(p, P[0], strict=True)] for p in P[1:]])) < d:
        return Fraction(0)
    facets: list[frozenset[int]] = []
    for a, beta in irows:
        T = frozenset(i for i, p in enumerate(P) if sum(x * y for x, y in zip(a, p, strict=True)) == beta * L)
        if len(T) >= d and T not in facets:
            facets.append(T)
    ranks: dict[frozenset[int], int] = {}
    memo: dict[tuple[frozenset[int], tuple[int, ...]], Fraction] = {}
    vol = _face_volume(frozenset(range(len(P))), tuple(range(d)), P, facets, ranks, memo)
    return vol / L**d


def _affine_rank(S: frozenset[int], P: list[tuple[int, ...]], ranks: dict) -> int:
    if S not in ranks:
        idx = sorted(S)
        p0 = P[idx[0]]
        ranks[S] = len(_basis([[a - b for a, b in zip(P[i], p0, strict=True)] for i in idx[1:]]))
    return ranks[S]


def _face_volume(S: frozenset[int], K: tuple[int, ...], P: list[tuple[int, ...]],
                 facets: list[frozenset[int]], ranks: dict, memo: dict) -> Fraction:
    """Volume of ``conv(S)`` projected onto the coordinates ``K`` (one-to-one on the
    affine hull of ``S``, which has dimension ``len(K)``), counted over the faces
    ``S & T`` (``T`` a facet of ``P``) as pyramids from a point of ``S``."""
    key = (S, K)
    if key in memo:
        return memo[key]
    j = len(K)
    pts = {i: tuple(P[i][k] for k in K) for i in S}
    if j == 1:
        vals = [p[0] for p in pts.values()]
        memo[key] = Fraction(max(vals) - min(vals))
        return memo[key]
    # Pyramids from one point of S (the apex) over the faces S & T that miss it.
    apex = min(S)
    subs: list[frozenset[int]] = []
    for T in facets:
        Sp = S & T
        # (the rank of points is the same in the coordinates K: the projection is 1-1)
        if (apex not in Sp and len(Sp) >= j and Sp not in subs
                and _affine_rank(Sp, P, ranks) == j - 1):
            subs.append(Sp)
    total = Fraction(0)
    for Sp in subs:
        idx = sorted(Sp)
        p0 = pts[idx[0]]
        diffs = [[a - b for a, b in zip(pts[i], p0, strict=True)] for i in idx[1:]]
        n = _cross([diffs[t] for t in _basis(diffs)])
        k = next(t for t in range(j) if n[t] != 0)
        # height of the pyramid x |n| / |n_k| (the base is measured in the coordinates K - k)
        gap = abs(sum(a * (b - c) for a, b, c in zip(n, p0, pts[apex], strict=True)))
        total += Fraction(gap, j * abs(n[k])) * _face_volume(Sp, K[:k] + K[k + 1:], P, facets, ranks, memo)
    memo[key] = total
    return total
