"""Limits and argument checks of relulab.symmetry and relulab.params (from an audit):
each bad argument is one clear error naming it, and the exact computations stop where
their limits say."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from relulab import Box, Network
from relulab.errors import RelulabError
from relulab.params import functional_dimension, gd_conservation, path_lifting_rank
from relulab.symmetry import canonical, equivalent, neuron_status, random_symmetry, reduce
from relulab.symmetry.equivalence import whole_space_box
from relulab.symmetry.transforms import rescale


def _net():
    return Network([[[1.0, 0.5], [-1.0, 2.0]], [[1.0, -1.0]]], [[0.0, 0.1], [0.0]])


@pytest.mark.parametrize("call, match", [
    (lambda: equivalent(_net(), _net(), Box([-1, -1], [1, 1]), n_samples=-5), "n_samples must be an integer"),
    (lambda: equivalent(_net(), _net(), Box([-1, -1], [1, 1]), timeout=float("nan")), "timeout must be"),
    (lambda: equivalent(_net(), _net(), Box([-1, -1], [1, 1]), timeout=-1), "timeout must be"),
    (lambda: equivalent(_net(), None, Box([-1, -1], [1, 1])), "g must be a relulab Network"),
    (lambda: whole_space_box(), "give one or more relulab Networks"),
    (lambda: reduce(_net(), Box([-1, -1], [1, 1]), n_check=-1), "n_check must be an integer"),
    (lambda: reduce(_net(), Box([-1, -1], [1, 1]), timeout=-1), "timeout must be"),
    (lambda: neuron_status(_net(), Box([-1], [1])), "dimension"),
    (lambda: canonical(_net(), merge_tol=1e9), "merge_tol must be a number"),
    (lambda: canonical(_net(), merge_tol=float("nan")), "merge_tol must be a number"),
    (lambda: canonical(_net(), Box([-1, -1], [1, 1]),
                       status=neuron_status(Network([[[1.0, 0.0]], [[1.0]]], [[0.0], [0.0]]),
                                            Box([-1, -1], [1, 1]))), "status has layer widths"),
    (lambda: rescale(_net(), [["a", 1.0]]), "factors must be numbers"),
    (lambda: random_symmetry(_net(), spread=-1), "spread must be a finite number"),
    (lambda: functional_dimension(_net(), [["a", "b"]]), "points: must be numbers"),
    (lambda: gd_conservation(_net(), np.zeros((0, 2)), np.zeros(0), lr=0.01, steps=2), "X has no rows"),
])
def test_bad_arguments_give_one_clear_error(call, match):
    with pytest.raises(RelulabError, match=match):
        call()


def test_diverging_gradient_descent_is_an_error_without_warnings():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 2)) * 10
    Y = rng.normal(size=(100, 1))
    with np.errstate(all="raise"):          # a leaked overflow would raise here
        with pytest.raises(RelulabError, match="diverged"):
            gd_conservation(_net(), X, Y, lr=1e50, steps=3)


def test_exact_functional_dimension_builds_its_jacobian_under_the_deadline(monkeypatch):
    # the exact Jacobian was built for every point before the first deadline check:
    # 50 s under time_limit=2 on 2,000 points; now it goes in chunks between checks
    fd_mod = importlib.import_module("relulab.params.fdim")
    seen = []
    real = fd_mod.realization_jacobian

    def spy(net, X):
        if net.is_exact:
            seen.append(len(X))
        return real(net, X)

    monkeypatch.setattr(fd_mod, "realization_jacobian", spy)
    X = np.random.default_rng(0).normal(size=(500, 2))
    fd = functional_dimension(_net(), X, exact=True, time_limit=1e-9)
    assert fd.exact_rank is None and "time limit" in fd.exact_stopped
    assert sum(seen) <= fd_mod.EXACT_CHUNK                  # not all 500 points
    full = functional_dimension(_net(), X, exact=True)       # no limit: the exact rank
    assert full.exact_rank == full.rank and sum(seen) >= 500


def test_exact_path_lifting_rank_is_refused_beyond_its_size():
    rng = np.random.default_rng(0)
    dims = [3, 16, 16, 16, 1]
    net = Network([rng.integers(-3, 4, size=(b, a)) for a, b in zip(dims[:-1], dims[1:], strict=True)],
                  [rng.integers(-3, 4, size=b) for b in dims[1:]]).exact()
    with pytest.raises(RelulabError, match="pass exact=False"):
        path_lifting_rank(net)
    assert path_lifting_rank(net, exact=False).rank <= net.n_params - net.n_neurons
