"""Soundness regressions of the symmetry package: an ``equal`` answer and its
``upper_bound`` must cover what merging near-equal rows, grouping near-equal hyperplanes
and the MILP's tolerances change; bad tolerances are rejected."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from relulab import Box, Network
from relulab.errors import RelulabError
from relulab.symmetry import (
    EquivalenceError,
    equivalent,
    equivalent_one_hidden_layer,
    one_hidden_layer_normal_form,
    random_symmetry,
    reduce,
)


def _exact_gap(f: Network, g: Network, x) -> float:
    xe = np.array([Fraction(float(v)) for v in x], dtype=object)
    return float(max(abs(a - b) for a, b in zip(f.exact()(xe), g.exact()(xe), strict=True)))


def test_merging_near_equal_rows_is_not_taken_for_equality():
    # relu(x) and relu(x + 5e-13) agree to merge_tol after normalising, but with outgoing
    # weights +-1e12 the merge changes the function by 0.5 on x > 0.
    f = Network([[[1.0], [1.0]], [[1e12, -1e12]]], [[0.0, 5e-13], [0.0]])
    g = Network([[[1.0]], [[0.0]]], [[0.0], [0.0]])
    box = Box([-1], [1])
    assert abs(float(f([1.0])[0]) + 0.5) < 1e-3
    r = equivalent(f, g, box)
    assert r.status == "different" and r.gap > 0.4
    red = reduce(f, box)
    # either unverified, or (redone merging identical rows only) the function is kept
    X = np.linspace(-1.0, 1.0, 41)[:, None]
    assert red.status != "verified" or np.allclose(red.network(X), f(X), atol=1e-6)
    assert red.status == "verified" and red.widths_after == (2,)


def test_canonical_upper_bound_covers_exact_difference():
    # an exactly mergeable duplicate (relu(2x) / 2 = relu(x)) and a rescaled copy: still
    # 'equal' by normal forms, and upper_bound bounds the exact difference at sampled points
    f = Network([[[1.0, 0.5], [2.0, 1.0], [-1.0, 3.0]], [[1.0, 0.25, -2.0]]], [[0.1, 0.2, 0.3], [0.0]])
    g = random_symmetry(f, 5)
    box = Box([-1, -1], [1, 1])
    r = equivalent(f, g, box)
    assert r.status == "equal" and r.method == "canonical"
    assert r.upper_bound is not None and 0 < r.upper_bound <= r.tol
    for x in box.sample(50, np.random.default_rng(0)):
        assert _exact_gap(f, g, x) <= r.upper_bound


def test_far_parallel_hyperplanes_are_not_grouped():
    # relu(x + 1e6) - relu(x + 1e6 + 1e-4) = -1e-4 for x > -1e6: not the zero network
    f = Network([[[1.0], [1.0]], [[1.0, -1.0]]], [[1e6, 1e6 + 1e-4], [0.0]])
    g = Network([[[1.0]], [[0.0]]], [[0.0], [0.0]])
    r = equivalent_one_hidden_layer(f, g)
    assert r.status == "different" and r.gap > r.tol
    assert _exact_gap(f, g, r.witness) == pytest.approx(r.gap)
    assert equivalent(f, g).status == "different"
    assert equivalent(f, g, Box([-5], [5])).status == "different"
    nf = one_hidden_layer_normal_form(f)
    X = np.linspace(-5, 5, 7)[:, None]
    assert np.allclose(nf(X), f(X), atol=1e-9, rtol=0)


def test_algebraic_equal_states_a_sound_bound():
    f = Network([[[1.0, 2.0], [-3.0, 1.0]], [[1.0, -2.0]]], [[0.5, -1.0], [0.25]])
    g = random_symmetry(f, 3)
    r = equivalent_one_hidden_layer(f, g)
    assert r.status == "equal"
    c0, c1 = r.details["bound_const"], r.details["bound_slope"]
    assert c0 <= r.tol and c1 <= r.tol
    for x in np.random.default_rng(1).normal(size=(20, 2)) * 100:
        assert _exact_gap(f, g, x) <= c0 + c1 * float(np.max(np.abs(x)))


@pytest.mark.parametrize("tol", [-1.0, float("nan"), float("inf")])
def test_bad_tolerance_is_rejected(tol):
    net = Network([[[1.0, 2.0], [3.0, -1.0]], [[1.0, -2.0]]], [[0.0, 1.0], [0.25]])
    g = random_symmetry(net, 1)
    with pytest.raises(EquivalenceError, match="tol must be a finite number >= 0") as e:
        equivalent(net, g, Box([-1, -1], [1, 1]), tol=tol)
    assert isinstance(e.value, RelulabError) and "\n" not in str(e.value)
    with pytest.raises(EquivalenceError):
        equivalent(net, g, tol=tol)          # domain None: the algebraic path
    with pytest.raises(EquivalenceError):
        one_hidden_layer_normal_form(net, rtol=tol)


def test_verifier_upper_bound_includes_the_milp_tolerance():
    from relulab.domain import Polytope

    Ws = [[[-0.439124344760148, -0.5529039498746277, -0.9869397194888846],
           [0.014650499988150895, -0.20373558669609843, -0.9388478808828815],
           [0.5468612426220114, -1.4739679616106949, -1.2200334117373597]],
          [[-0.9819861117376598, 0.34474156194149885, 0.1547947148900919],
           [-0.5288807938776354, 0.18567186315863615, 0.08336976533636076]],
          [[1.5497400627535314, -0.9729495954109538], [0.19515893701717918, 1.1696424463325281]]]
    bs = [[-50.0, -0.37300741662876047, -0.8278428306913074], [-0.050271630464222415, -0.027075433666157642],
          [-0.3745464049267471, -0.8710301444985887]]
    f = Network(Ws, bs)
    Wg = [np.array(W) for W in Ws]
    Wg[1][1, 2] += 1e-8
    g = Network(Wg, bs)
    dom = Polytope(np.vstack([-np.eye(3), np.ones((1, 3))]), [0.5, 0.5, 0.5, 0.5])
    r = equivalent(f, g, dom)
    x = np.array([1.452727198138514, -0.49155013913083856, -0.46561425388326083])
    assert dom.contains(x)
    if r.upper_bound is not None:
        assert _exact_gap(f, g, x) <= r.upper_bound
    if r.status == "equal":
        assert r.upper_bound <= r.tol
