"""Simplification by the MV axioms (and their divisible / Riesz extensions).

Each rule is an instance of an axiom or a textbook consequence, so the truth function
never changes:

* involution and constants: ``¬¬a = a``, ``¬0 = 1``, ``¬1 = 0``;
* ``⊕``: ``a ⊕ 0 = a``, ``a ⊕ 1 = 1``, ``a ⊕ ¬a = 1``; ``⊙`` dually: ``a ⊙ 1 = a``,
  ``a ⊙ 0 = 0``, ``a ⊙ ¬a = 0``;
* lattice: ``a ∨ a = a``, ``a ∧ a = a``, ``a ∨ 0 = a``, ``a ∨ 1 = 1``, ``a ∧ 1 = a``,
  ``a ∧ 0 = 0``, absorption ``a ∨ (a ∧ b) = a``, ``a ∧ (a ∨ b) = a``;
* implication: ``a → a = 1``, ``0 → a = 1``, ``a → 1 = 1``, ``1 → a = a``, ``a → 0 = ¬a``;
* De Morgan: ``¬(¬a ⊕ ¬b) = a ⊙ b``, ``¬(¬a ⊙ ¬b) = a ⊕ b``;
* divisible / Riesz: ``δ_1 a = a``, ``δ_n 0 = 0``, ``δ_m δ_n a = δ_mn a``, ``0·a = 0``,
  ``1·a = a``, ``r·0 = 0``, ``r·(s·a) = (rs)·a``;
* associativity and commutativity: chains of ⊕, ⊙, ∨, ∧ are flattened and their
  operands sorted by a structural fingerprint, so ``x2 ⊕ x1`` and ``x1 ⊕ x2`` simplify
  to the same formula.

Example:
    >>> from relulab.logic import parse, to_text
    >>> to_text(simplify(parse("~~x1 + 0 + ~(x2 * 1) + x2")))
    '1'
    >>> simplify(parse("x2 + x1")) is simplify(parse("x1 + x2"))
    True
"""

from __future__ import annotations

import hashlib
import time

from .formula import ONE, ZERO, Formula, FormulaError, div, neg, postorder, rebuild, scal

__all__ = ["simplify", "fingerprint"]

_AC = ("oplus", "odot", "join", "meet")
_MAX_ROUNDS = 20
# A chain is flattened only up to this many operands: through shared sub-terms (a weight
# p/q is a doubling sum of δq terms, a graph of O(log p) nodes) the flat list has about p
# of them, and rebuilding it as one chain cost minutes and all memory for p = 123456789.
# A longer chain keeps its shared form (left unsorted: still equal, not canonical).
AC_MAX_OPERANDS = 512


def fingerprint(phi: Formula, memo: dict[int, str] | None = None) -> str:
    """A structural hash of ``phi`` (stable across runs; equal formulas, equal hash).

    Example:
        >>> from relulab.logic import parse
        >>> fingerprint(parse("x1 ⊕ x2")) == fingerprint(parse("x1 + x2"))   # same structure
        True
        >>> fingerprint(parse("x1 ⊕ x2")) == fingerprint(parse("x2 ⊕ x1"))   # structural, not semantic
        False
    """
    if not isinstance(phi, Formula):
        raise FormulaError(f"fingerprint: expected a Formula, got {type(phi).__name__}")
    memo = {} if memo is None else memo
    for node in postorder(phi):
        if id(node) in memo:
            continue
        h = hashlib.sha1(f"{node.op}|{node.param}|".encode())
        for a in node.args:
            h.update(memo[id(a)].encode())
        memo[id(node)] = h.hexdigest()
    return memo[id(phi)]


def _is_neg_of(a: Formula, b: Formula) -> bool:
    return (a.op == "neg" and a.args[0] is b) or (b.op == "neg" and b.args[0] is a)


def _flatten(op: str, node: Formula, cap: int | None = None) -> list[Formula] | None:
    """The operands of the ``op`` chain at ``node``; None once more than ``cap``."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if n.op == op:
            stack.extend(reversed(n.args))
        else:
            out.append(n)
        if cap is not None and len(out) + len(stack) > cap:
            return None
    return out


def _ac(op: str, operands: list[Formula], fp: dict[int, str]) -> Formula:
    absorbing = {"oplus": ONE, "odot": ZERO, "join": ONE, "meet": ZERO}[op]
    neutral = {"oplus": ZERO, "odot": ONE, "join": ZERO, "meet": ONE}[op]
    ops = [a for a in operands if a is not neutral]
    if any(a is absorbing for a in ops):
        return absorbing
    ids = {id(a) for a in ops}
    if op in ("oplus", "odot"):
        # a ⊕ ¬a = 1 and a ⊙ ¬a = 0 (a complementary pair absorbs the whole chain).
        if any(a.op == "neg" and id(a.args[0]) in ids for a in ops):
            return absorbing
    else:
        # Idempotence, then absorption: a ∨ (a ∧ b) = a, a ∧ (a ∨ b) = a.
        uniq: dict[int, Formula] = {}
        for a in ops:
            uniq.setdefault(id(a), a)
        ops = list(uniq.values())
        dual = "meet" if op == "join" else "join"
        # (each dual chain read up to AC_MAX_OPERANDS operands: unbounded, this step took
        # seconds past a deadline on a 619-node formula, and more on a larger one)
        ops = [a for a in ops if not (a.op == dual and any(id(b) in ids and b is not a
                                                             for b in _flatten(dual, a, AC_MAX_OPERANDS) or ()))]
    if not ops:
        return neutral
    for a in ops:
        fingerprint(a, fp)
    ops.sort(key=lambda a: fp[id(a)])
    out = ops[0]
    for a in ops[1:]:
        out = Formula(op, (out, a))
    return out


def _step(node: Formula, args: list[Formula], fp: dict[int, str]) -> Formula:
    op = node.op
    if op == "neg":
        a = args[0]
        if a.op == "neg":
            return a.args[0]
        if a is ZERO:
            return ONE
        if a is ONE:
            return ZERO
        if a.op in ("oplus", "odot") and all(x.op == "neg" for x in a.args):
            other = "odot" if a.op == "oplus" else "oplus"
            return Formula(other, (a.args[0].args[0], a.args[1].args[0]))
        return neg(a)
    if op in _AC:
        flat: list[Formula] = []
        for a in args:
            part = _flatten(op, a, AC_MAX_OPERANDS - len(flat))
            if part is None:
                return rebuild(node, args)
            flat.extend(part)
        return _ac(op, flat, fp)
    if op == "impl":
        a, b = args
        if a is b or a is ZERO or b is ONE:
            return ONE
        if a is ONE:
            return b
        if b is ZERO:
            return neg(a) if a.op != "neg" else a.args[0]
        return rebuild(node, args)
    if op == "div":
        a = args[0]
        if node.param == 1:
            return a
        if a is ZERO:
            return ZERO
        if a.op == "div":
            return div(node.param * a.param, a.args[0])
        return div(node.param, a)
    if op == "scal":
        a = args[0]
        r = node.param
        if r == 0 or a is ZERO:
            return ZERO
        if r == 1:
            return a
        if a.op == "scal":
            return scal(r * a.param, a.args[0])
        return scal(r, a)
    return rebuild(node, args) if args else node


def simplify(phi: Formula) -> Formula:
    """``phi`` rewritten by the rules of the module docstring until nothing changes.

    Example:
        >>> from relulab.logic import parse
        >>> str(simplify(parse("¬¬x1 ⊕ 0")))
        'x1'
    """
    return simplify_until(phi, None)[0]


def simplify_until(phi: Formula, deadline: float | None) -> tuple[Formula, bool]:
    """:func:`simplify` that stops at ``deadline`` (a ``time.monotonic()`` value; None:
    never), with the formula of the last finished round (every round rewrites by the
    axioms, so it is equal to ``phi`` either way) and whether it ran to the fixed point
    (False at the deadline, and after ``_MAX_ROUNDS`` rounds that still changed it;
    :func:`simplify_rounds` says which).

    Example:
        >>> from relulab.logic import parse
        >>> f, done = simplify_until(parse("¬¬x1 ⊕ 0"), None)
        >>> str(f), done
        ('x1', True)
    """
    out, how = simplify_rounds(phi, deadline)
    return out, how == "fixed point"


def simplify_rounds(phi: Formula, deadline: float | None) -> tuple[Formula, str]:
    """:func:`simplify_until` with how it ended: "fixed point", "time limit" or "round
    limit" (``_MAX_ROUNDS`` rounds that all changed the formula).

    Example:
        >>> from relulab.logic import parse
        >>> simplify_rounds(parse("x1 ⊕ 0"), 0.0)[1]       # a deadline already past
        'time limit'
    """
    if not isinstance(phi, Formula):
        raise FormulaError(f"simplify: expected a Formula, got {type(phi).__name__} (parse text first)")
    fp: dict[int, str] = {}
    for _ in range(_MAX_ROUNDS):
        out: dict[int, Formula] = {}
        for node in postorder(phi):
            if deadline is not None and time.monotonic() > deadline:  # every node: one step can take ms
                return phi, "time limit"  # this round is unfinished: keep the last one's formula
            out[id(node)] = _step(node, [out[id(a)] for a in node.args], fp) if node.args else node
        new = out[id(phi)]
        if new is phi:
            return phi, "fixed point"
        phi = new
    return phi, "round limit"
