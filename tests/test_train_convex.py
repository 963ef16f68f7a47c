"""Convex training (certificates, Adam, gated variant), the collapse threshold, the MILP
regularisers and the training commands."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from relulab.errors import RelulabError
from relulab.train import (
    collapse_threshold,
    convex_fit,
    gated_fit,
    nonconvex_objective,
    sample_patterns,
)


def _data1d(seed=0, n=14):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 1))
    y = np.sin(2 * X[:, 0]) + 0.2 * rng.normal(size=n)
    return X, y


def _adam_objective(X, y, lam, width=40, steps=2500, seed=0):
    torch = pytest.importorskip("torch")
    torch.manual_seed(seed)
    Xt = torch.tensor(np.hstack([X, np.ones((X.shape[0], 1))]))
    yt = torch.tensor(y)
    W = (torch.randn(width, Xt.shape[1], dtype=torch.float64) * 0.5).requires_grad_()
    a = (torch.randn(width, dtype=torch.float64) * 0.5).requires_grad_()
    opt = torch.optim.Adam([W, a], lr=1e-2)
    for _ in range(steps):
        opt.zero_grad()
        f = torch.relu(Xt @ W.T) @ a
        loss = 0.5 * ((f - yt) ** 2).sum() + 0.5 * lam * (W.pow(2).sum() + a.pow(2).sum())
        loss.backward()
        opt.step()
    return float(loss.detach())


def test_convex_fit_certified_and_beats_adam():
    X, y = _data1d()
    lam = 0.1
    fit = convex_fit(X, y, lam)
    assert fit.converged and fit.gap < 1e-6
    # every pattern of univariate data with a bias column is enumerated: global optimum
    assert fit.n_patterns == sample_patterns(np.hstack([X, np.ones_like(X)]), 10**6)[0].shape[1]
    # the network realises the convex objective in the non-convex problem
    assert nonconvex_objective(fit.network, X, y, lam) == pytest.approx(fit.objective, rel=1e-9)
    for seed in range(2):
        assert fit.objective <= _adam_objective(X, y, lam, seed=seed) + 1e-6


def test_convex_fit_two_dimensional_sampled_patterns():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(12, 2))
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2
    fit = convex_fit(X, y, 0.1, max_patterns=40)
    assert fit.converged and fit.gap < 1e-6
    assert nonconvex_objective(fit.network, X, y, 0.1) == pytest.approx(fit.objective, rel=1e-9)
    # the dual value is a lower bound for every feasible point: e.g. the zero network
    assert fit.dual_value <= 0.5 * float(y @ y)


def test_weakly_regularised_instance_certifies_and_beats_adam():
    # the instance the first-order solver stalled on (gap 3.7e-2 after 78 s)
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (40, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=40)
    lam = 0.01
    fit = convex_fit(X, y, lam)
    assert fit.converged and fit.gap < 1e-6
    assert nonconvex_objective(fit.network, X, y, lam) == pytest.approx(fit.objective, rel=1e-9)
    for seed in range(2):
        assert fit.objective <= _adam_objective(X, y, lam, seed=seed) + 1e-6


@pytest.mark.parametrize("lam", [0.3, 1e-3])
def test_interior_point_and_first_order_agree(lam):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(16, 2))
    y = np.tanh(X[:, 0] - X[:, 1]) + 0.3 * X[:, 0] ** 2
    pats = sample_patterns(np.hstack([X, np.ones((16, 1))]), 30, seed=3)
    ipm = convex_fit(X, y, lam, patterns=pats)
    fo = convex_fit(X, y, lam, patterns=pats, solver="fista", max_iter=20000)
    assert ipm.converged and ipm.gap < 1e-6
    # each certificate bounds the other's objective from below (same problem, two solvers)
    assert ipm.dual_value <= fo.objective + 1e-12
    if fo.converged:
        assert fo.dual_value <= ipm.objective + 1e-12
        assert fo.objective == pytest.approx(ipm.objective, abs=1e-6)
    g1 = gated_fit(X, y, lam, max_patterns=30, seed=3)
    g2 = gated_fit(X, y, lam, max_patterns=30, seed=3, solver="fista")
    assert g1.converged and g2.converged
    assert g1.objective == pytest.approx(g2.objective, abs=2e-8)


def test_three_dimensional_weak_regularisation_certifies():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 3))
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 2]
    fit = convex_fit(X, y, 1e-3, max_patterns=80)
    assert fit.converged and fit.gap < 1e-6
    assert nonconvex_objective(fit.network, X, y, 1e-3) == pytest.approx(fit.objective,
                                                                         rel=1e-9)
    # the zero network and every single-pattern least-squares fit are feasible: the dual
    # bound must lie below them
    assert fit.dual_value <= 0.5 * float(y @ y)


def test_gated_relaxes_relu_on_the_same_patterns():
    X, y = _data1d(2)
    for lam in (0.3, 0.01):
        relu = convex_fit(X, y, lam)
        gated = gated_fit(X, y, lam)
        assert gated.converged and gated.gap < 1e-6
        # same pattern set: every ReLU solution is a gated solution, so gated <= ReLU
        assert gated.objective <= relu.objective + 1e-7
        r = gated.predict(X) - y
        pen = lam * np.sum(np.linalg.norm(gated.weights, axis=1))
        assert 0.5 * r @ r + pen == pytest.approx(gated.objective, rel=1e-9)


def test_collapse_threshold_exact_and_either_side():
    X, y = _data1d(3)
    y = y + 0.5
    t = collapse_threshold(X, y)
    assert t.exact
    # brute force over directions on the circle
    th = np.linspace(0, 2 * np.pi, 400001)
    W = np.stack([np.cos(th), np.sin(th)], 1)
    Xa = np.hstack([X, np.ones_like(X)])
    brute = np.max(np.abs(np.maximum(Xa @ W.T, 0).T @ y))
    assert brute <= t.lam * (1 + 1e-12)
    assert t.lam == pytest.approx(brute, rel=1e-6)
    above = convex_fit(X, y, t.lam * 1.02)
    assert above.n_neurons == 0 and above.gap < 1e-6
    assert above.objective == pytest.approx(0.5 * float(y @ y))
    below = convex_fit(X, y, t.lam * 0.98)
    assert below.n_neurons > 0 and below.gap < 1e-6
    assert below.objective < 0.5 * float(y @ y) - 1e-9


def test_collapse_threshold_exact_in_general_position():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(15, 2))
    y = rng.normal(size=15)
    t = collapse_threshold(X, y)
    assert t.exact and t.lam == t.upper
    Xa = np.hstack([X, np.ones((15, 1))])
    # the witness attains it, and no sampled direction exceeds it
    assert abs(np.maximum(Xa @ t.witness, 0) @ y) == pytest.approx(t.lam, rel=1e-9)
    G = rng.normal(size=(200000, 3))
    G /= np.linalg.norm(G, axis=1, keepdims=True)
    sampled = np.max(np.abs(np.maximum(Xa @ G.T, 0).T @ y))
    assert sampled <= t.lam * (1 + 1e-12)
    assert sampled >= 0.99 * t.lam
    # either side of it, the certified convex optimum is zero / not zero
    assert convex_fit(X, y, t.lam * 1.01, max_patterns=300).n_neurons == 0
    assert convex_fit(X, y, t.lam * 0.99, max_patterns=300).n_neurons > 0


def test_collapse_threshold_bracket_when_patterns_do_not_fit():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(40, 3))
    y = rng.normal(size=40)
    t = collapse_threshold(X, y, max_patterns=300)
    assert not t.exact and t.lam <= t.upper
    Xa = np.hstack([X, np.ones((40, 1))])
    # the witness attains the lower bound
    assert abs(np.maximum(Xa @ t.witness, 0) @ y) == pytest.approx(t.lam, rel=1e-9)
    G = rng.normal(size=(20000, 4))
    G /= np.linalg.norm(G, axis=1, keepdims=True)
    assert np.max(np.abs(np.maximum(Xa @ G.T, 0).T @ y)) <= t.upper * (1 + 1e-12)


def test_regularizers_bounds_and_zero_sets():
    torch = pytest.importorskip("torch")
    from relulab.train import bigm_penalty, count_unstable, interval_bounds, lp_gap_penalty
    from relulab.train.regularizers import mlp, to_network, unstable_penalty

    net = mlp([2, 6, 5, 1], seed=0, dtype=torch.float64)
    lo, hi = torch.tensor([-1.0, -0.5], dtype=torch.float64), torch.tensor([1.0, 2.0],
                                                                            dtype=torch.float64)
    bounds = interval_bounds(net, lo, hi)
    rng = np.random.default_rng(0)
    P = rng.uniform([-1, -0.5], [1, 2], (2000, 2))
    pre = to_network(net).preactivations(P)
    for (l, u), Z in zip(bounds, pre, strict=True):
        assert np.all(Z >= l.detach().numpy() - 1e-12) and np.all(Z <= u.detach().numpy() + 1e-12)
    Xt = torch.tensor(P[:50])
    assert float(unstable_penalty(net, lo, hi)) > 0 and count_unstable(net, lo, hi) > 0
    assert float(lp_gap_penalty(net, Xt, lo, hi)) > 0
    # shift every first-layer bias far up: all neurons stable active, penalties vanish
    with torch.no_grad():
        for m in net:
            if isinstance(m, torch.nn.Linear):
                m.bias += 100.0
    assert count_unstable(net, lo, hi) == 0
    assert float(unstable_penalty(net, lo, hi)) == 0.0
    assert float(lp_gap_penalty(net, Xt, lo, hi)) == 0.0
    assert float(bigm_penalty(net, lo, hi)) > 0


def _run(main, argv) -> int:
    try:
        main(argv)
    except SystemExit as e:
        return int(e.code or 0)
    return 0


def test_cli_fit_commands(tmp_path, capsys):
    from relulab.cli import main

    p = tmp_path / "d.csv"
    p.write_text("x,y\n0,0\n1,1\n2,1\n3,0\n")
    _run(main, ["fit-minnorm", str(p), "--bias", "penalized", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["unique"] and out["kinks"] == pytest.approx([1.5])
    _run(main, ["fit-convex", str(p), "--lam", "0.3", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["gap"] < 1e-6 and out["converged"]
    bad = tmp_path / "bad.csv"
    bad.write_text("x,y\n0,1\n1,oops\n")
    assert _run(main, ["fit-minnorm", str(bad)]) == 1
    assert "bad.csv:3" in capsys.readouterr().err.replace("\n", "")


def test_bad_input():
    with pytest.raises(RelulabError):
        convex_fit(np.zeros((3, 1)), np.zeros(4), 0.1)
    with pytest.raises(RelulabError):
        convex_fit(np.zeros((3, 1)), np.zeros(3), -1.0)
    with pytest.raises(RelulabError, match="solver"):
        convex_fit(np.ones((3, 1)), np.ones(3), 0.1, solver="newton")


def test_max_patterns_must_be_positive():
    X, y = _data1d(n=5)
    for bad in (0, -2, 2.5):
        with pytest.raises(RelulabError, match="max_patterns"):
            convex_fit(X, y, 0.1, max_patterns=bad)
        with pytest.raises(RelulabError, match="max_patterns"):
            gated_fit(X, y, 0.1, max_patterns=bad)
    X3 = np.random.default_rng(0).normal(size=(6, 3))
    with pytest.raises(RelulabError, match="max_patterns"):
        collapse_threshold(X3, y[:5].tolist() + [0.0], max_patterns=0)


def _run_isolated(code: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter: a crash (abort in native code) must fail the
    test, not kill pytest."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)


def test_identical_points_fit_without_crashing():
    # every row on one hyperplane: once this left the only pattern with no cone row, and
    # nnls on the empty (2, 0) matrix aborted the interpreter (double free)
    code = """
import numpy as np
from relulab.train import convex_fit
for y, lam in (([0.0, 1.0], 0.1), ([-0.17028771, 1.16840703], 1.4256694239206224)):
    fit = convex_fit(np.array([[1.0], [1.0]]), np.array(y), lam=lam)
    print(fit.objective, fit.dual_value, fit.converged, fit.global_optimum)
"""
    r = _run_isolated(code)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = [line.split() for line in r.stdout.strip().splitlines()]
    for (y0, y1), lam, row in zip(((0.0, 1.0), (-0.17028771, 1.16840703)),
                                  (0.1, 1.4256694239206224), rows, strict=True):
        # both points see the same x~ = (1, 1): the output is one value t, reached most
        # cheaply by one neuron with penalty lam |t| / ||x~||
        t = np.linspace(-2, 2, 400_001)
        best = np.min(0.5 * ((t - y0) ** 2 + (t - y1) ** 2) + lam * np.abs(t) / np.sqrt(2))
        obj, dual = float(row[0]), float(row[1])
        assert obj == pytest.approx(best, abs=1e-8) and dual <= obj + 1e-12
        assert row[2] == "True" and row[3] == "True"


def test_projection_onto_a_cone_without_rows_is_the_identity():
    # a cone given no facet row is the whole space: its projection must not reach nnls
    code = """
import numpy as np
from relulab.train.convex import _Projector
Xa = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0], [1.0, 1.0, 1.0]])
S = np.ones((3, 1))
z = np.array([[-1.0, -2.0, 0.5]])          # violates the (dropped) rows
out = _Projector(Xa, S, np.zeros((3, 1), dtype=bool)).project_entries(z, np.array([0]))
print(*out[0])
"""
    r = _run_isolated(code)
    assert r.returncode == 0, r.stderr[-2000:]
    assert [float(v) for v in r.stdout.split()] == [-1.0, -2.0, 0.5]


def _sector_rays_brute(Xa, S, F):
    """The extreme rays of each 2-D cone by brute force: the feasible unit normals of its
    rows, and among them the pair at the widest angle."""
    out = []
    for i in range(S.shape[1]):
        A = S[F[:, i], i:i + 1] * Xa[F[:, i]]
        cand = np.vstack([np.column_stack([-A[:, 1], A[:, 0]]), np.column_stack([A[:, 1], -A[:, 0]])])
        cand /= np.linalg.norm(cand, axis=1, keepdims=True)
        ok = cand[np.all(A @ cand.T >= -1e-12 * np.linalg.norm(A, axis=1)[:, None], axis=0)]
        G = ok @ ok.T
        a, b = np.unravel_index(np.argmin(G), G.shape)
        out.append(ok[[a, b]])
    return out


@pytest.mark.parametrize("seed", range(12))
def test_sector_rays_match_brute_force(seed):
    from relulab.train.convex import _sector_rays
    from relulab.train.patterns import activation_patterns

    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, int(rng.integers(3, 30)))
    if seed % 3 == 0:
        x = np.round(x * 3) / 3                       # repeated points
    Xa = np.column_stack([x, np.ones_like(x)])
    M, _, complete = activation_patterns(Xa, 500, seed)
    M = np.asarray(M, dtype=bool)
    S = 2.0 * M - 1.0
    F = np.ones(M.shape, dtype=bool)
    rays, pointed = _sector_rays(Xa, S, F, np.arange(S.shape[1]))
    assert pointed.all()
    for got, want in zip(rays, _sector_rays_brute(Xa, S, F), strict=True):
        assert np.allclose(got, want, atol=1e-9) or np.allclose(got, want[::-1], atol=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_planar_projections_match_nnls_on_pointed_and_other_cones(seed):
    # the closed-form sector projection (rays found per cone, on first use) against scipy's
    # nnls on every cone: pointed sectors, half-planes (one row direction), lines and the
    # whole plane (no facet row) among them
    from scipy.optimize import nnls

    from relulab.train.convex import _Projector

    rng = np.random.default_rng(seed)
    n, P = int(rng.integers(2, 9)), 40
    Xa = rng.standard_normal((n, 2))
    if seed % 3 == 1:
        Xa[1] = -2.5 * Xa[0]                   # opposite rows: some cones are lines or rays
    if seed % 3 == 2:
        Xa = np.outer(rng.uniform(0.5, 2, n), Xa[0])   # one direction: half-planes and lines
    S = rng.choice([-1.0, 1.0], size=(n, P))
    S[:, 0] = 1.0
    F = np.ones((n, P), dtype=bool)
    proj = _Projector(Xa, S, F)
    z = rng.standard_normal((P, 2)) * 3
    got = proj.project_entries(z, np.arange(P))
    for i in range(P):
        A = S[F[:, i], i:i + 1] * Xa[F[:, i]]
        want = z[i] if A.shape[0] == 0 else z[i] + A.T @ nnls(A.T, -z[i])[0]
        if A.shape[0] and np.all(A @ z[i] >= 0):
            want = z[i]
        assert np.allclose(got[i], want, atol=1e-9), (i, got[i], want)
    assert set(np.unique(proj.ray_state[proj.ray_state != 0])) <= {-1, 1}


def test_a_time_limited_fit_keeps_a_sound_dual_bound():
    # past the time limit the dual bound uses unprojected norms: looser, still below the optimum
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 4))
    y = np.sin(X.sum(1))
    best = convex_fit(X, y, 0.05, max_patterns=150, seed=1)
    assert best.converged
    for limit in (1e-4, 1e-2):
        r = convex_fit(X, y, 0.05, max_patterns=150, seed=1, time_limit=limit)
        assert r.dual_value <= best.objective + 1e-7
        assert r.objective >= best.dual_value - 1e-7


def test_no_time_left_means_no_cone_program_and_a_sound_answer(monkeypatch):
    # with the limit spent before the solve, the interior point must not start (on large
    # data its set-up alone took minutes): the zero network is the candidate, and the
    # certified interval still holds the optimum
    import relulab.train.convex_ipm as ipm

    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 3))
    y = np.sin(X.sum(1))
    best = convex_fit(X, y, 0.05, max_patterns=120, seed=1)
    g_best = gated_fit(X, y, 0.05, max_patterns=120, seed=1)
    assert best.converged and g_best.converged

    def refuse(*args, **kwargs):
        raise AssertionError("the cone program was built with no time left")

    monkeypatch.setattr(ipm, "solve_group_lasso", refuse)
    for solver in ("ipm", "fista"):
        r = convex_fit(X, y, 0.05, max_patterns=120, seed=1, solver=solver, time_limit=1e-9)
        assert not r.converged
        assert r.dual_value <= best.objective + 1e-7 <= r.objective + 2e-7
        assert abs(nonconvex_objective(r.network, X, y, 0.05) - r.objective) < 1e-8
    g = gated_fit(X, y, 0.05, max_patterns=120, seed=1, time_limit=1e-9)   # falls back to FISTA
    assert not g.converged
    assert g.dual_value <= g_best.objective + 1e-7 <= g.objective + 2e-7


def test_a_proximal_step_cut_by_the_deadline_stays_feasible():
    # past the deadline the projector zeroes what it has not projected: 0 is in every cone
    from relulab.train.convex import _Projector

    rng = np.random.default_rng(2)
    Xa = np.hstack([rng.standard_normal((25, 3)), np.ones((25, 1))])
    M = Xa @ rng.standard_normal((4, 90)) >= 0
    S = 2.0 * M - 1.0
    proj = _Projector(Xa, S)
    Z = rng.standard_normal((2, 90, 4))
    proj.deadline = 0.0                                  # long past
    out = proj.project(Z, when_late="zero", chunk=8)
    done = np.linalg.norm(out, axis=2) > 0
    assert 0 < done.sum() <= 8                           # the first chunk only
    full = _Projector(Xa, S).project(Z)
    assert np.allclose(out[done], full[done])
    for k, i in zip(*np.nonzero(done), strict=True):
        assert np.all(S[:, i] * (Xa @ out[k, i]) >= -1e-9)


def test_beyond_the_collapse_threshold_zero_is_certified_without_a_solve():
    # lam = 1e300 overflowed FISTA's arithmetic (RuntimeWarnings, gap 5e297, "NOT
    # converged"); zero is optimal there, and the gap at zero certifies it outright
    import warnings

    X, y = _data1d(3)
    t = collapse_threshold(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning may leak
        # (the gated threshold, without the cone projection, is higher than t.lam)
        fits = [convex_fit(X, y, lam, solver=s) for lam in (1e300, 1.02 * t.lam) for s in ("ipm", "fista")]
        fits += [gated_fit(X, y, 1e300, solver=s) for s in ("ipm", "fista")]
        for fit in fits:
            assert fit.converged and fit.iterations == 0
            assert fit.objective == pytest.approx(0.5 * float(y @ y)) and fit.gap <= 1e-12
    assert convex_fit(X, y, 0.98 * t.lam).iterations > 0  # below it, a solve


@pytest.mark.parametrize("fit", [convex_fit, gated_fit])
def test_lam_and_time_limit_are_checked(fit):
    X, y = _data1d(1)
    for lam in ("a", None, True, float("nan"), -1.0, 0.0):
        with pytest.raises(RelulabError, match="lam must be a positive number"):
            fit(X, y, lam)
    # NaN was read as no limit, -1 accepted, 'a' a raw TypeError
    for tl in ("a", float("nan"), -1.0, 0.0):
        with pytest.raises(RelulabError, match="time_limit must be a positive number of seconds"):
            fit(X, y, 0.1, time_limit=tl)
    assert fit(X, y, np.float64(0.1), time_limit=np.int64(30)).converged  # numpy numbers are numbers


def test_gated_fit_cannot_be_saved_as_a_relu_network(tmp_path):
    out = tmp_path / "g.npz"
    r = subprocess.run([sys.executable, "-c", "from relulab.cli import main; main()", "fit-convex",
                        "example:data_1d.csv", "--lam", "0.1", "--gated", "--save", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "is not a ReLU network" in r.stderr and not out.exists()


def test_a_huge_pattern_budget_under_a_time_limit_gives_a_partial_fit_not_a_memory_error():
    # 50 million planned directions (max_patterns 10^6, 3 columns with the bias) asked for
    # 2.4 GB before any was drawn and raised; the memory is now that of the patterns kept
    # (at most the arrangement's regions), and the time limit stops the drawing
    rng = np.random.default_rng(0)
    X = np.round(rng.standard_normal((200, 2)), 1)   # not in general position: sampled
    y = np.sin(X.sum(1))
    from relulab.limits import memory_limit

    with memory_limit(1 << 30):      # 1 GB: the regions' patterns fit, 50 million directions not
        fit = convex_fit(X, y, 0.05, max_patterns=10**6, time_limit=1.0)
    assert fit.n_patterns > 0 and fit.dual_value <= fit.objective
    assert abs(nonconvex_objective(fit.network, X, y, 0.05) - fit.objective) <= 1e-6 * fit.objective
