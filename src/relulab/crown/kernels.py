"""The numeric kernels of the bound propagation: ReLU relaxation, back-substitution
through a :class:`~relulab.crown.graph.BoundGraph`, concretisation over boxes, and the
chunked refinement of one layer's pre-activation bounds.

Example:
    >>> import torch
    >>> al, su, tu, un = relaxation(torch.tensor([-1.0]), torch.tensor([1.0]))
    >>> al.tolist(), su.tolist(), tu.tolist()
    ([1.0], [0.5], [0.5])
"""

from __future__ import annotations

from typing import Any

from ..errors import require
from ..limits import ResourceLimitError, memory_budget
from .graph import BoundGraph
from .ops import Relu, numel

__all__ = ["relaxation", "concretise", "CHUNK_BYTES"]

# one back-substitution chunk may hold at most this many bytes of coefficients (it is
# also capped by a fraction of the memory budget): big enough to keep torch's convolution
# kernels busy, small enough to leave room for several live chunks in residual graphs
CHUNK_BYTES = 128 * 2**20
# neurons of a layer's first chunk under a deadline (then doubling up to the memory cap)
FIRST_ROWS = 16
# concretise: up to this many rows per sub-problem, products and sums instead of bmm
# (measured on 512 x 3072 inputs, float32, one thread: 10 ms against 17.5 ms at 1 row;
# bmm wins from a few hundred rows: 13.5 ms against 38 ms at 8 x 256)
FEW_ROWS = 4
# live coefficient tensors per chunk (pending branches of residual graphs, temporaries)
LIVE_FACTOR = 4


def relaxation(lo: Any, hi: Any) -> tuple[Any, Any, Any, Any]:
    """CROWN's ReLU relaxation from bounds (lo, hi) (torch tensors): (lower slope, upper
    slope, upper intercept, unstable mask) with ``al*z <= relu(z) <= su*z + tu``.

    Example:
        >>> import torch
        >>> al, su, tu, u = relaxation(torch.tensor([-1.0, 1.0]), torch.tensor([3.0, 2.0]))
        >>> al.tolist(), su.tolist(), tu.tolist(), u.tolist()
        ([1.0, 1.0], [0.75, 1.0], [0.75, 0.0], [True, False])
    """
    torch = require("torch", "torch")
    active = lo >= 0
    unstable = (lo < 0) & (hi > 0)
    # su = hi / (hi - lo) and tu = -lo hi / (hi - lo), written as 1 / (1 - lo / hi) and
    # hi / (1 - hi / lo): hi - lo overflows for bounds near the float range (su was 0 and
    # the line relu <= 0) and lo * hi underflows near 1e-160 (tu was 0, below relu)
    h = torch.where(unstable, hi, torch.ones_like(hi))
    lneg = torch.where(unstable, lo, -torch.ones_like(lo))
    su = torch.where(active, torch.ones_like(lo), torch.where(unstable, 1.0 / (1.0 - lneg / h), torch.zeros_like(lo)))
    tu = torch.where(unstable, h / (1.0 - h / lneg), torch.zeros_like(lo))
    al = torch.where(active, torch.ones_like(lo), torch.where(unstable, (hi >= -lo).to(lo.dtype),
                                                             torch.zeros_like(lo)))
    return al, su, tu, unstable


def backsub(g: BoundGraph, start: str, lam: Any, relax: dict, beta: dict | None = None,
             record: dict | None = None) -> tuple[Any, Any]:
    """Lower-bound ``lam . start`` by a linear function of the input: returns the input
    coefficients (N, R, *input_shape) and the constant (N, R).  ``relax``: per ReLU
    (lower slope broadcastable to (N, R, *shape), upper slope, upper intercept), each
    (N, *shape); ``beta``: per ReLU the term subtracted from the pre-activation's
    coefficient (beta * split sign); ``record``: filled with the coefficient on each
    ReLU's output."""
    N, R = lam.shape[:2]
    const = lam.new_zeros(N, R)
    pending = {start: lam}
    for name in reversed(g.ancestors(start)):
        lam = pending.pop(name, None)
        if lam is None:
            continue
        node = g.by_name[name]
        if name == g.input_name:
            return lam, const
        if isinstance(node.op, Relu):
            if record is not None:
                record[name] = lam
            new, c = relu_back(lam, relax[name])
            if c is not None:
                const = const + c
            if beta is not None and name in beta:
                new = new - beta[name]
            outs = [new]
        else:
            outs, c = node.op.backward(lam, [g.by_name[i].shape for i in node.inputs])
            if c is not None:
                const = const + c
        for i, v in zip(node.inputs, outs, strict=True):
            pending[i] = pending[i] + v if i in pending else v
    raise AssertionError("the input was not reached")


def relu_back(lam: Any, rx: tuple) -> tuple[Any, Any]:
    """Coefficients on a ReLU's input of the lower relaxation of ``lam . relu(z)`` and the
    constant it adds.  Stable neurons (slope 0 or 1) take one multiplication; only the
    columns unstable in some sub-problem (``uidx``) need the sign-dependent choice."""
    al, su, tu, uidx = rx
    N, R = lam.shape[:2]
    flat = lam.reshape(N, R, -1)
    n = flat.shape[2]
    if uidx.numel() == 0:
        return (flat * su.reshape(N, 1, -1)).reshape(lam.shape), None
    if 2 * uidx.numel() > n:
        # mostly unstable: the sign-dependent choice on every column is cheaper than gathers
        alf = al.reshape(al.shape[0], al.shape[1], -1)
        new = (flat * alf).where(flat > 0, flat * su.reshape(N, 1, -1))
        const = (flat.clamp(max=0) @ tu.reshape(N, -1, 1)).squeeze(-1)
        return new.reshape(lam.shape), const
    new = flat * su.reshape(N, 1, -1)
    lu = flat.index_select(2, uidx)
    alu = al.reshape(al.shape[0], al.shape[1], -1).index_select(2, uidx)
    suu = su.reshape(N, 1, -1).index_select(2, uidx)
    tuu = tu.reshape(N, -1).index_select(1, uidx)
    new.index_copy_(2, uidx, (lu * alu).where(lu > 0, lu * suu))  # new is a fresh tensor
    const = (lu.clamp(max=0) @ tuu.unsqueeze(-1)).squeeze(-1)
    return new.reshape(lam.shape), const


def concretise(lam_in: Any, const: Any, lo: Any, hi: Any) -> Any:
    """min over the boxes of lam . x + const: (N, R), as lam . centre - |lam| . radius.

    Example:
        >>> import torch
        >>> lam = torch.tensor([[[1.0, -2.0]]], dtype=torch.float64)
        >>> lo, hi = torch.zeros(1, 2, dtype=torch.float64), torch.ones(1, 2, dtype=torch.float64)
        >>> concretise(lam, torch.tensor([[0.5]], dtype=torch.float64), lo, hi).tolist()
        [[-1.5]]
    """
    N = lo.shape[0]
    flat = lam_in.reshape(N, lam_in.shape[1], -1)
    if flat.shape[1] <= FEW_ROWS:
        # few rows per sub-problem (branch and bound: one): bmm would run N tiny
        # matrix-vector products, 1.7-2.2x slower (forward and backward) than this
        c = ((lo + hi) / 2).reshape(N, 1, -1)
        r = ((hi - lo) / 2).reshape(N, 1, -1)
        return const + (flat * c).sum(-1) - (flat.abs() * r).sum(-1)
    c = ((lo + hi) / 2).reshape(N, -1, 1)
    r = ((hi - lo) / 2).reshape(N, -1, 1)
    return const + (flat @ c).squeeze(-1) - (flat.abs() @ r).squeeze(-1)


def chunk_rows(g: BoundGraph, start: str, N: int, itemsize: int) -> int:
    """How many back-substitution rows per sample fit in one chunk."""
    biggest = max(numel(g.by_name[n].shape) for n in g.ancestors(start))
    per_row = N * biggest * itemsize * LIVE_FACTOR
    budget = memory_budget()
    if per_row > budget:
        raise ResourceLimitError(
            f"bounding '{start}' needs {per_row / 2**30:.3g} GB for a single row per sub-problem; "
            f"the memory budget is {budget / 2**30:.3g} GB (fewer sub-problems, or set RELULAB_MEMORY_GB)")
    return max(1, int(min(CHUNK_BYTES, budget // 8) // per_row))


def refine(g: BoundGraph, p: str, plo: Any, phi: Any, mask: Any, relax: dict, lo: Any, hi: Any,
            late: Any = None) -> bool:
    """Tighten (in place) the bounds of pre-activation node ``p`` where ``mask`` (N, n
    flat) by back-substitution, chunked over the neurons unstable in any sub-problem.
    Returns False when ``late()`` stopped it between chunks (the rest keep their bounds)."""
    torch = require("torch", "torch")
    N = plo.shape[0]
    S = g.by_name[p].shape
    flo, fhi = plo.reshape(N, -1), phi.reshape(N, -1)
    idx = torch.nonzero(mask.any(0)).flatten()
    if idx.numel() == 0:
        return True
    need = mask.any(1)
    if not bool(need.all()):
        # only the sub-problems with something to tighten (children reusing their parent's
        # bounds have nothing here): back-substitute for those rows of the batch alone
        sel = torch.nonzero(need).flatten()
        sub = {k: (a[sel] if a.shape[0] == N else a, su[sel], tu[sel], u) for k, (a, su, tu, u) in relax.items()}
        slo, shi = plo[sel].clone(), phi[sel].clone()
        done = refine(g, p, slo, shi, mask[sel], sub, lo[sel], hi[sel], late)
        plo[sel], phi[sel] = slo, shi
        return done
    rows = max(1, chunk_rows(g, p, N, plo.element_size()) // 2)
    n = flo.shape[1]
    # under a deadline the chunks start small and double (the deadline is checked between
    # chunks: a first full-size chunk could run seconds past it on a large graph)
    cur = rows if late is None else min(rows, FIRST_ROWS)
    s = 0
    while s < idx.numel():
        if s > 0 and late is not None and late():
            return False
        ic = idx[s : s + cur]
        s += cur
        cur = min(rows, 2 * cur)
        k = ic.numel()
        lam = plo.new_zeros(N, 2 * k, n)
        ar = torch.arange(k, device=plo.device)
        lam[:, ar, ic] = 1.0
        lam[:, k + ar, ic] = -1.0
        lam_in, const = backsub(g, p, lam.reshape(N, 2 * k, *S), relax)
        val = concretise(lam_in, const, lo, hi)
        m = mask[:, ic]
        olo, ohi = flo[:, ic], fhi[:, ic]
        flo[:, ic] = torch.where(m, torch.maximum(olo, val[:, :k]), olo)
        fhi[:, ic] = torch.where(m, torch.minimum(ohi, -val[:, k:]), ohi)
    return True


# --------------------------------------------------------------------------- driver
