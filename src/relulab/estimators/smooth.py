"""Network regression with a choice of activation and loss (ReLU vs smooth networks).

:class:`SmoothNetRegressor` fits ``f`` by a network whose activation is ReLU or a smooth
one (softplus, GELU, SiLU) under the Huber, squared, quantile (check) or logistic loss,
so ReLU and smoothly activated networks can be compared under one API.  Only the ReLU
fit is a CPWL function, so only it gets a ``network_`` (a relulab
:class:`~relulab.Network` computing the fitted value, or the log-odds for the logistic
loss); a smooth fit has no ``network_`` attribute.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from scipy.special import expit

from . import _losses, _torch
from ._base import (
    EstimatorInputError,
    NetEstimatorBase,
    check_choice,
    check_hidden,
    check_positive,
    check_X,
    check_Xy,
    finite_outputs,
    forward_in_blocks,
    keeps_state_on_failure,
    response_scale,
    robust_response_scale,
    seed_of,
    standardise,
    standardiser,
)

__all__ = ["SmoothNetRegressor", "LOSSES"]

LOSSES = ("squared", "huber", "quantile", "logistic")


# the smallest Huber threshold (standardised units) that float32 Adam trains with: its
# gradients have size delta, and Adam's steps shrink as delta / (delta + 1e-8)
HUBER_DELTA_MIN = 1e-6  # tol: a hundred times Adam's eps


class SmoothNetRegressor(NetEstimatorBase):
    """Nonparametric regression by a ReLU or smoothly activated network.

    Args:
        activation: ``"relu"``, ``"softplus"``, ``"gelu"`` or ``"silu"``.
        loss: ``"squared"``, ``"huber"`` (threshold ``huber_delta`` in standardised
            response units), ``"quantile"`` (check loss at level ``quantile``) or
            ``"logistic"`` (``y`` in [0, 1]; ``predict`` gives the probability).
        hidden, epochs, batch_size, learning_rate, weight_decay, tol, n_iter_no_change,
        random_state, time_limit: as for :class:`QuantileNetRegressor`.

    Attributes:
        network_ (only for ``activation="relu"``; ``predict`` then evaluates it), loss_,
        loss_curve_, n_iter_, converged_, stopped_, n_features_in_.

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-1, 1, size=(100, 2)); y = np.abs(X[:, 0]) + 0.05 * rng.normal(size=100)
        >>> m = SmoothNetRegressor(activation="relu", hidden=(8,), epochs=5, random_state=0).fit(X, y)
        >>> bool(np.array_equal(m.network_(X)[:, 0], m.predict(X)))
        True
        >>> hasattr(SmoothNetRegressor(activation="gelu", hidden=(4,), epochs=1).fit(X, y), "network_")
        False
    """

    def __init__(
        self,
        activation: str = "softplus",
        loss: str = "squared",
        quantile: float = 0.5,
        huber_delta: float = 1.345,
        hidden: Any = (64, 64),
        epochs: int = 200,
        batch_size: int = 256,
        learning_rate: float = 1e-3,
        weight_decay: float = 0.0,
        tol: float = 0.0,
        n_iter_no_change: int = 10,
        random_state: Any = None,
        time_limit: float | None = None,
    ) -> None:
        self.activation = activation
        self.loss = loss
        self.quantile = quantile
        self.huber_delta = huber_delta
        self.hidden = hidden
        self.epochs = epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.random_state = random_state
        self.time_limit = time_limit

    @keeps_state_on_failure
    def fit(self, X: Any, y: Any) -> SmoothNetRegressor:
        """Fit the network on ``X`` (n, d) and ``y`` (n,)."""
        act = check_choice(self, "activation", self.activation, _torch.ACTIVATIONS)
        loss = check_choice(self, "loss", self.loss, LOSSES)
        if loss == "quantile" and not (isinstance(self.quantile, numbers.Real)
                                       and not isinstance(self.quantile, (bool, np.bool_)) and 0 < self.quantile < 1):
            raise EstimatorInputError(
                f"SmoothNetRegressor.fit: quantile must lie strictly between 0 and 1, got {self.quantile!r}"
            )
        if loss == "huber":
            check_positive(self, "huber_delta", self.huber_delta)
            if not HUBER_DELTA_MIN <= self.huber_delta <= float(np.finfo(np.float32).max):
                # the loss's gradients have size delta: below Adam's eps (1e-8) the steps
                # vanish and the untrained network came back; above float32 it is inf
                raise EstimatorInputError(
                    f"SmoothNetRegressor.fit: huber_delta must lie in [{HUBER_DELTA_MIN:g}, "
                    f"{float(np.finfo(np.float32).max):.3g}] (standardised response units: smaller "
                    f"deltas give gradients too small for float32 Adam to train), got {self.huber_delta!r}")
        self.hidden_ = check_hidden(self, self.hidden)
        self._check_training_params()
        X, y = check_Xy(self, X, y)
        if loss == "logistic" and np.any((y < 0) | (y > 1)):
            i = int(np.flatnonzero((y < 0) | (y > 1))[0])
            raise EstimatorInputError(f"SmoothNetRegressor.fit: loss='logistic' needs y in [0, 1]; y[{i}] = {y[i]}")
        self.x_mean_, self.x_scale_ = standardiser(X)
        Xs = standardise(self, "X", X, self.x_mean_, self.x_scale_, folded=self.activation == "relu")
        if loss == "logistic":
            self.y_mean_, self.y_scale_ = 0.0, 1.0
            p = float(np.clip(y.mean(), 1e-3, 1 - 1e-3))
            start = np.log(p / (1 - p))
        elif loss in ("huber", "quantile"):
            # robust losses, robust units: an outlier of 1e6 made Huber's threshold 3e4
            self.y_mean_, self.y_scale_ = robust_response_scale(y)
            start = 0.0
        else:
            self.y_mean_, self.y_scale_ = response_scale(y)   # (a constant y: its rounding)
            start = 0.0
        Ys = standardise(self, "y", y, self.y_mean_, self.y_scale_)
        seed = seed_of(self, self.random_state)

        torch = _torch.torch_module()
        # each loss reads only its own parameter (checked above); the others are ignored
        tau = float(self.quantile) if loss == "quantile" else 0.5
        delta = float(self.huber_delta) if loss == "huber" else 1.0

        def objective(out: Any, yb: Any, idx: Any) -> Any:
            f = out[:, 0]
            if loss == "squared":
                return 0.5 * (yb - f) ** 2
            if loss == "huber":
                return _losses.huber_loss(torch, yb - f, delta)
            if loss == "quantile":
                return _losses.check_loss(torch, yb - f, tau)
            return _losses.glm_loss(torch, f, yb, "binomial")

        with _torch.one_thread(torch):
            self._model, log = self._train(
                torch, Xs, Ys, objective, 1, act, seed, out_bias=np.array([start])
            )
        self.loss_ = loss
        self._record(log)
        if act == "relu":
            out_map = (np.array([[self.y_scale_]]), np.array([self.y_mean_]))
            self.network_ = _torch.export_network(
                _torch.linear_layers(self._model), self.x_mean_, self.x_scale_, out_map
            )
        elif hasattr(self, "network_"):
            del self.network_   # a refit with a smooth activation has no CPWL network
        return self

    def predict_link(self, X: Any) -> np.ndarray:
        """The fitted network's output: the fitted value, or the log-odds for ``logistic``.

        A ReLU fit is computed by ``network_`` (identical to it), a smooth one by the
        float64 torch model.
        """
        X = check_X(self, X, "predict_link")
        if hasattr(self, "network_"):
            return forward_in_blocks(self.network_, X, "SmoothNetRegressor.predict")[:, 0]
        torch = _torch.torch_module()
        with np.errstate(over="ignore", invalid="ignore"):
            f = _torch.predict_raw(torch, self._model, (X - self.x_mean_) / self.x_scale_)[:, 0]
            out = self.y_mean_ + self.y_scale_ * f
        return finite_outputs(out, X, "SmoothNetRegressor.predict")

    def predict(self, X: Any) -> np.ndarray:
        """Fitted values (probabilities for the logistic loss)."""
        f = self.predict_link(X)
        return expit(f) if self.loss_ == "logistic" else f
