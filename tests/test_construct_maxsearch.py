"""max_5 with two hidden layers: the stored network, its certificate, and the search."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from relulab.construct import (
    MAX5_SOLUTION,
    ExactEvaluator,
    certify_max,
    is_symmetric,
    max5_two_hidden,
    max6_two_hidden,
    max_n,
    max_two_hidden_from_terms,
    search_max_two_hidden,
)


def test_max5_two_hidden_layers_certified() -> None:
    net = max5_two_hidden()
    assert net.is_exact and net.n_hidden_layers == 2  # the binary tree needs 3
    cert = certify_max(net, 5)
    assert cert.ok and cert.n_cones == 120 and cert.n_points > 1000


def test_max5_random_points_every_ordering() -> None:
    # independent of the certificate's argument: random rationals in each ordering cone
    net = max5_two_hidden()
    rng = np.random.default_rng(0)
    rows = []
    for perm in itertools.permutations(range(5)):
        vals = sorted({Fraction(int(a), int(b)) for a, b in
                       zip(rng.integers(-99, 99, 12), rng.integers(1, 13, 12), strict=True)})[:5]
        row = [Fraction(0)] * 5
        for rank, coord in enumerate(perm):
            row[coord] = vals[rank]
        rows.append(row)
    X = np.array(rows, dtype=object)
    Y = ExactEvaluator(net)(X)[:, 0]
    assert all(y == max(x) for x, y in zip(X, Y, strict=True))
    # and the float64 copy agrees to rounding
    Xf = rng.normal(size=(400, 5))
    assert np.allclose(net.float()(Xf)[:, 0], Xf.max(axis=1), atol=1e-12)


def test_max6_two_hidden_layers_certified() -> None:
    net = max6_two_hidden()
    assert net.n_hidden_layers == 2  # the binary tree needs ceil(log2 6) = 3
    cert = certify_max(net, 6)
    assert cert.ok and cert.by_symmetry
    rng = np.random.default_rng(6)
    X = np.array([[Fraction(int(v), 9) for v in row] for row in rng.integers(-90, 90, (60, 6))],
                 dtype=object)
    assert all(y == max(x) for x, y in zip(X, ExactEvaluator(net)(X)[:, 0], strict=True))


def test_symmetric_network_and_symmetry_proof() -> None:
    lean = max5_two_hidden()
    sym = max_two_hidden_from_terms(5, list(MAX5_SOLUTION), symmetric=True)
    assert is_symmetric(sym, 5) and not is_symmetric(max_n(5), 5)
    cert = certify_max(sym, 5)
    assert cert.ok and cert.by_symmetry
    # the lean and the symmetric network compute the same function
    X = np.array([[Fraction(int(v), 7) for v in row] for row in
                  np.random.default_rng(3).integers(-50, 50, (200, 5))], dtype=object)
    assert np.all(ExactEvaluator(lean)(X) == ExactEvaluator(sym)(X))
    # a symmetric but wrong network is caught in the one cone checked
    z1, z2, c = MAX5_SOLUTION[-1]
    bad = max_two_hidden_from_terms(5, [*MAX5_SOLUTION[:-1], (z1, z2, c * 2)], symmetric=True)
    assert is_symmetric(bad, 5) and not certify_max(bad, 5).ok


def test_certificate_rejects_wrong_networks() -> None:
    bad_terms = list(MAX5_SOLUTION)
    z1, z2, c = bad_terms[0]
    bad_terms[0] = (z1, z2, c + Fraction(1, 1000))
    cert = certify_max(max_two_hidden_from_terms(5, bad_terms), 5)
    assert not cert.ok and cert.first_failure is not None
    assert not certify_max(max_n(4) * Fraction(1, 2) + max_n(4) * Fraction(1, 3), 4).ok
    assert certify_max(max_n(5), 5).ok


def test_search_small_n_and_reproduce_n5() -> None:
    for n in (3, 4):
        r = search_max_two_hidden(n, n_points=200)
        assert r.found and r.network.n_hidden_layers == 2 and r.certificate.ok
    r = search_max_two_hidden(5)
    assert r.found and r.certificate.ok and r.network.n_hidden_layers == 2
    assert r.n_candidate_orbits == 101


@pytest.mark.parametrize("n", [3, 4])
def test_certificate_agrees_with_tree(n: int) -> None:
    assert certify_max(max_n(n), n).ok


def _with_extra_neuron(net, first_rows, first_bias, second_row_tail, second_bias):
    """``net`` (two hidden layers) plus first-layer neurons and one second-layer neuron
    reading them, added to the output with weight 1."""
    from relulab import Network

    W1, W2, W3 = [np.array(W, dtype=object) for W in net.weights]
    b1, b2, b3 = [np.array(b, dtype=object) for b in net.biases]
    k = len(first_rows)
    W1x = np.vstack([W1, np.array(first_rows, dtype=object)])
    b1x = np.concatenate([b1, np.array(first_bias, dtype=object)])
    W2x = np.full((W2.shape[0] + 1, W1x.shape[0]), Fraction(0), dtype=object)
    W2x[:W2.shape[0], :W2.shape[1]] = W2
    W2x[-1, -k:] = second_row_tail
    b2x = np.concatenate([b2, [Fraction(second_bias)]])
    W3x = np.hstack([W3, [[Fraction(1)]]])
    return Network([W1x, W2x, W3x], [b1x, b2x, b3], exact=True)


def test_certify_max_verifies_its_assumption_before_calling_a_network_max():
    # it checked values at the arrangement's vertices only and assumed every bend lies on
    # the arrangement: a network off max by 1/4 (a biased bump between the vertices) and
    # one off by 11/4 at (15/8, 16/3, -10) (a bias-free wedge inside a cell) read ok=True
    from relulab.construct import ExactEvaluator, certify_max, max_n, max_n_two_hidden

    F = Fraction
    base = max_n_two_hidden(3)
    bump = _with_extra_neuron(base, [[1, -1, 0], [-1, 1, 0]], [F(-1, 2), F(1, 2)], [-1, -1], F(1, 4))
    l1, l2 = [7, -5, -2], [-6, 5, 1]
    wedge = _with_extra_neuron(base, [l1, [-v for v in l1], [a - b for a, b in zip(l1, l2, strict=True)]],
                               [0, 0, 0], [1, -1, -1], 0)
    for bad, x in ((bump, [F(1, 2), F(0), F(-5)]), (wedge, [F(15, 8), F(16, 3), F(-10)])):
        y = ExactEvaluator(bad)(np.array([x], dtype=object))[0, 0]
        assert y != max(x)  # independently: not max
        c = certify_max(bad, 3)
        assert not c.ok and c.reason and c.first_failure is None
    assert "bias-free" in certify_max(bump, 3).reason
    for good, n in ((base, 3), (max_n(4), 4), (max_n(5), 5)):  # carried values are no bends
        c = certify_max(good, n)
        assert c.ok and c.reason is None


@pytest.mark.parametrize("scale", [1, 2**70])       # int64, and Python integers past 2^62
def test_the_arrangement_check_in_integers_still_sees_a_bend_off_it(scale) -> None:
    # the check runs on each layer times the lcm of its denominators (a positive multiple:
    # the same signs and zeros), in int64 where it fits; Fraction arithmetic took 100 s of
    # the 103 s certificate. A 1e-6 change of one second-layer weight bends off the
    # arrangement and must be seen; 2^70 in the first layer, undone in the last, forces
    # Python integers and changes nothing
    from relulab import Network
    from relulab.construct.maxsearch import _integer_layers

    net = max5_two_hidden()
    Ws = [np.array(W, dtype=object) for W in net.weights]
    Ws[0], Ws[2] = Ws[0] * scale, Ws[2] / Fraction(scale)
    assert _integer_layers(Ws, 3)[1] == (scale > 1)
    scaled = Network(Ws, net.biases, exact=True)
    assert scaled.exact()(np.array([[3, -1, 2, 7, 5]]))[0, 0] == 7
    assert certify_max(scaled, 5).ok
    Ws[1] = Ws[1].copy()
    Ws[1][3, 5] += Fraction(1, 10**6)
    cert = certify_max(Network(Ws, net.biases, exact=True), 5)
    assert not cert.ok and "changes sign inside a cell" in cert.reason
