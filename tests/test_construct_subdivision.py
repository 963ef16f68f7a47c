"""Refinement iterates: exact breakpoints/values against the recursive definition, and the
wide network against both."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from relulab.construct import (
    ConstructionError,
    ExactEvaluator,
    cascade_value,
    refinement_iterate,
    subdivision_network,
)

CHAIKIN = [Fraction(1, 4), Fraction(3, 4), Fraction(3, 4), Fraction(1, 4)]
FOUR_POINT = [Fraction(-1, 16), 0, Fraction(9, 16), 1, Fraction(9, 16), 0, Fraction(-1, 16)]


@pytest.mark.parametrize("mask", [CHAIKIN, FOUR_POINT, [Fraction(1, 3), Fraction(1, 2), Fraction(2, 3), Fraction(1, 2)]],
                         ids=["chaikin", "four-point", "random"])
@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_iterates_match_definition(mask, n: int) -> None:
    seed_bp, seed_vals = [0, 1, Fraction(5, 2)], [0, 1, 0]
    bp, vals = refinement_iterate(mask, seed_bp, seed_vals, n)
    net = subdivision_network(mask, n, seed_bp, seed_vals)
    assert net.widths == (len(bp) + 1,) and net.is_exact
    rng = np.random.default_rng(n)
    pts = list(bp) + [bp[0] - 1, bp[-1] + 1]
    pts += [Fraction(int(v), 97) for v in rng.integers(-50, 97 * int(bp[-1]) + 50, 25)]
    Y = ExactEvaluator(net)(np.array([[p] for p in pts], dtype=object))[:, 0]
    for p, y in zip(pts, Y, strict=True):
        want = cascade_value(mask, seed_bp, seed_vals, n, p)
        assert y == want, (p, y, want)


def test_chaikin_breakpoints_double() -> None:
    counts = [len(refinement_iterate(CHAIKIN, [0, 1, 2], [0, 1, 0], n)[0]) for n in range(6)]
    assert counts == [3 * 2**n for n in range(6)]
    # the hat is refinable for the mask (1/2, 1, 1/2): every iterate is the hat itself
    bp, vals = refinement_iterate([Fraction(1, 2), 1, Fraction(1, 2)], [0, 1, 2], [0, 1, 0], 5)
    assert (bp, vals) == ([0, 1, 2], [0, 1, 0])


def test_subdivision_errors() -> None:
    with pytest.raises(ConstructionError, match="vanish at its end"):
        refinement_iterate(CHAIKIN, [0, 1], [1, 0], 1)
    with pytest.raises(ConstructionError, match="increase strictly"):
        refinement_iterate(CHAIKIN, [0, 0, 1], [0, 1, 0], 1)


def test_a_dict_mask_means_index_to_coefficient_as_in_refinement_network() -> None:
    # subdivision read {0: 1/2, 1: 1, 2: 1/2} as its keys [0, 1, 2]: the "hat" gave 0 at
    # x = 1/2 and 2 at x = 3/2 (the hat is refinable: its iterates are the hat)
    from relulab.construct import refinement_network

    mask = {0: Fraction(1, 2), 1: 1, 2: Fraction(1, 2)}
    assert refinement_iterate(mask, [0, 1, 2], [0, 1, 0], 2) == ([0, 1, 2], [0, 1, 0])
    net = subdivision_network(mask, 2)
    pts = np.array([[Fraction(1, 2)], [Fraction(3, 2)], [Fraction(1)]], dtype=object)
    assert ExactEvaluator(net)(pts)[:, 0].tolist() == [Fraction(1, 2), Fraction(1, 2), 1]
    assert ExactEvaluator(refinement_network(mask, 2))(pts)[:, 0].tolist() == [Fraction(1, 2), Fraction(1, 2), 1]


def test_masks_that_are_not_finite_lists_or_are_zero_are_refused() -> None:
    import itertools

    with pytest.raises(ConstructionError, match="finitely supported"):
        refinement_iterate(itertools.count(), [0, 1, 2], [0, 1, 0], 1)   # was consumed forever
    with pytest.raises(ConstructionError, match="all coefficients are zero"):
        subdivision_network([0, 0], 2)
    with pytest.raises(ConstructionError, match="steps must be an integer >= 0"):
        refinement_iterate(CHAIKIN, [0, 1, 2], [0, 1, 0], -1)


def test_an_iterate_too_large_to_compute_is_refused_before_the_work() -> None:
    from relulab.construct.refine_scheme import MAX_ITERATE_BREAKPOINTS, iterate_size

    # the bound is an upper bound of the real count
    for n in range(6):
        assert len(refinement_iterate(CHAIKIN, [0, 1, 2], [0, 1, 0], n)[0]) <= iterate_size(CHAIKIN, 3, n)
    with pytest.raises(ConstructionError, match=f"at most {MAX_ITERATE_BREAKPOINTS}"):
        subdivision_network(CHAIKIN, 30)
