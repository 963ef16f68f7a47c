"""Bias-free gated linear unit (GLU) blocks from forward queries.

A block computes ``y = W_out (act(W_gate x) * (W_up x))`` with ``act`` one of SiLU,
GELU, ReLU.  All three satisfy ``act(z) - act(-z) = z``, which makes paired queries at
``x`` and ``-x`` split the block exactly (the idea of the GLU extraction abstract):

* the even part ``(f(x) + f(-x)) / 2 = sum_k w_k (g_k . x)(u_k . x)`` is a quadratic form,
  blind to the activation: it couples each gate direction ``g_k`` with its value
  direction ``u_k`` and output column ``w_k``;
* the odd part ``(f(x) - f(-x)) / 2 = sum_k w_k psi(g_k . x)(u_k . x) / 2`` with the even
  ``psi(z) = act(z) + act(-z)`` (``|z|`` for ReLU, ``z tanh(z / 2)`` for SiLU) does not
  depend on the gate's orientation but does on its magnitude (for SiLU, GELU).

:func:`extract_glu` queries pairs, infers the width when it can (the even part's
Hessian, measured exactly by finite differences of a quadratic, has rank ``2 hidden``
when ``2 hidden < d``), and fits a block to both parts by least squares (L-BFGS in
float64), then reports the relative output error on fresh validation pairs.  This is a
functional extraction: the constructive per-neuron recovery of the abstract is not
implemented; the fit is what is measured.

Example:
    >>> import numpy as np
    >>> blk = random_glu(6, 2, act="silu", seed=3)
    >>> r = extract_glu(blk, 6, act="silu", time_limit=20)
    >>> r.hidden, r.hidden_inferred, r.median_rel_error < 1e-3
    (2, True, True)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..results import Result
from ..tolerance import TINY
from .oracle import BudgetExhausted, ExtractError, QueryOracle

__all__ = ["GLUBlock", "GLUResult", "extract_glu", "random_glu", "ACTIVATIONS"]

ACTIVATIONS = ("silu", "gelu", "relu")

HESS_RANK_RTOL = 1e-8  # tol: a singular value of the pairwise-query Hessian counts above this x the largest
LBFGS_TOL_GRAD = 1e-15  # tol: let L-BFGS run to float64 precision; the time limit stops it
LBFGS_TOL_CHANGE = 1e-18  # tol: the same for the change of the loss between steps
LOSS_FLOOR = 1e-24  # tol: a squared relative loss this small is float64 rounding: stop
STALL_RTOL = 1e-6  # tol: an outer round improving the loss by less than this fraction stalls
GOOD_FIT = 1e-6  # tol: median relative output error of a fit that needs no more restarts


def _act_np(z: np.ndarray, act: str) -> np.ndarray:
    if act == "relu":
        return np.maximum(z, 0.0)
    if act == "silu":
        return z / (1.0 + np.exp(-np.clip(z, -700, 700)))
    from scipy.special import erf

    return 0.5 * z * (1.0 + erf(z / math.sqrt(2.0)))


@dataclass(frozen=True)
class GLUBlock:
    """``y = W_out (act(W_gate x) * (W_up x))``; ``W_gate``, ``W_up``: (hidden, d),
    ``W_out``: (m, hidden).  Batched: ``block(X)`` with ``X`` of shape (n, d).

    Example:
        >>> b = GLUBlock(np.eye(2), np.eye(2), np.ones((1, 2)), "relu")
        >>> b(np.array([[1.0, -2.0]])).tolist()
        [[1.0]]
    """

    W_gate: np.ndarray
    W_up: np.ndarray
    W_out: np.ndarray
    act: str = "silu"

    def __post_init__(self) -> None:
        if self.act not in ACTIVATIONS:
            raise ExtractError(f"GLU activation must be one of {ACTIVATIONS}, got {self.act!r}")
        g, u, w = (np.asarray(a, dtype=float) for a in (self.W_gate, self.W_up, self.W_out))
        if g.ndim != 2 or g.shape != u.shape or w.ndim != 2 or w.shape[1] != g.shape[0]:
            raise ExtractError(f"GLU shapes do not fit: gate {g.shape}, up {u.shape}, out {w.shape}")
        object.__setattr__(self, "W_gate", g)
        object.__setattr__(self, "W_up", u)
        object.__setattr__(self, "W_out", w)

    @property
    def input_dim(self) -> int:
        return int(self.W_gate.shape[1])

    @property
    def hidden(self) -> int:
        return int(self.W_gate.shape[0])

    def __call__(self, X: Any) -> np.ndarray:
        X = np.atleast_2d(np.asarray(X, dtype=float))
        return (_act_np(X @ self.W_gate.T, self.act) * (X @ self.W_up.T)) @ self.W_out.T

    def to_dict(self) -> dict:
        return {"d": self.input_dim, "hidden": self.hidden, "outputs": int(self.W_out.shape[0]),
                "act": self.act}


def random_glu(d: int, hidden: int, m: int | None = None, act: str = "silu",
               seed: int | None = 0) -> GLUBlock:
    """A random block with the usual initial scales (rows of norm about 1).

    Example:
        >>> random_glu(3, 5).W_out.shape
        (3, 5)
    """
    rng = np.random.default_rng(seed)
    m = d if m is None else m
    return GLUBlock(rng.normal(size=(hidden, d)) / math.sqrt(d), rng.normal(size=(hidden, d)) / math.sqrt(d),
                    rng.normal(size=(m, hidden)) / math.sqrt(hidden), act)


@dataclass(frozen=True)
class GLUResult(Result):
    """What :func:`extract_glu` recovered.

    Attributes:
        block: the fitted block (None when stopped before fitting).
        status: ``fitted`` or ``partial`` (budget reached).
        hidden: the width used; hidden_inferred: whether it came from the Hessian rank.
        queries, time: cost.
        median_rel_error, worst_rel_error: ``|f(x) - g(x)| / |f(x)|`` over fresh
            validation inputs (median and maximum).
        even_rel_error, odd_rel_error: the same for the two halves of the paired split.
        message: one line.

    Example:
        >>> r = extract_glu(random_glu(4, 1, act="relu"), 4, hidden=1, act="relu", budget=10)
        >>> r.status, r.block is None, r.to_dict()["status"]
        ('partial', True, 'partial')
    """

    block: GLUBlock | None
    status: str
    hidden: int | None
    hidden_inferred: bool
    queries: int
    time: float
    median_rel_error: float | None
    worst_rel_error: float | None
    even_rel_error: float | None
    odd_rel_error: float | None
    message: str


def _even_hessian_rank(o: QueryOracle, d: int, rng: np.random.Generator) -> int:
    """Rank of the Hessian of ``rho . even part``: exact second differences of a quadratic
    (``e(a + b) - e(a) - e(b) + e(0)`` with ``e(0) = 0`` gives ``2 a^T A b``)."""
    m = o.output_dim or o(np.zeros((1, d))).shape[1]
    rho = rng.normal(size=m)
    E = np.eye(d)
    pairs = [(i, j) for i in range(d) for j in range(i, d)]
    X = np.array([E[i] + E[j] for i, j in pairs] + [E[i] for i in range(d)])
    F = o(np.vstack([X, -X])) @ rho
    n = X.shape[0]
    ev = 0.5 * (F[:n] + F[n:])
    single = ev[len(pairs):]
    H = np.zeros((d, d))
    for k, (i, j) in enumerate(pairs):
        if i == j:
            H[i, i] = 2.0 * single[i]  # e(2 e_i) = 4 e(e_i): use e(e_i) = A_ii
        else:
            H[i, j] = H[j, i] = ev[k] - single[i] - single[j]
    s = np.linalg.svd(H, compute_uv=False)
    return int(np.sum(s > HESS_RANK_RTOL * max(s[0], TINY)))


def _fit(Xp: np.ndarray, Yp: np.ndarray, Yn: np.ndarray, hidden: int, act: str,
         rng: np.random.Generator, steps: int, time_limit: float) -> GLUBlock:
    """Least squares on the even and odd parts with L-BFGS (float64, torch)."""
    import torch

    torch.manual_seed(int(rng.integers(2**31)))
    X = torch.as_tensor(Xp)
    even = torch.as_tensor(0.5 * (Yp + Yn))
    odd = torch.as_tensor(0.5 * (Yp - Yn))
    d, m = X.shape[1], even.shape[1]
    G = torch.nn.Parameter(torch.as_tensor(rng.normal(size=(hidden, d)) / math.sqrt(d)))
    U = torch.nn.Parameter(torch.as_tensor(rng.normal(size=(hidden, d)) / math.sqrt(d)))
    W = torch.nn.Parameter(torch.as_tensor(rng.normal(size=(m, hidden)) / math.sqrt(hidden)))
    f = {"silu": torch.nn.functional.silu, "gelu": torch.nn.functional.gelu,
         "relu": torch.relu}[act]
    scale = float((even.pow(2).mean() + odd.pow(2).mean()).sqrt()) + TINY
    opt = torch.optim.LBFGS([G, U, W], lr=1, max_iter=50, tolerance_grad=LBFGS_TOL_GRAD,
                            tolerance_change=LBFGS_TOL_CHANGE, history_size=50, line_search_fn="strong_wolfe")
    t_end = time.monotonic() + time_limit

    def closure():
        opt.zero_grad()
        zg, zu = X @ G.T, X @ U.T
        pe = 0.5 * (zg * zu) @ W.T  # act(z) - act(-z) = z: the even part
        po = 0.5 * ((f(zg) + f(-zg)) * zu) @ W.T
        loss = ((pe - even).pow(2).mean() + (po - odd).pow(2).mean()) / scale**2
        loss.backward()
        return loss

    last = math.inf
    for _ in range(max(1, steps // 50)):  # chunks of 50 iterations: the time limit is checked
        loss = float(opt.step(closure).detach())
        if time.monotonic() > t_end or loss < LOSS_FLOOR or loss >= last * (1 - STALL_RTOL):
            break
        last = loss
    return GLUBlock(G.detach().numpy(), U.detach().numpy(), W.detach().numpy(), act)


def _rel_errors(Y: np.ndarray, P: np.ndarray) -> np.ndarray:
    return np.linalg.norm(P - Y, axis=1) / np.maximum(np.linalg.norm(Y, axis=1), TINY)


def extract_glu(
    oracle: Any,
    d: int,
    hidden: int | None = None,
    act: str = "silu",
    *,
    budget: int | None = None,
    n_pairs: int | None = None,
    steps: int = 2000,
    time_limit: float = 120.0,
    restarts: int = 4,
    seed: int = 0,
) -> GLUResult:
    """Recover a bias-free GLU block from paired forward queries (module docstring).

    Args:
        oracle: the block as any batched callable (a :class:`GLUBlock`, torch module, ...).
        d: input size.  hidden: the width (None: inferred from the even part's Hessian
            rank, which needs ``2 hidden < d``).  act: ``silu``, ``gelu`` or ``relu``.
        budget: most rows queried.  n_pairs: training pairs (default: 3 parameters' worth).
        steps, time_limit, restarts: L-BFGS iterations per fit, seconds in all, fits
            from fresh random starts (the best is kept).

    Example (the module docstring shows a full fit; here the budget stops it at once):
        >>> r = extract_glu(random_glu(4, 1, act="relu"), 4, hidden=1, act="relu", budget=10)
        >>> r.status, r.queries <= 10
        ('partial', True)
    """
    t0 = time.monotonic()
    if act not in ACTIVATIONS:
        raise ExtractError(f"extract_glu: act must be one of {ACTIVATIONS}, got {act!r}")
    if d is None or int(d) <= 0:
        raise ExtractError("extract_glu: give the input size d > 0")
    d = int(d)
    if hidden is not None and int(hidden) <= 0:
        raise ExtractError(f"extract_glu: hidden must be positive, got {hidden}")
    o = QueryOracle(oracle, d, budget)
    rng = np.random.default_rng(seed)
    inferred = False
    try:
        m = o(np.zeros((1, d))).shape[1]
        if hidden is None:
            r = _even_hessian_rank(o, d, rng)
            if r >= d:
                raise ExtractError(f"extract_glu: the even part has full rank {d}: the width is "
                                   "not identifiable this way (2 hidden >= d); give hidden")
            hidden, inferred = max(1, (r + 1) // 2), True
        n_params = hidden * (2 * d + m)
        n = n_pairs if n_pairs is not None else max(200, int(3 * n_params / max(m, 1)) + 50)
        X = rng.normal(size=(n, d))
        Y = o(np.vstack([X, -X]))
        Yp, Yn = Y[:n], Y[n:]
        Xv = rng.normal(size=(max(200, n // 4), d))
        Yv = o(np.vstack([Xv, -Xv]))
    except BudgetExhausted as e:
        return GLUResult(None, "partial", hidden, inferred, o.queries, time.monotonic() - t0,
                         None, None, None, None, f"stopped: {e}")
    # Non-convex: a few restarts, the best on the training pairs kept.
    best, best_err = None, math.inf
    for k in range(restarts):
        left = time_limit - (time.monotonic() - t0)
        if k and left <= 0:
            break
        cand = _fit(X, Yp, Yn, hidden, act, rng, steps, max(left / (restarts - k), 1.0))
        err = float(np.median(_rel_errors(np.vstack([Yp, Yn]), cand(np.vstack([X, -X])))))
        if err < best_err:
            best, best_err = cand, err
        if err < GOOD_FIT:
            break
    blk = best
    nv = Xv.shape[0]
    P = blk(np.vstack([Xv, -Xv]))
    rel = _rel_errors(Yv, P)
    ev, pv = 0.5 * (Yv[:nv] + Yv[nv:]), 0.5 * (P[:nv] + P[nv:])
    od, po = 0.5 * (Yv[:nv] - Yv[nv:]), 0.5 * (P[:nv] - P[nv:])
    med, worst = float(np.median(rel)), float(np.max(rel))
    return GLUResult(
        blk, "fitted", hidden, inferred, o.queries, time.monotonic() - t0, med, worst,
        float(np.median(_rel_errors(ev, pv))), float(np.median(_rel_errors(od, po))),
        f"GLU {d}x{hidden} ({act}) fitted to {o.queries} queries: median relative validation "
        f"error {med:.3g}, worst {worst:.3g}",
    )
