"""Verification commands: ``verify``, ``verify-batch`` and ``range``.

Example:
    $ relulab verify net.onnx prop.vnnlib --timeout 60 --out result.txt
    $ relulab verify-batch instances.csv --workers 2 --timeout 60
    $ relulab range net.onnx --box -1:1 --json
"""

from __future__ import annotations

import csv
import os
import time
from pathlib import Path

import numpy as np
import typer
from rich.table import Table

from ..errors import FormatError, RelulabError
from ._common import JSON_OPT, console, load_model_arg, parse_box, print_json

__all__ = ["register", "tour", "vnncomp_text", "read_instances", "run_instance"]


def vnncomp_text(result) -> str:
    """The VNN-COMP result file: ``unsat``; ``sat`` and the counterexample
    ``((X_0 v) ... (Y_0 v) ...)``; ``timeout``; or ``unknown``."""
    word = result.vnncomp
    if word != "sat":
        return word + "\n"
    pairs = [f"(X_{i} {float(v)!r})" for i, v in enumerate(np.asarray(result.counterexample).ravel())]
    pairs += [f"(Y_{i} {float(v)!r})" for i, v in enumerate(np.asarray(result.output).ravel())]
    return "sat\n(" + "\n ".join(pairs) + ")\n"


def _write_atomic(path: str, text: str) -> None:
    from ..io import atomic_path

    with atomic_path(path) as tmp, open(tmp, "w") as fh:
        fh.write(text)


def read_instances(csv_path: str | os.PathLike) -> list[tuple[str, str, float]]:
    """Rows ``onnx,vnnlib,timeout`` of a benchmark CSV, paths made absolute relative to
    the CSV's folder."""
    p = Path(csv_path)
    if not p.is_file():
        raise FormatError(f"{csv_path}: no such file")
    base = p.parent
    out = []
    with open(p, newline="") as fh:
        for lineno, row in enumerate(csv.reader(fh), start=1):
            if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
                continue
            if len(row) < 2:
                raise FormatError(f"{csv_path}:{lineno}: expected onnx,vnnlib[,timeout]")
            if lineno == 1 and row[0].strip().lower() in ("onnx", "model", "network"):
                continue  # a header
            try:
                t = float(row[2]) if len(row) > 2 and row[2].strip() else 60.0
            except ValueError:
                raise FormatError(f"{csv_path}:{lineno}: timeout {row[2]!r} is not a number") from None
            out.append((str(base / row[0].strip()), str(base / row[1].strip()), t))
    return out


def run_instance(args: tuple[str, str, float]) -> dict:
    """Verify one (model, property, timeout) triple; a dict for tables and JSON (runs in a
    worker process in ``verify-batch``)."""
    model, prop_path, timeout = args
    t0 = time.time()
    c0 = time.process_time()
    try:
        from ..io import load_model
        from ..io.vnnlib import load_vnnlib
        from ..verify import verify

        net = load_model(model)
        prop = load_vnnlib(prop_path, n_inputs=net.input_dim, n_outputs=net.output_dim)
        r = verify(net, prop, timeout=timeout)
        d = r.to_dict()
        d["result"] = r.vnncomp
    except RelulabError as e:
        d = {"status": "error", "result": "error", "reason": str(e), "time": time.time() - t0}
    except Exception as e:  # noqa: BLE001 - one failing instance must not stop a batch
        d = {"status": "error", "result": "error", "reason": f"{type(e).__name__}: {e}",
             "time": time.time() - t0}
    # cpu: this process's CPU seconds (less sensitive than wall time to a loaded machine)
    d.update(model=model, property=prop_path, wall=time.time() - t0, cpu=time.process_time() - c0)
    return d


def _prop_name(path: str) -> str:
    return Path(path).stem


def _model_name(path: str) -> str:
    return Path(path).stem


def _summary(rows: list[dict]) -> list[dict]:
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(_prop_name(r["property"]), []).append(r)
    out = []
    for name in sorted(by):
        rs = by[name]
        times = np.array([r["wall"] for r in rs])
        solved = [r for r in rs if r["status"] in ("holds", "violated")]
        row = {
            "property": name,
            "instances": len(rs),
            "solved": len(solved),
            "holds": sum(r["status"] == "holds" for r in rs),
            "violated": sum(r["status"] == "violated" for r in rs),
            "unknown": sum(r["status"] in ("unknown", "error") for r in rs),
            "total_time": float(times.sum()),
            "median_time": float(np.median(times)),
            "max_time": float(times.max()),
        }
        if any("expected" in r for r in rs):
            row["correct"] = sum(r.get("correct") is True for r in rs)
            row["wrong"] = sum(r.get("correct") is False for r in rs)
        out.append(row)
    return out


def _read_expected(path: str) -> dict[tuple[str, str], str]:
    exp = {}
    base = Path(path).parent
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            key = (str(base / row["onnx"].strip()), str(base / row["vnnlib"].strip()))
            exp[key] = row["expected"].strip()
    return exp


def run_batch(
    instances: list[tuple[str, str, float]],
    workers: int = 2,
    show_progress: bool = True,
    on_result=None,
    console=console,
) -> list[dict]:
    """Run instances over ``workers`` processes (results in input order)."""
    import concurrent.futures as cf
    import multiprocessing as mp

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    results: list[dict | None] = [None] * len(instances)
    progress = Progress(
        TextColumn("[bold]verify"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.description}"), console=console, disable=not show_progress, transient=False,
    )
    with progress:
        task = progress.add_task("", total=len(instances))
        if workers <= 1:
            for i, inst in enumerate(instances):
                results[i] = run_instance(inst)
                if on_result:
                    on_result(results[i])
                progress.update(task, advance=1, description=_line(results[i]))
        else:
            ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
            with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as ex:
                futs = {ex.submit(run_instance, inst): i for i, inst in enumerate(instances)}
                for f in cf.as_completed(futs):
                    i = futs[f]
                    results[i] = f.result()
                    if on_result:
                        on_result(results[i])
                    progress.update(task, advance=1, description=_line(results[i]))
    return [r for r in results if r is not None]


def _line(r: dict) -> str:
    return f"{_model_name(r['model'])} {_prop_name(r['property'])}: {r['status']} ({r['wall']:.2f} s)"


def register(app: typer.Typer) -> None:
    @app.command("verify")
    def verify_cmd(
        model: str = typer.Argument(..., help="Model file (.onnx, .nnet, .npz, .pt)."),
        prop: str = typer.Argument(..., help="Property file (.vnnlib)."),
        timeout: float = typer.Option(60.0, "--timeout", help="Seconds before answering timeout."),
        out: str = typer.Option(None, "--out", help="Write the VNN-COMP result file here."),
        json_out: bool = JSON_OPT,
    ) -> None:
        """Decide a VNN-LIB property: holds (unsat), violated (sat, with a re-checked
        counterexample) or unknown (timeout)."""
        from ..io.vnnlib import load_vnnlib
        from ..verify import verify

        if timeout <= 0:
            raise RelulabError(f"--timeout must be positive, got {timeout}")
        net = load_model_arg(model)
        p = load_vnnlib(prop, n_inputs=net.input_dim, n_outputs=net.output_dim)
        r = verify(net, p, timeout=timeout)
        if out:
            _write_atomic(out, vnncomp_text(r))
        if json_out:
            d = r.to_dict()
            d["result"] = r.vnncomp
            print_json(d)
            return
        color = {"holds": "green", "violated": "red"}.get(r.status, "yellow")
        console.print(f"[{color}]{r.status}[/{color}] ({r.vnncomp}) in {r.time:.3f} s by {r.method}"
                      + (f"; {r.reason}" if r.reason else ""))
        if r.counterexample is not None:
            console.print(f"counterexample x = {np.array2string(r.counterexample, precision=9)}")
            console.print(f"output       f(x) = {np.array2string(r.output, precision=9)}")

    @app.command("verify-batch")
    def verify_batch_cmd(
        instances: str = typer.Argument(..., help="CSV with rows onnx,vnnlib,timeout."),
        workers: int = typer.Option(2, "--workers", help="Worker processes."),
        timeout: float = typer.Option(None, "--timeout", help="Cap every instance's timeout (s)."),
        expected: str = typer.Option(None, "--expected", help="CSV onnx,vnnlib,expected to score against."),
        details: bool = typer.Option(False, "--details", help="Also list every instance."),
        json_out: bool = JSON_OPT,
    ) -> None:
        """Run a whole benchmark: progress bar, then solved / time per property."""
        insts = read_instances(instances)
        if not insts:
            raise RelulabError(f"{instances}: no instances")
        if timeout is not None:
            insts = [(a, b, min(t, timeout)) for a, b, t in insts]
        rows = run_batch(insts, workers=max(1, workers), show_progress=not json_out)
        if expected:
            exp = _read_expected(expected)
            for r in rows:
                e = exp.get((r["model"], r["property"]))
                if e is not None:
                    r["expected"] = e
                    if r["status"] in ("holds", "violated"):
                        r["correct"] = r["status"] == e
        summ = _summary(rows)
        if json_out:
            print_json({"summary": summ, "instances": rows})
            return
        if details:
            t = Table(title="instances")
            for col in ("model", "property", "status", "time (s)"):
                t.add_column(col)
            for r in rows:
                t.add_row(_model_name(r["model"]), _prop_name(r["property"]), r["status"], f"{r['wall']:.2f}")
            console.print(t)
        t = Table(title=f"verify-batch: {len(rows)} instances, {workers} workers")
        cols = ["property", "instances", "solved", "holds", "violated", "unknown"]
        if expected:
            cols += ["correct", "wrong"]
        cols += ["total_time", "median_time", "max_time"]
        for c in cols:
            t.add_column(c.replace("_", " "), justify="right")
        for s in summ:
            t.add_row(*(f"{s[c]:.2f}" if isinstance(s[c], float) else str(s[c]) for c in cols))
        console.print(t)

    @app.command("range")
    def range_cmd(
        model: str = typer.Argument(..., help="Model file."),
        box: str = typer.Option(None, "--box", help='Input box "lo:hi" or "lo1:hi1,lo2:hi2,..." (default -1:1).'),
        time_limit: float = typer.Option(None, "--time-limit", help="Seconds for all MILPs together."),
        tighten: bool = typer.Option(False, "--tighten", help="LP bound tightening before the MILPs."),
        json_out: bool = JSON_OPT,
    ) -> None:
        """Exact range of every output over a box (two MILPs per output)."""
        from ..verify import output_range

        net = load_model_arg(model)
        B = parse_box(box, net.input_dim)
        r = output_range(net, B, time_limit=time_limit, tighten=tighten)
        if json_out:
            print_json(r)
            return
        t = Table(title=f"exact output range over {B!r} ({r.status}, {r.time:.2f} s)")
        for c in ("output", "min", "max", "argmin", "argmax"):
            t.add_column(c, justify="right")
        for i in range(net.output_dim):
            t.add_row(str(i), f"{r.lo[i]:.9g}", f"{r.hi[i]:.9g}",
                      np.array2string(r.argmin[i], precision=4), np.array2string(r.argmax[i], precision=4))
        console.print(t)


def tour(console) -> None:
    """Exact maximum of a tiny network, then a property decided both ways."""
    from ..bounds import interval_bounds, symbolic_bounds
    from ..domain import Box
    from ..network import Network
    from ..spec import OutputConstraint, Specification
    from ..verify import maximize, verify

    console.rule("Verification: bounds, exact maximum, properties decided")
    rng = np.random.default_rng(3)
    net = Network([rng.normal(size=(8, 2)), rng.normal(size=(8, 8)) / 3, rng.normal(size=(1, 8)) / 3],
                  [rng.normal(size=8) * 0.3, rng.normal(size=8) * 0.3, np.zeros(1)])
    B = Box([-1, -1], [1, 1])
    r = maximize(net, B)
    ib, sb = interval_bounds(net, B), symbolic_bounds(net, B)
    console.print(f"network {net!r} on {B!r}")
    console.print(f"  bounds on f: interval [{ib.out_lo[0]:.4f}, {ib.out_hi[0]:.4f}], "
                  f"symbolic [{sb.out_lo[0]:.4f}, {sb.out_hi[0]:.4f}]")
    console.print(f"  exact max f = {r.value:.6f} at x = {np.round(r.x, 4).tolist()} "
                  f"(MILP, {r.n_binaries} binaries, LP relaxation {r.lp_value:.4f}, {r.time:.3f} s)")
    for thr in (r.value + 1e-3, r.value - 1e-3):
        spec = Specification(B, [OutputConstraint(np.array([[-1.0]]), np.array([-thr]))])
        v = verify(net, spec, timeout=5)
        console.print(f"  property 'f(x) < {thr:.6f}': {v.status} in {v.time:.3f} s")
