"""Building a bound graph node by node: :class:`GraphBuilder`, :class:`Node`.

Example:
    >>> import torch
    >>> from relulab.crown.ops import Linear
    >>> gb = GraphBuilder((2,))
    >>> y = gb.add("y", Linear(torch.ones(3, 2, dtype=torch.float64), None), [gb.input])
    >>> [n.name for n in gb.finish(y)], gb.shape(y)
    (['input', 'y'], (3,))
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import FormatError, require
from .ops import Input, Op

__all__ = ["GraphBuilder", "Node", "GraphError"]


class GraphError(FormatError):
    """A bound graph was built from, or asked for, something it cannot represent."""


@dataclass(frozen=True)
class Node:
    """One operator application: ``name = op(*inputs)`` with per-sample output ``shape``.

    Example:
        >>> Node("x", Input(), (), (3,)).shape
        (3,)
    """

    name: str
    op: Op
    inputs: tuple[str, ...]
    shape: tuple[int, ...]


class GraphBuilder:
    """Adds nodes one at a time, inferring each output shape by running the operator on
    zeros (cheap at build time, and it catches inconsistent shapes with the node's name).

    Example:
        >>> import torch
        >>> gb = GraphBuilder((2,))
        >>> from relulab.crown.ops import Linear
        >>> y = gb.add("y", Linear(torch.ones(3, 2, dtype=torch.float64), None), [gb.input])
        >>> gb.shape(y)
        (3,)
    """

    def __init__(self, input_shape: tuple[int, ...], input_name: str = "input") -> None:
        torch = require("torch", "torch")
        self._torch = torch
        self.input = input_name
        self.nodes: dict[str, Node] = {input_name: Node(input_name, Input(), (), tuple(input_shape))}
        self._n = 0

    def fresh(self, base: str) -> str:
        """A node name not used yet, derived from ``base``."""
        name = base
        while name in self.nodes:
            self._n += 1
            name = f"{base}_{self._n}"
        return name

    def add(self, name: str, op: Op, inputs: list[str], where: str | None = None) -> str:
        """Append ``name = op(*inputs)``; returns the (possibly made unique) name."""
        name = self.fresh(name)
        ins = tuple(inputs)
        zeros = [self._torch.zeros(1, *self.nodes[i].shape, dtype=self._torch.float64) for i in ins]
        try:
            with self._torch.no_grad():
                y = op.forward(*zeros)
        except (RuntimeError, ValueError, IndexError) as e:
            msg = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise GraphError(f"{where or name}: shapes do not fit ({msg})") from None
        if not bool(self._torch.isfinite(y).all()):
            # finite operators map 0 to finite values: NaN or infinite constants (weights,
            # a negative batch-norm variance, an average over no cells) would give NaN bounds
            raise GraphError(f"{where or name}: its constants are NaN or infinite (its output at 0 "
                             "is not finite)")
        self.nodes[name] = Node(name, op, ins, tuple(int(s) for s in y.shape[1:]))
        return name

    def shape(self, name: str) -> tuple[int, ...]:
        return self.nodes[name].shape

    def finish(self, output: str) -> list[Node]:
        """The nodes ``output`` depends on, in order (dead branches dropped)."""
        keep = {output}
        for name in reversed(list(self.nodes)):
            if name in keep:
                keep.update(self.nodes[name].inputs)
        if self.input not in keep:
            raise GraphError(f"the output '{output}' does not depend on the input")
        return [n for k, n in self.nodes.items() if k in keep]
