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
    want = np.array([1e19, 1.0])   # (proven bounds: outward by at most their rounding)
    assert np.all(-want * (1 + 1e-12) <= box.lo) and np.all(box.lo <= -want)  # tol: rounding
    assert np.all(want <= box.hi) and np.all(box.hi <= want * (1 + 1e-12))  # tol: rounding


@pytest.mark.parametrize(("make", "msg"), [
    (lambda: Network([[[1.0], [1.0, 2.0]]], [[0.0, 0.0]]), "layer 1 weight: entries are not numbers"),
    (lambda: Network([[[Fraction(1)], [1, 2]]], [[0, 0]]), "layer 1 weight"),
    (lambda: Network([[[1.0]]], [[0.0]], skip=([[1.0]],)), "skip: expected a pair"),
    (lambda: Network([np.array([[1 + 2j]])], [np.array([0.0])]), "complex entries"),
    (lambda: NET([1 + 1j]), "input: entries are not real numbers"),
    (lambda: NET.deepen(2.5), "deepen: n_hidden_layers must be an integer"),
    (lambda: NET.allclose(3), "allclose: compares two networks"),
    (lambda: NET.compose(3), "cannot combine a network with int"),
    (lambda: NET.concat("x"), "cannot combine a network with str"),
    (lambda: NET.parallel(None), "cannot combine a network with NoneType"),
    (lambda: Network(5, [0.0]), "weights and biases must be sequences of layers"),
    (lambda: NET.with_output_map([[float("nan")]]), "output map: NaN or infinite"),
    (lambda: NET.with_output_map([[1.0], [2.0]], [0.0, 0.0, 0.0]), "output offset has 3 entries"),
    (lambda: NET.with_output_map(np.ones((1, 1, 1))), "output map must be a matrix"),
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
    (lambda: Box([0], [1]).split(0, "a"), "split: at must be a number"),
    (lambda: Box([0], [1]).contains("a"), "points: entries are not real numbers"),
    (lambda: Box([0], [1]).to_polytope().contains(np.zeros((1, 1, 1))), r"points have shape \(1, 1, 1\)"),
    (lambda: Polytope.whole_space(-1), "whole_space: dim must be an integer of at least 1"),
    (lambda: Polytope.whole_space(2.0), "whole_space: dim must be an integer of at least 1"),
    (lambda: Polytope([[1.0], [-1.0]], [-1.0, -1.0], check_empty=False).bounding_box(), "empty polytope"),
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


def test_exact_networks_beyond_float64_compare_exactly() -> None:
    big = Network([[[Fraction(10**400)]]], [[Fraction(0)]])
    assert big.allclose(big)   # raised OverflowError
    assert not big.allclose(Network([[[Fraction(10**400 + 10**390)]]], [[Fraction(0)]]))
    assert big.allclose(Network([[[Fraction(10**400 + 10**380)]]], [[Fraction(0)]]), rtol=1e-12)


@pytest.mark.parametrize(("kwargs", "what"), [
    ({"c": [float("nan")], "lb": [0.0], "ub": [1.0]}, "costs c"),        # was "optimal", objective NaN
    ({"c": [1.0], "A_ub": [[float("nan")]], "b_ub": [1.0]}, "constraint matrix"),   # was "unbounded"
    ({"c": [1.0], "A_ub": [[1.0]], "b_ub": [float("nan")], "lb": [0.0]}, "b_ub"),
    ({"c": [1.0], "lb": [float("nan")]}, "lower bounds"),
])
def test_lp_data_with_nan_is_refused(kwargs, what) -> None:
    from relulab.lp import LPError, solve

    with pytest.raises(LPError, match=what):
        solve(**kwargs)


def test_infinite_lp_row_bounds_are_still_read_as_no_bound() -> None:
    from relulab.lp import solve

    r = solve([1.0], A_ub=[[-1.0]], b_ub=[np.inf], lb=[0.0])
    assert r.status == "optimal" and r.objective == 0.0


def test_a_users_text_file_named_as_results_is_not_emptied(tmp_path) -> None:
    from relulab.errors import RelulabError
    from relulab.results import read_json_lines

    notes = tmp_path / "notes.txt"
    notes.write_text("my important notes")   # one line, no newline: read as a torn row and cut
    with pytest.raises(RelulabError, match="line 1 is not a JSON row"):
        read_json_lines(notes, "a sweep")
    assert notes.read_text() == "my important notes"
    torn = tmp_path / "rows.jsonl"
    torn.write_text('{"a": ')                # a row begun on the first line is still cut
    assert read_json_lines(torn, "a sweep") == [] and torn.read_text() == ""


def test_plot_output_out_of_range_is_one_error() -> None:
    from relulab import plot
    from relulab.errors import RelulabError

    with pytest.raises(RelulabError, match="function1d: output must be an integer in 0..0, got 3"):
        plot.function1d(NET, output=3)
    with pytest.raises(RelulabError, match="regions2d: output must be an integer in 0..0, got 4"):
        plot.regions2d(Network([[[1.0, 0.0]]], [[0.0]]), output=4)


def test_to_jsonable_keeps_exact_integers_and_fractions_python_can_print():
    # 4000 bits (about 1,204 digits) used to be rounded to five digits, where Python prints
    # up to 4,300 digits; past that the size alone is written
    from fractions import Fraction

    from relulab.results import to_jsonable

    n = 2 ** 5000 + 1
    assert to_jsonable(n) == n or to_jsonable(n) == str(n)
    q = to_jsonable(Fraction(2 ** 4001, 3))
    assert str(2 ** 4001) in str(q)
    assert str(to_jsonable(2 ** 20000)).startswith("~3.9803e+6020")
