"""relulab.explain: why and why_not against half-spaces, brute force over the enumerated
regions (per-region LP / QP solved by scipy and cvxpy, not relulab), sampling inside
every rule, and the bad-input errors."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from relulab import Box, Network, regions
from relulab.explain import ExplainError, decision_at, why, why_not
from relulab.explain.decision import as_decision, margins


def _net(seed: int, d: int = 2, h: int = 6, m: int = 3) -> Network:
    rng = np.random.default_rng(seed)
    return Network([rng.normal(size=(h, d)), rng.normal(size=(h, h)) / np.sqrt(h),
                    rng.normal(size=(m, h))],
                   [rng.normal(size=h) * 0.3, rng.normal(size=h) * 0.3, rng.normal(size=m) * 0.1])


def _sample_in(A, b, box: Box, n: int, rng) -> np.ndarray:
    """n uniform points of box ∩ {A x <= b} by rejection (the rules here are not tiny)."""
    out, got = [], 0
    for _ in range(200):
        X = box.sample(4 * n, rng)
        X = X[np.all(X @ A.T <= b, axis=1)] if A.shape[0] else X
        out.append(X)
        got += len(X)
        if got >= n:
            break
    return np.concatenate(out)[:n]


def _violations(net, dec, X) -> int:
    """Points whose outputs break the decision by more than a rounding tie."""
    Y = net(X)
    return int(np.sum(dec.margin(Y) > 1e-9 * (1 + np.abs(Y).max())))


# ------------------------------------------------------------------ one neuron
W1 = np.array([[1.5, -2.0]])
B1 = np.array([0.3])


@pytest.mark.parametrize("hidden", [False, True])
def test_one_neuron_rule_is_its_halfspace_and_l2_cf_the_projection(hidden):
    # f = w.x + b (no hidden layer), or relu(w.x + b) - 0.25 (one hidden neuron):
    # the decision set {f >= 0} is the half-space w.x + b >= t in both
    t = 0.25 if hidden else 0.0
    net = (Network([W1, [[1.0]]], [B1, [-t]]) if hidden else Network([W1], [B1]))
    box = Box([-2, -2], [2, 2])
    w, b = W1[0], B1[0]
    x = np.array([1.0, -0.5])            # w.x + b = 2.8 > t: positive
    r = why(net, x, box)
    assert r.decision == "positive"
    A, c = r.region_rule.A, r.region_rule.b
    assert A.shape[0] == 1
    n = -w / np.linalg.norm(w)
    np.testing.assert_allclose(A[0], n, atol=1e-12)
    np.testing.assert_allclose(c[0], (b - t) / np.linalg.norm(w), atol=1e-12)
    assert r.region_rule.certified
    # the l2 counterfactual of a negative point is its orthogonal projection on the plane
    x2 = np.array([-1.0, 0.5])           # w.x + b = -2.2
    cf = why_not(net, x2, "positive", box, norm="l2")
    proj = x2 - (w @ x2 + b - t) / (w @ w) * w
    assert cf.status == "optimal"
    np.testing.assert_allclose(cf.counterfactual, proj, atol=1e-7)
    assert cf.distance == pytest.approx(abs(w @ x2 + b - t) / np.linalg.norm(w), abs=1e-7)
    assert net(cf.counterfactual[None])[0, 0] >= 0


# ------------------------------------------------------------------ why
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_why_rules_hold_on_samples_and_are_minimal(seed):
    net = _net(seed)
    box = Box([-1, -1], [1, 1])
    rng = np.random.default_rng(seed + 10)
    x = box.sample(1, rng)[0]
    r = why(net, x, box)
    dec = decision_at(net, x)
    assert r.decision == dec.label
    for rule in (r.region_rule, r.rule):
        assert rule.certified
        assert rule.contains(x)
        X = _sample_in(rule.A, rule.b, box, 100_000, rng)
        assert len(X) == 100_000
        assert _violations(net, dec, X) == 0
    # the interval rule is axis-aligned and minimal: each bound has a witness that
    # satisfies every other bound and gets another decision
    assert r.rule.axis_aligned and r.rule.minimal
    for i, wpt in enumerate(r.rule.witnesses):
        others = np.delete(np.arange(r.rule.n_constraints), i)
        assert np.all(r.rule.A[others] @ wpt <= r.rule.b[others] + 1e-9)
        assert r.rule.A[i] @ wpt > r.rule.b[i]
        assert not dec.holds(net(wpt[None]))[0]
        assert box.contains(wpt)


def test_why_rule_text_uses_feature_names():
    net = Network([[[1.0, 0.0]]], [[-0.5]])     # f = speed - 0.5
    r = why(net, [0.8, 0.0], Box([0, 0], [1, 1]), features=["speed", "gap"])
    assert r.rule.text() == "speed >= 0.5 -> positive"
    assert "`speed`" in r.rule.markdown()


def test_why_says_how_it_ended():
    # no time limit: every step of a one-neuron explanation ends, and says so in its JSON;
    # the radius of f = speed - 0.5 at speed = 0.8 is the distance 0.3 to the boundary
    net = Network([[[1.0, 0.0]]], [[-0.5]])
    r = why(net, [0.8, 0.0], Box([0, 0], [1, 1]))
    assert r.status == "complete" and r.to_dict()["status"] == "complete"
    assert r.info["stopped"] is None and abs(r.radius - 0.3) < 1e-6


# ------------------------------------------------------------------ why_not: brute force
def _brute_force(net, x, dec, box, norm, mutable=None):
    """min over the enumerated regions of the distance from x to region ∩ target
    (l1 / linf: scipy linprog; l2: cvxpy), with the target margin why_not uses."""
    import cvxpy as cp

    mg = margins(net(x[None])[0])[0]
    rs = regions.enumerate(net, box)
    d = len(x)
    fixed = np.zeros(d, bool) if mutable is None else ~np.isin(np.arange(d), mutable)
    best = np.inf
    for R in rs:
        C, c = R.affine
        A = np.vstack([R.A, dec.C @ C])
        b = np.concatenate([R.b, dec.d - mg - dec.C @ c])
        if norm == "l2":
            z = cp.Variable(d)
            cons = [A @ z <= b] + [z[i] == x[i] for i in np.flatnonzero(fixed)]
            p = cp.Problem(cp.Minimize(cp.sum_squares(z - x)), cons)
            p.solve(solver=cp.CLARABEL)
            if p.status == "optimal":
                best = min(best, float(np.sqrt(max(p.value, 0.0))))
            continue
        k = d if norm == "l1" else 1
        tcols = np.eye(d) if norm == "l1" else np.ones((d, 1))
        M = np.vstack([np.hstack([A, np.zeros((A.shape[0], k))]),
                       np.hstack([np.eye(d), -tcols]), np.hstack([-np.eye(d), -tcols])])
        rhs = np.concatenate([b, x, -x])
        bounds = [(x[i], x[i]) if fixed[i] else (None, None) for i in range(d)] + [(0, None)] * k
        res = linprog(np.concatenate([np.zeros(d), np.ones(k)]), A_ub=M, b_ub=rhs, bounds=bounds,
                      method="highs")
        if res.status == 0:
            best = min(best, float(res.fun))
    return best


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("norm", ["l1", "l2", "linf"])
def test_why_not_distance_equals_brute_force(seed, norm):
    net = _net(seed, h=5)
    box = Box([-1, -1], [1, 1])
    x = box.sample(1, np.random.default_rng(seed))[0]
    cur = int(np.argmax(net(x[None])[0]))
    for target in [k for k in range(3) if k != cur]:
        r = why_not(net, x, target, box, norm=norm)
        bf = _brute_force(net, x, as_decision(net, target), box, norm)
        if not np.isfinite(bf):
            assert r.status == "infeasible" and r.exists is False
            continue
        assert r.status == "optimal"
        assert r.distance == pytest.approx(bf, rel=1e-6, abs=1e-8)
        assert int(np.argmax(net(r.counterfactual[None])[0])) == target
        assert box.contains(r.counterfactual)


@pytest.mark.parametrize("norm", ["l1", "linf"])
def test_why_not_on_a_deep_net_past_the_tightening_threshold_equals_brute_force(norm, monkeypatch):
    # above TIGHTEN_ABOVE binaries on a net of two hidden layers the search imports the
    # verifier's LP tightening; the import named a module that does not export it
    # (ImportError on every realistic model); the threshold is lowered so a small net gets there
    from relulab.explain import _milpsearch

    monkeypatch.setattr(_milpsearch, "TIGHTEN_ABOVE", 2)
    net = _net(4, h=8)  # all three classes occur on the box
    box = Box([-1, -1], [1, 1])
    x = np.array([0.3, -0.2])
    cur = int(np.argmax(net(x[None])[0]))
    reached = 0
    for target in [k for k in range(3) if k != cur]:
        r = why_not(net, x, target, box, norm=norm)
        bf = _brute_force(net, x, as_decision(net, target), box, norm)
        if not np.isfinite(bf):
            assert r.status == "infeasible"
            continue
        reached += 1
        assert r.status == "optimal" and r.distance == pytest.approx(bf, rel=1e-6, abs=1e-8)
    assert reached


@pytest.mark.parametrize("norm", ["l1", "l2", "linf"])
def test_immutable_features_never_change(norm):
    net = _net(5, d=3, h=6)
    box = Box([-1, -1, -1], [1, 1, 1])
    rng = np.random.default_rng(1)
    for x in box.sample(3, rng):
        cur = int(np.argmax(net(x[None])[0]))
        target = (cur + 1) % 3
        r = why_not(net, x, target, box, norm=norm, mutable=["x0", 2],
                    bounds={"x2": (-0.5, None)})
        if r.exists:
            assert r.counterfactual[1] == x[1]
            assert r.counterfactual[2] >= -0.5 - 1e-12
            assert "x1" not in [c["feature"] for c in r.changed]
        # the search space is the box cut by x2 >= -0.5 (x itself may lie outside it)
        bf = _brute_force(net, x, as_decision(net, target), Box([-1, -1, -0.5], [1, 1, 1]), norm,
                          mutable=[0, 2])
        if r.exists:
            assert r.distance == pytest.approx(bf, rel=1e-6, abs=1e-8)
        else:
            assert r.status == "infeasible" and not np.isfinite(bf)


def test_infeasible_target_has_a_certificate():
    # f = x0 + x1 + 3 > 0 on the whole box: "negative" is unreachable
    net = Network([[[1.0, 1.0]], [[1.0]]], [[3.0], [0.0]])
    box = Box([-1, -1], [1, 1])
    for norm in ("l1", "l2", "linf"):
        r = why_not(net, [0.0, 0.0], "negative", box, norm=norm)
        assert r.status == "infeasible" and r.exists is False and r.counterfactual is None
        # the proven best margin of "f < 0" is -min f = -1 (min f = 1 at (-1, -1))
        assert r.certificate["max_target_margin_upper_bound"] == pytest.approx(-1.0, abs=1e-7)
        assert "no counterfactual" in r.text()
    # unreachable only because x1 is immutable: f = x0 + 2 x1 with x1 = 1 fixed
    net2 = Network([[[1.0, 2.0]]], [[0.0]])
    r = why_not(net2, [0.5, 1.0], "negative", box, norm="l1", mutable=["x0"])
    assert r.status == "infeasible"
    assert r.certificate["max_target_margin_upper_bound"] == pytest.approx(-1.0, abs=1e-7)


def test_counterfactual_path_counts_regions():
    net = _net(3)
    box = Box([-1, -1], [1, 1])
    x = np.array([0.3, -0.2])
    cur = int(np.argmax(net(x[None])[0]))
    r = why_not(net, x, (cur + 1) % 3, box, norm="linf")
    if r.exists:
        seg = regions.along_segment(net, x, r.counterfactual)
        assert r.path["regions"] == seg.n_pieces >= 1
        d = r.to_dict()
        assert d["status"] == r.status and len(d["counterfactual"]) == 2


# ------------------------------------------------------------------ bad input
def test_bad_input_errors():
    net = _net(0)
    box = Box([-1, -1], [1, 1])
    x = np.array([0.1, 0.2])
    cur = int(np.argmax(net(x[None])[0]))
    with pytest.raises(ExplainError, match="outside the domain"):
        why(net, [3.0, 0.0], box)
    with pytest.raises(ExplainError, match="outside the domain"):
        why_not(net, [3.0, 0.0], 0, box)
    with pytest.raises(ExplainError, match="already the decision"):
        why_not(net, x, cur, box)
    with pytest.raises(ExplainError, match="unknown feature name 'speed'"):
        why_not(net, x, (cur + 1) % 3, box, mutable=["speed"])
    with pytest.raises(ExplainError, match="unknown feature name"):
        why_not(net, x, (cur + 1) % 3, box, bounds={"nope": (0, 1)})
    with pytest.raises(ExplainError, match="NaN"):
        why(net, [np.nan, 0.0], box)
    with pytest.raises(ExplainError, match="unknown norm"):
        why_not(net, x, (cur + 1) % 3, box, norm="l3")
    with pytest.raises(ExplainError, match="out of range"):
        why_not(net, x, 7, box)
    with pytest.raises(ExplainError, match="3 names given"):
        why(net, x, box, features=["a", "b", "c"])


# ------------------------------------------------------------------ honest partial answers
# relu(x0 + x1 - 1) - relu(x0 - x1): f(1, 0.9) = 0.8, far from the boundary
_TL_NET = Network([[[1.0, 1.0], [1.0, -1.0]], [[1.0, -1.0]]], [[-1.0, 0.0], [0.0]])


def test_why_stopped_by_time_limit_claims_no_boundary(monkeypatch):
    # a time limit too short for the radius search proves no box: the answer must say
    # so, not that x lies on the decision boundary (the search is stood in for: its
    # MILP fallback now uses what the limit leaves, and 0.1 s is enough on this net)
    import importlib

    W = importlib.import_module("relulab.explain.why")
    monkeypatch.setattr(W, "_cube_radius", lambda *a, **k: (0.0, "the radius search ended at the time limit"))
    r = why(_TL_NET, [1.0, 0.9], Box([0, 0], [1, 1]), time_limit=0.1)
    assert r.rule is None and r.status == "partial"
    assert "time limit" in r.info["stopped"]
    text = r.text()
    assert "lies on the decision boundary" not in text
    assert "no certified rule" in text and "time limit" in text
    info = r.to_dict()["info"]
    assert "no certified rule" in info["no_rule"] and "time limit" in info["no_rule"]
    # without the stand-in (and its time limit) the same point has a certified rule
    monkeypatch.undo()
    full = why(_TL_NET, [1.0, 0.9], Box([0, 0], [1, 1]))
    assert full.rule is not None and full.rule.certified and full.info["no_rule"] is None


def test_why_boundary_claim_only_when_proven():
    # f = 100 x0 at x0 = 0: inputs breaking "positive" lie 1e-10 away, so the completed
    # radius search proves that no box around x keeps the decision
    net = Network([[[100.0, 0.0], [-100.0, 0.0]], [[1.0, -1.0]]], [[0.0, 0.0], [0.0]])
    r = why(net, [0.0, 0.3], Box([-1, -1], [1, 1]))
    assert r.rule is None and r.status == "complete"
    assert "lies on the decision boundary" in r.text()


@pytest.mark.parametrize("bad", [-1, 0, float("nan"), "soon"])
def test_why_rejects_bad_time_limit(bad):
    with pytest.raises(ExplainError, match="time_limit must be"):
        why(_TL_NET, [1.0, 0.9], Box([0, 0], [1, 1]), time_limit=bad)
    with pytest.raises(ExplainError, match="time_limit must be"):
        why_not(_TL_NET, [1.0, 0.9], "negative", Box([0, 0], [1, 1]), time_limit=bad)


def test_why_checks_class_names():
    net = _net(0)
    box = Box([-1, -1], [1, 1])
    x = [0.1, 0.2]
    with pytest.raises(ExplainError, match="2 names given; the network has 3 outputs"):
        why(net, x, box, class_names=["a", "b"])
    with pytest.raises(ExplainError, match="4 names given; the network has 3 outputs"):
        why(net, x, box, class_names=["a", "b", "c", "d"])
    with pytest.raises(ExplainError, match="appears twice"):
        why(net, x, box, class_names=["a", "b", "a"])
    with pytest.raises(ExplainError, match="class_names"):
        why(Network([[[1.0, 0.0]]], [[0.0]]), x, box, class_names=["no", "yes"])
    r = why(net, x, box, class_names=["a", "b", "c"])
    assert r.decision == ["a", "b", "c"][int(np.argmax(net(np.array([x]))[0]))]


def test_why_not_bounds_excluding_an_immutable_value_are_an_error():
    # x0 is immutable at 0, and its bounds (0.5, 1) exclude 0: the question is wrong
    net = Network([[[1.0, 1.0]]], [[-1.0]])
    with pytest.raises(ExplainError, match="bounds of 'x0'.*exclude its value 0.*immutable"):
        why_not(net, [0.0, 0.0], "positive", Box([-2, -2], [2, 2]), mutable=["x1"],
                bounds={"x0": (0.5, 1.0)})
    # bounds that keep the immutable value are fine
    r = why_not(net, [0.0, 0.0], "positive", Box([-2, -2], [2, 2]), mutable=["x1"],
                bounds={"x0": (-0.5, 1.0)})
    assert r.status == "optimal" and r.distance == pytest.approx(1.0, abs=1e-6)


# 1 input, 5 neurons: the last ball MILP has every binary fixed and HiGHS ends it with a
# "solve error" at the 1e-9 tolerances (the ball is empty by about that much)
_ERR_NET = Network([np.array([[0.759], [0.138], [0.269], [0.873], [0.45]]),
                    np.array([[1.269, 0.901, -0.534, -0.511, 0.175]])],
                   [np.array([0.763, -0.58, 0.45, 0.046, 0.651]), np.array([-0.238])])


def test_why_not_survives_a_solver_error_without_time_limit():
    r = why_not(_ERR_NET, [-0.564], "negative", Box([-1], [1]), norm="l1")
    assert r.status == "optimal"
    # f is piecewise linear in 1-D: the nearest x with f(x) < 0, by its breakpoints
    xs = np.linspace(-1, 1, 200_001)
    f = _ERR_NET(xs[:, None])[:, 0]
    assert r.distance == pytest.approx(np.min(np.abs(xs[f < 0] + 0.564)), abs=2e-5)
    assert _ERR_NET(r.counterfactual[None])[0, 0] < 0


def test_why_not_reports_a_persistent_solver_error_honestly(monkeypatch):
    # every ball MILP fails: no time limit was given, so "feasible" must say why
    from relulab.explain import _milp
    from relulab.lp import LPResult

    monkeypatch.setattr(_milp.ExplainMILP, "solve", lambda self, c, **kw: LPResult("error"))
    net = Network([[[1.0, 1.0], [1.0, -1.0]], [[1.0, 1.0]]], [[-1.0, 0.0], [-0.5]])
    dom = Box([-2, -2], [2, 2]).to_polytope()      # a Polytope: the ball MILP decides
    r = why_not(net, [0.0, 0.0], "positive", dom, norm="l1")
    assert r.status in ("feasible", "unknown") and r.status != "optimal"
    assert r.certificate["reason"].startswith("numerical: solver error")
    assert "not proven: solver error" in r.text() or "numerical: solver error" in r.text()
    assert r.info["balls"][-1]["status"] == "error"


def test_why_time_limit_bounds_the_whole_explanation(monkeypatch):
    """Each MILP gets what the earlier ones left (each side push once got the whole
    limit): with a clock that advances 0.1 s per MILP and a 0.25 s limit, the pushes get
    less and less time and stop once it is spent."""
    import importlib
    import types

    limits = importlib.import_module("relulab.limits")   # Deadline's clock
    W = importlib.import_module("relulab.explain.why")
    now = [0.0]
    monkeypatch.setattr(limits, "time", types.SimpleNamespace(perf_counter=lambda: now[0]))
    given = []
    real = W._violation_opt

    def timed(*a):
        given.append(a[-1])
        now[0] += 0.1
        return real(*a[:-1], None)

    monkeypatch.setattr(W, "_violation_opt", timed)
    monkeypatch.setattr(W, "_cube_radius", lambda *a: (0.05, None))   # a proven cube, at once
    monkeypatch.setattr(W, "certify", lambda *a: (False, None))
    monkeypatch.setattr(W, "_witness", lambda *a: None)
    monkeypatch.setattr(W, "_region_rule", lambda *a: (None, (), np.zeros(2, bool), None))
    r = why(_TL_NET, [0.5, 0.6], Box([0, 0], [1, 1]), time_limit=0.25)
    assert given and all(t is not None and t <= 0.25 for t in given)
    assert all(b < a for a, b in zip(given, given[1:], strict=False))     # what is left shrinks
    assert len(given) < 4                                                 # 4 sides; time ran out
    assert "time limit" in (r.info["stopped"] or "")


def test_l2_why_not_survives_a_stalled_projection_and_agrees_with_l1_linf():
    # f(x) = |x| - 0.5 - relu(2x - 1): the region x >= 0.5 meets the target only up to the
    # margin; clarabel stalled there (MaxIterations) and why_not raised RuntimeError
    net = Network([np.array([[1.0], [-1.0], [2.0]]), np.array([[1.0, 1.0, -1.0]])],
                  [np.array([0.0, 0.0, -1.0]), np.array([-0.5])])
    box = Box([-1.0], [1.0])
    rs = {n: why_not(net, [0.1], "positive", box, norm=n) for n in ("l1", "linf", "l2")}
    # f >= 0 ("positive") holds on x <= -0.5 and at the single point x = 0.5 (f = 0 there):
    # the nearest counterfactual is 0.5, at distance 0.4 (it was 0.6 while every target
    # row, also non-strict ones, had to hold with a margin)
    assert rs["l1"].status == rs["linf"].status == "optimal"
    assert rs["l1"].distance == pytest.approx(0.4, rel=1e-9) == rs["linf"].distance
    assert net(rs["l1"].counterfactual[None])[0, 0] >= 0
    # l2: its QP's point at the single tie point does not pass the forward pass: a
    # counterfactual at 0.6 and no optimum claimed below it
    assert rs["l2"].status in ("optimal", "feasible")
    if rs["l2"].status == "feasible":
        assert rs["l2"].lower_bound <= 0.4 + 1e-7 and rs["l2"].distance == pytest.approx(0.6, rel=1e-6)
    else:
        assert rs["l2"].distance == pytest.approx(0.4, rel=1e-6)


def test_l2_why_not_claims_no_optimum_when_a_projection_fails(monkeypatch):
    # a QP that fails on a non-empty set leaves its region open: feasible/unknown, not optimal
    from relulab.explain import _l2search
    from relulab.explain._qp import ProjectionFailed, project

    calls = {"n": 0}

    def flaky(A, b, lo, hi, x0):
        calls["n"] += 1
        if calls["n"] > 2:  # the search space and the first region succeed
            raise ProjectionFailed("stalled")
        return project(A, b, lo, hi, x0)

    monkeypatch.setattr(_l2search, "project", flaky)
    net = _net(4, h=6)
    box = Box([-1, -1], [1, 1])
    x = np.array([0.3, -0.2])
    cur = int(np.argmax(net(x[None])[0]))
    r = why_not(net, x, (cur + 1) % 3, box, norm="l2")
    assert r.status in ("feasible", "unknown")
    assert r.certificate["reason"].startswith("numerical: a projection QP failed")
    assert "numerical: a projection QP failed" in r.text() or "not proven: a projection QP failed" in r.text()


def test_why_not_argument_errors_name_the_argument():
    # a string bound raised numpy's "could not convert"; max_regions "a" a raw TypeError,
    # and 0 / -1 answered "no counterfactual found in time" with no time limit set
    net = Network([[[1.0, 0.0], [-1.0, 0.0]], [[1.0, -1.0]]], [[0.0, 0.0], [0.0]])
    box = Box([-1, -1], [1, 1])
    with pytest.raises(ExplainError, match="bounds of 'x0': lo and hi must be numbers"):
        why_not(net, [0.5, 0.0], "negative", box, bounds={"x0": ("a", 0)})
    for bad in ("a", 0, -1, 2.5):
        with pytest.raises(ExplainError, match="max_regions must be a positive integer"):
            why_not(net, [0.5, 0.0], "negative", box, norm="l2", max_regions=bad)
    r = why_not(net, [0.5, 0.0], "negative", box, norm="l2", max_regions=50)
    assert r.exists and net(np.array([r.counterfactual]))[0, 0] < 0


def test_why_not_does_not_call_a_target_below_the_margin_unreachable():
    # f = relu(x0) - 5e-10 is negative on the half box x0 < 0, by less than the 2e-9
    # margin the search requires: l1 and linf said "no counterfactual exists"
    net = Network([[[1.0, 0.0]], [[1.0]]], [[0.0], [-5e-10]])
    box = Box([-1, -1], [1, 1])
    assert net(np.array([[-0.5, 0.0]]))[0, 0] < 0        # the independent fact
    for norm in ("l1", "linf", "l2"):
        r = why_not(net, [1.0, 0.0], "negative", box, norm=norm)
        assert r.status != "infeasible" and r.exists is not False, (norm, r.status)
        if r.exists:
            assert net(np.array([r.counterfactual]))[0, 0] < 0
