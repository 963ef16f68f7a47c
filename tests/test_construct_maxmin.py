"""max_n / min_n / lattice CPWL: exact agreement with the specification in every region."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from relulab.construct import (
    ExactEvaluator,
    chen_bound,
    lattice_size,
    max_n,
    max_of_mins,
    min_n,
    tree_widths,
)


def _ordering_points(n: int, rng: np.random.Generator, per_order: int = 1) -> np.ndarray:
    """For every ordering of the n coordinates, random rational points in that cone."""
    rows = []
    for perm in itertools.permutations(range(n)):
        for _ in range(per_order):
            vals = sorted({Fraction(int(v), int(d)) for v, d in
                           zip(rng.integers(-60, 60, 3 * n), rng.integers(1, 9, 3 * n), strict=True)})
            vals = vals[:n]
            while len(vals) < n:  # extremely unlikely; keep distinct values
                vals.append(vals[-1] + 1)
            row = [Fraction(0)] * n
            for rank, coord in enumerate(perm):
                row[coord] = vals[rank]
            rows.append(row)
    return np.array(rows, dtype=object)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_max_min_every_ordering(n: int) -> None:
    rng = np.random.default_rng(n)
    X = _ordering_points(n, rng)
    for net, f in ((max_n(n), max), (min_n(n), min)):
        assert net.is_exact
        Y = ExactEvaluator(net)(X)
        for row, y in zip(X, Y, strict=True):
            assert y[0] == f(row)


@pytest.mark.parametrize("n", [3, 5, 6])
def test_max_on_ties_and_network_forward(n: int) -> None:
    # points with ties (region boundaries) and the plain Network forward pass
    X = np.array(list(itertools.product(range(-1, 2), repeat=n)), dtype=object)
    X = np.vectorize(Fraction, otypes=[object])(X)
    net = max_n(n)
    Y = net(X)
    assert all(y[0] == max(row) for row, y in zip(X, Y, strict=True))
    assert np.all(ExactEvaluator(net)(X) == Y)


@pytest.mark.parametrize("n", list(range(1, 18)))
def test_tree_sizes(n: int) -> None:
    net = max_n(n)
    assert net.n_hidden_layers == (0 if n == 1 else math.ceil(math.log2(n)))
    assert net.widths == tree_widths(n)
    if n & (n - 1) == 0:
        assert net.n_neurons == 3 * (n - 1)
    assert min_n(n).widths == net.widths


def test_max_float_copy_agrees(rng: np.random.Generator) -> None:
    net = max_n(9)
    X = rng.normal(size=(500, 9))
    # float64 rounds a + (b - a); the exact network is what the other tests check
    assert np.allclose(net.float()(X)[:, 0], X.max(axis=1), rtol=0, atol=1e-14)


def _random_lattice(rng: np.random.Generator, d: int, k: int, q: int):
    A = [[Fraction(int(v), 4) for v in rng.integers(-8, 9, d)] for _ in range(k)]
    c = [Fraction(int(v), 3) for v in rng.integers(-6, 7, k)]
    groups = [sorted(rng.choice(k, size=int(rng.integers(1, k + 1)), replace=False).tolist())
              for _ in range(q)]
    return A, c, groups


@pytest.mark.parametrize("seed", range(6))
def test_lattice_matches_formula(seed: int) -> None:
    rng = np.random.default_rng(seed)
    d, k, q = int(rng.integers(1, 4)), int(rng.integers(2, 8)), int(rng.integers(1, 7))
    A, c, groups = _random_lattice(rng, d, k, q)
    net = max_of_mins(A, c, groups)
    X = np.array([[Fraction(int(v), int(w)) for v, w in zip(rng.integers(-40, 40, d),
                  rng.integers(1, 7, d), strict=True)] for _ in range(300)], dtype=object)
    Y = ExactEvaluator(net)(X)
    for x, y in zip(X, Y, strict=True):
        vals = [sum(a * xi for a, xi in zip(A[j], x, strict=True)) + c[j] for j in range(k)]
        assert y[0] == max(min(vals[j] for j in g) for g in groups)
    deepest = max(len(g) for g in groups)
    want = (0 if deepest == 1 else math.ceil(math.log2(deepest))) + (
        0 if q == 1 else math.ceil(math.log2(q)))
    assert net.n_hidden_layers == want
    size = lattice_size(net, k, q)
    assert size.neurons <= size.bound_neurons
    assert size.hidden_layers <= size.bound_hidden_layers


def test_lattice_abs_and_chen_bound_formula() -> None:
    net = max_of_mins([[1], [-1]], [0, 0], [[0], [1]])  # |x|
    assert [net([v])[0] for v in (-3, 0, Fraction(5, 2))] == [3, 0, Fraction(5, 2)]
    # the published Theorem 2 formula evaluated by hand for k = 4, q = 4:
    # (3*4 + 2*2 - 3) * 4 + 3*4 - 2*2 - 3 = 52 + 5
    assert chen_bound(4, 4) == (57, 4)
    # full worst case k = q = 8 (every group uses every component): ours vs the bound
    A = [[i] for i in range(8)]
    net = max_of_mins(A, list(range(8)), [list(range(8))] * 8)
    s = lattice_size(net, 8, 8)
    assert (s.neurons, s.hidden_layers) == (8 * 21 + 21, 6)
    assert s.neurons <= s.bound_neurons
