"""Network: forward passes, local affine maps, algebra, exact mode, validation."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from conftest import random_network

from relulab import Network, NetworkError


def test_exact_forward_matches_hand_computation():
    # f(x) = 2*relu(x1 - x2 + 1/3) - relu(x2/2) + 1/7
    net = Network(
        [[[1, -1], [0, Fraction(1, 2)]], [[2, -1]]],
        [[Fraction(1, 3), 0], [Fraction(1, 7)]],
    )
    assert net.is_exact
    x = [Fraction(1, 5), Fraction(-3, 4)]
    # hidden: 1/5 + 3/4 + 1/3 = 77/60 ; relu(-3/8) = 0 -> 2*77/60 + 1/7 = 77/30 + 1/7
    assert net(x)[0] == Fraction(77, 30) + Fraction(1, 7)
    x2 = [Fraction(-2), Fraction(2)]
    # hidden: -2 - 2 + 1/3 < 0 -> 0 ; relu(1) = 1 -> -1 + 1/7
    assert net(x2)[0] == Fraction(-6, 7)


def test_exact_copy_is_the_binary_value():
    net = Network([[[0.1]]], [[0.0]]).exact()
    assert net.weights[0][0, 0] == Fraction(0.1)
    assert net.float() == Network([[[0.1]]], [[0.0]])


@pytest.mark.parametrize("skip", [False, True])
def test_local_affine_reproduces_forward(rng, skip):
    net = random_network(rng, [3, 8, 7, 2], skip=skip)
    X = rng.normal(size=(50, 3))
    Y = net(X)
    for x, y in zip(X, Y, strict=True):
        A, c = net.local_affine(x)
        assert np.allclose(A @ x + c, y, atol=1e-12)
        # finite differences inside the region agree with the Jacobian
        eps = 1e-7
        J = np.stack([(net(x + eps * e) - net(x - eps * e)) / (2 * eps) for e in np.eye(3)], axis=1)
        assert np.allclose(J, net.jacobian(x), atol=1e-5)


def test_local_affine_exact():
    rng = np.random.default_rng(3)
    net = random_network(rng, [2, 5, 1]).exact()
    x = np.array([Fraction(1, 3), Fraction(-2, 7)], dtype=object)
    A, c = net.local_affine(x)
    assert (A @ x + c)[0] == net(x)[0]


@pytest.mark.parametrize("skip_f,skip_g", [(False, False), (True, False), (False, True), (True, True)])
def test_algebra_agrees_with_forward_passes(rng, skip_f, skip_g):
    f = random_network(rng, [3, 6, 5, 2], skip=skip_f)
    g = random_network(rng, [3, 4, 2], skip=skip_g)
    h = random_network(rng, [2, 5, 3], skip=skip_g)
    X = rng.normal(size=(200, 3))
    assert np.allclose((f + g)(X), f(X) + g(X), atol=1e-12)
    assert np.allclose((f - g)(X), f(X) - g(X), atol=1e-12)
    assert np.allclose((2.5 * f)(X), 2.5 * f(X), atol=1e-12)
    assert np.allclose(f.concat(g)(X), np.hstack([f(X), g(X)]), atol=1e-12)
    assert np.allclose(h.compose(f)(X), h(f(X)), atol=1e-12)
    assert np.allclose((h @ g)(X), h(g(X)), atol=1e-12)
    X2 = rng.normal(size=(200, 3))
    assert np.allclose(f.parallel(g)(np.hstack([X, X2])), np.hstack([f(X), g(X2)]), atol=1e-12)
    assert np.allclose(f.without_skip()(X), f(X), atol=1e-12)
    assert f.without_skip().skip is None
    d = f.deepen(5)
    assert d.n_hidden_layers == 5
    assert np.allclose(d(X), f(X), atol=1e-12)


def test_algebra_exact():
    rng = np.random.default_rng(1)
    f = random_network(rng, [2, 3, 1], skip=True).exact()
    g = random_network(rng, [2, 4, 4, 1]).exact()
    X = np.array([[Fraction(1, 3), Fraction(2, 5)], [Fraction(-7, 3), Fraction(1, 9)]], dtype=object)
    assert np.all((f + g)(X) == f(X) + g(X))
    assert np.all(f.compose(Network([[[1, 0], [0, 1]]], [[0, 0]]).exact()).float()(X.astype(float))
                  == f.float()(X.astype(float)))


def test_counts_and_equality(rng):
    net = random_network(rng, [4, 10, 6, 3])
    assert net.depth == 3 and net.n_hidden_layers == 2
    assert net.widths == (10, 6)
    assert net.n_neurons == 16
    assert net.n_params == 4 * 10 + 10 + 10 * 6 + 6 + 6 * 3 + 3
    assert net == Network(net.weights, net.biases)
    other = Network(net.weights[:-1] + (net.weights[-1] * 2,), net.biases)
    assert net != other


def test_activation_pattern_matches_preactivations(rng):
    net = random_network(rng, [2, 5, 4, 1])
    X = rng.normal(size=(10, 2))
    pats = net.activation_pattern(X)
    Z = net.preactivations(X)
    assert [p.shape for p in pats] == [(10, 5), (10, 4)]
    assert all(np.array_equal(p, z > 0) for p, z in zip(pats, Z, strict=True))
    assert net.pattern_vector(X).shape == (10, 9)


@pytest.mark.parametrize(
    "weights,biases,message",
    [
        ([np.ones((3, 2)), np.ones((1, 4))], [np.zeros(3), np.zeros(1)], "layer 2: weight takes 4 inputs"),
        ([np.ones((3, 2))], [np.zeros(2)], "layer 1: bias shape"),
        ([np.array([[1.0, np.nan]])], [np.zeros(1)], "layer 1: weight contains NaN"),
        ([np.ones((2, 2)), np.ones((1, 2))], [np.zeros(2), [np.inf]], "layer 2: bias contains NaN"),
        ([], [], "at least one affine layer"),
    ],
)
def test_validation_names_the_layer(weights, biases, message):
    with pytest.raises(NetworkError, match=message):
        Network(weights, biases)


def test_immutable(rng):
    net = random_network(rng, [2, 3, 1])
    with pytest.raises(ValueError):
        net.weights[0][0, 0] = 5.0


def test_wrong_input_shape(rng):
    net = random_network(rng, [2, 3, 1])
    with pytest.raises(NetworkError, match="takes 2 inputs"):
        net(np.zeros((4, 3)))


def test_overflowing_and_odd_numbers_get_relulab_errors_naming_the_place():
    # 10**400 raised a bare OverflowError from Network, Box, Polytope, OutputConstraint, the
    # forward pass and net * s; an exact network with NaN said "entry 0" without its layer;
    # numpy float32 scalars had "no exact rational value"
    from fractions import Fraction

    from relulab import Box, Polytope
    from relulab.errors import RelulabError
    from relulab.spec import OutputConstraint

    net = Network([[[1.0]]], [[0.0]])
    calls = {
        "box upper bound": lambda: Box([0], [10**400]),
        "polytope matrix A": lambda: Polytope([[10**400]], [1.0]),
        "polytope right-hand side b": lambda: Polytope([[1.0]], [10**400]),
        "output constraint": lambda: OutputConstraint(np.array([[1.0]]), [10**400]),
        "input": lambda: net([10**400]),
        "cannot scale a float64 network": lambda: net * 10**400,
        "cannot scale an exact network by nan": lambda: net.exact() * float("nan"),
        "layer 2 bias: entry 0": lambda: Network([[[1.0]], [[1.0]]], [[0.0], [float("nan")]], exact=True),
    }
    for where, call in calls.items():
        with pytest.raises(RelulabError, match=where):
            call()
    e = Network([[[np.float32(0.5)]]], [[np.float16(0.25)]], exact=True)
    assert e([np.float32(0.5)])[0] == Fraction(1, 2)
