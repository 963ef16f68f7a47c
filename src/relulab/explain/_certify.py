"""Certification of rules with relulab.verify's exact MILP, and domain intersections."""

from __future__ import annotations

import numpy as np

from ..domain import Box, Polytope
from ..limits import Deadline
from ..network import Network
from ..verify import maximize
from ._common import output_floor, output_size
from .decision import OUTPUT_ROUNDING, Decision

# A rule may touch the decision boundary (a tie there is allowed), where the MILP's
# proven bound of C_i f - d_i is 0 up to its tolerances (~1e-9 relative); this is the
# largest bound accepted as "the decision holds on the rule".
RULE_TOL = 1e-7  # tol: a proven bound this small is a tie on the rule's boundary
# relulab.verify.maximize widens HiGHS's bound by what its feasibility tolerances can
# hide (verify.milp.tolerance_error, amplified by the later weights), so its proven bound
# may exceed the true maximum by that much (seen before the widening: 1e-6 on an exact
# rule whose true maximum is 1e-16).  A bound above RULE_TOL but within this (relative)
# margin is decided again by the explanation MILP at 1e-9 tolerances; the smaller bound
# is taken (both are the solver's bounds: the explanation's tie tolerance RULE_TOL
# already accepts a bound at the solver's accuracy).
RECHECK_TOL = 1e-4
# a rule's ties may also be as wide as this many times the outputs' rounding (their size
# times decision.OUTPUT_ROUNDING): what maximize's widened bound of a comparison of
# outputs of 1e9 is made of
ROUNDING_TIES = 4.0


def restrict(domain: Box | Polytope, A: np.ndarray, b: np.ndarray) -> Box | Polytope:
    """``domain ∩ {A x <= b}`` as a Box when everything is axis-aligned, else a Polytope
    (which must be non-empty)."""
    A = np.atleast_2d(np.asarray(A, float)).reshape(-1, domain.dim)
    b = np.asarray(b, float).reshape(-1)
    if isinstance(domain, Box):
        nz = np.abs(A) > 0
        if np.all(nz.sum(1) == 1):
            lo, hi = domain.lo.copy(), domain.hi.copy()
            for a, c in zip(A, b, strict=True):
                i = int(np.flatnonzero(a)[0])
                if a[i] > 0:
                    hi[i] = min(hi[i], c / a[i])
                else:
                    lo[i] = max(lo[i], c / a[i])
            return Box(lo, np.maximum(hi, lo))
    P = domain.to_polytope()
    return Polytope(np.vstack([P.A, A]), np.concatenate([P.b, b]))


def max_output(net: Network, region: Box | Polytope, c: np.ndarray,
               time_limit: float | None = None) -> tuple[float, np.ndarray, bool]:
    """``(proven upper bound, argmax x, optimal)`` of ``c . f(x)`` over ``region``:
    relulab.verify.maximize, or one LP for a network without hidden layers."""
    if net.n_hidden_layers > 0:
        r = maximize(net, region, c, time_limit=time_limit)
        return float(r.bound), np.asarray(r.x, float), r.optimal
    from ._milp import ExplainMILP

    m = ExplainMILP(net, region)
    obj = np.asarray(c, float) @ m.out_A
    r = m.solve(obj, maximize=True)
    if not r.ok:
        raise RuntimeError(f"LP over the rule ended with status {r.status}")
    x = r.x[: m.d]
    return float(r.objective + c @ m.out_c), x, True


def certify(net: Network, domain: Box | Polytope, A: np.ndarray, b: np.ndarray,
            decision: Decision, time_limit: float | None = None,
            floor: float | None = None) -> tuple[bool, float]:
    """Prove that every input of ``domain ∩ {A x <= b}`` gets ``decision`` (closed form:
    ``C f(x) <= d``) by one exact MILP per decision row.  Returns ``(certified, bound)``
    with ``bound`` the proven upper bound of ``max_i (C_i f(x) - d_i)`` over the set.

    ``certified`` asks the solver's bound to be at most ``RULE_TOL`` (relative): a rule
    may touch the decision boundary, where the solver's bound of a true 0 is a few 1e-8.
    ``bound`` is the sound one (widened by what the tolerances can hide), so it may exceed
    ``RULE_TOL`` on a certified rule: it says how far beyond the tie the rule is proved.
    ``floor``: :func:`~relulab.explain._common.output_floor` of ``net`` on ``domain``, when
    the caller has it (one explanation certifies many rules on one domain).
    """
    dom = restrict(domain, A, b)
    # relative to the outputs' size when they are all below 1 (an absolute 1e-7 certified
    # "always positive" for 1e-9 x on a box half of which is negative)
    scale = (output_floor(net, domain) if floor is None else floor) + abs(float(np.max(np.abs(decision.d))))
    # and to the size the rows compared reach on the rule (at sampled points: a bound of
    # it can be far too large): logits of 1e4 made the solver's few 1e-8 relative of a
    # true tie exceed an absolute 1e-7, and the rule certified at scale 1 was not at 1e4
    scale = max(scale, _rows_size(net, dom, decision))
    # and a tie within the outputs' own rounding is a tie (a common offset of 1e9 on the
    # logits leaves 1e-7 of rounding in every comparison: no rule was certified)
    tie = RULE_TOL * scale + ROUNDING_TIES * OUTPUT_ROUNDING * min(output_size(net, domain), 1e300)
    solver_worst = proven_worst = -np.inf
    # one deadline for all rows: each row's MILPs get their share of what is left (each
    # had the whole limit, and a 3-class rule took twice the limit)
    deadline = Deadline(time_limit, floor=1e-3)
    n = len(decision.d)
    for k, (Ci, di) in enumerate(zip(decision.C, decision.d, strict=True)):
        if deadline.expired():
            return False, np.inf   # rows left unproved: no bound
        share = None if time_limit is None else deadline.left() / (n - k)
        # the bound is proven also when the MILP stops at its time limit
        bound, _, _ = max_output(net, dom, Ci, share)
        solver, proven = bound, bound  # maximize's bound is already widened
        if tie < bound - float(di) <= RECHECK_TOL * scale + tie and net.n_hidden_layers > 0:
            tight, error = _tight_max(net, dom, Ci, None if time_limit is None else deadline.left() / (n - k))
            solver, proven = min(bound, tight), min(bound, tight + error)
        solver_worst = max(solver_worst, solver - float(di))
        proven_worst = max(proven_worst, proven - float(di))
    return solver_worst <= tie, proven_worst


def _tight_max(net: Network, region: Box | Polytope, c: np.ndarray,
               time_limit: float | None) -> tuple[float, float]:
    """``(bound, error)``: HiGHS's upper bound of ``c . f(x)`` over ``region`` by the
    explanation MILP (1e-9 feasibility, 1e-10 absolute gap; inf when it proves nothing),
    and what its feasibility tolerance can hide (``bound + error`` is proven)."""
    from ._milp import ExplainMILP

    m = ExplainMILP(net, region)
    r = m.solve(np.asarray(c, float) @ m.out_A, maximize=True, time_limit=time_limit)
    if r.status not in ("optimal", "time_limit"):
        # "infeasible" here contradicts maximize's point in the rule (a set thinner than
        # the tolerances): no proof either way, the first bound stands
        return np.inf, 0.0
    bound = r.bound if r.bound is not None and np.isfinite(r.bound) else (
        r.objective if r.ok else None)
    if bound is None:
        return np.inf, 0.0
    return float(bound + c @ m.out_c), m.tolerance_error(c, r.info["feasibility_tol"])


def _rows_size(net: Network, region: Box | Polytope, decision: Decision) -> float:
    """``max_i |C_i f(z) - d_i|`` over points ``z`` of ``region`` (its centre and 32
    samples): a size the rows reach, never more (a sound *upper* bound of it from
    linear_bounds was 1e8 for ``x - 0.5 + relu(1e8 x) - relu(1e8 x)`` and made a tie of 10
    output units, certifying "always negative" where f reaches 0.5)."""
    rng = np.random.default_rng(0)
    if isinstance(region, Polytope):
        Z = _probe_points(region, 32, rng)
    else:
        Z = np.vstack([region.center[None], region.sample(32, rng)])
    if len(Z) == 0:
        return 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        V = np.abs(net(Z) @ decision.C.T - decision.d)
    m = float(np.max(V, initial=0.0))
    return m if np.isfinite(m) else 0.0


def _probe_points(region: Polytope, n: int, rng: np.random.Generator) -> np.ndarray:
    """The polytope's Chebyshev centre and ``n`` points on random rays from it, each a
    random fraction of the way to the boundary: one LP (the bounding box took 2 d LPs,
    and on a 100-input rule 16 s past a 5 s time limit)."""
    from ..domain import DomainError
    from ..lp import LPError

    try:
        c, rad = region.chebyshev_center()
    except (DomainError, LPError):
        return np.zeros((0, region.dim))
    if not rad > 0:
        return c[None]
    U = rng.normal(size=(n, region.dim))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    AU = U @ region.A.T
    slack = region.b - region.A @ c
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(AU > 0, slack[None, :] / AU, np.inf).min(axis=1)
    t = np.where(np.isfinite(t), t, rad)
    Z = np.vstack([c[None], c + U * (t * rng.random(n))[:, None]])
    return Z[region.contains(Z)]
