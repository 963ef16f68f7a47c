"""Format-neutral lowering of tensor programs to affine layers and ReLUs: the index maps
of convolutions and pools, and the exact affine tracer (affine tensors ``A h + c`` over
the current hidden vector; a nonlinearity closes a layer; max-pooling becomes a tree of
pairwise maxima ``max(a, b) = b + relu(a - b)``).

Both model readers use it: :mod:`relulab.io.torch` walks ``nn.Module`` trees and
:mod:`relulab.io.onnx` walks ONNX graphs with the same :class:`AffineTracer`.

Example:
    >>> import numpy as np
    >>> M, shape = conv2d_sparse(np.ones((1, 1, 2, 2)), (1, 3, 3))
    >>> shape, M.shape, M.toarray()[0].tolist()
    ((1, 2, 2), (4, 9), [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import FormatError
from ..limits import check_bytes
from ..network import Network, NetworkError

__all__ = ["AffineTracer", "conv2d_sparse", "avgpool2d_sparse", "pool_windows", "NO_CLIP_BOUND",
           "COMPACT_CLIP_MAX", "batchnorm_scale", "clip_bounds"]

# a clip bound of float32's maximum or more (or an infinity) is no bound: ONNX's default
# and what the NNet converters write for "unbounded"
NO_CLIP_BOUND = 3.0e38
# up to this magnitude a clip is lo + relu(x - lo) - relu(x - hi) (two neurons, float
# error about an ulp of the bound: 1e-10 here); beyond, x + relu(lo - x) - relu(x - hi)
# with x = relu(x) - relu(-x) (four neurons), exact for x inside the bounds
COMPACT_CLIP_MAX = 1.0e6


def clip_bounds(lo: Any, hi: Any) -> tuple[float | None, float | None]:
    """A clip's bounds as floats, None where there is no bound (None, or beyond
    ``NO_CLIP_BOUND`` on its own side).

    Example:
        >>> clip_bounds(-3.4e38, 6)
        (None, 6.0)
    """
    return (None if lo is None or lo <= -NO_CLIP_BOUND else float(lo),
            None if hi is None or hi >= NO_CLIP_BOUND else float(hi))


def batchnorm_scale(scale: np.ndarray, var: np.ndarray, eps: float, where: str) -> np.ndarray:
    """``scale / sqrt(var + eps)`` per channel, refusing (naming ``where`` and the
    channel) a variance plus epsilon that is not positive or a scale that overflows.

    Example:
        >>> batchnorm_scale(np.array([2.0]), np.array([3.0]), 1.0, "bn").tolist()
        [1.0]
        >>> batchnorm_scale(np.array([1.0]), np.array([-1.0]), 1e-5, "bn")
        Traceback (most recent call last):
        relulab.errors.FormatError: bn: channel 0 has running variance -1.0 and epsilon 1e-05: their sum must be positive
    """
    den = np.asarray(var, dtype=np.float64) + eps
    bad = np.flatnonzero(~(den > 0))
    if bad.size:
        i = int(bad[0])
        raise FormatError(f"{where}: channel {i} has running variance {float(var[i])!r} and epsilon "
                          f"{eps!r}: their sum must be positive")
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        k = np.asarray(scale, dtype=np.float64) / np.sqrt(den)
    bad = np.flatnonzero(~np.isfinite(k))
    if bad.size:
        raise FormatError(f"{where}: channel {int(bad[0])}'s scale / sqrt(variance + epsilon) overflows float64")
    return k


# ===================================================================== index maps
def _pad_index_map(size: int, before: int, after: int, mode: str) -> np.ndarray:
    """For each coordinate of a padded axis, the source coordinate in the unpadded
    axis, or -1 where the padded value is a (zero) constant."""
    p = np.arange(-before, size + after)
    if mode in ("zeros", "constant"):
        return np.where((p >= 0) & (p < size), p, -1)
    if mode == "replicate":
        return np.clip(p, 0, size - 1)
    if mode == "circular":
        return np.mod(p, size)
    if mode == "reflect":
        if size == 1:
            return np.zeros_like(p)
        period = 2 * (size - 1)
        q = np.mod(np.abs(p), period)
        return np.where(q >= size, period - q, q)
    raise ValueError(f"padding mode '{mode}' is not supported")


def _conv_out(size: int, k: int, stride: int, before: int, after: int, dil: int) -> int:
    out = (size + before + after - dil * (k - 1) - 1) // stride + 1
    if out < 1:
        raise ValueError(
            f"kernel {k} (dilation {dil}) does not fit an axis of size {size} padded by "
            f"({before}, {after})"
        )
    return out


def conv2d_sparse(
    weight: np.ndarray,
    input_shape: Sequence[int],
    stride: Sequence[int] = (1, 1),
    pads: Sequence[int] = (0, 0, 0, 0),
    dilation: Sequence[int] = (1, 1),
    groups: int = 1,
    padding_mode: str = "zeros",
    dense_over: int | None = None,
) -> tuple[Any, tuple[int, int, int]]:
    """The linear part of a 2-D convolution as a sparse matrix (no bias).

    Args:
        weight: kernel of shape ``(O, C / groups, KH, KW)`` (torch and ONNX layout).
        input_shape: ``(C, H, W)``.
        pads: ``(top, left, bottom, right)``.
        dense_over: when the output will become a dense layer over this many variables
            (the tracer's hidden vector), refuse at once if that layer would not fit the
            memory budget, before building a matrix that could only be thrown away.

    Returns:
        ``(M, (O, OH, OW))`` with ``M`` a ``scipy.sparse`` CSR matrix of shape
        ``(O * OH * OW, C * H * W)`` acting on C-order flattened tensors.  Each entry is
        one kernel weight (a sum of several only with replicate/reflect/circular
        padding), so the matrix is exact.
    """
    import scipy.sparse as sp

    weight = np.asarray(weight, dtype=np.float64)
    if weight.ndim != 4:
        raise ValueError(f"kernel must have 4 axes (O, C/groups, KH, KW), got shape {weight.shape}")
    O, Cg, KH, KW = weight.shape
    C, H, W = (int(s) for s in input_shape)
    if groups < 1 or O % groups or C != Cg * groups:
        raise ValueError(
            f"kernel of shape {weight.shape} with groups={groups} does not fit {C} input channels"
        )
    sh, sw = (int(s) for s in stride)
    dh, dw = (int(s) for s in dilation)
    pt, pl, pb, pr = (int(p) for p in pads)
    OH = _conv_out(H, KH, sh, pt, pb, dh)
    OW = _conv_out(W, KW, sw, pl, pr, dw)
    if dense_over is not None:
        # relulab's Network stores every hidden layer densely: the ReLU that follows a
        # convolution turns its output into an (O*OH*OW) x dense_over matrix
        check_bytes(8.0 * O * OH * OW * dense_over,
                    f"the dense layer after a convolution to {O}x{OH}x{OW} over {dense_over} "
                    "variables")
    # rows, columns and values of every kernel tap, before the CSR copy
    check_bytes(40.0 * O * OH * OW * Cg * KH * KW,
                f"the sparse matrix of a convolution from {C}x{H}x{W} to {O}x{OH}x{OW}")
    mh = _pad_index_map(H, pt, pb, padding_mode)
    mw = _pad_index_map(W, pl, pr, padding_mode)
    o = np.arange(O)[:, None, None, None]
    ci = np.arange(Cg)[None, :, None, None]
    oh = np.arange(OH)[None, None, :, None]
    ow = np.arange(OW)[None, None, None, :]
    cin = (o // (O // groups)) * Cg + ci
    row = (o * OH + oh) * OW + ow
    rows, cols, vals = [], [], []
    for kh in range(KH):
        ih = mh[oh * sh + kh * dh]
        for kw in range(KW):
            iw = mw[ow * sw + kw * dw]
            val = weight[:, :, kh, kw][:, :, None, None]
            col = (cin * H + ih) * W + iw
            r, c, v, ok = np.broadcast_arrays(row, col, val, (ih >= 0) & (iw >= 0) & (val != 0))
            rows.append(r[ok])
            cols.append(c[ok])
            vals.append(v[ok])
    M = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(O * OH * OW, C * H * W),
    )
    return M, (O, OH, OW)


def _pool_axis(
    size: int, k: int, stride: int, before: int, after: int, dil: int, ceil_mode: bool
) -> tuple[list[np.ndarray], np.ndarray]:
    """Windows of a pooling along one axis: for each output index the valid input
    coordinates, and the "include padding" window length (torch's and onnxruntime's
    divisor: the window clipped to the padded axis)."""
    span = dil * (k - 1) + 1
    num = size + before + after - span
    # ceil mode admits a window longer than the padded axis (torch and ONNX agree)
    out = (-(-num // stride) if ceil_mode else num // stride) + 1
    if ceil_mode and out > 1 and (out - 1) * stride >= size + before:
        out -= 1  # the last window would start in the padding only (torch's rule)
    if out < 1:
        raise ValueError(f"pooling window {k} does not fit an axis of size {size}")
    wins, counts = [], np.empty(out, dtype=np.int64)
    for i in range(out):
        start = i * stride - before
        pos = start + dil * np.arange(k)
        inside = pos[(pos >= 0) & (pos < size)]
        if inside.size == 0:
            raise ValueError(f"pooling window {i} along an axis of size {size} covers only padding")
        wins.append(inside)
        counts[i] = int(np.sum(pos < size + after))  # taps inside the padded axis
    return wins, counts


def pool_windows(
    input_shape: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    pads: Sequence[int],
    dilation: Sequence[int] = (1, 1),
    ceil_mode: bool = False,
) -> tuple[list[np.ndarray], list[int], tuple[int, int, int]]:
    """Windows (flat C-order input indices) of a 2-D pooling, in output C-order, with the
    include-padding window sizes."""
    C, H, W = (int(s) for s in input_shape)
    pt, pl, pb, pr = (int(p) for p in pads)
    wh, ch = _pool_axis(H, int(kernel[0]), int(stride[0]), pt, pb, int(dilation[0]), ceil_mode)
    ww, cw = _pool_axis(W, int(kernel[1]), int(stride[1]), pl, pr, int(dilation[1]), ceil_mode)
    OH, OW = len(wh), len(ww)
    windows: list[np.ndarray] = []
    sizes: list[int] = []
    for c in range(C):
        for i in range(OH):
            for j in range(OW):
                windows.append((c * H + wh[i][:, None]) * W + ww[j][None, :])
                sizes.append(int(ch[i] * cw[j]))
    return [w.reshape(-1) for w in windows], sizes, (C, OH, OW)


def avgpool2d_sparse(
    input_shape: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    pads: Sequence[int] = (0, 0, 0, 0),
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
    dilation: Sequence[int] = (1, 1),
) -> tuple[Any, tuple[int, int, int]]:
    """Average pooling as a sparse matrix ``(M, (C, OH, OW))`` (see :func:`conv2d_sparse`)."""
    import scipy.sparse as sp

    windows, sizes, out_shape = pool_windows(input_shape, kernel, stride, pads, dilation, ceil_mode)
    rows, cols, vals = [], [], []
    for r, (w, s) in enumerate(zip(windows, sizes, strict=True)):
        if w.size == 0:
            continue
        div = divisor_override if divisor_override else (s if count_include_pad else w.size)
        rows.append(np.full(w.size, r))
        cols.append(w)
        vals.append(np.full(w.size, 1.0 / div))
    n_in = int(np.prod(input_shape))
    M = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(len(windows), n_in),
    )
    return M, out_shape


# ====================================================================== the tracer
class _Aff:
    """An affine tensor: entries ``A h + c`` (+ ``P x + p`` when it also depends on the
    network input ``x`` directly, which can only end in the output skip).

    ``A`` has shape ``(n, *S)`` (coefficients over the hidden vector of layer ``epoch``);
    right after the input or a nonlinearity it is an identity-like matrix, kept as the
    sparse ``(n, prod(S))`` matrix ``As`` until an operation needs it dense, so that
    convolutions and linear layers on wide hidden layers cost what their weights cost.
    """

    __slots__ = ("_A", "As", "c", "epoch", "P", "p")

    def __init__(
        self,
        A: np.ndarray | None,
        c: np.ndarray,
        epoch: int,
        P: np.ndarray | None = None,
        p: np.ndarray | None = None,
        As: Any = None,
    ) -> None:
        self._A, self.As, self.c, self.epoch, self.P, self.p = A, As, c, epoch, P, p

    @property
    def A(self) -> np.ndarray:
        if self._A is None:
            check_bytes(8.0 * self.As.shape[0] * self.As.shape[1],
                        f"the dense form of a {self.As.shape[0]} x {self.As.shape[1]} layer")
            self._A = self.As.toarray().reshape((self.As.shape[0], *self.c.shape))
        return self._A

    @property
    def n(self) -> int:
        return int(self.As.shape[0] if self._A is None else self._A.shape[0])

    @property
    def sparse(self) -> bool:
        return self._A is None

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.c.shape)


Value = Any  # an _Aff or a constant numpy array


def _sp() -> Any:
    import scipy.sparse as sp

    return sp


def _lead(a: np.ndarray | None, f: Callable[[np.ndarray, int], np.ndarray], lead: int):
    return None if a is None else f(a, lead)


def _addn(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


class AffineTracer:
    """Builds a :class:`Network` from a sequence of tensor operations on one input.

    Values are constants (numpy arrays) or affine tensors; linear operations compose
    into the current affine map, and :meth:`activation` closes a hidden layer.

    Example:
        >>> import numpy as np
        >>> tr = AffineTracer((2,))
        >>> v = tr.add_const(tr.matmul(tr.input(), np.array([[1.0, -1.0], [2.0, 0.0]])), 1.0)
        >>> net = tr.finish(tr.relu(v))
        >>> net(np.array([1.0, 2.0])).tolist()
        [6.0, 0.0]
    """

    def __init__(self, input_shape: Sequence[int]) -> None:
        self.input_shape = tuple(int(s) for s in input_shape)
        self.d = int(np.prod(self.input_shape))
        if self.d < 1:
            raise FormatError(f"input shape {self.input_shape} has no entries")
        # the input's zero offset and sparse identity: about 40 bytes per input entry
        check_bytes(40.0 * self.d, f"the input of shape {self.input_shape} ({self.d} entries)")
        self.weights: list[np.ndarray] = []
        self.biases: list[np.ndarray] = []
        # values that must survive the next hidden layer (skip connections): each layer
        # emitted carries them as relu(v) - relu(-v), or relu(v) where v >= 0 is known
        self.carry: list[_Aff] = []

    # ------------------------------------------------------------ basics
    @property
    def epoch(self) -> int:
        return len(self.weights)

    @property
    def width(self) -> int:
        """Size of the current hidden vector h."""
        return self.d if not self.weights else int(self.weights[-1].shape[0])

    def input(self) -> _Aff:
        S = self.input_shape
        return _Aff(None, np.zeros(S), 0, As=_sp().identity(self.d, format="csr"))

    def fresh(self, v: Value, where: str) -> Value:
        """``v`` expressed over the current hidden vector (constants pass)."""
        if not isinstance(v, _Aff) or v.epoch == self.epoch:
            return v
        if v.epoch == 0 and v.P is None:
            # a function of the network input used after a ReLU: it can only reach the
            # output, as the network's affine skip
            S = v.shape
            zero = _sp().csr_matrix((self.width, int(np.prod(S))))
            return _Aff(None, np.zeros(S), self.epoch, P=v.A, p=v.c, As=zero)
        raise FormatError(
            f"{where}: uses a value computed before hidden layer {self.epoch} "
            "(a skip connection between hidden layers; relulab networks only have an "
            "input-to-output skip)"
        )

    def const_as_aff(self, k: np.ndarray) -> _Aff:
        k = np.asarray(k, dtype=np.float64)
        return _Aff(None, k, self.epoch, As=_sp().csr_matrix((self.width, k.size)))

    @staticmethod
    def is_aff(v: Value) -> bool:
        return isinstance(v, _Aff)

    # ----------------------------------------------------- linear operations
    def lin(self, v: Value, f: Callable[[np.ndarray, int], np.ndarray], where: str = "") -> Value:
        """Apply a linear (no offset) tensor function ``f(array, lead)``, where ``lead`` is
        the number of leading axes (0 or 1) that ``f`` must leave alone."""
        if not isinstance(v, _Aff):
            return f(np.asarray(v), 0)
        v = self.fresh(v, where)
        c = f(v.c, 0)
        # the map's rows times the outputs, before they are made: a 150-byte Gather of 1e6
        # indices (or a Pad of 3e7) built them past the budget, or a raw MemoryError
        rows = v.A.shape[0] + (0 if v.P is None else v.P.shape[0])
        check_bytes(8.0 * 2 * rows * c.size, f"the affine map of its {c.size} outputs "
                    f"({rows} rows)")
        return _Aff(f(v.A, 1), c, v.epoch, _lead(v.P, f, 1), _lead(v.p, f, 0))

    def _align(self, v: _Aff, S: tuple[int, ...]) -> _Aff:
        k = len(S) - v.c.ndim

        def f(a: np.ndarray, lead: int) -> np.ndarray:
            a = a.reshape(a.shape[:lead] + (1,) * k + a.shape[lead:])
            return np.broadcast_to(a, a.shape[:lead] + S)

        return _Aff(f(v.A, 1), f(v.c, 0), v.epoch, _lead(v.P, f, 1), _lead(v.p, f, 0))

    def add(self, u: Value, v: Value, where: str = "") -> Value:
        """``u + v`` (numpy broadcasting)."""
        if not isinstance(u, _Aff) and not isinstance(v, _Aff):
            return np.asarray(u) + np.asarray(v)
        if not isinstance(u, _Aff):
            u, v = v, u
        u = self.fresh(u, where)
        if not isinstance(v, _Aff):
            k = np.asarray(v, dtype=np.float64)
            S = np.broadcast_shapes(u.shape, k.shape)
            if S == u.shape:
                return _Aff(u._A, u.c + k, u.epoch, u.P, u.p, As=u.As)
            u = self._align(u, S)
            return _Aff(u.A, u.c + k, u.epoch, u.P, u.p)
        v = self.fresh(v, where)
        S = np.broadcast_shapes(u.shape, v.shape)
        if u.shape == v.shape == S and u.sparse and v.sparse:
            return _Aff(None, u.c + v.c, u.epoch, _addn(u.P, v.P), _addn(u.p, v.p),
                        As=(u.As + v.As).tocsr())
        u, v = self._align(u, S), self._align(v, S)
        return _Aff(u.A + v.A, u.c + v.c, u.epoch, _addn(u.P, v.P), _addn(u.p, v.p))

    def add_const(self, v: Value, k: Any, where: str = "") -> Value:
        return self.add(v, np.asarray(k, dtype=np.float64), where)

    def neg(self, v: Value, where: str = "") -> Value:
        return self.lin(v, lambda a, lead: -a, where)

    def sub(self, u: Value, v: Value, where: str = "") -> Value:
        return self.add(u, self.neg(v, where), where)

    def mul(self, u: Value, v: Value, where: str = "", divide: bool = False) -> Value:
        """``u * v`` (or ``u / v``) where at most ``u`` is affine."""
        if isinstance(v, _Aff):
            if divide or isinstance(u, _Aff):
                raise FormatError(
                    f"{where}: {'divides by' if divide else 'multiplies two'} input-dependent "
                    "values; only products with constants are affine"
                )
            u, v = v, u
        k = np.asarray(v, dtype=np.float64) if isinstance(u, _Aff) else np.asarray(v)
        if not isinstance(u, _Aff):
            return np.asarray(u) / k if divide else np.asarray(u) * k
        if divide and np.any(k == 0):
            raise FormatError(f"{where}: divides an input-dependent value by a constant containing 0")
        u = self.fresh(u, where)
        S = np.broadcast_shapes(u.shape, k.shape)

        def f(a: np.ndarray, lead: int) -> np.ndarray:
            return a / k if divide else a * k

        if S == u.shape and u.sparse and not divide:
            As = u.As.multiply(np.broadcast_to(k, S).reshape(1, -1)).tocsr()
            return _Aff(None, f(u.c, 0), u.epoch, _lead(u.P, f, 1), _lead(u.p, f, 0), As=As)
        u = self._align(u, S)

        return _Aff(f(u.A, 1), f(u.c, 0), u.epoch, _lead(u.P, f, 1), _lead(u.p, f, 0))

    def matmul(self, u: Value, v: Value, where: str = "") -> Value:
        """``u @ v`` with numpy semantics, one side constant."""
        ua, va = isinstance(u, _Aff), isinstance(v, _Aff)
        if not ua and not va:
            return np.asarray(u) @ np.asarray(v)
        if ua and va:
            raise FormatError(f"{where}: multiplies two input-dependent matrices (not affine)")
        if ua:
            u = self.fresh(u, where)
            Wm = np.asarray(v, dtype=np.float64)
            if len(u.shape) == 0:
                raise ValueError("cannot multiply a scalar with @")
            if len(u.shape) == 1 and Wm.ndim > 2:
                raise ValueError(f"cannot multiply a vector with a {Wm.shape} array")
            if len(u.shape) >= 2 and Wm.ndim > len(u.shape):
                u = self._align(u, (1,) * (Wm.ndim - len(u.shape)) + u.shape)
            if u.sparse and len(u.shape) == 1 and Wm.ndim == 2:
                A = np.asarray(u.As @ Wm)
                return _Aff(A, u.c @ Wm, u.epoch, _lead(u.P, lambda a, lead: a @ Wm, 1),
                            _lead(u.p, lambda a, lead: a @ Wm, 0))
            if u.sparse and u.shape[:-1] == (1,) and Wm.ndim == 2:
                # a (1, n) row after a ReLU (Gemm's operand): the dense identity it stands for
                # cost n x n (2-15000-1 read in 52 s and 1.8 GB; 2-40000-1 not at all)
                A = np.asarray(u.As @ Wm).reshape(u.As.shape[0], 1, Wm.shape[1])
                return _Aff(A, u.c @ Wm, u.epoch, _lead(u.P, lambda a, lead: a @ Wm, 1),
                            _lead(u.p, lambda a, lead: a @ Wm, 0))
            return self.lin(u, lambda a, lead: a @ Wm, where)
        v = self.fresh(v, where)
        Wm = np.asarray(u, dtype=np.float64)
        if len(v.shape) == 1:
            if Wm.ndim != 2:
                raise ValueError(f"cannot multiply a {Wm.shape} array with a vector")
            return self.lin(v, lambda a, lead: a @ Wm.T if lead else Wm @ a, where)
        if Wm.ndim > len(v.shape):
            v = self._align(v, (1,) * (Wm.ndim - len(v.shape)) + v.shape)
        return self.lin(v, lambda a, lead: Wm @ a, where)

    def reshape(self, v: Value, shape: Sequence[int], where: str = "") -> Value:
        shape = tuple(int(s) for s in shape)

        def f(a: np.ndarray, lead: int) -> np.ndarray:
            return a.reshape(a.shape[:lead] + shape)

        if isinstance(v, _Aff) and v.sparse:
            v = self.fresh(v, where)
            if v.sparse:  # C-order reshapes keep the flattened order
                return _Aff(None, f(v.c, 0), v.epoch, _lead(v.P, f, 1), _lead(v.p, f, 0), As=v.As)
        return self.lin(v, f, where)

    def sparse(
        self,
        v: Value,
        M: Any,
        out_shape: Sequence[int],
        bias: np.ndarray | None = None,
        where: str = "",
    ) -> Value:
        """Apply a (sparse) matrix ``M`` to the C-order flattened tensor; reshape to
        ``out_shape``; add ``bias`` (flat, or None)."""
        out_shape = tuple(int(s) for s in out_shape)

        def f(a: np.ndarray, lead: int) -> np.ndarray:
            if lead:
                flat = a.reshape(a.shape[0], -1)
                return np.asarray((M @ flat.T).T).reshape((a.shape[0], *out_shape))
            return np.asarray(M @ a.reshape(-1)).reshape(out_shape)

        n_in = int(np.prod(v.shape if isinstance(v, _Aff) else np.shape(v)))
        if n_in != M.shape[1]:
            raise ValueError(f"the operation takes {M.shape[1]} values but gets {n_in}")
        if isinstance(v, _Aff):
            v = self.fresh(v, where)
        if isinstance(v, _Aff) and v.sparse:
            As = (v.As @ M.T).tocsr()
            out = _Aff(None, f(v.c, 0), v.epoch, _lead(v.P, f, 1), _lead(v.p, f, 0), As=As)
        else:
            out = self.lin(v, f, where)
        if bias is not None:
            out = self.add(out, np.asarray(bias, dtype=np.float64).reshape(out_shape), where)
        return out

    def concat(self, values: Sequence[Value], axis: int, where: str = "") -> Value:
        if not any(isinstance(v, _Aff) for v in values):
            return np.concatenate([np.asarray(v) for v in values], axis=axis)
        vals = [
            self.fresh(v, where) if isinstance(v, _Aff) else self.const_as_aff(v) for v in values
        ]
        nd = len(vals[0].shape)
        ax = axis + nd if axis < 0 else axis
        has_P = any(v.P is not None for v in vals)
        # (50,000 copies of the input built 1.4 GB past a 0.5 GB budget)
        total = sum(int(np.prod(v.shape)) for v in vals)
        check_bytes(8.0 * 2 * (max(v.n for v in vals) + (self.d if has_P else 0) + 1) * total,
                    f"the affine map of its {total} outputs")

        def cat(parts: list[np.ndarray], lead: int) -> np.ndarray:
            return np.concatenate(parts, axis=ax + lead)

        A = cat([v.A for v in vals], 1)
        c = cat([v.c for v in vals], 0)
        P = p = None
        if has_P:
            P = cat([v.P if v.P is not None else np.zeros((self.d, *v.shape)) for v in vals], 1)
            p = cat([v.p if v.p is not None else np.zeros(v.shape) for v in vals], 0)
        return _Aff(A, c, self.epoch, P, p)

    # --------------------------------------------------------- nonlinearities
    def _emit(self, W: np.ndarray, b: np.ndarray, where: str) -> int:
        """Append the hidden layer ``(W, b)`` plus the rows carrying ``self.carry``; the
        carried values are updated in place to read from the new hidden vector.  Returns
        the new width (``W``'s rows come first)."""
        sp = _sp()
        rows_W, rows_b, plans, still = [W], [b], [], []
        off = W.shape[0]
        for cv in self.carry:
            cvf = self.fresh(cv, where)
            # only the hidden part A h + c rides through the layer; a direct dependence on
            # the input (P x + p) stays beside it, bound for the output skip (a function of
            # the input computed between two ReLUs and used at the output was refused as
            # "a skip into a hidden layer")
            P, p = cvf.P, cvf.p
            hidden = _Aff(cvf._A, cvf.c, cvf.epoch, As=cvf.As)
            if self._hidden_is_zero(hidden):
                still.append((cv, P, p, cvf.c))   # a constant: nothing to carry
                continue
            cv2 = self._close(hidden, where)
            m = int(np.prod(cv2.shape))
            Wc = cv2.A.reshape(cv2.n, m).T
            bc = cv2.c.reshape(m)
            known = np.zeros(m, dtype=bool)
            if self.epoch > 0:
                known = np.all(Wc >= 0, axis=1) & (bc >= 0)
            neg = np.flatnonzero(~known)
            rows_W += [Wc, -Wc[neg]]
            rows_b += [bc, -bc[neg]]
            plans.append((cv, off, m, neg, P, p))
            off += m + neg.size
        # the new layer's dense copy beside its parts, and the layers already built: a dense
        # model lowered for the verifier reached 4.3 GB under a 0.5 GB budget
        new = sum(float(np.prod(r.shape)) for r in rows_W)
        check_bytes(8.0 * (2.0 * new + sum(float(w.size) for w in self.weights)),
                    f"the dense hidden layer of {off} neurons (with the layers before it)")
        self.weights.append(np.concatenate(rows_W, axis=0))
        self.biases.append(np.concatenate(rows_b))
        for cv, o, m, neg, P, p in plans:
            r = np.concatenate([o + np.arange(m), o + m + np.arange(neg.size)])
            col = np.concatenate([np.arange(m), neg])
            val = np.concatenate([np.ones(m), -np.ones(neg.size)])
            cv._A, cv.As = None, sp.csr_matrix((val, (r, col)), shape=(off, m))
            cv.c, cv.P, cv.p, cv.epoch = np.zeros(cv.shape), P, p, self.epoch
        for cv, P, p, c in still:
            m = int(np.prod(cv.shape))
            cv._A, cv.As = None, sp.csr_matrix((off, m))
            cv.c, cv.P, cv.p, cv.epoch = c, P, p, self.epoch
        return off

    @staticmethod
    def _hidden_is_zero(v: _Aff) -> bool:
        """Whether ``v``'s hidden part ``A h`` is identically zero (its offset aside)."""
        if v._A is None:
            return v.As.count_nonzero() == 0
        return not np.any(v._A)

    def _close(self, v: _Aff, where: str) -> _Aff:
        v = self.fresh(v, where)
        if v.P is not None:
            if np.any(v.P != 0):
                raise FormatError(
                    f"{where}: a value that depends directly on the network input enters a "
                    "hidden layer (a skip into a hidden layer is not supported)"
                )
            v = _Aff(v._A, v.c + v.p, v.epoch, As=v.As)
        if v.c.size == 0:
            raise FormatError(f"{where}: empty tensor")
        return v

    def activation(
        self,
        v: Value,
        terms: Sequence[tuple[Any, float, float]],
        const: Any = 0.0,
        where: str = "",
    ) -> Value:
        """Close a hidden layer: ``out = const + sum_k coef_k * relu(s_k * z + t_k)``
        elementwise, for terms ``(coef_k, s_k, t_k)`` (``coef_k`` and ``const`` a scalar or
        an array broadcastable to the tensor's shape; ``s_k`` and ``t_k`` scalars).

        ReLU is ``[(1, 1, 0)]``; LeakyReLU(a) ``[(1, 1, 0), (-a, -1, 0)]``."""
        if not isinstance(v, _Aff):
            z = np.asarray(v, dtype=np.float64)
            return const + sum(cf * np.maximum(s * z + t, 0.0) for cf, s, t in terms)
        v = self._close(v, where)
        S = v.shape
        m = int(np.prod(S))
        n = v.n
        W = v.A.reshape(n, m).T
        b = v.c.reshape(m)
        Ws, bs, blocks = [], [], []
        for cf, s, t in terms:
            Ws.append(W if s == 1 else s * W)
            bs.append(b if (s == 1 and t == 0) else s * b + t)
            cfv = np.broadcast_to(np.asarray(cf, dtype=np.float64), S).reshape(m)
            blocks.append(_sp().diags(cfv, format="csr"))
        width = self._emit(np.concatenate(Ws, axis=0), np.concatenate(bs), where)
        c = np.broadcast_to(np.asarray(const, dtype=np.float64), S).copy()
        blocks.append(_sp().csr_matrix((width - len(terms) * m, m)))  # carried units
        return _Aff(None, c, self.epoch, As=_sp().vstack(blocks, format="csr"))

    def relu(self, v: Value, where: str = "") -> Value:
        return self.activation(v, [(1.0, 1.0, 0.0)], 0.0, where)

    def leaky_relu(self, v: Value, slope: Any, where: str = "") -> Value:
        """``relu(z) - slope * relu(-z)`` (``slope`` a scalar or per-element array)."""
        if not np.all(np.isfinite(slope)):
            raise FormatError(f"{where}: the negative slope {slope!r} is not finite")
        return self.activation(v, [(1.0, 1.0, 0.0), (-np.asarray(slope, float), -1.0, 0.0)], 0.0, where)

    def clip(self, v: Value, lo: float | None, hi: float | None, where: str = "") -> Value:
        """``min(max(z, lo), hi)`` with ReLUs (either bound may be None)."""
        lo, hi = clip_bounds(lo, hi)
        if lo is None and hi is None:
            return v
        if lo is not None and hi is not None and hi < lo:
            raise FormatError(f"{where}: clip bounds lo={lo} > hi={hi}")
        if max(abs(lo) if lo is not None else 0.0, abs(hi) if hi is not None else 0.0) > COMPACT_CLIP_MAX:
            # z + relu(lo - z) - relu(z - hi), z carried as relu(z) - relu(-z): exact
            # inside the bounds, where lo + relu(z - lo) would lose z to rounding
            terms = [(1.0, 1.0, 0.0), (-1.0, -1.0, 0.0)]
            terms += [] if lo is None else [(1.0, -1.0, lo)]
            terms += [] if hi is None else [(-1.0, 1.0, -hi)]
            return self.activation(v, terms, 0.0, where)
        if lo is None:  # min(z, hi) = hi - relu(hi - z)
            return self.activation(v, [(-1.0, -1.0, hi)], hi, where)
        if hi is None:  # max(z, lo) = lo + relu(z - lo)
            return self.activation(v, [(1.0, 1.0, -lo)], lo, where)
        return self.activation(v, [(1.0, 1.0, -lo), (-1.0, 1.0, -hi)], lo, where)

    def maxpool(
        self, v: Value, windows: Sequence[np.ndarray], out_shape: Sequence[int], where: str = ""
    ) -> Value:
        """``out[o] = max(flat[w] for w in windows[o])`` exactly with ReLUs, via a tree of
        pairwise maxima ``max(a, b) = b + relu(a - b)`` (one hidden layer per level)."""
        out_shape = tuple(int(s) for s in out_shape)
        if not isinstance(v, _Aff):
            flat = np.asarray(v, dtype=np.float64).reshape(-1)
            return np.array([flat[w].max() for w in windows]).reshape(out_shape)
        if any(len(w) == 0 for w in windows):
            raise FormatError(f"{where}: a pooling window lies entirely in the padding")
        v = self._close(v, where)
        n = v.n
        Q = v.A.reshape(n, -1).T  # items: rows of Q (over h) + q
        q = v.c.reshape(-1)
        # h >= 0 after a ReLU layer; an item with nonnegative coefficients is then >= 0
        nonneg = (self.epoch > 0) & np.all(Q >= 0, axis=1) & (q >= 0)
        epoch0 = self.epoch
        wins = [list(map(int, w)) for w in windows]
        while any(len(w) > 1 for w in wins):
            Wn, bn, Q, wins = _maxpool_level(Q, q, nonneg, wins)
            width = self._emit(Wn, bn, where)
            Q = np.concatenate([Q, np.zeros((Q.shape[0], width - Q.shape[1]))], axis=1)
            q = np.zeros(Q.shape[0])
            nonneg = np.all(Q >= 0, axis=1)
        sel = [w[0] for w in wins]
        if self.epoch == epoch0:  # no layer added: a selection of the input's entries
            A = Q[sel].T.reshape((Q.shape[1], *out_shape))
            return _Aff(np.ascontiguousarray(A), q[sel].reshape(out_shape), self.epoch)
        return _Aff(None, q[sel].reshape(out_shape), self.epoch, As=_sp().csr_matrix(Q[sel].T))

    # ---------------------------------------------------------------- output
    def finish(self, v: Value, where: str = "output") -> Network:
        """The network computing ``v`` (flattened) from the flattened input."""
        if not isinstance(v, _Aff):
            raise FormatError(f"{where}: the output does not depend on the input")
        v = self.fresh(v, where)
        n = v.n
        m = int(np.prod(v.shape))
        W = v.A.reshape(n, m).T
        b = v.c.reshape(m)
        skip = None
        if v.P is not None:
            skip = (v.P.reshape(self.d, m).T, v.p.reshape(m) if v.p is not None else np.zeros(m))
        try:
            return Network([*self.weights, W], [*self.biases, b], skip)
        except NetworkError as e:
            raise FormatError(f"{where}: {e}") from None


def _maxpool_level(
    Q: np.ndarray, q: np.ndarray, nonneg: np.ndarray, wins: list[list[int]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[list[int]]]:
    """One level of the pairwise-max tree.  Items are the rows ``Q[i] h + q[i]``; each
    window (a list of item ids) pairs its items as ``max(a, b) = b + relu(a - b)``.
    Returns the hidden layer ``(W, b)``, the new items (over the new hidden units, no
    offset) and the new windows.  Equal neurons and equal items are shared."""
    keys: dict[tuple, int] = {}

    def neuron(key: tuple) -> int:
        if key not in keys:
            keys[key] = len(keys)
        return keys[key]

    def carry(b: int) -> dict[int, float]:
        if nonneg[b]:
            return {neuron(("pos", b)): 1.0}
        return {neuron(("pos", b)): 1.0, neuron(("neg", b)): -1.0}

    exprs: list[list[dict[int, float]]] = []
    for w in wins:
        new = []
        for t in range(0, len(w) - 1, 2):
            a, b = w[t], w[t + 1]
            if nonneg[a] and not nonneg[b]:
                a, b = b, a  # carry the nonnegative one: one neuron, not two
            e = carry(b)
            e[neuron(("diff", a, b))] = 1.0
            new.append(e)
        if len(w) % 2:
            new.append(carry(w[-1]))
        exprs.append(new)
    Wn = np.empty((len(keys), Q.shape[1]))
    bn = np.empty(len(keys))
    for key, i in keys.items():
        if key[0] == "pos":
            Wn[i], bn[i] = Q[key[1]], q[key[1]]
        elif key[0] == "neg":
            Wn[i], bn[i] = -Q[key[1]], -q[key[1]]
        else:
            Wn[i], bn[i] = Q[key[1]] - Q[key[2]], q[key[1]] - q[key[2]]
    item_ids: dict[tuple, int] = {}
    rows: list[dict[int, float]] = []
    new_wins = []
    for new in exprs:
        ids = []
        for e in new:
            key = tuple(sorted(e.items()))
            if key not in item_ids:
                item_ids[key] = len(rows)
                rows.append(e)
            ids.append(item_ids[key])
        new_wins.append(ids)
    Qn = np.zeros((len(rows), len(keys)))
    for r, e in enumerate(rows):
        for j, cf in e.items():
            Qn[r, j] = cf
    return Wn, bn, Qn, new_wins
