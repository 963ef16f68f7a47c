"""The coordinates a layer is extracted in.

The first hidden layer is found in input coordinates.  Once it is known, the region
where all its neurons are active is mapped affinely onto the positive orthant of its
outputs ``h``; there the next layer acts on ``h`` exactly as a first layer acts on ``x``
(layer peeling).  A :class:`Space` is such a coordinate system: an affine map to the
input ``x = P y + p``, the open region where it is valid (``C y + c > 0``: every earlier
neuron active) and the typical size of its points.

Example:
    >>> import numpy as np
    >>> s = Space.input(2, scale=1.0)
    >>> s.to_x(np.array([[1.0, 2.0]])).tolist(), bool(s.valid(np.zeros((1, 2)))[0])
    ([[1.0, 2.0]], True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Space"]


@dataclass(frozen=True)
class Space:
    """Affine coordinates ``y`` with ``x = P y + p``, valid where ``C y + c > 0``."""

    P: np.ndarray
    p: np.ndarray
    C: np.ndarray
    c: np.ndarray
    scale: float
    center: np.ndarray

    @staticmethod
    def input(d: int, scale: float = 1.0, center: np.ndarray | None = None) -> Space:
        z = np.zeros(d) if center is None else np.asarray(center, dtype=float)
        return Space(np.eye(d), np.zeros(d), np.zeros((0, d)), np.zeros(0), float(scale), z)

    @property
    def dim(self) -> int:
        return int(self.P.shape[1])

    def to_x(self, Y: np.ndarray) -> np.ndarray:
        return np.atleast_2d(Y) @ self.P.T + self.p

    def valid(self, Y: np.ndarray, margin: float = 0.0) -> np.ndarray:
        Y = np.atleast_2d(Y)
        if self.C.shape[0] == 0:
            return np.ones(Y.shape[0], dtype=bool)
        return np.all(Y @ self.C.T + self.c > margin, axis=1)

    def t_range(self, y0: np.ndarray, r: np.ndarray, radius: float, margin: float) -> tuple[float, float]:
        """The ``t`` interval of the line ``y0 + t r`` inside the region (shrunk by ``margin``)
        and within ``radius``."""
        lo, hi = -radius, radius
        if self.C.shape[0]:
            a = self.C @ r
            b = self.C @ y0 + self.c - margin
            with np.errstate(divide="ignore"):
                lim = -b / a
            lo = max(lo, float(np.max(lim[a > 0], initial=-np.inf)))
            hi = min(hi, float(np.min(lim[a < 0], initial=np.inf)))
        return lo, hi

    def peel(self, U: np.ndarray, beta: np.ndarray, rng: np.random.Generator) -> Space | None:
        """The coordinates ``y' = U y + beta`` of the next layer (all of ``U``'s neurons
        active), or None when ``U`` does not have full row rank (an expansive layer: not
        every ``y'`` has a preimage)."""
        n = U.shape[0]
        if n == 0 or np.linalg.matrix_rank(U) < n:
            return None
        Upinv = np.linalg.pinv(U)
        # A base point where every neuron of this layer (and every earlier one) is active,
        # near the centre of the region.
        base = self._active_point(U, beta, Upinv, rng)
        if base is None:
            return None
        # y = base + U^+ (y' - (U base + beta))
        y_of = Upinv
        y_off = base - Upinv @ (U @ base + beta)
        P = self.P @ y_of
        p = self.P @ y_off + self.p
        C = np.vstack([self.C @ y_of, np.eye(n)])
        c = np.concatenate([self.C @ y_off + self.c, np.zeros(n)])
        z = U @ base + beta
        return Space(P, p, C, c, float(np.median(np.abs(z)) + 1e-300) * 2.0, z)

    def _active_point(self, U, beta, Upinv, rng) -> np.ndarray | None:
        target = np.abs(U @ self.center + beta)
        for _ in range(50):
            z = np.maximum(target, 1e-3 * self.scale) * rng.uniform(0.5, 1.5, size=U.shape[0])
            y = self.center + Upinv @ (z - (U @ self.center + beta))
            if self.valid(y[None])[0]:
                return y
            target = target * 0.5
        return None
