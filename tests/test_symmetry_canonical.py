"""Canonical forms and neuron-status proofs: invariance under the symmetry group, same
function (on 10,000 points, exactly in rational arithmetic, and by the exact verifier)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from conftest import random_network
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relulab import Box, Network, Polytope
from relulab.symmetry import canonical, equivalent, neuron_status, permute, random_symmetry, rescale
from relulab.symmetry.canonical import same_form

ARCHS = [[2, 5, 1], [3, 6, 4, 2], [2, 4, 4, 3, 1], [4, 7, 3]]


def _net(seed: int, arch_i: int, skip: bool, exact: bool = False) -> Network:
    net = random_network(np.random.default_rng(seed), ARCHS[arch_i], skip=skip)
    return net.exact() if exact else net


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), arch=st.integers(0, 3), skip=st.booleans())
def test_rescaled_permuted_copy_has_same_canonical_form(seed, arch, skip):
    net = _net(seed, arch, skip)
    g = random_symmetry(net, seed + 1)
    X = np.random.default_rng(seed).normal(size=(10_000, net.input_dim)) * 2
    assert np.allclose(g(X), net(X), atol=1e-9)
    cf, rf = canonical(net)
    cg, rg = canonical(g)
    assert same_form(cf, cg, rtol=1e-9)
    # the normal form computes the same function
    assert np.allclose(cf(X), net(X), atol=1e-9)
    box = Box(-np.ones(net.input_dim), np.ones(net.input_dim))
    r = equivalent(net, g, box)
    assert r.status == "equal" and r.method == "canonical"


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), arch=st.integers(0, 3), skip=st.booleans())
def test_exact_canonical_forms_are_identical(seed, arch, skip):
    net = _net(seed, arch, skip, exact=True)
    g = random_symmetry(net, seed + 7)
    cf, _ = canonical(net)
    cg, _ = canonical(g)
    assert cf.is_exact and cf == cg
    rng = np.random.default_rng(seed)
    for _ in range(5):
        x = [Fraction(int(v), 13) for v in rng.integers(-30, 30, size=net.input_dim)]
        assert list(cf(x)) == list(net(x))  # exact equality, no tolerance
    r = equivalent(net, g, Box(-np.ones(net.input_dim), np.ones(net.input_dim)))
    assert r.status == "equal" and r.exact


def test_canonical_is_idempotent_and_sorted():
    net = _net(3, 1, True)
    c1, _ = canonical(net)
    c2, rep = canonical(c1)
    assert same_form(c1, c2, rtol=1e-12)
    assert rep.order == tuple(tuple(range(w)) for w in c1.widths)
    for k in range(c1.n_hidden_layers):
        R = np.concatenate([c1.weights[k], c1.biases[k][:, None]], 1)
        assert np.allclose(np.max(np.abs(R), axis=1), 1.0)  # normalised rows
        rows = [tuple(r) for r in np.round(R, 9)]
        assert rows == sorted(rows)


def test_merges_constants_and_zero_neurons_globally():
    # neurons: z, 3z (same hyperplane), a constant relu(2), a zero-outgoing neuron
    W = [[1.0, -1.0], [3.0, -3.0], [0.0, 0.0], [5.0, 1.0]]
    b = [0.5, 1.5, 2.0, 0.0]
    V = [[1.0, 2.0, 4.0, 0.0]]
    net = Network([W, V], [b, [1.0]])
    can, rep = canonical(net)
    assert can.widths == (1,)
    assert rep.merged == ((0, (0, 1)),)
    assert rep.constant == ((0, 2),) and rep.zero_outgoing == ((0, 3),)
    X = np.random.default_rng(0).normal(size=(10_000, 2)) * 3
    assert np.allclose(can(X), net(X), atol=1e-12)
    # exact: 1*relu(z) + 2*3*relu(z) = 7 relu(z); bias 1 + 4*2 = 9
    ce, _ = canonical(net.exact())
    assert ce.weights[1][0, 0] == Fraction(7) * Fraction(1)  # row (1, -1, 0.5) has max 1
    assert ce.biases[1][0] == 9


def test_dead_neurons_removed_on_domain_only():
    # relu(x - 2) is dead on [-1, 1] but not on R
    net = Network([[[1.0], [1.0]], [[1.0, 3.0]]], [[0.0, -2.0], [0.0]])
    assert canonical(net)[0].widths == (2,)
    can, rep = canonical(net, Box([-1], [1]))
    assert can.widths == (1,) and rep.dead == ((0, 1),)
    X = np.linspace(-1, 1, 10_001)[:, None]
    assert np.array_equal(can(X), net(X))


def test_whole_layer_dead_gives_constant_network():
    W1 = [[1.0, 0.0], [0.0, 1.0]]
    W2 = [[-1.0, -1.0], [-2.0, 0.0]]  # z2 = -h - 1 < 0 : layer 2 dead on any domain
    net = Network([W1, W2, [[1.0, 1.0]]], [[0.0, 0.0], [-1.0, -1.0], [0.25]], skip=([[1.0, 2.0]], [0.0]))
    can, rep = canonical(net, Box([-1, -1], [1, 1]))
    assert can.n_hidden_layers == 0 and rep.constant_from_layer is not None
    X = Box([-1, -1], [1, 1]).sample(10_000, 0)
    assert np.allclose(can(X), net(X), atol=1e-12)


@pytest.mark.parametrize("exact", [False, True])
def test_neuron_status_claims_hold_on_samples(exact):
    rng = np.random.default_rng(11)
    net = random_network(rng, [3, 12, 10, 6, 1], scale=1.5)
    net = Network([np.asarray(W) for W in net.weights],
                  [np.asarray(b) + np.where(rng.random(len(b)) < 0.3, 2.0, 0.0) * np.sign(rng.normal(size=len(b)))
                   for b in net.biases])
    if exact:
        net = net.exact()
    box = Box(-np.ones(3), np.ones(3))
    stt = neuron_status(net, box)
    assert stt.n_dead + stt.n_active > 0  # something is proved (the test is not vacuous)
    Z = net.float().preactivations(box.sample(20_000, 1))
    for k, s in enumerate(stt.status):
        assert np.all(Z[k][:, s == -1] <= 1e-12)
        assert np.all(Z[k][:, s == 1] >= -1e-12)


def test_polytope_first_layer_lp_finds_neurons_dead_on_the_polytope():
    # triangle x1 + x2 <= 0, x >= -1: relu(x1 + x2 - 0.1) is dead there, not on its bounding box
    P = Polytope([[1.0, 1.0], [-1.0, 0.0], [0.0, -1.0]], [0.0, 1.0, 1.0])
    net = Network([[[1.0, 1.0], [1.0, -1.0]], [[2.0, 1.0]]], [[-0.1, 0.0], [0.0]])
    can, rep = canonical(net, P)
    assert rep.dead == ((0, 0),)
    assert equivalent(net, can, P, fast=False).status == "equal"
    r = equivalent(net, can, P.bounding_box())
    assert r.status == "different" and not P.contains(r.witness)


def test_transforms_validate_and_preserve_function():
    net = _net(5, 0, False)
    X = np.random.default_rng(0).normal(size=(1000, 2))
    g = permute(rescale(net, [np.arange(1, 6, dtype=float)]), [[4, 3, 2, 1, 0]])
    assert np.allclose(g(X), net(X), atol=1e-12)
    from relulab import NetworkError

    with pytest.raises(NetworkError, match="positive"):
        rescale(net, [-np.ones(5)])
    with pytest.raises(NetworkError, match="permutation"):
        permute(net, [[0, 0, 1, 2, 3]])


def test_verifier_proves_a_dead_neuron_that_bounds_cannot():
    # layer 2 neuron: relu(x) + relu(-x) - relu(x) - relu(-x) - 0.1 = -0.1: dead, but
    # bound propagation treats the four unstable ReLUs independently
    W1 = [[1.0], [-1.0], [1.0], [-1.0]]
    W2 = [[1.0, 1.0, -1.0, -1.0], [1.0, 0.0, 0.0, 0.0]]
    net = Network([W1, W2, [[1.0, 1.0]]], [[0.0] * 4, [-0.1, 0.0], [0.0]])
    box = Box([-1], [1])
    plain = neuron_status(net, box)
    assert plain.status[1][0] == 0
    proved = neuron_status(net, box, use_verifier=True)
    assert proved.status[1][0] == -1 and proved.how[1][0] == "verifier"
    assert np.all(net.preactivations(np.linspace(-1, 1, 1001)[:, None])[1][:, 0] < 0)


def test_float_forms_agree_across_a_rounding_boundary_of_a_row():
    # two neurons 3e-11 apart (beyond the merge tolerance) with an entry at the 9-decimal
    # rounding boundary 0.8999999995: the old sort key rounded first, and 1-ulp noise from
    # the rescaling flipped the two neurons' order, so f and a rescaled copy had
    # different normal forms

    rng = np.random.default_rng(0)
    a0 = 0.8999999995
    for _ in range(300):
        a = a0 + int(rng.integers(-3, 4)) * 2.0**-53
        f = Network([np.array([[a, 0.9], [a0 + 3e-11, 0.1]]), np.array([[1.0, 2.0]])],
                    [np.array([1.0, 1.0]), np.array([0.0])])
        g = rescale(f, [rng.uniform(0.1, 10, size=2)])
        cf, cg = canonical(f)[0], canonical(g)[0]
        assert same_form(cf, cg) and cf.allclose(cg)


def test_a_normalisation_that_overflows_float64_is_named():
    # w = 10 in layer 1 moves into layer 2's 1e308: inf, then the misleading "layer 2:
    # weight contains NaN or infinite entries" (with overflow warnings)
    import warnings

    from relulab.network import NetworkError

    f = Network([[[10.0], [1.0]], [[1e308, 1.0]]], [[0.0, 0.0], [0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(NetworkError, match="canonical: moving the scale of layer 1's neurons into layer 2 overflows"):
            canonical(f)
    c, _ = canonical(f.exact())  # exact arithmetic has no such limit
    x = [[Fraction(1, 3)]]
    assert c.exact()(x[0]) == f.exact()(x[0])


@pytest.mark.parametrize("seed", range(5))
def test_row_grouping_and_order_match_the_pairwise_definitions(seed):
    # the sorted-window grouping and the presorted comparison sort against their
    # definitions: every unassigned row within tol of the first one (in index order), and
    # a sort by the comparison alone from the index order
    from functools import cmp_to_key

    from relulab.symmetry.canonical import ORDER_TOL, _group_rows, _row_order

    rng = np.random.default_rng(seed)
    n, d, tol = 300, 4, 1e-12
    R = np.round(rng.standard_normal((n, d)), 1)          # ties in the first coordinate
    R[100:150] = R[:50] + 1e-13 * rng.standard_normal((50, d))   # near-duplicates
    R[150:160] = R[0]
    assigned, want = np.zeros(n, bool), []
    for i in range(n):
        if not assigned[i]:
            close = (np.max(np.abs(R - R[i]), axis=1) <= tol) & ~assigned
            assigned |= close
            want.append([int(j) for j in np.nonzero(close)[0]])
    assert _group_rows(R, False, tol) == want
    U = R[[g[0] for g in want]]                              # one row per group

    def cmp(i, j):
        diff = U[i] - U[j]
        big = np.flatnonzero(np.abs(diff) > ORDER_TOL)
        return 0 if big.size == 0 else (-1 if diff[big[0]] < 0 else 1)

    assert _row_order(U, False) == sorted(range(len(U)), key=cmp_to_key(cmp))
