"""Exact verification: MILP optimisation, output ranges and a complete verifier.

* :func:`maximize` / :func:`minimize`: the exact optimum of ``c . f(x)`` over a Box or
  Polytope by a big-M MILP on HiGHS, with the optimal input.
* :func:`output_range`: exact bounds of every output.
* :func:`verify`: a complete verifier for VNN-LIB properties (attack, then branch and
  bound over input splits for few inputs, over ReLU splits otherwise): holds / violated
  (with a re-checked counterexample) / unknown, within a time and memory budget.
* :func:`relu_split`: branch and bound over ReLU splits for one unsafe conjunction.

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> from relulab.domain import Box
    >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
    >>> round(maximize(net, Box([-1], [2])).value, 9)
    2.0
"""

from ..lipschitz.decide import is_positive, surjective, zonotope_contains
from .milp import MILPEncoding, encode, maximize, minimize, output_range
from .relu_bab import relu_split
from .result import OptimumResult, RangeResult, ReluSplitResult, VerificationResult
from .verifier import load_for_verify, verify

# The building blocks that return bare tuples (``milp.tighten_bounds``, ``milp.milp_term``,
# ``bab.decide_term``) are internals of the verifier: import them from their modules.

__all__ = [
    "verify",
    "load_for_verify",
    "relu_split",
    "ReluSplitResult",
    "maximize",
    "minimize",
    "output_range",
    "encode",
    "MILPEncoding",
    "OptimumResult",
    "RangeResult",
    "VerificationResult",
    "is_positive",
    "surjective",
    "zonotope_contains",
]
