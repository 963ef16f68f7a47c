"""torch model exchange, and the exact affine tracer shared with the ONNX reader.

``from_torch(module, input_shape)`` turns an ``nn.Sequential`` (nested ones too) into a
:class:`~relulab.Network` that computes the same function of the *flattened* input
(torch's C-order ``flatten``).  Affine modules (Linear, Conv, BatchNorm in eval mode,
AvgPool, Flatten, padding, Identity, Dropout) are composed into one affine map
between two nonlinearities; every piecewise-linear activation becomes ReLUs exactly:

* ``LeakyReLU(a)``: ``leaky(z) = relu(z) - a * relu(-z)`` (two neurons per unit; equal to
  torch's result bit for bit before the next layer);
* ``ReLU6`` / ``Hardtanh(lo, hi)``: ``lo + relu(z - lo) - relu(z - hi)``;
* ``PReLU``: like LeakyReLU with one slope per channel;
* ``MaxPool2d``: ``max(a, b) = b + relu(a - b)`` in a tree of pairwise maxima
  (``ceil(log2 k)`` hidden layers for a window of ``k`` values); a value that is
  known to be nonnegative (a ReLU output with nonnegative coefficients) rides along
  as ``relu(b)``, any other as ``relu(b) - relu(-b)``.

The tracer works on "affine tensors": a tensor of shape ``S`` whose entries are
affine functions ``A h + c`` of the current hidden vector ``h`` (the network input
before the first ReLU, then the output of the last hidden layer).  A nonlinearity
closes the current layer.  The ONNX reader (``relulab.io.onnx``) walks graphs with
the same tracer.

Example:
    >>> import torch, numpy as np
    >>> from relulab.io.torch import from_torch, to_torch
    >>> m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LeakyReLU(0.1),
    ...                         torch.nn.Linear(4, 2)).double()
    >>> net = from_torch(m)
    >>> net.widths                      # each leaky unit is two ReLUs
    (8,)
    >>> x = np.random.default_rng(0).normal(size=(5, 3))
    >>> bool(np.allclose(net(x), m(torch.from_numpy(x)).detach().numpy()))
    True
    >>> from_torch(to_torch(net)) == net
    True
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..errors import FormatError, require
from ..limits import ResourceLimitError
from ..network import Network
from ._atomic import atomic_path
from ._lowering import (
    AffineTracer,
    Value,
    avgpool2d_sparse,
    batchnorm_scale,
    conv2d_sparse,
    pool_windows,
)

__all__ = [
    "from_torch",
    "to_torch",
    "load_torch_file",
    "load_torch_module",
    "save_torch_file",
    "conv2d_to_dense",
    "avgpool2d_to_dense",
    "maxpool2d_windows",
    "batchnorm_affine",
    "fold_batchnorm",
    "AffineTracer",
]


# ========================================================== torch helpers (public)
def _np(t: Any) -> np.ndarray:
    return t.detach().cpu().double().numpy().copy()


def _pair(v: Any) -> tuple[int, int]:
    if isinstance(v, (tuple, list)):
        return (int(v[0]), int(v[1])) if len(v) == 2 else (int(v[0]), int(v[0]))
    return int(v), int(v)


def _chw(input_shape: Sequence[int]) -> tuple[int, int, int]:
    s = tuple(int(x) for x in input_shape)
    if len(s) == 4 and s[0] == 1:
        s = s[1:]
    if len(s) != 3:
        raise ValueError(f"expected an input shape (C, H, W), got {tuple(input_shape)}")
    return s  # type: ignore[return-value]


def _conv_pads(conv: Any) -> tuple[int, int, int, int]:
    kh, kw = conv.kernel_size
    dh, dw = conv.dilation
    if isinstance(conv.padding, str):
        if conv.padding == "valid":
            return 0, 0, 0, 0
        # 'same': torch puts the odd extra row/column at the end
        th, tw = dh * (kh - 1), dw * (kw - 1)
        return th // 2, tw // 2, th - th // 2, tw - tw // 2
    ph, pw = _pair(conv.padding)
    return ph, pw, ph, pw


def conv2d_to_dense(conv: Any, input_shape: Sequence[int]) -> tuple[np.ndarray, np.ndarray, tuple[int, int, int]]:
    """A ``torch.nn.Conv2d`` as a dense affine map on C-order flattened tensors.

    Args:
        conv: the ``nn.Conv2d`` (any stride, padding incl. 'same', dilation, groups and
            padding mode).
        input_shape: ``(C, H, W)`` (a leading batch axis of 1 is accepted).

    Returns:
        ``(W, b, (O, OH, OW))`` with ``W`` of shape ``(O*OH*OW, C*H*W)``.

    Example:
        >>> import torch, numpy as np
        >>> conv = torch.nn.Conv2d(1, 2, 3, padding=1).double()
        >>> W, b, out = conv2d_to_dense(conv, (1, 4, 4))
        >>> x = np.random.default_rng(0).normal(size=(1, 1, 4, 4))
        >>> y = conv(torch.from_numpy(x)).detach().numpy().reshape(-1)
        >>> out, bool(np.allclose(W @ x.reshape(-1) + b, y))
        ((2, 4, 4), True)
    """
    C, H, W_ = _chw(input_shape)
    M, out = conv2d_sparse(
        _np(conv.weight),
        (C, H, W_),
        conv.stride,
        _conv_pads(conv),
        conv.dilation,
        conv.groups,
        conv.padding_mode,
    )
    bias = np.zeros(out[0]) if conv.bias is None else _np(conv.bias)
    return M.toarray(), np.repeat(bias, out[1] * out[2]), out


def _avgpool_args(pool: Any) -> dict:
    k = _pair(pool.kernel_size)
    s = _pair(pool.stride if pool.stride is not None else pool.kernel_size)
    ph, pw = _pair(pool.padding)
    return dict(
        kernel=k,
        stride=s,
        pads=(ph, pw, ph, pw),
        ceil_mode=bool(pool.ceil_mode),
        count_include_pad=bool(pool.count_include_pad),
        divisor_override=pool.divisor_override,
    )


def avgpool2d_to_dense(pool: Any, input_shape: Sequence[int]) -> tuple[np.ndarray, np.ndarray, tuple[int, int, int]]:
    """A ``torch.nn.AvgPool2d`` (or ``AdaptiveAvgPool2d``) as a dense linear map.

    Returns ``(W, b, (C, OH, OW))`` with ``b`` zero, like :func:`conv2d_to_dense`.

    Example:
        >>> import torch
        >>> W, b, out = avgpool2d_to_dense(torch.nn.AvgPool2d(2), (1, 2, 2))
        >>> W.tolist(), out
        ([[0.25, 0.25, 0.25, 0.25]], (1, 1, 1))
    """
    C, H, W_ = _chw(input_shape)
    M, out = _avgpool_module_sparse(pool, (C, H, W_))
    return M.toarray(), np.zeros(M.shape[0]), out


def _avgpool_module_sparse(pool: Any, chw: tuple[int, int, int]) -> tuple[Any, tuple[int, int, int]]:
    import scipy.sparse as sp

    if _kind(pool) == "AdaptiveAvgPool2d":
        C, H, W = chw
        osz = pool.output_size
        OH, OW = (osz, osz) if isinstance(osz, int) else osz
        OH, OW = OH or H, OW or W

        def bins(size: int, out: int) -> list[np.ndarray]:
            return [
                np.arange((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)
            ]

        bh, bw = bins(H, OH), bins(W, OW)
        rows, cols, vals = [], [], []
        r = 0
        for c in range(C):
            for i in range(OH):
                for j in range(OW):
                    w = ((c * H + bh[i][:, None]) * W + bw[j][None, :]).reshape(-1)
                    rows.append(np.full(w.size, r))
                    cols.append(w)
                    vals.append(np.full(w.size, 1.0 / w.size))
                    r += 1
        M = sp.csr_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(r, C * H * W)
        )
        return M, (C, OH, OW)
    return avgpool2d_sparse(chw, **_avgpool_args(pool))


def maxpool2d_windows(pool: Any, input_shape: Sequence[int]) -> tuple[list[np.ndarray], tuple[int, int, int]]:
    """The windows of a ``torch.nn.MaxPool2d``: for each output entry (C-order) the flat
    C-order indices of the input entries it takes the maximum of (padding excluded).

    Example:
        >>> import torch
        >>> wins, out = maxpool2d_windows(torch.nn.MaxPool2d(2), (1, 2, 4))
        >>> [w.tolist() for w in wins], out
        ([[0, 1, 4, 5], [2, 3, 6, 7]], (1, 1, 2))
    """
    C, H, W = _chw(input_shape)
    k = _pair(pool.kernel_size)
    s = _pair(pool.stride if pool.stride is not None else pool.kernel_size)
    ph, pw = _pair(pool.padding)
    windows, _, out = pool_windows((C, H, W), k, s, (ph, pw, ph, pw), _pair(pool.dilation), bool(pool.ceil_mode))
    return windows, out


def batchnorm_affine(bn: Any, where: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel ``(k, t)`` with ``bn(x) = k * x + t`` in eval mode (running statistics);
    errors name ``where`` (default: the module's type).

    Example:
        >>> import torch
        >>> bn = torch.nn.BatchNorm1d(2).eval()
        >>> k, t = batchnorm_affine(bn); k.round(4).tolist(), t.tolist()
        ([1.0, 1.0], [0.0, 0.0])
    """
    if bn.running_mean is None or bn.running_var is None:
        raise FormatError(
            f"{type(bn).__name__} without running statistics (track_running_stats=False) "
            "normalises by batch statistics: not a fixed function"
        )
    mean, var = _np(bn.running_mean), _np(bn.running_var)
    gamma = _np(bn.weight) if bn.weight is not None else np.ones_like(mean)
    beta = _np(bn.bias) if bn.bias is not None else np.zeros_like(mean)
    k = batchnorm_scale(gamma, var, float(bn.eps), where or type(bn).__name__)
    return k, beta - k * mean


def fold_batchnorm(
    W: np.ndarray, b: np.ndarray, bn: Any, spatial: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Fold an eval-mode BatchNorm that follows the affine map ``x -> W x + b``.

    ``W``'s rows are the C-order flattened output (``C * spatial`` rows: channel-major,
    ``spatial`` positions per channel, as after :func:`conv2d_to_dense`).  Returns
    ``(W', b')`` with ``bn(W x + b) = W' x + b'``.

    Example:
        >>> import torch, numpy as np
        >>> bn = torch.nn.BatchNorm1d(2).eval(); bn.running_mean.fill_(1.0)
        tensor([1., 1.])
        >>> W2, b2 = fold_batchnorm(np.eye(2), np.zeros(2), bn)
        >>> np.round(b2, 4).tolist()
        [-1.0, -1.0]
    """
    k, t = batchnorm_affine(bn)
    W = np.asarray(W, dtype=np.float64)
    if W.shape[0] != k.size * spatial:
        raise ValueError(f"{W.shape[0]} rows do not fit {k.size} channels x {spatial} positions")
    kk, tt = np.repeat(k, spatial), np.repeat(t, spatial)
    return W * kk[:, None], np.asarray(b, dtype=np.float64) * kk + tt


# ========================================================================= from_torch
# the module types _apply_module lowers (Dropout variants are matched by name); the error
# messages list them from here, so the two cannot drift apart
_READ_ORDER = (
    "Linear", "ReLU", "LeakyReLU", "PReLU", "ReLU6", "Hardtanh", "Flatten", "Unflatten", "Identity",
    "BatchNorm1d", "BatchNorm2d", "Conv1d", "Conv2d", "AvgPool2d", "AdaptiveAvgPool2d", "MaxPool2d",
    "ZeroPad2d", "ConstantPad2d",
)
_READ = frozenset(_READ_ORDER)
_SUPPORTED = ", ".join(_READ_ORDER) + ", Dropout, nested Sequential"


def _where(path: str, m: Any) -> str:
    """How errors name a module: its path in the Sequential and its type."""
    return f"{path or '<root>'} ({type(m).__name__})"


def _unsupported(where: str) -> FormatError:
    return FormatError(f"{where}: unsupported module (relulab reads {_SUPPORTED})")


def _kind(m: Any) -> str | None:
    """The torch.nn class whose computation ``m`` performs: its class when torch's own, or
    a subclass that keeps torch's ``forward``; None for anything else (a class with its own
    ``forward``, say a residual block written as an nn.Sequential subclass, computes what
    that says, whatever it inherits or is named).

    Example:
        >>> import torch.nn as nn
        >>> class Residual(nn.Sequential):
        ...     def forward(self, x):
        ...         return x + super().forward(x)
        >>> _kind(nn.Linear(2, 3)), _kind(nn.Sequential()), _kind(Residual())
        ('Linear', 'Sequential', None)
    """
    import torch.nn as nn

    for cls in type(m).__mro__:
        if cls.__module__.startswith("torch.nn") and getattr(nn, cls.__name__, None) is cls:
            return cls.__name__ if type(m).forward is cls.forward else None
    return None


def _custom(where: str) -> FormatError:
    return FormatError(f"{where}: unsupported module with its own forward (relulab reads torch's "
                       f"layers: {_SUPPORTED}); export it with torch.onnx.export and load the .onnx file")


def _walk(module: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    if _kind(module) == "Sequential":
        # every position, as Sequential's forward runs them: named_children() lists a
        # module used twice (one ReLU after two layers, tied Linears) once, and its second
        # use was dropped (a 2-4-4-1 model read as 2-4-1)
        for name, child in module._modules.items():
            if child is not None:
                yield from _walk(child, f"{prefix}.{name}" if prefix else name)
    else:
        yield prefix, module


def _infer_shape(mods: list[tuple[str, Any]], input_shape: Any) -> tuple[int, ...]:
    if input_shape is not None:
        shape = (int(input_shape),) if np.isscalar(input_shape) else tuple(int(s) for s in input_shape)
        if not shape or min(shape) < 1:
            raise FormatError(f"input_shape {input_shape} must be positive sizes")
        return shape
    for path, m in mods:
        name = _kind(m)
        if name is None:
            raise _custom(_where(path, m))
        if name == "Linear":
            return (int(m.in_features),)
        if name == "BatchNorm1d":
            return (int(m.num_features),)
        if name in ("Identity", "Flatten") or name.startswith("Dropout") or name.endswith("Dropout"):
            continue
        if name not in _READ and "Dropout" not in name:
            raise _unsupported(_where(path, m))  # not "give the input shape": no shape would help
        break
    raise FormatError(
        "from_torch needs input_shape (e.g. (C, H, W), without the batch axis): the first "
        "layer does not fix the input size"
    )


def _dim(d: int, ndim_with_batch: int) -> int:
    """A torch dim index (counting the batch axis) as an index into the per-sample shape."""
    d = d + ndim_with_batch if d < 0 else d
    if d == 0:
        raise ValueError("operations along the batch axis are not per-sample")
    return d - 1


def _apply_module(tr: AffineTracer, v: Value, m: Any, where: str) -> Value:
    name = _kind(m)
    if name is None:
        raise _custom(where)
    S = v.shape
    nd = len(S) + 1  # with the batch axis
    if name in ("Identity",) or "Dropout" in name:
        return v
    if name == "Linear":
        if S[-1] != m.in_features:
            raise ValueError(f"takes {m.in_features} features but the tensor has shape {S}")
        v = tr.matmul(v, _np(m.weight).T, where)
        return v if m.bias is None else tr.add_const(v, _np(m.bias), where)
    if name == "ReLU":
        return tr.relu(v, where)
    if name == "LeakyReLU":
        return tr.leaky_relu(v, float(m.negative_slope), where)
    if name == "PReLU":
        a = _np(m.weight)
        if a.size > 1:
            if len(S) < 1 or S[0] != a.size:
                raise ValueError(f"{a.size} slopes do not fit a tensor of shape {S}")
            a = a.reshape((a.size,) + (1,) * (len(S) - 1))
        else:
            a = float(a.reshape(-1)[0])
        return tr.leaky_relu(v, a, where)
    if name == "ReLU6":
        return tr.clip(v, 0.0, 6.0, where)
    if name == "Hardtanh":
        return tr.clip(v, float(m.min_val), float(m.max_val), where)
    if name == "Flatten":
        s, e = _dim(m.start_dim, nd), _dim(m.end_dim, nd)
        new = S[:s] + (int(np.prod(S[s : e + 1])),) + S[e + 1 :]
        return tr.reshape(v, new, where)
    if name == "Unflatten":
        d = _dim(m.dim, nd)
        return tr.reshape(v, S[:d] + tuple(m.unflattened_size) + S[d + 1 :], where)
    if name in ("BatchNorm1d", "BatchNorm2d"):
        k, t = batchnorm_affine(m, where)
        want = 3 if name == "BatchNorm2d" else None
        if not S or S[0] != k.size or (want and len(S) != want):
            raise ValueError(f"{k.size} channels do not fit a tensor of shape {S}")
        shp = (k.size,) + (1,) * (len(S) - 1)
        return tr.add_const(tr.mul(v, k.reshape(shp), where), t.reshape(shp), where)
    if name in ("Conv2d", "Conv1d"):
        one_d = name == "Conv1d"
        if len(S) != (2 if one_d else 3):
            raise ValueError(f"takes a {'(C, L)' if one_d else '(C, H, W)'} tensor, got shape {S}")
        w = _np(m.weight)
        if one_d:
            C, L = S
            chw = (C, 1, L)
            w = w[:, :, None, :]
            st, dil = (1, m.stride[0]), (1, m.dilation[0])
            if isinstance(m.padding, str):
                tot = m.dilation[0] * (m.kernel_size[0] - 1) if m.padding == "same" else 0
                pads = (0, tot // 2, 0, tot - tot // 2)
            else:
                pads = (0, m.padding[0], 0, m.padding[0])
        else:
            chw = S
            st, dil = m.stride, m.dilation
            pads = _conv_pads(m)
        M, out = conv2d_sparse(w, chw, st, pads, dil, m.groups, m.padding_mode,
                               dense_over=v.n if tr.is_aff(v) else None)
        bias = None if m.bias is None else np.repeat(_np(m.bias), out[1] * out[2])
        out_shape = (out[0], out[2]) if one_d else out
        return tr.sparse(v, M, out_shape, bias, where)
    if name in ("AvgPool2d", "AdaptiveAvgPool2d"):
        if len(S) != 3:
            raise ValueError(f"takes a (C, H, W) tensor, got shape {S}")
        M, out = _avgpool_module_sparse(m, S)
        return tr.sparse(v, M, out, None, where)
    if name == "MaxPool2d":
        if m.return_indices:
            raise FormatError(f"{where}: return_indices=True is not supported")
        if len(S) != 3:
            raise ValueError(f"takes a (C, H, W) tensor, got shape {S}")
        wins, out = maxpool2d_windows(m, S)
        return tr.maxpool(v, wins, out, where)
    if name in ("ZeroPad2d", "ConstantPad2d"):
        if len(S) != 3:
            raise ValueError(f"takes a (C, H, W) tensor, got shape {S}")
        pl, pr, pt, pb = (int(p) for p in m.padding)
        if min(pl, pr, pt, pb) < 0:
            raise FormatError(f"{where}: negative padding (cropping) is not supported")
        value = float(getattr(m, "value", 0.0))
        widths = ((0, 0), (pt, pb), (pl, pr))
        out = tr.lin(v, lambda a, lead: np.pad(a, ((0, 0),) * lead + widths), where)
        if value != 0.0:
            mask = np.pad(np.zeros(S), widths, constant_values=value)
            out = tr.add_const(out, mask, where)
        return out
    raise _unsupported(where)


def _check_finite(m: Any, where: str) -> None:
    """Refuse a module whose own parameters or buffers (BatchNorm's running statistics)
    hold NaN or inf, naming the module: found later, the error could only name a layer
    of the lowered network."""
    tensors = list(m.named_parameters(recurse=False)) + list(m.named_buffers(recurse=False))
    for name, t in tensors:
        if t is not None and t.is_floating_point() and not bool(t.detach().isfinite().all()):
            raise FormatError(f"{where}: {name} contains NaN or infinite entries")


def _check_no_hooks(module: Any) -> None:
    """Refuse a module that runs forward hooks or pre-hooks (on itself, any submodule, or
    globally): they are part of what it computes, and relulab reads the layers alone.
    ``torch.nn.utils.prune`` recomputes ``weight`` in a pre-hook, so a pruned model saved
    after an optimiser step holds a stale ``weight``: read as it stood, ``verify`` said
    "holds" for a property the saved model violates."""
    from torch.nn.modules import module as tmod

    if getattr(tmod, "_global_forward_hooks", None) or getattr(tmod, "_global_forward_pre_hooks", None):
        raise FormatError("torch: global forward hooks are registered (torch.nn.modules.module."
                          "register_module_forward_hook), and relulab does not run them: remove them")
    for path, m in module.named_modules():
        if m._forward_hooks or m._forward_pre_hooks:
            pruned = [k[:-5] for k in m._parameters if k.endswith("_orig")]
            hint = (f"it is pruned ({', '.join(pruned)}): make the pruning permanent with "
                    "torch.nn.utils.prune.remove(module, name)" if pruned else
                    "remove them, or export the model with torch.onnx.export (which runs them) and "
                    "load the .onnx file")
            raise FormatError(f"{_where(path, m)}: has forward hooks, which relulab does not run; {hint}")


# sampled points at which a reading is compared with the module itself, and the agreement
# asked for, relative to the largest value inside either computation (the module runs in
# float64)
CHECK_POINTS, CHECK_RTOL = 4, 1e-9  # tol: a float64 forward pass against the lowered network


def _check_against_module(module: Any, net: Network, shape: tuple[int, ...]) -> None:
    """Compare the lowered network with the module's own forward pass (a float64 copy in
    eval mode) at a few random inputs, as the ONNX readers compare with onnxruntime."""
    import copy

    import torch

    ref = copy.deepcopy(module).cpu().double().eval()
    X = np.random.default_rng(0).standard_normal((CHECK_POINTS, *shape))
    inner = [float(np.max(np.abs(X), initial=0.0))]   # the largest value inside the module

    def size(mod: Any, inp: Any, out: Any) -> None:
        if torch.is_tensor(out) and out.numel():
            inner.append(float(out.detach().abs().max()))

    hooks = [m.register_forward_hook(size) for m in ref.modules() if not list(m.children())]
    with torch.no_grad():
        want = ref(torch.from_numpy(X)).reshape(CHECK_POINTS, -1).numpy()
    for h in hooks:
        h.remove()
    got = net(X.reshape(CHECK_POINTS, -1))
    if got.shape != want.shape:
        raise FormatError(f"torch: the lowered network gives {got.shape[1]} outputs, the module "
                          f"{want.shape[1]}; relulab cannot read this module")
    # the module's own rounding grows with its inner values (1e9 inside, 0.1 out: off by
    # 1.6e-7, where the lowered network, with its two Linear layers folded, was exact), and
    # so does the lowered network's with its terms |W| ... |W| |x| + |b|
    f = net.float()
    terms = np.abs(X.reshape(CHECK_POINTS, -1))
    for W, b in zip(f.weights, f.biases, strict=True):
        terms = terms @ np.abs(W).T + np.abs(b)
    scale = 1.0 + max(max(inner), float(np.max(terms, initial=0.0)), float(np.max(np.abs(want), initial=0.0)))
    err = float(np.max(np.abs(got - want), initial=0.0))
    if not err <= CHECK_RTOL * scale:
        raise FormatError(f"torch: the lowered network differs from the module's own forward pass by "
                          f"{err:.3g} at random inputs (terms of size {scale - 1:.3g}); relulab cannot read "
                          "this module faithfully: export it with torch.onnx.export and load the .onnx file")


def from_torch(module: Any, input_shape: Sequence[int] | int | None = None) -> Network:
    """Convert a torch ``nn.Sequential`` into an exactly equivalent :class:`Network`.

    The network's input is the per-sample input tensor flattened in C order; its output
    the flattened output tensor.  BatchNorm uses its running statistics and Dropout is
    the identity (eval-mode semantics, whatever the module's ``training`` flag).

    Args:
        module: an ``nn.Sequential`` (nested ones are flattened) or a single module.
        input_shape: the per-sample input shape without the batch axis, e.g. ``(C, H, W)``;
            needed unless the first layer is ``Linear`` or ``BatchNorm1d``.

    Raises:
        FormatError: naming the module's path and type, e.g. ``"0.3 (Sigmoid): unsupported
            module ..."``, or a shape mismatch.

    Example:
        >>> import torch
        >>> m = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 2), torch.nn.ReLU(),
        ...                         torch.nn.Flatten(), torch.nn.Linear(8, 1))
        >>> from_torch(m, (1, 3, 3))
        Network(9-8-1, float64)
    """
    require("torch", "torch")
    _check_no_hooks(module)
    mods = list(_walk(module, ""))
    shape = _infer_shape(mods, input_shape)
    tr = AffineTracer(shape)
    v: Value = tr.input()
    for path, m in mods:
        where = _where(path, m)
        _check_finite(m, where)
        try:
            v = _apply_module(tr, v, m, where)
        except FormatError:
            raise
        except (ValueError, IndexError, TypeError) as e:
            raise FormatError(f"{where}: {e}") from None
    net = tr.finish(v, "output")
    _check_against_module(module, net, shape)
    return net


def to_torch(net: Network) -> Any:
    """An ``nn.Sequential`` of ``Linear`` (float64) and ``ReLU`` computing ``net``.

    A network with an input-to-output skip is exported as ``net.without_skip()`` (the
    input rides through the hidden layers as ``relu(x) - relu(-x)``): the same function,
    ``2 * input_dim`` more neurons per hidden layer.  A Fraction network is rounded to
    float64.

    Example:
        >>> import numpy as np
        >>> m = to_torch(Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), np.zeros(1)]))
        >>> [type(x).__name__ for x in m]
        ['Linear', 'ReLU', 'Linear']
    """
    torch = require("torch", "torch")
    nn = torch.nn
    net = net.float().without_skip()
    layers: list[Any] = []
    for k, (W, b) in enumerate(net.layers):
        lin = nn.Linear(W.shape[1], W.shape[0], dtype=torch.float64)
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(np.array(W, dtype=np.float64)))
            lin.bias.copy_(torch.from_numpy(np.array(b, dtype=np.float64)))
        layers.append(lin)
        if k < net.depth - 1:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers).eval()


def save_torch_file(net: Network, path: str | os.PathLike) -> None:
    """Write ``to_torch(net)`` (a whole pickled ``nn.Sequential``) to ``path``, atomically.

    Example:
        >>> import numpy as np, tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "n.pt")
        >>> net = Network([np.eye(2)], [np.ones(2)]); save_torch_file(net, p)
        >>> load_torch_file(p) == net
        True
    """
    torch = require("torch", "torch")
    module = to_torch(net)
    with atomic_path(path) as tmp:
        torch.save(module, tmp)


def load_torch_module(path: str | os.PathLike, input_shape: Sequence[int] | None = None):
    """Unpickle a ``.pt``/``.pth`` file into ``(module, input_shape)``.

    Accepted forms (the same for every command): a whole ``nn.Module`` saved with
    ``torch.save(model, path)``, or a dict ``{"model": module, "input_shape": (C, H, W)}``
    (the dict's shape wins over ``input_shape``).  The file is unpickled
    (``torch.load(weights_only=False)``): only load files you trust.  A bare
    ``state_dict`` holds no architecture and is refused.

    Example:
        >>> import os, tempfile, torch
        >>> path = os.path.join(tempfile.mkdtemp(), "m.pt")
        >>> torch.save({"model": torch.nn.Linear(2, 1), "input_shape": (2,)}, path)
        >>> module, shape = load_torch_module(path); type(module).__name__, shape
        ('Linear', (2,))
    """
    torch = require("torch", "torch")
    import zipfile

    # a TorchScript archive (torch.jit.save) holds compiled code, not a module relulab can
    # lower: one line saying so (torch.load dispatched to jit.load with a warning, and the
    # lowering called the valid file "malformed")
    try:
        names = zipfile.ZipFile(str(path)).namelist() if zipfile.is_zipfile(str(path)) else []
    except Exception:  # noqa: BLE001 - a corrupt archive (bad names, bad headers): torch.load says what is wrong
        names = []
    if any("/code/" in n and n.endswith(".py") for n in names):
        raise FormatError(f"{path}: a TorchScript archive (torch.jit.save), which relulab does not read; "
                          "save the nn.Module itself with torch.save(model, path), or export ONNX")
    try:
        obj = torch.load(str(path), map_location="cpu", weights_only=False)
    except Exception as e:  # torch raises many kinds on corrupt files
        first = (str(e).strip().splitlines() or [""])[0]
        raise FormatError(f"{path}: cannot read a torch file ({type(e).__name__}: {first})") from None
    if isinstance(obj, dict) and isinstance(obj.get("model"), torch.nn.Module):
        input_shape = obj.get("input_shape", input_shape)
        obj = obj["model"]
    if not isinstance(obj, torch.nn.Module):
        desc = obj.get("description") if isinstance(obj, dict) else None
        if isinstance(desc, dict) and "activation" in desc:
            # what `relulab construct activation -o x.pt` writes: weights, not a ReLU model
            raise FormatError(
                f"{path}: holds a relulab {desc['activation']}-activated network (construct "
                "activation), not a ReLU model; relulab's model commands read ReLU networks"
            )
        if isinstance(obj, dict) and obj and all(isinstance(v, torch.Tensor) for v in obj.values()):
            what = "a state_dict (tensors only)"
        elif isinstance(obj, dict):
            what = f"a dict with keys {sorted(map(str, obj))[:6]} and no 'model' module"
        else:
            what = type(obj).__name__
        raise FormatError(
            f"{path}: holds {what}, not a model; save the whole nn.Sequential with "
            "torch.save(model, path)"
        )
    if input_shape is not None:
        try:
            input_shape = tuple(int(v) for v in input_shape)
        except (TypeError, ValueError):
            raise FormatError(f"{path}: input_shape {input_shape!r} is not a tuple of integers") from None
    try:
        obj = obj.eval()
    except Exception as e:  # noqa: BLE001 - an unpickled module can lack its own internals
        first = (str(e).strip().splitlines() or [""])[0]
        raise FormatError(f"{path}: the saved module is malformed ({type(e).__name__}: {first})") from None
    return obj, input_shape


def load_torch_file(path: str | os.PathLike, input_shape: Sequence[int] | None = None) -> Network:
    """Read a ``.pt``/``.pth`` file (see :func:`load_torch_module` for the accepted forms)
    and convert it with :func:`from_torch`.

    Example:
        >>> import os, tempfile
        >>> from relulab.examples import xor_net
        >>> path = os.path.join(tempfile.mkdtemp(), "xor.pt")
        >>> save_torch_file(xor_net(), path)
        >>> load_torch_file(path)([[1.0, 0.0], [1.0, 1.0]]).ravel().tolist()
        [1.0, 0.0]
    """
    module, input_shape = load_torch_module(path, input_shape)
    try:
        return from_torch(module, input_shape)
    except FormatError as e:
        raise FormatError(f"{path}: {e}") from None
    except ResourceLimitError as e:  # an input shape or layer too large to lower
        raise ResourceLimitError(f"{path}: {e}") from None
    except (AttributeError, TypeError, KeyError, IndexError, RuntimeError) as e:
        # an unpickled module can lack what its class promises (a damaged or hand-edited file)
        first = (str(e).strip().splitlines() or [""])[0]
        raise FormatError(f"{path}: the saved module is malformed ({type(e).__name__}: {first})") from None
