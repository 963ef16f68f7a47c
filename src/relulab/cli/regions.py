"""The ``regions`` command: linear regions, their adjacency graph, and a picture.

Example:
    $ relulab regions model.onnx --box -1:1 --graph --plot regions.png
    $ relulab regions model.npz --count --json
"""

from __future__ import annotations

import numpy as np
import typer
from rich.markup import escape
from rich.table import Table

from ..errors import RelulabError
from ._common import (
    JSON_OPT,
    check_output_targets,
    check_seconds,
    console,
    load_model_arg,
    parse_box,
    print_json,
)

__all__ = ["register", "tour"]


def regions_cmd(
    model: str = typer.Argument(..., help="Model file (.onnx, .nnet, .npz, .pt)."),
    box: str = typer.Option(None, "--box", help="Input box: lo:hi or lo1:hi1,lo2:hi2,... "
                            "(default -1:1)."),
    whole_space: bool = typer.Option(False, "--whole-space", help="Use all of R^d."),
    count: bool = typer.Option(False, "--count", help="Only count the regions."),
    graph: bool = typer.Option(False, "--graph", help="Adjacency graph statistics."),
    plot: str = typer.Option(None, "--plot", help="Write a picture (2-D inputs: the regions; "
                             "1-D: the function) to this PNG file."),
    max_regions: int = typer.Option(None, "--max-regions", help="Stop after this many."),
    time_limit: float = typer.Option(None, "--time-limit", help="Seconds; at the limit the "
                                     "regions found so far are reported, marked partial."),
    list_regions: bool = typer.Option(False, "--list", help="With --json: every region "
                                      "(H-representation, vertices, affine map)."),
    workers: int = typer.Option(None, "--workers", help="Split the box into cells and "
                                "enumerate them on this many worker processes (stitched "
                                "exactly: the same regions and graph)."),
    ray: str = typer.Option(None, "--ray", help="Enumerate the cells on Ray: local, auto "
                            "or HOST:PORT."),
    out_file: str = typer.Option(None, "--out", "-o", help="Stream every region to this "
                                 "file in chunks, memory bounded whatever the count: .parquet "
                                 "(pip install 'relulab\\[parquet]') or .jsonl."),
    json_out: bool = JSON_OPT,
) -> None:
    """Enumerate the linear regions of a model exactly (count, graph, picture).

    With --workers or --ray the box is cut into cells balanced by estimated region count
    (along first-layer hyperplanes, so that every region lies whole in one cell), the
    cells are enumerated in parallel and joined exactly; small inputs run in one process.

    With --out the regions are streamed to a Parquet or JSON-lines file in chunks (one
    process; nothing is kept in memory), for counts that do not fit in memory.

    Example: relulab regions model.onnx --box -1:1 --graph --plot regions.png;
    relulab regions model.onnx --count --workers 2;
    relulab regions model.onnx --out regions.parquet
    """
    from .. import regions as R
    from ..domain import Polytope

    if max_regions is not None and max_regions < 1:
        raise RelulabError(f"--max-regions must be at least 1, got {max_regions}")
    time_limit = check_seconds(time_limit, "--time-limit")
    net = load_model_arg(model)
    d = net.input_dim
    check_output_targets(None, plot)
    if out_file is not None:
        from ..io import check_writable

        check_writable(out_file, "--out")  # before the enumeration, not after it
    if plot and d > 2 and not graph:
        # refuse before any enumeration work, not after it
        raise RelulabError(f"--plot draws 1-D or 2-D inputs (or add --graph); the model "
                           f"takes {d} inputs")
    if whole_space and box is not None:
        raise RelulabError("give --box or --whole-space, not both")
    if list_regions and not json_out:
        raise RelulabError("--list puts every region in the --json output: add --json")
    dom = Polytope.whole_space(d) if whole_space else parse_box(box, d)
    if not whole_space and np.any(dom.hi <= dom.lo):
        raise RelulabError(f"--box {box}: region enumeration needs a full-dimensional box (lo < hi "
                           "in every coordinate)")
    progress = not json_out
    par: dict = {}
    if workers is not None or ray is not None:
        from ..parallel import MAX_WORKERS, resolve_backend

        if whole_space:
            raise RelulabError("--workers/--ray split a box: not with --whole-space")
        if max_regions is not None or time_limit is not None:
            raise RelulabError("--workers/--ray enumerate to the end: not with --max-regions "
                               "or --time-limit")
        if workers is not None and not 1 <= workers <= MAX_WORKERS:
            raise RelulabError(f"--workers must be between 1 and {MAX_WORKERS}, got {workers}")
        backend, address = resolve_backend(ray) if ray is not None else ("local", None)
        par = {"parallel": backend, "workers": workers, "address": address}
    out: dict = {"model": model, "input_dim": d, "hidden_widths": list(net.widths),
                 "domain": "R^d" if whole_space else dom.to_dict()}
    if out_file is not None:
        if count or graph or plot or list_regions or par:
            raise RelulabError("--out streams the regions to a file: not with --count, "
                               "--graph, --plot, --list, --workers or --ray")
        if time_limit is not None:
            raise RelulabError("--out streams to the end (stop it with --max-regions or Ctrl-C): "
                               "not with --time-limit")
        s = R.write_regions(net, out_file, dom, max_regions=max_regions, progress=progress)
        out.update({"file": s.path, "format": s.format, "regions": s.regions,
                    "chunks": s.chunks, "status": s.status, "stopped": s.stopped})
        if json_out:
            print_json(out)
        else:
            why = "" if s.status == "complete" else f" ({s.status}" + (f": {s.stopped})" if s.stopped else ")")
            console.print(escape(f"{s.regions} linear regions written to {s.path} ({s.format}, "
                                 f"{s.chunks} chunk(s)){why}"))
        return
    if count and not (graph or plot):
        if max_regions is None and time_limit is None:
            # count() refuses a number it cannot certify (R^d, a near tie)
            n, partial, stopped = R.count(net, dom, progress=progress, **par), False, None
            certified = True
            out["near_ties"] = 0
        else:
            # counting keeps no region data, but only enumeration stops at a limit
            rs = R.enumerate(net, dom, progress=progress, max_regions=max_regions,
                             time_limit=time_limit, vertices=False)
            n, partial = len(rs), bool(rs.partial)
            stopped = _stopped(rs, max_regions)
            certified = bool(rs.certified) and not partial
            out["near_ties"] = int(rs.info.get("near_ties", 0))
        out["regions"] = n
        out["partial"] = partial
        # count() refuses an uncertified number; a cut enumeration certifies nothing
        out["certified"] = certified
        out["stopped"] = stopped
        if json_out:
            print_json(out)
        else:
            why = stopped or f"stopped at --max-regions {max_regions}"
            note = (f" (partial: {why})" if partial
                    else "" if certified else f" (not certified complete: {_uncertified(rs)})")
            console.print(f"{n} linear regions" + note)
        return
    rs = R.enumerate(net, dom, progress=progress, max_regions=max_regions,
                     time_limit=time_limit, **par)
    out.update(rs.to_dict(regions=list_regions and json_out))
    if whole_space:
        out["domain"] = "R^d"
    out["stopped"] = _stopped(rs, max_regions)
    if graph:
        G = R.graph(rs, net)
        out["graph"] = G.graph["summary"].to_dict()
    if plot and d == 2 and time_limit is not None and rs.partial:
        # the picture draws every region of the window, a complete enumeration with no
        # limit (67 s and 1.9 GB after a 1 s limit on a 2-300-300-1 network): not drawn
        out["plot"] = None
        out["plot_note"] = ("not drawn: the enumeration stopped at --time-limit, and the picture "
                            "(every region of the window) needs the complete one; run without "
                            "--time-limit to draw it")
    elif plot:
        from .. import plot as P

        if d == 2:
            P.regions2d(net, window=(*_lohi(dom, 0), *_lohi(dom, 1)) if not whole_space
                        else (-1, 1, -1, 1), path=plot)
        elif d == 1:
            lo, hi = _lohi(dom, 0) if not whole_space else (-1.0, 1.0)
            P.function1d(net, lo, hi, path=plot)
        elif graph:
            out["plot_note"] = "the adjacency graph of the regions found"
            P.region_graph(G, path=plot, layout="spring")
        else:
            raise RelulabError(f"--plot draws 1-D or 2-D inputs (or add --graph); the model "
                               f"takes {d} inputs")
        out["plot"] = plot
        if d <= 2:
            out["plot_note"] = ("every region in " + ("the window [-1, 1]^d (the whole space has none)"
                                                      if whole_space else "the box")
                                + (_not_only(out["stopped"]) if rs.partial else ""))
    if json_out:
        print_json(out)
        return
    t = Table(title=f"linear regions of {model}", show_header=False)
    t.add_row("regions", f"{len(rs)}" + (" (partial)" if rs.partial else ""))
    if out["stopped"]:
        t.add_row("stopped", out["stopped"])
    t.add_row("certified complete", "no (partial)" if rs.partial
              else "yes" if rs.certified else f"no: {_uncertified(rs)}")
    t.add_row("bounded", str(int(rs.bounded.sum())))
    t.add_row("touching the domain boundary", str(int(rs.touches_domain.sum())))
    t.add_row("time", f"{rs.seconds:.3f} s")
    if graph:
        s = G.graph["summary"]
        t.add_row("graph edges", str(s.edges))
        t.add_row("average / max degree", f"{s.avg_degree:.3f} / {s.max_degree}  (2d = {2 * d})")
        t.add_row("diameter", "undefined (not connected)" if s.diameter is None else str(s.diameter))
    if plot:
        t.add_row("picture", (plot if out.get("plot") else "none")
                  + (f" ({out['plot_note']})" if "plot_note" in out else ""))
    console.print(t)


def _not_only(stopped: str | None) -> str:
    """What the picture adds to a cut enumeration (it draws every region of the window)."""
    if stopped and stopped.startswith("--max-regions"):
        return ", not only the --max-regions found"
    return f", not only the regions found before the stop ({stopped or 'partial'})"


def _uncertified(rs) -> str:
    """Why a complete run is not certified: a near tie, or R^d past the artificial box."""
    ties = int(rs.info.get("near_ties", 0))
    if rs.info.get("coarse_domain"):
        return rs.info["coarse_domain"] + "; --count gives the certified number"
    if ties:
        return (f"{ties} sign decision(s) too close to call at the float tolerance; a region "
                "thinner than SIGN_TOL x the domain's scale may be merged into a neighbour")
    return "the artificial box on R^d could not be certified to hold every region"


def _stopped(rs, max_regions: int | None) -> str | None:
    """Why an enumeration ended early: the engine's reason (memory, Ctrl-C), else the
    --max-regions cut; None when it ran to the end."""
    return rs.info.get("stopped") or (f"--max-regions {max_regions}" if rs.partial and max_regions else None)


def _lohi(dom, i: int) -> tuple[float, float]:
    return float(dom.lo[i]), float(dom.hi[i])


def register(app: typer.Typer) -> None:
    app.command("regions")(regions_cmd)


def tour(console_) -> None:
    """Regions of a tiny random 2-D network: count, graph, a 1-D slice."""
    from .. import regions as R
    from ..network import Network

    rng = np.random.default_rng(0)
    net = Network([rng.normal(size=(8, 2)), rng.normal(size=(8, 8)) / 3, rng.normal(size=(1, 8))],
                  [rng.normal(size=8) * 0.3, rng.normal(size=8) * 0.3, np.zeros(1)])
    rs = R.enumerate(net)
    G = R.graph(rs)
    s = G.graph["summary"]
    seg = R.along_segment(net, [-1.0, -1.0], [1.0, 1.0])
    console_.rule("Linear regions: exact enumeration, adjacency graph, slices")
    console_.print("a random 2-8-8-1 network on [-1, 1]^2:")
    console_.print(f"  {len(rs)} regions, found exactly in {rs.seconds * 1000:.1f} ms; "
                   f"{int(rs.touches_domain.sum())} touch the boundary")
    console_.print(f"  adjacency graph: {s.edges} edges, average degree {s.avg_degree:.2f} "
                   f"(<= 2d = 4), diameter {s.diameter}")
    console_.print(f"  along the diagonal: {seg.n_pieces} linear pieces")
    console_.print("  try: relulab regions MODEL --graph --plot regions.png")
