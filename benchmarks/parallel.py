"""Speed-up of relulab.parallel on this machine: 1 against 2 workers, local pool against Ray.

Measures, in one run:
* verify-batch over the ACAS Xu instances (../shared/data or RELULAB_DATA) with 1 local
  worker, 2 local workers and 2 Ray workers: wall time and the speed-up ratios;
* region counting of a random 5-D network with widths (W, W) (W = 30: about a million
  regions) in one process, and stitched over cells with 2 local workers and 2 Ray
  workers (counting streams: each cell sends back only its patterns); and enumeration with
  the stitched regions checked against one process on a smaller 5-D network;
* the overhead per task of each backend (a no-op over many items), from which
  docs/parallel.md extrapolates to 64 and 1,000 cores.

    python benchmarks/parallel.py                  # all 180 instances, 60 s cap each
    python benchmarks/parallel.py --every 6 --timeout 20   # a sample
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from relulab.cli.verify import read_instances, run_batch
from relulab.parallel import pmap


def noop(x):
    return x


def data_dir() -> Path | None:
    root = Path(os.environ.get("RELULAB_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    return root if (root / "acasxu" / "instances.csv").is_file() else None


def timed_batch(insts, workers, backend) -> tuple[float, list[dict]]:
    t0 = time.time()
    rows, partial = run_batch(insts, workers=workers, show_progress=False, backend=backend)
    assert not partial
    return time.time() - t0, rows


def region_net(d: int, w: int, seed: int = 0):
    import numpy as np

    from relulab import Network

    rng = np.random.default_rng(seed)
    dims = [d, w, w, 1]
    return Network([rng.normal(size=(dims[i + 1], dims[i])) * np.sqrt(2 / dims[i]) for i in range(3)],
                   [rng.normal(size=dims[i + 1]) * 0.5 for i in range(3)])


def bench_regions(width: int, no_ray: bool) -> dict:
    import numpy as np

    from relulab import Box, regions

    out: dict = {}
    box = Box(-np.ones(5), np.ones(5))
    net = region_net(5, width)
    t0 = time.time()
    n1 = regions.count(net, box)
    out["count one process"] = {"regions": n1, "wall": time.time() - t0}
    for label, backend in [("count stitched local x2", "local")] + ([] if no_ray else [("count stitched ray x2", "ray")]):
        t0 = time.time()
        n = regions.count(net, box, parallel=backend, workers=2, cells=16)
        out[label] = {"regions": n, "wall": time.time() - t0}
        assert n == n1, f"{label}: {n} regions, one process {n1}"
    for k, v in out.items():
        print(f"5-D {width}x2 regions, {k:24s}: {v['regions']} regions in {v['wall']:7.1f} s", flush=True)
    small = region_net(5, 16, seed=1)
    t0 = time.time()
    one = regions.enumerate(small, box, vertices=True)
    t_one = time.time() - t0
    t0 = time.time()
    st = regions.enumerate(small, box, parallel="local", workers=2, cells=8)
    t_st = time.time() - t0
    same = {r.pattern.tobytes() for r in one} == {r.pattern.tobytes() for r in st}
    print(f"5-D 16x2 enumeration: one process {len(one)} regions {t_one:.1f} s, stitched local x2 "
          f"{len(st)} regions {t_st:.1f} s, same patterns: {same}")
    out["enumerate 5-D 16x2"] = {"regions": len(one), "one process": t_one, "stitched local x2": t_st,
                                 "same": same}
    return out


def overhead(backend: str, n: int, workers: int) -> float:
    t0 = time.time()
    out = dict(pmap(noop, range(n), backend=backend, workers=workers))
    assert len(out) == n
    return (time.time() - t0) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--every", type=int, default=1, help="every K-th instance")
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--region-width", type=int, default=30, help="W of the 5-D W x W network")
    ap.add_argument("--skip-verify", action="store_true")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "parallel.json"))
    a = ap.parse_args()
    result: dict = {"cpus": os.cpu_count()}
    root = None if a.skip_verify else data_dir()
    if root is None:
        print("ACAS Xu data not found (../shared/data or RELULAB_DATA): verify-batch part skipped")
    else:
        insts = read_instances(str(root / "acasxu" / "instances.csv"))[:: a.every]
        insts = [(m, p, min(t, a.timeout)) for m, p, t in insts]
        runs = {}
        for label, workers, backend in [("local x1", 1, "local"), ("local x2", 2, "local")] + (
                [] if a.no_ray else [("ray x2", 2, "ray")]):
            if backend == "ray":
                import ray

                t0 = time.time()
                ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
                runs["ray start (s)"] = time.time() - t0
            wall, rows = timed_batch(insts, workers, backend)
            solved = sum(r["status"] in ("holds", "violated") for r in rows)
            runs[label] = {"wall": wall, "solved": solved, "cpu": sum(r["cpu"] for r in rows)}
            print(f"verify-batch {len(insts)} ACAS Xu instances, {label:9s}: {wall:8.1f} s, "
                  f"{solved} solved", flush=True)
        x1 = runs["local x1"]["wall"]
        print(f"speed-up local x2 / x1: {x1 / runs['local x2']['wall']:.2f}")
        if "ray x2" in runs:
            print(f"speed-up ray x2 / local x1: {x1 / runs['ray x2']['wall']:.2f}; "
                  f"Ray overhead against the local pool: "
                  f"{runs['ray x2']['wall'] / runs['local x2']['wall'] - 1:+.1%}")
        result["verify_batch"] = {"instances": len(insts), "timeout": a.timeout, **runs}
    result["regions"] = bench_regions(a.region_width, a.no_ray)
    per_task = {"local x2": overhead("local", 400, 2)}
    if not a.no_ray:
        import ray

        if not ray.is_initialized():
            t0 = time.time()
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
            result["ray start (s)"] = time.time() - t0
        overhead("ray", 20, 2)                      # warm the workers
        per_task["ray x2"] = overhead("ray", 400, 2)
    for k, v in per_task.items():
        print(f"overhead per task, {k}: {v * 1000:.2f} ms")
    result["overhead_per_task_s"] = per_task
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
