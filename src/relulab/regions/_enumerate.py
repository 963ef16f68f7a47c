"""Public enumeration entry points built on the subdivision engine."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..domain import Box, DomainError, Polytope, as_domain
from ..errors import RelulabError, UncertifiedCount, is_int_at_least, is_positive_seconds
from ..limits import ResourceLimitError
from ..network import Network
from ..tolerance import TINY
from . import _engine as E
from ._assembly import EngineRun, assemble, count_cells, run_engines, stream_cells
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
    scale = max(1.0, E.first_layer_reach(pb.Ws[0], pb.bs[0]))
    if pb.m_dom:
        scale = max(scale, float(np.abs(pb.b_dom).max()))
    return 16.0 * scale


# ------------------------------------------------------------------ drivers
def _is_unbounded(dom: Box | Polytope) -> bool:
    return isinstance(dom, Polytope) and (dom.n_constraints == 0 or not dom.is_bounded)


def _problem(net: Network, domain: Any, big: float | None) -> tuple[E.Problem, Any]:
    if not isinstance(net, Network):
        raise RelulabError(f"expected a relulab Network, got {type(net).__name__}")
    dom = default_domain(net, domain)
    pb = E.Problem(net, dom)
    if _is_unbounded(dom):
        pb.big = float(big) if big is not None else _big_box_size(pb)
    return pb, dom


def _check_range(net: Network, domain: Any) -> None:
    """Refuse a network whose values on the domain (an unbounded one: on the engine's
    first artificial box) may overflow float64 (:func:`_engine.check_float_range`), and
    anything that is not a Network."""
    if not isinstance(net, Network):
        raise RelulabError(f"expected a relulab Network, got {type(net).__name__}")
    if net.n_hidden_layers == 0:
        return
    with np.errstate(over="ignore", invalid="ignore"):  # Problem's row norms may overflow: refused below
        pb, dom = _problem(net, domain, None)
    if pb.big is not None:
        radius = pb.big
    else:
        box = dom if isinstance(dom, Box) else dom.bounding_box()
        radius = float(max(np.abs(box.lo).max(), np.abs(box.hi).max()))
    E.check_float_range(pb.Ws, pb.bs, radius)


def iter_regions(
    net: Network,
    domain: Box | Polytope | None = None,
    *,
    max_regions: int | None = None,
    progress: bool = False,
    deadline: float | None = None,
    report: dict | None = None,
) -> Iterator[Region]:
    """Stream the linear regions of ``net`` inside ``domain`` (depth first).

    Same arguments as :func:`relulab.regions.enumerate`; Ctrl-C ends the stream
    after the regions already produced (each of them exact).  ``deadline`` (a
    ``time.time()`` value) ends it there too, within one neuron's work.  ``report``, a
    dict, receives ``partial`` (True when the stream was cut: by ``max_regions``, the
    deadline, the memory budget or Ctrl-C), ``stopped`` (why), ``certified`` (False when
    a sign decision was too close to call, so a region thinner than the float tolerance
    may be merged into a neighbour) and ``near_ties`` (how many) when the stream ends.

    Example:
        >>> import numpy as np
        >>> from relulab import Network, Box, regions
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> [r.pattern.tolist() for r in regions.iter_regions(net, Box([-1], [1]))]
        [[True, False], [False, True]]
    """
    _check_options(max_regions, "auto", None)
    if deadline is not None and (isinstance(deadline, bool) or not isinstance(deadline, (int, float))
                                 or deadline != deadline):
        raise RelulabError(f"iter_regions: deadline must be a time.time() value or None, got {deadline!r}")
    if report is not None and not isinstance(report, dict):
        raise RelulabError(f"iter_regions: report must be a dict (filled at the end) or None, got "
                           f"{type(report).__name__}")
    _check_range(net, domain)
    pb, dom = _problem(net, domain, None)
    report = {} if report is None else report
    if pb.big is not None:
        # unbounded domains need the certificate over the whole set first
        left = None if deadline is None else max(deadline - time.time(), TINY)
        rs = enumerate_regions(net, dom, max_regions=max_regions, progress=progress,
                               time_limit=left)
        report.update(partial=bool(rs.partial or not rs.certified), stopped=rs.info.get("stopped"),
                      certified=bool(rs.certified), near_ties=int(rs.info.get("near_ties", 0)))
        yield from rs
        return
    off = 0
    run = EngineRun()
    report.update(partial=True, stopped="the stream was not read to its end")
    for arrays in stream_cells(pb, progress, max_regions, run, deadline=deadline):
        for i in range(arrays.n):
            yield arrays.region(i, off + i, pb.N)
        off += arrays.n
    report.update(partial=bool(run.partial), stopped=run.stopped,
                  certified=not run.near_ties, near_ties=run.near_ties)


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
    parallel: str | None = None,
    workers: int | None = None,
    cells: int | None = None,
    address: str | None = None,
    time_limit: float | None = None,
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
            ``method="bfs"`` keeps none (``vertices=True`` is refused there).
        parallel: ``"local"`` (worker processes) or ``"ray"``: split the box into
            ``cells`` (default 4 per worker) along first-layer hyperplanes, balanced by
            estimated region count, so that every region lies whole in one cell;
            enumerate them on ``workers`` and join them exactly (the same regions,
            vertices and graph). Without ``cells`` and under 50,000 estimated regions
            it runs in one process (``rs.info["parallel"]`` says so). ``address``: the
            Ray cluster.
        time_limit: seconds (None: none).  The streaming engine runs, and at the limit
            the regions found so far come back marked ``partial``, with
            ``rs.info["stopped"]`` saying so (the subdivision method, one process).

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
    _check_options(max_regions, vertices, big)
    _check_range(net, domain)
    deadline = _deadline(time_limit, method, parallel)
    if parallel is not None:
        from ._neuron_cells import enumerate_neuron_cells

        _check_parallel(parallel, method, max_regions)
        dom = default_domain(net, domain)
        small = _small_for_parallel(net, dom, cells)
        if small is None:
            return enumerate_neuron_cells(net, dom, parallel=parallel, workers=workers,
                                          cells=cells, address=address,
                                          vertices=bool(net.input_dim <= 2
                                                        if vertices == "auto" else vertices))
        rs = enumerate_regions(net, dom, progress=progress, centers=centers, vertices=vertices)
        rs.info.update(parallel=small)
        return rs
    if method == "bfs" and vertices is True:
        # the LP method finds facets and interior points only; vertices=True was ignored
        # and every region came back with none
        raise RelulabError("enumerate: method='bfs' keeps no vertices (it finds each region's facets by "
                           "LPs); use method='subdivision' for vertices=True")
    if vertices == "auto":
        vertices = net.input_dim <= 2
    if method == "bfs":
        from ._bfs import enumerate_bfs

        bdom = default_domain(net, domain)
        rs = enumerate_bfs(net, bdom, max_regions=max_regions)
        rs.seconds = time.perf_counter() - t0
        if _is_unbounded(bdom):
            # its float LPs over unbounded regions miss slivers far out (two lines crossing
            # at x = -1e7): a cross-check there, not a certificate
            rs.certified = False
    elif method == "subdivision":
        pb, dom = _problem(net, domain, big)
        if pb.big is not None:
            from ._unbounded import enumerate_unbounded  # LPs: scipy and HiGHS load lazily

            rs = enumerate_unbounded(pb, dom, max_regions=max_regions, progress=progress,
                                     engine=engine, vertices=bool(vertices), deadline=deadline)
        else:
            run = run_engines(pb, progress, max_regions, engine, bool(vertices), deadline=deadline)
            rs = assemble(pb, run, domain=dom)
            if pb.coarse:
                rs.info["coarse_domain"] = (
                    f"the domain's scale ({pb.xscale:.3g}) makes the sign tolerance exceed the "
                    "distance of the network's hyperplanes from the origin, or the smallest "
                    "distance in its first layer's arrangement: some regions cannot be told apart "
                    "(regions.count uses the whole space instead, when that is certified)")
        rs.seconds = time.perf_counter() - t0
    else:
        raise RelulabError(f"unknown method {method!r}: use 'subdivision' or 'bfs'")
    rs.net = net.float() if net.is_exact else net
    if centers == "chebyshev":
        _chebyshev_all(rs, deadline)
    elif centers != "centroid":
        raise RelulabError(f"unknown centers {centers!r}: use 'centroid' or 'chebyshev'")
    return rs


def _deadline(time_limit: Any, method: str, parallel: str | None) -> float | None:
    """The ``time.time()`` deadline of ``time_limit`` seconds (None: none), checked."""
    if time_limit is None:
        return None
    if not (is_positive_seconds(time_limit) and math.isfinite(time_limit)):
        raise RelulabError(f"enumerate: time_limit must be a positive number of seconds or None, "
                           f"got {time_limit!r}")
    if method != "subdivision" or parallel is not None:
        raise RelulabError("enumerate: time_limit works with method='subdivision' in one process "
                           "(not with method='bfs' or parallel=)")
    return time.time() + float(time_limit)


def _check_options(max_regions: Any, vertices: Any, big: Any) -> None:
    """One clear error for each malformed option (they failed deep inside, or passed)."""
    if max_regions is not None and not is_int_at_least(max_regions, 1):
        raise RelulabError(f"enumerate: max_regions must be a positive integer or None, got {max_regions!r}")
    if not (isinstance(vertices, bool | np.bool_) or vertices == "auto"):
        raise RelulabError(f"enumerate: vertices must be True, False or 'auto', got {vertices!r}")
    if big is not None and not (isinstance(big, int | float | np.number) and np.isfinite(big) and big > 0):
        raise RelulabError(f"enumerate: big (the artificial box half-width) must be a positive number, got {big!r}")


def _chebyshev_all(rs: RegionSet, deadline: float | None = None) -> None:
    """Chebyshev centres and radii for the regions, one LP each, until ``deadline`` (a
    ``time.time()`` value): past it the rest keep their centroids, and ``info`` says how
    many were refined (23k LPs ran 18 s past a 3 s limit); the regions themselves are
    unchanged."""
    from ..lp import chebyshev_center

    for i in range(len(rs)):
        if deadline is not None and time.time() > deadline:
            # the regions are all there (or partial for their own reason): only their
            # centres are not all Chebyshev centres
            rs.info["centers"] = (f"chebyshev for the first {i} of {len(rs)} regions (time limit); "
                                  "centroids for the rest")
            return
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
    parallel: str | None = None,
    workers: int | None = None,
    cells: int | None = None,
    address: str | None = None,
) -> int:
    """The number of linear regions (no region data kept). ``parallel``, ``workers``,
    ``cells``, ``address``: count over cells of the box in parallel, as for
    :func:`enumerate` (each cell counts the regions whose lowest vertex it holds and
    sends back one number).

    A number that cannot be certified is refused (:class:`~relulab.errors.UncertifiedCount`).
    Certified has the meaning of ``RegionSet.certified``: no sign decision was contradicted
    by more than 1e-14 of the domain's scale; a sliver thinner than that is below float64
    resolution and is not looked for (see docs/regions.md).
    Over a Box whose own count is refused (near ties, or a box far larger than the
    network's features), the whole space's count stands in when it is certified and the
    box holds its artificial box: every region of R^d then meets the box in one piece.

    Example:
        >>> import numpy as np
        >>> from relulab import Network, regions
        >>> net = Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
        >>> regions.count(net)
        4
    """
    _check_range(net, domain)
    try:
        return _count(net, domain, progress, engine, parallel, workers, cells, address)
    except UncertifiedCount:
        # a box that holds all the structure of R^d has the whole space's count
        whole = _whole_space_count(net, domain, progress, engine)
        if whole is None:
            raise
        return whole


def _count(net, domain, progress, engine, parallel, workers, cells, address) -> int:
    if _huge_box(net, domain):
        raise UncertifiedCount(
            "regions.count: the box is so large that the float sign tolerance exceeds the "
            "distance of the network's hyperplanes from the origin, and the whole space's "
            "count could not stand in for it (not certified there, or its regions reach "
            "beyond the box); use a smaller box")
    if parallel is not None:
        from ._stitch import count_stitched

        _check_parallel(parallel, "subdivision", None)
        dom = default_domain(net, domain)
        if _small_for_parallel(net, dom, cells) is not None:
            return count_regions(net, domain, progress=progress, engine=engine)
        return count_stitched(net, dom, parallel=parallel,
                              workers=workers, cells=cells, address=address)
    pb, dom = _problem(net, domain, None)
    if pb.big is not None:
        rs = enumerate_regions(net, dom, progress=progress, engine=engine)
        stopped = str(rs.info.get("stopped") or "")
        if rs.partial and stopped.startswith("memory"):
            # as on a box: the memory budget, not the artificial box, ended it
            raise ResourceLimitError(f"regions.count: {stopped} (the count is not returned)")
        if rs.info.get("near_ties"):
            raise UncertifiedCount(
                f"regions.count: {rs.info['near_ties']} sign decision(s) were too close to call "
                "at the float tolerance, so a thin region may be merged and the count is not "
                f"certified; {len(rs)} found. Use regions.enumerate (certified=False) or a bounded domain")
        if not rs.certified:
            # a bare number must be the count: an uncertified one is refused, not returned
            raise UncertifiedCount(
                f"regions.count: the regions of the unbounded domain could not be certified "
                f"complete (artificial box grown to half-width {rs.info.get('box_halfwidth')}); "
                f"{len(rs)} found. Use regions.enumerate(..., big=...) with a larger box, or a bounded domain")
        return len(rs)
    return count_cells(pb, progress, engine)


def _box_domain(net: Network, domain: Any) -> Box | None:
    """The Box ``domain`` names for a network with hidden layers (None otherwise: other
    domains, or nothing to count)."""
    if not isinstance(net, Network) or net.n_hidden_layers == 0:
        return None
    dom = default_domain(net, domain)
    return dom if isinstance(dom, Box) else None


def _huge_box(net: Network, domain: Any) -> bool:
    """Whether ``domain`` is a box too large for the float sign test to see the network's
    arrangement at all (:func:`_engine.too_coarse`): no use enumerating it directly."""
    dom = _box_domain(net, domain)
    if dom is None:
        return False
    scale = float(max(np.abs(dom.lo).max(), np.abs(dom.hi).max()))
    fnet = net.float() if net.is_exact else net  # its checked conversion (1e400 is refused)
    return E.too_coarse(np.asarray(fnet.weights[0], float), np.asarray(fnet.biases[0], float), scale)


def _whole_space_count(net: Network, domain: Any, progress: bool, engine: str) -> int | None:
    """The count over a Box from the whole space, when that is certified (every region
    found inside an artificial box of half-width M, nothing beyond it) and the box holds
    [-M, M]^d: every region of R^d then meets the box in one convex piece, so the counts
    agree.  None otherwise.  It stands in where the box's own count is refused (near
    ties of a box much larger than the network's features)."""
    dom = _box_domain(net, domain)
    if dom is None:
        return None
    rs = enumerate_regions(net, Polytope.whole_space(net.input_dim), progress=progress, engine=engine)
    M = rs.info.get("box_halfwidth")
    if rs.certified and M is not None and np.all(dom.lo <= -M) and np.all(dom.hi >= M):
        return len(rs)
    return None


def _small_for_parallel(net: Network, dom: Any, cells: int | None) -> str | None:
    """Why a parallel run goes to one process (None: it does not): no ``cells`` asked
    for and an estimated region count below ``ONE_PROCESS_REGIONS``, where starting
    workers and moving regions would cost more than the work."""
    from ._neuron_cells import ONE_PROCESS_REGIONS, estimate_regions

    if not isinstance(dom, Box):
        raise RelulabError("parallel enumeration splits a Box domain; give a Box")
    if np.any(dom.hi <= dom.lo):  # as the one-process engine says (the estimate divides by the sides)
        raise DomainError("region enumeration needs a full-dimensional box (lo < hi everywhere)")
    if cells is not None:
        return None
    est = estimate_regions(net, dom)
    if est >= ONE_PROCESS_REGIONS:
        return None
    return (f"one process: about {est} regions estimated, below {ONE_PROCESS_REGIONS}, "
            "where workers would cost more than the work")


def _check_parallel(parallel: str, method: str, max_regions: int | None) -> None:
    if parallel not in ("local", "ray"):
        raise RelulabError(f"parallel must be 'local' or 'ray', not {parallel!r}")
    if method != "subdivision" or max_regions is not None:
        raise RelulabError("parallel enumeration runs the subdivision method to the end "
                           "(no method='bfs', no max_regions)")

