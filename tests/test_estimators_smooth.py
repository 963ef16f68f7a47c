"""SmoothNetRegressor: ReLU export, smooth activations, the four losses, bad input."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("sklearn")

from relulab.errors import RelulabError  # noqa: E402
from relulab.estimators import SmoothNetRegressor  # noqa: E402


def data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    return X, np.abs(X[:, 0]) - X[:, 1] ** 2 + 0.1 * rng.normal(size=n)


@pytest.mark.parametrize("loss", ["squared", "huber", "quantile", "logistic"])
def test_relu_network_reproduces_predict(loss):
    X, y = data()
    if loss == "logistic":
        y = (y > 0).astype(float)
    m = SmoothNetRegressor(activation="relu", loss=loss, hidden=(7, 5), epochs=5, random_state=0).fit(X, y)
    Z = np.random.default_rng(1).normal(size=(100, 2)) * 10
    f = m.predict_link(Z)
    assert np.array_equal(m.network_(Z)[:, 0], f)     # predict_link evaluates network_
    import torch

    from relulab.estimators import _torch

    ref = m.y_mean_ + m.y_scale_ * _torch.predict_raw(torch, m._model, (Z - m.x_mean_) / m.x_scale_)[:, 0]
    assert np.allclose(f, ref, rtol=1e-11, atol=1e-11 * np.max(np.abs(ref)))   # the trained torch model
    p = m.predict(Z)
    if loss == "logistic":
        assert np.all((p >= 0) & (p <= 1)) and np.allclose(p, 1 / (1 + np.exp(-f)))
    else:
        assert np.array_equal(p, f)


@pytest.mark.parametrize("activation", ["softplus", "gelu", "silu"])
def test_smooth_activations_fit_and_have_no_network(activation):
    X, y = data()
    m = SmoothNetRegressor(activation=activation, hidden=(16,), epochs=60, learning_rate=1e-2,
                           random_state=0).fit(X, y)
    assert not hasattr(m, "network_")
    assert m.score(X, y) > 0.8        # R^2 of a smooth target with small noise
    # a ReLU refit of the same estimator object gains a network, a smooth refit drops it
    m.set_params(activation="relu").fit(X, y)
    assert hasattr(m, "network_")
    m.set_params(activation=activation).fit(X, y)
    assert not hasattr(m, "network_")


def test_quantile_loss_hits_its_level_and_huber_resists_outliers():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(1500, 1))
    y = X[:, 0] + 0.3 * rng.normal(size=1500)
    q = SmoothNetRegressor(loss="quantile", quantile=0.8, hidden=(16,), epochs=30, learning_rate=3e-3,
                           random_state=0).fit(X, y)
    assert abs(np.mean(y <= q.predict(X)) - 0.8) < 0.04
    y_out = y.copy()
    y_out[:75] += 50.0                  # 5% gross outliers
    kw = dict(hidden=(16,), epochs=30, learning_rate=3e-3, random_state=0)
    hub = SmoothNetRegressor(loss="huber", **kw).fit(X, y_out)
    sq = SmoothNetRegressor(loss="squared", **kw).fit(X, y_out)
    grid = np.linspace(-0.9, 0.9, 50)[:, None]
    err_h = np.mean(np.abs(hub.predict(grid) - grid[:, 0]))
    err_s = np.mean(np.abs(sq.predict(grid) - grid[:, 0]))
    assert err_h < err_s / 3


@pytest.mark.parametrize(
    "kwargs, change, match",
    [
        ({"activation": "tanh"}, None, "activation"),
        ({"loss": "cauchy"}, None, "loss"),
        ({"loss": "quantile", "quantile": 1.2}, None, "strictly between 0 and 1"),
        ({"loss": "huber", "huber_delta": 0.0}, None, "huber_delta"),
        ({"loss": "logistic"}, "y_big", r"\[0, 1\]"),
        ({}, "y_nan", "NaN"),
        ({}, "X_inf", "infinity"),
    ],
)
def test_bad_input_one_clear_error(kwargs, change, match):
    X, y = data(20)
    if change == "y_big":
        y = np.abs(y) + 2
    elif change == "y_nan":
        y[0] = np.nan
    elif change == "X_inf":
        X[0, 0] = -np.inf
    with pytest.raises(RelulabError, match=match):
        SmoothNetRegressor(**{"hidden": (2,), "epochs": 1, **kwargs}).fit(X, y)


def test_parameters_of_other_losses_are_ignored_as_in_scikit_learn():
    # float(quantile) ran for every loss: quantile='abc' with the squared loss raised a
    # raw ValueError; each loss now reads only its own parameter
    X, y = data(20)
    a = SmoothNetRegressor(hidden=(3,), epochs=2, random_state=0).fit(X, y)
    b = SmoothNetRegressor(hidden=(3,), epochs=2, random_state=0, quantile="abc", huber_delta=None).fit(X, y)
    assert np.array_equal(a.predict(X), b.predict(X))
    with pytest.raises(RelulabError, match="strictly between 0 and 1"):
        SmoothNetRegressor(hidden=(3,), epochs=1, loss="quantile", quantile="abc").fit(X, y)
