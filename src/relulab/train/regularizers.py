"""Training regularisers that make a ReLU network cheap to embed in a MILP.

An exact MILP encoding of ``h = relu(z)`` with ``l <= z <= u`` needs a binary only when the
neuron is *unstable* (``l < 0 < u``), and its big-M constants are ``u`` and ``-l``; the
LP relaxation replaces the ReLU by the triangle ``h >= 0, h >= z, h <= u (z - l)/(u - l)``.
So a network is easy for branch and bound when its interval bounds are tight, few neurons
are unstable, and the triangle is thin where the data lie.  Three differentiable penalties
(torch), computed from interval bounds over the input box:

* :func:`bigm_penalty`: ``sum_neurons relu(u) + relu(-l)`` (the big-M constants),
* :func:`unstable_penalty`: ``sum_neurons min(relu(u), relu(-l))`` (zero exactly when every
  neuron is stable; it grows with how deeply a neuron is unstable),
* :func:`lp_gap_penalty`: the mean over training points of the triangle's height above the
  ReLU at the point's own pre-activation, ``u (z - l)/(u - l) - relu(z)`` summed over
  unstable neurons: how far the LP relaxation can move each hidden value away from its true
  value at a training point (a differentiable stand-in for the per-sample LP gap).

Reference (abstract in ``shared/seeds``): bound-based regularisers on big-M constants and
unstable neurons and an LP-relaxation-gap regulariser reduce MILP solve times of ReLU
surrogates by up to four orders of magnitude at competitive accuracy.

Example:
    >>> import torch
    >>> net = mlp([2, 8, 1], seed=0)
    >>> lo, hi = torch.tensor([-1.0, -1.0]), torch.tensor([1.0, 1.0])
    >>> float(unstable_penalty(net, lo, hi).detach()) >= 0.0
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import RelulabError, is_int_at_least, require
from ..network import Network
from ..tolerance import FEAS_TOL, ROUNDOFF

# train_surrogate's summary says "diverged" when the final MSE is NaN or this many times
# the starting one
DIVERGED_FACTOR = 10.0

__all__ = ["mlp", "interval_bounds", "bigm_penalty", "unstable_penalty", "lp_gap_penalty",
           "lp_relaxation_gaps", "lp_gap_true_penalty", "to_network", "train_surrogate",
           "count_unstable", "prune_on_data"]


def mlp(widths: list[int], seed: int = 0, dtype: Any = None):
    """A torch ``nn.Sequential`` of Linear/ReLU layers with sizes ``widths`` (input first).

    Example:
        >>> net = mlp([2, 8, 1], seed=0)
        >>> [type(m).__name__ for m in net], tuple(net[0].weight.shape)
        (['Linear', 'ReLU', 'Linear'], (8, 2))
    """
    torch = require("torch", "torch")
    if len(widths) < 2:
        raise RelulabError(f"mlp needs at least an input and an output size, got {widths}")
    g = torch.Generator().manual_seed(seed)
    layers = []
    for k in range(len(widths) - 1):
        lin = torch.nn.Linear(widths[k], widths[k + 1])
        with torch.no_grad():
            bound = 1.0 / np.sqrt(widths[k])
            lin.weight.uniform_(-bound, bound, generator=g)
            lin.bias.uniform_(-bound, bound, generator=g)
        layers.append(lin)
        if k < len(widths) - 2:
            layers.append(torch.nn.ReLU())
    net = torch.nn.Sequential(*layers)
    return net.to(dtype) if dtype is not None else net


def _linears(model) -> list:
    torch = require("torch", "torch")
    lins = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    if not lins:
        raise RelulabError("the model has no Linear layers")
    return lins


def interval_bounds(model, lo, hi) -> list[tuple[Any, Any]]:
    """Interval bounds ``(l, u)`` on the pre-activations of every hidden layer of a
    Linear/ReLU ``nn.Sequential`` over the box ``[lo, hi]`` (differentiable).

    Example:
        >>> import torch
        >>> net = torch.nn.Sequential(torch.nn.Linear(1, 2), torch.nn.ReLU(), torch.nn.Linear(2, 1))
        >>> with torch.no_grad():
        ...     _ = net[0].weight.copy_(torch.tensor([[1.0], [-1.0]])), net[0].bias.zero_()
        >>> [(l.tolist(), u.tolist()) for l, u in interval_bounds(net, torch.tensor([-1.0]), torch.tensor([2.0]))]
        [([-1.0, -2.0], [2.0, 1.0])]
    """
    torch = require("torch", "torch")
    lins = _linears(model)
    c = (hi + lo) / 2
    r = (hi - lo) / 2
    out = []
    for k, lin in enumerate(lins[:-1]):
        zc = lin(c) if k == 0 else torch.nn.functional.linear(c, lin.weight, lin.bias)
        zr = r @ lin.weight.abs().T
        l, u = zc - zr, zc + zr
        out.append((l, u))
        hl, hu = torch.relu(l), torch.relu(u)
        c, r = (hu + hl) / 2, (hu - hl) / 2
    return out


def bigm_penalty(model, lo, hi):
    """Sum of the big-M constants ``relu(u) + relu(-l)`` over all hidden neurons.

    Example:
        >>> import torch
        >>> net = torch.nn.Sequential(torch.nn.Linear(1, 2), torch.nn.ReLU(), torch.nn.Linear(2, 1))
        >>> with torch.no_grad():
        ...     _ = net[0].weight.copy_(torch.tensor([[1.0], [-1.0]])), net[0].bias.zero_()
        >>> float(bigm_penalty(net, torch.tensor([-1.0]), torch.tensor([2.0])).detach())    # (2 + 1) + (1 + 2)
        6.0
    """
    torch = require("torch", "torch")
    return sum(torch.sum(torch.relu(u) + torch.relu(-l)) for l, u in interval_bounds(model, lo, hi))


def unstable_penalty(model, lo, hi):
    """Sum over hidden neurons of ``min(relu(u), relu(-l))``: zero iff all are stable.

    Example:
        >>> import torch
        >>> net = torch.nn.Sequential(torch.nn.Linear(1, 2), torch.nn.ReLU(), torch.nn.Linear(2, 1))
        >>> with torch.no_grad():
        ...     _ = net[0].weight.copy_(torch.tensor([[1.0], [-1.0]])), net[0].bias.zero_()
        >>> float(unstable_penalty(net, torch.tensor([-1.0]), torch.tensor([2.0])).detach())  # min(2, 1) + min(1, 2)
        2.0
        >>> float(unstable_penalty(net, torch.tensor([0.5]), torch.tensor([2.0])).detach())   # both stable
        0.0
    """
    torch = require("torch", "torch")
    return sum(torch.sum(torch.minimum(torch.relu(u), torch.relu(-l)))
               for l, u in interval_bounds(model, lo, hi))


def lp_gap_penalty(model, X, lo, hi):
    """Mean over the rows of ``X`` of the triangle-relaxation slack at their own
    pre-activations, summed over unstable hidden neurons (see the module docstring).

    Example:
        >>> import torch
        >>> net = torch.nn.Sequential(torch.nn.Linear(1, 1), torch.nn.ReLU(), torch.nn.Linear(1, 1))
        >>> with torch.no_grad():
        ...     _ = net[0].weight.fill_(1.0), net[0].bias.zero_()
        >>> lo, hi = torch.tensor([-1.0]), torch.tensor([1.0])
        >>> round(float(lp_gap_penalty(net, torch.tensor([[0.0], [0.5]]), lo, hi).detach()), 6)   # mean of (x+1)/2 - relu(x)
        0.375
    """
    torch = require("torch", "torch")
    lins = _linears(model)
    bounds = interval_bounds(model, lo, hi)
    h = X
    total = 0.0
    for k, lin in enumerate(lins[:-1]):
        z = lin(h)
        l, u = bounds[k]
        unstable = (l < 0) & (u > 0)
        denom = torch.where(unstable, u - l, torch.ones_like(u))
        top = u * (z - l) / denom
        slack = torch.where(unstable, top - torch.relu(z), torch.zeros_like(z))
        total = total + torch.sum(torch.clamp(slack, min=0.0)) / X.shape[0]
        h = torch.relu(z)
    return total


def _lp_gap_lp(Ws, bs, ls, us, X: np.ndarray, sign: float):
    """Solve, for every row of ``X`` at once, ``min sign * f`` over the triangle (LP)
    relaxation of the network with the input fixed to that row.

    The samples' LPs do not share variables, so they are stacked block-diagonally into one
    HiGHS model (one solve for the batch; the optimum of the sum is the sum of the optima,
    and each block's part of the solution is optimal for that block).  Returns the optimal
    hidden values per layer (``(B, n_k)`` arrays), the multipliers ``lam_up`` (rows
    ``z - h <= 0``), ``lam_top`` (rows ``h - s (z - l) <= 0``) and ``mu`` (rows
    ``h - z = 0`` of stably active neurons), all ``(B, n_k)``, zero where a row is absent.
    """
    import scipy.sparse as sp

    from ..lp import LPModel

    B = X.shape[0]
    widths = [W.shape[0] for W in Ws[:-1]]
    offs = np.concatenate([[0], np.cumsum([B * n for n in widths])]).astype(int)
    n_vars = int(offs[-1])
    lb = np.zeros(n_vars)
    ub = np.full(n_vars, np.inf)
    ub_rows, ub_rhs, eq_rows, eq_rhs = [], [], [], []
    kinds = []   # per layer: (unstable mask, active mask, slope s, l)
    for k, n in enumerate(widths):
        W, b, l, u = Ws[k], bs[k], ls[k], us[k]
        unst = (l < 0) & (u > 0)
        act = l >= 0
        dead = ~unst & ~act
        s = np.where(unst, u / np.where(unst, u - l, 1.0), 0.0)
        kinds.append((unst, act, s, l))
        cols = offs[k] + np.arange(B * n).reshape(B, n)
        ub[cols[:, dead].ravel()] = 0.0
        eye = sp.identity(B, format="csr")
        # columns of the previous layer (or the constant input for k == 0)
        if k == 0:
            zc = X @ W.T + b                        # (B, n) constant pre-activations
            Wp = None
        else:
            zc = np.broadcast_to(b, (B, n))
            Wp = sp.csr_matrix(W)
        idx_u, idx_a = np.nonzero(unst)[0], np.nonzero(act)[0]

        def block(sel, coef_h, coef_prev, k=k, n=n, Wp=Wp, cols=cols, eye=eye):
            # rows coef_h * h[sel] + coef_prev * (W h_prev)[sel] for every sample
            m = sel.size
            Hpart = sp.csr_matrix((np.tile(coef_h, B), (np.arange(B * m), cols[:, sel].ravel())),
                                  shape=(B * m, n_vars))
            if Wp is None:
                return Hpart
            Pblk = sp.kron(eye, sp.diags(coef_prev) @ Wp[sel], format="csr")
            P = sp.hstack([sp.csr_matrix((B * m, int(offs[k - 1]))), Pblk,
                           sp.csr_matrix((B * m, n_vars - int(offs[k])))], format="csr")
            return Hpart + P

        if idx_u.size:
            # z - h <= 0   ->   (W h_prev) - h <= -b  (k == 0: -h <= -z)
            ub_rows.append(block(idx_u, -np.ones(idx_u.size), np.ones(idx_u.size)))
            ub_rhs.append(-zc[:, idx_u].ravel())
            # h - s (z - l) <= 0  ->  h - s (W h_prev) <= s (b - l)  (k == 0: s (z - l))
            su = s[idx_u]
            ub_rows.append(block(idx_u, np.ones(idx_u.size), -su))
            ub_rhs.append((su * (zc[:, idx_u] - l[idx_u])).ravel())
        if idx_a.size:
            # h - z = 0  ->  h - (W h_prev) = b  (k == 0: h = z)
            eq_rows.append(block(idx_a, np.ones(idx_a.size), -np.ones(idx_a.size)))
            eq_rhs.append(zc[:, idx_a].ravel())
    c = np.zeros(n_vars)
    cL = sign * Ws[-1][0]
    c[offs[-2]:offs[-1]] = np.tile(cL, B)
    A_ub = sp.vstack(ub_rows, format="csr") if ub_rows else None
    A_eq = sp.vstack(eq_rows, format="csr") if eq_rows else None
    model = LPModel(c, A_ub=A_ub, b_ub=np.concatenate(ub_rhs) if ub_rhs else None,
                    A_eq=A_eq, b_eq=np.concatenate(eq_rhs) if eq_rhs else None, lb=lb, ub=ub)
    res = model.solve()
    if res.status != "optimal" or res.x is None or res.duals is None:
        raise RelulabError(f"lp gap: the batched LP relaxation ended with status {res.status}")
    # HiGHS row duals y satisfy c - A^T y = reduced costs; for min c v s.t. A v <= b the
    # Lagrange multiplier of a row is -y >= 0 (and -y, free, for an equality row)
    lam = -res.duals
    n_ub = A_ub.shape[0] if A_ub is not None else 0
    lam_ub, lam_eq = lam[:n_ub], lam[n_ub:]
    Hs, LU, LT, MU = [], [], [], []
    pu = pe = 0
    for k, n in enumerate(widths):
        unst, act, _, _ = kinds[k]
        Hs.append(res.x[offs[k]:offs[k + 1]].reshape(B, n))
        lu, lt, mu = np.zeros((B, n)), np.zeros((B, n)), np.zeros((B, n))
        mu_n, ma_n = int(unst.sum()), int(act.sum())
        if mu_n:
            lu[:, unst] = lam_ub[pu:pu + B * mu_n].reshape(B, mu_n)
            pu += B * mu_n
            lt[:, unst] = lam_ub[pu:pu + B * mu_n].reshape(B, mu_n)
            pu += B * mu_n
        if ma_n:
            mu[:, act] = lam_eq[pe:pe + B * ma_n].reshape(B, ma_n)
            pe += B * ma_n
        LU.append(lu)
        LT.append(lt)
        MU.append(mu)
    return Hs, LU, LT, MU


def lp_relaxation_gaps(model, X, lo, hi, sense: str = "min"):
    """The true per-sample LP-relaxation gap at the rows of ``X``, as a torch vector whose
    gradient comes from the LP's dual variables.

    For a sample ``x`` the input is fixed to ``x`` and every unstable neuron (interval
    bounds over ``[lo, hi]``) is replaced by its triangle relaxation; stable neurons stay
    exact.  With ``sense="min"`` the gap is ``f(x) - min LP output`` (how far the relaxation
    of a minimisation MILP undercuts the network at ``x``), with ``"max"`` it is
    ``max LP output - f(x)``, and ``"both"`` adds the two; all are ``>= 0``.  All samples
    are solved as one block-diagonal HiGHS LP (through :mod:`relulab.lp`).

    The value is built as the Lagrangian of the LP at its optimal primal/dual pair with
    the network's parameters (weights, biases and the interval bounds that shape the
    triangles) left differentiable, so ``backward()`` yields the LP-sensitivity gradient
    (total derivative, including the bounds' dependence on the weights) without any
    custom autograd.  Needs a one-output network.

    Example:
        >>> import torch
        >>> net = torch.nn.Sequential(torch.nn.Linear(1, 1), torch.nn.ReLU(),
        ...                           torch.nn.Linear(1, 1)).double()
        >>> with torch.no_grad():
        ...     _ = net[0].weight.fill_(1.0), net[0].bias.zero_()
        ...     _ = net[2].weight.fill_(-1.0), net[2].bias.zero_()
        >>> lo, hi = torch.tensor([-1.0]).double(), torch.tensor([1.0]).double()
        >>> g = lp_relaxation_gaps(net, torch.tensor([[0.0], [0.5]]).double(), lo, hi)
        >>> [round(v, 9) for v in g.tolist()]    # (x + 1)/2 - relu(x)
        [0.5, 0.25]
    """
    torch = require("torch", "torch")
    if sense not in ("min", "max", "both"):
        raise RelulabError(f"lp_relaxation_gaps: sense must be min, max or both, got {sense!r}")
    if sense == "both":
        return (lp_relaxation_gaps(model, X, lo, hi, "min")
                + lp_relaxation_gaps(model, X, lo, hi, "max"))
    lins = _linears(model)
    if lins[-1].weight.shape[0] != 1:
        raise RelulabError("lp_relaxation_gaps: the network must have one output")
    _check_rows_in_box(X, lo, hi, "lp_relaxation_gaps")
    bounds = interval_bounds(model, lo, hi)
    Ws = [lin.weight.detach().double().cpu().numpy() for lin in lins]
    bs = [lin.bias.detach().double().cpu().numpy() for lin in lins]
    ls = [l.detach().double().cpu().numpy() for l, _ in bounds]
    us = [u.detach().double().cpu().numpy() for _, u in bounds]
    Xn = X.detach().double().cpu().numpy()
    sign = 1.0 if sense == "min" else -1.0
    Hs, LU, LT, MU = _lp_gap_lp(Ws, bs, ls, us, Xn, sign)
    dt = lins[0].weight.dtype
    T = lambda a: torch.as_tensor(a, dtype=dt)   # noqa: E731
    # Lagrangian of  min sign*f_LP  at the fixed optimum (h*, multipliers)
    h_prev = X.to(dt)
    lag = sign * (T(Hs[-1]) @ lins[-1].weight[0] + lins[-1].bias[0])
    for k, lin in enumerate(lins[:-1]):
        l, u = bounds[k]
        hk = T(Hs[k])
        z = torch.nn.functional.linear(h_prev, lin.weight, lin.bias)
        unst = (l.detach() < 0) & (u.detach() > 0)
        s = torch.where(unst, u / torch.where(unst, u - l, torch.ones_like(u)),
                        torch.zeros_like(u))
        lag = lag + torch.sum(T(LU[k]) * (z - hk), dim=1)
        lag = lag + torch.sum(T(LT[k]) * (hk - s * (z - l)), dim=1)
        lag = lag + torch.sum(T(MU[k]) * (hk - z), dim=1)
        h_prev = hk
    f = model(X.to(dt))[:, 0]
    # min: gap = f - LP_min = f - lag;  max: LP_max = -lag, gap = LP_max - f
    gap = f - lag if sense == "min" else -lag - f
    return gap


def _check_rows_in_box(X: Any, lo: Any, hi: Any, where: str) -> None:
    """Refuse a box with ``lo > hi`` and rows of ``X`` outside ``[lo, hi]``: the relaxation
    holds on the box only (a row outside it gave a "gap" of -1, or an infeasible LP), and a
    reversed box gave 0 for a gap of 0.25."""
    def arr(v: Any) -> np.ndarray:
        v = v.detach().double().cpu().numpy() if hasattr(v, "detach") else v
        return np.asarray(v, dtype=np.float64)

    Xn, lon, hin = arr(X), arr(lo).reshape(-1), arr(hi).reshape(-1)
    if Xn.ndim != 2 or Xn.shape[1] != lon.size or lon.size != hin.size:
        raise RelulabError(f"{where}: X must be (n, {lon.size}) with lo and hi of {lon.size} entries, "
                           f"got X {Xn.shape}, lo {lon.size} and hi {hin.size} entries")
    if not (np.all(np.isfinite(Xn)) and np.all(np.isfinite(lon)) and np.all(np.isfinite(hin))):
        raise RelulabError(f"{where}: X, lo and hi must be finite numbers")
    if np.any(lon > hin):
        raise RelulabError(f"{where}: the box has lo > hi at input {int(np.argmax(lon > hin))}")
    out = (Xn < lon) | (Xn > hin)
    if out.any():
        i, j = (int(v) for v in np.argwhere(out)[0])
        raise RelulabError(f"{where}: row {i} of X lies outside the box (input {j}: {Xn[i, j]:.17g} not in "
                           f"[{lon[j]:.17g}, {hin[j]:.17g}]); the relaxation holds on the box only")


def lp_gap_true_penalty(model, X, lo, hi, sense: str = "min"):
    """Mean over the rows of ``X`` of :func:`lp_relaxation_gaps` (the paper's per-sample
    LP-gap regulariser, gradient from LP duals).

    Example:
        >>> import torch
        >>> net = torch.nn.Sequential(torch.nn.Linear(1, 1), torch.nn.ReLU(),
        ...                           torch.nn.Linear(1, 1)).double()
        >>> with torch.no_grad():
        ...     _ = net[0].weight.fill_(1.0), net[0].bias.zero_()
        ...     _ = net[2].weight.fill_(-1.0), net[2].bias.zero_()
        >>> lo, hi = torch.tensor([-1.0]).double(), torch.tensor([1.0]).double()
        >>> round(float(lp_gap_true_penalty(net, torch.tensor([[0.0], [0.5]]).double(), lo, hi).detach()), 9)
        0.375
    """
    return lp_relaxation_gaps(model, X, lo, hi, sense).mean()


def count_unstable(model, lo, hi) -> int:
    """Number of hidden neurons with ``l < 0 < u`` under interval bounds.

    Example:
        >>> import torch
        >>> net = torch.nn.Sequential(torch.nn.Linear(1, 2), torch.nn.ReLU(), torch.nn.Linear(2, 1))
        >>> with torch.no_grad():
        ...     _ = net[0].weight.copy_(torch.tensor([[1.0], [-1.0]])), net[0].bias.copy_(torch.tensor([0.0, 3.0]))
        >>> count_unstable(net, torch.tensor([-1.0]), torch.tensor([2.0]))   # neuron 1: 3 - x > 0
        1
    """
    torch = require("torch", "torch")
    with torch.no_grad():
        return int(sum(int(((l < 0) & (u > 0)).sum()) for l, u in interval_bounds(model, lo, hi)))


def to_network(model) -> Network:
    """The relulab :class:`Network` of a Linear/ReLU ``nn.Sequential`` (the project's
    torch importer, :func:`relulab.io.torch.from_torch`).

    Example:
        >>> import numpy as np, torch
        >>> model = mlp([2, 4, 1], seed=3)
        >>> net = to_network(model)
        >>> X = np.array([[0.5, -0.25]])
        >>> net.widths, bool(np.allclose(net(X), model(torch.tensor(X, dtype=torch.float32)).detach().numpy(), atol=1e-6))
        ((4,), True)
    """
    from ..io.torch import from_torch

    return from_torch(model)


def _prune_inputs(d: int, X: Any, lo: Any, hi: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``X`` as (n, d) finite rows and the box ``[lo, hi]`` as d finite bounds with
    ``lo <= hi``, or one clear error naming the argument (the data decide which neurons
    are changed; rows outside the box are allowed)."""
    try:
        H = np.asarray(X, dtype=np.float64)
        L = np.asarray(lo, dtype=np.float64).reshape(-1)
        U = np.asarray(hi, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as e:
        raise RelulabError(f"prune_on_data: X, lo and hi must be numbers ({e})") from None
    if H.ndim != 2 or H.shape[1] != d:
        raise RelulabError(f"prune_on_data: X must have shape (n, {d}) for this network, got {H.shape}")
    if L.size != d or U.size != d:
        raise RelulabError(f"prune_on_data: lo and hi must have {d} entries, got {L.size} and {U.size}")
    if not (np.all(np.isfinite(L)) and np.all(np.isfinite(U)) and np.all(L <= U)):
        raise RelulabError("prune_on_data: the box needs finite bounds with lo <= hi")
    if not np.all(np.isfinite(H)):
        raise RelulabError(f"prune_on_data: X has a NaN or infinite entry (row {int(np.argwhere(~np.isfinite(H))[0, 0])})")
    return H, L, U


def prune_on_data(net: Network, X: np.ndarray, lo: Any, hi: Any) -> tuple[Network, dict[str, int]]:
    """Remove the binaries that the data never use: every hidden neuron whose
    pre-activation has one sign on all rows of ``X`` but is unstable under interval bounds
    over ``[lo, hi]`` is made stable, layer by layer.

    * never active on the data (``max z <= 0``): the neuron is deleted;
    * always active on the data (``min z >= 0``, ``l < 0``): its bias is raised by
      ``m = -l`` (plus a rounding margin) and ``m`` times its outgoing weights is taken off the next layer's bias, so
      it computes ``z`` on the whole box (stably active, no binary).

    The returned network equals ``net`` on every row of ``X`` (up to rounding); it may differ
    only where a changed neuron would have switched, a region no data point reaches.  Also
    returns the counts ``{"deleted": ..., "linearised": ...}``.

    Example:
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
        >>> small, info = prune_on_data(net, np.array([[0.5], [1.0]]), [-1.0], [1.0])
        >>> small.widths, info, small(np.array([[0.5], [1.0]])).ravel().tolist()
        ((1,), {'deleted': 1, 'linearised': 1}, [0.5, 1.0])
    """
    f = net.float() if net.is_exact else net
    if f.skip is not None:
        raise RelulabError("prune_on_data: networks with a skip connection are not supported")
    Ws = [np.array(W, dtype=np.float64) for W in f.weights]
    bs = [np.array(b, dtype=np.float64) for b in f.biases]
    H, L, U = _prune_inputs(f.input_dim, X, lo, hi)
    deleted = linearised = 0
    for k in range(len(Ws) - 1):
        W, b = Ws[k], bs[k]
        Wp, Wn = np.maximum(W, 0), np.minimum(W, 0)
        l, u = Wp @ L + Wn @ U + b, Wp @ U + Wn @ L + b
        Z = H @ W.T + b
        unst = (l < 0) & (u > 0)
        dead = unst & (Z.max(axis=0) <= 0) if len(Z) else np.zeros_like(unst)
        live = unst & ~dead & (Z.min(axis=0) >= 0) if len(Z) else np.zeros_like(unst)
        # always active on the data: shift into the stably active range (with a margin so
        # that recomputed bounds stay >= 0 despite rounding), compensate in the next bias
        m = np.where(live, -l * (1 + FEAS_TOL) + ROUNDOFF, 0.0)
        b = b + m
        bs[k + 1] = bs[k + 1] - Ws[k + 1] @ m
        l, u, Z = l + m, u + m, Z + m
        keep = ~dead
        # keep at least one neuron so the layer stays well formed
        if not keep.any():
            keep[0] = True
        Ws[k], bs[k] = W[keep], b[keep]
        Ws[k + 1] = Ws[k + 1][:, keep]
        deleted += int(np.sum(~keep))
        linearised += int(np.sum(live))
        H = np.maximum(Z[:, keep], 0.0)
        L, U = np.maximum(l[keep], 0.0), np.maximum(u[keep], 0.0)
    return Network(Ws, bs), {"deleted": deleted, "linearised": linearised}


def _float_array(v: Any, name: str) -> np.ndarray:
    try:
        a = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise RelulabError(f"train_surrogate: {name} must be numbers ({e})") from None
    if not np.all(np.isfinite(a)):
        raise RelulabError(f"train_surrogate: {name} contains NaN or infinite entries")
    return a


def _check_surrogate_args(X: Any, y: Any, widths: Any, lo: Any, hi: Any, epochs: Any,
                          lr: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Validate ``train_surrogate``'s data, widths, box, epochs and lr (one clear error)."""
    Xa = _float_array(X, "X")
    if Xa.ndim != 2 or Xa.shape[0] == 0:
        raise RelulabError(f"train_surrogate: X must be a non-empty 2-D array, got shape {Xa.shape}")
    ya = _float_array(y, "y")
    # (n,) or (n, 1): a (10, 2) target was flattened into 20 values for 20 rows
    if not (ya.ndim == 1 or (ya.ndim == 2 and ya.shape[1] == 1)) or ya.shape[0] != Xa.shape[0]:
        raise RelulabError(f"train_surrogate: y must be ({Xa.shape[0]},) or ({Xa.shape[0]}, 1) for the "
                           f"{Xa.shape[0]} rows of X, got shape {ya.shape}")
    ya = ya.reshape(-1)
    try:
        ws = [int(w) for w in widths]
    except (TypeError, ValueError):
        raise RelulabError(f"train_surrogate: widths must be a list of integers, got {widths!r}") from None
    if len(ws) < 2 or any(w < 1 or w != v for w, v in zip(ws, widths, strict=True)):
        raise RelulabError(f"train_surrogate: widths must be >= 2 positive integers, got {widths!r}")
    if ws[0] != Xa.shape[1]:
        raise RelulabError(f"train_surrogate: widths[0] = {ws[0]} but X has {Xa.shape[1]} columns")
    if ws[-1] != 1:
        raise RelulabError(f"train_surrogate: widths[-1] must be 1 (one output), got {ws[-1]}")
    loa, hia = _float_array(lo, "lo").reshape(-1), _float_array(hi, "hi").reshape(-1)
    if loa.size != ws[0] or hia.size != ws[0]:
        raise RelulabError(f"train_surrogate: lo and hi must have {ws[0]} entries (one per input), "
                           f"got {loa.size} and {hia.size}")
    if np.any(loa > hia):
        raise RelulabError(f"train_surrogate: box has lo > hi at input {int(np.argmax(loa > hia))}")
    if not is_int_at_least(epochs, 0):
        raise RelulabError(f"train_surrogate: epochs must be a non-negative integer, got {epochs!r}")
    if not (isinstance(lr, (int, float, np.floating)) and np.isfinite(lr) and lr > 0):
        raise RelulabError(f"train_surrogate: lr must be a positive finite number, got {lr!r}")
    return Xa, ya, loa, hia


def _check_surrogate_options(weights: dict[str, Any], counts: dict[str, Any], warmup: Any,
                             init: Any) -> None:
    """``train_surrogate``'s penalty weights (finite, >= 0), step counts (integers >= 1),
    warmup (a number in [0, 1]) and init (a relulab Network): one line naming the
    argument, before any training (a NaN weight failed after it, naming a Linear layer)."""
    for name, v in weights.items():
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                or not np.isfinite(v) or v < 0:
            raise RelulabError(f"train_surrogate: {name} must be a finite number >= 0, got {v!r}")
    for name, v in counts.items():
        if not is_int_at_least(v, 1):
            raise RelulabError(f"train_surrogate: {name} must be an integer >= 1, got {v!r}")
    if isinstance(warmup, bool) or not isinstance(warmup, (int, float, np.integer, np.floating)) \
            or not 0.0 <= warmup <= 1.0:
        raise RelulabError(f"train_surrogate: warmup must be a number in [0, 1], got {warmup!r}")
    if init is not None and not isinstance(init, Network):
        raise RelulabError(f"train_surrogate: init must be a relulab Network (relulab.train.regularizers.to_network "
                           f"converts a torch model), got {type(init).__name__}")


def train_surrogate(X: np.ndarray, y: np.ndarray, widths: list[int], lo: Any, hi: Any, *,
                    bigm: float = 0.0, unstable: float = 0.0, lp_gap: float = 0.0,
                    epochs: int = 3000, lr: float = 3e-3, seed: int = 0,
                    weight_decay: float = 0.0, lp_gap_true: float = 0.0,
                    lp_batch: int = 64, lp_every: int = 10, warmup: float = 0.0,
                    schedule: str = "constant",
                    init: Network | None = None) -> tuple[Network, dict[str, float]]:
    """Fit a Linear/ReLU network to ``(X, y)`` by full-batch Adam on the mean squared error
    plus the chosen penalties over the box ``[lo, hi]``; returns the relulab network and
    a summary (final MSE, the MSE at the start, ``diverged``: the final MSE is NaN or
    more than ``DIVERGED_FACTOR`` times the starting one, as a learning rate far too large
    leaves it; unstable count under interval bounds, penalty values, seconds).

    ``bigm``, ``unstable`` and ``lp_gap`` weight :func:`bigm_penalty`,
    :func:`unstable_penalty` and the stand-in :func:`lp_gap_penalty` (every step).
    ``lp_gap_true`` weights the true per-sample LP gap (:func:`lp_gap_true_penalty`, one
    batched HiGHS LP) on a random minibatch of ``lp_batch`` rows every ``lp_every`` steps.
    ``warmup`` (a fraction of ``epochs``) ramps every penalty linearly from zero, so the
    network first learns the function and is then pushed towards stability.
    ``schedule="onecycle"`` uses a one-cycle learning rate peaking at ``lr``
    (``"constant"``: plain Adam at ``lr``).  ``init`` starts from the weights of a
    network of the same widths (fine-tuning, e.g. regularising an already trained net).

    Example:
        >>> X = np.random.default_rng(0).uniform(-1, 1, (64, 2)); y = X[:, 0] * X[:, 1]
        >>> net, info = train_surrogate(X, y, [2, 8, 1], [-1, -1], [1, 1], epochs=50)
        >>> net.widths, info["mse"] >= 0
        ((8,), True)
    """
    import time

    torch = require("torch", "torch")
    if schedule not in ("constant", "onecycle"):
        raise RelulabError(f"train_surrogate: schedule must be constant or onecycle, got {schedule!r}")
    _check_surrogate_options({"bigm": bigm, "unstable": unstable, "lp_gap": lp_gap,
                              "lp_gap_true": lp_gap_true, "weight_decay": weight_decay},
                             {"lp_batch": lp_batch, "lp_every": lp_every}, warmup, init)
    Xa, ya, loa, hia = _check_surrogate_args(X, y, widths, lo, hi, epochs, lr)
    if lp_gap_true:
        _check_rows_in_box(Xa, loa, hia, "train_surrogate")
    t0 = time.time()
    torch.manual_seed(seed)
    dt = torch.float64
    model = mlp(widths, seed=seed, dtype=dt)
    if init is not None:
        lins = _linears(model)
        f = init.float() if init.is_exact else init
        if [f.input_dim, *f.widths, f.output_dim] != list(widths) or f.skip is not None:
            raise RelulabError(f"train_surrogate: init has widths {f.input_dim}-{f.widths}-"
                               f"{f.output_dim}, expected {widths} (and no skip)")
        with torch.no_grad():
            for lin, W, b in zip(lins, f.weights, f.biases, strict=True):
                lin.weight.copy_(torch.as_tensor(np.array(W, dtype=np.float64)))
                lin.bias.copy_(torch.as_tensor(np.array(b, dtype=np.float64)))
    Xt = torch.as_tensor(Xa, dtype=dt)
    yt = torch.as_tensor(ya.reshape(-1, 1), dtype=dt)
    lo_t = torch.as_tensor(loa, dtype=dt)
    hi_t = torch.as_tensor(hia, dtype=dt)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    sched = (torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=max(epochs, 1))
             if schedule == "onecycle" else None)
    rng = np.random.default_rng(seed)
    ramp = max(1, int(warmup * epochs))
    with torch.no_grad():
        mse0 = float(torch.mean((model(Xt) - yt) ** 2))
    for e in range(epochs):
        w = min(1.0, (e + 1) / ramp) if warmup > 0 else 1.0
        opt.zero_grad()
        loss = torch.mean((model(Xt) - yt) ** 2)
        if bigm:
            loss = loss + w * bigm * bigm_penalty(model, lo_t, hi_t)
        if unstable:
            loss = loss + w * unstable * unstable_penalty(model, lo_t, hi_t)
        if lp_gap:
            loss = loss + w * lp_gap * lp_gap_penalty(model, Xt, lo_t, hi_t)
        if lp_gap_true and e % max(lp_every, 1) == 0:
            rows = rng.choice(Xt.shape[0], size=min(lp_batch, Xt.shape[0]), replace=False)
            loss = loss + w * lp_gap_true * lp_gap_true_penalty(model, Xt[rows], lo_t, hi_t)
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
    with torch.no_grad():
        mse = float(torch.mean((model(Xt) - yt) ** 2))
        info = {"mse": mse,
                "initial_mse": mse0,
                # (lr=1e6 ended at an MSE of 2.4e13 from 0.5, and nothing said so)
                "diverged": not (mse <= DIVERGED_FACTOR * max(mse0, float(np.finfo(np.float64).tiny))),
                "unstable": count_unstable(model, lo_t, hi_t),
                "bigm": float(bigm_penalty(model, lo_t, hi_t)),
                "lp_gap": float(lp_gap_penalty(model, Xt, lo_t, hi_t)),
                "seconds": time.time() - t0}
    return to_network(model), info
