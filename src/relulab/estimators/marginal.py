"""Marginal regression for repeated measures with an ensemble of ReLU networks.

Data: ``n`` independent units (clusters), unit ``i`` measured ``m_i`` times,
``(x_ij, y_ij)``; the responses of one unit are dependent (through an unobserved random
mean function) and the target is the marginal mean ``E[y | x] = g^{-1}(f(x))``.
:class:`MarginalNetRegressor` fits ``f`` by a ReLU network minimising the convex
generalised-regression loss (the canonical-link negative log-likelihood: squared error,
logistic or Poisson loss) in which every measurement of unit ``i`` has weight ``w_i``:

* ``cluster_weights="unit"`` (default): ``w_i = 1 / m_i``, every unit counts equally.
  The between-unit part of the error (order ``1/n``) does not shrink with ``m``, so
  units with many measurements should not dominate; this is the weighting of the
  weighted oracle inequality for unequal cluster sizes as we read it.
* ``cluster_weights="obs"``: ``w_i = 1``, every measurement counts equally (right when
  the within-unit dependence is weak).

The estimate is an ensemble: ``n_estimators`` networks, each fitted on a bootstrap
sample of units (``resample="bootstrap"``) or on a subsample of
``subsample_fraction * n`` units without replacement (``"subsample"``); a unit drawn
``N`` times gets ``N`` times its weight.  The members train in one run (stacked
weights, batched matrix products, shared minibatches), which is the same as training
them one by one because Adam acts elementwise.  Resampling units, not rows, keeps the
dependence within units intact.  ``predict_interval`` uses the infinitesimal-jackknife
variance over the ensemble with the Wager-Hastie-Efron bias correction
(:func:`.ij_variance`), on the linear-predictor scale, mapped through the inverse link.
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np
from scipy.special import expit
from scipy.stats import norm

from ..limits import check_bytes
from ..network import Network
from . import _losses, _torch
from ._base import (
    EstimatorInputError,
    NetEstimatorBase,
    check_choice,
    check_hidden,
    check_positive,
    check_trained,
    check_X,
    check_Xy,
    forward_in_blocks,
    in_row_blocks,
    keeps_state_on_failure,
    power_of_two_scale,
    response_scale,
    seed_of,
    standardise,
    standardiser,
)
from .jackknife import ij_variance

__all__ = ["MarginalNetRegressor", "FAMILIES"]

FAMILIES = ("gaussian", "binomial", "poisson")


def _inverse_link(eta: np.ndarray, family: str) -> np.ndarray:
    if family == "binomial":
        return expit(eta)
    if family == "poisson":
        return np.exp(eta)
    return eta


def _check_groups(groups: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Unique unit labels and each row's unit index."""
    if groups is None:
        return np.arange(n), np.arange(n)
    g = np.asarray(groups)
    if g.ndim != 1 or g.shape[0] != n:
        raise EstimatorInputError(
            f"MarginalNetRegressor.fit: groups has shape {g.shape}; need one label per row of X ({n},)"
        )
    missing = None
    if g.dtype.kind == "f":
        missing = ~np.isfinite(g)
    elif g.dtype.kind in "mM":
        missing = np.isnat(g)
    elif g.dtype.kind == "O":
        # NaN != NaN: np.unique made every missing row a unit of its own
        missing = np.array([v is None or (isinstance(v, numbers.Real) and not np.isfinite(float(v)))
                            for v in g.tolist()], dtype=bool)
    if missing is not None and missing.any():
        raise EstimatorInputError("MarginalNetRegressor.fit: groups contains missing (NaN, NaT, None) "
                                  f"or infinite labels, first at row {int(np.argmax(missing))}")
    try:
        units, inverse = np.unique(g, return_inverse=True)
    except TypeError:
        raise EstimatorInputError(
            "MarginalNetRegressor.fit: groups must be labels of one sortable kind "
            "(all numbers or all strings; no None)") from None
    return units, inverse.reshape(-1)


def _check_response(y: np.ndarray, family: str) -> None:
    if family == "poisson":
        bad = (y < 0) | (y != np.floor(y))
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise EstimatorInputError(
                f"MarginalNetRegressor.fit: family='poisson' needs non-negative integer counts; y[{i}] = {y[i]}"
            )
    elif family == "binomial":
        bad = (y < 0) | (y > 1)
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise EstimatorInputError(
                f"MarginalNetRegressor.fit: family='binomial' needs responses in [0, 1]; y[{i}] = {y[i]}"
            )


def _mean(E: np.ndarray) -> np.ndarray:
    """``E.mean(axis=0)`` without overflow: the sum of members near 1.7e308 overflowed
    where their mean does not."""
    s = power_of_two_scale(E)
    return (E / s).mean(axis=0) * s


class MarginalNetRegressor(NetEstimatorBase):
    """Ensemble ReLU-network marginal regression for clustered / repeated-measures data.

    Args:
        family: ``"gaussian"`` (squared loss, identity link), ``"binomial"`` (logistic
            loss, logit link, ``y`` in [0, 1]) or ``"poisson"`` (Poisson loss, log link,
            ``y`` non-negative integers).
        hidden: hidden-layer widths of every member network.
        n_estimators: ensemble size ``B`` (at least 2 for intervals).
        resample: ``"bootstrap"`` or ``"subsample"`` (units, without replacement).
        subsample_fraction: fraction of units in a subsample.
        cluster_weights: ``"unit"`` (``1/m_i`` per measurement) or ``"obs"`` (1).
        epochs, batch_size, learning_rate, weight_decay, tol, n_iter_no_change,
        random_state, time_limit: as for :class:`QuantileNetRegressor`.

    Attributes:
        units_ (unit labels), counts_ ``(B, n_units)`` resampling counts, networks_ (one
        relulab :class:`~relulab.Network` per member computing its linear predictor of
        the raw input), unit_weights_, family_, loss_curve_, n_iter_, converged_,
        stopped_, n_features_in_.

    ``predict`` returns the marginal mean ``g^{-1}(mean_b f_b(x))``; ``score`` is R^2 of
    the mean (scikit-learn's default).

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> g = np.repeat(np.arange(30), 4); X = rng.uniform(-1, 1, size=(120, 1))
        >>> y = np.sin(2 * X[:, 0]) + rng.normal(size=30)[g] * 0.3 + 0.1 * rng.normal(size=120)
        >>> m = MarginalNetRegressor(hidden=(8,), n_estimators=4, epochs=3,
        ...                          random_state=0).fit(X, y, groups=g)
        >>> lo_hi = m.predict_interval(X[:5], alpha=0.1)
        >>> lo_hi.shape, bool(np.all(lo_hi[:, 0] <= lo_hi[:, 1]))
        ((5, 2), True)
    """

    def __init__(
        self,
        family: str = "gaussian",
        hidden: Any = (64, 64),
        n_estimators: int = 20,
        resample: str = "bootstrap",
        subsample_fraction: float = 0.5,
        cluster_weights: str = "unit",
        epochs: int = 200,
        batch_size: int = 256,
        learning_rate: float = 1e-3,
        weight_decay: float = 0.0,
        tol: float = 0.0,
        n_iter_no_change: int = 10,
        random_state: Any = None,
        time_limit: float | None = None,
    ) -> None:
        self.family = family
        self.hidden = hidden
        self.n_estimators = n_estimators
        self.resample = resample
        self.subsample_fraction = subsample_fraction
        self.cluster_weights = cluster_weights
        self.epochs = epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.random_state = random_state
        self.time_limit = time_limit

    def _draw_counts(self, rng: np.random.Generator, n_units: int) -> tuple[np.ndarray, int | None]:
        B = self.n_estimators
        if self.resample == "bootstrap":
            return rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=B), None
        f = self.subsample_fraction
        if not (isinstance(f, numbers.Real) and 0 < f < 1):
            raise EstimatorInputError(f"MarginalNetRegressor.fit: subsample_fraction must be in (0, 1), got {f!r}")
        s = min(max(1, int(round(f * n_units))), n_units - 1)
        counts = np.zeros((B, n_units), dtype=np.int64)
        for b in range(B):
            counts[b, rng.choice(n_units, size=s, replace=False)] = 1
        return counts, s

    @keeps_state_on_failure
    def fit(self, X: Any, y: Any, groups: Any = None) -> MarginalNetRegressor:
        """Fit the ensemble; ``groups`` gives each row's unit (``None``: every row is a unit)."""
        family = check_choice(self, "family", self.family, FAMILIES)
        check_choice(self, "resample", self.resample, ("bootstrap", "subsample"))
        check_choice(self, "cluster_weights", self.cluster_weights, ("unit", "obs"))
        check_positive(self, "n_estimators", self.n_estimators, integer=True)
        self.hidden_ = check_hidden(self, self.hidden)
        self._check_training_params()
        X, y = check_Xy(self, X, y)
        n = X.shape[0]
        self.units_, unit_of_row = _check_groups(groups, n)
        n_units = self.units_.shape[0]
        if n_units < 2:
            raise EstimatorInputError("MarginalNetRegressor.fit: need at least 2 units (groups)")
        _check_response(y, family)
        sizes = np.bincount(unit_of_row, minlength=n_units)
        self.unit_weights_ = 1.0 / sizes if self.cluster_weights == "unit" else np.ones(n_units)

        self.x_mean_, self.x_scale_ = standardiser(X)
        Xs = standardise(self, "X", X, self.x_mean_, self.x_scale_, folded=True)
        if family == "gaussian":
            self.y_mean_, self.y_scale_ = response_scale(y)   # (a constant y: its rounding)
            start = 0.0
        else:
            self.y_mean_, self.y_scale_ = 0.0, 1.0
            mu = float(np.clip(y.mean(), 1e-3, 1 - 1e-3 if family == "binomial" else np.inf))
            start = float(np.log(mu / (1 - mu))) if family == "binomial" else float(np.log(mu))
        Ys = standardise(self, "y", y, self.y_mean_, self.y_scale_)
        if family == "poisson":
            _check_poisson_range(y, float(np.exp(start)), start, min(int(self.batch_size), n))

        seed = seed_of(self, self.random_state)
        rng = np.random.default_rng(seed)
        B = self.n_estimators
        # one training run for the whole ensemble: member b sees every row with weight
        # (count of its unit in resample b) x (cluster weight); zero-weight rows are out.
        # Those B x n weights (float64, a rescaled copy and a float32 one: 20 bytes each),
        # the B x units counts and the minibatches are counted before they are made
        # (B = 3,000 on 40,000 rows took 3.4 GB past a 0.5 GB budget)
        row_bytes = 20.0 * B * n + 8.0 * B * n_units + 4.0 * n * (Xs.shape[1] + 1)
        check_bytes(row_bytes, f"the row weights of {B} members on {n} rows")
        self.counts_, self._subsample_size = self._draw_counts(rng, n_units)
        torch = _torch.torch_module()
        row_w = self.counts_[:, unit_of_row] * self.unit_weights_[unit_of_row][None, :]

        def objective(out: Any, yb: Any, idx: Any) -> Any:
            return _losses.glm_loss(torch, out[..., 0], yb[None, :], family)

        params = _torch.build_ensemble(torch, B, Xs.shape[1], self.hidden_, 1, int(rng.integers(2**31 - 1)),
                                       batch_rows=min(int(self.batch_size), n), extra=row_bytes)
        with torch.no_grad():
            params[-1].fill_(start)
        with _torch.one_thread(torch):
            log = _torch.train(
                torch, params, lambda Z: _torch.ensemble_forward(torch, params, Z), objective, Xs, Ys, row_w,
                epochs=self.epochs, batch_size=self.batch_size, lr=self.learning_rate,
                weight_decay=self.weight_decay, tol=self.tol, n_iter_no_change=self.n_iter_no_change,
                seed=int(rng.integers(2**31 - 1)), time_limit=self.time_limit,
            )
        check_trained(self, log)
        self.family_ = family
        self._record(log)
        out_map = (np.array([[self.y_scale_]]), np.array([self.y_mean_]))
        arrays = [p.detach().numpy() for p in params]
        self.networks_: list[Network] = []
        for b in range(B):
            layers = [(arrays[2 * k][b], arrays[2 * k + 1][b]) for k in range(len(arrays) // 2)]
            self.networks_.append(_torch.export_network(layers, self.x_mean_, self.x_scale_, out_map))
        return self

    # -------------------------------------------------------------- predict
    def member_predictions(self, X: Any) -> np.ndarray:
        """``(B, n)`` linear predictors ``f_b(x)`` of every member (mean scale for gaussian)."""
        X = check_X(self, X, "member_predictions")
        B = len(self.networks_)
        check_bytes(2 * 8.0 * B * len(X), f"MarginalNetRegressor.member_predictions: {B} members x {len(X)} points")
        return self._members(X)

    def _members(self, X: np.ndarray) -> np.ndarray:
        return np.stack([forward_in_blocks(net, X, "MarginalNetRegressor")[:, 0] for net in self.networks_])

    def _by_chunks(self, X: Any, method: str, per_chunk) -> np.ndarray:
        """``per_chunk(E)`` on the member predictions ``E`` of blocks of points, joined:
        every answer is per point, so blocks within the memory budget give the same
        answers (300 members x 150,000 points took 1 GB past a 0.2 GB budget)."""
        X = check_X(self, X, method)
        B = len(self.networks_)
        # E, its centred copy, the squares and a member's hidden layer: ~8 arrays of B rows
        per_point = 8 * 8.0 * max(B, max(self.hidden_, default=1))
        return in_row_blocks(lambda Xb: per_chunk(self._members(Xb)), X, per_point,
                             f"MarginalNetRegressor.{method}: {B} members on a block of points")

    def predict(self, X: Any) -> np.ndarray:
        """The marginal mean ``g^{-1}(mean_b f_b(x))``."""
        return self._by_chunks(X, "predict", lambda E: _inverse_link(_mean(E), self.family_))

    def _scaled_variance(self, E: np.ndarray, method: str) -> tuple[np.ndarray, float]:
        """The IJ variance of ``mean_b f_b(x)`` in units of ``s`` (a power of two near the
        largest ``|E|``), and ``s``: in raw units its squares overflowed to NaN at outputs
        of 1e160 and underflowed to 0 at 1e-200."""
        if E.shape[0] < 2:
            raise EstimatorInputError(f"MarginalNetRegressor.{method}: needs n_estimators >= 2")
        s = power_of_two_scale(E)
        return ij_variance(self.counts_, E / s, bias_correction=True, subsample_size=self._subsample_size), s

    def _sd(self, E: np.ndarray, method: str) -> np.ndarray:
        """The IJ standard deviation (NaN where the bias-corrected variance is negative)."""
        V, s = self._scaled_variance(E, method)
        with np.errstate(invalid="ignore"):
            return np.sqrt(V) * s

    def _variance(self, E: np.ndarray, method: str) -> np.ndarray:
        V, s = self._scaled_variance(E, method)
        with np.errstate(over="ignore"):
            return V * s * s     # (beyond float64 it is inf: the variance itself does not fit)

    def predict_variance(self, X: Any) -> np.ndarray:
        """Bias-corrected infinitesimal-jackknife variance of ``mean_b f_b(x)`` (link scale), clipped at 0."""
        return np.maximum(self._by_chunks(X, "predict_variance", lambda E: self._variance(E, "predict_variance")), 0.0)

    def predict_interval(self, X: Any, alpha: float = 0.05) -> np.ndarray:
        """``(n, 2)`` approximate normal intervals ``[lower, upper]`` of *nominal* level
        ``1 - alpha`` for the mean.

        Built on the link scale from the ensemble mean and its bias-corrected IJ variance,
        then mapped through the inverse link (monotone, so the bounds stay ordered).  The
        level is asymptotic: with ``n_estimators`` not well above the number of units the
        variance is noisy and the intervals under-cover (measured: 0.81 for a nominal 0.90
        at 20 members and 60 units; 0.86-0.89 at 400).  Where the corrected variance came
        out negative it is clipped at 0, the interval has width 0, and a warning says how
        many.
        """
        if not (isinstance(alpha, numbers.Real) and 0 < alpha < 1):
            raise EstimatorInputError(f"MarginalNetRegressor.predict_interval: alpha must be in (0, 1), got {alpha!r}")
        EV = self._by_chunks(X, "predict_interval",
                             lambda E: np.column_stack([_mean(E), self._sd(E, "predict_interval")]))
        eta, sd = EV[:, 0], EV[:, 1]
        clipped = int(np.sum(~(sd > 0)))
        if clipped:
            warnings.warn(f"MarginalNetRegressor.predict_interval: {clipped} of {sd.size} interval(s) have width 0 "
                          f"(the bias-corrected variance was <= 0 with {len(self.networks_)} members for "
                          f"{self.counts_.shape[1]} units); more n_estimators give usable intervals", stacklevel=2)
        sd = np.where(sd > 0, sd, 0.0)
        z = float(norm.isf(alpha / 2))   # ppf(1 - alpha/2) is inf once 1 - alpha/2 rounds to 1
        half = z * sd
        return np.column_stack([_inverse_link(eta - half, self.family_), _inverse_link(eta + half, self.family_)])

    def ensemble_network(self) -> Network:
        """One relulab :class:`~relulab.Network` computing ``mean_b f_b`` (link scale).

        The members run side by side (widths add up, ``B`` times a member's width); the
        dense layers must fit the memory budget (``B = 150`` members of width 64 need
        0.74 GB for one layer).
        """
        from scipy.linalg import block_diag

        if not hasattr(self, "networks_"):
            raise EstimatorInputError("MarginalNetRegressor.ensemble_network: fit the estimator first")
        nets = self.networks_
        B = len(nets)
        # every member has the fitted architecture: one block-diagonal build per layer
        # (B - 1 successive concatenations copied every layer B times: 21 s for B = 150)
        # the first layer is stacked (B rows of blocks), the last side by side (one row of
        # B blocks), the ones between block-diagonal (B^2 blocks): sizing the last as
        # block-diagonal refused 1000 members of width 64 (1 MB) as 0.48 GB
        L = len(nets[0].weights)
        sizes = [W.size * (B if k in (0, L - 1) else B * B) for k, W in enumerate(nets[0].weights)]
        check_bytes(8.0 * sum(sizes), f"MarginalNetRegressor.ensemble_network: the dense layers of {B} members")
        Ws, bs = [], []
        for k in range(L):
            mats = [net.weights[k] for net in nets]
            if k == 0:
                Ws.append(np.vstack(mats))
            elif k == L - 1:
                Ws.append(np.hstack(mats) / B)
            else:
                Ws.append(block_diag(*mats))
            biases = [net.biases[k] for net in nets]
            bs.append(np.mean(biases, axis=0) if k == L - 1 else np.concatenate(biases))
        if L == 1:  # affine members: the mean of their maps
            Ws, bs = [np.mean([net.weights[0] for net in nets], axis=0)], [np.mean([net.biases[0] for net in nets], axis=0)]
        return Network(Ws, bs)


def _check_poisson_range(y: np.ndarray, mu: float, start: float, rows: int) -> None:
    """Refuse counts whose Poisson loss ``e^eta - y eta`` over a minibatch passes float32's
    range at the starting ``eta = log(mean y)``: counts near 1e36 failed at epoch 1 as
    "training diverged ... lower learning_rate", which no learning rate fixes."""
    top = float(np.max(y))
    size = rows * (mu + top * abs(start))
    limit = float(np.finfo(np.float32).max) / 4
    if not size <= limit:
        raise EstimatorInputError(
            f"MarginalNetRegressor.fit: poisson counts up to {top:.3g} are too large for float32 training: "
            f"the loss of a minibatch of {rows} rows starts near {size:.3g}, past float32's range "
            f"({limit:.3g} with headroom); counts up to about {limit / (rows * max(abs(start), 1.0)):.3g} train")
