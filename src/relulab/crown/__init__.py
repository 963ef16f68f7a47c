"""Linear bound propagation on the structured graph of a network (CROWN, alpha-CROWN,
beta-CROWN), in torch, batched over sub-problems.

:class:`BoundGraph` keeps convolutions, pooling, batch norms and residual Adds as they
are; :func:`bound` bounds ``C f(x)`` over boxes with interval arithmetic, CROWN
back-substitution or optimised (alpha/beta) relaxations.  See docs/crown.md.

Example:
    >>> from relulab import Network
    >>> bg = BoundGraph.from_network(Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]]))
    >>> bound(bg, [[0.5]], [[1.0]]).lower.round(6).tolist()
    [[0.5]]
"""

from .graph import BoundGraph, GraphError
from .propagate import METHODS, GraphBounds, WarmStart, bound, float32_unsafe

__all__ = ["BoundGraph", "GraphError", "bound", "GraphBounds", "WarmStart", "METHODS", "float32_unsafe"]
