"""Which top-level segment orbits does max_n need?  A structural check at n = 6, 8, 10.

At the tight sizes n = 2s + 2 the family that contains max_n is the item orbits with
fewer items a side plus the s-segment orbits on all n inputs (``segment_orbits(s, n)``:
a red and a blue graph of s edges each).  This splits the segment orbits by whether the
union of the two graphs is a forest and decides each part exactly with ``decide_rows``
(an infeasible verdict carries an integer certificate re-checked on the whole system),
to see whether a structural class would shrink the s = 5 family that n = 11, 12 need.

    python experiments/maxn_forest.py [--n 6,8,10] [--cache DIR]

Results: experiments/results/maxn_forest.json.  Measured: the forest orbits suffice at
n = 6 and 8 but not at n = 10, so this class does not carry over.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results" / "maxn_forest.json"
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "experiments"))

from maxn_certgen import cached_columns  # noqa: E402

from relulab.construct import PairTerm, item_family  # noqa: E402
from relulab.construct.maxn_items import segment_orbits  # noqa: E402
from relulab.construct.maxn_rowgen import decide_rows  # noqa: E402


def union_is_forest(t: PairTerm) -> bool:
    """Whether the red (positive) and blue (negative) pair graphs of a segment term
    together have no cycle."""
    G = nx.Graph()
    G.add_nodes_from(range(t.k))
    G.add_edges_from((e[1], e[2]) for e in t.pos + t.neg)
    return nx.is_forest(G)


def lower_masses(n: int) -> tuple[int, ...]:
    """Item masses of the lower family: s < (n - 2) / 2 items a side for n <= 8, and the
    (2, 3) items of the n = 9, 10 searches."""
    s = (n - 2) // 2
    return tuple(range(1, s)) if n <= 8 else (2, 3)


def run(n: int, cache: Path | None) -> dict:
    s = (n - 2) // 2
    masses = lower_masses(n)
    low = item_family(n, masses)
    top = segment_orbits(s, n)
    low_cols = cached_columns(n, low, cache / f"cols{n}_items.npz" if cache and n > 8 else None)
    top_cols = cached_columns(n, top, None)
    forest = [union_is_forest(t) for t in top]
    rec = {"n": n, "s": s, "item_masses": list(masses), "item_orbits": len(low),
           "segment_orbits": len(top)}
    for name, keep in (("all", lambda f: True), ("forest", lambda f: f),
                       ("not_forest", lambda f: not f)):
        cols = [c for c, f in zip(top_cols, forest, strict=True) if keep(f)]
        t0 = time.monotonic()
        d = decide_rows(n, low_cols + cols)
        rec[name] = {"orbits": len(cols), "status": d.status, "rank": d.rank,
                     "seconds": round(time.monotonic() - t0, 1)}
        print(n, name, rec[name], flush=True)
    return rec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", default="6,8,10", help="comma-separated even n (6, 8, 10)")
    ap.add_argument("--cache", default=None, help="folder of the item column caches (n = 10)")
    a = ap.parse_args()
    cache = Path(a.cache) if a.cache else None
    out = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    for n in (int(v) for v in a.n.split(",")):
        out[f"n={n}"] = run(n, cache)
        RESULTS.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
