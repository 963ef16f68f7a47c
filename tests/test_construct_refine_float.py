"""The float copy of deep constructions is measured and flagged (from an audit: a saved
ONNX refinement network was off by 58 at 40 steps without a word)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from relulab import construct as C


def test_extended_precision_forward_matches_the_exact_network():
    net = C.refinement_network(list(C.MASKS["four-point"]), 4, [0, 1, 2], [0, 1, 0])
    X = np.random.default_rng(0).uniform(-0.5, 2.5, 3)
    exact = np.array([float(v) for v in net(np.array([[Fraction(x)] for x in X], dtype=object)).ravel()])
    ext = C.extended_forward(net, X)
    if np.finfo(np.longdouble).nmant <= 52:
        pytest.skip("numpy's longdouble is float64 on this machine")
    assert np.max(np.abs(ext.astype(float) - exact)) <= 1e-12
    # the float64 copy's error, estimated, is close to its exact error
    f64 = np.max(np.abs(net.float()(X[:, None]).ravel() - exact))
    est = np.max(np.abs(net.float()(X[:, None]).ravel() - ext.astype(float)))
    assert abs(est - f64) <= 0.1 * f64 + 1e-15


def test_the_quadrature_width_is_bounded_before_building():
    from relulab.construct.integral import integral_representation, quadrature_network
    from relulab.errors import RelulabError

    rep = integral_representation("x^2", radius=1)
    with pytest.raises(RelulabError, match="quadrature_network"):
        quadrature_network(rep, 10**8)
    assert quadrature_network(rep, 17).widths == (16,)     # 2 (17 // 2), as documented
