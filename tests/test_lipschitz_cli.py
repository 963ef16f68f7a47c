"""The `relulab lipschitz` command."""

from __future__ import annotations

import json

import numpy as np
from conftest import random_network, run_cli

from relulab import Box
from relulab.io import save_model
from relulab.lipschitz import lipschitz


def test_lipschitz_command_json_matches_library(tmp_path, capsys):
    net = random_network(np.random.default_rng(4), [2, 6, 4, 1])
    path = tmp_path / "m.npz"
    save_model(net, path)
    code, out, err = run_cli(capsys, "lipschitz", path, "--box", "-1:1,-0.5:2", "--p", "1,inf",
                             "--p", "2", "--json")
    assert code == 0, err
    res = json.loads(out)["results"]
    assert [r["p"] for r in res] == [1.0, "inf", 2.0]
    for r, p in zip(res, (1.0, np.inf, 2.0), strict=True):
        want = lipschitz(net, Box([-1, -0.5], [1, 2]), p=p)
        assert r["status"] == want.status == "exact"
        assert abs(r["lower"] - want.lower) <= 1e-9 * want.lower
    code, out, err = run_cli(capsys, "lipschitz", path, "--p", "inf", "--method", "milp")
    assert code == 0 and "exact" in out and "R^d" in out


def test_lipschitz_command_errors(tmp_path, capsys):
    net = random_network(np.random.default_rng(5), [2, 3, 2])
    path = tmp_path / "v.npz"
    save_model(net, path)
    code, out, err = run_cli(capsys, "lipschitz", path, "--p", "0.5")
    assert code == 1 and "p >= 1" in err and len(err.strip().splitlines()) == 1
    code, out, err = run_cli(capsys, "lipschitz", path, "--box", "1:0")
    assert code == 1 and "empty box" in err
    code, out, err = run_cli(capsys, "lipschitz", path, "--p", "2", "--q", "2", "--method", "milp")
    assert code == 1 and "milp" in err
