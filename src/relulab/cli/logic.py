"""Logic commands: ``formula`` (a network as Lukasiewicz formulas) and ``from-formula``.

Example:
    $ relulab formula model.npz --simplify
    $ relulab formula model.onnx --box -1:1 --json
    $ relulab from-formula "x1 ⊕ ¬x2" -o out.npz
"""

from __future__ import annotations

from pathlib import Path

import typer

from ..errors import RelulabError
from ._common import JSON_OPT, check_seconds, console, load_model_arg, parse_box, print_json

__all__ = ["register", "tour"]


def formula_cmd(
    model: str = typer.Argument(..., help="Model file (.onnx, .nnet, .npz, .pt)."),
    simplify_: bool = typer.Option(False, "--simplify", help="Simplify every node formula by the MV axioms."),
    method: str = typer.Option("auto", "--method", help="auto, rescale or staircase (integer networks)."),
    box: str | None = typer.Option(
        None, "--box", help="Input box lo:hi (or lo1:hi1,...) mapped onto [0,1]^n; default: the unit cube."
    ),
    flat: bool = typer.Option(False, "--flat", help="Also print the flat formula of each last-layer node, hidden layers substituted in (an output is its readout of these nodes plus its offset)."),
    time_limit: float = typer.Option(
        60.0, "--time-limit", help="Seconds for the extraction and --simplify together: an extraction "
        "that does not finish in time is an error; past them --simplify keeps the node formulas "
        "simplified so far (each equal to the original) and the output says the simplification is partial."),
    json_out: bool = JSON_OPT,
) -> None:
    """Print the substitution graph of a network on [0,1]^n: one MV formula per node.

    Example: relulab formula model.npz --simplify
    """
    import time

    from ..logic import METHODS, node_rewrite, to_text
    from ..logic.extract import OutOfTime, formula_graph
    from ..logic.simplify import simplify_rounds

    check_seconds(time_limit, "--time-limit")
    if method not in METHODS:
        raise RelulabError(f"--method: unknown method {method!r}; use {', '.join(METHODS)}")
    net = load_model_arg(model)
    dom = None if box is None else parse_box(box, net.input_dim)
    deadline = time.monotonic() + time_limit
    try:
        g = formula_graph(net, dom, method, deadline)
    except OutOfTime as e:
        raise RelulabError(f"{e} (--time-limit {time_limit:g} s covers the extraction; "
                           "a larger limit or a smaller --box may let it finish)") from None
    simplified = None
    if simplify_:
        simplified = "complete"
        for k, layer in enumerate(g.layers):
            for j in range(len(layer)):
                phi, how = simplify_rounds(layer[j].formula, deadline)
                if how != "fixed point" and simplified != "partial (time limit)":
                    simplified = f"partial ({how})"
                if phi is not layer[j].formula:
                    g = node_rewrite(g, k, j, phi, check="trusted", justification="MV-axiom rewrites")[0]
    d = {"file": model, **g.to_dict()}
    if simplified is not None:
        d["simplified"] = simplified
    flats = [to_text(phi, ascii=True) for phi in g.formulas()] if flat else None
    if flat:
        d["flat"] = flats
    if json_out:
        print_json(d)
        return
    console.print(f"substitution graph of {model}: {g.n_inputs} inputs, layers {list(g.widths)}, "
                  f"algebra {g.algebra} (method {g.method})"
                  + (f"; simplification {simplified}" if simplified else ""), highlight=False)
    console.print(g.to_text(), highlight=False, markup=False)
    if flat:
        for j, t in enumerate(flats):
            console.print(f"flat L{len(g.layers) - 1}.{j + 1} = {t}", highlight=False, markup=False)


def from_formula_cmd(
    formula: str = typer.Argument(..., help='An MV formula, e.g. "x1 + ~x2" or "x1 ⊕ ¬x2".'),
    out: str = typer.Option(..., "-o", "--out", help="Where to write the network (.npz, .onnx, ...)."),
    n_inputs: int | None = typer.Option(None, "--inputs", help="Number of inputs (default: largest variable)."),
    json_out: bool = JSON_OPT,
) -> None:
    """Build the exact ReLU network computing a formula's truth function on [0,1]^n.

    .npz keeps its exact (rational) weights; a float format (.onnx, .nnet, .pt) rounds
    them to float64, and the output says so ("saved_exact": false in JSON).

    Example: relulab from-formula "x1 -> x2" -o impl.npz
    """
    from ..io import save_model
    from ..logic import algebra_of, parse, to_network

    if n_inputs is not None and n_inputs < 1:
        raise RelulabError(f"--inputs must be at least 1, got {n_inputs}")
    phi = parse(formula, n_vars=n_inputs)
    net = to_network(phi, n_inputs)
    save_model(net, out)
    # a float format (.onnx, .nnet, .pt) holds the weights rounded to float64 (1/3 of δ3)
    saved_exact = Path(out).suffix.lower() == ".npz" or net.entry_not_a_float() is None
    d = {"formula": str(phi), "algebra": algebra_of(phi), "out": out, "inputs": net.input_dim,
         "widths": list(net.widths), "n_neurons": net.n_neurons, "n_params": net.n_params,
         "saved_exact": saved_exact}
    if json_out:
        print_json(d)
        return
    note = "" if saved_exact else (" (weights rounded to float64: the file is not the exact network; "
                                   "save to .npz to keep the exact rationals)")
    console.print(f"{phi}  ({d['algebra']}) -> network {net!r}, {net.n_neurons} neurons, "
                  f"written to {out}{note}", highlight=False, markup=False, soft_wrap=True)


def tour(con) -> None:
    """Logic section of the tour."""
    from ..logic import derive, equal_on_cube, parse, to_formula, to_network
    from ..network import Network
    from ..symmetry import random_symmetry

    con.rule("Logic: networks as Lukasiewicz formulas")
    net = Network([[[1, 1], [1, -1]], [[1, 1]]], [[-1, 0], [0]]).exact()
    g = to_formula(net)
    con.print(f"the integer network {net!r} as a substitution graph ({g.algebra}):", highlight=False)
    con.print(g.to_text(), highlight=False, markup=False)
    back = to_network(g)
    con.print(f"built back: {back!r}; exactly equal on [0,1]^2: {equal_on_cube(net, back).status}")
    phi = parse("x1 -> x2")
    con.print(f"x1 → x2 = min(1, 1 - x1 + x2) is a network with {to_network(phi).n_neurons} neuron(s)")
    r = derive(net, random_symmetry(net, 2))
    con.print(f"a rescaled + permuted copy: derivation {r.status} in {r.length} local steps {r.counts}")


def register(app: typer.Typer) -> None:
    app.command("formula")(formula_cmd)
    app.command("from-formula")(from_formula_cmd)
