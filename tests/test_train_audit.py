"""Regression tests for the audit of relulab.train (minimal-norm solvers, train_surrogate)."""

from __future__ import annotations

import numpy as np
import pytest

from relulab import Network
from relulab.errors import RelulabError
from relulab.train import (
    minnorm_classifier,
    minnorm_interpolant,
    minnorm_on_grid,
    train_surrogate,
)
from relulab.train.minnorm import MinNormError


# ---------------------------------------------------------------- finding 1: 'unique'
def test_minnorm_unique_false_when_two_optima():
    # relu(x + 1) - 1 and 1 - relu(1 - x) both interpolate at the optimal cost sqrt(2)
    x, y = [-1.0, 1.0], [-1.0, 1.0]
    r = minnorm_interpolant(x, y, bias="penalized", skip=False)
    s = 2 ** -0.25
    f1 = Network([[[s]], [[s * 2 ** 0.5]]], [[s], [-1.0]])
    f2 = Network([[[-s]], [[-s * 2 ** 0.5]]], [[s], [1.0]])
    assert r.in_optimal_set(f1) and r.in_optimal_set(f2)
    assert r.unique is False and r.to_dict()["unique"] is False
    c = minnorm_classifier(x, [-1, 1], bias="penalized", skip=False)
    assert c.unique is False


def test_minnorm_classifier_cost_zero_not_unique():
    # with a skip and one label switch every separating line is optimal (cost 0)
    c = minnorm_classifier([-3.0, -2.5], [-1, 1], bias="penalized", skip=True)
    assert c.cost == pytest.approx(0.0, abs=1e-9) and c.unique is False


def test_minnorm_unique_true_only_when_certified():
    r = minnorm_interpolant([0, 1, 2, 3], [0, 1, 1, 0], bias="penalized", skip=True)
    assert r.unique is True and r.kinks == pytest.approx([1.5])
    # without the probe LPs nothing is decided
    r2 = minnorm_interpolant([0, 1, 2, 3], [0, 1, 1, 0], bias="penalized", skip=True,
                             describe=False)
    assert r2.unique is None


def test_cli_fit_minnorm_does_not_claim_unique(tmp_path, capsys):
    from relulab.cli import main

    p = tmp_path / "d.csv"
    p.write_text("x,y\n-1,-1\n1,1\n")
    try:
        main(["fit-minnorm", str(p), "--bias", "penalized"])
    except SystemExit as e:
        assert not e.code
    out = capsys.readouterr().out
    assert "not unique" in out and "is unique" not in out


# ------------------------------------------------------ finding 3: non-finite grid
@pytest.mark.parametrize("bad", [float("inf"), float("nan")])
def test_minnorm_on_grid_rejects_nonfinite_grid(bad):
    with pytest.raises(MinNormError, match="grid must be"):
        minnorm_on_grid([0, 1], [0, 1], [0.0, bad])


# --------------------------------------- finding 6: stopping rule and time limit
def _data(n: int = 25):
    rng = np.random.default_rng(1)
    return np.sort(rng.uniform(-1, 1, n)) + 0.7, rng.normal(size=n)


def test_minnorm_colgen_stops_at_lp_accuracy():
    x, y = _data()
    r = minnorm_interpolant(x, y, bias="penalized", describe=False)
    assert r.status == "optimal" and not r.partial
    assert r.iterations < 60  # the old rule always ran to the 200-round cap
    assert 0.0 <= r.gap <= 1e-8 * max(1.0, r.cost)


def test_minnorm_time_limit_gives_partial_result():
    x, y = _data()
    r = minnorm_interpolant(x, y, bias="penalized", time_limit=1e-6)
    assert r.status == "time_limit" and r.partial and r.unique is None
    assert r.lower_bound <= r.cost
    d = r.to_dict()
    assert d["status"] == "time_limit" and d["partial"] is True
    c = minnorm_classifier(x, np.sign(y), bias="penalized", time_limit=60.0)
    assert c.status in ("optimal", "stalled")
    with pytest.raises(MinNormError, match="time_limit"):
        minnorm_interpolant(x, y, time_limit=-1)


# -------------------------------------------------------- finding 7: bad input
def test_minnorm_string_input_is_a_clear_error():
    with pytest.raises(MinNormError, match="x must be"):
        minnorm_interpolant(["a", "b"], [0, 1])
    with pytest.raises(MinNormError, match="grid must be"):
        minnorm_on_grid([0, 1], [0, 1], ["a"])


# ---------------------------------------------------- finding 9: train_surrogate
_X = np.random.default_rng(0).uniform(-1, 1, (16, 2))
_Y = _X[:, 0] * _X[:, 1]
_XN = _X.copy()
_XN[3, 1] = np.nan


@pytest.mark.parametrize("kw, match", [
    (dict(X=_XN), "X contains NaN"),
    (dict(widths=[3, 8, 1]), "widths"),
    (dict(lo=[1, 1], hi=[-1, -1]), "lo > hi"),
    (dict(lo=[-1, -1, -1], hi=[1, 1, 1]), "lo and hi"),
    (dict(lr=-1.0), "lr"),
    (dict(epochs=-5), "epochs"),
    (dict(y=_Y[:-1]), r"y must be \(16,\)"),
])
def test_train_surrogate_bad_input(kw, match):
    args = dict(X=_X, y=_Y, widths=[2, 8, 1], lo=[-1, -1], hi=[1, 1])
    args.update(kw)
    X, y, widths, lo, hi = (args.pop(k) for k in ("X", "y", "widths", "lo", "hi"))
    with pytest.raises(RelulabError, match=match):
        train_surrogate(X, y, widths, lo, hi, epochs=args.pop("epochs", 3), **args)


def test_certificates_are_relative_to_the_problems_scale():
    # convex_fit's gap test was an absolute 1e-8: with y and lam scaled by 1e-4 the whole
    # objective is 1e-8 and the zero network came out a certified global optimum (96% off);
    # minnorm's was relative to max(1, cost): x of size 1e10 has costs 1e-10, any gap passed
    from relulab.train import convex_fit, minnorm_classifier, minnorm_interpolant

    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    y = np.array([0.0, 1.0, 0.0, 1.0])
    ref = convex_fit(X, y, 0.1)
    for c in (1e-4, 1e-5):
        r = convex_fit(X, c * y, 0.1 * c)
        if r.converged:
            assert r.objective / c**2 == pytest.approx(ref.objective, rel=1e-6)
    x0 = X[:, 0]
    ref_i, ref_c = minnorm_interpolant(x0, y), minnorm_classifier(x0, [1, -1, 1, -1])
    for s in (1e10, 1e20):
        r = minnorm_interpolant(x0 * s, y)
        if r.status == "optimal":
            assert r.cost * s == pytest.approx(ref_i.cost, rel=1e-6)
        r = minnorm_classifier(x0 * s, [1, -1, 1, -1])
        if r.status == "optimal":
            assert r.cost * s == pytest.approx(ref_c.cost, rel=1e-6)


def test_estimator_columns_of_small_spread_are_not_constant():
    # a spread below an absolute 1e-12 counted as constant: fits of y * 1e-13 came out flat
    from relulab.estimators._base import standardiser

    A = np.c_[np.linspace(0, 1, 50) * 1e-13, np.full(50, 5.0), np.linspace(-3, 3, 50)]
    mean, scale = standardiser(A)
    assert scale[0] == pytest.approx(np.std(A[:, 0]), rel=1e-9)
    assert scale[1] == 5.0 and mean[1] == 5.0   # a constant column: its own size as scale (it was 1)
    assert scale[2] == pytest.approx(np.std(A[:, 2]), rel=1e-12)
