"""Fixes from the eleventh audit of the verifier: the counterexample gate searches a
candidate's linear region only when the candidate itself fails, and within the time
left; the attack's design phase finds a term's box by its bytes, and stops at the
deadline."""

from __future__ import annotations

import time

import numpy as np
import pytest

from relulab import Box, Network
from relulab.verify import _counterexample as cx


def _abs_net() -> Network:
    return Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|


def test_a_passing_candidate_is_not_repaired(monkeypatch):
    """|x| >= 0.5 at x = 0.75: the region LP was solved before the point was looked at
    (4 s of a 1 s verification at 784 inputs)."""
    calls = []
    monkeypatch.setattr(cx, "_repair", lambda *a, **k: calls.append(a) or None)
    terms = [(Box([-1.0], [1.0]), np.array([[-1.0]]), np.array([-0.5]))]   # unsafe: |x| >= 0.5
    r = cx.certify_counterexample(_abs_net(), np.array([0.75]), terms)
    assert r.ok and r.x.tolist() == [0.75] and calls == []


def test_a_failing_candidate_is_repaired_in_its_region_and_not_past_the_deadline():
    terms = [(Box([-1.0], [1.0]), np.array([[-1.0]]), np.array([-0.5]))]
    # x = 0.4 fails (|x| < 0.5), and its region (x >= 0) holds x = 1, which passes
    r = cx.certify_counterexample(_abs_net(), np.array([0.4]), terms)
    assert r.ok and abs(r.x[0]) >= 0.5
    late = cx.certify_counterexample(_abs_net(), np.array([0.4]), terms, deadline=time.perf_counter() - 1.0)
    assert not late.ok and "time ran out" in late.reason


@pytest.mark.parametrize("exact", [False, True])
def test_many_input_boxes_are_attacked_once_each_and_a_violation_is_found(exact):
    """300 cases, each its own box (the design phase compared every box with every
    cached one: quadratic, 8-12 s of a 1 s limit at 2,000 boxes; an exact network's
    rounding bound was found anew per box, 130 s): the one violated case is found."""
    from fractions import Fraction as F

    from relulab.spec import OutputConstraint, Property, Specification
    from relulab.verify import verify

    rng = np.random.default_rng(0)
    W1, b1, W2 = rng.normal(size=(8, 2)), rng.normal(size=8), rng.normal(size=(1, 8))
    if exact:   # entries that are not float64 numbers: the rounding bound is needed
        net = Network([[[F(float(v)) / 3 for v in r] for r in W1], [[F(float(v)) for v in r] for r in W2]],
                      [[F(float(v)) / 7 for v in b1], [F(0)]], exact=True)
    else:
        net = Network([W1, W2], [b1, np.zeros(1)])
    centres = rng.uniform(-5, 5, size=(300, 2))
    y = net.float()(centres)[:, 0]
    k = int(np.argmax(y))
    cases = [Specification(Box(c - 0.01, c + 0.01), [OutputConstraint(np.array([[1.0]]), np.array([-1e6]))])
             for c in centres]
    # one case is unsafe where f >= its centre's value minus 1
    cases[k] = Specification(Box(centres[k] - 0.01, centres[k] + 0.01),
                             [OutputConstraint(np.array([[-1.0]]), np.array([-(y[k] - 1.0)]))])
    r = verify(net, Property(cases, "many boxes"), timeout=60)
    assert r.status == "violated"
    assert Box(centres[k] - 0.01, centres[k] + 0.01).contains(r.counterexample)
    assert F(float(net.float()(r.counterexample[None])[0, 0])) >= F(y[k] - 1.0) - 1


def test_rounding_bounds_of_many_boxes_are_each_boxs_own_and_bound_the_exact_network():
    from fractions import Fraction as F

    from relulab.bounds import float_rounding_bound, float_rounding_bounds

    rng = np.random.default_rng(2)
    net = Network([[[F(int(v), 3) for v in r] for r in rng.integers(-9, 9, size=(6, 3))],
                   [[F(int(v), 7) for v in r] for r in rng.integers(-9, 9, size=(2, 6))]],
                  [[F(int(v), 11) for v in rng.integers(-9, 9, size=6)], [F(1, 3), F(0)]], exact=True)
    boxes = [Box(c - w, c + w) for c, w in zip(rng.uniform(-50, 50, size=(4, 3)), [0.1, 1.0, 10.0, 100.0], strict=True)]
    rows = float_rounding_bounds(net, boxes)
    assert rows.shape == (4, 2)
    g = net.float()
    for box, e in zip(boxes, rows, strict=True):
        # (the batch's products may round differently in the last bits)
        assert np.allclose(e, float_rounding_bound(net, box), rtol=1e-9, atol=0.0)
        for x in box.sample(30, rng):
            fx = net(np.array([[F(float(v)) for v in x]], dtype=object))[0]
            # g's exact value (its own float forward pass would add its rounding)
            gx = g.exact()(np.array([[F(float(v)) for v in x]], dtype=object))[0]
            assert all(abs(a - b) <= F(float(ek)) for a, b, ek in zip(fx, gx, e, strict=True))


def test_rounding_bounds_of_many_boxes_refuse_a_single_box_by_name():
    from fractions import Fraction as F

    from relulab.bounds import float_rounding_bounds
    from relulab.errors import RelulabError

    net = Network([[[F(1, 3)]], [[F(1)]]], [[F(0)], [F(0)]])
    for bad in (Box([0.0], [1.0]), None, np.zeros((2, 1))):
        with pytest.raises(RelulabError, match="boxes must be a list of boxes"):
            float_rounding_bounds(net, bad)
