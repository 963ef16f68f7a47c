"""max_n with two hidden layers for n = 9 (and 10): the s <= 3 item orbits plus the s = 4
segment orbits on all n coordinates, decided exactly; the solution stored in orbit-
factorised form, certified and evaluated exactly.

Claim tested: ``item_family(n, (2, 3)) + segment_orbits(4, n)`` contains max_n (first
layer ``relu(x_i - x_j)``), where ``item_family(9, (2, 3))`` alone provably does not
(experiments/maxn_decide.py).  The decision is exact (``decide_system``: modular basis
solution, every equation checked in integers, or an integer certificate of
infeasibility).  Columns are ordered by orbit size, so the basis solution prefers orbits
with few neurons.  A solution is then re-proved from its terms alone
(``certify_max_orbits``) and evaluated neuron by neuron on random rational inputs with
ties (``eval_max_orbits``) and, on 10^4 more, through the gap forms
(``method="chains"``), compared with max exactly.

    python experiments/maxn_orbits.py [--n 9] [--eval 20] [--chains 10000] [--cache DIR] [--write]
    python experiments/maxn_orbits.py --n 10 --eval 3 --chains 1000 --cache DIR   # the recorded n = 10 run

(n = 9: about 10 minutes on one core; n = 10: about 45, of which 9 for the columns, 11 for
the decision, 8 for the certificate and 4 for 1,000 gap-form evaluations.)

Results: experiments/results/maxn_orbits.json; ``--write`` stores the solution in
src/relulab/construct/data/maxn_orbits.json (read by ``stored_max_orbits``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "experiments"))

from maxn_certgen import cached_columns  # noqa: E402  (the experiments' column cache)

from relulab.construct import PairTerm, item_family  # noqa: E402
from relulab.construct.maxn_colgen import orbit_column  # noqa: E402
from relulab.construct.maxn_decide import columns_system, decide_system  # noqa: E402
from relulab.construct.maxn_items import segment_orbits  # noqa: E402
from relulab.construct.maxn_orbits import certify_max_orbits, eval_max_orbits, orbit_widths  # noqa: E402

DATA = ROOT / "src" / "relulab" / "construct" / "data" / "maxn_orbits.json"
RESULTS = ROOT / "experiments" / "results" / "maxn_orbits.json"


def columns(n: int, terms: list, cache: Path | None, tag: str) -> list:
    """Keyed orbit columns of ``terms`` (cached as one npz per family part)."""
    return cached_columns(n, terms, cache / f"cols{n}_{tag}.npz" if cache else None)


def dump_solutions(data: dict) -> str:
    """The data file with one term per line (readable diffs)."""
    lines = ["{", f' "about": {json.dumps(data["about"])},', ' "solutions": {']
    sols = list(data["solutions"].items())
    for i, (n, v) in enumerate(sols):
        lines.append(f'  {json.dumps(n)}: {{"n_candidates": {v["n_candidates"]}, "n_hyperplanes": '
                     f'{v["n_hyperplanes"]}, "widths": {json.dumps(v["widths"])}, "terms": [')
        lines += ["   " + json.dumps(t, separators=(",", ":")) + ("," if j < len(v["terms"]) - 1 else "")
                  for j, t in enumerate(v["terms"])]
        lines.append("  ]}" + ("," if i < len(sols) - 1 else ""))
    text = "\n".join(lines + [" }", "}"]) + "\n"
    assert json.loads(text) == data
    return text


def random_inputs(n: int, count: int, seed: int) -> list[list[Fraction]]:
    """Random rationals with small denominators, about a third of them with a tie at the top."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        x = [Fraction(rng.randint(-60, 60), rng.randint(1, 6)) for _ in range(n)]
        if rng.random() < 0.35:
            x[rng.randrange(n)] = max(x)
        out.append(x)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=9)
    ap.add_argument("--eval", type=int, default=20, help="random inputs evaluated neuron by neuron")
    ap.add_argument("--chains", type=int, default=10000,
                    help="random inputs evaluated on the sorted gaps (eval_max_orbits method='chains')")
    ap.add_argument("--cache", default=None, help="folder for the column caches")
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    n = a.n
    cache = Path(a.cache) if a.cache else None
    if cache:
        cache.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    # terms on n - 2 or n - 1 of n >= 10 inputs: their columns from all n! chains (about
    # 0.5 s each for n = 10) instead of the placement method (several seconds each)
    low = [PairTerm(n, t.pos, t.neg) if n >= 10 and n - 2 <= t.k < n else t
           for t in item_family(n, (2, 3))]
    top = segment_orbits(4, n)
    terms = low + top
    cols = columns(n, low, cache, "items23") + columns(n, top, cache, "seg4")
    t_cols = time.monotonic() - t0
    print(f"n={n}: {len(low)} item orbits (s <= 3) + {len(top)} segment orbits (s = 4, on {n}), "
          f"columns {t_cols:.0f} s", flush=True)
    size = np.array([t.orbit_size(n) for t in terms], dtype=np.int64)
    order = np.argsort(size, kind="stable")  # the basis prefers orbits with few neurons
    A, b, keys = columns_system(n, [cols[j] for j in order])
    d = decide_system(n, A, b)
    t_dec = time.monotonic() - t0 - t_cols
    print(f"decision: {d.status}, rank {d.rank}, {d.n_rows} rows x {d.n_columns} columns, {t_dec:.0f} s",
          flush=True)
    rec: dict = {"n": n, "family": {"items_s<=3": len(low), "segments_s=4_on_n": len(top)},
                 "status": d.status, "rank": d.rank, "rows": d.n_rows, "columns": d.n_columns,
                 "seconds": {"columns": round(t_cols, 1), "decision": round(t_dec, 1)}}
    if d.status == "found":
        sol = []
        for j, v in sorted(d.solution.items()):
            if v != 0:
                t = terms[int(order[j])]
                sol.append((t, v * orbit_column(t, n)[3]))
        t1 = time.monotonic()
        cert = certify_max_orbits(n, sol)
        rec["certificate"] = cert.to_dict()
        rec["seconds"]["certificate"] = round(time.monotonic() - t1, 1)
        print(f"certificate: {cert.status}, {cert.hyperplanes_checked} hyperplanes, "
              f"{rec['seconds']['certificate']} s", flush=True)
        widths = orbit_widths(n, sol)
        rec.update(orbits=len(sol), widths=list(widths),
                   max_denominator=max(c.denominator for _, c in sol))
        if a.eval:
            X = random_inputs(n, a.eval, seed=n)
            t1 = time.monotonic()
            got = eval_max_orbits(n, sol, X)
            ok = sum(g == max(x) for g, x in zip(got, X, strict=True))
            rec["evaluation"] = {"inputs": len(X), "equal_to_max": ok,
                                 "seconds_per_input": round((time.monotonic() - t1) / len(X), 2)}
            print(f"neuron-by-neuron evaluation: {ok}/{len(X)} equal to max", flush=True)
        if a.chains:
            X = random_inputs(n, a.chains, seed=1000 + n)
            t1 = time.monotonic()
            got = eval_max_orbits(n, sol, X, method="chains")
            ok = sum(g == max(x) for g, x in zip(got, X, strict=True))
            rec["evaluation_chains"] = {"inputs": len(X), "equal_to_max": ok,
                                        "seconds": round(time.monotonic() - t1, 1)}
            print(f"gap-form evaluation: {ok}/{len(X)} equal to max", flush=True)
        if a.write and cert.status == "certified":
            data = json.loads(DATA.read_text()) if DATA.exists() else {
                "about": "two-hidden-layer max_n solutions too large for weight matrices, "
                         "orbit-factorised (coef = output weight of every neuron of the term's "
                         "S_n-orbit); regenerate with experiments/maxn_orbits.py --write",
                "solutions": {}}
            data["solutions"][str(n)] = {
                "n_candidates": len(terms), "n_hyperplanes": cert.hyperplanes_checked,
                "widths": list(widths),
                "terms": [{**t.to_dict(), "coef": str(c)} for t, c in sol]}
            DATA.write_text(dump_solutions(data))
            print(f"wrote {DATA}", flush=True)
    elif d.status == "infeasible":
        rec["certificate_rows"] = len(d.certificate or {})
    old = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    old[str(n)] = rec
    RESULTS.write_text(json.dumps(old, indent=1) + "\n")
    print(json.dumps({k: v for k, v in rec.items() if k != "certificate"}))


if __name__ == "__main__":
    main()
