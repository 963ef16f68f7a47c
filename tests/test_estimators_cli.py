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
