"""Exact minimal-norm univariate networks: interpolation, brute force over kink grids,
trained wide networks, the optimal set, and the published characterisations."""

from __future__ import annotations

import numpy as np
import pytest

from relulab import Network
from relulab.errors import RelulabError
from relulab.train import (
    function_cost,
    in_optimal_set,
    kinks_of,
    minnorm_classifier,
    minnorm_interpolant,
    minnorm_on_grid,
    parameter_cost,
)

CONFIGS = [(b, s) for b in ("free", "penalized") for s in (False, True)]


def _data(seed: int, n: int = 6):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.choice(np.arange(-10, 11), size=n, replace=False)) / 5.0
    y = rng.normal(size=n)
    return x, y


@pytest.mark.parametrize("bias,skip", CONFIGS)
def test_interpolant_interpolates_and_is_certified(bias, skip):
    for seed in range(3):
        x, y = _data(seed)
        r = minnorm_interpolant(x, y, bias=bias, skip=skip, describe=False)
        vals = r.network(x[:, None])[:, 0]
        assert np.max(np.abs(vals - y)) < 1e-9
        assert r.lower_bound <= r.cost + 1e-12
        assert r.gap <= 1e-6 * r.cost
        # the reported cost is the representation cost of the function returned, and the
        # balanced network attains it with its own parameters
        assert function_cost(r.network, bias, skip) == pytest.approx(r.cost, rel=1e-9)
        assert parameter_cost(r.network, bias) == pytest.approx(r.cost, rel=1e-9)


@pytest.mark.parametrize("bias,skip", CONFIGS)
def test_equals_brute_force_over_kink_grid(bias, skip):
    x = np.array([-1.0, -0.4, 0.2, 0.6, 1.4])
    y = np.array([0.3, -0.5, 0.8, 0.1, -0.2])
    r = minnorm_interpolant(x, y, bias=bias, skip=skip, describe=False)
    grid = np.round(np.arange(-3.0, 3.0 + 1e-9, 0.005), 6)  # contains the data points
    v, gnet = minnorm_on_grid(x, y, grid, bias=bias, skip=skip)
    assert r.cost <= v + 1e-9  # the grid is a restriction
    if bias == "free":
        # kinks at the data points suffice: the grid optimum is the exact optimum
        assert v == pytest.approx(r.cost, rel=1e-9, abs=1e-9)
    else:
        assert v <= r.cost * (1 + 1e-4)
    # the closed form / LP for the representation cost agrees with the grid LP's value
    assert function_cost(gnet, bias, skip) == pytest.approx(v, rel=1e-7)


def test_penalized_single_kink_scan_three_points():
    # three points, skip: an optimum has one kink; scan every kink position on a fine grid
    # (closed form: solve for d, c, s) and compare with the column-generation optimum
    x = np.array([0.5, 1.0, 2.5])
    y = np.array([0.0, 1.0, -0.5])
    r = minnorm_interpolant(x, y, bias="penalized", skip=True)
    best = np.inf
    for t in np.linspace(x[0], x[-1], 20001)[1:-1]:
        A = np.column_stack([np.ones(3), x, np.maximum(x - t, 0.0)])
        d, c, s = np.linalg.solve(A, y)
        best = min(best, abs(s) * np.sqrt(1 + t * t))
    assert r.cost <= best + 1e-9
    assert best <= r.cost * (1 + 1e-6)
    assert r.kinks.size == 1


def test_cost_no_larger_than_trained_wide_networks():
    torch = pytest.importorskip("torch")
    x = np.array([-1.0, -0.5, 0.0, 0.4, 1.0])
    y = np.array([0.5, -0.3, 0.4, 0.9, -0.2])
    for bias in ("free", "penalized"):
        for seed in range(2):
            torch.manual_seed(seed)
            net = torch.nn.Sequential(torch.nn.Linear(1, 64), torch.nn.ReLU(),
                                      torch.nn.Linear(64, 1)).double()
            xt = torch.tensor(x[:, None])
            yt = torch.tensor(y[:, None])
            opt = torch.optim.Adam(net.parameters(), lr=1e-2)
            lam = 1e-4
            for _ in range(1000):
                opt.zero_grad()
                pen = net[0].weight.pow(2).sum() + net[2].weight.pow(2).sum()
                if bias == "penalized":
                    pen = pen + net[0].bias.pow(2).sum()
                loss = ((net(xt) - yt) ** 2).sum() + lam * 0.5 * pen
                loss.backward()
                opt.step()
            trained = Network([net[0].weight.detach().numpy(), net[2].weight.detach().numpy()],
                              [net[0].bias.detach().numpy(), net[2].bias.detach().numpy()])
            yhat = trained(x[:, None])[:, 0]
            # the exact optimum through the trained network's own values is no larger than
            # the trained function's cost, itself no larger than its parameter penalty
            r = minnorm_interpolant(x, yhat, bias=bias, describe=False)
            fc = function_cost(trained, bias, skip=False)
            assert r.cost <= fc * (1 + 1e-9) + 1e-9
            assert fc <= parameter_cost(trained, bias) * (1 + 1e-9) + 1e-9
            assert np.max(np.abs(yhat - y)) < 0.1  # training did fit the data


def test_penalized_two_formulations_same_function():
    rng = np.random.default_rng(3)
    x = np.array([-1.0, -0.3, 0.2, 0.7, 1.2, 1.5])
    for task in ("regression", "classification"):
        y = rng.normal(size=x.size) if task == "regression" else np.array([1, 1, -1, -1, 1, 1])
        fn = minnorm_interpolant if task == "regression" else minnorm_classifier
        for skip in (False, True):
            r = fn(x, y, bias="penalized", skip=skip)
            grid = np.linspace(-3, 3, 6001)
            v, gnet = minnorm_on_grid(x, y, grid, bias="penalized", skip=skip, task=task)
            assert r.cost <= v + 1e-9 and v <= r.cost * (1 + 1e-4)
            xs = np.linspace(-2, 2.5, 901)[:, None]
            f1, f2 = r.network(xs)[:, 0], gnet(xs)[:, 0]
            assert np.max(np.abs(f1 - f2)) <= 2e-2 * max(1.0, np.max(np.abs(f1)))


def test_penalized_classifier_one_kink_per_intermediate_segment():
    rng = np.random.default_rng(7)
    for trial in range(6):
        n = 10
        x = np.sort(rng.choice(np.arange(40), size=n, replace=False)) / 10.0
        labels = rng.choice([-1, 1], size=n)
        labels[0], labels[-1] = 1, -1  # at least one switch
        r = minnorm_classifier(x, labels, bias="penalized", skip=bool(trial % 2))
        assert np.min(labels * r.network(x[:, None])[:, 0]) >= 1 - 1e-7
        # segments of equal labels between two switches
        sw = np.nonzero(labels[1:] != labels[:-1])[0]
        for a, b in zip(sw[:-1], sw[1:], strict=True):
            lo, hi = x[a + 1], x[b]  # the same-label run x[a+1..b] (closed)
            inside = (r.kinks >= lo - 1e-9) & (r.kinks <= hi + 1e-9)
            assert inside.sum() == 1, (trial, lo, hi, r.kinks)
        # and no other kinks: none in the switch gaps, the first or the last run
        assert r.kinks.size == len(sw) - 1


def test_free_classifier_hugs_every_label_switch():
    rng = np.random.default_rng(11)
    for _trial in range(4):
        n = 8
        x = np.sort(rng.choice(np.arange(30), size=n, replace=False)) / 10.0
        labels = rng.choice([-1, 1], size=n)
        labels[0], labels[-1] = -1, 1
        r = minnorm_classifier(x, labels, bias="free", skip=True)
        rng_vals = r.optimal_set.value_ranges
        for j in np.nonzero(labels[1:] != labels[:-1])[0]:
            # every optimal function takes exactly the values +-1 at both ends of a switch
            for i in (j, j + 1):
                assert rng_vals[i, 0] == pytest.approx(labels[i], abs=1e-7)
                assert rng_vals[i, 1] == pytest.approx(labels[i], abs=1e-7)
            # and no optimal function has a kink strictly inside the switch gap
            gap = [z for z in r.optimal_set.zones if z.lo == x[j] and z.hi == x[j + 1]][0]
            assert not gap.convex and not gap.concave


def test_optimal_set_membership_free_biases():
    # convex data: slopes 0, 1, 2; with a skip any interpolant with a monotone derivative
    # (kinks only convex, only at x = 1, 2 or inside (1, 2)) is optimal, cost 2
    x = np.array([0.0, 1.0, 2.0, 3.0])
    y = np.array([0.0, 0.0, 1.0, 3.0])
    r = minnorm_interpolant(x, y, bias="free", skip=True)
    assert r.cost == pytest.approx(2.0)
    zones = {(z.lo, z.hi): z for z in r.optimal_set.zones}
    assert zones[(1.0, 2.0)].convex and not zones[(1.0, 2.0)].concave
    assert not zones[(0.0, 1.0)].convex and not zones[(2.0, 3.0)].convex
    assert not zones[(-np.inf, 0.0)].convex and not zones[(3.0, np.inf)].concave

    def net_from(kinks, jumps, c, d):
        kinks, jumps = np.asarray(kinks, float), np.asarray(jumps, float)
        return Network([np.ones((len(kinks), 1)), jumps[None, :]], [-kinks, np.array([d])],
                       (np.array([[c]]), np.zeros(1)))

    alt = net_from([1.0, 1.5, 2.0], [0.5, 1.0, 0.5], 0.0, 0.0)
    assert np.allclose(alt(x[:, None])[:, 0], y)
    assert in_optimal_set(alt, r)
    # a wiggle inside (0, 1) keeps interpolation but costs more
    wig = net_from([0.25, 0.5, 0.75, 1.0, 2.0], [1.0, -2.0, 1.0, 1.0, 1.0], 0.0, 0.0)
    assert np.allclose(wig(x[:, None])[:, 0], y)
    assert not in_optimal_set(wig, r)
    assert in_optimal_set(r.network, r)


def test_free_no_skip_cost_formula_and_kinks():
    # |x| has TV(f') = 2 and f'(-inf) + f'(inf) = 0; x itself has TV 0 and |L + R| = 2
    absx = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    ident = Network([[[1.0], [-1.0]], [[1.0, -1.0]]], [[0.0, 0.0], [0.0]])
    assert function_cost(absx, "free", skip=False) == pytest.approx(2.0)
    assert function_cost(ident, "free", skip=False) == pytest.approx(2.0)
    assert function_cost(ident, "free", skip=True) == pytest.approx(0.0)
    t, s, L, R = kinks_of(ident)
    assert t.size == 0 and L == 1.0 and R == 1.0
    # penalised: a pair of units at 0 is the cheapest line
    assert function_cost(ident, "penalized", skip=False) == pytest.approx(2.0)


def test_bad_input():
    with pytest.raises(RelulabError):
        minnorm_interpolant([0, 0], [1, 2])
    with pytest.raises(RelulabError):
        minnorm_classifier([0, 1], [2, 3])
    with pytest.raises(RelulabError):
        minnorm_interpolant([0, 1], [1, 2], bias="sometimes")


def test_wide_arrays_are_refused_not_flattened():
    # a (2, 2) x used to be read as four scalar points: a different problem, silently
    with pytest.raises(RelulabError, match=r"univariate.*\(2, 2\)"):
        minnorm_interpolant([[0, 1], [1, 2]], [[0, 1], [1, 0]])
    with pytest.raises(RelulabError, match="univariate"):
        minnorm_interpolant([0.0, 1.0, 2.0], [[0.0, 1.0, 0.0]])   # y as a (1, 3) row
    with pytest.raises(RelulabError, match="univariate"):
        minnorm_classifier(np.zeros((3, 2)), [1, -1, 1])
    with pytest.raises(RelulabError, match="univariate"):
        minnorm_on_grid(np.zeros((2, 1, 1)), [0.0, 1.0], [0.0, 1.0])
    # a single column is the same data as a flat array
    x, y = _data(3)
    flat = minnorm_interpolant(x, y, describe=False)
    col = minnorm_interpolant(x[:, None], y[:, None], describe=False)
    assert col.cost == pytest.approx(flat.cost, rel=1e-12)


@pytest.mark.parametrize("bias", ["free", "penalized"])
@pytest.mark.parametrize("skip", [False, True])
def test_costs_follow_the_data_units(bias, skip):
    # The cost is homogeneous in y (scale every output weight) and, with free biases,
    # scales as 1/s when x is stretched by s (slopes shrink by s).  Absolute floors in
    # the gap tests, the merge and the kink reader broke both: y of 1e-15 gave an
    # "optimal" cost 0.6% off, x 1e15 apart a constant network of cost 0, x 1e-10 apart
    # "the constraints cannot be met".
    from relulab.tolerance import GAP_TOL

    rng = np.random.default_rng(3)
    x = np.sort(rng.normal(size=8))
    y = rng.normal(size=8)
    base = minnorm_interpolant(x, y, bias=bias, skip=skip, describe=False)
    assert base.status == "optimal"
    for sx in ((1e-10, 1.0, 1e12) if bias == "free" else (1.0,)):
        for sy in (1e-15, 1.0, 1e15):
            r = minnorm_interpolant(x * sx, y * sy, bias=bias, skip=skip, describe=False)
            expect = base.cost * sy / (sx if bias == "free" else 1.0)
            assert r.cost == pytest.approx(expect, rel=1e-7), (sx, sy)
            assert r.status == "optimal" and r.gap <= GAP_TOL * r.cost
            fit = r.network((x * sx)[:, None])[:, 0]
            assert np.max(np.abs(fit - y * sy)) <= 1e-9 * sy
    if bias == "free" and not skip:
        # by hand: 1 - 1e-15 |x - 1e15| meets the data with one kink (jump -2e-15, end
        # slopes +-1e-15 summing to 0): cost max(2e-15, 0).  (This test once expected the
        # 3e-15 of kinks at 1e15 and 2e15, which the solver returned "stalled" at this scale.)
        r = minnorm_interpolant([0.0, 1e15, 2e15], [0.0, 1.0, 0.0], bias=bias)
        assert r.status == "optimal"
        assert r.cost == pytest.approx(2e-15, rel=1e-9) and r.kinks.tolist() == [1e15]


def test_optimal_means_the_certified_gap_is_closed():
    from relulab.tolerance import GAP_TOL

    rng = np.random.default_rng(7)
    for _ in range(15):
        n = int(rng.integers(3, 15))
        x = np.sort(rng.normal(size=n)) * 10 ** rng.uniform(-3, 3)
        y = rng.normal(size=n) * 10 ** rng.uniform(-3, 3)
        for skip in (False, True):
            r = minnorm_interpolant(x, y, bias="penalized", skip=skip, describe=False)
            if r.status == "optimal":
                assert (r.cost - r.lower_bound) <= GAP_TOL * r.cost
            else:
                assert r.partial


def test_every_lp_gets_the_time_left(monkeypatch):
    # the limit was checked only between column-generation rounds: one LP of 8 s ran
    # past a 1 s limit; now each LP is handed what is left (and none starts after it)
    from conftest import record_kwarg

    import relulab.train.minnorm as mn

    seen = record_kwarg(monkeypatch, mn, "_kink_lp", "time_limit")
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(-5, 5, 60))
    y = np.sin(3 * x)
    r = minnorm_interpolant(x, y, bias="penalized", time_limit=30.0)
    # a function giving the seconds left, asked once the LP is built
    seen = [v() if callable(v) else v for v in seen]
    assert seen and all(v is not None and 0 < v <= 30.0 for v in seen)
    assert r.status == "optimal"
    with pytest.raises(RelulabError, match="time limit .* ran out in the first LP"):
        minnorm_interpolant(np.sort(rng.uniform(-5, 5, 1500)), rng.normal(size=1500), bias="penalized",
                            time_limit=1e-3)


def test_extreme_data_get_a_true_error_not_infeasible():
    # x = +-1e308 leaked overflow warnings and said "the regression constraints cannot be
    # met" (two distinct points always can); x 1e-200 apart said "LP ended with status error"
    import warnings

    from relulab.train.minnorm import MinNormError

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning may leak
        with pytest.raises(MinNormError, match="x reaches 1e\\+308"):
            minnorm_interpolant([1e308, -1e308], [1.0, 0.0])
    with pytest.raises(MinNormError) as e:
        minnorm_interpolant([0.0, 1e-200], [1.0, 0.0], bias="penalized")
    assert "cannot be met" not in str(e.value) and "can always be met" in str(e.value)
    # free biases: solved scaled to a unit spread, the cost of [0, 1] times 1e200
    r = minnorm_interpolant([0.0, 1e-200], [1.0, 0.0])
    assert r.status == "optimal"
    assert r.cost == pytest.approx(1e200 * minnorm_interpolant([0.0, 1.0], [1.0, 0.0]).cost, rel=1e-12)
    r = minnorm_interpolant([0.0, 1.0], [1.0, 0.0])  # ordinary data still fit
    assert r.network([[0.0], [1.0]]).ravel().tolist() == pytest.approx([1.0, 0.0])


def test_penalised_fit_of_huge_x_says_what_failed():
    # x up to 3e20 (below the 1e150 limit) ended in "representation-cost LP ended with
    # status error", naming neither cause nor fix
    from relulab.train.minnorm import MinNormError

    try:
        r = minnorm_interpolant([0.0, 1e20, 2e20, 3e20], [0.0, 1.0, 0.0, 1.0], bias="penalized")
    except MinNormError as e:
        assert "numerical failure" in str(e) and "rescale x" in str(e)
    else:  # solved after all: then its certificate must hold up
        assert r.status in ("optimal", "stalled", "time_limit") and r.lower_bound <= r.cost


@pytest.mark.parametrize("probe", ["_describe_free", "_uniqueness"])
def test_probe_loops_stop_at_the_time_limit(monkeypatch, probe):
    # the description and uniqueness probes (2 LPs per data point and zone) went on after
    # the deadline, each LP handed the 0.1 s floor: fit-minnorm --time-limit 1 on 400
    # points ran for minutes.  Here the clock runs out as the probe starts.
    import relulab.train.minnorm as mn

    class Clock(mn.Deadline):
        out = False

        def expired(self):
            return Clock.out or super().expired()

    calls = {"lp": 0}
    real_lp, real_probe = mn._kink_lp, getattr(mn, probe)

    def counting_lp(*a, **k):
        calls["lp"] += 1
        return real_lp(*a, **k)

    def expiring_probe(*a, **k):
        Clock.out = True
        calls["lp"] = 0
        return real_probe(*a, **k)

    monkeypatch.setattr(mn, "Deadline", Clock)
    monkeypatch.setattr(mn, "_kink_lp", counting_lp)
    monkeypatch.setattr(mn, probe, expiring_probe)
    x = np.linspace(-1, 1, 12) if probe == "_describe_free" else np.array([-1.0, 0.0, 1.0, 2.0])
    r = minnorm_interpolant(x, np.abs(x) if probe == "_uniqueness" else np.sin(3 * x), time_limit=100.0)
    assert calls["lp"] <= 1          # at most the probe's base LP, none per point
    assert r.unique is None and (r.optimal_set is None) == (probe == "_describe_free")


def test_each_lp_gets_the_time_left_after_it_is_built(monkeypatch):
    # the LP's limit was read before the (dense, seconds-long) build, so the build's time
    # came on top of --time-limit
    import time

    import relulab.train.minnorm as mn
    from relulab.lp import LPModel

    real_features, limits = mn._features, []

    def slow_features(*a):
        time.sleep(0.3)
        return real_features(*a)

    real_set = LPModel.set_time_limit

    def recording_set(self, seconds):
        limits.append(seconds)
        return real_set(self, seconds)

    monkeypatch.setattr(mn, "_features", slow_features)
    monkeypatch.setattr(LPModel, "set_time_limit", recording_set)
    x = np.linspace(-1, 1, 8)
    minnorm_interpolant(x, np.abs(x), time_limit=50.0, describe=False)
    assert limits and limits[0] <= 50.0 - 0.3     # the first build's 0.3 s already spent
