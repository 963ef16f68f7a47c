"""Fixes from the eighth audit of symmetry: a polytope's bounding box (2 LPs per input)
is looked for only within the time limit by equivalent and neuron_status; bad arguments
are refused by name; reduce says on how many points it compared."""

from __future__ import annotations

import numpy as np
import pytest

from relulab import Box, Network, Polytope
from relulab.errors import RelulabError
from relulab.network import NetworkError
from relulab.symmetry import canonical, equivalent, neuron_status, reduce


def _rotated_cube(d: int, seed: int = 0) -> Polytope:
    """No row bounds a coordinate alone: boundedness needs the bounding box's LPs."""
    Q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(d, d)))
    return Polytope(np.vstack([Q, -Q]), np.ones(2 * d))


def _net(d: int, seed: int = 1) -> Network:
    rng = np.random.default_rng(seed)
    return Network([rng.normal(size=(6, d)), rng.normal(size=(6, 6)), rng.normal(size=(1, 6))],
                   [rng.normal(size=6), rng.normal(size=6), np.zeros(1)])


def test_boundedness_is_left_undecided_past_a_deadline():
    import time

    P = _rotated_cube(12)
    assert P.bounded_by(time.perf_counter() - 1.0) is None
    assert "_bbox" not in P.__dict__          # nothing solved, nothing cached
    assert P.bounded_by(None) is True and P.bounded_by(time.perf_counter() - 1.0) is True   # (now known)
    assert Polytope.whole_space(3).bounded_by(time.perf_counter() + 5.0) is False


def test_neuron_status_without_time_for_the_box_decides_by_the_first_layer_lps_only(monkeypatch):
    """A spent time limit: the box is not solved (7 s at 100 inputs and 400 rows for a 1 s
    limit); what is decided is sound: no neuron called dead or active changes sign on
    points of the polytope."""
    P = _rotated_cube(12)
    net = _net(12)
    st = neuron_status(net, P, time_limit=0)
    assert "_bbox" not in P.__dict__
    assert all(np.all(s == 0) for s in st.status[1:])          # deeper layers need the box
    X = P.sample(500, 0)
    for k, z in enumerate(net.preactivations(X)[: net.n_hidden_layers]):
        assert np.all(z[:, st.status[k] == -1] <= 0) and np.all(z[:, st.status[k] == 1] >= 0)
    full = neuron_status(net, P)                             # no limit: the box and the bounds
    assert sum(int(np.count_nonzero(s)) for s in full.status) >= sum(int(np.count_nonzero(s)) for s in st.status)


def test_equivalent_without_time_for_the_box_answers_from_samples_or_unknown(monkeypatch):
    import relulab.domain as domain_mod

    P = _rotated_cube(24)   # (above 20 inputs sampling does not solve the box either)
    f = _net(24)
    # the box's LPs take longer than the whole limit (as at 100 inputs and 400 rows)
    real = domain_mod.Polytope._solve_bounding_box

    def slow(self, deadline=None):
        assert deadline is not None, "the bounding box was solved without a deadline"
        raise domain_mod._OutOfTime

    monkeypatch.setattr(domain_mod.Polytope, "_solve_bounding_box", slow)
    r = equivalent(f, f, P, timeout=0.5)
    assert r.status == "unknown" and "bounding box" in r.message
    g = f + Network([np.ones((1, 24)), [[1.0]]], [[0.0], [0.0]])     # differs by relu(sum x)
    r = equivalent(f, g, P, timeout=0.5)
    assert r.status == "different" and P.contains(r.witness[None]).all()
    monkeypatch.setattr(domain_mod.Polytope, "_solve_bounding_box", real)
    assert equivalent(f, f, P, timeout=30).status == "equal"


@pytest.mark.parametrize("call, match", [
    (lambda: neuron_status([1, 2], Box([0], [1])), "neuron_status: net must be a relulab Network"),
    (lambda: canonical([1, 2]), "canonical: net must be a relulab Network"),
    (lambda: neuron_status(_net(2), Box([0, 0], [1, 1]), time_limit=-1), "time_limit must be"),
    (lambda: neuron_status(_net(2), Box([0, 0], [1, 1]), max_verifier_calls=-1), "max_verifier_calls"),
])
def test_bad_arguments_are_refused_by_name(call, match):
    with pytest.raises((RelulabError, NetworkError), match=match):
        call()


def test_reduce_says_on_how_many_points_it_compared():
    net = Network([[[1.0], [2.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    r = reduce(net, Box([-1.0], [1.0]), n_check=300)
    assert r.sample_points == 2000 + 300 and r.to_dict()["sample_points"] == 2300


def test_a_polytope_bounded_by_its_box_rows_is_not_solved_past_the_limit(monkeypatch):
    """The input box's rows plus general rows (the common domain): boundedness is read off
    the box rows, and the bounds used that box; the proven bounding box (10 s at 100
    inputs, 600 rows, for a 1 s limit) is not solved without a deadline."""
    import relulab.domain as domain_mod

    rng = np.random.default_rng(0)
    d = 24
    A = np.vstack([rng.normal(size=(60, d)), np.eye(d), -np.eye(d)])
    b = np.concatenate([np.abs(rng.normal(size=60)) + 1, np.full(2 * d, 5.0)])
    P = Polytope(A, b)
    net = _net(d)

    def slow(self, deadline=None):
        assert deadline is not None, "the bounding box was solved without a deadline"
        raise domain_mod._OutOfTime

    monkeypatch.setattr(domain_mod.Polytope, "_solve_bounding_box", slow)
    st = neuron_status(net, P, time_limit=0.5)
    X = P.sample(300, 0)
    for k, z in enumerate(net.preactivations(X)[: net.n_hidden_layers]):
        assert np.all(z[:, st.status[k] == -1] <= 0) and np.all(z[:, st.status[k] == 1] >= 0)
    r = equivalent(net, net, P, timeout=0.5)
    assert r.status in ("equal", "unknown")
