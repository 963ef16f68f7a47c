"""Path-norms in one forward pass, for relulab networks and for torch models.

The ``q``-path-norm is the ``q``-norm of the path-lifting (see
:mod:`relulab.params.pathlift`).  Since a path's coordinate is a product of weights,
``|prod w|^q = prod |w|^q``: replacing every weight and bias by ``|w|^q`` and feeding an
all-ones input, the outputs sum to ``sum_paths |path|^q`` (the trick of the path-norm
toolkit of Gonon et al., ICLR 2024).  No path is listed, so this works for networks with
astronomically many paths.  ``q = inf`` runs the same pass in the (max, x) semiring
(largest path product), and ``q = 0`` replaces every weight by ``[w != 0]``, counting the
paths whose product is nonzero.

For torch models :func:`~relulab.params.pathnorm_torch.path_norm_torch` walks the
modules with the path-norm toolkit's conventions.

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> from relulab.params import path_norm
    >>> net = Network([[[1.0], [-2.0]], [[3.0, 4.0]]], [[0.5, 0.0], [1.0]])
    >>> path_norm(net, 1), path_norm(net, "inf"), path_norm(net, 0)
    (13.5, 8.0, 4)
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from ..network import Network
from .pathlift import _exp_or_inf, parse_q
from .pathnorm_torch import path_norm_torch

__all__ = ["path_norm", "path_norms", "path_norm_torch"]


def _pow_abs(a: np.ndarray, q: float) -> np.ndarray:
    """``|a|^q`` entrywise, ``[a != 0]`` for q = 0; exact for Fractions and integer q."""
    if q == 0:
        if a.dtype == object:
            return np.where(a != 0, Fraction(1), Fraction(0)).astype(object)
        return (a != 0).astype(float)
    if a.dtype == object:
        if float(q).is_integer():
            return np.abs(a) ** int(q)
        a = a.astype(float)
    return np.abs(a) ** q


def _net_pass(net: Network, q: float):
    """The sum over paths of ``|path|^q`` (or the max for q = inf) for a Network."""
    exact = net.is_exact and (q == 0 or math.isinf(q) or float(q).is_integer())
    Ws = [np.asarray(W) if exact else np.asarray(W, dtype=float) for W in net.weights]
    bs = [np.asarray(b) if exact else np.asarray(b, dtype=float) for b in net.biases]
    skip = net.skip
    if skip is not None:
        S, s = (
            (skip[0], skip[1])
            if exact
            else (np.asarray(skip[0], float), np.asarray(skip[1], float))
        )
        bs[-1] = bs[-1] + s  # the skip offset is a second bias of the outputs: one bias edge
    one = Fraction(1) if exact else 1.0
    h = np.full(net.input_dim, one, dtype=object if exact else float)
    if math.isinf(q):
        for W, b in zip(Ws, bs, strict=True):
            h = np.maximum(np.abs(b), (np.abs(W) * h[None, :]).max(axis=1))
        top = h.max()
        if skip is not None:
            top = max(top, np.abs(S).max())
        return top
    for W, b in zip(Ws, bs, strict=True):
        h = _pow_abs(W, q) @ h + _pow_abs(b, q)
    total = h.sum()
    if skip is not None:
        total = total + _pow_abs(S, q).sum()
    return total


def _exact_count(net: Network) -> int:
    """The number of paths with nonzero product, in Python integers."""

    def ind(a) -> np.ndarray:
        return np.where(np.asarray(a) != 0, 1, 0).astype(object)

    bs = list(net.biases)
    if net.skip is not None:
        bs[-1] = bs[-1] + net.skip[1]
    h = np.array([1] * net.input_dim, dtype=object)
    for W, b in zip(net.weights, bs, strict=True):
        h = ind(W) @ h + ind(b)
    total = int(h.sum())
    if net.skip is not None:
        total += int(np.count_nonzero(np.asarray(net.skip[0]) != 0))
    return total


def _log(a: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(np.abs(np.asarray(a, dtype=float)))


def _logsumexp_rows(M: np.ndarray) -> np.ndarray:
    """``log sum_i exp(M[j, i])`` per row, -inf for an all -inf row."""
    top = M.max(axis=1)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.exp(M - safe[:, None]).sum(axis=1))


def _net_pass_log(net: Network, q: float) -> float:
    """``log`` of :func:`_net_pass` computed in the log domain, for sums or products that
    overflow or underflow float64 (large q, deep networks, tiny or huge weights)."""
    Ws = [np.asarray(W, dtype=float) for W in net.weights]
    bs = [np.asarray(b, dtype=float) for b in net.biases]
    if net.skip is not None:
        bs[-1] = bs[-1] + np.asarray(net.skip[1], dtype=float)
    h = np.zeros(net.input_dim)  # log of the all-ones input
    for W, b in zip(Ws, bs, strict=True):
        if math.isinf(q):  # (max, +) semiring
            h = np.maximum(_log(b), (_log(W) + h[None, :]).max(axis=1))
        else:
            terms = np.concatenate([q * _log(W) + h[None, :], q * _log(b)[:, None]], axis=1)
            h = _logsumexp_rows(terms)
    if math.isinf(q):
        top = h.max()
        if net.skip is not None:
            top = max(top, _log(net.skip[0]).max())
        return float(top)
    parts = [h]
    if net.skip is not None:
        parts.append(q * _log(net.skip[0]).reshape(-1))
    return float(_logsumexp_rows(np.concatenate(parts)[None, :])[0])


def path_norm(model: Any, q: float | str = 1, *, input_shape: tuple[int, ...] | None = None):
    """The ``q``-path-norm of a :class:`~relulab.Network` or a torch model, in one pass.

    Args:
        model: a Network, or a torch ``nn.Module`` (then :func:`path_norm_torch` is used
            and ``input_shape`` is needed unless the first layer is ``nn.Linear``).
        q: the order, a number >= 0 or ``"inf"``; ``q = 0`` counts nonzero paths.

    Returns:
        A float; for an exact (Fraction) network an exact Fraction when ``q`` is 1 or
        inf; an int for ``q = 0``.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[3.0, -4.0]]], [[0.0]])
        >>> path_norm(net, 2)
        5.0
    """
    q = parse_q(q)
    if not isinstance(model, Network):
        return path_norm_torch(model, input_shape, q)
    try:
        # any overflow or underflow on the way (a partial product of tiny weights can
        # vanish while the final sum looks normal) sends the pass to the log domain
        with np.errstate(over="raise", under="raise"):
            val = _net_pass(model, q)
    except FloatingPointError:
        if q == 0:  # a path count: only its size can overflow; the exact count follows
            return _exact_count(model)
        lv = _net_pass_log(model, q)
        return _exp_or_inf(lv if math.isinf(q) else lv / q)
    if q == 0:
        if not isinstance(val, Fraction) and not float(val) < 2.0**53:
            val = _exact_count(model)  # float sums of integers are exact only below 2^53
        return int(val)
    if isinstance(val, Fraction):
        if math.isinf(q) or q == 1:
            return val
        if val <= 0:
            return 0.0
        # the sum may be far beyond float64 (1e80 weights give 7.3e321) while its root is
        # not: split off a power of two, m * 2^e with m near 1, and take the roots apart
        e = val.numerator.bit_length() - val.denominator.bit_length()
        m = float(val / 2**e) if e >= 0 else float(val * 2**-e)
        return _pow_or_inf(m, 1.0 / q) * _pow_or_inf(2.0, e / q)
    val = float(val)
    if not np.isfinite(val) or val < 1e-290:  # tol: near float64 underflow
        # overflow or underflow (or a true zero): redo the pass in the log domain
        lv = _net_pass_log(model, q)
        return _exp_or_inf(lv if math.isinf(q) else lv / q)
    if math.isinf(q) or q == 1:
        return val
    return _pow_or_inf(val, 1.0 / q)  # overflows for q < 1


def _pow_or_inf(a: float, p: float) -> float:
    """``a ** p`` for ``a > 0``, or ``inf`` where it exceeds float64."""
    try:
        return a**p
    except OverflowError:
        return math.inf


def path_norms(model: Any, qs=(1, 2, "inf"), **kw) -> dict[str, float]:
    """Several path-norms at once: ``{str(q): value}``.

    Example:
        >>> from relulab import Network
        >>> path_norms(Network([[[3.0, -4.0]]], [[0.0]]), (1, 2))
        {'1': 7.0, '2': 5.0}
    """
    out = {}
    for q in qs:
        qf = parse_q(q)
        key = "inf" if math.isinf(qf) else (str(int(qf)) if qf.is_integer() else str(qf))
        out[key] = path_norm(model, qf, **kw)
    return out
