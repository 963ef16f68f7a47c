"""The fit-quantile command: JSON output, a saved network that relulab reloads, one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import run_cli

pytest.importorskip("torch")
pytest.importorskip("sklearn")


@pytest.fixture
def csv(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, 200)
    y = x + 0.2 * rng.normal(size=200)
    p = tmp_path / "d.csv"
    np.savetxt(p, np.c_[x, y], delimiter=",", header="x,y", comments="")
    return p, x, y


def test_fit_quantile_json_and_saved_network(capsys, csv, tmp_path):
    from relulab.estimators import QuantileNetRegressor
    from relulab.io import load_model

    p, x, y = csv
    out = tmp_path / "q.npz"
    code, stdout, _ = run_cli(capsys, "fit-quantile", p, "--quantiles", "0.2,0.8", "--hidden", "6",
                              "--epochs", "5", "--seed", "3", "--save", out, "--json")
    assert code == 0
    res = json.loads(stdout)
    assert res["quantiles"] == [0.2, 0.8] and res["widths"] == [6, 3]
    net = load_model(out)
    ref = QuantileNetRegressor(quantiles=(0.2, 0.8), hidden=(6,), epochs=5, random_state=3).fit(x[:, None], y)
    grid = np.linspace(-2, 2, 50)[:, None]
    assert np.allclose(net(grid), ref.predict(grid), rtol=1e-12, atol=1e-12)
    assert res["mean_check_loss"] == pytest.approx(-ref.score(x[:, None], y), rel=1e-12)


@pytest.mark.parametrize("args, msg", [
    (["--quantiles", "0.5,1.5"], "strictly between 0 and 1"),
    (["--kernel", "box"], "kernel"),
    (["--hidden", "a,b"], "--hidden"),
])
def test_fit_quantile_errors_are_one_line(capsys, csv, args, msg):
    p, _, _ = csv
    code, _, err = run_cli(capsys, "fit-quantile", p, "--epochs", "1", *args)
    assert code == 1 and msg in err and len(err.strip().splitlines()) == 1


def test_fit_quantile_refuses_a_network_beyond_the_memory_budget(capsys, monkeypatch):
    # --hidden 200000,200000 ended in torch's "you tried to allocate 160000000000 bytes"
    from conftest import run_cli

    monkeypatch.setenv("RELULAB_MEMORY_GB", "1")
    code, out, err = run_cli(capsys, "fit-quantile", "example:data_1d.csv", "--hidden", "200000,200000",
                             "--epochs", "1")
    assert code == 1 and "memory budget" in err and "200000" in err and len(err.strip().splitlines()) == 1


def test_fit_quantile_time_limit_stops_training_and_says_so(capsys, csv):
    # fit-quantile had no time limit: --epochs 10**7 ran for hours
    p, x, y = csv
    code, stdout, _ = run_cli(capsys, "fit-quantile", p, "--hidden", "4", "--epochs", str(10**7),
                              "--time-limit", "0.3", "--json")
    assert code == 0
    res = json.loads(stdout)
    assert res["stopped"] == "time_limit" and 1 <= res["epochs_run"] < 10**7


def test_fit_quantile_warns_when_the_loss_is_still_falling(capsys, csv):
    from relulab.estimators import QuantileNetRegressor, recent_drop

    p, x, y = csv
    code, stdout, _ = run_cli(capsys, "fit-quantile", p, "--hidden", "linear", "--epochs", "12", "--json")
    res = json.loads(stdout)
    ref = QuantileNetRegressor(hidden=(), epochs=12, random_state=0).fit(x[:, None], y)
    curve = ref.loss_curve_
    # the reported drop is the relative fall over the last 10 of the 12 epochs
    assert res["loss_drop_last_10_epochs"] == pytest.approx((curve[1] - curve[11]) / abs(curve[1]), rel=1e-12)
    assert res["stopped"] == "epochs"
    code, text, _ = run_cli(capsys, "fit-quantile", p, "--hidden", "linear", "--epochs", "12")
    assert (res["loss_drop_recent"] > 0.01) == ("not settled" in text)
    assert res["loss_drop_last_10_epochs"] > 0.01     # 12 epochs do not settle this fit
    assert recent_drop([2.0]) == 0.0 and recent_drop([2.0, 1.0], 10) == 0.5


@pytest.mark.parametrize("value", ["0", "-1", "nan"])
def test_fit_quantile_bad_time_limit_is_named(capsys, csv, value):
    p, _, _ = csv
    code, _, err = run_cli(capsys, "fit-quantile", p, "--epochs", "1", "--time-limit", value)
    assert code == 1 and "--time-limit" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("cls", ["QuantileNetRegressor", "SmoothNetRegressor"])
def test_estimator_time_limit_and_stop_reason(cls):
    import relulab.estimators as est

    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, (64, 1))
    y = X[:, 0] + 0.1 * rng.normal(size=64)
    Cls = getattr(est, cls)
    m = Cls(hidden=(4,), epochs=10**7, time_limit=0.2, random_state=0).fit(X, y)
    assert m.stopped_ == "time_limit" and not m.converged_ and len(m.loss_curve_) == m.n_iter_ < 10**7
    m = Cls(hidden=(4,), epochs=3, random_state=0).fit(X, y)
    assert m.stopped_ == "epochs" and m.n_iter_ == 3
    m = Cls(hidden=(4,), epochs=10**7, tol=1e9, n_iter_no_change=2, random_state=0).fit(X, y)
    assert m.stopped_ == "converged" and m.converged_ and m.n_iter_ == 3
    with pytest.raises(est.EstimatorInputError, match="time_limit must be a positive"):
        Cls(hidden=(4,), epochs=1, time_limit=-1.0).fit(X, y)
