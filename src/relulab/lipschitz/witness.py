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

__all__ = ["certify_point", "exact_local_jacobian"]


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
    if certified_mask(margin)[0]:
        Jx = J[0]
    else:
        # a pre-activation at (or within round-off of) 0: the point may still be interior,
        # when every such neuron is identically 0 near x (a pruned neuron, or one that
        # only reads neurons that are off there); decided in exact arithmetic
        Jx = exact_local_jacobian(net, x)
        if Jx is None:
            return None
    pats = net.pattern_vector(x[None])[0]
    nb = operator_norm(Jx, p, q)
    return LipschitzWitness(x, Jx, float(nb.lower), source,
                            "".join("1" if v else "0" for v in pats))


# exact fallback only for networks where Fraction arithmetic stays cheap
_EXACT_OPS = 500_000


def exact_local_jacobian(net: Network, x: np.ndarray) -> np.ndarray | None:
    """The Jacobian at ``x`` when ``net`` is affine on a neighbourhood of ``x``, decided
    in exact rational arithmetic (weights and ``x`` read as the rationals they are);
    None when some neuron's pre-activation is 0 at ``x`` with a non-zero gradient (``x``
    lies on a region boundary) or the network is too large for the exact check.

    Layer by layer the pre-activations are affine near ``x`` (induction), so a neuron
    with ``z_j(x) = 0`` and ``grad z_j = 0`` is identically 0 near ``x``: it contributes
    nothing, whichever side its ReLU is read on.

    Example:
        >>> # relu(relu(x)) is identically 0 for x < 0, so x = -0.5 is interior
        >>> net = Network([[[1.0]], [[1.0]], [[1.0]]], [[0.0], [0.0], [0.0]])
        >>> exact_local_jacobian(net, np.array([-0.5])).tolist(), exact_local_jacobian(net, np.array([0.0]))
        ([[0.0]], None)
    """
    from fractions import Fraction

    d = net.input_dim
    widths = [d, *net.widths, net.output_dim]
    if sum(a * b for a, b in zip(widths[:-1], widths[1:], strict=True)) * (d + 1) > _EXACT_OPS:
        return None
    ex = net if net.is_exact else net.exact()
    Ws = [np.asarray(W, dtype=object) for W in ex.weights]
    bs = [np.asarray(b, dtype=object).ravel() for b in ex.biases]
    h = np.array([Fraction(float(v)) for v in x], dtype=object)
    G = np.array([[Fraction(int(i == j)) for j in range(d)] for i in range(d)], dtype=object)  # dh/dx
    for W, b in zip(Ws[:-1], bs[:-1], strict=True):
        z = W.dot(h) + b
        Gz = W.dot(G)
        on = np.array([v > 0 for v in z], dtype=bool)
        zero = np.array([v == 0 for v in z], dtype=bool)
        if np.any(zero & np.array([any(g != 0 for g in row) for row in Gz], dtype=bool)):
            return None
        h = np.where(on, z, Fraction(0))
        G = Gz * on[:, None]
    J = Ws[-1].dot(G)
    if ex.skip is not None:
        J = J + np.asarray(ex.skip[0], dtype=object)
    return np.asarray(J, dtype=np.float64).reshape(net.output_dim, d)
