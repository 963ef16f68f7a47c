"""Infinitesimal-jackknife variance of an ensemble over resampled units.

An ensemble averages ``B`` estimates ``t_b``, each fitted on a resample of the ``n``
units with counts ``N_bi`` (how often unit ``i`` is in resample ``b``).  The
infinitesimal jackknife (Efron 2014; Wager, Hastie and Efron 2014, "Confidence intervals
for random forests") estimates the variance of the ensemble mean ``t = mean_b t_b`` by

    V_IJ = sum_i Cov_b(N_bi, t_b)^2          (covariances over the B resamples, 1/B).

With finite ``B`` the Monte-Carlo noise in each covariance inflates ``V_IJ``; the
bias-corrected estimate subtracts its expectation,

    V_IJ-U = V_IJ - (sum_i Var_b(N_bi)) * v / B,     v = mean_b (t_b - t)^2,

which for the bootstrap (``Var N_bi = 1 - 1/n``) is Wager-Hastie-Efron's correction
``n / B^2 sum_b (t_b - t)^2`` up to the factor ``1 - 1/n``.  For subsamples of size
``s`` drawn without replacement the variance is scaled by ``n (n - 1) / (n - s)^2``
(Wager and Athey 2018).  With all ``C(n, s)`` subsets and a statistic linear in the
units (the sample mean) the scaled ``V_IJ`` equals the unbiased variance estimate
``S^2 / n`` exactly; for a nonlinear statistic (a general U-statistic, a fitted network)
it is an approximation with a bias that does not vanish in general.

Example:
    >>> import itertools, numpy as np
    >>> y = np.array([1.0, 2.0, 4.0]); n = 3
    >>> draws = np.array(list(itertools.product(range(n), repeat=n)))   # all 27 bootstraps
    >>> N = np.stack([np.bincount(d, minlength=n) for d in draws])
    >>> t = N @ y / n                                                   # bootstrap means
    >>> v = ij_variance(N, t, bias_correction=False)
    >>> bool(np.isclose(v, np.sum((y - y.mean())**2) / n**2))          # plug-in variance
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import RelulabError
from ..limits import check_bytes, memory_budget
from ._base import finite_number

__all__ = ["ij_variance"]


def _subsample_size(s: Any, n: int) -> int | None:
    """``None``, or the subsample size as an int, refused unless a whole number in (0, n)."""
    if s is None:
        return None
    ok = (finite_number(s)
          and float(s) == int(s) and 0 < int(s) < n)
    if not ok:
        raise RelulabError(f"ij_variance: subsample_size must be an integer in (0, {n}), got {s!r}")
    return int(s)


def ij_variance(
    counts: Any,
    estimates: Any,
    *,
    bias_correction: bool = True,
    subsample_size: int | None = None,
) -> np.ndarray:
    """Infinitesimal-jackknife variance of the mean of ``estimates`` over resamples.

    Args:
        counts: ``(B, n)`` resampling counts of the ``n`` units.
        estimates: ``(B,)`` or ``(B, m)`` estimates (e.g. predictions at ``m`` points).
        bias_correction: subtract the Monte-Carlo bias (see module doc); the result may
            then be negative for small ``B`` (callers clip at 0).
        subsample_size: ``s`` when the resamples are subsamples of ``s`` units without
            replacement (applies the ``n (n - 1) / (n - s)^2`` factor); ``None`` for the
            bootstrap.

    Returns:
        A scalar for 1-D ``estimates``, else one variance per column.

    Example:
        >>> N = np.array([[2, 0], [0, 2]]); t = np.array([1.0, 3.0])
        >>> float(ij_variance(N, t, bias_correction=False))   # Cov = (-1, 1) -> 1 + 1
        2.0
    """
    try:
        N = np.asarray(counts, dtype=np.float64)
        T = np.asarray(estimates, dtype=np.float64)
    except (TypeError, ValueError):
        raise RelulabError("ij_variance: counts and estimates must be real numbers") from None
    vector = T.ndim == 1
    if vector:
        T = T[:, None]
    if N.ndim != 2 or T.ndim != 2 or N.shape[0] != T.shape[0]:
        raise RelulabError(
            f"ij_variance: counts {N.shape} and estimates {np.shape(estimates)} need the same number of rows B"
        )
    B, n = N.shape
    if B < 2:
        raise RelulabError(f"ij_variance: need at least 2 resamples, got {B}")
    if n < 1:
        raise RelulabError("ij_variance: counts has no columns; need at least one unit")
    if not (np.all(np.isfinite(N)) and np.all(np.isfinite(T))):
        raise RelulabError("ij_variance: counts and estimates must be finite")
    if np.any(N < 0):
        raise RelulabError("ij_variance: counts must be >= 0 (how often each unit is in each resample)")
    s = _subsample_size(subsample_size, n)
    Nc = N - N.mean(axis=0)
    Tc = T - T.mean(axis=0)
    # the (n, m) covariances Cov_b(N_bi, t_b(x_j)) in column blocks within the memory
    # budget (10,000 units x 10,000 points took 1.9 GB in one piece)
    m = Tc.shape[1]
    step = max(1, int(memory_budget() // (4 * 8 * n)))
    check_bytes(4.0 * 8 * n * min(step, m), f"ij_variance: the covariances of {n} units")
    V = np.empty(m)
    for j in range(0, m, step):
        cov = Nc.T @ Tc[:, j:j + step] / B
        V[j:j + step] = np.sum(cov**2, axis=0)
    if bias_correction:
        count_var = np.sum(Nc**2) / B            # sum_i Var_b(N_bi)
        V = V - count_var * np.mean(Tc**2, axis=0) / B
    if s is not None:
        V = V * n * (n - 1) / (n - s) ** 2
    return V[0] if vector else V
