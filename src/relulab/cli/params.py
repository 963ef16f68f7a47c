"""Parameter-space commands: ``pathnorm`` and ``fdim``.

Example:
    $ relulab pathnorm model.onnx --q 1 2 inf
    $ relulab pathnorm cnn.pt --input-shape 3,32,32 --q 1
    $ relulab fdim model.npz --points 500 --json
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import typer
from rich.table import Table

from ..errors import FormatError, RelulabError, require
from ._common import JSON_OPT, console, load_model_arg, parse_box, print_json

__all__ = ["register", "tour"]

#: Largest realisation Jacobian (entries) `relulab fdim` builds (160 MB; its SVD takes about a
#: minute on one core at this size).
MAX_JACOBIAN_ENTRIES = 20_000_000


def _q_list(qs: list[str] | None, extra: list[str] | None) -> list[str]:
    items: list[str] = []
    for s in [*(qs or []), *(extra or [])]:
        items += [p for p in s.replace(",", " ").split() if p]
    return items or ["1", "2", "inf"]


def _load_torch_module(path: str):
    torch = require("torch", "torch")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as e:  # noqa: BLE001 - any unpickling failure is a format error here
        raise FormatError(
            f"{path}: cannot load a torch module ({str(e).splitlines()[0]})"
        ) from None
    if not isinstance(obj, torch.nn.Module):
        raise FormatError(
            f"{path}: holds a {type(obj).__name__}, not an nn.Module (save the whole model "
            "with torch.save(model, path))"
        )
    return obj.eval()


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
    json_out: bool = JSON_OPT,
) -> None:
    """Path-norms (norms of the path-lifting) in one forward pass.

    Torch files (.pt/.pth holding a whole nn.Sequential) are walked with the path-norm
    toolkit's conventions: batch norm folded, average pooling weight 1/k, max pooling as a
    sum over its window. Other formats become a relulab Network first.
    """
    from ..params import path_norm
    from ..params.pathlift import n_paths, parse_q

    orders = _q_list(q, extra_q)
    qf = [parse_q(v) for v in orders]
    keys = ["inf" if math.isinf(v) else (str(int(v)) if v.is_integer() else str(v)) for v in qf]
    result: dict = {"model": model}
    if Path(model).suffix.lower() in (".pt", ".pth"):
        module = _load_torch_module(model)
        shape = None
        if input_shape:
            try:
                shape = tuple(int(v) for v in input_shape.replace("x", ",").split(",") if v.strip())
            except ValueError:
                raise RelulabError(
                    f"--input-shape: cannot read {input_shape!r}; write C,H,W"
                ) from None
        result["kind"] = "torch module (path-norm toolkit conventions)"
        result["path_norms"] = {
            k: path_norm(module, v, input_shape=shape) for k, v in zip(keys, qf, strict=True)
        }
    else:
        net = load_model_arg(model)
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
        t.add_row(k, str(v) if isinstance(v, int) else f"{float(v):.10g}")
    console.print(t)
    if "n_paths" in result:
        console.print(f"{result['kind']}: {result['n_paths']} paths (inputs and biases to outputs)")


def fdim_cmd(
    model: str = typer.Argument(..., help="Model file (.onnx, .nnet, .npz, .pt)."),
    points: int = typer.Option(
        None,
        "--points",
        help="Number of random input points (default: enough for the bound, capped by memory).",
    ),
    box: str = typer.Option(
        None,
        "--box",
        help="Sample points uniformly in lo:hi or lo1:hi1,lo2:hi2,... (default -1:1).",
    ),
    seed: int = typer.Option(0, "--seed", help="Random seed for the points."),
    exact: bool = typer.Option(
        False,
        "--exact",
        help="Also compute the rank exactly (rational arithmetic; small networks only).",
    ),
    json_out: bool = JSON_OPT,
) -> None:
    """Functional dimension: the rank of the Jacobian of parameters -> outputs on random points."""
    from ..params import functional_dimension, rescaling_bound

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
    X = lo + (hi - lo) * rng.random((points, net.input_dim))
    fd = functional_dimension(net, X, exact=exact)
    d = fd.to_dict()
    d["model"] = model
    d["note"] = note
    if json_out:
        print_json(d)
        return
    console.print(f"{net!r} on {points} points in {box or '-1:1'} (seed {seed})")
    r = fd.exact_rank if fd.exact_rank is not None else fd.rank
    console.print(
        f"functional dimension (batch): [bold]{fd.rank}[/bold]"
        + (f", exact {fd.exact_rank}" if fd.exact_rank is not None else "")
        + f"; bound #params - #hidden = {P} - {net.n_neurons}"
        + (f" - {m} (skip)" if net.skip is not None else "")
        + f" = {bound}"
        + ("" if r == bound else f"; deficit {bound - r}")
    )
    gap = fd.numerical.gap
    console.print(
        f"singular values: largest {fd.numerical.sigma_max:.3g}, last kept "
        f"{fd.numerical.sigma_kept if fd.numerical.sigma_kept is not None else 0:.3g}, "
        f"first dropped {fd.numerical.sigma_dropped or 0:.3g} (gap "
        f"{'inf' if math.isinf(gap) else f'{gap:.3g}'})"
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
