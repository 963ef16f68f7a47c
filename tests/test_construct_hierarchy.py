"""The depth-hierarchy target F_(d,k): network = formula exactly, k hidden layers of width
<= 3d, 1-Lipschitz and [0, 1]-valued (measured on its regions), region count against
the closed-form count of its arrangement, parity on the lattice; CLI kinds."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

import numpy as np
import pytest
from typer.testing import CliRunner

from relulab.cli import app
from relulab.construct import (
    ConstructionError,
    hierarchy_network,
    hierarchy_report,
    hierarchy_scale,
    hierarchy_value,
    shallow_width_bound,
)


@pytest.mark.parametrize(("d", "k"), [(1, 2), (2, 2), (2, 4), (3, 3), (5, 2), (6, 3)])
def test_network_equals_formula(d: int, k: int) -> None:
    rng = np.random.default_rng(d * 10 + k)
    net = hierarchy_network(d, k)
    assert net.n_hidden_layers == k and max(net.widths) == 3 * d and net.depth == k + 1
    L, c = hierarchy_scale(d, k), 2 ** d
    X = [[c + Fraction(int(v), 89) for v in rng.integers(-150, 89 * L + 150, d)] for _ in range(300)]
    Y = net(np.array(X, dtype=object)).ravel()
    for x, y in zip(X, Y, strict=True):
        assert y == hierarchy_value(x, k)
        assert 0 <= y <= 1


@pytest.mark.parametrize(("d", "k"), [(1, 3), (2, 2), (2, 3), (3, 2), (3, 3)])
def test_regions_lipschitz_range(d: int, k: int) -> None:
    r = hierarchy_report(d, k)
    # each coordinate has 2^(k-1) linear pieces; the zigzag's d - 1 kinks cut every cell
    # of that grid into d slabs
    assert r.regions == d * 2 ** ((k - 1) * d)
    assert r.max_gradient_norm <= 1 + 1e-12
    assert r.value_range == (0.0, 1.0)


def test_parity_on_the_lattice() -> None:
    d, k = 4, 3
    L, c = hierarchy_scale(d, k), 2 ** d
    # S_(k-1) is 0 at t = 0 and 1 at t = 1/4 (k = 3: two teeth)
    for bits in itertools.product((0, 1), repeat=d):
        x = [c + Fraction(L * b, 4) for b in bits]
        assert hierarchy_value(x, k) == sum(bits) % 2
        assert hierarchy_network(d, k)([x])[0] == sum(bits) % 2


def test_width_bound_and_errors() -> None:
    assert shallow_width_bound(10, 2) == 51 and shallow_width_bound(3, 2) == 1
    for d, k in [(0, 2), (2, 1), (2.5, 2), (True, 3)]:
        with pytest.raises(ConstructionError):
            hierarchy_network(d, k)


def test_cli_refine_and_hierarchy(tmp_path) -> None:
    runner = CliRunner()
    out = tmp_path / "f.onnx"
    res = runner.invoke(app, ["construct", "refine", "--mask", "four-point", "--steps", "3", "--seed", "hat",
                              "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["check"].startswith("exact at") and d["hidden_layers"] == 12 and out.exists()
    res = runner.invoke(app, ["construct", "hierarchy", "--d", "2", "--k", "3", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["regions"] == 32
    for argv in (["construct", "refine", "--mask", "1,1,1", "--steps", "2"],
                 ["construct", "refine", "--mask", "nope", "--steps", "2"],
                 ["construct", "refine", "--mask", "hat", "--steps", "2", "--seed", "box"],
                 ["construct", "hierarchy", "--d", "2", "--k", "1"]):
        res = runner.invoke(app, argv)
        assert res.exit_code == 1


def test_cli_hierarchy_warns_about_its_float_copy_past_d_30() -> None:
    # the 2^d offset sits in the biases: 4e-3 off at d = 45, 0.98 at d = 55, unsaid
    runner = CliRunner()
    big = json.loads(runner.invoke(app, ["construct", "hierarchy", "--d", "31", "--k", "2", "--json"]).stdout)
    assert "2^31" in big["float64_warning"]
    small = json.loads(runner.invoke(app, ["construct", "hierarchy", "--d", "2", "--k", "3", "--json"]).stdout)
    assert "float64_warning" not in small
