"""The `relulab pathnorm` and `relulab fdim` commands."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import random_network
from typer.testing import CliRunner

from relulab import Network
from relulab.cli import app
from relulab.io import save_model
from relulab.params import functional_dimension, path_lifting, path_norm

runner = CliRunner()


@pytest.fixture
def model_file(tmp_path, rng):
    net = random_network(rng, [3, 4, 4, 2])
    p = tmp_path / "net.npz"
    save_model(net, p)
    return net, str(p)


def test_pathnorm_json_matches_explicit_vector(model_file):
    net, path = model_file
    res = runner.invoke(app, ["pathnorm", path, "--q", "1", "2", "inf", "0", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    pl = path_lifting(net)
    assert d["n_paths"] == len(pl)
    assert d["path_norms"]["1"] == pytest.approx(pl.norm(1), rel=1e-12)
    assert d["path_norms"]["2"] == pytest.approx(pl.norm(2), rel=1e-12)
    assert d["path_norms"]["inf"] == pytest.approx(pl.norm(math.inf), rel=1e-12)
    assert d["path_norms"]["0"] == pl.norm(0)
    # comma form and the default orders
    d2 = json.loads(runner.invoke(app, ["pathnorm", path, "--q", "1,2", "--json"]).stdout)
    assert set(d2["path_norms"]) == {"1", "2"}
    d3 = json.loads(runner.invoke(app, ["pathnorm", path, "--json"]).stdout)
    assert set(d3["path_norms"]) == {"1", "2", "inf"}
    table = runner.invoke(app, ["pathnorm", path])
    assert table.exit_code == 0 and "path-norm" in table.stdout


def test_pathnorm_torch_file(tmp_path):
    torch = pytest.importorskip("torch")
    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 2, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(2, 1)
    )
    p = tmp_path / "cnn.pt"
    torch.save(model, p)
    res = runner.invoke(app, ["pathnorm", str(p), "--input-shape", "1,4,4", "--q", "1",
                              "--convention", "toolkit", "--json"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout)["path_norms"]["1"]
    assert got == pytest.approx(path_norm(model.double(), 1, input_shape=(1, 4, 4)), rel=1e-6)
    # the default convention: the dense network relulab computes with
    from relulab.io.torch import from_torch

    res = runner.invoke(app, ["pathnorm", str(p), "--input-shape", "1,4,4", "--q", "1", "--json"])
    got = json.loads(res.stdout)["path_norms"]["1"]
    assert got == pytest.approx(path_norm(from_torch(model, (1, 4, 4)), 1), rel=1e-9)
    bad = runner.invoke(app, ["pathnorm", str(p), "--q", "1"])
    assert bad.exit_code != 0


def test_fdim_json(model_file):
    net, path = model_file
    res = runner.invoke(app, ["fdim", path, "--points", "60", "--seed", "3", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    X = -1 + 2 * np.random.default_rng(3).random((60, 3))
    fd = functional_dimension(net, X)
    assert d["rank"] == fd.rank and d["bound"] == net.n_params - net.n_neurons
    assert d["n_points"] == 60
    few = json.loads(
        runner.invoke(app, ["fdim", path, "--points", "5", "--json", "--exact"]).stdout
    )
    assert few["rank"] == few["exact_rank"] <= 10 and few["note"]
    text = runner.invoke(app, ["fdim", path, "--points", "40"])
    assert text.exit_code == 0 and "functional dimension" in text.stdout


def test_bad_input_is_one_line_error(model_file):
    from relulab.cli import main

    _, path = model_file
    with pytest.raises(SystemExit) as e:
        main(["pathnorm", path, "--q", "-3"])
    assert e.value.code == 1
    with pytest.raises(SystemExit) as e:
        main(["fdim", path, "--points", "0"])
    assert e.value.code == 1


def test_fdim_exact_honours_its_time_limit(tmp_path):
    # `fdim --exact` on a 4-40-40-1 network ran past 100 s with nothing printed and no limit
    rng = np.random.default_rng(0)
    big = Network([rng.normal(size=(40, 4)), rng.normal(size=(40, 40)), rng.normal(size=(1, 40))],
                  [rng.normal(size=40), rng.normal(size=40), rng.normal(size=1)])
    fd = functional_dimension(big, rng.normal(size=(100, 4)), exact=True, time_limit=0.5)
    assert fd.exact_rank is None and "ran out of time" in fd.exact_stopped
    assert fd.rank == functional_dimension(big, rng.normal(size=(100, 4))).rank  # still given
    path = tmp_path / "big.npz"
    save_model(big, path)
    res = runner.invoke(app, ["fdim", str(path), "--exact", "--points", "100", "--time-limit", "0.5", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["exact_rank"] is None and "ran out of time" in d["exact_stopped"]
    # a small network finishes: the exact rank agrees with the numerical one, nothing stopped
    small = random_network(np.random.default_rng(1), [2, 3, 1])
    fd = functional_dimension(small, rng.normal(size=(30, 2)), exact=True, time_limit=60)
    assert fd.exact_rank == fd.rank and fd.exact_stopped is None
    res = runner.invoke(app, ["fdim", str(path), "--exact", "--time-limit", "-1"])
    assert res.exit_code == 1 and "--time-limit" in str(res.exception)


def test_fdim_time_limit_needs_exact(tmp_path):
    # --time-limit without --exact was accepted and silently ignored
    path = tmp_path / "n.npz"
    save_model(Network([[[1.0, 2.0], [0.5, -1.0]], [[1.0, 1.0]]], [[0.1, 0.2], [0.0]]), path)
    res = runner.invoke(app, ["fdim", str(path), "--time-limit", "5"])
    assert res.exit_code == 1 and "give --exact" in str(res.exception)


def test_numerical_rank_of_finite_entries_near_the_float_limit():
    # the SVD of finite entries near 1e308 overflowed: sigma_max inf, rank 0
    from relulab.params import numerical_rank

    A = np.full((3, 3), 1e308)
    A[0, 1], A[2, 2] = -1e308, 5e307     # numpy's SVD: sigma_max inf
    info = numerical_rank(A)
    assert info.rank == 3 == np.linalg.matrix_rank(A / 1e308)


def test_fdim_says_a_batch_rank_below_the_bound_is_a_lower_bound(tmp_path):
    """The default points gave 53 on a 2-6-5-3 network where 1000 points give 56: a rank
    below the bound must say that more points can raise it."""
    rng = np.random.default_rng(0)
    net = Network([rng.normal(size=(6, 2)), rng.normal(size=(5, 6)), rng.normal(size=(3, 5))],
                  [rng.normal(size=6), rng.normal(size=5), rng.normal(size=3)])
    path = tmp_path / "n.npz"
    save_model(net, path)
    r = runner.invoke(app, ["fdim", str(path), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["rank"] < d["bound"]   # the case reported (53 of 56 on the default points)
    if d["rank"] < d["bound"]:
        assert "more points can raise it" in (d["note"] or "") and d["rank_is"].startswith("batch")
    else:
        assert d["rank_is"].startswith("the bound")


@pytest.mark.parametrize("skip", [False, True])
def test_fdim_of_an_affine_map_prints_its_own_bound(tmp_path, skip):
    # no hidden layer: the bound is (d + 1) m = 3 (with a skip, W and S duplicate each
    # other); "6 - 0 - 1 (skip) = 3" had been printed, which is not 3
    net = Network([[[1.0, 2.0]]], [[0.5]], ([[3.0, -1.0]], [0.25]) if skip else None)
    path = str(tmp_path / "aff.npz")
    save_model(net, path)
    res = runner.invoke(app, ["fdim", path, "--exact"])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "bound (d + 1) m = 3" in text and "#params" not in text
    # and the rank agrees: an affine map's 3 free numbers, found by the exact rank
    d = json.loads(runner.invoke(app, ["fdim", path, "--exact", "--json"]).stdout)
    assert d["bound"] == d["exact_rank"] == 3


def test_a_point_whose_float_pattern_may_not_be_exact_is_on_a_boundary():
    # neuron 1 is 0.1 x neuron 0 in float: at this point its float pre-activation is <= 0
    # (inactive) but its exact one (of the same float weights) is 1.25e-17, so the float
    # Jacobian is of the neighbouring region; the point must count as on a boundary
    W1 = np.array([[-1.5, -1.5, -0.5], [-0.15, -0.15, -0.05]])
    net = Network([W1, np.array([[-0.5, -0.5]])], [np.array([1.5, 0.15]), np.array([-1.0])])
    x = np.array([[-0.8, 1.7, 0.3]])
    assert net.preactivations(x)[0][0, 1] <= 0.0
    assert net.exact().preactivations(x)[0][0, 1] > 0
    assert functional_dimension(net, x).boundary_points == 1
    assert functional_dimension(net, x, exact=True).boundary_points == 1
    # a point far from every boundary stays off it
    assert functional_dimension(net, np.array([[0.1, 0.2, 0.3]])).boundary_points == 0
