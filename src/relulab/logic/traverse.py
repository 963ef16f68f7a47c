"""Walking a formula's DAG: the one traversal every formula module shares.

Kept apart from :mod:`relulab.logic.formula` so that printing (which the formulas'
``str`` uses) needs nothing from the formula module.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["postorder"]


def postorder(phi: Any) -> Iterator[Any]:
    """Every distinct node of ``phi`` (a formula or any node with ``args``) once,
    children before parents (no recursion).

    Example:
        >>> from relulab.logic import parse
        >>> [str(n) for n in postorder(parse("x1 ⊕ ¬x1"))]
        ['x1', '¬x1', 'x1 ⊕ ¬x1']
    """
    seen: set[int] = set()
    stack: list[tuple[Any, bool]] = [(phi, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            yield node
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for a in reversed(node.args):
            if id(a) not in seen:
                stack.append((a, False))
