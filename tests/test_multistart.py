"""relulab.dynamics.fit_multistart: batched multi-start Levenberg-Marquardt over a narrow
ReLU class.  Facts checked by independent means: the interpolation it reports is re-checked
with relulab's own forward pass, the fitted function is compared with the true target on a
dense grid, and the exact network is a fixed point."""

from __future__ import annotations

import numpy as np
import pytest

from relulab import Network
from relulab.dynamics import DynamicsError, MultistartFit, fit_basin_hopping, fit_multistart


def tent_power(u: np.ndarray, L: int) -> np.ndarray:
    for _ in range(L):
        u = 1.0 - np.abs(2.0 * u - 1.0)
    return u


def circle(t: np.ndarray) -> np.ndarray:
    return np.c_[np.cos(t), np.sin(t)]


def sawtooth(X: np.ndarray, L: int) -> np.ndarray:
    return tent_power((1.0 + X[:, 0]) / 2.0, L)


def sawtooth_network(L: int) -> Network:
    """T^L((1 + x_1)/2) as L hidden layers of width 2 (T(v) = 2 relu(v) - 4 relu(v - 1/2))."""
    Ws, bs = [np.array([[0.5, 0.0], [0.5, 0.0]])], [np.array([0.5, 0.0])]
    for _ in range(L - 1):
        Ws.append(np.array([[2.0, -4.0], [2.0, -4.0]]))
        bs.append(np.array([0.0, -0.5]))
    return Network(Ws + [np.array([[2.0, -4.0]])], bs + [np.array([0.0])])


def test_recovers_the_depth2_sawtooth_from_32_samples():
    t = np.linspace(0, 2 * np.pi, 32, endpoint=False) + 0.1
    X, y = circle(t), sawtooth(circle(t), 2)
    fit = fit_multistart(X, y, depth=2, width=3, restarts=512, max_iter=100, seed=0)
    assert isinstance(fit, MultistartFit)
    assert fit.status == "interpolated" and fit.completed == 512
    # independent re-check of the interpolation with relulab's forward pass
    assert np.max(np.abs(fit.network(X)[:, 0] - y)) < 1e-6
    # against the true function on a dense grid of the circle (never seen by the fitter):
    # every interpolating restart (each an empirical risk minimiser of the class) is close
    # to the sawtooth (the kinks between samples are not pinned down, so not exact)
    grid = circle(np.linspace(0, 2 * np.pi, 5000) + 0.01)
    truth = sawtooth(grid, 2)
    inter = np.flatnonzero(fit.train_mse <= 1e-10 * np.var(y))
    assert inter.size >= 1
    rel = np.array([np.mean((net(grid)[:, 0] - truth) ** 2) for net in fit.networks(inter)]) / np.var(truth)
    assert rel.max() < 0.02
    # the selected restart is the one with the lowest training loss, and predict() agrees
    assert fit.best == int(np.argmin(fit.train_mse))
    assert np.allclose(fit.predict(grid, [fit.best])[0], fit.network(grid)[:, 0])
    assert 0 < fit.interpolating_fraction < 1


@pytest.mark.parametrize("L", [3, 5])
def test_the_exact_network_is_a_fixed_point_and_small_noise_is_repaired(L):
    rng = np.random.default_rng(L)
    X = circle(rng.uniform(0, 2 * np.pi, 200))
    y = sawtooth(X, L)
    exact = sawtooth_network(L)
    assert np.max(np.abs(exact(X)[:, 0] - y)) < 1e-12  # the target is in the class
    fit = fit_multistart(X, y, depth=L, width=2, restarts=2, start=exact, noise=0.0)
    assert fit.status == "interpolated" and fit.iterations == 0
    # a small perturbation of the exact network: Levenberg-Marquardt returns to zero loss
    fit = fit_multistart(X, y, depth=L, width=2, restarts=8, start=exact, noise=1e-3, seed=1)
    assert fit.status == "interpolated"
    assert np.max(np.abs(fit.network(X)[:, 0] - y)) < 1e-6


def test_a_list_of_starts_gives_one_restart_each():
    X = np.linspace(-1, 1, 7)[:, None]
    y = np.maximum(X[:, 0], 0)
    nets = [Network([[[1.0]], [[1.0]]], [[0.0], [0.0]]), Network([[[-1.0]], [[1.0]]], [[-2.0], [0.0]])]
    fit = fit_multistart(X, y, depth=1, width=1, restarts=2, start=nets, max_iter=0)
    # no iterations: the first start is the target itself, the second a dead unit (constant 0)
    assert np.allclose(fit.train_mse, [0.0, np.mean(y**2)])
    assert fit.best == 0 and fit.status == "interpolated"


def test_a_hopeless_fit_is_partial_not_interpolated():
    # width 1, depth 1 cannot represent |x| on both sides of 0
    X = np.linspace(-1, 1, 21)[:, None]
    fit = fit_multistart(X, np.abs(X[:, 0]), depth=1, width=1, restarts=16, seed=0)
    assert fit.status == "partial"
    assert fit.train_mse[fit.best] > 1e-3
    assert fit.to_dict()["status"] == "partial"


def test_time_limit_is_honoured():
    rng = np.random.default_rng(0)
    X = circle(rng.uniform(0, 2 * np.pi, 400))
    fit = fit_multistart(X, sawtooth(X, 4), depth=4, width=4, restarts=1000, max_iter=500, time_limit=0.5)
    assert fit.status in ("time_limit", "interpolated")
    assert fit.seconds < 30 and fit.completed < 1000
    assert fit.to_dict()["completed"] == fit.completed


def test_fold_starts_are_in_the_class_and_run():
    X = np.linspace(-1, 1, 9)[:, None]
    fit = fit_multistart(X, np.abs(X[:, 0]), depth=2, width=2, restarts=64, start="fold", seed=0)
    assert fit.status == "interpolated"
    assert [w.shape for w in fit.network.weights] == [(2, 1), (2, 2), (1, 2)]


@pytest.mark.parametrize("kwargs, match", [
    (dict(X=np.array([[np.nan], [1.0]]), y=np.zeros(2)), "finite"),
    (dict(X=np.zeros((3, 1)), y=np.zeros(2)), "y must have shape"),
    (dict(X=np.zeros(3), y=np.zeros(3)), r"\(n, d\)"),
    (dict(X=np.zeros((3, 1)), y=np.zeros(3), depth=0), "depth"),
    (dict(X=np.zeros((3, 1)), y=np.zeros(3), restarts=0), "restarts"),
    (dict(X=np.zeros((3, 1)), y=np.zeros(3), start="magic"), "start"),
    (dict(X=np.zeros((3, 1)), y=np.zeros(3), start=Network([[[1.0]], [[1.0]]], [[0.0], [0.0]]), width=2),
     "layer sizes"),
    (dict(X=np.zeros((3, 1)), y=np.zeros(3), noise=-1.0), "noise"),
    (dict(X=np.zeros((3, 1)), y=np.zeros(3), start=[Network([[[1.0]], [[1.0]]], [[0.0], [0.0]])], restarts=2),
     "list of starts"),
    (dict(X=np.zeros((3, 1)), y=np.zeros(3), time_limit=0.0), "time_limit"),
])
def test_bad_input_is_one_clear_error(kwargs, match):
    args = dict(depth=1, width=1)
    args.update(kwargs)
    with pytest.raises(DynamicsError, match=match):
        fit_multistart(**args)


def test_basin_hopping_only_improves_and_reaches_the_class_minimum():
    # T^2 on [0, 1] (1-D input) with width 2, depth 2: the class contains it exactly
    X = np.linspace(0, 1, 33)[:, None]
    y = tent_power(X[:, 0], 2)
    for seed in (1, 3):  # seeds where 32 plain restarts do not reach zero loss
        plain = fit_multistart(X, y, depth=2, width=2, restarts=32, seed=seed)
        hop = fit_basin_hopping(X, y, depth=2, width=2, restarts=32, chains=8, children=8, rounds=15, seed=seed)
        # the chains start from the plain fit's best 8 restarts and only move downhill
        assert np.all(np.sort(hop.train_mse) <= np.sort(plain.train_mse)[:8] + 1e-15)
        assert plain.status == "partial" and hop.status == "interpolated" and hop.iterations >= 1
        # re-checked by relulab's forward pass, and against T^2 on a dense grid
        assert np.max(np.abs(hop.network(X)[:, 0] - y)) < 1e-6
        grid = np.linspace(0, 1, 2001)[:, None]
        assert np.mean((hop.network(grid)[:, 0] - tent_power(grid[:, 0], 2)) ** 2) < 1e-3


# ------------------------------------------------------------------ data far from size 1
def _cannot_fit():
    """12 random targets: a 2-2-1 network explains about two thirds of their variance."""
    rng = np.random.default_rng(0)
    return rng.normal(size=(12, 2)), rng.normal(size=12)


@pytest.mark.parametrize("s", [1e-155, 1e160])
@pytest.mark.parametrize("fit", [
    lambda X, y: fit_multistart(X, y, depth=1, width=2, restarts=16, seed=0),
    lambda X, y: fit_basin_hopping(X, y, depth=1, width=2, restarts=16, chains=4, rounds=2, seed=0),
])
def test_a_fit_that_explains_little_is_not_interpolated_at_any_scale(s, fit):
    """Targets of 1e-155 (variance below the 1e-300 floor) and 1e160 (MSE and variance
    overflowing, inf <= 1e-10 inf) were 'interpolated' by fits leaving 64 % and 103 %."""
    X, y = _cannot_fit()
    r = fit(X, y * s)
    resid = (r.network(X)[:, 0] - y * s) / s
    rel = float(np.mean(resid**2) / np.var(y))
    assert r.status == "partial" and rel > 0.1


@pytest.mark.parametrize("k", [-500, 300])
def test_targets_scaled_by_a_power_of_two_give_the_same_fit_scaled(k):
    """The fit runs on the targets divided by a power of two near their size, so the
    search is the one at size 1 and the network comes back scaled exactly."""
    t = np.linspace(-1, 1, 9)
    X, y = t[:, None], np.abs(t) - 0.5 * np.maximum(t - 0.25, 0)
    ref = fit_multistart(X, y, depth=1, width=3, restarts=8, seed=2)
    big = fit_multistart(X, y * 2.0**k, depth=1, width=3, restarts=8, seed=2)
    assert ref.status == big.status == "interpolated"
    assert np.array_equal(big.network(X), ref.network(X) * 2.0**k)
    assert np.array_equal(big.train_mse, ref.train_mse * 4.0**k)


def test_inputs_far_from_size_one_are_fitted_as_at_size_one():
    t = np.linspace(-1, 1, 9)
    X, y = t[:, None], np.abs(t)
    ref = fit_multistart(X, y, depth=1, width=2, restarts=8, seed=1)
    tiny = fit_multistart(X * 2.0**-600, y, depth=1, width=2, restarts=8, seed=1)
    assert ref.status == tiny.status == "interpolated"
    assert np.array_equal(tiny.network(X * 2.0**-600), ref.network(X))


def test_a_start_with_a_skip_connection_is_refused():
    start = Network([[[1.0]], [[1.0]]], [[0.0], [0.0]], skip=([[1.0]], [0.0]))
    with pytest.raises(DynamicsError, match="skip connection"):
        fit_multistart(np.array([[-1.0], [1.0]]), np.array([0.0, 2.0]), 1, 1, restarts=1, start=start)


# ------------------------------------------------------------------ limits
def test_the_memory_check_counts_one_restarts_jacobian():
    """n x P = 20,000 x 1,681 entries (270 MB per copy, several copies) under a 500 MB
    budget: it passed the check (a block was charged 4e6 entries) and used 1.3 GB."""
    from relulab.limits import ResourceLimitError, memory_limit

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20000, 40)), rng.normal(size=20000)
    with memory_limit(500 * 2**20), pytest.raises(ResourceLimitError, match="fit_multistart"):
        fit_multistart(X, y, depth=1, width=40, restarts=2, max_iter=0)


def test_an_iteration_that_would_end_past_the_limit_is_not_started(monkeypatch):
    """With n >= P one iteration is a batch of P x P solves that cannot be interrupted (10 s
    past a 1 s limit): on a machine that multiplies at 1 flop/s none fits any limit."""
    import relulab.dynamics.multistart as M

    monkeypatch.setattr(M, "dense_flop_rate", lambda: 1.0)
    t = np.linspace(-1, 1, 9)
    X, y = t[:, None], np.abs(t)
    r = fit_multistart(X, y, depth=1, width=2, restarts=4, seed=0, time_limit=600)
    assert r.status == "time_limit" and r.iterations == 0 and r.completed == 0
    assert fit_multistart(X, y, depth=1, width=2, restarts=4, seed=0).status == "interpolated"


def test_targets_at_the_edge_of_float64_fit_or_are_refused_by_name():
    """Targets of 1e307 are fitted in scaled units and scaled back (|x| exactly on the
    grid); at 1.7e308 the network's last layer overflows and the fit says so (the scale
    was rounded up to 2^1024 = inf, and the error named a NaN weight of layer 2)."""
    X = np.linspace(-1, 1, 9)[:, None]
    fit = fit_multistart(X, np.abs(X[:, 0]) * 1e307, depth=1, width=2, restarts=8, seed=0)
    assert fit.status == "interpolated"
    assert np.allclose(fit.network(X)[:, 0], np.abs(X[:, 0]) * 1e307, rtol=0.0, atol=1e301)
    with pytest.raises(DynamicsError, match="overflow float64"):
        fit_multistart(X, np.abs(X[:, 0]) * 1.7e308, depth=1, width=2, restarts=8, seed=0)
