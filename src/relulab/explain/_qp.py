"""The small convex problems of the l2 counterfactual search: the Euclidean projection
of a point onto a polytope, by clarabel (interior point), polished on its active set,
with a lower bound of the distance from Lagrange duality.

An interior-point solution is only near the optimum (about 5e-6 of the coordinates'
size inside the set: a point 7e-8 from a face read 6.7e-6, and that "distance" was
taken as the exact one).  So the projection gives two numbers: the distance of a
feasible point (an upper bound) and ``sqrt(2 g(lam))`` for multipliers ``lam >= 0``
(weak duality: a lower bound whatever ``lam`` is), the two equal when the polish
finds the optimum's active set."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import RelulabError
from ..tolerance import FEAS_TOL, IPM_TOL, MATCH_RTOL, ROUNDOFF

# Rows whose slack at the interior-point solution is below this (relative) count as
# active for the polish; clarabel stops at ~1e-8 relative accuracy.
ACTIVE_TOL = 1e-6  # tol: slack of an active row at clarabel's accuracy
# or whose interior-point multiplier is above this share of the largest (the inactive
# rows' multipliers come back near 1e-6 of it)
DUAL_ACTIVE_TOL = 1e-3  # tol: an active row's multiplier, relative to the largest


def project(A: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray, x0: np.ndarray
            ) -> tuple[np.ndarray | None, float, float]:
    """A point ``z`` of ``{A z <= b, lo <= z <= hi}`` nearest ``x0`` (up to the solver's
    accuracy), its distance, and a proven lower bound of the distance from ``x0`` to
    the set (``None, inf, inf`` when the set is empty).  Coordinates with ``lo == hi``
    are fixed and eliminated (an interior-point method wants a strict interior)."""
    import clarabel

    d = x0.shape[0]
    fixed = lo >= hi
    free = np.flatnonzero(~fixed)
    z = np.where(fixed, lo, 0.0).astype(float)
    A = np.atleast_2d(A).reshape(-1, d)
    bb = b - A[:, fixed] @ z[fixed] if fixed.any() else b.copy()
    Af = A[:, free]
    k = free.size
    fixed_sq = float(np.sum((z[fixed] - x0[fixed]) ** 2))
    if k == 0:
        if np.all(bb >= -FEAS_TOL * (1 + np.abs(b))):
            dist = float(np.linalg.norm(z - x0))
            return z, dist, dist
        return None, np.inf, np.inf
    lf, hf = lo[free], hi[free]
    eye = np.eye(k)
    fin_h, fin_l = np.isfinite(hf), np.isfinite(lf)
    M = np.vstack([Af, eye[fin_h], -eye[fin_l]])
    r = np.concatenate([bb, hf[fin_h], -lf[fin_l]])
    # drop rows with no variable left: they are constants, checked here
    nz = np.any(M != 0, axis=1)
    if np.any(r[~nz] < -FEAS_TOL * (1 + np.abs(r[~nz]))):
        return None, np.inf, np.inf
    M, r = M[nz], r[nz]
    y = x0[free]
    # solved for the step w = u - y: the objective |w|^2 / 2 is the squared distance
    # itself, so the solver's relative gap is relative to it (for u, the objective
    # |u|^2 / 2 - y.u carried |y|^2 / 2: a distance of 7e-8 came back as 6.7e-6)
    rw = r - M @ y
    P = sp.identity(k, format="csc")
    q = np.zeros(k)
    s = clarabel.DefaultSettings()
    s.verbose = False
    s.tol_gap_abs = s.tol_gap_rel = IPM_TOL
    s.tol_feas = IPM_TOL
    sol = clarabel.DefaultSolver(P, q, sp.csc_matrix(M), rw, [clarabel.NonnegativeConeT(M.shape[0])],
                                 s).solve()
    st = str(sol.status)
    if "Infeasible" in st:
        return None, np.inf, np.inf
    if "Solved" not in st:
        # an interior-point method stalls on sets that are empty, or nearly so, by a
        # hair (a region meeting the target only up to its margin): HiGHS decides emptiness
        if not _nonempty(M, r):
            return None, np.inf, np.inf
        s.max_iter = 2000
        s.tol_gap_abs = s.tol_gap_rel = s.tol_feas = 100 * IPM_TOL
        sol = clarabel.DefaultSolver(P, q, sp.csc_matrix(M), rw, [clarabel.NonnegativeConeT(M.shape[0])],
                                     s).solve()
        if "Solved" not in str(sol.status):
            raise ProjectionFailed(f"the projection QP ended with status {st} on a set HiGHS "
                                   "finds non-empty")
    u = y + np.asarray(sol.x, float)
    lam_ipm = np.maximum(np.asarray(sol.z, float), 0.0)
    u, lam = _polish(M, r, y, u, lam_ipm)
    z[free] = u
    # the better of the two multiplier vectors' dual values, less its rounding
    low_sq = max(_dual_half_sq(M, r, y, lam_ipm), _dual_half_sq(M, r, y, lam) if lam is not None else 0.0)
    upper = float(np.linalg.norm(z - x0))
    lower = min(upper, float(np.sqrt(2.0 * low_sq + fixed_sq)))
    return z, upper, lower


def _dual_half_sq(M: np.ndarray, r: np.ndarray, y: np.ndarray, lam: np.ndarray) -> float:
    """``g(lam) = lam . (M y - r) - |M^T lam|^2 / 2``, a lower bound of
    ``min |u - y|^2 / 2`` over ``{M u <= r}`` for any ``lam >= 0`` (weak duality), less a
    bound of its float64 rounding (the products of sizes |lam| (|M| |y| + |r|))."""
    if not np.all(np.isfinite(lam)):
        return 0.0
    # in long double where the platform has one (x86: 64-bit significands): M y - r
    # cancels for inputs of size 1e5, and float64's rounding bound alone was 2e-8 of a
    # distance of 0.07
    ld = np.longdouble
    Ml, yl, rl, ll = M.astype(ld), y.astype(ld), r.astype(ld), lam.astype(ld)
    g = ll @ (Ml @ yl - rl) - ld(0.5) * np.sum((Ml.T @ ll) ** 2)
    size = np.abs(ll) @ (np.abs(Ml) @ np.abs(yl) + np.abs(rl)) + np.sum((np.abs(Ml.T) @ ll) ** 2)
    err = 4 * (M.shape[0] + M.shape[1] + 2) * np.finfo(ld).eps * size
    return max(0.0, float(g - err))


class ProjectionFailed(RelulabError):
    """The projection QP failed on a non-empty set: its distance is unknown (callers keep
    the set's own lower bound and claim no optimum)."""


def _nonempty(M: np.ndarray, r: np.ndarray) -> bool:
    """Whether ``{u : M u <= r}`` has a point (a feasibility LP on HiGHS)."""
    from ..lp import solve

    res = solve(np.zeros(M.shape[1]), A_ub=M, b_ub=r)  # variables free
    return res.status != "infeasible"


def _polish(M: np.ndarray, r: np.ndarray, y: np.ndarray, u: np.ndarray, lam_ipm: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray | None]:
    """Re-solve the projection exactly (least-norm step) on a guess of the active rows:
    those with little slack at ``u``, then those with a multiplier of the interior point's
    above DUAL_ACTIVE_TOL of the largest (the slack misses rows the interior point stopped
    5e-6 short of).  The first guess whose point is feasible with multipliers >= 0 (the
    KKT conditions: it is the optimum) is kept; returns the point and its multipliers
    (full length), or ``u`` and None."""
    feasible = r + ROUNDOFF * (1 + np.abs(r))
    if np.all(M @ y <= feasible):
        return y.copy(), np.zeros(M.shape[0])
    slack = r - M @ u
    top = float(np.max(lam_ipm, initial=0.0))
    guesses = [slack <= ACTIVE_TOL * (1 + np.abs(r))]
    if top > 0:
        guesses.append(lam_ipm > DUAL_ACTIVE_TOL * top)
    for act in guesses:
        if not act.any():
            continue
        Ma, ra = M[act], r[act]
        la, *_ = np.linalg.lstsq(Ma @ Ma.T, Ma @ y - ra, rcond=None)
        v = y - Ma.T @ la
        if np.all(M @ v <= feasible) and np.all(la >= -FEAS_TOL) and \
                np.linalg.norm(v - y) <= np.linalg.norm(u - y) + MATCH_RTOL * (1 + np.linalg.norm(u - y)):
            lam = np.zeros(M.shape[0])
            lam[act] = np.maximum(la, 0.0)
            return v, lam
    return u, None
