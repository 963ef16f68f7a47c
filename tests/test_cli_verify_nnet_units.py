"""`relulab verify --nnet-units`: an .nnet file holds two functions, its raw one (clip,
normalise, run, de-normalise) and the bare network on normalised units, on which the
VNN-COMP ACAS Xu properties are stated.  The command verifies the one asked for and says
which one it read.  Independent check: the NNetModel's own evaluation on a grid."""

from __future__ import annotations

import json

import numpy as np
from typer.testing import CliRunner

from relulab import Network
from relulab.cli import app
from relulab.io.nnet import NNetModel, write_nnet

PROP = "(declare-const X_0 Real)\n(declare-const Y_0 Real)\n" \
       "(assert (>= X_0 0.0))\n(assert (<= X_0 1.0))\n(assert (>= Y_0 0.5))\n"


def _files(tmp_path):
    # y = x on normalised units; raw inputs are normalised by (x - 10) / 2
    ident = Network([np.array([[1.0], [-1.0]]), np.array([[1.0, -1.0]])], [np.zeros(2), np.zeros(1)])
    model = NNetModel(ident, [-100.0], [100.0], [10.0], [2.0], 0.0, 1.0)
    write_nnet(model, tmp_path / "m.nnet")
    (tmp_path / "p.vnnlib").write_text(PROP)
    return model, str(tmp_path / "m.nnet"), str(tmp_path / "p.vnnlib")


def _status(args):
    r = CliRunner().invoke(app, ["verify", *args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_the_two_readings_of_an_nnet_file_are_verified_as_asked(tmp_path):
    model, nnet, prop = _files(tmp_path)
    grid = np.linspace(0.0, 1.0, 101)[:, None]
    raw_max = float(model.evaluate(grid).max())           # (x - 10) / 2 <= -4.5
    normalised_max = float(model.network(grid).max())     # x, up to 1
    assert raw_max < 0.5 <= normalised_max
    raw = _status([nnet, prop])
    assert raw["status"] == "holds"
    normalised = _status([nnet, prop, "--nnet-units", "normalised"])
    assert normalised["status"] == "violated"
    x = np.array(normalised["counterexample"], dtype=float)
    assert model.network(x[None])[0, 0] >= 0.5


def test_the_text_output_says_which_reading_was_verified(tmp_path):
    _, nnet, prop = _files(tmp_path)
    r = CliRunner().invoke(app, ["verify", nnet, prop])
    assert r.exit_code == 0 and "raw units" in r.output and "--nnet-units normalised" in r.output
    r = CliRunner().invoke(app, ["verify", nnet, prop, "--nnet-units", "normalised"])
    assert r.exit_code == 0 and "raw units" not in r.output


def test_a_bad_units_word_is_refused_by_name(tmp_path):
    _, nnet, prop = _files(tmp_path)
    r = CliRunner().invoke(app, ["verify", nnet, prop, "--nnet-units", "meters"])
    assert r.exit_code != 0 and "--nnet-units" in r.output + str(r.exception)
