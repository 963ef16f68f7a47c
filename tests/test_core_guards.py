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


def test_small_non_empty_polytopes_far_from_the_origin_are_kept() -> None:
    # the emptiness decision took an absolute 1e-9: at coordinates of 1e8 the LP's own
    # rounding (~1e-8) refused non-empty triangles (8 of 20)
    for scale in (1e7, 1e8):
        for size in (1e-9, 1e-8):   # triangles of inradius 1e-9 and 1e-8
            rng = np.random.default_rng(0)
            for _ in range(20):
                p = rng.normal(size=2) * scale
                ang = np.array([0, 2.1, 4.2]) + rng.uniform(0, 2 * np.pi)
                A = np.c_[np.cos(ang), np.sin(ang)]
                Polytope(A, A @ p + size)   # was refused as empty (4 of 20 at 1e8)


def test_lp_costs_added_after_a_small_objective_are_rescaled() -> None:
    from relulab.lp import LPModel

    # columns of cost ~3 added to an LP whose objective was ~1e-12: the leftover scale
    # (2^40) multiplied the new costs, and HiGHS said "error" or "unbounded" (2 of 300)
    rng = np.random.default_rng(1)
    for t in range(300):
        x0 = rng.normal(size=3)
        A = rng.normal(size=(4, 3))
        b = A @ x0 + rng.uniform(0, 1, 4)
        c_small = rng.normal(size=3) * 1e-12
        grown = LPModel(c_small, A_ub=A, b_ub=b, lb=x0 - 2, ub=x0 + 2)
        grown.solve()
        cc, col = rng.normal(size=2) * 3, rng.normal(size=(4, 2))
        grown.add_cols(cc, [-1, -1], [1, 1], col)
        r = grown.solve()
        fresh = LPModel(np.concatenate([c_small, cc]), A_ub=np.hstack([A, col]), b_ub=b,
                        lb=np.r_[x0 - 2, -1, -1], ub=np.r_[x0 + 2, 1, 1]).solve()
        assert r.status == fresh.status == "optimal", t
        assert r.objective == pytest.approx(fresh.objective, rel=1e-6, abs=1e-6), t
