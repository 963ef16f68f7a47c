"""Lipschitz constants of ReLU networks, exact and bracketed, and the decision problems
around them (positivity, surjectivity, zonotope containment).

* :func:`lipschitz`: ``lower <= L <= upper`` over a Box/Polytope or all of R^d for any
  input norm ``p >= 1`` and output norm ``q``; exact by region enumeration (any norm
  with a computable operator norm) or by the LipMIP program (``p in {1, inf}``), with
  upper bounds (layer-norm product, interval Jacobian, LipSDP for l2) and certified
  lower bounds (sampling + local search; :func:`ascent_lower`, smoothed gradient
  ascent on the Jacobian's norm, for high input dimensions).
* :func:`operator_norm`: ``||A||_{p->q}``, exact where a formula exists.
* :func:`is_positive`, :func:`surjective`, :func:`zonotope_contains`: exact answers with
  re-checked certificates (also exported from :mod:`relulab.verify`).

Example:
    >>> import numpy as np
    >>> from relulab import Network, Box
    >>> from relulab.lipschitz import lipschitz
    >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]])
    >>> r = lipschitz(net, Box([-1], [1]), p=2)
    >>> r.status, r.lower, r.upper
    ('exact', 2.0, 2.0)
"""

from .ascent import ascent_lower
from .core import LIP_REL_TOL, METHODS, LipschitzError, lipschitz
from .decide import (
    Zonotope,
    is_positive,
    offset_bound,
    positivity_network,
    surjective,
    zonotope_contains,
)
from .enumeration import by_enumeration
from .jacobians import bias_free, homogenize, jacobians, pattern_jacobian
from .lower import sampled_lower
from .milp import by_milp
from .norms import NormBracket, dual_exponent, operator_norm, vector_norm
from .result import (
    ContainmentResult,
    LipschitzResult,
    LipschitzWitness,
    PositivityResult,
    SurjectivityResult,
)
from .upper import interval_jacobian_bound, product_bound, sdp_bound

__all__ = [
    "lipschitz",
    "LipschitzResult",
    "LipschitzWitness",
    "LipschitzError",
    "METHODS",
    "LIP_REL_TOL",
    "by_enumeration",
    "by_milp",
    "product_bound",
    "interval_jacobian_bound",
    "sdp_bound",
    "sampled_lower",
    "ascent_lower",
    "operator_norm",
    "NormBracket",
    "dual_exponent",
    "vector_norm",
    "jacobians",
    "pattern_jacobian",
    "homogenize",
    "bias_free",
    "is_positive",
    "surjective",
    "zonotope_contains",
    "Zonotope",
    "offset_bound",
    "positivity_network",
    "PositivityResult",
    "SurjectivityResult",
    "ContainmentResult",
]
