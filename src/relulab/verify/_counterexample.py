"""The last gate before ``violated``: a counterexample re-checked in exact arithmetic.

The searches (attack, branch and bound, MILP) accept a candidate when ``C f(x) <= d``
holds within ``FEAS_TOL`` in float64.  That slack is absolute, so it says nothing about a
row scaled by 1e-10 (``1e-10 y <= 0`` accepted ``y = 1``) and lets a point 1e-9 short of
the unsafe set through at a near tie.  Here the candidate is clipped into its box and
evaluated in rational arithmetic on the exact values of the network's float weights;
``violated`` needs ``C y <= d`` exactly.  A candidate that misses by rounding is moved,
by one LP inside its linear region, to the point of largest margin, and checked again.

Networks too large for rational arithmetic (more than ``EXACT_RECHECK_MAX_PARAMS``
parameters) are checked in float64 with a margin that covers the rounding of the forward
pass (a bound that scales with the terms each sum adds up, :func:`forward_error`), a
float argument rather than a proof in rationals; the result says which check was used.

Example:
    >>> from relulab import Box, Network
    >>> net = Network([[[1.0]], [[1.0]]], [[0.0], [1.0]])        # relu(x) + 1
    >>> terms = [(Box([0.0], [1.0]), np.array([[1e-10]]), np.array([0.0]))]   # 1e-10 y <= 0
    >>> certify_counterexample(net, np.array([0.0]), terms).ok
    False
    >>> terms = [(Box([0.0], [1.0]), np.array([[-1.0]]), np.array([-1.5]))]   # y >= 1.5
    >>> r = certify_counterexample(net, np.array([0.6]), terms); r.ok, r.output.tolist(), r.check
    (True, [1.6], 'exact')
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..domain import Box
from ..network import Network, nearest_float
from ..tolerance import ROUNDOFF

__all__ = ["CounterexampleCheck", "certify_counterexample", "float_unsafe", "EXACT_RECHECK_MAX_PARAMS"]

# above this many parameters the forward pass in Fractions is too slow for a last check
EXACT_RECHECK_MAX_PARAMS = 200_000
# a row margin of at most this is asked of the repair LP (its value is capped there)
_REPAIR_CAP = 1.0


@dataclass(frozen=True)
class CounterexampleCheck:
    """The gate's answer: ``ok`` with the point (inside its box) and the outputs there
    (nearest floats of the exact values), or not ok with the reason."""

    ok: bool
    x: np.ndarray | None = None
    output: np.ndarray | None = None
    check: str = ""          # "exact" or "float64 with rounding margin"
    reason: str = ""


def certify_counterexample(net: Network, x: np.ndarray, terms: list,
                           deadline: float | None = None) -> CounterexampleCheck:
    """Whether ``x`` (or a point of its linear region) is a counterexample of one of
    ``terms`` (``(box, C, d)``: unsafe when ``x`` in box and ``C f(x) <= d``), checked
    exactly (see the module docstring).  The region's point is sought (one LP) only where
    ``x`` fails, and not past ``deadline`` (a :func:`time.perf_counter` moment): its LP
    took 4 s of a 1 s verification at 784 inputs, for a point that already passed."""
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    exact = net.n_params <= EXACT_RECHECK_MAX_PARAMS
    fnet = net.float()
    enet = net.exact() if exact else None  # once: the conversion costs a pass over the weights
    worst = np.inf
    skipped = False
    order = sorted(range(len(terms)), key=lambda i: _float_violation(fnet, x, terms[i]))
    for i in order:
        box, C, d = terms[i]
        xc = np.clip(x, box.lo, box.hi)
        for step in range(2):
            if step == 0:
                cand = xc
            else:
                left = None if deadline is None else deadline - time.perf_counter()
                if left is not None and left <= 0:
                    skipped = True
                    break
                cand = _repair(fnet, xc, box, C, d, left)
                if cand is None:
                    continue
            ok, y, viol = _check(enet, fnet, cand, C, d)
            if ok:
                return CounterexampleCheck(True, cand, y, "exact" if exact else
                                           "float64 with rounding margin")
            worst = min(worst, viol)
    where = ("; the time ran out before its linear region was searched" if skipped
             else ", also at the point of largest margin in its linear region")
    return CounterexampleCheck(
        False, reason=(f"numerical: a candidate counterexample meets the unsafe set only within "
                       f"float rounding (it misses by {worst:.3g} in {'exact' if exact else 'float64'} "
                       f"arithmetic{where})"))


def _float_violation(fnet: Network, x: np.ndarray, term) -> float:
    box, C, d = term
    y = fnet(np.clip(x, box.lo, box.hi)[None])[0]
    return float(np.max(C @ y - d, initial=-np.inf))


def _check(enet: Network | None, fnet: Network, x: np.ndarray, C: np.ndarray,
           d: np.ndarray) -> tuple[bool, np.ndarray, float]:
    """(C f(x) <= d holds, the outputs as floats, by how much the worst row misses); in
    rational arithmetic on ``enet`` when given, else in float64 with a rounding margin."""
    if enet is not None:
        y = enet(x[None])[0]
        lhs = [sum((Fraction(float(c)) * v for c, v in zip(row, y, strict=True)), Fraction(0))
               for row in np.asarray(C, float)]
        gaps = [a - Fraction(float(b)) for a, b in zip(lhs, np.asarray(d, float), strict=True)]
        yf = np.array([nearest_float(v) for v in y])
        worst = max(gaps, default=Fraction(-1))
        return worst <= 0, yf, float(worst)
    y = fnet(x[None])[0]
    ok, worst = float_unsafe(y, C, d, forward_error(fnet, x))
    return ok, y, worst


def forward_error(net: Network, x: np.ndarray) -> np.ndarray:
    """A bound on the rounding error of each output of the float64 forward pass at ``x``
    (the output layer's :meth:`Network.rounding_bounds`).  It scales with the terms each
    sum adds up, not with the sums: weights near 1e8 whose terms cancel to 1e-7 leave
    errors near 1e-4 that a margin on the outputs alone called a violation.

    Example:
        >>> net = Network([[[1e8], [1.0]], [[1.0, -1e8]]], [[0.0, 0.0], [0.0]])
        >>> float(forward_error(net, np.array([1.0]))[0]) > 1e-8
        True
    """
    _, e = net.rounding_bounds(np.asarray(x, dtype=np.float64).reshape(1, -1))[-1]
    return e[0] + np.finfo(np.float64).tiny


def float_unsafe(y: np.ndarray, C: np.ndarray, d: np.ndarray,
                 y_error: np.ndarray | float = 0.0) -> tuple[bool, float]:
    """Whether float64 outputs ``y`` satisfy ``C y <= d`` with a margin covering the
    rounding of ``C y - d`` (``ROUNDOFF`` times the magnitudes involved) and the outputs'
    own rounding error ``y_error`` (a bound per output, see :func:`forward_error`), and by
    how much the worst row misses (<= 0: it does not).

    Example:
        >>> float_unsafe(np.array([2.0]), np.array([[-1.0]]), np.array([-1.5]))[0]
        True
        >>> float_unsafe(np.array([2.0]), np.array([[-1.0]]), np.array([-1.5]), 0.6)[0]
        False
    """
    gaps = (C @ y - d + ROUNDOFF * (np.abs(C) @ np.abs(y) + np.abs(d) + 1.0)
            + np.abs(C) @ np.broadcast_to(np.asarray(y_error, dtype=np.float64), np.shape(y)))
    return bool(np.all(gaps <= 0)), float(np.max(gaps, initial=-1.0))


def _repair(fnet: Network, x: np.ndarray, box: Box, C: np.ndarray, d: np.ndarray,
            seconds: float | None = None) -> np.ndarray | None:
    """The point of largest margin ``min_i (d_i - C_i f(z))`` (capped) in the closed
    linear region of ``x`` within the box: one LP, as f is affine there (None when it
    has no such point, or its LP is not solved within ``seconds``)."""
    from ..lp import solve

    if C.shape[0] == 0:
        return None
    pattern = fnet.activation_pattern(x)
    A, c = fnet.affine_for_pattern(pattern)
    G, h = fnet.region_inequalities(pattern)   # (0, d) rows without hidden layers
    n = x.size
    rows = np.vstack([np.hstack([G, np.zeros((G.shape[0], 1))]),
                      np.hstack([C @ A, np.ones((C.shape[0], 1))])])
    rhs = np.concatenate([h, d - C @ c])
    obj = np.zeros(n + 1)
    obj[-1] = -1.0  # maximise the margin t
    r = solve(obj, A_ub=rows, b_ub=rhs, lb=np.concatenate([box.lo, [-np.inf]]),
              ub=np.concatenate([box.hi, [_REPAIR_CAP]]), time_limit=seconds)
    if r.status != "optimal" or r.x is None or not r.x[-1] > 0:
        return None
    return np.clip(r.x[:n], box.lo, box.hi)
