"""Identifiability from the weighted polyhedral complex of a network.

The linear regions of ``f`` on a box (:func:`relulab.regions.enumerate`) with their affine
maps form a polyhedral complex; every facet between two regions carries a *weight*, the
jump of the gradient of ``f`` across it, and lies on the (bent) hyperplane of one hidden
neuron (:func:`relulab.regions.adjacency`).  A neuron none of whose facets carries a
nonzero weight is invisible in ``f``: its parameters can move without changing ``f`` (a
hidden redundancy beyond scaling and permutation).

:func:`identifiability` reports, for a network on a box:

* the neurons whose bent hyperplane is visible (some facet with nonzero weight) and the
  invisible ones (hidden redundancies);
* the functional dimension (rank of the realisation map's Jacobian on sample points,
  :func:`relulab.params.functional_dimension`) against the bound ``n_params - n_hidden``
  that scaling alone allows;
* ``status``: ``"locally identifiable"`` when every hidden neuron is visible and the
  rank reaches the bound (near this parameter, the function determines it up to scaling
  and permutation: the fibre is the scaling orbit), ``"not identifiable"`` when some
  neuron is invisible or the rank falls short (the redundancies are listed), and
  ``"unknown"`` when the region enumeration was partial or the two tests disagree (a
  bend below the tolerance while the rank reaches the bound).  The rank is numerical (a
  singular-value gap), the weights are differences of the float affine maps compared
  with a tolerance relative to the largest gradient entry ``|W_L| ... |W_1|`` allows;
  the verdict is about the box.

Example:
    >>> from relulab import Network
    >>> net = Network([[[1.0, -1.0], [1.0, 1.0]], [[1.0, -1.0]]], [[0.0, -1.0], [0.0]])
    >>> r = identifiability(net)
    >>> r.status, r.invisible
    ('locally identifiable', ())
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import RelulabError, is_int_at_least
from ..network import Network
from ..results import Result
from ._inputs import cube_box, network_arg

__all__ = ["identifiability", "IdentifiabilityReport"]

# Relative size under which a gradient jump counts as zero (float affine maps).
JUMP_RTOL = 1e-9  # tol: float affine maps' noise


@dataclass(frozen=True)
class IdentifiabilityReport(Result):
    """See the module docstring.  ``visible`` / ``invisible``: ``(layer, neuron)`` pairs;
    ``facet_weights``: the largest gradient jump per neuron.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0, -1.0], [1.0, 1.0]], [[1.0, 0.0]]], [[0.0, -1.0], [0.0]])
        >>> r = identifiability(net)
        >>> r.status, r.invisible
        ('not identifiable', ((0, 1),))
    """

    status: str
    n_regions: int
    visible: tuple
    invisible: tuple
    rank: int
    bound: int
    n_params: int
    facet_weights: tuple
    message: str


def identifiability(net: Network, box: Any = None, *, n_points: int = 0, seed: int = 0) -> IdentifiabilityReport:
    """Decide local identifiability of ``net``'s parameter from its function on ``box``
    (default [0, 1]^d); see the module docstring.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0, -1.0], [1.0, 1.0]], [[1.0, -1.0]]], [[0.0, -1.0], [0.0]])
        >>> r = identifiability(net)
        >>> r.status, r.n_regions, r.rank, r.bound
        ('locally identifiable', 4, 7, 7)
    """
    from .. import params, regions
    from ..regions import neuron_label

    for name, v in (("n_points", n_points), ("seed", seed)):
        if not is_int_at_least(v, 0):
            raise RelulabError(f"identifiability: {name} must be an integer >= 0, got {v!r}")

    netf = network_arg(net, "identifiability").float().without_skip()
    d = netf.input_dim
    B = cube_box(netf, box, "identifiability")
    rs = regions.enumerate(netf, B)
    if rs.partial or not rs.certified:
        why = "partial enumeration" if rs.partial else "enumeration not certified (a near tie)"
        return IdentifiabilityReport("unknown", len(rs), (), (), 0, 0, netf.n_params, (), why)
    E = regions.adjacency(rs, netf)
    N = netf.n_neurons
    best = np.zeros(N)
    # The gradients' rounding grows with |W_L| ... |W_1| (the largest gradient entry any
    # pattern could give), not with 1: a network scaled by 1e-12 is as identifiable as the
    # original, and its jumps must be read against its own size.
    scale = _gradient_scale(netf)
    for i, j, k in E:
        jump = float(np.max(np.abs(rs.affine[i][:, :d] - rs.affine[j][:, :d])))
        best[k] = max(best[k], jump)
    vis = best > JUMP_RTOL * scale
    labels = [neuron_label(netf.widths, k) for k in range(N)]
    visible = tuple(lab for lab, v in zip(labels, vis, strict=True) if v)
    invisible = tuple(lab for lab, v in zip(labels, vis, strict=True) if not v)
    # Points for the rank: the region centres (every region met) plus random points.
    rng = np.random.default_rng(seed)
    X = np.concatenate([rs.interior, B.sample(max(n_points, 4 * netf.n_params), rng)])
    fd = params.functional_dimension(netf, X)
    if not invisible and fd.rank == fd.bound:
        status, msg = "locally identifiable", "every neuron bends visibly and the rank reaches n_params - n_hidden"
    elif fd.rank == fd.bound:
        # the two tests disagree: a bend below the tolerance that still moves the Jacobian
        status = "unknown"
        msg = (f"{len(invisible)} neuron(s) bend by at most {JUMP_RTOL:g} of the gradient scale {scale:.3g} "
               f"(read as invisible), yet the rank reaches n_params - n_hidden = {fd.bound}")
    else:
        status = "not identifiable"
        parts = []
        if invisible:
            parts.append(f"{len(invisible)} neuron(s) invisible in the function (gradient jumps at most "
                         f"{JUMP_RTOL:g} of the gradient scale {scale:.3g})")
        if fd.rank < fd.bound:
            parts.append(f"functional dimension {fd.rank} < {fd.bound}: {fd.bound - fd.rank} hidden direction(s)")
        msg = "; ".join(parts)
    return IdentifiabilityReport(status, len(rs), visible, invisible, int(fd.rank), int(fd.bound),
                                 int(netf.n_params), tuple(float(v) for v in best), msg)


def _gradient_scale(net: Network) -> float:
    """The largest entry of ``|W_L| ... |W_1|``: no region's gradient entry exceeds it.

    Example:
        >>> _gradient_scale(Network([[[2.0, -1.0]], [[-3.0]]], [[0.0], [0.0]]))
        6.0
    """
    P = np.abs(net.weights[0])
    for W in net.weights[1:]:
        P = np.abs(W) @ P
    return float(np.max(P)) if P.size else 0.0
