"""Causal mechanism reduction: compiled replacements match interventions computed by hand,
affine replacement is exact when the dependence is exactly affine, and the scores behave
as claimed under the rescaling symmetry."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_network

from relulab import Network, RelulabError
from relulab.symmetry import neuron_scores, plan, random_symmetry, replace, rescale


def _intervened(net: Network, X: np.ndarray, k: int, values: dict[int, np.ndarray]) -> np.ndarray:
    """Forward pass with the activations of layer k overwritten (the causal intervention)."""
    H = X
    L = net.n_hidden_layers
    for j in range(L):
        H = np.maximum(H @ net.weights[j].T + net.biases[j], 0.0)
        if j == k:
            H = H.copy()
            for i, v in values.items():
                H[:, i] = v
    Y = H @ net.weights[L].T + net.biases[L]
    if net.skip is not None:
        Y = Y + X @ net.skip[0].T + net.skip[1]
    return Y


def test_affine_replacement_is_exact_when_the_neuron_is_affine_in_the_others():
    rng = np.random.default_rng(0)
    net = random_network(rng, [3, 6, 5, 2])
    X = rng.normal(size=(400, 3))
    Ws = [np.array(W) for W in net.weights]
    bs = [np.array(b) for b in net.biases]
    # make neurons 0, 1 of layer 0 active on all data, and neuron 5 = 2 a0 - 0.5 a1 + 0.25
    bs[0][:2] = 10.0
    Ws[0][5] = 2 * Ws[0][0] - 0.5 * Ws[0][1]
    bs[0][5] = 2 * bs[0][0] - 0.5 * bs[0][1] + 0.25
    net = Network(Ws, bs)
    A = np.maximum(X @ Ws[0].T + bs[0], 0)
    assert np.all(A[:, :2] > 0) and np.all(A[:, 5] > 0)
    r = replace(net, [(0, 5)], by="affine", data=X)
    assert r.network.widths == (5, 5)
    assert r.data_max_deviation < 1e-9
    assert np.allclose(r.network(X), net(X), atol=1e-9)
    al = r.coefficients["0:5"]["alpha"]
    assert np.allclose(al, [2, -0.5, 0, 0, 0], atol=1e-8) and abs(r.coefficients["0:5"]["beta"] - 0.25) < 1e-8
    # a constant replacement of the same neuron is not exact
    assert replace(net, [(0, 5)], by="constant", data=X).data_max_deviation > 1e-3


def test_constant_replacement_equals_the_mean_intervention():
    rng = np.random.default_rng(1)
    net = random_network(rng, [2, 7, 6, 3], skip=True)
    X = rng.normal(size=(300, 2))
    A1 = np.maximum(X @ net.weights[0].T + net.biases[0], 0)
    r = replace(net, [(0, 2), (0, 4)], by="constant", data=X)
    Y = _intervened(net, X, 0, {2: A1[:, 2].mean(), 4: A1[:, 4].mean()})
    assert np.allclose(r.network(X), Y, atol=1e-12)
    assert r.kept == ((0, 1, 3, 5, 6), tuple(range(6)))


def test_two_layer_replacement_uses_downstream_activations_of_the_reduced_network():
    rng = np.random.default_rng(2)
    net = random_network(rng, [2, 6, 6, 1])
    X = rng.normal(size=(200, 2))
    r = replace(net, [(0, 0), (1, 3)], by="constant", data=X)
    # by hand: first replace (0, 0), then measure layer 1 of that network
    a0 = np.maximum(X @ net.weights[0].T + net.biases[0], 0)[:, 0].mean()
    H0 = np.maximum(X @ net.weights[0].T + net.biases[0], 0)
    H0[:, 0] = a0
    a1 = np.maximum(H0 @ net.weights[1].T + net.biases[1], 0)[:, 3].mean()
    H1 = np.maximum(H0 @ net.weights[1].T + net.biases[1], 0)
    H1[:, 3] = a1
    Y = H1 @ net.weights[2].T + net.biases[2]
    assert np.allclose(r.network(X), Y, atol=1e-12)
    assert r.network.widths == (5, 5)


def test_replacing_a_whole_layer_gives_a_constant_network():
    rng = np.random.default_rng(3)
    net = random_network(rng, [2, 3, 4, 2])
    X = rng.normal(size=(100, 2))
    r = replace(net, [(0, 0), (0, 1), (0, 2), (1, 0)], by="affine", data=X)
    assert r.network.n_hidden_layers == 0
    Y = _intervened(net, X, 0, {i: np.maximum(X @ net.weights[0].T + net.biases[0], 0)[:, i].mean()
                                for i in range(3)})
    assert np.allclose(r.network(X), Y, atol=1e-12)
    assert r.replaced[-1] == (1, 0)


def test_scores_and_rescaling_invariance():
    rng = np.random.default_rng(4)
    net = random_network(rng, [3, 10, 8, 2])
    X = rng.normal(size=(500, 3))
    g = random_symmetry(net, 9, spread=2.0)
    # random_symmetry permutes; undo it by matching to compare scores neuron by neuron
    facs = [np.exp(rng.uniform(-2, 2, size=w)) for w in net.widths]
    h = rescale(net, facs)
    for score in ("logit_distortion", "mean_replacement"):
        s_net, s_h = neuron_scores(net, X, score), neuron_scores(h, X, score)
        for a, b in zip(s_net, s_h, strict=True):
            assert np.allclose(a, b, rtol=1e-8, atol=1e-12)
        # and as a multiset under permutation
        for a, b in zip(s_net, neuron_scores(g, X, score), strict=True):
            assert np.allclose(np.sort(a), np.sort(b), rtol=1e-8, atol=1e-12)
    v_net, v_h = neuron_scores(net, X, "variance"), neuron_scores(h, X, "variance")
    for k, (a, b) in enumerate(zip(v_net, v_h, strict=True)):
        assert np.allclose(b, a * facs[k] ** 2)          # VBP scales with c^2
    # for the last hidden layer the first-order logit distortion IS the measured one
    ld = neuron_scores(net, X, "logit_distortion")[-1]
    mr = neuron_scores(net, X, "mean_replacement")[-1]
    assert np.allclose(ld, mr, rtol=1e-9)
    # plan keeps the top neurons per layer
    p = plan(neuron_scores(net, X, "logit_distortion"), 3)
    assert len(p) == (10 - 3) + (8 - 3)
    assert plan([np.array([1.0, 3.0, 2.0])], 0.34) == [(0, 0), (0, 2)]


def test_bad_input_is_reported():
    net = random_network(np.random.default_rng(0), [2, 3, 1])
    X = np.zeros((5, 2))
    with pytest.raises(RelulabError, match="no neuron 7"):
        replace(net, [(0, 7)], data=X)
    with pytest.raises(RelulabError, match="hidden layer 2 does not exist"):
        replace(net, [(2, 0)], data=X)
    with pytest.raises(RelulabError, match="data=X is needed"):
        replace(net, [(0, 0)])
    with pytest.raises(RelulabError, match="'constant' or 'affine'"):
        replace(net, [(0, 0)], by="median", data=X)
    with pytest.raises(RelulabError, match="unknown score"):
        neuron_scores(net, X, "magnitude")
