"""alpha/beta optimisation of the bounds: projected Adam on the ReLU lower slopes (alpha)
and the split multipliers (beta), keeping the best bound seen.

Example:
    >>> from relulab.crown import BoundGraph, bound
    >>> from relulab import Network
    >>> bg = BoundGraph.from_network(Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]]))
    >>> bool(bound(bg, [[-1.0]], [[2.0]], method="alpha").lower[0, 0] > -0.01)
    True
"""

from __future__ import annotations

from ..errors import require
from ..limits import memory_budget
from .kernels import backsub, concretise
from .ops import numel

__all__ = ["Adam", "ADAM_EPS"]

ADAM_EPS = 1e-8   # tol: Adam's usual denominator guard (a step size detail, not a tolerance)


class Adam:
    """Plain Adam (torch.optim's first step costs seconds of lazy imports).

    Example:
        >>> import torch
        >>> p = torch.zeros(1, requires_grad=True)
        >>> with torch.no_grad():
        ...     Adam([p], 0.5).step((torch.ones(1),))
        >>> p.detach().round(decimals=3).tolist()
        [-0.5]
    """

    def __init__(self, params: list, lr: float, b1: float = 0.9, b2: float = 0.999) -> None:
        self.params, self.lr, self.b1, self.b2, self.t = params, lr, b1, b2, 0
        self.m = [p.detach().new_zeros(p.shape) for p in params]
        self.v = [p.detach().new_zeros(p.shape) for p in params]

    def step(self, grads: tuple) -> None:
        self.t += 1
        c1, c2 = 1 - self.b1**self.t, 1 - self.b2**self.t
        for p, g, m, v in zip(self.params, grads, self.m, self.v, strict=True):
            m.mul_(self.b1).add_(g, alpha=1 - self.b1)
            v.mul_(self.b2).addcmul_(g, g, value=1 - self.b2)
            p.sub_(self.lr * (m / c1) / ((v / c2).sqrt() + ADAM_EPS))


def optimise(g, lam0, relax, unstable, signs, xlo, xhi, val0, coeffs0, warm, iters, lr, late, m,
              return_coeffs):
    """alpha (and beta) optimisation of the final bound by projected Adam; returns the
    best bound per row, its coefficients, the final slopes and multipliers, and a reason
    when cut short."""
    torch = require("torch", "torch")
    B, R = lam0.shape[:2]
    # the autograd graph keeps every coefficient tensor of one back-substitution
    need = sum(numel(n.shape) for n in g.nodes) * B * R * lam0.element_size() * 3
    if need > memory_budget():
        return val0, coeffs0, {}, {}, (f"memory: alpha optimisation needs {need / 2**30:.3g} GB; "
                                       "CROWN bounds returned")
    params, alphas, betas = [], {}, {}
    for name, (al, _, _, _) in relax.items():
        un = unstable[name]
        if not bool(un.any()):
            continue
        shp = (B, R, *un.shape[1:])
        init = None
        if warm is not None and name in warm.alphas and tuple(warm.alphas[name].shape) == shp:
            init = warm.alphas[name].to(dtype=lam0.dtype, device=lam0.device)
        a = (init if init is not None else al.expand(shp)).clone().requires_grad_(True)
        alphas[name] = a
        params.append(a)
    for name, s in signs.items():
        shp = (B, R, *s.shape[1:])
        init = None
        if warm is not None and name in warm.betas and tuple(warm.betas[name].shape) == shp:
            init = warm.betas[name].to(dtype=lam0.dtype, device=lam0.device)
        b = (init if init is not None else lam0.new_zeros(shp)).clone().requires_grad_(True)
        betas[name] = b
        params.append(b)
    best = val0.clone()
    best_coeffs = coeffs0
    if not params:
        return best, best_coeffs, alphas, betas, ""
    opt = Adam(params, lr)
    sgn = {k: s.to(lam0.dtype).unsqueeze(1) for k, s in signs.items()}
    why = ""
    for it in range(iters + 1):
        if late():
            why = "deadline: alpha optimisation stopped early"
            break
        rel = {}
        for name, (al, su, tu, uidx) in relax.items():
            if name in alphas:
                a = torch.where(unstable[name].unsqueeze(1), alphas[name].clamp(0.0, 1.0), al)
                rel[name] = (a, su, tu, uidx)
            else:
                rel[name] = (al, su, tu, uidx)
        bt = {k: betas[k].clamp(min=0.0) * sgn[k] for k in betas}
        record: dict | None = {} if return_coeffs else None
        lam_in, const = backsub(g, g.output_name, lam0, rel, bt, record)
        val = concretise(lam_in, const, xlo, xhi)
        with torch.no_grad():
            better = val > best
            best = torch.where(better, val, best)
            if return_coeffs and best_coeffs is not None:
                bm = better[:, :m]
                for k, v in record.items():
                    w = bm.reshape(*bm.shape, *([1] * (v.dim() - 2)))
                    best_coeffs[k] = torch.where(w, v[:, :m].detach(), best_coeffs[k])
        if it == iters:
            break
        grads = torch.autograd.grad(-val.sum(), params, allow_unused=True)
        grads = tuple(torch.zeros_like(p) if g is None else g for p, g in zip(params, grads, strict=True))
        with torch.no_grad():
            opt.step(grads)
            for a in alphas.values():
                a.clamp_(0.0, 1.0)
            for b in betas.values():
                b.clamp_(min=0.0)
    return (best, best_coeffs, {k: v.detach() for k, v in alphas.items()},
            {k: v.detach() for k, v in betas.items()}, why)
