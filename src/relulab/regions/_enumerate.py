"""Public enumeration entry points built on the subdivision engine."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..domain import Box, Polytope, as_domain
from ..errors import RelulabError
from ..network import Network
from . import _engine as E
from ._hashing import unique_pairs
from ._types import Region, RegionSet

__all__ = ["enumerate_regions", "iter_regions", "count_regions", "default_domain"]


def default_domain(net: Network, domain: Any) -> Box | Polytope:
    """``None`` means the box [-1, 1]^d."""
    if domain is None:
        d = net.input_dim
        return Box(-np.ones(d), np.ones(d))
    return as_domain(domain, net.input_dim)


def _big_box_size(pb: E.Problem) -> float:
    """A first guess of a box holding every vertex of the complex (for unbounded domains):
    a multiple of the largest distance of a first-layer hyperplane from the origin."""
    if pb.n_layers == 0:
        return 1.0
    W, b = pb.Ws[0], pb.bs[0]
    nrm = np.linalg.norm(W, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        dist = np.where(nrm > 0, np.abs(b) / nrm, 0.0)
    scale = max(1.0, float(dist.max()) if dist.size else 1.0)
    if pb.m_dom:
        scale = max(scale, float(np.abs(pb.b_dom).max()))
    return 16.0 * scale


# ------------------------------------------------------------------ finalize
def finalize(pb: E.Problem, chunk: E.FinalChunk) -> dict:
    """Arrays describing the finished regions of one batch."""
    b = chunk.batch
    d = pb.d
    n = b.n
    N = pb.N
    ptr = b.ptr
    X = b.X
    F = b.F
    valid = F >= 0
    reg = E._slot_region(ptr)
    ri = np.broadcast_to(reg[:, None], F.shape)[valid]
    ids = F[valid]
    fr, fid = unique_pairs(ri, ids, n, pb.n_ids)
    nvalid = valid.sum(1)
    simple = np.logical_and.reduceat(nvalid == d, ptr[:-1])
    keepf = np.ones(fr.shape[0], dtype=bool)
    flat = np.zeros(n, dtype=bool)
    for r in np.flatnonzero(~simple):
        Xr = X[ptr[r] : ptr[r + 1]]
        if d > 0 and Xr.shape[0] > 0:
            sv = np.linalg.svd(Xr[1:] - Xr[0], compute_uv=False) if Xr.shape[0] > 1 else []
            scale = max(1.0, float(np.abs(Xr).max()))
            if int((np.asarray(sv) > 1e-9 * scale).sum()) < d:
                flat[r] = True  # not full-dimensional (numerical debris): dropped below
                continue
        # degenerate region: keep a constraint only if its vertices span a facet, and
        # one constraint per facet (a domain row before a neuron, then lower ids)
        Xr = X[ptr[r] : ptr[r + 1]]
        Fr = F[ptr[r] : ptr[r + 1]]
        lo, hi = np.searchsorted(fr, [r, r + 1])
        seen: dict[bytes, int] = {}
        for q in range(lo, hi):
            on = (Fr == fid[q]).any(1)
            pts = Xr[on]
            ok = pts.shape[0] >= d
            if ok and d > 1:
                M = pts[1:] - pts[0]
                sv = np.linalg.svd(M, compute_uv=False)
                scale = max(1.0, float(np.abs(pts).max()))
                ok = int((sv > 1e-9 * scale).sum()) >= d - 1
            if not ok:
                keepf[q] = False
                continue
            key = np.packbits(on).tobytes()
            if key in seen:
                other = seen[key]
                prefer_new = pb.is_domain(fid[q]) and not pb.is_domain(fid[other])
                if prefer_new:
                    keepf[other] = False
                    seen[key] = q
                else:
                    keepf[q] = False
            else:
                seen[key] = q
    fr = fr[keepf]
    fid = fid[keepf]
    art = pb.is_artificial(fid)
    bounded = np.bincount(fr[art], minlength=n) == 0
    fr = fr[~art]
    fid = fid[~art]
    nf = fid.shape[0]
    A = np.empty((nf, d))
    bb = np.empty(nf)
    isn = fid < N
    pattern = chunk.pattern
    for k in range(pb.n_layers):
        sel = np.flatnonzero(isn & (pb.layer_of[np.minimum(fid, max(N - 1, 0))] == k))
        if sel.size == 0:
            continue
        Zr = b.Zs[k][b.par[fr[sel], k], pb.local_of[fid[sel]]]
        act = pattern[fr[sel], fid[sel]]
        sg = np.where(act, -1.0, 1.0)
        A[sel] = sg[:, None] * Zr[:, :d]
        bb[sel] = -sg * Zr[:, d]
    dsel = np.flatnonzero(~isn)
    A[dsel] = pb.A_dom[fid[dsel] - N]
    bb[dsel] = pb.b_dom[fid[dsel] - N]
    cnt = np.diff(ptr)
    interior = np.add.reduceat(X, ptr[:-1], axis=0) / cnt[:, None]
    A, bb, fptr, radius, touches = E.facet_geometry(A, bb, interior, fr, isn, n)
    # the network's affine map on each region
    if pb.n_layers:
        L = pb.n_layers
        H = b.cur[:, :, None] * b.Zs[L - 1][b.par[:, L - 1]]
        aff = np.einsum("mi,nik->nmk", pb.Ws[-1], H)
        aff[:, :, d] += pb.bs[-1]
    else:
        aff = np.broadcast_to(
            np.concatenate([pb.Ws[0], pb.bs[0][:, None]], axis=1), (n, pb.Ws[0].shape[0], d + 1)
        ).copy()
    if pb.net.skip is not None:
        S, s = pb.net.skip
        aff[:, :, :d] += np.asarray(S, float)
        aff[:, :, d] += np.asarray(s, float)
    packed = (
        np.packbits(pattern, axis=1) if N else np.zeros((n, 0), dtype=np.uint8)
    )
    parts = {
        "packed": packed,
        "vptr": ptr,
        "vertices": X,
        "fptr": fptr,
        "fid": fid,
        "fA": A,
        "fb": bb,
        "interior": interior,
        "radius": radius,
        "affine": aff,
        "bounded": bounded,
        "touches": touches,
    }
    if flat.any():
        parts = _subset(parts, ~flat)
    return parts


def _subset(parts: dict, keep: np.ndarray) -> dict:
    """The regions of a chunk where ``keep`` is True."""
    idx = np.flatnonzero(keep)
    out = dict(parts)
    for key in ("packed", "interior", "radius", "affine", "bounded", "touches"):
        out[key] = parts[key][idx]
    for ptr_key, keys in (("vptr", ("vertices",)), ("fptr", ("fid", "fA", "fb"))):
        ptr = parts[ptr_key]
        cnt = ptr[idx + 1] - ptr[idx]
        newptr = np.zeros(idx.size + 1, dtype=np.int64)
        np.cumsum(cnt, out=newptr[1:])
        rows = np.repeat(ptr[idx] - newptr[:-1], cnt) + np.arange(newptr[-1])
        out[ptr_key] = newptr
        for k2 in keys:
            out[k2] = parts[k2][rows]
    return out


def _region_from(parts: dict, i: int, offset: int, pb: E.Problem) -> Region:
    d = pb.d
    f0, f1 = parts["fptr"][i], parts["fptr"][i + 1]
    v0, v1 = parts["vptr"][i], parts["vptr"][i + 1]
    pat = (
        np.unpackbits(parts["packed"][i], count=pb.N).astype(bool) if pb.N else np.zeros(0, bool)
    )
    aff = parts["affine"][i]
    return Region(
        index=offset + i,
        pattern=pat,
        A=parts["fA"][f0:f1],
        b=parts["fb"][f0:f1],
        facet_ids=parts["fid"][f0:f1],
        vertices=parts["vertices"][v0:v1],
        interior_point=parts["interior"][i],
        radius=float(parts["radius"][i]),
        affine=(aff[:, :d], aff[:, d]),
        bounded=bool(parts["bounded"][i]),
        touches_domain=bool(parts["touches"][i]),
        n_neurons=pb.N,
    )


def _assemble(pb: E.Problem, chunks: list[dict], **meta) -> RegionSet:
    d = pb.d
    m = pb.Ws[-1].shape[0]
    if not chunks:
        z = np.zeros(1, dtype=np.int64)
        return RegionSet(
            dim=d, widths=pb.widths, packed_patterns=np.zeros((0, (pb.N + 7) // 8), np.uint8),
            vertex_ptr=z, vertices=np.zeros((0, d)), facet_ptr=z, facet_ids=np.zeros(0, np.int64),
            facet_A=np.zeros((0, d)), facet_b=np.zeros(0), interior=np.zeros((0, d)),
            radius=np.zeros(0), affine=np.zeros((0, m, d + 1)), bounded=np.zeros(0, bool),
            touches_domain=np.zeros(0, bool), **meta,
        )

    def cat_ptr(key):
        outs = [np.zeros(1, dtype=np.int64)]
        off = 0
        for c in chunks:
            outs.append(c[key][1:] + off)
            off += c[key][-1]
        return np.concatenate(outs)

    def cat(key):
        return np.concatenate([c[key] for c in chunks], axis=0)

    return RegionSet(
        dim=d,
        widths=pb.widths,
        packed_patterns=cat("packed"),
        vertex_ptr=cat_ptr("vptr"),
        vertices=cat("vertices"),
        facet_ptr=cat_ptr("fptr"),
        facet_ids=cat("fid"),
        facet_A=cat("fA"),
        facet_b=cat("fb"),
        interior=cat("interior"),
        radius=cat("radius"),
        affine=cat("affine"),
        bounded=cat("bounded"),
        touches_domain=cat("touches"),
        **meta,
    )


# ------------------------------------------------------------------ progress
class _Progress:
    """A rich progress bar over the finished share of the domain (or nothing)."""

    def __init__(self, enabled: bool, what: str = "regions"):
        self.enabled = enabled
        self.what = what
        self._p = None

    def __enter__(self):
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            console = Console(stderr=True)
            if not console.is_terminal:
                return self  # piped or redirected: a bar would only leave blank lines
            self._p = Progress(
                TextColumn("[bold]linear regions"),
                BarColumn(),
                TextColumn("{task.percentage:>5.1f}% of the domain"),
                TextColumn("{task.fields[found]} found"),
                TimeElapsedColumn(),
                transient=True,
                console=console,
            )
            self._p.__enter__()
            self._task = self._p.add_task("enum", total=1.0, found=0)
        return self

    def update(self, frac: float, found: int) -> None:
        if self._p is not None:
            self._p.update(self._task, completed=frac, found=found)

    def __exit__(self, *exc):
        if self._p is not None:
            self._p.__exit__(*exc)
        return False


# ------------------------------------------------------------------ drivers
def _problem(net: Network, domain: Any, big: float | None) -> tuple[E.Problem, Any]:
    if not isinstance(net, Network):
        raise RelulabError(f"expected a relulab Network, got {type(net).__name__}")
    dom = default_domain(net, domain)
    pb = E.Problem(net, dom)
    if isinstance(dom, Polytope) and (dom.n_constraints == 0 or not dom.is_bounded):
        pb.big = float(big) if big is not None else _big_box_size(pb)
    return pb, dom


def _chunks(pb: E.Problem, progress: bool, max_regions: int | None, state: dict):
    """Yield finalized chunk dicts; sets state['partial'] on early stop."""
    X0, F0, ptr0, _ = E.initial_polytope(pb)
    found = 0
    with _Progress(progress) as bar:
        it = E.run(pb, X0, F0, ptr0, progress=lambda f: bar.update(f, found))
        try:
            for ch in it:
                parts = finalize(pb, ch)
                n = parts["interior"].shape[0]
                if max_regions is not None and found + n > max_regions:
                    parts = _head(parts, max_regions - found)
                    n = parts["interior"].shape[0]
                    state["partial"] = True
                found += n
                yield parts
                if max_regions is not None and found >= max_regions:
                    # more regions exist unless this was the last batch
                    state["partial"] = state.get("partial", False) or _has_more(it)
                    return
        except KeyboardInterrupt:
            state["partial"] = True
            state["interrupted"] = True
            return


def run_all(pb: E.Problem, progress: bool, max_regions: int | None, engine: str,
            state: dict, vertices: bool = True, count_only: bool = False) -> list[dict]:
    """All finished regions as a list of ``parts`` dicts.

    ``engine``: ``"skeleton"`` (shared-vertex fast path, general position only),
    ``"cells"`` (per-region polytopes: streams, handles degenerate input) or ``"auto"``
    (the skeleton unless streaming is needed or the input is degenerate).
    """
    if engine not in ("auto", "skeleton", "cells"):
        raise RelulabError(f"unknown engine {engine!r}: use 'auto', 'skeleton' or 'cells'")
    if engine in ("auto", "skeleton") and max_regions is None:
        from ._skeleton import Degenerate, skeleton_regions

        try:
            with _Progress(progress) as bar:
                parts = skeleton_regions(pb, progress=lambda f: bar.update(f, 0),
                                         vertices=vertices, count_only=count_only)
            state["engine"] = "skeleton"
            return [parts]
        except Degenerate as e:
            if engine == "skeleton":
                raise RelulabError(f"the skeleton engine needs general position: {e}") from None
            state["fallback"] = str(e)
        except KeyboardInterrupt:
            state["partial"] = True
            state["interrupted"] = True
            state["engine"] = "skeleton"
            return []
    state["engine"] = "cells"
    return list(_chunks(pb, progress, max_regions, state))


def _has_more(it) -> bool:
    try:
        next(it)
    except StopIteration:
        return False
    return True


def _head(parts: dict, k: int) -> dict:
    """The first ``k`` regions of a chunk."""
    v1 = parts["vptr"][k]
    f1 = parts["fptr"][k]
    out = dict(parts)
    for key in ("packed", "interior", "radius", "affine", "bounded", "touches"):
        out[key] = parts[key][:k]
    out["vptr"] = parts["vptr"][: k + 1]
    out["fptr"] = parts["fptr"][: k + 1]
    out["vertices"] = parts["vertices"][:v1]
    for key in ("fid", "fA", "fb"):
        out[key] = parts[key][:f1]
    return out


def iter_regions(
    net: Network,
    domain: Box | Polytope | None = None,
    *,
    max_regions: int | None = None,
    progress: bool = False,
) -> Iterator[Region]:
    """Stream the linear regions of ``net`` inside ``domain`` (depth first).

    Same arguments as :func:`relulab.regions.enumerate`; Ctrl-C ends the stream
    after the regions already produced (each of them exact).

    Example:
        >>> import numpy as np
        >>> from relulab import Network, Box, regions
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> [r.pattern.tolist() for r in regions.iter_regions(net, Box([-1], [1]))]
        [[True, False], [False, True]]
    """
    pb, dom = _problem(net, domain, None)
    if pb.big is not None:
        # unbounded domains need the certificate over the whole set first
        yield from enumerate_regions(net, dom, max_regions=max_regions, progress=progress)
        return
    state: dict = {}
    off = 0
    for parts in _chunks(pb, progress, max_regions, state):
        n = parts["interior"].shape[0]
        for i in range(n):
            yield _region_from(parts, i, off, pb)
        off += n


def enumerate_regions(
    net: Network,
    domain: Box | Polytope | None = None,
    *,
    max_regions: int | None = None,
    progress: bool = False,
    method: str = "subdivision",
    centers: str = "centroid",
    big: float | None = None,
    engine: str = "auto",
    vertices: bool | str = "auto",
) -> RegionSet:
    """Every full-dimensional linear region of ``net`` inside ``domain``.

    Args:
        net: the network (an exact network is enumerated in float64).
        domain: a :class:`Box`, a :class:`Polytope` (bounded or not;
            ``Polytope.whole_space(d)`` is all of R^d); default ``[-1, 1]^d``.
        max_regions: stop after this many regions (the result is marked ``partial``).
        progress: show a rich progress bar.
        method: ``"subdivision"`` (exact polytope cutting, fast) or ``"bfs"`` (one LP
            per neuron per region, the slow classical method; for cross-checks).
        centers: ``"centroid"`` (vertex centroid, with the largest ball around it) or
            ``"chebyshev"`` (the Chebyshev centre of every region, one LP each).
        big: half-width of the artificial box used for unbounded domains (grown
            automatically until the result is certified).
        engine: ``"auto"`` (default: the shared-vertex skeleton, falling back to
            per-region polytopes on degenerate input or when ``max_regions`` is set),
            ``"skeleton"`` or ``"cells"``.  The result is the same.
        vertices: keep every region's vertex list (``"auto"``: in dimension <= 2, where
            it is cheap; otherwise ``Region.vertices`` is computed when first asked for).

    Ctrl-C returns the regions found so far, marked ``partial``.

    Example:
        >>> import numpy as np
        >>> from relulab import Network, Box, regions
        >>> net = Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
        >>> rs = regions.enumerate(net, Box([-1, -1], [1, 1]))
        >>> len(rs), sorted(rs.patterns.sum(1).tolist())
        (4, [0, 1, 1, 2])
    """
    t0 = time.perf_counter()
    if vertices == "auto":
        vertices = net.input_dim <= 2
    if method == "bfs":
        from ._bfs import enumerate_bfs

        rs = enumerate_bfs(net, default_domain(net, domain), max_regions=max_regions)
        rs.seconds = time.perf_counter() - t0
    elif method == "subdivision":
        pb, dom = _problem(net, domain, big)
        if pb.big is not None:
            from ._unbounded import enumerate_unbounded

            rs = enumerate_unbounded(net, dom, pb, max_regions=max_regions, progress=progress,
                                     engine=engine, vertices=bool(vertices))
        else:
            state: dict = {}
            chunks = run_all(pb, progress, max_regions, engine, state, bool(vertices))
            tables = [c.pop("table", None) for c in chunks]
            skel = [c.pop("skeleton", None) for c in chunks]
            gedges = [c.pop("graph_edges", None) for c in chunks]
            rs = _assemble(
                pb, chunks, partial=bool(state.get("partial", False)), domain=dom,
                method="subdivision",
            )
            rs.info.update({k: v for k, v in state.items() if k != "partial"})
            if len(tables) == 1 and tables[0] is not None:
                rs.info["_table"] = tables[0]
            if len(gedges) == 1 and gedges[0] is not None:
                rs.info["_edges"] = gedges[0]
            if len(skel) == 1 and skel[0] is not None:
                rs.info["_skeleton"] = skel[0]
        rs.seconds = time.perf_counter() - t0
    else:
        raise RelulabError(f"unknown method {method!r}: use 'subdivision' or 'bfs'")
    rs.info["net"] = net.float() if net.is_exact else net
    if centers == "chebyshev":
        _chebyshev_all(rs)
    elif centers != "centroid":
        raise RelulabError(f"unknown centers {centers!r}: use 'centroid' or 'chebyshev'")
    return rs


def _chebyshev_all(rs: RegionSet) -> None:
    from ..lp import chebyshev_center

    for i in range(len(rs)):
        f0, f1 = rs.facet_ptr[i], rs.facet_ptr[i + 1]
        x, r = chebyshev_center(rs.facet_A[f0:f1], rs.facet_b[f0:f1])
        if x is not None and r > 0:
            rs.interior[i] = x
            rs.radius[i] = r


def count_regions(
    net: Network,
    domain: Box | Polytope | None = None,
    *,
    progress: bool = False,
    engine: str = "auto",
) -> int:
    """The number of linear regions (no region data kept).

    Example:
        >>> import numpy as np
        >>> from relulab import Network, regions
        >>> net = Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
        >>> regions.count(net)
        4
    """
    pb, dom = _problem(net, domain, None)
    if pb.big is not None:
        return len(enumerate_regions(net, dom, progress=progress, engine=engine))
    if engine != "cells":
        state: dict = {}
        parts = run_all(pb, progress, None, engine, state, vertices=False, count_only=True)
        if state["engine"] == "skeleton":
            return int(parts[0]["count"]) if parts else 0
    X0, F0, ptr0, _ = E.initial_polytope(pb)
    total = [0]
    with _Progress(progress) as bar:
        for ch in E.run(pb, X0, F0, ptr0, progress=lambda f: bar.update(f, total[0])):
            total[0] += ch.batch.n
    return total[0]
