"""1-D and 2-D slices of the linear-region complex."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..domain import Box
from ..errors import RelulabError, UncertifiedCount
from ..limits import Deadline, check_seconds
from ..network import Network
from ..results import Result
from ..tolerance import ROUNDOFF, or_default

__all__ = ["Segment", "along_segment", "Slice2D", "Polygon", "slice2d", "restrict_affine"]


def _fraction(v: Any) -> Fraction:
    """The exact value of a number as a Fraction of Python ints (a numpy int64 kept as the
    numerator would overflow in later products)."""
    return Fraction(v.item() if isinstance(v, np.generic) else v)


def restrict_affine(net: Network, origin: Any, directions: Any) -> Network:
    """The network ``s -> net(origin + directions.T @ s)`` on a k-dimensional slice
    (``directions``: k vectors of length d).  Exact networks stay exact."""
    ex = net.is_exact
    dt = object if ex else np.float64
    conv = (lambda a: np.array([[_fraction(v) for v in row] for row in np.atleast_2d(np.asarray(a, dtype=object))],
                               dtype=object)) if ex else (lambda a: np.atleast_2d(np.asarray(a, dtype=np.float64)))
    D = conv(directions)  # (k, d)
    o = conv(origin).reshape(-1)
    if D.shape[1] != net.input_dim or o.shape[0] != net.input_dim:
        raise RelulabError(
            f"slice: origin/directions have length {o.shape[0]}/{D.shape[1]}; "
            f"the network takes {net.input_dim} inputs"
        )
    W0, b0 = net.weights[0], net.biases[0]
    Ws = [np.asarray(W0 @ D.T, dtype=dt), *net.weights[1:]]
    bs = [np.asarray(W0 @ o + b0, dtype=dt), *net.biases[1:]]
    skip = None
    if net.skip is not None:
        S, s = net.skip
        skip = (S @ D.T, S @ o + s)
    return Network(Ws, bs, skip, exact=ex)


# --------------------------------------------------------------------- 1-D
@dataclass(frozen=True)
class Segment:
    """The network on the segment ``x(t) = a + t (b - a)``, ``t`` in [0, 1], in complete
    piecewise-linear form: ``breakpoints`` ``0 = t_0 < t_1 < ... < t_k = 1`` (the inner
    ones are the kinks, where the activation pattern changes), ``values`` ``f(x(t_i))``
    (shape (k + 1, m)) and ``slopes`` ``df/dt`` on each piece (shape (k, m)).
    Entries are Fractions for an exact network.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
        >>> seg = along_segment(net, [-1.0], [1.0])
        >>> seg.breakpoints.tolist(), seg.values.ravel().tolist(), seg.slopes.ravel().tolist()
        ([0.0, 0.5, 1.0], [1.0, 0.0, 1.0], [-2.0, 2.0])
    """

    a: np.ndarray
    b: np.ndarray
    breakpoints: np.ndarray
    values: np.ndarray
    slopes: np.ndarray
    patterns: np.ndarray
    # float networks: zeros closer than the merge tolerance (1e-12 of the parameter range)
    # to each other or to an end are one breakpoint; ``near_breakpoints`` counts those
    # farther apart than their own rounding, where a piece may have been lost (a spike of
    # width 2e-6 on [-1e6, 1e6]), and ``certified`` is False then (always True when exact)
    near_breakpoints: int = 0
    certified: bool = True

    @property
    def n_pieces(self) -> int:
        return int(self.slopes.shape[0])

    @property
    def kinks(self) -> np.ndarray:
        """The inner breakpoints."""
        return self.breakpoints[1:-1]

    @property
    def points(self) -> np.ndarray:
        """The breakpoints as input points ``a + t (b - a)``."""
        t = self.breakpoints
        return self.a[None, :] + t[:, None] * (self.b - self.a)[None, :]

    def __call__(self, t: Any) -> np.ndarray:
        """Evaluate the piecewise-linear form at parameters ``t`` (floats)."""
        t = np.atleast_1d(np.asarray(t, dtype=np.float64))
        bp = self.breakpoints.astype(np.float64)
        i = np.clip(np.searchsorted(bp, t, side="right") - 1, 0, self.n_pieces - 1)
        return self.values[i].astype(np.float64) + (t - bp[i])[:, None] * self.slopes[i].astype(
            np.float64)

    def to_dict(self) -> dict:
        from ..results import to_jsonable

        return {
            "a": to_jsonable(self.a), "b": to_jsonable(self.b),
            "breakpoints": to_jsonable(self.breakpoints), "values": to_jsonable(self.values),
            "slopes": to_jsonable(self.slopes), "pieces": self.n_pieces,
            "certified": bool(self.certified), "near_breakpoints": int(self.near_breakpoints),
        }


def along_segment(net: Network, a: Any, b: Any, *, tol: float | None = None,
                  time_limit: float | None = None) -> Segment:
    """Every breakpoint of ``net`` on the segment from ``a`` to ``b``.

    ``time_limit`` (seconds, None: none): checked before each layer; past it no segment
    is returned (:class:`~relulab.errors.UncertifiedCount`), as there is no partial one.

    Works layer by layer on intervals of ``t``: on each interval every neuron of the
    next layer is affine in ``t``, so its zero is found by one division and the
    interval is cut there.  For an exact (Fraction) network the breakpoints, values
    and slopes are exact rationals.  For a univariate network with ``a = lo`` and
    ``b = hi`` this is its complete piecewise-linear form on [lo, hi].

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0], [1.0]], [[1.0, -2.0]]], [[0.0, -1.0], [0.0]])
        >>> seg = along_segment(net, [-1.0], [3.0])
        >>> seg.points.ravel().tolist(), seg.slopes.ravel().tolist()
        ([-1.0, 0.0, 1.0, 3.0], [0.0, 4.0, -4.0])
    """
    if not isinstance(net, Network):
        raise RelulabError(f"along_segment: expected a relulab Network, got {type(net).__name__}")
    if tol is not None and (isinstance(tol, bool) or not isinstance(tol, (int, float, np.number))
                            or not 0 <= tol < 1):   # (NaN fails the range test too)
        raise RelulabError(f"along_segment: tol must be a number in [0, 1) (a share of the "
                           f"parameter range), got {tol!r}")
    tol = or_default(tol, ROUNDOFF)
    deadline = Deadline(check_seconds(time_limit, "along_segment"))
    ex = net.is_exact
    one = Fraction(1) if ex else 1.0
    zero = Fraction(0) if ex else 0.0
    # exact networks: b - a in rationals (in float it would be another segment)
    try:
        av = np.array([_fraction(v) for v in np.ravel(np.asarray(a, dtype=object))], dtype=object) if ex \
            else np.asarray(a, float).ravel()
        bv = np.array([_fraction(v) for v in np.ravel(np.asarray(b, dtype=object))], dtype=object) if ex \
            else np.asarray(b, float).ravel()
    except (TypeError, ValueError, OverflowError):
        # (an infinite end of an exact network was a raw OverflowError from fractions)
        raise RelulabError(f"along_segment: the ends a and b must be finite points (numbers), "
                           f"got {a!r} and {b!r}") from None
    if av.shape != bv.shape:
        raise RelulabError(f"along_segment: a has {av.size} entries and b has {bv.size}")
    if not ex and not (np.all(np.isfinite(av)) and np.all(np.isfinite(bv))):
        # (it was reported as a NaN weight of the restricted network)
        raise RelulabError("along_segment: the ends a and b must be finite points")
    with np.errstate(over="ignore", invalid="ignore"):
        span = bv - av
    if not ex and not np.all(np.isfinite(span)):
        # (b - a beyond float64 was blamed on the network: "weight contains NaN")
        raise RelulabError("along_segment: b - a overflows float64; give nearer ends")
    g = restrict_affine(net, av, [span])
    # intervals [lo_i, hi_i] with, per interval, the affine map of the current layer's
    # input: h(t) = P_i t + q_i  (shape (n_int, width))
    lo = np.array([zero], dtype=object if ex else float)
    hi = np.array([one], dtype=object if ex else float)
    P = np.ones((1, 1), dtype=object if ex else float) * one
    Q = np.zeros((1, 1), dtype=object if ex else float) * one
    pats: list[np.ndarray] = [np.zeros((1, 0), dtype=bool)]
    near = 0   # zeros dropped or merged although farther apart than their rounding
    for k, (W, bias) in enumerate(zip(g.weights[:-1], g.biases[:-1], strict=True)):
        if deadline.expired():
            raise UncertifiedCount(f"along_segment: the time limit ran out before layer {k + 1} "
                                   f"(with {lo.shape[0]} pieces so far); no segment is returned")
        if ex:  # Fraction products row by row, reading the clock: one 244 x 300 x 300
            # product took 170 s past a 0.6 s limit read only between layers
            Zp, Zq = _exact_rows(P, Q, W, bias, deadline, k)
        else:
            Zp = P @ W.T  # slope of each neuron on each interval
            Zq = Q @ W.T + bias
        if ex:
            lo, hi, Zp_all, Zq_all, parent = _cut_exact(lo, hi, Zp, Zq, deadline, k)
        else:
            lo, hi, Zp_all, Zq_all, parent, n_near = _cut_float(lo, hi, Zp, Zq, tol)
            near += n_near
        mid = (lo + hi) / 2
        zmid = Zp_all * mid[:, None] + Zq_all
        act = np.array(zmid > 0, dtype=bool)
        if not ex:
            act &= ~_constant_zero(zmid, Zp_all, Q[parent], W, bias)
        prev = pats[-1][parent] if pats[-1].shape[1] else np.zeros(
            (lo.shape[0], 0), dtype=bool)
        pats.append(np.concatenate([prev, act], axis=1))
        P = np.where(act, Zp_all, zero)
        Q = np.where(act, Zq_all, zero)
    WL, bL = g.weights[-1], g.biases[-1]
    slopes = P @ WL.T
    offs = Q @ WL.T + bL
    if g.skip is not None:
        slopes = slopes + g.skip[0][:, 0][None, :]
        offs = offs + g.skip[1][None, :]
    # merge neighbouring intervals on which the function has the same slope and pattern
    # does not matter: breakpoints are where the pattern changes (kinks of the complex)
    bps = np.concatenate([lo, hi[-1:]])
    vals = np.concatenate([slopes * lo[:, None] + offs, (slopes[-1:] * hi[-1] + offs[-1:])], axis=0)
    return Segment(a=av, b=bv, breakpoints=bps, values=vals, slopes=slopes, patterns=pats[-1],
                   near_breakpoints=near, certified=near == 0)


# zeros of one point computed along different rows differ by a few of these
ZERO_ULPS = 8


def _ulps(t: np.ndarray) -> np.ndarray:
    """ZERO_ULPS float64 ulps of parameter values (at least those of 1), entrywise."""
    return ZERO_ULPS * float(np.finfo(np.float64).eps) * np.maximum(1.0, np.abs(t))


def _constant_zero(zmid: np.ndarray, Zp: np.ndarray, Qprev: np.ndarray, W: np.ndarray,
                   bias: np.ndarray) -> np.ndarray:
    """Where a float neuron is constant on its piece (slope 0) and its positive value
    is within the rounding of the terms it adds up (``|W| |q| + |b|``, ZERO_ULPS ulps):
    identically 0 there, so inactive, as ties are in the forward pass and the region
    engine (``h1 - h2 + 2`` with ``h2 = h1 + 2`` kept +1e-16 and read active)."""
    out = np.zeros(zmid.shape, dtype=bool)
    ii, jj = np.nonzero((Zp == 0) & (zmid > 0))
    if ii.size:
        terms = np.einsum("pk,pk->p", np.abs(Qprev[ii]), np.abs(W[jj])) + np.abs(bias[jj])
        out[ii, jj] = zmid[ii, jj] <= ZERO_ULPS * float(np.finfo(np.float64).eps) * terms
    return out


def _out_of_time(layer: int, piece: int, pieces: int) -> UncertifiedCount:
    """The error for a time limit that ran out inside a layer (0-based ``layer``, ``piece``)."""
    return UncertifiedCount(f"along_segment: the time limit ran out in layer {layer + 1} "
                            f"(at piece {piece + 1} of {pieces}); no segment is returned")


def _exact_rows(P: np.ndarray, Q: np.ndarray, W: np.ndarray, bias: np.ndarray, deadline: Deadline,
                layer: int) -> tuple[np.ndarray, np.ndarray]:
    """``P W^T`` and ``Q W^T + bias`` in Fractions, one interval (row) at a time, raising
    :class:`~relulab.errors.UncertifiedCount` once ``deadline`` has passed."""
    Zp = np.empty((P.shape[0], W.shape[0]), dtype=object)
    Zq = np.empty((Q.shape[0], W.shape[0]), dtype=object)
    WT = W.T
    for i in range(P.shape[0]):
        if deadline.expired():
            raise _out_of_time(layer, i, P.shape[0])
        Zp[i] = P[i] @ WT
        Zq[i] = Q[i] @ WT + bias
    return Zp, Zq


def _cut_exact(lo: np.ndarray, hi: np.ndarray, Zp: np.ndarray, Zq: np.ndarray,
               deadline: Deadline | None = None, layer: int = 0) -> tuple:
    """Cut every interval ``[lo_i, hi_i]`` at the zeros strictly inside it of the
    neurons ``Zp[i] t + Zq[i]`` (Fractions): the new intervals' ends, their neurons'
    slopes and offsets, and each one's parent interval.  Past ``deadline`` (read at
    every interval: one wide exact layer ran far past a limit read only between layers)
    :class:`~relulab.errors.UncertifiedCount` is raised."""
    new_lo, new_hi, parent = [], [], []
    for i in range(lo.shape[0]):
        if deadline is not None and deadline.expired():
            raise _out_of_time(layer, i, lo.shape[0])
        l, h = lo[i], hi[i]
        cuts = sorted({t for t in (-Zq[i, j] / Zp[i, j] for j in range(Zp.shape[1]) if Zp[i, j] != 0)
                       if l < t < h})
        pts = [l, *cuts, h]
        new_lo += pts[:-1]
        new_hi += pts[1:]
        parent += [i] * (len(pts) - 1)
    par = np.array(parent, dtype=np.int64)
    return (np.array(new_lo, dtype=object), np.array(new_hi, dtype=object),
            Zp[par], Zq[par], par)


def _cut_float(lo: np.ndarray, hi: np.ndarray, Zp: np.ndarray, Zq: np.ndarray,
               tol: float) -> tuple:
    """As :func:`_cut_exact` in float64, for all intervals at once, with the number of
    zeros dropped or merged although farther apart than their rounding.  Zeros within
    ``tol`` of the interval's length (at least 1) of an end are dropped; zeros closer
    than that to the previous one are one breakpoint (several neurons vanishing at one
    point give zeros a few ulps apart: not a sliver piece between them)."""
    n = lo.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        T = np.where(Zp != 0, -Zq / np.where(Zp != 0, Zp, 1.0), np.nan)
    sep = tol * np.maximum(1.0, np.abs(hi - lo))
    L, H, S = lo[:, None], hi[:, None], sep[:, None]
    strictly = (L < T) & (T < H)
    inside = (L + S < T) & (T < H - S)
    near = int(np.count_nonzero(strictly & ~inside & (np.minimum(T - L, H - T) > _ulps(T))))
    row, col = np.nonzero(inside)
    t = T[row, col]
    order = np.lexsort((t, row))
    row, t = row[order], t[order]
    first = np.ones(row.size, dtype=bool)
    first[1:] = row[1:] != row[:-1]
    gap = np.empty(row.size)
    gap[0:1] = np.inf
    gap[1:] = t[1:] - t[:-1]
    keep = first | (gap > sep[row])
    # equal zeros are one zero; distinct ones merged within the separation may hide a piece
    near += int(np.count_nonzero(~keep & (gap > _ulps(t))))
    row, t = row[keep], t[keep]
    k = np.bincount(row, minlength=n)              # kept cuts per interval
    parent = np.repeat(np.arange(n), k + 1)
    start = np.concatenate([[0], np.cumsum(k + 1)[:-1]])   # each interval's first piece
    new_lo = np.empty(parent.size)
    new_hi = np.empty(parent.size)
    is_start = np.zeros(parent.size, dtype=bool)
    is_start[start] = True
    new_lo[is_start] = lo
    new_lo[~is_start] = t                          # the cuts, interval by interval, sorted
    end = start + k                                # each interval's last piece
    is_end = np.zeros(parent.size, dtype=bool)
    is_end[end] = True
    new_hi[is_end] = hi
    new_hi[~is_end] = t
    return new_lo, new_hi, Zp[parent], Zq[parent], parent, near




# --------------------------------------------------------------------- 2-D
@dataclass(frozen=True)
class Polygon:
    """One linear region of a 2-D slice: vertices in counter-clockwise order (slice
    coordinates), activation pattern, and the network's affine map in slice
    coordinates, ``f(origin + s u + t v) = C [s, t] + c``.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> net = Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
        >>> p = next(p for p in slice2d(net).polygons if p.pattern.all())   # x, y > 0: f = x + y
        >>> p.C.tolist(), p.c.tolist(), round(p.area, 12)
        ([[1.0, 1.0]], [0.0], 1.0)
    """

    vertices: np.ndarray
    pattern: np.ndarray
    C: np.ndarray
    c: np.ndarray

    @property
    def area(self) -> float:
        x, y = self.vertices[:, 0], self.vertices[:, 1]
        return 0.5 * float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))

    def to_dict(self) -> dict:
        return {"vertices": self.vertices.tolist(),
                "pattern": "".join("1" if p else "0" for p in self.pattern),
                "C": self.C.tolist(), "c": self.c.tolist()}


@dataclass(frozen=True)
class Slice2D(Result):
    """The partition of the window of a 2-D slice ``origin + s u + t v`` into the regions
    of the network restricted to it: exact when ``certified`` (the enumeration's float sign
    tests made no decision too close to call: ``near_ties`` 0, no coarse window).

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> net = Network([np.eye(3), np.ones((1, 3))], [np.zeros(3), np.zeros(1)])
        >>> sl = slice2d(net, origin=[0, 0, 0.5], u=[1, 0, 0], v=[0, 1, 0])   # the plane z = 0.5
        >>> len(sl), sl.window
        (4, (-1.0, 1.0, -1.0, 1.0))
    """

    origin: np.ndarray
    u: np.ndarray
    v: np.ndarray
    window: tuple[float, float, float, float]
    polygons: list[Polygon]
    # as regions.enumerate says of the window (a window of 1e11 around lines a unit apart
    # lost a polygon and said nothing)
    certified: bool = True
    near_ties: int = 0

    def __len__(self) -> int:
        return len(self.polygons)

    def to_point(self, st: Any) -> np.ndarray:
        st = np.atleast_2d(np.asarray(st, dtype=np.float64))
        return self.origin[None, :] + st[:, :1] * self.u[None, :] + st[:, 1:2] * self.v[None, :]


def slice2d(
    net: Network,
    origin: Any = None,
    u: Any = None,
    v: Any = None,
    window: tuple[float, float, float, float] = (-1.0, 1.0, -1.0, 1.0),
) -> Slice2D:
    """The exact partition of the 2-D slice ``{origin + s u + t v}`` with ``(s, t)`` in
    ``window = (s_min, s_max, t_min, t_max)`` into convex polygons.

    Defaults: the origin, and the first two coordinate axes.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> net = Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
        >>> sl = slice2d(net)
        >>> len(sl), round(sum(p.area for p in sl.polygons), 12)
        (4, 4.0)
    """
    from ._enumerate import enumerate_regions

    if not isinstance(net, Network):
        raise RelulabError(f"slice2d: expected a relulab Network, got {type(net).__name__}")
    d = net.input_dim
    if u is None or v is None:
        if d < 2:
            raise RelulabError("slice2d needs a network with at least 2 inputs (or give u and v)")
        eye = np.eye(d)
        u = eye[0] if u is None else u
        v = eye[1] if v is None else v
    try:
        o = np.zeros(d) if origin is None else np.asarray(origin, dtype=np.float64).ravel()
        u = np.asarray(u, dtype=np.float64).ravel()
        v = np.asarray(v, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise RelulabError("slice2d: origin, u and v must be points of numbers") from None
    for name, w in (("origin", o), ("u", u), ("v", v)):
        if w.size != d:
            # (u and v of different lengths were a raw numpy error from np.stack)
            raise RelulabError(f"slice2d: {name} has {w.size} entries; the network has {d} inputs")
    if not all(np.all(np.isfinite(w)) for w in (o, u, v)):
        raise RelulabError("slice2d: origin, u and v must be finite")
    if abs(u[0] * 0 + np.linalg.matrix_rank(np.stack([u, v]))) < 2:
        raise RelulabError("slice2d: the directions u and v are parallel")
    try:
        s0, s1, t0, t1 = (float(w) for w in window)
    except (TypeError, ValueError):
        raise RelulabError(f"slice2d: window must be four numbers (s0, s1, t0, t1), got {window!r}") from None
    g = restrict_affine(net.float() if net.is_exact else net, o, np.stack([u, v]))
    rs = enumerate_regions(g, Box([s0, t0], [s1, t1]))
    polys = []
    pats = rs.patterns
    for i in range(len(rs)):
        V = rs.vertices[rs.vertex_ptr[i] : rs.vertex_ptr[i + 1]]
        c = V.mean(0)
        ang = np.arctan2(V[:, 1] - c[1], V[:, 0] - c[0])
        V = V[np.argsort(ang)]
        aff = rs.affine[i]
        polys.append(Polygon(vertices=V, pattern=pats[i], C=aff[:, :2], c=aff[:, 2]))
    return Slice2D(origin=o, u=u, v=v, window=(s0, s1, t0, t1), polygons=polys,
                   certified=bool(rs.certified), near_ties=int(rs.info.get("near_ties", 0)))
