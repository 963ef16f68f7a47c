"""The ``explain`` command: why a model decides as it does at a point, the nearest input
with another decision (why not), and the decision rules of a box.

Example:
    $ relulab explain policy.onnx --x 0.1,-0.3 --box -1:1 --features names.txt
    $ relulab explain policy.onnx --x 0.1,-0.3 --why-not 2 --norm l2 --json
    $ relulab explain policy.onnx --rules --box -1:1 --markdown
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import typer
from rich.table import Table

from ..errors import RelulabError
from ..tolerance import MATCH_RTOL
from ._common import (
    JSON_OPT,
    check_seconds,
    console,
    load_model_arg,
    parse_box,
    parse_floats,
    print_json,
)

__all__ = ["register", "tour"]


def _target(text: str, m: int, classes):
    t = text.strip()
    if classes is not None and t in classes:   # a class name wins over the sign words
        return t
    if t.lower() in ("positive", "negative", "pos", "neg"):
        return t.lower()
    try:
        return int(t)
    except ValueError:
        raise RelulabError(f"--why-not: {text!r} is not a class index (0..{m - 1}), a class name "
                           "or positive/negative") from None


def _names(arg: str | None, what: str):
    from ..explain import read_names

    if arg is None:
        return None
    if arg.endswith(".txt") or Path(arg).is_file():  # a file of names, one a line
        return read_names(arg)
    return tuple(s.strip() for s in arg.split(",") if s.strip())  # inline, one name or more


def explain_cmd(
    model: str = typer.Argument(..., help="Model file (.onnx, .nnet, .npz, .pt)."),
    x: str = typer.Option(None, "--x", help='The input, e.g. "0.1,-0.3" (not needed with --rules).'),
    why_not: str = typer.Option(None, "--why-not", help="Target decision: a class index or name, "
                                "or positive/negative for a one-output model."),
    norm: str = typer.Option(None, "--norm", help="Distance of the counterfactual (--why-not): l1, l2 "
                             "or linf [default: l1]."),
    box: str = typer.Option(None, "--box", help="Domain: lo:hi or lo1:hi1,lo2:hi2,... (default -1:1)."),
    features: str = typer.Option(None, "--features", help="Feature names: a file (one a line) or "
                                 '"a,b,c".'),
    classes: str = typer.Option(None, "--classes", help='Class names: a file or "left,right,...".'),
    immutable: str = typer.Option(None, "--immutable", help='Features the counterfactual must keep, '
                                  'e.g. "age,x3".'),
    rules: bool = typer.Option(False, "--rules", help="Decision rules of the whole box instead."),
    markdown: bool = typer.Option(False, "--markdown", help="Print Markdown instead of tables."),
    time_limit: float = typer.Option(None, "--time-limit", help="Seconds (why-not: the answer then "
                                     "carries a gap; --rules: a stopped enumeration is partial, "
                                     "a stopped merge leaves more, still exact, rules)."),
    json_out: bool = JSON_OPT,
) -> None:
    """Explain a model's decisions exactly: why (the region rule and a minimal certified
    interval rule at --x), why not (the nearest input with another decision, --why-not),
    or the decision rules of a box (--rules).

    Example: relulab explain policy.onnx --x 0.1,-0.3 --why-not 1 --norm l2
    """
    from .. import explain as E
    from ..explain.features import feature_names

    # an option of another mode was dropped without a word (--norm linf without --why-not
    # looked used); refused before the model is read
    if rules and (x is not None or why_not is not None):
        raise RelulabError(f"{'--x' if x is not None else '--why-not'} does not apply to --rules "
                           "(the rules cover the whole --box); give one or the other")
    if why_not is None and (norm is not None or immutable is not None):
        raise RelulabError(f"{'--norm' if norm is not None else '--immutable'} applies to --why-not only")
    norm = "l1" if norm is None else norm
    net = load_model_arg(model)
    d = net.input_dim
    dom = parse_box(box, d)
    names = feature_names(_names(features, "--features"), d)
    cls = _names(classes, "--classes")
    if rules:
        dr = E.decision_rules(net, dom, features=names, class_names=cls,
                              progress=not (json_out or markdown),
                              time_limit=check_seconds(time_limit, "--time-limit"))
        if json_out:
            print_json(dr)
        elif markdown:
            _write(dr.markdown())
        else:
            console.print(E.rules_table(list(dr.rules), title=f"decision rules of {model} on {dom!r}"))
            near = dr.info.get("near_ties", 0)
            how = ("exact by construction" if not near else
                   f"NOT certified: the region enumeration left {near} sign decision(s) too close "
                   "to call, so a thin region may be missing and a rule near it may be wrong")
            console.print(f"{dr.n_regions} linear regions, {dr.n_pieces} pieces -> {dr.n_rules} "
                          f"convex rules ({dr.method}) in {dr.times['total']:.2f} s; {how}")
            if dr.partial:
                console.print(f"PARTIAL: the enumeration stopped early; the rules cover "
                              f"{100 * dr.covered_fraction:.2f}% of the box only")
            if dr.info.get("merge_stopped_at_time_limit"):
                console.print("the time limit stopped the merging: every rule is exact, some "
                              "could be merged further")
        return
    if x is None:
        raise RelulabError("give --x (the input to explain) or --rules")
    xv = parse_floats(x, "--x")
    if not np.all(np.isfinite(xv)):
        raise RelulabError(f"--x {x}: the input must be finite numbers (no NaN or inf)")
    if why_not is not None:
        if norm not in E.NORMS:
            raise RelulabError(f"--norm: unknown norm {norm!r}; use l1, l2 or linf")
        mutable = None
        if immutable:
            fixed = {names[E.features.feature_index(f.strip(), names)] for f in immutable.split(",")
                     if f.strip()}
            mutable = [n for n in names if n not in fixed]
        r = E.why_not(net, xv, _target(why_not, net.output_dim, cls), dom, norm=norm,
                      mutable=mutable, features=names, class_names=cls,
                      time_limit=check_seconds(time_limit, "--time-limit"))
        if json_out:
            print_json(r)
            return
        if markdown:
            _write(_why_not_md(r))
            return
        color = {"optimal": "green", "feasible": "yellow", "infeasible": "red"}.get(r.status, "yellow")
        console.print(f"[{color}]{r.status}[/{color}]: {_unprefixed(r)}", highlight=False)
        if r.counterfactual is not None:
            t = Table(title=f"counterfactual ({r.norm}, {r.time:.2f} s)")
            for col in ("feature", "x", "counterfactual", "change"):
                t.add_column(col, justify="right")
            for i, n in enumerate(names):
                dv = r.counterfactual[i] - r.x[i]
                t.add_row(n, f"{r.x[i]:.6g}", f"{r.counterfactual[i]:.6g}",
                          "" if abs(dv) <= MATCH_RTOL * (1 + abs(r.x[i])) else f"{dv:+.6g}")
            console.print(t)
            console.print(f"distance {r.distance:.9g}, proven lower bound {r.lower_bound:.9g}")
        return
    r = E.why(net, xv, dom, features=names, class_names=cls,
              time_limit=check_seconds(time_limit, "--time-limit"))
    if json_out:
        print_json(r)
        return
    if markdown:
        _write(_why_md(r))
        return
    console.print(r.text(), highlight=False)


def _write(text: str) -> None:
    """Plain stdout: Markdown must not be wrapped or styled by rich."""
    import sys

    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _why_md(r) -> str:
    """The why-explanation in Markdown, with the same qualifiers as its text: minimal or
    not shown minimal, certified or not, and why a run is partial or has no rule."""
    lines = [f"**Decision:** {r.decision} (f(x) = {np.array2string(r.output, precision=4)})", "",
             f"- In its linear region ({r.region_rule.certificate_text()}): "
             f"{r.region_rule.markdown()}"]
    if r.rule is not None:
        lines.append(f"- Decision rule ({'minimal' if r.rule.minimal else 'not shown minimal'}, "
                     f"{r.rule.certificate_text()}): {r.rule.markdown()}")
    else:
        lines.append(f"- No decision rule: {r.no_rule_reason}")
    if r.status != "complete":
        lines.append(f"- **Partial:** {r.info.get('stopped')}")
    return "\n".join(lines) + "\n"


def _unprefixed(r) -> str:
    """The result's text without a leading "STATUS: " (printed before it already)."""
    t = r.text()
    return t[len(r.status) + 2:] if t.startswith(f"{r.status}: ") else t


def _why_not_md(r) -> str:
    if r.counterfactual is None:
        return f"**{r.status}**: {_unprefixed(r)}\n"
    rows = ["| feature | x | counterfactual |", "|---|---|---|"]
    rows += [f"| `{c['feature']}` | {c['from']:.6g} | {c['to']:.6g} |" for c in r.changed]
    return f"**{r.status}**: {_unprefixed(r)}\n\n" + "\n".join(rows) + "\n"


def register(app: typer.Typer) -> None:
    app.command("explain")(explain_cmd)


def tour(console_) -> None:
    """A tiny 2-D classifier: why at a point, why not another class, its decision rules."""
    from .. import explain as E
    from ..domain import Box
    from ..network import Network

    rng = np.random.default_rng(1)
    net = Network([rng.normal(size=(8, 2)), rng.normal(size=(8, 8)) / 3, rng.normal(size=(3, 8))],
                  [rng.normal(size=8) * 0.3, rng.normal(size=8) * 0.3, np.zeros(3)])
    box = Box([-1, -1], [1, 1])
    x = np.array([0.2, -0.4])
    names = ("speed", "gap")
    console_.rule("Explanations: why, why not, decision rules (exact, certified)")
    w = E.why(net, x, box, features=names)
    console_.print(f"at x = {x.tolist()}: {w.decision}")
    if w.rule is not None:
        console_.print(f"  because {w.rule.text(3)}  ("
                       f"{'MILP-certified' if w.rule.certified else 'NOT certified'}, "
                       f"{'minimal' if w.rule.minimal else 'not shown minimal'})", highlight=False)
    other = (int(np.argmax(net(x[None])[0])) + 1) % 3
    wn = E.why_not(net, x, other, box, norm="l2", features=names)
    console_.print(f"  why not class {other}? {wn.text(3)}", highlight=False)
    dr = E.decision_rules(net, box, features=names)
    console_.print(f"  decision rules of the box: {dr.n_regions} regions -> {dr.n_rules} convex rules, "
                   f"exact; largest: {max(dr.rules, key=lambda r: r.volume_fraction).text(3)}",
                   highlight=False)
    console_.print("  try: relulab explain MODEL --x 0.2,-0.4 --why-not 1 --norm l2")
