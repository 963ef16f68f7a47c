"""Conserved quantities of gradient flow: exact symmetry identity, drift shrinking with the step."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from conftest import random_network

from relulab import Network
from relulab.params import (
    conserved_quantities,
    gd_conservation,
    mse_loss_and_grad,
    parameter_vector,
)


def test_conserved_quantities_by_hand():
    net = Network([[[1.0, 2.0], [0.0, -1.0]], [[3.0, 1.0], [1.0, 1.0]]], [[1.0, 2.0], [0.0, 0.0]])
    # neuron 0: 1 + 4 + 1 - (9 + 1) = -4; neuron 1: 0 + 1 + 4 - (1 + 1) = 3
    assert conserved_quantities(net).tolist() == [-4.0, 3.0]
    ex = conserved_quantities(net.exact())
    assert ex.tolist() == [Fraction(-4), Fraction(3)]
    assert conserved_quantities(Network([[[1.0]]], [[0.0]])).size == 0


def test_gradients_equal_torch_autograd(rng):
    torch = pytest.importorskip("torch")
    net = random_network(rng, [3, 4, 3, 2])
    X, Y = rng.normal(size=(11, 3)), rng.normal(size=(11, 2))
    loss, gW, gb = mse_loss_and_grad(net, X, Y)
    params = [torch.tensor(np.array(a), requires_grad=True) for W, b in net.layers for a in (W, b)]
    H = torch.tensor(X)
    for k in range(net.depth):
        H = H @ params[2 * k].T + params[2 * k + 1]
        if k < net.depth - 1:
            H = torch.relu(H)
    t_loss = 0.5 * ((H - torch.tensor(Y)) ** 2).sum() / X.shape[0]
    t_loss.backward()
    assert loss == pytest.approx(t_loss.item(), rel=1e-13)
    for k in range(net.depth):
        np.testing.assert_allclose(gW[k], params[2 * k].grad.numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(gb[k], params[2 * k + 1].grad.numpy(), rtol=1e-12, atol=1e-14)


def test_gradient_is_orthogonal_to_the_rescaling_direction(rng):
    # <u, dL/du> = <v, dL/dv> for every hidden neuron: the derivative of c_j along the flow is 0
    net = random_network(rng, [3, 5, 4, 2])
    X, Y = rng.normal(size=(30, 3)), rng.normal(size=(30, 2))
    _, gW, gb = mse_loss_and_grad(net, X, Y)
    for k in range(net.depth - 1):
        W, b, Wn = net.weights[k], net.biases[k], net.weights[k + 1]
        lhs = (W * gW[k]).sum(axis=1) + b * gb[k]
        rhs = (Wn * gW[k + 1]).sum(axis=0)
        np.testing.assert_allclose(lhs, rhs, rtol=1e-10, atol=1e-13)


def test_drift_bounded_and_shrinking_with_step_size():
    rng = np.random.default_rng(3)
    net = random_network(rng, [2, 6, 6, 1])
    X = rng.uniform(-2, 2, size=(40, 2))
    Y = np.sin(X[:, :1]) * np.cos(X[:, 1:])
    T = 2.0  # same training time for every step size
    runs = [
        gd_conservation(net, X, Y, lr, int(round(T / lr)))[0] for lr in (0.1, 0.05, 0.025, 0.0125)
    ]
    for r in runs:
        assert r.loss_end < r.loss_start
        # the drift obeys the exact second-order bound, and each step's change is
        # eta^2 (|g_u|^2 - |g_v|^2) up to rounding
        assert r.drift <= r.bound * (1 + 1e-9) + 1e-12
        assert r.identity_error <= 1e-12 * (1 + np.abs(r.c_start).max())
        assert r.time == pytest.approx(T)
    drifts = [r.drift for r in runs]
    bounds = [r.bound for r in runs]
    for a, b in zip(drifts, drifts[1:], strict=False):
        assert b < 0.75 * a  # halving the step size shrinks the drift (first order in eta)
    for a, b in zip(bounds, bounds[1:], strict=False):
        assert b < 0.75 * a
    # while the parameters themselves moved by far more than the drift
    _, trained = gd_conservation(net, X, Y, 0.0125, int(T / 0.0125))
    moved = np.abs(parameter_vector(trained) - parameter_vector(net)).max()
    assert moved > 20 * drifts[-1]


def test_bad_training_data_and_step_size_are_one_clear_error():
    from relulab.errors import RelulabError

    net = Network([[[1.0, 2.0], [3.0, -1.0]], [[1.0, -2.0]]], [[0.0, 1.0], [0.25]])
    X = [[1.0, 2.0]]
    with pytest.raises(RelulabError, match=r"Y has shape \(1, 3\)"):
        gd_conservation(net, X, [[1.0, 2.0, 3.0]], lr=0.1, steps=2)
    with pytest.raises(RelulabError, match="finite"):
        gd_conservation(net, [[np.nan, 0.0]], [[1.0]], lr=0.1, steps=2)
    for lr in (1e200, float("nan"), 0.0):
        with pytest.raises(RelulabError, match="lr"):
            gd_conservation(net, X, [[1.0]], lr=lr, steps=2)
    with np.errstate(over="ignore", invalid="ignore"), pytest.raises(RelulabError, match="diverged"):
        gd_conservation(net, X, [[1.0]], lr=1e40, steps=50)
