"""A box far from the origin is moved there before its MILP (relulab.verify._centre):
the moved network agrees with the original, in exact arithmetic, within the error bound
that is added to the MILP's tolerance error."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

from relulab import Box, Network
from relulab.verify._centre import centre, shift_error


@pytest.mark.parametrize("seed", range(6))
def test_the_moved_network_agrees_within_its_error_bound(seed):
    rng = np.random.default_rng(seed)
    d, h = 3, 5
    c = 10.0 ** rng.uniform(3, 9) * rng.choice([-1, 1], size=d)
    W1 = rng.normal(size=(h, d)) * 10.0 ** rng.uniform(0, 4)
    if seed >= 3:
        W1[:, 0] *= 1e-9   # a wide input under small weights: scaled too
    b1 = -W1 @ c + rng.normal(size=h)
    skip = (rng.normal(size=(2, d)), rng.normal(size=2) * 1e9) if seed % 2 else None
    if skip is not None and seed >= 3:
        skip[0][:, 0] *= 1e-9
    net = Network([W1, rng.normal(size=(h, h)), rng.normal(size=(2, h))],
                  [b1, rng.normal(size=h), rng.normal(size=2)], skip)
    # seeds 3-5: a wide first coordinate under small weights, scaled by a power of two
    box = Box(c - 7.0, c + 3.0) if seed < 3 else Box(c - np.array([3e9, 7.0, 1.0]), c + np.array([1e9, 3.0, 1.0]))
    moved = centre(net, box)
    assert moved is not None and moved.box.dim == d
    assert (moved.scale is not None) == (seed >= 3)
    scale = np.ones(d) if moved.scale is None else moved.scale
    C = rng.normal(size=(3, 2))
    err = shift_error([np.asarray(W) for W in net.weights], C, moved)
    f, g = net.exact(), moved.net.exact()
    for x in box.sample(20, rng):
        xf = np.array([F(float(v)) for v in x], dtype=object)
        u = (xf - np.array([F(float(v)) for v in moved.c], dtype=object)) / np.array(
            [F(float(v)) for v in scale], dtype=object)
        # the exact u lies in the moved box (rounded outward)
        assert all(F(float(lo)) <= ui <= F(float(hi)) for ui, lo, hi in zip(u, moved.box.lo, moved.box.hi, strict=True))
        gap = np.array([abs(sum((F(float(ck)) * (a - b) for ck, a, b in zip(row, f(xf), g(u), strict=True)), F(0)))
                        for row in C])
        assert all(gk <= F(float(ek)) for gk, ek in zip(gap, err, strict=True))


def test_a_box_around_the_origin_is_not_moved():
    net = Network([[[1.0, 2.0]], [[1.0]]], [[0.5], [0.0]])
    assert centre(net, Box([-3.0, 1e6], [3.0, 1e6 + 1.0])).c.tolist() == [0.0, 1e6 + 0.5]
    assert centre(net, Box([-3.0, -0.5], [3.0, 2.0])) is None


def test_a_subnormal_weight_does_not_stop_the_move():
    """A scale of 2^1024 (1 / a subnormal weight) was infinite, and the whole move was
    dropped, far coordinates included."""
    net = Network([[[1e3, 1e-310]], [[1.0]]], [[-1e9], [0.0]])
    m = centre(net, Box([1e6 - 1e3, -4096.0], [1e6 + 1e3, 4096.0]))
    assert m is not None and m.c.tolist() == [1e6, 0.0]
    assert np.all(np.isfinite(m.scale if m.scale is not None else 1.0))
