"""Training with guarantees: exact minimal-norm univariate networks, convex training of
two-layer networks to global optimality, the weight-decay collapse threshold, and
regularisers that make a network cheap to embed in a MILP.

Example:
    >>> from relulab.train import minnorm_interpolant
    >>> r = minnorm_interpolant([0.0, 1.0, 2.0], [0.0, 1.0, 0.0], skip=True)
    >>> round(r.cost, 6)
    2.0
"""

from .collapse import CollapseThreshold, collapse_threshold
from .convex import (
    ConvexFit,
    GatedFit,
    convex_fit,
    gated_fit,
    nonconvex_objective,
    sample_patterns,
)
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
from .patterns import (
    activation_patterns,
    enumerate_patterns,
    facet_rows,
    hyperplane_classes,
    region_count,
)
from .regularizers import (
    bigm_penalty,
    count_unstable,
    interval_bounds,
    lp_gap_penalty,
    lp_gap_true_penalty,
    lp_relaxation_gaps,
    prune_on_data,
    train_surrogate,
    unstable_penalty,
)

__all__ = [
    "CollapseThreshold",
    "activation_patterns",
    "enumerate_patterns",
    "facet_rows",
    "hyperplane_classes",
    "lp_gap_true_penalty",
    "lp_relaxation_gaps",
    "prune_on_data",
    "region_count",
    "ConvexFit",
    "GatedFit",
    "MinNormResult",
    "OptimalSet",
    "Zone",
    "bigm_penalty",
    "collapse_threshold",
    "convex_fit",
    "count_unstable",
    "function_cost",
    "gated_fit",
    "in_optimal_set",
    "interval_bounds",
    "kinks_of",
    "lp_gap_penalty",
    "minnorm_classifier",
    "minnorm_interpolant",
    "minnorm_on_grid",
    "nonconvex_objective",
    "parameter_cost",
    "sample_patterns",
    "train_surrogate",
    "unstable_penalty",
]
