"""The path-norm of a torch ``nn.Sequential`` with the path-norm toolkit's conventions
(Gonon et al., ICLR 2024): batch norm folded into a Linear/Conv that directly precedes it
(otherwise, e.g. after a ReLU, a per-channel affine layer of its own), average pooling as
edges of weight ``1/(the window's divisor)`` (so its ``q``-th power after the power), max
pooling as a *sum* over its window with weight 1, ReLU as the identity (all values in
the pass are >= 0).  A pass whose numbers leave float64's range (tiny or huge weights,
large q) is redone in the log domain.

Example:
    >>> import torch
    >>> from relulab.params import path_norm_torch
    >>> m = torch.nn.Sequential(torch.nn.Linear(1, 1), torch.nn.ReLU(), torch.nn.Linear(1, 1))
    >>> _ = [p.data.fill_(2.0) for p in m.parameters()]
    >>> path_norm_torch(m, q=1)   # |2*2| + |2*2| (hidden bias) + |2| (output bias)
    10.0
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import RelulabError, require
from .pathlift import _exp_or_inf, parse_q

__all__ = ["path_norm_torch"]


# ----------------------------------------------------------------- torch models
def _leaves(module) -> list:
    """The leaf modules of nested ``nn.Sequential`` containers, in order."""
    torch = require("torch", "torch")
    nn = torch.nn
    if isinstance(module, nn.Sequential):
        out = []
        for m in module:
            out += _leaves(m)
        return out
    return [module]


_NORMAL_MIN = 2.2250738585072014e-308  # tol: float64's smallest normal number


def _fits(t, *factors) -> bool:
    """Whether the product ``t`` of ``factors`` kept float64's range: no entry became
    infinite, and none of nonzero factors became 0 or subnormal."""
    torch = require("torch", "torch")
    if not bool(torch.isfinite(t).all()):
        return False
    nonzero = torch.ones_like(t, dtype=torch.bool)
    for f in factors:
        nonzero = nonzero & (f != 0)
    return not bool((nonzero & (t.abs() < _NORMAL_MIN)).any())


def _range_error(where: str, what: str) -> RelulabError:
    # the float pass and the log pass read the folded numbers: a weight that vanished in
    # the fold (1e-200 * 1e-200) read a norm of 0.0 where it is 1e-100
    return RelulabError(f"path_norm_torch: {where}: {what} leaves float64's range; the toolkit's "
                        "pass cannot represent it")


def _bn_affine(bn, where: str = "BatchNorm") -> tuple[Any, Any]:
    """Batch norm (eval mode) as ``x -> a * x + c`` per channel."""
    torch = require("torch", "torch")
    if bn.running_mean is None or bn.running_var is None:
        raise RelulabError(
            f"{type(bn).__name__}: no running statistics (track_running_stats=False); "
            "cannot fold it into a fixed affine map"
        )
    inv = 1.0 / torch.sqrt(bn.running_var.double() + bn.eps)
    a = inv
    if bn.weight is not None:
        a = inv * bn.weight.double()
        if not _fits(a, inv, bn.weight.double()):
            raise _range_error(where, "its scale weight / sqrt(running_var + eps)")
    mean = bn.running_mean.double()
    c = -mean * a
    if not _fits(c, mean, a):
        raise _range_error(where, "its shift running_mean * scale")
    if bn.bias is not None:
        c = c + bn.bias.double()
    return a, c


def _fold(layers: list) -> list[tuple[str, Any]]:
    """Turn leaf modules into ``(op, data)`` steps, batch norm folded where it follows an
    affine layer."""
    torch = require("torch", "torch")
    nn = torch.nn
    steps: list[tuple[str, Any]] = []
    for pos, m in enumerate(layers):
        where = f"layer {pos} ({type(m).__name__})"
        if isinstance(m, nn.Linear):
            W = m.weight.detach().double()
            b = (
                m.bias.detach().double()
                if m.bias is not None
                else torch.zeros(W.shape[0], dtype=torch.float64)
            )
            steps.append(("linear", [W, b]))
        elif isinstance(m, nn.Conv2d):
            if m.padding_mode != "zeros":
                raise RelulabError(
                    f"{where}: padding_mode={m.padding_mode!r} unsupported (zeros only)"
                )
            if isinstance(m.padding, str):
                raise RelulabError(
                    f"{where}: string padding {m.padding!r} unsupported; give numbers"
                )
            W = m.weight.detach().double()
            b = (
                m.bias.detach().double()
                if m.bias is not None
                else torch.zeros(W.shape[0], dtype=torch.float64)
            )
            steps.append(
                (
                    "conv",
                    [
                        W,
                        b,
                        dict(
                            stride=m.stride, padding=m.padding, dilation=m.dilation, groups=m.groups
                        ),
                    ],
                )
            )
        elif isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            a, c = (t.detach() for t in _bn_affine(m, where))
            if steps and steps[-1][0] in ("linear", "conv"):
                W, b = steps[-1][1][0], steps[-1][1][1]
                shape = (-1,) + (1,) * (W.dim() - 1)
                Wa, ba = W * a.reshape(shape), b * a
                if not (_fits(Wa, W, a.reshape(shape)) and _fits(ba, b, a)
                        and bool(torch.isfinite(ba + c).all())):
                    raise _range_error(where, "folding it into the layer before")
                steps[-1][1][0] = Wa
                steps[-1][1][1] = ba + c
            else:
                steps.append(("affine", [a, c]))
        elif isinstance(m, nn.AvgPool2d):
            # the pass takes each window's own divisor from torch (clipped windows under
            # ceil_mode, padding left out under count_include_pad=False)
            steps.append(("avgpool", dict(_window(m), count_include_pad=m.count_include_pad,
                                          divisor_override=m.divisor_override)))
        elif isinstance(m, nn.AdaptiveAvgPool2d):
            steps.append(("adaptive_avgpool", _pair(m.output_size)))
        elif isinstance(m, nn.MaxPool2d):
            if _pair(m.dilation) != (1, 1):
                raise RelulabError(f"{where}: dilated max pooling is unsupported")
            if m.return_indices:
                raise RelulabError(f"{where}: return_indices=True is unsupported")
            steps.append(("maxpool", _window(m)))
        elif isinstance(m, nn.Flatten):
            steps.append(("flatten", (m.start_dim, m.end_dim)))
        elif isinstance(m, nn.ReLU):
            # the pass only carries nonnegative numbers, so ReLU acts as the identity; but a
            # batch norm after it is its own layer, not foldable into the layer before
            steps.append(("relu", None))
        elif isinstance(m, (nn.Identity, nn.Dropout)):
            continue
        else:
            raise RelulabError(
                f"{where}: unsupported in path_norm_torch (supported: Linear, Conv2d, "
                "BatchNorm1d/2d, AvgPool2d, AdaptiveAvgPool2d, MaxPool2d, Flatten, ReLU, "
                "Identity, Dropout inside nn.Sequential)"
            )
    for pos, (op, data) in enumerate(steps):
        if op in ("linear", "conv", "affine") and not all(
            bool(torch.isfinite(t).all()) for t in data[:2]
        ):
            raise RelulabError(
                f"path_norm_torch: step {pos} ({op}) has a NaN or infinite weight or bias"
            )
    return steps


def _window(m) -> dict:
    """A pooling module's window: kernel, stride, padding and ceil_mode as torch reads them."""
    return dict(kernel_size=_pair(m.kernel_size), stride=_pair(m.stride or m.kernel_size),
                padding=_pair(m.padding), ceil_mode=m.ceil_mode)


def _pair(v) -> tuple[int, int]:
    return (int(v), int(v)) if isinstance(v, int) else (int(v[0]), int(v[1]))


def _tpow(t, q: float):
    torch = require("torch", "torch")
    if q == 0:
        return (t != 0).to(torch.float64)
    return t.abs() ** q


def _max_linear(x, W, b):
    """(max, x) semiring Linear: ``y_j = max(|b_j|, max_i |W_ji| x_i)``."""
    torch = require("torch", "torch")
    y = (W.abs() * x.unsqueeze(-2)).amax(dim=-1)   # (on the last axis of any rank, as Linear)
    return torch.maximum(y, b.abs())


def _max_conv(x, W, b, stride, padding, dilation, groups):
    """(max, x) semiring convolution by unfolding the input patches."""
    torch = require("torch", "torch")
    F = torch.nn.functional
    n, cin, h, w = x.shape
    cout, cin_g, kh, kw = W.shape
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    cols = F.unfold(x, (kh, kw), dilation=dilation, padding=padding, stride=stride)
    cols = cols.reshape(n, groups, cin_g * kh * kw, oh * ow)
    Wg = W.abs().reshape(groups, cout // groups, cin_g * kh * kw)
    # (n, g, cout/g, P, L) -> max over P
    y = (Wg[None, :, :, :, None] * cols[:, :, None, :, :]).amax(dim=3)
    y = y.reshape(n, cout, oh * ow)
    y = torch.maximum(y, b.abs()[None, :, None])
    return y.reshape(n, cout, oh, ow)


#: below this a positive number of the pass is near float64's underflow: the pass is
#: redone in the log domain (a partial product of tiny weights can vanish unseen)
_TINY = 1e-290  # tol: near float64 underflow (2.2e-308)


def _pool_args(op: str, data, x) -> dict:
    """torch's pooling arguments of a pooling step on the input ``x``."""
    if op == "adaptive_avgpool":
        h, w = x.shape[-2:]
        oh, ow = data
        if h % oh or w % ow:
            raise RelulabError(
                f"AdaptiveAvgPool2d: input {h}x{w} is not a multiple of the output "
                f"{oh}x{ow}; only uniform windows are supported"
            )
        k = (h // oh, w // ow)
        return dict(kernel_size=k, stride=k, padding=(0, 0), ceil_mode=False)
    return {k: data[k] for k in ("kernel_size", "stride", "padding", "ceil_mode")}


def _pool_weights(op: str, data, x, kw: dict):
    """Each window's edge weight, ``1 / (the divisor torch uses for it)``, broadcastable to
    the pooled ``x`` (1 for max pooling, whose toolkit edges have weight 1)."""
    torch = require("torch", "torch")
    F = torch.nn.functional
    ones = torch.ones_like(x)
    count = F.avg_pool2d(ones, **kw, divisor_override=1)  # the inputs in each window
    if op == "maxpool":
        return torch.ones_like(count)
    if op == "adaptive_avgpool":
        return F.avg_pool2d(ones, **kw) / count
    # clipped windows (ceil_mode) and count_include_pad=False have divisors below k*k
    mean = F.avg_pool2d(ones, **kw, count_include_pad=data["count_include_pad"],
                        divisor_override=data["divisor_override"])
    return mean / count


def _tiny_or_huge(t) -> bool:
    """Whether a tensor of the pass holds a number near float64's underflow or overflow."""
    torch = require("torch", "torch")
    return bool(torch.isinf(t).any() or ((t > 0) & (t < _TINY)).any())


def _lost(t, tq) -> bool:
    """Whether ``tq = |t|^q`` lost an entry of ``t`` to underflow or overflow."""
    return bool(((tq == 0) & (t != 0)).any()) or _tiny_or_huge(tq)


def _may_underflow(weights, x) -> bool:
    """Whether a product of a positive weight and a positive input can underflow."""
    wp, xp = weights[weights > 0], x[x > 0]
    return bool(len(wp) and len(xp) and float(wp.min()) * float(xp.min()) < _TINY)


def _float_pass(steps, x, q: float):
    """The toolkit's pass on float64 numbers: ``(outputs, whether a number on the way left
    float64's range)`` (then :func:`_log_pass` gives the value)."""
    torch = require("torch", "torch")
    F = torch.nn.functional
    inf = math.isinf(q)
    off = False
    for pos, (op, data) in enumerate(steps):
        try:
            if op in ("linear", "conv"):
                W, b = data[0], data[1]
                Wq, bq = (W.abs(), b.abs()) if inf else (_tpow(W, q), _tpow(b, q))
                off = off or _lost(W, Wq) or _lost(b, bq) or _may_underflow(Wq, x)
                if op == "linear":
                    x = _max_linear(x, W, b) if inf else F.linear(x, Wq, bq)
                else:
                    kw = data[2]
                    x = (_max_conv(x, W, b, _pair(kw["stride"]), _pair(kw["padding"]),
                                   _pair(kw["dilation"]), kw["groups"])
                         if inf else F.conv2d(x, Wq, bq, **kw))
            elif op == "affine":
                a, c = data
                aq, cq = (a.abs(), c.abs()) if inf else (_tpow(a, q), _tpow(c, q))
                off = off or _lost(a, aq) or _lost(c, cq) or _may_underflow(aq, x)
                shape = (1, -1) + (1,) * (x.dim() - 2)
                x = (torch.maximum(x * aq.reshape(shape), cq.reshape(shape)) if inf
                     else x * aq.reshape(shape) + cq.reshape(shape))
            elif op in ("avgpool", "adaptive_avgpool", "maxpool"):
                kw = _pool_args(op, data, x)
                w = _pool_weights(op, data, x, kw)
                wq = w if inf else _tpow(w, q)
                off = off or _lost(w, wq) or _may_underflow(wq, x)
                x = (F.max_pool2d(x, **kw) if inf else F.avg_pool2d(x, **kw, divisor_override=1)) * wq
            elif op == "flatten":
                x = torch.flatten(x, data[0], data[1])
            # "relu": nothing to do on nonnegative values
        except (RuntimeError, RelulabError) as e:
            raise RelulabError(
                f"path_norm_torch: step {pos} ({op}) failed on shape "
                f"{tuple(x.shape)}: {str(e).splitlines()[0]}"
            ) from None
        off = off or _tiny_or_huge(x)
    return x, off


def _logabs(t):
    torch = require("torch", "torch")
    return torch.log(t.abs())  # log 0 = -inf: no path through a zero weight


def _log_windows(h, kernel, stride, padding, dilation, out_hw):
    """The ``(1, C, kh*kw, L)`` windows of a log-domain map ``h`` (padding is -inf: no
    path), ``out_hw`` windows per axis as torch makes them."""
    torch = require("torch", "torch")
    F = torch.nn.functional
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    H, W = h.shape[-2:]
    # pad (or crop) the far side so that exactly out_hw windows fit, as under ceil_mode
    far_h = (out_hw[0] - 1) * sh + dh * (kh - 1) + 1 - H - ph
    far_w = (out_hw[1] - 1) * sw + dw * (kw - 1) + 1 - W - pw
    hp = F.pad(h, (pw, far_w, ph, far_h), value=-math.inf)
    cols = F.unfold(hp, (kh, kw), dilation=(dh, dw), stride=(sh, sw))
    return cols.reshape(1, h.shape[1], kh * kw, -1)


def _log_pass(steps, shape, q: float) -> float:
    """``log`` of the pass's total (its largest entry for q = inf), computed on logs:
    products are sums and sums are log-sum-exps, so no number leaves float64's range."""
    torch = require("torch", "torch")
    F = torch.nn.functional
    inf = math.isinf(q)
    p = 1.0 if inf else q

    def red(t, dim):
        return t.amax(dim) if inf else torch.logsumexp(t, dim)

    def add(a, b):
        return torch.maximum(a, b) if inf else torch.logaddexp(a, b)

    h = torch.zeros(shape, dtype=torch.float64)  # log of the all-ones input
    for op, data in steps:
        if op == "linear":
            W, b = data
            # (a Linear acts on the last axis of an input of any rank)
            h = add(red(p * _logabs(W) + h.unsqueeze(-2), -1), p * _logabs(b))
        elif op == "conv":
            W, b, kw = data
            if h.dim() == 3:
                h = h[None]
            out = F.conv2d(torch.zeros_like(h), torch.zeros_like(W), **kw).shape
            cols = _log_windows(h, W.shape[-2:], _pair(kw["stride"]), _pair(kw["padding"]),
                                _pair(kw["dilation"]), out[-2:])
            g = kw["groups"]
            cols = cols.reshape(1, g, -1, cols.shape[-1])
            Wg = (p * _logabs(W)).reshape(g, W.shape[0] // g, -1)
            y = red(Wg[None, :, :, :, None] + cols[:, :, None, :, :], 3)
            h = add(y.reshape(out), p * _logabs(b).reshape(1, -1, 1, 1))
        elif op == "affine":
            a, c = data
            s = (1, -1) + (1,) * (h.dim() - 2)
            h = add(h + p * _logabs(a).reshape(s), p * _logabs(c).reshape(s))
        elif op in ("avgpool", "adaptive_avgpool", "maxpool"):
            if h.dim() == 3:
                h = h[None]
            kw = _pool_args(op, data, h)
            w = _pool_weights(op, data, h, kw)
            cols = _log_windows(h, kw["kernel_size"], kw["stride"], kw["padding"], (1, 1),
                                w.shape[-2:])
            h = red(cols, 2).reshape(w.shape) + p * torch.log(w)
        elif op == "flatten":
            h = torch.flatten(h, data[0], data[1])
    return float(red(h.reshape(-1), 0))


def path_norm_torch(
    module: Any, input_shape: tuple[int, ...] | None = None, q: float | str = 1
) -> float:
    """The ``q``-path-norm of a torch ``nn.Sequential`` with the path-norm toolkit's conventions.

    Supported leaves (nested Sequentials are flattened): Linear, Conv2d (zero padding,
    any stride/dilation/groups), BatchNorm1d/2d (eval statistics; folded into a
    Linear/Conv2d directly before it, else a per-channel affine layer), AvgPool2d and
    AdaptiveAvgPool2d (edges of weight ``1 / the window's divisor``, as torch averages),
    MaxPool2d (a sum over its window, edge weight 1), Flatten, ReLU, Identity, Dropout.
    ``input_shape`` excludes the batch axis, e.g. ``(3, 32, 32)``; it may be omitted when
    the first layer is Linear.  ``q = 0`` counts the paths with nonzero product, ``q =
    inf`` gives the largest.  Where a number of the float64 pass nears underflow or
    overflow, the pass is redone in the log domain; a norm beyond float64 reads inf.

    Example:
        >>> import torch
        >>> m = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU(), torch.nn.Linear(2, 1))
        >>> _ = [p.data.fill_(1.0) for p in m.parameters()]
        >>> path_norm_torch(m, q=0)   # 2*2 input paths + 2 bias paths + 1 output bias
        7
    """
    torch = require("torch", "torch")
    q = parse_q(q)
    if not isinstance(module, torch.nn.Module):
        raise RelulabError(
            "path_norm: expected a relulab Network or a torch nn.Module, "
            f"got {type(module).__name__}"
        )
    steps = _fold(_leaves(module))
    if input_shape is None:
        if not steps or steps[0][0] != "linear":
            raise RelulabError(
                "path_norm_torch: give input_shape (C, H, W) for a model that "
                "does not start with nn.Linear"
            )
        input_shape = (int(steps[0][1][0].shape[1]),)
    shape = (1, *[int(v) for v in input_shape])
    with torch.no_grad():
        x, off = _float_pass(steps, torch.ones(shape, dtype=torch.float64), q)
        if q == 0:
            total = float(x.sum())
            if not math.isfinite(total):
                raise RelulabError("path_norm_torch: more than 1.8e308 paths to count")
            return int(round(total))
        top = float(x.max()) if math.isinf(q) else float(x.sum())
        if not off and math.isfinite(top):
            if math.isinf(q) or q == 1:
                return top
            try:
                return top ** (1.0 / q)
            except OverflowError:
                pass  # a root beyond float64 (q < 1): the log pass says inf
        lv = _log_pass(steps, shape, q)
    return _exp_or_inf(lv if math.isinf(q) else lv / q)
