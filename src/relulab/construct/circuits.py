"""Boolean circuits compiled into one exact ReLU network.

A circuit is a small netlist (a DAG of gates).  The text form, one statement a line::

    # a full adder
    input a b cin
    output s cout
    s = XOR a b cin
    cout = MAJ a b cin

Gates: ``AND OR NAND NOR XOR XNOR MAJ THR<t> NOT BUF`` (``THR2 a b c`` is 1 when at
least 2 inputs are 1; XOR of k inputs is their parity).  Statements may come in any
order; cycles, undefined and redefined signals are errors naming the line.

Compilation (exact on {0, 1} inputs, s = sum of the gate's inputs, k = their number):

=============  ===========================================  ========
gate           one hidden layer                             neurons
=============  ===========================================  ========
AND / NAND     ``relu(s - k + 1)`` (NAND: 1 minus it)        1
OR / NOR       ``1 - relu(1 - s)`` (NOR: ``relu(1 - s)``)    1
XOR / XNOR     ``relu(s) + sum_{j>=1} 2 (-1)^j relu(s - j)``  k
THRt / MAJ     ``relu(s - t + 1) - relu(s - t)``             2
NOT / BUF      affine, folded into the next layer            0
=============  ===========================================  ========

A gate sits at layer 1 + the deepest layer of its inputs; a signal still needed later
is carried by one ReLU a layer (its values are 0 or 1).  The network has as many hidden
layers as the circuit has levels of non-affine gates.

Example:
    >>> c = parse_circuit("input a b\\noutput y\\ny = XOR a b")
    >>> net = compile_circuit(c)
    >>> net([[0, 0], [0, 1], [1, 0], [1, 1]]).ravel().tolist() == [0, 1, 1, 0]
    True
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence, Sized
from dataclasses import dataclass

import numpy as np

from ..errors import FormatError
from ..limits import check_bytes
from ..network import Network
from ..results import Result
from ._builder import Builder, Expr, check_size, esum
from ._exact import ExactEvaluator
from .maxmin import ConstructionError, check_int

__all__ = [
    "Gate",
    "Circuit",
    "parse_circuit",
    "compile_circuit",
    "gate",
    "dnf",
    "ripple_carry_adder",
    "comparator",
    "check_circuit",
    "CircuitCheck",
]

_AFFINE = {"NOT", "BUF"}
_OPS = {"AND", "OR", "NAND", "NOR", "XOR", "XNOR", "MAJ", "NOT", "BUF"}
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\[\]~.']*$")


@dataclass(frozen=True)
class Gate:
    """``out = op(args...)``; ``line`` is the netlist line (0 when built in Python).

    Example:
        >>> g = Gate("y", "XOR", ("a", "b"))
        >>> c = Circuit(("a", "b"), ("y",), (g,))
        >>> [c.evaluate([a, b]) for a in (0, 1) for b in (0, 1)]
        [(0,), (1,), (1,), (0,)]
    """

    out: str
    op: str
    args: tuple[str, ...]
    line: int = 0


def _op_ok(op: str) -> bool:
    return op in _OPS or (op.startswith("THR") and op[3:].isascii() and op[3:].isdigit() and int(op[3:]) >= 1)


def _gate_value(op: str, vals: Sequence[int]) -> int:
    s, k = sum(vals), len(vals)
    if op == "AND":
        return int(s == k)
    if op == "NAND":
        return int(s != k)
    if op == "OR":
        return int(s > 0)
    if op == "NOR":
        return int(s == 0)
    if op == "XOR":
        return s % 2
    if op == "XNOR":
        return 1 - s % 2
    if op == "MAJ":
        return int(2 * s > k)
    if op == "NOT":
        return 1 - vals[0]
    if op == "BUF":
        return vals[0]
    return int(s >= int(op[3:]))  # THRt


@dataclass(frozen=True)
class Circuit:
    """A Boolean circuit: named inputs, outputs and gates (see the module docstring).

    Example:
        >>> c = Circuit(("a", "b"), ("y",), (Gate("y", "AND", ("a", "b")),))
        >>> c.evaluate([1, 1])
        (1,)
    """

    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    gates: tuple[Gate, ...]
    source: str = "<circuit>"

    def __post_init__(self) -> None:
        self._validate()

    def _where(self, g: Gate | None = None) -> str:
        return f"{self.source}:{g.line}" if g is not None and g.line else self.source

    def _validate(self) -> None:
        defined: dict[str, Gate | None] = {}
        for n in self.inputs:
            if n in defined:
                raise FormatError(f"{self.source}: input '{n}' declared twice")
            defined[n] = None
        for g in self.gates:
            if not _op_ok(g.op):
                raise FormatError(f"{self._where(g)}: unknown gate '{g.op}'")
            if g.out in defined:
                raise FormatError(f"{self._where(g)}: signal '{g.out}' is defined twice")
            defined[g.out] = g
            if g.op in _AFFINE and len(g.args) != 1:
                raise FormatError(f"{self._where(g)}: {g.op} takes one input, got {len(g.args)}")
            if not g.args:
                raise FormatError(f"{self._where(g)}: gate '{g.out}' has no inputs")
            if g.op.startswith("THR") and int(g.op[3:]) > len(g.args):
                raise FormatError(f"{self._where(g)}: {g.op} needs at least {g.op[3:]} inputs")
        for g in self.gates:
            for a in g.args:
                if a not in defined:
                    raise FormatError(f"{self._where(g)}: signal '{a}' is not defined")
        for o in self.outputs:
            if o not in defined:
                raise FormatError(f"{self.source}: output '{o}' is not defined")
        if not self.outputs:
            raise FormatError(f"{self.source}: the circuit has no outputs")
        self.order()  # raises on cycles

    def order(self) -> list[Gate]:
        """The gates in a topological order (raises FormatError on a cycle)."""
        by_out = {g.out: g for g in self.gates}
        state: dict[str, int] = {}
        out: list[Gate] = []
        for root in by_out:
            if state.get(root):
                continue
            stack = [(root, 0)]
            while stack:
                name, i = stack.pop()
                g = by_out.get(name)
                if g is None:
                    continue
                if i == 0:
                    if state.get(name) == 2:
                        continue
                    state[name] = 1
                if i < len(g.args):
                    stack.append((name, i + 1))
                    a = g.args[i]
                    if state.get(a) == 1:
                        raise FormatError(f"{self._where(g)}: cycle through signal '{a}'")
                    if state.get(a) != 2 and a in by_out:
                        stack.append((a, 0))
                else:
                    state[name] = 2
                    out.append(g)
        return out

    def evaluate(self, bits: Sequence[int]) -> tuple[int, ...]:
        """Plain Boolean evaluation (the specification the network is checked against)."""
        if len(bits) != len(self.inputs):
            raise ConstructionError(f"circuit takes {len(self.inputs)} inputs, got {len(bits)}")
        val = dict(zip(self.inputs, (int(b) for b in bits), strict=True))
        for g in self.order():
            val[g.out] = _gate_value(g.op, [val[a] for a in g.args])
        return tuple(val[o] for o in self.outputs)

    def to_text(self) -> str:
        """The netlist in the text format read by :func:`parse_circuit`."""
        lines = ["input " + " ".join(self.inputs), "output " + " ".join(self.outputs)]
        lines += [f"{g.out} = {g.op} {' '.join(g.args)}" for g in self.gates]
        return "\n".join(lines) + "\n"


def parse_circuit(text: str, source: str = "<string>") -> Circuit:
    """Read the netlist text format (see the module docstring); errors name ``source:line``.

    Example:
        >>> parse_circuit("input a\\noutput y\\ny = NOT a").evaluate([0])
        (1,)
    """
    inputs: list[str] = []
    outputs: list[str] = []
    gates: list[Gate] = []
    for ln, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        toks = line.replace("=", " = ").split()
        head = toks[0].lower()
        if head in ("input", "inputs", "output", "outputs") and "=" not in toks:
            names = toks[1:]
            for n in names:
                if not _NAME.match(n):
                    raise FormatError(f"{source}:{ln}: bad signal name '{n}'")
            (inputs if head.startswith("input") else outputs).extend(names)
            continue
        if len(toks) < 4 or toks[1] != "=":
            raise FormatError(f"{source}:{ln}: expected 'NAME = GATE ARG...', got {line!r}")
        out, op, args = toks[0], toks[2].upper(), tuple(toks[3:])
        for n in (out, *args):
            if not _NAME.match(n):
                raise FormatError(f"{source}:{ln}: bad signal name '{n}'")
        gates.append(Gate(out, op, args, ln))
    if not inputs:
        raise FormatError(f"{source}: no 'input' line")
    return Circuit(tuple(inputs), tuple(outputs), tuple(gates), source)


def _neuron_count(op: str, k: int) -> int:
    """Neurons :func:`_gate_neurons` spends on a gate of ``k`` inputs (the table above)."""
    if op in ("AND", "NAND", "OR", "NOR"):
        return 1
    return k if op in ("XOR", "XNOR") else 2


def _gate_neurons(b: Builder, op: str, args: list[Expr]) -> Expr:
    k = len(args)
    s = esum(args, b.layer)
    if op in ("AND", "NAND"):
        y = b.relu(s - (k - 1))
        return y if op == "AND" else 1 - y
    if op in ("OR", "NOR"):
        y = b.relu(1 - s)
        return 1 - y if op == "OR" else y
    if op in ("XOR", "XNOR"):
        y = b.relu(s)
        for j in range(1, k):
            y = y + b.relu(s - j) * (2 * (-1) ** j)
        return y if op == "XOR" else 1 - y
    t = k // 2 + 1 if op == "MAJ" else int(op[3:])
    return b.relu(s - t + 1) - b.relu(s - t)


def compile_circuit(circuit: Circuit) -> Network:
    """One exact network computing all outputs of ``circuit`` on {0, 1}^n (inputs in
    the order of ``circuit.inputs``); sizes as in the module docstring's table.

    Example:
        >>> compile_circuit(ripple_carry_adder(2)).n_hidden_layers
        2
    """
    gates = circuit.order()
    by_out = {g.out: g for g in gates}

    def alias_exact(name: str) -> tuple[str, int, int]:
        chain = []
        while name in by_out and by_out[name].op in _AFFINE:
            chain.append(by_out[name].op)
            name = by_out[name].args[0]
        sign, off = 1, 0
        for op in reversed(chain):  # innermost first
            if op == "NOT":
                sign, off = -sign, 1 - off
        return name, sign, off

    level: dict[str, int] = {n: 0 for n in circuit.inputs}
    for g in gates:
        if g.op in _AFFINE:
            level[g.out] = level[g.args[0]]
        else:
            level[g.out] = 1 + max(level[a] for a in g.args)
    # every gate is compiled, used or not, so the size follows the netlist
    L = max([level[o] for o in circuit.outputs] + [level[g.out] for g in gates])
    need: dict[str, int] = {}
    for g in gates:
        if g.op in _AFFINE:
            continue
        for a in g.args:
            base = alias_exact(a)[0]
            need[base] = max(need.get(base, 0), level[g.out] - 1)
    for o in circuit.outputs:
        base = alias_exact(o)[0]
        need[base] = max(need.get(base, 0), L)
    # the size before any work: every neuron reads its gate's inputs (a carry one value)
    real = [g for g in gates if g.op not in _AFFINE]
    carried = sum(need.values())
    check_size("compile_circuit", layers=L,
               neurons=sum(_neuron_count(g.op, len(g.args)) for g in real) + carried)
    # a coefficient's Fraction and dict slot, and its share of the dense layers (0.95 GB
    # measured for the 2.25e6 arguments of a 1500-bit comparator: 3000 bits had passed a
    # check of 112 bytes an argument and ran past the budget for minutes)
    check_bytes(400.0 * (sum(_neuron_count(g.op, len(g.args)) * len(g.args) for g in real) + carried),
                "compile_circuit: the exact weights")

    b = Builder(len(circuit.inputs))
    cur: dict[str, Expr] = dict(zip(circuit.inputs, b.inputs(), strict=True))

    def value(name: str) -> Expr:
        base, sign, off = alias_exact(name)
        return cur[base] * sign + off

    for layer in range(1, L + 1):
        new: dict[str, Expr] = {}
        for g in gates:
            if g.op not in _AFFINE and level[g.out] == layer:
                new[g.out] = _gate_neurons(b, g.op, [value(a) for a in g.args])
        for name, e in cur.items():
            if need.get(name, 0) >= layer:
                new[name] = b.relu(e)
        b.close()
        cur = new
    return b.build([value(o) for o in circuit.outputs])


# ------------------------------------------------------------ generators
def _check_netlist_size(what: str, inputs: int, arguments: int) -> None:
    """Refuse, before the netlist is built, a circuit of more inputs than relulab builds
    neurons, or whose gate arguments alone (``arguments`` names; the exact weights cost
    more) exceed the memory budget: ``gate("AND", 10**10)`` built ten billion names first
    and ended in MemoryError (or the OOM killer)."""
    check_size(what, inputs=inputs)
    check_bytes(112.0 * arguments, f"{what}: the netlist")


def gate(op: str, k: int | None = None) -> Circuit:
    """A single gate on inputs ``x1..xk`` (default k = 2; NOT/BUF: k = 1, and another k
    is refused: ``NOT`` with k = 3 silently built a 1-input gate).

    Example:
        >>> compile_circuit(gate("NAND", 3)).widths
        (1,)
    """
    op = str(op).upper()
    if not _op_ok(op):
        raise FormatError(f"gate: unknown gate {op!r}; use one of {', '.join(sorted(_OPS))} or THRk")
    if op in _AFFINE:
        if k not in (None, 1):
            raise FormatError(f"gate: {op} takes one input, got k = {k!r}")
        k = 1
    elif k is None:
        k = 2
    k = check_int(k, "gate: k", 1)
    _check_netlist_size(f"gate({op}, {k})", k, k)
    names = tuple(f"x{i + 1}" for i in range(k))
    return Circuit(names, ("y",), (Gate("y", op, names),), f"<{op}{k}>")


def dnf(terms: Sequence[Sequence[int]], n: int) -> Circuit:
    """OR of ANDs of literals; a literal is ``+i`` (x_i) or ``-i`` (not x_i), 1-based.

    The compiled network has 2 hidden layers: one neuron per term, then one for the OR.

    Example:
        >>> c = dnf([[1, -2], [2, 3]], 3)      # (x1 and not x2) or (x2 and x3)
        >>> c.evaluate([1, 0, 0]), c.evaluate([0, 1, 0])
        ((1,), (0,))
    """
    n = check_int(n, "dnf: n", 1)
    terms = list(terms)
    _check_netlist_size("dnf", n + len(terms),
                        n + sum(len(t) if isinstance(t, Sized) else 1 for t in terms))
    inputs = tuple(f"x{i + 1}" for i in range(n))
    gates: list[Gate] = []
    negs: set[int] = set()
    term_names = []
    for t, term in enumerate(terms):
        if not term:
            raise ConstructionError(f"dnf: term {t + 1} is empty")
        args = []
        for lit in term:
            if not isinstance(lit, (int, np.integer)) or isinstance(lit, bool):
                raise ConstructionError(f"dnf: term {t + 1} has literal {lit!r}; literals are integers +-1..+-{n}")
            i = abs(int(lit))
            if lit == 0 or i > n:
                raise ConstructionError(f"dnf: term {t + 1} has literal {lit}; literals are nonzero, "
                                        f"+-1..+-{n}")
            if lit < 0:
                if i not in negs:
                    negs.add(i)
                    gates.append(Gate(f"~x{i}", "NOT", (f"x{i}",)))
                args.append(f"~x{i}")
            else:
                args.append(f"x{i}")
        gates.append(Gate(f"t{t + 1}", "AND", tuple(args)))
        term_names.append(f"t{t + 1}")
    if not term_names:
        raise ConstructionError("dnf: at least one term is needed")
    gates.append(Gate("y", "OR", tuple(term_names)))
    return Circuit(inputs, ("y",), tuple(gates), "<dnf>")


def ripple_carry_adder(n: int) -> Circuit:
    """n-bit ripple-carry adder: inputs ``a0..a{n-1}, b0..b{n-1}`` (least significant
    first), outputs ``s0..s{n}`` with ``sum s_i 2^i = a + b``.  Compiled: n hidden layers
    (the carry chain), full adders as ``XOR a b c`` (3 neurons) and ``MAJ a b c`` (2).

    Example:
        >>> ripple_carry_adder(2).evaluate([1, 1, 1, 0])    # 3 + 1
        (0, 0, 1)
    """
    n = check_int(n, "adder: n", 1)
    check_size(f"adder({n})", layers=n)
    _check_netlist_size(f"adder({n})", 2 * n, 12 * n)
    a = [f"a{i}" for i in range(n)]
    bb = [f"b{i}" for i in range(n)]
    gates = [Gate("s0", "XOR", (a[0], bb[0])), Gate("c1", "AND", (a[0], bb[0]))]
    for i in range(1, n):
        gates.append(Gate(f"s{i}", "XOR", (a[i], bb[i], f"c{i}")))
        gates.append(Gate(f"c{i + 1}", "MAJ", (a[i], bb[i], f"c{i}")))
    gates.append(Gate(f"s{n}", "BUF", (f"c{n}",)))
    outs = tuple(f"s{i}" for i in range(n + 1))
    return Circuit(tuple(a + bb), outs, tuple(gates), f"<adder{n}>")


def comparator(n: int) -> Circuit:
    """n-bit comparator: inputs ``a0..a{n-1}, b0..b{n-1}`` (least significant first),
    outputs ``gt, eq, lt`` for a > b, a == b, a < b.  Compiled: 3 hidden layers
    (2 when n = 1).

    Example:
        >>> comparator(2).evaluate([0, 1, 1, 0])   # a = 2, b = 1
        (1, 0, 0)
    """
    n = check_int(n, "comparator: n", 1)
    _check_netlist_size(f"comparator({n})", 2 * n, n * n + 12 * n)   # the AND of g_i reads n - i values
    a = [f"a{i}" for i in range(n)]
    bb = [f"b{i}" for i in range(n)]
    gates = []
    for i in range(n):
        gates.append(Gate(f"e{i}", "XNOR", (a[i], bb[i])))
        gates.append(Gate(f"na{i}", "NOT", (a[i],)))
        gates.append(Gate(f"nb{i}", "NOT", (bb[i],)))
    g_terms, l_terms = [], []
    for i in range(n):
        higher = tuple(f"e{j}" for j in range(i + 1, n))
        gates.append(Gate(f"g{i}", "AND", (a[i], f"nb{i}", *higher)))
        gates.append(Gate(f"l{i}", "AND", (f"na{i}", bb[i], *higher)))
        g_terms.append(f"g{i}")
        l_terms.append(f"l{i}")
    gates.append(Gate("gt", "OR", tuple(g_terms)))
    gates.append(Gate("lt", "OR", tuple(l_terms)))
    gates.append(Gate("eq", "AND", tuple(f"e{i}" for i in range(n))))
    return Circuit(tuple(a + bb), ("gt", "eq", "lt"), tuple(gates), f"<comparator{n}>")


@dataclass(frozen=True)
class CircuitCheck(Result):
    """Result of an exhaustive check of a compiled circuit.

    Example:
        >>> chk = check_circuit(comparator(2))        # all 2^4 inputs, exactly
        >>> chk.n_inputs, chk.n_checked, chk.mismatches, chk.first_mismatch
        (4, 16, 0, None)
    """

    n_inputs: int
    n_checked: int
    mismatches: int
    first_mismatch: tuple[int, ...] | None

    @property
    def ok(self) -> bool:
        return self.mismatches == 0

    def to_dict(self) -> dict:
        return {**super().to_dict(), "ok": self.ok}


def check_circuit(circuit: Circuit, net: Network | None = None) -> CircuitCheck:
    """Evaluate ``net`` (default: the compiled circuit) exactly on all 2^n Boolean inputs
    and compare with :meth:`Circuit.evaluate`.

    Example:
        >>> check_circuit(comparator(2)).ok
        True
    """
    net = compile_circuit(circuit) if net is None else net
    n = len(circuit.inputs)
    X = np.array(list(itertools.product((0, 1), repeat=n)), dtype=np.int64).reshape(-1, n)
    Y = ExactEvaluator(net)(X.astype(object))
    bad, first = 0, None
    for row, y in zip(X, Y, strict=True):
        want = circuit.evaluate(row.tolist())
        if any(yv != w for yv, w in zip(y, want, strict=True)):
            bad += 1
            first = first or tuple(int(v) for v in row)
    return CircuitCheck(n, len(X), bad, first)
