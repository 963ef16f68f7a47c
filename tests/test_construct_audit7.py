"""Construct audit 7 (aud_con7): the polynomial reader reads what it is given or refuses
it; huge activation scales are refused in one line."""

from fractions import Fraction

import numpy as np
import pytest

from relulab import Box, Network
from relulab.construct.polynomial import parse_polynomial
from relulab.errors import RelulabError


def _value(text: str, point):
    return parse_polynomial(text, dim=2).exact(point)


@pytest.mark.parametrize("text, expected", [
    # the reference is Python's own reading of the same expression
    ("x**2", lambda x, y: x**2),
    ("x/3/4", lambda x, y: x / 3 / 4),
    ("x/2/2", lambda x, y: x / 2 / 2),
    ("2/3/4 x", lambda x, y: Fraction(2, 3) / 4 * x),
    ("3/2 y^3 - x", lambda x, y: Fraction(3, 2) * y**3 - x),
])
def test_the_polynomial_reader_reads_what_python_reads(text, expected):
    rng = np.random.default_rng(0)
    for _ in range(5):
        x, y = (Fraction(int(v), 7) for v in rng.integers(-20, 20, 2))
        assert _value(text, [x, y]) == expected(x, y)


@pytest.mark.parametrize("text", ["x*-1", "x^2*-y", "x**", "x*"])
def test_a_sign_after_a_product_is_refused_not_read_as_a_new_term(text):
    # x*-1 was read as x - 1, and x^2*-y as x^2 - y
    with pytest.raises(RelulabError, match="polynomial"):
        parse_polynomial(text)


@pytest.mark.parametrize("act", ["relu2", "sigmoid", "tanh"])
def test_a_scale_past_the_float_range_of_the_gadgets_is_refused(act):
    from relulab.construct.activations import replace_relu

    net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    with pytest.raises(RelulabError, match="scale must be in"):
        replace_relu(net, act, Box([-1], [1]), 1e200)
    # at the largest scale allowed it builds: width 3N and depth 2L (N = 2, L = 1... 3)
    r = replace_relu(net, act, Box([-1], [1]), 1e100)
    assert r.widths == replace_relu(net, act, Box([-1], [1]), 100).widths
