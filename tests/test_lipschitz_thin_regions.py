"""A region thinner than the old degeneracy radius (1e-9) is still a region: the LipMIP
and branch-and-bound routes must not drop it and then call the remaining maximum exact.

The oracle is exact: f(x) = A relu(eps - |x - c|) with A = 1 / eps has slopes 0 and
+-A only (two pieces of width eps), so its Lipschitz constant is A, and a difference
quotient over rationals shows it.
"""

from fractions import Fraction

import numpy as np
import pytest

from relulab import Box, Network
from relulab.lipschitz import lipschitz
from relulab.lipschitz.enumeration import vertex_mismatches
from relulab.lp import no_interior


def _spike(c: float, eps: float) -> Network:
    return Network([[[1.0], [-1.0]], [[-1.0, -1.0]], [[1.0 / eps]]], [[-c, c], [eps], [0.0]])


def _exact_slope(c: float, eps: float) -> Fraction:
    """The difference quotient of the spike over [c - eps/2, c], in exact arithmetic."""
    C, E, A = Fraction(c), Fraction(eps), Fraction(1.0 / eps)

    def f(x: Fraction) -> Fraction:
        return A * max(E - max(x - C, Fraction(0)) - max(C - x, Fraction(0)), Fraction(0))

    x1, x2 = C - E / 2, C
    return (f(x2) - f(x1)) / (x2 - x1)


def _check(r, truth: float) -> None:
    # an exact answer must be the truth; a bounded one must bracket it
    assert r.upper >= truth * (1 - 1e-6), (r.status, r.lower, r.upper, truth)
    assert r.lower <= truth * (1 + 1e-6)
    if r.status == "exact":
        assert r.lower == pytest.approx(truth, rel=1e-6)


@pytest.mark.parametrize("eps", [1e-9, 5e-10, 1e-10])
@pytest.mark.parametrize("c", [0.0, 0.3])
@pytest.mark.parametrize("method", ["milp", "bab"])
def test_thin_spike_on_a_box_is_not_dropped(method, c, eps):
    truth = float(_exact_slope(c, eps))
    assert truth == pytest.approx(1.0 / eps, rel=1e-9)
    _check(lipschitz(_spike(c, eps), Box([c - 1], [c + 1]), p=1, method=method), truth)


@pytest.mark.parametrize("c,eps", [(1000.123, 1e-3), (0.3, 1e-9), (1000.123, 1e-9)])
def test_global_milp_tests_regions_in_input_units(c, eps):
    # the homogenised program sees the spike's cone as a sliver ~eps / c^2 wide
    truth = float(_exact_slope(c, eps))
    r = lipschitz(_spike(c, eps), None, p=1, method="milp")
    _check(r, truth)
    assert r.status == "exact"   # the centre in input units certifies


def test_no_interior_only_for_empty_or_flat_regions():
    assert no_interior(None, -np.inf)
    assert no_interior(np.zeros(2), 0.0)
    assert not no_interior(np.zeros(2), 1e-12)  # tol: a positive radius is a region


@pytest.mark.parametrize("c,eps,box", [(1000.123, 1e-9, False), (0.3, 1e-12, False),
                                       (1000.123, 1e-10, True), (1000.123, 1e-12, True)])
def test_enumeration_does_not_call_a_merged_spike_exact(c, eps, box):
    # the region engine merges these slivers (below 1e-13 x the domain's scale); f at
    # the merged region's vertex x = c is the spike's height, not the region's map
    truth = float(_exact_slope(c, eps))
    dom = Box([c - 1], [c + 1]) if box else None
    r = lipschitz(_spike(c, eps), dom, p=1, method="enumerate")
    _check(r, truth)
    assert r.status == "bounded" and r.info["vertex_mismatches"] >= 1


def test_vertex_mismatches_against_an_exhaustive_oracle():
    # relu(x) on [-1, 1]: the two maps at the three vertices, right and swapped
    net = Network([[[1.0]], [[1.0]]], [[0.0], [0.0]])
    ptr, verts = np.array([0, 2, 4]), np.array([[-1.0], [0.0], [0.0], [1.0]])
    right = np.array([[[0.0, 0.0]], [[1.0, 0.0]]])
    assert vertex_mismatches(net, right, ptr, verts) == 0
    assert vertex_mismatches(net, right[::-1], ptr, verts) == 2   # x = 0 matches both maps
