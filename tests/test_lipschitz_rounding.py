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


# Weights of very mixed magnitudes (1e-6 next to 1e5, from an audit's random sweep):
# HiGHS fails on their programs ("infeasible" for a MILP every point satisfies, "error"
# for a Chebyshev LP).  A solver failure proves nothing either way: the answer must be
# a bracket, not an exception, and its lower bound a real slope.
_MIXED_1D = (
    [[[-2.6132662004049974], [80187.80827090981]],
     [[5949.261148558855, -2.4491872600736115e-06], [-9.441984798869727e-06, -0.662688221943356],
      [0.0004857035971051235, 15.110348592360163]],
     [[0.025568039113418938, 3.038585334970925e-06, -0.0008428951093628438],
      [39.74259901129639, -0.0004015934404199108, 32.429800778747335],
      [-0.001228990819486644, -0.08712960909989155, 6.669194208800705e-07],
      [-64571.5634440935, 2.923211556262714e-06, 92425.97539789078]],
     [[0.025815144263022907, -5.467536105040786e-05, 2.921134746792615e-06, 0.3970697257688181]]],
    [[43813.77520540277, -0.16768318996425194],
     [-101571.30864007468, -1557.5271423003348, -0.7219869201576277],
     [-0.00040641557748817716, -0.0003911859585765567, 0.0004175658890428533, -0.41285159074064437],
     [256.9207533155592]],
    [1.551357769003618], [3.892594290606798])
_MIXED_2D = (
    [[[-178548.40490927812, 1.5718000464526212], [0.525899536229719, 2.0845752172567536e-06],
      [4649.400539626095, 18.374528256667492]],
     [[-135026.31736394862, -8.451462322924541e-06, 5409.505568198091],
      [-1257.6341182567776, -8.899180884796424e-06, -134188.0277714276],
      [-0.0032891850773224215, -2.3657564053287746e-06, 2.8586723209432176e-06]],
     [[112339.71082007787, 4.268994498157705, 0.19221249871122834],
      [0.0026580787893111025, 1.4509801440818569e-05, -219347.35091825738],
      [-0.021888345959362326, -315.78177051409176, 0.0016692817274444282]],
     [[-7737.982218053458, -60909.621246532, 0.0658104374259936],
      [-203.7831453327866, -284.05242506112864, -0.0027624568215825593]]],
    [[-0.022158615815152004, 3.964419849488615e-07, -49.87566494483049],
     [1.77737716286808e-05, -563.5926594389543, 0.567729507087358],
     [25.150341817387567, 0.0055960719967214825, 9.232506331440948e-07],
     [-0.0014897236684370079, -0.002861679479181454]],
    [-2.090516233088239, -2.654002401610051], [1.016715647595494, -0.5247476490954165])


def _exact_witness_norm(net: Network, x, p, q) -> Fraction:
    """Independent: the Jacobian's norm at ``x`` in rational arithmetic, after checking
    that no pre-activation is 0 there (so ``x`` is interior to its region)."""
    ex = net.exact()
    xf = np.array([Fraction(float(v)) for v in x], dtype=object)
    assert all(v != 0 for z in ex.preactivations(xf[None]) for v in np.ravel(z))
    J = ex.jacobian(xf)
    assert p == 1 and q in (None, 1)   # the l1 -> l1 norm: the largest column sum
    return max(sum(abs(J[i][j]) for i in range(J.shape[0])) for j in range(J.shape[1]))


@pytest.mark.parametrize("data, p, q, method", [
    (_MIXED_1D, 1, None, "milp"), (_MIXED_2D, 1, 1, "milp"), (_MIXED_2D, 1, 1, "bab")])
def test_solver_failures_on_mixed_magnitudes_give_a_bracket(data, p, q, method):
    Ws, bs, lo, hi = data
    net = Network(Ws, bs)
    r = lipschitz(net, Box(lo, hi), p=p, q=q, method=method, time_limit=20)
    assert r.upper >= r.lower > 0
    # the lower bound is a real slope: its witness re-checked in rationals
    assert r.witness is not None
    assert abs(float(_exact_witness_norm(net, r.witness.x, p, q)) - r.lower) <= 1e-9 * r.lower


@pytest.mark.parametrize("method", ["enumerate", "auto"])
def test_enumeration_finds_the_steep_region_below_the_engines_resolution(method):
    # _MIXED_2D's steepest region is about 4e-16 wide next to weights of 2e5: the region
    # engine counts its vertices' values as zero and lists 7 regions without it, and the
    # enumeration said "exact" 2.24e16; the pattern check's zoomed LPs find it
    Ws, bs, lo, hi = _MIXED_2D
    net = Network(Ws, bs)
    r = lipschitz(net, Box(lo, hi), p=1, q=1, method=method, time_limit=30)
    assert r.info.get("pattern_check") == "missed"
    truth = float(_exact_witness_norm(net, r.witness.x, 1, 1))
    assert truth > 2e19 and r.lower == pytest.approx(truth, rel=1e-9)
    assert r.upper >= truth * (1 - 1e-9)
