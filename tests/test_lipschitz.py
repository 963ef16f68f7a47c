"""Lipschitz constants: the exact routes against each other and against brute force,
every bound on the right side of the exact value, the reductions (linear pieces,
homogeneous networks, R^d), and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relulab import Box, Network, regions
from relulab.domain import DomainError, Polytope
from relulab.errors import RelulabError
from relulab.lipschitz import (
    by_enumeration,
    by_milp,
    interval_jacobian_bound,
    lipschitz,
    operator_norm,
    product_bound,
    sampled_lower,
    sdp_bound,
    vector_norm,
)
from relulab.lipschitz.bab import by_bab
from relulab.lipschitz.witness import exact_local_jacobian

INF = math.inf


def rand_net(rng, dims, bias=0.5, skip=False):
    Ws = [rng.standard_normal((dims[i + 1], dims[i])) for i in range(len(dims) - 1)]
    bs = [rng.standard_normal(dims[i + 1]) * bias for i in range(len(dims) - 1)]
    sk = (rng.standard_normal((dims[-1], dims[0])), rng.standard_normal(dims[-1])) if skip else None
    return Network(Ws, bs, sk)


def rand_box(rng, d):
    c = rng.uniform(-1, 1, d)
    w = rng.uniform(0.3, 1.5, d)
    return Box(c - w, c + w)


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


# ------------------------------------------------------------------ routes agree
@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 10**6), d=st.integers(2, 4), depth=st.integers(1, 2),
       m=st.integers(1, 2), which=st.integers(0, 3))
def test_enumeration_and_milp_agree_and_bounds_bracket(seed, d, depth, m, which):
    rng = np.random.default_rng(seed)
    widths = [int(rng.integers(2, 5)) for _ in range(depth)]
    net = rand_net(rng, [d, *widths, m], skip=bool(seed % 5 == 0))
    box = rand_box(rng, d)
    p = (1.0, INF)[which % 2]
    q = None if m == 1 else (1.0, INF)[which // 2]
    e = by_enumeration(net, box, p, q)
    r = by_milp(net, box, p, q)
    assert e.complete and r.complete
    assert e.witness is not None and r.witness is not None
    exact = e.lower
    assert close(e.upper, exact) and close(r.lower, exact), (e.lower, e.upper, r.lower, r.upper)
    assert r.upper >= exact * (1 - 1e-9)
    bab = by_bab(net, box, p, q, max_boxes=64, batch=16)
    for ub in (product_bound(net, p, q), interval_jacobian_bound(net, box, p, q), bab.upper):
        assert ub >= exact * (1 - 1e-9)
    w = sampled_lower(net, box, p, q, n=200, rounds=5)
    assert w is None or w.norm <= exact * (1 + 1e-9)
    assert bab.lower <= exact * (1 + 1e-9)
    # witnesses are inside the box and their Jacobian is the network's there
    for wit in (e.witness, r.witness):
        assert box.contains(wit.x)
        assert np.allclose(net.jacobian(wit.x), wit.jacobian)
        assert close(operator_norm(wit.jacobian, p, q).lower, wit.norm)


def test_front_door_reports_exact_and_witness(rng):
    net = rand_net(rng, [3, 6, 5, 1])
    box = Box(-np.ones(3), np.ones(3))
    for p in (1.0, 2.0, INF, 1.5, 3.0):
        r = lipschitz(net, box, p=p)
        assert r.status == "exact" and r.method == "enumeration"
        assert r.value == r.lower
        e = by_enumeration(net, box, p, None)
        assert close(r.lower, e.lower)
        assert all(u >= r.lower * (1 - 1e-9) for u in r.uppers.values())
        assert all(lo <= r.upper * (1 + 1e-9) for lo in r.lowers.values())
        d = r.to_dict()
        assert d["status"] == "exact" and d["witness"]["source"] in ("enumeration", "sampling")
    rm = lipschitz(net, box, p=1, method="milp")
    assert rm.status == "exact" and rm.method == "milp" and close(rm.lower, lipschitz(net, box, p=1).lower)
    rb = lipschitz(net, box, p=2, method="bounds")
    assert rb.status in ("bounded", "exact") and rb.lower <= rb.upper


# ------------------------------------------------------------------ brute force
def _bfs_max(net, box, p, q=None):
    rs = regions.enumerate(net, box, method="bfs")
    d = net.input_dim
    return max(operator_norm(rs.affine[i, :, :d], p, q).upper for i in range(len(rs))), rs


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("dims", [[1, 8, 1], [1, 5, 4, 1], [1, 6, 3, 2]])
def test_one_dimensional_against_grid_and_region_list(seed, dims):
    rng = np.random.default_rng(100 + seed)
    net = rand_net(rng, dims)
    box = Box([-2.0], [2.0])
    x = np.linspace(-2, 2, 40001)
    y = net(x[:, None])
    slopes = np.abs(np.diff(y, axis=0)) / (x[1] - x[0])  # (n, m)
    q = None if dims[-1] == 1 else INF
    r = lipschitz(net, box, p=1, q=q)
    assert r.status == "exact"
    grid = float(np.max(slopes))
    brute, _ = _bfs_max(net, box, 1, q)
    assert close(r.lower, brute)
    assert grid <= r.lower * (1 + 1e-9)
    assert grid >= r.lower * (1 - 1e-3)  # the grid is far finer than the regions here


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("dims", [[2, 8, 1], [2, 5, 4, 1]])
def test_two_dimensional_against_grid_and_region_list(seed, dims):
    rng = np.random.default_rng(200 + seed)
    net = rand_net(rng, dims)
    box = Box([-1.0, -1.0], [1.0, 1.0])
    g = np.linspace(-1, 1, 201)
    X, Y = np.meshgrid(g, g)
    P = np.stack([X.ravel(), Y.ravel()], 1)
    h = 1e-7
    F0 = net(P)[:, 0]
    grads = np.stack([(net(P + [h, 0])[:, 0] - F0) / h, (net(P + [0, h])[:, 0] - F0) / h], 1)
    for p in (1.0, 2.0, INF):
        r = lipschitz(net, box, p=p)
        assert r.status == "exact"
        brute, _ = _bfs_max(net, box, p)
        assert close(r.lower, brute)
        gmax = float(np.max(vector_norm(grads, {1.0: INF, 2.0: 2.0, INF: 1.0}[p], axis=1)))
        assert gmax <= r.lower * (1 + 1e-5)
        assert gmax >= r.lower * (1 - 1e-3)


# ------------------------------------------------------------------ reductions
@pytest.mark.parametrize("seed", range(3))
def test_linear_network_has_its_affine_constant(seed):
    rng = np.random.default_rng(300 + seed)
    W1 = rng.standard_normal((5, 3)) * 0.1
    b1 = np.full(5, 2.0)  # every neuron stays active on the box
    W2 = rng.standard_normal((2, 5))
    net = Network([W1, W2], [b1, np.zeros(2)])
    box = Box(-np.ones(3), np.ones(3))
    A = W2 @ W1
    for p, q in [(1, 1), (INF, INF), (2, 2), (1, 2), (INF, 1), (3, INF)]:
        r = lipschitz(net, box, p=p, q=q)
        want = operator_norm(A, p, q)
        assert want.exact and r.status == "exact"
        assert close(r.lower, want.lower)
    scalar = Network([W1, W2[:1]], [b1, np.zeros(1)])
    for p in (1, 1.5, 2, 4, INF):
        r = lipschitz(scalar, box, p=p)
        assert r.status == "exact" and close(r.lower, float(vector_norm((W2[:1] @ W1)[0], 1 / (1 - 1 / p) if p not in (1, INF) else (INF if p == 1 else 1))))


@pytest.mark.parametrize("seed", range(3))
def test_homogeneous_global_equals_local_around_origin(seed):
    rng = np.random.default_rng(400 + seed)
    net = rand_net(rng, [2, 6, 5, 1], bias=0.0)
    box = Box([-0.2, -3.0], [0.7, 0.1])  # contains the origin in its interior
    for p in (1.0, 2.0, INF):
        g = lipschitz(net, None, p=p)
        loc = lipschitz(net, box, p=p)
        assert g.status == loc.status == "exact" and close(g.lower, loc.lower)
        whole = by_enumeration(net, None, p, None)  # regions of all of R^2
        assert close(whole.lower, g.lower)


@pytest.mark.parametrize("seed", range(4))
def test_global_milp_by_homogenisation_matches_whole_space_regions(seed):
    rng = np.random.default_rng(500 + seed)
    net = rand_net(rng, [2, 5, 4, 1 + seed % 2], bias=1.0)
    q = None if net.output_dim == 1 else INF
    for p in (1.0, INF):
        e = by_enumeration(net, None, p, q)
        r = by_milp(net, None, p, q)
        assert r.complete and close(e.lower, r.lower) and close(e.upper, r.lower)
        # the global constant is at least every local one
        assert r.lower >= by_enumeration(net, Box([-1, -1], [1, 1]), p, q).lower * (1 - 1e-12)
        res = lipschitz(net, None, p=p, q=q)
        assert res.status == "exact" and close(res.lower, e.lower)
        assert res.witness is not None and np.allclose(net.jacobian(res.witness.x), res.witness.jacobian)


@pytest.mark.parametrize("seed", range(5))
def test_sdp_between_exact_and_spectral_product(seed):
    rng = np.random.default_rng(600 + seed)
    net = rand_net(rng, [2, 6, 5, 1])
    box = Box([-1, -1], [1, 1])
    prod = product_bound(net, 2, None)
    spectral = np.prod([np.linalg.norm(W, 2) for W in net.weights])
    assert close(prod, spectral)
    for dom in (box, None):
        exact = by_enumeration(net, dom, 2, None).lower
        s = sdp_bound(net, dom)
        assert s >= exact * (1 - 1e-9)
        assert s <= spectral * (1 + 1e-6)


def test_time_limit_returns_a_bracket():
    rng = np.random.default_rng(7)
    net = rand_net(rng, [6, 30, 30, 1])
    r = lipschitz(net, Box(-np.ones(6), np.ones(6)), p=INF, time_limit=1.0)
    assert r.lower <= r.upper
    assert r.status in ("exact", "bounded")
    if r.status == "bounded":
        assert r.to_dict()["value"] is None
    # the limit is wall-clock; the CPU seconds the call got are reported next to it
    assert np.isfinite(r.info["cpu_seconds"]) and r.info["cpu_seconds"] >= 0


# ------------------------------------------------------------------ norms
@pytest.mark.parametrize("p,q", [(1, 1), (1, 3), (INF, INF), (2, INF), (2, 2), (INF, 1), (INF, 2), (3, 1), (1.5, 3)])
def test_operator_norm_against_sampling(p, q):
    rng = np.random.default_rng(8)
    A = rng.standard_normal((3, 4))
    b = operator_norm(A, p, q)
    U = rng.standard_normal((20000, 4))
    U = np.vstack([U, np.sign(U[:2000]), np.eye(4), -np.eye(4)])
    vals = vector_norm(U @ A.T, q, axis=1) / vector_norm(U, p, axis=1)
    assert b.lower <= b.upper
    assert vals.max() <= b.upper * (1 + 1e-9)
    assert b.lower <= vals.max() * (1 + 1e-9) or b.exact
    if b.exact:
        assert vals.max() >= b.upper * 0.9


# ------------------------------------------------------------------ bad input
def test_bad_input_errors():
    rng = np.random.default_rng(9)
    net = rand_net(rng, [2, 3, 1])
    vec = rand_net(rng, [2, 3, 2])
    box = Box([-1, -1], [1, 1])
    with pytest.raises(RelulabError, match="p >= 1"):
        lipschitz(net, box, p=0.5)
    with pytest.raises(RelulabError, match="not a number"):
        lipschitz(net, box, p="two")
    with pytest.raises(DomainError, match="empty box"):
        lipschitz(net, ([1, 1], [0, 0]))
    with pytest.raises(DomainError, match="finite"):
        lipschitz(net, ([-np.inf, 0], [1, 1]))
    with pytest.raises(RelulabError, match="zero width"):
        lipschitz(net, ([0, 0], [0, 1]))
    with pytest.raises(RelulabError, match="unbounded"):
        lipschitz(net, Polytope([[1.0, 0.0]], [1.0]), p=1, method="milp")
    with pytest.raises(RelulabError, match="2 outputs; give the output norm q"):
        lipschitz(vec, box, p=1)
    with pytest.raises(RelulabError, match="unknown method"):
        lipschitz(net, box, method="magic")
    with pytest.raises(RelulabError, match="MILP"):
        by_milp(net, box, 2.0, None)
    with pytest.raises(RelulabError, match="method='milp' needs"):
        lipschitz(net, box, p=2, method="milp")


@pytest.mark.parametrize("seed", range(6))
def test_branch_and_bound_closes_on_small_networks(seed):
    rng = np.random.default_rng(700 + seed)
    net = rand_net(rng, [2, 6, 4, 1 + seed % 2])
    box = rand_box(rng, 2)
    for p, q in [(1.0, INF), (2.0, 2.0), (INF, 1.0)]:
        qq = None if net.output_dim == 1 else q
        e = by_enumeration(net, box, p, qq)
        b = by_bab(net, box, p, qq, max_boxes=3000, batch=256)
        assert b.upper >= e.lower * (1 - 1e-9) and b.lower <= e.lower * (1 + 1e-9)
        if b.complete:  # closed to the branch and bound's drop tolerance
            assert b.upper <= e.lower * (1 + 1e-5) + 1e-5
    # over R^d: the faces of the homogenised box
    g = by_enumeration(net, None, 2.0, None if net.output_dim == 1 else 2.0)
    bg = by_bab(net, None, 2.0, None if net.output_dim == 1 else 2.0, max_boxes=1000, batch=256)
    assert bg.upper >= g.lower * (1 - 1e-9) and bg.lower <= g.lower * (1 + 1e-9)
    assert bg.witness is not None and np.allclose(net.jacobian(bg.witness.x), bg.witness.jacobian)


def test_affine_network_every_route():
    rng = np.random.default_rng(10)
    aff = Network([rng.standard_normal((2, 3))], [np.zeros(2)])
    box = Box(-np.ones(3), np.ones(3))
    want = operator_norm(aff.weights[0], INF, 1).lower
    for method in ("auto", "enumerate", "milp", "bab", "bounds"):
        r = lipschitz(aff, box, p=INF, q=1, method=method)
        assert r.status == "exact" and close(r.lower, want)
    assert close(lipschitz(aff, None, p=INF, q=1, method="milp").lower, want)


def test_polytope_domains():
    rng = np.random.default_rng(11)
    net = rand_net(rng, [2, 5, 4, 1])
    tri = Polytope([[1.0, 1.0], [-1.0, 0.0], [0.0, -1.0]], [1.0, 0.0, 0.0])
    for p in (1.0, INF):
        e = lipschitz(net, tri, p=p, method="enumerate")
        m = lipschitz(net, tri, p=p, method="milp")
        assert e.status == m.status == "exact" and close(e.lower, m.lower)
        assert tri.contains(e.witness.x) and tri.contains(m.witness.x)
    half = Polytope([[1.0, 0.0]], [1.0])  # unbounded: enumeration only
    r = lipschitz(net, half, p=2, method="enumerate")
    g = lipschitz(net, None, p=2, method="enumerate")
    assert r.status == "exact" and r.lower <= g.lower * (1 + 1e-12)


# ------------------------------------------------------------------ neurons identically 0 (audit)
def _zero_neuron_net() -> Network:
    """f(x) = 5 relu(relu(x) + relu(-x)) - relu(relu(x)) = 5|x| - relu(x): slopes -5 and
    4.  The second-layer neuron relu(x) reads 0 for x < 0, so its pre-activation is
    identically 0 on the steeper side."""
    return Network([np.array([[1.0], [-1.0]]), np.array([[1.0, 0.0], [1.0, 1.0]]), np.array([[-1.0, 5.0]])],
                   [np.zeros(2), np.zeros(2), np.zeros(1)])


def _max_slope_1d(net: Network, lo: float, hi: float) -> float:
    """Independent: the exact breakpoints on [lo, hi] and the largest |slope| between them."""
    seg = regions.along_segment(net.exact(), [lo], [hi])
    xs = [float(v) for v in np.ravel(seg.points)]
    ys = [float(v) for v in net(np.array(xs)[:, None]).ravel()]
    return max(abs(ys[i + 1] - ys[i]) / (xs[i + 1] - xs[i]) for i in range(len(xs) - 1))


@pytest.mark.parametrize("method", ["auto", "enumerate", "milp", "bab"])
@pytest.mark.parametrize("p", [1.0, math.inf])
def test_a_neuron_identically_zero_on_the_steepest_region_is_not_lost(method, p):
    net = _zero_neuron_net()
    truth = _max_slope_1d(net, -1.0, 1.0)
    assert truth == 5.0
    r = lipschitz(net, Box([-1.0], [1.0]), p=p, method=method)
    assert r.lower <= truth + 1e-9 and r.upper >= truth - 1e-9
    assert r.status == "exact" and r.lower == truth and r.upper - truth <= 1e-6 * truth   # tol: LIP_REL_TOL


def test_a_pruned_neuron_does_not_zero_the_milp_bound():
    """A zero row with zero bias (pre-activation 0 everywhere) beside relu(x): L = 1."""
    net = Network([np.array([[0.0], [1.0]]), np.array([[1.0, 1.0]])], [np.zeros(2), np.zeros(1)])
    assert _max_slope_1d(net, -1.0, 1.0) == 1.0
    for p in (1.0, 2.0, math.inf):
        r = lipschitz(net, Box([-1.0], [1.0]), p=p)
        assert r.status == "exact" and abs(r.lower - 1.0) < 1e-12 and abs(r.upper - 1.0) < 1e-12
    assert lipschitz(net, Box([-1.0], [1.0]), p=1.0, method="milp").upper >= 1.0
    # the sampled lower bound no longer discards every point for the pruned neuron
    w = sampled_lower(net, Box([-1.0], [1.0]), 2, None, n=50, rounds=2)
    assert w is not None and w.norm == 1.0


def test_milp_keeps_its_bound_when_a_full_dimensional_region_has_no_witness(monkeypatch):
    """Only regions without interior may be cut off: with every witness refused, the MILP
    must still bound the true constant from above and claim nothing exact."""
    from relulab.lipschitz import milp as lipmilp

    monkeypatch.setattr(lipmilp, "certify_point", lambda *a, **k: None)
    o = lipmilp.by_milp(_zero_neuron_net(), Box([-1.0], [1.0]), 1.0, None)
    assert o.upper >= 5.0 - 1e-9 and o.witness is None


def test_exact_local_jacobian_against_finite_differences():
    rng = np.random.default_rng(7)
    net = _zero_neuron_net()
    for x in rng.uniform(-1, 1, size=20):
        J = exact_local_jacobian(net, np.array([x]))
        h = 1e-6 * abs(x)
        fd = (net(np.array([[x + h]])) - net(np.array([[x - h]]))).item() / (2 * h)
        assert J is not None and abs(J[0, 0] - fd) < 1e-6
    assert exact_local_jacobian(net, np.array([0.0])) is None   # the kink of |x|


def _wide_net(seed=1, w=(10, 80, 80, 1)):
    rng = np.random.default_rng(seed)
    return Network([rng.standard_normal((b, a)) / np.sqrt(a) for a, b in zip(w[:-1], w[1:], strict=True)],
                   [rng.standard_normal(b) * 0.3 for b in w[1:]])


def test_a_local_sdp_too_big_for_the_time_left_is_skipped_and_the_result_partial():
    from relulab.limits import ResourceLimitError
    from relulab.lipschitz.sdp import _check_sdp_size

    _check_sdp_size(20, 1.0)                              # small: fine
    with pytest.raises(ResourceLimitError, match="per iteration"):
        _check_sdp_size(170, 0.3)                         # a 14,535-row KKT block
    net, box = _wide_net(), Box([-1] * 10, [1] * 10)
    r = lipschitz(net, box, p=2, method="auto", time_limit=0.3)
    assert r.partial and r.status == "bounded" and r.upper >= r.lower
    # the bound is still an upper bound: above the norm of any sampled Jacobian
    X = np.random.default_rng(0).uniform(-1, 1, (200, 10))
    assert max(np.linalg.norm(net.jacobian(x), 2) for x in X) <= r.upper * (1 + 1e-9)


def test_enumeration_cut_by_the_deadline_inside_the_engine_claims_no_upper_bound():
    import time

    from relulab.lipschitz.enumeration import by_enumeration

    net, box = _wide_net(), Box([-1] * 10, [1] * 10)
    o = by_enumeration(net, box, 1.0, None, deadline=time.time() + 0.05)
    assert not o.complete and o.upper == np.inf
    report: dict = {}
    got = list(regions.iter_regions(net, box, deadline=time.time() - 1, report=report))
    assert report["partial"] and "time limit" in report["stopped"] and len(got) == 0
    small = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    report = {}
    assert len(list(regions.iter_regions(small, Box([-1], [1]), report=report))) == 2
    assert report == {"partial": False, "stopped": None, "certified": True, "near_ties": 0}


def test_an_upper_bound_below_the_checked_lower_bound_never_closes_the_bracket(monkeypatch):
    # an SDP over [-1e200, 1e200]^2 once returned 2.8e-6 under a re-checked witness of
    # 1.22, and the bracket was called exact at 1.22 (the truth, over R^2, is larger)
    import relulab.lipschitz.core as core

    rng = np.random.default_rng(0)
    net = Network([rng.normal(size=(6, 2)), rng.normal(size=(1, 6))], [rng.normal(size=6), np.zeros(1)])
    box = Box([-1.0, -1.0], [1.0, 1.0])
    monkeypatch.setattr(core, "sdp_bound", lambda *a, **k: 1e-9)
    r = core.lipschitz(net, box, p=2, method="bounds", sdp=True)
    truth = lipschitz(net, box, p=2, method="enumerate").upper
    assert r.info["failed_uppers"] == {"sdp": 1e-9}
    assert r.upper >= truth * (1 - 1e-9) and "sdp" not in r.uppers


def test_bounds_that_overflow_float64_are_refused():
    from relulab.bounds import BoundsOverflow, crown_batch, float_layers

    net = Network([np.array([[1.0, -1.0], [2.0, 1.0]]), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
    Ws, bs, _ = float_layers(net)
    with pytest.raises(BoundsOverflow, match="overflowed float64"):
        crown_batch(Ws, bs, np.full((1, 2), -1e308), np.full((1, 2), 1e308))
    pre, _ = crown_batch(Ws, bs, np.full((1, 2), -1e3), np.full((1, 2), 1e3))
    assert np.isfinite(pre[0][0]).all()


def test_the_milp_route_is_not_fooled_by_coefficients_highs_drops():
    # 1e10 relu(1e-10 x2) put an entry of 1e-10 into the MILP; HiGHS drops entries up to
    # 1e-9 and the route said "exact 1" for a constant of 2 (and "exact 0" for relu(x)
    # written as 1e9 relu(1e-9 x)).  Neurons are balanced first; what stays tiny makes
    # the MILP's bound no bound.
    from relulab.lipschitz.milp import by_milp

    net = Network([[[1.0, 0.0], [0.0, 1e-10]], [[1.0, 1e10]]], [[0.0, 0.0], [0.0]])
    assert float(net([[1.0, 1.0]])[0, 0] - net([[0.0, 0.0]])[0, 0]) == 2.0  # so L >= 2
    r = lipschitz(net, Box([-1, -1], [1, 1]), p=float("inf"), method="milp")
    assert r.status == "exact" and r.upper == pytest.approx(2.0)
    for dom in (Box([-1], [1]), None):
        r = lipschitz(Network([[[1e-9]], [[1e9]]], [[0.0], [0.0]]), dom, p=1, method="milp")
        assert r.status == "exact" and r.upper == pytest.approx(1.0)
    # a tiny weight beside a large one in the same row cannot be balanced away
    tiny = Network([[[1.0, 1e-10]], [[1.0]]], [[0.0], [0.0]])
    o = by_milp(tiny, Box([-1, -1], [1, 1]), float("inf"), None)
    assert not o.complete and o.upper == float("inf") and o.info["small_coefficients_dropped"]
    assert o.lower == pytest.approx(1.0)  # the certified witness stands


def test_a_milp_failure_far_from_the_origin_names_the_domain():
    # a box of width 2 at 1e12: HiGHS called the (feasible by construction) program
    # "infeasible" and the error said only that
    rng = np.random.default_rng(3)
    net = Network([rng.normal(size=(5, 2)), rng.normal(size=(4, 5)), rng.normal(size=(1, 4))],
                  [rng.normal(size=5), rng.normal(size=4), rng.normal(size=1)])
    box = Box([1e12 - 1, 1e12 - 1], [1e12 + 1, 1e12 + 1])
    ref = lipschitz(net, box, p=1, method="enumerate")
    try:
        r = lipschitz(net, box, p=1, method="milp")
    except RelulabError as e:
        msg = str(e)
        assert "1e+12 from the origin" in msg and "method='enumerate'" in msg and "\n" not in msg
    else:  # a solver that copes must still bracket the constant
        assert r.lower <= ref.upper * (1 + 1e-9) and r.upper >= ref.lower * (1 - 1e-9)


def test_the_whole_space_enumeration_gets_the_time_limit(monkeypatch):
    # lipschitz(..., method="enumerate") over R^d never passed its deadline on: a 2 s
    # limit ran 100 s on a 3-40-40-1 network
    from conftest import record_kwarg

    import relulab.regions as R

    seen = record_kwarg(monkeypatch, R, "enumerate", "time_limit")
    net = Network([[[1.0, 0.5], [-1.0, 2.0]], [[1.0, -1.0]]], [[0.0, 0.1], [0.0]])
    r = lipschitz(net, None, p=1, method="enumerate", time_limit=30)
    assert seen and all(v is not None and 0 < v <= 30 for v in seen)
    assert r.status == "exact"


def test_a_domain_beyond_highs_gives_a_bracket_of_the_constant():
    # method="bab" on [-1e100, 1e100]^2 raised a bare RuntimeError from the Chebyshev LP,
    # then an LPError; a failed region LP now leaves its box open instead, and the answer
    # must bracket the constant (here the global one: the steepest region is unbounded)
    from relulab.examples import tiny_2d

    ref = lipschitz(tiny_2d(), None, p=1, method="enumerate")
    assert ref.status == "exact"
    r = lipschitz(tiny_2d(), Box([-1e100] * 2, [1e100] * 2), p=1, method="bab", time_limit=5)
    assert r.lower <= ref.value * (1 + 1e-9) and r.upper >= ref.value * (1 - 1e-9)
    assert r.lower >= ref.value * (1 - 1e-9) or r.status != "exact"


def test_a_witness_is_not_certified_through_carried_rounding():
    # f = x - relu(z2) with z2 = relu(3e12 x - 3e12) - 3 relu(1e12 x - 1e12) + x + c: exactly
    # z2 = x + c > 0 on the box, so f = -c is constant (L = 0).  In float64 the first layer's
    # rounding (~1e-4) flips z2's sign at sampled points, and such a point was certified as
    # a witness of slope 1: a lower bound of 1 for a constant network
    from fractions import Fraction

    from relulab.lipschitz.witness import certify_point

    lo, hi = 1 + 3e-9, 1 + 6e-9
    c = -hi + 1.2e-4
    net = Network([[[3e12], [1e12], [1.0]], [[1.0, -3.0, 1.0]], [[-1.0]]], [[-3e12, -1e12, 0.0], [c], [0.0]],
                  skip=([[1.0]], [0.0]))
    ex = net.exact()
    xs = lo + (hi - lo) * np.random.default_rng(0).random(300)
    flipped = 0
    for x in xs:
        if net.preactivations(np.array([[x]]))[1][0, 0] < 0:
            flipped += 1
            assert ex.preactivations(np.array([[Fraction(x)]], dtype=object))[1][0][0] > 0   # exactly
            w = certify_point(net, np.array([x]), 2, None, "t", Box([lo], [hi]))
            assert w is None or w.norm == 0.0
    assert flipped > 0
    r = lipschitz(net, Box([lo], [hi]), p=2, method="bounds")
    assert r.lower == 0.0


@pytest.mark.parametrize("eps", [1e-14, 1e-16, 1e-20])
@pytest.mark.parametrize("method", ["milp", "bab"])
def test_a_slab_thinner_than_the_lp_tolerance_is_not_dropped(eps, method):
    # f = relu(x) - relu(x - eps) has slope 1 on (0, eps), a slab full of floats; HiGHS's
    # Chebyshev radius there is 0, the slab was dropped and L = 1 was called exactly 0
    net = Network([[[1.0], [1.0]], [[1.0, -1.0]]], [[0.0, -eps], [0.0]])
    r = lipschitz(net, Box([-1.0], [1.0]), p=1, method=method)
    assert r.upper >= 1.0 - 1e-12 and (r.status != "exact" or r.value == pytest.approx(1.0, rel=1e-9))


def test_exact_needs_the_bracket_relative_to_the_constant():
    # (upper - lower) <= 1e-6 (1 + lower) called constants near 3e-8 exact with a bracket
    # twice as wide; the test is now relative to the constant itself
    from relulab.lipschitz.core import LIP_REL_TOL

    net = Network([[[3e-8]], [[1.0]]], [[0.1], [0.0]])   # slope 3e-8 on the box
    r = lipschitz(net, Box([0.0], [1.0]), p=2)
    assert r.status == "exact" and r.value == pytest.approx(3e-8, rel=1e-12)
    assert r.upper - r.lower <= LIP_REL_TOL * r.lower
