"""Allocations far over the memory budget are one ResourceLimitError naming what needed the
memory, before anything is allocated (they were raw numpy MemoryErrors, or allocated past
the budget)."""

from __future__ import annotations

import numpy as np
import pytest

from relulab import Network
from relulab.limits import ResourceLimitError, memory_limit

BUDGET = 50 * 2**20  # 50 MB


def _net(widths, seed=0):
    rng = np.random.default_rng(seed)
    return Network([rng.standard_normal((b, a)) for a, b in zip(widths[:-1], widths[1:], strict=True)],
                   [rng.standard_normal(b) for b in widths[1:]])


def test_realization_jacobian_over_budget():
    from relulab.params import realization_jacobian

    net = _net([10, 200, 200, 3])
    X = np.random.default_rng(0).standard_normal((2000, 10))
    with memory_limit(BUDGET), pytest.raises(ResourceLimitError, match="Jacobian of the realization map"):
        realization_jacobian(net, X)
    assert realization_jacobian(net, X[:3]).shape == (9, net.n_params)   # small: computed


@pytest.mark.parametrize("kernel", ["ntk", "nngp"])
def test_analytic_kernels_over_budget(kernel):
    import relulab.dynamics as dyn

    X = np.random.default_rng(0).standard_normal((5000, 3))
    with memory_limit(BUDGET), pytest.raises(ResourceLimitError, match="5000 x 5000 kernel"):
        getattr(dyn, kernel)(X, depth=2)
    assert getattr(dyn, kernel)(X[:4], depth=2).shape == (4, 4)


def test_monte_carlo_ntk_over_budget():
    from relulab.dynamics import monte_carlo_ntk

    X = np.random.default_rng(0).standard_normal((300, 3))
    with memory_limit(BUDGET), pytest.raises(ResourceLimitError, match="streamed NTK of 300 points"):
        monte_carlo_ntk(X, depth=2, width=100_000, n_networks=1, rng=0)


def test_pattern_sampling_over_budget():
    from relulab.train import convex_fit

    rng = np.random.default_rng(0)
    X = rng.standard_normal((5000, 6))
    with memory_limit(BUDGET), pytest.raises(ResourceLimitError, match="sampling activation patterns"):
        convex_fit(X, np.sin(X.sum(1)), 0.01, max_patterns=2000)
