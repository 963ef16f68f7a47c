"""Speed-up of relulab.parallel on this machine: 1 against 2 workers, local pool against Ray.

Measures, in one run:
* verify-batch over the ACAS Xu instances (../shared/data or RELULAB_DATA) with 1 local
  worker, 2 local workers and 2 Ray workers: wall time and the speed-up ratios;
* region counting of a random 5-D network with widths (W, W) (W = 30: about a million
  regions) in one process, and over cells with 2 local workers and 2 Ray workers (each
  cell counts the regions it owns and sends back one number);
* full enumeration (every region's data kept) in one process against 2 local workers
  (cells cut along first-layer hyperplanes) of random 5-D networks of 48,067, 374,497
  and 1,263,360 regions (W = 16, 24, 30), regions, facets and graph checked identical;
* Ray's start-up (workers that import relulab as they start) apart from the batch run
  on its fresh workers, and the same batch again on the started workers;
* CPU time next to wall time: the one process's CPU seconds against the driver's plus
  the local workers' (the work the split adds, which a loaded machine does not hide the
  way it hides wall-clock speed-ups);
* the overhead per task of each backend (a no-op over many items), from which
  docs/parallel.md extrapolates to 64 and 1,000 cores.

    python benchmarks/parallel.py                  # all 180 instances, 60 s cap each
    python benchmarks/parallel.py --every 6 --timeout 20   # a sample
    python benchmarks/parallel.py --quick          # every 12th instance, a 5-D 20x20 count
    python benchmarks/parallel.py --ray-profile --every 3   # only: where Ray's CPU goes

``--ray-profile`` runs the verify-batch instances on the local pool and on Ray (fresh and
started workers) and reports the CPU seconds of every process of the run (the driver,
the local workers, Ray's daemons and workers, sampled with psutil), the CPU seconds the
instances measured inside their workers, and the time workers held no item (before the
first, between items, after the last); also Ray's start-up and 10 s of Ray idle. CPU
seconds and held time are comparable on a loaded machine, where wall times are not.
Written to benchmarks/results/parallel_ray_profile.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from relulab.cli.verify import BATCH_MODULES, read_instances, run_batch
from relulab.parallel import pmap, start_ray


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


def cpu_seconds() -> tuple[float, float]:
    """CPU seconds of this process and of its finished (waited-for) child processes: the
    local pool's workers are children, so their CPU time shows up in the second."""
    import resource

    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime, b.ru_utime + b.ru_stime


def timed(fn):
    """``fn()`` with its wall time and CPU time (driver + local workers)."""
    s0, c0 = cpu_seconds()
    t0 = time.time()
    out = fn()
    wall = time.time() - t0
    s1, c1 = cpu_seconds()
    return out, wall, (s1 - s0) + (c1 - c0)


def bench_regions(width: int, no_ray: bool, cells: int | None) -> dict:
    import numpy as np

    from relulab import Box, regions

    out: dict = {}
    box = Box(-np.ones(5), np.ones(5))
    net = region_net(5, width)
    n1, wall, cpu = timed(lambda: regions.count(net, box))
    out["count one process"] = {"regions": n1, "wall": wall, "cpu": cpu}
    runs = [("count cells local x2", "local")] + ([] if no_ray else [("count cells ray x2", "ray")])
    for label, backend in runs:
        n, wall, cpu = timed(lambda b=backend: regions.count(net, box, parallel=b, workers=2,
                                                               cells=cells))
        # Ray's workers are not children of this process: their CPU time is not counted
        out[label] = {"regions": n, "wall": wall, "cpu": cpu if backend == "local" else None}
        assert n == n1, f"{label}: {n} regions, one process {n1}"
    print(f"\ncount the regions of a random 5-D {width}x{width} network ({n1} regions)")
    print(f"{'run':24s} {'wall s':>8s} {'speed-up':>9s} {'CPU s':>8s} {'CPU vs one':>11s}")
    one = out["count one process"]
    for k, v in out.items():
        cpu_txt = f"{v['cpu']:8.1f} {v['cpu'] / one['cpu'] - 1:+10.1%}" if v["cpu"] is not None \
            else f"{'-':>8s} {'-':>11s}"
        print(f"{k:24s} {v['wall']:8.1f} {one['wall'] / v['wall']:8.2f}x {cpu_txt}", flush=True)
    return out


def regions_in_order(one, st) -> np.ndarray:
    """For each region of ``one``, the index of the region of ``st`` with its pattern
    (asserts that both sets hold the same patterns, each once)."""
    assert len(one) == len(st), f"{len(st)} regions against {len(one)}"
    idx = st.pattern_table().find(one.packed_patterns)
    assert np.all(idx >= 0) and np.unique(idx).size == idx.size, "patterns differ"
    return idx


def same_facets_and_graph(one, st, idx: np.ndarray) -> tuple[bool, bool]:
    """Facets (hyperplane ids, per region) and dual graph of ``st`` against ``one``,
    vectorised (the regions matched by pattern through ``idx``)."""
    from relulab import regions

    n1 = np.diff(one.facet_ptr)
    n2 = np.diff(st.facet_ptr)[idx]
    same_f = bool(np.array_equal(n1, n2))
    if same_f:
        # st's facet rows gathered in one's region order (ids are sorted within a region)
        starts = np.repeat(st.facet_ptr[idx], n2)
        offs = np.arange(n2.sum()) - np.repeat(np.cumsum(n2) - n2, n2)
        same_f = bool(np.array_equal(one.facet_ids, st.facet_ids[starts + offs]))
    inv = np.empty(len(st), dtype=np.int64)
    inv[idx] = np.arange(len(one))

    def canon(E, m=None):
        a, b = (E[:, 0], E[:, 1]) if m is None else (m[E[:, 0]], m[E[:, 1]])
        key = np.minimum(a, b) * len(one) + np.maximum(a, b)
        return np.sort(key)

    ga, gb = canon(regions.adjacency(one)), canon(regions.adjacency(st), inv)
    return same_f, bool(np.array_equal(ga, gb))


def bench_enumeration(sizes: list[tuple[int, int]]) -> dict:
    """Full enumeration (every region's data kept) in one process against 2 local
    workers (cells cut along first-layer hyperplanes), on random 5-D networks; the
    regions, facets and graph checked identical."""
    from relulab import Box, regions

    box = Box(-np.ones(5), np.ones(5))
    out: dict = {}
    print("\nenumerate random 5-D W x W networks, all region data kept")
    print(f"{'network':>8s} {'regions':>9s} {'one s':>7s} {'x2 s':>7s} {'speed-up':>9s} "
          f"{'CPU one':>8s} {'CPU x2':>7s} {'cells':>5s} {'same':>5s}  how")
    for w, seed in sizes:
        net = region_net(5, w, seed)
        one, w1, c1 = timed(lambda n=net: regions.enumerate(n, box))
        st, w2, c2 = timed(lambda n=net: regions.enumerate(n, box, parallel="local", workers=2))
        idx = regions_in_order(one, st)
        same_f, same_g = same_facets_and_graph(one, st, idx)
        how = st.info.get("parallel", "")
        row = {"regions": len(one), "one process": {"wall": w1, "cpu": c1},
               "local x2": {"wall": w2, "cpu": c2, "cells": st.info.get("cells", 1), "how": how},
               "same regions": True, "same facets": same_f, "same graph": same_g,
               "speed-up": w1 / w2}
        out[f"5-D {w}x{w} seed {seed}"] = row
        print(f"{w:>4d}x{w:<3d} {len(one):9d} {w1:7.2f} {w2:7.2f} {w1 / w2:8.2f}x {c1:8.1f} "
              f"{c2:7.1f} {row['local x2']['cells']:5d} {str(same_f and same_g):>5s}  {how}",
              flush=True)
        del one, st, idx
    return out


def facet_keys(rs) -> set:
    """(pattern, sorted facet ids) of every region: its H-representation by hyperplane."""
    P, ids, ptr = rs.packed_patterns, rs.facet_ids, rs.facet_ptr
    return {(P[i].tobytes(), np.sort(ids[ptr[i]:ptr[i + 1]]).tobytes()) for i in range(len(rs))}


def check_standard_networks(cells: list[int]) -> list[dict]:
    """Stitched enumeration against one process on the nine networks of
    benchmarks/regions.py: the same regions (patterns), facets (by hyperplane), graph and
    count, with 2 local workers and each number of cells."""
    import importlib.util

    from relulab import Box, regions
    from relulab.io.torch import from_torch

    spec = importlib.util.spec_from_file_location("bench_regions", Path(__file__).parent / "regions.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rows = []
    print(f"\n{'network':9s} {'regions':>8s} {'cells':>5s} {'same regions':>12s} {'facets':>7s} "
          f"{'graph':>6s} {'count':>6s} {'one s':>6s} {'x2 s':>6s}")
    for name, d, widths, expected, *_ in mod.NETWORKS:
        net = from_torch(mod.torch_model(d, widths))
        box = Box(-np.ones(d), np.ones(d))
        t0 = time.time()
        one = regions.enumerate(net, box)
        t_one = time.time() - t0
        ga = {frozenset((one.packed_patterns[i].tobytes(), one.packed_patterns[j].tobytes()))
              for i, j, _ in regions.adjacency(one)}
        fa = facet_keys(one)
        for c in cells:
            t0 = time.time()
            st = regions.enumerate(net, box, parallel="local", workers=2, cells=c)
            t_st = time.time() - t0
            gb = {frozenset((st.packed_patterns[i].tobytes(), st.packed_patterns[j].tobytes()))
                  for i, j, _ in regions.adjacency(st)}
            same = {p.tobytes() for p in one.packed_patterns} == {p.tobytes() for p in st.packed_patterns}
            n_count = regions.count(net, box, parallel="local", workers=2, cells=c)
            row = {"network": name, "regions": len(one), "expected": expected, "cells": c,
                   "same regions": same and len(st) == len(one), "same facets": fa == facet_keys(st),
                   "same graph": ga == gb, "same count": n_count == len(one),
                   "one process s": t_one, "stitched x2 s": t_st}
            rows.append(row)
            print(f"{name:9s} {len(one):8d} {c:5d} {str(row['same regions']):>12s} "
                  f"{str(row['same facets']):>7s} {str(row['same graph']):>6s} "
                  f"{str(row['same count']):>6s} {t_one:6.2f} {t_st:6.2f}", flush=True)
    return rows


def overhead(backend: str, n: int, workers: int, chunksize: int = 1) -> float:
    t0 = time.time()
    out = dict(pmap(noop, range(n), backend=backend, workers=workers, chunksize=chunksize))
    assert len(out) == n
    return (time.time() - t0) / n


# ------------------------------------------------------------------ where the CPU goes
class CpuSampler:
    """CPU seconds (user + system) of this process and every descendant (the local pool's
    workers; with Ray started here: gcs_server, raylet, the dashboard, agents, monitors and
    the worker processes), sampled every ``period`` s in a thread so that a process that
    exits during the run keeps its last sample. ``stop()`` gives, per process, the CPU
    seconds it used between ``start()`` and ``stop()`` (0 at start for a process that
    appeared during the run). CPU seconds, unlike wall time, do not depend on what else
    runs on the machine."""

    def __init__(self, period: float = 0.2) -> None:
        import importlib
        import threading

        import ray  # noqa: F401 - Ray ships psutil in its third-party folder (on sys.path)

        psutil = importlib.import_module("psutil")

        self.psutil, self.period = psutil, period
        self.me = psutil.Process()
        self.first: dict[int, float] = {}
        self.last: dict[int, float] = {}
        self.label: dict[int, str] = {}
        self.busy: set[int] = set()             # pids that ran an instance (Ray workers)
        self._tid = -1
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _name(self, p) -> str:
        if p.pid == self.me.pid:
            return "driver"
        name = p.name()
        if name.startswith("ray::") and "Agent" not in name:
            return "ray worker"                  # a Ray worker renames itself after its task
        cmd = p.cmdline()
        if p.ppid() == self.me.pid and cmd == self.me.cmdline():
            return "local worker"                # forked by the local pool
        scripts = [Path(c).name for c in cmd if c.endswith(".py")]
        if scripts and scripts[0] in ("default_worker.py", "setup_worker.py"):
            return "ray worker"
        return scripts[0] if scripts else name

    def _sample(self, initial: bool) -> None:
        ps = [self.me] + self.me.children(recursive=True)
        for p in ps:
            try:
                t = p.cpu_times()
                cpu = t.user + t.system
                if p.pid not in self.label:
                    self.label[p.pid] = self._name(p)
                    self.first[p.pid] = cpu if initial else 0.0
                self.last[p.pid] = cpu
            except self.psutil.Error:
                continue

    def _run(self) -> None:
        import threading

        self._tid = threading.get_native_id()
        while not self._stop.wait(self.period):
            self._sample(False)

    def _own_cpu(self) -> float:
        """CPU seconds of the sampling thread (taken off the driver's)."""
        for t in self.me.threads():
            if t.id == self._tid:
                return t.user_time + t.system_time
        return 0.0

    def start(self) -> CpuSampler:
        self._sample(True)
        self._thread.start()
        return self

    def stop(self) -> dict[str, float]:
        """CPU seconds per process ("label pid") during the run."""
        own = self._own_cpu()
        self._stop.set()
        self._thread.join()
        self._sample(False)
        self.last[self.me.pid] -= own
        return {f"{self.label[p]} {p}": self.last[p] - self.first[p] for p in self.label}


def stamped_instance(inst) -> dict:
    """``run_instance`` with the worker's pid and the wall-clock times it held the item."""
    from relulab.cli.verify import run_instance

    t0 = time.time()
    row = run_instance(inst)
    row.update(pid=os.getpid(), t0=t0, t1=time.time())
    return row


def stamped_batch(insts, backend: str) -> tuple[float, list[dict]]:
    """The verify-batch run (2 workers, longest time limit first, the same map of
    ``run_instance`` as ``run_batch`` without its progress bar) with each instance stamped
    by :func:`stamped_instance`."""
    order = sorted(insts, key=lambda t: -float(t[2]))
    t0 = time.time()
    rows = [r for _, r in pmap(stamped_instance, order, backend=backend, workers=2,
                               preload=BATCH_MODULES)]
    wall = time.time() - t0
    for r in rows:
        r["t0"], r["t1"] = r["t0"] - t0, r["t1"] - t0
    return wall, rows


def worker_idle(rows: list[dict], wall: float) -> dict:
    """Seconds each worker held no item during the batch: before its first item, between
    items (the backend's hand-over) and after its last (the tail), summed over workers.
    Unlike CPU seconds, held time counts the time a worker was descheduled, so what is
    left is the time the backend kept it without work: robust to a loaded machine."""
    by: dict[int, list] = {}
    for r in rows:
        by.setdefault(r["pid"], []).append((r["t0"], r["t1"]))
    out = {"first": 0.0, "between": 0.0, "tail": 0.0}
    for spans in by.values():
        spans.sort()
        out["first"] += spans[0][0]
        out["between"] += sum(max(b[0] - a[1], 0.0) for a, b in zip(spans, spans[1:], strict=False))
        out["tail"] += wall - spans[-1][1]
    out["workers"] = len(by)
    out["items"] = len(rows)
    return out


def thread_settings(_) -> dict:
    """What decides how many threads the work of one item uses in this worker process:
    OMP_NUM_THREADS (Ray sets it to the worker's CPUs; forked local workers inherit the
    driver's) and the BLAS thread pools that numpy loaded."""
    out: dict = {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")}
    try:
        from threadpoolctl import threadpool_info

        out["blas threads"] = {d["internal_api"]: d["num_threads"] for d in threadpool_info()}
    except ImportError:
        pass
    return out


def ray_profile(insts, out: dict) -> None:
    """Where Ray's CPU goes during verify-batch, against the local pool: CPU seconds of
    every process of the run (sampled, see :class:`CpuSampler`) next to the CPU seconds
    the instances themselves measured inside their workers."""
    import importlib

    import ray

    for m in BATCH_MODULES:            # imported before the runs, as the local pool's fork needs
        importlib.import_module(m)
    rows_out: dict = {}
    for label in ("local x2", "ray start", "ray x2", "ray x2 warm", "ray idle 10 s"):
        if label == "ray start":
            s = CpuSampler().start()
            t0 = time.time()
            start_ray(workers=2, preload=BATCH_MODULES)
            wall, inst_cpu = time.time() - t0, 0.0
        elif label == "ray idle 10 s":
            s = CpuSampler().start()
            time.sleep(10)
            wall, inst_cpu = 10.0, 0.0
        else:
            s = CpuSampler().start()
            wall, rows = stamped_batch(insts, "ray" if label.startswith("ray") else "local")
            inst_cpu = sum(r["cpu"] for r in rows)
            idle = worker_idle(rows, wall)
        per = s.stop()
        total = sum(per.values())
        workers = sum(v for k, v in per.items() if k.startswith(("local worker", "ray worker")))
        driver = sum(v for k, v in per.items() if k.startswith("driver"))
        parts = {"instances": inst_cpu, "workers outside instances": workers - inst_cpu,
                 "driver": driver, "other processes (Ray's daemons)": total - workers - driver}
        rows_out[label] = {"wall": wall, "instances cpu": inst_cpu, "parts": parts,
                           "processes": per}
        print(f"\n{label}: wall {wall:.1f} s, CPU of all processes {total:.2f} s "
              f"({total / wall:.2f} cores): " + ", ".join(f"{k} {v:.2f} s" for k, v in parts.items()))
        if "x2" in label:
            rows_out[label]["worker idle s"] = idle
            print(f"  workers without an item: before the first {idle['first']:.2f} s, between "
                  f"items {idle['between']:.2f} s ({idle['between'] / idle['items'] * 1000:.1f} ms "
                  f"per item), after the last {idle['tail']:.2f} s")
        print(f"  {'process':40s} {'CPU s':>7s}")
        for k, v in sorted(per.items(), key=lambda kv: -kv[1]):
            if v >= 0.01:
                print(f"  {k:40s} {v:7.2f}")
    for backend in ("local", "ray"):
        rows_out[f"threads in a {backend} worker"] = t = dict(pmap(thread_settings, [0], workers=2,
                                                                   backend=backend))[0]
        print(f"threads in a {backend} worker: {t}")
    ray.shutdown()
    out["ray_profile"] = rows_out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--every", type=int, default=1, help="every K-th instance")
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--quick", action="store_true", help="every 12th instance, 20 s cap, W = 20")
    ap.add_argument("--region-width", type=int, default=30, help="W of the 5-D W x W network")
    ap.add_argument("--cells", type=int, default=None,
                    help="cells of the region count (default: relulab's, 4 per worker)")
    ap.add_argument("--skip-verify", action="store_true")
    ap.add_argument("--skip-regions", action="store_true", help="no region counting or enumeration")
    ap.add_argument("--check", action="store_true",
                    help="only check stitched = one process on the networks of benchmarks/regions.py")
    ap.add_argument("--ray-profile", action="store_true",
                    help="only: CPU seconds of every process (driver, local workers, Ray's "
                         "daemons and workers) during verify-batch, local pool against Ray")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "parallel.json"))
    a = ap.parse_args()
    if a.quick:
        a.every, a.timeout, a.region_width = max(a.every, 12), min(a.timeout, 20.0), 20
    result: dict = {"cpus": os.cpu_count()}
    if a.check:
        rows = check_standard_networks([2, 8, 32])
        out = Path(a.out).with_name("parallel_check.json")
        out.write_text(json.dumps(rows, indent=2))
        ok = all(r[k] for r in rows for k in ("same regions", "same facets", "same graph", "same count"))
        print(f"all identical: {ok}; written to {out}")
        return
    if a.ray_profile:
        root = data_dir()
        if root is None:
            raise SystemExit("--ray-profile needs the ACAS Xu data (../shared/data or RELULAB_DATA)")
        insts = read_instances(str(root / "acasxu" / "instances.csv"))[:: a.every]
        insts = [(m, p, min(t, a.timeout)) for m, p, t in insts]
        ray_profile(insts, result)
        out = Path(a.out).with_name("parallel_ray_profile.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2))
        print(f"written to {out}")
        return
    root = None if a.skip_verify else data_dir()
    if root is None:
        print("verify-batch part skipped: " + ("--skip-verify" if a.skip_verify else
                                                "ACAS Xu data not found (../shared/data or RELULAB_DATA)"))
    else:
        insts = read_instances(str(root / "acasxu" / "instances.csv"))[:: a.every]
        insts = [(m, p, min(t, a.timeout)) for m, p, t in insts]
        runs = {}
        # Ray's start-up (ray.init and its worker processes, which import relulab and what
        # run_instance imports as they start: relulab.parallel.start_ray) is timed apart;
        # "ray x2" is the batch on those fresh workers (never used before), "ray x2 warm" the
        # same batch again on the same workers (a second batch on a running cluster).
        for label, workers, backend in [("local x1", 1, "local"), ("local x2", 2, "local")] + (
                [] if a.no_ray else [("ray x2", 2, "ray"), ("ray x2 warm", 2, "ray")]):
            if label == "ray x2":
                runs["ray start (s)"] = start_ray(workers=2, preload=BATCH_MODULES)
                print(f"Ray start-up, 2 workers with relulab imported: {runs['ray start (s)']:.1f} s")
            if workers == 1:
                wall, rows = timed_batch(insts, workers, backend)
            else:       # the same map as verify-batch, each item stamped with its worker
                wall, rows = stamped_batch(insts, backend)
            solved = sum(r["status"] in ("holds", "violated") for r in rows)
            runs[label] = {"wall": wall, "solved": solved, "cpu": sum(r["cpu"] for r in rows)}
            print(f"verify-batch {len(insts)} ACAS Xu instances, {label:11s}: {wall:8.1f} s, "
                  f"{solved} solved, instance CPU {runs[label]['cpu']:.1f} s", flush=True)
            if workers == 2:
                idle = runs[label]["worker idle s"] = worker_idle(rows, wall)
                print(f"  workers without an item: between items {idle['between']:.2f} s, "
                      f"after the last {idle['tail']:.2f} s (the tail: one worker done, the "
                      f"other on its last item)")
        x1 = runs["local x1"]["wall"]
        print(f"speed-up local x2 / x1: {x1 / runs['local x2']['wall']:.2f}; instance CPU x2 "
              f"against x1: {runs['local x2']['cpu'] / runs['local x1']['cpu'] - 1:+.1%}")
        if "ray x2" in runs:
            def balanced(lab):   # the wall time had both workers finished together
                return runs[lab]["wall"] - runs[lab]["worker idle s"]["tail"] / 2

            for lab in ("ray x2", "ray x2 warm"):
                print(f"speed-up {lab} / local x1: {x1 / runs[lab]['wall']:.2f}; "
                      f"Ray overhead against the local pool ({lab}): "
                      f"{runs[lab]['wall'] / runs['local x2']['wall'] - 1:+.1%} "
                      f"(without the tails: {balanced(lab) / balanced('local x2') - 1:+.1%})")
            both = runs["ray start (s)"] + runs["ray x2"]["wall"]
            print(f"Ray start-up + batch on its fresh workers: {both:.1f} s "
                  f"({both / runs['local x2']['wall'] - 1:+.1%} against the local pool)")
        result["verify_batch"] = {"instances": len(insts), "timeout": a.timeout, **runs}
    if not a.no_ray:
        result["ray start (s)"] = start_ray(workers=2)   # 0 when the batch above started it
    if not a.skip_regions:
        result["regions"] = bench_regions(a.region_width, a.no_ray, a.cells)
        result["enumerate"] = bench_enumeration([(16, 1), (20, 0)] if a.quick else
                                                [(16, 1), (24, 0), (a.region_width, 0)])
    per_task = {"local x2": overhead("local", 400, 2),
                "local x2, chunks of 50": overhead("local", 4000, 2, chunksize=50)}
    if not a.no_ray:
        import ray

        if not ray.is_initialized():
            result["ray start (s)"] = start_ray(workers=2)
        overhead("ray", 20, 2)                      # warm the workers
        per_task["ray x2"] = overhead("ray", 400, 2)
        per_task["ray x2, chunks of 50"] = overhead("ray", 4000, 2, chunksize=50)
    for k, v in per_task.items():
        print(f"overhead per task, {k}: {v * 1000:.2f} ms")
    result["overhead_per_task_s"] = per_task
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
