"""Robust response scale, memory limits and argument checks of relulab.estimators
(fourth estimators audit).  Each case failed before its fix."""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("sklearn")

from relulab.errors import RelulabError  # noqa: E402
from relulab.estimators import (  # noqa: E402
    MarginalNetRegressor,
    QuantileNetRegressor,
    SmoothNetRegressor,
    check_loss,
    conquer_bandwidth,
    ij_variance,
    recent_drop,
    smoothed_check_loss,
)
from relulab.estimators.kernels import kernel_integral  # noqa: E402
from relulab.limits import ResourceLimitError, memory_limit  # noqa: E402


def _data(n: int = 600, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 1))
    return X, X[:, 0] + 0.3 * rng.normal(size=n)


def test_one_outlier_does_not_move_the_quantile_fit():
    # one y of 1000 among 600 values of size 1: the standard deviation grew 25-fold, and
    # with it the conquer bandwidth and Adam's steps (the 0.1 quantile fell below every point)
    X, y = _data()
    kw = {"quantiles": (0.1, 0.9), "hidden": (16,), "epochs": 80, "random_state": 0}
    clean = QuantileNetRegressor(**kw).fit(X, y)
    yy = y.copy()
    yy[0] = 1000.0
    dirty = QuantileNetRegressor(**kw).fit(X, yy)
    assert np.allclose(dirty.bandwidth_, clean.bandwidth_, rtol=0.1)
    below = (yy[1:, None] <= dirty.predict(X[1:])).mean(axis=0)
    assert 0.04 <= below[0] <= 0.16 and 0.84 <= below[1] <= 0.96


@pytest.mark.parametrize("loss", ["huber", "quantile"])
def test_robust_smooth_losses_ignore_one_outlier(loss):
    X, y = _data()
    yy = y.copy()
    yy[0] = 1e6
    m = SmoothNetRegressor(activation="relu", loss=loss, hidden=(16,), epochs=80, random_state=0).fit(X, yy)
    assert m.y_scale_ < 1.0  # the interquartile range, not the outlier's spread
    assert np.mean(np.abs(m.predict(X[1:]) - X[1:, 0])) < 0.3


@pytest.mark.parametrize("c", [5.0, 1000.0, -1e6])
def test_a_constant_response_gives_that_constant_at_every_level(c):
    X, _ = _data(200)
    m = QuantileNetRegressor(quantiles=(0.1, 0.5, 0.9), hidden=(8,), epochs=30, random_state=0).fit(X, np.full(200, c))
    assert np.max(np.abs(m.predict(X) - c)) <= 1e-9 * abs(c)


def test_ij_variance_in_column_blocks_equals_one_piece():
    rng = np.random.default_rng(0)
    N = rng.multinomial(50, np.full(50, 1 / 50), size=30).astype(float)
    T = rng.normal(size=(30, 200))
    Nc, Tc = N - N.mean(0), T - T.mean(0)
    direct = np.sum((Nc.T @ Tc / 30) ** 2, axis=0) - np.sum(Nc**2) / 30 * np.mean(Tc**2, axis=0) / 30
    with memory_limit(4 * 8 * 50 * 7):  # blocks of 7 columns
        assert np.allclose(ij_variance(N, T), direct, rtol=1e-12, atol=0)
    with memory_limit(100), pytest.raises(ResourceLimitError, match="ij_variance"):
        ij_variance(N, T)


def test_ensemble_network_is_the_member_mean_and_respects_the_budget():
    X, y = _data(80)
    for hidden in [(), (5,), (4, 3)]:
        m = MarginalNetRegressor(hidden=hidden, n_estimators=6, epochs=3, random_state=0).fit(X, y)
        net = m.ensemble_network()
        assert tuple(net.widths) == tuple(6 * w for w in hidden)
        assert np.allclose(net(X)[:, 0], m.member_predictions(X).mean(axis=0), rtol=0, atol=1e-12)
    m = MarginalNetRegressor(hidden=(64, 64), n_estimators=20, epochs=1, random_state=0).fit(X, y)
    with memory_limit(10**6), pytest.raises(ResourceLimitError, match="ensemble_network"):
        m.ensemble_network()


def test_the_memory_check_counts_the_k_level_loss():
    # 99 levels on full batches of 20,000 rows: the loss's (rows x K) temporaries are
    # about 127 MB, the layers' outputs about 33 MB (all the old check counted)
    X, y = _data(20_000)
    m = QuantileNetRegressor(quantiles=np.linspace(0.01, 0.99, 99), hidden=(4,), batch_size=20_000, epochs=1)
    with memory_limit(64 * 2**20), pytest.raises(ResourceLimitError, match="training 1 network"):
        m.fit(X, y)


def test_zero_width_intervals_are_announced(monkeypatch):
    X, y = _data(60)
    m = MarginalNetRegressor(hidden=(3,), n_estimators=3, epochs=2, random_state=0).fit(X, y)
    marginal = importlib.import_module("relulab.estimators.marginal")
    monkeypatch.setattr(marginal, "ij_variance", lambda *a, **k: np.array([-1.0, 0.5, -2.0]))
    with pytest.warns(UserWarning, match="2 of 3 interval"):
        iv = m.predict_interval(X[:3], alpha=0.1)
    assert iv[0, 0] == iv[0, 1] and iv[1, 0] < iv[1, 1]


def test_inputs_too_small_to_fold_are_refused_before_training_only_for_relu_exports():
    rng = np.random.default_rng(0)
    X = 4e-310 * rng.uniform(0.5, 1.5, size=(60, 1))
    y = rng.normal(size=60)
    for est in (QuantileNetRegressor(quantiles=0.5, hidden=(4,), epochs=2),
                SmoothNetRegressor(activation="relu", hidden=(4,), epochs=2)):
        with pytest.raises(RelulabError, match="X column 0's spread .* too small to fold"):
            est.fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        SmoothNetRegressor(activation="softplus", hidden=(4,), epochs=2).fit(X, y)  # no export, no fold


@pytest.mark.parametrize("kw, match", [
    ({"learning_rate": 1e-60}, "learning_rate must lie in"),
    ({"learning_rate": 1e39}, "learning_rate must lie in"),
    ({"weight_decay": 1e40}, "weight_decay must be a number in"),
])
def test_training_rates_beyond_float32_are_refused(kw, match):
    X, y = _data(40)
    with pytest.raises(RelulabError, match=match):
        SmoothNetRegressor(hidden=(2,), epochs=1, **kw).fit(X, y)


def test_epanechnikov_smoothing_never_dips_below_the_check_loss():
    t = -(1 - np.logspace(-16, -1, 40))
    assert np.all(kernel_integral(t, "epanechnikov") >= 0)
    u = 1 - np.logspace(-16, -1, 40)
    gap = smoothed_check_loss(u, 0.5, 1.0, "epanechnikov") - check_loss(u, 0.5)
    assert np.all(gap >= 0)


@pytest.mark.parametrize("call, match", [
    (lambda: recent_drop([3.0, 2.0, 1.0], epochs=float("nan")), "recent_drop: epochs"),
    (lambda: recent_drop("abc"), "recent_drop: loss_curve"),
    (lambda: ij_variance([[1, 0], [0, 1]], ["a", "b"]), "ij_variance: counts and estimates"),
    (lambda: smoothed_check_loss(["a"], 0.5, 1.0), "residuals u must be real numbers"),
    (lambda: QuantileNetRegressor(loss="pinball", bandwidth=0.3, epochs=1).fit(*_data(20)),
     "applies to loss='conquer' only"),
    (lambda: SmoothNetRegressor(hidden=(2,), epochs=1).fit(np.ones((5, 2)) + 1j, np.arange(5.0)),
     r"^SmoothNetRegressor.fit: Complex data not supported$"),
])
def test_bad_arguments_get_one_line(call, match):
    with pytest.raises(RelulabError, match=match):
        call()


def test_conquer_bandwidth_takes_counts_beyond_float64():
    assert conquer_bandwidth(0.5, n=10**400, p=1) == 0.01
    assert conquer_bandwidth(0.5, n=10, p=10**400) == conquer_bandwidth(0.5, n=10, p=5)


def _zero_inflated(n: int = 2000, jitter: float = 0.0, seed: int = 0):
    """60% of y an atom at 0 (with ``jitter``), 20% near -3, 20% near 3 + 2x: the true 0.9
    quantile is 3 + 2x (aud_est5 F1)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 1))
    u = rng.uniform(size=n)
    atom = (u >= 0.2) & (u < 0.8)
    y = np.where(atom, 0.0, np.where(u < 0.2, -3 + 0.3 * rng.normal(size=n),
                                     3 + 2 * X[:, 0] + 0.3 * rng.normal(size=n)))
    return X, y + jitter * rng.normal(size=n) * atom


def test_the_response_scale_survives_an_atom_over_the_middle_half():
    from relulab.estimators._base import robust_response_scale

    _, y = _zero_inflated()
    sd = float(np.std(y))
    for jitter in (0.0, 1e-12):
        _, yj = _zero_inflated(jitter=jitter)
        _, s = robust_response_scale(yj)
        assert 0.5 * sd <= s <= 3 * sd, (jitter, s, sd)     # the IQR alone gave 2e-12
        out = yj.copy()
        out[np.argmax(yj)] = 1e6                              # one gross outlier
        assert robust_response_scale(out)[1] == pytest.approx(s, rel=0.05)   # SD fallback: 2e4


@pytest.mark.parametrize("share", [0.011, 0.05, 0.2])
def test_the_response_scale_stays_robust_to_a_share_of_outliers(share):
    # a widest-range rule (q99 - q01 among others) let 11 outliers in 1,000 set the scale:
    # 2.1e5 where the clean scale is 1 (aud_sess9); the IQR holds up to a quarter
    from relulab.estimators._base import robust_response_scale

    rng = np.random.default_rng(3)
    y = rng.normal(size=1000)
    clean = robust_response_scale(y)[1]
    k = int(share * y.size)
    y[rng.choice(y.size, k, replace=False)] = 1e6 * (1 + rng.random(k))
    assert robust_response_scale(y)[1] < 2 * clean


def test_a_quantile_net_on_zero_inflated_data_keeps_the_upper_slope():
    X, y = _zero_inflated(jitter=1e-12)
    m = QuantileNetRegressor(quantiles=(0.9,), hidden=(16, 16), epochs=60, random_state=0).fit(X, y)
    slope = float(np.polyfit(X[:, 0], m.predict(X)[:, 0], 1)[0])
    assert slope > 1.0, slope        # true 2; a collapsed scale gave a flat 0.000


def test_the_robust_centre_of_a_response_near_the_float_limit_is_finite():
    # np.median averaged the two middle values of y near 1.2e308 and overflowed
    from relulab.estimators._base import robust_response_scale

    y = 1.2e308 * (1 + 0.1 * np.linspace(-1, 1, 200))
    c, s = robust_response_scale(y)
    assert np.isfinite(c) and np.isfinite(s) and s > 0
    assert c == pytest.approx(1.2e308, rel=1e-12)


def test_score_on_a_dataframe_keeps_its_feature_names():
    # score checked X into a bare array and predicted on that: every score on the
    # dataframe a model was fitted on warned "X does not have valid feature names"
    pa = pytest.importorskip("pyarrow")
    rng = np.random.default_rng(0)
    A = rng.normal(size=(60, 2))
    y = A[:, 0] + rng.normal(size=60)
    X = pa.table({"a": A[:, 0], "b": A[:, 1]})
    m = QuantileNetRegressor(quantiles=0.5, hidden=(4,), epochs=2, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = m.score(X, y)
    assert np.isfinite(s)
