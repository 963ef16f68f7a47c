"""Kernels of ReLU networks: arc-cosine recursions against Monte Carlo, the factorised
empirical NTK against torch.func Jacobians, wide random networks against the limit."""

from __future__ import annotations

import numpy as np
import pytest

from relulab import Network
from relulab.dynamics import (
    KernelError,
    KernelRidge,
    empirical_ntk,
    kernel_ridge,
    nngp,
    ntk,
    random_ntk_network,
)

torch = pytest.importorskip("torch")

N_MC = 10**6


def _mean_se(q: np.ndarray) -> tuple[float, float]:
    return float(q.mean()), float(q.std(ddof=1) / np.sqrt(q.size))


def _gauss_pair(rng, cxx, cxz, czz, n=N_MC):
    """n samples of a centred Gaussian pair with the given covariance."""
    C = np.array([[cxx, cxz], [cxz, czz]])
    L = np.linalg.cholesky(C + 1e-300 * np.eye(2))
    g = rng.standard_normal((n, 2)) @ L.T
    return g[:, 0], g[:, 1]


@pytest.mark.parametrize("bias_var", [0.0, 0.3])
def test_depth1_arccos_against_monte_carlo(bias_var):
    rng = np.random.default_rng(1)
    x, z = np.array([1.0, -0.5, 2.0]), np.array([0.3, 1.2, 0.7])
    d = 3
    # first layer: pre-activations W x / sqrt(d) + sqrt(beta) b with raw N(0, 1) entries
    W = rng.standard_normal((N_MC, d)) / np.sqrt(d)
    b = np.sqrt(bias_var) * rng.standard_normal(N_MC)
    u, v = W @ x + b, W @ z + b
    s1 = x @ z / d + bias_var
    q_nngp = 2 * np.maximum(u, 0) * np.maximum(v, 0) + bias_var
    q_ntk = s1 * 2 * (u > 0) * (v > 0) + q_nngp
    X = np.stack([x, z])
    for q, K in ((q_nngp, nngp(X, depth=1, bias_var=bias_var)), (q_ntk, ntk(X, depth=1, bias_var=bias_var))):
        m, se = _mean_se(q)
        assert abs(K[0, 1] - m) < 5 * se, (K[0, 1], m, se)


def test_depth2_arccos_against_monte_carlo():
    rng = np.random.default_rng(2)
    X = np.array([[1.0, 2.0], [-0.4, 1.5]])
    beta = 0.1
    S1 = nngp(X, depth=1, bias_var=beta)  # covariance of the layer-2 pre-activations
    T1 = ntk(X, depth=1, bias_var=beta)
    a, b = _gauss_pair(rng, S1[0, 0], S1[0, 1], S1[1, 1])
    q_nngp = 2 * np.maximum(a, 0) * np.maximum(b, 0) + beta
    q_ntk = T1[0, 1] * 2 * (a > 0) * (b > 0) + q_nngp
    S2, T2 = nngp(X, depth=2, bias_var=beta), ntk(X, depth=2, bias_var=beta)
    for q, K in ((q_nngp, S2), (q_ntk, T2)):
        m, se = _mean_se(q)
        assert abs(K[0, 1] - m) < 5 * se, (K[0, 1], m, se)
    # the diagonal keeps |x|^2/d + l * beta under He variance 2
    assert np.allclose(np.diag(S2), np.sum(X * X, 1) / 2 + 3 * beta)


def _torch_reference(net: Network, X: np.ndarray, scales) -> np.ndarray:
    """Per-sample Jacobians by torch.func, one sample at a time, float64."""
    from torch.func import jacrev

    raw = []
    for (W, b), (ws, bs) in zip(net.layers, scales, strict=True):
        raw += [torch.tensor(W / ws), torch.tensor(b / bs if bs else 0 * b)]

    def f(params, x):
        h = x
        for k in range(net.depth):
            ws, bs = scales[k]
            h = ws * params[2 * k] @ h + bs * params[2 * k + 1]
            if k < net.depth - 1:
                h = torch.relu(h)
        return h

    rows = []
    for x in torch.tensor(X):
        J = jacrev(f)(raw, x)
        rows.append(torch.cat([j.reshape(j.shape[0], -1) for j in J], dim=1))
    J = torch.stack(rows)  # (n, o, P)
    return torch.einsum("nip,mjp->nmij", J, J).numpy()


@pytest.mark.parametrize("out_dim", [1, 3])
def test_empirical_ntk_matches_torch_jacobians(out_dim):
    rng = np.random.default_rng(3)
    net = Network(
        [rng.normal(size=(6, 4)), rng.normal(size=(5, 6)), rng.normal(size=(out_dim, 5))],
        [rng.normal(size=6), rng.normal(size=5), rng.normal(size=out_dim)],
    )
    X = rng.normal(size=(7, 4))
    scales = [(0.7, 1.3), (1.1, 0.4), (0.5, 2.0)]
    for sc in (None, scales):
        K = empirical_ntk(net, X, scales=sc)
        ref = _torch_reference(net, X, sc or [(1.0, 1.0)] * 3)
        ref = ref[:, :, 0, 0] if out_dim == 1 else ref
        assert K.shape == ref.shape
        assert np.max(np.abs(K - ref)) <= 1e-10 * max(1.0, np.max(np.abs(ref)))
    # cross kernel is the off-diagonal block of the joint one
    Z = rng.normal(size=(3, 4))
    joint = empirical_ntk(net, np.vstack([X, Z]))
    assert np.allclose(empirical_ntk(net, X, Z), joint[:7, 7:], rtol=1e-12, atol=1e-12)


def test_torch_module_paths_agree():
    torch.manual_seed(0)
    seq = torch.nn.Sequential(
        torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)
    ).double()

    class Wrapped(torch.nn.Module):  # not a Sequential: forces the torch.func path
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return self.inner(x)

    X = np.random.default_rng(4).normal(size=(5, 3))
    K_exact = empirical_ntk(seq, X)
    K_func = empirical_ntk(Wrapped(seq), X)
    assert K_exact.shape == (5, 5, 2, 2)
    assert np.allclose(K_exact, K_func, rtol=1e-10, atol=1e-12)


def test_wide_networks_approach_the_limit():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(12, 4))
    for depth in (1, 2):
        Kinf = ntk(X, depth=depth)
        err = {}
        for width in (128, 2048):
            e = []
            for seed in range(3):
                net, sc = random_ntk_network(4, width, depth, rng=seed)
                K = empirical_ntk(net, X, scales=sc)
                e.append(np.linalg.norm(K - Kinf) / np.linalg.norm(Kinf))
            err[width] = np.mean(e)
        # 16x the width: the error should drop ~ sqrt(16) = 4x; ask for 2x
        assert err[2048] < err[128] / 2, err
        assert err[2048] < 0.12, err


def test_nngp_of_wide_network_by_sampling_outputs():
    # NNGP = covariance of outputs over random networks (independent of the NTK code)
    X = np.array([[1.0, 0.5], [-0.3, 2.0]])
    outs = np.array([random_ntk_network(2, 128, 2, bias_var=0.2, rng=s)[0](X)[:, 0] for s in range(1500)])
    C = outs.T @ outs / outs.shape[0]
    assert np.allclose(C, nngp(X, depth=2, bias_var=0.2), rtol=0.12, atol=0.05)


def test_kernel_ridge_against_sklearn():
    sk = pytest.importorskip("sklearn.kernel_ridge")
    rng = np.random.default_rng(6)
    X, Xt = rng.normal(size=(30, 3)), rng.normal(size=(10, 3))
    y = np.sin(X[:, 0])
    ref = sk.KernelRidge(alpha=0.1, kernel="precomputed").fit(ntk(X, depth=2), y)
    ours = kernel_ridge(ntk(X, depth=2), y, ntk(Xt, X, depth=2), ridge=0.1)
    assert np.allclose(ours, ref.predict(ntk(Xt, X, depth=2)), rtol=1e-8, atol=1e-10)
    model = KernelRidge("ntk", depth=2, ridge=0.1).fit(X, y)
    assert np.allclose(model.predict(Xt), ours, rtol=1e-10, atol=1e-12)


def test_bad_inputs():
    X = np.ones((3, 2))
    with pytest.raises(KernelError, match="depth"):
        ntk(X, depth=0)
    with pytest.raises(KernelError, match="bias_var"):
        nngp(X, bias_var=-1.0)
    with pytest.raises(KernelError, match="NaN"):
        ntk(np.array([[np.nan, 1.0]]))
    with pytest.raises(KernelError, match="dimension"):
        ntk(X, np.ones((2, 3)))
    net = Network([np.ones((2, 2)), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
    with pytest.raises(KernelError, match="dimension"):
        empirical_ntk(net, np.ones((3, 5)))
    with pytest.raises(KernelError, match="scales"):
        empirical_ntk(net, X, scales=[(1.0, 1.0)])
    with pytest.raises(KernelError, match="K_test"):
        kernel_ridge(np.eye(3), np.ones(3), np.ones((2, 2)))
    with pytest.raises(KernelError, match="unknown name"):
        KernelRidge("rbf").fit(X, np.ones(3))
    with pytest.raises(KernelError, match="expected a relulab Network"):
        empirical_ntk("net", X)


def test_empirical_ntk_of_a_sequential_starting_with_relu_uses_the_generic_path():
    """Sequential(ReLU, Linear, ReLU, Linear) is not a plain MLP (the first ReLU acts on
    the input): it goes through torch.func, against per-sample autograd here."""
    import torch

    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Linear(3, 4), torch.nn.ReLU(),
                            torch.nn.Linear(4, 1)).double()
    X = np.random.default_rng(0).normal(size=(4, 3))
    K = empirical_ntk(m, X)
    J = []
    for x in X:
        m.zero_grad()
        m(torch.as_tensor(x[None])).sum().backward()
        J.append(torch.cat([p.grad.reshape(-1) for p in m.parameters()]).numpy().copy())
    J = np.array(J)
    assert np.allclose(K, J @ J.T, rtol=1e-12, atol=1e-12)
    with pytest.raises(KernelError, match="bias_var"):
        ntk(X, bias_var=None)
