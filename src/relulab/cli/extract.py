"""Extraction command: ``extract`` (recover a network from its forward queries).

Example:
    $ relulab extract model.onnx --budget 100000 -o stolen.npz --json
"""

from __future__ import annotations

import typer

from ._common import JSON_OPT, check_seconds, console, load_model_arg, print_json

__all__ = ["register", "tour"]


def extract_cmd(
    model: str = typer.Argument(..., help="Model file (.onnx, .nnet, .npz, .pt): queried as a black box."),
    out: str | None = typer.Option(None, "-o", "--out", help="Where to write the recovered network."),
    budget: int | None = typer.Option(None, "--budget", help="Most input rows to query."),
    widths: str | None = typer.Option(None, "--widths", help="Hidden widths if known, e.g. 20,10."),
    precision: float | None = typer.Option(
        None, "--precision", help="Output resolution of the model (e.g. 5e-7 for 6 decimals)."),
    scale: float = typer.Option(1.0, "--scale", help="Size of the input region explored."),
    seed: int = typer.Option(0, "--seed", min=0, help="Random seed of the attack."),
    time_limit: float | None = typer.Option(
        None, "--time-limit", help="Seconds for the attack and the final polish; at the limit "
        "the result is partial, and a polish that would not fit is skipped (the fidelity check "
        "after it has its own 30 s)."),
    json_out: bool = JSON_OPT,
) -> None:
    """Recover a ReLU network from its input-output behaviour only (critical points on
    lines, hyperplanes from gradient jumps, layer peeling), then compare it with the file.

    Example: relulab extract model.onnx --budget 200000 -o stolen.npz
    """
    from ..errors import RelulabError
    from ..extract import extract_relu
    from ..io import check_model_target, save_model

    if out is not None:
        check_model_target(out, "-o")  # before the attack, not after it
    net = load_model_arg(model)  # the attack sees only its forward pass
    ws = None
    if widths is not None:
        try:
            ws = [int(v) for v in widths.replace(",", " ").split()]
        except ValueError:
            ws = []
        if not ws:  # "," or "" would read as "no hidden layers", a claim the user did not make
            raise RelulabError(f"--widths: cannot read {widths!r}; write e.g. 20,10")
    r = extract_relu(lambda X: net.float()(X), net.input_dim, ws, budget=budget,
                     precision=precision, scale=scale, seed=seed, reference=net,
                     time_limit=check_seconds(time_limit, "--time-limit"))
    if out is not None and r.network is not None:
        save_model(r.network, out)
    d = {"file": model, "out": out if r.network is not None else None, **r.to_dict()}
    if json_out:
        print_json(d)
        return
    color = "green" if r.status == "complete" else "yellow"
    console.print(f"[{color}]{r.status}[/{color}]: hidden widths {list(r.widths)} recovered from "
                  f"{r.queries} queries (2^{r.log2_queries:.1f}) in {r.time:.1f} s")
    f = r.fidelity
    if f is not None:
        if f.aligned:
            console.print(f"max parameter error after aligning symmetries: {f.max_abs_error:.3g} "
                          f"(2^{-f.bits_abs:.1f}); relative {f.max_rel_error:.3g}")
        else:
            console.print("parameters not comparable: " + f.message)
        console.print(f"equivalence on the box [{f.domain['lo'][0]:g}, {f.domain['hi'][0]:g}]^d: "
                      f"{f.equivalence} ({f.equivalence_method}, "
                      f"{'exact' if f.equivalence_exact else f'tolerance {f.equivalence_tol:.2g}'}); largest "
                      f"output difference on {f.n_samples} random points {f.max_output_error:.3g}")
    for u in r.unidentified:
        console.print(f"  note: {u}")
    if r.polish is not None:
        console.print(f"  {r.polish}")
    if out is not None and r.network is not None:
        console.print(f"recovered network written to {out}")
    elif out is not None:
        console.print(f"nothing written to {out}: no network was recovered ({r.status})")


def tour(con) -> None:
    """Extraction section of the tour."""
    from ..extract import extract_relu
    from ..network import Network

    con.rule("Extraction: a network recovered from its queries")
    net = Network([[[1.0, 0.5], [-1.0, 2.0], [0.3, -1.0]], [[1.0, -2.0, 0.5]]],
                  [[0.1, -0.2, 0.3], [0.25]])
    r = extract_relu(lambda X: net(X), 2, reference=net)
    con.print(f"a 2-3-1 network queried {r.queries} times: widths {list(r.widths)}, parameter error "
              f"{r.fidelity.max_abs_error:.2g} after aligning symmetries, equivalence "
              f"{r.fidelity.equivalence}")


def register(app: typer.Typer) -> None:
    app.command("extract")(extract_cmd)
