"""extract: a caller's QueryOracle keeps its budget, deadline and count; the time limit
covers the final polish; non-finite line searches and bad arguments are one clear error
before any query."""

from __future__ import annotations

import numpy as np
import pytest

from relulab import Box, Network
from relulab.errors import RelulabError
from relulab.extract import ExtractError, LineSearch, extract_relu
from relulab.extract.oracle import QueryOracle
from relulab.limits import Deadline


def _net() -> Network:
    return Network([[[1.0, 0.5], [-1.0, 2.0], [0.3, -1.0]], [[1.0, -2.0, 0.5]]], [[0.1, -0.2, 0.3], [0.0]])


# ------------------------------------------------------------------ line search
@pytest.mark.parametrize("a, b", [(float("nan"), 1.0), (-1.0, float("inf")), (-1e308, 1e308)])
def test_line_search_refuses_a_non_finite_interval(a, b):
    with pytest.raises(ExtractError, match=r"^LineSearch\.kinks: the interval"):
        LineSearch(lambda t: np.abs(t)).kinks(a, b)


def test_line_search_refuses_a_function_that_is_nan_somewhere():
    """A NaN fails every linearity test: the search halved to depth 60 (2^61 calls)."""
    calls = []

    def g(t):
        calls.append(1)
        return np.where(t > 0.5, np.nan, np.abs(t - 0.3))

    with pytest.raises(ExtractError, match=r"^LineSearch: g returned nan at t = "):
        LineSearch(g).kinks(-1.0, 1.0)
    assert len(calls) < 5


# ------------------------------------------------------------------ a caller's oracle
def test_the_count_is_the_attacks_own_and_the_callers_count_goes_on():
    fresh = extract_relu(_net(), 2)
    o = QueryOracle(_net())
    o(np.zeros((1000, 2)))
    r = extract_relu(o, 2)
    assert r.status == "complete" and r.queries == fresh.queries   # it said 1000 more
    assert o.queries == 1000 + r.queries


def test_the_callers_budget_caps_a_larger_budget_given_to_the_attack():
    o = QueryOracle(_net(), budget=100)
    r = extract_relu(o, 2, budget=5000)
    assert r.status == "partial" and r.queries <= 100 and o.queries == r.queries
    assert any("budget 100" in n for n in r.unidentified)


def test_the_callers_deadline_holds_and_is_left_as_it_was():
    o = QueryOracle(_net())
    dl = Deadline(0.0)
    o.deadline = dl
    r = extract_relu(o, 2)
    assert r.status == "partial" and r.queries == 0 and o.queries == 0
    assert any("time limit" in n for n in r.unidentified)
    assert o.deadline is dl


# ------------------------------------------------------------------ bad input, before any query
class _Counting:
    def __init__(self):
        self.rows = 0

    def __call__(self, X):
        self.rows += len(X)
        return _net()(X)


@pytest.mark.parametrize("kw, match", [
    ({"scale": 1e308}, "scale must be"),
    ({"domain": Box(-np.ones(3), np.ones(3))}, "domain must be a Box of dimension 2"),
    ({"domain": (-1.0, 1.0)}, "domain must be a Box"),
])
def test_bad_arguments_are_refused_before_any_query(kw, match):
    f = _Counting()
    with pytest.raises(ExtractError, match=rf"^extract_relu: {match}"):
        extract_relu(f, 2, reference=_net(), **kw)
    assert f.rows == 0


@pytest.mark.parametrize("answer", [lambda X: np.array(["a"] * len(X)), lambda X: {"y": 1}])
def test_an_oracle_answering_non_numbers_is_named(answer):
    with pytest.raises(ExtractError, match=r"^oracle: the model's outputs \(\w+\) are not an array of numbers"):
        extract_relu(answer, 2)


def test_an_oracle_that_raises_passes_its_own_error_on():
    def broken(X):
        raise TypeError("my model is broken")

    with pytest.raises(TypeError, match="my model is broken"):
        extract_relu(broken, 2)


@pytest.mark.parametrize("kw, match", [
    ({"grid": "x"}, "grid must be an integer"), ({"grid": float("nan")}, "grid must be an integer"),
    ({"grid": 16.9}, "grid must be an integer"), ({"seed": -1}, "seed must be an integer"),
    ({"seed": 1.5}, "seed must be an integer"), ({"reference": "x"}, "reference must be a GLUBlock"),
])
def test_glu_arguments_are_named(kw, match):
    from relulab.extract import extract_glu, random_glu

    with pytest.raises(RelulabError, match=rf"^extract_glu: {match}"):
        extract_glu(random_glu(4, 2, act="relu", seed=1), 4, act="relu", **kw)


# ------------------------------------------------------------------ the polish and the time limit
def _deep() -> Network:
    rng = np.random.default_rng(0)
    return Network([rng.normal(size=(6, 3)), rng.normal(size=(4, 6)), rng.normal(size=(1, 4))],
                   [rng.normal(size=6) * 0.3, rng.normal(size=4) * 0.3, [0.0]])


def test_a_polish_that_would_not_fit_the_time_left_is_skipped(monkeypatch):
    """On a machine that multiplies at 1 flop/s the polish's first step cannot end within
    any limit: it is skipped (saying why) when a limit is given, and runs without one."""
    import relulab.extract.polish as P

    monkeypatch.setattr(P, "dense_flop_rate", lambda: 1.0)
    limited = extract_relu(_deep(), 3, polish=True, time_limit=600)
    assert limited.polish.startswith("final polish") and "not polished (time limit" in limited.polish
    free = extract_relu(_deep(), 3, polish=True)
    assert "not polished (time limit" not in free.polish


def test_polish_takes_no_step_after_its_deadline():
    from relulab.extract.polish import polish

    f = _deep()
    X = np.random.default_rng(1).normal(size=(300, 3))
    _, rep = polish(f, X, f(X), deadline=Deadline(0.0))
    assert not rep.accepted and rep.iterations == 0 and "time limit" in rep.message
