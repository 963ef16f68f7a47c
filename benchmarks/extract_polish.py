"""The final polish alone, timed: the attack runs with its polish hook replaced by a
recorder of the polish's inputs (network, kept oracle rows), then ``polish`` runs on them
with the chosen method; worst parameter error before/after by the aligned comparison of
``relulab.extract.fidelity`` (no equivalence check: that is ``benchmarks/extract.py``).

    PYTHONPATH=src python benchmarks/extract_polish.py --arch 80-40-20-1 --seeds 0,1 \
        --methods normal,lstsq --out benchmarks/results/extract_polish2_80-40-20-1.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import time

from extract import random_net

import relulab.extract.relu as R
from relulab.extract.fidelity import _align
from relulab.extract.polish import PolishReport, polish
from relulab.symmetry import canonical


def bits(ref, net) -> float | None:
    F, _ = canonical(ref.float())
    G, _ = canonical(net.float())
    al = _align(F, G)
    return None if al is None else round(-math.log2(al[0]), 1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="80-40-20-1")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--methods", default="normal")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    arch = [int(x) for x in a.arch.split("-")]
    for seed in map(int, a.seeds.split(",")):
        net = random_net(arch, seed)
        box: dict = {}

        def record(n, X, Y, box=box, **kw):
            box["in"] = (n, X.copy(), Y.copy())
            return n, PolishReport(False, 0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0, "recorded")

        real, R.polish_net = R.polish_net, record
        c = time.process_time()
        r = R.extract_relu(lambda X, net=net: net(X), arch[0], arch[1:-1], seed=seed, polish=True)
        attack_cpu = time.process_time() - c
        R.polish_net = real
        if "in" not in box:
            print(json.dumps({"arch": a.arch, "seed": seed, "status": r.status, "polished": False}))
            continue
        rec, X, Y = box["in"]
        for method in a.methods.split(","):
            c = time.process_time()
            pol, rep = polish(rec, X, Y, method=method)
            row = {"arch": a.arch, "seed": seed, "status": r.status, "queries": r.queries,
                   "attack_cpu_s": round(attack_cpu, 1), "method": method,
                   "polish_cpu_s": round(time.process_time() - c, 1),
                   "bits_before": bits(net, rec), "bits_after": bits(net, pol),
                   "accepted": rep.accepted, "steps": rep.iterations, "message": rep.message}
            print(json.dumps(row), flush=True)
            if a.out:
                with open(a.out, "a") as fh:
                    fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
