"""max_n with two hidden layers for n = 11, 12: the s <= 3 item orbits, the s = 4
segment orbits and a random sample of s = 5 segment orbits, pruned and decided exactly.

Stage ``columns`` computes and caches the keyed orbit columns of each family part (one
npz per part in ``--cache``); stage ``decide`` loads them, drops every column that is
the only one bending along some hyperplane (``maxn_mixed.pruning``: its weight is 0 in
every solution), and decides the survivors exactly by row generation
(``maxn_rowgen.decide_rows``).

    python experiments/maxn_s5.py --n 11 --part items|seg4|seg5 --sample 2000 --cache DIR
    python experiments/maxn_s5.py --n 11 --decide --sample 2000 --seed 0,1 --cache DIR

Results: experiments/results/maxn_s5.json (the verdicts; a solution, if found, in the
cache folder).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results" / "maxn_s5.json"
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "experiments"))

from maxn_certgen import cached_columns  # noqa: E402

from relulab.construct import PairTerm, item_family  # noqa: E402
from relulab.construct.maxn_colgen import _orbit_size  # noqa: E402
from relulab.construct.maxn_items import _invariant, segment_orbits  # noqa: E402


def random_segment_terms(s: int, n: int, count: int, seed: int) -> list[PairTerm]:
    """``count`` random terms with s distinct pair maxima a side (edge-disjoint sides)
    covering all n coordinates, one per invariant class."""
    rng = random.Random(seed)
    edges = [("m", i, j) for i in range(n) for j in range(i + 1, n)]
    seen: set = set()
    out: list[PairTerm] = []
    while len(out) < count:
        P = tuple(sorted(rng.sample(edges, s)))
        N = tuple(sorted(rng.sample(edges, s)))
        if set(P) & set(N) or len({c for e in P + N for c in e[1:]}) != n:
            continue
        inv = _invariant(P, N, n)
        if inv in seen:
            continue
        seen.add(inv)
        out.append(PairTerm(n, P, N))
    return out


def family(n: int, part: str, sample: int, seed: int) -> list[PairTerm]:
    if part == "items":
        return [PairTerm(n, t.pos, t.neg) for t in item_family(n, (2, 3))]
    if part == "seg4":
        return [PairTerm(n, t.pos, t.neg) for k in (n - 1, n) for t in segment_orbits(4, k)]
    return random_segment_terms(5, n, sample, seed)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=11)
    ap.add_argument("--part", choices=["items", "seg4", "seg5"], default=None)
    ap.add_argument("--sample", type=int, default=2000)
    ap.add_argument("--seed", default="0", help="seeds of the s = 5 samples (comma-separated)")
    ap.add_argument("--cache", required=True)
    ap.add_argument("--decide", action="store_true")
    ap.add_argument("--rows", type=int, default=6000, help="hyperplane rows of the first round")
    ap.add_argument("--batch", type=int, default=4000,
                    help="violated rows added per round (bounds the dense subsystem's memory)")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="seconds; checked between rounds of row generation (then status partial)")
    a = ap.parse_args()
    cache = Path(a.cache)
    cache.mkdir(parents=True, exist_ok=True)
    n = a.n
    seeds = [int(v) for v in str(a.seed).split(",")]
    parts = [a.part] if a.part else ["items", "seg4", "seg5"]
    parts = [(p, sd) for p in parts for sd in (seeds if p == "seg5" else [None])]
    terms, cols = [], []
    for part, seed in parts:
        t0 = time.monotonic()
        tag = f"{part}_{a.sample}_{seed}" if part == "seg5" else part
        tfile = cache / f"terms{n}_{tag}.json"  # the term lists too: listing seg4 takes minutes
        if tfile.exists():
            ts = [PairTerm.from_dict(d) for d in json.loads(tfile.read_text())]
        else:
            ts = family(n, part, a.sample, seed)
            tfile.write_text(json.dumps([t.to_dict() for t in ts]))
        cs = cached_columns(n, ts, cache / f"cols{n}_{tag}.npz")
        print(f"{part}: {len(ts)} orbits, {time.monotonic() - t0:.0f} s", flush=True)
        terms += ts
        cols += cs
    if not a.decide:
        return
    from relulab.construct.maxn_mixed import pruning
    from relulab.construct.maxn_rowgen import decide_rows

    t0 = time.monotonic()
    alive, _ = pruning(cols)
    rows = len(np.unique(np.concatenate([cols[j][0] for j in alive]))) if alive else 0
    print(f"pruning: {len(alive)} of {len(cols)} columns left, {rows} hyperplanes, "
          f"{time.monotonic() - t0:.0f} s", flush=True)
    rec = {"n": n, "parts": [p if sd is None else f"{p} seed {sd}" for p, sd in parts],
           "sample": a.sample, "columns": len(cols),
           "alive": len(alive), "hyperplanes_alive": rows}
    if alive:
        size = np.array([_orbit_size(terms[j], n) for j in alive], dtype=np.float64)
        order = [alive[i] for i in np.argsort(size, kind="stable")]  # the basis prefers small orbits
        kept = [cols[j] for j in order]
        del cols  # only the surviving columns stay in memory
        d = decide_rows(n, kept, initial_rows=min(rows, a.rows), batch=a.batch,
                        log=lambda s: print(s, flush=True), time_limit=a.time_limit)
        rec.update(status=d.status, rank=d.rank, rows_used=d.rows_used, rounds=d.rounds,
                   seconds=d.seconds)
        if d.status == "found":
            rec["solution"] = [{**terms[order[j]].to_dict(), "u": str(v)}
                               for j, v in sorted(d.solution.items()) if v]
    (cache / f"decide{n}_{a.sample}_{a.seed.replace(',', '-')}.json").write_text(json.dumps(rec, indent=1))
    old = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    old[f"n={n} s5 sample {a.sample} seeds {a.seed}"] = {k: v for k, v in rec.items() if k != "solution"}
    RESULTS.write_text(json.dumps(old, indent=1) + "\n")
    print(json.dumps({k: v for k, v in rec.items() if k != "solution"}), flush=True)


if __name__ == "__main__":
    main()
