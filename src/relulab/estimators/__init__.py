"""scikit-learn estimators whose fitted model is a relulab :class:`~relulab.Network`.

* :class:`QuantileNetRegressor`: quantile regression by one ReLU network with one output
  per level, under the check loss or its convolution-smoothed version (ConquerNet), with
  guaranteed non-crossing quantiles; ``predict`` evaluates ``network_``.
* :class:`MarginalNetRegressor`: marginal regression for clustered / repeated-measures
  data (gaussian, binomial, poisson) by an ensemble of ReLU networks on resampled units,
  with infinitesimal-jackknife intervals (:func:`ij_variance`).
* :class:`SmoothNetRegressor`: ReLU or smooth (softplus, GELU, SiLU) networks under the
  squared, Huber, quantile or logistic loss.
* :func:`recent_drop`: how far a loss curve was from settled at its end.
* :mod:`.kernels`: the check loss, its closed-form smoothed versions for five kernels,
  and the conquer bandwidth rule.

Fitting needs torch and scikit-learn (``pip install 'relulab[torch,sklearn]'``); both
are imported on first use of an estimator class.

Example:
    >>> import numpy as np
    >>> from relulab.estimators import QuantileNetRegressor
    >>> X = np.linspace(-1, 1, 64)[:, None]; y = X[:, 0] ** 2
    >>> m = QuantileNetRegressor(quantiles=0.5, hidden=(4,), epochs=2, random_state=0).fit(X, y)
    >>> m.predict(X).shape, m.network_.widths
    ((64,), (4,))
"""

from __future__ import annotations

import importlib
from typing import Any

from ._torch import recent_drop
from .jackknife import ij_variance
from .kernels import KERNELS, check_loss, conquer_bandwidth, smoothed_check_loss

__all__ = [
    "QuantileNetRegressor",
    "MarginalNetRegressor",
    "SmoothNetRegressor",
    "EstimatorInputError",
    "ij_variance",
    "check_loss",
    "smoothed_check_loss",
    "conquer_bandwidth",
    "KERNELS",
    "recent_drop",
]

# the estimator classes subclass scikit-learn's BaseEstimator, so they load on first use
_LAZY = {
    "QuantileNetRegressor": ".quantile",
    "MarginalNetRegressor": ".marginal",
    "SmoothNetRegressor": ".smooth",
    "EstimatorInputError": "._base",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from ..errors import require

        require("sklearn", "sklearn")
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
