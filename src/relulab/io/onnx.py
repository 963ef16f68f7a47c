"""ONNX model exchange: ``load_onnx(path)`` and ``save_onnx(net, path)``.

Reading walks the graph in order with the exact affine tracer of
:mod:`relulab.io.torch`: every tensor is either a constant (initializers, ``Constant``
nodes and whatever is computed from them alone, e.g. ``Shape -> Gather -> Concat ->
Reshape`` chains) or an affine function of the flattened network input, kept
symbolically; a ``Relu`` (or another piecewise-linear activation) closes a hidden
layer.  Supported operators:

* affine: Gemm (transA, transB, alpha, beta), MatMul, Add, Sub, Mul, Div (by
  constants), Neg, Sum, Conv (1-D/2-D: pads, auto_pad, strides, dilations, group),
  BatchNormalization (inference), AveragePool, GlobalAveragePool, Pad (constant);
* shape: Flatten, Reshape, Squeeze, Unsqueeze, Transpose, Concat, Slice, Gather (constant
  indices), Shape, Identity, Dropout (inference), Cast (between float types), Constant;
* piecewise linear, rewritten exactly with ReLUs: Relu, LeakyRelu, PRelu, Clip,
  MaxPool, GlobalMaxPool.

Skip connections (ResNet blocks, parallel branches): a value still needed after a
hidden layer rides through it as ``relu(v) - relu(-v)`` (``relu(v)`` where ``v >= 0`` is
known), exactly; a function of the input alone that only reaches the output becomes the
network's affine skip.

Any other operator with a non-constant input raises :class:`~relulab.errors.FormatError`
naming the node and its op type; constant-only nodes of other types are evaluated
with ``onnx.reference``.  The input may carry a batch axis (``(1, 1, 1, 5)``, or a
symbolic ``N``): it is taken as 1, and the network's input is the flattened tensor.

Numbers: float32 initializers are widened to float64 exactly, and the network
computes the model's function in float64 arithmetic.  It therefore matches
onnxruntime on a float64 copy of the model to rounding error (~1e-15), and
onnxruntime on the float32 model only to float32 accuracy (~1e-6 relative).

``save_onnx`` writes DOUBLE tensors (``Gemm`` + ``Relu``, opset 17), so that
``load_onnx(save_onnx(net))`` reproduces ``net`` exactly; a skip becomes an extra
``Gemm`` from the input added to the last layer.

Example:
    >>> import numpy as np, tempfile, os
    >>> from relulab import Network
    >>> net = Network([np.ones((3, 2)), np.ones((1, 3))], [np.zeros(3), [0.5]])
    >>> p = os.path.join(tempfile.mkdtemp(), "n.onnx"); save_onnx(net, p)
    >>> load_onnx(p) == net
    True
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import FormatError, RelulabError, is_int_at_least, require
from ..limits import ResourceLimitError, check_bytes
from ..network import Network
from ._atomic import atomic_path
from ._lowering import (
    AffineTracer,
    avgpool2d_sparse,
    batchnorm_scale,
    clip_bounds,
    conv2d_sparse,
    pool_windows,
)

__all__ = ["load_onnx", "save_onnx", "network_to_onnx", "onnx_to_network", "SUPPORTED_OPS",
           "crosscheck_onnxruntime"]

OPSET = 17


# ============================================================================ reading
def _to_array(t: Any) -> np.ndarray:
    from onnx import SparseTensorProto, numpy_helper

    if isinstance(t, SparseTensorProto):
        a = _sparse_to_dense(t)
    else:
        a = numpy_helper.to_array(t)
    if a.dtype.kind == "f" or a.dtype.name == "bfloat16":
        a = a.astype(np.float64)
    return np.asarray(a)


def _sparse_to_dense(t: Any) -> np.ndarray:
    """A ``SparseTensorProto`` (values, indices linear or per axis, dims) as a dense array,
    within the memory budget."""
    from onnx import numpy_helper

    dims = tuple(int(v) for v in t.dims)
    check_bytes(8.0 * float(np.prod(dims, dtype=np.float64)), f"sparse initializer '{t.values.name}' made dense")
    vals = numpy_helper.to_array(t.values).reshape(-1)
    idx = numpy_helper.to_array(t.indices).astype(np.int64)
    out = np.zeros(int(np.prod(dims)), dtype=vals.dtype)
    if np.any(idx < 0):
        # numpy would wrap -1 around to the last entry; ONNX (and onnxruntime) refuse it
        raise FormatError(f"sparse initializer '{t.values.name}': an index is negative "
                          f"({int(idx.min())}); indices lie in [0, size)")
    flat = idx.reshape(-1) if idx.ndim == 1 else np.ravel_multi_index(tuple(idx.T), dims)
    out[flat] = vals
    return out.reshape(dims)


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import AttributeProto, helper

    out = {}
    for a in node.attribute:
        if a.type == AttributeProto.TENSOR:
            out[a.name] = _to_array(a.t)
        else:
            v = helper.get_attribute_value(a)
            out[a.name] = v.decode() if isinstance(v, bytes) else v
    return out


def _ints(x: Any) -> list[int]:
    return [int(v) for v in np.asarray(x).reshape(-1)]


class _Cx:
    """What a node handler sees."""

    def __init__(self, tr: AffineTracer, opset: int) -> None:
        self.tr = tr
        self.opset = opset
        self.where = ""
        # whether the node's outputs only bound a Clip (where an infinite value is no bound)
        self.clip_bounds_only = False

    def const(self, v: Any, what: str) -> np.ndarray:
        if v is None or self.tr.is_aff(v):
            raise FormatError(f"{self.where}: {what} must be a constant")
        return np.asarray(v)

    def shape(self, v: Any) -> tuple[int, ...]:
        return tuple(v.shape) if self.tr.is_aff(v) else tuple(np.shape(v))


def _norm_axis(ax: int, rank: int) -> int:
    a = ax + rank if ax < 0 else ax
    if not 0 <= a < rank:
        raise ValueError(f"axis {ax} out of range for rank {rank}")
    return a


def _reshape_target(S: tuple[int, ...], target: list[int], allowzero: bool) -> tuple[int, ...]:
    out = [S[i] if (t == 0 and not allowzero) else t for i, t in enumerate(target)]
    if out.count(-1) > 1:
        raise ValueError(f"shape {target} has more than one -1")
    total = int(np.prod(S))
    if -1 in out:
        rest = int(np.prod([t for t in out if t != -1]))
        if rest == 0 or total % rest:
            raise ValueError(f"cannot reshape {S} to {target}")
        out[out.index(-1)] = total // rest
    if int(np.prod(out)) != total:
        raise ValueError(f"cannot reshape a tensor of shape {S} to {tuple(out)}")
    return tuple(out)


# ------------------------------------------------------------------- handlers
def _h_identity(cx: _Cx, ins: list, at: dict) -> list:
    return [ins[0]]


def check_float_cast(to: int, where: str, error: type[Exception] = FormatError) -> None:
    """Refuse a Cast of an input-dependent tensor that changes its values: to an integer,
    bool or 16-bit float type (float32 and float64 casts are read as the identity, since
    relulab computes in float64)."""
    from onnx import TensorProto

    keep = {TensorProto.FLOAT: "float32", TensorProto.DOUBLE: "float64"}
    if to not in keep:
        name = TensorProto.DataType.Name(to) if to in TensorProto.DataType.values() else str(to)
        raise error(f"{where}: casts an input-dependent tensor to {name}, which changes its values "
                    "(only casts to float32 or float64 are supported)")


def cast_constant(a: np.ndarray, to: int, saturate: bool, where: str) -> np.ndarray:
    """A constant tensor ``a`` cast to ONNX type ``to`` as ONNX's Cast defines it, returned
    in float64 for float types.  The 8-bit float types round to nearest even and, with
    ``saturate`` (ONNX's default), clamp what lies beyond their largest finite value to it;
    numpy's cast would give NaN or inf there instead (a weight of 1000 cast to float8 E4M3
    is 448, not NaN).  The 4- and 6-bit float types and E8M0 have other rounding rules and
    are refused by name.

    Example:
        >>> from onnx import TensorProto as T
        >>> cast_constant(np.array([1000.0, -0.3]), T.FLOAT8E4M3FN, True, "c").tolist()
        [448.0, -0.3125]
    """
    from onnx import TensorProto, helper

    name = TensorProto.DataType.Name(to) if to in TensorProto.DataType.values() else str(to)
    if name.startswith(("FLOAT4", "FLOAT6", "FLOAT8E8M0")):
        raise FormatError(f"{where}: a Cast of a constant to {name} is not supported")
    dt = np.dtype(helper.tensor_dtype_to_np_dtype(to))
    a = np.asarray(a)
    if name.startswith("FLOAT8") and saturate and a.dtype.kind == "f":
        import ml_dtypes

        big = float(ml_dtypes.finfo(dt).max)
        # ONNX's saturation: beyond the largest finite value, infinities included, the
        # result is that value (NaN stays NaN)
        a = np.clip(a, -big, big)
    is_float = name in ("FLOAT", "DOUBLE", "FLOAT16", "BFLOAT16") or name.startswith("FLOAT8")
    with np.errstate(over="ignore", invalid="ignore"):  # IEEE overflow to inf is the cast's
        out = a.astype(dt)
    return out.astype(np.float64) if is_float else out


def _h_cast(cx: _Cx, ins: list, at: dict) -> list:
    if cx.tr.is_aff(ins[0]):
        check_float_cast(int(at["to"]), cx.where)
        return [ins[0]]  # precision casts are ignored: relulab computes in float64
    return [cast_constant(ins[0], int(at["to"]), bool(at.get("saturate", 1)), cx.where)]


def _h_constant(cx: _Cx, ins: list, at: dict) -> list:
    if "value" in at:
        v = np.asarray(at["value"])
    elif "value_float" in at:
        v = np.array(at["value_float"], dtype=np.float64)
    elif "value_floats" in at:
        v = np.array(at["value_floats"], dtype=np.float64)
    elif "value_int" in at:
        v = np.array(at["value_int"], dtype=np.int64)
    elif "value_ints" in at:
        v = np.array(at["value_ints"], dtype=np.int64)
    else:
        raise FormatError(f"{cx.where}: unsupported Constant attribute {sorted(at)}")
    if v.dtype.kind == "f" and not np.all(np.isfinite(v) | (cx.clip_bounds_only & ~np.isnan(v))):
        raise FormatError(f"{cx.where}: the constant contains NaN or infinite values")
    return [v]


def _h_relu(cx: _Cx, ins: list, at: dict) -> list:
    return [cx.tr.relu(ins[0], cx.where)]


def _h_leaky(cx: _Cx, ins: list, at: dict) -> list:
    return [cx.tr.leaky_relu(ins[0], float(at.get("alpha", 0.01)), cx.where)]


def _h_prelu(cx: _Cx, ins: list, at: dict) -> list:
    slope = cx.const(ins[1], "the PRelu slope").astype(np.float64)
    return [cx.tr.leaky_relu(ins[0], slope, cx.where)]


def _h_clip(cx: _Cx, ins: list, at: dict) -> list:
    if cx.opset < 11:
        lo, hi = at.get("min"), at.get("max")
    else:
        lo = None if len(ins) < 2 or ins[1] is None else float(cx.const(ins[1], "Clip min"))
        hi = None if len(ins) < 3 or ins[2] is None else float(cx.const(ins[2], "Clip max"))
    lo, hi = clip_bounds(lo, hi)  # float32's +-max (or an infinity) is ONNX's "no bound"
    if lo is not None and hi is not None and lo > hi:
        # the spec (Clip-13): with min > max every output is max
        if not cx.tr.is_aff(ins[0]):
            return [np.full(np.shape(ins[0]), hi)]
        zero = cx.tr.lin(ins[0], lambda a, lead: a * 0.0, cx.where)
        return [cx.tr.add(zero, np.full(cx.shape(ins[0]), hi), cx.where)]
    return [cx.tr.clip(ins[0], lo, hi, cx.where)]


def _h_add(cx: _Cx, ins: list, at: dict) -> list:
    return [cx.tr.add(ins[0], ins[1], cx.where)]


def _h_sum(cx: _Cx, ins: list, at: dict) -> list:
    out = ins[0]
    for v in ins[1:]:
        out = cx.tr.add(out, v, cx.where)
    return [out]


def _h_sub(cx: _Cx, ins: list, at: dict) -> list:
    if not cx.tr.is_aff(ins[0]) and not cx.tr.is_aff(ins[1]):
        return [np.asarray(ins[0]) - np.asarray(ins[1])]
    return [cx.tr.sub(ins[0], ins[1], cx.where)]


def _h_neg(cx: _Cx, ins: list, at: dict) -> list:
    return [cx.tr.neg(ins[0], cx.where)]


def _h_mul(cx: _Cx, ins: list, at: dict) -> list:
    return [cx.tr.mul(ins[0], ins[1], cx.where)]


def _h_div(cx: _Cx, ins: list, at: dict) -> list:
    a, b = ins
    if not cx.tr.is_aff(a) and not cx.tr.is_aff(b):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype.kind in "iu" and b.dtype.kind in "iu":
            return [(np.trunc(a / b)).astype(np.result_type(a, b))]
        return [a / b]
    return [cx.tr.mul(a, b, cx.where, divide=True)]


def _h_matmul(cx: _Cx, ins: list, at: dict) -> list:
    return [cx.tr.matmul(ins[0], ins[1], cx.where)]


def _transpose2(cx: _Cx, v: Any) -> Any:
    if len(cx.shape(v)) != 2:
        raise ValueError(f"Gemm takes 2-D operands, got shape {cx.shape(v)}")
    return cx.tr.lin(v, lambda a, lead: np.swapaxes(a, lead, lead + 1), cx.where)


def _h_gemm(cx: _Cx, ins: list, at: dict) -> list:
    a, b = ins[0], ins[1]
    for v in (a, b):
        if len(cx.shape(v)) != 2:
            raise ValueError(f"Gemm takes 2-D operands, got shapes {cx.shape(a)} and {cx.shape(b)}")
    if at.get("transA", 0):
        a = _transpose2(cx, a)
    if at.get("transB", 0):
        b = _transpose2(cx, b)
    if cx.shape(a)[1] != cx.shape(b)[0]:
        raise ValueError(f"Gemm operands of shapes {cx.shape(a)} and {cx.shape(b)} do not match")
    y = cx.tr.matmul(a, b, cx.where)
    alpha = float(at.get("alpha", 1.0))
    if alpha != 1.0:
        y = cx.tr.mul(y, alpha, cx.where)
    if len(ins) > 2 and ins[2] is not None:
        MN = (cx.shape(a)[0], cx.shape(b)[1])
        cs = tuple(cx.shape(ins[2]))
        # C broadcasts one way to (M, N) (unidirectional): a (4, 1) C under a (1, 4)
        # product was read as a 4 x 4 outer sum, a model onnxruntime rejects
        if len(cs) > 2 or any(c not in (1, m) for c, m in zip(cs[::-1], MN[::-1], strict=False)):
            raise ValueError(f"Gemm bias C of shape {cs} does not broadcast to the product's shape {MN}")
        beta = float(at.get("beta", 1.0))
        c = ins[2] if beta == 1.0 else cx.tr.mul(ins[2], beta, cx.where)
        y = cx.tr.add(y, c, cx.where)
    return [y]


def _h_flatten(cx: _Cx, ins: list, at: dict) -> list:
    S = cx.shape(ins[0])
    ax = int(at.get("axis", 1))
    ax = ax + len(S) if ax < 0 else ax
    new = (int(np.prod(S[:ax])), int(np.prod(S[ax:])))
    return [cx.tr.reshape(ins[0], new, cx.where)]


def _h_reshape(cx: _Cx, ins: list, at: dict) -> list:
    if cx.opset < 5:
        target = _ints(at["shape"])
    else:
        target = _ints(cx.const(ins[1], "the Reshape shape"))
    new = _reshape_target(cx.shape(ins[0]), target, bool(at.get("allowzero", 0)))
    return [cx.tr.reshape(ins[0], new, cx.where)]


def _axes(cx: _Cx, ins: list, at: dict, k: int = 1) -> list[int] | None:
    if cx.opset >= 13:
        if "axes" in at:   # an attribute from before opset 13: squeezing every 1 misreads it
            raise ValueError(f"an 'axes' attribute at opset {cx.opset} (since opset 13 the axes are an input)")
        return None if len(ins) <= k or ins[k] is None else _ints(cx.const(ins[k], "axes"))
    return None if "axes" not in at else _ints(at["axes"])


def _h_squeeze(cx: _Cx, ins: list, at: dict) -> list:
    S = cx.shape(ins[0])
    axes = _axes(cx, ins, at)
    if axes is None:
        new = tuple(s for s in S if s != 1)
    else:
        drop = {_norm_axis(a, len(S)) for a in axes}
        if any(S[a] != 1 for a in drop):
            raise ValueError(f"cannot squeeze axes {axes} of shape {S}")
        new = tuple(s for i, s in enumerate(S) if i not in drop)
    return [cx.tr.reshape(ins[0], new, cx.where)]


def _h_unsqueeze(cx: _Cx, ins: list, at: dict) -> list:
    S = cx.shape(ins[0])
    axes = _axes(cx, ins, at)
    if axes is None:
        raise FormatError(f"{cx.where}: Unsqueeze without axes")
    rank = len(S) + len(axes)
    add = sorted(_norm_axis(a, rank) for a in axes)
    if len(set(add)) != len(add):
        raise FormatError(f"{cx.where}: Unsqueeze axes {list(axes)} repeat an axis")
    new, it = [], iter(S)
    for i in range(rank):
        new.append(1 if i in add else next(it))
    return [cx.tr.reshape(ins[0], tuple(new), cx.where)]


def _h_transpose(cx: _Cx, ins: list, at: dict) -> list:
    S = cx.shape(ins[0])
    perm = _ints(at["perm"]) if "perm" in at else list(range(len(S)))[::-1]
    return [cx.tr.lin(ins[0], lambda a, lead: a.transpose(tuple(range(lead)) + tuple(p + lead for p in perm)), cx.where)]


def _h_concat(cx: _Cx, ins: list, at: dict) -> list:
    return [cx.tr.concat([v for v in ins if v is not None], int(at["axis"]), cx.where)]


def _h_slice(cx: _Cx, ins: list, at: dict) -> list:
    S = cx.shape(ins[0])
    if cx.opset < 10:
        starts, ends = _ints(at["starts"]), _ints(at["ends"])
        axes = _ints(at["axes"]) if "axes" in at else list(range(len(starts)))
        steps = [1] * len(starts)
    else:
        starts = _ints(cx.const(ins[1], "Slice starts"))
        ends = _ints(cx.const(ins[2], "Slice ends"))
        axes = list(range(len(starts))) if len(ins) < 4 or ins[3] is None else _ints(cx.const(ins[3], "Slice axes"))
        steps = [1] * len(starts) if len(ins) < 5 or ins[4] is None else _ints(cx.const(ins[4], "Slice steps"))
    sl = [slice(None)] * len(S)
    for s, e, a, st in zip(starts, ends, axes, steps, strict=True):
        if st == 0:
            raise ValueError("Slice step 0")
        sl[_norm_axis(a, len(S))] = slice(s, e, st)
    key = tuple(sl)
    return [cx.tr.lin(ins[0], lambda a, lead: a[(slice(None),) * lead + key], cx.where)]


def _h_gather(cx: _Cx, ins: list, at: dict) -> list:
    S = cx.shape(ins[0])
    idx = cx.const(ins[1], "the Gather indices").astype(np.int64)
    ax = _norm_axis(int(at.get("axis", 0)), len(S))
    return [cx.tr.lin(ins[0], lambda a, lead: np.take(a, idx, axis=ax + lead), cx.where)]


def _h_shape(cx: _Cx, ins: list, at: dict) -> list:
    S = np.array(cx.shape(ins[0]), dtype=np.int64)
    start, end = int(at.get("start", 0)), at.get("end")
    return [S[start:] if end is None else S[start : int(end)]]


def _h_dropout(cx: _Cx, ins: list, at: dict) -> list:
    if len(ins) > 2 and ins[2] is not None and bool(np.asarray(cx.const(ins[2], "training_mode"))):
        raise FormatError(f"{cx.where}: Dropout in training mode is random")
    return [ins[0]]


def _h_pad(cx: _Cx, ins: list, at: dict) -> list:
    S = cx.shape(ins[0])
    mode = at.get("mode", "constant")
    if mode != "constant":
        raise FormatError(f"{cx.where}: Pad mode '{mode}' is not supported")
    if cx.opset < 11:
        pads, value = _ints(at["pads"]), float(at.get("value", 0.0))
        axes = list(range(len(S)))
    else:
        pads = _ints(cx.const(ins[1], "the pads"))
        value = 0.0 if len(ins) < 3 or ins[2] is None else float(cx.const(ins[2], "the pad value"))
        axes = list(range(len(S))) if len(ins) < 4 or ins[3] is None else [_norm_axis(a, len(S)) for a in _ints(cx.const(ins[3], "axes"))]
    k = len(axes)
    if len(pads) != 2 * k:
        raise FormatError(f"{cx.where}: pads {pads} are not 2 x {k} numbers")
    # negative pads crop (the spec allows them): crop first, then pad with the rest
    widths = [(0, 0)] * len(S)
    crop = [slice(None)] * len(S)
    for i, a in enumerate(axes):
        lo, hi = pads[i], pads[i + k]
        widths[a] = (max(lo, 0), max(hi, 0))
        crop[a] = slice(max(-lo, 0), S[a] - max(-hi, 0))
        if S[a] - max(-lo, 0) - max(-hi, 0) < 0:
            raise FormatError(f"{cx.where}: pads {pads} crop axis {a} of length {S[a]} below 0")
    crop = tuple(crop)
    if not cx.tr.is_aff(ins[0]):
        return [np.pad(np.asarray(ins[0])[crop], widths, constant_values=value)]
    out = cx.tr.lin(ins[0], lambda a, lead: np.pad(a[(slice(None),) * lead + crop],
                                                   [(0, 0)] * lead + widths), cx.where)
    if value != 0.0:
        out = cx.tr.add(out, np.pad(np.zeros(S)[crop], widths, constant_values=value), cx.where)
    return [out]


def _spatial(cx: _Cx, v: Any, what: str) -> tuple[tuple[int, int, int], bool]:
    """(C, H, W) of an NCHW (or NCL) tensor with batch 1, and whether it is 1-D."""
    S = cx.shape(v)
    if len(S) not in (3, 4) or S[0] != 1:
        raise ValueError(f"{what} takes a (1, C, H, W) or (1, C, L) tensor, got shape {S}")
    if len(S) == 3:
        return (S[1], 1, S[2]), True
    return (S[1], S[2], S[3]), False


def _pads2d(
    at: dict, chw: tuple[int, int, int], k: Sequence[int], st: Sequence[int], dil: Sequence[int], one_d: bool
) -> tuple[int, int, int, int]:
    auto = at.get("auto_pad", "NOTSET")
    if auto in ("NOTSET", ""):
        p = _ints(at.get("pads", [0, 0] if one_d else [0, 0, 0, 0]))
        if one_d:
            if len(p) != 2:
                raise ValueError(f"pads {p} for a 1-D operation")
            return 0, p[0], 0, p[1]
        if len(p) != 4:
            raise ValueError(f"pads {p} for a 2-D operation")
        return p[0], p[1], p[2], p[3]
    if auto == "VALID":
        return 0, 0, 0, 0
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise ValueError(f"auto_pad '{auto}'")
    out = []
    for size, kk, s, d in zip(chw[1:], k, st, dil, strict=True):
        total = max((-(-size // s) - 1) * s + (kk - 1) * d + 1 - size, 0)
        small = total // 2
        out.append((small, total - small) if auto == "SAME_UPPER" else (total - small, small))
    (t, b), (l, r) = out
    return t, l, b, r


def _geom(at: dict, one_d: bool, kernel: Sequence[int] | None = None):
    k = list(kernel) if kernel is not None else _ints(at["kernel_shape"])
    st = _ints(at.get("strides", [1] * len(k)))
    dil = _ints(at.get("dilations", [1] * len(k)))
    if one_d:
        k, st, dil = [1, *k[-1:]], [1, *st[-1:]], [1, *dil[-1:]]
    if len(k) != 2:
        raise ValueError(f"only 1-D and 2-D operations are supported (kernel {k})")
    return k, st, dil


def _h_conv(cx: _Cx, ins: list, at: dict) -> list:
    w = cx.const(ins[1], "the Conv kernel").astype(np.float64)
    if "kernel_shape" in at and tuple(_ints(at["kernel_shape"])) != tuple(w.shape[2:]):
        raise ValueError(f"Conv kernel_shape {tuple(_ints(at['kernel_shape']))} differs from the "
                         f"kernel's own shape {tuple(w.shape[2:])}")
    chw, one_d = _spatial(cx, ins[0], "Conv")
    if one_d:
        w = w[:, :, None, :]
    k, st, dil = _geom(at, one_d, w.shape[2:])
    pads = _pads2d(at, chw, k, st, dil, one_d)
    M, (O, OH, OW) = conv2d_sparse(w, chw, st, pads, dil, int(at.get("group", 1)),
                                   dense_over=ins[0].n if cx.tr.is_aff(ins[0]) else None)
    bias = None
    if len(ins) > 2 and ins[2] is not None:
        bias = np.repeat(cx.const(ins[2], "the Conv bias").astype(np.float64), OH * OW)
    out = (1, O, OW) if one_d else (1, O, OH, OW)
    return [cx.tr.sparse(ins[0], M, out, bias, cx.where)]


def _h_avgpool(cx: _Cx, ins: list, at: dict, global_: bool = False) -> list:
    chw, one_d = _spatial(cx, ins[0], "AveragePool")
    k, st, dil = _geom(at, one_d, chw[1:] if global_ else None)
    pads = (0, 0, 0, 0) if global_ else _pads2d(at, chw, k, st, dil, one_d)
    M, (C, OH, OW) = avgpool2d_sparse(
        chw, k, st, pads, bool(at.get("ceil_mode", 0)), bool(at.get("count_include_pad", 0)),
        None, dil,
    )
    out = (1, C, OW) if one_d else (1, C, OH, OW)
    return [cx.tr.sparse(ins[0], M, out, None, cx.where)]


def _h_maxpool(cx: _Cx, ins: list, at: dict, global_: bool = False) -> list:
    chw, one_d = _spatial(cx, ins[0], "MaxPool")
    k, st, dil = _geom(at, one_d, chw[1:] if global_ else None)
    pads = (0, 0, 0, 0) if global_ else _pads2d(at, chw, k, st, dil, one_d)
    wins, _, (C, OH, OW) = pool_windows(chw, k, st, pads, dil, bool(at.get("ceil_mode", 0)))
    out = (1, C, OW) if one_d else (1, C, OH, OW)
    return [cx.tr.maxpool(ins[0], wins, out, cx.where), None]


def _h_batchnorm(cx: _Cx, ins: list, at: dict) -> list:
    if int(at.get("training_mode", 0)):
        raise FormatError(f"{cx.where}: BatchNormalization in training mode is not a fixed function")
    scale, bias, mean, var = (cx.const(v, "BatchNormalization parameters").astype(np.float64) for v in ins[1:5])
    S = cx.shape(ins[0])
    if len(S) < 2 or not (scale.size == bias.size == mean.size == var.size == S[1]):
        raise ValueError(f"{scale.size} channels do not fit a tensor of shape {S}")
    shp = (1, S[1]) + (1,) * (len(S) - 2)
    k = batchnorm_scale(scale, var, float(at.get("epsilon", 1e-5)), cx.where)
    y = cx.tr.add(ins[0], -mean.reshape(shp), cx.where)
    y = cx.tr.mul(y, k.reshape(shp), cx.where)
    return [cx.tr.add(y, bias.reshape(shp), cx.where)]


_HANDLERS: dict[str, Callable[[_Cx, list, dict], list]] = {
    "Identity": _h_identity,
    "Cast": _h_cast,
    "Constant": _h_constant,
    "Relu": _h_relu,
    "LeakyRelu": _h_leaky,
    "PRelu": _h_prelu,
    "Clip": _h_clip,
    "Add": _h_add,
    "Sum": _h_sum,
    "Sub": _h_sub,
    "Neg": _h_neg,
    "Mul": _h_mul,
    "Div": _h_div,
    "MatMul": _h_matmul,
    "Gemm": _h_gemm,
    "Flatten": _h_flatten,
    "Reshape": _h_reshape,
    "Squeeze": _h_squeeze,
    "Unsqueeze": _h_unsqueeze,
    "Transpose": _h_transpose,
    "Concat": _h_concat,
    "Slice": _h_slice,
    "Gather": _h_gather,
    "Shape": _h_shape,
    "Dropout": _h_dropout,
    "Pad": _h_pad,
    "Conv": _h_conv,
    "AveragePool": _h_avgpool,
    "GlobalAveragePool": lambda cx, ins, at: _h_avgpool(cx, ins, at, global_=True),
    "MaxPool": _h_maxpool,
    "GlobalMaxPool": lambda cx, ins, at: _h_maxpool(cx, ins, at, global_=True),
    "BatchNormalization": _h_batchnorm,
}

SUPPORTED_OPS = tuple(sorted(_HANDLERS))

# operators that close a hidden layer (the others are affine or shape operations)
_ACTIVATIONS = frozenset({"Relu", "LeakyRelu", "PRelu", "Clip", "MaxPool", "GlobalMaxPool"})


def _lowering_order(graph: Any, known: set[str], out: str) -> tuple[list, list[int]]:
    """The nodes that reach the output ``out``, in a topological order that lowers every
    node reading values of activation depth k before any node reading depth k + 1 (the
    depth of a value: the activations on its longest path from the input), with their
    original indices.  ONNX only promises *some* topological order; with an arbitrary
    one, a branch that starts at the input after another branch has closed a hidden
    layer looked like a skip into a hidden layer.  Nodes whose inputs are never
    defined keep their place at the end, so the reader names the missing input.

    Example:
        >>> from onnx import helper
        >>> g = helper.make_graph([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Add", ["a", "x"], ["s"]),
        ...     helper.make_node("Neg", ["x"], ["n"]), helper.make_node("Relu", ["n"], ["b"]),
        ...     helper.make_node("Add", ["s", "b"], ["y"]), helper.make_node("Relu", ["x"], ["dead"])], "g", [], [])
        >>> _lowering_order(g, {"x"}, "y")[1]
        [0, 2, 3, 1, 4]
    """
    import heapq

    nodes = list(graph.node)
    # backwards from the output: the nodes it needs
    producer = {name: j for j, nd in enumerate(nodes) for name in nd.output if name}
    needed, stack = set(), [out]
    while stack:
        j = producer.get(stack.pop())
        if j is None or j in needed:
            continue
        needed.add(j)
        stack.extend(n for n in nodes[j].input if n)
    depth = dict.fromkeys(known, 0)
    waiting = {j: {n for n in nodes[j].input if n and n not in known} for j in needed}
    users: dict[str, list[int]] = {}
    for j, missing in waiting.items():
        for n in missing:
            users.setdefault(n, []).append(j)
    heap = [(0, j) for j, missing in waiting.items() if not missing]
    heapq.heapify(heap)
    order = []
    while heap:
        d_in, j = heapq.heappop(heap)  # d_in: the largest depth among the node's inputs
        nd = nodes[j]
        d_out = d_in + (nd.op_type in _ACTIVATIONS)
        order.append(j)
        for name in nd.output:
            if not name:
                continue
            depth[name] = d_out
            for k in users.get(name, []):
                waiting[k].discard(name)
                if not waiting[k]:
                    heapq.heappush(heap, (max(depth.get(n, 0) for n in nodes[k].input if n), k))
    placed = set(order)
    order += sorted(j for j in needed if j not in placed)
    return [nodes[j] for j in order], order


def _liveness(nodes: list) -> tuple[dict[str, list[int]], list[bool]]:
    """Consumers (node indices) of every tensor, and for every node whether a hidden
    layer (an activation) lies at or after it on some path (``nodes`` in lowering order)."""
    consumers: dict[str, list[int]] = {}
    for j, node in enumerate(nodes):
        for name in node.input:
            if name:
                consumers.setdefault(name, []).append(j)
    leads = [False] * len(nodes)
    for j in range(len(nodes) - 1, -1, -1):
        node = nodes[j]
        leads[j] = node.op_type in _ACTIVATIONS or any(
            leads[k] for out in node.output for k in consumers.get(out, []) if k > j
        )
    return consumers, leads


def _to_carry(
    tr: AffineTracer,
    env: dict,
    i: int,
    node: Any,
    consumers: dict,
    leads: list[bool],
    out: str,
    original: dict,
) -> dict[int, list[str]]:
    """The input-dependent values that node ``i`` (an activation) must carry through the
    hidden layer it closes: those used later (skip connections, parallel branches), as
    ``{id(value): names}``.  Before the first hidden layer only the values that lead to
    a later activation count: a function of the input alone that only reaches the output
    becomes the network's affine skip instead."""
    live = {
        name: v
        for name, v in env.items()
        if tr.is_aff(v) and name not in node.output and v.epoch == tr.epoch
    }
    needed = set()
    for name, v in live.items():
        later = [k for k in consumers.get(name, []) if k > i]
        if tr.epoch == 0 or name in original:  # uses that only reach the output take the skip
            need = any(leads[k] for k in later)
        else:
            need = bool(later) or name == out
        if need:
            needed.add(id(v))
    keep: dict[int, list[str]] = {}
    for name, v in live.items():  # every name of a needed value (aliases via Identity)
        if id(v) in needed:
            keep.setdefault(id(v), []).append(name)
    return keep


def _constant_entries(op: str, ins: list) -> float | None:
    """The number of entries a shape-making constant node would produce (ConstantOfShape,
    Expand, Tile, Range), so a tiny file cannot make the reference evaluator allocate
    gigabytes; None for other nodes (their outputs are no larger than their inputs'
    products) or inputs that do not say.

    Example:
        >>> _constant_entries("ConstantOfShape", [np.array([1000, 1000])])
        1000000.0
        >>> _constant_entries("Relu", [np.ones(3)]) is None
        True
    """
    try:
        if op == "ConstantOfShape" and ins and ins[0] is not None:
            return float(np.prod(np.abs(ins[0].astype(np.float64))))
        if op == "Expand" and len(ins) > 1 and ins[1] is not None:
            a, shp = ins[0].shape, [abs(float(v)) for v in ins[1].ravel()]
            k = max(len(a), len(shp))
            a = (1,) * (k - len(a)) + tuple(a)
            shp = [1.0] * (k - len(shp)) + shp
            return float(np.prod([max(float(x), y) for x, y in zip(a, shp, strict=True)]))
        if op == "Tile" and len(ins) > 1 and ins[1] is not None:
            return float(ins[0].size) * float(np.prod(np.abs(ins[1].astype(np.float64))))
        if op == "Range" and len(ins) == 3 and all(v is not None for v in ins):
            start, limit, delta = (float(np.asarray(v).ravel()[0]) for v in ins)
            return abs((limit - start) / delta) if delta else None
    except (TypeError, ValueError, IndexError):
        return None  # the evaluator names what is wrong with the inputs
    return None


#: operators whose output is a random draw (refused even on constant inputs)
RANDOM_OPS = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                        "Multinomial", "Bernoulli"})


def eval_constant_node(node: Any, ins: list, opset: int, where: str) -> list:
    """Evaluate a node of an unhandled type whose inputs are all constants (onnx's
    reference evaluator; float outputs as float64).  Also used by ``relulab.crown``'s
    importer.  Raises :class:`FormatError` naming ``where``."""
    from onnx.reference import ReferenceEvaluator

    if node.op_type in RANDOM_OPS:
        # one draw frozen into the model would be another function than onnxruntime's
        raise FormatError(f"{where}: a random operator is not a function of the input; relulab "
                          "reads deterministic models only")
    feeds = {name: np.asarray(v) for name, v in zip(node.input, ins, strict=True) if name}
    n = _constant_entries(node.op_type, [None if v is None else np.asarray(v) for v in ins])
    if n is not None:
        check_bytes(16.0 * n, f"its constant output ({n:.3g} entries)")  # the caller names the node
    try:
        outs = ReferenceEvaluator(node, opsets={"": opset}).run(None, feeds)
    except Exception as e:
        raise FormatError(f"{where}: cannot evaluate this constant node ({type(e).__name__}: {e})") from None
    return [np.asarray(o).astype(np.float64) if np.asarray(o).dtype.kind == "f" else np.asarray(o) for o in outs]


def _input_shape(vi: Any) -> tuple[int, ...]:
    tt = vi.type.tensor_type
    if not vi.type.HasField("tensor_type") or not tt.HasField("shape"):
        raise FormatError(f"graph input '{vi.name}' has no tensor shape")
    if tt.elem_type not in (1, 10, 11, 16):  # FLOAT, FLOAT16, DOUBLE, BFLOAT16
        raise FormatError(f"graph input '{vi.name}' is not a floating-point tensor")
    shape = []
    for i, d in enumerate(tt.shape.dim):
        if d.HasField("dim_value") and d.dim_value > 0:
            shape.append(int(d.dim_value))
        elif i == 0:
            shape.append(1)  # a symbolic batch axis: one sample
        else:
            raise FormatError(f"graph input '{vi.name}' has an unknown size on axis {i}")
    if not shape:
        raise FormatError(f"graph input '{vi.name}' is a scalar")
    return tuple(shape)


def onnx_to_network(model: Any) -> Network:
    """Convert a loaded ``onnx.ModelProto`` (see :func:`load_onnx`).

    The nodes are lowered in the file's order; when that order makes a branch from the
    input look like a skip into a hidden layer, they are lowered again in activation-depth
    order (:func:`_lowering_order`; nodes that do not reach the output are dropped).

    Example:
        >>> from relulab.examples import tiny_2d
        >>> onnx_to_network(network_to_onnx(tiny_2d())) == tiny_2d()
        True
    """
    try:
        return _onnx_to_network(model, reorder=False)
    except FormatError as e:
        if "skip into a hidden layer" not in str(e):
            raise
        try:
            return _onnx_to_network(model, reorder=True)
        except FormatError:
            raise e from None


def check_opset(opset: int, error: type[Exception] = FormatError) -> None:
    """Refuse ONNX opsets before 7: their ``broadcast``/``axis`` attributes (Add, Sub, Mul,
    Div, Gemm) and training-mode defaults (BatchNormalization, Dropout ``is_test=0``) are
    another semantics, and onnxruntime has no kernels to cross-check them.

    Example:
        >>> check_opset(7)
        >>> check_opset(6)
        Traceback (most recent call last):
        ...
        relulab.errors.FormatError: ONNX opset 6 is not supported (before opset 7, broadcasting and the batch-norm / dropout modes follow older rules): convert the model with onnx.version_converter.convert_version(model, 13)
    """
    if opset < 7:
        raise error(f"ONNX opset {opset} is not supported (before opset 7, broadcasting and the "
                    "batch-norm / dropout modes follow older rules): convert the model with "
                    "onnx.version_converter.convert_version(model, 13)")


def model_opset(model: Any, error: type[Exception] = FormatError) -> int:
    """The ONNX operator set ``model`` declares for the default domain, checked by
    :func:`check_opset`.  A model that declares none is refused: before IR version 3
    that means opset 1 (an old-style ``Add(broadcast=1, axis=1)`` bias was read along the
    last axis as opset 17, and a violated property read "holds"), and from IR version 3
    on the model is invalid.

    Example:
        >>> import onnx
        >>> model_opset(onnx.helper.make_model(onnx.helper.make_graph([], "g", [], []),
        ...                                    opset_imports=[onnx.helper.make_opsetid("", 13)]))
        13
    """
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is None:
        raise error("the model declares no ONNX opset (opset_import): before IR version 3 that means "
                    "opset 1, whose broadcasting rules relulab does not read; convert the model with "
                    "onnx.version_converter.convert_version(model, 13)")
    check_opset(opset, error)
    return int(opset)


def _onnx_to_network(model: Any, reorder: bool) -> Network:
    graph = model.graph
    opset = model_opset(model)
    inits = {t.name: t for t in graph.initializer}
    for st in graph.sparse_initializer:   # onnxruntime runs them: read densely
        inits[st.values.name] = st
    inputs = [i for i in graph.input if i.name not in inits]
    if not graph.node and not inputs:
        raise FormatError("holds no graph (an empty file, or not an ONNX model)")
    if len(inputs) != 1:
        raise FormatError(
            f"the graph has {len(inputs)} inputs ({', '.join(i.name for i in inputs)}); "
            "relulab reads models with one input"
        )
    if len(graph.output) != 1:
        raise FormatError(
            f"the graph has {len(graph.output)} outputs; relulab reads models with one output"
        )
    tr = AffineTracer(_input_shape(inputs[0]))
    cx = _Cx(tr, opset)
    out = graph.output[0].name
    if reorder:
        nodes, original_index = _lowering_order(graph, {inputs[0].name, *inits}, out)
    else:
        nodes, original_index = list(graph.node), list(range(len(graph.node)))
    consumers, leads = _liveness(nodes)
    env: dict[str, Any] = {inputs[0].name: tr.input()}
    # functions of the input alone that were carried into the hidden layers: their
    # original stays available for uses that only reach the output (the skip)
    original: dict[str, Any] = {}

    def value(name: str, where: str, to_output_only: bool = False, infinite_ok: bool = False) -> Any:
        if not name:
            return None
        if to_output_only and name in original:
            return original[name]
        if name in env:
            return env[name]
        if name in inits:
            try:
                a = _to_array(inits[name])
            except Exception as e:
                raise FormatError(f"{where}: cannot read initializer '{name}' ({e})") from None
            if a.dtype.kind == "f" and not np.all(np.isfinite(a) | (infinite_ok & ~np.isnan(a))):
                raise FormatError(f"{where}: initializer '{name}' contains NaN or infinite values")
            env[name] = a
            return a
        made = next(((n, j) for n in nodes for j, o in enumerate(n.output) if o == name), None)
        if made is not None and made[1] > 0:
            # (Dropout's mask, MaxPool's Indices: "not the output of an earlier node" was false)
            raise FormatError(
                f"{where}: input '{name}' is output {made[1] + 1} of node '{made[0].name or made[0].op_type}' "
                f"({made[0].op_type}); relulab computes only the first output of that operator")
        raise FormatError(
            f"{where}: input '{name}' is not defined (not a graph input, an initializer or "
            "the output of an earlier node)"
        )

    for i, node in enumerate(nodes):
        label = node.name or f"#{original_index[i]}"
        where = f"node '{label}' ({node.op_type})"
        cx.where = where
        # torch writes Hardtanh(-inf, 1)'s bound as a Constant node: infinite is no bound
        cx.clip_bounds_only = bool(node.output) and all(
            nodes[k].op_type == "Clip" and o not in list(nodes[k].input)[:1]
            for o in node.output if o for k in consumers.get(o, [])) and any(
            consumers.get(o) for o in node.output if o)
        # an infinite Clip bound is no bound (the spec's and onnxruntime's reading)
        ins = [value(n, where, not leads[i], infinite_ok=node.op_type == "Clip" and j > 0)
               for j, n in enumerate(node.input)]
        handler = _HANDLERS.get(node.op_type) if node.domain in ("", "ai.onnx") else None
        try:
            if node.op_type in _ACTIVATIONS and any(tr.is_aff(v) for v in ins):
                for names in _to_carry(tr, env, i, node, consumers, leads, out, original).values():
                    v = env[names[0]]
                    if tr.epoch == 0:  # carry a copy; keep the original for the skip
                        v = type(v)(v._A, v.c, v.epoch, v.P, v.p, As=v.As)
                        for name in names:
                            original[name] = env[name]
                    for name in names:
                        env[name] = v
                    tr.carry.append(v)
            if handler is not None:
                outs = handler(cx, ins, _attrs(node))
            elif not any(tr.is_aff(v) for v in ins):
                outs = eval_constant_node(node, ins, opset, where)
            else:
                dom = f"{node.domain}." if node.domain not in ("", "ai.onnx") else ""
                raise FormatError(
                    f"{where}: unsupported operator {dom}{node.op_type}; relulab reads "
                    f"{', '.join(SUPPORTED_OPS)}"
                )
        except FormatError:
            raise
        except ResourceLimitError as e:
            # (the memory budget is a RelulabError, hence a ValueError: it stays what it is,
            # naming the node, so verify answers unknown (memory), not a format error)
            raise ResourceLimitError(f"{where}: {e}") from None
        except MemoryError:
            # an allocation no budget check foresaw (a constant padded by 1e9): one line
            raise ResourceLimitError(f"{where}: the node's values need more memory than there is") from None
        except (ValueError, IndexError, TypeError, KeyError, OverflowError, ZeroDivisionError) as e:
            # malformed attributes and shapes surface as these deep inside the handlers
            msg = f"missing attribute {e}" if isinstance(e, KeyError) else str(e)
            msg = (msg.strip().splitlines() or [type(e).__name__])[0]
            # numpy scalars in a library's message print as np.str_('x'): show the value
            msg = re.sub(r"np\.[a-z_]+\d*\(([^()]*)\)", r"\1", msg)
            raise FormatError(f"{where}: {msg}") from None
        finally:
            tr.carry = []
        for name, v in zip(node.output, outs, strict=False):
            if name and v is not None:
                env[name] = v
    if out not in env:
        raise FormatError(f"graph output '{out}' is not computed by any node")
    return tr.finish(env[out], f"graph output '{out}'")


#: random inputs at which a model read from a file is compared with onnxruntime
CROSSCHECK_POINTS = 3

#: relative disagreement (to 1 + the largest onnxruntime output) that counts as a misread:
#: far above float32 rounding, far below what a misread operator gives
#: (other input types, bfloat16: 5e-2)
CROSSCHECK_RTOL = {np.dtype(np.float64): 1e-9, np.dtype(np.float32): 1e-3, np.dtype(np.float16): 5e-2}  # tol: rounding vs misread
#: ... and relative to the largest intermediate value, where rounding in the model's own
#: precision happens (relu(x + 1e6) - relu(1e6) in float32 is off by 0.03)
CROSSCHECK_RTOL_INTERMEDIATE = {np.dtype(np.float64): 1e-12, np.dtype(np.float32): 1e-5,  # tol: rounding
                                np.dtype(np.float16): 1e-2}


def _ort_outputs(ort: Any, model: Any, input_name: str, dims: list[int],
                 dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """onnxruntime's outputs ``(k, m)`` at the cross-check's random inputs ``(k, n)`` (in
    ``dtype``), one sample per run in the declared shape (a symbolic batch axis as 1; a
    fixed batch or an input without a batch axis as declared)."""
    opts = ort.SessionOptions()
    opts.log_severity_level = 4   # its warnings about unused initializers are noise here
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    X = np.random.default_rng(0).standard_normal((CROSSCHECK_POINTS, int(np.prod(dims)))).astype(dtype)
    want = np.stack([np.asarray(sess.run(None, {input_name: X[k].reshape(dims)})[0], dtype=np.float64).reshape(-1)
                     for k in range(CROSSCHECK_POINTS)])
    return want, X


def _float32_copy(model: Any) -> Any:
    """A copy of a float64 model with every float64 tensor, type and cast in float32."""
    import copy

    from onnx import TensorProto, numpy_helper

    m = copy.deepcopy(model)

    def narrow(t: Any) -> None:
        if t.data_type == TensorProto.DOUBLE:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float32), t.name))

    for t in m.graph.initializer:
        narrow(t)
    for node in m.graph.node:
        for a in node.attribute:
            if a.HasField("t"):
                narrow(a.t)
            if a.name == "to" and a.i == TensorProto.DOUBLE:
                a.i = TensorProto.FLOAT
    for v in (*m.graph.input, *m.graph.output, *m.graph.value_info):
        if v.type.tensor_type.elem_type == TensorProto.DOUBLE:
            v.type.tensor_type.elem_type = TensorProto.FLOAT
    return m


def crosscheck_onnxruntime(model: Any, forward: Callable[[np.ndarray], np.ndarray], where: str,
                           intermediate: Callable[[np.ndarray], float] | None = None) -> None:
    """Compare relulab's reading of ``model`` (an ``onnx.ModelProto``) with onnxruntime at
    a few random inputs and raise :class:`FormatError` when they disagree.

    ``forward`` maps flat inputs ``(k, size of the declared input)`` to outputs ``(k, m)``;
    ``intermediate`` (optional) gives the largest absolute value inside the
    model at those inputs, which scales the rounding allowed.  This is a defence in
    depth: each operator is read by hand, and a misread attribute would otherwise become
    wrong answers downstream without a word.  Nothing is checked (and nothing raised)
    when onnxruntime is not installed or cannot run the model itself: there is then no
    independent evaluation to compare with.

    Example:
        >>> from relulab.examples import tiny_2d
        >>> net = tiny_2d()
        >>> crosscheck_onnxruntime(network_to_onnx(net), net, "tiny")
        >>> crosscheck_onnxruntime(network_to_onnx(net), lambda X: net(X) + 1, "tiny")
        Traceback (most recent call last):
        ...
        relulab.errors.FormatError: tiny: relulab's reading of the model disagrees with onnxruntime ...
    """
    try:
        import onnxruntime as ort
        from onnx.helper import tensor_dtype_to_np_dtype
    except ImportError:
        return
    inits = {t.name for t in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    try:
        dtype = np.dtype(tensor_dtype_to_np_dtype(inputs[0].type.tensor_type.elem_type))
        dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1
                for d in inputs[0].type.tensor_type.shape.dim]
    except Exception:  # noqa: BLE001 - no input onnxruntime could be fed
        return
    try:
        want, X = _ort_outputs(ort, model, inputs[0].name, dims, dtype)
    except Exception:  # noqa: BLE001 - onnxruntime cannot run it: nothing to compare with
        # ... unless the model is not valid ONNX: an output written by two nodes, an Add
        # of three inputs or a Gemm of four were read as some function, unchecked
        _refuse_invalid(model, where)
        if dtype != np.float64:
            return
        # onnxruntime has no float64 kernels for Conv or AveragePool: compare on a float32
        # copy of the model (with float32's tolerance) rather than not at all
        try:
            dtype = np.dtype(np.float32)
            want, X = _ort_outputs(ort, _float32_copy(model), inputs[0].name, dims, dtype)
        except Exception:  # noqa: BLE001 - not even so: nothing to compare with
            return
    X64 = X.astype(np.float64)
    got = np.asarray(forward(X64), dtype=np.float64).reshape(CROSSCHECK_POINTS, -1)
    if not np.all(np.isfinite(want)):
        if np.all(np.isfinite(got)):
            raise FormatError(
                f"{where}: the model's own outputs overflow at random inputs (onnxruntime gives "
                f"inf or NaN in {dtype.name}) while relulab's float64 reading stays finite: refusing "
                "a model whose weights do not fit its precision")
        return
    rtol = CROSSCHECK_RTOL.get(dtype, 5e-2)
    scale = 1.0 + float(np.max(np.abs(want)))
    inner = float(intermediate(X64)) if intermediate is not None else 0.0
    tol = max(rtol * scale, CROSSCHECK_RTOL_INTERMEDIATE.get(dtype, 1e-2) * inner)
    diff = float(np.max(np.abs(got - want))) if got.shape == want.shape else np.inf
    prec = _computing_precision(model, dtype)
    if not diff <= tol and prec.itemsize < dtype.itemsize:
        # relulab reads a Cast to float32 as the identity; here the model's own rounding
        # shows at its interface's precision (double(float(x / 3)) - x / 3 is not 0), so
        # relulab's reading is another function: refused, naming the cause (a looser
        # check had let verify say "holds" on a violated property)
        raise FormatError(
            f"{where}: the model rounds to {prec.name} inside (a Cast), which relulab reads as the "
            f"identity, and that rounding shows at its {dtype.name} outputs (largest difference "
            f"{diff:.3g}, outputs up to {scale - 1:.3g}): relulab would answer for another function; "
            f"give the model a {prec.name} input, or remove the cast")
    if not diff <= tol:
        raise FormatError(
            f"{where}: relulab's reading of the model disagrees with onnxruntime at random inputs "
            f"(largest difference {diff:.3g}, outputs up to {scale - 1:.3g}): an operator or "
            "attribute is read differently; refusing the model rather than answering for "
            "another function (please report it)")


def _computing_precision(model: Any, dtype: np.dtype) -> np.dtype:
    """The lowest float precision ``model`` computes in: its input's ``dtype``, or a Cast
    to float32 / float16 inside it (which relulab reads as the identity: a refusal names
    it when its rounding shows at the model's outputs).

    Example:
        >>> from onnx import helper as H, TensorProto as T
        >>> g = H.make_graph([H.make_node("Cast", ["x"], ["y"], to=T.FLOAT)], "g",
        ...                  [H.make_tensor_value_info("x", T.DOUBLE, [1])], [H.make_tensor_value_info("y", T.FLOAT, [1])])
        >>> _computing_precision(H.make_model(g), np.dtype(np.float64))
        dtype('float32')
    """
    from onnx import TensorProto

    widths = {TensorProto.FLOAT: np.dtype(np.float32), TensorProto.FLOAT16: np.dtype(np.float16),
              TensorProto.BFLOAT16: np.dtype(np.float16)}
    low = np.dtype(dtype)
    for node in model.graph.node:
        if node.op_type == "Cast":
            to = next((a.i for a in node.attribute if a.name == "to"), None)
            if to in widths and widths[to].itemsize < low.itemsize:
                low = widths[to]
    return low


def _refuse_invalid(model: Any, where: str) -> None:
    """One clear error when ``model`` breaks ONNX's structure (called where onnxruntime
    could not run it either, so no comparison could catch a misreading): a name written
    twice (or over a graph input or initializer), a node with more or fewer inputs or
    outputs than its operator has, or an attribute its operator does not have.  An output
    written by two nodes, an Add of three inputs or a Gemm of four were read as some
    function, unchecked.  (Not onnx's whole checker: it also refuses models without
    declared output shapes, which are common and readable.)"""
    import onnx.defs

    g = model.graph
    seen = {i.name for i in g.input} | {t.name for t in g.initializer}
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    for k, node in enumerate(g.node):
        label = f"node '{node.name or '#' + str(k)}' ({node.op_type})"
        for o in node.output:
            if o and o in seen:
                raise FormatError(f"{where}: not a valid ONNX model: {label} writes '{o}', which is "
                                  "already defined (a graph in single assignment form names each value once)")
            seen.add(o)
        if node.domain not in ("", "ai.onnx") or opset is None:
            continue
        try:
            sch = onnx.defs.get_schema(node.op_type, opset, "")
        except Exception:  # noqa: BLE001 - an operator onnx does not know: refused elsewhere
            continue
        n_in, n_out = len(node.input), len(node.output)
        if not sch.min_input <= n_in <= sch.max_input or not sch.min_output <= n_out <= sch.max_output:
            raise FormatError(
                f"{where}: not a valid ONNX model: {label} has {n_in} inputs and {n_out} outputs; "
                f"{node.op_type} takes {sch.min_input}..{sch.max_input} and gives {sch.min_output}..{sch.max_output}")
        unknown = sorted(a.name for a in node.attribute if a.name not in sch.attributes)
        if unknown:
            raise FormatError(f"{where}: not a valid ONNX model: {label} has attributes {unknown} that "
                              f"{node.op_type} does not have")


# bytes per initializer entry that reading a model may hold at once: the raw entry (up to
# 8), its float64 copy and one more for a transpose or a lowering
INIT_BYTES_PER_ENTRY = 24


def read_onnx_file(path: str | os.PathLike) -> Any:
    """The ModelProto of an ONNX file, its weights sized against the memory budget before
    they are read (external data included): a 152 MB float32 file peaked at 1.48 GB under
    a 0.5 GB budget before any check, an 800 MB external file at 3.8 GB.

    Example:
        >>> import numpy as np, tempfile, os
        >>> from relulab import Network
        >>> p = os.path.join(tempfile.mkdtemp(), "n.onnx")
        >>> save_onnx(Network([np.eye(2)], [np.ones(2)]), p)
        >>> len(read_onnx_file(p).graph.initializer) > 0
        True
    """
    onnx = require("onnx", "onnx")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except FileNotFoundError:
        raise FormatError(f"{path}: no such file") from None
    except Exception as e:  # protobuf DecodeError and friends
        raise FormatError(f"{path}: not a readable ONNX model ({type(e).__name__}: {e})") from None
    # every tensor: initializers, sparse ones, and those in nodes' attributes (a Constant's
    # weights in a side file were read relative to the working directory, from whatever
    # file of that name it held, and onnxruntime's cross-check could not run)
    tensors, sparse = _all_tensors(model.graph)
    entries = sum(float(np.prod([float(d) for d in t.dims])) if len(t.dims) else 1.0 for t in tensors)
    check_bytes(INIT_BYTES_PER_ENTRY * entries, f"{path}: its weights ({entries:.3g} entries, read in float64)")
    if any(t.data_location == onnx.TensorProto.EXTERNAL for t in sparse):
        raise FormatError(f"{path}: a sparse tensor keeps its data in an external file, which relulab "
                          "does not read; save the model with its data inside")
    if any(t.data_location == onnx.TensorProto.EXTERNAL for t in tensors):
        try:
            onnx.load_external_data_for_model(model, os.path.dirname(os.path.abspath(str(path))))
        except Exception as e:  # a missing or short external file
            raise FormatError(f"{path}: cannot read its external weights ({type(e).__name__}: {e})") from None
        if any(t.data_location == onnx.TensorProto.EXTERNAL for t in _all_tensors(model.graph)[0]):
            raise FormatError(f"{path}: some of its external weights were not read; save the model "
                              "with its data inside")
    return model


def _all_tensors(graph: Any) -> tuple[list, list]:
    """(dense tensors, tensors of sparse ones) of ``graph``: its initializers and those of
    nodes' attributes, in subgraphs too."""
    dense, sparse = list(graph.initializer), []
    for st in graph.sparse_initializer:
        sparse += [st.values, st.indices]
    for node in graph.node:
        for a in node.attribute:
            if a.HasField("t"):
                dense.append(a.t)
            dense += list(a.tensors)
            if a.HasField("sparse_tensor"):
                sparse += [a.sparse_tensor.values, a.sparse_tensor.indices]
            for st in a.sparse_tensors:
                sparse += [st.values, st.indices]
            for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                d2, s2 = _all_tensors(sub)
                dense += d2
                sparse += s2
    return dense, sparse


def load_onnx(path: str | os.PathLike) -> Network:
    """Read an ONNX model as an exactly equivalent :class:`Network` (see the module doc).

    Raises:
        FormatError: a missing, truncated or corrupt file (naming it), or an unsupported
            operator (naming the node and its op type), or inconsistent shapes.

    Example:
        >>> import numpy as np, tempfile, os
        >>> from relulab import Network
        >>> p = os.path.join(tempfile.mkdtemp(), "n.onnx")
        >>> save_onnx(Network([np.eye(2)], [np.ones(2)]), p)
        >>> load_onnx(p)
        Network(2-2, float64)
    """
    model = read_onnx_file(path)
    try:
        net = onnx_to_network(model)
    except FormatError as e:
        raise FormatError(f"{path}: {e}") from None
    except ResourceLimitError as e:  # a declared input or layer too large to lower
        raise ResourceLimitError(f"{path}: {e}") from None
    crosscheck_onnxruntime(model, net, str(path), lambda X: _largest_value(net, X))
    return net


def _largest_value(net: Network, X: np.ndarray) -> float:
    """The largest absolute input, pre-activation or output of ``net`` at the rows of X."""
    return max(float(np.max(np.abs(v), initial=0.0)) for v in (X, *net.preactivations(X), net(X)))


# ============================================================================ writing
def network_to_onnx(net: Network, opset: int = OPSET) -> Any:
    """An ``onnx.ModelProto`` computing ``net`` in float64 (DOUBLE tensors).

    Layers are ``Gemm(transB=1)`` nodes with ``Relu`` between them; the input
    ``"input"`` has shape ``(batch, d)`` and the output ``"output"`` ``(batch, m)``.  A
    skip is an extra ``Gemm`` from the input (placed first) added to the last layer;
    a network with a skip but no hidden layer is saved as one merged affine layer.
    A Fraction network is rounded to float64.

    Example:
        >>> from relulab.examples import xor_net
        >>> model = network_to_onnx(xor_net())
        >>> [node.op_type for node in model.graph.node]
        ['Gemm', 'Relu', 'Gemm']
        >>> onnx_to_network(model) == xor_net().float()
        True
    """
    onnx = require("onnx", "onnx")
    from onnx import TensorProto, helper, numpy_helper

    newest = onnx.defs.onnx_opset_version()
    if not is_int_at_least(opset, 7) or opset > newest:
        # before opset 7 Gemm needs a 'broadcast' attribute and onnxruntime has no kernel
        raise RelulabError(f"save_onnx: opset must be an integer from 7 to {newest}, got {opset!r}")
    net = net.float()
    if net.skip is not None and net.n_hidden_layers == 0:
        net = net.without_skip()
    nodes, inits = [], []

    def init(a: np.ndarray, name: str) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(a, dtype=np.float64), name))
        return name

    last = "output" if net.skip is None else "last_layer"
    if net.skip is not None:
        S, s = net.skip
        nodes.append(
            helper.make_node("Gemm", ["input", init(S, "skip_W"), init(s, "skip_b")], ["skip"],
                             name="skip", transB=1)
        )
    cur = "input"
    for k, (W, b) in enumerate(net.layers, start=1):
        final = k == net.depth
        z = last if final else f"z{k}"
        nodes.append(
            helper.make_node("Gemm", [cur, init(W, f"W{k}"), init(b, f"b{k}")], [z],
                             name=f"layer{k}", transB=1)
        )
        if not final:
            nodes.append(helper.make_node("Relu", [z], [f"h{k}"], name=f"relu{k}"))
            cur = f"h{k}"
    if net.skip is not None:
        nodes.append(helper.make_node("Add", ["last_layer", "skip"], ["output"], name="add_skip"))
    graph = helper.make_graph(
        nodes,
        "relulab_network",
        [helper.make_tensor_value_info("input", TensorProto.DOUBLE, ["batch", net.input_dim])],
        [helper.make_tensor_value_info("output", TensorProto.DOUBLE, ["batch", net.output_dim])],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="relulab"
    )
    model.ir_version = 8  # readable by onnxruntime releases of the last years
    onnx.checker.check_model(model)
    return model


def save_onnx(net: Network, path: str | os.PathLike, opset: int = OPSET) -> None:
    """Write ``net`` as an ONNX model (DOUBLE tensors, see :func:`network_to_onnx`),
    atomically.  ``load_onnx`` gives the same network back (``==``).

    Example:
        >>> import numpy as np, tempfile, os
        >>> from relulab import Network
        >>> p = os.path.join(tempfile.mkdtemp(), "n.onnx")
        >>> save_onnx(Network([np.eye(2)], [np.ones(2)]), p); os.path.getsize(p) > 0
        True
    """
    onnx = require("onnx", "onnx")
    model = network_to_onnx(net, opset)
    with atomic_path(path) as tmp:
        onnx.save(model, tmp)
