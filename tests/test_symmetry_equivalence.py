"""Exact equivalence: symmetric copies are equal (also by the verifier alone), perturbed
copies are different with re-checked witnesses, and the algebraic decision for one hidden
layer agrees with the exact verifier, twin-neuron pairs included."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from conftest import random_network
from hypothesis import given, settings
from hypothesis import strategies as st

from relulab import Box, DomainError, Network, NetworkError
from relulab.symmetry import (
    equivalent,
    equivalent_one_hidden_layer,
    one_hidden_layer_normal_form,
    random_symmetry,
    whole_space_box,
)


def _box(d: int) -> Box:
    return Box(-np.ones(d), np.ones(d))


def _assert_witness(f: Network, g: Network, r, dom) -> None:
    """The witness is in the domain and the networks differ there, by independent passes."""
    assert r.status == "different" and r.witness is not None
    x = np.asarray([float(v) for v in r.witness])
    assert dom is None or dom.contains(x)
    gap = float(np.max(np.abs(f.float()(x) - g.float()(x))))
    assert gap > r.tol and abs(gap - r.gap) <= 1e-9 * (1 + gap)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), skip=st.booleans())
def test_symmetric_copy_equal_by_verifier_alone(seed, skip):
    net = random_network(np.random.default_rng(seed), [2, 5, 4, 1], skip=skip)
    g = random_symmetry(net, seed)
    r = equivalent(net, g, _box(2), fast=False)
    assert r.status == "equal" and r.method == "verifier" and r.upper_bound <= r.tol


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), delta=st.sampled_from([0.3, -0.05, 1e-3]))
def test_one_perturbed_weight_is_different_with_rechecked_witness(seed, delta):
    rng = np.random.default_rng(seed)
    net = random_network(rng, [3, 6, 4, 2])
    g = random_symmetry(net, seed)
    # perturb an outgoing weight of a last-layer neuron that is active somewhere on the box
    box = _box(3)
    act = g.preactivations(box.sample(500, 1))[-1] > 0
    live = np.nonzero(act.any(axis=0))[0]
    if live.size == 0:
        return
    Ws = [np.array(W) for W in g.weights]
    Ws[-1][int(rng.integers(2)), int(live[0])] += delta
    h = Network(Ws, g.biases)
    for fast in (True, False):
        r = equivalent(net, h, box, fast=fast)
        _assert_witness(net, h, r, box)
        if not fast:
            assert r.method == "verifier"


def test_verifier_finds_a_difference_sampling_misses():
    # a tent of height 1 and width 2e-5 around x1 = 0.3137 added to f
    f = random_network(np.random.default_rng(4), [2, 6, 1])
    s = 1e5
    bump = Network(
        [[[s, 0.0], [-s, 0.0]], [[-1.0, -1.0]], [[1.0]]],
        [[-s * 0.3137, s * 0.3137], [1.0], [0.0]],
    )
    g = f + bump
    box = _box(2)
    r = equivalent(f, g, box, n_samples=300)
    assert r.method == "verifier"
    _assert_witness(f, g, r, box)
    assert r.gap > 0.5


def test_exact_networks_get_exact_witnesses():
    f = random_network(np.random.default_rng(8), [2, 4, 1]).exact()
    Ws = [np.array(W, dtype=object) for W in f.weights]
    Ws[1][0, 0] = Ws[1][0, 0] + Fraction(1, 3)
    g = Network(Ws, f.biases)
    r = equivalent(f, g, _box(2))
    assert r.status in ("different", "equal")
    if r.status == "different":
        assert r.exact and isinstance(r.witness[0], Fraction)
        assert abs(f(r.witness)[0] - g(r.witness)[0]) > 0


def test_different_architectures_and_errors():
    # |x| two ways: relu(x) + relu(-x) and relu(2x) / 2 + relu(-x) + 0 * relu(x - 5)
    f = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    g = Network([[[2.0], [-1.0], [1.0]], [[0.5, 1.0, 7.0]]], [[0.0, 0.0, -5.0], [0.0]])
    assert equivalent(f, g, Box([-1], [1]), fast=False).status == "equal"
    assert equivalent(f, g, Box([-1], [6])).status == "different"
    deep = Network([[[1.0]], [[1.0]], [[1.0]]], [[0.0], [0.0], [0.0]])
    with pytest.raises(DomainError, match="bounded domain"):
        equivalent(f, deep)
    with pytest.raises(NetworkError, match="input sizes differ"):
        equivalent(f, Network([[[1.0, 1.0]]], [[0.0]]), Box([-1], [1]))


def test_timeout_gives_unknown_or_an_answer_never_a_wrong_one():
    f = random_network(np.random.default_rng(1), [3, 8, 8, 1])
    g = random_symmetry(f, 1)
    r = equivalent(f, g, _box(3), timeout=1e-6, fast=False)
    assert r.status in ("unknown", "equal")


# ------------------------------------------------------------- one hidden layer
def _int_net(rng, d, n, m, skip=False):
    W = rng.integers(-3, 4, size=(n, d)).astype(float)
    W[np.all(W == 0, axis=1), 0] = 1.0
    b = rng.integers(-3, 4, size=n).astype(float)
    V = rng.integers(-3, 4, size=(m, n)).astype(float)
    c = rng.integers(-3, 4, size=m).astype(float)
    sk = (rng.integers(-2, 3, size=(m, d)).astype(float), np.zeros(m)) if skip else None
    return Network([W, V], [b, c], sk)


def _twin_variant(f: Network, rng, perturb: bool) -> Network:
    """An equal network (unless ``perturb``): a neuron flipped to the opposite orientation
    with the affine difference moved into the skip (relu(z) = relu(-z) + z), a new twin
    pair relu(z) - relu(-z) - z = 0 added, one neuron split in two, and a random
    rescaling and permutation."""
    W, b = np.array(f.weights[0]), np.array(f.biases[0])
    V, c = np.array(f.weights[1]), np.array(f.biases[1])
    m, d = V.shape[0], W.shape[1]
    S = np.zeros((m, d)) if f.skip is None else np.array(f.skip[0])
    s = np.zeros(m) if f.skip is None else np.array(f.skip[1])
    S = S + np.outer(V[:, 0], W[0])
    s = s + V[:, 0] * b[0]
    W[0], b[0] = -W[0], -b[0]
    w_new = rng.integers(-2, 3, size=d).astype(float)
    w_new[0] = 2.0
    b_new = float(rng.integers(-2, 3))
    a = rng.integers(-2, 3, size=m).astype(float)
    W = np.vstack([W, w_new, -w_new, W[1:2]])
    b = np.concatenate([b, [b_new, -b_new], b[1:2]])
    V = np.hstack([V, a[:, None], -a[:, None], 0.5 * V[:, 1:2]])
    V[:, 1] *= 0.5
    S, s = S - np.outer(a, w_new), s - a * b_new
    if perturb:
        j = int(rng.integers(V.shape[1]))
        V[int(rng.integers(m)), j] += 1.0
    return Network([W, V], [b, c], (S, s))


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), perturb=st.booleans(), skip=st.booleans())
def test_algebraic_decision_agrees_with_exact_verifier(seed, perturb, skip):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 4))
    f = _int_net(rng, d, int(rng.integers(2, 5)), int(rng.integers(1, 3)), skip)
    twin = rng.random() < 0.7
    g0 = _twin_variant(f, rng, perturb) if twin else _int_net(rng, d, 3, f.output_dim)
    g = random_symmetry(g0, seed)               # float rescaling: equal up to rounding
    ge = random_symmetry(g0.exact(), seed)      # rational rescaling: exactly the function of g0
    # on this box every hyperplane shows, so the verifier decides R^d
    ver = equivalent(f, g, whole_space_box(f, g), fast=False)
    assert ver.status in ("equal", "different")
    alg = equivalent_one_hidden_layer(f, g)
    alg_exact = equivalent_one_hidden_layer(f.exact(), ge)
    assert alg.status == ver.status
    assert alg_exact.status == ver.status and alg_exact.exact
    if alg_exact.status == "different":
        w = alg_exact.witness.tolist()
        assert alg_exact.gap > 0 and f.exact()(w).tolist() != ge(w).tolist()
    if alg.status == "different":
        _assert_witness(f, g, alg, None)
    if twin and not perturb:
        assert alg.status == "equal"
    # the complete normal form: identical exactly when the functions are equal on R^d
    nf, ng = one_hidden_layer_normal_form(f.exact()), one_hidden_layer_normal_form(ge)
    assert (nf == ng) == (ver.status == "equal")
    for x in rng.integers(-40, 41, size=(5, d)):
        xq = [Fraction(int(v), 7) for v in x]
        assert nf(xq).tolist() == f.exact()(xq).tolist() and ng(xq).tolist() == ge(xq).tolist()


def test_algebraic_exact_twins_and_rescaling_are_exactly_equal():
    F = Fraction
    f = Network([[[1, -2], [3, 1]], [[2, -1]]], [[1, 0], [F(1, 2)]])
    # relu(z) = relu(-z) + z for neuron 0; neuron 1 scaled by 7 and split 3:4
    g = Network(
        [[[-1, 2], [21, 7], [21, 7]], [[2, F(-3, 49), F(-4, 49)]]],
        [[-1, 0, 0], [F(1, 2)]],
        skip=([[2, -4]], [2]),
    )
    r = equivalent_one_hidden_layer(f, g)
    assert r.status == "equal" and r.exact and r.tol == 0
    g2 = Network(g.weights, [g.biases[0], [F(1, 2) + F(1, 10**9)]], skip=g.skip)
    r2 = equivalent_one_hidden_layer(f, g2)
    assert r2.status == "different" and r2.gap == pytest.approx(1e-9)
    assert equivalent(f, g).status == "equal"  # domain None: the algebraic path


def test_whole_space_box_meets_every_hyperplane():
    rng = np.random.default_rng(0)
    f = _int_net(rng, 3, 6, 1)
    B = whole_space_box(f)
    W, b = f.weights[0], f.biases[0]
    for w, bb in zip(W, b, strict=True):
        p = -bb * w / (w @ w)
        assert np.all(np.abs(p) < B.hi)


def test_affine_networks_on_box_and_polytope():
    from relulab import Polytope

    f = Network([[[1.0, 2.0]]], [[0.5]])
    g = Network([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0]]], [[3.0, 3.0], [0.5 - 9.0]])  # = f on x >= -3
    box = Box([-1, -1], [1, 1])
    r = equivalent(f, g, box, fast=False)
    assert r.status == "equal"
    h = Network([[[1.0, 2.0 + 1e-3]]], [[0.5]])
    tri = Polytope([[1.0, 1.0], [-1.0, 0.0], [0.0, -1.0]], [1.0, 0.0, 0.0])
    for dom in (box, tri):
        r = equivalent(f, h, dom, fast=False)
        _assert_witness(f, h, r, dom)
        assert r.gap == pytest.approx(1e-3, rel=1e-6)


def test_equivalence_through_a_dead_neuron_on_the_box():
    """Regression: a neuron whose pre-activation is identically 0 on the box made the
    verifier's MILP infeasible, so equivalent() raised instead of answering."""
    from fractions import Fraction as F

    import numpy as np

    from relulab import Box, Network
    from relulab.symmetry import equivalent

    f = Network([[[1]], [[F(-1, 3)], [1], [0], [5]], [[F(-1, 2), F(-5, 2), -3, F(-3, 2)]]],
                [[1], [F(1, 4), F(-5, 2), 0, F(3, 4)], [6]], exact=True)
    g = Network([[[F(-15, 2)]]], [[F(-21, 8)]], exact=True)
    X = [[F(k, 64)] for k in range(65)]
    assert all(f(x) == g(x) for x in X)          # equal on the box, exactly
    assert equivalent(f, g, Box([0], [1])).status == "equal"
    h = Network([[[F(-15, 2)]]], [[F(-5, 2)]], exact=True)
    r = equivalent(f, h, Box([0], [1]))
    assert r.status == "different" and abs(float(f.float()(np.asarray(r.witness, float))[0]
                                                 - h.float()(np.asarray(r.witness, float))[0])) > 0.1


def test_rounding_in_a_float_pass_is_no_witness():
    # f = 1e12 relu(x) - 1e12 relu(c x) and g = (1e12 (1 - c)) relu(x) are equal in exact
    # arithmetic on their stored weights (slope difference 0); float passes differ by 8e-5
    # and read as "different (re-checked)". The re-check is exact now.
    a, c = 1e12, 1.0 - 5e-13
    f = Network([[[1.0], [c]], [[a, -a]]], [[0.0, 0.0], [0.0]])
    g = Network([[[1.0]], [[a * (1.0 - c)]]], [[0.0], [0.0]])
    assert Fraction(a) - Fraction(a) * Fraction(c) == Fraction(a * (1.0 - c))  # exactly equal
    for r in (equivalent(f, g, Box([-1], [1]), timeout=20), equivalent(f, g, None)):
        assert r.status != "different"


def test_cancelling_terms_do_not_widen_the_tolerance_of_equal():
    # f = relu(x) + 1e12 relu(-x - 5) - 1e12 relu(-x - 5) is relu(x), not 0: the whole-space
    # decision had tolerance 1e-9 x 1e12 = 1e3 and answered "equal"
    a = 1e12
    f = Network([[[1.0], [-1.0], [-1.0]], [[1.0, a, -a]]], [[0.0, -5.0, -5.0], [0.0]])
    zero = Network([[[1.0]], [[0.0]]], [[0.0], [0.0]])
    r = equivalent(f, zero, None)
    assert r.status == "different" and r.gap == pytest.approx(1.0)
    assert r.tol <= 1e-8


def test_equal_within_the_tolerance_says_so():
    # exact networks 1e6 |x| and 1e6 |x| + 1/2: equal within the default tolerance (1e-6 of
    # the output scale, 1 here), and the message must not call the normal forms identical
    f = Network([[[1], [-1]], [[10**6, 10**6]]], [[0, 0], [0]]).exact()
    g = Network([[[1], [-1]], [[10**6, 10**6]]], [[0, 0], [Fraction(1, 2)]]).exact()
    r = equivalent(f, g, Box([-1], [1]))
    if r.status == "equal":
        assert "within the tolerance" in r.message and "not identical" in r.message
    assert equivalent(f, g, Box([-1], [1]), tol=0.1).status == "different"


@pytest.mark.parametrize("tol", [0.0, 0.5])
def test_exact_affine_networks_are_compared_in_fractions(tol):
    # float copies of (10**20 + 1) x and 10**20 x are the same map: "equal, identical
    # affine maps" for networks 1 apart at x = 1
    f = Network([[[10**20 + 1]]], [[0]], exact=True)
    g = Network([[[10**20]]], [[0]], exact=True)
    r = equivalent(f, g, Box([-1], [1]), tol=tol)
    assert r.status == "different"
    x = Fraction(float(np.asarray(r.witness).reshape(-1)[0]))
    assert abs(f([x])[0] - g([x])[0]) > tol
    # equal exact maps stay equal, exactly
    assert equivalent(f, Network([[[10**20 + 1]]], [[0]], exact=True), Box([-1], [1]), tol=0.0).status == "equal"
    h = Network([[[Fraction(1, 3)]]], [[0]], exact=True)
    k = Network([[[Fraction(1, 3) + Fraction(1, 10**20)]]], [[0]], exact=True)
    assert equivalent(h, k, Box([-1], [1]), tol=0.0).status == "different"


def test_exact_affine_networks_on_a_polytope_are_not_called_equal():
    from relulab.domain import Polytope

    f = Network([[[10**20 + 1]]], [[0]], exact=True)
    g = Network([[[10**20]]], [[0]], exact=True)
    tri = Polytope([[1.0], [-1.0]], [1.0, 1.0])                  # [-1, 1] as a polytope
    r = equivalent(f, g, tri, tol=0.5)
    assert r.status != "equal"
    if r.status == "different":
        x = Fraction(float(np.asarray(r.witness).reshape(-1)[0]))
        assert abs(f([x])[0] - g([x])[0]) > 0.5


@pytest.mark.parametrize("exact", [False, True])
def test_outputs_that_overflow_do_not_make_everything_equal(exact):
    # f = 1e308 relu(x) and g = f / 2 on [-1, 3]: the sampled outputs overflow, the default
    # tolerance (1e-6 of them) was inf, and the answer "equal within the tolerance inf"
    f = Network([[[1.0]], [[1e308]]], [[0.0], [0.0]])
    g = Network([[[1.0]], [[5e307]]], [[0.0], [0.0]])
    if exact:
        f, g = f.exact(), g.exact()
    assert f(np.array([[1.0]]))[0, 0] != g(np.array([[1.0]]))[0, 0]     # the independent fact
    r = equivalent(f, g, Box([-1], [3]))
    assert r.status != "equal"
    assert equivalent(f, f, Box([-1], [3])).status in ("equal", "unknown")


def test_no_samples_on_a_wide_box_is_not_a_numpy_error():
    rng = np.random.default_rng(0)
    f = Network([rng.normal(size=(3, 11)), rng.normal(size=(1, 3))], [rng.normal(size=3), rng.normal(size=1)])
    assert equivalent(f, f, Box(-np.ones(11), np.ones(11)), n_samples=0).status == "equal"


def test_sound_bounds_decide_small_differences_and_never_understate_them():
    # a network whose neurons contribute nothing against one whose neurons contribute about
    # eps: the MILP's margin (1e-7 of the outputs) could not go below tol = 1e-9, sound
    # linear bounds of the difference can ("bounds"); each bound is at least the largest
    # difference seen on dense samples, and eps = 1e-3 is found different
    rng = np.random.default_rng(3)
    box = Box([-1, -1], [1, 1])
    X = box.sample(300, rng)
    for trial in range(20):
        c = rng.normal(size=1) * 10
        f = Network([rng.normal(size=(4, 2)), np.zeros((1, 4))], [rng.normal(size=4), c])
        for eps, status in ((10.0 ** rng.uniform(-15, -11), "equal"), (1e-3, "different")):
            g = Network([rng.normal(size=(6, 2)), eps * rng.normal(size=(1, 6))],
                        [rng.normal(size=6), c + eps * rng.normal(size=1)])
            r = equivalent(f, g, box, tol=1e-9)
            assert r.status == status, (trial, eps, r)
            if status == "equal":
                # the differences in exact arithmetic (float64 forward passes are off by
                # more than the difference itself)
                gap = max(abs(Fraction(a) - Fraction(b)) for a, b in zip(f.exact()(X)[:, 0], g.exact()(X)[:, 0],
                                                                          strict=True))
                assert r.method == "bounds" and r.upper_bound >= gap
    # an exact network is bounded as it is: its float copy makes relu(x)/3 and
    # float(1/3) relu(x) identical, 1.9e-17 apart
    third = Network([[[1]], [[Fraction(1, 3)]]], [[0], [0]]).exact()
    rounded = Network([[[1.0], [-1.0]], [[1 / 3, 0.0]]], [[0.0, 0.0], [0.0]])
    for tol in (0.0, 1e-20):
        assert equivalent(third, rounded, Box([-1], [1]), tol=tol).status != "equal"


def test_differences_that_underflow_are_not_called_equal_at_tol_zero():
    # 1e-200 relu(1e-200 x) is about 1e-400 x: the bounds path read max |f - 0| <= -0.0 and
    # the normal forms "identical networks" against 2e-200 relu(1e-200 x) (aud_sym6 #1)
    box = Box([0.0], [1.0])
    f = Network([[[1e-200]], [[1e-200]]], [[0.0], [0.0]])
    for g in (Network([[[1.0]], [[0.0]]], [[0.0], [0.0]]), Network([[[1e-200]], [[2e-200]]], [[0.0], [0.0]])):
        gap = abs(Fraction(1e-200) * Fraction(1e-200) - Fraction(g.weights[1][0, 0]) * Fraction(g.weights[0][0, 0]))
        assert gap > 0                                           # exactly: they differ
        r = equivalent(f, g, box, tol=0.0)
        assert r.status != "equal", r
        assert r.upper_bound is None or r.upper_bound >= gap
    assert equivalent(f, f, box, tol=0.0).status == "equal"     # the same network still is


def test_a_time_limit_covers_the_normal_forms_of_exact_networks():
    # the normal form of an exact 10-700-700-1 network runs in Fractions for about 10 s;
    # under timeout=1 it is skipped (14-22 s before; aud_sym6 #3)
    import time

    from relulab.symmetry.equivalence import EXACT_CANONICAL_SECONDS, _normal_forms_fit

    rng = np.random.default_rng(0)
    f = random_network(rng, [10, 700, 700, 1]).exact()
    g = random_network(rng, [10, 5, 1])
    assert not _normal_forms_fit(f, g, 1.0, time.monotonic())
    assert EXACT_CANONICAL_SECONDS * f.n_params > 0.5                 # the estimate is what skips
    assert _normal_forms_fit(f, g, None, time.monotonic()) and _normal_forms_fit(g, g, 1e-9, time.monotonic())
