"""Path-lifting and path-norms: brute-force enumeration, symmetry invariance, one-pass norms."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from conftest import random_network
from hypothesis import given, settings
from hypothesis import strategies as st

from relulab import Network
from relulab.errors import RelulabError
from relulab.params import n_paths, path_lifting, path_norm, path_norms


def brute_force_paths(net: Network) -> dict[tuple, object]:
    """Every path by plain loops: key (kind, source, bias layer, neurons, output)."""
    dims = (net.input_dim, *net.widths, net.output_dim)
    L = net.depth
    H = L - 1
    Ws, bs = net.weights, net.biases
    out: dict[tuple, object] = {}
    for i in range(dims[0]):
        for js in itertools.product(*[range(n) for n in dims[1:]]):
            v = Ws[0][js[0], i]
            for t in range(1, L):
                v = v * Ws[t][js[t], js[t - 1]]
            out[("input", i, 0, tuple(js[:-1]), js[-1])] = v
    for k in range(1, L + 1):
        for js in itertools.product(*[range(n) for n in dims[k:]]):
            b = bs[k - 1][js[0]]
            if k == L and net.skip is not None:
                b = b + net.skip[1][js[0]]
            v = b
            for t in range(k, L):
                v = v * Ws[t][js[t - k + 1], js[t - k]]
            neurons = (-1,) * (k - 1) + tuple(js[:-1])
            out[("bias", -1, k, neurons, js[-1])] = v
    if net.skip is not None:
        for i in range(dims[0]):
            for o in range(dims[-1]):
                out[("skip", i, 0, (-1,) * H, o)] = net.skip[0][o, i]
    return out


def keyed(pl) -> dict[tuple, object]:
    kinds = {0: "input", 1: "bias", 2: "skip"}
    return {
        (
            kinds[int(pl.kind[p])],
            int(pl.source[p]),
            int(pl.layer[p]),
            tuple(int(j) for j in pl.neurons[p]),
            int(pl.output[p]),
        ): pl.values[p]
        for p in range(len(pl))
    }


ARCHS = [[1, 1], [2, 3], [2, 3, 1], [3, 2, 2], [2, 3, 2, 2], [1, 2, 3, 2, 1]]


@pytest.mark.parametrize("dims", ARCHS)
@pytest.mark.parametrize("skip", [False, True])
def test_path_lifting_matches_brute_force_enumeration(rng, dims, skip):
    net = random_network(rng, dims, skip=skip)
    pl = path_lifting(net)
    bf = brute_force_paths(net)
    assert len(pl) == len(bf) == n_paths(net)
    got = keyed(pl)
    assert got.keys() == bf.keys()
    for key, v in bf.items():
        assert got[key] == pytest.approx(v, rel=1e-12, abs=1e-15)
    assert len(set(pl.names())) == len(pl)


def test_path_lifting_exact_mode_is_exact(rng):
    net = random_network(rng, [2, 3, 2, 1], skip=True).exact()
    pl = path_lifting(net)
    bf = brute_force_paths(net)
    got = keyed(pl)
    assert all(isinstance(v, Fraction) for v in pl.values)
    assert all(got[k] == v for k, v in bf.items())


def test_path_names_follow_the_convention():
    net = Network([[[1.0], [2.0]], [[3.0, 4.0]]], [[5.0, 6.0], [7.0]], skip=([[8.0]], [[9.0]][0]))
    pl = path_lifting(net)
    names = dict(zip(pl.names(), pl.values.tolist(), strict=True))
    assert names == {
        "x0 > h1[0] > y0": 3.0,
        "x0 > h1[1] > y0": 8.0,
        "1 > h1[0] > y0": 15.0,
        "1 > h1[1] > y0": 24.0,
        "1 > y0": 16.0,  # output bias 7 and skip offset 9 are one bias edge
        "x0 > y0 (skip)": 8.0,
    }


def _rescale(net: Network, scales: list[np.ndarray]) -> Network:
    Ws = [np.array(W, dtype=object if net.is_exact else float) for W in net.weights]
    bs = [np.array(b, dtype=object if net.is_exact else float) for b in net.biases]
    for k, s in enumerate(scales):
        Ws[k] = Ws[k] * s[:, None]
        bs[k] = bs[k] * s
        Ws[k + 1] = Ws[k + 1] / s[None, :]
    return Network(Ws, bs, net.skip, exact=net.is_exact)


def _permute(net: Network, perms: list[np.ndarray]) -> Network:
    Ws = [np.array(W) for W in net.weights]
    bs = [np.array(b) for b in net.biases]
    for k, p in enumerate(perms):
        Ws[k] = Ws[k][p]
        bs[k] = bs[k][p]
        Ws[k + 1] = Ws[k + 1][:, p]
    return Network(Ws, bs, net.skip, exact=net.is_exact)


@settings(max_examples=25, deadline=None)
@given(
    dims=st.lists(st.integers(1, 3), min_size=3, max_size=5),
    seed=st.integers(0, 2**31 - 1),
    skip=st.booleans(),
)
def test_path_lifting_invariant_under_positive_rescaling(dims, seed, skip):
    rng = np.random.default_rng(seed)
    net = random_network(rng, dims, skip=skip).exact()
    scales = []
    for n in dims[1:-1]:
        num = rng.integers(1, 50, size=n)
        den = rng.integers(1, 50, size=n)
        scales.append(
            np.array(
                [Fraction(int(a), int(b)) for a, b in zip(num, den, strict=True)], dtype=object
            )
        )
    net2 = _rescale(net, scales)
    # the rescaling really changed the parameters (somewhere) unless every scale is 1
    changed = any(not np.all(a == b) for a, b in zip(net2.weights, net.weights, strict=True))
    assert changed or all(np.all(s == 1) for s in scales)
    # exact equality of every coordinate
    assert list(path_lifting(net2).values) == list(path_lifting(net).values)
    # and in floating point, with float scales
    netf = net.float()
    fscales = [np.exp(rng.normal(size=n)) for n in dims[1:-1]]
    np.testing.assert_allclose(
        path_lifting(_rescale(netf, fscales)).values.astype(float),
        path_lifting(netf).values.astype(float),
        rtol=1e-10,
        atol=1e-12,
    )


@settings(max_examples=25, deadline=None)
@given(
    dims=st.lists(st.integers(1, 3), min_size=3, max_size=5),
    seed=st.integers(0, 2**31 - 1),
)
def test_path_lifting_permutes_with_hidden_neurons(dims, seed):
    rng = np.random.default_rng(seed)
    net = random_network(rng, dims).exact()
    perms = [rng.permutation(n) for n in dims[1:-1]]
    pl, pl2 = path_lifting(net), path_lifting(_permute(net, perms))
    # new neuron i of layer k is old neuron perms[k][i]: rename and compare exactly
    renamed = {}
    for p in range(len(pl2)):
        neu = tuple(int(perms[k][j]) if j >= 0 else -1 for k, j in enumerate(pl2.neurons[p]))
        renamed[
            (int(pl2.kind[p]), int(pl2.source[p]), int(pl2.layer[p]), neu, int(pl2.output[p]))
        ] = pl2.values[p]
    orig = {
        (
            int(pl.kind[p]),
            int(pl.source[p]),
            int(pl.layer[p]),
            tuple(int(j) for j in pl.neurons[p]),
            int(pl.output[p]),
        ): pl.values[p]
        for p in range(len(pl))
    }
    assert renamed == orig
    assert sorted(pl.values) == sorted(pl2.values)


QS = [0, 0.5, 1, 1.5, 2, 3, math.inf]


@pytest.mark.parametrize("dims", ARCHS)
@pytest.mark.parametrize("skip", [False, True])
def test_one_pass_path_norms_equal_norms_of_explicit_vector(rng, dims, skip):
    net = random_network(rng, dims, skip=skip)
    v = np.abs(path_lifting(net).values.astype(float))
    for q in QS:
        got = path_norm(net, q)
        if q == 0:
            assert got == np.count_nonzero(v)
        elif math.isinf(q):
            assert got == pytest.approx(v.max(), rel=1e-13)
        else:
            assert got == pytest.approx(np.sum(v**q) ** (1 / q), rel=1e-12)


def test_exact_path_norms_are_exact(rng):
    net = random_network(rng, [2, 3, 3, 2], skip=True).exact()
    v = [abs(x) for x in path_lifting(net).values]
    assert path_norm(net, 1) == sum(v)
    assert path_norm(net, "inf") == max(v)
    assert path_norm(net, 0) == sum(1 for x in v if x != 0)
    assert path_norm(net, 2) == pytest.approx(float(sum(x * x for x in v)) ** 0.5, rel=1e-14)


def test_path_count_with_zero_weights(rng):
    net = random_network(rng, [3, 4, 4, 2])
    W = np.array(net.weights[1])
    W[0, :] = 0.0  # kills every path through h2[0]
    b = np.array(net.biases[0])
    b[1] = 0.0
    net = Network([net.weights[0], W, net.weights[2]], [b, net.biases[1], net.biases[2]])
    pl = path_lifting(net)
    assert path_norm(net, 0) == int(np.count_nonzero(pl.values)) < len(pl)


def test_path_norm_of_huge_network_without_listing_paths():
    # all weights and biases 1: every path has value 1, count them in closed form
    d, widths, m = 5, [100] * 6, 3
    dims = [d, *widths, m]
    net = Network(
        [np.ones((dims[k + 1], dims[k])) for k in range(len(dims) - 1)],
        [np.ones(dims[k + 1]) for k in range(len(dims) - 1)],
    )
    count = sum(math.prod(dims[k:]) for k in range(1, len(dims))) + math.prod(dims)
    assert count > 10**12 and n_paths(net) == count
    assert path_norm(net, 0) == count
    assert path_norm(net, 1) == float(count)
    assert path_norm(net, 2) == pytest.approx(math.sqrt(count), rel=1e-12)
    assert path_norm(net, "inf") == 1.0
    with pytest.raises(RelulabError, match="max_paths"):
        path_lifting(net)


def test_path_norm_scales_homogeneously(rng):
    # scaling the last layer by c scales every path by c
    net = random_network(rng, [3, 4, 2])
    c = 2.5
    net2 = Network(
        net.weights[:-1] + (net.weights[-1] * c,), net.biases[:-1] + (net.biases[-1] * c,)
    )
    for q in (1, 2, math.inf):
        assert path_norm(net2, q) == pytest.approx(c * path_norm(net, q), rel=1e-12)


def test_path_norms_dict_and_bad_q(rng):
    net = random_network(rng, [2, 2, 1])
    d = path_norms(net, (1, 2, "inf", 0))
    assert set(d) == {"1", "2", "inf", "0"}
    with pytest.raises(RelulabError):
        path_norm(net, -1)
    with pytest.raises(RelulabError):
        path_norm(net, "two")


@pytest.mark.parametrize("w", [1e3, 1e-3])
def test_path_norm_survives_overflow_and_underflow(w):
    # 2 * 3^40 paths of value w^41 (no biases): far outside float64 for q >= 1
    dims = [2] + [3] * 40 + [1]
    net = Network(
        [np.full((dims[k + 1], dims[k]), w) for k in range(41)],
        [np.zeros(dims[k + 1]) for k in range(41)],
    )
    count = 2 * 3**40
    log_path = 41 * math.log(w)
    for q in (1, 2, 200):
        assert math.log(path_norm(net, q)) == pytest.approx(
            math.log(count) / q + log_path, rel=1e-12
        )
    assert math.log(path_norm(net, "inf")) == pytest.approx(log_path, rel=1e-12)
    assert path_norm(net, 0) == count


@pytest.mark.parametrize("q", [1, 2, 3, "inf"])
def test_path_norm_keeps_a_path_whose_partial_product_underflows(q):
    """Two paths of product 1, one through 1e-110 * 1e-110 (below float64's range) before
    1e110 * 1e110: the direct pass loses it although the final sum looks normal."""
    Ws = [[[1e-110], [1.0]], [[1e-110, 0.0], [0.0, 1.0]], [[1e110, 0.0], [0.0, 1.0]], [[1e110, 1.0]]]
    net = Network(Ws, [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0]])
    want = path_lifting(net).norm(q if q != "inf" else math.inf)
    assert path_norm(net, q) == pytest.approx(want, rel=1e-12)
    assert path_norm(net, q) == pytest.approx(1.0 if q == "inf" else 2.0 ** (1 / q), rel=1e-12)


def test_log_domain_pass_agrees_with_direct_pass(rng):
    from relulab.params.pathnorm import _net_pass_log

    for skip in (False, True):
        net = random_network(rng, [3, 4, 4, 2], skip=skip)
        for q in (0.5, 1, 2, 7, math.inf):
            lv = _net_pass_log(net, q)
            assert math.exp(lv if math.isinf(q) else lv / q) == pytest.approx(
                path_norm(net, q), rel=1e-12
            )


def test_exact_path_norm_past_float64_and_tiny_paths_counted():
    # 1e80 weights: the q = 2 sum (7.3e321) is beyond float64 but its root is not; the
    # exact network raised OverflowError.  Brute force: paths 3e160 and 8e160
    from relulab.params import path_norm

    net = Network([[[1e80], [2e80]], [[3e80, 4e80]]], [[0.0, 0.0], [0.0]])
    exact = net.exact()
    w = [[Fraction(v) for v in row] for row in net.weights[0]], [Fraction(v) for v in net.weights[1][0]]
    truth = sum((w[0][i][0] * w[1][i]) ** 2 for i in range(2))
    got = path_norm(exact, 2)
    assert math.isclose(got, float(math.isqrt(int(truth))), rel_tol=1e-13)
    # 1e-200 weights: both paths' products (1e-400, 2e-400) underflow to 0.0 in float64;
    # norm(0) counts the paths whose weights are all nonzero, as path_norm(net, 0) does
    tiny = Network([[[1e-200], [2e-200]], [[1e-200, 1e-200]]], [[0.0, 0.0], [0.0]])
    assert path_lifting(tiny).norm(0) == path_norm(tiny, 0) == 2


def test_a_path_norm_beyond_float64_is_inf_for_every_q_without_warnings():
    # weights 1e300: the one input path is 1e600. Float q = 0.5 and exact q = 2 raised a
    # bare OverflowError, float q = 1 leaked a RuntimeWarning
    import math
    import warnings
    from fractions import Fraction

    net = Network([[[1e300]], [[1e300]]], [[0.0], [0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for q in (0.5, 1, 2, 3, "inf", 1000):
            assert path_norm(net, q) == math.inf
            v = path_norm(net.exact(), q)
            if q in (1, "inf"):  # exact: the Fraction itself
                assert v == Fraction(1e300) ** 2
            else:
                assert v == math.inf
        assert path_norm(net, 0) == 1  # one path with a nonzero product
    small = Network([[[1e150]], [[1e150]]], [[0.0], [0.0]])  # 1e300: still finite
    assert path_norm(small, 0.5) == pytest.approx(1e300, rel=1e-12) == path_norm(small, 2)


@pytest.mark.parametrize("q", [1, 2, 3, 0.5, "inf", 0])
def test_lifting_norm_of_huge_exact_values_follows_path_norm(q):
    """Exact weights 10^200 give paths of 10^400 (beyond float64): the lifting's norm is
    the exact Fraction for q = 1 and inf, inf for the others (the norm itself is beyond
    float64), and the count for q = 0 -- as path_norm says; it raised OverflowError."""
    big = Fraction(10) ** 200
    net = Network([[[big], [Fraction(1)]], [[big, Fraction(2)]]], [[Fraction(0)] * 2, [Fraction(0)]])
    got = path_lifting(net).norm(q)
    want = {1: big**2 + 2, "inf": big**2, 0: 2}.get(q, math.inf)
    assert got == want == path_norm(net, q)
    assert type(got) is type(path_norm(net, q))


@pytest.mark.parametrize("q", [2, 4, 8])
def test_lifting_norm_where_the_powers_overflow_but_the_norm_does_not(q):
    """Paths 10^200 and 2: |10^200|^q overflows float64 for q >= 2, the q-norm is 10^200
    (to the last digit: 2^q is far below its ulp); it read inf.  Exact values also get a
    float norm that matches the exact root."""
    net = Network([[[1e100], [1.0]], [[1e100, 2.0]]], [[0.0, 0.0], [0.0]])
    assert path_lifting(net).norm(q) == 1e200
    exact = Network([[[Fraction(3, 7)], [Fraction(1)]], [[Fraction(5), Fraction(2)]]],
                    [[Fraction(0)] * 2, [Fraction(1, 3)]])
    vals = [Fraction(15, 7), Fraction(2), Fraction(1, 3)]
    assert path_lifting(exact).norm(q) == pytest.approx(float(sum(v**q for v in vals)) ** (1 / q), rel=1e-15)
