"""Exact functional equality of two networks on the unit cube (or a box).

:func:`equal_on_cube` first asks :func:`relulab.symmetry.equivalent` (normal forms, then
the MILP verifier).  When that is undecided or fails, it decides by the linear regions
of the joint network ``x -> (f(x), g(x))`` (:func:`relulab.regions.enumerate`): at a
rational point strictly inside each region (every pre-activation nonzero, checked in
exact arithmetic) it compares the exact affine maps of ``f`` and ``g``.  Two continuous
piecewise-linear functions with the same affine map on every full-dimensional region are
equal.  In dimension <= 3 the regions' volumes are added up as a check that they cover the
box (the enumeration itself is in floating point).  A difference always comes with an
exact witness.

Example:
    >>> from relulab import Network
    >>> f = Network([[[1], [-1]], [[1, -1]]], [[0, 0], [0]]).exact()     # x on [0, 1]
    >>> g = Network([[[1]], [[1]]], [[0], [0]]).exact()                  # relu(x)
    >>> equal_on_cube(f, g).status
    'equal'
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..domain import Box
from ..errors import RelulabError
from ..network import Network
from ..results import Result

__all__ = ["EqualityResult", "equal_on_cube"]

# Relative slack of the volume-coverage check (the region vertices are floats).
COVER_RTOL = 1e-7  # tol: the region vertices are floats


@dataclass(frozen=True)
class EqualityResult(Result):
    """``status``: ``"equal"``, ``"different"`` or ``"unknown"``; ``method``:
    ``"canonical"``, ``"verifier"``, ``"regions"``, ``"sampling"``; ``witness`` (exact)
    with both values for ``different``; ``exact``: decided in rational arithmetic.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0]], [[1.0]]], [[0.0], [0.0]])
        >>> r = equal_on_cube(net, net)
        >>> r.status, r.equal, r.exact
        ('equal', True, True)
    """

    status: str
    method: str
    exact: bool
    message: str = ""
    witness: tuple | None = None
    f_value: tuple | None = None
    g_value: tuple | None = None
    n_regions: int | None = None

    @property
    def equal(self) -> bool:
        return self.status == "equal"


def _box(d: int, box: Any) -> Box:
    if box is None:
        return Box(np.zeros(d), np.ones(d))
    if isinstance(box, Box):
        return box
    return Box(*box)


def equal_on_cube(f: Network, g: Network, box: Any = None, *, timeout: float | None = 60.0,
                  use_verifier: bool = True) -> EqualityResult:
    """Decide ``f == g`` on ``box`` (default [0, 1]^d).

    Order: identical exact normal forms (:func:`relulab.symmetry.canonical`), then the
    exact region-by-region comparison, then (when that is undecided and
    ``use_verifier``) :func:`relulab.symmetry.equivalent` with ``timeout``.

    Example:
        >>> from relulab import Network
        >>> f = Network([[[1.0]], [[1.0]]], [[0.0], [0.0]])          # relu(x) = x on [0, 1]
        >>> g = Network([[[2.0]], [[0.5]]], [[0.0], [0.0]])
        >>> h = Network([[[1.0]], [[1.0]]], [[-0.5], [0.0]])
        >>> equal_on_cube(f, g).status, equal_on_cube(f, h).status
        ('equal', 'different')
    """
    from ..symmetry import canonical, equivalent

    if f.input_dim != g.input_dim or f.output_dim != g.output_dim:
        raise RelulabError(f"equal_on_cube: shapes differ ({f!r} vs {g!r})")
    B = _box(f.input_dim, box)
    F, G = f.exact(), g.exact()
    if canonical(F, B)[0] == canonical(G, B)[0]:
        return EqualityResult("equal", "canonical", True, "identical exact normal forms")
    r0 = _by_regions(F, G, B)
    if r0.status != "unknown" or not use_verifier:
        return r0
    try:
        r = equivalent(F, G, B, timeout=timeout)
    except RelulabError as e:
        return EqualityResult("unknown", "verifier", False, f"{r0.message}; the verifier failed: {e}")
    if r.status == "different":
        w = tuple(Fraction(v) for v in np.asarray(r.witness).reshape(-1))
        fx, gx = _values(F, w), _values(G, w)
        if fx != gx:
            return EqualityResult("different", r.method, True, r.message, w, fx, gx)
    if r.status == "equal":
        return EqualityResult("equal", r.method, r.exact, r.message)
    return EqualityResult("unknown", r.method, False, f"{r0.message}; verifier: {r.message}")


def _values(net: Network, x: tuple) -> tuple:
    return tuple(net.exact()(np.array(x, dtype=object)))


def _by_regions(f: Network, g: Network, B: Box) -> EqualityResult:
    from .. import regions

    F, G = f.exact().without_skip(), g.exact().without_skip()
    H = F.concat(G) if (F.n_hidden_layers or G.n_hidden_layers) else None
    if H is None:  # both affine
        pts = [tuple(Fraction(float(v)) for v in p) for p in B.vertices()]
        for p in pts:
            if _values(F, p) != _values(G, p):
                return EqualityResult("different", "regions", True, "affine maps differ at a box vertex",
                                      p, _values(F, p), _values(G, p))
        return EqualityResult("equal", "regions", True, "equal affine maps (checked at the box vertices)")
    rs = regions.enumerate(H.float(), B)
    if rs.partial or len(rs) == 0:
        return EqualityResult("unknown", "regions", False, "region enumeration incomplete")
    vol = 0.0
    d = f.input_dim
    for R in rs:
        x = _strict_point(H, R)
        if x is None:
            return EqualityResult("unknown", "regions", False,
                                  f"no exact interior point found for region {R.index}")
        Af, cf = F.local_affine(np.array(x, dtype=object))
        Ag, cg = G.local_affine(np.array(x, dtype=object))
        if not (np.all(Af == Ag) and np.all(cf == cg)):
            for p in _probe_points(R, x):
                fx, gx = _values(F, p), _values(G, p)
                if fx != gx:
                    return EqualityResult("different", "regions", True,
                                          "the affine maps differ on a linear region", p, fx, gx, len(rs))
            return EqualityResult("unknown", "regions", False, "affine maps differ but no witness found")
        if d <= 3:
            vol += _volume(R)
    if d <= 3 and abs(vol - float(np.prod(B.hi - B.lo))) > COVER_RTOL * max(1.0, float(np.prod(B.hi - B.lo))):
        return EqualityResult("unknown", "regions", False, f"regions cover volume {vol:.9g}, not the box's")
    return EqualityResult("equal", "regions", True,
                          f"same exact affine map on all {len(rs)} linear regions", n_regions=len(rs))


def _strict_point(H: Network, R: Any) -> tuple | None:
    """A rational point inside region ``R`` at which the exact activation pattern of
    ``H`` is locally constant (every pre-activation is nonzero, or identically zero near
    the point) and agrees with the region's pattern on the nonzero ones."""
    cands = [R.interior_point]
    try:
        c, _ = R.chebyshev_center()
        cands.append(c)
    except Exception:  # noqa: BLE001 - only a second candidate
        pass
    want = np.asarray(R.pattern, dtype=bool)
    for c in cands:
        x = tuple(Fraction(float(v)) for v in c)
        pat = _stable_pattern(H, x)
        if pat is None:
            continue
        signs, degenerate = pat
        if all(s == w for s, w, dg in zip(signs, want, degenerate, strict=True) if not dg):
            return x
    return None


def _stable_pattern(H: Network, x: tuple) -> tuple[list[bool], list[bool]] | None:
    """Signs of all pre-activations at ``x`` (exact), with a flag for the ones that are
    identically zero near ``x``; None when ``x`` lies on a kink."""
    d = len(x)
    A = np.array([[Fraction(int(i == j)) for j in range(d)] for i in range(d)], dtype=object)
    c = np.array([Fraction(0)] * d, dtype=object)
    xv = np.array(x, dtype=object)
    signs: list[bool] = []
    degen: list[bool] = []
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
            else:
                degen.append(False)
                signs.append(bool(zi > 0))
                keep.append(bool(zi > 0))
        mask = np.array(keep, dtype=bool)
        A = np.where(mask[:, None], A, Fraction(0))
        c = np.where(mask, c, Fraction(0))
    return signs, degen


def _probe_points(R: Any, x: tuple) -> list[tuple]:
    pts = [x]
    for v in np.asarray(R.vertices):
        pts.append(tuple(xi + (Fraction(float(vi)) - xi) / 2 for xi, vi in zip(x, v, strict=True)))
    return pts


def _volume(R: Any) -> float:
    V = np.asarray(R.vertices, dtype=float)
    d = V.shape[1]
    if d == 1:
        return float(V.max() - V.min())
    from scipy.spatial import ConvexHull

    return float(ConvexHull(V).volume)
