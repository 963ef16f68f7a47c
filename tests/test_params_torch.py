"""Path-norms of torch models (Conv2d, BatchNorm, AvgPool, MaxPool) against an explicit
computation: each layer written out as a dense matrix, every path listed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from relulab import Network
from relulab.errors import RelulabError
from relulab.params import path_lifting, path_norm, path_norm_torch

torch = pytest.importorskip("torch")
nn = torch.nn


def _probe_affine(f, n_in: int) -> tuple[np.ndarray, np.ndarray]:
    """The dense affine map of a function on flat vectors, probed at 0 and at basis vectors."""
    with torch.no_grad():
        zero = f(torch.zeros(1, n_in, dtype=torch.float64)).reshape(-1)
        eye = f(torch.eye(n_in, dtype=torch.float64)).reshape(n_in, -1)
    return (eye - zero).T.numpy(), zero.numpy()


def _window_sum_matrix(
    c: int, h: int, w: int, k: int, s: int, p: int
) -> tuple[np.ndarray, int, int]:
    """Max pooling as the toolkit counts it: 1 on every (output, input-in-window) edge."""
    oh = (h + 2 * p - k) // s + 1
    ow = (w + 2 * p - k) // s + 1
    M = np.zeros((c * oh * ow, c * h * w))
    for ch in range(c):
        for oy in range(oh):
            for ox in range(ow):
                for dy in range(k):
                    for dx in range(k):
                        y, x = oy * s - p + dy, ox * s - p + dx
                        if 0 <= y < h and 0 <= x < w:
                            M[(ch * oh + oy) * ow + ox, (ch * h + y) * w + x] = 1.0
    return M, oh, ow


def explicit_chain(model, input_shape) -> Network:
    """The model as a chain of dense layers (a Network only as a container of layers: the
    path-lifting does not care what runs between them)."""
    mods = [m for m in model if not isinstance(m, nn.Flatten)]
    shape = tuple(input_shape)
    Ws, bs = [], []
    i = 0
    while i < len(mods):
        m = mods[i]
        n_in = math.prod(shape)
        if isinstance(m, nn.ReLU):  # no layer of its own; it only stops batch-norm folding
            i += 1
            continue
        if isinstance(m, nn.Linear):
            shape = (n_in,)  # the Flatten before it
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            group = [m]
            if i + 1 < len(mods) and isinstance(mods[i + 1], (nn.BatchNorm1d, nn.BatchNorm2d)):
                group.append(mods[i + 1])  # folded: probe conv and batch norm together
                i += 1
            seq = nn.Sequential(*group).double().eval()
            W, b = _probe_affine(lambda x, seq=seq, shape=shape: seq(x.reshape(-1, *shape)), n_in)
            with torch.no_grad():
                shape = tuple(seq(torch.zeros(1, *shape, dtype=torch.float64)).shape[1:])
        elif isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            bn = m.double().eval()
            W, b = _probe_affine(lambda x, bn=bn, shape=shape: bn(x.reshape(-1, *shape)), n_in)
        elif isinstance(m, (nn.AvgPool2d, nn.AdaptiveAvgPool2d)):
            pool = m
            W, b = _probe_affine(
                lambda x, pool=pool, shape=shape: pool(x.reshape(-1, *shape)), n_in
            )
            with torch.no_grad():
                shape = tuple(pool(torch.zeros(1, *shape, dtype=torch.float64)).shape[1:])
        elif isinstance(m, nn.MaxPool2d):
            W, oh, ow = _window_sum_matrix(
                shape[0], shape[1], shape[2], m.kernel_size, m.stride, m.padding
            )
            b = np.zeros(W.shape[0])
            shape = (shape[0], oh, ow)
        else:
            raise AssertionError(type(m))
        Ws.append(W)
        bs.append(b)
        i += 1
    return Network(Ws, bs)


def _randomize(model, seed: int):
    g = torch.Generator().manual_seed(seed)
    for mod in model.modules():
        if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d)):
            with torch.no_grad():
                mod.running_mean.copy_(torch.randn(mod.num_features, generator=g))
                mod.running_var.copy_(torch.rand(mod.num_features, generator=g) + 0.5)
                mod.weight.copy_(torch.randn(mod.num_features, generator=g))
                mod.bias.copy_(torch.randn(mod.num_features, generator=g))
    return model.double().eval()


def cnn_a():
    return nn.Sequential(
        nn.Conv2d(1, 2, 3, padding=1),
        nn.BatchNorm2d(2),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(2, 3, 1),
        nn.BatchNorm2d(3),
        nn.ReLU(),
        nn.AvgPool2d(2),
        nn.Flatten(),
        nn.Linear(3, 2),
    )


def cnn_b():
    # stride, padding in max pooling, a standalone batch norm, adaptive average pooling
    return nn.Sequential(
        nn.Conv2d(1, 2, 3, stride=1),
        nn.ReLU(),
        nn.BatchNorm2d(2),
        nn.MaxPool2d(3, stride=2, padding=1),
        nn.Conv2d(2, 1, 1, bias=False),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(1, 3),
        nn.BatchNorm1d(3),
        nn.ReLU(),
        nn.Linear(3, 1),
    )


def cnn_c():
    # average pooling with clipped edge windows (ceil_mode: divisors 2 and 1 at the edges,
    # not k*k) and with padding left out of the divisor (count_include_pad=False)
    return nn.Sequential(
        nn.Conv2d(1, 2, 2, dilation=2, groups=1),
        nn.ReLU(),
        nn.AvgPool2d(2, ceil_mode=True),
        nn.Conv2d(2, 2, 1, groups=2),
        nn.ReLU(),
        nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
        nn.Flatten(),
        nn.Linear(2, 1),
    )


@pytest.fixture(params=["float pass", "log pass"])
def pass_kind(request, monkeypatch):
    """Run a test as it comes, and again with every pass redone in the log domain (a
    threshold of 1e300 counts every number as near underflow)."""
    if request.param == "log pass":
        from relulab.params import pathnorm_torch

        monkeypatch.setattr(pathnorm_torch, "_TINY", 1e300)
    return request.param


@pytest.mark.parametrize("build,shape", [(cnn_a, (1, 4, 4)), (cnn_b, (1, 5, 5)), (cnn_c, (1, 5, 5))])
@pytest.mark.parametrize("seed", [0, 1])
def test_torch_path_norm_matches_explicit_paths(build, shape, seed, pass_kind):
    torch.manual_seed(seed)
    model = _randomize(build(), seed)
    chain = explicit_chain(model, shape)
    pl = path_lifting(chain)
    for q in (0, 1, 2, 3.5, math.inf):
        got = path_norm_torch(model, shape, q)
        want = pl.norm(q)
        if q == 0:
            assert got == want
        else:
            assert got == pytest.approx(want, rel=1e-10)
        # the one-pass norm of the dense chain agrees too
        assert path_norm(chain, q) == pytest.approx(want, rel=1e-10)
        # and path_norm dispatches torch modules
        assert path_norm(model, q, input_shape=shape) == got


def test_avgpool_weight_is_one_over_k_to_the_q():
    # one input, conv 1x1 weight 1, avgpool 2x2 on a 2x2 image: 4 paths of value 1/4 each
    # (+ 4 bias paths of value 1/4 from the conv bias 1)
    model = nn.Sequential(nn.Conv2d(1, 1, 1), nn.AvgPool2d(2)).double()
    with torch.no_grad():
        model[0].weight.fill_(1.0)
        model[0].bias.fill_(1.0)
    for q in (1, 2, 3):
        assert path_norm_torch(model, (1, 2, 2), q) == pytest.approx((8 * 0.25**q) ** (1 / q))
    assert path_norm_torch(model, (1, 2, 2), math.inf) == pytest.approx(0.25)
    assert path_norm_torch(model, (1, 2, 2), 0) == 8


def test_maxpool_counts_as_a_sum_over_its_window():
    model = nn.Sequential(nn.Conv2d(1, 1, 1, bias=False), nn.MaxPool2d(2)).double()
    with torch.no_grad():
        model[0].weight.fill_(-3.0)
    # 4 paths of value -3 (weight 1 through the pool), not 1 as a max would give
    assert path_norm_torch(model, (1, 2, 2), 1) == pytest.approx(12.0)
    assert path_norm_torch(model, (1, 2, 2), 0) == 4


def test_linear_model_agrees_with_network_path_norm():
    torch.manual_seed(3)
    model = nn.Sequential(
        nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 2)
    ).double()
    lin = [m for m in model if isinstance(m, nn.Linear)]
    net = Network([m.weight.detach().numpy() for m in lin], [m.bias.detach().numpy() for m in lin])
    for q in (0, 1, 2, math.inf):
        assert path_norm_torch(model, q=q) == pytest.approx(path_norm(net, q), rel=1e-12)


def test_batchnorm_is_folded_not_a_separate_neuron():
    # Linear -> BN: the bias paths are (a b + c), one edge, not |a b|^q + |c|^q
    model = nn.Sequential(nn.Linear(1, 1), nn.BatchNorm1d(1)).double().eval()
    with torch.no_grad():
        model[0].weight.fill_(2.0)
        model[0].bias.fill_(1.0)
        model[1].running_mean.fill_(1.0)
        model[1].running_var.fill_(1.0 - model[1].eps)
        model[1].weight.fill_(1.0)
        model[1].bias.fill_(0.0)
    # folded: weight 2, bias 1 - 1 = 0
    assert path_norm_torch(model, q=1) == pytest.approx(2.0)
    assert path_norm_torch(model, q=0) == 1


def test_batchnorm_after_relu_is_its_own_layer():
    # Linear -> ReLU -> BN cannot be folded: the BN bias is a separate path of its own
    model = nn.Sequential(nn.Linear(1, 1), nn.ReLU(), nn.BatchNorm1d(1)).double().eval()
    with torch.no_grad():
        model[0].weight.fill_(2.0)
        model[0].bias.fill_(1.0)
        model[2].running_mean.fill_(1.0)
        model[2].running_var.fill_(1.0 - model[2].eps)
        model[2].weight.fill_(1.0)
        model[2].bias.fill_(0.0)
    # paths: x > h > bn (2 * 1), 1 > h > bn (1 * 1), 1 > bn (-1): 2 + 1 + 1
    assert path_norm_torch(model, q=1) == pytest.approx(4.0)
    assert path_norm_torch(model, q=0) == 3


def test_unsupported_layers_are_named():
    model = nn.Sequential(nn.Linear(2, 2), nn.Tanh(), nn.Linear(2, 1))
    with pytest.raises(RelulabError, match=r"layer 1 \(Tanh\)"):
        path_norm_torch(model, q=1)
    with pytest.raises(RelulabError, match="input_shape"):
        path_norm_torch(nn.Sequential(nn.Conv2d(1, 1, 1)), None, 1)


def test_a_pass_beyond_float64_is_taken_on_logs():
    # weights scaled by 1e-200 in the first layer and 1e200 in the second: every path's
    # product is unchanged, but |w|^2 = 1e-400 underflowed in the float pass (0.0 before)
    torch.manual_seed(5)
    model = nn.Sequential(nn.Linear(3, 4, bias=False), nn.ReLU(), nn.Linear(4, 2, bias=False))
    model = model.double()
    want = {q: path_norm_torch(model, q=q) for q in (0.5, 1, 2, 3, math.inf)}
    with torch.no_grad():
        model[0].weight.mul_(1e-200)
        model[2].weight.mul_(1e200)
    for q, v in want.items():
        assert path_norm_torch(model, q=q) == pytest.approx(v, rel=1e-9)
    # and a norm that is itself tiny: the output bias alone, 1e-200 (0.0 before)
    tiny = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1)).double()
    with torch.no_grad():
        for prm in tiny.parameters():
            prm.fill_(1e-200)
    lin = [m for m in tiny if isinstance(m, nn.Linear)]
    net = Network([m.weight.detach().numpy() for m in lin], [m.bias.detach().numpy() for m in lin])
    assert path_norm_torch(tiny, q=2) == pytest.approx(path_norm(net, 2), rel=1e-12)
    assert path_norm_torch(tiny, q=2) > 0.99e-200  # tol: the log-domain round trip


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_non_finite_weight_is_named(bad):
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1)).double()
    with torch.no_grad():
        model[2].weight[0, 1] = bad
    with pytest.raises(RelulabError, match=r"step 2 \(linear\).*NaN or infinite"):
        path_norm_torch(model, q=1)


def _bn_model(w1: float, g: float, var: float, w2: float, relu: bool):
    l1 = nn.Linear(1, 1).double()
    bn = nn.BatchNorm1d(1).double()
    l2 = nn.Linear(1, 1).double()
    with torch.no_grad():
        l1.weight.fill_(w1)
        l1.bias.zero_()
        bn.weight.fill_(g)
        bn.bias.zero_()
        bn.running_mean.zero_()
        bn.running_var.fill_(var)
        l2.weight.fill_(w2)
        l2.bias.zero_()
    bn.eps = 0.0
    return nn.Sequential(*([l1, nn.ReLU(), bn, l2] if relu else [l1, bn, l2])).eval()


def test_a_batch_norm_beyond_float64_is_refused_not_read_as_zero():
    # one path, 1e-200 * 1e-200 * 1e300 = 1e-100: folded into the Linear before it, the
    # product 1e-400 became 0 and the norm read 0.0 (and the path count 0)
    with pytest.raises(RelulabError, match=r"layer 1 \(BatchNorm1d\).*float64's range"):
        path_norm_torch(_bn_model(1e-200, 1e-200, 1.0, 1e300, False), q=1)
    with pytest.raises(RelulabError, match="float64's range"):   # its scale: 1e-200 / 1e150
        path_norm_torch(_bn_model(1e100, 1e-200, 1e300, 1e300, True), q=1)
    # not folded (after a ReLU) its scale is a layer of its own, and the log pass reads it
    assert path_norm_torch(_bn_model(1e-200, 1e-200, 1.0, 1e300, True), q=1) == pytest.approx(1e-100)


def test_the_log_pass_reads_a_linear_layer_on_any_rank(monkeypatch):
    # Linear acts on the last axis: (2, 4) inputs; the forced log pass agrees with the float one
    torch.manual_seed(2)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(6, 1)).double()
    want = {q: path_norm_torch(model, (2, 4), q) for q in (1, 2, math.inf)}
    from relulab.params import pathnorm_torch

    monkeypatch.setattr(pathnorm_torch, "_TINY", 1e300)
    for q, v in want.items():
        assert path_norm_torch(model, (2, 4), q) == pytest.approx(v, rel=1e-9)
