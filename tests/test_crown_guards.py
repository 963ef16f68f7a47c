"""Structured bounds stay true at extreme magnitudes, warm starts stay on their own
boxes, and the structured verifier picks a method it can run."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")

from relulab.crown import BoundGraph, bound  # noqa: E402
from relulab.crown.propagate import BoundError  # noqa: E402
from relulab.domain import Box  # noqa: E402
from relulab.spec import OutputConstraint, Property, Specification  # noqa: E402
from relulab.verify import verify  # noqa: E402
from relulab.verify.verifier import CounterexampleCheck, _structured_check  # noqa: E402


@pytest.mark.parametrize("act", [torch.nn.Hardtanh(-0.5, 0.7), torch.nn.ReLU6()])
@pytest.mark.parametrize("scale", [1.0, 1e8, 1e16])
def test_a_clip_after_huge_pre_activations_is_computed_and_bounded_truly(act, scale) -> None:
    # the clip was rewritten lo + relu(x - lo) - relu(x - hi): at x = 1e16 the two terms
    # cancelled, and forward and all bounds gave 0 where torch gives 0.7 ("complete")
    m = torch.nn.Sequential(torch.nn.Linear(2, 3), act, torch.nn.Linear(3, 2), torch.nn.ReLU(),
                            torch.nn.Linear(2, 1)).double()
    torch.manual_seed(0)
    with torch.no_grad():
        m[0].weight.mul_(scale)
    bg = BoundGraph.from_torch(m, (2,))
    X = np.array([[1.0, 0.5], [-1.0, 0.25], [0.3, -0.7], [0.0, 0.0]])
    want = m(torch.tensor(X)).detach().numpy()
    assert np.allclose(bg.forward(X), want, rtol=1e-12, atol=1e-12)
    for method in ("ibp", "crown", "alpha"):
        g = bound(bg, X, X, method=method)   # each point as a flat box
        assert np.all(g.lower <= want + 1e-9) and np.all(g.upper >= want - 1e-9), method


def test_auto_verifies_a_structured_model_too_large_to_lower_with_few_inputs() -> None:
    # 8 inputs and 2,400 ReLUs: "auto" chose input splitting, which needs the dense
    # network, and raised instead of answering
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(1, 300, 1), torch.nn.ReLU(), torch.nn.Flatten(),
                            torch.nn.Linear(2400, 2)).double()
    bg = BoundGraph.from_torch(m, (1, 2, 4))
    box = Box(-0.1 * np.ones(8), 0.1 * np.ones(8))
    hi = float(bound(bg, box.lo[None], box.hi[None]).upper[0, 0])
    unsafe = Specification(box, [OutputConstraint(np.array([[-1.0, 0.0]]), np.array([-(abs(hi) + 1.0)]))])
    r = verify(bg, Property([unsafe]), timeout=30)
    assert r.status == "holds" and r.method == "relu-split"


def test_a_warm_start_is_refused_outside_its_own_box_and_kept_inside() -> None:
    from relulab import Network

    bg = BoundGraph.from_network(Network([[[-1.0]], [[1.0]]], [[0.0], [0.0]]))   # relu(-x)
    parent = bound(bg, [[0.5]], [[1.0]])
    with pytest.raises(BoundError, match="warm: a box is not inside"):
        bound(bg, [[-1.0]], [[1.0]], warm=parent.warm)   # gave [0, 0] "complete"; f(-1) = 1
    child = bound(bg, [[0.6]], [[0.9]], warm=parent.warm)
    assert child.lower[0, 0] <= 0.0 <= child.upper[0, 0]
    p32 = bound(bg, [[0.1]], [[0.3]], dtype="float32")   # 0.1 and 0.3 round in float32
    assert bound(bg, [[0.1]], [[0.3]], dtype="float32", warm=p32.warm).status == "complete"


@pytest.mark.parametrize(("kwargs", "msg"), [
    ({"device": "tpu"}, "device: 'tpu'"),
    ({"warm": {}}, "warm: expected a WarmStart"),
    ({"deadline": "soon"}, "deadline: expected"),
    ({"stop_at": [float("nan")]}, "stop_at: contains NaN"),
])
def test_bad_bound_arguments_are_one_error_naming_them(kwargs, msg) -> None:
    from relulab import Network

    bg = BoundGraph.from_network(Network([[[1.0]], [[1.0]]], [[0.0], [0.0]]))
    with pytest.raises(BoundError, match=msg):
        bound(bg, [[0.0]], [[1.0]], method="alpha", **kwargs)


class _HugeInside:
    """A structured model whose output 0.5 was computed through values of 1e16."""

    def forward(self, X):
        return np.full((len(X), 1), 0.5)

    def largest_value(self, X):
        return 1e16


def test_a_structured_counterexample_within_the_rounding_of_its_largest_values_is_refused() -> None:
    box = Box([0.0], [1.0])
    term = [(box, np.array([[1.0]]), np.array([0.6]))]      # unsafe: y <= 0.6
    check = _structured_check(_HugeInside(), np.array([0.5]), term)
    assert isinstance(check, CounterexampleCheck) and not check.ok and check.reason.startswith("numerical")

    class Small(_HugeInside):
        def largest_value(self, X):
            return 3.0

    assert _structured_check(Small(), np.array([0.5]), term).ok


@pytest.mark.parametrize(("lo", "hi"), [(0.1, 0.7), (1e-8, 1e8), (-2.0, 3.0)])
def test_the_clip_rewrite_is_exact_at_and_below_its_lower_end(lo, hi) -> None:
    # hi - relu(hi - lo - relu(x - lo)) gave 0.09999999999999998 for clip(x, 0.1, 0.7) at
    # x <= 0.1, and 1.49e-8 for clip(x, 1e-8, 1e8)
    m = torch.nn.Sequential(torch.nn.Linear(1, 1), torch.nn.Hardtanh(lo, hi)).double()
    with torch.no_grad():
        m[0].weight.fill_(1.0)
        m[0].bias.fill_(0.0)
    bg = BoundGraph.from_torch(m, (1,))
    X = np.array([[lo], [lo - 1.0], [-5.0], [hi], [hi + 1.0], [(lo + hi) / 2]])
    got, want = bg.forward(X).ravel(), np.clip(X, lo, hi).ravel()
    assert got[:3].tolist() == want[:3].tolist()   # exact at and below lo
    assert np.allclose(got[3:], want[3:], rtol=1e-15, atol=0)   # elsewhere: to rounding


def test_graph_dtype_values_and_shapes_are_one_clear_error():
    from relulab import Network
    from relulab.crown import BoundGraph, GraphError

    torch = pytest.importorskip("torch")
    bg = BoundGraph.from_network(Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]]))
    for call in (lambda: bg.forward([[1.0]], dtype="float16"), lambda: bg.converted("int8"),
                 lambda: bg.largest_value([[float("nan")]]),
                 lambda: BoundGraph.from_torch(torch.nn.Linear(2, 1), None),
                 lambda: BoundGraph.from_torch(torch.nn.Linear(2, 1), "2")):
        with pytest.raises(GraphError):
            call()


def test_a_float32_box_is_rounded_outward():
    """The box's ends in float32 enclose the float64 box (to nearest, a lower end could
    round up: the bounds were for a smaller box)."""
    from relulab import Network
    from relulab.crown import BoundGraph, bound

    bg = BoundGraph.from_network(Network([[[1.0]]], [[0.0]]))    # the identity
    a, b = np.float32(0.1), np.float32(0.3)
    ua, ub = float(np.nextafter(a, np.float32(1)) - a), float(np.nextafter(b, np.float32(1)) - b)
    lo, hi = np.array([[float(a) + 0.75 * ua]]), np.array([[float(b) + 0.25 * ub]])  # nearest: inward
    g = bound(bg, lo, hi, method="crown", upper=True, dtype="float32")
    assert g.lower[0, 0] <= lo[0, 0] and g.upper[0, 0] >= hi[0, 0]


def test_a_bound_asked_after_its_deadline_gives_the_interval_bound_at_once():
    import time

    from relulab import Network

    rng = np.random.default_rng(0)
    net = Network([rng.normal(size=(50, 4)), rng.normal(size=(50, 50)), rng.normal(size=(1, 50))],
                  [np.zeros(50), np.zeros(50), np.zeros(1)])
    bg = BoundGraph.from_network(net)
    lo, hi = -np.ones((1, 4)), np.ones((1, 4))
    late = bound(bg, lo, hi, method="crown", deadline=time.monotonic() - 1.0)
    ibp = bound(bg, lo, hi, method="ibp")
    assert late.status == "partial" and "interval bounds for the output" in late.reason
    assert late.lower[0, 0] == ibp.lower[0, 0]
    X = rng.uniform(-1, 1, (20_000, 4))
    assert net(X).min() >= late.lower[0, 0]


def test_beta_terms_rounding_keeps_a_split_bound_below_the_exact_minimum() -> None:
    """y = 0 relu(z) + c with z = 2^42 x0 + 2^-11 x1 + b on a thin box where the split
    z >= 0 is not empty (checked in rationals): y is the constant c there.  beta's terms
    (about 1e12) round by about 1e-4, and keeping the best of 20 steps picked the rounding
    that went up: a lower bound 2.7e-4 above c (aud_ver7)."""
    from fractions import Fraction

    from relulab import Network

    K, x0, c, b = 4398046511104.0, 1.7963242702872941, -1.6161467460375154, -7900317689748.473
    lo = np.array([[x0 - 2.0 ** -20, 1.0]])
    hi = np.array([[x0, 1.0 + 2.0 ** -20]])
    net = Network([[[K, 2.0 ** -11]], [[0.0]]], [[b], [c]])
    assert Fraction(K) * Fraction(hi[0, 0]) + Fraction(2.0 ** -11) * Fraction(hi[0, 1]) + Fraction(b) >= 0
    splits = {"relu0": np.array([[1]], dtype=np.int8)}
    for iters in (0, 5, 20, 50):
        gb = bound(BoundGraph.from_network(net), lo, hi, method="alpha", iters=iters, splits=splits)
        assert not gb.infeasible[0]
        assert gb.lower[0, 0] <= c <= gb.upper[0, 0], (iters, gb.lower[0, 0] - c, gb.upper[0, 0] - c)


def test_a_warm_start_serves_a_run_of_another_dtype_on_its_own_box() -> None:
    """A float64 parent handed to a float32 run on the same box was refused (the parent's
    box rounded to nearest against the child's rounded outward); the caller's box is now
    compared with the parent's in float64, and a box an ulp outside is still refused."""
    from relulab import Network

    net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
    bg = BoundGraph.from_network(net)
    lo, hi = np.array([[0.1]]), np.array([[0.7]])
    for parent_dt, child_dt in (("float64", "float32"), ("float32", "float64"), ("float64", "float64")):
        parent = bound(bg, lo, hi, method="alpha", iters=3, dtype=parent_dt)
        child = bound(bg, lo, hi, method="alpha", iters=3, warm=parent.warm, dtype=child_dt)
        assert child.lower[0, 0] <= 0.1 and child.upper[0, 0] >= 0.7
    parent = bound(bg, lo, hi, method="alpha", iters=3)
    with pytest.raises(BoundError, match="not inside the box"):
        bound(bg, np.nextafter(lo, -1.0), hi, method="alpha", iters=3, warm=parent.warm)


def test_an_exact_weight_rounding_below_the_normal_range_is_refused() -> None:
    # aud_crown5 (considered): 2^-1072 / 3 rounds to the subnormal 2^-1074; behind 2^1000
    # and 2^74 the graph's IBP bound 1.0 excluded the exact f(1) = 4/3 ("complete")
    from fractions import Fraction as F

    from relulab import Network
    from relulab.crown.builder import GraphError

    net = Network([[[F(1, 3 * 2**1072)]], [[F(2**1000)]], [[F(2**74)]]], [[F(0)], [F(0)], [F(0)]])
    assert net([[F(1)]])[0, 0] == F(4, 3)  # the exact value the bound must hold
    with pytest.raises(GraphError, match=r"weight of layer 1 at \(1, 1\).*normal range"):
        BoundGraph.from_network(net)
    # a normal exact network still gets a graph whose bounds hold its exact values
    ok = Network([[[F(1, 3)], [F(-2, 7)]], [[F(1), F(5, 3)]]], [[F(1, 5), F(1, 9)], [F(0)]])
    gb = bound(BoundGraph.from_network(ok), [[-1.0]], [[1.0]], method="crown")
    for x in (F(-1), F(-1, 3), F(0), F(1, 2), F(1)):
        y = ok([[x]])[0, 0]
        assert gb.lower[0, 0] <= y <= gb.upper[0, 0]


def test_an_exact_subnormal_weight_that_float64_holds_is_kept() -> None:
    # aud_sess13 #1: 2^-1073 is a float64 number: the exact network and its copy agree
    from fractions import Fraction as F

    from relulab import Network

    net = Network([[[F(1)]], [[F(2) ** -1073]]], [[F(0)], [F(0)]])
    bg = BoundGraph.from_network(net)
    gb = bound(bg, [[0.0]], [[1.0]], method="ibp")
    assert gb.lower[0, 0] <= 0.0 and gb.upper[0, 0] >= 2.0**-1073
