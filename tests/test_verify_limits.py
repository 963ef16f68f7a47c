"""Time and memory limits of the verifier and of `range`, in every phase.

Time is asserted only by the one timed test of test_verify_relubab.py; here every phase
(input splitting, MILP, ReLU splitting) cut short by its timeout must answer ``unknown``
with the reason "timeout" (never a guess), a tiny memory budget must end ``unknown``
with a "memory: ..." reason through the library and the command line (the process goes
on), and a time-limited range must still bracket the exact maximum.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import run_cli

from relulab import Box, Network
from relulab.bounds import crown_batch, float_layers
from relulab.io import save_model
from relulab.io.vnnlib import format_vnnlib
from relulab.limits import ResourceLimitError, check_bytes, memory_budget, memory_limit
from relulab.spec import OutputConstraint, Property, Specification
from relulab.verify import maximize, output_range, verify


def _net(rng, dims, bscale=0.3):
    Ws = [rng.normal(size=(dims[k + 1], dims[k])) / np.sqrt(dims[k]) for k in range(len(dims) - 1)]
    bs = [rng.normal(size=dims[k + 1]) * bscale for k in range(len(dims) - 1)]
    return Network(Ws, bs)


def _hard(dim: int, seed: int = 3):
    """A property far from decided in a second: the threshold sits 5% of the way from the
    sampled maximum to the CROWN bound (too high for the attack, too low for the bounds)."""
    rng = np.random.default_rng(seed)
    net = _net(rng, [dim, 60, 60, 60, 1], 0.1)
    box = Box(-np.ones(dim), np.ones(dim))
    smax = float(net(box.sample(20000, rng)).max())
    Ws, bs, _ = float_layers(net)
    _, low = crown_batch(Ws, bs, box.lo[None], box.hi[None], C=np.array([[-1.0]]))
    thr = smax + 0.05 * (-low[0, 0] - smax)
    return net, Specification(box, [OutputConstraint(np.array([[-1.0]]), np.array([-thr]))])


@pytest.mark.parametrize("method", ["input-split", "milp", "relu-split"])
def test_every_phase_ends_unknown_timeout(method):
    net, spec = _hard(8)
    r = verify(net, spec, timeout=1.0, method=method, engine="numpy")
    assert (r.status, r.reason) == ("unknown", "timeout")
    assert r.method == method and r.to_dict()["reason"] == "timeout"


def test_memory_budget_context_and_errors():
    with memory_limit(4096):
        assert memory_budget() == 4096
        with pytest.raises(ResourceLimitError, match="budget"):
            check_bytes(10**6, "an array")
    assert memory_budget() != 4096
    with pytest.raises(Exception, match="positive"):
        with memory_limit(0):
            pass


def _files(tmp_path, net, spec):
    save_model(net, tmp_path / "net.npz")
    (tmp_path / "p.vnnlib").write_text(format_vnnlib(Property([spec])))
    (tmp_path / "inst.csv").write_text("net.npz,p.vnnlib,20\n")


def test_cli_verify_and_batch_with_a_tiny_memory_budget(tmp_path, capsys):
    net, spec = _hard(12)
    _files(tmp_path, net, spec)
    code, out, err = run_cli(capsys, "verify", str(tmp_path / "net.npz"), str(tmp_path / "p.vnnlib"),
                             "--memory", "1e-6", "--timeout", "20", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["status"] == "unknown" and d["reason"].startswith("memory:") and d["result"] == "unknown"
    code, out, err = run_cli(capsys, "verify-batch", str(tmp_path / "inst.csv"), "--workers", "1",
                             "--memory", "1e-6", "--json")
    assert code == 0, err
    row = json.loads(out)["instances"][0]
    assert row["status"] == "unknown" and row["reason"].startswith("memory:")
    # the budget was the instance's: nothing leaks into this process
    assert memory_budget() > 2**20
    code, out, err = run_cli(capsys, "verify", str(tmp_path / "net.npz"), str(tmp_path / "p.vnnlib"),
                             "--memory", "-1")
    assert code == 1 and "--memory" in err


def test_range_with_a_time_limit_brackets_the_exact_maximum(capsys, tmp_path):
    rng = np.random.default_rng(8)
    net = _net(rng, [20, 12, 10, 2])
    box = Box(-np.ones(20), np.ones(20))
    exact = output_range(net, box)
    assert exact.status == "optimal"
    quick = maximize(net, box, np.array([1.0, 0.0]), time_limit=0.01)
    assert quick.value <= exact.hi[0] + 1e-9 and quick.upper_bound >= exact.hi[0] - 1e-9
    r = output_range(net, box, time_limit=0.05)
    assert np.all(r.hi_bound >= exact.hi - 1e-9) and np.all(r.hi <= exact.hi + 1e-9)
    assert np.all(r.lo_bound <= exact.lo + 1e-9) and np.all(r.lo >= exact.lo - 1e-9)
    save_model(net, tmp_path / "n.npz")
    code, out, err = run_cli(capsys, "range", str(tmp_path / "n.npz"), "--box", "-1:1",
                             "--timeout", "30", "--json")
    assert code == 0, err
    assert np.allclose(json.loads(out)["hi"], exact.hi, atol=1e-6)
    # a budget no MILP fits in: unknown with the memory reason (exit 0), and the bracket
    # from the bounds and a local search still contains the exact range
    code, out, err = run_cli(capsys, "range", str(tmp_path / "n.npz"), "--box", "-1:1",
                             "--memory", "1e-9", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["status"] == "unknown" and d["reason"].startswith("memory:") and d["exact"] is False
    _assert_brackets(d, exact, net, box)
    code, out, err = run_cli(capsys, "range", str(tmp_path / "n.npz"), "--box", "-1:1",
                             "--memory", "1e-9")
    assert code == 0 and "BRACKET" in out and "memory" in out


def _assert_brackets(d, exact, net, box):
    lo, hi = np.array(d["lo"]), np.array(d["hi"])
    assert np.all(np.array(d["lo_bound"]) <= exact.lo + 1e-9) and np.all(lo >= exact.lo - 1e-9)
    assert np.all(np.array(d["hi_bound"]) >= exact.hi - 1e-9) and np.all(hi <= exact.hi + 1e-9)
    # the values found are attained at the reported inputs (inside the box)
    amin, amax = np.array(d["argmin"]), np.array(d["argmax"])
    assert np.all(box.contains(amin)) and np.all(box.contains(amax))
    assert np.allclose(np.diag(net(amin)), lo) and np.allclose(np.diag(net(amax)), hi)


def test_output_range_over_budget_is_unknown_with_a_sound_bracket():
    rng = np.random.default_rng(11)
    net = _net(rng, [6, 10, 8, 2])
    box = Box(-np.ones(6), np.ones(6))
    exact = output_range(net, box)
    with memory_limit(64):  # 64 bytes: no MILP fits
        r = output_range(net, box, time_limit=5.0)
    assert r.status == "unknown" and r.reason.startswith("memory:")
    _assert_brackets(r.to_dict(), exact, net, box)


def test_cli_verify_when_the_model_itself_exceeds_the_budget(tmp_path, capsys, monkeypatch):
    """Loading that would exceed --memory (a dense lowering) ends unknown, exit 0."""
    import relulab.verify as rv

    net, spec = _hard(12)
    _files(tmp_path, net, spec)

    def too_big(path, structured=None):
        check_bytes(10.0**15, "the dense form of this model")

    monkeypatch.setattr(rv, "load_for_verify", too_big)
    code, out, err = run_cli(capsys, "verify", str(tmp_path / "net.npz"), str(tmp_path / "p.vnnlib"),
                             "--memory", "1", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert (d["status"], d["result"], d["method"]) == ("unknown", "unknown", "load")
    assert d["reason"].startswith("memory:")
    code, out, err = run_cli(capsys, "verify-batch", str(tmp_path / "inst.csv"), "--workers", "1",
                             "--memory", "1", "--json")
    assert code == 0, err
    row = json.loads(out)["instances"][0]
    assert row["status"] == "unknown" and row["reason"].startswith("memory:")


def test_maximize_past_its_time_limit_keeps_the_symbolic_bound(acasxu_dir):
    """With a limit that ends before the MILP or the branch and bound bound anything (ACAS
    Xu 3_3 at 0.02 s), the proven bound of an output was +inf although the CROWN bound
    (2708.7 there) was at hand."""
    from relulab.io import load_model
    from relulab.verify import output_range

    net = load_model(acasxu_dir / "onnx" / "ACASXU_run2a_3_3_batch_2000.onnx")
    box = Box([-0.3, -0.5, -0.5, -0.5, -0.5], [0.3, 0.5, 0.5, 0.5, 0.5])
    X = np.random.default_rng(0).uniform(box.lo, box.hi, size=(20000, 5))
    Y = net(X)
    for _ in range(3):
        rr = output_range(net, box, time_limit=0.02)
        assert np.all(np.isfinite(rr.hi_bound)) and np.all(np.isfinite(rr.lo_bound))
        assert np.all(rr.hi_bound >= Y.max(0)) and np.all(rr.lo_bound <= Y.min(0))


def test_input_splitting_maximum_bounds_the_root_even_after_its_deadline():
    """_bab_max handed a deadline that has passed returned +inf (no box bounded)."""
    import time

    from relulab.verify.milp import _bab_max

    rng = np.random.default_rng(1)
    net = Network([rng.normal(size=(8, 2)), rng.normal(size=(1, 8))], [rng.normal(size=8), [0.0]])
    box = Box(-np.ones(2), np.ones(2))
    ub, x, v = _bab_max(net, box, np.array([1.0]), deadline=time.time() - 1.0)
    X = rng.uniform(-1, 1, size=(20000, 2))
    assert np.isfinite(ub) and ub >= net(X)[:, 0].max() and v <= ub


def test_memory_budget_stays_inside_the_address_space_limit():
    """Under `ulimit -v` the budget came from MemAvailable alone, and a count died on a
    raw MemoryError: it must stay below the address space the process may still take."""
    import subprocess
    import sys

    code = ("import resource; resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30)); "
            "from relulab.limits import memory_budget; print(memory_budget())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert 0 < int(out.stdout.strip()) < 3 * 2**30


def test_maximize_skips_the_milp_when_no_time_is_left(monkeypatch):
    # HiGHS's MIP presolve does not look at the clock (0.55 s under a 1 ms limit on an
    # 800 x 800 network): with the time spent, the bracket comes from the rest, and it
    # still holds the maximum (dense evaluation)
    import time

    import relulab.lp as lp_mod
    import relulab.verify.milp as milp_mod

    rng = np.random.default_rng(0)
    net = Network([rng.normal(size=(8, 3)), rng.normal(size=(1, 8))], [rng.normal(size=8), [0.0]])
    box = Box(-np.ones(3), np.ones(3))
    real_tol, real_solve = milp_mod.sound_tolerances, lp_mod.LPModel.solve
    mips = []

    def slow_tol(model, *a, **k):
        if model._is_mip:
            time.sleep(0.4)
        return real_tol(model, *a, **k)

    def solve(self, *a, **k):
        if self._is_mip:
            mips.append(1)
        return real_solve(self, *a, **k)

    monkeypatch.setattr(milp_mod, "sound_tolerances", slow_tol)
    monkeypatch.setattr(lp_mod.LPModel, "solve", solve)
    r = maximize(net, box, np.array([1.0]), time_limit=0.3)
    assert mips == [] and r.status == "time_limit"
    X = box.sample(20000, np.random.default_rng(1))
    assert r.bound >= net(X).max() and r.value == pytest.approx(float(net(r.x[None])[0, 0]))
