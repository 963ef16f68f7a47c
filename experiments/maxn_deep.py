"""max_n with few hidden layers by recursive substitution into the certified two-hidden-layer bases.

Claim checked: substituting group maxima into the certified bases (first layer
relu(x_i - x_j); stored bases n0 = 3..8) computes max_n exactly with deep_depth(n) hidden
layers (= ceil(log_4(n/2)) + 1 with the 8-input base; the paper's 12-input base would give
ceil(log_6(n/2)) + 1): (a) proved by composition (``certify_max_deep``: every base's exact
cone certificate + every node's structure), and (b) equal to max, exactly in rationals, on
10^4 random rational vectors with ties for n up to 64 (bases 3..6, the networks the
tests build) and on a few hundred vectors for the fewest-layer networks that use the 7-
and 8-input bases (their top layers have 142,137 / 306,252 neurons per node).

Writes ``experiments/results/maxn_deep.json`` and ``experiments/results/maxn_deep.png``.

Run:  python experiments/maxn_deep.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

from relulab.construct import certify_max_deep, deep_depth, eval_max_deep, log6_layers, max_deep

ROOT = Path(__file__).resolve().parents[1]
SMALL = [3, 4, 5, 6]


def vectors(n: int, count: int, seed: int) -> list[list[Fraction]]:
    rng = np.random.default_rng(seed)
    num, den = rng.integers(-1000, 1000, (count, n)), rng.integers(1, 30, (count, n))
    X = [[Fraction(int(a), int(b)) for a, b in zip(r, d, strict=True)] for r, d in zip(num, den, strict=True)]
    for r in X[: count // 2]:  # ties at the maximum
        r[int(rng.integers(n))] = max(r)
    X[-1] = [Fraction(7, 3)] * n
    return X


def run(n: int, bases, count: int, seed: int) -> dict:
    t = time.perf_counter()
    dm = max_deep(n, bases=bases)
    X = vectors(n, count, seed)
    ok = eval_max_deep(dm, X) == [max(r) for r in X]
    cert = certify_max_deep(dm)
    row = {"n": n, "bases_allowed": bases or "all certified (3..8)", "hidden_layers": dm.hidden_layers,
           "bases_used": list(dm.bases_used), "widths": list(dm.widths), "vectors": count,
           "all_equal_max": ok, "certificate": cert.status, "published_log6": log6_layers(n),
           "seconds": round(time.perf_counter() - t, 1)}
    print(row, flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer n and vectors")
    args = ap.parse_args()
    count = 1000 if args.quick else 10_000
    rows = [run(n, SMALL, count, n) for n in ((9, 16, 33) if args.quick else (9, 12, 16, 24, 32, 48, 64))]
    if not args.quick:  # fewest layers: the 7- and 8-input bases inside
        rows += [run(n, None, c, 100 + n) for n, c in ((8, 1000), (20, 300), (32, 100))]
    ns = list(range(2, 257))
    curves = {"ours, bases 3..8 (log_4)": [deep_depth(n) for n in ns],
              "ours, bases 3..6 (log_3)": [deep_depth(n, SMALL) for n in ns],
              "paper, 12-input base (log_6)": [log6_layers(n) for n in ns],
              "binary tree (log_2)": [math.ceil(math.log2(n)) for n in ns]}
    out = ROOT / "experiments" / "results"
    out.mkdir(parents=True, exist_ok=True)
    held = all(r["all_equal_max"] and r["certificate"] == "certified" for r in rows)
    (out / "maxn_deep.json").write_text(json.dumps({"claim_held": held, "rows": rows,
                                                     "depth_curves_n": [ns[0], ns[-1]],
                                                     "depth_curves": curves}, indent=1) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4))
    for name, ys in curves.items():
        ax.step(ns, ys, where="post", label=name)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("n (inputs of max)")
    ax.set_ylabel("hidden layers")
    ax.set_title("max_n by recursive substitution: hidden layers")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "maxn_deep.png", dpi=110)
    print(f"claim {'held' if held else 'did NOT hold'} on every row measured")


if __name__ == "__main__":
    main()
