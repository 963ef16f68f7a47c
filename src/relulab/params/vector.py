"""The flat parameter vector of a network, in one fixed order used by all of ``relulab.params``.

The order is ``vec(W_1), b_1, vec(W_2), b_2, ..., vec(W_L), b_L`` and then, when the
network has an input-to-output skip ``(S, s)``, ``vec(S), s``; ``vec`` is row-major
(``W[j, i]`` sits at ``offset + j * in + i``), as ``W.reshape(-1)`` gives it.

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> from relulab.params import parameter_vector, parameter_names
    >>> net = Network([[[1.0, 2.0]], [[3.0]]], [[4.0], [5.0]])
    >>> parameter_vector(net).tolist()
    [1.0, 2.0, 4.0, 3.0, 5.0]
    >>> parameter_names(net)
    ['W1[0,0]', 'W1[0,1]', 'b1[0]', 'W2[0,0]', 'b2[0]']
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..network import Network, NetworkError
from ..results import Result

__all__ = [
    "ParameterLayout",
    "parameter_layout",
    "parameter_vector",
    "parameter_names",
    "network_from_parameters",
]


@dataclass(frozen=True)
class ParameterLayout(Result):
    """Where each weight matrix and bias vector sits in the flat parameter vector.

    ``w_offset[k]`` and ``b_offset[k]`` are the offsets of ``W_{k+1}`` and ``b_{k+1}``
    (0-based list over layers); ``skip_offset`` is that of ``vec(S)`` (``s`` follows it)
    or None.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0], [-2.0]], [[3.0, 4.0]]], [[0.5, 0.0], [1.0]])
        >>> lay = parameter_layout(net)
        >>> lay.dims, lay.w_offset, lay.b_offset, lay.size
        ((1, 2, 1), (0, 4), (2, 6), 7)
    """

    dims: tuple[int, ...]
    w_offset: tuple[int, ...]
    b_offset: tuple[int, ...]
    skip_offset: int | None
    size: int


def parameter_layout(net: Network) -> ParameterLayout:
    """The offsets of every block of :func:`parameter_vector` for ``net``.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0], [-2.0]], [[3.0, 4.0]]], [[0.5, 0.0], [1.0]])
        >>> lay = parameter_layout(net)
        >>> parameter_vector(net)[lay.w_offset[1]:lay.b_offset[1]].tolist()     # W2
        [3.0, 4.0]
    """
    dims = (net.input_dim, *net.widths, net.output_dim)
    off = 0
    wo, bo = [], []
    for k in range(net.depth):
        wo.append(off)
        off += dims[k + 1] * dims[k]
        bo.append(off)
        off += dims[k + 1]
    so = None
    if net.skip is not None:
        so = off
        off += dims[-1] * dims[0] + dims[-1]
    return ParameterLayout(tuple(dims), tuple(wo), tuple(bo), so, off)


def parameter_vector(net: Network) -> np.ndarray:
    """All weights and biases as one vector (object dtype for an exact network).

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0], [-2.0]], [[3.0, 4.0]]], [[0.5, 0.0], [1.0]])
        >>> parameter_vector(net).tolist()
        [1.0, -2.0, 0.5, 0.0, 3.0, 4.0, 1.0]
        >>> network_from_parameters(net, parameter_vector(net)) == net
        True
    """
    parts = []
    for W, b in net.layers:
        parts += [W.reshape(-1), b.reshape(-1)]
    if net.skip is not None:
        parts += [net.skip[0].reshape(-1), net.skip[1].reshape(-1)]
    return np.concatenate(parts)


def parameter_names(net: Network) -> list[str]:
    """Human-readable names of the entries of :func:`parameter_vector` (layers 1-based).

    Example:
        >>> from relulab import Network
        >>> parameter_names(Network([[[1.0], [-2.0]], [[3.0, 4.0]]], [[0.5, 0.0], [1.0]]))
        ['W1[0,0]', 'W1[1,0]', 'b1[0]', 'b1[1]', 'W2[0,0]', 'W2[0,1]', 'b2[0]']
    """
    names: list[str] = []
    for k, W in enumerate(net.weights, start=1):
        names += [f"W{k}[{j},{i}]" for j in range(W.shape[0]) for i in range(W.shape[1])]
        names += [f"b{k}[{j}]" for j in range(W.shape[0])]
    if net.skip is not None:
        S = net.skip[0]
        names += [f"S[{j},{i}]" for j in range(S.shape[0]) for i in range(S.shape[1])]
        names += [f"s[{j}]" for j in range(S.shape[0])]
    return names


def network_from_parameters(template: Network, theta: np.ndarray) -> Network:
    """The network with ``template``'s architecture and parameters ``theta``.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> net = Network([[[1.0, 2.0]], [[3.0]]], [[4.0], [5.0]])
        >>> network_from_parameters(net, parameter_vector(net) * 2).weights[1].tolist()
        [[6.0]]
    """
    lay = parameter_layout(template)
    theta = np.asarray(theta)
    if theta.shape != (lay.size,):
        raise NetworkError(
            f"parameter vector has shape {theta.shape}; the architecture needs ({lay.size},)"
        )
    d = lay.dims
    Ws, bs = [], []
    for k in range(template.depth):
        Ws.append(
            theta[lay.w_offset[k] : lay.w_offset[k] + d[k + 1] * d[k]].reshape(d[k + 1], d[k])
        )
        bs.append(theta[lay.b_offset[k] : lay.b_offset[k] + d[k + 1]])
    skip = None
    if lay.skip_offset is not None:
        o = lay.skip_offset
        skip = (
            theta[o : o + d[-1] * d[0]].reshape(d[-1], d[0]),
            theta[o + d[-1] * d[0] : lay.size],
        )
    return Network(Ws, bs, skip, exact=theta.dtype == object)
