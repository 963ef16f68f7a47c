"""dynamics at the edges: data the model's float type cannot hold, the stop rule's loss,
rising losses, kernels that overflow, translated point sets, and bad arguments."""

from __future__ import annotations

import json
import math
from itertools import product

import numpy as np
import pytest

from relulab.dynamics import (
    DynamicsError,
    KernelError,
    effective_width,
    empirical_ntk,
    linear_dichotomies,
    mlp,
    monte_carlo_ntk,
    nngp,
    ntk,
    ntk_fluctuation,
    plateaus,
    saddle_events,
    train,
)
from relulab.dynamics.dichotomies import cover_count, ternary_patterns

torch = pytest.importorskip("torch")


# ------------------------------------------------------------------ train
@pytest.mark.parametrize("s", [1e-50, 1e90])
def test_float32_model_refuses_data_outside_its_range(s):
    """1e-50 became 0 in float32 (a run 'completed' on all-zero data, loss stuck at 0.5);
    1e90 became inf ('diverged' at step 0)."""
    X, y = np.array([[-1.0], [1.0]]) * s, np.array([1.0, -1.0])
    with pytest.raises(DynamicsError, match=r"^X has entries of size .* outside what the model's float32"):
        train(mlp([1, 4, 1], dtype="float32", seed=0), X, y, steps=5)
    if s < 1:   # float64 holds these: the two points stay apart and the run goes on
        t = train(mlp([1, 4, 1], dtype="float64", seed=0), X, y, steps=5)
        assert t.status == "completed" and np.isfinite(t.final_loss)


def test_loss_tol_reads_the_full_data_loss_not_a_minibatch():
    """With minibatches of one point, the point x = 0, y = 0 has loss 0 at step 0 while the
    full-data loss is far above loss_tol: the run stopped there on the minibatch's loss.
    It stops only at a recorded (full-data) loss at most loss_tol."""
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    y = np.array([0.0, 5.0, -5.0, 10.0])
    t = train(mlp([1, 8, 1], seed=0), X, y, optimizer="sgd", lr=1e-3, batch_size=1, steps=300,
              every=1, loss_tol=1e-3, record=[])
    assert np.all(np.asarray(t.recorded_loss[:-1]) > 1e-3)
    if t.status == "stopped":
        assert t.recorded_loss[-1] <= 1e-3
    else:
        assert t.status == "completed" and t.steps == 300


def test_diverged_trajectory_writes_strict_json():
    X, y = np.array([[1.0], [2.0]]), np.array([1e200, -1e200])
    t = train(mlp([1, 2, 1], seed=0), X, y, steps=3, lr=0.1)
    d = t.to_dict()
    json.dumps(d, allow_nan=False)
    if not math.isfinite(t.final_loss):
        assert d["final_loss"] in ("inf", "nan")


# ------------------------------------------------------------------ saddles
def test_a_rising_loss_is_no_plateau():
    ramp = np.linspace(0.0, 1.0, 300)
    assert plateaus(ramp, window=5)[0] == []
    steps = np.r_[np.ones(100), np.linspace(1, 2, 100), 2 * np.ones(100)]
    runs = plateaus(steps, window=5)[0]
    assert len(runs) == 2 and runs[0][1] < 110 and runs[1][0] > 190   # the ramp is between them
    falling = np.r_[np.ones(100), np.linspace(1, 0.5, 10), 0.5 * np.ones(100)]
    assert plateaus(falling, window=5)[0] == [(0, 100), (109, 209)]


def test_saddle_event_arguments_are_named():
    with pytest.raises(DynamicsError, match="needs a Trajectory"):
        saddle_events([1.0, 0.5, 0.2])
    with pytest.raises(DynamicsError, match="loss curve of numbers"):
        plateaus(["a", "b", "c"])


# ------------------------------------------------------------------ kernels
def test_kernels_that_overflow_are_one_error():
    X = np.array([[1.0, 2.0], [-3.0, 0.5]]) * 1e155
    for f in (lambda: ntk(X, depth=2), lambda: nngp(X, depth=1), lambda: ntk_fluctuation(X)):
        with pytest.raises(KernelError, match="overflows float64"):
            f()


def test_empirical_ntk_scales_and_monte_carlo_rng_are_checked():
    from relulab import Network

    net = Network([[[1.0]], [[1.0]]], [[0.0], [0.0]])
    X = np.array([[1.0]])
    with pytest.raises(KernelError, match="scales: need one"):
        empirical_ntk(net, X, scales=[1.0, 1.0])
    with pytest.raises(KernelError, match="scales: contain NaN"):
        empirical_ntk(net, X, scales=[(np.nan, 1.0), (1.0, 1.0)])
    with pytest.raises(KernelError, match="rng: need a seed"):
        monte_carlo_ntk(X, depth=1, width=8, n_networks=1, rng="a")


# ------------------------------------------------------------------ dichotomies
def _brute_affine_dichotomies(P: np.ndarray) -> int:
    """Sign vectors of w . x + b strictly nonzero, by LP feasibility of each of the 2^n."""
    from scipy.optimize import linprog

    n, d = P.shape
    A = np.hstack([P, np.ones((n, 1))])
    count = 0
    for s in product((-1.0, 1.0), repeat=n):
        S = np.array(s)[:, None]
        res = linprog(np.zeros(d + 1), A_ub=-(S * A), b_ub=-np.ones(n), bounds=[(None, None)] * (d + 1),
                      method="highs")
        count += res.status == 0
    return count


@pytest.mark.parametrize("shift", [0.0, 1e4, 1e6])
def test_a_translated_grid_is_counted_as_the_grid(shift):
    """A 4 x 4 integer grid (degenerate) shifted far from the origin was refused as 'nearly
    degenerate'; the count is translation invariant and equals brute force."""
    g = np.array([[i, j] for i in range(4) for j in range(4)], dtype=float)
    want = _brute_affine_dichotomies(g[:10])
    assert linear_dichotomies(g[:10] + shift) == want
    assert linear_dichotomies(g + shift) == linear_dichotomies(g)


def test_dichotomy_arguments_are_named():
    with pytest.raises(DynamicsError, match="bias must be True or False"):
        linear_dichotomies([[0.0], [1.0]], bias="no")
    with pytest.raises(DynamicsError, match="real numbers"):
        linear_dichotomies([[0.0, 1.0], [1.0]])
    with pytest.raises(DynamicsError, match="directions contain NaN"):
        ternary_patterns([[np.nan, 1.0]], [[0.0], [1.0]])
    with pytest.raises(DynamicsError, match="tol must be a finite number"):
        ternary_patterns([[1.0, 0.0]], [[0.0], [1.0]], tol=float("nan"))
    with pytest.raises(DynamicsError, match="cover_count"):
        cover_count(-1, 2)
    assert cover_count(0, 2) == 1 and cover_count(3, 2) == _brute_affine_dichotomies(np.array([[0.0], [1.0], [2.0]]))


def test_effective_width_arguments_are_named():
    V = [[1.0, 0.0], [0.0, 1.0]]
    assert effective_width(V) == 2
    for kw, match in (({"tol": float("nan")}, "tol must be"), ({"min_share": float("nan")}, "min_share"),
                      ({"outgoing": [1.0, 2.0, 3.0]}, "outgoing")):
        with pytest.raises(DynamicsError, match=match):
            effective_width(V, **kw)
    with pytest.raises(DynamicsError, match="NaN"):
        effective_width([[np.nan, 0.0], [0.0, 1.0]])
