"""QuantileNetRegressor: linear case against two solvers, exact export, non-crossing, bad input."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("sklearn")

from relulab import Network  # noqa: E402
from relulab.errors import RelulabError  # noqa: E402
from relulab.estimators import QuantileNetRegressor, check_loss  # noqa: E402


def hetero(n: int, d: int = 2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = 1 + 2 * X[:, 0] - X[:, 1] + (1 + 0.3 * np.abs(X[:, 0])) * rng.normal(size=n)
    return X, y


@pytest.fixture(scope="module")
def linear_fit():
    X, y = hetero(600, seed=1)
    m = QuantileNetRegressor(
        quantiles=0.7, hidden=(), kernel="gaussian", epochs=1500, batch_size=600,
        learning_rate=0.02, random_state=0,
    ).fit(X, y)
    return X, y, m


def test_linear_conquer_matches_quantes_minimiser(linear_fit):
    low_dim = pytest.importorskip("quantes.linear").low_dim
    X, y, m = linear_fit
    W, b = m.network_.layers[0]
    ref = low_dim(X, y).fit(tau=0.7, h=float(m.bandwidth_[0]), kernel="Gaussian")["beta"]
    # the same smoothed objective minimised by Adam (ours) and by GD-BB (quantes)
    assert np.allclose(np.r_[b, W[0]], ref, atol=1e-4)


def test_linear_conquer_matches_scipy_minimiser_of_the_same_objective(linear_fit):
    # the independent check that runs without quantes: BFGS on the smoothed objective at
    # the reported bandwidth, with relulab's numpy loss and gradient
    from scipy.optimize import minimize

    from relulab.estimators.kernels import smoothed_check_grad, smoothed_check_loss

    X, y, m = linear_fit
    h, n = float(m.bandwidth_[0]), X.shape[0]
    A = np.c_[np.ones(n), X]
    ref = minimize(lambda b: smoothed_check_loss(y - A @ b, 0.7, h).mean(), np.zeros(3),
                   jac=lambda b: -A.T @ smoothed_check_grad(y - A @ b, 0.7, h) / n,
                   method="BFGS", options={"gtol": 1e-12}).x
    W, b = m.network_.layers[0]
    assert np.allclose(np.r_[b, W[0]], ref, atol=1e-4)


def test_linear_conquer_close_to_sklearn_quantile_regression(linear_fit):
    from sklearn.linear_model import QuantileRegressor

    X, y, m = linear_fit
    sk = QuantileRegressor(quantile=0.7, alpha=0.0, solver="highs").fit(X, y)
    W, b = m.network_.layers[0]
    h = float(m.bandwidth_[0])
    # smoothing moves the minimiser by O(h^2) + O((h/n)^(1/2)) at this n: within h
    assert np.max(np.abs(np.r_[b, W[0]] - np.r_[sk.intercept_, sk.coef_])) <= h
    assert np.max(np.abs(m.predict(X) - sk.predict(X))) <= 2 * h
    # and the check loss of the smoothed fit is within a small fraction of the optimum
    opt = np.mean(check_loss(y - sk.predict(X), 0.7))
    assert opt <= np.mean(check_loss(y - m.predict(X), 0.7)) <= opt * 1.01


@pytest.mark.parametrize("noncrossing", [True, False])
@pytest.mark.parametrize("hidden", [(), (7,), (6, 5)])
def test_network_reproduces_predict(hidden, noncrossing):
    X, y = hetero(300, d=3, seed=2)
    m = QuantileNetRegressor(
        quantiles=(0.1, 0.5, 0.9), hidden=hidden, noncrossing=noncrossing, epochs=5, random_state=3
    ).fit(X * 5 + 2, y * 10 - 4)
    net = m.network_
    assert isinstance(net, Network) and net.output_dim == 3 and net.input_dim == 3
    Z = np.random.default_rng(0).normal(size=(200, 3)) * 20     # far outside the data too
    q = m.predict(Z)
    assert np.array_equal(net(Z), q)            # predict evaluates network_
    # oracle: the trained float64 torch model on standardised inputs, head applied by numpy
    import torch

    from relulab.estimators import _torch
    from relulab.estimators.quantile import _noncrossing_head_np

    z = _torch.predict_raw(torch, m._model, (Z - m.x_mean_) / m.x_scale_)
    ref = m.y_mean_ + m.y_scale_ * (_noncrossing_head_np(z) if noncrossing else z)
    assert np.allclose(q, ref, rtol=1e-11, atol=1e-11 * np.max(np.abs(ref)))
    if noncrossing:
        # the head is exact ReLU arithmetic: one extra hidden layer of K + 1 neurons
        assert net.widths == (*hidden, 4)
        assert np.all(np.diff(q, axis=1) >= 0)
        # ... and exact in rational arithmetic on a few points
        ex = net.exact()(Z[:3])
        assert np.all(np.diff(np.asarray(ex, dtype=object), axis=1) >= 0)


def test_noncrossing_guaranteed_even_when_unconstrained_fit_crosses():
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, size=(200, 1))
    y = rng.normal(size=200)
    taus = (0.45, 0.5, 0.55)   # close levels: an unconstrained fit crosses somewhere
    free = QuantileNetRegressor(quantiles=taus, hidden=(16,), noncrossing=False, epochs=40,
                                loss="pinball", random_state=0).fit(X, y)
    tied = QuantileNetRegressor(quantiles=taus, hidden=(16,), noncrossing=True, epochs=40,
                                loss="pinball", random_state=0).fit(X, y)
    grid = np.linspace(-3, 3, 2001)[:, None]
    assert np.any(np.diff(free.predict(grid), axis=1) < 0)
    assert np.all(np.diff(tied.predict(grid), axis=1) >= 0)


def test_deterministic_and_score_is_negative_check_loss():
    X, y = hetero(200, seed=4)
    a = QuantileNetRegressor(hidden=(8,), epochs=4, random_state=7).fit(X, y)
    b = QuantileNetRegressor(hidden=(8,), epochs=4, random_state=7).fit(X, y)
    c = QuantileNetRegressor(hidden=(8,), epochs=4, random_state=8).fit(X, y)
    assert np.array_equal(a.predict(X), b.predict(X))
    assert not np.array_equal(a.predict(X), c.predict(X))
    q = a.predict(X)
    expect = np.mean([np.mean(check_loss(y - q[:, k], t)) for k, t in enumerate((0.1, 0.5, 0.9))])
    assert a.score(X, y) == pytest.approx(-expect, rel=1e-12)


def test_quantile_levels_are_fitted():
    # pinball network on plenty of data: the fraction below each curve is near its level
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(2000, 1))
    y = np.sin(3 * X[:, 0]) + (0.3 + 0.5 * np.abs(X[:, 0])) * rng.normal(size=2000)
    m = QuantileNetRegressor(quantiles=(0.1, 0.5, 0.9), hidden=(16, 16), epochs=40,
                             learning_rate=3e-3, random_state=0).fit(X, y)
    below = (y[:, None] <= m.predict(X)).mean(axis=0)
    assert np.allclose(below, [0.1, 0.5, 0.9], atol=0.04)


@pytest.mark.parametrize(
    "kwargs, X_bad, y_bad, match",
    [
        ({}, "nan", None, "NaN"),
        ({}, "inf", None, "infinity"),
        ({}, None, "nan", "NaN"),
        ({}, None, "inf", "infinity"),
        ({"quantiles": (0.1, 1.0)}, None, None, "strictly between 0 and 1"),
        ({"quantiles": 0.0}, None, None, "strictly between 0 and 1"),
        ({"quantiles": (0.5, 0.1)}, None, None, "increasing"),
        ({"kernel": "cosine"}, None, None, "kernel"),
        ({"loss": "l2"}, None, None, "loss"),
        ({"bandwidth": -1.0}, None, None, "bandwidth"),
        ({"hidden": (0,)}, None, None, "hidden"),
        ({"epochs": 0}, None, None, "epochs"),
    ],
)
def test_bad_input_one_clear_error(kwargs, X_bad, y_bad, match):
    X, y = hetero(20)
    if X_bad:
        X[3, 1] = np.nan if X_bad == "nan" else np.inf
    if y_bad:
        y[5] = np.nan if y_bad == "nan" else -np.inf
    with pytest.raises(RelulabError, match=match):
        QuantileNetRegressor(**{"hidden": (2,), "epochs": 1, **kwargs}).fit(X, y)


def test_predict_checks_features():
    X, y = hetero(30)
    m = QuantileNetRegressor(hidden=(2,), epochs=1, random_state=0).fit(X, y)
    with pytest.raises(RelulabError, match="features"):
        m.predict(X[:, :1])
    with pytest.raises(RelulabError, match="NaN"):
        m.predict(np.full((2, 2), np.nan))


def test_bad_settings_and_score_weights_are_one_clear_error():
    from relulab.estimators import EstimatorInputError, MarginalNetRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 2))
    y = X[:, 0] + rng.normal(size=50)
    T = dict(hidden=(4,), epochs=2, random_state=0)
    with pytest.raises(EstimatorInputError, match="weight_decay must be a number in"):
        QuantileNetRegressor(weight_decay=float("inf"), **T).fit(X, y)
    with pytest.raises(EstimatorInputError, match="hidden must be a tuple"):
        QuantileNetRegressor(hidden="ab", epochs=2).fit(X, y)
    with pytest.raises(EstimatorInputError, match="noncrossing must be True or False"):
        QuantileNetRegressor(noncrossing="no", quantiles=(0.2, 0.8), **T).fit(X, y)
    q = QuantileNetRegressor(quantiles=(0.2, 0.8), **T).fit(X, y)
    for w in (np.ones(3), -np.ones(50), np.zeros(50), np.full(50, np.nan)):
        with pytest.raises(EstimatorInputError, match="sample_weight"):
            q.score(X, y, sample_weight=w)
    groups = np.array([None] * 25 + ["a"] * 25, dtype=object)
    with pytest.raises(EstimatorInputError, match="missing"):
        MarginalNetRegressor(**T).fit(X, y, groups=groups)
    groups = np.array([1] * 25 + ["a"] * 25, dtype=object)
    with pytest.raises(EstimatorInputError, match="groups must be labels"):
        MarginalNetRegressor(**T).fit(X, y, groups=groups)
