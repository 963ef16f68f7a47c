"""aud_lip7: the MILP route's proofs against HiGHS's tolerances.

#1: over R^d the MILP's bound is refused when a neuron's kinks all lie far from the
origin; the per-layer ``|b| / ||w||_1`` missed kinks 1e6 out behind a first layer that
scales x by 1e-2 or behind a constant neuron carrying the bias.  #2: on a box, a tent of
slope 1000 at x0 = 1000 beside relu(x1) read "exact 1000" where the constant is 1001.
Every expectation is checked against a secant slope from two forward passes (a lower
bound of the constant that no solver enters)."""

import numpy as np
import pytest

from relulab import Box, Network
from relulab.errors import RelulabError
from relulab.lipschitz import lipschitz
from relulab.lipschitz.milp import GLOBAL_MILP_MAX_REACH, hyperplane_reach


def _secant(net: Network, x: np.ndarray, y: np.ndarray, p: float) -> float:
    fx, fy = net(np.vstack([x, y])).ravel()
    return abs(float(fy - fx)) / float(np.linalg.norm(y - x, p))


def _scaled_first_layer(d: int = 6) -> Network:
    """f = 100 relu(x) + relu(x + y - 1e6) + 100.5 (relu(x+2) - relu(x+1)), with layer 1
    scaling x and y by 1e-2 (the per-layer reach read 5000)."""
    s, far = 1e-2, 1e6
    W1 = np.zeros((4, d))
    W1[:, :2] = [[s, 0.0], [0.0, s], [1.0, 0.0], [1.0, 0.0]]
    return Network([W1, [[1 / s, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]], [[100.0, 1 / s, 100.5, -100.5]]],
                   [[0.0, 0.0, 2.0, 1.0], [0, -far * s, 0, 0], [0.0]])


def _constant_neuron(d: int = 6) -> Network:
    """The same f, its bias -1e6 carried by a hidden neuron of zero weights and bias 1
    (the per-layer reach read 2)."""
    W1 = np.zeros((5, d))
    W1[:4, :2] = [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0]]
    return Network([W1, [[1, 0, 0, 0, 0], [1, 1, 0, 0, -1e6], [0, 0, 1, 0, 0], [0, 0, 0, 1.0, 0]], [[100.0, 1.0, 100.5, -100.5]]],
                   [[0.0, 0.0, 2.0, 1.0, 1.0], [0, 0, 0, 0], [0.0]])


@pytest.mark.parametrize("make", [_scaled_first_layer, _constant_neuron])
def test_far_kinks_behind_scaling_or_a_constant_neuron_refuse_the_global_milp_bound(make):
    net = make()
    assert hyperplane_reach(net) > GLOBAL_MILP_MAX_REACH
    X = np.zeros((2, 6))
    X[0, :2], X[1, :2] = 1e7, 2e7
    slope = _secant(net, X[0], X[1], np.inf)
    assert slope == pytest.approx(102.0)
    r = lipschitz(net, None, p=np.inf, method="milp")
    assert r.upper >= slope * (1 - 1e-12)
    assert r.status != "exact" or r.lower >= slope * (1 - 1e-12)


def test_the_reach_is_a_lower_bound_of_every_kinks_distance_on_random_networks():
    # each neuron's pre-activation changes sign only beyond the reported l_inf distance
    # from the origin: checked on dense rays for 1-D networks with random scales
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(60):
        sizes = [1, 4, 3]
        Ws = [rng.normal(size=(sizes[k + 1], sizes[k])) * 10.0 ** rng.uniform(-2, 2, size=(sizes[k + 1], 1))
              for k in range(2)] + [rng.normal(size=(1, 3))]
        bs = [rng.normal(size=n) * 10.0 ** rng.uniform(-1, 3) for n in sizes[1:]] + [np.zeros(1)]
        net = Network(Ws, bs)
        reach = hyperplane_reach(net)
        t = np.linspace(-2e4, 2e4, 400001)[:, None]
        Z = np.hstack(net.preactivations(t))
        Z0 = np.hstack(net.preactivations(np.zeros((1, 1))))[0]
        flips = np.sign(Z) != np.sign(Z0)
        nearest = np.where(flips, np.abs(t), np.inf).min(axis=0)
        if not np.all(np.isfinite(nearest)):
            continue   # a neuron without a sign change on the ray: nothing to compare
        # the largest per-neuron bound is at most the farthest neuron's nearest kink
        # (within the grid's step, 0.1)
        assert reach <= float(nearest.max()) + 0.1, (reach, nearest)
        checked += 1
    assert checked >= 5


def _tent(d: int, D: float = 1000.0, K: float = 1000.0, w: float = 0.1) -> Network:
    W1 = np.zeros((4, d))
    W1[:3, 0] = 1.0
    W1[3, 1] = 1.0
    return Network([W1, [[K, -2 * K, K, 1.0]]], [[-D, -D - w, -D - 2 * w, 0.0], [0.0]])


@pytest.mark.parametrize("d", [2, 6])
def test_a_tent_beside_a_small_gain_is_not_called_exact_below_its_constant(d):
    net = _tent(d)
    x, y = np.zeros(d), np.zeros(d)
    x[:2], y[:2] = [1000.025, 1.0], [1000.075, 1.05]
    slope = _secant(net, x, y, np.inf)
    assert slope == pytest.approx(1001.0)
    box = Box([-1100.0] * d, [1100.0] * d)
    for dom in (box, None):
        r = lipschitz(net, dom, p=np.inf, method="milp")
        assert r.upper >= slope * (1 - 1e-12), (dom, r.lower, r.upper)
        assert r.status != "exact" or r.lower >= slope * (1 - 1e-12)
    # auto closes it on the box (the branch and bound after the MILP)
    r = lipschitz(net, box, p=np.inf)
    assert r.status == "exact" and r.lower == pytest.approx(1001.0, rel=1e-9)


def test_weights_whose_products_underflow_are_not_called_exactly_zero():
    from fractions import Fraction

    net = Network([[[1e-200, -1e-200], [1e-200, 1e-200]], [[1e-200, 1e-200]]], [[1e-200, 0.0], [0.0]])
    # in exact arithmetic on the float weights f is not constant on the box: the constant is > 0
    ex = net.exact()
    fx = ex([Fraction(1), Fraction(1)])[0]
    fy = ex([Fraction(1, 2), Fraction(1)])[0]
    assert fx != fy
    for method in ("auto", "milp", "bab", "bounds"):
        r = lipschitz(net, Box([-1, -1], [1, 1]), p=1, method=method)
        assert r.upper > 0 and r.status != "exact", (method, r.status, r.upper)
    # a network with no path at all stays exactly 0
    flat = Network([[[1.0, 1.0]], [[0.0]]], [[0.0], [3.0]])
    assert lipschitz(flat, Box([-1, -1], [1, 1]), p=1).upper == 0.0


def test_operator_norm_and_sampled_lower_refuse_bad_matrices_and_domains_in_one_line():
    from relulab.errors import RelulabError
    from relulab.lipschitz import operator_norm, sampled_lower

    for A, what in ((np.zeros((0, 3)), "empty"), ([[1, 2], [3]], "real numbers"), ([["a"]], "real numbers"),
                    (np.array([[3 + 4j]]), "complex")):
        with pytest.raises(RelulabError, match=what):
            operator_norm(A, 2, 2)
    net = Network([[[1.0, 2.0], [-1.0, 0.5]], [[1.0, 2.0]]], [[0.0, 0.0], [0.0]])
    with pytest.raises(RelulabError, match="dimension 1, the network 2 inputs"):
        sampled_lower(net, Box([-1], [1]), 2, None)


def test_a_jacobian_beyond_float64_is_refused_by_name_not_a_traceback():
    """Gradients of 1e400 (their SDP's eigenvalues did not converge, and the answer was
    "bounded" by inf): the constant is not a float64 number, and the error says so;
    at 1e308 it is still computed."""
    net = Network([[[1e200, -1e200], [1.0, 1.0]], [[1e200, 1.0]]], [[0.0, 0.0], [0.0]])
    with np.errstate(all="ignore"), pytest.raises(RelulabError, match="overflows float64"):
        lipschitz(net, Box([-1, -1], [1, 1]), p=2, method="bounds")
    s = 1e154
    net = Network([[[s, -s], [1.0, 1.0]], [[s, 1.0]]], [[0.0, 0.0], [0.0]])
    with np.errstate(all="ignore"):
        r = lipschitz(net, Box([-1, -1], [1, 1]), p=2, method="bounds")
    # the gradient s * (s, -s) (+ (1, 1)) at points where the first neuron is active
    assert r.lower <= np.sqrt(2) * s * s <= r.upper * (1 + 1e-12)


def test_auto_closes_a_bracket_left_open_by_the_milp_margin_by_enumeration():
    # aud_sess15: biases of size 300 on [-1000, 1000]^8 make the MILP's tolerance margin
    # 7e-6 relative; the follow-up enumeration proves the value (an independent route)
    rng = np.random.default_rng(7)
    for _ in range(5):
        d = int(rng.choice([3, 5, 8]))
        w = int(rng.integers(6, 12))
        dims = [d, w, w, 1]
        net = Network([rng.standard_normal((dims[i + 1], dims[i])) for i in range(3)],
                      [300 * rng.standard_normal(dims[i + 1]) for i in range(3)])
    box = Box([-1000.0] * 8, [1000.0] * 8)
    milp = lipschitz(net, box, p=np.inf, method="milp")
    enum = lipschitz(net, box, p=np.inf, method="enumerate", time_limit=120)
    assert enum.status == "exact"
    assert milp.lower <= enum.lower * (1 + 1e-12) and milp.upper >= enum.upper * (1 - 1e-12)
    auto = lipschitz(net, box, p=np.inf, time_limit=60)
    assert auto.status == "exact" and auto.lower == pytest.approx(enum.lower, rel=1e-9)


def test_a_zero_skip_does_not_turn_the_underflow_guard_off():
    net = Network([[[1e-200]], [[1e-200]]], [[0.0], [0.0]], skip=([[0.0]], [0.0]))
    r = lipschitz(net, Box([-1], [1]), p=1)
    assert r.upper > 0 and r.status != "exact"     # the constant is 1e-400 > 0


def test_layers_of_very_different_sizes_do_not_underflow_part_way():
    # aud_sess15 #3: f = 1e-100 relu(x); the interval Jacobian multiplied 1e-200 x 1e-200
    # first and gave 2.2e-308, below the constant
    from fractions import Fraction

    net = Network([[[1e300]], [[1e-200]], [[1e-200]]], [[0.0], [0.0], [0.0]])
    ex = net.exact()
    ya, yb = ex([Fraction(1, 2)])[0], ex([Fraction(1)])[0]
    secant = float((yb - ya) / Fraction(1, 2))
    for method in ("bounds", "bab", "auto"):
        r = lipschitz(net, Box([0.0], [1.0]), p=1, method=method, time_limit=5)
        assert r.upper >= secant * (1 - 1e-12), (method, r.upper, r.uppers)
        assert all(u >= secant * (1 - 1e-12) for u in r.uppers.values())


def test_layer_balancing_keeps_the_function_exactly():
    from relulab.lipschitz.core import layer_balanced

    rng = np.random.default_rng(5)
    for _ in range(10):
        scales = 10.0 ** rng.uniform(-50, 50, size=3)
        net = Network([rng.normal(size=(5, 2)) * scales[0], rng.normal(size=(4, 5)) * scales[1],
                       rng.normal(size=(1, 4)) * scales[2]],
                      [rng.normal(size=5) * scales[0], rng.normal(size=4) * scales[0] * scales[1], np.zeros(1)])
        g = layer_balanced(net)
        X = rng.normal(size=(100, 2))
        np.testing.assert_array_equal(g(X), net(X))     # powers of two: bit for bit
        assert max(float(np.abs(W).max()) for W in g.weights) / min(float(np.abs(W).max()) for W in g.weights) < 64
