"""Smoothed check losses: closed forms against quadrature, limits, gradients, torch twins."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate

from relulab.errors import RelulabError
from relulab.estimators.kernels import (
    KERNELS,
    check_loss,
    conquer_bandwidth,
    kernel_density,
    kernel_integral,
    smoothed_check_grad,
    smoothed_check_loss,
)

COMPACT = {"uniform", "epanechnikov", "triangular"}


def quadrature_loss(u: float, tau: float, h: float, kernel: str) -> float:
    """integral rho(u + h z) K(z) dz, split at the kink z = -u/h and the support ends."""
    f = lambda z: float(check_loss(u + h * z, tau)) * float(kernel_density(z, kernel))  # noqa: E731
    lo, hi = (-1.0, 1.0) if kernel in COMPACT else (-np.inf, np.inf)
    kink = -u / h
    pieces = [(lo, hi)] if not (lo < kink < hi) else [(lo, kink), (kink, hi)]
    total = 0.0
    for a, b in pieces:
        val, _ = integrate.quad(f, a, b, epsabs=1e-13, epsrel=1e-13, limit=200)
        total += val
    return total


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("tau", [0.05, 0.5, 0.9])
def test_closed_form_equals_numerical_convolution(kernel, tau):
    h = 0.37
    for u in [-2.0, -0.5, -0.2, 0.0, 0.1, 0.3, 0.36, 1.5, 4.0]:
        exact = quadrature_loss(u, tau, h, kernel)
        ours = float(smoothed_check_loss(u, tau, h, kernel))
        assert abs(ours - exact) <= 1e-8, (kernel, tau, u, ours, exact)


@pytest.mark.parametrize("kernel", KERNELS)
def test_kernels_are_densities_and_G_is_their_double_integral(kernel):
    lo, hi = (-1, 1) if kernel in COMPACT else (-np.inf, np.inf)
    mass, _ = integrate.quad(lambda z: float(kernel_density(z, kernel)), lo, hi)
    assert abs(mass - 1) < 1e-10
    # G(t) = E max(t - Z, 0) and symmetry G(t) - G(-t) = t
    for t in [-1.3, -0.4, 0.0, 0.7, 2.0]:
        g, _ = integrate.quad(lambda z, t=t: max(t - z, 0.0) * float(kernel_density(z, kernel)), lo, min(hi, t))
        assert abs(float(kernel_integral(t, kernel)) - g) < 1e-9
        assert abs(float(kernel_integral(t, kernel) - kernel_integral(-t, kernel)) - t) < 1e-12


@pytest.mark.parametrize("kernel", KERNELS)
def test_tends_to_pinball_as_bandwidth_shrinks(kernel):
    u = np.linspace(-3, 3, 601)
    tau = 0.3
    rho = check_loss(u, tau)
    G0 = float(kernel_integral(0.0, kernel))
    gaps = []
    for h in [1.0, 0.1, 0.01, 1e-4]:
        gap = smoothed_check_loss(u, tau, h, kernel) - rho
        assert np.all(gap >= -1e-15)               # Jensen: smoothing a convex loss lifts it
        assert np.max(gap) <= h * G0 + 1e-15       # the largest lift is at the kink
        gaps.append(np.max(gap))
    assert gaps[-1] < 1e-4 and all(a > b for a, b in zip(gaps, gaps[1:], strict=False))
    if kernel in COMPACT:                          # equal to the check loss off [-h, h]
        h = 0.1
        far = np.abs(u) >= h
        assert np.allclose(smoothed_check_loss(u[far], tau, h, kernel), rho[far], rtol=0, atol=1e-14)


@pytest.mark.parametrize("kernel", KERNELS)
def test_gradient_is_derivative_and_torch_loss_agrees(kernel):
    torch = pytest.importorskip("torch")
    from relulab.estimators import _losses

    u = np.linspace(-2, 2, 41) + 0.013
    tau, h, eps = 0.8, 0.5, 1e-6
    fd = (smoothed_check_loss(u + eps, tau, h, kernel) - smoothed_check_loss(u - eps, tau, h, kernel)) / (2 * eps)
    assert np.allclose(smoothed_check_grad(u, tau, h, kernel), fd, atol=1e-7)
    ut = torch.tensor(u, requires_grad=True)
    lt = _losses.smoothed_check_loss(torch, ut, tau, h, kernel)
    assert np.allclose(lt.detach().numpy(), smoothed_check_loss(u, tau, h, kernel), rtol=1e-13, atol=1e-14)
    lt.sum().backward()
    assert np.allclose(ut.grad.numpy(), smoothed_check_grad(u, tau, h, kernel), rtol=1e-12, atol=1e-13)


def test_agrees_with_quantes_implementation():
    utils = pytest.importorskip("quantes.utils")
    names = {"gaussian": "Gaussian", "logistic": "Logistic", "uniform": "Uniform", "epanechnikov": "Epanechnikov"}
    for ours, theirs in names.items():
        for u in [-1.0, -0.1, 0.0, 0.2, 2.0]:
            q = utils.smooth_check(np.array([u]), 0.3, 0.5, theirs)
            assert abs(float(smoothed_check_loss(u, 0.3, 0.5, ours)) - q) < 1e-12, (ours, u)


def test_bandwidth_rule():
    n, p, tau = 5000, 4, 0.25
    expect = max(0.01, math.sqrt(tau * (1 - tau)) * ((p + math.log(n)) / n) ** 0.4)
    assert conquer_bandwidth(tau, n, p) == pytest.approx(expect, rel=1e-15)
    assert conquer_bandwidth(0.5, 10**9, 1) == 0.01
    assert conquer_bandwidth(0.5, 3, 50) == pytest.approx(0.5 * 0.5**0.4)   # capped ratio


@pytest.mark.parametrize(
    "call",
    [
        lambda: smoothed_check_loss(0.0, 1.0, 0.1),
        lambda: smoothed_check_loss(0.0, 0.5, 0.0),
        lambda: smoothed_check_loss(0.0, 0.5, 0.1, "cosine"),
        lambda: conquer_bandwidth(0.0, 10, 1),
    ],
)
def test_bad_arguments(call):
    with pytest.raises(RelulabError):
        call()
