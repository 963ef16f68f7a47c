"""Functional dimension: the realisation Jacobian against autograd and finite differences; the
rank #params - #hidden for widths >= 2 (exactly, in rational arithmetic); the drops."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from conftest import random_network

from relulab import Network
from relulab.params import (
    exact_rank,
    functional_dimension,
    network_from_parameters,
    parameter_vector,
    realization_jacobian,
    rescaling_bound,
    switching_network,
)


def _torch_forward(theta, dims, X, skip):
    import torch

    L = len(dims) - 1
    off = 0
    H = X
    for k in range(L):
        n, p = dims[k + 1], dims[k]
        W = theta[off : off + n * p].reshape(n, p)
        off += n * p
        b = theta[off : off + n]
        off += n
        H = H @ W.T + b
        if k < L - 1:
            H = torch.relu(H)
    if skip:
        S = theta[off : off + dims[-1] * dims[0]].reshape(dims[-1], dims[0])
        s = theta[off + dims[-1] * dims[0] :]
        H = H + X @ S.T + s
    return H.reshape(-1)


@pytest.mark.parametrize("dims", [[2, 3, 1], [3, 4, 2], [2, 3, 3, 2], [1, 2, 2, 2, 1]])
@pytest.mark.parametrize("skip", [False, True])
def test_realization_jacobian_equals_autograd(rng, dims, skip):
    torch = pytest.importorskip("torch")
    net = random_network(rng, dims, skip=skip)
    X = rng.normal(size=(7, dims[0])) * 2
    J = realization_jacobian(net, X)
    theta = torch.tensor(parameter_vector(net), dtype=torch.float64)
    Xt = torch.tensor(X)
    out = _torch_forward(theta, tuple(dims), Xt, skip)
    np.testing.assert_allclose(out.numpy(), net(X).reshape(-1), rtol=1e-12, atol=1e-13)
    Jt = torch.func.jacrev(lambda t: _torch_forward(t, tuple(dims), Xt, skip))(theta).numpy()
    np.testing.assert_allclose(J, Jt, rtol=1e-12, atol=1e-13)


def test_realization_jacobian_equals_finite_differences(rng):
    net = random_network(rng, [2, 3, 2, 2], skip=True)
    X = rng.normal(size=(5, 2))
    J = realization_jacobian(net, X)
    theta = parameter_vector(net)
    h = 1e-6
    for e in range(theta.size):
        tp, tm = theta.copy(), theta.copy()
        tp[e] += h
        tm[e] -= h
        fd = (network_from_parameters(net, tp)(X) - network_from_parameters(net, tm)(X)).reshape(
            -1
        ) / (2 * h)
        np.testing.assert_allclose(J[:, e], fd, rtol=1e-5, atol=1e-7)


def test_exact_jacobian_matches_float(rng):
    net = random_network(rng, [2, 3, 2, 1])
    X = rng.normal(size=(6, 2))
    Je = realization_jacobian(net.exact(), X)
    assert all(isinstance(v, Fraction) for v in Je.reshape(-1))
    np.testing.assert_allclose(
        Je.astype(float), realization_jacobian(net, X), rtol=1e-13, atol=1e-14
    )


def _rounded(net: Network, den: int = 1024) -> Network:
    """The network with every parameter rounded to a multiple of 1/den, as Fractions."""
    theta = parameter_vector(net)
    return network_from_parameters(
        net, np.array([Fraction(round(float(v) * den), den) for v in theta], dtype=object)
    )


def _rational_points(rng, n: int, d: int, scale: int = 3) -> np.ndarray:
    """Random rational points k/16 in [-scale, scale]^d."""
    ints = rng.integers(-16 * scale, 16 * scale + 1, size=(n, d))
    return np.array([[Fraction(int(v), 16) for v in row] for row in ints], dtype=object)


# Architectures with input and hidden widths >= 2 (Grillo and Montufar's setting), with seeds
# of switching_network whose draw lies in the open set where the bound is attained.
GENERIC = [
    ([2, 2, 1], 0),
    ([2, 3, 1], 0),
    ([3, 3, 2], 0),
    ([2, 3, 3, 1], 0),
    ([2, 2, 2, 1], 0),
    ([3, 4, 4, 2], 0),
]


@pytest.mark.parametrize("dims,seed", GENERIC)
def test_functional_dimension_is_params_minus_hidden_exactly(dims, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(400, dims[0])) * 1.5
    net = switching_network(dims, X, seed=seed)
    bound = net.n_params - net.n_neurons
    assert rescaling_bound(net) == bound
    fd = functional_dimension(net, X)
    assert fd.rank == bound and fd.dead_neurons == 0 and fd.boundary_points == 0
    assert fd.numerical.gap > 1e6
    # exactly, in rational arithmetic, on rational points k/16
    # (parameters rounded to multiples of 1/1024: still in the open set)
    fde = functional_dimension(_rounded(net), _rational_points(rng, 150, dims[0]), exact=True)
    assert fde.exact_rank == bound == fde.rank
    # an open set: a small perturbation of the parameters keeps the rank
    theta = parameter_vector(net)
    net2 = network_from_parameters(net, theta + 1e-4 * rng.normal(size=theta.size))
    assert functional_dimension(net2, X).rank == bound


def test_rank_never_exceeds_the_rescaling_bound(rng):
    for dims in ([2, 2, 1], [2, 3, 2], [3, 2, 2, 1], [2, 4, 3, 2]):
        for _ in range(5):
            net = random_network(rng, dims, skip=bool(rng.integers(2)))
            X = rng.normal(size=(300, dims[0])) * 3
            fd = functional_dimension(net, X)
            assert (
                fd.rank <= fd.bound == net.n_params - net.n_neurons - (dims[-1] if net.skip else 0)
            )


@pytest.mark.parametrize("layer", [0, 1])
def test_dead_neuron_drops_by_fan_in_plus_fan_out(layer):
    # a generic 3-4-4-2 network with one extra neuron that never fires: same function,
    # architecture 3-5-4-2 or 3-4-5-2, and its functional dimension is that of the small one
    dims = [3, 4, 4, 2]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3)) * 1.5
    small = switching_network(dims, X, seed=0)
    assert functional_dimension(small, X).rank == rescaling_bound(small)
    Ws = [np.array(W) for W in small.weights]
    bs = [np.array(b) for b in small.biases]
    Ws[layer] = np.vstack([Ws[layer], rng.normal(size=(1, dims[layer]))])
    bs[layer] = np.append(bs[layer], -1e3)  # never fires on the batch
    Ws[layer + 1] = np.hstack([Ws[layer + 1], rng.normal(size=(dims[layer + 2], 1))])
    big = Network(Ws, bs)
    assert np.allclose(big(X), small(X))
    fd = functional_dimension(_rounded(big), _rational_points(rng, 150, 3), exact=True)
    assert fd.dead_neurons == 1
    drop = dims[layer] + dims[layer + 2]  # its fan-in + bias + fan-out, less its own rescaling
    assert fd.rank == fd.exact_rank == rescaling_bound(big) - drop == rescaling_bound(small)


def test_too_few_points_cap_the_rank():
    dims = [3, 4, 4, 2]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3)) * 1.5
    net = switching_network(dims, X, seed=0)
    for n in (1, 3, 8, 15):
        fd = functional_dimension(_rounded(net), X[:n], exact=True)
        assert fd.exact_rank == fd.rank <= n * dims[-1]
        assert fd.rank < fd.bound


def test_exact_rank_helper():
    M = np.array([[1, 2, 3], [2, 4, 6], [1, 0, 1]], dtype=object)
    assert exact_rank(M) == 2
    assert exact_rank(np.zeros((3, 2), dtype=object)) == 0
    # a nearly singular float matrix is full rank exactly
    A = np.array([[1.0, 1.0], [1.0, 1.0 + 2**-40]])
    assert exact_rank(A) == 2


def test_exact_rank_reports_progress_to_the_end():
    from fractions import Fraction

    from relulab.params._rank import exact_rank

    M = [[Fraction(i * j + 1, j + 1) for j in range(6)] for i in range(4)]
    seen = []
    r = exact_rank(M, progress=lambda done, total: seen.append((done, total)))
    assert r == 2 and seen[0] == (0, 6) and all(t == 6 for _, t in seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_bad_points_are_one_clear_error():
    from relulab.errors import RelulabError

    net = Network([[[1.0, 2.0], [3.0, -1.0]], [[1.0, -2.0]]], [[0.0, 1.0], [0.25]])
    for fn in (lambda X: functional_dimension(net, X), lambda X: functional_dimension(net, X, exact=True),
               lambda X: realization_jacobian(net, X)):
        for bad in ([[np.nan, 0.0]], [[1.0, 2.0], [np.inf, 0.0]]):
            with pytest.raises(RelulabError, match="contains NaN or infinite"):
                fn(bad)


def test_rescaling_bound_of_an_affine_network_with_a_skip_is_its_rank():
    """No hidden layer: the skip's weights duplicate the layer's, so the bound is the
    dimension of the affine maps, which the Jacobian's rank reaches."""
    rng = np.random.default_rng(0)
    aff = Network([rng.normal(size=(2, 3))], [rng.normal(size=2)], skip=(rng.normal(size=(2, 3)), rng.normal(size=2)))
    fd = functional_dimension(aff, rng.normal(size=(20, 3)))
    assert rescaling_bound(aff) == fd.rank == 8
