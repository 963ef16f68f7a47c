"""The closed-form finite-width variance of the depth-1 empirical NTK (ntk_fluctuation)
against quadrature, Monte Carlo over single neurons and over whole random networks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad

from relulab.dynamics import (
    KernelError,
    arccos_moment2,
    empirical_ntk,
    ntk,
    ntk_fluctuation,
    random_ntk_network,
)


@pytest.mark.parametrize("u", [-0.95, -0.4, 0.0, 0.3, 0.8, 0.999])
def test_arccos_moment2_against_quadrature(u):
    """E[relu(a)^2 relu(b)^2] in polar coordinates: a = r cos(phi), b = r cos(phi - theta);
    the radial integral int r^5 exp(-r^2/2) dr = 8, so the moment is
    (8 / 2 pi) int over {cos phi > 0, cos(phi - theta) > 0} of cos^2 phi cos^2(phi - theta)."""
    th = np.arccos(u)
    # the arc where both cosines are positive: phi in (theta - pi/2, pi/2)
    val = quad(lambda p: np.cos(p) ** 2 * np.cos(p - th) ** 2, th - np.pi / 2, np.pi / 2, epsabs=1e-13)[0]
    assert abs(float(arccos_moment2(u)) - 8 / (2 * np.pi) * val) < 1e-10


def _neuron_terms(rng, x, z, beta, n):
    """n independent draws of one neuron's share c(x, z) of the depth-1 NTK, straight from
    the gradients: readout 2 relu relu, first layer 2 v^2 step step (x.z/d + beta)."""
    d = x.size
    W = rng.standard_normal((n, d)) / np.sqrt(d)
    b = np.sqrt(beta) * rng.standard_normal(n)
    v = rng.standard_normal(n)
    gx, gz = W @ x + b, W @ z + b
    return 2 * np.maximum(gx, 0) * np.maximum(gz, 0) + 2 * v * v * (gx > 0) * (gz > 0) * (x @ z / d + beta)


@pytest.mark.parametrize("beta", [0.0, 0.4])
def test_fluctuation_against_single_neuron_monte_carlo(beta):
    rng = np.random.default_rng(11)
    X = np.array([[1.0, -0.5, 2.0], [0.3, 1.2, 0.7], [-1.0, 0.2, 0.1]])
    V = ntk_fluctuation(X, bias_var=beta)
    K = ntk(X, depth=1, bias_var=beta)
    for i, j in ((0, 0), (0, 1), (1, 2), (0, 2)):
        c = _neuron_terms(rng, X[i], X[j], beta, 10**6).reshape(100, -1)
        # the mean is the NTK (less the readout bias); the variance, by batch means with its standard error
        assert abs(c.mean() + beta - K[i, j]) < 5 * c.std() / 1e3
        vb = c.var(axis=1, ddof=1)
        assert abs(vb.mean() - V[i, j]) < 5 * vb.std(ddof=1) / 10, (i, j, vb.mean(), V[i, j])


def test_expected_frobenius_error_of_random_networks():
    """E ||K_n - K||_F^2 = sum V / n at a small width (exact, not asymptotic)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(5, 4))
    K, V = ntk(X, depth=1), ntk_fluctuation(X)
    n = 8
    sq = np.array([np.sum((empirical_ntk(net, X, scales=sc) - K) ** 2)
                   for net, sc in (random_ntk_network(4, n, 1, rng=rng) for _ in range(4000))])
    assert abs(sq.mean() - V.sum() / n) < 5 * sq.std(ddof=1) / np.sqrt(sq.size)


def test_fluctuation_edge_cases():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    V = ntk_fluctuation(X)
    assert np.all(V[0] == 0) and np.all(V[:, 0] == 0)  # g = 0 at the origin: no gradient at all
    assert V[1, 2] == V[1, 1] == V[2, 2] > 0  # identical inputs share the exact diagonal value
    assert ntk_fluctuation(X[1:], X[:2]).shape == (2, 2)
    with pytest.raises(KernelError):
        ntk_fluctuation(X, bias_var=-1.0)
    with pytest.raises(KernelError):
        ntk_fluctuation([[np.nan, 1.0]])
