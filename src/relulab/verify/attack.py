"""Falsification: random sampling and projected gradient descent on the unsafe-set margin.

For an unsafe conjunction ``C y <= d`` the *margin* of an input is
``max_i (C_i f(x) - d_i)``: it is ``<= 0`` exactly at counterexamples.  The attack
minimises it over the input box with sign-gradient steps (the gradient of a ReLU
network is its local affine map, computed here by a batched numpy backward pass) from
the best of many random starts.  Every candidate is re-checked by a plain forward pass
before it is reported.

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> from relulab.domain import Box
    >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
    >>> x = attack(net, Box([-1], [2]), np.array([[-1.0]]), np.array([-1.9]))   # |x| >= 1.9
    >>> bool(abs(x[0]) >= 1.9)
    True
"""

from __future__ import annotations

import time as _time

import numpy as np

from ..bounds import float_layers
from ..domain import Box
from ..network import Network
from ..tolerance import FEAS_TOL

__all__ = ["attack", "margins", "margin_grad"]


def margins(Ws, bs, skip, X: np.ndarray, C: np.ndarray, d: np.ndarray) -> np.ndarray:
    """``max_i (C_i f(x) - d_i)`` for each row of ``X``.

    Example:
        >>> import numpy as np
        >>> Ws, bs = [np.array([[1.0], [-1.0]]), np.array([[1.0, 1.0]])], [np.zeros(2), np.zeros(1)]
        >>> margins(Ws, bs, None, np.array([[-2.0], [0.5]]), np.array([[-1.0]]), np.array([-1.0])).tolist()
        [-1.0, 0.5]
    """
    H = X
    for W, b in zip(Ws[:-1], bs[:-1], strict=True):
        H = np.maximum(H @ W.T + b, 0.0)
    Y = H @ Ws[-1].T + bs[-1]
    if skip is not None:
        Y = Y + X @ skip[0].T + skip[1]
    return np.max(Y @ C.T - d, axis=1)


def margin_grad(Ws, bs, skip, X: np.ndarray, C: np.ndarray, d: np.ndarray):
    """Margins and a subgradient of the margin for each row of ``X``: ((n,), (n, dim)).

    Example:
        >>> import numpy as np
        >>> Ws, bs = [np.array([[1.0], [-1.0]]), np.array([[1.0, 1.0]])], [np.zeros(2), np.zeros(1)]
        >>> m, g = margin_grad(Ws, bs, None, np.array([[-2.0], [0.5]]), np.array([[-1.0]]), np.array([-1.0]))
        >>> m.tolist(), g.tolist()          # margin 1 - |x|, slope -sign(x)
        ([-1.0, 0.5], [[1.0], [-1.0]])
    """
    H = X
    masks = []
    for W, b in zip(Ws[:-1], bs[:-1], strict=True):
        Z = H @ W.T + b
        masks.append(Z > 0)
        H = np.maximum(Z, 0.0)
    Y = H @ Ws[-1].T + bs[-1]
    if skip is not None:
        Y = Y + X @ skip[0].T + skip[1]
    G = Y @ C.T - d
    i = np.argmax(G, axis=1)
    m = G[np.arange(len(X)), i]
    V = C[i]  # (n, out)
    g = V @ Ws[-1]
    for k in range(len(Ws) - 2, -1, -1):
        g = (g * masks[k]) @ Ws[k]
    if skip is not None:
        g = g + V @ skip[0]
    return m, g


def attack(
    net: Network,
    box: Box,
    C: np.ndarray,
    d: np.ndarray,
    *,
    n_samples: int = 2000,
    n_starts: int = 256,
    steps: int = 30,
    max_rounds: int = 50,
    time_limit: float = 1.0,
    rng: int | np.random.Generator | None = 0,
) -> np.ndarray | None:
    """Search for ``x`` in ``box`` with ``C f(x) <= d`` (within FEAS_TOL); None if not found.

    The returned point lies in the box and satisfies the constraints by a plain forward
    pass of ``net`` (its float64 form).

    Example:
        >>> import numpy as np
        >>> from relulab import Box, Network
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
        >>> x = attack(net, Box([-1], [1]), np.array([[-1.0]]), np.array([-0.9]))   # find |x| >= 0.9
        >>> x is not None and bool(abs(x[0]) >= 0.9 - 1e-9)
        True
        >>> attack(net, Box([-1], [1]), np.array([[-1.0]]), np.array([-2.0]), time_limit=0.05) is None
        True
    """
    t0 = _time.time()
    rng = np.random.default_rng(rng)
    Ws, bs, sk = float_layers(net)
    C = np.atleast_2d(np.asarray(C, float))
    d = np.asarray(d, float).reshape(-1)
    lo, hi = box.lo, box.hi
    width = hi - lo
    X = np.concatenate([box.center[None], box.sample(n_samples, rng)])
    # Counterexamples often sit on faces and corners of the box: snap half of the samples'
    # coordinates to a random bound each (with probability 1/2 per coordinate).
    half = X[1 + n_samples // 2:]
    snap = rng.random(half.shape) < 0.5
    half[snap] = np.where(rng.random(half.shape) < 0.5, lo, hi)[snap]
    M = margins(Ws, bs, sk, X, C, d)
    hit = _first_hit(net, X, M, box, C, d)
    if hit is not None:
        return hit
    # PGD rounds until the time is up: each from the best samples so far plus many fresh
    # random (partly snapped) starts, since basins of counterexamples can be tiny.
    best = X[np.argsort(M)[: n_starts // 4]]
    step0 = 0.1
    rnd = 0
    while True:
        fresh = box.sample(n_starts - len(best), rng)
        snap = rng.random(fresh.shape) < 0.3
        fresh[snap] = np.where(rng.random(fresh.shape) < 0.5, lo, hi)[snap]
        X = np.concatenate([best, fresh])
        for t in range(steps):
            m, g = margin_grad(Ws, bs, sk, X, C, d)
            hit = _first_hit(net, X, m, box, C, d)
            if hit is not None:
                return hit
            step = step0 * (1.0 - t / steps) + 0.002
            X = np.clip(X - step * width * np.sign(g), lo, hi)
        m = margins(Ws, bs, sk, X, C, d)
        hit = _first_hit(net, X, m, box, C, d)
        if hit is not None:
            return hit
        best = X[np.argsort(m)[: n_starts // 8]]
        rnd += 1
        if _time.time() - t0 > time_limit or rnd >= max_rounds:
            return None


def _first_hit(net, X, M, box, C, d) -> np.ndarray | None:
    """The first candidate that passes the re-check (in the box, unsafe by a forward pass)."""
    cand = np.nonzero(M <= FEAS_TOL)[0]
    for i in cand[:16]:
        x = np.clip(X[i], box.lo, box.hi)
        if recheck(net, x, box, C, d):
            return x
    return None


def recheck(net: Network, x: np.ndarray, box: Box, C: np.ndarray, d: np.ndarray) -> bool:
    """In the box (FEAS_TOL) and ``C f(x) <= d + FEAS_TOL`` by a plain forward pass."""
    if not box.contains(x):
        return False
    y = np.asarray(net(np.asarray(x, dtype=np.float64)), dtype=np.float64) if not net.is_exact else (
        np.array([float(v) for v in net.exact()(x)])
    )
    return bool(np.all(C @ y <= d + FEAS_TOL))
