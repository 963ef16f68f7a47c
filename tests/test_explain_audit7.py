"""Explanations audit 7 (aud_exp7): the l2 counterfactual's distances are proven (a
projection QP's interior point was taken as its optimum: 95x too far, "optimal")."""

import numpy as np
import pytest

from relulab import Box, Network, explain


@pytest.mark.parametrize("e", [1e-4, 1e-5, 1e-6, 1e-7])
def test_l2_counterfactual_near_a_hyperplane_is_its_distance(e):
    # f = x0 + x1 - 1: the nearest "negative" point lies e / sqrt(2) away (analytic), plus
    # the margin the target keeps (f <= -margin); "optimal" read 6.7e-6 for 7.07e-8
    net = Network([[[1.0, 1.0]]], [[-1.0]])
    x = [0.6, 0.4 + e]
    r = explain.why_not(net, x, "negative", Box([0, 0], [1, 1]), norm="l2")
    true = e / np.sqrt(2)
    assert r.status == "optimal"
    assert r.lower_bound <= true * (1 + 1e-6) + 1e-9 and r.distance <= true * (1 + 1e-6) + 1e-9  # tol: margin
    assert net(r.counterfactual[None])[0, 0] < 0
    # the linf search of the same package (same target margin) finds no point closer than
    # the proven bound, up to its coordinates' float spacing (1e-16 of 0.5 in 7e-8)
    rl = explain.why_not(net, x, "negative", Box([0, 0], [1, 1]), norm="linf")
    assert np.linalg.norm(rl.counterfactual - np.array(x)) >= r.lower_bound * (1 - 1e-6)


@pytest.mark.parametrize("S", [1e4, 1e5])
def test_l2_counterfactual_with_large_inputs(S):
    net = Network([[[1.0, 1.0]]], [[-S]])
    x = [0.6 * S, 0.4 * S + 0.1]
    r = explain.why_not(net, x, "negative", Box([0, 0], [S, S]), norm="l2")
    assert r.status == "optimal" and r.distance == pytest.approx(0.1 / np.sqrt(2), rel=1e-6)
    assert r.lower_bound <= 0.1 / np.sqrt(2) * (1 + 1e-6)   # (the target margin: 1e-9 of the outputs)


def test_l2_counterfactual_of_a_hidden_layer_network_against_dense_rays():
    # a random 2-8-1 network, x 1e-6 from the boundary along the gradient: no point on
    # 20,000 rays from x changes the decision closer than the proven lower bound, and the
    # linf counterfactual's l2 length is not below it either
    rng = np.random.default_rng(5)
    net = Network([rng.normal(size=(8, 2)), rng.normal(size=(1, 8))], [rng.normal(size=8) * 0.5, [1.2]])
    box = Box([-1, -1], [1, 1])
    # a boundary point by bisection on a segment whose ends have opposite signs
    X = box.sample(4000, np.random.default_rng(0))
    v = net(X)[:, 0]
    a, b = X[np.argmax(v)], X[np.argmin(v)]
    for _ in range(200):
        m = (a + b) / 2
        a, b = (m, b) if net(m[None])[0, 0] > 0 else (a, m)
    g = (net(a + 1e-7 * np.eye(2)) - net(a[None]))[:, 0] / 1e-7
    x = a + 1e-6 * g / np.linalg.norm(g)
    assert net(x[None])[0, 0] > 0
    r = explain.why_not(net, x, "negative", box, norm="l2")
    assert r.status == "optimal" and net(r.counterfactual[None])[0, 0] < 0
    t = np.linspace(0, 2 * np.pi, 20000, endpoint=False)
    U = np.stack([np.cos(t), np.sin(t)], 1)
    for s in np.linspace(0, 1, 41)[1:] * r.lower_bound * (1 - 1e-6):
        P = np.clip(x + s * U, -1, 1)
        assert (net(P)[:, 0] > -1e-9).all()    # tol: the target's margin
    rl = explain.why_not(net, x, "negative", box, norm="linf")
    assert np.linalg.norm(rl.counterfactual - x) >= r.lower_bound * (1 - 1e-6)


def test_an_unpolished_projection_claims_no_optimum(monkeypatch):
    # without the polish, the interior point sits ~5e-6 inside the target half-space: its
    # distance is only an upper bound, the proven bound comes from the multipliers, and
    # the answer may not be "optimal" while the two disagree
    import relulab.explain._qp as qp

    monkeypatch.setattr(qp, "_polish", lambda M, r, y, u, lam: (u, None))
    net = Network([[[1.0, 1.0]]], [[-1.0]])
    x = [0.6, 0.4 + 1e-6]
    r = explain.why_not(net, x, "negative", Box([0, 0], [1, 1]), norm="l2")
    true = 1e-6 / np.sqrt(2)
    assert r.lower_bound <= true * (1 + 1e-6)
    if r.distance is not None and r.distance > true * 1.01:
        assert r.status != "optimal" and "numerical" in r.certificate["reason"]
