"""Deeper layers by tracing kink surfaces (relulab.extract.trace): the previous layer's
orientation comes out of the traced rows (checked against the network that made the
queries), recovered two-hidden-layer networks are functionally equal (exact check), and
what the surfaces cannot show is reported instead of invented."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from relulab import Box, Network
from relulab.extract import extract_relu
from relulab.extract.oracle import QueryOracle
from relulab.extract.trace import trace_layer


def _random(arch: list[int], seed: int) -> Network:
    """Weights N(0, 1/fan_in), biases 0.5 N(0, 1) (the benchmark's family)."""
    rng = np.random.default_rng(seed)
    Ws = [rng.normal(size=(b, a)) / np.sqrt(a) for a, b in zip(arch[:-1], arch[1:], strict=True)]
    bs = [0.5 * rng.normal(size=b) for b in arch[1:]]
    return Network(Ws, bs)


def _rows_match(R: np.ndarray, T: np.ndarray, tol: float) -> bool:
    """Every row of R equals some row of T up to a nonzero factor."""
    Rn = R / np.linalg.norm(R, axis=1, keepdims=True)
    Tn = T / np.linalg.norm(T, axis=1, keepdims=True)
    return bool(np.all(np.abs(np.abs(Rn @ Tn.T).max(axis=1) - 1.0) <= tol))


def test_trace_finds_flipped_orientations_of_an_expansive_layer():
    # 4 inputs, 6 first-layer neurons: one-sided tests cannot orient them (6 > 4).
    rng = np.random.default_rng(4)
    W1, b1 = rng.normal(size=(6, 4)) / 2, 0.5 * rng.normal(size=6)
    W2, b2 = rng.normal(size=(3, 6)) / 6**0.5, 0.5 * rng.normal(size=3)
    net = Network([W1, W2, rng.normal(size=(1, 3))], [b1, b2, [0.0]])
    for flips in ([1, 4], [0, 2, 3, 5]):
        s = np.ones(6)
        s[flips] = -1.0
        tl = trace_layer(QueryOracle(net), [], W1 * s[:, None], b1 * s, 4, np.random.default_rng(4), width=3)
        assert tl.flip is not None and sorted(np.nonzero(tl.flip)[0].tolist()) == flips
        full = [i for i, t in enumerate(tl.neurons) if t.identified]
        assert full
        # rows in the true orientation of layer 1, up to scale: the true layer-2 rows
        R = np.hstack([tl.W, tl.b[:, None]])[full]
        assert _rows_match(R, np.hstack([W2, b2[:, None]]), 1e-9)


def test_two_hidden_layers_expansive_first_layer_equal():
    net = _random([5, 8, 4, 1], 1)
    r = extract_relu(net, 5, widths=[8, 4], seed=1, domain=Box(-np.ones(5), np.ones(5)))
    assert r.status == "complete", r.unidentified
    assert r.orientation[0] == "traced"
    assert r.fidelity.equivalence == "equal" and r.fidelity.max_rel_error <= 1e-9
    X = np.random.default_rng(0).normal(size=(3000, 5)) * 2
    assert np.max(np.abs(net(X) - r.network(X))) <= 1e-8


def test_two_hidden_layers_contractive_equal():
    net = _random([10, 8, 4, 1], 1)
    r = extract_relu(net, 10, widths=[8, 4], seed=1)
    assert r.status == "complete", r.unidentified
    assert r.fidelity.equivalence == "equal" and r.fidelity.max_rel_error <= 1e-9


@settings(max_examples=4, deadline=None)
@given(d=st.integers(3, 6), n1=st.integers(3, 8), n2=st.integers(2, 4), seed=st.integers(0, 10_000))
def test_random_two_hidden_exact_or_says_why(d, n1, n2, seed):
    net = _random([d, n1, n2, 1], seed)
    r = extract_relu(net, d, widths=[n1, n2], seed=seed, equivalence_timeout=10)
    assert r.queries > 0
    if r.status == "complete":
        f = r.fidelity
        assert f.equivalence == "equal" and f.max_rel_error <= 1e-8
        X = np.random.default_rng(seed).normal(size=(500, d)) * 2
        assert np.max(np.abs(net(X) - r.network(X))) <= 1e-7 * (1 + np.max(np.abs(net(X))))
    else:
        assert r.unidentified  # what was not recovered is said
