"""Pretty printing of MV formulas, in Unicode (⊕ ⊙ ¬ ∨ ∧ → δ ·) or ASCII (+ * ~ | & -> d @).

Binding, loosest first: ``→`` (right-associative), ``∨``, ``∧``, ``⊕``, ``⊙``, then the
prefix operations ``¬``, ``δn(..)`` and ``r·``.  The printer writes the fewest brackets
that make :func:`relulab.logic.parse` give back the very same formula.  A formula whose
tree is much larger than its shared DAG is printed with named shared sub-terms
(``t1 := ...``), one per line.

Example:
    >>> from relulab.logic.formula import var, oplus, neg, odot, div
    >>> to_text(oplus(var(1), odot(neg(var(2)), div(3, var(1)))))
    'x1 ⊕ ¬x2 ⊙ δ3(x1)'
    >>> to_text(oplus(var(1), var(2)), ascii=True)
    'x1 + x2'
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..errors import RelulabError
from .traverse import postorder

Formula = Any  # a relulab.logic.Formula (not imported: the formulas print through here)

__all__ = ["to_text", "tree_size", "SYMBOLS", "ASCII_SYMBOLS", "LEVEL"]

SYMBOLS = {"oplus": "⊕", "odot": "⊙", "join": "∨", "meet": "∧", "impl": "→",
           "neg": "¬", "div": "δ", "scal": "·"}
ASCII_SYMBOLS = {"oplus": "+", "odot": "*", "join": "|", "meet": "&", "impl": "->",
                 "neg": "~", "div": "d", "scal": "@"}
#: binding strength of each operation (higher binds tighter)
LEVEL = {"impl": 1, "join": 2, "meet": 3, "oplus": 4, "odot": 5,
         "neg": 6, "div": 6, "scal": 6, "var": 7, "const": 7}

# Above this many characters of tree text, shared sub-terms get names.
_TREE_LIMIT = 4000


def _num(r: Fraction) -> str:
    return str(r.numerator) if r.denominator == 1 else f"{r.numerator}/{r.denominator}"


def _tree_sizes(phi: Formula) -> dict[int, int]:
    sz: dict[int, int] = {}
    for node in postorder(phi):
        sz[id(node)] = 1 + sum(sz[id(a)] for a in node.args)
    return sz


def tree_size(phi: Formula) -> int:
    """The number of nodes of ``phi`` written out as a tree (shared sub-terms counted at
    every use), computed over the shared graph: the text without names is about this long.
    A rational weight ``p/q`` is a doubling sum of ``δq`` terms: a small graph whose tree
    has about ``p`` nodes.

    Example:
        >>> from relulab.logic.formula import var, oplus
        >>> a = oplus(var(1), var(2))
        >>> tree_size(a), tree_size(oplus(a, a))      # the shared a counted twice
        (3, 7)
    """
    return _tree_sizes(phi)[id(phi)]


def _render(node: Formula, child_text, sym: dict[str, str]) -> str:
    op = node.op
    if op == "var":
        return f"x{node.param}"
    if op == "const":
        return _num(node.param)
    if op in ("neg", "div", "scal"):
        a = node.args[0]
        inner = child_text(a)
        if op == "div":
            return f"{sym['div']}{node.param}({inner})"
        wrap = LEVEL[a.op] < LEVEL[op]
        body = f"({inner})" if wrap else inner
        if op == "neg":
            return f"{sym['neg']}{body}"
        return f"{_num(node.param)}{sym['scal']}{body}"
    a, b = node.args
    lvl = LEVEL[op]
    ta, tb = child_text(a), child_text(b)
    if op == "impl":  # right-associative
        left_wrap, right_wrap = LEVEL[a.op] <= lvl, LEVEL[b.op] < lvl
    else:  # left-associative
        left_wrap, right_wrap = LEVEL[a.op] < lvl, LEVEL[b.op] <= lvl
    if left_wrap:
        ta = f"({ta})"
    if right_wrap:
        tb = f"({tb})"
    return f"{ta} {sym[op]} {tb}"


def to_text(phi: Formula, ascii: bool = False, shared: bool | None = None) -> str:
    """The formula as text (see the module docstring).

    Args:
        ascii: use ``+ * ~ | & -> d @`` instead of Unicode symbols.
        shared: name the shared sub-terms (``t1 := ...`` lines); default: only when the
            tree would be longer than a few thousand characters.

    Example:
        >>> from relulab.logic import parse
        >>> phi = parse("x1 ⊕ ¬x2")
        >>> to_text(phi), to_text(phi, ascii=True)
        ('x1 ⊕ ¬x2', 'x1 + ~x2')
    """
    if not (hasattr(phi, "op") and hasattr(phi, "args")):
        raise RelulabError(f"to_text: expected a Formula, got {type(phi).__name__}")
    sym = ASCII_SYMBOLS if ascii else SYMBOLS
    if shared is None:
        shared = _tree_sizes(phi)[id(phi)] > _TREE_LIMIT
    # Count the parents of each node: a node's text is dropped once its last parent is
    # rendered (keeping every sub-term's text held the sum of all prefixes of a chain,
    # 3.9 GB for a 90 KB formula); in the shared form non-atomic nodes used twice or
    # more get a name.
    uses: dict[int, int] = {}
    for node in postorder(phi):
        for a in node.args:
            uses[id(a)] = uses.get(id(a), 0) + 1
    left = dict(uses)
    names: dict[int, str] = {}
    text: dict[int, str] = {}
    lines: list[str] = []
    for node in postorder(phi):
        t = _render(node, lambda a: names.get(id(a)) or text[id(a)], sym)
        for a in node.args:
            left[id(a)] -= 1
            if left[id(a)] == 0:
                text.pop(id(a), None)
        if shared and node is not phi and node.args and uses.get(id(node), 0) > 1:
            name = f"t{len(names) + 1}"
            names[id(node)] = name
            lines.append(f"{name} := {t}")
        text[id(node)] = t
    lines.append(text[id(phi)])
    return "\n".join(lines)
