"""The classical method, kept as an independent cross-check: breadth-first search over
activation patterns with LPs (one Chebyshev LP per region and one redundancy LP per
neuron per region), as in relucent.  Slow, but simple and valid for unbounded domains.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from ..domain import Box, Polytope
from ..lp import LPModel, chebyshev_center, no_interior
from ..network import Network
from ..tolerance import BFS_STEP, DUPLICATE_ROW_TOL, FEAS_TOL, MIN_RADIUS, PROBE_STEP, ROUNDOFF
from ._types import RegionSet

__all__ = ["enumerate_bfs", "is_facet", "distinct_halfspaces", "near_twins",
           "hidden_facet"]


def facet_excess(m: LPModel, A: np.ndarray, b: np.ndarray, q: int,
                 with_rows: np.ndarray | None = None) -> float:
    """How far ``A[q] x`` exceeds ``b[q]`` over ``{A x <= b}`` with row ``q`` (and the rows
    ``with_rows``, when given) relaxed by 1 (the LP ``m`` over those rows); ``-inf`` when
    the LP has no answer."""
    rows = [q] if with_rows is None else [int(r) for r in with_rows]
    for r in rows:
        m.set_row_bounds(r, -np.inf, b[r] + 1.0)
    m.set_objective(-A[q])
    res = m.solve()
    for r in rows:
        m.set_row_bounds(r, -np.inf, b[r])
    return float(-res.objective - b[q]) if res.ok else -np.inf


def is_facet(m: LPModel, A: np.ndarray, b: np.ndarray, q: int) -> bool:
    """Whether row ``q`` of ``{A x <= b}`` (the LP ``m`` over those rows) is a facet:
    relaxing it lets ``A[q] x`` exceed ``b[q]`` (by more than the LP's accuracy)."""
    return facet_excess(m, A, b, q) > FEAS_TOL


def _clusters(A: np.ndarray, b: np.ndarray, tol: float) -> np.ndarray:
    """A label per row of ``{A x <= b}``: rows within ``tol`` of each other (normals, and
    offsets relative to ``1 + |b|``) share one, transitively."""
    n = A.shape[0]
    parent = np.arange(n)
    if n < 2:
        return parent
    # sort along a fixed direction: close rows are neighbours within a window of its spread
    r = np.random.default_rng(0).uniform(0.5, 1.0, A.shape[1] + 1)
    key = A @ r[:-1] + b * r[-1]
    order = np.argsort(key, kind="stable")
    ks = key[order]
    span = tol * (1.0 + np.abs(b[order])) * float(r.sum())

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a in range(n):
        i = order[a]
        c = a + 1
        while c < n and ks[c] - ks[a] <= span[a] + span[c]:
            j = order[c]
            if (np.max(np.abs(A[i] - A[j])) <= tol
                    and abs(b[i] - b[j]) <= tol * (1.0 + max(abs(b[i]), abs(b[j])))):
                parent[root(i)] = root(j)
            c += 1
    return np.array([root(i) for i in range(n)])


def near_twins(A: np.ndarray, b: np.ndarray, tol: float = FEAS_TOL) -> list[np.ndarray]:
    """Groups (two rows or more) of distinct normalised rows ``{A x <= b}`` (see
    :func:`distinct_halfspaces`) within ``tol`` of each other.  Such rows hide each
    other's facet: relaxing either leaves the other, so the slab between them (a region
    thinner than the LPs' accuracy, or nothing) and what lies beyond it go unseen.

    Example:
        >>> A = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]); b = np.array([0.3, 0.3 + 1e-11, 1.0])
        >>> [g.tolist() for g in near_twins(A, b)]
        [[0, 1]]
    """
    lab = _clusters(A, b, tol)
    groups, counts = np.unique(lab, return_counts=True)
    return [np.flatnonzero(lab == g) for g in groups[counts > 1]]


def hidden_facet(m: LPModel, A: np.ndarray, b: np.ndarray, group: np.ndarray) -> bool:
    """Whether the near twins ``group`` (see :func:`near_twins`), relaxed together, bound
    the set: a facet that no single one of them shows."""
    return facet_excess(m, A, b, int(group[0]), with_rows=group) > FEAS_TOL


def distinct_halfspaces(A: np.ndarray, b: np.ndarray, idx: np.ndarray, n_neurons: int
                        ) -> tuple[np.ndarray, np.ndarray]:
    """One row per distinct half-space of the normalised rows ``{A x <= b}`` (row ids
    ``idx``: neurons below ``n_neurons``, then domain rows).  Duplicates hide each
    other's facet (relaxing one copy leaves the other), so facet tests must run on
    these.  Returns (the kept rows, sorted; for every row, the position in ``keep`` of
    its representative).  A domain row wins over a neuron row, then the lower id.

    Example:
        >>> A = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]); b = np.array([1.0, 1.0, 2.0])
        >>> keep, rep = distinct_halfspaces(A, b, np.arange(3), 3)
        >>> keep.tolist(), rep.tolist()
        ([0, 2], [0, 0, 1])
    """
    order = np.lexsort((idx, (idx < n_neurons).astype(int)))
    # the same half-space up to a few ulp (a tolerance, not a rounding of the digits:
    # two copies 1e-17 apart may round to different 12th decimals)
    lab = _clusters(A, b, DUPLICATE_ROW_TOL)
    _, first, inv = np.unique(lab[order], return_index=True, return_inverse=True)
    keep = np.sort(order[first])
    # representative of row order[j] is the class inv[j]; map classes to positions in keep
    cls_pos = np.searchsorted(keep, order[first])
    rep = np.empty(len(idx), dtype=np.int64)
    rep[order] = cls_pos[inv.ravel()]
    return keep, rep


def pattern_hrep(net, pattern, A_dom, b_dom) -> tuple[np.ndarray, np.ndarray]:
    """The rows ``A x <= b`` of the region of ``pattern``: one per neuron (active:
    ``-z <= 0``, inactive: ``z <= 0``), then the domain's rows."""
    G, h = net.region_inequalities(net.split_pattern(pattern))
    return np.concatenate([G, A_dom]), np.concatenate([h, b_dom])


def enumerate_bfs(
    net: Network, domain: Box | Polytope, *, max_regions: int | None = None
) -> RegionSet:
    """All regions by BFS over patterns with LPs (see the module docstring)."""
    net = net.float() if net.is_exact else net
    d = net.input_dim
    N = net.n_neurons
    P = domain.to_polytope()
    A_dom, b_dom = np.asarray(P.A, float), np.asarray(P.b, float)
    if A_dom.shape[0]:
        centre, r_dom = chebyshev_center(A_dom, b_dom)
    else:
        centre, r_dom = np.zeros(d), np.inf
    rng = np.random.default_rng(0)
    # a start point off every hyperplane, inside the domain: nudges stay within half the
    # domain's inscribed ball (a fixed 1e-4 left a box 2e-6 high, and bfs found nothing)
    nudge = min(1e-4 * (1.0 + float(np.abs(centre).max(initial=0.0))), 0.5 * r_dom)
    x0 = centre
    for _ in range(100):
        zs = np.concatenate([z.ravel() for z in net.preactivations(x0[None])]) if N else np.ones(1)
        if np.all(np.abs(zs) > PROBE_STEP):
            break
        u = rng.normal(size=d)
        x0 = centre + nudge * rng.uniform(0.1, 1.0) * u / max(float(np.linalg.norm(u)), 1e-300)  # tol: a zero draw
    start = net.pattern_vector(x0[None])[0] if N else np.zeros(0, bool)
    seen = {start.tobytes()}
    queue = deque([start])
    unresolved = 0  # thin regions seen but not listed, steps that may have jumped one
    out = []
    while queue:
        pat = queue.popleft()
        A, b = pattern_hrep(net, pat, A_dom, b_dom)
        nrm = np.linalg.norm(A, axis=1)
        live = nrm > 0
        # a row with zero normal is a constant: infeasible when negative, and an active
        # neuron needs a positive constant (z > 0; z identically 0 counts as inactive,
        # as in the other engines)
        active = np.concatenate([pat, np.zeros(len(b_dom), bool)])
        # every pattern queued was read off a point by a forward pass, so an empty one is
        # rounding's doing (a neuron that is only noise on x > 0, its row composed with the
        # other sign): the region at that point was not listed, and the set is not
        # certified (a region covering half of [-1, 1] was dropped, "certified")
        if np.any(~live & ((b < 0) | (active & (b <= 0)))):
            unresolved += 1
            continue
        A, b, idx = A[live] / nrm[live, None], b[live] / nrm[live], np.flatnonzero(live)
        keep, _ = distinct_halfspaces(A, b, idx, N)
        A, b, idx = A[keep], b[keep], idx[keep]
        xc, r = chebyshev_center(A, b)
        if no_interior(xc, r):
            unresolved += 1   # (see above)
            continue
        if r <= MIN_RADIUS:
            # a real region (a ball fits) too thin for the facet LPs: not listed, so the
            # set is not certified
            unresolved += 1
            continue
        # non-redundant rows: maximise a_i x over the others with row i relaxed
        m = LPModel(np.zeros(d), A_ub=A, b_ub=b)
        excess = np.array([facet_excess(m, A, b, q) for q in range(A.shape[0])])
        facets = np.flatnonzero(excess > FEAS_TOL)
        # near twins (rows 1e-12 apart) hide each other's facet: the slab between them
        # and the region beyond it would be missed
        unresolved += sum(1 for g in near_twins(A, b)
                          if not np.any(excess[g] > FEAS_TOL) and hidden_facet(m, A, b, g))
        # a row relaxed by less than the LP's accuracy but beyond round-off may be a facet
        # of a thin region (a spike of width 1e-10): its neighbour may be missed
        unresolved += int(np.count_nonzero((excess > ROUNDOFF * (1.0 + np.abs(b))) & (excess <= FEAS_TOL)))
        if not np.isfinite(r):  # an unbounded region: the ball around xc that fits in it
            r = float(np.min(b - A @ xc, initial=np.inf))
        out.append((pat, A[facets], b[facets], idx[facets], xc, min(r, 1e300)))
        for q in facets:
            if idx[q] >= N:
                continue
            # the neighbour: step a little across the centre of the facet (robust to
            # degenerate input, where neighbours may differ in more than one neuron)
            fc = _facet_center(A, b, q)
            if fc is None:
                continue
            nb = _step_across(net, fc, A[q], A_dom, b_dom)
            if nb is None:
                continue
            if nb is _JUMPED:
                unresolved += 1
                continue
            key = nb.tobytes()
            if key not in seen:
                seen.add(key)
                queue.append(nb)
        if max_regions is not None and len(out) >= max_regions:
            break
    n = len(out)
    m_out = net.output_dim
    aff = np.zeros((n, m_out, d + 1))
    for i, (pat, *_rest) in enumerate(out):
        C, c = net.affine_for_pattern(_split(pat, net.widths))
        aff[i, :, :d] = C
        aff[i, :, d] = c
    fptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum([len(o[3]) for o in out], out=fptr[1:])
    pats = np.array([o[0] for o in out], dtype=bool).reshape(n, N)
    rs = RegionSet(
        dim=d,
        widths=net.widths,
        packed_patterns=np.packbits(pats, axis=1) if N else np.zeros((n, 0), np.uint8),
        vertex_ptr=np.zeros(n + 1, dtype=np.int64),
        vertices=np.zeros((0, d)),
        facet_ptr=fptr,
        facet_ids=np.concatenate([o[3] for o in out]) if n else np.zeros(0, np.int64),
        facet_A=np.concatenate([o[1] for o in out]) if n else np.zeros((0, d)),
        facet_b=np.concatenate([o[2] for o in out]) if n else np.zeros(0),
        interior=np.array([o[4] for o in out]).reshape(n, d),
        radius=np.array([o[5] for o in out]),
        affine=aff,
        bounded=np.array([_bounded(o[1], o[2]) for o in out], dtype=bool),
        touches_domain=np.array([bool(np.any(o[3] >= N)) for o in out], dtype=bool),
        partial=bool(queue) and max_regions is not None,
        domain=domain,
        method="bfs",
    )
    if unresolved:
        rs.certified = False
        rs.info["unresolved"] = unresolved
    return rs


_JUMPED = np.zeros(0, bool)  # sentinel of _step_across: no step landed next to the facet
MAX_STEP_HALVINGS = 40


def _step_across(net: Network, fc: np.ndarray, a: np.ndarray, A_dom: np.ndarray,
                 b_dom: np.ndarray) -> np.ndarray | None:
    """The pattern of the region on the other side of the facet through ``fc`` with
    outer normal ``a``; None when that side is outside the domain (every step, halved
    down to 2^-40 of the first, leaves it), ``_JUMPED`` when no step short enough to land
    in a region whose closure holds ``fc`` was found.

    A fixed step may jump over a region thinner than itself (a spike of width 1e-10
    behind a facet), so the landing region must contain ``fc`` in its closure, checked
    on its own rows at round-off; otherwise the step is halved.
    """
    step = BFS_STEP * (1.0 + float(np.abs(fc).max()))
    landed = False
    for _ in range(MAX_STEP_HALVINGS):
        y = fc + step * a
        if A_dom.shape[0] and np.any(A_dom @ y > b_dom):
            # outside the domain: a shorter step may still land inside it (a thin domain,
            # 2e-6 high, was left by the first step, and its neighbours were never seen)
            step /= 2
            continue
        landed = True
        nb = net.pattern_vector(y[None])[0]
        A2, b2 = pattern_hrep(net, nb, A_dom, b_dom)
        viol = A2 @ fc - b2
        scale = 1.0 + np.abs(A2) @ np.abs(fc) + np.abs(b2)
        if np.all(viol <= ROUNDOFF * scale):
            return nb
        step /= 2
    return _JUMPED if landed else None


def _facet_center(A: np.ndarray, b: np.ndarray, q: int) -> np.ndarray | None:
    """Centre of the largest (d-1)-ball inside the facet ``A[q] x = b[q]``."""
    d = A.shape[1]
    a = A[q]
    others = np.delete(np.arange(A.shape[0]), q)
    Ao = A[others]
    proj = Ao - (Ao @ a)[:, None] * a[None, :]
    nr = np.linalg.norm(proj, axis=1)
    c = np.zeros(d + 1)
    c[-1] = -1.0
    lb = np.concatenate([np.full(d, -np.inf), [0.0]])
    ub = np.concatenate([np.full(d, np.inf), [1e6]])
    m = LPModel(c, A_ub=np.hstack([Ao, nr[:, None]]), b_ub=b[others],
                A_eq=np.concatenate([a, [0.0]])[None], b_eq=[b[q]], lb=lb, ub=ub)
    r = m.solve()
    if not r.ok or r.x[-1] <= 0:
        return None
    # HiGHS meets the equality to its feasibility tolerance (1e-7): put the centre back on
    # the facet (``a`` is a unit normal), or a step from it misses a thin neighbour
    x = r.x[:d]
    return x - (a @ x - b[q]) * a


def _split(pat: np.ndarray, widths: tuple[int, ...]) -> list[np.ndarray]:
    out, off = [], 0
    for w in widths:
        out.append(pat[off : off + w])
        off += w
    return out


def _bounded(A: np.ndarray, b: np.ndarray) -> bool:
    """A polyhedron {A x <= b} (non-empty) is bounded iff {A y <= 0} = {0}."""
    d = A.shape[1]
    for i in range(d):
        for sgn in (1.0, -1.0):
            c = np.zeros(d)
            c[i] = -sgn
            m = LPModel(c, A_ub=A, b_ub=np.zeros(A.shape[0]), lb=-np.ones(d), ub=np.ones(d))
            r = m.solve()
            if r.ok and -r.objective > FEAS_TOL:
                return False
    return True
