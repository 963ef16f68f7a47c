"""Dynamics audit 6: an uncertified piece count is not recorded as a number, direction
clusters in blocks within the memory budget and under train's time limit, budget checks
before big kernels and basin-hopping children, a quick exact-centring check (aud_dyn6)."""

from __future__ import annotations

import time
import warnings
from fractions import Fraction

import numpy as np
import pytest
from scipy.cluster.hierarchy import fcluster, linkage

from relulab import Network
from relulab.dynamics import KernelError, kernel_ridge, ntk_fluctuation, train
from relulab.dynamics.dichotomies import _centred_exactly
from relulab.dynamics.kernels_mc import monte_carlo_ntk
from relulab.dynamics.multistart import fit_basin_hopping
from relulab.dynamics.recorders import (
    DynamicsError,
    EffectiveWidth,
    RegionCount,
    direction_clusters,
    effective_width,
    unit_rows,
)
from relulab.limits import ResourceLimitError
from relulab.regions import along_segment


def test_an_uncertified_segment_count_is_recorded_as_nan():
    # f = relu(x - 0.3) - 2 relu(x - 0.3 - 1e-12): slopes 0, 1, -1 -> 3 pieces on [-1, 1],
    # which the float count along the segment merges to 2 and marks uncertified
    net = Network([[[1.0], [1.0]], [[1.0, -2.0]]], [[-0.3, -0.3 - 1e-12], [0.0]])
    seg = along_segment(net, [-1.0], [1.0])
    assert not seg.certified
    X, y = np.array([[0.0], [0.5]]), np.zeros(2)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        t = train(net, X, y, steps=0, record=[RegionCount(segment=([-1.0], [1.0]))], device="cpu")
    assert np.isnan(t.records["regions"]).all()
    assert any("not certified" in str(x.message) for x in w)


def _same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.all((a[:, None] == a[None, :]) == (b[:, None] == b[None, :])))


@pytest.mark.parametrize("budget_bytes", [None, 2_000_000])
def test_direction_clusters_in_blocks_match_single_linkage(monkeypatch, budget_bytes):
    # against scipy's single linkage on the unit vectors; a 2 MB budget makes blocks of
    # 64 rows and chunks of pairs, so components are merged across blocks
    if budget_bytes is not None:
        monkeypatch.setenv("RELULAB_MEMORY_GB", str(budget_bytes / 2**30))
    rng = np.random.default_rng(0)
    for _ in range(30):
        m, k = int(rng.integers(2, 300)), int(rng.integers(1, 8))
        C = rng.normal(size=(k, 3))
        V = C[rng.integers(0, k, m)] * rng.uniform(0.1, 3, (m, 1))
        V += rng.normal(size=(m, 3)) * rng.choice([0.0, 1e-3, 0.05])
        tol = float(rng.choice([1e-8, 1e-2, 0.1, 0.5]))
        got = direction_clusters(V, tol)
        want = fcluster(linkage(unit_rows(V), "single"), tol, "distance")
        assert _same_partition(got, want)
        # labels are numbered by first appearance, from 0
        assert got[0] == 0 and set(got) == set(range(got.max() + 1))


def test_direction_clusters_check_the_budget_and_the_deadline(monkeypatch):
    V = np.random.default_rng(1).normal(size=(3000, 3))
    with pytest.raises(DynamicsError, match="shape"):
        direction_clusters(np.ones((2, 2, 2)))
    with pytest.raises(DynamicsError, match="numbers"):
        direction_clusters([["a"]])
    from relulab.errors import UncertifiedCount

    with pytest.raises(UncertifiedCount, match="time limit"):
        effective_width(V, deadline=time.perf_counter() - 1.0)
    monkeypatch.setenv("RELULAB_MEMORY_GB", str(20_000 / 2**30))
    with pytest.raises(ResourceLimitError, match="direction clusters of 3000 neurons"):
        effective_width(V)


def test_effective_width_under_trains_time_limit_records_nan():
    # a deadline already past when the step-0 record runs: NaN with a warning, no count
    from relulab.dynamics import mlp

    X = np.random.default_rng(0).normal(size=(5, 2))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        t = train(mlp([2, 4000, 1], seed=0), X, X[:, 0], steps=10, every=1, time_limit=1e-9,
                  record=[EffectiveWidth()], device="cpu")
    vals = t.records["effective_width"]
    assert len(vals) >= 1 and np.isnan(vals).all()
    assert any("EffectiveWidth" in str(x.message) for x in w)


def test_big_kernels_and_children_are_checked_against_the_budget(monkeypatch):
    monkeypatch.setenv("RELULAB_MEMORY_GB", "0.01")
    X = np.random.default_rng(0).normal(size=(400, 3))
    with pytest.raises(ResourceLimitError, match="ntk_fluctuation"):
        ntk_fluctuation(X)
    with pytest.raises(ResourceLimitError, match="keep_kernels"):
        monte_carlo_ntk(X[:200], width=4, n_networks=100, keep_kernels=True, rng=0)
    monkeypatch.setenv("RELULAB_MEMORY_GB", "0.5")
    Xs = np.linspace(-1, 1, 7)[:, None]
    with pytest.raises(ResourceLimitError, match="children"):   # 67 GB of children
        fit_basin_hopping(Xs, np.sin(3 * Xs[:, 0]), 1, 2, restarts=4, chains=4, children=10**8,
                          rounds=1)


def test_kernel_ridge_names_an_argument_that_is_not_numbers():
    with pytest.raises(KernelError, match="K_train"):
        kernel_ridge([["a"]], [1.0], [[1.0]])
    with pytest.raises(KernelError, match="K_test"):
        kernel_ridge([[1.0]], [1.0], [[1.0], [1.0, 2.0]])


def test_the_exact_centring_check_agrees_with_fractions():
    # the float differences x - c are used only when every one is exact: decided by an
    # error-free transformation, checked here against rational arithmetic
    rng = np.random.default_rng(1)
    for k in range(400):
        X = [rng.integers(0, 100, (6, 2)).astype(float),
             rng.normal(size=(6, 2)) * 10.0 ** int(rng.integers(-5, 5)),
             rng.normal(size=(6, 2)) + 1e4,
             np.r_[rng.normal(size=(5, 2)), [[1e300, -1e300]]]][k % 4]
        med = np.median(X, axis=0)
        c = X[np.argmin(np.abs(X - med), axis=0), np.arange(2)]
        with np.errstate(all="ignore"):
            Y = X - c
        exact = all(np.isfinite(yv) and Fraction(float(yv)) == Fraction(float(xv)) - Fraction(float(cv))
                    for rx, ry in zip(X, Y, strict=True) for xv, yv, cv in zip(rx, ry, c, strict=True))
        assert (_centred_exactly(X) is not X) == exact
