"""Column generation against the full-matrix search for two-hidden-layer max_n.

Same input in the same run: the exhaustive item family ``item_family(n, (2, 3))``.
* alternative: ``search_max_pairs(n, family)`` — every column built, one HiGHS LP
  minimising neurons over the whole family (what found the stored n = 7, 8 networks);
* ours: ``colgen_max_pairs(n, item_family(n, (2,)), family)`` — s = 2 orbits to start,
  the rest priced by the duals, neuron-minimising vertex over the working set only.
Both answers are exact (re-solved over Q, every equation checked); the table gives
seconds, columns built into the LP, second-layer neurons, and the ratios ours / theirs.

Writes benchmarks/results/maxn_colgen.json.

Run:  python benchmarks/maxn_colgen.py [--quick (n = 5, 6)] [--n 5 6 7]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from relulab.construct import colgen_max_pairs, item_family, search_max_pairs

ROOT = Path(__file__).resolve().parents[1]


def row(n: int) -> dict:
    fam = item_family(n, (2, 3))
    t0 = time.perf_counter()
    full = search_max_pairs(n, fam)
    t_full = time.perf_counter() - t0
    t0 = time.perf_counter()
    cg = colgen_max_pairs(n, item_family(n, (2,)), fam)
    t_cg = time.perf_counter() - t0
    neur_full = full.widths[1] if full.status == "found" else None
    neur_cg = cg.solution.widths[1] if cg.solution is not None else None
    return {"n": n, "family_orbits": len(fam),
            "full_status": full.status, "full_seconds": round(t_full, 1), "full_columns": len(fam),
            "full_neurons": neur_full,
            "colgen_status": cg.status, "colgen_seconds": round(t_cg, 1), "colgen_columns": cg.working_set,
            "colgen_neurons": neur_cg, "colgen_rounds": cg.rounds,
            "time_ratio": round(t_cg / t_full, 3) if t_full else None,
            "neuron_ratio": round(neur_cg / neur_full, 3) if neur_cg and neur_full else None}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="*", default=[5, 6, 7])
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    ns = [5, 6] if a.quick else a.n
    rows = []
    print(f"{'n':>3} {'orbits':>7} | {'full LP s':>9} {'neurons':>8} | {'colgen s':>8} {'columns':>7} "
          f"{'neurons':>8} | {'time ratio':>10} {'neuron ratio':>12}")
    for n in ns:
        r = row(n)
        rows.append(r)
        print(f"{n:>3} {r['family_orbits']:>7} | {r['full_seconds']:>9} {r['full_neurons']!s:>8} | "
              f"{r['colgen_seconds']:>8} {r['colgen_columns']:>7} {r['colgen_neurons']!s:>8} | "
              f"{r['time_ratio']!s:>10} {r['neuron_ratio']!s:>12}", flush=True)
    out = ROOT / "benchmarks" / "results" / "maxn_colgen.json"
    out.write_text(json.dumps({"rows": rows, "note": "2-core machine shared with other jobs"}, indent=1) + "\n")


if __name__ == "__main__":
    main()
