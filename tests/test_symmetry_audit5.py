"""Equivalence on polytopes (fifth audit): a 'different' witness must lie in the
polytope in rational arithmetic, not within the float membership tolerance."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np

from relulab import Network, Polytope
from relulab.symmetry import equivalent


def _case(t: int):
    rng = np.random.default_rng(0)
    for _ in range(t + 1):
        d = 2 + _ % 2
        A = rng.normal(size=(d + 2, d))
        b = rng.uniform(0.5, 2, size=d + 2)
        A = np.vstack([A, np.eye(d), -np.eye(d)])
        b = np.concatenate([b, np.full(2 * d, 3.0)])
        i = int(rng.integers(0, d + 2))
        M = 10.0 ** rng.uniform(6, 12)
    P = Polytope(A, b)
    g = Network([np.eye(d), np.ones((1, d))], [np.zeros(d), [0.0]]).exact()
    # f = g + M relu(A_i x - b_i), where A_i x <= b_i is a row of P: f = g exactly on P
    f = Network([np.vstack([np.eye(d), A[i]]), np.concatenate([np.ones(d), [M]])[None]],
                [np.concatenate([np.zeros(d), [-b[i]]]), [0.0]]).exact()
    return f, g, P


def _inside(P: Polytope, w) -> bool:
    x = [F(float(v)) for v in w]
    return all(sum((F(float(a)) * v for a, v in zip(row, x, strict=True)), F(0)) <= F(float(r))
               for row, r in zip(P.A, P.b, strict=True))


def test_a_difference_that_exists_only_outside_the_polytope_is_not_reported():
    """Case 9 of the auditor's search: 'different' (exact) with a witness 4e-15 outside P."""
    for t in (9, 3, 5):
        f, g, P = _case(t)
        r = equivalent(f, g, P, timeout=10)
        assert r.status in ("equal", "unknown")
        if r.witness is not None and r.status == "different":
            assert _inside(P, r.witness)


def test_nan_outputs_are_an_overflow_not_a_tolerance_of_1e_6():
    """f = relu(x) exactly, but its float pass is inf - inf = NaN above 1e298: max(1.0, nan)
    made the tolerance 1e-6 and the run ended in a raw LPError; reduce read the NaN
    deviation as agreement."""
    from relulab import Box
    from relulab.symmetry import reduce

    f = Network([[[1.0], [1.0], [1.0]], [[1e10, 0, 0], [0, 1e10, 0], [0, 0, 1.0]], [[1.0, -1.0, 1.0]]],
                [[0, 0, 0], [0, 0, 0], [0]])
    g = Network([[[1.0]], [[0.0]]], [[0.0], [0.0]])
    box = Box([0.0], [1e300])
    with np.errstate(all="ignore"):
        assert np.isnan(f(np.array([[1e299]]))[0, 0])
        r = equivalent(f, g, box, timeout=20)
        assert r.status in ("unknown", "different")
        if r.status == "different":
            assert r.gap > 0
        red = reduce(f, box, timeout=20)
        if np.isnan(red.sample_max_deviation):
            assert red.status != "verified"


def test_a_gap_beyond_float64_reads_inf():
    """|x| against x on [-1e308, 1e308]: the exact gap 2e308 raised a raw OverflowError."""
    from relulab import Box

    f = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    g = Network([[[1.0]]], [[0.0]])
    with np.errstate(all="ignore"):
        r = equivalent(f.exact(), g.exact(), Box([-1e308], [1e308]))
    assert r.status == "different" and r.gap > 1.0
    x = F(float(r.witness[0]))
    assert abs(abs(x) - x) > 1                  # the witness differs exactly
