"""The small convex problems of the l2 counterfactual search: the Euclidean projection
of a point onto a polytope, by clarabel (interior point), polished on its active set."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import RelulabError
from ..tolerance import FEAS_TOL, IPM_TOL, MATCH_RTOL, ROUNDOFF

# Rows whose slack at the interior-point solution is below this (relative) count as
# active for the polish; clarabel stops at ~1e-8 relative accuracy.
ACTIVE_TOL = 1e-6  # tol: slack of an active row at clarabel's accuracy


def project(A: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray, x0: np.ndarray
            ) -> tuple[np.ndarray | None, float]:
    """``argmin ||z - x0||`` over ``{A z <= b, lo <= z <= hi}`` and the distance
    (``None, inf`` when the set is empty).  Coordinates with ``lo == hi`` are fixed
    and eliminated (an interior-point method wants a strict interior)."""
    import clarabel

    d = x0.shape[0]
    fixed = lo >= hi
    free = np.flatnonzero(~fixed)
    z = np.where(fixed, lo, 0.0).astype(float)
    A = np.atleast_2d(A).reshape(-1, d)
    bb = b - A[:, fixed] @ z[fixed] if fixed.any() else b.copy()
    Af = A[:, free]
    k = free.size
    if k == 0:
        if np.all(bb >= -FEAS_TOL * (1 + np.abs(b))):
            return z, float(np.linalg.norm(z - x0))
        return None, np.inf
    lf, hf = lo[free], hi[free]
    eye = np.eye(k)
    fin_h, fin_l = np.isfinite(hf), np.isfinite(lf)
    M = np.vstack([Af, eye[fin_h], -eye[fin_l]])
    r = np.concatenate([bb, hf[fin_h], -lf[fin_l]])
    # drop rows with no variable left: they are constants, checked here
    nz = np.any(M != 0, axis=1)
    if np.any(r[~nz] < -FEAS_TOL * (1 + np.abs(r[~nz]))):
        return None, np.inf
    M, r = M[nz], r[nz]
    P = sp.identity(k, format="csc")
    q = -x0[free]
    s = clarabel.DefaultSettings()
    s.verbose = False
    s.tol_gap_abs = s.tol_gap_rel = IPM_TOL
    s.tol_feas = IPM_TOL
    sol = clarabel.DefaultSolver(P, q, sp.csc_matrix(M), r, [clarabel.NonnegativeConeT(M.shape[0])],
                                 s).solve()
    st = str(sol.status)
    if "Infeasible" in st:
        return None, np.inf
    if "Solved" not in st:
        # an interior-point method stalls on sets that are empty, or nearly so, by a
        # hair (a region meeting the target only up to its margin): HiGHS decides emptiness
        if not _nonempty(M, r):
            return None, np.inf
        s.max_iter = 2000
        s.tol_gap_abs = s.tol_gap_rel = s.tol_feas = 100 * IPM_TOL
        sol = clarabel.DefaultSolver(P, q, sp.csc_matrix(M), r, [clarabel.NonnegativeConeT(M.shape[0])],
                                     s).solve()
        if "Solved" not in str(sol.status):
            raise ProjectionFailed(f"the projection QP ended with status {st} on a set HiGHS "
                                   "finds non-empty")
    u = np.asarray(sol.x, float)
    u = _polish(M, r, x0[free], u)
    z[free] = u
    return z, float(np.linalg.norm(z - x0))


class ProjectionFailed(RelulabError):
    """The projection QP failed on a non-empty set: its distance is unknown (callers keep
    the set's own lower bound and claim no optimum)."""


def _nonempty(M: np.ndarray, r: np.ndarray) -> bool:
    """Whether ``{u : M u <= r}`` has a point (a feasibility LP on HiGHS)."""
    from ..lp import solve

    res = solve(np.zeros(M.shape[1]), A_ub=M, b_ub=r)  # variables free
    return res.status != "infeasible"


def _polish(M: np.ndarray, r: np.ndarray, y: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Re-solve the projection on the active rows exactly (least-norm step); keep it only
    if it stays feasible and its multipliers are non-negative."""
    slack = r - M @ u
    act = slack <= ACTIVE_TOL * (1 + np.abs(r))
    if not act.any():
        return y.copy() if np.all(M @ y <= r + ROUNDOFF * (1 + np.abs(r))) else u
    Ma, ra = M[act], r[act]
    lam, *_ = np.linalg.lstsq(Ma @ Ma.T, Ma @ y - ra, rcond=None)
    v = y - Ma.T @ lam
    if np.all(M @ v <= r + ROUNDOFF * (1 + np.abs(r))) and np.all(lam >= -FEAS_TOL) and \
            np.linalg.norm(v - y) <= np.linalg.norm(u - y) + MATCH_RTOL * (1 + np.linalg.norm(u - y)):
        return v
    return u
