"""Kink normals measured in a subspace (relulab.extract.trace ``_Known.basis``): for layer 2
the network's gradient lies in the span of the first-layer rows (all of them while the
first layer's orientation is unknown, the rows active beside the kink once it is known), so
the gradient jump across a deeper neuron's kink measured along an orthonormal basis of that
span gives the same normal as the jump measured along all ``d`` axes, with fewer queries.
Checked against the full-space measurement and the true normal on a network with more
inputs than first-layer neurons, and end to end (functionally equal recoveries)."""

from __future__ import annotations

import numpy as np
import pytest

from relulab import Network
from relulab.extract import extract_relu
from relulab.extract import trace as tr
from relulab.extract.layer import _jump_normal, _Probe
from relulab.extract.oracle import QueryOracle
from relulab.extract.space import Space


def _random(arch: list[int], seed: int) -> Network:
    rng = np.random.default_rng(seed)
    Ws = [rng.normal(size=(b, a)) / np.sqrt(a) for a, b in zip(arch[:-1], arch[1:], strict=True)]
    bs = [0.5 * rng.normal(size=b) for b in arch[1:]]
    return Network(Ws, bs)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_subspace_normal_equals_full_space_normal(seed):
    d, n1, n2 = 14, 6, 5
    net = _random([d, n1, n2, 1], seed)
    W1, b1 = np.asarray(net.weights[0]), np.asarray(net.biases[0])
    W2, b2 = np.asarray(net.weights[1]), np.asarray(net.biases[1])
    rng = np.random.default_rng(seed)
    s = np.where(rng.random(n1) < 0.5, -1.0, 1.0)  # stored orientations, as in the attack
    known = tr._Known([], W1 * s[:, None], b1 * s)
    known.cheap = True  # layer 2 as the last hidden layer: where the subspace is used
    o = QueryOracle(net)
    probe = _Probe(o, Space.input(d), np.ones(1), 0.0)
    checked = {"rows": 0, "active": 0}
    for _ in range(40):
        x0, r = 0.3 * rng.normal(size=d), rng.normal(size=d)
        r /= np.linalg.norm(r)
        ts = probe.search(x0, r).kinks(-6.0, 6.0)
        tb = [-6.0, *ts.tolist(), 6.0]
        for j, t in enumerate(ts):
            x = x0 + t * r
            if known.on_known(x):
                continue  # a first-layer kink: its normal is a row, any direction of R^d
            z = W1 @ x + b1
            p = W2 @ np.maximum(z, 0.0) + b2
            q = int(np.argmin(np.abs(p)))
            if abs(p[q]) > 1e-9:
                continue
            g = (W2[q] * (z > 0)) @ W1  # the true normal of neuron q's surface here
            g /= np.linalg.norm(g)
            full = _jump_normal(probe, x0, r, t, tb[j], tb[j + 2])
            for flip in (None, s < 0):  # the row space, then the active rows
                known.flip = flip
                n0 = o.queries
                sub = _jump_normal(probe, x0, r, t, tb[j], tb[j + 2], known.basis)
                used = o.queries - n0
                known.flip = None
                if full is None or sub is None:
                    continue
                assert used < 2 * (d + 1)  # fewer queries than the 2 (d + 1) of the axes
                e_sub = min(np.abs(sub[0] - g).max(), np.abs(sub[0] + g).max())
                e_full = min(np.abs(full[0] - g).max(), np.abs(full[0] + g).max())
                # (a forward-difference step that meets another kink spoils either; the
                # axis step is the longer one)
                if e_full <= 1e-8:
                    assert e_sub <= 1e-8
                    assert min(np.abs(sub[0] - full[0]).max(), np.abs(sub[0] + full[0]).max()) <= 1e-8
                checked["rows" if flip is None else "active"] += 1
    assert checked["rows"] >= 5 and checked["active"] >= 5


def test_basis_is_the_whole_space_when_rows_span_it():
    # 10-20-20-1: 20 rows span R^10, so nothing is saved before the orientation is known
    U = np.random.default_rng(0).normal(size=(20, 10))
    known = tr._Known([], U, np.zeros(20))
    known.cheap = True
    assert known.basis(np.zeros(10), np.zeros(10)) is None
    known.flip = np.zeros(20, bool)  # not even the active rows (they still span most of R^10)
    assert known.basis(np.zeros(10), np.zeros(10)) is None
    few = tr._Known([], U[:4], np.zeros(4))
    assert few.basis(np.zeros(10), np.zeros(10)) is None  # not the cheap mode: never used
    few.cheap = True
    Q, cap = few.basis(np.zeros(10), np.ones(10))
    assert Q.shape == (10, 4) and np.allclose(Q.T @ Q, np.eye(4)) and cap.shape == (4,)


@pytest.mark.parametrize("arch, seed", [([16, 6, 4, 1], 0), ([20, 8, 5, 1], 1)])
def test_two_hidden_layers_equal_with_and_without_subspace_normals(arch, seed, monkeypatch):
    net = _random(arch, seed)
    used = {"sub": 0}
    orig = tr._Known.basis

    def counting(self, pl, pr):
        Q = orig(self, pl, pr)
        used["sub"] += Q is not None
        return Q

    monkeypatch.setattr(tr._Known, "basis", counting)
    r = extract_relu(net, arch[0], arch[1:-1], seed=seed)
    assert used["sub"] > 0  # the subspace path was taken
    assert r.status == "complete", r.unidentified
    assert r.fidelity.equivalence == "equal" and r.fidelity.max_abs_error <= 1e-9
    monkeypatch.setattr(tr, "SUBSPACE_NORMALS", False)
    r0 = extract_relu(net, arch[0], arch[1:-1], seed=seed)
    assert r0.fidelity.equivalence == "equal" and r0.fidelity.max_abs_error <= 1e-9
