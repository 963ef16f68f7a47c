"""Smoothed-verification diagnostics: the perturbation and the measured gap, against brute force."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from relulab.construct import (
    block_formula,
    exact_max_bruteforce,
    min_unsat,
    normalized_gadget,
    perturb,
    random_3cnf,
    sat_gadget,
    smoothed_gap,
)
from relulab.construct.maxmin import ConstructionError


def _entries(net):
    return [v for W, b in net.layers for v in [*np.asarray(W).ravel(), *np.asarray(b)]]


def test_normalized_gadget_is_the_gadget_with_coefficients_in_unit_interval() -> None:
    rng = np.random.default_rng(0)
    for seed in range(4):
        n = 5
        clauses = random_3cnf(n, 9, seed)
        g, h = normalized_gadget(clauses, n), sat_gadget(clauses, n)
        assert all(-1 <= v <= 1 for v in _entries(g))
        assert max(sum(1 for v in row if v != 0) for row in g.weights[0]) <= 3  # fan-in 3
        pts = [list(p) for p in itertools.product((0, 1), repeat=n)]
        pts += [[Fraction(int(v), 13) for v in rng.integers(0, 14, n)] for _ in range(200)]
        X = np.array(pts, dtype=object)
        assert (g(X) == h(X)).all()


def test_perturbation_reproducible_on_grid_and_clipped() -> None:
    net = normalized_gadget(block_formula(2, 1), 6)
    a = perturb(net, 2**-6, bits=10, seed=7)
    assert a == perturb(net, 2**-6, bits=10, seed=7)
    assert a != perturb(net, 2**-6, bits=10, seed=8)
    for v in _entries(a):
        assert isinstance(v, Fraction) and (v * 2**10).denominator == 1 and -2 <= v <= 2
    # dense ("all") vs the base support ("nonzero"): zeros stay zero only in the latter
    W0 = np.asarray(net.weights[0], dtype=float)
    Wd = np.asarray(perturb(net, 0.1, 12, 1, support="all").weights[0], dtype=float)
    Ws = np.asarray(perturb(net, 0.1, 12, 1, support="nonzero").weights[0], dtype=float)
    assert np.all(Ws[W0 == 0] == 0) and np.count_nonzero(Wd[W0 == 0]) > 0.9 * np.sum(W0 == 0)
    # huge noise: many entries clipped to exactly +-2, none beyond
    big = [float(v) for v in _entries(perturb(net, 50.0, 4, 3, support="all"))]
    assert max(big) == 2.0 and min(big) == -2.0 and sum(abs(v) == 2 for v in big) > len(big) / 2
    # no noise: only the rounding moves a coefficient, by at most half a grid step
    r = perturb(net, 0.0, bits=8, seed=0)
    for u, v in zip(_entries(net), _entries(r), strict=True):
        assert abs(u - v) <= Fraction(1, 2**9)


def test_noise_has_the_requested_scale() -> None:
    net = normalized_gadget(block_formula(4, 2), 12)
    base = np.array([float(v) for v in _entries(net)])
    d = np.array([float(v) for v in _entries(perturb(net, 2**-5, bits=30, seed=2, support="all"))]) - base
    assert abs(d.std() / 2**-5 - 1) < 0.1 and abs(d.mean()) < 0.01


@pytest.mark.parametrize("seed", range(3))
def test_bruteforce_max_of_base_gadget_is_m_minus_unsat_over_3(seed: int) -> None:
    rng = np.random.default_rng(seed)
    clauses = random_3cnf(3, int(rng.integers(2, 9)), rng)
    best = min(sum(not any((x[abs(lit) - 1] == 1) == (lit > 0) for lit in cl) for cl in clauses)
               for x in itertools.product((0, 1), repeat=3))
    v, x = exact_max_bruteforce(normalized_gadget(clauses, 3))
    assert v == Fraction(len(clauses) - best, 3)
    assert v == normalized_gadget(clauses, 3)([x])[0]


@pytest.mark.parametrize(("clauses", "n", "support", "sigma", "seed"), [
    (block_formula(1, 1), 3, "all", 2**-5, 0),
    (block_formula(1, 1), 3, "nonzero", 2**-3, 1),
    (random_3cnf(4, 3, 5), 4, "all", 2**-4, 2),
    (random_3cnf(4, 3, 6), 4, "nonzero", 2**-11, 3),
])
def test_measured_gap_agrees_with_bruteforce(clauses, n, support, sigma, seed) -> None:
    truth, _ = exact_max_bruteforce(perturb(normalized_gadget(clauses, n), sigma, 12, seed, support))
    for method in ("components", "whole"):
        r = smoothed_gap(clauses, n, sigma=sigma, bits=12, seed=seed, support=support,
                         time_limit=60, method=method)
        _agrees(r, truth, clauses, n)


def test_components_equal_whole_network_on_blocks() -> None:
    """Two blocks with the base support split into two components: the sum of their maxima
    is the maximum of the whole network (a second MILP over all of it)."""
    cl = block_formula(2, 1)
    a = smoothed_gap(cl, 6, sigma=2**-5, bits=14, seed=4, method="components")
    b = smoothed_gap(cl, 6, sigma=2**-5, bits=14, seed=4, method="whole")
    assert a.status == b.status == "optimal"
    assert abs(float(a.perturbed_max - b.perturbed_max)) <= 1e-6
    assert a.n_binaries <= b.n_binaries


def _agrees(r, truth, clauses, n) -> None:
    assert r.status == "optimal"
    assert r.perturbed_max <= truth  # attained at a point of the box, evaluated exactly
    assert abs(float(r.perturbed_max - truth)) <= 1e-6 and r.perturbed_upper >= float(truth) - 1e-6
    assert r.unsat == min_unsat(clauses, n)[0] and r.base_max == Fraction(len(clauses) - r.unsat, 3)
    assert r.shift == r.perturbed_max - r.base_max
    assert r.survives == (r.worst_shift < float(r.gap) / 2)


def test_block_formulas_and_bad_input() -> None:
    for k, u in [(1, 0), (2, 2), (3, 1)]:
        cl = block_formula(k, u)
        assert len(cl) == 8 * k and all(len(set(map(abs, c))) == 3 for c in cl)
        assert min_unsat(cl, 3 * k)[0] == u
    net = normalized_gadget(block_formula(1, 1), 3)
    with pytest.raises(ConstructionError, match="sigma"):
        perturb(net, float("nan"), 8)
    with pytest.raises(ConstructionError, match="sigma"):
        perturb(net, -1.0, 8)
    with pytest.raises(ConstructionError, match="bits"):
        perturb(net, 0.1, 80)
    with pytest.raises(ConstructionError, match="support"):
        perturb(net, 0.1, 8, support="dense")
    with pytest.raises(ConstructionError, match="unsat_blocks"):
        block_formula(2, 3)
    with pytest.raises(ConstructionError, match="method"):
        smoothed_gap(block_formula(1, 1), 3, method="fast")
    with pytest.raises(ConstructionError, match="no clauses"):
        normalized_gadget([], 3)


def test_cli_smoothed_gadget(capsys, tmp_path) -> None:
    import json

    from conftest import run_cli

    from relulab.io import load_model

    out_file = tmp_path / "g.npz"
    code, out, err = run_cli(capsys, "construct", "smoothed-gadget", "--random", "5,12,1",
                             "--sigma", "0.01", "--grid-bits", "10", "--noise-seed", "2", "-o", out_file,
                             "--json")
    assert code == 0, err
    d = json.loads(out)
    net = perturb(normalized_gadget(random_3cnf(5, 12, 1), 5), 0.01, 10, 2)
    assert d["measured"]["unsat"] == min_unsat(random_3cnf(5, 12, 1), 5)[0]
    assert d["measured"]["status"] == "optimal"
    saved = load_model(out_file)
    X = np.random.default_rng(0).random((50, 5))
    assert np.allclose(saved(X), net.float()(X), rtol=0, atol=1e-12)
    code, _, err = run_cli(capsys, "construct", "smoothed-gadget", "--random", "5,12,1",
                           "--sigma", "nan")
    assert code == 1 and "sigma" in err


def test_perturbed_gadget_in_onnxruntime(tmp_path) -> None:
    """An independent evaluator: the float64 ONNX export of a perturbed gadget."""
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from relulab.io import save_model

    net = perturb(normalized_gadget(block_formula(2, 1), 6), 2**-6, 20, 5, support="all")
    out = tmp_path / "g.onnx"
    save_model(net, out)
    sess = ort.InferenceSession(str(out))
    if sess.get_inputs()[0].type != "tensor(double)":
        pytest.skip("the ONNX export is float32 here")
    X = np.random.default_rng(1).random((200, 6))
    y = np.asarray(sess.run(None, {sess.get_inputs()[0].name: X})[0], dtype=float).ravel()
    Xe = np.array([[Fraction(float(v)) for v in row] for row in X[:20]], dtype=object)
    exact = np.array([float(v) for v in net(Xe)[:, 0]])
    assert np.allclose(y[:20], exact, rtol=1e-12, atol=0)
    assert np.allclose(y, net.float()(X).ravel(), rtol=1e-12, atol=0)
