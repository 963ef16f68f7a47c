"""Verification commands: ``verify``, ``verify-batch`` and ``range``.

Example:
    $ relulab verify net.onnx prop.vnnlib --timeout 60 --memory 4 --out result.txt
    $ relulab verify-batch instances.csv --workers 2 --timeout 60
    $ relulab range net.onnx --box -1:1 --timeout 30 --json
"""

from __future__ import annotations

import csv
import io
import json
import os
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from ..errors import FormatError, RelulabError
from ..io import check_writable
from ..limits import ResourceLimitError
from ..results import read_json_lines, to_jsonable
from ._common import (
    JSON_OPT,
    box_text,
    check_gigabytes,
    check_seconds,
    console,
    err_console,
    load_model_arg,
    parse_box,
    print_json,
    read_text_arg,
    resolve_path,
)

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
    base = p.parent
    out = []
    seen: dict[str, int] = {}
    text = read_text_arg(p, "a CSV text file")
    for lineno, row in enumerate(csv.reader(io.StringIO(text, newline="")), start=1):
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        if len(row) < 2:
            raise FormatError(f"{csv_path}:{lineno}: expected onnx,vnnlib[,timeout]")
        if lineno == 1 and row[0].strip().lower() in ("onnx", "model", "network"):
            continue  # a header
        if not row[0].strip() or not row[1].strip():
            raise FormatError(f"{csv_path}:{lineno}: expected onnx,vnnlib[,timeout] (a field is empty)")
        try:
            t = float(row[2]) if len(row) > 2 and row[2].strip() else 60.0
        except ValueError:
            raise FormatError(f"{csv_path}:{lineno}: timeout {row[2]!r} is not a number") from None
        if not (np.isfinite(t) and t > 0):
            raise FormatError(f"{csv_path}:{lineno}: timeout {row[2]!r} must be a positive number of seconds")
        a, b = base / row[0].strip(), base / row[1].strip()
        if not out and not a.exists() and not b.exists():
            # most likely an unknown header, or a CSV of something else: one error, not
            # one failed instance per row
            raise FormatError(f"{csv_path}:{lineno}: neither {row[0].strip()!r} nor {row[1].strip()!r} "
                              "exists; expected rows onnx,vnnlib[,timeout] (header optional)")
        key = _instance_key(str(a), str(b))
        if key in seen:
            # results are keyed by model and property (the report, --resume): a second row
            # would overwrite the first one's answer
            raise FormatError(f"{csv_path}:{lineno}: repeats the model and property of line {seen[key]}; "
                              "give each instance once")
        seen[key] = lineno
        out.append((str(a), str(b), t))
    return out


# what run_instance imports when it runs: imported before a batch starts (by the driver
# before it forks local workers; by each Ray worker when it starts), not inside items
BATCH_MODULES = ("relulab.cli.verify", "relulab.io.vnnlib", "relulab.limits", "relulab.verify",
                 "relulab.io", "relulab.io.onnx", "onnx", "highspy")


def run_instance(args: tuple[str, str, float]) -> dict:
    """Verify one (model, property, timeout) triple; a dict for tables and JSON (runs in a
    worker process in ``verify-batch``)."""
    model, prop_path, timeout = args[:3]
    memory_gb = args[3] if len(args) > 3 else None
    mem = None if memory_gb is None else int(float(memory_gb) * 2**30)
    t0 = time.time()
    c0 = time.process_time()
    try:
        from ..io.vnnlib import load_vnnlib
        from ..limits import memory_limit
        from ..verify import load_for_verify, verify

        # the budget that relulab.limits enforces while loading and verifying this instance
        with memory_limit(mem):
            net = load_for_verify(model)
            n_in, n_out = _model_dims(net)
            prop = load_vnnlib(prop_path, n_inputs=n_in, n_outputs=n_out)
            # the clock starts after loading (the timeout is the verification's)
            r = verify(net, prop, timeout=timeout, memory=mem)
        d = r.to_dict()
        d["result"] = r.vnncomp
    except ResourceLimitError as e:  # loading exceeded the budget: unknown, like verify's phases
        r = _memory_unknown(e, time.time() - t0)
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


def _memory_unknown(err: Exception, seconds: float):
    """The answer when loading the model exceeded the memory budget: unknown, with the
    reason "memory: ..." (as when a verification phase stops on the budget)."""
    from ..verify import VerificationResult

    msg = str(err)
    return VerificationResult("unknown", seconds, method="load",
                              reason=msg if msg.startswith("memory") else f"memory: {msg}")


def _model_dims(model) -> tuple[int, int]:
    """Inputs and outputs of a Network or of a structured relulab.crown.BoundGraph."""
    if hasattr(model, "input_dim"):
        return model.input_dim, model.output_dim
    return int(np.prod(model.input_shape)), int(model.output_dim)


def _memory_bytes(memory: float | None) -> int | None:
    if check_gigabytes(memory) is None:
        return None
    return int(memory * 2**30)


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
            "unknown": sum(r["status"] == "unknown" for r in rs),
            "errors": sum(r["status"] == "error" for r in rs),
            "total_time": float(times.sum()),
            "median_time": float(np.median(times)),
            "max_time": float(times.max()),
        }
        if any("expected" in r for r in rs):
            row["correct"] = sum(r.get("correct") is True for r in rs)
            row["wrong"] = sum(r.get("correct") is False for r in rs)
        out.append(row)
    return out


def _print_reasons(rows: list[dict], max_names: int = 6) -> None:
    """Why instances were not decided: every error with its reason, unknowns grouped by
    reason (the full list is in --json and --details)."""
    for r in rows:
        if r["status"] == "error":
            console.print(f"error: {_model_name(r['model'])} {_prop_name(r['property'])}: "
                          f"{r.get('reason') or 'no reason given'}", highlight=False, soft_wrap=True)
    groups: dict[str, list[dict]] = {}
    for r in rows:
        if r["status"] == "unknown":
            groups.setdefault(r.get("reason") or "no reason given", []).append(r)
    for why, rs in groups.items():
        names = [f"{_model_name(r['model'])}/{_prop_name(r['property'])}" for r in rs[:max_names]]
        more = f" and {len(rs) - max_names} more" if len(rs) > max_names else ""
        console.print(f"unknown ({why}): {len(rs)} instance(s): {', '.join(names)}{more}",
                      highlight=False, soft_wrap=True)


def _read_expected(path: str) -> dict[str, str]:
    exp = {}
    base = Path(path).parent
    try:
        fh = open(path, newline="")
    except OSError as e:
        raise FormatError(f"{path}: cannot read ({e.strerror})") from None
    with fh:
        reader = csv.DictReader(fh)
        missing = {"onnx", "vnnlib", "expected"} - set(reader.fieldnames or ())
        if missing:
            raise FormatError(f"{path}:1: the header must name onnx,vnnlib,expected "
                              f"(missing {', '.join(sorted(missing))})")
        for row in reader:
            # resolved, as the run's own rows are keyed (a path spelled another way, absolute
            # for relative, matched nothing and the table said "wrong 0")
            key = _instance_key(str(base / (row["onnx"] or "").strip()), str(base / (row["vnnlib"] or "").strip()))
            word = (row["expected"] or "").strip().lower()
            if not word:
                continue  # no known answer: the instance is not scored
            if word not in _EXPECTED_WORDS:
                raise FormatError(f"{path}:{reader.line_num}: expected {row['expected']!r}; write "
                                  "holds or violated (or VNN-COMP's unsat or sat), or leave it empty")
            exp[key] = _EXPECTED_WORDS[word]
    return exp


# the answers --expected may give, in relulab's words and in VNN-COMP's (what --out writes)
_EXPECTED_WORDS = {"holds": "holds", "unsat": "holds", "violated": "violated", "sat": "violated"}


def run_batch(
    instances: list[tuple],
    workers: int | None = 2,
    show_progress: bool = True,
    on_result=None,
    console=console,
    backend: str = "local",
    address: str | None = None,
) -> tuple[list[dict], bool]:
    """Run instances over ``workers`` (local processes or Ray); returns the rows in input
    order and whether the batch was cut short (Ctrl-C). Longest time limits start first.
    ``on_result(row)`` sees each row as it finishes (to append it to a results file)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..parallel import pmap

    order = sorted(range(len(instances)), key=lambda i: -float(instances[i][2]))
    results: list[dict | None] = [None] * len(instances)
    progress = Progress(
        TextColumn("[bold]verify"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.description}"), console=console,
        # piped or redirected output gets no bar (it would only leave partial lines)
        disable=not (show_progress and console.is_terminal), transient=False,
    )

    def dead(inst, reason):
        return {"status": "error", "result": "error", "reason": reason, "time": 0.0,
                "model": inst[0], "property": inst[1], "wall": 0.0, "cpu": 0.0}

    interrupted = False
    with progress:
        task = progress.add_task("", total=len(instances))
        try:
            for k, row in pmap(run_instance, [instances[i] for i in order], backend=backend,
                               workers=workers, address=address, on_error=dead,
                               preload=BATCH_MODULES):
                results[order[k]] = row
                if on_result:
                    on_result(row)
                progress.update(task, advance=1, description=_line(row))
        except KeyboardInterrupt:
            interrupted = True
    done = [r for r in results if r is not None]
    return done, interrupted or len(done) < len(instances)


def _instance_key(model: str, prop: str) -> str:
    return f"{Path(model).resolve()}|{Path(prop).resolve()}"


def read_results(path: str) -> dict[str, dict]:
    """Rows of a results file written by ``verify-batch --results`` (JSON lines), by
    instance; a torn last line (the driver stopped while writing) is cut off, so its
    instance runs again; another unreadable line is an error naming it."""
    rows: dict[str, dict] = {}
    for r in read_json_lines(path, "verify-batch --results"):
        if not (isinstance(r, dict) and "model" in r and "property" in r):
            raise RelulabError(f"{path}: a row without 'model' and 'property' is no "
                               "verify-batch result")
        rows[_instance_key(r["model"], r["property"])] = r
    return rows


def _line(r: dict) -> str:
    return f"{_model_name(r['model'])} {_prop_name(r['property'])}: {r['status']} ({r['wall']:.2f} s)"


def register(app: typer.Typer) -> None:
    @app.command("verify")
    def verify_cmd(
        model: str = typer.Argument(..., help="Model file (.onnx, .nnet, .npz, .pt)."),
        prop: str = typer.Argument(..., help="Property file (.vnnlib)."),
        timeout: float = typer.Option(
            60.0, "--timeout", "--time-limit", help="Seconds of verification (after loading) before answering "
            "unknown (timeout); every phase stops in time."),
        memory: float = typer.Option(
            None, "--memory", help="Memory budget in GB (default: half of the available "
            "memory); a phase that would exceed it ends unknown (memory: ...)."),
        method: str = typer.Option(
            "auto", "--method", help="auto (input splitting for at most 8 inputs; 9-16 "
            "inputs: input splitting first, then ReLU splitting; ReLU splitting above), "
            "input-split, relu-split or milp."),
        out: str = typer.Option(None, "--out", help="Write the VNN-COMP result file here."),
        nnet_units: str = typer.Option(
            "raw", "--nnet-units", help="For an .nnet model: raw (the file's function: clip, "
            "normalise, run, de-normalise) or normalised (the bare network on normalised "
            "units, as the VNN-COMP ACAS Xu properties are stated)."),
        json_out: bool = JSON_OPT,
    ) -> None:
        """Decide a VNN-LIB property: holds (unsat), violated (sat, with a re-checked
        counterexample) or unknown (timeout, memory).

        An attack runs first; then branch and bound over input splits (at most 8 inputs;
        with 9-16 inputs on 30% of the time, then ReLU splits) or over ReLU splits (more
        inputs; ONNX models with convolutions, pooling or batch
        norms stay structured when torch is installed). The answer says which method
        decided it.

        Example: relulab verify net.onnx prop.vnnlib --timeout 60 --memory 4 --out result.txt
        """
        from ..io.vnnlib import load_vnnlib
        from ..limits import memory_limit
        from ..verify import load_for_verify, verify

        check_seconds(timeout, "--timeout/--time-limit")
        if nnet_units not in ("raw", "normalised", "normalized"):
            raise RelulabError(f"--nnet-units: expected raw or normalised, got {nnet_units!r}")
        if out:
            check_writable(out, "--out")  # before the verifier runs, not after it
        mem = _memory_bytes(memory)
        path = resolve_path(model)
        is_nnet = Path(path).suffix.lower() == ".nnet"
        nnet_model = None
        t0 = time.time()
        try:
            with memory_limit(mem):  # loading (a dense lowering) obeys the budget too
                if Path(path).suffix.lower() in (".pt", ".pth"):
                    net = load_model_arg(model)
                elif is_nnet:
                    from ..io.nnet import nnet_network, read_nnet

                    nnet_model = read_nnet(path)   # (read once: the network and the note below)
                    net = nnet_network(nnet_model, path, normalize=nnet_units == "raw")
                else:
                    net = load_for_verify(path)
                n_in, n_out = _model_dims(net)
                p = load_vnnlib(resolve_path(prop), n_inputs=n_in, n_outputs=n_out)
                r = verify(net, p, timeout=timeout, memory=mem, method=method)
        except ResourceLimitError as e:  # the model itself does not fit: unknown, not a crash
            r = _memory_unknown(e, time.time() - t0)
        if out:
            _write_atomic(out, vnncomp_text(r))
        if json_out:
            d = r.to_dict()
            d["result"] = r.vnncomp
            print_json(d)
            return
        if nnet_model is not None and nnet_units == "raw" and nnet_model.normalises:
            # the same file means two functions; say which one was verified (VNN-COMP's
            # ACAS Xu properties are stated on the normalised one)
            console.print("[dim]the .nnet model is read in its raw units (clipping and "
                          "normalisation folded in); --nnet-units normalised verifies the bare "
                          "network on normalised units[/dim]")
        color = {"holds": "green", "violated": "red"}.get(r.status, "yellow")
        # the VNN-COMP word in brackets only where it differs ("unknown (unknown)" read oddly)
        word = f" ({r.vnncomp})" if r.vnncomp != r.status else ""
        console.print(f"[{color}]{r.status}[/{color}]{word} in {r.time:.3f} s by {r.method}"
                      + (f"; {r.reason}" if r.reason else ""))
        if r.counterexample is not None:
            console.print(f"counterexample x = {np.array2string(r.counterexample, precision=9)}")
            console.print(f"output       f(x) = {np.array2string(r.output, precision=9)}")

    @app.command("verify-batch")
    def verify_batch_cmd(
        instances: str = typer.Argument(..., help="CSV with rows onnx,vnnlib,timeout."),
        workers: int = typer.Option(None, "--workers", help="Worker processes (local; default 2), or "
                                    "Ray worker actors (default: one per CPU of the cluster)."),
        timeout: float = typer.Option(None, "--timeout", "--time-limit",
                                      help="Cap every instance's timeout (s)."),
        memory: float = typer.Option(
            None, "--memory", help="Memory budget of each instance in GB (default: half of "
            "the memory available to its worker)."),
        ray: str = typer.Option(
            None, "--ray", help="Run on Ray: local (start Ray on this machine for the run), "
            "auto or HOST:PORT (join a cluster). Default: local processes, or the cluster in "
            "RAY_ADDRESS when set."),
        results: str = typer.Option(
            None, "--results", help="Append each instance's answer to this JSON-lines file "
            "as it finishes (nothing finished is lost if the run stops)."),
        resume: bool = typer.Option(
            False, "--resume", help="With --results: skip instances already answered there."),
        expected: str = typer.Option(None, "--expected", help="CSV onnx,vnnlib,expected to score against."),
        details: bool = typer.Option(False, "--details", help="Also list every instance."),
        json_out: bool = JSON_OPT,
    ) -> None:
        """Run a whole benchmark: progress bar, then solved / time per property.

        Instances run longest time limit first, on local worker processes or on Ray; each
        answer can be appended to a results file as it finishes, and --resume answers only
        the instances missing from it. Ctrl-C stops the run and reports what finished
        (marked partial). Instances that end unknown (time limit) and instances that fail
        with an error (unreadable model or property, unsupported operator, a worker that
        died twice) are counted separately, and the reason of each is printed.

        Example: relulab verify-batch instances.csv --workers 2 --timeout 60 --results out.jsonl --resume
        """
        from ..parallel import MAX_WORKERS, lost_to_worker, resolve_backend

        insts = read_instances(instances)
        if not insts:
            raise RelulabError(f"{instances}: no instances")
        if workers is not None and not 1 <= workers <= MAX_WORKERS:
            raise RelulabError(f"--workers must be between 1 and {MAX_WORKERS}, got {workers}")
        check_gigabytes(memory)
        if results:
            check_writable(results, "--results")
        if resume and not results:
            raise RelulabError("--resume needs --results FILE (the answers to resume from)")
        check_seconds(timeout, "--timeout/--time-limit")
        exp = _read_expected(expected) if expected else {}  # before the run, not after it
        if timeout is not None:
            insts = [(a, b, min(t, timeout)) for a, b, t in insts]
        insts = [(a, b, t, memory) for a, b, t in insts]
        backend, address = resolve_backend(ray)
        # (Ray: None, one worker per CPU of the cluster; --workers 2 had capped it at 2)
        workers = workers if workers is not None else (2 if backend == "local" else None)
        previous = read_results(results) if (results and resume) else {}
        # (an instance whose worker died is run again: such losses are mostly transient)
        previous = {k: r for k, r in previous.items() if not lost_to_worker(r)}
        todo = [i for i in insts if _instance_key(i[0], i[1]) not in previous]
        sink = None
        if results:
            Path(results).parent.mkdir(parents=True, exist_ok=True)
            sink = open(results, "a")  # noqa: SIM115 - closed below, also on Ctrl-C
            if sink.tell() and not Path(results).read_bytes().endswith(b"\n"):
                sink.write("\n")  # a torn last line (a stopped run) stays on a line of its own

        def keep(row):
            if sink is not None:
                sink.write(json.dumps(to_jsonable(row)) + "\n")
                sink.flush()

        try:
            new_rows, partial = run_batch(todo, workers=workers, show_progress=not json_out,
                                          on_result=keep, backend=backend, address=address)
        finally:
            if sink is not None:
                sink.close()
        by_key = {**previous, **{_instance_key(r["model"], r["property"]): r for r in new_rows}}
        rows = [by_key[k] for k in (_instance_key(a, b) for a, b, *_ in insts) if k in by_key]
        scored = 0
        if expected:
            for r in rows:
                e = exp.get(_instance_key(r["model"], r["property"]))
                if e is not None:
                    scored += 1
                    r["expected"] = e
                    if r["status"] in ("holds", "violated"):
                        r["correct"] = r["status"] == e
        summ = _summary(rows)
        if expected and scored == 0 and rows:
            err_console.print(f"[yellow]note:[/yellow] no instance of the run is listed in "
                              f"{escape(expected)} (paths compared after resolving them): nothing "
                              "was scored", highlight=False)
        run_info = {"backend": backend if backend == "local" else f"ray ({address or 'local'})",
                    "workers": workers if workers is not None else "one per CPU of the cluster",
                    "resumed": len(insts) - len(todo), "partial": partial}
        if expected:
            run_info["expected_matched"] = scored
        if json_out:
            print_json({"summary": summ, "instances": rows, "run": run_info})
            return
        if details:
            t = Table(title="instances")
            for col in ("model", "property", "status", "time (s)", "reason"):
                t.add_column(col)
            for r in rows:
                t.add_row(_model_name(r["model"]), _prop_name(r["property"]), r["status"],
                          f"{r['wall']:.2f}", r.get("reason", ""))
            console.print(t)
        # short headers and a light frame keep the table inside 80 columns
        where = "local processes" if backend == "local" else f"Ray ({address or 'local'})"
        t = Table(title=f"verify-batch: {len(rows)} of {len(insts)} instances, "
                        f"{'a worker per CPU' if workers is None else f'{workers} workers'}, {where}"
                        + (" (PARTIAL: interrupted)" if partial else ""),
                  box=box.SIMPLE_HEAD, pad_edge=False)
        # (solved = holds + viol., right = solved - wrong and the median time are in --json)
        cols = [("property", "property"), ("instances", "n"), ("holds", "holds"),
                ("violated", "viol."), ("unknown", "unkn."), ("errors", "err.")]
        if expected:
            cols += [("wrong", "wrong")]
        cols += [("total_time", "total s"), ("max_time", "max s")]
        for c, head in cols:
            t.add_column(head, justify="left" if c == "property" else "right", no_wrap=True)
        for s_ in summ:
            t.add_row(*(f"{s_.get(c, 0):.1f}" if isinstance(s_.get(c), float) else str(s_.get(c, 0))
                        for c, _ in cols))
        console.print(t)
        _print_reasons(rows)
        if run_info["resumed"]:
            console.print(f"{run_info['resumed']} instance(s) taken from {results} (--resume)")

    @app.command("range")
    def range_cmd(
        model: str = typer.Argument(..., help="Model file."),
        box: str = typer.Option(None, "--box", help='Input box "lo:hi" or "lo1:hi1,lo2:hi2,..." (default -1:1).'),
        time_limit: float = typer.Option(
            60.0, "--timeout", "--time-limit", help="Seconds for all MILPs together; then the "
            "proven bracket found so far is reported (status time_limit)."),
        memory: float = typer.Option(
            None, "--memory", help="Memory budget in GB (default: half of the available "
            "memory); an MILP that would exceed it is skipped and the answer is the bracket "
            "of the symbolic bounds (status unknown, reason memory: ...)."),
        tighten: bool = typer.Option(False, "--tighten", help="LP bound tightening before the MILPs."),
        json_out: bool = JSON_OPT,
    ) -> None:
        """Range of every output over a box: exact when every MILP is solved, else a bracket.

        For each output the table shows the smallest and largest values found (attained
        at the argmin/argmax inputs) and the proven bounds: the true minimum lies between
        "min proven" and "min found", the true maximum between "max found" and "max
        proven". "exact" (JSON) means every MILP was solved and they coincide to 1e-7
        of the output's size over the box (max |min|, |max|); status "optimal" with exact false means every MILP was solved but the
        solver's tolerances, amplified by large later weights, leave a bracket;
        "time_limit" means a bracket; "unknown" means a MILP would not fit in --memory
        (reason "memory: ...": the bracket comes from the symbolic bounds and a local
        search) or went wrong numerically (reason "numerical: ...").

        Under a time limit the bracket comes from the same bounds as the verifier: the
        MILP's incumbent and proven bound, tightened by input-splitting branch and bound
        (at most 10 inputs) or by the optimised (alpha-CROWN) bound of the whole box.

        Example: relulab range model.onnx --box 0:1 --timeout 30 --memory 2
        """
        from ..limits import memory_limit
        from ..verify import output_range

        check_seconds(time_limit, "--timeout/--time-limit")
        mem = _memory_bytes(memory)
        net = load_model_arg(model)
        B = parse_box(box, net.input_dim)
        show = not json_out and console.is_terminal
        with memory_limit(mem), (console.status(f"solving {2 * net.output_dim} MILPs...")
                                 if show else nullcontext()):
            r = output_range(net, B, time_limit=time_limit, tighten=tighten)
        if json_out:
            print_json(r.to_dict())
            return
        exact = r.exact
        why = (f"{r.status}; {r.reason}" if r.reason else r.status if r.status != "optimal"
               else "solved, but the solver's tolerances leave a bracket")
        kind = "exact output range (to 1e-7 of each output's size)" if exact else f"output range BRACKET ({why}: not proven exact)"
        t = Table(title=f"{kind} over {box_text(B)}, {r.time:.2f} s")
        cols = (("output", "min", "max", "argmin", "argmax") if exact else
                ("output", "min proven", "min found", "max found", "max proven"))
        for c in cols:
            t.add_column(c, justify="right")
        for i in range(net.output_dim):
            if exact:
                t.add_row(str(i), f"{r.lo[i]:.9g}", f"{r.hi[i]:.9g}", _vec_text(r.argmin[i]),
                          _vec_text(r.argmax[i]))
            else:
                t.add_row(str(i), f"{r.lo_bound[i]:.9g}", f"{r.lo[i]:.9g}", f"{r.hi[i]:.9g}",
                          f"{r.hi_bound[i]:.9g}")
        console.print(t)
        if not exact:
            console.print("the true minimum lies between 'min proven' and 'min found', the true "
                          "maximum between 'max found' and 'max proven' (inputs in --json); raise "
                          "--timeout to close the bracket")


def _vec_text(v: np.ndarray) -> str:
    return "(" + ", ".join(f"{float(a):.4g}" for a in v) + ")"


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
        console.print(f"  property 'f(x) < {thr:.6f}': {v.status} in {v.time:.3f} s by {v.method}")
    # 40 inputs: input splitting would stall; branch and bound over ReLU splits decides it
    g = Network([rng.normal(size=(10, 40)) / 6, rng.normal(size=(6, 10)) / 3, rng.normal(size=(1, 6)) / 2],
                [rng.normal(size=10) * 0.3, rng.normal(size=6) * 0.3, np.zeros(1)])
    B40 = Box(-0.5 * np.ones(40), 0.5 * np.ones(40))
    m40 = maximize(g, B40).value
    spec = Specification(B40, [OutputConstraint(np.array([[-1.0]]), np.array([-(m40 + 0.02)]))])
    v = verify(g, spec, timeout=10)
    console.print(f"  40 inputs, 'f(x) < {m40 + 0.02:.6f}' (exact max {m40:.6f}): {v.status} in "
                  f"{v.time:.3f} s by {v.method} "
                  f"({v.stats.get('relu_split', {}).get('domains', 0)} sub-domains)")
