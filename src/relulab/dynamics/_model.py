"""The trainable model: a torch ReLU MLP (optionally with an affine skip and an output
scale), its conversion to and from :class:`~relulab.Network`, and the ReLU check.

torch is imported lazily; only :func:`mlp` and the helpers below touch it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import RelulabError, is_int_at_least, require
from ..network import Network


class DynamicsError(RelulabError):
    """Bad input to the training laboratory (shapes, NaN data, names, modules)."""


def _relu_mlp_class():
    torch = require("torch", "torch")
    nn = torch.nn

    class ReluMLP(nn.Module):
        """``f(x) = out_scale * body(x) (+ skip(x))``: ``body`` an ``nn.Sequential`` of
        ``Linear`` and ``ReLU``, ``skip`` an optional ``Linear`` from input to output.

        ``out_scale`` gives mean-field (``1/m``) or NTK (``1/sqrt m``) parametrisations
        without changing what the parameters are.
        """

        def __init__(self, body: Any, skip: Any = None, out_scale: float = 1.0) -> None:
            super().__init__()
            self.body = body
            self.skip = skip
            self.out_scale = float(out_scale)

        def forward(self, x: Any) -> Any:
            out = self.body(x)
            if self.out_scale != 1.0:
                out = out * self.out_scale
            if self.skip is not None:
                out = out + self.skip(x)
            return out

    return ReluMLP


_CLASS: list[Any] = []


def relu_mlp_class():
    """The ``ReluMLP`` torch module class (built once, on first use, so torch stays lazy)."""
    if not _CLASS:
        _CLASS.append(_relu_mlp_class())
    return _CLASS[0]


def mlp(widths: Sequence[int], *, init_scale: float = 1.0, bias: bool = True,
        out_bias: bool = True, skip: bool = False, out_scale: float = 1.0,
        init: str = "gaussian", seed: int = 0, dtype: str = "float64") -> Any:
    """A torch ReLU network ``widths[0] -> widths[1] -> ... -> widths[-1]``.

    Weights are Gaussian with standard deviation ``init_scale / sqrt(fan_in)``
    (``init="gaussian"``) or ``init_scale`` (``init="plain"``: the small-initialisation
    scale of gradient-flow papers); biases start at zero; the skip (if any) at zero.

    Example:
        >>> m = mlp([2, 3, 1], init_scale=0.1, seed=0)
        >>> from relulab.dynamics import to_network
        >>> to_network(m).widths
        (3,)
    """
    torch = require("torch", "torch")
    nn = torch.nn
    if not all(is_int_at_least(w, 0) for w in widths):  # (sizes >= 1 are checked below)
        raise DynamicsError(f"mlp widths {list(widths)}: every width must be an integer")
    if dtype not in ("float64", "float32"):
        raise DynamicsError(f"mlp: dtype must be 'float64' or 'float32', got {dtype!r}")
    if not is_int_at_least(seed, 0):
        raise DynamicsError(f"mlp: seed must be an integer >= 0, got {seed!r}")
    widths = [int(w) for w in widths]
    if len(widths) < 2 or min(widths) < 1:
        raise DynamicsError(f"mlp widths {widths}: need at least input and output sizes >= 1")
    for name, v in (("init_scale", init_scale), ("out_scale", out_scale)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not np.isfinite(v):
            raise DynamicsError(f"mlp {name}={v!r}: need a finite number")
    if init not in ("gaussian", "plain"):
        raise DynamicsError(f"mlp init '{init}': use 'gaussian' or 'plain'")
    dt = getattr(torch, dtype)
    gen = torch.Generator().manual_seed(int(seed))
    layers: list[Any] = []
    for k in range(len(widths) - 1):
        last = k == len(widths) - 2
        lin = nn.Linear(widths[k], widths[k + 1], bias=(out_bias if last else bias), dtype=dt)
        with torch.no_grad():
            std = init_scale / np.sqrt(widths[k]) if init == "gaussian" else init_scale
            lin.weight.copy_(torch.randn(lin.weight.shape, generator=gen, dtype=dt) * std)
            if lin.bias is not None:
                lin.bias.zero_()
        layers.append(lin)
        if not last:
            layers.append(nn.ReLU())
    sk = None
    if skip:
        sk = nn.Linear(widths[0], widths[-1], dtype=dt)
        with torch.no_grad():
            sk.weight.zero_()
            sk.bias.zero_()
    return relu_mlp_class()(nn.Sequential(*layers), sk, out_scale)


def as_module(net_or_module: Any) -> Any:
    """A trainable torch module: a :class:`Network` becomes ``to_torch(net)`` (a float64
    ``nn.Sequential``; a skip is kept as a trainable ``Linear``), a module is used as is.

    Example:
        >>> from relulab import Network
        >>> m = as_module(Network([[[1.0, 2.0]], [[3.0]]], [[0.0], [1.0]]))
        >>> type(m).__name__, sum(p.numel() for p in m.parameters())
        ('ReluMLP', 5)
    """
    if isinstance(net_or_module, Network):
        from ..io.torch import to_torch

        net = net_or_module.float()
        body = to_torch(Network(list(net.weights), list(net.biases)))
        for p in body.parameters():
            p.requires_grad_(True)
        body.train()
        if net.skip is None:
            return relu_mlp_class()(body)
        torch = require("torch", "torch")
        S, s = net.skip
        sk = torch.nn.Linear(S.shape[1], S.shape[0], dtype=torch.float64)
        with torch.no_grad():
            sk.weight.copy_(torch.from_numpy(np.array(S, dtype=np.float64)))
            sk.bias.copy_(torch.from_numpy(np.array(s, dtype=np.float64)))
        return relu_mlp_class()(body, sk)
    torch = require("torch", "torch")
    if not isinstance(net_or_module, torch.nn.Module):
        raise DynamicsError(
            f"train takes a relulab Network or a torch nn.Module, not {type(net_or_module).__name__}")
    return net_or_module


def relu_parts(model: Any) -> tuple[Any, Any, float] | None:
    """``(body, skip, out_scale)`` when ``model`` is a plain ReLU MLP (an ``nn.Sequential``
    of ``Linear`` and ``ReLU`` only, alternating, ending in ``Linear``, or a ``ReluMLP``
    wrapping one), else None."""
    torch = require("torch", "torch")
    nn = torch.nn
    body, skip, scale = model, None, 1.0
    if isinstance(model, relu_mlp_class()):
        body, skip, scale = model.body, model.skip, model.out_scale
    if not isinstance(body, nn.Sequential) or len(body) == 0:
        return None
    kinds = [type(m) for m in body]
    if kinds[-1] is not nn.Linear:
        return None
    for i, k in enumerate(kinds):
        if k is not (nn.Linear if i % 2 == 0 else nn.ReLU):
            return None
    return body, skip, scale


def require_relu(model: Any, what: str) -> tuple[Any, Any, float]:
    """:func:`relu_parts` or a one-line error naming the recorder that needs it."""
    parts = relu_parts(model)
    if parts is None:
        names = ", ".join(type(m).__name__ for m in getattr(model, "children", lambda: [])())
        raise DynamicsError(
            f"{what} needs a ReLU network (Linear/ReLU alternating, ending in Linear; "
            f"relulab.dynamics.mlp builds one), got {type(model).__name__}({names})")
    return parts


def hidden_layer(model: Any, layer: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(W, b, A)`` of hidden layer ``layer``: incoming weights (width, in), biases
    (width,) and outgoing weights (out, width) of the next linear map (times the output
    scale when the next map is the output)."""
    body, _skip, scale = require_relu(model, "a per-neuron recorder")
    lins = [m for m in body if type(m).__name__ == "Linear"]
    if not 0 <= layer < len(lins) - 1:
        raise DynamicsError(f"layer {layer}: the network has {len(lins) - 1} hidden layers")
    w = lins[layer].weight.detach().cpu().numpy().astype(np.float64)
    bl = lins[layer].bias
    b = np.zeros(w.shape[0]) if bl is None else bl.detach().cpu().numpy().astype(np.float64)
    A = lins[layer + 1].weight.detach().cpu().numpy().astype(np.float64)
    if layer + 1 == len(lins) - 1:
        A = A * scale
    return w, b, A


def to_network(model: Any) -> Network:
    """The :class:`Network` a ReLU torch model computes (float64), via
    :func:`relulab.io.torch.from_torch`; the output scale is folded into the last layer
    and a skip becomes the network's affine skip.

    Example:
        >>> m = mlp([1, 2, 1], seed=1)
        >>> import torch
        >>> x = torch.tensor([[0.3]], dtype=torch.float64)
        >>> abs(float(m(x).detach()) - float(to_network(m)([0.3])[0])) < 1e-15
        True
    """
    from ..io.torch import from_torch

    body, skip, scale = require_relu(model, "to_network")
    net = from_torch(body)
    Ws, bs = list(net.weights), list(net.biases)
    if scale != 1.0:
        Ws[-1], bs[-1] = Ws[-1] * scale, bs[-1] * scale
    sk = None
    if skip is not None:
        S = skip.weight.detach().cpu().numpy().astype(np.float64)
        s = (np.zeros(S.shape[0]) if skip.bias is None
             else skip.bias.detach().cpu().numpy().astype(np.float64))
        sk = (S, s)
    return Network(Ws, bs, sk)
