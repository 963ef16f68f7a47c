"""Univariate CPWL functions as one-hidden-layer networks, and exact piece extraction.

:func:`cpwl_1d` turns breakpoints, values and end slopes into a network with one
hidden layer; :func:`univariate_pieces` recovers, exactly, the maximal linear pieces
of any univariate exact network on an interval (used to count the sawtooth's pieces
and to measure approximation errors exactly).

Example:
    >>> net = cpwl_1d([0, 1, 2], [0, 1, 0])          # a hat on [0, 2], 0 outside
    >>> [str(v) for v in net([[-1], [F('1/2')], [3]]).ravel()]
    ['0', '1/2', '0']
    >>> len(univariate_pieces(net, -1, 3))
    4
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..network import Network
from ._builder import Builder, F
from .maxmin import ConstructionError

__all__ = ["cpwl_1d", "Piece", "univariate_pieces", "count_pieces", "breakpoints_1d"]


def cpwl_1d(breakpoints: Sequence[object], values: Sequence[object],
            left_slope: object = 0, right_slope: object = 0) -> Network:
    """One-hidden-layer network of the continuous piecewise-linear function that
    interpolates ``values`` at ``breakpoints`` (strictly increasing), with slope
    ``left_slope`` left of the first and ``right_slope`` right of the last breakpoint.

    Size: k breakpoints give one hidden layer of k + 1 neurons:
    ``f(x) = v_0 - s_L relu(b_0 - x) + sum_i (s_i - s_{i-1}) relu(x - b_i)`` with
    ``s_{-1} = 0`` and ``s_i`` the slope right of ``b_i``.

    Example:
        >>> cpwl_1d([0], [1], left_slope=-1, right_slope=1)([[2], [-3]]).ravel().tolist()
        [Fraction(3, 1), Fraction(4, 1)]
    """
    bp = [F(v) for v in breakpoints]
    vals = [F(v) for v in values]
    if not bp:
        raise ConstructionError("cpwl_1d: at least one breakpoint is needed")
    if len(bp) != len(vals):
        raise ConstructionError(
            f"cpwl_1d: {len(bp)} breakpoints but {len(vals)} values")
    for i in range(1, len(bp)):
        if bp[i] <= bp[i - 1]:
            raise ConstructionError(
                f"cpwl_1d: breakpoints must increase strictly (position {i}: "
                f"{bp[i]} after {bp[i - 1]})")
    slopes = [(vals[i + 1] - vals[i]) / (bp[i + 1] - bp[i]) for i in range(len(bp) - 1)]
    slopes.append(F(right_slope))
    b = Builder(1)
    (x,) = b.inputs()
    left = b.relu(bp[0] - x)
    out = left * (-F(left_slope)) + vals[0]
    prev = Fraction(0)
    for i, s in enumerate(slopes):
        out = out + b.relu(x - bp[i]) * (s - prev)
        prev = s
    return b.build([out])


@dataclass(frozen=True)
class Piece:
    """A maximal linear piece ``y = slope * x + intercept`` on ``[lo, hi]`` (exact).

    Example:
        >>> p = univariate_pieces(cpwl_1d([0, 1, 2], [0, 1, 0]), -1, 3)[1]
        >>> [str(v) for v in (p.lo, p.hi, p.slope, p.intercept)]     # y = x on [0, 1]
        ['0', '1', '1', '0']
    """

    lo: Fraction
    hi: Fraction
    slope: Fraction
    intercept: Fraction

    def to_dict(self) -> dict:
        return {k: str(v) for k, v in self.__dict__.items()}


def univariate_pieces(net: Network, lo: object, hi: object, output: int = 0) -> list[Piece]:
    """The maximal linear pieces of output ``output`` of a univariate network on
    ``[lo, hi]``, exactly: each layer's pre-activations are affine on the current
    intervals; an interval is split where one crosses zero; adjacent intervals with
    the same affine map are merged at the end.

    Example:
        >>> from relulab.construct import sawtooth
        >>> len(univariate_pieces(sawtooth(3), 0, 1))
        8
    """
    if net.input_dim != 1:
        raise ConstructionError(f"univariate_pieces: the network takes {net.input_dim} inputs, not 1")
    net = net.exact() if not net.is_exact else net
    lo, hi = F(lo), F(hi)
    if not lo < hi:
        raise ConstructionError(f"univariate_pieces: empty interval [{lo}, {hi}]")
    # each cell: (a, b, P, q) with hidden values h(x) = P x + q on [a, b]
    one = np.array([Fraction(1)], dtype=object)
    zero = np.array([Fraction(0)], dtype=object)
    cells = [(lo, hi, one, zero)]
    for W, bias in zip(net.weights[:-1], net.biases[:-1], strict=True):
        new_cells = []
        for a, b, P, q in cells:
            S = W @ P
            C = W @ q + bias
            cuts = set()
            for s, c in zip(S, C, strict=True):
                if s != 0:
                    r = -c / s
                    if a < r < b:
                        cuts.add(r)
            pts = [a, *sorted(cuts), b]
            for u, v in zip(pts[:-1], pts[1:], strict=True):
                mid = (u + v) / 2
                on = (S * mid + C) > 0
                zero_w = np.full(len(S), Fraction(0), dtype=object)
                new_cells.append((u, v, np.where(on, S, zero_w), np.where(on, C, zero_w)))
        cells = new_cells
    WL, bL = net.weights[-1][output], net.biases[-1][output]
    pieces: list[Piece] = []
    for a, b, P, q in cells:
        s = WL @ P
        c = WL @ q + bL
        if net.skip is not None:
            s += net.skip[0][output, 0]
            c += net.skip[1][output]
        s, c = F(s), F(c)
        if pieces and pieces[-1].slope == s and pieces[-1].intercept == c:
            pieces[-1] = Piece(pieces[-1].lo, b, s, c)
        else:
            pieces.append(Piece(a, b, s, c))
    return pieces


def count_pieces(net: Network, lo: object, hi: object, output: int = 0) -> int:
    """Number of maximal linear pieces of a univariate network on ``[lo, hi]``.

    Example:
        >>> count_pieces(cpwl_1d([0, 1, 2], [0, 1, 0]), -1, 3)    # 0, rise, fall, 0
        4
    """
    return len(univariate_pieces(net, lo, hi, output))


def breakpoints_1d(net: Network, lo: object, hi: object, output: int = 0) -> list[Fraction]:
    """The exact breakpoints (slope changes) inside ``(lo, hi)``.

    Example:
        >>> [str(b) for b in breakpoints_1d(cpwl_1d([0, 1, 2], [0, 1, 0]), -1, 3)]
        ['0', '1', '2']
    """
    return [p.lo for p in univariate_pieces(net, lo, hi, output)[1:]]
