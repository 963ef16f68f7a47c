"""Conservation laws beyond ReLU: counts against the symmetry analysis, constancy along an
exact gradient-flow solution, O(step) drift under gradient descent, agreement with the
ReLU balances of relulab.params.conservation."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from relulab import Network  # noqa: E402
from relulab.errors import RelulabError  # noqa: E402
from relulab.params import (  # noqa: E402
    conserved_quantities,
    find_conservation_laws,
    gd_law_drift,
    gradient_flow_drift,
    law_values,
    lie_rank_bound,
    modern_architecture,
)

SMALL = {
    "ffn-relu": dict(d=2, h=2, o=1),
    "ffn-gelu": dict(d=2, h=2, o=1),
    "ffn-silu": dict(d=2, h=2, o=1),
    "swiglu": dict(d=2, h=2, o=1),
    "mha-sinusoidal": dict(d=3, k=2, heads=1, T=2),
    "mha-rotary": dict(d=3, k=2, heads=1, T=3),
    "moe-softmax": dict(d=2, h=1, o=1, experts=2),
    "moe-sigmoid": dict(d=2, h=1, o=1, experts=2),
    "moe-linear": dict(d=2, h=1, o=1, experts=2),
}

_cache: dict = {}


def laws_of(name):
    if name not in _cache:
        arch = modern_architecture(name, **SMALL[name])
        _cache[name] = (arch, find_conservation_laws(arch, seed=3))
    return _cache[name]


@pytest.mark.parametrize("name", list(SMALL))
def test_counts_match_symmetry_analysis(name):
    arch, laws = laws_of(name)
    assert laws.count == arch.expected, (name, laws.count, arch.expected)
    assert laws.gap > 1e6  # the null space is unambiguous


def _balance_gelu(arch):
    def f(theta):
        W1 = theta[:4].reshape(2, 2)
        b1 = theta[4:6]
        W2 = theta[6:8].reshape(1, 2)
        return float(W1[0] @ W1[0] + b1[0] ** 2 - W2[0, 0] ** 2)

    return f


@pytest.mark.parametrize("name", ["ffn-relu", "ffn-gelu", "swiglu", "mha-rotary", "moe-softmax", "moe-linear"])
def test_laws_constant_along_exact_gradient_flow(name):
    arch, laws = laws_of(name)
    # the known non-invariant: the ReLU balance of neuron 0 for GELU, |theta|^2 otherwise
    extra = _balance_gelu(arch) if name == "ffn-gelu" else (lambda th: float(th @ th))
    r = gradient_flow_drift(arch, laws, t_end=2.0, extra=extra)
    assert r["theta_moved"] > 0.02
    assert r["max_law_drift"] < 1e-8, r
    assert r["extra_drift"] > 1e-3, r


def test_gd_drift_is_first_order_in_the_step():
    arch, laws = laws_of("swiglu")
    a, b, c = (gd_law_drift(arch, laws, lr) for lr in (0.04, 0.02, 0.01))
    assert 1.6 < a / b < 2.5 and 1.6 < b / c < 2.5, (a, b, c)


def test_relu_laws_span_the_known_balances():
    arch, laws = laws_of("ffn-relu")
    rng = np.random.default_rng(0)
    thetas = [arch.random_theta(rng) for _ in range(30)]
    H = np.array([law_values(laws, th) for th in thetas])
    C = []
    for th in thetas:  # the same parameters as a relulab Network (blocks W1, b1, W2, b2)
        net = Network([arch.block(th, "W1"), arch.block(th, "W2")], [arch.block(th, "b1"), arch.block(th, "b2")])
        C.append(conserved_quantities(net))
    C = np.array(C)
    coef, *_ = np.linalg.lstsq(H, C, rcond=None)
    assert np.max(np.abs(H @ coef - C)) < 1e-10


def test_lie_bound_confirms_completeness():
    for name in ("ffn-gelu", "swiglu"):
        arch, laws = laws_of(name)
        assert lie_rank_bound(arch, depth=2, n_brackets=40)["bound"] == laws.count


def test_bad_inputs():
    with pytest.raises(RelulabError, match="unknown"):
        modern_architecture("ffn-tanh")
    with pytest.raises(RelulabError, match="bad sizes"):
        modern_architecture("swiglu", heads=2)
    arch, laws = laws_of("swiglu")
    with pytest.raises(RelulabError, match="theta"):
        law_values(laws, np.zeros(3))
    with pytest.raises(RelulabError, match="lr"):
        gd_law_drift(arch, laws, 0.0)
