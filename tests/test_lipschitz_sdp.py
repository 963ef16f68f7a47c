"""Local LipSDP (l2) and the forward-mode interval bound: every bound on the right side of
the exact value from region enumeration, the reduced SDP no looser than the full-size
cvxpy program (an independent formulation), exactness on affine pieces, and the
SDP branch and bound closing on small networks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relulab import Box, Network
from relulab.bounds import float_layers
from relulab.errors import RelulabError
from relulab.lipschitz import by_enumeration, lipschitz, sdp_bound
from relulab.lipschitz.bab import box_norm_bounds, forward_directions, forward_norm_bound
from relulab.lipschitz.milp import preactivation_bounds
from relulab.lipschitz.sdp import reduced_lift, sdp_bab, verified_psd

INF = math.inf


def rand_net(rng, dims, bias=0.5):
    Ws = [rng.standard_normal((dims[i + 1], dims[i])) for i in range(len(dims) - 1)]
    bs = [rng.standard_normal(dims[i + 1]) * bias for i in range(len(dims) - 1)]
    return Network(Ws, bs)


def rand_box(rng, d):
    c = rng.uniform(-1, 1, d)
    w = rng.uniform(0.3, 1.5, d)
    return Box(c - w, c + w)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), d=st.integers(1, 2), depth=st.integers(1, 2), m=st.integers(1, 2))
def test_local_sdp_and_sdp_bab_bracket_the_exact_l2_constant(seed, d, depth, m):
    rng = np.random.default_rng(seed)
    net = rand_net(rng, [d, *[int(rng.integers(2, 6)) for _ in range(depth)], m])
    box = rand_box(rng, d)
    q = None if m == 1 else 2.0
    exact = by_enumeration(net, box, 2.0, q).lower
    assert sdp_bound(net, box) >= exact * (1 - 1e-9)
    cut = sdp_bab(net, box, max_boxes=3, time_limit=None)
    assert cut.lower <= exact * (1 + 1e-9) and cut.upper >= exact * (1 - 1e-9)
    full = sdp_bab(net, box, time_limit=None, max_boxes=600)
    assert full.lower <= exact * (1 + 1e-9) and full.upper >= exact * (1 - 1e-9)
    if full.complete:   # closed: the bracket is the exact value
        assert abs(full.lower - exact) <= 1e-9 * max(1.0, exact)
        assert full.upper <= exact * (1 + 1e-6)
    assert box.contains(full.witness.x)
    assert np.allclose(net.jacobian(full.witness.x), full.witness.jacobian)


@pytest.mark.parametrize("seed", range(3))
def test_reduced_sdp_no_looser_than_full_size_cvxpy_program(seed):
    pytest.importorskip("cvxpy")
    rng = np.random.default_rng(40 + seed)
    net = rand_net(rng, [2, 5, 4, 1])
    box = Box([-1, -1], [1, 1])
    exact = by_enumeration(net, box, 2.0, None).lower
    reduced = sdp_bound(net, box)
    full = sdp_bound(net, box, solver="SCS")           # cvxpy, every neuron in the matrix
    assert reduced >= exact * (1 - 1e-9) and full >= exact * (1 - 1e-9)
    assert reduced <= full * (1 + 1e-3)
    # the global bound (every neuron unstable) is at least the local one
    assert sdp_bound(net, None) >= reduced * (1 - 1e-6)


def test_affine_piece_gives_its_spectral_norm():
    rng = np.random.default_rng(3)
    W1 = rng.standard_normal((4, 3))
    net = Network([W1, rng.standard_normal((2, 4))], [np.full(4, 50.0), np.zeros(2)])
    box = Box(-np.ones(3), np.ones(3))               # every neuron stably active
    assert reduced_lift(net, box).n_unstable == 0
    J = net.weights[1] @ W1
    assert abs(sdp_bound(net, box) - np.linalg.norm(J, 2)) <= 1e-6 * np.linalg.norm(J, 2)
    o = sdp_bab(net, box, time_limit=None)
    assert o.complete and abs(o.lower - np.linalg.norm(J, 2)) <= 1e-9 * np.linalg.norm(J, 2)


def test_verified_psd_margin():
    assert verified_psd(np.eye(3))
    assert not verified_psd(np.diag([1.0, 1.0, -1e-12]))
    assert not verified_psd(np.diag([1.0, 1.0, 1e-18]))   # below the rounding margin


def test_front_door_l2_bab_is_exact_on_small_2d_nets():
    rng = np.random.default_rng(11)
    for _ in range(3):
        net = rand_net(rng, [2, 6, 6, 1], bias=0.3)
        box = Box([-1, -1], [1, 1])
        exact = by_enumeration(net, box, 2.0, None).lower
        r = lipschitz(net, box, p=2, method="bab", time_limit=30)
        assert r.info.get("bab_bound") == "interval+exact_pieces+local_sdp"
        assert r.status == "exact" and abs(r.lower - exact) <= 1e-9 * exact


@pytest.mark.parametrize("p", [1.0, INF])
def test_forward_bound_dominates_sampled_jacobians(p):
    rng = np.random.default_rng(5)
    net = rand_net(rng, [3, 6, 5, 2])
    box = Box(-np.ones(3), np.ones(3))
    Ws, bs, sk = float_layers(net)
    pre = [(lo[None], hi[None]) for lo, hi in preactivation_bounds(net, box)]
    fwd = float(forward_norm_bound(Ws, pre, sk, forward_directions(3, p), p)[0])
    ub, _, _ = box_norm_bounds(Ws, bs, sk, box.lo[None], box.hi[None], p, p)
    exact = by_enumeration(net, box, p, p).lower
    assert fwd >= exact * (1 - 1e-9) and ub[0] >= exact * (1 - 1e-9)


def test_sdp_bab_bad_input():
    net = rand_net(np.random.default_rng(0), [2, 3, 1])
    with pytest.raises(RelulabError):
        sdp_bab(net, Box([-1], [1]))


@pytest.mark.parametrize("p", [1.0, 2.0, INF])
def test_bias_free_bab_starts_from_faces_and_closes(p):
    # boxes around the origin never make a bias-free network's neurons stable; the faces do
    from relulab.lipschitz.bab import by_bab, start_boxes

    rng = np.random.default_rng(21)
    net = rand_net(rng, [3, 6, 6, 1], bias=0.0)
    box = Box(-np.ones(3), np.ones(3))
    lo, hi = start_boxes(*float_layers(net), box)
    assert len(lo) == 6 and np.all(np.sum(hi - lo == 0, axis=1) == 1)
    exact = by_enumeration(net, box, p, None).lower
    o = by_bab(net, box, p, None, max_boxes=200_000)
    assert o.complete and abs(o.lower - exact) <= 1e-9 * exact and o.upper <= exact * (1 + 1e-6)
    if p == 2.0:
        s = sdp_bab(net, box, time_limit=None, max_boxes=3000)
        assert s.lower <= exact * (1 + 1e-9) <= s.upper * (1 + 2e-9)


@pytest.mark.parametrize("seed", range(3))
def test_pattern_bounds_dominate_the_exact_constant(seed):
    from relulab.lipschitz.bab import pattern_bounds

    rng = np.random.default_rng(70 + seed)
    net = rand_net(rng, [2, 4, 3, 2])
    box = rand_box(rng, 2)
    Ws, bs, sk = float_layers(net)
    pre = [(lo[None], hi[None]) for lo, hi in preactivation_bounds(net, box)]
    for p in (1.0, 2.0, INF):
        pb = float(pattern_bounds(Ws, pre, sk, np.array([np.inf]), p, p, 2, max_unstable=7)[0])
        assert pb >= by_enumeration(net, box, p, p).lower * (1 - 1e-9)
