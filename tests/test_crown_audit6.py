"""aud_crown6: deadlines inside the interval pass and CROWN's layers, and input shapes.

Independent checks: sampled outputs (numpy forward of the same network) inside every
bound; the interval-only bounds of the same boxes."""

import time

import numpy as np
import pytest

from relulab import Network
from relulab.bounds import crown_batch, float_layers
from relulab.crown import BoundGraph, bound
from relulab.crown.graph import GraphError


def _net(seed: int = 0, d: int = 4, w: int = 40) -> Network:
    rng = np.random.default_rng(seed)
    return Network([rng.normal(size=(w, d)), rng.normal(size=(w, w)) / np.sqrt(w), rng.normal(size=(w, w)) / np.sqrt(w),
                    rng.normal(size=(1, w))], [0.1 * rng.normal(size=w), 0.1 * rng.normal(size=w), 0.1 * rng.normal(size=w),
                                               np.zeros(1)])


def test_crown_batch_past_its_deadline_gives_the_interval_bounds_of_the_later_layers():
    net = _net()
    Ws, bs, _ = float_layers(net)
    lo, hi = -np.ones((1, 4)), np.ones((1, 4))
    full, low_full = crown_batch(Ws, bs, lo, hi, intermediate="hybrid")
    late, low_late = crown_batch(Ws, bs, lo, hi, intermediate="hybrid", deadline=time.monotonic() - 1.0)
    ivl, low_ivl = crown_batch(Ws, bs, lo, hi, intermediate="interval")
    for (a, b), (c, e) in zip(late, ivl, strict=True):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, e)
    # looser than CROWN's and still sound: every sampled output inside
    assert np.all(low_late <= low_full + 1e-12)
    Y = net(np.random.default_rng(1).uniform(-1, 1, (20_000, 4)))
    assert Y.min() >= low_late[0, 0] and -Y.max() >= low_late[0, 1]


def test_a_bound_whose_interval_pass_runs_long_past_its_deadline_is_given_up_as_vacuous():
    bg = BoundGraph.from_network(_net())
    lo, hi = -np.ones((1, 4)), np.ones((1, 4))
    import relulab.crown.propagate as P

    old = P.INTERVAL_GRACE_MIN
    P.INTERVAL_GRACE_MIN = 0.0   # no grace at all: the first node is already too late
    try:
        r = bound(bg, lo, hi, method="crown", deadline=time.monotonic() - 1.0)
    finally:
        P.INTERVAL_GRACE_MIN = old
    assert r.status == "partial" and "interval pass was cut" in r.reason
    assert np.all(np.isneginf(r.lower)) and np.all(np.isposinf(r.upper))
    assert all(np.all(np.isneginf(a)) and np.all(np.isposinf(b)) for a, b in r.pre.values())


def test_forward_refuses_inputs_of_another_shape():
    torch = pytest.importorskip("torch")
    m = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(108, 2))
    bg = BoundGraph.from_torch(m, (2, 8, 8))
    X = np.random.default_rng(0).standard_normal((1, 2, 8, 8))
    with torch.no_grad():
        ref = m(torch.as_tensor(X, dtype=torch.float32)).double().numpy()
    np.testing.assert_allclose(bg.forward(X), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(bg.forward(X.reshape(1, -1)), ref, rtol=1e-5, atol=1e-5)
    for bad in (X.transpose(0, 2, 3, 1), np.ones((4, 64))):
        with pytest.raises(GraphError, match="do not fit input shape"):
            bg.forward(bad)


def test_the_attack_runs_without_a_time_limit():
    from relulab import Box
    from relulab.verify.attack import attack

    net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
    x = attack(net, Box([-1], [1]), np.array([[-1.0]]), np.array([-0.9]), time_limit=None)
    assert x is not None and abs(x[0]) >= 0.9
