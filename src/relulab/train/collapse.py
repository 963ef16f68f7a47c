"""The weight-decay collapse threshold of two-layer ReLU networks.

For ``min (1/2)||f(X) - y||^2 + (lam/2)||theta||^2`` with ``f(x) = sum_j a_j relu(w_j . x~)``
(``x~ = [x, 1]`` when hidden biases are used, penalised), the zero network is a global
minimum exactly when::

    lam >= lam* = max_{||w|| = 1} |y . relu(X~ w)|.

Why: (below) a single balanced neuron ``c relu(X~ w)`` with ``||w|| = 1`` costs
``(1/2)||c r - y||^2 + lam |c|``, which drops under ``||y||^2 / 2`` for small ``c`` of the
right sign when ``|y . r| > lam``; (above) the residual ``rho = y`` of the zero network is
then feasible for the dual of the convex reformulation (:mod:`relulab.train.convex`),
``||P_{K_i}(+- X~^T D_i y)|| <= lam`` for every activation pattern ``D_i``, because
``max_{w in K_i, ||w|| <= 1} y . D_i X~ w`` is that norm; so zero solves the convex problem,
whose value is a lower bound for every width.

``lam*`` is a maximum over activation patterns.  When every pattern is enumerated
(univariate data, 2-D data without bias, and data in general position with at most
``max_patterns`` patterns; see :mod:`relulab.train.patterns`), ``lam*`` is exact.
Otherwise the sampled patterns give a lower bound (with a witness direction) and a simple
Cauchy-Schwarz bound gives an upper bound, so the threshold is bracketed.

Example:
    >>> import numpy as np
    >>> X = np.array([[-1.0], [0.0], [1.0]]); y = np.array([1.0, 0.0, 1.0])
    >>> t = collapse_threshold(X, y); t.exact, round(t.lam, 6)
    (True, 2.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..limits import check_bytes
from ..results import Result
from ..tolerance import power_of_two_exponent
from .convex import (
    ConvexTrainingError,
    _augment,
    _check_max_patterns,
    _correlate,
    _prep,
    _Projector,
)
from .patterns import activation_patterns

__all__ = ["CollapseThreshold", "collapse_threshold"]


@dataclass(frozen=True)
class CollapseThreshold(Result):
    """``lam``: the threshold (exact when ``exact``; else the best lower bound found, with
    ``witness`` a unit direction attaining it); ``upper``: a proven upper bound.

    Example:
        >>> X = np.array([[-1.0], [0.0], [1.0]]); y = np.array([1.0, 0.0, 1.0])
        >>> t = collapse_threshold(X, y)
        >>> t.exact, bool(t.lam <= t.upper + 1e-12), t.witness.shape
        (True, True, (2,))
    """

    lam: float
    upper: float
    exact: bool
    witness: np.ndarray
    n_patterns: int


def collapse_threshold(X: Any, y: Any, *, bias: bool = True, max_patterns: int = 5000,
                       seed: int = 0) -> CollapseThreshold:
    """The weight decay above which the zero network is globally optimal (see module doc).

    Example:
        >>> X = np.array([[0.0], [1.0], [2.0]]); y = np.array([0.0, 1.0, 0.0])
        >>> t = collapse_threshold(X, y); t.lam <= t.upper
        True
    """
    X, y = _prep(X, y, 1.0)
    # lam* is linear in y: computed on y 2^k of size about 1 and scaled back (the norms
    # below underflowed for y ~ 1e-165: "exact" 0 for 1.9e-165)
    k = -power_of_two_exponent(y)
    y = np.ldexp(y, k)
    max_patterns = _check_max_patterns(max_patterns)
    if not isinstance(bias, (bool, np.bool_)):   # "no" was truthy, and the bias was used
        raise ConvexTrainingError(f"bias must be True or False, got {bias!r}")
    Xa = _augment(X, bias)
    n, d = Xa.shape
    # the n x P pattern matrices (bool, float, signs) and the (2, P, n) correlations, before
    # any is made: 1-D data has all its 2n patterns (n = 8,000 asked for 3 GB and ended in a
    # raw MemoryError)
    P = 2 * n if d <= 2 else max_patterns
    check_bytes(8.0 * n * P * 6, f"collapse_threshold: the {n} x {P} pattern matrices"
                + (" of every pattern of data with at most 2 columns after the bias (fewer points)"
                   if d <= 2 else " (lower max_patterns)"))
    # complete for univariate data, and for general-position data with at most
    # max_patterns patterns: the maximum over all patterns is then the exact threshold
    M, _, complete = activation_patterns(Xa, 10**9 if d <= 2 else max_patterns, seed)
    Mf = M.astype(np.float64)
    S = 2.0 * Mf - 1.0
    proj = _Projector(Xa, S)
    c = _correlate(Xa, Mf, y)
    V = proj.project(np.stack([c, -c]))
    nr = np.linalg.norm(V, axis=2)
    s, i = np.unravel_index(int(np.argmax(nr)), nr.shape)
    lam = float(nr[s, i])
    w = V[s, i] / lam if lam > 0 else np.zeros(d)
    # Cauchy-Schwarz: sum_i c_i relu(x_i.w) <= sqrt(sum c_i) * sqrt(lambda_max(X^T C X))
    ups = []
    for sg in (1.0, -1.0):
        cpos = np.maximum(sg * y, 0.0)
        ups.append(min(float(np.sqrt(cpos.sum() * max(0.0, np.linalg.eigvalsh(
            (Xa * cpos[:, None]).T @ Xa)[-1]))), float(cpos @ np.linalg.norm(Xa, axis=1))))
    exact = complete
    upper = lam if exact else max(max(ups), lam)
    lam, upper = math.ldexp(lam, -k), math.ldexp(upper, -k)
    return CollapseThreshold(lam=lam, upper=upper, exact=bool(exact), witness=w,
                             n_patterns=int(M.shape[1]))
