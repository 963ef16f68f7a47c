"""The construction algorithm: a formula or substitution graph -> an exact ReLU network.

Every value is kept as an affine expression in the inputs and in ReLU neurons; only the
non-affine MV operations create neurons, each a ReLU of an affine expression:

* ``a ⊕ b = σ(a + b)``, ``a ⊙ b = σ(a + b - 1)``, ``a → b = σ(1 - a + b)`` with
  ``σ(e) = relu(e) - relu(e - 1)`` (fewer neurons where interval bounds allow); a chain
  ``a_1 ⊕ ... ⊕ a_k`` is one ``σ(a_1 + ... + a_k)`` and ``a_1 ⊙ ... ⊙ a_k`` one
  ``σ(a_1 + ... + a_k - (k - 1))``;
* ``a ∨ b = a + relu(b - a)``, ``a ∧ b = a - relu(a - b)``;
* ``¬a``, ``δ_n a`` and ``r · a`` are affine, so they cost nothing;
* a graph node known to be ``σ(w·y + b)`` is compiled directly as such.

A neuron's layer is one more than the deepest neuron it reads; values needed further
up are carried through identity neurons ``relu(v) = v`` (all values are >= 0 on the unit
cube); the inputs reach the output through the network's affine skip connection.
Equal neurons are built once.

Example:
    >>> from fractions import Fraction as F
    >>> from relulab.logic import parse
    >>> net = to_network(parse("x1 ⊕ x2"))
    >>> net.widths, net([F(1, 2), F(3, 4)])[0]
    ((1,), Fraction(1, 1))
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import is_int_at_least
from ..limits import check_bytes
from ..network import Network
from .formula import Formula, FormulaError, n_vars, postorder
from .graph import SubstitutionGraph

__all__ = ["to_network"]

Expr = tuple[dict, Fraction]  # ({key: coefficient}, constant); key ("x", i) or ("n", id)


class _Builder:
    def __init__(self, n_inputs: int) -> None:
        # Each input is a small dict expression (about 470 bytes measured): refuse before
        # building them rather than be killed on a formula naming x99999999.
        check_bytes(512.0 * n_inputs, f"to_network: the expressions of {n_inputs} input(s)")
        self.n_inputs = n_inputs
        self.neurons: list[Expr] = []  # the input expression of each neuron
        self.depth: list[int] = []
        self.hi: list[Fraction] = []
        self.index: dict[tuple, int] = {}

    # ---------------------------------------------------------- expressions
    def inp(self, i: int) -> Expr:
        return ({("x", i): Fraction(1)}, Fraction(0))

    @staticmethod
    def const(c: Any) -> Expr:
        return ({}, Fraction(c))

    @staticmethod
    def comb(*terms: tuple[Any, Expr], c: Any = 0) -> Expr:
        out: dict = {}
        const = Fraction(c)
        for coef, (lin, k) in terms:
            coef = Fraction(coef)
            if coef == 0:
                continue
            const += coef * k
            for key, v in lin.items():
                nv = out.get(key, Fraction(0)) + coef * v
                if nv == 0:
                    out.pop(key, None)
                else:
                    out[key] = nv
        return out, const

    def bounds(self, e: Expr) -> tuple[Fraction, Fraction]:
        lin, c = e
        lo = hi = c
        for key, v in lin.items():
            khi = Fraction(1) if key[0] == "x" else self.hi[key[1]]
            if v > 0:
                hi += v * khi
            else:
                lo += v * khi
        return lo, hi

    def expr_depth(self, e: Expr) -> int:
        return max((self.depth[k[1]] for k in e[0] if k[0] == "n"), default=0)

    def relu(self, e: Expr, keep: bool = False) -> Expr:
        lo, hi = self.bounds(e)
        if hi <= 0:
            return self.const(0)
        if lo >= 0 and not keep:
            return e
        key = (tuple(sorted(e[0].items(), key=lambda kv: (kv[0][0], kv[0][1]))), e[1])
        nid = self.index.get(key)
        if nid is None:
            nid = len(self.neurons)
            self.index[key] = nid
            self.neurons.append(e)
            self.depth.append(self.expr_depth(e) + 1)
            self.hi.append(hi)
        return ({("n", nid): Fraction(1)}, Fraction(0))

    def sigma(self, e: Expr, keep: bool = False) -> Expr:
        lo, hi = self.bounds(e)
        if hi <= 0:
            return self.const(0)
        if lo >= 1:
            return self.const(1)
        if hi <= 1 and lo >= 0 and not keep:
            return e
        r1 = self.relu(e, keep and hi <= 1)
        if hi <= 1:
            return r1
        return self.comb((1, r1), (-1, self.relu(self.comb((1, e), c=-1))))

    # ------------------------------------------------------------- formulas
    def formula(self, phi: Formula, env: list[Expr]) -> Expr:
        vals: dict[int, Expr] = {}
        # Untruncated sums of ⊕ / ⊙ chains: min(1, min(1, a + b) + c) = min(1, a + b + c)
        # and max(0, max(0, a + b - 1) + c - 1) = max(0, a + b + c - 2) for values in
        # [0, 1], so a whole chain costs one truncation instead of one per operation.
        pre: dict[int, Expr] = {}

        def chain(op: str, x: Formula) -> Expr:
            return pre[id(x)] if x.op == op and id(x) in pre else vals[id(x)]

        for node in postorder(phi):
            op = node.op
            a = [vals[id(x)] for x in node.args]
            if op == "oplus":
                s = self.comb((1, chain(op, node.args[0])), (1, chain(op, node.args[1])))
                pre[id(node)] = s
                vals[id(node)] = self.sigma(s)
                continue
            if op == "odot":
                s = self.comb((1, chain(op, node.args[0])), (1, chain(op, node.args[1])), c=-1)
                pre[id(node)] = s
                vals[id(node)] = self.sigma(s)
                continue
            if op == "var":
                v = env[node.param - 1]
            elif op == "const":
                v = self.const(node.param)
            elif op == "neg":
                v = self.comb((-1, a[0]), c=1)
            elif op == "oplus":
                v = self.sigma(self.comb((1, a[0]), (1, a[1])))
            elif op == "odot":
                v = self.sigma(self.comb((1, a[0]), (1, a[1]), c=-1))
            elif op == "impl":
                v = self.sigma(self.comb((-1, a[0]), (1, a[1]), c=1))
            elif op == "join":
                v = self.comb((1, a[0]), (1, self.relu(self.comb((1, a[1]), (-1, a[0])))))
            elif op == "meet":
                v = self.comb((1, a[0]), (-1, self.relu(self.comb((1, a[0]), (-1, a[1])))))
            elif op == "div":
                v = self.comb((Fraction(1, node.param), a[0]))
            elif op == "scal":
                v = self.comb((node.param, a[0]))
            else:
                raise FormulaError(f"to_network: unknown operation {op!r}")
            vals[id(node)] = v
        return vals[id(phi)]

    # -------------------------------------------------------------- layering
    def _check_size(self, entries: int) -> None:
        # Rows are Python lists of Fractions, then object arrays (and the Network's own
        # copy): about 32 bytes per weight entry, the shared zero not counted.
        check_bytes(32.0 * entries, f"to_network: the exact network on {self.n_inputs} input(s) "
                    f"({entries} weight entries)")

    def network(self, outputs: list[Expr], box: tuple | None) -> Network:
        d = self.n_inputs
        self._check_size(d * (len(outputs) + 2))  # the input rows of the outputs, lo and span
        one, zero = Fraction(1), Fraction(0)
        lo = [zero] * d if box is None else list(box[0])
        span = [one] * d if box is None else [h - lo_ for h, lo_ in zip(box[1], box[0], strict=True)]

        def input_row(lin: dict, c: Fraction) -> tuple[list[Fraction], Fraction]:
            # Inputs t in [0, 1]^d stand for x = lo + span * t: t_i = (x_i - lo_i) / span_i.
            row = [zero] * d
            for key, v in lin.items():
                i = key[1]
                if span[i] == 0:
                    continue  # a zero-width coordinate: the extraction never reads it
                row[i] += v / span[i]
                c -= v * lo[i] / span[i]
            return row, c

        D = max(self.depth, default=0)
        if D == 0:
            rows = [input_row(*e) for e in outputs]
            return Network([[r for r, _ in rows]], [[c for _, c in rows]], exact=True)
        # slots[k]: what layer k (1..D) holds, as ("n", id) or ("c", key) for a carry.
        slots: list[list[tuple]] = [[] for _ in range(D + 1)]
        where: list[dict] = [{} for _ in range(D + 1)]

        def need(key: tuple, k: int) -> None:
            """Make the value of ``key`` available at layer ``k`` (k >= 1)."""
            if (key, k) in _done:
                return
            _done.add((key, k))
            kd = 0 if key[0] == "x" else self.depth[key[1]]
            if kd == k:
                slot = ("n", key[1])
            else:
                slot = ("c", key)
            where[k][key] = len(slots[k])
            slots[k].append(slot)
            stack.append((slot, k))

        _done: set = set()
        stack: list[tuple[tuple, int]] = []
        for e in outputs:
            for key in e[0]:
                if key[0] != "x":  # inputs reach the output through the skip connection
                    need(key, D)
        # Walk down: each slot needs its own inputs one layer below.
        while stack:
            slot, k = stack.pop()
            if k == 1:
                continue
            if slot[0] == "n":
                for key in self.neurons[slot[1]][0]:
                    need(key, k - 1)
            else:
                need(slot[1], k - 1)
        self._check_size(sum(len(slots[k]) * (d if k == 1 else len(slots[k - 1])) for k in range(1, D + 1))
                         + len(outputs) * (len(slots[D]) + d))
        Ws, bs = [], []
        for k in range(1, D + 1):
            W, b = [], []
            for slot in slots[k]:
                lin, c = self.neurons[slot[1]] if slot[0] == "n" else ({slot[1]: one}, zero)
                if k == 1:
                    row, c = input_row(lin, c)
                else:
                    row = [zero] * len(slots[k - 1])
                    for key, v in lin.items():
                        row[where[k - 1][key]] += v
                W.append(row)
                b.append(c)
            if not W:  # nothing needed at this depth (constant outputs): a dummy neuron
                W = [[zero] * (d if k == 1 else len(slots[k - 1]))]
                b = [zero]
                slots[k].append(("c", ("dummy",)))
            Ws.append(W)
            bs.append(b)
        WL, bL, S, s = [], [], [], []
        for lin, c in outputs:
            row = [zero] * len(slots[D])
            for key, v in lin.items():
                if key[0] != "x":
                    row[where[D][key]] += v
            srow, sc = input_row({k: v for k, v in lin.items() if k[0] == "x"}, zero)
            WL.append(row)
            bL.append(c)
            S.append(srow)
            s.append(sc)
        Ws.append(WL)
        bs.append(bL)
        skip = None
        if any(v != 0 for r in S for v in r) or any(v != 0 for v in s):
            skip = (np.array(S, dtype=object), np.array(s, dtype=object))
        return Network([np.array(W, dtype=object) for W in Ws],
                       [np.array(b, dtype=object) for b in bs], skip, exact=True)


def to_network(obj: Formula | SubstitutionGraph, n_inputs: int | None = None, *,
               keep_layers: bool = False) -> Network:
    """An exact :class:`~relulab.Network` computing ``obj``.

    Args:
        obj: a :class:`~relulab.logic.Formula` (the network computes its truth function
            on [0, 1]^n, one output) or a :class:`SubstitutionGraph` (the network computes
            the graph's outputs ``C y + c``; with a domain box, on the raw inputs of the box).
        n_inputs: number of inputs for a formula (default: its largest variable index;
            at least 1).  A variable beyond ``n_inputs`` is an error.
        keep_layers: for a graph, give every hidden-layer node (not the last layer) its
            own neuron even where it is affine on the cube (a node proved always active),
            so a graph extracted with ``method="rescale"`` comes back as a rescaled copy of
            the network (same hidden widths, less its dead neurons).

    The network's size is ``net.n_neurons`` / ``net.widths``.

    Example:
        >>> from relulab.logic import parse
        >>> to_network(parse("x1 ∨ x2")).n_neurons
        1
    """
    if isinstance(obj, SubstitutionGraph):
        b = _Builder(obj.n_inputs)
        env = [b.inp(i) for i in range(obj.n_inputs)]
        for k, layer in enumerate(obj.layers):
            new = []
            keep = keep_layers and k < len(obj.layers) - 1
            for node in layer:
                if node.affine is not None:
                    w, c = node.affine
                    new.append(b.sigma(b.comb(*[(wi, y) for wi, y in zip(w, env, strict=True)], c=c), keep))
                else:
                    new.append(b.formula(node.formula, env))
            env = new
        outs = [b.comb(*[(ci, y) for ci, y in zip(row, env, strict=True)], c=o)
                for row, o in zip(obj.readout, obj.offset, strict=True)]
        return b.network(outs, obj.domain)
    if not isinstance(obj, Formula):
        raise FormulaError(f"to_network: expected a Formula or SubstitutionGraph, got {type(obj).__name__}")
    top = n_vars(obj)
    if n_inputs is not None and not is_int_at_least(n_inputs, 1):
        raise FormulaError(f"to_network: n_inputs must be an integer >= 1, got {n_inputs!r}")
    n = max(1, top) if n_inputs is None else int(n_inputs)
    if top > n:
        raise FormulaError(f"to_network: the formula uses x{top} but the network has {n} input(s)")
    b = _Builder(n)
    out = b.formula(obj, [b.inp(i) for i in range(n)])
    return b.network([out], None)
