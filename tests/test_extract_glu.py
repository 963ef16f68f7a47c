"""GLU blocks: the forward pass, the paired-query identities, width inference from the
even part's Hessian rank, and a fit that reproduces a small block."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import erf

from relulab.extract import ExtractError, GLUBlock, extract_glu, random_glu
from relulab.extract.glu import _even_hessian_rank
from relulab.extract.oracle import QueryOracle


@pytest.mark.parametrize("act", ["silu", "gelu", "relu"])
def test_forward_and_paired_identities(act):
    blk = random_glu(5, 3, 2, act=act, seed=1)
    X = np.random.default_rng(0).normal(size=(50, 5))
    zg, zu = X @ blk.W_gate.T, X @ blk.W_up.T
    a = {"silu": zg / (1 + np.exp(-zg)), "relu": np.maximum(zg, 0),
         "gelu": 0.5 * zg * (1 + erf(zg / np.sqrt(2)))}[act]
    assert np.allclose(blk(X), (a * zu) @ blk.W_out.T, atol=1e-12)
    # act(z) - act(-z) = z: the even part is the activation-free quadratic form
    even = 0.5 * (blk(X) + blk(-X))
    assert np.allclose(even, 0.5 * (zg * zu) @ blk.W_out.T, atol=1e-12)


def test_width_from_even_hessian_rank():
    for h in (1, 2, 3):
        blk = random_glu(9, h, act="silu", seed=h)
        r = _even_hessian_rank(QueryOracle(blk, 9), 9, np.random.default_rng(0))
        assert r == 2 * h


def test_small_block_fitted():
    blk = random_glu(6, 2, act="silu", seed=3)
    r = extract_glu(blk, 6, None, "silu", time_limit=20, seed=0)
    assert r.hidden == 2 and r.hidden_inferred
    assert r.median_rel_error < 1e-4
    X = np.random.default_rng(5).normal(size=(100, 6))
    rel = np.linalg.norm(r.block(X) - blk(X), axis=1) / np.linalg.norm(blk(X), axis=1)
    assert np.median(rel) < 1e-4


def test_glu_bad_input():
    with pytest.raises(ExtractError):
        GLUBlock(np.eye(2), np.eye(3), np.eye(2))
    with pytest.raises(ExtractError):
        extract_glu(random_glu(2, 1), 2, 1, act="tanh")
    with pytest.raises(ExtractError):
        extract_glu(random_glu(4, 3), 4, None)  # 2 * 3 >= 4: width not identifiable by rank
    r = extract_glu(random_glu(4, 1), 4, 1, budget=10)
    assert r.status == "partial" and r.queries <= 10
