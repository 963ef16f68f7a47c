"""aud_ext6: the kink search, exact references, GLU claims and argument checks.

Independent checks: second differences of g at every reported kink (brute force), exact
Fraction evaluation of the reference, the oracle's query count, the block's own width."""

from fractions import Fraction

import numpy as np
import pytest

from relulab import Box, Network
from relulab.extract import (
    ExtractError,
    GLUBlock,
    LineSearch,
    extract_glu,
    extract_relu,
    random_glu,
)
from relulab.symmetry import equivalent


def _second_difference(g, t: float, h: float) -> float:
    v = g(np.array([t - h, t, t + h]))
    return float(v[0] - 2 * v[1] + v[2])


@pytest.mark.parametrize("sep", [1e-6, 1e-7, 1e-8])
def test_two_kinks_closer_than_the_confirmation_window_are_never_one_false_kink(sep):
    c = 0.25
    g = lambda t: np.maximum(t - c, 0) - 2 * np.maximum(t - c - sep, 0)   # noqa: E731
    ls = LineSearch(g)
    ks = ls.kinks(-1.0, 1.0)
    for t in ks:
        # a reported kink bends g: its second difference at a step below the pair's
        # separation is of the jump's size (0 where g is linear)
        assert abs(_second_difference(g, float(t), sep / 4)) > 1e-3 * sep, (t, ks)
    # both kinks, or the search says it could not resolve them
    assert len(ks) == 2 or ls.unresolved > 0, (ks, ls.unresolved)


def test_line_search_refuses_bad_tolerances_intervals_and_outputs():
    g = lambda t: np.maximum(t, 0) - np.maximum(t - 0.5, 0)   # noqa: E731
    for kw in ({"atol": -1.0}, {"rtol": -1.0}, {"rtol": float("nan")}, {"atol": float("inf")}):
        with pytest.raises(ExtractError, match="must be a finite number >= 0"):
            LineSearch(g, **kw)
    with pytest.raises(ExtractError, match="a < b"):
        LineSearch(g).kinks(1.0, -1.0)
    with pytest.raises(ExtractError, match="one value per point"):
        LineSearch(lambda t: 1.0).kinks(-1.0, 1.0)
    assert LineSearch(g).kinks(-1.0, 1.0).round(12).tolist() == [0.0, 0.5]


def _exact_relu_via_cancellation() -> Network:
    """2^60 relu((1 + 2^-60) x) - 2^60 relu(x) = relu(x) exactly; its float64 copy is 0."""
    e = Fraction(1, 2**60)
    return Network([[[1 + e], [Fraction(1)]], [[Fraction(2**60), -Fraction(2**60)]]], [[0, 0], [0]], exact=True)


def test_an_exact_reference_whose_float_copy_is_another_function_is_told_apart():
    ref = _exact_relu_via_cancellation()
    assert ref([Fraction(1)])[0] == 1 and ref.float()([1.0])[0] == 0.0
    zero = Network([[[1.0]], [[0.0]]], [[0.0], [0.0]])
    r = equivalent(ref, zero, Box([0], [1]))
    assert r.status == "different" and r.exact
    x = Fraction(r.witness[0])
    assert ref([x])[0] - 0 == x > 0          # the witness, evaluated exactly
    res = extract_relu(ref, 1, reference=ref)
    f = res.fidelity
    assert f.equivalence == "different" and res.status == "partial"
    assert not f.aligned and "float64 does not hold" in f.message
    assert not any("zero outgoing weight" in n for n in res.unidentified)


def test_a_torch_module_of_another_input_size_is_refused_in_one_line():
    torch = pytest.importorskip("torch")
    m = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.Linear(5, 1))
    for attack in (extract_relu, extract_glu):
        with pytest.raises(ExtractError, match="input_dim 4 but the model takes 3 inputs"):
            attack(m, 4)


def test_a_reference_with_other_outputs_is_refused_before_the_attack():
    net = Network([np.ones((3, 2)), np.ones((2, 3))], [np.zeros(3), np.zeros(2)])
    ref = Network([np.ones((3, 2)), np.ones((3, 3))], [np.zeros(3), np.zeros(3)])
    calls = []

    def oracle(X):
        calls.append(len(X))
        return net(X)

    with pytest.raises(ExtractError, match="reference has 3 outputs, the oracle 2"):
        extract_relu(oracle, 2, reference=ref)
    assert sum(calls) < 200   # the first probes only, not the attack


def _block_with_a_small_unit() -> GLUBlock:
    b = random_glu(4, 3, act="relu", seed=1)
    Wo = b.W_out.copy()
    Wo[:, 2] *= 1e-4
    return GLUBlock(b.W_gate, b.W_up, Wo, "relu")


def test_a_glu_unit_missed_under_the_median_bar_is_not_called_recovered():
    blk = _block_with_a_small_unit()
    assert blk.hidden == 3
    # with the reference: "recovered" only with every unit of it matched
    r = extract_glu(blk, 4, act="relu", reference=blk)
    assert r.status != "recovered" or r.param_error["matched"] == 3, r.message
    if r.param_error["matched"] < 3:
        assert "of the reference's 3 units matched" in r.message
    # without one: a "recovered" short of a unit says one may be missing
    r = extract_glu(lambda X: blk(X), 4, act="relu")
    assert r.status != "recovered" or r.hidden == 3 or "may be missing" in r.message, r.message


def test_a_glu_block_of_zero_outputs_says_there_is_nothing_to_identify():
    b = random_glu(4, 3, act="silu", seed=1)
    zero = GLUBlock(b.W_gate, b.W_up, 0 * b.W_out, "silu")
    X = np.random.default_rng(0).normal(size=(50, 4))
    assert not np.any(zero(X))
    for hidden in (None, 3):
        r = extract_glu(zero, 4, hidden)
        assert r.status == "partial" and "nothing to identify" in r.message and "coarse" not in r.message


def test_a_torch_module_registering_its_head_first_is_not_refused():
    torch = pytest.importorskip("torch")

    class HeadFirst(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.head = torch.nn.Linear(8, 1)     # registered first, called last
            self.body = torch.nn.Linear(3, 8)

        def forward(self, x):
            return self.head(torch.relu(self.body(x)))

    torch.manual_seed(0)
    m = HeadFirst().double()
    r = extract_relu(m, 3, budget=20_000)
    X = np.random.default_rng(0).normal(size=(200, 3))
    with torch.no_grad():
        want = m(torch.as_tensor(X)).numpy()
    assert r.network is not None and np.abs(r.network(X) - want).max() <= 1e-6 * (1 + np.abs(want).max())
