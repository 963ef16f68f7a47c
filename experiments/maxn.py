"""Regenerate the stored two-hidden-layer max_n solutions and record how far the search goes.

Claim checked: the structured search (first layer relu(x_i - x_j), symmetry-reduced exact
linear system, ``relulab.construct.search_max_pairs``) finds a certified two-hidden-layer
network for every n <= 6 with the default family (s = 2 items a side, <= 6 coordinates),
and that family has no solution for n = 7 (HiGHS's verdict).  ``--extended`` certifies the
stored n = 7 network (182,807 second-layer neurons, about a minute) and ``--search7``
re-runs its search with random s = 3 terms on up to 7 coordinates (many minutes).

Writes ``src/relulab/construct/data/maxn.json`` (with ``--write``) and
``experiments/results/maxn.json``.

Run:  python experiments/maxn.py [--quick] [--write] [--extended]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from relulab.construct import (
    candidate_terms,
    certify_max_cones,
    certify_max_pairs,
    max_pairs_network,
    random_terms,
    search_max_pairs,
    stored_max_pairs,
)

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="n <= 5 only")
    ap.add_argument("--write", action="store_true", help="rewrite the stored solutions")
    ap.add_argument("--extended", action="store_true", help="certify the stored n = 7 network")
    ap.add_argument("--search7", action="store_true", help="re-run the n = 7 search (s = 3 terms)")
    args = ap.parse_args()
    if args.write and args.quick:
        ap.error("--write needs the full run (n <= 6), not --quick")
    rows, store = [], {}
    for n in range(3, 6 if args.quick else 8):
        t = time.perf_counter()
        s = search_max_pairs(n)
        row = {"n": n, "family": "s=2, k<=6", "status": s.status, "candidates": s.n_candidates,
               "hyperplanes": s.n_hyperplanes, "seconds": round(time.perf_counter() - t, 1)}
        if s.status == "found":
            net = max_pairs_network(n, s)
            cert = certify_max_cones(net, n)
            row.update(widths=list(net.widths), orbits=len(s.terms), certificate=cert.status)
            if cert.status == "certified":
                store[str(n)] = {"widths": list(net.widths),
                                 "terms": [{**t_.to_dict(), "coef": str(c)} for t_, c in s.terms]}
        rows.append(row)
        print(row, flush=True)
    if args.extended:
        t = time.perf_counter()
        c = certify_max_pairs(7, stored_max_pairs(7))
        row = {"n": 7, "family": "stored (s = 3 terms)", "status": "found", "widths": list(c.widths),
               "orbits": len(stored_max_pairs(7).terms), "certificate": c.status,
               "cones_covered": c.cones_covered, "seconds": round(time.perf_counter() - t, 1)}
        rows.append(row)
        print(row, flush=True)
    if args.search7:
        t = time.perf_counter()
        base = candidate_terms(2, 6)
        terms = base + random_terms(3, 7, 1500, seed=0, exclude=base)
        s = search_max_pairs(7, terms)
        row = {"n": 7, "family": "s=2, k<=6 + 1500 random s=3, k<=7", "status": s.status,
               "candidates": s.n_candidates, "hyperplanes": s.n_hyperplanes,
               "seconds": round(time.perf_counter() - t, 1)}
        if s.status == "found":
            row.update(widths=list(s.widths), orbits=len(s.terms),
                       certificate="every equation of the reduced system checked exactly; "
                                   "network too large to build here")
        rows.append(row)
        print(row, flush=True)
    out = ROOT / "experiments" / "results" / "maxn.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=1))
    if args.write:
        path = ROOT / "src" / "relulab" / "construct" / "data" / "maxn.json"
        about = ("two-hidden-layer max_n solutions found by relulab.construct.search_max_pairs "
                 "(first layer relu(x_i - x_j)); coef = output weight of every neuron of the "
                 "term's S_n-orbit; regenerate with experiments/maxn.py --write")
        old = json.loads(path.read_text()) if path.exists() else {}
        old.update(about=about, solutions=store)  # the "large" section (n = 7) is kept
        path.write_text(json.dumps(old) + "\n")
    found = [r["n"] for r in rows if r["status"] == "found" and r.get("certificate") == "certified"]
    print(f"certified two-hidden-layer networks for n = {found}; "
          f"claim {'held' if found == list(range(3, 6 if args.quick else 7)) else 'did NOT hold'}")


if __name__ == "__main__":
    main()
