"""Paths between solutions: alignment removes the symmetry barrier exactly, barriers are
measured as documented, the Bezier search lowers them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relulab import Network
from relulab.dynamics import (
    PathError,
    align,
    bezier_search,
    path_losses,
    path_point,
    polyline_search,
)
from relulab.params import parameter_vector
from relulab.symmetry import permute, random_symmetry, rescale


def _net(rng, dims, skip=False):
    Ws = [rng.normal(size=(dims[k + 1], dims[k])) for k in range(len(dims) - 1)]
    bs = [rng.normal(size=dims[k + 1]) for k in range(len(dims) - 1)]
    sk = (rng.normal(size=(dims[-1], dims[0])), rng.normal(size=dims[-1])) if skip else None
    return Network(Ws, bs, sk)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), depth=st.integers(1, 3), skip=st.booleans())
def test_barrier_to_symmetric_copy_is_zero_after_alignment(seed, depth, skip):
    rng = np.random.default_rng(seed)
    dims = [3] + [int(rng.integers(2, 7)) for _ in range(depth)] + [2]
    net = _net(rng, dims, skip)
    copy = random_symmetry(net, rng=seed + 1, spread=2.0)
    X = rng.normal(size=(15, 3))
    Y = net(X) + 0.1 * rng.normal(size=(15, 2))
    al = align(net, copy)
    assert np.allclose(al(X), copy(X), rtol=1e-12, atol=1e-12)  # same function as the copy
    assert np.allclose(parameter_vector(al), parameter_vector(net), rtol=1e-12, atol=1e-12)
    res = path_losses(net, copy, X, Y, n_points=21)
    scale = max(res.loss_a, 1.0)
    assert res.barrier <= 1e-12 * scale
    assert np.max(np.abs(res.losses - res.loss_a)) <= 1e-12 * scale
    assert res.distance <= 1e-10 * np.linalg.norm(parameter_vector(net))


def test_unaligned_copy_has_a_barrier_and_convention():
    rng = np.random.default_rng(0)
    net = _net(rng, [2, 6, 1])
    copy = permute(rescale(net, [np.exp(rng.uniform(-2, 2, 6))]), [rng.permutation(6)])
    X = rng.normal(size=(30, 2))
    Y = net(X)
    raw = path_losses(net, copy, X, Y, align_first=False, n_points=11)
    # by hand: loss at each t of the straight line, barrier = max - max(endpoints)
    ta, tb = parameter_vector(net), parameter_vector(copy)
    from relulab.params import network_from_parameters

    by_hand = [0.5 * np.sum((network_from_parameters(net, (1 - t) * ta + t * tb)(X) - Y) ** 2) / 30
               for t in np.linspace(0, 1, 11)]
    assert np.allclose(raw.losses, by_hand, rtol=1e-12, atol=1e-15)
    assert raw.barrier == pytest.approx(max(by_hand) - max(by_hand[0], by_hand[-1]))
    assert raw.barrier > 1e-3


def test_path_points():
    a, b, c = np.zeros(3), np.ones(3), np.array([2.0, -1.0, 0.5])
    for kind in ("linear", "polyline", "bezier"):
        assert np.array_equal(path_point(a, b, 0.0, kind, c), a)
        assert np.array_equal(path_point(a, b, 1.0, kind, c), b)
    assert np.array_equal(path_point(a, b, 0.5, "polyline", c), c)
    assert np.allclose(path_point(a, b, 0.5, "bezier", c), 0.25 * a + 0.5 * c + 0.25 * b)


def test_bezier_search_lowers_barrier_between_independent_solutions():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 2))
    Y = np.abs(X[:, :1]) - np.abs(X[:, 1:])
    torch = pytest.importorskip("torch")
    sols = []
    for s in range(2):
        torch.manual_seed(s)
        m = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1)).double()
        opt = torch.optim.Adam(m.parameters(), lr=0.02)
        Xt, Yt = torch.tensor(X), torch.tensor(Y)
        for _ in range(250):
            opt.zero_grad()
            loss = ((m(Xt) - Yt) ** 2).mean()
            loss.backward()
            opt.step()
        from relulab.io.torch import from_torch

        sols.append(from_torch(m))
    res = bezier_search(sols[0], sols[1], X, Y, steps=80, lr=0.01)
    assert res.curved.barrier <= res.linear.barrier + 1e-12
    assert res.to_dict()["barrier_curved"] == res.curved.barrier


def test_bad_inputs():
    rng = np.random.default_rng(0)
    a, b = _net(rng, [2, 3, 1]), _net(rng, [2, 4, 1])
    X, Y = rng.normal(size=(5, 2)), np.zeros(5)
    with pytest.raises(PathError, match="architectures differ"):
        path_losses(a, b, X, Y)
    with pytest.raises(PathError, match="unknown kind"):
        path_losses(a, a, X, Y, kind="spline")
    with pytest.raises(PathError, match="unknown name"):
        path_losses(a, a, X, Y, loss="hinge")
    with pytest.raises(PathError, match="X"):
        path_losses(a, a, np.ones((5, 3)), Y)
    with pytest.raises(PathError, match="NaN"):
        path_losses(a, a, X, np.full(5, np.nan))
    with pytest.raises(PathError, match="t must lie"):
        path_point(np.zeros(1), np.ones(1), 1.5)


def test_polyline_search_starts_on_the_line_and_never_ends_worse():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(25, 2))
    Y = np.abs(X[:, :1]) - 0.3
    a, b = _net(rng, [2, 5, 1]), _net(rng, [2, 5, 1])
    still = polyline_search(a, b, X, Y, bends=3, steps=0, points_per_segment=5)
    # zero steps: the bends lie on the straight line, so the losses are the linear path's
    assert np.allclose(still.losses, still.linear.losses, rtol=1e-10, atol=1e-12)
    assert still.barrier == pytest.approx(still.linear.barrier)
    moved = polyline_search(a, b, X, Y, bends=3, steps=150, lr=0.02, points_per_segment=5)
    assert moved.barrier <= moved.linear.barrier + 1e-9
    assert moved.bends.shape == (3, still.bends.shape[1]) and moved.to_dict()["status"] == "sampled"
    copy = random_symmetry(a, rng=5)
    assert polyline_search(a, copy, X, Y, bends=2, steps=20).barrier < 1e-12
    with pytest.raises(PathError, match="bends"):
        polyline_search(a, b, X, Y, bends=0)


def test_searches_name_themselves_and_refuse_a_diverged_path():
    # lr = 1e300: polyline_search answered a NaN barrier and bezier_search a NetworkError
    # about "layer 1"; a bad X named neither search (dynamics #7)
    rng = np.random.default_rng(1)
    a, b = _net(rng, [2, 6, 1]), _net(rng, [2, 6, 1])
    X = rng.normal(size=(30, 2))
    Y = np.abs(X[:, :1])
    for search in (bezier_search, polyline_search):
        name = search.__name__
        with pytest.raises(PathError, match=rf"{name}: the search diverged \(lr=1e\+300\)"):
            search(a, b, X, Y, steps=5, lr=1e300)
        with pytest.raises(PathError, match=rf"{name}: X: expected"):
            search(a, b, X[:, :1], Y, steps=1)
        with pytest.raises(PathError, match=rf"{name}: architectures differ"):
            search(a, _net(rng, [2, 4, 1]), X, Y, steps=1)
        assert np.isfinite(search(a, b, X, Y, steps=3).to_dict()["barrier_linear"])
