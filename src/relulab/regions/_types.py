"""Result types of region enumeration: one region, and the complete collection."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import RelulabError
from ..network import Network
from ..tolerance import FEAS_TOL, STRICT_TOL
from ._hashing import PatternTable

__all__ = ["Region", "RegionSet", "Skeleton", "neuron_label", "pattern_index"]


def neuron_label(widths: tuple[int, ...], j: int) -> tuple[int, int]:
    """``(layer, index)`` (both from 0) of the flat hidden-neuron id ``j``.

    Example:
        >>> neuron_label((3, 2), 0), neuron_label((3, 2), 3), neuron_label((3, 2), 4)
        ((0, 0), (1, 0), (1, 1))
    """
    off = 0
    if j < 0:
        raise IndexError(f"neuron {j} out of range (ids start at 0)")
    for k, w in zip(range(len(widths)), widths, strict=True):
        if j < off + w:
            return k, j - off
        off += w
    raise IndexError(f"neuron {j} out of range (the network has {off} hidden neurons)")


@dataclass(frozen=True, eq=False)
class Region:
    """One full-dimensional linear region ``{x : A x <= b}``.

    Attributes:
        index: position in the enumeration.
        pattern: activation pattern, one bool per hidden neuron (layers concatenated;
            True = active, pre-activation > 0 inside the region).
        A, b: the minimal H-representation: one row per facet, rows of unit norm.
        facet_ids: per row, the hyperplane that carries the facet: a hidden neuron id
            ``j < n_neurons``, or ``n_neurons + i`` for row ``i`` of the domain's
            H-representation (``Box.to_polytope()`` order for a box).
        vertices: the region's vertices (of its part inside the artificial box for an
            unbounded region), shape (n_vertices, d).
        interior_point: a point strictly inside: the centroid of some of its vertices
            (of d + 1 affinely independent ones with the default engine, of all of them
            with ``engine="cells"``; so it differs between engines), or the Chebyshev
            centre with ``centers="chebyshev"``; and ``radius``: the radius of the largest
            ball around it inside the region.
        affine: ``(C, c)`` with ``net(x) = C x + c`` on the region.
        bounded: False for an unbounded region (domain = all of R^d or an unbounded
            polytope).
        touches_domain: some facet lies on the domain's boundary.

    Example:
        >>> import numpy as np
        >>> from relulab import Network, Box, regions
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> R = regions.enumerate(net, Box([-1], [1]))[0]
        >>> R.contains(R.interior_point), R.affine[0].shape
        (True, (1, 1))
    """

    index: int
    pattern: np.ndarray
    A: np.ndarray
    b: np.ndarray
    facet_ids: np.ndarray
    vertices: np.ndarray
    interior_point: np.ndarray
    radius: float
    affine: tuple[np.ndarray, np.ndarray]
    bounded: bool
    touches_domain: bool
    n_neurons: int = 0

    @property
    def dim(self) -> int:
        return int(self.interior_point.shape[0])

    def contains(self, X: Any, tol: float | None = None) -> np.ndarray | bool:
        """Membership (``A x <= b + tol``, default ``FEAS_TOL``) of a point or of each
        row of a batch."""
        tol = FEAS_TOL if tol is None else tol
        X = np.asarray(X, dtype=np.float64)
        single = X.ndim == 1
        ok = np.all(np.atleast_2d(X) @ self.A.T <= self.b + tol, axis=1)
        return bool(ok[0]) if single else ok

    def slack(self, x: Any) -> np.ndarray:
        """``b - A x``: distance of ``x`` to each facet (rows have unit norm)."""
        return self.b - self.A @ np.asarray(x, dtype=np.float64)

    def chebyshev_center(self) -> tuple[np.ndarray, float]:
        """The Chebyshev centre and radius by one LP (HiGHS)."""
        from ..lp import chebyshev_center

        x, r = chebyshev_center(self.A, self.b)
        if x is None:  # cannot happen for a region found by the enumeration
            raise RuntimeError("region is empty")
        return x, r

    def neuron_facets(self) -> np.ndarray:
        """Ids of the hidden neurons whose hyperplane carries a facet."""
        return self.facet_ids[self.facet_ids < self.n_neurons]

    def to_dict(self) -> dict:
        C, c = self.affine
        return {
            "index": self.index,
            "pattern": "".join("1" if p else "0" for p in self.pattern),
            "A": self.A.tolist(),
            "b": self.b.tolist(),
            "facet_ids": self.facet_ids.tolist(),
            "vertices": self.vertices.tolist(),
            "interior_point": self.interior_point.tolist(),
            "radius": float(self.radius),
            "affine": {"C": C.tolist(), "c": c.tolist()},
            "bounded": self.bounded,
            "touches_domain": self.touches_domain,
        }


@dataclass(eq=False)
class Skeleton:
    """The vertex skeleton the shared-vertex engine leaves behind when region vertex
    lists are not stored: every vertex once, with the ids of the ``d`` hyperplanes
    through it and its packed sign vector.  A region's vertices are recovered from it
    on demand (:meth:`RegionSet.__getitem__`)."""

    X: np.ndarray  # (V, d) coordinates
    ids: np.ndarray  # (V, d) int64 hyperplane ids through each vertex
    signs: np.ndarray  # (V, nb) uint8 packed sign vectors (0 on the hyperplanes through it)
    zeromask: np.ndarray | None = None  # bits of the neuron hyperplanes through each vertex

    def zero_bits(self, n_neurons: int) -> np.ndarray:
        """Per vertex, the packed bits of the neuron hyperplanes through it (cached)."""
        if self.zeromask is None:
            zm = np.zeros_like(self.signs)
            for c in range(self.ids.shape[1]):
                ids = self.ids[:, c]
                ok = np.flatnonzero(ids < n_neurons)
                zm[ok, ids[ok] >> 3] |= (np.uint8(128) >> (ids[ok] & 7).astype(np.uint8))
            self.zeromask = zm
        return self.zeromask

    def vertex_counts(self, packed_patterns: np.ndarray, n_neurons: int) -> np.ndarray:
        """For each region (rows of ``packed_patterns``), how many vertices it has (as
        :meth:`vertices_of` finds them), in ``O(V 2^d)`` hash lookups instead of a scan of
        every vertex per region: a vertex belongs to the regions whose patterns fill its
        zero bits (the neuron hyperplanes through it) in any way.

        Example:
            >>> import numpy as np
            >>> sk = Skeleton(np.zeros((1, 1)), np.array([[0]]), np.array([[0]], dtype=np.uint8))
            >>> sk.vertex_counts(np.array([[0], [128]], dtype=np.uint8), 1).tolist()   # x = 0 of relu(x)
            [1, 1]
        """
        R, nb = packed_patterns.shape
        index = {row.tobytes(): r for r, row in enumerate(packed_patterns)}
        counts = np.zeros(R, dtype=np.int64)
        S = np.ascontiguousarray(self.signs[:, :nb])
        ids = self.ids
        d = ids.shape[1]
        # a column counts when it is a neuron's hyperplane not already named in the row
        usable = ids < n_neurons
        for c in range(1, d):
            usable[:, c] &= np.all(ids[:, :c] != ids[:, c:c + 1], axis=1)
        bit = (np.uint8(128) >> (ids & 7).astype(np.uint8))
        byte = np.where(usable, ids >> 3, 0)
        for subset in range(1 << d):
            cols = [c for c in range(d) if subset >> c & 1]
            keep = np.all(usable[:, cols], axis=1) if cols else np.ones(len(S), dtype=bool)
            rows = np.flatnonzero(keep)
            if not rows.size:
                continue
            P = S[rows].copy()
            for c in cols:
                P[np.arange(len(rows)), byte[rows, c]] |= bit[rows, c]
            for key in P:
                r = index.get(key.tobytes())
                if r is not None:
                    counts[r] += 1
        return counts

    def vertices_of(self, packed_pattern: np.ndarray, n_neurons: int) -> np.ndarray:
        """The vertices whose sign vector agrees with the pattern off the hyperplanes
        through them: the vertices of that region."""
        zm = self.zero_bits(n_neurons)
        nb = packed_pattern.shape[0]
        ok = np.all((packed_pattern[None, :] & ~zm[:, :nb]) == self.signs[:, :nb], axis=1)
        return self.X[ok]


@dataclass(eq=False)
class RegionSet:
    """All regions found, stored as flat arrays (``len``, indexing and iteration give
    :class:`Region` objects, built on demand).

    ``partial`` is True when the enumeration stopped early (``max_regions``, Ctrl-C);
    every region in a partial set is still exact.  ``info`` holds how the set was
    computed (``engine``, ``fallback``, ``interrupted``, ``box_halfwidth``); ``net``
    is the (float) network the regions belong to, used by :meth:`locate`.

    Example:
        >>> import numpy as np
        >>> from relulab import Box, Network, regions
        >>> net = Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
        >>> rs = regions.enumerate(net, Box([-1, -1], [1, 1]))
        >>> len(rs), rs.partial, sorted(map(tuple, rs.patterns.tolist()))
        (4, False, [(False, False), (False, True), (True, False), (True, True)])
        >>> rs.locate(np.array([[0.5, -0.5]])).tolist() == [i for i in range(4) if rs[i].pattern.tolist() == [True, False]]
        True
    """

    dim: int
    widths: tuple[int, ...]
    packed_patterns: np.ndarray  # (n, ceil(N / 8)) uint8
    vertex_ptr: np.ndarray
    vertices: np.ndarray
    facet_ptr: np.ndarray
    facet_ids: np.ndarray
    facet_A: np.ndarray
    facet_b: np.ndarray
    interior: np.ndarray
    radius: np.ndarray
    affine: np.ndarray  # (n, m, d + 1): C | c
    bounded: np.ndarray
    touches_domain: np.ndarray
    partial: bool = False
    domain: Any = None
    seconds: float = 0.0
    method: str = "subdivision"
    certified: bool = True
    info: dict = field(default_factory=dict)
    net: Network | None = None
    # engine by-products kept for fast queries (None when not available)
    _table: PatternTable | None = field(default=None, repr=False)
    _edges: np.ndarray | None = field(default=None, repr=False)  # (E, 3) dual-graph edges
    _skeleton: Skeleton | None = field(default=None, repr=False)

    # -------------------------------------------------------------- basics
    @property
    def n_neurons(self) -> int:
        return int(sum(self.widths))

    def __len__(self) -> int:
        return int(self.interior.shape[0])

    @property
    def patterns(self) -> np.ndarray:
        """(n, n_neurons) bool activation patterns."""
        N = self.n_neurons
        if N == 0:
            return np.zeros((len(self), 0), dtype=bool)
        return np.unpackbits(self.packed_patterns, axis=1, count=N).astype(bool)

    def __getitem__(self, i: int) -> Region:
        n = len(self)
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"regions are indexed by an integer, got {i!r}")
        i = int(i)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"region {i} out of range ({n} regions)")
        d = self.dim
        N = self.n_neurons
        f0, f1 = self.facet_ptr[i], self.facet_ptr[i + 1]
        v0, v1 = self.vertex_ptr[i], self.vertex_ptr[i + 1]
        pat = (
            np.unpackbits(self.packed_patterns[i], count=N).astype(bool)
            if N
            else np.zeros(0, dtype=bool)
        )
        aff = self.affine[i]
        verts = self.vertices[v0:v1]
        if v1 == v0 and self._skeleton is not None:
            verts = self._skeleton.vertices_of(self.packed_patterns[i], N)
        return Region(
            index=i,
            pattern=pat,
            A=self.facet_A[f0:f1],
            b=self.facet_b[f0:f1],
            facet_ids=self.facet_ids[f0:f1],
            vertices=verts,
            interior_point=self.interior[i],
            radius=float(self.radius[i]),
            affine=(aff[:, :d], aff[:, d]),
            bounded=bool(self.bounded[i]),
            touches_domain=bool(self.touches_domain[i]),
            n_neurons=N,
        )

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    # -------------------------------------------------------------- queries
    def locate(self, X: Any) -> np.ndarray:
        """Index of the region containing each point (by its activation pattern;
        -1 for a point outside the domain or outside every region found).  A point whose
        float pattern is no region's (a neuron's pre-activation within round-off of 0, e.g.
        a neuron that is identically 0 on a region) is matched by flipping those near-zero
        bits (at most 8 of them)."""
        try:
            X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        except (TypeError, ValueError):
            raise RelulabError(f"locate: the points must be numbers, got {X!r}") from None
        if self.net is None:
            raise RuntimeError("this region set does not keep its network")
        pats = self.net.pattern_vector(X)
        idx = pattern_index(self, pats)
        miss = np.flatnonzero(idx < 0)
        if len(miss):
            near = _near_zero_preactivations(self.net, X[miss])
            for r, i in enumerate(miss):
                bits = np.flatnonzero(near[r])
                if not 0 < len(bits) <= 8:
                    continue
                flips = np.array(list(itertools.product([False, True], repeat=len(bits))), dtype=bool)
                cand = np.repeat(pats[i][None], len(flips), axis=0)
                cand[:, bits] ^= flips
                found = pattern_index(self, cand)
                if np.any(found >= 0):
                    idx[i] = found[found >= 0][0]
        if hasattr(self.domain, "contains"):  # a pattern alone does not say "in the domain"
            idx[~np.atleast_1d(self.domain.contains(X))] = -1
        return idx

    def pattern_table(self) -> PatternTable:
        """The exact lookup table of the packed patterns (built once)."""
        if self._table is None:
            self._table = PatternTable(self.packed_patterns)
        return self._table

    def _mean_vertices(self) -> float | None:
        """The mean vertex count; from the skeleton where the vertex lists are not stored
        (3+ inputs), None where neither is kept (``vertices=False``)."""
        if not len(self):
            return 0.0
        counts = np.diff(self.vertex_ptr)
        if np.all(counts > 0):
            return float(counts.mean())
        if self._skeleton is None:
            return None
        from_skeleton = self._skeleton.vertex_counts(self.packed_patterns, self.n_neurons)
        return float(np.mean(np.where(counts == 0, from_skeleton, counts)))

    def summary(self) -> dict:
        return {
            "regions": len(self),
            "bounded": int(self.bounded.sum()),
            "touching_domain": int(self.touches_domain.sum()),
            "vertices_per_region": self._mean_vertices(),
            "facets_per_region": float(np.diff(self.facet_ptr).mean()) if len(self) else 0.0,
            "partial": self.partial,
            # a partial enumeration certifies nothing, whatever its domain
            "certified": self.certified and not self.partial,
            # sign decisions too close to call: a thin region may be merged (not certified)
            "near_ties": int(self.info.get("near_ties", 0)),
            "method": self.method,
            "seconds": self.seconds,
        }

    def to_dict(self, regions: bool = True) -> dict:
        out = {
            "dim": self.dim,
            "widths": list(self.widths),
            "domain": self.domain.to_dict() if hasattr(self.domain, "to_dict") else None,
            **self.summary(),
        }
        if regions:
            out["region_list"] = [r.to_dict() for r in self]
        return out


def _near_zero_preactivations(net: Any, X: np.ndarray) -> np.ndarray:
    """Which pre-activations of each row of ``X`` are within round-off of 0: at most
    ``STRICT_TOL`` times the size of the terms that make them (``|W| |h| + |b|``), so that
    a neuron with small weights far from the origin is not taken for a vanishing one."""
    fnet = net.float() if net.is_exact else net
    h, out = X, []
    for W, b in zip(fnet.weights[:-1], fnet.biases[:-1], strict=True):
        z = h @ W.T + b
        out.append(np.abs(z) <= STRICT_TOL * (np.abs(h) @ np.abs(W).T + np.abs(b)))
        h = np.maximum(z, 0.0)
    return np.concatenate(out, axis=1) if out else np.zeros((len(X), 0), dtype=bool)


def pattern_index(rs: RegionSet, patterns: np.ndarray) -> np.ndarray:
    """Index of the region with each (bool) activation pattern, -1 when none."""
    N = rs.n_neurons
    if N == 0:
        return np.zeros(patterns.shape[0], dtype=np.int64) if len(rs) else -np.ones(
            patterns.shape[0], dtype=np.int64)
    return rs.pattern_table().find(np.packbits(np.asarray(patterns, dtype=bool), axis=1))
