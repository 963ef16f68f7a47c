"""Explanations benchmark.

1. Decision rules of 2-input policies (random 2-H-H-A ReLU networks on [-1, 1]^2, the
   shape of a small control policy): relulab.explain.decision_rules against affinitree
   (the published library that distils piecewise-linear networks into decision trees:
   builder.from_layers over the box, composed with schema.argmax), on the same network
   in the same run: rules vs leaves (raw, and after affinitree's reduce()), fidelity on
   10^5 uniform points, time, and the ratios.
2. why_not (l1 and linf) on ACAS Xu networks from the property boxes (x = the box
   centre, target = every other advisory; an advisory is the *smallest* score, so the
   network is negated first): status, distance, proven gap, time, 60 s limit each.

Usage:
    python benchmarks/explain.py            # H in 32, 64 (3 seeds), ACAS: 3 nets x props 1-4
    python benchmarks/explain.py --quick    # H = 32, 64 (1 seed), ACAS: 1 net x props 1-2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from relulab import Box, Network  # noqa: E402
from relulab.explain import decision_rules, why_not  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "explain.json"


def policy(h: int, a: int, seed: int) -> Network:
    rng = np.random.default_rng(seed)
    return Network([rng.normal(size=(h, 2)), rng.normal(size=(h, h)) / np.sqrt(h),
                    rng.normal(size=(a, h)) / np.sqrt(h)],
                   [rng.normal(size=h) * 0.3, rng.normal(size=h) * 0.3, np.zeros(a)])


def affinitree_rules(net: Network, box: Box) -> dict:
    """Distil with affinitree; leaves before and after reduce(); its fidelity."""
    from affinitree import AffFunc, AffTree, Architecture, Polytope, builder, schema

    t0 = time.perf_counter()
    arch = Architecture(2)
    for k, (W, b) in enumerate(net.layers):
        arch.linear(AffFunc.from_mats(np.asarray(W, float), np.asarray(b, float)))
        if k < net.n_hidden_layers:
            arch.relu()
    pre = AffTree.from_poly(Polytope.hyperrectangle(2, list(zip(box.lo, box.hi, strict=True))),
                            AffFunc.identity(2), None)
    # affinitree prints its progress to stdout: keep the table clean
    saved, devnull = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    sys.stdout.flush()
    os.dup2(devnull, 1)
    try:
        tree = builder.from_layers(arch, pre, None)
        tree.compose(schema.argmax(net.output_dim))
        t_dist = time.perf_counter() - t0
        leaves = tree.num_terminals()
        tree.reduce()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
    t_all = time.perf_counter() - t0
    return {"tree": tree, "leaves": leaves, "leaves_reduced": tree.num_terminals(),
            "time": t_dist, "time_reduce": t_all}


def fidelity_affinitree(tree, net: Network, X: np.ndarray) -> float:
    y = np.argmax(net(X), axis=1)
    got = np.array([int(round(float(tree.evaluate(x)[0]))) for x in X])
    return float(np.mean(got == y))


def part_rules(quick: bool, con: Console) -> list[dict]:
    box = Box([-1, -1], [1, 1])
    rows = []
    sizes = [(32, 0), (64, 0)] if quick else [(32, s) for s in range(3)] + [(64, s) for s in range(3)]
    X = box.sample(100_000, 12345)
    Xa = X[:20_000] if quick else X
    for h, seed in sizes:
        net = policy(h, 3, seed)
        t0 = time.perf_counter()
        dr = decision_rules(net, box)
        t_ours = time.perf_counter() - t0
        lab = np.array([f"class {k}" for k in np.argmax(net(X), axis=1)], dtype=object)
        fid = float(np.mean(dr.predict(X) == lab))
        try:
            at = affinitree_rules(net, box)
            fa = fidelity_affinitree(at["tree"], net, Xa)
            at.pop("tree")
        except MemoryError:
            at, fa = {"leaves": None, "leaves_reduced": None, "time": None, "time_reduce": None}, None
        rows.append({"net": f"2-{h}-{h}-3 #{seed}", "regions": dr.n_regions, "rules": dr.n_rules,
                     "time": t_ours, "fidelity": fid, "affinitree_leaves": at["leaves"],
                     "affinitree_leaves_reduced": at["leaves_reduced"],
                     "affinitree_time": at["time"], "affinitree_time_reduce": at["time_reduce"],
                     "affinitree_fidelity": fa, "affinitree_fidelity_points": len(Xa)})
        con.print(f"  {rows[-1]['net']}: {dr.n_rules} rules in {t_ours:.2f} s; affinitree "
                  f"{at['leaves']} leaves ({at['leaves_reduced']} reduced) in {at['time']:.2f} s")
    t = Table(title="decision rules of 2-input policies on [-1, 1]^2 (same network, same run)")
    for c in ("net", "regions", "relulab rules", "affinitree leaves", "reduced", "leaves/rules",
              "reduced/rules", "relulab s", "affinitree s", "time ratio", "fidelity ours / aff."):
        t.add_column(c, justify="right")
    for r in rows:
        t.add_row(r["net"], str(r["regions"]), str(r["rules"]), str(r["affinitree_leaves"]),
                  str(r["affinitree_leaves_reduced"]),
                  f"{r['affinitree_leaves'] / r['rules']:.1f}x", f"{r['affinitree_leaves_reduced'] / r['rules']:.1f}x",
                  f"{r['time']:.2f}", f"{r['affinitree_time_reduce']:.2f}",
                  f"{r['affinitree_time_reduce'] / r['time']:.1f}x",
                  f"{100 * r['fidelity']:.3f}% / {100 * r['affinitree_fidelity']:.3f}%")
    con.print(t)
    return rows


def data_dir() -> Path | None:
    env = os.environ.get("RELULAB_DATA")
    cands = [Path(env)] if env else []
    root = Path(__file__).resolve().parents[1]
    cands += [root.parent / "shared" / "data", root / "shared" / "data"]
    return next((c for c in cands if (c / "acasxu" / "onnx").is_dir()), None)


def part_acas(quick: bool, con: Console, limit: float) -> list[dict]:
    from relulab.io import load_model
    from relulab.io.vnnlib import load_vnnlib

    D = data_dir()
    if D is None:
        con.print("[yellow]ACAS Xu data not found (set RELULAB_DATA): part 2 skipped[/yellow]")
        return []
    nets = ["1_1"] if quick else ["1_1", "2_3", "4_5"]
    props = [1, 2] if quick else [1, 2, 3, 4]
    rows = []
    for nid in nets:
        net = load_model(D / "acasxu" / "onnx" / f"ACASXU_run2a_{nid}_batch_2000.onnx")
        neg = net.with_output_map(-np.eye(net.output_dim))   # advisory = smallest score
        for prop in props:
            box = load_vnnlib(D / "acasxu" / "vnnlib" / f"prop_{prop}.vnnlib", n_inputs=5,
                              n_outputs=5).cases[0].input_box
            x = box.center
            cur = int(np.argmax(neg(x[None])[0]))
            targets = [k for k in range(5) if k != cur]
            if quick:
                targets = targets[:2]
            for norm in ("l1", "linf"):
                for tgt in targets:
                    r = why_not(neg, x, tgt, box, norm=norm, time_limit=limit)
                    rows.append({"net": nid, "prop": prop, "norm": norm, "from": cur, "to": tgt,
                                 "status": r.status, "distance": r.distance,
                                 "lower_bound": r.lower_bound, "gap": r.gap, "time": r.time,
                                 "binaries": r.info.get("binaries")})
                    con.print(f"  net {nid} prop {prop} {norm} {cur}->{tgt}: {r.status} "
                              f"d={r.distance} lb={r.lower_bound:.4g} ({r.time:.1f} s)")
    t = Table(title=f"why_not on ACAS Xu (x = property box centre, {limit:.0f} s limit each)")
    for c in ("net", "prop", "norm", "advisory", "status", "distance", "proven lower bound", "time s"):
        t.add_column(c, justify="right")
    for r in rows:
        dist = "-" if r["distance"] is None else f"{r['distance']:.6g}"
        t.add_row(r["net"], str(r["prop"]), r["norm"], f"{r['from']} -> {r['to']}", r["status"], dist,
                  f"{r['lower_bound']:.6g}", f"{r['time']:.2f}")
    con.print(t)
    solved = sum(r["status"] in ("optimal", "infeasible") for r in rows)
    con.print(f"certified (optimal or no counterfactual): {solved}/{len(rows)}; "
              f"within the limit with a gap: {sum(r['status'] == 'feasible' for r in rows)}; "
              f"unknown: {sum(r['status'] == 'unknown' for r in rows)}")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--limit", type=float, default=60.0, help="seconds per why_not on ACAS Xu")
    ap.add_argument("--skip-acas", action="store_true")
    args = ap.parse_args()
    con = Console(width=200)
    out = {"rules": part_rules(args.quick, con)}
    if not args.skip_acas:
        out["acas_why_not"] = part_acas(args.quick, con, args.limit)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1, default=float))
    con.print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
