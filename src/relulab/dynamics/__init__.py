"""Training dynamics: an instrumented torch training loop whose measurements are exact
where the piecewise-linear structure allows, and saddle-to-saddle analysis.

* :func:`train`: GD / gradient-flow mode (with a step-size check) / SGD / Adam / AdamW on
  a relulab Network or a torch module, returning a :class:`Trajectory`.
* recorders (:mod:`relulab.dynamics.recorders`): neuron norms, directions, alignment,
  activation patterns on the data, effective width, region counts, distance to a
  reference network, parameters, outputs, or any function of the model.
* :func:`saddle_events`: loss plateaus and the neurons that start growing at each jump.
* :func:`linear_dichotomies`: the exact number of affine dichotomies of a point set.
* kernels (:mod:`relulab.dynamics.kernels`): the empirical NTK of a network (exact,
  through activation patterns), the infinite-width NTK and NNGP, kernel ridge regression;
  :func:`monte_carlo_ntk` (:mod:`relulab.dynamics.kernels_mc`): the mean empirical NTK of
  independent wide random networks, streamed (memory independent of width^2).
* :func:`fit_multistart` (:mod:`relulab.dynamics.multistart`): least-squares fits of a
  narrow depth-L ReLU class from many starts at once (batched Levenberg-Marquardt), the
  lowest training loss kept: an ERM approximation that says when it is exact;
  :func:`fit_basin_hopping` adds basin hopping from the best restarts.
* paths (:mod:`relulab.dynamics.paths`): loss along linear, polyline and Bezier paths
  between two networks after aligning their symmetries, barriers, a Bezier search.

Example:
    >>> import numpy as np
    >>> from relulab.dynamics import mlp, train
    >>> X = np.eye(3); y = np.array([1.0, 2.0, 3.0])
    >>> t = train(mlp([3, 8, 1], seed=0), X, y, optimizer="flow", lr=0.01, steps=100)
    >>> t.flow.ok, t.records["norms"].shape
    (True, (11, 2, 8))
"""

from ._model import DynamicsError, as_module, mlp, to_network
from .dichotomies import linear_dichotomies, ternary_patterns
from .kernels import (
    KernelError,
    KernelRidge,
    arccos_moment2,
    empirical_ntk,
    kappa0,
    kappa1,
    kernel_ridge,
    nngp,
    ntk,
    ntk_fluctuation,
    random_ntk_network,
)
from .kernels_mc import MonteCarloNTK, monte_carlo_ntk, seeded_ntk_network, streamed_ntk
from .loop import LOSSES, OPTIMIZERS, train
from .multistart import MultistartFit, fit_basin_hopping, fit_multistart
from .paths import LOSSES as PATH_LOSSES
from .paths import (
    PATHS,
    BezierSearch,
    PathError,
    PathResult,
    PolylineSearch,
    align,
    bezier_search,
    layer_norms,
    path_losses,
    path_point,
    polyline_search,
)
from .recorders import (
    RECORDER_NAMES,
    ActivationPatterns,
    Alignment,
    Directions,
    DistanceTo,
    EffectiveWidth,
    FunctionRecorder,
    NeuronNorms,
    Outputs,
    Params,
    Recorder,
    RegionCount,
    direction_clusters,
    effective_width,
)
from .saddles import Jump, Plateau, SaddleEvents, plateaus, saddle_events
from .trajectory import FlowCheck, PatternChanges, Trajectory

__all__ = [
    "train",
    "Trajectory",
    "FlowCheck",
    "PatternChanges",
    "DynamicsError",
    "mlp",
    "as_module",
    "to_network",
    "LOSSES",
    "OPTIMIZERS",
    "RECORDER_NAMES",
    "Recorder",
    "NeuronNorms",
    "Directions",
    "Alignment",
    "ActivationPatterns",
    "EffectiveWidth",
    "RegionCount",
    "DistanceTo",
    "Params",
    "Outputs",
    "FunctionRecorder",
    "effective_width",
    "direction_clusters",
    "saddle_events",
    "plateaus",
    "SaddleEvents",
    "Plateau",
    "Jump",
    "linear_dichotomies",
    "ternary_patterns",
    "KernelError",
    "KernelRidge",
    "empirical_ntk",
    "kappa0",
    "kappa1",
    "kernel_ridge",
    "nngp",
    "ntk",
    "ntk_fluctuation",
    "arccos_moment2",
    "random_ntk_network",
    "monte_carlo_ntk",
    "MonteCarloNTK",
    "seeded_ntk_network",
    "streamed_ntk",
    "PATH_LOSSES",
    "PATHS",
    "BezierSearch",
    "PathError",
    "PathResult",
    "align",
    "bezier_search",
    "PolylineSearch",
    "polyline_search",
    "layer_norms",
    "path_losses",
    "path_point",
    "fit_multistart",
    "fit_basin_hopping",
    "MultistartFit",
]
