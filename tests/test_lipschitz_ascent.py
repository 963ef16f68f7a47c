"""ascent_lower: every value is a certified lower bound (<= the exact constant from region
enumeration, on boxes and on all of R^d), its witness is re-checked by an independent
forward-mode Jacobian, it reaches the exact value on small networks, and bad input
raises one clear error each."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relulab import Box, Network
from relulab.domain import Polytope
from relulab.errors import RelulabError
from relulab.lipschitz import ascent_lower, by_enumeration, operator_norm

pytest.importorskip("torch")

INF = math.inf
REL = 1e-9   # the certified norm against an exact value: float rounding only


def rand_net(rng, dims, bias=0.5, skip=False):
    Ws = [rng.standard_normal((dims[i + 1], dims[i])) for i in range(len(dims) - 1)]
    bs = [rng.standard_normal(dims[i + 1]) * bias for i in range(len(dims) - 1)]
    sk = (rng.standard_normal((dims[-1], dims[0])), rng.standard_normal(dims[-1])) if skip else None
    return Network(Ws, bs, sk)


def recheck(net, w, p, q, box=None):
    """The witness, checked by other means: inside the box, strictly inside its region
    (a small ball around x has the same activation pattern, checked by sampling), the
    Jacobian equals Network.jacobian at x, and the norm is the operator norm of it."""
    if box is not None:
        assert np.all(w.x >= box.lo) and np.all(w.x <= box.hi)
    J = net.jacobian(w.x[None] if net.input_dim > 0 else w.x)
    J = np.asarray(J, float).reshape(w.jacobian.shape)
    assert np.allclose(J, w.jacobian, rtol=1e-12, atol=1e-12)
    nb = operator_norm(J, p, q)
    assert w.norm <= nb.upper * (1 + REL) and w.norm >= nb.lower * (1 - REL)
    pat = net.pattern_vector(w.x[None])[0]
    rng = np.random.default_rng(0)
    near = w.x + 1e-10 * (1 + np.abs(w.x).max()) * rng.standard_normal((20, w.x.size))
    assert np.all(net.pattern_vector(near) == pat)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), d=st.integers(1, 3), depth=st.integers(1, 2),
       m=st.integers(1, 2), which=st.integers(0, 3), whole=st.booleans())
def test_ascent_is_a_lower_bound_of_the_enumerated_constant(seed, d, depth, m, which, whole):
    rng = np.random.default_rng(seed)
    widths = [int(rng.integers(2, 6)) for _ in range(depth)]
    net = rand_net(rng, [d, *widths, m], bias=0.0 if whole else 0.5, skip=seed % 4 == 0)
    p = (1.0, 1.5, 2.0, INF)[which]
    q = None if m == 1 else (1.0, INF)[which % 2]
    box = Box(-np.ones(d), np.ones(d))
    # a bias-free network's regions are cones from 0, so [-1, 1]^d sees every one of them:
    # its global constant is the enumerated one on the box
    dom = None if whole else box
    exact = by_enumeration(net, box, p, q)
    w = ascent_lower(net, dom, p, q, restarts=8, steps=40, seed=seed % 7)
    if w is None:
        return
    assert w.norm <= exact.upper * (1 + REL) + 1e-12
    recheck(net, w, p, q, None if whole else box)


@pytest.mark.parametrize("p", [1.0, 2.0, INF])
def test_ascent_reaches_the_exact_constant_of_small_networks(p):
    hits = 0
    for seed in range(6):
        net = rand_net(np.random.default_rng(100 + seed), [2, 6, 1], bias=0.5)
        box = Box([-1.0, -1.0], [1.0, 1.0])
        exact = by_enumeration(net, box, p, None).upper
        w = ascent_lower(net, box, p, None, restarts=32, steps=100)
        assert w is not None and w.norm <= exact * (1 + REL)
        hits += w.norm >= exact * (1 - 1e-6)
    assert hits >= 5


def test_ascent_beats_typical_points_in_high_dimension():
    # for p = 1 the constant is the largest coordinate of the gradient over x; in d = 24
    # a random point's gradient spreads over all coordinates, the ascent concentrates it
    rng = np.random.default_rng(3)
    d, n = 24, 96
    net = Network([rng.standard_normal((n, d)) * np.sqrt(2 / d), rng.standard_normal((1, n)) / np.sqrt(n)],
                  [np.zeros(n), np.zeros(1)])
    X = rng.standard_normal((4000, d))
    typical = np.max(np.abs(np.asarray([net.jacobian(x[None]).ravel() for x in X[:400]])), axis=1)
    w = ascent_lower(net, None, 1.0, None, restarts=48, steps=150)
    recheck(net, w, 1.0, None)
    assert w.norm > 1.2 * typical.max()


def test_linear_network_gives_its_matrix_norm():
    W = np.array([[1.0, -2.0, 0.5]])
    net = Network([np.eye(3), W], [np.full(3, 10.0), np.zeros(1)])  # every neuron active on the box
    w = ascent_lower(net, Box(-np.ones(3), np.ones(3)), 1.0, None, restarts=4, steps=10)
    assert w.norm == pytest.approx(2.0, rel=1e-12)


def test_bad_input():
    net = Network([[[1.0, 0.0]], [[1.0]]], [[0.0], [0.0]])
    with pytest.raises(RelulabError, match="p >= 1"):
        ascent_lower(net, None, 0.5, None)
    with pytest.raises(RelulabError, match="Box or None"):
        ascent_lower(net, Polytope.whole_space(2), 1.0, None)
    with pytest.raises(RelulabError, match="dimension"):
        ascent_lower(net, Box([0.0], [1.0]), 1.0, None)
    with pytest.raises(RelulabError, match="restarts"):
        ascent_lower(net, None, 1.0, None, restarts=0)
    with pytest.raises(RelulabError, match="lr"):
        ascent_lower(net, None, 1.0, None, lr=float("nan"))
