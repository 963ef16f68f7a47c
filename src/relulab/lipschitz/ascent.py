"""Lower bounds by smoothed gradient ascent on the Jacobian's norm.

The Jacobian of a ReLU network is constant on each linear region, so its norm has no
gradient to climb.  Replacing every ReLU gate ``1[z > 0]`` by ``sigmoid(z / (tau s))``
(``s`` a per-layer scale of the pre-activations) gives a smooth Jacobian ``J_tau(x)``
whose norm does have one: it says which neurons to switch on or off, and by how much
the norm would gain.  Ascent steps on ``x`` while ``tau`` shrinks towards 0 walk into
regions of large norm, also in high dimension where random samples only see the
typical regions.

The targets are the norm itself, ``||u^T J_tau(x)||_{p'}`` (``u`` a random output
direction for vector outputs), and, for ``p' > 2``, each signed coordinate
``+-(u^T J_tau(x))_i``: the largest ``l_{p'}`` norms of a random network are reached
where the gradient concentrates on few coordinates (for ``p = 1`` the norm is the
largest coordinate).

The starts are half the best of a random sample, half random points, and the result is
never below :func:`relulab.lipschitz.sampled_lower`'s (run too: its hill climb finds
the small regions of low dimensions that the smoothed steps pass over).

Nothing about the smoothing is trusted: every few steps the exact Jacobian is
evaluated at every iterate, and the value returned is the exact operator norm of the
Jacobian at the best iterate that lies strictly inside its region (and in the domain),
re-checked by :func:`relulab.lipschitz.witness.certify_point`.  So the result is a
certified lower bound; how close it comes to the constant is not known.

Example:
    >>> from relulab import Network, Box
    >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]])
    >>> ascent_lower(net, Box([-1], [1]), 1, None, restarts=4, steps=20).norm
    2.0
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..bounds import float_layers
from ..domain import Box
from ..errors import RelulabError, require
from ..network import Network
from .jacobians import certified_mask, jacobians
from .lower import _samples, batch_norms, sampled_lower
from .norms import check_p, dual_exponent
from .result import LipschitzWitness
from .witness import certify_point

__all__ = ["ascent_lower"]

TAU_START, TAU_END = 1.0, 1e-3   # gate temperature, relative to each layer's |z| scale
CHECK_EVERY = 10                  # steps between exact evaluations of the iterates
SAMPLE_FACTOR = 8                 # random points sampled per restart to choose the starts


def _starts(net: Network, domain: Box | None, n: int, rng) -> np.ndarray:
    d = net.input_dim
    if domain is not None:
        return domain.sample(n, rng)
    Ws, bs, _ = float_layers(net)
    nrm = np.linalg.norm(Ws[0], axis=1)
    off = np.abs(bs[0]) / np.where(nrm > 0, nrm, 1.0)
    s0 = max(float(np.max(off, initial=0.0)), 1.0)
    # all of R^d: points at scales from inside the hyperplanes' offsets to far outside
    scales = s0 * np.logspace(-1, 1, 5)
    return rng.standard_normal((n, d)) * scales[rng.integers(0, len(scales), n)][:, None]


def _targets(m: int, d: int, dual: float, restarts: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Output directions ``U`` (rows, m) and input targets ``T`` (rows, d): a zero row of
    ``T`` means "maximise the l_{p'} norm", a signed unit row "maximise that coordinate"."""
    U, T = [], []
    coords = dual > 2
    per = max(1, restarts // (2 * d)) if coords else 0
    for _ in range(max(restarts - per * 2 * d, 1) if coords else restarts):
        U.append(rng.standard_normal(m) if m > 1 else np.ones(1))
        T.append(np.zeros(d))
    for i in range(d if coords else 0):
        for s in (1.0, -1.0):
            for _ in range(per):
                U.append(rng.standard_normal(m) if m > 1 else np.ones(1))
                e = np.zeros(d)
                e[i] = s
                T.append(e)
    return np.array(U), np.array(T)


# starting-pool points whose Jacobians are computed between two looks at the deadline
POOL_CHUNK = 64


def ascent_lower(net: Network, domain: Box | None, p: float, q: float | None, *,
                 restarts: int = 64, steps: int = 300, lr: float = 0.05, seed: int = 0,
                 deadline: float | None = None) -> LipschitzWitness | None:
    """A certified lower bound on the ``p -> q`` Lipschitz constant over ``domain`` (a
    Box, or None for all of R^d) by smoothed gradient ascent from ``restarts`` starting
    points (see the module docstring); None when no iterate was certified.

    ``steps`` Adam steps (step size ``lr`` times the domain's or the point's scale),
    the gate temperature going geometrically from ``TAU_START`` to ``TAU_END``;
    ``deadline`` (a ``time.time()`` value) stops early with the best point so far.
    Needs torch (``pip install 'relulab[torch]'``).

    Example:
        >>> import numpy as np
        >>> from relulab import Network, Box
        >>> rng = np.random.default_rng(0)
        >>> net = Network([rng.standard_normal((8, 3)), rng.standard_normal((1, 8))],
        ...               [np.zeros(8), np.zeros(1)])
        >>> w = ascent_lower(net, Box(-np.ones(3), np.ones(3)), 1, None, restarts=8, steps=50)
        >>> bool(np.isclose(w.norm, np.abs(net.jacobian(w.x[None])[0]).max()))   # re-checked
        True
    """
    p = check_p(p)
    if q is not None:
        check_p(q, "q")
    if domain is not None and not isinstance(domain, Box):
        raise RelulabError(f"ascent_lower: domain must be a Box or None (all of R^d), not {type(domain).__name__}")
    if domain is not None and domain.dim != net.input_dim:
        raise RelulabError(f"ascent_lower: the box has dimension {domain.dim}, the network {net.input_dim} inputs")
    if int(restarts) < 1 or int(steps) < 0 or not lr > 0:
        raise RelulabError(f"ascent_lower: restarts >= 1, steps >= 0 and lr > 0 needed "
                           f"(got {restarts}, {steps}, {lr})")
    Ws, bs, sk = float_layers(net)
    torch = require("torch", "torch")
    rng = np.random.default_rng(seed)
    d, m = net.input_dim, Ws[-1].shape[0]
    dual = dual_exponent(p)
    U, T = _targets(m, d, dual, restarts, rng)
    # half the starts are the best of a larger random sample (by their exact norm), half
    # random: low dimensions are won by sampling, high ones by the ascent
    n_pool = max(SAMPLE_FACTOR * len(U), 256)
    # the sampling route's points (corners of a box, all scales of R^d) and this one's
    pool = np.vstack([_samples(net, domain, n_pool, rng), _starts(net, domain, n_pool, rng)])
    # in chunks, with the deadline between them (the whole pool's Jacobians ran 14 s past a
    # 0.5 s deadline on a 16-400-400-10 network); points not reached keep -inf
    v0 = np.full(len(pool), -np.inf)
    for i in range(0, len(pool), POOL_CHUNK):
        if i and deadline is not None and time.time() > deadline:
            break
        J0, mg0 = jacobians(net, pool[i:i + POOL_CHUNK])
        v0[i:i + POOL_CHUNK] = np.where(certified_mask(mg0), batch_norms(J0, p, q), -np.inf)
    n_top = len(U) // 2
    X0 = np.vstack([pool[np.argsort(-v0)[:n_top]], pool[len(pool) - (len(U) - n_top):]])
    tW = [torch.from_numpy(W.copy()) for W in Ws]
    tb = [torch.from_numpy(b.copy()) for b in bs]
    tU, tT = torch.from_numpy(U), torch.from_numpy(T)
    use_norm = torch.from_numpy(~T.any(axis=1))
    tS = None if sk is None else torch.from_numpy(sk[0].copy())
    lo = hi = None
    if domain is not None:
        lo, hi = (torch.from_numpy(np.array(v, dtype=np.float64)) for v in (domain.lo, domain.hi))
        span = (hi - lo)[None, :]
    else:  # all of R^d: steps relative to each start's distance from the origin
        span = torch.from_numpy(np.maximum(np.linalg.norm(X0, axis=1, keepdims=True), 1e-3))  # tol: scale floor
    # per-layer pre-activation scales at the starting points fix the temperature's unit
    with torch.no_grad():
        h, scales = torch.from_numpy(X0), []
        for W, b in zip(tW[:-1], tb[:-1], strict=True):
            z = h @ W.T + b
            scales.append(z.abs().mean(dim=0).clamp_min(1e-12).mean())  # tol: avoids 0/0 on dead layers
            h = torch.relu(z)
    base = torch.from_numpy(X0.copy())
    y = torch.zeros_like(base).requires_grad_(True)   # x = base + span * y: Adam steps of ~lr * span
    opt = torch.optim.Adam([y], lr=lr)
    best_v = np.full(len(U), -np.inf)
    best_x = X0.copy()

    def check(X: np.ndarray) -> None:
        J, mg = jacobians(net, X)
        ok = certified_mask(mg)
        if domain is not None:
            ok &= domain.contains(X)
        v = np.where(ok, batch_norms(J, p, q), -np.inf)
        better = v > best_v
        best_v[better] = v[better]
        best_x[better] = X[better]

    check(X0)
    for k in range(steps):
        if deadline is not None and time.time() > deadline:
            break
        tau = TAU_START * (TAU_END / TAU_START) ** (k / max(steps - 1, 1))
        x = base + span * y
        h, gates = x, []
        for W, b, s in zip(tW[:-1], tb[:-1], scales, strict=True):
            z = h @ W.T + b
            gates.append(torch.sigmoid(z / (tau * s)))
            h = torch.relu(z)
        G = tU @ tW[-1]
        for W, g in zip(reversed(tW[:-1]), reversed(gates), strict=True):
            G = (G * g) @ W
        if tS is not None:
            G = G + tU @ tS
        if math.isinf(dual):
            nrm = G.abs().max(dim=1).values
        else:
            nrm = (G.abs() ** dual).sum(dim=1) ** (1.0 / dual)
        obj = torch.where(use_norm, nrm, (G * tT).sum(dim=1))
        opt.zero_grad()
        (-obj.sum()).backward()
        opt.step()
        with torch.no_grad():
            if lo is not None:   # project onto the box
                y.copy_((torch.maximum(torch.minimum(base + span * y, hi), lo) - base) / span)
        if (k + 1) % CHECK_EVERY == 0 or k == steps - 1:
            with torch.no_grad():
                check((base + span * y).numpy().copy())
    found = None
    for i in np.argsort(-best_v):
        if not np.isfinite(best_v[i]):
            break
        found = certify_point(net, best_x[i], p, q, "ascent", domain)
        if found is not None:
            break
    # the sampling route's hill climb finds small regions in low dimension that the
    # smoothed ascent steps over; it is cheap, so the better of the two is returned
    other = sampled_lower(net, domain, p, q, seed=seed, deadline=deadline)
    if other is not None and (found is None or other.norm > found.norm):
        return other
    return found
