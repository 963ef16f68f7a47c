"""ReLU networks approximated by networks of other activations (construct.activations)."""

from __future__ import annotations

import numpy as np
import pytest

from relulab import Box, Network
from relulab.construct.actfuncs import ACTIVATION_NAMES, activation
from relulab.construct.activations import (
    GADGET_CLASS,
    approximate_relu_network,
    replace_relu,
    sup_error,
)
from relulab.errors import RelulabError


def _net(seed: int = 0, d: int = 2, widths: tuple[int, ...] = (6, 5)) -> Network:
    rng = np.random.default_rng(seed)
    dims = [d, *widths, 1]
    Ws = [rng.normal(size=(dims[i + 1], dims[i])) / np.sqrt(dims[i]) for i in range(len(dims) - 1)]
    bs = [rng.normal(size=dims[i + 1]) * 0.5 for i in range(len(dims) - 1)]
    return Network(Ws, bs)


BOX = Box([-1.0, -1.0], [1.0, 1.0])
# factors 4 apart: the error is O(1/t), so each step divides it by about 4, far from the
# round-off floor (1e-16 t^3 for the sigmoidal gadget is below 1e-7 at t = 512)
SCALES = (2.0, 8.0, 32.0, 128.0, 512.0)


@pytest.mark.parametrize("name", ["gelu", "sigmoid", "relu2", "tanh"])
def test_sup_error_decreases_monotonically_to_small(name: str) -> None:
    net = _net()
    out = net(np.array([[x, y] for x in np.linspace(-1, 1, 41) for y in np.linspace(-1, 1, 41)]))
    spread = float(out.max() - out.min())
    errs = [approximate_relu_network(net, name, BOX, t, n_points=3000).sup_error for t in SCALES]
    assert all(b < a for a, b in zip(errs, errs[1:], strict=False)), errs
    assert errs[-1] < 0.02 * spread, (errs, spread)
    assert errs[-1] < errs[0] / 20


def test_leaky_relu_is_exact_for_every_scale() -> None:
    net = _net(3)
    for t in (0.5, 1.0, 1000.0):
        err = sup_error(net, replace_relu(net, "leakyrelu", BOX, t), BOX, 2000).error
        assert err < 1e-12


@pytest.mark.parametrize("name", ACTIVATION_NAMES)
def test_width_and_depth_as_stated(name: str) -> None:
    net = _net(1, widths=(4, 3, 5))
    rho = replace_relu(net, name, BOX, 10.0)
    kind = GADGET_CLASS[name]
    wf, df = {"scale": (1, 1), "leaky": (2, 1), "square": (2, 1), "sigmoidal": (3, 2)}[kind]
    assert rho.n_hidden_layers == df * net.n_hidden_layers
    expected = [wf * w for w in net.widths for _ in range(df)]
    assert list(rho.widths) == expected
    # never more than the paper's (3N, 2L)
    assert max(rho.widths) <= 3 * max(net.widths)
    assert rho.n_hidden_layers <= 2 * net.n_hidden_layers


def test_scale_gadget_error_matches_its_formula() -> None:
    # one neuron relu(x) on [-1, 1]: M = 1.25 (margin), rho-net = M/(t) rho(t x / M)
    net = Network([[[1.0]], [[1.0]]], [[0.0], [0.0]])
    box = Box([-1.0], [1.0])
    x = np.linspace(-1, 1, 20001)
    for name in ("softplus", "elu", "gelu"):
        a = activation(name)
        for t in (3.0, 30.0):
            expect = np.abs(1.25 / t * a(t * x / 1.25) - np.maximum(x, 0)).max()
            err = sup_error(net, replace_relu(net, name, box, t), box, 20001, refine=False).error
            assert abs(err - expect) < 1e-12
    # softplus: the error is attained at x = 0 and equals M log 2 / t
    r = sup_error(net, replace_relu(net, "softplus", box, 10.0), box, 20001, refine=False)
    assert abs(r.error - 1.25 * np.log(2) / 10) < 1e-12 and abs(r.argmax[0]) < 1e-12


def test_refinement_finds_the_peak_between_grid_points() -> None:
    # relu(x - 1/7) on [-1, 1]: the kink is off the grid; the softplus error peaks there at
    # M log 2 / t (M = 1.25 * 8/7 from the bounds), which a coarse grid misses for large t
    net = Network([[[1.0]], [[1.0]]], [[-1 / 7], [0.0]])
    box = Box([-1.0], [1.0])
    rho = replace_relu(net, "softplus", box, 1000.0)
    peak = 1.25 * (8 / 7) * np.log(2) / 1000
    coarse = sup_error(net, rho, box, 101, refine=False).error
    fine = sup_error(net, rho, box, 101).error
    assert coarse < 0.5 * peak
    assert abs(fine - peak) < 1e-3 * peak


def test_square_gadget_within_its_bound() -> None:
    # relu2 gadget: error <= M / (8 t) per neuron; one neuron, M = 1.25
    net = Network([[[1.0]], [[1.0]]], [[0.0], [0.0]])
    box = Box([-1.0], [1.0])
    for t in (1.0, 7.0, 100.0):
        err = sup_error(net, replace_relu(net, "relu2", box, t), box, 20001).error
        assert err <= 1.25 / (8 * t) + 1e-12
        assert err >= 1.25 / (8 * t) - 1e-12   # attained at x = 0 (a grid point)


def test_formulas_against_torch_builtins() -> None:
    torch = pytest.importorskip("torch")
    nn = torch.nn
    x = torch.linspace(-30, 30, 2001, dtype=torch.float64)
    ref = {
        "leakyrelu": nn.LeakyReLU(0.01), "elu": nn.ELU(), "celu": nn.CELU(), "selu": nn.SELU(),
        "softplus": nn.Softplus(threshold=50), "gelu": nn.GELU(), "silu": nn.SiLU(), "mish": nn.Mish(),
        "sigmoid": nn.Sigmoid(), "tanh": nn.Tanh(), "softsign": nn.Softsign(),
    }
    for name, mod in ref.items():
        want = mod(x).numpy()
        got = activation(name)(x.numpy())
        assert np.allclose(got, want, rtol=1e-12, atol=1e-14), name
    xs = x.clone().requires_grad_(True)
    silu = torch.nn.functional.silu(xs)
    (dsilu,) = torch.autograd.grad(silu.sum(), xs)
    assert np.allclose(activation("dsilu")(x.numpy()), dsilu.numpy(), rtol=1e-12, atol=1e-14)
    xn = x.numpy()
    assert np.allclose(activation("arctan")(xn), np.arctan(xn), rtol=0, atol=0)
    assert np.allclose(activation("relu2")(xn), np.maximum(xn, 0) ** 2, rtol=0, atol=0)
    assert np.allclose(activation("swish", beta=2.0)(xn), xn / (1 + np.exp(-2 * xn)), rtol=1e-12)
    srs = xn / (xn / 2 + np.exp(-xn / 3))
    assert np.allclose(activation("srs")(xn), srs, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ACTIVATION_NAMES)
def test_torch_and_onnx_copies_agree(name: str) -> None:
    torch = pytest.importorskip("torch")
    ort = pytest.importorskip("onnxruntime")
    net = _net(2)
    rho = replace_relu(net, name, BOX, 20.0)
    X = np.random.default_rng(0).uniform(-1, 1, size=(200, 2))
    Y = rho(X)
    Yt = rho.torch()(torch.from_numpy(X)).detach().numpy()
    # the sigmoidal gadget divides differences of activations by h^3 = t^-3: round-off
    # of 1e-16 in an activation value becomes t^3 1e-16 (8e-13 at t = 20) per neuron
    tol = 1e-9 if GADGET_CLASS[name] == "sigmoidal" else 1e-12
    assert np.allclose(Yt, Y, rtol=tol, atol=tol * np.abs(Y).max())
    sess = ort.InferenceSession(rho.onnx().SerializeToString(), providers=["CPUExecutionProvider"])
    Yo = sess.run(None, {"input": X})[0]
    # float64 throughout, except GELU's erf (no float64 kernel in onnxruntime: float32)
    tol = 1e-7 if rho.onnx_float32_steps else tol
    assert np.allclose(Yo, Y, rtol=tol, atol=tol * np.abs(Y).max()), np.abs(Yo - Y).max()


def test_unknown_activation_lists_known_ones() -> None:
    with pytest.raises(RelulabError) as e:
        replace_relu(_net(), "relu6", BOX, 10)
    msg = str(e.value)
    assert "relu6" in msg and all(n in msg for n in ACTIVATION_NAMES)
    assert "\n" not in msg


def test_bad_input() -> None:
    net = _net()
    for bad in (0, -1, float("nan"), float("inf"), "x"):
        with pytest.raises(RelulabError, match="scale"):
            replace_relu(net, "gelu", BOX, bad)
    with pytest.raises(RelulabError):
        replace_relu(net, "gelu", Box([-1.0], [1.0]), 10)       # wrong dimension
    with pytest.raises(RelulabError, match="hidden layer"):
        replace_relu(Network([[[1.0, 2.0]]], [[0.0]]), "gelu", BOX, 10)
    with pytest.raises(RelulabError, match="parameter"):
        activation("elu", beta=3)
    with pytest.raises(RelulabError):
        activation("leakyrelu", negative_slope=1.0)
    with pytest.raises(RelulabError):
        replace_relu(net, "gelu", BOX, 10).save("out.txt")


def test_skip_connection_is_kept() -> None:
    base = _net(5)
    net = Network(base.weights, base.biases, skip=(np.array([[2.0, -1.0]]), np.array([0.5])))
    r = approximate_relu_network(net, "softplus", BOX, 1000.0, n_points=2000)
    assert r.sup_error < 0.01
    d = r.to_dict()
    assert d["status"] == "sampled" and d["network"]["skip"] is True


@pytest.mark.parametrize("name", [n for n, k in GADGET_CLASS.items() if k != "sigmoidal"])
def test_measured_error_within_a_priori_bound(name: str) -> None:
    for seed in (0, 7):
        net = _net(seed)
        for t in (3.0, 50.0):
            r = approximate_relu_network(net, name, BOX, t, n_points=1500)
            assert r.a_priori_bound is not None
            assert r.sup_error <= r.a_priori_bound + 1e-12
    # the bound is gamma M / t propagated (plus float64 rounding): it scales like 1/t
    b1 = approximate_relu_network(_net(), name, BOX, 10.0, n_points=100).a_priori_bound
    b2 = approximate_relu_network(_net(), name, BOX, 100.0, n_points=100).a_priori_bound
    assert abs(b2 * 10 - b1) <= 1e-9 * (1 + b1)  # tol: the rounding terms


@pytest.mark.parametrize("name,scales", [("relu2", (1e9, 1e12, 1e15)),
                                         ("softplus", (1e15, 1e17)), ("gelu", (1e17,))])
def test_a_priori_bound_covers_float64_rounding_at_large_scales(name: str, scales) -> None:
    # ReLU^2's gadget cancels squares of size t^2: at t = 1e9 on max(x1, x2) one point had
    # an error of 1.46e-7 against a rounding-free bound of 6.25e-10 (and 2.6 for 4.4e-13 at
    # t = 1e15 on a random net); the scale class passed its bound at t = 1e17
    from relulab.construct import max_n

    for net in (max_n(2).float(), _net(3)):
        for t in scales:
            r = approximate_relu_network(net, name, BOX, t, n_points=3000)
            assert r.sup_error <= r.a_priori_bound
    x = np.array([[-0.9839878480162195, 0.9491262079791492]])
    r = approximate_relu_network(max_n(2).float(), "relu2", BOX, 1e9, n_points=10)
    assert abs(r.network(x)[0, 0] - x.max()) <= r.a_priori_bound


@pytest.mark.parametrize("beta", [0.01, 0.001])
def test_a_priori_bound_holds_when_the_activation_peaks_far_out(beta: float) -> None:
    """swish with a small beta deviates most from relu near |y| = 1.28 / beta, far outside
    a fixed search grid: measured on a dense grid, the error stays within the bound."""
    from relulab.construct import activation, replace_relu
    from relulab.construct.activations import a_priori_bound

    net = Network([[[1.0]], [[1.0]]], [[0.0], [0.0]])
    box = Box([-1.0], [1.0])
    rho = replace_relu(net, activation("swish", beta=beta), box, 1000.0)
    X = np.linspace(-1, 1, 200_001)[:, None]
    assert np.abs(net(X) - rho(X)).max() <= a_priori_bound(net, rho.act, box, 1000.0)


def test_sigmoidal_has_no_a_priori_bound() -> None:
    assert approximate_relu_network(_net(), "tanh", BOX, 10.0, n_points=100).a_priori_bound is None
