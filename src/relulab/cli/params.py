"""Parameter-space commands: ``pathnorm`` and ``fdim``.

Example:
    $ relulab pathnorm model.onnx --q 1 2 inf
    $ relulab pathnorm cnn.pt --input-shape 3,32,32 --q 1
    $ relulab fdim model.npz --points 500 --json
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich.table import Table

from ..errors import RelulabError
from ._common import (
    JSON_OPT,
    check_seconds,
    console,
    global_input_shape,
    load_model_arg,
    parse_box,
    parse_shape,
    print_json,
    resolve_path,
)

__all__ = ["register", "tour"]

#: Largest realisation Jacobian (entries) `relulab fdim` builds (160 MB; its SVD takes about a
#: minute on one core at this size).
MAX_JACOBIAN_ENTRIES = 20_000_000


def _q_list(qs: list[str] | None, extra: list[str] | None) -> list[str]:
    items: list[str] = []
    for s in [*(qs or []), *(extra or [])]:
        items += [p for p in s.replace(",", " ").split() if p]
    return items or ["1", "2", "inf"]


CONVENTIONS = {
    "network": "the dense ReLU network relulab computes with (pooling and batch norm "
               "lowered exactly; the same for every file format)",
    "toolkit": "the path-norm toolkit's convention on the torch module (batch norm folded, "
               "average pooling weight 1/k, max pooling as a sum over its window)",
}


def pathnorm_cmd(
    model: str = typer.Argument(..., help="Model file (.onnx, .nnet, .npz, .pt/.pth)."),
    extra_q: list[str] = typer.Argument(None, metavar="[Q...]", help="More orders (after --q)."),
    q: list[str] = typer.Option(
        None,
        "--q",
        help="Orders: --q 1 2 inf (or 1,2,inf); 0 counts nonzero paths. Default 1 2 inf.",
    ),
    input_shape: str = typer.Option(
        None,
        "--input-shape",
        help="C,H,W of a torch model's input (needed unless it starts with nn.Linear).",
    ),
    convention: str = typer.Option(
        "network", "--convention",
        help="network: path-norms of the dense ReLU network relulab computes with (any "
        "format; pooling lowered exactly). toolkit: the path-norm toolkit's convention on a "
        "torch module (.pt/.pth only; max pooling as a sum over its window).",
    ),
    json_out: bool = JSON_OPT,
) -> None:
    """Path-norms (norms of the path-lifting) in one forward pass.

    By default every format (ONNX, NNet, .npz, .pt) becomes the dense ReLU network
    relulab computes with, so a model and its exports give the same numbers. With
    --convention toolkit a torch file is walked as the path-norm toolkit does (batch norm
    folded, average pooling weight 1/k, max pooling as a sum over its window), which gives
    different numbers on models with max pooling. The output names the convention.

    Example: relulab pathnorm model.onnx --q 1 2 inf; relulab pathnorm cnn.pt --convention toolkit --input-shape 1,8,8
    """
    from ..params import path_norm
    from ..params.pathlift import n_paths, parse_q

    if convention not in CONVENTIONS:
        raise RelulabError(f"--convention: unknown {convention!r}; use network or toolkit")
    orders = _q_list(q, extra_q)
    qf = [parse_q(v) for v in orders]
    keys = ["inf" if math.isinf(v) else (str(int(v)) if v.is_integer() else str(v)) for v in qf]
    shape = parse_shape(input_shape) if input_shape else None
    path = resolve_path(model)
    result: dict = {"model": model, "convention": convention,
                    "convention_text": CONVENTIONS[convention]}
    if convention == "toolkit":
        if Path(path).suffix.lower() not in (".pt", ".pth"):
            raise RelulabError(f"{model}: --convention toolkit needs a torch file (.pt/.pth); "
                               "other formats keep no pooling structure")
        from ..io.torch import load_torch_module

        module, shape = load_torch_module(path, shape or global_input_shape())
        result["kind"] = f"torch module {type(module).__name__}"
        result["path_norms"] = {
            k: path_norm(module, v, input_shape=shape) for k, v in zip(keys, qf, strict=True)
        }
    else:
        net = load_model_arg(model, shape)
        result["kind"] = repr(net)
        result["n_paths"] = n_paths(net)
        result["path_norms"] = {k: path_norm(net, v) for k, v in zip(keys, qf, strict=True)}
    if json_out:
        print_json(result)
        return
    t = Table(title=f"path-norms of {Path(model).name}")
    t.add_column("q", justify="right")
    t.add_column("path-norm", justify="right")
    for k, v in result["path_norms"].items():
        t.add_row(k, _norm_text(v))
    console.print(t)
    console.print(f"convention: {convention}, {CONVENTIONS[convention]}", highlight=False)
    if "n_paths" in result:
        console.print(f"{result['kind']}: {result['n_paths']} paths (inputs and biases to outputs)")


def _norm_text(v: Any) -> str:
    """A path-norm for the table: an int as it is, an exact value beyond float64 by its
    leading digits (float() raised OverflowError on 10^857), else 10 digits."""
    from ..results import huge_text, to_jsonable

    if isinstance(v, int) and not isinstance(v, bool):
        return str(to_jsonable(v))
    try:
        return f"{float(v):.10g}"
    except OverflowError:
        return huge_text(v)


def fdim_cmd(
    model: str = typer.Argument(..., help="Model file (.onnx, .nnet, .npz, .pt)."),
    points: int = typer.Option(
        None,
        "--points",
        help="Number of random input points (default: 2 x bound / outputs + 20, capped by "
             "memory). The rank is that of this batch: more points can only raise it.",
    ),
    box: str = typer.Option(
        None,
        "--box",
        help="Sample points uniformly in lo:hi or lo1:hi1,lo2:hi2,... (default -1:1).",
    ),
    seed: int = typer.Option(0, "--seed", min=0, help="Random seed for the points."),
    exact: bool = typer.Option(
        False,
        "--exact",
        help="Also compute the rank exactly (rational arithmetic; small networks only).",
    ),
    time_limit: float | None = typer.Option(
        None, "--time-limit",
        help="Seconds for the exact rank; past them it is reported as not computed."),
    json_out: bool = JSON_OPT,
) -> None:
    """Functional dimension: the rank of the Jacobian of parameters -> outputs on random points.

    Example: relulab fdim example:tiny_2d.onnx --points 50 --json
    """
    from ..params import functional_dimension, rescaling_bound

    limit = check_seconds(time_limit, "--time-limit")
    if limit is not None and not exact:  # it was accepted and silently ignored
        raise RelulabError("--time-limit bounds the exact rank: give --exact with it (the numerical "
                           "rank runs without a limit)")
    net = load_model_arg(model)
    bound = rescaling_bound(net)
    m, P = net.output_dim, net.n_params
    cap = max(1, MAX_JACOBIAN_ENTRIES // (m * P))
    note = None
    if points is None:
        points = min(2 * math.ceil(bound / m) + 20, cap)
    elif points < 1:
        raise RelulabError("--points must be at least 1")
    elif points > cap:
        raise RelulabError(
            f"--points {points}: the Jacobian would have {points * m * P} entries; at most "
            f"{cap} points fit the {MAX_JACOBIAN_ENTRIES} entry limit for this model"
        )
    if points * m < bound:
        note = (
            f"{points} points x {m} outputs = {points * m} rows < bound {bound}: "
            "the points cap the rank"
        )
    dom = parse_box(box, net.input_dim)
    rng = np.random.default_rng(seed)
    lo, hi = np.asarray(dom.lo, float), np.asarray(dom.hi, float)
    u = rng.random((points, net.input_dim))
    X = lo * (1.0 - u) + hi * u  # (hi - lo overflows on a box like [-1e308, 1e308])
    if exact and not json_out and console.is_terminal:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        with Progress(TextColumn("[bold]exact rank"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("columns"), console=console, transient=True) as bar:
            task = bar.add_task("", total=None)
            fd = functional_dimension(
                net, X, exact=True, time_limit=limit,
                progress=lambda done, total: bar.update(task, completed=done, total=total))
    else:
        fd = functional_dimension(net, X, exact=exact, time_limit=limit)
    r = fd.exact_rank if fd.exact_rank is not None else fd.rank
    if r < bound:
        # a batch rank is a lower bound of the functional dimension: a 2-6-5-3 network gave
        # 53 on the default points and 56 on 1000 (its "deficit 7" was 4)
        more = "a batch rank: more points can raise it"
        note = more if note is None else f"{note}; {more}"
    if fd.boundary_points:
        # the Jacobian there is one-sided, and a float pattern may not be the exact one
        on = (f"{fd.boundary_points} point(s) on a neuron's boundary (or within float64's "
              "rounding of it): the Jacobian there is one-sided")
        note = on if note is None else f"{note}; {on}"
    d = fd.to_dict()
    d["model"] = model
    d["note"] = note
    d["rank_is"] = "batch (a lower bound of the functional dimension)" if r < bound else "the bound (maximal)"
    if json_out:
        print_json(d)
        return
    console.print(f"{net!r} on {points} points in {box or '-1:1'} (seed {seed})")
    r = fd.exact_rank if fd.exact_rank is not None else fd.rank
    console.print(
        f"functional dimension (batch): [bold]{fd.rank}[/bold]"
        + (f", exact {fd.exact_rank}" if fd.exact_rank is not None else "")
        + (f" (exact rank not computed: {fd.exact_stopped})" if fd.exact_stopped else "")
        + (f"; bound (d + 1) m = {bound} (an affine map"
           + (": the skip duplicates its weights and bias)" if net.skip is not None else ")")
           if net.n_hidden_layers == 0 else
           f"; bound #params - #hidden = {P} - {net.n_neurons}"
           + (f" - {m} (skip)" if net.skip is not None else "") + f" = {bound}")
        + ("" if r == bound else f"; deficit {bound - r}")
    )
    gap = fd.numerical.gap
    console.print(
        f"singular values: largest {fd.numerical.sigma_max:.3g}, last kept "
        f"{fd.numerical.sigma_kept if fd.numerical.sigma_kept is not None else 0:.3g}, "
        f"first dropped {fd.numerical.sigma_dropped or 0:.3g} (gap "
        f"{'inf' if math.isinf(gap) else f'{gap:.3g}'})"
    )
    if fd.numerical.lower_bound:
        console.print(
            f"[yellow]note:[/yellow] the rank {fd.rank} is a lower bound (the deficit an upper bound): "
            f"the Jacobian was too big for a dense SVD and its Gram matrix cannot resolve singular "
            f"values below {fd.numerical.tol:.3g}"
        )
    if fd.dead_neurons:
        console.print(f"{fd.dead_neurons} neuron(s) inactive at every point")
    if note:
        console.print(f"[yellow]note:[/yellow] {note}")


def tour(con) -> None:
    """Parameter-space section of the tour."""
    from ..examples import load_example
    from ..params import (
        conserved_quantities,
        functional_dimension,
        n_paths,
        path_lifting,
        path_lifting_rank,
        path_norms,
    )

    con.rule("Parameter space: path-lifting, path-norms, functional dimension")
    net = load_example("tiny_2d")
    pl = path_lifting(net)
    con.print(
        f"{net!r} has {n_paths(net)} paths; e.g. {pl.name(0)} = {pl.values[0]:.4f}, "
        f"{pl.name(len(pl) - 1)} = {pl.values[-1]:.4f}"
    )
    norms = path_norms(net, (1, 2, "inf", 0))
    con.print(
        "path-norms in one pass: "
        + ", ".join(f"q={k}: {v if isinstance(v, int) else f'{v:.4f}'}" for k, v in norms.items())
    )
    r = path_lifting_rank(net)
    con.print(
        f"path-lifting Jacobian (sparse, no backprop): rank {r.rank}; "
        f"{net.n_params} params - {net.n_neurons} neurons (one rescaling each) = "
        f"{net.n_params - net.n_neurons}"
    )
    X = np.random.default_rng(0).uniform(-2, 2, size=(300, 2))
    fd = functional_dimension(net, X)
    con.print(
        f"functional dimension on 300 points: {fd.rank} (bound {fd.bound}, "
        f"singular-value gap {fd.numerical.gap:.2g}, {fd.dead_neurons} dead neurons)"
        + ("" if fd.rank == fd.bound else ": below the bound, as random initialisations often are")
    )
    c = conserved_quantities(net)
    con.print(
        f"gradient flow conserves |in|^2 - |out|^2 per neuron: {np.round(c[:4], 3).tolist()} ..."
    )


def register(app: typer.Typer) -> None:
    app.command("pathnorm")(pathnorm_cmd)
    app.command("fdim")(fdim_cmd)
