"""Extraction is scale-free, honours its time limit, takes float32 torch modules, and
names bad arguments (from an audit; each checked against the reference network)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from relulab import Network
from relulab.extract import ExtractError, extract_relu
from relulab.extract.oracle import QueryOracle


def _docs_net(s: float = 1.0) -> Network:
    W1 = [[1.0, -1.0], [0.5, 1.0], [-1.0, 0.25]]
    return Network([W1, [[1.0 * s, -2.0 * s, 0.5 * s]]], [[0.1, -0.2, 0.3], [0.05 * s]])


@pytest.mark.parametrize("s", [1e-6, 1e-9, 1e-12])
def test_small_outputs_are_recovered_not_called_affine(s):
    # outputs of 5e-9: every kink was below the attack's absolute floor, and the answer
    # was "complete", an affine map, "equal" at tolerance 1e-6 (a 50% error)
    net = _docs_net(s)
    r = extract_relu(net, 2, seed=0)
    X = np.random.default_rng(1).uniform(-1, 1, (2000, 2))
    err = np.max(np.abs(r.network(X) - net(X)))
    scale = np.max(np.abs(net(X)))
    assert r.widths == (3,) and err <= 1e-9 * scale
    assert r.status == "complete" and r.fidelity.equivalence == "equal"


def test_a_wrong_small_network_is_not_called_equal():
    # the fidelity check is relative to the outputs' size: an affine stand-in is different
    from relulab.domain import Box
    from relulab.extract.fidelity import fidelity

    net = _docs_net(1e-9)
    flat = Network([[[0.0, 0.0]]], [[float(np.mean(net(np.zeros((1, 2)))))]])
    fid = fidelity(net, flat, Box([-1, -1], [1, 1]), tol=1e-6 * 5e-9)
    assert fid.equivalence == "different"


def test_the_orientation_milp_gets_what_is_left_of_the_time_limit(monkeypatch):
    import importlib

    signs = importlib.import_module("relulab.extract.signs")
    seen = []
    real = signs.subset_signs

    def spy(A, U, M, rtol=None, time_limit=20.0, mask=None):
        from relulab.extract.signs import EXTRACTION_DEADLINE

        dl = EXTRACTION_DEADLINE.get()
        seen.append(None if dl is None else dl.left())
        return real(A, U, M, rtol, time_limit, mask)

    monkeypatch.setattr(importlib.import_module("relulab.extract.relu"), "subset_signs", spy)
    rng = np.random.default_rng(0)
    net = Network([rng.normal(size=(8, 2)), rng.normal(size=(1, 8))], [rng.normal(size=8), rng.normal(size=1)])
    extract_relu(net, 2, seed=0, time_limit=60)
    # the MILP sees the extraction's deadline (it ran its own 20 s under a 1 s limit)
    assert all(v is not None and v <= 60 for v in seen)
    from relulab.extract.signs import EXTRACTION_DEADLINE

    assert EXTRACTION_DEADLINE.get() is None              # reset after the call


def test_a_float32_torch_module_is_extracted():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(3, 6), torch.nn.ReLU(), torch.nn.Linear(6, 2))
    t0 = time.monotonic()
    r = extract_relu(m, 3, seed=0, time_limit=120)
    assert time.monotonic() - t0 < 300    # a hang detector only (it never finished)
    X = np.random.default_rng(0).uniform(-1, 1, (500, 3))
    with torch.no_grad():
        want = m.double()(torch.as_tensor(X)).numpy()
    assert r.status == "complete" and np.max(np.abs(r.network(X) - want)) <= 1e-9


@pytest.mark.parametrize("kw, match", [
    (dict(widths="16"), "widths must be a list of integers"),
    (dict(widths=[16.9]), "widths must be a list of integers"),
    (dict(d=2.5), "d must be an integer"),
    (dict(budget=10.5), "budget must be an integer"),
    (dict(seed=-1), "seed must be an integer"),
    (dict(patience=0), "patience must be an integer"),
    (dict(max_layers=-2), "max_layers must be an integer"),
    (dict(precision="1e-6"), "precision must be a number"),
])
def test_bad_arguments_are_named(kw, match):
    args = dict(d=2)
    args.update(kw)
    with pytest.raises(ExtractError, match=match):
        extract_relu(_docs_net(), **args)


def test_an_oracle_whose_output_width_changes_is_named():
    calls = [0]

    def f(X):
        calls[0] += 1
        return np.zeros((X.shape[0], 1 if calls[0] == 1 else 2))

    o = QueryOracle(f, input_dim=2)
    o(np.zeros((1, 2)))
    with pytest.raises(ExtractError, match="outputs per query"):
        o(np.zeros((1, 2)))


@pytest.mark.parametrize("kw, match", [
    (dict(noise=-1.0), "noise must be a finite number"),
    (dict(noise=float("nan")), "noise must be a finite number"),
    (dict(scale=0.0), "scale must be a finite number"),
    (dict(hidden=2.5), "hidden must be an integer"),
    (dict(polish_steps=-1), "polish_steps must be an integer"),
])
def test_bad_glu_arguments_are_named(kw, match):
    from relulab.extract import extract_glu, random_glu

    with pytest.raises(ExtractError, match=match):
        extract_glu(random_glu(4, 2), 4, **kw)


def test_an_error_inside_the_attack_leaves_no_deadline_or_scale_behind():
    from relulab.extract.signs import EXTRACTION_DEADLINE

    calls = [0]

    def f(X):
        calls[0] += 1
        if calls[0] > 3:
            raise ValueError("oracle failed")
        return 1e-9 * np.maximum(X[:, :1], 0.0)

    o = QueryOracle(f, input_dim=2)
    with pytest.raises(ValueError, match="oracle failed"):
        extract_relu(o, 2, time_limit=30)
    assert EXTRACTION_DEADLINE.get() is None and o.out_scale == 1.0 and o.deadline is None
