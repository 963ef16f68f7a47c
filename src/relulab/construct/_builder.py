"""A small exact network builder: signals as affine forms over the current layer.

Constructions describe a network as "signals" (affine functions of the current
layer's values) and ReLU neurons that read them.  :class:`Builder` keeps track of
which layer each signal lives on, so a signal from an old layer can never be used
by mistake (it must be carried explicitly, which costs neurons we want to count).

Example:
    >>> b = Builder(2)
    >>> x, y = b.inputs()
    >>> m = b.carry(x) + b.relu(y - x)   # max(x, y); x must be carried to layer 1
    >>> b.build([m])([1, 4]).tolist()
    [Fraction(4, 1)]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction

import numpy as np

from ..limits import check_bytes
from ..network import Network
from ._errors import ConstructionError

Num = int | Fraction

# Exact networks are Python objects: a hidden layer costs ~1 KB and ~150 us to build, a
# neuron ~10 us.  Deeper or larger networks take minutes and gigabytes, and no
# construction here needs them: refused up front (check_size) or when reached (Builder).
MAX_BUILD_LAYERS = 100_000
MAX_BUILD_NEURONS = 2_000_000
_LAYER_BYTES = 1024.0
_COEF_BYTES = 120.0  # a Fraction (two small ints) and its dict slot


def check_size(what: str, layers: int = 0, neurons: int = 0, inputs: int = 0) -> None:
    """Refuse, before building, a network of more than ``MAX_BUILD_LAYERS`` hidden layers
    or ``MAX_BUILD_NEURONS`` neurons (one line naming ``what``).

    Example:
        >>> check_size("sawtooth(10)", layers=10)
        >>> check_size("sawtooth(10**7)", layers=10**7)
        Traceback (most recent call last):
        relulab.construct._errors.ConstructionError: sawtooth(10**7): 10000000 hidden layers; relulab builds at most 100000 (exact networks this deep take minutes and gigabytes)
    """
    if layers > MAX_BUILD_LAYERS:
        raise ConstructionError(f"{what}: {layers} hidden layers; relulab builds at most {MAX_BUILD_LAYERS} "
                                "(exact networks this deep take minutes and gigabytes)")
    if neurons > MAX_BUILD_NEURONS:
        raise ConstructionError(f"{what}: {neurons} neurons; relulab builds at most {MAX_BUILD_NEURONS} "
                                "(exact networks this large take minutes and gigabytes)")
    if inputs > MAX_BUILD_NEURONS:
        raise ConstructionError(f"{what}: {inputs} inputs; relulab builds at most {MAX_BUILD_NEURONS} "
                                "(exact networks this large take minutes and gigabytes)")


def F(v: object) -> Fraction:
    """Exact Fraction of an int, Fraction, str ("3/4") or float (its binary value); NaN,
    inf or anything else is a one-line ConstructionError naming the value."""
    if isinstance(v, Fraction):
        return v
    try:
        return Fraction(v)  # type: ignore[arg-type]
    except (ValueError, OverflowError, TypeError, ZeroDivisionError):
        raise ConstructionError(f"expected a finite rational number, got {v!r}") from None


class Expr:
    """An affine form ``sum_i coef[i] * v_i + const`` over the values ``v`` of one layer."""

    __slots__ = ("layer", "coef", "const")

    def __init__(self, layer: int, coef: dict[int, Fraction] | None = None,
                 const: Num = 0) -> None:
        self.layer = layer
        self.coef = coef or {}
        self.const = F(const)

    def _check(self, other: Expr) -> None:
        if other.layer != self.layer:
            raise ValueError(
                f"cannot combine signals of layer {self.layer} and layer {other.layer}")

    def __add__(self, other: Expr | Num) -> Expr:
        if isinstance(other, Expr):
            self._check(other)
            c = dict(self.coef)
            for k, v in other.coef.items():
                c[k] = c.get(k, Fraction(0)) + v
            return Expr(self.layer, c, self.const + other.const)
        return Expr(self.layer, dict(self.coef), self.const + F(other))

    __radd__ = __add__

    def __neg__(self) -> Expr:
        return Expr(self.layer, {k: -v for k, v in self.coef.items()}, -self.const)

    def __sub__(self, other: Expr | Num) -> Expr:
        return self + (-other)

    def __rsub__(self, other: Num) -> Expr:
        return (-self) + other

    def __mul__(self, s: Num) -> Expr:
        s = F(s)
        return Expr(self.layer, {k: v * s for k, v in self.coef.items()}, self.const * s)

    __rmul__ = __mul__

    def __truediv__(self, s: Num) -> Expr:
        return self * (Fraction(1) / F(s))


def esum(items: Iterable[Expr], layer: int) -> Expr:
    """Sum of signals (the empty sum is the zero signal of ``layer``), in one pass: adding
    one at a time copies the growing sum each time (60,000 clauses of a SAT gadget took
    minutes before anything was checked).

    Example:
        >>> esum([Expr(1, {0: Fraction(1)}), Expr(1, {0: Fraction(2), 1: Fraction(1)}, 3)], 1).coef
        {0: Fraction(3, 1), 1: Fraction(1, 1)}
    """
    out = Expr(layer)
    c: dict[int, Fraction] = {}
    const = Fraction(0)
    for e in items:
        out._check(e)
        for k, v in e.coef.items():
            c[k] = c.get(k, Fraction(0)) + v
        const += e.const
    return Expr(layer, c, const)


class Builder:
    """Build an exact :class:`Network` layer by layer.

    ``relu(e)`` adds a neuron to the layer under construction and returns its
    output as a signal of that new layer; ``close()`` finishes the layer, after
    which only signals of the new layer may be read (an old signal must have been
    carried, which costs neurons and so shows up in the size).
    """

    def __init__(self, n_inputs: int) -> None:
        self.n_inputs = n_inputs
        self.layer = 0           # the layer whose values signals may read
        self._rows: list[Expr] = []   # pre-activations of the layer being built
        self._Ws: list[np.ndarray] = []
        self._bs: list[np.ndarray] = []
        self._width = n_inputs
        self._neurons = 0
        self._bytes = 0.0

    def inputs(self) -> list[Expr]:
        if self.layer != 0:
            raise ValueError("inputs() is only available before the first layer")
        return [Expr(0, {i: Fraction(1)}) for i in range(self.n_inputs)]

    def const(self, v: Num) -> Expr:
        """A constant signal of the current layer."""
        return Expr(self.layer, {}, v)

    def relu(self, e: Expr) -> Expr:
        """A new neuron ``relu(e)`` in the next layer; returns it as a signal of that layer."""
        if e.layer != self.layer:
            raise ValueError(f"signal of layer {e.layer} read while layer {self.layer} is current")
        self._neurons += 1
        if self._neurons > MAX_BUILD_NEURONS:
            check_size("the construction", neurons=self._neurons)
        self._rows.append(e)
        return Expr(self.layer + 1, {len(self._rows) - 1: Fraction(1)})

    def carry(self, e: Expr, nonneg: bool = False) -> Expr:
        """``e`` re-expressed on the next layer: one neuron if ``e >= 0`` is known,
        else two (``relu(e) - relu(-e)``)."""
        if nonneg:
            return self.relu(e)
        return self.relu(e) - self.relu(-e)

    def sigma(self, e: Expr) -> Expr:
        """Saturated linear ``min(max(e, 0), 1) = relu(e) - relu(e - 1)`` (two neurons)."""
        return self.relu(e) - self.relu(e - 1)

    def close(self) -> None:
        """Close the layer under construction; its neurons become the current values."""
        if not self._rows:
            raise ValueError("cannot close an empty layer")
        check_size("the construction", layers=self.layer + 1)
        # dense matrices of references (8 bytes an entry), twice: the Network copies them
        # into its own arrays (an estimate of 8 bytes was half the measured peak); and the
        # coefficients themselves, a Fraction and a dict slot each with their digits (the n^2
        # of a 3000-bit comparator, the 200,000-bit 1/4^s of a deep square, a refinement's
        # growing big-M constants: each passed the budget with only the references counted)
        self._account(self._rows, f"the exact network's first {self.layer + 1} layers")
        W = np.full((len(self._rows), self._width), Fraction(0), dtype=object)
        b = np.full(len(self._rows), Fraction(0), dtype=object)
        for r, e in enumerate(self._rows):
            for k, v in e.coef.items():
                W[r, k] = v
            b[r] = e.const
        self._Ws.append(W)
        self._bs.append(b)
        self._width = len(self._rows)
        self._rows = []
        self.layer += 1

    def _account(self, rows: Sequence[Expr], what: str) -> None:
        """Add a layer of ``rows`` to the bytes held, and check them against the budget."""
        coef = sum(_COEF_BYTES + (v.numerator.bit_length() + v.denominator.bit_length()) / 8
                   for e in rows for v in e.coef.values())
        self._bytes += 16.0 * len(rows) * self._width + coef + _LAYER_BYTES
        check_bytes(self._bytes, what)

    def build(self, outputs: Sequence[Expr]) -> Network:
        """Close the pending layer (if any) and finish with the affine output layer."""
        if self._rows:
            self.close()
        self._account(outputs, "the exact network")
        W = np.full((len(outputs), self._width), Fraction(0), dtype=object)
        b = np.full(len(outputs), Fraction(0), dtype=object)
        for r, e in enumerate(outputs):
            if e.layer != self.layer:
                raise ValueError(f"output {r} is a signal of layer {e.layer}, not {self.layer}")
            for k, v in e.coef.items():
                W[r, k] = v
            b[r] = e.const
        return Network([*self._Ws, W], [*self._bs, b], exact=True)
