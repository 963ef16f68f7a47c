"""Complete enumeration of activation patterns, and the global optimum it certifies."""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest

from relulab.lp import solve
from relulab.train import convex_fit, nonconvex_objective
from relulab.train.patterns import (
    _SAMPLE_BLOCK,
    _sample_until,
    activation_patterns,
    enumerate_patterns,
    region_count,
    sample_patterns,
)


def _augmented(rng, n, d_in):
    return np.hstack([rng.normal(size=(n, d_in)), np.ones((n, 1))])


def _feasible_by_lp(Xa, signs) -> bool:
    """Is there a w with signs_j * (x_j . w) >= 1 for every j (an open region)?"""
    A = -(signs[:, None] * Xa)
    r = solve(np.zeros(Xa.shape[1]), A, -np.ones(Xa.shape[0]))
    return r.status == "optimal"


@pytest.mark.parametrize("n,d_in", [(6, 2), (7, 2), (6, 3)])
def test_enumeration_equals_brute_force_over_all_sign_vectors(n, d_in):
    rng = np.random.default_rng(n + 10 * d_in)
    Xa = _augmented(rng, n, d_in)
    M, G = enumerate_patterns(Xa)
    found = {tuple(col) for col in M.T}
    brute = set()
    for signs in product((1.0, -1.0), repeat=n):
        s = np.array(signs)
        if _feasible_by_lp(Xa, s):
            brute.add(tuple(s > 0))
    brute.discard(tuple([False] * n))
    assert found == brute
    assert len(found) == region_count(n, d_in + 1) - 1
    # every gate realises its pattern strictly
    Z = Xa @ G.T
    assert np.all(np.abs(Z) > 0) and np.array_equal(Z > 0, M)


def test_enumeration_contains_every_sampled_pattern():
    rng = np.random.default_rng(3)
    Xa = _augmented(rng, 25, 3)
    M, _ = enumerate_patterns(Xa)
    assert M.shape[1] == region_count(25, 4) - 1
    S, _ = sample_patterns(Xa, 10**9, seed=1, tries=100_000)
    assert {tuple(c) for c in S.T} <= {tuple(c) for c in M.T}


def test_degenerate_data_is_not_claimed_complete():
    # three collinear inputs: their hyperplanes share a ray, general position fails
    X = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [0.0, 1.0], [1.0, -1.0]])
    Xa = np.hstack([X, np.ones((5, 1))])
    assert enumerate_patterns(Xa) is None
    M, G, complete = activation_patterns(Xa, 1000)
    assert not complete and M.shape[1] > 0
    # too many patterns for the budget: a sample, not complete
    Xa2 = _augmented(np.random.default_rng(0), 30, 2)
    assert activation_patterns(Xa2, 50)[2] is False


def test_two_dimensional_fit_is_the_global_optimum():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    X = rng.normal(size=(20, 2))
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2
    lam = 0.05
    fit = convex_fit(X, y, lam, max_patterns=1000)
    assert fit.all_patterns and fit.global_optimum and fit.gap < 1e-6
    assert fit.n_patterns == region_count(20, 3) - 1
    # Caratheodory: an optimum with at most n + 1 neurons exists, and that is the one returned
    assert 0 < fit.n_neurons <= 21
    assert nonconvex_objective(fit.network, X, y, lam) == pytest.approx(fit.objective, rel=1e-9)
    # no trained network of any width can go below the certified dual bound
    Xt = torch.tensor(np.hstack([X, np.ones((20, 1))]))
    yt = torch.tensor(y)
    for seed in range(2):
        torch.manual_seed(seed)
        W = (torch.randn(60, 3, dtype=torch.float64) * 0.5).requires_grad_()
        a = (torch.randn(60, dtype=torch.float64) * 0.5).requires_grad_()
        opt = torch.optim.Adam([W, a], lr=1e-2)
        for _ in range(1500):
            opt.zero_grad()
            loss = 0.5 * ((torch.relu(Xt @ W.T) @ a - yt) ** 2).sum() + 0.5 * lam * (
                W.pow(2).sum() + a.pow(2).sum())
            loss.backward()
            opt.step()
        assert float(loss.detach()) >= fit.dual_value - 1e-9


def test_facet_rows_equal_lp_redundancy_test():
    from relulab.train.patterns import facet_rows

    rng = np.random.default_rng(11)
    Xa = _augmented(rng, 8, 2)
    M, _ = enumerate_patterns(Xa)
    F = facet_rows(M)
    S = 2.0 * M - 1.0
    for i in range(M.shape[1]):
        for j in range(8):
            # row j is a facet iff dropping it lets s_j x_j . w go negative
            others = [k for k in range(8) if k != j]
            A = -(S[others, i][:, None] * Xa[others])
            r = solve(S[j, i] * Xa[j], A, np.zeros(7), lb=-np.ones(3), ub=np.ones(3))
            assert r.status == "optimal"
            assert F[j, i] == (r.objective < -1e-9)


def test_facet_reduced_cone_program_equals_the_full_one():
    rng = np.random.default_rng(12)
    X = rng.normal(size=(18, 2))
    y = np.cos(2 * X[:, 1]) - X[:, 0]
    Xa = np.hstack([X, np.ones((18, 1))])
    M, G, complete = activation_patterns(Xa, 1000)
    assert complete
    reduced = convex_fit(X, y, 0.02, max_patterns=1000)   # facets only
    full = convex_fit(X, y, 0.02, patterns=(M, G))        # every row of every cone
    assert reduced.all_patterns and not full.all_patterns
    assert reduced.gap < 1e-6 and full.gap < 1e-6
    assert reduced.objective == pytest.approx(full.objective, abs=1e-7)
    assert nonconvex_objective(reduced.network, X, y, 0.02) == pytest.approx(
        reduced.objective, rel=1e-9)


def _facet_classes_by_lp(Xa, M, cls):
    """Per pattern and hyperplane class: is the class a facet?  By LP: dropping every row
    of the class lets its constraint go negative (the LP redundancy test)."""
    S = 2.0 * M - 1.0
    n, d = Xa.shape
    out = np.zeros((cls.max() + 1, M.shape[1]), dtype=bool)
    for i in range(M.shape[1]):
        for c in range(cls.max() + 1):
            j = int(np.nonzero(cls == c)[0][0])
            others = np.nonzero(cls != c)[0]
            A = -(S[others, i][:, None] * Xa[others])
            r = solve(S[j, i] * Xa[j], A if others.size else None,
                      np.zeros(others.size) if others.size else None,
                      lb=-np.ones(d), ub=np.ones(d))
            assert r.status == "optimal"
            out[c, i] = r.objective < -1e-9
    return out


@pytest.mark.parametrize("X,bias", [
    (np.array([[1.0], [1.0], [0.0]]), True),                      # the reported instance
    (np.array([[0.5], [-1.0], [0.5], [2.0], [-1.0], [0.5]]), True),
    (np.array([[1.0], [1.0]]), True),                             # one hyperplane only
    (np.array([[1.0, 1.0], [2.0, 2.0], [-1.0, -1.0], [0.0, 1.0], [1.0, -2.0]]), False),
])
def test_facets_of_repeated_points_equal_lp_redundancy_test(X, bias):
    from relulab.train.patterns import facet_rows

    Xa = np.hstack([X, np.ones((X.shape[0], 1))]) if bias else X
    M, _, complete = activation_patterns(Xa, 1000)
    assert complete
    # rows on one hyperplane (multiples of each other) form a class, numbered in data order
    U = Xa / np.linalg.norm(Xa, axis=1, keepdims=True)
    same = np.abs(np.abs(U @ U.T) - 1) < 1e-12
    first_of = np.argmax(same, axis=1)
    cls = np.unique(first_of, return_inverse=True)[1].reshape(-1)
    F = facet_rows(M)
    want = _facet_classes_by_lp(Xa, M, cls)
    first = np.unique(first_of)
    assert np.array_equal(F[first], want)          # the class's first row carries the facet
    assert not F[np.setdiff1d(np.arange(len(cls)), first)].any()
    assert F.any(axis=0).all()                     # every cone keeps at least one row


def test_hyperplane_classes_group_multiples():
    from relulab.train.patterns import hyperplane_classes

    Xa = np.array([[1.0, 1.0], [2.0, 2.0], [-1.0, -1.0], [0.0, 1.0], [1.0, -2.0], [0.0, 3.0]])
    M, _, complete = activation_patterns(Xa, 1000)
    assert complete and hyperplane_classes(M).tolist() == [0, 0, 0, 1, 2, 1]


def test_repeated_points_give_the_global_optimum():
    # x = 1 twice: the facet test used to drop both rows' constraints, and convex_fit
    # returned 0.550 unconverged where the optimum is 0.3967
    X = np.array([[1.0], [1.0], [0.0]])
    y = np.array([0.3, -0.8, 1.2])
    lam = 0.05
    fit = convex_fit(X, y, lam)
    assert fit.converged and fit.all_patterns and fit.global_optimum and fit.gap < 1e-8
    Xa = np.hstack([X, np.ones((3, 1))])
    M, G, _ = activation_patterns(Xa, 1000)
    every_row = convex_fit(X, y, lam, patterns=(M, G))     # all rows of every cone
    jittered = convex_fit(X + np.array([[0.0], [1e-7], [0.0]]), y, lam)
    assert fit.objective == pytest.approx(every_row.objective, abs=1e-9)
    assert fit.objective == pytest.approx(jittered.objective, abs=1e-6)
    assert fit.objective == pytest.approx(0.39672781374, abs=1e-9)
    assert nonconvex_objective(fit.network, X, y, lam) == pytest.approx(fit.objective, rel=1e-9)
    # the certificate is a lower bound for every network, here the all-rows optimum
    assert fit.dual_value <= every_row.objective + 1e-12


def test_univariate_data_without_bias_are_enumerated():
    # one augmented dimension: the two half-lines (this used to raise an IndexError)
    X = np.array([[1.0], [2.0], [-1.0], [2.0]])
    y = np.array([1.0, 0.5, 0.3, -0.2])
    M, G, complete = activation_patterns(X, 100)
    assert complete and {tuple(c) for c in M.T} == {(True, True, False, True),
                                                     (False, False, True, False)}
    fit = convex_fit(X, y, 0.1, bias=False)
    # f(x) = a relu(x) + b relu(-x): least squares with an l1 penalty on each side
    # (1/2)((a-1)^2 + (2a-0.5)^2 + (2a+0.2)^2 + (b-0.3)^2) + 0.1 (|a| + |b|)
    a, b = (1.0 + 1.0 - 0.4 - 0.1) / 9.0, 0.3 - 0.1
    best = 0.5 * ((a - 1) ** 2 + (2 * a - 0.5) ** 2 + (2 * a + 0.2) ** 2 + (b - 0.3) ** 2) \
        + 0.1 * (abs(a) + abs(b))
    assert fit.global_optimum and fit.objective == pytest.approx(best, abs=1e-9)


def _unique_patterns_brute(Xa: np.ndarray, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One global pass: distinct sign columns, each with its first direction."""
    M = Xa @ G.T >= 0
    _, idx = np.unique(M, axis=1, return_index=True)
    M, G = M[:, idx], G[idx]
    keep = M.any(axis=0)
    return M[:, keep], G[keep]


@pytest.mark.parametrize("seed", range(6))
def test_blockwise_sampling_equals_one_global_pass(seed):
    # the sampler deduplicates bit-packed blocks of directions; the result must be the
    # patterns (and first generators) of one pass over all directions, in the same order
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(3, 40)), int(rng.integers(3, 6))
    Xa = rng.standard_normal((n, d))
    if seed % 2:
        Xa = np.round(Xa)                          # degenerate rows, repeated patterns
    tries = 3 * _SAMPLE_BLOCK + 17                 # several blocks and a short last one
    G = np.random.default_rng(seed).standard_normal((tries, d))  # the sampler's own draw
    want_M, want_G = _unique_patterns_brute(Xa, G)
    M, Gs = sample_patterns(Xa, 10**9, seed=seed, tries=tries)
    assert np.array_equal(M, want_M) and np.array_equal(Gs, want_G)


@pytest.mark.parametrize("seed", range(3))
def test_sampling_that_merges_its_kept_patterns_equals_one_global_pass(seed):
    # about 4,000 new patterns a block: the kept ones double and are merged (deduplicated
    # across blocks) several times; still the patterns and first generators of one pass
    rng = np.random.default_rng(50 + seed)
    Xa = rng.standard_normal((36, 5))
    tries = 9 * _SAMPLE_BLOCK + 5
    G = np.random.default_rng(seed).standard_normal((tries, 5))
    want_M, want_G = _unique_patterns_brute(Xa, G)
    M, Gs = sample_patterns(Xa, 10**9, seed=seed, tries=tries)
    assert M.shape[1] > 3 * _SAMPLE_BLOCK
    assert np.array_equal(M, want_M) and np.array_equal(Gs, want_G)


def test_sampling_past_its_deadline_keeps_the_first_block_and_says_so():
    rng = np.random.default_rng(3)
    Xa = rng.standard_normal((30, 4))
    tries = 3 * _SAMPLE_BLOCK
    M, G, stopped = _sample_until(Xa, 10**9, 3, tries, deadline=0.0)   # already past
    assert stopped
    first = np.random.default_rng(3).standard_normal((tries, 4))[:_SAMPLE_BLOCK]
    want_M, want_G = _unique_patterns_brute(Xa, first)
    assert np.array_equal(M, want_M) and np.array_equal(G, want_G)
    assert not _sample_until(Xa, 10**9, 3, tries, deadline=None)[2]


def test_large_data_is_sampled_in_narrower_blocks_with_the_same_patterns():
    # with 12,000 points one 4,096-direction block ran 0.6-2.9 s before the first deadline
    # check (a 0.2 s limit ended at 4-6 s, aud_sess10 F6); narrower blocks must give the
    # patterns of one pass, and a deadline already past keeps only the first, narrow block
    from relulab.train.patterns import _SAMPLE_ENTRIES

    rng = np.random.default_rng(8)
    n = 2 * _SAMPLE_ENTRIES // 512                   # blocks of 256 directions
    Xa = np.round(rng.standard_normal((n, 3)), 1)
    tries = 700
    G = np.random.default_rng(4).standard_normal((tries, 3))
    want_M, want_G = _unique_patterns_brute(Xa, G)
    M, Gs, stopped = _sample_until(Xa, 10**9, 4, tries, None)
    assert not stopped and np.array_equal(M, want_M) and np.array_equal(Gs, want_G)
    M, Gs, stopped = _sample_until(Xa, 10**9, 4, tries, deadline=0.0)
    first_M, first_G = _unique_patterns_brute(Xa, G[:256])
    assert stopped and np.array_equal(M, first_M) and np.array_equal(Gs, first_G)
