"""Substitution graphs: extraction, construction, the local operations, normal forms and
derivations, checked exactly (rational forward passes, region-by-region comparison and
relulab.symmetry's equivalence check)."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

from relulab import Box, Network
from relulab.io.nnet import NNetModel
from relulab.logic import (
    ExtractionError,
    GraphError,
    RewriteError,
    collapse_layer,
    derive,
    equal_on_cube,
    evaluate,
    expand_layer,
    node_rewrite,
    normal_form,
    parse,
    replay,
    simplify,
    to_formula,
    to_network,
)
from relulab.symmetry import equivalent, random_symmetry


def random_net(rng: np.random.Generator, kind: str, d: int, widths: list[int]) -> Network:
    dims = [d, *widths, 1]
    Ws, bs = [], []
    for a, b in zip(dims[:-1], dims[1:], strict=False):
        if kind == "int":
            Ws.append(rng.integers(-2, 3, (b, a)))
            bs.append(rng.integers(-1, 2, b))
        elif kind == "rat":
            Ws.append(np.array([[F(int(rng.integers(-6, 7)), int(rng.integers(1, 5))) for _ in range(a)]
                                for _ in range(b)], dtype=object))
            bs.append(np.array([F(int(rng.integers(-3, 4)), int(rng.integers(1, 5))) for _ in range(b)],
                               dtype=object))
        else:
            Ws.append(rng.normal(size=(b, a)))
            bs.append(rng.normal(size=b) * 0.5)
    return Network(Ws, bs, exact=kind != "real")


def rational_points(rng: np.random.Generator, d: int, n: int) -> list[list[F]]:
    return [[F(int(v), 9) for v in rng.integers(0, 10, d)] for _ in range(n)]


@pytest.mark.parametrize("kind", ["int", "rat", "real"])
def test_round_trip_is_exactly_the_same_function(kind):
    rng = np.random.default_rng({"int": 1, "rat": 2, "real": 3}[kind])
    for _ in range(12):
        d = int(rng.integers(1, 4))
        widths = [int(rng.integers(1, 5)) for _ in range(int(rng.integers(1, 3)))]
        net = random_net(rng, kind, d, widths)
        g = to_formula(net)
        assert g.algebra == {"int": "MV", "rat": "divisible MV", "real": "Riesz MV"}[kind] or g.n_nodes <= 2
        back = to_network(g)
        ex = net.exact()
        # exact forward passes: network, graph and rebuilt network agree
        for p in rational_points(rng, d, 6):
            v = ex(np.array(p, dtype=object))[0]
            assert g.evaluate(p)[0] == v == back(np.array(p, dtype=object))[0]
            if g.widths[-1] == 1:
                scale, off = g.readout[0][0], g.offset[0]
                assert off + scale * evaluate(g.formula(0), p) == v
        r = equal_on_cube(ex, back)
        assert r.status == "equal" and r.exact


def test_round_trip_checked_by_the_symmetry_equivalence():
    rng = np.random.default_rng(5)
    for _ in range(4):
        net = random_net(rng, "rat", 2, [3, 2])
        back = to_network(to_formula(net, method="rescale"), keep_layers=True)
        r = equivalent(net, back, Box([0, 0], [1, 1]), timeout=60)
        # the rescale construction gives back a rescaled copy: identical exact normal forms
        assert r.status == "equal" and r.method == "canonical" and r.exact


def test_integer_networks_stay_in_mv_with_the_staircase():
    net = Network([[[2, -1], [1, 1]], [[1, -2]]], [[0, -1], [1]]).exact()
    g = to_formula(net, method="staircase")
    assert g.algebra == "MV" and g.method == "staircase"
    assert all(v.denominator == 1 for row in g.readout for v in row)
    assert equal_on_cube(to_network(g), net).status == "equal"
    with pytest.raises(ExtractionError, match="integer"):
        to_formula(Network([[[0.5]], [[1.0]]], [[0.0], [0.0]]), method="staircase")


def test_a_stated_domain_is_mapped_onto_the_cube():
    net = Network([[[1.0, -2.0], [0.5, 1.0]], [[1.0, 1.0]]], [[0.0, 1.0], [0.0]])
    box = Box([-1, 0], [1, 2])
    g = to_formula(net, domain=box)
    back = to_network(g)
    assert equal_on_cube(net.exact(), back, box).status == "equal"


def test_inputs_off_the_unit_cube_need_a_domain():
    base = Network([[[1.0, 1.0]], [[1.0]]], [[0.0], [0.0]])
    model = NNetModel.from_network(base, input_min=[-1, -1], input_max=[1, 1])
    with pytest.raises(ExtractionError, match="not \\[0, 1\\]\\^n; pass domain"):
        to_formula(model)
    g = to_formula(model, domain=Box([-1, -1], [1, 1]))
    assert g.n_inputs == 2
    with pytest.raises(ExtractionError, match="box"):
        from relulab.domain import Polytope

        to_formula(base, domain=Polytope([[1.0, 1.0], [-1.0, 0.0], [0.0, -1.0]], [1.0, 0.0, 0.0]))


def test_graph_rejects_a_variable_beyond_the_layer_below():
    g = to_formula(Network([[[1, 1]], [[1]]], [[0], [0]]).exact())
    with pytest.raises(RewriteError, match="x3"):
        node_rewrite(g, 0, 0, parse("x1 + x3"))
    with pytest.raises(GraphError):
        g.evaluate([F(1, 2)])


def _check_same_function(g, net, rng):
    back = to_network(g)
    for p in rational_points(rng, net.input_dim, 5):
        assert g.evaluate(p) == list(net.exact()(np.array(p, dtype=object)))
    assert equal_on_cube(back, net).status == "equal"


def test_each_local_operation_keeps_the_truth_function():
    rng = np.random.default_rng(7)
    for kind in ("int", "rat"):
        for _ in range(3):
            net = random_net(rng, kind, 2, [3, 3])
            g = to_formula(net, method="rescale")
            h, st = collapse_layer(g, 0)
            assert st.op == "collapse" and len(h.layers) == len(g.layers) - 1
            _check_same_function(h, net, rng)
            e, st = expand_layer(g, 1)  # identity padding layer
            assert len(e.layers) == len(g.layers) + 1
            _check_same_function(e, net, rng)
            back, _ = expand_layer(h, 0, g.layers[0], g.layers[1])  # undo the collapse
            assert back.same(g)
            r, st = node_rewrite(h, 0, 0, simplify, check="exact")
            _check_same_function(r, net, rng)
    # a wrong expansion or rewrite is refused
    g = to_formula(Network([[[1, -1], [1, 1]], [[1, 1]]], [[0, -1], [0]]).exact())
    with pytest.raises(RewriteError):
        expand_layer(g, 0, [parse("x1")], [parse("x1"), parse("x1")])
    with pytest.raises(RewriteError, match="different truth function"):
        node_rewrite(g, 0, 0, parse("x1"))


def _padded_copy(net: Network, seed: int) -> Network:
    """Rescaled, permuted, one dead neuron, one neuron with zero outgoing weights and the
    first neuron split into two equal halves."""
    g = random_symmetry(net, seed)
    Ws = [np.array(W) for W in g.weights]
    bs = [np.array(b) for b in g.biases]
    d = net.input_dim
    dead = np.array([[F(-1)] * d], dtype=object)
    Ws[0] = np.vstack([Ws[0], Ws[0][:1], dead, np.array([[F(3)] * d], dtype=object)])
    bs[0] = np.concatenate([bs[0], bs[0][:1], [F(-1)], [F(1)]])
    out = Ws[1].shape[0]
    half = Ws[1][:, 0] / 2
    extra = np.full((out, 3), F(0), dtype=object)
    extra[:, 0] = half
    extra[:, 1] = F(7)  # reads the dead neuron: no effect
    W1 = np.hstack([Ws[1], extra])
    W1[:, 0] = half
    Ws[1] = W1
    return Network(Ws, bs, exact=True)


def test_permuted_rescaled_padded_copy_derivation_and_normal_forms():
    rng = np.random.default_rng(11)
    for t in range(4):
        net = random_net(rng, "int", 2, [4, 3]).exact()
        other = _padded_copy(net, t)
        assert equal_on_cube(net, other).status == "equal"
        na = normal_form(to_formula(net, method="rescale")).graph
        nb = normal_form(to_formula(other, method="rescale")).graph
        assert na.same(nb)
        r = derive(net, other)
        assert r.status == "found" and r.verified and r.length == len(r.steps)
        end = replay(to_formula(net, method="rescale"), r.steps)
        assert end.same(to_formula(other, method="rescale"))


def test_derivation_between_different_depths_and_a_non_equivalent_pair():
    net = Network([[[1, -2], [3, 1]], [[1, -1]]], [[1, 0], [0]]).exact()
    r = derive(net, net.deepen(2))
    assert r.status == "found" and r.verified and r.strategy == "flattening"
    bad = Network([[[1, -2], [3, 1]], [[1, -1]]], [[1, 0], [F(1, 2)]]).exact()
    r = derive(net, bad)
    assert r.status == "not equivalent"
    w = np.array(r.witness, dtype=object)
    assert net(w)[0] != bad(w)[0]
    r = derive(net, net.deepen(2), max_steps=2)
    assert r.status == "not found within budget"


def _exact(Ws: list, bs: list) -> Network:
    """An exact network from nested lists of ints / Fractions (no detour through floats)."""
    obj = [np.array([[F(v) for v in row] for row in W], dtype=object) for W in Ws]
    return Network(obj, [np.array([F(v) for v in b], dtype=object) for b in bs], exact=True)


@pytest.mark.parametrize("d", [1, 2, 3, 5])
@pytest.mark.parametrize("k", [11, 13, 30])
def test_equal_on_cube_notices_a_sliver_region_the_float_enumeration_misses(d, k):
    # f = relu(x1 + .. + xd - (d - eps)) is eps at the corner (1, .., 1) and 0 elsewhere
    # on the cube; in floats its one kink sits on the corner, the enumeration finds one
    # region and must not conclude f == 0.
    eps = F(1, 10**k)
    f = _exact([[[1] * d], [[1]]], [[-(d - eps)], [0]])
    g = _exact([[[1] * d], [[0]]], [[0], [0]])
    r = equal_on_cube(f, g)
    assert r.status == "different" and r.exact
    w = np.array(r.witness, dtype=object)
    assert (f(w)[0], g(w)[0]) == (r.f_value[0], r.g_value[0]) == (eps, 0)


def test_equal_on_cube_never_claims_an_equality_it_has_not_proved():
    # A tent of height 1e-14 around 1/3: no box or region vertex sees it, so the regions
    # cannot decide; the answer must not be an exact 'equal'.
    a, eps = F(1, 3), F(1, 10**14)
    f = _exact([[[1], [1], [1]], [[1, -2, 1]]], [[-a, -a - eps, -a - 2 * eps], [0]])
    g = _exact([[[1]], [[0]]], [[0], [0]])
    r = equal_on_cube(f, g, use_verifier=False)
    assert r.status == "unknown" and not r.exact and "uncovered" in r.message
    r = equal_on_cube(f, g)
    assert r.status != "equal" or (not r.exact and "not exact" in r.message)
    # equal networks in 4 inputs are still proved equal region by region (exact coverage)
    net = random_net(np.random.default_rng(13), "int", 4, [3, 2]).exact()
    r = equal_on_cube(net, to_network(to_formula(net)))
    assert r.status == "equal" and r.exact and r.method == "regions" and "cover" in r.message


def test_equal_on_cube_rejects_what_is_not_a_network():
    from relulab.errors import RelulabError

    with pytest.raises(RelulabError, match="^equal_on_cube: f must be a relulab Network, got str$"):
        equal_on_cube("a", "b")
    net = Network([[[1]], [[1]]], [[0], [0]]).exact()
    with pytest.raises(RelulabError, match="g must be a relulab Network, got list"):
        equal_on_cube(net, [[1]])


def test_normal_form_of_a_dead_node_that_weighs_an_unread_node():
    # Layer 1's node is dead on the cube (its formula is 0) but its affine data still
    # weighs x1, which no formula of layer 1 reads any more.
    rng = np.random.default_rng(3)
    net = Network([[[2], [0]], [[-1, -1]], [[-1]]], [[0, 2], [1], [-2]]).exact()
    other = Network([[[1, 2], [0, -1], [1, 1]], [[-1, -1, 0], [1, 0, 1]], [[-1, 2]]],
                    [[0, 2, -1], [1, 0], [1]]).exact()
    for n in (net, other):
        pts = [[F(int(v)) for v in c] for c in np.ndindex(*([2] * n.input_dim))]
        pts += rational_points(rng, n.input_dim, 20)
        for method in ("rescale", "auto"):
            g = to_formula(n, method=method)
            r = normal_form(g)
            back = to_network(r.graph)
            for p in pts:
                v = list(n(np.array(p, dtype=object)))
                assert r.graph.evaluate(p) == v == list(back(np.array(p, dtype=object)))
            assert replay(g, r.steps).same(r.graph)
        d = derive(n, n)
        assert d.status == "found" and d.verified


def test_equal_on_cube_timeout_covers_the_region_comparison():
    # f and g differ by 1e-7 everywhere: the regions would decide, but not within 0.2 s;
    # the timeout used to reach only the verifier, after every region was enumerated
    rng = np.random.default_rng(1)
    w = [8, 60, 60, 1]
    f = Network([rng.standard_normal((b, a)) / np.sqrt(a) for a, b in zip(w[:-1], w[1:], strict=True)],
                [rng.standard_normal(b) * 0.3 for b in w[1:]])
    g = Network(list(f.weights), [*f.biases[:-1], f.biases[-1] + 1e-7])
    r = equal_on_cube(f, g, timeout=0.2)
    assert r.status in ("unknown", "different")
    if r.status == "different":      # only with an exact witness
        assert r.exact and r.f_value != r.g_value
    else:
        assert not r.exact and ("time" in r.message or "stopped" in r.message)


def test_staircase_steps_constant_on_the_cube_and_the_size_limit():
    # biases that lift a neuron above 1 on the whole cube make its first steps constants
    # (counted, not looped over); random integer networks stay exactly equal
    rng = np.random.default_rng(11)
    for _ in range(6):
        W1 = rng.integers(-3, 4, size=(3, 2))
        b1 = rng.integers(0, 6, size=3)
        W2 = rng.integers(-2, 3, size=(1, 3))
        net = Network([W1.tolist(), W2.tolist()], [b1.tolist(), [int(rng.integers(-2, 3))]]).exact()
        g = to_formula(net, method="staircase")
        assert g.method == "staircase" and equal_on_cube(to_network(g), net).status == "equal"
    # weight 1000: about 10^6 weight-units of formula; weight 1e5 took minutes and 15 GB
    big = Network([[[1000, 1], [1, -1]], [[1, 1]]], [[0, 0], [0]]).exact()
    with pytest.raises(ExtractionError, match=r"needs 1001 nodes for neuron 1 of layer 1 .* method='rescale'"):
        to_formula(big, method="staircase")
    g = to_formula(big)  # auto falls back to one node per neuron
    assert g.method == "rescale" and equal_on_cube(to_network(g), big).status == "equal"


def test_derive_gives_its_equality_checks_only_the_time_left():
    # each flat node's exact check ran with equal_on_cube's own 60 s: derive(timeout=2)
    # took 64 s, and then blamed the formulas ("not proved equal") instead of the time
    from relulab import Network
    from relulab.logic import derive

    rng = np.random.default_rng(0)
    net = Network([rng.normal(size=(12, 3)), rng.normal(size=(12, 12)), rng.normal(size=(1, 12))],
                  [rng.normal(size=12), rng.normal(size=12), rng.normal(size=1)])
    r = derive(net, net.deepen(3), timeout=2)
    assert r.status == "not found within budget" and "time budget spent" in r.message, r.message
