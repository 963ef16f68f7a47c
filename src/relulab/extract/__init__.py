"""Parameter extraction from queries: recover a ReLU network (or a bias-free GLU block)
from its input-output behaviour, and say how close the recovery is.

* :func:`extract_relu` - critical points on lines, hyperplanes from gradient jumps,
  orientation, layer peeling, least-squares refinement, output fit;
* :func:`extract_glu` - bias-free gated linear unit blocks from paired queries;
* :class:`QueryOracle` - the counting black box (with a budget);
* :func:`fidelity` - parameter error after aligning symmetries, and the exact
  functional verdict of :func:`relulab.symmetry.equivalent`.

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> from relulab.extract import extract_relu
    >>> net = Network([[[2.0, -1.0], [1.0, 1.0]], [[1.0, 3.0]]], [[0.5, -0.25], [1.0]])
    >>> r = extract_relu(net, 2)
    >>> r.fidelity.aligned, r.fidelity.max_abs_error < 1e-9, r.fidelity.equivalence
    (True, True, 'equal')
"""

from .fidelity import Fidelity, fidelity
from .glu import GLUBlock, GLUResult, extract_glu, random_glu
from .lines import LineSearch
from .oracle import BudgetExhausted, ExtractError, QueryOracle
from .relu import ExtractionResult, extract_relu

__all__ = [
    "extract_relu",
    "ExtractionResult",
    "QueryOracle",
    "BudgetExhausted",
    "ExtractError",
    "fidelity",
    "Fidelity",
    "LineSearch",
    "extract_glu",
    "GLUBlock",
    "GLUResult",
    "random_glu",
]
