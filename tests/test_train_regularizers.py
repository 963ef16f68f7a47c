"""MILP-tractability regularisers: interval bounds, penalties, the true per-sample LP gap
(checked against an independent big-M LP and by hand) and its dual-based gradient."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from relulab.domain import Box  # noqa: E402
from relulab.errors import RelulabError  # noqa: E402
from relulab.lp import solve  # noqa: E402
from relulab.train.regularizers import (  # noqa: E402
    bigm_penalty,
    count_unstable,
    interval_bounds,
    lp_gap_penalty,
    lp_gap_true_penalty,
    lp_relaxation_gaps,
    mlp,
    to_network,
    train_surrogate,
    unstable_penalty,
)
from relulab.verify.milp import encode  # noqa: E402

DT = torch.float64


def _box(lo, hi):
    return torch.tensor(lo, dtype=DT), torch.tensor(hi, dtype=DT)


def _numpy_intervals(net, lo, hi):
    """Interval arithmetic written independently (lower/upper split of the weights)."""
    out = []
    L, U = np.asarray(lo, float), np.asarray(hi, float)
    for W, b in zip(net.weights[:-1], net.biases[:-1], strict=True):
        Wp, Wn = np.maximum(W, 0), np.minimum(W, 0)
        zl, zu = Wp @ L + Wn @ U + b, Wp @ U + Wn @ L + b
        out.append((zl, zu))
        L, U = np.maximum(zl, 0), np.maximum(zu, 0)
    return out


def test_interval_bounds_sound_and_counts_match_brute_force():
    net = mlp([2, 12, 10, 8, 1], seed=4, dtype=DT)
    lo, hi = _box([-1.0, -0.5], [2.0, 1.0])
    bounds = interval_bounds(net, lo, hi)
    N = to_network(net)
    ref = _numpy_intervals(N, [-1.0, -0.5], [2.0, 1.0])
    rng = np.random.default_rng(1)
    P = np.concatenate([rng.uniform([-1, -0.5], [2, 1], (4000, 2)),
                        np.array([[-1, -0.5], [-1, 1], [2, -0.5], [2, 1]])])
    pre = N.preactivations(P)
    n_brute = 0
    for (l, u), (rl, ru), Z in zip(bounds, ref, pre, strict=True):
        l, u = l.detach().numpy(), u.detach().numpy()
        np.testing.assert_allclose(l, rl, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(u, ru, rtol=1e-12, atol=1e-12)
        assert np.all(Z >= l - 1e-12) and np.all(Z <= u + 1e-12)
        # a neuron seen on both sides of zero must be unstable under sound bounds
        seen_both = (Z.min(0) < 0) & (Z.max(0) > 0)
        assert np.all((l < 0)[seen_both] & (u > 0)[seen_both])
        n_brute += int(np.sum((rl < 0) & (ru > 0)))
    assert count_unstable(net, lo, hi) == n_brute > 0
    # the penalties are the closed-form sums over the same bounds
    bm = sum(np.sum(np.maximum(ru, 0) + np.maximum(-rl, 0)) for rl, ru in ref)
    un = sum(np.sum(np.minimum(np.maximum(ru, 0), np.maximum(-rl, 0))) for rl, ru in ref)
    assert float(bigm_penalty(net, lo, hi).detach()) == pytest.approx(bm, rel=1e-12)
    assert float(unstable_penalty(net, lo, hi).detach()) == pytest.approx(un, rel=1e-12)


def _stable_net():
    """A net whose every hidden neuron is stably active over [-1, 1]^2 except layer 2's
    neurons that are pushed stably dead."""
    net = mlp([2, 6, 5, 1], seed=0, dtype=DT)
    with torch.no_grad():
        net[0].bias += 50.0
        net[2].bias[:2] -= 1e4
        net[2].bias[2:] += 1e4
    return net


def test_penalties_vanish_exactly_when_all_neurons_are_stable():
    lo, hi = _box([-1.0, -1.0], [1.0, 1.0])
    X = torch.tensor(np.random.default_rng(0).uniform(-1, 1, (30, 2)), dtype=DT)
    net = _stable_net()
    assert count_unstable(net, lo, hi) == 0
    assert float(unstable_penalty(net, lo, hi).detach()) == 0.0
    assert float(lp_gap_penalty(net, X, lo, hi).detach()) == 0.0
    gaps = lp_relaxation_gaps(net, X, lo, hi, "both").detach().numpy()
    assert np.all(np.abs(gaps) <= 1e-7)
    # a fresh random net is not stable and every penalty is positive
    net = mlp([2, 6, 5, 1], seed=0, dtype=DT)
    assert count_unstable(net, lo, hi) > 0
    assert float(unstable_penalty(net, lo, hi).detach()) > 0
    assert float(lp_gap_penalty(net, X, lo, hi).detach()) > 0
    assert float(lp_gap_true_penalty(net, X, lo, hi, "both").detach()) > 0


def test_true_lp_gap_by_hand_on_one_neuron():
    # f(x) = -relu(x) on [-1, 1]: the triangle lets h reach (x + 1)/2, so the relaxation's
    # minimum is -(x + 1)/2 and its maximum is -relu(x) (exact)
    net = torch.nn.Sequential(torch.nn.Linear(1, 1), torch.nn.ReLU(), torch.nn.Linear(1, 1)).to(DT)
    with torch.no_grad():
        net[0].weight.fill_(1.0)
        net[0].bias.zero_()
        net[2].weight.fill_(-1.0)
        net[2].bias.fill_(0.25)
    lo, hi = _box([-1.0], [1.0])
    xs = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
    X = torch.tensor(xs[:, None], dtype=DT)
    gmin = lp_relaxation_gaps(net, X, lo, hi, "min").detach().numpy()
    np.testing.assert_allclose(gmin, (xs + 1) / 2 - np.maximum(xs, 0), atol=1e-9)
    gmax = lp_relaxation_gaps(net, X, lo, hi, "max").detach().numpy()
    np.testing.assert_allclose(gmax, 0.0, atol=1e-9)
    # the stand-in's triangle height is the same quantity for a single layer
    assert float(lp_gap_penalty(net, X, lo, hi).detach()) == pytest.approx(float(np.mean(gmin)), abs=1e-12)
    with pytest.raises(RelulabError):
        lp_relaxation_gaps(net, X, lo, hi, "sideways")


@pytest.mark.parametrize("sense", ["min", "max"])
def test_true_lp_gap_equals_independent_bigm_relaxation(sense):
    net = mlp([2, 7, 6, 5, 1], seed=3, dtype=DT)
    lo, hi = _box([-1.0, -2.0], [1.5, 1.0])
    X = np.random.default_rng(2).uniform([-1, -2], [1.5, 1], (8, 2))
    gaps = lp_relaxation_gaps(net, torch.tensor(X, dtype=DT), lo, hi, sense).detach().numpy()
    N = to_network(net)
    pre = [(l.detach().numpy(), u.detach().numpy()) for l, u in interval_bounds(net, lo, hi)]
    for x, g in zip(X, gaps, strict=True):
        # big-M MILP of relulab.verify with the input pinned to x and binaries relaxed
        enc = encode(N, Box(x, x), pre)
        c = np.asarray(enc.out_A.todense()).reshape(-1)
        r = solve(c, A_ub=enc.A_ub, b_ub=enc.b_ub, lb=enc.lb, ub=enc.ub, maximize=sense == "max")
        v = r.objective + enc.out_c[0]
        fx = N(x[None])[0, 0]
        ref = fx - v if sense == "min" else v - fx
        assert g == pytest.approx(ref, abs=1e-8)
        assert g >= -1e-9
    assert np.max(gaps) > 1e-3


def test_true_lp_gap_gradient_matches_finite_differences():
    # the dual-based gradient is the total derivative: it includes the first layers'
    # influence on the interval bounds that shape the later triangles
    net = mlp([2, 5, 4, 1], seed=7, dtype=DT)
    lo, hi = _box([-1.0, -1.0], [1.0, 1.0])
    X = torch.tensor(np.random.default_rng(5).uniform(-1, 1, (6, 2)), dtype=DT)
    _fd_check(net, lambda: lp_gap_true_penalty(net, X, lo, hi, "both"))


def _fd_check(net, fn, eps=1e-6, atol=1e-5):
    """Autograd gradient of ``fn()`` against central differences on every parameter."""
    net.zero_grad()
    fn().backward()
    checked = 0
    for p in net.parameters():
        grad = (torch.zeros_like(p) if p.grad is None else p.grad.detach().clone()).view(-1)
        flat = p.data.view(-1)
        for i in range(flat.numel()):
            old = float(flat[i])
            flat[i] = old + eps
            a = float(fn().detach())
            flat[i] = old - eps
            b = float(fn().detach())
            flat[i] = old
            assert grad[i].item() == pytest.approx((a - b) / (2 * eps), abs=atol)
            checked += 1
    assert checked == sum(p.numel() for p in net.parameters())
    assert max(float(p.grad.abs().max()) for p in net.parameters() if p.grad is not None) > 1e-3


def test_stand_in_penalty_gradients_match_finite_differences():
    net = mlp([2, 4, 3, 1], seed=2, dtype=DT)
    lo, hi = _box([-1.0, -1.0], [1.0, 1.0])
    X = torch.tensor(np.random.default_rng(3).uniform(-1, 1, (10, 2)), dtype=DT)
    _fd_check(net, lambda: (bigm_penalty(net, lo, hi) + unstable_penalty(net, lo, hi)
                            + lp_gap_penalty(net, X, lo, hi)))


def test_regularised_training_reduces_instability_and_lp_gap():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (300, 2))
    y = np.sin(3 * X[:, 0]) * np.cos(2 * X[:, 1])
    lo, hi = [-1.0, -1.0], [1.0, 1.0]
    kw = dict(epochs=300, lr=1e-2, seed=0)
    plain, pinfo = train_surrogate(X, y, [2, 16, 16, 1], lo, hi, **kw)
    reg, rinfo = train_surrogate(X, y, [2, 16, 16, 1], lo, hi, bigm=1e-3, unstable=1e-2,
                                 lp_gap=1e-2, warmup=0.3, schedule="onecycle", **kw)
    assert rinfo["unstable"] < pinfo["unstable"]
    assert rinfo["bigm"] < pinfo["bigm"]
    # the info's unstable count is the brute-force count of the returned network's bounds
    for net, info in ((plain, pinfo), (reg, rinfo)):
        n = sum(int(np.sum((l < 0) & (u > 0))) for l, u in _numpy_intervals(net, lo, hi))
        assert info["unstable"] == n
    # the true LP-gap penalty alone (duals, batched LPs) lowers the true gap at the data
    tru, _ = train_surrogate(X, y, [2, 16, 16, 1], lo, hi, lp_gap_true=0.3, lp_batch=48,
                             lp_every=5, **kw)

    def true_gap(net):
        m = mlp([2, 16, 16, 1], dtype=DT)
        with torch.no_grad():
            for lin, W, b in zip([m[0], m[2], m[4]], net.weights, net.biases, strict=True):
                lin.weight.copy_(torch.tensor(W))
                lin.bias.copy_(torch.tensor(b))
        return float(lp_gap_true_penalty(m, torch.tensor(X, dtype=DT), *_box(lo, hi)).detach())

    assert true_gap(tru) < true_gap(plain)
    with pytest.raises(RelulabError):
        train_surrogate(X, y, [2, 4, 1], lo, hi, epochs=1, schedule="cosine")


def test_prune_on_data_keeps_data_values_and_stabilises_one_signed_neurons():
    from relulab.train.regularizers import prune_on_data

    rng = np.random.default_rng(4)
    lo, hi = [-1.0, -1.0], [1.0, 1.0]
    net = to_network(mlp([2, 20, 16, 12, 1], seed=9, dtype=DT))
    # data in a sub-box: many neurons straddle zero on the box but not on the data
    X = rng.uniform([-1.0, -1.0], [-0.2, 0.1], (400, 2))
    small, info = prune_on_data(net, X, lo, hi)
    np.testing.assert_allclose(small(X), net(X), rtol=1e-12, atol=1e-12)
    assert info["deleted"] > 0 and info["linearised"] > 0
    assert sum(net.widths) - sum(small.widths) == info["deleted"]
    before = sum(int(np.sum((l < 0) & (u > 0))) for l, u in _numpy_intervals(net, lo, hi))
    after_b = _numpy_intervals(small, lo, hi)
    assert sum(int(np.sum((l < 0) & (u > 0))) for l, u in after_b) < before
    # in the result, no neuron is unstable over the box while one-signed on the data
    for (l, u), Z in zip(after_b, small.preactivations(X), strict=True):
        one_signed = (Z.max(0) <= 0) | (Z.min(0) >= 0)
        assert not np.any(one_signed & (l < 0) & (u > 0))
    with pytest.raises(RelulabError):
        from relulab import Network
        prune_on_data(Network([[[1.0]], [[1.0]]], [[0.0], [0.0]], skip=([[1.0]], [0.0])),
                      X[:, :1], [-1.0], [1.0])


def test_prune_on_data_checks_its_arguments():
    from relulab.network import Network
    from relulab.train.regularizers import prune_on_data

    net = Network([np.ones((3, 3)), np.ones((1, 3))], [np.zeros(3), np.zeros(1)])
    ok = (np.zeros((4, 3)), [-1.0] * 3, [1.0] * 3)
    bad = [
        ((np.zeros((4, 2)), ok[1], ok[2]), r"X must have shape \(n, 3\)"),
        ((np.zeros(3), ok[1], ok[2]), r"X must have shape \(n, 3\)"),
        ((ok[0], [-1.0], ok[2]), "lo and hi must have 3 entries"),
        ((ok[0], [1.0] * 3, [-1.0] * 3), "lo <= hi"),
        ((np.full((4, 3), np.nan), ok[1], ok[2]), "NaN or infinite entry"),
        ((ok[0], ["a"] * 3, ok[2]), "must be numbers"),
    ]
    for args, match in bad:
        with pytest.raises(RelulabError, match=match):
            prune_on_data(net, *args)
    X = np.ones((4, 3))  # every neuron active on the data, unstable on the box
    small, info = prune_on_data(net, X, ok[1], ok[2])
    assert info == {"deleted": 0, "linearised": 3} and np.allclose(small(X), net(X))
