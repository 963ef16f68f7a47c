"""Pictures of what a ReLU network computes (matplotlib, imported lazily).

Every function returns a ``matplotlib.figure.Figure`` (built without pyplot, so no
display is needed) and saves it when ``path`` is given.

Example:
    >>> import numpy as np
    >>> from relulab import Network, plot
    >>> net = Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), [-0.5]])
    >>> fig = plot.regions2d(net)            # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .errors import RelulabError, is_int_at_least, require
from .network import Network

__all__ = [
    "regions2d",
    "function1d",
    "region_graph",
    "loss_plateaus",
    "neuron_norms",
    "alignment_heatmap",
    "decision_rules2d",
    "save_figure",
]


def _figure(ax: Any, size: tuple[float, float] = (6.0, 5.0)):
    require("matplotlib", "plot")
    from matplotlib.figure import Figure

    if ax is not None:
        return ax.figure, ax
    fig = Figure(figsize=size, layout="constrained")
    return fig, fig.add_subplot(1, 1, 1)


def save_figure(fig: Any, path: str, dpi: int = 150) -> None:
    """Write ``fig`` to ``path`` atomically (a failed write leaves no half-written file;
    an ``example:`` name is refused), the format from the suffix.

    Example:
        >>> import os, tempfile
        >>> from matplotlib.figure import Figure
        >>> p = os.path.join(tempfile.mkdtemp(), "f.png")
        >>> save_figure(Figure(), p); os.path.getsize(p) > 0
        True
    """
    from .io import atomic_path

    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=dpi)


def check_figure_target(path: str, flag: str = "--plot") -> None:
    """Refuse, before any work, a figure path :func:`save_figure` would refuse after it:
    an ``example:`` name, a suffix matplotlib cannot write, or a place one cannot write
    (one line naming ``flag``).

    Example:
        >>> check_figure_target("f.png")
        >>> check_figure_target("f.txt")
        Traceback (most recent call last):
        relulab.errors.RelulabError: --plot f.txt: matplotlib cannot write '.txt'; use .png, .pdf, .svg, ...
    """
    from .io import check_writable, refuse_example

    require("matplotlib", "plot")
    from matplotlib.figure import Figure

    refuse_example(path, flag)
    suf = Path(path).suffix.lower().lstrip(".")
    if not suf:   # (reported as "cannot write '.'")
        raise RelulabError(f"{flag} {path}: no suffix; name the figure's format, e.g. {path}.png")
    if suf not in Figure().canvas.get_supported_filetypes():
        raise RelulabError(f"{flag} {path}: matplotlib cannot write '.{suf}'; use .png, .pdf, .svg, ...")
    check_writable(path, flag)


def _save(fig, path: str | None) -> None:
    if path is not None:
        save_figure(fig, path)


def regions2d(
    net: Network | Any,
    *,
    window: tuple[float, float, float, float] = (-1.0, 1.0, -1.0, 1.0),
    origin: Any = None,
    u: Any = None,
    v: Any = None,
    color: str = "region",
    output: int = 0,
    contours: int = 0,
    decision_boundary: bool = True,
    edges: bool = True,
    ax: Any = None,
    path: str | None = None,
    title: str | None = None,
):
    """Each linear region of a 2-D slice as a filled polygon.

    ``net`` is a Network (2 inputs, or any number with ``origin``/``u``/``v``) or a
    :class:`relulab.regions.Slice2D`.  ``color="region"`` gives each region its own
    colour, ``color="output"`` colours by the value of output ``output`` at its centre;
    ``contours=k`` draws k level lines of that output (exact: straight in each region);
    ``decision_boundary`` draws the level set ``f = 0``.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> net = Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), [-0.5]])
        >>> fig = regions2d(net, title="four regions")
        >>> fig.axes[0].get_title(), len(fig.axes[0].collections[0].get_paths())
        ('four regions', 4)
    """
    from .regions import Slice2D, slice2d

    sl = net if isinstance(net, Slice2D) else slice2d(net, origin, u, v, window)
    if sl.polygons:
        _check_output("regions2d", output, int(sl.polygons[0].C.shape[0]))
    fig, ax = _figure(ax)
    from matplotlib import colormaps
    from matplotlib.collections import LineCollection, PolyCollection

    polys = [p.vertices for p in sl.polygons]
    if color == "output":
        vals = np.array([p.C[output] @ p.vertices.mean(0) + p.c[output] for p in sl.polygons])
        cmap = colormaps["viridis"]
        lo, hi = float(vals.min()), float(vals.max())
        face = cmap((vals - lo) / (hi - lo if hi > lo else 1.0))
    elif color == "region":
        rng = np.random.default_rng(0)
        face = colormaps["tab20"](rng.permutation(len(polys)) % 20)
    else:
        raise RelulabError(f"regions2d: color must be 'region' or 'output', not {color!r}")
    pc = PolyCollection(polys, facecolors=face, edgecolors="k" if edges else "none",
                        linewidths=0.3 if edges else 0.0, alpha=0.9)
    ax.add_collection(pc)
    segs_c: list[np.ndarray] = []
    segs_0: list[np.ndarray] = []
    if contours or decision_boundary:
        allv = np.array([p.C[output] @ q + p.c[output] for p in sl.polygons for q in p.vertices])
        levels = list(np.linspace(allv.min(), allv.max(), contours + 2)[1:-1]) if contours else []
        for p in sl.polygons:
            for lev, bucket in [*[(lv, segs_c) for lv in levels],
                                *([(0.0, segs_0)] if decision_boundary else [])]:
                seg = _level_segment(p, output, lev)
                if seg is not None:
                    bucket.append(seg)
    if segs_c:
        ax.add_collection(LineCollection(segs_c, colors="w", linewidths=0.6))
    if segs_0:
        ax.add_collection(LineCollection(segs_0, colors="r", linewidths=1.6))
    s0, s1, t0, t1 = sl.window
    ax.set_xlim(s0, s1)
    ax.set_ylim(t0, t1)
    ax.set_aspect("equal")
    plain = (sl.origin.size == 2 and not sl.origin.any() and np.array_equal(sl.u, [1.0, 0.0])
             and np.array_equal(sl.v, [0.0, 1.0]))
    ax.set_xlabel("x1 (input 0)" if plain else "s: origin + s u + t v")
    ax.set_ylabel("x2 (input 1)" if plain else "t: origin + s u + t v")
    ax.set_title(title or f"{len(sl.polygons)} linear regions")
    _save(fig, path)
    return fig


def _level_segment(p: Any, output: int, level: float) -> np.ndarray | None:
    """The piece of ``{f = level}`` inside polygon ``p`` (f affine there)."""
    V = p.vertices
    z = V @ p.C[output] + p.c[output] - level
    pts = []
    k = V.shape[0]
    for i in range(k):
        a, b = z[i], z[(i + 1) % k]
        if a == 0:
            pts.append(V[i])
        if (a < 0 < b) or (b < 0 < a):
            t = a / (a - b)
            pts.append(V[i] + t * (V[(i + 1) % k] - V[i]))
    if len(pts) < 2:
        return None
    return np.array([pts[0], pts[-1]])


def _check_output(where: str, output: Any, n: int) -> None:
    """``output`` must index one of the ``n`` outputs (numpy raised IndexError)."""
    if not (is_int_at_least(output, 0) and output < n):
        raise RelulabError(f"{where}: output must be an integer in 0..{n - 1}, got {output!r}")


def function1d(
    net: Network | Any,
    lo: float = -1.0,
    hi: float = 1.0,
    *,
    output: int = 0,
    a: Any = None,
    b: Any = None,
    ax: Any = None,
    path: str | None = None,
    title: str | None = None,
):
    """The network along a segment (a univariate network on [lo, hi] by default) with
    its breakpoints marked.  ``net`` may also be a :class:`relulab.regions.Segment`.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
        >>> function1d(net, -1.0, 1.0).axes[0].get_title()
        '2 linear pieces'
    """
    from .regions import Segment, along_segment

    if isinstance(net, Segment):
        seg = net
    else:
        if a is None or b is None:
            if net.input_dim != 1:
                raise RelulabError("function1d: give a and b for a network with several inputs")
            a, b = [lo], [hi]
        seg = along_segment(net, a, b)
    y = np.asarray(seg.values, dtype=float)
    _check_output("function1d", output, int(y.shape[1]))
    y = y[:, output]
    fig, ax = _figure(ax, (6.0, 3.5))
    t = np.asarray(seg.breakpoints, dtype=float)
    x = t if seg.a.shape[0] != 1 else float(seg.a[0]) + t * float(seg.b[0] - seg.a[0])
    ax.plot(x, y, "-", color="C0", lw=1.5)
    ax.plot(x[1:-1], y[1:-1], "o", color="C3", ms=3, label=f"{len(t) - 2} breakpoints")
    ax.set_xlabel("x" if seg.a.shape[0] == 1 else "t (segment parameter)")
    ax.set_ylabel(f"output {output}")
    ax.legend(loc="best", fontsize=8)
    ax.set_title(title or f"{seg.n_pieces} linear pieces")
    _save(fig, path)
    return fig


def region_graph(
    G: Any,
    *,
    ax: Any = None,
    path: str | None = None,
    layout: str = "interior",
    title: str | None = None,
):
    """The adjacency graph of the regions.  ``layout="interior"`` places each node at
    its region's interior point (2-D inputs); otherwise a spring layout is used.
    Edges are coloured by the layer of the neuron that flips.

    Example:
        >>> import numpy as np
        >>> from relulab import Box, Network, regions
        >>> net = Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), [-0.5]])
        >>> G = regions.graph(regions.enumerate(net, Box([-1, -1], [1, 1])))
        >>> fig = region_graph(G)
        >>> len(fig.axes[0].collections[0].get_segments())      # one line per adjacency
        4
    """
    import networkx as nx

    fig, ax = _figure(ax)
    pos = None
    if layout == "interior":
        pts = {i: np.asarray(a) for i, a in G.nodes(data="interior_point")}
        if pts and all(p is not None and p.shape[0] == 2 for p in pts.values()):
            pos = pts
    if pos is None:
        pos = nx.spring_layout(G, seed=0)
    from matplotlib import colormaps
    from matplotlib.collections import LineCollection

    cmap = colormaps["tab10"]
    segs = [np.array([pos[a], pos[b]]) for a, b in G.edges()]
    cols = [cmap(d.get("layer", 0) % 10) for _, _, d in G.edges(data=True)]
    if segs:
        ax.add_collection(LineCollection(segs, colors=cols, linewidths=0.6))
    xy = np.array([pos[i] for i in G.nodes()]) if G.number_of_nodes() else np.zeros((0, 2))
    touch = np.array([bool(G.nodes[i].get("touches_domain")) for i in G.nodes()], dtype=bool)
    ax.scatter(xy[~touch, 0], xy[~touch, 1], s=4, c="k", zorder=3, label="interior region")
    ax.scatter(xy[touch, 0], xy[touch, 1], s=6, c="C1", zorder=3, label="touches domain")
    ax.autoscale()
    ax.set_aspect("equal" if layout == "interior" else "auto")
    if pos is not None and layout == "interior" and G.number_of_nodes() and all(
            G.nodes[i].get("interior_point") is not None for i in G.nodes()):
        ax.set_xlabel("x1 (region interior points)")
        ax.set_ylabel("x2")
    else:
        ax.set_axis_off()  # a spring layout has no meaningful axes
    s = G.graph.get("summary")
    ax.set_title(title or (f"{s.regions} regions, {s.edges} edges, avg degree "
                           f"{s.avg_degree:.2f}" if s is not None else "region graph"))
    ax.legend(loc="best", fontsize=7)
    _save(fig, path)
    return fig


# ------------------------------------------------------------------ training dynamics
def loss_plateaus(
    traj: Any,
    events: Any = None,
    *,
    log: bool = True,
    ax: Any = None,
    path: str | None = None,
    title: str | None = None,
):
    """The loss of a :class:`relulab.dynamics.Trajectory` per step, with the plateaus of
    ``events`` (default: ``saddle_events(traj)``) shaded and labelled by the neurons
    that activate at the following jump.

    Example:
        >>> import numpy as np
        >>> from relulab.dynamics import mlp, train
        >>> t = train(mlp([1, 3, 1]), [[1.0], [2.0]], [1.0, 0.0], steps=50)
        >>> fig = loss_plateaus(t)               # doctest: +SKIP
    """
    from .dynamics import saddle_events

    ev = saddle_events(traj) if events is None else events
    fig, ax = _figure(ax, (6.5, 3.5))
    L = np.asarray(traj.loss, dtype=float)
    ax.plot(np.arange(L.size), L, color="C0", lw=1.2)
    for k, p in enumerate(ev.plateaus):
        ax.axvspan(p.start, p.end, color="C1", alpha=0.15, lw=0)
        nxt = ev.jumps[k].new_neurons if k < len(ev.jumps) else ()
        if nxt:
            ax.annotate("+" + ",".join(str(j) for j in nxt), ((p.end + p.start) / 2, p.loss),
                        fontsize=7, ha="center", va="bottom")
    if log and np.all(L > 0):
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title(title or f"{len(ev.plateaus)} plateaus, {len(ev.jumps)} jumps")
    _save(fig, path)
    return fig


def neuron_norms(
    traj: Any,
    *,
    which: str = "product",
    log: bool = True,
    ax: Any = None,
    path: str | None = None,
    title: str | None = None,
):
    """Each neuron's norm over the recorded steps (``"norms"`` recorder):
    ``which="product"`` (incoming times outgoing: the neuron's contribution),
    ``"in"`` or ``"out"``.

    Example:
        >>> import numpy as np
        >>> from relulab.dynamics import mlp, train
        >>> t = train(mlp([2, 3, 1], seed=0), np.eye(2), np.ones(2), steps=4, every=2)
        >>> fig = neuron_norms(t, title="norms")
        >>> fig.axes[0].get_title(), len(fig.axes[0].lines)
        ('norms', 3)
    """
    N = np.asarray(traj.series("norms"), dtype=float)
    val = {"product": N[:, 0] * N[:, 1], "in": N[:, 0], "out": N[:, 1]}.get(which)
    if val is None:
        raise RelulabError(f"neuron_norms which='{which}': use 'product', 'in' or 'out'")
    fig, ax = _figure(ax, (6.5, 3.5))
    ax.plot(traj.record_steps, val, lw=0.9)
    if log and np.all(val > 0):
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel({"product": "|w_i| |a_i|", "in": "|(w_i, b_i)|", "out": "|a_i|"}[which])
    ax.set_title(title or f"{val.shape[1]} neurons")
    _save(fig, path)
    return fig


def alignment_heatmap(
    traj: Any,
    target: int = 0,
    *,
    ax: Any = None,
    path: str | None = None,
    title: str | None = None,
):
    """Cosine of every neuron with target direction ``target`` over the recorded steps
    (``"alignment"`` recorder): neurons on the vertical axis, steps on the horizontal.

    Example:
        >>> import numpy as np
        >>> from relulab.dynamics import Alignment, mlp, train
        >>> t = train(mlp([2, 3, 1], seed=0), np.eye(2), np.ones(2), steps=4, every=2, record=[Alignment(targets=[[1.0, 0.0]])])
        >>> fig = alignment_heatmap(t)
        >>> fig.axes[0].get_title()
        'alignment with direction 0'
    """
    A = np.asarray(traj.series("alignment"), dtype=float)[:, :, target]
    fig, ax = _figure(ax, (6.5, 3.5))
    steps = traj.record_steps
    im = ax.imshow(A.T, aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest",
                   extent=(float(steps[0]), float(steps[-1]), A.shape[1] - 0.5, -0.5))
    fig.colorbar(im, ax=ax, label="cosine")
    ax.set_xlabel("step")
    ax.set_ylabel("neuron")
    ax.set_title(title or f"alignment with direction {target}")
    _save(fig, path)
    return fig


# ------------------------------------------------------------------ explanations
def decision_rules2d(
    rules: Any,
    *,
    window: tuple[float, float, float, float] | None = None,
    labels: tuple[str, str] = ("x0", "x1"),
    trajectory: Any = None,
    points: Any = None,
    arrows: Any = None,
    ax: Any = None,
    path: str | None = None,
    title: str | None = None,
):
    """The decision-rule map of a 2-D input: every rule of
    :func:`relulab.explain.decision_rules` as a polygon coloured by its decision, with
    the rule boundaries drawn; optionally a ``trajectory`` (n, 2) drawn on top, marked
    ``points`` (n, 2) and ``arrows`` (pairs of points: e.g. an input and its
    counterfactual).

    Example:
        >>> from relulab import Network, Box, explain, plot
        >>> net = Network([[[1.0, 1.0]]], [[-0.5]])
        >>> fig = plot.decision_rules2d(explain.decision_rules(net, Box([0, 0], [1, 1])))  # doctest: +SKIP
    """
    fig, ax = _figure(ax)
    from matplotlib import colormaps
    from matplotlib.collections import PolyCollection
    from matplotlib.patches import Patch

    rs = list(getattr(rules, "rules", rules))
    if not rs or any(r.vertices is None or r.vertices.shape[1] != 2 for r in rs):
        raise RelulabError("decision_rules2d: needs the rules of a 2-input decision_rules result")
    decisions = list(dict.fromkeys(r.decision for r in rs))
    cmap = colormaps["Set2"]
    color = {d: cmap(i % 8) for i, d in enumerate(decisions)}
    polys = []
    for r in rs:
        V = r.vertices
        c = V.mean(0)
        polys.append(V[np.argsort(np.arctan2(V[:, 1] - c[1], V[:, 0] - c[0]))])
    ax.add_collection(PolyCollection(polys, facecolors=[color[r.decision] for r in rs],
                                     edgecolors="k", linewidths=0.4))
    if trajectory is not None:
        T = np.asarray(trajectory, float)
        ax.plot(T[:, 0], T[:, 1], "-", color="navy", lw=1.0, label="trajectory")
    if points is not None:
        P = np.atleast_2d(np.asarray(points, float))
        ax.plot(P[:, 0], P[:, 1], "o", color="navy", ms=4)
    for a, b in arrows or []:
        ax.annotate("", xy=tuple(np.asarray(b, float)), xytext=tuple(np.asarray(a, float)),
                    arrowprops={"arrowstyle": "->", "color": "crimson", "lw": 1.2})
    allv = np.vstack(polys)
    x0, x1, y0, y1 = window or (allv[:, 0].min(), allv[:, 0].max(), allv[:, 1].min(), allv[:, 1].max())
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    ax.legend(handles=[Patch(color=color[d], label=d) for d in decisions], loc="upper right",
              fontsize=8)
    ax.set_title(title or f"{len(rs)} decision rules")
    _save(fig, path)
    return fig
