"""Linear-region enumeration: relulab against relucent (and the published edge-subdivision
numbers) on the nine standard random networks.

The networks (issue 4): for each one separately, ``torch.manual_seed(0)`` and then
``nn.Sequential(nn.Linear(d, w), nn.ReLU(), ..., nn.Linear(w, w), nn.ReLU(),
nn.Linear(w, 1))`` with PyTorch's default initialisation; the float32 weights are
converted exactly to float64; the domain is [-1, 1]^d.  This construction reproduces
the reference counts 178, 1180, 6668, 20714, 1276, 20724, 6658, 80487, 15621.

relulab's time is ``regions.enumerate`` (every region with its activation pattern,
minimal H-representation, interior point and radius, affine map) plus
``regions.adjacency`` (the dual-graph edges), best of ``--repeat`` runs, on one BLAS
thread.  Both wall-clock and CPU time are printed: the machine may be shared, and
CPU time is the fairer comparison with the single-thread anchor numbers.

relucent (``pip install relucent``, Gurobi with its size-limited licence) runs in a
subprocess with a time limit on the networks chosen with ``--relucent`` (by default
the two whose published time is under 30 s); the others show the published
(ANCHORS) time as a reference row, clearly marked.

Run:  python benchmarks/regions.py [--relucent all|none|2d16x3,3d16x2] [--million]
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from relulab import Box, Network, regions  # noqa: E402
from relulab.io.torch import from_torch  # noqa: E402

# (name, d, widths, expected regions, relucent anchor s, edge-subdivision anchor s)
NETWORKS = [
    ("2d16x3", 2, [16] * 3, 178, 3.8, 0.018),
    ("2d32x3", 2, [32] * 3, 1180, 53.0, 0.049),
    ("2d64x3", 2, [64] * 3, 6668, 493.0, 0.22),
    ("2d128x3", 2, [128] * 3, 20714, None, 1.35),
    ("3d16x2", 3, [16] * 2, 1276, 26.0, 0.019),
    ("3d32x3", 3, [32] * 3, 20724, None, 0.28),
    ("4d16x2", 4, [16] * 2, 6658, 193.0, 0.053),
    ("4d32x2", 4, [32] * 2, 80487, None, 0.86),
    ("5d16x2", 5, [16] * 2, 15621, None, 0.21),
]
MILLION = ("5d32x2", 5, [32] * 2, None, None, None)


def torch_model(d: int, widths: list[int]):
    import torch

    torch.manual_seed(0)
    layers: list = []
    prev = d
    for w in widths:
        layers += [torch.nn.Linear(prev, w), torch.nn.ReLU()]
        prev = w
    layers.append(torch.nn.Linear(prev, 1))
    return torch.nn.Sequential(*layers)


def run_relulab(net: Network, d: int, repeat: int) -> dict:
    box = Box(-np.ones(d), np.ones(d))
    best = None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        rs = regions.enumerate(net, box)
        E = regions.adjacency(rs)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        if best is None or cpu < best["cpu"]:
            best = {"regions": len(rs), "edges": int(E.shape[0]), "wall": wall, "cpu": cpu,
                    "engine": rs.info.get("engine")}
    return best


RELUCENT_SCRIPT = r"""
import json, sys, time, torch, relucent
d, widths = int(sys.argv[1]), json.loads(sys.argv[2])
torch.manual_seed(0)
layers = []; prev = d
for w in widths:
    layers += [torch.nn.Linear(prev, w), torch.nn.ReLU()]; prev = w
layers.append(torch.nn.Linear(prev, 1))
model = torch.nn.Sequential(*layers)
t0 = time.perf_counter()
cplx = relucent.Complex(model)
res = cplx.bfs(cube_radius=1.0, cube_mode="clipped", verbose=0)
print(json.dumps({"regions": len(cplx), "wall": time.perf_counter() - t0,
                  "complete": bool(res.complete)}))
"""


def run_relucent(d: int, widths: list[int], timeout: float) -> dict:
    try:
        import relucent  # noqa: F401
    except ImportError as e:
        return {"error": f"relucent not installed ({e})"}
    try:
        p = subprocess.run([sys.executable, "-c", RELUCENT_SCRIPT, str(d), json.dumps(widths)],
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"over the {timeout:.0f} s limit"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": tail[:120]}
    return json.loads(lines[-1])


def fmt(x: float | None, nd: int = 3) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--relucent", default="2d16x3,3d16x2",
                    help="networks to run relucent on: all, none, or names")
    ap.add_argument("--relucent-timeout", type=float, default=600.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--million", action="store_true",
                    help="also enumerate the 5-D 32x2 network (about one million regions)")
    ap.add_argument("--json", default=None, help="write the measured numbers here")
    args = ap.parse_args()
    sel = {n for n, *_ in NETWORKS} if args.relucent == "all" else (
        set() if args.relucent == "none" else set(args.relucent.split(",")))

    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores "
          "(a shared machine: wall-clock times are noisy; CPU time is the fairer number)")
    regions.count(from_torch(torch_model(2, [4])))  # warm-up (imports, first HiGHS)
    rows = []
    hdr = (f"{'network':9} {'regions':>8} {'expect':>7} {'edges':>7} {'ours s':>7} "
           f"{'ours CPU':>8} | {'relucent':>9} {'relucent s':>10} {'x':>7} | "
           f"{'relucent*':>9} {'x*':>6} | {'edge-sub*':>9} {'x*':>6}")
    print(hdr)
    print("-" * len(hdr))
    for name, d, widths, expected, rel_anchor, es_anchor in NETWORKS:
        net = from_torch(torch_model(d, widths))
        ours = run_relulab(net, d, args.repeat if expected < 50_000 else 1)
        rel = run_relucent(d, widths, args.relucent_timeout) if name in sel else None
        t = ours["cpu"]
        rel_n = rel.get("regions") if rel else None
        rel_s = rel.get("wall") if rel else None
        row = {"network": name, "expected": expected, **{f"ours_{k}": v for k, v in ours.items()},
               "relucent": rel, "relucent_anchor_s": rel_anchor, "edge_subdivision_anchor_s":
               es_anchor}
        rows.append(row)
        print(f"{name:9} {ours['regions']:>8} {expected:>7} {ours['edges']:>7} "
              f"{ours['wall']:>7.3f} {t:>8.3f} | "
              f"{(str(rel_n) if rel_n is not None else ('n/a' if rel is None else 'failed')):>9} "
              f"{fmt(rel_s, 2):>10} {fmt(rel_s / t if rel_s else None, 0):>7} | "
              f"{fmt(rel_anchor, 1):>9} {fmt(rel_anchor / t if rel_anchor else None, 0):>6} | "
              f"{fmt(es_anchor):>9} {fmt(es_anchor / t, 2):>6}")
        if rel and "error" in rel:
            print(f"          relucent: {rel['error']}")
        if ours["regions"] != expected or (rel_n is not None and rel_n != ours["regions"]):
            print("          MISMATCH in the region counts")
    print("x = relucent time / our CPU time (same run); * = published anchor number "
          "(ANCHORS.md, 2-core machine, edge subdivision on 1 thread), ratio = anchor / ours;"
          " edge subdivision gives vertices and edges only, no regions or graph")
    if args.million:
        name, d, widths, *_ = MILLION
        net = from_torch(torch_model(d, widths))
        ours = run_relulab(net, d, 1)
        print(f"{name}: {ours['regions']} regions, {ours['edges']} graph edges in "
              f"{ours['wall']:.1f} s wall, {ours['cpu']:.1f} s CPU")
        rows.append({"network": name, **{f"ours_{k}": v for k, v in ours.items()}})
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
