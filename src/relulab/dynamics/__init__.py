"""Training dynamics: kernels of ReLU networks and paths between solutions.

(Minimal package file of the kernels branch; the lead merges it with the rest of
:mod:`relulab.dynamics`.)
"""

from .kernels import (
    KernelError,
    KernelRidge,
    empirical_ntk,
    kappa0,
    kappa1,
    kernel_ridge,
    nngp,
    ntk,
    random_ntk_network,
)
from .paths import (
    LOSSES,
    PATHS,
    BezierSearch,
    PathError,
    PathResult,
    align,
    bezier_search,
    path_losses,
    path_point,
)

__all__ = [
    "KernelError",
    "KernelRidge",
    "empirical_ntk",
    "kappa0",
    "kappa1",
    "kernel_ridge",
    "nngp",
    "ntk",
    "random_ntk_network",
    "LOSSES",
    "PATHS",
    "BezierSearch",
    "PathError",
    "PathResult",
    "align",
    "bezier_search",
    "path_losses",
    "path_point",
]
