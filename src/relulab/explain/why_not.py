"""``why_not``: the nearest input that gets a target decision (a counterfactual), exact.

* l1 and linf: one MILP (relulab.verify's big-M encoding of the network over the
  search space, the target decision on the outputs, the distance as an LP objective),
  then the optimal point is polished by one LP inside the linear region the MILP chose;
* l2: a best-first search over linear regions with one convex QP per region (see
  ``_l2search``), stopped by a certified lower bound.

The search space is the domain cut by ``bounds``, with every feature outside
``mutable`` fixed.  The counterfactual is re-checked by a forward pass: it gets the
target decision (every target row is required with a tiny output margin, so
also strict ones such as ``f < 0`` hold; see :func:`~relulab.explain.decision.margins`),
and lies in the search space.  "optimal" is exact for the target with that margin.  When no input
gets the target, the answer is "no counterfactual exists" with a certificate: the
proven maximum of the target margin over the search space is below the margin.

Example:
    >>> from relulab import Network, Box
    >>> net = Network([[[1.0, 1.0]]], [[-1.0]])          # f = x0 + x1 - 1
    >>> r = why_not(net, [0.0, 0.0], "positive", Box([-2, -2], [2, 2]), norm="l1")
    >>> r.status, round(r.distance, 5)
    ('optimal', 1.0)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import is_int_at_least
from ..lp import INF
from ..lp import solve as lp_solve
from ..network import Network
from ..results import Result
from ..tolerance import FEAS_TOL
from . import _geometry as G
from ._common import check_domain, check_output_resolution, check_point, check_time_limit, float_net
from ._l2search import l2_search
from ._milp import ExplainMILP
from ._milpsearch import bounds_exclude, milp_search, sample_target
from ._space import Space, build_space
from .decision import Decision, ExplainError, as_decision, check_class_names, decision_at, margins
from .features import feature_bounds, feature_names, mutable_mask

__all__ = ["why_not", "WhyNotResult", "NORMS"]

NORMS = ("l1", "l2", "linf")

# Why an answer without a time limit can still be "feasible" / "unknown" (rare).
SOLVER_ERROR_REASON = ("numerical: solver error (HiGHS failed on a ball MILP, also when retried "
                       "with other settings); the distance is not proven optimal, the lower "
                       "bound still holds")
UNCONFIRMED_REASON = ("numerical: the MILP's optimum fails the forward pass (a tie at its point: f "
                      "= 0 within the solver's tolerance), and so does its polish; the lower bound "
                      "holds, the counterfactual (when given) is the best verified one")
# "optimal" within this share of the proven bound: the MILP's relative gap (1e-9) and the
# shift its feasibility tolerance (1e-9, absolute) gives the optimum
OPTIMAL_REL_GAP = 1e-7  # tol: MILP gap and feasibility tolerance


@dataclass(frozen=True, eq=False)
class WhyNotResult(Result):
    """The nearest counterfactual (see the module docstring).

    Example:
        >>> from relulab import Network, Box
        >>> net = Network([[[1.0, 0.0]]], [[0.0]])                  # f = x0
        >>> r = why_not(net, [0.5, 0.0], "negative", Box([-1, -1], [1, 1]))
        >>> r.status, r.exists, round(r.distance, 6), r.to_dict()["status"]
        ('optimal', True, 0.5, 'optimal')

    Fields:
        status: "optimal" (distance proven minimal), "feasible" (a counterfactual, with
            a proven ``lower_bound``: stopped at the time limit, or, rarely, the MILP
            solver failed numerically, ``certificate["reason"]`` then starting with
            "numerical: solver error"), "infeasible" (no counterfactual exists; see
            ``certificate``) or "unknown" (stopped before finding one, for the same two
            reasons; ``lower_bound`` still holds).
        exists: True / False / None (unknown).
        x, decision: the input and its decision; target: the target's label.
        norm: "l1", "l2" or "linf".
        counterfactual, output: the counterfactual and f there (forward pass).
        distance: ``||counterfactual - x||``; lower_bound: proven lower bound of the
            optimum; gap: ``distance - lower_bound``.
        changed: the features changed, each ``{"feature", "from", "to", "delta"}``.
        path: the straight path from x to the counterfactual: how many linear regions it
            crosses and where (``relulab.regions.along_segment``).
        certificate: how optimality or non-existence is proved.
        method, time, info.
    """

    status: str
    exists: bool | None
    x: np.ndarray
    decision: str
    target: str
    norm: str
    counterfactual: np.ndarray | None
    output: np.ndarray | None
    distance: float | None
    lower_bound: float
    gap: float | None
    changed: tuple
    path: dict
    certificate: dict
    method: str
    time: float
    info: dict = field(default_factory=dict)

    @property
    def optimal(self) -> bool:
        return self.status == "optimal"

    def text(self, digits: int = 4) -> str:
        if self.exists is False:
            return (f"no counterfactual with {self.target} exists in the search space "
                    f"({self.certificate.get('reason', '')})")
        reason = str(self.certificate.get("reason", ""))
        numerical = reason.startswith("numerical")
        # the reason's first clause: a solver error, or (nothing failed) target points that
        # no forward pass confirms, a tie at one point ("the solver failed" said the latter too)
        short = reason.removeprefix("numerical:").strip().split(" (")[0].split(":")[0]
        if self.counterfactual is None:
            why = f"numerical: {short}" if numerical else "no counterfactual found in time"
            return (f"unknown: {why}; every one is at {self.norm} "
                    f"distance >= {self.lower_bound:.{digits}g}")
        ch = ", ".join(f"{c['feature']}: {c['from']:.{digits}g} -> {c['to']:.{digits}g}"
                       for c in self.changed) or "(none)"
        head = "nearest" if self.optimal else (
            f"a (gap {self.gap:.3g}{', not proven: ' + short if numerical else ''})")
        n = self.path.get("regions", "?")
        return (f"{head} counterfactual ({self.norm} distance {self.distance:.{digits}g}) gets "
                f"{self.target} instead of {self.decision}: change {ch}; the straight path "
                f"crosses {n} linear region{'' if n == 1 else 's'}")


def _target(fnet: Network, target: Any, current: Decision, class_names) -> Decision:
    if target is None:
        raise ExplainError("why_not: give a target decision")
    dec = as_decision(fnet, target, class_names)
    if dec.kind == current.kind and dec.value == current.value and dec.kind != "predicate":
        raise ExplainError(f"the target {dec.label!r} is already the decision at x: nothing to explain")
    return dec


def _region_lp(fnet: Network, pattern, x: np.ndarray, dec: Decision, space: Space, norm: str,
               margin: float | np.ndarray) -> np.ndarray | None:
    """The nearest point (l1 / linf) to x in one linear region with the target decision."""
    Gm, h = G.pattern_hrep(fnet, pattern)
    Cr, cr = fnet.affine_for_pattern(pattern)
    T, tv = dec.C @ Cr, dec.d - margin - dec.C @ cr
    d = len(x)
    A = np.vstack([Gm, T, space.A])
    b = np.concatenate([h, tv, space.b])
    k = d if norm == "l1" else 1
    eye = np.eye(d)
    tcols = eye if norm == "l1" else np.ones((d, 1))
    rows = np.vstack([np.hstack([A, np.zeros((A.shape[0], k))]),
                      np.hstack([eye, -tcols]), np.hstack([-eye, -tcols])])
    rhs = np.concatenate([b, x, -x])
    c = np.concatenate([np.zeros(d), np.ones(k)])
    r = lp_solve(c, A_ub=rows, b_ub=rhs, lb=np.concatenate([space.lo, np.zeros(k)]),
                 ub=np.concatenate([space.hi, np.full(k, INF)]))
    return r.x[:d] if r.ok else None


def _check_immutable_bounds(x: np.ndarray, mutable: np.ndarray, flo: np.ndarray, fhi: np.ndarray,
                            names: tuple[str, ...]) -> None:
    """An immutable feature keeps its value in x, so bounds that exclude that value
    contradict the question itself: a user error (ExplainError), not a search space
    proven empty ("infeasible")."""
    for i in np.flatnonzero(~mutable):
        tol = FEAS_TOL * (1.0 + abs(float(x[i])))
        if x[i] < flo[i] - tol or x[i] > fhi[i] + tol:
            raise ExplainError(f"bounds of {names[i]!r} ({flo[i]:g}, {fhi[i]:g}) exclude its value "
                               f"{x[i]:g} in x, and it is immutable: make it mutable or widen "
                               "its bounds")


def _dist(u: np.ndarray, norm: str) -> float:
    return float({"l1": np.sum(np.abs(u)), "l2": np.linalg.norm(u), "linf": np.max(np.abs(u), initial=0.0)}[norm])


def _checked(fnet, z, dec, space) -> bool:
    return z is not None and bool(dec.holds(fnet(z[None]))[0]) and space.contains(z)


def _no_target_certificate(fnet, space: Space, dec: Decision, margin: float, time_limit) -> dict:
    """The proven best margin of the target over the search space (below the required margin)."""
    m = ExplainMILP(fnet, space.region)
    s = m.margin_column(dec.C, dec.d)
    c = np.zeros(m.n)
    c[s] = 1.0
    r = m.solve(c, maximize=True, time_limit=time_limit)
    if r.status == "infeasible":
        return {"reason": "the search space is empty", "method": "MILP infeasible (HiGHS)"}
    bound = r.bound if r.bound is not None and np.isfinite(r.bound) else r.objective
    if bound is None:
        # the solver failed on this extra MILP (see ExplainMILP.solve): the search that
        # proved no counterfactual stands, only the best margin is not known
        return {"method": "exact MILP (relulab.verify encoding, HiGHS)",
                "proof": "HiGHS proved the MILP {x in the search space, f(x) in the target with "
                         "the required margin} infeasible",
                "required_margin": margin, "milp_status": r.status,
                "reason": "no input of the search space reaches the target with the required "
                          "margin (the MILP of its best margin ended with a solver error)"}
    out = {"method": "exact MILP (relulab.verify encoding, HiGHS)",
           "proof": "HiGHS bounded the target's best margin min_i (d_i - C_i f(x)) over the search "
                    "space (max_target_margin_upper_bound)",
           "max_target_margin_upper_bound": float(bound),
           "required_margin": margin, "milp_status": r.status}
    if r.x is not None:
        xb = r.x[: m.d]
        out["best_input"] = xb
        out["best_margin_forward_pass"] = float(-dec.margin(fnet(xb[None]))[0])
    out["reason"] = (f"the target margin min_i (d_i - C_i f(x)) is at most {float(bound):.3g} "
                     "on the whole search space")
    return out


def _milp_cf(fnet, x, dec, space, norm, mgs, time_limit):
    st, r, m, lower, info = milp_search(fnet, x, dec, space, norm, mgs[0], time_limit)
    if st == "infeasible":
        return None, None, info, "infeasible"
    z = None
    if r is not None and r.x is not None:
        v = r.x[: m.d]
        # polish inside the region the MILP chose (its binaries) and inside the region of
        # the point itself, each at the smallest margin that passes the forward pass; the
        # nearest of those and the MILP point (a polish at a 100x margin was preferred to
        # a MILP point that passed, and read "optimal" 2e-5 farther)
        found = []
        for pat in (m.pattern_of(r.x), fnet.activation_pattern(v)):
            for mg in mgs:
                cand = _region_lp(fnet, pat, x, dec, space, norm, mg)
                if _checked(fnet, cand, dec, space):
                    found.append(cand)
                    break
        if _checked(fnet, v, dec, space):
            found.append(v)
        z = min(found, key=lambda c: _dist(c - x, norm)) if found else None
        info["milp_objective"] = float(r.objective)
    if st == "optimal_bracket":
        z = info.pop("incumbent")
        return (z if _checked(fnet, z, dec, space) else None), float(lower), info, (
            "optimal" if _checked(fnet, z, dec, space) else "time_limit")
    incumbent = info.pop("incumbent", None)
    if st in ("time_limit", "solver_error") or (st == "optimal" and z is None):
        # the best of the MILP's point and the bracketing / sampled incumbents (with the
        # MILP's optimum on a tie, f = 0 at its point, the polish found nothing: the
        # sampled counterfactual was dropped and the answer read "unknown ... in time")
        cands = [z, incumbent, sample_target(fnet, x, dec, space, norm)]
        ok = [c for c in cands if c is not None and _checked(fnet, c, dec, space)]
        z = min(ok, key=lambda c: _dist(c - x, norm)) if ok else None
        if st == "optimal":
            st = "unconfirmed"
    return z, max(float(lower), 0.0), info, (st if st in ("optimal", "solver_error", "unconfirmed")
                                             else "time_limit")


def _changed(x, z, names) -> tuple:
    out = []
    for i in np.flatnonzero(np.abs(z - x) > FEAS_TOL * (1 + np.abs(x))):
        out.append({"feature": names[i], "index": int(i), "from": float(x[i]), "to": float(z[i]),
                    "delta": float(z[i] - x[i])})
    return tuple(out)


def _path(fnet, x, z) -> dict:
    from ..regions import along_segment

    if z is None or np.allclose(x, z):
        return {}
    seg = along_segment(fnet, x, z)
    return {"regions": seg.n_pieces, "breakpoints": np.asarray(seg.breakpoints, float)}


def why_not(
    net: Network,
    x: Any,
    target: Any,
    domain: Any,
    norm: str = "l1",
    mutable: Any = None,
    bounds: Any = None,
    *,
    features: Any = None,
    class_names: Any = None,
    time_limit: float | None = None,
    max_regions: int | None = None,
) -> WhyNotResult:
    """The nearest input with the ``target`` decision (see the module docstring).

    Args:
        net: the network.
        x: the input (inside ``domain``).
        target: "positive" (f >= 0) / "negative" (f < 0) for one output; a class index
            or name for several; or a predicate ``(C, d)``: ``C f(x) <= d``.
        domain: a Box or bounded Polytope (or a ``(lo, hi)`` pair).
        norm: "l1", "l2" or "linf".
        mutable: the features that may change (names or indices; None: all).
        bounds: ``{feature: (lo, hi)}`` (None for an open side) or a (d, 2) array.
        features, class_names: names used in the answer and accepted as arguments.
        time_limit: seconds (the answer then carries a gap or "unknown").
        max_regions: l2 only: stop after expanding this many regions.

    Example:
        >>> from relulab import Network, Box
        >>> net = Network([[[1.0, 1.0]]], [[-1.0]])
        >>> r = why_not(net, [0.0, 0.0], "positive", Box([-2, -2], [2, 2]), norm="l2")
        >>> np.round(r.counterfactual, 5).tolist(), [c["feature"] for c in r.changed]
        ([0.5, 0.5], ['x0', 'x1'])
    """
    t0 = time.perf_counter()
    fnet = float_net(net)
    dom = check_domain(fnet, domain)
    x = check_point(x, dom)
    if norm not in NORMS:
        raise ExplainError(f"unknown norm {norm!r}: use one of {', '.join(NORMS)}")
    time_limit = check_time_limit(time_limit)
    if max_regions is not None and not is_int_at_least(max_regions, 1):
        # 0 or -1 gave "no counterfactual found in time" with no time limit set
        raise ExplainError(f"why_not: max_regions must be a positive integer or None, got {max_regions!r}")
    names = feature_names(features, fnet.input_dim)
    check_class_names(class_names, fnet.output_dim)
    cur = decision_at(fnet, x, class_names)
    dec = _target(fnet, target, cur, class_names)
    y0 = fnet(x[None])
    if dec.holds(y0)[0]:
        raise ExplainError(f"x already gets the target {dec.label!r} (f(x) = {y0[0].tolist()})")
    mgs = margins(y0[0], dec.strict, check_output_resolution(fnet, dom, "why_not"), dec)
    req = float(np.max(mgs[0]))   # the required margin (on the strict rows; 0 on the others)
    mut = mutable_mask(mutable, names)
    flo, fhi = feature_bounds(bounds, names)
    _check_immutable_bounds(x, mut, flo, fhi, names)
    space = build_space(dom, x, mut, flo, fhi, names)
    common = dict(x=x, decision=cur.label, target=dec.label, norm=norm)
    if space.region is None:
        return WhyNotResult(status="infeasible", exists=False, counterfactual=None, output=None,
                            distance=None, lower_bound=INF, gap=None, changed=(), path={},
                            certificate={"reason": space.why_empty}, method="search space",
                            time=time.perf_counter() - t0, **common)
    if norm == "l2":
        proved, worst = bounds_exclude(fnet, space, dec, mgs[0])
        res = {"status": "infeasible", "regions": 0} if proved else l2_search(
            fnet, x, dec, space, mgs, time_limit=time_limit, max_regions=max_regions)
        z, st = res.get("z"), res["status"]
        info = {"crown_excludes": worst} if proved else {}
        lower = float(res.get("lower_bound", INF))
        info.update({k: res[k] for k in ("regions", "seen") if k in res})
        method = "best-first region search, one QP per region (clarabel)"
        cert = {"method": method, "regions_expanded": res.get("regions", 0)}
        if st == "optimal":
            cert["reason"] = ("every unexpanded region is at least as far from x as the "
                              "counterfactual (region distances are proven QP dual bounds)")
        elif st == "numerical" and res.get("unresolved_inexact"):
            cert["reason"] = (f"numerical: a projection QP (clarabel) gave a point farther than its "
                              f"proven bound ({res['unresolved_from']:.3g}) on a region, and the polish "
                              "did not close the two: no counterfactual closer than the lower bound is "
                              "excluded there")
        elif st == "numerical" and res.get("unresolved_unchecked"):
            cert["reason"] = (f"numerical: a region at distance >= {res['unresolved_from']:.3g} has "
                              "target points by its QP, but none that passes the forward pass (a tie "
                              "reached at a single point, or rounding): no counterfactual closer than "
                              "the lower bound is excluded there")
        elif st == "numerical":
            cert["reason"] = (f"numerical: a projection QP failed (clarabel) on a region at distance "
                              f">= {res['unresolved_from']:.3g} that HiGHS finds non-empty: no "
                              "counterfactual closer than the lower bound is excluded there")
    else:
        z, lower, info, st = _milp_cf(fnet, x, dec, space, norm, mgs, time_limit)
        method = ("MILPs over growing balls around x (relulab.verify big-M encoding, HiGHS) "
                  "+ LP polish in the chosen region")
        cert = {"method": method, **info}
        if st == "optimal" and not info.get("balls"):
            cert["reason"] = ("relulab.verify proved no counterfactual within the lower bound "
                              "(holds) and re-checked one at the distance (relative gap <= 1e-7)")
        elif st == "optimal":
            cert["reason"] = ("HiGHS proved the MILP optimum (relative gap <= 1e-7) inside a ball "
                              "around x that holds every closer input")
        elif st == "solver_error":
            # not a time limit: the answer must say why it is not proven optimal
            cert["reason"] = SOLVER_ERROR_REASON
        elif st == "unconfirmed":
            cert["reason"] = UNCONFIRMED_REASON
        elif st == "time_limit":
            cert["reason"] = info.get("stopped_early") or (
                "the time limit ended the search: the distance lies between lower_bound and the "
                "counterfactual's")
    if st == "infeasible" and req > 0:
        # proved: no input reaches the target with the required margin. Inputs with a
        # smaller one may (f = relu(x0) - 5e-10 is negative on half the box, below the
        # 2e-9 margin): "no counterfactual exists" needs the target's best margin
        left = None if time_limit is None else max(time_limit - (time.perf_counter() - t0), 1.0)
        probe = _no_target_certificate(fnet, space, dec, req, left)
        xb = probe.get("best_input")
        if xb is not None and bool(dec.holds(fnet(np.asarray(xb)[None]))[0]):
            z, lower, st = np.asarray(xb, dtype=np.float64), 0.0, "feasible"
            info = {**info, "below_required_margin": req}
            cert = {**probe, "method": "exact MILP of the target's best margin (HiGHS)",
                    "reason": f"no input reaches the target with the margin {req:.3g} the search "
                              "requires; this one reaches it (forward pass) with a smaller margin, "
                              "at the outputs' float resolution: not shown to be the nearest"}
        elif not (probe.get("max_target_margin_upper_bound", 0.0) < 0):
            return WhyNotResult(status="unknown", exists=None, counterfactual=None, output=None,
                                distance=None, lower_bound=0.0, gap=None, changed=(), path={},
                                certificate={**probe, "reason": (
                                    f"no input reaches the target with the required margin {req:.3g}; "
                                    "whether one reaches it with a smaller margin is not decided")},
                                method=method, time=time.perf_counter() - t0, info=info, **common)
    if st == "infeasible":
        left = None if time_limit is None else max(time_limit - (time.perf_counter() - t0), 1.0)
        if info.get("verify_holds"):
            cert = {"method": "relulab.verify (complete verifier: attack, input splitting, MILP)",
                    "reason": "the verifier proved that no input of the search space reaches "
                              "the target with the required margin (holds)",
                    "required_margin": req}
        elif "crown_excludes" in info:
            ub = -(info["crown_excludes"] - req)
            cert = {"method": "symbolic (CROWN) bounds over the search space",
                    "max_target_margin_upper_bound": ub, "required_margin": req,
                    "reason": f"the target margin min_i (d_i - C_i f(x)) is at most {ub:.3g} on "
                              "the whole search space (a CROWN lower bound of one target row)"}
        else:
            cert = _no_target_certificate(fnet, space, dec, req, left)
            ub = cert.get("max_target_margin_upper_bound")
            if "best_input" in cert or ub is not None:
                # the region search ended empty; "no counterfactual" also needs the MILP's
                # bound below the required margin (two near-equal facets once hid half the box)
                xb = cert.get("best_input")
                if xb is not None and bool(dec.holds(fnet(np.asarray(xb)[None]))[0]) and space.contains(xb):
                    z, lower, st = np.asarray(xb, dtype=np.float64), 0.0, "feasible"
                    cert = {**cert, "reason": "the region search ended without a counterfactual, but the "
                                              "MILP of the target's best margin found this one (forward pass): "
                                              "not shown to be the nearest"}
                    cert.pop("proof", None)
                elif not (ub is not None and ub < req):
                    cert.pop("proof", None)
                    return WhyNotResult(status="unknown", exists=None, counterfactual=None, output=None,
                                        distance=None, lower_bound=0.0, gap=None, changed=(), path={},
                                        certificate={**cert, "reason": (
                                            "the region search ended without a counterfactual, but the MILP "
                                            "does not bound the target's margin below the required one")},
                                        method=method, time=time.perf_counter() - t0, info=info, **common)
    if st == "infeasible":
        return WhyNotResult(status="infeasible", exists=False, counterfactual=None, output=None,
                            distance=None, lower_bound=INF, gap=None, changed=(), path={},
                            certificate=cert, method=method, time=time.perf_counter() - t0,
                            info=info, **common)
    if z is None:
        return WhyNotResult(status="unknown", exists=None, counterfactual=None, output=None,
                            distance=None, lower_bound=float(lower), gap=None, changed=(), path={},
                            certificate=cert, method=method, time=time.perf_counter() - t0,
                            info=info, **common)
    dist = _dist(z - x, norm)
    # "optimal" only within the gap the proof claims: the verified point may sit farther
    # than the MILP's optimum when its own point fails the forward pass
    status = "optimal" if st == "optimal" and dist <= float(lower) * (1.0 + OPTIMAL_REL_GAP) else "feasible"
    if st == "optimal" and status == "feasible":
        cert["reason"] = (f"{cert.get('reason', '')}; the MILP's optimum {float(lower):.10g} is a proven "
                          "lower bound, but its point fails the forward pass at the required margin: "
                          "this verified counterfactual is not shown to be the nearest")
    # the LP polish may land a hair below the MILP's reported bound: keep them consistent
    lower = min(float(lower), dist)
    gap = max(dist - lower, 0.0)
    return WhyNotResult(status=status, exists=True, counterfactual=z, output=fnet(z[None])[0],
                        distance=dist, lower_bound=lower, gap=gap, changed=_changed(x, z, names),
                        path=_path(fnet, x, z), certificate=cert, method=method,
                        time=time.perf_counter() - t0, info=info, **common)
