"""max_n with two hidden layers for n = 9: item orbits (s <= 3) plus block-symmetric orbits,
grown by exact certificate pricing (``construct.maxn_certgen``).

Claim tested: some combination of the s <= 3 item orbits and block orbits (Young-subgroup
invariant second-layer neurons on all n inputs, small integer coefficients) is max_n.
The s <= 3 item family alone is exactly infeasible for n = 9 (stored certificate in
experiments/results/maxn_decide.json); a block orbit can only help if the certificate
prices it non-zero.  The run reports, per round, the working family, the exact verdict
and how many pool columns price non-zero; it ends ``found`` (exact solution), ``infeasible``
(an exact certificate for the fixed family plus the whole pool) or ``partial``.

    python experiments/maxn_certgen.py --n 9 [--fixed 2,3] [--blocks 3] [--kappa 1] [--v 2]
        [--kappa-terms K] [--per-round 200] [--time 1800] [--cache /tmp/items9.npz] [--write]

Results: experiments/results/maxn_certgen.json (keyed by the run's parameters).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from relulab.construct import block_candidates, item_family  # noqa: E402
from relulab.construct.maxn_certgen import certgen_max  # noqa: E402
from relulab.construct.maxn_mixed import block_column, pair_column, price_columns  # noqa: E402


def cached_columns(n: int, terms: list, cache: str | Path | None) -> list:
    """Keyed orbit columns (``pair_column``) of ``terms``, read from / written to one npz
    file (a cache written for another family, of another length, is recomputed)."""
    if cache and Path(cache).exists():
        z = np.load(cache)  # read each array once: NpzFile re-reads on every access
        ptr, keys, coef, lin = z["ptr"], z["keys"], z["coef"], z["lin"]
        if len(ptr) - 1 == len(terms):
            return [(keys[ptr[j]:ptr[j + 1]], coef[ptr[j]:ptr[j + 1]], lin[j]) for j in range(len(terms))]
    cols = [pair_column(t, n) for t in terms]
    if cache:
        ptr = np.cumsum([0] + [len(c[0]) for c in cols])
        np.savez(cache, keys=np.concatenate([c[0] for c in cols]),
                 coef=np.concatenate([c[1] for c in cols]), ptr=ptr, lin=np.array([c[2] for c in cols]))
    return cols


def item_columns(n: int, masses: tuple[int, ...], cache: str | None) -> list:
    return cached_columns(n, item_family(n, masses), cache)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=9)
    ap.add_argument("--fixed", default="2,3", help="item masses of the fixed family ('' for none)")
    ap.add_argument("--blocks", type=int, default=3)
    ap.add_argument("--kappa", type=int, default=1)
    ap.add_argument("--v", type=int, default=2)
    ap.add_argument("--kappa-terms", type=int, default=None)
    ap.add_argument("--per-round", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--time", type=float, default=1800.0)
    ap.add_argument("--cache", default=None)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    n = a.n
    t0 = time.monotonic()
    masses = tuple(int(x) for x in a.fixed.split(",") if x)
    fixed = item_columns(n, masses, a.cache) if masses else []
    t_fixed = time.monotonic() - t0
    cands = block_candidates(n, max_blocks=a.blocks, kappa_max=a.kappa, v_max=a.v,
                             kappa_terms=a.kappa_terms)
    pool = [block_column(t, n) for t in cands]
    print(f"n={n}: fixed {len(fixed)} item orbits ({t_fixed:.0f} s), pool {len(pool)} block orbits "
          f"({time.monotonic() - t0 - t_fixed:.0f} s)", flush=True)
    stored = None
    sfile = ROOT / "experiments" / "results" / "maxn_decide.json"
    key9 = f"{n}:{a.fixed}"
    if sfile.exists() and key9 in json.loads(sfile.read_text()):
        stored = json.loads(sfile.read_text())[key9]["certificate"]
        pr = price_columns(n, stored, pool)
        print(f"stored certificate of {key9}: {sum(1 for p in pr if p)} of {len(pool)} pool orbits "
              f"price non-zero", flush=True)
    r = certgen_max(n, fixed, pool, per_round=a.per_round, max_rounds=a.rounds, time_limit=a.time)
    for h in r.history:
        print(h, flush=True)
    print(f"status {r.status}: rounds {r.rounds}, pool used {r.pool_used} of {r.pool_size} "
          f"({r.pool_alive} left by the pruning), "
          f"fixed rank {r.fixed_rank}, rows {r.n_rows}, {r.seconds} s", flush=True)
    used = []
    if r.solution:
        used = [str(cands[j]) for (kind, j) in r.solution if kind == "pool"]
        print("pool terms in the solution:", used[:20])
    if a.write:
        dest = ROOT / "experiments" / "results" / "maxn_certgen.json"
        old = json.loads(dest.read_text()) if dest.exists() else {}
        name = (f"n={n} fixed={a.fixed or '-'} blocks<={a.blocks} kappa<={a.kappa} v<={a.v} "
                f"kappa_terms={a.kappa_terms}")
        old[name] = {"status": r.status, "rounds": r.rounds, "pool_size": r.pool_size,
                     "pool_alive": r.pool_alive, "pool_used": r.pool_used, "fixed_orbits": len(fixed),
                     "fixed_rank": r.fixed_rank,
                     "rows": r.n_rows, "seconds": r.seconds, "history": r.history,
                     "stored_certificate_prices_nonzero": (sum(1 for p in pr if p) if stored else None),
                     "solution_pool_terms": used,
                     "certificate": ({k: str(v) for k, v in r.certificate.items()}
                                     if r.certificate and r.status == "infeasible" else None)}
        dest.write_text(json.dumps(old, indent=1) + "\n")


if __name__ == "__main__":
    main()
