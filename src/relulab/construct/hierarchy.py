"""A depth-hierarchy target: a [0, 1]-valued 1-Lipschitz function on R^d realised exactly
by a depth-(k+1) network (k hidden layers) of width 3d.

The separating function of the depth-hierarchy abstract (depth k+1, width O(d^4), squared
L2 error >= 1/24 for depth-k networks of width <= 2^d / (2d(k-1))) is not spelled out
in the abstract; this module builds *our own* function of the same kind, so that the
claim's measurable part can be probed (``experiments/depth_hierarchy.py``):

    ``F_(d,k)(x) = zigzag( sum_i S_(k-1)((x_i - c) / L) )``

* ``S_1`` is the bump ``2 relu(t) - 4 relu(t - 1/2) + 2 relu(t - 1)`` (0 outside
  [0, 1], 1 at 1/2) and ``S_m = tent o S_(m-1)``: ``2^(m-1)`` teeth on [0, 1], slope
  ``2^m`` (one hidden layer each);
* ``zigzag(p) = dist(p, 2Z)`` on [0, d]: 0 at even and 1 at odd p, slopes +-1 (one
  hidden layer of d neurons) -- on the lattice points where every ``S`` is 0 or 1 it is
  the parity of the number of ones, which is what makes shallow networks pay;
* ``L = 2^(k-1) ceil(sqrt d)`` makes F 1-Lipschitz in the Euclidean norm (gradient norm
  ``<= 2^(k-1) sqrt(d) / L``); ``c`` (default ``2^d``) places the oscillating cube
  ``c + [0, L]^d`` at exponential distance from the origin, as the abstract's
  distribution is (a translation, free for networks with biases).

Example:
    >>> net = hierarchy_network(2, 2, offset=0)
    >>> net.widths, [str(v) for v in net([[1, 1], [2, 2]]).ravel()]    # L = 4
    ((6, 2), ['1', '0'])
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..network import Network
from ..results import Result
from ._builder import Builder, F, check_size, esum
from ._errors import ConstructionError
from .maxmin import check_int

__all__ = ["hierarchy_network", "hierarchy_value", "hierarchy_scale", "HierarchyReport",
           "hierarchy_report", "shallow_width_bound"]

HALF = Fraction(1, 2)


def _check(d: int, k: int) -> None:
    for name, v, lo in (("d", d, 1), ("k", k, 2)):
        check_int(v, f"depth hierarchy: {name}", lo)


def hierarchy_scale(d: int, k: int) -> int:
    """``L = 2^(k-1) ceil(sqrt d)``: the side of the cube on which F oscillates.

    Example:
        >>> hierarchy_scale(5, 3)
        12
    """
    _check(d, k)
    return 2 ** (k - 1) * (math.isqrt(d - 1) + 1)


def shallow_width_bound(d: int, k: int) -> int:
    """The abstract's width ``floor(2^d / (2d(k-1)))`` below which depth-k networks are
    claimed to have squared L2 error >= 1/24 (at least 1 here, to train something).

    Example:
        >>> shallow_width_bound(8, 2), shallow_width_bound(8, 3)
        (16, 8)
    """
    _check(d, k)
    return max(1, 2 ** d // (2 * d * (k - 1)))


def _offset(d: int, offset: object | None) -> Fraction:
    return Fraction(2) ** d if offset is None else F(offset)


def hierarchy_value(x: object, k: int, offset: object | None = None) -> Fraction:
    """``F_(d,k)(x)`` straight from the formula, exactly (d = len(x)).

    Example:
        >>> str(hierarchy_value([Fraction(1, 2), 1], 2, offset=0))
        '3/4'
    """
    xs = [F(v) for v in np.asarray(x, dtype=object).reshape(-1)]
    d = len(xs)
    _check(d, k)
    L, c = hierarchy_scale(d, k), _offset(d, offset)
    p = Fraction(0)
    for v in xs:
        t = (v - c) / L
        s = max(Fraction(0), 1 - abs(2 * t - 1)) if 0 <= t <= 1 else Fraction(0)
        for _ in range(k - 2):
            s = 1 - abs(2 * s - 1)
        p += s
    r = p % 2
    return r if r <= 1 else 2 - r


def hierarchy_network(d: int, k: int, offset: object | None = None) -> Network:
    """The exact network of ``F_(d,k)``: k hidden layers (depth k + 1), widths
    ``(3d, 2d, ..., 2d, d)``; see the module docstring.

    Example:
        >>> hierarchy_network(3, 4).widths
        (9, 6, 6, 3)
    """
    _check(d, k)
    check_size(f"hierarchy_network({d}, {k})", layers=k, neurons=3 * d * k)
    L, c = hierarchy_scale(d, k), _offset(d, offset)
    b = Builder(d)
    xs = b.inputs()
    ts = [(x - c) / L for x in xs]
    ss = [b.relu(t) * 2 - b.relu(t - HALF) * 4 + b.relu(t - 1) * 2 for t in ts]
    b.close()
    for _ in range(k - 2):
        ss = [b.relu(s) * 2 - b.relu(s - HALF) * 4 for s in ss]
        b.close()
    p = esum(ss, b.layer)
    # zigzag on [0, d]: p itself (p >= 0) with slope changes -2, +2, ... at 1, ..., d-1
    out = b.relu(p) + esum((b.relu(p - j) * (-2 if j % 2 else 2) for j in range(1, d)), b.layer + 1)
    return b.build([out])


@dataclass(frozen=True)
class HierarchyReport(Result):
    """Facts about ``F_(d,k)`` measured exactly on its network.

    ``regions``: linear regions on the cube ``c + [0, L]^d`` (``relulab.regions``);
    ``max_gradient_norm``: the largest Euclidean gradient norm over those regions (<= 1
    proves 1-Lipschitz there; outside the cube F is constant); ``value_range``: min and
    max over the regions' vertices (the extremes of a CPWL function on a polytope are at
    vertices); ``shallow_width``: the abstract's width bound for depth k.

    Example:
        >>> r = hierarchy_report(2, 2)
        >>> r.regions, r.max_gradient_norm <= 1, r.value_range
        (8, True, (0.0, 1.0))
    """

    d: int
    k: int
    depth: int
    widths: tuple[int, ...]
    scale: int
    offset: Fraction
    regions: int
    max_gradient_norm: float
    value_range: tuple[float, float]
    shallow_width: int


def hierarchy_report(d: int, k: int, offset: object | None = None) -> HierarchyReport:
    """Build ``F_(d,k)`` and measure its regions, Lipschitz constant and range on the
    cube where it is not constant (exponential in d: small d only).

    Example:
        >>> hierarchy_report(1, 3).regions        # the sawtooth of 2 teeth, then zigzag
        4
    """
    from .. import regions
    from ..domain import Box

    net = hierarchy_network(d, k, 0 if offset is None else offset)
    # regions are counted on the cube at the origin: F is translated, so the count, the
    # gradients and the range are the same (on the far cube c + [0, L]^d the float copy
    # lost the features: 1 region, gradient 0, range (0, 0) at c = 2^40)
    at0 = net if offset is None else hierarchy_network(d, k, 0)
    L = hierarchy_scale(d, k)
    rs = regions.enumerate(at0.float(), Box([0.0] * d, [float(L)] * d))
    if rs.partial or not rs.certified:
        raise ConstructionError(f"hierarchy_report: the region enumeration of F_({d},{k}) was not "
                                f"certified ({rs.info.get('stopped') or 'near ties'}); no exact report")
    gmax, lo, hi = 0.0, math.inf, -math.inf
    for r in rs:
        C, _ = r.affine
        gmax = max(gmax, float(np.linalg.norm(np.asarray(C, dtype=float))))
        vals = at0.float()(np.asarray(r.vertices, dtype=float)).ravel()
        lo, hi = min(lo, float(vals.min())), max(hi, float(vals.max()))
    return HierarchyReport(d, k, net.depth, net.widths, L, _offset(d, offset), len(rs),
                           gmax, (round(lo, 12), round(hi, 12)), shallow_width_bound(d, k))
