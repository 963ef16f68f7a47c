"""Lower bounds: the largest Jacobian norm at sampled points, improved by a local
search that walks into neighbouring regions with larger norms.

The Jacobian is constant on each region, so plain gradient ascent on its norm has
nothing to climb; the search instead perturbs the best points at shrinking radii and
keeps a move when the norm grows (a hill climb over regions).  Only points strictly
inside their region count (see :func:`relulab.lipschitz.jacobians.interior_margin`),
so every value returned is a certified lower bound.

Example:
    >>> import numpy as np
    >>> from relulab import Network, Box
    >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]])
    >>> sampled_lower(net, Box([-1], [1]), 1, None, n=200).norm
    2.0
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..bounds import float_layers
from ..domain import Box, Polytope
from ..errors import RelulabError, is_int_at_least
from ..limits import check_bytes
from ..network import Network
from .jacobians import certified_mask, jacobians
from .norms import dual_exponent, operator_norm, vector_norm
from .result import LipschitzWitness
from .witness import certify_point

__all__ = ["sampled_lower", "batch_norms"]


def batch_norms(J: np.ndarray, p: float, q: float | None, end: str = "lower") -> np.ndarray:
    """``||J_i||_{p->q}`` for a stack ``(n, m, d)``: exact where :func:`operator_norm` has
    a closed form (vectorised for the common ones), else the ``end`` ("lower" or "upper")
    of its bracket.

    Example:
        >>> import numpy as np
        >>> J = np.array([[[3.0, 4.0]], [[1.0, -1.0]]])   # two 1 x 2 Jacobians
        >>> batch_norms(J, 2, None).tolist(), batch_norms(J, 1, None).tolist()
        ([5.0, 1.4142135623730951], [4.0, 1.0])
    """
    n, m, d = J.shape
    if m == 1:
        return vector_norm(J[:, 0, :], dual_exponent(p), axis=1)
    qq = p if q is None else q
    if p == 1:
        return np.max(vector_norm(J, qq, axis=1), axis=1)
    if math.isinf(qq):
        return np.max(vector_norm(J, dual_exponent(p), axis=2), axis=1)
    if p == 2 and qq == 2:
        return np.linalg.norm(J, 2, axis=(1, 2))
    # no closed form: the bracket's lower end for a lower bound, its upper end for an upper
    return np.array([getattr(operator_norm(Ji, p, qq), end) for Ji in J])


def _samples(net: Network, domain: Box | Polytope | None, n: int, rng) -> np.ndarray:
    d = net.input_dim
    if domain is None:
        # all of R^d: directions at scales from the hyperplanes' offsets outwards
        Ws, bs, _ = float_layers(net)
        nrm = np.linalg.norm(Ws[0], axis=1)
        off = np.abs(bs[0]) / np.where(nrm > 0, nrm, 1.0)
        s0 = max(float(np.max(off, initial=1.0)), 1e-3)
        scales = s0 * np.logspace(-2, 3, 12)
        G = rng.standard_normal((n, d))
        return G * scales[rng.integers(0, len(scales), n)][:, None]
    if isinstance(domain, Box):
        X = domain.sample(n, rng)
        # corners and faces hold the extreme regions of many networks
        k = n // 4
        C = np.where(rng.random((k, d)) < 0.5, domain.lo, domain.hi)
        return np.vstack([X, C * 0.999 + X[:k] * 0.001])
    return domain.sample(n, rng)


def _project(net: Network, domain: Box | Polytope | None, X: np.ndarray) -> np.ndarray:
    if domain is None:
        return X
    if isinstance(domain, Box):
        return np.clip(X, domain.lo, domain.hi)
    return X  # polytope moves outside are rejected by the caller


# samples whose Jacobians are computed between two looks at the deadline
SAMPLE_CHUNK = 256


def sampled_lower(net: Network, domain: Box | Polytope | None, p: float, q: float | None,
                  *, n: int = 2000, rounds: int = 30, seed: int = 0,
                  deadline: float | None = None, report: dict | None = None) -> LipschitzWitness | None:
    """The best certified Jacobian norm over ``n`` samples plus a local search.
    ``report["cut"]`` (when a dict is given) says whether the deadline cut it short.

    Example:
        >>> from relulab import Network, Box
        >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> w = sampled_lower(net, Box([-1], [1]), 2, None, n=50, rounds=2)
        >>> w.norm, w.source
        (2.0, 'sampling')
    """
    if not (is_int_at_least(n, 1)):
        raise RelulabError(f"lipschitz: samples must be an integer of at least 1, got {n!r}")
    dim = getattr(domain, "dim", None)
    if dim is not None and dim != net.input_dim:
        # (numpy's concatenation error came first, naming nothing)
        raise RelulabError(f"sampled_lower: the domain has dimension {dim}, the network {net.input_dim} inputs")
    # the points and their Jacobians (one chunk at a time) before drawing them: 10^12
    # samples ended in numpy's MemoryError (14.6 TiB)
    check_bytes(8.0 * n * (net.input_dim + 1), f"lipschitz: {n} samples")
    rng = np.random.default_rng(seed)
    X = _samples(net, domain, n, rng)
    # in chunks, with the deadline between them: all samples at once ran 30 s past a
    # 0.1 s limit on a 400-wide network (the first check was after them)
    keep_x, keep_v = [], []
    near_x, near_v = [], []   # samples too close to a kink for the float test
    cut = False
    for i in range(0, len(X), SAMPLE_CHUNK):
        J, mg = jacobians(net, X[i:i + SAMPLE_CHUNK])
        ok = certified_mask(mg)
        keep_x.append(X[i:i + SAMPLE_CHUNK][ok])
        keep_v.append(batch_norms(J[ok], p, q))
        if not ok.all():
            near_x.append(X[i:i + SAMPLE_CHUNK][~ok])
            near_v.append(batch_norms(J[~ok], p, q))
        if deadline is not None and time.time() > deadline:
            cut = i + SAMPLE_CHUNK < len(X)
            break
    X, v = np.concatenate(keep_x), np.concatenate(keep_v)
    if report is not None:
        report["cut"] = cut
    if len(X) == 0:
        return _best_near(net, near_x, near_v, p, q, domain, None, deadline)
    k = min(16, len(X))
    top = np.argsort(-v)[:k]
    P, V = X[top], v[top]
    if domain is None:
        span = np.maximum(np.abs(P), 1.0)
    else:
        box = domain if isinstance(domain, Box) else domain.bounding_box()
        span = np.broadcast_to(box.hi - box.lo, P.shape).copy()
    d = net.input_dim
    for r in range(rounds):
        if deadline is not None and time.time() > deadline:
            cut = True
            break
        step = 0.25 * 0.7 ** r
        Y = P[:, None, :] + step * span[:, None, :] * rng.standard_normal((k, 8, d))
        Y = _project(net, domain, Y.reshape(-1, d))
        if isinstance(domain, Polytope):
            inside = domain.contains(Y)
        else:
            inside = np.ones(len(Y), dtype=bool)
        Jy, my = jacobians(net, Y)
        vy = np.where(inside & certified_mask(my), batch_norms(Jy, p, q), -np.inf).reshape(k, 8)
        j = np.argmax(vy, axis=1)
        better = vy[np.arange(k), j] > V
        P[better] = Y.reshape(k, 8, d)[np.arange(k), j][better]
        V[better] = vy[np.arange(k), j][better]
    if report is not None:
        report["cut"] = cut
    best = None
    for i in np.argsort(-V):
        best = certify_point(net, P[i], p, q, "sampling", domain)
        if best is not None:
            break
    return _best_near(net, near_x, near_v, p, q, domain, best, deadline)


# samples near a kink (the float pattern test could not certify them) handed to the exact
# certificate when their float norm beats the best certified one
NEAR_CANDIDATES = 4


def _best_near(net: Network, near_x: list, near_v: list, p: float, q: float | None,
               domain: Box | Polytope | None, best: LipschitzWitness | None,
               deadline: float | None) -> LipschitzWitness | None:
    """``best``, or a certified witness at one of the samples whose pre-activations were
    too small for the float test (a neuron ``relu((1 + 3e-9) x) - relu(x)`` under 1e6
    is 3e-9 x there), where its float norm is larger: :func:`certify_point` decides
    such a point exactly.  Every such sample was dropped, and a constant of 60.003 read
    60 (the MILP's bound, short by the part its tolerances hid, then stood as exact)."""
    if not near_x:
        return best
    X, v = np.concatenate(near_x), np.concatenate(near_v)
    floor = -np.inf if best is None else best.norm
    for i in np.argsort(-v)[:NEAR_CANDIDATES]:
        if not v[i] > floor or (deadline is not None and time.time() > deadline):
            break
        w = certify_point(net, X[i], p, q, "sampling", domain)
        if w is not None and (best is None or w.norm > best.norm):
            best = w
    return best
