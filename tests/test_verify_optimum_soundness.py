"""maximize / minimize / output_range: the value is the network's (never beyond the
optimum), the bound is rounded outward, and "exact" is measured by the function's spread,
not by the LP relaxation (aud_ver9)."""

from fractions import Fraction as F

import numpy as np
import pytest

from relulab import Box, Network
from relulab.verify import maximize, minimize, output_range
from relulab.verify import milp as milp_module


def _exact_value(net: Network, x) -> F:
    e = net if net.is_exact else net.exact()
    return e(np.array([[F(float(v)) for v in np.ravel(x)]], dtype=object))[0][0]


def _cancelling() -> Network:
    # relu(x + 2^45) - 2^45: x exactly on [0, 1] (rationals), its float pass is not
    B = 2.0**45
    return Network([np.array([[1.0]]), np.array([[1.0]])], [np.array([B]), np.array([-B])])


def test_the_value_never_passes_the_optimum_on_a_cancelling_network() -> None:
    net = _cancelling()
    r = maximize(net, Box([0.0], [0.2]))
    true_max = F(0.2)  # f(x) = x: the maximum is at the box's upper end
    assert F(r.value) <= true_max <= F(r.bound)
    assert F(r.value) <= _exact_value(net, r.x)
    m = minimize(net, Box([0.3], [0.5]))
    assert F(m.bound) <= F(0.3) <= F(m.value)
    assert F(m.value) >= _exact_value(net, m.x)
    rr = output_range(net, Box([0.1], [0.2]))
    assert F(float(rr.lo[0])) >= F(0.1) and F(float(rr.hi[0])) <= F(0.2)
    assert F(float(rr.hi[0])) <= _exact_value(net, rr.argmax[0])
    assert F(float(rr.lo_bound[0])) <= F(0.1) and F(float(rr.hi_bound[0])) >= F(0.2)


def test_exact_is_not_measured_by_a_big_m_relaxation() -> None:
    # 2^60 (relu((1 + 2^-60) x) - relu(x)) + relu(-x)/2 on [-1, 1]: max 1 at x = 1; its
    # float copy is relu(-x)/2 (max 0.5) and the LP value 5.8e17 made [0, 1.2e10] "exact"
    K = 2**60
    net = Network([np.array([[F(1) + F(1, K)], [F(1)], [F(-1)]], dtype=object),
                   np.array([[F(K), F(-K), F(1, 2)]], dtype=object)],
                  [np.array([F(0)] * 3, dtype=object), np.array([F(0)], dtype=object)])
    assert _exact_value(net, [1.0]) == 1
    r = maximize(net, Box([-1.0], [1.0]))
    assert F(r.value) <= 1 <= F(r.bound)
    assert not r.exact or F(r.value) == 1
    # a float network with a 2^42 pair cancelling exactly: max 1 at x = -1
    K2 = 2.0**42
    fnet = Network([np.array([[1.0], [-1.0], [1.0], [1.0]]), np.array([[0.999, 1.0, K2, -K2]])],
                   [np.array([0, 0, -0.3, -0.3]), np.zeros(1)])
    r = maximize(fnet, Box([-1.0], [1.0]))
    assert F(r.value) <= 1 <= F(r.bound)
    assert not r.exact or F(r.value) == 1


@pytest.mark.parametrize("top", [1.5, 0.75])
def test_the_bound_is_rounded_up(top: float) -> None:
    # relu(x) + 2^57 on [0, top]: the maximum 2^57 + top sits between floats
    net = Network([np.array([[1.0]]), np.array([[1.0]])], [np.zeros(1), np.array([2.0**57])])
    true_max = F(2**57) + F(top)
    r = maximize(net, Box([0.0], [top]))
    assert F(r.value) <= true_max <= F(r.bound)
    rr = output_range(net, Box([0.0], [top]))
    assert F(float(rr.hi[0])) <= true_max <= F(float(rr.hi_bound[0]))


def test_a_large_network_takes_the_float_pass_moved_inward(monkeypatch) -> None:
    monkeypatch.setattr(milp_module, "EXACT_VALUE_MAX_PARAMS", 0)
    net = _cancelling()
    info: dict = {}
    value, bound = milp_module._exact_bracket(net, Box([0.0], [0.2]), np.array([1.0]),
                                              np.array([0.2]), 0.203125, 1.0, info)
    assert info["value_check"].startswith("float64")
    assert F(value) <= F(0.2) and bound >= value
