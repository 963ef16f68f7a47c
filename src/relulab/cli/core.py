"""Core commands: ``info``, ``eval``, ``convert`` and ``tour``.

Example:
    $ relulab info model.onnx
    $ relulab eval model.onnx --x 0.1,0.2,0.3,0.4,0.5
    $ relulab convert model.nnet model.onnx
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import typer
from rich.markup import escape
from rich.table import Table

from ..errors import RelulabError
from ..network import Network, nearest_float
from ..tolerance import SMALLEST_SUBNORMAL
from ._common import (
    JSON_OPT,
    console,
    load_model_arg,
    parse_floats,
    print_json,
    resolve_path,
    topics,
)

__all__ = ["register", "tour", "describe"]


def describe(net: Network) -> dict:
    """A JSON-friendly summary of a network's architecture."""
    layers = []
    for k, (W, b) in enumerate(net.layers, start=1):
        layers.append(
            {
                "layer": k,
                "kind": "affine + ReLU" if k < net.depth else "affine (output)",
                "inputs": int(W.shape[1]),
                "outputs": int(W.shape[0]),
                "params": int(W.size + b.size),
            }
        )
    if net.skip is not None:
        S, s = net.skip
        layers.append(
            {"layer": "skip", "kind": "affine input->output", "inputs": int(S.shape[1]),
             "outputs": int(S.shape[0]), "params": int(S.size + s.size)}
        )
    return {
        "input_dim": net.input_dim,
        "output_dim": net.output_dim,
        "hidden_widths": list(net.widths),
        "depth": net.depth,
        "neurons": net.n_neurons,
        "params": net.n_params,
        "exact": net.is_exact,
        "layers": layers,
    }


def info(
    model: str = typer.Argument(..., help="Model file (.onnx, .nnet, .npz, .pt)."),
    json_out: bool = JSON_OPT,
) -> None:
    """Show a model's layers, widths, parameter counts and input/output sizes.

    Example: relulab info example:tiny_2d.onnx --json
    """
    net = load_model_arg(model, needs_float=False)  # describes the file; computes nothing
    d = describe(net)
    d["file"] = model
    if json_out:
        print_json(d)
        return
    t = Table(title=escape(f"{Path(model).name}: {net!r}"))
    for col in ("layer", "kind", "inputs", "outputs", "params"):
        t.add_column(col, justify="right" if col != "kind" else "left")
    for row in d["layers"]:
        t.add_row(*(str(row[c]) for c in ("layer", "kind", "inputs", "outputs", "params")))
    console.print(t)
    console.print(
        f"inputs {d['input_dim']}, outputs {d['output_dim']}, hidden widths {d['hidden_widths']}, "
        f"{d['neurons']} ReLU neurons, {d['params']} parameters"
        + (", exact rational weights" if d["exact"] else "")
    )


def eval_cmd(
    model: str = typer.Argument(..., help="Model file."),
    x: list[str] = typer.Option(
        None, "--x", help="An input point, comma separated (repeat --x for several)."
    ),
    csv: Path = typer.Option(None, "--csv", help="A CSV file of input points, one per row."),
    json_out: bool = JSON_OPT,
) -> None:
    """Evaluate a model at input points (forward pass, with the activation pattern size).

    Example: relulab eval example:tiny_2d.onnx --x 0.1,0.2 --x -0.5,0.3
    """
    net = load_model_arg(model)
    if not x and csv is None:
        raise RelulabError("give at least one input with --x (e.g. --x 0.1,0.2) or --csv FILE")
    points = [parse_floats(s, "--x") for s in (x or [])]
    if csv is not None:
        try:
            with warnings.catch_warnings():  # an empty file: numpy warns, then we refuse
                warnings.simplefilter("ignore", UserWarning)
                data = np.loadtxt(resolve_path(str(csv)), delimiter=",", ndmin=2)
        except (OSError, ValueError) as e:
            # (numpy's own advice after ";" names its keyword arguments, not ours)
            raise RelulabError(f"{csv}: cannot read a numeric CSV ({str(e).split('; use')[0]})") from None
        if data.size == 0:
            raise RelulabError(f"{csv}: no rows (a CSV of input points, one per row)")
        points += list(data)
    for i, p in enumerate(points):
        if p.shape[0] != net.input_dim:
            raise RelulabError(
                f"input {i + 1} has {p.shape[0]} values; the model takes {net.input_dim}"
            )
    X = np.vstack(points)
    bad = np.flatnonzero(~np.isfinite(X).all(axis=1))
    if bad.size:
        raise RelulabError(f"input {int(bad[0]) + 1} contains NaN or inf; inputs must be finite")
    Y, active, exact_rows = _evaluate(net, X)
    # an exact (rational) model is evaluated exactly when that is cheap: its float64
    # rounding printed 0 for f = 2^60 (relu((1 + 2^-60) x) - relu(x)) = x at x = 1
    exact_all = bool(net.is_exact) and len(X) * max(net.n_params, 1) <= EXACT_EVAL_WORK
    if exact_all:
        ex = net.exact()
        Y = np.array([[nearest_float(v) for v in r] for r in ex(X)], dtype=np.float64)
        active = ex.pattern_vector(X).sum(axis=1).astype(int) if net.n_neurons else np.zeros(len(X), int)
    if json_out:
        print_json({"inputs": X, "outputs": Y, "active_neurons": active,
                    "recomputed_exactly": exact_rows, "exact": exact_all})
        return
    t = Table(title=escape(Path(model).name))
    t.add_column("input")
    t.add_column("output")
    t.add_column("active", justify="right")
    for xi, yi, a in zip(X, Y, active, strict=True):
        # escaped: "[inf, 10]" is rich markup otherwise, and the cell came out empty
        t.add_row(escape(_fmt(xi)), escape(_fmt(yi)), f"{int(a)}/{net.n_neurons}")
    console.print(t)
    if exact_all:
        console.print("exact model: outputs computed in rational arithmetic (shown as the nearest float)")
    elif net.is_exact:
        console.print(f"exact model: outputs are those of its float64 rounding (exact evaluation of "
                      f"{len(X)} inputs x {net.n_params} parameters is above {EXACT_EVAL_WORK:.0e})")
    if exact_rows and not exact_all:
        console.print(f"float64 overflowed inside the network at input "
                      f"{', '.join(str(r + 1) for r in exact_rows)}; recomputed in exact rational arithmetic")


EXACT_EVAL_WORK = 5_000_000   # inputs x parameters up to which an exact model is evaluated exactly


def _evaluate(net, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Outputs and active-neuron counts at the rows of X, in float64; rows where anything
    overflowed float64 (inf - inf gives NaN, or a wrong inf) are recomputed in exact
    rational arithmetic, their outputs shown as the nearest float (inf beyond float64)."""
    fnet = net.float()
    with np.errstate(over="ignore", invalid="ignore"):
        Y = fnet(X)
        pats = fnet.preactivations(X)
    active = (sum((P > 0).sum(axis=1) for P in pats) if pats else np.zeros(len(X), int)).astype(int)
    bad = ~np.isfinite(Y).all(axis=1)
    for P in pats:
        bad |= ~np.isfinite(P).all(axis=1)
    rows = np.flatnonzero(bad)
    if rows.size:
        ex = net.exact()
        Xe = X[rows]
        Y[rows] = [[nearest_float(v) for v in r] for r in ex(Xe)]
        active[rows] = ex.pattern_vector(Xe).sum(axis=1) if net.n_neurons else 0
    return Y, active, [int(r) for r in rows]


def _fmt(v: np.ndarray) -> str:
    return "[" + ", ".join(f"{float(a):.10g}" for a in v) + "]"


def convert(
    src: str = typer.Argument(..., help="Input model file (.onnx, .nnet, .npz, .pt)."),
    dst: str = typer.Argument(..., help="Output file; its suffix picks the format. Not "
                              "example:NAME (shipped examples are read-only sources)."),
    json_out: bool = JSON_OPT,
) -> None:
    """Convert a model between formats (ONNX, NNet, native .npz, torch .pt).

    SRC may be a shipped example (example:NAME); DST must be a file path.

    Example: relulab convert example:tiny_2d.nnet tiny.onnx
    """
    from ..io import atomic_path, check_model_target, save_model

    check_model_target(dst, "DST")  # before the model is read, not after
    net = load_model_arg(src)
    # Written beside DST first, re-read and compared there, and only then moved into place
    # (atomic_path): a conversion that fails (weights beyond float64, a re-read over the
    # memory budget) leaves no DST behind and an existing one untouched.
    written: str | None = None   # the temporary file's name, replaced by DST in errors
    real = Path(os.path.realpath(dst))
    # a device or a pipe (/dev/null, a FIFO another program reads) is written in place and
    # cannot be read back: reading a FIFO would wait for a writer that never comes
    device = real.exists() and not real.is_file()
    # only .npz keeps exact weights (read back, the re-read says the same)
    rounded, err, X = net.is_exact and Path(dst).suffix.lower() != ".npz", None, np.zeros((0, net.input_dim))
    try:
        with atomic_path(dst) as tmp:
            written = None if device else str(tmp)
            save_model(net, tmp)
            if not device:
                err, X, rounded = _read_back(net, tmp)
    except RelulabError as e:
        # the temporary file's name is relulab's, not the user's: say DST instead
        msg = str(e) if written is None else str(e).replace(written, str(dst))
        raise RelulabError(f"convert {src} -> {dst}: {msg}") from None
    result = {"source": src, "target": dst, "network": repr(net), "max_abs_difference": err,
              "rounded_to_float64": rounded}
    if json_out:
        print_json(result)
    else:
        # the names are data: rich markup in them ("c[/x].onnx") is printed as typed
        if err is None:
            console.print(escape(f"wrote {dst} ({net!r}) to {real}, a device or a pipe: not read back"))
            return
        shown = "nonzero, below float64's range" if 0 < err <= SMALLEST_SUBNORMAL else f"{err:.3g}"
        console.print(escape(f"wrote {dst} ({net!r}); re-read, max |difference| on {len(X)} points: "
                             f"{shown}" + (" in exact arithmetic: the exact rational weights were "
                                             "rounded to float64 (only .npz keeps them)" if rounded else "")))


def _read_back(net: Network, path: str) -> tuple[float, np.ndarray, bool]:
    """Re-read a converted model and compare it with ``net`` at random points: the
    largest difference, the points, and whether exact weights were rounded to float64."""
    from ..io import load_model

    back = load_model(path)
    X = np.random.default_rng(0).normal(size=(256, net.input_dim))
    # exact (Fraction) weights written to a float format are rounded: compared in
    # exact arithmetic (a float comparison rounded the source too and read 0)
    rounded = net.is_exact and not back.is_exact
    if back.input_dim != net.input_dim or back.output_dim != net.output_dim:
        return float("inf"), X, rounded
    if rounded:
        X = X[:32]
        worst = np.max(np.abs(back.exact()(X) - net(X)))
        # a difference below float64's range (a weight of 1e-400 written as 0) is not 0:
        # reported as the smallest positive float
        return (float(worst) if worst == 0 or float(worst) > 0 else SMALLEST_SUBNORMAL), X, rounded
    return float(np.max(np.abs(back.float()(X) - net.float()(X)))), X, rounded


def tour_cmd() -> None:
    """The quick tour: what relulab does, on small example networks shipped with it.

    Example: relulab tour
    """
    console.rule("[bold]relulab tour")
    for topic in topics():
        topic.tour(console)
    console.rule("[bold]done: see README.md and docs/ for more")


def tour(con) -> None:
    """Core section of the tour: the Network object and exact arithmetic."""
    from ..examples import abs_net, load_example, xor_net

    con.rule("The Network: one representation")
    net = load_example("tiny_2d")
    d = describe(net)
    con.print(f"example network {net!r}: {d['neurons']} ReLUs, {d['params']} parameters")
    x = np.array([0.25, -0.5])
    A, c = net.local_affine(x)
    con.print(f"f({x.tolist()}) = {float(net(x)[0]):.6f}; on its linear region f(y) = "
              f"{A[0, 0]:.4f} y1 + {A[0, 1]:.4f} y2 + {c[0]:.4f}")
    con.print(f"activation pattern there: {''.join('1' if v else '0' for v in np.concatenate(net.activation_pattern(x)))}")
    from fractions import Fraction

    xor = xor_net()
    q = [Fraction(1, 3), Fraction(1, 2)]
    con.print(f"exact mode: the XOR network at (1/3, 1/2) gives {xor(q)[0]} exactly; "
              f"net.exact() turns any float network into rationals")
    table = {(a, b): int(xor([a, b])[0]) for a in (0, 1) for b in (0, 1)}
    con.print(f"XOR as a ReLU network, exactly: {table}")
    absn = abs_net()
    s = absn + (-1) * absn
    con.print(f"network algebra: |x| - |x| is a {s!r} that gives {float(s.float()([3.0])[0])} at 3")


def examples_cmd(
    action: str = typer.Argument("list", help="list (the default) or path."),
    name: str = typer.Argument(None, help="With path: the example file, e.g. tiny_2d.onnx."),
    json_out: bool = JSON_OPT,
) -> None:
    """Example models, properties and data shipped with relulab.

    Wherever a command takes a file, example:NAME names one of these.

    Example: relulab examples; relulab examples path tiny_2d.onnx;
    relulab verify example:tiny_2d.onnx example:tiny_2d_holds.vnnlib
    """
    from ..examples import DESCRIPTIONS, example_files, example_path

    if action == "path":
        if not name:
            raise RelulabError("examples path: name the file, e.g. relulab examples path tiny_2d.onnx")
        try:
            p = example_path(name)
        except FileNotFoundError as e:
            raise RelulabError(str(e)) from None
        if json_out:
            print_json({"name": name, "path": str(p)})
        else:
            typer.echo(str(p))
        return
    if action != "list":
        raise RelulabError(f"examples: unknown action {action!r}; use list or path")
    files = example_files()
    if json_out:
        print_json([{"name": n, "use": f"example:{n}", "path": str(p), "what": DESCRIPTIONS[n]}
                    for n, p in files.items()])
        return
    t = Table(title="shipped examples (use example:NAME wherever a file goes)")
    t.add_column("name")
    t.add_column("what")
    for n in files:
        t.add_row(f"example:{n}", DESCRIPTIONS[n])
    console.print(t)


def register(app: typer.Typer) -> None:
    app.command("info")(info)
    app.command("eval")(eval_cmd)
    app.command("convert")(convert)
    app.command("tour")(tour_cmd)
    app.command("examples")(examples_cmd)
