"""Neuron status proofs that survive LP tolerances and float rounding, ranks that ignore
rescaling, and argument checks (fourth symmetry/params audit).  Each case failed before
its fix."""

from __future__ import annotations

import importlib
from fractions import Fraction

import numpy as np
import pytest
from typer.testing import CliRunner

from relulab import Box, Network, Polytope
from relulab.cli import app
from relulab.errors import RelulabError
from relulab.io import save_model
from relulab.params import functional_dimension, gd_conservation, path_lifting
from relulab.params.fdim import switching_network
from relulab.symmetry import equivalent, neuron_status, permute, plan, reduce, replace, rescale


def _slab_polytope():
    # 0 <= x1 <= 1, 0 <= x2 <= 1e9, x1 + x2 <= 2e9
    A = np.array([[1.0, 0], [-1, 0], [0, 1], [0, -1], [1, 1]])
    return Polytope(A, np.array([1.0, 0, 1e9, 0, 2e9]))


def test_a_reduced_cost_below_highs_tolerance_does_not_kill_a_neuron():
    # relu(x1 + 1e-8 x2 - 5) reaches 6 at (1, 1e9): HiGHS's objective read its maximum as 1 - 5
    P = _slab_polytope()
    f = Network([[[1.0, 0.0], [1.0, 1e-8]], [[1.0, 1.0]]], [[0.0, -5.0], [0.0]])
    g = Network([[[1.0, 0.0]], [[1.0]]], [[0.0], [0.0]])
    assert f([1.0, 1e9])[0] - g([1.0, 1e9])[0] == pytest.approx(6.0)
    assert neuron_status(f, P).status[0][1] != -1
    for F, G in ((f, g), (f.exact(), g.exact())):
        assert equivalent(F, G, P).status == "different"
    assert reduce(f, P).widths_after == (2,)


def _cancelling_pair():
    # layer 2's first neuron is A (ba - bb) + c = +2.8e-5 on the whole box, from terms of 3e13
    A, ba, bb, c = 21378344081285.254, 1.4589970700998818, 1.458997070099877, -0.10440499098819735
    f = Network([[[1.0], [1.0], [1.0]], [[A, -A, 0.0], [0.0, 0.0, 1.0]], [[1e6, 1.0]]],
                [[ba, bb, 0.0], [c, 0.0], [0.0]])
    g = Network([[[1.0]], [[1.0]], [[1.0]]], [[0.0], [0.0], [0.0]])
    return f, g


def test_bounds_rounding_cannot_prove_a_live_neuron_dead():
    f, g = _cancelling_pair()
    box = Box([0.0], [1.0])
    x = np.array([Fraction(1, 2)], dtype=object)
    assert f.exact()(x)[0] - g.exact()(x)[0] > 27  # they differ everywhere on the box
    assert neuron_status(f, box).status[1][0] != -1
    assert equivalent(f, g, box).status == "different"
    assert equivalent(f.exact(), g.exact(), box).status == "different"
    r = reduce(f, box)
    assert r.status != "verified" or r.network.float()(np.array([[0.5]]))[0, 0] == pytest.approx(f([0.5])[0])


def test_reduce_is_not_verified_when_its_samples_disagree(monkeypatch):
    R = importlib.import_module("relulab.symmetry.reduce")
    real = R.equivalent

    def lenient(a, b, dom, **kw):
        r = real(a, a, dom, **kw)   # "equal", whatever b is
        return r

    monkeypatch.setattr(R, "equivalent", lenient)
    net = Network([[[1.0], [-1.0]], [[1.0, 1e6]]], [[0.0, 0.5], [0.0]])
    r = reduce(net, Box([-1.0], [1.0]), max_rounds=1)
    # the stand-in says equal; the reduction matches net on every sample, so verified stays
    assert r.status == "verified" and r.sample_max_deviation <= r.check.tol
    object.__setattr__(r, "sample_max_deviation", 10.0 * (r.check.tol or 1.0))
    assert r.status == "unverified"


def test_polytope_lps_stop_at_the_time_limit():
    # z = x1 + x2 - 1.5 on the triangle x1 + x2 <= 1 in [0, 1]^2: dead by LP, not by the box
    P = Polytope(np.array([[1.0, 1.0], [-1, 0], [0, -1], [1, 0], [0, 1]]), np.array([1.0, 0, 0, 1, 1]))
    net = Network([[[1.0, 1.0]], [[1.0]]], [[-1.5 + 1e-3], [0.0]])
    assert neuron_status(net, P).status[0][0] == -1
    assert neuron_status(net, P, time_limit=1e-9).status[0][0] == 0


@pytest.mark.parametrize("c", [1e6, 1e8])
def test_the_numerical_rank_does_not_move_under_a_rescaling_symmetry(c):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    net = switching_network([2, 3, 3, 1], X, seed=1)
    g = rescale(net, [[c, 1.0, 1.0], [1.0, 1.0, 1.0]])
    a, b = functional_dimension(net, X), functional_dimension(g, X)
    assert a.rank == b.rank == a.bound


def test_canonical_cli_names_overflowing_outputs(tmp_path):
    p = tmp_path / "ovf.npz"
    save_model(Network([[[1.0]], [[1e308]]], [[0.0], [0.0]]), p)
    res = CliRunner().invoke(app, ["canonical", str(p), "-o", str(tmp_path / "o.npz"), "--box", "0:10"])
    assert res.exit_code != 0 and "overflow float64" in str(res.exception)
    assert not (tmp_path / "o.npz").exists()


_NET = Network([[[1.0, 2.0], [-1.0, 1.0]], [[1.0, -1.0]]], [[0.0, 0.5], [0.0]])


@pytest.mark.parametrize("call, match", [
    (lambda: replace(_NET, [(0, 0.7)], data=np.ones((3, 2))), "pair of integers"),
    (lambda: replace(_NET, [3], data=np.ones((3, 2))), "pair of integers"),
    (lambda: replace(_NET, [(0, 0)], by="affine", data=np.ones((3, 2)), ridge=-1.0), "ridge"),
    (lambda: replace(_NET, [(0, 0)], data=np.full((3, 2), np.nan)), "replace: data contains NaN"),
    (lambda: plan([np.ones(2)], -1), "keep must be >= 0"),
    (lambda: plan([np.ones(2), np.ones(2)], [1]), "one integer >= 0 per hidden layer"),
    (lambda: rescale(_NET, 3), "one vector per hidden layer"),
    (lambda: rescale(_NET, [[np.inf, 1.0]]), "positive finite"),
    (lambda: permute(_NET, [[1.5, 0]]), "list of integers"),
    (lambda: equivalent(_NET, _NET, Box([0, 0], [1, 1]), seed=-1), "seed"),
    (lambda: equivalent(_NET, _NET, Box([0, 0], [1, 1]), tol="0.1"), "tol must be a number"),
    (lambda: reduce(_NET, Box([0, 0], [1, 1]), seed=-1), "seed"),
    (lambda: path_lifting("x"), "expected a relulab Network"),
    (lambda: gd_conservation("net", np.ones((2, 2)), np.ones(2), lr=0.1, steps=1), "expected a relulab Network"),
    (lambda: gd_conservation(_NET, np.ones((2, 2)), ["a", "b"], lr=0.1, steps=1), "arrays of numbers"),
    (lambda: functional_dimension(_NET, np.zeros((0, 2))), "no points"),
    (lambda: functional_dimension(_NET, np.ones((3, 2)), time_limit=-5), "time_limit"),
])
def test_bad_arguments_get_one_clear_error(call, match):
    with pytest.raises(RelulabError, match=match):
        call()
