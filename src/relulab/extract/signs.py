"""Which side of its hyperplane a neuron is active on.

A hyperplane ``u . y + beta = 0`` found from a gradient jump says nothing about the
orientation: ``a relu(z)`` and ``a relu(-z)`` have the same jump (their difference is the
affine ``a z``).  Two exact ways to decide:

* :func:`one_sided` (the layer's normals are linearly independent): move from a critical
  point of neuron ``i`` along ``delta`` with ``U delta = e_i``, which changes neuron ``i``
  alone.  On the inactive side nothing downstream changes, so the output is constant
  there; on the active side it moves.  Three queries per neuron.
* :func:`subset_signs` (the last hidden layer, any width): fit the output as
  ``sum_i a_i relu(z_i) + M y + c``; the neurons that are really ``relu(-z_i)`` leave the
  linear part ``M = -sum_{i flipped} a_i u_i^T``, a subset-sum in ``R^(m x n)`` solved by
  least squares when the ``a_i u_i^T`` are independent, else as a small MILP (HiGHS).

Example:
    >>> import numpy as np
    >>> U = np.eye(2); A = np.array([[1.0], [2.0]])
    >>> M = -np.outer(A[1], U[1])                 # neuron 1 is really relu(-z)
    >>> subset_signs(A, U, M).tolist()
    [False, True]
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

import numpy as np

from ..limits import Deadline
from ..tolerance import RANK_TOL, TINY, or_default

__all__ = ["one_sided", "subset_signs", "other_subset", "SIDE_RATIO"]

# The active side must move the output this many times more than the inactive side
# (which moves by rounding only) for the orientation to count as decided.
SIDE_RATIO = 1e4
# Flip signs fit the output coefficients to this relative residual (of the largest term).
SUBSET_RTOL = 1e-7  # tol: float normals and coefficients are good to ~1e-9 and better


def one_sided(f: Callable[[np.ndarray], np.ndarray], U: np.ndarray, points: list[np.ndarray],
              eps: float, valid: Callable[[np.ndarray], np.ndarray] | None = None) -> list[bool | None]:
    """For each neuron ``i`` (row of ``U``, critical point ``points[i]``): True when it is
    active on the side ``u_i . y + beta_i < 0`` (its orientation must be flipped), False
    when active on the positive side, None when undecided.

    Example:
        >>> U, at0 = np.eye(1), [np.zeros(1)]
        >>> one_sided(lambda Y: np.maximum(Y, 0.0), U, at0, 0.1)
        [False]
        >>> one_sided(lambda Y: np.maximum(-Y, 0.0), U, at0, 0.1)
        [True]
    """
    D = np.linalg.pinv(U)  # column i moves neuron i alone
    out: list[bool | None] = []
    rows = []
    for i, y in enumerate(points):
        d = D[:, i] / np.linalg.norm(D[:, i])
        e = eps
        pts = np.array([y - e * d, y, y + e * d])
        if valid is not None:
            for _ in range(30):
                if valid(pts).all():
                    break
                e *= 0.5
                pts = np.array([y - e * d, y, y + e * d])
        rows.append(pts)
    F = f(np.vstack(rows)).reshape(len(points), 3, -1)
    for i in range(len(points)):
        minus = float(np.max(np.abs(F[i, 0] - F[i, 1])))
        plus = float(np.max(np.abs(F[i, 2] - F[i, 1])))
        if plus > SIDE_RATIO * minus:
            out.append(False)
        elif minus > SIDE_RATIO * plus:
            out.append(True)
        else:
            out.append(None)
    return out


#: the time limit of the extraction running in this context (extract_relu sets it): the
#: orientation MILP gets at most what is left of it (it ran its own 20 s under a 1 s limit)
EXTRACTION_DEADLINE: ContextVar[Deadline | None] = ContextVar("extraction_deadline", default=None)


def _flip_system(A: np.ndarray, U: np.ndarray, M: np.ndarray,
                 mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """The subset sum ``B t = target`` of the flips (``B``'s column ``i`` is ``a_i u_i^T``
    flattened, ``target = -M``), restricted to the known entries ``mask``, and its scale
    (the largest term, at least TINY)."""
    n = A.shape[0]
    B = np.stack([np.outer(A[i], U[i]).ravel() for i in range(n)], axis=1) if n else np.zeros((M.size, 0))
    target = -M.ravel()
    if mask is not None:
        sel = np.asarray(mask, bool).ravel()
        B, target = B[sel], target[sel]
    return B, target, max(float(np.abs(B).max(initial=0.0)), float(np.abs(target).max(initial=0.0)), TINY)


def _milp_seconds(time_limit: float) -> float:
    """``time_limit``, cut to what is left of the extraction's own limit when one runs
    (:data:`EXTRACTION_DEADLINE`)."""
    dl = EXTRACTION_DEADLINE.get()
    if dl is not None and dl.at is not None:
        return max(min(time_limit, dl.left() or 0.0), 1e-3)
    return time_limit


def subset_signs(A: np.ndarray, U: np.ndarray, M: np.ndarray, rtol: float | None = None,
                 time_limit: float = 20.0, mask: np.ndarray | None = None) -> np.ndarray | None:
    """The neurons to flip: ``t`` in {0,1}^n with ``sum_i t_i a_i u_i^T = -M`` (``A``: n x m
    output coefficients, ``U``: n x dim normals, ``M``: m x dim), or None when no subset fits
    to ``rtol`` (relative to the largest term; default ``SUBSET_RTOL``).  ``mask`` (the
    shape of ``M``, boolean): the entries of ``M`` that are known (the others take no part).

    Example:
        >>> U = np.eye(2); A = np.array([[1.0], [2.0]])
        >>> subset_signs(A, U, -np.outer(A[1], U[1])).tolist()    # neuron 1 is relu(-z)
        [False, True]
        >>> subset_signs(A, U, np.ones((1, 2))) is None             # no subset fits
        True
        >>> U3 = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
        >>> M = -np.outer(A[1], U3[1]); M[0, 2] = 5.0               # entry (0, 2) not known
        >>> subset_signs(A, U3, M, mask=np.array([[True, True, False]])).tolist()
        [False, True]
        >>> subset_signs(A, U3, M) is None                           # taken as known: no fit
        True
    """
    n = A.shape[0]
    B, target, scale = _flip_system(A, U, M, mask)
    tol = or_default(rtol, SUBSET_RTOL) * scale
    if n == 0:
        return np.zeros(0, dtype=bool) if np.abs(target).max(initial=0.0) <= tol else None
    if np.linalg.matrix_rank(B, tol=RANK_TOL * scale) == n:
        t, *_ = np.linalg.lstsq(B, target, rcond=None)
        tb = np.round(t).clip(0, 1)
        if np.abs(B @ tb - target).max() <= tol and np.abs(t - tb).max() < 1e-4:
            return tb.astype(bool)
        return None
    from ..lp import solve

    time_limit = _milp_seconds(time_limit)
    k = B.shape[0]
    # minimise sum s subject to -s <= B t - target <= s, t binary
    c = np.concatenate([np.zeros(n), np.ones(k)])
    I = np.eye(k)
    A_ub = np.block([[B, -I], [-B, -I]])
    b_ub = np.concatenate([target, -target])
    lb = np.zeros(n + k)
    ub = np.concatenate([np.ones(n), np.full(k, np.inf)])
    r = solve(c, A_ub=A_ub, b_ub=b_ub, lb=lb, ub=ub,
              integer=np.concatenate([np.ones(n, bool), np.zeros(k, bool)]), time_limit=time_limit)
    if r.x is None:
        return None
    tb = np.round(r.x[:n]).clip(0, 1)
    if np.abs(B @ tb - target).max() > tol:
        return None
    return tb.astype(bool)


def other_subset(A: np.ndarray, U: np.ndarray, M: np.ndarray, flip: np.ndarray,
                 time_limit: float = 1.0) -> np.ndarray | None:
    """Another subset of neurons to flip that fits ``M`` as well as ``flip`` does: to a few
    times ``flip``'s own residual, or to float64 rounding of the terms (a subset that fits
    only to :func:`subset_signs`' 1e-7 is a coincidence of sums that queries do tell
    apart, not a symmetry), or None when ``flip`` is the only one found.  When
    the terms ``a_i u_i^T`` are linearly independent the subset is unique and no solve is
    made; otherwise (parallel neurons) one MILP looks for a binary ``t != flip``: three
    neurons on one hyperplane whose output weights sum to 0 can all be flipped, which
    changes only a constant, and the queries cannot tell the two networks apart.

    Example:
        >>> U = np.array([[1.0, 1.0]] * 3); A = np.array([[1.0], [-2.0], [1.0]])
        >>> other_subset(A, U, np.zeros((1, 2)), np.zeros(3, bool)).tolist()   # flip all three
        [True, True, True]
        >>> other_subset(np.array([[1.0], [2.0]]), np.eye(2), np.zeros((1, 2)), np.zeros(2, bool)) is None
        True
    """
    n = A.shape[0]
    B, target, scale = _flip_system(A, U, M)
    if n == 0 or np.linalg.matrix_rank(B, tol=RANK_TOL * scale) == n:
        return None   # independent terms: one subset at most
    f0 = np.asarray(flip, bool)
    own = float(np.abs(B @ f0 - target).max(initial=0.0))
    tol = max(8.0 * own, 64.0 * n * float(np.finfo(np.float64).eps) * scale)
    from ..lp import solve

    time_limit = _milp_seconds(time_limit)
    f = f0
    # |B t - target| <= tol entrywise, and t differs from flip somewhere:
    # sum_{flip_i} (1 - t_i) + sum_{not flip_i} t_i >= 1
    differ = np.where(f, -1.0, 1.0)
    A_ub = np.vstack([B, -B, -differ[None, :]])
    b_ub = np.concatenate([target + tol, tol - target, [float(f.sum()) - 1.0]])
    r = solve(np.zeros(n), A_ub=A_ub, b_ub=b_ub, lb=np.zeros(n), ub=np.ones(n),
              integer=np.ones(n, bool), time_limit=time_limit)
    if r.x is None:
        return None
    t = np.round(r.x).clip(0, 1).astype(bool)
    # re-checked: a solver answer that does not fit, or equals flip, is no second subset
    if np.array_equal(t, f) or np.abs(B @ t - target).max() > tol:
        return None
    return t
