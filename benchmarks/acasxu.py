"""ACAS Xu benchmark: relulab's verifier against expected answers, Marabou and nnenum.

Runs the instances of ``acasxu/instances.csv`` (from $RELULAB_DATA or ../shared/data),
properties 1-4 on all 45 networks, plus properties 5-10 of ``benchmarks/acasxu_props``
(our VNN-LIB files of Katz et al. 2017's definitions, answers in its expected.csv; skip
them with ``--no-props``), with relulab (``verify-batch`` machinery, one process per worker), scores every answer
against ``expected.csv`` (holds / violated; a violated answer always carries a
counterexample re-checked by a forward pass), and prints per property: instances,
solved, correct, wrong, total and median time.

When ``maraboupy`` is installed it also runs Marabou on (a evenly spaced subset of)
the same instances in the same run, each in its own process with the same timeout,
and prints the time ratio on the instances both ran.  nnenum's numbers are printed
as reference rows: they come from /work/shared/ANCHORS.md and were NOT measured in
this run.

Usage:
    python benchmarks/acasxu.py                      # all 180, 60 s each, 2 workers
    python benchmarks/acasxu.py --filter prop_2 --every 3
    python benchmarks/acasxu.py --marabou-max 0      # skip Marabou
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import csv
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

# One BLAS thread per process: parallelism comes from the worker processes.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

NNENUM_ANCHOR = {
    # published / measured elsewhere on a 2-core machine, 60 s cap (ANCHORS.md)
    "props 1-4 solved": "179/180",
    "props 1-4 total time (s)": 704.0,
    "all 186 solved": "183/186",
    "all 186 total time (s)": 859.0,
    "median per instance (s)": 1.9,
}
PROPS_DIR = Path(__file__).resolve().parent / "acasxu_props"


def data_dir() -> Path:
    env = os.environ.get("RELULAB_DATA")
    cands = [Path(env)] if env else []
    root = Path(__file__).resolve().parents[1]
    cands += [root.parent / "shared" / "data", root / "shared" / "data"]
    for c in cands:
        if (c / "acasxu" / "instances.csv").is_file():
            return c
    sys.exit("ACAS Xu data not found: set RELULAB_DATA or place it at ../shared/data")


def read_expected(path: Path) -> dict[tuple[str, str], str]:
    out = {}
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            out[(str(path.parent / row["onnx"]), str(path.parent / row["vnnlib"]))] = row["expected"]
    return out


# ----------------------------------------------------------------------------- Marabou
def marabou_one(onnx: str, vnnlib: str, timeout: float) -> dict:
    """Run Marabou on one instance (called in a fresh subprocess)."""
    import numpy as np
    from maraboupy import Marabou

    from relulab.io.vnnlib import load_vnnlib

    prop = load_vnnlib(vnnlib)
    t0 = time.time()
    answers = []
    for case in prop.cases:
        for term in case.unsafe:
            net = Marabou.read_onnx(onnx)
            xin = np.array(net.inputVars[0]).ravel()
            yout = np.array(net.outputVars[0]).ravel()
            for i, v in enumerate(xin):
                net.setLowerBound(int(v), float(case.input_box.lo[i]))
                net.setUpperBound(int(v), float(case.input_box.hi[i]))
            for r in range(term.C.shape[0]):
                nz = np.nonzero(term.C[r])[0]
                net.addInequality([int(yout[j]) for j in nz], [float(term.C[r, j]) for j in nz],
                                  float(term.d[r]))
            left = max(1, int(timeout - (time.time() - t0)))
            opts = Marabou.createOptions(timeoutInSeconds=left, verbosity=0)
            code, vals, _stats = net.solve(options=opts, verbose=False)
            if code == "sat":
                # re-check Marabou's counterexample with a plain forward pass, as we do ours
                from relulab.io import load_model

                x = np.array([vals[int(v)] for v in xin])
                y = load_model(onnx)(x)
                ok = bool(case.input_box.contains(x)) and bool(np.all(term.C @ y <= term.d + 1e-9))
                code = "sat" if ok else "sat-not-rechecked"
            answers.append(code)
            if code == "sat":
                break
        if answers and answers[-1] == "sat":
            break
    if any(a == "sat" for a in answers):
        status = "violated"
    elif any(a == "sat-not-rechecked" for a in answers):
        status = "bad-cex"  # Marabou said sat but its counterexample fails the forward pass
    elif answers and all(a == "unsat" for a in answers):
        status = "holds"
    else:
        status = "unknown"
    return {"status": status, "time": time.time() - t0, "codes": answers}


def run_marabou(instances, timeout: float, workers: int) -> dict[tuple[str, str], dict]:
    def one(inst):
        onnx, vnn = inst
        t0 = time.time()
        try:
            p = subprocess.run(
                [sys.executable, __file__, "--marabou-one", onnx, vnn, str(timeout)],
                capture_output=True, text=True, timeout=timeout + 30,
            )
            line = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
            res = json.loads(line[-1]) if line else {"status": "error", "err": p.stderr[-300:]}
        except subprocess.TimeoutExpired:
            res = {"status": "unknown"}
        res["wall"] = time.time() - t0
        return inst, res

    out = {}
    with cf.ThreadPoolExecutor(max_workers=workers) as ex:
        for inst, res in ex.map(one, instances):
            out[inst] = res
            print(f"  marabou {Path(inst[0]).stem} {Path(inst[1]).stem}: {res['status']} "
                  f"({res['wall']:.1f} s)", flush=True)
    return out


# ------------------------------------------------------------------------------- main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per instance (default 60)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--filter", action="append", default=[], help="keep instances whose paths contain this")
    ap.add_argument("--every", type=int, default=1, help="keep every k-th instance")
    ap.add_argument("--marabou-max", type=int, default=12,
                    help="Marabou on at most this many instances, evenly spaced (0: skip)")
    ap.add_argument("--json", default=None, help="write all results to this JSON file")
    ap.add_argument("--no-props", action="store_true", help="only properties 1-4 (skip 5-10)")
    ap.add_argument("--marabou-one", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.marabou_one:
        print(json.dumps(marabou_one(a.marabou_one[0], a.marabou_one[1], float(a.marabou_one[2]))))
        return

    from rich.console import Console

    from relulab.cli.verify import read_instances, run_batch

    console = Console(width=150)
    D = data_dir() / "acasxu"
    insts = read_instances(D / "instances.csv")
    expected = read_expected(D / "expected.csv")
    if not a.no_props:
        with open(PROPS_DIR / "expected.csv", newline="") as fh:
            for row in csv.DictReader(fh):
                inst = (str(D / "onnx" / row["onnx"]), str(PROPS_DIR / row["vnnlib"]))
                insts.append((*inst, 116.0))
                expected[inst] = row["expected"]
    for f in a.filter:
        insts = [i for i in insts if f in i[0] or f in i[1]]
    insts = insts[:: max(1, a.every)]
    insts = [(m, p, min(t, a.timeout)) for m, p, t in insts]
    console.print(f"relulab on {len(insts)} ACAS Xu instances, {a.timeout:g} s each, "
                  f"{a.workers} workers (machine: {os.cpu_count()} cores, shared)")
    t0 = time.time()
    def log(r: dict) -> None:  # one line per instance when the output is a log file
        if not sys.stdout.isatty():
            print(f"  {Path(r['model']).stem} {Path(r['property']).stem}: {r['status']} "
                  f"{r['wall']:.2f} s (cpu {r.get('cpu', 0):.2f})", flush=True)

    rows, _cut = run_batch(insts, workers=a.workers, console=console, on_result=log)
    wall = time.time() - t0

    wrong = []
    for r in rows:
        e = expected.get((r["model"], r["property"]))
        r["expected"] = e
        r["correct"] = None if r["status"] not in ("holds", "violated") else r["status"] == e
        if r["correct"] is False:
            wrong.append(r)

    from rich.table import Table

    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(Path(r["property"]).stem, []).append(r)
    t = Table(title=f"relulab on ACAS Xu ({a.timeout:g} s cap per instance)")
    for c in ("property", "instances", "solved", "correct", "wrong", "total time (s)", "median (s)",
              "max (s)", "total CPU (s)"):
        t.add_column(c, justify="right")
    allr = []
    for name in sorted(by):
        rs = by[name]
        allr += rs
        ts = [r["wall"] for r in rs]
        t.add_row(name, str(len(rs)), str(sum(r["status"] in ("holds", "violated") for r in rs)),
                  str(sum(r["correct"] is True for r in rs)), str(sum(r["correct"] is False for r in rs)),
                  f"{sum(ts):.1f}", f"{statistics.median(ts):.2f}", f"{max(ts):.1f}",
                  f"{sum(r.get('cpu', 0.0) for r in rs):.1f}")
    ts = [r["wall"] for r in allr]
    t.add_row("all", str(len(allr)), str(sum(r["status"] in ("holds", "violated") for r in allr)),
              str(sum(r["correct"] is True for r in allr)), str(len(wrong)),
              f"{sum(ts):.1f}", f"{statistics.median(ts):.2f}", f"{max(ts):.1f}",
              f"{sum(r.get('cpu', 0.0) for r in allr):.1f}", style="bold")
    full = len(allr) == 186
    key = "all 186" if full else "props 1-4"
    t.add_row(f"nnenum {key} (ANCHORS.md; not measured in this run)", key.split()[-1],
              NNENUM_ANCHOR[f"{key} solved"].split("/")[0], "", "", f"{NNENUM_ANCHOR[f'{key} total time (s)']:.1f}",
              f"{NNENUM_ANCHOR['median per instance (s)']:.2f}", "56", "", style="dim")
    console.print(t)
    console.print(f"wall clock for the batch: {wall:.1f} s with {a.workers} workers; "
                  f"nnenum-anchor / relulab summed instance times: "
                  f"{NNENUM_ANCHOR[f'{key} total time (s)'] / max(sum(ts), 1e-9):.1f}x "
                  f"(meaningful only for the full {key.split()[-1]})")
    for r in wrong:
        console.print(f"[red]WRONG[/red] {Path(r['model']).stem} {Path(r['property']).stem}: "
                      f"{r['status']} vs expected {r['expected']}")
    slow = sorted(allr, key=lambda r: -r["wall"])[:8]
    console.print("slowest: " + ", ".join(
        f"{Path(r['model']).stem.replace('ACASXU_run2a_', '').replace('_batch_2000', '')}/"
        f"{Path(r['property']).stem} {r['wall']:.1f}s ({r['status']})" for r in slow))

    mar = {}
    if a.marabou_max > 0:
        try:
            import maraboupy  # noqa: F401
        except ImportError:
            console.print("Marabou: maraboupy is not installed (pip install maraboupy); skipped")
        else:
            k = min(a.marabou_max, len(insts))
            idx = sorted({round(i * (len(insts) - 1) / max(k - 1, 1)) for i in range(k)})
            sub = [(insts[i][0], insts[i][1]) for i in idx]
            console.print(f"Marabou (maraboupy) on {len(sub)} of these instances, same timeout, "
                          f"{a.workers} at a time:")
            mar = run_marabou(sub, a.timeout, a.workers)
            mt = Table(title="same instances: relulab vs Marabou")
            for c in ("instance", "expected", "relulab", "time (s)", "Marabou", "time (s) ", "ratio M/r"):
                mt.add_column(c, justify="right")
            rl = {(r["model"], r["property"]): r for r in rows}
            sr = sm = 0.0
            for inst in sub:
                r, m = rl[inst], mar[inst]
                sr += r["wall"]
                sm += m["wall"]
                mt.add_row(f"{Path(inst[0]).stem.replace('ACASXU_run2a_', '').replace('_batch_2000', '')}"
                           f"/{Path(inst[1]).stem}", str(r["expected"]), r["status"], f"{r['wall']:.2f}",
                           m["status"], f"{m['wall']:.2f}", f"{m['wall'] / max(r['wall'], 1e-9):.1f}")
            mt.add_row("total", "", f"{sum(rl[i]['status'] in ('holds', 'violated') for i in sub)} solved",
                       f"{sr:.1f}", f"{sum(mar[i]['status'] in ('holds', 'violated') for i in sub)} solved",
                       f"{sm:.1f}", f"{sm / max(sr, 1e-9):.1f}", style="bold")
            console.print(mt)
            console.print("(Marabou timeouts count at their full time, so the ratio is a lower bound)")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"relulab": rows, "marabou": {f"{k[0]}|{k[1]}": v for k, v in mar.items()},
                       "nnenum_anchor": NNENUM_ANCHOR, "wall": wall}, fh, indent=1, default=str)


if __name__ == "__main__":
    main()
