"""Symmetry commands: ``canonical``, ``equiv`` and ``reduce``.

Example:
    $ relulab canonical model.onnx -o canon.npz
    $ relulab equiv a.onnx b.onnx --box -1:1 --json
    $ relulab reduce model.onnx -o small.npz --box 0:1
"""

from __future__ import annotations

import numpy as np
import typer

from ..errors import RelulabError
from ._common import (
    EXIT_UNVERIFIED,
    JSON_OPT,
    check_seconds,
    console,
    err_console,
    load_model_arg,
    parse_box,
    print_json,
)

__all__ = ["register", "tour"]

BOX_HELP = "Input box: lo:hi for every coordinate, or lo1:hi1,lo2:hi2,..."
# an exact model's normal form is checked in exact arithmetic on this many sample points
EXACT_CHECK_POINTS = 16


def _exact_gap(f, g, X: np.ndarray) -> float:
    """The largest output difference of two exact networks on the float rows of ``X``
    (exact passes: an exact network reads a float as its binary value; the difference
    rounded to float)."""
    return float(max(np.abs(f(X) - g(X)).reshape(-1), default=0))


def canonical_cmd(
    model: str = typer.Argument(..., help="Model file (.onnx, .nnet, .npz, .pt)."),
    out: str = typer.Option(..., "-o", "--out", help="Where to write the normal form."),
    box: str | None = typer.Option(None, "--box", help=BOX_HELP + " Also removes neurons dead on it."),
    allow_unverified: bool = typer.Option(
        False, "--allow-unverified",
        help="Write the normal form even when it differs from the model on the sample points."),
    json_out: bool = JSON_OPT,
) -> None:
    """Normal form under rescaling and permutation of neurons: the same function, except
    that float neurons within the merge tolerance are merged; the result is compared with
    the model on 10,000 random points (an exact model: 16, in exact arithmetic) before it
    is written. A difference beyond 1e-6 x the
    output scale is reported (exit 3) and nothing is written, unless --allow-unverified is
    given (then the file is written and the exit code is still 3).

    Example: relulab canonical example:tiny_2d.onnx -o can.npz
    """
    from ..io import check_model_target, save_model
    from ..symmetry import canonical
    from ..tolerance import EQUIV_TOL

    check_model_target(out, "-o")  # before the work, not after
    net = load_model_arg(model)
    dom = None if box is None else parse_box(box, net.input_dim)
    can, rep = canonical(net, dom)
    X = (dom.sample(10_000, 0) if dom is not None
         else np.random.default_rng(0).normal(size=(10_000, net.input_dim)))
    with np.errstate(over="ignore", invalid="ignore"):
        Y = net.float()(X)
    if not np.all(np.isfinite(Y)):
        # inf - inf read as a "deviation of nan" blamed on a merge that never happened
        raise RelulabError(f"{model}: the model's outputs overflow float64 on the sample points of "
                           f"{'the box' if dom is not None else 'R^d'}; the normal form cannot be checked "
                           "there (rescale the last layer or give a smaller --box)")
    if net.is_exact and can.is_exact:
        # exact merges keep the function; measured in exact arithmetic on a few points (the
        # float copies of 2^60 relu((1 + 2^-60) x) - 2^60 relu(x) and of its normal form
        # relu(x) differ by 1, which was blamed on a float merge that never happened)
        dev = _exact_gap(net, can, X[:EXACT_CHECK_POINTS])
    else:
        dev = float(np.max(np.abs(Y - can.float()(X))))
    same = dev <= EQUIV_TOL * max(1.0, float(np.max(np.abs(Y))))
    written = same or allow_unverified  # like reduce: a changed function is not written unasked
    if written:
        save_model(can, out)
    d = {"file": model, "out": out if written else None, **rep.to_dict(),
         "sample_max_deviation": dev, "same_on_samples": same}
    if not same:  # neurons merged within the float tolerance whose outgoing weights magnify it
        err_console.print(f"WARNING: the normal form differs from the model by {dev:.3g} at a sample "
                          "point: a float merge of near-equal neurons changed the function; the "
                          "normal form of the exact network (exact rationals) merges only equal ones"
                          + (f"; written to {out} anyway (--allow-unverified)" if written else
                             "; nothing written (use --allow-unverified to write it anyway)"),
                          highlight=False, soft_wrap=True)
    if json_out:
        print_json(d)
        if not same:
            raise typer.Exit(EXIT_UNVERIFIED)
        return
    if not written:
        raise typer.Exit(EXIT_UNVERIFIED)
    console.print(f"normal form written to {out}: hidden widths {list(rep.widths_before)} -> "
                  f"{list(rep.widths_after)}")
    console.print(f"removed {len(rep.dead)} dead, {len(rep.zero_outgoing)} zero-outgoing, "
                  f"{len(rep.constant)} constant neurons; {len(rep.merged)} merge group(s)")
    where = (f"{min(len(X), EXACT_CHECK_POINTS)} random points (exact arithmetic)" if net.is_exact and can.is_exact
             else "10,000 random points")
    console.print(f"largest output difference on {where}: {dev:.3g}")
    if not same:
        raise typer.Exit(EXIT_UNVERIFIED)


def equiv_cmd(
    a: str = typer.Argument(..., help="First model file."),
    b: str = typer.Argument(..., help="Second model file."),
    box: str | None = typer.Option(None, "--box", help=BOX_HELP + " Default -1:1."),
    whole_space: bool = typer.Option(
        False, "--whole-space", help="Decide on all of R^d (one hidden layer at most; algebraic)."
    ),
    timeout: float | None = typer.Option(None, "--timeout", "--time-limit", help="Seconds for the verifier."),
    tol: float | None = typer.Option(None, "--tol", help="Tolerance of 'equal' (default 1e-6 x scale)."),
    json_out: bool = JSON_OPT,
) -> None:
    """Decide whether two networks compute the same function (equal / different / unknown).

    Example: relulab equiv example:tiny_2d.onnx example:tiny_2d.nnet
    """
    from ..symmetry import equivalent

    f = load_model_arg(a)
    g = load_model_arg(b)
    if whole_space and box is not None:
        raise RelulabError("give either --box or --whole-space, not both")
    dom = None if whole_space else parse_box(box, f.input_dim)
    r = equivalent(f, g, dom, timeout=check_seconds(timeout, "--timeout/--time-limit"), tol=tol)
    d = {"a": a, "b": b, "domain": "R^d" if dom is None else dom.to_dict(), **r.to_dict()}
    if json_out:
        print_json(d)
        return
    color = {"equal": "green", "different": "red"}.get(r.status, "yellow")
    console.print(f"[{color}]{r.status}[/{color}] ({r.method}): {r.message}")
    if r.status == "different":
        w = [float(v) for v in r.witness]
        fv, gv = [float(v) for v in r.f_value], [float(v) for v in r.g_value]
        same = (f"; equal as floats, they differ by {float(r.gap):.3g} in exact arithmetic"
                if fv == gv and r.gap is not None else "")
        # an exact witness float64 rounds is printed as its fraction: at 0.3333333333333333,
        # just below a tent starting at 1/3, both networks are 0
        shown = ("[" + ", ".join(str(v) if float(v) != v else repr(float(v)) for v in r.witness) + "]"
                 if any(float(v) != v for v in r.witness) else str(w))
        console.print(f"witness x = {shown}: f(x) = {fv}, g(x) = {gv} (re-checked{same})")


def reduce_cmd(
    model: str = typer.Argument(..., help="Model file (.onnx, .nnet, .npz, .pt)."),
    out: str = typer.Option(..., "-o", "--out", help="Where to write the reduced network."),
    box: str | None = typer.Option(None, "--box", help=BOX_HELP + " Default -1:1."),
    timeout: float | None = typer.Option(None, "--timeout", "--time-limit", help="Seconds for the verifier."),
    no_skip: bool = typer.Option(False, "--no-skip", help="Never add an input-to-output skip."),
    allow_unverified: bool = typer.Option(
        False, "--allow-unverified",
        help="Write the reduced network even when the equivalence check ends unknown."),
    json_out: bool = JSON_OPT,
) -> None:
    """A smaller network computing the same function on the box, checked by the verifier.

    The reduced network is written only when the verifier proved it equal to the input
    on the box. When the check ends unknown (time limit, numerical trouble) nothing is
    written and the exit code is 3, unless --allow-unverified is given (then the file is
    written, the output says "UNVERIFIED", and the exit code is still 3).

    Example: relulab reduce model.onnx -o small.npz --box 0:1 --timeout 60
    """
    from ..io import check_model_target, save_model
    from ..symmetry import reduce

    check_model_target(out, "-o")  # before the verifier runs, not after
    net = load_model_arg(model)
    dom = parse_box(box, net.input_dim)
    r = reduce(net, dom, timeout=check_seconds(timeout, "--timeout/--time-limit"), allow_skip=not no_skip)
    status = "unchecked" if r.check is None else r.check.status
    if status == "different":
        # reduce() makes only function-preserving edits, exactly or up to float rounding: a
        # witness means the rounding mattered; a network known to differ is never written
        raise RelulabError(f"reduce: the reduced network differs from {model} on the box "
                           f"({r.check.message}): float rounding in the reduction moved the "
                           "outputs; nothing written (large weights that cancel magnify it: the "
                           "exact network, net.exact() saved as .npz, reduces in exact arithmetic)")
    # the result's own status: the check proved equality and no sample contradicts it
    verified = r.status == "verified"
    written = verified or allow_unverified
    if written:
        save_model(r.network, out)
    d = {"file": model, "out": out if written else None, "verified": verified, **r.to_dict()}
    if json_out:
        print_json(d)
        if not verified:
            raise typer.Exit(EXIT_UNVERIFIED)
        return
    if not verified:
        err_console.print(
            f"[bold red]UNVERIFIED[/bold red]: the equivalence check ended {status}"
            + (f" ({r.check.message})" if r.check is not None else "")
            + (f"; the reduced network was written to {out} anyway (--allow-unverified)"
               if written else "; nothing written (use --allow-unverified to write it anyway)"),
            highlight=False, soft_wrap=True)
        if not written:
            raise typer.Exit(EXIT_UNVERIFIED)
    console.print(f"reduced network written to {out}: hidden widths {list(r.widths_before)} -> "
                  f"{list(r.widths_after)} ({sum(r.widths_before)} -> {sum(r.widths_after)} neurons)")
    for line in r.log:
        console.print(f"  {line}")
    if r.check is not None:
        console.print(f"check: {r.check.status} ({r.check.method}); largest difference on "
                      f"{r.sample_points} random points {r.sample_max_deviation:.3g}")
    if not verified:
        raise typer.Exit(EXIT_UNVERIFIED)


def tour(con) -> None:
    """Symmetry section of the tour."""
    from ..domain import Box
    from ..network import Network
    from ..symmetry import canonical, equivalent, random_symmetry, reduce

    con.rule("Symmetries: normal forms, exact equivalence, reduction")
    net = Network([[[1.0, 2.0], [3.0, -1.0], [-1.0, 0.5]], [[1.0, -2.0, 0.5]]],
                  [[0.0, 1.0, -0.5], [0.25]]).exact()
    g = random_symmetry(net, 1)
    con.print(f"a network and a randomly rescaled + permuted copy: first rows "
              f"{[str(v) for v in net.weights[0][0]]} vs {[str(v) for v in g.weights[0][0]]}")
    con.print(f"their exact normal forms are identical: {canonical(net)[0] == canonical(g)[0]}")
    lin = Network([[[1.0], [-1.0]], [[1.0, -1.0]]], [[0.0, 0.0], [0.0]])     # relu(x) - relu(-x)
    ident = Network([[[1.0]]], [[0.0]])
    r = equivalent(lin, ident)
    con.print(f"relu(x) - relu(-x) vs x on R: {r.status} ({r.method}: {r.message})")
    half = Network([[[1.0]], [[1.0]]], [[0.0], [0.0]])
    r = equivalent(lin, half, Box([-1], [1]))
    con.print(f"relu(x) - relu(-x) vs relu(x) on [-1, 1]: {r.status}, witness x = "
              f"{float(r.witness[0]):.3g}")
    padded = Network([[[1.0], [2.0], [1.0], [-1.0]], [[1.0, 0.5, 3.0, 2.0]]],
                     [[0.0, 0.0, -5.0, 4.0], [0.0]])
    red = reduce(padded, Box([-1], [1]))
    con.print(f"reduce on [-1, 1]: widths {list(red.widths_before)} -> {list(red.widths_after)} "
              f"(duplicate merged, dead removed, stably active moved to the skip); "
              f"check {red.check.status}")


def register(app: typer.Typer) -> None:
    app.command("canonical")(canonical_cmd)
    app.command("equiv")(equiv_cmd)
    app.command("reduce")(reduce_cmd)
