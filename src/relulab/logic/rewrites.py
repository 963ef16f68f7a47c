"""The three local operations on substitution graphs; each keeps the truth function.

* :func:`node_rewrite` replaces one node's formula by an equivalent formula in the same
  variables (by the axioms: a rule such as :func:`~relulab.logic.simplify`, or any
  formula whose truth function is proved equal, see ``check``);
* :func:`collapse_layer` substitutes layer ``k`` into layer ``k + 1`` (the two layers
  become one; purely syntactic);
* :func:`expand_layer` splits layer ``k`` into an inner and an outer layer whose
  substitution gives back exactly the old formulas (checked syntactically; the default
  inner layer is the identity, which pads the graph by one layer).

Every operation returns a new graph and a :class:`Step` recording what was done, so a
derivation is a list of steps that can be replayed (:func:`apply_step`).

Example:
    >>> from relulab import Network
    >>> from relulab.logic import to_formula
    >>> g = to_formula(Network([[[1, 1], [1, -1]], [[1, 1]]], [[-1, 0], [0]]).exact())
    >>> h, step = collapse_layer(g, 0)
    >>> h.widths, step.op
    ((2,), 'collapse')
    >>> str(h.layers[0][1].formula)
    'x1 ⊙ x2 ⊙ (x1 ⊙ ¬x2)'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..errors import is_int_at_least
from ..results import Result
from .formula import Formula, FormulaError, n_vars, substitute, var
from .graph import GraphError, Node, SubstitutionGraph, hinted_node
from .printing import to_text, tree_size

__all__ = ["Step", "node_rewrite", "collapse_layer", "expand_layer", "apply_step",
           "RewriteError", "formulas_equal"]


class RewriteError(GraphError):
    """A local operation was asked for something that would change the truth function."""


@dataclass(frozen=True, eq=False)
class Step(Result):
    """One local operation: ``op`` is ``"rewrite"``, ``"collapse"`` or ``"expand"``;
    ``layer`` (and ``index`` for a rewrite); ``justification`` says why the truth
    function is unchanged; ``_data`` holds what :func:`apply_step` needs.

    Example:
        >>> from relulab import Network
        >>> from relulab.logic import to_formula
        >>> g = to_formula(Network([[[1, 1]], [[1]]], [[-1], [0]]).exact())
        >>> step = expand_layer(g, 0)[1]
        >>> step.op, step.layer
        ('expand', 0)
    """

    op: str
    layer: int
    index: int | None = None
    justification: str = ""
    before: str = ""
    after: str = ""
    _data: Any = None


def formulas_equal(a: Formula, b: Formula, n: int) -> bool:
    """Exact decision of ``a == b`` as truth functions on [0, 1]^n (compiled to networks
    and compared by :func:`relulab.logic.equal_on_cube`; "unknown", and "equal" from the
    float verifier (not exact), count as not proved).

    Example:
        >>> from relulab.logic import parse
        >>> formulas_equal(parse("x1 -> x2"), parse("¬x1 ⊕ x2"), 2), formulas_equal(parse("x1"), parse("x2"), 2)
        (True, False)
    """
    return a is b or proved_equal(compare_formulas(a, b, n))


def compare_formulas(a: Formula, b: Formula, n: int, timeout: float | None = 60.0) -> Any:
    """:func:`relulab.logic.equal_on_cube` of the two formulas compiled to networks on
    ``n`` inputs, within ``timeout`` seconds (its :class:`relulab.logic.EqualityResult`).

    Example:
        >>> from relulab.logic import parse
        >>> compare_formulas(parse("x1"), parse("x2"), 2, timeout=5).status
        'different'
    """
    from .compile import to_network
    from .equality import equal_on_cube

    return equal_on_cube(to_network(a, max(n, 1)), to_network(b, max(n, 1)), timeout=timeout)


def proved_equal(r: Any) -> bool:
    """Whether an :class:`relulab.logic.EqualityResult` proves equality: the float
    verifier's "equal" is up to its tolerance (a spike of height 2^-47 passed), so only
    an exact "equal" counts.

    Example:
        >>> from relulab.logic import EqualityResult
        >>> proved_equal(EqualityResult("equal", "regions", True, "")), proved_equal(EqualityResult("equal", "verifier", False, ""))
        (True, False)
    """
    return r.status == "equal" and r.exact


def _check_index(g: SubstitutionGraph, layer: int, index: int | None = None) -> None:
    if not isinstance(g, SubstitutionGraph):
        raise GraphError(f"expected a SubstitutionGraph (the result of to_formula), got {type(g).__name__}")
    for name, v in (("layer", layer), ("index", index)):
        if v is not None and not is_int_at_least(v, 0):
            raise GraphError(f"{name} must be an integer >= 0, got {v!r}")
    if not 0 <= layer < len(g.layers):
        raise GraphError(f"no layer {layer} (the graph has {len(g.layers)})")
    if index is not None and not 0 <= index < len(g.layers[layer]):
        raise GraphError(f"layer {layer} has no node {index} (it has {len(g.layers[layer])})")


def _width_before(g: SubstitutionGraph, layer: int) -> int:
    return g.n_inputs if layer == 0 else len(g.layers[layer - 1])


def node_rewrite(g: SubstitutionGraph, layer: int, index: int,
                 new: Formula | Callable[[Formula], Formula], *,
                 check: str = "exact", justification: str = "") -> tuple[SubstitutionGraph, Step]:
    """Replace node ``(layer, index)``'s formula.

    Args:
        new: the new formula, or a rule (a function of the old formula) that rewrites by
            the axioms, e.g. :func:`relulab.logic.simplify`.
        check: ``"exact"`` proves the two truth functions equal (see
            :func:`formulas_equal`) and raises :class:`RewriteError` otherwise;
            ``"trusted"`` skips the proof (for rules that rewrite by the axioms or
            formulas built to equal the old one; ``justification`` then says why).

    Example:
        >>> from relulab.logic import SubstitutionGraph, Node, parse
        >>> g = SubstitutionGraph(2, [[Node(parse("¬¬x1 ⊕ x2"))]], [[1]], [0])
        >>> g2, step = node_rewrite(g, 0, 0, parse("x1 ⊕ x2"))
        >>> str(g2.layers[0][0].formula), step.justification
        ('x1 ⊕ x2', 'truth functions proved equal (exact check)')
    """
    _check_index(g, layer, index)
    old = g.layers[layer][index]
    phi = new(old.formula) if callable(new) else new
    if not isinstance(phi, Formula):
        raise RewriteError(f"node_rewrite: expected a Formula, got {type(phi).__name__}")
    w = _width_before(g, layer)
    if n_vars(phi) > w:
        raise RewriteError(f"node_rewrite: the new formula uses x{n_vars(phi)} but layer {layer} reads {w} value(s)")
    if check == "exact":
        if not formulas_equal(old.formula, phi, w):
            raise RewriteError(f"node_rewrite: layer {layer} node {index}: the new formula has a different truth function")
        why = justification or "truth functions proved equal (exact check)"
    elif check == "trusted":
        why = justification or ("by the axioms: " + getattr(new, "__name__", "rule"))
    else:
        raise RewriteError(f"node_rewrite: unknown check {check!r} (exact or trusted)")
    layers = [list(x) for x in g.layers]
    layers[layer][index] = hinted_node(phi, old.affine)
    step = Step("rewrite", layer, index, why, _short(old.formula), _short(phi), _data=(old.formula, phi))
    return g.replace(layers), step


def collapse_layer(g: SubstitutionGraph, layer: int) -> tuple[SubstitutionGraph, Step]:
    """Substitute layer ``layer`` into layer ``layer + 1``; the graph loses one layer.

    Example:
        >>> from relulab.logic import SubstitutionGraph, Node, parse
        >>> g = SubstitutionGraph(2, [[Node(parse("x1 ⊙ x2"))], [Node(parse("¬x1"))]], [[1]], [0])
        >>> g2, step = collapse_layer(g, 0)
        >>> len(g2.layers), str(g2.layers[0][0].formula)
        (1, '¬(x1 ⊙ x2)')
    """
    _check_index(g, layer)
    if layer + 1 >= len(g.layers):
        raise GraphError(f"collapse_layer: layer {layer} is the last layer; nothing to collapse into")
    inner = [n.formula for n in g.layers[layer]]
    merged = tuple(Node(substitute(n.formula, inner)) for n in g.layers[layer + 1])
    layers = [*g.layers[:layer], merged, *g.layers[layer + 2:]]
    step = Step("collapse", layer, None, "substitution (the composite is the same function)",
                _data=tuple(g.layers[layer]))
    return g.replace(layers), step


def expand_layer(g: SubstitutionGraph, layer: int, inner: Sequence[Formula | Node] | None = None,
                 outer: Sequence[Formula | Node] | None = None) -> tuple[SubstitutionGraph, Step]:
    """Split layer ``layer`` into ``inner`` (in the variables of the layer below) and
    ``outer`` (in the variables of ``inner``), requiring that substituting ``inner`` into
    ``outer[j]`` gives exactly the old formula of node ``j``.  Without arguments the
    inner layer is the identity (``x_1 .. x_w``), which adds one layer.

    Example:
        >>> from relulab.logic import SubstitutionGraph, Node, parse
        >>> g = SubstitutionGraph(2, [[Node(parse("x1 ⊙ x2"))]], [[1]], [0])
        >>> g2, step = expand_layer(g, 0)
        >>> len(g2.layers), [str(n.formula) for n in g2.layers[0]]
        (2, ['x1', 'x2'])
    """
    _check_index(g, layer)
    old = g.layers[layer]
    w = _width_before(g, layer)
    if inner is None and outer is None:
        one, zero = Fraction(1), Fraction(0)
        inner_nodes = [hinted_node(var(i), (tuple(one if j == i - 1 else zero for j in range(w)), zero))
                       for i in range(1, w + 1)]
        outer_nodes = list(old)
    elif inner is None or outer is None:
        raise RewriteError("expand_layer: give both inner and outer, or neither (identity layer)")
    else:
        inner_nodes = [n if isinstance(n, Node) else Node(n) for n in inner]
        outer_nodes = [n if isinstance(n, Node) else Node(n) for n in outer]
    if len(outer_nodes) != len(old):
        raise RewriteError(f"expand_layer: {len(outer_nodes)} outer formulas for {len(old)} nodes")
    if not inner_nodes:
        raise RewriteError("expand_layer: the inner layer is empty")
    images = [n.formula for n in inner_nodes]
    for j, (o, n) in enumerate(zip(outer_nodes, old, strict=True)):
        try:
            composite = substitute(o.formula, images)
        except FormulaError as e:
            raise RewriteError(f"expand_layer: outer node {j}: {e}") from None
        if composite is not n.formula:
            raise RewriteError(f"expand_layer: outer node {j} composed with the inner layer is not the "
                               f"old formula of node {j}")
    layers = [*g.layers[:layer], tuple(inner_nodes), tuple(outer_nodes), *g.layers[layer + 1:]]
    step = Step("expand", layer, None, "the inner layer substituted into the outer gives the old layer",
                _data=(tuple(inner_nodes), tuple(outer_nodes)))
    return g.replace(layers), step


def apply_step(g: SubstitutionGraph, step: Step) -> SubstitutionGraph:
    """Replay ``step`` on ``g``: a collapse or expand runs its check again; a rewrite
    replays only onto the very formula it rewrote (its proof, exact or by the axioms, is
    about that formula), else :class:`RewriteError`.

    Example:
        >>> from relulab.logic import SubstitutionGraph, Node, parse
        >>> g = SubstitutionGraph(2, [[Node(parse("x1 ⊙ x2"))]], [[1]], [0])
        >>> g2, step = expand_layer(g, 0)
        >>> len(apply_step(g, step).layers) == len(g2.layers)
        True
    """
    if step.op == "rewrite":
        before, phi = step._data
        _check_index(g, step.layer, step.index)
        if g.layers[step.layer][step.index].formula is not before:
            # replayed on another graph, the step swapped in a formula of another function
            # (keeping the node's affine hint, so the graph computed two functions)
            raise RewriteError(f"apply_step: layer {step.layer} node {step.index} is not the "
                               "formula this rewrite was made on (a step of another graph?)")
        return node_rewrite(g, step.layer, step.index, phi, check="trusted",
                            justification=step.justification)[0]
    if step.op == "collapse":
        return collapse_layer(g, step.layer)[0]
    if step.op == "expand":
        inner, outer = step._data
        return expand_layer(g, step.layer, inner, outer)[0]
    raise RewriteError(f"apply_step: unknown operation {step.op!r}")


def _short(phi: Formula, limit: int = 200) -> str:
    # the tree's size, not the shared graph's: a weight p/q is a graph of O(log p) nodes
    # whose tree has about p, and printing it took all memory for p = 123456789
    t = to_text(phi, ascii=True, shared=False) if tree_size(phi) < limit else "<large formula>"
    return t if len(t) <= limit else t[: limit - 3] + "..."
