"""Claim: the constructive GLU extraction (noise-aware path) tolerates outputs rounded
to p significand bits down to some p_min, and bfloat16 (p = 8) lies below it - so the
bf16 rows can only be the flagged least-squares fallback.

For a random 16 x 64 SiLU block the float64 outputs are rounded to p significand bits
(p = 24 is float32's output rounding, p = 8 bfloat16's) and extract_glu runs with the
width unknown; the table gives units found, queries and the median / worst relative
validation error against the true block.  It also says how many averaged queries
(``(noise_8 / noise_pmin)^2``) would buy bfloat16 outputs that precision by dithering.

    python experiments/extract_glu_noise.py [--quick] [--bits 24,22,20,18,16,12,8]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from relulab.extract import extract_glu, random_glu
from relulab.results import to_jsonable


def rounded(blk, p: int):
    def f(X):
        Y = blk(X)
        m, e = np.frexp(Y)
        return np.ldexp(np.round(np.ldexp(m, p)), e - p)
    return f


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--bits", default="24,22,20,18,16,12,8")
    ap.add_argument("--size", default="16x64")
    ap.add_argument("--act", default="silu")
    ap.add_argument("--out", default="experiments/results/extract_glu_noise.json")
    a = ap.parse_args()
    d, h = (int(v) for v in a.size.split("x"))
    bits = [int(b) for b in a.bits.split(",")]
    if a.quick:
        bits = [b for b in bits if b in (24, 16, 8)]
    blk = random_glu(d, h, act=a.act, seed=0)
    Xv = np.random.default_rng(5).normal(size=(512, d))
    Yv = blk(Xv)
    ny = np.linalg.norm(Yv, axis=1)
    rows = []
    print(f"{'bits':>4} {'noise':>9} {'status':>10} {'units':>5} {'log2 q':>7} {'cpu s':>6} {'median':>9} {'worst':>9}")
    for p in bits:
        c = time.process_time()
        r = extract_glu(rounded(blk, p), d, act=a.act, reference=blk, time_limit=120.0)
        cpu = time.process_time() - c
        if r.block is None:
            med = worst = None
        else:
            e = np.linalg.norm(r.block(Xv) - Yv, axis=1) / np.maximum(ny, 1e-3 * ny.mean())
            med, worst = float(np.median(e)), float(np.max(e))
        rows.append({"bits": p, "noise": r.noise, "status": r.status, "hidden_found": r.hidden,
                     "queries": r.queries, "cpu_s": round(cpu, 1), "median_rel_error": med,
                     "worst_rel_error": worst, "fallback": r.fallback})
        def f(v):
            return "-" if v is None else f"{v:.2e}"

        print(f"{p:>4} {r.noise:>9.1e} {r.status:>10} {str(r.hidden):>5} {math.log2(max(r.queries, 1)):>7.2f} "
              f"{cpu:>6.1f} {f(med):>9} {f(worst):>9}", flush=True)
    good = [r for r in rows if r["median_rel_error"] is not None and r["median_rel_error"] < 0.01]
    pmin = min((r["bits"] for r in good), default=None)
    verdict = {"p_min": pmin}
    if pmin is not None:
        n8 = next((r["noise"] for r in rows if r["bits"] == 8), 2.0 ** -9)
        nmin = next(r["noise"] for r in rows if r["bits"] == pmin)
        verdict["dither_repeats_for_bf16"] = (n8 / nmin) ** 2
        print(f"fewest bits recovered (< 1% median): {pmin}; bfloat16 would need about "
              f"{verdict['dither_repeats_for_bf16']:.0f} averaged queries per query to reach that precision")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(to_jsonable({"size": a.size, "act": a.act, "rows": rows, **verdict}), indent=1))


if __name__ == "__main__":
    main()
