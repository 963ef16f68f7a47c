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

from typing import Any

from ..errors import require
from ..limits import memory_budget
from .kernels import backsub, concretise, relaxation
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
            # p -= lr (m / c1) / (sqrt(v / c2) + eps), with one temporary instead of six
            # (the intermediate slopes of a ResNet are large; these passes are memory-bound)
            den = v.sqrt().div_(c2**0.5).add_(ADAM_EPS)
            p.addcdiv_(m, den, value=-self.lr / c1)


def _one_hot_rows(ref: Any, B: int, n: int, idx: Any) -> Any:
    """Rows e_i and -e_i (i in idx) of shape (B, 2K, n)."""
    torch = require("torch", "torch")
    K = idx.numel()
    lam = ref.new_zeros(B, 2 * K, n)
    ar = torch.arange(K, device=ref.device)
    lam[:, ar, idx] = 1.0
    lam[:, K + ar, idx] = -1.0
    return lam


def optimise(g, lam0, relax, unstable, signs, xlo, xhi, val0, coeffs0, warm, iters, lr, late, m,
             return_coeffs, inter=None, stop=None, keep=None, beta_radius=None):
    """alpha (and beta) optimisation of the final bound by projected Adam.

    ``inter`` (optional): per ReLU whose unstable neurons are re-bounded at every step
    (intermediate alpha-CROWN) ``(input node, fixed lo, fixed hi (B, n), columns idx,
    mask (B, K), split signs (B, n) or None)``; each such layer gets its own slopes of
    every earlier ReLU.  Returns the best bound per row, its coefficients, the final
    slopes and multipliers, the tightest intermediate bounds seen ({name: (lo, hi)}), and
    a reason when cut short.  ``stop`` (optional): called as ``stop(best, it)`` after each
    step; True ends the optimisation early (the best bounds so far are kept).  ``keep``
    (optional dict): receives ``keep["lam_in"]``, the input coefficients of the last step."""
    torch = require("torch", "torch")
    B, R = lam0.shape[:2]
    item = lam0.element_size()
    size = {n.name: numel(n.shape) for n in g.nodes}
    # the autograd graph keeps every coefficient tensor of one back-substitution
    need = sum(size.values()) * B * R * item * 3
    if need > memory_budget():
        return val0, coeffs0, {}, {}, {}, (f"memory: alpha optimisation needs {need / 2**30:.3g} GB; "
                                           "CROWN bounds returned")
    why = ""
    if inter:
        need_i = sum(sum(size[a] for a in g.ancestors(v[0])) * B * 2 * v[3].numel() * item * 4
                     for v in inter.values())
        if need + need_i > memory_budget():
            inter, why = None, (f"memory: intermediate alpha needs {(need + need_i) / 2**30:.3g} GB; "
                                "intermediate bounds kept from CROWN")
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
    # intermediate slopes: target layer -> earlier ReLU -> (B, 2K, *shape)
    ialphas: dict[str, dict[str, Any]] = {}
    tight: dict[str, tuple[Any, Any]] = {}
    for r, (p, _, _, idx, _, _, _) in (inter or {}).items():
        anc = set(g.ancestors(p))
        ialphas[r] = {}
        for j, (al, _, _, _) in relax.items():
            if j in anc and bool(unstable[j].any()):
                a = al.expand(B, 2 * idx.numel(), *al.shape[2:]).clone().requires_grad_(True)
                ialphas[r][j] = a
                params.append(a)
    best = val0.clone()
    best_coeffs = coeffs0
    if not params:
        return best, best_coeffs, alphas, betas, tight, why
    opt = Adam(params, lr)
    sgn = {k: s.to(lam0.dtype).unsqueeze(1) for k, s in signs.items()}
    for it in range(iters + 1):
        if late():
            why = "deadline: alpha optimisation stopped early"
            break
        rel, cur = {}, {}
        for name, (al, su, tu, uidx) in relax.items():
            un = unstable[name]
            al = al.squeeze(1)
            if name in ialphas:
                p, flo, fhi, idx, msk, sf, rad = inter[name]
                K = idx.numel()
                shape = un.shape[1:]
                relj = {}
                for j, (al_j, su_j, tu_j, un_j) in cur.items():
                    a = al_j.unsqueeze(1)
                    if j in ialphas[name]:
                        a = torch.where(un_j.unsqueeze(1), ialphas[name][j].clamp(0.0, 1.0), a)
                    relj[j] = (a, su_j, tu_j, relax[j][3])
                lam = _one_hot_rows(xlo, B, flo.shape[1], idx).reshape(B, 2 * K, *shape)
                v = concretise(*backsub(g, p, lam, relj), xlo, xhi)
                # their rounding, outward: a sign is decided only where it is proved
                v = v - torch.cat([rad, rad], 1)
                lo_i = torch.where(msk, torch.maximum(flo[:, idx], v[:, :K]), flo[:, idx])
                hi_i = torch.where(msk, torch.minimum(fhi[:, idx], -v[:, K:]), fhi[:, idx])
                lo, hi = flo.index_copy(1, idx, lo_i), fhi.index_copy(1, idx, hi_i)
                if sf is not None:
                    lo = torch.where(sf > 0, lo.clamp(min=0), lo)
                    hi = torch.where(sf < 0, hi.clamp(max=0), hi)
                hi = torch.maximum(hi, lo)
                al, su, tu, un = relaxation(lo.reshape(B, *shape), hi.reshape(B, *shape))
                with torch.no_grad():
                    t_lo, t_hi = tight.get(name, (lo.detach(), hi.detach()))
                    tight[name] = (torch.maximum(t_lo, lo.detach()), torch.minimum(t_hi, hi.detach()))
            cur[name] = (al, su, tu, un)
            a = al.unsqueeze(1)
            if name in alphas:
                a = torch.where(un.unsqueeze(1), alphas[name].clamp(0.0, 1.0), a)
            rel[name] = (a, su, tu, uidx)
        bt = {k: betas[k].clamp(min=0.0) * sgn[k] for k in betas}
        record: dict | None = {} if return_coeffs else None
        lam_in, const = backsub(g, g.output_name, lam0, rel, bt, record)
        val = concretise(lam_in, const, xlo, xhi)
        if keep is not None:
            keep["lam_in"] = lam_in.detach()
        with torch.no_grad():
            # each step's bound less the rounding of its beta terms (beta_radius): the best
            # of many steps otherwise picks the rounding that happens to go up (2.7e-4
            # above the exact minimum behind a split neuron with weights of 2^42)
            score = val if beta_radius is None or not bt else val - beta_radius(bt)
            better = score > best
            best = torch.where(better, score, best)
            if return_coeffs and best_coeffs is not None:
                bm = better[:, :m]
                for k, v in record.items():
                    w = bm.reshape(*bm.shape, *([1] * (v.dim() - 2)))
                    best_coeffs[k] = torch.where(w, v[:, :m].detach(), best_coeffs[k])
        if it == iters or (stop is not None and stop(best, it)):
            break
        grads = torch.autograd.grad(-val.sum(), params, allow_unused=True)
        grads = tuple(torch.zeros_like(q) if d is None else d for q, d in zip(params, grads, strict=True))
        with torch.no_grad():
            opt.step(grads)
            for q in params:
                if any(q is b for b in betas.values()):
                    q.clamp_(min=0.0)
                else:
                    q.clamp_(0.0, 1.0)
    return (best, best_coeffs, {k: v.detach() for k, v in alphas.items()},
            {k: v.detach() for k, v in betas.items()}, tight, why)
