"""torch exchange: from_torch agrees with torch (float64) on random Sequentials with
convolutions, batch norms, pooling and leaky ReLUs; to_torch round trips; errors."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from conftest import random_network  # noqa: E402

from relulab import FormatError, Network  # noqa: E402
from relulab.io import load_model, save_model  # noqa: E402
from relulab.io.torch import (  # noqa: E402
    avgpool2d_to_dense,
    batchnorm_affine,
    conv2d_to_dense,
    fold_batchnorm,
    from_torch,
    load_torch_file,
    maxpool2d_windows,
    save_torch_file,
    to_torch,
)

TOL = 1e-9


def _rel_err(a: np.ndarray, b: np.ndarray) -> float:
    """Largest difference relative to the scale of the reference outputs (at least 1)."""
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def _torch_out(m, X: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    with torch.no_grad():
        y = m(torch.from_numpy(X.reshape(-1, *shape)))
    return y.reshape(X.shape[0], -1).numpy()


def _bn(c: int, gen: torch.Generator, two_d: bool = True):
    """A BatchNorm with non-trivial running statistics and affine parameters."""
    bn = (nn.BatchNorm2d if two_d else nn.BatchNorm1d)(c, eps=1e-4)
    with torch.no_grad():
        bn.running_mean.copy_(torch.randn(c, generator=gen))
        bn.running_var.copy_(torch.rand(c, generator=gen) * 2 + 0.2)
        bn.weight.copy_(torch.randn(c, generator=gen))
        bn.bias.copy_(torch.randn(c, generator=gen))
    return bn


def _check(m, shape: tuple[int, ...], n: int = 200, seed: int = 0, scale: float = 1.0) -> Network:
    m = m.double().eval()
    net = from_torch(m, shape)
    X = np.random.default_rng(seed).normal(size=(n, int(np.prod(shape)))) * scale
    ref = _torch_out(m, X, shape)
    assert net.input_dim == X.shape[1] and net.output_dim == ref.shape[1]
    assert _rel_err(net(X), ref) <= TOL
    back = to_torch(net)
    assert _rel_err(_torch_out(back, X, (X.shape[1],)), ref) <= TOL
    return net


# ------------------------------------------------------------ designed cases
def test_cnn_with_everything() -> None:
    g = torch.Generator().manual_seed(0)
    m = nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1),
        _bn(4, g),
        nn.LeakyReLU(0.1),
        nn.MaxPool2d(2),
        nn.Sequential(nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2), nn.ReLU()),
        nn.AvgPool2d(2, ceil_mode=True),
        nn.Flatten(),
        nn.Dropout(0.5),
        nn.Linear(6, 7),
        _bn(7, g, two_d=False),
        nn.ReLU(),
        nn.Identity(),
        nn.Linear(7, 3),
    )
    m.train()  # from_torch uses eval semantics whatever the flag; _check compares in eval
    _check(m, (2, 9, 8))


def test_batchnorm_after_relu_and_pool_on_input() -> None:
    """BatchNorm between a ReLU and a Conv, a MaxPool straight on the (signed) input, and
    a 4-term MaxPool tree after a BatchNorm."""
    g = torch.Generator().manual_seed(5)
    m = nn.Sequential(
        nn.MaxPool2d(2, stride=1),
        nn.Conv2d(2, 3, 2),
        nn.ReLU(),
        _bn(3, g),
        nn.Conv2d(3, 2, 2, padding=1),
        _bn(2, g),
        nn.MaxPool2d(3, stride=2),
        nn.ReLU(),
        nn.Flatten(),
    )
    _check(m, (2, 6, 6))


def test_maxpool_variants() -> None:
    """Overlapping windows, padding (excluded from the max), dilation, ceil mode, a window
    of 9 values (4 tree levels) and a pool directly on the (signed) input."""
    for pool in [
        nn.MaxPool2d(3, stride=1),
        nn.MaxPool2d(3, stride=2, padding=1),
        nn.MaxPool2d(2, stride=2, dilation=2),
        nn.MaxPool2d((2, 3), stride=(1, 2), ceil_mode=True),
        nn.MaxPool2d(1),
        # ceil mode with a dilated window longer than the 6-long axis: torch keeps one window
        nn.MaxPool2d(4, stride=5, dilation=2, ceil_mode=True),
    ]:
        _check(nn.Sequential(pool, nn.Flatten()), (2, 6, 7))
        _check(nn.Sequential(nn.ReLU(), pool, nn.Flatten(), nn.Linear(int(np.prod(pool_out(pool))), 2)), (2, 6, 7))


def pool_out(pool) -> tuple[int, ...]:
    with torch.no_grad():
        return tuple(pool(torch.zeros(1, 2, 6, 7)).shape[1:])


def test_maxpool_after_relu_uses_one_carry_neuron() -> None:
    """After a ReLU the pooled values are known nonnegative: max(a, b) = b + relu(a - b)
    with b carried as relu(b), so a 2x2 window costs 2 + 2 neurons, then 1 + 1."""
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Unflatten(1, (1, 2, 2)), nn.MaxPool2d(2), nn.Flatten())
    net = _check(m, (3,))
    assert net.widths == (4, 4, 2)


def test_conv_variants_match_dense_helper() -> None:
    rng = np.random.default_rng(1)
    convs = [
        nn.Conv2d(3, 6, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=3),
        nn.Conv2d(2, 3, 3, padding="same", dilation=2),
        nn.Conv2d(2, 3, (2, 4), padding="same"),
        nn.Conv2d(2, 2, 3, padding="valid", bias=False),
        nn.Conv2d(2, 4, 3, padding=2, padding_mode="reflect"),
        nn.Conv2d(2, 4, 3, padding=1, padding_mode="replicate"),
        nn.Conv2d(2, 4, 3, padding=(2, 1), padding_mode="circular"),
    ]
    for conv in convs:
        conv = conv.double()
        shape = (conv.in_channels, 5, 6)
        W, b, out = conv2d_to_dense(conv, shape)
        x = rng.normal(size=(10, *shape))
        with torch.no_grad():
            y = conv(torch.from_numpy(x)).numpy()
        assert y.shape[1:] == out
        assert _rel_err(x.reshape(10, -1) @ W.T + b, y.reshape(10, -1)) <= TOL
        _check(nn.Sequential(conv, nn.ReLU(), nn.Flatten()), shape)


def test_avgpool_variants_match_dense_helper() -> None:
    rng = np.random.default_rng(2)
    for pool in [
        nn.AvgPool2d(2),
        nn.AvgPool2d(3, stride=2, padding=1),
        nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
        nn.AvgPool2d((2, 3), stride=2, padding=1, ceil_mode=True),
        nn.AvgPool2d(3, stride=2, ceil_mode=True, divisor_override=5),
        nn.AdaptiveAvgPool2d((3, 4)),
        nn.AdaptiveAvgPool2d(1),
    ]:
        shape = (2, 7, 6)
        W, b, out = avgpool2d_to_dense(pool, shape)
        x = rng.normal(size=(5, *shape))
        with torch.no_grad():
            y = pool(torch.from_numpy(x)).numpy()
        assert y.shape[1:] == out
        assert _rel_err(x.reshape(5, -1) @ W.T + b, y.reshape(5, -1)) <= TOL
        _check(nn.Sequential(pool, nn.Flatten()), shape)


def test_other_activations_and_layers() -> None:
    g = torch.Generator().manual_seed(3)
    prelu = nn.PReLU(3)
    with torch.no_grad():
        prelu.weight.copy_(torch.tensor([0.1, -0.5, 2.0]))
    m = nn.Sequential(
        nn.Conv1d(2, 3, 3, padding=1),
        prelu,
        nn.Flatten(),
        nn.Linear(15, 6),
        nn.ReLU6(),
        nn.Linear(6, 6),
        nn.Hardtanh(-0.5, 0.25),
        nn.Linear(6, 12),
        nn.Unflatten(1, (3, 2, 2)),
        nn.ZeroPad2d((1, 0, 0, 1)),
        nn.ConstantPad2d(1, 0.3),
        _bn(3, g),
        nn.LeakyReLU(1.5),
        nn.Flatten(),
    )
    _check(m, (2, 5), scale=3.0)


def test_consecutive_affine_modules_merge_into_one_layer() -> None:
    g = torch.Generator().manual_seed(6)
    m = nn.Sequential(
        nn.Conv2d(1, 2, 2), _bn(2, g), nn.AvgPool2d(2), nn.Flatten(), nn.Dropout(), nn.Linear(2, 3),
        _bn(3, g, two_d=False), nn.Identity(), nn.ReLU(), nn.Linear(3, 4), nn.Linear(4, 2),
    )
    net = _check(m, (1, 3, 3))
    assert net.widths == (3,) and net.depth == 2
    # a Linear on the last axis of a (C, L) tensor
    net = _check(nn.Sequential(nn.Conv1d(2, 3, 2), nn.Linear(4, 2), nn.ReLU(), nn.Flatten()), (2, 5))
    assert net.widths == (6,)


def test_maxpool_windows_and_fold_batchnorm() -> None:
    wins, out = maxpool2d_windows(nn.MaxPool2d(2, stride=1), (1, 2, 3))
    assert out == (1, 1, 2) and [w.tolist() for w in wins] == [[0, 1, 3, 4], [1, 2, 4, 5]]
    g = torch.Generator().manual_seed(4)
    lin, bn = nn.Linear(3, 4).double(), _bn(4, g, two_d=False).double().eval()
    W, b = fold_batchnorm(lin.weight.detach().numpy(), lin.bias.detach().numpy(), bn)
    x = np.random.default_rng(0).normal(size=(20, 3))
    with torch.no_grad():
        y = bn(lin(torch.from_numpy(x))).numpy()
    assert _rel_err(x @ W.T + b, y) <= TOL
    conv, bn2 = nn.Conv2d(2, 3, 2).double(), _bn(3, g).double().eval()
    Wc, bc, out = conv2d_to_dense(conv, (2, 4, 4))
    W2, b2 = fold_batchnorm(Wc, bc, bn2, spatial=out[1] * out[2])
    xc = np.random.default_rng(1).normal(size=(5, 2, 4, 4))
    with torch.no_grad():
        yc = bn2(conv(torch.from_numpy(xc))).numpy().reshape(5, -1)
    assert _rel_err(xc.reshape(5, -1) @ W2.T + b2, yc) <= TOL
    k, t = batchnorm_affine(bn)
    assert k.shape == t.shape == (4,)


# ------------------------------------------------------------ random Sequentials
def _random_cnn(rng: np.random.Generator, gen: torch.Generator):
    """A random CNN: 1-2 blocks of [Conv, maybe BatchNorm, ReLU or LeakyReLU, maybe a
    MaxPool or AvgPool], then Flatten and 1-2 Linear layers (maybe BatchNorm1d)."""
    C = int(rng.integers(1, 3))
    H, W = int(rng.integers(5, 8)), int(rng.integers(5, 8))
    shape = (C, H, W)
    mods: list = []
    c, h, w = C, H, W
    for _ in range(int(rng.integers(1, 3))):
        out_c = int(rng.integers(1, 4))
        k = int(rng.integers(1, 4))
        pad = int(rng.integers(0, 2))
        stride = int(rng.integers(1, 3))
        if h + 2 * pad < k or w + 2 * pad < k:
            break
        mods.append(nn.Conv2d(c, out_c, k, stride=stride, padding=pad))
        c, h, w = out_c, (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
        if rng.random() < 0.6:
            mods.append(_bn(c, gen))
        mods.append(nn.LeakyReLU(float(rng.uniform(0.01, 0.5))) if rng.random() < 0.5 else nn.ReLU())
        if min(h, w) >= 2 and rng.random() < 0.7:
            if rng.random() < 0.5:
                mods.append(nn.MaxPool2d(2, stride=int(rng.integers(1, 3))))
            else:
                mods.append(nn.AvgPool2d(2, stride=int(rng.integers(1, 3))))
            s = mods[-1].stride
            h, w = (h - 2) // s + 1, (w - 2) // s + 1
    mods.append(nn.Flatten())
    n = c * h * w
    for _ in range(int(rng.integers(1, 3))):
        m = int(rng.integers(2, 6))
        mods.append(nn.Linear(n, m))
        if rng.random() < 0.4:
            mods.append(_bn(m, gen, two_d=False))
        mods.append(nn.ReLU())
        n = m
    mods.append(nn.Linear(n, int(rng.integers(1, 4))))
    return nn.Sequential(*mods), shape


@pytest.mark.parametrize("seed", range(12))
def test_random_sequentials_match_torch(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    m, shape = _random_cnn(rng, gen)
    _check(m, shape, n=100, seed=seed)


# ---------------------------------------------------------------- round trips
@pytest.mark.parametrize("dims,skip", [([3, 1], False), ([4, 6, 2], False), ([2, 5, 5, 3], False), ([3, 4, 2], True)])
def test_to_torch_from_torch_is_exact(dims, skip) -> None:
    net = random_network(np.random.default_rng(len(dims)), dims, skip=skip)
    m = to_torch(net)
    assert all(p.dtype == torch.float64 for p in m.parameters())
    assert from_torch(m) == net.without_skip()
    X = np.random.default_rng(9).normal(size=(50, dims[0]))
    assert _rel_err(_torch_out(m, X, (dims[0],)), net(X)) <= 1e-12


def test_torch_file_round_trip(tmp_path: Path) -> None:
    net = random_network(np.random.default_rng(0), [3, 5, 2])
    save_torch_file(net, tmp_path / "n.pt")
    assert load_torch_file(tmp_path / "n.pt") == net
    save_model(net, tmp_path / "n.pth")
    assert load_model(tmp_path / "n.pth") == net
    # a dict with the model and its input shape (needed for convolutions)
    m = nn.Sequential(nn.Conv2d(1, 2, 2), nn.ReLU(), nn.Flatten(), nn.Linear(8, 1)).double()
    torch.save({"model": m, "input_shape": (1, 3, 3)}, tmp_path / "cnn.pt")
    assert load_model(tmp_path / "cnn.pt") == from_torch(m, (1, 3, 3))


# -------------------------------------------------------------------- errors
def test_unsupported_module_names_path_and_type() -> None:
    m = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.ReLU(), nn.Linear(3, 3), nn.Identity(), nn.Sigmoid()))
    with pytest.raises(FormatError, match=re.escape("1.3 (Sigmoid): unsupported module")):
        from_torch(m)

    class Custom(nn.Module):
        def forward(self, x):
            return x

    with pytest.raises(FormatError, match=re.escape("1 (Custom): unsupported module")):
        from_torch(nn.Sequential(nn.Linear(2, 2), Custom()))


def test_a_module_with_its_own_forward_is_refused_whatever_it_inherits_or_is_named() -> None:
    # a residual block written as an nn.Sequential subclass was read child by child: the
    # skip was dropped silently
    class Residual(nn.Sequential):
        def forward(self, x):
            return x + super().forward(x)

    class Linear(nn.Module):  # a user class that only shares torch's name
        def __init__(self):
            super().__init__()
            self.in_features = 3

        def forward(self, x):
            return 2 * x

    for inner in (Residual(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 3)), Linear()):
        m = nn.Sequential(nn.Linear(3, 3), inner).double()
        with pytest.raises(FormatError, match=re.escape(f"1 ({type(inner).__name__}): unsupported module with its own forward")):
            from_torch(m, input_shape=3)
    # a subclass that keeps torch's forward computes torch's layer: read, and equal

    class Tagged(nn.Linear):
        pass

    m = nn.Sequential(Tagged(3, 4), nn.ReLU(), nn.Linear(4, 2)).double()
    x = torch.randn(5, 3, dtype=torch.float64)
    np.testing.assert_allclose(from_torch(m)(x.numpy()), m(x).detach().numpy(), rtol=1e-12, atol=1e-12)


def test_a_negative_running_variance_is_named_at_its_module() -> None:
    bn = nn.BatchNorm1d(3).eval()
    bn.running_var[1] = -4.0
    with pytest.raises(FormatError, match=re.escape("1 (BatchNorm1d): channel 1 has running variance -4.0")):
        from_torch(nn.Sequential(nn.Linear(2, 3), bn))


def test_shape_errors() -> None:
    with pytest.raises(FormatError, match=re.escape("2 (Linear): takes 4 features")):
        from_torch(nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(4, 1)))
    with pytest.raises(FormatError, match="needs input_shape"):
        from_torch(nn.Sequential(nn.Conv2d(1, 1, 2)))
    with pytest.raises(FormatError, match=re.escape("0 (Conv2d):")):
        from_torch(nn.Sequential(nn.Conv2d(1, 1, 2)), (2, 4, 4))
    with pytest.raises(FormatError, match=re.escape("0 (Conv2d): kernel 5")):
        from_torch(nn.Sequential(nn.Conv2d(1, 1, 5)), (1, 3, 3))
    with pytest.raises(FormatError, match=re.escape("1 (BatchNorm1d): 3 channels do not fit")):
        from_torch(nn.Sequential(nn.Linear(2, 4), nn.BatchNorm1d(3)))


def test_batchnorm_without_running_stats_and_nan_weights() -> None:
    with pytest.raises(FormatError, match="running statistics"):
        from_torch(nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2, track_running_stats=False)))
    lin = nn.Linear(2, 2)
    with torch.no_grad():
        lin.weight[0, 0] = float("nan")
    with pytest.raises(FormatError, match="NaN"):
        from_torch(nn.Sequential(lin))
    # the error names the module that holds the NaN, not a layer of the lowered network
    with pytest.raises(FormatError, match=re.escape("2 (Linear): weight contains NaN")):
        from_torch(nn.Sequential(nn.Linear(2, 2), nn.ReLU(), lin))
    bn = nn.BatchNorm1d(2).eval()
    bn.running_var[1] = float("inf")
    with pytest.raises(FormatError, match=re.escape("1 (BatchNorm1d): running_var contains NaN")):
        from_torch(nn.Sequential(nn.Linear(2, 2), bn))


def test_bad_torch_files(tmp_path: Path) -> None:
    p = tmp_path / "junk.pt"
    p.write_bytes(b"not a pickle")
    with pytest.raises(FormatError, match="junk.pt: cannot read a torch file"):
        load_torch_file(p)
    torch.save(nn.Linear(2, 2).state_dict(), tmp_path / "sd.pt")
    with pytest.raises(FormatError, match="sd.pt: holds a state_dict"):
        load_torch_file(tmp_path / "sd.pt")
    torch.save(nn.Sequential(nn.Linear(2, 2), nn.Tanh()), tmp_path / "tanh.pt")
    with pytest.raises(FormatError, match=re.escape("tanh.pt: 1 (Tanh): unsupported module")):
        load_model(tmp_path / "tanh.pt")
    torch.save({"x": 1}, tmp_path / "d.pt")  # a dict, but not of tensors: not a state_dict
    with pytest.raises(FormatError, match=re.escape("d.pt: holds a dict with keys ['x'] and no 'model'")):
        load_model(tmp_path / "d.pt")
    # what `relulab construct activation -o x.pt` writes is named, not called a state_dict
    from relulab.construct.activations import replace_relu
    from relulab.domain import Box

    act = replace_relu(random_network(np.random.default_rng(1), [2, 3, 1]), "gelu", Box([-1, -1], [1, 1]), 10.0)
    act.save(str(tmp_path / "act.pt"))
    with pytest.raises(FormatError, match="act.pt: holds a relulab gelu-activated network"):
        load_model(tmp_path / "act.pt")


def test_an_input_shape_too_large_to_lower_is_refused_with_the_file(tmp_path: Path) -> None:
    # (1, 40000, 40000) is 1.6e9 inputs: numpy would allocate the input's 13 GB offset
    # lazily and the process be killed while filling it; the tracer refuses it first.
    from relulab.limits import ResourceLimitError, memory_limit

    m = nn.Sequential(nn.Conv2d(1, 1, 3), nn.ReLU(), nn.Flatten()).double()
    torch.save({"model": m, "input_shape": (1, 40000, 40000)}, tmp_path / "big.pt")
    with memory_limit(2**33), pytest.raises(  # 8 GB: the refusal does not hang on the machine's size
            ResourceLimitError, match=re.escape(f"{tmp_path / 'big.pt'}: the input of shape")):
        load_model(tmp_path / "big.pt")
    torch.save({"model": m, "input_shape": (1, 5, 5)}, tmp_path / "small.pt")
    with memory_limit(2**9):  # a budget too small even for 25 inputs
        with pytest.raises(ResourceLimitError, match="small.pt: the input of shape"):
            load_model(tmp_path / "small.pt")
    assert load_model(tmp_path / "small.pt") == from_torch(m, (1, 5, 5))


def test_an_unsupported_first_module_is_named_not_blamed_on_the_input_shape() -> None:
    # an LSTM (or Tanh) first cannot be read at any input shape: asking for one misleads
    for m, where in ((nn.LSTM(2, 3), "<root> (LSTM)"), (nn.Sequential(nn.Tanh(), nn.Linear(2, 1)), "0 (Tanh)")):
        with pytest.raises(FormatError, match=re.escape(f"{where}: unsupported module")):
            from_torch(m)
    with pytest.raises(FormatError, match="needs input_shape"):  # a supported first layer
        from_torch(nn.Sequential(nn.ReLU(), nn.Linear(2, 1)))


def test_modules_with_forward_hooks_are_refused_not_read_without_them(tmp_path):
    # prune recomputes `weight` in a pre-hook: after an optimiser step the stored weight is
    # stale, and the .pt file read as it stood made `verify` say "holds" for a violated
    # property; a forward hook that doubles an output was dropped silently
    import torch.nn.utils.prune as prune

    from relulab.io import load_model

    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)).double()
    prune.l1_unstructured(m[0], "weight", amount=0.5)
    opt = torch.optim.SGD(m.parameters(), lr=0.5)
    X = torch.randn(64, 3, dtype=torch.float64)
    opt.zero_grad()
    (m(X) ** 2).mean().backward()
    opt.step()
    path = tmp_path / "pruned.pt"
    torch.save(m, path)
    with pytest.raises(FormatError, match="pruned .*prune.remove"):
        load_model(path)
    prune.remove(m[0], "weight")                  # made permanent: read, and equal to torch
    x = torch.randn(5, 3, dtype=torch.float64)
    with torch.no_grad():
        assert np.allclose(from_torch(m)(x.numpy()), m(x).numpy(), rtol=1e-12, atol=1e-12)
    h = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1)).double()
    h[2].register_forward_hook(lambda mod, inp, out: 2 * out)
    with pytest.raises(FormatError, match=r"^2 \(Linear\): has forward hooks"):
        from_torch(h)


def test_a_reading_that_differs_from_the_module_is_refused():
    from relulab.io.torch import _check_against_module

    m = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1)).double()
    net = from_torch(m)
    _check_against_module(m, net, (2,))                      # its own reading passes
    W = [w.copy() for w in net.weights]
    W[-1] = W[-1] + 1e-3
    with pytest.raises(FormatError, match="differs from the module"):
        _check_against_module(m, Network(W, list(net.biases)), (2,))


def test_a_module_with_large_inner_values_is_not_refused_for_its_own_rounding():
    # inner values of 1e9 and outputs of 0.1: the module's own float64 pass is off by
    # 1.6e-7 (the lowered network, whose two Linear layers fold into one, is exact) and the
    # check, relative to the outputs alone, refused it (aud_sess9)
    from fractions import Fraction

    m = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU(), torch.nn.Linear(2, 2),
                            torch.nn.Linear(2, 1)).double()
    with torch.no_grad():
        m[0].weight.copy_(torch.tensor([[1.0, 0.3], [0.7, 1.0]]))
        m[0].bias.zero_()
        m[2].weight.copy_(torch.tensor([[1e9, 0.0], [1e9, 1e-3]]))
        m[2].bias.copy_(torch.tensor([0.1, 0.2]))
        m[3].weight.copy_(torch.tensor([[1.0, -1.0]]))
        m[3].bias.zero_()
    net = from_torch(m)
    P = [np.vectorize(Fraction)(p.detach().numpy().astype(object)) for p in m.parameters()]
    for x in np.random.default_rng(0).standard_normal((4, 2)):
        h = np.maximum(P[0] @ np.vectorize(Fraction)(x.astype(object)) + P[1], 0)
        want = P[4] @ (P[2] @ h + P[3]) + P[5]
        assert abs(net(x[None])[0, 0] - float(want[0])) <= 1e-9
