"""aud_est8: a constant response is fitted as that constant by the squared and Gaussian
losses too (its scale is its rounding, as for the robust losses), and inputs whose
outputs overflow float64 are refused by name instead of predicted as NaN.

Independent checks: the constant itself; numpy's own overflow of the inputs."""

import numpy as np
import pytest

from relulab.estimators import MarginalNetRegressor, SmoothNetRegressor
from relulab.estimators._base import EstimatorInputError

X = np.random.default_rng(0).uniform(-1, 1, (100, 2))


@pytest.mark.parametrize("c", [1000.0, 1e6, -3.5e9])
@pytest.mark.parametrize("make", [lambda: SmoothNetRegressor(activation="relu", random_state=0),
                                  lambda: SmoothNetRegressor(activation="softplus", random_state=0),
                                  lambda: MarginalNetRegressor(n_estimators=5, random_state=0)])
def test_a_constant_response_is_fitted_as_that_constant(c, make):
    """Before: off by 5.07 (Smooth) and 2.61 (Marginal) for y == 1000, by 5065 for 1e6."""
    est = make().fit(X, np.full(len(X), c))
    grid = np.random.default_rng(1).uniform(-1, 1, (200, 2))
    assert np.max(np.abs(est.predict(grid) - c)) <= 1e-9 * abs(c)


def test_the_intervals_of_a_constant_response_hold_it():
    m = MarginalNetRegressor(n_estimators=50, random_state=0).fit(X, np.full(len(X), 1000.0))
    with pytest.warns(UserWarning):   # (width 0 where the variance estimate is <= 0: said)
        iv = m.predict_interval(X[:5], alpha=0.05)
    assert np.all((iv[:, 0] <= 1000.0) & (1000.0 <= iv[:, 1]))


@pytest.mark.parametrize("make", [lambda: SmoothNetRegressor(hidden=(8, 8), epochs=20, random_state=0),
                                  lambda: MarginalNetRegressor(hidden=(8, 8), n_estimators=3, epochs=20,
                                                               random_state=0)])
def test_inputs_whose_outputs_overflow_are_refused_by_name(make):
    y = X[:, 0] - 2 * X[:, 1]
    est = make().fit(X, y)
    huge = np.array([[1.7e308, -1.7e308], [0.5, 0.5]])
    with np.errstate(over="ignore"):
        assert not np.isfinite(huge[0] / 0.5).all()   # beyond float64 once standardised
    with pytest.raises(EstimatorInputError, match="row 0"):
        est.predict(huge)
    assert np.isfinite(est.predict(huge[1:])).all()


@pytest.mark.parametrize("c, rtol", [(1e-300, 1e-9), (-3e-296, 1e-9), (1e-310, 1e-2), (5e-324, 1e-2)])
def test_a_tiny_constant_response_keeps_a_positive_scale_and_is_fitted(c, rtol):
    """(A first version scaled it by its rounding, which underflowed to 0; the next by its
    size below 1.6e-294, and predicted 1e-300 1.2 % off.  Subnormals hold few digits.)"""
    from relulab.estimators._base import response_scale

    mean, scale = response_scale(np.full(50, c))
    assert mean == c and scale > 0
    est = SmoothNetRegressor(activation="relu", random_state=0).fit(X[:50], np.full(50, c))
    assert np.max(np.abs(est.predict(X[:5]) - c)) <= rtol * abs(c)
