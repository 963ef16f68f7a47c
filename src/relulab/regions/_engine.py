"""The subdivision engine: exact linear regions by cutting polytopes neuron by neuron.

Every region is kept as a polytope in vertex form: its vertices, and for each vertex
the ids of the constraints (hyperplanes) tight at it.  Neurons are added one at a
time in network order.  A neuron of hidden layer ``k`` is affine on every region of
the partition made by the layers before ``k`` (its *layer parent*), so on each
current region its pre-activation is one affine function ``z = a x + c``.  We
evaluate ``z`` at all vertices of all regions at once (numpy, no Python loop over
regions), keep the regions whose vertices have one sign, and split the others:
the new vertices are the points where ``z`` vanishes on the edges of the region
whose two ends have opposite signs.  This is the double-description update; the
edges are found combinatorially from the incidences, so no LP is solved:

* a region all of whose vertices lie on exactly ``d`` recorded constraints is a
  *simple* polytope; two of its vertices span an edge iff they share ``d - 1``
  constraints;
* otherwise (a vertex lies on more than ``d`` hyperplanes: degenerate input such as
  constructions or the sawtooth) the exact test is used: two vertices span an edge
  iff no third vertex lies on every constraint the two share.  That test only needs
  every facet to be recorded at every vertex on it, which the update maintains.

Sign policy (see :data:`SIGN_TOL`): a pre-activation value ``z(v) = a v + c`` at a
vertex ``v`` counts as zero when ``|z(v)| <= SIGN_TOL * (sum_i |a_i| (|v_i| + s) + |c|)``
with ``s`` the largest absolute coordinate of the domain's vertices (an absolute floor:
near the origin a purely relative test would read rounding noise as a sign).  A region is
split only when some vertex is strictly positive and another strictly negative
beyond that tolerance, so both parts are full-dimensional; vertices counted as zero
are shared by both parts and recorded as lying on the new hyperplane.  A
pre-activation that vanishes at every vertex vanishes on the region (it is affine),
and the neuron counts as inactive there (ties are inactive, as in
:meth:`Network.activation_pattern`).  Where the terms of a composed map cancel, the
tolerance is never below SIGN_TOL times their size, and a value within their rounding
error has an unknown sign (a near tie): see :func:`_term_scale`.

Work is organised as a stack of *batches* (arrays of many regions at the same
neuron); a batch that grows beyond a size limit is split in two.  Regions therefore
finish in depth-first order, which lets the caller stream them, stop after
``max_regions`` or on Ctrl-C with exact (if not all) regions.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..domain import Box, DomainError, Polytope
from ..errors import RelulabError, UncertifiedCount
from ..limits import check_bytes, memory_budget
from ..network import Network
from ..tolerance import SIGN_TIE_SHARE, SIGN_TOL

__all__ = ["SIGN_TOL", "Problem", "Batch", "run", "FinalChunk"]


# Batches larger than this (regions / vertex slots) are split in two so that memory
# stays bounded and regions stream out early.
MAX_BATCH_REGIONS = 60_000
# With a stop condition (a deadline), a neuron step on one batch that takes longer than
# this halves the batches from then on, so that stop() is asked often enough: on a
# 12-30-30-2 network a step on 256 regions took seconds, and a 6 s limit ended at 12.7 s.
STOP_STEP_SECONDS = 0.25
MAX_BATCH_SLOTS = 600_000
# A vertex slot's working memory, in units of 8 bytes: its coordinates and constraint ids,
# and the d (d - 1)-id edge keys one neuron's split builds for it, with their sort
# temporaries (measured: an 8-input network peaked near this estimate).
SLOT_WORDS_PER_D2 = 4


def slot_cap(pb: Problem, budget: int | None = None) -> int:
    """How many vertex slots a batch may hold before it is halved: MAX_BATCH_SLOTS, or
    fewer where a neuron's split over that many would not fit a quarter of the memory
    budget (``relulab.limits``)."""
    budget = memory_budget() if budget is None else budget
    return int(max(1_000, min(MAX_BATCH_SLOTS, budget // (4 * slot_bytes(pb.d)))))


def slot_bytes(d: int) -> int:
    """A vertex slot's working memory in bytes for ``d`` inputs (SLOT_WORDS_PER_D2).

    Example:
        >>> slot_bytes(2)
        224
    """
    return 8 * (2 * d + 8 + SLOT_WORDS_PER_D2 * d * d)


# --------------------------------------------------------------------- problem data
# Rows of one layer whose float64 hyperplanes agree to this much (each row divided by its
# entry of largest magnitude, sign included) are one hyperplane to the engine's sign tests
# (their vertex values differ by less than its near-tie threshold, 1e-14 of the map's size)
ROUNDED_TOGETHER_TOL = 1e-13  # tol: 10x the near-tie threshold, relative to the row


def _rounded_together(net: Network, rounded: Network) -> int:
    """How many hidden neurons of an exact network have a float64 hyperplane within
    :data:`ROUNDED_TOGETHER_TOL` of an earlier neuron's of the same layer (rows divided by
    their largest entry, sign included, so negated and scaled copies meet) although their
    exact rows are not proportional: rounding made two hyperplanes one.  ``rounded`` is
    ``net.float()``.  (Bit-equal rows of the same sign only were caught: ``x - 1/3`` and
    ``-(x - (1/3 + 1e-20))`` gave 2 regions of 3, certified.)

    Example:
        >>> from fractions import Fraction as F
        >>> third, tiny = F(1, 3), F(1, 10**20)
        >>> net = Network([[[F(1)], [F(-5)]], [[F(1), F(1)]]], [[-third, 5 * (third + tiny)], [F(0)]])
        >>> _rounded_together(net, net.float())
        1
    """
    count = 0
    rng = np.random.default_rng(0)
    for W, b, Wf, bf in zip(net.weights[:-1], net.biases[:-1], rounded.weights[:-1], rounded.biases[:-1],
                            strict=True):
        R = np.column_stack([np.asarray(W), np.asarray(b)])
        F = np.column_stack([np.asarray(Wf, dtype=np.float64), np.asarray(bf, dtype=np.float64)])
        live = np.flatnonzero(np.any(F != 0, axis=1))
        if live.size < 2:
            continue
        piv = np.argmax(np.abs(F[live]), axis=1)
        N = F[live] / F[live, piv][:, None]          # the pivot entry becomes +1
        # bit-equal normalised rows first (repeated neurons are common), each against the
        # first of its group; then the distinct ones by their distance
        uniq, first, inv = np.unique(N, axis=0, return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
        counted = np.zeros(live.size, dtype=bool)
        for i in np.flatnonzero(first[inv] != np.arange(live.size)):
            counted[i] = not _proportional(R[live[first[inv[i]]]], R[live[i]])
        # candidate pairs: close in every entry, so close along a random direction; sort
        # by that projection and compare each row with those within reach of it
        r = rng.standard_normal(N.shape[1])
        proj = uniq @ r
        reach = ROUNDED_TOGETHER_TOL * float(np.abs(r).sum())
        order = np.argsort(proj, kind="stable")
        for a in range(order.size):
            u = int(order[a])
            for bpos in range(a + 1, order.size):
                v = int(order[bpos])
                if proj[v] - proj[u] > reach:
                    break
                i, j = int(first[u]), int(first[v])
                if not counted[j] and np.max(np.abs(uniq[u] - uniq[v])) <= ROUNDED_TOGETHER_TOL \
                        and not _proportional(R[live[i]], R[live[j]]):
                    counted[j] = True
        count += int(counted.sum())
    return count


def _proportional(u: np.ndarray, v: np.ndarray) -> bool:
    """Whether two exact rows are nonzero multiples of each other (one hyperplane).

    Example:
        >>> from fractions import Fraction as F
        >>> _proportional(np.array([F(1), F(-1, 3)]), np.array([F(-5), F(5, 3)])), _proportional(
        ...     np.array([F(1), F(-1, 3)]), np.array([F(1), F(-1, 3) - F(1, 10**20)]))
        (True, False)
    """
    from fractions import Fraction

    k = next((t for t, x in enumerate(v) if x != 0), None)
    if k is None or u[k] == 0:
        return False
    return all(Fraction(a) * Fraction(v[k]) == Fraction(c) * Fraction(u[k]) for a, c in zip(u, v, strict=True))


def refuse_rows_below_normal(Ws: list, bs: list, exact: Network | None = None) -> None:
    """Refuse (RelulabError naming the neuron) a hidden row ``(w, b)`` of the float layers
    ``Ws``/``bs`` whose largest entry is below float64's normal range while the row is not
    zero: subnormals have lost their relative precision, so the hyperplane is not where the
    signs are decided.  With ``exact`` (the exact network the layers round) a row rounded
    to zero counts too when its exact row is not zero: a row of 1e-400 vanished, and the
    region it cut was not counted, certified.

    Example:
        >>> from fractions import Fraction as F
        >>> net = Network([[[F(1, 10**400)], [F(1)]], [[F(1), F(1)]]], [[F(1, 10**401), F(0)], [F(0)]])
        >>> refuse_rows_below_normal(net.float().weights, net.float().biases, net)
        Traceback (most recent call last):
        ...
        relulab.errors.RelulabError: regions: neuron 1 of hidden layer 1 has an exact row below ...
    """
    tiny = float(np.finfo(np.float64).tiny)
    for k, (W, b) in enumerate(zip(Ws[:-1], bs[:-1], strict=True)):
        top = np.maximum(np.max(np.abs(np.asarray(W, dtype=np.float64)), axis=1, initial=0.0),
                         np.abs(np.asarray(b, dtype=np.float64)))
        for i in np.flatnonzero(top < tiny):
            if top[i] > 0 or (exact is not None and (any(x != 0 for x in exact.weights[k][i])
                                                     or exact.biases[k][i] != 0)):
                row = "an exact row" if exact is not None else "a row"
                raise RelulabError(
                    f"regions: neuron {int(i) + 1} of hidden layer {k + 1} has {row} below float64's normal "
                    f"range (largest entry {float(top[i]):.3g} in float64; its hyperplane would be lost or "
                    "moved by the rounding): rescale that neuron (a positive scale of its row, undone in "
                    "the next layer's column, leaves the regions unchanged)")


class CutStopped(RelulabError):
    """The stop condition ended the cutting of the domain polytope by its rows (see
    :func:`initial_polytope`): no region has been found yet."""


class Problem:
    """A network and a domain prepared for the engine (float64)."""

    def __init__(self, net: Network, domain: Box | Polytope, *, big: float | None = None):
        # hidden neurons that float64 rounding makes one hyperplane while the exact rows
        # differ (x - 1/3 and x - (1/3 + 1e-20)): the engine merges them, unseen by its
        # sign tests, so the result cannot be certified
        g = net.float() if net.is_exact else net
        self.rounded_together = _rounded_together(net, g) if net.is_exact else 0
        if net.is_exact:
            refuse_rows_below_normal(g.weights, g.biases, net)
        net = g
        self.net = net
        self.d = net.input_dim
        self.Ws = [np.asarray(W, dtype=np.float64) for W in net.weights]
        self.bs = [np.asarray(b, dtype=np.float64) for b in net.biases]
        self.widths = tuple(int(w) for w in net.widths)
        self.n_layers = len(self.widths)  # hidden layers
        self.offsets = np.concatenate([[0], np.cumsum(self.widths)]).astype(np.int64)
        self.N = int(self.offsets[-1])
        self.layer_of = np.repeat(np.arange(self.n_layers), self.widths).astype(np.int64)
        self.local_of = np.arange(self.N) - self.offsets[self.layer_of]
        if domain.dim != self.d:
            raise DomainError(f"domain has dimension {domain.dim}; the network takes {self.d} inputs")
        self.domain = domain
        if isinstance(domain, Box):
            # Box.to_polytope() order, without the emptiness LP of Polytope()
            self.A_dom = np.vstack([np.eye(self.d), -np.eye(self.d)])
            self.b_dom = np.concatenate([domain.hi, -domain.lo]).astype(np.float64)
        else:
            self.A_dom = np.asarray(domain.A, dtype=np.float64)
            self.b_dom = np.asarray(domain.b, dtype=np.float64)
        self.m_dom = self.A_dom.shape[0]
        # ids: neurons [0, N), domain rows [N, N + m), artificial box [N + m, N + m + 2d)
        self.art0 = self.N + self.m_dom
        self.n_ids = self.art0 + 2 * self.d
        self.big = big
        self.xscale = 0.0  # set from the initial polytope's vertices
        # sign decisions the float test could not make safely (see _count_ties)
        self.near_ties = self.rounded_together
        # the domain is too large for the sign tolerance to see the arrangement
        # (see _check_resolution)
        self.coarse = False
        # a Box whose 2 d rows (Box.to_polytope() order) open a polytope domain: the
        # engine starts from the box's exact corners and cuts by the remaining rows only
        # (a cell of a box cut by hyperplanes: see _neuron_cells)
        self.start_box: Box | None = None
        # asked between the domain rows' cuts (a time limit; None: never stops): a 12-D
        # polytope of 48 rows took 12 s of a 0.5 s limit before the first neuron
        self.stop_cutting = None

    def compose_noise(self, k: int) -> float:
        """The relative rounding error of layer ``k``'s last composition against the size
        of its terms (:func:`_term_scale`), as typically met: a sum of ``n = w_(k-1) + 1``
        rounded products errs by about ``sqrt(n)`` ulp (random signs), taken 4 times.  Its
        worst case, ``n`` ulp, is rarely approached and would put most pairs of a random
        64-wide layer under suspicion.  0 for the first layer (its rows are the weights
        themselves)."""
        if k == 0:
            return 0.0
        return 4.0 * float(np.finfo(np.float64).eps) * float(np.sqrt(self.widths[k - 1] + 2))

    def is_neuron(self, ids: np.ndarray) -> np.ndarray:
        return ids < self.N

    def is_domain(self, ids: np.ndarray) -> np.ndarray:
        return (ids >= self.N) & (ids < self.art0)

    def is_artificial(self, ids: np.ndarray) -> np.ndarray:
        return ids >= self.art0


# ------------------------------------------------------------------------- batches
@dataclass
class Batch:
    """Many regions at the same stage (the next neuron to add is ``stage``).

    Vertex slots live in pools ``X`` / ``F``; region ``r`` owns the slots
    ``start[r] : start[r] + cnt[r]``.  Splitting appends the children's slots at the
    end of the pools and abandons the parent's, so one neuron costs time in proportion
    to the regions it cuts, not to the whole batch; :meth:`compact` reclaims the space.
    """

    start: np.ndarray  # (n,) first slot of each region
    cnt: np.ndarray  # (n,) number of vertices of each region
    X: np.ndarray  # (cap, d) vertex coordinates (one copy per region)
    F: np.ndarray  # (cap, K) int64 ids of the constraints tight at the vertex, -1 padded
    used: int  # slots in use (live or dead) at the start of the pools
    cur: np.ndarray  # (n, w_k) bool: pattern of the current layer
    par: np.ndarray  # (n, n_layers) int64: index of the layer-k parent in Zs[k]
    Zs: list = field(default_factory=list)  # per entered layer: (P_k, w_k, d + 1)
    # per entered layer: the (region, neuron) pairs whose composed maps lost terms that
    # cancel, with those terms' size (a CancelledTerms, see _term_scale), or None
    cancelled: list = field(default_factory=list)
    Ppat: list = field(default_factory=list)  # per entered layer: (P_k, offsets[k]) bool
    cuts: np.ndarray | None = None  # (P_k, w_k) bool: neuron changes sign on the parent
    psign: np.ndarray | None = None  # (P_k, w_k) bool: sign on a parent it does not cut
    stage: int = 0
    layer: int = -1  # the hidden layer whose data (Zs[layer]) is loaded
    weight: float = 1.0  # share of the whole domain, for the progress bar
    dead: int = 0  # abandoned slots

    @property
    def n(self) -> int:
        return int(self.start.shape[0])

    @property
    def ptr(self) -> np.ndarray:
        """Slot offsets; valid after :meth:`compact`."""
        out = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(self.cnt, out=out[1:])
        return out

    def compact(self) -> None:
        """Store the live slots contiguously in region order."""
        slots, ptr = _gather_slots_sc(self.start, self.cnt, np.arange(self.n))
        self.X = self.X[slots]
        self.F = _compact(self.F[slots])
        self.start = ptr[:-1].copy()
        self.used = int(ptr[-1])
        self.dead = 0

    def append_slots(self, Xc: np.ndarray, Fc: np.ndarray) -> int:
        """Append slots to the pools; returns the first new slot index."""
        m = Xc.shape[0]
        need = self.used + m
        cap = self.X.shape[0]
        K = max(self.F.shape[1], Fc.shape[1])
        if need > cap or K > self.F.shape[1]:
            newcap = max(need, 2 * cap) if need > cap else cap
            X = np.empty((newcap, self.X.shape[1]))
            X[: self.used] = self.X[: self.used]
            F = np.full((newcap, K), -1, dtype=np.int64)
            F[: self.used, : self.F.shape[1]] = self.F[: self.used]
            self.X, self.F = X, F
        s0 = self.used
        self.X[s0:need] = Xc
        self.F[s0:need] = _pad(Fc, K)
        self.used = need
        return s0


def _gather_slots_sc(start: np.ndarray, cnt: np.ndarray, idx: np.ndarray):
    """Slot indices of regions ``idx`` (in that order) and the new offsets."""
    c = cnt[idx]
    newptr = np.zeros(idx.shape[0] + 1, dtype=np.int64)
    np.cumsum(c, out=newptr[1:])
    slots = np.repeat(start[idx] - newptr[:-1], c) + np.arange(newptr[-1])
    return slots, newptr


def _slot_region(ptr: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(ptr.shape[0] - 1), np.diff(ptr))


def _gather_slots(ptr: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Slot indices of regions ``idx`` (in that order) and the new offsets."""
    cnt = ptr[idx + 1] - ptr[idx]
    newptr = np.zeros(idx.shape[0] + 1, dtype=np.int64)
    np.cumsum(cnt, out=newptr[1:])
    slots = np.repeat(ptr[idx] - newptr[:-1], cnt) + np.arange(newptr[-1])
    return slots, newptr


def _pad(F: np.ndarray, K: int) -> np.ndarray:
    if F.shape[1] == K:
        return F
    if F.shape[1] > K:
        return F[:, :K]
    out = np.full((F.shape[0], K), -1, dtype=np.int64)
    out[:, : F.shape[1]] = F
    return out


def _compact(F: np.ndarray) -> np.ndarray:
    """Valid ids first (descending), -1 padding last, trailing all -1 columns dropped."""
    if F.shape[0] == 0:
        return F
    F = -np.sort(-F, axis=1)
    k = int((F >= 0).sum(1).max())
    return np.ascontiguousarray(F[:, : max(k, 1)])


def _concat_F(parts: list[np.ndarray]) -> np.ndarray:
    K = max(p.shape[1] for p in parts)
    return np.concatenate([_pad(p, K) for p in parts], axis=0)


# ---------------------------------------------------------------------- splitting
def _simple_edges(F, reg, slots, d, n_ids):
    """Edges of simple regions: for every vertex and every one of its ``d`` ids, the
    other ``d - 1`` ids determine the edge leaving that facet; the two ends of an edge
    share the key.  ``slots``: the slots of the simple regions.  Returns (a, b, ids)
    with ``ids`` the (d - 1) shared constraint ids of edge (a, b)."""
    Fs = F[slots, :d]
    S = slots.shape[0]
    if d == 1:
        subs = np.zeros((S, 1, 0), dtype=np.int64)
    else:
        cols = np.array([[c for c in range(d) if c != drop] for drop in range(d)])
        subs = Fs[:, cols]  # (S, d, d - 1)
    rows = np.repeat(slots, d)
    sub = subs.reshape(S * d, d - 1)
    rr = reg[rows]
    nbits = int(n_ids).bit_length()
    rbits = int(max(int(rr.max(initial=0)), 1)).bit_length()
    if nbits * (d - 1) + rbits <= 62:
        key = rr.astype(np.int64)
        for c in range(d - 1):
            key = (key << nbits) | sub[:, c]
        order = np.argsort(key, kind="stable")
        ks = key[order]
        same = ks[1:] == ks[:-1]
    else:
        cols_ = [sub[:, c] for c in range(d - 2, -1, -1)] + [rr]
        order = np.lexsort(cols_)
        M = np.concatenate([rr[:, None], sub], axis=1)[order]
        same = np.all(M[1:] == M[:-1], axis=1)
    i = np.flatnonzero(same)
    a = rows[order[i]]
    b = rows[order[i + 1]]
    ids = sub[order[i]]
    return a, b, ids


def _edges(F, ptr, reg, pos, neg, d, n, n_ids):
    """Edges (u, w) with u positive and w negative.  Returns (U, W, ids) with ``ids``
    the shared constraint ids (padded with -1)."""
    nvalid = (F >= 0).sum(1)
    simple_reg = np.logical_and.reduceat(nvalid == d, ptr[:-1]) if n else np.zeros(0, bool)
    simple_slot = simple_reg[reg]
    out_U, out_W, out_ids = [], [], []
    ss = np.flatnonzero(simple_slot)
    if ss.size:
        a, b, ids = _simple_edges(F, reg, ss, d, n_ids)
        ab = pos[a] & neg[b]
        ba = neg[a] & pos[b]
        out_U += [a[ab], b[ba]]
        out_W += [b[ab], a[ba]]
        out_ids += [ids[ab], ids[ba]]
    ds = np.flatnonzero(~simple_slot)
    if ds.size:
        pos_idx = ds[pos[ds]]
        neg_idx = ds[neg[ds]]
        U, W, common = _general_edges(F, ptr, reg, pos_idx, neg_idx, d, n)
        out_U.append(U)
        out_W.append(W)
        out_ids.append(np.where(common, F[U], -1))
    if not out_U:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, max(d - 1, 1)), np.int64)
    K = max(max(x.shape[1] for x in out_ids), 1)
    return (
        np.concatenate(out_U),
        np.concatenate(out_W),
        np.concatenate([_pad(x, K) for x in out_ids], axis=0),
    )


def _general_edges(F, ptr, reg, pos_idx, neg_idx, d, n):
    """Pairs (u, w), u positive and w negative, that span an edge of their region
    (any polytope): they share at least d - 1 ids and no third vertex lies on all of
    them.  Returns (U, W, common) with ``common`` the mask over ``F[U]`` of the shared ids.
    """
    Nc = np.bincount(reg[neg_idx], minlength=n)
    neg_start = np.zeros(n, dtype=np.int64)
    np.cumsum(Nc[:-1], out=neg_start[1:])
    reps = Nc[reg[pos_idx]]
    U = np.repeat(pos_idx, reps)
    tot = U.shape[0]
    first = np.repeat(np.cumsum(reps) - reps, reps)
    within = np.arange(tot) - first
    rU = reg[U]
    W = neg_idx[neg_start[rU] + within]
    FU = F[U]
    FW = F[W]
    common = ((FU[:, :, None] == FW[:, None, :]) & (FU[:, :, None] >= 0)).any(2)
    cc = common.sum(1)
    edge = np.zeros(U.shape[0], dtype=bool)
    cand = np.flatnonzero(cc >= d - 1)
    if cand.size:
        # exact combinatorial test: no third vertex of the region lies on all shared ids
        cnt = np.diff(ptr)
        rc = rU[cand]
        reps2 = cnt[rc]
        P2 = np.repeat(np.arange(cand.size), reps2)
        first2 = np.repeat(np.cumsum(reps2) - reps2, reps2)
        Xs = np.repeat(ptr[rc], reps2) + (np.arange(P2.shape[0]) - first2)
        Fu = FU[cand][P2]
        cm = common[cand][P2]
        inX = (Fu[:, :, None] == F[Xs][:, None, :]).any(2)
        contained = (inX | ~cm).all(1)
        contained &= (Xs != U[cand][P2]) & (Xs != W[cand][P2])
        blocked = np.bincount(P2, weights=contained, minlength=cand.size) > 0
        edge[cand] = ~blocked
    return U[edge], W[edge], common[edge]


def split_regions(X, F, ptr, s, pos, neg, h, d, n_ids):
    """Split every region of (X, F, ptr) by the hyperplane ``h`` with vertex values ``s``.

    Every region must have a positive and a negative vertex.  Returns the children
    (X, F, ptr) with child ``2 i`` the positive part of region ``i`` and ``2 i + 1``
    the negative part.
    """
    n = ptr.shape[0] - 1
    reg = _slot_region(ptr)
    U, W, Fn = _edges(F, ptr, reg, pos, neg, d, n, n_ids)
    t = s[U] / (s[U] - s[W])
    Xn = X[U] + t[:, None] * (X[W] - X[U])
    Fn = np.concatenate([Fn, np.full((Fn.shape[0], 1), h, dtype=np.int64)], axis=1)
    zero = ~pos & ~neg
    Fx = np.concatenate([F, np.where(zero, h, -1)[:, None].astype(np.int64)], axis=1)
    plus = pos | zero
    minus = neg | zero
    rn = reg[U]
    keys = np.concatenate([2 * reg[plus], 2 * reg[minus] + 1, 2 * rn, 2 * rn + 1])
    order = np.argsort(keys, kind="stable")
    Xall = np.concatenate([X[plus], X[minus], Xn, Xn], axis=0)[order]
    Fall = _concat_F([Fx[plus], Fx[minus], Fn, Fn])[order]
    cnt = np.bincount(keys, minlength=2 * n)
    newptr = np.zeros(2 * n + 1, dtype=np.int64)
    np.cumsum(cnt, out=newptr[1:])
    return Xall, _compact(Fall), newptr


class SignTest(NamedTuple):
    """The sign test of one pre-activation at some vertices (see :func:`_values`)."""

    s: np.ndarray  # the values z = a x + c
    tol: np.ndarray  # |z| <= tol counts as zero
    pos: np.ndarray  # z > tol
    neg: np.ndarray  # z < -tol
    tie: np.ndarray  # beyond this on the wrong side of its region's sign: a near tie
    unsure: np.ndarray  # |z| within the rounding noise of cancelled terms: sign unknown


def _values(X, Zrow, xscale: float = 0.0, terms: np.ndarray | None = None,
            noise: float = 0.0) -> SignTest:
    """The sign test of z = a x + c per slot (Zrow: (S, d + 1)).

    ``terms`` (S, d + 1): the size of the terms that make each row's coefficients,
    before they cancel (see :class:`CancelledTerms`), or None where nothing cancelled.
    The tolerance is never below SIGN_TOL x them (weighted like the row: ``|x_i| + s``
    and 1), so the rounding error of a cancellation is never read as a sign.  The
    near-tie threshold is the share SIGN_TIE_SHARE of the tolerance *without* them: a
    value in between is the cancellation's rounding noise or a real feature.  A value
    within ``noise`` (:meth:`Problem.compose_noise`) x the terms at the vertex itself
    (weights ``|x_i|`` and 1: an exact 0 at the origin of a bias-free network stays 0) of
    0, where that exceeds the near-tie threshold, has an unknown sign (``unsure``).
    """
    d = X.shape[1]
    a = Zrow[:, :d]
    c = Zrow[:, d]
    s = np.einsum("sd,sd->s", X, a) + c
    ax = np.abs(X)
    scale = ((ax + xscale) * np.abs(a)).sum(1) + np.abs(c)
    tie = SIGN_TIE_SHARE * SIGN_TOL * scale
    if terms is None:
        tol = SIGN_TOL * scale
        unsure = np.zeros(s.shape, dtype=bool)
    else:
        at_x = (ax * terms[:, :d]).sum(1) + terms[:, d]
        tol = SIGN_TOL * np.maximum(scale, at_x + xscale * terms[:, :d].sum(1))
        err = noise * at_x
        unsure = (np.abs(s) <= err) & (err > tie)
    return SignTest(s, tol, s > tol, s < -tol, tie, unsure)


class CancelledTerms(NamedTuple):
    """The (region, neuron) pairs of one layer whose composed maps lost terms that
    cancel (see :func:`_term_scale`), sorted by ``key = region * width + neuron``, with
    the size of the terms behind each coefficient (``|W| (cur * |Zp|) + |bias|``)."""

    key: np.ndarray  # (F,) int64, sorted
    width: int
    terms: np.ndarray  # (F, d + 1)

    def lookup(self, regions: np.ndarray, neuron: int) -> tuple[np.ndarray, np.ndarray]:
        """``(hit, rows)``: which of ``regions`` have ``neuron`` among the pairs, and their
        term rows (zero rows for the others)."""
        q = regions.astype(np.int64) * self.width + neuron
        pos = np.minimum(np.searchsorted(self.key, q), self.key.shape[0] - 1)
        hit = self.key[pos] == q
        rows = np.where(hit[:, None], self.terms[pos], 0.0)
        return hit, rows


def _rows_per_chunk(width: int, d: int) -> int:
    """Rows of (width, d + 1) maps gathered at once: about 4 million entries a chunk."""
    return max(1, 4_000_000 // max(1, width * (d + 1)))


def _term_scale(W: np.ndarray, bias: np.ndarray, cur: np.ndarray, Zp: np.ndarray, Z: np.ndarray,
                xscale: float, noise: float) -> CancelledTerms | None:
    """The (region, neuron) pairs of a layer whose composed maps ``Z = W (cur * Zp) +
    bias`` lost terms that cancel, with the size of those terms per coefficient.

    A pair counts when the rounding error of the sum (``noise`` times the terms, bounded
    over the domain ``|x_i| <= s`` as ``|W| (cur * m(Zp)) + |bias|`` with ``m(a x + c) =
    s |a|_1 + |c|``) can reach the near-tie threshold ``SIGN_TIE_SHARE * SIGN_TOL * m(Z)``;
    elsewhere the error stays below every threshold the sign test uses.  None when no
    pair counts.

    ``Z`` keeps the rounding error of its sums; where their terms cancel
    (``(x + 1e6) - 1e6``) that error (here 1e-10) is far above a tolerance relative to
    the map alone, which would then read it as a sign.  Only the last composition's
    terms are counted: an earlier layer's rounding, amplified by later weights, is not
    (the worst case compounds the absolute weights layer after layer and would flag
    every deep construction).

    Example:
        >>> Zp = np.array([[[1.0, 1e6]]]); W = np.array([[1.0]]); b = np.array([-1e6])
        >>> Z = W @ Zp[0] + np.array([[0.0, -1e6]])        # x + 1e6 - 1e6 = x
        >>> t = _term_scale(W, b, np.ones((1, 1), bool), Zp, Z[None], 1.0, 1e-15)
        >>> t.key.tolist(), t.terms.tolist()
        ([0], [[1.0, 2000000.0]])
    """
    d = Zp.shape[2] - 1
    absW = np.abs(W)
    m_prev = xscale * np.abs(Zp[:, :, :d]).sum(2) + np.abs(Zp[:, :, d])  # (n, w_prev)
    M = (cur * m_prev) @ absW.T + np.abs(bias)
    floor = xscale * np.abs(Z[:, :, :d]).sum(2) + np.abs(Z[:, :, d])
    fr, fj = np.nonzero(noise * M > (SIGN_TIE_SHARE * SIGN_TOL) * floor)
    if fr.shape[0] == 0:
        return None
    # in chunks: on ACAS Xu nearly every pair counts, and Zp[fr] at once was (634818, 50,
    # 6), 1.4 GB, twice over with its abs(), past a 1 GB budget that sized the batch
    terms = np.empty((fr.shape[0], d + 1))
    step = _rows_per_chunk(Zp.shape[1], d)
    for s0 in range(0, fr.shape[0], step):
        r, j = fr[s0:s0 + step], fj[s0:s0 + step]
        terms[s0:s0 + step] = np.einsum("fi,fik->fk", absW[j] * cur[r], np.abs(Zp[r]))
    terms[:, d] += np.abs(bias[fj])
    return CancelledTerms(fr.astype(np.int64) * W.shape[0] + fj, W.shape[0], terms)


# -------------------------------------------------------------- initial polytopes
def _box_start(lo: np.ndarray, hi: np.ndarray, id_hi: np.ndarray, id_lo: np.ndarray):
    d = lo.shape[0]
    bits = (np.arange(2**d)[:, None] >> np.arange(d)) & 1
    X = np.where(bits == 1, hi, lo).astype(np.float64)
    F = np.where(bits == 1, id_hi[None, :], id_lo[None, :]).astype(np.int64)
    return X, F, np.array([0, 2**d], dtype=np.int64)


def initial_polytope(pb: Problem) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Vertices and incidences of the domain (intersected with an artificial box when the
    domain is unbounded).  Returns (X, F, ptr, bounded_domain)."""
    d = pb.d
    dom = pb.domain
    if d > 16:
        raise DomainError(f"region enumeration in dimension {d} is not supported (at most 16)")
    box = dom if isinstance(dom, Box) else pb.start_box
    if box is not None:
        if np.any(box.hi <= box.lo):
            raise DomainError("region enumeration needs a full-dimensional box (lo < hi everywhere)")
        ids_hi = pb.N + np.arange(d)
        ids_lo = pb.N + d + np.arange(d)
        X, F, ptr = _box_start(box.lo, box.hi, ids_hi, ids_lo)
        pb.xscale = float(np.abs(X).max())
        _check_resolution(pb, box.lo, box.hi)
        if isinstance(dom, Box):
            return X, F, ptr, True
        return (*_cut_by_rows(pb, X, F, ptr, range(2 * d, pb.m_dom)), True)
    # a polytope: start from a box strictly containing it (or a big box) and cut
    bounded = dom.n_constraints > 0 and dom.is_bounded
    if bounded:
        bb = dom.bounding_box()
        span = float(np.max(bb.hi - bb.lo))
        if span <= 0:
            raise DomainError("region enumeration needs a full-dimensional domain")
        lo = bb.lo - 0.25 * span - 1.0
        hi = bb.hi + 0.25 * span + 1.0
    else:
        M = float(pb.big)
        lo, hi = -M * np.ones(d), M * np.ones(d)
    ids_hi = pb.art0 + np.arange(d)
    ids_lo = pb.art0 + d + np.arange(d)
    X, F, ptr = _box_start(lo, hi, ids_hi, ids_lo)
    pb.xscale = float(np.abs(X).max())
    _check_resolution(pb, lo, hi)
    return (*_cut_by_rows(pb, X, F, ptr, range(pb.m_dom)), bounded)


# values the engine may compute (vertex coordinates times weights, products of weight
# matrices) must stay below this: beyond it, sums overflow float64 and signs are lost
FLOAT_RANGE = 1e300


# log10 of the largest product of the hidden layers' largest weights below which their
# composed maps underflow (float64's smallest normal number is about 2.2e-308)
FLOAT_FLOOR_LOG10 = -280.0


def check_float_range(Ws: list[np.ndarray], bs: list[np.ndarray], radius: float) -> None:
    """Refuse (RelulabError) a network whose values on points of norm ``radius`` may
    overflow float64: the bound is the absolute product ``|W_k| ... |W_1|`` (which bounds
    every region's affine map, whatever its pattern) applied to ``radius``, plus the
    biases carried the same way.  Weights near 1e308 made the engine count 1 region,
    certified, where there are 2.

    Example:
        >>> check_float_range([np.eye(2), np.ones((1, 2))], [np.zeros(2), np.zeros(1)], 1e6)
        >>> check_float_range([np.array([[1e308]])], [np.zeros(1)], 10.0)
        Traceback (most recent call last):
        ...
        relulab.errors.RelulabError: regions: the network's values reach beyond float64 ...
    """
    reach = np.full(Ws[0].shape[1], float(radius))  # a bound on |x| per coordinate
    with np.errstate(over="ignore", invalid="ignore"):
        for W, b in zip(Ws, bs, strict=True):
            reach = np.abs(W) @ reach + np.abs(b)
            top = float(np.max(reach, initial=0.0))
            if not top < FLOAT_RANGE:  # NaN and inf too
                raise RelulabError(
                    f"regions: the network's values reach beyond float64 (up to {top:.3g} on "
                    f"points of norm {radius:.3g}; weights up to "
                    f"{max(float(np.abs(V).max()) for V in Ws):.3g}): rescale the network (a "
                    "positive scale of a layer leaves its regions unchanged) or the domain")
    # and beneath it: a hidden row whose entries are all subnormal has lost its relative
    # precision (its products with the vertices lose more), so its hyperplane is not where
    # the signs are decided
    refuse_rows_below_normal(Ws, bs)
    # composed maps whose entries are all below ~1e-280 lose their digits to underflow
    # (layers scaled by 1e-170 gave 3 regions of 4, certified)
    log_scale = 0.0
    for W in Ws[:-1]:
        top = float(np.max(np.abs(W), initial=0.0))
        if top == 0.0:
            break   # a zero layer: the function is constant from here on, nothing to lose
        log_scale += float(np.log10(top))
        if log_scale < FLOAT_FLOOR_LOG10:
            raise RelulabError(
                f"regions: the network's composed weights fall below float64's range (about "
                f"1e{log_scale:.0f}, weights down to {top:.3g}): rescale the layers (a positive "
                "scale of a layer leaves its regions unchanged)")


def first_layer_reach(W0: np.ndarray, b0: np.ndarray) -> float:
    """The largest distance of a first-layer hyperplane (rows ``W0``, ``b0``; zero rows
    have none) from the origin, 0.0 when there is none.

    Example:
        >>> first_layer_reach(np.array([[3.0, 4.0], [0.0, 0.0]]), np.array([10.0, 7.0]))
        2.0
    """
    nrm = np.linalg.norm(W0, axis=1)
    live = nrm > 0
    return float(np.max(np.abs(b0[live]) / nrm[live])) if live.any() else 0.0


# first-layer vertices examined by smallest_first_layer_feature at most (d-subsets of
# rows), and at most this many (subset, hyperplane) distances; beyond, a seeded sample of
# that many subsets (the check was skipped above 20,000 subsets, and one far neuron hid
# every feature of a 2-201-1 net on a large box: 599 regions of 20,300, certified)
FEATURE_SUBSETS_MAX = 2_000_000
FEATURE_WORK_MAX = 50_000_000   # about 0.1-0.3 s: d^3 + n d operations per subset
FEATURE_CHUNK = 20_000
# a first-layer feature below this many sign tolerances (SIGN_TOL x the domain's scale) is
# merged by the sign test without a near tie: values below the tie threshold (SIGN_TIE_SHARE
# of the tolerance, at a vertex whose scale is up to about twice the domain's) read as 0;
# larger ones, up to the tolerance, are counted as near ties by the engine itself
FEATURE_TOLERANCES = 4 * SIGN_TIE_SHARE
# distances below this share of the numbers behind them are exact coincidences (a
# degenerate arrangement), not features
FEATURE_ROUNDING = 1e-12  # tol: float rounding of the vertices' solves
TINY_FEATURE = 1e-300  # tol: an exact 0 distance is a coincidence


def smallest_first_layer_feature(W0: np.ndarray, b0: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float | None:
    """The smallest positive distance, in the box ``[lo, hi]``, between a vertex of the
    first layer's arrangement (``d`` hyperplanes meeting in a point) and another of its
    hyperplanes, or between two parallel hyperplanes; None when there is no feature.
    Every vertex is examined up to FEATURE_SUBSETS_MAX of them (and FEATURE_WORK_MAX
    operations); beyond, a seeded sample of that many (a search, not a proof).  Distances within the vertices'
    own rounding are coincidences (a degenerate arrangement), not features.

    Example:
        >>> W0, b0 = np.array([[1.0], [1.0], [1.0]]), np.array([0.0, -0.5, 1e3])
        >>> smallest_first_layer_feature(W0, b0, np.array([-1e13]), np.array([1e13]))
        0.5
    """
    nrm = np.linalg.norm(W0, axis=1)
    live = nrm > 0
    A, c = W0[live] / nrm[live, None], b0[live] / nrm[live]
    n, d = A.shape
    if n < 2:
        return None
    slack = FEATURE_ROUNDING * float(np.max(np.abs(np.concatenate([lo, hi]))))  # the box test's
    best = np.inf
    # parallel hyperplanes (normals equal or opposite): their distance, a feature when it
    # exceeds the rounding of the offsets themselves
    G = A @ A.T
    i, j = np.nonzero(np.triu(np.abs(np.abs(G) - 1.0) <= FEATURE_ROUNDING, 1))
    if i.size:
        dist = np.abs(c[i] - np.sign(G[i, j]) * c[j])
        dist = dist[dist > FEATURE_ROUNDING * (np.abs(c[i]) + np.abs(c[j])) + TINY_FEATURE]
        if dist.size:
            best = float(dist.min())
    if n > d:
        for S in _feature_subsets(n, d):
            best = min(best, _vertex_feature(A, c, S, lo, hi, slack))
    return best if np.isfinite(best) else None


def _feature_subsets(n: int, d: int) -> Iterator[np.ndarray]:
    """The d-subsets of ``n`` rows that :func:`smallest_first_layer_feature` examines, in
    chunks: all of them within the caps (FEATURE_SUBSETS_MAX, and FEATURE_WORK_MAX
    operations at ``d^3 + n d`` per subset), else a seeded sample of the capped number."""
    from itertools import combinations, islice
    from math import comb

    cap = max(1, min(FEATURE_SUBSETS_MAX, FEATURE_WORK_MAX // (d ** 3 + n * d)))
    if comb(n, d) <= cap:
        it = combinations(range(n), d)
        while True:
            S = np.array(list(islice(it, FEATURE_CHUNK)), dtype=np.int64).reshape(-1, d)
            if not len(S):
                return
            yield S
    rng = np.random.default_rng(0)
    left = cap
    while left > 0:
        k = min(FEATURE_CHUNK, left)
        S = np.sort(rng.integers(0, n, size=(k, d)), axis=1)
        S = S[np.all(np.diff(S, axis=1) > 0, axis=1)] if d > 1 else S   # d distinct rows
        left -= k
        yield S


def _vertex_feature(A: np.ndarray, c: np.ndarray, S: np.ndarray, lo: np.ndarray,
                    hi: np.ndarray, slack: float) -> float:
    """The smallest positive distance from a vertex of the subsets ``S`` (those inside the
    box) to another hyperplane (``inf`` when none)."""
    if not len(S):
        return np.inf
    M = A[S]                                           # (K, d, d)
    ok = np.abs(np.linalg.det(M)) > FEATURE_ROUNDING
    if not ok.any():
        return np.inf
    S, M = S[ok], M[ok]
    X = np.linalg.solve(M, -c[S][..., None])[..., 0]   # the vertices
    inside = np.all((X >= lo - slack) & (X <= hi + slack), axis=1)
    if not inside.any():
        return np.inf
    S, X = S[inside], X[inside]
    D = np.abs(X @ A.T + c)                    # (K, n) distances to every hyperplane
    D[np.arange(len(S))[:, None], S] = np.inf  # not to its own hyperplanes
    # within the rounding of the vertex and the offset: a coincidence
    noise = FEATURE_ROUNDING * (np.linalg.norm(X, axis=1)[:, None] + np.abs(c)[None, :]) + TINY_FEATURE
    D = D[D > noise]
    return float(D.min()) if D.size else np.inf


def too_coarse(W0: np.ndarray, b0: np.ndarray, xscale: float, lo: np.ndarray | None = None,
               hi: np.ndarray | None = None) -> bool:
    """Whether a domain of scale ``xscale`` is so large that the sign tolerance (about
    SIGN_TOL x it, in distance) exceeds the distance of the first layer's farthest
    hyperplane (rows ``W0``, ``b0``) from the origin: the arrangement then lies inside
    the tolerance and its regions are merged below the near-tie threshold, unseen (a
    network with features of size 1 on [-1e15, 1e15]^2: 30 regions of 108, no near tie).
    A necessary condition, not a proof: finer features of deeper layers are not measured.

    Example:
        >>> W0, b0 = np.eye(2), np.array([1.0, -2.0])
        >>> too_coarse(W0, b0, 1e6), too_coarse(W0, b0, 1e15)
        (False, True)
    """
    reach = first_layer_reach(W0, b0)
    if reach > 0 and SIGN_TOL * xscale > reach:
        return True
    if lo is None or hi is None:
        return False
    # and the closest features: one far hyperplane (1e12 from the origin) made the reach
    # large while features of size 0.5 were below the tolerance of a box of 1e13, and a
    # count of 25 of 46 regions came back certified
    feature = smallest_first_layer_feature(W0, b0, lo, hi)
    return feature is not None and feature < FEATURE_TOLERANCES * SIGN_TOL * xscale


def _check_resolution(pb: Problem, lo: np.ndarray, hi: np.ndarray) -> None:
    """Count a near tie when the domain (starting box ``lo, hi``) is too large for the
    arrangement (:func:`too_coarse`)."""
    if pb.n_layers and too_coarse(pb.Ws[0], pb.bs[0], pb.xscale, lo, hi):
        pb.near_ties += 1
        pb.coarse = True


def _cut_by_rows(pb: Problem, X: np.ndarray, F: np.ndarray, ptr: np.ndarray, rows: range):
    """The polytope (X, F, ptr) cut by the given domain rows (their negative side)."""
    d = pb.d
    for i in rows:
        a, b = pb.A_dom[i], pb.b_dom[i]
        if not np.any(a):
            continue
        if pb.stop_cutting is not None and pb.stop_cutting():
            raise CutStopped("the stop condition came while the domain polytope was cut by its rows")
        # a cut at most doubles the vertices, each a vertex slot of the batches' memory
        # model (slot_cap) (16 inputs and 40 rows: a raw MemoryError of 1 GiB)
        check_bytes(2.0 * X.shape[0] * slot_bytes(d),
                    f"regions: cutting the {d}-dimensional domain polytope by its rows "
                    f"({X.shape[0]} vertices so far; give a box, or fewer rows)")
        Zrow = np.broadcast_to(np.concatenate([a, [-b]]), (X.shape[0], d + 1))
        t = _values(X, Zrow, pb.xscale)
        s, p, q = t.s, t.pos, t.neg
        if not p.any():
            continue  # redundant (or touching) row
        if not q.any():
            raise DomainError("region enumeration needs a full-dimensional domain")
        X2, F2, ptr2 = split_regions(X, F, ptr, s, p, q, pb.N + i, d, pb.n_ids)
        sl = slice(ptr2[1], ptr2[2])  # keep the negative child (a x - b <= 0)
        X, F, ptr = X2[sl], _compact(F2[sl]), np.array([0, ptr2[2] - ptr2[1]], dtype=np.int64)
    if X.shape[0] < d + 1:
        raise DomainError("region enumeration needs a full-dimensional domain")
    return X, F, ptr


# ------------------------------------------------------------------- layer entry
def _enter_layer(pb: Problem, b: Batch, k: int) -> None:
    d = pb.d
    W, bias = pb.Ws[k], pb.bs[k]
    b.compact()
    n = b.n
    if k == 0:
        Z = np.concatenate([W, bias[:, None]], axis=1)[None]  # (1, w, d + 1)
        M = None  # the weights themselves: nothing was composed, nothing cancelled
        par = np.zeros(n, dtype=np.int64)
        Ppat = np.zeros((1, 0), dtype=bool)
    else:
        Zp = b.Zs[k - 1][b.par[:, k - 1]]  # (n, w_prev, d + 1)
        H = b.cur[:, :, None] * Zp
        Z = np.einsum("ij,njk->nik", W, H)
        Z[:, :, d] += bias
        M = _term_scale(W, bias, b.cur, Zp, Z, pb.xscale, pb.compose_noise(k))
        par = np.arange(n, dtype=np.int64)
        Ppat = np.concatenate([b.Ppat[k - 1][b.par[:, k - 1]], b.cur], axis=1)
    # which neurons change sign on which parent: evaluate at the parent's vertices
    # (for k > 0 every region is its own parent, so slots are grouped by parent)
    w = Z.shape[1]
    S = b.used
    reg = _slot_region(b.ptr)
    Xa = np.concatenate([b.X[:S], np.ones((S, 1))], axis=1)
    Xabs = np.abs(Xa)
    Xabs[:, :d] += pb.xscale
    absZ = np.abs(Z)
    POS = np.empty((S, w), dtype=bool)
    NEG = np.empty((S, w), dtype=bool)
    chunk = _rows_per_chunk(w, d)
    # the same values against SIGN_TIE_SHARE of the tolerance: a near tie (see _count_ties)
    POSL = np.empty((S, w), dtype=bool)
    NEGL = np.empty((S, w), dtype=bool)
    for s0 in range(0, S, chunk):
        xs = Xa[s0 : s0 + chunk]
        xa = Xabs[s0 : s0 + chunk]
        if k == 0:
            V = xs @ Z[0].T
            T = SIGN_TOL * (xa @ absZ[0].T)
        else:
            pr = reg[s0 : s0 + chunk]
            V = np.einsum("sk,sjk->sj", xs, Z[pr])
            T = SIGN_TOL * np.einsum("sk,sjk->sj", xa, absZ[pr])
        POS[s0 : s0 + chunk] = V > T
        NEG[s0 : s0 + chunk] = V < -T
        POSL[s0 : s0 + chunk] = V > SIGN_TIE_SHARE * T
        NEGL[s0 : s0 + chunk] = V < -SIGN_TIE_SHARE * T
    if M is not None:
        # the few (region, neuron) pairs whose terms cancelled: test them again
        pb.near_ties += _retest_cancelled(b, Z, M, pb.compose_noise(k), pb.xscale, POS, NEG, chunk * w)
    if k == 0:
        anyp = POS.any(0)[None]
        anyn = NEG.any(0)[None]
        anypl = POSL.any(0)[None]
        anynl = NEGL.any(0)[None]
    else:
        starts = b.ptr[:-1]
        anyp = np.logical_or.reduceat(POS, starts, axis=0)
        anyn = np.logical_or.reduceat(NEG, starts, axis=0)
        anypl = np.logical_or.reduceat(POSL, starts, axis=0)
        anynl = np.logical_or.reduceat(NEGL, starts, axis=0)
    # decided here for good: the (region, neuron) pairs that no vertex puts on both sides
    pb.near_ties += _count_ties(anyp, anyn, anypl, anynl, ~(anyp & anyn))
    b.Zs = [*b.Zs[:k], Z]
    b.cancelled = [*b.cancelled[:k], M]
    b.Ppat = [*b.Ppat[:k], Ppat]
    b.par = b.par.copy()
    b.par[:, k] = par
    b.cuts = anyp & anyn
    b.psign = anyp
    b.cur = np.zeros((n, w), dtype=bool)
    b.layer = k


def _retest_cancelled(b: Batch, Z: np.ndarray, M: CancelledTerms, noise: float, xscale: float,
                      POS: np.ndarray, NEG: np.ndarray, chunk: int) -> int:
    """Redo the sign test (:func:`_values`) of the (region, neuron) pairs of ``M``
    (``POS``/``NEG`` updated in place).  Returns how many pairs have a vertex whose sign
    is lost in the cancellation's rounding: near ties."""
    fr, fj = np.divmod(M.key, M.width)
    cnt = b.cnt
    cum = np.cumsum(cnt[fr])
    unsure = 0
    lo = 0
    while lo < fr.shape[0]:
        # a block of pairs holding about ``chunk`` vertex slots
        base = cum[lo - 1] if lo else 0
        hi = max(lo + 1, int(np.searchsorted(cum, base + chunk, side="right")))
        r, j = fr[lo:hi], fj[lo:hi]
        slots, sptr = _gather_slots_sc(b.start, cnt, r)
        rep = np.repeat(np.arange(r.shape[0]), cnt[r])
        t = _values(b.X[slots], Z[r, j][rep], xscale, M.terms[lo:hi][rep], noise)
        js = j[rep]
        POS[slots, js] = t.pos
        NEG[slots, js] = t.neg
        if t.unsure.any():
            unsure += int(np.count_nonzero(np.logical_or.reduceat(t.unsure, sptr[:-1])))
        lo = hi
    return unsure


# --------------------------------------------------------------------- near ties
def _count_ties(hp, hn, hpl, hnl, decided) -> int:
    """How many decided (region, neuron) signs a near tie contradicts.

    ``hp``/``hn``: some vertex is positive/negative beyond SIGN_TOL; ``hpl``/``hnl``: the
    same beyond SIGN_TIE_SHARE of it.  A region with a positive vertex and no negative one
    is decided positive, its vertices within the tolerance placed on the hyperplane; so a
    vertex clearly (beyond the share) negative means a piece of the region on the
    negative side was merged into it -- a region too thin for the float test, lost or
    joined to its neighbour.  Likewise a region decided inactive (no positive vertex) with
    a vertex clearly positive.  Rounding noise stays far below the share (it is about
    1e-16 of the same scale), so a near tie is a real feature at the limit of the
    tolerance: SIGN_TOL x the domain's scale.
    """
    ties = decided & ((hp & ~hn & hnl) | (~hp & hpl))
    return int(np.count_nonzero(ties))


def refuse_near_ties(pb: Problem, what: str) -> None:
    """Raise when a run of ``pb`` made sign decisions too close to call: a bare count or
    pattern list cannot say that it is not certified, so it is not returned."""
    if pb.coarse:
        raise UncertifiedCount(
            f"{what}: the domain (scale {pb.xscale:.3g}) is so large that the float sign "
            f"tolerance ({SIGN_TOL * pb.xscale:.3g}) exceeds the distance of the network's "
            "hyperplanes from the origin, or a distance in its first layer's arrangement, so "
            "some regions cannot be told apart; count over "
            "the whole space (Polytope.whole_space, --whole-space), which holds the same "
            "regions when the box contains them all, or use a smaller box")
    if pb.rounded_together:
        raise UncertifiedCount(
            f"{what}: {pb.rounded_together} hidden neuron(s) of the exact network become one "
            "hyperplane with another when its weights are rounded to float64 (the engine's "
            "arithmetic), so regions between them are lost and the number is not certified; "
            "regions.along_segment counts exactly along a line")
    if pb.near_ties:
        raise UncertifiedCount(
            f"{what}: {pb.near_ties} sign decision(s) were too close to call at the float "
            f"tolerance (SIGN_TOL x the domain's scale = {SIGN_TOL * pb.xscale:.3g} here), so a "
            "region thinner than that may be merged into a neighbour and the number is not "
            "certified; regions.enumerate (the regions command without --count) returns the "
            "regions marked certified=False (info['near_ties']), or use a smaller domain")


# -------------------------------------------------------------------- one neuron
def _apply_neuron(pb: Problem, b: Batch) -> Batch:
    j = b.stage
    k = int(pb.layer_of[j])
    jj = int(pb.local_of[j])
    d = pb.d
    parent = b.par[:, k]
    active = b.cuts[parent, jj]
    b.cur[:, jj] = b.psign[parent, jj]
    b.stage += 1
    if not active.any():
        return b
    act = np.flatnonzero(active)
    slots, aptr = _gather_slots_sc(b.start, b.cnt, act)
    areg = _slot_region(aptr)
    prow = parent[act][areg]
    Zrow = b.Zs[k][prow, jj]  # (S_a, d + 1)
    Xs = b.X[slots]
    terms = None
    if b.cancelled[k] is not None:
        hit, rows = b.cancelled[k].lookup(prow, jj)
        terms = rows if hit.any() else None
    t = _values(Xs, Zrow, pb.xscale, terms, pb.compose_noise(k))
    s, pos, neg = t.s, t.pos, t.neg
    starts = aptr[:-1]
    hp = np.logical_or.reduceat(pos, starts)
    hn = np.logical_or.reduceat(neg, starts)
    hpl = np.logical_or.reduceat(s > t.tie, starts)
    hnl = np.logical_or.reduceat(s < -t.tie, starts)
    pb.near_ties += _count_ties(hp, hn, hpl, hnl, ~(hp & hn))
    if t.unsure.any():
        pb.near_ties += int(np.count_nonzero(np.logical_or.reduceat(t.unsure, starts)))
    b.cur[act, jj] = hp
    spl = hp & hn
    if not spl.any():
        return b
    sidx = np.flatnonzero(spl)
    sslots, sptr = _gather_slots(aptr, sidx)
    Xc, Fc, cptr = split_regions(
        Xs[sslots], b.F[slots[sslots]], sptr, s[sslots], pos[sslots], neg[sslots], j, d, pb.n_ids
    )
    ridx = act[sidx]  # regions that were split (batch indices)
    b.dead += int(b.cnt[ridx].sum())
    s0 = b.append_slots(Xc, Fc)
    keep = np.ones(b.n, dtype=bool)
    keep[ridx] = False
    kidx = np.flatnonzero(keep)
    two = np.repeat(ridx, 2)
    cur_c = b.cur[two]
    cur_c[0::2, jj] = True
    cur_c[1::2, jj] = False
    b.start = np.concatenate([b.start[kidx], s0 + cptr[:-1]])
    b.cnt = np.concatenate([b.cnt[kidx], np.diff(cptr)])
    b.cur = np.concatenate([b.cur[kidx], cur_c], axis=0)
    b.par = np.concatenate([b.par[kidx], b.par[two]], axis=0)
    if b.dead > b.used // 2 and b.dead > 100_000:
        b.compact()
    return b


def _halve(b: Batch) -> tuple[Batch, Batch]:
    n = b.n
    h = n // 2
    out = []
    for idx in (np.arange(h), np.arange(h, n)):
        slots, ptr = _gather_slots_sc(b.start, b.cnt, idx)
        out.append(
            Batch(
                start=ptr[:-1].copy(),
                cnt=np.diff(ptr),
                X=b.X[slots],
                F=_compact(b.F[slots]),
                used=int(ptr[-1]),
                cur=b.cur[idx],
                par=b.par[idx],
                Zs=b.Zs,
                cancelled=b.cancelled,
                Ppat=b.Ppat,
                cuts=b.cuts,
                psign=b.psign,
                stage=b.stage,
                layer=b.layer,
                weight=b.weight / 2,
            )
        )
    return out[0], out[1]


# -------------------------------------------------------------------- finished
@dataclass
class FinalChunk:
    """Finished regions of one batch (arrays; see :func:`finalize`)."""

    batch: Batch
    pattern: np.ndarray  # (n, N) bool


def run(pb: Problem, X0, F0, ptr0, *, progress=None, stop=None,
        max_batch: int | None = None) -> Iterator[FinalChunk]:
    """Yield finished regions batch by batch (depth first).

    ``progress(frac)`` is called with the finished share of the domain (0..1].
    ``stop()``, when given, is asked after every neuron: True ends the stream there (the
    caller marks its result partial).  ``max_batch`` lowers the regions a batch may hold
    before it is halved (MAX_BATCH_REGIONS), so that a caller that wants only a few
    regions gets its first batch without splitting a whole domain's worth.
    """
    lim = MAX_BATCH_REGIONS if max_batch is None else max(1, min(MAX_BATCH_REGIONS, max_batch))
    L = pb.n_layers
    root = Batch(
        start=ptr0[:-1].copy(),
        cnt=np.diff(ptr0),
        X=X0,
        F=F0,
        used=int(ptr0[-1]),
        cur=np.zeros((1, 0), dtype=bool),
        par=np.zeros((1, max(L, 1)), dtype=np.int64),
    )
    stack = [root]
    done = 0.0
    cap = slot_cap(pb)
    while stack:
        b = stack.pop()
        while b.stage < pb.N:
            k = int(pb.layer_of[b.stage])
            if k != b.layer:
                _enter_layer(pb, b, k)
            t0 = time.perf_counter()
            b = _apply_neuron(pb, b)
            if stop is not None and stop():
                return
            if stop is not None and b.n > 1 and time.perf_counter() - t0 > STOP_STEP_SECONDS:
                lim = max(1, min(lim, b.n // 2))  # smaller batches: shorter steps between stop()s
                cap = max(1, min(cap, (b.used - b.dead) // 2))
            if b.n > 1 and (b.n > lim or b.used - b.dead > cap):
                b1, b2 = _halve(b)
                stack.append(b2)
                b = b1
        b.compact()
        if L == 0:
            pattern = np.zeros((b.n, 0), dtype=bool)
        else:
            pattern = np.concatenate([b.Ppat[L - 1][b.par[:, L - 1]], b.cur], axis=1)
        done += b.weight
        yield FinalChunk(batch=b, pattern=pattern)
        if progress is not None:
            progress(min(done, 1.0))


def facet_geometry(A: np.ndarray, bb: np.ndarray, interior: np.ndarray, fr: np.ndarray,
                   is_neuron: np.ndarray, n: int):
    """Normalise the facet rows ``A x <= bb`` (in place) of ``n`` regions and measure them.

    ``fr`` gives each row's region (rows grouped by region, in region order),
    ``interior`` each region's interior point, ``is_neuron`` which rows come from
    neurons (the rest are domain facets).  Returns ``(A, bb, fptr, radius, touches)``:
    the row offsets per region, the smallest slack of the interior point (the radius
    of a ball around it inside the region) and whether a domain facet bounds it.
    """
    nrm = np.sqrt(np.einsum("fd,fd->f", A, A))
    nrm[nrm == 0] = 1.0
    A /= nrm[:, None]
    bb /= nrm
    fcnt = np.bincount(fr, minlength=n)
    fptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(fcnt, out=fptr[1:])
    radius = np.full(n, np.inf)
    has = fcnt > 0
    if fr.shape[0]:
        slack = bb - np.einsum("fd,fd->f", A, interior[fr])
        radius[has] = np.minimum.reduceat(slack, fptr[:-1][has])
    touches = np.bincount(fr[~is_neuron], minlength=n) > 0
    return A, bb, fptr, radius, touches
