"""Exact route (b): the LipMIP mixed-integer program (Jordan and Dimakis 2020) on HiGHS,
for the input norms ``p = 1`` and ``p = inf`` (and ``q in {1, inf}`` for vector outputs).

The program holds the network's big-M encoding (:func:`relulab.verify.encode`: one
binary ``a_j`` per unstable neuron, ``a_j = 1`` forcing ``z_j >= 0`` and ``a_j = 0``
forcing ``z_j <= 0``) and, coupled to it through the same binaries, a backward pass
``hh_k = a_k * (W_{k+1}^T hh_{k+1})`` that yields a row ``w = v^T J`` of the Jacobian of
the activation pattern ``a``.  Products of a binary and a bounded continuous quantity
are linearised exactly with interval bounds of the backward pass (the Fast-Lip bounds
of :mod:`relulab.lipschitz.upper`).  The objective is ``||w||_r``:

* ``r = inf`` (``p = 1``): one-hot binaries choose a coordinate and a sign;
* ``r = 1`` (``p = inf``): one sign binary per coordinate.

``v`` is a fixed output unit vector (one program per output: ``q = inf`` or a scalar
output), or free signs ``v in {-1, 1}^m`` (``q = 1``), which covers
``||J||_{p->q}`` for ``p, q in {1, inf}``.

A pattern allowed by the program may be degenerate (``z_j = 0`` lets ``a_j`` take
either value), so every optimal pattern is re-checked: the region must contain a ball
(Chebyshev centre), and its Jacobian is recomputed at the centre by a forward pass.  A
pattern whose region has no interior (radius 0 or infeasible) is cut off (no-good cut)
and the program re-solved; a region with a ball, however thin, is never cut: its
centre is a witness or the answer stays bounded.  On R^d the region is tested in
input units (the cone over a region of width ``w`` at distance ``c`` is only
``~w / c^2`` wide where it meets the homogenised box).

Example:
    >>> import numpy as np
    >>> from relulab import Network, Box
    >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]])
    >>> r = by_milp(net, Box([-1], [1]), 1.0, None)
    >>> round(r.upper, 6), r.witness.norm     # the bound carries its tolerance margin
    (2.0, 2.0)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..bounds import float_layers
from ..domain import Box, Polytope
from ..errors import RelulabError
from ..lp import LPError, LPModel, chebyshev_center_zoomed, no_interior
from ..network import Network
from ..tolerance import HIGHS_SMALL, HUGE_MILP_VALUE, MIP_GAP, ROUNDOFF
from .jacobians import homogenize
from .result import LipschitzWitness
from .witness import certify_point

__all__ = ["by_milp", "MILPOutcome", "milp_supported", "region_witness", "region_center", "backward_intervals",
           "preactivation_bounds", "homogeneous_problem"]

# HiGHS proves MILP optima to this relative gap (default feasibility tolerances ~1e-7).
MIP_REL_GAP = MIP_GAP
# Absolute gap for optima near zero: the round-off of the objective's few operations.
MIP_ABS_GAP = ROUNDOFF
# Degenerate optimal patterns cut off before giving up on a witness from the MILP.
MAX_NOGOOD_CUTS = 8
# a domain farther from the origin than this many times its width is beyond HiGHS's
# relative tolerances (about 1e-9): named when the solver fails
FAR_OFF_RATIO = 1e9


@dataclass(frozen=True)
class MILPOutcome:
    """What the LipMIP program(s) reached: ``lower <= L <= upper``, the best witness,
    ``complete`` (every program solved to optimality), binaries, seconds and solver info.

    Example:
        >>> from relulab import Network, Box
        >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> o = by_milp(net, Box([-1], [1]), 1, None)
        >>> o.lower, round(o.upper, 6), o.complete
        (2.0, 2.0, True)
    """
    lower: float
    upper: float
    witness: LipschitzWitness | None
    complete: bool
    n_binaries: int
    seconds: float
    info: dict = field(default_factory=dict)


def milp_supported(p: float, q: float | None, m: int) -> bool:
    """The program handles ``p in {1, inf}`` with a scalar output or ``q in {1, inf}``.

    Example:
        >>> milp_supported(1, None, 1), milp_supported(2, None, 1), milp_supported(1, 2, 3)
        (True, False, False)
    """
    if not (p == 1 or math.isinf(p)):
        return False
    return m == 1 or (q is not None and (q == 1 or math.isinf(q)))


# Over R^d the program runs on the homogenised network in [-1, 1]^d x [0, 1], where a region
# at distance D from the origin is a sliver about 1 / D^2 thick: past this reach (the
# largest |bias| / ||row||_1 of any hidden neuron) HiGHS's tolerances were seen to cut the
# sliver of the steepest region off, and "exact 101" was said where the constant is 102
# (hyperplanes 1e6 out; 1e3 to 1e5 were right)
GLOBAL_MILP_MAX_REACH = 1e4


def hyperplane_reach(net: Network) -> float:
    """A lower bound, in the l_inf norm of the input, on how far from the origin the
    nearest kink of some hidden neuron lies (the largest such bound over the neurons):
    ``|z_j(0)| / s_j``, with ``z_j(0)`` the neuron's pre-activation at the origin and
    ``s_j = |W_k| s`` (``s = 1`` for the inputs) the l_inf slope bound of ``z_j`` (a ReLU
    is 1-Lipschitz).  Constant neurons (``s_j = 0``) never kink and are left out.  Per
    layer ``|b_j| / ||w_j||_1`` read kinks in the layer's own units: a first layer that
    scaled x by 1e-2, or a constant neuron carrying the bias, hid a kink 1e6 out as 5000
    or 2 (aud_lip7 #1).

    Example:
        >>> hyperplane_reach(Network([[[1.0, 1.0], [2.0, 0.0]], [[1.0, 1.0]]], [[-1e6, 3.0], [0.0]]))
        500000.0
        >>> small = Network([[[1e-2]], [[1.0]], [[1.0]]], [[0.0], [-1e4], [0.0]])  # kink at x = 1e6
        >>> hyperplane_reach(small)
        1000000.0
    """
    f = net.float()
    reach = 0.0
    h = np.zeros(f.input_dim)
    slope = np.ones(f.input_dim)
    with np.errstate(over="ignore", invalid="ignore"):
        for W, b in zip(f.weights[:-1], f.biases[:-1], strict=True):
            W = np.asarray(W, float)
            z = W @ h + np.asarray(b, float)
            slope = np.abs(W) @ slope
            live = slope > 0
            if live.any():
                r = np.abs(z[live]) / slope[live]
                reach = max(reach, float(np.max(np.where(np.isnan(r), np.inf, r))))
            h = np.maximum(z, 0.0)
    return reach


def homogeneous_problem(net: Network) -> tuple[Network, Box]:
    """The homogenised network and the bounded box ``[-1, 1]^d x [0, 1]`` whose regions
    (in ``t > 0``) are the cones over the regions of ``net`` on R^d.

    Example:
        >>> H, B = homogeneous_problem(Network([[[1.0]], [[1.0]]], [[1.0], [0.0]]))
        >>> B.lo.tolist(), B.hi.tolist()
        ([-1.0, 0.0], [1.0, 1.0])
    """
    d = net.input_dim
    return homogenize(net), Box(np.r_[-np.ones(d), 0.0], np.ones(d + 1))


def preactivation_bounds(net: Network, domain: Box | Polytope, tighten: bool = False,
                         time_limit: float | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """Pre-activation bounds per hidden layer (CROWN, optionally LP-tightened); a neuron
    whose bounds collapse to ``[0, 0]`` is marked stably inactive (its value is 0).

    Example:
        >>> from relulab import Network, Box
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 2.0], [0.0]])
        >>> [(lo.round(9).tolist(), hi.round(9).tolist()) for lo, hi in preactivation_bounds(net, Box([-1], [1]))]
        [([-1.0, 1.0], [1.0, 3.0])]
    """
    from ..bounds import symbolic_bounds
    from ..verify.milp import tighten_bounds

    b = symbolic_bounds(net, domain)
    pre = [(lo.copy(), hi.copy()) for lo, hi in zip(b.pre_lo, b.pre_hi, strict=True)]
    if tighten and net.n_hidden_layers > 1:
        pre = tighten_bounds(net, domain, pre, time_limit=time_limit)
    out = []
    for lo, hi in pre:
        lo, hi = np.minimum(lo, hi).copy(), hi.copy()
        both = (lo >= 0) & (hi <= 0)
        lo[both] = -1.0  # z == 0 on the domain: treat as inactive (relu = 0, slope 0)
        out.append((lo, hi))
    return out


def backward_intervals(Ws, pre, v_lo, v_hi, skip=None):
    """Interval bounds of the backward pass for ``v in [v_lo, v_hi]``: per hidden layer the
    bounds ``(gl, gu)`` of ``g_k = W_{k+1}^T hh_{k+1}`` and ``(hl, hu)`` of
    ``hh_k = a_k g_k``, and the bounds of the Jacobian row ``w = v^T J``.

    Example:
        >>> import numpy as np
        >>> from relulab import Network, Box
        >>> from relulab.bounds import float_layers
        >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> Ws, bs, skip = float_layers(net)
        >>> g, h, (w_lo, w_hi) = backward_intervals(Ws, preactivation_bounds(net, Box([-1], [1])), [1.0], [1.0])
        >>> w_lo.tolist(), w_hi.tolist()   # the derivative lies in [-1, 2]
        ([-1.0], [2.0])
    """
    L = len(Ws)
    g_int, h_int = [None] * (L - 1), [None] * (L - 1)
    hl, hu = np.asarray(v_lo, float), np.asarray(v_hi, float)
    for k in range(L - 2, -1, -1):
        W = Ws[k + 1]
        c, r = (hl + hu) / 2, (hu - hl) / 2
        gc, gr = W.T @ c, np.abs(W).T @ r
        gl, gu = gc - gr, gc + gr
        lo, hi = pre[k]
        act = lo >= 0
        ina = hi <= 0
        hl = np.where(act, gl, np.where(ina, 0.0, np.minimum(gl, 0.0)))
        hu = np.where(act, gu, np.where(ina, 0.0, np.maximum(gu, 0.0)))
        g_int[k], h_int[k] = (gl, gu), (hl, hu)
    c, r = (hl + hu) / 2, (hu - hl) / 2
    wc, wr = Ws[0].T @ c, np.abs(Ws[0]).T @ r
    if skip is not None:
        vc, vr = (np.asarray(v_lo) + np.asarray(v_hi)) / 2, (np.asarray(v_hi) - np.asarray(v_lo)) / 2
        wc, wr = wc + skip[0].T @ vc, wr + np.abs(skip[0]).T @ vr
    return g_int, h_int, (wc - wr, wc + wr)


def region_witness(net: Network, pattern: np.ndarray, domain: Box | Polytope | None, p: float,
                   q: float | None, source: str, global_: bool = False) -> LipschitzWitness | None:
    """A certified witness inside the region of ``pattern`` (flat, all hidden layers),
    from the Chebyshev centre of the region (intersected with ``domain``); None when the
    region is not full-dimensional, or when its LP fails (HiGHS on rows of very mixed
    magnitudes): no witness is claimed then.

    Example:
        >>> import numpy as np
        >>> from relulab import Network, Box
        >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> w = region_witness(net, np.array([1, 0]), Box([-1], [1]), 2, None, "demo")
        >>> w.norm, w.pattern, bool(w.x[0] > 0)
        (2.0, '10', True)
    """
    try:
        x = region_center(net, pattern, domain)
    except LPError:
        return None
    return None if x is None else certify_point(net, x, p, q, source, domain)


def region_center(net: Network, pattern: np.ndarray, domain: Box | Polytope | None) -> np.ndarray | None:
    """The Chebyshev centre of the closed region of ``pattern`` within ``domain``, or
    None when that region has no interior (:func:`relulab.lp.no_interior`); a centre of a thin
    region may still fail certification, and callers then claim no exact value.

    Example:
        >>> import numpy as np
        >>> from relulab import Network, Box
        >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> x = region_center(net, np.array([1, 0]), Box([-1], [1]))   # the region x >= 0
        >>> bool(0 < x[0] <= 1), region_center(net, np.array([1, 1]), Box([-1], [1]))
        (True, None)
    """
    fnet = net.float()
    d = net.input_dim
    Aub, bub = fnet.region_inequalities(fnet.split_pattern(pattern))
    lb = ub = None
    if isinstance(domain, Box):
        lb, ub = domain.lo, domain.hi
    elif isinstance(domain, Polytope):
        Aub, bub = np.vstack([Aub, domain.A]), np.concatenate([bub, domain.b])
    keep = np.linalg.norm(Aub, axis=1) > 0
    if np.any(bub[~keep] < 0):
        return None
    Aub, bub = Aub[keep], bub[keep]
    if Aub.shape[0] == 0:
        return domain.center if isinstance(domain, Box) else np.zeros(d)
    # zoomed: a radius of 0 within the LP's tolerances is no proof of an empty region
    x, rad = chebyshev_center_zoomed(Aub, bub, lb, ub)
    return None if no_interior(x, rad) else x


def _input_region_center(net: Network, H: Network, pattern_h: np.ndarray) -> np.ndarray | None:
    """The Chebyshev centre in R^d of the region of ``net`` whose cone carries the
    homogenised pattern ``pattern_h`` (one more neuron per hidden layer, the carrier of
    ``t``, last in its layer); None when that region is not full-dimensional in R^d.

    A pattern whose carrier is off lives on ``t = 0`` only (the recession directions),
    which no region of ``net`` reaches.
    """
    widths = list(net.widths)
    if not widths:
        return np.zeros(net.input_dim)
    starts = np.cumsum([0] + [w + 1 for w in widths])
    pattern_h = np.asarray(pattern_h, bool)
    if not all(pattern_h[s + w] for s, w in zip(starts[:-1], widths, strict=True)):
        return None
    pattern = np.concatenate([pattern_h[s:s + w] for s, w in zip(starts[:-1], widths, strict=True)])
    return region_center(net, pattern, None)


class _Builder:
    """Rows ``A v <= b`` / ``A v == b`` over a growing set of columns."""

    def __init__(self, n0: int):
        self.n = n0
        self.rows, self.rhs, self.eq_rows, self.eq_rhs = [], [], [], []
        self.lb, self.ub, self.integer = [], [], []

    def add_vars(self, k: int, lb, ub, integer=False) -> np.ndarray:
        idx = np.arange(self.n, self.n + k)
        self.n += k
        self.lb.append(np.broadcast_to(np.asarray(lb, float), (k,)).copy())
        self.ub.append(np.broadcast_to(np.asarray(ub, float), (k,)).copy())
        self.integer.append(np.full(k, bool(integer)))
        return idx

    def row(self, cols, vals, rhs, eq=False):
        (self.eq_rows if eq else self.rows).append((np.asarray(cols), np.asarray(vals, float)))
        (self.eq_rhs if eq else self.rhs).append(float(rhs))

    def matrix(self, which) -> sp.csr_matrix:
        rows = self.eq_rows if which == "eq" else self.rows
        if not rows:
            return sp.csr_matrix((0, self.n))
        r = np.concatenate([np.full(len(c), i) for i, (c, _) in enumerate(rows)])
        c = np.concatenate([c for c, _ in rows])
        v = np.concatenate([v for _, v in rows])
        return sp.csr_matrix((v, (r, c)), shape=(len(rows), self.n))


def _expr_row(G: np.ndarray, j: int):
    """Columns and values of row ``j`` of a dense expression matrix."""
    nz = np.flatnonzero(G[j])
    return nz, G[j, nz]


def _build(enc, Ws, pre, skip, d, p, mode, out_index, m, faces=False):
    """The program for one ``v`` (a unit vector ``out_index`` or free signs).  ``faces``
    (the homogenised problem) keeps the input on the outer faces of the box
    ``[-1, 1]^d x [0, 1]`` (``|x_i| = 1`` or ``t = 1``): every cone still meets them, and
    the apex, where every pattern is allowed, is excluded."""
    B = _Builder(enc.n_vars)
    if faces:
        fs = B.add_vars(2 * d + 1, 0.0, 1.0, integer=True)
        for i in range(d):
            B.row([i, fs[2 * i]], [-1.0, 2.0], 1.0)        # x_i >= -1 + 2 s
            B.row([i, fs[2 * i + 1]], [1.0, 2.0], 1.0)     # x_i <= 1 - 2 s
        B.row([d, fs[2 * d]], [-1.0, 1.0], 0.0)            # t >= s
        B.row(fs, np.ones(2 * d + 1), 1.0, eq=True)
    if mode == "signs":
        beta = B.add_vars(m, 0.0, 1.0, integer=True)
        v_lo, v_hi = -np.ones(m), np.ones(m)
    else:
        beta = None
        v_lo = v_hi = np.eye(m)[out_index]
    g_int, h_int, (wl, wu) = backward_intervals(Ws, pre, v_lo, v_hi, skip)
    L = len(Ws)
    # expressions are kept dense over the final column count, so allocate columns first
    hh = [None] * (L - 1)
    for k in range(L - 2, -1, -1):
        hl, hu = h_int[k]
        hh[k] = B.add_vars(len(hl), hl, hu)
    r_inf = p == 1
    if r_inf:
        sel = B.add_vars(2 * d, 0.0, 1.0, integer=True)
        T = float(np.max(np.maximum(np.abs(wl[:d]), np.abs(wu[:d])), initial=0.0))
        tcol = B.add_vars(1, 0.0, T)
    else:
        sel = B.add_vars(d, 0.0, 1.0, integer=True)
        wabs = np.maximum(np.abs(wl[:d]), np.abs(wu[:d]))
        tcol = B.add_vars(d, 0.0, wabs)
    N = B.n

    def v_expr():
        if beta is None:
            return np.zeros((m, N)), v_lo.copy()
        G = np.zeros((m, N))
        G[np.arange(m), beta] = 2.0
        return G, -np.ones(m)

    Gv, gv0 = v_expr()
    Gprev, gprev0 = Gv, gv0  # expression of the vector entering layer L-1 backwards
    for k in range(L - 2, -1, -1):
        W = Ws[k + 1]
        G = W.T @ Gprev
        g0 = W.T @ gprev0
        gl, gu = g_int[k]
        acols = enc.a_cols[k]
        for j in range(len(gl)):
            h, a = hh[k][j], acols[j]
            cols, vals = _expr_row(G, j)
            B.row([h, a], [1.0, -gu[j]], 0.0)
            B.row([h, a], [-1.0, gl[j]], 0.0)
            B.row(np.r_[h, a, cols], np.r_[1.0, -gl[j], -vals], -gl[j] + g0[j])
            B.row(np.r_[h, a, cols], np.r_[-1.0, gu[j], vals], gu[j] - g0[j])
        Gprev = np.zeros((len(gl), N))
        Gprev[np.arange(len(gl)), hh[k]] = 1.0
        gprev0 = np.zeros(len(gl))
    Wx = Ws[0].T @ Gprev
    w0 = Ws[0].T @ gprev0
    if skip is not None:
        Wx = Wx + skip[0].T @ Gv
        w0 = w0 + skip[0].T @ gv0
    if r_inf:
        T = float(B.ub[-1][0])
        for j in range(d):
            cols, vals = _expr_row(Wx, j)
            M = T + max(abs(wl[j]), abs(wu[j]))
            for s, sc in ((1.0, sel[2 * j]), (-1.0, sel[2 * j + 1])):
                # t <= s w_j + M (1 - sel)
                B.row(np.r_[tcol[0], sc, cols], np.r_[1.0, M, -s * vals], s * w0[j] + M)
        B.row(sel, np.ones(2 * d), 1.0, eq=True)
    else:
        for j in range(d):
            cols, vals = _expr_row(Wx, j)
            M = 2.0 * wabs[j]
            B.row(np.r_[tcol[j], sel[j], cols], np.r_[1.0, M, -vals], w0[j] + M)
            B.row(np.r_[tcol[j], sel[j], cols], np.r_[1.0, -M, vals], -w0[j])
    A_ub = sp.vstack([sp.hstack([enc.A_ub, sp.csr_matrix((enc.A_ub.shape[0], N - enc.n_vars))]),
                      B.matrix("ub")]).tocsr()
    b_ub = np.concatenate([enc.b_ub, np.array(B.rhs)])
    lb = np.concatenate([enc.lb, *B.lb])
    ub = np.concatenate([enc.ub, *B.ub])
    integer = np.concatenate([enc.integer, *B.integer])
    obj = np.zeros(N)
    obj[tcol] = 1.0
    return obj, A_ub, b_ub, B.matrix("eq"), np.array(B.eq_rhs), lb, ub, integer


def _balanced(net: Network) -> Network:
    """The same function with each hidden neuron's incoming row (weights and bias) scaled
    to largest entry 1 and its outgoing weights scaled up to match (relu is positively
    homogeneous; the Lipschitz constant is the function's).  ``1e9 relu(1e-9 x)`` put
    entries of 1e-9 into the MILP, which HiGHS drops: it answered 'exact 0' for relu(x).
    Left as it is where the scaling would overflow.

    Example:
        >>> _balanced(Network([[[1e-9]], [[1e9]]], [[0.0], [0.0]])).weights[0].tolist()
        [[1.0]]
    """
    Ws, bs, skip = float_layers(net)
    Ws, bs = [W.copy() for W in Ws], [b.copy() for b in bs]
    for k in range(len(Ws) - 1):
        s = np.max(np.abs(np.hstack([Ws[k], bs[k][:, None]])), axis=1, initial=0.0)
        s[~(s > 0)] = 1.0
        with np.errstate(over="ignore"):
            nxt = Ws[k + 1] * s[None, :]
        if not np.all(np.isfinite(nxt)):
            return net
        Ws[k] /= s[:, None]
        bs[k] /= s
        Ws[k + 1] = nxt
    return Network(Ws, bs, skip)


# a MILP bound below this share of the backward pass's interval bounds (the scale the
# program's absolute tolerances act on), per layer, is raised to it: below, it is no proof
MILP_TRUST = 1e-5  # tol: HiGHS's 1e-7..1e-6 absolute tolerances, with a margin
# what HiGHS's feasibility tolerance ``tol`` can hide in the optimum, as a multiple of
# ``tol x (largest big-M of the forward pass) x (largest backward-pass bound)``: a tent
# of slope 1000 at x = 1000 beside relu(y) read "exact 1000" where the constant is 1001,
# a miss of exactly that product (1e6) times HiGHS's default tolerance 1e-6 (aud_lip7
# #2).  With the tolerance at 1e-9 the same scans found no miss; the bound is still
# widened by the margin, so a miss of that size cannot close the bracket
MILP_TOL_MARGIN = 1.0


def _gradient_reach(Ws: list[np.ndarray], pre, skip) -> float:
    """The largest magnitude in the backward pass's interval bounds (every ``g_k``,
    ``hh_k`` and the sum over the Jacobian row) for output weights in [-1, 1]: the size
    of the values the MILP's absolute tolerances act on.

    Example:
        >>> from relulab import Network, Box
        >>> from relulab.bounds import float_layers
        >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> Ws, _, sk = float_layers(net)
        >>> _gradient_reach(Ws, preactivation_bounds(net, Box([-1], [1])), sk)
        3.0
    """
    m = Ws[-1].shape[0]
    with np.errstate(over="ignore", invalid="ignore"):
        g_int, h_int, (wl, wu) = backward_intervals(Ws, pre, -np.ones(m), np.ones(m), skip)
        sizes = [float(np.sum(np.maximum(np.abs(wl), np.abs(wu))))]
        for lo_hi in g_int + h_int:
            if lo_hi is not None:
                sizes.append(float(np.max(np.abs(np.concatenate(lo_hi)), initial=0.0)))
    return max(sizes)


def tolerance_margin(Ws: list[np.ndarray], pre, skip, ftol: float) -> float:
    """What the program's feasibility tolerance ``ftol`` can hide in its optimum (in the
    units of the network ``Ws``): ``MILP_TOL_MARGIN x ftol x`` the largest pre-activation
    bound (the forward big-M) ``x`` the largest backward-pass bound.

    Example:
        >>> from relulab import Network, Box
        >>> from relulab.bounds import float_layers
        >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> Ws, _, sk = float_layers(net)
        >>> tolerance_margin(Ws, preactivation_bounds(net, Box([-1], [1])), sk, 1e-9) < 1e-6
        True
    """
    big = max([1.0] + [float(np.max(np.maximum(np.abs(lo), np.abs(hi)), initial=0.0)) for lo, hi in pre])
    return MILP_TOL_MARGIN * ftol * big * _gradient_reach(Ws, pre, skip)


def _output_scaled(net: Network) -> tuple[Network, float]:
    """``net`` with its output layer (weights, bias, skip) divided by the power of two
    nearest its largest weight, and that power (exact in floats).

    Example:
        >>> H, s = _output_scaled(Network([[[1.0]], [[3e-5]]], [[0.0], [0.0]]))
        >>> s == 2.0**-15, H.weights[-1].tolist()
        (True, [[0.98304]])
    """
    Ws, bs, skip = float_layers(net)
    top = float(np.max(np.abs(Ws[-1]), initial=0.0))
    if skip is not None:
        top = max(top, float(np.max(np.abs(skip[0]), initial=0.0)))
    if not (top > 0 and np.isfinite(top)):
        return net, 1.0
    s = float(2.0 ** round(math.log2(top)))
    if s == 1.0:
        return net, 1.0
    new_skip = None if skip is None else (skip[0] / s, skip[1] / s)
    return Network([*Ws[:-1], Ws[-1] / s], [*bs[:-1], bs[-1] / s], new_skip), s


def _has_tiny(A) -> bool:
    """Whether a (sparse) constraint matrix holds a nonzero entry HiGHS would drop."""
    if A is None:
        return False
    v = A.data if sp.issparse(A) else np.asarray(A).ravel()
    return bool(np.any((v != 0) & (np.abs(v) <= HIGHS_SMALL)))


def _solver_hint(dom: Box | Polytope, pre: list[tuple[np.ndarray, np.ndarray]]) -> str:
    """Why HiGHS may have failed on a program that is feasible by construction: a domain
    far from the origin for its width (HiGHS's tolerances are relative, about 1e-9), or
    big-M values beyond what it solves; "" when neither.

    Example:
        >>> import numpy as np
        >>> from relulab import Box
        >>> _solver_hint(Box([1e12, 1e12], [1e12 + 2, 1e12 + 2]), [])[:40]
        '; the domain lies 1e+12 from the origin '
        >>> _solver_hint(Box([-1, -1], [1, 1]), [(np.zeros(2), np.ones(2))])
        ''
    """
    box = dom.bounding_box()
    reach = float(np.max(box.magnitudes))
    width = float(np.min(box.hi - box.lo))
    big = max((float(np.max(np.maximum(np.abs(a), np.abs(b)), initial=0.0)) for a, b in pre), default=0.0)
    why = []
    if width > 0 and reach > FAR_OFF_RATIO * width:
        why.append(f"the domain lies {reach:.3g} from the origin and is {width:.3g} wide")
    if big >= HUGE_MILP_VALUE:
        why.append(f"the pre-activation bounds (big-M values) reach {big:.3g}")
    if not why:
        return ""
    return ("; " + " and ".join(why) + ", beyond HiGHS's tolerances: use method='enumerate' or "
            "'bab', or shift and scale the inputs")


def by_milp(net: Network, domain: Box | Polytope | None, p: float, q: float | None,
            deadline: float | None = None, tighten: bool | None = None) -> MILPOutcome:
    """The LipMIP program(s) for ``||J||_{p->q}`` over ``domain`` (R^d when None, through
    the homogenised network on a bounded box).  The upper bound is HiGHS's, widened by
    what its feasibility tolerance can hide (:func:`tolerance_margin`).

    Example:
        >>> from relulab import Network, Box
        >>> net = Network([[[1.0, 1.0], [1.0, -1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> o = by_milp(net, Box([-1, -1], [1, 1]), float("inf"), None)   # l_inf -> |.|: the l1 norm of the gradient
        >>> round(o.upper, 6), o.witness.norm, o.complete
        (2.0, 2.0, True)
    """
    from ..verify.milp import encode, feasibility_tol

    t0 = time.perf_counter()
    m, d = net.output_dim, net.input_dim
    if not milp_supported(p, q, m):
        raise RelulabError(
            f"lipschitz: the MILP route handles p in {{1, inf}} with a scalar output or q in "
            f"{{1, inf}}; got p={p}, q={q} (use method='enumerate' or 'bounds')"
        )
    if net.n_hidden_layers == 0:  # an affine map: one Jacobian everywhere
        x0 = np.zeros(d) if domain is None else (
            domain.center if isinstance(domain, Box) else domain.chebyshev_center()[0])
        wit = certify_point(net, x0, p, q, "milp", domain)
        return MILPOutcome(wit.norm, wit.norm, wit, True, 0, time.perf_counter() - t0)
    if domain is None:
        H, dom = homogeneous_problem(net)
    else:
        H, dom = net, domain
    H = _balanced(H)
    # the program runs on the network with its output layer scaled to size about 1 (the
    # Jacobian scales with it; bounds are scaled back, witnesses certified on H itself):
    # with outputs of 1e-5, HiGHS's absolute tolerances were a few percent of the
    # objective and its "optimal" bound sat 0.8 % below a certified gradient
    Hs, out_scale = _output_scaled(H)
    Ws, bs, skip = float_layers(Hs)
    if tighten is None:
        tighten = H.n_hidden_layers > 1 and H.n_neurons >= 40
    left = None if deadline is None else max(deadline - time.time(), 1e-3)
    pre = preactivation_bounds(Hs, dom, tighten, None if left is None else left / 4)
    enc = encode(Hs, dom, pre)
    # HiGHS's feasibility tolerances set as the verifier sets them (1e-9, or relative to
    # the encoding's largest number), and what they can still hide added to the bound
    ftol = feasibility_tol(pre, dom.bounding_box(), Ws, bs)
    margin = tolerance_margin(Ws, pre, skip, ftol) * out_scale
    mode = "signs" if (m > 1 and q == 1) else "unit"
    outs = [None] if mode == "signs" else list(range(m))
    best_wit, upper, complete = None, 0.0, True
    nodes = 0
    tiny = False
    for n_done, i in enumerate(outs):
        obj, A_ub, b_ub, A_eq, b_eq, lb, ub, integer = _build(enc, Ws, pre, skip, d, p, mode, i or 0, m,
                                                               faces=domain is None)
        tiny = tiny or _has_tiny(A_ub) or _has_tiny(A_eq)
        tl = None if deadline is None else max((deadline - time.time()) / (len(outs) - n_done), 1e-3)
        model = LPModel(obj, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq if A_eq.shape[0] else None,
                        b_eq=b_eq if A_eq.shape[0] else None, lb=lb, ub=ub, integer=integer,
                        maximize=True, time_limit=tl)
        model.set_mip_gap(rel=MIP_REL_GAP, abs=MIP_ABS_GAP)
        model.set_feasibility_tol(primal=ftol, mip=ftol)
        model.set_exact_matrix()   # no entries made and dropped by presolve (see LPModel)
        bound_i = np.inf
        for _cut in range(MAX_NOGOOD_CUTS + 1):
            if deadline is not None:
                model.set_time_limit(max(deadline - time.time(), 1e-3))
            res = model.solve()
            nodes += res.info.get("nodes", 0)
            if res.status not in ("optimal", "time_limit"):
                if res.status == "infeasible" and _cut > 0:
                    bound_i = 0.0  # every remaining pattern was cut off as degenerate
                    break
                # every point of the domain gives a solution: a failure is the solver's
                # (weights of very mixed magnitudes, 1e-6 next to 1e6), so its bound is no
                # bound; the witnesses found so far, certified apart, still stand
                info = {"nodes": nodes, "tightened": bool(tighten),
                        "solver_error": f"the MILP ended with status {res.status}" + _solver_hint(dom, pre)}
                lower = best_wit.norm if best_wit is not None else 0.0
                return MILPOutcome(lower, math.inf, best_wit, False, enc.n_binaries,
                                   time.perf_counter() - t0, info)
            bound_i = float(res.bound) if res.bound is not None and np.isfinite(res.bound) else np.inf
            if res.status == "optimal" and res.objective is not None:
                bound_i = max(bound_i, float(res.objective))
            bound_i *= out_scale  # a power of two: exact
            if res.x is None:
                break
            pat = np.concatenate([res.x[a] > 0.5 for a in enc.a_cols]) if enc.a_cols else np.zeros(0, bool)
            try:
                if domain is None:
                    # the pattern's region is tested in input units: the cone over a region of
                    # width w at distance c meets the outer faces in a sliver ~w / c^2 wide, so
                    # a Chebyshev radius in the homogenised box would call it degenerate
                    centre = _input_region_center(net, H, pat)
                    wit = None if centre is None else certify_point(net, centre, p, q, "milp", None)
                else:
                    centre = region_center(H, pat, dom)
                    # certified on the network itself, not on its rescaled copy
                    wit = None if centre is None else certify_point(net, centre, p, q, "milp", dom)
            except LPError:
                # the region's LP failed: it is not shown degenerate, so it is not cut off
                # and the bound stands (no exact verdict)
                break
            if wit is not None:
                if best_wit is None or wit.norm > best_wit.norm:
                    best_wit = wit
                break
            if res.status != "optimal":
                break
            if centre is not None:
                # a full-dimensional region without a certified witness: cutting it off
                # could drop the true maximum, so the bound stands (no exact verdict)
                break
            # degenerate pattern (no interior): exclude it and solve again
            unst = [a for a, (lo, hi) in zip(enc.a_cols, pre, strict=True)]
            cols = np.concatenate(unst)
            on = res.x[cols] > 0.5
            lo_all = np.concatenate([lo for lo, _ in pre])
            hi_all = np.concatenate([hi for _, hi in pre])
            free = (lo_all < 0) & (hi_all > 0)
            cols, on = cols[free], on[free]
            if cols.size == 0:
                break
            row = sp.csr_matrix((np.where(on, 1.0, -1.0), (np.zeros(cols.size, int), cols)),
                                shape=(1, model.n))
            model.add_rows(row, [-np.inf], [float(on.sum()) - 1.0])
        if res.status != "optimal":
            complete = False
        upper = max(upper, bound_i)
    lower = best_wit.norm if best_wit is not None else 0.0
    info = {"nodes": nodes, "tightened": bool(tighten), "tolerance_margin": margin}
    upper += margin
    floor = MILP_TRUST * len(Ws) * _gradient_reach(Ws, pre, skip) * out_scale
    if upper < floor:
        # the optimum is far below the values the program's absolute tolerances act on:
        # cancelling weights (relu((1 + 1e-9) x) - relu(x) under 1e6) put the true 1e-3
        # under HiGHS's tolerances, and its "optimal" 0 read "exact 0".  What the
        # tolerances can hide is below the floor, so the floor is the bound
        info["tolerance_floor"] = (f"the solver's bound {upper:.3g} is below what its tolerances can "
                                   f"hide ({floor:.3g}, from the backward pass's interval bounds): the "
                                   "bound is that floor")
        upper = floor
    if tiny:
        # HiGHS dropped matrix entries of at most HIGHS_SMALL: its optimum is of another
        # program, so its bound is no bound (the witness, certified apart, still is)
        info["small_coefficients_dropped"] = True
        return MILPOutcome(lower, math.inf, best_wit, False, enc.n_binaries,
                           time.perf_counter() - t0, info)
    reach = hyperplane_reach(net) if domain is None else 0.0
    if reach > GLOBAL_MILP_MAX_REACH:
        info["solver_error"] = (f"the kinks of a neuron all lie at least {reach:.3g} from the origin: "
                                "the homogenised program sees their regions as slivers below its "
                                "tolerances, so its bound is no proof (use method='bab', or a box)")
        return MILPOutcome(lower, math.inf, best_wit, False, enc.n_binaries,
                           time.perf_counter() - t0, info)
    return MILPOutcome(lower, max(upper, lower), best_wit, complete, enc.n_binaries,
                       time.perf_counter() - t0, info)
