"""The output fit of the last hidden layer's unidentified weights (``relu._output_layer``):
a weight is fitted only from inputs where both of its neurons are active, and a weight no
input shows is reported as not identified instead of being called checked."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from relulab import Network
from relulab.extract.oracle import QueryOracle
from relulab.extract.relu import _output_layer, _State


def _true_net(dead_l: bool) -> Network:
    rng = np.random.default_rng(3)
    W1, b1 = rng.normal(size=(4, 3)), 0.3 * rng.normal(size=4)
    if dead_l:
        W1[1], b1[1] = 0.0, -1.0  # layer-1 neuron 1 never active: its weights show nowhere
    W2, b2 = rng.normal(size=(2, 4)), np.array([0.5, 0.2])
    W2[0, 1] = -0.8
    return Network([W1, W2, rng.normal(size=(1, 2))], [b1, b2, [0.1]])


def _state_missing_weight(net: Network) -> _State:
    """The recovered state of ``net`` with layer-2 weight (0, 1) unknown (set to 0), as the
    traces leave it when neuron 0's surface never crosses layer-1 neuron 1's hyperplane."""
    (W1, W2, _), (b1, b2, _) = net.weights, net.biases
    U = np.array(W2, dtype=float)
    U[0, 1] = 0.0
    st = _State()
    st.layers = [(np.array(W1, dtype=float), np.array(b1, dtype=float)), (U, np.array(b2, dtype=float))]
    st.orient = ["traced", "traced"]
    # one stand-in traced point each (the fit adds inputs on both sides of it)
    o, e = [np.zeros(3)], [np.eye(3)[0]]
    st.traced = [SimpleNamespace(neurons=[SimpleNamespace(unknown=[1], points=o, normals=e),
                                          SimpleNamespace(unknown=[], points=o, normals=e)])]
    return st


def test_weight_left_to_the_output_is_recovered_where_both_neurons_are_active():
    net = _true_net(dead_l=False)
    st = _state_missing_weight(net)
    got, res, _ = _output_layer(QueryOracle(net), st, np.random.default_rng(0), 3, 1.0, "traced")
    assert not st.unsupported
    assert abs(st.layers[1][0][0, 1] - (-0.8)) < 1e-9
    X = 8.0 * np.random.default_rng(1).normal(size=(5000, 3))
    assert np.max(np.abs(got(X) - net(X))) < 1e-8 * (1 + np.max(np.abs(net(X))))
    assert res < 1e-9


def test_weight_no_input_shows_is_reported_not_identified():
    net = _true_net(dead_l=True)
    st = _state_missing_weight(net)
    _output_layer(QueryOracle(net), st, np.random.default_rng(0), 3, 1.0, "traced")
    assert st.unsupported == [(0, 1)]
    assert any("not identified" in n for n in st.notes)
