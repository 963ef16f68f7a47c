"""Construct, fourth audit: a translated hierarchy function reports the same exact facts,
circuit generators refuse sizes before building the netlist, the a-priori error bound of
the activation gadgets stays above the measured error at extreme parameters, and the
command line names bad options in one line."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from conftest import run_cli

from relulab import Box, Network
from relulab import construct as C
from relulab.construct._errors import ConstructionError
from relulab.construct.activations import approximate_relu_network
from relulab.errors import RelulabError


@pytest.mark.parametrize("offset", [2**40, 2**60, Fraction(-7, 3)])
def test_a_translated_hierarchy_function_reports_the_same_facts(offset):
    """At offset 2^40 the report counted the float copy on the far cube: 1 region,
    gradient 0, range (0, 0); at 2^60 it raised DomainError."""
    ref = C.hierarchy_report(2, 3)
    r = C.hierarchy_report(2, 3, offset=offset)
    assert (r.regions, r.max_gradient_norm, r.value_range) == (ref.regions, ref.max_gradient_norm,
                                                               ref.value_range)
    # the translated network itself is F moved by the offset (checked exactly)
    net = C.hierarchy_network(2, 3, offset)
    for p in ([Fraction(1, 3), Fraction(5, 7)], [Fraction(2), Fraction(1, 9)]):
        x = [offset + v for v in p]
        assert net(x)[0] == C.hierarchy_value(p, 3, offset=0) == C.hierarchy_value(x, 3, offset=offset)


@pytest.mark.parametrize("make, message", [
    (lambda: C.gate("AND", 10**10), "10000000000 inputs; relulab builds at most"),
    (lambda: C.ripple_carry_adder(10**10), "hidden layers; relulab builds at most"),
    (lambda: C.comparator(10**10), "inputs; relulab builds at most"),
    (lambda: C.dnf([[1]], 10**20), "inputs; relulab builds at most"),
    (lambda: C.gate("AND", 2.5), "gate: k must be an integer"),
    (lambda: C.dnf([[1]], 0), "dnf: n must be an integer"),
])
def test_circuit_sizes_are_refused_before_the_netlist_is_built(make, message):
    # each built a tuple of 10^10 names first: MemoryError, or the OOM killer
    with pytest.raises(ConstructionError, match=message):
        make()


def test_a_comparator_whose_netlist_exceeds_the_memory_budget_is_refused(monkeypatch):
    from relulab.limits import ResourceLimitError

    monkeypatch.setenv("RELULAB_MEMORY_GB", "0.001")
    with pytest.raises(ResourceLimitError, match="comparator"):
        C.comparator(4000)   # n^2 = 1.6e7 argument names
    monkeypatch.delenv("RELULAB_MEMORY_GB")
    assert C.compile_circuit(C.comparator(3)).input_dim == 6


RELU = Network([[[1.0]], [[1.0]]], [[0.0], [0.0]])
ABS = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])


@pytest.mark.parametrize("net, act, t", [
    (RELU, C.activation("swish", beta=1e-13), 1e13),   # peak past the log grid: bound 0.059, error 0.31
    (ABS, C.activation("leakyrelu", negative_slope=0.999999999), 100.0),   # bound 0, error 1.4e-7
    (ABS, C.activation("leakyrelu", negative_slope=1e90), 100.0),
    (ABS, C.activation("leakyrelu", negative_slope=0.01), 100.0),
])
def test_the_a_priori_bound_is_above_the_dense_error(net, act, t):
    r = approximate_relu_network(net, act, Box([-1.0], [1.0]), t)
    X = np.linspace(-1, 1, 20001)[:, None]
    dense = float(np.max(np.abs(net(X) - r.network(X))))
    assert r.a_priori_bound is not None and dense <= r.a_priori_bound


def test_a_leaky_slope_whose_square_overflows_is_refused():
    # 1 - s^2 overflowed: the gadget's output was 0 (error 1) under a bound of 0
    with pytest.raises(RelulabError, match=r"\|negative_slope\| must be at most 1e\+100"):
        C.activation("leakyrelu", negative_slope=1e160)


def test_a_mask_with_leading_zeros_keeps_no_redundant_breakpoint():
    mask = [0, Fraction(1, 2), 1, Fraction(1, 2)]
    bp, vals = C.refinement_iterate(mask, [0, 1, 2], [0, 1, 0], 1)
    kinks = C.breakpoints_1d(C.subdivision_network(mask, 1), -5, 5)
    assert bp == C.subdivision_iterate(mask, [0, 1, 2], [0, 1, 0], 1)[0]
    assert [Fraction(b) for b in kinks] == bp == [Fraction(1, 2), Fraction(3, 2), Fraction(5, 2)]
    for b, v in zip(bp, vals, strict=True):
        assert C.cascade_value(mask, [0, 1, 2], [0, 1, 0], 1, b) == v


@pytest.mark.parametrize("groups, message", [
    ([[0.0], [1]], "group 0 names component 0.0"),
    ([0, 1], "group 0 is 0; each group is a list"),
    ([[True], [1]], "group 0 names component True"),
])
def test_max_of_mins_groups_are_checked(groups, message):
    with pytest.raises(ConstructionError, match=message):
        C.max_of_mins([[1], [-1]], [0, 0], groups)


def test_repeated_indices_in_a_group_are_one_piece():
    # [[0, 0, 0, 0, 0], [1]] built 4 hidden layers and 25 neurons for max(min(x), -x) = |x|
    net = C.max_of_mins([[1], [-1]], [0, 0], [[0, 0, 0, 0, 0], [1]])
    assert net.n_hidden_layers == C.max_of_mins([[1], [-1]], [0, 0], [[0], [1]]).n_hidden_layers
    xs = [Fraction(k, 3) for k in range(-6, 7)]
    assert [net([x])[0] for x in xs] == [abs(x) for x in xs]


@pytest.mark.parametrize("argv, message", [
    (["sat-gadget", "--random", "5,3,-1"], "--random: the seed must be a non-negative integer"),
    (["cpwl1d", "--breakpoints", "0", "--values", "0", "--right-slope", "1,2"],
     "--right-slope: expected one number, got 2"),
    (["integral", "--poly", "x^2000", "--radius", "2", "--width", "10"], "lower the degree or the radius"),
    (["turing", "--machine", "binary-increment", "--input", "1", "--steps", "0"], "--steps: a run needs"),
])
def test_construct_options_are_named(capsys, argv, message):
    code, _, err = run_cli(capsys, "construct", *argv)
    assert code == 1 and len(err.strip().splitlines()) == 1 and message in err, err
