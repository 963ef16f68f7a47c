"""Bound propagation: soundness against sampling, symbolic at least as tight as intervals."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_network

from relulab.bounds import (
    alpha_crown,
    crown_batch,
    float_layers,
    interval_bounds,
    linear_bounds,
    relax_relu,
    symbolic_bounds,
)
from relulab.domain import Box, Polytope
from relulab.network import Network

ARCHS = [[2, 10, 1], [3, 10, 10, 2], [5, 10, 10, 10, 3], [4, 8, 8, 8, 1], [2, 10, 10, 10, 2]]
TOL = 1e-9


def _nets():
    rng = np.random.default_rng(11)
    out = []
    for i, arch in enumerate(ARCHS * 3):
        out.append(random_network(rng, arch, skip=(i % 3 == 2), scale=1.5))
    return out


def _box(rng, d):
    lo = rng.uniform(-1.5, 0.5, size=d)
    return Box(lo, lo + rng.uniform(0.2, 2.0, size=d))


@pytest.mark.parametrize("idx", range(len(ARCHS) * 3))
def test_symbolic_bounds_contain_samples_and_beat_intervals(idx):
    net = _nets()[idx]
    rng = np.random.default_rng(idx)
    B = _box(rng, net.input_dim)
    X = np.concatenate([B.sample(10_000, rng), B.vertices()])
    Y = net(X)
    Z = net.preactivations(X)
    ib = interval_bounds(net, B)
    sb = symbolic_bounds(net, B)
    for b in (ib, sb):
        assert np.all(Y >= b.out_lo - TOL) and np.all(Y <= b.out_hi + TOL)
        for k, z in enumerate(Z):
            assert np.all(z >= b.pre_lo[k] - TOL) and np.all(z <= b.pre_hi[k] + TOL)
        assert b.n_active + b.n_inactive + b.n_unstable == net.n_neurons
    # at least as tight, neuron by neuron
    assert np.all(sb.out_lo >= ib.out_lo - TOL) and np.all(sb.out_hi <= ib.out_hi + TOL)
    for k in range(net.n_hidden_layers):
        assert np.all(sb.pre_lo[k] >= ib.pre_lo[k] - TOL)
        assert np.all(sb.pre_hi[k] <= ib.pre_hi[k] + TOL)
    assert sb.n_unstable <= ib.n_unstable
    # a neuron counted stably active/inactive really is, on every sample
    for k, z in enumerate(Z):
        assert np.all(z[:, sb.pre_lo[k] >= 0] >= -TOL)
        assert np.all(z[:, sb.pre_hi[k] <= 0] <= TOL)


def test_symbolic_strictly_tighter_somewhere():
    """On a deep random network back-substitution must beat intervals (a fact, not luck:
    checked over several networks, at least one output bound improves by 10%)."""
    gains = []
    for net in _nets():
        B = Box(-np.ones(net.input_dim), np.ones(net.input_dim))
        ib, sb = interval_bounds(net, B), symbolic_bounds(net, B)
        gains.append(np.max((ib.out_hi - ib.out_lo) / np.maximum(sb.out_hi - sb.out_lo, 1e-12)))
    assert max(gains) > 1.1


@pytest.mark.parametrize("mode", ["interval", "forward", "hybrid", "crown"])
def test_batched_modes_sound_and_match_single(mode):
    rng = np.random.default_rng(5)
    net = random_network(rng, [4, 10, 10, 10, 3], skip=True, scale=1.5)
    Ws, bs, sk = float_layers(net)
    N = 40
    lo = rng.uniform(-1, 0.5, size=(N, 4))
    hi = lo + rng.uniform(0.05, 1.0, size=(N, 4))
    C = rng.normal(size=(2, 3))
    d = rng.normal(size=2)
    pre, low = crown_batch(Ws, bs, lo, hi, C=C, d=d, skip=sk, intermediate=mode)
    for n in range(N):
        X = Box(lo[n], hi[n]).sample(2000, rng)
        vals = net(X) @ C.T + d
        assert np.all(vals >= low[n] - TOL)
        for k, z in enumerate(net.preactivations(X)):
            assert np.all(z >= pre[k][0][n] - TOL) and np.all(z <= pre[k][1][n] + TOL)
        # one box alone gives the same bound as inside the batch
        _, low1 = crown_batch(Ws, bs, lo[n:n + 1], hi[n:n + 1], C=C, d=d, skip=sk, intermediate=mode)
        np.testing.assert_allclose(low1[0], low[n], rtol=1e-9, atol=1e-9)


def test_hybrid_at_least_as_tight_as_forward():
    rng = np.random.default_rng(8)
    net = random_network(rng, [3, 10, 10, 10, 2], scale=1.5)
    Ws, bs, sk = float_layers(net)
    lo = rng.uniform(-1, 0, size=(30, 3))
    hi = lo + 0.7
    pre_f, low_f = crown_batch(Ws, bs, lo, hi, intermediate="forward")
    pre_h, low_h = crown_batch(Ws, bs, lo, hi, intermediate="hybrid")
    for (a, b), (c, e) in zip(pre_f, pre_h, strict=True):
        assert np.all(c >= a - TOL) and np.all(e <= b + TOL)


def test_linear_bounds_through_spec_sound_and_tighter():
    rng = np.random.default_rng(2)
    for _ in range(5):
        net = random_network(rng, [3, 10, 10, 4], scale=1.5)
        B = _box(rng, 3)
        C = rng.normal(size=(3, 4))
        d = rng.normal(size=3)
        low = linear_bounds(net, B, C, d)
        vals = net(B.sample(10_000, rng)) @ C.T + d
        assert np.all(vals >= low[None] - TOL)
        sb = symbolic_bounds(net, B)
        composed = np.maximum(C, 0) @ sb.out_lo + np.minimum(C, 0) @ sb.out_hi + d
        assert np.all(low >= composed - 1e-9)


def test_alpha_optimisation_sound_and_not_worse():
    rng = np.random.default_rng(4)
    net = random_network(rng, [3, 10, 10, 10, 2], skip=True, scale=1.5)
    Ws, bs, sk = float_layers(net)
    lo = rng.uniform(-1, 0, size=(20, 3))
    hi = lo + 0.8
    C = np.array([[1.0, -1.0], [0.5, 1.0]])
    d = np.array([0.1, -0.2])
    pre, low = crown_batch(Ws, bs, lo, hi, C=C, d=d, skip=sk)
    relax = [relax_relu(a, b) for a, b in pre]
    best, A, c = alpha_crown(C, d, Ws, bs, relax, lo, hi, sk, iters=8)
    assert np.all(best >= low - 1e-9)
    for n in range(20):
        vals = net(Box(lo[n], hi[n]).sample(3000, rng)) @ C.T + d
        assert np.all(vals >= best[n] - TOL)
        # the returned linear form is a valid lower bound whose box minimum is `best`
        xs = np.where(A[n] > 0, lo[n], hi[n])
        np.testing.assert_allclose(np.sum(A[n] * xs, axis=1) + c[n], best[n], atol=1e-9)


def test_polytope_domain_bounds():
    rng = np.random.default_rng(9)
    net = random_network(rng, [2, 10, 10, 2], scale=1.5)
    P = Polytope([[1, 1], [-1, 0], [0, -1], [1, -2]], [1, 0.5, 0.5, 0.8])
    X = P.sample(5000, rng)
    sb = symbolic_bounds(net, P)
    Y = net(X)
    assert np.all(Y >= sb.out_lo - 1e-8) and np.all(Y <= sb.out_hi + 1e-8)
    # an LP over the polytope is at least as tight as over its bounding box
    bb = symbolic_bounds(net, P.bounding_box())
    assert np.all(sb.out_lo >= bb.out_lo - 1e-8) and np.all(sb.out_hi <= bb.out_hi + 1e-8)
    C = np.array([[1.0, -2.0]])
    assert np.all(net(X) @ C.T >= linear_bounds(net, P, C) - 1e-8)


def test_exact_network_accepted():
    rng = np.random.default_rng(1)
    net = random_network(rng, [2, 6, 1])
    B = Box([-1, -1], [1, 1])
    a, b = symbolic_bounds(net, B), symbolic_bounds(net.exact(), B)
    np.testing.assert_allclose(a.out_lo, b.out_lo)
    np.testing.assert_allclose(a.out_hi, b.out_hi)


@pytest.mark.parametrize("C,d,msg", [
    ([[1.0, -1.0]], [0.0, 0.0], "one entry per row"),   # used to return 2 bounds for 1 row
    ([[1.0, -1.0, 2.0]], None, "2 columns"),
    ([[float("nan"), 1.0]], None, "finite"),             # used to return [nan]
])
def test_linear_bounds_checks_c_and_d(C, d, msg):
    from relulab import Network
    from relulab.errors import RelulabError

    net = Network([[[1.0], [-1.0]], [[1.0, 1.0], [1.0, -1.0]]], [[0, 0], [0, 0]])
    with pytest.raises(RelulabError, match=msg):
        linear_bounds(net, Box([0.5], [1.0]), np.array(C), d)
    # the well-formed call: f = (|x|, x) on [0.5, 1], so y0 - y1 + 0.5 = 0.5 exactly
    assert linear_bounds(net, Box([0.5], [1.0]), np.array([[1.0, -1.0]]), [0.5])[0] == pytest.approx(0.5)


def test_interval_overflow_is_refused_and_symbolic_keeps_its_sound_bound():
    # relu(1e308 x) - relu(1e308 x) = 0 everywhere: interval arithmetic gave NaN bounds
    # silently (inf - inf), counted as neither stable nor unstable, and symbolic_bounds'
    # intersection with them turned CROWN's right answer [0, 0] into [nan, nan]
    from relulab.bounds import BoundsOverflow

    net = Network([[[1e308], [1e308]], [[1.0, -1.0]]], [[0.0, 0.0], [0.0]])
    box = Box([10.0], [10.0])
    with pytest.raises(BoundsOverflow, match="weights up to 1e\\+308"):
        interval_bounds(net, box)
    b = symbolic_bounds(net, box)
    exact = net.exact()([[10]])[0, 0]
    assert b.out_lo[0] <= exact <= b.out_hi[0]
    # a point box at 1e300 with a difference neuron: interval NaN, refused as symbolic is
    net2 = Network([[[1e10, -1e10]], [[1.0]]], [[0.0], [0.0]])
    for fn in (interval_bounds, symbolic_bounds):
        with pytest.raises(BoundsOverflow):
            fn(net2, Box([1e300, 1e300], [1e300, 1e300]))
