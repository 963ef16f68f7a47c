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

Every bound is sound for any slopes and multipliers, and floating point rounding is
accounted for: every pre-activation and output bound is moved outward by its rounding
(:mod:`relulab.crown.rounding`; float64 by default, float32 with its larger unit).

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

from ..errors import RelulabError, is_int_at_least, require
from ..limits import ResourceLimitError
from ..results import Result, to_jsonable
from .graph import BoundGraph
from .kernels import backsub, concretise, refine, relaxation
from .ops import Relu, numel
from .optimise import optimise
from .rounding import SignRounding

__all__ = ["bound", "GraphBounds", "WarmStart", "METHODS", "float32_unsafe"]

METHODS = ("ibp", "crown", "alpha")
# with ``stop_at``: the optimisation ends once the number of sub-problems above their
# target has not grown for STALL_ITERS steps (after at least STALL_MIN steps).  Measured on
# the CIFAR ResNet's branch and bound: the share of children proven stops growing after
# 6-10 of 20 steps; the rest of the steps only polish bounds that stay below the target
STALL_ITERS = 3
STALL_MIN = 5


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
    computation short (the bounds are sound but looser; ``reason`` says why);
    ``minimisers`` (with ``return_minimisers``): (B, m, input_dim) the box corner that
    minimises each row's final linear lower bound (candidate counterexamples for a
    branch and bound; nothing is claimed about them); ``input_terms`` (B, m): the size of
    the terms each row's bound adds up over the input (the scale of its rounding).

    Example:
        >>> from relulab import Network
        >>> from relulab.crown import BoundGraph
        >>> gb = bound(BoundGraph.from_network(Network([[[2.0]]], [[1.0]])), [[0.0]], [[1.0]])
        >>> lower = gb.to_dict()["lower"][0][0]      # 1, moved outward by its rounding
        >>> bool(1.0 - 1e-12 < lower <= 1.0), gb.method
        (True, 'crown')
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
    minimisers: np.ndarray | None = field(default=None, repr=False)
    # (B, m) the size of the input terms each row's final bound adds up (|lam| |x| +
    # |const| of the back-substituted form, doubled for the alpha optimisation): the
    # scale of its rounding; None when no back-substitution ran
    input_terms: np.ndarray | None = field(default=None, repr=False)

    def to_dict(self) -> dict:
        return to_jsonable({
            "lower": self.lower,
            "upper": self.upper,
            "infeasible": self.infeasible,
            "method": self.method,
            "status": self.status,
            "reason": self.reason,
        })


# --------------------------------------------------------------------------- inputs
def _as_batch(a: Any, shape: tuple[int, ...], what: str) -> np.ndarray:
    if hasattr(a, "detach"):
        a = a.detach().cpu().numpy()
    try:
        A = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
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
    try:
        Cm = np.asarray(C, dtype=np.float64)
    except (TypeError, ValueError):
        raise BoundError("C: not an array of numbers") from None
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


def _stall_stop(target: Any, m: int) -> Any:
    """The ``stop(best, it)`` of :func:`bound`'s ``stop_at`` (see STALL_ITERS)."""
    counts: list[int] = []

    def stop(best: Any, it: int) -> bool:
        n = int((best[:, :m] > target).any(1).sum())
        counts.append(n)
        if n == target.shape[0]:
            return True
        return it >= STALL_MIN and len(counts) > STALL_ITERS and n <= counts[-1 - STALL_ITERS]

    return stop


# --------------------------------------------------------------------------- kernels
def _no_nan(lo: Any, hi: Any) -> tuple[np.ndarray, np.ndarray]:
    """Pre-activation bounds as numpy, a NaN (an overflow) widened to no bound: a caller's
    stability test would read NaN as stable."""
    a, b = lo.double().cpu().numpy(), hi.double().cpu().numpy()
    return np.where(np.isnan(a), -np.inf, a), np.where(np.isnan(b), np.inf, b)


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
    opt_deadline: float | None = None,
    return_coeffs: bool = False,
    upper: bool = True,
    intermediate: str = "crown",
    dtype: str = "float64",
    device: str = "cpu",
    stop_at: Any = None,
    return_minimisers: bool = False,
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
        opt_deadline: a ``time.monotonic()`` value at which the alpha/beta optimisation
            alone stops (keeping the best bounds so far; status stays "complete"), e.g.
            to cap the time spent optimising intermediate bounds.
        return_coeffs: fill ``coeffs`` (coefficients of the lower bound on each ReLU output).
        upper: also bound ``-C f(x)`` (``upper``); False halves the work.
        intermediate: "crown" (pre-activation bounds by CROWN, fixed during the alpha
            optimisation) or "alpha" (with ``method="alpha"``: the unstable neurons of every
            layer after the first are re-bounded at every step with their own optimised
            slopes, and the final bound follows the tighter relaxations; slower), or
            "reuse": the pre-activation bounds of ``warm`` (a parent's, valid on the
            child's sub-domain) are kept as they are, clamped by the splits, and only
            layers the warm start lacks are bounded by CROWN; branch and bound on large
            graphs, where re-bounding every layer after a split costs far more than the
            final bound (the splits still enter the final bound through beta).
        dtype: "float64" or "float32" (the bounds then carry float32's rounding, and are
            of the network with its weights rounded to float32: see
            :func:`float32_unsafe`); device: "cpu" or "cuda".
        stop_at: (m,) or (B, m) targets of the lower bounds (e.g. a branch and bound's
            thresholds): the alpha/beta optimisation ends early when every sub-problem
            has a row above its target, or when the number of such sub-problems has not
            grown for ``STALL_ITERS`` steps (after ``STALL_MIN``).  The bounds stay sound
            (the best seen); only their polish below the targets is skipped.
        return_minimisers: fill ``minimisers`` (see :class:`GraphBounds`).

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
    if isinstance(device, torch.device):
        device = str(device)
    if not (isinstance(device, str) and (device == "cpu" or device.startswith("cuda"))):
        raise BoundError(f"device: {device!r} is not 'cpu' or 'cuda' (or 'cuda:N')")
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        raise BoundError("device: cuda was asked for but torch sees no GPU")
    for name, t in (("deadline", deadline), ("opt_deadline", opt_deadline)):
        if t is not None and not (isinstance(t, int | float | np.number) and not isinstance(t, bool) and t == t):
            raise BoundError(f"{name}: expected a time.monotonic() value or None, got {t!r}")
    if warm is not None and not isinstance(warm, WarmStart):
        raise BoundError(f"warm: expected a WarmStart (e.g. parent.warm.take(idx)), got {type(warm).__name__}")
    if intermediate not in ("crown", "alpha", "reuse"):
        raise BoundError(f"intermediate: {intermediate!r} is not crown, alpha or reuse")
    if not is_int_at_least(iters, 0) \
            or not (isinstance(lr, int | float | np.number) and np.isfinite(lr) and lr > 0):
        raise BoundError(f"iters ({iters!r}) must be an integer >= 0 and lr ({lr!r}) a finite number > 0")
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

    def outward(a: Any, down: bool) -> Any:
        """``a`` (numpy or torch) in the engine's type, rounded outward (to nearest, a lower
        end of a float32 box could round up: the bounds were for a smaller box)."""
        a64 = torch.as_tensor(np.array(a, dtype=np.float64)) if isinstance(a, np.ndarray) else a
        a64 = a64.to(dtype=torch.float64, device=device)
        t = a64.to(dt)
        if dt != torch.float64:
            off = (t.double() > a64) if down else (t.double() < a64)
            t = torch.where(off, torch.nextafter(t, torch.full_like(t, -torch.inf if down else torch.inf)), t)
        return t

    def late() -> bool:
        return deadline is not None and time.monotonic() >= deadline

    # how long past the deadline (or past the call, when it comes late) the interval pass
    # may still run (INTERVAL_GRACE of the time given, at least INTERVAL_GRACE_MIN
    # seconds) before its bounds are given up
    t_call = time.monotonic()
    hard = None if deadline is None else max(deadline, t_call) + max(
        INTERVAL_GRACE_MIN, INTERVAL_GRACE * max(deadline - t_call, 0.0))

    status, reason = "complete", ""
    with torch.no_grad():
        xlo, xhi = outward(Lo, True), outward(Hi, False)
        if warm is not None and warm.box is not None:
            # its pre-activation bounds hold on its own boxes only: a box that leaves them
            # would get the parent's bounds, which are false there.  Compared in float64,
            # the caller's box against the parent's: a float32 run's box rounded outward
            # may pass the parent's by an ulp (both bounds hold on the caller's box), and
            # a parent's box rounded to float32 could admit a box an ulp outside it
            wlo, whi = (v.to(dtype=torch.float64).cpu().numpy().reshape(B, -1) for v in warm.box)
            if bool((np.asarray(Lo, np.float64).reshape(B, -1) < wlo).any()) or \
                    bool((np.asarray(Hi, np.float64).reshape(B, -1) > whi).any()):
                raise BoundError("warm: a box is not inside the box its warm start was computed "
                                 "on; a warm start serves sub-problems of its own domain only")
        if warm is not None:
            # and its splits must be among the sub-problem's: a sibling's (z <= 0 where the
            # new one has z >= 0) gave bounds below sampled outputs, marked complete
            for name, ws in warm.splits.items():
                w = np.asarray(ws.detach().cpu().numpy() if hasattr(ws, "detach") else ws).reshape(B, -1)
                new = sp.get(name)
                new = np.zeros_like(w) if new is None else new.reshape(B, -1)
                if np.any((w != 0) & (new != w)):
                    raise BoundError(f"warm: its split of ReLU '{name}' is not the sub-problem's; a warm "
                                     "start serves sub-problems of its own domain only (its children)")
        iv = {g.input_name: (xlo, xhi)}
        relax: dict[str, tuple[Any, Any, Any]] = {}
        unstable: dict[str, Any] = {}
        pre: dict[str, tuple[Any, Any]] = {}
        signs = {k: torch.as_tensor(v, device=device) for k, v in sp.items()}
        infeasible = torch.zeros(B, dtype=torch.bool, device=device)
        overflowed = torch.zeros(B, dtype=torch.bool, device=device)
        want_inter = method == "alpha" and intermediate == "alpha" and int(iters) > 0
        inter: dict[str, tuple] = {}
        # sub-problems whose box and splits so far equal the warm start's: their bounds of
        # the next layer would come out as the parent's (plain CROWN ignores later splits)
        same = torch.zeros(B, dtype=torch.bool, device=device)
        if warm is not None and warm.box is not None and method != "ibp":
            wlo, whi = (v.to(dtype=dt, device=device).reshape(B, -1) for v in warm.box)
            same = (wlo == xlo.reshape(B, -1)).all(1) & (whi == xhi.reshape(B, -1)).all(1)
        # a sign is decided only where it is proved (rounded to nearest, 1 + 2^-53 - 1 read
        # 0 and a live neuron read dead), in float32 too (1 + 2^-25 - 1 is 0 there: a
        # violated property read "holds"); see relulab.crown.rounding
        rounding = SignRounding(g.input_name, (xlo, xhi), g)
        for node in g.nodes[1:]:
            if hard is not None and time.monotonic() >= hard:
                # past the deadline the interval pass still runs, for the output's interval
                # bounds, but not without end: a cold first pass of a CNN ran 4 s past a
                # 1 s limit, and a 57,598-node max-pool tree 25 s past 2 s
                return _vacuous_bounds(g, B, m, upper, method, xlo, xhi, signs, device, dt)
            if not isinstance(node.op, Relu):
                ins = [iv[i] for i in node.inputs]
                iv[node.name] = node.op.ibp(*ins)
                rounding.after_op(node.name, node.op, ins, list(node.inputs))
                continue
            p = node.inputs[0]
            plo, phi = (t.clone() for t in iv[p])
            known = None
            if warm is not None and node.name in warm.pre:
                wl, wh = warm.pre[node.name]
                wl, wh = outward(wl, True), outward(wh, False)
                plo = torch.maximum(plo, wl)
                phi = torch.minimum(phi, wh)
                known = (wl, wh)   # the parent's bounds, sound on this sub-domain
            s = signs.get(node.name)
            s_flat = None if s is None else s.reshape(B, -1)
            ws = None if warm is None else warm.splits.get(node.name)
            ws = None if ws is None else ws.to(device).reshape(B, -1)
            if method != "ibp":
                mask = ((plo < 0) & (phi > 0)).reshape(B, -1)
                if s_flat is not None:
                    mask &= s_flat == 0
                if intermediate == "reuse" and warm is not None and node.name in warm.pre:
                    mask &= False  # the parent's bounds (intersected above) are kept
                if warm is not None and node.name in warm.pre and bool(same.any()):
                    agree = same
                    if ws is not None:
                        agree = agree & ((ws == 0) | (ws == (s_flat if s_flat is not None else 0))).all(1)
                    mask &= ~agree[:, None]
                if late():
                    status, reason = "partial", "deadline: interval bounds for the later layers"
                else:
                    try:
                        if not refine(g, p, plo, phi, mask, relax, xlo, xhi,
                                      late if deadline is not None else None):
                            status, reason = "partial", "deadline: interval bounds for the later layers"
                    except ResourceLimitError as e:
                        status, reason = "partial", f"memory: {e}"
                if ws is not None or s_flat is not None:
                    a = ws if ws is not None else torch.zeros_like(s_flat)
                    b = s_flat if s_flat is not None else torch.zeros_like(ws)
                    same = same & (a == b).all(1)
            plo, phi = rounding.decide(p, plo, phi, iv[p], known)
            if want_inter and any(isinstance(g.by_name[a].op, Relu) for a in g.ancestors(p)):
                om = ((plo < 0) & (phi > 0)).reshape(B, -1)
                if s_flat is not None:
                    om &= s_flat == 0
                idx = torch.nonzero(om.any(0)).flatten()
                if idx.numel():
                    # re-bounded during the optimisation: widened by their rounding there
                    rad = rounding.radius(p).reshape(B, -1)[:, idx]
                    inter[node.name] = (p, plo.reshape(B, -1).clone(), phi.reshape(B, -1).clone(), idx,
                                        om[:, idx], s_flat, rad)
            if s is not None:
                bad = ((s > 0) & (phi < 0)) | ((s < 0) & (plo > 0))
                infeasible |= bad.reshape(B, -1).any(1)
                plo = torch.where(s > 0, plo.clamp(min=0), plo)
                phi = torch.where(s < 0, phi.clamp(max=0), phi)
            phi = torch.maximum(phi, plo)  # rounding (or an empty split) can cross them
            nan = torch.isnan(plo) | torch.isnan(phi)
            if bool(nan.any()):
                # inf * 0 in the interval or back-substitution arithmetic (a box or weights
                # near the float range): every stability test reads a NaN bound as "stably
                # inactive", an unsound relu = 0.  The neuron gets no bound, and the
                # sub-problem's final bounds are made vacuous below.
                overflowed |= nan.reshape(B, -1).any(1)
                plo = torch.where(nan, torch.full_like(plo, -torch.inf), plo)
                phi = torch.where(nan, torch.full_like(phi, torch.inf), phi)
            pre[node.name] = (plo, phi)
            al, su, tu, un = relaxation(plo, phi)
            uidx = torch.nonzero(un.reshape(B, -1).any(0)).flatten()
            relax[node.name] = (al.unsqueeze(1), su, tu, uidx)
            unstable[node.name] = un
            iv[node.name] = (plo.clamp(min=0), phi.clamp(min=0))
            rounding.after_relu(node.name, p)

        out_shape = g.by_name[g.output_name].shape
        rows = np.concatenate([Cm, -Cm], 1) if upper else Cm
        R = rows.shape[1]
        lam0 = tens(rows).reshape(B, R, *out_shape)
        coeffs = None
        last = None
        if method == "ibp" or late():
            # past the deadline the output's interval bounds, already at hand, instead of a
            # back-substitution through the whole graph (0.1-3 s on a 393k-ReLU image model)
            if method != "ibp":
                status, reason = "partial", "deadline: interval bounds for the output"
            olo, ohi = iv[g.output_name]
            val = concretise(lam0, lam0.new_zeros(B, R), olo, ohi)
        else:
            record: dict | None = {} if return_coeffs else None
            lam_in, const = backsub(g, g.output_name, lam0, relax, record=record)
            val = concretise(lam_in, const, xlo, xhi)
            last = {"lam_in": lam_in}
            xm = torch.maximum(xlo.abs(), xhi.abs()).reshape(B, 1, -1)
            in_terms = ((lam_in.reshape(B, R, -1).abs() * xm).sum(-1) + const.abs()).detach()
            if return_coeffs:
                coeffs = {k: v[:, :m].clone() for k, v in record.items()}

    alphas: dict[str, Any] = {}
    betas: dict[str, Any] = {}
    def opt_late() -> bool:
        return late() or (opt_deadline is not None and time.monotonic() >= opt_deadline)

    stop = None
    if stop_at is not None:
        try:
            tgt = np.broadcast_to(np.asarray(stop_at, dtype=np.float64), (B, m))
        except (TypeError, ValueError):
            raise BoundError(f"stop_at: shape {np.shape(stop_at)} is neither ({m},) nor ({B}, {m})") from None
        if np.isnan(tgt).any():
            raise BoundError("stop_at: contains NaN (a target is a number, or +-inf)")
        stop = _stall_stop(tens(tgt), m)
    if method == "alpha" and int(iters) > 0 and not late():
        val, coeffs, alphas, betas, tight, why = optimise(
            g, lam0, relax, unstable, signs, xlo, xhi, val, coeffs, warm, int(iters), float(lr),
            opt_late, m, return_coeffs, inter or None, stop, last,
            lambda bt: rounding.beta_radius(g, g.output_name, bt))
        if why.startswith("deadline") and not late():
            why = "opt_deadline: alpha optimisation stopped early"  # as asked: not partial
        for name, (a, b) in tight.items():
            pre[name] = (a.reshape(pre[name][0].shape), b.reshape(pre[name][1].shape))
        if why.startswith("deadline") or why.startswith("memory: alpha"):
            status, reason = "partial", why
        elif why:
            reason = why
    elif method == "alpha" and int(iters) > 0:
        status, reason = "partial", "deadline: no alpha iterations"

    val = val.detach()
    if g.output_name in rounding.mag:
        val = val - rounding.output_radius(g.output_name, lam0)
    terms_np = None if last is None else 2.0 * in_terms[:, :m].double().cpu().numpy()
    mins = None
    if return_minimisers and last is not None:
        li = last["lam_in"][:, :m].reshape(B, m, -1)
        mins = torch.where(li > 0, xlo.reshape(B, 1, -1), xhi.reshape(B, 1, -1)).double().cpu().numpy()
    inf_np = infeasible.cpu().numpy()
    vnp = val.double().cpu().numpy()
    lower = vnp[:, :m].copy()
    up = -vnp[:, m:].copy() if upper else None
    lower[inf_np] = np.inf
    if up is not None:
        up[inf_np] = -np.inf
    ovf = overflowed.cpu().numpy() & ~inf_np
    lower[ovf] = -np.inf
    if up is not None:
        up[ovf] = np.inf
    # an infinite bound of a feasible sub-problem on a finite box is an overflow too
    bad = (bool(ovf.any()) or np.isnan(lower).any() or (up is not None and np.isnan(up).any())
           or bool(np.isinf(lower[~inf_np]).any()) or (up is not None and bool(np.isinf(up[~inf_np]).any())))
    if bad:
        # 0 * inf in the relaxation (boxes near 1e155 overflow its slopes): a NaN is no
        # bound; the vacuous one is sound, and the status says what happened
        lower[np.isnan(lower)] = -np.inf
        if up is not None:
            up[np.isnan(up)] = np.inf
        status, reason = "partial", "overflow: the relaxation overflowed float arithmetic (a box too large); those bounds are infinite"
    return GraphBounds(
        lower=lower,
        upper=up,
        pre={k: _no_nan(a, b) for k, (a, b) in pre.items()},
        coeffs=None if coeffs is None else {k: v.double().cpu().numpy() for k, v in coeffs.items()},
        warm=WarmStart(alphas, betas, pre, signs, (xlo, xhi)),
        infeasible=inf_np,
        method=method,
        status=status,
        reason=reason,
        minimisers=mins,
        input_terms=terms_np,
    )


INTERVAL_GRACE, INTERVAL_GRACE_MIN = 0.25, 0.5


def _vacuous_bounds(g: BoundGraph, B: int, m: int, upper: bool, method: str, xlo, xhi, signs,
                    device, dt) -> GraphBounds:
    """Bounds of ``-inf`` / ``+inf`` for every output and ReLU input, marked partial: what
    is sound when the deadline passes within the interval pass."""
    torch = require("torch", "torch")
    pre_t = {}
    for node in g.nodes[1:]:
        if isinstance(node.op, Relu):
            shape = (B, *g.by_name[node.inputs[0]].shape)
            pre_t[node.name] = (torch.full(shape, -torch.inf, dtype=dt, device=device),
                                torch.full(shape, torch.inf, dtype=dt, device=device))
    pre = {k: (a.double().cpu().numpy(), b.double().cpu().numpy()) for k, (a, b) in pre_t.items()}
    return GraphBounds(
        lower=np.full((B, m), -np.inf),
        upper=np.full((B, m), np.inf) if upper else None,
        pre=pre,
        coeffs=None,
        warm=WarmStart({}, {}, pre_t, signs, (xlo, xhi)),
        infeasible=np.zeros(B, dtype=bool),
        method=method,
        status="partial",
        reason="deadline: the interval pass was cut; no bounds",
    )


# a float32 weight's size against its float64 original (float32's 2^-24 unit roundoff, doubled)
F32_GROWTH = 1.0 + 2.0 ** -23  # tol: float32 round to nearest
# the float32 pass's values against the exact ones (far above its rounding)
F32_VALUE_GROWTH = 1.0 + 1e-5  # tol: float32 interval pass


def _rounding_moves(bg: BoundGraph, val: dict, deadline: float | None) -> np.ndarray | None:
    """How far rounding the weights and biases of ``bg`` to float32 can move each output
    entry on the box (numpy, flattened; None past ``deadline``), given the float32
    pass's value intervals ``val``.  Each node adds the exact rounding residue of its
    own constants, ``|W - fl32(W)| (V + e) + |b - fl32(b)|``, to the move of its inputs
    carried through the float32 copy, ``|fl32(W)| e``; a ReLU passes ``e`` on (it is
    1-Lipschitz); the box is rounded outward, so the input does not move.  A graph whose
    constants are float32 numbers (every float32 ONNX model) moves nowhere, at the cost
    of one comparison per tensor."""
    import copy

    torch = require("torch", "torch")
    g64 = bg.converted("float64", "cpu")
    residual: dict[str, Any] = {}
    for node in g64.nodes[1:]:
        diffs = {k: v - v.to(torch.float32).double() for k, v in node.op.params().items() if v is not None}
        if any(bool(d.any()) for d in diffs.values()):
            op = copy.copy(node.op)
            for k, d in diffs.items():
                setattr(op, k, d)
            residual[node.name] = op
    out_numel = numel(g64.by_name[g64.output_name].shape)
    if not residual:
        return np.zeros(out_numel)
    with torch.no_grad():
        err = {g64.input_name: torch.zeros_like(val[g64.input_name][0], dtype=torch.float64)}
        for node in g64.nodes[1:]:
            if deadline is not None and time.monotonic() > deadline:
                return None
            if isinstance(node.op, Relu):
                err[node.name] = err[node.inputs[0]]
                continue
            lo_e, hi_e = node.op.ibp(*[(-err[i], err[i]) for i in node.inputs])
            moved = (hi_e - lo_e) / 2 * F32_GROWTH   # |W| e: the bias cancels
            if node.name in residual:
                A = [torch.maximum(val[i][0].abs(), val[i][1].abs()).double() * F32_VALUE_GROWTH + err[i]
                     for i in node.inputs]
                lo_r, hi_r = residual[node.name].ibp(*[(-a, a) for a in A])
                moved = moved + torch.maximum(lo_r.abs(), hi_r.abs())   # |dW| A + |db|
            err[node.name] = moved
    return err[g64.output_name].reshape(-1).numpy()


def float32_unsafe(bg: BoundGraph, lo: Any, hi: Any, ratio: float, deadline: float | None = None,
                   rows: Any = None, tolerance: Any = None) -> str | None:
    """Why bounds of ``bg`` on the box ``[lo, hi]`` must not be computed in float32 (None:
    they may).  Interval passes over the whole graph:

    * the values: each node's interval on the box;
    * the sizes of the terms each node adds up: each node applied to its inputs' values
      made symmetric, ``[-V, V]`` (a linear node then gets ``|W| V + |b|``);
    * with ``rows`` (an (r, m) array: the property's output rows) and ``tolerance`` (r
      numbers), how far rounding the weights and biases to float32 can move each output
      (:func:`_rounding_moves`, exact residues carried to first order).  The bounds then
      describe the float32 copy of the network, and a row moved by more than its
      tolerance is unsafe (constants 47.998003 and 47.998007, one float32 number, whose
      difference times 1000 made a violated property "holds").

    Float32 keeps 7 digits, so a bound is unsafe where a ReLU's terms exceed ``ratio``
    times its own size (they cancel: ``K - sum(x)`` on inputs near 1e5), or where any
    node's terms or values exceed ``ratio`` times the largest ReLU input and 1 (a pair
    ``(u + 1e9) - 1e9`` between two layers, or output biases 1e9 + 60 and 1e9 + 30 whose
    float32 copies differ by 64: each read a violated property as "holds").  Past
    ``deadline`` the answer is "unsafe" (float64 is always sound).

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [1e9]])
        >>> float32_unsafe(BoundGraph.from_network(net), [[-1.0]], [[1.0]], 100.0)
        'a value of size 1e+09 against ReLU inputs of size 1'
    """
    torch = require("torch", "torch")
    g = bg.converted("float32", "cpu")
    Lo = _as_batch(lo, g.input_shape, "lo")[:1]
    Hi = _as_batch(hi, g.input_shape, "hi")[:1]
    with torch.no_grad():
        x0 = torch.as_tensor(np.array(Lo, dtype=np.float32))   # a copy (views warn)
        x1 = torch.as_tensor(np.array(Hi, dtype=np.float32))
        M = torch.maximum(x0.abs(), x1.abs())
        val = {g.input_name: (x0, x1)}
        mag = {g.input_name: M}   # the terms' sizes
        relu_in, top_mag, top_val = 0.0, float(M.max()), float(M.max())
        for node in g.nodes[1:]:
            if deadline is not None and time.monotonic() > deadline:
                return "the time limit came first"
            if isinstance(node.op, Relu):
                a, b = val[node.inputs[0]]
                own = torch.maximum(a.abs(), b.abs())
                terms = mag[node.inputs[0]]
                if bool((terms > ratio * (1.0 + own)).any()):
                    return f"a ReLU input adds up terms of size {float(terms.max()):.3g} to values of size {float(own.max()):.3g}"
                relu_in = max(relu_in, float(own.max()))
                val[node.name] = (a.clamp(min=0), b.clamp(min=0))
                mag[node.name] = terms
                continue
            val[node.name] = node.op.ibp(*[val[i] for i in node.inputs])
            # the terms' size from the inputs' actual sizes (not their terms': no compounding)
            sym = [(-torch.maximum(val[i][0].abs(), val[i][1].abs()),
                    torch.maximum(val[i][0].abs(), val[i][1].abs())) for i in node.inputs]
            lo_s, hi_s = node.op.ibp(*sym)
            mag[node.name] = torch.maximum(lo_s.abs(), hi_s.abs())
            v = val[node.name]
            top_mag = max(top_mag, float(mag[node.name].max()))
            top_val = max(top_val, float(torch.maximum(v[0].abs(), v[1].abs()).max()))
    top = max(top_mag, top_val)
    if not np.isfinite(top) or top > ratio * (1.0 + relu_in):
        return f"a value of size {top:.3g} against ReLU inputs of size {max(relu_in, 1.0):.3g}"
    if rows is not None:
        E = _rounding_moves(bg, val, deadline)
        if E is None:
            return "the time limit came first"
        R = np.abs(np.asarray(rows, dtype=np.float64)).reshape(-1, E.size)
        moved_rows = R @ E
        tol = np.broadcast_to(np.asarray(tolerance, dtype=np.float64), moved_rows.shape)
        bad = np.flatnonzero(~(moved_rows <= tol))
        if bad.size:
            k = int(bad[0])
            return (f"rounding the weights to float32 may move output row {k} by "
                    f"{moved_rows[k]:.3g}, more than the {tol[k]:.3g} its proof can spare")
    return None
