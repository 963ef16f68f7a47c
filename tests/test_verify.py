"""MILP optimisation, output ranges and the complete verifier on small random networks,
checked against sampling and against exhaustive search over activation patterns."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from conftest import random_network

from relulab import Network
from relulab.domain import Box, DomainError, Polytope
from relulab.errors import FormatError, RelulabError
from relulab.lp import solve
from relulab.spec import OutputConstraint, Property, SpecError, Specification
from relulab.tolerance import FEAS_TOL
from relulab.verify import maximize, minimize, output_range, verify
from relulab.verify.milp import symbolic_pre, tighten_bounds


def _random_cases(n, seed, max_layers=3, width=10):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        d = int(rng.integers(2, 6))
        L = int(rng.integers(1, max_layers + 1))
        m = int(rng.integers(1, 3))
        net = random_network(rng, [d] + [width] * L + [m], skip=(i % 4 == 3), scale=1.5)
        lo = rng.uniform(-1.0, 0.0, size=d)
        B = Box(lo, lo + rng.uniform(0.5, 2.0, size=d))
        c = rng.normal(size=m)
        out.append((net, B, c))
    return out


def _pattern_regions(net: Network):
    """Yield (pattern, list of (a, b) rows a x <= b defining the region, (A, c) affine map)."""
    widths = net.widths
    for bits in itertools.product([False, True], repeat=sum(widths)):
        pats, pos = [], 0
        for w in widths:
            pats.append(np.array(bits[pos:pos + w]))
            pos += w
        rows_A, rows_b = [], []
        A = net.weights[0]
        c = net.biases[0]
        for k, p in enumerate(pats):
            # active: z >= 0  ->  -A x <= c ;  inactive: z <= 0  ->  A x <= -c
            s = np.where(p, -1.0, 1.0)
            rows_A.append(s[:, None] * A)
            rows_b.append(-s * c)
            A = np.where(p[:, None], A, 0.0)
            c = np.where(p, c, 0.0)
            A = net.weights[k + 1] @ A
            c = net.weights[k + 1] @ c + net.biases[k + 1]
        if net.skip is not None:
            A = A + net.skip[0]
            c = c + net.skip[1]
        yield np.vstack(rows_A), np.concatenate(rows_b), A, c


def _exhaustive_max(net: Network, B: Box, cvec: np.ndarray) -> float:
    """Max of c . f over the box: one LP per activation pattern (the pattern's region)."""
    best = -np.inf
    for RA, Rb, A, c in _pattern_regions(net):
        obj = cvec @ A
        r = solve(-obj, A_ub=RA, b_ub=Rb, lb=B.lo, ub=B.hi)
        if r.status == "optimal":
            best = max(best, -r.objective + cvec @ c)
    return best


@pytest.mark.parametrize("case", range(12))
def test_milp_max_dominates_samples_and_is_attained(case):
    net, B, c = _random_cases(12, 100)[case]
    r = maximize(net, B, c)
    assert r.status == "optimal"
    X = B.sample(10_000, np.random.default_rng(case))
    vals = net(X) @ c
    assert r.value >= vals.max() - 1e-9
    assert B.contains(r.x)
    assert abs(float(net(r.x) @ c) - r.value) <= 1e-12 * (1 + abs(r.value))
    assert r.upper_bound >= r.value - 1e-9
    assert abs(r.upper_bound - r.value) <= 1e-6 * (1 + abs(r.value))
    assert r.lp_value >= r.value - 1e-7
    assert r.gap >= 0
    assert r.n_binaries <= net.n_neurons
    d = r.to_dict()
    assert d["status"] == "optimal" and len(d["x"]) == net.input_dim


@pytest.mark.parametrize("case", range(8))
def test_milp_max_equals_exhaustive_pattern_search(case):
    rng = np.random.default_rng(200 + case)
    d = int(rng.integers(2, 4))
    arch = [d, 4, 3, 1] if case % 2 else [d, 6, 1]
    net = random_network(rng, arch, skip=(case % 3 == 0), scale=1.5)
    B = Box(-np.ones(d), np.ones(d) * rng.uniform(0.5, 1.5))
    c = np.ones(1)
    exact = _exhaustive_max(net, B, c)
    r = maximize(net, B)
    assert abs(r.value - exact) <= 1e-7 * (1 + abs(exact))
    rmin = minimize(net, B)
    exact_min = -_exhaustive_max(net, B, -c)
    assert abs(rmin.value - exact_min) <= 1e-7 * (1 + abs(exact_min))
    assert rmin.lower_bound <= rmin.value + 1e-9
    assert rmin.sense == "min" and rmin.upper_bound == rmin.value


def test_minimize_mirrors_maximize_and_output_range():
    net, B, c = _random_cases(1, 7, max_layers=2)[0]
    m = net.output_dim
    rng_ = output_range(net, B)
    assert rng_.status == "optimal"
    Y = net(B.sample(10_000, np.random.default_rng(0)))
    assert np.all(Y >= rng_.lo - 1e-9) and np.all(Y <= rng_.hi + 1e-9)
    for i in range(m):
        e = np.zeros(m)
        e[i] = 1
        assert abs(minimize(net, B, e).value + maximize(net, B, -e).value) <= 1e-7
        np.testing.assert_allclose(net(rng_.argmax[i])[i], rng_.hi[i], atol=1e-12)
        np.testing.assert_allclose(net(rng_.argmin[i])[i], rng_.lo[i], atol=1e-12)


def test_polytope_domain_and_exact_network():
    rng = np.random.default_rng(3)
    net = random_network(rng, [2, 10, 10, 1], scale=1.5)
    P = Polytope([[1, 1], [-1, 0], [0, -1], [1, -2]], [1, 0.5, 0.5, 0.8])
    r = maximize(net, P)
    assert P.contains(r.x)
    assert r.value >= net(P.sample(10_000, rng)).max() - 1e-9
    r2 = maximize(net.exact(), P)
    assert abs(r2.value - r.value) <= 1e-7


def test_tighten_bounds_sound_and_not_looser():
    rng = np.random.default_rng(4)
    net = random_network(rng, [3, 10, 10, 10, 1], scale=1.5)
    B = Box(-np.ones(3), np.ones(3))
    from relulab.bounds import float_layers

    Ws, bs, _ = float_layers(net)
    pre0 = symbolic_pre(Ws, bs, B)
    pre = tighten_bounds(net, B, pre0)
    Z = net.preactivations(B.sample(10_000, rng))
    for k in range(3):
        assert np.all(pre[k][0] >= pre0[k][0] - 1e-12) and np.all(pre[k][1] <= pre0[k][1] + 1e-12)
        assert np.all(Z[k] >= pre[k][0] - 1e-9) and np.all(Z[k] <= pre[k][1] + 1e-9)
    r1, r2 = maximize(net, B), maximize(net, B, tighten=True)
    assert abs(r1.value - r2.value) <= 1e-7
    assert r2.n_binaries <= r1.n_binaries


def test_maximize_errors():
    net = random_network(np.random.default_rng(0), [2, 4, 2])
    with pytest.raises(RelulabError, match="objective vector"):
        maximize(net, Box([0, 0], [1, 1]))
    with pytest.raises(RelulabError, match="3 entries"):
        maximize(net, Box([0, 0], [1, 1]), [1, 2, 3])
    with pytest.raises(DomainError):
        maximize(net, Box([0, 0, 0], [1, 1, 1]), [1, 0])


# ------------------------------------------------------------------------- verifier
def _spec_le(B, thr, c):
    """Unsafe: c . y >= thr, written as -c . y <= -thr."""
    return Specification(B, [OutputConstraint(-np.atleast_2d(c), np.array([-thr]))])


@pytest.mark.parametrize("case", range(10))
def test_verify_agrees_with_milp(case):
    net, B, c = _random_cases(10, 300 + case)[0]
    r = maximize(net, B, c)
    scale = 1 + abs(r.value)
    holds = verify(net, _spec_le(B, r.value + 1e-3 * scale, c), timeout=30)
    assert holds.status == "holds"
    viol = verify(net, _spec_le(B, r.value - 1e-3 * scale, c), timeout=30)
    assert viol.status == "violated"
    x = viol.counterexample
    assert B.contains(x) and float(net(x) @ c) >= r.value - 1e-3 * scale - FEAS_TOL


def _conjunction_feasible(net, B, C, d):
    """Exhaustive: is some x in B with C f(x) <= d?  Returns (feasible, slack) where
    slack is the largest t with C f(x) + t <= d attainable (LP per pattern)."""
    best = -np.inf
    for RA, Rb, A, c in _pattern_regions(net):
        # maximise t subject to region, C (A x + c) + t <= d
        n = net.input_dim
        Aub = np.vstack([np.hstack([RA, np.zeros((len(RA), 1))]),
                         np.hstack([C @ A, np.ones((len(C), 1))])])
        bub = np.concatenate([Rb, d - C @ c])
        obj = np.zeros(n + 1)
        obj[-1] = -1
        r = solve(obj, A_ub=Aub, b_ub=bub, lb=[*B.lo, -100], ub=[*B.hi, 100])
        if r.status == "optimal":
            best = max(best, -r.objective)
    return best >= 0, best


@pytest.mark.parametrize("case", range(10))
def test_verify_conjunctions_against_exhaustive_search(case):
    rng = np.random.default_rng(500 + case)
    net = random_network(rng, [2, 5, 4, 3], skip=(case % 2 == 1), scale=1.5)
    B = Box([-1, -1], [1, 1])
    # "output 0 is the largest" as in ACAS property 2 (plus an offset to vary it)
    C = np.array([[-1.0, 1.0, 0.0], [-1.0, 0.0, 1.0]])
    d = np.array([rng.uniform(-0.5, 0.5), rng.uniform(-0.5, 0.5)])
    feasible, slack = _conjunction_feasible(net, B, C, d)
    if abs(slack) < 1e-6:
        pytest.skip("too close to call")
    r = verify(net, Specification(B, [OutputConstraint(C, d)]), timeout=30)
    assert r.status == ("violated" if feasible else "holds")
    if feasible:
        assert B.contains(r.counterexample)
        assert np.all(C @ net(r.counterexample) <= d + FEAS_TOL)


def test_verify_disjunction_and_cases():
    rng = np.random.default_rng(9)
    net = random_network(rng, [2, 8, 8, 1], scale=1.5)
    B1, B2 = Box([-1, -1], [0, 0]), Box([0, 0], [1, 1])
    hi1, hi2 = maximize(net, B1).value, maximize(net, B2).value
    lo1 = minimize(net, B1).value
    safe1 = [OutputConstraint(np.array([[-1.0]]), np.array([-(hi1 + 0.01)])),
             OutputConstraint(np.array([[1.0]]), np.array([lo1 - 0.01]))]
    assert verify(net, Specification(B1, safe1)).status == "holds"
    prop = Property([Specification(B1, safe1), _spec_le(B2, hi2 - 0.01, np.ones(1))])
    r = verify(net, prop)
    assert r.status == "violated" and B2.contains(r.counterexample)
    assert verify(net, Property([Specification(B1, safe1), _spec_le(B2, hi2 + 0.01, np.ones(1))])).status == "holds"


def test_verify_exact_network_and_timeout():
    rng = np.random.default_rng(10)
    net = random_network(rng, [3, 10, 10, 1], scale=1.5)
    B = Box(-np.ones(3), np.ones(3))
    r = maximize(net, B)
    v = verify(net.exact(), _spec_le(B, r.value - 1e-3, np.ones(1)))
    assert v.status == "violated"
    assert float(net.exact()(v.counterexample)[0]) >= r.value - 1e-3 - FEAS_TOL
    # a property exactly at the maximum cannot be proven: never "holds" wrongly
    w = verify(net, _spec_le(B, r.value + 1e-13, np.ones(1)), timeout=1.0, attack_time=0.0)
    assert w.status in ("unknown", "violated")
    assert w.to_dict()["status"] == w.status


def test_verify_bad_specs():
    net = random_network(np.random.default_rng(0), [2, 4, 2])
    B = Box([0, 0], [1, 1])
    with pytest.raises(SpecError, match="3 outputs"):
        verify(net, Specification(B, [OutputConstraint(np.ones((1, 3)), np.zeros(1))]))
    with pytest.raises(SpecError, match="3 coordinates"):
        verify(net, Specification(Box([0, 0, 0], [1, 1, 1]), [OutputConstraint(np.ones((1, 2)), np.zeros(1))]))
    with pytest.raises(DomainError, match="empty box"):
        Box([0, 1], [1, 0])
    from relulab.io.vnnlib import parse_vnnlib

    head = "(declare-const X_0 Real)(declare-const X_1 Real)(declare-const Y_0 Real)(declare-const Y_1 Real)"
    with pytest.raises(RelulabError):  # empty input box
        parse_vnnlib(head + "(assert (>= X_0 1))(assert (<= X_0 0))(assert (<= 0 X_1 1))(assert (>= Y_0 0))")
    with pytest.raises(FormatError):  # unsupported construct
        parse_vnnlib(head + "(assert (<= 0 X_0 1))(assert (<= 0 X_1 1))(assert (>= (exp Y_0) 0))")
    p = parse_vnnlib(head.replace("(declare-const Y_1 Real)", "(declare-const Y_1 Real)(declare-const Y_2 Real)")
                     + "(assert (<= 0 X_0 1))(assert (<= 0 X_1 1))(assert (>= Y_2 0))")
    with pytest.raises(SpecError):
        verify(net, p)


# ------------------------------------------------------------------------------ CLI
def _tiny_files(tmp_path):
    from relulab.io import save_model
    from relulab.io.vnnlib import format_vnnlib

    rng = np.random.default_rng(12)
    net = random_network(rng, [2, 6, 6, 1], scale=1.5)
    B = Box([-1, -1], [1, 1])
    mx = maximize(net, B).value
    save_model(net, tmp_path / "net.npz")
    (tmp_path / "safe.vnnlib").write_text(format_vnnlib(Property([_spec_le(B, mx + 0.01, np.ones(1))])))
    (tmp_path / "unsafe.vnnlib").write_text(format_vnnlib(Property([_spec_le(B, mx - 0.01, np.ones(1))])))
    return net, mx


def test_cli_verify_range_and_batch(tmp_path, capsys):
    from relulab.cli import main

    net, mx = _tiny_files(tmp_path)
    out = tmp_path / "res.txt"
    main(["verify", str(tmp_path / "net.npz"), str(tmp_path / "safe.vnnlib"), "--out", str(out), "--json"])
    assert json.loads(capsys.readouterr().out)["result"] == "unsat"
    assert out.read_text() == "unsat\n"
    main(["verify", str(tmp_path / "net.npz"), str(tmp_path / "unsafe.vnnlib"), "--out", str(out)])
    capsys.readouterr()
    text = out.read_text()
    assert text.startswith("sat\n((X_0 ")
    vals = {k: float(v) for k, v in (t.strip("() \n").split() for t in text.split("\n")[1:] if t.strip())}
    x = np.array([vals["X_0"], vals["X_1"]])
    assert abs(float(net(x)[0]) - vals["Y_0"]) <= 1e-12 and vals["Y_0"] >= mx - 0.01 - FEAS_TOL

    main(["range", str(tmp_path / "net.npz"), "--box", "-1:1", "--json"])
    rr = json.loads(capsys.readouterr().out)
    assert abs(rr["hi"][0] - mx) <= 1e-9

    (tmp_path / "inst.csv").write_text("net.npz,safe.vnnlib,10\nnet.npz,unsafe.vnnlib,10\n")
    (tmp_path / "exp.csv").write_text("onnx,vnnlib,expected\nnet.npz,safe.vnnlib,holds\nnet.npz,unsafe.vnnlib,violated\n")
    main(["verify-batch", str(tmp_path / "inst.csv"), "--workers", "1", "--json",
          "--expected", str(tmp_path / "exp.csv")])
    b = json.loads(capsys.readouterr().out)
    assert [r["status"] for r in b["instances"]] == ["holds", "violated"]
    # the same through two worker processes, results in input order
    main(["verify-batch", str(tmp_path / "inst.csv"), "--workers", "2", "--json"])
    b2 = json.loads(capsys.readouterr().out)
    assert [r["status"] for r in b2["instances"]] == ["holds", "violated"]
    assert sum(s["correct"] for s in b["summary"]) == 2
    assert sum(s["wrong"] for s in b["summary"]) == 0


def test_cli_errors(tmp_path, capsys):
    from relulab.cli import main

    _tiny_files(tmp_path)
    (tmp_path / "bad.vnnlib").write_text("(declare-const X_0 Real)(assert (<= X_0 (foo 1)))")
    with pytest.raises(SystemExit) as e:
        main(["verify", str(tmp_path / "net.npz"), str(tmp_path / "bad.vnnlib")])
    assert e.value.code == 1
    assert "bad.vnnlib" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["verify-batch", str(tmp_path / "missing.csv")])
    assert "no such file" in capsys.readouterr().err


@pytest.mark.parametrize("n,m,seed", [(4, 16, 1), (4, 20, 1), (5, 22, 0)])
def test_e3sat_gadget_exact_max_and_verdicts(n, m, seed):
    """The SAT gadget of relulab.construct: max over [0,1]^n is (m - min #unsat clauses)/3
    (brute force over assignments); the verifier decides thresholds 1/6 either side."""
    from relulab.construct.hardness import min_unsat, random_3cnf, sat_gadget

    clauses = random_3cnf(n, m, seed)
    net = sat_gadget(clauses, n)
    unsat, _ = min_unsat(clauses, n)
    target = (m - unsat) / 3
    B = Box(np.zeros(n), np.ones(n))
    r = maximize(net, B)
    assert abs(r.value - target) <= 1e-7
    above = _spec_le(B, target + 1 / 6, np.ones(1))
    below = _spec_le(B, target - 1 / 6, np.ones(1))
    assert verify(net, above, timeout=20).status == "holds"
    v = verify(net, below, timeout=20)
    assert v.status == "violated" and float(net(v.counterexample)[0]) >= target - 1 / 6 - FEAS_TOL


def test_time_limited_maximize_brackets_the_optimum():
    """With a tiny time limit the answer is a bracket: value attained at x <= exact max
    <= proven bound (the bound comes from input splitting and/or the MILP)."""
    rng = np.random.default_rng(1)
    for _ in range(3):
        net = random_network(rng, [3, 12, 12, 1], scale=1.5)
        B = Box(-np.ones(3), np.ones(3))
        exact = maximize(net, B)
        r = maximize(net, B, time_limit=0.05)
        assert r.value <= exact.value + 1e-9 and r.upper_bound >= exact.value - 1e-9
        assert abs(float(net(r.x)[0]) - r.value) <= 1e-12 and B.contains(r.x)
        m = minimize(net, B, time_limit=0.05)
        exact_min = minimize(net, B)
        assert m.value >= exact_min.value - 1e-9 and m.lower_bound <= exact_min.value + 1e-9


def test_maximize_with_an_identically_zero_neuron_and_without_hidden_layers():
    """Regressions: a neuron with pre-activation bounds [0, 0] fixed its binary to both 1
    and 0 (MILP infeasible), and an affine network had no constraint rows to build."""
    from relulab.verify import minimize

    box = Box([-1.0, -1.0], [1.0, 1.0])
    zero = Network([np.array([[0.0, 0.0], [1.0, -0.5]]), np.array([[3.0, 1.0]])],
                   [np.array([0.0, 0.2]), np.array([0.1])])
    affine = Network([np.array([[2.0, 1.0]])], [np.array([0.5])])
    g = np.linspace(-1, 1, 201)
    X = np.array(np.meshgrid(g, g)).reshape(2, -1).T
    for net in (zero, affine):
        hi, lo = maximize(net, box), minimize(net, box)
        assert hi.status == lo.status == "optimal"
        Y = net(X)[:, 0]
        assert abs(hi.value - Y.max()) <= 1e-9 and abs(lo.value - Y.min()) <= 1e-9


# ------------------------------------------------------------------ malformed properties (audit)
@pytest.mark.parametrize("C,d,msg", [
    (np.ones((1, 1)), np.ones(2), "one entry per row"),      # used to broadcast into 'violated'
    (np.ones((2, 1)), np.ones(1), "one entry per row"),      # used to broadcast into 'holds'
    (np.ones(2), np.ones(1), "2-D"),
    ([[float("nan")]], [0.0], "finite"),
])
def test_a_malformed_output_constraint_is_one_clear_error(C, d, msg):
    with pytest.raises(SpecError, match=msg):
        OutputConstraint(C, d)


def test_a_specification_needs_a_box_and_consistent_terms():
    with pytest.raises(SpecError, match="Box"):
        Specification(([-1.0], [1.0]), [])
    with pytest.raises(SpecError, match="different numbers of outputs"):
        Specification(Box([-1.0], [1.0]), [OutputConstraint([[1.0]], [0.0]), OutputConstraint([[1.0, 2.0]], [0.0])])
    # lists are accepted and stored as float arrays
    c = OutputConstraint([[1.0, -1.0]], [0.0])
    assert c.C.dtype == np.float64 and c.C.shape == (1, 2) and c.d.shape == (1,)


def test_milp_unknown_inside_its_proof_margin_is_numerical_not_timeout():
    """f(x) = x through neurons of size 1e5: the big-M margin (1e-6 x 1e5) swamps the
    true gap 0.05 of 'y >= 1.05', so the MILP alone cannot prove it. It says why,
    instead of 'timeout' after a tenth of a second; the portfolio proves it."""
    net = Network([np.array([[1e5], [-1e5]]), np.array([[1e-5, -1e-5]])], [np.zeros(2), np.zeros(1)])
    spec = Specification(Box([-1.0], [1.0]), [OutputConstraint(np.array([[-1.0]]), np.array([-1.05]))])
    X = np.linspace(-1, 1, 201)[:, None]
    assert net(X).max() == pytest.approx(1.0)     # the truth: y <= 1 < 1.05, so it holds
    r = verify(net, spec, timeout=30, method="milp")
    assert r.status == "unknown" and r.reason.startswith("numerical") and r.vnncomp == "unknown"
    assert verify(net, spec, timeout=30).status == "holds"


@pytest.mark.parametrize("kw,msg", [
    (dict(intermediate="foo"), "intermediate"), (dict(batch=0), "batch"),
    (dict(alpha_iters=-1), "alpha_iters"), (dict(attack_time=-1.0), "attack_time"),
])
def test_verify_checks_its_tuning_arguments(kw, msg):
    net = Network([np.eye(1)], [np.zeros(1)])
    spec = Specification(Box([-1.0], [1.0]), [OutputConstraint([[1.0]], [-2.0])])
    with pytest.raises(RelulabError, match=msg):
        verify(net, spec, **kw)


@pytest.mark.parametrize("method", ["auto", "input-split", "relu-split", "milp"])
def test_a_network_without_hidden_layers_verifies(method):
    # y = x0 + 0.5 x1 - x2 on [-1, 1]^3 ranges over [-2.5, 2.5] (the attack's piece had no rows)
    from relulab.spec import OutputConstraint, Specification
    from relulab.verify import verify

    net = Network([[[1.0, 0.5, -1.0], [-2.0, 1.0, 0.0]]], [[0.0, 0.0]])
    box = Box([-1.0] * 3, [1.0] * 3)
    for t, want in ((-2.0, "violated"), (-2.5 - 1e-3, "holds")):
        spec = Specification(box, [OutputConstraint(np.array([[1.0, 0.0]]), np.array([t]))])
        r = verify(net, spec, timeout=20, method=method)
        assert r.status == want
        if want == "violated":
            assert net(r.counterexample)[0] <= t + 1e-9


# ------------------------------------------------- the exact counterexample gate
_HEAD = "(declare-const X_0 Real)\n(declare-const Y_0 Real)\n(assert (>= X_0 0))\n(assert (<= X_0 1))\n"


@pytest.mark.parametrize("unsafe, allowed", [
    ("(assert (<= (* 1e-10 Y_0) 0))", ("holds", "unknown")),  # Y_0 <= 0 scaled: slack was 10
    ("(assert (<= 1e-10 0))", ("holds",)),                     # an empty unsafe set
    ("(assert (>= Y_0 2.0000000005))", ("holds", "unknown")),  # max Y_0 is exactly 2
    ("(assert (< Y_0 Y_0))", ("holds",)),                      # false everywhere
])
def test_violated_needs_a_counterexample_that_is_one_exactly(unsafe, allowed):
    # f(x) = relu(x) + 1 on [0, 1]: every property here holds; each was answered violated
    # through the absolute slack FEAS_TOL of the searches' float re-check
    from relulab.io.vnnlib import parse_vnnlib

    net = Network([[[1.0]], [[1.0]]], [[0.0], [1.0]])
    prop = parse_vnnlib(_HEAD + unsafe)
    r = verify(net, prop, timeout=10)
    assert r.status in allowed, (unsafe, r.status, r.reason)


def test_violated_on_an_exact_network_reports_its_exact_output():
    # f = (10^20 + 1) relu(x) - 10^20 relu(x) = relu(x): the float forward pass gives -8169
    # at the counterexample, which the output and the sat file reported
    from fractions import Fraction

    big = 10**20
    F = Fraction
    net = Network([np.array([[F(1)], [F(1)]], dtype=object), np.array([[F(big + 1), F(-big)]], dtype=object)],
                  [np.array([F(0), F(0)], dtype=object), np.array([F(0)], dtype=object)])
    spec = Specification(Box([0.0], [1.0]), [OutputConstraint(np.array([[-1.0]]), np.array([-0.5]))])
    r = verify(net, spec, timeout=10)
    assert r.status == "violated"
    exact = net([[F(float(r.counterexample[0]))]])[0, 0]
    assert r.output[0] == float(exact) and exact >= F(1, 2)


def test_violated_counterexamples_of_random_properties_are_exact():
    # a property violated with room: still violated, and the point is unsafe in Fractions
    from fractions import Fraction

    rng = np.random.default_rng(11)
    for _ in range(6):
        net = random_network(rng, [2, 8, 8, 2])
        box = Box([-1, -1], [1, 1])
        hi = float(np.max(net(box.sample(2000, rng))[:, 0]))
        spec = Specification(box, [OutputConstraint(np.array([[-1.0, 0.0]]), np.array([-(hi - 0.05)]))])
        r = verify(net, spec, timeout=20)
        assert r.status == "violated" and box.contains(r.counterexample, tol=0.0)
        y = net.exact()(r.counterexample)
        assert y[0] >= Fraction(hi - 0.05)
