"""The symmetry group acting on parameters: positive rescalings and permutations of hidden
neurons.  Each function returns a new network computing the same function.

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    >>> g = permute(rescale(net, [[2.0, 4.0]]), [[1, 0]])
    >>> g.weights[0].ravel().tolist(), float(g([-3.0])[0])
    ([-4.0, 2.0], 3.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import is_int_at_least
from ..layers import Layers, as_kind
from ..network import Network, NetworkError

__all__ = ["rescale", "permute", "random_symmetry"]


def rescale(net: Network, factors: Sequence[Any]) -> Network:
    """Multiply the incoming weights and bias of hidden neuron ``i`` of layer ``k`` by
    ``factors[k][i] > 0`` and divide its outgoing weights by the same number.

    Example:
        >>> import numpy as np
        >>> from relulab.examples import tiny_2d
        >>> net = tiny_2d()
        >>> g = rescale(net, [np.full(8, 2.0), np.full(8, 0.5)])
        >>> X = np.random.default_rng(0).normal(size=(5, 2))
        >>> bool(np.allclose(g(X), net(X))), float(g.weights[0][0, 0] / net.weights[0][0, 0])
        (True, 2.0)
    """
    if not hasattr(factors, "__len__") or isinstance(factors, str):
        raise NetworkError(f"rescale: factors must hold one vector per hidden layer, got {factors!r}")
    if len(factors) != net.n_hidden_layers:
        raise NetworkError(f"rescale: {len(factors)} factor vectors for {net.n_hidden_layers} hidden layers")
    lay = Layers.of(net)
    for k, c in enumerate(factors):
        try:
            c = as_kind(np.asarray(c, dtype=object if net.is_exact else float).reshape(-1), net.is_exact)
        except (TypeError, ValueError) as e:
            raise NetworkError(f"rescale: layer {k}: factors must be numbers ({e})") from None
        if c.shape[0] != net.widths[k]:
            raise NetworkError(f"rescale: layer {k} has {net.widths[k]} neurons, got {c.shape[0]} factors")
        if not all(v > 0 for v in c) or not (net.is_exact or np.all(np.isfinite(c))):
            raise NetworkError(f"rescale: layer {k}: factors must be positive finite numbers")
        new = (lay.Ws[k] * c[:, None], lay.bs[k] * c, lay.Ws[k + 1] / c[None, :])
        if not net.is_exact:
            old = (lay.Ws[k], lay.bs[k], lay.Ws[k + 1])
            with np.errstate(under="ignore"):
                tiny = np.finfo(np.float64).tiny
                # a normal weight pushed below the normal range, or any weight to 0 (one
                # already subnormal may stay so: factors of 1 were refused)
                lost = any(np.any(((a != 0) & (b == 0)) | ((np.abs(a) >= tiny) & (np.abs(b) < tiny)))
                           for a, b in zip(old, new, strict=True))
            if lost:
                # 1e-8 x 1e-316 became 0: the neuron turned constant, the function changed
                raise NetworkError(f"rescale: layer {k}: the factors take weights below float64's "
                                   "normal range (the function would change); use net.exact()")
        lay.Ws[k], lay.bs[k], lay.Ws[k + 1] = new
    return lay.network()


def permute(net: Network, perms: Sequence[Sequence[int]]) -> Network:
    """Reorder the neurons of each hidden layer: new neuron ``j`` of layer ``k`` is old
    neuron ``perms[k][j]``.

    Example:
        >>> import numpy as np
        >>> from relulab.examples import tiny_2d
        >>> net = tiny_2d()
        >>> g = permute(net, [list(range(7, -1, -1)), list(range(8))])   # reverse layer 1
        >>> X = np.random.default_rng(0).normal(size=(5, 2))
        >>> bool(np.allclose(g(X), net(X))), bool((g.weights[0][0] == net.weights[0][7]).all())
        (True, True)
    """
    if len(perms) != net.n_hidden_layers:
        raise NetworkError(f"permute: {len(perms)} permutations for {net.n_hidden_layers} hidden layers")
    lay = Layers.of(net)
    for k, p in enumerate(perms):
        # whole numbers only: 1.5 was read as 1
        if not (hasattr(p, "__len__") and all(is_int_at_least(v, 0) for v in p)):
            raise NetworkError(f"permute: layer {k}: a permutation is a list of integers, got {p!r}")
        p = np.asarray([int(v) for v in p], dtype=int)
        if sorted(p.tolist()) != list(range(net.widths[k])):
            raise NetworkError(f"permute: layer {k}: not a permutation of 0..{net.widths[k] - 1}")
        lay.permute(k, p)
    return lay.network()


def random_symmetry(
    net: Network, rng: np.random.Generator | int | None = None, spread: float = 2.0
) -> Network:
    """A random element of the symmetry group applied to ``net``: factors ``exp(U(-spread,
    spread))`` (random fractions ``p/q`` with ``1 <= p, q <= 20`` for exact networks) and
    uniformly random permutations.

    Example:
        >>> from relulab.examples import abs_net
        >>> g = random_symmetry(abs_net(), rng=1)      # exact: random rational factors
        >>> [str(v) for v in g([[-3], [2]]).ravel()]
        ['3', '2']
    """
    if not (isinstance(spread, (int, float)) and 0 <= spread < np.inf):
        raise NetworkError(f"random_symmetry: spread must be a finite number >= 0, got {spread!r}")
    rng = np.random.default_rng(rng)
    facs: list[Any] = []
    for w in net.widths:
        if net.is_exact:
            pq = rng.integers(1, 21, size=(w, 2))
            facs.append(np.array([Fraction(int(p), int(q)) for p, q in pq], dtype=object))
        else:
            facs.append(np.exp(rng.uniform(-spread, spread, size=w)))
    out = rescale(net, facs)
    return permute(out, [rng.permutation(w) for w in net.widths])
