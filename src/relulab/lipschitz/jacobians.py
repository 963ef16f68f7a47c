"""Jacobians of a ReLU network at points and on activation patterns, the certificate
that a point lies inside a linear region, and the homogenisation used for R^d.

Homogenisation: for ``f`` with biases, ``F(x, t) = t f(x / t)`` (``t > 0``) is computed
by the bias-free network that carries ``t`` through every hidden layer as an extra,
always active neuron and multiplies every bias by ``t``.  ``F`` is positively
homogeneous, its linear regions are cones, and its regions in ``t > 0`` are exactly the
cones over the regions of ``f``, with the same Jacobian in ``x``.  Every open cone meets
the box ``[-1, 1]^d x [0, 1]``, so questions about ``f`` on all of R^d become questions
about ``F`` on that bounded box (see docs/lipschitz.md).

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> net = Network([[[1.0], [-1.0]], [[1.0, 2.0]]], [[1.0, 0.0], [0.5]])
    >>> H = homogenize(net)
    >>> x, t = 0.3, 0.25
    >>> bool(np.isclose(H([[x, t]])[0, 0], t * net([[x / t]])[0, 0]))
    True
"""

from __future__ import annotations

import numpy as np

from ..bounds import float_layers
from ..errors import RelulabError
from ..limits import check_bytes
from ..network import Network
from ..tolerance import STRICT_TOL, UNIT_ROUNDOFF

__all__ = ["jacobians", "pattern_jacobian", "interior_margin", "homogenize", "bias_free"]

# working memory of one chunk of jacobians(): its (rows, outputs, width) products
JACOBIAN_CHUNK_BYTES = 64 * 2**20


def jacobians(net: Network, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Batched Jacobians ``(n, m, d)`` at the rows of ``X``, and each point's smallest
    pre-activation magnitude relative to its scale (see :func:`interior_margin`).

    Example:
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
        >>> J, _ = jacobians(net, np.array([[-2.0], [3.0]]))
        >>> J[:, 0, 0].tolist()
        [-1.0, 1.0]
    """
    Ws, bs, sk = float_layers(net)
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    if X.ndim != 2 or X.shape[1] != net.input_dim:
        raise RelulabError(f"jacobians: points must have shape (n, {net.input_dim}), got {X.shape}")
    n, m, d = X.shape[0], net.output_dim, net.input_dim
    check_bytes(8.0 * n * m * d, f"the Jacobians of {n} points ({m} x {d} each)")
    # the backward products hold (rows, m, width) at once: in chunks of rows that keep
    # them near JACOBIAN_CHUNK_BYTES (2,500 points of a 400-wide net with 100 outputs
    # made 0.8 GB temporaries past a 0.5 GB budget)
    widest = max([W.shape[0] for W in Ws[:-1]] + [d, 1])
    rows = max(1, int(JACOBIAN_CHUNK_BYTES // (8.0 * (min(m, d) + 2) * widest)))
    with np.errstate(over="ignore", invalid="ignore"):
        if n > rows:
            parts = [_jacobians_chunk(Ws, bs, sk, X[i:i + rows]) for i in range(0, n, rows)]
            J, g = np.concatenate([J for J, _ in parts]), np.concatenate([g for _, g in parts])
        else:
            J, g = _jacobians_chunk(Ws, bs, sk, X)
    if not np.all(np.isfinite(J)):
        # (a constant of 1e400 was refused as "operator_norm: need a finite 2-D matrix")
        raise RelulabError("jacobians: the network's Jacobian overflows float64 at a point of the domain "
                           "(products of its weights beyond 1.8e308): its Lipschitz constant is not a "
                           "float64 number; rescale the network")
    return J, g


def _jacobians_chunk(Ws, bs, sk, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`jacobians` on one chunk of rows."""
    n = X.shape[0]
    h = X
    masks = []
    margin = np.full(n, np.inf)
    # a bound on |h_float - h_exact|, carried through the layers: the float rounding of
    # earlier layers (|W| times theirs) plus this layer's own (gamma_{k+1} of the sum of
    # absolute terms, for any summation order).  A point whose pre-activation is not
    # clear of it by a factor of 2 is not certified here (the exact check decides it);
    # the local scale alone missed rounding of 1e-4 carried from weights of 3e12
    err = np.zeros_like(X)
    for W, b in zip(Ws[:-1], bs[:-1], strict=True):
        z = h @ W.T + b
        aW = np.abs(W)
        scale = np.abs(h) @ aW.T + np.abs(b)
        k = W.shape[1] + 1
        gamma = k * UNIT_ROUNDOFF / (1.0 - k * UNIT_ROUNDOFF)
        err = err @ aW.T + gamma * scale
        # a neuron with a zero row and zero bias (pruned) is 0 everywhere: no boundary
        live = np.any(W != 0, axis=1) | (b != 0)
        if np.any(live):
            clear = np.abs(z[:, live]) - 2.0 * err[:, live]
            margin = np.minimum(margin, np.min(clear / (1.0 + scale[:, live]), axis=1))
        masks.append(z > 0)
        h = np.maximum(z, 0.0)
    m, d = Ws[-1].shape[0], X.shape[1]
    if d < m and masks:
        # forward products (rows, width, d): cheaper than backward ones with more outputs
        # than inputs (4 inputs, 100 outputs: 25 times fewer operations)
        G = masks[0][:, :, None] * Ws[0][None, :, :]
        for W, mk in zip(Ws[1:-1], masks[1:], strict=True):
            G = mk[:, :, None] * (W @ G)
        G = Ws[-1] @ G
    else:
        G = np.broadcast_to(Ws[-1], (n, *Ws[-1].shape))
        for W, mk in zip(reversed(Ws[:-1]), reversed(masks), strict=True):
            G = (G * mk[:, None, :]) @ W
    if sk is not None:
        G = G + sk[0]
    return np.ascontiguousarray(G), margin


def interior_margin(net: Network, X: np.ndarray) -> np.ndarray:
    """Smallest ``(|z_j(x)| - 2 err_j(x)) / (1 + scale_j(x))`` over hidden neurons, with
    ``err_j`` a bound on the float rounding of ``z_j`` carried from every layer: above
    ``STRICT_TOL`` the point is strictly inside its linear region, whose Jacobian is then
    the one computed at the point (the region is open around it).

    Example:
        >>> net = Network([[[1.0]], [[1.0]]], [[0.0], [0.0]])
        >>> (interior_margin(net, np.array([[0.0], [2.0]])) > STRICT_TOL).tolist()
        [False, True]
    """
    return jacobians(net, X)[1]


def pattern_jacobian(net: Network, pattern: list[np.ndarray] | np.ndarray) -> np.ndarray:
    """The Jacobian ``(m, d)`` of the affine piece with the given activation pattern
    (one boolean vector per hidden layer, or all layers concatenated).

    Example:
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> pattern_jacobian(net, np.array([False, True])).tolist()
        [[-1.0]]
    """
    Ws, _, sk = float_layers(net)
    widths = [W.shape[0] for W in Ws[:-1]]
    if not isinstance(pattern, list) or all(np.ndim(mk) == 0 for mk in pattern):  # one flat vector
        flat = np.asarray(pattern, dtype=bool).reshape(-1)
        if flat.size != sum(widths):  # it was broadcast or cut: a wrong Jacobian, no error
            raise RelulabError(f"pattern_jacobian: the pattern has {flat.size} entries; the network has "
                               f"{sum(widths)} hidden neurons")
        pattern, off = [], 0
        for w in widths:
            pattern.append(flat[off: off + w])
            off += w
    elif [np.size(mk) for mk in pattern] != widths:
        raise RelulabError(f"pattern_jacobian: the pattern's layers have sizes {[np.size(mk) for mk in pattern]}; "
                           f"the network's hidden widths are {widths}")
    G = Ws[-1]
    for W, mk in zip(reversed(Ws[:-1]), reversed(pattern), strict=True):
        G = (G * np.asarray(mk, dtype=bool)[None, :]) @ W
    if sk is not None:
        G = G + sk[0]
    return np.asarray(G, dtype=np.float64)


def homogenize(net: Network) -> Network:
    """The bias-free network ``F(x, t) = t f(x / t)`` on ``d + 1`` inputs (module docstring).

    The extra input ``t`` is the last one; it is carried by one extra neuron per hidden
    layer (the last of each layer), which is active whenever ``t > 0``.

    Example:
        >>> net = Network([[[2.0]], [[1.0]]], [[-1.0], [3.0]])
        >>> homogenize(net).widths, homogenize(net).input_dim
        ((2,), 2)
    """
    Ws, bs, sk = float_layers(net)
    L = len(Ws)
    newW, newb = [], []
    for k, (W, b) in enumerate(zip(Ws, bs, strict=True)):
        n_out, n_in = W.shape
        hidden = k < L - 1
        rows = n_out + (1 if hidden else 0)
        M = np.zeros((rows, n_in + 1))
        M[:n_out, :n_in] = W
        M[:n_out, n_in] = b
        if hidden:
            M[n_out, n_in] = 1.0
        newW.append(M)
        newb.append(np.zeros(rows))
    skip = None
    if sk is not None:
        S, s = sk
        skip = (np.hstack([S, s[:, None]]), np.zeros(S.shape[0]))
    return Network(newW, newb, skip)


def bias_free(net: Network) -> Network:
    """The same weights with every bias (and the skip's offset) set to zero: the
    recession function ``g(x) = lim_{s -> inf} f(s x) / s``.

    Example:
        >>> net = Network([[[1.0]], [[1.0]]], [[-5.0], [2.0]])
        >>> float(bias_free(net)([[3.0]])[0, 0])
        3.0
    """
    Ws, bs, sk = float_layers(net)
    skip = None if sk is None else (sk[0], np.zeros_like(sk[1]))
    return Network(Ws, [np.zeros_like(b) for b in bs], skip)


def certified_mask(margin: np.ndarray) -> np.ndarray:
    """Points whose margin certifies that they are interior to their region."""
    return margin > STRICT_TOL
