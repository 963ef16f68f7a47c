"""The typed internal model of the region engines: the arrays describing a batch of
finished regions, and what one engine run hands to the assembly.

Both engines (per-region cells in :mod:`._engine`, the shared-vertex skeleton in
:mod:`._skeleton`) produce :class:`RegionArrays`; :mod:`._assembly` concatenates them
into the public :class:`~relulab.regions.RegionSet`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from ._hashing import PatternTable
from ._types import Region, Skeleton

__all__ = ["RegionArrays", "EngineRun"]

# which arrays have one row per region, per vertex slot, per facet row
_PER_REGION = ("packed_patterns", "interior", "radius", "affine", "bounded", "touches_domain")
_PER_VERTEX = ("vertices",)
_PER_FACET = ("facet_ids", "facet_A", "facet_b")


@dataclass
class RegionArrays:
    """Finished regions as flat arrays: row ``i`` of the per-region arrays, vertex slots
    ``vertex_ptr[i]:vertex_ptr[i+1]`` and facet rows ``facet_ptr[i]:facet_ptr[i+1]``
    (the same layout as :class:`~relulab.regions.RegionSet`)."""

    packed_patterns: np.ndarray  # (n, ceil(N / 8)) uint8
    vertex_ptr: np.ndarray  # (n + 1,) int64
    vertices: np.ndarray  # (V, d)
    facet_ptr: np.ndarray  # (n + 1,) int64
    facet_ids: np.ndarray  # (F,) int64 neuron id, or N + domain row
    facet_A: np.ndarray  # (F, d) unit rows
    facet_b: np.ndarray  # (F,)
    interior: np.ndarray  # (n, d)
    radius: np.ndarray  # (n,)
    affine: np.ndarray  # (n, m, d + 1): C | c
    bounded: np.ndarray  # (n,) bool
    touches_domain: np.ndarray  # (n,) bool

    @property
    def n(self) -> int:
        return int(self.interior.shape[0])

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays."""
        return int(sum(getattr(self, f.name).nbytes for f in fields(self)))

    def as_fields(self) -> dict[str, np.ndarray]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @staticmethod
    def empty(d: int, m: int, n_neurons: int) -> RegionArrays:
        z = np.zeros(1, dtype=np.int64)
        return RegionArrays(
            packed_patterns=np.zeros((0, (n_neurons + 7) // 8), np.uint8), vertex_ptr=z,
            vertices=np.zeros((0, d)), facet_ptr=z, facet_ids=np.zeros(0, np.int64),
            facet_A=np.zeros((0, d)), facet_b=np.zeros(0), interior=np.zeros((0, d)),
            radius=np.zeros(0), affine=np.zeros((0, m, d + 1)), bounded=np.zeros(0, bool),
            touches_domain=np.zeros(0, bool),
        )

    @staticmethod
    def concat(chunks: list[RegionArrays]) -> RegionArrays:
        """One set of arrays from several (chunks must be non-empty)."""

        def cat_ptr(key: str) -> np.ndarray:
            outs = [np.zeros(1, dtype=np.int64)]
            off = 0
            for c in chunks:
                p = getattr(c, key)
                outs.append(p[1:] + off)
                off += p[-1]
            return np.concatenate(outs)

        out = {k: np.concatenate([getattr(c, k) for c in chunks], axis=0)
               for k in (*_PER_REGION, *_PER_VERTEX, *_PER_FACET)}
        return RegionArrays(vertex_ptr=cat_ptr("vertex_ptr"), facet_ptr=cat_ptr("facet_ptr"), **out)

    def subset(self, keep: np.ndarray) -> RegionArrays:
        """The regions where ``keep`` is True."""
        idx = np.flatnonzero(keep)
        out = {k: getattr(self, k)[idx] for k in _PER_REGION}
        for ptr_key, keys in (("vertex_ptr", _PER_VERTEX), ("facet_ptr", _PER_FACET)):
            ptr = getattr(self, ptr_key)
            cnt = ptr[idx + 1] - ptr[idx]
            newptr = np.zeros(idx.size + 1, dtype=np.int64)
            np.cumsum(cnt, out=newptr[1:])
            rows = np.repeat(ptr[idx] - newptr[:-1], cnt) + np.arange(newptr[-1])
            out[ptr_key] = newptr
            for k in keys:
                out[k] = getattr(self, k)[rows]
        return RegionArrays(**out)

    def head(self, k: int) -> RegionArrays:
        """The first ``k`` regions."""
        v1 = self.vertex_ptr[k]
        f1 = self.facet_ptr[k]
        out = {key: getattr(self, key)[:k] for key in _PER_REGION}
        out["vertex_ptr"] = self.vertex_ptr[: k + 1]
        out["facet_ptr"] = self.facet_ptr[: k + 1]
        out["vertices"] = self.vertices[:v1]
        for key in _PER_FACET:
            out[key] = getattr(self, key)[:f1]
        return RegionArrays(**out)

    def region(self, i: int, index: int, n_neurons: int) -> Region:
        """Region ``i`` of these arrays, numbered ``index`` in the whole enumeration."""
        d = self.interior.shape[1]
        f0, f1 = self.facet_ptr[i], self.facet_ptr[i + 1]
        v0, v1 = self.vertex_ptr[i], self.vertex_ptr[i + 1]
        pat = (
            np.unpackbits(self.packed_patterns[i], count=n_neurons).astype(bool)
            if n_neurons else np.zeros(0, bool)
        )
        aff = self.affine[i]
        return Region(
            index=index,
            pattern=pat,
            A=self.facet_A[f0:f1],
            b=self.facet_b[f0:f1],
            facet_ids=self.facet_ids[f0:f1],
            vertices=self.vertices[v0:v1],
            interior_point=self.interior[i],
            radius=float(self.radius[i]),
            affine=(aff[:, :d], aff[:, d]),
            bounded=bool(self.bounded[i]),
            touches_domain=bool(self.touches_domain[i]),
            n_neurons=n_neurons,
        )


@dataclass
class EngineRun:
    """What one run of the engines produced: the region arrays (one chunk per batch of
    the cell engine, one for the skeleton engine), how the run went, and the skeleton
    engine's by-products (its pattern table, the dual-graph edges it found, and the
    vertex skeleton when vertex lists were not stored)."""

    chunks: list[RegionArrays] = field(default_factory=list)
    engine: str = "cells"
    partial: bool = False
    interrupted: bool = False
    fallback: str | None = None
    stopped: str | None = None   # why a partial run stopped early (other than max_regions)
    near_ties: int = 0  # sign decisions too close to call (see _engine._count_ties)
    table: PatternTable | None = None
    edges: np.ndarray | None = None
    skeleton: Skeleton | None = None

    def info(self) -> dict:
        """The public ``RegionSet.info`` entries of this run."""
        out: dict = {}
        if self.fallback is not None:
            out["fallback"] = self.fallback
        out["engine"] = self.engine
        if self.interrupted:
            out["interrupted"] = True
        if self.stopped is not None:
            out["stopped"] = self.stopped
        if self.near_ties:
            out["near_ties"] = self.near_ties
        return out
