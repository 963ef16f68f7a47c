"""Exact reduction: padded networks shrink back to their original size; every reduction
agrees with its input on 10,000 random points and is equal by the exact verifier."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from conftest import random_network
from hypothesis import given, settings
from hypothesis import strategies as st

from relulab import Box, Network
from relulab.symmetry import canonical, equivalent, neuron_status, random_symmetry, reduce


def _pad(net: Network, rng: np.random.Generator, box: Box) -> Network:
    """Add to every hidden layer: two neurons dead on ``box`` (bias below the interval
    bound of their input), two duplicates (rescaled copies sharing the outgoing weight),
    a neuron with zero outgoing weights and a constant neuron (zero incoming weights)."""
    from relulab.bounds import interval_bounds

    ib = interval_bounds(net, box)
    Ws = [np.array(W) for W in net.weights]
    bs = [np.array(b) for b in net.biases]
    his = [np.maximum(box.hi, -box.lo)] + [np.maximum(h, 0) for h in ib.pre_hi]
    for k in range(net.n_hidden_layers):
        n_in, width = Ws[k].shape[1], Ws[k].shape[0]
        n0 = his[k].shape[0]  # inputs of the unpadded layer (the padded ones come last)
        dead_W = np.zeros((2, n_in))
        dead_W[:, :n0] = rng.normal(size=(2, n0))
        dead_b = -(np.abs(dead_W[:, :n0]) @ his[k]) - 0.5
        dup = rng.integers(0, width, size=2)
        c = np.exp(rng.uniform(-1, 1, size=2))
        Wn = Ws[k + 1]
        dup_cols = []
        for t, j in enumerate(dup):
            share = Wn[:, j] * rng.uniform(0.2, 0.8)
            Wn[:, j] = Wn[:, j] - share
            dup_cols.append(share / c[t])
        Ws[k] = np.vstack([Ws[k], dead_W, Ws[k][dup] * c[:, None], rng.normal(size=(1, n_in)),
                           np.zeros((1, n_in))])
        bs[k] = np.concatenate([bs[k], dead_b, bs[k][dup] * c, [0.3], [0.7]])
        const_col = rng.normal(size=(Wn.shape[0], 1))
        bs[k + 1] = bs[k + 1] - 0.7 * const_col[:, 0]  # compensate the constant neuron
        Ws[k + 1] = np.hstack([Wn, rng.normal(size=(Wn.shape[0], 2)), np.stack(dup_cols, 1),
                               np.zeros((Wn.shape[0], 1)), const_col])
    return Network(Ws, bs, net.skip)


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 10_000), skip=st.booleans(), deep=st.booleans())
def test_padded_network_reduces_back_to_original_size(seed, skip, deep):
    rng = np.random.default_rng(seed)
    arch = [3, 6, 5, 2] if deep else [3, 7, 2]
    net = random_network(rng, arch, skip=skip)
    box = Box(-np.ones(3), np.ones(3))
    padded = random_symmetry(_pad(net, rng, box), seed)
    X = box.sample(10_000, seed)
    assert np.allclose(padded(X), net(X), atol=1e-9)
    # the original is irreducible by these rules (checked, not assumed) ...
    base = reduce(net, box, check=False)
    # ... and the padded copy comes back to exactly that size
    r = reduce(padded, box, check=False)
    assert r.widths_after == base.widths_after and sum(base.widths_after) <= sum(net.widths)
    # (a duplicate of a dead neuron is removed as dead, so count the two reasons together)
    assert r.removed["dead"] + r.removed["merged"] >= 4 * net.n_hidden_layers
    assert r.removed["zero_outgoing"] >= net.n_hidden_layers
    assert r.removed["constant"] >= net.n_hidden_layers
    assert np.allclose(r.network(X), net(X), atol=1e-9)
    chk = equivalent(padded, r.network, box, fast=False)
    assert chk.status == "equal" and chk.method == "verifier"


@pytest.mark.parametrize("exact", [False, True])
def test_one_hidden_layer_stably_active_and_twins_go_to_the_skip(exact):
    rng = np.random.default_rng(5)
    W = rng.normal(size=(6, 2))
    b = rng.normal(size=6) * 0.2
    b[:2] = [5.0, 6.0]                      # stably active on [-1, 1]^2
    W = np.vstack([W, -2 * W[2:3]])         # twin of neuron 2 (opposite orientation)
    b = np.concatenate([b, -2 * b[2:3]])
    net = Network([W, rng.normal(size=(2, 7))], [b, [0.0, 1.0]])
    if exact:
        net = net.exact()
    box = Box([-1, -1], [1, 1])
    r = reduce(net, box)
    assert r.widths_after == (4,) and r.network.skip is not None
    assert r.removed["to_skip"] == 2 and r.removed["twins"] == 1
    assert r.network.is_exact == exact
    X = box.sample(10_000, 0)
    assert np.allclose(r.network.float()(X), net.float()(X), atol=1e-9)
    assert equivalent(net, r.network, box, fast=False).status == "equal"
    if exact:  # exact agreement at rational points of the box
        for x in rng.integers(-50, 51, size=(20, 2)):
            xf = [Fraction(int(v), 50) for v in x]
            assert list(r.network(xf)) == list(net(xf))


@pytest.mark.parametrize("exact", [False, True])
def test_stably_active_layers_collapse(exact):
    rng = np.random.default_rng(2)
    W1, b1 = rng.normal(size=(5, 2)), rng.normal(size=5) * 0.2
    W2, b2 = np.abs(rng.normal(size=(4, 5))), np.full(4, 1.0)   # z2 >= 1: all active
    W3, b3 = rng.normal(size=(3, 4)), rng.normal(size=3) * 0.1
    net = Network([W1, W2, W3, rng.normal(size=(1, 3))], [b1, b2, b3, [0.0]])
    if exact:
        net = net.exact()
    box = Box([-1, -1], [1, 1])
    stt = neuron_status(net, box)
    assert np.all(stt.status[1] == 1)
    r = reduce(net, box)
    assert r.network.n_hidden_layers < net.n_hidden_layers
    assert r.removed["collapsed"] >= 4
    X = box.sample(10_000, 0)
    assert np.allclose(r.network.float()(X), net.float()(X), atol=1e-9)
    assert equivalent(net, r.network, box, fast=False).status == "equal"


def test_dependent_stably_active_neurons_fold_in_deep_networks():
    rng = np.random.default_rng(5)
    W1, b1 = rng.normal(size=(5, 2)) * 0.5, rng.normal(size=5) * 0.2
    b1[:3] = [4.0, 4.0, 8.0]                # three stably active neurons in R^2: dependent
    W2, b2 = rng.normal(size=(4, 5)), rng.normal(size=4) * 0.2 + 0.5
    net = Network([W1, W2, rng.normal(size=(1, 4))], [b1, b2, [0.0]])
    box = Box([-1, -1], [1, 1])
    r = reduce(net, box)
    assert r.removed["dependent_active"] == 1
    assert r.widths_after[0] == 4
    X = box.sample(10_000, 1)
    assert np.allclose(r.network(X), net(X), atol=1e-9)
    assert equivalent(net, r.network, box, fast=False).status == "equal"


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_canonical_and_reduce_outputs_are_equal_by_exact_check(seed):
    rng = np.random.default_rng(seed)
    net = random_network(rng, [2, 6, 5, 1], scale=2.0)
    box = Box([-1, -1], [1, 1])
    X = box.sample(10_000, seed)
    for out in (canonical(net, box)[0], reduce(net, box, check=False).network):
        assert np.allclose(out(X), net(X), atol=1e-9)
        chk = equivalent(net, out, box, fast=False)
        assert chk.status == "equal" and chk.upper_bound <= chk.tol


def test_reduce_to_affine_and_result_record():
    # relu(x + 3) - relu(x - 3) = x + 3 on [-1, 1]: affine
    net = Network([[[1.0], [1.0]], [[1.0, -1.0]]], [[3.0, -3.0], [0.0]])
    r = reduce(net, Box([-1], [1]))
    assert r.network.n_hidden_layers == 0 and r.check.status == "equal"
    assert r.network.weights[0].tolist() == [[1.0]] and r.network.biases[0].tolist() == [3.0]
    d = r.to_dict()
    assert d["neurons_before"] == 2 and d["neurons_after"] == 0 and d["check"]["status"] == "equal"


@pytest.mark.parametrize("exact", [False, True])
def test_reduce_folds_a_dependent_active_neuron_met_before_an_independent_one(exact):
    # layer 1 on [0, 1]^2: x2+10, 2x2+10 (a multiple of the first), x1+10 (independent,
    # found after the dependent one), x1-x2 (unstable); the fold indexed the final basis
    # with the dependent row's shorter coefficients and raised IndexError
    net = Network([[[0, 1], [0, 2], [1, 0], [1, -1]], [[1, 1, 1, 1], [1, 0, -1, 1]], [[1, -1]]],
                  [[10, 10, 10, 0], [0, -0.25], [0]])
    if exact:
        net = net.exact()
    r = reduce(net, Box([0, 0], [1, 1]), timeout=3)   # the fold is structural; the check may stop early
    assert r.removed["dependent_active"] == 1 and r.widths_after[0] == 3
    red = r.network
    for i in range(9):
        for j in range(9):
            x = [Fraction(i, 8), Fraction(j, 8)]
            if exact:
                assert red(x)[0] == net(x)[0]                    # the same function, exactly
            else:
                assert abs(red([float(v) for v in x])[0] - net([float(v) for v in x])[0]) <= 1e-9


def test_neuron_status_verifier_shares_the_time_limit_the_lps_used(monkeypatch):
    # the first layer's LPs over a polytope used the whole limit: the verifier's
    # maximisations get what is left (nothing), not a fresh limit of their own
    import time

    import relulab.symmetry._status as status_mod
    import relulab.verify as verify_mod
    from relulab.domain import Polytope

    rng = np.random.default_rng(3)
    net = random_network(rng, [2, 6, 6, 1])
    poly = Polytope(np.vstack([np.eye(2), -np.eye(2)]), np.ones(4))
    real_lp = status_mod._first_layer_lp

    def slow_lp(*a, **k):
        time.sleep(0.3)
        return real_lp(*a, **k)

    calls = []
    real_max = verify_mod.maximize
    monkeypatch.setattr(status_mod, "_first_layer_lp", slow_lp)
    monkeypatch.setattr(verify_mod, "maximize", lambda *a, **k: calls.append(1) or real_max(*a, **k))
    # samples on which every second-layer neuron keeps one sign: all are verifier candidates
    samples = poly.sample(50, np.random.default_rng(0))
    neuron_status(net, poly, use_verifier=True, samples=samples[:1], time_limit=0.2)
    assert calls == []


def test_reduce_stops_its_rounds_at_the_proofs_time_and_says_so(monkeypatch):
    import importlib
    import time

    # (the package exports the function under the module's name)
    reduce_mod = importlib.import_module("relulab.symmetry.reduce")

    rng = np.random.default_rng(4)
    box = Box(-np.ones(3), np.ones(3))
    net = _pad(random_network(rng, [3, 5, 5, 1]), rng, box)
    real = reduce_mod.neuron_status
    rounds = []

    def slow_status(*a, **k):
        rounds.append(1)
        time.sleep(0.3)
        return real(*a, **k)

    monkeypatch.setattr(reduce_mod, "neuron_status", slow_status)
    r = reduce(net, box, timeout=0.4, check=False)
    assert len(rounds) == 1 and r.rounds == 1
    assert any(line.startswith("time limit: stopped after 1 rounds") for line in r.log)
    X = box.sample(2000, np.random.default_rng(1))
    assert np.abs(net(X) - r.network(X)).max() <= 1e-9 * (1 + np.abs(net(X)).max())  # tol: float
