"""The fast path: the vertex-edge skeleton of the whole complex, each vertex stored once.

Valid in general position (every vertex of the complex lies on exactly ``d``
hyperplanes, counting the domain's facets), which holds for generic float weights.
Any sign of degeneracy -- a vertex whose pre-activation is zero within
:data:`SIGN_TOL`, an edge without exactly ``d - 1`` shared hyperplanes, a 2-face not
cut in exactly two points -- raises :class:`Degenerate` and the caller falls back to
the per-region engine (:mod:`._engine`), which handles every case.

Per vertex we keep its coordinates, the pre-activations of the current layer (the
network is continuous, so these are well defined at a vertex), the ids of the ``d``
hyperplanes through it and its sign vector (bit ``j`` set when neuron ``j`` is
positive; 0 on the hyperplanes through it).  Adding neuron ``j``:

* every edge whose ends have opposite signs gets a new vertex (linear interpolation:
  along an edge everything is affine);
* the new vertices are joined inside every 2-face of the old complex they share: a
  2-face is named by its ternary sign vector (``d - 2`` zero ids and the signs of
  all other neurons), which a new vertex on edge ``e`` knows for each of the
  ``2 (d - 1)`` faces around ``e``; faces named by exactly two new vertices give the
  new edges.  No LP, no per-region work.

At the end the regions are the distinct sign vectors obtained from each vertex by
choosing a side of each neuron hyperplane through it (``2^d`` cells meet at a vertex
in general position).  Facets, H-representations (from the activation patterns,
grouped layer by layer), interior points and affine maps follow in a few vectorised
passes.
"""

from __future__ import annotations

import numpy as np

from ..limits import ResourceLimitError, memory_budget
from . import _engine as E
from ._arrays import EngineRun, RegionArrays
from ._hashing import PatternTable, as_words, group_rows
from ._types import Skeleton

__all__ = ["Degenerate", "skeleton_regions", "skeleton_count", "skeleton_owned_count"]


class Degenerate(Exception):
    """The input is not in general position (use the per-region engine)."""


class TooBig(Exception):
    """The skeleton would outgrow the memory budget (use the streaming per-region engine)."""


# The skeleton's arrays at most double with the next neuron, and extracting the regions
# at the end needs a few times the skeleton again: stop while that still fits.
SKELETON_HEADROOM = 4.0


def _check_memory(pool: _Pool, edges: _Pool, j: int, N: int) -> None:
    used = sum(b.nbytes for b in pool.a.values()) + sum(b.nbytes for b in edges.a.values())
    budget = memory_budget()
    if SKELETON_HEADROOM * used > budget:
        raise TooBig(f"after {j + 1} of {N} neurons the vertex skeleton holds "
                     f"{used / 2**30:.2f} GB; with room to grow and to extract the regions "
                     f"it would pass the memory budget of {budget / 2**30:.2f} GB")


def _bytes_bit(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Byte index and bit value (np.packbits order) of neuron ids."""
    return ids >> 3, (np.uint8(128) >> (ids & 7).astype(np.uint8)).astype(np.uint8)


def _in_rows(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``(A[:, :, None] == B[:, None, :]).any(2)`` with 1-D comparisons on transposed
    copies (no (m, d, d) temporary and no reduction over a tiny axis)."""
    return _in_cols(np.ascontiguousarray(A.T), np.ascontiguousarray(B.T)).T


def _in_cols(At: np.ndarray, Bt: np.ndarray) -> np.ndarray:
    """``_in_rows`` on transposed (d, m) arrays, returning (d, m)."""
    out = np.empty(At.shape, dtype=bool)
    tmp = np.empty(At.shape[1], dtype=bool)
    for i in range(At.shape[0]):
        o = out[i]
        if Bt.shape[0] == 0:
            o[:] = False
            continue
        np.equal(At[i], Bt[0], out=o)
        for j in range(1, Bt.shape[0]):
            np.equal(At[i], Bt[j], out=tmp)
            o |= tmp
    return out


def _groups(M: np.ndarray, stable: bool = True):
    return group_rows(M, stable)


class _Pool:
    """Growable row arrays."""

    def __init__(self, arrays: dict[str, np.ndarray]):
        self.n = next(iter(arrays.values())).shape[0]
        self.a = {}
        for k, v in arrays.items():
            cap = max(16, 2 * self.n)
            buf = np.empty((cap, *v.shape[1:]), dtype=v.dtype)
            buf[: self.n] = v
            self.a[k] = buf

    def __getitem__(self, k: str) -> np.ndarray:
        return self.a[k][: self.n]

    def append(self, rows: dict[str, np.ndarray]) -> int:
        m = next(iter(rows.values())).shape[0]
        need = self.n + m
        for k, v in rows.items():
            buf = self.a[k]
            if need > buf.shape[0]:
                nb = np.empty((max(need, 2 * buf.shape[0]), *buf.shape[1:]), dtype=buf.dtype)
                nb[: self.n] = buf[: self.n]
                self.a[k] = buf = nb
            buf[self.n : need] = v
        s0 = self.n
        self.n = need
        return s0

    def reserve(self, m: int) -> tuple[int, dict[str, np.ndarray]]:
        """Append ``m`` uninitialised rows; returns their first index and views."""
        need = self.n + m
        for k, buf in self.a.items():
            if need > buf.shape[0]:
                nb = np.empty((max(need, 2 * buf.shape[0]), *buf.shape[1:]), dtype=buf.dtype)
                nb[: self.n] = buf[: self.n]
                self.a[k] = nb
        s0 = self.n
        self.n = need
        return s0, {k: buf[s0:need] for k, buf in self.a.items()}

    def replace(self, k: str, v: np.ndarray) -> None:
        """Replace a whole column family (e.g. new layer pre-activations)."""
        cap = self.a[next(iter(self.a))].shape[0]
        buf = np.empty((cap, *v.shape[1:]), dtype=v.dtype)
        buf[: self.n] = v
        self.a[k] = buf


def _initial(pb: E.Problem):
    try:
        X, F, ptr, bounded = E.initial_polytope(pb)
    except ResourceLimitError as e:
        # the domain polytope alone is past the budget: the streaming engine decides
        # what to answer (a partial set, or the count's one-line error)
        raise TooBig(str(e)) from None
    d = pb.d
    if np.any((F >= 0).sum(1) != d):
        raise Degenerate("domain polytope is not simple")
    Zid = np.sort(F[:, :d], axis=1)
    reg = np.zeros(X.shape[0], dtype=np.int64)
    a, b, _ids = E._simple_edges(Zid, reg, np.arange(X.shape[0]), d, pb.n_ids)
    return X, Zid, a, b


def _build(pb: E.Problem, progress=None, fixed: dict[int, bool] | None = None
           ) -> tuple[_Pool, _Pool, int]:
    """The vertex-edge skeleton of the whole complex, neuron by neuron.

    ``progress(frac)`` is called after each neuron.  ``fixed``: first-layer neurons
    whose sign is the same on the whole domain (neuron id -> active), as in a cell of a
    box cut along their hyperplanes: their bit is set and their hyperplane, a facet of
    the domain, is not added again.  Raises :class:`Degenerate`.
    """
    fixed = fixed or {}
    d = pb.d
    N = pb.N
    nb8 = 8 * max(1, (N + 63) // 64)  # bytes of a sign vector, padded to whole words
    X, Zid, Ea, Eb = _initial(pb)
    V0 = X.shape[0]
    w0 = pb.widths[0] if pb.n_layers else 1
    pool = _Pool({
        "X": X,
        "Z": np.zeros((V0, w0)),
        "T": np.zeros((V0, w0)),
        "id": Zid.astype(np.int64),
        "S": np.zeros((V0, nb8), dtype=np.uint8),
    })
    edges = _Pool({"a": Ea.astype(np.int64), "b": Eb.astype(np.int64)})
    for k in range(pb.n_layers):
        W, bias = pb.Ws[k], pb.bs[k]
        Hin = pool["X"] if k == 0 else np.maximum(pool["Z"], 0.0)
        Zk = Hin @ W.T + bias
        # zero tolerance relative to the scale of the layer's inputs over the whole
        # domain (an absolute floor, see the sign policy in _engine)
        Habs = np.abs(Hin)
        Tk = E.SIGN_TOL * ((Habs + Habs.max(initial=0.0)) @ np.abs(W).T + np.abs(bias))
        pool.replace("Z", Zk)
        pool.replace("T", Tk)
        for jj in range(W.shape[0]):
            j = int(pb.offsets[k] + jj)
            if j in fixed:
                if fixed[j]:
                    byte, bit = _bytes_bit(np.array([j]))
                    pool["S"][:, byte[0]] |= bit[0]
            else:
                _add_neuron(pool, edges, j, jj, d, N, nb8)
            _check_memory(pool, edges, j, N)
            if progress is not None:
                progress((j + 1) / max(N, 1))
    return pool, edges, nb8


def skeleton_regions(pb: E.Problem, progress=None, vertices: bool = True,
                     fixed: dict[int, bool] | None = None) -> EngineRun:
    """All regions (general position), with the skeleton's by-products (pattern table,
    dual-graph edges, and the skeleton itself when vertex lists are not stored).

    ``progress(frac)`` is called after each neuron; ``fixed`` as for :func:`_build`.
    Raises :class:`Degenerate`.
    """
    pool, edges, _ = _build(pb, progress, fixed)
    return _extract(pb, pool, edges, vertices)


def skeleton_patterns(pb: E.Problem, progress=None) -> np.ndarray:
    """The packed activation patterns of every region, nothing else (general position;
    raises :class:`Degenerate`)."""
    pool, edges, _ = _build(pb, progress)
    lv = _LowestVertex(pb, pool, edges)
    packed, _ = _regions(lv)
    # the consistency check of a full extraction: every facet must find its region, else
    # the input is degenerate and only the per-region engine counts right (without it the
    # count could be one short where regions meet in a degenerate vertex)
    _facets(lv, PatternTable(packed), pb.n_ids)
    return packed


def skeleton_count(pb: E.Problem, progress=None) -> int:
    """The number of regions (general position; raises :class:`Degenerate`)."""
    return int(skeleton_patterns(pb, progress).shape[0])


def skeleton_owned_count(pb: E.Problem, foreign: np.ndarray) -> tuple[int, int]:
    """Regions of this domain (a cell of a larger box) that the cell *owns*, and all of
    its regions (general position; raises :class:`Degenerate`).

    ``foreign`` (bool, one per hyperplane id) marks the cell's facets that are cuts
    inside the larger box.  A region of the larger box is owned by the one cell holding
    its lowest vertex (for the skeleton's fixed generic direction): a piece's lowest
    vertex is a vertex of the whole region exactly when no cut passes through it (in
    general position a cut never passes through a vertex of the complex), and a vertex
    that is lowest on a piece is then lowest on the whole convex region.  So every
    region is counted by exactly one cell, decided inside the cell, with no patterns
    exchanged.
    """
    pool, edges, _ = _build(pb)
    lv = _LowestVertex(pb, pool, edges)
    allc = list(range(lv.d))
    v, sides = lv.choices(allc)
    packed = lv.with_bits(v, sides, allc)
    # the consistency check of a full extraction (see skeleton_patterns)
    _facets(lv, PatternTable(np.ascontiguousarray(packed)), pb.n_ids)
    owned = ~foreign[lv.Id[v]].any(axis=1)
    return int(owned.sum()), int(v.size)


def _add_neuron(pool: _Pool, edges: _Pool, j: int, jj: int, d: int, N: int, nb8: int) -> None:
    s = pool["Z"][:, jj].copy()  # one strided pass, then contiguous work
    tol = pool["T"][:, jj]
    if np.any(np.abs(s) <= tol):
        raise Degenerate(f"a vertex lies on the hyperplane of neuron {j}")
    pos = s > 0
    byte, bit = _bytes_bit(np.array([j]))
    S = pool["S"]
    S[:, byte[0]] |= pos.view(np.uint8) * bit[0]
    ea, eb = edges["a"], edges["b"]
    cut = np.flatnonzero(pos[ea] != pos[eb])
    if cut.size == 0:
        return
    u = ea[cut]
    w = eb[cut]
    su, sw = s[u], s[w]
    t = (su / (su - sw))[:, None]
    Iu, Iw = pool["id"][u], pool["id"][w]
    common = _in_rows(Iu, Iw)
    if np.any(common.sum(1) != d - 1):
        raise Degenerate("an edge without d - 1 shared hyperplanes")
    C = Iu[common].reshape(cut.size, d - 1)  # sorted (rows of Iu are sorted)
    In = np.sort(np.concatenate([C, np.full((C.shape[0], 1), j)], axis=1), axis=1)
    m = cut.size
    X, Z, T = pool["X"], pool["Z"], pool["T"]
    Xu, Xw, Zu, Zw = X[u], X[w], Z[u], Z[w]
    # tolerances are read only for the later neurons of this layer
    Tu, Tw = T[u, jj + 1 :], T[w, jj + 1 :]
    Su, Sv = S[u], S[w]
    # the new rows are written in place: u + t (w - u), evaluated as before
    n0, nw = pool.reserve(m)
    Xn = nw["X"]
    np.subtract(Xw, Xu, out=Xn)
    Xn *= t
    Xn += Xu
    Zn = nw["Z"]
    np.subtract(Zw, Zu, out=Zn)
    Zn *= t
    Zn += Zu
    Zn[:, jj] = 0.0
    Tn = nw["T"]
    Tn[:, : jj + 1] = 0.0
    Tr = Tn[:, jj + 1 :]
    np.subtract(Tw, Tu, out=Tr)
    Tr *= t
    Tr += Tu
    nw["id"][:] = In
    Sn = nw["S"]
    np.bitwise_or(Su, Sv, out=Sn)
    Sn[:, byte[0]] &= ~bit[0]
    new = n0 + np.arange(m)
    # split the cut edges
    edges.a["b"][cut] = new
    edges.append({"a": new, "b": w})
    if d < 2:
        return
    # join new vertices lying on a common 2-face
    keys = []
    owners = []
    Sw = Sn.view(np.uint64)  # (m, nb8 / 8)
    for c in range(d - 1):
        rel = C[:, c]
        rest = np.delete(C, c, axis=1) if d > 2 else np.zeros((m, 0), dtype=np.int64)
        isn = rel < N
        # released neuron: both sides; released domain facet: its one (inner) side
        base = np.concatenate([rest.astype(np.uint64), Sw], axis=1)
        keys.append(base)
        owners.append(np.arange(m))
        if isn.any():
            idx = np.flatnonzero(isn)
            Sp = Sn[idx].copy()
            bi, bv = _bytes_bit(rel[idx])
            Sp[np.arange(idx.size), bi] |= bv
            keys.append(np.concatenate([rest[idx].astype(np.uint64), Sp.view(np.uint64)], axis=1))
            owners.append(idx)
    K = np.concatenate(keys, axis=0)
    own = np.concatenate(owners)
    order, starts, lens = _groups(K, stable=False)
    if np.any(lens > 2):
        raise Degenerate("a 2-face cut in more than two points")
    two = starts[lens == 2]
    # orient each new edge by key position (as a stable grouping would)
    ka, kb = order[two], order[two + 1]
    p = own[np.minimum(ka, kb)]
    q = own[np.maximum(ka, kb)]
    edges.append({"a": new[p], "b": new[q]})


class _LowestVertex:
    """Faces of the complex by their lowest vertex for a generic linear function ``g``.

    Every bounded face has exactly one lowest vertex, and a vertex ``v`` is the lowest of
    a face iff every edge of the face at ``v`` goes up.  In general position the edges
    at ``v`` come in pairs (release one of its ``d`` hyperplanes, go to either side), so
    the faces whose lowest vertex is ``v`` are the choices of an upward edge per
    released hyperplane: each face is produced once.
    """

    def __init__(self, pb: E.Problem, pool: _Pool, edges: _Pool):
        d = pb.d
        N = pb.N
        self.d, self.N = d, N
        self.X, self.Id, self.S = pool["X"], pool["id"], pool["S"]
        self.V = self.X.shape[0]
        self.nbp = (N + 7) // 8 if N else 0
        self.NB = self._upward_neighbours(edges["a"], edges["b"])
        # per column, contiguous: has an upward edge to side 0 / side 1 / either
        self.H0 = np.ascontiguousarray((self.NB[:, :, 0] >= 0).T)
        self.H1 = np.ascontiguousarray((self.NB[:, :, 1] >= 0).T)
        self.Hany = self.H0 | self.H1

    def _upward_neighbours(self, ea: np.ndarray, eb: np.ndarray) -> np.ndarray:
        """``NB[v, c, side]``: the neighbour of ``v`` along the upward edge that releases
        its ``c``-th hyperplane towards ``side`` (-1 when that edge goes down)."""
        X, Id, S, d, N = self.X, self.Id, self.S, self.d, self.N
        g = np.random.default_rng(7).normal(size=d)
        gv = X @ g
        NB = np.full((self.V, d, 2), -1, dtype=np.int64)
        IdT = np.ascontiguousarray(Id.T)
        for p, q in ((ea, eb), (eb, ea)):
            up = gv[q] > gv[p]
            p, q = p[up], q[up]
            inq = _in_cols(IdT[:, p], IdT[:, q])
            col = np.argmin(inq, axis=0)
            cid = Id[p, col]
            isn = cid < N
            bi, bv = _bytes_bit(np.where(isn, cid, 0))
            side = isn & ((S[q, bi] & bv) != 0)
            NB[p, col, side.astype(np.int64)] = q
        return NB

    def choices(self, cols: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Rows (vertex, side per column): every way to pick an upward edge for each
        column in ``cols`` (usually one way; two where a bent line goes up both ways)."""
        ok = np.ones(self.V, dtype=bool)
        for c in cols:
            ok &= self.Hany[c]
        v = np.flatnonzero(ok)
        sides = np.zeros((v.size, self.d), dtype=np.int64)
        for c in cols:
            has0 = self.H0[c][v]
            both = has0 & self.H1[c][v]
            sides[:, c] = np.where(has0, 0, 1)
            if both.any():
                es = sides[both].copy()
                es[:, c] = 1
                v = np.concatenate([v, v[both]])
                sides = np.concatenate([sides, es], axis=0)
        return v, sides

    def with_bits(self, v: np.ndarray, sides: np.ndarray, cols: list[int]) -> np.ndarray:
        """The packed patterns of the chosen faces: ``v``'s signs plus the chosen sides."""
        nbp = self.nbp
        P = self.S[v, :nbp] if nbp else np.zeros((v.size, 0), np.uint8)
        for c in cols:
            r = np.flatnonzero(sides[:, c] == 1)
            if r.size:
                bi, bv = _bytes_bit(self.Id[v[r], c])
                P[r, bi] |= bv
        return P


def _regions(lv: _LowestVertex) -> tuple[np.ndarray, np.ndarray]:
    """Packed patterns and interior points of all regions: a region comes with ``d`` of
    its edges at its lowest vertex; their ends and the vertex span a simplex inside it,
    whose centre is the interior point."""
    d = lv.d
    allc = list(range(d))
    v, sides = lv.choices(allc)
    P = lv.with_bits(v, sides, allc)
    acc = lv.X[v].copy()
    for c in allc:
        acc += lv.X[lv.NB[v, c, sides[:, c]]]
    interior = acc / (d + 1)
    packed = np.ascontiguousarray(P) if lv.N else np.zeros((P.shape[0], 0), np.uint8)
    return packed, interior


def _facets(lv: _LowestVertex, table: PatternTable, n_ids: int):
    """Facets by their lowest vertex (one hyperplane kept, an upward edge for the
    others), each with the regions on its two sides.  Returns the (region, id) pairs
    sorted and the dual-graph edges ``(lo, hi, neuron)``, which come for free: a neuron
    facet joins its two regions."""
    d, N, Id = lv.d, lv.N, lv.Id
    isn_col = Id < N
    Qs, fids = [], []
    for h in range(d):
        others = [c for c in range(d) if c != h]
        v, sides = lv.choices(others)
        base = lv.with_bits(v, sides, others)
        hid = Id[v, h]
        Qs.append(base)
        fids.append(hid)
        sel = np.flatnonzero(isn_col[v, h])
        Q = base[sel].copy()
        bi, bv = _bytes_bit(hid[sel])
        Q[np.arange(sel.size), bi] |= bv
        Qs.append(Q)
        fids.append(hid[sel])
    sizes = [q.shape[0] for q in Qs]
    fr = table.find(np.ascontiguousarray(np.concatenate(Qs, axis=0)))  # (all, nbp)
    fid = np.concatenate(fids)
    if np.any(fr < 0):
        raise Degenerate("a facet without its region")
    off = np.concatenate([[0], np.cumsum(sizes)])
    gl = []
    for t in range(0, len(Qs), 2):
        lo_, hi_ = off[t], off[t + 1]
        sel_n = np.flatnonzero(fid[lo_:hi_] < N)
        r0 = fr[lo_:hi_][sel_n]
        r1 = fr[off[t + 1] : off[t + 2]]
        gl.append(np.stack([r0, r1, fid[lo_:hi_][sel_n]], axis=1))
    graph_edges = np.concatenate(gl, axis=0) if gl else np.zeros((0, 3), np.int64)
    key = np.sort(fr * n_ids + fid)
    if key.size > 1 and np.any(key[1:] == key[:-1]):
        raise Degenerate("a facet found twice")
    lo = np.minimum(graph_edges[:, 0], graph_edges[:, 1])
    hi = np.maximum(graph_edges[:, 0], graph_edges[:, 1])
    return key // n_ids, key % n_ids, np.stack([lo, hi, graph_edges[:, 2]], axis=1)


def _vertex_lists(lv: _LowestVertex, table: PatternTable, n: int):
    """Every (vertex, region) incidence: the regions around a vertex are the side
    choices for its neuron hyperplanes.  Returns the vertices grouped by region and
    their offsets."""
    d, Id, S, nbp = lv.d, lv.Id, lv.S, lv.nbp
    isn_col = Id < lv.N
    vs, rs_ = [], []
    for mask in range(2**d):
        cols = [c for c in range(d) if (mask >> c) & 1]
        ok = np.ones(lv.V, dtype=bool)
        for c in cols:
            ok &= isn_col[:, c]
        v = np.flatnonzero(ok)
        Pm = S[v, :nbp]
        for c in cols:
            bi, bv = _bytes_bit(Id[v, c])
            Pm[np.arange(v.size), bi] |= bv
        r = table.find(np.ascontiguousarray(Pm))
        if np.any(r < 0):
            raise Degenerate("a vertex without its region")
        vs.append(v)
        rs_.append(r)
    vv = np.concatenate(vs)
    rr = np.concatenate(rs_)
    o = np.argsort(rr, kind="stable")
    vptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rr, minlength=n), out=vptr[1:])
    return lv.X[vv[o]], vptr


def _extract(pb: E.Problem, pool: _Pool, edges: _Pool, vertices: bool) -> EngineRun:
    """Regions from the skeleton: patterns and interior points, facets (with the dual
    graph), vertex lists (or the skeleton, to recover them later), then the
    H-representations and affine maps."""
    lv = _LowestVertex(pb, pool, edges)
    packed, interior = _regions(lv)
    n = packed.shape[0]
    table = PatternTable(packed)
    fr, fid, graph_edges = _facets(lv, table, pb.n_ids)
    skeleton = None
    if vertices:
        verts, vptr = _vertex_lists(lv, table, n)
    else:
        verts = np.zeros((0, pb.d))
        vptr = np.zeros(n + 1, dtype=np.int64)
        skeleton = Skeleton(lv.X.copy(), lv.Id.copy(), lv.S.copy())
    arrays = _hrep_parts(pb, packed, vptr, verts, fr, fid, interior)
    return EngineRun(chunks=[arrays], engine="skeleton", table=table, edges=graph_edges,
                     skeleton=skeleton)


def _prefix_mask(nbits: int, nwords: int) -> np.ndarray:
    """uint64 words selecting the first ``nbits`` neurons of a packed sign vector."""
    b = np.zeros(nwords * 64, dtype=bool)
    b[:nbits] = True
    return np.packbits(b).view(np.uint64)


def _layer_apply(W: np.ndarray, H: np.ndarray) -> np.ndarray:
    """``W @ H[r]`` for every r, as one matrix product: (n, w_in, c) -> (n, w_out, c)."""
    n, w_in, c = H.shape
    out = W @ H.transpose(1, 0, 2).reshape(w_in, n * c)
    return out.reshape(W.shape[0], n, c).transpose(1, 0, 2)


def _hrep_parts(pb, packed, vptr, verts, fr, fid, interior) -> RegionArrays:
    d = pb.d
    N = pb.N
    n = packed.shape[0]
    L = pb.n_layers
    pat = np.unpackbits(packed, axis=1, count=N).astype(bool) if N else np.zeros((n, 0), bool)
    words = as_words(packed)
    # per layer: group the regions by their pattern on the layers before (the layer's
    # pre-activations depend on nothing else) and build each group's affine maps once
    groups: list[np.ndarray] = []
    Zs: list[np.ndarray] = []
    for k in range(L):
        if k == 0:
            g = np.zeros(n, dtype=np.int64)
            Z = np.concatenate([pb.Ws[0], pb.bs[0][:, None]], axis=1)[None]
        else:
            off = int(pb.offsets[k])
            pre = words & _prefix_mask(off, words.shape[1])
            order, starts, lens = _groups(pre)
            g = np.empty(n, dtype=np.int64)
            g[order] = np.repeat(np.arange(starts.shape[0]), lens)
            rep = order[starts]
            p_prev = pat[rep, pb.offsets[k - 1] : off]
            H = p_prev[:, :, None] * Zs[k - 1][groups[k - 1][rep]]
            Z = _layer_apply(pb.Ws[k], H)
            Z[:, :, d] += pb.bs[k]
        groups.append(g)
        Zs.append(Z)
    art = pb.is_artificial(fid)
    bounded = np.bincount(fr[art], minlength=n) == 0
    fr, fid = fr[~art], fid[~art]
    nf = fid.shape[0]
    isn = fid < N
    # one gather for every facet from a single table of rows (C | c): each layer's
    # group maps, then the domain's rows stored as (A | -b) with sign +1
    tabs = [Zs[k].reshape(-1, d + 1) for k in range(L)]
    boff = np.zeros(L + 1, dtype=np.int64)
    np.cumsum([t.shape[0] for t in tabs], out=boff[1:])
    tabs.append(np.concatenate([pb.A_dom, -pb.b_dom[:, None]], axis=1))
    Zall = np.concatenate(tabs, axis=0)
    row = np.empty(nf, dtype=np.int64)
    sg = np.ones(nf)
    ni = np.flatnonzero(isn)
    if ni.size:
        fn, rn = fid[ni], fr[ni]
        lay = pb.layer_of[fn]
        wid = np.asarray(pb.widths, dtype=np.int64)
        row[ni] = boff[lay] + np.stack(groups)[lay, rn] * wid[lay] + pb.local_of[fn]
        sg[ni] = np.where(pat[rn, fn], -1.0, 1.0)
    dsel = np.flatnonzero(~isn)
    row[dsel] = boff[L] + (fid[dsel] - N)
    Zr = Zall[row]
    A = sg[:, None] * Zr[:, :d]
    bb = -sg * Zr[:, d]
    A, bb, fptr, radius, touches = E.facet_geometry(A, bb, interior, fr, isn, n)
    m = pb.Ws[-1].shape[0]
    aff = np.empty((n, m, d + 1))
    if L:
        a0, a1 = int(pb.offsets[L - 1]), int(pb.offsets[L])
        # backward through the layers with row vectors: (n m, w) @ (w, w') products,
        # no per-region gathers
        Pk = pat[:, a0:a1].astype(np.float64)
        WL = pb.Ws[-1]
        U = (WL[None, :, :] * Pk[:, None, :]).reshape(n * m, a1 - a0)
        cst = U @ pb.bs[L - 1]
        for k in range(L - 2, -1, -1):
            o0, o1 = int(pb.offsets[k]), int(pb.offsets[k + 1])
            U = U @ pb.Ws[k + 1]
            U *= pat[:, o0:o1] if m == 1 else np.repeat(pat[:, o0:o1], m, axis=0)
            cst += U @ pb.bs[k]
        aff[:, :, :d] = (U @ pb.Ws[0]).reshape(n, m, d)
        aff[:, :, d] = cst.reshape(n, m)
        aff[:, :, d] += pb.bs[-1]
    else:
        aff[:] = np.concatenate([pb.Ws[0], pb.bs[0][:, None]], axis=1)
    if pb.net.skip is not None:
        Sk, sk = pb.net.skip
        aff[:, :, :d] += np.asarray(Sk, float)
        aff[:, :, d] += np.asarray(sk, float)
    return RegionArrays(
        packed_patterns=packed, vertex_ptr=vptr, vertices=verts, facet_ptr=fptr,
        facet_ids=fid, facet_A=A, facet_b=bb, interior=interior, radius=radius,
        affine=aff, bounded=bounded, touches_domain=touches,
    )
