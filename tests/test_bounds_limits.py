"""Bounds do not depend on the memory budget while it holds their fixed blocks."""

import numpy as np

from relulab.bounds import symbolic_bounds
from relulab.domain import Box
from relulab.limits import memory_limit
from relulab.network import Network


def _arrays(b):
    return [*b.pre_lo, *b.pre_hi, b.out_lo, b.out_hi]


def test_bounds_bit_identical_under_a_smaller_budget():
    # aud_sess12b #1: the neuron blocks were sized by the free memory, and BLAS rounds a
    # row by its product's shape: a 10 MB budget moved hidden bounds by ulps
    rng = np.random.default_rng(4)
    dims = [3, 400, 400, 3]
    net = Network([rng.standard_normal((dims[i + 1], dims[i])) / np.sqrt(dims[i]) for i in range(3)],
                  [rng.standard_normal(dims[i + 1]) * 0.3 for i in range(3)])
    box = Box(-np.ones(3), np.ones(3))
    ref = _arrays(symbolic_bounds(net, box))
    for budget in (10**7, 2 * 10**7):
        with memory_limit(budget):
            got = _arrays(symbolic_bounds(net, box))
        assert all(np.array_equal(a, b) for a, b in zip(ref, got, strict=True)), budget
