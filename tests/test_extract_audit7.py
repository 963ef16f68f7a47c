"""aud_ext7: outputs of very different sizes are each checked within their own
tolerance by the fidelity check (one tolerance, the smallest output's, called an
extraction exact to rounding "different").

Independent checks: dense float64 evaluation of both networks per output, against each
output's own range."""

import numpy as np
import pytest

from relulab import Box, Network
from relulab.extract import ExtractError, extract_relu, fidelity


def _two_scales(small: float = 1e-10) -> Network:
    rng = np.random.default_rng(2)
    W1, b1 = rng.standard_normal((4, 3)), 0.3 * rng.standard_normal(4)
    W2 = np.vstack([rng.standard_normal((1, 4)), small * np.array([[1.0, 0, 0, 0]])])
    return Network([W1, W2], [b1, np.array([0.2, 0.0])])


def _per_output_relative_error(f: Network, g: Network) -> np.ndarray:
    X = np.random.default_rng(1).uniform(-1, 1, (100_000, 3))
    Y, G = f(X), g(X)
    return np.abs(Y - G).max(axis=0) / np.ptp(Y, axis=0)


def test_an_extraction_exact_to_rounding_is_equal_when_one_output_is_tiny():
    ref = _two_scales()
    r = extract_relu(ref, 3, equivalence_timeout=10)
    rel = _per_output_relative_error(ref, r.network)
    assert np.all(rel < 1e-12)          # the recovery is right to rounding on both outputs
    assert r.fidelity.equivalence == "equal" and r.status == "complete"


@pytest.mark.parametrize("which, size", [(0, 1e-4), (1, 1e-4)])
def test_per_output_tolerances_still_find_an_error_in_either_output(which, size):
    """An error of 1e-4 of one output's own range is "different", whether it is in the
    large output or in the one 1e10 times smaller (and checked at 1e-6 of its range)."""
    ref = _two_scales()
    Ws = [np.array(W, float) for W in ref.weights]
    bs = [np.array(b, float) for b in ref.biases]
    X = np.random.default_rng(3).uniform(-1, 1, (20_000, 3))
    spread = np.ptp(ref(X), axis=0)
    bs[1][which] += size * spread[which]
    bad = Network(Ws, bs)
    tol = 1e-6 * spread
    f = fidelity(ref, bad, Box(-np.ones(3), np.ones(3)), timeout=10, tol=tol)
    assert f.equivalence == "different"
    gap = np.abs(ref(f.witness[None]) - bad(f.witness[None]))[0]
    assert gap[which] > tol[which] and f.witness_gap == pytest.approx(gap.max())


def test_per_output_tolerances_keep_a_proved_bound_in_the_outputs_units():
    ref = _two_scales()
    Ws = [np.array(W, float) for W in ref.weights]
    bs = [np.array(b, float) for b in ref.biases]
    bs[1][0] += 1e-9   # far below output 0's tolerance, far above output 1's size
    X = np.random.default_rng(3).uniform(-1, 1, (20_000, 3))
    tol = 1e-6 * np.ptp(ref(X), axis=0)
    f = fidelity(ref, Network(Ws, bs), Box(-np.ones(3), np.ones(3)), timeout=10, tol=tol)
    assert f.equivalence == "equal"
    assert tol.max() / 2 <= f.equivalence_tol <= tol.max()
    if f.equivalence_bound is not None:
        assert f.equivalence_bound >= 1e-9 * (1 - 1e-6)


def test_a_tolerance_list_of_the_wrong_length_is_refused_by_name():
    ref = _two_scales()
    with pytest.raises(ExtractError, match="one per output"):
        fidelity(ref, ref, tol=[1e-6, 1e-6, 1e-6])
    with pytest.raises(ExtractError, match="one per output"):
        fidelity(ref, ref, tol=[1e-6, -1.0])


# ---------------------------------------------------------------- rounded outputs (aud_ext7 #3)
from relulab.extract.relu import detected_precision  # noqa: E402


@pytest.mark.parametrize("size", [1e-10, 1e-3, 1.0, 1e6])
def test_full_float64_outputs_are_never_taken_for_rounded_ones(size):
    rng = np.random.default_rng(int(-np.log10(size)) + 20)
    for _ in range(200):
        Y = size * rng.normal(size=(32, 2))
        assert detected_precision(Y) is None


@pytest.mark.parametrize("k, size", [(0, 100.0), (3, 100.0), (6, 100.0), (9, 100.0), (12, 1.0)])
def test_outputs_rounded_to_k_decimals_are_found_with_their_resolution(k, size):
    """(Values with more than about 13 significant digits are not tested: float64 holds
    them too nearly for rounding to show.)"""
    Y = np.round(np.random.default_rng(k).uniform(-size, size, size=(32, 1)), k)
    got = detected_precision(Y)
    assert got is not None and got[0] == pytest.approx(0.5 * 10.0 ** -k) and f"{k} decimals" in got[1]
    assert np.max(np.abs(Y - np.round(Y, k))) <= got[0]


def test_float32_outputs_are_found_and_their_resolution_covers_their_rounding():
    Y64 = np.random.default_rng(0).normal(size=(32, 3)) * 7.0
    got = detected_precision(Y64.astype(np.float32))
    assert got is not None and got[1] == "float32 numbers"
    assert np.max(np.abs(Y64.astype(np.float32) - Y64)) <= got[0]


def _small_net(seed: int) -> Network:
    rng = np.random.default_rng(seed)
    return Network([rng.normal(size=(4, 3)) / np.sqrt(3), rng.normal(size=(1, 4)) / 2],
                   [0.5 * rng.normal(size=4), 0.5 * rng.normal(size=1)])


@pytest.mark.parametrize("rounding", ["float32", "decimals"])
def test_an_undeclared_rounded_oracle_ends_without_a_limit_and_says_why(rounding):
    """Read as exact float64, such an oracle kept the attack looking for kinks in the
    rounding: 2.1 M queries after 100 s and on, with no budget or time limit.  (The
    budget here only bounds the test where the fix is missing.)"""
    ref = _small_net(0)
    cast = ((lambda Y: Y.astype(np.float32)) if rounding == "float32" else (lambda Y: np.round(Y, 6)))
    budget = 600_000
    r = extract_relu(lambda X: cast(ref(X)), 3, reference=ref, budget=budget, equivalence_timeout=5)
    assert r.queries < budget
    assert any("read with precision" in n for n in r.unidentified)
    # the result is honest about what rounded outputs allow
    if r.status == "complete":
        rel = _per_output_relative_error(ref, r.network)
        assert np.all(rel < 1e-4)


# ------------------------------------------------- GLU gates at the activation's limit (#4)
from relulab.extract import GLUBlock, extract_glu, random_glu  # noqa: E402


def _median_rel_error_at(blk, rec, size: float, d: int) -> float:
    X = size * np.random.default_rng(7).normal(size=(5000, d))
    Y, G = blk(X), rec(X)
    return float(np.median(np.linalg.norm(Y - G, axis=1) / np.linalg.norm(Y, axis=1)))


def test_a_relu_block_attacked_as_silu_is_not_called_recovered():
    """Its SiLU fit had gates 1e4-4e5 times too large: SiLU at its ReLU limit, right to
    1e-9 on inputs of size 1 and off by 6.5 % (median) on inputs of size 0.01."""
    blk = random_glu(8, 6, None, "relu", seed=1)
    r = extract_glu(lambda X: blk(X), 8, act="silu", time_limit=20)
    assert _median_rel_error_at(blk, r.block, 1e-2, 8) > 1e-2   # the fit is wrong at small inputs
    assert r.status == "partial" and "nearly ReLU" in r.message


@pytest.mark.parametrize("act", ["silu", "gelu"])
def test_a_block_with_large_gates_is_recovered_when_it_is_right_at_small_inputs(act):
    """The second validation only speaks where the recovered block is wrong there."""
    b = random_glu(4, 3, None, act, seed=2)
    blk = GLUBlock(b.W_gate * 30.0, b.W_up, b.W_out, act)
    r = extract_glu(lambda X: blk(X), 4, act=act, time_limit=20)
    small = _median_rel_error_at(blk, r.block, 1.0 / 30.0 / 4.0, 4)
    assert (r.status == "recovered") == (small < 1e-4)
