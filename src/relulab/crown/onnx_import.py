"""Reading an ONNX model for a :class:`~relulab.crown.graph.BoundGraph`, structure kept.

Every tensor is either a constant (initializers, ``Constant`` nodes and what is computed
from them alone, evaluated with ``onnx.reference``) or a node of the graph.  Graph
tensors carry a batch axis of size 1 in ONNX; the graph works per sample, without it.

Supported on graph tensors: Gemm, MatMul (by a constant on the right), Add/Sub of two
tensors or with a constant, Mul/Div by a constant, Neg, Conv (1-D/2-D, pads, auto_pad,
strides, dilations, group), BatchNormalization, AveragePool, GlobalAveragePool,
MaxPool (no padding), GlobalMaxPool, Pad (constant zero), Relu, LeakyRelu / PRelu /
Clip (rewritten exactly with ReLUs: ``a x + (1 - a) relu(x)``, ``lo + relu(x - lo) -
relu(x - hi)``), Flatten, Reshape,
Squeeze/Unsqueeze and Transpose (not of the batch axis), Concat, Identity, Dropout, Cast,
Shape.
Anything else raises a :class:`~relulab.crown.builder.GraphError` naming the node.

Example:
    >>> import numpy as np, tempfile, os
    >>> from relulab import Network
    >>> from relulab.io.onnx import save_onnx
    >>> p = os.path.join(tempfile.mkdtemp(), "n.onnx")
    >>> save_onnx(Network([np.ones((3, 2)), np.ones((1, 3))], [np.zeros(3), [0.5]]), p)
    >>> b, out, _ = read_onnx(p)
    >>> [n.op.kind for n in b.finish(out)]
    ['Input', 'Linear', 'Relu', 'Linear']
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..errors import FormatError, require
from ..io.onnx import check_float_cast, model_opset
from ..limits import check_bytes
from .builder import GraphBuilder, GraphError
from .ops import Add2, Affine, Concat, Conv, Linear, Pad, Relu, Reshape, Slice, Transpose

__all__ = ["read_onnx", "SUPPORTED"]


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


class _Reader:
    """Walks the nodes; ``env`` maps tensor names to np.ndarray (constants) or str
    (graph node names)."""

    def __init__(self, b: GraphBuilder, opset: int) -> None:
        self.torch = require("torch", "torch")
        self.b, self.opset = b, opset
        self.where = ""
        self.label = ""

    # -------------------------------------------------------------- helpers
    def t(self, a: np.ndarray) -> Any:
        return self.torch.as_tensor(np.array(a, dtype=np.float64))

    def S(self, v: str) -> tuple[int, ...]:
        return self.b.shape(v)

    def add(self, op: Any, ins: list[str], suffix: str = "") -> str:
        return self.b.add(self.label + suffix, op, ins, self.where)

    def per_sample(self, c: np.ndarray, v: str, what: str) -> np.ndarray:
        """A constant broadcast against graph tensor v: its per-sample part."""
        full = (1, *self.S(v))
        c = np.asarray(c, dtype=np.float64)
        try:
            out_shape = np.broadcast_shapes(c.shape, full)
        except ValueError:
            raise GraphError(f"{self.where}: {what} of shape {c.shape} does not broadcast to {full}") from None
        if out_shape != full:
            raise GraphError(f"{self.where}: {what} of shape {c.shape} would change the shape {full}")
        c = c.reshape((1,) * (len(full) - c.ndim) + c.shape)
        return c[0]

    def const(self, v: Any, what: str) -> np.ndarray:
        if not isinstance(v, np.ndarray):
            raise GraphError(f"{self.where}: {what} must be a constant")
        return v

    # -------------------------------------------------------------- operators
    def relu(self, ins: list, at: dict) -> list:
        return [self.add(Relu(), [ins[0]])]

    def leaky(self, ins: list, at: dict, slope: Any = None) -> list:
        """leaky(x) = a x + (1 - a) relu(x) (a of any sign or size: exact)."""
        a = ins[0]
        alpha = self.per_sample(np.asarray(at.get("alpha", 0.01) if slope is None else slope), a, "the slope")
        r = self.add(Relu(), [a])
        lin = self.add(Affine(self.t(alpha), None), [a], "_lin")
        rel = self.add(Affine(self.t(1.0 - alpha), None), [r], "_rel")
        return [self.add(Add2(1.0), [lin, rel], "_sum")]

    def prelu(self, ins: list, at: dict) -> list:
        return self.leaky(ins, at, self.const(ins[1], "the slope"))

    def clip(self, ins: list, at: dict) -> list:
        """clip(x) = lo + (d - relu(d - relu(x - lo))) with d = hi - lo; max(x, lo) = lo + relu(x - lo);
        min(x, hi) = hi - relu(hi - x)."""
        a = ins[0]

        def bound_of(i: int, key: str) -> float | None:
            v = at.get(key) if len(ins) <= i or ins[i] is None else np.asarray(self.const(ins[i], key))
            if v is None or not np.isfinite(float(v)) or abs(float(v)) >= float(np.finfo(np.float32).max):
                return None
            return float(v)

        lo, hi = bound_of(1, "min"), bound_of(2, "max")

        def shift(v: float) -> Any:
            return self.t(np.array(v))

        if lo is not None and hi is not None and lo > hi:  # Clip-13: every output is max
            return [self.add(Affine(shift(0.0), shift(hi)), [a], "_const")]

        if lo is None and hi is None:
            return [a]
        if hi is None:
            r = self.add(Relu(), [self.add(Affine(None, shift(-lo)), [a], "_dlo")])
            return [self.add(Affine(None, shift(lo)), [r], "_up")]
        if lo is None:
            r = self.add(Relu(), [self.add(Affine(shift(-1.0), shift(hi)), [a], "_dhi")])
            return [self.add(Affine(shift(-1.0), shift(hi)), [r], "_down")]
        # clip(x) = lo + (d - relu(d - relu(x - lo))), d = hi - lo, in sequence: the
        # parallel form lo + relu(x - lo) - relu(x - hi) subtracts two huge numbers when
        # |x| is huge (x ~ 1e16 gave 0 for a clip to 0.7, and a wrong "violated"); here a
        # huge x only meets a ReLU that drops it, x <= lo gives lo exactly (d - d = 0) and
        # x >= hi gives lo + d, hi to rounding
        d = hi - lo
        r1 = self.add(Relu(), [self.add(Affine(None, shift(-lo)), [a], "_dlo")])
        room = self.add(Affine(shift(-1.0), shift(d)), [r1], "_room")
        r2 = self.add(Relu(), [room])
        w = self.add(Affine(shift(-1.0), shift(d)), [r2], "_min")
        return [self.add(Affine(None, shift(lo)), [w], "_clip")]

    def passthrough(self, ins: list, at: dict) -> list:
        return [ins[0]]

    def dropout(self, ins: list, at: dict) -> list:
        """Inference-mode dropout is the identity; training mode (a random mask) is refused."""
        if len(ins) > 2 and ins[2] is not None and bool(np.asarray(self.const(ins[2], "training_mode")).any()):
            raise GraphError(f"{self.where}: dropout in training mode is random, not a function")
        return [ins[0]]

    def cast(self, ins: list, at: dict) -> list:
        """A cast between float types of at least 32 bits is kept as the identity (bounds
        are computed in float64); a cast to an integer, bool or 16-bit float type changes
        the function, so it is refused."""
        if isinstance(ins[0], str):
            check_float_cast(int(at.get("to", 0)), self.where, GraphError)
        return [ins[0]]

    def add_sub(self, ins: list, at: dict, sign: float) -> list:
        a, b = ins[0], ins[1]
        if isinstance(a, str) and isinstance(b, str):
            if self.S(a) != self.S(b):
                raise GraphError(f"{self.where}: operands of shapes {self.S(a)} and {self.S(b)} differ")
            return [self.add(Add2(sign), [a, b])]
        if isinstance(a, str):
            c = self.per_sample(b, a, "the constant")
            return [self.add(Affine(None, self.t(sign * c)), [a])]
        c = self.per_sample(a, b, "the constant")
        scale = None if sign > 0 else self.t(np.array(-1.0))
        return [self.add(Affine(scale, self.t(c)), [b])]

    def neg(self, ins: list, at: dict) -> list:
        return [self.add(Affine(self.t(np.array(-1.0)), None), [ins[0]])]

    def mul(self, ins: list, at: dict, div: bool = False) -> list:
        a, b = ins[0], ins[1]
        if div and not isinstance(a, str):
            raise GraphError(f"{self.where}: division by a network tensor is not piecewise linear")
        if isinstance(a, str) and isinstance(b, str):
            raise GraphError(f"{self.where}: the product of two network tensors is not piecewise linear")
        v, c = (a, b) if isinstance(a, str) else (b, a)
        c = self.per_sample(c, v, "the constant")
        if div:
            if np.any(c == 0):
                raise GraphError(f"{self.where}: division by zero")
            c = 1.0 / c
        return [self.add(Affine(self.t(c), None), [v])]

    def matmul(self, ins: list, at: dict) -> list:
        a, b = ins
        if not isinstance(a, str):
            raise GraphError(f"{self.where}: only network tensor @ constant is supported")
        W = self.const(b, "the right operand")
        if W.ndim != 2 or W.shape[0] != self.S(a)[-1]:
            raise GraphError(f"{self.where}: a {W.shape} matrix does not fit a tensor of shape {self.S(a)}")
        return [self.add(Linear(self.t(W.T), None), [a])]

    def gemm(self, ins: list, at: dict) -> list:
        a = ins[0]
        if not isinstance(a, str) or len(self.S(a)) != 1:
            raise GraphError(f"{self.where}: Gemm needs a (1, n) network tensor as its first input")
        if int(at.get("transA", 0)):
            raise GraphError(f"{self.where}: transA=1 is not supported")
        Bm = self.const(ins[1], "B")
        Bm = Bm.T if int(at.get("transB", 0)) else Bm
        W = float(at.get("alpha", 1.0)) * Bm.T
        if W.shape[1] != self.S(a)[0]:
            raise GraphError(f"{self.where}: B of shape {Bm.shape} does not fit {self.S(a)}")
        bias = None
        if len(ins) > 2 and ins[2] is not None:
            c = float(at.get("beta", 1.0)) * self.const(ins[2], "C")
            bias = self.t(np.broadcast_to(c, (1, W.shape[0]))[0])
        return [self.add(Linear(self.t(W), bias), [a])]

    def flatten(self, ins: list, at: dict) -> list:
        a = ins[0]
        ax = int(at.get("axis", 1))
        if ax < 0:
            ax += len(self.S(a)) + 1
        if ax != 1:
            raise GraphError(f"{self.where}: Flatten with axis {at.get('axis')} would mix the batch axis")
        return [self.add(Reshape((int(np.prod(self.S(a))),)), [a])]

    def reshape(self, ins: list, at: dict) -> list:
        a = ins[0]
        tgt = [int(v) for v in self.const(ins[1], "the target shape").ravel()]
        full = (1, *self.S(a))
        out = []
        for i, d in enumerate(tgt):
            out.append(full[i] if d == 0 and not int(at.get("allowzero", 0)) else d)
        if not out or out[0] not in (1, -1):
            raise GraphError(f"{self.where}: reshape to {tgt} does not keep the batch axis first")
        rest = out[1:]
        n = int(np.prod(full))
        if out[0] == -1:
            if -1 in rest:
                raise GraphError(f"{self.where}: reshape to {tgt} is ambiguous")
            out[0] = 1
        if rest.count(-1) == 1:
            known = int(np.prod([d for d in rest if d != -1]))
            rest[rest.index(-1)] = n // max(known, 1)
        if int(np.prod(rest)) != n:
            raise GraphError(f"{self.where}: cannot reshape {full} to {tgt}")
        return [self.add(Reshape(tuple(rest)), [a])]

    def squeeze(self, ins: list, at: dict, un: bool = False) -> list:
        a = ins[0]
        axes = at.get("axes")
        if axes is None and len(ins) > 1 and ins[1] is not None:
            axes = self.const(ins[1], "axes").ravel().tolist()
        full = (1, *self.S(a))
        z = np.zeros(full)
        if un:
            if len({int(x) % (len(full) + len(axes)) for x in axes}) != len(axes):
                raise GraphError(f"{self.where}: repeated axes {list(axes)}")
            for ax in sorted(int(x) % (len(full) + len(axes)) for x in axes):
                z = np.expand_dims(z, ax)
            bad = 0 in [int(x) % (len(full) + len(axes)) for x in axes]
        else:
            axs = tuple(range(len(full))) if axes is None else tuple(int(x) % len(full) for x in axes)
            axs = tuple(x for x in axs if full[x] == 1) if axes is None else axs
            bad = 0 in axs
            z = np.squeeze(z, axis=axs)
        if bad:
            raise GraphError(f"{self.where}: squeezing or unsqueezing the batch axis is not supported")
        return [self.add(Reshape(z.shape[1:]), [a])]

    def concat(self, ins: list, at: dict) -> list:
        if not all(isinstance(v, str) for v in ins):
            raise GraphError(f"{self.where}: Concat of network tensors with constants is not supported")
        rank = len(self.S(ins[0])) + 1
        ax = int(at["axis"]) % rank
        if ax == 0:
            raise GraphError(f"{self.where}: Concat along the batch axis")
        return [self.add(Concat(ax - 1, len(ins)), list(ins))]

    def transpose(self, ins: list, at: dict) -> list:
        a = ins[0]
        rank = len(self.S(a)) + 1
        perm = [int(p) for p in at.get("perm", list(reversed(range(rank))))]
        if sorted(perm) != list(range(rank)) or perm[0] != 0:
            raise GraphError(f"{self.where}: transposing the batch axis (perm {perm}) is not supported")
        return [self.add(Transpose(tuple(p - 1 for p in perm[1:])), [a])]

    def shape(self, ins: list, at: dict) -> list:
        # start / end (opset 15) slice the shape; Python's slicing clamps negatives and
        # out-of-range ends exactly as the ONNX spec does
        full = np.array((1, *self.S(ins[0])), dtype=np.int64)
        end = at.get("end")
        return [full[int(at.get("start", 0)):(None if end is None else int(end))]]

    # spatial operators ------------------------------------------------------
    def _spatial(self, a: str, what: str) -> int:
        S = self.S(a)
        if len(S) not in (2, 3):
            raise GraphError(f"{self.where}: {what} takes a (1, C, L) or (1, C, H, W) tensor, got {(1, *S)}")
        return len(S) - 1

    def _pads(self, at: dict, a: str, k: list, st: list, dil: list) -> list[tuple[int, int]]:
        nd = len(k)
        sizes = self.S(a)[1:]
        auto = at.get("auto_pad", b"NOTSET")
        auto = auto.decode() if isinstance(auto, bytes) else auto
        if auto in ("NOTSET", ""):
            p = [int(x) for x in at.get("pads", [0] * (2 * nd))]
            if len(p) != 2 * nd:
                raise GraphError(f"{self.where}: pads {p} for a {nd}-D operation")
            return [(p[i], p[nd + i]) for i in range(nd)]
        if auto == "VALID":
            return [(0, 0)] * nd
        if auto not in ("SAME_UPPER", "SAME_LOWER"):
            raise GraphError(f"{self.where}: auto_pad '{auto}' is not supported")
        out = []
        for size, kk, s, d in zip(sizes, k, st, dil, strict=True):
            total = max((-(-size // s) - 1) * s + (kk - 1) * d + 1 - size, 0)
            small = total // 2
            out.append((small, total - small) if auto == "SAME_UPPER" else (total - small, small))
        return out

    def _padded(self, a: str, pads: list[tuple[int, int]]) -> tuple[str, tuple[int, ...]]:
        """Symmetric pads go to the operator; asymmetric ones become a Pad node."""
        if all(p0 == p1 for p0, p1 in pads):
            return a, tuple(p0 for p0, _ in pads)
        flat: list[int] = []
        for p0, p1 in reversed(pads):
            flat += [p0, p1]
        return self.add(Pad(tuple(flat)), [a], "_pad"), (0,) * len(pads)

    def _geom(self, at: dict, nd: int, kernel: list | None = None) -> tuple[list, list, list]:
        k = list(kernel) if kernel is not None else [int(x) for x in at["kernel_shape"]]
        st = [int(x) for x in at.get("strides", [1] * nd)]
        dil = [int(x) for x in at.get("dilations", [1] * nd)]
        if not (len(k) == len(st) == len(dil) == nd):
            raise GraphError(f"{self.where}: kernel {k}, strides {st}, dilations {dil} for a {nd}-D tensor")
        if int(at.get("ceil_mode", 0)):
            raise GraphError(f"{self.where}: ceil_mode=1 is not supported")
        return k, st, dil

    def conv(self, ins: list, at: dict) -> list:
        a = ins[0]
        W = self.const(ins[1], "the weight")
        nd = self._spatial(a, "Conv")
        if W.ndim != nd + 2:
            raise GraphError(f"{self.where}: weight of shape {W.shape} for a {nd}-D convolution")
        if "kernel_shape" in at and [int(x) for x in at["kernel_shape"]] != list(W.shape[2:]):
            raise GraphError(f"{self.where}: kernel_shape {list(at['kernel_shape'])} does not match the "
                             f"weight of shape {W.shape}")
        k, st, dil = self._geom(at, nd, list(W.shape[2:]))
        src, pad = self._padded(a, self._pads(at, a, k, st, dil))
        bias = self.t(self.const(ins[2], "the bias").ravel()) if len(ins) > 2 and ins[2] is not None else None
        op = Conv(self.t(W), bias, tuple(st), pad, tuple(dil), int(at.get("group", 1)))
        return [self.add(op, [src])]

    def batchnorm(self, ins: list, at: dict) -> list:
        if int(at.get("training_mode", 0)):
            raise GraphError(f"{self.where}: BatchNormalization in training mode is not a fixed function")
        a = ins[0]
        g, beta, mean, var = (self.const(v, "a parameter").astype(np.float64).ravel() for v in ins[1:5])
        S = self.S(a)
        if not (g.size == beta.size == mean.size == var.size == S[0]):
            raise GraphError(f"{self.where}: {g.size} channels do not fit a tensor of shape {(1, *S)}")
        k = g / np.sqrt(var + float(at.get("epsilon", 1e-5)))
        shp = (S[0],) + (1,) * (len(S) - 1)
        return [self.add(Affine(self.t(k.reshape(shp)), self.t((beta - mean * k).reshape(shp))), [a])]

    def avgpool(self, ins: list, at: dict, global_: bool = False) -> list:
        a = ins[0]
        nd = self._spatial(a, "AveragePool")
        C = self.S(a)[0]
        k, st, dil = self._geom(at, nd, list(self.S(a)[1:]) if global_ else None)
        pads = [(0, 0)] * nd if global_ else self._pads(at, a, k, st, dil)
        src, pad = self._padded(a, pads)
        w = np.ones((C, 1, *k)) / float(np.prod(k))
        conv = Conv(self.t(w), None, tuple(st), pad, tuple(dil), C)
        y = self.add(conv, [src])
        if any(p0 or p1 for p0, p1 in pads) and not int(at.get("count_include_pad", 0)):
            # divide by the number of real (not padded) entries in each window
            with self.torch.no_grad():
                ones = self.torch.ones(1, *self.S(a), dtype=self.torch.float64)
                if src != a:
                    ones = self.b.nodes[src].op.forward(ones)
                cnt = conv.forward(ones)[0] * float(np.prod(k))
            y = self.add(Affine(float(np.prod(k)) / cnt, None), [y], "_count")
        return [y]

    def maxpool(self, ins: list, at: dict, global_: bool = False) -> list:
        a = ins[0]
        nd = self._spatial(a, "MaxPool")
        k, st, dil = self._geom(at, nd, list(self.S(a)[1:]) if global_ else None)
        pads = [(0, 0)] * nd if global_ else self._pads(at, a, k, st, dil)
        if any(p0 or p1 for p0, p1 in pads):
            raise GraphError(f"{self.where}: MaxPool with padding is not supported")
        sizes = self.S(a)[1:]
        outs = [(n - d * (kk - 1) - 1) // s + 1 for n, kk, s, d in zip(sizes, k, st, dil, strict=True)]
        if min(outs) < 1:
            raise GraphError(f"{self.where}: kernel {k} does not fit the input {sizes}")
        offsets = np.stack(np.meshgrid(*[np.arange(kk) for kk in k], indexing="ij"), -1).reshape(-1, nd)
        parts = []
        for off in offsets:
            idx = [slice(None)] + [slice(int(o) * d, int(o) * d + s * (n_out - 1) + 1, s)
                                   for o, d, s, n_out in zip(off, dil, st, outs, strict=True)]
            parts.append(self.add(Slice(tuple(idx)), [a], f"_win{len(parts)}"))
        # max(p, q) = q + relu(p - q), reduced pairwise (a balanced tree: fewer ReLU layers)
        level = 0
        while len(parts) > 1:
            nxt = []
            for i in range(0, len(parts) - 1, 2):
                p, q = parts[i], parts[i + 1]
                d = self.add(Add2(-1.0), [p, q], f"_d{level}_{i}")
                r = self.add(Relu(), [d], f"_max{level}_{i}")
                nxt.append(self.add(Add2(1.0), [q, r], f"_m{level}_{i}"))
            if len(parts) % 2:
                nxt.append(parts[-1])
            parts, level = nxt, level + 1
        return [parts[0]]

    def pad(self, ins: list, at: dict) -> list:
        a = ins[0]
        mode = at.get("mode", b"constant")
        mode = mode.decode() if isinstance(mode, bytes) else mode
        p = at.get("pads")
        if p is None:
            p = self.const(ins[1], "pads").ravel().tolist()
        value = float(at.get("value", 0.0))
        if len(ins) > 2 and ins[2] is not None:
            value = float(np.asarray(self.const(ins[2], "the pad value")).ravel()[0])
        rank = len(self.S(a)) + 1
        if len(ins) > 3 and ins[3] is not None:
            # axes (opset 18): the pads name these axes, in this order
            axes = [int(x) + rank if int(x) < 0 else int(x)
                    for x in np.asarray(self.const(ins[3], "the pad axes")).ravel()]
            if len(set(axes)) != len(axes) or any(not 0 <= x < rank for x in axes):
                raise GraphError(f"{self.where}: pad axes {axes} are repeated or out of range for rank {rank}")
            if len(p) != 2 * len(axes):
                raise GraphError(f"{self.where}: pads {p} are not 2 x {len(axes)} numbers")
            full = [0] * (2 * rank)
            for j, x in enumerate(axes):
                full[x], full[rank + x] = p[j], p[len(axes) + j]
            p = full
        if mode != "constant" or value != 0.0 or len(p) != 2 * rank or p[0] or p[rank]:
            raise GraphError(f"{self.where}: only zero padding of the non-batch axes is supported")
        if any(int(x) < 0 for x in p):
            raise GraphError(f"{self.where}: negative pads are not supported")
        flat: list[int] = []
        for i in reversed(range(1, rank)):
            flat += [int(p[i]), int(p[rank + i])]
        # the padded tensor (and the bounds of it every method keeps) before it is made: a
        # 250-byte Pad of 1e7 built 2.6 GB past a 0.5 GB budget
        out = np.prod([s + int(p[i]) + int(p[rank + i]) for i, s in enumerate(self.S(a), start=1)],
                      dtype=float)
        check_bytes(8.0 * 8 * out, f"the padded tensor of {out:.3g} entries")
        return [self.add(Pad(tuple(flat)), [a])]


_HANDLERS = {
    "Relu": _Reader.relu,
    "LeakyRelu": _Reader.leaky,
    "PRelu": _Reader.prelu,
    "Clip": _Reader.clip,
    "Identity": _Reader.passthrough,
    "Dropout": _Reader.dropout,
    "Cast": _Reader.cast,
    "Add": lambda r, i, a: r.add_sub(i, a, 1.0),
    "Sub": lambda r, i, a: r.add_sub(i, a, -1.0),
    "Neg": _Reader.neg,
    "Mul": _Reader.mul,
    "Div": lambda r, i, a: r.mul(i, a, div=True),
    "MatMul": _Reader.matmul,
    "Gemm": _Reader.gemm,
    "Flatten": _Reader.flatten,
    "Reshape": _Reader.reshape,
    "Squeeze": _Reader.squeeze,
    "Unsqueeze": lambda r, i, a: r.squeeze(i, a, un=True),
    "Concat": _Reader.concat,
    "Transpose": _Reader.transpose,
    "Shape": _Reader.shape,
    "Conv": _Reader.conv,
    "BatchNormalization": _Reader.batchnorm,
    "AveragePool": _Reader.avgpool,
    "GlobalAveragePool": lambda r, i, a: r.avgpool(i, a, global_=True),
    "MaxPool": _Reader.maxpool,
    "GlobalMaxPool": lambda r, i, a: r.maxpool(i, a, global_=True),
    "Pad": _Reader.pad,
}
SUPPORTED = tuple(sorted(_HANDLERS))


def _load(model: Any) -> Any:
    require("onnx", "onnx")
    if isinstance(model, (str, os.PathLike)):
        from ..io.onnx import read_onnx_file

        try:
            return read_onnx_file(os.fspath(model))
        except FormatError as e:
            raise GraphError(str(e)) from None
    if not hasattr(model, "graph"):
        raise GraphError(f"from_onnx: expected a path or an onnx.ModelProto, got {type(model).__name__}")
    return model


def _eval_constant(node: Any, ins: list, opset: int, where: str) -> list:
    from ..errors import FormatError
    from ..io.onnx import eval_constant_node
    from ..limits import ResourceLimitError

    try:
        return eval_constant_node(node, ins, opset, where)
    except FormatError as e:
        raise GraphError(str(e)) from None
    except ResourceLimitError as e:
        raise ResourceLimitError(f"{where}: {e}") from None


def read_onnx(model: Any) -> tuple[GraphBuilder, str, Any]:
    """Read ``model`` (a path or ``onnx.ModelProto``): the builder holding its nodes, the
    output node's name and the ModelProto (``BoundGraph.from_onnx`` makes the graph).

    Example:
        >>> from relulab.io.onnx import network_to_onnx
        >>> from relulab.examples import tiny_2d
        >>> b, out, _ = read_onnx(network_to_onnx(tiny_2d()))
        >>> b.shape(b.input), b.shape(out)
        ((2,), (1,))
    """
    from onnx import numpy_helper

    model = _load(model)
    graph = model.graph
    opset = model_opset(model, GraphError)
    inits = {t.name: t for t in graph.initializer}
    inputs = [i for i in graph.input if i.name not in inits]
    if len(inputs) != 1 or len(graph.output) != 1:
        raise GraphError(f"from_onnx: the graph has {len(inputs)} inputs and {len(graph.output)} "
                         "outputs; one of each is supported")
    dims = inputs[0].type.tensor_type.shape.dim
    shape = [int(d.dim_value) if d.HasField("dim_value") and d.dim_value > 0 else None for d in dims]
    if len(shape) < 2 or any(s is None for s in shape[1:]) or shape[0] not in (None, 1):
        raise GraphError(f"from_onnx: input '{inputs[0].name}' must have shape (batch, ...) with known "
                         f"sizes, got {[s if s is not None else '?' for s in shape]}")
    b = GraphBuilder(tuple(shape[1:]), "input")
    r = _Reader(b, opset)
    env: dict[str, Any] = {inputs[0].name: b.input}
    for name, t in inits.items():
        a = numpy_helper.to_array(t)
        env[name] = a.astype(np.float64) if a.dtype.kind == "f" else np.asarray(a)
    n_relu = 0
    for i, node in enumerate(graph.node):
        label = node.name or (node.output[0] if node.output else f"#{i}")
        r.where = f"node '{label}' ({node.op_type})"
        for n in node.input:
            if n and n not in env:
                raise GraphError(f"{r.where}: input '{n}' is not defined")
        ins = [env[n] if n else None for n in node.input]
        if node.op_type == "Constant":
            at = _attrs(node)
            if "value" not in at:
                raise GraphError(f"{r.where}: only tensor constants are supported")
            env[node.output[0]] = np.asarray(numpy_helper.to_array(at["value"]), dtype=None)
            continue
        if not any(isinstance(v, str) for v in ins):
            outs = _eval_constant(node, ins, opset, r.where)
        else:
            h = _HANDLERS.get(node.op_type) if node.domain in ("", "ai.onnx") else None
            if h is None:
                dom = f"{node.domain}." if node.domain not in ("", "ai.onnx") else ""
                raise GraphError(f"{r.where}: unsupported operator {dom}{node.op_type}; "
                                 f"supported: {', '.join(SUPPORTED)}")
            if node.op_type in ("Relu", "LeakyRelu", "PRelu", "Clip"):
                r.label = f"relu{n_relu}"
                n_relu += 1
            else:
                r.label = f"{node.op_type.lower()}{i}"
            try:
                outs = h(r, ins, _attrs(node))
            except GraphError:
                raise
            except (ValueError, TypeError, IndexError) as e:  # malformed attributes or constants
                msg = (str(e).strip().splitlines() or [type(e).__name__])[0]
                raise GraphError(f"{r.where}: {msg}") from None
        for name, v in zip(node.output, outs, strict=False):
            if name:
                env[name] = v
    out = graph.output[0].name
    if out not in env or not isinstance(env[out], str):
        raise GraphError(f"from_onnx: the output '{out}' is not computed from the input")
    return b, env[out], model
