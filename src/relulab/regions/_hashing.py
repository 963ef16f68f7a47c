"""Exact grouping of equal rows (sign vectors, keys) through a strong 64-bit hash."""

from __future__ import annotations

import numpy as np

__all__ = ["hash_rows", "group_rows", "sorted_unique", "as_words", "PatternTable"]

_C1 = np.uint64(0x9E3779B97F4A7C15)
_C2 = np.uint64(0xBF58476D1CE4E5B9)
_C3 = np.uint64(0x94D049BB133111EB)


def hash_rows(M: np.ndarray) -> np.ndarray:
    """A well-mixed 64-bit hash of each row of a uint64 matrix (splitmix64 per word;
    a linear hash would collide on sign vectors that differ in high bits)."""
    n = M.shape[0]
    h = np.full(n, np.uint64(0x243F6A8885A308D3))
    with np.errstate(over="ignore"):
        for c in range(M.shape[1]):
            h = (h ^ M[:, c]) * _C1
            h ^= h >> np.uint64(30)
            h *= _C2
            h ^= h >> np.uint64(27)
            h *= _C3
            h ^= h >> np.uint64(31)
    return h


def as_words(P: np.ndarray) -> np.ndarray:
    """View a uint8 matrix as uint64 words (zero-padding the rows to whole words)."""
    n, nb = P.shape
    pad = (-nb) % 8
    if pad or nb == 0:
        P = np.concatenate([P, np.zeros((n, pad if nb else 8), dtype=np.uint8)], axis=1)
    return np.ascontiguousarray(P).view(np.uint64)


def _stable_argsort_u64(h: np.ndarray) -> np.ndarray:
    """``np.argsort(h, kind="stable")`` for uint64 keys, faster: numpy's default
    (SIMD) sort, then ties put back in index order with one sort of packed
    ``(run, index)`` integers."""
    n = h.shape[0]
    order = np.argsort(h)
    hs = h[order]
    tie = hs[1:] == hs[:-1]
    if not tie.any():
        return order
    if n >= 2**31:
        return np.argsort(h, kind="stable")
    run = np.zeros(n, dtype=np.int64)
    np.cumsum(~tie, out=run[1:])
    key = run * n + order
    key.sort()
    return key % n


def group_rows(M: np.ndarray, stable: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group equal rows of a uint64 matrix exactly.

    Returns ``(order, starts, lens)``: sorting the rows by ``order`` puts equal rows
    in runs beginning at ``starts`` with lengths ``lens``.  With ``stable`` each run
    lists its rows in index order; without it the order inside a run is arbitrary
    (cheaper).
    """
    if M.shape[0] == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z
    h = hash_rows(M)
    order = _stable_argsort_u64(h) if stable else np.argsort(h)
    hs = h[order]
    Ms = M[order]
    same_h = hs[1:] == hs[:-1]
    same = same_h & np.all(Ms[1:] == Ms[:-1], axis=1)
    if not np.array_equal(same, same_h):
        # a genuine collision: sort exactly by (hash, all words)
        keys = [M[:, c] for c in range(M.shape[1] - 1, -1, -1)] + [h]
        order = np.lexsort(keys)
        Ms = M[order]
        same = np.all(Ms[1:] == Ms[:-1], axis=1)
    starts = np.concatenate([[0], np.flatnonzero(~same) + 1])
    lens = np.diff(np.concatenate([starts, [M.shape[0]]]))
    return order, starts, lens


def sorted_unique(a: np.ndarray) -> np.ndarray:
    """``np.unique`` of an int array by sorting (faster than numpy's hash-based one
    on large arrays here)."""
    if a.size == 0:
        return a
    s = np.sort(a, kind="stable")
    keep = np.concatenate([[True], s[1:] != s[:-1]])
    return s[keep]


def unique_pairs(r: np.ndarray, i: np.ndarray, n_r: int, n_i: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct pairs ``(r, i)`` sorted by ``r`` then ``i`` (a presence table when it
    is small enough, else a sort)."""
    if n_r * n_i <= 300_000_000:
        mark = np.zeros(n_r * n_i, dtype=bool)
        mark[r * n_i + i] = True
        key = np.flatnonzero(mark)
    else:
        key = sorted_unique(r * n_i + i)
    return key // n_i, key % n_i


class PatternTable:
    """Exact lookup of packed patterns: an open-addressing hash table (linear probing,
    load <= 1/2) over a strong 64-bit row hash, every hit confirmed by comparing the
    rows word by word.  Lookups are a few vectorised gathers into a small table
    (cheaper than a binary search of unsorted queries)."""

    def __init__(self, packed: np.ndarray):
        self.packed = packed
        self.words = as_words(packed)
        self.h = hash_rows(self.words)
        n = packed.shape[0]
        size = 1 << max(4, int(2 * n).bit_length())
        self.mask = np.uint64(size - 1)
        slots = np.full(size, -1, dtype=np.int64)
        idx = np.arange(n, dtype=np.int64)
        s = (self.h & self.mask).astype(np.int64)
        while idx.size:
            free = slots[s] < 0
            fi, fs = idx[free], s[free]
            # rows competing for one slot: the smallest index wins (written last)
            slots[fs[::-1]] = fi[::-1]
            won = np.zeros(idx.size, dtype=bool)
            won[free] = slots[fs] == fi
            idx = idx[~won]
            s = (s[~won] + 1) & (size - 1)
        self.slots = slots

    def find(self, Q: np.ndarray) -> np.ndarray:
        """Index of each row of ``Q`` in the table, or -1."""
        out = np.full(Q.shape[0], -1, dtype=np.int64)
        if Q.shape[0] == 0 or self.packed.shape[0] == 0:
            return out
        Qw = as_words(Q)
        hq = hash_rows(Qw)
        size_m1 = int(self.mask)
        idx = np.arange(Q.shape[0], dtype=np.int64)
        s = (hq & self.mask).astype(np.int64)
        while idx.size:
            t = self.slots[s]
            occ = t >= 0
            # an empty slot ends the probe sequence: not in the table
            idx, s, t = idx[occ], s[occ], t[occ]
            hit = self.h[t] == hq[idx]
            hi = np.flatnonzero(hit)
            if hi.size:
                same = np.all(self.words[t[hi]] == Qw[idx[hi]], axis=1)
                found = hi[same]
                out[idx[found]] = t[found]
                hit[found] = True
                hit[hi[~same]] = False
            go = ~hit
            idx = idx[go]
            s = (s[go] + 1) & size_m1
        return out
