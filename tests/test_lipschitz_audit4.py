"""Lipschitz, fourth audit: a MILP bound inside the solver's tolerances is no proof, exact
networks whose weights are not float64 numbers are refused rather than rounded, l2 norms
of tiny and huge gradients are computed scaled, an SDP cut by the time limit marks the
result partial, and bad sample counts are one error."""

from __future__ import annotations

import time
from fractions import Fraction

import numpy as np
import pytest

from relulab import Box, Network
from relulab.errors import RelulabError
from relulab.lipschitz import lipschitz
from relulab.lipschitz.norms import operator_norm, vector_norm


def _cancelling(d: int = 6, K: float = 1e6, eps: float = 1e-9) -> Network:
    """K relu(relu((1 + eps) x1) - relu(x1)): K eps x1 for x1 > 0, else 0."""
    W1 = np.zeros((2, d))
    W1[0, 0], W1[1, 0] = 1 + eps, 1.0
    return Network([W1, [[1.0, -1.0]], [[K]]], [[0.0, 0.0], [0.0], [0.0]])


def _true_constant(net: Network, d: int) -> Fraction:
    """The exact difference quotient along x1 > 0 (the function is linear there)."""
    ex = net.exact()
    x1, x2 = np.zeros(d), np.zeros(d)
    x1[0], x2[0] = 0.25, 0.75
    fx = [ex(np.array([[Fraction(float(v)) for v in x]], dtype=object))[0, 0] for x in (x1, x2)]
    return (fx[1] - fx[0]) / Fraction(1, 2)


@pytest.mark.parametrize("method", ["auto", "milp"])
@pytest.mark.parametrize("domain", ["box", "global"])
def test_a_milp_bound_inside_the_solvers_tolerances_is_no_proof(method, domain):
    # the MILP answered "exact 0" for a constant of 1e-3 (the optimum, 1e-9 after scaling,
    # lay under HiGHS's tolerances); the enumeration route certified 1e-3
    d = 6
    net = _cancelling(d)
    true = _true_constant(net, d)
    assert true > Fraction(9, 10**4)
    dom = Box(-np.ones(d), np.ones(d)) if domain == "box" else None
    if domain == "global" and method == "milp":
        pytest.skip("covered by auto")
    r = lipschitz(net, dom, p=1, method=method, time_limit=20)
    assert Fraction(r.upper) >= true * (1 - Fraction(1, 10**6))
    assert not (r.status == "exact" and Fraction(r.lower) < true * (1 - Fraction(1, 10**6)))


def test_an_exact_network_with_weights_that_are_not_floats_is_refused():
    # 2^60 (relu((1 + 2^-60) x) - relu(x)) = x on x >= 0 (constant 1) read "exact 0"
    from relulab.lipschitz import is_positive

    e = Fraction(1, 2**60)
    net = Network([[[1 + e], [Fraction(1)]], [[Fraction(2**60), Fraction(-(2**60))]]],
                  [[Fraction(0), Fraction(0)], [Fraction(0)]])
    assert net([[Fraction(1)]])[0, 0] == 1   # the independent fact
    with pytest.raises(RelulabError, match="not float64 numbers"):
        lipschitz(net, Box([-1.0], [1.0]))
    with pytest.raises(RelulabError, match="not float64 numbers"):
        is_positive(net.with_output_map([[1]], [Fraction(-1, 2)]), Box([0.0], [1.0]))
    # an exact network of float numbers is its float network
    half = Network([[[Fraction(1, 2)], [Fraction(-1)]], [[Fraction(1), Fraction(1)]]],
                   [[Fraction(0), Fraction(0)], [Fraction(0)]])
    r = lipschitz(half, Box([-1.0], [1.0]))
    assert r.status == "exact" and r.lower == r.upper == 1.0


@pytest.mark.parametrize("s", [1e-170, 1e160])
def test_l2_norms_of_tiny_and_huge_gradients(s):
    # squares underflowed to "exact 0" (1e-170) and overflowed to a certified lower bound
    # of inf (1e160)
    assert vector_norm(np.array([3 * s, 4 * s]), 2) == pytest.approx(5 * s, rel=1e-15, abs=0)
    assert operator_norm(np.array([[3 * s, 4 * s]]), 2).upper == pytest.approx(5 * s, rel=1e-15, abs=0)
    r = lipschitz(Network([[[s, s]], [[1.0]]], [[0.0], [0.0]]), Box([-1.0, -1.0], [1.0, 1.0]), p=2)
    assert r.status == "exact" and r.lower == pytest.approx(np.sqrt(2) * s, rel=1e-12, abs=0)


def test_a_run_past_its_time_limit_is_partial():
    # a 2 s limit ran 3.8 s (the SDP's last iteration) and said partial=False, blaming the
    # SDP ("no verifiable multipliers") for what the limit did
    rng = np.random.default_rng(0)
    net = Network([rng.normal(size=(40, 3)), rng.normal(size=(40, 40)) / 4, rng.normal(size=(1, 40))],
                  [rng.normal(size=40) / 2, rng.normal(size=40) / 2, np.zeros(1)])
    t0 = time.time()
    r = lipschitz(net, Box(-np.ones(3), np.ones(3)), p=2, method="bounds", time_limit=2.0)
    if time.time() - t0 > 2.0:
        assert r.partial
    assert "no verifiable multipliers" not in str(r.info.get("sdp_error", ""))


@pytest.mark.parametrize("samples, error", [(0, "samples must be an integer of at least 1"),
                                            (10**12, "samples needs")])
def test_bad_sample_counts_are_one_error(samples, error):
    from relulab.limits import ResourceLimitError

    with pytest.raises((RelulabError, ResourceLimitError), match=error):
        lipschitz(Network([[[1.0]]], [[0.0]]).deepen(1), Box([-1.0], [1.0]), samples=samples)
