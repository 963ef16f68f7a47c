"""Monte-Carlo empirical NTK of wide random ReLU networks, streamed so memory stays small.

The infinite-width :func:`~relulab.dynamics.ntk` is the expectation limit of the empirical
NTK of one random network; at finite width a single network fluctuates around it with a
relative Frobenius error ``~ C_L / sqrt(width)`` (``C_L`` grows with the depth, Hanin and
Nica 2019; depth 1 in closed form: :func:`~relulab.dynamics.ntk_fluctuation`).  The
Monte-Carlo estimator (neural-tangents' ``monte_carlo_kernel_fn``) averages the empirical
NTKs of ``n_networks`` independent networks, which divides that fluctuation by
``sqrt(n_networks)``: its error is ``~ C_L / sqrt(n_networks * width)``.

* :func:`seeded_ntk_network` -- the random network behind a seed, materialised (for small
  widths and for checking): weights drawn block by block from ``(seed, layer, first row)``.
* :func:`streamed_ntk` -- the empirical NTK of that same network *without* holding its
  weights: each block is drawn, used and dropped in the forward pass and drawn again in
  the backward pass.  Memory: one block (``BLOCK_ELEMS`` entries, 64 MiB in float64),
  one ``(N, N)`` Gram matrix per layer and one bool activation pattern ``(N, width)``
  per hidden layer for ``N`` points -- a depth-4 network of width 2^14 (three 2 GiB
  hidden matrices in float64) fits in well under 1 GB for a few hundred points.
* :func:`monte_carlo_ntk` -- the mean over ``n_networks`` seeded networks, with the spread
  across networks and each network's and the mean's error against the closed form.

Parameterisation: exactly :func:`~relulab.dynamics.ntk`'s (raw parameters i.i.d.
``N(0, 1)``; input layer scaled by ``sqrt(1/d)``, later layers and the readout by
``sqrt(2/fan_in)``, biases by ``sqrt(bias_var)``; the kernel is with respect to the raw
parameters).  Raw weights are drawn in float32 (the N(0, 1) draws need no more
precision, and drawing is the cost); all kernel arithmetic is float64.

Example:
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(6, 4))
    >>> r = monte_carlo_ntk(X, depth=2, width=512, n_networks=4, rng=0)
    >>> r.kernel.shape, r.n_networks, len(r.network_rel_errors)
    ((6, 6), 4, 4)
    >>> bool(r.rel_error < max(r.network_rel_errors))   # averaging cancels fluctuation
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..limits import check_bytes
from ..network import Network
from ..results import Result
from .kernels import KernelError, _check_settings, _points, check_weight_bytes, layer_scales, ntk

__all__ = ["seeded_ntk_network", "streamed_ntk", "monte_carlo_ntk", "MonteCarloNTK"]

BLOCK_ELEMS = 1 << 23  # entries of one weight block: 64 MiB in float64, 32 MiB in float32


def _block_rows(fan_in: int) -> int:
    """Rows per block for a layer with ``fan_in`` columns (a function of the shape only,
    so the streamed and the materialised network cut their blocks identically)."""
    return max(1, BLOCK_ELEMS // fan_in)


def _draw(seed: int, kind: int, layer: int, r0: int, shape: tuple[int, ...]) -> np.ndarray:
    """Raw N(0, 1) entries of one block (kind 0: weights from row r0, kind 1: the bias)."""
    return np.random.default_rng([seed, kind, layer, r0]).standard_normal(shape, dtype=np.float32)


def _blocks(seed: int, layer: int, fan_out: int, fan_in: int):
    """Yield ``(r0, raw weight rows r0 .. r0 + r)`` of one layer, block by block."""
    step = _block_rows(fan_in)
    for r0 in range(0, fan_out, step):
        yield r0, _draw(seed, 0, layer, r0, (min(step, fan_out - r0), fan_in))


def _check_sizes(d: int, width: Any, seed: Any) -> int:
    if not isinstance(width, (int, np.integer)) or isinstance(width, bool) or width < 1:
        raise KernelError(f"width: expected an integer >= 1, got {width!r}")
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise KernelError(f"seed: expected an integer >= 0, got {seed!r}")
    if d < 1:
        raise KernelError(f"d: expected an input dimension >= 1, got {d}")
    return int(width)


def seeded_ntk_network(
    d: int, width: int, depth: int = 1, seed: int = 0, bias_var: float = 0.0
) -> tuple[Network, list[tuple[float, float]]]:
    """The random network that :func:`streamed_ntk` uses for ``seed``, with its weights
    in memory: ``(net, scales)`` as :func:`~relulab.dynamics.random_ntk_network` returns
    them (effective weights ``scale * raw``), so
    ``empirical_ntk(net, X, scales=scales)`` equals ``streamed_ntk(X, width=width,
    depth=depth, seed=seed, bias_var=bias_var)``.

    Example:
        >>> net, scales = seeded_ntk_network(3, 8, depth=2, seed=1)
        >>> net, [round(w * w, 3) for w, _ in scales]
        (Network(3-8-8-1, float64), [0.333, 0.25, 0.25])
    """
    _check_settings(depth, bias_var)
    width = _check_sizes(d, width, seed)
    dims = [d] + [width] * depth + [1]
    check_weight_bytes(dims, "seeded_ntk_network")
    scales = layer_scales(dims, bias_var)
    Ws, bs = [], []
    for k in range(depth + 1):
        raw = np.vstack([blk for _, blk in _blocks(seed, k, dims[k + 1], dims[k])]).astype(np.float64)
        Ws.append(scales[k][0] * raw)
        b = _draw(seed, 1, k, 0, (dims[k + 1],)).astype(np.float64) if bias_var else np.zeros(dims[k + 1])
        bs.append(scales[k][1] * b)
    return Network(Ws, bs), scales


def _streamed(A: np.ndarray, n: int, width: int, depth: int, seed: int, bias_var: float) -> np.ndarray:
    """NTK between rows ``:n`` and ``n:`` of ``A`` (or all rows against all when ``n`` is
    the row count), by the activation-pattern formula of ``empirical_ntk``:
    ``sum_k (G_k G_k^T) * (s_w^2 H_{k-1} H_{k-1}^T + s_b^2)``."""
    N, d = A.shape
    rows, cols = (slice(0, N), slice(0, N)) if n == N else (slice(0, n), slice(n, N))
    m = N if n == N else N - n
    # one Gram per layer and the kernel (n x m), the activations, masks and gradients (N x width)
    check_bytes(8.0 * ((depth + 3) * n * m + 4 * N * width), f"the streamed NTK of {N} points at width {width}")
    dims = [d] + [width] * depth + [1]
    scales = layer_scales(dims, bias_var)

    def gram(M: np.ndarray) -> np.ndarray:
        return M[rows] @ M[cols].T

    # forward: keep each layer's input Gram (what the kernel needs) and activation pattern
    HH, masks = [], []
    H = A
    for k in range(depth):
        ws, bsc = scales[k]
        HH.append(ws * ws * gram(H) + bsc * bsc)
        P = np.empty((N, dims[k + 1]))
        for r0, raw in _blocks(seed, k, dims[k + 1], dims[k]):
            P[:, r0:r0 + raw.shape[0]] = ws * (H @ raw.T.astype(np.float64))
        if bias_var:
            P += bsc * _draw(seed, 1, k, 0, (dims[k + 1],)).astype(np.float64)
        masks.append(P > 0)  # relu'(0) = 0, as in empirical_ntk
        H = np.where(masks[-1], P, 0.0)
        del P
    ws, bsc = scales[depth]
    K = ws * ws * gram(H) + bsc * bsc  # readout layer: d f / d (its pre-activation) = 1
    del H
    # backward: G_k = d f / d (pre-activations of layer k), regenerating the blocks
    G = ws * _draw(seed, 0, depth, 0, (1, dims[depth])).astype(np.float64) * masks[depth - 1]
    for k in range(depth - 1, -1, -1):
        K += gram(G) * HH[k]
        if k == 0:
            break
        Gn = np.zeros((N, dims[k]))
        for r0, raw in _blocks(seed, k, dims[k + 1], dims[k]):
            Gn += G[:, r0:r0 + raw.shape[0]] @ raw.astype(np.float64)
        G = scales[k][0] * Gn * masks[k - 1]
    return K


def _inputs(X: Any, Z: Any) -> tuple[np.ndarray, np.ndarray | None]:
    X = _points(X, "X")
    return X, None if Z is None else _points(Z, "Z", X.shape[1])


def streamed_ntk(
    X: Any, Z: Any = None, *, width: int, depth: int = 1, seed: int = 0, bias_var: float = 0.0
) -> np.ndarray:
    """The empirical NTK of the seeded random network (:func:`seeded_ntk_network`)
    between the rows of ``X`` and of ``Z`` (``Z = X`` when omitted), computed without
    holding its weights (see the module docstring for the memory).

    Example:
        >>> import numpy as np
        >>> from relulab.dynamics import empirical_ntk
        >>> X = np.random.default_rng(0).normal(size=(5, 3))
        >>> net, sc = seeded_ntk_network(3, 64, depth=3, seed=2)
        >>> bool(np.allclose(streamed_ntk(X, width=64, depth=3, seed=2), empirical_ntk(net, X, scales=sc)))
        True
    """
    _check_settings(depth, bias_var)
    X, Z = _inputs(X, Z)
    width = _check_sizes(X.shape[1], width, seed)
    A = X if Z is None else np.vstack([X, Z])
    return _streamed(A, X.shape[0] if Z is not None else A.shape[0], width, depth, int(seed), float(bias_var))


@dataclass(frozen=True)
class MonteCarloNTK(Result):
    """The Monte-Carlo empirical NTK: the mean of ``n_networks`` networks' empirical NTKs.

    ``kernel`` the mean ``(n, m)``; ``seeds`` rebuild each network
    (:func:`seeded_ntk_network`).  The spread across networks, from the entrywise sample
    variance ``s^2`` (``nan`` for one network): ``single_network_spread`` =
    ``||s||_F / ||kernel||_F``, the estimated RMS relative deviation of *one* network
    from the expectation; ``rel_std_error`` = that over ``sqrt(n_networks)``, the mean's.
    Against the closed form ``ntk`` (same points, depth, bias): ``rel_error`` =
    ``||kernel - ntk||_F / ||ntk||_F`` and ``network_rel_errors`` each network's own.
    ``estimate`` is always ``"sampled"``: a random estimate, not the limit kernel.
    ``network_kernels``: each network's own kernel when asked for (``keep_kernels``).

    Example:
        >>> import numpy as np
        >>> r = monte_carlo_ntk(np.eye(3), width=256, n_networks=2, rng=1)
        >>> r.estimate, sorted(r.to_dict())[:3]
        ('sampled', ['bias_var', 'depth', 'estimate'])
    """

    kernel: np.ndarray
    n_networks: int
    width: int
    depth: int
    bias_var: float
    seeds: tuple[int, ...]
    single_network_spread: float
    rel_std_error: float
    rel_error: float
    network_rel_errors: tuple[float, ...]
    estimate: str = "sampled"
    network_kernels: tuple[np.ndarray, ...] | None = None


def monte_carlo_ntk(
    X: Any,
    Z: Any = None,
    depth: int = 1,
    *,
    width: int,
    n_networks: int = 1,
    bias_var: float = 0.0,
    rng: np.random.Generator | int | None = None,
    keep_kernels: bool = False,
) -> MonteCarloNTK:
    """Mean empirical NTK of ``n_networks`` independent random networks of the given
    ``width`` in the parameterisation of :func:`~relulab.dynamics.ntk`, each streamed
    (:func:`streamed_ntk`), so memory does not grow with ``width^2`` or ``n_networks``.

    Its relative error against ``ntk`` is ``~ C_L / sqrt(n_networks * width)`` (no
    finite-width bias is visible at this order on ReLU networks; see docs/kernels.md).

    Args:
        X, Z: points ``(n, d)`` and ``(m, d)``; ``Z = X`` when omitted.
        depth, bias_var: as for :func:`~relulab.dynamics.ntk`.
        width: hidden width (every hidden layer).
        n_networks: independent networks averaged (1: a single network's NTK).
        rng: seed or generator for the networks' seeds.
        keep_kernels: also return every network's kernel (memory ``n_networks * n * m``).

    Example:
        >>> import numpy as np
        >>> X = np.random.default_rng(0).normal(size=(8, 5))
        >>> one = monte_carlo_ntk(X, depth=2, width=1024, n_networks=1, rng=3)
        >>> many = monte_carlo_ntk(X, depth=2, width=1024, n_networks=16, rng=3)
        >>> bool(many.rel_error < one.rel_error), bool(many.rel_std_error < many.single_network_spread)
        (True, True)
    """
    _check_settings(depth, bias_var)
    if not isinstance(keep_kernels, (bool, np.bool_)):   # "no" was truthy
        raise KernelError(f"keep_kernels: expected True or False, got {keep_kernels!r}")
    X, Z = _inputs(X, Z)
    width = _check_sizes(X.shape[1], width, 0)
    if not isinstance(n_networks, (int, np.integer)) or isinstance(n_networks, bool) or n_networks < 1:
        raise KernelError(f"n_networks: expected an integer >= 1, got {n_networks!r}")
    n_networks = int(n_networks)
    try:
        gen = np.random.default_rng(rng)
    except (TypeError, ValueError):
        raise KernelError(f"rng: need a seed (an integer >= 0), a numpy Generator or None, got {rng!r}") from None
    seeds = tuple(int(s) for s in gen.integers(0, 2**63 - 1, size=n_networks))
    A = X if Z is None else np.vstack([X, Z])
    n = X.shape[0] if Z is not None else A.shape[0]
    if keep_kernels:  # every network's kernel is kept, beside the running sums
        check_bytes(8.0 * (n_networks + 3) * n * (A.shape[0] if Z is None else A.shape[0] - n),
                    f"monte_carlo_ntk: keep_kernels for {n_networks} networks")
    Kinf = ntk(X, Z, depth=depth, bias_var=bias_var)
    nrm_inf = float(np.linalg.norm(Kinf))
    total = np.zeros_like(Kinf)
    total_sq = np.zeros_like(Kinf)
    errs, kept = [], []
    for s in seeds:
        K = _streamed(A, n, width, depth, s, float(bias_var))
        if keep_kernels:
            kept.append(K)
        errs.append(float(np.linalg.norm(K - Kinf)) / nrm_inf if nrm_inf > 0 else float("nan"))
        total += K
        total_sq += K * K
    mean = total / n_networks
    nrm = float(np.linalg.norm(mean))
    if n_networks > 1 and nrm > 0:
        var = np.maximum(total_sq - n_networks * mean * mean, 0.0) / (n_networks - 1)
        spread = float(np.sqrt(var.sum())) / nrm
    else:
        spread = float("nan")
    return MonteCarloNTK(
        kernel=mean,
        n_networks=n_networks,
        width=width,
        depth=depth,
        bias_var=float(bias_var),
        seeds=seeds,
        single_network_spread=spread,
        rel_std_error=spread / np.sqrt(n_networks),
        rel_error=float(np.linalg.norm(mean - Kinf)) / nrm_inf if nrm_inf > 0 else float("nan"),
        network_rel_errors=tuple(errs),
        network_kernels=tuple(kept) if keep_kernels else None,
    )
