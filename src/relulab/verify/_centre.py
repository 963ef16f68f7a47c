"""Moving a box far from the origin to the origin before its MILP is built.

A box near 1e6 under first-layer weights of 1e3 and biases of 1e9 that cancel gives the
MILP rows whose constants (1e9) float64 resolves only to 2.4e-7, and HiGHS's feasibility
tolerance is set below that: its "optimal" bound of a 4-4-4-1 network was 626,666 under
the maximum, and verify said "holds" on a violated property.  On the box moved to the
origin, ``u -> f(c + u)`` has the same weights and first-layer biases ``b + W c`` of the
pre-activations' own size; the float64 rounding of ``b + W c`` is bounded and added to
the MILP's error (:func:`shift_error`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np

from ..domain import Box, DomainError, Polytope
from ..network import Network

# a coordinate is moved when its interval's centre is farther from 0 than this, and
# farther than the interval's width (an interval holding 0 stays where it is)
CENTRE_FROM = 1.0
# and scaled by a power of two when it ranges beyond WIDE_COLUMN while its first-layer
# weights are all SMALL_COLUMN times smaller than another input's: its weights then come
# to the size of the largest (its range not below 1).  An input over 1e10 under weights
# of 1e-7, beside one over 1 under weights of 1e3, left HiGHS's "optimal" bound 270,000
# under the maximum.  (Scaling every wide input moved a huge range of a lone input into
# huge weights and broke a case that was right; an absolute threshold on the weights
# left a cliff: weights of 2e-3 beside 1e5 were not scaled.)
SMALL_COLUMN = 2.0 ** -10
WIDE_COLUMN = 2.0 ** 10
_EPS = float(np.finfo(np.float64).eps)


@dataclass(frozen=True)
class Centred:
    """``net`` (u -> f(c + scale u) with rounded biases; ``scale`` None: 1) on ``box``
    (the input box minus ``c``, rounded outward, over ``scale``), and bounds on what the
    rounding moved: ``first`` per first-layer
    pre-activation, ``skip`` per output (the skip's bias)."""

    net: Network
    box: Box
    c: np.ndarray
    first: np.ndarray
    skip: np.ndarray
    scale: np.ndarray | None = None
    polytope: Polytope | None = None

    @property
    def domain(self) -> Box | Polytope:
        """The moved domain: the moved polytope (see :func:`centre_domain`), else the box."""
        return self.box if self.polytope is None else self.polytope

    def to_input(self, u: np.ndarray, box: Box) -> np.ndarray:
        """The input ``c + scale u`` of a point of the moved box, clipped to ``box`` (the
        caller re-checks it there)."""
        u = np.asarray(u, dtype=np.float64)
        if self.scale is not None:
            u = u * self.scale
        return np.clip(u + self.c, box.lo, box.hi)


def centre(net: Network, box: Box) -> Centred | None:
    """The network and box moved so that ``box``'s far coordinates are centred at 0, and
    its wide ones under comparatively small weights (see ``SMALL_COLUMN``) scaled by a
    power of two that brings those weights to the largest's size (None when there is
    nothing to move).
    ``net`` is a float64 network.

    Example:
        >>> net = Network([[[1.0]], [[1.0]]], [[-1e6], [0.0]])       # relu(x - 1e6)
        >>> m = centre(net, Box([1e6 - 1.0], [1e6 + 1.0]))
        >>> m.box.lo.tolist(), m.box.hi.tolist(), m.net.biases[0].tolist(), bool(m.first[0] < 1e-9)
        ([-1.0], [1.0], [0.0], True)
    """
    lo, hi = box.lo, box.hi
    mid = lo / 2 + hi / 2
    far = (np.abs(mid) > CENTRE_FROM) & (np.abs(mid) > hi - lo)
    W1 = np.asarray(net.weights[0], dtype=np.float64)
    col = np.max(np.abs(W1), axis=0, initial=0.0)
    if net.skip is not None:
        col = np.maximum(col, np.max(np.abs(np.asarray(net.skip[0], dtype=np.float64)), axis=0, initial=0.0))
    half = hi / 2 - lo / 2
    top = float(np.max(col, initial=0.0))
    wide = (half >= WIDE_COLUMN) & (col > 0) & (col < SMALL_COLUMN * top)
    # x = c + scale u: a power of two per coordinate (exact on the weights and the box)
    # bringing its weights to the largest input's binade, but its range not below 1
    e_col = np.frexp(np.where(wide, col, 1.0))[1]
    e_top = np.frexp(top if top > 0 else 1.0)[1]
    e_half = np.frexp(np.where(wide, half, 1.0))[1] - 1
    e = np.minimum(np.minimum(e_top - e_col, e_half), 1000)
    wide &= e > 0
    scale = np.where(wide, np.ldexp(1.0, np.where(wide, e, 0)), 1.0)
    if not (far.any() or wide.any()):
        return None
    c = np.where(far, mid, 0.0)
    b1 = np.asarray(net.biases[0], dtype=np.float64)
    new_b1 = b1 + W1 @ c
    # float64's dot product error: |fl(b + W c) - (b + W c)| <= gamma_(d+1) (|b| + |W| |c|)
    first = _gamma(W1.shape[1] + 1) * (np.abs(b1) + np.abs(W1) @ np.abs(c))
    biases = [new_b1] + [np.asarray(b, dtype=np.float64) for b in net.biases[1:]]
    weights = [W1 * scale[None, :]] + [np.asarray(W, dtype=np.float64) for W in net.weights[1:]]
    skip = None
    skip_err = np.zeros(net.output_dim)
    if net.skip is not None:
        S, s = (np.asarray(a, dtype=np.float64) for a in net.skip)
        skip = (S * scale[None, :], s + S @ c)
        skip_err = _gamma(S.shape[1] + 1) * (np.abs(s) + np.abs(S) @ np.abs(c))
    if not (np.all(np.isfinite(new_b1)) and np.all(np.isfinite(first)) and np.all(np.isfinite(weights[0]))
            and (skip is None or (np.all(np.isfinite(skip[0])) and np.all(np.isfinite(skip[1]))))):
        return None   # (beyond float64: left as it is)
    # (a power of two divides exactly: the outward rounding of lo - c and hi - c is kept)
    moved = Box(_minus_outward(lo, c, -1.0) / scale, _minus_outward(hi, c, 1.0) / scale)
    return Centred(Network(weights, biases, skip), moved, c, first, skip_err,
                   None if not wide.any() else scale)


def centre_domain(net: Network, domain: Box | Polytope, box: Box) -> Centred | None:
    """:func:`centre` for a box or a polytope with bounding box ``box``: the polytope
    ``{x : A x <= b}`` moved with it to ``{u : A diag(scale) u <= b - A c}``, its right-hand
    side rounded outward by the float64 error bound of ``b - A c`` (every point of the
    polytope stays in the moved one; a point the MILP gives is re-checked on the
    original).  A thin polytope near 2.7e6 whose rows cancel first-layer biases of 3e6 had
    a maximum "proven" 0.6 under an exact value.  None when there is nothing to move, or
    the moved rows would hold entries the LP solver reads as 0.

    Example:
        >>> net = Network([[[1.0]], [[1.0]]], [[-1e6], [0.0]])
        >>> P = Polytope([[1.0], [-1.0]], [1e6 + 1.0, -(1e6 - 1.0)])
        >>> m = centre_domain(net, P, P.bounding_box())
        >>> m.domain.contains([[-1.0], [1.0]]).tolist(), bool(m.domain.b.max() < 1.01)
        ([True, True], True)
    """
    moved = centre(net, box)
    if moved is None or isinstance(domain, Box):
        return moved
    A, b = np.asarray(domain.A, dtype=np.float64), np.asarray(domain.b, dtype=np.float64)
    c = moved.c
    rhs = b - A @ c
    err = _gamma(A.shape[1] + 1) * (np.abs(b) + np.abs(A) @ np.abs(c))
    rhs = np.nextafter(rhs + err, np.inf)   # (the sum's own rounding: one more step out)
    A_moved = A if moved.scale is None else A * moved.scale[None, :]
    if not (np.all(np.isfinite(rhs)) and np.all(np.isfinite(A_moved))):
        return None
    try:
        # cut by the moved box (outward already), which stands as its enclosing box
        P = Polytope(A_moved, rhs, check_empty=False).within_box(moved.box)
    except DomainError:
        return None   # (scaled columns the LP reads as 0, or a far row: left as it is)
    return replace(moved, polytope=P)


def shift_error(Ws: list[np.ndarray], C: np.ndarray, moved: Centred) -> np.ndarray:
    """A bound, per row of ``C``, on ``|C (f(c + scale u) - g(u))|`` for the moved network
    ``g``: the first-layer offsets carried through ``|W_L| ... |W_2|`` (a ReLU moves its
    output no more than its input), plus the skip's, doubled against the rounding of
    this product.

    Example:
        >>> net = Network([[[1.0]], [[3.0]]], [[-1e6], [0.0]])
        >>> m = centre(net, Box([1e6 - 1.0], [1e6 + 0.5]))
        >>> bool(shift_error([np.array([[1.0]]), np.array([[3.0]])], np.array([[1.0]]), m)[0] >= 0)
        True
    """
    v = moved.first
    for W in Ws[1:]:
        v = np.abs(W) @ v
    return 2.0 * (np.abs(np.atleast_2d(C)) @ (v + moved.skip))


def _gamma(n: int) -> float:
    return 1.01 * n * _EPS / (1 - n * _EPS)


def _minus_outward(v: np.ndarray, c: np.ndarray, direction: float) -> np.ndarray:
    """``v - c`` per entry, moved one float step in ``direction`` where it is inexact."""
    out = v - c
    for i in np.nonzero(c)[0]:
        if Fraction(float(out[i])) != Fraction(float(v[i])) - Fraction(float(c[i])):
            out[i] = np.nextafter(out[i], direction * np.inf)
    return out
