"""Column generation for max_n with two hidden layers beyond the s <= 3 item family.

Claim tested: a candidate family richer than every orbit with <= 3 items a side (which
has *no* solution for n = 9, exactly: experiments/maxn_exact.py) contains a
two-hidden-layer max_9 (first layer relu(x_i - x_j)), and column generation over lazily
generated candidates (s = 4, 5 items a side on 7..9 coordinates, at random) finds it
without materialising the family.

Stream: item_family(n, (2, 3)) first (the exhaustive s <= 3 orbits), then random terms
cycling over (k, s) in ``--mix``.  Writes experiments/results/maxn_colgen_<n>.json (the
run's history and verdict; when found, the exact solution's terms and coefficients).

Run:  python experiments/maxn_colgen.py [--n 9] [--time 2400] [--quick (n = 7, 120 s)]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from relulab.construct import item_family
from relulab.construct.maxn_colgen import colgen_max_pairs, random_item_terms

ROOT = Path(__file__).resolve().parents[1]


def stream(n: int, mix: list[tuple[int, int]], seed: int, first_masses: tuple[int, ...]):
    if first_masses:
        yield from item_family(n, first_masses)
    gens = [iter(random_item_terms(n, k, s, 10**9, seed=seed + 7919 * i, disjoint=d))
            for i, (k, s, d) in enumerate(mix)]
    while gens:  # round robin; a generator that gives up (impossible or too rare) drops out
        for g in list(gens):
            t = next(g, None)
            if t is None:
                gens.remove(g)
            else:
                yield t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=9)
    ap.add_argument("--time", type=float, default=2400.0)
    ap.add_argument("--batch", type=int, default=300)
    ap.add_argument("--chunk", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mix", default="9:4,8:4,9:5,7:4,9:3")
    ap.add_argument("--initial", default="2", help="masses of the initial working set")
    ap.add_argument("--first", default="3", help="masses streamed before the random terms")
    ap.add_argument("--out", default="", help="suffix of the result file")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    if a.quick:
        a.n, a.time, a.mix = 7, 120.0, "7:3,6:3"
    # k:s (random items) or k:s:d (each side on disjoint coordinates)
    mix = [tuple(int(v) for v in p.split(":")) for p in a.mix.split(",")]
    mix = [(m[0], m[1], len(m) > 2 and m[2] == 1) for m in mix if m[0] <= a.n]
    init = item_family(a.n, tuple(int(v) for v in a.initial.split(",")))
    first = tuple(int(v) for v in a.first.split(",")) if a.first else ()
    cands = stream(a.n, mix, a.seed, first) if first else stream(a.n, mix, a.seed, ())
    t0 = time.time()
    res = colgen_max_pairs(a.n, init, cands, time_limit=a.time, batch=a.batch, chunk=a.chunk,
                           log=lambda s: print(s, flush=True))
    out = {"n": a.n, "status": res.status, "working_set": res.working_set, "priced": res.priced,
           "rounds": res.rounds, "residual": res.residual, "seconds": round(time.time() - t0, 1),
           "history": [list(h) for h in res.history], "mix": a.mix, "initial": a.initial,
           "first": a.first, "seed": a.seed}
    if res.solution is not None:
        sol = res.solution
        out["widths"] = list(sol.widths)
        out["terms"] = [{**t.to_dict(), "coef": str(c)} for t, c in sol.terms]
    print({k: v for k, v in out.items() if k not in ("terms", "history")}, flush=True)
    dest = ROOT / "experiments" / "results" / f"maxn_colgen_{a.n}{a.out}.json"
    dest.write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", dest, file=sys.stderr)


if __name__ == "__main__":
    main()
