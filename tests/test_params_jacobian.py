"""The sparse path-lifting Jacobian against finite differences and torch autograd; its rank."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_network

from relulab import Network
from relulab.params import (
    exact_rank,
    network_from_parameters,
    parameter_names,
    parameter_vector,
    path_lifting,
    path_lifting_jacobian,
    path_lifting_jacobian_dense,
    path_lifting_rank,
)

ARCHS = [[1, 1], [2, 3], [2, 3, 1], [3, 2, 2], [2, 3, 2, 2], [1, 2, 3, 2, 1], [3, 3, 3, 3]]


def torch_path_lifting(theta, dims, skip):
    """The path-lifting in torch, same order as relulab's, written from the definition."""
    L = len(dims) - 1
    off = 0
    Ws, bs = [], []
    for k in range(L):
        n, p = dims[k + 1], dims[k]
        Ws.append(theta[off : off + n * p].reshape(n, p))
        off += n * p
        bs.append(theta[off : off + n])
        off += n
    if skip:
        S = theta[off : off + dims[-1] * dims[0]].reshape(dims[-1], dims[0])
        s = theta[off + dims[-1] * dims[0] :]
    blocks = []
    A = Ws[0].T
    for W in Ws[1:]:
        A = A.unsqueeze(-1) * W.T
    blocks.append(A.reshape(-1))
    for k in range(1, L + 1):
        B = bs[k - 1] + s if (k == L and skip) else bs[k - 1]
        for W in Ws[k:]:
            B = B.unsqueeze(-1) * W.T
        blocks.append(B.reshape(-1))
    if skip:
        blocks.append(S.T.reshape(-1))
    import torch

    return torch.cat(blocks)


def autograd_jacobian(net: Network) -> np.ndarray:
    torch = pytest.importorskip("torch")
    dims = (net.input_dim, *net.widths, net.output_dim)
    theta = torch.tensor(parameter_vector(net).astype(float), dtype=torch.float64)
    phi = torch_path_lifting(theta, dims, net.skip is not None)
    np.testing.assert_allclose(
        phi.numpy(), path_lifting(net).values.astype(float), rtol=1e-12, atol=1e-14
    )
    J = torch.func.jacrev(lambda t: torch_path_lifting(t, dims, net.skip is not None))(theta)
    return J.numpy()


@pytest.mark.parametrize("dims", ARCHS)
@pytest.mark.parametrize("skip", [False, True])
def test_jacobian_equals_autograd_and_rank_agrees(rng, dims, skip):
    net = random_network(rng, dims, skip=skip)
    J = path_lifting_jacobian(net)
    Jt = autograd_jacobian(net)
    assert J.shape == Jt.shape
    np.testing.assert_allclose(J.toarray(), Jt, rtol=1e-12, atol=1e-14)
    # sparsity: a path has one nonzero per weight on it (L for an input path, L - k + 1 for a
    # bias path from layer k, 1 for a skip path, 2 for the output bias with a skip)
    L, d, m = net.depth, dims[0], dims[-1]
    nnz = L * int(np.prod(dims)) + sum(
        (L - k + 1) * int(np.prod(dims[k:])) for k in range(1, L + 1)
    )
    if skip:
        nnz += d * m + m
    assert J.nnz == nnz == np.count_nonzero(Jt)
    r_torch = np.linalg.matrix_rank(Jt)
    info = path_lifting_rank(net)
    assert info.rank == r_torch
    # generic parameters: one kernel direction per hidden neuron (its rescaling), and with a
    # skip the offset s duplicates the output bias
    expected = net.n_params - net.n_neurons - (net.output_dim if skip else 0)
    assert info.rank == expected
    assert info.gap > 1e6


@pytest.mark.parametrize("dims", [[2, 3, 1], [2, 2, 2, 1]])
def test_jacobian_equals_finite_differences(rng, dims):
    net = random_network(rng, dims, skip=True)
    theta = parameter_vector(net)
    J = path_lifting_jacobian(net).toarray()
    h = 1e-6
    for e in range(theta.size):
        tp, tm = theta.copy(), theta.copy()
        tp[e] += h
        tm[e] -= h
        fd = (
            path_lifting(network_from_parameters(net, tp)).values
            - path_lifting(network_from_parameters(net, tm)).values
        ) / (2 * h)
        np.testing.assert_allclose(
            J[:, e], fd, rtol=1e-6, atol=1e-8, err_msg=parameter_names(net)[e]
        )


def test_exact_jacobian_and_exact_rank(rng):
    net = random_network(rng, [2, 3, 2, 1]).exact()
    Jd = path_lifting_jacobian_dense(net)
    np.testing.assert_allclose(path_lifting_jacobian(net).toarray(), Jd.astype(float), rtol=1e-15)
    info = path_lifting_rank(net)
    assert info.method == "exact"
    assert info.rank == exact_rank(Jd) == net.n_params - net.n_neurons
    assert path_lifting_rank(net.float()).rank == info.rank


def test_rank_drops_with_a_zero_neuron(rng):
    # a hidden neuron with all weights (in and out) zero: its n_in + 1 + n_out parameters
    # no longer move the path-lifting to first order except along ... none of them
    net = random_network(rng, [3, 4, 2])
    W1, b1, W2 = np.array(net.weights[0]), np.array(net.biases[0]), np.array(net.weights[1])
    W1[0], b1[0], W2[:, 0] = 0.0, 0.0, 0.0
    net0 = Network([W1, W2], [b1, net.biases[1]])
    J = path_lifting_jacobian(net0).toarray()
    assert path_lifting_rank(net0).rank == np.linalg.matrix_rank(J)
    # the zero neuron's paths have products of >= 2 zero factors: zero gradient everywhere,
    # and the other neurons keep their generic rank
    assert path_lifting_rank(net0).rank == (net.n_params - (3 + 1 + 2)) - (net.n_neurons - 1)


def test_parameter_vector_round_trip(rng):
    net = random_network(rng, [3, 4, 2], skip=True)
    theta = parameter_vector(net)
    assert len(theta) == net.n_params == len(parameter_names(net))
    assert network_from_parameters(net, theta) == net
    ex = net.exact()
    assert network_from_parameters(ex, parameter_vector(ex)) == ex


def test_jacobian_of_wide_deep_network_is_sparse_and_consistent(rng):
    # bigger than anything dense: check a sample of rows against the product rule
    net = random_network(rng, [4, 24, 24, 24, 2])
    J = path_lifting_jacobian(net)
    pl_vals = path_lifting(net).values
    theta = parameter_vector(net)
    assert J.shape == (pl_vals.size, net.n_params)
    rows = rng.choice(J.shape[0], size=200, replace=False)
    Jr = J[rows]
    for r, row in zip(rows, Jr, strict=True):
        # Euler: sum_e theta_e dphi/dtheta_e = (path length) * phi
        assert row.nnz in (1, 2, 3, 4)
        assert row @ theta == pytest.approx(row.nnz * pl_vals[r], rel=1e-9, abs=1e-12)
