"""A normal form for substitution graphs, reached by the local operations themselves.

Sweeping the layers from the inputs up, for each layer ``k``:

1. *node rewrite* of every node to its canonical formula: for a node known to be
   ``σ(w·y + b)``, the term :func:`~relulab.logic.truncated.truncated_affine` builds from
   ``(w, b)`` (the constant 0 or 1 when ``σ(w·y + b)`` is constant on the cube, e.g. a dead
   neuron with nonzero weights); otherwise its :func:`~relulab.logic.simplify` form;
2. *layer collapse* of ``k`` into ``k + 1`` and *layer expansion* back with the canonical
   inner layer: the distinct non-constant formulas of layer ``k`` that layer ``k + 1``
   still reads, sorted by a structural fingerprint (constant nodes are substituted into
   the next layer, equal nodes merged, unread nodes dropped);
3. after the last layer, one *readout* step: equal last-layer nodes merged (their readout
   columns added), constants moved into the offset, nodes sorted.

Sweeps repeat until nothing changes.  Positive rescaling of neurons does not change the
extracted node formulas (``relu(c z) / (c hi) = relu(z) / hi``), so networks that differ
by rescaling, permutation, dead or unread neurons, or duplicated neurons get identical
normal forms (:meth:`SubstitutionGraph.same`) - the same group of symmetries
:func:`relulab.symmetry.canonical` removes, here as a derivation.  Functionally equal
networks with different hidden structure (e.g. different depth) generally keep different
normal forms; :func:`relulab.logic.derive` handles them by flattening.

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> from relulab.symmetry import random_symmetry
    >>> from relulab.logic import to_formula
    >>> net = Network([[[1, -2], [3, 1]], [[1, -1]]], [[1, 0], [0]]).exact()
    >>> a = normal_form(to_formula(net, method="rescale")).graph
    >>> b = normal_form(to_formula(random_symmetry(net, 3), method="rescale")).graph
    >>> a.same(b)
    True
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction

from ..errors import is_int_at_least
from ..results import Result
from .formula import ONE, ZERO, Formula, FormulaError, algebra_of, substitute, var
from .graph import Node, SubstitutionGraph, hinted_node
from .rewrites import Step, collapse_layer, expand_layer, node_rewrite
from .simplify import fingerprint, simplify_until
from .truncated import sigma, truncated_affine, weights_algebra

__all__ = ["normal_form", "NormalFormResult", "relabel_last"]

_MAX_SWEEPS = 10


@dataclass(frozen=True, eq=False)
class NormalFormResult(Result):
    """``graph``: the normal form; ``steps``: the local operations that reach it from the
    input graph; ``sweeps``: how many sweeps it took; ``partial``: the time limit stopped
    it (``graph`` is then where the steps got to, not the normal form).

    Example:
        >>> from relulab import Network
        >>> from relulab.logic import to_formula
        >>> r = normal_form(to_formula(Network([[[1, 1]], [[1]]], [[-1], [0]]).exact()))
        >>> r.sweeps >= 1, len(r.graph.layers)
        (True, 2)
    """

    graph: SubstitutionGraph
    steps: tuple[Step, ...]
    sweeps: int
    _graphs: tuple[SubstitutionGraph, ...] = ()
    partial: bool = False


def _saturated(w: tuple[Fraction, ...], b: Fraction) -> Fraction | None:
    """The value of ``σ(w·y + b)`` when it is the same (0 or 1) on all of [0, 1]^n."""
    lo = b + sum((v for v in w if v < 0), Fraction(0))
    hi = b + sum((v for v in w if v > 0), Fraction(0))
    if hi <= 0:
        return Fraction(0)
    if lo >= 1:
        return Fraction(1)
    return None


def _canonical_node(node: Node, deadline: float | None = None) -> tuple[Node, Fraction | None]:
    """The canonical node and, when its truth function is a constant, that constant.
    Simplification stops at ``deadline`` (a ``time.monotonic()`` value) with an equal
    formula (normal_form's timeout ran 25.8 s for 2 s through it)."""
    if node.affine is not None:
        w, b = node.affine
        c = sigma(b) if all(v == 0 for v in w) else _saturated(w, b)
        if c is not None:
            # a dead (or saturated) node: the constant, also when some weights are nonzero
            return hinted_node(truncated_affine([], c, _alg(node, [c])), (tuple(Fraction(0) for _ in w), c)), c
        phi = truncated_affine(w, b, _alg(node, [*w, b]))
        return hinted_node(phi, (w, b)), None
    phi = simplify_until(node.formula, deadline)[0]
    if phi is ZERO:
        return Node(phi), Fraction(0)
    if phi is ONE:
        return Node(phi), Fraction(1)
    return Node(phi), None


def _alg(node: Node, values: list) -> str:
    return weights_algebra(values, real=algebra_of(node.formula) == "Riesz MV")


def _renamed_node(node: Node, images: list[Formula], pos: list[int | None],
                  consts: list[Fraction | None], width: int) -> Node:
    """``node`` read through the canonical inner layer: variables renamed (constants
    substituted); its affine data merged accordingly."""
    phi = substitute(node.formula, images)
    if node.affine is None:
        return Node(phi)
    w, b = node.affine
    nw = [Fraction(0)] * width
    nb = b
    for i, wi in enumerate(w):
        if wi == 0:
            continue
        if pos[i] is not None:
            nw[pos[i]] += wi
        elif consts[i] is not None:
            nb += wi * consts[i]
        else:
            # The formula ignores a non-constant node that w weighs: then σ(w·y + b) never
            # leaves 0 or 1 on the cube (else moving y_i would change it), i.e. the node is
            # a constant; without that proof the affine data cannot be carried over.
            c = _saturated(w, b)
            return Node(phi) if c is None else hinted_node(phi, (tuple([Fraction(0)] * width), c))
    return hinted_node(phi, (tuple(nw), nb))


def relabel_last(g: SubstitutionGraph) -> tuple[SubstitutionGraph, Step | None]:
    """Merge equal last-layer nodes, move constant ones into the offset, drop unread ones
    and sort the rest (the readout is adjusted so the outputs are unchanged).

    Example:
        >>> from relulab.logic import SubstitutionGraph, Node, parse
        >>> phi = parse("x1 ⊙ x2")
        >>> g = SubstitutionGraph(2, [[Node(phi), Node(phi)]], [[1, 1]], [0])
        >>> h, step = relabel_last(g)
        >>> len(h.layers[-1]), h.readout, step.op
        (1, ((Fraction(2, 1),),), 'readout')
    """
    last = g.layers[-1]
    consts = [_canonical_node(n)[1] if n.formula in (ZERO, ONE) or n.affine is not None else None
              for n in last]
    used = [any(row[j] != 0 for row in g.readout) for j in range(len(last))]
    keep: dict[int, Node] = {}
    for j, n in enumerate(last):
        if consts[j] is None and used[j]:
            keep.setdefault(id(n.formula), n)
    fp: dict[int, str] = {}
    order = sorted(keep.values(), key=lambda n: fingerprint(n.formula, fp))
    if not order:
        order = [hinted_node(ZERO, (tuple([Fraction(0)] * (len(g.layers[-2]) if len(g.layers) > 1 else g.n_inputs)),
                             Fraction(0)))]
    where = {id(n.formula): t for t, n in enumerate(order)}
    C = [[Fraction(0)] * len(order) for _ in g.readout]
    off = list(g.offset)
    for i, row in enumerate(g.readout):
        for j, cij in enumerate(row):
            if cij == 0:
                continue
            if consts[j] is not None:
                off[i] += cij * consts[j]
            else:
                C[i][where[id(last[j].formula)]] += cij
    new = g.replace([*g.layers[:-1], tuple(order)], C, off)
    if new.same(g):
        return g, None
    return new, Step("readout", len(g.layers) - 1, None,
                     "equal last-layer nodes merged, constants moved to the offset, nodes sorted "
                     "(the same outputs C y + c)", _data=(new.layers[-1:], new.readout, new.offset))


def normal_form(g: SubstitutionGraph, *, max_sweeps: int = _MAX_SWEEPS,
                timeout: float | None = None) -> NormalFormResult:
    """The normal form of ``g`` and the derivation reaching it (see the module docstring);
    ``timeout`` (seconds, None: none) ends it early with ``partial=True``.

    Example:
        >>> from relulab import Network
        >>> from relulab.logic import to_formula
        >>> a = to_formula(Network([[[1, 1], [1, 1]], [[1, 0]]], [[-1, -1], [0]]).exact())
        >>> b = to_formula(Network([[[1, 1]], [[1]]], [[-1], [0]]).exact())
        >>> normal_form(a).graph.to_dict() == normal_form(b).graph.to_dict()
        True
    """
    if not isinstance(g, SubstitutionGraph):
        raise FormulaError(f"normal_form: expected a SubstitutionGraph (the result of to_formula), "
                           f"got {type(g).__name__}; pass to_formula(net)")
    if not is_int_at_least(max_sweeps, 1):
        raise FormulaError(f"normal_form: max_sweeps must be an integer >= 1, got {max_sweeps!r}")
    if timeout is not None and not (isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
                                    and timeout >= 0):
        raise FormulaError(f"normal_form: timeout must be seconds (>= 0) or None, got {timeout!r}")
    deadline = None if timeout is None else time.monotonic() + timeout
    steps: list[Step] = []
    graphs: list[SubstitutionGraph] = [g]

    def late() -> bool:
        return deadline is not None and time.monotonic() > deadline

    def push(res: tuple[SubstitutionGraph, Step | None]) -> SubstitutionGraph:
        new, st = res
        if st is not None:
            steps.append(st)
            graphs.append(new)
        return new

    sweeps = 0
    while sweeps < max_sweeps:
        sweeps += 1
        start = g
        for k in range(len(g.layers)):
            # 1. canonical formula of every node of layer k
            consts: list[Fraction | None] = []
            for j, node in enumerate(g.layers[k]):
                if late():
                    return NormalFormResult(g, tuple(steps), sweeps, tuple(graphs), partial=True)
                cn, c = _canonical_node(node, deadline)
                consts.append(c)
                if cn.formula is not node.formula:
                    g = push(node_rewrite(g, k, j, cn.formula, check="trusted",
                                          justification=_why(node)))
            if k == len(g.layers) - 1:
                break
            # 2. collapse + expand with the canonical inner layer
            layer = g.layers[k]
            read = set()
            for n in g.layers[k + 1]:
                from .formula import variables

                read.update(variables(n.formula))
            fp: dict[int, str] = {}
            uniq: dict[int, Node] = {}
            for j, n in enumerate(layer):
                if consts[j] is None and (j + 1) in read:
                    uniq.setdefault(id(n.formula), n)
            inner = sorted(uniq.values(), key=lambda n: fingerprint(n.formula, fp))
            if not inner:
                w = g.n_inputs if k == 0 else len(g.layers[k - 1])
                inner = [hinted_node(ZERO, (tuple([Fraction(0)] * w), Fraction(0)))]
            pos_of = {id(n.formula): t for t, n in enumerate(inner)}
            pos = [None if consts[j] is not None or id(n.formula) not in pos_of else pos_of[id(n.formula)]
                   for j, n in enumerate(layer)]
            images = [layer[j].formula if pos[j] is None else var(pos[j] + 1) for j in range(len(layer))]
            outer = [_renamed_node(n, images, pos, consts, len(inner)) for n in g.layers[k + 1]]
            if len(inner) == len(layer) and all(a is b for a, b in zip(inner, layer, strict=True)):
                continue  # already canonical at this boundary
            if late():
                return NormalFormResult(g, tuple(steps), sweeps, tuple(graphs), partial=True)
            g = push(collapse_layer(g, k))
            g = push(expand_layer(g, k, inner, outer))
        g = push(relabel_last(g))
        if g.same(start):
            break
    return NormalFormResult(g, tuple(steps), sweeps, tuple(graphs))


def _why(node: Node) -> str:
    if node.affine is not None:
        return "both formulas realise the same truncated affine map σ(w·y + b) (by construction)"
    return "by the MV axioms (simplify)"
