"""Falsification on structured graphs (``relulab.crown.BoundGraph``) by PGD in torch.

The dense attack (:mod:`relulab.verify.attack`) needs the dense network; a structured
graph too large to lower is attacked here instead: projected sign-gradient descent
(torch autograd through the graph's own forward pass) on the smallest unsafe margin
``min_t max_i (C_ti f(x) - d_ti)`` over all terms on one input box, from the box's
centre, random points and random corners, with restarts until the time is up.  A
candidate counts only after a plain float64 forward pass (``bg.forward``) puts it in
the unsafe set.

Example:
    >>> import numpy as np
    >>> from relulab import Box, Network
    >>> from relulab.crown import BoundGraph
    >>> bg = BoundGraph.from_network(Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]]))
    >>> x = pgd_graph(bg, Box([-1], [1]), [(np.array([[-1.0]]), np.array([-0.9]))], time_limit=1.0)
    >>> bool(abs(x[0]) >= 0.9)
    True
"""

from __future__ import annotations

import numpy as np

from ..domain import Box
from ..limits import Deadline
from ..tolerance import FEAS_TOL

# pgd_graph is the verifier's internal attack on structured graphs (like attack(), it
# returns None or a re-checked counterexample), not exported
__all__: list[str] = []


def pgd_graph(
    bg,
    box: Box,
    terms: list[tuple[np.ndarray, np.ndarray]],
    *,
    time_limit: float = 1.0,
    starts: int = 16,
    steps: int = 20,
    rng: int | np.random.Generator | None = 0,
    init: np.ndarray | None = None,
) -> np.ndarray | None:
    """An input of ``box`` whose output satisfies some term ``C y <= d`` (re-checked by a
    float64 forward pass), or None when none was found within ``time_limit`` seconds.
    ``init`` (k, input_dim): the first round's starting points (e.g. the minimisers of a
    branch and bound's linear bounds), topped up with random points and corners.

    Example:
        >>> import numpy as np
        >>> from relulab import Box, Network
        >>> from relulab.crown import BoundGraph
        >>> bg = BoundGraph.from_network(Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]]))
        >>> pgd_graph(bg, Box([-1], [1]), [(np.array([[-1.0]]), np.array([-2.0]))], time_limit=0.2) is None
        True
    """
    import torch

    deadline = Deadline(time_limit)
    rng = np.random.default_rng(rng)
    g = bg.converted("float64")
    shape = tuple(bg.input_shape)
    lo = torch.tensor(np.array(box.lo, dtype=np.float64))
    hi = torch.tensor(np.array(box.hi, dtype=np.float64))
    width = hi - lo
    Cs = [torch.tensor(np.array(np.atleast_2d(c), dtype=np.float64)) for c, _ in terms]
    ds = [torch.tensor(np.array(v, dtype=np.float64).reshape(-1)) for _, v in terms]

    def margin(X):
        Y = g.run(X.reshape(-1, *shape)).reshape(X.shape[0], -1)
        return torch.stack([(Y @ C.T - d).max(dim=1).values for C, d in zip(Cs, ds, strict=True)],
                           dim=1).min(dim=1).values

    def confirmed(X: np.ndarray) -> np.ndarray | None:
        X = np.clip(X, box.lo, box.hi)
        Y = np.asarray(bg.forward(X), dtype=np.float64)
        for C, d in terms:
            hit = np.nonzero(np.all(Y @ np.atleast_2d(C).T <= np.reshape(d, -1) + FEAS_TOL, axis=1))[0]
            if hit.size:
                return X[hit[0]]
        return None

    # One step on a large graph can take longer than a short limit by itself (a CIFAR
    # ResNet: 0.8 s for 16 points against 0.05 s): a first step on one point measures the
    # cost, and each round's batch is sized so that one step takes at most a quarter of
    # the time left (the overrun is then one small step).
    per_point = _probe_step(margin, box, init, deadline)
    first = True
    while not deadline.expired():
        left = deadline.left()
        batch = starts if left is None else int(min(starts, max(1.0, 0.25 * left / per_point)))
        X0 = box.sample(batch, rng)
        corner = rng.random(X0.shape) < 0.5
        X0[corner] = np.where(rng.random(X0.shape) < 0.5, box.lo, box.hi)[corner]
        if first:
            X0[0] = box.center
            if init is not None and len(init):
                k0 = min(len(init), batch)
                X0[:k0] = np.clip(np.asarray(init, dtype=np.float64).reshape(-1, box.dim)[:k0],
                                  box.lo, box.hi)
            first = False
        X = torch.as_tensor(X0, dtype=torch.float64)
        for k in range(steps):
            X.requires_grad_(True)
            m = margin(X)
            (grad,) = torch.autograd.grad(m.sum(), X)
            with torch.no_grad():
                if bool((m <= 0).any()):
                    x = confirmed(X[m <= 0].detach().numpy())
                    if x is not None:
                        return x
                step = 0.25 * (1.0 - k / steps) + 0.01
                X = torch.clamp(X - step * width * torch.sign(grad), lo, hi).detach()
            if deadline.expired():
                break
        x = confirmed(X.numpy())
        if x is not None:
            return x
    return None


def _probe_step(margin, box: Box, init: np.ndarray | None, deadline: Deadline) -> float:
    """Seconds of one attack step (margin and gradient) per point, measured on one point
    (the first of ``init``, else the box's centre) when there is a time limit."""
    import time

    import torch

    if deadline.at is None:
        return 0.0
    x0 = box.center if init is None or not len(init) else np.asarray(init, dtype=np.float64).reshape(-1, box.dim)[0]
    X = torch.as_tensor(np.clip(x0, box.lo, box.hi)[None, :], dtype=torch.float64).requires_grad_(True)
    t0 = time.perf_counter()
    torch.autograd.grad(margin(X).sum(), X)
    return max(time.perf_counter() - t0, 1e-6)  # tol: a floor against a zero-time clock reading
