"""Bounds that are proofs: the bounding box of a polytope is proven by LP duality (not
HiGHS's objective), bounds of an exact (Fraction) network cover the exact network (not
its float64 rounding), the rounding bound covers weights below float64's normal range,
and the MILP's tolerance error is never NaN."""

from __future__ import annotations

import itertools
from fractions import Fraction as F

import numpy as np
import pytest

from relulab import Box, Network
from relulab.bounds import float_rounding_bound, interval_bounds, linear_bounds, symbolic_bounds
from relulab.domain import Polytope
from relulab.spec import OutputConstraint, Specification
from relulab.verify import maximize, verify


def _exact_vertices(P: Polytope) -> list[tuple[F, F]]:
    """Every vertex of a 2-D polytope, in Fractions (pairs of rows, kept when exactly in P)."""
    A = [[F(float(v)) for v in r] for r in P.A]
    b = [F(float(v)) for v in P.b]
    out = []
    for i, j in itertools.combinations(range(len(b)), 2):
        (a, c), (d, e) = A[i], A[j]
        det = a * e - c * d
        if det:
            x = ((b[i] * e - c * b[j]) / det, (a * b[j] - d * b[i]) / det)
            if all(r[0] * x[0] + r[1] * x[1] <= bb for r, bb in zip(A, b, strict=True)):
                out.append(x)
    return out


@pytest.mark.parametrize("seed", range(12))
def test_the_bounding_box_of_a_thin_polytope_holds_every_exact_vertex(seed):
    """Thin random quadrilaterals far out: HiGHS's optimum cut off vertices by up to
    1.3e-7 relative, and symbolic_bounds and maximize (exact=True) sat on that box."""
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=2)
    direction /= np.linalg.norm(direction)
    normal = np.array([-direction[1], direction[0]])
    centre = rng.normal(size=2) * 10.0 ** rng.integers(2, 7)
    width = 10.0 ** rng.uniform(-4, -1)
    A = np.array([normal, -normal, direction, -direction]) + rng.normal(size=(4, 2)) * 1e-3
    b = A @ centre + np.array([width, width, 1.0, 1.0])
    P = Polytope(A, b)
    V = _exact_vertices(P)
    assert len(V) >= 3
    box = P.bounding_box()
    for v in V:
        for k in range(2):
            assert F(float(box.lo[k])) <= v[k] <= F(float(box.hi[k]))
    net = Network([[[1.0, 0.0], [0.0, 1.0]]], [[0.0, 0.0]])
    sb = symbolic_bounds(net, P)
    for k in range(2):
        top = max(v[k] for v in V)
        assert F(float(sb.out_hi[k])) >= top
        r = maximize(net, P, c=np.eye(2)[k], time_limit=20)
        assert F(float(r.upper_bound)) >= top


def _cancelling() -> Network:
    """2^60 (relu((1 + 2^-60) x) - relu(x)) = x on [0, 1]; rounded to float64 it is 0."""
    e = F(1, 2**60)
    return Network([[[1 + e], [F(1)]], [[F(2**60), F(-(2**60))]]], [[F(0), F(0)], [F(0)]], exact=True)


def test_bounds_of_an_exact_network_cover_its_exact_values():
    """symbolic / interval / linear bounds gave [0, 0] for f(x) = x on [0, 1] (the
    rounded network's), and f(1) = 1."""
    net, box = _cancelling(), Box([0.0], [1.0])
    xs = [F(k, 8) for k in range(9)]
    ys = [net(np.array([[x]], dtype=object))[0, 0] for x in xs]
    for b in (symbolic_bounds(net, box), interval_bounds(net, box)):
        assert all(F(float(b.out_lo[0])) <= y <= F(float(b.out_hi[0])) for y in ys)
        # the hidden pre-activations too: (1 + 2^-60) x and x
        for k, row in enumerate(([1 + F(1, 2**60)], [F(1)])):
            for x in xs:
                z = row[0] * x
                assert F(float(b.pre_lo[0][k])) <= z <= F(float(b.pre_hi[0][k]))
    low = linear_bounds(net, box, np.array([[-1.0], [2.0]]), np.array([0.5, -1.0]))
    for y in ys:
        assert F(float(low[0])) <= -y + F(1, 2) and F(float(low[1])) <= 2 * y - 1


def test_bounds_of_an_exact_network_of_float_numbers_are_the_float_ones():
    net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]]).exact()
    box = Box([-1.0], [2.0])
    a, b = symbolic_bounds(net, box), symbolic_bounds(net.float(), box)
    assert a.out_lo.tolist() == b.out_lo.tolist() and a.out_hi.tolist() == b.out_hi.tolist()


@pytest.mark.parametrize("w, top, bound_text", [
    (F(1, 10**400), 1e200, "f < 1"),                 # float(w) = 0
    (F(1, 3 * 10**321), 1e300, "f < 3.32179e+278"),  # subnormal: float(w) < w
])
def test_the_rounding_of_weights_below_the_normal_range_is_bounded(w, top, bound_text):
    """The rounding error of each weight was rounded to nearest: below float64's smallest
    subnormal it read 0, and verify answered "holds" for a property f violates."""
    net = Network([[[w]], [[F(10**300)]]], [[F(0)], [F(0)]])
    box = Box([0.0], [top])
    fx = net(np.array([[F(top)]], dtype=object))[0, 0]
    g = net.float()(np.array([[top]]))[0, 0]
    e = float_rounding_bound(net, box)
    assert e is not None and F(float(e[0])) >= abs(fx - F(float(g)))
    limit = float(bound_text.split("< ")[1])
    assert fx >= F(limit)   # the property "f < limit" is violated at x = top
    spec = Specification(box, [OutputConstraint(np.array([[-1.0]]), np.array([-limit]))])
    r = verify(net, spec, timeout=20)
    assert r.status != "holds"


def test_a_tolerance_error_that_overflows_is_infinite_not_nan():
    """Inputs up to 1e200 make the MILP's feasibility tolerance overflow its error term; a
    first layer of zeros made it 0 x inf = NaN, reported as the bound of an "optimal" maximum."""
    net = Network([[[0.0]], [[1e300]]], [[0.0], [0.0]])
    r = maximize(net, Box([0.0], [1e200]), c=[1.0], time_limit=10)
    assert not np.isnan(r.upper_bound) and r.upper_bound >= r.value


@pytest.mark.parametrize("seed", range(4))
def test_the_bounding_box_of_a_rotated_cube_is_its_known_box(seed):
    """{x : -1 <= Q x <= 1} for an orthogonal Q is Q^T [-1, 1]^d: coordinate i ranges
    over +-sum_j |Q_ji| (a box proven from one pass of solves' duals, above the
    rational-sum size, so with its float rounding bound added)."""
    d = 24
    Q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(d, d)))
    P = Polytope(np.vstack([Q, -Q]), np.ones(2 * d))
    box = P.bounding_box()
    # the exact extent of the set these float rows describe, by the vertex that attains it
    for i in range(d):
        v = np.linalg.solve(Q, np.sign(Q[:, i]))   # Q v = sign(Q_i): a vertex, x_i maximal
        assert box.lo[i] <= -v[i] and v[i] <= box.hi[i]
        assert box.hi[i] - v[i] < 1e-9 and -v[i] - box.lo[i] < 1e-9


def test_a_proven_bound_with_other_variable_bounds_bounds_the_lp_with_them():
    """The duals of a solve without variable bounds bound the LP with them (weak
    duality): at most that LP's optimum, and close to it."""
    from relulab.lp import LPModel

    rng = np.random.default_rng(3)
    A = rng.normal(size=(30, 5))
    b = 1.0 + np.abs(rng.normal(size=30))
    c = rng.normal(size=5)
    free = LPModel(c, A_ub=A, b_ub=b)
    r = free.solve()
    lo, hi = np.full(5, -50.0), np.full(5, 50.0)
    boxed = LPModel(c, A_ub=A, b_ub=b, lb=lo, ub=hi).solve()
    assert r.status == boxed.status == "optimal"
    bound = free.proven_bound(r, lb=lo, ub=hi)
    assert bound <= boxed.objective + 1e-12 and boxed.objective - bound < 1e-9
    # a tighter box than the polytope's: the unbounded solve's duals no longer match it,
    # and the bound is still below the optimum there
    small = LPModel(c, A_ub=A, b_ub=b, lb=np.full(5, -0.01), ub=np.full(5, 0.01)).solve()
    assert free.proven_bound(r, lb=np.full(5, -0.01), ub=np.full(5, 0.01)) <= small.objective + 1e-12
    with pytest.raises(ValueError, match="both lb and ub"):
        free.proven_bound(r, lb=lo)
