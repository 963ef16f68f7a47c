"""The training losses in torch (elementwise; the estimators weight and average them).

Each mirrors a numpy definition (``kernels.py`` for the check losses); the tests compare
the two.  torch is passed in, never imported here, so this module stays light.
"""

from __future__ import annotations

import math
from typing import Any

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def kernel_integral(torch: Any, t: Any, kernel: str) -> Any:
    """torch version of :func:`relulab.estimators.kernels.kernel_integral`."""
    if kernel == "gaussian":
        return t * torch.special.ndtr(t) + torch.exp(-0.5 * t * t) * _INV_SQRT_2PI
    if kernel == "logistic":
        return torch.nn.functional.softplus(t)
    s = torch.clamp(t, -1.0, 1.0)
    if kernel == "uniform":
        mid = (s + 1) ** 2 / 4
    elif kernel == "epanechnikov":
        mid = (1 + s) ** 3 * (3 - s) / 16  # = 3/16 + s/2 + 3s^2/8 - s^4/16, without cancelling near -1
    else:
        mid = torch.where(s <= 0, (1 + s) ** 3 / 6, s + (1 - s) ** 3 / 6)
    # outside [-1, 1] G is 0 or t; s is clamped there, so mid's gradient is 0 and the
    # where below supplies the right one.
    return torch.where(t >= 1, t, torch.where(t <= -1, torch.zeros_like(t), mid))


def kernel_cdf(torch: Any, t: Any, kernel: str) -> Any:
    """torch version of the kernel's distribution function ``F`` (``G' = F``)."""
    if kernel == "gaussian":
        return torch.special.ndtr(t)
    if kernel == "logistic":
        return torch.sigmoid(t)
    s = torch.clamp(t, -1.0, 1.0)
    if kernel == "uniform":
        return (s + 1) / 2
    if kernel == "epanechnikov":
        return (1 + s) ** 2 * (2 - s) / 4  # = 1/2 + 3s/4 - s^3/4, without cancelling near -1
    return torch.where(s <= 0, (1 + s) ** 2 / 2, 1 - (1 - s) ** 2 / 2)


_FUNCTIONS: dict[int, Any] = {}


def _smoothed_check_function(torch: Any) -> Any:
    """An autograd Function with the closed-form derivative ``tau - F(-u / h)``.

    Fewer tensor operations per step than differentiating the loss formula (the
    training loop's cost is mostly per-operation overhead at these sizes).
    """
    key = id(torch)
    if key not in _FUNCTIONS:

        class SmoothedCheck(torch.autograd.Function):
            @staticmethod
            def forward(ctx: Any, u: Any, tau: Any, h: Any, kernel: str) -> Any:
                ctx.save_for_backward(tau - kernel_cdf(torch, -u / h, kernel))
                # rho(u) + h G(-|u| / h): no overflow of |u| / h, no cancellation near tau = 1
                t = -torch.clamp(torch.abs(u) / h, max=torch.finfo(u.dtype).max)
                return check_loss(torch, u, tau) + h * kernel_integral(torch, t, kernel)

            @staticmethod
            def backward(ctx: Any, grad: Any) -> Any:
                (d,) = ctx.saved_tensors
                return grad * d, None, None, None

        _FUNCTIONS[key] = SmoothedCheck
    return _FUNCTIONS[key]


def check_loss(torch: Any, u: Any, tau: Any) -> Any:
    """Pinball loss ``u (tau - 1{u < 0})`` (``tau`` broadcasts over the last axis)."""
    return u * (tau - (u < 0).to(u.dtype))


def smoothed_check_loss(torch: Any, u: Any, tau: Any, h: Any, kernel: str) -> Any:
    """Convolution-smoothed check loss ``tau u + h G(-u / h)``, evaluated as
    ``rho(u) + h G(-|u| / h)`` (derivative in ``u`` in closed form).

    ``tau`` and ``h`` are constants (floats or tensors that broadcast against ``u``).
    """
    tau = torch.as_tensor(tau, dtype=u.dtype)
    h = torch.as_tensor(h, dtype=u.dtype)
    return _smoothed_check_function(torch).apply(u, tau, h, kernel)


def glm_loss(torch: Any, eta: Any, y: Any, family: str) -> Any:
    """Negative log-likelihood (up to terms free of ``eta``) with the canonical link.

    gaussian ``(y - eta)^2 / 2``, binomial ``log(1 + e^eta) - y eta``, poisson
    ``e^eta - y eta``: each convex in the linear predictor ``eta``.
    """
    if family == "gaussian":
        return 0.5 * (y - eta) ** 2
    if family == "binomial":
        return torch.nn.functional.softplus(eta) - y * eta
    return torch.exp(eta) - y * eta


def huber_loss(torch: Any, u: Any, delta: float) -> Any:
    """Huber loss: ``u^2 / 2`` for ``|u| <= delta``, ``delta (|u| - delta / 2)`` beyond."""
    a = torch.abs(u)
    return torch.where(a <= delta, 0.5 * u * u, delta * (a - 0.5 * delta))
