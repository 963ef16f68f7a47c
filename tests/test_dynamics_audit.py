"""Audit fixes in relulab.dynamics: time limits, memory checks, argument checks."""

import numpy as np
import pytest

from relulab.dynamics._model import DynamicsError
from relulab.dynamics.multistart import fit_multistart
from relulab.limits import ResourceLimitError, memory_limit


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 2))
    return X, np.sin(3 * X[:, 0]) * X[:, 1]


def test_multistart_time_limit_counts_only_restarts_that_iterated():
    X, y = _data()
    fit = fit_multistart(X, y, 2, 4, restarts=3000, max_iter=50, seed=0, time_limit=1e-9)
    assert fit.status == "time_limit"
    assert fit.completed == 0 and fit.iterations == 0
    assert np.all(np.isinf(fit.train_mse))  # as documented: inf for restarts not run
    with pytest.raises(DynamicsError, match="never started"):
        fit.predict(X, [2999])


def test_multistart_time_limit_consistent_counts():
    X, y = _data()
    fit = fit_multistart(X, y, 2, 4, restarts=3000, max_iter=50, seed=0, time_limit=0.2)
    assert fit.completed < 3000
    assert fit.completed == 0 or fit.iterations >= 1
    assert np.all(np.isfinite(fit.train_mse[:fit.completed]))
    assert np.all(np.isinf(fit.train_mse[fit.completed:]))


def test_multistart_memory_checked_up_front():
    X, y = _data()
    with memory_limit(1_000_000), pytest.raises(ResourceLimitError, match="restarts=100000"):
        fit_multistart(X, y, 2, 4, restarts=100_000, max_iter=1, time_limit=1.0)


@pytest.mark.parametrize("seed", [-3, 1.5, "a"])
def test_multistart_refuses_bad_seed(seed):
    X, y = _data()
    with pytest.raises(DynamicsError, match="seed"):
        fit_multistart(X, y, 1, 1, restarts=2, seed=seed)


# --- bad input in train / mlp / paths ------------------------------------------------

def _net():
    from relulab import Network

    return Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.5], [0.0]])


X1 = np.array([[0.0], [1.0], [2.0]])
Y1 = np.array([[0.0], [1.0], [0.0]])


@pytest.mark.parametrize("kwargs, name", [
    ({"loss": "logistic", "steps": 2}, "y"),
    ({"optimizer": "sgd", "batch_size": 1.5, "steps": 2}, "batch_size"),
    ({"optimizer": "flow", "flow_tol": -1, "steps": 2}, "flow_tol"),
])
def test_train_refuses_bad_arguments(kwargs, name):
    pytest.importorskip("torch")
    from relulab.dynamics import train

    with pytest.raises(DynamicsError, match=name):
        train(_net(), X1, Y1[:, 0], record=[], **kwargs)


def test_train_logistic_accepts_pm1_labels():
    pytest.importorskip("torch")
    from relulab.dynamics import train

    assert train(_net(), X1, np.array([-1.0, 1.0, -1.0]), loss="logistic", steps=2, record=[]).status


def test_mlp_refuses_nan_init_scale():
    pytest.importorskip("torch")
    from relulab.dynamics import mlp

    with pytest.raises(DynamicsError, match="init_scale"):
        mlp([2, 3, 1], init_scale=float("nan"))


@pytest.mark.parametrize("call, name", [
    (lambda pl, bz, ps: pl(_net(), _net(), X1, np.ones(4)), "Y"),
    (lambda pl, bz, ps: pl(_net(), _net(), X1, Y1, n_points="5"), "n_points"),
    (lambda pl, bz, ps: pl(_net(), _net(), X1, Y1, n_points=2.5), "n_points"),
    (lambda pl, bz, ps: pl(_net(), _net(), X1, Y1, loss="logistic"), "labels"),
    (lambda pl, bz, ps: bz(_net(), _net(), X1, Y1, steps=2.5), "steps"),
    (lambda pl, bz, ps: bz(_net(), _net(), X1, Y1, steps=2, lr=float("nan")), "lr"),
    (lambda pl, bz, ps: ps(_net(), _net(), X1, Y1, bends=1.5, steps=1), "bends"),
])
def test_paths_refuse_bad_arguments(call, name):
    pytest.importorskip("torch")
    from relulab.dynamics.paths import PathError, bezier_search, path_losses, polyline_search

    with pytest.raises(PathError, match=name):
        call(path_losses, bezier_search, polyline_search)


def test_polyline_to_dict_is_json():
    pytest.importorskip("torch")
    import json

    from relulab.dynamics.paths import polyline_search

    r = polyline_search(_net(), _net(), [[-1.0], [1.0]], [[1.0], [1.0]], bends=2, steps=2)
    d = json.loads(json.dumps(r.to_dict()))
    assert isinstance(d["ts"], list) and len(d["ts"]) == len(d["losses"])


# --- plateaus / saddle_events window ---------------------------------------------------

@pytest.mark.parametrize("window", [0, -1, 210, 10**6, 2.5])
def test_plateaus_refuse_bad_window(window):
    from relulab.dynamics.saddles import plateaus

    L = np.r_[np.ones(100), np.linspace(1, 0.5, 10), 0.5 * np.ones(100)]
    with pytest.raises(DynamicsError, match="window"):
        plateaus(L, window=window)
    assert plateaus(L, window=209)[1] == 209
    assert plateaus(L, window=5)[0] == [(0, 100), (109, 209)]


def test_nan_tolerances_and_a_model_that_cannot_read_x_are_refused():
    # each was accepted: loss_tol=nan never fired, flat_tol/growth=nan found nothing, and
    # a 3-input module on 2-column X raised torch's bare "mat1 and mat2 shapes" error
    from relulab.dynamics import DynamicsError, mlp, saddle_events, train
    from relulab.dynamics.saddles import plateaus

    X = np.random.default_rng(0).normal(size=(6, 2))
    y = np.ones(6)
    with pytest.raises(DynamicsError, match=r"cannot read X of shape \(6, 2\)"):
        train(mlp([3, 3, 1]), X, y, steps=2)
    with pytest.raises(DynamicsError, match="loss_tol=nan"):
        train(mlp([2, 3, 1]), X, y, steps=5, loss_tol=float("nan"))
    curve = np.r_[np.ones(100), np.linspace(1, 0, 10), np.zeros(100)]
    with pytest.raises(DynamicsError, match="flat_tol=nan"):
        plateaus(curve, flat_tol=float("nan"))
    assert plateaus(curve)[0]  # the defaults find the plateaus
    t = train(mlp([2, 3, 1]), X, y, steps=20)
    with pytest.raises(DynamicsError, match="growth=nan"):
        saddle_events(t, growth=float("nan"))
