"""Vector norms and operator norms ``||A||_{p->q}``, exact where a formula exists.

``||A||_{p->q} = max_{||u||_p <= 1} ||A u||_q``.  Exact cases:

* one row (a scalar function): the dual norm ``||a||_{p'}`` with ``1/p + 1/p' = 1``;
* ``p = 1``: the largest ``q``-norm of a column (the l1 ball's vertices are ``+-e_j``);
* ``q = inf``: the largest ``p'``-norm of a row;
* ``p = q = 2``: the largest singular value;
* ``p = inf`` with at most :data:`MAX_SIGN_DIM` columns: the largest ``||A s||_q`` over
  sign vectors ``s`` (a convex function is maximal at a vertex of the cube), and the
  dual case ``q = 1`` with at most that many rows.

Otherwise (e.g. ``2 -> 1`` of a large matrix, where the problem is NP-hard) only a
bracket is known: the lower end from explicit unit vectors, the upper end from norm
inequalities and Riesz-Thorin interpolation; :class:`NormBracket` says ``exact=False``.

Example:
    >>> import numpy as np
    >>> operator_norm(np.array([[3.0, -4.0]]), 2).upper
    5.0
    >>> b = operator_norm(np.array([[1.0, 2.0], [3.0, 4.0]]), 1, 1)
    >>> b.lower, b.upper, b.exact
    (6.0, 6.0, True)
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from ..errors import RelulabError
from ..tolerance import ROUNDOFF

__all__ = ["NormBracket", "check_p", "dual_exponent", "vector_norm", "operator_norm", "MAX_SIGN_DIM"]

# Enumerating the 2^n sign vectors stays below ~65k matrix-vector products.
MAX_SIGN_DIM = 16


@dataclass(frozen=True)
class NormBracket:
    """``lower <= ||A||_{p->q} <= upper``; ``exact`` when the two are the same formula.

    Example:
        >>> import numpy as np
        >>> b = operator_norm(np.array([[3.0, 4.0]]), 2, 2)
        >>> b.lower, b.upper, b.exact
        (5.0, 5.0, True)
    """

    lower: float
    upper: float
    exact: bool


def check_p(p: float, what: str = "p") -> float:
    """Validate a norm exponent (a number >= 1 or inf; "inf" accepted) and return it as float.

    Example:
        >>> check_p("inf"), check_p(2)
        (inf, 2.0)
    """
    if isinstance(p, (bool, np.bool_)):   # True read as the l1 norm
        raise RelulabError(f"{what}: {p!r} is not a number (give 1, 2, inf or any p >= 1)")
    try:
        v = float(p)
    except (TypeError, ValueError, OverflowError):
        raise RelulabError(f"{what}: {p!r} is not a number (give 1, 2, inf or any p >= 1)") from None
    if math.isnan(v) or v < 1:
        raise RelulabError(f"{what} = {p!r}: an l^p norm needs p >= 1 (or inf)")
    return v


def dual_exponent(p: float) -> float:
    """``p'`` with ``1/p + 1/p' = 1`` (``1 <-> inf``).

    Example:
        >>> dual_exponent(1), dual_exponent(2), dual_exponent(float("inf"))
        (inf, 2.0, 1.0)
    """
    p = check_p(p, "dual_exponent: p")   # p < 1 gave a negative "dual" (0.5 -> -1)
    if p == 1:
        return math.inf
    if math.isinf(p):
        return 1.0
    return p / (p - 1.0)


def vector_norm(x: np.ndarray, p: float, axis: int = -1) -> np.ndarray | float:
    """The l^p norm along ``axis`` (any p >= 1, inf included).

    Example:
        >>> float(vector_norm(np.array([3.0, -4.0]), 1))
        7.0
    """
    p = check_p(p, "vector_norm: p")   # p = 0 divided by zero, p = -1 returned 0.5
    x = np.abs(np.asarray(x, dtype=np.float64))
    if math.isinf(p):
        return np.max(x, axis=axis, initial=0.0)
    if p == 1:
        return np.sum(x, axis=axis)
    # scale by the largest entry first: squares of 1e-170 underflowed to "exact 0" and of
    # 1e160 overflowed to a certified lower bound of inf (p = 2 too)
    s = np.max(x, axis=axis, keepdims=True, initial=0.0)
    safe = np.where(s > 0, s, 1.0)
    y = x / safe
    total = np.sqrt(np.sum(y * y, axis=axis)) if p == 2 else np.sum(y ** p, axis=axis) ** (1.0 / p)
    return np.squeeze(s, axis=axis) * total


def _sign_vectors(n: int) -> np.ndarray:
    # s and -s give the same norm: fix the first sign
    rest = np.array(list(itertools.product((1.0, -1.0), repeat=n - 1)), dtype=np.float64).reshape(-1, n - 1)
    return np.hstack([np.ones((rest.shape[0], 1)), rest])


def operator_norm(A: np.ndarray, p: float, q: float | None = None) -> NormBracket:
    """Bracket (exact where possible) of ``||A||_{p->q}`` (``q`` defaults to ``p``).

    Example:
        >>> operator_norm(np.eye(2), 2, 2).upper
        1.0
    """
    try:
        raw = np.asarray(A)
        if np.iscomplexobj(raw):
            # float64 kept only the real part: [[3 + 4j]] read "exact 3"
            raise RelulabError("operator_norm: the matrix is complex; the norms here are of real matrices")
        A = np.atleast_2d(np.asarray(raw, dtype=np.float64))
    except (TypeError, ValueError) as e:   # ragged rows, text
        raise RelulabError(f"operator_norm: need a finite 2-D matrix of real numbers ({e})") from None
    if A.size == 0:
        raise RelulabError(f"operator_norm: the matrix is empty (shape {A.shape})")
    if A.ndim != 2 or not np.all(np.isfinite(A)):
        # a 3-D array or a NaN matrix ended in numpy's unpacking or SVD errors
        raise RelulabError(f"operator_norm: need a finite 2-D matrix, got shape {A.shape}"
                           + ("" if A.ndim != 2 else " with non-finite entries"))
    p = check_p(p)
    q = p if q is None else check_p(q, "q")
    m, n = A.shape
    pd = dual_exponent(p)
    if m == 1 or n == 0:
        v = float(vector_norm(A[0], pd)) if m == 1 else 0.0
        return NormBracket(v, v, True)
    if n == 1:  # a column: ||A u||_q = |u| ||A||_q
        v = float(vector_norm(A[:, 0], q))
        return NormBracket(v, v, True)
    cols = vector_norm(A, q, axis=0)
    rows = vector_norm(A, pd, axis=1)
    if p == 1:
        v = float(np.max(cols))
        return NormBracket(v, v, True)
    if math.isinf(q):
        v = float(np.max(rows))
        return NormBracket(v, v, True)
    if p == 2 and q == 2:
        v = float(np.linalg.norm(A, 2))
        return NormBracket(v, v, True)
    if math.isinf(p) and n <= MAX_SIGN_DIM:
        v = float(np.max(vector_norm(_sign_vectors(n) @ A.T, q, axis=1)))
        return NormBracket(v, v, True)
    if q == 1 and m <= MAX_SIGN_DIM:
        v = float(np.max(vector_norm(_sign_vectors(m) @ A, pd, axis=1)))
        return NormBracket(v, v, True)
    # bracket: explicit unit vectors below, norm inequalities above
    lows = [float(np.max(cols)) / float(vector_norm(np.ones(1), p)), float(np.max(rows))]
    U, S, Vt = np.linalg.svd(A, full_matrices=False)
    for v in (Vt[0], np.sign(Vt[0]) + (Vt[0] == 0)):
        nv = float(vector_norm(v, p))
        if nv > 0:
            lows.append(float(vector_norm(A @ v, q)) / nv)
    lower = max(lows)
    # ||A||_{p->q} <= ||A||_{p->r} * c(r -> q) for r in {1, 2, inf}, with
    # ||y||_q <= m^{max(0, 1/q - 1/r)} ||y||_r and ||u||_r <= n^{max(0, 1/r - 1/p)} ||u||_p
    def inv(r: float) -> float:
        return 0.0 if math.isinf(r) else 1.0 / r

    ups = []
    for r, nr in ((1.0, None), (2.0, float(S[0])), (math.inf, None)):
        in_fac = n ** max(0.0, inv(r) - inv(p))
        out_fac = m ** max(0.0, inv(q) - inv(r))
        if r == 1:
            nr = float(np.max(vector_norm(A, 1, axis=0)))
        elif math.isinf(r):
            nr = float(np.max(vector_norm(A, 1, axis=1)))
        ups.append(nr * in_fac * out_fac)
    upper = max(min(ups), lower)
    return NormBracket(lower, upper, bool(upper <= lower * (1 + ROUNDOFF)))
