"""verify's method choice between 9 and PORTFOLIO_MAX_DIM inputs: input splitting first on
a share of the time, then ReLU splitting on the rest.  Answers are checked against the
exact MILP (``maximize`` / ``milp_term``) and every counterexample by a forward pass."""

from __future__ import annotations

import numpy as np
import pytest

from relulab import Box, Network
from relulab.spec import OutputConstraint, Specification
from relulab.tolerance import FEAS_TOL
from relulab.verify import maximize, verify
from relulab.verify import verifier as verifier_mod
from relulab.verify.milp import milp_term
from relulab.verify.verifier import INPUT_SPLIT_MAX_DIM


def _net(rng: np.random.Generator, dims: list[int]) -> Network:
    Ws = [rng.normal(size=(dims[k + 1], dims[k])) / np.sqrt(dims[k]) for k in range(len(dims) - 1)]
    bs = [rng.normal(size=dims[k + 1]) * 0.3 for k in range(len(dims) - 1)]
    return Network(Ws, bs)


def _conjunction(seed: int):
    """A random network with 9-16 inputs and an unsafe conjunction of two rows (as in
    reach_prob_density's gcas: y_a <= t_a and y_b >= t_b), with the MILP's answer."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(INPUT_SPLIT_MAX_DIM + 1, verifier_mod.PORTFOLIO_MAX_DIM + 1))
    net = _net(rng, [d, 12, 12, 3])
    box = Box(-np.ones(d), np.ones(d))
    C = np.array([[1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
    y = net(box.sample(400, rng)) @ C.T
    q = np.quantile(y, 0.01, axis=0)
    dv = q - (0.1 + np.abs(q)) * rng.uniform(0.0, 0.8, size=2)  # below the sampled values
    status, _, _ = milp_term(net, box, C, dv)
    return net, box, C, dv, status


def test_portfolio_agrees_with_the_milp_on_conjunctions():
    seen = {"holds": 0, "violated": 0}
    for seed in range(7, 22):
        net, box, C, dv, truth = _conjunction(seed)
        if truth == "unknown":
            continue
        r = verify(net, Specification(box, [OutputConstraint(C, dv)]), timeout=120, engine="numpy")
        assert r.status == truth, (seed, r.status, r.reason)
        assert r.stats.get("method_choice", "").startswith("input-split") or r.method == "attack"
        seen[truth] += 1
        if truth == "violated":
            x = r.counterexample
            assert box.contains(x) and np.all(C @ net(x) <= dv + FEAS_TOL)
    assert seen["holds"] >= 3 and seen["violated"] >= 3, seen


@pytest.mark.parametrize("gap", [0.01, -0.01])
def test_portfolio_falls_back_to_relu_splitting(monkeypatch, gap):
    """With almost no time for input splitting, ReLU splitting decides the property."""
    rng = np.random.default_rng(3)
    net = _net(rng, [12, 10, 8, 1])
    box = Box(-np.ones(12), np.ones(12))
    m = maximize(net, box)
    thr = m.value + gap * (1 + abs(m.value))
    spec = Specification(box, [OutputConstraint(np.array([[-1.0]]), np.array([-thr]))])
    monkeypatch.setattr(verifier_mod, "INPUT_SPLIT_SHARE", 0.0001)
    r = verify(net, spec, timeout=60, engine="numpy", attack_time=0.0)
    want = "holds" if gap > 0 else "violated"
    assert r.status == want, (r.status, r.reason)
    if want == "holds":
        assert r.method in ("relu-split", "milp") and "relu_split" in r.stats
    else:
        assert box.contains(r.counterexample) and net(r.counterexample)[0] >= thr - FEAS_TOL


def test_above_the_portfolio_range_relu_splitting_runs_alone():
    rng = np.random.default_rng(5)
    d = verifier_mod.PORTFOLIO_MAX_DIM + 1
    net = _net(rng, [d, 6, 1])
    box = Box(-0.5 * np.ones(d), 0.5 * np.ones(d))
    m = maximize(net, box)
    spec = Specification(box, [OutputConstraint(np.array([[-1.0]]), np.array([-(m.value + 0.05)]))])
    r = verify(net, spec, timeout=60, engine="numpy")
    assert r.status == "holds" and r.stats["method_choice"] == "relu-split"


@pytest.mark.parametrize("engine", ["auto", "numpy"])
def test_portfolio_ends_unknown_timeout(engine):
    """Both phases cut short: ``unknown`` with the reason "timeout", never a guess."""
    from test_verify_limits import _hard

    net, spec = _hard(12)
    r = verify(net, spec, timeout=1.0, engine=engine)
    assert (r.status, r.reason) == ("unknown", "timeout")
    assert r.stats["method_choice"] == "input-split, then relu-split"
