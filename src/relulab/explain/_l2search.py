"""Exact l2 counterfactual: a best-first search over the linear regions, from the
region of x outwards through region adjacency.

A region's priority is a proven lower bound of its Euclidean distance to x (a convex
QP's dual value, equal to the distance when the QP is solved exactly), a lower bound for
every counterfactual inside it.  Regions are expanded in increasing priority; each
expansion solves the target QP on the region (the region cut by the target decision,
which is affine there) and pushes the neighbours across its facets.  The ball around x
of any radius meets a set of regions connected through facets, so when the smallest
open priority reaches the best distance found, that distance is optimal; under a time
limit the smallest open priority is a certified lower bound.
"""

from __future__ import annotations

import heapq
import time

import numpy as np

from ..network import Network
from . import _geometry as G
from ._qp import ProjectionFailed, project
from ._space import Space
from .decision import Decision, ExplainError

# Stop when the next region is no closer than the best counterfactual up to this
# relative slack (the QPs are polished to ~1e-12 but may be left at ~1e-8).
STOP_REL = 1e-9  # tol: relative slack of a polished QP distance


def _rows(net: Network, pattern: list[np.ndarray], space: Space):
    Gm, h = G.pattern_hrep(net, pattern)
    return Gm, h, np.vstack([Gm, space.A]), np.concatenate([h, space.b])


def l2_search(net: Network, x: np.ndarray, dec: Decision, space: Space, margins: tuple, *,
              time_limit: float | None, max_regions: int | None) -> dict:
    t0 = time.perf_counter()
    try:
        start, _, _ = project(space.A, space.b, space.lo, space.hi, x)
    except ProjectionFailed as e:
        raise ExplainError(f"why_not (l2): the search space itself: {e}") from None
    if start is None:
        return {"status": "infeasible", "regions": 0}
    unresolved = np.inf  # the least distance of a region whose target part a QP left open
    unchecked = False    # whether that was a target part without a point passing the forward pass
    part_lowers: list[float] = []   # proven lower bounds of the target parts solved
    N = net.n_neurons
    heap: list = []
    seen: set[bytes] = set()
    tie = 0

    def push(flat: np.ndarray) -> None:
        nonlocal tie
        key = np.packbits(flat).tobytes()
        if key in seen:
            return
        seen.add(key)
        pat = net.split_pattern(flat)
        _, _, A, b = _rows(net, pat, space)
        try:
            z, _, dist = project(A, b, space.lo, space.hi, x)   # its proven lower bound
        except ProjectionFailed:  # non-empty, distance unknown: 0 is a sound lower bound
            z, dist = x, 0.0
        if z is None:
            return
        tie += 1
        heapq.heappush(heap, (dist, tie, flat))

    push(net.pattern_vector(start[None])[0] if N else np.zeros(0, dtype=bool))
    best, best_z, best_y = np.inf, None, None
    expanded = 0
    status = "optimal"
    while heap:
        dist, _, flat = heap[0]
        if dist >= best - STOP_REL * (1 + best):
            break
        if (time_limit is not None and time.perf_counter() - t0 > time_limit) or \
                (max_regions is not None and expanded >= max_regions):
            status = "time_limit"
            break
        heapq.heappop(heap)
        expanded += 1
        pat = net.split_pattern(flat)
        Gm, h, A, b = _rows(net, pat, space)
        Cr, cr = net.affine_for_pattern(pat)
        T = dec.C @ Cr
        first = None   # the distance of the target part under the first (weakest) margin
        for mg in margins:
            tv = dec.d - mg - dec.C @ cr
            try:
                z, dz, dz_low = project(np.vstack([A, T]), np.concatenate([b, tv]), space.lo, space.hi, x)
            except ProjectionFailed:  # this region's target part stays open: no optimum claimed
                if dist < unresolved:
                    unresolved, unchecked = dist, False
                first = None
                break
            if first is None:
                # the weakest margin's part holds the others: its bound holds for the region
                part_lowers.append(dz_low)
            if z is None or dz_low >= best:
                break
            first = dz if first is None else first
            y = net(z[None])[0]
            if not (dec.holds(y[None])[0] and space.contains(z)):
                # the QP's point sits on the target part's boundary, where rounding (or a
                # tie the margin-0 rows allow, e.g. logits all 0 behind a ReLU) can fail
                # the forward pass: a point pulled a little towards the part's interior
                # is only a little farther
                z, y = _pulled_in(net, dec, space, np.vstack([A, T]), np.concatenate([b, tv]), z)
                dz = float(np.linalg.norm(z - x)) if z is not None else dz
            if z is not None and dz < best:
                best, best_z, best_y = dz, z, y
                first = None
                break
        if first is not None and first < best:
            # the region has target points at this distance (a single tie point, say) but
            # none passed the forward pass: no optimum is claimed past this distance
            if first < unresolved:
                unresolved, unchecked = first, True
        # neighbours across the region's facets that lie on neuron hyperplanes
        box_rows = _box_rows(space)
        allA = np.vstack([A, box_rows[0]])
        allb = np.concatenate([b, box_rows[1]])
        nz = np.linalg.norm(Gm, axis=1) > 0
        cand = np.flatnonzero(nz)
        if cand.size:
            deadline = None if time_limit is None else time.monotonic() + time_limit - (time.perf_counter() - t0)
            facets = G.irredundant(allA, allb, deadline=deadline)
            if deadline is not None and time.monotonic() > deadline:
                # one LP per row ran past the limit: the region goes back to the frontier
                # unexpanded (its distance stays in the lower bound) and the search stops
                heapq.heappush(heap, (dist, -1, flat))
                status = "time_limit"
                break
            for j in facets[facets < N]:
                nb = flat.copy()
                nb[j] = ~nb[j]
                push(nb)
    slack = STOP_REL * (1 + best) if np.isfinite(best) else 0.0
    # a target part whose QP point (an upper bound) was not matched by its dual bound may
    # hold a counterfactual closer than the best point, down to that bound
    inexact = min([v for v in part_lowers if v < best - slack], default=np.inf)
    lower = min(best, heap[0][0], unresolved, inexact) if heap else min(best, unresolved, inexact)
    if unresolved < best - slack:
        # (an open part within the polish's slack of the best point changes no answer:
        # the lower bound holds it, and "optimal" is judged against that bound)
        status = "numerical"
    elif inexact < best - slack and status == "optimal":
        status, unresolved = "numerical", inexact
    if status == "optimal" and best_z is None:
        status = "infeasible"
    return {"status": status, "z": best_z, "y": best_y, "distance": best, "lower_bound": lower,
            "regions": expanded, "seen": len(seen), "time": time.perf_counter() - t0,
            **({"unresolved_from": unresolved, "unresolved_unchecked": unchecked,
                "unresolved_inexact": bool(inexact < best - slack and unresolved == inexact)}
               if status == "numerical" else {})}


# fractions of the way from a boundary point to the interior's centre tried in turn
PULL_STEPS = (1e-9, 1e-7, 1e-5, 1e-3, 1e-1)  # tol: steps towards the centre


def _pulled_in(net: Network, dec: Decision, space: Space, A: np.ndarray, b: np.ndarray,
               z: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
    """A point of ``{A v <= b}`` in the space near ``z`` whose forward pass meets the
    decision: ``z`` moved by each of PULL_STEPS towards the set's Chebyshev centre (the
    first that passes), or ``(None, None)`` (no interior: a single tie point, say)."""
    from ..lp import LPError, chebyshev_center

    try:
        c, r = chebyshev_center(A, b, space.lo, space.hi)
    except LPError:
        return None, None
    if c is None or not r > 0:
        return None, None
    for t in PULL_STEPS:
        zt = z + t * (c - z)
        y = net(zt[None])[0]
        if dec.holds(y[None])[0] and space.contains(zt):
            return zt, y
    return None, None


def _box_rows(space: Space) -> tuple[np.ndarray, np.ndarray]:
    d = space.lo.shape[0]
    eye = np.eye(d)
    fh, fl = np.isfinite(space.hi), np.isfinite(space.lo)
    return np.vstack([eye[fh], -eye[fl]]), np.concatenate([space.hi[fh], -space.lo[fl]])
