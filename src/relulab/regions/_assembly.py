"""The one assembly pipeline of region enumeration: run an engine, finalize its
batches into :class:`RegionArrays`, and assemble them into a :class:`RegionSet`.

Bounded and unbounded domains (:mod:`._unbounded`) both go through
:func:`run_engines` and :func:`assemble`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import RelulabError
from ..limits import ResourceLimitError, memory_budget
from ..tolerance import SIGN_TIE_SHARE, SIGN_TOL
from . import _engine as E
from ._arrays import EngineRun, RegionArrays
from ._hashing import unique_pairs
from ._types import RegionSet

__all__ = ["finalize", "run_engines", "stream_cells", "count_cells", "assemble", "Progress"]


# ------------------------------------------------------------------ finalize
def finalize(pb: E.Problem, chunk: E.FinalChunk) -> RegionArrays:
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
            sv = np.linalg.svd(Xr[1:] - Xr[0], compute_uv=False) if Xr.shape[0] > 1 else np.zeros(0)
            scale = max(1.0, float(np.abs(Xr).max()))
            # the flatness test uses the sign test's own tolerance: a region the signs
            # resolved (thicker than SIGN_TOL x scale) is real.  At RANK_TOL (1e-9) slabs
            # 1e-10 thick were dropped and the set still called certified
            if int((sv > SIGN_TOL * scale).sum()) < d:
                flat[r] = True  # not full-dimensional (numerical debris): dropped below
                thick = float(sv[d - 1]) if sv.size >= d else 0.0
                if thick > SIGN_TIE_SHARE * SIGN_TOL * scale:
                    pb.near_ties += 1  # thinner than the tolerance, thicker than rounding
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
                ok = int((sv > SIGN_TOL * scale).sum()) >= d - 1
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
    arrays = RegionArrays(
        packed_patterns=packed, vertex_ptr=ptr, vertices=X, facet_ptr=fptr, facet_ids=fid,
        facet_A=A, facet_b=bb, interior=interior, radius=radius, affine=aff,
        bounded=bounded, touches_domain=touches,
    )
    if flat.any():
        arrays = arrays.subset(~flat)
    return arrays


# The region arrays kept by the streaming engine are copied once more when assembled
# into one set: stop while twice what is kept still fits the budget.
ASSEMBLY_HEADROOM = 2.0


# ------------------------------------------------------------------ progress
class Progress:
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


# ------------------------------------------------------------------ engines
def stream_cells(pb: E.Problem, progress: bool, max_regions: int | None,
                 run: EngineRun, deadline: float | None = None) -> Iterator[RegionArrays]:
    """Finalized batches of the cell engine, depth first; marks ``run`` partial (and
    interrupted on Ctrl-C) on an early stop.  ``deadline``: a ``time.time()`` value at
    which the stream ends, partial."""
    # before the start (a domain too large for the test counts one, as do neurons that
    # rounding made one: both are counted by the start or the Problem itself)
    ties0 = pb.near_ties - pb.rounded_together
    found = 0
    kept = 0
    budget = memory_budget()
    late = [False]

    def past_deadline() -> bool:
        late[0] = late[0] or time.time() > deadline
        return late[0]

    pb.stop_cutting = None if deadline is None else past_deadline
    try:
        X0, F0, ptr0, _ = E.initial_polytope(pb)
    except E.CutStopped:
        run.partial = True
        run.stopped = "time limit reached after 0 regions (while the domain polytope was cut by its rows)"
        return
    except (ResourceLimitError, MemoryError) as e:
        run.partial = True
        run.stopped = f"memory: {e}" if isinstance(e, ResourceLimitError) else \
            f"memory: an allocation failed while the domain polytope was cut by its rows ({e})"
        return
    finally:
        pb.stop_cutting = None

    with Progress(progress) as bar:
        it = E.run(pb, X0, F0, ptr0, progress=lambda f: bar.update(f, found),
                   stop=None if deadline is None else past_deadline,
                   max_batch=_batch_for(max_regions, deadline))
        try:
            for ch in it:
                arrays = finalize(pb, ch)
                # the regions kept so far, and their assembly into one set at the end
                if ASSEMBLY_HEADROOM * (kept + arrays.nbytes) > budget:
                    room = budget / ASSEMBLY_HEADROOM - kept
                    k = int(arrays.n * max(room, 0.0) / max(arrays.nbytes, 1))
                    if max_regions is not None:
                        k = min(k, max_regions - found)
                    if k > 0:
                        found += k
                        yield arrays.head(k)
                    run.partial = True
                    run.stopped = (f"memory budget ({budget / 2**30:.3g} GB) reached after "
                                   f"{found} regions")
                    return
                kept += arrays.nbytes
                n = arrays.n
                if max_regions is not None and found + n > max_regions:
                    arrays = arrays.head(max_regions - found)
                    n = arrays.n
                    run.partial = True
                found += n
                yield arrays
                if max_regions is not None and found >= max_regions:
                    # more regions exist unless this was the last batch
                    run.partial = run.partial or _has_more(it)
                    return
            if late[0]:
                run.partial = True
                run.stopped = f"time limit reached after {found} regions"
        except KeyboardInterrupt:
            run.partial = True
            run.interrupted = True
            return
        except MemoryError as e:  # the budget's estimate missed: keep what was found
            run.partial = True
            run.stopped = f"memory: an allocation failed after {found} regions ({e})"
            return
        finally:
            run.near_ties = pb.near_ties - ties0


def _batch_for(max_regions: int | None, deadline: float | None) -> int | None:
    """The engine's batch size when only some regions may be wanted: with a region cap or
    a deadline, batches of at most 256 regions (about 2 x the cap), so that regions stream
    out after a small share of the work.  On an 8-60-60-1 network over [-1, 1]^8 the first
    batch took 93 s at the default 60,000 regions, 25 s at 1,024 and 4.4 s at 256; full
    runs with 256 are about as fast as with 60,000 on lighter networks (56 s vs 66 s on
    5-20-20-1).  None (the engine's default) otherwise."""
    if max_regions is None and deadline is None:
        return None
    return max(64, min(2 * max_regions, 256)) if max_regions is not None else 256


def _has_more(it) -> bool:
    try:
        next(it)
    except StopIteration:
        return False
    return True


def _check_engine(engine: str) -> None:
    if engine not in ("auto", "skeleton", "cells"):
        raise RelulabError(f"unknown engine {engine!r}: use 'auto', 'skeleton' or 'cells'")


def with_problem_ties(pb: E.Problem, run: EngineRun) -> EngineRun:
    """``run`` with the near ties its problem found before any region: neurons that float64
    rounds onto one hyperplane (an exact network's ``x - 1/3`` and ``x - (1/3 + 1e-20)``),
    and a start box too coarse for the domain (see ``E.too_coarse``).  The skeleton does
    not see them; every run of it (one process or a parallel cell) adds them here."""
    if pb.coarse:
        run.near_ties = max(run.near_ties, 1)
    run.near_ties = max(run.near_ties, pb.rounded_together)
    return run


def run_engines(pb: E.Problem, progress: bool, max_regions: int | None, engine: str,
                vertices: bool = True, deadline: float | None = None) -> EngineRun:
    """All finished regions of one run.

    ``engine``: ``"skeleton"`` (shared-vertex fast path, general position only),
    ``"cells"`` (per-region polytopes: streams, handles degenerate input) or ``"auto"``
    (the skeleton unless streaming is needed or the input is degenerate).  A
    ``deadline`` (a ``time.time()`` value) needs streaming: the cells engine stops there,
    partial, with the regions it has (the skeleton knows its regions only at the end).
    """
    _check_engine(engine)
    if deadline is not None and engine == "skeleton":
        raise RelulabError("a time limit needs the streaming engine: use engine='cells' or 'auto'")
    fallback = None
    if engine in ("auto", "skeleton") and max_regions is None and deadline is None:
        from ._skeleton import Degenerate, TooBig, skeleton_regions

        try:
            with Progress(progress) as bar:
                run = skeleton_regions(pb, progress=lambda f: bar.update(f, 0), vertices=vertices)
            return with_problem_ties(pb, run)
        except Degenerate as e:
            if engine == "skeleton":
                raise RelulabError(f"the skeleton engine needs general position: {e}") from None
            fallback = str(e)
        except TooBig as e:
            if engine == "skeleton":
                raise ResourceLimitError(f"the skeleton engine: {e}") from None
            fallback = f"memory: {e}"
        except KeyboardInterrupt:
            return EngineRun(engine="skeleton", partial=True, interrupted=True)
    run = EngineRun(engine="cells", fallback=fallback)
    run.chunks = list(stream_cells(pb, progress, max_regions, run, deadline=deadline))
    return run


def count_cells(pb: E.Problem, progress: bool, engine: str) -> int:
    """The number of regions, no region data kept (the skeleton's count when the
    input is in general position and ``engine`` allows it)."""
    _check_engine(engine)
    if engine != "cells":
        from ._skeleton import Degenerate, TooBig, skeleton_count

        try:
            with Progress(progress) as bar:
                return skeleton_count(pb, progress=lambda f: bar.update(f, 0))
        except MemoryError as e:
            raise ResourceLimitError(f"counting regions: an allocation failed ({e}); lower the memory "
                                     "use with a smaller domain or RELULAB_MEMORY_GB") from None
        except Degenerate as e:
            if engine == "skeleton":
                raise RelulabError(f"the skeleton engine needs general position: {e}") from None
        except TooBig as e:
            if engine == "skeleton":
                raise ResourceLimitError(f"the skeleton engine: {e}") from None
            # the per-region engine below streams: its memory stays bounded
    try:
        X0, F0, ptr0, _ = E.initial_polytope(pb)
    except MemoryError as e:
        raise ResourceLimitError(f"counting regions: an allocation failed while the domain polytope "
                                 f"was cut by its rows ({e}); give a box, or fewer rows") from None
    total = [0]
    with Progress(progress) as bar:
        try:
            for ch in E.run(pb, X0, F0, ptr0, progress=lambda f: bar.update(f, total[0])):
                total[0] += ch.batch.n
        except MemoryError as e:
            raise ResourceLimitError(f"counting regions: an allocation failed after {total[0]} "
                                     f"regions ({e}); lower the memory use with a smaller box or "
                                     "RELULAB_MEMORY_GB") from None
    E.refuse_near_ties(pb, "regions.count")
    return total[0]


def cell_patterns(pb: E.Problem) -> np.ndarray:
    """The packed activation patterns of every region, no region data: the skeleton's
    when the input is in general position and fits the budget, else the streaming
    per-region engine's."""
    from ._skeleton import Degenerate, TooBig, skeleton_patterns

    try:
        return skeleton_patterns(pb)
    except (Degenerate, TooBig):
        pass
    X0, F0, ptr0, _ = E.initial_polytope(pb)
    nb = (pb.N + 7) // 8
    out = [np.packbits(ch.pattern, axis=1) if pb.N else np.zeros((ch.batch.n, 0), np.uint8)
           for ch in E.run(pb, X0, F0, ptr0)]
    E.refuse_near_ties(pb, "regions.count")
    return np.concatenate(out, axis=0) if out else np.zeros((0, nb), np.uint8)


# ------------------------------------------------------------------ assembly
def assemble(pb: E.Problem, run: EngineRun, *, domain: Any, keep_graph: bool = True,
             info: dict | None = None) -> RegionSet:
    """The :class:`RegionSet` of one engine run.

    ``keep_graph``: keep the skeleton's pattern table and dual-graph edges (they index
    the regions of this run; the unbounded path, which may redo the run in a larger
    box, keeps only the vertex skeleton).  ``info`` entries come first in ``rs.info``.
    """
    if run.chunks:
        arrays = RegionArrays.concat(run.chunks)
    else:
        arrays = RegionArrays.empty(pb.d, pb.Ws[-1].shape[0], pb.N)
    rs = RegionSet(
        dim=pb.d, widths=pb.widths, **arrays.as_fields(), partial=run.partial,
        domain=domain, method="subdivision",
    )
    rs.info.update(info or {})
    rs.info.update(run.info())
    if run.near_ties:
        # a region thinner than the sign tolerance may have been merged into a neighbour
        rs.certified = False
    if keep_graph:
        rs._table = run.table
        rs._edges = run.edges
    rs._skeleton = run.skeleton
    return rs
