"""The typed operators of a :class:`~relulab.crown.graph.BoundGraph`.

Every operator works on batched torch tensors of shape ``(N, *shape)`` (``shape``: the
per-sample shape of its input or output) and knows three things:

* ``forward(*xs)``: its value;
* ``ibp(*intervals)``: interval bounds of its output from intervals of its inputs;
* ``backward(lam, in_shapes)``: for a linear operator, the coefficients on its inputs
  of ``lam . y`` (``lam`` of shape ``(N, R, *out_shape)``: ``R`` rows per sample), plus
  the constant it adds, of shape ``(N, R)`` or None.  Convolutions go back through
  ``conv_transpose``; nothing is ever materialised as a dense matrix.

The ReLU is not linear: its relaxation lives in :mod:`relulab.crown.propagate`.

Example:
    >>> import torch
    >>> op = Linear(torch.tensor([[1.0, -1.0]], dtype=torch.float64), None)
    >>> op.ibp((torch.zeros(1, 2, dtype=torch.float64), torch.ones(1, 2, dtype=torch.float64)))
    (tensor([[-1.]], dtype=torch.float64), tensor([[1.]], dtype=torch.float64))
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["Op", "Input", "Linear", "Conv", "Affine", "Pad", "Slice", "Add2", "Relu", "Reshape",
           "Concat", "Transpose", "LINEAR_OPS"]


def _F():
    import torch.nn.functional as F

    return F


def _conv(nd: int):
    F = _F()
    return F.conv1d if nd == 1 else F.conv2d


def _convT(nd: int):
    F = _F()
    return F.conv_transpose1d if nd == 1 else F.conv_transpose2d


class Op:
    """Base class: a typed operator (see the module docstring).

    Example:
        >>> Relu().kind
        'Relu'
    """

    kind = "Op"
    n_inputs = 1

    def params(self) -> dict[str, Any]:
        """The tensors of the operator by name (for conversion between dtypes/devices)."""
        return {}

    def converted(self, dtype: Any, device: Any) -> Op:
        """A copy whose tensors have the given dtype and device."""
        import copy

        out = copy.copy(self)
        for k, v in self.params().items():
            if v is not None:
                setattr(out, k, v.to(dtype=dtype, device=device))
        return out

    def forward(self, *xs: Any) -> Any:
        raise NotImplementedError

    def ibp(self, *ivs: Any) -> tuple[Any, Any]:
        raise NotImplementedError

    def backward(self, lam: Any, in_shapes: list[tuple[int, ...]]) -> tuple[list[Any], Any]:
        raise NotImplementedError

    def describe(self) -> str:
        return self.kind


class Input(Op):
    """The graph's input (no operands).

    Example:
        >>> Input().n_inputs
        0
    """

    kind = "Input"
    n_inputs = 0


class Linear(Op):
    """``y = x @ W.T + b`` on the last axis (``W`` of shape (out, in)).

    Example:
        >>> import torch
        >>> op = Linear(torch.eye(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64))
        >>> op.forward(torch.zeros(1, 2, dtype=torch.float64)).tolist()
        [[1.0, 1.0]]
    """

    kind = "Linear"

    def __init__(self, W: Any, b: Any | None) -> None:
        self.W, self.b = W, b

    def params(self) -> dict[str, Any]:
        return {"W": self.W, "b": self.b}

    def forward(self, x: Any) -> Any:
        y = x @ self.W.T
        return y if self.b is None else y + self.b

    def ibp(self, iv: tuple[Any, Any]) -> tuple[Any, Any]:
        lo, hi = iv
        Wp, Wn = self.W.clamp(min=0).T, self.W.clamp(max=0).T
        ylo, yhi = lo @ Wp + hi @ Wn, hi @ Wp + lo @ Wn
        if self.b is not None:
            ylo, yhi = ylo + self.b, yhi + self.b
        return ylo, yhi

    def backward(self, lam: Any, in_shapes: list[tuple[int, ...]]) -> tuple[list[Any], Any]:
        const = None
        if self.b is not None:
            const = lam @ self.b
            if const.dim() > 2:
                const = const.flatten(2).sum(-1)
        return [lam @ self.W], const

    def describe(self) -> str:
        return f"Linear {self.W.shape[1]}->{self.W.shape[0]}"


class Conv(Op):
    """An N-d convolution (N = 1 or 2; symmetric zero padding, stride, dilation, groups).

    Example:
        >>> import torch
        >>> op = Conv(torch.ones(1, 1, 2, 2, dtype=torch.float64), None, (1, 1), (0, 0), (1, 1), 1)
        >>> op.forward(torch.ones(1, 1, 3, 3, dtype=torch.float64)).shape
        torch.Size([1, 1, 2, 2])
    """

    kind = "Conv"

    def __init__(self, weight: Any, bias: Any | None, stride: tuple, padding: tuple,
                 dilation: tuple, groups: int) -> None:
        self.weight, self.bias = weight, bias
        self.nd = weight.dim() - 2
        self.stride, self.padding, self.dilation, self.groups = (
            tuple(stride), tuple(padding), tuple(dilation), int(groups))

    def params(self) -> dict[str, Any]:
        return {"weight": self.weight, "bias": self.bias}

    def _apply(self, x: Any, w: Any, b: Any | None) -> Any:
        return _conv(self.nd)(x, w, b, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, x: Any) -> Any:
        return self._apply(x, self.weight, self.bias)

    def ibp(self, iv: tuple[Any, Any]) -> tuple[Any, Any]:
        lo, hi = iv
        wp, wn = self.weight.clamp(min=0), self.weight.clamp(max=0)
        ylo = self._apply(lo, wp, self.bias) + self._apply(hi, wn, None)
        yhi = self._apply(hi, wp, self.bias) + self._apply(lo, wn, None)
        return ylo, yhi

    def backward(self, lam: Any, in_shapes: list[tuple[int, ...]]) -> tuple[list[Any], Any]:
        N, R = lam.shape[:2]
        out_sp = lam.shape[3:]
        in_shape = in_shapes[0]
        k = self.weight.shape[2:]
        # output_padding recovers the input size the strided convolution rounded away
        opad = tuple(
            in_shape[1 + i] - ((out_sp[i] - 1) * self.stride[i] - 2 * self.padding[i]
                               + self.dilation[i] * (k[i] - 1) + 1)
            for i in range(self.nd)
        )
        flat = lam.reshape(N * R, *lam.shape[2:])
        back = _convT(self.nd)(flat, self.weight, None, self.stride, self.padding, opad,
                               self.groups, self.dilation)
        const = None
        if self.bias is not None:
            const = lam.flatten(3).sum(-1) @ self.bias
        return [back.reshape(N, R, *in_shape)], const

    def describe(self) -> str:
        return f"Conv{self.nd}d {tuple(self.weight.shape)} stride {self.stride} pad {self.padding}"


class Affine(Op):
    """Elementwise ``y = x * scale + shift`` with constants broadcast to the per-sample
    shape (batch normalisation, input normalisation, Mul/Div/Add/Sub by constants).

    Example:
        >>> import torch
        >>> op = Affine(torch.tensor([-2.0], dtype=torch.float64), None)
        >>> op.ibp((torch.zeros(1, 1, dtype=torch.float64), torch.ones(1, 1, dtype=torch.float64)))
        (tensor([[-2.]], dtype=torch.float64), tensor([[-0.]], dtype=torch.float64))
    """

    kind = "Affine"

    def __init__(self, scale: Any | None, shift: Any | None) -> None:
        self.scale, self.shift = scale, shift

    def params(self) -> dict[str, Any]:
        return {"scale": self.scale, "shift": self.shift}

    def forward(self, x: Any) -> Any:
        y = x if self.scale is None else x * self.scale
        return y if self.shift is None else y + self.shift

    def ibp(self, iv: tuple[Any, Any]) -> tuple[Any, Any]:
        lo, hi = iv
        if self.scale is not None:
            a, b = lo * self.scale, hi * self.scale
            lo, hi = _minimum(a, b), _maximum(a, b)
        if self.shift is not None:
            lo, hi = lo + self.shift, hi + self.shift
        return lo, hi

    def backward(self, lam: Any, in_shapes: list[tuple[int, ...]]) -> tuple[list[Any], Any]:
        const = None
        if self.shift is not None:
            vec = self.shift.expand(*lam.shape[2:]).reshape(-1)
            const = lam.reshape(*lam.shape[:2], -1) @ vec
        back = lam if self.scale is None else lam * self.scale
        # a scale that broadcasts to a larger shape is not expected; keep shapes honest
        return [back.expand(*lam.shape[:2], *in_shapes[0])], const


def _minimum(a: Any, b: Any) -> Any:
    import torch

    return torch.minimum(a, b)


def _maximum(a: Any, b: Any) -> Any:
    import torch

    return torch.maximum(a, b)


class Pad(Op):
    """Zero padding of the trailing axes: ``pads`` = ((before, after) per padded axis,
    last axis first, as ``torch.nn.functional.pad`` takes them flattened).

    Example:
        >>> import torch
        >>> Pad((1, 0)).forward(torch.ones(1, 2, dtype=torch.float64)).tolist()
        [[0.0, 1.0, 1.0]]
    """

    kind = "Pad"

    def __init__(self, pads: tuple[int, ...]) -> None:
        self.pads = tuple(int(p) for p in pads)

    def forward(self, x: Any) -> Any:
        return _F().pad(x, self.pads)

    def ibp(self, iv: tuple[Any, Any]) -> tuple[Any, Any]:
        return self.forward(iv[0]), self.forward(iv[1])

    def backward(self, lam: Any, in_shapes: list[tuple[int, ...]]) -> tuple[list[Any], Any]:
        idx = [slice(None)] * lam.dim()
        for i in range(len(self.pads) // 2):
            b, a = self.pads[2 * i], self.pads[2 * i + 1]
            ax = lam.dim() - 1 - i
            idx[ax] = slice(b, lam.shape[ax] - a)
        return [lam[tuple(idx)]], None


class Slice(Op):
    """A strided window of the per-sample tensor: ``x[s0, s1, ...]`` with python slices
    (max pooling reads each window position through one of these).

    Example:
        >>> import torch
        >>> Slice((slice(0, None, 2),)).forward(torch.arange(4.0).reshape(1, 4)).tolist()
        [[0.0, 2.0]]
    """

    kind = "Slice"

    def __init__(self, index: tuple[slice, ...]) -> None:
        self.index = tuple(index)

    def forward(self, x: Any) -> Any:
        return x[(slice(None), *self.index)]

    def ibp(self, iv: tuple[Any, Any]) -> tuple[Any, Any]:
        return self.forward(iv[0]), self.forward(iv[1])

    def backward(self, lam: Any, in_shapes: list[tuple[int, ...]]) -> tuple[list[Any], Any]:
        out = lam.new_zeros(*lam.shape[:2], *in_shapes[0])
        out[(slice(None), slice(None), *self.index)] = lam
        return [out], None


class Add2(Op):
    """``y = a + sign * b`` of two tensors of one shape (residual Add; Sub with sign -1).

    Example:
        >>> import torch
        >>> one = torch.ones(1, 1, dtype=torch.float64)
        >>> Add2(-1.0).forward(one, one).tolist()
        [[0.0]]
    """

    kind = "Add"
    n_inputs = 2

    def __init__(self, sign: float = 1.0) -> None:
        self.sign = float(sign)

    def forward(self, a: Any, b: Any) -> Any:
        return a + b if self.sign > 0 else a - b

    def ibp(self, ia: tuple[Any, Any], ib: tuple[Any, Any]) -> tuple[Any, Any]:
        if self.sign > 0:
            return ia[0] + ib[0], ia[1] + ib[1]
        return ia[0] - ib[1], ia[1] - ib[0]

    def backward(self, lam: Any, in_shapes: list[tuple[int, ...]]) -> tuple[list[Any], Any]:
        return [lam, lam if self.sign > 0 else -lam], None

    def describe(self) -> str:
        return "Add" if self.sign > 0 else "Sub"


class Relu(Op):
    """The ReLU (relaxed by the bound propagation, not here).

    Example:
        >>> import torch
        >>> Relu().forward(torch.tensor([[-1.0, 2.0]])).tolist()
        [[0.0, 2.0]]
    """

    kind = "Relu"

    def forward(self, x: Any) -> Any:
        return x.clamp(min=0)

    def ibp(self, iv: tuple[Any, Any]) -> tuple[Any, Any]:
        return iv[0].clamp(min=0), iv[1].clamp(min=0)


class Reshape(Op):
    """Reshape the per-sample tensor (Flatten, Reshape).

    Example:
        >>> import torch
        >>> Reshape((4,)).forward(torch.zeros(3, 2, 2)).shape
        torch.Size([3, 4])
    """

    kind = "Reshape"

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = tuple(int(s) for s in shape)

    def forward(self, x: Any) -> Any:
        return x.reshape(x.shape[0], *self.shape)

    def ibp(self, iv: tuple[Any, Any]) -> tuple[Any, Any]:
        return self.forward(iv[0]), self.forward(iv[1])

    def backward(self, lam: Any, in_shapes: list[tuple[int, ...]]) -> tuple[list[Any], Any]:
        return [lam.reshape(*lam.shape[:2], *in_shapes[0])], None


class Concat(Op):
    """Concatenation of several tensors along a per-sample axis.

    Example:
        >>> import torch
        >>> Concat(0, 2).forward(torch.zeros(1, 2), torch.ones(1, 1)).tolist()
        [[0.0, 0.0, 1.0]]
    """

    kind = "Concat"

    def __init__(self, axis: int, n: int) -> None:
        self.axis, self.n_inputs = int(axis), int(n)

    def forward(self, *xs: Any) -> Any:
        import torch

        return torch.cat(xs, dim=self.axis + 1)

    def ibp(self, *ivs: tuple[Any, Any]) -> tuple[Any, Any]:
        return self.forward(*[i[0] for i in ivs]), self.forward(*[i[1] for i in ivs])

    def backward(self, lam: Any, in_shapes: list[tuple[int, ...]]) -> tuple[list[Any], Any]:
        sizes = [s[self.axis] for s in in_shapes]
        return list(lam.split(sizes, dim=self.axis + 2)), None


class Transpose(Op):
    """Permute the per-sample axes (``perm`` indexes them, without the batch axis).

    Example:
        >>> import torch
        >>> Transpose((1, 0)).forward(torch.zeros(4, 2, 3)).shape
        torch.Size([4, 3, 2])
    """

    kind = "Transpose"

    def __init__(self, perm: tuple[int, ...]) -> None:
        self.perm = tuple(int(p) for p in perm)
        self.inverse = tuple(self.perm.index(i) for i in range(len(self.perm)))

    def forward(self, x: Any) -> Any:
        return x.permute(0, *[p + 1 for p in self.perm])

    def ibp(self, iv: tuple[Any, Any]) -> tuple[Any, Any]:
        return self.forward(iv[0]), self.forward(iv[1])

    def backward(self, lam: Any, in_shapes: list[tuple[int, ...]]) -> tuple[list[Any], Any]:
        return [lam.permute(0, 1, *[p + 2 for p in self.inverse])], None


LINEAR_OPS = (Linear, Conv, Affine, Pad, Slice, Add2, Reshape, Concat, Transpose)


def numel(shape: tuple[int, ...]) -> int:
    """Number of entries of a per-sample shape.

    Example:
        >>> numel((3, 4))
        12
    """
    return int(math.prod(shape))
