"""Training with guarantees: exact minimal-norm univariate networks, convex training of
two-layer networks, the weight-decay collapse threshold, MILP-friendly regularisers.

Example:
    >>> from relulab.train import minnorm_interpolant
    >>> r = minnorm_interpolant([0.0, 1.0, 2.0], [0.0, 1.0, 0.0], skip=True)
    >>> round(r.cost, 6)
    2.0
"""

from .minnorm import (
    MinNormResult,
    OptimalSet,
    Zone,
    function_cost,
    in_optimal_set,
    kinks_of,
    minnorm_classifier,
    minnorm_interpolant,
    minnorm_on_grid,
    parameter_cost,
)

__all__ = [
    "MinNormResult",
    "OptimalSet",
    "Zone",
    "function_cost",
    "in_optimal_set",
    "kinks_of",
    "minnorm_classifier",
    "minnorm_interpolant",
    "minnorm_on_grid",
    "parameter_cost",
]
