"""Exact functional equality of two networks on the unit cube (or a box).

:func:`equal_on_cube` first compares exact normal forms (:func:`relulab.symmetry.canonical`).
When they differ it decides by the linear regions of the joint network
``x -> (f(x), g(x))`` (:func:`relulab.regions.enumerate`): at a rational point strictly
inside each region (every pre-activation nonzero, checked in exact arithmetic) it
compares the exact affine maps of ``f`` and ``g``.  Two continuous piecewise-linear
functions with the same affine map on every full-dimensional region are equal - provided
no region was missed, and the enumeration is in floating point: a region thinner than its
tolerances can be missed.  So ``equal`` is only answered when the regions found provably
cover the box: each is re-described exactly (the polytope of its exact activation
pattern, its vertices snapped to exact points) and the exact lower bounds of their
volumes must add up to the box's volume (:mod:`relulab.logic._cover`).  Otherwise the
networks are compared at the exact box and region vertices (a missed sliver usually
touches one), and failing that the regions answer ``unknown`` and
:func:`relulab.symmetry.equivalent` is asked (its MILP verifier works in floats: an
``equal`` from it is reported as ``unknown``, with its tolerance in the message).  So
``equal`` is always proved (``exact=True``), and a difference always comes with an exact
witness.

Example:
    >>> from relulab import Network
    >>> f = Network([[[1], [-1]], [[1, -1]]], [[0, 0], [0]]).exact()     # x on [0, 1]
    >>> g = Network([[[1]], [[1]]], [[0], [0]]).exact()                  # relu(x)
    >>> equal_on_cube(f, g).status
    'equal'
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..domain import Box, DomainError
from ..errors import RelulabError
from ..network import Network, NetworkError
from ..results import Result
from ._cover import Row, box_rows, exact_cell, int_rows, snap_vertices, volume_lower_bound
from ._inputs import cube_box, network_arg

__all__ = ["EqualityResult", "equal_on_cube"]

# What the exact normal forms of two networks cost, per parameter (measured: 9-14 us on
# float-valued Fractions, 2 shared cores), with a margin.
CANONICAL_SECONDS_PER_PARAM = 3e-5


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


def equal_on_cube(f: Network, g: Network, box: Any = None, *, timeout: float | None = 60.0,
                  use_verifier: bool = True) -> EqualityResult:
    """Decide ``f == g`` on ``box`` (default [0, 1]^d).

    Order: identical exact normal forms (:func:`relulab.symmetry.canonical`; skipped when
    ``timeout`` leaves less than :data:`CANONICAL_SECONDS_PER_PARAM` per parameter), then the
    exact region-by-region comparison with its exact coverage check, then (when that is
    undecided and ``use_verifier``) :func:`relulab.symmetry.equivalent` with ``timeout``.
    ``equal`` only comes with a proof; an "equal up to tolerance" from the float verifier
    is answered ``unknown`` (its message gives the verifier's bound and why the regions
    did not decide).

    Raises:
        NetworkError: ``f`` or ``g`` is not a :class:`~relulab.Network`.
        RelulabError: their input or output dimensions differ.

    Example:
        >>> from relulab import Network
        >>> f = Network([[[1.0]], [[1.0]]], [[0.0], [0.0]])          # relu(x) = x on [0, 1]
        >>> g = Network([[[2.0]], [[0.5]]], [[0.0], [0.0]])
        >>> h = Network([[[1.0]], [[1.0]]], [[-0.5], [0.0]])
        >>> equal_on_cube(f, g).status, equal_on_cube(f, h).status
        ('equal', 'different')
    """
    from ..symmetry import canonical, equivalent

    network_arg(f, "equal_on_cube", "f")
    network_arg(g, "equal_on_cube", "g")
    if f.input_dim != g.input_dim or f.output_dim != g.output_dim:
        raise RelulabError(f"equal_on_cube: shapes differ ({f!r} vs {g!r})")
    B = cube_box(f, box, "equal_on_cube")
    flat = np.flatnonzero(B.hi <= B.lo)
    if flat.size:
        raise DomainError(f"equal_on_cube: the box has width 0 in x{flat[0] + 1} (lo = hi = {B.lo[flat[0]]:g}); "
                          "fix that input in the networks instead (the regions need a full-dimensional box)")
    if timeout is not None and not (isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
                                    and timeout >= 0):
        raise RelulabError(f"equal_on_cube: timeout must be seconds (>= 0) or None, got {timeout!r}")
    deadline = None if timeout is None else time.time() + timeout
    F, G = f.exact(), g.exact()
    # the normal forms cannot be stopped midway (about 15 us per parameter in Fractions):
    # they run only when the time limit leaves room for them
    try:
        if deadline is None or deadline - time.time() > CANONICAL_SECONDS_PER_PARAM * (F.n_params + G.n_params):
            if canonical(F, B)[0] == canonical(G, B)[0]:
                return EqualityResult("equal", "canonical", True, "identical exact normal forms")
        r0 = _by_regions(F, G, B, deadline)
    except NetworkError as e:
        # bounds and regions work on the float64 copy: an entry beyond float64 is refused there
        raise NetworkError(f"equal_on_cube: f or g has no float64 copy for its bounds and regions ({e})") from None
    if r0.status != "unknown" or not use_verifier:
        return r0
    left = None if deadline is None else deadline - time.time()
    if left is not None and left <= 0:
        return EqualityResult("unknown", "regions", False, f"{r0.message}; no time left for the verifier")
    try:
        r = equivalent(F, G, B, timeout=left)
    except RelulabError as e:
        return EqualityResult("unknown", "verifier", False, f"{r0.message}; the verifier failed: {e}")
    if r.status == "different":
        w = tuple(Fraction(v) for v in np.asarray(r.witness).reshape(-1))
        fx, gx = _values(F, w), _values(G, w)
        if fx != gx:
            return EqualityResult("different", r.method, True, r.message, w, fx, gx)
    if r.status == "equal" and r.exact:
        return EqualityResult("equal", r.method, True, r.message)
    if r.status == "equal":
        # the float verifier's "equal" holds up to its tolerance only: networks that differ
        # by 2^-50 pass it, so it is reported as what it is, not as equality
        return EqualityResult("unknown", r.method, False,
                              f"the float verifier found them equal up to its tolerance, not a proof "
                              f"({r.message}); regions: {r0.message}")
    return EqualityResult("unknown", r.method, False, f"{r0.message}; verifier: {r.message}")


def _values(net: Network, x: tuple) -> tuple:
    return tuple(net.exact()(np.array(x, dtype=object)))


def _by_regions(f: Network, g: Network, B: Box, deadline: float | None = None) -> EqualityResult:
    """The exact region-by-region comparison; ``deadline`` (a ``time.time()`` value) ends
    it "unknown"."""
    from .. import regions

    F, G = f.exact().without_skip(), g.exact().without_skip()
    H = F.concat(G) if (F.n_hidden_layers or G.n_hidden_layers) else None
    lo = [Fraction(float(v)) for v in B.lo]
    hi = [Fraction(float(v)) for v in B.hi]
    corners = [tuple(p) for p in itertools.product(*zip(lo, hi, strict=True))]
    if H is None:  # both affine
        for p in corners:
            if _values(F, p) != _values(G, p):
                return EqualityResult("different", "regions", True, "affine maps differ at a box vertex",
                                      p, _values(F, p), _values(G, p))
        return EqualityResult("equal", "regions", True, "equal affine maps (checked at the box vertices)")
    report: dict = {}
    rs = list(regions.iter_regions(H.float(), B, deadline=deadline, report=report))
    if report.get("partial", True) or len(rs) == 0:
        why = report.get("stopped") or "incomplete"
        return EqualityResult("unknown", "regions", False, f"region enumeration stopped ({why})")
    # The enumeration is in floating point: each region is re-described exactly and its
    # volume bounded from below exactly, so that a region it missed (thinner than its
    # tolerances) shows up as volume the regions do not cover.
    brows = box_rows(lo, hi)
    covered = Fraction(0)
    seen: set[tuple[bool, ...]] = set()
    exact_points: list[tuple] = []
    for R in rs:
        if deadline is not None and time.time() > deadline:
            return EqualityResult("unknown", "regions", False,
                                  f"the time limit ended the exact comparison of {len(rs)} regions")
        found = _strict_point(H, R)
        if found is None:
            # the float pattern and the exact one disagree there (a pre-activation of 1e-12
            # read as 0): no proof either way from this region, but an exact evaluation at
            # its points may still show a difference (f - g = 1e-12 everywhere read "equal")
            for c in [*_candidates(R), *np.asarray(R.vertices)]:
                p = tuple(Fraction(float(v)) for v in c)
                fx, gx = _values(F, p), _values(G, p)
                if fx != gx:
                    return EqualityResult("different", "regions", True,
                                          "the networks differ at an exact point of a linear region",
                                          p, fx, gx, len(rs))
            return EqualityResult("unknown", "regions", False,
                                  f"no exact interior point found for region {R.index}")
        x, signs, rows = found
        Af, cf = F.local_affine(np.array(x, dtype=object))
        Ag, cg = G.local_affine(np.array(x, dtype=object))
        if not (np.all(Af == Ag) and np.all(cf == cg)):
            for p in _probe_points(R, x):
                fx, gx = _values(F, p), _values(G, p)
                if fx != gx:
                    return EqualityResult("different", "regions", True,
                                          "the affine maps differ on a linear region", p, fx, gx, len(rs))
            return EqualityResult("unknown", "regions", False, "affine maps differ but no witness found")
        irows = int_rows(rows + brows)
        pts = snap_vertices(R.vertices, irows)
        exact_points += pts
        if signs not in seen:  # distinct exact patterns: disjoint interiors
            seen.add(signs)
            covered += volume_lower_bound(pts, irows)
    box_volume = math.prod((h - v for v, h in zip(lo, hi, strict=True)), start=Fraction(1))
    if covered != box_volume:
        # Some region was missed (or a vertex not recovered): look for a difference at
        # exact points first - a missed sliver usually touches a box or region vertex.
        for p in [*corners, *exact_points]:
            fx, gx = _values(F, p), _values(G, p)
            if fx != gx:
                return EqualityResult("different", "regions", True,
                                      "the networks differ at an exact vertex (the float region "
                                      "enumeration missed a region)", p, fx, gx, len(rs))
        return EqualityResult("unknown", "regions", False,
                              f"the regions found leave volume {float(box_volume - covered):.3g} of the "
                              "box uncovered (exact); a region may have been missed", n_regions=len(rs))
    return EqualityResult("equal", "regions", True,
                          f"same exact affine map on all {len(rs)} linear regions, which cover the "
                          "box (exact volumes)", n_regions=len(rs))


def _strict_point(H: Network, R: Any) -> tuple[tuple, tuple[bool, ...], list[Row]] | None:
    """A rational point inside region ``R`` at which the exact activation pattern of
    ``H`` is locally constant (every pre-activation is nonzero, or identically zero near
    the point) and agrees with the region's pattern on the nonzero ones; with that
    pattern and the exact rows of its region (:func:`~relulab.logic._cover.exact_cell`)."""
    want = np.asarray(R.pattern, dtype=bool)
    for c in _candidates(R):
        x = tuple(Fraction(float(v)) for v in c)
        cell = exact_cell(H, x)
        if cell is None:
            continue
        signs, degenerate, rows = cell
        if all(s == w for s, w, dg in zip(signs, want, degenerate, strict=True) if not dg):
            return x, tuple(signs), rows
    return None


def _candidates(R: Any) -> Iterator[np.ndarray]:
    """The region's interior point, then (only when asked for: an LP) its Chebyshev centre."""
    yield R.interior_point
    try:
        c, _ = R.chebyshev_center()
    except Exception:  # noqa: BLE001 - only a second candidate
        return
    yield c


def _probe_points(R: Any, x: tuple) -> list[tuple]:
    pts = [x]
    for v in np.asarray(R.vertices):
        pts.append(tuple(xi + (Fraction(float(vi)) - xi) / 2 for xi, vi in zip(x, v, strict=True)))
    return pts
