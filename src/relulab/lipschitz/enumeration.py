"""Exact route (a): the maximum over linear regions of the operator norm of the
region's Jacobian.

A CPWL function on a convex set with non-empty interior is Lipschitz with constant
``max_R ||J_R||_{p->q}`` over its full-dimensional pieces (a segment crosses finitely
many pieces and the triangle inequality adds up), and the bound is attained inside
the best piece.  Over R^d the regions are enumerated on the whole space (the region
module certifies that nothing lies beyond its artificial box).

Example:
    >>> import numpy as np
    >>> from relulab import Network, Box
    >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]])   # 2 relu(x) + relu(-x)
    >>> r = by_enumeration(net, Box([-1], [1]), 1.0, None)
    >>> r.upper, r.witness.norm, r.complete
    (2.0, 2.0, True)
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..domain import Box, Polytope
from ..network import Network
from ..tolerance import ROUNDOFF
from .norms import operator_norm
from .result import LipschitzWitness
from .witness import certify_point

__all__ = ["by_enumeration", "EnumerationOutcome", "certify_point"]


@dataclass(frozen=True)
class EnumerationOutcome:
    """What the region enumeration reached: ``lower <= L <= upper``, the best witness,
    ``complete`` (every region seen), the number of regions and seconds.

    Example:
        >>> from relulab import Network, Box
        >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> o = by_enumeration(net, Box([-1], [1]), 2, None)
        >>> o.lower, o.upper, o.complete, o.n_regions
        (2.0, 2.0, True, 2)
    """
    lower: float
    upper: float
    witness: LipschitzWitness | None
    complete: bool
    n_regions: int
    seconds: float


def _best_certified(net, pts, norms_lo, p, q, source, domain):
    order = np.argsort(-norms_lo)
    for i in order[:20]:
        w = certify_point(net, pts[i], p, q, source, domain)
        if w is not None:
            return w
    return None


def by_enumeration(net: Network, domain: Box | Polytope | None, p: float, q: float | None,
                   deadline: float | None = None, *, region_set=None) -> EnumerationOutcome:
    """Enumerate the regions (all of R^d when ``domain`` is None) and take the largest
    Jacobian norm; a deadline stops the stream (bounded domains) and marks it incomplete.
    ``region_set``: the regions of ``net`` over ``domain`` already enumerated (several norms
    from one enumeration).

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> o = by_enumeration(net, None, 2, None)   # over all of R
        >>> o.upper, o.witness.norm, o.complete
        (2.0, 2.0, True)
    """
    from .. import regions

    t0 = time.perf_counter()
    complete = True
    if domain is None or region_set is not None:
        rs = region_set if region_set is not None else regions.enumerate(
            net, Polytope.whole_space(net.input_dim))
        d = net.input_dim
        Cs = rs.affine[:, :, :d]
        pts = rs.interior
        # an uncertified set (R^d past the artificial box, or a near tie) may miss a region
        complete = not rs.partial and rs.certified
    else:
        Cl, Pl = [], []
        report: dict = {}
        for R in regions.iter_regions(net, domain, deadline=deadline, report=report):
            Cl.append(R.affine[0])
            Pl.append(R.interior_point)
            if deadline is not None and time.time() > deadline:
                break
        # a stream cut anywhere (here, at the deadline inside the engine, or by the memory
        # budget) leaves regions out, and a near tie may merge a thin one: no upper bound
        complete = not report.get("partial", True) and report.get("certified", False)
        Cs = np.array(Cl).reshape(len(Cl), net.output_dim, net.input_dim)
        pts = np.array(Pl).reshape(len(Pl), net.input_dim)
    lo = np.empty(len(Cs))
    up = np.empty(len(Cs))
    for i, C in enumerate(Cs):
        nb = operator_norm(C, p, q)
        lo[i], up[i] = nb.lower, nb.upper
    if len(Cs) == 0:
        return EnumerationOutcome(0.0, np.inf, None, False, 0, time.perf_counter() - t0)
    wit = _best_certified(net, pts, lo, p, q, "enumeration", domain)
    if wit is None or wit.norm < lo.max() * (1 - ROUNDOFF):
        # the best region's stored interior point sits too close to a facet: its
        # Chebyshev centre is deeper inside
        i = int(np.argmax(lo))
        alt = _chebyshev_witness(net, Cs[i], pts[i], p, q, domain)
        if alt is not None and (wit is None or alt.norm > wit.norm):
            wit = alt
    lower = wit.norm if wit is not None else 0.0
    upper = float(up.max()) if complete else np.inf
    return EnumerationOutcome(lower, max(upper, lower), wit, complete, len(Cs),
                              time.perf_counter() - t0)


def _chebyshev_witness(net, C, x, p, q, domain):
    from .milp import region_witness

    pat = net.pattern_vector(np.asarray(x)[None])[0]
    return region_witness(net, pat, domain, p, q, "enumeration", global_=domain is None)
