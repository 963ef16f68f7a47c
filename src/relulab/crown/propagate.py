"""Linear bound propagation on a :class:`~relulab.crown.graph.BoundGraph`, batched over
sub-problems: interval (IBP), CROWN back-substitution, alpha-CROWN and beta-CROWN.

``bound(bg, lo, hi, C)`` bounds ``C f(x)`` over the boxes ``[lo, hi]`` (one per
sub-problem).  Each ReLU's pre-activation is bounded first by intervals, then, for the
neurons the intervals leave unstable, by back-substitution to the input (chunked over
neurons so that memory stays proportional to the activations); the output rows are
bounded by one more back-substitution.  ReLU relaxation: the upper line through
``(lo, 0)`` and ``(hi, hi)``; lower slope 1 when ``hi >= -lo`` else 0 (CROWN's choice,
the same as :func:`relulab.bounds.relax_relu`) or, with ``method="alpha"``, an
optimised slope in [0, 1] per neuron and output row (projected Adam, starting from
CROWN's slopes; the best bound seen is kept, so it is never looser than CROWN).

Splits (``{relu name: array of -1/0/+1}``) restrict a sub-problem to ``z <= 0`` (-1)
or ``z >= 0`` (+1) for chosen neurons: their bounds are clamped (the neuron becomes
stable) and, with ``method="alpha"``, the constraints also enter the back-substitution
through Lagrange multipliers ``beta >= 0`` optimised with the slopes (beta-CROWN).
A sub-problem whose splits contradict its bounds is empty: ``infeasible`` is True and
its lower bounds are +inf.

Every bound is sound for any slopes and multipliers; floating point rounding is not
accounted for (float64 by default): callers that turn a bound into a proof keep a
margin (:mod:`relulab.tolerance`).

Example:
    >>> from relulab import Network
    >>> from relulab.crown import BoundGraph
    >>> bg = BoundGraph.from_network(Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]]))
    >>> gb = bound(bg, [[-1.0]], [[2.0]])          # |x| on [-1, 2]
    >>> gb.lower.round(6).tolist(), gb.upper.round(6).tolist(), gb.status
    ([[-1.0]], [[2.0]], 'complete')
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import RelulabError, require
from ..limits import ResourceLimitError, memory_budget
from ..results import Result
from .graph import BoundGraph
from .ops import Relu, numel

__all__ = ["bound", "GraphBounds", "WarmStart", "METHODS"]

METHODS = ("ibp", "crown", "alpha")
# one back-substitution chunk may hold at most this many bytes of coefficients (it is
# also capped by a fraction of the memory budget): big enough to keep torch's convolution
# kernels busy, small enough to leave room for several live chunks in residual graphs
CHUNK_BYTES = 128 * 2**20
ADAM_EPS = 1e-8   # tol: Adam's usual denominator guard (a step size detail, not a tolerance)
# live coefficient tensors per chunk (pending branches of residual graphs, temporaries)
LIVE_FACTOR = 4


class BoundError(RelulabError):
    """Bad arguments to :func:`bound`."""


@dataclass
class WarmStart:
    """Optimised state a child sub-problem can start from: alpha slopes and beta
    multipliers per ReLU (``(B, R, *shape)`` tensors), the pre-activation bounds
    (intersected with the child's: pass it only to sub-problems inside the parent's
    domain), and the splits and boxes they were computed with: a child on the same box
    whose splits agree with its parent's on every earlier ReLU layer reuses the parent's
    bounds of a layer instead of recomputing them (they would come out the same).

    Example:
        >>> import torch
        >>> w = WarmStart({}, {}, {"r": (torch.zeros(2, 3), torch.ones(2, 3))})
        >>> w.take([1, 1, 0]).pre["r"][0].shape
        torch.Size([3, 3])
    """

    alphas: dict[str, Any]
    betas: dict[str, Any]
    pre: dict[str, tuple[Any, Any]]
    splits: dict[str, Any] = field(default_factory=dict)
    box: tuple[Any, Any] | None = None

    @property
    def batch(self) -> int | None:
        for v in self.pre.values():
            return int(v[0].shape[0])
        for v in list(self.alphas.values()) + list(self.betas.values()):
            return int(v.shape[0])
        return None

    def take(self, index: Any) -> WarmStart:
        """The state of the sub-problems ``index`` (a list/array of batch indices;
        repeating an index duplicates it, e.g. for both children of a split)."""
        torch = require("torch", "torch")
        ix = torch.as_tensor(np.asarray(index, dtype=np.int64))

        def t(v: Any) -> Any:
            return v[ix.to(v.device)]

        return WarmStart(
            {k: t(v) for k, v in self.alphas.items()},
            {k: t(v) for k, v in self.betas.items()},
            {k: (t(a), t(b)) for k, (a, b) in self.pre.items()},
            {k: t(v) for k, v in self.splits.items()},
            None if self.box is None else (t(self.box[0]), t(self.box[1])),
        )


@dataclass(frozen=True)
class GraphBounds(Result):
    """Bounds of ``C f(x)`` per sub-problem (see the module docstring).

    ``lower``/``upper`` (B, m) numpy (``upper`` None when not asked); ``pre``: per ReLU
    its pre-activation bounds (lo, hi), numpy (B, *shape), after the splits' clamps;
    ``coeffs``: per ReLU the coefficients (B, m, *shape) of the final lower bound on the
    ReLU's output (for branching heuristics), or None; ``warm``: a :class:`WarmStart`;
    ``infeasible`` (B,): the splits contradict the bounds (the sub-domain is empty);
    ``status``: "complete", or "partial" when the deadline or the memory budget cut the
    computation short (the bounds are sound but looser; ``reason`` says why).

    Example:
        >>> from relulab import Network
        >>> from relulab.crown import BoundGraph
        >>> gb = bound(BoundGraph.from_network(Network([[[2.0]]], [[1.0]])), [[0.0]], [[1.0]])
        >>> gb.to_dict()["lower"], gb.method
        ([[1.0]], 'crown')
    """

    lower: np.ndarray
    upper: np.ndarray | None
    pre: dict[str, tuple[np.ndarray, np.ndarray]] = field(repr=False)
    coeffs: dict[str, np.ndarray] | None = field(repr=False)
    warm: WarmStart | None = field(repr=False)
    infeasible: np.ndarray
    method: str
    status: str
    reason: str = ""

    def to_dict(self) -> dict:
        return {
            "lower": self.lower.tolist(),
            "upper": None if self.upper is None else self.upper.tolist(),
            "infeasible": self.infeasible.tolist(),
            "method": self.method,
            "status": self.status,
            "reason": self.reason,
        }


# --------------------------------------------------------------------------- inputs
def _as_batch(a: Any, shape: tuple[int, ...], what: str) -> np.ndarray:
    if hasattr(a, "detach"):
        a = a.detach().cpu().numpy()
    try:
        A = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        raise BoundError(f"{what}: not an array of numbers") from None
    n = numel(shape)
    if A.shape == shape or (A.ndim == 1 and A.size == n):
        A = A.reshape(1, *shape)
    elif A.ndim >= 1 and (A.shape[1:] == shape or (A.ndim == 2 and A.shape[1] == n)) and A.shape[0] > 0:
        A = A.reshape(A.shape[0], *shape)
    else:
        raise BoundError(f"{what}: shape {A.shape} does not fit the input shape {shape} "
                         "(give (B, *input_shape) or (B, input_dim))")
    if not np.all(np.isfinite(A)):
        raise BoundError(f"{what}: contains NaN or infinite values")
    return A


def _spec(C: Any, B: int, n_out: int) -> np.ndarray:
    if C is None:
        return np.broadcast_to(np.eye(n_out), (B, n_out, n_out))
    if hasattr(C, "detach"):
        C = C.detach().cpu().numpy()
    Cm = np.asarray(C, dtype=np.float64)
    if Cm.ndim == 1:
        Cm = Cm[None]
    if Cm.ndim == 2 and Cm.shape[1] == n_out and Cm.shape[0] > 0:
        Cm = np.broadcast_to(Cm, (B, *Cm.shape))
    elif not (Cm.ndim == 3 and Cm.shape[0] == B and Cm.shape[2] == n_out and Cm.shape[1] > 0):
        raise BoundError(f"C: shape {Cm.shape} is neither (m, {n_out}) nor ({B}, m, {n_out})")
    if not np.all(np.isfinite(Cm)):
        raise BoundError("C: contains NaN or infinite values")
    return Cm


def _splits(splits: dict | None, bg: BoundGraph, B: int) -> dict[str, np.ndarray]:
    if not splits:
        return {}
    if not isinstance(splits, dict):
        raise BoundError("splits: expected a dict relu name -> array of -1/0/+1")
    shapes = dict(bg.relus)
    out = {}
    for name, s in splits.items():
        if name not in shapes:
            raise BoundError(f"splits: unknown ReLU '{name}' (known: {', '.join(list(shapes)[:8])}...)")
        if hasattr(s, "detach"):
            s = s.detach().cpu().numpy()
        S = np.asarray(s)
        sh = shapes[name]
        if S.shape == sh and B == 1:
            S = S[None]
        if S.shape[:1] != (B,) or numel(S.shape[1:]) != numel(sh):
            raise BoundError(f"splits['{name}']: shape {S.shape} does not fit ({B}, *{sh})")
        if not np.all(np.isin(S, (-1, 0, 1))):
            raise BoundError(f"splits['{name}']: values must be -1, 0 or +1")
        if np.any(S):
            out[name] = S.reshape(B, *sh).astype(np.int8)
    return out


# --------------------------------------------------------------------------- kernels
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
    denom = torch.where(unstable, hi - lo, torch.ones_like(lo))
    su = torch.where(active, torch.ones_like(lo), torch.where(unstable, hi / denom, torch.zeros_like(lo)))
    tu = torch.where(unstable, -lo * hi / denom, torch.zeros_like(lo))
    al = torch.where(active, torch.ones_like(lo), torch.where(unstable, (hi >= -lo).to(lo.dtype),
                                                             torch.zeros_like(lo)))
    return al, su, tu, unstable


def _backsub(g: BoundGraph, start: str, lam: Any, relax: dict, beta: dict | None = None,
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
            new, c = _relu_back(lam, relax[name])
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


def _relu_back(lam: Any, rx: tuple) -> tuple[Any, Any]:
    """Coefficients on a ReLU's input of the lower relaxation of ``lam . relu(z)`` and the
    constant it adds.  Stable neurons (slope 0 or 1) take one multiplication; only the
    columns unstable in some sub-problem (``uidx``) need the sign-dependent choice."""
    al, su, tu, uidx = rx
    N, R = lam.shape[:2]
    flat = lam.reshape(N, R, -1)
    n = flat.shape[2]
    if uidx.numel() == 0:
        return (flat * su.reshape(N, 1, -1)).view(lam.shape), None
    if 2 * uidx.numel() > n:
        # mostly unstable: the sign-dependent choice on every column is cheaper than gathers
        alf = al.reshape(al.shape[0], al.shape[1], -1)
        new = (flat * alf).where(flat > 0, flat * su.reshape(N, 1, -1))
        const = (flat.clamp(max=0) @ tu.reshape(N, -1, 1)).squeeze(-1)
        return new.view(lam.shape), const
    new = flat * su.reshape(N, 1, -1)
    lu = flat.index_select(2, uidx)
    alu = al.reshape(al.shape[0], al.shape[1], -1).index_select(2, uidx)
    suu = su.reshape(N, 1, -1).index_select(2, uidx)
    tuu = tu.reshape(N, -1).index_select(1, uidx)
    new = new.index_copy(2, uidx, (lu * alu).where(lu > 0, lu * suu))
    const = (lu.clamp(max=0) @ tuu.unsqueeze(-1)).squeeze(-1)
    return new.view(lam.shape), const


def _concretise(lam_in: Any, const: Any, lo: Any, hi: Any) -> Any:
    """min over the boxes of lam . x + const: (N, R), as lam . centre - |lam| . radius."""
    N = lo.shape[0]
    c = ((lo + hi) / 2).reshape(N, -1, 1)
    r = ((hi - lo) / 2).reshape(N, -1, 1)
    flat = lam_in.reshape(N, lam_in.shape[1], -1)
    return const + (flat @ c).squeeze(-1) - (flat.abs() @ r).squeeze(-1)


def _chunk_rows(g: BoundGraph, start: str, N: int, itemsize: int) -> int:
    """How many back-substitution rows per sample fit in one chunk."""
    biggest = max(numel(g.by_name[n].shape) for n in g.ancestors(start))
    per_row = N * biggest * itemsize * LIVE_FACTOR
    budget = memory_budget()
    if per_row > budget:
        raise ResourceLimitError(
            f"bounding '{start}' needs {per_row / 2**30:.3g} GB for a single row per sub-problem; "
            f"the memory budget is {budget / 2**30:.3g} GB (fewer sub-problems, or set RELULAB_MEMORY_GB)")
    return max(1, int(min(CHUNK_BYTES, budget // 8) // per_row))


def _refine(g: BoundGraph, p: str, plo: Any, phi: Any, mask: Any, relax: dict, lo: Any, hi: Any,
            late: Any = None) -> bool:
    """Tighten (in place) the bounds of pre-activation node ``p`` where ``mask`` (N, n
    flat) by back-substitution, chunked over the neurons unstable in any sub-problem.
    Returns False when ``late()`` stopped it between chunks (the rest keep their bounds)."""
    torch = require("torch", "torch")
    N = plo.shape[0]
    S = g.by_name[p].shape
    flo, fhi = plo.view(N, -1), phi.view(N, -1)
    idx = torch.nonzero(mask.any(0)).flatten()
    if idx.numel() == 0:
        return True
    rows = max(1, _chunk_rows(g, p, N, plo.element_size()) // 2)
    n = flo.shape[1]
    for s in range(0, idx.numel(), rows):
        if s > 0 and late is not None and late():
            return False
        ic = idx[s : s + rows]
        k = ic.numel()
        lam = plo.new_zeros(N, 2 * k, n)
        ar = torch.arange(k, device=plo.device)
        lam[:, ar, ic] = 1.0
        lam[:, k + ar, ic] = -1.0
        lam_in, const = _backsub(g, p, lam.view(N, 2 * k, *S), relax)
        val = _concretise(lam_in, const, lo, hi)
        m = mask[:, ic]
        olo, ohi = flo[:, ic], fhi[:, ic]
        flo[:, ic] = torch.where(m, torch.maximum(olo, val[:, :k]), olo)
        fhi[:, ic] = torch.where(m, torch.minimum(ohi, -val[:, k:]), ohi)
    return True


# --------------------------------------------------------------------------- driver
def bound(
    bg: BoundGraph,
    lo: Any,
    hi: Any,
    C: Any = None,
    *,
    method: str = "crown",
    splits: dict | None = None,
    warm: WarmStart | None = None,
    iters: int = 20,
    lr: float = 0.1,
    deadline: float | None = None,
    return_coeffs: bool = False,
    upper: bool = True,
    dtype: str = "float64",
    device: str = "cpu",
) -> GraphBounds:
    """Bounds of ``C f(x)`` over each box ``[lo[b], hi[b]]`` (see the module docstring).

    Args:
        bg: the graph.
        lo, hi: (B, *input_shape) or (B, input_dim) (a single box may omit B).
        C: (m, n_out) or (B, m, n_out); default the identity.
        method: "ibp", "crown" or "alpha" (alpha-CROWN; with splits also beta-CROWN).
        splits: {relu name: (B, *shape) array of -1 (z <= 0), 0 (free), +1 (z >= 0)}.
        warm: a :class:`WarmStart` (e.g. ``parent.warm.take(idx)``) to start from.
        iters, lr: alpha/beta optimisation steps and Adam step size.
        deadline: a ``time.monotonic()`` value; past it the computation stops refining and
            returns sound, looser bounds marked ``status="partial"``.
        return_coeffs: fill ``coeffs`` (coefficients of the lower bound on each ReLU output).
        upper: also bound ``-C f(x)`` (``upper``); False halves the work.
        dtype: "float64" or "float32"; device: "cpu" or "cuda".

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> from relulab.crown import BoundGraph
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])    # |x|
        >>> bg = BoundGraph.from_network(net)
        >>> gb = bound(bg, [[-1.0]], [[2.0]], method="alpha", iters=30)
        >>> bool(gb.lower[0, 0] <= 0.0 and gb.lower[0, 0] >= -1.0)
        True
        >>> s = {"relu0": np.array([[1, -1]], dtype=np.int8)}               # x >= 0
        >>> bound(bg, [[-1.0]], [[2.0]], splits=s).lower.round(6).tolist()   # CROWN: x >= -1
        [[-1.0]]
        >>> g = bound(bg, [[-1.0]], [[2.0]], splits=s, method="alpha")        # beta: x >= 0
        >>> bool(-1e-3 < g.lower[0, 0] <= 0.0)
        True
    """
    torch = require("torch", "torch")
    if method not in METHODS:
        raise BoundError(f"method: {method!r} is not one of {', '.join(METHODS)}")
    if not isinstance(bg, BoundGraph):
        raise BoundError(f"bg: expected a BoundGraph, got {type(bg).__name__}")
    if dtype not in ("float64", "float32"):
        raise BoundError(f"dtype: {dtype!r} is not float64 or float32")
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        raise BoundError("device: cuda was asked for but torch sees no GPU")
    if int(iters) < 0 or not lr > 0:
        raise BoundError(f"iters ({iters}) must be >= 0 and lr ({lr}) > 0")
    g = bg.converted(dtype, str(device))
    dt = g.torch_dtype()
    shape = g.input_shape
    Lo = _as_batch(lo, shape, "lo")
    Hi = _as_batch(hi, shape, "hi")
    if Lo.shape != Hi.shape:
        raise BoundError(f"lo and hi: shapes {Lo.shape} and {Hi.shape} differ")
    if np.any(Lo > Hi):
        raise BoundError("lo, hi: an empty box (lo > hi somewhere)")
    B = Lo.shape[0]
    Cm = _spec(C, B, g.output_dim)
    m = Cm.shape[1]
    sp = _splits(splits, g, B)
    if warm is not None and warm.batch not in (None, B):
        raise BoundError(f"warm: holds {warm.batch} sub-problems, the boxes are {B}")

    def tens(a: np.ndarray) -> Any:
        return torch.as_tensor(np.array(a), dtype=dt, device=device)

    def late() -> bool:
        return deadline is not None and time.monotonic() >= deadline

    status, reason = "complete", ""
    with torch.no_grad():
        xlo, xhi = tens(Lo), tens(Hi)
        iv = {g.input_name: (xlo, xhi)}
        relax: dict[str, tuple[Any, Any, Any]] = {}
        unstable: dict[str, Any] = {}
        pre: dict[str, tuple[Any, Any]] = {}
        signs = {k: torch.as_tensor(v, device=device) for k, v in sp.items()}
        infeasible = torch.zeros(B, dtype=torch.bool, device=device)
        # sub-problems whose box and splits so far equal the warm start's: their bounds of
        # the next layer would come out as the parent's (plain CROWN ignores later splits)
        same = torch.zeros(B, dtype=torch.bool, device=device)
        if warm is not None and warm.box is not None and method != "ibp":
            wlo, whi = (v.to(dtype=dt, device=device).reshape(B, -1) for v in warm.box)
            same = (wlo == xlo.reshape(B, -1)).all(1) & (whi == xhi.reshape(B, -1)).all(1)
        for node in g.nodes[1:]:
            if not isinstance(node.op, Relu):
                iv[node.name] = node.op.ibp(*[iv[i] for i in node.inputs])
                continue
            p = node.inputs[0]
            plo, phi = (t.clone() for t in iv[p])
            if warm is not None and node.name in warm.pre:
                wl, wh = warm.pre[node.name]
                plo = torch.maximum(plo, wl.to(dtype=dt, device=device))
                phi = torch.minimum(phi, wh.to(dtype=dt, device=device))
            s = signs.get(node.name)
            s_flat = None if s is None else s.reshape(B, -1)
            ws = None if warm is None else warm.splits.get(node.name)
            ws = None if ws is None else ws.to(device).reshape(B, -1)
            if method != "ibp":
                mask = ((plo < 0) & (phi > 0)).view(B, -1)
                if s_flat is not None:
                    mask &= s_flat == 0
                if warm is not None and node.name in warm.pre and bool(same.any()):
                    agree = same
                    if ws is not None:
                        agree = agree & ((ws == 0) | (ws == (s_flat if s_flat is not None else 0))).all(1)
                    mask &= ~agree[:, None]
                if late():
                    status, reason = "partial", "deadline: interval bounds for the later layers"
                else:
                    try:
                        if not _refine(g, p, plo, phi, mask, relax, xlo, xhi, late):
                            status, reason = "partial", "deadline: interval bounds for the later layers"
                    except ResourceLimitError as e:
                        status, reason = "partial", f"memory: {e}"
                if ws is not None or s_flat is not None:
                    a = ws if ws is not None else torch.zeros_like(s_flat)
                    b = s_flat if s_flat is not None else torch.zeros_like(ws)
                    same = same & (a == b).all(1)
            if s is not None:
                bad = ((s > 0) & (phi < 0)) | ((s < 0) & (plo > 0))
                infeasible |= bad.view(B, -1).any(1)
                plo = torch.where(s > 0, plo.clamp(min=0), plo)
                phi = torch.where(s < 0, phi.clamp(max=0), phi)
            phi = torch.maximum(phi, plo)  # rounding (or an empty split) can cross them
            pre[node.name] = (plo, phi)
            al, su, tu, un = relaxation(plo, phi)
            uidx = torch.nonzero(un.reshape(B, -1).any(0)).flatten()
            relax[node.name] = (al.unsqueeze(1), su, tu, uidx)
            unstable[node.name] = un
            iv[node.name] = (plo.clamp(min=0), phi.clamp(min=0))

        out_shape = g.by_name[g.output_name].shape
        rows = np.concatenate([Cm, -Cm], 1) if upper else Cm
        R = rows.shape[1]
        lam0 = tens(rows).reshape(B, R, *out_shape)
        coeffs = None
        if method == "ibp":
            olo, ohi = iv[g.output_name]
            val = _concretise(lam0, lam0.new_zeros(B, R), olo, ohi)
        else:
            record: dict | None = {} if return_coeffs else None
            lam_in, const = _backsub(g, g.output_name, lam0, relax, record=record)
            val = _concretise(lam_in, const, xlo, xhi)
            if return_coeffs:
                coeffs = {k: v[:, :m].clone() for k, v in record.items()}

    alphas: dict[str, Any] = {}
    betas: dict[str, Any] = {}
    if method == "alpha" and int(iters) > 0 and not late():
        val, coeffs, alphas, betas, why = _optimise(
            g, lam0, relax, unstable, signs, xlo, xhi, val, coeffs, warm, int(iters), float(lr),
            late, m, return_coeffs)
        if why:
            status, reason = "partial", why
    elif method == "alpha" and int(iters) > 0:
        status, reason = "partial", "deadline: no alpha iterations"

    val = val.detach()
    inf_np = infeasible.cpu().numpy()
    vnp = val.double().cpu().numpy()
    lower = vnp[:, :m].copy()
    up = -vnp[:, m:].copy() if upper else None
    lower[inf_np] = np.inf
    if up is not None:
        up[inf_np] = -np.inf
    return GraphBounds(
        lower=lower,
        upper=up,
        pre={k: (a.double().cpu().numpy(), b.double().cpu().numpy()) for k, (a, b) in pre.items()},
        coeffs=None if coeffs is None else {k: v.double().cpu().numpy() for k, v in coeffs.items()},
        warm=WarmStart(alphas, betas, pre, signs, (xlo, xhi)),
        infeasible=inf_np,
        method=method,
        status=status,
        reason=reason,
    )


class _Adam:
    """Plain Adam (torch.optim's first step costs seconds of lazy imports)."""

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


def _optimise(g, lam0, relax, unstable, signs, xlo, xhi, val0, coeffs0, warm, iters, lr, late, m,
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
    opt = _Adam(params, lr)
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
        lam_in, const = _backsub(g, g.output_name, lam0, rel, bt, record)
        val = _concretise(lam_in, const, xlo, xhi)
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
