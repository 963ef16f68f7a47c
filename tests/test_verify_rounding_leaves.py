"""A leaf LP of ReLU splitting and the Farkas step of input splitting used the raw
back-substituted or composed linear maps, whose rounding is not bounded by a margin
relative to the result: relu(x - 1) + relu(x + 2^60) - 2^60 is 2x - 1 (exactly, its
weights read as reals), its float composition 2x, and a violated property read "holds"
(aud_sess12b lead).  The network's value at the counterexample is checked exactly."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

from relulab import Box, Network
from relulab.spec import OutputConstraint, Specification
from relulab.verify import verify

# unsafe: 3 <= y <= 3.0001 (A y <= b row by row)
UNSAFE = OutputConstraint(np.array([[1.0], [-1.0]]), np.array([3.0001, -3.0]))


@pytest.mark.parametrize("method, engine", [("input-split", "numpy"), ("relu-split", "numpy"),
                                            ("relu-split", "crown"), ("auto", "auto")])
def test_a_cancelled_constant_does_not_prove_a_violated_property(method, engine):
    if engine == "crown":
        pytest.importorskip("torch")
    net = Network([[[1.0], [1.0]], [[1.0, 1.0]]], [[-1.0, 2.0**60], [-(2.0**60)]])
    assert net.exact()([F(2)])[0] == 3                     # x = 2 is in the unsafe set
    r = verify(net, Specification(Box([1.9], [3.0]), [UNSAFE]), timeout=20, method=method, engine=engine)
    assert r.status != "holds", r


@pytest.mark.parametrize("method", ["input-split", "relu-split"])
def test_the_same_property_still_holds_where_nothing_cancels(method):
    # 2x + 1 on [1.9, 3] is at least 4.8: the unsafe slab is out of reach, and proved so
    net = Network([[[1.0], [1.0]], [[1.0, 1.0]]], [[1.0, 0.0], [0.0]])
    r = verify(net, Specification(Box([1.9], [3.0]), [UNSAFE]), timeout=20, method=method, engine="numpy")
    assert r.status == "holds", r
