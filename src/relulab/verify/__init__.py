"""Exact verification: MILP optimisation, output ranges and a complete verifier.

* :func:`maximize` / :func:`minimize`: the exact optimum of ``c . f(x)`` over a Box or
  Polytope by a big-M MILP on HiGHS, with the optimal input.
* :func:`output_range`: exact bounds of every output.
* :func:`verify`: a complete verifier for VNN-LIB properties (attack, then branch and
  bound over input splits with batched symbolic bounds): holds / violated (with a
  re-checked counterexample) / unknown.

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
from .result import OptimumResult, RangeResult, VerificationResult
from .verifier import verify

# The building blocks that return bare tuples (``milp.tighten_bounds``, ``milp.milp_term``,
# ``bab.decide_term``) are internals of the verifier: import them from their modules.

__all__ = [
    "verify",
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
