"""max_n with two hidden layers (first layer relu(x_i - x_j)), its certificate, the search
that finds it, and the recursive substitution into deeper networks.

Independent checks: exact evaluation of the built networks at random rational points
(every permutation of a vector; 10^4 vectors in integer arithmetic), the certificate on
all n! cones without the symmetry shortcut, a wrong network that must be refused, and
onnxruntime on the exported float64 copy.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from relulab.construct import (
    MAXN_STORED,
    ConstructionError,
    ExactEvaluator,
    PairTerm,
    candidate_terms,
    certify_max_cones,
    deep_capacity,
    deep_layers,
    log6_layers,
    max_n,
    max_n_deep,
    max_n_two_hidden,
    max_pairs_network,
    search_max_pairs,
    stored_max_pairs,
)

STORED = sorted({2, *MAXN_STORED})


def _int_eval(net, X: np.ndarray) -> list[Fraction]:
    """Exact outputs of a bias-free 2-hidden-layer network on integer inputs, vectorised:
    integer layers in int64 (bounds checked), the output layer summed per distinct weight."""
    W1, W2, W3 = (np.asarray(W, dtype=object) for W in net.exact().weights)
    assert all(v == 0 for b in net.exact().biases for v in b)
    d1 = math.lcm(*(Fraction(v).denominator for v in W1.ravel()))
    d2 = math.lcm(*(Fraction(v).denominator for v in W2.ravel()))
    A1 = np.array([[int(v * d1) for v in r] for r in W1], dtype=np.int64)
    A2 = np.array([[int(v * d2) for v in r] for r in W2], dtype=np.int64)
    bound = np.abs(X).max() * np.abs(A1).sum(axis=1).max() * np.abs(A2).sum(axis=1).max()
    assert bound < 2**62  # no int64 overflow below
    H1 = np.maximum(X @ A1.T, 0)
    H2 = np.maximum(H1 @ A2.T, 0)
    out = [Fraction(0)] * len(X)
    w3 = W3[0]
    for w in set(w3.tolist()):
        if w == 0:
            continue
        s = H2[:, np.nonzero(w3 == w)[0]].sum(axis=1)
        assert np.abs(s).max() < 2**62
        out = [o + Fraction(w) * int(v) for o, v in zip(out, s, strict=True)]
    return [o / (d1 * d2) for o in out]


@pytest.mark.parametrize("n", STORED)
def test_two_hidden_layers_every_permutation(n: int) -> None:
    net = max_n_two_hidden(n)
    assert net.n_hidden_layers == 2 and net.is_exact
    rng = np.random.default_rng(n)
    vals = [Fraction(int(a), int(b)) for a, b in zip(rng.integers(-99, 99, n), rng.integers(1, 9, n),
                                                    strict=True)]
    X = np.array(list(itertools.permutations(vals)), dtype=object)
    Y = ExactEvaluator(net)(X)[:, 0] if n <= 5 else None
    if Y is None:  # n = 6: 720 permutations, in integer arithmetic over one denominator
        den = math.lcm(*(v.denominator for v in vals))
        Xi = np.array([[int(v * den) for v in row] for row in X], dtype=np.int64)
        Y = [y / den for y in _int_eval(net, Xi)]
    assert all(y == max(x) for x, y in zip(X, Y, strict=True))


@pytest.mark.parametrize("n", STORED)
def test_two_hidden_layers_ten_thousand_random_rationals(n: int) -> None:
    rng = np.random.default_rng(100 + n)
    den = 2520  # random rationals p/q with q <= 10: integers over 2520 (the network is homogeneous)
    p = rng.integers(-10**4, 10**4, (10_000, n))
    q = rng.integers(1, 11, (10_000, n))
    X = p * (den // q)
    X[:50, 1:] = X[:50, :1]  # ties
    got = _int_eval(max_n_two_hidden(n), X)
    want = X.max(axis=1)
    assert all(g == int(w) for g, w in zip(got, want, strict=True))


@pytest.mark.parametrize("n", STORED)
def test_certified_by_symmetry_and_stored_system_rechecked(n: int) -> None:
    net = max_n_two_hidden(n)
    c = certify_max_cones(net, n)
    assert c.status == "certified" and c.by_symmetry and c.cones_covered == math.factorial(n)
    assert c.widths == net.widths and c.hidden_layers == 2
    s = stored_max_pairs(n)  # every equation of the reduced linear system, exactly
    assert s.status == "found" and s.widths == net.widths


@pytest.mark.parametrize("n", [3, 4])
def test_certificate_on_every_cone_without_symmetry(n: int) -> None:
    c = certify_max_cones(max_n_two_hidden(n), n, use_symmetry=False)
    assert c.status == "certified" and c.cones_checked == math.factorial(n) and not c.by_symmetry


def test_certificate_refuses_wrong_networks() -> None:
    s = stored_max_pairs(5)
    (t0, c0), *rest = s.terms
    bad = max_pairs_network(5, [(t0, c0 * 2), *rest])
    c = certify_max_cones(bad, 5)
    assert c.status == "failed" and c.reason
    # the refusal is right: the wrong network differs from max somewhere
    X = np.array([[Fraction(v) for v in row] for row in
                  np.random.default_rng(1).integers(-9, 9, (200, 5))], dtype=object)
    assert any(y != max(x) for x, y in zip(X, ExactEvaluator(bad)(X)[:, 0], strict=True))
    # the tree for 4 inputs carries x in its first layer (not sign-constant on a cone): no verdict
    assert certify_max_cones(max_n(4), 4).status == "not applicable"
    assert certify_max_cones(max_n(5), 5).status == "not applicable"  # 3 hidden layers
    # a first layer that is not sign-constant on the cones cannot be certified
    net = max_n_two_hidden(3)
    W = [w.copy() for w in net.weights]
    W[0][0, 2] = Fraction(1)
    from relulab import Network
    odd = Network(W, list(net.biases), exact=True)
    r = certify_max_cones(odd, 3, use_symmetry=False)
    assert r.status == "not applicable" and "changes sign" in r.reason


def test_search_regenerates_small_solutions() -> None:
    for n in (3, 4, 5):
        s = search_max_pairs(n)
        assert s.status == "found"
        net = max_pairs_network(n, s)
        assert certify_max_cones(net, n).status == "certified"
        assert net.widths == s.widths
    # a family without the needed orbits has no solution, and the search says so
    only_pairs = [t for t in candidate_terms(1, 4)]
    assert search_max_pairs(5, only_pairs).status == "infeasible"


def test_pair_term_orbit_and_symmetry() -> None:
    t = PairTerm(4, (("m", 0, 1), ("m", 0, 1)), (("m", 2, 3), ("m", 2, 3)))
    # swapping the pairs negates g: the stabilizer is S_2 x S_2, not the wreath product
    assert t.stabilizer_size() == 4 and t.orbit_size(4) == 6 and t.orbit_size(6) == 90
    # the network enumerates the orbit's distinct neurons independently
    assert max_pairs_network(6, [(t, Fraction(1))]).widths[1] == 90 + 2
    assert PairTerm.from_dict(t.to_dict()) == t
    # alphas: one linear form per ordering of the 4 coordinates, sums zero (shift-invariant)
    A = t.alphas()
    assert A.shape == (24, 4) and not A.sum(axis=1).any()


@pytest.mark.parametrize("n,bases", [(7, [3]), (9, None), (10, [5]), (13, [4, 5]), (16, [4]),
                                     (18, [3])])
def test_recursive_substitution(n: int, bases) -> None:
    net = max_n_deep(n, bases=bases)
    assert net.n_hidden_layers == deep_layers(n, bases)
    assert deep_capacity(net.n_hidden_layers - 1, bases) < n <= deep_capacity(net.n_hidden_layers, bases)
    rng = np.random.default_rng(n)
    X = np.array([[Fraction(int(a), int(b)) for a, b in zip(rng.integers(-500, 500, n),
                                                           rng.integers(1, 20, n), strict=True)]
                  for _ in range(6)], dtype=object)
    X[0, :] = X[0, 0]  # all equal
    Y = ExactEvaluator(net)(X)[:, 0]
    assert all(y == max(x) for x, y in zip(X, Y, strict=True))


def test_layer_formulas() -> None:
    # log6: the least h with 2 * 6^(h-1) >= n, against the real logarithm away from powers
    for n in range(2, 500):
        if n not in (2, 12, 72, 432):
            assert log6_layers(n) == math.ceil(math.log(n / 2) / math.log(6)) + 1
    assert [log6_layers(n) for n in (12, 13, 72, 73)] == [2, 3, 3, 4]
    # a base of 12 inputs would give exactly the published capacity 2 * 6^(h-1)
    caps = [2]
    for _ in range(4):
        caps.append((caps[-1] + 1) // 2 + 11 * (caps[-1] // 2))
    assert caps == [2 * 6**h for h in range(5)]
    # the binary tree is the base-4 (or base-2) case
    assert [deep_capacity(h, [2, 4]) for h in range(1, 6)] == [2, 4, 8, 16, 32]
    assert max_n_deep(8, bases=[4]).n_hidden_layers == max_n(8).n_hidden_layers == 3
    # with the stored bases (n0 <= 6) the depth is ceil(log_3(n/2)) + 1
    for n in range(2, 200):
        assert deep_layers(n, [6]) == (1 if n <= 2 else math.ceil(math.log(n / 2) / math.log(3) - 1e-9) + 1)


def test_padding_and_bad_input() -> None:
    net = max_n_deep(5, hidden_layers=4)
    assert net.n_hidden_layers == 4 and net([1, 9, 3, Fraction(19, 2), 0])[0] == Fraction(19, 2)
    for bad in (1, 0, -3):
        with pytest.raises(ConstructionError, match="n must be"):
            max_n_two_hidden(bad)
        with pytest.raises(ConstructionError, match="n must be"):
            max_n_deep(bad)
    with pytest.raises(ConstructionError, match="no stored two-hidden-layer solution for n = 40"):
        max_n_two_hidden(40)
    with pytest.raises(ConstructionError, match="2 hidden layers cannot compute max of 12"):
        max_n_deep(12, hidden_layers=2)
    with pytest.raises(ConstructionError, match="no two-hidden-layer base"):
        max_n_deep(12, bases=[40])
    with pytest.raises(ConstructionError, match="need a network R\\^5"):
        certify_max_cones(max_n_two_hidden(4), 5)


def test_onnx_export_agrees_with_onnxruntime(tmp_path) -> None:
    ort = pytest.importorskip("onnxruntime")
    from relulab.io import save_model

    for net, n in ((max_n_two_hidden(6), 6), (max_n_deep(12, bases=[4, 5]), 12)):
        path = tmp_path / f"max{n}.onnx"
        save_model(net, str(path))
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        X = np.random.default_rng(n).normal(size=(500, n))
        assert sess.get_inputs()[0].type == "tensor(double)"
        got = sess.run(None, {sess.get_inputs()[0].name: X})[0][:, 0]
        ref = net.float()(X)[:, 0]
        assert np.allclose(got, ref, rtol=1e-12, atol=1e-12)
        assert np.allclose(ref, X.max(axis=1), rtol=1e-12, atol=1e-12)


def test_lattice_cpwl_with_the_recursive_max() -> None:
    from relulab.construct import max_of_mins, max_of_mins_deep

    rng = np.random.default_rng(7)
    for k, q, d in [(3, 2, 1), (6, 5, 2), (5, 3, 3)]:
        A = rng.integers(-5, 6, (k, d)).tolist()
        c = rng.integers(-5, 6, k).tolist()
        groups = [sorted(rng.choice(k, size=int(rng.integers(1, k + 1)), replace=False).tolist())
                  for _ in range(q)]
        tree, deep = max_of_mins(A, c, groups), max_of_mins_deep(A, c, groups, bases=[3, 4, 5])
        smax = max(len(g) for g in groups)
        assert deep.n_hidden_layers <= (deep_layers(smax) if smax > 1 else 0) + deep_layers(q)
        assert deep.n_hidden_layers <= tree.n_hidden_layers
        X = np.array([[Fraction(int(v), 7) for v in r] for r in rng.integers(-60, 60, (60, d))],
                     dtype=object)
        want = [max(min(sum(Fraction(A[j][i]) * x[i] for i in range(d)) + c[j] for j in g)
                    for g in groups) for x in X]
        assert list(ExactEvaluator(deep)(X)[:, 0]) == want
        assert list(ExactEvaluator(tree)(X)[:, 0]) == want
    with pytest.raises(ConstructionError, match="group 0 names component 5"):
        max_of_mins_deep([[1], [2]], [0, 0], [[5]])


def test_seven_inputs_stored_solution() -> None:
    from relulab.construct import MAXN_LARGE

    assert 7 in MAXN_LARGE
    s = stored_max_pairs(7)  # every equation of the reduced system, exactly
    assert s.status == "found" and s.widths == (44, 142_137)
    with pytest.raises(ConstructionError, match="142137 second-layer neurons"):
        max_n_two_hidden(7)
    # building its float64 network and certify_max_pairs take about a minute each:
    # experiments/maxn.py --extended and `relulab construct max --n 7 --hidden-layers 2` run them


def test_integer_symmetry_proof_agrees_with_the_structural_one() -> None:
    from relulab.construct import is_symmetric
    from relulab.construct.maxn_cert import int_layers, is_symmetric_int

    nets = [(max_n_two_hidden(n), n) for n in (3, 4, 5)] + [(max_n(4), 4), (max_n(3), 3)]
    s = stored_max_pairs(4)
    (t0, c0), *rest = s.terms
    nets.append((max_pairs_network(4, [(PairTerm(4, (("m", 0, 1),), (("x", 2),)), c0), *rest]), 4))
    from relulab import Network
    full = max_n_two_hidden(4)
    W1, W2, W3 = full.weights
    nets.append((Network([W1, W2[1:], W3[:, 1:]], [full.biases[0], full.biases[1][1:], full.biases[2]],
                         exact=True), 4))  # one neuron of an orbit dropped: not symmetric
    answers = []
    for net, n in nets:
        if net.n_hidden_layers != 2:
            continue
        W1, W2, W3 = net.weights
        A1, _, A2, _, w = int_layers(W1, W2, W3[0])
        answers.append(is_symmetric_int(A1, A2, w, n))
        assert answers[-1] == is_symmetric(net, n)
    assert True in answers and False in answers


def test_cli_max_hidden_layers(tmp_path, capsys) -> None:
    import json

    from conftest import run_cli

    out = tmp_path / "max5.onnx"
    code, text, err = run_cli(capsys, "construct", "max", "--n", "5", "--hidden-layers", "2",
                              "-o", str(out), "--json")
    assert code == 0, err
    d = json.loads(text)
    assert d["hidden_layers"] == 2 and d["hidden_widths"] == [22, 77] and out.exists()
    assert d["certificate"]["status"] == "certified" and d["published_hidden_layers"] == 2
    code, text, err = run_cli(capsys, "construct", "max", "--n", "8", "--hidden-layers", "4", "--json")
    d = json.loads(text)
    assert code == 0 and d["hidden_layers"] == 4 and d["certificate"]["status"] == "certified"
    for args, msg in [(["--n", "12", "--hidden-layers", "2"], "--hidden-layers 2 is too few for --n 12"),
                      (["--n", "1", "--hidden-layers", "2"], "--n must be >= 2"),
                      (["--n", "4", "--hidden-layers", "0"], "--hidden-layers must be >= 1")]:
        code, _, err = run_cli(capsys, "construct", "max", *args)
        assert code == 1 and msg in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli(capsys, "construct", "min", "--n", "4", "--hidden-layers", "2")
    assert code == 1 and "applies to max only" in err


def test_search_max_pairs_time_limit_covers_building_the_candidates(monkeypatch):
    # building the n = 8 family takes seconds: a limit spent there answers "unknown" (it
    # used to build the whole family first and answer "infeasible" after 5 s at 0.3 s)
    import importlib

    M = importlib.import_module("relulab.construct.maxn")
    clock = iter(range(10**6))
    # the time limit is a relulab.limits.Deadline: its clock is the one to drive
    monkeypatch.setattr(importlib.import_module("relulab.limits"), "time", type("T", (), {"perf_counter": staticmethod(lambda: next(clock) * 0.01)}))
    s = M.search_max_pairs(8, time_limit=0.3)
    assert s.status == "unknown" and s.terms == ()
