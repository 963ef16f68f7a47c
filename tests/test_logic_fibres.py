"""Bottleneck fibres and identifiability, against relulab's general equivalence check,
the exact region comparison and the numerical functional dimension."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

from relulab import Network
from relulab.logic import equal_on_cube
from relulab.logic.fibres import fibre, fibre_equivalent, fibre_normal_form
from relulab.logic.identifiability import identifiability
from relulab.params import functional_dimension
from relulab.symmetry import random_symmetry


def bottleneck(rng, d=2, n1=4, n2=3, crossing=True) -> Network:
    """Random d -> n1 -> n2 -> 1 network with small rational weights; with ``crossing``
    the first-layer hyperplanes pass through the unit cube."""
    def q(shape):
        return np.array([[F(int(v), 4) for v in row] for row in rng.integers(-8, 9, shape)], dtype=object)

    W1, W2, W3 = q((n1, d)), q((n2, n1)), q((1, n2))
    if crossing:
        c = [[F(int(v), 8) for v in rng.integers(2, 7, d)] for _ in range(n1)]
        b1 = np.array([-sum(w * ci for w, ci in zip(W1[i], c[i], strict=False)) for i in range(n1)], dtype=object)
    else:
        b1 = q((1, n1))[0]
    b2 = q((1, n2))[0] / 4
    return Network([W1, W2, W3], [b1, b2, np.array([F(1, 2)], dtype=object)], exact=True)


def test_fibre_test_agrees_with_the_general_checks():
    rng = np.random.default_rng(0)
    for t in range(6):
        f = bottleneck(rng)
        g = random_symmetry(f, t)
        r = fibre_equivalent(f, g)
        assert r.status == "equal"
        assert equal_on_cube(f, g).status == "equal"
        h = bottleneck(rng)
        r = fibre_equivalent(f, h)
        if r.status == "different":
            x = np.array(r.witness, dtype=object)
            assert f(x)[0] != h(x)[0]
        assert r.status != "equal" or equal_on_cube(f, h).status == "equal"


def test_stably_active_second_layer_trades_bias_with_the_output():
    # neuron 2 of layer 2 is always active on the cube: moving its bias into the output
    # bias (keeping it active) gives a different parameter with the same function.
    W1 = [[1, -1], [1, 1]]
    b1 = [0, -1]
    W2 = [[1, -1], [1, 1]]
    f = Network([W1, W2, [[1, 2]]], [b1, [0, 3], [0]]).exact()
    g = Network([W1, W2, [[1, 2]]], [b1, [0, 4], [-2]]).exact()
    assert fibre(f).stable == (1,)
    assert fibre_normal_form(f) == fibre_normal_form(g)
    assert fibre_equivalent(f, g).status == "equal"
    assert equal_on_cube(f, g).status == "equal"
    # the normal form must not merge a genuinely different bias
    h = Network([W1, W2, [[1, 2]]], [b1, [F(-1, 2), 3], [0]]).exact()
    assert fibre_equivalent(f, h).status == "different"


def test_fibre_dimension_is_a_lower_bound_of_the_measured_one():
    rng = np.random.default_rng(1)
    for _ in range(5):
        f = bottleneck(rng)
        fd = functional_dimension(f.float(), rng.uniform(0, 1, size=(500, 2)))
        assert fibre(f).dimension <= f.n_params - fd.rank


def test_identifiability_open_set_and_hidden_redundancy():
    rng = np.random.default_rng(2)
    ok = 0
    for _ in range(6):
        W1 = rng.normal(size=(3, 2))
        b1 = -(W1 * rng.uniform(0.2, 0.8, size=(3, 2))).sum(1)
        W2 = rng.normal(size=(2, 3))
        H = np.maximum(rng.uniform(0, 1, (200, 2)) @ W1.T + b1, 0)
        net = Network([W1, W2, rng.normal(size=(1, 2))], [b1, -(H @ W2.T).mean(0), [0.0]])
        r = identifiability(net)
        ok += r.status == "locally identifiable"
        assert r.status in ("locally identifiable", "not identifiable")
        if r.status == "locally identifiable":
            assert r.rank == r.bound and not r.invisible
    assert ok >= 1  # widths >= 2: identifiable parameters exist (an open set)
    # a neuron that never bends inside the cube is an invisible, hidden redundancy
    net = Network([[[1.0, 1.0], [1.0, -1.0], [1.0, 0.0]], [[1.0, 1.0, 1.0]]], [[-0.5, 0.0, 5.0], [0.0]])
    r = identifiability(net)
    assert r.status == "not identifiable" and (0, 2) in r.invisible


def _split_neuron(net: Network, i: int, t: F) -> Network:
    """The same function with first-layer neuron ``i`` split into two positively rescaled
    copies: relu(z) = t relu(z) + (1 - t) relu(z) (``0 < t < 1``), the second copy's row
    doubled and its outgoing weights halved."""
    W1, W2, W3 = (np.array(w, dtype=object) for w in net.weights)
    b1, b2, b3 = (np.array(b, dtype=object) for b in net.biases)
    W1n = np.vstack([W1, 2 * W1[i:i + 1]])
    b1n = np.concatenate([b1, 2 * b1[i:i + 1]])
    W2n = np.hstack([W2, W2[:, i:i + 1] * (1 - t) / 2])
    W2n[:, i] = W2[:, i] * t
    return Network([W1n, W2n, W3], [b1n, b2, b3], exact=True)


def test_wide_pairs_equal_up_to_symmetry_and_splitting_and_never_falsely_equal():
    rng = np.random.default_rng(7)
    for n1 in (16, 64):
        f = bottleneck(rng, d=3, n1=n1, n2=n1 // 2)
        g = random_symmetry(_split_neuron(f, int(rng.integers(n1)), F(1, 3)), 11)
        assert fibre_equivalent(f, g).status == "equal"
        # exact agreement on random rational points confirms the verdict
        X = np.array([[F(int(v), 97) for v in rng.integers(0, 98, 3)] for _ in range(50)], dtype=object)
        assert all(a == b for a, b in zip(f(X)[:, 0], g(X)[:, 0], strict=True))
        # one changed weight of a live second-layer neuron: never "equal"
        W2 = np.array(f.weights[1], dtype=object)
        W2[0, 0] += F(1, 8)
        h = Network([f.weights[0], W2, f.weights[2]], list(f.biases), exact=True)
        r = fibre_equivalent(f, h)
        assert r.status != "equal" or all(
            a == b for a, b in zip(f(X)[:, 0], h(X)[:, 0], strict=True))
        if r.status == "different":
            x = np.array(r.witness, dtype=object)
            assert f(x)[0] != h(x)[0]


def test_fibre_dimension_stays_a_lower_bound_with_dead_neurons_in_both_layers():
    # a weight from a dead first-layer neuron into a dead second-layer neuron is one free
    # coordinate, not two: counted twice, the "lower bound" exceeded n_params - rank
    rng = np.random.default_rng(7)
    both = 0
    for _ in range(120):
        f = bottleneck(rng, d=3, n1=3, n2=3, crossing=False)
        r = fibre(f)
        if not ({layer for layer, _ in r.dead} == {0, 1}):
            continue
        both += 1
        fd = functional_dimension(f, rng.uniform(0, 1, size=(400, 3)), exact=True)
        assert r.dimension <= f.n_params - fd.rank
        assert r.predicted_functional_dimension >= fd.rank
    assert both >= 5


def test_logic_arguments_get_one_error_naming_the_function():
    from relulab.errors import RelulabError
    from relulab.logic import normal_form, to_formula
    from relulab.logic.truncated import truncated_affine

    rng = np.random.default_rng(3)
    f = bottleneck(rng)
    g3 = bottleneck(rng, d=3)
    cases = [
        (lambda: identifiability("abc"), "identifiability"),
        (lambda: fibre(f, ([0, 0, 0], [1, 1, 1])), "fibre"),
        (lambda: fibre_equivalent(f, g3), "fibre_equivalent"),
        (lambda: fibre_equivalent(f, f, n_samples=-1), "fibre_equivalent"),
        (lambda: normal_form(f), "normal_form"),
        (lambda: truncated_affine([float("nan")], 0), "truncated_affine"),
        (lambda: truncated_affine([F(1, 2)], 0, algebra="foo"), "truncated_affine"),
        (lambda: equal_on_cube(f, f, ([0, 0, 0], [1, 1, 1])), "equal_on_cube"),
    ]
    for call, where in cases:
        with pytest.raises(RelulabError, match=where):
            call()
    # no samples: the normal forms decide alone, else "unknown" (never a crash)
    h = Network([f.weights[0], f.weights[1], f.weights[2] * 2], f.biases, exact=True)
    assert fibre_equivalent(f, h, n_samples=0).status == "unknown"
    assert fibre_equivalent(f, f, n_samples=0).status == "equal"
    assert normal_form(to_formula(Network([[[1, 1]], [[1]]], [[-1], [0]]).exact())).graph is not None


@pytest.mark.parametrize("scale", [1e-12, 1e-6, 1e6])
def test_identifiability_does_not_change_when_the_output_is_scaled(scale):
    W1, b1 = [[1.0, 0.0], [0.0, 1.0]], [-0.5, -0.5]
    base = identifiability(Network([W1, [[1.0, 1.0]]], [b1, [0.0]]))
    r = identifiability(Network([W1, [[scale, scale]]], [b1, [0.0]]))
    assert base.status == "locally identifiable"
    assert (r.status, r.invisible, r.rank) == (base.status, base.invisible, base.rank)
    # a dead neuron stays invisible at every scale
    dead = identifiability(Network([[[1.0, 1.0], [1.0, 0.0]], [[scale, scale]]], [[-0.5, 5.0], [0.0]]))
    assert dead.status == "not identifiable" and (0, 1) in dead.invisible
