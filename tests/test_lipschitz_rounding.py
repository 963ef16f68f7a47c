"""Float rounding cannot make a Lipschitz upper bound too small (relulab.lipschitz.rounding).

The network ``1e17 relu(0.1 relu(3x) - 0.3 relu(x))`` has, in exact arithmetic on its
float64 weights, slope ``1e17 (0.1 * 3 - 0.3)`` = 2.78 on ``x > 0``; in float64 the
weights cancel to 0.  Every upper bound must still cover the exact slope.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from relulab import Box, Network
from relulab.lipschitz import interval_jacobian_bound, lipschitz
from relulab.lipschitz.bab import by_bab
from relulab.lipschitz.rounding import box_preactivations, jacobian_slack, pad_preactivations


def _cancelling() -> Network:
    return Network([[[3.0], [1.0]], [[0.1, -0.3]], [[1e17]]], [[0.0, 0.0], [0.0], [0.0]])


def _exact_slope() -> float:
    """Independent: the slope on x > 0 in rational arithmetic on the float weights."""
    return float((3 * Fraction(0.1) - Fraction(0.3)) * Fraction(1e17))


@pytest.mark.parametrize("lo", [-1.0, 0.5])
def test_interval_jacobian_bound_covers_a_slope_that_float_cancels(lo):
    truth = _exact_slope()
    assert truth > 2.7
    assert interval_jacobian_bound(_cancelling(), Box([lo], [1.0]), 1, None) >= truth


@pytest.mark.parametrize("dom", [Box([-1.0], [1.0]), Box([0.5], [1.0]), None])
def test_bab_upper_bound_covers_a_slope_that_float_cancels(dom):
    truth = _exact_slope()
    o = by_bab(_cancelling(), dom, 1.0, None, max_boxes=400)
    assert o.upper >= truth
    r = lipschitz(_cancelling(), dom, p=1, method="bab", time_limit=2)
    assert r.upper >= truth and r.status != "exact"


def test_padding_makes_the_cancelling_neuron_unstable_and_keeps_exact_zeros():
    net = _cancelling()
    Ws = [np.asarray(W, float) for W in net.weights]
    bs = [np.asarray(b, float) for b in net.biases]
    pre = box_preactivations(Ws, bs, np.array([[0.5]]), np.array([[1.0]]))
    zl, zu = pre[1]
    # the true pre-activation lies in [1.39e-17, 2.78e-17]: the padded bounds contain it
    assert zl[0, 0] <= 1.38e-17 and zu[0, 0] >= 2.78e-17
    # a neuron with zero weights and bias keeps [0, 0] (it is exactly 0, not unstable)
    z = pad_preactivations([np.zeros((1, 1)), np.ones((1, 1))], [np.zeros(1), np.zeros(1)],
                           np.array([[-1.0]]), np.array([[1.0]]), [(np.zeros((1, 1)), np.zeros((1, 1)))])
    assert z[0][0][0, 0] == 0.0 and z[0][1][0, 0] == 0.0


def test_slack_is_a_few_ulps_of_the_absolute_product():
    rng = np.random.default_rng(0)
    Ws = [rng.normal(size=(6, 3)), rng.normal(size=(1, 6))]
    pre = [(-np.ones((1, 6)), np.ones((1, 6)))]
    s = float(jacobian_slack(Ws, pre, None, 2.0, None)[0])
    A = np.abs(Ws[1]) @ np.abs(Ws[0])
    assert 0 < s <= 1e-13 * np.linalg.norm(A)
    # a surely inactive neuron contributes nothing
    dead = [(-np.ones((1, 6)), np.r_[-np.ones(1), np.ones(5)][None])]
    assert float(jacobian_slack(Ws, dead, None, 2.0, None)[0]) < s
