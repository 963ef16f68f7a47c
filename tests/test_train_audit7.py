"""Training audit 7: the convex fits, the collapse threshold and the free-bias minimal
norm give the same answers in any units (targets of 1e-165 had a threshold "exactly" 0 and
the zero network "certified" globally optimal; data spanning 3e12 stopped 50 % above the
optimum)."""

import numpy as np
import pytest

from relulab.train import (
    collapse_threshold,
    convex_fit,
    gated_fit,
    minnorm_classifier,
    minnorm_interpolant,
    nonconvex_objective,
)
from relulab.train.convex import ConvexTrainingError

X1 = np.linspace(-1, 1, 7)[:, None]
Y1 = np.abs(X1[:, 0]) - 0.3


def _sampled_threshold(X, y, n=200_001):
    """max over unit directions w of |y . relu(x~ . w)| (1-D data with a bias: a circle),
    sampled densely: a lower bound that approaches the threshold."""
    t = np.linspace(0, 2 * np.pi, n)
    W = np.stack([np.cos(t), np.sin(t)], 1)
    Xa = np.hstack([X, np.ones((len(X), 1))])
    return float(np.max(np.abs(np.maximum(Xa @ W.T, 0.0).T @ y)))


@pytest.mark.parametrize("c", [1.0, 1e-5, 1e-20, 1e-160, 1e-165, 1e-200, 1e5, 1e100])
def test_collapse_threshold_is_linear_in_the_targets(c):
    ref = _sampled_threshold(X1, Y1)
    t = collapse_threshold(X1, c * Y1)
    assert t.exact
    # the threshold of c y is c times that of y (a normal float64 down to 1e-200 x 1.9)
    assert t.lam / c == pytest.approx(ref, rel=1e-6) and t.lam / c >= ref * (1 - 1e-12)
    assert t.upper == t.lam


def test_collapse_threshold_of_tiny_two_dimensional_targets():
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(9, 2)), rng.normal(size=9)
    a, b = collapse_threshold(X, y), collapse_threshold(X, 1e-170 * y)
    assert a.exact and b.exact and b.lam == pytest.approx(1e-170 * a.lam, rel=1e-12)


@pytest.mark.parametrize("c", [1e-5, 1e-20, 1e-150, 1e5, 1e100])
def test_convex_fit_gives_the_same_fit_in_any_units(c):
    ref = convex_fit(X1, Y1, 0.1)
    assert ref.global_optimum
    f = convex_fit(X1, c * Y1, 0.1 * c)
    # every objective of the scaled problem is c^2 times the unit one's
    assert f.converged and f.global_optimum and f.n_neurons == ref.n_neurons
    assert f.objective / c**2 == pytest.approx(ref.objective, rel=1e-9)
    assert nonconvex_objective(f.network, X1, c * Y1, 0.1 * c) / c**2 == pytest.approx(ref.objective, rel=1e-9)
    g, gref = gated_fit(X1, c * Y1, 0.1 * c), gated_fit(X1, Y1, 0.1)
    assert g.converged and g.objective / c**2 == pytest.approx(gref.objective, rel=1e-9)


@pytest.mark.parametrize("fit", [convex_fit, gated_fit])
def test_targets_whose_squares_underflow_are_refused(fit):
    with pytest.raises(ConvexTrainingError, match="squared targets underflow"):
        fit(X1, 1e-165 * Y1, 1e-166)


@pytest.mark.parametrize("s", [1e12, 1e16, 1e100, 1e-20, 1e-100])
@pytest.mark.parametrize("skip", [False, True])
def test_free_bias_minimal_norm_in_any_units(s, skip):
    x = np.array([0.0, 1.0, 2.0, 3.0])
    y = np.array([0.0, 1.0, 1.0, 0.0])
    lab = np.array([1, -1, -1, 1])
    r0, c0 = minnorm_interpolant(x, y, skip=skip), minnorm_classifier(x, lab, skip=skip)
    r, c = minnorm_interpolant(s * x, y, skip=skip), minnorm_classifier(s * x, lab, skip=skip)
    # f(x) = g(x / s): the cost of the data s x is the unit cost divided by s
    assert r.status == c.status == "optimal"
    assert r.cost * s == pytest.approx(r0.cost, rel=1e-9) and c.cost * s == pytest.approx(c0.cost, rel=1e-9)
    assert r.lower_bound <= r.cost and r.lower_bound * s == pytest.approx(r0.cost, rel=1e-9)
    assert np.allclose(np.sort(r.kinks) / s, np.sort(r0.kinks), rtol=1e-9)
    # the network returned meets the data in the data's own units, and is optimal
    assert np.abs(r.network((s * x)[:, None])[:, 0] - y).max() <= 1e-9
    assert (lab * c.network((s * x)[:, None])[:, 0]).min() >= 1 - 1e-9
    assert r.in_optimal_set(r.network)


def _torch_net(w, b, v):
    torch = pytest.importorskip("torch")
    net = torch.nn.Sequential(torch.nn.Linear(1, 1), torch.nn.ReLU(), torch.nn.Linear(1, 1)).double()
    with torch.no_grad():
        net[0].weight.fill_(w)
        net[0].bias.fill_(b)
        net[2].weight.fill_(v)
        net[2].bias.zero_()
    return net


def test_lp_gaps_refuse_rows_outside_the_box_and_a_reversed_box():
    torch = pytest.importorskip("torch")
    from relulab.errors import RelulabError
    from relulab.train import lp_relaxation_gaps

    lo, hi = torch.tensor([-1.0]).double(), torch.tensor([1.0]).double()
    # relu(x - 2) is stably dead on the box: at x = 3 the "gap" read -1 (documented >= 0)
    dead = _torch_net(1.0, -2.0, -1.0)
    with pytest.raises(RelulabError, match="row 1 of X lies outside the box"):
        lp_relaxation_gaps(dead, torch.tensor([[0.5], [3.0]]).double(), lo, hi)
    # relu(x) is unstable: the gap at 0.5 is (x + 1)/2 - relu(x) = 0.25; the reversed box read 0
    net = _torch_net(1.0, 0.0, -1.0)
    assert lp_relaxation_gaps(net, torch.tensor([[0.5]]).double(), lo, hi).tolist() == pytest.approx([0.25])
    with pytest.raises(RelulabError, match="lo > hi"):
        lp_relaxation_gaps(net, torch.tensor([[0.5]]).double(), hi, lo)


def test_train_surrogate_checks_its_options_before_training():
    torch = pytest.importorskip("torch")
    from relulab.errors import RelulabError
    from relulab.train import train_surrogate

    X = np.random.default_rng(0).uniform(-1, 1, (20, 1))
    y = X[:, 0] ** 2
    a = dict(widths=[1, 4, 1], lo=[-1], hi=[1], epochs=3)
    cases = [
        (dict(y=np.c_[y, y][:10]), r"y must be \(20,\) or \(20, 1\)"),
        (dict(bigm=float("nan")), "bigm must be a finite number"),
        (dict(lp_gap_true=1.0, lp_batch=0), "lp_batch must be an integer >= 1"),
        (dict(lp_gap_true=1.0, lp_batch=2.5), "lp_batch must be an integer >= 1"),
        (dict(warmup="0.3"), "warmup must be a number in"),
        (dict(weight_decay=-1), "weight_decay must be a finite number >= 0"),
        (dict(init=torch.nn.Sequential(torch.nn.Linear(1, 4))), "init must be a relulab Network"),
        (dict(X=5 * X, lp_gap_true=1.0), "lies outside the box"),
    ]
    for kw, msg in cases:
        args = dict(X=X, y=y, **a)
        args.update(kw)
        with pytest.raises(RelulabError, match=msg):
            train_surrogate(**args)
    # in range, it trains (the checks refuse nothing valid)
    net, info = train_surrogate(X, y[:, None], **a, lp_gap_true=1.0, lp_batch=4, warmup=0.5)
    assert net.widths == (4,) and np.isfinite(info["mse"])


def test_in_optimal_set_names_a_network_that_is_not_univariate():
    from relulab import Network
    from relulab.train.minnorm import MinNormError

    r = minnorm_interpolant([0.0, 1.0, 2.0], [0.0, 1.0, 0.0])
    two_inputs = Network([[[1.0, 1.0]], [[1.0]]], [[0.0], [0.0]])
    with pytest.raises(MinNormError, match="univariate"):
        r.in_optimal_set(two_inputs)


def test_train_surrogate_says_when_training_diverged():
    """lr=1e6 ended at an MSE of 1e13 from 0.2 and the summary did not say so; the flag
    is read off the MSEs reported beside it, which are checked against a forward pass."""
    from relulab.train import train_surrogate

    X = np.random.default_rng(0).uniform(-1, 1, (64, 2))
    y = X[:, 0] * X[:, 1]
    for lr, diverged in ((3e-3, False), (1e6, True)):
        net, info = train_surrogate(X, y, [2, 8, 1], [-1, -1], [1, 1], epochs=100, lr=lr)
        assert info["diverged"] is diverged
        assert np.isclose(info["mse"], np.mean((net(X)[:, 0] - y) ** 2), rtol=1e-9)
        assert (info["mse"] > 10 * info["initial_mse"]) is diverged
