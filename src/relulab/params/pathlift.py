"""The path-lifting of a ReLU network: one coordinate per input-output path.

Convention (for a :class:`~relulab.Network` with layers ``(W_1, b_1) .. (W_L, b_L)``,
layer sizes ``n_0 = d, n_1, .., n_{L-1}, n_L = m`` and optional skip ``(S, s)``):

* Read the network as a layered graph: input nodes ``x_i``, hidden neurons ``h_k[j]``
  (``k = 1 .. L-1``), outputs ``y_o``, plus one constant source ``1`` whose edge into a
  neuron (hidden or output) carries that neuron's bias.  Weight ``W_k[j, i]`` is the edge
  from node ``i`` of layer ``k-1`` to node ``j`` of layer ``k``.
* A *path* starts at an input ``x_i`` or at the constant source, runs through one neuron
  in every following layer, and ends at an output.  Its coordinate is the product of the
  weights along it.  So there are three kinds, stored in this order:

  1. input paths ``x_i > h_1[j_1] > .. > h_{L-1}[j_{L-1}] > y_o`` with value
     ``W_L[o, j_{L-1}] .. W_2[j_2, j_1] W_1[j_1, i]``, in row-major order of
     ``(i, j_1, .., j_{L-1}, o)``;
  2. bias paths, for ``k = 1 .. L``: ``1 > h_k[j_k] > .. > y_o`` with value
     ``W_L[o, .] .. W_{k+1}[j_{k+1}, j_k] b_k[j_k]``, row-major in ``(j_k, .., o)``;
     for ``k = L`` this is the single edge ``1 > y_o`` with value ``b_L[o]``;
  3. skip paths (only with a skip) ``x_i > y_o`` with value ``S[o, i]``, row-major in
     ``(i, o)``.

* The skip offset ``s`` is a second bias of the output neurons, so it joins the output
  bias: the path ``1 > y_o`` has value ``b_L[o] + s[o]`` (an output node has one bias
  edge, as in the DAG model of the path-norm literature).

Every coordinate is invariant under the rescaling symmetries (multiply the incoming
weights and bias of a hidden neuron by ``c > 0`` and its outgoing weights by ``1/c``),
and permuting hidden neurons permutes the coordinates.  The ``q``-norm of this vector
is the path-norm (:func:`relulab.params.path_norm` computes it without listing paths).

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> from relulab.params import path_lifting
    >>> net = Network([[[1.0], [-2.0]], [[3.0, 4.0]]], [[0.5, 0.0], [1.0]])
    >>> pl = path_lifting(net)
    >>> [(pl.name(p), float(v)) for p, v in enumerate(pl.values)]  # doctest: +NORMALIZE_WHITESPACE
    [('x0 > h1[0] > y0', 3.0), ('x0 > h1[1] > y0', -8.0),
     ('1 > h1[0] > y0', 1.5), ('1 > h1[1] > y0', 0.0), ('1 > y0', 1.0)]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..errors import RelulabError
from ..network import Network

__all__ = ["PathLifting", "path_lifting", "n_paths", "path_group_shapes"]

#: Refuse to list more paths than this unless asked (the vector and its index would not fit).
MAX_PATHS = 5_000_000


def path_group_shapes(net: Network) -> list[tuple[str, int, tuple[int, ...]]]:
    """The groups of the path-lifting in order: ``(kind, layer, shape)``.

    ``kind`` is ``"input"`` (layer 0), ``"bias"`` (layer ``k`` of the bias's neuron,
    1-based) or ``"skip"``; ``shape`` is the row-major shape of the group's block.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0], [-2.0]], [[3.0, 4.0]]], [[0.5, 0.0], [1.0]])
        >>> path_group_shapes(net)
        [('input', 0, (1, 2, 1)), ('bias', 1, (2, 1)), ('bias', 2, (1,))]
    """
    dims = (net.input_dim, *net.widths, net.output_dim)
    L = net.depth
    groups = [("input", 0, tuple(dims))]
    for k in range(1, L + 1):
        groups.append(("bias", k, tuple(dims[k:])))
    if net.skip is not None:
        groups.append(("skip", 0, (dims[0], dims[-1])))
    return groups


def n_paths(net: Network) -> int:
    """Number of coordinates of the path-lifting (without building it).

    Example:
        >>> from relulab import Network
        >>> n_paths(Network([[[1.0], [1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]]))
        5
    """
    return int(sum(math.prod(shape) for _, _, shape in path_group_shapes(net)))


@dataclass(frozen=True)
class PathLifting:
    """The path-lifting vector and its index (see the module docstring for the convention).

    Attributes:
        values: the path products, shape ``(n_paths,)`` (Fractions for an exact network).
        kind: per path, 0 = input path, 1 = bias path, 2 = skip path.
        source: the input index ``i`` of an input or skip path, -1 for a bias path.
        layer: the layer ``k`` (1-based) of the neuron whose bias starts a bias path,
            0 otherwise.
        neurons: shape ``(n_paths, L-1)``: the hidden neuron passed in each hidden layer,
            -1 where the path does not pass that layer.
        output: the output index ``o`` where the path ends.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0], [-2.0]], [[3.0, 4.0]]], [[0.5, 0.0], [1.0]])
        >>> pl = path_lifting(net)     # paths x->h0->y, x->h1->y, b0->y, b1->y, b_out
        >>> pl.values.tolist(), pl.kind.tolist(), pl.layer.tolist()
        ([3.0, -8.0, 1.5, 0.0, 1.0], [0, 0, 1, 1, 1], [0, 0, 1, 1, 2])
        >>> pl.norm(1)
        13.5
    """

    values: np.ndarray
    kind: np.ndarray
    source: np.ndarray
    layer: np.ndarray
    neurons: np.ndarray
    output: np.ndarray
    # per path, whether every weight on it is nonzero (a product of tiny weights can
    # underflow to 0.0 in float64 while the path is there: norm(0) counts these)
    nonzero: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def name(self, p: int) -> str:
        """A readable name of path ``p``, e.g. ``'x0 > h1[2] > h2[0] > y1'``."""
        kind = int(self.kind[p])
        parts = ["1"] if kind == 1 else [f"x{int(self.source[p])}"]
        for k, j in enumerate(self.neurons[p], start=1):
            if j >= 0:
                parts.append(f"h{k}[{int(j)}]")
        parts.append(f"y{int(self.output[p])}")
        name = " > ".join(parts)
        return name + " (skip)" if kind == 2 else name

    def names(self) -> list[str]:
        """Names of all paths, in order."""
        return [self.name(p) for p in range(len(self))]

    def norm(self, q: float | str = 1) -> float | Fraction | int:
        """The ``q``-norm of the vector (``q = 0``: number of nonzero coordinates), with
        the same conventions as :func:`relulab.params.path_norm`: an exact Fraction for
        exact (Fraction) values when ``q`` is 1 or inf, else a float that reads ``inf``
        only where the norm itself is beyond float64.

        Example:
            >>> from relulab import Network
            >>> pl = path_lifting(Network([[[1e100], [1.0]], [[1e100, 2.0]]], [[0.0, 0.0], [0.0]]))
            >>> pl.norm(4)      # the entries' 4th powers overflow; the norm does not
            1e+200
        """
        q = parse_q(q)
        if q == 0:
            return int(np.count_nonzero(self.values != 0 if self.nonzero is None else self.nonzero))
        exact = self.values.dtype == object
        v = np.abs(self.values) if exact else np.abs(np.asarray(self.values, dtype=float))
        if v.size == 0:
            return Fraction(0) if exact and (q == 1 or math.isinf(q)) else 0.0
        top = v.max()
        if exact and (q == 1 or math.isinf(q)):
            return Fraction(top if math.isinf(q) else sum(v, Fraction(0)))
        if top == 0 or top == math.inf:  # a float value that overflowed is the norm too
            return float(top)
        # |v|^q of entries far from 1 overflows (1e200^4) or underflows while the norm
        # does not: the sum is taken over v / max in [0, 1] and the max multiplied back
        ratios = np.asarray(v / top, dtype=float)
        with np.errstate(over="ignore", under="ignore"):
            root = float(np.sum(ratios**q) ** (1.0 / q))  # >= 1; overflows only for q < 1
            return _float_or_inf(top) * root

    def to_dict(self) -> dict:
        return {
            "n_paths": len(self),
            "paths": [{"name": self.name(p), "value": self.values[p]} for p in range(len(self))],
        }


def _float_or_inf(x: float | Fraction) -> float:
    """``float(x)`` for ``x >= 0``, ``inf`` where an exact value is beyond float64."""
    try:
        return float(x)
    except OverflowError:
        return math.inf


_LOG_FLOAT_MAX = math.log(np.finfo(np.float64).max)


def _exp_or_inf(v: float) -> float:
    """``exp(v)``, or ``inf`` where it exceeds float64 (no OverflowError, no warning): a
    path-norm beyond 1.8e308 reads as inf for every q and either kind of network."""
    return math.inf if v > _LOG_FLOAT_MAX else math.exp(v)


def parse_q(q: float | str) -> float:
    """Read an order ``q`` (a number >= 0, or ``'inf'``)."""
    try:
        qf = float(q)
    except (TypeError, ValueError):
        raise RelulabError(
            f"path-norm order q={q!r} is not a number (use e.g. 1, 2, inf)"
        ) from None
    if math.isnan(qf) or qf < 0:
        raise RelulabError(f"path-norm order q={q!r} must be >= 0 (0 counts nonzero paths)")
    return qf


def _chain(start: np.ndarray, Ws: list[np.ndarray]) -> np.ndarray:
    """Multiply a block of partial path products through the layers ``Ws``.

    ``start`` has shape ``(.., n_{k})``; the result ``(.., n_k, .., n_L)`` holds every
    extension of every partial path by one neuron per further layer."""
    A = start
    for W in Ws:
        A = A[..., None] * W.T
    return A


def path_lifting(net: Network, max_paths: int = MAX_PATHS) -> PathLifting:
    """The explicit path-lifting vector of ``net`` with an index naming every path.

    Raises :class:`~relulab.errors.RelulabError` when the network has more than
    ``max_paths`` paths (use :func:`relulab.params.path_norm` for norms of big networks).

    Example:
        >>> from relulab import Network
        >>> pl = path_lifting(Network([[[2.0]], [[3.0]]], [[1.0], [0.0]]))
        >>> pl.names(), pl.values.tolist()
        (['x0 > h1[0] > y0', '1 > h1[0] > y0', '1 > y0'], [6.0, 3.0, 0.0])
    """
    if not isinstance(net, Network):
        raise RelulabError(f"path_lifting: expected a relulab Network, got {type(net).__name__}")
    total = n_paths(net)
    if total > max_paths:
        raise RelulabError(
            f"{net!r} has {total} paths, more than max_paths={max_paths}; "
            "path_norm() computes its norms without listing paths"
        )
    Ws = list(net.weights)
    L = net.depth
    H = L - 1
    blocks, kinds, sources, layers, neurons, outputs, nonzero = [], [], [], [], [], [], []
    masks = [(np.asarray(W) != 0).astype(float) for W in Ws]  # products of 0/1: no underflow
    out_bias = net.biases[-1] if net.skip is None else net.biases[-1] + net.skip[1]
    for kind, k, shape in path_group_shapes(net):
        size = math.prod(shape)
        idx = np.indices(shape).reshape(len(shape), size)
        neu = np.full((size, H), -1, dtype=np.int64)
        if kind == "input":
            vals = _chain(Ws[0].T, Ws[1:])  # (d, n_1, .., m)
            nz = _chain(masks[0].T, masks[1:])
            src, lay = idx[0], np.zeros(size, dtype=np.int64)
            if H > 0:
                neu[:, :] = idx[1:-1].T
            kinds.append(np.zeros(size, dtype=np.int8))
        elif kind == "bias":
            b = out_bias if k == L else net.biases[k - 1]
            vals = _chain(b, Ws[k:])
            nz = _chain((np.asarray(b) != 0).astype(float), masks[k:])
            src, lay = np.full(size, -1, dtype=np.int64), np.full(size, k, dtype=np.int64)
            # axes 0.. of idx are layers k .. L; hidden layers k .. L-1 go to columns k-1 ..
            for a in range(len(shape) - 1):
                neu[:, k - 1 + a] = idx[a]
            kinds.append(np.ones(size, dtype=np.int8))
        else:
            vals = net.skip[0].T
            nz = (np.asarray(vals) != 0).astype(float)
            src, lay = idx[0], np.zeros(size, dtype=np.int64)
            kinds.append(np.full(size, 2, dtype=np.int8))
        blocks.append(np.asarray(vals).reshape(-1))
        nonzero.append(np.asarray(nz).reshape(-1) != 0)
        sources.append(src)
        layers.append(lay)
        neurons.append(neu)
        outputs.append(idx[-1])
    return PathLifting(
        values=np.concatenate(blocks),
        kind=np.concatenate(kinds),
        source=np.concatenate(sources),
        layer=np.concatenate(layers),
        neurons=np.concatenate(neurons, axis=0),
        output=np.concatenate(outputs),
        nonzero=np.concatenate(nonzero),
    )
