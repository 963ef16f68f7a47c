"""Substitution graphs: a layered DAG carrying one MV formula per node.

Layer ``k`` (from 0) holds formulas in the variables of the layer feeding it: layer 0 in
the network inputs ``x_1 .. x_n`` (on [0, 1]^n), layer ``k`` in ``x_1 .. x_{w_{k-1}}``
standing for the node values of layer ``k - 1``.  Every node value lies in [0, 1].  The
network's outputs are read off the last layer by an affine ``readout``
``f(x) = C y + c`` (the logic lives in [0, 1]; the readout puts the output range back).
The represented formula of a last-layer node is the substitution of all layers into it
(:meth:`SubstitutionGraph.formula`).

A node may carry ``affine = (w, b)``: a proof-by-construction that its truth function is
``σ(w·y + b)`` (``σ`` the truncation to [0, 1]); :func:`relulab.logic.to_network` then
compiles it with one or two neurons instead of the term's structure.

Example:
    >>> from relulab.logic.formula import var, oplus, ONE
    >>> g = SubstitutionGraph(2, ((Node(oplus(var(1), var(2))),),), ((1,),), (0,))
    >>> g.widths, str(g.formula(0))
    ((1,), 'x1 ⊕ x2')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ..errors import is_int_at_least
from ..results import Result
from .formula import (
    Formula,
    FormulaError,
    algebra_of,
    evaluate,
    n_vars,
    size,
    stronger_algebra,
    substitute,
    var,
)
from .printing import to_text
from .truncated import truncated_affine, weights_algebra

__all__ = ["Node", "SubstitutionGraph", "GraphError"]


class GraphError(FormulaError):
    """A substitution graph is inconsistent (a formula reads a node that does not exist)."""


def _affine_hint(affine: Any) -> tuple[tuple[Fraction, ...], Fraction]:
    """``(w, b)`` as Fractions; one error for anything else."""
    try:
        w, b = affine
        return tuple(Fraction(v) for v in w), Fraction(b)
    except (TypeError, ValueError, OverflowError):
        raise GraphError(f"Node: affine must be (weights, bias) of finite numbers, got {affine!r}") from None


def _is_canonical_term(phi: Formula, w: tuple[Fraction, ...], b: Fraction) -> bool:
    """``phi`` is the term :func:`~relulab.logic.truncated_affine` builds for ``(w, b)`` in
    some algebra the numbers allow (terms are hash-consed: identity is equality)."""
    algebras = {weights_algebra([*w, b]), weights_algebra([*w, b], real=True)}
    return any(phi is truncated_affine(w, b, alg) for alg in algebras)


def hinted_node(formula: Formula, affine: tuple[tuple[Fraction, ...], Fraction]) -> Node:
    """A :class:`Node` whose affine hint relulab has proved (by construction or by an exact
    rewrite check): built without re-deriving the canonical term.

    Example:
        >>> from relulab.logic import parse
        >>> n = hinted_node(parse("x2 ⊙ x1"), ((Fraction(1), Fraction(1)), Fraction(-1)))
        >>> n.affine[1]
        Fraction(-1, 1)
    """
    node = object.__new__(Node)
    object.__setattr__(node, "formula", formula)
    object.__setattr__(node, "affine", affine)
    return node


@dataclass(frozen=True, eq=False)
class Node:
    """One node: its formula, and optionally the truncated affine map it is known to be.

    Attributes:
        formula: an MV term in the variables of the previous layer.
        affine: ``(w, b)`` (tuples of Fractions) with truth function ``σ(w·y + b)``, or None.

    Example:
        >>> from relulab.logic import parse
        >>> n = Node(parse("x1 ⊙ x2"))
        >>> str(n.formula), n.affine, n.same(Node(parse("x1 ⊙ x2")))
        ('x1 ⊙ x2', None, True)
    """

    formula: Formula
    affine: tuple[tuple[Fraction, ...], Fraction] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.formula, Formula):
            raise GraphError(f"Node: the formula must be a Formula (see relulab.logic.parse), "
                             f"got {type(self.formula).__name__}")
        if self.affine is None:
            return
        w, b = _affine_hint(self.affine)
        # The hint is trusted downstream (to_network compiles it, normal_form rewrites to
        # its canonical term), so a node made here must carry the hint's own term; nodes
        # that relulab derives keep proven hints through hinted_node.
        if not _is_canonical_term(self.formula, w, b):
            raise GraphError("Node: the formula is not truncated_affine(w, b) of its affine hint "
                             f"(w = {[str(v) for v in w][:8]}, b = {b}); give affine=None to use the formula alone")
        object.__setattr__(self, "affine", (w, b))

    def same(self, other: Node) -> bool:
        """Identical formula (hash-consed, so this is structural equality)."""
        return self.formula is other.formula


@dataclass(frozen=True, eq=False)
class SubstitutionGraph(Result):
    """A layered substitution graph (see the module docstring).

    Attributes:
        n_inputs: number of network inputs ``n`` (variables of layer 0).
        layers: tuple of layers, each a tuple of :class:`Node`.
        readout: ``C`` (rows: outputs; columns: last-layer nodes), Fractions.
        offset: ``c``, one Fraction per output.
        algebra: the weakest algebra all node formulas live in (``"MV"``,
            ``"divisible MV"``, ``"Riesz MV"``), computed.
        method: how it was obtained (``"rescale"``, ``"staircase"``, ``"formula"``, ...).
        domain: the input box ``(lo, hi)`` the unit cube stands for (None: [0, 1]^n).

    Example:
        >>> from relulab.logic import parse
        >>> g = SubstitutionGraph(2, [[Node(parse("x1 ⊙ x2"))]], [[1]], [0])
        >>> g.algebra, len(g.layers), g.readout
        ('MV', 1, ((Fraction(1, 1),),))
    """

    n_inputs: int
    layers: tuple[tuple[Node, ...], ...]
    readout: tuple[tuple[Fraction, ...], ...]
    offset: tuple[Fraction, ...]
    method: str = "formula"
    domain: tuple[tuple[Fraction, ...], tuple[Fraction, ...]] | None = None
    algebra: str = field(init=False, default="MV")

    def __post_init__(self) -> None:
        if not is_int_at_least(self.n_inputs, 1):
            raise GraphError(f"substitution graph: n_inputs must be an integer >= 1, got {self.n_inputs!r}")
        layers = tuple(tuple(layer) for layer in self.layers)
        object.__setattr__(self, "layers", layers)

        def exact(v: Any, what: str) -> Fraction:
            try:
                return Fraction(v)
            except (TypeError, ValueError, OverflowError):
                raise GraphError(f"substitution graph: {what} must be a finite number, got {v!r}") from None

        object.__setattr__(self, "readout", tuple(tuple(exact(v, f"readout[{i}][{j}]") for j, v in enumerate(r))
                                                  for i, r in enumerate(self.readout)))
        object.__setattr__(self, "offset", tuple(exact(v, f"offset[{i}]") for i, v in enumerate(self.offset)))
        if not layers:
            raise GraphError("substitution graph: needs at least one layer")
        if self.domain is not None:
            object.__setattr__(self, "domain", _checked_domain(self.domain, self.n_inputs))
        prev = self.n_inputs
        alg = "MV"
        for k, layer in enumerate(layers):
            if not layer:
                raise GraphError(f"substitution graph: layer {k} is empty")
            for j, node in enumerate(layer):
                if not isinstance(node, Node):
                    raise GraphError(f"substitution graph: layer {k} node {j} is not a Node")
                top = n_vars(node.formula)
                if top > prev:
                    raise GraphError(
                        f"substitution graph: layer {k} node {j} uses x{top} but the layer "
                        f"feeding it has {prev} node(s)"
                    )
                if node.affine is not None and len(node.affine[0]) != prev:
                    raise GraphError(f"substitution graph: layer {k} node {j}: affine data has "
                                     f"{len(node.affine[0])} weights for {prev} inputs")
                alg = stronger_algebra(alg, algebra_of(node.formula))
            prev = len(layer)
        if len(self.readout) != len(self.offset):
            raise GraphError("substitution graph: readout and offset have different numbers of outputs")
        for r in self.readout:
            if len(r) != prev:
                raise GraphError(f"substitution graph: a readout row has {len(r)} entries for {prev} last-layer nodes")
        object.__setattr__(self, "algebra", alg)

    # --------------------------------------------------------------- shape
    @property
    def widths(self) -> tuple[int, ...]:
        """Number of nodes per layer."""
        return tuple(len(layer) for layer in self.layers)

    @property
    def n_outputs(self) -> int:
        return len(self.offset)

    @property
    def n_nodes(self) -> int:
        return sum(self.widths)

    @property
    def formula_size(self) -> int:
        """Total DAG size of the node formulas."""
        return sum(size(n.formula) for layer in self.layers for n in layer)

    # ----------------------------------------------------------- semantics
    def formulas(self) -> list[Formula]:
        """The represented formulas: each last-layer node with all layers substituted
        (in ``x_1 .. x_n``); sub-terms stay shared."""
        current = [var(i) for i in range(1, self.n_inputs + 1)]
        for layer in self.layers:
            current = [substitute(n.formula, current) for n in layer]
        return current

    def formula(self, j: int = 0) -> Formula:
        """The represented formula of last-layer node ``j``."""
        fs = self.formulas()
        if not 0 <= j < len(fs):
            raise GraphError(f"substitution graph: no last-layer node {j} (there are {len(fs)})")
        return fs[j]

    def node_values(self, point: Sequence[Any]) -> list[list[Fraction]]:
        """Exact values of every node at ``point`` in [0, 1]^n, layer by layer."""
        try:
            pt = [Fraction(v) for v in point]
        except (TypeError, ValueError, OverflowError):
            raise GraphError(f"substitution graph: the point must hold finite numbers in [0, 1], "
                             f"got {list(point)!r:.80}") from None
        if len(pt) != self.n_inputs:
            raise GraphError(f"substitution graph: the point has {len(pt)} coordinates, "
                             f"the graph {self.n_inputs} inputs")
        out = []
        for layer in self.layers:
            pt = [evaluate(n.formula, pt) if n_vars(n.formula) else evaluate(n.formula, []) for n in layer]
            out.append(pt)
        return out

    def truth_values(self, point: Sequence[Any]) -> list[Fraction]:
        """Values of the last-layer nodes (the truth functions) at ``point``."""
        return self.node_values(point)[-1]

    def evaluate(self, point: Sequence[Any]) -> list[Fraction]:
        """The network outputs ``C y + c`` at a point of the unit cube (exact).

        Example:
            >>> from relulab.logic.formula import var, odot
            >>> g = SubstitutionGraph(2, ((Node(odot(var(1), var(2))),),), ((2,),), (-1,))
            >>> g.evaluate([1, Fraction(1, 2)])
            [Fraction(0, 1)]
        """
        y = self.truth_values(point)
        return [sum((c * v for c, v in zip(row, y, strict=True)), Fraction(0)) + o
                for row, o in zip(self.readout, self.offset, strict=True)]

    # ------------------------------------------------------------ display
    def to_text(self, ascii: bool = False) -> str:
        """One line per node (``L0.1 = ...``), then the readout."""
        lines = []
        for k, layer in enumerate(self.layers):
            src = "x" if k == 0 else f"L{k - 1}."
            for j, n in enumerate(layer):
                t = to_text(n.formula, ascii=ascii)
                if k > 0:
                    t = _rename_vars(t, src)
                lines.append(f"L{k}.{j + 1} = {t}")
        last = len(self.layers) - 1
        for i, (row, o) in enumerate(zip(self.readout, self.offset, strict=True)):
            terms = [f"{_num(c)}*L{last}.{j + 1}" for j, c in enumerate(row) if c != 0]
            lines.append(f"f{i + 1} = " + " + ".join([*terms, _num(o)] if o != 0 or not terms else terms))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_inputs": self.n_inputs,
            "widths": list(self.widths),
            "algebra": self.algebra,
            "method": self.method,
            "layers": [[to_text(n.formula, ascii=True) for n in layer] for layer in self.layers],
            "readout": [[_num(c) for c in row] for row in self.readout],
            "offset": [_num(o) for o in self.offset],
            "domain": None if self.domain is None else [[_num(v) for v in self.domain[0]],
                                                        [_num(v) for v in self.domain[1]]],
            "n_nodes": self.n_nodes,
            "formula_size": self.formula_size,
        }

    def replace(self, layers: Sequence[Sequence[Node]], readout: Any = None, offset: Any = None,
                method: str | None = None) -> SubstitutionGraph:
        """A copy with new layers (and optionally a new readout)."""
        return SubstitutionGraph(
            self.n_inputs, tuple(tuple(layer) for layer in layers),
            self.readout if readout is None else readout,
            self.offset if offset is None else offset,
            self.method if method is None else method, self.domain,
        )

    def box(self) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
        """The input box the unit cube stands for (``domain``, or [0, 1]^n when None)."""
        if self.domain is not None:
            return self.domain
        return (tuple([Fraction(0)] * self.n_inputs), tuple([Fraction(1)] * self.n_inputs))

    def same(self, other: SubstitutionGraph) -> bool:
        """Identical graphs: same inputs and box, identical node formulas, readout and offset."""
        return (self.n_inputs == other.n_inputs and self.box() == other.box() and self.widths == other.widths
                and all(a.same(b) for la, lb in zip(self.layers, other.layers, strict=True)
                        for a, b in zip(la, lb, strict=True))
                and self.readout == other.readout and self.offset == other.offset)


def _checked_domain(domain: Any, n: int) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
    """``(lo, hi)`` as Fractions, ``n`` each, with ``lo < hi``; one error otherwise."""
    try:
        lo, hi = domain
        lo, hi = tuple(Fraction(v) for v in lo), tuple(Fraction(v) for v in hi)
    except (TypeError, ValueError, OverflowError):
        raise GraphError(f"substitution graph: domain must be (lo, hi) of finite numbers, got {domain!r}") from None
    if len(lo) != n or len(hi) != n:
        raise GraphError(f"substitution graph: the domain has {len(lo)} and {len(hi)} bounds for {n} input(s)")
    for i, (a, b) in enumerate(zip(lo, hi, strict=True)):
        if not a < b:
            raise GraphError(f"substitution graph: domain x{i + 1} has lo = {a} >= hi = {b}")
    return lo, hi


def _num(v: Fraction) -> str:
    return str(v.numerator) if v.denominator == 1 else f"{v.numerator}/{v.denominator}"


def _rename_vars(text: str, prefix: str) -> str:
    import re

    return re.sub(r"\bx(\d+)\b", lambda m: f"{prefix}{m.group(1)}", text)
