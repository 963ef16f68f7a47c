"""The Monte-Carlo empirical NTK (monte_carlo_ntk) and its streamed networks: equal to
empirical_ntk of the same materialised network, error shrinking like
1/sqrt(n_networks * width) against the closed-form ntk, spread diagnostics that match the
measured errors, and one clear error per bad input."""

from __future__ import annotations

import numpy as np
import pytest

from relulab import Network
from relulab.dynamics import (
    KernelError,
    MonteCarloNTK,
    empirical_ntk,
    monte_carlo_ntk,
    ntk,
    seeded_ntk_network,
    streamed_ntk,
)


def _sphere(n: int, d: int, seed: int) -> np.ndarray:
    X = np.random.default_rng(seed).normal(size=(n, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


@pytest.mark.parametrize("depth,bias_var", [(1, 0.0), (2, 0.0), (3, 0.5)])
def test_one_network_equals_empirical_ntk_of_the_same_network(depth, bias_var):
    X = np.random.default_rng(depth).normal(size=(7, 5))
    r = monte_carlo_ntk(X, depth=depth, width=96, n_networks=1, bias_var=bias_var, rng=11)
    net, scales = seeded_ntk_network(5, 96, depth=depth, seed=r.seeds[0], bias_var=bias_var)
    K = empirical_ntk(net, X, scales=scales)
    assert np.allclose(r.kernel, K, rtol=1e-12, atol=1e-12)
    assert np.isnan(r.single_network_spread) and r.network_rel_errors[0] == pytest.approx(r.rel_error)


def test_streamed_cross_kernel_and_blocks():
    """Z: the cross kernel equals the block of the joint one; a layer cut into several
    blocks (fan-in large enough) still gives empirical_ntk's value."""
    import relulab.dynamics.kernels_mc as mc

    X, Z = np.random.default_rng(0).normal(size=(4, 3)), np.random.default_rng(1).normal(size=(6, 3))
    K = streamed_ntk(X, Z, width=40, depth=2, seed=5, bias_var=0.2)
    J = streamed_ntk(np.vstack([X, Z]), width=40, depth=2, seed=5, bias_var=0.2)
    assert np.allclose(K, J[:4, 4:], rtol=1e-12, atol=1e-12)
    old = mc.BLOCK_ELEMS
    try:
        mc.BLOCK_ELEMS = 100  # 40 columns -> blocks of 2 rows
        Kb = streamed_ntk(X, Z, width=40, depth=2, seed=5, bias_var=0.2)
        net, sc = seeded_ntk_network(3, 40, depth=2, seed=5, bias_var=0.2)
    finally:
        mc.BLOCK_ELEMS = old
    assert np.allclose(Kb, empirical_ntk(net, X, Z, scales=sc), rtol=1e-12, atol=1e-12)


def test_seeded_network_has_the_ntk_parameterisation():
    """Effective weight variances 1/d (input layer) and 2/fan_in (later layers), bias
    variance bias_var, estimated from one wide network's entries."""
    net, scales = seeded_ntk_network(20, 400, depth=2, seed=3, bias_var=0.7)
    want = [1 / 20, 2 / 400, 2 / 400]
    for W, v in zip(net.weights, want, strict=True):
        assert abs(W.var() / v - 1) < 5 * np.sqrt(2 / W.size)
    assert abs(np.concatenate(net.biases[:2]).var() / 0.7 - 1) < 0.15
    assert isinstance(net, Network) and len(scales) == 3


def _rms_error(X, depth, width, M, groups, base):
    errs = [monte_carlo_ntk(X, depth=depth, width=width, n_networks=M, rng=base + g).rel_error
            for g in range(groups)]
    return float(np.sqrt(np.mean(np.square(errs))))


@pytest.mark.parametrize("depth", [1, 3])
def test_error_shrinks_like_one_over_sqrt_networks_times_width(depth):
    """RMS error against ntk over several independent groups: quadrupling the networks or
    the width halves it (within sampling error), and equal products M * width give equal
    errors; the log-log slope over M * width from 128 to 4,096 is about -1/2."""
    X = _sphere(10, 6, depth)
    plan = [(128, 1), (128, 4), (128, 16), (512, 4), (1024, 4)]
    rms = {p: _rms_error(X, depth, p[0], p[1], 12, 100 * depth) for p in plan}
    assert 0.35 < rms[(128, 4)] / rms[(128, 1)] < 0.7
    assert 0.35 < rms[(128, 16)] / rms[(128, 4)] < 0.7
    assert 0.65 < rms[(512, 4)] / rms[(128, 16)] < 1.5   # same M * width = 2,048
    prod = [w * m for w, m in plan]
    slope = np.polyfit(np.log(prod), np.log([rms[p] for p in plan]), 1)[0]
    assert -0.6 < slope < -0.4


def test_spread_diagnostics_match_the_measured_errors():
    """single_network_spread estimates one network's RMS deviation from the expectation:
    close to the RMS of the networks' own errors against ntk; rel_error stays within a few
    standard errors; a wrong bias variance is detected by the same yardstick."""
    X = _sphere(12, 5, 0)
    r = monte_carlo_ntk(X, depth=2, width=256, n_networks=24, bias_var=0.3, rng=4)
    rms_single = float(np.sqrt(np.mean(np.square(r.network_rel_errors))))
    assert 0.75 < r.single_network_spread / rms_single < 1.3
    assert r.rel_std_error == pytest.approx(r.single_network_spread / np.sqrt(24))
    assert r.rel_error < 3 * r.rel_std_error
    wrong = np.linalg.norm(r.kernel - ntk(X, depth=2, bias_var=0.6)) / np.linalg.norm(ntk(X, depth=2, bias_var=0.6))
    assert wrong > 5 * r.rel_std_error
    d = r.to_dict()
    assert d["estimate"] == "sampled" and d["n_networks"] == 24 and len(d["seeds"]) == 24
    assert isinstance(r, MonteCarloNTK)


def test_same_rng_same_networks_and_cross_kernel_shape():
    X, Z = np.eye(3), np.ones((2, 3))
    a = monte_carlo_ntk(X, Z, width=32, n_networks=3, rng=9)
    b = monte_carlo_ntk(X, Z, width=32, n_networks=3, rng=9)
    assert a.seeds == b.seeds and np.array_equal(a.kernel, b.kernel) and a.kernel.shape == (3, 2)
    c = monte_carlo_ntk(X, Z, width=32, n_networks=3, rng=9, keep_kernels=True)
    assert a.network_kernels is None and len(c.network_kernels) == 3
    assert np.allclose(np.mean(c.network_kernels, axis=0), a.kernel, rtol=1e-14, atol=1e-14)
    for s, K in zip(c.seeds, c.network_kernels, strict=True):
        assert np.array_equal(K, streamed_ntk(X, Z, width=32, seed=s))


@pytest.mark.parametrize("kwargs,match", [
    ({"width": 0}, "width"),
    ({"width": 2.5}, "width"),
    ({"width": 8, "n_networks": 0}, "n_networks"),
    ({"width": 8, "n_networks": 1.5}, "n_networks"),
    ({"width": 8, "depth": 0}, "depth"),
    ({"width": 8, "bias_var": -1.0}, "bias_var"),
    ({"width": 8, "bias_var": float("nan")}, "bias_var"),
])
def test_bad_settings(kwargs, match):
    with pytest.raises(KernelError, match=match):
        monte_carlo_ntk(np.eye(2), **kwargs)


def test_bad_points_and_seeds():
    with pytest.raises(KernelError, match="X: contains NaN"):
        monte_carlo_ntk([[1.0, np.nan]], width=4)
    with pytest.raises(KernelError, match="Z: points have dimension 3"):
        monte_carlo_ntk(np.eye(2), np.ones((1, 3)), width=4)
    with pytest.raises(KernelError, match="X: expected a non-empty"):
        streamed_ntk(np.zeros((0, 2)), width=4)
    with pytest.raises(KernelError, match="seed"):
        streamed_ntk(np.eye(2), width=4, seed=-1)
    with pytest.raises(KernelError, match="seed"):
        seeded_ntk_network(2, 4, seed=1.5)
    with pytest.raises(KernelError, match="width"):
        seeded_ntk_network(2, 0)


def test_huge_random_networks_and_kernels_are_refused_against_the_memory_budget(monkeypatch):
    # seeded_ntk_network(3, 40000, depth=2) allocated until the process died, and
    # empirical_ntk on 40,000 points raised a raw MemoryError
    from relulab.dynamics import empirical_ntk, random_ntk_network, seeded_ntk_network
    from relulab.limits import ResourceLimitError

    monkeypatch.setenv("RELULAB_MEMORY_GB", "1")
    with pytest.raises(ResourceLimitError, match="seeded_ntk_network: the weights of a 3-40000-40000-1 network"):
        seeded_ntk_network(3, 40000, depth=2)
    with pytest.raises(ResourceLimitError, match="random_ntk_network: the weights of a 3-40000-40000-1 network"):
        random_ntk_network(3, 40000, depth=2)
    net, scales = random_ntk_network(3, 8, rng=0)
    with pytest.raises(ResourceLimitError, match="empirical_ntk: the 20000 x 20000 kernel"):
        empirical_ntk(net, np.ones((20000, 3)))
    assert empirical_ntk(net, np.ones((5, 3)), scales=scales).shape == (5, 5)
