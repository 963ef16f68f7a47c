"""The joint branch and bound over a disjunction of terms (``decide_terms``) against one
MILP per term, and the attack schedule used during the search."""

from __future__ import annotations

import time
from functools import cache

import numpy as np
import pytest
from conftest import random_network

from relulab.domain import Box
from relulab.tolerance import FEAS_TOL
from relulab.verify.bab import AttackSchedule, decide_term, decide_terms
from relulab.verify.milp import milp_term


def _instance(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 6))
    net = random_network(rng, [n, 12, 8, 3])
    box = Box(-np.ones(n), np.ones(n))
    Y = net(box.sample(2000, rng))
    terms = []
    for _ in range(int(rng.integers(2, 4))):
        C = rng.normal(size=(int(rng.integers(1, 3)), 3))
        low = (Y @ C.T).min(axis=0)
        # below the sampled minimum by a bit (mostly unsatisfiable) or above it (satisfiable)
        d = low + rng.choice([-0.3, -0.05, 0.05], size=len(C))
        terms.append((C, d))
    return net, box, terms


@cache
def _truth(seed):
    net, box, terms = _instance(seed)
    return tuple(milp_term(net, box, C, d)[0] for C, d in terms)


SEEDS = range(30)


@pytest.mark.parametrize("seed", SEEDS)
def test_decide_terms_agrees_with_one_milp_per_term(seed):
    net, box, terms = _instance(seed)
    truth = _truth(seed)
    if "unknown" in truth:
        pytest.skip("the MILP left a term undecided")
    status, x, _, k = decide_terms(net, box, terms, deadline=None, schedule=AttackSchedule(first=1e9))
    if all(s == "holds" for s in truth):
        assert status == "holds"
    else:
        assert status == "violated"
        C, d = terms[k]
        assert truth[k] == "violated"
        assert box.contains(x) and np.all(C @ net(x) <= d + FEAS_TOL)
    # one tree for all terms gives the answer of one tree per term
    single = [decide_term(net, box, C, d, schedule=AttackSchedule(first=1e9))[0] for C, d in terms]
    assert ("violated" in single) == (status == "violated")


def test_both_answers_are_represented():
    truths = []
    for seed in SEEDS:
        t = _truth(seed)
        truths.append("violated" if "violated" in t else ("holds" if all(s == "holds" for s in t) else "?"))
    assert truths.count("holds") >= 6 and truths.count("violated") >= 6


def test_attack_during_search_finds_a_counterexample_the_bounds_cannot_reach():
    # a violated term whose box is large: with the attack schedule due at once, the
    # branch and bound returns the attack's counterexample after its first round
    rng = np.random.default_rng(3)
    net = random_network(rng, [4, 24, 24, 2])
    box = Box(-np.ones(4), np.ones(4))
    y = net(box.sample(4000, rng))[:, 0]
    C, d = np.array([[-1.0, 0.0]]), np.array([-float(y.max())])   # y0 >= best sample
    st: dict = {}
    status, x, st = decide_term(net, box, C, d, stats=st, schedule=AttackSchedule(first=0.0))
    assert status == "violated" and float(net(x)[0]) >= float(y.max()) - FEAS_TOL


def test_a_search_cut_by_its_deadline_resumes_where_it_stopped():
    rng = np.random.default_rng(5)
    net = random_network(rng, [3, 20, 20, 2])
    box = Box(-np.ones(3), np.ones(3))
    hi = float(net(box.sample(4000, rng))[:, 0].max())
    terms = [(np.array([[-1.0, 0.0]]), np.array([-(hi + 0.3)]))]  # y0 >= sampled max + 0.3
    off = AttackSchedule(first=1e9)
    fresh: dict = {}
    want = decide_terms(net, box, terms, stats=fresh, batch=4, schedule=off)[0]
    assert want == "holds"
    st: dict = {}
    status, calls = "unknown", 0
    while status == "unknown" and calls < 100_000:
        # each call runs until a deadline a few milliseconds away, then leaves its open
        # sub-boxes in st for the next call
        status = decide_terms(net, box, terms, stats=st, batch=4, schedule=off,
                              deadline=time.time() + 0.003)[0]
        calls += 1
    assert calls > 1  # it was cut at least once
    assert status == want
    assert st["boxes"] == fresh["boxes"]  # the same rounds in the same order
