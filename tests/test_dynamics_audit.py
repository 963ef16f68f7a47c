"""Audit fixes in relulab.dynamics: time limits, memory checks, argument checks."""

import numpy as np
import pytest

from relulab.dynamics._model import DynamicsError
from relulab.dynamics.multistart import fit_multistart
from relulab.limits import ResourceLimitError, memory_limit


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 2))
    return X, np.sin(3 * X[:, 0]) * X[:, 1]


def test_multistart_time_limit_counts_only_restarts_that_iterated():
    X, y = _data()
    fit = fit_multistart(X, y, 2, 4, restarts=3000, max_iter=50, seed=0, time_limit=1e-9)
    assert fit.status == "time_limit"
    assert fit.completed == 0 and fit.iterations == 0
    assert np.all(np.isinf(fit.train_mse))  # as documented: inf for restarts not run
    with pytest.raises(DynamicsError, match="never started"):
        fit.predict(X, [2999])


def test_multistart_time_limit_consistent_counts():
    X, y = _data()
    fit = fit_multistart(X, y, 2, 4, restarts=3000, max_iter=50, seed=0, time_limit=0.2)
    assert fit.completed < 3000
    assert fit.completed == 0 or fit.iterations >= 1
    assert np.all(np.isfinite(fit.train_mse[:fit.completed]))
    assert np.all(np.isinf(fit.train_mse[fit.completed:]))


def test_multistart_memory_checked_up_front():
    X, y = _data()
    with memory_limit(1_000_000), pytest.raises(ResourceLimitError, match="restarts=100000"):
        fit_multistart(X, y, 2, 4, restarts=100_000, max_iter=1, time_limit=1.0)


@pytest.mark.parametrize("seed", [-3, 1.5, "a"])
def test_multistart_refuses_bad_seed(seed):
    X, y = _data()
    with pytest.raises(DynamicsError, match="seed"):
        fit_multistart(X, y, 1, 1, restarts=2, seed=seed)
