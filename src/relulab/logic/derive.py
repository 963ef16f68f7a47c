"""Derivations between equivalent networks: sequences of local operations turning one
substitution graph into the other.

Two strategies, cheapest first:

1. **normal forms**: both graphs are brought to their normal form
   (:func:`relulab.logic.normal_form`); when the normal forms are identical, the
   derivation is the first graph's steps followed by the second graph's steps reversed
   (the inverse of a collapse is an expansion and vice versa; a rewrite is undone by the
   reverse rewrite).  Rescaled, permuted and padded copies end here, with short,
   purely local derivations.
2. **flattening**: after an exact proof that the two networks are equal on the cube
   (:func:`relulab.logic.equal_on_cube`), the outputs of the first graph are re-read in the
   second's readout (one ``readout`` step), both graphs are collapsed to one layer, each
   flat formula is rewritten into the other's (node rewrites, each proved exactly; by the
   completeness theorem an axiomatic derivation exists), and the second graph's collapses
   are undone by expansions.

The answer is ``found`` (the steps, replayed from the first graph, give exactly the
second), ``not equivalent`` (only with an exact witness input where the networks differ)
or ``not found within budget`` (steps or time ran out, or an exact check stayed
undecided).  It never answers "not derivable" without a witness.

Example:
    >>> from relulab import Network
    >>> from relulab.symmetry import random_symmetry
    >>> net = Network([[[1, -2], [3, 1]], [[1, -1]]], [[1, 0], [0]]).exact()
    >>> r = derive(net, random_symmetry(net, 1))
    >>> r.status, r.strategy, r.verified
    ('found', 'normal forms', True)
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..errors import RelulabError, is_int_at_least
from ..network import Network
from ..results import Result
from .compile import to_network
from .equality import equal_on_cube
from .extract import OutOfTime, formula_graph
from .graph import SubstitutionGraph, hinted_node
from .normal_form import NormalFormResult, normal_form
from .rewrites import (
    Step,
    apply_step,
    collapse_layer,
    compare_formulas,
    expand_layer,
    node_rewrite,
    proved_equal,
)
from .truncated import truncated_affine, weights_algebra

__all__ = ["derive", "DerivationResult", "replay", "invert"]


@dataclass(frozen=True, eq=False)
class DerivationResult(Result):
    """``status``: ``"found"``, ``"not equivalent"`` or ``"not found within budget"``;
    ``steps``: the local operations; ``length``: their number; ``counts``: per kind;
    ``strategy``; ``verified``: replaying the steps from the first graph gave exactly the
    second; ``witness``: an exact input where the networks differ (``not equivalent``).

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1, 1]], [[1]]], [[-1], [0]]).exact()
        >>> r = derive(net, net)
        >>> r.status, r.verified
        ('found', True)
    """

    status: str
    strategy: str
    steps: tuple[Step, ...]
    length: int
    counts: dict
    verified: bool
    message: str
    witness: tuple | None = None
    time: float = 0.0


def _graph(obj: Any, domain: Any, deadline: float | None = None) -> SubstitutionGraph:
    if isinstance(obj, SubstitutionGraph):
        return obj
    return formula_graph(obj, domain, "rescale", deadline)


def replay(g: SubstitutionGraph, steps: tuple[Step, ...] | list[Step]) -> SubstitutionGraph:
    """Apply ``steps`` to ``g`` one after the other (checks run again).

    Example:
        >>> from relulab import Network
        >>> from relulab.logic import to_formula, expand_layer
        >>> g = to_formula(Network([[[1, 1]], [[1]]], [[-1], [0]]).exact())
        >>> g2, step = expand_layer(g, 0)
        >>> len(replay(g, [step]).layers)
        3
    """
    for st in steps:
        if not isinstance(st, Step):
            raise RelulabError(f"replay: expected Steps (from a derivation or a local operation), "
                               f"got {type(st).__name__}")
        if st.op == "readout":
            layers, C, c = st._data
            nl = len(g.layers) - 1
            new_layers = [*g.layers[:nl], *layers] if st.index is None else [*g.layers, *layers]
            g = g.replace(new_layers, C, c)
        else:
            g = apply_step(g, st)
    return g


def invert(graphs: tuple[SubstitutionGraph, ...], steps: tuple[Step, ...]) -> list[Step]:
    """The steps that lead back from ``graphs[-1]`` to ``graphs[0]`` (``graphs[i + 1]`` is
    ``steps[i]`` applied to ``graphs[i]``).

    Example:
        >>> from relulab import Network
        >>> from relulab.logic import to_formula, expand_layer
        >>> g = to_formula(Network([[[1, 1]], [[1]]], [[-1], [0]]).exact())
        >>> g2, step = expand_layer(g, 0)
        >>> back = invert((g, g2), (step,))
        >>> [s.op for s in back], len(replay(g2, back).layers)
        (['collapse'], 2)
    """
    out: list[Step] = []
    for i in range(len(steps) - 1, -1, -1):
        before, after, st = graphs[i], graphs[i + 1], steps[i]
        if st.op == "rewrite":
            old = before.layers[st.layer][st.index].formula
            out.append(node_rewrite(after, st.layer, st.index, old, check="trusted",
                                    justification="reverse of: " + st.justification)[1])
        elif st.op == "collapse":
            k = st.layer
            out.append(expand_layer(after, k, before.layers[k], before.layers[k + 1])[1])
        elif st.op == "expand":
            out.append(collapse_layer(after, st.layer)[1])
        elif st.op == "readout":
            # an appended layer (index -1) is removed; a replaced last layer is put back
            back = () if st.index is not None else before.layers[-1:]
            out.append(Step("readout", st.layer, None, "reverse of: " + st.justification,
                            _data=(back, before.readout, before.offset)))
        else:
            raise ValueError(f"cannot invert a {st.op!r} step")
    return out


def _counts(steps: list[Step]) -> dict:
    c: dict[str, int] = {}
    for s in steps:
        c[s.op] = c.get(s.op, 0) + 1
    return c


def derive(a: Network | SubstitutionGraph, b: Network | SubstitutionGraph, *, domain: Any = None,
           max_steps: int = 10_000, timeout: float = 60.0) -> DerivationResult:
    """Search a derivation turning the graph of ``a`` into the graph of ``b``.

    Args:
        a, b: networks (extracted with ``method="rescale"`` on ``domain``) or graphs.
        max_steps: the largest derivation accepted.
        timeout: seconds for the whole search (normal forms, exact checks).

    Raises:
        RelulabError: the graphs differ in their numbers of inputs or outputs, or stand
            for different input boxes (no local operation changes either).

    Example:
        >>> from relulab import Network
        >>> a = Network([[[1, 1], [1, 1]], [[1, 0]]], [[-1, -1], [0]]).exact()
        >>> b = Network([[[1, 1]], [[1]]], [[-1], [0]]).exact()
        >>> r = derive(a, b)
        >>> r.status, r.verified
        ('found', True)
    """
    t0 = time.monotonic()
    if not is_int_at_least(max_steps, 0):
        raise RelulabError(f"derive: max_steps must be an integer >= 0, got {max_steps!r}")
    if not (isinstance(timeout, (int, float)) and timeout >= 0):
        raise RelulabError(f"derive: timeout must be seconds (>= 0), got {timeout!r}")
    try:
        A, B = _graph(a, domain, t0 + timeout), _graph(b, domain, t0 + timeout)
    except OutOfTime:
        return DerivationResult("not found within budget", "normal forms", (), 0, {}, False,
                                "time budget spent extracting the graphs", None, time.monotonic() - t0)

    def done(status: str, strategy: str, steps: list[Step], msg: str, verified: bool = False,
             witness: tuple | None = None) -> DerivationResult:
        return DerivationResult(status, strategy, tuple(steps), len(steps), _counts(steps), verified,
                                msg, witness, time.monotonic() - t0)

    if A.n_inputs != B.n_inputs or A.n_outputs != B.n_outputs:
        raise RelulabError(f"derive: the graphs have {A.n_inputs} and {B.n_inputs} inputs, {A.n_outputs} and "
                           f"{B.n_outputs} outputs; a derivation needs the same numbers")
    if A.box() != B.box():
        # local operations never change the box the unit cube stands for, and the same
        # formulas mean different functions on different boxes
        raise RelulabError("derive: the graphs stand for different input boxes (their domain); "
                           "extract both on one box")
    na = normal_form(A, timeout=max(0.0, timeout - (time.monotonic() - t0)))
    nb = None if na.partial else normal_form(B, timeout=max(0.0, timeout - (time.monotonic() - t0)))
    if nb is None or nb.partial:
        return done("not found within budget", "normal forms", [], "time budget spent in the normal forms")
    if na.graph.same(nb.graph):
        steps = [*na.steps, *invert(nb._graphs, nb.steps)]
        if len(steps) > max_steps:
            return done("not found within budget", "normal forms", [],
                        f"a derivation of {len(steps)} steps exceeds max_steps={max_steps}")
        ok = replay(A, steps).same(B)
        return done("found" if ok else "not found within budget", "normal forms", steps,
                    "identical normal forms" if ok else "replay did not reach the target", ok)
    return _by_flattening(A, B, na, nb, a, b, max_steps, timeout, t0, done)


def _by_flattening(A, B, na: NormalFormResult, nb: NormalFormResult, a, b, max_steps, timeout, t0, done):

    fa = a if isinstance(a, Network) else to_network(A)
    fb = b if isinstance(b, Network) else to_network(B)
    box = None if A.domain is None else A.domain
    # the check gets what the normal forms left of the budget (it was given all of it)
    left = timeout - (time.monotonic() - t0)
    if left <= 0:
        return done("not found within budget", "flattening", [], "time budget spent in the normal forms")
    eq = equal_on_cube(fa, fb, box, timeout=left)
    if eq.status == "different":
        return done("not equivalent", "flattening", [], eq.message, witness=eq.witness)
    if eq.status != "equal":
        spent = "time budget spent; " if time.monotonic() - t0 >= timeout else ""
        return done("not found within budget", "flattening", [], f"{spent}equality not decided: {eq.message}")
    if not eq.exact:
        # the float verifier's "equal" is up to its tolerance (a spike of height 2^-47
        # passed it): no proof that a == b, so no derivation is claimed
        return done("not found within budget", "flattening", [],
                    "equality not proved exactly: " + eq.message)
    GA, GB = na.graph, nb.graph
    steps = list(na.steps)
    # Re-read A's outputs in B's readout: one node per B last-layer node.
    cols = _single_node_outputs(GB)
    if cols is None:
        return done("not found within budget", "flattening", [],
                    "the target's readout does not have one node per output (use method='rescale')")
    if GA.readout != GB.readout or GA.offset != GB.offset or GA.widths[-1] != GB.widths[-1]:
        nodes = []
        alg_real = "Riesz" in GA.algebra or "Riesz" in GB.algebra
        for col in cols:
            if col is None:  # a last-layer node nothing reads (a constant output's placeholder)
                zero = Fraction(0)
                nodes.append(hinted_node(truncated_affine([], 0), (tuple([zero] * GA.widths[-1]), zero)))
                continue
            i, s = col
            w = tuple(Fraction(v) / s for v in GA.readout[i])
            bb = (GA.offset[i] - GB.offset[i]) / s
            nodes.append(hinted_node(truncated_affine(w, bb, weights_algebra([*w, bb], alg_real)), (w, bb)))
        st = Step("readout", len(GA.layers), -1,
                  "outputs re-read in the target's readout (the networks are proved equal, so every "
                  "new node stays in [0, 1] and no truncation happens)",
                  _data=((tuple(nodes),), GB.readout, GB.offset))
        GA = replay(GA, [st])
        steps.append(st)
    # Collapse both to one layer.
    ga_steps, gb_graphs, gb_steps = [], [GB], []
    while len(GA.layers) > 1:
        GA, st = collapse_layer(GA, 0)
        ga_steps.append(st)
    G = GB
    while len(G.layers) > 1:
        G, st = collapse_layer(G, 0)
        gb_steps.append(st)
        gb_graphs.append(G)
    steps += ga_steps
    if len(steps) + len(gb_steps) * 2 + len(G.layers[0]) > max_steps:
        return done("not found within budget", "flattening", [], f"more than max_steps={max_steps} steps")
    for j, (x, y) in enumerate(zip(GA.layers[0], G.layers[0], strict=True)):
        if x.formula is y.formula:
            continue
        left = timeout - (time.monotonic() - t0)
        if left <= 0:
            return done("not found within budget", "flattening", [], "time budget spent")
        # the equality check gets what is left of the budget (its own default, 60 s, ran
        # a derive(timeout=2) for 64 s)
        if not proved_equal(compare_formulas(x.formula, y.formula, GA.n_inputs, timeout=left)):
            spent = time.monotonic() - t0 >= timeout
            return done("not found within budget", "flattening", [],
                        "time budget spent in the equality check of output node "
                        f"{j}" if spent else f"output node {j}: the flat formulas were not proved equal")
        GA, st = node_rewrite(GA, 0, j, y.formula, check="trusted",
                              justification="truth functions proved equal (exact check); the completeness "
                                            "theorem gives an axiomatic derivation")
        steps.append(st)
    steps += invert(tuple(gb_graphs), tuple(gb_steps))
    steps += invert(nb._graphs, nb.steps)
    ok = replay(A, steps).same(B)
    return done("found" if ok else "not found within budget", "flattening", steps,
                "flat formulas proved equal" if ok else "replay did not reach the target", ok)


def _single_node_outputs(g: SubstitutionGraph) -> list[tuple[int, Fraction] | None] | None:
    """For each last-layer node, the one output that reads it and the coefficient, when
    every output reads at most one node and every node feeds at most one output (None
    for a node nothing reads)."""
    cols = []
    for j in range(g.widths[-1]):
        nz = [(i, row[j]) for i, row in enumerate(g.readout) if row[j] != 0]
        if len(nz) > 1:
            return None
        cols.append(nz[0] if nz else None)
    for row in g.readout:
        if sum(1 for v in row if v != 0) > 1:
            return None
    return cols
