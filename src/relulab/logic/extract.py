"""The extraction algorithm: a ReLU network on [0, 1]^n -> a substitution graph.

Every hidden neuron ``relu(z)``, ``z = w·y + b`` with ``y`` the previous layer's node
values in [0, 1], is turned into node(s) with values in [0, 1] using the exact interval
bounds ``lo <= z <= hi`` of ``z`` over the unit cube of ``y``:

* ``"rescale"``: one node ``σ(z / hi) = relu(z) / hi`` (``z <= hi`` so the truncation at 1
  never bites); the next layer reads ``relu(z) = hi · node``.  A neuron with ``hi <= 0``
  is dead and gets no node.  Weights become rational (divisible MV) or real (Riesz MV).
* ``"staircase"`` (integer networks): ``relu(z) = sum_{t=0}^{hi-1} σ(z - t)`` for integer
  ``hi``: ``hi`` nodes with integer weights, so the whole graph stays in MV proper.
  Nodes that are constantly 1 (``lo - t >= 1``) fold into the next layer's constant.

The outputs ``f_i`` with bounds ``[L_i, U_i]`` become the last layer: ``σ((f_i - L_i) /
(U_i - L_i))`` with readout ``f_i = L_i + (U_i - L_i) · node`` ("rescale"), or
``U_i - L_i`` unit steps with readout ``f_i = L_i + sum nodes`` ("staircase").

Each node formula is the MV term of its truncated affine map
(:func:`relulab.logic.truncated.truncated_affine`).

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> net = Network([[[1, 1], [1, -1]], [[1, 1]]], [[-1, 0], [0]]).exact()
    >>> g = to_formula(net)
    >>> g.method, g.algebra, g.widths
    ('staircase', 'MV', (2, 2))
    >>> print(g.to_text())
    L0.1 = x1 ⊙ x2
    L0.2 = x1 ⊙ ¬x2
    L1.1 = L0.2 ⊕ L0.1
    L1.2 = L0.1 ⊙ L0.2
    f1 = 1*L1.1 + 1*L1.2
"""

from __future__ import annotations

import math
import time
from fractions import Fraction
from typing import Any

import numpy as np

from ..domain import Box, Polytope, as_domain
from ..limits import ResourceLimitError, memory_budget
from ..network import Network
from ._inputs import exact_float_bounds
from .formula import ZERO, FormulaError
from .graph import Node, SubstitutionGraph, hinted_node
from .truncated import (
    NODE_BYTES,
    STAIRCASE_DEADLINE,
    StaircaseOutOfTime,
    _truncated_counted,
    staircase_nodes,
    weights_algebra,
)

__all__ = ["to_formula", "ExtractionError", "METHODS"]

METHODS = ("auto", "rescale", "staircase")

# "auto" uses the staircase (pure MV) only while the graph stays this small.
STAIRCASE_MAX_NODES = 64
# An explicit staircase is refused beyond this much work: the sum over its nodes of
# 1 + the node's |weights| + |bias| (each node's formula grows with its weights: one
# 2-input neuron with weight 100 is 204 nodes, 707,712 formula symbols, 5 s; weight 1e5
# ran for minutes and 15 GB).  The estimate of that example is about 21,000.
STAIRCASE_MAX_WORK = 50_000
# A rescaled node is one truncated affine map sigma(w x + b) with |w| summing to about
# (its weights / its range on the cube): its formula has that many unit atoms m and the
# staircase over them costs m^2 steps (m = 10,000 took 7 s; relu(x - 0.999999999) ran
# out of memory).  The extraction is refused once the sum of m^2 over the nodes passes
# this budget (about 7 s).
RESCALE_MAX_WORK = 100_000_000


class ExtractionError(FormulaError):
    """The network cannot be turned into a substitution graph as asked."""


class _TooBig(Exception):
    """The staircase form is larger than the limit given to :func:`_extract`."""


def _unit_or_error(net: Any, domain: Any) -> tuple[Network, Any]:
    """The Network, and its input box: the stated ``domain`` or the unit cube.  A model
    that states its own input ranges (an NNet model's ``input_min``/``input_max``) must
    lie on [0, 1]^n unless a domain is given."""
    if isinstance(net, Network):
        return net, domain
    lo = getattr(net, "input_min", None)
    hi = getattr(net, "input_max", None)
    if lo is None or not hasattr(net, "to_network"):
        raise ExtractionError(f"to_formula: expected a Network, got {type(net).__name__}")
    lo = np.asarray(lo, dtype=float)
    hi = np.asarray(hi, dtype=float)
    base = net.to_network()
    if domain is None and not (np.all(lo == 0) and np.all(hi == 1)):
        raise ExtractionError(
            f"to_formula: the model's inputs range over [{lo.min():g}, {hi.max():g}], not [0, 1]^n; "
            "pass domain=Box(lo, hi) to rescale them onto the unit cube"
        )
    return base, domain


def _box_of(domain: Any, d: int) -> tuple[list[Fraction], list[Fraction]] | None:
    if domain is None:
        return None
    exact_float_bounds(domain, "to_formula")
    dom = as_domain(domain, d)
    if isinstance(dom, Polytope) and not isinstance(dom, Box):
        raise ExtractionError("to_formula: the domain must be a box (it is mapped affinely onto [0, 1]^n)")
    lo = [Fraction(float(v)) for v in dom.lo]
    hi = [Fraction(float(v)) for v in dom.hi]
    return lo, hi


def _bounds(w: list[Fraction], b: Fraction) -> tuple[Fraction, Fraction]:
    lo = b + sum((v for v in w if v < 0), Fraction(0))
    hi = b + sum((v for v in w if v > 0), Fraction(0))
    return lo, hi


def _matvec(W: list[list[Fraction]], M: list[list[Fraction]], e0: list[Fraction],
            b: list[Fraction]) -> tuple[list[list[Fraction]], list[Fraction]]:
    """``W @ M`` and ``W @ e0 + b`` on lists of Fractions (M may have zero columns)."""
    n_cols = len(M[0]) if M else 0
    out_W, out_b = [], []
    for row, bi in zip(W, b, strict=True):
        acc = [Fraction(0)] * n_cols
        c = bi
        for wij, Mj, ej in zip(row, M, e0, strict=True):
            if wij == 0:
                continue
            for t, v in enumerate(Mj):
                if v != 0:
                    acc[t] += wij * v
            c += wij * ej
        out_W.append(acc)
        out_b.append(c)
    return out_W, out_b


def to_formula(net: Any, domain: Any = None, *, method: str = "auto") -> SubstitutionGraph:
    """The substitution graph of ``net`` on the unit cube (or on ``domain``, a box mapped
    affinely onto [0, 1]^n).

    Args:
        net: a :class:`~relulab.Network` (skip connections are folded first), taken to
            act on [0, 1]^n; a model that states other input ranges needs ``domain``.
        domain: None (the unit cube), a :class:`~relulab.Box` or ``(lo, hi)``.
        method: ``"auto"`` (staircase for small integer networks, else rescale),
            ``"rescale"`` or ``"staircase"`` (integer weights only).

    The returned graph's ``algebra`` says which algebra its formulas need: ``"MV"``
    (integer weights), ``"divisible MV"`` (rational weights of an exact network) or
    ``"Riesz MV"`` (real weights: a float network's weights are the scalars).

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1, 1]], [[1]]], [[-1], [0]]).exact()
        >>> g = to_formula(net)
        >>> str(g.layers[0][0].formula), g.algebra, g.method
        ('x1 ⊙ x2', 'MV', 'staircase')
    """
    return formula_graph(net, domain, method, None)


class OutOfTime(ExtractionError):
    """:func:`formula_graph` passed its deadline."""


def formula_graph(net: Any, domain: Any, method: str, deadline: float | None) -> SubstitutionGraph:
    """:func:`to_formula` that raises :class:`OutOfTime` once ``time.monotonic()`` passes
    ``deadline`` (checked between neurons and at every level of a neuron's staircase;
    None: no deadline).

    Example:
        >>> from relulab import Network
        >>> formula_graph(Network([[[1, 1]], [[1]]], [[-1], [0]]).exact(), None, "auto", None).widths
        (1, 1)
    """
    if method not in METHODS:
        raise ExtractionError(f"to_formula: unknown method {method!r}; choose one of {', '.join(METHODS)}")
    token = STAIRCASE_DEADLINE.set(deadline)
    try:
        return _formula_graph(net, domain, method, deadline)
    except StaircaseOutOfTime as e:
        raise OutOfTime(f"to_formula: {e}") from None
    finally:
        STAIRCASE_DEADLINE.reset(token)


def _formula_graph(net: Any, domain: Any, method: str, deadline: float | None) -> SubstitutionGraph:
    net, domain = _unit_or_error(net, domain)
    real = not net.is_exact
    exact = net.exact().without_skip()   # folded in Fractions: a float fold rounds
    d = exact.input_dim
    box = _box_of(domain, d)
    Ws = [[list(r) for r in W] for W in exact.weights]
    bs = [list(b) for b in exact.biases]
    if box is not None:
        lo, hi = box
        W1 = Ws[0]
        bs[0] = [bi + sum((w * l for w, l in zip(row, lo, strict=True)), Fraction(0))
                 for row, bi in zip(W1, bs[0], strict=True)]
        Ws[0] = [[w * (h - l) for w, l, h in zip(row, lo, hi, strict=True)] for row in W1]
    integer = weights_algebra([v for W in Ws for r in W for v in r] + [v for b in bs for v in b]) == "MV"
    if method == "staircase" and not integer:
        raise ExtractionError("to_formula: the staircase method needs integer weights and biases "
                              "(after mapping the domain onto [0, 1]^n); use method='rescale'")
    alg = "MV" if integer else ("Riesz MV" if real else "divisible MV")
    if method == "auto" and integer:
        try:
            layers, C, c = _extract(Ws, bs, d, "staircase", alg, STAIRCASE_MAX_NODES, deadline)
            method_used = "staircase"
        except _TooBig:
            layers, C, c = _extract(Ws, bs, d, "rescale", "divisible MV", None, deadline)
            method_used = "rescale"
    else:
        method_used = "rescale" if method == "auto" else method
        try:
            layers, C, c = _extract(Ws, bs, d, method_used, alg if method_used == "staircase" or not integer
                                    else "divisible MV", None, deadline)
        except _TooBig as e:
            raise ExtractionError(f"to_formula: {e}; use method='rescale' (one node per neuron)") from None
    dom = None if box is None else (tuple(box[0]), tuple(box[1]))
    return SubstitutionGraph(d, layers, C, c, method_used, dom)


def _extract(Ws: list, bs: list, d: int, method: str, alg: str, max_nodes: int | None,
             deadline: float | None = None):
    one, zero = Fraction(1), Fraction(0)
    # Each unit of the previous layer (input or neuron) as an affine map of the nodes.
    M = [[one if i == j else zero for j in range(d)] for i in range(d)]
    e0 = [zero] * d
    layers: list[tuple[Node, ...]] = []
    n_total = 0
    work = 0

    rescale_work = 0
    # The formulas of all nodes together against the memory budget as it stood when the
    # extraction began (the budget is half of what is available *now*, so a per-node check
    # alone lets a deep narrow net grow past it: 1,797 layers of width 3 took 1.9 GB and
    # were refused only when memory was nearly gone, naming a small node)
    budget = memory_budget()
    total_nodes = 0

    def charge_total(ww: tuple, bb: Fraction, where: str) -> Node:
        """Count the node's formula against the total budget, then build it."""
        nonlocal total_nodes
        n = staircase_nodes(ww, bb)
        total_nodes += n
        if NODE_BYTES * total_nodes > budget:
            raise ResourceLimitError(
                f"to_formula: the formulas up to {where} have about {total_nodes:.3g} formula nodes, "
                f"{NODE_BYTES * total_nodes / 2**30:.3g} GB; the memory budget is {budget / 2**30:.3g} GB "
                "(set RELULAB_MEMORY_GB to change it)")
        return hinted_node(_truncated_counted(list(ww), bb, alg, n), (ww, bb))

    def check_atoms(ww: tuple, where: str) -> None:
        # refuse before building: a rescaled node's staircase costs (its unit atoms)^2
        nonlocal rescale_work
        m = sum(math.ceil(abs(v)) for v in ww) + 1
        rescale_work += m * m
        if rescale_work > RESCALE_MAX_WORK:
            raise ExtractionError(
                f"to_formula: {where} is steep for its range on the cube (weights / range up to "
                f"{float(max(abs(v) for v in ww)):.3g}, {m} unit atoms): the formulas need about "
                f"{rescale_work:.3g} staircase steps, over the limit of {RESCALE_MAX_WORK:.0e}; "
                "use a smaller domain around the region of interest")

    def charge(steps: int, w: Any, bb: Fraction, where: str) -> None:
        # refuse before building: the node loop alone is `steps` long
        nonlocal work
        work += steps * (1 + sum(abs(v) for v in w) + abs(bb))
        if work > STAIRCASE_MAX_WORK:
            raise _TooBig(f"the staircase form needs {steps} nodes for {where} (weights up to "
                          f"{max((abs(v) for v in w), default=0)}), over the size limit "
                          f"({work} > {STAIRCASE_MAX_WORK} weight-units)")

    for k, (W, b) in enumerate(zip(Ws[:-1], bs[:-1], strict=True)):
        Weff, beff = _matvec(W, M, e0, b)
        nodes: list[Node] = []
        cols: list[tuple[int, Fraction]] = []  # (neuron, coefficient) per node
        new_e0 = [zero] * len(W)
        for j, (w, bb) in enumerate(zip(Weff, beff, strict=True)):
            if deadline is not None and time.monotonic() > deadline:
                raise OutOfTime(f"to_formula: the time limit ended the extraction at layer {k + 1}")
            lo, hi = _bounds(w, bb)
            if hi <= 0:
                continue  # dead: relu(z) = 0 on the cube
            if method == "rescale":
                ww = tuple(v / hi for v in w)
                check_atoms(ww, f"neuron {j + 1} of layer {k + 1}")
                nodes.append(charge_total(ww, bb / hi, f"neuron {j + 1} of layer {k + 1}"))
                cols.append((j, hi))
                continue
            # steps t with lo - t >= 1 are 1 on the whole cube: constants, no node
            full = 0 if lo < 1 else min(int(hi), math.floor(lo - 1) + 1)
            charge(int(hi) - full, w, bb, f"neuron {j + 1} of layer {k + 1}")
            new_e0[j] += full
            for t in range(full, int(hi)):
                ww = tuple(w)
                nodes.append(charge_total(ww, bb - t, f"neuron {j + 1} of layer {k + 1}"))
                cols.append((j, one))
            if max_nodes is not None and n_total + len(nodes) > max_nodes:
                raise _TooBig
        n_total += len(nodes)
        if not nodes:  # every neuron dead or constant: keep one constant-0 node
            nodes.append(hinted_node(ZERO, (tuple([zero] * len(Weff[0]) if Weff else []), zero)))
            cols.append((0, zero))
        layers.append(tuple(nodes))
        M = [[zero] * len(nodes) for _ in range(len(W))]
        for t, (j, coef) in enumerate(cols):
            M[j][t] = coef
        e0 = new_e0
    Weff, beff = _matvec(Ws[-1], M, e0, bs[-1])
    nodes, C_cols, offset = [], [], []
    for i, (w, bb) in enumerate(zip(Weff, beff, strict=True)):
        if deadline is not None and time.monotonic() > deadline:
            raise OutOfTime(f"to_formula: the time limit ended the extraction at output {i + 1}")
        lo, hi = _bounds(w, bb)
        offset.append(lo)
        if hi == lo:
            continue  # a constant output
        if method == "rescale":
            span = hi - lo
            ww = tuple(v / span for v in w)
            check_atoms(ww, f"output {i + 1}")
            nodes.append(charge_total(ww, (bb - lo) / span, f"output {i + 1}"))
            C_cols.append((i, span))
        else:
            charge(int(hi - lo), w, bb, f"output {i + 1}")
            for t in range(int(hi - lo)):
                ww = tuple(w)
                nodes.append(charge_total(ww, bb - lo - t, f"output {i + 1}"))
                C_cols.append((i, one))
            if max_nodes is not None and n_total + len(nodes) > max_nodes:
                raise _TooBig
    if not nodes:
        nodes.append(hinted_node(ZERO, (tuple([zero] * len(Weff[0])), zero)))
        C_cols.append((0, zero))
    C = [[zero] * len(nodes) for _ in range(len(Weff))]
    for t, (i, coef) in enumerate(C_cols):
        C[i][t] = coef
    layers.append(tuple(nodes))
    return tuple(layers), C, offset
