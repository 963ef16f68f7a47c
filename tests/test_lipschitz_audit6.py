"""Sixth Lipschitz audit: the global MILP over R^d cannot resolve regions far from the
origin (its homogenised box turns them into slivers below HiGHS's tolerances) and said
"exact" for a constant 1 % too small; a bool norm exponent was read as 1.  Each case failed
before its fix; the true constant is checked by a secant slope (two forward passes)."""

from __future__ import annotations

import numpy as np
import pytest

from relulab import Network
from relulab.errors import RelulabError
from relulab.lipschitz import lipschitz


def _far_network(far: float, a: float, c: float, d: int = 6) -> Network:
    # f = a relu(x) + c relu(relu(x) + relu(y) - far) + e (relu(x + 2) - relu(x + 1))
    e = a + 0.5 * c
    W1 = np.zeros((4, d))
    W1[:, :2] = [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0]]
    return Network([W1, [[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]], [[a, c, e, -e]]],
                   [[0.0, 0.0, 2.0, 1.0], [0, -far, 0, 0], [0.0]])


@pytest.mark.parametrize("method", ["auto", "milp"])
def test_a_region_far_from_the_origin_is_not_missed_by_an_exact_claim(method):
    net = _far_network(1e6, 100.0, 1.0)
    X = np.zeros((2, 6))
    X[0, :2], X[1, :2] = 1e7, 2e7
    fv = net(X).ravel()
    secant = abs(fv[1] - fv[0]) / 1e7                     # l_inf distance of the two points
    assert secant == pytest.approx(102.0)
    r = lipschitz(net, None, p=np.inf, method=method, time_limit=4)
    assert r.upper >= secant * (1 - 1e-9)
    assert r.status != "exact" or r.value >= secant * (1 - 1e-9)


def test_near_regions_still_get_the_exact_global_milp():
    net = _far_network(10.0, 100.0, 1.0)
    r = lipschitz(net, None, p=np.inf, method="milp", time_limit=20)
    X = np.zeros((2, 6))
    X[0, :2], X[1, :2] = 100.0, 200.0
    fv = net(X).ravel()
    assert r.status == "exact" and r.value == pytest.approx(abs(fv[1] - fv[0]) / 100.0)


def test_a_bool_norm_exponent_is_refused():
    net = _far_network(10.0, 1.0, 1.0)
    with pytest.raises(RelulabError, match="p: True is not a number"):
        lipschitz(net, None, p=True)
