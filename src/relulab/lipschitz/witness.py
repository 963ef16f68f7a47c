"""Witnesses of a Lipschitz lower bound: a point strictly inside its linear region.

Shared by every route (enumeration, MILP, branch and bound, sampling), so that none of
them imports another to certify a point.
"""

from __future__ import annotations

import numpy as np

from ..domain import Box, Polytope
from ..network import Network
from .jacobians import certified_mask, jacobians
from .norms import operator_norm
from .result import LipschitzWitness

__all__ = ["certify_point"]


def certify_point(net: Network, x: np.ndarray, p: float, q: float | None, source: str,
                  domain: Box | Polytope | None = None) -> LipschitzWitness | None:
    """A witness at ``x`` when ``x`` lies strictly inside its region (and in ``domain``),
    else None.  The norm is the certified lower end of the operator-norm bracket.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0]], [[3.0]]], [[0.0], [0.0]])
        >>> certify_point(net, np.array([0.5]), 2, None, "demo").norm
        3.0
    """
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(x)):
        return None
    if domain is not None and not bool(domain.contains(x)):
        return None
    J, margin = jacobians(net, x[None])
    if not certified_mask(margin)[0]:
        return None
    pats = net.pattern_vector(x[None])[0]
    nb = operator_norm(J[0], p, q)
    return LipschitzWitness(x, J[0], float(nb.lower), source,
                            "".join("1" if v else "0" for v in pats))
