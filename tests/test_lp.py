"""The HiGHS wrapper against scipy's independent LP interface and brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import linprog

from relulab.lp import LPModel, chebyshev_center, solve


def test_random_lps_agree_with_scipy(rng):
    for _ in range(20):
        n, m = 4, 8
        A = rng.normal(size=(m, n))
        b = rng.random(m) + 0.1  # x = 0 is feasible
        c = rng.normal(size=n)
        ours = solve(c, A_ub=A, b_ub=b, lb=-np.ones(n), ub=np.ones(n))
        ref = linprog(c, A_ub=A, b_ub=b, bounds=[(-1, 1)] * n, method="highs-ds")
        assert ours.status == "optimal"
        assert np.isclose(ours.objective, ref.fun, atol=1e-9)
        assert np.all(A @ ours.x <= b + 1e-9)


def test_warm_started_model_matches_fresh_solves(rng):
    n = 3
    A = rng.normal(size=(10, n))
    b = rng.random(10) + 0.5
    model = LPModel(np.zeros(n), A_ub=A, b_ub=b, lb=-2 * np.ones(n), ub=2 * np.ones(n))
    for _ in range(10):
        c = rng.normal(size=n)
        model.set_objective(c)
        warm = model.solve()
        cold = solve(c, A_ub=A, b_ub=b, lb=-2 * np.ones(n), ub=2 * np.ones(n))
        assert np.isclose(warm.objective, cold.objective, atol=1e-9)
    base = model.n_rows
    model.add_rows(np.ones((1, n)), [-np.inf], [-100.0])
    assert model.solve().status == "infeasible"
    model.delete_rows_from(base)
    assert model.solve().status == "optimal"


def test_small_milp_against_enumeration(rng):
    # maximise c.x over integer points of a box intersected with a half-space
    for _ in range(5):
        c = rng.normal(size=3)
        a = rng.normal(size=3)
        pts = [np.array(p) for p in itertools.product(range(-2, 3), repeat=3)]
        feas = [p for p in pts if a @ p <= 1.0]
        best = max(c @ p for p in feas)
        r = solve(c, A_ub=[a], b_ub=[1.0], lb=[-2] * 3, ub=[2] * 3, integer=[1, 1, 1], maximize=True)
        assert r.status == "optimal"
        assert np.isclose(r.objective, best, atol=1e-9)


def test_infeasible_and_unbounded():
    assert solve([1.0], A_ub=[[1.0], [-1.0]], b_ub=[0.0, -1.0]).status == "infeasible"
    assert solve([-1.0], lb=[0.0]).status in ("unbounded", "infeasible_or_unbounded")


def test_chebyshev_center_of_a_square_and_an_empty_set():
    x, r = chebyshev_center([[1, 0], [-1, 0], [0, 1], [0, -1]], [3, -1, 1, 1])
    assert np.allclose(x, [2, 0]) and np.isclose(r, 1)
    x, r = chebyshev_center([[1.0], [-1.0]], [0.0, -1.0])
    assert x is None


def test_a_nan_time_limit_counts_as_spent_not_as_no_limit():
    # max(nan, 1e-3) is nan, which HiGHS read as "no limit": a hard MILP ran until killed
    import time

    from relulab.limits import Deadline

    rng = np.random.default_rng(0)
    m, n = 4, 40
    A = rng.integers(0, 100, size=(m, n)).astype(float)
    b = np.floor(A.sum(1) / 2)
    c = np.r_[np.zeros(n), np.ones(2 * m)]
    Aeq = np.c_[A, np.eye(m), -np.eye(m)]
    kw = dict(A_eq=Aeq, b_eq=b, lb=np.zeros(n + 2 * m), ub=np.r_[np.ones(n), np.full(2 * m, np.inf)],
              integer=np.r_[np.ones(n), np.zeros(2 * m)])
    for model in (LPModel(c, time_limit=float("nan"), **kw), LPModel(c, **kw)):
        model.set_time_limit(float("nan"))
        t0 = time.perf_counter()
        r = model.solve()
        # a limit of a millisecond: HiGHS stops with its time-limit status (well within 60 s)
        assert r.status == "time_limit" and time.perf_counter() - t0 < 60
    assert Deadline(float("nan"), floor=1e-3).left() == 1e-3 and Deadline(float("nan")).left() == 0.0


def test_memory_budget_variable_must_be_a_positive_finite_size(monkeypatch):
    import pytest

    from relulab.errors import RelulabError
    from relulab.limits import memory_budget, memory_limit

    for bad in ("inf", "1e400", "nan", "1e-30", "0", "-2"):
        monkeypatch.setenv("RELULAB_MEMORY_GB", bad)
        with pytest.raises(RelulabError, match=f"RELULAB_MEMORY_GB='{bad}'"):
            memory_budget()
    monkeypatch.setenv("RELULAB_MEMORY_GB", "0.5")
    assert memory_budget() == 2**29
    for bad in (float("inf"), float("nan")):
        with pytest.raises(RelulabError, match="positive finite"), memory_limit(bad):
            pass


def test_large_time_limited_lps_skip_the_presolve_that_ignores_the_clock():
    # HiGHS's LP presolve ran 6.6 s under a 1 s limit (fit-minnorm --time-limit 1 took
    # 21 s); an LP over PRESOLVE_OFF_NNZ nonzeros with a limit runs without it, and the
    # answer is the same LP's
    import scipy.sparse as sp

    from relulab.lp import PRESOLVE_OFF_NNZ

    n = int(np.sqrt(PRESOLVE_OFF_NNZ)) + 2
    A = sp.random(n, n, density=1.0, random_state=0, format="csr") + sp.identity(n)
    b = A @ np.ones(n)
    small = LPModel(-np.ones(50), A_ub=A[:50, :50], b_ub=b[:50], lb=np.zeros(50), time_limit=100.0)
    assert small.h.getOptionValue("presolve")[1] == "choose"
    big = LPModel(-np.ones(n), A_ub=A, b_ub=b, lb=np.zeros(n), time_limit=100.0)
    assert big.h.getOptionValue("presolve")[1] == "off"
    big.set_time_limit(None)
    assert big.h.getOptionValue("presolve")[1] == "choose"
    mip = LPModel(-np.ones(n), A_ub=A, b_ub=b, lb=np.zeros(n), integer=np.ones(n), time_limit=100.0)
    assert mip.h.getOptionValue("presolve")[1] == "choose"


@pytest.mark.parametrize("w, c", [(1e7, 0.0), (3e9, 5e9), (0.5, 1e12)])
def test_chebyshev_radius_of_big_bounded_boxes_is_their_half_width(w, c):
    # the radius was capped at 1e6 and read as inf (a bounded box "unbounded", its centre
    # wrong) for [-1e7, 1e7]^2
    A = [[1, 0], [-1, 0], [0, 1], [0, -1]]
    b = [c + w, w - c, c + w, w - c]
    x, r = chebyshev_center(A, b)
    assert r == pytest.approx(w, rel=1e-9) and np.allclose(x, [c, c], rtol=1e-9, atol=1e-6 * w)
    x, r = chebyshev_center([[1, 0], [0, 1]], [1, 1])  # a quadrant: unbounded
    assert r == float("inf")
