"""The ``lipschitz`` command: exact or bracketed Lipschitz constants for several norms.

Example:
    $ relulab lipschitz model.onnx --box -1:1 --p 1,2,inf --time-limit 60 --json
"""

from __future__ import annotations

import numpy as np
import typer
from rich.table import Table

from ..errors import RelulabError
from ._common import JSON_OPT, check_seconds, console, load_model_arg, parse_box, print_json

__all__ = ["register", "tour", "parse_norms"]


def parse_norms(items: list[str] | None) -> list[float]:
    """``["1,2", "inf"]`` -> ``[1.0, 2.0, inf]`` (commas or spaces, repeated options)."""
    from ..lipschitz.norms import check_p

    if not items:
        return [2.0]
    out = []
    for it in items:
        for tok in it.replace(",", " ").split():
            out.append(check_p(tok, "--p"))
    if not out:
        raise RelulabError("--p: no norm given")
    return out


def _fmt(v: float) -> str:
    return "inf" if not np.isfinite(v) else f"{v:.8g}"


def register(app: typer.Typer) -> None:
    @app.command("lipschitz")
    def lipschitz_cmd(
        model: str = typer.Argument(..., help="Model file (.onnx, .nnet, .npz, .pt)."),
        box: str = typer.Option(None, "--box", help='Input box "lo:hi" or "lo1:hi1,lo2:hi2,..."; '
                                "omitted: the global constant over all of R^d."),
        p: list[str] = typer.Option(None, "--p", help='Input norm(s): "1,2,inf" or repeat --p (default 2).'),
        q: str = typer.Option(None, "--q", help="Output norm (needed for several outputs; default: same as p)."),
        method: str = typer.Option("auto", "--method", help="auto | enumerate | milp | bab | bounds."),
        time_limit: float = typer.Option(None, "--time-limit", help="Seconds per norm; returns the bracket so far."),
        json_out: bool = JSON_OPT,
    ) -> None:
        """Lipschitz constant of MODEL over a box (or R^d): lower and upper bounds, status
        (exact only when they meet) and the route that closed the bracket.

        Example: relulab lipschitz net.onnx --box -1:1 --p 1,inf --time-limit 30
        """
        from ..lipschitz import lipschitz
        from ..lipschitz.norms import check_p

        net = load_model_arg(model)
        dom = parse_box(box, net.input_dim) if box is not None else None
        ps = parse_norms(p)
        results = []
        for pv in ps:
            if q is not None:
                qv = check_p(q, "--q")
            else:
                qv = pv if net.output_dim > 1 else None
            results.append(lipschitz(net, dom, p=pv, q=qv, method=method,
                                     time_limit=check_seconds(time_limit, "--time-limit")))
        if json_out:
            print_json({"model": model, "domain": "R^d" if dom is None else dom.to_dict(),
                        "results": results})
            return
        where = "R^d" if dom is None else repr(dom)
        t = Table(title=f"Lipschitz constant of {net!r} over {where}")
        for c in ("p", "q", "lower", "upper", "status", "route", "time (s)"):
            t.add_column(c, justify="right", no_wrap=True)
        for r in results:
            t.add_row(_fmt(r.p), "-" if r.q is None else _fmt(r.q), _fmt(r.lower), _fmt(r.upper),
                      r.status + (" (partial)" if r.partial else ""), r.method, f"{r.time:.2f}")
        console.print(t)


def tour(console) -> None:
    """Exact constants of a small network for three norms, and a positivity question."""
    from ..domain import Box
    from ..lipschitz import is_positive, lipschitz
    from ..network import Network

    console.rule("Lipschitz constants: exact routes, bounds, brackets")
    rng = np.random.default_rng(5)
    net = Network([rng.normal(size=(8, 2)), rng.normal(size=(6, 8)) / 3, rng.normal(size=(1, 6)) / 3],
                  [rng.normal(size=8) * 0.3, rng.normal(size=6) * 0.3, np.zeros(1)])
    B = Box([-1, -1], [1, 1])
    for p in (1.0, 2.0, float("inf")):
        r = lipschitz(net, B, p=p)
        ups = ", ".join(f"{k} {v:.4f}" for k, v in r.uppers.items())
        console.print(f"  p={p:g}: L = {r.lower:.6f} ({r.status}, {r.method}); upper bounds: {ups}")
    g = lipschitz(net, None, p=1)
    console.print(f"  global over R^2, p=1: L = {g.lower:.6f} ({g.status}, {g.method})")
    pos = is_positive(net)
    console.print(f"  is f positive somewhere on R^2? {pos.positive} (witness {np.round(pos.witness, 4).tolist() if pos.witness is not None else None})")
