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


# ------------------------------------------------------------------ outputs far from size 1
_W1, _B1 = [[1.0, 0.5], [-1.0, 2.0], [0.3, -1.0]], [0.1, -0.2, 0.3]


def _sampled_gap(f: Network, g: Network) -> np.ndarray:
    X = np.random.default_rng(0).uniform(-1, 1, size=(20000, 2))
    return np.abs(f(X) - g(X)).max(axis=0)


def test_an_output_offset_far_above_its_variation_hides_no_neuron():
    """A bias of 1e7 on outputs that vary by about 3: every tolerance was relative to the
    outputs' size, so the third neuron hid under it ('complete' with widths (2,) and an
    error of 0.09, fidelity 'equal' at a tolerance of 10)."""
    net = Network([_W1, [[1.0, -2.0, 0.5]]], [_B1, [1e7]])
    r = extract_relu(net, 2)
    assert r.status == "complete" and r.widths == (3,) and r.fidelity.equivalence == "equal"
    assert r.fidelity.equivalence_tol < 1e-5 and _sampled_gap(net, r.network)[0] < 1e-5


def test_an_output_far_below_another_is_read_at_its_own_size():
    """Outputs of size 1.6e4 and 2.8e-4, two neurons feeding only the small one: they were
    missed ('complete' with widths (1,), 106 % error on the second output)."""
    net = Network([_W1, [[1e4, 0.0, 0.0], [0.0, 1e-4, -1e-4]]], [_B1, [0.0, 0.0]])
    r = extract_relu(net, 2)
    assert r.status == "complete" and r.widths == (3,) and r.fidelity.equivalence == "equal"
    gap = _sampled_gap(net, r.network)
    assert gap[1] < 1e-9 * 2.8e-4 and gap[0] < 1e-9 * 1.6e4


def test_a_function_the_output_probe_sees_as_zero_is_not_complete():
    """1e-9 (relu(x1 + x2 - 1.8) + relu(x1 - x2 - 1.6)) is 0 on the 32 probe points: it was
    read at scale 1 and came back 'complete' as an affine map, fidelity 'equal' at an
    absolute 1e-6 (the error, 4e-10, is the function's own size)."""
    net = Network([[[1.0, 1.0], [1.0, -1.0]], [[1e-9, 1e-9]]], [[-1.8, -1.6], [0.0]])
    r = extract_relu(net, 2)
    wrong = _sampled_gap(net, r.network)[0] > 1e-3 * 3.9e-10
    if wrong:
        assert r.status == "partial" and r.fidelity.equivalence != "equal"


def test_complete_is_withdrawn_when_fidelity_finds_a_difference():
    """A second-layer neuron active only on |x|_1 < 0.05 (no query goes there): the result
    said 'complete' next to its own fidelity verdict 'different' (gap 2.5 at the origin)."""
    d = 6
    W1 = np.vstack([np.eye(d), -np.eye(d)])
    W2 = np.vstack([-np.ones(2 * d), np.r_[1.0, -1.0, np.zeros(d - 2), -1.0, 1.0, np.zeros(d - 2)]])
    net = Network([W1, W2, [[50.0, 1.0]]], [np.zeros(2 * d), [0.05, 0.1], [0.0]])
    r = extract_relu(net, d)
    if r.fidelity.equivalence == "different":
        assert r.status == "partial"
        assert any("fidelity check found" in n for n in r.unidentified)
    else:
        assert r.fidelity.equivalence == "equal" and r.status == "complete"


def test_glu_param_error_is_the_product_difference_whatever_the_split():
    """A unit's split (w c, u / c) is free: the expansion through w1 - w0, u1 - u0 cancelled
    and read 1.5e-4 for an exact rescaling and 0 for a real error of 1e-6."""
    from relulab.extract import random_glu
    from relulab.extract.glu import GLUBlock, param_error

    b = random_glu(5, 4, 3, act="relu", seed=2)
    resc = GLUBlock(b.W_gate, b.W_up * 1e4, b.W_out * 1e-4, "relu")
    assert param_error(resc, b)["product_max"] < 1e-14
    W_up = b.W_up * 1e4
    W_up[0] *= 1 + 1e-6   # unit 0's product off by exactly 1e-6 of itself
    p = param_error(GLUBlock(b.W_gate, W_up, b.W_out * 1e-4, "relu"), b)
    assert p["product_max"] == pytest.approx(1e-6, rel=1e-6)
