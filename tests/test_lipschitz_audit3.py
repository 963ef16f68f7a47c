"""Third Lipschitz audit: each case checked against an independent computation (a
certified gradient at a point, the unscaled network, a second route, a brute-force
memory trace)."""

from __future__ import annotations

import time
import tracemalloc

import numpy as np
import pytest

import relulab.lipschitz as L
from relulab import Box, Network, Polytope
from relulab.errors import RelulabError
from relulab.lipschitz import lipschitz
from relulab.lipschitz.bab import by_bab
from relulab.lipschitz.jacobians import jacobians, pattern_jacobian
from relulab.lipschitz.lower import sampled_lower

SMALL_NET = Network(
    [np.array([[0.7717211655645232, 0.37867606967021183], [-2.613559463345258, 0.2503980162775905],
               [-0.06134407983324849, 0.08321735347453037]]),
     np.array([[-1.0768749198271783, -0.2693470462204049, -0.17825876338229713],
               [1.1880942172123188, 0.33442706039101433, -0.00555503020266377],
               [1.5289699979109401, -0.5552479297636472, -0.3894303048753847]]),
     np.array([[-1.8167550113390598, 1.5691058462836123, 0.9643323681944285]])],
    [np.array([0.4584240222558538, 0.3344492232234687, 0.055074293831826]),
     np.array([0.10774446959116446, -0.1260032951336539, -0.10180021286147312]),
     np.array([0.02715180585684714])])


@pytest.mark.parametrize("scale", [1.0, 1e-5, 1e-9])
def test_the_milp_route_is_right_for_small_outputs(scale):
    # outputs of 1e-5: the MILP said "exact" 0.84 % below a certified gradient (HiGHS's
    # absolute tolerances against a tiny objective); at 1e-9 it lost its bound
    net = SMALL_NET * scale
    box = Box([-1, -1], [1, 1])
    m = lipschitz(net, box, p=1, method="milp")
    e = lipschitz(net, box, p=1, method="enumerate")
    x = np.array([-0.11537800644844903, -0.9888225382256042])     # inside the steepest region
    grad = float(np.abs(net.jacobian(x[None])).max())
    assert e.status == "exact" and e.value == pytest.approx(grad, rel=1e-12)
    assert m.status == "exact" and m.upper >= grad * (1 - 1e-9) and m.value == pytest.approx(grad, rel=1e-6)


@pytest.mark.parametrize("seed", [0, 2])
def test_branch_and_bound_is_scale_invariant(seed):
    # the drop tolerance was absolute below 1: a constant of 1e-8 ended after one box,
    # "complete", with a 2.2x bracket
    rng = np.random.default_rng(seed)
    net = Network([rng.normal(size=(8, 3)), rng.normal(size=(8, 8)), rng.normal(size=(1, 8))],
                  [rng.normal(size=8), rng.normal(size=8), np.zeros(1)])
    box = Box(-np.ones(3), np.ones(3))
    ref = by_bab(net, box, 1, None, time.time() + 60)
    small = by_bab(net * 1e-9, box, 1, None, time.time() + 60)
    assert ref.complete and small.complete
    assert small.upper / 1e-9 == pytest.approx(ref.upper, rel=1e-9)
    assert small.lower / 1e-9 == pytest.approx(ref.lower, rel=1e-9)
    assert small.n_boxes > 1


def _spike(d: int, c: float, eps: float) -> Network:
    """relu(eps - |x_1 - c|) / eps: a spike of slope 1/eps."""
    W1 = np.zeros((2, d))
    W1[0, 0], W1[1, 0] = 1.0, -1.0
    return Network([W1, [[-1.0, -1.0]], [[1 / eps]]], [[-c, c], [eps], [0.0]])


def test_a_polytope_domain_gets_the_pattern_check_too():
    # the same set as a Box read "exact 1e12", as a Polytope "exact 0": the sliver is below
    # the region engine's resolution and only boxes were cross-checked
    d = 3
    net = _spike(d, 0.3, 1e-12)
    x = np.zeros(d)
    x[0] = 0.3 - 0.5e-12
    slope = float(np.linalg.norm(net.jacobian(x[None])))     # the independent fact: 1e12
    box = Box(np.full(d, -15.7), np.full(d, 22.2))
    poly = Polytope(np.vstack([np.eye(d), -np.eye(d)]), np.r_[box.hi, -box.lo])
    r = lipschitz(net, poly, p=2)
    assert r.upper >= slope * (1 - 1e-9)
    # a slanted polytope (x_1 + x_2 <= 0) still holds the slab at x_1 = 0.3 (for x_2 <= -0.3):
    # its bounding box's check is sound for it, and nothing below the slope is "exact"
    cut = Polytope(np.vstack([np.eye(d), -np.eye(d), [[1.0, 1.0, 0.0]]]), np.r_[box.hi, -box.lo, 0.0])
    r = lipschitz(net, cut, p=2)
    assert r.upper >= slope * (1 - 1e-9)


def test_partial_is_about_limits_not_about_missing_proofs():
    # an enumeration left uncertified by near ties ended partial=True with no time limit
    net = _spike(3, 0.3, 1e-12)
    r = lipschitz(net, Box(-np.ones(3), np.ones(3)), p=2, method="enumerate")
    assert not r.partial
    assert r.status == "exact" or "incomplete" in r.info


def test_sampling_works_in_chunks():
    # 2,500 samples of a 4-400-400-100 network at once: 0.8 GB temporaries (past a 0.5 GB
    # budget) and tens of seconds before the first look at the deadline
    rng = np.random.default_rng(0)
    dims = [4, 400, 400, 100]
    net = Network([rng.normal(size=(dims[i + 1], dims[i])) / np.sqrt(dims[i]) for i in range(3)],
                  [rng.normal(size=dims[i + 1]) * 0.3 for i in range(3)])
    tracemalloc.start()
    try:
        sampled_lower(net, Box(-np.ones(4), np.ones(4)), 2, 2, n=2000, rounds=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 300 * 2**20, peak
    # the chunked Jacobians (forward mode here: 4 inputs, 100 outputs) against local_affine
    X = rng.uniform(-1, 1, size=(20, 4))
    J, _ = jacobians(net, X)
    assert np.allclose(J, np.stack([net.local_affine(x)[0] for x in X]), rtol=1e-12, atol=1e-12)


def test_pattern_jacobian_refuses_a_pattern_of_the_wrong_length():
    # a short pattern was broadcast and a long one cut: a wrong Jacobian, no error
    net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    assert pattern_jacobian(net, [True, False]).tolist() == [[1.0]]
    assert pattern_jacobian(net, [np.array([False, True])]).tolist() == [[-1.0]]
    for bad in ([True], [1, 0, 1, 1, 1], [np.array([True])], np.array([True, False, True])):
        with pytest.raises(RelulabError, match="pattern"):
            pattern_jacobian(net, bad)
    with pytest.raises(RelulabError, match="shape"):
        jacobians(net, np.zeros((3, 5)))


def test_a_nonpositive_answer_within_the_tolerance_says_so():
    # f = 1e-8 - |x - 0.3| is positive at 0.3 (exactly), and over a box around it the
    # answer is "positive"; over R the MILP's bound is 1.2e-8 > 0, within POS_TOL: it
    # read "nonpositive" as if proved
    from fractions import Fraction

    from relulab.lipschitz import Zonotope, is_positive, zonotope_contains

    net = Network([[[1.0], [-1.0]], [[-1.0, -1.0]]], [[-0.3, 0.3], [1e-8]])
    assert net.exact()([Fraction(0.3)])[0] > 0                  # the independent fact
    assert is_positive(net, Box([-0.7], [1.3])).positive is True
    r = is_positive(net, None)
    assert r.positive is True or (r.positive is False and r.within_tolerance and r.bound > 0)
    # a plainly nonpositive function: proved, no tolerance involved
    minus = Network([[[1.0], [-1.0]], [[-1.0, -1.0]]], [[0.0, 0.0], [-0.5]])
    r = is_positive(minus, Box([-1], [1]))
    assert r.positive is False and not r.within_tolerance
    # Z1 sticks out of Z2 by 1e-10 in x: "contained" only within the tolerance
    c = zonotope_contains(Zonotope([0, 0], [[1 + 1e-10, 0], [0, 1]]), Zonotope([0, 0], [[1, 0], [0, 1]]))
    assert c.contained is not True or c.within_tolerance


def test_a_tiny_full_dimensional_polytope_is_a_domain():
    # the square [0.5, 0.5 + 1e-10]^2 was refused as "flat or a point" (an absolute
    # radius of 1e-9) while the same Box has the constant sqrt(5)
    net = Network([[[1.0, 2.0]]], [[0.0]])
    lo, hi = 0.5, 0.5 + 1e-10
    poly = Polytope([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]], [hi, -lo, hi, -lo])
    r = lipschitz(net, poly, p=2)
    assert r.status == "exact" and r.value == pytest.approx(np.sqrt(5.0), rel=1e-12)


@pytest.mark.parametrize("call", [
    lambda: lipschitz(Network([[[1.0]]], [[0.0]]), Box([0], [1]), time_limit="5"),
    lambda: L.vector_norm(np.ones(2), 0),
    lambda: L.dual_exponent(0.5),
    lambda: L.operator_norm(np.full((2, 2), np.nan), 2, 3),
    lambda: L.is_positive(Network([[[1.0]]], [[0.0]]), None,
                                                                       time_limit=float("nan")),
    lambda: L.surjective(Network([[[1.0]]], [[0.0]]), time_limit=-1),
])
def test_bad_arguments_are_one_clear_error(call):
    with pytest.raises(RelulabError):
        call()
