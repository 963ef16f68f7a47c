"""Deeper layers by tracing kink surfaces, with the previous layer's orientation unknown.

Once layers ``1 .. k-2`` are known (oriented) and layer ``k-1`` is known up to the
orientation of each neuron (``z = U g + b``, ``g`` the outputs of layer ``k-2``, or ``x``),
every neuron ``q`` of layer ``k`` has the pre-activation

    p_q(x) = sum_l V_ql relu(z_l(x)) + M_q . g(x) + c_q

for some ``(V_q, M_q, c_q)``: a neuron of layer ``k-1`` stored with the wrong orientation,
``relu(-z) = relu(z) - z``, only adds an affine term in ``g``, which ``M_q`` absorbs.  The
unknowns enter linearly, so they follow from the kink surface ``p_q = 0`` of the neuron:

* the surface is a hyperplane inside each cell of the known layers (the cells do not
  depend on orientations) and bends at their boundaries; it is *traced*: from a critical
  point, walk inside the local hyperplane to the next cell boundary, and find the
  continuation in the next cell (a hyperplane through the crossing point: checked);
* at every critical point ``x`` (with local normal ``n`` from a gradient jump),
  ``phi(x) . theta = 0`` and the gradient ``J_phi(x)^T theta`` is parallel to ``n``, with
  ``phi = [relu(z), g, 1]`` and ``theta = (V_q, M_q, c_q)``: linear, homogeneous equations;
  ``theta`` is their null vector (a deeper neuron's surface, bent where no known
  boundary is, leaves no null vector and is rejected);
* the orientations of layer ``k-1`` then come from all rows at once: the neurons stored
  the wrong way round are the subset ``F`` with ``M = -sum_{l in F} V_l U_l``
  (:func:`~relulab.extract.signs.subset_signs`), a polynomial least-squares problem when
  the terms are independent (the usual case: ``K x dim(g)`` equations, ``n`` unknowns);
* precision: every critical point is exact (two linear pieces intersected), so the
  value equations ``phi(x) . theta = 0`` alone, over many points and cells, refit ``theta``
  by least squares once the gradient equations have found it.

Example (a 4-6-3-1 network whose first layer is stored with neurons 1 and 4 the wrong
way round; the traced rows of layer 2 say which):
    >>> import numpy as np
    >>> from relulab import Network
    >>> from relulab.extract.oracle import QueryOracle
    >>> rng = np.random.default_rng(4)
    >>> W1, b1 = rng.normal(size=(6, 4)) / 2, 0.5 * rng.normal(size=6)
    >>> W2, b2 = rng.normal(size=(3, 6)) / 6 ** 0.5, 0.5 * rng.normal(size=3)
    >>> net = Network([W1, W2, rng.normal(size=(1, 3))], [b1, b2, [0.0]])
    >>> s = np.array([1.0, -1, 1, 1, -1, 1])
    >>> tl = trace_layer(QueryOracle(net), [], W1 * s[:, None], b1 * s, 4,
    ...                  np.random.default_rng(4), width=3)
    >>> tl.flip.tolist()
    [False, True, False, False, True, False]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..tolerance import MATCH_RTOL, ROUNDOFF
from .layer import _jump_normal, _Probe, _random_line_kinks
from .oracle import QueryOracle
from .signs import EXTRACTION_DEADLINE, SUBSET_RTOL, subset_signs
from .space import Space

__all__ = ["TracedNeuron", "TracedLayer", "trace_layer"]

# A point lies on a known neuron's boundary when its pre-activation is this small
# (relative to the size of the terms): located kinks are good to ~1e-12.
ON_KNOWN_RTOL = 1e-7  # tol: see the comment above
# The continuation of a surface in the next cell must pass through the crossing point:
# normals from gradient jumps are good to ~1e-9, so this allows their error over the step.
CONTINUE_RTOL = 1e-7  # tol: see the comment above
# The equations of a neuron have a null vector when the smallest singular value is below
# this x the largest; the next one must be above GAP x it (one vector, not a family).
NULL_RTOL = 1e-6  # tol: gradient-jump normals are good to ~1e-9
GAP = 1e3
# Critical points are exact: on the neuron's surface their value equation holds to this
# (relative) once theta is good to ~1e-9; a point off by more is another surface's.
VALUE_RTOL = 1e-7  # tol: see the comment above
# A refitted row fits its exact traced points to this (relative); more means a stray point
# took part in the fit (:func:`_refit_clean`).
CLEAN_RTOL = 1e-11  # tol: clean refits leave ~1e-14, a stray point ~1e-9
# A surface point explains a kink when |p(x)| is below this x the size of its terms.
SURFACE_RTOL = 1e-6  # tol: refined rows are good to ~1e-10, other neurons are O(1) away
# Witness hunt (last hidden layer): random inputs fitted by the features of the neurons
# found; a point off the fit by more than this (relative to the outputs' size) witnesses
# a missing neuron.  Exact fits leave ~1e-12; a missing neuron leaves its O(1) term.
HUNT_RTOL = 1e-8  # tol: see the comment above
HUNT_POINTS = 2000  # random inputs per witness search
HUNT_ROUNDS = 8  # witness searches (each one after a new neuron)
HUNT_LINES = 10  # lines from witnesses per search
# Tracing walks toward a previous-layer hyperplane until this many traced points lie on
# each side of it (a weight seen at one point is fitted from few equations).
REACH_MIN = 3
REACH_BUDGET = 3  # steps of all those walks, per trace, in units of its point budget
REACH_BUDGET_CHEAP = 1  # layer 2 as the last hidden layer: past this, only never-crossed ones
REACH_STEPS = 60  # steps of one walk toward one hyperplane
REACH_RETRIES = 4  # failed steps in a row (each more random) before a walk gives up
# Where a reach step looks for the continuation in the next cell (fractions of the way
# across it).  Layer 2 as the last hidden layer: one place only; a failed step cost about
# eight successful ones, and a walk retries with a more random direction anyway.
REACH_FRACS: tuple[float, ...] = (0.3,)
# Everywhere else a step looks at these fractions in turn (:func:`_step`).
STEP_FRACS: tuple[float, ...] = (0.3, 0.05, 0.01)
# Completion of a weight the walk never saw (:func:`_complete`): lines from this many
# traced points nearest the previous-layer hyperplane (and as many random ones); two
# candidates agree when they differ by this x the size of their terms (exact kinks give
# ~1e-12, other surfaces' kinks O(1)).
COMPLETE_STARTS = 6
# Global test of a traced row (:func:`_surface_is_global`): random lines, a grid of this
# many steps to find where the row predicts its surface, accepted after GLOBAL_HITS
# kinks found there, rejected after GLOBAL_MISSES crossings without one (another kink
# inside the window hides one now and then: ~2 % of crossings).
GLOBAL_LINES = 12
# A traced row is a combination of other rows when the residual is below this (relative):
# rows are good to ~1e-9, independent rows differ by O(1).
COMBO_RTOL = 1e-6  # tol: see the comment above
# A complete row's affine part, once the previous layer is oriented, is zero to this
# (relative to its weights): rows are good to ~1e-9; a deeper neuron's is O(1).
ROW_AFFINE_RTOL = 1e-6  # tol: see the comment above
GLOBAL_GRID = 4000
GLOBAL_HITS = 3
GLOBAL_MISSES = 2
GLOBAL_RTOL = 1e-6  # tol: a predicted crossing is good to ~1e-9 of the line's length
COMPLETE_RTOL = 1e-7  # tol: see the comment above
# Two cell boundaries met within this relative distance along a step count as met at once.
TIE_RTOL = 1e-9  # tol: see the comment above
# Continue a surface past a hyperplane of layer k-1 with the normal computed from the
# crossing point (one number, :func:`_continued_normal`) instead of a measured gradient jump.
CHEAP_CONTINUATION = True
# A carried normal is kept when a second kink of the new cell lies on its hyperplane to
# this (relative): about as good as a measured gradient jump.  Errors carried from step
# to step grow past it after some steps, and the normal is then measured again
# (2 (d + 1) queries).  Looser (1e-7) was measured worse: the solve's value check
# (VALUE_RTOL) then rejects true surfaces and they are traced again.
PROPAGATED_RTOL = 1e-9  # tol: see the comment above
# Extra exact critical points located near each traced point for the final refit (value
# equations): EXTRA_PER_POINT each, EXTRA_RARE (None: dim + 2, the whole local plane)
# at points on a rarely seen side of a previous-layer neuron (only for layer 2 as the last
# hidden layer; otherwise 2 and dim + 2: with these, two rows of 40-20-10-10-1 seed 0's
# layer 3 came out too imprecise to orient the layer before).  Measured (80-40-20-1 seeds
# 0-2): 2 / dim + 2 cost 2^20.8 queries for 36 bits, 0 / 2 cost 2^18.2-2^18.5 for 33-35
# bits; the traced points already pin every weight to well below 2^-30.
EXTRA_PER_POINT = 0
EXTRA_RARE: int | None = 2
# Look for a surface's continuation with one five-query window first (full search after).
SINGLE_FIRST = True
# Measure a kink's gradient jump only along the span of the first-layer rows
# (:meth:`_Known.basis`): 2 (k + 1) queries instead of 2 (d + 1) (k = 40, d = 80 at 80-40-20-1).
SUBSPACE_NORMALS = True
# ... and, once the first layer is oriented, along the rows active beside the kink only.
ACTIVE_NORMALS = True
ACTIVE_RTOL = 1e-6  # tol: a row this close to 0 (relative) beside a kink counts as active


@dataclass
class TracedNeuron:
    """A neuron of layer ``k``: ``theta = (V, M, c)`` (unit norm, up to sign), the critical
    points traced on its surface, the coordinates of ``V`` that could not be identified
    (the neuron of layer ``k-1`` never switched along the traced surface), and ``dead``: the
    inputs ``g_j`` of layer ``k-1`` that are 0 at every traced point (a neuron of layer
    ``k-2`` inactive all along the surface), whose coordinate of ``M`` the surface cannot
    show.  ``M`` serves only to orient layer ``k-1`` (the final row is ``V`` and a bias), so
    a dead input leaves the row complete; ``theta`` is the pre-activation where ``g_j = 0``.

    Example:
        >>> t = TracedNeuron(np.array([1.0, 0.0, 0.5]), [np.zeros(1)], [np.ones(1)], [])
        >>> t.theta.tolist(), t.identified
        ([1.0, 0.0, 0.5], True)
    """

    theta: np.ndarray
    points: list[np.ndarray]
    normals: list[np.ndarray]
    unknown: list[int]
    cells: int = 0
    dead: list[int] = field(default_factory=list)

    def held(self, n_prev: int) -> list[int]:
        """Coordinates of ``theta`` the traced points cannot fix (kept at 0 in fits): the
        unidentified weights in ``V`` and ``M`` at the dead inputs."""
        return [*self.unknown, *(n_prev + j for j in self.dead)]

    @property
    def identified(self) -> bool:
        return not self.unknown


@dataclass
class TracedLayer:
    """What :func:`trace_layer` found: the neurons of layer ``k`` (rows of ``(W, b)`` acting
    on the *oriented* outputs of layer ``k-1``, up to their own orientation), which neurons
    of layer ``k-1`` are stored the wrong way round (``flip``; None when the subset problem
    had no solution), and the work done.

    Example:
        >>> tl = TracedLayer([], np.zeros(0, bool), np.zeros((0, 2)), np.zeros(0), 0, 0, 0)
        >>> tl.W.shape, tl.seeds
        ((0, 2), 0)
    """

    neurons: list[TracedNeuron]
    flip: np.ndarray | None
    W: np.ndarray
    b: np.ndarray
    seeds: int
    rejected: int
    lines: int
    notes: list[str] = field(default_factory=list)

    @property
    def rows(self) -> list[TracedNeuron]:
        return self.neurons


# ---------------------------------------------------------------- the known layers
class _Known:
    """The oriented layers ``1..k-2`` and the unoriented layer ``k-1`` (``U, b``)."""

    def __init__(self, layers: list[tuple[np.ndarray, np.ndarray]], U: np.ndarray, b: np.ndarray) -> None:
        self.layers, self.U, self.b = layers, np.asarray(U, float), np.asarray(b, float)
        # the query-saving continuation (carried normals, one-window search, few extra
        # refit points): set by trace_layer for layer 2 as the last hidden layer
        self.cheap = False
        # the orientation of U once a complete traced row fixed it (layer 2, cheap mode)
        self.flip: np.ndarray | None = None
        self._rowspace: np.ndarray | None = None
        if not self.layers and self.U.shape[0]:
            # layer 2: the first layer's orientations are not known yet, so any of its rows
            # may be active; the span of all of them holds every gradient
            self._rowspace = _orth_rows(self.U)

    @property
    def narrow(self) -> bool:
        """Layer 2 as the last hidden layer with first-layer rows that do not span R^d: kink
        normals there are measured in a subspace (:meth:`basis`), and the reach walks use
        their query savings (REACH_FRACS, REACH_BUDGET_CHEAP; measured at 80-40-20-1; at
        10-20-20-1, where the rows span R^10, they changed the walks for no gain)."""
        return self.cheap and not self.layers and self._rowspace is not None

    def basis(self, pl: np.ndarray, pr: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """An orthonormal basis ``Q`` (d x k) of a subspace holding the network's gradient on
        the linear pieces at ``pl`` and ``pr`` (beside a kink), and the largest step along
        each column that stays in the first-layer cell of both points (k,); None for the
        whole space.  The gradient is ``W1^T D1 (...)``: it lies in the span of the
        first-layer rows active there.  While the first layer's orientation is unknown any
        row may be the active side: the span of all rows of ``U``; once a complete traced
        row fixed it (``flip``), the rows active at ``pl`` or ``pr``.  Used only where the
        rows do not span R^d, for layer 2 as the last hidden layer (deeper networks: measured to lose neurons, 10-8-6-5-1
        seed 2 of the tests).  The steps matter: a basis direction points along first-layer
        normals, so a step as long as an axis step leaves the cell far more often.

        Example:
            >>> k = _Known([], np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]]), np.array([-2.0, -2.0]))
            >>> k.cheap = True
            >>> Q, cap = k.basis(np.zeros(3), np.zeros(3))
            >>> Q.shape, bool(np.allclose(Q[2], 0.0)), bool(np.all(cap > 0.5))
            ((3, 2), True, True)
        """
        if not SUBSPACE_NORMALS or not self.narrow:
            # (rows spanning R^d, as at 10-20-20-1: about half of them active still span
            # most of it, little to save; measured there, the changed walks cost a weight)
            return None
        Q = self._rowspace
        zl, zr = self.U @ pl + self.b, self.U @ pr + self.b
        if self.flip is not None and ACTIVE_NORMALS:
            # oriented: only the rows active at pl or pr carry the gradient (rows within
            # rounding of 0 count as active: a wrong "inactive" would lose a direction)
            s = np.where(self.flip, -1.0, 1.0)
            tol = ACTIVE_RTOL * (np.abs(self.U) @ np.maximum(np.abs(pl), np.abs(pr)) + np.abs(self.b))
            act = (s * zl > -tol) | (s * zr > -tol)
            if act.any():
                Q = _orth_rows(self.U[act])
        if Q is None:
            return None
        # half the distance to the nearest first-layer hyperplane along each column
        rate = np.abs(self.U @ Q) + 1e-300  # tol: floor only
        cap = 0.5 * np.minimum(np.abs(zl)[:, None] / rate, np.abs(zr)[:, None] / rate).min(axis=0)
        return Q, cap

    def g(self, X: np.ndarray) -> np.ndarray:
        H = np.atleast_2d(X)
        for W, c in self.layers:
            H = np.maximum(H @ W.T + c, 0.0)
        return H

    def phi(self, X: np.ndarray) -> np.ndarray:
        G = self.g(X)
        Z = G @ self.U.T + self.b
        return np.hstack([np.maximum(Z, 0.0), G, np.ones((G.shape[0], 1))])

    def pre(self, X: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each known layer's pre-activations and their scale (for zero tests)."""
        H = np.atleast_2d(X)
        out = []
        for W, c in [*self.layers, (self.U, self.b)]:
            Z = H @ W.T + c
            out.append((Z, np.abs(H) @ np.abs(W).T + np.abs(c) + 1e-300))  # tol: floor only
            H = np.maximum(Z, 0.0)
        return out

    def key(self, X: np.ndarray) -> np.ndarray:
        """Cell labels (sign patterns of every known pre-activation), one row per point."""
        return np.hstack([Z > 0 for Z, _ in self.pre(X)])

    def on_known(self, x: np.ndarray, rtol: float = ON_KNOWN_RTOL) -> bool:
        return any(bool(np.any(np.abs(Z[0]) <= rtol * S[0])) for Z, S in self.pre(x[None]))

    def jac(self, x: np.ndarray) -> np.ndarray:
        """``J_phi(x)``: (n + dim g + 1) x d, the derivative of ``phi`` in the cell of ``x``."""
        d = x.shape[0]
        A, a = np.eye(d), np.zeros(d)
        for W, c in self.layers:
            ZA, Za = W @ A, W @ a + c
            on = (ZA @ x + Za) > 0
            A, a = ZA * on[:, None], Za * on
        ZA = self.U @ A
        on = (ZA @ x + self.U @ a + self.b) > 0
        return np.vstack([ZA * on[:, None], A, np.zeros((1, d))])

    def pre_jac(self, x: np.ndarray) -> np.ndarray:
        """The gradients in ``x`` of every known pre-activation (rows, in :meth:`key` order)
        in the cell of ``x``."""
        d = x.shape[0]
        A, a = np.eye(d), np.zeros(d)
        out = []
        for W, c in [*self.layers, (self.U, self.b)]:
            ZA, Za = W @ A, W @ a + c
            out.append(ZA)
            on = (ZA @ x + Za) > 0
            A, a = ZA * on[:, None], Za * on
        return np.vstack(out)

    def next_boundary(self, x: np.ndarray, v: np.ndarray, tmax: float) -> float | None:
        """The first ``t`` in ``(0, tmax]`` where the cell changes along ``x + t v``: inside
        the cell of ``x`` every known pre-activation is affine, so it is where the first of
        them reaches 0 (exact, no queries)."""
        G = self.pre_jac(x)
        z = np.concatenate([Z[0] for Z, _ in self.pre(x[None])])
        rate = G @ v
        with np.errstate(divide="ignore", invalid="ignore"):
            t = -z / rate
        ok = (t > 0) & np.isfinite(t) & (np.abs(rate) > 0)
        if not ok.any():
            return None
        t_hit = float(t[ok].min())
        return t_hit if t_hit <= tmax else None


def _orth_rows(A: np.ndarray) -> np.ndarray | None:
    """An orthonormal basis (columns) of the span of the rows of ``A``; None when they span
    the whole space (nothing to save) or there are none.

    Example:
        >>> _orth_rows(np.array([[2.0, 0.0, 0.0]])).ravel().tolist()
        [1.0, 0.0, 0.0]
    """
    d = A.shape[1]
    if A.shape[0] == 0 or A.shape[0] >= d:
        return None
    _, s, Vt = np.linalg.svd(A, full_matrices=False)
    k = int(np.sum(s > ROUNDOFF * s[0] * d))
    if k >= d or k == 0:
        return None
    Q = Vt[:k].T
    # the sign of a basis vector does not matter; the first is kept positive for doctests
    return Q * np.where(Q[np.argmax(np.abs(Q), axis=0), np.arange(k)] < 0, -1.0, 1.0)


def _dead_inputs(known: _Known, P: np.ndarray) -> list[int]:
    """Inputs ``g_j`` of layer ``k-1`` that are 0 at every point of ``P`` (a neuron of layer
    ``k-2`` inactive there): their columns of ``phi`` and of its Jacobian vanish, so each
    adds one null direction to a neuron's equations unless it is held out.  (For layer 2,
    ``g = x``: none.)"""
    if not known.layers:
        return []
    G = known.g(np.atleast_2d(P))
    return [int(j) for j in np.nonzero(~(G > 0).any(axis=0))[0]]


def _columns(known: _Known, P: np.ndarray) -> tuple[list[int], list[int], np.ndarray]:
    """For the points ``P`` of one surface: the unidentified ``V`` coordinates (neurons of
    layer ``k-1`` that never switch there), the dead inputs, and the ``theta`` coordinates
    the points can fix."""
    P = np.atleast_2d(P)
    Z = known.g(P) @ known.U.T + known.b
    unknown = [int(i) for i in np.nonzero(~((Z > 0).any(axis=0) & (Z < 0).any(axis=0)))[0]]
    dead = _dead_inputs(known, P)
    n_prev = known.U.shape[0]
    N = n_prev + known.g(P[:1]).shape[1] + 1
    keep = np.setdiff1d(np.arange(N), [*unknown, *(n_prev + j for j in dead)])
    return unknown, dead, keep


# ---------------------------------------------------------------- equations
def _equations(known: _Known, pts: list[np.ndarray], normals: list[np.ndarray], scale: float) -> np.ndarray:
    rows = []
    for x, n in zip(pts, normals, strict=True):
        J = known.jac(x)  # (N, d)
        P = np.eye(x.shape[0]) - np.outer(n, n)
        rows.append(scale * (P @ J.T))
        rows.append(known.phi(x[None]))
    return np.vstack(rows)


def _null(E: np.ndarray) -> tuple[np.ndarray, int, float]:
    """The null vector of ``E`` (unit), the dimension of its numerical null space, and the
    relative size of the smallest singular value."""
    colscale = np.abs(E).max(axis=0) + 1.0
    # Thin SVD when there are more equations than unknowns (the full one would build a
    # rows x rows factor); the full one only for a wide system, where Vt's last rows
    # are the null space.
    _, s, Vt = np.linalg.svd(E / colscale, full_matrices=E.shape[0] < E.shape[1])
    N = E.shape[1]
    s_full = np.concatenate([s, np.zeros(max(0, N - s.shape[0]))])
    smax = float(s_full[0]) if s_full.size else 0.0
    nullity = int(np.sum(s_full <= NULL_RTOL * smax))
    th = Vt[-1] / colscale
    return th / np.linalg.norm(th), nullity, float(s_full[-1] / max(smax, 1e-300))  # tol: floor only


def _rel_values(F: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Per point (row of ``F = phi``), the value equation's residual relative to the size of
    its terms: ``|F theta| / (|F| |theta|)`` (0 on the row's surface, O(1) off it)."""
    return np.abs(F @ theta) / (np.abs(F) @ np.abs(theta) + 1e-300)  # tol: floor only


def _refit(known: _Known, pts: list[np.ndarray], theta: np.ndarray, unknown: list[int]) -> np.ndarray:
    """Least squares on the value equations alone (exact critical points), near ``theta``
    (the unidentified coordinates stay 0)."""
    keep = np.setdiff1d(np.arange(theta.shape[0]), unknown)
    F = known.phi(np.asarray(pts))[:, keep]
    r0 = _rel_values(F, theta[keep])
    F = F[r0 <= VALUE_RTOL]  # points of other surfaces out
    th = theta
    for _ in range(3):
        colscale = np.abs(F).max(axis=0) + 1.0
        _, s, Vt = np.linalg.svd(F / colscale, full_matrices=False)
        if F.shape[0] < F.shape[1] + 2 or s.shape[0] < F.shape[1] or s[-2] <= 1e-8 * s[0]:  # tol: general position
            break
        th = np.zeros_like(theta)
        th[keep] = Vt[-1] / colscale
        th /= np.linalg.norm(th)
        if th @ theta < 0:
            th = -th
        r = _rel_values(F, th[keep])
        good = r <= max(1e-3 * VALUE_RTOL, 10.0 * np.median(r))
        if good.all():
            break
        F = F[good]  # a stray point (another neuron's kink close by): fit again without it
    return th if np.linalg.norm(th - theta) < 1e-4 else theta  # tol: agrees with the gradient fit


def _value_residual(known: _Known, pts: list[np.ndarray], theta: np.ndarray) -> float:
    """The largest relative value residual ``|phi . theta| / (|phi| . |theta|)`` over ``pts``."""
    return float(_rel_values(known.phi(np.asarray(pts)), theta).max())


def _refit_clean(known: _Known, pts: list[np.ndarray], extra: list[np.ndarray], theta: np.ndarray,
                 unknown: list[int]) -> np.ndarray:
    """:func:`_refit` over the traced and the extra points; when that leaves the traced
    points (exact kinks) off the row by more than rounding (a stray extra point pulled the
    fit, seen once at 2e-6 relative on 80-40-20-1 seed 2), also the refit over the traced
    points alone, keeping whichever fits them better.  No queries."""
    th = _refit(known, pts + extra, theta, unknown)
    if not extra:
        return th
    r = _value_residual(known, pts, th)
    if r <= CLEAN_RTOL:
        return th
    th2 = _refit(known, pts, theta, unknown)
    return th2 if _value_residual(known, pts, th2) < r else th


def _solve(known: _Known, pts: list[np.ndarray], nrm: list[np.ndarray],
           eq_scale: float) -> tuple[np.ndarray, list[int], list[int]] | None:
    """``theta`` from the traced points, the coordinates of ``V`` left unidentified
    (layer ``k-1`` neurons that never switch on the traced surface: set to 0), and the dead
    inputs (:func:`_dead_inputs`: their ``M`` coordinates set to 0).  None when
    the equations have no null vector (a deeper neuron's surface) or too few of them to
    tell (fewer than the unknowns plus a margin), or a family of them."""
    d = pts[0].shape[0]

    def fit(P, Nn):
        unknown, dead, keep = _columns(known, np.asarray(P))
        E = _equations(known, P, Nn, eq_scale)
        th, nullity, smin = _null(E[:, keep])
        F = known.phi(np.asarray(P))[:, keep]
        r = _rel_values(F, th)
        return th, nullity, smin, r, unknown, keep, dead

    th, nullity, smin, r, unknown, keep, dead = fit(pts, nrm)
    deadline = EXTRACTION_DEADLINE.get()
    for _ in range(len(pts) // 4):
        if nullity == 1 and smin <= NULL_RTOL and r.max() <= VALUE_RTOL:
            break
        if deadline is not None and deadline.expired():
            break  # each refit is an SVD of every equation (seconds on wide layers)
        # A point of another surface (taken for the continuation) spoils the system: drop
        # the point whose value equation the current null vector fits worst, while that helps.
        i = int(np.argmax(r))
        pts2, nrm2 = pts[:i] + pts[i + 1:], nrm[:i] + nrm[i + 1:]
        got = fit(pts2, nrm2)
        if got[2] >= 0.5 * smin and got[3].max() >= 0.5 * r.max():
            break
        pts[:], nrm[:] = pts2, nrm2
        th, nullity, smin, r, unknown, keep, dead = got
    if len(pts) * d < keep.shape[0] + d:
        return None  # too few equations to tell a neuron of this layer from a deeper one
    if not (nullity == 1 and smin <= NULL_RTOL and r.max() <= VALUE_RTOL):
        return None
    theta = np.zeros(known.U.shape[0] + known.g(pts[0][None]).shape[1] + 1)
    theta[keep] = th
    return theta, unknown, dead


# ---------------------------------------------------------------- tracing
def _kink_normal(probe: _Probe, x0: np.ndarray, r: np.ndarray, ts: np.ndarray, j: int,
                 lo: float, hi: float, basis=None) -> np.ndarray | None:
    """The normal of the kink ``x0 + ts[j] r`` from the gradient jump across it (along
    ``basis``'s subspace when given, :meth:`_Known.basis`); None when not rank one."""
    tb = [lo, *ts.tolist(), hi]
    est = _jump_normal(probe, x0, r, float(ts[j]), tb[j], tb[j + 2], basis)
    return None if est is None else est[0]


def _cell_interval(known: _Known, y: np.ndarray, w: np.ndarray, radius: float) -> tuple[float, float]:
    hi = known.next_boundary(y, w, radius)
    lo = known.next_boundary(y, -w, radius)
    return (-(lo if lo is not None else radius), hi if hi is not None else radius)


def _crossed(known: _Known, x: np.ndarray, v: np.ndarray) -> tuple[int, np.ndarray] | None:
    """The neuron of layer ``k-1`` whose hyperplane ``x + t v`` meets first (its index and
    the gradient of its pre-activation in the cell), or None when that first boundary is an
    earlier layer's, or two boundaries are met at once."""
    G = known.pre_jac(x)
    z = np.concatenate([Z[0] for Z, _ in known.pre(x[None])])
    rate = G @ v
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(np.abs(rate) > 0, -z / rate, np.inf)
    t[~(t > 0)] = np.inf
    order = np.argsort(t)
    if not np.isfinite(t[order[0]]) or (t.shape[0] > 1 and t[order[1]] <= (1 + TIE_RTOL) * t[order[0]]):
        return None
    i = int(order[0])
    first_u = G.shape[0] - known.U.shape[0]
    return (i - first_u, G[i]) if i >= first_u else None


def _continued_normal(n: np.ndarray, gl: np.ndarray, xc: np.ndarray, xp: np.ndarray) -> np.ndarray | None:
    """The normal of the surface past the hyperplane of neuron ``l`` of layer ``k-1``
    (gradient ``gl``), crossed at ``xc``, through the critical point ``xp`` found beyond it.
    Only ``V_ql relu(z_l)`` changes there, so the normal is ``n + beta gl``, and the new
    hyperplane passes through ``xc``: one unknown, fixed by ``xp`` (no gradient queries)."""
    delta = xp - xc
    den = float(gl @ delta)
    if abs(den) <= CONTINUE_RTOL * np.linalg.norm(gl) * np.linalg.norm(delta):
        return None  # xp on l's hyperplane through xc: does not fix beta
    m = n - (float(n @ delta) / den) * gl
    nm = float(np.linalg.norm(m))
    return None if nm == 0 else m / nm


def _confirm_plane(probe: _Probe, known: _Known, xp: np.ndarray, m: np.ndarray, rng: np.random.Generator,
                   radius: float, scale: float) -> str:
    """Whether the oracle has a kink on the hyperplane ``(xp, m)`` at a second point of the
    same cell (five queries): ``"exact"`` when it lies on it to ``PROPAGATED_RTOL``,
    ``"near"`` when a kink is close (the same surface, but the normal carried from step to
    step has drifted: measure it), ``"no"`` otherwise (another surface's kink)."""
    w = rng.normal(size=xp.shape[0])
    w -= (w @ m) * m
    w /= np.linalg.norm(w) + 1e-300  # tol: floor only
    lo, hi = _cell_interval(known, xp, w, radius)
    s = 0.3 * (hi if hi >= -lo else lo)
    xq = xp + s * w
    lo2, hi2 = _cell_interval(known, xq, m, radius)
    rho = min(1e-3 * scale, -lo2 / 2.5, hi2 / 2.5)
    if rho <= 0:
        return "no"
    t = probe.search(xq, m).single(rho)
    if t is None:
        return "no"
    return "exact" if abs(t) <= PROPAGATED_RTOL * (abs(s) + scale) else "near"


def _step(probe: _Probe, known: _Known, x: np.ndarray, n: np.ndarray, rng: np.random.Generator,
          radius: float, scale: float, toward: np.ndarray | None = None,
          jitter: float = 0.2,
          fracs: tuple[float, ...] = STEP_FRACS) -> tuple[np.ndarray, np.ndarray] | None:
    """From ``x`` on the surface (normal ``n``), a critical point of the same surface in the
    next cell along a random in-plane direction (or about ``toward``, with a random part of
    relative size ``jitter``), with its normal; None if not found."""
    v = rng.normal(size=x.shape[0])
    if toward is not None:
        v = jitter * v / np.sqrt(x.shape[0]) + toward / np.linalg.norm(toward)
    elif np.linalg.norm(x) > radius:  # stay near the explored region
        v = v - 2.0 * x / np.linalg.norm(x) * np.sqrt(x.shape[0])
    v -= (v @ n) * n
    nv = np.linalg.norm(v)
    if nv == 0:
        return None
    v /= nv
    t1 = known.next_boundary(x, v, radius)
    if t1 is None:
        return None
    xc = x + t1 * v
    # Past a hyperplane of layer k-1 the new normal is known up to one number (no gradient
    # queries, :func:`_continued_normal`); past an earlier layer's, it is measured.
    crossed = _crossed(known, x, v) if CHEAP_CONTINUATION and known.cheap else None
    t2 = known.next_boundary(xc + 1e-9 * radius * v, v, radius)  # tol: just past the boundary
    t2 = radius if t2 is None else t2
    for frac in fracs:
        y = xc + frac * t2 * v
        lo, hi = _cell_interval(known, y, n, radius)
        lo, hi = 0.999 * lo, 0.999 * hi
        if hi - lo <= ROUNDOFF * scale:
            continue
        ls = probe.search(y, n)
        # Often the surface is the only kink on this segment of the cell: five queries
        # (:meth:`LineSearch.single` over most of it) find it; else the full search.
        rho0 = 0.4 * min(-lo, hi)
        t0 = ls.single(rho0) if SINGLE_FIRST and known.cheap and rho0 > 0 else None
        tries = [] if t0 is None else [(np.array([t0]), -2.0 * rho0, 2.0 * rho0)]
        tries.append((None, lo, hi))
        for ts, a, b in tries:
            if ts is None:
                ts = ls.kinks(lo, hi)
            got = _continuation(probe, known, y, n, ts, a, b, xc, crossed, rng, radius, scale)
            if got is not None:
                return got
    return None


def _continuation(probe: _Probe, known: _Known, y: np.ndarray, n: np.ndarray, ts: np.ndarray,
                  lo: float, hi: float, xc: np.ndarray, crossed, rng: np.random.Generator,
                  radius: float, scale: float) -> tuple[np.ndarray, np.ndarray] | None:
    """Of the kinks ``y + t n`` (``t`` in ``ts``, nearest first; linear pieces between them
    and ``lo``, ``hi``), the first that continues the surface crossed at ``xc``, with its
    normal; None if none does."""
    for j in np.argsort(np.abs(ts)):
        xp = y + ts[j] * n
        if known.on_known(xp):
            continue
        if crossed is not None:
            m = _continued_normal(n, crossed[1], xc, xp)
            got = "no" if m is None else _confirm_plane(probe, known, xp, m, rng, radius, scale)
            if got == "exact":
                return xp, m
            if got == "no" and m is not None:
                continue
        m = _kink_normal(probe, y, n, ts, int(j), lo, hi, known.basis)
        if m is None:
            continue
        if abs(m @ (xc - xp)) <= CONTINUE_RTOL * (np.linalg.norm(xc - xp) + scale):
            return xp, m
    return None


def _trace(probe: _Probe, known: _Known, x0: np.ndarray, n0: np.ndarray, rng: np.random.Generator,
           radius: float, scale: float, max_points: int, eq_scale: float):
    pts, nrm = [x0], [n0]
    keys = {known.key(x0[None])[0].tobytes()}
    x, n = x0, n0
    fails = 0
    N = known.U.shape[0] + known.g(x0[None]).shape[1] + 1
    while len(pts) < max_points and fails < 12:
        got = _step(probe, known, x, n, rng, radius, scale)
        if got is None:
            fails += 1
            # restart from a random traced point: a dead end is not the end of the surface
            i = int(rng.integers(len(pts)))
            x, n = pts[i], nrm[i]
            continue
        x, n = got
        if min(np.linalg.norm(x - p) for p in pts) <= 1e-9 * (scale + np.linalg.norm(x)):  # tol: seen
            fails += 1
            continue
        k = known.key(x[None])[0].tobytes()
        if k not in keys:
            keys.add(k)
        pts.append(x)
        nrm.append(n)
        if len(pts) >= 4 and len(pts) % 4 == 0 and len(keys) * (x0.shape[0]) >= N + x0.shape[0]:
            unknown, _, keep = _columns(known, np.asarray(pts))
            if not unknown:
                _, nullity, _ = _null(_equations(known, pts, nrm, eq_scale)[:, keep])
                if nullity <= 1:
                    break
    _reach(probe, known, pts, nrm, keys, rng, radius, scale, max_points)
    return pts, nrm, len(keys)


def _reach(probe: _Probe, known: _Known, pts, nrm, keys: set, rng: np.random.Generator,
           radius: float, scale: float, max_points: int) -> None:
    """Walk the surface toward the hyperplanes of layer ``k-1`` it was never seen to cross
    (their weights in this neuron are unknown until it does)."""
    budget = REACH_BUDGET * max_points
    # layer 2 as the last hidden layer: past REACH_BUDGET_CHEAP x the point budget, walk
    # only toward hyperplanes never crossed (a weight not seen at all is left to the output
    # fit, which was measured to get one wrong; one seen at 1-2 points is refitted well)
    late = (REACH_BUDGET - REACH_BUDGET_CHEAP) * max_points if known.narrow else -1

    def need() -> int:
        return 1 if budget <= late else REACH_MIN

    for rnd in range(6):
        Z = known.g(np.asarray(pts)) @ known.U.T + known.b
        miss = np.nonzero(np.minimum((Z > 0).sum(axis=0), (Z < 0).sum(axis=0)) < need())[0]
        if miss.size == 0 or budget <= 0:
            return
        for lidx in rng.permutation(miss):
            Z = known.g(np.asarray(pts)) @ known.U.T + known.b
            if min((Z[:, lidx] > 0).sum(), (Z[:, lidx] < 0).sum()) >= need():
                continue
            # start near the hyperplane (a random one of the nearest points: a walk from
            # the nearest may be stuck where the surface turns away)
            near = np.argsort(np.abs(Z[:, lidx]))[:4]
            i = int(near[0] if rnd == 0 else rng.choice(near))
            x, n = pts[i], nrm[i]
            block: list[np.ndarray] = []  # boundaries the walk bounced on: slide along them
            last = None
            fails = 0
            for _ in range(REACH_STEPS):
                if budget <= 0:
                    return
                # the gradient of z_l in x's cell, pointing toward z_l = 0, in the local plane
                J = known.U[lidx] @ known.jac(x)[known.U.shape[0]:-1]
                zl = float(known.g(x[None])[0] @ known.U[lidx] + known.b[lidx])
                t = -np.sign(zl) * J
                Q, _ = np.linalg.qr(np.array([n, *block[-(x.shape[0] - 2):]]).T)
                t = t - Q @ (Q.T @ t)
                stuck = np.linalg.norm(t) <= 1e-6 * np.linalg.norm(J)  # tol: no way toward it here
                got = _step(probe, known, x, n, rng, 10.0 * radius, scale, toward=None if stuck else t,
                            jitter=0.2 * 2.0 ** fails, fracs=REACH_FRACS if known.narrow else STEP_FRACS)
                budget -= 1
                if got is None:
                    # the continuation was not found past that boundary: try again off the
                    # straight way (more random), a few times
                    fails += 1
                    if fails > REACH_RETRIES:
                        break
                    continue
                fails = 0
                k_old = known.key(x[None])[0]
                G = known.pre_jac(x)
                x, n = got
                changed = np.nonzero(known.key(x[None])[0] != k_old)[0]
                if changed.size == 1:
                    if last is not None and int(changed[0]) == last:
                        block.append(G[last] / (np.linalg.norm(G[last]) + 1e-300))  # tol: floor only
                    last = int(changed[0])
                pts.append(x)
                nrm.append(n)
                keys.add(known.key(x[None])[0].tobytes())
                if np.sign(float(known.g(x[None])[0] @ known.U[lidx] + known.b[lidx])) != np.sign(zl):
                    break


def _locate_extra(probe: _Probe, known: _Known, pts, nrm, rng, scale: float,
                  few: bool = False) -> list[np.ndarray]:
    """More exact critical points near the traced ones (on each local hyperplane), for the
    least-squares refit: two per traced point, and enough to span the local hyperplane
    where a neuron of layer ``k-1`` is on its rarer side (few traced points show its
    weight: a weight seen at one point only is fitted from a handful of equations)."""
    from .layer import Neuron, _locate_batch

    d = pts[0].shape[0]
    Z = known.g(np.asarray(pts)) @ known.U.T + known.b
    pos = (Z > 0).sum(axis=0)
    rare = np.minimum(pos, Z.shape[0] - pos) < d  # sides seen at fewer than d points
    # ``few``: layer 2 as the last hidden layer (inputs x, no layer built on its rows)
    # needs few; otherwise the whole local plane at rare points (fewer there broke
    # 40-20-10-10-1's layer 3).
    per, rare_k = (EXTRA_PER_POINT, EXTRA_RARE) if few else (2, None)
    k_rare = d + 2 if rare_k is None else min(d + 2, rare_k)
    out = []
    for i, (x, n) in enumerate(zip(pts, nrm, strict=True)):
        side = Z[i] > 0
        k = per
        if np.any(rare & np.where(side, pos < Z.shape[0] - pos, pos > Z.shape[0] - pos)):
            k = k_rare  # this point is on a rare side of some neuron
        # stay inside the cell: small in-plane offsets
        Q = []
        for _ in range(k):
            v = rng.normal(size=x.shape[0])
            v -= (v @ n) * n
            v /= np.linalg.norm(v)
            t = known.next_boundary(x, v, scale)
            s = 0.3 * (t if t is not None else scale)
            Q.append(x + s * v)
        if not Q:
            continue
        nr = Neuron(n, float(-(n @ x)), [x])
        found = _locate_batch(probe, nr, np.asarray(Q), 1e-3 * scale)
        for p in found:
            if np.all(np.isfinite(p)) and not known.on_known(p) and \
                    (known.key(p[None])[0] == known.key(x[None])[0]).all():
                out.append(p)
    return out



# ---------------------------------------------------------------- completion
def _unseen_feature(known: _Known, X: np.ndarray, lidx: int, side: float) -> np.ndarray:
    """``relu(-side z_l)``: the part of neuron ``l`` of layer ``k-1`` the traced surface never
    saw (``side``: the sign of ``z_l`` at every traced point)."""
    z = known.g(X) @ known.U[lidx] + known.b[lidx]
    return np.maximum(-side * z, 0.0)


def _surface_is_global(probe: _Probe, known: _Known, theta: np.ndarray, unknown: list[int],
                       rng: np.random.Generator, radius: float, scale: float,
                       others: np.ndarray | None = None, pattern: np.ndarray | None = None,
                       hits_needed: int | None = None, dead: list[int] | None = None) -> bool:
    """Whether the oracle has a kink wherever the row ``theta`` predicts its surface
    crosses random lines (the crossing computed from the known layers alone, no queries;
    each checked by locating one kink there, five queries).  A neuron of a deeper layer,
    traced inside one activation pattern of the layer in between, also gives a row with a
    null vector there; outside that pattern its true surface bends away, so its predicted
    crossings carry no kink.  Points where an unidentified weight could matter are left
    out, and so are points where a dead input (``dead``) is not 0.  With ``others`` (rows of this layer) and ``pattern`` (their signs along the traced
    surface), only crossings where that pattern does not hold count.  Undecided (no
    crossing found): True."""
    d = probe.space.dim
    hits = misses = 0
    for _ in range(GLOBAL_LINES):
        x0 = 0.5 * scale * rng.normal(size=d) / np.sqrt(d)
        r = rng.normal(size=d)
        r /= np.linalg.norm(r)
        t = np.linspace(-radius, radius, GLOBAL_GRID + 1)
        X = x0 + t[:, None] * r
        Phi = known.phi(X)
        p = Phi @ theta
        ok = np.ones(t.shape[0], bool)
        if unknown:
            Z = known.g(X) @ known.U[unknown].T + known.b[unknown]
            ok = np.all(np.sign(Z) == np.sign(Z[np.argmin(np.abs(p))]), axis=1)
        if dead:
            ok &= ~(known.g(X)[:, dead] > 0).any(axis=1)
        if others is not None:
            ok &= ((Phi @ others.T > 0) != pattern).any(axis=1)
        flip = np.nonzero((np.sign(p[:-1]) != np.sign(p[1:])) & ok[:-1] & ok[1:])[0]
        if flip.size == 0:
            continue
        i = int(rng.choice(flip))
        ta, tb = float(t[i]), float(t[i + 1])
        for _ in range(60):  # bisection on the known layers: no queries
            tm = 0.5 * (ta + tb)
            if np.sign(known.phi((x0 + tm * r)[None])[0] @ theta) == np.sign(p[i]):
                ta = tm
            else:
                tb = tm
        tc = 0.5 * (ta + tb)
        rho = 0.25 * (t[1] - t[0])
        found = probe.search(x0 + tc * r, r).single(rho)
        if found is not None and abs(found) <= GLOBAL_RTOL * (1.0 + radius):
            hits += 1
            if hits >= (GLOBAL_HITS if hits_needed is None else hits_needed):
                return True
        else:
            misses += 1
            if misses >= GLOBAL_MISSES:
                return False
    return True


def _combinations(known: _Known, neurons: list[TracedNeuron]) -> list[int]:
    """Rows that are a deeper neuron seen inside one activation pattern of this layer:
    there ``p = sum_{q in A} a_q p_q + c`` (the neurons ``A`` active in the pattern), so
    its row is a combination of rows of this layer plus a constant, and along its traced
    surface none of the rows it combines changes sign (the pattern holds there).  A true
    row is not such a combination, or its surface crosses theirs."""
    K = len(neurons)
    if K < 2:
        return []
    out = []
    Th = np.array([t.theta for t in neurons])
    ec = np.zeros(Th.shape[1])
    ec[-1] = 1.0
    mask = np.ones(Th.shape[1], bool)  # weights every row knows (dead inputs' M out too)
    for t in neurons:
        mask[t.held(known.U.shape[0])] = False
    if mask.sum() < K + 3:
        return []  # too few shared coordinates to tell a combination from chance
    for i, t in enumerate(neurons):
        others = [j for j in range(K) if j != i]
        B = np.vstack([Th[others], ec])[:, mask].T
        a, *_ = np.linalg.lstsq(B, Th[i, mask], rcond=None)
        if np.linalg.norm(B @ a - Th[i, mask]) > COMBO_RTOL * np.linalg.norm(Th[i, mask]):
            continue
        used = [others[j] for j in np.nonzero(np.abs(a[:-1]) > COMBO_RTOL)[0]]
        if not used:
            continue
        P = known.phi(np.asarray(t.points)) @ Th[used].T
        if np.all((P > 0).all(axis=0) | (P < 0).all(axis=0)):
            out.append(i)
    return out


def _complete(probe: _Probe, known: _Known, tn: TracedNeuron, rng: np.random.Generator,
              scale: float) -> int:
    """Identify weights of ``tn`` left unknown because previous-layer neuron ``l`` kept one
    side all along the traced surface (it never crossed ``l``'s hyperplane where the walk
    went).  Past that hyperplane the pre-activation is ``phi . theta + a relu(-s z_l)``
    (``s``: the side seen; a neuron that stayed active had its affine part folded into
    ``M`` and ``c``): one unknown ``a``.  Lines along the local normal, through points of
    the local plane continued just past ``l``'s hyperplane, cross the surface there; every
    kink on them gives a candidate ``a = -(phi . theta) / relu(-s z_l)``, and the surface's
    own kinks agree on one value (other surfaces give scattered ones).  Two agreeing
    candidates from different lines fix ``a``; the theta is updated in place (then refitted
    by the caller).  Returns the number of weights identified."""
    n_prev = known.U.shape[0]
    done = 0
    for lidx in list(tn.unknown):
        P = np.asarray(tn.points)
        GP = known.g(P)  # the previous layer's inputs at the traced points, once
        z = GP @ known.U[lidx] + known.b[lidx]
        side = 1.0 if np.median(z) > 0 else -1.0
        others = [j for j in tn.unknown if j != lidx]
        sides = {j: (1.0 if np.median(GP @ known.U[j] + known.b[j]) > 0 else -1.0) for j in others}
        cands: list[tuple[float, int, np.ndarray, float]] = []
        a = None
        order = np.argsort(np.abs(z))
        starts = list(order[:COMPLETE_STARTS]) + list(rng.choice(len(P), size=min(COMPLETE_STARTS, len(P)),
                                                                 replace=False))
        for line_id, i in enumerate(starts):
            x, n = P[i], tn.normals[i]
            J = known.U[lidx] @ known.jac(x)[n_prev:-1]
            v = -np.sign(z[i]) * (J - (J @ n) * n)
            if np.linalg.norm(v) <= ROUNDOFF * (np.linalg.norm(J) + 1.0):
                continue
            v /= np.linalg.norm(v)
            rate = abs(float(J @ v))
            if rate == 0.0:
                continue
            tstar = abs(z[i]) / rate
            f = (1.1, 1.5, 2.5, 5.0)[line_id % 4]
            y = x + f * tstar * v
            R = 0.5 * f * tstar + 0.05 * scale
            ts = probe.search(y, n).kinks(-R, R)
            for t in ts:
                xp = y + t * n
                if known.on_known(xp):
                    continue
                fl = float(_unseen_feature(known, xp[None], lidx, side)[0])
                if fl <= 0.0:
                    continue
                if any(_unseen_feature(known, xp[None], j, sides[j])[0] > 0 for j in others):
                    continue  # two unknowns at once: not one equation
                if tn.dead and (known.g(xp[None])[0, tn.dead] > 0).any():
                    continue  # an input whose M coordinate is unknown is on there
                phi = known.phi(xp[None])[0]
                th = tn.theta.copy()
                th[tn.unknown] = 0.0
                val = float(phi @ th)
                size = float(np.abs(phi) @ np.abs(th))
                cands.append((-val / fl, line_id, xp, size / fl))
            a = _agree(cands)
            if a is not None:
                break
        if a is None:
            continue
        val, pts = a
        th = tn.theta.copy()
        th[lidx] = val
        if side > 0:  # a relu(-z) = a relu(z) - a z: the affine part leaves M and c
            th[n_prev:-1] -= val * known.U[lidx]
            th[-1] -= val * known.b[lidx]
        tn.theta = th
        tn.unknown.remove(lidx)
        for xp in pts:
            nrm = known.jac(xp).T @ th
            tn.points.append(xp)
            tn.normals.append(nrm / (np.linalg.norm(nrm) + 1e-300))  # tol: floor only
        done += 1
    return done


def _agree(cands) -> tuple[float, list[np.ndarray]] | None:
    """A value two candidates from different lines agree on (relative ``COMPLETE_RTOL`` of
    the size of their terms), with the points that give it; None if none."""
    for i in range(len(cands)):
        for j in range(i):
            ai, li, xi, si = cands[i]
            aj, lj, xj, sj = cands[j]
            if li == lj:
                continue
            if abs(ai - aj) <= COMPLETE_RTOL * (max(si, sj) + abs(ai)):
                pts = [c[2] for c in cands if abs(c[0] - ai) <= COMPLETE_RTOL * (c[3] + abs(ai))]
                return 0.5 * (ai + aj), pts
    return None


def trace_layer(
    o: QueryOracle,
    layers: list[tuple[np.ndarray, np.ndarray]],
    U: np.ndarray,
    b: np.ndarray,
    d: int,
    rng: np.random.Generator,
    *,
    width: int | None = None,
    scale: float = 1.0,
    patience: int = 3,
    atol: float = 0.0,
    max_lines: int = 200,
    refine: bool = True,
    last: bool = False,
) -> TracedLayer:
    """Layer ``k`` given the oriented layers ``1..k-2`` (``layers``) and layer ``k-1`` as
    ``z = U g + b`` with unknown orientations (module docstring).  ``width``: stop when that
    many neurons are found; else until ``patience`` lines bring nothing new.  ``last``: the
    layer is the last hidden one, so the output is spanned by its neurons' features; inputs
    where it is not witness missing neurons, and lines from them find their surfaces.

    Example (the rows come back up to scale and sign; here the true first layer is given):
        >>> from relulab import Network
        >>> rng = np.random.default_rng(4)
        >>> W1, b1 = rng.normal(size=(6, 4)) / 2, 0.5 * rng.normal(size=6)
        >>> W2, b2 = rng.normal(size=(3, 6)) / 6 ** 0.5, 0.5 * rng.normal(size=3)
        >>> net = Network([W1, W2, rng.normal(size=(1, 3))], [b1, b2, [0.0]])
        >>> tl = trace_layer(QueryOracle(net), [], W1, b1, 4, np.random.default_rng(4), width=3)
        >>> r = np.append(tl.W[0], tl.b[0]); t = np.append(W2, b2[:, None], axis=1)
        >>> c = t @ r / np.linalg.norm(t, axis=1) / np.linalg.norm(r)
        >>> bool(np.abs(np.abs(c).max() - 1.0) < 1e-12), bool(tl.flip.any())
        (True, False)
    """
    known = _Known(layers, U, b)
    # The query savings are used where measured safe: layer 2 as the last hidden layer
    # (two-hidden-layer networks).  In deeper networks they changed which surfaces the
    # walks met and 40-20-10-10-1 seed 0 lost layer-2 neurons (`different`).
    known.cheap = last and not layers
    n_prev = known.U.shape[0]
    space = Space.input(d, scale)
    m = o.output_dim or o(np.zeros((1, d))).shape[1]
    probe = _Probe(o, space, rng.normal(size=m), atol)
    radius = 3.0 * scale * np.sqrt(d)
    n_g = known.g(np.zeros((1, d))).shape[1]
    N = n_prev + n_g + 1
    max_points = 8 * (N // max(d - 1, 1) + 2) + 2 * n_prev
    eq_scale = scale
    neurons: list[TracedNeuron] = []
    bent: list[tuple[np.ndarray, np.ndarray]] = []
    count = {"seeds": 0, "rejected": 0, "not_global": 0}
    checked: set[int] = set()
    fakes: list[np.ndarray] = []
    notes: list[str] = []

    def take(x0: np.ndarray, r: np.ndarray, ts: np.ndarray, lo: float, hi: float) -> bool:
        """Trace every kink on the line ``x0 + t r`` that no known surface explains; True
        when a new neuron came out of it."""
        new = False
        for j in rng.permutation(len(ts)):
            x = x0 + ts[j] * r
            if known.on_known(x):
                continue
            phi = known.phi(x[None])[0]
            if any(abs(phi @ t.theta) <= SURFACE_RTOL * (np.abs(phi) @ np.abs(t.theta)) for t in neurons):
                continue
            if any(abs(nb @ (x - xb)) <= SURFACE_RTOL * (scale + np.linalg.norm(x - xb)) for xb, nb in bent):
                continue
            if any(abs(phi @ f) <= SURFACE_RTOL * (np.abs(phi) @ np.abs(f)) for f in fakes):
                continue  # on a surface already found not global
            n0 = _kink_normal(probe, x0, r, ts, int(j), lo, hi, known.basis)
            if n0 is None:
                continue
            count["seeds"] += 1
            pts, nrm, cells = _trace(probe, known, x, n0, rng, radius, scale, max_points, eq_scale)
            got = _solve(known, pts, nrm, eq_scale)
            if got is None:
                count["rejected"] += 1
                bent.extend(zip(pts, nrm, strict=True))
                continue
            theta, unknown, dead = got
            # (the last hidden layer has no deeper neuron: every kink is one of its own)
            if not last and not _surface_is_global(probe, known, theta, unknown, rng, radius, scale,
                                                   dead=dead):
                # a deeper neuron's surface seen inside one pattern of the layer in between
                # fits a row there, but has no kink where that row predicts one elsewhere
                count["rejected"] += 1
                count["not_global"] += 1
                fakes.append(theta)
                bent.extend(zip(pts, nrm, strict=True))
                continue
            if refine:
                extra = _locate_extra(probe, known, pts, nrm, rng, scale, few=known.cheap)
                theta = _refit_clean(known, pts, extra, theta, [*unknown, *(n_prev + j for j in dead)])
            tn = TracedNeuron(theta, pts, nrm, unknown, cells, dead)
            if tn.unknown and _complete(probe, known, tn, rng, scale) and refine:
                tn.theta = _refit_clean(known, tn.points, extra, tn.theta, tn.held(n_prev))
            twin = _same(neurons, tn, n_prev)
            if twin is not None:
                # the same neuron traced twice: keep the better identified trace
                if len(tn.unknown) < len(neurons[twin].unknown):
                    neurons[twin] = tn
                continue
            neurons.append(tn)
            new = True
            if known.narrow and ACTIVE_NORMALS and known.flip is None and tn.identified:
                # a complete row fixes the first layer's orientation (one subset of flips):
                # from now on normals are measured along the rows active beside each kink
                th = tn.theta[None]
                known.flip = _robust_flips(th[:, :n_prev], known.U, th[:, n_prev:-1],
                                           np.ones(1, bool), [], _known_m([tn], th.shape[1] - n_prev - 1))
            if width is not None and len(neurons) >= width:
                break
        return new

    def prune() -> None:
        # a row whose traced surface kept one sign of every other row may be a deeper
        # neuron seen inside one pattern: its surface must show kinks outside that pattern
        drop_local = []
        for i, t in enumerate(neurons):
            if last or i in checked or len(neurons) < 2:
                continue
            oth = np.array([u.theta for j, u in enumerate(neurons) if j != i])
            Pp = known.phi(np.asarray(t.points)) @ oth.T
            if not np.all((Pp > 0).all(axis=0) | (Pp < 0).all(axis=0)):
                continue
            # with a weight still unidentified as well, the trace never left one pattern of
            # this layer nor one side of some earlier neuron: nothing shows it is a row here
            if (t.unknown and len(neurons) >= 4) or not _surface_is_global(
                    probe, known, t.theta, t.unknown, rng, radius, scale, others=oth,
                    pattern=Pp[0] > 0, hits_needed=2, dead=t.dead):
                drop_local.append(i)
            else:
                checked.add(i)
        # with the previous layer's orientation fixed by most rows, a complete row whose
        # affine part is not explained by it is no row of this layer
        full = np.array([t.identified for t in neurons], bool)
        # (in the last hidden layer of a two-hidden-layer network nothing is dropped: one
        # complete row fixes the flips that fill the others' dead inputs; deeper, a last
        # layer's rows that most complete rows disagree with are dropped like any layer's
        # - measured: a mis-traced row there took the place of a true neuron, which the
        # witness hunt then finds)
        deep_last = last and len(layers) >= 1 and int(full.sum()) >= 4
        if full.sum() >= (1 if last else 4):
            Th = np.array([t.theta for t in neurons])
            V, M = Th[:, :n_prev], Th[:, n_prev:-1]
            km = _known_m(neurons, M.shape[1])
            fl = _robust_flips(V, known.U, M, full, [], km)
            if fl is not None:
                R = (M + V[:, fl] @ known.U[fl]) * km
                for i, t in enumerate(neurons):
                    r = R[i]
                    if t.unknown:  # an always-active neuron's weight sits in M: project it out
                        B = known.U[t.unknown].T * km[i][:, None]
                        r = r - B @ np.linalg.lstsq(B, r, rcond=None)[0]
                    if (not last or deep_last) and \
                            np.abs(r).max() > ROW_AFFINE_RTOL * np.abs(V[i]).max() and i not in drop_local:
                        drop_local.append(i)
                # a complete row's M is -sum_F V_l U_l: that fills it at its dead inputs too,
                # so the row is the pre-activation everywhere (not only where they are 0)
                for i, t in enumerate(neurons):
                    if t.dead and t.identified and i not in drop_local:
                        t.theta = t.theta.copy()
                        t.theta[n_prev + np.asarray(t.dead)] = -(V[i, fl] @ known.U[fl])[t.dead]
                        t.dead = []
        if drop_local:
            for i in drop_local:
                fakes.append(neurons[i].theta)
                count["not_global"] += 1
            neurons[:] = [t for i, t in enumerate(neurons) if i not in drop_local]
            checked.clear()
        drop = set() if last else set(_combinations(known, neurons))
        while drop:
            for i in drop:
                fakes.append(neurons[i].theta)
                count["not_global"] += 1
            neurons[:] = [t for i, t in enumerate(neurons) if i not in drop]
            checked.clear()  # indices moved
            drop = set(_combinations(known, neurons))

    lines = quiet = 0
    while lines < max_lines and quiet < (patience if width is None else 3 * patience):
        if width is not None and len(neurons) >= width:
            prune()
            if len(neurons) >= width:
                break
        lines += 1
        x0, r, ts = _random_line_kinks(probe, rng, d, scale, radius)
        quiet = 0 if take(x0, r, ts, -radius, radius) else quiet + 1
    prune()
    if count["not_global"]:
        notes.append(f"{count['not_global']} traced surface(s) of a deeper layer (seen inside one "
                     "activation pattern of this layer) rejected")
    if last:
        lines += _hunt(o, probe, known, neurons, take, rng, d, scale, atol, width, notes, prune)
    return _assemble(neurons, known, count["seeds"], count["rejected"], lines, notes)


def _features(known: _Known, neurons: list[TracedNeuron], X: np.ndarray) -> np.ndarray:
    """Features that span the output when ``neurons`` are all of the last hidden layer:
    ``relu(p_q)`` for each traced neuron and ``phi`` (a neuron stored the wrong way round
    differs by ``p_q``, affine in ``phi``)."""
    Phi = known.phi(X)
    if not neurons:
        return Phi
    S = Phi @ np.array([t.theta for t in neurons]).T
    return np.hstack([np.maximum(S, 0.0), Phi])


def _witnesses(o: QueryOracle, known: _Known, neurons: list[TracedNeuron], rng: np.random.Generator,
               d: int, scale: float, atol: float) -> tuple[np.ndarray, np.ndarray]:
    """Points where the output is *not* spanned by the features of the neurons found (a
    missing neuron of the last hidden layer is in its rarer state there), and points where
    it is.  Random inputs at several scales are fitted by trimmed least squares: on the
    region where every missing neuron keeps its usual state the fit is exact (to rounding),
    so the points it leaves out witness the missing ones."""
    k = max(HUNT_POINTS, 20 * (len(neurons) + known.phi(np.zeros((1, d))).shape[1]))
    X = scale * rng.normal(size=(k, d)) * rng.choice([0.5, 1.0, 2.0, 4.0, 8.0], size=(k, 1))
    # A neuron's feature is right only where each previous-layer neuron whose weight in it
    # is unknown is on the side it kept all along the traced surface, and where its dead
    # inputs are 0: other points out.  A row right on less than half the inputs is left
    # out of the features instead (its neuron then shows as a missing one, in its rarer
    # state: a neuron active almost everywhere is nearly affine in phi).
    Zx = known.g(X) @ known.U.T + known.b
    Gx = known.g(X)
    covered = np.ones(k, bool)
    used = []
    for t in neurons:
        cov = np.ones(k, bool)
        if t.unknown:
            side = (known.g(np.asarray(t.points[:1])) @ known.U.T + known.b)[0, t.unknown] > 0
            cov &= np.all((Zx[:, t.unknown] > 0) == side, axis=1)
        if t.dead:
            cov &= ~(Gx[:, t.dead] > 0).any(axis=1)
        if (covered & cov).mean() >= 0.5:
            covered &= cov
            used.append(t)
    neurons = used
    n_feat = _features(known, neurons, np.zeros((1, d))).shape[1]
    X = X[covered]
    k = X.shape[0]
    if k < 2 * n_feat + 10:
        return X[:0], X[:0]
    Y = o(X)
    F = _features(known, neurons, X)
    colscale = np.abs(F).max(axis=0) + 1.0
    F = F / colscale
    ysize = 1.0 + float(np.abs(Y).max())
    thr = HUNT_RTOL * ysize + 100.0 * atol
    keep = np.ones(k, bool)
    for _ in range(30):
        coef, *_ = np.linalg.lstsq(F[keep], Y[keep], rcond=None)
        res = np.abs(F @ coef - Y).max(axis=1)
        nxt = res <= max(thr, 10.0 * float(np.median(res[keep])))
        if nxt.sum() < n_feat + 10 or np.array_equal(nxt, keep):
            break
        keep = nxt
    bad = res > thr
    if bad.mean() > 0.5 or (~bad).sum() < n_feat + 10:
        return X[:0], X[:0]  # no exact fit on a majority: not the last layer, or too little found
    if not bad.any():
        return X[:0], X
    order = np.argsort(-res[bad])  # the largest misfits first: a missing neuron's O(1) term
    return X[bad][order], X[~bad]


def _hunt(o: QueryOracle, probe: _Probe, known: _Known, neurons: list[TracedNeuron], take,
          rng: np.random.Generator, d: int, scale: float, atol: float, width: int | None,
          notes: list[str], prune=None) -> int:
    """For the last hidden layer: search lines from witnesses of missing neurons
    (:func:`_witnesses`) toward points where the fit is exact; each such segment crosses a
    missing neuron's kink surface, which :func:`trace_layer` then traces.  Returns the
    lines searched."""
    lines = 0
    for _ in range(HUNT_ROUNDS):
        if prune is not None:
            prune()  # rows found in the last round: checked, their dead inputs filled
        if width is not None and len(neurons) >= width:
            break
        wit, good = _witnesses(o, known, neurons, rng, d, scale, atol)
        if wit.shape[0] == 0:
            if width is not None and len(neurons) < width and good.shape[0]:
                # A fit during tracing, not the final one: the final output fit (its
                # residual is in the result) is what says whether the network was recovered.
                notes.append(f"{width - len(neurons)} neuron(s) not identifiable: while tracing, the "
                             f"neurons found fitted the output without them on {good.shape[0]} random "
                             f"inputs (norms up to {np.linalg.norm(good, axis=1).max():.3g}), so they "
                             "seem never to switch there (dead or always active); the final output "
                             "fit decides")
            break
        new = False
        for w in wit[:HUNT_LINES]:
            u = good[int(rng.integers(good.shape[0]))]
            r = u - w
            L = float(np.linalg.norm(r))
            if L == 0:
                continue
            r /= L
            lines += 1
            ts = probe.search(w, r).kinks(0.0, L)
            if take(w, r, ts, 0.0, L):
                new = True
                break  # fresh features: look for witnesses again
        if not new:
            notes.append(f"{wit.shape[0]} witness point(s) of a missing neuron, but no new "
                         "surface traced from them")
            break
    return lines


def _same(neurons: list[TracedNeuron], tn: TracedNeuron, n_prev: int) -> int | None:
    """The index of a neuron with the same weights (on the coordinates both identified, and
    the bias; up to sign and scale) as ``tn``, or None."""
    for i, t in enumerate(neurons):
        ok = np.ones(t.theta.shape[0], bool)
        ok[t.unknown] = False
        ok[tn.unknown] = False
        ok[n_prev:] = False  # M (and c) absorb what is unidentified: compare V only
        a, b = t.theta[ok], tn.theta[ok]
        na, nb = np.linalg.norm(a), np.linalg.norm(b)
        if na == 0 or nb == 0:
            continue
        if 1.0 - abs(a @ b) / (na * nb) <= SURFACE_RTOL:
            return i
    return None


def _fill_active(t: TracedNeuron, q: int, V: np.ndarray, M: np.ndarray, c: np.ndarray,
                 known: _Known, flip: np.ndarray) -> None:
    """Weights of ``t`` from neurons of layer ``k-1`` that are *active* all along its traced
    surface (never switching there): on the surface ``V_ql relu(z_l)`` is affine and was
    folded into ``M_q`` (and ``c_q``); with the orientations known, what ``M_q`` holds beyond
    ``-sum_F V_qi U_i`` is exactly those terms.  Fills ``V[q]`` (and cleans ``M[q]``,
    ``c[q]``) in place, removes them from ``t.unknown``; neurons *inactive* all along stay
    unknown (the surface cannot show their weight)."""
    Z = known.g(np.asarray(t.points)) @ known.U.T + known.b
    known_rows = [i for i in np.nonzero(flip)[0] if i not in t.unknown]
    live = np.ones(M.shape[1], bool)
    live[t.dead] = False  # M at a dead input is unknown: those entries take no part
    R = (M[q] + V[q, known_rows] @ known.U[known_rows])[live]
    act = []  # (l, s_l): R = sum_l s_l V_ql U_l over the active ones
    for lidx in t.unknown:
        if (Z[:, lidx] > 0).all() and not flip[lidx]:
            act.append((lidx, 1.0))
        elif (Z[:, lidx] < 0).all() and flip[lidx]:
            act.append((lidx, -1.0))
    if not act:
        return
    B = np.array([s * known.U[lidx] for lidx, s in act]).T[live]
    v, *_ = np.linalg.lstsq(B, R, rcond=None)
    if np.abs(B @ v - R).max() > MATCH_RTOL * (np.abs(R).max() + np.abs(V[q]).max()):
        return  # not explained by the active neurons alone: leave them unknown
    for (lidx, s), val in zip(act, v, strict=True):
        V[q, lidx] = val
        if s > 0:  # folded as V_ql (U_l g + b_l): take it out of M and c
            M[q] -= val * known.U[lidx]
            c[q] -= val * known.b[lidx]
        t.unknown.remove(lidx)


def _known_m(neurons: list[TracedNeuron], n_g: int) -> np.ndarray:
    """Which entries of the rows' ``M`` the traces fixed (not those at dead inputs)."""
    K = np.ones((len(neurons), n_g), bool)
    for q, t in enumerate(neurons):
        K[q, t.dead] = False
    return K


def _flip_residuals(V: np.ndarray, U: np.ndarray, M: np.ndarray, rows: list[int], flip: np.ndarray,
                    known_m: np.ndarray | None) -> np.ndarray:
    """Per row, ``max |sum_i flip_i V_qi U_i + M_q|`` over its known entries, relative to the
    row's largest term (the measure :func:`subset_signs` accepts to ``SUBSET_RTOL``)."""
    R = np.abs(M[rows] + V[rows][:, flip] @ U[flip])
    if known_m is not None:
        R = R * known_m[rows]
    # the largest term |V_qi U_ij| of row q is max_i |V_qi| max_j |U_ij|
    terms = (np.abs(V[rows]) * np.abs(U).max(axis=1)).max(axis=1)
    scale = np.maximum(np.maximum(terms, np.abs(M[rows]).max(axis=1)), 1e-300)  # tol: floor only
    return R.max(axis=1) / scale


def _consensus_flips(V: np.ndarray, U: np.ndarray, M: np.ndarray, rows: list[int], need: int,
                     known_m: np.ndarray | None) -> tuple[np.ndarray, list[int]] | None:
    """Flips that most complete rows agree with: every row proposes the flips it fits alone
    (one row already fixes the flips of every neuron it weighs), each proposal is scored by
    the rows it fits, and the best-supported one is solved again on its supporters.  A
    badly traced row then cannot steer the choice of which rows to drop.  None when no
    proposal is fitted by ``need`` rows."""
    props: list[np.ndarray] = []
    for q in rows:
        f = subset_signs(V[[q]].T, U, M[[q]], mask=None if known_m is None else known_m[[q]])
        if f is not None and not any((f == g).all() for g in props):
            props.append(f)
    best: list[int] = []
    for f in props:
        ok = [q for q, r in zip(rows, _flip_residuals(V, U, M, rows, f, known_m), strict=True)
              if r <= SUBSET_RTOL]
        if len(ok) > len(best):
            best = ok
    if len(best) < need:
        return None
    flip = subset_signs(V[best].T, U, M[best], mask=None if known_m is None else known_m[best])
    return None if flip is None else (flip, best)


def _robust_flips(V: np.ndarray, U: np.ndarray, M: np.ndarray, full: np.ndarray,
                  notes: list[str], known_m: np.ndarray | None = None) -> np.ndarray | None:
    """:func:`subset_signs` over the complete rows; when no subset fits them all, the flips
    most rows agree with (:func:`_consensus_flips`), fitted by at least three quarters of
    them; failing that, the row the rounded least-squares flips fit worst (one imprecise row
    spoils the whole system) is left out and the rest tried again, while at least three
    quarters remain.  ``known_m`` (the shape of ``M``): the entries of ``M`` the traces
    fixed (dead inputs' are not)."""
    rows = [int(q) for q in np.nonzero(full)[0]]
    need = max(2, (3 * int(full.sum())) // 4)
    dropped: list[int] = []
    while rows:
        flip = subset_signs(V[rows].T, U, M[rows], mask=None if known_m is None else known_m[rows])
        if flip is not None:
            if dropped:
                notes.append(f"rows {sorted(dropped)} left out of the orientation fit (they fit "
                             "no subset with the others)")
            return flip
        if not dropped and len(rows) > need:
            got = _consensus_flips(V, U, M, rows, need, known_m)
            if got is not None:
                left = sorted(set(rows) - set(got[1]))
                notes.append(f"rows {left} left out of the orientation fit (the flips the other "
                             f"{len(got[1])} rows agree on do not fit them)")
                return got[0]
        if len(rows) - 1 < need:
            return None
        B = np.stack([np.outer(V[rows, i], U[i]).ravel() for i in range(U.shape[0])], axis=1)
        sel = np.ones(B.shape[0], bool) if known_m is None else known_m[rows].ravel()
        t, *_ = np.linalg.lstsq(B[sel], -M[rows].ravel()[sel], rcond=None)
        tb = np.round(t).clip(0, 1)
        err = np.abs(B @ tb + M[rows].ravel()).reshape(len(rows), -1)
        if known_m is not None:
            err = err * known_m[rows]
        res = err.max(axis=1)
        res /= np.abs(V[rows]).max(axis=1) + 1e-300  # tol: floor only
        worst = rows[int(np.argmax(res))]
        rows.remove(worst)
        dropped.append(worst)
    return None


def _assemble(neurons: list[TracedNeuron], known: _Known, seeds: int, rejected: int, lines: int,
              notes: list[str]) -> TracedLayer:
    n_prev = known.U.shape[0]
    K = len(neurons)
    if K == 0:
        return TracedLayer([], np.zeros(n_prev, bool), np.zeros((0, n_prev)), np.zeros(0), seeds,
                           rejected, lines, notes)
    Th = np.array([t.theta for t in neurons])
    V, M, c = Th[:, :n_prev], Th[:, n_prev:-1], Th[:, -1]
    # The flipped neurons of layer k-1 leave M = -sum_F V_l U_l in every row; rows with an
    # unidentified coordinate have it folded into M, so only complete rows take part.
    full = np.array([t.identified for t in neurons])
    km = _known_m(neurons, M.shape[1])
    flip = _robust_flips(V, known.U, M, full, notes, km) if full.any() else None
    if flip is None:
        notes.append("orientation of the previous layer: no subset of flips explains the traced "
                     "surfaces (left as stored)")
        W, bb = V, c
    else:
        V, M, c = V.copy(), M.copy(), c.copy()
        for q, t in enumerate(neurons):
            if t.unknown:
                _fill_active(t, q, V, M, c, known, flip)
        W = V
        bb = c + V[:, flip] @ known.b[flip]
        # Every complete row must be explained by the same flips (its own residual).
        res = np.abs((M + V[:, flip] @ known.U[flip]) * km).max(axis=1) / (np.abs(V).max(axis=1) + 1e-300)  # tol: floor only
        bad = [q for q in range(K) if full[q] and res[q] > 1e-6]  # tol: rows are good to ~1e-9
        if bad:
            notes.append(f"rows {bad} are not explained by the orientations the other rows give "
                         "(kept; the output check decides)")
    # One neuron traced twice (a trace that did not recognise the other): keep one row.
    Wn = W / (np.linalg.norm(W, axis=1, keepdims=True) + 1e-300)  # tol: floor only
    dup = [q for q in range(K) if any(abs(Wn[q] @ Wn[p]) > 1.0 - 1e-9 for p in range(q))]  # tol: same row
    if dup:
        keep = [q for q in range(K) if q not in dup]
        notes.append(f"rows {dup} repeat other rows (one neuron traced twice): dropped")
        neurons, W, bb = [neurons[q] for q in keep], W[keep], bb[keep]
    nrm = np.linalg.norm(W, axis=1)
    nrm[nrm == 0] = 1.0
    return TracedLayer(neurons, flip, W / nrm[:, None], bb / nrm, seeds, rejected, lines, notes)
