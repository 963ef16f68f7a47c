"""aud_milp2: HiGHS's presolve makes matrix entries (products and ratios of the given
ones) and drops those at most 1e-9 with no allowance, so every MILP or LP whose bound is a
proof runs without it; polytope domains far from the origin are moved there as boxes are;
lipschitz's "auto" route goes on when the region enumeration refuses a thin polytope.

Independent checks: exact (Fraction) forward passes at points of the domain, and an exact
1-D enumeration of the network's pieces (every kink found in rational arithmetic)."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

from relulab import Box, Network
from relulab.domain import Polytope
from relulab.lipschitz import is_positive, lipschitz
from relulab.lp import LPModel
from relulab.verify.milp import maximize, minimize

# a 1-3-4-1 network whose second layer has weights 1e-13 .. 3.5e-9 (kept by HiGHS as given)
TINY_WS = [[[-1.2936524861301888], [1.9947143233776408], [-1.9541202836865803]],
           [[-3.875530598944813e-10, -2.042897157260032e-10, 2.5741762921066845e-11],
            [2.00647496258552e-09, -3.5257478284103444e-09, 2.5381319435062967e-12],
            [-6.700241449653359e-13, 2.5189513251225215e-12, -1.6584337470164726e-13],
            [-1.2611293507631464e-10, 7.10830760179285e-11, 1.1603138960170221e-11]],
           [[-0.4699088220261, -0.2146203533869543, -0.4057974293974899, 1.3129530778208212]]]
TINY_BS = [[0.8804880994817414, 1.2281956039930402, -0.20724100365390744],
           [-0.07905516314936278, 0.3053802269659159, 0.25326902774418936, 1.3180740028745177],
           [0.8546768180345291]]
TINY_BOX = (-541.8309571320762, 718.0449638201695)


def _exact(Ws, bs, x) -> F:
    h = [F(v) for v in np.atleast_1d(x)]
    for k, (W, b) in enumerate(zip(Ws, bs, strict=True)):
        z = [sum((F(w) * v for w, v in zip(row, h, strict=True)), F(0)) + F(c)
             for row, c in zip(W, b, strict=True)]
        h = z if k == len(Ws) - 1 else [max(v, F(0)) for v in z]
    return h[0]


def _pieces_1d(Ws, bs, lo: float, hi: float) -> list[F]:
    """Every kink of a 1-input network on [lo, hi], exactly: each piece's pre-activations
    are affine in x (Fractions), split where one crosses 0."""
    pieces = [(F(lo), F(hi), [(F(1), F(0))])]   # (a, b, [(slope, offset) of each input])
    for k, (W, b) in enumerate(zip(Ws, bs, strict=True)):
        out = []
        for a, c, h in pieces:
            z = [(sum((F(w) * s for w, (s, _) in zip(row, h, strict=True)), F(0)),
                  sum((F(w) * o for w, (_, o) in zip(row, h, strict=True)), F(0)) + F(bb))
                 for row, bb in zip(W, b, strict=True)]
            if k == len(Ws) - 1:
                out.append((a, c, z))
                continue
            cuts = sorted({-o / s for s, o in z if s != 0 and a < -o / s < c})
            for u, v in zip([a, *cuts], [*cuts, c], strict=True):
                m = (u + v) / 2
                out.append((u, v, [(s, o) if s * m + o > 0 else (F(0), F(0)) for s, o in z]))
        pieces = out
    return sorted({p for a, c, _ in pieces for p in (a, c)})


def _exact_max_1d(Ws, bs, lo, hi) -> F:
    return max(_exact(Ws, bs, [t]) for t in _pieces_1d(Ws, bs, lo, hi))


def test_a_proof_model_runs_on_its_matrix_as_given():
    m = LPModel([1.0], A_ub=[[-1.0]], b_ub=[-1.0], integer=[1])
    m.set_exact_matrix()
    assert m.h.getOptionValue("presolve")[1] == "off"
    assert m.solve().objective == 1.0


def test_maximize_and_minimize_bound_the_exact_extremes_under_tiny_hidden_weights():
    """Before: "optimal", bound 2.4169295606 for a maximum of 2.4169306213 (and the lower
    bound above the minimum)."""
    net, box = Network(TINY_WS, TINY_BS), Box([TINY_BOX[0]], [TINY_BOX[1]])
    top = _exact_max_1d(TINY_WS, TINY_BS, *TINY_BOX)
    neg = [[[-w for w in row] for row in TINY_WS[-1]]]
    bottom = -_exact_max_1d(TINY_WS[:-1] + neg, TINY_BS[:-1] + [[-TINY_BS[-1][0]]], *TINY_BOX)
    hi, lo = maximize(net, box), minimize(net, box)
    assert F(hi.bound) >= top and F(hi.value) <= top
    assert F(lo.bound) <= bottom and F(lo.value) >= bottom


def test_is_positive_finds_the_positive_corner_under_tiny_hidden_weights():
    """Before: "nonpositive" for a network that is +4.2e-7 at a box corner."""
    shift = float(TINY_BS[-1][0] - 2.4169302)
    g = Network(TINY_WS, TINY_BS[:-1] + [[shift]])
    assert _exact(TINY_WS, TINY_BS[:-1] + [[shift]], [TINY_BOX[1]]) > 0
    r = is_positive(g, Box([TINY_BOX[0]], [TINY_BOX[1]]))
    assert r.positive and r.witness is not None
    assert _exact(TINY_WS, TINY_BS[:-1] + [[shift]], r.witness) > 0


def test_the_lipschitz_milp_bound_holds_the_steepest_piece():
    """Before: upper 35,864,119 under a difference quotient of 37,536,462."""
    Ws = [[[-17397547.206141733], [-1.2926933942945158], [2.7156107665534814], [-0.0009488489816890016]],
          [[0.5614622164439426, 0.31353906534630693, -2.006030809839579, 0.4191419510720301],
           [-1.6937494865403548, 1.2037578474286816, -2.471385814612879, 1.0770459978028268],
           [-0.0756151261298504, 0.5704196621184717, 1.4010112373404044, 0.9447618340137637],
           [-2.648833731455012, 1.578393757857472, 1.1702180795178365, -1.1812312791556852],
           [1.5913432990478293, -0.18035928803174037, -0.82588249534412, 0.6413577816852981]],
          [[0.4799037990676062, 1.551246047951541, -1.7602672893366236, -1.028208144753467, 1.0424471148359633]]]
    bs = [[-55522442.172082506, -0.027478008148896494, 1.5775290531333026, 1.7528252185348434],
          [-0.5190024076003811, -0.8358025299483831, -0.9873407020100348, 0.6474520528600876, 1.1889019242567505],
          [-0.7986773031563501]]
    lo, hi = -54.3668233807357, 212.32486203758808
    kinks = _pieces_1d(Ws, bs, lo, hi)
    steepest = max(abs(_exact(Ws, bs, [v]) - _exact(Ws, bs, [u])) / (v - u)
                   for u, v in zip(kinks[:-1], kinks[1:], strict=True) if v > u)
    r = lipschitz(Network(Ws, bs), Box([lo], [hi]), p=1, method="milp")
    assert F(r.upper) >= steepest and F(r.lower) <= steepest * (1 + F(1, 10**15))   # (lower: rounded)


@pytest.mark.parametrize("seed", range(40))
def test_maximize_bounds_the_exact_maximum_of_random_networks_with_tiny_hidden_weights(seed):
    rng = np.random.default_rng(1000 + seed)
    widths = [1, *rng.integers(2, 6, size=rng.integers(2, 4)).tolist(), 1]
    Ws = [rng.normal(size=(b, a)) for a, b in zip(widths[:-1], widths[1:], strict=True)]
    bs = [rng.normal(size=b) for b in widths[1:]]
    k = int(rng.integers(1, len(Ws)))
    Ws[k] = Ws[k] * 10.0 ** rng.uniform(-12, -8, size=Ws[k].shape)
    lo, hi = sorted(rng.uniform(-1000, 1000, size=2).tolist())
    Wl, bl = [W.tolist() for W in Ws], [b.tolist() for b in bs]
    r = maximize(Network(Ws, bs), Box([lo], [hi]))
    top = _exact_max_1d(Wl, bl, lo, hi)
    assert F(r.bound) >= top >= F(r.value) - F(1e-12) * (1 + abs(top))


# a 2-5-5-1 network whose first-layer biases (~3e6) cancel W1 x on a thin parallelogram
# near (-2.66e6, 2.66e6), 11 long and 2e-4 wide, its rows in mixed units
FAR_WS = [[[-1.963201984152405, -0.7258241474119691], [0.9246979628419809, 0.01206307677054339],
           [-0.8987843131414323, 0.0017158196287621545], [-0.22913906964580683, -0.6914833818392832],
           [-0.8983255225212363, 0.3188134133235143]],
          [[-0.46434084122989827, -2.602194425305681, -0.06787006683220201, -0.526450885429898, -0.5322508238946104],
           [0.04047407365758628, -0.635466255982801, 0.10800749524923908, 0.4923890360942478, -0.8531981147691938],
           [-0.4289711613801883, 0.33152890753442626, 0.4503694224352687, 0.03556249383244519, 0.06671101504084542],
           [-0.041720550404969574, -1.1499955727697546, 0.25468595389679655, 0.4216030952660314, -0.00024097401653514112],
           [0.23450982890744848, 0.3605998606813951, 1.493245728553612, -1.1371954393169004, 0.48140133023151577]],
          [[-0.43211881702957183, 2.0114497201870467, 0.3761258312714292, -0.4320945878138326, 0.8972463191795961]]]
FAR_BS = [[-3290698.2427368667, 2427071.891676251, -2394799.2457352146, 1229562.8589791814, -3236871.0301533877],
          [0.14917051894024527, -0.20090598952075028, -1.321289146691855, 0.02691962956966096, -0.29931508092753367],
          [-1.8929684572677339]]
FAR_A = [[-3.1428994404166984e-07, -5.383804436034226e-08], [-1.1436205515502587, -0.18778297364131413],
         [5.20070907259798e-05, 8.908843921479125e-06], [20.393428696504653, 3.348609535025006]]
FAR_B = [0.6926486061770258, 2541964.5411749324, -114.61591981250953, -45329171.94351285]
FAR_X = [-2659416.1259757783, 2659444.495599406]   # satisfies every row exactly


def test_maximize_over_a_far_thin_polytope_bounds_an_exactly_feasible_point():
    """Before: "optimal", bound 11.986, under f(FAR_X) = 12.592 (polytopes were never
    moved to the origin)."""
    P = Polytope(FAR_A, FAR_B)
    assert P.contains_exactly(FAR_X)
    fx = _exact(FAR_WS, FAR_BS, FAR_X)
    r = maximize(Network(FAR_WS, FAR_BS), P)
    assert F(r.bound) >= fx
    assert P.contains_exactly(r.x)   # the point found, moved back, is in the polytope
    assert abs(F(r.value) - _exact(FAR_WS, FAR_BS, r.x)) <= F(1e-9) * (1 + abs(fx))


def test_is_positive_over_a_far_thin_polytope_finds_the_positive_point():
    """Before: "nonpositive" for a network that is +0.392 at FAR_X."""
    bs = FAR_BS[:-1] + [[float(FAR_BS[-1][0] - 12.2)]]
    assert _exact(FAR_WS, bs, FAR_X) > 0
    r = is_positive(Network(FAR_WS, bs), Polytope(FAR_A, FAR_B))
    assert r.positive and r.witness is not None and _exact(FAR_WS, bs, r.witness) > 0


def test_lipschitz_auto_goes_on_when_the_enumeration_refuses_a_thin_polytope():
    """Before: DomainError "region enumeration needs a full-dimensional domain" for a
    polytope whose Chebyshev radius is 2.9e-6."""
    P = Polytope(FAR_A, FAR_B)
    net = Network(FAR_WS, FAR_BS)
    r = lipschitz(net, P, p=float("inf"))
    # a difference quotient between two exactly feasible points bounds it from below
    c, _ = P.chebyshev_center()
    y = P.pulled_inside(np.asarray(FAR_X) + 0.5 * (c - np.asarray(FAR_X)))
    assert P.contains_exactly(y)
    q = abs(_exact(FAR_WS, FAR_BS, y) - _exact(FAR_WS, FAR_BS, FAR_X)) / max(
        abs(F(a) - F(b)) for a, b in zip(y, FAR_X, strict=True))
    assert r.upper >= r.lower and F(r.upper) >= q


def test_the_moved_polytope_solves_no_bounding_box_of_its_own(monkeypatch):
    """The moved copy is cut by the moved box, which stands as its enclosing box: its 2 d
    bounding-box LPs (10 s at 100 inputs, outside any limit) are not solved again."""
    calls = []
    real = Polytope._solve_bounding_box

    def counted(self, deadline=None):
        calls.append(self.n_constraints)
        return real(self, deadline)

    monkeypatch.setattr(Polytope, "_solve_bounding_box", counted)
    P = Polytope(FAR_A, FAR_B)
    r = maximize(Network(FAR_WS, FAR_BS), P, time_limit=30)
    assert F(r.bound) >= _exact(FAR_WS, FAR_BS, FAR_X)
    assert calls == [P.n_constraints]        # the original's, once
    calls.clear()
    bs = FAR_BS[:-1] + [[float(FAR_BS[-1][0] - 12.2)]]
    assert is_positive(Network(FAR_WS, bs), Polytope(FAR_A, FAR_B)).positive
    assert calls == [P.n_constraints]


def test_a_point_just_outside_a_thin_far_slab_is_pulled_in_across_it_not_along_it():
    """Towards the Chebyshev centre, 1 % of the way was 5 units along a slab 2e-4 wide
    near 2.7e6 (and is_positive said "unknown" where the maximum was positive)."""
    n = np.array([20.393428696504653, 3.348609535025006])
    P = Polytope(np.vstack([n, -n, [1.0, 1.0], [-1.0, -1.0]]),
                 [n @ FAR_X + 1e-4, -(n @ FAR_X) + 1e-4, sum(FAR_X) + 5.0, -sum(FAR_X) + 5.0])
    x = np.asarray(FAR_X) + 1.1e-4 / (n @ n) * n       # just beyond the upper face
    assert not P.contains_exactly(x)
    y = P.pulled_inside(x)
    assert P.contains_exactly(y) and np.abs(y - x).max() < 1e-5


def test_bounds_of_a_polytope_do_not_depend_on_an_earlier_time_limit():
    """A timed call that ran out keeps a looser box on the polytope; bounds computed
    later still use its bounding box (aud_sess18b: relu(x0) bounded by 1, not 0)."""
    import time

    from relulab.bounds import interval_bounds, symbolic_bounds

    net = Network([[[1.0, 0.0]], [[1.0]]], [[0.0], [0.0]])   # relu(x0)

    def make():
        return Polytope([[1, 0], [-1, 0], [0, 1], [0, -1], [1, 1]], [1, 1, 1, 1, -1])   # x0 + x1 <= -1

    P = make()
    P.enclosing_box(time.perf_counter() - 1.0)   # what a spent time limit leaves
    for bound in (interval_bounds, symbolic_bounds):
        assert bound(net, P).out_hi[0] == bound(net, make()).out_hi[0] == 0.0
