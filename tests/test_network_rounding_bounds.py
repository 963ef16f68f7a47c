"""`Network.rounding_bounds`: the float64 pass's error bound holds against the exact
pass in Fractions, on networks whose sums cancel (where the error is largest)."""

from fractions import Fraction

import numpy as np
import pytest

from relulab import Network


def _exact_preactivations(net: Network, x: np.ndarray) -> list[np.ndarray]:
    """The float network's pre-activations computed exactly (its float entries are rationals)."""
    ex = net.exact()
    h = np.array([Fraction(float(v)) for v in x], dtype=object)
    x0 = h
    out = []
    for k, (W, b) in enumerate(ex.layers):
        z = W @ h + b
        if k == ex.depth - 1 and ex.skip is not None:
            z = z + ex.skip[0] @ x0 + ex.skip[1]
        out.append(z)
        h = np.array([max(v, 0) for v in z], dtype=object)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_the_bound_holds_against_the_exact_pass_on_cancelling_sums(seed):
    rng = np.random.default_rng(seed)
    scale = 10.0 ** rng.integers(0, 9)
    # weights of size `scale` whose terms nearly cancel: a pair of neurons computing
    # scale * x and the next layer subtracting them
    W1 = rng.normal(size=(6, 3)) * scale
    W1[3:] = W1[:3] * (1 + 1e-9 * rng.normal(size=(3, 3)))  # tol: near-cancelling copies
    W2 = np.hstack([np.eye(3), -np.eye(3)]) + 0.01 * rng.normal(size=(3, 6))
    W3 = rng.normal(size=(2, 3))
    skip = (rng.normal(size=(2, 3)) * scale, rng.normal(size=2)) if seed % 2 else None
    net = Network([W1, W2, W3], [rng.normal(size=6), rng.normal(size=3), rng.normal(size=2)], skip)
    X = rng.normal(size=(20, 3))
    bounds = net.rounding_bounds(X)
    assert [Z.shape for Z, _ in bounds] == [(20, 6), (20, 3), (20, 2)]
    np.testing.assert_array_equal(bounds[-1][0], net(X))
    worst = 0.0
    for i, x in enumerate(X):
        exact = _exact_preactivations(net, x)
        for (Z, E), z in zip(bounds, exact, strict=True):
            err = np.array([abs(Fraction(float(a)) - b) for a, b in zip(Z[i], z, strict=True)], dtype=float)
            assert np.all(err <= E[i]), (i, err, E[i])
            worst = max(worst, float(np.max(err / np.maximum(E[i], 1e-300))))  # tol: guard only
    assert worst > 0.0   # the float pass did round somewhere: the check was not vacuous


def test_an_exact_network_is_bounded_through_its_float_copy():
    net = Network([[[Fraction(1, 3)], [Fraction(-1, 3)]], [[1, 1]]], [[0, 0], [0]], exact=True)
    (Z1, E1), (Z2, E2) = net.rounding_bounds([[3.0]])
    assert Z1.dtype == np.float64 and Z1[0, 0] == 1 / 3 * 3.0
    assert E1[0, 0] > 0 and E2[0, 0] > 0


def test_results_in_the_subnormal_range_are_bounded_too():
    # 1e-310 x (1/3) rounds absolutely (subnormal), and a weight of 1e300 magnifies it
    net = Network([[[1e-310]], [[1e300]]], [[0.0], [0.0]])
    x = np.array([1 / 3])
    (Z1, E1), (Z2, E2) = net.rounding_bounds(x[None])
    exact = _exact_preactivations(net, x)
    for Z, E, z in ((Z1, E1, exact[0]), (Z2, E2, exact[1])):
        err = float(abs(Fraction(float(Z[0, 0])) - z[0]))
        assert err <= E[0, 0], (err, E[0, 0])
