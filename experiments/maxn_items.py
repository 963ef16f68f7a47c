"""max_n with two hidden layers beyond n = 7: the exhaustive item family.

Claim checked: with the first layer relu(x_i - x_j) (the layout the log-6 recursion
substitutes into) and second-layer neurons relu(sum of s items - sum of s items), the
family of *all* S_n-orbits with s <= 3 items a side (``item_family(n, (2, 3))``) makes the
symmetry-reduced linear system feasible for n = 8, and the neuron-minimising HiGHS vertex
survives the exact re-solve over Q and the exact cone certificate (one cone + the exact
symmetry proof, in integer arithmetic).  With ``--n 9`` the same family is tried for n = 9.

Measured on the shared 2-core machine (load about 15): n = 8: 6,309 orbits, 1,435
hyperplanes, feasible; the vertex has 36 orbits, 306,252 second-layer neurons; certified.

Writes ``experiments/results/maxn_items.json``; ``--write`` stores the solution in
``src/relulab/construct/data/maxn.json`` ("large" section, read by ``stored_max_pairs``).

Run:  python experiments/maxn_items.py [--n 8] [--quick] [--write] [--time-limit 900]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from relulab.construct import certify_max_pairs, item_family, search_max_pairs

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--quick", action="store_true", help="n = 6 with the s <= 3 family (minutes less)")
    ap.add_argument("--write", action="store_true", help="store a certified solution")
    ap.add_argument("--time-limit", type=float, default=900.0, help="HiGHS seconds")
    args = ap.parse_args()
    n = 6 if args.quick else args.n
    row: dict = {"n": n, "family": "item_family(n, (2, 3)): every orbit, s <= 3 items a side"}
    t = time.perf_counter()
    terms = item_family(n, (2, 3))
    row["orbits_listed"] = len(terms)
    s = search_max_pairs(n, terms, time_limit=args.time_limit)
    row.update(status=s.status, candidates=s.n_candidates, hyperplanes=s.n_hyperplanes,
               search_seconds=round(time.perf_counter() - t, 1))
    print(row, flush=True)
    if s.status == "found":
        row.update(widths=list(s.widths), orbits=len(s.terms),
                   terms=[{**t_.to_dict(), "coef": str(c)} for t_, c in s.terms])
        t = time.perf_counter()
        c = certify_max_pairs(n, s)
        row.update(certificate=c.status, cones_covered=c.cones_covered, by_symmetry=c.by_symmetry,
                   certificate_seconds=round(time.perf_counter() - t, 1))
        print({k: v for k, v in row.items() if k != "terms"}, flush=True)
        if args.write and c.status == "certified" and not args.quick:
            path = ROOT / "src" / "relulab" / "construct" / "data" / "maxn.json"
            data = json.loads(path.read_text())
            data.setdefault("large", {})[str(n)] = {
                "widths": list(s.widths),
                "note": (f"found by search_max_pairs({n}, item_family({n}, (2, 3))); certified by "
                         f"certify_max_pairs({n}, stored_max_pairs({n})) (one cone + exact symmetry "
                         f"proof); {s.widths[1]} second-layer neurons: built in float64 only"),
                "terms": row["terms"]}
            path.write_text(json.dumps(data) + "\n")
    out = ROOT / "experiments" / "results" / "maxn_items.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    old = json.loads(out.read_text()) if out.exists() else {}
    old[str(n)] = row
    out.write_text(json.dumps(old, indent=1) + "\n")
    held = row.get("certificate") == "certified"
    print(f"n = {n}: {'certified two-hidden-layer network' if held else 'no certified network'}; "
          f"claim {'held' if held else 'did NOT hold'} on this run")


if __name__ == "__main__":
    main()
