"""Issue 12: what a command prints says exactly what was proved; bad input is refused.

Each test here failed on the code before the fix it names.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from conftest import run_cli as run

from relulab import Box, Network, NetworkError
from relulab.io import save_model


def _abs_net() -> Network:
    return Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|


# ------------------------------------------------------------------ eval / forward
def test_forward_refuses_nan_and_inf_unless_asked():
    net = _abs_net()
    for bad in (np.nan, np.inf, -np.inf):
        with pytest.raises(NetworkError, match="not finite"):
            net(np.array([[0.5], [bad]]))
    assert np.isnan(net(np.array([[np.nan]]), check_finite=False)).all()
    with pytest.raises(NetworkError, match="no exact rational value"):
        net.exact()([float("nan")])


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_eval_refuses_non_finite_input(tmp_path, capsys, value):
    save_model(_abs_net(), tmp_path / "abs.npz")
    code, out, err = run(capsys, "eval", tmp_path / "abs.npz", "--x", "0.5", "--x", value)
    assert code == 1 and out == ""
    assert "input 2" in err and "finite" in err and len(err.strip().splitlines()) == 1


# ------------------------------------------------------------------ equiv
def test_equiv_of_identical_networks_says_identical(tmp_path, capsys):
    save_model(_abs_net(), tmp_path / "a.npz")
    code, out, _ = run(capsys, "equiv", tmp_path / "a.npz", tmp_path / "a.npz")
    assert code == 0 and "equal" in out and "identical" in out
    assert "e-300" not in out
    code, out, _ = run(capsys, "equiv", tmp_path / "a.npz", tmp_path / "a.npz", "--json")
    assert json.loads(out)["upper_bound"] == 0.0


# ------------------------------------------------------------------ reduce
def _unknown_reduce(monkeypatch):
    """Make the reduction's equivalence check end unknown (as a time limit would)."""
    import relulab.symmetry as sym

    real = sym.reduce

    def reduce_unknown(*a, **k):
        r = real(*a, **k)
        return replace(r, check=replace(r.check, status="unknown", message="time limit"))

    monkeypatch.setattr(sym, "reduce", reduce_unknown)


def test_reduce_unverified_writes_nothing_and_exits_3(tmp_path, capsys, monkeypatch):
    padded = Network([[[1.0], [2.0], [1.0], [-1.0]], [[1.0, 0.5, 3.0, 2.0]]],
                     [[0.0, 0.0, -5.0, 4.0], [0.0]])
    save_model(padded, tmp_path / "p.npz")
    code, _, _ = run(capsys, "reduce", tmp_path / "p.npz", "-o", tmp_path / "ok.npz", "--box", "-1:1")
    assert code == 0 and (tmp_path / "ok.npz").exists()   # verified: written, exit 0

    _unknown_reduce(monkeypatch)
    code, out, err = run(capsys, "reduce", tmp_path / "p.npz", "-o", tmp_path / "r.npz", "--box", "-1:1")
    assert code == 3 and not (tmp_path / "r.npz").exists()
    assert "UNVERIFIED" in err and "unknown" in err
    code, out, _ = run(capsys, "reduce", tmp_path / "p.npz", "-o", tmp_path / "r.npz", "--box", "-1:1",
                       "--json")
    d = json.loads(out)
    assert code == 3 and d["verified"] is False and d["out"] is None
    assert not (tmp_path / "r.npz").exists()
    code, _, err = run(capsys, "reduce", tmp_path / "p.npz", "-o", tmp_path / "r.npz", "--box", "-1:1",
                       "--allow-unverified")
    assert code == 3 and (tmp_path / "r.npz").exists() and "UNVERIFIED" in err


# ------------------------------------------------------------------ range
def test_range_labels_a_time_limited_bracket(tmp_path, capsys, monkeypatch):
    import relulab.verify as ver

    net = _abs_net()
    save_model(net, tmp_path / "a.npz")
    code, out, _ = run(capsys, "range", tmp_path / "a.npz", "--box", "-1:2")
    assert code == 0 and "exact output range" in out and "BRACKET" not in out

    real = ver.output_range

    def limited(*a, **k):
        r = real(*a, **k)
        return replace(r, status="time_limit", hi_bound=r.hi + 0.5)   # a bracket, not a value

    monkeypatch.setattr(ver, "output_range", limited)
    code, out, _ = run(capsys, "range", tmp_path / "a.npz", "--box", "-1:2")
    assert code == 0 and "BRACKET" in out and "exact output range" not in out
    assert "2.5" in out                                    # the proven upper bound is shown
    code, out, _ = run(capsys, "range", tmp_path / "a.npz", "--box", "-1:2", "--json")
    d = json.loads(out)
    assert d["status"] == "time_limit" and d["exact"] is False and d["hi_bound"] == [2.5]


def test_range_has_a_default_time_limit(capsys):
    from relulab.cli import app

    cmd = next(c for c in app.registered_commands if c.name == "range")
    import inspect

    default = inspect.signature(cmd.callback).parameters["time_limit"].default.default
    assert default is not None and default > 0


# ------------------------------------------------------------------ fit-convex
def test_fit_convex_says_global_only_for_complete_pattern_lists(tmp_path, capsys):
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(-1, 1, 12))
    (tmp_path / "d1.csv").write_text("\n".join(f"{a},{np.sin(3 * a)}" for a in x))
    code, out, _ = run(capsys, "fit-convex", tmp_path / "d1.csv", "--lam", "0.01")
    assert code == 0 and "GLOBAL optimum" in out and "sampled" not in out

    X = rng.normal(size=(40, 3))
    (tmp_path / "d3.csv").write_text("\n".join(",".join(map(str, row)) + f",{row.sum()}" for row in X))
    code, out, _ = run(capsys, "fit-convex", tmp_path / "d3.csv", "--lam", "0.01", "--max-patterns", "5")
    assert code == 0 and "sampled" in out and "not a global certificate" in out
    assert "GLOBAL" not in out and "dual bound" not in out
    code, out, _ = run(capsys, "fit-convex", "--help")
    assert "Globally optimal" not in out


def test_fit_convex_gated_runs_and_never_claims_a_global_optimum(tmp_path, capsys):
    # --gated printed an AttributeError (GatedFit has no n_patterns); its fit is optimal
    # only among networks with its sampled gates
    rng = np.random.default_rng(1)
    x = np.sort(rng.uniform(-1, 1, 12))
    (tmp_path / "d1.csv").write_text("\n".join(f"{a},{np.sin(3 * a)}" for a in x))
    code, out, _ = run(capsys, "fit-convex", tmp_path / "d1.csv", "--lam", "0.1", "--gated")
    assert code == 0 and "gated-ReLU convex fit" in out and "sampled gates only" in out
    assert "GLOBAL" not in out
    code, out, _ = run(capsys, "fit-convex", tmp_path / "d1.csv", "--lam", "0.1", "--gated", "--json")
    d = json.loads(out)
    assert set(d) == {"converged", "data", "dual_value", "gap", "iterations", "lam", "n_active",
                      "n_gates", "objective", "partial", "seconds", "stopped", "variant"} and d["variant"] == "gated"
    assert d["partial"] is False and d["stopped"] is None     # no time limit given


def test_fit_convex_with_every_pattern_but_unconverged_is_not_called_global(tmp_path, capsys,
                                                                             monkeypatch):
    import relulab.train as tr

    x = np.sort(np.random.default_rng(0).uniform(-1, 1, 12))
    (tmp_path / "d1.csv").write_text("\n".join(f"{a},{np.sin(3 * a)}" for a in x))
    real = tr.convex_fit
    monkeypatch.setattr(tr, "convex_fit", lambda *a, **k: replace(real(*a, **k), converged=False))
    code, out, _ = run(capsys, "fit-convex", tmp_path / "d1.csv", "--lam", "0.01")
    assert code == 0 and "GLOBAL" not in out and "NOT a certified optimum" in out
    code, out, _ = run(capsys, "fit-convex", tmp_path / "d1.csv", "--lam", "0.01", "--json")
    d = json.loads(out)
    assert d["all_patterns"] is True and d["global_optimum"] is False


# ------------------------------------------------------------------ verify-batch
def test_verify_batch_counts_errors_apart_and_gives_reasons(tmp_path, capsys):
    from relulab.io.vnnlib import format_vnnlib
    from relulab.spec import OutputConstraint, Property, Specification

    save_model(_abs_net(), tmp_path / "net.npz")
    spec = Specification(Box([-1], [1]), [OutputConstraint(np.array([[1.0]]), np.array([-1.0]))])
    (tmp_path / "p.vnnlib").write_text(format_vnnlib(Property([spec])))
    (tmp_path / "inst.csv").write_text("net.npz,p.vnnlib,10\nmissing.npz,p.vnnlib,10\n")
    code, out, _ = run(capsys, "verify-batch", tmp_path / "inst.csv", "--workers", "1", "--json")
    d = json.loads(out)
    assert code == 0
    assert [r["status"] for r in d["instances"]] == ["holds", "error"]
    assert sum(s["errors"] for s in d["summary"]) == 1
    assert sum(s["unknown"] for s in d["summary"]) == 0
    code, out, _ = run(capsys, "verify-batch", tmp_path / "inst.csv", "--workers", "1")
    assert code == 0 and "missing" in out and "error:" in out
    table = out[: out.index("error:")].splitlines()        # the reasons follow the table
    assert table and max(len(line) for line in table) <= 80


# ------------------------------------------------------------------ --version
def test_version(capsys):
    import relulab

    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"relulab {relulab.__version__}"


# ------------------------------------------------------------------ torch files, path-norms
@pytest.fixture
def cnn_files(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                            torch.nn.Flatten(), torch.nn.Linear(8, 2))
    torch.save(m, tmp_path / "bare.pt")
    torch.save({"model": m, "input_shape": (1, 6, 6)}, tmp_path / "dict.pt")
    return tmp_path


def test_every_command_accepts_the_same_torch_files(cnn_files, capsys):
    d = cnn_files
    code, _, err = run(capsys, "info", d / "bare.pt")
    assert code == 1 and "--input-shape" in err and len(err.strip().splitlines()) == 1
    for args in (["info", d / "dict.pt"], ["--input-shape", "1,6,6", "info", d / "bare.pt"],
                 ["pathnorm", d / "dict.pt"], ["--input-shape", "1,6,6", "pathnorm", d / "bare.pt"],
                 ["pathnorm", d / "bare.pt", "--input-shape", "1,6,6"],
                 ["eval", d / "dict.pt", "--x", ",".join(["0.5"] * 36)]):
        code, _, err = run(capsys, *args)
        assert code == 0, (args, err)


def test_pathnorm_convention_is_one_by_default_and_named(cnn_files, capsys):
    d = cnn_files
    code, _, _ = run(capsys, "convert", d / "dict.pt", d / "cnn.onnx")
    assert code == 0
    _, out, _ = run(capsys, "pathnorm", d / "dict.pt", "--json")
    pt = json.loads(out)
    _, out, _ = run(capsys, "pathnorm", d / "cnn.onnx", "--json")
    ox = json.loads(out)
    assert pt["convention"] == ox["convention"] == "network"
    for q in ("1", "2", "inf"):                       # a model and its export agree
        assert abs(pt["path_norms"][q] - ox["path_norms"][q]) <= 1e-9 * (1 + abs(ox["path_norms"][q]))
    _, out, _ = run(capsys, "pathnorm", d / "dict.pt", "--convention", "toolkit", "--json")
    tk = json.loads(out)
    assert tk["convention"] == "toolkit"
    assert tk["path_norms"]["1"] < pt["path_norms"]["1"]   # max pooling as a sum: another number
    code, out, _ = run(capsys, "pathnorm", d / "dict.pt")
    assert "convention: network" in out
    code, _, err = run(capsys, "pathnorm", d / "cnn.onnx", "--convention", "toolkit")
    assert code == 1 and "torch file" in err


# ------------------------------------------------------------------ plots
def test_every_plot_has_axis_labels(tmp_path, capsys):
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    import matplotlib.pyplot as plt

    from relulab import plot, regions
    from relulab.examples import load_example

    net = load_example("tiny_2d")
    rs = regions.enumerate(net, Box([-1, -1], [1, 1]))
    G = regions.graph(rs)
    figs = [plot.regions2d(net), plot.regions2d(net, origin=[0, 0], u=[1, 1], v=[-1, 1]),
            plot.function1d(net, a=[-1, -1], b=[1, 1]), plot.region_graph(G),
            plot.region_graph(G, layout="spring")]
    for fig in figs:
        for ax in fig.axes:
            if ax.axison:
                assert ax.get_xlabel() and ax.get_ylabel(), ax.get_title()
        plt.close(fig)
    code, _, _ = run(capsys, "fit-minnorm", "example:data_1d.csv", "--plot", tmp_path / "f.png")
    assert code == 0 and (tmp_path / "f.png").stat().st_size > 0


def test_messages_show_values_not_numpy_reprs(capsys):
    code, _, err = run(capsys, "range", "example:tiny_2d.onnx", "--box", "1:0")
    assert code == 1 and "np.float64" not in err and "lower bound 1 > upper bound 0" in err
