"""What every estimator shares: input checks, standardisation, seeding, the training call.

scikit-learn is imported when an estimator class is first touched (``relulab.estimators``
loads this module lazily), torch only inside ``fit``.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from ..errors import RelulabError
from ..tolerance import ROUNDOFF
from . import _torch


class EstimatorInputError(RelulabError):
    """Bad input to an estimator (a ``ValueError``, as scikit-learn expects)."""


def _where(est: Any, method: str) -> str:
    return f"{type(est).__name__}.{method}"


def check_Xy(est: Any, X: Any, y: Any, method: str = "fit") -> tuple[np.ndarray, np.ndarray]:
    """Validate a training set (finite, numeric, 2-D ``X``, 1-D ``y``) and set n_features_in_."""
    try:
        X, y = validate_data(est, X, y, dtype=np.float64, y_numeric=True, ensure_min_samples=2)
    except ValueError as e:
        raise EstimatorInputError(f"{_where(est, method)}: {e}") from None
    return X, np.asarray(y, dtype=np.float64)


def check_X(est: Any, X: Any, method: str = "predict") -> np.ndarray:
    """Validate prediction inputs against the fitted feature count."""
    check_is_fitted(est)
    try:
        return validate_data(est, X, dtype=np.float64, reset=False)
    except ValueError as e:
        raise EstimatorInputError(f"{_where(est, method)}: {e}") from None


def check_hidden(est: Any, hidden: Any) -> tuple[int, ...]:
    if isinstance(hidden, numbers.Integral):
        hidden = (int(hidden),)
    if isinstance(hidden, (str, bytes)):
        raise EstimatorInputError(f"{_where(est, 'fit')}: hidden must be a tuple of layer widths, got {hidden!r}")
    try:
        widths = tuple(int(h) for h in hidden)
    except (TypeError, ValueError):
        raise EstimatorInputError(f"{_where(est, 'fit')}: hidden must be a tuple of layer widths, got {hidden!r}") from None
    if any(h < 1 for h in widths) or any(int(h) != h for h in hidden):
        raise EstimatorInputError(f"{_where(est, 'fit')}: hidden widths must be positive integers, got {hidden!r}")
    return widths


def check_choice(est: Any, name: str, value: Any, choices: Sequence[str]) -> str:
    if value not in choices:
        raise EstimatorInputError(
            f"{_where(est, 'fit')}: {name}={value!r} is not one of {', '.join(map(repr, choices))}"
        )
    return value


def check_positive(est: Any, name: str, value: Any, integer: bool = False) -> Any:
    ok = isinstance(value, numbers.Real) and np.isfinite(value) and value > 0
    if integer:
        ok = ok and isinstance(value, numbers.Integral)
    if not ok:
        kind = "a positive integer" if integer else "a positive finite number"
        raise EstimatorInputError(f"{_where(est, 'fit')}: {name} must be {kind}, got {value!r}")
    return value


def seed_of(random_state: Any) -> int:
    """An integer seed for torch and numpy drawn from a scikit-learn ``random_state``."""
    return int(check_random_state(random_state).randint(0, 2**31 - 1))


def standardiser(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column means and scales (a constant column gets scale 1, so nothing divides by 0)."""
    mean = A.mean(axis=0)
    scale = A.std(axis=0)
    scale = np.where(scale > ROUNDOFF * (1 + np.abs(mean)), scale, 1.0)
    return mean, scale


class NetEstimatorBase(RegressorMixin, BaseEstimator):
    """Training settings shared by the network estimators (not used directly)."""

    def _check_training_params(self) -> None:
        check_positive(self, "epochs", self.epochs, integer=True)
        check_positive(self, "batch_size", self.batch_size, integer=True)
        check_positive(self, "learning_rate", self.learning_rate)
        check_positive(self, "n_iter_no_change", self.n_iter_no_change, integer=True)
        if not (isinstance(self.weight_decay, numbers.Real) and np.isfinite(self.weight_decay)
                and self.weight_decay >= 0):
            raise EstimatorInputError(
                f"{_where(self, 'fit')}: weight_decay must be a finite number >= 0, got {self.weight_decay!r}")
        if not (isinstance(self.tol, numbers.Real) and np.isfinite(self.tol)):
            raise EstimatorInputError(f"{_where(self, 'fit')}: tol must be a finite number, got {self.tol!r}")

    def _train(
        self,
        torch: Any,
        Xs: np.ndarray,
        Ys: np.ndarray,
        objective: Any,
        d_out: int,
        activation: str,
        seed: int,
        weights: np.ndarray | None = None,
        out_bias: np.ndarray | None = None,
    ) -> tuple[Any, _torch.TrainLog]:
        model = _torch.build_mlp(torch, Xs.shape[1], self.hidden_, d_out, activation, seed)
        if out_bias is not None:
            with torch.no_grad():
                model[-1].bias.copy_(torch.as_tensor(np.asarray(out_bias), dtype=model[-1].bias.dtype))
        log = _torch.train(
            torch, model.parameters(), model, objective, Xs, Ys, weights,
            epochs=self.epochs, batch_size=self.batch_size, lr=self.learning_rate,
            weight_decay=self.weight_decay, tol=self.tol, n_iter_no_change=self.n_iter_no_change,
            seed=seed + 1,
        )
        # predict and network_ both compute in float64 with the trained (float32) numbers
        model.double().eval()
        return model, log
