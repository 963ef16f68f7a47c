"""The activation functions of the "beyond ReLU" construction, as small formulas.

Each activation is one formula over a few primitive operations (``relu exp log1p abs
sigmoid tanh erf atan`` and arithmetic).  The same formula is evaluated three ways:
in numpy (float64), as a torch function and as ONNX nodes, so the three copies of an
approximating network compute the same thing.  Softplus is written in the stable form
``relu(x) + log1p(exp(-|x|))``.

The set is that of Zhang, Lu and Zhao (JMLR 2024): LeakyReLU, ReLU^2, ELU, CELU,
SELU, Softplus, GELU, SiLU, Swish, Mish, Sigmoid, Tanh, Arctan, Softsign, dSiLU, SRS
(soft-root-sign ``x / (x/alpha + exp(-x/beta))``).

Example:
    >>> import numpy as np
    >>> act = activation("softsign")
    >>> act(np.array([-1.0, 0.0, 3.0])).tolist()
    [-0.5, 0.0, 0.75]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import RelulabError

__all__ = ["Activation", "activation", "parse_activation", "ACTIVATION_NAMES"]

# a formula is a nested tuple: ("x",), ("c", v), (op, arg...) with op in _UNARY or _BINARY
Expr = tuple
_UNARY = ("relu", "exp", "log1p", "abs", "sigmoid", "tanh", "erf", "atan", "sqrt", "neg")
_BINARY = ("add", "mul", "div")
X: Expr = ("x",)

SELU_LAMBDA = 1.0507009873554804934193349852946  # torch.nn.SELU's scale
MAX_LEAKY_SLOPE = 1e100  # |s| beyond this: s^2 near float64's range in the ReLU gadget
SELU_ALPHA = 1.6732632423543772848170429916717  # torch.nn.SELU's alpha


def _c(v: float) -> Expr:
    return ("c", float(v))


def _add(a: Expr, b: Expr) -> Expr:
    return ("add", a, b)


def _mul(a: Expr, b: Expr) -> Expr:
    return ("mul", a, b)


def _softplus(e: Expr) -> Expr:
    return _add(("relu", e), ("log1p", ("exp", ("neg", ("abs", e)))))


def _elu(e: Expr, alpha: float) -> Expr:
    # relu(x) + alpha (exp(min(x, 0)) - 1), min(x, 0) = -relu(-x): no overflow for x >> 0
    return _add(("relu", e), _mul(_c(alpha), _add(("exp", ("neg", ("relu", ("neg", e)))), _c(-1))))


def _formula(name: str, p: dict[str, float]) -> Expr:
    sig = ("sigmoid", X)
    table: dict[str, Callable[[], Expr]] = {
        "leakyrelu": lambda: _add(("relu", X), _mul(_c(-p["negative_slope"]), ("relu", ("neg", X)))),
        "relu2": lambda: _mul(("relu", X), ("relu", X)),
        "elu": lambda: _elu(X, p["alpha"]),
        "celu": lambda: _mul(_c(p["alpha"]), _elu(_mul(_c(1 / p["alpha"]), X), 1.0)),
        "selu": lambda: _mul(_c(SELU_LAMBDA), _elu(X, SELU_ALPHA)),
        "softplus": lambda: _softplus(X),
        "gelu": lambda: _mul(_mul(_c(0.5), X), _add(_c(1), ("erf", _mul(_c(1 / math.sqrt(2)), X)))),
        "silu": lambda: _mul(X, sig),
        "swish": lambda: _mul(X, ("sigmoid", _mul(_c(p["beta"]), X))),
        "mish": lambda: _mul(X, ("tanh", _softplus(X))),
        "sigmoid": lambda: sig,
        "tanh": lambda: ("tanh", X),
        "arctan": lambda: ("atan", X),
        "softsign": lambda: ("div", X, _add(_c(1), ("abs", X))),
        "dsilu": lambda: _mul(sig, _add(_c(1), _mul(X, _add(_c(1), ("neg", sig))))),
        "srs": lambda: ("div", X, _add(_mul(_c(1 / p["alpha"]), X),
                                       ("exp", _mul(_c(-1 / p["beta"]), X)))),
    }
    return table[name]()


# name -> (default parameters, limit at -inf, limit at +inf, slope at +inf)
_SPECS: dict[str, tuple[dict[str, float], float, float, float]] = {
    "leakyrelu": ({"negative_slope": 0.01}, -math.inf, math.inf, 1.0),
    "relu2": ({}, 0.0, math.inf, math.inf),
    "elu": ({"alpha": 1.0}, -1.0, math.inf, 1.0),
    "celu": ({"alpha": 1.0}, -1.0, math.inf, 1.0),
    "selu": ({}, -SELU_LAMBDA * SELU_ALPHA, math.inf, SELU_LAMBDA),
    "softplus": ({}, 0.0, math.inf, 1.0),
    "gelu": ({}, 0.0, math.inf, 1.0),
    "silu": ({}, 0.0, math.inf, 1.0),
    "swish": ({"beta": 1.0}, 0.0, math.inf, 1.0),
    "mish": ({}, 0.0, math.inf, 1.0),
    "sigmoid": ({}, 0.0, 1.0, 0.0),
    "tanh": ({}, -1.0, 1.0, 0.0),
    "arctan": ({}, -math.pi / 2, math.pi / 2, 0.0),
    "softsign": ({}, -1.0, 1.0, 0.0),
    "dsilu": ({}, 0.0, 1.0, 0.0),
    "srs": ({"alpha": 2.0, "beta": 3.0}, 0.0, 2.0, 0.0),
}
ACTIVATION_NAMES: tuple[str, ...] = tuple(_SPECS)
_ALIASES = {"leaky_relu": "leakyrelu", "relu^2": "relu2", "relu_2": "relu2", "requ": "relu2",
            "atan": "arctan", "d-silu": "dsilu", "softroot": "srs"}


@dataclass(frozen=True)
class Activation:
    """One activation: its name, parameters, formula and limits.

    ``lower``/``upper`` are the limits at -inf/+inf (the step height of a sigmoidal
    activation is ``upper - lower``); ``slope`` is ``lim rho(x)/x`` at +inf.

    Example:
        >>> a = activation("elu", alpha=2.0)
        >>> float(a(np.array([-100.0]))[0]), a.slope
        (-2.0, 1.0)
    """

    name: str
    params: dict[str, float] = field(default_factory=dict)
    lower: float = 0.0
    upper: float = 0.0
    slope: float = 0.0

    @property
    def formula(self) -> Expr:
        return _formula(self.name, self.params)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """The activation in float64 numpy, elementwise."""
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            return _eval(self.formula, np.asarray(x, dtype=np.float64), _NUMPY)

    def torch(self, x: Any) -> Any:
        """The activation on a torch tensor (same formula)."""
        return _eval(self.formula, x, _torch_ops())

    def describe(self) -> str:
        """The formula as text, e.g. ``x * sigmoid(x)``.

        Example:
            >>> activation("silu").describe()
            'x * sigmoid(x)'
        """
        return _show(self.formula)


def activation(name: str, **params: float) -> Activation:
    """The activation called ``name`` (case-insensitive; ``relu^2``, ``atan`` accepted),
    with its default parameters overridden by ``params``.  An unknown name or
    parameter is one :class:`RelulabError` listing the known ones.

    Example:
        >>> activation("Swish", beta=2.0).params
        {'beta': 2.0}
    """
    key = str(name).strip().lower().replace(" ", "")
    key = _ALIASES.get(key, key)
    if key not in _SPECS:
        raise RelulabError(f"activation: unknown name {name!r}; known: {', '.join(ACTIVATION_NAMES)}")
    defaults, lo, hi, slope = _SPECS[key]
    bad = sorted(set(params) - set(defaults))
    if bad:
        takes = ", ".join(defaults) or "no parameters"
        raise RelulabError(f"activation {key}: unknown parameter(s) {', '.join(bad)} (it takes {takes})")
    p = {**defaults, **{k: float(v) for k, v in params.items()}}
    if any(not math.isfinite(v) for v in p.values()):
        raise RelulabError(f"activation {key}: parameters must be finite, got {p}")
    if key == "leakyrelu" and abs(p["negative_slope"]) == 1.0:
        raise RelulabError("activation leakyrelu: negative_slope must not be +-1 (then it is affine or |x|)")
    if key == "leakyrelu" and abs(p["negative_slope"]) > MAX_LEAKY_SLOPE:
        # the ReLU gadget divides by 1 - s^2, which overflows float64 near 1.3e154
        raise RelulabError(f"activation leakyrelu: |negative_slope| must be at most {MAX_LEAKY_SLOPE:.0e}, "
                           f"got {p['negative_slope']!r}")
    if key in ("elu", "celu") and p["alpha"] <= 0:
        raise RelulabError(f"activation {key}: alpha must be > 0, got {p['alpha']}")
    if key == "swish" and p["beta"] <= 0:
        raise RelulabError(f"activation swish: beta must be > 0, got {p['beta']}")
    if key == "srs" and (p["alpha"] <= 0 or p["beta"] <= 0):
        raise RelulabError(f"activation srs: alpha and beta must be > 0, got {p}")
    if key in ("elu", "celu"):
        lo = -p["alpha"]
    if key == "srs":
        hi = p["alpha"]
    return Activation(key, p, lo, hi, slope)


def parse_activation(text: str) -> Activation:
    """An activation from text: ``"gelu"``, or with parameters ``"swish:beta=2"``,
    ``"srs:alpha=3,beta=2"`` (the command line's ``--act``).

    Example:
        >>> a = parse_activation("leakyrelu:negative_slope=0.2")
        >>> a.name, a.params
        ('leakyrelu', {'negative_slope': 0.2})
    """
    name, _, rest = str(text).partition(":")
    params: dict[str, float] = {}
    for item in (p for p in rest.split(",") if p.strip()):
        key, eq, val = item.partition("=")
        try:
            if not eq:
                raise ValueError
            params[key.strip()] = float(val)
        except ValueError:
            raise RelulabError(f"activation {text!r}: write NAME or NAME:key=value,key=value") from None
    return activation(name, **params)


# ------------------------------------------------------------------ evaluation
def _np_sigmoid(z: np.ndarray) -> np.ndarray:
    from scipy.special import expit

    return expit(z)


def _np_erf(z: np.ndarray) -> np.ndarray:
    from scipy.special import erf

    return erf(z)


_NUMPY: dict[str, Callable[..., Any]] = {
    "relu": lambda z: np.maximum(z, 0.0), "exp": np.exp, "log1p": np.log1p, "abs": np.abs,
    "sigmoid": _np_sigmoid, "tanh": np.tanh, "erf": _np_erf, "atan": np.arctan,
    "sqrt": np.sqrt, "neg": np.negative, "add": np.add, "mul": np.multiply, "div": np.divide,
}


def _torch_ops() -> dict[str, Callable[..., Any]]:
    import torch

    return {"relu": torch.relu, "exp": torch.exp, "log1p": torch.log1p, "abs": torch.abs,
            "sigmoid": torch.sigmoid, "tanh": torch.tanh, "erf": torch.special.erf,
            "atan": torch.atan, "sqrt": torch.sqrt, "neg": torch.neg, "add": torch.add, "mul": torch.mul,
            "div": torch.div}


def _eval(e: Expr, x: Any, ops: dict[str, Callable[..., Any]]) -> Any:
    tag = e[0]
    if tag == "x":
        return x
    if tag == "c":
        return e[1]
    args = [_eval(a, x, ops) for a in e[1:]]
    if tag in _BINARY and isinstance(args[0], float) and not isinstance(args[1], float):
        args = args[::-1] if tag in ("add", "mul") else args
    return ops[tag](*args)


def _show(e: Expr) -> str:
    tag = e[0]
    if tag == "x":
        return "x"
    if tag == "c":
        return f"{e[1]:.10g}"
    if tag == "neg":
        return f"-({_show(e[1])})"
    if tag in _BINARY:
        sym = {"add": " + ", "mul": " * ", "div": " / "}[tag]
        parts = [_show(a) for a in e[1:]]
        parts = [f"({s})" if tag != "add" and a[0] == "add" else s for s, a in zip(parts, e[1:], strict=True)]
        return sym.join(parts)
    return f"{tag}({_show(e[1])})"


def onnx_nodes(e: Expr, x: str, prefix: str, nodes: list, inits: list) -> str:
    """ONNX nodes computing formula ``e`` of tensor ``x`` (float64); returns the output
    name.  onnxruntime has no float64 kernel for ``Erf`` and ``Atan``: atan is built from
    float64 operations (:func:`_atan64`), erf is evaluated in float32 (Cast there and
    back), the only float32 step of an export (GELU's)."""
    from onnx import TensorProto, helper, numpy_helper

    counter = [0]

    def fresh() -> str:
        counter[0] += 1
        return f"{prefix}_{counter[0]}"

    def const(v: float) -> str:
        name = fresh()
        inits.append(numpy_helper.from_array(np.array(v, dtype=np.float64), name))
        return name

    op_name = {"relu": "Relu", "exp": "Exp", "sqrt": "Sqrt", "abs": "Abs", "sigmoid": "Sigmoid",
               "tanh": "Tanh", "neg": "Neg", "add": "Add", "mul": "Mul", "div": "Div"}

    def go(f: Expr) -> str:
        tag = f[0]
        if tag == "x":
            return x
        if tag == "c":
            return const(f[1])
        args = [go(a) for a in f[1:]]
        out = fresh()
        if tag == "log1p":   # no Log1p operator in ONNX: log(1 + z), z in (0, 1] here
            one, z1 = const(1.0), fresh()
            nodes.append(helper.make_node("Add", [args[0], one], [z1]))
            nodes.append(helper.make_node("Log", [z1], [out]))
        elif tag == "atan":
            return go(_atan64(f[1]))
        elif tag == "erf":
            a32, y32 = fresh(), fresh()
            nodes.append(helper.make_node("Cast", args, [a32], to=TensorProto.FLOAT))
            nodes.append(helper.make_node("Erf", [a32], [y32]))
            nodes.append(helper.make_node("Cast", [y32], [out], to=TensorProto.DOUBLE))
        else:
            nodes.append(helper.make_node(op_name[tag], args, [out]))
        return out

    return go(e)


def uses_float32(e: Expr) -> bool:
    """Whether the ONNX form of formula ``e`` has a float32 step (erf).

    Example:
        >>> uses_float32(activation("gelu").formula), uses_float32(activation("arctan").formula)
        (True, False)
    """
    return e[0] == "erf" or any(isinstance(a, tuple) and uses_float32(a) for a in e[1:])


ATAN_HALVINGS = 3  # atan(y) = 2 atan(y / (1 + sqrt(1 + y^2))) three times: |y| <= tan(pi/16)
ATAN_TERMS = 12  # odd Taylor terms after the halvings: remainder < 0.2^25 / 25, below 1e-18


def _atan64(e: Expr) -> Expr:
    """atan(e) from float64 arithmetic, exp-free: argument halving, then Taylor series."""
    y = e
    for _ in range(ATAN_HALVINGS):
        y = ("div", y, _add(_c(1), ("sqrt", _add(_c(1), _mul(y, y)))))
    y2 = _mul(y, y)
    acc: Expr = _c((-1) ** (ATAN_TERMS - 1) / (2 * ATAN_TERMS - 1))
    for k in range(ATAN_TERMS - 2, -1, -1):
        acc = _add(_c((-1) ** k / (2 * k + 1)), _mul(y2, acc))
    return _mul(_c(2.0 ** ATAN_HALVINGS), _mul(y, acc))
