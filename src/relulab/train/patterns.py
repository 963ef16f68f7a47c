"""Activation patterns of data: every one of them when that is provable, else a sample.

A neuron ``relu(w . x~)`` on data rows ``x~_j`` (inputs with a ones column for the bias)
sees the pattern ``1[Xa w >= 0]``.  The patterns are the regions of the central hyperplane
arrangement ``{w : x~_j . w = 0}`` in weight space.  The convex reformulation over *all* of
them is the global optimum of the non-convex two-layer problem, so knowing that a pattern
list is complete turns "optimal for the sampled patterns" into "globally optimal".

* One or two augmented dimensions (univariate data, with or without a bias; 2-D data
  without): the regions are the two half-lines, or the arcs of the circle between
  consecutive critical angles, enumerated exactly, repeated points included.
* More dimensions, data in general position (every ``d - 1`` rows independent and no other
  row through their common null ray): every region is a pointed cone whose extreme rays are
  null rays of ``d - 1`` rows, and around such a ray the ``2^(d-1)`` sign choices of those
  rows are all regions.  Enumerating the rays gives every pattern, and each one comes with
  a generator that realises it strictly.  Completeness is proved by counting: a central
  arrangement of ``n`` hyperplanes of rank ``d`` in general position has exactly
  ``2 sum_{k<d} C(n-1, k)`` regions.
* Otherwise (degenerate data, or too many rays to enumerate): random gates, not complete.

Example:
    >>> import numpy as np
    >>> Xa = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 1.0], [0.0, 1.0, 1.0], [1.0, 1.2, 1.0]])
    >>> M, G, complete = activation_patterns(Xa, 100)
    >>> complete, M.shape[1] == region_count(4, 3) - 1   # the all-off pattern is dropped
    (True, True)
"""

from __future__ import annotations

import time
from itertools import combinations, product
from math import comb

import numpy as np

from ..limits import check_bytes
from ..tolerance import MATCH_RTOL, TINY, or_default

__all__ = ["activation_patterns", "enumerate_patterns", "facet_rows", "hyperplane_classes",
           "region_count", "sample_patterns"]


def region_count(n: int, d: int) -> int:
    """Regions of a central arrangement of ``n`` hyperplanes in general position in R^d.

    Example:
        >>> region_count(2, 2), region_count(3, 2), region_count(3, 3)   # 2n lines through 0 in R^2
        (4, 6, 8)
    """
    return 2 * sum(comb(n - 1, k) for k in range(min(d, n)))


def _drop_all_off(M: np.ndarray, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keep = M.any(axis=0)
    return M[:, keep], G[keep]


def _unique_columns(M: np.ndarray, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    M, idx = np.unique(M, axis=1, return_index=True)
    return M, G[idx]


def sample_patterns(Xa: np.ndarray, max_patterns: int, seed: int = 0,
                    tries: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Distinct activation patterns ``1[Xa g >= 0]`` (the all-off one dropped) and their
    generators ``g``.  In two (augmented) dimensions the full set of patterns is
    enumerated exactly (one generator per open arc between consecutive critical angles).

    Returns ``(masks (n, P) bool, gates (P, d))``.

    Example:
        >>> Xa = np.array([[-1.0, 1.0], [0.0, 1.0], [1.0, 1.0]])
        >>> M, G = sample_patterns(Xa, 100); M.shape[0], M.shape[1] <= 6
        (3, True)
    """
    M, G, _ = _sample_until(Xa, max_patterns, seed, tries, None)
    return M, G


# directions per block of the sampler: its sign matrix is n x block booleans
_SAMPLE_BLOCK = 4096
# A block holds at most this many (point, direction) entries: with 12,000 points one
# 4,096-direction block took 0.6-2.9 s before the first deadline check (a 0.2 s limit
# ended at 4-6 s), so large data gets narrower blocks
_SAMPLE_ENTRIES = 2**22


def _sample_until(Xa: np.ndarray, max_patterns: int, seed: int, tries: int | None,
                  deadline: float | None) -> tuple[np.ndarray, np.ndarray, bool]:
    """:func:`sample_patterns` that stops drawing directions at ``deadline`` (a
    ``time.perf_counter()`` value, None: none); the third value says it stopped early.

    The directions are drawn block by block from one random stream (the same directions
    as one draw) and their patterns deduplicated block by block (bit-packed) and merged as
    they grow, which yields exactly the distinct patterns of one global pass over the
    directions, in the same order, with the same generators (each pattern's first
    direction): the sample does not depend on the block size."""
    n, d = Xa.shape
    rng = np.random.default_rng(seed)
    if d == 2:
        ang = np.arctan2(Xa[:, 1], Xa[:, 0])
        crit = np.concatenate([ang + np.pi / 2, ang - np.pi / 2])
        crit = np.sort(np.mod(crit, 2 * np.pi))
        crit = np.unique(crit)
        mids = 0.5 * (crit + np.roll(crit, -1))
        mids[-1] = 0.5 * (crit[-1] + crit[0] + 2 * np.pi)
        G = np.column_stack([np.cos(mids), np.sin(mids)])
    else:
        tries = tries or max(2000, 50 * max_patterns)
        G = None   # drawn block by block (the same stream as one draw): 50 million
        # directions drawn up front took 3.7 s and 1.2 GB before any deadline check
    total = G.shape[0] if G is not None else tries
    # kept: the distinct packed patterns so far with their first directions, merged (a
    # unique over them) whenever they double; they never exceed the regions' count twice
    # over, so the memory is that of the patterns, not of every direction that may be
    # drawn (50 million planned directions asked for 2.4 GB and raised, where a time
    # limit would have stopped the drawing after a few blocks)
    cap = min(total, region_count(n, d))   # no arrangement has more regions
    per = n / 8.0 + 8.0 * d
    step = max(64, min(_SAMPLE_BLOCK, _SAMPLE_ENTRIES // max(n, 1)))
    check_bytes(9.0 * n * min(total, step) + per * (2 * cap + step),
                f"sampling activation patterns ({n} points x {total} directions; lower "
                "max_patterns)")
    packed, dirs, stopped = [], [], False
    kept, merged = 0, step

    def merge() -> None:
        allp = np.concatenate(packed, axis=1)
        alld = np.concatenate(dirs, axis=0)
        # packbits is big-endian, so byte order sorts like the bit strings: the same order
        # (and, by return_index, the same first directions) as a unique over the booleans
        _, idx = np.unique(allp, axis=1, return_index=True)
        packed[:], dirs[:] = [allp[:, idx]], [alld[idx]]

    for start in range(0, total, step):
        if deadline is not None and start > 0 and time.perf_counter() > deadline:
            stopped = True
            break
        if G is None:
            Gb = rng.standard_normal((min(step, total - start), d))
        else:
            Gb = G[start:start + step]
        block = np.packbits(Xa @ Gb.T >= 0, axis=0)
        _, idx = np.unique(block, axis=1, return_index=True)
        packed.append(block[:, idx])
        dirs.append(Gb[idx])
        kept += idx.size
        if kept > 2 * merged:
            merge()
            kept = merged = max(packed[0].shape[1], step)
    merge()
    allp, G = packed[0], dirs[0]
    M = np.unpackbits(allp, axis=0, count=n).astype(bool)
    M, G = _drop_all_off(M, G)
    if M.shape[1] > max_patterns:
        sel = np.sort(rng.choice(M.shape[1], max_patterns, replace=False))
        M, G = M[:, sel], G[sel]
    return M, G, stopped


def _lines_2d(Xa: np.ndarray) -> int:
    """The number of distinct lines ``{w : x_i . w = 0}`` of the nonzero rows of an (n, 2)
    array, decided exactly (a line is the ratio of its row's entries, in rationals).

    Example:
        >>> _lines_2d(np.array([[1.0, 1.0], [2.0, 2.0], [1.0, 0.0], [0.0, 0.0]]))
        2
    """
    from fractions import Fraction

    keys = set()
    for a, b in Xa.tolist():
        if b != 0:
            keys.add(Fraction(a) / Fraction(b))
        elif a != 0:
            keys.add(None)   # the line w1 = 0
    return len(keys)


def _all_off_2d(Xa: np.ndarray) -> bool | None:
    """Whether some ``w`` has ``Xa w < 0`` in every row (the all-off pattern is a region),
    shown by an exactly checked witness; None when the LP's answer is too close to call.

    Example:
        >>> _all_off_2d(np.array([[1.0, 1.0], [2.0, 1.0]])), _all_off_2d(np.array([[1.0, 0.0], [-1.0, 0.0]]))
        (True, False)
    """
    from fractions import Fraction

    from ..lp import solve as lp_solve

    nz = Xa[np.any(Xa != 0, axis=1)]
    if nz.shape[0] == 0:
        return False
    scale = np.max(np.abs(nz), axis=1, keepdims=True)
    A = np.hstack([nz / scale, np.ones((nz.shape[0], 1))])   # (x / |x|) . w + t <= 0
    r = lp_solve([0.0, 0.0, -1.0], A_ub=A, b_ub=np.zeros(nz.shape[0]), lb=[-1, -1, -1], ub=[1, 1, 1])
    if r.status != "optimal":
        return None
    w = r.x[:2]
    if all(Fraction(a) * Fraction(float(w[0])) + Fraction(b) * Fraction(float(w[1])) < 0 for a, b in nz.tolist()):
        return True
    return False if -r.objective <= 0 else None


def _complete_2d(Xa: np.ndarray, M: np.ndarray) -> bool:
    """Whether the patterns ``M`` of the arcs between an (n, 2) array's critical angles
    are all of its patterns (the all-off one dropped).

    The arcs come from float angles: nearly parallel rows (x = 1e8 + k with a bias) merged,
    and 2 of 9 patterns were called all of them; the count of a central arrangement of N
    distinct lines (2N regions, one all-off or none) decides it.

    Example:
        >>> Xa = np.array([[-1.0, 1.0], [0.0, 1.0], [1.0, 1.0]])
        >>> M, _, _ = _sample_until(Xa, 10**9, 0, None, None)
        >>> _complete_2d(Xa, M), _complete_2d(Xa, M[:, 1:])
        (True, False)
    """
    n_lines, all_off = _lines_2d(Xa), _all_off_2d(Xa)
    return all_off is not None and M.shape[1] == 2 * n_lines - (1 if all_off else 0)


def enumerate_patterns(Xa: np.ndarray, max_rays: int = 50_000,
                       rel_tol: float | None = None, deadline: float | None = None
                       ) -> tuple[np.ndarray, np.ndarray] | None:
    """Every activation pattern of ``Xa`` (all-off dropped) with strict generators, or None
    when completeness cannot be proved (data not in general position, rank below ``d``, or
    more than ``max_rays`` ray candidates) or ``deadline`` (a ``time.perf_counter()``
    value) came first.

    Example:
        >>> Xa = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0], [1.0, 1.0, 1.0]])
        >>> enumerate_patterns(Xa) is None   # three collinear points: not general position
        True
    """
    rel_tol = or_default(rel_tol, MATCH_RTOL)
    n, d = Xa.shape
    if d == 1:  # a line: the two half-lines w > 0 and w < 0 are the only regions
        G = np.array([[1.0], [-1.0]])
        return _drop_all_off(*_unique_columns(Xa @ G.T >= 0, G))
    if d == 2:
        M, G, late = _sample_until(Xa, 10**9, 0, None, deadline)
        return None if late or not _complete_2d(Xa, M) else (M, G)
    if n < d or comb(n, d - 1) > max_rays or np.linalg.matrix_rank(Xa) < d:
        return None
    subsets = np.array(list(combinations(range(n), d - 1)), dtype=np.int64)  # (S, d-1)
    blocks = Xa[subsets]  # (S, d-1, d)
    _, sv, Vt = np.linalg.svd(blocks)
    if np.any(sv[:, -1] <= rel_tol * sv[:, 0]):
        return None
    rays = Vt[:, -1, :]  # (S, d): the null ray of each subset
    vals = rays @ Xa.T  # (S, n)
    on_subset = np.zeros(vals.shape, dtype=bool)
    np.put_along_axis(on_subset, subsets, True, axis=1)
    scale = np.linalg.norm(Xa, axis=1)[None, :]
    if np.any((np.abs(vals) <= rel_tol * scale) & ~on_subset):
        return None  # another row passes through the ray
    U = np.linalg.pinv(blocks)  # (S, d, d-1): blocks @ U = I
    signs = np.array(list(product((1.0, -1.0), repeat=d - 1)))  # (2^(d-1), d-1)
    Ms, Gs = [], []
    for sigma in (1.0, -1.0):
        for s in signs:
            if deadline is not None and time.perf_counter() > deadline:
                return None
            step = U @ s  # (S, d): moves off the ray with signs s on the subset's rows
            push = step @ Xa.T  # (S, n)
            # small enough that no other row changes sign: half the tightest ratio
            ratio = np.where(on_subset, np.inf, np.abs(vals) / np.maximum(np.abs(push), TINY))
            eps = 0.5 * np.min(ratio, axis=1, keepdims=True)
            g = sigma * rays + eps * step
            g /= np.linalg.norm(g, axis=1, keepdims=True)
            z = g @ Xa.T
            if np.any(np.abs(z) <= 1e-15 * scale):  # tol: on a hyperplane up to rounding
                return None  # not strictly inside a region: give up rather than guess
            Ms.append((z > 0).T)
            Gs.append(g)
    M, G = _unique_columns(np.hstack(Ms), np.vstack(Gs))
    if M.shape[1] != region_count(n, d):
        return None
    return _drop_all_off(M, G)


def activation_patterns(Xa: np.ndarray, max_patterns: int, seed: int = 0
                        ) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(masks, gates, complete)``: every pattern when that is provable and there are at
    most ``max_patterns`` of them (``complete`` True), else a random sample of them.

    Example:
        >>> Xa = np.array([[-1.0, 1.0], [0.0, 1.0], [1.0, 1.0]])
        >>> activation_patterns(Xa, 100)[2]
        True
    """
    return _patterns_until(Xa, max_patterns, seed, None)[:3]


def _patterns_until(Xa: np.ndarray, max_patterns: int, seed: int, deadline: float | None
                   ) -> tuple[np.ndarray, np.ndarray, bool, bool]:
    """:func:`activation_patterns` whose sampling stops at ``deadline`` (a
    ``time.perf_counter()`` value, None: none): ``(masks, gates, complete, stopped)``,
    where ``stopped`` says the sample drew fewer directions than planned."""
    n, d = Xa.shape
    if d == 2:
        # the sampler's 2-D directions are the arcs' midpoints, those of the enumeration
        # too: one pass serves both (a second one, after an enumeration cut by the
        # deadline, ran another 0.2 s past a 0.15 s share of the time on 3,000 points)
        M, G, stopped = _sample_until(Xa, 10**9, seed, None, deadline)
        if not stopped and M.shape[1] <= max_patterns and _complete_2d(Xa, M):
            return M, G, True, False
        if M.shape[1] > max_patterns:
            sel = np.sort(np.random.default_rng(seed).choice(M.shape[1], max_patterns, replace=False))
            M, G = M[:, sel], G[sel]
        return M, G, False, stopped
    # a complete list can only fit when the region count does (general position bound)
    if region_count(n, d) - 1 <= max_patterns:
        full = enumerate_patterns(Xa, deadline=deadline)
        if full is not None and full[0].shape[1] <= max_patterns:
            return full[0], full[1], True, False
    M, G, stopped = _sample_until(Xa, max_patterns, seed, None, deadline)
    return M, G, False, stopped


def hyperplane_classes(M: np.ndarray) -> np.ndarray:
    """For a *complete* pattern list: ``cls[j]`` numbers the hyperplane of data row ``j``.

    Rows on one hyperplane through the origin (repeated points, or rows that are multiples
    of each other) always change sign together: their bits are equal (same orientation) or
    complementary (opposite) in every pattern.  Rows on different hyperplanes differ in
    some region, and a complete list holds a region of each of their four sign quadrants
    (at most one of them is the dropped all-off pattern), so reading the classes off ``M``
    is exact.  Rows that are always on (zero rows, without a bias) form their own class.

    Example:
        >>> Xa = np.array([[1.0, 1.0], [1.0, 1.0], [0.0, 1.0]])   # x = 1 twice, and x = 0
        >>> hyperplane_classes(activation_patterns(Xa, 100)[0]).tolist()
        [0, 0, 1]
    """
    if M.shape[1] == 0:
        return np.arange(M.shape[0])
    # orient every row so that its bit in the first pattern is on: equal rows then share
    # a hyperplane, whichever their orientation
    canon = M ^ ~M[:, :1]
    _, first, cls = np.unique(canon, axis=0, return_index=True, return_inverse=True)
    # number the classes by their first row, so that the numbering follows the data order
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    return rank[np.asarray(cls).reshape(-1)]


def facet_rows(M: np.ndarray, seed: int = 0) -> np.ndarray:
    """For a *complete* pattern list (all-off dropped, as returned above): ``F[j, i]`` is
    True when data row ``j`` is the first row of a hyperplane that is a facet of pattern
    ``i``'s cone.

    Crossing a hyperplane flips the bits of every row on it (:func:`hyperplane_classes`;
    several rows when points repeat), and in an arrangement two regions that differ on
    exactly one hyperplane are neighbours across it.  So a hyperplane is a facet of a
    region exactly when flipping its rows' bits gives another pattern: if it were
    redundant the flipped region would be empty.  Rows on one hyperplane give the same cone
    constraint (``s_j x_j`` are positive multiples of each other), so only the first is
    marked.  The other rows are implied by the facets, so a cone program may drop them (in
    2-D a region has a handful of facets, against ``n`` rows).  Patterns are compared by
    random 64-bit hashes; a collision could only keep a redundant row, never drop a facet.
    Must not be used on a sampled list: a missing neighbour would hide a facet.

    Example:
        >>> Xa = np.array([[-1.0, 1.0], [0.0, 1.0], [1.0, 1.0]])
        >>> M, _, complete = activation_patterns(Xa, 100)
        >>> F = facet_rows(M); complete, bool(np.all(F.sum(axis=0) <= 2))
        (True, True)
        >>> M, _, _ = activation_patterns(np.vstack([Xa, Xa[:1]]), 100)  # x = -1 twice
        >>> facet_rows(M).sum(axis=0).tolist() == F.sum(axis=0).tolist()
        True
    """
    n, P = M.shape
    # the class-flip hashes (classes x P, 64-bit), and np.unique's copies of M
    check_bytes(8.0 * n * P * 2 + 2.0 * n * P, f"facet_rows: the {n} x {P} pattern hashes")
    cls = hyperplane_classes(M)
    keys = np.random.default_rng(seed).integers(1, 2**63, size=n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        h = (M.T.astype(np.uint64) * keys[None, :]).sum(axis=1, dtype=np.uint64)  # (P,)
        signed = np.where(M, keys[:, None] * np.uint64(2**64 - 1), keys[:, None])
        # the hash change of flipping every row of a class (mod 2^64)
        delta = np.zeros((int(cls.max()) + 1 if n else 0, P), dtype=np.uint64)
        np.add.at(delta, cls, signed)
        flipped = h[None, :] + delta  # (classes, P): hash with the class's bits flipped
    known = np.sort(np.concatenate([h, np.zeros(1, dtype=np.uint64)]))  # the all-off pattern too
    # membership by binary search in the P + 1 known hashes (np.isin sorted all
    # classes x P of them: 5.5 s of a 1-D fit of 3,000 points)
    pos = np.minimum(np.searchsorted(known, flipped), known.size - 1)
    is_facet = known[pos] == flipped
    first = np.zeros(n, dtype=bool)
    first[np.unique(cls, return_index=True)[1]] = True
    return is_facet[cls] & first[:, None]
