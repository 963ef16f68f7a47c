"""The coordinates a layer is extracted in.

The first hidden layer is found in input coordinates.  Once the layers before layer
``k`` are known, each linear region of theirs (a fixed activation pattern) is mapped
affinely onto the outputs ``h`` of their active last-layer neurons; there layer ``k``
acts on ``h`` exactly as a first layer acts on ``x`` (layer peeling, one region at a
time).  A :class:`Space` is such a coordinate system: an affine map to the input
``x = P y + p``, the open region where it is valid (``C y + c > 0``: the pattern holds)
and the typical size of its points.

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

HIT_RUN_RTOL = 1e-6  # tol: hit-and-run keeps this x the scale away from the region's facets


@dataclass(frozen=True)
class Space:
    """Affine coordinates ``y`` with ``x = P y + p``, valid where ``C y + c > 0``.

    Example:
        >>> s = Space.input(2, scale=1.0)
        >>> s.dim, s.to_x(np.array([[1.0, 2.0]])).tolist(), bool(s.valid(np.zeros((1, 2)))[0])
        (2, [[1.0, 2.0]], True)
    """

    P: np.ndarray
    p: np.ndarray
    C: np.ndarray
    c: np.ndarray
    scale: float
    center: np.ndarray
    bounded_walk: bool = False  # sample by a random walk inside the region

    @staticmethod
    def input(d: int, scale: float = 1.0, center: np.ndarray | None = None) -> Space:
        z = np.zeros(d) if center is None else np.asarray(center, dtype=float)
        return Space(np.eye(d), np.zeros(d), np.zeros((0, d)), np.zeros(0), float(scale), z)

    @property
    def dim(self) -> int:
        return int(self.P.shape[1])

    def to_x(self, Y: np.ndarray) -> np.ndarray:
        if self.C.shape[0] == 0 and self.P.shape[0] == self.P.shape[1] and not self.p.any() \
                and np.array_equal(self.P, np.eye(self.P.shape[0])):
            return np.atleast_2d(Y).astype(float, copy=True)  # input coordinates: no product
        return np.atleast_2d(Y) @ self.P.T + self.p

    def valid(self, Y: np.ndarray, margin: float = 0.0) -> np.ndarray:
        Y = np.atleast_2d(Y)
        if self.C.shape[0] == 0:
            return np.ones(Y.shape[0], dtype=bool)
        return np.all(Y @ self.C.T + self.c > margin, axis=1)

    def sample(self, rng: np.random.Generator) -> np.ndarray:
        """A random valid point: near the centre in input coordinates; in peeled ones a
        point of the positive orthant with exponential coordinates (some near a face,
        some deep inside), re-drawn until every earlier neuron is active."""
        n = self.dim
        if self.C.shape[0] == 0:
            return self.center + 0.5 * self.scale * rng.normal(size=n) / np.sqrt(max(n, 1))
        # A few steps of hit-and-run from the centre: uniform-ish over the region.
        y = self.center.copy()
        for _ in range(4):
            r = rng.normal(size=n)
            r /= np.linalg.norm(r)
            lo, hi = self.t_range(y, r, 3.0 * self.scale * np.sqrt(n), HIT_RUN_RTOL * self.scale)
            if hi > lo:
                y = y + rng.uniform(lo, hi) * r
        return y

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

