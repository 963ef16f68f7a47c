"""Exact decisions (relulab.construct.decide_family, no python-flint) for orbit families
of the two-hidden-layer max_n system.

Claim tested: item_family(9, (2, 3)) (every orbit with <= 3 items a side) contains no
two-hidden-layer max_9 with first layer relu(x_i - x_j) — reproducing the python-flint
proof of experiments/maxn_exact.py with relulab's own exact decision, and storing the
integer certificate compactly (row keys: the hyperplanes as integer gap forms).
Controls: n = 6 and 8 with the same family are feasible.

Writes experiments/results/maxn_decide.json (verdicts, ranks, sizes, times; for
infeasible families the certificate as {hyperplane: integer}).

Run:  python experiments/maxn_decide.py [--n 9] [--masses 2,3] [--quick (n = 6)]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from relulab.construct import decide_family, family_system, item_family
from relulab.construct.maxn_colgen import decode

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=9)
    ap.add_argument("--masses", default="2,3")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    if a.quick:
        a.n = 6
    masses = tuple(int(v) for v in a.masses.split(","))
    t0 = time.time()
    fam = item_family(a.n, masses)
    d = decide_family(a.n, fam)
    out = {"n": a.n, "family": f"item_family({a.n}, {masses})", "status": d.status, "rank": d.rank,
           "rows": d.n_rows, "columns": d.n_columns, "seconds": round(time.time() - t0, 1)}
    if d.certificate:
        _, _, keys = family_system(a.n, fam)
        R = len(keys)
        K = decode(__import__("numpy").array(keys, dtype="int64"), a.n)
        cert = {}
        for r, v in sorted(d.certificate.items()):
            name = ("H " + " ".join(map(str, K[r].tolist()))) if r < R else f"lin {r - R}"
            cert[name] = str(v)
        out["certificate"] = cert
        out["certificate_rows"] = len(cert)
        out["certificate_digits"] = max(len(str(abs(int(v)))) for v in cert.values())
    print({k: v for k, v in out.items() if k != "certificate"}, flush=True)
    dest = ROOT / "experiments" / "results" / "maxn_decide.json"
    old = json.loads(dest.read_text()) if dest.exists() else {}
    old[f"{a.n}:{a.masses}"] = out
    dest.write_text(json.dumps(old, indent=1) + "\n")


if __name__ == "__main__":
    main()
