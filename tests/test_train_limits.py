"""Convex training's claims and limits (fourth training audit, second part): "global
optimum" relative to the objective, float32 lam, time and memory limits of the pattern
stages, and argument checks.  Each case failed before its fix."""

from __future__ import annotations

import numpy as np
import pytest

from relulab import Network
from relulab.limits import ResourceLimitError, memory_limit
from relulab.train import convex_fit, nonconvex_objective
from relulab.train.convex import ConvexTrainingError
from relulab.train.patterns import _sample_until, facet_rows

_X = np.array([[-1.0], [0.0], [1.0]])
_Y = np.array([1.0, 0.0, 1.0])


def test_global_optimum_needs_a_gap_small_against_the_objective():
    # lam = 1e-9: the solvers' criterion (relative to (1/2)|y|^2 = 1) passes a FISTA fit
    # 24 % above the optimum; the claim must not
    for solver in ("fista", "ipm"):
        fit = convex_fit(_X, _Y, 1e-9, solver=solver)
        if fit.global_optimum:
            assert fit.gap <= 1e-6 * fit.objective
    assert not convex_fit(_X, _Y, 1e-9, solver="fista").global_optimum
    assert convex_fit(_X, _Y, 0.01).global_optimum   # an ordinary lam still certifies


def test_a_float32_lam_certifies_in_float64():
    fit = convex_fit(_X, _Y, np.float32(0.01))
    assert fit.converged and type(fit.objective) is float and type(fit.dual_value) is float
    assert fit.gap == pytest.approx(convex_fit(_X, _Y, float(np.float32(0.01))).gap, abs=1e-12)


def test_a_fit_stopped_by_its_time_limit_says_so():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 1))
    y = rng.standard_normal(3000)
    fit = convex_fit(X, y, 1e-3, max_patterns=10**6, time_limit=0.05)
    assert not fit.converged and fit.stopped and fit.to_dict()["partial"] is True
    assert not fit.global_optimum


def test_pattern_matrices_are_checked_against_the_memory_budget():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 1))
    with memory_limit(100 * 2**20), pytest.raises(ResourceLimitError, match="convex_fit: the 2000 x"):
        convex_fit(X, rng.standard_normal(2000), 1e-3, max_patterns=10**6)
    M = rng.integers(0, 2, size=(500, 800)).astype(bool)
    with memory_limit(10**5), pytest.raises(ResourceLimitError, match="facet_rows"):
        facet_rows(M)


def test_directions_drawn_block_by_block_are_those_of_one_draw():
    rng = np.random.default_rng(1)
    Xa = np.column_stack([rng.standard_normal((40, 2)), np.ones(40)])
    M, G, stopped = _sample_until(Xa, 10**6, 7, 10_000, None)
    direct = np.random.default_rng(7).standard_normal((10_000, 3))
    signs = Xa @ direct.T >= 0
    want = {tuple(c) for c in signs.T if c.any()}
    assert not stopped and {tuple(c) for c in M.T} == want
    assert np.all((Xa @ G.T >= 0) == M)   # each generator has its pattern


_NET2 = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])


@pytest.mark.parametrize("call, match", [
    (lambda: nonconvex_objective(_NET2, _X, np.ones(5), 0.1), "X must be"),
    (lambda: nonconvex_objective(Network([[[1.0]], [[1.0]], [[1.0]]], [[0.0], [0.0], [0.0]]), _X, _Y, 0.1),
     "two-layer network"),
    (lambda: convex_fit(_X, _Y, 0.1, patterns=(np.ones((2, 2), bool), np.ones((2, 2)))), "patterns: masks"),
    (lambda: convex_fit([["a"], ["b"]], [1.0, 2.0], 0.1), "arrays of numbers"),
    (lambda: convex_fit(_X, _Y, 0.1, gap_tol=float("nan")), "gap_tol"),
    (lambda: convex_fit(_X, _Y, 0.1, gap_tol=1e6), "gap_tol"),
    (lambda: convex_fit(_X, _Y, 0.1, max_iter=-5), "max_iter"),
    (lambda: convex_fit(_X, _Y, 0.1, bias="no"), "bias must be True or False"),
])
def test_bad_arguments_get_one_error(call, match):
    with pytest.raises(ConvexTrainingError, match=match):
        call()
