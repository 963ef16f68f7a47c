"""The exact route on small boxes (ranked activation patterns + LP feasibility) and the
SDP branch and bound that uses it: checked against region enumeration (an independent
exact algorithm) on random networks, with witnesses re-checked by a forward pass."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from relulab import Box, Network
from relulab.lipschitz import by_enumeration
from relulab.lipschitz.exact_box import box_max, pattern_norms
from relulab.lipschitz.milp import preactivation_bounds
from relulab.lipschitz.sdp import sdp_bab

INF = math.inf


def rand_net(rng, dims, bias=0.5):
    Ws = [rng.standard_normal((dims[i + 1], dims[i])) for i in range(len(dims) - 1)]
    bs = [rng.standard_normal(dims[i + 1]) * bias for i in range(len(dims) - 1)]
    return Network(Ws, bs)


def rand_box(rng, d, scale=1.0):
    c = rng.uniform(-1, 1, d)
    w = rng.uniform(0.05, 1.0, d) * scale
    return Box(c - w, c + w)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), d=st.integers(1, 3), depth=st.integers(1, 2), m=st.integers(1, 2),
       p=st.sampled_from([1.0, 2.0, INF]))
def test_box_max_equals_enumeration_on_small_boxes(seed, d, depth, m, p):
    rng = np.random.default_rng(seed)
    net = rand_net(rng, [d, *[int(rng.integers(2, 6)) for _ in range(depth)], m])
    box = rand_box(rng, d)
    q = None if m == 1 else p
    exact = by_enumeration(net, box, p, q).upper
    res = box_max(net, box.lo, box.hi, preactivation_bounds(net, box), p, q, max_lps=10**6)
    assert res.upper >= exact * (1 - 1e-9)            # sound whatever happens
    if res.closed:
        assert res.upper <= exact * (1 + 1e-9) + 1e-12
        w = res.witness
        if w is None:                                   # closed by the floor 0: a constant piece
            assert res.upper == 0.0 and exact == 0.0
            return
        assert box.contains(w.x)
        assert np.allclose(net.jacobian(w.x), w.jacobian)
        assert abs(w.norm - exact) <= 1e-9 * max(1.0, exact)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), d=st.integers(1, 2), depth=st.integers(1, 2))
def test_box_max_with_a_floor_never_claims_too_little(seed, d, depth):
    # a floor at or above the true value closes the box with a bound >= the value
    rng = np.random.default_rng(seed)
    net = rand_net(rng, [d, *[int(rng.integers(2, 6)) for _ in range(depth)], 1])
    box = rand_box(rng, d)
    exact = by_enumeration(net, box, 2.0, None).upper
    res = box_max(net, box.lo, box.hi, preactivation_bounds(net, box), 2.0, None,
                  floor=exact * rng.uniform(0.5, 1.5), max_lps=3)
    assert res.upper >= exact * (1 - 1e-9)


def test_pattern_norms_cover_every_realised_jacobian():
    rng = np.random.default_rng(4)
    net = rand_net(rng, [2, 5, 4, 1])
    box = Box([-1, -1], [1, 1])
    Ws = [np.asarray(W, float) for W in net.weights]
    masks, nrm = pattern_norms(Ws, preactivation_bounds(net, box), None, 2, 2.0, None)
    X = box.sample(2000, rng)
    pats = net.pattern_vector(X)
    rows = {tuple(r) for r in masks.astype(int).tolist()}
    assert all(tuple(r) in rows for r in pats.astype(int).tolist())
    g = np.linalg.norm(np.stack([net.jacobian(x)[0] for x in X[:200]]), axis=1)
    assert g.max() <= nrm.max() * (1 + 1e-12)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), width=st.integers(3, 10), depth=st.integers(1, 3), m=st.integers(1, 2),
       bias=st.sampled_from([0.0, 0.3, 1.0]))
def test_sdp_bab_closes_on_2_input_networks(seed, width, depth, m, bias):
    # the l2 target: on 2-input networks the branch and bound reaches the exact value
    rng = np.random.default_rng(seed)
    net = rand_net(rng, [2, *[width] * depth, m], bias=bias)
    box = rand_box(rng, 2, scale=1.5)
    q = None if m == 1 else 2.0
    exact = by_enumeration(net, box, 2.0, q).upper
    cut = sdp_bab(net, box, time_limit=None, max_boxes=2)
    assert cut.lower <= exact * (1 + 1e-9) and cut.upper >= exact * (1 - 1e-9)
    o = sdp_bab(net, box, time_limit=None, max_boxes=20_000)
    assert o.complete
    assert abs(o.lower - exact) <= 1e-9 * max(1.0, exact)
    assert exact * (1 - 1e-9) <= o.upper <= exact * (1 + 1e-6)
    assert box.contains(o.witness.x) and np.allclose(net.jacobian(o.witness.x), o.witness.jacobian)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), d=st.integers(2, 3), depth=st.integers(1, 3), m=st.integers(1, 3),
       p=st.sampled_from([1.0, INF]))
def test_bab_with_exact_pieces_brackets_and_closes(seed, d, depth, m, p):
    # the interval branch and bound with exact pieces, p in {1, inf}: every bracket holds,
    # and the closed search equals region enumeration
    from relulab.lipschitz.bab import by_bab

    rng = np.random.default_rng(seed)
    net = rand_net(rng, [d, *[int(rng.integers(3, 8)) for _ in range(depth)], m])
    box = rand_box(rng, d, scale=1.5)
    q = None if m == 1 else p
    exact = by_enumeration(net, box, p, q).upper
    for kw in ({"max_boxes": 8, "batch": 4}, {"max_boxes": 50_000, "batch": 64}):
        o = by_bab(net, box, p, q, **kw)
        assert o.lower <= exact * (1 + 1e-9) and o.upper >= exact * (1 - 1e-9)
        if o.complete:
            assert abs(o.lower - exact) <= 1e-9 * max(1.0, exact) and o.upper - exact <= 1e-6 * (1 + exact)
    assert o.complete


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), depth=st.integers(1, 4), m=st.integers(1, 3))
def test_pattern_stack_equals_the_product_of_each_pattern(seed, depth, m):
    # the shared backward product against the plain product W_L D_{L-1} ... D_1 W_1 per pattern
    from relulab.lipschitz.exact_box import pattern_stack

    rng = np.random.default_rng(seed)
    dims = [int(rng.integers(1, 4)), *[int(rng.integers(1, 5)) for _ in range(depth)], m]
    Ws = [rng.standard_normal((dims[i + 1], dims[i])) for i in range(len(dims) - 1)]
    N = sum(dims[1:-1])
    unst = rng.random(N) < 0.5
    act = (rng.random(N) < 0.5) & ~unst
    G = pattern_stack(Ws, act, unst)
    iu = np.flatnonzero(unst)
    assert G.shape == (1 << len(iu), m, dims[0])
    for k in range(G.shape[0]):
        mask = act.copy()
        mask[iu] = (k >> np.arange(len(iu))) & 1
        J, off = Ws[0], 0
        for W, n in zip(Ws[1:], dims[1:-1], strict=True):
            J = W @ (mask[off: off + n, None] * J)
            off += n
        assert np.allclose(G[k], J, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), depth=st.integers(2, 4), p=st.sampled_from([1.0, 2.0, INF]))
def test_box_max_prefix_refutation_keeps_the_exact_value_in_deep_networks(seed, depth, p):
    # deeper networks have many unrealised patterns, refuted in groups by their shortest
    # infeasible prefix: the maximum must still equal region enumeration
    rng = np.random.default_rng(seed)
    net = rand_net(rng, [2, *[int(rng.integers(3, 6)) for _ in range(depth)], 1])
    box = rand_box(rng, 2)
    exact = by_enumeration(net, box, p, None).upper
    res = box_max(net, box.lo, box.hi, preactivation_bounds(net, box), p, None, max_lps=10**6)
    assert res.upper >= exact * (1 - 1e-9)
    if res.closed and res.witness is not None:
        assert abs(res.upper - exact) <= 1e-9 * max(1.0, exact)
        assert box.contains(res.witness.x) and abs(res.witness.norm - exact) <= 1e-9 * max(1.0, exact)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), d=st.integers(1, 3), depth=st.integers(1, 3), m=st.integers(1, 3),
       p=st.sampled_from([1.0, INF]), q=st.sampled_from([1.0, INF]))
def test_meet_in_middle_bound_covers_every_pattern(seed, d, depth, m, p, q):
    # the meet-in-the-middle bound is >= the norm of every pattern of the box's unstable
    # neurons (hence of every Jacobian in the box), at every choice of meeting layers
    from relulab.bounds import crown_batch, float_layers
    from relulab.lipschitz.bab import forward_directions, meet_in_middle_bound, output_functionals

    rng = np.random.default_rng(seed)
    net = rand_net(rng, [d, *[int(rng.integers(2, 6)) for _ in range(depth)], m])
    box = rand_box(rng, d)
    Ws, bs, sk = float_layers(net)
    pre, _ = crown_batch(Ws, bs, box.lo[None], box.hi[None], intermediate="hybrid")
    V, C = forward_directions(d, p), output_functionals(m, q)
    _, nrm = pattern_norms(Ws, [(a[0], c[0]) for a, c in pre], sk, d, p, None if m == 1 else q)
    for layers in (None, [0], [depth - 1]):
        b = meet_in_middle_bound(Ws, pre, sk, V, C, layers=layers)[0]
        assert b >= nrm.max() * (1 - 1e-9) - 1e-12
