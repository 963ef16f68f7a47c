"""The convex two-layer problems as second-order cone programs, solved by Clarabel.

Both convex reformulations in :mod:`relulab.train.convex` are group lassos over activation
patterns ``D_i = diag(M[:, i])``::

    min  (1/2) ||r||^2 + lam sum_k t_k
    s.t. r = sum_k sign_k D_{i_k} Xa z_k - y            (zero cone, n rows)
         S_{i_k} * (Xa z_k) >= 0                        (non-negative cone; ReLU only)
         (t_k, z_k) in SOC(d + 1)                       (second-order cone per group)

with ``S = 2 M - 1``.  The ReLU problem has two groups per pattern (``v_i`` with sign +1 and
``u_i`` with sign -1), each held in the pattern's cone; the gated-ReLU problem has one
unconstrained group per gate.  An interior-point method solves this to high accuracy in
a few dozen iterations, whatever the conditioning or the strength of the regulariser.  A
first-order method can stall on such problems, as FISTA does on weakly regularised or
degenerate data.  The caller still certifies the answer with its own duality gap: this
module only produces a candidate.

Example:
    >>> import numpy as np
    >>> Xa = np.array([[-1.0, 1.0], [0.0, 1.0], [1.0, 1.0]]); y = np.array([1.0, 0.0, 1.0])
    >>> M = Xa @ np.array([[1.0, 0.0], [-1.0, 0.0]]).T >= 0
    >>> Z, info = solve_group_lasso(Xa, M, y, 0.01, cones=True)
    >>> Z.shape, info["status"]
    ((2, 2, 2), 'Solved')
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import require
from ..tolerance import IPM_TOL, or_default

__all__ = ["solve_group_lasso"]


def _group_entries(Xa: np.ndarray, W: np.ndarray, first_col: int, stride: int,
                   row_of: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sparse entries ``W[j, k] * Xa[j, :]`` at row ``row_of(k, j)`` and at the columns of
    group ``k``'s vector ``z_k`` (which follows its norm bound ``t_k``)."""
    d = Xa.shape[1]
    js, ks = np.nonzero(W)
    vals = (W[js, ks][:, None] * Xa[js]).ravel()
    rows = np.repeat(row_of(ks, js), d)
    cols = (first_col + ks[:, None] * stride + 1 + np.arange(d)[None, :]).ravel()
    keep = vals != 0.0
    return rows[keep], cols[keep], vals[keep]


def solve_group_lasso(Xa: np.ndarray, M: np.ndarray, y: np.ndarray, lam: float, *,
                      cones: bool, rows: np.ndarray | None = None, tol: float | None = None,
                      max_iter: int = 200, time_limit: float | None = None
                      ) -> tuple[np.ndarray, dict[str, Any]]:
    """Solve the ReLU (``cones=True``) or gated-ReLU (``cones=False``) group lasso.

    Args:
        Xa: data with the bias column already appended, ``(n, d)``.
        M: activation patterns, ``(n, P)`` booleans.
        y: targets ``(n,)``; lam: the group-lasso strength (> 0).
        rows: optional ``(n, P)`` mask of the cone rows to impose (for example only the
            facets from :func:`relulab.train.patterns.facet_rows`); all rows by default.
        tol: Clarabel's feasibility and gap tolerances.

    Returns:
        ``(Z, info)``: ``Z`` is ``(2, P, d)`` (``Z[0] = v``, ``Z[1] = u``) for ReLU and
        ``(P, d)`` for gated ReLU; ``info`` has Clarabel's ``status``, ``iterations`` and
        ``seconds``.  ``Z`` may violate the cone constraints by the solver's tolerance;
        the caller projects and certifies it.

    Example:
        >>> Xa = np.array([[-1.0, 1.0], [0.0, 1.0], [1.0, 1.0]]); y = np.array([1.0, 0.0, 1.0])
        >>> M = Xa @ np.array([[1.0, 0.0], [-1.0, 0.0]]).T >= 0     # patterns of gates x >= 0, x <= 0
        >>> Z, info = solve_group_lasso(Xa, M, y, 0.01, cones=False)
        >>> Z.shape, info["status"]
        ((2, 2), 'Solved')
    """
    tol = or_default(tol, IPM_TOL)
    clarabel = require("clarabel", "clarabel")
    t0 = time.perf_counter()
    n, d = Xa.shape
    Mf = np.asarray(M, dtype=np.float64)
    P = Mf.shape[1]
    if cones:
        groups = np.tile(np.arange(P), 2)
        signs = np.repeat([1.0, -1.0], P)
    else:
        groups = np.arange(P)
        signs = np.ones(P)
    K = groups.size
    stride = d + 1
    nv = n + K * stride

    # zero cone: r - sum_k sign_k D_k Xa z_k = -y
    r1, c1, v1 = _group_entries(Xa, -Mf[:, groups] * signs[None, :], n, stride,
                                lambda ks, js: js)
    row_idx = [np.arange(n), r1]
    cols = [np.arange(n), c1]
    vals = [np.ones(n), v1]
    n_rows = n
    cone_list = [clarabel.ZeroConeT(n)]
    b_parts = [-np.asarray(y, dtype=np.float64)]
    if cones:
        # non-negative cone: s = 0 - (-S Xa z) = S * (Xa z) >= 0, n rows per group
        S = 2.0 * Mf - 1.0
        if rows is not None:
            S = S * np.asarray(rows, dtype=bool)
        # one cone row per nonzero (row, group) pair, numbered in np.nonzero's order
        Wc = -S[:, groups]
        m = int(np.count_nonzero(Wc))
        r2, c2, v2 = _group_entries(Xa, Wc, n, stride,
                                    lambda ks, js: n_rows + np.arange(ks.size))
        row_idx.append(r2)
        cols.append(c2)
        vals.append(v2)
        n_rows += m
        cone_list.append(clarabel.NonnegativeConeT(m))
        b_parts.append(np.zeros(m))
    # second-order cones: s = (t_k, z_k)
    soc_cols = n + np.arange(K * stride)
    row_idx.append(n_rows + np.arange(K * stride))
    cols.append(soc_cols)
    vals.append(-np.ones(K * stride))
    n_rows += K * stride
    cone_list += [clarabel.SecondOrderConeT(stride)] * K
    b_parts.append(np.zeros(K * stride))

    A = sp.csc_matrix((np.concatenate(vals), (np.concatenate(row_idx), np.concatenate(cols))),
                      shape=(n_rows, nv))
    b = np.concatenate(b_parts)
    Pm = sp.csc_matrix((np.ones(n), (np.arange(n), np.arange(n))), shape=(nv, nv))
    q = np.zeros(nv)
    q[n + np.arange(K) * stride] = lam

    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = tol
    settings.tol_feas = tol
    settings.max_iter = max_iter
    if time_limit is not None:
        settings.time_limit = float(time_limit)
    try:
        # the multithreaded supernodal factorisation, where this Clarabel build has it
        settings.direct_solve_method = "faer"
        solver = clarabel.DefaultSolver(Pm, q, A, b, cone_list, settings)
    except Exception:  # older Clarabel: its default factorisation
        settings.direct_solve_method = "auto"
        solver = clarabel.DefaultSolver(Pm, q, A, b, cone_list, settings)
    sol = solver.solve()
    x = np.asarray(sol.x, dtype=np.float64)
    if not np.all(np.isfinite(x)):  # a failed solve: the zero network is still feasible
        x = np.zeros(nv)
    zcols = n + np.arange(K)[:, None] * stride + 1 + np.arange(d)[None, :]
    Z = x[zcols]
    Z = Z.reshape(2, P, d) if cones else Z.reshape(P, d)
    info = {"status": str(sol.status), "iterations": int(sol.iterations),
            "seconds": time.perf_counter() - t0}
    return Z, info
