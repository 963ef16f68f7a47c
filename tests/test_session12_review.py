"""The session's own review (aud_sess12): fidelity's exact samples keep to a share of the
time, the extraction's clock reaches into a steep neuron's staircase, a second flip
subset must fit to rounding, and copied networks stay read-only without a stale float copy.
Each case failed before its fix."""

from __future__ import annotations

import copy
import pickle
from fractions import Fraction as F

import numpy as np
import pytest

from relulab import Network


def test_fidelity_exact_samples_stop_at_their_share_of_the_time():
    from relulab.extract.fidelity import EXACT_MIN_SAMPLES, EXACT_SAMPLES, _sampled_error

    ref = Network([[[F(1) + F(1, 10**30), F(1)]], [[1]]], [[0], [0]]).exact()   # not a float network
    rec = Network([[[1.0, 1.0]], [[1.0]]], [[0.0], [0.0]])
    X = np.random.default_rng(0).uniform(0.1, 1, (2000, 2))
    err, used = _sampled_error(ref, rec, X, 0.0)            # no time left: the minimum
    assert used == EXACT_MIN_SAMPLES
    # the exact difference at those points: 1e-30 x1, its largest over the rows used
    assert err == max(float(F(1, 10**30) * F(float(x[0]))) for x in X[:used])
    assert _sampled_error(ref, rec, X, None)[1] == EXACT_SAMPLES


def test_a_steep_neurons_staircase_reads_the_clock():
    # relu(x - 0.99989) is one rescaled node of 9,092 atoms: it ran 5-7 s past a 1 s limit
    from relulab.logic.truncated import STAIRCASE_DEADLINE, StaircaseOutOfTime, truncated_affine

    token = STAIRCASE_DEADLINE.set(0.0)                      # a moment long past
    try:
        with pytest.raises(StaircaseOutOfTime, match="time limit ended the extraction in a staircase"):
            truncated_affine([F(9092)], F(-9091))
    finally:
        STAIRCASE_DEADLINE.reset(token)
    assert str(truncated_affine([1, 1], -1)) == "x1 ⊙ x2"       # no clock outside an extraction


def test_a_second_flip_subset_must_fit_to_rounding_not_to_the_subset_tolerance():
    # random dependent systems (one output, 30-40 neurons on a line): a subset that fits
    # only to 1e-7 was reported as a non-identifiable orientation
    from relulab.extract.signs import other_subset

    rng = np.random.default_rng(1)
    for n in (30, 40):
        A, U = rng.standard_normal((n, 1)), rng.standard_normal((n, 1))
        flip = rng.random(n) < 0.5
        M = -sum(np.outer(A[i], U[i]) for i in range(n) if flip[i])
        alt = other_subset(A, U, M, flip)
        if alt is not None:   # only a real symmetry: the two subsets' sums agree to rounding
            B = np.stack([np.outer(A[i], U[i]).ravel() for i in range(n)], axis=1)
            assert np.abs(B @ alt - B @ flip).max() <= 1e-12 * np.abs(B).max()


def test_copies_of_a_network_are_read_only_and_carry_no_float_copy():
    net = Network([[[F(1, 3)], [F(-2, 7)]], [[F(1), F(5, 11)]]], [[F(0), F(1, 5)], [F(0)]], exact=True)
    net.float()
    for c in (copy.deepcopy(net), pickle.loads(pickle.dumps(net))):
        assert not c.weights[0].flags.writeable and not c.biases[1].flags.writeable
        with pytest.raises(ValueError):
            c.weights[0][0, 0] = F(100)
        assert c([F(1)])[0] == net([F(1)])[0]
        assert float(c.float()(np.array([[1.0]]))[0, 0]) == float(net([F(1)])[0])
    assert len(pickle.dumps(net)) == len(pickle.dumps(Network(list(net.weights), list(net.biases), exact=True)))
