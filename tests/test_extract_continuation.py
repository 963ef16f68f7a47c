"""The query-saving continuation of a kink surface (relulab.extract.trace): past a
hyperplane of the layer before, the surface's new normal is computed from the crossing
point and one critical point beyond it (no gradient queries).  Checked against the true
normal of the network that made the queries, and end to end: two-hidden-layer networks
recovered with it are functionally equal (exact check), as without it."""

from __future__ import annotations

import numpy as np
import pytest

from relulab import Network
from relulab.extract import extract_relu
from relulab.extract import trace as tr


def _random(arch: list[int], seed: int) -> Network:
    rng = np.random.default_rng(seed)
    Ws = [rng.normal(size=(b, a)) / np.sqrt(a) for a, b in zip(arch[:-1], arch[1:], strict=True)]
    bs = [0.5 * rng.normal(size=b) for b in arch[1:]]
    return Network(Ws, bs)


def _surface(W1, b1, w2, c2, x):
    """Value and gradient (in the cell of x) of a layer-2 pre-activation."""
    z = W1 @ x + b1
    return float(w2 @ np.maximum(z, 0.0) + c2), (w2 * (z > 0)) @ W1


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_continued_normal_is_the_true_normal_past_the_crossing(seed):
    rng = np.random.default_rng(seed)
    d, n1 = 7, 9
    W1, b1 = rng.normal(size=(n1, d)), rng.normal(size=n1)
    w2, c2 = rng.normal(size=n1), 0.3
    known = tr._Known([], W1, b1)
    checked = 0
    for _ in range(50):
        # a point of the surface p = 0: bisection along a random line (the true network)
        x0, r = rng.normal(size=d), rng.normal(size=d)
        ts = np.linspace(-6, 6, 2001)
        vals = np.maximum((x0 + ts[:, None] * r) @ W1.T + b1, 0.0) @ w2 + c2
        flips = np.nonzero(np.sign(vals[:-1]) != np.sign(vals[1:]))[0]
        if flips.size == 0:
            continue
        a, b = ts[flips[0]], ts[flips[0] + 1]
        for _ in range(60):
            m = 0.5 * (a + b)
            if np.sign(_surface(W1, b1, w2, c2, x0 + m * r)[0]) == np.sign(vals[flips[0]]):
                a = m
            else:
                b = m
        x = x0 + 0.5 * (a + b) * r
        _, g = _surface(W1, b1, w2, c2, x)
        n = g / np.linalg.norm(g)
        v = rng.normal(size=d)
        v -= (v @ n) * n
        v /= np.linalg.norm(v)
        crossed = tr._crossed(known, x, v)
        t1 = known.next_boundary(x, v, 50.0)
        if crossed is None or t1 is None:
            continue
        xc = x + t1 * v
        # the surface beyond: the plane of the next cell, met on the line y + t n
        y = xc + 1e-3 * v
        p, g2 = _surface(W1, b1, w2, c2, y)
        if abs(g2 @ n) < 1e-3:
            continue
        xp = y - p / (g2 @ n) * n
        if (np.sign(W1 @ xp + b1) != np.sign(W1 @ y + b1)).any():
            continue  # left the next cell: the plane there is another one
        m = tr._continued_normal(n, crossed[1], xc, xp)
        assert m is not None
        true = g2 / np.linalg.norm(g2)
        assert min(np.abs(m - true).max(), np.abs(m + true).max()) <= 1e-9
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize("arch, seed", [([8, 10, 5, 1], 0), ([12, 9, 6, 1], 1)])
def test_two_hidden_layers_equal_with_and_without_carried_normals(arch, seed, monkeypatch):
    net = _random(arch, seed)
    used = {"carried": 0}
    orig = tr._confirm_plane

    def counting(*a, **k):
        got = orig(*a, **k)
        used["carried"] += got == "exact"
        return got

    monkeypatch.setattr(tr, "_confirm_plane", counting)
    r = extract_relu(net, arch[0], arch[1:-1], seed=seed)
    assert used["carried"] > 0  # the query-saving path was taken
    assert r.status == "complete", r.unidentified
    assert r.fidelity.equivalence == "equal" and r.fidelity.max_abs_error <= 1e-9
    monkeypatch.setattr(tr, "CHEAP_CONTINUATION", False)
    r0 = extract_relu(net, arch[0], arch[1:-1], seed=seed)
    assert r0.fidelity.equivalence == "equal" and r0.fidelity.max_abs_error <= 1e-9
