"""relulab: exact answers about ReLU networks as the piecewise-linear functions they compute.

Example:
    >>> import numpy as np, relulab
    >>> net = relulab.Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
    >>> net.widths, net.n_params
    ((2,), 9)
"""

from .domain import Box, DomainError, Polytope
from .errors import FormatError, RelulabError
from .network import Network, NetworkError

__version__ = "0.1.0"

__all__ = [
    "Network",
    "NetworkError",
    "Box",
    "Polytope",
    "DomainError",
    "RelulabError",
    "FormatError",
    "__version__",
]
