"""Proven bounds when outputs are small (weights near 1e-6): HiGHS's tolerances are
absolute, so LP and MILP "optima" can sit on the wrong side of the true optimum unless
the objective is scaled and the LP bound is taken from its duals."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import run_cli as run

from relulab import Box, Network
from relulab.bounds import linear_bounds, symbolic_bounds
from relulab.domain import Polytope
from relulab.errors import RelulabError
from relulab.lp import LPModel, LPResult
from relulab.verify import maximize, minimize, output_range


def _layers(rng, widths, tiny_from: int):
    Ws, bs = [], []
    for k in range(len(widths) - 1):
        W, b = rng.normal(size=(widths[k + 1], widths[k])), rng.normal(size=widths[k + 1]) * 0.5
        if k >= tiny_from:
            W, b = W * 1e-6, b * 1e-6
        Ws.append(W)
        bs.append(b)
    return Network(Ws, bs)


def _polytope_instance(seed: int):
    rng = np.random.default_rng(seed)
    widths = [2] + [int(rng.integers(2, 7)) for _ in range(int(rng.integers(1, 4)))] + [int(rng.integers(1, 3))]
    net = _layers(rng, widths, tiny_from=int(rng.integers(1, len(widths) - 1)))
    lo = rng.uniform(-2, 0, size=2)
    hi = lo + rng.uniform(0.1, 3, size=2)
    a = rng.normal(size=2)
    mid = float(a @ (lo + hi) / 2) + 0.1 * float(np.abs(a).sum())
    P = Polytope(np.vstack([np.eye(2), -np.eye(2), a[None]]), np.concatenate([hi, -lo, [mid]]))
    X = rng.uniform(lo, hi, size=(20000, 2))
    return net, P, X[X @ a <= mid]


def test_symbolic_and_linear_bounds_over_polytopes_contain_every_sampled_output() -> None:
    # before: 6 of these 150 networks got an upper bound below outputs inside the polytope
    # (up to 1 % off), from a warm-started LP that HiGHS called optimal
    for seed in range(150):
        net, P, X = _polytope_instance(seed)
        Y = net(X)
        slack = 1e-13 * np.abs(Y).max(axis=0)
        b = symbolic_bounds(net, P)
        assert np.all(b.out_hi >= Y.max(axis=0) - slack) and np.all(b.out_lo <= Y.min(axis=0) + slack), seed
        m = net.output_dim
        low = linear_bounds(net, P, np.vstack([np.eye(m), -np.eye(m)]))
        assert np.all(-low[m:] >= Y.max(axis=0) - slack) and np.all(low[:m] <= Y.min(axis=0) + slack), seed


def test_milp_optima_of_small_outputs_bracket_every_sampled_value() -> None:
    # before: 26 of these 60 networks (last layers of 1e-6) came back "optimal" with the
    # proven bound on the wrong side of values the network takes
    for seed in range(60):
        rng = np.random.default_rng(seed)
        widths = [2] + [int(rng.integers(2, 6)) for _ in range(int(rng.integers(1, 3)))] + [1]
        net = _layers(rng, widths, tiny_from=max(1, len(widths) - 3))
        lo = rng.uniform(-2, 0, size=2)
        box = Box(lo, lo + rng.uniform(0.1, 3, size=2))
        y = net(box.sample(20000, rng))[:, 0]
        slack = 1e-13 * float(np.abs(y).max())
        top, bottom = maximize(net, box), minimize(net, box)
        assert top.value <= top.upper_bound and top.upper_bound >= y.max() - slack, seed
        assert bottom.lower_bound <= bottom.value and bottom.lower_bound <= y.min() + slack, seed


def test_the_lp_proven_bound_is_below_every_feasible_point_and_tight() -> None:
    rng = np.random.default_rng(3)
    for trial in range(200):
        n, m = int(rng.integers(2, 7)), int(rng.integers(1, 8))
        A = rng.normal(size=(m, n))
        x0 = rng.uniform(-1, 1, n)
        b = A @ x0 + rng.uniform(0, 1, m)
        c = rng.normal(size=n) * 10.0 ** int(rng.integers(-9, 4))
        sense = bool(rng.integers(2))
        model = LPModel(c, A_ub=A, b_ub=b, lb=-2 * np.ones(n), ub=2 * np.ones(n), maximize=sense)
        r = model.solve()
        bound = model.proven_bound(r)
        # feasible points (x0 and points towards it) never beat the bound
        X = x0 + rng.uniform(-1, 1, (500, n)) * rng.uniform(0, 1, (500, 1))
        X = X[np.all(X @ A.T <= b, axis=1) & np.all(np.abs(X) <= 2, axis=1)]
        vals = X @ c
        if sense:
            assert np.all(vals <= bound) and bound >= r.objective, trial
        else:
            assert np.all(vals >= bound) and bound <= r.objective, trial
        assert abs(bound - r.objective) <= 1e-9 * float(np.abs(c).sum()), trial


def test_a_failed_milp_solve_is_unknown_with_a_sound_bracket(monkeypatch) -> None:
    # HiGHS answered "infeasible" for a non-empty box (weights of 1e6): that was an
    # exception; now it is "unknown" (numerical) with the CROWN bound
    net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
    real = LPModel.solve

    def failing(self):
        return LPResult("infeasible") if self.is_mip else real(self)

    monkeypatch.setattr(LPModel, "solve", failing)
    r = maximize(net, Box([-1], [2]))
    assert r.status == "unknown" and r.info["reason"].startswith("numerical: the MILP solver ended with status infeasible")
    assert r.value == pytest.approx(2.0) and r.bound >= 2.0
    rng = output_range(net, Box([-1], [2]))
    assert not rng.exact and rng.hi_bound[0] >= 2.0 and rng.lo_bound[0] <= 0.0


@pytest.mark.parametrize("limit", [0, -1, float("nan"), "5", True])
def test_bad_time_limits_are_refused(limit) -> None:
    net = Network([[[1.0]], [[1.0]]], [[0.0], [0.0]])
    for call, name in ((maximize, "maximize"), (minimize, "minimize"), (output_range, "output_range")):
        with pytest.raises(RelulabError, match=f"{name}: time_limit must be a positive number"):
            call(net, Box([0], [1]), time_limit=limit)


def _batch_files(tmp_path, expected_rows: str):
    from relulab.io import save_model
    from relulab.io.vnnlib import format_vnnlib
    from relulab.spec import OutputConstraint, Property, Specification

    net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x| on [-1, 1]: max 1
    save_model(net, tmp_path / "net.npz")
    box = Box([-1], [1])
    safe = Specification(box, [OutputConstraint(np.array([[-1.0]]), np.array([-1.5]))])     # y >= 1.5
    unsafe = Specification(box, [OutputConstraint(np.array([[-1.0]]), np.array([-0.5]))])   # y >= 0.5
    (tmp_path / "safe.vnnlib").write_text(format_vnnlib(Property([safe])))
    (tmp_path / "unsafe.vnnlib").write_text(format_vnnlib(Property([unsafe])))
    (tmp_path / "inst.csv").write_text("net.npz,safe.vnnlib,10\nnet.npz,unsafe.vnnlib,10\n")
    (tmp_path / "exp.csv").write_text("onnx,vnnlib,expected\n" + expected_rows)


@pytest.mark.parametrize("words", [("holds", "violated"), ("unsat", "sat"), ("HOLDS", "Sat")])
def test_verify_batch_scores_relulab_and_vnncomp_words(tmp_path, capsys, words) -> None:
    import json

    _batch_files(tmp_path, f"net.npz,safe.vnnlib,{words[0]}\nnet.npz,unsafe.vnnlib,{words[1]}\n")
    code, out, err = run(capsys, "verify-batch", tmp_path / "inst.csv", "--workers", "1", "--json",
                         "--expected", tmp_path / "exp.csv")
    b = json.loads(out)
    assert code == 0 and [r["status"] for r in b["instances"]] == ["holds", "violated"], err
    assert sum(s["correct"] for s in b["summary"]) == 2 and sum(s["wrong"] for s in b["summary"]) == 0


def test_verify_batch_refuses_an_unknown_expected_word(tmp_path, capsys) -> None:
    _batch_files(tmp_path, "net.npz,safe.vnnlib,holds\nnet.npz,unsafe.vnnlib,banana\n")
    code, _, err = run(capsys, "verify-batch", tmp_path / "inst.csv", "--workers", "1",
                       "--expected", tmp_path / "exp.csv")
    assert code == 1 and "exp.csv:3: expected 'banana'" in err


def test_exact_is_relative_to_the_outputs_size_not_to_one() -> None:
    from relulab.verify.result import OptimumResult, RangeResult

    def rng_result(lo, hi, lo_b, hi_b):
        one = np.zeros((1, 1))
        return RangeResult(np.array([lo]), np.array([hi]), one, one, np.array([lo_b]),
                           np.array([hi_b]), "optimal", 0.0)

    # outputs near 2e-8 with a bracket of 1e-12: 5e-5 of the output, not "exact" (it was,
    # against an absolute 1e-7); the same bracket on outputs near 1 is
    assert not rng_result(1e-8, 2e-8, 1e-8 - 1e-12, 2e-8).exact
    assert rng_result(0.5, 1.0, 0.5 - 1e-12, 1.0 + 1e-12).exact
    # a maximum of 0 on an output of size 1 is exact within 1e-7 of that size
    assert rng_result(-1.0, 0.0, -1.0, 5e-8).exact and not rng_result(-1.0, 0.0, -1.0, 5e-7).exact

    def opt(value, bound, lp, scale=float("nan")):
        return OptimumResult("max", "optimal", value, np.zeros(1), bound, lp, 0.0, 0, 0.0, scale=scale)

    assert not opt(2e-8, 2e-8 + 1e-12, 2.1e-8).exact and opt(2e-8, 2e-8 + 1e-16, 2.1e-8).exact
    # a maximum of 0 is exact within 1e-7 of the objective's spread, not of its LP value
    assert opt(0.0, 1e-8, 0.0, scale=0.5).exact and not opt(0.0, 1e-8, 0.5, scale=0.0).exact
    # aud_ver9 #2: a big-M LP value of 5.8e17 made a bracket [0, 1.2e10] "exact"
    assert not opt(0.0, 1.2e10, 5.8e17, scale=1.0).exact
