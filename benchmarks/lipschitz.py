"""Lipschitz constants: relulab's exact routes against each other, and every bound
against the exact value, on random networks; brackets on the ACAS Xu networks.

Part 1 (random networks, box [-1, 1]^d, Gaussian weights / sqrt(fan-in), biases 0.3 N(0, 1)):
for p in {1, inf} region enumeration and the LipMIP program must agree (they are two
independent exact algorithms); for p = 2 enumeration is the exact value.  For each
upper bound (layer-norm product, interval Jacobian, LipSDP for p = 2, the branch and
bound's bracket after a short run) the table gives the median and worst ratio
upper / exact, and the time of each route.

Part 2 (ACAS Xu, property 1's input box, 5 inputs, 6 x 50 neurons, 5 outputs, q = p):
``lipschitz(..., method="auto", time_limit=T)`` for p = 1 and inf; lower, upper,
upper / lower, status, and the CPU seconds the call got.  The exact routes do not close
there in 60 s (see docs/lipschitz.md), so the bracket is what is reported.

Alternative tools: LipMIP's reference code needs Gurobi and is not on PyPI;
``benchmarks/lipmip_gurobi.py`` writes the LipMIP program afresh in ``gurobipy`` (its
size-limited licence takes the networks of part 1, not ACAS Xu) and runs it side by side
with relulab's exact routes.  LipSDP needs MATLAB + MOSEK and cannot run here.

Part 1b (the l2 target): on 26 2-input networks (20 of L2_SIZES plus the 6 of part 1; exact
by enumeration), the product of spectral norms, the whole-box local LipSDP and the SDP
branch and bound (split to exact pieces) after 0.5 s, 2 s and until it closes (120 s cap);
``--l2-only`` runs just this part (benchmarks/results/lipschitz_l2.json).

Part 2b (``--acas-cpu 1_1,3_3``): the same ACAS brackets with a budget of CPU seconds
(sampling + ``by_bab(..., clock=time.process_time)``), because on a shared machine a
wall-clock minute can be a few CPU seconds.

Run:  python benchmarks/lipschitz.py [--quick] [--acas N] [--acas-time 60] [--acas-only | --no-acas | --l2-only]
      python benchmarks/lipschitz.py --acas-cpu 1_1,3_3 --acas-time 60 [--acas-cpu-file NAME.json]
      python benchmarks/lipschitz.py --acas-cpu all --shard 0/3 --acas-cpu-file lipschitz_acas45_0.json
      python benchmarks/lipschitz.py --acas-cpu 2_4,2_5,2_6 --norms inf --acas-cpu-file lipschitz_acas45_60.json
      python benchmarks/lipschitz.py --acas-merge lipschitz_acas45_0.json,... --acas-cpu-file lipschitz_acas45.json
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from relulab import Box, Network  # noqa: E402
from relulab.lipschitz import (  # noqa: E402
    by_enumeration,
    by_milp,
    interval_jacobian_bound,
    lipschitz,
    product_bound,
    sdp_bound,
)
from relulab.lipschitz.bab import by_bab  # noqa: E402
from relulab.lipschitz.sdp import sdp_bab  # noqa: E402

INF = float("inf")
SIZES = [(2, [8, 8]), (2, [16, 16]), (3, [10, 10]), (3, [16, 16]), (4, [8, 8]), (4, [12, 12])]


def rand_net(rng, d, widths):
    dims = [d, *widths, 1]
    Ws = [rng.standard_normal((dims[i + 1], dims[i])) / np.sqrt(dims[i]) for i in range(len(dims) - 1)]
    bs = [rng.standard_normal(dims[i + 1]) * 0.3 for i in range(len(dims) - 1)]
    return Network(Ws, bs)


def timed(fn, *a, **k):
    t = time.perf_counter()
    out = fn(*a, **k)
    return out, time.perf_counter() - t


def gurobi_available() -> str:
    try:
        import gurobipy  # noqa: F401
    except ImportError:
        return "gurobipy not installed (pip install gurobipy); LipMIP on Gurobi: benchmarks/lipmip_gurobi.py"
    return "gurobipy importable; LipMIP on Gurobi: benchmarks/lipmip_gurobi.py"


def random_networks(seeds: int, sizes):
    """The random networks of part 1 (also used by lipmip_gurobi.py): (d, widths, seed,
    network, the box [-1, 1]^d)."""
    for d, widths in sizes:
        for s in range(seeds):
            rng = np.random.default_rng(1000 * d + 10 * sum(widths) + s)
            yield d, widths, s, rand_net(rng, d, widths), Box(-np.ones(d), np.ones(d))


def part_random(seeds: int, sizes, bab_seconds: float) -> dict:
    rows = []
    for d, widths, s, net, box in random_networks(seeds, sizes):
        row = {"d": d, "widths": widths, "seed": s}
        for p in (1.0, 2.0, INF):
            key = {1.0: "1", 2.0: "2", INF: "inf"}[p]
            e, te = timed(by_enumeration, net, box, p, None)
            row[f"exact_{key}"] = e.lower
            row["regions"] = e.n_regions
            row[f"t_enum_{key}"] = te
            if p != 2.0:
                m, tm = timed(by_milp, net, box, p, None)
                row[f"milp_{key}"] = m.lower
                row[f"milp_ok_{key}"] = m.complete
                row[f"agree_{key}"] = abs(m.lower - e.lower) / max(e.lower, 1e-300)
                row[f"t_milp_{key}"] = tm
            pb, tp = timed(product_bound, net, p, None)
            ib, ti = timed(interval_jacobian_bound, net, box, p, None)
            bb, tb = timed(by_bab, net, box, p, None, time.time() + bab_seconds)
            row[f"product_{key}"] = pb / e.lower
            row[f"interval_{key}"] = ib / e.lower
            row[f"bab_{key}"] = bb.upper / e.lower
            row[f"t_interval_{key}"] = ti + tp
            row[f"t_bab_{key}"] = tb
            if p == 2.0:
                sb, ts = timed(sdp_bound, net, box)
                row["sdp_2"] = sb / e.lower
                row["t_sdp_2"] = ts
                sbb, tsb = timed(sdp_bab, net, box, time_limit=bab_seconds)
                row["sdpbab_2"] = sbb.upper / e.lower
                row["t_sdpbab_2"] = tsb
        rows.append(row)
        print(f"  d={d} widths={widths} seed={s}: regions {row['regions']}, "
              f"L1 {row['exact_1']:.6g} (milp agrees to {row['agree_1']:.1e}), "
              f"Linf {row['exact_inf']:.6g} (agrees to {row['agree_inf']:.1e}), L2 {row['exact_2']:.6g}",
              flush=True)
    return {"rows": rows}


def summarise(rows) -> list[tuple]:
    out = []
    for key in ("1", "2", "inf"):
        for b in ("product", "interval", "bab", "sdp", "sdpbab"):
            col = f"{b}_{key}"
            vals = [r[col] for r in rows if col in r]
            if vals:
                t = {"product": "t_interval", "interval": "t_interval", "bab": "t_bab", "sdp": "t_sdp",
                     "sdpbab": "t_sdpbab"}[b]
                ts = [r.get(f"{t}_{key}", np.nan) for r in rows]
                out.append((key, b, float(np.median(vals)), float(np.max(vals)), float(np.min(vals)),
                            float(np.median(ts))))
    return out


L2_SIZES = [[8, 8], [16, 16], [32, 32], [10, 10, 10], [16, 16, 16]]


def l2_networks(seeds: int, part1_seeds: int = 3):
    """The 2-input networks of the l2 target: ``seeds`` per size of :data:`L2_SIZES`, then
    the 2-input networks of part 1 (``part1_seeds`` per size, same seeds as part 1)."""
    for widths in L2_SIZES:
        for s in range(seeds):
            yield "l2", widths, s, rand_net(np.random.default_rng(7000 + 10 * sum(widths) + s), 2, widths)
    for d, widths in SIZES:
        if d == 2:
            for s in range(part1_seeds):
                yield "part1", widths, s, rand_net(np.random.default_rng(1000 * d + 10 * sum(widths) + s), d, widths)


def part_l2_2d(seeds: int, budgets, part1_seeds: int = 3, close_cap: float = 120.0) -> list[dict]:
    """The l2 target: on 2-input networks (enumeration gives the exact value) the
    product of spectral norms, the whole-box local LipSDP and the SDP branch and bound
    (split to exact pieces) after each budget (seconds), as ratios upper / exact, and the
    time the branch and bound takes to close."""
    rows = []
    for group, widths, s, net in l2_networks(seeds, part1_seeds):
        box = Box(-np.ones(2), np.ones(2))
        e, te = timed(by_enumeration, net, box, 2.0, None)
        row = {"group": group, "widths": widths, "seed": s, "exact": e.lower, "regions": e.n_regions,
               "t_enum": te}
        sb, ts = timed(sdp_bound, net, box)
        row["local_sdp"], row["t_local_sdp"] = sb / e.lower, ts
        row["product"] = product_bound(net, 2.0, None) / e.lower
        for T in budgets:
            o = sdp_bab(net, box, time_limit=T)
            row[f"sdpbab_{T:g}s"] = o.upper / e.lower
        o, tc = timed(sdp_bab, net, box, time_limit=close_cap)
        row["sdpbab_closed"] = o.complete
        row["t_sdpbab_close"] = tc
        row["sdpbab_final"] = o.upper / e.lower
        row["sdpbab_lower_ok"] = bool(o.lower <= e.lower * (1 + 1e-9))
        row["sdpbab_upper_ok"] = bool(o.upper >= e.lower * (1 - 1e-9))
        row["sdpbab_info"] = {"boxes": o.n_boxes, "sdps": o.n_sdps, **o.info}
        rows.append(row)
        print(f"  {group} widths={widths} seed={s}: regions {e.n_regions}, local SDP {row['local_sdp']:.3f}x, "
              + ", ".join(f"bab {T:g}s {row[f'sdpbab_{T:g}s']:.3f}x" for T in budgets)
              + f", closed {o.complete} in {tc:.2f} s", flush=True)
    return rows


def part_acas(n_nets: int, seconds: float) -> list[dict]:
    from relulab.io import load_model
    from relulab.io.vnnlib import load_vnnlib

    repo = Path(__file__).resolve().parents[1]
    cands = [Path(os.environ["RELULAB_DATA"])] if os.environ.get("RELULAB_DATA") else []
    cands += [repo.parent / "shared" / "data", repo.parent.parent / "shared" / "data"]
    root = next((c for c in cands if (c / "acasxu" / "onnx").is_dir()), cands[-1])
    onnx = sorted((root / "acasxu" / "onnx").glob("*.onnx"))
    if not onnx:
        print(f"  ACAS Xu data not found under {root}; part 2 skipped")
        return []
    step = max(1, len(onnx) // max(n_nets, 1))
    chosen = onnx[::step][:n_nets]
    prop = load_vnnlib(root / "acasxu" / "vnnlib" / "prop_1.vnnlib", n_inputs=5, n_outputs=5)
    box = prop.cases[0].input_box
    rows = []
    for f in chosen:
        net = load_model(str(f))
        for p in (1.0, INF):
            cpu0 = time.process_time()
            r = lipschitz(net, box, p=p, q=p, time_limit=seconds)
            cpu = time.process_time() - cpu0
            ratio = r.upper / r.lower if r.lower > 0 else INF
            rows.append({"net": f.stem, "p": p, "lower": r.lower, "upper": r.upper, "ratio": ratio,
                         "status": r.status, "method": r.method, "upper_from": r.info.get("upper_from"),
                         "uppers": r.uppers, "time": r.time, "cpu_seconds": cpu,
                         "boxes": r.info.get("boxes")})
            print(f"  {f.stem} p={p:g}: [{r.lower:.6g}, {r.upper:.6g}] ratio {ratio:.3g} "
                  f"{r.status} ({r.method}, best upper {r.info.get('upper_from')}) {r.time:.1f} s wall, "
                  f"{cpu:.1f} s CPU (the machine is shared)", flush=True)
    return rows


ACAS_ALL = [f"{i}_{j}" for i in range(1, 6) for j in range(1, 10)]
# the 9 networks of the earlier rounds (kept last so a partial run covers new ones first)
ACAS_PREVIOUS = ["1_1", "2_2", "3_3", "4_4", "5_5", "1_6", "2_7", "3_8", "4_9"]


def acas_names(spec: str, shard: str | None) -> list[str]:
    """The networks of ``--acas-cpu``: a comma-separated list, or "all" (the 45, the 36
    not measured before first); ``shard`` "i/n" keeps every n-th of them from the i-th."""
    if spec == "all":
        names = [n for n in ACAS_ALL if n not in ACAS_PREVIOUS] + ACAS_PREVIOUS
    else:
        names = spec.split(",")
    if shard:
        i, n = (int(v) for v in shard.split("/"))
        names = names[i::n]
    return names


def part_acas_cpu(names: list[str], cpu_seconds: float, out: Path | None = None,
                  norms: tuple[float, ...] = (1.0, INF)) -> list[dict]:
    """The same brackets with a CPU-time budget (the machine is shared by other jobs, so
    a wall-clock minute can be a few CPU seconds): sampling plus the interval branch and
    bound (``by_bab``) until ``cpu_seconds`` of this process's CPU time are spent.  Each
    row also keeps the whole-box upper bounds (product of layer norms, interval Jacobian)
    so that, where the bracket closes, their ratio to the exact value is known."""
    from relulab.io import load_model
    from relulab.io.vnnlib import load_vnnlib
    from relulab.lipschitz import sampled_lower

    root = _acas_root()
    prop = load_vnnlib(root / "acasxu" / "vnnlib" / "prop_1.vnnlib", n_inputs=5, n_outputs=5)
    box = prop.cases[0].input_box
    rows = []
    for name in names:
        f = root / "acasxu" / "onnx" / f"ACASXU_run2a_{name}_batch_2000.onnx"
        net = load_model(str(f))
        for p in norms:
            c0, w0 = time.process_time(), time.time()
            w = sampled_lower(net, box, p, p, n=2000)
            o = by_bab(net, box, p, p, c0 + cpu_seconds, clock=time.process_time)
            lower = max(o.lower, w.norm if w is not None else 0.0)
            cpu, wall = time.process_time() - c0, time.time() - w0
            exact = bool(o.complete and o.upper - lower <= 1e-6 * (1 + lower))
            rows.append({"net": f.stem, "name": name, "p": p, "lower": lower, "upper": o.upper,
                         "ratio": o.upper / lower, "complete": o.complete, "exact": exact,
                         "exact_boxes": o.n_exact, "boxes": o.n_boxes, "cpu_seconds": cpu,
                         "wall_seconds": wall, "product": product_bound(net, p, p),
                         "interval_jacobian": interval_jacobian_bound(net, box, p, p)})
            print(f"  {name} p={p:g}: [{lower:.6g}, {o.upper:.6g}] ratio {o.upper / lower:.3g} "
                  f"({'exact' if exact else 'bounded'}, {o.n_boxes} boxes, {cpu:.0f} s CPU, {wall:.0f} s wall)",
                  flush=True)
            if out is not None:  # after every constant: a long run interrupted keeps what it did
                out.write_text(json.dumps({"acas_cpu": rows, "cpu_seconds": cpu_seconds}, indent=1, default=str))
    return rows


def acas_cpu_table(files: list[Path]) -> dict:
    """Merge ``--acas-cpu`` result files (later files win for a repeated constant) and
    print the bracket table: per norm, exact count, median and worst ratio upper/lower,
    and on the exact ones the ratio of each whole-box upper bound to the exact value."""
    by_key: dict = {}
    for f in files:
        for r in json.loads(f.read_text())["acas_cpu"]:
            by_key[(r["net"], float(r["p"]))] = r
    rows = sorted(by_key.values(), key=lambda r: (r["p"], r["net"]))
    summary = {}
    print(f"{'p':>4} {'networks':>9} {'exact':>6} {'median up/low':>14} {'worst':>8} {'median CPU s':>13}")
    for p in (1.0, INF):
        rs = [r for r in rows if r["p"] == p]
        if not rs:
            continue
        ratios = np.array([r["ratio"] for r in rs])
        ex = [r for r in rs if r.get("exact", r.get("complete"))]
        s = {"networks": len(rs), "exact": len(ex), "median_ratio": float(np.median(ratios)),
             "worst_ratio": float(ratios.max()), "median_cpu": float(np.median([r["cpu_seconds"] for r in rs]))}
        for b in ("product", "interval_jacobian"):
            v = [r[b] / r["lower"] for r in ex if b in r]
            if v:
                s[f"{b}_over_exact_median"] = float(np.median(v))
                s[f"{b}_over_exact_worst"] = float(np.max(v))
        summary[f"{p:g}"] = s
        print(f"{p:>4g} {len(rs):>9} {len(ex):>6} {s['median_ratio']:>14.3g} {s['worst_ratio']:>8.3g} "
              f"{s['median_cpu']:>13.1f}")
        for b in ("product", "interval_jacobian"):
            if f"{b}_over_exact_median" in s:
                print(f"       on the exact ones, {b} / exact: median {s[f'{b}_over_exact_median']:.3g}, "
                      f"worst {s[f'{b}_over_exact_worst']:.3g}")
    return {"rows": rows, "summary": summary}


def _acas_root() -> Path:
    repo = Path(__file__).resolve().parents[1]
    cands = [Path(os.environ["RELULAB_DATA"])] if os.environ.get("RELULAB_DATA") else []
    cands += [repo.parent / "shared" / "data", repo.parent.parent / "shared" / "data"]
    return next((c for c in cands if (c / "acasxu" / "onnx").is_dir()), cands[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="two sizes, one seed, one ACAS net, 20 s")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--acas", type=int, default=9, help="number of ACAS Xu networks (spread over the 45)")
    ap.add_argument("--acas-time", type=float, default=60.0)
    ap.add_argument("--acas-only", action="store_true", help="only part 2 (written to lipschitz_acas.json)")
    ap.add_argument("--no-acas", action="store_true", help="skip part 2")
    ap.add_argument("--out", default=str(Path(__file__).with_name("results") / "lipschitz.json"))
    ap.add_argument("--acas-cpu", type=str, default=None,
                    help='comma-separated ACAS networks (e.g. 1_1,3_3) or "all" for the CPU-time-budget run only')
    ap.add_argument("--acas-cpu-file", default="lipschitz_acas_cpu.json",
                    help="results file name (under benchmarks/results) of the --acas-cpu run")
    ap.add_argument("--norms", default="1,inf",
                    help='with --acas-cpu: the input norms to run, comma-separated (e.g. "inf" to fill gaps)')
    ap.add_argument("--shard", default=None, help='with --acas-cpu: "i/n" runs every n-th network from the i-th')
    ap.add_argument("--acas-merge", default=None,
                    help="comma-separated --acas-cpu result files to merge into --acas-cpu-file with a summary")
    ap.add_argument("--l2-only", action="store_true", help="only part 1b (written to lipschitz_l2.json)")
    a = ap.parse_args()
    acas_file = Path(a.out).with_name("lipschitz_acas.json")
    if a.l2_only:
        l2, l2_summary = run_l2(a)
        l2_file = Path(a.out).with_name("lipschitz_l2.json")
        l2_file.write_text(json.dumps({"l2_2d": l2, "l2_summary": l2_summary, "quick": a.quick}, indent=1, default=str))
        print(f"wrote {l2_file}")
        return
    if a.acas_merge:
        files = [Path(a.out).with_name(f) for f in a.acas_merge.split(",")]
        merged = acas_cpu_table(files)
        Path(a.out).with_name(a.acas_cpu_file).write_text(json.dumps(merged, indent=1, default=str))
        print(f"wrote {Path(a.out).with_name(a.acas_cpu_file)}")
        return
    if a.acas_cpu:
        print(f"ACAS Xu, property 1 box, {a.acas_time:g} s of CPU time per constant")
        cpu_file = Path(a.out).with_name(a.acas_cpu_file)
        norms = tuple(float(v) for v in a.norms.split(","))
        rows = part_acas_cpu(acas_names(a.acas_cpu, a.shard), a.acas_time, cpu_file, norms)
        cpu_file.write_text(json.dumps({"acas_cpu": rows, "cpu_seconds": a.acas_time}, indent=1, default=str))
        for p in norms:
            rs = [r["ratio"] for r in rows if r["p"] == p]
            print(f"  p={p:g}: ratio median {np.median(rs):.3g}, worst {np.max(rs):.3g}")
        print(f"wrote {cpu_file}")
        return
    if a.acas_only:
        acas = run_acas(a)
        acas_file.write_text(json.dumps({"acas": acas, "quick": a.quick}, indent=1, default=str))
        print(f"\nwrote {acas_file}")
        if Path(a.out).exists():  # keep the full JSON's ACAS part current
            full = json.loads(Path(a.out).read_text())
            full["acas"] = acas
            Path(a.out).write_text(json.dumps(full, indent=1, default=str))
            print(f"updated the ACAS part of {a.out}")
        return
    sizes = SIZES[:2] if a.quick else SIZES
    seeds = 1 if a.quick else a.seeds
    print("alternative tools:", gurobi_available(), "; LipSDP (MATLAB + MOSEK) not installable here")
    print("Part 1: random networks on [-1, 1]^d")
    rand = part_random(seeds, sizes, 2.0 if a.quick else 5.0)
    rows = rand["rows"]
    worst_agree = max(max(r["agree_1"], r["agree_inf"]) for r in rows)
    print(f"\nexact routes: enumeration vs LipMIP, worst relative difference over {len(rows)} networks "
          f"x 2 norms: {worst_agree:.2e}")
    print(f"{'p':>4} {'bound':>9} {'median upper/exact':>19} {'worst':>10} {'best':>8} {'median s':>9}")
    summ = summarise(rows)
    for key, b, med, worst, best, t in summ:
        print(f"{key:>4} {b:>9} {med:>19.3f} {worst:>10.3f} {best:>8.3f} {t:>9.3f}")
    print(f"\n{'route':>12} {'median s (p=1)':>15} {'median s (p=inf)':>17} {'median s (p=2)':>15}")
    for route in ("enum", "milp"):
        vals = [float(np.median([r.get(f"t_{route}_{k}", np.nan) for r in rows])) for k in ("1", "inf", "2")]
        print(f"{route:>12} {vals[0]:>15.3f} {vals[1]:>17.3f} {vals[2]:>15.3f}")
    l2, l2_summary = run_l2(a)
    if a.no_acas:
        acas = json.loads(acas_file.read_text())["acas"] if acas_file.exists() else []
        print(f"\nPart 2 not run: {len(acas)} ACAS rows taken from {acas_file.name}")
        report_acas(acas)
    else:
        acas = run_acas(a)
    out = {"random": rows, "summary": [dict(zip(("p", "bound", "median", "worst", "best", "median_s"), s, strict=True))
                                         for s in summ],
           "worst_route_disagreement": worst_agree, "acas": acas, "l2_2d": l2, "l2_summary": l2_summary,
           "gurobi": gurobi_available(), "quick": a.quick}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1, default=str))
    print(f"\nwrote {a.out}")


L2_BUDGETS = (0.5, 2.0)


def run_l2(a) -> tuple[list[dict], list[dict]]:
    print("\nPart 1b: l2 on 2-input networks (the 1.5x target)")
    l2 = part_l2_2d(2 if a.quick else 4, L2_BUDGETS, 1 if a.quick else 3)
    print(f"{'l2 bound':>22} {'median /exact':>14} {'worst':>8} {'within 1.5x':>12}")
    l2_summary = []
    for col in ("product", "local_sdp", *[f"sdpbab_{T:g}s" for T in L2_BUDGETS], "sdpbab_final"):
        v = np.array([r[col] for r in l2])
        l2_summary.append({"bound": col, "median": float(np.median(v)), "worst": float(v.max()),
                           "within_1.5": int(np.sum(v <= 1.5)), "n": len(v)})
        print(f"{col:>22} {np.median(v):>14.3f} {v.max():>8.3f} {int(np.sum(v <= 1.5)):>6}/{len(v)}")
    tc = [r["t_sdpbab_close"] for r in l2]
    print(f"  SDP branch and bound closed on {sum(r['sdpbab_closed'] for r in l2)}/{len(l2)} networks; "
          f"time to close median {np.median(tc):.2f} s, worst {np.max(tc):.2f} s; "
          f"bracket around the exact value on {sum(r['sdpbab_lower_ok'] and r['sdpbab_upper_ok'] for r in l2)}/{len(l2)}")
    nl = sum(r["local_sdp"] <= r["product"] * (1 + 1e-9) for r in l2)
    print(f"  whole-box local SDP no looser than the product of spectral norms on {nl}/{len(l2)}; "
          f"product / SDP-B&B-final median {np.median([r['product'] / r['sdpbab_final'] for r in l2]):.2f}")
    return l2, l2_summary


def report_acas(acas: list[dict]) -> None:
    for p in (1.0, INF):
        rs = [r["ratio"] for r in acas if r["p"] == p]
        if rs:
            print(f"  p={p:g}: bracket upper/lower median {np.median(rs):.3g}, worst {np.max(rs):.3g}, "
                  f"exact {sum(r['status'] == 'exact' for r in acas if r['p'] == p)}/{len(rs)}")


def run_acas(a) -> list[dict]:
    print("\nPart 2: ACAS Xu, property 1 box")
    acas = part_acas(1 if a.quick else a.acas, 20.0 if a.quick else a.acas_time)
    report_acas(acas)
    return acas

if __name__ == "__main__":
    main()
