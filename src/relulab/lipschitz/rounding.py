"""Float64 rounding margins that keep the interval Jacobian bounds sound.

The pre-activation bounds (CROWN) and the interval passes of the Jacobian run in
float64.  Their exact values are valid bounds; the computed ones differ by rounding, and
where large weights cancel (``1e17 relu(0.1 relu(3x) - 0.3 relu(x))``, a slope of 2.78
on ``x > 0``) the difference is the whole answer.  The standard a-priori bound for a
float product of matrices, ``|fl(A B) - A B| <= gamma_n |A| |B|`` with
``gamma_n = n u / (1 - n u)``, makes both sound:

* :func:`pad_preactivations` widens every pre-activation bound by ``gamma`` times the
  magnitude of the terms summed for it (``|W_k| M_{k-1} + |b_k|``, from the input box
  outwards), so a neuron is called stable only when rounding cannot have decided it;
* :func:`jacobian_slack` is ``gamma`` times the operator norm of the product of the
  absolute weight matrices (surely inactive neurons dropped), which bounds the rounding
  in every Jacobian entry the interval and pattern passes compute; the norm of an
  interval widened by that much is at most the old norm plus this (triangle inequality).

``gamma`` counts every inner dimension and a few operations per layer, twice over: the
margins are a few ulps of the magnitudes, invisible unless the weights cancel.

Example:
    >>> import numpy as np
    >>> Ws = [np.array([[3.0], [1.0]]), np.array([[0.1, -0.3]]), np.array([[1e17]])]
    >>> bs = [np.zeros(2), np.zeros(1), np.zeros(1)]
    >>> pre = [(np.array([[1.5, 0.5]]), np.array([[3.0, 1.0]])), (np.array([[0.0]]), np.array([[0.0]]))]
    >>> padded = pad_preactivations(Ws, bs, np.array([[0.5]]), np.array([[1.0]]), pre)
    >>> bool(padded[1][0][0, 0] < 0 < padded[1][1][0, 0])    # the cancelling neuron is unstable
    True
    >>> bool(jacobian_slack(Ws, padded, None, 1.0, None) > 2.78)   # covers the true slope
    True
"""

from __future__ import annotations

import numpy as np

from ..bounds import crown_batch
from .lower import batch_norms

__all__ = ["rounding_gamma", "pad_preactivations", "box_preactivations", "domain_preactivations",
           "jacobian_slack", "UNIT_ROUNDOFF"]

UNIT_ROUNDOFF = 2.0 ** -53  # tol: float64's unit roundoff (round to nearest)
# per layer, operations besides the inner products (centre/radius, clipping, relaxations)
_OPS_PER_LAYER = 8
_OPS_EXTRA = 16
_SAFETY = 2.0
# subnormal results lose relative accuracy: an absolute floor per term
_TINY = float(np.finfo(np.float64).tiny)


def rounding_gamma(Ws: list[np.ndarray]) -> float:
    """``gamma_n`` for the longest chain of float operations in the passes over ``Ws``.

    Example:
        >>> import numpy as np
        >>> g = rounding_gamma([np.ones((10, 5)), np.ones((1, 10))])
        >>> bool(1e-15 < g < 1e-13)
        True
    """
    n = sum(W.shape[1] for W in Ws) + Ws[-1].shape[0] + _OPS_PER_LAYER * len(Ws) + _OPS_EXTRA
    nu = _SAFETY * n * UNIT_ROUNDOFF
    return nu / (1.0 - nu)


def pad_preactivations(Ws: list[np.ndarray], bs: list[np.ndarray], lo: np.ndarray, hi: np.ndarray,
                       pre: list[tuple[np.ndarray, np.ndarray]]) -> list[tuple[np.ndarray, np.ndarray]]:
    """``pre`` (per hidden layer, ``(zl, zu)`` over boxes ``lo``, ``hi`` of shape (B, n) or
    (n,)) widened by the rounding of the float passes that computed them.  A bound that
    is exactly zero with a zero margin (a neuron with zero weights) stays zero.

    Example:
        >>> import numpy as np
        >>> Ws, bs = [np.array([[1.0]]), np.array([[1.0]])], [np.zeros(1), np.zeros(1)]
        >>> pad_preactivations(Ws, bs, np.zeros(1), np.zeros(1), [(np.zeros(1), np.zeros(1))])[0][0].tolist()
        [0.0]
    """
    g = rounding_gamma(Ws)
    mag = np.maximum(np.abs(lo), np.abs(hi))
    out = []
    for k, (zl, zu) in enumerate(pre):
        mag = mag @ np.abs(Ws[k]).T + np.abs(bs[k])
        pad = g * mag + np.where(mag > 0, Ws[k].shape[1] * _TINY, 0.0)
        out.append((zl - pad, zu + pad))
        # |relu(z)| <= |z|: the next layer's terms are bounded by the same magnitudes
    return out


def box_preactivations(Ws: list[np.ndarray], bs: list[np.ndarray], lo: np.ndarray,
                       hi: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """CROWN pre-activation bounds of boxes (``lo``, ``hi`` of shape (B, n)), padded for
    rounding (:func:`pad_preactivations`).

    Example:
        >>> import numpy as np
        >>> Ws, bs = [np.array([[1.0], [-1.0]]), np.array([[1.0, 1.0]])], [np.zeros(2), np.zeros(1)]
        >>> zl, zu = box_preactivations(Ws, bs, np.array([[0.5]]), np.array([[1.0]]))[0]
        >>> bool(zl[0, 0] < 0.5 and zl[0, 0] > 0.4999999), bool(zu[0, 1] > -0.5)
        (True, True)
    """
    pre, _ = crown_batch(Ws, bs, lo, hi, intermediate="hybrid")
    return pad_preactivations(Ws, bs, lo, hi, pre)


def domain_preactivations(net, domain) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`relulab.lipschitz.milp.preactivation_bounds` over a Box or Polytope, padded
    for rounding over its bounding box (:func:`pad_preactivations`), one row per layer.

    Example:
        >>> from relulab import Network, Box
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 2.0], [0.0]])
        >>> [(lo.round(9).tolist(), hi.round(9).tolist()) for lo, hi in domain_preactivations(net, Box([-1], [1]))]
        [([-1.0, 1.0], [1.0, 3.0])]
    """
    from ..bounds import float_layers
    from .milp import preactivation_bounds

    Ws, bs, _ = float_layers(net)
    box = domain.bounding_box()
    return pad_preactivations(Ws, bs, box.lo, box.hi, preactivation_bounds(net, domain))


def jacobian_slack(Ws: list[np.ndarray], pre: list[tuple[np.ndarray, np.ndarray]], skip,
                   p: float, q: float | None, d: int | None = None, n_boxes: int = 1) -> np.ndarray:
    """Per box (the first axis of ``pre``'s arrays), the largest rounding error of the
    ``||J||_{p->q}`` bounds computed by the interval and pattern passes: ``gamma`` times
    the norm of ``|W_L| D |W_{L-1}| ... D |W_1|`` (``D``: 0 on surely inactive neurons,
    else 1; plus ``|skip|``), in the first ``d`` inputs.  ``n_boxes``: the number of
    boxes when ``pre`` is empty (an affine network).

    Example:
        >>> import numpy as np
        >>> Ws = [np.array([[1.0], [-1.0]]), np.array([[2.0, 1.0]])]
        >>> pre = [(np.array([[-1.0, -1.0]]), np.array([[1.0, 1.0]]))]
        >>> s = jacobian_slack(Ws, pre, None, 1.0, None)
        >>> bool(0 < s[0] < 1e-13)
        True
    """
    B = pre[0][0].shape[0] if pre else n_boxes
    A = np.broadcast_to(np.abs(Ws[-1]), (B, *Ws[-1].shape)).copy()
    for k in range(len(Ws) - 2, -1, -1):
        live = (pre[k][1] > 0)[:, None, :]
        A = np.where(live, A, 0.0) @ np.abs(Ws[k])
    if skip is not None:
        A = A + np.abs(skip[0])
    d = A.shape[2] if d is None else d
    return rounding_gamma(Ws) * batch_norms(A[:, :, :d], p, q, end="upper") + d * _TINY


def float_network(net, what: str):
    """The float64 network the Lipschitz routes compute on: ``net`` itself, or an exact
    network whose every entry is a float64 number as floats.  An exact network with
    other entries (1/3, 1 + 2^-60) is refused: every route would answer for its rounding,
    and ``2^60 (relu((1 + 2^-60) x) - relu(x))`` (constant 1) read "exact 0".

    Example:
        >>> from fractions import Fraction
        >>> from relulab import Network
        >>> float_network(Network([[[Fraction(1, 2)]]], [[Fraction(0)]]), "f").is_exact
        False
        >>> float_network(Network([[[Fraction(1, 3)]]], [[Fraction(0)]]), "f")
        Traceback (most recent call last):
        ...
        relulab.errors.RelulabError: f: the exact network has entries that are not float64 numbers (layer 1 weight (0, 0) = 1/3); its Lipschitz constant is computed in float64 and would be that of its rounding: pass net.float() to ask about the rounded network
    """
    from ..errors import RelulabError

    bad = net.entry_not_a_float()
    if bad is not None:
        name, idx, value = bad
        where = idx if len(idx) > 1 else idx[0]
        raise RelulabError(
            f"{what}: the exact network has entries that are not float64 numbers ({name} "
            f"{where} = {value}); its Lipschitz constant is computed in float64 and would be "
            "that of its rounding: pass net.float() to ask about the rounded network")
    return net.float()
