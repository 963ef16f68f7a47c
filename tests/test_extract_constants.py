"""Extraction statuses for constant outputs, unseen bumps, wrong architectures and odd
oracle outputs (fourth extract audit).  Each case failed before its fix."""

from __future__ import annotations

import numpy as np
import pytest

from relulab import Network
from relulab.extract import ExtractError, extract_glu, extract_relu, random_glu

_W1 = [[1.0, 0.5], [-1.0, 2.0], [0.3, -1.0]]
_B1 = [0.1, -0.2, 0.3]


@pytest.mark.parametrize("C", [1.0, 7.0, 1e5])
def test_a_constant_output_does_not_make_a_correct_extraction_partial(C):
    net = Network([_W1, [[1.0, -2.0, 0.5], [0.0, 0.0, 0.0]]], [_B1, [0.0, C]])
    r = extract_relu(net, 2)
    assert r.status == "complete" and r.widths == (3,)
    assert r.fidelity.equivalence == "equal"
    X = np.random.default_rng(0).uniform(-4, 4, (2000, 2))
    assert np.max(np.abs(net(X) - r.network(X))) <= 1e-9 * (1 + C)


def test_a_bump_no_query_met_is_not_equal_under_a_large_offset():
    # f = 1e7 + 50 relu(0.05 - |x|_1) on [-1, 1]^6: the bump (2.5, the whole range) is
    # never queried; 1e-6 of the offset (10) once passed it as "equal"
    d = 6
    W1 = np.vstack([np.eye(d), -np.eye(d)])
    net = Network([W1, -np.ones((1, 2 * d)), [[50.0]]], [np.zeros(2 * d), [0.05], [1e7]])
    r = extract_relu(net, d)
    assert r.fidelity.equivalence != "equal" and r.status != "complete"
    assert r.fidelity.equivalence_tol < 2.5


def test_more_neurons_than_the_widths_given_is_partial():
    net = Network([_W1, [[1.0, -2.0, 0.5]]], [_B1, [0.0]])
    r = extract_relu(net, 2, widths=[2])
    assert r.widths == (3,) and r.status == "partial"
    assert any("widths=[2] was given" in n for n in r.unidentified)


def test_glu_with_the_wrong_activation_is_not_recovered():
    blk = random_glu(8, 4, act="gelu", seed=1)
    wrong = extract_glu(lambda X: blk(X), 8, act="silu")
    assert wrong.status == "partial" and "another activation" in wrong.message
    right = extract_glu(lambda X: blk(X), 8, act="gelu")
    assert right.status == "recovered"


@pytest.mark.parametrize("oracle, match", [
    (lambda X: X[:, :1] + 1j * X[:, 1:2], "complex"),
    (lambda X: np.array([None] * len(X)), "contain None"),
])
def test_odd_oracle_outputs_get_one_error(oracle, match):
    with pytest.raises(ExtractError, match=match):
        extract_relu(oracle, 2, budget=2000)


def test_a_torch_oracle_that_requires_grad_is_read():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1)).double()
    r = extract_relu(lambda X: m(torch.tensor(X)), 2, budget=20_000)
    X = np.random.default_rng(1).uniform(-1, 1, (500, 2))
    with torch.no_grad():
        Y = m(torch.tensor(X)).numpy()
    assert r.network is not None and np.max(np.abs(r.network(X) - Y)) < 1e-6


def test_a_glu_block_with_an_output_bias_is_named_so():
    blk = random_glu(8, 4, act="silu", seed=1)
    r = extract_glu(lambda X: blk(X) + 0.1, 8, act="silu")
    assert r.status == "partial" and "not bias free" in r.message


@pytest.mark.parametrize("out_w, out_b", [([[0.0, 0.0, 0.0]], [5.0]), ([[0.0, 0.0, 0.0]], [0.0])])
def test_a_constant_network_is_decided_equal_to_its_extraction(out_w, out_b):
    # the recovered constant has weights of about 1e-15; the MILP bound carries a margin of
    # 1e-7 of the output size, above the fidelity tolerance (1e-9 of it), so every constant
    # network read "unknown" (aud_ext5 #3).  A sound linear bound of the difference decides it.
    net = Network([_W1, out_w], [_B1, out_b])
    r = extract_relu(net, 2, reference=net)
    assert r.status == "complete" and r.fidelity.equivalence == "equal"
    assert r.fidelity.equivalence_bound <= r.fidelity.equivalence_tol
    X = np.random.default_rng(1).uniform(-1, 1, (4000, 2))
    assert np.max(np.abs(net(X) - r.network(X))) <= r.fidelity.equivalence_bound


def test_fidelity_compares_an_exact_reference_as_it_is():
    # 2^60 relu((1 + 2^-60) x) - 2^60 relu(x) is x on [0, 1]; its float copy is 0.  Both
    # were rounded to float64 first, and fidelity said "equal", bound 0, "identical
    # networks", sampled error 0 (aud_sym6 #2)
    from fractions import Fraction

    from relulab import Box
    from relulab.extract.fidelity import fidelity

    ref = Network([[[Fraction(1) + Fraction(1, 2**60)], [Fraction(1)]], [[Fraction(2**60), Fraction(-2**60)]]],
                  [[0, 0], [0]]).exact()
    rec = ref.float()
    assert ref([Fraction(1)])[0] == 1 and rec([1.0])[0] == 0.0
    r = fidelity(ref, rec, Box([0.0], [1.0]), n_samples=100)
    assert r.equivalence != "equal"
    assert r.equivalence_bound is None or r.equivalence_bound >= 1.0
    assert 0.9 < r.max_output_error <= 1.0 and r.n_samples == 100
    ref2 = Network([[[Fraction(1) + Fraction(1, 10**30)]], [[1]]], [[0], [0]]).exact()
    r = fidelity(ref2, Network([[[1.0]], [[1.0]]], [[0.0], [0.0]]), Box([0.0], [1.0]), n_samples=50, tol=0.0)
    assert r.equivalence != "equal" and r.max_output_error > 0
