"""Unbounded domains (all of R^d, unbounded polytopes): enumerate inside a large
artificial box, then certify with LPs that nothing lies beyond it.

Certificate: the dual graph of the complex is connected, so the regions found are
all of them as soon as no region has a facet outside the box.  Regions that do not
touch the artificial box are exact already; for each one that does, every neuron or
domain row that is not one of its facets inside the box is checked (one LP each) not
to be a facet of the true, unbounded region.  When the check fails the box grows
eightfold and the enumeration is redone.
"""

from __future__ import annotations

import time

import numpy as np

from ..lp import LPModel
from ..tolerance import HIGHS_SMALL
from ._assembly import assemble, run_engines
from ._bfs import distinct_halfspaces, hidden_facet, is_facet, near_twins, pattern_hrep
from ._engine import Problem
from ._types import RegionSet

__all__ = ["enumerate_unbounded"]


class _Expired(Exception):
    """The deadline came during the certificate's LPs."""


def _check(deadline: float | None) -> None:
    if deadline is not None and time.time() > deadline:
        raise _Expired


def bounded_extent(rs, net, A_dom: np.ndarray, b_dom: np.ndarray, deadline: float | None = None) -> float:
    """The largest coordinate (in absolute value) of a region that touches the artificial
    box but is bounded (its own rows, without the box, enclose it), 0.0 when there is none.
    Such a region sticks out of the box: its ``bounded`` flag and its vertices (clipped to
    the box) are only right once the box contains it.  2 d LPs per region at the box."""
    pats = rs.patterns
    d = rs.dim
    extent = 0.0
    for i in np.flatnonzero(~rs.bounded):
        _check(deadline)
        A, b = pattern_hrep(net, pats[i], A_dom, b_dom)
        m = LPModel(np.zeros(d), A_ub=A, b_ub=b)
        far = 0.0
        for k in range(2 * d):
            c = np.zeros(d)
            c[k % d] = -1.0 if k < d else 1.0
            m.set_objective(c)
            res = m.solve()
            if res.status != "optimal":  # unbounded in this direction (or no answer)
                break
            far = max(far, abs(float(res.objective)))
        else:
            extent = max(extent, far)
    return extent


def certify(rs, net, A_dom: np.ndarray, b_dom: np.ndarray, deadline: float | None = None) -> bool:
    """True when no unbounded region has a facet outside the artificial box (raises
    :class:`_Expired` past ``deadline``)."""
    pats = rs.patterns
    for i in np.flatnonzero(~rs.bounded):
        _check(deadline)
        A, b = pattern_hrep(net, pats[i], A_dom, b_dom)
        nrm = np.linalg.norm(A, axis=1)
        live = np.flatnonzero(nrm > 0)
        A, b = A[live] / nrm[live, None], b[live] / nrm[live]
        tiny = (A != 0) & (np.abs(A) <= HIGHS_SMALL)
        if tiny.any():
            # HiGHS would drop these coefficients (lines crossing ~1e9 away): its facet
            # test could miss a region, so the enumeration is not certified
            return False
        # test each distinct half-space once: a neuron repeated (or negated) hides its
        # own facet when only one copy is relaxed
        keep, rep = distinct_halfspaces(A, b, live, len(pats[i]))
        have = set(rs.facet_ids[rs.facet_ptr[i] : rs.facet_ptr[i + 1]].tolist())
        known = {int(rep[j]) for j, row in enumerate(live) if int(row) in have}
        A, b = A[keep], b[keep]
        m = LPModel(np.zeros(A.shape[1]), A_ub=A, b_ub=b)
        for q in range(len(keep)):
            if q in known:
                continue
            if q % 16 == 0:
                _check(deadline)
            if is_facet(m, A, b, q):
                return False
        # near twins beyond the box hide each other's facet (each test above relaxed one)
        for g in near_twins(A, b):
            if not known.intersection(g.tolist()) and hidden_facet(m, A, b, g):
                return False
    return True


def enumerate_unbounded(pb: Problem, dom, *, max_regions=None, progress=False, engine="auto",
                        vertices=True, deadline: float | None = None) -> RegionSet:
    """The regions of ``pb`` (an unbounded domain, ``pb.big`` the first artificial box
    half-width), certified complete when possible (``rs.certified``).  At ``deadline``
    (a ``time.time()`` value) it returns the last box's regions, partial."""
    netf = pb.net
    M = float(pb.big)
    rs = None
    for _ in range(6):
        if rs is not None and deadline is not None and time.time() > deadline:
            rs.partial = True
            rs.certified = False
            rs.info["stopped"] = (f"time limit reached before the box of half-width {M:g} "
                                  "was enumerated")
            return rs
        pb.big = M
        run = run_engines(pb, progress, max_regions, engine, vertices, deadline=deadline)
        rs = assemble(pb, run, domain=dom, keep_graph=False, info={"box_halfwidth": M})
        if rs.partial:
            rs.certified = False
            return rs
        try:
            ok = certify(rs, netf, pb.A_dom, pb.b_dom, deadline)
            far = bounded_extent(rs, netf, pb.A_dom, pb.b_dom, deadline) if ok else 0.0
        except _Expired:
            # the certificate's LPs (one per row of every region at the box) ran 17 s
            # past a 1 s limit: the box's regions, partial and not certified
            rs.partial = True
            rs.certified = False
            rs.info["stopped"] = (f"time limit reached while certifying the box of half-width {M:g} "
                                  "(regions beyond it may be missing)")
            return rs
        if ok:
            if far < M:  # every region touching the box is really unbounded
                # (unless a sign decision was too close to call: see _engine._count_ties)
                rs.certified = not run.near_ties
                return rs
            M = max(8.0 * M, 2.0 * far)  # a bounded region sticks out: enclose it
            continue
        M *= 8.0
    rs.certified = False
    return rs
