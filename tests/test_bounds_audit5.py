"""Fifth bounds audit: polytope bounds keep the back-substitution's rounding, the output
rounding counts the sums over a row of C, refinement stays in the memory budget, and bad
arguments get one clear error.  Each case failed before its fix; soundness is checked by
exact (Fraction) evaluation of the float network."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

from relulab.bounds import float_rounding_bound, interval_bounds, linear_bounds, symbolic_bounds
from relulab.domain import Box, Polytope
from relulab.errors import RelulabError
from relulab.network import Network


def _interval_polytope(lo: float, hi: float) -> Polytope:
    return Polytope([[1.0], [-1.0]], [hi, -lo])


def test_polytope_bounds_keep_the_rounding_of_a_cancellation():
    # relu(x - 1) + relu(x + 2^60) - 2^60 is 2x - 1 on [2, 3]: the polytope bound read
    # [4, 6] (the raw back-substituted constant lost the -1), where f(2) = 3 (aud_crown5 #1)
    net = Network([[[1.0], [1.0]], [[1.0, 1.0]]], [[-1.0, 2.0**60], [-(2.0**60)]])
    ex = net.exact()
    vals = [ex([F(x)])[0] for x in (2, 3)]
    assert vals == [3, 5]
    b = symbolic_bounds(net, _interval_polytope(2.0, 3.0))
    assert F(float(b.out_lo[0])) <= 3 and F(float(b.out_hi[0])) >= 5
    assert F(float(linear_bounds(net, _interval_polytope(2.0, 3.0), np.array([[1.0]]))[0])) <= 3


def test_polytope_bounds_are_sound_on_large_inputs():
    # inputs near 1e6 and every neuron active: the polytope bound missed the exact minimum
    # by a few ulps on 56 of 60 random networks; f is affine there, so its extremes are at
    # the corners, evaluated exactly
    rng = np.random.default_rng(54)
    for _ in range(20):
        W1 = rng.standard_normal((8, 2))
        net = Network([W1, rng.standard_normal((1, 8))], [np.abs(W1).sum(1) * 2e6, rng.standard_normal(1)])
        lo, hi = np.array([1e6, 1e6]), np.array([1e6 + 1, 1e6 + 1])
        P = Polytope(np.vstack([np.eye(2), -np.eye(2)]), np.concatenate([hi, -lo]))
        corners = [[F(a), F(b)] for a in (lo[0], hi[0]) for b in (lo[1], hi[1])]
        ys = [v[0] for v in net.exact()(corners)]
        b = symbolic_bounds(net, P)
        assert F(float(b.out_lo[0])) <= min(ys) and F(float(b.out_hi[0])) >= max(ys)


@pytest.mark.parametrize("m", [200, 2000])
def test_output_rounding_counts_the_sum_over_a_row_of_c(m):
    # C = ones over m outputs 1, -h, ..., -h (h = half an ulp of 1): a sequential sum keeps
    # 1 and loses every -h, and the lower bound sat 39 h above the exact value (#3)
    h = 2.0**-54
    col = np.array([1.0] + [-h] * (m - 1))
    net = Network([np.ones((1, 1)), col[:, None]], [np.zeros(1), np.zeros(m)])
    exact = sum(net.exact()([F(1)]))                       # C f(1)
    lb = linear_bounds(net, Box([1.0], [1.0]), np.ones((1, m)))[0]
    assert F(float(lb)) <= exact


def test_crown_engine_output_rounding_counts_the_row_too():
    pytest.importorskip("torch")
    from relulab.crown import BoundGraph, bound

    h, n1, m = 2.0**-54, 2, 200
    col = np.array([1.0] + [-h] * (m - 1))
    net = Network([np.ones((n1, 1)), np.repeat(col[:, None], n1, 1)], [np.zeros(n1), np.zeros(m)])
    exact = min(sum(v) for v in net.exact()([[F(1)], [F(2)]]))
    for method in ("crown", "alpha"):
        gb = bound(BoundGraph.from_network(net), [[1.0]], [[2.0]], C=np.ones((1, m)), method=method)
        assert F(float(gb.lower[0, 0])) <= exact, method


def test_symbolic_bounds_refine_within_the_memory_budget():
    # the refinement built (boxes, 2 x unstable, width) arrays whatever the budget; under a
    # budget too small for one neuron's rows it now refuses by name, and a budget that
    # holds a few rows gives the same bounds as an unlimited one
    from relulab.limits import ResourceLimitError, memory_limit

    rng = np.random.default_rng(0)
    n, d = 300, 5
    net = Network([rng.standard_normal((n, d)), rng.standard_normal((n, n)) / np.sqrt(n),
                   rng.standard_normal((2, n))], [np.zeros(n), np.zeros(n), np.zeros(2)])
    box = Box(-np.ones(d), np.ones(d))
    full = symbolic_bounds(net, box)
    with memory_limit(4 * 8 * n * 4 * 40):          # about 20 rows at a time
        small = symbolic_bounds(net, box)
    assert np.array_equal(full.out_lo, small.out_lo) and np.array_equal(full.out_hi, small.out_hi)
    with memory_limit(1000), pytest.raises(ResourceLimitError, match="symbolic bounds of hidden layer 2"):
        symbolic_bounds(net, box)


@pytest.mark.parametrize("call, where", [
    (lambda n: linear_bounds(n, Box([0], [1]), "abc"), "C and d must be arrays of numbers"),
    (lambda n: linear_bounds(n, Box([0], [1]), np.zeros((0, 1))), "at least one row"),
    (lambda n: linear_bounds(n, Box([0], [1]), np.ones((1, 1)), "x"), "C and d must be arrays"),
    (lambda n: linear_bounds(n, Box([0], [1]), None), "C is required"),
    (lambda n: symbolic_bounds("net.onnx", Box([0], [1])), "symbolic_bounds: expected a relulab Network"),
    (lambda n: interval_bounds(None, Box([0], [1])), "interval_bounds: expected a relulab Network"),
])
def test_bad_bounds_arguments_get_one_clear_error(call, where):
    net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    with pytest.raises(RelulabError, match=where):
        call(net)


def test_float_rounding_bound_takes_a_pair_and_bound_takes_a_huge_int_as_an_error():
    net = Network([[[F(1, 3)]]], [[F(0)]]).exact()
    assert float_rounding_bound(net, ([0], [1]))[0] == float_rounding_bound(net, Box([0], [1]))[0] > 0
    with pytest.raises(RelulabError, match="float_rounding_bound: expected a relulab Network"):
        float_rounding_bound("net.onnx", Box([0], [1]))
    pytest.importorskip("torch")
    from relulab.crown import BoundGraph, bound
    from relulab.crown.propagate import BoundError

    g = BoundGraph.from_network(Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]]))
    with pytest.raises(BoundError, match="lo: not an array of numbers"):
        bound(g, [[-10**400]], [[1.0]])
