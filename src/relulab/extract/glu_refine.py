"""Final least-squares polish of a recovered GLU block (stage 6 of
:func:`relulab.extract.extract_glu`): L-BFGS in float64 on the even and odd parts of the
training pairs, started from the constructive estimate (never from random weights), and
kept only when it lowers the training error.

Example:
    >>> import numpy as np
    >>> from relulab.extract import random_glu
    >>> blk = random_glu(3, 2, act="silu", seed=0)
    >>> X = np.random.default_rng(0).normal(size=(60, 3))
    >>> start = type(blk)(blk.W_gate * 1.01, blk.W_up, blk.W_out, "silu")
    >>> out = refine(start, X, blk(X), blk(-X), time_limit=10).block
    >>> err = lambda b: np.abs(b(X) - blk(X)).max()
    >>> bool(err(out) < err(start) / 100)
    True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..limits import Deadline
from ..results import Result
from ..tolerance import TINY

__all__ = ["Polish", "refine"]

LBFGS_TOL_GRAD = 1e-15  # tol: let L-BFGS run to float64 precision; the time limit stops it
LBFGS_TOL_CHANGE = 1e-18  # tol: the same for the change of the loss between steps
LOSS_FLOOR = 1e-26  # tol: a squared relative loss this small is float64 rounding: stop
STALL_RTOL = 1e-4  # an outer round improving the loss by less than this fraction stalls


@dataclass(frozen=True)
class Polish(Result):
    """What :func:`refine` did.

    Attributes:
        block: the polished block (the input block when ``unchanged``).
        status: ``converged`` (the loss stalled or reached float64 rounding),
            ``stopped`` (time or step limit first) or ``unchanged`` (no improvement).
        loss_before, loss_after: mean squared error of the paired parts over their scale.
        timed_out: the time limit stopped the polish (before convergence or the step
            limit); a polish that was given no time left does not start.

    Example:
        >>> from relulab.extract import random_glu
        >>> Polish(random_glu(2, 1), "unchanged", 0.0, 0.0).to_dict()["status"]
        'unchanged'
    """

    block: Any
    status: str
    loss_before: float
    loss_after: float
    timed_out: bool = False


def refine(block: Any, X: np.ndarray, Yp: np.ndarray, Yn: np.ndarray,
           time_limit: float = 60.0, steps: int = 500) -> Polish:
    """``block`` (a :class:`~relulab.extract.GLUBlock`) polished on the pairs
    ``Yp = f(X)``, ``Yn = f(-X)`` (see :class:`Polish`; the input block when the polish
    does not help).

    Example:
        >>> import numpy as np
        >>> from relulab.extract import random_glu
        >>> blk = random_glu(2, 1, act="relu", seed=0)
        >>> X = np.random.default_rng(1).normal(size=(20, 2))
        >>> p = refine(blk, X, blk(X), blk(-X), time_limit=5)  # already exact
        >>> p.status, p.block is blk
        ('unchanged', True)
    """
    import torch

    Xt = torch.as_tensor(X)
    even = torch.as_tensor(0.5 * (Yp + Yn))
    odd = torch.as_tensor(0.5 * (Yp - Yn))
    G = torch.nn.Parameter(torch.as_tensor(block.W_gate.copy()))
    U = torch.nn.Parameter(torch.as_tensor(block.W_up.copy()))
    W = torch.nn.Parameter(torch.as_tensor(block.W_out.copy()))
    f = {"silu": torch.nn.functional.silu, "gelu": torch.nn.functional.gelu,
         "relu": torch.relu}[block.act]
    scale = float((even.pow(2).mean() + odd.pow(2).mean()).sqrt()) + TINY

    def loss_fn() -> Any:
        zg, zu = Xt @ G.T, Xt @ U.T
        pe = 0.5 * (zg * zu) @ W.T  # act(z) - act(-z) = z: the even part
        po = 0.5 * ((f(zg) + f(-zg)) * zu) @ W.T
        return ((pe - even).pow(2).mean() + (po - odd).pow(2).mean()) / scale**2

    with torch.no_grad():
        start = float(loss_fn())
    if start < LOSS_FLOOR:
        return Polish(block, "unchanged", start, start)
    opt = torch.optim.LBFGS([G, U, W], lr=1, max_iter=25, tolerance_grad=LBFGS_TOL_GRAD,
                            tolerance_change=LBFGS_TOL_CHANGE, history_size=30,
                            line_search_fn="strong_wolfe")

    def closure() -> Any:
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss

    deadline = Deadline(time_limit)
    last = start
    status = "stopped"
    timed_out = False
    for _ in range(max(1, steps // 25)):  # chunks of 25 iterations: the time limit is checked
        if deadline.expired():
            timed_out = True
            break
        opt.step(closure)
        with torch.no_grad():
            loss = float(loss_fn())
        if not math.isfinite(loss):
            break
        if loss < LOSS_FLOOR or loss >= last * (1 - STALL_RTOL):
            status = "converged"
            break
        last = loss
    with torch.no_grad():
        final = float(loss_fn())
    if not (math.isfinite(final) and final < start):
        return Polish(block, "unchanged", start, start, timed_out)
    out = type(block)(G.detach().numpy().copy(), U.detach().numpy().copy(),
                      W.detach().numpy().copy(), block.act)
    return Polish(out, status, start, final, timed_out)
