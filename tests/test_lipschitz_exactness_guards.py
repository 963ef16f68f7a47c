"""Lipschitz answers that rest on float decisions (aud_lip5): witnesses outside the
domain, parts of the constant hidden under the MILP's tolerances, witnesses certified on
a rescaled copy, and surjectivity read from a maximum within tolerance of 0."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from relulab import Box, Network, Polytope
from relulab.lipschitz import is_positive, lipschitz, surjective


def _exact_inside(P: Polytope, w: np.ndarray) -> bool:
    X = [Fraction(float(v)) for v in w]
    return all(sum((Fraction(float(a)) * x for a, x in zip(row, X, strict=True)), Fraction(0)) <= Fraction(float(r))
               for row, r in zip(P.A, P.b, strict=True))


def _exact_f(net: Network, w: np.ndarray) -> Fraction:
    return net.exact()(np.array([[Fraction(float(v)) for v in w]], dtype=object))[0, 0]


def test_is_positive_witness_lies_in_the_polytope_exactly():
    """f = relu(x) - 1 on [0, 1] written as a polytope is <= 0 there, 0 at x = 1: the
    solver's vertex 1 + 2^-52 (outside) was the 'positive' witness."""
    P = Polytope(np.array([[1e-3], [-1e-3]]), np.array([1e-3, 0.0]))
    f = Network([[[1.0]], [[1.0]]], [[0.0], [-1.0]])
    r = is_positive(f, P)
    assert r.positive is not True


@pytest.mark.parametrize("seed", range(8))
def test_is_positive_on_touching_half_planes(seed):
    """f = relu(a.x) - b on {a.x <= b} and a box: <= 0 on the domain, touching 0 on an
    edge.  A 'positive' answer must come with a witness inside, in exact arithmetic."""
    rng = np.random.default_rng(seed)
    d = 2 + seed % 3
    a = rng.normal(size=d)
    b = float(abs(rng.normal()) + 0.1)
    P = Polytope(np.vstack([a, np.eye(d), -np.eye(d)]), np.r_[b, 2 * np.ones(d), 2 * np.ones(d)])
    f = Network([a[None, :], [[1.0]]], [[0.0], [-b]])
    r = is_positive(f, P)
    if r.positive:
        assert _exact_inside(P, r.witness) and _exact_f(f, r.witness) > 0
    assert r.positive is not True   # f <= 0 on the whole domain


def test_surjective_does_not_read_a_tolerance_zero_as_bounded():
    """relu(relu((1 + 1e-10) x) - relu(x)) - relu(-x) is 1e-10 x for x > 0: onto R."""
    eps = 1e-10
    f = Network([[[1.0 + eps], [1.0], [-1.0]], [[1.0, -1.0, 0.0], [0.0, 0.0, 1.0]], [[1.0, -1.0]]],
                [[0.0, 0.0, 0.0], [0.0, 0.0], [0.0]])
    r = surjective(f)
    assert r.surjective is not False or r.within_tolerance
    if r.surjective:   # f is its own recession function (no biases)
        assert _exact_f(f, r.up) > 0 and _exact_f(f, r.down) < 0


def test_surjective_missed_value_is_not_taken():
    """1e17 - |x| is bounded above by 1e17 = f(0); the 'missed' value K + 1.0 rounded to
    1e17 itself."""
    g = Network([[[1.0], [-1.0]], [[-1.0, -1.0]]], [[0.0, 0.0], [1e17]])
    r = surjective(g)
    assert r.status == "bounded above" and Fraction(r.missed) > 10**17


@pytest.mark.parametrize("c", [61.0, 100.0])
def test_milp_route_is_not_exact_with_a_part_hidden_by_its_tolerances(c):
    """K relu(relu((1 + eps) x1) - relu(x1)) + c relu(x2), K = 1e6, eps = 3e-9: the constant
    (p = inf) is c + K eps = c + 0.003; the MILP read c, and the sampled lower bound
    dropped every sample near the tiny neuron, so 'exact c' stood."""
    d, K, eps = 6, 1e6, 3e-9
    W1 = np.zeros((3, d))
    W1[0, 0], W1[1, 0], W1[2, 1] = 1 + eps, 1.0, 1.0
    net = Network([W1, np.array([[1.0, -1.0, 0.0], [0.0, 0.0, 1.0]]), np.array([[K, c]])],
                  [np.zeros(3), np.zeros(2), np.zeros(1)])
    true = float(c + K * (Fraction(1 + eps) - 1))
    r = lipschitz(net, Box(-np.ones(d), np.ones(d)), p=float("inf"))
    assert r.lower <= true * (1 + 1e-12) and r.upper >= true * (1 - 1e-12)
    if r.status == "exact":
        assert r.lower == pytest.approx(true, rel=1e-9)


def test_milp_witness_is_certified_on_the_network_itself():
    """1e17 relu(0.1 relu(3x) - 0.3 relu(x)) on [0.5, 1]: slope 2.78 (exact, on the float
    weights).  Its witness was certified on a copy rescaled by 3 and 0.30000000000000004,
    whose rounded weights give 6.66: a lower bound above the constant."""
    net = Network([[[3.0], [1.0]], [[0.1, -0.3]], [[1e17]]], [[0.0, 0.0], [0.0], [0.0]])
    truth = float((3 * Fraction(0.1) - Fraction(0.3)) * Fraction(1e17))
    r = lipschitz(net, Box([0.5], [1.0]), p=1, method="milp")
    assert r.lower <= truth * (1 + 1e-12)
    assert r.upper >= truth * (1 - 1e-12)


def test_product_bound_of_a_large_layer_is_cheap_and_above_the_exact_norm():
    from relulab.lipschitz.upper import SVD_MAX_ENTRIES, product_bound

    rng = np.random.default_rng(0)
    n = int(np.sqrt(SVD_MAX_ENTRIES)) + 50
    W1, W2 = rng.normal(size=(n, 3)), rng.normal(size=(n, n)) / np.sqrt(n)
    net = Network([W1, W2, rng.normal(size=(1, n))], [np.zeros(n), np.zeros(n), np.zeros(1)])
    exact = np.prod([np.linalg.norm(W, 2) for W in net.weights])
    assert product_bound(net, 2, None) >= exact


def test_interval_bound_is_skipped_when_its_estimate_exceeds_the_time_left(monkeypatch):
    import relulab.lipschitz.core as core

    monkeypatch.setattr(core, "_interval_seconds", lambda net: 1e9, raising=False)
    net = Network([[[1.0], [-1.0]], [[1.0, 2.0]]], [[0.0, 0.0], [0.0]])
    r = lipschitz(net, Box([-1.0], [1.0]), p=2, method="bounds", time_limit=5)
    assert "interval_jacobian" not in r.uppers
    assert r.upper >= 2.0 and r.lower <= 2.0


def test_sdp_with_another_norm_is_refused_before_any_work(monkeypatch):
    import relulab.lipschitz.core as core
    from relulab.errors import RelulabError

    def boom(*a, **k):
        raise AssertionError("work started before the refusal")

    monkeypatch.setattr(core, "product_bound", boom)
    net = Network([[[1.0], [-1.0]], [[1.0, 2.0]]], [[0.0, 0.0], [0.0]])
    with pytest.raises(RelulabError, match="p = q = 2 only"):
        lipschitz(net, Box([-1.0], [1.0]), p=1, sdp=True)
    with pytest.raises(RelulabError, match="sdp must be True, False or None"):
        lipschitz(net, Box([-1.0], [1.0]), p=2, sdp="no")


@pytest.mark.parametrize("method", ["auto", "enumerate", "bounds"])
def test_a_constant_beyond_float64_is_refused_naming_the_overflow(method):
    """f = 1e400 relu(x) + ...: its constant is not a float64 number (it was refused as
    "operator_norm: need a finite 2-D matrix", a function the user never called)."""
    from relulab.errors import RelulabError
    from relulab.lipschitz import lipschitz

    net = Network([[[1e200], [-1e200]], [[1e200, 1e200]]], [[0.0, 1.0], [0.0]])
    with pytest.raises(RelulabError, match="overflows float64"):
        lipschitz(net, Box([-1.0], [1.0]), p=1, method=method)
