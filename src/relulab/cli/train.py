"""The training commands: exact minimal-norm univariate fits and convex two-layer training.

Example:
    $ relulab fit-minnorm data.csv --bias penalized --plot fit.png
    $ relulab fit-minnorm data.csv --bias penalized --time-limit 30 --json
    $ relulab fit-convex data.csv --lam 0.01 --json
"""

from __future__ import annotations

import numpy as np
import typer

from ..errors import FormatError, RelulabError
from ._common import (
    JSON_OPT,
    check_output_targets,
    check_seconds,
    console,
    print_json,
    read_float,
    read_text_arg,
)

__all__ = ["register", "tour", "read_csv"]


def read_csv(path: str, min_cols: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Read a numeric CSV (an optional header line of names, after any ``#`` comments): all
    columns but the last are inputs, the last is the target.  Errors name the file, line
    and column; ``example:NAME`` names a shipped data file."""
    text = read_text_arg(path, "a CSV text file").removeprefix("\ufeff")  # a byte-order mark
    rows = []
    header_allowed = True  # on the first line that is neither blank nor a comment
    for ln, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        parts = [c.strip() for c in s.replace(";", ",").split(",")]
        first, header_allowed = header_allowed, False
        try:
            vals = [read_float(c) for c in parts]
        except ValueError:
            if first and not any(_is_float(c) for c in parts):
                continue  # a header: names only (a row with some numbers is data, and wrong)
            bad = next(i for i, c in enumerate(parts, 1) if not _is_float(c))
            raise FormatError(
                f"{path}:{ln}: column {bad} is not a number ({parts[bad - 1]!r})"
            ) from None
        if rows and len(vals) != len(rows[0]):
            raise FormatError(f"{path}:{ln}: {len(vals)} columns, expected {len(rows[0])}")
        rows.append(vals)
    if not rows:
        raise FormatError(f"{path}: no data rows")
    A = np.array(rows)
    if A.shape[1] < min_cols:
        raise FormatError(f"{path}: needs at least {min_cols} columns (inputs..., target)")
    if not np.all(np.isfinite(A)):
        raise FormatError(f"{path}: contains NaN or infinite values")
    return A[:, :-1], A[:, -1]


def _is_float(s: str) -> bool:
    try:
        read_float(s)
        return True
    except ValueError:
        return False


def _shown_gap(gap: float) -> str:
    """A duality gap for the text output: a negative one (the bound above the objective by
    rounding, at a huge lam) is shown as 0, which is what it certifies.

    Example:
        >>> _shown_gap(3.2e-7), _shown_gap(-8.9e-16)
        ('3.20e-07', '0 (to rounding)')
    """
    if np.isnan(gap):  # NaN >= 0 is False: it was shown as "0 (to rounding)"
        return "not known (NaN)"
    return f"{gap:.2e}" if gap >= 0 else "0 (to rounding)"


def fit_minnorm_cmd(
    data: str = typer.Argument(..., help="CSV with columns x, y (y = labels -1/+1 with "
                               "--classify)."),
    bias: str = typer.Option("free", "--bias", help="free | penalized"),
    skip: bool = typer.Option(False, "--skip", help="Add a free affine skip c*x."),
    classify: bool = typer.Option(False, "--classify", help="Margin classification "
                                  "(labels_i f(x_i) >= 1) instead of interpolation."),
    plot: str = typer.Option(None, "--plot", help="Write a picture of the fit to this PNG."),
    save: str = typer.Option(None, "--save", "-o", "--out", help="Save the network (.npz/.onnx/...)."),
    time_limit: float = typer.Option(None, "--time-limit", help="Seconds for the whole fit "
                                     "(every LP is handed the time left); a fit stopped by "
                                     "it is partial (status time_limit): its cost is an upper "
                                     "bound, its lower bound still certified. If not even "
                                     "the first LP finishes, an error says so."),
    json_out: bool = JSON_OPT,
) -> None:
    """Exact minimal-norm univariate two-layer ReLU network through the data.

    With penalised biases the fit is found by column generation, which --time-limit can
    stop early: the result is then marked PARTIAL and the optimum lies between the
    certified lower bound and the returned network's cost.

    Example: relulab fit-minnorm data.csv --bias penalized --time-limit 30 --json
    """
    from ..train import minnorm_classifier, minnorm_interpolant
    from ..train.minnorm import MinNormDataError

    time_limit = check_seconds(time_limit, "--time-limit")
    check_output_targets(save, plot)
    X, y = read_csv(data)
    if X.shape[1] != 1:
        raise RelulabError(f"{data}: fit-minnorm takes one input column, got {X.shape[1]}")
    fn = minnorm_classifier if classify else minnorm_interpolant
    try:
        r = fn(X[:, 0], y, bias=bias, skip=skip, time_limit=time_limit)
    except MinNormDataError as e:  # duplicates, labels: name the file they are in
        raise RelulabError(f"{data}: {e}") from None
    if save:
        from ..io import save_model

        save_model(r.network, save)
    if plot:
        _plot_minnorm(r, plot)
    if json_out:
        print_json({"data": data, "time_limit": time_limit, **r.to_dict()})
        return
    kind = "classifier" if classify else "interpolant"
    what = f"minimal-norm {kind}" if not r.partial else f"PARTIAL: best {kind} found"
    console.print(f"{what} ({r.bias} biases{', skip' if r.skip else ''}): "
                  f"cost {r.cost:.10g} (certified >= {r.lower_bound + 0.0:.10g}), "
                  f"{r.kinks.size} kinks, width {r.network.widths[0]}")
    for t, s in zip(r.kinks, r.jumps, strict=True):
        # the shortest exact spelling: 6 digits printed five kinks near 3e9 as "3e+09"
        console.print(f"  kink at x = {float(t)!r}: slope {'+' if s > 0 else '-'}{abs(s):.6g}")
    if "network_note" in r.info:
        miss = r.info.get("network_fit_error", r.info.get("network_min_margin"))
        what_miss = "misses y by up to" if "network_fit_error" in r.info else "has a smallest margin of"
        console.print(f"  note: the saved network {what_miss} {miss:.3g} at the data ({r.info['network_note']})")
    if r.partial:
        if r.status == "time_limit":
            why = f"stopped by --time-limit {time_limit:g}" if time_limit is not None else "stopped by the time limit"
        elif r.status == "stalled":
            why = "column generation stalled (no longer improving, or its round cap)"
        else:
            why = f"status {r.status}"
        rounds = f"{r.iterations} round{'s' if r.iterations != 1 else ''}"
        console.print(f"  {why} after {rounds}: the cost is an upper bound, the "
                      f"optimum lies in [{r.lower_bound:.10g}, {r.cost:.10g}] (lower bound "
                      f"certified)")
    if r.unique is True:
        console.print("  the optimal function is unique (certified to the LP tolerance)")
    elif r.unique is False:
        console.print("  optimum not unique: other functions reach the same cost")
    else:
        console.print("  uniqueness of the optimal function not decided")
    if r.optimal_set is not None and r.unique is not True:
        zs = [z for z in r.optimal_set.zones if z.convex or z.concave]
        console.print(f"  kinks of optimal functions may sit in {len(zs)} zones "
                      f"(see --json optimal_set)")


def _plot_minnorm(r, path: str) -> None:
    from ..errors import require

    require("matplotlib", "plot")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    span = max(1.0, float(r.x[-1] - r.x[0]))
    xs = np.linspace(r.x[0] - 0.2 * span, r.x[-1] + 0.2 * span, 800)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(xs, r.network(xs[:, None])[:, 0], lw=1.5, label=f"min-norm ({r.bias} biases)")
    ax.scatter(r.x, r.y, c="k", s=18, zorder=3, label="data")
    for t in r.kinks:
        ax.axvline(t, color="grey", lw=0.5, ls=":")
    ax.set_title(f"cost {r.cost:.4g}, {r.kinks.size} kinks")
    ax.set_xlabel("x")
    ax.set_ylabel("f(x)")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    from ..plot import save_figure

    save_figure(fig, path, dpi=120)
    plt.close(fig)


def fit_convex_cmd(
    data: str = typer.Argument(..., help="CSV: input columns then the target column."),
    lam: float = typer.Option(..., "--lam", help="Weight decay (> 0)."),
    max_patterns: int = typer.Option(200, "--max-patterns", help="Activation patterns to "
                                     "sample."),
    gated: bool = typer.Option(False, "--gated", help="Gated-ReLU variant."),
    no_bias: bool = typer.Option(False, "--no-bias", help="No hidden biases."),
    seed: int = typer.Option(0, "--seed", min=0, help="Random seed of the sampled patterns or gates."),
    solver: str = typer.Option("ipm", "--solver", help="ipm (interior point, Clarabel; "
                               "robust) or fista (first order; for very large problems)."),
    time_limit: float = typer.Option(None, "--time-limit", help="Seconds for the whole "
                                     "fit; a fit stopped by it is not converged, its "
                                     "gap still certified."),
    save: str = typer.Option(None, "--save", "-o", "--out", help="Save the network (the ReLU variant; refused with --gated)."),
    json_out: bool = JSON_OPT,
) -> None:
    """Two-layer ReLU network by the convex reformulation, with a duality certificate.

    Objective: (1/2)||f(X) - y||^2 + (lam/2)||theta||^2 over the activation patterns used.

    When every activation pattern of the data is enumerated (always for 1-D inputs, and
    for small data in general position) the result is a global optimum of the
    non-convex training problem and the output says so. Otherwise the patterns are
    sampled (--max-patterns) and the result is optimal over the sampled patterns only:
    the true optimum may be lower than the printed lower bound.

    The duality gap of the convex program solved is certified by exact cone
    projections, whatever the solver.

    Example: relulab fit-convex data.csv --lam 0.01 --save net.npz
    """
    from ..train import convex_fit, gated_fit
    from ..train.convex import ConvexTrainingError

    if save and gated:  # was silently not written
        raise RelulabError("--save: a gated-ReLU fit is not a ReLU network (its units "
                           "1[g.x >= 0] w.x jump where a gate switches); --save works without --gated")
    check_output_targets(save, None)
    X, y = read_csv(data)
    fn = gated_fit if gated else convex_fit
    try:
        r = fn(X, y, lam, max_patterns, bias=not no_bias, seed=seed, solver=solver,
               time_limit=check_seconds(time_limit, "--time-limit"))
    except ConvexTrainingError as e:  # the data's trouble (or lam's): name the file too
        raise RelulabError(f"fit-convex on {data}: {e}") from None
    if save and not gated:
        from ..io import save_model

        save_model(r.network, save)
    if json_out:
        print_json({"data": data, "variant": "gated" if gated else "relu", **r.to_dict()})
        return
    complete = bool(getattr(r, "all_patterns", False))
    units = "gates" if gated else "activation patterns"
    n_units = int(r.gates.shape[0]) if gated else r.n_patterns
    global_opt = bool(getattr(r, "global_optimum", complete and r.converged))
    if complete and r.converged and global_opt:
        scope = f"GLOBAL optimum (all {n_units} {units} of the data enumerated)"
        bound = "certified lower bound on the training problem"
    elif complete and r.converged:
        # the solver's criterion is relative to (1/2)|y|^2: at a small lam the gap can
        # still be a large share of the objective
        rel = r.gap / abs(r.objective) if r.objective else float("inf")
        scope = (f"NOT shown to be the global optimum: all {n_units} {units} of the data are in the "
                 f"convex program and the gap met the solver's criterion, but it is {rel:.3g} of the "
                 "objective; the global optimum lies between the two numbers above")
        bound = "certified lower bound on the training problem"
    elif complete:
        # every pattern is in the program, but the solver stopped before the gap closed
        scope = (f"NOT a certified optimum: all {n_units} {units} of the data are in the "
                 f"convex program, but it stopped before converging (gap {r.gap:.3g}); the "
                 "global optimum lies between the two numbers above")
        bound = "lower bound on the training problem"
    else:
        scope = (f"{'best' if r.converged else 'NOT converged: best found'} over {n_units} "
                 f"sampled {units} only (not a global certificate: the true optimum may be lower)")
        bound = "lower bound of the sampled-pattern program"
    console.print(f"{'gated-ReLU' if gated else 'ReLU'} convex fit: objective "
                  f"{r.objective:.10g}, {bound} {r.dual_value + 0.0:.10g}, gap {_shown_gap(r.gap)} "
                  f"({'certified' if r.converged else 'NOT converged'}), "
                  f"{r.iterations} iterations, {r.seconds:.2f} s")
    if getattr(r, "stopped", None):
        scope += f" ({r.stopped}: partial)"
    console.print(scope)


def register(app: typer.Typer) -> None:
    app.command("fit-minnorm")(fit_minnorm_cmd)
    app.command("fit-convex")(fit_convex_cmd)


def tour(console_) -> None:
    """Minimal-norm fits with free and penalised biases; a certified convex fit."""
    from ..train import collapse_threshold, convex_fit, minnorm_classifier

    x = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    lab = np.array([1, 1, -1, -1, 1, 1])
    console_.rule("Training with guarantees")
    console_.print("labels + + - - + + at x = 0..5")
    for bias in ("free", "penalized"):
        r = minnorm_classifier(x, lab, bias=bias, describe=False)
        ks = ", ".join(f"{t:.3g}" for t in r.kinks)
        console_.print(f"  min-norm classifier, {bias} biases: cost {r.cost:.4f}, kinks at {ks}")
    X = np.linspace(-1, 1, 10)[:, None]
    y = np.abs(X[:, 0]) - 0.3
    t = collapse_threshold(X, y)
    f = convex_fit(X, y, 0.2)
    console_.print(f"  convex two-layer fit of |x| - 0.3 (lam 0.2): objective {f.objective:.6f}, "
                   f"certified gap {_shown_gap(f.gap)}, {f.n_neurons} neurons; "
                   f"collapse above lam = {t.lam:.4f}")
