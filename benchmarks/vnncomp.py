"""VNN-COMP 2022 benchmarks and ACAS Xu: relulab against the published tools' answers.

Runs relulab (``relulab.verify.verify`` on the ONNX model and VNN-LIB property) on

* collins_rul_cnn, rl_benchmarks, reach_prob_density, sri_resnet_a from
  ``vnncomp2022/<benchmark>/instances.csv`` (onnx, vnnlib, time limit);
* acasxu: the 180 instances of ``acasxu/instances.csv`` (properties 1-4) plus
  properties 5-10 of ``benchmarks/acasxu_props`` (our files from Katz et al. 2017);

each instance in its own subprocess with the instance's time limit x ``--timeout-scale``
(capped by ``--timeout``), an address-space limit (``--memory`` GB, RLIMIT_AS) so a model
that would not fit ends as ``memout`` instead of taking the machine down, and its peak
resident memory (``getrusage`` of the child).  A child that overruns its limit by more
than ``--grace`` seconds is killed and counts as ``timeout``.

Per benchmark it prints: instances, solved, holds, violated, unknown (timeouts and
memouts included), WRONG (an answer contradicting the published tools that agree with
each other: holds vs their sat, violated vs their unsat; for ACAS Xu: vs expected.csv),
relulab's summed wall time and peak memory, and each published tool's solved count on
the same instances (``vnncomp2022/results/<tool>/<benchmark>.csv``; columns benchmark,
onnx, vnnlib, prep_time, result, time), the best CPU tool and alpha_beta_crown (GPU) in
bold.  The published counts come from the competition's machines (alpha_beta_crown on a
GPU) with the full time limits: they are a reference, not a same-run measurement.
Writes ``benchmarks/results/vnncomp.json``.

Usage:
    python benchmarks/vnncomp.py --benchmarks rl_benchmarks,reach_prob_density --every 3
    python benchmarks/vnncomp.py --benchmarks acasxu --timeout 60
    python benchmarks/vnncomp.py --quick          # every 10th instance, 10 s cap
    python benchmarks/vnncomp.py --retry benchmarks/results/vnncomp_collins_rul_cnn_full.json \\
        --json benchmarks/results/vnncomp_collins_rul_cnn_full.json     # re-run starved timeouts
    python benchmarks/vnncomp.py --summary benchmarks/results/vnncomp_*_full.json --markdown

``--retry``: on a machine shared with other jobs a timeout can mean that the verifier got
little CPU; instances that ended ``unknown`` (timeout) with CPU seconds below
``--retry-cpu-share`` of their limit are re-run with ``--retry-scale`` x the wall limit.
The table then shows both: solved within the wall limit, and ``+k of n retried``.
``--summary``: the table (and with ``--markdown`` a pasteable one) of saved runs,
recomputed from their rows with the published tools' counts on the same instances.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import csv
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ["collins_rul_cnn", "rl_benchmarks", "reach_prob_density", "sri_resnet_a", "acasxu"]
GPU_TOOLS = {"alpha_beta_crown"}  # the others ran on CPUs (VNN-COMP 2022 report)
SAT, UNSAT = "sat", "unsat"


def data_dir() -> Path:
    env = os.environ.get("RELULAB_DATA")
    cands = [Path(env)] if env else []
    cands += [ROOT.parent / "shared" / "data", ROOT / "shared" / "data", Path("/work/shared/data")]
    for c in cands:
        if (c / "vnncomp2022").is_dir() or (c / "acasxu").is_dir():
            return c
    sys.exit("data not found: set RELULAB_DATA or place it at ../shared/data")


def _key(onnx: str, vnnlib: str) -> tuple[str, str]:
    return Path(onnx).name, Path(vnnlib).name


def instances(data: Path, bench: str) -> list[dict]:
    """``[{onnx, vnnlib, limit, expected}]`` of one benchmark (expected: sat/unsat/None)."""
    rows = []
    if bench == "acasxu":
        base = data / "acasxu"
        exp = {}
        with open(base / "expected.csv", newline="") as fh:
            for r in csv.DictReader(fh):
                exp[_key(r["onnx"], r["vnnlib"])] = r["expected"]
        with open(base / "instances.csv", newline="") as fh:
            for r in csv.reader(fh):
                if len(r) >= 2 and r[0].strip():
                    e = exp.get(_key(r[0], r[1]))
                    rows.append({"onnx": str(base / r[0].strip()), "vnnlib": str(base / r[1].strip()),
                                 "limit": float(r[2]) if len(r) > 2 else 116.0,
                                 "expected": {"holds": UNSAT, "violated": SAT}.get(e)})
        props = ROOT / "benchmarks" / "acasxu_props"
        with open(props / "expected.csv", newline="") as fh:
            for r in csv.DictReader(fh):
                rows.append({"onnx": str(base / "onnx" / r["onnx"]), "vnnlib": str(props / r["vnnlib"]),
                             "limit": 116.0, "expected": {"holds": UNSAT, "violated": SAT}[r["expected"]]})
        return rows
    base = data / "vnncomp2022" / bench
    with open(base / "instances.csv", newline="") as fh:
        for r in csv.reader(fh):
            if len(r) >= 2 and r[0].strip():
                rows.append({"onnx": str(base / r[0].strip()), "vnnlib": str(base / r[1].strip()),
                             "limit": float(r[2]) if len(r) > 2 else 60.0, "expected": None})
    return rows


def published(data: Path, bench: str) -> dict[str, dict[tuple[str, str], tuple[str, float]]]:
    """tool -> {(onnx name, vnnlib name): (result, time)} from the results CSVs."""
    out: dict[str, dict] = {}
    res = data / "vnncomp2022" / "results"
    if not res.is_dir():
        return out
    for tool_dir in sorted(res.iterdir()):
        f = tool_dir / f"{bench}.csv"
        if not f.is_file():
            continue
        table = {}
        with open(f, newline="") as fh:
            for r in csv.reader(fh):
                if len(r) >= 6 and r[0] == bench:
                    try:
                        t = float(r[5])
                    except ValueError:
                        t = float("nan")
                    table[_key(r[1], r[2])] = (r[4].strip(), t)
        out[tool_dir.name] = table
    return out


def consensus(pub: dict, key: tuple[str, str]) -> str | None:
    """sat / unsat when every published tool that answered agrees; when they disagree, the
    answer of a majority of at least two tools (collins_rul_cnn's if_then instances: four
    tools sat, cgdtest unsat); else None."""
    answers = [tbl[key][0] for tbl in pub.values() if key in tbl and tbl[key][0] in (SAT, UNSAT)]
    n_sat, n_unsat = answers.count(SAT), answers.count(UNSAT)
    if n_sat and not n_unsat:
        return SAT
    if n_unsat and not n_sat:
        return UNSAT
    if max(n_sat, n_unsat) >= 2 and n_sat != n_unsat:
        return SAT if n_sat > n_unsat else UNSAT
    return None


# ------------------------------------------------------------------------ the child
def child(onnx: str, vnnlib: str, timeout: float) -> None:
    """Verify one instance and print one JSON line (runs in the subprocess)."""
    t0 = time.time()
    out: dict = {}
    try:
        import numpy as np

        from relulab.io.vnnlib import load_vnnlib
        from relulab.verify import load_for_verify, verify

        # a dense Network, or a structured BoundGraph for conv / pooling / batch-norm models
        net = load_for_verify(onnx)
        n_in = net.input_dim if hasattr(net, "input_dim") else int(np.prod(net.input_shape))
        prop = load_vnnlib(vnnlib, n_inputs=n_in, n_outputs=net.output_dim)
        t_load = time.time() - t0
        r = verify(net, prop, timeout=max(0.1, timeout - t_load))
        out = {"status": r.status, "reason": getattr(r, "reason", "") or "", "method": r.method,
               "verify_time": r.time, "load_time": t_load}
    except MemoryError:
        out = {"status": "memout", "reason": "MemoryError"}
    except Exception as e:  # noqa: BLE001 - report, never crash the batch
        out = {"status": "error", "reason": f"{type(e).__name__}: {str(e)[:300]}"}
    out["wall_child"] = time.time() - t0
    print("RESULT " + json.dumps(out), flush=True)


# torch/OpenMP threads of each child (--threads, passed to the workers in this variable):
# 1 keeps parallel workers from fighting over a small shared machine; with --workers 1 on
# a quiet 2-core machine, 2 uses both cores for one instance
THREADS_ENV = "RELULAB_BENCH_THREADS"


def run_one(inst: dict, timeout: float, memory_gb: float, grace: float) -> dict:
    """Run one instance in a subprocess under the limits; its row for the table."""
    mem = int(memory_gb * 2**30)

    def limit() -> None:  # in the child, before exec
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        os.nice(5)

    threads = os.environ.get(THREADS_ENV, "1")
    env = dict(os.environ, OMP_NUM_THREADS=threads, OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS=threads,
               RELULAB_MEMORY_GB=str(0.8 * memory_gb),
               PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    t0 = time.time()
    p = subprocess.Popen([sys.executable, __file__, "--child", inst["onnx"], inst["vnnlib"], str(timeout)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=limit, env=env,
                         text=True)
    killed = False
    try:
        stdout, stderr = p.communicate(timeout=timeout + grace)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGKILL)
        stdout, stderr = p.communicate()
        killed = True
    wall = time.time() - t0
    line = [ln for ln in stdout.splitlines() if ln.startswith("RESULT ")]
    if killed:
        res = {"status": "unknown", "reason": "timeout (killed)"}
    elif line:
        res = json.loads(line[-1][len("RESULT "):])
    elif "MemoryError" in stderr or "Cannot allocate" in stderr or "bad_alloc" in stderr:
        res = {"status": "memout", "reason": "out of memory (rlimit)"}
    else:
        res = {"status": "error", "reason": (stderr.strip().splitlines() or ["no output"])[-1][:300]}
    if res["status"] == "error" and any(s in res.get("reason", "") for s in (
            "MemoryError", "Cannot allocate", "bad_alloc", "memory budget")):
        res["status"] = "memout"
    res.update(onnx=inst["onnx"], vnnlib=inst["vnnlib"], limit=timeout, wall=wall,
               exit=p.returncode)
    return res


def _run_measured(inst, timeout, memory_gb, grace) -> dict:
    # a fresh process per instance for its own peak RSS: this wrapper runs inside a
    # worker process, whose RUSAGE_CHILDREN then belongs to that one child only
    r = run_one(inst, timeout, memory_gb, grace)
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    r["peak_rss_mb"] = ru.ru_maxrss / 1024
    # CPU seconds of the child (loading included): on a machine shared with other jobs the
    # wall time says more about the load than about the verifier
    r["cpu"] = ru.ru_utime + ru.ru_stime
    return r


# ------------------------------------------------------------------------ the table
def summarise(bench: str, rows: list[dict], pub: dict) -> dict:
    keys = [_key(r["onnx"], r["vnnlib"]) for r in rows]
    s = {"benchmark": bench, "instances": len(rows)}
    st = [r["status"] for r in rows]
    s["holds"] = st.count("holds")
    s["violated"] = st.count("violated")
    s["solved"] = s["holds"] + s["violated"]
    s["unknown"] = len(rows) - s["solved"]
    # instances re-run with a larger wall budget (--retry): the answer at the competition's
    # wall limit is kept in "first"; "solved_at_limit" counts those answers
    first = [r.get("first", r)["status"] for r in rows]
    s["retried"] = sum(1 for r in rows if "first" in r)
    s["solved_at_limit"] = sum(1 for x in first if x in ("holds", "violated"))
    s["memout"] = st.count("memout")
    s["error"] = st.count("error")
    wrong = []
    for r, k in zip(rows, keys, strict=True):
        ref = r.get("expected") or consensus(pub, k)
        r["reference"] = ref
        if (r["status"] == "holds" and ref == SAT) or (r["status"] == "violated" and ref == UNSAT):
            wrong.append(f"{k[0]}/{k[1]}: {r['status']} vs {ref}")
    s["wrong"] = len(wrong)
    s["wrong_list"] = wrong
    s["time"] = sum(r["wall"] for r in rows)
    s["cpu"] = sum(r.get("cpu", 0.0) for r in rows)
    s["max_cpu"] = max((r.get("cpu", 0.0) for r in rows), default=0.0)
    s["max_rss_mb"] = max((r.get("peak_rss_mb", 0.0) for r in rows), default=0.0)
    s["tools"] = {t: sum(1 for k in keys if k in tbl and tbl[k][0] in (SAT, UNSAT)) for t, tbl in pub.items()}
    # published answers against the reference (expected.csv, or the tools' majority)
    refs = [r.get("reference") for r in rows]
    s["tools_contradicted"] = {
        t: sum(1 for k, ref in zip(keys, refs, strict=True) if ref and k in tbl
               and tbl[k][0] in (SAT, UNSAT) and tbl[k][0] != ref) for t, tbl in pub.items()}
    # the best CPU tool by answers that no majority contradicts
    cpu = {t: n - s["tools_contradicted"][t] for t, n in s["tools"].items() if t not in GPU_TOOLS}
    s["best_cpu_tool"] = max(cpu, key=cpu.get) if cpu else None
    return s


def _cells(s: dict, tools: list[str]) -> list[str]:
    """One benchmark's row: relulab's counts, then each published tool's solved count."""
    solved = str(s.get("solved_at_limit", s["solved"]))
    if s.get("retried"):
        solved += f" (+{s['solved'] - s.get('solved_at_limit', s['solved'])} of {s['retried']} retried)"
    unknown = f"{s['unknown']}" + (f" ({s['memout']} mem)" if s["memout"] else "")
    return [s["benchmark"], str(s["instances"]), solved, str(s["holds"]), str(s["violated"]), unknown,
            str(s["wrong"]), f"{s['time']:.0f}", f"{s.get('cpu', 0.0):.0f}", f"{s['max_rss_mb']:.0f}",
            *[_tool_cell(s, t) for t in tools]]


def _tool_cell(s: dict, tool: str) -> str:
    n = s["tools"].get(tool)
    if n is None:
        return ""
    bad = s.get("tools_contradicted", {}).get(tool, 0)
    return f"{n} ({bad} vs majority)" if bad else str(n)


HEADER = ("benchmark", "inst", "solved", "holds", "viol", "unknown", "WRONG", "wall (s)", "CPU (s)",
          "peak MB")


def print_table(summaries: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=220)
    tools = sorted({t for s in summaries for t in s["tools"]})
    t = Table(title="relulab on VNN-COMP 2022 benchmarks + ACAS Xu (published tools: solved on the same instances)")
    for c in (*HEADER, *tools):
        t.add_column(c, justify="right")
    for s in summaries:
        cells = _cells(s, tools)
        for i, tool in enumerate(tools):
            if tool == s["best_cpu_tool"] or tool in GPU_TOOLS:
                cells[len(HEADER) + i] = f"[bold]{cells[len(HEADER) + i]}[/bold]"
        if s["wrong"]:
            cells[6] = f"[red]{cells[6]}[/red]"
        t.add_row(*cells)
    console.print(t)
    console.print("solved: within each instance's wall limit (the competition's); '+k of n retried': "
                  "instances that timed out with little CPU time on the shared machine, re-run with "
                  "a larger wall budget (--retry). A tool's '(k vs majority)': k of its answers "
                  "contradict the majority of the tools (counted as WRONG for relulab). bold: the "
                  "best CPU tool of each benchmark and "
                  "alpha_beta_crown (GPU); their counts are from the competition (full time limits, "
                  "their machines), not measured here.")
    for s in summaries:
        for w in s["wrong_list"]:
            console.print(f"[red]WRONG[/red] {s['benchmark']} {w}")


def markdown_table(summaries: list[dict]) -> str:
    """The summary as a markdown table (to paste into a note)."""
    tools = sorted({t for s in summaries for t in s["tools"]})
    head = [*HEADER, *[f"{t} (GPU)" if t in GPU_TOOLS else t for t in tools]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in summaries:
        cells = _cells(s, tools)
        for i, tool in enumerate(tools):
            if tool == s["best_cpu_tool"] and cells[len(HEADER) + i]:
                cells[len(HEADER) + i] = f"**{cells[len(HEADER) + i]}**"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def load_rows(paths: list[str]) -> dict[str, list[dict]]:
    """Rows per benchmark from saved JSONs; a later file's instance replaces an earlier
    file's (so a retry file or a re-run overrides the first run)."""
    out: dict[str, dict] = {}
    for p in paths:
        with open(p) as fh:
            d = json.load(fh)
        for bench, rows in d["rows"].items():
            for r in rows:
                out.setdefault(bench, {})[_key(r["onnx"], r["vnnlib"])] = r
    return {b: list(v.values()) for b, v in out.items()}


def summary_from_files(paths: list[str]) -> list[dict]:
    """Summaries recomputed from saved rows (published counts on the same instances)."""
    data = data_dir()
    rows = load_rows(paths)
    order = [b for b in BENCHMARKS if b in rows] + sorted(b for b in rows if b not in BENCHMARKS)
    return [summarise(b, rows[b], published(data, b)) for b in order]


def retry(path: str, out: str, scale: float, cpu_share: float, memory_gb: float, grace: float) -> None:
    """Re-run the instances of a saved run that ended unknown by timeout while their CPU time
    stayed below ``cpu_share`` of the limit (the shared machine, not the verifier, ran out
    of time), with ``scale`` x the wall limit; the first answer is kept in ``first``."""
    with open(path) as fh:
        d = json.load(fh)
    for bench, rows in d["rows"].items():
        for r in rows:
            if "first" in r or r["status"] in ("holds", "violated", "error", "memout"):
                continue
            if "timeout" not in r.get("reason", "") or r.get("cpu", 0.0) >= cpu_share * r["limit"]:
                continue
            first = {k: r[k] for k in ("status", "reason", "wall", "cpu", "limit", "peak_rss_mb") if k in r}
            inst = {"onnx": r["onnx"], "vnnlib": r["vnnlib"]}
            with cf.ProcessPoolExecutor(max_workers=1, max_tasks_per_child=1) as ex:
                new = ex.submit(_run_measured, inst, r["limit"] * scale, memory_gb, grace).result()
            print(f"  retry {bench} {Path(r['onnx']).stem} {Path(r['vnnlib']).stem}: {first['status']} "
                  f"(wall {first['wall']:.0f}s cpu {first.get('cpu', 0):.0f}s) -> {new['status']} "
                  f"(wall {new['wall']:.0f}s cpu {new.get('cpu', 0):.0f}s, limit {new['limit']:.0f}s)",
                  flush=True)
            r.update(new)
            r["first"] = first
            with open(out, "w") as fh:  # after each instance: a long retry can be stopped
                json.dump(d, fh, indent=1, default=str)
    pubs = {b: published(data_dir(), b) for b in d["rows"]}
    d["summaries"] = [summarise(b, rows, pubs[b]) for b, rows in d["rows"].items()]
    with open(out, "w") as fh:
        json.dump(d, fh, indent=1, default=str)
    print_table(d["summaries"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--benchmarks", default=",".join(BENCHMARKS), help="comma-separated subset")
    ap.add_argument("--every", type=int, default=1, help="keep every k-th instance of each benchmark")
    ap.add_argument("--timeout-scale", type=float, default=1.0, help="x each instance's time limit")
    ap.add_argument("--timeout", type=float, default=None, help="cap on each instance's time limit (s)")
    ap.add_argument("--memory", type=float, default=6.0, help="address-space limit per instance (GB)")
    ap.add_argument("--grace", type=float, default=30.0, help="seconds past the limit before a kill")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch/OpenMP threads per instance (OpenBLAS stays at 1)")
    ap.add_argument("--filter", default=None, help="keep instances whose paths contain this (comma-separated: any of these)")
    ap.add_argument("--offset", type=int, default=0, help="with --every k: start at this instance")
    ap.add_argument("--solved-by", default=None, metavar="TOOL",
                    help="keep only instances this published tool solved (a biased subset: label it)")
    ap.add_argument("--quick", action="store_true", help="every 10th instance, 10 s cap")
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "vnncomp.json"))
    ap.add_argument("--summary", nargs="+", metavar="JSON", default=None,
                    help="print the table of saved runs (a later file's instances replace an "
                    "earlier file's) and run nothing")
    ap.add_argument("--markdown", action="store_true", help="with --summary: also a markdown table")
    ap.add_argument("--retry", metavar="JSON", default=None,
                    help="re-run a saved run's timeouts that got little CPU time (writes --json)")
    ap.add_argument("--retry-scale", type=float, default=4.0, help="x the wall limit of a retry")
    ap.add_argument("--retry-cpu-share", type=float, default=0.5,
                    help="retry a timeout only when its CPU seconds were below this share of the limit")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    os.environ[THREADS_ENV] = str(max(1, a.threads))
    if a.child:
        child(a.child[0], a.child[1], float(a.child[2]))
        return
    if a.summary:
        summaries = summary_from_files(a.summary)
        print_table(summaries)
        if a.markdown:
            print(markdown_table(summaries))
        return
    if a.retry:
        retry(a.retry, a.json, a.retry_scale, a.retry_cpu_share, a.memory, a.grace)
        return
    if a.quick:
        a.every, a.timeout = max(a.every, 10), min(a.timeout or 10.0, 10.0)
    data = data_dir()
    summaries, all_rows = [], {}
    for bench in [b.strip() for b in a.benchmarks.split(",") if b.strip()]:
        if bench not in BENCHMARKS:
            sys.exit(f"--benchmarks: unknown benchmark {bench!r} (known: {', '.join(BENCHMARKS)})")
        insts = instances(data, bench)
        if a.filter:
            keys = [k for k in a.filter.split(",") if k]
            insts = [i for i in insts if any(k in i["onnx"] or k in i["vnnlib"] for k in keys)]
        insts = insts[a.offset :: max(1, a.every)]
        if a.solved_by:  # a chosen subset: say so when reporting its counts
            tbl = published(data, bench).get(a.solved_by, {})
            insts = [i for i in insts if tbl.get(_key(i["onnx"], i["vnnlib"]), ("",))[0] in (SAT, UNSAT)]
        if bench == "acasxu" and a.every > 1:  # keep all of properties 5-10 when sampling
            extra = [i for i in instances(data, bench) if "acasxu_props" in i["vnnlib"] and i not in insts]
            insts += extra
        pub = published(data, bench)
        print(f"{bench}: {len(insts)} instances, {a.workers} workers", flush=True)
        rows: list[dict] = []
        with cf.ProcessPoolExecutor(max_workers=a.workers, max_tasks_per_child=1) as ex:
            futs = {}
            for inst in insts:
                lim = inst["limit"] * a.timeout_scale
                if a.timeout is not None:
                    lim = min(lim, a.timeout)
                futs[ex.submit(_run_measured, inst, lim, a.memory, a.grace)] = inst
            for f in cf.as_completed(futs):
                r = f.result()
                r["expected"] = futs[f]["expected"]
                rows.append(r)
                print(f"  {Path(r['onnx']).stem} {Path(r['vnnlib']).stem}: {r['status']} "
                      f"{r['wall']:.1f}s (cpu {r.get('cpu', 0):.1f}s) {r.get('peak_rss_mb', 0):.0f}MB {r.get('reason', '')}", flush=True)
                # the rows so far after each instance ("partial": a long run can be stopped
                # and still summarised with --summary)
                Path(a.json).parent.mkdir(parents=True, exist_ok=True)
                with open(a.json, "w") as fh:
                    json.dump({"args": vars(a), "partial": True, "rows": {**all_rows, bench: rows}},
                              fh, indent=1, default=str)
        order = {(i["onnx"], i["vnnlib"]): n for n, i in enumerate(insts)}
        rows.sort(key=lambda r: order[(r["onnx"], r["vnnlib"])])
        s = summarise(bench, rows, pub)
        summaries.append(s)
        all_rows[bench] = rows
    print_table(summaries)
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    with open(a.json, "w") as fh:
        json.dump({"args": vars(a), "summaries": summaries, "rows": all_rows}, fh, indent=1, default=str)


if __name__ == "__main__":
    main()
