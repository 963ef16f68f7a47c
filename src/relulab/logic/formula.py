"""MV-algebra (Lukasiewicz) formulas over variables x_1 .. x_n taking values in [0, 1].

A :class:`Formula` is an immutable, hash-consed term: building the same term twice gives
the same object, so structural equality is identity, substitution and evaluation can
memoise by node, and formulas with shared sub-terms stay small (a DAG, not a tree).

Operations (truth functions on [0, 1]):

* ``x ⊕ y = min(1, x + y)``, ``¬x = 1 - x`` (the MV basis), constants 0 and 1;
* derived: ``x ⊙ y = max(0, x + y - 1)``, ``x ∨ y = max(x, y)``, ``x ∧ y = min(x, y)``,
  ``x → y = min(1, 1 - x + y)``;
* divisible MV: ``δ_n x = x / n`` (n >= 1 an integer), for rational weights;
* Riesz MV: ``r · x`` for a scalar ``r`` in [0, 1], for real weights (stored as the exact
  rational value of the real number, e.g. the binary value of a float).

Example:
    >>> from fractions import Fraction
    >>> x, y = var(1), var(2)
    >>> phi = oplus(x, neg(x))
    >>> evaluate(phi, [Fraction(1, 3)])
    Fraction(1, 1)
    >>> oplus(x, y) is oplus(x, y)
    True
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from ..errors import RelulabError
from .printing import to_text
from .traverse import postorder

__all__ = [
    "Formula",
    "FormulaError",
    "var",
    "const",
    "ZERO",
    "ONE",
    "neg",
    "oplus",
    "odot",
    "join",
    "meet",
    "impl",
    "div",
    "scal",
    "evaluate",
    "n_vars",
    "variables",
    "size",
    "depth",
    "substitute",
    "algebra_of",
    "postorder",
    "BINARY_OPS",
    "ALGEBRAS",
]

#: the binary operations and their truth functions' names
BINARY_OPS = ("oplus", "odot", "join", "meet", "impl")
#: the algebras, from weakest to strongest: integer, rational and real weights
ALGEBRAS = ("MV", "divisible MV", "Riesz MV")


class FormulaError(RelulabError):
    """A formula is malformed, or used with the wrong number of variables."""


_TABLE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


class Formula:
    """One node of an MV-algebra term (build them with :func:`var`, :func:`oplus`, ...).

    Attributes:
        op: ``"var"``, ``"const"``, ``"neg"``, ``"oplus"``, ``"odot"``, ``"join"``,
            ``"meet"``, ``"impl"``, ``"div"`` or ``"scal"``.
        args: the sub-formulas.
        param: the variable index (1-based), the constant (0 or 1), ``n`` of ``δ_n`` or
            the scalar ``r`` of ``r · x``; None otherwise.

    Python operators: ``~a`` is ¬a, ``a + b`` is a ⊕ b, ``a * b`` is a ⊙ b, ``a | b``
    is a ∨ b, ``a & b`` is a ∧ b, ``a >> b`` is a → b.

    Example:
        >>> str(~var(1) + var(2) * var(3))
        '¬x1 ⊕ x2 ⊙ x3'
    """

    # _top (largest variable index) and _alg (index in ALGEBRAS) summarise the whole DAG,
    # computed once from the children: graphs re-check every node at every local step,
    # and a traversal each time made a normal form of a 3-80-80-80-1 network take 26 s
    __slots__ = ("op", "args", "param", "_top", "_alg", "__weakref__")

    op: str
    args: tuple[Formula, ...]
    param: Any

    def __new__(cls, op: str, args: tuple[Formula, ...] = (), param: Any = None) -> Formula:
        key = (op, param, tuple(id(a) for a in args))
        hit = _TABLE.get(key)
        if hit is not None:
            return hit
        obj = object.__new__(cls)
        object.__setattr__(obj, "op", op)
        object.__setattr__(obj, "args", tuple(args))
        object.__setattr__(obj, "param", param)
        top = param if op == "var" else max((a._top for a in args), default=0)
        own = 2 if op == "scal" else 1 if op == "div" else 0
        object.__setattr__(obj, "_top", top)
        object.__setattr__(obj, "_alg", max(own, *(a._alg for a in args)) if args else own)
        _TABLE[key] = obj
        return obj

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("formulas are immutable")

    def __reduce__(self):
        return (Formula, (self.op, self.args, self.param))

    # Python operators as the MV operations.
    def __invert__(self) -> Formula:
        return neg(self)

    def __add__(self, other: Formula) -> Formula:
        return oplus(self, other)

    def __mul__(self, other: Formula) -> Formula:
        return odot(self, other)

    def __or__(self, other: Formula) -> Formula:
        return join(self, other)

    def __and__(self, other: Formula) -> Formula:
        return meet(self, other)

    def __rshift__(self, other: Formula) -> Formula:
        return impl(self, other)

    def __str__(self) -> str:
        return to_text(self)

    def __repr__(self) -> str:
        return f"Formula({str(self)!r})"


# ------------------------------------------------------------------ constructors
def var(i: int) -> Formula:
    """The variable ``x_i`` (1-based).

    Example:
        >>> str(var(3))
        'x3'
    """
    if isinstance(i, bool) or not isinstance(i, int) or i < 1:
        raise FormulaError(f"variable index must be an integer >= 1, got {i!r}")
    return Formula("var", (), int(i))


def const(c: int | Fraction) -> Formula:
    """The constant 0 or 1 (other constants are δ_n 1 or r · 1).

    Example:
        >>> str(const(1)), const(0) is ZERO
        ('1', True)
    """
    try:
        c = Fraction(c)
    except (TypeError, ValueError, OverflowError):
        raise FormulaError(f"const: expected 0 or 1, got {c!r}") from None
    if c not in (0, 1):
        raise FormulaError(f"MV constants are 0 and 1, got {c}; write δ_n(1) or r·1 for others")
    return Formula("const", (), c)


ZERO = const(0)
ONE = const(1)


def _check(*fs: Any) -> None:
    for f in fs:
        if not isinstance(f, Formula):
            raise FormulaError(f"expected a Formula, got {type(f).__name__}")


def neg(a: Formula) -> Formula:
    """¬a = 1 - a.

    Example:
        >>> from fractions import Fraction
        >>> evaluate(neg(var(1)), [Fraction(1, 4)])
        Fraction(3, 4)
    """
    _check(a)
    return Formula("neg", (a,))


def oplus(a: Formula, b: Formula) -> Formula:
    """a ⊕ b = min(1, a + b).

    Example:
        >>> from fractions import Fraction
        >>> evaluate(oplus(var(1), var(2)), [Fraction(3, 4), Fraction(1, 2)])
        Fraction(1, 1)
    """
    _check(a, b)
    return Formula("oplus", (a, b))


def odot(a: Formula, b: Formula) -> Formula:
    """a ⊙ b = max(0, a + b - 1) = ¬(¬a ⊕ ¬b).

    Example:
        >>> from fractions import Fraction
        >>> evaluate(odot(var(1), var(2)), [Fraction(3, 4), Fraction(1, 2)])
        Fraction(1, 4)
    """
    _check(a, b)
    return Formula("odot", (a, b))


def join(a: Formula, b: Formula) -> Formula:
    """a ∨ b = max(a, b) = (a ⊙ ¬b) ⊕ b.

    Example:
        >>> from fractions import Fraction
        >>> evaluate(join(var(1), var(2)), [Fraction(3, 4), Fraction(1, 2)])
        Fraction(3, 4)
    """
    _check(a, b)
    return Formula("join", (a, b))


def meet(a: Formula, b: Formula) -> Formula:
    """a ∧ b = min(a, b) = ¬(¬a ∨ ¬b).

    Example:
        >>> from fractions import Fraction
        >>> evaluate(meet(var(1), var(2)), [Fraction(3, 4), Fraction(1, 2)])
        Fraction(1, 2)
    """
    _check(a, b)
    return Formula("meet", (a, b))


def impl(a: Formula, b: Formula) -> Formula:
    """a → b = min(1, 1 - a + b) = ¬a ⊕ b.

    Example:
        >>> from fractions import Fraction
        >>> evaluate(impl(var(1), var(2)), [Fraction(3, 4), Fraction(1, 2)])
        Fraction(3, 4)
    """
    _check(a, b)
    return Formula("impl", (a, b))


def div(n: int, a: Formula) -> Formula:
    """δ_n a = a / n (divisible MV-algebras), ``n`` a positive integer.

    Example:
        >>> from fractions import Fraction
        >>> evaluate(div(3, var(1)), [Fraction(3, 4)])
        Fraction(1, 4)
    """
    _check(a)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise FormulaError(f"δ_n needs an integer n >= 1, got {n!r}")
    return Formula("div", (a,), int(n))


def scal(r: Any, a: Formula) -> Formula:
    """r · a for a scalar ``r`` in [0, 1] (Riesz MV-algebras); ``r`` is kept exactly.

    Example:
        >>> from fractions import Fraction
        >>> evaluate(scal(0.5, var(1)), [Fraction(3, 4)])
        Fraction(3, 8)
    """
    _check(a)
    try:
        r = Fraction(r)
    except (TypeError, ValueError, OverflowError) as e:
        raise FormulaError(f"a Riesz scalar must be a finite number in [0, 1] ({e})") from None
    if not 0 <= r <= 1:
        raise FormulaError(f"a Riesz scalar must lie in [0, 1], got {r}")
    return Formula("scal", (a,), r)


# ------------------------------------------------------------------ traversal
def _apply(op: str, param: Any, vals: Sequence[Fraction]) -> Fraction:
    if op == "neg":
        return 1 - vals[0]
    if op == "oplus":
        return min(Fraction(1), vals[0] + vals[1])
    if op == "odot":
        return max(Fraction(0), vals[0] + vals[1] - 1)
    if op == "join":
        return max(vals[0], vals[1])
    if op == "meet":
        return min(vals[0], vals[1])
    if op == "impl":
        return min(Fraction(1), 1 - vals[0] + vals[1])
    if op == "div":
        return vals[0] / param
    if op == "scal":
        return vals[0] * param
    raise FormulaError(f"unknown operation {op!r}")


def evaluate(phi: Formula, point: Sequence[Any]) -> Fraction:
    """The exact truth value of ``phi`` at ``point`` (coordinates in [0, 1]).

    Example:
        >>> from fractions import Fraction as F
        >>> evaluate(odot(var(1), var(2)), [F(3, 4), F(1, 2)])
        Fraction(1, 4)
    """
    _check(phi)
    try:
        pt = [Fraction(v) for v in point]
    except (TypeError, ValueError, OverflowError) as e:
        raise FormulaError(f"evaluate: the point has a non-rational coordinate ({e})") from None
    for i, v in enumerate(pt, start=1):
        if not 0 <= v <= 1:
            raise FormulaError(f"evaluate: coordinate x{i} = {v} is outside [0, 1]")
    need = n_vars(phi)
    if need > len(pt):
        raise FormulaError(f"evaluate: the formula uses x{need} but the point has {len(pt)} coordinates")
    vals: dict[int, Fraction] = {}
    for node in postorder(phi):
        if node.op == "var":
            v = pt[node.param - 1]
        elif node.op == "const":
            v = node.param
        else:
            v = _apply(node.op, node.param, [vals[id(a)] for a in node.args])
        vals[id(node)] = v
    return vals[id(phi)]


def evaluate_float(phi: Formula, X: Any) -> Any:
    """Truth values at the rows of ``X`` (n, d) in float64 (fast, for plots and sampling)."""
    import numpy as np

    X = np.asarray(X, dtype=np.float64)
    vals: dict[int, Any] = {}
    for node in postorder(phi):
        op = node.op
        a = [vals[id(c)] for c in node.args]
        if op == "var":
            v = X[:, node.param - 1]
        elif op == "const":
            v = np.full(X.shape[0], float(node.param))
        elif op == "neg":
            v = 1.0 - a[0]
        elif op == "oplus":
            v = np.minimum(1.0, a[0] + a[1])
        elif op == "odot":
            v = np.maximum(0.0, a[0] + a[1] - 1.0)
        elif op == "join":
            v = np.maximum(a[0], a[1])
        elif op == "meet":
            v = np.minimum(a[0], a[1])
        elif op == "impl":
            v = np.minimum(1.0, 1.0 - a[0] + a[1])
        elif op == "div":
            v = a[0] / node.param
        else:
            v = a[0] * float(node.param)
        vals[id(node)] = v
    return vals[id(phi)]


def variables(phi: Formula) -> list[int]:
    """The sorted indices of the variables ``phi`` uses.

    Example:
        >>> variables(oplus(var(3), neg(var(1))))
        [1, 3]
    """
    return sorted({n.param for n in postorder(phi) if n.op == "var"})


def n_vars(phi: Formula) -> int:
    """The largest variable index used (0 for a closed formula).

    Example:
        >>> n_vars(oplus(var(1), var(4)))
        4
    """
    return phi._top


def size(phi: Formula) -> int:
    """Number of distinct nodes (the size of the shared DAG).

    Example:
        >>> x = var(1)
        >>> size(oplus(neg(x), neg(x)))
        3
    """
    return sum(1 for _ in postorder(phi))


def depth(phi: Formula) -> int:
    """Length of the longest root-to-leaf path (a variable or constant has depth 0).

    Example:
        >>> depth(var(1)), depth(oplus(var(1), neg(var(2))))
        (0, 2)
    """
    d: dict[int, int] = {}
    for node in postorder(phi):
        d[id(node)] = 1 + max((d[id(a)] for a in node.args), default=-1)
    return d[id(phi)]


def rebuild(node: Formula, args: Sequence[Formula]) -> Formula:
    """``node`` with its sub-formulas replaced by ``args``."""
    return Formula(node.op, tuple(args), node.param)


def substitute(phi: Formula, images: Sequence[Formula]) -> Formula:
    """``phi`` with ``x_i`` replaced by ``images[i - 1]`` (simultaneously).

    Example:
        >>> str(substitute(oplus(var(1), var(2)), [var(2), neg(var(1))]))
        'x2 ⊕ ¬x1'
    """
    _check(phi, *images)
    out: dict[int, Formula] = {}
    for node in postorder(phi):
        if node.op == "var":
            if node.param > len(images):
                raise FormulaError(
                    f"substitute: the formula uses x{node.param} but only {len(images)} images were given"
                )
            out[id(node)] = images[node.param - 1]
        elif node.args:
            out[id(node)] = rebuild(node, [out[id(a)] for a in node.args])
        else:
            out[id(node)] = node
    return out[id(phi)]


def algebra_of(phi: Formula) -> str:
    """The weakest algebra the formula lives in: ``"MV"`` (no δ_n and no scalars),
    ``"divisible MV"`` (δ_n) or ``"Riesz MV"`` (real scalars).

    Example:
        >>> algebra_of(oplus(var(1), var(2))), algebra_of(div(2, var(1))), algebra_of(scal(0.3, var(1)))
        ('MV', 'divisible MV', 'Riesz MV')
    """
    return ALGEBRAS[phi._alg]


def stronger_algebra(a: str, b: str) -> str:
    """The stronger of two algebra names (see :data:`ALGEBRAS`)."""
    return ALGEBRAS[max(ALGEBRAS.index(a), ALGEBRAS.index(b))]
