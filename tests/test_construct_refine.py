"""Refinement cascades at fixed width: the network equals the scheme's exact iterate (at
every breakpoint and piece midpoint, outside the support and at random rationals), its
width does not depend on the number of steps, its float64 export runs in onnxruntime,
and bad masks are refused."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relulab.construct import (
    MASKS,
    ConstructionError,
    SparseExact,
    cascade_value,
    check_refinement_network,
    evaluate_cpwl,
    prove_equal_1d,
    refinement_iterate,
    refinement_network,
    scheme_convergence,
    subdivision_coefficients,
    subdivision_iterate,
)

HAT = ([0, 1, 2], [0, 1, 0])
MAIN = ["hat", "cubic-bspline", "four-point"]


@pytest.mark.parametrize("name", MAIN)
@pytest.mark.parametrize("k", [0, 1, 2, 4, 6])
def test_network_equals_iterate_hat_seed(name: str, k: int) -> None:
    chk = check_refinement_network(MASKS[name], k, *HAT, n_random=20, rng_seed=k)
    assert chk.ok, chk.first_mismatch
    assert chk.hidden_layers == 3 * k + 3
    # the iterate checked against really has the pieces of the refinement
    assert chk.n_points >= 2 * chk.pieces + 1


@pytest.mark.parametrize("name", ["chaikin", "four-point"])
def test_other_seeds_non_dyadic_breakpoints(name: str) -> None:
    seed = ([-1, Fraction(1, 3), 2, Fraction(13, 5)], [0, Fraction(-2, 3), 1, 0])
    for k in (1, 3):
        chk = check_refinement_network(MASKS[name], k, *seed, n_random=20)
        assert chk.ok, chk.first_mismatch


def test_width_is_fixed_and_depth_linear() -> None:
    for name in MAIN:
        nets = [refinement_network(MASKS[name], k) for k in range(1, 7)]
        widths = {max(n.widths) for n in nets}
        assert len(widths) == 1, (name, widths)
        assert [n.n_hidden_layers for n in nets] == [3 * k + 3 for k in range(1, 7)]
        # every step's three layers have the same widths
        w = nets[-1].widths
        assert all(w[1 + 3 * j: 4 + 3 * j] == w[1:4] for j in range(6))


@pytest.mark.parametrize("name", ["chaikin", "cubic-bspline", "four-point"])
def test_two_iterate_algorithms_agree(name: str) -> None:
    """The cascade identity (c_k = S^k delta) against R applied k times."""
    for k in range(5):
        assert subdivision_iterate(MASKS[name], *HAT, k) == refinement_iterate(MASKS[name], *HAT, k)


def test_subdivision_coefficients_against_recursive_definition() -> None:
    a = MASKS["four-point"]
    c = subdivision_coefficients(a, 3)
    # f_3 at the integer grid of 2^-3 with the hat seed centred at 1: f_3((N + 1) / 8) = c_3(N)
    for N in range(len(c)):
        assert cascade_value(a, *HAT, 3, Fraction(N + 1, 8)) == c[N]


def test_pieces_grow_while_width_stays() -> None:
    pieces = [len(subdivision_iterate(MASKS["cubic-bspline"], *HAT, k)[0]) for k in range(7)]
    assert all(b > a for a, b in zip(pieces, pieces[1:], strict=False))


@settings(max_examples=12, deadline=None)
@given(st.lists(st.integers(-4, 8), min_size=4, max_size=6), st.integers(1, 2))
def test_any_mask_with_sum_rule_is_exact(nums: list[int], k: int) -> None:
    """Exactness does not depend on convergence: random masks, rescaled to satisfy the
    sum rule (when possible), built with require_convergent=False."""
    a = [Fraction(v, 4) for v in nums]
    ev, od = sum(a[0::2]), sum(a[1::2])
    if ev == 0 or od == 0:
        return
    a = [v / (ev if i % 2 == 0 else od) for i, v in enumerate(a)]
    net = refinement_network(a, k, require_convergent=False)
    bp, vals = subdivision_iterate(a, *HAT, k)
    pts = list(bp) + [(x + y) / 2 for x, y in zip(bp, bp[1:], strict=False)] + [bp[0] - 3, bp[-1] + 3]
    got = SparseExact(net)(pts)
    assert got == [cascade_value(a, *HAT, k, p) for p in pts]


def test_float_export_matches_onnxruntime(tmp_path) -> None:
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from relulab.io import save_model

    net = refinement_network(MASKS["four-point"], 4)
    path = tmp_path / "refine.onnx"
    save_model(net.float(), path)
    sess = ort.InferenceSession(str(path))
    X = np.linspace(-1.5, 8.5, 2001).reshape(-1, 1)
    y = np.asarray(sess.run(None, {sess.get_inputs()[0].name: X})[0], dtype=float).ravel()
    ours = net.float()(X).ravel()
    assert np.allclose(y, ours, rtol=1e-12, atol=1e-12 * np.abs(ours).max())
    # and the float network is close to the exact iterate
    bp, vals = subdivision_iterate(MASKS["four-point"], *HAT, 4)
    want = np.interp(X.ravel(), [float(b) for b in bp], [float(v) for v in vals])
    assert np.abs(ours - want).max() < 1e-9


def test_convergence_statuses() -> None:
    assert scheme_convergence(MASKS["four-point"]).status == "convergent"
    assert scheme_convergence(MASKS["cubic-bspline"]).status == "convergent"
    bad = scheme_convergence([1, 1, 1])
    assert bad.status == "divergent" and "sum rule" in bad.reason
    assert scheme_convergence([1, 1]).status == "unknown"


def _gen():
    yield Fraction(1, 2)


@pytest.mark.parametrize(("mask", "match"), [
    (_gen(), "finitely supported"),
    (lambda j: 1, "finitely supported"),
    ("1/2,1,1/2", "not a string"),
    ([0.5, float("nan"), 0.5], "coefficient 1"),
    ([0, 0], "all coefficients are zero"),
    ([1, 1, 1], "does not define a convergent scheme"),
    ([1, 1], "convergence not certified"),
    ({-1: 1}, "keys must be integers"),
])
def test_bad_masks(mask, match: str) -> None:
    with pytest.raises(ConstructionError, match=match):
        refinement_network(mask, 2)


def test_bad_steps_and_seeds() -> None:
    with pytest.raises(ConstructionError, match="steps"):
        refinement_network(MASKS["hat"], -1)
    with pytest.raises(ConstructionError, match="vanish"):
        refinement_network(MASKS["hat"], 1, [0, 1], [1, 0])
    with pytest.raises(ConstructionError, match="increase strictly"):
        refinement_network(MASKS["hat"], 1, [0, 2, 1], [0, 1, 0])
    with pytest.raises(ConstructionError, match="non-finite"):
        refinement_network(MASKS["hat"], 1, [0, float("inf"), 3], [0, 1, 0])


@pytest.mark.parametrize("name", ["cubic-bspline", "four-point"])
def test_dense_grid_near_every_seam(name: str) -> None:
    """Between the check points of the iterate the network could hide extra kinks (its
    switches ramp near the seams of each level): compare on a grid 32 times finer than
    the iterate's, and on the same grid shifted by a third of its step."""
    k = 3
    bp, vals = subdivision_iterate(MASKS[name], *HAT, k)
    step = Fraction(1, 2 ** (k + 5))
    n = int((bp[-1] - bp[0] + 2) / step)
    pts = [bp[0] - 1 + i * step + off for i in range(n) for off in (0, step / 3)]
    net = refinement_network(MASKS[name], k)
    assert SparseExact(net)(pts) == [evaluate_cpwl(bp, vals, p) for p in pts]


@pytest.mark.parametrize("name", MAIN + ["chaikin"])
def test_equality_proved_on_all_of_r(name: str) -> None:
    """prove_equal_1d decides equality on R (kinks of every layer found exactly); it
    also refutes a target changed by 10^-6 at one breakpoint."""
    for k in (0, 1, 2):
        chk = check_refinement_network(MASKS[name], k, n_random=0, prove=True)
        assert chk.proved, (name, k)
    net = refinement_network(MASKS[name], 1)
    bp, vals = subdivision_iterate(MASKS[name], *HAT, 1)
    vals = list(vals)
    vals[len(vals) // 2] += Fraction(1, 10 ** 6)
    assert prove_equal_1d(net, bp, vals)[0] is False


def test_equality_proof_sees_kinks_of_deeper_layers_far_outside() -> None:
    """Beyond the first layer's outermost kink a deeper layer can still bend:
    relu(relu(x) - c) is 0 on [0, 1] and near the first kink but not for x > c.  Against
    exact evaluation far out: the proof must never say 'equal' to the zero function while
    some point shows a nonzero value, and must say it for networks that are 0 on R."""
    from relulab import Network

    rng = np.random.default_rng(0)
    far = [Fraction(int(v)) for v in rng.integers(-10**4, 10**4, 200)] + [Fraction(10**6), Fraction(-10**6)]
    seen = {True: 0, False: 0}
    for trial in range(40):
        W1 = [[Fraction(int(v))] for v in rng.integers(-3, 4, 3)]
        b1 = [Fraction(int(v)) for v in rng.integers(-3, 4, 3)]
        W2 = [[Fraction(int(v)) for v in rng.integers(-3, 4, 3)] for _ in range(2)]
        c = Fraction(int(rng.integers(0, 60)))
        b2 = [-c, -c]
        if trial % 4 == 0:
            W2[1] = W2[0]            # two equal neurons with opposite outputs: 0 on R
        out = [[Fraction(1), Fraction(-1)]] if trial % 4 == 0 else [[Fraction(int(v)) for v in rng.integers(-2, 3, 2)]]
        net = Network([W1, W2, out], [b1, b2, [Fraction(0)]], exact=True)
        nonzero = any(v != 0 for v in SparseExact(net)(far))
        proved = prove_equal_1d(net, [Fraction(0), Fraction(1)], [Fraction(0), Fraction(0)])[0]
        assert not (proved and nonzero), trial
        if trial % 4 == 0:
            assert proved, trial
        seen[proved] += 1
    assert seen[False] > 5
