"""ReLU networks approximated by networks of other activations (Zhang, Lu, Zhao 2024).

Zhang, Lu and Zhao (JMLR 25(35), 2024) show that a ReLU network of width N and depth
L is approximated, to any accuracy on a bounded set, by a rho-network of width 3N and
depth 2L for every rho in their set (LeakyReLU, ReLU^2, ELU, CELU, SELU, Softplus,
GELU, SiLU, Swish, Mish, Sigmoid, Tanh, Arctan, Softsign, dSiLU, SRS), and of width N
and depth L for ELU, CELU, SELU, Softplus, GELU, SiLU, Swish, Mish.  The construction
replaces every ReLU neuron by a small rho-gadget; :func:`replace_relu` builds it for a
relulab :class:`~relulab.Network` and a box, with one parameter ``scale`` (t):

* ``scale`` class (ELU ... Mish): ``relu(u) ~ M/(c t) rho(t u / M)``, c = lim rho(x)/x;
  error <= M sup|rho/c - relu| / t.  One rho-neuron per ReLU: width N, depth L.
* ``leaky``: ``relu(u) = (rho(u) + a rho(-u)) / (1 - a^2)`` exactly: width 2N, depth L.
* ``square`` (ReLU^2): ``relu(y) ~ (rho(y + 1/2) - rho(y - 1/2)) / 2`` at y = t u / M,
  exact for |y| >= 1/2, error <= M / (8 t): width 2N, depth L.
* ``sigmoidal`` (Sigmoid, Tanh, Arctan, Softsign, dSiLU, SRS): ``relu(u) ~ u s(u)``
  with the step ``s = (rho(t v) - rho(-inf)) / (rho(inf) - rho(-inf))``, v = u / M.  The
  first rho-layer computes s and carries v by a central difference
  ``(rho(x0 + e v) - rho(x0 - e v)) / (2 e rho'(x0))``; the second forms the product
  ``v s`` from the second derivative at x0:
  ``A - B = rho(x0 + h(v+s)) - rho(x0 + h(v-s)) = 2 h rho'(x0) s + 2 h^2 rho''(x0) v s + O(h^3)``,
  and the linear term is cancelled with ``C = rho(x0 + h^2 s)`` (whose own derivative
  cancels it, so rho'(x0) is never needed there).  3 + 3 rho-neurons per ReLU: width
  3N, depth 2L, the paper's factors.  e = h = min(1/4, 1/t); the error is O(M / t), and float64
  round-off grows like 1e-16 t^3 (the t where it meets the truncation error, about
  10^3-10^4, is where the measured error stops falling).

The gadget derivation of the sigmoidal class is ours (the paper's proof text was not
available here); its size is the paper's (3N, 2L).  Every pre-activation range M comes
from :func:`relulab.bounds.symbolic_bounds` over the box (x1.25 margin, since the
approximating network's own pre-activations move a little).  The sup error over the box
is *measured* on a dense grid refined by local search (``status = "sampled"``: a lower
bound of the true sup); for the scale, leaky and square classes :func:`a_priori_bound`
gives an upper bound too.

Example:
    >>> from relulab import Box, Network
    >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
    >>> r = approximate_relu_network(net, "gelu", Box([-1], [1]), scale=1000)
    >>> r.widths, r.sup_error < 1e-3
    ((2,), True)
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..bounds import symbolic_bounds
from ..domain import Box, as_domain
from ..errors import RelulabError
from ..network import Network
from ..results import Result
from .actfuncs import ACTIVATION_NAMES, Activation, activation, onnx_nodes, uses_float32

__all__ = ["ActivationNetwork", "ApproximationReport", "replace_relu", "approximate_relu_network",
           "sup_error", "SupError", "GADGET_CLASS", "a_priori_bound", "gadget_gamma", "activation"]

GADGET_CLASS: dict[str, str] = {
    **{n: "scale" for n in ("elu", "celu", "selu", "softplus", "gelu", "silu", "swish", "mish")},
    "leakyrelu": "leaky", "relu2": "square",
    **{n: "sigmoidal" for n in ("sigmoid", "tanh", "arctan", "softsign", "dsilu", "srs")},
}
# the paper's (width, depth) factors per class; ours match them (sigmoidal: 3, 2)
PAPER_FACTORS = {"scale": (1, 1), "leaky": (3, 2), "square": (3, 2), "sigmoidal": (3, 2)}
OUR_FACTORS = {"scale": (1, 1), "leaky": (2, 1), "square": (2, 1), "sigmoidal": (3, 2)}
RANGE_MARGIN = 1.25  # pre-activation ranges are widened: the rho-network's own values drift
X0_CANDIDATES = (1.0, 0.75, 1.5, 0.5, 2.0)  # base points tried for rho'(x0), rho''(x0) != 0
MIN_DERIVATIVE = 1e-3  # |rho'(x0)|, |rho''(x0)| below this: try the next base point
MAX_STEP = 0.25  # h and e never exceed this (keeps x0 +- 2h away from softsign's kink at 0)


@dataclass(frozen=True, eq=False)
class ActivationNetwork:
    """A feed-forward network with one activation in every hidden layer (float64).

    ``weights``/``biases`` as in :class:`relulab.Network` (W of shape (out, in));
    ``skip`` an optional affine input->output map.  ``net(X)`` is the batched forward
    pass; :meth:`torch` gives a ``torch.nn.Module``; :meth:`onnx` an ONNX model;
    :meth:`describe` a plain dictionary.

    Example:
        >>> act = activation("tanh")
        >>> n = ActivationNetwork((np.eye(1), np.eye(1)), (np.zeros(1), np.zeros(1)), act)
        >>> round(float(n([[0.5]])[0, 0]), 6)
        0.462117
    """

    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]
    act: Activation
    skip: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def widths(self) -> tuple[int, ...]:
        return tuple(int(W.shape[0]) for W in self.weights[:-1])

    @property
    def n_hidden_layers(self) -> int:
        return len(self.weights) - 1

    @property
    def n_neurons(self) -> int:
        return int(sum(self.widths))

    @property
    def n_params(self) -> int:
        extra = 0 if self.skip is None else self.skip[0].size + self.skip[1].size
        return int(sum(W.size + b.size for W, b in zip(self.weights, self.biases, strict=True)) + extra)

    @property
    def is_exact(self) -> bool:
        return False

    def __repr__(self) -> str:
        dims = "-".join(str(v) for v in (self.input_dim, *self.widths, self.output_dim))
        return f"ActivationNetwork({dims}, {self.act.name})"

    @property
    def input_dim(self) -> int:
        return int(self.weights[0].shape[1])

    @property
    def output_dim(self) -> int:
        return int(self.weights[-1].shape[0])

    def __call__(self, X: Any) -> np.ndarray:
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        if X.shape[1] != self.input_dim:
            raise RelulabError(f"input has {X.shape[1]} columns, the network takes {self.input_dim}")
        H = X
        for W, b in zip(self.weights[:-1], self.biases[:-1], strict=True):
            H = self.act(H @ W.T + b)
        Y = H @ self.weights[-1].T + self.biases[-1]
        if self.skip is not None:
            Y = Y + X @ self.skip[0].T + self.skip[1]
        return Y

    def describe(self) -> dict:
        """A plain description: activation, its formula, parameters and layer sizes.

        Example:
            >>> act = activation("gelu")
            >>> ActivationNetwork((np.eye(2), np.ones((1, 2))), (np.zeros(2), np.zeros(1)),
            ...                   act).describe()["hidden_widths"]
            [2]
        """
        return {"activation": self.act.name, "params": dict(self.act.params),
                "formula": self.act.describe(), "input_dim": self.input_dim,
                "output_dim": self.output_dim, "hidden_layers": self.n_hidden_layers,
                "hidden_widths": list(self.widths), "skip": self.skip is not None}

    def torch(self) -> Any:
        """A float64 ``torch.nn.Module`` computing the same function.

        Example:
            >>> import torch
            >>> act = activation("mish")
            >>> n = ActivationNetwork((np.eye(1), np.eye(1)), (np.zeros(1), np.zeros(1)), act)
            >>> m = n.torch()
            >>> y = m(torch.tensor([[0.3]], dtype=torch.float64)).detach().numpy()
            >>> bool(abs(y - n([[0.3]])).max() < 1e-15)
            True
        """
        from ..errors import require

        torch = require("torch", "torch")
        return _torch_module(torch, self)

    def onnx(self) -> Any:
        """An ONNX model (float64 tensors; GELU's erf is evaluated in float32 because
        onnxruntime has no float64 kernel for it: see :attr:`onnx_float32_steps`).

        Example:
            >>> act = activation("silu")
            >>> n = ActivationNetwork((np.eye(1), np.eye(1)), (np.zeros(1), np.zeros(1)), act)
            >>> n.onnx().graph.node[0].op_type
            'Gemm'
        """
        return _onnx_model(self)

    @property
    def onnx_float32_steps(self) -> bool:
        return uses_float32(self.act.formula)

    def save(self, path: str) -> None:
        """Save as ``.onnx`` (see :meth:`onnx`) or ``.pt`` (a pickled torch module's
        state + description via ``torch.save``).

        Example:
            >>> import os, tempfile
            >>> act = activation("tanh")
            >>> n = ActivationNetwork((np.eye(1), np.eye(1)), (np.zeros(1), np.zeros(1)), act)
            >>> p = os.path.join(tempfile.mkdtemp(), "n.onnx"); n.save(p); os.path.exists(p)
            True
        """
        p = str(path)
        if p.endswith(".onnx"):
            import onnx

            onnx.save(self.onnx(), p)
        elif p.endswith(".pt"):
            import torch

            torch.save({"description": self.describe(),
                        "weights": [W.tolist() for W in self.weights],
                        "biases": [b.tolist() for b in self.biases],
                        "skip": None if self.skip is None else [a.tolist() for a in self.skip]}, p)
        else:
            raise RelulabError(f"{p}: an activation network is saved as .onnx or .pt")


def _torch_module(torch: Any, net: ActivationNetwork) -> Any:
    nn = torch.nn

    class Act(nn.Module):
        def __init__(self, act: Activation) -> None:
            super().__init__()
            self.act = act

        def forward(self, x: Any) -> Any:
            return self.act.torch(x)

        def extra_repr(self) -> str:
            return self.act.describe()

    class RhoNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            layers = []
            for k, (W, b) in enumerate(zip(net.weights, net.biases, strict=True)):
                lin = nn.Linear(W.shape[1], W.shape[0], dtype=torch.float64)
                with torch.no_grad():
                    lin.weight.copy_(torch.from_numpy(np.ascontiguousarray(W)))
                    lin.bias.copy_(torch.from_numpy(np.ascontiguousarray(b)))
                layers.append(lin)
                if k < len(net.weights) - 1:
                    layers.append(Act(net.act))
            self.body = nn.Sequential(*layers)
            self.skip = None
            if net.skip is not None:
                self.skip = nn.Linear(net.input_dim, net.output_dim, dtype=torch.float64)
                with torch.no_grad():
                    self.skip.weight.copy_(torch.from_numpy(np.ascontiguousarray(net.skip[0])))
                    self.skip.bias.copy_(torch.from_numpy(np.ascontiguousarray(net.skip[1])))

        def forward(self, x: Any) -> Any:
            y = self.body(x)
            return y if self.skip is None else y + self.skip(x)

    return RhoNet().eval()


def _onnx_model(net: ActivationNetwork) -> Any:
    from ..errors import require

    onnx = require("onnx", "onnx")
    from onnx import TensorProto, helper, numpy_helper

    nodes: list = []
    inits: list = []

    def init(a: np.ndarray, name: str) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(a, dtype=np.float64), name))
        return name

    cur = "input"
    L = len(net.weights)
    for k, (W, b) in enumerate(zip(net.weights, net.biases, strict=True), start=1):
        z = "last" if k == L else f"z{k}"
        nodes.append(helper.make_node("Gemm", [cur, init(W, f"W{k}"), init(b, f"b{k}")], [z],
                                      transB=1))
        if k < L:
            cur = onnx_nodes(net.act.formula, z, f"act{k}", nodes, inits)
    if net.skip is None:
        nodes.append(helper.make_node("Identity", ["last"], ["output"]))
    else:
        nodes.append(helper.make_node("Gemm", ["input", init(net.skip[0], "S"), init(net.skip[1], "s")],
                                      ["skipv"], transB=1))
        nodes.append(helper.make_node("Add", ["last", "skipv"], ["output"]))
    graph = helper.make_graph(
        nodes, f"relulab_{net.act.name}_network",
        [helper.make_tensor_value_info("input", TensorProto.DOUBLE, ["batch", net.input_dim])],
        [helper.make_tensor_value_info("output", TensorProto.DOUBLE, ["batch", net.output_dim])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="relulab")
    model.ir_version = 8  # readable by onnxruntime releases of the last years
    onnx.checker.check_model(model)
    return model


# ------------------------------------------------------------------ gadget constants
def _derivatives(act: Activation, x0: float) -> tuple[float, float]:
    """rho'(x0), rho''(x0) by Richardson-extrapolated central differences (relative
    accuracy about 1e-11 for these smooth functions; enough: it only scales errors)."""
    def d1(h: float) -> float:
        v = act(np.array([x0 - h, x0 + h]))
        return float((v[1] - v[0]) / (2 * h))

    def d2(h: float) -> float:
        v = act(np.array([x0 - h, x0, x0 + h]))
        return float((v[0] - 2 * v[1] + v[2]) / (h * h))

    h = 1e-2
    return (4 * d1(h / 2) - d1(h)) / 3, (4 * d2(h / 2) - d2(h)) / 3


def _base_point(act: Activation) -> tuple[float, float, float, float]:
    for x0 in X0_CANDIDATES:
        r1, r2 = _derivatives(act, x0)
        if abs(r1) > MIN_DERIVATIVE and abs(r2) > MIN_DERIVATIVE:
            return x0, float(act(np.array([x0]))[0]), r1, r2
    raise RelulabError(f"activation {act.name}: no base point with rho' and rho'' nonzero")


# ------------------------------------------------------------------ the replacement
def _ranges(net: Network, domain: Box) -> list[np.ndarray]:
    b = symbolic_bounds(net.float(), domain)
    out = []
    for lo, hi in zip(b.pre_lo, b.pre_hi, strict=True):
        M = np.maximum(np.abs(lo), np.abs(hi)) * RANGE_MARGIN
        out.append(np.where(M > 0, M, 1.0))
    return out


def replace_relu(net: Network, act: str | Activation, domain: Any, scale: float) -> ActivationNetwork:
    """The rho-network that approximates ``net`` on ``domain`` (a Box or its bounds),
    every ReLU neuron replaced by the gadget of ``act``'s class (module docstring).
    ``scale`` (t > 0) is the construction's parameter: the error goes to 0 as t grows
    (until float64 round-off, see the module docstring).

    Example:
        >>> from relulab import Box, Network
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> replace_relu(net, "sigmoid", Box([-1], [1]), 100).widths     # (3N, 2L)
        (6, 6)
    """
    a = act if isinstance(act, Activation) else activation(act)
    if not isinstance(net, Network):
        raise RelulabError(f"replace_relu: expected a relulab Network, got {type(net).__name__}")
    try:
        t = float(scale)
    except (TypeError, ValueError):
        raise RelulabError(f"replace_relu: scale must be a number, got {scale!r}") from None
    if not np.isfinite(t) or t <= 0 or t > MAX_SCALE:
        # (past it the gadgets' constants leave float64: relu2 overflowed at 1e154, and a
        # sigmoid's inverse step divided by 0 at 1e200)
        raise RelulabError(f"replace_relu: scale must be in (0, {MAX_SCALE:g}], got {scale!r}")
    dom = as_domain(domain, net.input_dim)
    box = dom if isinstance(dom, Box) else dom.bounding_box()
    f = net.float()
    if f.n_hidden_layers == 0:
        raise RelulabError("replace_relu: the network has no hidden layer (nothing to replace)")
    Ms = _ranges(f, box)
    kind = GADGET_CLASS[a.name]
    Ws: list[np.ndarray] = []
    bs: list[np.ndarray] = []
    # `out` maps the gadget outputs of the previous layer to its ReLU values: relu ~ G @ out + g
    G: np.ndarray | None = None
    g: np.ndarray | None = None
    consts = _base_point(a) if kind == "sigmoidal" else None
    for k, (W, b) in enumerate(f.layers):
        if G is not None:   # fold the previous gadget read-out into this affine map
            W, b = W @ G, W @ g + b
        if k == f.depth - 1:
            Ws.append(W)
            bs.append(b)
            break
        M = Ms[k]
        layers, (G, g) = _gadget(kind, a, W, b, M, t, consts)
        for Wl, bl in layers:
            Ws.append(Wl)
            bs.append(bl)
    skip = None if f.skip is None else (np.array(f.skip[0], dtype=float), np.array(f.skip[1], dtype=float))
    return ActivationNetwork(tuple(Ws), tuple(bs), a, skip)


def _gadget(kind: str, a: Activation, W: np.ndarray, b: np.ndarray, M: np.ndarray, t: float,
            consts: tuple[float, float, float, float] | None
            ) -> tuple[list[tuple[np.ndarray, np.ndarray]], tuple[np.ndarray, np.ndarray]]:
    """The rho-layers replacing ``relu(W h + b)`` (one ReLU layer, ranges M) and the
    read-out (G, g) with ``relu(W h + b) ~ G @ last_rho_layer + g``."""
    n = W.shape[0]
    eye = np.eye(n)
    Wn, bn = W / M[:, None], b / M          # v = u / M in [-1/margin, 1/margin]
    if kind == "scale":
        c = a.slope
        return [(t * Wn, t * bn)], (eye * (M / (c * t))[:, None], np.zeros(n))
    if kind == "leaky":
        s = a.params["negative_slope"]
        # relu(u) = (rho(u) + s rho(-u)) / (1 - s^2), exactly
        Wl = np.vstack([W, -W])
        bl = np.concatenate([b, -b])
        Gm = np.hstack([eye, s * eye]) / ((1 - s) * (1 + s))   # (1 - s s lost digits near |s| = 1)
        return [(Wl, bl)], (Gm, np.zeros(n))
    if kind == "square":
        # relu(u) = (M/t) relu(y), y = t v;  relu(y) ~ (rho(y + 1/2) - rho(y - 1/2)) / 2
        Wl = np.vstack([t * Wn, t * Wn])
        bl = np.concatenate([t * bn + 0.5, t * bn - 0.5])
        Gm = np.hstack([eye, -eye]) * (M / (2 * t))[:, None]
        return [(Wl, bl)], (Gm, np.zeros(n))
    assert consts is not None
    x0, r0, r1, r2 = consts
    h = min(MAX_STEP, 1.0 / t)
    e = h
    d = h * h
    lo, hi = a.lower, a.upper
    # layer 1: S = rho(t v), P = rho(x0 + e v), Q = rho(x0 - e v)
    W1 = np.vstack([t * Wn, e * Wn, -e * Wn])
    b1 = np.concatenate([t * bn, x0 + e * bn, x0 - e * bn])
    # s = (S - lo)/(hi - lo); v^ = (P - Q) / (2 e r1)   (affine in layer-1 values)
    Sa = np.hstack([eye, 0 * eye, 0 * eye]) / (hi - lo)
    sa = np.full(n, -lo / (hi - lo))
    Va = np.hstack([0 * eye, eye, -eye]) / (2 * e * r1)
    # layer 2: A = rho(x0 + h(v^ + s)), B = rho(x0 + h(v^ - s)), C = rho(x0 + d s)
    W2 = np.vstack([h * (Va + Sa), h * (Va - Sa), d * Sa])
    b2 = np.concatenate([x0 + h * sa, x0 - h * sa, x0 + d * sa])
    # v s ~ (A - B - 2 h (C - rho(x0)) / d) / (2 r2 h^2);  relu(u) = M v s
    scale_out = M / (2 * r2 * h * h)
    Gm = np.hstack([eye, -eye, -(2 * h / d) * eye]) * scale_out[:, None]
    gm = (2 * h / d) * r0 * scale_out
    return [(W1, b1), (W2, b2)], (Gm, gm)


# ------------------------------------------------------------------ a priori bound
# the largest scale of a construction (its constants stay inside float64, with room)
MAX_SCALE = 1e100
GAMMA_GRID = (-60.0, 60.0, 1_200_001)  # sup |rho/c - relu| searched on this grid (step 1e-4)
# ... and on log-spaced |y| from 1e-6 to 1e12, widened by the decades of the activation's
# own parameters (swish's peak is near 1.28/beta: at beta = 1e-13 it lay beyond 1e12 and
# gamma read 6 times too small), refined around the largest value
GAMMA_LOG_RANGE = (-6.0, 12.0)
GAMMA_LOG_PER_DECADE = 10_000
EPS = float(np.finfo(np.float64).eps)
GAMMA_SLACK = 1e-3  # added to the grid maximum: covers the grid step times rho's Lipschitz constant


def gadget_gamma(act: str | Activation) -> float | None:
    """``sup_y |rho(y)/c - relu(y)|`` for the scale class (c = lim rho(x)/x), 1/8 for
    ReLU^2; for LeakyReLU (exact in exact arithmetic) its float64 rounding relative to
    the range, which does not fall with the scale; None for the sigmoidal class (no global
    per-neuron bound).
    Scale class: a float estimate (dense grid + slack, and the limit at -inf), not a proof.

    Example:
        >>> round(gadget_gamma("softplus"), 3), gadget_gamma("relu2"), gadget_gamma("tanh")
        (0.695, 0.125, None)
        >>> gadget_gamma("leakyrelu") < 1e-15
        True
    """
    a = act if isinstance(act, Activation) else activation(act)
    kind = GADGET_CLASS[a.name]
    if kind == "leaky":
        # exact in exact arithmetic; in float64 the read-out (rho(u) + s rho(-u)) / (1 - s^2)
        # rounds by a few ulps of |u| (1 + |s|) / |1 - s^2| (1.4e-7 at s = 0.999999999)
        s = a.params["negative_slope"]
        return 4 * EPS * (1 + abs(s)) ** 2 / abs((1 - s) * (1 + s))
    if kind == "square":
        return 0.125
    if kind == "sigmoidal":
        return None
    key = (a.name, tuple(sorted(a.params.items())))
    if key not in _GAMMA_CACHE:
        def dev(y: np.ndarray) -> np.ndarray:
            with np.errstate(over="ignore", invalid="ignore"):
                v = np.abs(a(y) / a.slope - np.maximum(y, 0.0))
            return np.where(np.isfinite(v), v, 0.0)

        y = np.linspace(*GAMMA_GRID)
        g = float(np.max(dev(y)))
        spread = max([0.0] + [abs(math.log10(abs(v))) for v in a.params.values() if v != 0])
        lo_dec, hi_dec = GAMMA_LOG_RANGE[0] - spread, GAMMA_LOG_RANGE[1] + spread
        far = np.logspace(lo_dec, hi_dec, int((hi_dec - lo_dec) * GAMMA_LOG_PER_DECADE) + 1)
        far = np.concatenate([-far, far])
        dv = dev(far)
        i = int(np.argmax(dv))
        # the log grid's neighbours bracket its peak: a fine linear grid between them
        fine = np.linspace(far[max(i - 1, 0)], far[min(i + 1, far.size - 1)], 100_001)
        g = max(g, float(dv[i]), float(np.max(dev(fine))))
        # the grid step's share of the error, scaled with the peak's size
        _GAMMA_CACHE[key] = max(g, abs(a.lower) / a.slope) * (1 + GAMMA_SLACK) + GAMMA_SLACK
    return _GAMMA_CACHE[key]


_GAMMA_CACHE: dict[tuple, float] = {}


def a_priori_bound(net: Network, act: str | Activation, domain: Any, scale: float) -> float | None:
    """An upper bound of ``max |net(x) - replace_relu(net, act, domain, scale)(x)|`` over the
    box for the scale, leaky and square classes (None for sigmoidal): every gadget is
    within ``eps = gamma M / t`` of relu everywhere (:func:`gadget_gamma`), relu is
    1-Lipschitz, so layer errors obey ``e_k <= |W_k| e_(k-1) + eps_k`` and the output error
    is ``|W_out| e_L``; the float64 rounding of both networks is added per layer (for ReLU^2
    it grows with the scale: the gadget cancels squares of size t^2).  Exact arithmetic is
    not used: a float bound (and gamma of the scale class is a grid estimate).

    Example:
        >>> from relulab import Box, Network
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> round(a_priori_bound(net, "relu2", Box([-1], [1]), 10), 12)   # 2 neurons x 1.25/80
        0.03125
    """
    a = act if isinstance(act, Activation) else activation(act)
    gamma = gadget_gamma(a)
    if gamma is None:
        return None
    t = float(scale)
    if not np.isfinite(t) or t <= 0 or t > MAX_SCALE:
        raise RelulabError(f"a_priori_bound: scale must be in (0, {MAX_SCALE:g}], got {scale!r}")
    dom = as_domain(domain, net.input_dim)
    box = dom if isinstance(dom, Box) else dom.bounding_box()
    f = net.float()
    Ms = _ranges(f, box)
    kind = GADGET_CLASS[a.name]
    per_scale = 1.0 if kind == "leaky" else 1.0 / t   # (the leaky gadget has no t)
    e = np.zeros(f.input_dim)
    h = box.magnitudes.astype(float)   # a bound of |layer input|
    for k, (W, b) in enumerate(f.layers):
        A = np.abs(W)
        # float64: the sums of this layer round by n u (|W| |h| + |b|) in either network
        # (a rho-network's sums are the same up to the factor t / M it reads them back by)
        sums = (W.shape[1] + 1) * EPS * (A @ h + np.abs(b))
        if k == f.depth - 1:
            return float(np.max(A @ e + 2 * sums))
        e = A @ e + gamma * Ms[k] * per_scale + _gadget_rounding(kind, t, Ms[k], sums, gamma)
        h = Ms[k] + e
    return None


def _gadget_rounding(kind: str, t: float, M: np.ndarray, sums: np.ndarray, gamma: float) -> np.ndarray:
    """What float64 adds to one layer of gadgets, in the ReLU network's units (the
    measured error at scale 1e9 had passed the rounding-free bound 500 times): ``sums`` is
    the rounding of the layer's sums, ``M`` the neurons' ranges."""
    if kind == "square":
        # (y + 1/2)^2 - (y - 1/2)^2 at y = t u / M (|y| <= t) cancels squares of size t^2 to
        # y: each sum's rounding comes back multiplied by 2 |y|, each square's by its size,
        # and the read-out is M / (2 t)
        return 4 * (t + 1) * sums + 4 * EPS * (t + 1) ** 2 * M / t
    # rho's slope (at most 1.2 for the scale class, 1 for leaky) times the sums' rounding,
    # and a few ulps of |rho(y)| <= c (|y| + gamma) read back by M / (c t)
    return 4 * sums + 8 * EPS * (M + gamma * M / t)


# ------------------------------------------------------------------ measuring
def _grid(box: Box, n_points: int, seed: int) -> np.ndarray:
    d = box.dim
    per = max(2, int(round(n_points ** (1.0 / d))))
    if per ** d <= 4 * n_points and d <= 6:
        axes = [np.linspace(box.lo[i], box.hi[i], per) for i in range(d)]
        return np.array(list(itertools.product(*axes)), dtype=np.float64)
    rng = np.random.default_rng(seed)
    corners = np.array(list(itertools.product(*zip(box.lo, box.hi, strict=True))), dtype=np.float64)
    pts = box.lo + rng.random((n_points, d)) * (box.hi - box.lo)
    return np.vstack([corners[:n_points], pts])


@dataclass(frozen=True)
class SupError(Result):
    """The largest error found on a grid: ``error`` at ``argmax`` among ``n_points``
    points; ``status`` "sampled" (a lower bound of the sup over the box).

    Example:
        >>> SupError(0.5, (0.0,), 3, "sampled").to_dict()["status"]
        'sampled'
    """

    error: float
    argmax: tuple[float, ...]
    n_points: int
    status: str


REFINE_STARTS = 16  # grid points (the largest errors) from which the local search starts
REFINE_ROUNDS = 48  # rounds of the local search; its radius halves every 4 rounds
REFINE_TRIALS = 24  # random moves per start and round


def _refine(err: Any, box: Box, X: np.ndarray, D: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Local random search from the worst grid points: the error peaks in thin layers
    (width ~ 1/t) around the ReLU network's kinks, which a grid misses as t grows."""
    rng = np.random.default_rng(seed + 1)
    idx = np.argsort(D)[-REFINE_STARTS:]
    P, E = X[idx].copy(), D[idx].copy()
    n = max(2, int(round(len(X) ** (1.0 / box.dim))))
    radius = (box.hi - box.lo) / n
    for k in range(REFINE_ROUNDS):
        r = radius * 0.5 ** (k // 4)
        C = P[:, None, :] + rng.uniform(-1, 1, (len(P), REFINE_TRIALS, box.dim)) * r
        C = np.clip(C, box.lo, box.hi).reshape(-1, box.dim)
        Ec = err(C).reshape(len(P), REFINE_TRIALS)
        j = np.argmax(Ec, axis=1)
        better = Ec[np.arange(len(P)), j] > E
        P[better] = C.reshape(len(P), REFINE_TRIALS, -1)[better, j[better]]
        E[better] = Ec[better, j[better]]
    return P, E


def sup_error(net: Network, rho_net: ActivationNetwork, domain: Any, n_points: int = 20001,
              seed: int = 0, refine: bool = True) -> SupError:
    """Max over a dense grid of the box (random points + corners when the grid would be
    too large) of ``|net(x) - rho_net(x)|`` (max over outputs), then (``refine``) a local
    random search from the worst grid points (the error peaks in layers of width ~1/t
    around the ReLU network's kinks).  A sampled value: a lower bound of the sup over the
    box.  ``n_points`` counts every evaluated point.

    Example:
        >>> from relulab import Box, Network
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> r = sup_error(net, replace_relu(net, "leakyrelu", Box([-1], [1]), 1), Box([-1], [1]))
        >>> r.error < 1e-12, r.status
        (True, 'sampled')
    """
    dom = as_domain(domain, net.input_dim)
    box = dom if isinstance(dom, Box) else dom.bounding_box()
    f = net.float()

    def err(Z: np.ndarray) -> np.ndarray:
        return np.abs(f(Z) - rho_net(Z)).max(axis=1)

    X = _grid(box, n_points, seed)
    D = err(X)
    count = len(X)
    if refine and len(X) > 1:
        P, E = _refine(err, box, X, D, seed)
        X, D = np.vstack([X, P]), np.concatenate([D, E])
        count += REFINE_STARTS * REFINE_ROUNDS * REFINE_TRIALS
    i = int(np.argmax(D))
    return SupError(float(D[i]), tuple(float(v) for v in X[i]), int(count), "sampled")


@dataclass(frozen=True)
class ApproximationReport(Result):
    """A rho-network approximating a ReLU network on a box, with its measured error.

    ``sup_error`` is the max error on a grid refined by local search, ``n_points``
    evaluations in all (``status`` "sampled": a lower bound of the sup over the box); ``paper_width_factor``/``paper_depth_factor``
    are the factors the paper guarantees for this activation, ``width_factor``/
    ``depth_factor`` ours; ``a_priori_bound`` the propagated gadget bound of
    :func:`a_priori_bound` (None for the sigmoidal class).

    Example:
        >>> from relulab import Box, Network
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> r = approximate_relu_network(net, "relu2", Box([-1], [1]), scale=10)
        >>> r.gadget, r.width_factor, r.sup_error <= 1.25 * 2 / 80 + 1e-12
        ('square', 2, True)
    """

    activation: str
    params: dict
    gadget: str
    scale: float
    relu_widths: tuple[int, ...]
    widths: tuple[int, ...]
    width_factor: int
    depth_factor: int
    paper_width_factor: int
    paper_depth_factor: int
    sup_error: float
    argmax: tuple[float, ...]
    n_points: int
    status: str
    a_priori_bound: float | None = None
    network: ActivationNetwork | None = None

    def to_dict(self) -> dict:
        d = super().to_dict()
        d["network"] = None if self.network is None else self.network.describe()
        return d


def approximate_relu_network(net: Network, act: str | Activation, domain: Any, scale: float,
                             n_points: int = 20001) -> ApproximationReport:
    """:func:`replace_relu` plus the measured sup error on a dense grid of the box,
    refined by local search (:func:`sup_error`).

    Example:
        >>> from relulab import Box, Network
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> [approximate_relu_network(net, "tanh", Box([-1], [1]), t).sup_error < 0.1
        ...  for t in (10, 100)]
        [False, True]
    """
    rho = replace_relu(net, act, domain, scale)
    se = sup_error(net, rho, domain, n_points)
    kind = GADGET_CLASS[rho.act.name]
    wf, df = OUR_FACTORS[kind]
    pw, pd = PAPER_FACTORS[kind]
    return ApproximationReport(rho.act.name, dict(rho.act.params), kind, float(scale),
                               tuple(net.widths), rho.widths, wf, df, pw, pd, se.error,
                               se.argmax, se.n_points, se.status,
                               a_priori_bound(net, rho.act, domain, scale), rho)


assert set(GADGET_CLASS) == set(ACTIVATION_NAMES)
