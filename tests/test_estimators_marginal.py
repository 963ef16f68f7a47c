"""Infinitesimal jackknife against closed forms; MarginalNetRegressor behaviour and bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from relulab.errors import RelulabError
from relulab.estimators import ij_variance


def all_bootstraps(n: int) -> np.ndarray:
    draws = np.array(list(itertools.product(range(n), repeat=n)))
    return np.stack([np.bincount(d, minlength=n) for d in draws])


def test_ij_of_bootstrap_mean_is_plugin_variance():
    # every ordered bootstrap draw once: the resampling weights are exactly multinomial
    y = np.array([0.3, -1.2, 2.5, 0.9, 4.0])
    n = y.size
    N = all_bootstraps(n)
    t = N @ y / n
    V = ij_variance(N, t, bias_correction=False)
    assert V == pytest.approx(np.sum((y - y.mean()) ** 2) / n**2, rel=1e-12)
    # several statistics at once (columns): a weighted mean per column
    Y = np.column_stack([y, y**2, -3 * y])
    V2 = ij_variance(N, N @ Y / n, bias_correction=False)
    assert np.allclose(V2, np.sum((Y - Y.mean(0)) ** 2, axis=0) / n**2, rtol=1e-12)


def test_ij_of_subsample_mean_is_unbiased_variance_of_mean():
    # every subset of size s once: IJ with the n(n-1)/(n-s)^2 factor gives S^2 / n
    y = np.array([1.0, 4.0, -2.0, 0.5, 3.0, 7.0])
    n, s = y.size, 3
    N = np.array([[1 if i in c else 0 for i in range(n)] for c in itertools.combinations(range(n), s)])
    t = N @ y / s
    V = ij_variance(N, t, bias_correction=False, subsample_size=s)
    assert V == pytest.approx(np.var(y, ddof=1) / n, rel=1e-12)


def test_bias_correction_removes_monte_carlo_inflation():
    # estimates independent of the resampling: the true IJ variance is 0, the raw one
    # is inflated by about n * var / B; the corrected one is 0 on average
    rng = np.random.default_rng(0)
    n, B, reps = 20, 40, 400
    raw, corr = [], []
    for _ in range(reps):
        N = rng.multinomial(n, np.full(n, 1 / n), size=B)
        t = rng.normal(size=B)
        raw.append(ij_variance(N, t, bias_correction=False))
        corr.append(ij_variance(N, t))
    raw, corr = np.array(raw), np.array(corr)
    assert raw.mean() == pytest.approx(n / B, rel=0.15)
    assert abs(corr.mean()) < 4 * corr.std() / np.sqrt(reps)


def test_ij_bad_input():
    with pytest.raises(RelulabError):
        ij_variance(np.ones((3, 4)), np.ones(2))
    with pytest.raises(RelulabError):
        ij_variance(np.ones((1, 4)), np.ones(1))
    with pytest.raises(RelulabError):
        ij_variance(np.ones((3, 4)), np.array([1.0, np.nan, 2.0]))


# ----------------------------------------------------------------- the estimator
torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")
from relulab.estimators import MarginalNetRegressor  # noqa: E402
from relulab.estimators._base import EstimatorInputError  # noqa: E402


def clustered(n_units: int, m: int, family: str = "gaussian", seed: int = 0):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 2 * m, size=n_units)
    g = np.repeat(np.arange(n_units), sizes)
    X = rng.uniform(-1, 1, size=(g.size, 2))
    f = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1]
    b = 0.5 * rng.normal(size=n_units)[g]
    if family == "gaussian":
        y = f + b + 0.3 * rng.normal(size=g.size)
    elif family == "binomial":
        y = (rng.uniform(size=g.size) < 1 / (1 + np.exp(-(f + b)))).astype(float)
    else:
        y = rng.poisson(np.exp(0.5 * (f + b))).astype(float)
    return X, y, g


@pytest.mark.parametrize("family", ["gaussian", "binomial", "poisson"])
@pytest.mark.parametrize("resample", ["bootstrap", "subsample"])
def test_fit_predict_interval(family, resample):
    X, y, g = clustered(40, 4, family)
    m = MarginalNetRegressor(family=family, hidden=(6,), n_estimators=5, resample=resample,
                             epochs=4, random_state=0).fit(X, y, groups=g)
    assert m.counts_.shape == (5, 40)
    if resample == "bootstrap":
        assert np.all(m.counts_.sum(axis=1) == 40)
    else:
        assert np.all(m.counts_.sum(axis=1) == 20) and m.counts_.max() == 1
    mu = m.predict(X)
    lo_hi = m.predict_interval(X, alpha=0.1)
    assert np.all(lo_hi[:, 0] <= mu + 1e-12) and np.all(mu <= lo_hi[:, 1] + 1e-12)
    wider = m.predict_interval(X, alpha=0.01)
    assert np.all(wider[:, 1] - wider[:, 0] >= lo_hi[:, 1] - lo_hi[:, 0] - 1e-12)
    if family == "binomial":
        assert np.all((mu > 0) & (mu < 1))
    if family == "poisson":
        assert np.all(mu > 0)
    # the interval is mean +- z sqrt(V) on the link scale
    E = m.member_predictions(X)
    V = m.predict_variance(X)
    assert np.allclose(V, np.maximum(ij_variance(m.counts_, E, subsample_size=m._subsample_size), 0))
    # one relulab network for the whole ensemble's linear predictor
    net = m.ensemble_network()
    assert np.allclose(net(X)[:, 0], E.mean(axis=0), rtol=1e-10, atol=1e-10)


def test_members_reproduce_torch_and_unit_weights():
    X, y, g = clustered(30, 3)
    m = MarginalNetRegressor(hidden=(5,), n_estimators=3, epochs=3, random_state=1).fit(X, y, groups=g)
    sizes = np.bincount(np.unique(g, return_inverse=True)[1])
    assert np.allclose(m.unit_weights_, 1 / sizes)
    m2 = MarginalNetRegressor(hidden=(5,), n_estimators=3, epochs=3, random_state=1,
                              cluster_weights="obs").fit(X, y, groups=g)
    assert np.all(m2.unit_weights_ == 1)
    assert not np.allclose(m.predict(X), m2.predict(X))
    m3 = MarginalNetRegressor(hidden=(5,), n_estimators=3, epochs=3, random_state=1).fit(X, y, groups=g)
    assert np.array_equal(m.predict(X), m3.predict(X))


def test_string_group_labels_equal_integer_labels():
    X, y, g = clustered(15, 3)
    a = MarginalNetRegressor(hidden=(4,), n_estimators=2, epochs=2, random_state=0).fit(X, y, groups=g)
    b = MarginalNetRegressor(hidden=(4,), n_estimators=2, epochs=2, random_state=0).fit(
        X, y, groups=np.array([f"unit{k:03d}" for k in g]))
    assert np.array_equal(a.predict(X), b.predict(X))


@pytest.mark.parametrize(
    "family, change, match",
    [
        ("gaussian", "groups_short", "groups"),
        ("gaussian", "groups_2d", "groups"),
        ("gaussian", "y_nan", "NaN"),
        ("gaussian", "X_inf", "infinity"),
        ("poisson", "y_frac", "integer counts"),
        ("poisson", "y_neg", "integer counts"),
        ("binomial", "y_two", r"\[0, 1\]"),
        ("tweedie", None, "family"),
        ("gaussian", "one_unit", "at least 2 units"),
    ],
)
def test_bad_input_one_clear_error(family, change, match):
    X, y, g = clustered(10, 3, "poisson")
    if change == "groups_short":
        g = g[:-1]
    elif change == "groups_2d":
        g = np.column_stack([g, g])
    elif change == "y_nan":
        y[0] = np.nan
    elif change == "X_inf":
        X[1, 0] = np.inf
    elif change == "y_frac":
        y[2] = 1.5
    elif change == "y_neg":
        y[2] = -1.0
    elif change == "y_two":
        y[2] = 2.0
    elif change == "one_unit":
        g = np.zeros_like(g)
    with pytest.raises(RelulabError, match=match):
        MarginalNetRegressor(family=family, hidden=(2,), n_estimators=2, epochs=1).fit(X, y, groups=g)


def test_joint_ensemble_training_equals_training_members_alone():
    from relulab.estimators import _torch

    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 2))
    y = rng.normal(size=50)
    w = rng.integers(0, 3, size=(3, 50)).astype(float)
    kw = dict(epochs=3, batch_size=16, lr=1e-2, weight_decay=0.0, tol=0.0, n_iter_no_change=5, seed=4)

    def obj(out, yb, idx):
        return 0.5 * (out[..., 0] - yb) ** 2

    both = _torch.build_ensemble(torch, 3, 2, (5,), 1, seed=1)
    alone = [p[1:2].detach().clone().requires_grad_() for p in both]
    _torch.train(torch, both, lambda Z: _torch.ensemble_forward(torch, both, Z), obj, X, y, w, **kw)
    _torch.train(torch, alone, lambda Z: _torch.ensemble_forward(torch, alone, Z), obj, X, y, w[1:2], **kw)
    for p, q in zip(both, alone, strict=True):
        assert torch.allclose(p[1:2], q, rtol=1e-12, atol=1e-14)


def test_ensemble_network_is_sized_as_it_is_built_and_matches_the_mean():
    # the output layer is one row of B blocks: sized as B^2 blocks, 1000 members of width
    # 64 (1 MB) were refused as 0.48 GB under a 0.1 GB budget
    from relulab.limits import memory_limit

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(50, 1))
    y = X[:, 0] + 0.1 * rng.normal(size=50)
    m = MarginalNetRegressor(hidden=(64,), n_estimators=1000, epochs=1, random_state=0).fit(X, y)
    with memory_limit(100 * 2**20):
        net = m.ensemble_network()
    Z = rng.uniform(-1, 1, size=(7, 1))
    want = np.mean([f(Z)[:, 0] for f in m.networks_], axis=0)
    assert np.allclose(net(Z)[:, 0], want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["object", "datetime"])
def test_missing_group_labels_of_any_kind_are_refused(kind):
    # NaN in an object array made every such row a unit of its own; NaT rows were pooled
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = 2 * X[:, 0] + rng.normal(size=40)
    labels = np.repeat(np.arange(10.0), 4)
    if kind == "object":
        g = np.where(np.arange(40) < 20, np.nan, labels).astype(object)
    else:
        g = np.where(np.arange(40) < 20, np.datetime64("NaT"),
                     np.datetime64("2020-01-01") + labels.astype(int)).astype("datetime64[D]")
    m = MarginalNetRegressor(hidden=(4,), n_estimators=3, epochs=2, random_state=0)
    with pytest.raises(EstimatorInputError, match="missing"):
        m.fit(X, y, groups=g)


def test_a_tiny_alpha_gives_finite_intervals():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = 2 * X[:, 0] + rng.normal(size=40)
    m = MarginalNetRegressor(hidden=(4,), n_estimators=3, epochs=2, random_state=0).fit(X, y)
    for a in (1e-15, 1e-17, 1e-300):
        iv = m.predict_interval(X, alpha=a)
        assert np.all(np.isfinite(iv)) and np.all(iv[:, 0] <= iv[:, 1])   # norm.ppf(1) was inf
