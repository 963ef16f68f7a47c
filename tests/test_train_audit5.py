"""Minimal-norm training (fifth audit): the classification dual's certificate on clusters
far apart, in_optimal_set's tests relative to the problem's own sizes, kinks merged only
at exactly one position, and the CLI's text for a stalled fit."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
from conftest import run_cli

from relulab import Network
from relulab.train import function_cost, kinks_of, minnorm_classifier, minnorm_interpolant


def _exact_cost_if_it_classifies(net: Network, x: list[float], labels: list[int], shift: float) -> float | None:
    """A classifier built from ``net``'s kinks ``t_k`` and jumps ``s_k`` (read as exact
    rationals), its value at 0 and its left slope: ``g(u) = g0 + L u + sum s_k (relu(u -
    t_k) - relu(-t_k))``, read at ``u = x - shift``.  Its cost, sum |s_k|, when ``labels_i
    g(x_i - shift) >= 1`` holds in exact arithmetic; else None."""
    t, s, _, _ = kinks_of(net)
    tk, sk = [F(float(v)) for v in t], [F(float(v)) for v in s]
    g0 = F(float(net(np.array([[0.0]]))[0, 0]))
    lo = min(float(t.min()) if t.size else 0.0, 0.0) - 1.0
    L = F(float(net(np.array([[lo]]))[0, 0])) - F(float(net(np.array([[lo - 1.0]]))[0, 0]))

    def g(u: F) -> F:
        return g0 + L * u + sum(sj * (max(u - tj, F(0)) - max(-tj, F(0))) for tj, sj in zip(tk, sk, strict=True))

    if min(lab * g(F(xi) - F(shift)) for xi, lab in zip(x, labels, strict=True)) < 1:
        return None
    return float(sum(abs(v) for v in sk))


def test_classifier_bound_on_clusters_far_apart_stays_below_an_exactly_checked_classifier():
    """x = [-1e10, 1e10 + 0..7]: the 'certified' lower bound was 13.99995 where a classifier
    checked in exact arithmetic costs 12 (the dual's leftover sum times an output bias of
    1e10).  The cluster's own optimum, read at x - 1e10, classifies every point."""
    off = 1e10
    lab_c = [1, 1, -1, -1, 1, 1, -1, 1]
    x = [-off] + [off + k for k in range(8)]
    lab = [1] + lab_c
    r = minnorm_classifier(x, lab, bias="free", skip=True, describe=False)
    near = minnorm_classifier(list(range(8)), lab_c, bias="free", skip=True, describe=False)
    ub = _exact_cost_if_it_classifies(near.network, x, lab, off)
    assert ub is not None
    assert r.lower_bound <= ub * (1 + 1e-9)
    assert r.lower_bound <= r.cost * (1 + 1e-9)


def test_in_optimal_set_tests_values_and_costs_relative_to_the_problem():
    x, y = [0.0, 1.0, 2.0], [0.0, 1e-8, 0.0]
    r = minnorm_interpolant(x, y, bias="free", skip=True)
    zero = Network([np.zeros((1, 1)), np.zeros((1, 1))], [np.zeros(1), np.zeros(1)])
    assert r.in_optimal_set(r.network)
    assert not r.in_optimal_set(zero)               # misses y = 1e-8 by all of it
    assert not r.in_optimal_set(r.network * 0.5)    # half the values
    c = minnorm_classifier([0.0, 1e9, 2e9, 3e9], [1, 1, -1, -1], bias="free", skip=False)
    assert c.in_optimal_set(c.network)
    assert function_cost(c.network * 3.0, "free", False) > 2.5 * c.cost
    assert not c.in_optimal_set(c.network * 3.0)    # costs three times the optimum


def _tent(ks: list[tuple[float, float]]) -> Network:
    return Network([np.ones((len(ks), 1)), np.array([[s for _, s in ks]])],
                   [np.array([-t for t, _ in ks]), np.zeros(1)])


def test_kinks_thousands_of_ulps_apart_are_not_merged():
    T = 3e9
    tent = _tent([(T, 1e3), (T + 1e-3, -2e3), (T + 2e-3, 1e3)])       # height 1, at 3e9
    assert tent(np.array([[T + 1e-3]]))[0, 0] > 0.99                   # the tent is there
    t, s, _, _ = kinks_of(tent)
    assert t.size == 3
    assert abs(function_cost(tent, "free", True) - 4000.0) < 1e-6 * 4000
    # a tent on [0, 1e-6] beside kinks near 1e6: the median (1e6) no longer sets the merge
    near0 = _tent([(0.0, 2e6), (5e-7, -4e6), (1e-6, 2e6), (1e6, 1.0), (2e6, -1.0), (3e6, 1.0), (4e6, -1.0)])
    assert abs(function_cost(near0, "free", True) - 8000004.0) < 1e-6 * 8000004


def test_kinks_at_exactly_one_position_are_merged():
    """Two units at x = 1/3 from different weights: one kink (their jumps cancel here)."""
    net = Network([np.array([[3.0], [6.0]]), np.array([[1.0, -0.5]])], [np.array([-1.0, -2.0]), np.zeros(1)])
    t, s, L, R = kinks_of(net)
    assert t.size == 0 and L == 0.0 and R == 0.0
    assert function_cost(net, "free", True) == 0.0


def test_fit_minnorm_text_for_a_stalled_fit_without_a_time_limit(tmp_path, capsys):
    """A stalled fit (no --time-limit) crashed the text output with a TypeError after -o
    had written the network; kinks near 3e9 all printed as '3e+09'."""
    data = tmp_path / "stalled.csv"
    data.write_text("x,y\n0,0\n3000000000,0\n3000000001,1\n3000000002,-1\n3000000003,2\n"
                    "3000000004,0.5\n3000000005,0\n")
    code, out, err = run_cli(capsys, "fit-minnorm", data, "--skip", "-o", tmp_path / "n.npz")
    assert code == 0, err
    kinks = [ln for ln in out.splitlines() if "kink at x" in ln]
    assert len({ln.split(":")[0] for ln in kinks}) == len(kinks)      # distinct positions
    if "PARTIAL" in out:
        assert "stalled" in out or "time limit" in out


def test_small_gaps_collapse_bias_parameter_cost_shape_and_gated_stop():
    import pytest

    from relulab.errors import RelulabError
    from relulab.train import collapse_threshold, gated_fit, parameter_cost

    X, y = np.array([[0.0], [1.0], [2.0]]), np.array([1.0, -1.0, 2.0])
    with pytest.raises(RelulabError, match="bias must be True or False"):
        collapse_threshold(X, y, bias="no")
    with pytest.raises(RelulabError, match="univariate"):
        parameter_cost(Network([[[1.0, 1.0]], [[1.0]]], [[0.0], [0.0]]), "free")
    rng = np.random.default_rng(0)
    g = gated_fit(rng.standard_normal((300, 4)), rng.standard_normal(300), 1e-3, 20000, time_limit=0.2)
    d = g.to_dict()
    assert d["partial"] == (d["stopped"] is not None)
    if not g.converged:
        assert d["stopped"] == "time_limit"


def test_far_data_report_how_far_the_float_network_misses_them():
    """x = 3e9 + 1e-4 k: the network moved back from the translated solve is the float64
    rounding of the optimum, and its forward pass missed y by 0.01 while 'optimal' said
    nothing.  The reported miss is the forward pass's own."""
    x = 3e9 + 1e-4 * np.arange(8)
    y = np.random.default_rng(0).standard_normal(8)
    r = minnorm_interpolant(x, y, skip=True)
    miss = float(np.max(np.abs(r.network(x[:, None])[:, 0] - y)))
    if miss > 1e-7 * np.max(np.abs(y)):
        assert r.info["network_fit_error"] == miss
        assert r.to_dict()["network_fit_error"] == miss and "network_note" in r.to_dict()
    else:
        assert "network_fit_error" not in r.info
