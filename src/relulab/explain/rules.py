"""``decision_rules``: the exact set of inputs with each decision inside a box, as a
union of convex rules.

The linear regions (relulab.regions.enumerate) are cut by the decision's boundary,
which is affine inside each region: a region gives at most one convex *piece* per
decision.  Same-decision pieces of adjacent regions are then merged greedily while
their union stays convex (the union of two convex polytopes lies inside the convex
hull of their vertices and equals it exactly when the volumes agree), so no two
adjacent rules of one decision can be merged further (the fewest rules overall is a
hard covering problem; greedy merging is not claimed to reach it).  Rules partition
the box: their volumes add up to its volume, and every rule is exact (100% fidelity)
by construction; ``certify_rules=True`` also proves each rule with relulab.verify's MILP.

Example:
    >>> from relulab import Network, Box
    >>> net = Network([[[1.0, 0.0], [-1.0, 0.0]], [[1.0, 1.0]]], [[0.0, 0.0], [-0.5]])   # |x0| - 0.5
    >>> dr = decision_rules(net, Box([-1, -1], [1, 1]))
    >>> [r.text() for r in dr.rules]
    ['x0 <= -0.5 -> positive', 'x0 >= 0.5 -> positive', '-0.5 <= x0 <= 0.5 -> negative']
    >>> [round(r.volume_fraction, 6) for r in dr.rules]
    [0.25, 0.25, 0.5]
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.spatial import QhullError

from ..domain import Box, Polytope
from ..errors import is_positive_seconds
from ..limits import Deadline
from ..network import Network
from ..results import Result
from ..tolerance import FEAS_TOL, MATCH_RTOL, MIN_RADIUS, ROUNDOFF, TINY
from . import _geometry as G
from ._certify import certify
from ._common import check_domain, check_flag, float_net, output_floor
from .decision import OUTPUT_ROUNDING, Decision, ExplainError, all_decisions, as_decision
from .features import feature_names
from .rule import Rule

__all__ = ["decision_rules", "DecisionRules"]


@dataclass(frozen=True, eq=False)
class DecisionRules(Result):
    """The decision rules of a network over a domain.

    Example:
        >>> from relulab import Network, Box
        >>> r = decision_rules(Network([[[1.0, 0.0]]], [[0.0]]), Box([-1, -1], [1, 1]))
        >>> [rule.text() for rule in r.rules], r.partial, r.predict([[0.5, 0.0]]).tolist()
        (['x0 >= 0 -> positive', 'x0 <= 0 -> negative'], False, ['positive'])

    Fields:
        rules: the merged convex rules (each with ``volume_fraction`` and vertices).
        decisions: per decision label: number of rules, of pieces, and its volume share.
        n_regions: linear regions enumerated; n_pieces: region pieces (one per region
            and decision present in it); n_rules: rules after merging.
        covered_fraction: total volume share of the rules (1 up to rounding for a
            complete enumeration).
        partial: the enumeration stopped early (``max_regions``): rules cover only part.
        certified: every rule proved with the MILP (None when not asked).
        times: seconds for enumeration, cutting, merging, certification.
        info: ``near_ties`` (the region enumeration's sign decisions too close to call,
            present only when it was not certified: rules next to a thin region may be
            wrong); ``merge_stopped_at_time_limit`` (True) when the time limit cut the merging
            short: every rule is still exact, some could be merged further.
    """

    rules: tuple
    decisions: dict
    n_regions: int
    n_pieces: int
    n_rules: int
    covered_fraction: float
    partial: bool
    certified: bool | None
    features: tuple
    method: str
    times: dict
    info: dict = field(default_factory=dict)

    def _extent(self) -> float:
        """The largest width of the rules' vertices along a coordinate (1 when unknown)."""
        V = [r.vertices for r in self.rules if r.vertices is not None and len(r.vertices)]
        if not V:
            return 1.0
        allv = np.vstack(V)
        w = float(np.max(np.ptp(allv, axis=0)))
        return w if w > 0 else 1.0

    def predict(self, X: Any) -> np.ndarray:
        """The decision label of the first rule containing each point ("" if none: only
        outside the rules, e.g. outside the domain or beyond a partial enumeration).

        ``X`` is one point or an (n, d) array of finite numbers (one clear
        :class:`ExplainError` otherwise: a NaN would fail every rule's test and read as
        "outside every rule")."""
        try:
            X = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError):
            raise ExplainError("predict: X is not an array of numbers") from None
        d = len(self.features)
        if X.ndim == 1 and X.shape[0] == d:
            X = X[None, :]
        if X.ndim != 2 or X.shape[1] != d:
            raise ExplainError(f"predict: X has shape {X.shape}; give (n, {d}) points "
                               f"(the rules read {d} features)")
        if not np.all(np.isfinite(X)):
            bad = int(np.flatnonzero(~np.all(np.isfinite(X), axis=1))[0])
            raise ExplainError(f"predict: row {bad} of X contains NaN or infinite entries")
        out = np.full(X.shape[0], "", dtype=object)
        todo = np.ones(X.shape[0], dtype=bool)
        # relative to the rules' extent: an absolute 1e-9 let the first rule take points
        # well inside the next one on a box of width 2e-9 (56 % mislabelled)
        tol = FEAS_TOL * self._extent()
        for r in self.rules:
            hit = todo & r.contains(X, tol=tol)
            out[hit] = r.decision
            todo &= ~hit
        return out

    def text(self, digits: int = 4) -> str:
        return "\n".join(f"{100 * (r.volume_fraction or 0):6.2f}%  {r.text(digits)}" for r in self.rules)

    def markdown(self, digits: int = 4) -> str:
        from .rule import rules_markdown

        md = rules_markdown(list(self.rules), "Decision rules", digits)
        notes = []
        if self.info.get("near_ties"):
            notes.append(f"**Not certified:** the region enumeration left {self.info['near_ties']} sign "
                         "decision(s) too close to call; a rule next to a thin region may be wrong.")
        if self.partial:
            notes.append(f"**Partial:** the rules cover {100 * self.covered_fraction:.2f}% of the domain.")
        return md + ("\n" + "\n".join(notes) + "\n" if notes else "")

    def to_dict(self) -> dict:
        d = super().to_dict()
        for r in d["rules"]:
            r.pop("witnesses", None)
        return d


def _order2d(V: np.ndarray) -> np.ndarray:
    c = V.mean(0)
    return V[np.argsort(np.arctan2(V[:, 1] - c[1], V[:, 0] - c[0]))]


def _clip2d(P: np.ndarray, a: np.ndarray, b: float) -> np.ndarray:
    """Sutherland-Hodgman: the convex polygon ``P`` (ordered) cut by ``a x <= b``."""
    if len(P) == 0:
        return P
    s = P @ a - b
    out = []
    n = len(P)
    for k in range(n):
        p, q = P[k], P[(k + 1) % n]
        sp_, sq = s[k], s[(k + 1) % n]
        if sp_ <= 0:
            out.append(p)
        if (sp_ < 0 < sq) or (sq < 0 < sp_):
            t = sp_ / (sp_ - sq)
            out.append(p + t * (q - p))
    return np.array(out).reshape(-1, 2)


@dataclass
class _Piece:
    V: np.ndarray
    vol: float


def _region_data(rs, i: int):
    d = rs.dim
    f0, f1 = rs.facet_ptr[i], rs.facet_ptr[i + 1]
    v0, v1 = rs.vertex_ptr[i], rs.vertex_ptr[i + 1]
    V = rs.vertices[v0:v1] if v1 > v0 else rs[i].vertices
    aff = rs.affine[i]
    return rs.facet_A[f0:f1], rs.facet_b[f0:f1], V, aff[:, :d], aff[:, d]


def _ordered_polygons(rs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """2-D regions: vertices sorted counter-clockwise within each region, the region of
    each vertex, and every region's area (shoelace), all vectorised."""
    n = len(rs)
    ptr = rs.vertex_ptr
    reg = np.repeat(np.arange(n), np.diff(ptr))
    V = rs.vertices
    cnt = np.diff(ptr)
    cen = np.add.reduceat(V, ptr[:-1], axis=0) / cnt[:, None]
    ang = np.arctan2(V[:, 1] - cen[reg, 1], V[:, 0] - cen[reg, 0])
    order = np.lexsort((ang, reg))
    V = V[order]
    nxt = np.arange(len(V)) + 1
    last = ptr[1:] - 1
    nxt[last] = ptr[:-1]
    cross = V[:, 0] * V[nxt, 1] - V[:, 1] * V[nxt, 0]
    areas = 0.5 * np.abs(np.add.reduceat(cross, ptr[:-1]))
    return V, reg, areas


def _decision_rows(dec: Decision, aff: np.ndarray, reg: np.ndarray, V: np.ndarray) -> np.ndarray:
    """``C f(v) - d`` at the vertices ``V`` (of the regions ``reg``), from the decision's
    rows of each region's affine map: the difference of two logits is formed from their
    maps (a common offset of 1e9 cancels exactly there) rather than from the logits."""
    DA = np.einsum("rm,nmk->nrk", dec.C, aff)   # (regions, rows, d + 1)
    d = V.shape[1]
    return np.einsum("vrd,vd->vr", DA[reg, :, :d], V) + DA[reg, :, d] - dec.d


def _row_scale(floor: float, row_size: Any, output_size: Any) -> Any:
    """The size the decision rows' tolerances are relative to: the rows' own size (the
    differences the decision compares: relative to the outputs' size, a common offset of
    1e9 made wins by 1 ties and gave a third of the box to the wrong class), plus what
    the outputs' rounding puts into them, from where the tolerances are that share."""
    return floor + row_size + OUTPUT_ROUNDING / FEAS_TOL * output_size


def _pieces(rs, decisions: list[Decision], deadline: Deadline | None = None, floor: float = 1.0
            ) -> tuple[list[list[_Piece | None]], int, bool]:
    """Per decision, per region: the piece of the region with that decision (or None);
    the count of pieces; whether ``deadline`` stopped the cutting (the regions not yet
    cut then have no piece: the rules cover part of the domain)."""
    n, d = len(rs), rs.dim
    out: list[list[_Piece | None]] = [[None] * n for _ in decisions]
    count = 0
    fast = d == 2 and len(rs.vertices) == rs.vertex_ptr[-1] and np.all(np.diff(rs.vertex_ptr) >= 3)
    todo = range(n)
    if fast:
        Vall, reg, areas = _ordered_polygons(rs)
        aff = rs.affine
        Yall = np.einsum("vmd,vd->vm", aff[reg, :, :d], Vall) + aff[reg, :, d]
        # regions entirely inside one decision (most of them), all at once; the loop
        # below only cuts the others
        starts = rs.vertex_ptr[:-1]
        ysize = np.maximum.reduceat(np.max(np.abs(Yall), axis=1), starts)
        rest = np.zeros(n, dtype=bool)
        for k, dec in enumerate(decisions):
            S = _decision_rows(dec, aff, reg, Vall)
            scale = _row_scale(floor, np.maximum.reduceat(np.max(np.abs(S), axis=1), starts), ysize)
            tol = FEAS_TOL * scale[reg]
            inside = np.logical_and.reduceat(np.all(S <= tol[:, None], axis=1), starts)
            flat = (np.maximum.reduceat(S, starts) - np.minimum.reduceat(S, starts)) <= FEAS_TOL * scale[:, None]
            tie = np.any(dec.strict[None, :] & flat & (np.maximum.reduceat(S, starts) >= -FEAS_TOL * scale[:, None]), axis=1)
            outside = np.any(np.logical_and.reduceat(S >= -tol[:, None], starts, axis=0), axis=1)
            # a row constant on the region (to rounding) within the tolerance of 0: the
            # careful test below decides it by its sign
            smax, smin = np.maximum.reduceat(S, starts), np.minimum.reduceat(S, starts)
            near = np.any((smax - smin <= ROUNDOFF * scale[:, None])
                          & (np.abs(smax) <= FEAS_TOL * scale[:, None]), axis=1)
            whole = inside & ~tie & ~near
            for i in np.flatnonzero(whole):
                out[k][i] = _Piece(Vall[rs.vertex_ptr[i]:rs.vertex_ptr[i + 1]], float(areas[i]))
            count += int(whole.sum())
            rest |= (~inside & ~outside & ~tie) | near
        todo = np.flatnonzero(rest)
    for i in todo:
        if deadline is not None and deadline.expired():
            return out, count, True
        if fast:
            v0, v1 = rs.vertex_ptr[i], rs.vertex_ptr[i + 1]
            V, Y = Vall[v0:v1], Yall[v0:v1]
            C, c = rs.affine[i][:, :d], rs.affine[i][:, d]
            A = b = None
            vol_region = float(areas[i])
        else:
            A, b, V, C, c = _region_data(rs, i)
            if d == 2:
                V = _order2d(V)
            Y = V @ C.T + c
            vol_region = None
        ysize = float(np.max(np.abs(Y)))
        for k, dec in enumerate(decisions):
            if out[k][i] is not None:
                continue
            # (n_vertices, rows): <= 0 inside the decision set, from the decision's rows
            # of the region's affine map (a common offset of the outputs cancels there)
            S = V @ (dec.C @ C).T + (dec.C @ c - dec.d)
            scale = float(_row_scale(floor, float(np.max(np.abs(S))), ysize))
            tol = FEAS_TOL * scale
            # a row constant on the region (to rounding) has one sign there, read at
            # rounding precision: outputs (0, 1e-12) everywhere are class 1, not a tie
            # that class 0 wins (and certifies); only a true tie is a tie
            const = np.ptp(S, axis=0) <= ROUNDOFF * scale
            sv = S.max(0)
            rt = ROUNDOFF * scale
            if np.any(const & ((sv > rt) | (dec.strict & (sv >= -rt)))):
                continue   # violated on the whole region, or a tie its strict row loses
            S = np.where(const[None, :], -np.inf, S)   # the constant rows hold: settled
            # a strict row that is a tie on the whole region (e.g. every output equal on
            # a dead region) fails everywhere: the tie goes to the other decision
            flat = np.ptp(np.where(const[None, :], 0.0, S), axis=0) <= tol
            if np.any(dec.strict & flat & ~const & (S.max(0) >= -tol)):
                continue
            if np.all(S <= tol):
                out[k][i] = _Piece(V, vol_region if vol_region is not None else G.volume(V))
                count += 1
                continue
            if np.any(np.all(S >= -tol, axis=0)):
                continue  # some row is violated on the whole region (up to its boundary)
            T = (dec.C @ C)[~const]   # the settled constant rows cut nothing
            t = (dec.d - dec.C @ c)[~const]
            rad = None
            if d == 2:
                P = V
                for a_row, b_row in zip(T, t, strict=True):
                    P = _clip2d(P, a_row, b_row)
                    if len(P) < 3:
                        break
                W = P
            else:
                An, bn = G.normalize_rows(np.vstack([A, T]), np.concatenate([b, t]))
                ctr, rad = G.interior(An, bn)
                # a pocket is thin only at the coordinates' rounding (an absolute 1e-9
                # dropped an l1 ball of radius 3e-9 where f = +1: "always -> negative")
                thin = POCKET_RADIUS * max(float(np.max(np.abs(V))), TINY) if len(V) else MIN_RADIUS
                try:
                    W = G.vertices(An, bn, ctr) if ctr is not None and rad > thin else np.zeros((0, d))
                except QhullError:
                    # qhull's own tolerances are absolute: a box of width 1e-8 in 3-D
                    raise ExplainError(
                        f"decision_rules: qhull failed on the piece of a linear region (Chebyshev "
                        f"radius {rad:.3g}, coordinates up to {float(np.max(np.abs(V), initial=0.0)):.3g}); "
                        "qhull's tolerances are absolute: rescale the inputs to a box of size about 1") from None
            vol = G.volume(W) if len(W) > d else 0.0
            vr = vol_region if vol_region is not None else G.volume(V)
            # a piece small against its region may still be a real pocket of the decision
            # (f = 1 - |x - c|_1 / 1e-4 in 3-D: relative volume 1e-12, f = +1 at c); it
            # is dropped only when it is thin at the coordinates' rounding
            if vol > 0 and (vol > ROUNDOFF * vr or _wide(W, rad)):
                out[k][i] = _Piece(W, vol)
                count += 1
    return out, count, False


def _wide(W: np.ndarray, rad: float | None = None) -> bool:
    """Whether the polytope with vertices ``W`` holds a ball of radius above the rounding
    of its coordinates (``rad``: its Chebyshev radius when known)."""
    if rad is None:
        try:
            A, b, _ = G.hull(W)
        except QhullError:
            return False
        rad = G.interior(A, b)[1]
    return bool(rad > POCKET_RADIUS * float(np.max(np.abs(W))))


# a Chebyshev radius in a hull and another decision's cell above this share of the
# coordinates' size is a real pocket of that decision (below: rounding of the vertices)
POCKET_RADIUS = 1e-12  # tol: rounding of vertex coordinates
COVER_TOL = 1e-6   # tol: a complete set of rules covers the domain up to this share (volume rounding)


class _Others:
    """The cells of the other decisions, to test a merged hull against: a hull whose
    volume exceeds its pieces' by less than the volume test's tolerance (1e-9 of it) may
    still swallow a small region of another decision (an l1 ball of radius 0.03 in 5-D:
    the rule "always -> negative" then covered a point where f = +1)."""

    def __init__(self, cells: list[np.ndarray]) -> None:
        self.V = [np.asarray(c, dtype=np.float64) for c in cells]
        self.lo = np.array([c.min(0) for c in self.V]) if self.V else np.zeros((0, 0))
        self.hi = np.array([c.max(0) for c in self.V]) if self.V else np.zeros((0, 0))
        self._rows: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def meet(self, hull_vertices: np.ndarray, scale: float) -> bool:
        """Whether some other cell has interior inside the hull of ``hull_vertices``
        (a Chebyshev ball of radius above rounding in their intersection)."""
        if not self.V:
            return False
        A, b, _ = G.hull(hull_vertices)
        lo, hi = hull_vertices.min(0), hull_vertices.max(0)
        near = np.flatnonzero(np.all((self.lo < hi) & (self.hi > lo), axis=1))
        for i in near.tolist():
            if i not in self._rows:
                Ai, bi, _ = G.hull(self.V[i])
                self._rows[i] = (Ai, bi)
            Ai, bi = self._rows[i]
            _, rad = G.interior(np.vstack([A, Ai]), np.concatenate([b, bi]))
            if rad > POCKET_RADIUS * scale:
                return True
        return False


class _Clusters:
    """Union-find over pieces; each root keeps the hull vertices and the volume."""

    def __init__(self, pieces: list[_Piece | None], others: _Others | None = None) -> None:
        self.parent = list(range(len(pieces)))
        self.V = [p.V if p is not None else None for p in pieces]
        self.vol = [p.vol if p is not None else 0.0 for p in pieces]
        self.others = others

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def try_merge(self, i: int, j: int) -> bool:
        a, b = self.find(i), self.find(j)
        if a == b:
            return False
        tot = self.vol[a] + self.vol[b]
        VV = np.vstack([self.V[a], self.V[b]])
        try:
            if not G.union_is_convex(self.V[a], self.vol[a], self.V[b], self.vol[b], tot):
                return False
            hull = G.hull(VV)[2]  # before any change: a failure leaves the clusters as they were
            # always tested: an extra volume below the volumes' rounding may still be a
            # real pocket of another decision (a cell of relative volume 3e-13 was swallowed)
            if self.others is not None and self.others.meet(hull, float(np.max(np.abs(hull)))):
                return False  # the extra volume is another decision's cell
        except QhullError:
            return False  # a degenerate vertex set (qhull's topology error): do not merge
        self.parent[b] = a
        self.V[a] = hull
        self.vol[a] = tot
        self.V[b] = None
        return True


def _merge(pieces: list[_Piece | None], edges: np.ndarray, merge: bool,
           deadline: Deadline | None = None, others: list[np.ndarray] | None = None
           ) -> list[tuple[np.ndarray, float]]:
    """Greedy convex merging along ``edges``; at ``deadline`` it stops (every cell is
    still a convex union of pieces: the rules stay exact, only fewer merged).  ``others``:
    the vertex sets of the other decisions' cells, which no merged hull may take in."""
    cl = _Clusters(pieces, None if others is None else _Others(others))
    if merge and len(edges):
        have = np.array([p is not None for p in pieces])
        E = edges[have[edges[:, 0]] & have[edges[:, 1]]]
        changed = True
        while changed and not (deadline is not None and deadline.expired()):
            changed = False
            for i, j in E[:, :2].tolist():
                if deadline is not None and deadline.expired():
                    break
                if cl.try_merge(i, j):
                    changed = True
    roots = sorted({cl.find(i) for i, p in enumerate(pieces) if p is not None})
    return [(cl.V[r], cl.vol[r]) for r in roots]


def _bsp_cells(fnet: Network, decs: list[Decision], pieces, dom: Box, merge: bool, deadline: Deadline | None = None):
    """Per decision: the pure BSP cells, then greedily merged where convex; None when
    ``deadline`` expires during the partition (the caller keeps the pieces)."""
    from . import _bsp

    polys, labels = [], []
    for k, pcs in enumerate(pieces):
        for p in pcs:
            if p is not None:
                polys.append(p.V)
                labels.append(k)
    labels = np.array(labels)
    seg = _bsp.boundary_segments(fnet, decs, polys, labels, dom.lo, dom.hi)
    cells = _bsp.bsp(polys, labels, seg, dom.lo, dom.hi, deadline=deadline)
    if cells is None:
        return None
    out = []
    for k in range(len(decs)):
        mine = [_Piece(c, _bsp.area(c)) for c, lab in cells if lab == k]
        theirs = [c for c, lab in cells if lab != k]
        out.append(_merge_touching(mine, theirs) if merge else [(p.V, p.vol) for p in mine])
    return out


def _cells_keep_pieces(cells_by: list, pieces: list) -> bool:
    """Whether every piece's centroid lies in a cell of its own decision (2-D cells)."""
    for cells, pcs in zip(cells_by, pieces, strict=True):
        hulls = []
        for V, _ in cells:
            try:
                A, b, _ = G.hull(V)
            except QhullError:
                continue
            hulls.append((A, b, max(1.0, float(np.max(np.abs(V))))))
        for p in pcs:
            if p is None:
                continue
            c = p.V.mean(0)
            if not any(np.all(A @ c <= b + MATCH_RTOL * s) for A, b, s in hulls):
                return False
    return True


def _merge_touching(pcs: list[_Piece], others: list[np.ndarray] | None = None) -> list[tuple[np.ndarray, float]]:
    """Greedy convex merging of cells whose bounding boxes touch."""
    if not pcs:
        return []
    lo = np.array([p.V.min(0) for p in pcs])
    hi = np.array([p.V.max(0) for p in pcs])
    eps = MATCH_RTOL * float(np.max(hi.max(0) - lo.min(0)))
    touch = np.all((lo[:, None, :] <= hi[None, :, :] + eps) & (lo[None, :, :] <= hi[:, None, :] + eps), axis=2)
    i, j = np.nonzero(np.triu(touch, 1))
    E = np.stack([i, j, np.zeros_like(i)], axis=1)
    return _merge(pcs, E, True, others=others)


def _domain_rows(domain: Box | Polytope) -> tuple[np.ndarray, np.ndarray]:
    P = domain.to_polytope()
    return G.normalize_rows(P.A, P.b)


def _own_rows(A: np.ndarray, b: np.ndarray, DA: np.ndarray, Db: np.ndarray) -> np.ndarray:
    """Rows of a rule's hull that are not on the domain's boundary (those are implicit)."""
    keep = np.ones(A.shape[0], dtype=bool)
    for r in range(A.shape[0]):
        same = np.all(np.abs(DA - A[r]) <= MATCH_RTOL, axis=1) & (np.abs(Db - b[r]) <= MATCH_RTOL * (1 + np.abs(Db)))
        keep[r] = not same.any()
    return keep


def _domain_volume(domain: Box | Polytope) -> float:
    if isinstance(domain, Box):
        return float(np.prod(domain.widths))
    P = domain
    c, _ = P.chebyshev_center()
    return G.volume(G.vertices(*G.normalize_rows(P.A, P.b), c))


def decision_rules(
    net: Network,
    domain: Any,
    decision: Any = None,
    *,
    features: Any = None,
    class_names: Any = None,
    merge: bool = True,
    method: str = "auto",
    certify_rules: bool = False,
    max_regions: int | None = None,
    progress: bool = False,
    time_limit: float | None = None,
) -> DecisionRules:
    """The decision rules of ``net`` inside ``domain`` (see the module docstring).

    Args:
        net: the network.
        domain: a Box (or a bounded Polytope).
        decision: one decision ("positive"/"negative", a class, a predicate ``(C, d)``),
            or None for every decision (both signs, or every class).
        features, class_names: names used in the rules.
        merge: merge adjacent same-decision cells while the union stays convex.
        method: "bsp" (2-D inputs: cut the box along the lines of the decision
            boundary's edges, then merge), "merge" (merge whole region pieces; any
            dimension) or "auto" (bsp in 2-D, else merge).
        certify_rules: prove every rule with relulab.verify's exact MILP.
        max_regions: stop the enumeration early (the result is marked partial).
        progress: a progress bar for the enumeration.
        time_limit: seconds for the whole call.  The enumeration stops at it (the result
            is partial: the rules cover only part); merging stops at it (the rules stay
            exact, fewer are merged: ``info["merge_stopped_at_time_limit"]``);
            certification then leaves the rest unproved (``certified`` False).

    Example:
        >>> from relulab import Network, Box
        >>> net = Network([[[1.0, 1.0]]], [[-1.0]])
        >>> dr = decision_rules(net, Box([0, 0], [1, 1]), "positive")
        >>> dr.rules[0].text(3), round(dr.rules[0].volume_fraction, 9)
        ('x0 + x1 >= 1 -> positive', 0.5)
    """
    from .. import regions as R

    t0 = time.perf_counter()
    check_flag("decision_rules", merge=merge, certify_rules=certify_rules)
    if time_limit is not None and not (is_positive_seconds(time_limit) and np.isfinite(time_limit)):
        raise ExplainError(f"decision_rules: time_limit must be a positive number of seconds or None, "
                           f"got {time_limit!r}")
    deadline = Deadline(time_limit, floor=1e-3)
    # shares of the limit: the enumeration 40%, cutting its regions into pieces (a hull
    # per region) up to 75%, merging and writing the rules (a hull per rule) the rest
    cut_deadline = Deadline(None if time_limit is None else 0.75 * time_limit)
    fnet = float_net(net)
    dom = check_domain(fnet, domain)
    names = feature_names(features, fnet.input_dim)
    decs = all_decisions(fnet, class_names) if decision is None else [as_decision(fnet, decision, class_names)]
    rs = R.enumerate(fnet, dom, max_regions=max_regions, progress=progress, vertices=True,
                     time_limit=None if time_limit is None else max(0.4 * time_limit, 1e-3))
    if len(rs) == 0:
        if rs.partial:
            raise ExplainError(f"decision_rules: the time limit ({time_limit:g} s) ended the region "
                               "enumeration before its first region: give more time")
        raise ExplainError("the domain holds no full-dimensional linear region")
    t1 = time.perf_counter()
    floor = output_floor(fnet, dom)   # once: the cutting and every rule's proof use it
    pieces, n_pieces, cut_stopped = _pieces(rs, decs, cut_deadline, floor)
    t2 = time.perf_counter()
    if method == "auto":
        method = "bsp" if fnet.input_dim == 2 and isinstance(dom, Box) and merge else "merge"
    if method not in ("bsp", "merge"):
        raise ExplainError(f"unknown method {method!r}: use 'auto', 'bsp' or 'merge'")
    if method == "bsp" and (fnet.input_dim != 2 or not isinstance(dom, Box)):
        raise ExplainError("method 'bsp' needs 2 inputs and a Box domain")
    dvol = _domain_volume(dom)
    DA, Db = _domain_rows(dom)
    rules: list[Rule] = []
    summary: dict = {}
    if method == "bsp" and (rs.partial or cut_stopped or deadline.expired()):
        # a cut enumeration leaves its pieces unmerged (the partition had no deadline and
        # ran 6x past a 1.5 s limit)
        method = "merge"
    if method == "bsp":
        cells_by = _bsp_cells(fnet, decs, pieces, dom, merge, deadline)
        if cells_by is None:
            method = "merge"   # the partition met the deadline: the pieces, unmerged
        elif not _cells_keep_pieces(cells_by, pieces):
            # the partition's area tolerance dropped a small cell of some decision (a
            # pocket of area 2e-12 where f = +1): the merge method keeps every piece
            method = "merge"
    if method == "merge":
        # a partial enumeration has no facet graph at hand (the skeleton engine's is for a
        # complete one): building it takes longer than the enumeration, so a time limit
        # that cut the enumeration leaves the pieces unmerged
        skip = deadline.expired() or (rs.partial and time_limit is not None)
        edges = R.adjacency(rs, fnet) if merge and not skip else np.zeros((0, 3), dtype=np.int64)
        cells_by = [_merge(pcs, edges, merge, deadline,
                           [p.V for j, other in enumerate(pieces) if j != k for p in other if p is not None])
                    for k, pcs in enumerate(pieces)]
    merge_stopped = merge and (deadline.expired() or (method == "merge" and skip))  # (bsp: 2-D, quick)
    for dec, pcs, merged in zip(decs, pieces, cells_by, strict=True):
        vol_dec = 0.0
        # a stable, readable order: by the cells' centres, coordinate by coordinate
        merged = sorted(merged, key=lambda cv: tuple(np.round(cv[0].mean(0), 9)))
        for V, vol in merged:
            # every cell becomes its rule, also past the deadline: a cut merge leaves more
            # rules, each exact (breaking here gave 0 rules after a complete enumeration)
            A, b, H = G.hull(V)
            keep = _own_rows(A, b, DA, Db)
            rules.append(Rule(A[keep], b[keep], dec.label, names, kind="merged" if merge else "region",
                              certified=False, volume_fraction=vol / dvol, vertices=H))
            vol_dec += vol
        summary[dec.label] = {"rules": len(merged), "pieces": sum(p is not None for p in pcs),
                              "volume_fraction": vol_dec / dvol}
    t3 = time.perf_counter()
    certified = None
    if certify_rules:
        out = []
        by_label = {d.label: d for d in decs}
        for r in rules:
            if deadline.expired():  # the rest stay unproved
                out.append(r)
                continue
            ok, worst = certify(fnet, dom, r.A, r.b, by_label[r.decision], deadline.left(), floor)
            out.append(Rule(r.A, r.b, r.decision, names, r.kind, ok, worst, r.volume_fraction,
                            vertices=r.vertices))
        rules = out
        certified = all(r.certified for r in rules)
    t4 = time.perf_counter()
    cov = float(sum(r.volume_fraction for r in rules))
    if decision is None and not (rs.partial or cut_stopped) and abs(cov - 1.0) > COVER_TOL:
        # every decision asked, a complete enumeration whose rules do not tile the domain is
        # a numerical failure (on a box of width 2e-9 in 3-D: "always -> negative" covering
        # 25 %), not an answer
        bb = dom.bounding_box() if hasattr(dom, "bounding_box") else dom
        raise ExplainError(
            f"decision_rules: the rules cover {100 * cov:.4g} % of the domain, not all of it: the "
            f"geometry failed at this scale (domain width {float(np.max(bb.hi - bb.lo)):.3g}, "
            f"coordinates up to {float(np.max(np.abs(np.r_[bb.lo, bb.hi]))):.3g}); rescale the "
            "inputs to a box of size about 1")
    return DecisionRules(
        rules=tuple(rules), decisions=summary, n_regions=len(rs), n_pieces=n_pieces,
        n_rules=len(rules), covered_fraction=cov, partial=bool(rs.partial or cut_stopped), certified=certified,
        features=names, method=method,
        info={**({"merge_stopped_at_time_limit": True} if merge_stopped else {}),
              # the enumeration's own doubt: a sign too close to call may hide a thin region,
              # and the rules next to it (the CLI said "exact by construction" regardless)
              **({"near_ties": int(rs.info.get("near_ties") or 0) or 1}
                 if not rs.certified or rs.info.get("near_ties") else {})},
        times={"enumerate": t1 - t0, "cut": t2 - t1, "merge": t3 - t2, "certify": t4 - t3,
               "total": t4 - t0},
    )
