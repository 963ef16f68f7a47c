"""Branch and bound over ReLU splits (beta-CROWN style) for high-dimensional inputs.

One unsafe conjunction ``C f(x) <= d`` over an input box is decided by splitting
*activations* instead of the input box.  A sub-domain is a split assignment: for some
unstable ReLUs it fixes ``z >= 0`` (+1) or ``z <= 0`` (-1).  Each round takes a batch of
sub-domains from the top of a stack (depth first: the queue stays small), splits each
on the neuron chosen by the branching heuristic (:mod:`relulab.verify.branching`), and
bounds all children in one batched call:

* with torch available (``engine="crown"``, the default when it is): alpha-CROWN of
  :mod:`relulab.crown`, with the splits enforced by optimised Lagrange multipliers
  (beta-CROWN) and warm-started from the parent's slopes and multipliers;
* else (``engine="numpy"``): CROWN in numpy with the splits enforced by clamping the
  split neurons' bounds (and the last layer's slopes optimised).

A child is *pruned* when some row's lower bound of ``C f(x) - d`` exceeds a rounding
margin (no point of it is unsafe) or when its splits are contradictory (an empty
sub-domain).  A child with no unstable neuron left is a single linear piece: one LP
(:mod:`relulab.lp`) over the box and the split constraints decides it exactly, and its
minimiser is re-checked as a counterexample.  So the search is complete: it ends
``holds`` or ``violated`` unless the time or memory budget runs out first.

During the search the minimisers of the bounds' linear forms are tried as
counterexamples, and every few rounds the falsification attack
(:func:`relulab.verify.attack.attack`) runs on a small box around the minimiser of the
most promising open sub-domain.  Every counterexample is re-checked by a plain forward
pass.

Example:
    >>> import numpy as np
    >>> from relulab import Box, Network
    >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
    >>> relu_split(net, Box([-1], [1]), np.array([[-1.0]]), np.array([-1.5]), engine="numpy").status
    'holds'
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..bounds import (
    alpha_crown,
    crown_batch,
    float_layers,
    output_rounding,
    relax_relu,
    term_sizes_start,
    term_sizes_step,
)
from ..domain import Box
from ..errors import RelulabError
from ..limits import ResourceLimitError
from ..lp import solve
from ..network import Network
from ..tolerance import FEAS_TOL, PROOF_MARGIN, UNIT_ROUNDOFF
from .branching import babsr_scores, choose_fsb
from .budget import Budget
from .result import ReluSplitResult

__all__ = ["relu_split"]

PROBE = 8  # open sub-domains per round whose bound minimisers are tried (torch engine)
# above this many ReLU neurons, children keep their parent's intermediate bounds instead of
# re-bounding every layer after the split (on a CIFAR ResNet that re-bounding is ~70% of a
# sub-domain's cost; the split still tightens the final bound through its multiplier)
REUSE_NEURONS = 4000
# every bound of a proof runs in float64 with its rounding carried (relulab.crown.rounding).
# There is no float32 route any more: float32 bounds of graphs above 4,000 ReLUs were 2-2.6x
# faster on a CIFAR ResNet, but a live neuron read dead there (1 + 2^-25 - 1 is 0 in
# float32) and a violated property read "holds"; with float32's rounding carried soundly
# the same ResNet's root bound fell from +2.3 to -4e6 (3,000 neurons unstable instead of
# 970), so float32 cannot prove it
# slope optimisation steps of such a graph's root with intermediate alpha-CROWN (every
# layer's bounds optimised; 5 steps tighten a CIFAR ResNet's root bound ~0.2-0.3)
ROOT_ITERS = 10
ROOT_SHARE = 0.3  # the root's optimisation stops after this share of the time left
ROOT_MIN_TIME = 30.0  # seconds left below which the root keeps CROWN's intermediate bounds
# children of a large graph (REUSE_NEURONS) end their alpha/beta optimisation once the share
# of them proven stops growing (relulab.crown.bound's stop_at; see STALL_ITERS there)
STALL_STOP = True
# at most this many alpha/beta steps per child of such a graph (it starts from its parent's
# slopes and multipliers, so the optimisation goes on down the tree).  Measured on the
# hardest term of sri_resnet_a instance 3612 (benchmarks/results/sri_child_iters.json):
# 20, 10 and 6 steps needed 7079, 7153 and 7073 sub-domains, in 85, 68 and 50 CPU s
CHILD_ITERS = 6
ENGINE_SLACK = 0.03  # share of the time left that the torch engine's deadline is brought forward
_OVERRUN: dict[int, float] = {}  # per graph: the largest time past its deadline an engine call took
# the local attack searches a box of this fraction of the input box's width around a minimiser
LOCAL_WIDTH = 0.05
# seconds of PGD through a structured graph during the search (at most 5% of the time left):
# started from the bounds' minimisers it needs a few gradient steps, 0.05 s is not one on a
# model of thousands of neurons
GRAPH_ATTACK_TIME = 0.5


# --------------------------------------------------------------------------- bounders
@dataclass
class _Bounds:
    """Bounds of a batch of sub-domains (all arrays with the batch first)."""

    low: np.ndarray  # (N, r) lower bounds of C f(x) - d
    scale: np.ndarray  # (N, r) size of the numbers behind each bound (rounding margin)
    pre: list[tuple[np.ndarray, np.ndarray]]  # per ReLU layer (N, n_k), splits included
    infeasible: np.ndarray  # (N,) the splits contradict each other
    X: np.ndarray | None  # (N, r, d) minimisers of the rows' linear bounds, if known
    warm: Any  # state for the children (take(idx) selects / duplicates rows)
    coeffs: list[np.ndarray] | None  # per layer (N, r, n_k) backward coefficients, if known
    complete: bool = True  # False: the deadline or memory cut the bounds short (looser)


class _DenseWarm:
    """The parent's pre-activation bounds (flat over layers), intersected by children."""

    def __init__(self, lo: np.ndarray, hi: np.ndarray) -> None:
        self.lo, self.hi = lo, hi

    def take(self, idx: np.ndarray) -> _DenseWarm:
        return _DenseWarm(self.lo[idx], self.hi[idx])


class _DenseBounder:
    """CROWN in numpy: splits clamp the split neurons' bounds to [0, hi] or [lo, 0]."""

    def __init__(self, net: Network, C: np.ndarray, d: np.ndarray, alpha_iters: int = 5) -> None:
        self.net = net
        self.layers = float_layers(net)
        self.sizes = [W.shape[0] for W in self.layers.Ws[:-1]]
        self.cuts = np.cumsum([0, *self.sizes])
        self.C, self.d = C, d
        self.alpha_iters = alpha_iters
        self.dense = net

    def root_warm(self) -> _DenseWarm:
        n = int(self.cuts[-1])
        return _DenseWarm(np.full((1, n), -np.inf), np.full((1, n), np.inf))

    def bytes_per_domain(self, dim: int) -> float:
        n_max = max(self.sizes, default=1)
        r = self.C.shape[0]
        # forward equations (2 (d + 1) n), back-substitution rows (2 n x max(n, d)),
        # the linear forms (r d) and the flat bounds; x 3 for temporaries
        return 8.0 * 3 * (2 * (dim + 1) * n_max + 2 * n_max * max(n_max, dim) + 2 * r * dim
                          + 4 * int(self.cuts[-1]))

    def bound(self, lo: np.ndarray, hi: np.ndarray, S: np.ndarray, warm: _DenseWarm,
              deadline: float | None) -> _Bounds:
        Ws, bs, sk = self.layers
        N = S.shape[0]
        LO = np.broadcast_to(lo, (N, lo.size)).copy()
        HI = np.broadcast_to(hi, (N, hi.size)).copy()
        plo = np.where(S == 1, np.maximum(warm.lo, 0.0), warm.lo)
        phi = np.where(S == -1, np.minimum(warm.hi, 0.0), warm.hi)
        infeasible = np.any(plo > phi, axis=1)
        prev = [(plo[:, a:b], phi[:, a:b]) for a, b in zip(self.cuts[:-1], self.cuts[1:], strict=True)]
        pre, low, A, c = crown_batch(Ws, bs, LO, HI, C=self.C, d=-self.d, skip=sk, prev=prev,
                                     want_linear=True, intermediate="hybrid", deadline=deadline)
        mag = np.maximum(np.abs(LO), np.abs(HI))
        scale = 1.0 + np.abs(c) + np.einsum("nrd,nd->nr", np.abs(A), mag)
        X = np.where(A > 0, LO[:, None, :], HI[:, None, :])
        open_ = ~np.any(low > PROOF_MARGIN * scale, axis=1) & ~infeasible
        if self.alpha_iters and np.any(open_):
            # optimise the last back-substitution's slopes on the row closest to proving
            u = np.nonzero(open_)[0]
            relax = [relax_relu(a[u], b[u]) for a, b in pre]
            rsel = np.argmax(low[u], axis=1)
            la, Aa, ca = alpha_crown(self.C[rsel][:, None, :], (-self.d)[rsel][:, None], Ws, bs,
                                     relax, LO[u], HI[u], sk, self.alpha_iters)
            better = la[:, 0] > low[u, rsel]
            ub = u[better]
            low[ub, rsel[better]] = la[better, 0]
            scale[ub, rsel[better]] = 1.0 + np.abs(ca[better, 0]) + np.einsum(
                "nd,nd->n", np.abs(Aa[better, 0]), mag[ub])
            X[ub, rsel[better]] = np.where(Aa[better, 0] > 0, LO[ub], HI[ub])
        flo = np.concatenate([np.zeros((N, 0)), *[a for a, _ in pre]], axis=1)
        fhi = np.concatenate([np.zeros((N, 0)), *[b for _, b in pre]], axis=1)
        return _Bounds(low, scale, pre, infeasible, X, _DenseWarm(flo, fhi), None)

    def branch(self, b: _Bounds, rows: np.ndarray, lo: np.ndarray, hi: np.ndarray,
               k: int) -> np.ndarray:
        Ws, bs, sk = self.layers
        N = len(rows)
        return choose_fsb(Ws, bs, b.pre, self.C[rows], -self.d[rows],
                          np.broadcast_to(lo, (N, lo.size)), np.broadcast_to(hi, (N, hi.size)),
                          skip=sk, k=k)

    def forward(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(self.net(X), dtype=np.float64)


class _GraphBounder:
    """alpha/beta-CROWN of :mod:`relulab.crown` on a BoundGraph (dense or structured)."""

    def __init__(self, bg: Any, C: np.ndarray, d: np.ndarray, dense: Network | None,
                 iters: int = 20) -> None:
        from .. import crown

        self.crown = crown
        self.bg = bg
        self.names = [name for name, _ in bg.relus]
        self.shapes = [tuple(shape) for _, shape in bg.relus]
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        self.cuts = np.cumsum([0, *self.sizes])
        self.C, self.d = C, d
        self.iters = iters
        self.dense = dense
        self.reuse = int(self.cuts[-1]) > REUSE_NEURONS
        self.big: float | None = None  # the largest activation bound at the root (for stop_at)
        # per output row, the largest size of the terms the root's bound added up (see
        # bound): the early-stop targets use the same scale as the proofs
        self.terms: np.ndarray | None = None
        # the corners minimising the bounds' linear forms serve as candidate counterexamples
        # when no dense network can supply them (a structured graph too large to lower)
        self.minimisers = dense is None

    def root_warm(self) -> Any:
        return None

    def targets(self) -> np.ndarray | None:
        """The lower bounds of ``C f(x)`` that prove each row, with the rounding margin at
        the root's scale (children's scales are smaller: a child above it is proven)."""
        if self.big is None:
            return None
        act = np.abs(self.C).sum(1) * (1.0 + self.big)
        scale = 1.0 + np.abs(self.d) + (act if self.terms is None else np.maximum(act, self.terms))
        return self.d + PROOF_MARGIN * scale

    def bytes_per_domain(self, dim: int) -> float:
        n = int(self.cuts[-1])
        r = self.C.shape[0]
        # slopes and multipliers per neuron and row, bounds, coefficients (x 4 for autograd)
        return 8.0 * 4 * (n * (r + 6) + dim * (r + 2))

    def bound(self, lo, hi, S, warm, deadline: float | None) -> _Bounds:
        N = S.shape[0]
        if deadline is not None and time.monotonic() > deadline:
            # nothing bounded in time (a large graph can use it up before its first bound,
            # and a late bound still ran a full float64 interval pass: 3 s past a 1 s
            # limit): vacuous bounds, marked incomplete; the caller stops at its deadline
            pre = [(np.full((N, k), -np.inf), np.full((N, k), np.inf)) for k in self.sizes]
            return _Bounds(np.full((N, self.C.shape[0]), -np.inf), np.ones((N, self.C.shape[0])),
                           pre, np.zeros(N, dtype=bool), None, None, None, False)
        splits = {name: S[:, a:b] for name, a, b in zip(self.names, self.cuts[:-1], self.cuts[1:],
                                                        strict=True)}
        LO = np.broadcast_to(lo, (N, lo.size))
        HI = np.broadcast_to(hi, (N, hi.size))
        dl = deadline
        if deadline is not None:
            # the engine checks its deadline between chunks of work: ask for an earlier one
            # by the largest overrun seen so far (at least 3% of the time left)
            seen = _OVERRUN.get(id(self.bg), 0.0)
            dl = deadline - max(seen, ENGINE_SLACK * max(deadline - time.monotonic(), 0.0))
        # children of a large graph keep their parent's intermediate bounds (REUSE_NEURONS);
        # its root, whose intermediate bounds then serve the whole tree, optimises them
        inter, iters, odl, stop_at = "crown", self.iters, None, None
        if self.reuse and warm is not None:
            # (the root of a term, no split yet, is one sub-problem: it keeps every step)
            inter, iters = "reuse", (min(self.iters, CHILD_ITERS) if S.any() else self.iters)
            stop_at = self.targets() if STALL_STOP else None
        elif self.reuse and (dl is None or dl - time.monotonic() >= ROOT_MIN_TIME):
            # at most ROOT_SHARE of the time optimising (one step re-bounds every layer: a
            # step started just before that point still ends well before the deadline)
            inter, iters = "alpha", ROOT_ITERS
            if dl is not None:
                odl = time.monotonic() + ROOT_SHARE * max(dl - time.monotonic(), 0.0)
        gb = self.crown.bound(self.bg, LO, HI, self.C, method="alpha", splits=splits, warm=warm,
                              iters=iters, deadline=dl, opt_deadline=odl, return_coeffs=True,
                              upper=False, intermediate=inter, dtype="float64", stop_at=stop_at,
                              return_minimisers=self.minimisers)
        if dl is not None:
            _OVERRUN[id(self.bg)] = max(_OVERRUN.get(id(self.bg), 0.0), time.monotonic() - dl)
        low = np.asarray(gb.lower, dtype=np.float64) - self.d[None, :]
        pre = []
        big = np.zeros(N)
        for name in self.names:
            a, b = gb.pre[name]
            a = np.asarray(a, dtype=np.float64).reshape(N, -1)
            b = np.asarray(b, dtype=np.float64).reshape(N, -1)
            pre.append((a, b))
            if a.shape[1]:
                big = np.maximum(big, np.max(np.maximum(np.abs(a), np.abs(b)), axis=1))
        if self.big is None:
            self.big = float(big.max()) if big.size else 0.0
        # size of the numbers: the output rows applied to the largest activation bound, and
        # never below the size of the terms the bound adds up, |coefficient| x |bound| over
        # every ReLU: with output weights of 1e7 on small activations (terms that cancel),
        # float32 rounding of about 1 passed for a proof under the first scale alone
        act = np.abs(self.C).sum(1)[None, :] * (1.0 + big[:, None])
        coeffs = None
        if gb.coeffs is not None:
            coeffs = [np.asarray(gb.coeffs[name], dtype=np.float64).reshape(N, low.shape[1], -1)
                      for name in self.names]
            terms = sum(np.einsum("nrk,nk->nr", np.abs(c), np.maximum(np.abs(a), np.abs(b)))
                        for c, (a, b) in zip(coeffs, pre, strict=True))
            act = np.maximum(act, np.where(np.isnan(terms), np.inf, terms))
        if gb.input_terms is not None:
            # and the input's terms of the final linear form: 1000 (x0 + x1 - 1e8) on x0
            # near 1e8 adds terms of 1e11, whose rounding (1e-5) passed for a proof of a
            # bound 7e-6 wrong (the ReLU terms above were 1e-4)
            it = np.asarray(gb.input_terms, dtype=np.float64).reshape(N, -1)
            act = np.maximum(act, np.where(np.isnan(it), np.inf, it))
        if coeffs is not None and self.terms is None:
            self.terms = np.max(act, axis=0)
        scale = 1.0 + np.abs(self.d)[None, :] + act
        infeasible = np.asarray(gb.infeasible, dtype=bool).reshape(N)
        low = np.where(infeasible[:, None], np.inf, low)
        return _Bounds(low, scale, pre, infeasible, gb.minimisers, gb.warm, coeffs,
                       gb.status == "complete")

    def branch(self, b: _Bounds, rows: np.ndarray, lo, hi, k: int) -> np.ndarray:
        N = len(rows)
        if b.coeffs is None:
            lam = [np.full_like(a, -1.0) for a, _ in b.pre]
        else:
            lam = [c[np.arange(N), rows] for c in b.coeffs]
        sc = np.concatenate([babsr_scores(a, h, g) for (a, h), g in zip(b.pre, lam, strict=True)],
                            axis=1)
        pick = np.argmax(sc, axis=1)
        return np.where(np.isfinite(sc[np.arange(N), pick]), pick, -1)

    def forward(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(self.bg.forward(X), dtype=np.float64).reshape(len(X), -1)


# --------------------------------------------------------------------------- leaves
def _leaf_lp(net: Network, lo: np.ndarray, hi: np.ndarray, S: np.ndarray,
             pre: list[tuple[np.ndarray, np.ndarray]], C: np.ndarray, d: np.ndarray):
    """Decide a sub-domain on which every neuron's sign is known (one linear piece):
    minimise ``t`` with ``C f(x) - d <= t`` over the box and the split constraints.
    Returns ("empty" | "safe" | "candidate" | "unknown", x)."""
    Ws, bs, sk = float_layers(net)
    dim = lo.size
    G, g = np.eye(dim), np.zeros(dim)
    rows, rhs = [], []
    pos = 0
    # The composed map (G, g) is rounded: where its terms cancel (relu(x - 1) + relu(x +
    # 2^60) - 2^60 lost its -1, and a violated property read "holds") it is off by up to
    # ops unit roundoffs of the terms' sizes T, doubled (as crown_batch's bounds).  The
    # split constraints are relaxed by that much (so "empty" is sound) and the output rows
    # must clear it (so "safe" is sound).
    T, ops = term_sizes_start(lo, hi), 0
    for k in range(len(Ws) - 1):
        Z, z = Ws[k] @ G, Ws[k] @ g + bs[k]
        n = Z.shape[0]
        ops += Ws[k].shape[1] + 1
        T = term_sizes_step(T, Ws[k], bs[k])
        rad = 2.0 * ops * UNIT_ROUNDOFF * T
        s = S[pos:pos + n]
        plo, phi = pre[k]
        act = np.where(s != 0, s > 0, plo >= 0)
        on, off = np.nonzero(s > 0)[0], np.nonzero(s < 0)[0]
        rows += [-Z[on], Z[off]]
        rhs += [z[on] + rad[on], -z[off] + rad[off]]
        G, g = Z * act[:, None], z * act
        del phi
        pos += n
    Y, y = Ws[-1] @ G, Ws[-1] @ g + bs[-1]
    if sk is not None:
        Y, y = Y + sk[0], y + sk[1]
    CY, cy = C @ Y, C @ y
    A = np.vstack([np.hstack([np.vstack(rows) if rows else np.zeros((0, dim)),
                              np.zeros((sum(len(r) for r in rows), 1))]),
                   np.hstack([CY, -np.ones((C.shape[0], 1))])])
    b = np.concatenate([*rhs, d - cy])
    obj = np.zeros(dim + 1)
    obj[-1] = 1.0
    r = solve(obj, A_ub=A, b_ub=b, lb=np.concatenate([lo, [-np.inf]]),
              ub=np.concatenate([hi, [np.inf]]))
    if r.status == "infeasible":
        return "empty", None
    if r.status != "optimal" or r.x is None:
        return "unknown", None
    mag = np.maximum(np.abs(lo), np.abs(hi))
    scale = 1.0 + np.max(np.abs(d - cy)) + np.max(np.abs(CY) @ mag)
    # the output layer's rounding, on the terms' sizes carried through the hidden layers above
    rounding = float(np.max(output_rounding(Ws, bs, sk, lo[None], hi[None], C, d, hidden_terms=T[None])))
    if r.objective > PROOF_MARGIN * scale + rounding:
        return "safe", None
    return "candidate", np.clip(r.x[:dim], lo, hi)


# --------------------------------------------------------------------------- search
def _is_unsafe(Y: np.ndarray, C: np.ndarray, d: np.ndarray) -> np.ndarray:
    return np.all(Y @ C.T <= d + FEAS_TOL, axis=1)


def relu_split(
    model: Any,
    box: Box,
    C: np.ndarray,
    d: np.ndarray,
    *,
    timeout: float | None = None,
    memory: int | None = None,
    budget: Budget | None = None,
    engine: str = "auto",
    batch: int = 256,
    fsb_k: int = 1,
    alpha_iters: int | None = None,
    attack_every: int = 8,
    attack_time: float = 0.05,
    check_net: Network | None = None,
    seed: int = 0,
    root: Any = None,
) -> ReluSplitResult:
    """Decide whether some ``x`` in ``box`` has ``C f(x) <= d`` by branch and bound over
    ReLU splits.

    Args:
        model: a :class:`~relulab.Network` or a ``relulab.crown.BoundGraph``.
        box: the input box.
        C, d: the unsafe conjunction ``C y <= d`` (C of shape (r, m)).
        timeout: seconds (None: no limit); ``budget`` (a :class:`Budget`) overrides it and
            ``memory`` (bytes; default: relulab.limits' budget).
        engine: "crown" (torch; alpha/beta-CROWN), "numpy" (CROWN with clamped splits) or
            "auto" (crown when torch is installed, else numpy).
        batch: sub-domains split per round (2 x batch children bounded at once; fewer
            when the memory budget or the time left asks for it).
        fsb_k: candidates evaluated by filtered smart branching (numpy engine; 1: plain
            BaBSR, the default: fewer sub-domains in our measurements).
        alpha_iters: slope optimisation steps (default: 5 numpy, 20 crown).
        attack_every: rounds between local attacks around the best minimiser (0: off).
        attack_time: seconds of the attack on the whole box before the search (0: off).
        check_net: network used to re-check counterexamples (default: the model's).
        root: the torch engine's state of the same box from :func:`root_proven` (its
            ``keep["root"]``, a warm start): the root keeps its intermediate bounds instead of
            recomputing them (they do not depend on ``C``).

    Returns a :class:`ReluSplitResult`: "holds", "violated" (re-checked counterexample) or
    "unknown" with the reason ("timeout", "memory: ...", "numerical: ...").

    Example:
        >>> import numpy as np
        >>> from relulab import Box, Network
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
        >>> r = relu_split(net, Box([-1], [1]), np.array([[-1.0]]), np.array([-0.5]), engine="numpy")
        >>> r.status, bool(abs(r.counterexample[0]) >= 0.5)
        ('violated', True)
    """
    C = np.atleast_2d(np.asarray(C, dtype=np.float64))
    d = np.asarray(d, dtype=np.float64).reshape(-1)
    if C.shape[0] != d.shape[0]:
        raise RelulabError(f"relu_split: C has {C.shape[0]} rows but d has {d.shape[0]} entries")
    if isinstance(model, Network):
        n_in, n_out = model.input_dim, model.output_dim
    else:
        n_in, n_out = int(np.prod(model.input_shape)), int(model.output_dim)
    if box.dim != n_in:
        raise RelulabError(f"relu_split: the box has {box.dim} coordinates; the model takes {n_in} inputs")
    if C.shape[1] != n_out or not (np.all(np.isfinite(C)) and np.all(np.isfinite(d))):
        raise RelulabError(f"relu_split: C must be finite with {n_out} columns (the model's "
                           f"outputs), got shape {C.shape}")
    bud = budget or Budget(timeout, memory)
    stats: dict[str, Any] = {"domains": 0, "rounds": 0, "max_queue": 0, "leaves": 0,
                             "attacks": 0}
    t0 = time.monotonic()

    def done(status: str, x=None, reason: str = "") -> ReluSplitResult:
        stats["time"] = time.monotonic() - t0
        return ReluSplitResult(status, None if x is None else np.asarray(x, dtype=np.float64),
                               reason, stats)

    try:
        bounder, dense = _make_bounder(model, C, d, engine, alpha_iters)
    except ResourceLimitError as e:
        return done("unknown", reason=str(e))
    stats["engine"] = "crown" if isinstance(bounder, _GraphBounder) else "numpy"
    margin = PROOF_MARGIN
    checker = check_net or dense
    # Split vectors index the bound engine's ReLUs, so leaf LPs and the probe need a dense
    # network with the same neurons layer by layer.  The lowering of a residual block
    # (carry neurons) or a max-pool (its comparison tree) has more; it still serves the
    # attacks and the re-checks, and such leaves stay open ("incomplete").
    lp_net = dense if dense is not None and _same_neurons(bounder, dense) else None
    lo, hi = box.lo.astype(np.float64), box.hi.astype(np.float64)
    n_tot = int(bounder.cuts[-1])

    def recheck_points(X: np.ndarray) -> np.ndarray | None:
        """The first of the points that is a counterexample by a plain forward pass."""
        X = np.clip(np.asarray(X, dtype=np.float64).reshape(-1, lo.size), lo, hi)
        Y = bounder.forward(X)
        for i in np.nonzero(_is_unsafe(Y, C, d))[0][:8]:
            x = X[i]
            if checker is not None:
                y = np.asarray(checker(x), dtype=np.float64) if not checker.is_exact else (
                    np.array([float(v) for v in checker.exact()(x)]))
                if not np.all(C @ y <= d + FEAS_TOL):
                    continue
            return x
        return None

    def local_attack(x: np.ndarray | None, seconds: float = 0.05,
                     init: np.ndarray | None = None) -> np.ndarray | None:
        """The attack on a small box around ``x`` (the whole box when None)."""
        if bud.left() <= 0:
            return None
        if dense is None:  # a structured graph: PGD through it on the whole box, starting
            # from the minimisers of the most promising sub-domains' bounds when given
            from .graph_attack import pgd_graph

            stats["attacks"] += 1
            return pgd_graph(model, box, [(C, d)], time_limit=min(max(seconds, GRAPH_ATTACK_TIME),
                                                                  0.05 * bud.left()),
                             rng=seed + stats["attacks"], init=init)
        from .attack import attack

        if x is None:
            sub = box
        else:
            w = LOCAL_WIDTH * (hi - lo)
            sub = Box(np.maximum(x - w, lo), np.minimum(x + w, hi))
        stats["attacks"] += 1
        y = attack(dense, sub, C, d, n_samples=200, n_starts=32, steps=15, max_rounds=2,
                   time_limit=min(seconds, 0.05 * max(bud.left(), 0.0)), rng=seed + stats["attacks"])
        return None if y is None else recheck_points(y[None])

    # The torch engine gives no minimisers: numpy CROWN on the few most promising open
    # sub-domains of each round supplies them (candidates only; it proves nothing here).
    helper = (_DenseBounder(lp_net, C, d, 0) if isinstance(bounder, _GraphBounder)
              and lp_net is not None else None)

    def probe(S: np.ndarray) -> np.ndarray | None:
        hb = helper.bound(lo, hi, S, helper.root_warm().take(np.zeros(len(S), dtype=int)), None)
        return recheck_points(hb.X.reshape(-1, lo.size))

    # the stack holds blocks (S, warm, branch, lb) of open sub-domains; depth first
    stack: list[tuple[np.ndarray, Any, np.ndarray, np.ndarray]] = []
    unresolved = no_lp = 0
    per_domain = bounder.bytes_per_domain(lo.size)
    per_queued = 17.0 * n_tot + 64  # split signs and (numpy engine) the parent's bounds
    sec_each = 0.0

    def process(S: np.ndarray, b: _Bounds) -> np.ndarray | None:
        """Prune, decide leaves, try counterexamples and push the open children; returns a
        counterexample if one was found."""
        nonlocal unresolved, no_lp
        proven = np.any(b.low > margin * b.scale, axis=1) | b.infeasible
        if b.X is not None:
            cand = b.X[~proven].reshape(-1, lo.size)
            if len(cand):
                x = recheck_points(cand)
                if x is not None:
                    return x
        keep = np.nonzero(~proven)[0]
        if keep.size == 0:
            return None
        n_unst = np.zeros(keep.size, dtype=int)
        for a, h in b.pre:
            n_unst += np.sum((a[keep] < 0) & (h[keep] > 0), axis=1)
        leaf = keep[n_unst == 0]
        for i in leaf:
            if bud.expired():  # the main loop answers "timeout"; skipped leaves stay open
                break
            stats["leaves"] += 1
            if lp_net is None:
                no_lp += 1
                continue
            kind, x = _leaf_lp(lp_net, lo, hi, S[i], [(a[i], h[i]) for a, h in b.pre], C, d)
            if kind == "candidate":
                x = recheck_points(x[None])
                if x is not None:
                    return x
                unresolved += 1
            elif kind == "unknown":
                unresolved += 1
        opn = keep[n_unst > 0]
        if opn.size == 0:
            return None
        rows = np.argmax(b.low[opn], axis=1)
        sub = _Bounds(b.low[opn], b.scale[opn], [(a[opn], h[opn]) for a, h in b.pre],
                      b.infeasible[opn], None, None,
                      None if b.coeffs is None else [c[opn] for c in b.coeffs])
        br = bounder.branch(sub, rows, lo, hi, fsb_k)
        lb = b.low[opn].max(axis=1)
        warm = None if b.warm is None else b.warm.take(opn)
        # the most promising sub-domain (lowest bound) ends on top of its block
        order = np.argsort(-lb, kind="stable")
        stack.append((S[opn][order], None if warm is None else warm.take(order), br[order],
                      lb[order]))
        return None

    try:
        with _blas_single():
            S0 = np.zeros((1, n_tot), dtype=np.int8)
            bud.check_bytes(per_domain, "bounding the root")
            if attack_time:
                x = local_attack(None, attack_time)
                if x is not None:
                    return done("violated", x)
            tb = time.monotonic()
            w0 = root if (root is not None and isinstance(bounder, _GraphBounder)) else bounder.root_warm()
            b0 = bounder.bound(lo, hi, S0, w0, bud.deadline)
            stats["domains"] += 1
            x = process(S0, b0)
            if x is not None:
                return done("violated", x)
            sec_each = time.monotonic() - tb  # an upper estimate: batches share the overhead
            rnd = 0
            while stack:
                if bud.expired():
                    return done("unknown", reason="timeout")
                bud.check_growth("the branch and bound")
                S, warm, br, lb = stack.pop()
                want = bud.fit(2 * per_domain, batch)
                if sec_each > 0 and np.isfinite(bud.left()):  # no batch may run past the deadline
                    want = max(1, min(want, int(0.8 * bud.left() / (2 * sec_each))))
                if len(S) > want:
                    rest = np.arange(len(S) - want)
                    stack.append((S[rest], None if warm is None else warm.take(rest), br[rest],
                                  lb[rest]))
                    top = np.arange(len(S) - want, len(S))
                    S, warm, br, lb = (S[top], None if warm is None else warm.take(top), br[top],
                                       lb[top])
                n = len(S)
                idx = np.repeat(np.arange(n), 2)
                S2 = S[idx].copy()
                S2[np.arange(2 * n), br[idx]] = np.tile(np.array([-1, 1], dtype=np.int8), n)
                w2 = None if warm is None else warm.take(idx)
                tb = time.monotonic()
                b = bounder.bound(lo, hi, S2, w2, bud.deadline)
                stats["domains"] += 2 * n
                stats["rounds"] += 1
                x = process(S2, b)
                if x is None and helper is not None and stack:
                    x = probe(stack[-1][0][-PROBE:])
                if x is not None:
                    return done("violated", x)
                sec_each = (time.monotonic() - tb) / (2 * n)  # bounds, branching and leaf LPs
                rnd += 1
                if attack_every and rnd % attack_every == 0 and stack:
                    # the open sub-domain with the lowest bound: attack around the minimiser
                    # of its bound (the whole box when the engine gives no minimiser)
                    j = np.argmin(b.low.max(axis=1))
                    init = None
                    if b.X is not None:
                        top = np.argsort(b.low.max(axis=1), kind="stable")[:16]
                        init = b.X[top, np.argmin(b.low[top], axis=1)]
                    x = local_attack(None if b.X is None else b.X[j, int(np.argmin(b.low[j]))],
                                     init=init)
                    if x is not None:
                        return done("violated", x)
                queued = sum(len(s[0]) for s in stack)
                stats["max_queue"] = max(stats["max_queue"], queued)
                bud.check_bytes(queued * per_queued, "the queue of sub-domains")
    except ResourceLimitError as e:
        return done("unknown", reason=str(e) if str(e).startswith("memory") else f"memory: {e}")
    if bud.expired():
        return done("unknown", reason="timeout")
    if no_lp:
        why = ("too large to lower to a dense network" if dense is None else
               "whose dense lowering has other neurons (a residual skip or a max-pool)")
        return done("unknown", reason=f"incomplete: {no_lp} linear piece(s) of a structured model "
                    f"{why} were left undecided")
    if unresolved:
        return done("unknown", reason=f"numerical: {unresolved} linear piece(s) left undecided")
    return done("holds")


def root_proven(model: Any, box: Box, terms: list[tuple[np.ndarray, np.ndarray]], *,
                budget: Budget, engine: str = "auto", keep: dict | None = None) -> np.ndarray:
    """Which unsafe terms ``C f(x) <= d`` over one box the root bound alone rules out: one
    bound call for the rows of all terms together (a classification property's terms
    mostly fall here).  Returns a boolean per term (False also when the time is up).
    ``keep`` (a dict) receives ``keep["root"]``, the engine's state for
    :func:`relu_split`'s ``root`` (torch engine, bounds computed completely).

    Example:
        >>> import numpy as np
        >>> from relulab import Box, Network
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
        >>> terms = [(np.array([[-1.0]]), np.array([-1.5])), (np.array([[-1.0]]), np.array([-0.5]))]
        >>> root_proven(net, Box([-1], [1]), terms, budget=Budget(10.0), engine="numpy").tolist()
        [True, False]
    """
    C = np.concatenate([np.atleast_2d(c) for c, _ in terms]).astype(np.float64)
    d = np.concatenate([np.asarray(v, dtype=np.float64).reshape(-1) for _, v in terms])
    owner = np.concatenate([np.full(np.atleast_2d(c).shape[0], i) for i, (c, _) in enumerate(terms)])
    bounder, _ = _make_bounder(model, C, d, engine, None)
    lo, hi = box.lo.astype(np.float64), box.hi.astype(np.float64)
    budget.check_bytes(bounder.bytes_per_domain(lo.size), "bounding the root")
    with _blas_single():
        b = bounder.bound(lo, hi, np.zeros((1, int(bounder.cuts[-1])), dtype=np.int8),
                          bounder.root_warm(), budget.deadline)
    if keep is not None and isinstance(bounder, _GraphBounder) and b.warm is not None and b.complete:
        keep["root"] = b.warm
    row_ok = (b.low[0] > PROOF_MARGIN * b.scale[0]) | bool(b.infeasible[0])
    out = np.zeros(len(terms), dtype=bool)
    np.logical_or.at(out, owner, row_ok)  # (a bound cut short by the deadline is still sound)
    return out


def _blas_single():
    from ._threads import single_threaded_blas

    return single_threaded_blas()


def _make_bounder(model: Any, C: np.ndarray, d: np.ndarray, engine: str,
                  alpha_iters: int | None):
    """The bound engine and the dense network (for leaf LPs and attacks; None when the
    model is a structured graph too large to lower)."""
    if engine not in ("auto", "crown", "numpy"):
        raise RelulabError(f"relu_split: engine must be auto, crown or numpy, got {engine!r}")
    if isinstance(model, Network):
        fnet = model.float() if model.is_exact else model
        # an exact network gets the numpy engine (as since the first fix of bounds within
        # their rounding of 0); both engines now decide a neuron's sign in float64 only
        # where an outward bound proves it, so this choice is one of speed only
        if engine == "numpy" or (engine == "auto" and (not crown_available() or model.is_exact)):
            return _DenseBounder(fnet, C, d, 5 if alpha_iters is None else alpha_iters), fnet
        from ..crown import BoundGraph

        bg = BoundGraph.from_network(fnet)
        return _GraphBounder(bg, C, d, fnet, 20 if alpha_iters is None else alpha_iters), fnet
    if engine == "numpy":
        raise RelulabError("relu_split: the numpy engine needs a Network; this model is a BoundGraph")
    dense = None
    if getattr(model, "n_neurons", 0) <= DENSE_MAX_NEURONS:
        try:
            dense = model.to_network()
        except RelulabError:
            dense = None
    return _GraphBounder(model, C, d, dense, 20 if alpha_iters is None else alpha_iters), dense


def _same_neurons(model: Any, net: Network) -> bool:
    """Whether ``net``'s hidden layers have the ReLU layer sizes of ``model`` (a bound
    engine, or a ``BoundGraph``), so that a split vector of the one indexes the other's
    neurons."""
    sizes = (model.sizes if hasattr(model, "sizes")
             else [int(np.prod(shape)) for _, shape in model.relus])
    return [W.shape[0] for W in net.weights[:-1]] == [int(s) for s in sizes]


DENSE_MAX_NEURONS = 2000  # a structured model is lowered (leaf LPs, attacks) up to this size


def crown_available() -> bool:
    """Whether the torch engine (relulab.crown) can be used.  The first call imports torch
    and runs one tiny optimised bound (torch initialises its autograd lazily: seconds on
    a cold start), so that a verifier's clock, started after it, counts only the work."""
    if _CROWN_READY:
        return _CROWN_READY[0]
    try:
        import torch  # noqa: F401

        from .. import crown
    except ImportError:
        _CROWN_READY.append(False)
        return False
    tiny = crown.BoundGraph.from_network(Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]]))
    crown.bound(tiny, [[-1.0]], [[1.0]], method="alpha", iters=2, upper=False,
                splits={"relu0": np.array([[1, 0]], dtype=np.int8)})
    _CROWN_READY.append(True)
    return True


_CROWN_READY: list[bool] = []


def crown_ready() -> bool:
    """Whether the torch engine is already loaded and warm (no import cost now)."""
    return bool(_CROWN_READY and _CROWN_READY[0])
