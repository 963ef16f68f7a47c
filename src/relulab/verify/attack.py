"""Falsification: space-filling sampling, momentum PGD and a walk over linear pieces.

For an unsafe conjunction ``C y <= d`` the *margin* of an input is
``max_i (C_i f(x) - d_i)``: it is ``<= 0`` exactly at counterexamples.  The attack
minimises it over the input box in three stages, all batched in numpy:

1. a space-filling design over the box (shifted Halton points) (plus copies snapped to faces and corners,
   where counterexamples often sit): counterexamples of small measure that are spread
   out are found here;
2. projected sign-gradient descent with momentum and a cosine step schedule from the
   best design points and fresh ones (random restarts, several step sizes); the
   gradient of a ReLU network is its local affine map, computed by a batched backward
   pass;
3. for networks small enough, a *linear-piece walk* (:func:`local_search`) from the
   best PGD end points: fix the activation pattern of the point, solve the LP of that
   linear piece over the box (relulab.lp) to reach the piece's lowest margin, then flip
   the neurons that became tight (the neighbouring piece) and repeat.  PGD stalls a
   hair above zero in narrow basins (ACAS Xu property 7); the walk reaches the exact
   local minimum of the piecewise-linear margin.

:func:`attack_terms` attacks a disjunction of terms (one targeted run per term, the
design evaluated once); every candidate is re-checked by a plain forward pass
(:func:`recheck`) before it is reported.

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

from collections.abc import Sequence

import numpy as np

from ..bounds import float_layers
from ..domain import Box
from ..limits import Deadline, rows_in_time
from ..lp import solve
from ..network import Network
from ..tolerance import FEAS_TOL, ROUNDOFF, TINY

__all__ = ["attack", "attack_terms", "local_search", "margins", "margin_grad"]

# The linear-piece walk solves LPs with (inputs + 1) columns and one row per neuron:
# beyond this many neurons x inputs it costs more than it brings.
WALK_MAX_SIZE = 2_000_000
# A neuron is tight at an LP vertex when |pre-activation| is below this x its scale.
TIGHT_RTOL = 1e-9  # tol: LP vertices are accurate to ~1e-9 relative (HiGHS feasibility)
# Step sizes (fraction of the box width) of the PGD restarts, cycled round by round.
STEP_SIZES = (0.05, 0.15, 0.01)
# the design's forward pass gets at most this share of the attack's time: its points are
# cut to what fits (2,000 points through a 6400-input max-pool lowering took 10 s of a
# 2 s limit)
DESIGN_SHARE = 0.25


def _outputs(Ws, bs, skip, X: np.ndarray) -> np.ndarray:
    H = X
    for W, b in zip(Ws[:-1], bs[:-1], strict=True):
        H = np.maximum(H @ W.T + b, 0.0)
    Y = H @ Ws[-1].T + bs[-1]
    if skip is not None:
        Y = Y + X @ skip[0].T + skip[1]
    return Y


def margins(Ws, bs, skip, X: np.ndarray, C: np.ndarray, d: np.ndarray) -> np.ndarray:
    """``max_i (C_i f(x) - d_i)`` for each row of ``X``.

    Example:
        >>> import numpy as np
        >>> Ws, bs = [np.array([[1.0], [-1.0]]), np.array([[1.0, 1.0]])], [np.zeros(2), np.zeros(1)]
        >>> margins(Ws, bs, None, np.array([[-2.0], [0.5]]), np.array([[-1.0]]), np.array([-1.0])).tolist()
        [-1.0, 0.5]
    """
    return _term_margin(_outputs(Ws, bs, skip, X), C, d)


def _term_margin(Y: np.ndarray, C: np.ndarray, d: np.ndarray) -> np.ndarray:
    if C.shape[0] == 0:  # an empty conjunction: every output is unsafe
        return np.full(len(Y), -np.inf)
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


_PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53)


def _radical_inverse(i: np.ndarray, base: int) -> np.ndarray:
    f, r = 1.0, np.zeros(len(i))
    i = i.copy()
    while np.any(i > 0):
        f /= base
        r += f * (i % base)
        i //= base
    return r


def _unit_design(n: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` space-filling points of the unit cube: a Halton sequence with a random
    shift (modulo 1) up to 16 dimensions, a Latin hypercube beyond (Halton's
    projections degrade with large primes)."""
    if dim <= len(_PRIMES):
        i = np.arange(1, n + 1) + int(rng.integers(1 << 20))
        U = np.stack([_radical_inverse(i, p) for p in _PRIMES[:dim]], axis=1)
        return (U + rng.random(dim)) % 1.0
    strata = np.argsort(rng.random((n, dim)), axis=0)
    return (strata + rng.random((n, dim))) / n


def _design(box: Box, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` space-filling points of the box, the second half with each coordinate
    snapped to a random face with probability 1/2 (counterexamples often sit on faces
    and corners: ACAS Xu property 7's do)."""
    if n <= 0:
        return np.empty((0, box.dim))
    X = box.lo + _unit_design(n, box.dim, rng) * (box.hi - box.lo)
    half = X[n // 2:]
    snap = rng.random(half.shape) < 0.5
    half[snap] = np.where(rng.random(half.shape) < 0.5, box.lo, box.hi)[snap]
    return X


def _pgd(Ws, bs, sk, X, C, d, lo, hi, steps: int, step0: float, deadline: Deadline,
         momentum: float = 0.75):
    """Momentum sign-gradient descent of the margin from every row of ``X``; returns the
    best point and margin seen per start (early exit once one is <= 0)."""
    w = hi - lo
    V = np.zeros_like(X)
    best_m = np.full(len(X), np.inf)
    best_X = X.copy()
    for t in range(steps):
        m, g = margin_grad(Ws, bs, sk, X, C, d)
        better = m < best_m
        best_m[better] = m[better]
        best_X[better] = X[better]
        if np.any(m <= 0) or deadline.expired():
            break
        g = g * w  # the step is relative to the box width: precondition to match
        V = momentum * V + g / np.maximum(np.abs(g).sum(axis=1, keepdims=True), TINY)
        step = step0 * 0.5 * (1.0 + np.cos(np.pi * t / steps)) + 1e-4 * step0  # tol: floor of the schedule
        X = np.clip(X - step * w * np.sign(V), lo, hi)
    return best_X, best_m


def _piece(Ws, bs, sk, x: np.ndarray, pattern: list[np.ndarray] | None):
    """The linear piece of ``pattern`` (default: the pattern at ``x``): its region as
    ``R x <= r`` rows (one per neuron), the output map ``y = Ay x + cy`` and the
    pre-activations at ``x``."""
    n = len(x)
    A, c = np.eye(n), np.zeros(n)
    rows, rhs, Z, pat = [], [], [], []
    for k, (W, b) in enumerate(zip(Ws[:-1], bs[:-1], strict=True)):
        Az, cz = W @ A, W @ c + b
        z = Az @ x + cz
        act = (z > 0) if pattern is None else pattern[k]
        sgn = np.where(act, -1.0, 1.0)  # active: -(Az x + cz) <= 0, inactive: Az x + cz <= 0
        rows.append(sgn[:, None] * Az)
        rhs.append(-sgn * cz)
        Z.append(z)
        pat.append(act)
        A, c = Az * act[:, None], cz * act
    Ay, cy = Ws[-1] @ A, Ws[-1] @ c + bs[-1]
    if sk is not None:
        Ay, cy = Ay + sk[0], cy + sk[1]
    if not rows:  # no hidden layer: one piece, the whole space
        return np.zeros((0, n)), np.zeros(0), Ay, cy, Z, pat
    return np.vstack(rows), np.concatenate(rhs), Ay, cy, Z, pat


def local_search(
    net: Network,
    box: Box,
    C: np.ndarray,
    d: np.ndarray,
    x0: np.ndarray,
    *,
    max_iters: int = 30,
    time_limit: float = 1.0,
) -> tuple[np.ndarray, float]:
    """Walk over linear pieces from ``x0`` to a local minimum of the margin
    ``max_i (C_i f(x) - d_i)`` over the box; returns the last point and its margin
    (by a forward pass; ``<= 0`` means a counterexample, still to be re-checked).

    Each step fixes the activation pattern, minimises the margin over that piece's
    region (one LP; its optimum is the piece's best point), then flips the neurons
    that are tight there to enter the neighbouring piece.  When a flip does not help,
    the tight neurons are flipped one at a time.

    Example:
        >>> import numpy as np
        >>> from relulab import Box, Network
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
        >>> x, m = local_search(net, Box([-1], [2]), np.array([[-1.0]]), np.array([-1.9]), np.array([0.3]))
        >>> x.tolist(), round(m, 9)          # walks to x = 2: margin 1.9 - 2
        ([2.0], -0.1)
    """
    # every LP gets at least 10 ms, even when less of the whole limit is left
    deadline = Deadline(time_limit, floor=0.01)
    Ws, bs, sk = float_layers(net)
    C = np.atleast_2d(np.asarray(C, float))
    d = np.asarray(d, float).reshape(-1)
    n = box.dim
    x = np.clip(np.asarray(x0, float).reshape(-1), box.lo, box.hi)
    best = float(margins(Ws, bs, sk, x[None], C, d)[0])
    if C.shape[0] == 0:
        return x, best
    lb, ub = np.r_[box.lo, -np.inf], np.r_[box.hi, np.inf]
    cost = np.r_[np.zeros(n), 1.0]
    pattern = None
    queue: list[list[np.ndarray]] = []  # single-flip patterns to try after a stall
    for _ in range(max_iters):
        if deadline.expired():
            break
        R, r, Ay, cy, _, pat = _piece(Ws, bs, sk, x, pattern)
        A_ub = np.vstack([np.hstack([R, np.zeros((len(R), 1))]), np.hstack([C @ Ay, -np.ones((len(C), 1))])])
        res = solve(cost, A_ub=A_ub, b_ub=np.concatenate([r, d - C @ cy]), lb=lb, ub=ub,
                    time_limit=deadline.left())
        xn = None if not res.ok else np.clip(res.x[:n], box.lo, box.hi)
        m = np.inf if xn is None else float(margins(Ws, bs, sk, xn[None], C, d)[0])
        if m < best - ROUNDOFF * (1.0 + abs(best)):
            best, x, queue = m, xn, []
            if best <= 0:
                break
            # the neighbour piece: flip the neurons tight at the LP optimum
            _, _, _, _, Z, _ = _piece(Ws, bs, sk, x, pat)
            tight = [np.abs(z) <= TIGHT_RTOL * (1.0 + np.abs(z).max()) for z in Z]
            pattern = [p ^ t for p, t in zip(pat, tight, strict=True)]
            for k, t in enumerate(tight):
                for j in np.nonzero(t)[0][:4]:
                    q = [p.copy() for p in pat]
                    q[k][j] = ~q[k][j]
                    queue.append(q)
        elif queue:
            pattern = queue.pop(0)
        else:
            break
    return x, best


def _walk_ok(Ws, dim: int) -> bool:
    return sum(W.shape[0] for W in Ws[:-1]) * (dim + 1) <= WALK_MAX_SIZE


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
    starts: np.ndarray | None = None,
    walk: bool = True,
) -> np.ndarray | None:
    """Search for ``x`` in ``box`` with ``C f(x) <= d`` (within FEAS_TOL); None if not found.

    The returned point lies in the box and satisfies the constraints by a plain forward
    pass of ``net`` (its float64 form).  ``starts`` adds given start points (e.g. the
    centres of a branch and bound's open sub-boxes); ``walk`` enables the linear-piece
    walk from the best PGD end points (small networks only).

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
    r = attack_terms(net, [(box, C, d)], n_samples=n_samples, n_starts=n_starts, steps=steps,
                     max_rounds=max_rounds, time_limit=time_limit, rng=rng, starts=starts, walk=walk)
    return None if r is None else r[1]


def attack_terms(
    net: Network,
    terms: Sequence[tuple[Box, np.ndarray, np.ndarray]],
    *,
    n_samples: int = 2000,
    n_starts: int = 256,
    steps: int = 30,
    max_rounds: int = 50,
    time_limit: float = 1.0,
    rng: int | np.random.Generator | None = 0,
    starts: np.ndarray | None = None,
    walk: bool = True,
) -> tuple[int, np.ndarray] | None:
    """Attack a disjunction of terms ``(box, C, d)``: ``(index, x)`` of a re-checked
    counterexample of one term, or None.

    Terms sharing a box share one forward pass of the design; then PGD rounds target
    each term in turn (random restarts, cycling step sizes), each round followed by the
    linear-piece walk from its best end points, until ``time_limit`` or ``max_rounds``
    rounds per term.

    Example:
        >>> import numpy as np
        >>> from relulab import Box, Network
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
        >>> b = Box([-1], [1])
        >>> i, x = attack_terms(net, [(b, np.array([[1.0]]), np.array([-1.0])),     # |x| <= -1: never
        ...                           (b, np.array([[-1.0]]), np.array([-0.95]))])  # |x| >= 0.95
        >>> i, bool(abs(x[0]) >= 0.95)
        (1, True)
    """
    deadline = Deadline(time_limit)
    rng = np.random.default_rng(rng)
    Ws, bs, sk = float_layers(net)
    ts = [(box, np.atleast_2d(np.asarray(C, float)), np.asarray(d, float).reshape(-1)) for box, C, d in terms]
    if not ts:
        return None
    # 1. the design (one forward pass per distinct box, found by its bytes: comparing
    # every box with every cached one took 8 s of a 1 s limit at 2,000 boxes); the
    # design's share of the time is split among the boxes, and the clock is read per term
    keys = [box.lo.tobytes() + box.hi.tobytes() for box, _, _ in ts]
    n_samples = rows_in_time(Ws, n_samples, None if time_limit is None else time_limit / len(set(keys)),
                             DESIGN_SHARE, 1)
    pools: list[np.ndarray] = []
    cache: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}
    for i, (box, C, d) in enumerate(ts):
        if i and deadline.expired():
            return None
        if keys[i] not in cache:
            X = np.concatenate([box.center[None], _design(box, n_samples, rng)])
            if starts is not None:
                X = np.concatenate([X, np.clip(np.atleast_2d(starts), box.lo, box.hi)])
            cache[keys[i]] = (X, _outputs(Ws, bs, sk, X))
        X, Y = cache[keys[i]]
        M = _term_margin(Y, C, d)
        hit = _first_hit(net, X, M, box, C, d)
        if hit is not None:
            return i, hit
        pools.append(X[np.argsort(M)[: max(1, n_starts // 4)]])
    use_walk = walk and _walk_ok(Ws, ts[0][0].dim)
    # 2-3. PGD rounds per term (best points so far + fresh design points), then the walk
    for rnd in range(max_rounds):
        for i, (box, C, d) in enumerate(ts):
            if deadline.expired():
                return None
            if C.shape[0] == 0:
                continue
            fresh = _design(box, max(1, n_starts - len(pools[i])), rng)
            X = np.concatenate([pools[i], fresh])
            step0 = STEP_SIZES[rnd % len(STEP_SIZES)]
            Xb, Mb = _pgd(Ws, bs, sk, X, C, d, box.lo, box.hi, steps, step0, deadline)
            hit = _first_hit(net, Xb, Mb, box, C, d)
            if hit is not None:
                return i, hit
            order = np.argsort(Mb)
            if use_walk:
                for j in order[: 2 if rnd else 4]:
                    if deadline.expired():
                        break
                    xw, mw = local_search(net, box, C, d, Xb[j], time_limit=deadline.left())
                    if mw <= FEAS_TOL and recheck(net, xw, box, C, d):
                        return i, xw
            pools[i] = Xb[order[: max(1, n_starts // 8)]]
    return None


def _first_hit(net, X, M, box, C, d) -> np.ndarray | None:
    """The first candidate that passes the re-check (in the box, unsafe by a forward pass)."""
    cand = np.nonzero(M <= FEAS_TOL)[0]
    cand = cand[np.argsort(M[cand])]
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
