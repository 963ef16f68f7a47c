"""Bad arguments to the core types are one error naming them, and a polytope whose
bounds the LP solver would read as infinite is refused rather than misread."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from relulab import Box, Network, Polytope
from relulab.domain import DomainError
from relulab.network import NetworkError

NET = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|


def test_a_polytope_bound_at_the_solvers_infinity_is_refused_and_below_it_is_read() -> None:
    # |x0| <= 1e20 was called unbounded (HiGHS reads 1e20 as no bound at all)
    A = [[1, 0], [-1, 0], [0, 1], [0, -1]]
    with pytest.raises(DomainError, match="reads 1e\\+20 and beyond as infinite"):
        Polytope(A, [1e20, 1e20, 1, 1])
    box = Polytope(A, [1e19, 1e19, 1, 1]).bounding_box()
    assert box.lo.tolist() == [-1e19, -1.0] and box.hi.tolist() == [1e19, 1.0]


@pytest.mark.parametrize(("make", "msg"), [
    (lambda: Network([[[1.0], [1.0, 2.0]]], [[0.0, 0.0]]), "layer 1 weight: entries are not numbers"),
    (lambda: Network([[[Fraction(1)], [1, 2]]], [[0, 0]]), "layer 1 weight"),
    (lambda: Network([[[1.0]]], [[0.0]], skip=([[1.0]],)), "skip: expected a pair"),
    (lambda: Network([np.array([[1 + 2j]])], [np.array([0.0])]), "complex entries"),
    (lambda: NET([1 + 1j]), "input: entries are not real numbers"),
    (lambda: NET.deepen(2.5), "deepen: n_hidden_layers must be an integer"),
    (lambda: NET.allclose(3), "allclose: compares two networks"),
])
def test_bad_network_arguments_are_one_network_error(make, msg) -> None:
    with pytest.raises(NetworkError, match=msg):
        make()


def test_a_network_is_not_scaled_by_text_or_by_an_array() -> None:
    with pytest.raises(TypeError):
        NET * "2"   # noqa: B018 - was read as 2
    with pytest.raises(TypeError):
        np.array([1.0, 2.0]) * NET   # noqa: B018 - was an object array of networks
    assert (NET * 2)([-1.5]).tolist() == [3.0] and (2 * NET)([1.0]).tolist() == [2.0]


@pytest.mark.parametrize(("make", "msg"), [
    (lambda: Box([0], [1]).split(3), "split: axis must be an integer in 0..0"),
    (lambda: Box([0], [1]).sample(-1), "sample: n must be a non-negative integer"),
    (lambda: Box([0], [1]).to_polytope().sample(2.5), "sample: n must be a non-negative integer"),
])
def test_bad_domain_arguments_are_one_domain_error(make, msg) -> None:
    with pytest.raises(DomainError, match=msg):
        make()


@pytest.mark.parametrize("gap", [1e-7, 2e-8, 5e-9])
def test_a_polytope_empty_by_more_than_feas_tol_is_refused(gap) -> None:
    # {x <= -1e-7, x >= 0} was accepted (HiGHS's own tolerance is 1e-7), and sample() failed
    with pytest.raises(DomainError, match="empty polytope"):
        Polytope([[1.0], [-1.0]], [-gap, 0.0])


def test_a_polytope_within_feas_tol_of_a_point_is_kept() -> None:
    P = Polytope([[1.0], [-1.0]], [-5e-10, 0.0])   # empty by less than FEAS_TOL: a point
    assert P.bounding_box().hi[0] <= 1e-9 and Polytope([[1.0], [-1.0]], [0.0, 0.0]).dim == 1
