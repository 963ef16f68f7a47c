"""Structured bound propagation (relulab.crown) against the dense-lowered path.

For one instance of each VNN-COMP 2022 benchmark in ../shared/data/vnncomp2022 (and the
largest collins_rul_cnn model), in separate processes so that each peak RSS is its own:

* ours: ``BoundGraph.from_onnx`` (load), ``bound(method="crown")`` (float64, and float32
  in column f32) and ``bound(method="alpha")`` on the instance's first input box and its
  output constraints;
* dense: ``relulab.io.load_model`` (the exact dense Network: convolutions lowered to
  matrices) and ``relulab.bounds.crown_batch`` on the same box and constraints, when it
  finishes within the time limit (``--dense-timeout``).

Prints time and peak resident memory of each, the ratios dense / ours, and the largest
difference between the two CROWN lower bounds (they use the same relaxation, so they
agree up to rounding where the lowered network composes the same layers).

Usage:
    python benchmarks/crown.py                 # all models, dense path with 300 s limit
    python benchmarks/crown.py --quick         # small models only, no ResNet dense path
    python benchmarks/crown.py --threads 2 --json benchmarks/results/crown.json
    python benchmarks/crown.py --device cuda      # ours on a GPU (the dense path stays on CPU)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INSTANCES = [
    ("collins_rul_cnn", "NN_rul_small_window_20.onnx", "robustness_2perturbations_delta5_epsilon10_w20.vnnlib"),
    ("collins_rul_cnn", "NN_rul_full_window_40.onnx", "robustness_2perturbations_delta20_epsilon10_w40.vnnlib"),
    ("rl_benchmarks", "cartpole.onnx", "cartpole_case_unsafe_0.vnnlib"),
    ("reach_prob_density", "robot.onnx", "robot_0.vnnlib"),
    ("sri_resnet_a", "resnet_3b2_bn_mixup_adv_4.0_bs128_lr-1.onnx", "cifar10_spec_idx_1551_eps_0.00198.vnnlib"),
]


def data_dir() -> Path:
    env = os.environ.get("RELULAB_DATA")
    for c in ([Path(env)] if env else []) + [ROOT.parent / "shared" / "data", Path("/work/shared/data")]:
        if (c / "vnncomp2022").is_dir():
            return c / "vnncomp2022"
    sys.exit("VNN-COMP 2022 data not found: set RELULAB_DATA")


def _rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _problem(model_dir: Path, spec: str, n_in: int):
    import numpy as np

    from relulab.io.vnnlib import load_vnnlib

    case = load_vnnlib(model_dir / "vnnlib" / spec).cases[0]
    C = np.concatenate([u.C for u in case.unsafe])
    d = np.concatenate([u.d for u in case.unsafe])
    lo, hi = case.input_box.lo, case.input_box.hi
    assert lo.size == n_in, (lo.size, n_in)
    return lo, hi, C, d


def worker(engine: str, bench: str, model: str, spec: str, threads: int, device: str = "cpu") -> dict:
    t = time.perf_counter()
    import onnx  # noqa: F401  (imports are not part of either engine's time)
    import torch

    import relulab.bounds  # noqa: F401
    import relulab.io  # noqa: F401

    torch.set_num_threads(threads)
    d = data_dir() / bench
    out: dict = {"import_s": time.perf_counter() - t, "rss_start_mb": _rss_mb()}
    t = time.perf_counter()
    if engine == "ours":
        from relulab.crown import BoundGraph, bound

        bg = BoundGraph.from_onnx(d / "onnx" / model)
        out["load_s"] = time.perf_counter() - t
        out["relus"] = bg.n_neurons
        lo, hi, C, dd = _problem(d, spec, bg.input_dim)
        t = time.perf_counter()
        g = bound(bg, lo, hi, C, upper=False, device=device)
        out["crown_s"] = time.perf_counter() - t
        out["crown_lower"] = (g.lower[0] + dd).tolist()
        out["rss_crown_mb"] = _rss_mb()
        t = time.perf_counter()
        g32 = bound(bg, lo, hi, C, upper=False, dtype="float32", device=device)
        out["crown32_s"] = time.perf_counter() - t
        out["crown32_maxdiff"] = float(abs(g32.lower - g.lower).max())
        t = time.perf_counter()
        g = bound(bg, lo, hi, C, method="alpha", iters=20, upper=False, device=device)
        out["alpha_s"] = time.perf_counter() - t
        out["alpha_lower"] = (g.lower[0] + dd).tolist()
        if bg.n_neurons <= 30_000 and not bench.startswith("sri"):
            t = time.perf_counter()
            g = bound(bg, lo, hi, C, method="alpha", intermediate="alpha", iters=20, upper=False,
                      device=device)
            out["alpha_int_s"] = time.perf_counter() - t
            out["alpha_int_lower"] = (g.lower[0] + dd).tolist()
    else:
        from relulab.bounds import crown_batch, float_layers
        from relulab.io import load_model

        net = load_model(d / "onnx" / model)
        out["load_s"] = time.perf_counter() - t
        out["relus"] = int(sum(W.shape[0] for W in net.weights[:-1]))
        lo, hi, C, dd = _problem(d, spec, net.input_dim)
        t = time.perf_counter()
        Ws, bs, skip = float_layers(net)
        _, low = crown_batch(Ws, bs, lo[None], hi[None], C=C, skip=skip)
        out["crown_s"] = time.perf_counter() - t
        out["crown_lower"] = (low[0] + dd).tolist()
    out["rss_mb"] = _rss_mb()
    return out


def run(engine: str, inst: tuple, threads: int, timeout: float, device: str = "cpu") -> dict:
    cmd = [sys.executable, __file__, "--worker", engine, *inst, "--threads", str(threads), "--device", device]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout {timeout:.0f} s"}
    if p.returncode != 0:
        tail = (p.stderr.strip().splitlines() or ["killed"])[-1]
        return {"error": f"exit {p.returncode}: {tail[:60]}"}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", nargs=4, metavar=("ENGINE", "BENCH", "MODEL", "SPEC"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="small models; no dense ResNet")
    ap.add_argument("--dense-timeout", type=float, default=300.0)
    ap.add_argument("--json", help="write the measurements here")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (ours only)")
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(worker(*a.worker, a.threads, a.device)))
        return
    rows = []
    for inst in INSTANCES:
        if a.quick and inst[1].startswith(("NN_rul_full", "resnet")):
            continue
        ours = run("ours", inst, a.threads, 600, a.device)
        dense = run("dense", inst, a.threads, a.dense_timeout)
        rows.append({"benchmark": inst[0], "model": inst[1], "spec": inst[2], "ours": ours, "dense": dense})
        _print_row(rows[-1])
    print("\nlower bounds of the instance's rows C y + d (mean over rows; higher is tighter):")
    print(f"{'model':28s} {'rows':>4s} {'CROWN':>10s} {'alpha':>10s} {'alpha-int':>10s} {'s':>6s}")
    for r in rows:
        o = r["ours"]
        if "error" in o:
            continue
        mean = [sum(v) / len(v) for v in (o["crown_lower"], o["alpha_lower"], o.get("alpha_int_lower", [float("nan")]))]
        print(f"{r['model'][:28]:28s} {len(o['crown_lower']):4d} {mean[0]:10.4f} {mean[1]:10.4f} {mean[2]:10.4f} "
              f"{o.get('alpha_int_s', float('nan')):6.2f}")
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps({"threads": a.threads, "rows": rows}, indent=1))


_HEADER = False


def _print_row(r: dict) -> None:
    global _HEADER
    if not _HEADER:
        print(f"{'model':28s} {'ReLUs':>6s} | {'ours load':>9s} {'CROWN':>7s} {'f32':>6s} {'alpha':>7s} {'RSS MB':>7s} | "
              f"{'dense load':>10s} {'CROWN':>7s} {'RSS MB':>7s} | {'time x':>7s} {'RSS x':>6s} {'max|dLB|':>9s}")
        _HEADER = True
    o, d = r["ours"], r["dense"]
    if "error" in o:
        print(f"{r['model'][:28]:28s} ours failed: {o['error']}")
        return
    line = (f"{r['model'][:28]:28s} {o['relus']:6d} | {o['load_s']:9.2f} {o['crown_s']:7.2f} {o['crown32_s']:6.2f} "
            f"{o['alpha_s']:7.2f} "
            f"{o['rss_mb']:7.0f} | ")
    if "error" in d:
        line += f"{d['error'][:36]:36s}"
    else:
        t_o, t_d = o["load_s"] + o["crown_s"], d["load_s"] + d["crown_s"]
        diff = max(abs(x - y) for x, y in zip(o["crown_lower"], d["crown_lower"], strict=True))
        line += (f"{d['load_s']:10.2f} {d['crown_s']:7.2f} {d['rss_mb']:7.0f} | {t_d / t_o:7.2f} "
                 f"{d['rss_mb'] / o['rss_mb']:6.2f} {diff:9.2e}")
    print(line, flush=True)


if __name__ == "__main__":
    main()
