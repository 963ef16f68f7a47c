"""Audit fixes in relulab.params: honest Gram-route ranks, memory checks, argument checks."""

import numpy as np
import pytest

from relulab import Network
from relulab.errors import RelulabError
from relulab.limits import ResourceLimitError, memory_limit
from relulab.params import _rank, functional_dimension
from relulab.params._rank import numerical_rank


def _known_rank(m, n, r, n_tiny, tiny, seed=0):
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.normal(size=(m, r)))
    V, _ = np.linalg.qr(rng.normal(size=(n, r)))
    s = np.r_[np.logspace(0, -2, r - n_tiny), np.full(n_tiny, tiny)]
    return (U * s) @ V.T


def test_rank_above_dense_threshold_uses_svd_when_memory_allows(monkeypatch):
    monkeypatch.setattr(_rank, "DENSE_SVD_ENTRIES", 100, raising=False)
    J = _known_rank(400, 60, 50, 5, 1e-9)
    info = numerical_rank(J)
    assert (info.rank, info.method, info.lower_bound) == (50, "svd", False)
    assert info.gap > 1e5


def test_rank_gram_route_is_marked_a_lower_bound(monkeypatch):
    # the dense SVD does not fit the budget, the 60 x 60 Gram matrix does: singular values
    # of 1e-9 (relative) are below what the Gram matrix resolves, so the rank is a bound
    monkeypatch.setattr(_rank, "DENSE_SVD_ENTRIES", 100, raising=False)
    for J in (_known_rank(400, 60, 50, 5, 1e-9), _known_rank(400, 60, 50, 5, 1e-9).T):
        with memory_limit(400_000):
            info = numerical_rank(J)
        assert info.method == "gram"
        assert info.rank == 45 and info.lower_bound
        assert info.to_dict()["lower_bound"] is True


def test_rank_gram_route_full_rank_is_not_a_bound(monkeypatch):
    monkeypatch.setattr(_rank, "DENSE_SVD_ENTRIES", 100, raising=False)
    J = _known_rank(400, 60, 60, 0, 1.0)
    with memory_limit(400_000):
        info = numerical_rank(J)
    assert (info.rank, info.method, info.lower_bound) == (60, "gram", False)


def test_rank_too_big_for_gram_is_a_resource_error(monkeypatch):
    monkeypatch.setattr(_rank, "DENSE_SVD_ENTRIES", 100, raising=False)
    J = _known_rank(400, 60, 50, 5, 1e-9)
    with memory_limit(50_000), pytest.raises(ResourceLimitError, match="Gram"):
        numerical_rank(J)


def test_functional_dimension_refuses_negative_tol():
    dead = Network([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0]]], [[-100.0, 0.5], [0.0]])
    X = np.random.default_rng(0).normal(size=(30, 2))
    with pytest.raises(RelulabError, match="tol"):
        functional_dimension(dead, X, tol=-1)
    with pytest.raises(RelulabError, match="tol"):
        numerical_rank(np.eye(3), tol=float("nan"))
    assert functional_dimension(dead, X).rank == 4


def test_find_conservation_laws_checks_memory_up_front():
    from relulab.params.conservation_modern import find_conservation_laws, modern_architecture

    a = modern_architecture("ffn-relu", d=30, h=30, o=5)
    with memory_limit(2**30), pytest.raises(ResourceLimitError, match="590240 unknowns"):
        find_conservation_laws(a)


def test_conservation_argument_checks():
    from relulab.params import conserved_quantities
    from relulab.params.conservation import gd_conservation

    net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.5], [0.0]])
    X1, Y1 = np.array([[0.0], [1.0], [2.0]]), np.array([[0.0], [1.0], [0.0]])
    with pytest.raises(RelulabError, match="steps"):
        gd_conservation(net, X1, Y1, 0.1, 2.5)
    with pytest.raises(RelulabError, match="net"):
        conserved_quantities("x")
    assert gd_conservation(net, X1, Y1, 0.1, 2)[0].steps == 2


@pytest.mark.parametrize("d, k, heads", [(2, 2, 1), (2, 2, 2), (2, 1, 3), (1, 1, 3)])
def test_mha_one_token_expected_count(d, k, heads):
    pytest.importorskip("torch")
    from relulab.params.conservation_modern import (
        find_conservation_laws,
        lie_rank_bound,
        modern_architecture,
    )

    a = modern_architecture("mha", d=d, k=k, heads=heads, T=1)
    laws = find_conservation_laws(a, seed=0)
    assert laws.count == a.expected and laws.to_dict()["matches_expected"]
    # d = 1: brackets that vanish up to rounding once counted as directions (bound too small)
    assert lie_rank_bound(a)["bound"] == a.expected
    assert "T = 1" in a.reason


def test_fdim_cli_says_when_the_rank_is_a_lower_bound(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from relulab.cli import app
    from relulab.io import save_model

    rng = np.random.default_rng(0)
    net = Network([rng.normal(size=(4, 3)), rng.normal(size=(2, 4))], [rng.normal(size=4), rng.normal(size=2)])
    p = tmp_path / "net.npz"
    save_model(net, p)
    # a tiny dense-SVD threshold and a budget between the Jacobian and its dense SVD:
    # the Gram route runs and the text output must say the rank is only a bound
    monkeypatch.setattr(_rank, "DENSE_SVD_ENTRIES", 10, raising=False)
    monkeypatch.setattr(_rank, "memory_budget", lambda: 1, raising=False)
    res = CliRunner().invoke(app, ["fdim", str(p), "--points", "60", "--seed", "3"])
    assert res.exit_code == 0, res.output
    d = functional_dimension(net, rng.normal(size=(60, 3)))
    assert d.numerical.method == "gram" and d.numerical.lower_bound  # rank <= 26 - 4 < 26 columns
    assert "lower bound" in res.output


def test_a_jacobian_that_overflows_is_refused_not_read_as_rank_zero():
    # points near 1e308 made the Jacobian NaN; its singular values were NaN and the
    # functional dimension read 0 (CLI: --box -1e308:1e308 sampled such points)
    import warnings

    net = Network([[[1.0], [-2.0]], [[1.0, 3.0]]], [[0.5, -0.25], [0.0]])
    X = np.array([[1e308], [-1e308], [0.3]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RelulabError, match="Jacobian at these points overflows"):
            functional_dimension(net, X)
    assert functional_dimension(net, np.array([[1.0], [-1.0], [0.3]])).rank > 0
