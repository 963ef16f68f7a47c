"""The search space of a counterfactual: the domain, cut by the feature bounds, with the
immutable features fixed at their value in x."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..domain import Box, DomainError, Polytope
from ..tolerance import FEAS_TOL


@dataclass(frozen=True, eq=False)
class Space:
    """``{lo <= z <= hi, A z <= b}`` (``A`` may have no rows); ``region`` is the same
    set as a relulab Box or Polytope, or None when it is empty (``why_empty`` says why)."""

    lo: np.ndarray
    hi: np.ndarray
    A: np.ndarray
    b: np.ndarray
    region: Box | Polytope | None
    why_empty: str = ""

    def contains(self, z: np.ndarray, tol: float = FEAS_TOL) -> bool:
        ok = np.all(z >= self.lo - tol * (1 + np.abs(self.lo))) and np.all(
            z <= self.hi + tol * (1 + np.abs(self.hi)))
        if self.A.shape[0]:
            ok = ok and bool(np.all(self.A @ z <= self.b + tol * (1 + np.abs(self.b))))
        return bool(ok)


def build_space(domain: Box | Polytope, x: np.ndarray, mutable: np.ndarray, flo: np.ndarray,
                fhi: np.ndarray, names: tuple[str, ...]) -> Space:
    bb = domain if isinstance(domain, Box) else domain.bounding_box()
    lo = np.maximum(bb.lo, flo)
    hi = np.minimum(bb.hi, fhi)
    fixed = ~mutable
    lo[fixed] = np.maximum(lo[fixed], x[fixed])
    hi[fixed] = np.minimum(hi[fixed], x[fixed])
    d = len(x)
    A = np.zeros((0, d)) if isinstance(domain, Box) else domain.A
    b = np.zeros(0) if isinstance(domain, Box) else domain.b
    bad = np.flatnonzero(lo > hi)
    if bad.size:
        i = int(bad[0])
        why = (f"feature {names[i]!r} is immutable at {x[i]:g}, outside its bounds / the domain"
               if fixed[i] else f"the bounds of feature {names[i]!r} do not meet the domain")
        return Space(lo, hi, A, b, None, why)
    if isinstance(domain, Box):
        return Space(lo, hi, A, b, Box(lo, hi))
    try:
        eye = np.eye(d)
        P = Polytope(np.vstack([A, eye, -eye]), np.concatenate([b, hi, -lo]))
    except DomainError:
        return Space(lo, hi, A, b, None, "the domain, the bounds and the immutable features "
                     "leave no input")
    return Space(lo, hi, A, b, P)
