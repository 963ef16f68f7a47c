"""Check (pinball) losses, their convolution-smoothed versions, and the conquer bandwidth.

The check loss at level ``tau`` is ``rho(u) = u * (tau - 1{u < 0}) = tau*u + max(-u, 0)``.
Convolution smoothing (conquer) replaces it by

    l_h(u) = (rho * K_h)(u) = integral rho(v) K_h(v - u) dv = E rho(u + h Z),   Z ~ K,

for a kernel density ``K`` symmetric about 0 and ``K_h(t) = K(t / h) / h``.  Because
``E Z = 0`` the linear part survives unchanged and only the hinge is smoothed:

    l_h(u) = tau*u + h * G(-u / h),   G(t) = E max(t - Z, 0) = integral_{-inf}^t F(s) ds,

with ``F`` the kernel's distribution function.  Symmetry gives ``G(t) - G(-t) = t``, so
``l_h`` is the same whichever side of the hinge one writes it from; the code evaluates

    l_h(u) = rho(u) + h * G(-|u| / h),

which never overflows (``G`` is only needed at arguments <= 0, where it is at most
``G(0)``) and adds a term that is exactly 0 for the compact kernels when ``|u| >= h``.
``G`` in closed form:

* gaussian ``K = phi``:                 ``G(t) = t Phi(t) + phi(t)``
* logistic ``K = e^-z / (1 + e^-z)^2``: ``G(t) = log(1 + e^t)`` (``F`` is the sigmoid)
* uniform ``K = 1/2`` on [-1, 1]:       ``G(t) = (t + 1)^2 / 4`` on [-1, 1]
* epanechnikov ``K = 3/4 (1 - z^2)``:   ``G(t) = 3/16 + t/2 + 3 t^2/8 - t^4/16`` on [-1, 1]
* triangular ``K = 1 - |z|``:           ``G(t) = (1 + t)^3 / 6`` on [-1, 0],
  ``t + (1 - t)^3 / 6`` on [0, 1]

and, for the compactly supported kernels, ``G = 0`` left of -1 and ``G(t) = t`` right of 1
(so ``l_h`` equals the check loss exactly when ``|u| >= h``).  Each ``l_h`` is convex,
continuously differentiable with derivative ``tau - F(-u / h)``, and
``0 <= l_h - rho <= h * G(0)`` so it tends to the check loss as ``h -> 0``.

The data-driven bandwidth follows the conquer literature (He, Pan, Tan and Zhou 2023;
the ``quantes`` package): ``h = max{0.01, sqrt(tau (1 - tau)) * ((p + log n) / n)^0.4}``
(``quantes`` caps ``(p + log n)/n`` at 0.5 and floors at 1e-4; we floor at 0.01, the
conquer papers' choice, and keep the cap).

Example:
    >>> import numpy as np
    >>> u = np.array([-1.0, 0.0, 2.0])
    >>> check_loss(u, 0.9).tolist()
    [0.09999999999999998, 0.0, 1.8]
    >>> v = smoothed_check_loss(u, 0.9, 1e-6, "uniform")   # equal off [-h, h]
    >>> bool(np.allclose(v, check_loss(u, 0.9) + [0.0, 2.5e-7, 0.0], rtol=0, atol=1e-15))
    True
    >>> round(conquer_bandwidth(0.5, n=10_000, p=3), 4)
    0.0342
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
from scipy.special import expit, ndtr

from ..errors import RelulabError

__all__ = [
    "KERNELS",
    "check_loss",
    "smoothed_check_loss",
    "smoothed_check_grad",
    "kernel_density",
    "kernel_integral",
    "conquer_bandwidth",
]

KERNELS = ("gaussian", "logistic", "uniform", "epanechnikov", "triangular")

# floor of the data-driven bandwidth (on the standardised response scale): below it the
# smoothed loss is numerically the check loss and its gradient as rough.
MIN_BANDWIDTH = 0.01


def _kernel(kernel: str) -> str:
    if kernel not in KERNELS:
        raise RelulabError(f"kernel: unknown kernel {kernel!r}; choose one of {', '.join(KERNELS)}")
    return kernel


def _real(x: Any) -> bool:
    """Whether ``x`` is a real number (not a bool, not a string)."""
    return isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_))


def _tau(tau: Any) -> float:
    """The quantile level as a float, refused unless a number strictly between 0 and 1."""
    if not (_real(tau) and 0.0 < float(tau) < 1.0):
        raise RelulabError(f"tau: quantile level must be a number strictly between 0 and 1, got {tau!r}")
    return float(tau)


def _h(h: Any) -> float:
    """The bandwidth as a float, refused unless a positive finite number."""
    if not (_real(h) and float(h) > 0.0 and math.isfinite(float(h))):
        raise RelulabError(f"bandwidth: must be a positive finite number, got {h!r}")
    return float(h)


def _count(name: str, v: Any, least: int) -> int:
    """A whole number ``>= least`` (an integral float such as 100.0 counts), else an error naming it."""
    if isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)):
        ok = int(v) >= least  # any size: 10**400 has no float
    else:
        ok = _real(v) and math.isfinite(float(v)) and float(v) == int(v) and int(v) >= least
    if not ok:
        raise RelulabError(f"conquer_bandwidth: {name} must be an integer >= {least}, got {v!r}")
    return int(v)


def check_loss(u: Any, tau: float) -> np.ndarray:
    """The check (pinball) loss ``rho_tau(u) = u (tau - 1{u < 0})`` elementwise.

    ``u`` is the residual ``y - q``.

    Example:
        >>> check_loss([-2.0, 2.0], 0.25).tolist()
        [1.5, 0.5]
    """
    u = _residuals(u)
    return u * (_tau(tau) - (u < 0))


def kernel_density(t: Any, kernel: str) -> np.ndarray:
    """The kernel density ``K(t)`` (symmetric, unit mass) elementwise.

    Example:
        >>> kernel_density([0.0, 2.0], "triangular").tolist()
        [1.0, 0.0]
    """
    t = np.asarray(t, dtype=np.float64)
    k = _kernel(kernel)
    inside = np.abs(t) <= 1
    if k == "gaussian":
        return np.exp(-0.5 * t * t) / math.sqrt(2 * math.pi)
    if k == "logistic":
        e = np.exp(-np.abs(t))
        return e / (1 + e) ** 2
    if k == "uniform":
        return np.where(inside, 0.5, 0.0)
    if k == "epanechnikov":
        return np.where(inside, 0.75 * (1 - t * t), 0.0)
    return np.where(inside, 1 - np.abs(t), 0.0)


def _cdf(t: np.ndarray, k: str) -> np.ndarray:
    if k == "gaussian":
        return ndtr(t)
    if k == "logistic":
        return expit(t)
    s = np.clip(t, -1.0, 1.0)
    if k == "uniform":
        return (s + 1) / 2
    if k == "epanechnikov":
        return (1 + s) ** 2 * (2 - s) / 4  # = 1/2 + 3s/4 - s^3/4, without cancelling near -1
    return np.where(s <= 0, (1 + s) ** 2 / 2, 1 - (1 - s) ** 2 / 2)


def kernel_integral(t: Any, kernel: str) -> np.ndarray:
    """``G(t) = E max(t - Z, 0)`` for ``Z`` with the kernel's density (see module doc).

    Example:
        >>> round(float(kernel_integral(0.0, "gaussian")), 6)   # phi(0)
        0.398942
    """
    t = np.asarray(t, dtype=np.float64)
    k = _kernel(kernel)
    if k == "gaussian":
        return t * ndtr(t) + np.exp(-0.5 * t * t) / math.sqrt(2 * math.pi)
    if k == "logistic":
        return np.logaddexp(0.0, t)
    s = np.clip(t, -1.0, 1.0)
    if k == "uniform":
        mid = (s + 1) ** 2 / 4
    elif k == "epanechnikov":
        mid = (1 + s) ** 3 * (3 - s) / 16  # = 3/16 + s/2 + 3s^2/8 - s^4/16, without cancelling near -1
    else:
        mid = np.where(s <= 0, (1 + s) ** 3 / 6, s + (1 - s) ** 3 / 6)
    return np.where(t >= 1, t, np.where(t <= -1, 0.0, mid))


def smoothed_check_loss(u: Any, tau: float, h: float, kernel: str = "gaussian") -> np.ndarray:
    """The convolution-smoothed check loss ``l_h(u) = tau u + h G(-u / h)`` elementwise.

    Evaluated as ``rho(u) + h G(-|u| / h)`` (equal, by ``G(t) - G(-t) = t``), which neither
    overflows for ``|u| / h`` beyond the float range nor cancels for ``tau`` near 0 or 1.

    Example:
        >>> import numpy as np
        >>> v = smoothed_check_loss([0.0], 0.5, 1.0, "logistic")   # h log 2
        >>> bool(np.isclose(v[0], np.log(2)))
        True
    """
    u = _residuals(u)
    tau, h = _tau(tau), _h(h)
    with np.errstate(over="ignore"):
        t = -np.minimum(np.abs(u) / h, np.finfo(np.float64).max)   # -inf would give G = nan
    return check_loss(u, tau) + h * kernel_integral(t, kernel)


def _residuals(u: Any) -> np.ndarray:
    """``u`` as a float64 array; one error for what is not numbers."""
    try:
        return np.asarray(u, dtype=np.float64)
    except (TypeError, ValueError):
        raise RelulabError(f"the residuals u must be real numbers, got {u!r:.60}") from None


def smoothed_check_grad(u: Any, tau: float, h: float, kernel: str = "gaussian") -> np.ndarray:
    """Derivative of :func:`smoothed_check_loss` in ``u``: ``tau - F(-u / h)``.

    Example:
        >>> smoothed_check_grad([0.0], 0.3, 0.5, "uniform").tolist()
        [-0.2]
    """
    u = _residuals(u)
    tau, h = _tau(tau), _h(h)
    with np.errstate(over="ignore"):  # |u| / h beyond float64 is +-inf, where F is 0 or 1
        return tau - _cdf(-u / h, _kernel(kernel))


def conquer_bandwidth(tau: float, n: int, p: int) -> float:
    """The data-driven conquer bandwidth ``max{0.01, sqrt(tau(1-tau)) ((p + log n)/n)^0.4}``.

    ``p`` is the number of covariates plus one (intercept), as in ``quantes``'s linear
    conquer; :class:`~relulab.estimators.QuantileNetRegressor` passes the input dimension
    plus one (not the network's parameter count, which exceeds ``n`` for most networks and
    would pin the rule at its cap).  The bandwidth is on the scale of the residuals the
    rule is applied to (the estimator applies it to the standardised response).

    Example:
        >>> conquer_bandwidth(0.5, n=100, p=1) > conquer_bandwidth(0.5, n=10_000, p=1)
        True
    """
    tau = _tau(tau)
    n, p = _count("n", n, 2), _count("p", p, 1)
    # in logarithms: n or p beyond float64 (10**400) overflowed the division
    ratio = 0.5 if 2 * p >= n else min(math.exp(math.log(p + math.log(n)) - math.log(n)), 0.5)
    return max(MIN_BANDWIDTH, math.sqrt(tau * (1 - tau)) * ratio**0.4)
