"""``why``: the reasons for the decision a network takes at one input, read off its
linear regions, each certified with relulab.verify's exact MILP.

* the *region rule*: the linear region of ``x`` (its binding facets) cut by the
  decision's own boundary inside it, where the network is one affine map;
* the *decision rule*: a minimal set of axis-aligned intervals around ``x`` (grown
  side by side as far as the decision holds, each side pushed by one MILP) that may
  span many regions; every kept bound carries a witness that it cannot be dropped.

Example:
    >>> import numpy as np
    >>> from relulab import Network, Box
    >>> net = Network([[[1.0, 1.0]]], [[-1.0]])          # f = x0 + x1 - 1
    >>> r = why(net, [1.0, 0.5], Box([0, 0], [1, 1]))
    >>> r.decision, r.region_rule.text(3)
    ('positive', 'x0 + x1 >= 1 -> positive')
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..domain import Box, Polytope
from ..limits import Deadline
from ..network import Network
from ..results import Result
from ..tolerance import FEAS_TOL, MIN_RADIUS, ROUNDOFF
from . import _geometry as G
from ._certify import certify, max_output, restrict
from ._common import (
    check_domain,
    check_flag,
    check_output_resolution,
    check_point,
    check_time_limit,
    float_net,
)
from ._milp import ExplainMILP
from .decision import (
    Decision,
    ExplainError,
    as_decision,
    check_class_names,
    decision_at,
    decision_tol,
    margin_tol,
)
from .features import feature_names
from .rule import Rule

__all__ = ["why", "WhyResult"]

# An input breaks the decision when a decision row exceeds its bound by this much
# (relative to floor + max|f(x)|, floor = min(1, the bound of |f| on the domain)): ties on a rule's boundary do not count.  The k-th side
# pushed uses (k + 2) times it, so the faces already placed (where the decision is
# broken by at most the previous margin) never count as breaking it.
BREAK_MARGIN = 1e-8  # tol: a decision row above its bound by this is broken
# The bisection of the distance to the decision boundary stops at this relative width.
BISECT_REL = 1e-9  # tol: as narrow as the MILP's relative gap
# Seconds of one relulab.verify call in the radius bisection without a time limit, and of
# the MILP that decides the radius when the verifier gives up.
FALLBACK_SECONDS = 30.0


@dataclass(frozen=True, eq=False)
class WhyResult(Result):
    """Why ``net`` takes ``decision`` at ``x``.

    Example:
        >>> from relulab import Network, Box
        >>> r = why(Network([[[1.0, 0.0]]], [[0.0]]), [0.5, 0.0], Box([-1, -1], [1, 1]))
        >>> r.decision, r.status, r.rule.text(), r.to_dict()["status"]
        ('positive', 'complete', 'x0 >= 0 -> positive', 'complete')

    Fields:
        x, output: the input and ``f(x)``.
        decision: the decision's label.
        pattern: the activation pattern of x's region ("1" active, "0" inactive).
        affine: ``(C, c)`` with ``f(y) = C y + c`` on the region.
        region_rule: the region of x cut by the decision boundary (binding facets only).
        region_facets: what carries each constraint of the region rule:
            ``"neuron L.i"`` (layer L, index i, from 1) or ``"decision row j"``.
        rule: the minimal decision-preserving interval rule, or None: when x lies on the
            decision boundary (no box around it keeps the decision; proven by a radius
            search that ran to its end), or when the radius search stopped early (a time
            limit) before it proved any box; ``info["no_rule"]`` says which.
        radius: the largest ``r`` such that the cube of half-width ``r`` around x keeps
            the decision (proven lower bound from the MILP; inf if the decision never
            changes in the domain).
        time: seconds.
        status (property, in the JSON): "complete" when the radius search and every
            side push of the interval rule ran to their end, "partial" when one stopped
            early (a time limit, or the verifier answered unknown; ``info["stopped"]``
            says which): the radius is then a proven but possibly loose lower bound, and
            a side may not be pushed out as far as it could go.
    """

    x: np.ndarray
    output: np.ndarray
    decision: str
    pattern: str
    affine: tuple
    region_rule: Rule
    region_facets: tuple
    rule: Rule | None
    radius: float
    time: float
    info: dict = field(default_factory=dict)

    @property
    def status(self) -> str:
        return "partial" if self.info.get("stopped") else "complete"

    def to_dict(self) -> dict:
        d = super().to_dict()
        d["status"] = self.status
        return d

    @property
    def no_rule_reason(self) -> str | None:
        """Why there is no decision rule (None when there is one)."""
        if self.rule is not None:
            return None
        return self.info.get("no_rule") or _no_rule(self.info.get("stopped"))

    def text(self, digits: int = 4) -> str:
        lines = [f"f(x) = {np.array2string(self.output, precision=digits)} -> {self.decision}",
                 f"in its linear region ({len(self.region_rule.b)} binding facets, "
                 f"{self.region_rule.certificate_text()}):",
                 "  " + self.region_rule.text(digits)]
        if self.rule is not None:
            lines += [f"decision rule ({self.rule.n_constraints} bounds, "
                      f"{'minimal' if self.rule.minimal else 'not shown minimal'}, "
                      f"{self.rule.certificate_text()}):",
                      "  " + self.rule.text(digits)]
        else:
            lines.append(self.no_rule_reason)
        if self.status != "complete" and self.rule is not None:
            lines.append(f"partial: {self.info.get('stopped')} (the radius is a proven lower "
                         "bound, the rule may not be the widest)")
        elif self.status != "complete":
            lines.append(f"partial: {self.info.get('stopped')}")
        return "\n".join(lines)


def _facet_label(net: Network, j: int) -> str:
    off = 0
    for k, w in enumerate(net.widths):
        if j < off + w:
            return f"neuron {k + 1}.{j - off + 1}"
        off += w
    return f"decision row {j - off}"


def _region_rule(fnet: Network, x: np.ndarray, domain, dec: Decision, names, do_certify: bool,
                 time_limit: Callable[[], float | None], floor: float) -> tuple[Rule, tuple, str, tuple]:
    """The rule of x's linear region (its irredundant facets and the decision rows), and
    its certificate; ``time_limit()``: the seconds left for it (None: no limit)."""
    pattern = fnet.activation_pattern(x)
    Gm, h = G.pattern_hrep(fnet, pattern)
    Cr, cr = fnet.affine_for_pattern(pattern)
    Dm, dv = dec.C @ Cr, dec.d - dec.C @ cr
    Dm, dv = Dm.copy(), dv.copy()
    nrm = np.linalg.norm(Dm, axis=1)
    ok = nrm > G.ZERO_ROW
    # a decision row constant on the region holds there already (x has the decision)
    Dm, dv, drow = Dm[ok] / nrm[ok, None], dv[ok] / nrm[ok], np.flatnonzero(ok)
    Gnz = np.linalg.norm(Gm, axis=1) > 0
    rows_A = np.vstack([Gm[Gnz], Dm])
    rows_b = np.concatenate([h[Gnz], dv])
    labels = [_facet_label(fnet, int(j)) for j in np.flatnonzero(Gnz)] + \
             [f"decision row {int(j)}" for j in drow]
    P = domain.to_polytope()
    allA = np.vstack([rows_A, P.A])
    allb = np.concatenate([rows_b, P.b])
    c, rad = G.interior(allA, allb)
    if c is None or rad <= MIN_RADIUS:
        keep = np.arange(rows_A.shape[0])  # lower-dimensional: keep every row
    else:
        # one LP per row: past the time limit the rest are kept (the same region)
        t = time_limit()
        keep = G.irredundant(allA, allb, deadline=None if t is None else time.monotonic() + t)
        keep = keep[keep < rows_A.shape[0]]
    A, b = rows_A[keep], rows_b[keep]
    cert, worst = (False, None)
    if do_certify:
        cert, worst = certify(fnet, domain, A, b, dec, time_limit(), floor)
    rule = Rule(A, b, dec.label, names, kind="region", certified=cert, max_violation=worst)
    pat = "".join("1" if v else "0" for p in pattern for v in p)
    return rule, tuple(labels[i] for i in keep), pat, (Cr, cr)


def _box_slab(domain, lo, hi) -> Box | Polytope:
    B = Box(lo, hi)
    if isinstance(domain, Box):
        return B
    return restrict(domain, np.vstack([np.eye(len(lo)), -np.eye(len(lo))]), np.concatenate([hi, -lo]))


def _violation_opt(fnet, region, dec: Decision, c: np.ndarray, margin: float,
                   time_limit) -> tuple[str, float | None, float | None]:
    """min c.x over the inputs of ``region`` that break the decision by ``margin``:
    (status, proven bound, the optimum moved back to where the decision row is exactly
    tied, along the axis of ``c``, inside the linear region of the optimum)."""
    m = ExplainMILP(fnet, region)
    m.violation(dec.C, dec.d, margin)
    r = m.solve(np.concatenate([c, np.zeros(m.n - len(c))]), time_limit=time_limit)
    if r.status == "infeasible":
        return "infeasible", None, None
    if r.status == "error":
        # a solver failure (after ExplainMILP.solve's retries) proves nothing: the
        # caller leaves the side where it is and reports the step as stopped early
        return "error", None, None
    if r.bound is None or not np.isfinite(r.bound):
        if r.status != "optimal":
            raise ExplainError(f"why: the MILP ended with status {r.status}")
    bound = float(r.bound if r.bound is not None and np.isfinite(r.bound) else r.objective)
    tied = None
    if r.x is not None:
        xs = r.x[: m.d]
        i = int(np.flatnonzero(c)[0])
        A, c0 = fnet.local_affine(xs)
        viol = dec.C @ (A @ xs + c0) - dec.d
        j = int(np.argmax(viol))
        g = (dec.C[j] @ A)[i]
        if abs(g) > ROUNDOFF:
            tied = float(c[i] * (xs[i] - viol[j] / g))
    return ("optimal" if r.status == "optimal" else "time_limit"), bound, tied


def _cube_radius(fnet, domain, x, dec, margin, time_limit) -> tuple[float, str | None]:
    """Proven lower bound of the linf distance from x to the closest input of the
    domain that breaks the decision by ``margin`` (inf when none does), and whether the
    search ran to its end (None) or what stopped it."""
    if isinstance(domain, Box) and fnet.n_hidden_layers > 0:
        t0 = time.monotonic()
        lo, stopped = _cube_radius_verify(fnet, domain, x, dec, margin, time_limit)
        left = FALLBACK_SECONDS if time_limit is None else min(FALLBACK_SECONDS,
                                                                time_limit - (time.monotonic() - t0))
        if stopped is None or left <= 0.05:
            return lo, stopped
        # the verifier gave up (e.g. "sub-box too small to split" where f stays within the
        # margin of the threshold): the exact MILP of the whole domain decides, under the
        # time a verifier call gets or what the time limit left (any limit used to skip it,
        # and 17 of 25 small explanations came back partial with 60 s to spare)
        r, st = _cube_radius_milp(fnet, domain, x, dec, margin, left)
        # (the bisection's proven cube stands: the MILP's radius is widened by what its
        # tolerances and arithmetic can hide, and can come out below it)
        return (max(lo, r), None) if st is None else (max(lo, r), stopped)
    return _cube_radius_milp(fnet, domain, x, dec, margin, time_limit)


def _cube_radius_milp(fnet, domain, x, dec, margin, time_limit) -> tuple[float, str | None]:
    """The radius of :func:`_cube_radius` by one MILP over the whole domain."""
    m = ExplainMILP(fnet, domain)
    # what the solver's double arithmetic can hide in each decision row: the MILP asks for
    # breaking by that much less, so its optimum stays below the distance to the inputs
    # that truly break the decision (with 2^40 pre-activations the MILP's optimum 0.300049
    # passed the boundary at 0.3).  (The feasibility tolerance's worst case through the
    # big-M rows, ExplainMILP.tolerance_error, is 0.02 at inputs near 1e6 and would leave
    # no radius there; it is not subtracted.)
    hide = np.array([m.arithmetic_error(Ci) for Ci in dec.C])
    m.violation(dec.C, dec.d, margin - hide)
    c = m.distance(x, "linf")
    r = m.solve(c, time_limit=time_limit)
    if r.status == "infeasible":
        return np.inf, None
    b = r.bound if r.bound is not None and np.isfinite(r.bound) else (r.objective if r.ok else 0.0)
    # x itself meets the weakened violation when the allowance covers its own slack: the
    # optimum is then 0 whatever the true distance (f(x) = -0.3 with 2^44 pre-activations
    # read "x lies on the decision boundary")
    slack = dec.d - dec.C @ fnet(np.asarray(x, float)[None])[0]
    swallowed = np.asarray(margin - hide, float) <= -slack
    if r.status == "optimal" and swallowed.any():
        i = int(np.argmax(swallowed))
        return max(float(b), 0.0), (f"the radius MILP's allowance for its arithmetic ({float(hide[i]):.3g}) "
                                    f"covers x's own decision margin ({float(slack[i]):.3g})")
    if r.status == "optimal":
        return max(float(b), 0.0), None
    why = ("the radius MILP stopped at the time limit" if r.status == "time_limit"
           else f"the radius MILP ended {r.status}")
    return max(float(b), 0.0), why


def _cube_radius_verify(fnet, domain: Box, x, dec: Decision, margin, time_limit) -> tuple[float, str | None]:
    """The same radius by bisection with relulab.verify on cubes around x (fast on small
    cubes, where the MILP of the whole box may not finish): "holds" on a cube proves the
    decision there; "violated" gives a re-checked input that breaks it."""
    from ..spec import OutputConstraint, Specification
    from ..verify import verify

    margins = np.broadcast_to(np.asarray(margin, float), dec.d.shape)
    unsafe = [OutputConstraint(-Ci[None, :], np.array([-(di + mi)]))
              for Ci, di, mi in zip(dec.C, dec.d, margins, strict=True)]
    deadline = Deadline(time_limit, floor=0.0)

    def ask(r):
        left = FALLBACK_SECONDS if time_limit is None else deadline.left() / 2
        if left <= 0.05:
            # no time left for another verifier call: the search ends here, unfinished
            return "time_limit", None
        B = Box(np.maximum(domain.lo, x - r), np.minimum(domain.hi, x + r))
        v = verify(fnet, Specification(B, unsafe), timeout=left)
        return v.status, (None if v.counterexample is None else np.asarray(v.counterexample, float))

    span = float(np.max(np.maximum(domain.hi - x, x - domain.lo)))
    st, z = ask(span)
    if st == "holds":
        return np.inf, None
    if st == "time_limit":
        # nothing proven about any cube yet: radius 0 is only the trivial lower bound
        return 0.0, _radius_stop(st)
    lo, hi = 0.0, (float(np.max(np.abs(z - x))) if st == "violated" and z is not None else span)
    for _ in range(60):
        if hi - lo <= BISECT_REL * (1 + hi):
            break
        r = (lo + hi) / 2
        st, z = ask(r)
        if st == "holds":
            lo = r
        elif st == "violated" and z is not None:
            hi = min(r, float(np.max(np.abs(z - x))))
        else:
            return lo, _radius_stop(st)
    return lo, None


def _radius_stop(status: str) -> str:
    """What stopped the radius bisection early, in words (``info["stopped"]``)."""
    if status == "time_limit":
        return "the radius search ended at the time limit"
    return f"the verifier answered {status} in the radius bisection"


def _witness(fnet, domain, lo, hi, dec: Decision, margin: float, time_limit) -> np.ndarray | None:
    """The input of the slab ``[lo, hi]`` (within the domain) that breaks the decision
    most, if it breaks it by more than ``margin`` (re-checked by a forward pass)."""
    region = _box_slab(domain, lo, hi)
    for Ci, di in zip(dec.C, dec.d, strict=True):
        _, xw, _ = max_output(fnet, region, Ci, time_limit)
        y = fnet(xw[None])[0]
        if Ci @ y - di > margin and not dec.holds(y[None])[0] and bool(domain.contains(xw)):
            return xw
    return None


def _interval_rule(fnet, domain, x, dec: Decision, names, do_certify, left, floor: float
                   ) -> tuple[Rule | None, float, str | None, str | None]:
    """The interval rule around x, the cube radius, what stopped a step early (or None)
    and, when there is no rule, why not (see :func:`_no_rule`).  ``left()``: the seconds
    left (None: no limit), asked before every MILP."""
    bb = domain.bounding_box() if isinstance(domain, Polytope) else domain
    # a tie on the rule's own boundary is no violation: a point breaks the decision
    # when some row exceeds its bound by this output margin (far below RULE_TOL)
    mg = margin_tol(BREAK_MARGIN, fnet(x[None])[0], floor)
    # a strict row (f < 0 for "negative", a class against an earlier one) is broken by
    # reaching its tie: f = 0 on a whole region (a dead output) is "positive" there.  A
    # margin on every row made "always -> negative" certified with radius inf on a box a
    # quarter of which is positive, and, where a positive point lay further out, a radius
    # and a certified rule reaching over that tie plateau.  Strict rows are broken at
    # their tie in the radius search.
    radius_margin = np.where(dec.strict, 0.0, mg)
    r, stopped = _cube_radius(fnet, domain, x, dec, radius_margin, left())
    if not np.isfinite(r):
        rule = Rule(np.zeros((0, len(x))), np.zeros(0), dec.label, names, kind="interval")
        cert, worst = certify(fnet, domain, rule.A, rule.b, dec, left(), floor) if do_certify else (False, None)
        return Rule(rule.A, rule.b, dec.label, names, "interval", cert, worst), r, stopped, None
    if not r > 0:
        return None, r, stopped, _no_rule(stopped)
    lo = np.maximum(x - r, bb.lo)
    hi = np.minimum(x + r, bb.hi)
    # the cube [x - r, x + r] is proved by the radius search itself: no input in it breaks
    # a row by more than its margin (a second proof by certify's MILPs failed for inputs
    # translated by 1e5, whose tolerance error grows with |x|: "NOT certified")
    cube_proof = (True, float(np.max(radius_margin))) if do_certify else None
    if r <= FEAS_TOL * (1 + np.max(np.abs(x))):
        # a proven cube too small to push its sides at the coordinates' resolution: it is
        # the rule (x = (1e6 + 5e-4, 0), radius 5e-4, read "on the decision boundary")
        A, b = np.vstack([np.eye(len(x)), -np.eye(len(x))]), np.concatenate([hi, -lo])
        cert, worst = cube_proof if cube_proof is not None else (False, None)
        return Rule(A, b, dec.label, names, "interval", cert, worst), r, stopped, None
    lo0, hi0 = lo.copy(), hi.copy()
    d = len(x)
    step_no = 0
    # push each side outwards as far as the decision holds: min x_i (or max) over the
    # inputs of the slab beyond the side that break the decision; none: drop the side
    for i in range(d):
        for up in (True, False):
            at_edge = hi[i] >= bb.hi[i] if up else lo[i] <= bb.lo[i]
            if at_edge:
                continue
            slo, shi = lo.copy(), hi.copy()
            if up:
                slo[i], shi[i] = hi[i], bb.hi[i]
            else:
                slo[i], shi[i] = bb.lo[i], lo[i]
            c = np.zeros(d)
            c[i] = 1.0 if up else -1.0
            step_no += 1
            if left() is not None and left() <= 1e-3:
                stopped = stopped or "the side pushes ended at the time limit"
                continue
            st, v, tied = _violation_opt(fnet, _box_slab(domain, slo, shi), dec, c,
                                         np.where(dec.strict, 0.0, mg * (step_no + 1)), left())
            step = FEAS_TOL * (1.0 + abs(x[i]))  # smaller moves are the margin, not room
            if st == "infeasible":
                if up:
                    hi[i] = bb.hi[i]
                else:
                    lo[i] = bb.lo[i]
                continue
            if st != "optimal":
                stopped = stopped or f"a side push MILP ended {st}"
                continue   # a MILP stopped by its time limit moves no side
            # the side goes where the decision is tied (the margins overshoot it by
            # ~1e-9); a side that cannot move is only snapped onto that tie
            cur = hi[i] if up else -lo[i]
            new = tied if tied is not None and tied <= v + 10 * step else v
            if new > cur + step or abs(new - cur) <= 100 * step:
                # never past x: at a point within rounding of the boundary the snap crossed
                # it, and the next slab (lo > hi) was an "empty box" error
                if up:
                    hi[i] = max(min(new, bb.hi[i]), x[i])
                else:
                    lo[i] = min(max(-new, bb.lo[i]), x[i])
    rule = _box_rule(fnet, domain, bb, lo, hi, dec, names, mg * (step_no + 1), do_certify, left, floor)
    pushed = np.any(lo != lo0) or np.any(hi != hi0)
    if pushed and _tie_inside(fnet, domain, lo, hi, dec, left()):
        # the pushes' margins let a strict row's tie region in: the proven cube is the rule
        rule = _box_rule(fnet, domain, bb, lo0, hi0, dec, names, mg * (step_no + 1), do_certify,
                         left, floor, proven=cube_proof)
    elif do_certify and not rule.certified:
        # never hand out a rule that failed its proof: fall back to the proven cube
        rule = _box_rule(fnet, domain, bb, lo0, hi0, dec, names, mg * (step_no + 1), do_certify,
                         left, floor, proven=cube_proof)
    return rule, r, stopped, None


#: the interior a strict row's tie must not reach: the box shrunk by this share of its sides
TIE_SHRINK = 1e-6  # tol: relative inset of a rule's interior from its faces


def _tie_inside(fnet, domain, lo, hi, dec: Decision, time_limit) -> bool:
    """Whether a strict decision row may reach its tie inside the box ``[lo, hi]`` (shrunk
    by ``TIE_SHRINK`` from its faces, where the decision's own boundary may touch it): its
    proven maximum there is not below 0.  A box whose interior a tie reaches breaks the
    decision on the tie's side, which the side pushes' margins cannot see."""
    if not dec.strict.any():
        return False
    w = TIE_SHRINK * (hi - lo)
    region = _box_slab(domain, lo + w, hi - w)
    for Ci, di in zip(dec.C[dec.strict], dec.d[dec.strict], strict=True):
        bound, _, _ = max_output(fnet, region, Ci, time_limit)
        if bound - float(di) >= 0:
            return True
    return False


def _no_rule(stopped: str | None) -> str:
    """Why there is no interval rule when the proven radius is 0.

    Only a radius search that ran to its end proves that inputs breaking the decision
    come arbitrarily close to x (x is on the decision boundary); a search stopped early
    (time limit, a verifier's "unknown") proved nothing, and must not claim that."""
    if stopped is None:
        # (the bisection resolves the distance to about 1e-9 of x's size: a point 1e-10 off
        # the boundary reads as on it)
        return ("x lies on the decision boundary, or within the radius search's resolution "
                "(about 1e-9 relative) of it: no box around it was proven to keep the decision")
    if "time limit" in stopped:
        return ("no certified rule: the radius search ended at the time limit before it proved "
                "any box around x keeps the decision (x need not lie on the decision boundary)")
    return (f"no certified rule: the radius search stopped early ({stopped}) before it proved "
            "any box around x keeps the decision (x need not lie on the decision boundary)")


def _box_rule(fnet, domain, bb, lo, hi, dec, names, wmargin, do_certify, left, floor: float,
              proven: tuple[bool, float] | None = None) -> Rule:
    """The interval rule ``lo <= x <= hi`` (sides at the domain's box dropped), its
    witnesses and its certificate: ``proven`` when the caller proved the box already (the
    radius search's cube), else certify's MILPs."""
    d = len(lo)
    rows_A, rows_b, sides = [], [], []
    for i in range(d):
        if lo[i] > bb.lo[i]:
            a = np.zeros(d)
            a[i] = -1.0
            rows_A.append(a)
            rows_b.append(-lo[i])
            sides.append((i, False))
        if hi[i] < bb.hi[i]:
            a = np.zeros(d)
            a[i] = 1.0
            rows_A.append(a)
            rows_b.append(hi[i])
            sides.append((i, True))
    A = np.array(rows_A).reshape(-1, d)
    b = np.array(rows_b)
    wit = []
    for i, up in sides:
        # the slab just beyond the side: a point there breaking the decision shows the
        # side cannot be dropped
        wlo, whi = lo.copy(), hi.copy()
        if up:
            wlo[i], whi[i] = hi[i], bb.hi[i]
        else:
            wlo[i], whi[i] = bb.lo[i], lo[i]
        # witnesses are illustrations: none once the time is up (the proof goes first)
        w = None if left() is not None and left() <= 1e-3 else \
            _witness(fnet, domain, wlo, whi, dec, wmargin, left())
        wit.append(w if w is not None and (w[i] > hi[i] if up else w[i] < lo[i]) else None)
    if proven is not None:
        cert, worst = proven
    else:
        cert, worst = certify(fnet, domain, A, b, dec, left(), floor) if do_certify else (False, None)
    return Rule(A, b, dec.label, names, "interval", cert, worst, witnesses=tuple(wit))


def why(
    net: Network,
    x: Any,
    domain: Any,
    decision: Any = None,
    *,
    features: Any = None,
    class_names: Any = None,
    certify_rules: bool = True,
    time_limit: float | None = None,
) -> WhyResult:
    """Why the network takes its decision at ``x`` (see the module docstring).

    Args:
        net: the network.
        x: the input (inside ``domain``).
        domain: a Box or bounded Polytope (or a ``(lo, hi)`` pair).
        decision: None (the decision at x: its sign for one output, its argmax class
            otherwise), "positive"/"negative", a class index or name, or a predicate
            ``(C, d)`` meaning ``C f(x) <= d``; x must satisfy it.
        features: feature names for the rules (default x0, x1, ...).
        class_names: names of the classes (outputs).
        certify_rules: prove each rule with relulab.verify's MILP (default True).
        time_limit: seconds for the whole explanation (None: none; must be positive):
            each MILP gets what the earlier ones left, so a rule may come back
            uncertified or with fewer sides pushed (``info["stopped"]`` says so).

    Example:
        >>> from relulab import Network, Box
        >>> net = Network([[[1.0, 0.0]]], [[0.0]])      # f = x0
        >>> r = why(net, [0.5, 0.0], Box([-1, -1], [1, 1]), features=["speed", "gap"])
        >>> r.rule.text(), r.rule.certified, r.rule.minimal
        ('speed >= 0 -> positive', True, True)
    """
    t0 = time.perf_counter()
    fnet = float_net(net)
    dom = check_domain(fnet, domain)
    x = check_point(x, dom)
    time_limit = check_time_limit(time_limit)
    check_flag("why", certify_rules=certify_rules)
    names = feature_names(features, fnet.input_dim)
    check_class_names(class_names, fnet.output_dim)
    y = fnet(x[None])[0]
    floor = check_output_resolution(fnet, dom, "why")   # once: every rule and proof uses it
    if decision is None:
        dec = decision_at(fnet, x, class_names)
    else:
        dec = as_decision(fnet, decision, class_names)
        if not dec.holds(y[None], tol=decision_tol(FEAS_TOL, y, floor, dec))[0]:
            raise ExplainError(f"x does not get the decision {dec.label!r} (f(x) = {y.tolist()})")
    # at least 1 ms: each solve of the multi-step search takes only what the earlier left
    left = Deadline(time_limit, floor=1e-3).left
    # the region rule gets half the limit, asked at each step (it was handed the whole
    # limit twice, once for its redundancy LPs and again for its certificate: 2T, and
    # the interval rule was left nothing)
    region_left = Deadline(None if time_limit is None else time_limit / 2, floor=1e-3).left
    region_rule, facets, pat, aff = _region_rule(fnet, x, dom, dec, names, certify_rules, region_left, floor)
    rule, rad, stopped, no_rule = _interval_rule(fnet, dom, x, dec, names, certify_rules, left, floor)
    return WhyResult(x=x, output=y, decision=dec.label, pattern=pat, affine=aff,
                     region_rule=region_rule, region_facets=facets, rule=rule, radius=float(rad),
                     time=time.perf_counter() - t0,
                     info={"decision": dec.to_dict(), "stopped": stopped, "no_rule": no_rule})
