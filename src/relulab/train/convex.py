"""Convex training of two-layer ReLU networks to global optimality (Pilanci and Ergen).

The non-convex problem, for ``f(x) = sum_j a_j relu(w_j . x~)`` with ``x~ = [x, 1]``
(hidden biases, penalised; ``bias=False`` drops them) and no output bias, is::

    min  (1/2) ||f(X) - y||^2 + (lam/2) sum_j (||w_j||^2 + a_j^2).

For every activation pattern ``D_i = diag(1[X~ g_i >= 0])`` of the data, a neuron with that
pattern computes ``D_i X~ w``; after balancing ``|a| = ||w||`` its penalty is
``lam ||a w||``.  Writing ``v = a w`` (``a > 0``) or ``u = -a w`` (``a < 0``) gives the
convex group lasso with cone constraints::

    min  (1/2) ||sum_i D_i X~ (v_i - u_i) - y||^2 + lam sum_i (||v_i|| + ||u_i||)
    s.t. (2 D_i - I) X~ v_i >= 0,  (2 D_i - I) X~ u_i >= 0,

whose optimum over *all* patterns equals the non-convex optimum once the width is large
enough (at most n + 1 neurons), and over a sampled subset of patterns is the global optimum
among networks whose neurons use those patterns.  By default it is solved as a
second-order cone program by an interior-point method (Clarabel, :mod:`.convex_ipm`) and
polished on its active face.  The alternative is accelerated proximal gradient (FISTA with
adaptive restart).  Its prox of ``lam ||v|| + indicator(K_i)`` is the shrunk projection
onto the polyhedral cone ``K_i`` (projection by non-negative least squares on the cone's
dual), so every iterate is feasible.  The Fenchel dual is::

    max  rho . y - ||rho||^2 / 2   s.t.  ||P_{K_i}(+- X~^T D_i rho)|| <= lam  for all i,

and the residual ``y - f(X)``, scaled into the dual feasible set, gives a certified lower
bound: the returned ``gap`` bounds the distance to the optimum.

The gated-ReLU variant fixes the gates: ``f(x) = sum_i 1[g_i . x~ >= 0] (w_i . x~)``; its
convex problem is an unconstrained group lasso (prox = group soft-thresholding).

Example:
    >>> import numpy as np
    >>> X = np.array([[-1.0], [0.0], [1.0]]); y = np.array([1.0, 0.0, 1.0])
    >>> fit = convex_fit(X, y, lam=0.01, max_patterns=20)
    >>> fit.gap < 1e-7, round(float(fit.objective), 5)
    (True, 0.01985)
"""

from __future__ import annotations

import math
import numbers
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import RelulabError, is_int_at_least
from ..limits import check_bytes
from ..network import Network
from ..tolerance import FEAS_TOL, GAP_TOL, ROUNDOFF, TINY, or_default, power_of_two_exponent
from .minnorm import _check_time_limit
from .patterns import _patterns_until, facet_rows, sample_patterns

__all__ = ["ConvexFit", "GatedFit", "convex_fit", "gated_fit", "sample_patterns",
           "nonconvex_objective"]


# a fit is called the global optimum only with a certified gap this small relative to its
# objective (besides the solver's criterion relative to the zero network's objective)
OPTIMUM_RTOL = 1e-6  # tol: certified gap / objective of a "global optimum"


# what finding the facet rows costs per entry of the (n, P) masks (measured: 3 s for
# 3,000 x 6,000 on 2 shared cores); under a time limit they are skipped when the time
# left does not cover it (every row kept: the same cones)
FACET_SECONDS_PER_ENTRY = 2e-7  # tol: measured seconds per mask entry (a time estimate)
# entries of the (rows x cones) arrays _sector_rays handles at once (16 MB of floats each)
_RAY_BLOCK_ENTRIES = 1 << 21


# Targets whose largest |y| lies outside [2^-TARGET_RANGE_EXP, 2^TARGET_RANGE_EXP] are
# fitted times an even power of two 2^k (lam times 2^k too: the same problem, every
# objective times 4^k), and the result scaled back exactly.  The interior point's
# tolerances are absolute: at y ~ 1e-5 the fit did not converge where y ~ 1 did, and at
# 1e-165 the squared targets underflowed and the zero network was "certified" optimal.
TARGET_RANGE_EXP = 8
# a lam scaled past this (with y scaled up) is capped: the collapse threshold of targets
# of size 1 is at most n max|x~| < 1e160 (the data's squares are finite), so the zero
# network stays the optimum, and lam x 0 stays 0 (inf x 0 was NaN)
LAM_CAP = 1e300


class ConvexTrainingError(RelulabError):
    """Bad input for convex training (shapes, non-finite data, negative lambda)."""


def _target_scale(y: np.ndarray) -> int:
    """The even ``k`` such that the fit runs on ``y 2^k`` (0 for targets of size about 1;
    see TARGET_RANGE_EXP).  Even: each layer of the network is scaled back by
    ``2^(-k/2)``, which keeps it balanced."""
    e = power_of_two_exponent(y)
    if abs(e) <= TARGET_RANGE_EXP:
        return 0
    return -e - (-e) % 2


def _scaled_targets(y: np.ndarray, lam: float, where: str) -> tuple[int, np.ndarray, float]:
    """``(k, y 2^k, lam 2^k)``, after refusing targets whose squared loss is below float64's
    range (the objective and its certificate would read 0)."""
    k = _target_scale(y)
    if k == 0:
        return 0, y, lam
    ys = np.ldexp(y, k)
    if math.ldexp(0.5 * float(ys @ ys), -2 * k) < np.finfo(np.float64).tiny:
        raise ConvexTrainingError(
            f"{where}: the squared targets underflow float64 (largest |y| = "
            f"{float(np.max(np.abs(y))):.3g}), so the objective and its certificate would read 0; "
            "rescale y (and lam by the same factor)")
    return k, ys, min(math.ldexp(lam, k), LAM_CAP)


def _prep(X: Any, y: Any, lam: float) -> tuple[np.ndarray, np.ndarray]:
    try:
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        raise ConvexTrainingError("X and y must be arrays of numbers within float64's range") from None
    if X.ndim == 1:
        X = X[:, None]
    # y is (n,) or (n, 1): a (3, 2) target was flattened into 6 values and fitted silently
    if X.ndim != 2 or not (y.ndim == 1 or (y.ndim == 2 and y.shape[1] == 1)) or X.shape[0] != y.shape[0] \
            or X.shape[0] == 0:
        raise ConvexTrainingError(f"X must be (n, d) and y (n,) or (n, 1); got {X.shape} and {y.shape}")
    y = y.reshape(-1)
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ConvexTrainingError("X and y must be finite numbers")
    with np.errstate(over="ignore"):
        # the squared loss and the Gram products of 1e200 overflow: the fit answered an
        # objective of inf and a bound of NaN, and LAPACK wrote to stdout
        squares = (float(np.dot(y, y)), float(np.einsum("ij,ij->", X, X)))
    if not all(np.isfinite(v) for v in squares):
        raise ConvexTrainingError(f"the sums of squares of {'y' if not np.isfinite(squares[0]) else 'X'} "
                                  "overflow float64 (entries up to "
                                  f"{max(float(np.max(np.abs(y))), float(np.max(np.abs(X)))):.3g}); rescale the data")
    if not (isinstance(lam, numbers.Real) and not isinstance(lam, bool) and np.isfinite(lam) and lam > 0):
        raise ConvexTrainingError(f"lam must be a positive number, got {lam!r}")
    return X, y


def _check_solver_options(gap_tol: Any, max_iter: Any, bias: Any) -> float:
    """``gap_tol`` as a float in (0, 1), after one-line errors for it, ``max_iter`` and
    ``bias`` (``bias="no"`` was truthy, and a gap_tol of 1e6 called the zero network a
    global optimum with a gap of 0.9 on an objective of 1)."""
    gap_tol = or_default(gap_tol, GAP_TOL)
    if isinstance(gap_tol, bool) or not isinstance(gap_tol, (int, float)) or not 0 < gap_tol < 1:
        raise ConvexTrainingError(f"gap_tol must be a number in (0, 1) (relative to (1/2)|y|^2), got {gap_tol!r}")
    if not is_int_at_least(max_iter, 1):
        raise ConvexTrainingError(f"max_iter must be an integer >= 1, got {max_iter!r}")
    if not isinstance(bias, (bool, np.bool_)):
        raise ConvexTrainingError(f"bias must be True or False, got {bias!r}")
    return float(gap_tol)


def _check_max_patterns(max_patterns: Any) -> int:
    """``max_patterns`` as an int, or a one-line error: at least one pattern is needed
    (without any, the program has no variable and the certificate no constraint)."""
    if not is_int_at_least(max_patterns, 1):
        raise ConvexTrainingError(f"max_patterns must be a positive integer, got {max_patterns!r}")
    return int(max_patterns)


def _augment(X: np.ndarray, bias: bool) -> np.ndarray:
    return np.hstack([X, np.ones((X.shape[0], 1))]) if bias else X


def _predict(Xa: np.ndarray, Mf: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``sum_i D_i Xa w_i`` for per-pattern weights ``W`` (P, d): row ``j`` is
    ``Xa[j] . sum_i M[j, i] w_i``, one (n, P) x (P, d) product (no (n, P) temporaries:
    4x faster on 3,000 points and 4,096 patterns)."""
    return np.einsum("jk,jk->j", Xa, Mf @ W)


def _correlate(Xa: np.ndarray, Mf: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``X~^T D_i r`` for every pattern, (P, d): the adjoint of :func:`_predict`."""
    return Mf.T @ (r[:, None] * Xa)


def _dual_projections(Xa: np.ndarray, Mf: np.ndarray, rho: np.ndarray, proj: _Projector,
                      lam: float, when_late: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(Cp, norms)``: ``Cp[s, i] = P_{K_i}(+-X~^T D_i rho)`` and upper bounds on its norms.
    The dual constraint of group ``(s, i)`` holds at ``rho`` when ``norms[s, i] <= lam``.
    A projection is never longer than its vector, so vectors of length at most ``lam``
    cannot violate: they are not projected (``Cp`` is 0 there, ``norms`` their length).
    ``when_late="keep"``: vectors not projected by ``proj.deadline`` stay as they are, so
    their lengths bound the norms (see :meth:`_Projector.project`)."""
    c = _correlate(Xa, Mf, rho)
    C = np.stack([c, -c])
    nc = np.linalg.norm(C, axis=2)
    short = nc <= lam
    Cp = proj.project(C, skip=short, when_late=when_late)
    return Cp, np.where(short, nc, np.linalg.norm(Cp, axis=2))


def _sector_rays(Xa: np.ndarray, S: np.ndarray, facets: np.ndarray,
                 cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two extreme rays (unit vectors) of the 2-D cones ``{z : S[j, i] Xa[j] . z >= 0
    for the facet rows j of cone i}``, ``i`` in ``cols``: ``(rays (m, 2, 2), pointed (m,))``;
    a cone that is not a pointed sector (a half-plane or more, a ray, or no row) has
    ``pointed`` False, and the caller projects onto it by nnls instead.

    The normals ``a_j = S[j, i] Xa[j]`` of a pointed sector lie in an arc shorter than pi,
    so their sum ``c`` lies inside that arc: measured from ``c``, the normals' angles span
    less than pi, and the sector's rays are the normals at the two ends (the smallest and
    the largest angle) turned by 90 degrees towards the inside.  If no arc shorter than pi
    holds them, no direction sees them within less than pi, so the test is exact up to
    rounding.  Vectorised over blocks of cones (no sort: one pass over the rows).

    Example:
        >>> Xa = np.array([[1.0, 1.0], [-1.0, 1.0]])   # x = 1 and x = -1, with a bias column
        >>> rays, pointed = _sector_rays(Xa, np.array([[1.0], [1.0]]), np.ones((2, 1), bool), np.array([0]))
        >>> bool(pointed[0]), np.round(rays[0] * np.sqrt(2), 6).tolist()   # {|z0| <= z1}
        (True, [[1.0, 1.0], [-1.0, 1.0]])
    """
    cols = np.asarray(cols, dtype=np.intp)
    n = Xa.shape[0]
    norms = np.linalg.norm(Xa, axis=1)
    live = norms > 0
    U = np.where(live[:, None], Xa / np.where(live, norms, 1.0)[:, None], 0.0)
    rays = np.zeros((cols.size, 2, 2))
    pointed = np.zeros(cols.size, dtype=bool)
    block = max(1, _RAY_BLOCK_ENTRIES // max(n, 1))   # (n, block) arrays at a time
    for s0 in range(0, cols.size, block):
        c_ = cols[s0:s0 + block]
        Sb = S[:, c_] * (facets[:, c_] & live[:, None])   # +-1 on facet rows, 0 elsewhere
        rows = Sb != 0
        cen = Sb.T @ U                                      # (m, 2): the sum of the normals
        dot = Sb * (U @ cen.T)                              # a_j . c
        crs = Sb * (U[:, 1:2] * cen[:, 0] - U[:, 0:1] * cen[:, 1])   # c x a_j
        ang = np.arctan2(crs, dot)
        lo = np.where(rows, ang, np.inf)
        hi = np.where(rows, ang, -np.inf)
        j0, j1 = np.argmin(lo, axis=0), np.argmax(hi, axis=0)
        m = np.arange(c_.size)
        span = hi[j1, m] - lo[j0, m]
        ok = rows.any(0) & (np.linalg.norm(cen, axis=1) > 0) & (span < np.pi * (1 - ROUNDOFF))
        start = Sb[j0, m][:, None] * U[j0]                  # the arc runs start -> end
        end = Sb[j1, m][:, None] * U[j1]
        # turned by -90 degrees, the arc's last normal bounds the sector on one side;
        # turned by +90 degrees, its first normal bounds the other
        rays[s0:s0 + c_.size, 0] = np.stack([end[:, 1], -end[:, 0]], axis=1)
        rays[s0:s0 + c_.size, 1] = np.stack([-start[:, 1], start[:, 0]], axis=1)
        pointed[s0:s0 + c_.size] = ok
    return rays, pointed


class _ConeRows:
    """``cones[i]``: the rows ``S[j, i] Xa[j]`` (facet rows ``j``) of pattern ``i``'s cone
    ``{z : rows @ z >= 0}``, built on first use (the polish touches a few patterns; building
    all of them up front took seconds on thousands of patterns)."""

    def __init__(self, Xa: np.ndarray, S: np.ndarray, F: np.ndarray) -> None:
        self.Xa, self.S, self.F = Xa, S, F
        self._built: dict[int, np.ndarray] = {}

    def __getitem__(self, i: int) -> np.ndarray:
        i = int(i)
        if i not in self._built:
            f = self.F[:, i]
            self._built[i] = self.S[f, i:i + 1] * self.Xa[f]
        return self._built[i]


class _Projector:
    """Projection of many vectors onto the pattern cones ``K_i = {v : S_i * (Xa v) >= 0}``.

    In two dimensions every cone is a sector spanned by two extreme rays and the projection
    is closed-form and vectorised; otherwise it is a non-negative least-squares problem per
    vector (skipped when the vector already lies in its cone)."""

    def __init__(self, Xa: np.ndarray, S: np.ndarray, facets: np.ndarray | None = None) -> None:
        self.Xa, self.S = Xa, S
        # the rows that define each cone (all of them unless the facets are known)
        self.facets = np.ones(S.shape, dtype=bool) if facets is None else facets
        _, d = Xa.shape
        self.deadline: float | None = None  # see max_norm
        # 2-D: each cone's two extreme rays, found on first use (all cones at once took
        # about a second on 3,000 points and 6,000 patterns, past a 0.3 s time limit);
        # ray_state: 0 not yet found, 1 a pointed sector, -1 not one (projected by nnls)
        self.rays = np.zeros((S.shape[1], 2, 2)) if d == 2 else None
        self.ray_state = np.zeros(S.shape[1], dtype=np.int8)

    def _sectors(self, iis: np.ndarray) -> np.ndarray:
        """Whether each cone ``iis[m]`` is a pointed sector (its rays then in ``self.rays``)."""
        need = np.unique(iis[self.ray_state[iis] == 0])
        if need.size:
            rays, pointed = _sector_rays(self.Xa, self.S, self.facets, need)
            self.rays[need] = rays
            self.ray_state[need] = np.where(pointed, 1, -1)
        return self.ray_state[iis] == 1

    def project_entries(self, z: np.ndarray, iis: np.ndarray) -> np.ndarray:
        """Project each row ``z[m]`` onto cone ``iis[m]``."""
        out = z.copy()
        vals = self.S[:, iis].T * (z @ self.Xa.T)  # (m, n)
        tol = 1e-13 * np.linalg.norm(z, axis=1)[:, None] * np.linalg.norm(self.Xa, axis=1)  # tol: rounding of z . x
        todo = np.nonzero(~np.all(vals >= -tol, axis=1))[0]
        if todo.size == 0:
            return out
        if self.rays is not None:
            sector = self._sectors(iis[todo])
            closed, todo = todo[sector], todo[~sector]
            r = self.rays[iis[closed]]  # (m, 2, 2)
            c = np.maximum(np.einsum("md,mjd->mj", z[closed], r), 0.0)
            j = np.argmax(c, axis=1)
            m = np.arange(closed.size)
            out[closed] = c[m, j][:, None] * r[m, j]
        from scipy.optimize import nnls

        for m in todo:
            f = self.facets[:, iis[m]]
            if not f.any():
                # no cone row: the cone is the whole space and z is its own projection
                # (never hand nnls an (d, 0) matrix: scipy aborts the process on it); z is
                # also a sound bound, as no projection is longer than its vector
                continue
            Gm = self.S[f, iis[m]:iis[m] + 1] * self.Xa[f]
            mu, _ = nnls(Gm.T, -z[m], maxiter=50 * Gm.shape[0])
            # any mu >= 0 gives ||z + Gm^T mu|| >= ||P_K(z)||: the norm is a sound bound
            out[m] = z[m] + Gm.T @ mu
        return out

    def project(self, Zs: np.ndarray, skip: np.ndarray | None = None,
                when_late: str | None = None, chunk: int = 32) -> np.ndarray:
        """Project Zs[k, i] onto cone i; entries where ``skip`` is True are returned as 0.

        ``when_late`` says what happens to the entries not yet projected at
        ``self.deadline`` (None: every entry is projected, whatever the time):

        * ``"zero"``: they are returned as 0, which lies in every cone, so the result stays
          feasible (a proximal step cut short, not a projection); the first chunk is always
          projected, so that a late step still moves;
        * ``"keep"``: they are returned unchanged, so their norms still bound the norms of
          their projections (a projection is never longer than its vector)."""
        out = Zs.copy()
        if skip is not None:
            out[skip] = 0.0
            ks, iis = np.nonzero(~skip)
        else:
            ks, iis = np.indices(Zs.shape[:2]).reshape(2, -1)
        if when_late is None or self.deadline is None:
            chunk = max(1, ks.size)
        for start in range(0, ks.size, chunk):
            k, i = ks[start:start + chunk], iis[start:start + chunk]
            if (start > 0 or when_late == "keep") and time.perf_counter() > self.deadline:
                if when_late == "zero":
                    out[ks[start:], iis[start:]] = 0.0
                break
            out[k, i] = self.project_entries(Zs[k, i], i)
        return out

    def max_norm(self, Zs: np.ndarray, chunk: int = 64) -> float:
        """``max_{k,i} ||P_{K_i}(Zs[k, i])||``.  A projection is never longer than its
        vector, so vectors no longer than the best value so far are skipped: only the
        longest few are projected.  Past ``self.deadline`` (a ``time.perf_counter()``
        value, None: no deadline) the rest are bounded by their own lengths: still an upper
        bound, so a dual value built on it stays certified, only looser."""
        norms = np.linalg.norm(Zs, axis=2)
        order = np.argsort(-norms, axis=None)
        best = 0.0
        for start in range(0, order.size, chunk):
            sel = order[start:start + chunk]
            if norms.flat[sel[0]] <= best:
                break
            if self.deadline is not None and time.perf_counter() > self.deadline:
                return max(best, float(norms.flat[sel[0]]))
            ks, iis = np.unravel_index(sel, norms.shape)
            proj = self.project_entries(Zs[ks, iis], iis)
            best = max(best, float(np.max(np.linalg.norm(proj, axis=1))))
        return best


@dataclass(frozen=True)
class ConvexFit:
    """A globally optimal (for the sampled patterns) two-layer ReLU network.

    ``objective`` is the regularised training objective (convex value, equal to the
    non-convex objective of ``network``), ``dual_value`` a certified lower bound and
    ``gap = objective - dual_value``.

    Example:
        >>> X = np.array([[-1.0], [0.0], [1.0]]); y = np.array([1.0, 0.0, 1.0])
        >>> fit = convex_fit(X, y, lam=0.01)
        >>> fit.gap < 1e-7, fit.converged, abs(nonconvex_objective(fit.network, X, y, 0.01) - fit.objective) < 1e-9
        (True, True, True)
    """

    network: Network
    objective: float
    dual_value: float
    lam: float
    n_patterns: int
    iterations: int
    seconds: float
    converged: bool
    history: tuple[tuple[float, float], ...] = field(default=(), repr=False)
    all_patterns: bool = False
    stopped: str | None = None

    @property
    def gap(self) -> float:
        return float(self.objective - self.dual_value)

    @property
    def global_optimum(self) -> bool:
        """Certified optimal over *every* activation pattern of the data, i.e. the global
        minimum of the non-convex two-layer problem at any width of at least
        ``n_neurons``, to within ``OPTIMUM_RTOL`` of the objective: the solver's own
        criterion is relative to ``(1/2)|y|^2``, and at a small ``lam`` a fit 24 % above
        the optimum met it."""
        return bool(self.all_patterns and self.converged and self.gap <= OPTIMUM_RTOL * abs(self.objective))

    @property
    def n_neurons(self) -> int:
        return int(np.count_nonzero(self.network.weights[1]))

    def to_dict(self) -> dict[str, Any]:
        return {"objective": self.objective, "dual_value": self.dual_value, "gap": self.gap,
                "lam": self.lam, "n_patterns": self.n_patterns, "n_neurons": self.n_neurons,
                "iterations": self.iterations, "seconds": self.seconds,
                "converged": self.converged, "all_patterns": self.all_patterns,
                "global_optimum": self.global_optimum, "stopped": self.stopped,
                "partial": self.stopped is not None}


@dataclass(frozen=True)
class GatedFit:
    """The optimal gated-ReLU network ``x -> sum_i 1[g_i . x~ >= 0] (w_i . x~)`` for the given
    (sampled) gates ``g_i``: optimal among networks with these gates, certified by ``gap``.

    Example:
        >>> X = np.array([[-1.0], [0.0], [1.0]]); y = np.array([1.0, 0.0, 1.0])
        >>> g = gated_fit(X, y, lam=0.01)
        >>> g.gap < 1e-7, g.gates.shape[1] == g.weights.shape[1] == 2     # d + 1 with the bias
        (True, True)
    """

    gates: np.ndarray
    weights: np.ndarray
    bias: bool
    objective: float
    dual_value: float
    lam: float
    iterations: int
    seconds: float
    converged: bool
    stopped: str | None = None   # "time_limit" when the limit stopped it before the gap closed

    @property
    def gap(self) -> float:
        return float(self.objective - self.dual_value)

    def predict(self, X: Any) -> np.ndarray:
        """Outputs on a batch ``X`` of shape (n, d)."""
        Xa = _augment(np.atleast_2d(np.asarray(X, dtype=np.float64)), self.bias)
        return np.sum((Xa @ self.gates.T >= 0) * (Xa @ self.weights.T), axis=1)

    def to_dict(self) -> dict[str, Any]:
        return {"objective": self.objective, "dual_value": self.dual_value, "gap": self.gap,
                "lam": self.lam, "n_gates": int(self.gates.shape[0]),
                "n_active": int(np.count_nonzero(np.linalg.norm(self.weights, axis=1))),
                "iterations": self.iterations, "seconds": self.seconds,
                "converged": self.converged, "stopped": self.stopped,
                "partial": self.stopped is not None}


def _opnorm_sq(apply, apply_t, shape, iters: int = 60, seed: int = 0,
               deadline: float | None = None, frobenius_sq: float | None = None) -> float:
    """``||A||^2`` by power iteration, for FISTA's step.  Cut short by ``deadline``, it
    returns ``frobenius_sq`` (``||A||_F^2``, an upper bound: a short but safe step)."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(shape)
    z /= np.linalg.norm(z)
    val = 1.0
    for _ in range(iters):
        if deadline is not None and time.perf_counter() > deadline and frobenius_sq:
            return frobenius_sq
        w = apply_t(apply(z))
        val = float(np.linalg.norm(w))
        if val == 0:
            return 1.0
        z = w / val
    return val * 1.01 + ROUNDOFF


def _fista(objective, grad_pred, prox, dual_gap, Z0, L, max_iter, gap_tol, check_every=10,
           deadline: float | None = None):
    """Generic FISTA with function-value restart; stops on a certified gap, or (not
    converged) at ``deadline``, a ``time.perf_counter()`` value."""
    Z = Z0.copy()
    Yk = Z.copy()
    tk = 1.0
    step = 1.0 / L
    f_prev = objective(Z)
    it = 0
    hist = []
    converged = False
    for it in range(1, max_iter + 1):
        G = grad_pred(Yk)
        Znew = prox(Yk - step * G, step)
        f_new = objective(Znew)
        if f_new > f_prev:  # restart the momentum
            tk = 1.0
            Yk = Z.copy()
            G = grad_pred(Yk)
            Znew = prox(Yk - step * G, step)
            f_new = objective(Znew)
        t_next = 0.5 * (1 + np.sqrt(1 + 4 * tk * tk))
        Yk = Znew + ((tk - 1) / t_next) * (Znew - Z)
        Z, tk, f_prev = Znew, t_next, f_new
        late = deadline is not None and time.perf_counter() > deadline
        if it % check_every == 0 or it == max_iter or late:
            p, dval = dual_gap(Z)
            hist.append((p, dval))
            if p - dval <= gap_tol:
                converged = True
                break
            if late:
                break
    return Z, it, converged, hist


def _check_solver(solver: str) -> None:
    if solver not in ("ipm", "fista"):
        raise ConvexTrainingError(f"solver must be 'ipm' or 'fista', got {solver!r}")


def convex_fit(X: Any, y: Any, lam: float, max_patterns: int = 200, *, bias: bool = True,
               seed: int = 0, gap_tol: float | None = None, max_iter: int = 50000,
               patterns: tuple[np.ndarray, np.ndarray] | None = None,
               solver: str = "ipm", time_limit: float | None = None) -> ConvexFit:
    """Globally optimal two-layer ReLU network for ``(1/2)||f(X)-y||^2 + (lam/2)||theta||^2``
    over the sampled activation patterns, with a duality-gap certificate.

    Args:
        X, y: data ``(n, d)`` and ``(n,)``.
        lam: weight-decay strength (> 0).
        max_patterns: the most activation patterns used (a positive integer).  When every
            pattern of the data provably fits (univariate data, repeated points included;
            general-position data with few enough patterns), all are used and
            ``global_optimum`` can be True; else a sample.
        bias: hidden biases (penalised) via an appended column of ones.
        gap_tol: stop when the certified duality gap is at most this times the zero
            network's objective ``(1/2)|y|^2`` (the problem's scale).
        patterns: optional ``(masks (n, P), gates (P, d~))`` to use instead of sampling.
        solver: ``"ipm"`` (default): the second-order cone program solved by Clarabel's
            interior-point method, then polished on its active face; robust, and fast up
            to a few hundred thousand cone rows (2 x patterns x n).  ``"fista"``:
            accelerated proximal gradient with exact cone projections plus an active-set
            Newton step; no factorisation, so it scales further, but it can stall on
            weakly regularised or degenerate data (``converged`` is then False).
        time_limit: seconds for the whole fit (None: no limit).  Pattern sampling stops
            drawing directions at half of it, the interior-point solve gets what is left (its
            working set sized to fit), and FISTA, the polish and the dual certificate stop
            at it.  A fit stopped early is ``converged=False``; its ``dual_value`` is still
            a certified lower bound (looser: vectors not projected in time are bounded by
            their lengths).

    Whatever the solver, ``gap`` is certified independently: the residual is scaled into
    the dual feasible set, whose constraints are checked by exact cone projections.

    Example:
        >>> X = np.array([[-1.0], [0.0], [1.0]]); y = np.array([1.0, 0.0, 1.0])
        >>> fit = convex_fit(X, y, lam=0.01)
        >>> abs(nonconvex_objective(fit.network, X, y, 0.01) - fit.objective) < 1e-9
        True
    """
    gap_tol = _check_solver_options(gap_tol, max_iter, bias)
    X, y = _prep(X, y, lam)
    lam_given = float(lam)   # a float32 lam kept the primal, dual and gap in float32
    _check_solver(solver)
    max_patterns = _check_max_patterns(max_patterns)
    time_limit = _check_time_limit(time_limit, ConvexTrainingError)
    k, y, lam = _scaled_targets(y, lam_given, "convex_fit")
    t0 = time.perf_counter()
    Xa = _augment(X, bias)
    n, d = Xa.shape
    deadline = None if time_limit is None else t0 + time_limit
    stopped = None
    if patterns is not None:
        M, complete = patterns[0], False
        if np.ndim(M) != 2 or np.shape(M)[0] != n:
            raise ConvexTrainingError(f"patterns: masks must be (n, P) = ({n}, P), got shape {np.shape(M)}")
    else:
        # sampling gets half the limit and keeps the patterns of the directions drawn by then
        M, _, complete, sampling_stopped = _patterns_until(
            Xa, max_patterns, seed, None if time_limit is None else t0 + 0.5 * time_limit)
        if sampling_stopped:
            stopped = "the time limit stopped the pattern sampling"
    M = np.asarray(M, dtype=bool)
    P = M.shape[1]
    # the (n, P) masks, signs and cone rows, and the solvers' products of that size
    check_bytes(8.0 * n * P * 4, f"convex_fit: the {n} x {P} pattern matrices (lower max_patterns)")
    Mf = M.astype(np.float64)
    S = 2.0 * Mf - 1.0  # signs of the cone constraints, (n, P)
    # with every pattern known, each cone is cut by its facets alone (a handful in 2-D);
    # past the deadline every row is kept (the same cones, more rows)
    late = deadline is not None and time.perf_counter() + FACET_SECONDS_PER_ENTRY * n * P > deadline
    F = facet_rows(M) if complete and not late else np.ones(M.shape, dtype=bool)
    cones = _ConeRows(Xa, S, F)

    def pred(Z):  # Z: (2, P, d) with Z[0] = V, Z[1] = U
        return _predict(Xa, Mf, Z[0] - Z[1])

    def pred_t(r):  # the adjoint of pred
        g = _correlate(Xa, Mf, r)
        return np.stack([g, -g])

    def objective(Z):
        r = pred(Z) - y
        return 0.5 * float(r @ r) + lam * float(np.sum(np.linalg.norm(Z, axis=2)))

    def grad(Z):
        return pred_t(pred(Z) - y)

    proj = _Projector(Xa, S, F)
    proj.deadline = deadline

    def prox(Zs, step):
        thr = step * lam
        # ||P_K(z)|| <= ||z||: a group no longer than the threshold shrinks to zero anyway
        small = np.linalg.norm(Zs, axis=2) <= thr
        V = proj.project(Zs, skip=small, when_late="zero")
        nv = np.linalg.norm(V, axis=2, keepdims=True)
        return np.where(nv > thr, (1.0 - thr / np.maximum(nv, TINY)) * V, 0.0)

    def dual_gap(Z):
        rho = y - pred(Z)
        p = 0.5 * float(rho @ rho) + lam * float(np.sum(np.linalg.norm(Z, axis=2)))
        q = proj.max_norm(pred_t(rho))
        return p, _dual_value(rho, y, q / lam)

    Z0 = np.zeros((2, P, d))
    p0, d0 = dual_gap(Z0)
    gap_tol = gap_tol * p0  # relative to (1/2)|y|^2: scale-free (see gated_fit)
    if p0 - d0 <= gap_tol:
        # lam at or beyond the collapse threshold (every dual constraint holds at rho = y):
        # the zero network is optimal, certified by the same gap (no solver run, and no
        # overflow in it for a lam like 1e300)
        Z, it, conv, hist = Z0, 0, True, [(p0, d0)]
    elif solver == "ipm":
        Z, it, conv, hist = _solve_ipm(Xa, M, F, Mf, cones, y, lam, proj, dual_gap, gap_tol,
                                       deadline)
    else:
        L = _opnorm_sq(pred, pred_t, (2, P, d), seed=seed, deadline=deadline,
                       frobenius_sq=2.0 * float(np.sum(Mf.T @ np.sum(Xa * Xa, axis=1))))
        Z, it, conv, hist = _solve_fista(objective, grad, prox, dual_gap, L, Xa, Mf, cones,
                                         y, lam, proj, (2, P, d), gap_tol, max_iter, deadline)
    p, dval = dual_gap(Z)
    if np.count_nonzero(np.linalg.norm(Z, axis=2)) > n + 1:
        Zs = _sparsify(Z, Xa, Mf, deadline)
        if Zs is not None:
            ps, ds = dual_gap(Zs)
            if ps - ds <= max(gap_tol, p - dval):
                Z, p, dval = Zs, ps, ds
    net = _to_network(Z, X.shape[1], bias)
    if k:
        # back to the data's units: each layer times 2^(-k/2), every objective times 4^-k
        h = math.ldexp(1.0, -k // 2)
        net = Network([net.weights[0] * h, net.weights[1] * h], [net.biases[0] * h, net.biases[1]])
        p, dval = math.ldexp(p, -2 * k), math.ldexp(dval, -2 * k)
        hist = [(math.ldexp(a, -2 * k), math.ldexp(b, -2 * k)) for a, b in hist]
    if not conv and deadline is not None and time.perf_counter() > deadline:
        # the sampling's own stop, if any, is kept in front: it says why patterns are missing
        late_fit = "the time limit stopped the fit before the gap closed"
        stopped = late_fit if stopped is None else f"{stopped}; {late_fit}"
    return ConvexFit(network=net, objective=p, dual_value=dval, lam=lam_given, n_patterns=P,
                     iterations=it, seconds=time.perf_counter() - t0, converged=conv,
                     history=tuple(hist), all_patterns=complete, stopped=stopped)


def _solve_fista(objective, grad, prox, dual_gap, L, Xa, Mf, cones, y, lam, proj, shape,
                 gap_tol, max_iter, deadline):
    """FISTA bursts; after each, an active-set Newton polish that is kept only when it
    certifies (a wrong face guess would otherwise pull FISTA back to the same face)."""
    Z = np.zeros(shape)
    it_total = 0
    conv = False
    hist: list[tuple[float, float]] = []
    burst = 100
    while it_total < max_iter:
        Z, it, conv, h = _fista(objective, grad, prox, dual_gap, Z, L, burst, gap_tol,
                                check_every=burst, deadline=deadline)
        it_total += it
        hist += h
        if conv or (deadline is not None and time.perf_counter() > deadline):
            break
        Zp = _polish(Z, Xa, Mf, cones, y, lam, proj, deadline=deadline)
        if Zp is not None:
            pz, dz = dual_gap(Zp)
            if pz - dz <= gap_tol:
                hist.append((pz, dz))
                Z = Zp
                conv = True
                break
    return Z, it_total, conv, hist


def _dual_violations(Xa: np.ndarray, Mf: np.ndarray, rho: np.ndarray,
                     proj: _Projector, lam: float) -> np.ndarray:
    """Per pattern, an upper bound on ``max(||P_{K_i}(c_i)||, ||P_{K_i}(-c_i)||)`` with
    ``c_i = X~^T D_i rho``, exact where it exceeds ``lam`` until ``proj.deadline``: the
    dual constraint of pattern ``i`` holds at ``rho`` when this is ``<= lam``.  Past the
    deadline the vectors not yet projected are bounded by their own lengths (a projection
    is never longer than its vector), so the bound stays sound, only looser."""
    return np.max(_dual_projections(Xa, Mf, rho, proj, lam, when_late="keep")[1], axis=0)


# Clarabel's set-up and solve handle about 650,000 constraint nonzeros per second on the
# 2-core CI machine; under a time limit the working set is sized at half that rate
_IPM_NONZEROS_PER_S = 3.0e5


def _solve_ipm(Xa, M, F, Mf, cones, y, lam, proj, dual_gap, gap_tol, deadline,
               direct_rows: int = 200_000, first: int = 100):
    """Interior point (Clarabel), then: project onto the cones (exact pattern feasibility),
    drop groups at the solver's noise level, and polish on the active face when the
    certified gap is still above ``gap_tol``.  The best certified candidate is returned.

    With more than ``direct_rows`` cone rows (2 x the facet rows) the cone program is solved
    on a working set: the patterns whose dual constraints the current residual violates most
    are added (a few dozen per round) until none is violated.  The optimum uses at most
    n + 1 neurons, so the set stays far smaller than the pattern list, and the final
    certificate is checked over every pattern anyway.

    Under a ``deadline`` (a ``time.perf_counter()`` value) the working set holds only the
    patterns whose cone program fits the time left (none when none is left: the zero
    network is then the candidate, with its certified gap)."""
    from .convex_ipm import solve_group_lasso

    n, d = Xa.shape
    P = M.shape[1]
    # constraint nonzeros that each pattern (its two groups) adds to the cone program
    cost = 2 * d * (np.count_nonzero(F, axis=0) + np.count_nonzero(M, axis=0)) + 2 * (d + 1)

    def affordable(order: np.ndarray, spent: float = 0.0) -> np.ndarray:
        if deadline is None:
            return order
        budget = max(0.0, deadline - time.perf_counter()) * _IPM_NONZEROS_PER_S - spent
        return order[:int(np.searchsorted(np.cumsum(cost[order]), budget, side="right"))]

    if 2 * int(np.count_nonzero(F)) <= direct_rows and affordable(np.arange(P)).size == P:
        act = np.arange(P)
    else:  # the patterns that most want a neuron at the zero network (rho = y)
        act = np.sort(affordable(np.argsort(-_dual_violations(Xa, Mf, y, proj, lam))[:first]))
    iterations = 0
    Zraw = np.zeros((2, P, d))
    while act.size:
        # a floor of 0.1 s: Clarabel needs a few iterations for any usable point
        left = None if deadline is None else max(0.1, deadline - time.perf_counter())
        Zs, info = solve_group_lasso(Xa, M[:, act], y, lam, cones=True, rows=F[:, act],
                                     tol=1e-12, time_limit=left)  # tol: the polish needs a tight solve
        iterations += info["iterations"]
        Zraw = np.zeros((2, P, d))
        Zraw[:, act] = Zs
        Zraw = proj.project(Zraw)
        if act.size == P or (deadline is not None and time.perf_counter() > deadline):
            break
        rho = y - _predict(Xa, Mf, Zraw[0] - Zraw[1])
        viol = _dual_violations(Xa, Mf, rho, proj, lam)
        viol[act] = 0.0
        out = np.nonzero(viol > lam * (1 + FEAS_TOL))[0]
        if out.size == 0 or (deadline is not None and time.perf_counter() > deadline):
            break
        add = affordable(out[np.argsort(-viol[out])[:max(25, n // 2)]], float(cost[act].sum()))
        if add.size == 0:
            break
        act = np.union1d(act, add)
    norms = np.linalg.norm(Zraw, axis=2)
    # an interior point leaves every group slightly nonzero: the sparse candidates (groups
    # at the solver's noise level dropped, then Newton on that face) are tried first
    Zclean = np.where((norms > 1e-6 * max(1.0, float(norms.max())))[:, :, None], Zraw, 0.0)  # tol: solver noise

    def polished():
        if deadline is not None and time.perf_counter() > deadline:
            return None  # no time left to polish: the certificate of the other candidates stands
        Zp = _polish(Zclean, Xa, Mf, cones, y, lam, proj, deadline=deadline)
        return None if Zp is None else proj.project(Zp)

    hist: list[tuple[float, float]] = []
    best = None
    for make in (lambda: Zclean, polished, lambda: Zraw):
        Z = make()
        if Z is None:
            continue
        p, dv = dual_gap(Z)
        hist.append((p, dv))
        if best is None or p - dv < best[1] - best[2]:
            best = (Z, p, dv)
        if p - dv <= gap_tol:
            break
    Z, p, dv = best
    return Z, iterations, p - dv <= gap_tol, hist


def _sparsify(Z: np.ndarray, Xa: np.ndarray, Mf: np.ndarray,
              deadline: float | None = None) -> np.ndarray | None:
    """The same predictions and penalty with at most ``n + 1`` nonzero groups.

    With each group's direction fixed, predictions and penalty are linear in the group
    norms ``t >= 0``; a vertex of ``{t >= 0 : sum_k t_k a_k = f(X), sum_k t_k = T}`` (the
    simplex method returns one) has at most ``n + 1`` nonzeros (Caratheodory).  An
    interior-point optimum spreads over every equivalent group instead.  None when the LP
    fails or does not finish by ``deadline`` (a ``time.perf_counter()`` value); the caller
    re-certifies the result."""
    from ..lp import solve as lp_solve

    left = None if deadline is None else deadline - time.perf_counter()
    if left is not None and left <= 0:
        return None

    norms = np.linalg.norm(Z, axis=2)
    ss, iis = np.nonzero(norms > 0)
    U = Z[ss, iis] / norms[ss, iis][:, None]  # (K, d) unit directions
    sgn = np.where(ss == 0, 1.0, -1.0)
    A = (Mf[:, iis] * (Xa @ U.T)) * sgn[None, :]  # (n, K): prediction per unit norm
    t0 = norms[ss, iis]
    A_eq = np.vstack([A, np.ones((1, t0.size))])
    b_eq = A_eq @ t0
    r = lp_solve(np.zeros(t0.size), A_eq=A_eq, b_eq=b_eq, lb=np.zeros(t0.size), time_limit=left)
    if r.status != "optimal" or r.x is None:
        return None
    t = np.where(r.x > ROUNDOFF * max(1.0, float(t0.max())), r.x, 0.0)
    out = np.zeros_like(Z)
    out[ss, iis] = t[:, None] * U
    return out


def _polish(Z: np.ndarray, Xa: np.ndarray, Mf: np.ndarray, cones: _ConeRows,
            y: np.ndarray, lam: float, proj: _Projector, rounds: int = 100,
            deadline: float | None = None) -> np.ndarray | None:
    """Primal active-set method started from the FISTA iterate ``Z``.

    The working face is a set of nonzero groups, each with a set of cone rows held at zero;
    on it the objective is smooth and Newton's method (least-norm steps, a ratio test that
    stops at the first new cone row) solves it.  At a face optimum the KKT conditions are
    checked: a held row with a negative multiplier is released, and a zero group whose
    projected gradient exceeds ``lam`` (a violated dual constraint) enters.  Returns the
    final point (its certificate is computed by the caller) or None on breakdown.  Past
    ``deadline`` (a ``time.perf_counter()`` value) it returns the point it has."""
    n, d = Xa.shape
    norms = np.linalg.norm(Z, axis=2)
    top = max(TINY, float(norms.max()))
    groups: list[list[Any]] = []
    for s in range(2):
        for i in np.nonzero(norms[s] > 1e-10 * top)[0]:  # tol: groups the solver left nonzero
            z = Z[s, i].copy()
            vals = cones[i] @ z
            sc = np.linalg.norm(cones[i], axis=1) * np.linalg.norm(z)
            groups.append([s, int(i), z, vals <= FEAS_TOL * np.maximum(sc, TINY)])
    sgn = (1.0, -1.0)

    def prediction(gs):
        yh = np.zeros(n)
        for s, i, z, _ in gs:
            yh += sgn[s] * Mf[:, i] * (Xa @ z)
        return yh

    for _ in range(rounds):
        if deadline is not None and time.perf_counter() > deadline:
            break
        if groups:
            status = _face_newton(groups, Xa, Mf, cones, y, lam, deadline=deadline)
            if status is None:
                return None
            # "stalled": no step decreases F in floating point; treat it as the face optimum
            # and let the KKT checks below (and the caller's certificate) judge it
            if status not in ("converged", "stalled"):
                continue
        rho = y - prediction(groups)
        # release held rows with negative multipliers
        released = False
        for g in groups:
            s, i, z, act = g
            if not act.any():
                continue
            nz = float(np.linalg.norm(z))
            grad = -sgn[s] * (Mf[:, i] * Xa.T) @ rho + lam * z / nz
            Ga = cones[i][act]
            mu = np.linalg.lstsq(Ga.T, grad, rcond=None)[0]
            if mu.min() < -FEAS_TOL * max(1.0, float(np.abs(mu).max())):
                rows = np.nonzero(act)[0]
                act[rows[int(np.argmin(mu))]] = False
                released = True
        if released:
            continue
        # zero groups whose dual constraint is violated enter the face
        Cp, nrm = _dual_projections(Xa, Mf, rho, proj, lam)
        for s, i, _, _ in groups:
            nrm[s, i] = 0.0
        s, i = np.unravel_index(int(np.argmax(nrm)), nrm.shape)
        if nrm[s, i] <= lam * (1 + 1e-10):  # tol: dual constraint tight
            Zo = np.zeros_like(Z)
            for s2, i2, z2, _ in groups:
                Zo[s2, i2] = z2
            return Zo
        u = Cp[s, i] / nrm[s, i]
        z = 1e-6 * max(1.0, top) * u  # tol: a small seed weight
        vals = cones[int(i)] @ z
        sc = np.linalg.norm(cones[int(i)], axis=1) * np.linalg.norm(z)
        groups.append([int(s), int(i), z, vals <= FEAS_TOL * np.maximum(sc, TINY)])
    Zo = np.zeros_like(Z)
    for s2, i2, z2, _ in groups:
        Zo[s2, i2] = z2
    return Zo


class _Face:
    """The group-lasso problem restricted to the current face: each group ``k`` keeps its
    weight in the null space ``N_k`` of its active cone rows, so the problem in the
    coordinates ``xi`` is ``min 1/2 ||B xi - y||^2 + lam sum_k ||xi_k||``."""

    def __init__(self, groups, Xa, Mf, cones, y, lam):
        d = Xa.shape[1]
        sgn = (1.0, -1.0)
        self.groups, self.cones, self.y, self.lam = groups, cones, y, lam
        self.Ns, Bs = [], []
        for s, i, _, act in groups:
            if act.any():
                _, sv, Vt = np.linalg.svd(cones[i][act])
                rank = int(np.sum(sv > 1e-10 * sv[0]))  # tol: numerical rank
                N = Vt[rank:].T
            else:
                N = np.eye(d)
            self.Ns.append(N)
            Bs.append(sgn[s] * (Mf[:, i:i + 1] * Xa) @ N)
        self.empty = [k for k in range(len(groups)) if self.Ns[k].shape[1] == 0]
        if self.empty:
            return
        self.K = len(groups)
        self.B = np.hstack(Bs)
        self.offs = np.concatenate([[0], np.cumsum([N.shape[1] for N in self.Ns])])
        self.BtB = self.B.T @ self.B
        self.Bty = self.B.T @ y

    def sl(self, k: int) -> slice:
        return slice(self.offs[k], self.offs[k + 1])

    def start(self) -> np.ndarray:
        return np.concatenate([self.Ns[k].T @ self.groups[k][2] for k in range(self.K)])

    def F(self, v: np.ndarray) -> float:
        r = self.B @ v - self.y
        return 0.5 * float(r @ r) + self.lam * sum(
            float(np.linalg.norm(v[self.sl(k)])) for k in range(self.K))

    def store(self, v: np.ndarray) -> None:
        for k in range(self.K):
            self.groups[k][2] = self.Ns[k] @ v[self.sl(k)]

    def newton_system(self, xi: np.ndarray):
        """Gradient and Hessian at ``xi``, or the index of a group at zero (not smooth)."""
        g = self.BtB @ xi - self.Bty
        H = self.BtB.copy()
        for k in range(self.K):
            sl = self.sl(k)
            v = xi[sl]
            nv = float(np.linalg.norm(v))
            if nv == 0.0:
                return k
            u = v / nv
            g[sl] += self.lam * u
            H[sl, sl] += self.lam * (np.eye(v.size) - np.outer(u, u)) / nv
        return g, H

    def ratio_test(self, xi: np.ndarray, step: np.ndarray):
        """The longest step along ``step`` before a free cone row of some group turns
        negative, and that (group, row)."""
        a_max, hit = np.inf, None
        for k in range(self.K):
            s, i, _, act = self.groups[k]
            free = ~act
            if not free.any():
                continue
            GN = self.cones[i][free] @ self.Ns[k]
            v0 = GN @ xi[self.sl(k)]
            dv = GN @ step[self.sl(k)]
            neg = dv < 0
            if neg.any():
                ratios = np.maximum(v0[neg], 0.0) / -dv[neg]
                j = int(np.argmin(ratios))
                if ratios[j] < a_max:
                    a_max = float(ratios[j])
                    hit = (k, np.nonzero(free)[0][np.nonzero(neg)[0][j]])
        return a_max, hit

    def group_through_zero(self, xi: np.ndarray, step: np.ndarray, a_max: float):
        """A group the step drives (nearly) through zero within ``min(1, a_max)``: the
        first such, and the step length to its closest approach (None if none)."""
        kill, a_kill = None, np.inf
        for k in range(self.K):
            v, sv = xi[self.sl(k)], step[self.sl(k)]
            ip = float(v @ sv)
            if ip < 0:
                ak = -ip / float(sv @ sv)
                if ak <= min(1.0, a_max) and np.linalg.norm(v + ak * sv) <= 0.1 * np.linalg.norm(v):
                    if ak < a_kill:
                        kill, a_kill = k, ak
        return kill, a_kill

    def line_search(self, xi, f, g, step, a_max, hit):
        """Armijo backtracking along the Newton step, then along steepest descent.
        Returns ``(cand, fc, blocked, hit)`` or None when neither direction descends."""
        for attempt in range(2):
            if attempt == 1:  # the Newton direction failed: steepest descent instead
                step = -g
                a_max, hit = self.ratio_test(xi, step)
            a = min(1.0, a_max)
            blocked = a_max <= 1.0
            slope = float(g @ step)
            while a > 1e-14:  # tol: no step left
                cand = xi + a * step
                fc = self.F(cand)
                if fc <= f + 1e-4 * a * slope:
                    return cand, fc, blocked, hit
                a *= 0.5
                blocked = False
        return None


def _newton_step(face: _Face, g: np.ndarray, H: np.ndarray) -> np.ndarray | None:
    """The Newton direction (least-norm: the face problem may be degenerate, with more
    weights than data), or steepest descent when that does not descend."""
    try:
        step = -np.linalg.lstsq(H, g, rcond=1e-13)[0]  # tol: least squares cut-off
    except np.linalg.LinAlgError:
        return None
    if float(g @ step) >= 0:
        step = -g
    return step


def _face_newton(groups, Xa, Mf, cones, y, lam, max_newton: int = 60, deadline: float | None = None):
    """Newton's method on the current face; edits ``groups`` in place.  Returns
    "converged", "blocked" (a new row was hit and is now held), "dropped" (a group
    vanished and left), "stalled", or None on breakdown."""
    face = _Face(groups, Xa, Mf, cones, y, lam)
    if face.empty:
        groups[:] = [groups[k] for k in range(len(groups)) if k not in face.empty]
        return "dropped"
    K = face.K
    xi = face.start()
    f = face.F(xi)
    for _ in range(max_newton):
        if deadline is not None and time.perf_counter() > deadline:
            break  # stored below as "stalled": the caller stops too
        sys_ = face.newton_system(xi)
        if not isinstance(sys_, tuple):
            groups.pop(sys_)
            return "dropped"
        g, H = sys_
        if np.linalg.norm(g) <= 1e-13 * max(1.0, float(np.linalg.norm(face.Bty))):  # tol: Newton converged
            face.store(xi)
            return "converged"
        step = _newton_step(face, g, H)
        if step is None:
            return None
        a_max, hit = face.ratio_test(xi, step)
        if a_max <= 1e-14:  # tol: no step left
            # blocked at once (typically by a row just released, when the face problem is
            # degenerate and the Newton step is not unique): fall back to steepest descent
            step = -g
            a_max, hit = face.ratio_test(xi, step)
        # a Newton step that wants a group through zero: stop there and drop the group
        # (the objective is not smooth at zero, so the quadratic model is wrong past it)
        kill, a_kill = face.group_through_zero(xi, step, a_max)
        if kill is not None:
            cand = xi + a_kill * step
            cand[face.sl(kill)] = 0.0
            if face.F(cand) <= f:
                face.store(cand)
                groups.pop(kill)
                return "dropped"
        found = face.line_search(xi, f, g, step, a_max, hit)
        if found is None:
            face.store(xi)
            if np.linalg.norm(g) <= FEAS_TOL * max(1.0, float(np.linalg.norm(face.Bty))):
                return "converged"
            # no progress: the smallest group is the likely culprit; try without it
            nrm = [float(np.linalg.norm(xi[face.sl(k)])) for k in range(K)]
            k = int(np.argmin(nrm))
            if nrm[k] <= 1e-3 * max(nrm):
                groups.pop(k)
                return "dropped"
            return "stalled"
        xi, f, blocked, hit = found
        for k in range(K):
            sl = face.sl(k)
            if np.linalg.norm(xi[sl]) <= ROUNDOFF * max(1.0, float(np.abs(xi).max())):
                xi[sl] = 0.0
                face.store(xi)
                groups.pop(k)
                return "dropped"
        if blocked and hit is not None:
            face.store(xi)
            groups[hit[0]][3][hit[1]] = True
            return "blocked"
    face.store(xi)
    return "stalled"


def _dual_value(rho: np.ndarray, y: np.ndarray, q: float) -> float:
    """max over t in [0, 1/q] of t rho.y - t^2 ||rho||^2 / 2 (q = max dual-constraint ratio)."""
    rr = float(rho @ rho)
    if rr == 0.0:
        return 0.0
    t = max(0.0, float(rho @ y) / rr)
    if q > 0:
        t = min(t, 1.0 / q)
    return t * float(rho @ y) - 0.5 * t * t * rr


def _to_network(Z: np.ndarray, d_in: int, bias: bool) -> Network:
    # each nonzero group v (V's, then U's) becomes a neuron v / sqrt|v| with output weight
    # +-sqrt|v| (vectorised: a loop over 76,000 groups took 0.27 s of a 0.5 s time limit)
    V = Z.reshape(-1, Z.shape[-1])
    nv = np.linalg.norm(V, axis=1)
    sign = np.repeat([1.0, -1.0], Z.shape[1])
    keep = nv > 0
    if not keep.any():
        W = np.zeros((1, d_in + (1 if bias else 0)))
        a = np.zeros(1)
    else:
        root = np.sqrt(nv[keep])
        W, a = V[keep] / root[:, None], sign[keep] * root
    W1 = W[:, :d_in]
    b1 = W[:, d_in] if bias else np.zeros(W.shape[0])
    return Network([W1, a[None, :]], [b1, np.zeros(1)])


def nonconvex_objective(net: Network, X: Any, y: Any, lam: float, bias: bool = True) -> float:
    """``(1/2)||net(X) - y||^2 + (lam/2)(||W1||^2 [+ ||b1||^2] + ||W2||^2)`` for a
    two-layer network without output bias.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0, 0.0]], [[2.0]]], [[0.0], [0.0]])       # 2 relu(x1), no output bias
        >>> X = np.array([[1.0, 0.0]]); y = np.array([1.0])
        >>> nonconvex_objective(net, X, y, lam=0.5)       # (1/2)(2 - 1)^2 + (0.5/2)(1 + 0 + 4)
        1.75
    """
    if not isinstance(net, Network) or net.n_hidden_layers != 1 or net.skip is not None or net.output_dim != 1:
        # the penalty below reads two layers: a third was silently left out
        raise ConvexTrainingError("nonconvex_objective: expects a two-layer network (one hidden layer, "
                                  "one output, no skip connection)")
    X, y = _prep(X, y, lam)
    r = net(X)[:, 0] - y
    pen = float(np.sum(net.weights[0] ** 2) + np.sum(net.weights[1] ** 2))
    if bias:
        pen += float(np.sum(net.biases[0] ** 2))
    return 0.5 * float(r @ r) + 0.5 * lam * pen


def gated_fit(X: Any, y: Any, lam: float, max_patterns: int = 200, *, bias: bool = True,
              seed: int = 0, gap_tol: float | None = None, max_iter: int = 50000,
              solver: str = "ipm", time_limit: float | None = None) -> GatedFit:
    """Globally optimal gated-ReLU network (group lasso over sampled gates) for
    ``(1/2)||f(X)-y||^2 + lam sum_i ||w_i||``, with a duality-gap certificate.

    ``solver`` is ``"ipm"`` (Clarabel's interior point; default) or ``"fista"``, as in
    :func:`convex_fit`; the gap is certified independently of either.  ``time_limit``
    (seconds, None: none) covers the gate sampling and the solve (FISTA runs instead of
    the interior point when its cone program would not fit in the time left); a fit
    stopped by it is ``converged=False``, with its gap still certified.

    Example:
        >>> X = np.array([[-1.0], [0.0], [1.0]]); y = np.array([1.0, 0.0, 1.0])
        >>> g = gated_fit(X, y, lam=0.01); g.gap < 1e-7
        True
    """
    gap_tol = _check_solver_options(gap_tol, max_iter, bias)
    X, y = _prep(X, y, lam)
    lam_given = float(lam)   # a float32 lam kept the primal, dual and gap in float32
    _check_solver(solver)
    max_patterns = _check_max_patterns(max_patterns)
    time_limit = _check_time_limit(time_limit, ConvexTrainingError)
    k, y, lam = _scaled_targets(y, lam_given, "gated_fit")   # see TARGET_RANGE_EXP
    t0 = time.perf_counter()
    Xa = _augment(X, bias)
    n, d = Xa.shape
    deadline = None if time_limit is None else t0 + time_limit
    M, Gt, _, _ = _patterns_until(Xa, max_patterns, seed,
                                  None if time_limit is None else t0 + 0.5 * time_limit)
    Mf = M.astype(np.float64)
    P = M.shape[1]

    def pred(W):
        return _predict(Xa, Mf, W)

    def objective(W):
        r = pred(W) - y
        return 0.5 * float(r @ r) + lam * float(np.sum(np.linalg.norm(W, axis=1)))

    def grad(W):
        return _correlate(Xa, Mf, pred(W) - y)

    def prox(Ws, step):
        nr = np.linalg.norm(Ws, axis=1, keepdims=True)
        return np.where(nr > step * lam, (1.0 - step * lam / np.maximum(nr, TINY)) * Ws, 0.0)

    def dual_gap(W):
        rho = y - pred(W)
        p = 0.5 * float(rho @ rho) + lam * float(np.sum(np.linalg.norm(W, axis=1)))
        q = float(np.max(np.linalg.norm(_correlate(Xa, Mf, rho), axis=1)))
        return p, _dual_value(rho, y, q / lam)

    nonzeros = d * int(np.count_nonzero(M)) + (d + 1) * P  # of the cone program
    if solver == "ipm" and deadline is not None and \
            nonzeros > max(0.0, deadline - time.perf_counter()) * _IPM_NONZEROS_PER_S:
        solver = "fista"
    p0, d0 = dual_gap(np.zeros((P, d)))
    # relative to (1/2)|y|^2: an absolute 1e-8 certified the zero network as optimal for
    # targets of size 1e-4, whose whole objective is 1e-8 (scaling y and lam by c scales
    # every objective by c^2, so the certificate must too)
    gap_tol = gap_tol * p0
    if p0 - d0 <= gap_tol:  # beyond the collapse threshold: zero is optimal (see convex_fit)
        W, it, conv = np.zeros((P, d)), 0, True
    elif solver == "ipm":
        from .convex_ipm import solve_group_lasso

        # the solve gets what the sampling left (a floor of 0.1 s: Clarabel needs a few
        # iterations for any usable point)
        left = None if deadline is None else max(0.1, deadline - time.perf_counter())
        Wraw, info = solve_group_lasso(Xa, M, y, lam, cones=False, tol=1e-12,  # tol: tight solve
                                       time_limit=left)
        it = info["iterations"]
        nr = np.linalg.norm(Wraw, axis=1)
        # groups at the interior point's noise level are dropped when that still certifies
        Wclean = np.where((nr > 1e-6 * max(1.0, float(nr.max())))[:, None], Wraw, 0.0)  # tol: solver noise
        p, dval = dual_gap(Wclean)
        W = Wclean if p - dval <= gap_tol else Wraw
        p, dval = dual_gap(W)
        conv = p - dval <= gap_tol
    else:
        L = _opnorm_sq(pred, lambda r: _correlate(Xa, Mf, r), (P, d), seed=seed,
                       deadline=deadline,
                       frobenius_sq=float(np.sum(Mf.T @ np.sum(Xa * Xa, axis=1))))
        W, it, conv, _ = _fista(objective, grad, prox, dual_gap, np.zeros((P, d)), L,
                                max_iter, gap_tol, deadline=deadline)
    p, dval = dual_gap(W)
    if k:   # back to the data's units: the outputs are linear in W
        W, p, dval = np.ldexp(W, -k), math.ldexp(p, -2 * k), math.ldexp(dval, -2 * k)
    return GatedFit(gates=Gt, weights=W, bias=bias, objective=p, dual_value=dval,
                    lam=lam_given, iterations=it, seconds=time.perf_counter() - t0,
                    converged=conv,
                    stopped="time_limit" if (not conv and deadline is not None
                                             and time.perf_counter() >= deadline) else None)
