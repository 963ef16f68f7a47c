"""Parameter space of ReLU networks: path-lifting, path-norms, Jacobians, functional
dimension, conservation laws.

* :func:`path_lifting` -- the explicit vector of path products with a named index.
* :func:`path_norm` / :func:`path_norms` -- its ``q``-norms (``q`` in ``[0, inf]``) in one
  forward pass, for :class:`~relulab.Network` and torch models
  (:func:`path_norm_torch`, the path-norm toolkit's conventions).
* :func:`path_lifting_jacobian` / :func:`path_lifting_rank` -- the sparse Jacobian of the
  path-lifting from the path-incidence structure, no backpropagation.
* :func:`functional_dimension` -- the rank of the realisation map's Jacobian on a batch,
  numerically (singular-value gap) and exactly (rational arithmetic).
* :func:`conserved_quantities` / :func:`gd_conservation` -- the per-neuron balances that
  gradient flow conserves, and their drift under gradient descent.
* :func:`find_conservation_laws` -- conservation laws beyond ReLU (GELU, SiLU, SwiGLU,
  attention, mixtures of experts), found numerically (``conservation_modern``).

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> from relulab import params
    >>> net = Network([[[1.0], [-2.0]], [[3.0, 4.0]]], [[0.5, 0.0], [1.0]])
    >>> params.path_norm(net, 1) == params.path_lifting(net).norm(1)
    True
"""

from ._rank import RankInfo, exact_rank, numerical_rank
from .conservation import ConservationRun, conserved_quantities, gd_conservation, mse_loss_and_grad
from .conservation_modern import (
    MODERN_ARCHITECTURES,
    ConservationLaws,
    ModernArchitecture,
    find_conservation_laws,
    gd_law_drift,
    gradient_flow_drift,
    law_values,
    lie_rank_bound,
    modern_architecture,
)
from .fdim import (
    FunctionalDimension,
    functional_dimension,
    realization_jacobian,
    rescaling_bound,
    switching_network,
)
from .jacobian import path_lifting_jacobian, path_lifting_jacobian_dense, path_lifting_rank
from .pathlift import PathLifting, n_paths, path_lifting
from .pathnorm import path_norm, path_norm_torch, path_norms
from .vector import (
    ParameterLayout,
    network_from_parameters,
    parameter_layout,
    parameter_names,
    parameter_vector,
)

__all__ = [
    "PathLifting",
    "path_lifting",
    "n_paths",
    "path_norm",
    "path_norms",
    "path_norm_torch",
    "path_lifting_jacobian",
    "path_lifting_jacobian_dense",
    "path_lifting_rank",
    "FunctionalDimension",
    "functional_dimension",
    "realization_jacobian",
    "rescaling_bound",
    "switching_network",
    "conserved_quantities",
    "gd_conservation",
    "mse_loss_and_grad",
    "ConservationRun",
    "ModernArchitecture",
    "MODERN_ARCHITECTURES",
    "modern_architecture",
    "ConservationLaws",
    "find_conservation_laws",
    "law_values",
    "gradient_flow_drift",
    "gd_law_drift",
    "lie_rank_bound",
    "RankInfo",
    "numerical_rank",
    "exact_rank",
    "ParameterLayout",
    "parameter_layout",
    "parameter_vector",
    "parameter_names",
    "network_from_parameters",
]
