"""``BoundGraph``: a ReLU network kept as a DAG of typed, structured operators.

Convolutions stay convolutions, batch norms stay per-channel affine maps, residual
Adds stay Adds: the bound propagation of :mod:`relulab.crown.propagate` runs on this
graph with memory proportional to the activations.  The dense :class:`~relulab.Network`
stays the exact representation for the algorithms that need it (``to_network``).

Max pooling is rewritten exactly with ReLUs, keeping tensors structured: each window
position is a strided :class:`~relulab.crown.ops.Slice` of the input and
``max(a, b) = b + relu(a - b)`` reduces them pairwise.

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> bg = BoundGraph.from_network(Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]]))
    >>> bg.input_shape, bg.output_dim, bg.relus, bg.n_neurons
    ((1,), 1, [('relu0', (2,))], 2)
    >>> bg.forward(np.array([[-3.0], [2.0]])).ravel().tolist()
    [3.0, 2.0]
"""

from __future__ import annotations

import io as _io
import os
from typing import Any

import numpy as np

from ..errors import FormatError, require
from ..network import Network
from .builder import GraphBuilder, GraphError, Node
from .ops import Linear, Relu, numel

__all__ = ["BoundGraph", "Node", "GraphError", "GraphBuilder"]


class BoundGraph:
    """A DAG of typed operators in topological order (see the module docstring).

    Build one with :meth:`from_network`, :meth:`from_onnx` or :meth:`from_torch`.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> bg = BoundGraph.from_network(Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), [0.0]]))
        >>> [n.op.kind for n in bg.nodes]
        ['Input', 'Linear', 'Relu', 'Linear']
    """

    def __init__(self, nodes: list[Node], input_name: str, output_name: str, source: Any = None) -> None:
        self.nodes = list(nodes)
        self.by_name = {n.name: n for n in self.nodes}
        self.input_name, self.output_name = input_name, output_name
        self._source = source
        self._converted: dict[tuple[str, str], BoundGraph] = {}
        self._ancestors: dict[str, list[str]] = {}
        self.dtype, self.device = "float64", "cpu"

    # ------------------------------------------------------------------ shape
    @property
    def input_shape(self) -> tuple[int, ...]:
        """Per-sample input shape (no batch axis)."""
        return self.by_name[self.input_name].shape

    @property
    def input_dim(self) -> int:
        """Number of input entries."""
        return numel(self.input_shape)

    @property
    def output_dim(self) -> int:
        """Number of outputs (the output tensor flattened)."""
        return numel(self.by_name[self.output_name].shape)

    @property
    def relus(self) -> list[tuple[str, tuple[int, ...]]]:
        """(name, per-sample shape) of every ReLU node, in topological order."""
        return [(n.name, n.shape) for n in self.nodes if isinstance(n.op, Relu)]

    @property
    def n_neurons(self) -> int:
        """Total number of ReLU neurons."""
        return sum(numel(s) for _, s in self.relus)

    def __repr__(self) -> str:
        return (f"BoundGraph({len(self.nodes)} nodes, input {self.input_shape}, "
                f"{self.output_dim} outputs, {self.n_neurons} ReLUs)")

    def summary(self) -> list[str]:
        """One line per node: name, operator, inputs, shape."""
        return [f"{n.name}: {n.op.describe()} {list(n.inputs)} -> {n.shape}" for n in self.nodes]

    def ancestors(self, name: str) -> list[str]:
        """Names of ``name`` and the nodes it depends on, in topological order."""
        if name not in self._ancestors:
            keep = {name}
            for n in reversed(self.nodes):
                if n.name in keep:
                    keep.update(n.inputs)
            self._ancestors[name] = [n.name for n in self.nodes if n.name in keep]
        return self._ancestors[name]

    # ------------------------------------------------------------------ numerics
    def converted(self, dtype: str = "float64", device: str = "cpu") -> BoundGraph:
        """The same graph with its tensors in ``dtype`` on ``device`` (cached).

        Example:
            >>> from relulab import Network
            >>> bg = BoundGraph.from_network(Network([[[2.0]]], [[0.0]]))
            >>> bg.converted("float32").by_name["output"].op.W.dtype
            torch.float32
        """
        torch = require("torch", "torch")
        if dtype not in ("float64", "float32"):
            raise GraphError(f"dtype must be 'float64' or 'float32', got {dtype!r}")
        key = (str(dtype), str(device))
        if key == (self.dtype, self.device):
            return self
        if key not in self._converted:
            dt = {"float64": torch.float64, "float32": torch.float32}[dtype]
            nodes = [Node(n.name, n.op.converted(dt, device), n.inputs, n.shape) for n in self.nodes]
            g = BoundGraph(nodes, self.input_name, self.output_name, self._source)
            g.dtype, g.device = key
            self._converted[key] = g
        return self._converted[key]

    def torch_dtype(self) -> Any:
        torch = require("torch", "torch")
        return torch.float64 if self.dtype == "float64" else torch.float32

    def run(self, x: Any, keep: bool = False) -> Any:
        """Forward pass of a batched torch tensor (N, *input_shape) -> output tensor,
        or the dict of every node's value when ``keep``."""
        vals = {self.input_name: x}
        for n in self.nodes[1:]:
            vals[n.name] = n.op.forward(*[vals[i] for i in n.inputs])
        return vals if keep else vals[self.output_name]

    def largest_value(self, x: Any) -> float:
        """The largest absolute value of any node at inputs ``x`` (B, *input_shape).

        Example:
            >>> from relulab import Network
            >>> BoundGraph.from_network(Network([[[2.0]]], [[-5.0]])).largest_value([[1.0]])
            3.0
        """
        torch = require("torch", "torch")
        g = self.converted("float64")
        X = self._inputs(x, "largest_value")
        with torch.no_grad():
            vals = g.run(torch.as_tensor(X, dtype=g.torch_dtype()), keep=True)
        return max(float(v.abs().max()) for v in vals.values() if hasattr(v, "abs") and v.numel())

    def forward_error(self, x: Any) -> np.ndarray:
        """A bound on the rounding error of each output of the float64 forward pass at one
        input ``x``: node by node, ``|A| e + gamma_n T`` with ``T`` the sizes of the terms
        the node adds up (its op applied to its inputs' values made symmetric, ``|A| |h| +
        |b|``), ``n`` its number of input entries plus one (at least the terms of any of
        its sums), ``gamma_n = n u / (1 - n u)``; a ReLU passes ``e`` on.  Every op of a
        graph is affine or a ReLU, so ``|A| e`` is the radius of the op's image of
        ``[-e, e]``.

        Example:
            >>> from relulab import Network
            >>> g = BoundGraph.from_network(Network([[[1e8], [1.0]], [[1.0, -1e8]]], [[0.0, 0.0], [0.0]]))
            >>> float(g.forward_error([[1.0]])[0]) > 1e-8
            True
        """
        torch = require("torch", "torch")
        g = self.converted("float64")
        X = self._inputs(x, "forward_error")[:1]
        u = 2.0 ** -53
        with torch.no_grad():
            vals = g.run(torch.as_tensor(X, dtype=torch.float64), keep=True)
            err = {g.input_name: torch.zeros_like(vals[g.input_name])}
            for n in g.nodes[1:]:
                if isinstance(n.op, Relu):
                    err[n.name] = err[n.inputs[0]]
                    continue
                lo_e, hi_e = n.op.ibp(*[(-err[i], err[i]) for i in n.inputs])
                sym = [(-vals[i].abs(), vals[i].abs()) for i in n.inputs]
                lo_t, hi_t = n.op.ibp(*sym)
                k = sum(numel(g.by_name[i].shape) for i in n.inputs) + 1
                gamma = k * u / (1.0 - k * u)
                err[n.name] = (hi_e - lo_e) / 2 + gamma * torch.maximum(lo_t.abs(), hi_t.abs())
            out = err[g.output_name].reshape(-1).numpy()
        n_nodes = len(g.nodes)
        return out * (1.0 + 8.0 * n_nodes * u) + np.finfo(np.float64).tiny

    def _inputs(self, x: Any, where: str) -> np.ndarray:
        """Finite inputs ``(B, *input_shape)`` from ``x`` (or one clear error naming ``where``)."""
        X = np.asarray(x, dtype=np.float64)
        shape = tuple(self.input_shape)
        # (B, *input_shape), (B, input_dim), or one input of either shape; a channels-last
        # image or rows of half the length were reshaped into other inputs
        fits = (X.shape[1:] == shape or X.shape[1:] == (self.input_dim,) or X.shape == shape
                or X.shape == (self.input_dim,))
        if X.size == 0 or not fits:
            raise GraphError(f"{where}: inputs of shape {X.shape} do not fit input shape {self.input_shape}; "
                             f"give (B, *input_shape) or (B, input_dim)")
        if not np.all(np.isfinite(X)):
            raise GraphError(f"{where}: inputs contain NaN or infinite values")
        return X.reshape(-1, *self.input_shape)

    def forward(self, x: Any, dtype: str = "float64") -> np.ndarray:
        """Outputs (B, output_dim) of inputs (B, *input_shape) or (B, input_dim).

        Example:
            >>> from relulab import Network
            >>> BoundGraph.from_network(Network([[[2.0]]], [[1.0]])).forward([[1.0]]).tolist()
            [[3.0]]
        """
        torch = require("torch", "torch")
        g = self.converted(dtype)
        X = self._inputs(x, "forward")
        with torch.no_grad():
            y = g.run(torch.as_tensor(X, dtype=g.torch_dtype()))
        return y.reshape(y.shape[0], -1).double().cpu().numpy()

    # ------------------------------------------------------------------ lowering
    def to_network(self) -> Network:
        """The dense :class:`~relulab.Network` of the same function (small graphs only: it
        materialises every structured layer).  Graphs read from ONNX or torch are lowered by
        :func:`relulab.io.onnx.onnx_to_network`.

        Example:
            >>> from relulab import Network
            >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
            >>> BoundGraph.from_network(net).to_network() == net
            True
        """
        if isinstance(self._source, Network):
            return self._source
        if self._source is not None:
            from ..io.onnx import onnx_to_network
            from ..limits import check_bytes

            # dense layers between consecutive ReLU layers (a lower estimate: skip
            # connections add carried neurons)
            sizes = [self.input_dim] + [numel(s) for _, s in self.relus] + [self.output_dim]
            check_bytes(8.0 * sum(a * b for a, b in zip(sizes[:-1], sizes[1:], strict=True)), "the dense form of this graph")

            return onnx_to_network(self._source)
        raise GraphError("to_network: this graph was built by hand; build it with from_network, "
                         "from_onnx or from_torch")

    def densified(self) -> BoundGraph:
        """The same graph with every structured linear operator (Conv, Slice, Pad, Affine)
        replaced by its dense matrix (flatten -> Linear -> reshape): the reference the
        structured back-substitution is tested against.  Small graphs only.

        Example:
            >>> from relulab import Network
            >>> bg = BoundGraph.from_network(Network([[[2.0]]], [[1.0]]))
            >>> [n.op.kind for n in bg.densified().nodes]
            ['Input', 'Linear']
        """
        torch = require("torch", "torch")
        from .ops import Reshape

        g = self.converted("float64")
        b = GraphBuilder(self.input_shape, self.input_name)
        for n in g.nodes[1:]:
            if n.op.kind in ("Conv", "Slice", "Pad", "Affine", "Transpose") and len(n.inputs) == 1:
                S = g.by_name[n.inputs[0]].shape
                k = numel(S)
                with torch.no_grad():
                    zero = n.op.forward(torch.zeros(1, *S, dtype=torch.float64)).reshape(-1)
                    cols = n.op.forward(torch.eye(k, dtype=torch.float64).reshape(k, *S)).reshape(k, -1)
                W = (cols - zero).T.contiguous()
                f = b.add(n.name + "_flat", Reshape((k,)), list(n.inputs))
                d = b.add(n.name + "_dense", Linear(W, zero.clone()), [f])
                b.nodes[n.name] = Node(n.name, Reshape(n.shape), (d,), n.shape)
            else:
                b.nodes[n.name] = n
        return BoundGraph(b.finish(self.output_name), b.input, self.output_name)

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_network(cls, net: Network) -> BoundGraph:
        """The graph of a dense :class:`~relulab.Network`: ``linear{k}`` and ``relu{k}``
        (hidden layer k, 0-based), the output layer, and the skip as a second Linear plus
        an Add.

        Example:
            >>> from relulab import Network
            >>> BoundGraph.from_network(Network([[[1.0]], [[1.0]]], [[0.0], [0.0]])).relus
            [('relu0', (1,))]
        """
        torch = require("torch", "torch")
        from .ops import Add2

        if not isinstance(net, Network):
            raise GraphError(f"from_network: expected a relulab Network, got {type(net).__name__}")
        f = net.float() if net.is_exact else net
        if net.is_exact:
            _refuse_subnormal_roundings(net, f)
        b = GraphBuilder((net.input_dim,))
        cur = b.input
        L = len(f.weights)
        for k, (W, bias) in enumerate(f.layers):
            op = Linear(torch.as_tensor(np.array(W), dtype=torch.float64),
                        torch.as_tensor(np.array(bias), dtype=torch.float64))
            cur = b.add(f"linear{k}" if k < L - 1 else "output", op, [cur])
            if k < L - 1:
                cur = b.add(f"relu{k}", Relu(), [cur])
        if f.skip is not None:
            S, s = f.skip
            sk = b.add("skip", Linear(torch.as_tensor(np.array(S), dtype=torch.float64),
                                      torch.as_tensor(np.array(s), dtype=torch.float64)), [b.input])
            cur = b.add("output_plus_skip", Add2(1.0), [cur, sk])
        return BoundGraph(b.finish(cur), b.input, cur, net)

    @classmethod
    def from_onnx(cls, model: str | os.PathLike | Any) -> BoundGraph:
        """Read an ONNX model (a path or an ``onnx.ModelProto``), keeping its structure.

        Unsupported operators raise a :class:`GraphError` naming the node.

        Example:
            >>> import tempfile, os
            >>> from relulab import Network
            >>> from relulab.io.onnx import save_onnx
            >>> p = os.path.join(tempfile.mkdtemp(), "n.onnx")
            >>> save_onnx(Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]]), p)
            >>> BoundGraph.from_onnx(p).forward([[-2.0]]).tolist()
            [[2.0]]
        """
        from ..io.onnx import crosscheck_onnxruntime
        from .onnx_import import read_onnx

        b, out, proto = read_onnx(model)
        graph = BoundGraph(b.finish(out), b.input, out, proto)
        where = os.fspath(model) if isinstance(model, (str, os.PathLike)) else "from_onnx"
        try:
            crosscheck_onnxruntime(proto, graph.forward, where, graph.largest_value)
        except FormatError as e:   # as the reader's own errors: a GraphError
            raise GraphError(str(e)) from None
        return graph

    @classmethod
    def from_torch(cls, module: Any, input_shape: tuple[int, ...]) -> BoundGraph:
        """Export a torch module (eval mode, per-sample ``input_shape``) to ONNX and read it.

        Example:
            >>> import torch
            >>> m = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
            >>> BoundGraph.from_torch(m, (2,)).relus
            [('relu0', (3,))]
        """
        torch = require("torch", "torch")
        onnx = require("onnx", "onnx")
        if not isinstance(module, torch.nn.Module):
            raise GraphError(f"from_torch: expected a torch.nn.Module, got {type(module).__name__}")
        try:
            if isinstance(input_shape, (str, bytes)):
                raise TypeError
            shape = tuple(int(s) for s in input_shape)
        except (TypeError, ValueError):
            raise GraphError(f"from_torch: input_shape must be a tuple of sizes, e.g. (3, 32, 32), "
                             f"got {input_shape!r}") from None
        if not shape or any(s <= 0 for s in shape):
            raise GraphError(f"from_torch: bad input_shape {input_shape}")
        was_training = module.training
        module.eval()
        buf = _io.BytesIO()
        try:
            p0 = next(module.parameters(), None)
            dt = p0.dtype if p0 is not None else torch.float32
            x = torch.zeros(1, *shape, dtype=dt)
            torch.onnx.export(module, (x,), buf, dynamo=False, opset_version=13,
                              input_names=["input"], output_names=["output"])
        except Exception as e:  # the exporter raises many kinds of errors
            msg = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise GraphError(f"from_torch: the ONNX export failed ({msg})") from None
        finally:
            module.train(was_training)
        return cls.from_onnx(onnx.load_from_string(buf.getvalue()))


def _refuse_subnormal_roundings(net: Network, f: Network) -> None:
    """Refuse (GraphError naming the entry) an exact network whose weight or bias is not
    zero and rounds below float64's normal range: the graph bounds the float copy, whose
    rounding analysis covers a weight's relative rounding, but a subnormal has lost its
    relative precision (``2^-1072 / 3`` became ``2^-1074``, and behind two layers of
    ``2^1000`` and ``2^74`` the bound 1.0 excluded ``f(1) = 4/3``)."""
    tiny = float(np.finfo(np.float64).tiny)
    pairs = [(f"weight of layer {k + 1}", W, Wf) for k, (W, Wf) in enumerate(zip(net.weights, f.weights, strict=True))]
    pairs += [(f"bias of layer {k + 1}", b, bf) for k, (b, bf) in enumerate(zip(net.biases, f.biases, strict=True))]
    if net.skip is not None:
        pairs += [("skip weight", net.skip[0], f.skip[0]), ("skip bias", net.skip[1], f.skip[1])]
    for what, exact, rounded in pairs:
        r = np.asarray(rounded, dtype=np.float64)
        ex = np.asarray(exact, dtype=object)
        bad = np.abs(r) < tiny
        for at in np.argwhere(bad):
            # a subnormal that is the exact number (2^-1073) lost nothing: only a changed one counts
            bad[tuple(at)] = ex[tuple(at)] != r[tuple(at)]
        if bad.any():
            at = tuple(int(i) + 1 for i in np.argwhere(bad)[0])
            raise GraphError(
                f"from_network: the {what} at {at} rounds to "
                f"{float(np.asarray(rounded, dtype=np.float64)[tuple(i - 1 for i in at)]):.3g}, "
                "below float64's normal range: its float copy lost its relative precision and the "
                "graph's bounds would not cover the exact network (rescale the layers)")
