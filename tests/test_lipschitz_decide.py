"""Positivity, surjectivity and zonotope containment against brute force: every region's
vertices (boxes), one LP per region (R^d), dense sampling, and an LP membership test of
every vertex of the inner zonotope."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from relulab import Box, Network, regions
from relulab.domain import Polytope
from relulab.errors import RelulabError
from relulab.lipschitz import Zonotope, is_positive, surjective, zonotope_contains
from relulab.lp import solve


def rand_net(rng, dims, bias=1.0, shift=0.0):
    Ws = [rng.standard_normal((dims[i + 1], dims[i])) for i in range(len(dims) - 1)]
    bs = [rng.standard_normal(dims[i + 1]) * bias for i in range(len(dims) - 1)]
    bs[-1] = bs[-1] + shift
    return Network(Ws, bs)


def exact_value(net, x):
    return net.exact()(np.array([[Fraction(float(v)) for v in x]], dtype=object))[0, 0]


def box_max_by_vertices(net, box):
    """max f over the box: every region's vertices (an affine piece peaks at a vertex)."""
    rs = regions.enumerate(net, box, vertices=True)
    V = np.vstack([rs[i].vertices for i in range(len(rs))])
    return float(np.max(net(V)))


def region_sup(net, dom):
    """sup f over the domain, region by region with one LP each (inf when unbounded)."""
    rs = regions.enumerate(net, dom)
    d = net.input_dim
    best = -np.inf
    for R in rs:
        C, c = R.affine
        r = solve(-C[0], A_ub=R.A, b_ub=R.b + 1e-12)
        if r.status in ("unbounded", "infeasible_or_unbounded"):
            return np.inf
        assert r.ok
        best = max(best, float(-r.objective + c[0]))
    assert d == rs.dim
    return best


@pytest.mark.parametrize("seed", range(12))
def test_is_positive_on_a_box_against_vertices_and_samples(seed):
    rng = np.random.default_rng(seed)
    d = 2 if seed % 3 else 3
    net = rand_net(rng, [d, 5, 4, 1], shift=-1.5 * (seed % 2))
    box = Box(-np.ones(d), np.ones(d))
    brute = box_max_by_vertices(net, box)
    sampled = float(np.max(net(box.sample(20000, rng))))
    assert sampled <= brute + 1e-9
    r = is_positive(net, box)
    if brute > 1e-6:
        assert r.positive is True
        assert box.contains(r.witness) and exact_value(net, r.witness) > 0
    elif brute < -1e-6:
        assert r.positive is False and r.witness is None
    assert abs(r.maximum - brute) <= 1e-6 * (1 + abs(brute))


@pytest.mark.parametrize("seed", range(12))
def test_is_positive_on_rd_against_region_lps(seed):
    rng = np.random.default_rng(100 + seed)
    net = rand_net(rng, [2, 4, 3, 1], shift=-2.0 * (seed % 3))
    if seed % 4 == 0:  # make it bounded above: -|.| of something, minus a constant
        inner = rand_net(rng, [2, 3, 1])
        W = inner.weights
        net = Network([np.vstack([W[0]]), np.vstack([W[1], -W[1]]), np.array([[-1.0, -1.0]])],
                      [inner.biases[0], np.r_[inner.biases[1], -inner.biases[1]], np.array([-0.3])])
    sup = region_sup(net, Polytope.whole_space(2))
    r = is_positive(net)
    assert r.positive == (sup > 0)
    if r.positive:
        assert exact_value(net, r.witness) > 0
    # dense sampling at growing radii never contradicts a "no"
    X = rng.standard_normal((20000, 2)) * np.logspace(-1, 4, 20000)[:, None]
    if r.positive is False:
        assert float(np.max(net(X))) <= 1e-9


@pytest.mark.parametrize("seed", range(10))
def test_surjective_against_region_lps(seed):
    rng = np.random.default_rng(200 + seed)
    net = rand_net(rng, [2, 6, 1])
    if seed % 3 == 0:  # |affine| plus offset: bounded below
        w, b = rng.standard_normal(2), rng.standard_normal()
        net = Network([np.vstack([w, -w]), np.array([[1.0, 1.0]])], [np.array([b, -b]), np.array([0.3])])
    if seed % 3 == 1:  # all-positive output weights of relus: bounded below by the bias
        net = Network([rng.standard_normal((3, 2)), np.abs(rng.standard_normal((1, 3)))],
                      [rng.standard_normal(3), np.zeros(1)])
    up = region_sup(net, Polytope.whole_space(2)) == np.inf
    down = region_sup(-net, Polytope.whole_space(2)) == np.inf
    r = surjective(net)
    assert r.surjective == (up and down)
    if r.surjective:
        g = Network(list(net.weights), [np.zeros_like(b) for b in net.biases])
        assert g(r.up[None])[0, 0] > 0 and g(r.down[None])[0, 0] < 0
    else:
        # the missed value is never attained: check far and near
        X = rng.standard_normal((20000, 2)) * np.logspace(-2, 4, 20000)[:, None]
        vals = net(X)[:, 0]
        assert np.all(vals < r.missed) or np.all(vals > r.missed)


def lp_contains(Z1, Z2):
    """Independent test: every vertex c1 + G1 s of Z1 lies in Z2 (one LP each)."""
    k1 = Z1.generators.shape[1]
    for s in itertools.product((-1.0, 1.0), repeat=k1):
        z = Z1.center + Z1.generators @ np.array(s)
        if not lp_member(z, Z2):
            return False, z
    return True, None


def lp_member(z, Z2, tol=1e-9):
    k2 = Z2.generators.shape[1]
    r = solve(np.zeros(k2), A_eq=Z2.generators, b_eq=z - Z2.center, lb=-np.ones(k2) - tol,
              ub=np.ones(k2) + tol)
    return r.ok


@pytest.mark.parametrize("seed", range(16))
def test_zonotope_containment_against_vertex_lps(seed):
    rng = np.random.default_rng(300 + seed)
    n = 2 + seed % 2
    Z2 = Zonotope(rng.standard_normal(n) * 0.2, rng.standard_normal((n, 3 + seed % 3)))
    if seed % 2:
        # a shrunken, shifted copy with extra small generators: often contained
        G = np.hstack([Z2.generators * 0.6, rng.standard_normal((n, 1)) * 0.05])
        Z1 = Zonotope(Z2.center + rng.standard_normal(n) * 0.1, G)
    else:
        Z1 = Zonotope(rng.standard_normal(n) * 0.3, rng.standard_normal((n, 3)) * 0.5)
    want, _ = lp_contains(Z1, Z2)
    r = zonotope_contains(Z1, Z2)
    assert r.contained == want
    if not r.contained:
        # the point is a vertex of Z1 and is outside Z2 (separated by the direction)
        s = np.sign(Z1.generators.T @ r.direction)
        assert np.allclose(r.point, Z1.center + Z1.generators @ s)
        assert not lp_member(r.point, Z2, tol=1e-12)
        assert r.direction @ r.point > Z2.support(r.direction)
    # dense sampling of Z1 never lands outside Z2 when contained
    if r.contained:
        L = rng.uniform(-1, 1, (2000, Z1.generators.shape[1]))
        P = Z1.center + L @ Z1.generators.T
        assert all(lp_member(x, Z2, 1e-7) for x in P[:50])


def test_decision_bad_input():
    rng = np.random.default_rng(1)
    vec = rand_net(rng, [2, 3, 2])
    with pytest.raises(RelulabError, match="scalar output"):
        is_positive(vec)
    with pytest.raises(RelulabError, match="scalar output"):
        surjective(vec)
    with pytest.raises(RelulabError, match="dimension"):
        zonotope_contains(Zonotope([0, 0], np.eye(2)), Zonotope([0, 0, 0], np.eye(3)))
    with pytest.raises(RelulabError, match="do not match"):
        Zonotope([0, 0], np.eye(3))
    with pytest.raises(RelulabError, match="unbounded"):
        is_positive(rand_net(rng, [2, 3, 1]), Polytope([[1.0, 0.0]], [1.0]))


def test_affine_and_constant_networks():
    from relulab import verify

    rng = np.random.default_rng(2)
    lin = Network([rng.standard_normal((1, 3))], [np.zeros(1)])
    const = Network([np.zeros((1, 3))], [-np.ones(1)])
    assert verify.is_positive is is_positive  # re-exported
    assert is_positive(lin).positive and surjective(lin).surjective
    r = is_positive(const)
    assert r.positive is False and r.witness is None
    s = surjective(const)
    assert s.surjective is False and s.missed is not None and s.missed != -1.0
    # a dead hidden layer (all pre-activations identically 0) is not an infeasible MILP
    dead = Network([np.zeros((2, 2)), np.ones((1, 2))], [np.zeros(2), np.array([0.5])])
    assert is_positive(dead, Box([-1, -1], [1, 1])).positive
    assert surjective(dead).surjective is False
