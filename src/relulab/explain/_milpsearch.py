"""Exact l1 / linf counterfactuals by MILPs over balls around x.

The MILP of the whole search space has a binary for every neuron that is unstable
somewhere in it; a counterfactual is usually close to x, and a MILP over the linf ball
of radius r around x has far fewer.  Because the l1 and linf balls of radius r both lie
inside the linf ball of radius r:

* if the MILP over that ball is infeasible, every counterfactual is farther than r (a
  certified lower bound), and the radius doubles;
* if its optimum is at most r, it is the global optimum.

The first radius is the distance of a counterfactual found by sampling the search space
(and bisecting towards x along the segment), when there is one.  A target row that the
CROWN bounds already exclude on the whole search space proves at once that there is no
counterfactual.
"""

from __future__ import annotations

import time

import numpy as np

from ..bounds import linear_bounds
from ..domain import Box, DomainError, Polytope
from ..tolerance import ROUNDOFF
from ._milp import ExplainMILP
from ._space import Space
from .decision import Decision

# Radii grow by this factor after an infeasible ball.
GROWTH = 2.0
# A verifier bracket [holds radius, distance of a re-checked counterfactual] this narrow
# (relative) proves the distance optimal, as HiGHS's relative MIP gap (1e-9) does.
BRACKET_REL = 1e-9  # tol: a bracket this narrow is the MILP's own optimality gap
# A ball's radius is grown by this (relative) so that the point on its sphere is inside.
BALL_SLACK = 1e-9  # tol: relative rounding of a distance computed in float
# Above this many binaries a ball's MILP is not tried under a time limit (HiGHS rarely
# proves such big-M MILPs in a minute; the verifier's bracket keeps the time instead).
MILP_MAX_BINARIES = 120
# Above this many binaries the ball's MILP first tightens its pre-activation bounds by LPs.
TIGHTEN_ABOVE = 40


def _dist(u: np.ndarray, norm: str) -> float:
    return float(np.sum(np.abs(u)) if norm == "l1" else np.max(np.abs(u), initial=0.0))


def sample_target(net, x: np.ndarray, dec: Decision, space: Space, norm: str, n: int = 4000,
                  seed: int = 0) -> np.ndarray | None:
    """A counterfactual found by sampling (uniform in the space and on rays from x),
    moved towards x by bisection on the segment; None when no sample has the target."""
    rng = np.random.default_rng(seed)
    lo, hi = space.lo, space.hi
    U = lo + rng.random((n, len(x))) * (hi - lo)
    t = rng.random((n, 1)) ** 2
    R = x + t * (U - x)
    X = np.vstack([U, R])
    # rays from an x outside the space (feature bounds that exclude it) leave the space
    X = X[np.all((X >= lo) & (X <= hi), axis=1)]
    if space.A.shape[0]:
        X = X[np.all(X @ space.A.T <= space.b + ROUNDOFF, axis=1)]
    if len(X) == 0:
        return None
    ok = dec.holds(net(X))
    if not ok.any():
        return None
    Z = X[ok]
    d = np.array([_dist(z - x, norm) for z in Z])
    z = Z[int(np.argmin(d))]
    base = _anchor(space, x)
    if base is None:
        return z
    a, b = 0.0, 1.0   # base + b (z - base) has the target, base + a (z - base) need not
    for _ in range(40):
        m = (a + b) / 2
        if dec.holds(net((base + m * (z - base))[None]))[0]:
            b = m
        else:
            a = m
    return base + b * (z - base)


def bounds_exclude(net, space: Space, dec: Decision, margin: float | np.ndarray) -> tuple[bool, float]:
    """Whether the CROWN bounds prove some target row unreachable on the whole space:
    (proved, the largest proven lower bound of C_i f - d_i + margin)."""
    low = linear_bounds(net, space.region, dec.C, -dec.d)
    worst = float(np.max(low + margin))
    return worst > 0, worst


def ball(space: Space, x: np.ndarray, r: float) -> tuple[Box | Polytope, bool]:
    """The search space inside the linf ball of radius r around x, and whether that is
    the whole space."""
    lo = np.maximum(space.lo, x - r)
    hi = np.minimum(space.hi, x + r)
    whole = bool(np.all(lo <= space.lo) and np.all(hi >= space.hi))
    if isinstance(space.region, Box):
        return Box(lo, hi), whole
    d = len(x)
    eye = np.eye(d)
    return Polytope(np.vstack([space.A, eye, -eye]), np.concatenate([space.b, hi, -lo])), whole


def _anchor(space: Space, x: np.ndarray) -> np.ndarray | None:
    """The point a counterfactual is moved towards: x itself, or (feature bounds that
    exclude x) x clipped into the bounds when that lies in the space; None otherwise.
    The segment from a counterfactual to it stays in the (convex) space."""
    if space.contains(x):
        return x
    c = np.clip(x, space.lo, space.hi)
    return c if space.contains(c) else None


def _closer(net, x, z, dec, space: Space | None = None):
    """Bisect on the segment from the counterfactual z towards x (towards its
    :func:`_anchor` in ``space`` when given: a point moved towards an x outside the space
    left the space, and the bracket was lost)."""
    if space is not None:
        x = _anchor(space, x)
        if x is None:
            return z
    a, b = 0.0, 1.0
    for _ in range(40):
        m = (a + b) / 2
        if dec.holds(net((x + m * (z - x))[None]))[0]:
            b = m
        else:
            a = m
    return x + b * (z - x)


def verify_bracket(net, x, dec: Decision, space: Space, norm: str, margin: float | np.ndarray,
                   z0: np.ndarray | None, deadline: float | None, info: dict,
                   lo_init: float = 0.0, cap: float | None = 10.0):
    """Bracket the distance with relulab.verify's complete verifier on linf balls (Box
    spaces): "holds" on the ball of radius r proves every counterfactual farther than r;
    "violated" gives one (re-checked), moved towards x.  Returns (lower, best point or
    None, "infeasible" | "open")."""
    from ..spec import OutputConstraint, Specification
    from ..verify import verify

    unsafe = [OutputConstraint(dec.C, dec.d - margin)]
    reach = float(np.max(np.maximum(np.maximum(space.lo - x, x - space.hi), 0.0)))
    lo, best = max(reach, lo_init), z0
    hi = _dist(z0 - x, norm) if z0 is not None else None
    calls = info.setdefault("verify_calls", [])

    def budget() -> float:
        if deadline is None:
            return cap or 60.0
        left = (deadline - time.perf_counter()) / (3 if cap else 2)
        return min(cap, left) if cap else left

    def ask(r):
        region, whole = ball(space, x, r)
        left = budget()
        if left <= 0.05:
            return "unknown", None, whole
        v = verify(net, Specification(region, unsafe), timeout=left)
        calls.append({"radius": r, "status": v.status, "time": v.time})
        z = None
        if v.status == "violated" and v.counterexample is not None:
            z = np.asarray(v.counterexample, float)
            if not (dec.holds(net(z[None]))[0] and space.contains(z)):
                return "unknown", None, whole
            z = _closer(net, x, z, dec, space)
        return v.status, z, whole

    if hi is None:
        st, z, _ = ask(float(np.max(np.maximum(space.hi - x, x - space.lo))))
        if st == "holds":
            return np.inf, None, "infeasible"
        if st != "violated":
            return lo, None, "open"
        best, hi = z, _dist(z - x, norm)
    def ask_l1(rho):
        """The l1 ball of radius rho lies in the union of the d boxes with half-width rho
        along one axis and rho / 2 along the others (at most one |delta_i| exceeds rho / 2):
        "holds" on all of them proves every counterfactual farther than rho in l1."""
        found = None
        # a feature pinned by its bounds (lo == hi) moves by its fixed amount: that part of
        # rho is spent, and the cover is over the free features with what is left (a pin
        # away from x used to fall outside every box, and "holds" came from no call)
        pinned = space.hi <= space.lo
        free_rho = rho - float(np.sum(np.abs(space.lo[pinned] - x[pinned])))
        if free_rho < 0:
            return "holds", found   # the ball does not reach the pinned values
        axes = np.flatnonzero(~pinned)
        for i in (axes if axes.size else [None]):
            w = np.full(len(x), free_rho / 2)
            if i is not None:
                w[i] = free_rho
            sub = Space(np.where(pinned, space.lo, np.maximum(space.lo, x - w)),
                        np.where(pinned, space.hi, np.minimum(space.hi, x + w)), space.A, space.b, None)
            if np.any(sub.lo > sub.hi):
                continue
            i = -1 if i is None else i
            left = budget()
            if left <= 0.05:
                return "unknown", found
            v = verify(net, Specification(Box(sub.lo, sub.hi), unsafe), timeout=left)
            calls.append({"l1_radius": float(rho), "axis": int(i), "status": v.status, "time": v.time})
            if v.status == "violated" and v.counterexample is not None:
                z = np.asarray(v.counterexample, float)
                if dec.holds(net(z[None]))[0] and space.contains(z):
                    z = _closer(net, x, z, dec, space)
                    if found is None or _dist(z - x, "l1") < _dist(found - x, "l1"):
                        found = z
                    return "violated", found
            if v.status != "holds":
                return "unknown", found
        return "holds", found

    # bisect the linf distance: [lo, top] brackets it; for l1 it is a lower bound
    top = float(np.max(np.abs(best - x)))
    for _ in range(60):
        if top - lo <= BRACKET_REL * (1 + top) or (norm == "linf" and hi - lo <= BRACKET_REL * (1 + hi)):
            break
        r = (lo + top) / 2
        st, z, _ = ask(r)
        if st == "holds":
            lo = r
        elif st == "violated":
            top = min(r, float(np.max(np.abs(z - x))))
            dz = _dist(z - x, norm)
            if dz < hi:
                best, hi = z, dz
        else:
            break
    if norm == "l1" and space.A.shape[0] == 0:
        # then bisect the l1 distance itself with the box cover of the l1 ball
        for _ in range(40):
            if hi - lo <= BRACKET_REL * (1 + hi):
                break
            rho = (lo + hi) / 2
            st, z = ask_l1(rho)
            if st == "holds":
                lo = rho
            elif st == "violated" and z is not None and _dist(z - x, "l1") < hi:
                best, hi = z, _dist(z - x, "l1")
            else:
                break   # the cover is too coarse here (or out of time)
    return lo, best, "open"


def milp_search(net, x: np.ndarray, dec: Decision, space: Space, norm: str, margin: float | np.ndarray,
                time_limit: float | None):
    """Returns (status, MILP result or None, the ExplainMILP, certified lower bound, info);
    status is "optimal", "optimal_bracket", "infeasible", "time_limit" or "solver_error"
    (HiGHS failed numerically on a ball even after retrying)."""
    t0 = time.perf_counter()
    info: dict = {"balls": []}
    proved, worst = bounds_exclude(net, space, dec, margin)
    if proved:
        info["crown_excludes"] = worst
        return "infeasible", None, None, np.inf, info
    z0 = sample_target(net, x, dec, space, norm)
    info["sampled_distance"] = None if z0 is None else _dist(z0 - x, norm)
    span = float(np.max(np.maximum(space.hi - x, x - space.lo)))
    r = _dist(z0 - x, norm) if z0 is not None else span / 16
    lower0 = 0.0
    if isinstance(space.region, Box) and net.n_hidden_layers > 0:
        deadline = None if time_limit is None else t0 + 0.5 * time_limit
        lo_v, zb, st = verify_bracket(net, x, dec, space, norm, margin, z0, deadline, info)
        if st == "infeasible":
            info["verify_holds"] = True
            return "infeasible", None, None, np.inf, info
        lower0 = lo_v
        info["bracket"] = [lo_v, None if zb is None else _dist(zb - x, norm)]
        info["incumbent"] = zb
        if zb is not None:
            r = _dist(zb - x, norm)
            if r - lo_v > BRACKET_REL * (1 + r) and time_limit is not None:
                region, _ = ball(space, x, r * (1 + BALL_SLACK))
                if ExplainMILP(net, region).n_binaries > MILP_MAX_BINARIES:
                    # a MILP this size will not finish: the verifier gets all the time left
                    lo_v, zb, _ = verify_bracket(net, x, dec, space, norm, margin, zb,
                                                 t0 + time_limit, info, lo_init=lo_v, cap=None)
                    r = _dist(zb - x, norm)
                    info["bracket"] = [lo_v, r]
                    info["incumbent"] = zb
                    lower0 = lo_v
                    if r - lo_v > BRACKET_REL * (1 + r) and time.perf_counter() - t0 > 0.5 * time_limit:
                        return "time_limit", None, None, lo_v, info
                    # the bracket stopped with half the time or more left (an l1 cover by
                    # boxes too coarse to close it): the ball MILP gets that time (it was
                    # skipped, and "feasible" came after 2.4 s of a 10 s limit)
            if r - lo_v <= BRACKET_REL * (1 + r):
                # the verifier's bracket is closed: holds at lo_v, a re-checked point at r
                return "optimal_bracket", None, None, lo_v, info
    # x may lie outside the space (feature bounds): no ball smaller than its distance
    reach = float(np.max(np.maximum(np.maximum(space.lo - x, x - space.hi), 0.0)))
    r = max(r * (1 + BALL_SLACK), reach * (1 + BALL_SLACK) + ROUNDOFF, ROUNDOFF)
    lower = max(reach, lower0)
    while True:
        left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
        if left is not None and left <= 0:
            return "time_limit", None, None, lower, info
        try:
            region, whole = ball(space, x, r)
        except DomainError:   # the ball misses a polytope space
            lower = max(lower, r)
            r *= GROWTH
            continue
        m = ExplainMILP(net, region)
        if m.n_binaries > TIGHTEN_ABOVE and net.n_hidden_layers > 1:
            # LP bound tightening (layer by layer) removes binaries and shrinks big-Ms
            from ..verify.milp import tighten_bounds

            budget = None if left is None else 0.3 * left
            m = ExplainMILP(net, region, tighten_bounds(net, region, time_limit=budget))
            left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
        m.output_rows(dec.C, dec.d, margin=margin)
        c = m.distance(x, norm)
        res = m.solve(c, time_limit=left)
        info["balls"].append({"radius": r, "binaries": m.n_binaries, "status": res.status,
                              "time": time.perf_counter() - t0})
        if "solver_retry" in res.info:
            info["balls"][-1]["solver_retry"] = res.info["solver_retry"]
        info["binaries"] = m.n_binaries
        if res.status == "error":
            # HiGHS failed numerically even after its retries (ExplainMILP.solve): its
            # bound means nothing; what is proven is the lower bound so far, and this is
            # no time limit (the caller says so)
            return "solver_error", None, m, lower, info
        if res.status == "infeasible":
            if whole:
                return "infeasible", None, m, np.inf, info
            lower = max(lower, r)
            r *= GROWTH
            continue
        bound = res.bound if res.bound is not None and np.isfinite(res.bound) else (
            res.objective if res.ok else lower)
        if res.status == "optimal":
            if res.objective <= r or whole:
                return "optimal", res, m, float(bound), info
            lower = max(lower, min(float(bound), r))
            r = float(res.objective) * (1 + BALL_SLACK)   # the ball that holds every better point
            continue
        # time limit: the ball's bound holds globally up to its radius
        glob = float(bound) if whole else min(float(bound), r)
        return "time_limit", res if res.x is not None else None, m, max(lower, glob), info
