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

from ..bounds import float_layers
from ..domain import Box, Polytope
from ..network import Network
from ..tolerance import ROUNDOFF
from .bab import by_bab
from .exact_box import EXACT_MAX_UNSTABLE, box_max
from .norms import operator_norm
from .result import LipschitzWitness
from .rounding import box_preactivations, jacobian_slack
from .witness import certify_point

__all__ = ["by_enumeration", "EnumerationOutcome", "certify_point", "vertex_mismatches", "pattern_check"]


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
    # vertices where f differs from its region's affine map (a merged sliver): see
    # vertex_mismatches; any makes the outcome incomplete
    n_vertex_mismatches: int = 0
    # the cross-check of a box's result against its ranked patterns (pattern_check)
    pattern_check: str = "skipped"
    # a limit (the deadline, the memory budget) cut the enumeration short; incomplete
    # without it: a near tie or a merged sliver left the count unproved
    stopped: bool = False


# f at a region's vertex must equal the region's affine map there, up to this share of
# the values' scale (float vertices of exact ones: rounding ~1e-16 of it)
VERTEX_MATCH_TOL = 1e-6  # tol: far above rounding, far below a merged spike's jump
# vertex lists are kept by the region engine in dimensions up to this
VERTEX_CHECK_MAX_DIM = 2


def vertex_mismatches(net: Network, affine: np.ndarray, vertex_ptr: np.ndarray, vertices: np.ndarray) -> int:
    """How many region vertices ``v`` have ``f(v)`` away from their region's affine map
    ``C v + c`` (``affine[i] = [C | c]``; region ``i``'s vertices are
    ``vertices[vertex_ptr[i]:vertex_ptr[i + 1]]``, as a RegionSet keeps them).

    f is continuous, so at a vertex of a region it equals that region's map.  A region
    merged with a sliver thinner than the engine's sign tolerance (a spike 1e-9 wide at
    x = 1000) has the wrong map there: the spike's height shows at the vertex although
    its width is below the float resolution of the domain.  The scale of the comparison
    includes the largest slope found times the vertex's size, so that float vertices of
    steep functions do not count.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> net = Network([[[1.0]], [[1.0]]], [[0.0], [0.0]])           # relu(x)
        >>> aff = np.array([[[0.0, 0.0]], [[1.0, 0.0]]])               # x <= 0: 0, x >= 0: x
        >>> ptr, V = np.array([0, 2, 4]), np.array([[-1.0], [0.0], [0.0], [1.0]])
        >>> vertex_mismatches(net, aff, ptr, V), vertex_mismatches(net, aff[::-1], ptr, V)
        (0, 2)
    """
    V = np.asarray(vertices, float)
    if not len(V):
        return 0
    d = affine.shape[2] - 1
    idx = np.repeat(np.arange(len(affine)), np.diff(vertex_ptr))
    C, c = affine[idx, :, :d], affine[idx, :, d]
    pred = np.einsum("kmd,kd->km", C, V) + c
    f = np.asarray(net(V), float).reshape(pred.shape)
    slope = float(np.max(np.abs(affine[:, :, :d]), initial=0.0))
    scale = 1.0 + np.abs(f) + np.abs(pred) + slope * d * np.max(np.abs(V), axis=1, keepdims=True)
    return int(np.count_nonzero(np.any(np.abs(f - pred) > VERTEX_MATCH_TOL * scale, axis=1)))


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
    Jacobian norm; a deadline (a ``time.time()`` moment) stops the enumeration and marks it
    incomplete.
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
            net, Polytope.whole_space(net.input_dim),
            time_limit=None if deadline is None else max(deadline - time.time(), 1e-3))
        d = net.input_dim
        Cs = rs.affine[:, :, :d]
        pts = rs.interior
        # an uncertified set (R^d past the artificial box, or a near tie) may miss a region
        complete = not rs.partial and rs.certified
        stopped = bool(rs.partial)
        n_bad = 0
        if d <= VERTEX_CHECK_MAX_DIM and len(rs):
            n_bad = vertex_mismatches(net, rs.affine, rs.vertex_ptr, rs.vertices)
    else:
        Cl, Pl, Vl, Al = [], [], [], []
        report: dict = {}
        check = net.input_dim <= VERTEX_CHECK_MAX_DIM
        for R in regions.iter_regions(net, domain, deadline=deadline, report=report):
            Cl.append(R.affine[0])
            Pl.append(R.interior_point)
            if check:
                Vl.append(R.vertices)
                Al.append(np.concatenate([R.affine[0], np.asarray(R.affine[1]).reshape(-1, 1)], axis=1))
            if deadline is not None and time.time() > deadline:
                break
        # a stream cut anywhere (here, at the deadline inside the engine, or by the memory
        # budget) leaves regions out, and a near tie may merge a thin one: no upper bound
        complete = not report.get("partial", True) and report.get("certified", False)
        stopped = bool(report.get("partial", True)) or (deadline is not None and time.time() > deadline)
        Cs = np.array(Cl).reshape(len(Cl), net.output_dim, net.input_dim)
        pts = np.array(Pl).reshape(len(Pl), net.input_dim)
        n_bad = 0
        if check and Al:
            ptr = np.cumsum([0] + [len(v) for v in Vl])
            n_bad = vertex_mismatches(net, np.array(Al), ptr, np.concatenate(Vl).reshape(-1, net.input_dim))
    # a vertex where f leaves its region's map: a sliver was merged, its slope unseen
    complete = complete and n_bad == 0
    lo = np.empty(len(Cs))
    up = np.empty(len(Cs))
    for i, C in enumerate(Cs):
        nb = operator_norm(C, p, q)
        lo[i], up[i] = nb.lower, nb.upper
    if len(Cs) == 0:
        return EnumerationOutcome(0.0, np.inf, None, False, 0, time.perf_counter() - t0, stopped=stopped)
    wit = _best_certified(net, pts, lo, p, q, "enumeration", domain)
    if wit is None or wit.norm < lo.max() * (1 - ROUNDOFF):
        # the best region's stored interior point sits too close to a facet: its
        # Chebyshev centre is deeper inside
        i = int(np.argmax(lo))
        alt = _chebyshev_witness(net, Cs[i], pts[i], p, q, domain)
        if alt is not None and (wit is None or alt.norm > wit.norm):
            wit = alt
    upper = float(up.max()) if complete else np.inf
    check = "skipped"
    if complete and (isinstance(domain, Box) or (isinstance(domain, Polytope) and domain.is_bounded)) \
            and net.n_neurons:
        # a polytope is checked on its bounding box, a superset: "agrees" there holds for
        # it too (a polytope was never checked, and a sliver of slope 1e12 read "exact 0")
        box = domain if isinstance(domain, Box) else domain.bounding_box()
        check, missed, box_upper = pattern_check(net, box, p, q, upper, deadline)
        if missed is not None:
            # a region thinner than the engine's resolution carries a larger slope: in
            # the domain itself, or (a polytope) perhaps only in its bounding box, whose
            # bound still holds for the polytope but need not be attained in it
            if isinstance(domain, Box) or bool(domain.contains(missed.x, tol=0.0)):
                wit = missed
            else:
                check = "missed in the bounding box"
            upper = box_upper
            complete = bool(np.isfinite(upper))
    lower = wit.norm if wit is not None else 0.0
    return EnumerationOutcome(lower, max(upper, lower), wit, complete, len(Cs),
                              time.perf_counter() - t0, n_bad, check, stopped)


# the pattern check's margin: a pattern must beat the enumeration's maximum by more than
# float evaluation of the same Jacobian could (the norms of one region computed twice)
CHECK_REL_TOL = 1e-9  # tol: two float evaluations of one Jacobian's norm
# its budget: LPs for the ranked patterns (ordinary networks with up to 16 unstable
# neurons closed within 331), then seconds of branch and bound when they do not settle
CHECK_MAX_LPS = 1000
CHECK_BAB_SECONDS = 2.0
# a closed branch and bound agrees when its bound is within the front door's exactness
# tolerance (core.LIP_REL_TOL) of the enumeration's maximum
BAB_AGREE_TOL = 1e-6  # tol: core.LIP_REL_TOL


def pattern_check(net: Network, box: Box, p: float, q: float | None, found: float,
                  deadline: float | None = None) -> tuple[str, LipschitzWitness | None, float]:
    """Cross-check of an enumeration over ``box`` that found the maximum ``found``:
    is a pattern of the box's unstable neurons with a larger Jacobian norm realised by a
    full-dimensional region?  The patterns are ranked and refuted with the zoomed
    Chebyshev LPs of :func:`relulab.lipschitz.exact_box.box_max`, which resolve regions
    (e.g. ``4e-16`` wide, next to weights of ``2e5``) below the region engine's sign
    tolerance; where that does not settle it (the LP cap, or a realised region whose
    centre is not certifiably inside), a short branch and bound
    (:func:`relulab.lipschitz.bab.by_bab`, independent of the region engine) does.
    Returns ``(verdict, witness, upper)``:

    * "agrees": nothing above ``found`` is realised; ``found`` stands;
    * "missed": ``witness`` is a certified point of a region the enumeration did not
      list; ``upper`` is a proven bound over the box (the exact maximum plus its rounding
      slack), or inf when the search did not close the box;
    * "inconclusive": neither search settled it within its budget (``CHECK_MAX_LPS``
      LPs, ``CHECK_BAB_SECONDS``, the deadline); ``found`` stands as the enumeration's;
    * "skipped": more than ``EXACT_MAX_UNSTABLE`` unstable neurons, too many patterns.

    Example:
        >>> from relulab import Network, Box
        >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> pattern_check(net, Box([-1], [1]), 1.0, None, 2.0)[0]
        'agrees'
        >>> v, w, up = pattern_check(net, Box([-1], [1]), 1.0, None, 1.0)   # as if x > 0 were missed
        >>> v, w.norm, bool(2.0 <= up < 2.0 + 1e-12)
        ('missed', 2.0, True)
    """
    Ws, bs, sk = float_layers(net)
    pre = box_preactivations(Ws, bs, box.lo[None], box.hi[None])
    if sum(int(np.sum((a < 0) & (c > 0))) for a, c in pre) > EXACT_MAX_UNSTABLE:
        return "skipped", None, found
    m = box_max(net, box.lo, box.hi, [(a[0], c[0]) for a, c in pre], p, q, found,
                rel_tol=CHECK_REL_TOL, source="enumeration", max_lps=CHECK_MAX_LPS, deadline=deadline)
    above = found * (1 + CHECK_REL_TOL)
    if m.witness is not None and m.witness.norm > above:
        slack = float(jacobian_slack(Ws, pre, sk, p, q, net.input_dim)[0])
        return "missed", m.witness, (m.upper + slack if m.closed else np.inf)
    if m.closed:
        return "agrees", None, found
    end = time.time() + CHECK_BAB_SECONDS
    bb = by_bab(net, box, p, q, end if deadline is None else min(deadline, end))
    if bb.witness is not None and bb.witness.norm > above:
        return "missed", bb.witness, (bb.upper if bb.complete else np.inf)
    if bb.complete and bb.upper <= found * (1 + BAB_AGREE_TOL):
        return "agrees", None, found
    return "inconclusive", None, found


def _chebyshev_witness(net, C, x, p, q, domain):
    from .milp import region_witness

    pat = net.pattern_vector(np.asarray(x)[None])[0]
    return region_witness(net, pat, domain, p, q, "enumeration", global_=domain is None)
