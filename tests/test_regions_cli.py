"""The `relulab regions` command."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import random_network

from relulab import regions
from relulab.cli import main
from relulab.io import save_model


def _run(capsys, args):
    try:
        main(args)
        code = 0
    except SystemExit as e:
        code = e.code
    return code, capsys.readouterr()


def test_regions_command_json(tmp_path, capsys):
    net = random_network(np.random.default_rng(3), [2, 7, 5, 1])
    p = tmp_path / "m.npz"
    save_model(net, p)
    png = tmp_path / "r.png"
    code, out = _run(capsys, ["regions", str(p), "--box", "-1:1,-0.5:2", "--graph",
                              "--plot", str(png), "--json"])
    assert code == 0
    res = json.loads(out.out)
    from relulab import Box

    rs = regions.enumerate(net, Box([-1, -0.5], [1, 2]))
    assert res["regions"] == len(rs)
    assert res["graph"]["edges"] == regions.graph(rs).number_of_edges()
    assert png.stat().st_size > 0
    code, out = _run(capsys, ["regions", str(p), "--count", "--json"])
    assert code == 0 and json.loads(out.out)["regions"] == regions.count(net)
    code, out = _run(capsys, ["regions", str(p), "--count"])
    assert code == 0 and f"{regions.count(net)} linear regions" in out.out


def test_regions_command_errors(tmp_path, capsys):
    net = random_network(np.random.default_rng(3), [3, 4, 1])
    p = tmp_path / "m.npz"
    save_model(net, p)
    code, out = _run(capsys, ["regions", str(p), "--box", "0:1,0:1"])
    assert code == 1 and "--box" in out.err
    code, out = _run(capsys, ["regions", str(p), "--plot", str(tmp_path / "x.png")])
    assert code == 1 and "--plot" in out.err


def test_tour_section():
    from rich.console import Console

    from relulab.cli.regions import tour

    c = Console(record=True, width=120)
    tour(c)
    text = c.export_text()
    assert "regions" in text and "average degree" in text


def test_a_partial_enumeration_is_not_certified(tmp_path, capsys):
    """Cut short by --max-regions, the JSON says partial and not certified (the count is
    a lower bound), while the complete run is certified."""
    net = random_network(np.random.default_rng(3), [2, 7, 5, 1])
    p = tmp_path / "m.npz"
    save_model(net, p)
    code, out = _run(capsys, ["regions", str(p), "--box", "-1:1", "--max-regions", "3", "--json"])
    res = json.loads(out.out)
    assert code == 0 and res["partial"] is True and res["certified"] is False
    from relulab import Box

    assert res["regions"] < regions.count(net, Box([-1, -1], [1, 1]))
    code, out = _run(capsys, ["regions", str(p), "--box", "-1:1", "--json"])
    res = json.loads(out.out)
    assert res["partial"] is False and res["certified"] is True
    # the stop is named, and --count says the same
    code, out = _run(capsys, ["regions", str(p), "--box", "-1:1", "--max-regions", "3", "--json"])
    assert json.loads(out.out)["stopped"] == "--max-regions 3"
    code, out = _run(capsys, ["regions", str(p), "--box", "-1:1", "--max-regions", "3", "--count", "--json"])
    res = json.loads(out.out)
    assert res["partial"] is True and res["certified"] is False and res["stopped"] == "--max-regions 3"
    code, out = _run(capsys, ["regions", str(p), "--box", "-1:1", "--count", "--json"])
    res = json.loads(out.out)
    assert res["partial"] is False and res["certified"] is True and res["stopped"] is None


def test_list_needs_json_and_the_plot_says_what_it_shows(tmp_path, capsys):
    net = random_network(np.random.default_rng(3), [2, 7, 5, 1])
    p = tmp_path / "m.npz"
    save_model(net, p)
    code, out = _run(capsys, ["regions", str(p), "--list"])
    assert code == 1 and "--json" in out.err
    png = tmp_path / "w.png"
    code, out = _run(capsys, ["regions", str(p), "--whole-space", "--plot", str(png), "--json"])
    res = json.loads(out.out)
    assert code == 0 and res["domain"] == "R^d" and "[-1, 1]" in res["plot_note"]
    code, out = _run(capsys, ["regions", str(p), "--max-regions", "2", "--plot", str(png), "--json"])
    assert "not only the --max-regions found" in json.loads(out.out)["plot_note"]
    # a time limit cut: the picture (a complete enumeration) is not drawn, and the note
    # names that stop, not --max-regions
    code, out = _run(capsys, ["regions", str(p), "--time-limit", "0.000001", "--plot", str(png), "--json"])
    res = json.loads(out.out)
    assert code == 0 and res["partial"] and "time-limit" in res["plot_note"] and res["plot"] is None
    assert "--max-regions" not in res["plot_note"]


@pytest.mark.parametrize("argv", [
    ["regions", "example:tiny_2d.onnx", "--count", "--workers", "100000"],
    ["regions", "example:tiny_2d.onnx", "--workers", "5000"],
])
def test_a_huge_worker_count_is_refused_at_once(capsys, argv):
    # --workers 100000 split the box into 400,000 cells first: silent until killed
    from conftest import run_cli

    code, out, err = run_cli(capsys, *argv)
    assert code == 1 and "--workers must be between 1 and 1024" in err


def test_cell_counts_beyond_the_cap_are_refused_by_the_library():
    from relulab import Box, regions
    from relulab.errors import RelulabError
    from relulab.examples import load_example

    net = load_example("tiny_2d.onnx")
    for call in (lambda: regions.count(net, Box([-1, -1], [1, 1]), parallel="local", workers=1, cells=10**6),
                 lambda: regions.enumerate(net, Box([-1, -1], [1, 1]), parallel="local", workers=1,
                                           cells=10**6)):
        with pytest.raises(RelulabError, match="cells must be between 1 and 4096"):
            call()


def test_graph_of_a_partial_enumeration_says_its_diameter_is_undefined(tmp_path, capsys):
    from conftest import run_cli

    rng = np.random.default_rng(5)
    d = [3, 6, 6, 1]
    from relulab import Network

    net = Network([rng.normal(size=(d[i + 1], d[i])) for i in range(3)],
                  [rng.normal(size=d[i + 1]) * 0.5 for i in range(3)])
    path = tmp_path / "n3.npz"
    save_model(net, path)
    code, out, err = run_cli(capsys, "regions", str(path), "--graph", "--max-regions", "5", "--json")
    g = json.loads(out)["graph"]
    assert g["connected"] is False and g["diameter"] is None  # 5 of its regions: not connected
    code, out, err = run_cli(capsys, "regions", str(path), "--graph", "--max-regions", "5")
    assert code == 0 and "None" not in out and "undefined (not connected)" in out
