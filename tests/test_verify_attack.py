"""The falsification attack against exact optima (MILP) on small random networks:
thresholds just below the true maximum (counterexamples of tiny measure) must be
found, thresholds above it never produce a counterexample, and the linear-piece walk
reaches the exact minimum of convex networks."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_network

from relulab import Network
from relulab.domain import Box
from relulab.tolerance import FEAS_TOL
from relulab.verify import maximize, minimize
from relulab.verify.attack import attack, attack_terms, local_search

CASES = [(seed, dims) for seed, dims in enumerate([
    [2, 12, 12, 3], [3, 16, 16, 2], [4, 20, 10, 2], [5, 16, 16, 16, 2], [6, 24, 12, 3],
    [3, 30, 1], [5, 12, 12, 12, 12, 2], [8, 20, 20, 2],
])]


def _box(rng, n):
    lo = rng.uniform(-2, 0, n)
    return Box(lo, lo + rng.uniform(0.5, 2, n))


@pytest.mark.parametrize("seed,dims", CASES)
def test_attack_finds_points_just_below_the_exact_maximum(seed, dims):
    rng = np.random.default_rng(seed)
    net = random_network(rng, dims)
    box = _box(rng, dims[0])
    c = rng.normal(size=dims[-1])
    opt = maximize(net, box, c)
    assert opt.status == "optimal"
    top = float(opt.bound)
    # unsafe: c.f(x) >= top - 1e-6 (1 + |top|): a tiny neighbourhood of the global maximiser
    thr = top - 1e-6 * (1 + abs(top))
    x = attack(net, box, -c[None], np.array([-thr]), time_limit=5.0, rng=seed)
    assert x is not None
    assert box.contains(x)
    assert float(c @ net(x)) >= thr - FEAS_TOL  # the test's own forward pass
    # above the proven bound there is nothing to find: never a false counterexample
    above = top + 1e-6 * (1 + abs(top))
    assert attack(net, box, -c[None], np.array([-above]), time_limit=0.3, rng=seed) is None


@pytest.mark.parametrize("seed", range(6))
def test_local_search_reaches_the_minimum_of_a_convex_network(seed):
    # f(x) = sum_j a_j relu(w_j . x + b_j) + v . x with a_j > 0 is convex: every local
    # minimum of the piecewise-linear walk is the global one, which the MILP gives
    rng = np.random.default_rng(100 + seed)
    n, h = int(rng.integers(2, 7)), int(rng.integers(5, 30))
    W = rng.normal(size=(h, n))
    b = rng.normal(size=h)
    a = rng.uniform(0.1, 1.0, size=(1, h))
    net = Network([W, a], [b, np.zeros(1)], (rng.normal(size=(1, n)) * 0.3, np.zeros(1)))
    box = _box(rng, n)
    lo_val = float(minimize(net, box).value)
    x0 = box.sample(1, rng)[0]
    x, m = local_search(net, box, np.array([[1.0]]), np.array([0.0]), x0, max_iters=200, time_limit=10)
    assert box.contains(x)
    assert m == pytest.approx(float(net(x)[0]), abs=1e-12)
    assert m <= float(net(x0)[0]) + 1e-12
    assert m == pytest.approx(lo_val, abs=1e-7 * (1 + abs(lo_val)))


def test_attack_terms_reports_the_violated_term():
    rng = np.random.default_rng(7)
    net = random_network(rng, [3, 16, 16, 2])
    box = Box(-np.ones(3), np.ones(3))
    hi0 = float(maximize(net, box, np.array([1.0, 0.0])).bound)
    terms = [
        (box, np.array([[-1.0, 0.0]]), np.array([-(hi0 + 0.1)])),   # y0 >= max + 0.1: impossible
        (box, np.array([[-1.0, 0.0]]), np.array([-(hi0 - 1e-6)])),  # y0 >= max - 1e-6: rare
    ]
    i, x = attack_terms(net, terms, time_limit=5.0)
    assert i == 1
    assert float(net(x)[0]) >= hi0 - 1e-6 - FEAS_TOL


def test_attack_from_given_starts_and_empty_conjunction():
    net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
    box = Box([-1.0], [1.0])
    x = attack(net, box, np.array([[-1.0]]), np.array([-0.999]), starts=np.array([[0.99]]),
               n_samples=0, time_limit=1.0)
    assert x is not None and abs(x[0]) >= 0.999 - FEAS_TOL
    # an empty conjunction: every output is unsafe, any point of the box is a counterexample
    x = attack(net, box, np.zeros((0, 1)), np.zeros(0))
    assert x is not None and box.contains(x)
