"""Search, certify and store two-hidden-layer max_n networks from block-symmetric neurons.

Claim checked: the block family of ``relulab.construct.maxn_blocks`` (first layer
relu(x_i - x_j); second-layer orbits with block stabilisers S_a1 x ... x S_ar, r <= 3,
small integer coefficients) contains an exactly certified representation of max_n with
two hidden layers for each n searched, and the network's widths are reported.  Each
solution is certified twice: the exact symmetry proof + one ordering cone, and (for
n <= 7) all n! cones without the symmetry shortcut.

Writes ``experiments/results/maxn_blocks.json`` and, with ``--write``, merges the certified
solutions into ``src/relulab/construct/data/maxn_blocks.json``.

Run:  python experiments/maxn_blocks.py [--quick] [--write] [--n 3 4 5 6 7]
      [--max-blocks 3] [--kappa-max 1] [--v-max 2]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from relulab.construct import block_candidates, certify_max_blocks, search_max_blocks

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="n = 3, 4, 5 only")
    ap.add_argument("--write", action="store_true", help="store the certified solutions")
    ap.add_argument("--n", type=int, nargs="*", default=None)
    ap.add_argument("--max-blocks", type=int, default=3)
    ap.add_argument("--kappa-max", type=int, default=1)
    ap.add_argument("--v-max", type=int, default=2)
    ap.add_argument("--kappa-terms", type=int, default=None)
    ap.add_argument("--sizes", type=str, default=None,
                    help="block sizes to use, e.g. '4,2,1;3,2,1,1' (default: all with <= max-blocks)")
    ap.add_argument("--time-limit", type=float, default=None)
    args = ap.parse_args()
    ns = args.n or ([3, 4, 5] if args.quick else [3, 4, 5, 6, 7])
    rows, store = [], {}
    for n in ns:
        t0 = time.perf_counter()
        sizes = ([tuple(int(v) for v in part.split(",")) for part in args.sizes.split(";")]
                 if args.sizes else None)
        cands = block_candidates(n, max_blocks=args.max_blocks, kappa_max=args.kappa_max,
                                 v_max=args.v_max, sizes=sizes, kappa_terms=args.kappa_terms)
        s = search_max_blocks(n, cands, time_limit=args.time_limit)
        row = {"n": n, "family": f"blocks r<={args.max_blocks}, kappa<={args.kappa_max}, "
                                  f"v<={args.v_max}"
                                  + (f", <={args.kappa_terms} kappa terms" if args.kappa_terms else "")
                                  + (f", sizes {args.sizes}" if args.sizes else ""),
               "status": s.status, "candidates": s.n_candidates, "hyperplanes": s.n_hyperplanes,
               "search_seconds": round(time.perf_counter() - t0, 1)}
        if s.status == "found":
            t1 = time.perf_counter()
            cert = certify_max_blocks(n, s)
            row.update(widths=list(cert.widths), orbits=len(s.terms), certificate=cert.status,
                       cones_covered=cert.cones_covered,
                       certify_seconds=round(time.perf_counter() - t1, 1))
            if n <= 7:
                full = certify_max_blocks(n, s, use_symmetry=False)
                row.update(certificate_all_cones=full.status, cones_checked=full.cones_checked)
            if cert.status == "certified":
                store[str(n)] = {"widths": list(cert.widths),
                                 "terms": [{**t.to_dict(), "coef": str(c)} for t, c in s.terms]}
        rows.append(row)
        print(row, flush=True)
        out = ROOT / "experiments" / "results" / "maxn_blocks.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        old = json.loads(out.read_text()) if out.exists() else []
        old = [r for r in old if not (r["n"] == n and r["family"] == row["family"])] + [row]
        out.write_text(json.dumps(sorted(old, key=lambda r: r["n"]), indent=1))
        if args.write and str(n) in store:
            path = ROOT / "src" / "relulab" / "construct" / "data" / "maxn_blocks.json"
            data = json.loads(path.read_text()) if path.exists() else {}
            data["about"] = ("two-hidden-layer max_n solutions found by relulab.construct."
                             "search_max_blocks (first layer relu(x_i - x_j)); coef = output "
                             "weight of every neuron of the block term's S_n-orbit; regenerate "
                             "with experiments/maxn_blocks.py --write")
            data.setdefault("solutions", {})[str(n)] = store[str(n)]
            path.write_text(json.dumps(data) + "\n")
    ok = [r["n"] for r in rows if r.get("certificate") == "certified"]
    print(f"certified two-hidden-layer networks for n = {ok} of {ns}; "
          f"claim {'held' if ok == ns else 'did NOT hold'} on this run")


if __name__ == "__main__":
    main()
