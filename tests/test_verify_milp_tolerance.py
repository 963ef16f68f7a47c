"""The verifier's MILPs at extreme scales: HiGHS's feasibility tolerances, amplified by
large later weights, must not turn into a false "holds" or a bound on the wrong side of
the optimum.  Truth comes from exact rational evaluation (the optimum of a 1-D network
is at a box end or a kink), never from relulab.
"""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

from relulab import Box, Network
from relulab.bounds import float_layers
from relulab.spec import OutputConstraint, Specification
from relulab.verify import maximize, minimize, output_range, verify
from relulab.verify.milp import symbolic_pre


def exact_extremes_1d(W1, b1, W2, b2, lo, hi):
    """(min, max) of a one-hidden-layer 1-D network over [lo, hi], exactly."""
    def f(x):
        return sum(F(a) * max(F(w[0]) * x + F(b), F(0))
                   for a, w, b in zip(W2[0], W1, b1, strict=True)) + F(b2[0])
    pts = {F(lo), F(hi)} | {-F(b) / F(w[0]) for w, b in zip(W1, b1, strict=True)
                            if w[0] != 0 and F(lo) <= -F(b) / F(w[0]) <= F(hi)}
    vals = [f(x) for x in pts]
    return min(vals), max(vals)


def spike(dim: int):
    """f(x) = 1e6 relu(1e-6 - sum |x_i - c_i|) - 1/2: f(c) = 1/2 on a spike 1e-6 wide."""
    c = np.random.default_rng(0).uniform(-0.5, 0.5, dim)
    W1 = np.vstack([np.eye(dim), -np.eye(dim)])
    b1 = np.concatenate([-c, c])
    net = Network([W1, -np.ones((1, 2 * dim)), np.array([[1e6]])],
                  [b1, np.array([1e-6]), np.array([-0.5])])
    return net, c


def exact_spike(net: Network, x) -> F:
    h = [F(v) for v in x]
    for W, b in zip(net.weights[:-1], net.biases[:-1], strict=True):
        h = [max(sum(F(w) * v for w, v in zip(row, h, strict=True)) + F(bb), F(0))
             for row, bb in zip(np.asarray(W), np.asarray(b), strict=True)]
    W, b = np.asarray(net.weights[-1]), np.asarray(net.biases[-1])
    return sum(F(w) * v for w, v in zip(W[0], h, strict=True)) + F(b[0])


@pytest.mark.parametrize("dim", [2, 4])
def test_a_spike_under_a_large_output_weight_is_not_proved_absent(dim):
    net, c = spike(dim)
    assert exact_spike(net, c) > F(1, 4)  # the unsafe set y >= 0 is reached at c
    box = Box(-np.ones(dim), np.ones(dim))
    spec = Specification(box, [OutputConstraint(np.array([[-1.0]]), np.array([0.0]))])
    r = verify(net, spec, timeout=20, method="milp")
    assert r.status != "holds"
    if r.status == "violated":
        assert float(net(np.asarray(r.counterexample)[None])[0, 0]) >= 0


def test_maximize_bound_is_above_the_exact_maximum_with_large_output_weights():
    W1 = [[0.7579546637146332], [0.8469714121998347]]
    b1 = [-62.5936351447401, -69.94484244665361]
    W2 = [[162065.10857032432, -108309.46278820044]]
    b2 = [-0.9131566562852219]
    lo, hi = 82.58229415856054, 82.5822945701809
    net = Network([W1, W2], [b1, b2])
    tmin, tmax = exact_extremes_1d(W1, b1, W2, b2, lo, hi)
    r = maximize(net, Box([lo], [hi]))
    assert r.upper_bound >= float(tmax)
    assert r.value <= float(tmax) + 1e-9
    rr = output_range(net, Box([lo], [hi]))
    assert rr.hi_bound[0] >= float(tmax) and rr.lo_bound[0] <= float(tmin)
    # the bracket the tolerances leave is wide against this range: not called exact
    assert not rr.exact or (rr.hi_bound[0] - rr.hi[0]) <= 1e-7 * max(1.0, abs(rr.hi[0]))


def test_minimize_on_a_huge_box_does_not_claim_a_refuted_bound():
    W1 = [[1.5617178164616063], [3.5089080311626417]]
    b1 = [-9387988126.088326, 185973858.49829566]
    W2 = [[0.9269833644348046, -0.7263132630260369]]
    b2 = [-88979616.49341051]
    lo, hi = -6573537164.968684, 6573537164.968684
    net = Network([W1, W2], [b1, b2])
    tmin, _ = exact_extremes_1d(W1, b1, W2, b2, lo, hi)
    r = minimize(net, Box([lo], [hi]))
    assert r.lower_bound <= float(tmin)
    assert r.value >= float(tmin) - 1e-6 * abs(float(tmin))


def test_tolerance_error_bounds_every_perturbation_within_the_tolerances():
    # perturb each neuron's output by up to its allowed deviation (and the input by its
    # bound tolerance): the output moves by at most tolerance_error
    from relulab.verify.milp import tolerance_error

    rng = np.random.default_rng(3)
    for _ in range(20):
        dims = [3, 6, 5, 2]
        Ws = [rng.standard_normal((dims[i + 1], dims[i])) * 10.0 ** rng.integers(-2, 3)
              for i in range(3)]
        bs = [rng.standard_normal(dims[i + 1]) for i in range(3)]
        net = Network(Ws, bs)
        box = Box(-np.ones(3), np.ones(3))
        W, b, sk = float_layers(net)
        pre = symbolic_pre(W, b, box)
        C = rng.standard_normal((1, 2))
        tol = 1e-3  # large, so that the effect is far above rounding
        err = tolerance_error(W, b, sk, pre, box, C, tol=tol)[0]
        for _ in range(50):
            x = box.sample(1, rng)[0]
            h, hp = x, np.clip(x + rng.uniform(-1, 1, 3) * tol * (1 + np.abs(x)), -2, 2)
            for k in range(2):
                lo, hi = pre[k]
                unstable = (lo < 0) & (hi > 0)
                dev = tol * (2.0 + unstable * np.maximum(-lo, hi))
                h = np.maximum(W[k] @ h + b[k], 0.0)
                hp = np.maximum(W[k] @ hp + b[k], 0.0) + rng.uniform(-1, 1, h.shape) * dev
            y, yp = C @ (W[2] @ h + b[2]), C @ (W[2] @ hp + b[2])
            assert abs(float(yp[0] - y[0])) <= err * (1 + 1e-12)


HUGE_BOX_CASES = [
    ("min",
     [[[-1.8648091974232126], [-0.717097063291357], [0.38583025379124136], [-0.5884603706803517]],
      [[-1.0935262062019875, 0.1319568266792784, -0.17192548694571705, -1.3700541010750942]]],
     [[5614204824.03828, -37522537.849225655, -4232620202.2068725, 926485791.1547228],
      [3663619047.1703696]],
     2084763605.8895173),
    ("max",
     [[[1.0234056173143342], [-1.2867730648075586], [0.5710313457075091], [0.3192767192896368],
       [-0.1422321595683954], [0.330515492778797]],
      [[-0.32014268833883097, -1.9851601511740937, -0.06531146688982015, 1.8146616772378976,
        -1.9937055536914028, 0.21709230197642237]]],
     [[6607482.912830085, -15043347.261135157, -16245286.514035143, -1632798.8073014647,
       -19526470.50410878, -9579705.473616622], [-9690431.953252258]],
     22566890.365889538),
]


@pytest.mark.parametrize("sense, Ws, bs, h", HUGE_BOX_CASES)
def test_huge_boxes_get_a_tolerance_float64_can_resolve(sense, Ws, bs, h):
    # an absolute 1e-9 tolerance on rows with entries near 1e9 made HiGHS call the
    # feasible piece at the box's end infeasible: bounds 59% and 6.6% off, 'optimal'
    net = Network(Ws, bs)
    tmin, tmax = exact_extremes_1d(Ws[0], bs[0], Ws[1], bs[1], -h, h)
    if sense == "min":
        r = minimize(net, Box([-h], [h]))
        assert r.lower_bound <= float(tmin) * (1 - 1e-15 * np.sign(float(tmin)))
    else:
        r = maximize(net, Box([-h], [h]))
        assert r.upper_bound >= float(tmax) - 1e-15 * abs(float(tmax))


def test_is_positive_is_not_fooled_by_large_output_weights():
    from relulab.lipschitz import is_positive

    W1 = [[0.7579546637146332], [0.8469714121998347]]
    b1 = [-62.5936351447401, -69.94484244665361]
    W2 = [[162065.10857032432, -108309.46278820044]]
    b2 = [-0.9131566562852219 + 0.911]
    lo, hi = 82.58229415856054, 82.5822945701809
    _, tmax = exact_extremes_1d(W1, b1, W2, b2, lo, hi)
    assert tmax > 1e-3
    r = is_positive(Network([W1, W2], [b1, b2]), Box([lo], [hi]))
    assert r.positive is not False


def test_is_positive_and_surjective_see_a_thin_spike():
    from relulab.lipschitz import is_positive, surjective

    # g = 1e8 relu(1e-7 x - |y|) - 5 |x|: g(1, 0) = 5, g(-1, 0) = -5, positively homogeneous
    W1 = np.array([[1.0, 0], [-1, 0], [0, 1], [0, -1]])
    W2 = np.array([[1e-7, -1e-7, -1, -1], [1, 0, 0, 0], [0, 1, 0, 0]])
    W3 = np.array([[1e8, -5.0, -5.0]])
    g = Network([W1, W2, W3], [np.zeros(4), np.zeros(3), np.zeros(1)])
    assert float(g(np.array([[1.0, 0.0]]))[0, 0]) > 4
    assert is_positive(g, Box([-1, -1], [1, 1])).positive is not False
    assert is_positive(g).positive is not False
    assert surjective(g).surjective is not False


def test_a_domain_too_large_for_the_milp_solver_is_named() -> None:
    # [-1e16, 1e16]^2 gives big-M values near 1e16, where HiGHS stops with status
    # "error": the refusal says why; if a later HiGHS solves it, the answer must hold.
    from relulab.errors import RelulabError
    from relulab.examples import tiny_2d

    net = tiny_2d()
    try:
        r = maximize(net, Box([-1e16, -1e16], [1e16, 1e16]))
    except RelulabError as e:
        assert "pre-activation bounds reach" in str(e) and "give a smaller domain" in str(e)
    else:
        # a solver failure is "unknown" with the hint, bracketed by the CROWN bound
        assert r.status != "unknown" or "give a smaller domain" in r.info["reason"]
        assert r.value <= r.bound and float(net(r.x)[0]) == pytest.approx(r.value, rel=1e-12)


def test_input_splitting_settles_boxes_whose_gap_is_their_rounding_margin(monkeypatch) -> None:
    """On an affine piece (every neuron active) CROWN's bound is the maximum plus the
    proof margin, which no split shrinks: the search settles the box on its first pass
    (it used to split until the splitting floor), and the bound stays above the exact
    maximum, which an affine function takes at the corner that the signs of its gradient pick."""
    import time

    from relulab.verify import milp

    rng = np.random.default_rng(3)
    W1, W2 = rng.normal(size=(6, 3)), rng.normal(size=(1, 6))
    b1 = np.full(6, 10.0)  # active on the whole box
    net = Network([W1, W2], [b1, np.zeros(1)])
    box = Box(-np.ones(3), np.ones(3))
    calls = []
    real = milp.crown_batch
    monkeypatch.setattr(milp, "crown_batch", lambda *a, **k: calls.append(1) or real(*a, **k))
    bound, x, value = milp._bab_max(net, box, np.ones(1), time.time() + 60)
    grad = (W2 @ W1)[0]
    corner = np.where(grad > 0, 1.0, -1.0)
    exact = sum(F(a) * (sum(F(w) * F(c) for w, c in zip(row, corner, strict=True)) + F(b))
                for a, row, b in zip(W2[0], W1, b1, strict=True))
    assert len(calls) == 1
    assert F(bound) >= exact >= F(value)
    assert bound - value < 1e-5  # tol: the proof margin, 1e-7 of the terms' sizes


def _cancelling_far_net(rng: np.random.Generator, d: int = 4, h: int = 4):
    """A network whose first layer's weights of 1e3 and biases of 1e9 cancel over a box
    of width 2,000 centred near 1e6 (its MILP rows carry constants float64 resolves only
    to ~2e-7, below the feasibility tolerance HiGHS was given)."""
    c = 1e6 * (1 + rng.uniform(-0.1, 0.1, d))
    W1 = rng.normal(size=(h, d)) * 1e3
    b1 = -W1 @ c + rng.normal(size=h) * 1e3 * np.abs(W1).sum(1)
    net = Network([W1, rng.normal(size=(h, h)), rng.normal(size=(1, h))],
                  [b1, rng.normal(size=h) * 0.1, rng.normal(size=1)])
    return net, Box(c - 1e3, c + 1e3)


def _grid_max(net: Network, box: Box, n: int = 9) -> tuple[np.ndarray, F]:
    """The grid point of largest output, with its exact value (Fractions)."""
    axes = [np.linspace(lo, hi, n) for lo, hi in zip(box.lo, box.hi, strict=True)]
    G = np.stack(np.meshgrid(*axes), -1).reshape(-1, box.dim)
    x = G[int(np.argmax(net(G)[:, 0]))]
    return x, F(net.exact()(x)[0])


def _cancelling_hidden_net(rng: np.random.Generator, d: int = 4, h: int = 4):
    """The same cancellation one layer in: the first layer lifts a box of width 2,000
    at the origin to activations near 1e6, and the second layer's weights of 1e3 and
    biases of 1e9 cancel on them (moving the box cannot help here)."""
    c = 1e6 * (1 + rng.uniform(-0.1, 0.1, h))
    W1 = rng.normal(size=(h, d))
    W2 = rng.normal(size=(h, h)) * 1e3
    b2 = -W2 @ c + rng.normal(size=h) * 1e3 * np.abs(W2).sum(1)
    net = Network([W1, W2, rng.normal(size=(h, h)), rng.normal(size=(1, h))],
                  [c, b2, rng.normal(size=h) * 0.1, rng.normal(size=1)])
    return net, Box(np.full(d, -1e3), np.full(d, 1e3))


@pytest.mark.parametrize("make", [_cancelling_far_net, _cancelling_hidden_net])
@pytest.mark.parametrize("seed", range(8))
def test_rows_of_cancelling_large_terms_get_no_false_holds(make, seed):
    """The MILP ("holds" by method="milp", maximize's bound) against the exact value at
    the best grid point.  HiGHS's "optimal" bound of such 4-4-4-1 networks was up to
    626,666 under a point's value, and verify said "holds" with the attack off: the
    feasibility tolerance (1e-9) was below what float64 resolves on rows of 1e9."""
    net, box = make(np.random.default_rng(seed))
    x, top = _grid_max(net, box)
    thr = float(top) if F(float(top)) <= top else float(np.nextafter(float(top), -np.inf))
    spec = Specification(box, [OutputConstraint(np.array([[-1.0]]), np.array([-thr]))])  # f >= thr
    v = verify(net, spec, timeout=20, method="milp", attack_time=0.0)
    assert v.status != "holds"
    if v.status == "violated":
        assert box.contains(v.counterexample)
        assert F(net.exact()(v.counterexample)[0]) >= F(thr)
    r = maximize(net, box, time_limit=20)
    assert F(float(r.bound)) >= top


def _tiny_weight_net(exact: bool = False) -> tuple[Network, Box]:
    """f(x, y) = relu(5e-10 x) + relu(y) on [-1e9, 1e9] x [-1, 1]: the weight 5e-10 is
    below HiGHS's small_matrix_value (1e-9), which drops it, yet it adds 0.5 at x = 1e9."""
    w = F(1, 2 * 10**9) if exact else 5e-10
    net = Network([[[w, 0], [0, 1]], [[1, 1]]], [[0, 0], [0]], exact=exact)
    return net, Box([-1e9, -1.0], [1e9, 1.0])


@pytest.mark.parametrize("exact", [False, True])
def test_weights_below_highs_resolution_are_not_lost(exact):
    """maximize said "optimal" with bound 1.000008 for a maximum of 3/2, and method=milp
    "holds" for f >= 1.25: the encoding now drops such weights itself and moves its rows
    outward by what they can add."""
    net, box = _tiny_weight_net(exact)
    top = F(net.exact()(np.array([1e9, 1.0]))[0])
    assert top > F(149, 100)   # (3/2, up to the float64 rounding of 5e-10)
    r = maximize(net, box, time_limit=20)
    assert F(float(r.bound)) >= top
    assert F(float(output_range(net, box, time_limit=20).hi_bound[0])) >= top
    spec = Specification(box, [OutputConstraint(np.array([[-1.0]]), np.array([-1.25]))])   # f >= 1.25
    assert verify(net, spec, timeout=20, method="milp", attack_time=0.0).status != "holds"


def test_is_positive_and_why_not_see_a_weight_below_highs_resolution():
    """is_positive called a network nonpositive whose exact value at a point is +0.005,
    and why_not proved "no counterfactual" where one exists."""
    from relulab.explain import why_not
    from relulab.lipschitz import is_positive

    rng = np.random.default_rng(3)
    d, h = 3, 6
    W1 = rng.normal(size=(h, d))
    W1[:, 0] *= 1e-9
    b1, W2, b2 = rng.normal(size=h) * 0.1, rng.normal(size=(h, h)), rng.normal(size=h) * 0.1
    g = Network([W1, W2, -rng.normal(size=(1, h))], [b1, b2, np.array([-0.283])])
    box = Box([-1e8, -1, -1], [1e8, 1, 1])
    xm = np.array([1e8, -0.25, -0.5])
    assert F(g.exact()(xm)[0]) > 0
    assert is_positive(g, box).positive is not False
    # 1.25 - relu(5e-10 x) - relu(y): negative only where 5e-10 x + y > 1.25
    f = Network([[[5e-10, 0.0], [0.0, 1.0]], [[-1.0, -1.0]]], [[0.0, 0.0], [1.25]])
    box = Box([-1e9, -1.0], [1e9, 1.0])
    assert F(f.exact()(np.array([1e9, 1.0]))[0]) < 0
    r = why_not(f, np.zeros(2), "negative", box, norm="linf", time_limit=20)
    assert r.status != "infeasible" and r.exists is not False


def test_inputs_in_different_units_keep_a_tight_tolerance():
    """z = 1e-5 x1 + 1e5 x2 with x1 up to 1e10 and x2 up to 1: every term is at most 1e5.
    The row-term size was the largest weight times the largest input (1e15), the bound
    went from 200010 to 1.2e6 and method=milp no longer proved y <= 2.1e5."""
    net = Network([[[1e-5, 1e5], [1e-5, -1e5]], [[1.0, -1.0]]], [[0.0, 0.0], [0.0]])
    box = Box([-1e10, -1.0], [1e10, 1.0])
    top = F(net.exact()(np.array([1e10, 1.0]))[0])          # z1 = 2e5, z2 = 0: the maximum
    r = maximize(net, box, time_limit=20)
    assert top <= F(float(r.upper_bound)) <= top * (1 + F(1, 1000))
    spec = Specification(box, [OutputConstraint(np.array([[-1.0]]), np.array([-2.1e5]))])
    assert verify(net, spec, timeout=20, method="milp").status == "holds"


def test_an_objective_keeps_its_small_coefficients():
    """maximize's objective is no constraint row: HiGHS keeps its small coefficients, and
    the bound of 5e-10 relu(x) + relu(y) stays within the tolerance error of 1.5 (the
    rows' dropped-entry error had been added to it too: 2.0000055)."""
    net = Network([[[1.0, 0.0], [0.0, 1.0]], [[5e-10, 1.0]]], [[0.0, 0.0], [0.0]])
    box = Box([0.0, -1.0], [1e9, 1.0])
    top = F(net.exact()(np.array([1e9, 1.0]))[0])
    r = maximize(net, box, time_limit=20)
    assert top <= F(float(r.upper_bound)) <= top + F(1, 1000)


def _mixed_units_net(rng: np.random.Generator, d: int = 2, h: int = 4):
    """Inputs in different units (x1 over +-1e10 under weights of 1e-7, x2 over +-1 under
    1e3) feeding the second layer's cancelling biases of 1e9."""
    scale = np.array([1e10, 1.0])
    W1 = rng.normal(size=(h, d)) / scale * 1e3
    c = 1e6 * (1 + rng.uniform(-0.1, 0.1, h))
    W2 = rng.normal(size=(h, h)) * 1e3
    b2 = -W2 @ c + rng.normal(size=h) * 1e3 * np.abs(W2).sum(1)
    net = Network([W1, W2, rng.normal(size=(h, h)), rng.normal(size=(1, h))],
                  [c, b2, rng.normal(size=h) * 0.1, rng.normal(size=1)])
    return net, Box(-scale, scale)


@pytest.mark.parametrize("seed", [1, 4, 5, 7])
def test_inputs_in_different_units_get_no_false_holds(seed):
    """A finer feasibility tolerance (each weight times its own input) gave "optimal"
    bounds 270,000 under the maximum and "holds" on violated properties (seeds 1, 4, 7);
    wide inputs are now scaled by powers of two before the MILP."""
    net, box = _mixed_units_net(np.random.default_rng(seed))
    x, top = _grid_max(net, box, n=41)
    thr = float(np.nextafter(float(top), -np.inf))
    spec = Specification(box, [OutputConstraint(np.array([[-1.0]]), np.array([-thr]))])
    assert verify(net, spec, timeout=20, method="milp", attack_time=0.0).status != "holds"
    assert F(float(maximize(net, box, time_limit=20).bound)) >= top


def test_why_not_sees_a_tiny_output_weight():
    """1.25 - 5e-10 relu(x) - relu(y) is -0.25 at (1e9, 1): why_not proved "no
    counterfactual" (the explanation MILP's output rows lost the weight; a weight of
    5e-9 was found)."""
    from relulab.explain import why_not

    for w, top in ((5e-10, 1e9), (5e-9, 1e8)):
        f = Network([[[1.0, 0.0], [0.0, 1.0]], [[-w, -1.0]]], [[0.0, 0.0], [1.25]])
        box = Box([0.0, -1.0], [top, 1.0])
        assert F(f.exact()(np.array([top, 1.0]))[0]) < 0
        r = why_not(f, np.zeros(2), "negative", box, norm="linf", time_limit=20)
        assert r.exists is True and r.status != "infeasible"
        assert box.contains(r.counterfactual) and f(r.counterfactual[None])[0, 0] < 0


@pytest.mark.parametrize("small", [1e-5, 2e-3])
def test_inputs_in_different_units_are_scaled_whatever_the_size_of_the_small_weights(small):
    """Weights of 2e-3 beside 1e5 were not scaled (an absolute threshold of 2^-10): the
    tolerance error was 14,000 and method=milp no longer proved y <= 2.1e5; the maximum
    is exactly 2e5."""
    net = Network([[[small, 1e5], [small, -1e5]], [[1.0, -1.0]]], [[0.0, 0.0], [0.0]])
    box = Box([-1e8, -1.0], [1e8, 1.0])
    top = F(net.exact()(np.array([1e8, 1.0]))[0])
    r = maximize(net, box, time_limit=20)
    assert top <= F(float(r.upper_bound)) <= top * (1 + F(1, 10**6))
    spec = Specification(box, [OutputConstraint(np.array([[-1.0]]), np.array([-1.05 * float(top)]))])
    assert verify(net, spec, timeout=20, method="milp").status == "holds"
