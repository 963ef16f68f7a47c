"""Neural tangent and Gaussian-process kernels of ReLU networks, finite and infinite width.

* :func:`empirical_ntk` -- the NTK ``<d f(x)/d theta, d f(z)/d theta>`` of a given network.
  For a layered ReLU network the Jacobian of the output with respect to layer ``k``'s
  weights is an outer product ``G_k(x) H_{k-1}(x)^T`` of a backward vector (the output's
  derivative with respect to the pre-activations of layer ``k``, read off the activation
  pattern) and the forward activation, so the kernel is the closed sum

      ``sum_k (G_k(x) . G_k(z)) * (H_{k-1}(x) . H_{k-1}(z) + 1)``

  (the ``+ 1`` is the bias), computed as a few Gram matrices for the whole batch: no
  per-sample autograd.  Any other torch module goes through ``torch.func`` (vmap of jacrev).
* :func:`nngp` / :func:`ntk` -- the infinite-width limits of fully connected ReLU networks
  (the arc-cosine recursions); :func:`random_ntk_network` draws a finite network in the
  same parameterisation, whose :func:`empirical_ntk` converges to :func:`ntk`.
* :func:`kernel_ridge` / :class:`KernelRidge` -- kernel ridge regression on them.

Parameterisation of :func:`nngp` and :func:`ntk` (NTK parameterisation, He variance 2),
for an input ``x`` in ``R^d``, ``depth`` hidden layers of width ``n``, all raw parameters
i.i.d. ``N(0, 1)`` and ``beta = bias_var``::

    g_1(x) = W_1 x / sqrt(d)            + sqrt(beta) b_1      (input layer: variance 1/d)
    g_l(x) = sqrt(2/n) W_l relu(g_{l-1}) + sqrt(beta) b_l      l = 2 .. depth
    f(x)   = sqrt(2/n) W_out relu(g_depth) + sqrt(beta) b_out   (readout: variance 2/n)

so every layer fed by ReLU features has weight variance 2 (over fan-in) and the readout
is treated like the hidden layers.  With ``beta = 0`` and ``|x|^2 = |z|^2 = d`` all
diagonals equal 1 and, with ``u = x.z/d``, depth 1 gives ``nngp = kappa1(u)`` and
``ntk = u kappa0(u) + kappa1(u)``, where ``kappa0(u) = 1 - arccos(u)/pi`` and
``kappa1(u) = (u (pi - arccos u) + sqrt(1 - u^2)) / pi``.  The NTK is the derivative
kernel with respect to the *raw* parameters (weights and biases alike).

Example:
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]]) * np.sqrt(2)
    >>> np.round(ntk(X, depth=1), 4).tolist()         # kappa1(0) = 1/pi, kappa0(0) = 1/2
    [[2.0, 0.3183], [0.3183, 2.0]]
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import RelulabError, is_int_at_least, require
from ..limits import ResourceLimitError, check_bytes
from ..network import Network

__all__ = [
    "KernelError",
    "kappa0",
    "kappa1",
    "arccos_moment2",
    "ntk_fluctuation",
    "nngp",
    "ntk",
    "empirical_ntk",
    "random_ntk_network",
    "kernel_ridge",
    "KernelRidge",
]


class KernelError(RelulabError):
    """A kernel was asked for with inconsistent inputs or settings."""


def kappa0(u: Any) -> np.ndarray:
    """The degree-0 arc-cosine function ``1 - arccos(u)/pi`` = ``2 E[step(a) step(b)]`` for
    standard Gaussians ``a, b`` with correlation ``u`` (``u`` clipped to [-1, 1]).

    Example:
        >>> float(kappa0(0.0)), float(kappa0(1.0))
        (0.5, 1.0)
    """
    u = np.clip(np.asarray(u, dtype=float), -1.0, 1.0)
    return 1.0 - np.arccos(u) / np.pi


def kappa1(u: Any) -> np.ndarray:
    """The degree-1 arc-cosine function ``(u (pi - arccos u) + sqrt(1 - u^2)) / pi`` =
    ``2 E[relu(a) relu(b)]`` for standard Gaussians with correlation ``u``.

    Example:
        >>> round(float(kappa1(0.0)), 6), float(kappa1(1.0))
        (0.31831, 1.0)
    """
    u = np.clip(np.asarray(u, dtype=float), -1.0, 1.0)
    return (u * (np.pi - np.arccos(u)) + np.sqrt(np.maximum(1.0 - u * u, 0.0))) / np.pi


def arccos_moment2(u: Any) -> np.ndarray:
    """``E[relu(a)^2 relu(b)^2]`` for standard Gaussians ``a, b`` with correlation ``u``:
    ``J_2(theta) / (2 pi)`` with ``theta = arccos u`` and the degree-2 arc-cosine function
    ``J_2 = 3 sin(theta) cos(theta) + (pi - theta)(1 + 2 cos(theta)^2)`` (Cho and Saul
    2009).  The fourth-order moment behind :func:`ntk_fluctuation`.

    Example:
        >>> float(arccos_moment2(1.0)), round(float(arccos_moment2(0.0)), 6)   # 3/2, (1/2)^2
        (1.5, 0.25)
    """
    u = np.clip(np.asarray(u, dtype=float), -1.0, 1.0)
    th = np.arccos(u)
    return (3.0 * np.sqrt(np.maximum(1.0 - u * u, 0.0)) * u + (np.pi - th) * (1.0 + 2.0 * u * u)) / (2.0 * np.pi)


def ntk_fluctuation(X: Any, Z: Any = None, bias_var: float = 0.0) -> np.ndarray:
    """Per-entry variance of one hidden neuron's share of the depth-1 empirical NTK.

    A depth-1 network of width ``n`` in the parameterisation of :func:`ntk` has the
    empirical NTK ``K_n = beta + (1/n) sum_i c_i`` with i.i.d. neuron terms
    ``c_i(x, z) = 2 relu(g_i(x)) relu(g_i(z)) + 2 v_i^2 step(g_i(x)) step(g_i(z)) Sigma_1(x, z)``
    (readout weight ``v_i``; ``g_i = w_i . x / sqrt(d) + sqrt(beta) b_i``;
    ``Sigma_1 = x.z/d + beta``), so ``E[c] = ntk(X, Z, 1, beta) - beta`` and, at *every*
    width ``n`` (not only asymptotically),

        ``E[(K_n - K_inf)(x, z)^2] = V(x, z) / n``,   ``E ||K_n - K_inf||_F^2 = sum V / n``.

    ``V = E[c^2] - E[c]^2`` in closed form from ``E v^2 = 1``, ``E v^4 = 3`` and the
    arc-cosine moments of degrees 0, 1, 2 (:func:`kappa0`, :func:`kappa1`,
    :func:`arccos_moment2`): ``E c^2 = 4 E[R^2 R^2] + 8 Sigma_1 E[R R] + 12 Sigma_1^2 E[S S]``.
    Depth 1 only (deeper networks have no such closed form; their variance grows roughly
    with the number of layers, Hanin and Nica 2019).

    Example:
        >>> import numpy as np
        >>> X = np.random.default_rng(0).normal(size=(8, 4))
        >>> V, K = ntk_fluctuation(X), ntk(X, depth=1)
        >>> n = V.sum() / (0.02 * np.linalg.norm(K)) ** 2   # width for an RMS error of 2%
        >>> bool(1_000 < n < 100_000)
        True
    """
    _check_settings(1, bias_var)
    X = _points(X, "X")
    Z = X if Z is None else _points(Z, "Z", X.shape[1])
    d = X.shape[1]
    # about a dozen n x m arrays at once (ntk of the same points is checked for five)
    check_bytes(12 * 8.0 * X.shape[0] * Z.shape[0],
                f"ntk_fluctuation of {X.shape[0]} x {Z.shape[0]} points")
    same = _identical_rows(X, Z)
    s1 = X @ Z.T / d + bias_var
    sx = np.einsum("ij,ij->i", X, X) / d + bias_var
    sz = np.einsum("ij,ij->i", Z, Z) / d + bias_var
    rx, rz = np.sqrt(sx), np.sqrt(sz)
    live = np.outer(rx > 0, rz > 0)  # a zero-variance point has g = 0: relu and step vanish
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(live, s1 / np.outer(np.where(rx > 0, rx, 1.0), np.where(rz > 0, rz, 1.0)), 0.0)
    rho[same] = 1.0  # exact for identical inputs (see _recursions)
    ss = np.where(live, kappa0(rho) / 2, 0.0)  # E[step step]
    rr = np.outer(rx, rz) * kappa1(rho) / 2  # E[relu relu]
    r2r2 = np.outer(sx, sz) * arccos_moment2(rho)  # E[relu^2 relu^2]
    mean = 2 * rr + 2 * s1 * ss
    second = 4 * r2r2 + 8 * s1 * rr + 12 * s1 * s1 * ss
    with np.errstate(over="ignore", invalid="ignore"):
        V = np.maximum(second - mean * mean, 0.0)
    return _finite_kernel(V, "ntk_fluctuation", X, Z)


def _finite_kernel(K: np.ndarray, what: str, X: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """``K``, or one error where it overflowed float64 (inputs near 1e155: the squared
    norms, or their products, pass 1.8e308), instead of inf and NaN entries."""
    if not np.all(np.isfinite(K)):
        big = max(float(np.abs(X).max()), float(np.abs(Z).max()))
        raise KernelError(f"{what}: the kernel overflows float64 for inputs this large (largest "
                          f"|entry| {big:.3g}); rescale the inputs")
    return K


def _numbers(A: Any, what: str) -> np.ndarray:
    """``A`` as a float array, or one error naming it (strings, ragged rows)."""
    try:
        return np.asarray(A, dtype=float)
    except (TypeError, ValueError) as e:
        raise KernelError(f"{what}: entries are not numbers ({str(e).splitlines()[0]})") from None


def _points(X: Any, what: str, d: int | None = None) -> np.ndarray:
    A = _numbers(X, what)
    if A.ndim == 1:
        A = A[None, :]
    if A.ndim != 2 or A.shape[0] == 0 or A.shape[1] == 0:
        raise KernelError(f"{what}: expected a non-empty (n, d) array, got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise KernelError(f"{what}: contains NaN or infinite entries")
    if d is not None and A.shape[1] != d:
        raise KernelError(f"{what}: points have dimension {A.shape[1]}, expected {d}")
    return A


def _check_settings(depth: int, bias_var: float) -> None:
    if not isinstance(depth, (int, np.integer)) or isinstance(depth, bool) or depth < 1:
        raise KernelError(f"depth: expected an integer >= 1 hidden layers, got {depth!r}")
    if (not isinstance(bias_var, numbers.Real) or isinstance(bias_var, bool)
            or not np.isfinite(bias_var) or bias_var < 0):
        raise KernelError(f"bias_var: expected a finite number >= 0, got {bias_var!r}")


def _identical_rows(X: np.ndarray, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs ``(i, j)`` with row ``i`` of X equal to row ``j`` of Z, by sorting (no
    n-by-m comparison).  ``+ 0.0`` turns -0.0 into 0.0, which the row comparison (on bytes)
    would otherwise tell apart."""
    _, ids = np.unique(np.vstack([X, Z]) + 0.0, axis=0, return_inverse=True)
    ids = ids.reshape(-1)
    ix, iz = ids[: X.shape[0]], ids[X.shape[0]:]
    order = np.argsort(iz, kind="stable")
    lo = np.searchsorted(iz[order], ix, "left")
    counts = np.searchsorted(iz[order], ix, "right") - lo
    rows = np.repeat(np.arange(X.shape[0]), counts)
    starts = np.repeat(lo - (np.cumsum(counts) - counts), counts)
    return rows, order[np.arange(rows.size) + starts]


def _recursions(X: Any, Z: Any, depth: int, bias_var: float) -> tuple[np.ndarray, np.ndarray]:
    """(NNGP, NTK) of the output between the rows of X and of Z (see the module docstring)."""
    _check_settings(depth, bias_var)
    X = _points(X, "X")
    Z = X if Z is None else _points(Z, "Z", X.shape[1])
    d = X.shape[1]
    # S, T, rho, k0 and a temporary: five n x m float arrays at a time
    check_bytes(5 * 8.0 * X.shape[0] * Z.shape[0],
                f"computing the {X.shape[0]} x {Z.shape[0]} kernel")
    same = _identical_rows(X, Z)
    S = X @ Z.T / d + bias_var  # layer-1 pre-activation covariance
    sx = np.einsum("ij,ij->i", X, X) / d + bias_var
    sz = np.einsum("ij,ij->i", Z, Z) / d + bias_var
    T = S.copy()
    for _ in range(depth):  # one ReLU layer + the next affine layer per step
        rx, rz = np.sqrt(sx), np.sqrt(sz)
        with np.errstate(divide="ignore"):
            ix, iz = np.where(rx > 0, 1.0 / rx, 0.0), np.where(rz > 0, 1.0 / rz, 0.0)
        rho = S * ix[:, None]  # correlation; 0 against a zero-variance point
        rho *= iz[None, :]
        np.clip(rho, -1.0, 1.0, out=rho)
        # identical inputs have rho = 1 exactly; the rounded quotient would put an error of
        # sqrt(machine eps) ~ 1e-8 into arccos(rho) (its slope is infinite at 1)
        nz = (rx[same[0]] > 0) & (rz[same[1]] > 0)
        rho[same[0][nz], same[1][nz]] = 1.0
        # kappa0 = (pi - theta)/pi, kappa1 = (sin theta + (pi - theta) cos theta)/pi, theta = arccos rho
        k0 = np.arccos(rho)
        np.subtract(np.pi, k0, out=k0)
        S = np.multiply(rho, rho)
        np.subtract(1.0, S, out=S)
        np.maximum(S, 0.0, out=S)
        np.sqrt(S, out=S)
        rho *= k0
        S += rho  # pi * kappa1
        S *= np.outer(rx / np.pi, rz)
        if bias_var:
            S += bias_var  # the next layer's pre-activation covariance
        k0 *= 1.0 / np.pi
        T *= k0
        T += S
        # the diagonals: sqrt(s s) kappa1(1) + bias_var
        sx, sz = sx + bias_var, sz + bias_var
    _finite_kernel(T, "ntk/nngp", X, Z)
    _finite_kernel(S, "ntk/nngp", X, Z)
    return S, T



def nngp(X: Any, Z: Any = None, depth: int = 1, bias_var: float = 0.0) -> np.ndarray:
    """The infinite-width NNGP kernel ``E[f(x) f(z)]`` of the output of a fully connected
    ReLU network with ``depth`` hidden layers, between the rows of ``X`` and of ``Z``
    (``Z = X`` when omitted).  Parameterisation: see the module docstring (input layer
    variance ``1/d``, every later layer variance ``2/fan_in``, bias variance ``bias_var``).

    Example:
        >>> import numpy as np
        >>> X = np.array([[1.0, 0.0], [0.0, 1.0]]) * np.sqrt(2)
        >>> np.round(nngp(X, depth=1), 4).tolist()
        [[1.0, 0.3183], [0.3183, 1.0]]
    """
    return _recursions(X, Z, depth, bias_var)[0]


def ntk(X: Any, Z: Any = None, depth: int = 1, bias_var: float = 0.0) -> np.ndarray:
    """The infinite-width neural tangent kernel of a fully connected ReLU network with
    ``depth`` hidden layers, between the rows of ``X`` and of ``Z`` (``Z = X`` when
    omitted), with respect to all raw parameters in the NTK parameterisation of the module
    docstring: ``Theta_1 = Sigma_1``, ``Theta_{l+1} = Theta_l kappa0(rho_l) + Sigma_{l+1}``.

    Example:
        >>> import numpy as np
        >>> x = np.array([[3.0, 4.0]])
        >>> float(ntk(x, depth=2)[0, 0]) == 3 * float(x[0] @ x[0] / 2)   # (L+1) |x|^2/d
        True
    """
    return _recursions(X, Z, depth, bias_var)[1]


def random_ntk_network(
    d: int,
    width: int,
    depth: int = 1,
    bias_var: float = 0.0,
    out_dim: int = 1,
    rng: np.random.Generator | int | None = None,
) -> tuple[Network, list[tuple[float, float]]]:
    """A random network in the parameterisation of :func:`ntk` and its layer scales.

    Returns ``(net, scales)``: ``net`` holds the *effective* weights ``scale * raw`` (raw
    entries i.i.d. N(0, 1)), ``scales[k] = (weight scale, bias scale)`` of layer ``k``.
    ``empirical_ntk(net, X, scales=scales)`` is the NTK with respect to the raw
    parameters, which tends to ``ntk(X, depth=depth, bias_var=bias_var)`` as ``width``
    grows.

    Example:
        >>> net, scales = random_ntk_network(3, 8, depth=2, rng=0)
        >>> net, [round(w * w, 3) for w, _ in scales]
        (Network(3-8-8-1, float64), [0.333, 0.25, 0.25])
    """
    _check_settings(depth, bias_var)
    if not all(is_int_at_least(v, 1) for v in (d, width, out_dim)):
        raise KernelError(f"random_ntk_network: d, width, out_dim must be integers >= 1 "
                          f"(got {d!r}, {width!r}, {out_dim!r})")
    rng = np.random.default_rng(rng)
    dims = [d] + [width] * depth + [out_dim]
    check_weight_bytes(dims, "random_ntk_network")
    scales = layer_scales(dims, bias_var)
    Ws, bs = [], []
    for k, (wsc, bsc) in enumerate(scales):
        Ws.append(wsc * rng.standard_normal((dims[k + 1], dims[k])))
        bs.append(bsc * rng.standard_normal(dims[k + 1]))
    return Network(Ws, bs), scales


def layer_scales(dims: list[int], bias_var: float) -> list[tuple[float, float]]:
    """Per layer ``(weight scale, bias scale)`` of the parameterisation of :func:`ntk` for
    layer sizes ``dims`` (input first): ``sqrt(1/d)`` for the input layer, ``sqrt(2/fan_in)``
    after it, ``sqrt(bias_var)`` for every bias.

    Example:
        >>> [(round(w * w, 3), b) for w, b in layer_scales([4, 8, 1], 0.0)]
        [(0.25, 0.0), (0.25, 0.0)]
    """
    bsc = float(np.sqrt(bias_var))
    return [(float(np.sqrt((1.0 if k == 0 else 2.0) / dims[k])), bsc) for k in range(len(dims) - 1)]


def check_weight_bytes(dims: list[int], what: str) -> None:
    """Refuse, against the memory budget, a network of layer sizes ``dims`` whose float64
    weights (drawn, then scaled: two copies) would not fit."""
    n = sum(float(a) * float(b) for a, b in zip(dims, dims[1:]))  # noqa: B905
    check_bytes(16.0 * n, f"{what}: the weights of a {'-'.join(map(str, dims))} network")


def _network_ntk(
    net: Network, X: np.ndarray, Z: np.ndarray | None, scales: list[tuple[float, float]] | None
) -> np.ndarray:
    n, m = X.shape[0], X.shape[0] if Z is None else Z.shape[0]
    o, width = net.output_dim, sum(net.widths)
    # the kernel and one (n, m) product per layer, plus activations and backward
    # products of both point sets
    check_bytes(8.0 * (2 * n * m * o * o + 2 * (n + m) * width * (o + 2)),
                f"empirical_ntk: the {n} x {m} kernel of a {net.input_dim}-{'-'.join(map(str, net.widths))} network")
    net = net.float()
    if scales is None:
        scales = [(1.0, 1.0)] * net.depth
    try:
        scales = [(float(w), float(b)) for w, b in scales]
    except (TypeError, ValueError):
        raise KernelError("scales: need one (weight scale, bias scale) pair of numbers per layer") from None
    if len(scales) != net.depth:
        raise KernelError(f"scales: {len(scales)} pairs for a network with {net.depth} layers")
    if not all(np.isfinite(v) for pair in scales for v in pair):
        raise KernelError("scales: contain NaN or infinite entries")

    def passes(A: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
        Hs, Gs = [A], []
        masks = []
        H = A
        for W, b in zip(net.weights[:-1], net.biases[:-1], strict=True):
            P = H @ W.T + b
            masks.append(P > 0)  # relu'(0) = 0, as everywhere in relulab
            H = np.where(masks[-1], P, 0.0)
            Hs.append(H)
        o = net.output_dim
        G = np.broadcast_to(np.eye(o), (A.shape[0], o, o))  # d f / d (output pre-activation)
        Gs = [G]
        for k in range(net.depth - 1, 0, -1):
            G = (G @ net.weights[k]) * masks[k - 1][:, None, :]
            Gs.append(G)
        return Hs, Gs[::-1]

    Hx, Gx = passes(X)
    Hz, Gz = (Hx, Gx) if Z is None else passes(Z)
    Zp = X if Z is None else Z
    o = net.output_dim
    K = np.zeros((X.shape[0], o, Zp.shape[0], o))
    for k in range(net.depth):
        wsc, bsc = scales[k]
        HH = wsc * wsc * (Hx[k] @ Hz[k].T) + bsc * bsc
        if o == 1:
            GG = Gx[k][:, 0, :] @ Gz[k][:, 0, :].T
            K[:, 0, :, 0] += GG * HH
        else:
            GG = np.einsum("nip,mjp->nimj", Gx[k], Gz[k], optimize=True)
            K += GG * HH[:, None, :, None]
    if net.skip is not None:  # the skip (S, s) is a parameter too: d f_i / d S = e_i x^T
        K += np.eye(o)[None, :, None, :] * (X @ Zp.T + 1.0)[:, None, :, None]
    if o == 1:
        return K[:, 0, :, 0]
    return K.transpose(0, 2, 1, 3)


def _torch_mlp_as_network(module: Any) -> Network | None:
    """The module as a Network when it is a plain Sequential of Linear and ReLU layers
    (then its parameters are exactly the Network's), else None."""
    torch = require("torch", "torch")
    nn = torch.nn
    if not isinstance(module, nn.Sequential):
        return None
    kinds = [type(m) for m in module]
    if not kinds or any(k not in (nn.Linear, nn.ReLU, nn.Identity) for k in kinds):
        return None
    seq = [k for k in kinds if k is not nn.Identity]
    # a plain MLP starts with Linear (a leading ReLU acts on the input: torch.func path)
    if not seq or seq[0] is not nn.Linear or seq[-1] is not nn.Linear or any(
        a is nn.ReLU and b is nn.ReLU for a, b in zip(seq, seq[1:], strict=False)
    ):
        return None
    if any(a is nn.Linear and b is nn.Linear for a, b in zip(seq, seq[1:], strict=False)):
        return None
    if any(isinstance(m, nn.Linear) and m.bias is None for m in module):
        return None
    from ..io.torch import from_torch

    return from_torch(module)


# points per vmap call of the generic path (see _torch_ntk)
_NTK_CHUNK = 64


def _torch_ntk(module: Any, X: np.ndarray, Z: np.ndarray | None) -> np.ndarray:
    """Generic path: Jacobians of all samples at once by ``torch.func.vmap(jacrev)``."""
    torch = require("torch", "torch")
    from torch.func import functional_call, jacrev, vmap

    params = {k: v.detach() for k, v in module.named_parameters()}
    if not params:
        raise KernelError("empirical_ntk: the torch module has no parameters")
    dtype = next(iter(params.values())).dtype

    def f(p: dict, x: Any) -> Any:
        return functional_call(module, p, (x[None],)).reshape(-1)

    def jac(A: np.ndarray) -> list[Any]:
        # in chunks of points: vmap runs the forward and backward of every point at once,
        # and the module's own intermediates (n x its widest activation) are not in the
        # estimate below (a 2-parameter module with a 400,000-wide activation on 1,500
        # points asked torch for 2.4 GB at once)
        parts = []
        for s0 in range(0, A.shape[0], _NTK_CHUNK):
            J = vmap(jacrev(f), (None, 0))(params, torch.as_tensor(A[s0:s0 + _NTK_CHUNK], dtype=dtype))
            parts.append([j.reshape(j.shape[0], j.shape[1], -1) for j in J.values()])
        return [torch.cat(js) for js in zip(*parts, strict=True)]

    # the Jacobians (every point x every output x every parameter, with vmap's working
    # copies) and the kernel: a 9.6 GB allocation under a 1 GB budget raised torch's raw
    # RuntimeError
    with torch.no_grad():
        o = int(f(params, torch.as_tensor(X[0], dtype=dtype)).numel())
    P = sum(int(v.numel()) for v in params.values())
    m = 0 if Z is None else Z.shape[0]
    item = torch.empty(0, dtype=dtype).element_size()
    check_bytes(4.0 * item * (X.shape[0] + m) * o * P + 8.0 * X.shape[0] * (m or X.shape[0]) * o * o,
                f"empirical_ntk: the Jacobians of {X.shape[0] + m} points ({o} outputs, {P} parameters; "
                "fewer points, or a Sequential of Linear and ReLU, which takes the exact formula)")

    try:
        with torch.no_grad():
            Jx = jac(X)
            Jz = Jx if Z is None else jac(Z)
            K = sum(torch.einsum("nip,mjp->nmij", a, b) for a, b in zip(Jx, Jz, strict=True))
    except RuntimeError as e:  # torch's allocator: "can't allocate memory: you tried to allocate ..."
        if "allocate" not in str(e):
            raise
        raise ResourceLimitError(f"empirical_ntk: torch could not allocate the module's working memory "
                                 f"for {_NTK_CHUNK} points at a time ({str(e).splitlines()[0][:160]}); "
                                 "fewer or smaller points") from None
    K = K.double().numpy()
    return K[:, :, 0, 0] if K.shape[2] == 1 else K


def empirical_ntk(
    net: Any, X: Any, Z: Any = None, scales: list[tuple[float, float]] | None = None
) -> np.ndarray:
    """The empirical NTK ``sum_p d f(x)/d theta_p * d f(z)/d theta_p`` over all parameters.

    Args:
        net: a :class:`~relulab.Network` (its skip ``(S, s)``, if any, counts as
            parameters) or a torch module.  A torch ``nn.Sequential`` of ``Linear`` and
            ``ReLU`` goes through the exact activation-pattern formula in float64;
            any other module through ``torch.func`` (``vmap`` of ``jacrev``) in its dtype.
        X, Z: points, shape ``(n, d)`` and ``(m, d)``; ``Z = X`` when omitted.
        scales: for a Network only, per layer ``(weight scale, bias scale)`` when its
            weights are ``scale * raw`` parameters (NTK parameterisation, see
            :func:`random_ntk_network`); the kernel is then with respect to the raw ones.

    Returns:
        ``(n, m)`` for a scalar output, ``(n, m, o, o)`` for ``o`` outputs.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> net = Network([[[1.0], [-1.0]], [[2.0, 3.0]]], [[0.0, 0.0], [0.0]])
        >>> # x = 1: only neuron 0 active; dW1 = 2*x, db1 = 2, dW2 = relu = 1, db2 = 1
        >>> empirical_ntk(net, [[1.0]]).tolist()
        [[10.0]]
    """
    if isinstance(net, Network):
        X = _points(X, "X", net.input_dim)
        Z = None if Z is None else _points(Z, "Z", net.input_dim)
        return _network_ntk(net, X, Z, scales)
    torch = require("torch", "torch")
    if not isinstance(net, torch.nn.Module):
        raise KernelError(f"empirical_ntk: expected a relulab Network or a torch module, got {type(net).__name__}")
    if scales is not None:
        raise KernelError("empirical_ntk: scales apply to a relulab Network only")
    X = _points(X, "X")
    Z = None if Z is None else _points(Z, "Z", X.shape[1])
    as_net = _torch_mlp_as_network(net)
    if as_net is not None:
        if as_net.input_dim != X.shape[1]:
            raise KernelError(f"X: points have dimension {X.shape[1]}, the module takes {as_net.input_dim}")
        return _network_ntk(as_net, X, Z, None)
    return _torch_ntk(net, X, Z)


def _dual(K: np.ndarray, Y: np.ndarray, ridge: float) -> np.ndarray:
    """``(K + ridge I)^{-1} Y`` by Cholesky; the least-squares (minimum-norm) solution when
    the matrix is singular to float64 precision.  A singular PSD matrix rarely makes the
    Cholesky factorisation fail (rounding leaves a tiny positive pivot): scipy then only
    warns that it is ill-conditioned, and its answer was wrong at every training point
    (a repeated point with two targets); that warning sends it to least squares too."""
    import warnings

    import scipy.linalg

    A = K + ridge * np.eye(K.shape[0])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", scipy.linalg.LinAlgWarning)
            return scipy.linalg.solve(A, Y, assume_a="pos")
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError, scipy.linalg.LinAlgWarning):
        return np.linalg.lstsq(A, Y, rcond=None)[0]


def kernel_ridge(K_train: Any, y: Any, K_test: Any, ridge: float = 0.0) -> np.ndarray:
    """Kernel ridge regression: ``K_test (K_train + ridge I)^{-1} y``.

    ``K_train`` is ``(n, n)``, ``y`` is ``(n,)`` or ``(n, k)``, ``K_test`` is ``(m, n)``
    (kernel between test and training points).  ``ridge = 0`` interpolates (least
    squares when ``K_train`` is singular).

    Example:
        >>> import numpy as np
        >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
        >>> y = np.array([1.0, -1.0, 0.5])
        >>> np.allclose(kernel_ridge(ntk(X), y, ntk(X)), y)   # interpolates the data
        True
    """
    K, Kt, Y = (_numbers(A, name) for A, name in ((K_train, "K_train"), (K_test, "K_test"), (y, "y")))
    if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] == 0:
        raise KernelError(f"K_train: expected a square non-empty matrix, got shape {K.shape}")
    if Y.shape[0] != K.shape[0] or Y.ndim > 2:
        raise KernelError(f"y: expected {K.shape[0]} targets, got shape {Y.shape}")
    if Kt.ndim != 2 or Kt.shape[1] != K.shape[0]:
        raise KernelError(f"K_test: expected shape (m, {K.shape[0]}), got {Kt.shape}")
    if not (isinstance(ridge, numbers.Real) and not isinstance(ridge, bool) and np.isfinite(ridge) and ridge >= 0):
        raise KernelError(f"ridge: expected a finite number >= 0, got {ridge!r}")
    for name, A in (("K_train", K), ("y", Y), ("K_test", Kt)):
        if not np.all(np.isfinite(A)):
            raise KernelError(f"{name}: contains NaN or infinite entries")
    alpha = _dual(K, Y, ridge)
    return Kt @ alpha


@dataclass
class KernelRidge:
    """Sklearn-style kernel ridge regression with the infinite-width ReLU kernels.

    Args:
        kernel: ``"ntk"``, ``"nngp"`` or a callable ``(X, Z) -> (n, m)`` matrix.
        depth, bias_var: passed to :func:`ntk` / :func:`nngp`.
        ridge: the ridge ``lambda >= 0`` added to the training kernel's diagonal.

    Example:
        >>> import numpy as np
        >>> t = np.linspace(0, 2 * np.pi, 40, endpoint=False)
        >>> X = np.c_[np.cos(t), np.sin(t)]; y = np.cos(t)
        >>> model = KernelRidge("ntk", depth=2, ridge=1e-8).fit(X[::2], y[::2])
        >>> bool(np.max(np.abs(model.predict(X[1::2]) - y[1::2])) < 0.05)
        True
    """

    kernel: Any = "ntk"
    depth: int = 1
    bias_var: float = 0.0
    ridge: float = 0.0

    def _k(self, A: np.ndarray, B: np.ndarray | None) -> np.ndarray:
        if callable(self.kernel):
            other = A if B is None else B
            try:
                K = np.asarray(self.kernel(A, other), dtype=float)
            except (TypeError, ValueError) as e:
                raise KernelError(f"kernel: the callable did not return numbers ({e})") from None
            if K.shape != (A.shape[0], other.shape[0]):  # numpy's broadcast error said nothing of it
                raise KernelError(f"kernel: the callable returned shape {K.shape} for {A.shape[0]} and "
                                  f"{other.shape[0]} points; expected {(A.shape[0], other.shape[0])}")
            return K
        if self.kernel == "ntk":
            return ntk(A, B, self.depth, self.bias_var)
        if self.kernel == "nngp":
            return nngp(A, B, self.depth, self.bias_var)
        raise KernelError(f"kernel: unknown name {self.kernel!r} (expected 'ntk', 'nngp' or a callable)")

    def fit(self, X: Any, y: Any) -> KernelRidge:
        """Store the training points and solve for the dual coefficients.  Nothing is
        stored unless the fit succeeds (a refused fit kept its new points beside the old
        coefficients, and predict mixed the two models)."""
        Xp = _points(X, "X")
        K = self._k(Xp, None)
        if not np.all(np.isfinite(K)):   # a callable kernel's own values are not checked elsewhere
            raise KernelError("kernel: the Gram matrix of the training points has NaN or infinite entries")
        try:
            Y = np.asarray(y, dtype=float)
        except (TypeError, ValueError):
            raise KernelError("y: expected numbers") from None
        if Y.ndim not in (1, 2) or Y.shape[0] != K.shape[0]:
            raise KernelError(f"y: expected {K.shape[0]} targets (shape ({K.shape[0]},) or "
                              f"({K.shape[0]}, k)), got shape {Y.shape}")
        if not np.all(np.isfinite(Y)):
            raise KernelError(f"y: holds NaN or infinite targets, first at row {int(np.argmax(~np.isfinite(Y).reshape(len(Y), -1).all(1)))}")
        if not (isinstance(self.ridge, int | float | np.number) and not isinstance(self.ridge, bool)
                and np.isfinite(self.ridge) and self.ridge >= 0):
            raise KernelError(f"ridge: expected a finite number >= 0, got {self.ridge!r}")
        alpha = _dual(K, Y, self.ridge)
        self.X_, self.alpha_ = Xp, alpha
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predictions ``K(X, X_train) alpha``."""
        if getattr(self, "alpha_", None) is None:
            raise KernelError("KernelRidge.predict: call fit first")
        Xt = _points(X, "X", self.X_.shape[1])
        return self._k(Xt, self.X_) @ self.alpha_
