"""Path-norms in one forward pass, for relulab networks and for torch models.

The ``q``-path-norm is the ``q``-norm of the path-lifting (see
:mod:`relulab.params.pathlift`).  Since a path's coordinate is a product of weights,
``|prod w|^q = prod |w|^q``: replacing every weight and bias by ``|w|^q`` and feeding an
all-ones input, the outputs sum to ``sum_paths |path|^q`` (the trick of the path-norm
toolkit of Gonon et al., ICLR 2024).  No path is listed, so this works for networks with
astronomically many paths.  ``q = inf`` runs the same pass in the (max, x) semiring
(largest path product), and ``q = 0`` replaces every weight by ``[w != 0]``, counting the
paths whose product is nonzero.

For torch models :func:`path_norm_torch` walks the modules with the toolkit's
conventions: batch norm folded into a Linear/Conv that directly precedes it (otherwise,
e.g. after a ReLU, a per-channel affine layer of its own), average pooling as edges of
weight ``1/k`` (so ``(1/k)^q`` after the power), max pooling as a *sum* over its window
with weight 1, ReLU as the identity (all values in the pass are >= 0).

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> from relulab.params import path_norm
    >>> net = Network([[[1.0], [-2.0]], [[3.0, 4.0]]], [[0.5, 0.0], [1.0]])
    >>> path_norm(net, 1), path_norm(net, "inf"), path_norm(net, 0)
    (13.5, 8.0, 4)
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import RelulabError, require
from ..network import Network
from .pathlift import parse_q

__all__ = ["path_norm", "path_norms", "path_norm_torch"]


def _pow_abs(a: np.ndarray, q: float) -> np.ndarray:
    """``|a|^q`` entrywise, ``[a != 0]`` for q = 0; exact for Fractions and integer q."""
    if q == 0:
        if a.dtype == object:
            return np.where(a != 0, Fraction(1), Fraction(0)).astype(object)
        return (a != 0).astype(float)
    if a.dtype == object:
        if float(q).is_integer():
            return np.abs(a) ** int(q)
        a = a.astype(float)
    return np.abs(a) ** q


def _net_pass(net: Network, q: float):
    """The sum over paths of ``|path|^q`` (or the max for q = inf) for a Network."""
    exact = net.is_exact and (q == 0 or math.isinf(q) or float(q).is_integer())
    Ws = [np.asarray(W) if exact else np.asarray(W, dtype=float) for W in net.weights]
    bs = [np.asarray(b) if exact else np.asarray(b, dtype=float) for b in net.biases]
    skip = net.skip
    if skip is not None:
        S, s = (
            (skip[0], skip[1])
            if exact
            else (np.asarray(skip[0], float), np.asarray(skip[1], float))
        )
        bs[-1] = bs[-1] + s  # the skip offset is a second bias of the outputs: one bias edge
    one = Fraction(1) if exact else 1.0
    h = np.full(net.input_dim, one, dtype=object if exact else float)
    if math.isinf(q):
        for W, b in zip(Ws, bs, strict=True):
            h = np.maximum(np.abs(b), (np.abs(W) * h[None, :]).max(axis=1))
        top = h.max()
        if skip is not None:
            top = max(top, np.abs(S).max())
        return top
    for W, b in zip(Ws, bs, strict=True):
        h = _pow_abs(W, q) @ h + _pow_abs(b, q)
    total = h.sum()
    if skip is not None:
        total = total + _pow_abs(S, q).sum()
    return total


def _exact_count(net: Network) -> int:
    """The number of paths with nonzero product, in Python integers."""

    def ind(a) -> np.ndarray:
        return np.where(np.asarray(a) != 0, 1, 0).astype(object)

    bs = list(net.biases)
    if net.skip is not None:
        bs[-1] = bs[-1] + net.skip[1]
    h = np.array([1] * net.input_dim, dtype=object)
    for W, b in zip(net.weights, bs, strict=True):
        h = ind(W) @ h + ind(b)
    total = int(h.sum())
    if net.skip is not None:
        total += int(np.count_nonzero(np.asarray(net.skip[0]) != 0))
    return total


def _log(a: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(np.abs(np.asarray(a, dtype=float)))


def _logsumexp_rows(M: np.ndarray) -> np.ndarray:
    """``log sum_i exp(M[j, i])`` per row, -inf for an all -inf row."""
    top = M.max(axis=1)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.exp(M - safe[:, None]).sum(axis=1))


def _net_pass_log(net: Network, q: float) -> float:
    """``log`` of :func:`_net_pass` computed in the log domain, for sums or products that
    overflow or underflow float64 (large q, deep networks, tiny or huge weights)."""
    Ws = [np.asarray(W, dtype=float) for W in net.weights]
    bs = [np.asarray(b, dtype=float) for b in net.biases]
    if net.skip is not None:
        bs[-1] = bs[-1] + np.asarray(net.skip[1], dtype=float)
    h = np.zeros(net.input_dim)  # log of the all-ones input
    for W, b in zip(Ws, bs, strict=True):
        if math.isinf(q):  # (max, +) semiring
            h = np.maximum(_log(b), (_log(W) + h[None, :]).max(axis=1))
        else:
            terms = np.concatenate([q * _log(W) + h[None, :], q * _log(b)[:, None]], axis=1)
            h = _logsumexp_rows(terms)
    if math.isinf(q):
        top = h.max()
        if net.skip is not None:
            top = max(top, _log(net.skip[0]).max())
        return float(top)
    parts = [h]
    if net.skip is not None:
        parts.append(q * _log(net.skip[0]).reshape(-1))
    return float(_logsumexp_rows(np.concatenate(parts)[None, :])[0])


def path_norm(model: Any, q: float | str = 1, *, input_shape: tuple[int, ...] | None = None):
    """The ``q``-path-norm of a :class:`~relulab.Network` or a torch model, in one pass.

    Args:
        model: a Network, or a torch ``nn.Module`` (then :func:`path_norm_torch` is used
            and ``input_shape`` is needed unless the first layer is ``nn.Linear``).
        q: the order, a number >= 0 or ``"inf"``; ``q = 0`` counts nonzero paths.

    Returns:
        A float; for an exact (Fraction) network an exact Fraction when ``q`` is 1 or
        inf; an int for ``q = 0``.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[3.0, -4.0]]], [[0.0]])
        >>> path_norm(net, 2)
        5.0
    """
    q = parse_q(q)
    if not isinstance(model, Network):
        return path_norm_torch(model, input_shape, q)
    try:
        # any overflow or underflow on the way (a partial product of tiny weights can
        # vanish while the final sum looks normal) sends the pass to the log domain
        with np.errstate(over="raise", under="raise"):
            val = _net_pass(model, q)
    except FloatingPointError:
        if q == 0:  # a path count: only its size can overflow; the exact count follows
            return _exact_count(model)
        lv = _net_pass_log(model, q)
        return _exp_or_inf(lv if math.isinf(q) else lv / q)
    if q == 0:
        if not isinstance(val, Fraction) and not float(val) < 2.0**53:
            val = _exact_count(model)  # float sums of integers are exact only below 2^53
        return int(val)
    if isinstance(val, Fraction):
        if math.isinf(q) or q == 1:
            return val
        if val <= 0:
            return 0.0
        # the sum may be far beyond float64 (1e80 weights give 7.3e321) while its root is
        # not: split off a power of two, m * 2^e with m near 1, and take the roots apart
        e = val.numerator.bit_length() - val.denominator.bit_length()
        m = float(val / 2**e) if e >= 0 else float(val * 2**-e)
        return _pow_or_inf(m, 1.0 / q) * _pow_or_inf(2.0, e / q)
    val = float(val)
    if not np.isfinite(val) or val < 1e-290:  # tol: near float64 underflow
        # overflow or underflow (or a true zero): redo the pass in the log domain
        lv = _net_pass_log(model, q)
        return _exp_or_inf(lv if math.isinf(q) else lv / q)
    if math.isinf(q) or q == 1:
        return val
    return _pow_or_inf(val, 1.0 / q)  # overflows for q < 1


_LOG_FLOAT_MAX = math.log(np.finfo(np.float64).max)


def _exp_or_inf(v: float) -> float:
    """``exp(v)``, or ``inf`` where it exceeds float64 (no OverflowError, no warning): a
    path-norm beyond 1.8e308 reads as inf for every q and either kind of network."""
    return math.inf if v > _LOG_FLOAT_MAX else math.exp(v)


def _pow_or_inf(a: float, p: float) -> float:
    """``a ** p`` for ``a > 0``, or ``inf`` where it exceeds float64."""
    try:
        return a**p
    except OverflowError:
        return math.inf


def path_norms(model: Any, qs=(1, 2, "inf"), **kw) -> dict[str, float]:
    """Several path-norms at once: ``{str(q): value}``.

    Example:
        >>> from relulab import Network
        >>> path_norms(Network([[[3.0, -4.0]]], [[0.0]]), (1, 2))
        {'1': 7.0, '2': 5.0}
    """
    out = {}
    for q in qs:
        qf = parse_q(q)
        key = "inf" if math.isinf(qf) else (str(int(qf)) if qf.is_integer() else str(qf))
        out[key] = path_norm(model, qf, **kw)
    return out


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


def _bn_affine(bn) -> tuple[Any, Any]:
    """Batch norm (eval mode) as ``x -> a * x + c`` per channel."""
    torch = require("torch", "torch")
    if bn.running_mean is None or bn.running_var is None:
        raise RelulabError(
            f"{type(bn).__name__}: no running statistics (track_running_stats=False); "
            "cannot fold it into a fixed affine map"
        )
    a = 1.0 / torch.sqrt(bn.running_var.double() + bn.eps)
    if bn.weight is not None:
        a = a * bn.weight.double()
    c = -bn.running_mean.double() * a
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
            a, c = (t.detach() for t in _bn_affine(m))
            if steps and steps[-1][0] in ("linear", "conv"):
                W, b = steps[-1][1][0], steps[-1][1][1]
                shape = (-1,) + (1,) * (W.dim() - 1)
                steps[-1][1][0] = W * a.reshape(shape)
                steps[-1][1][1] = b * a + c
            else:
                steps.append(("affine", [a, c]))
        elif isinstance(m, nn.AvgPool2d):
            if m.padding not in (0, (0, 0)) and not m.count_include_pad:
                raise RelulabError(f"{where}: count_include_pad=False with padding is unsupported")
            k = _pair(m.kernel_size)
            div = m.divisor_override or k[0] * k[1]
            steps.append(
                (
                    "avgpool",
                    dict(
                        kernel_size=k,
                        stride=_pair(m.stride or m.kernel_size),
                        padding=_pair(m.padding),
                        ceil_mode=m.ceil_mode,
                        div=div,
                    ),
                )
            )
        elif isinstance(m, nn.AdaptiveAvgPool2d):
            steps.append(("adaptive_avgpool", _pair(m.output_size)))
        elif isinstance(m, nn.MaxPool2d):
            if _pair(m.dilation) != (1, 1):
                raise RelulabError(f"{where}: dilated max pooling is unsupported")
            if m.return_indices:
                raise RelulabError(f"{where}: return_indices=True is unsupported")
            steps.append(
                (
                    "maxpool",
                    dict(
                        kernel_size=_pair(m.kernel_size),
                        stride=_pair(m.stride or m.kernel_size),
                        padding=_pair(m.padding),
                        ceil_mode=m.ceil_mode,
                    ),
                )
            )
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
    return steps


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
    y = (W.abs()[None, :, :] * x[:, None, :]).amax(dim=2)
    return torch.maximum(y, b.abs()[None, :])


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


def path_norm_torch(
    module: Any, input_shape: tuple[int, ...] | None = None, q: float | str = 1
) -> float:
    """The ``q``-path-norm of a torch ``nn.Sequential`` with the path-norm toolkit's conventions.

    Supported leaves (nested Sequentials are flattened): Linear, Conv2d (zero padding,
    any stride/dilation/groups), BatchNorm1d/2d (eval statistics; folded into a
    Linear/Conv2d directly before it, else a per-channel affine layer), AvgPool2d and
    AdaptiveAvgPool2d (edges of weight ``1/k``), MaxPool2d (a sum over its window,
    edge weight 1), Flatten, ReLU, Identity, Dropout.  ``input_shape`` excludes the
    batch axis, e.g. ``(3, 32, 32)``; it may be omitted when the first layer is Linear.
    ``q = 0`` counts the paths with nonzero product, ``q = inf`` gives the largest.

    Example:
        >>> import torch
        >>> m = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU(), torch.nn.Linear(2, 1))
        >>> _ = [p.data.fill_(1.0) for p in m.parameters()]
        >>> path_norm_torch(m, q=0)   # 2*2 input paths + 2 bias paths + 1 output bias
        7
    """
    torch = require("torch", "torch")
    F = torch.nn.functional
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
    inf = math.isinf(q)
    with torch.no_grad():
        x = torch.ones((1, *[int(v) for v in input_shape]), dtype=torch.float64)
        for pos, (op, data) in enumerate(steps):
            try:
                if op == "linear":
                    W, b = data
                    x = _max_linear(x, W, b) if inf else F.linear(x, _tpow(W, q), _tpow(b, q))
                elif op == "conv":
                    W, b, kw = data
                    if inf:
                        x = _max_conv(
                            x,
                            W,
                            b,
                            _pair(kw["stride"]),
                            _pair(kw["padding"]),
                            _pair(kw["dilation"]),
                            kw["groups"],
                        )
                    else:
                        x = F.conv2d(x, _tpow(W, q), _tpow(b, q), **kw)
                elif op == "affine":
                    a, c = data
                    shape = (1, -1) + (1,) * (x.dim() - 2)
                    if inf:
                        x = torch.maximum(x * a.abs().reshape(shape), c.abs().reshape(shape))
                    else:
                        x = x * _tpow(a, q).reshape(shape) + _tpow(c, q).reshape(shape)
                elif op in ("avgpool", "adaptive_avgpool"):
                    if op == "adaptive_avgpool":
                        h, w = x.shape[-2:]
                        oh, ow = data
                        if h % oh or w % ow:
                            raise RelulabError(
                                f"step {pos} (AdaptiveAvgPool2d): input {h}x{w} is not a multiple "
                                f"of the output {oh}x{ow}; only uniform windows are supported"
                            )
                        k = (h // oh, w // ow)
                        data = dict(
                            kernel_size=k,
                            stride=k,
                            padding=(0, 0),
                            ceil_mode=False,
                            div=k[0] * k[1],
                        )
                    kw = {k: data[k] for k in ("kernel_size", "stride", "padding", "ceil_mode")}
                    if inf:
                        x = F.max_pool2d(x, **kw) / data["div"]
                    else:
                        wq = 1.0 if q == 0 else (1.0 / data["div"]) ** q
                        x = F.avg_pool2d(x, **kw, divisor_override=1) * wq
                elif op == "maxpool":
                    x = (
                        F.max_pool2d(x, **data)
                        if inf
                        else F.avg_pool2d(x, **data, divisor_override=1)
                    )
                elif op == "flatten":
                    x = torch.flatten(x, data[0], data[1])
                # "relu": nothing to do on nonnegative values
            except RuntimeError as e:
                raise RelulabError(
                    f"path_norm_torch: step {pos} ({op}) failed on shape "
                    f"{tuple(x.shape)}: {str(e).splitlines()[0]}"
                ) from None
        if q == 0:
            return int(round(float(x.sum())))
        if inf:
            return float(x.max())
        total = float(x.sum())
        return total if q == 1 else total ** (1.0 / q)
