"""Regression tests for the audit of relulab.extract: each checks a fact against an
independent oracle (a function whose kinks are known by construction, a network evaluated
directly, the arguments as given)."""

import numpy as np
import pytest

from relulab import Network
from relulab.extract import LineSearch


def _pwl(c, amp, a0=1.0, a1=2.0):
    c, amp = np.asarray(c, float), np.asarray(amp, float)
    return lambda t: a0 + a1 * np.asarray(t) + np.sum(
        amp * np.maximum(np.asarray(t)[:, None] - c, 0.0), axis=1)


# ------------------------------------------------------------------ finding 2
@pytest.mark.parametrize("c", [-0.5, 0.0, 0.5])
def test_kinks_finds_a_lone_kink_on_a_grid_point(c):
    got = LineSearch(lambda t: 10.0 * np.abs(t - c)).kinks(-1.0, 1.0)
    assert got.shape == (1,) and abs(got[0] - c) < 1e-12


def test_kinks_finds_a_hyperplane_on_its_own_normal_line():
    net = Network([[[1.0, 2.0]], [[1.0]]], [[0.0], [0.0]])  # relu(x1 + 2 x2)
    n = np.array([1.0, 2.0]) / np.sqrt(5.0)
    got = LineSearch(lambda t: net(t[:, None] * n[None])[:, 0]).kinks(-3.0, 3.0)
    assert got.shape == (1,) and abs(got[0]) < 1e-12


def test_kinks_grid_point_kink_next_to_others():
    c = [-0.5, -0.2, 0.0, 0.37]
    got = LineSearch(_pwl(c, [1.0, -0.7, 2.0, 0.4])).kinks(-1.0, 1.0)
    assert np.allclose(got, c, atol=1e-10)


# ------------------------------------------------------------------ finding 3
def test_kinks_reports_only_real_kinks_near_the_end():
    c = np.array([-0.372377, 0.147909, 0.600056, 0.999994])
    g = _pwl(c, [3.2758, 0.2356, 0.055, 0.0021])
    got = LineSearch(g).kinks(-1.0, 1.0)
    for t in got:
        assert np.min(np.abs(c - t)) < 1e-9, t
    assert all(np.min(np.abs(got - t)) < 1e-9 for t in c[:3])


def test_kinks_random_functions_report_no_false_kink():
    rng = np.random.default_rng(7)
    for _ in range(40):
        k = int(rng.integers(1, 6))
        c = np.sort(rng.uniform(-1.0, 1.0, k))
        c[-1] = 1.0 - 10.0 ** rng.uniform(-7, -2) if rng.random() < 0.5 else c[-1]
        amp = rng.choice([-1, 1], k) * 10.0 ** rng.uniform(-3, 0.5, k)
        got = LineSearch(_pwl(c, amp)).kinks(-1.0, 1.0)
        for t in got:
            assert np.min(np.abs(c - t)) < 1e-8, (c, amp, t)


# ------------------------------------------------------------------ finding 4
def test_single_refuses_two_kinks_of_opposite_jump():
    g = lambda t: 2.0 * np.maximum(np.asarray(t), 0) - np.maximum(np.asarray(t) - 0.1, 0)  # noqa: E731
    t = LineSearch(g).single(1.0)
    assert t is None or min(abs(t), abs(t - 0.1)) < 1e-12


def test_single_still_finds_one_kink():
    t = LineSearch(lambda t: 3.0 * np.abs(np.asarray(t) - 0.2)).single(1.0)
    assert t is not None and abs(t - 0.2) < 1e-12


# ------------------------------------------------------------------ finding 6
def test_fidelity_records_the_tolerance_of_equal():
    from relulab.extract import fidelity

    ref = Network([[[2.0, -1.0], [1.0, 1.0]], [[1.0, 3.0]]], [[0.5, -0.25], [1.0]])
    rec = Network(ref.weights, [ref.biases[0], ref.biases[1] + 9e-7])
    f = fidelity(ref, rec, n_samples=200, timeout=5)
    gap = float(np.max(np.abs(ref(np.zeros((1, 2))) - rec(np.zeros((1, 2))))))  # oracle: 9e-7
    d = f.to_dict()
    assert "equivalence_tol" in d and "equivalence_exact" in d
    if f.equivalence == "equal":
        assert not f.equivalence_exact and f.equivalence_tol >= gap
        assert "not exact" in f.message
    same = fidelity(ref, ref, n_samples=50, timeout=5)
    assert same.equivalence == "equal" and same.equivalence_tol is not None


# ------------------------------------------------------------------ finding 10
def _net2():
    return Network([[[1.0, -1.0], [1.0, 1.0]], [[1.0, -1.0]]], [[0.0, -1.0], [0.0]])


def _net3():
    return Network([[[1.0, 1.0, 1.0]], [[1.0]]], [[0.0], [0.0]])


@pytest.mark.parametrize("call, word", [
    (lambda: __import__("relulab.extract", fromlist=["x"]).fidelity(_net2(), _net2(), n_samples=0),
     "n_samples"),
    (lambda: __import__("relulab.extract", fromlist=["x"]).fidelity(_net2(), "x"), "recovered"),
    (lambda: __import__("relulab.extract", fromlist=["x"]).fidelity(_net2(), _net3()), "recovered"),
    (lambda: __import__("relulab.extract", fromlist=["x"]).extract_relu(_net2(), 2, reference=_net3()),
     "reference"),
    (lambda: __import__("relulab.extract", fromlist=["x"]).extract_relu(_net2(), 2, equivalence_timeout=-1),
     "equivalence_timeout"),
])
def test_bad_input_gets_one_clear_error(call, word):
    from relulab.errors import RelulabError

    with pytest.raises(RelulabError) as e:
        call()
    msg = str(e.value)
    assert word in msg and "\n" not in msg


# ------------------------------------------------------------------ findings 5, 8, 9 (GLU)
def test_glu_width_given_too_small_is_not_recovered():
    from relulab.extract import extract_glu, random_glu

    b = random_glu(4, 3, 2, act="relu", seed=3)  # true width 3
    r = extract_glu(b, 4, hidden=2, act="relu", seed=1)
    assert r.block is not None and r.hidden == r.block.hidden
    if r.block.hidden != 2:
        assert r.status == "partial" and "hidden=2" in r.message


@pytest.mark.parametrize("kw, word", [({"d": 1}, "d"), ({"max_planes": 0}, "max_planes"),
                                      ({"time_limit": -1.0}, "time_limit")])
def test_glu_bad_arguments_get_one_clear_error(kw, word):
    from relulab.errors import RelulabError
    from relulab.extract import extract_glu, random_glu

    d = kw.pop("d", 4)
    with pytest.raises(RelulabError) as e:
        extract_glu(random_glu(d, 2, 1, act="relu", seed=0), d, act="relu", seed=1, **kw)
    assert f"{word} " in str(e.value) and str(e.value).startswith("extract_glu:")


def test_glu_time_limit_skips_the_polish_and_says_partial():
    from relulab.extract import extract_glu, random_glu

    b = random_glu(6, 8, 6, act="silu", seed=0)
    f32 = lambda X: b(np.asarray(X, np.float32).astype(np.float64)).astype(np.float32).astype(np.float64)  # noqa: E731
    r = extract_glu(f32, 6, act="silu", seed=0, time_limit=1e-3)
    assert r.stage_cpu.get("polish", 0.0) < 0.5  # no L-BFGS iteration ran (it takes seconds here)
    assert not r.refined and r.time_limited and r.status == "partial" and "time limit" in r.message


def test_glu_polish_reports_a_time_cut():
    from relulab.extract import random_glu
    from relulab.extract.glu_refine import refine

    blk = random_glu(3, 2, 2, act="silu", seed=0)
    start = random_glu(3, 2, 2, act="silu", seed=1)
    X = np.random.default_rng(0).normal(size=(64, 3))
    p = refine(start, X, blk(X), blk(-X), time_limit=1e-9)
    assert p.timed_out and p.status != "converged"


# ------------------------------------------------------------------ finding 7
def _preacts(net, X):
    """Hidden pre-activations of ``net`` at ``X``, layer by layer (a direct forward pass)."""
    out, h = [], X
    for W, b in zip(net.float().weights[:-1], net.float().biases[:-1], strict=True):
        z = h @ np.asarray(W, float).T + np.asarray(b, float)
        out.append(z)
        h = np.maximum(z, 0.0)
    return out


def test_extract_relu_names_reference_neurons_dead_on_the_box():
    import re

    from relulab.extract import extract_relu

    rng = np.random.default_rng(0)
    d = int(rng.integers(1, 4))
    ws = [int(rng.integers(2, 4)) for _ in range(int(rng.integers(1, 4)))]
    sizes = [d, *ws, 1]
    net = Network([rng.normal(size=(b, a)) for a, b in zip(sizes[:-1], sizes[1:], strict=True)],
                  [rng.normal(size=b) for b in sizes[1:]])
    assert net.widths == (3, 2) and d == 3
    r = extract_relu(net, d, seed=0, equivalence_timeout=5)
    far = np.random.default_rng(1).uniform(-100, 100, size=(20000, d))
    assert float(np.max(np.abs(net(far) - r.network(far)))) > 0.1  # differs off the box
    box = np.random.default_rng(2).uniform(-1, 1, size=(20000, d))
    z = _preacts(net, box)
    named = set()
    for note in r.unidentified:
        m = re.match(r"reference neuron (\d+) of layer (\d+) is never active", note)
        if m:
            i, k = int(m.group(1)), int(m.group(2)) - 1
            assert np.all(z[k][:, i] <= 0.0)  # really never active on the box samples
            named.add((k, i))
    assert named == {(1, 0), (1, 1)}  # the whole second layer
    assert sum("only feeds neurons never active" in n for n in r.unidentified) == 3
    assert "not observable" in r.message


def test_an_orientation_queries_cannot_decide_is_reported():
    # three neurons on one hyperplane whose output weights sum to 0: flipping all three
    # changes a constant only.  The extraction was complete and "equal" but 3 off in its
    # parameters, with nothing in `unidentified` (aud_ext5 #2).  The note's neurons,
    # flipped, give the same function (checked here by evaluation), so the claim is true.
    import re

    from relulab.extract import extract_relu

    W1 = np.array([[1.0, 1], [1, 1], [1, 1], [1, -1]])
    net = Network([W1, [[1.0, -2, 1, 0.7]]], [[0, -0.5, 0.5, 0.2], [0.0]])
    r = extract_relu(lambda X: np.asarray(net(X)), 2)
    notes = [n for n in r.unidentified if "is not identifiable from queries" in n]
    assert r.status == "complete" and len(notes) == 1
    idx = [int(v) for v in re.search(r"neurons \[([\d, ]+)\]", notes[0]).group(1).split(",")]
    g = r.network
    U, b, a = g.weights[0].copy(), g.biases[0].copy(), g.weights[1][0]
    U[idx], b[idx] = -U[idx], -b[idx]
    flipped = Network([U, g.weights[1]], [b, g.biases[1] + sum(a[i] * g.biases[0][i] for i in idx)])
    X = np.random.default_rng(0).uniform(-3, 3, (4000, 2))
    assert np.abs(flipped(X) - g(X)).max() <= 1e-9 and np.abs(g(X) - net(X)).max() <= 1e-9
    # and not by a symmetry: the rows are unit vectors, so no positive rescaling or
    # permutation maps the flipped rows onto the recovered ones
    assert not np.allclose(np.sort(U, axis=0), np.sort(g.weights[0], axis=0))
    # independent hyperplanes: the orientation is decided, and nothing is said
    plain = Network([[[1.0, 0.3], [-0.4, 1.0], [0.7, -0.9]], [[1.0, -2.0, 0.5]]], [[0.1, -0.2, 0.3], [0.0]])
    r = extract_relu(lambda X: np.asarray(plain(X)), 2)
    assert r.status == "complete" and not any("is not identifiable" in n for n in r.unidentified)
