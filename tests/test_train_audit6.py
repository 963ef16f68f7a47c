"""Training audit 6: collapse_threshold's memory, 2-D targets."""

import numpy as np
import pytest

from relulab.limits import ResourceLimitError, memory_limit
from relulab.train import collapse_threshold, convex_fit, gated_fit
from relulab.train.convex import ConvexTrainingError


def test_collapse_threshold_checks_its_pattern_matrices_before_making_them():
    # aud_tr6 #1: 1-D data has all its 2n patterns; n = 8,000 asked for 3 GB and ended in
    # numpy's raw MemoryError after 9 s
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 1))
    y = np.sin(3 * X[:, 0])
    with memory_limit(10**8), pytest.raises(ResourceLimitError, match="collapse_threshold: the 2000 x 4000"):
        collapse_threshold(X, y)
    # within the budget it answers, exactly (every pattern of 1-D data)
    t = collapse_threshold(X[:200], y[:200])
    assert t.exact and t.lam <= t.upper


@pytest.mark.parametrize("fit", [lambda X, y: convex_fit(X, y, 0.1), lambda X, y: gated_fit(X, y, 0.1),
                                 lambda X, y: collapse_threshold(X, y)])
def test_a_two_column_target_is_refused_with_its_own_shape(fit):
    # aud_tr6 #2: a (3, 2) target was flattened to 6 values and fitted against 6 inputs
    with pytest.raises(ConvexTrainingError, match=r"\(3, 2\)"):
        fit(np.arange(6.0)[:, None], np.zeros((3, 2)))
    with pytest.raises(ConvexTrainingError, match=r"\(3, 2\)"):
        fit(np.zeros((3, 1)), np.zeros((3, 2)))
    # (n, 1) is a column of targets: the same fit as (n,)
    X = np.array([[0.0], [1.0], [2.0]])
    y = np.array([0.0, 1.0, 0.0])
    a, b = fit(X, y), fit(X, y[:, None])
    assert np.allclose(getattr(a, "objective", getattr(a, "lam", None)),
                       getattr(b, "objective", getattr(b, "lam", None)))
