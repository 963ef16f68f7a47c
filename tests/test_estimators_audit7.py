"""aud_est7: predictions in blocks within the memory budget (the same outputs as one
pass), and --help that states the rule the command applies."""

import numpy as np
import pytest
from typer.testing import CliRunner

from relulab import Network
from relulab.cli import app
from relulab.estimators._base import forward_in_blocks
from relulab.limits import ResourceLimitError


def test_a_network_is_evaluated_in_blocks_within_the_budget_with_the_same_outputs(monkeypatch):
    rng = np.random.default_rng(0)
    net = Network([rng.normal(size=(500, 3)), rng.normal(size=(1, 500))], [rng.normal(size=500), np.zeros(1)])
    X = rng.normal(size=(3000, 3))
    whole = net(X)
    calls = []
    real = Network.forward

    def counting(self, A, check_finite=True):
        calls.append(len(A))
        return real(self, A, check_finite)

    monkeypatch.setattr(Network, "forward", counting)
    monkeypatch.setattr(Network, "__call__", counting)
    monkeypatch.setenv("RELULAB_MEMORY_GB", str(3 * 8.0 * 500 * 700 / 2**30))   # about 700 rows a block
    out = forward_in_blocks(net, X, "test")
    np.testing.assert_array_equal(out, whole)
    assert len(calls) >= 4 and max(calls) <= 800
    monkeypatch.setenv("RELULAB_MEMORY_GB", "1e-9")
    with pytest.raises(ResourceLimitError, match="test: the network on a block of points"):
        forward_in_blocks(net, X, "test")


def test_fit_quantile_help_states_the_recent_epochs_rule():
    res = CliRunner().invoke(app, ["fit-quantile", "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0
    text = " ".join(res.output.split())
    assert "recent_epochs" in text and "100 optimiser steps" in text


def test_marginal_intervals_and_scores_do_not_depend_on_the_units():
    import warnings

    from relulab.estimators import MarginalNetRegressor, SmoothNetRegressor

    rng = np.random.default_rng(0)
    X, y0 = rng.normal(size=(40, 1)), rng.normal(size=40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = MarginalNetRegressor(hidden=(4,), epochs=5, random_state=0).fit(X, y0)
        big = MarginalNetRegressor(hidden=(4,), epochs=5, random_state=0).fit(X, 1e160 * y0)
        np.testing.assert_allclose(big.predict(X[:5]) / 1e160, ref.predict(X[:5]), rtol=1e-9)
        np.testing.assert_allclose(big.predict_interval(X[:5]) / 1e160, ref.predict_interval(X[:5]), rtol=1e-9)
        for E in (MarginalNetRegressor, SmoothNetRegressor):
            a = E(hidden=(4,), epochs=5, random_state=0).fit(X, y0).score(X, y0)
            b = E(hidden=(4,), epochs=5, random_state=0).fit(X, 1e160 * y0).score(X, 1e160 * y0)
            assert np.isfinite(b) and b == pytest.approx(a, rel=1e-9, abs=1e-12)
        # members near float64's top: their mean is finite, and so is predict
        X2 = rng.normal(size=(20, 1))
        m = MarginalNetRegressor(hidden=(4,), n_estimators=3, epochs=5, random_state=0).fit(
            X2, np.array([-1.7e308, 1.7e308] * 10))
        p = m.predict(X2)
        assert np.all(np.isfinite(p))
        np.testing.assert_allclose(p, m.ensemble_network()(X2)[:, 0], rtol=1e-12)
