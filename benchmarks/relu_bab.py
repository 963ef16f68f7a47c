"""ReLU-split branch and bound (relulab.verify.relu_split) against the exact MILP (HiGHS).

Random networks with 30-100 inputs (the regime where input splitting stalls), one unsafe
term "f(x) >= t" per instance with t a little above the sampled maximum, decided by:

* ours: ``relu_split`` with the torch engine (alpha/beta-CROWN) and with the numpy
  engine (CROWN with clamped splits);
* the alternative users would pick: one big-M MILP on HiGHS (``milp_term``: minimise t
  with C f(x) - d <= t; it optimises t, so it does not stop at the first counterexample),
  the same solver relulab's exact optimisation uses.

The thresholds sit 2% or 10% of the way from a good maximum (a 2 s MILP incumbent) to
the CROWN bound, or 1% below it (violated).

All in the same run, same time limit.  The table gives solved counts, summed times and
the ratio MILP / ours (over instances both solved), and flags any disagreement (a wrong
answer: both are complete and sound, so they must agree).

    python benchmarks/relu_bab.py [--quick] [--timeout 20]
    python benchmarks/relu_bab.py --branching     # BaBSR against filtered smart branching
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from relulab import Box, Network
from relulab.bounds import crown_batch, float_layers
from relulab.verify import maximize
from relulab.verify.milp import milp_term
from relulab.verify.relu_bab import crown_available, relu_split


def instances(quick: bool):
    shapes = [(30, 16), (60, 16), (100, 16), (30, 32), (60, 32), (100, 32)]
    reps = 1 if quick else 3
    out = []
    for k, (d, h) in enumerate(shapes):
        for r in range(reps):
            rng = np.random.default_rng(1000 * k + r)
            dims = [d, h, h, 1]
            Ws = [rng.normal(size=(dims[i + 1], dims[i])) / np.sqrt(dims[i]) for i in range(3)]
            bs = [rng.normal(size=dims[i + 1]) * 0.2 for i in range(3)]
            net = Network(Ws, bs)
            box = Box(-0.5 * np.ones(d), 0.5 * np.ones(d))
            # a good maximum (the MILP's incumbent after 2 s, improved by sampling and
            # gradient steps) and the CROWN bound; the threshold between them
            best = maximize(net, box, time_limit=2.0).value
            W, b, _ = float_layers(net)
            _, low = crown_batch(W, b, box.lo[None], box.hi[None], C=np.array([[-1.0]]))
            frac = (0.02, 0.1, -0.01)[(k + r) % 3]  # 2% / 10% of the gap above it; 1% below
            thr = best + frac * (-low[0, 0] - best)
            out.append((f"d{d}_h{h}x2_{r}", net, box, np.array([[-1.0]]), np.array([-thr])))
    return out


def branching(n: int, out: str) -> None:
    """Sub-domains needed by plain BaBSR (fsb_k=1) and by filtered smart branching
    (fsb_k=2, 4, 8) on random "holds" instances: 20-100 inputs, two small hidden layers,
    the threshold 5% above the exact (MILP) maximum.  Numpy engine."""
    rng = np.random.default_rng(0)
    totals = {1: 0, 2: 0, 4: 0, 8: 0}
    solved = {k: 0 for k in totals}
    for _ in range(n):
        d, h, h2 = int(rng.integers(20, 101)), int(rng.integers(4, 12)), int(rng.integers(3, 9))
        dims = [d, h, h2, 1]
        Ws = [rng.normal(size=(dims[i + 1], dims[i])) / np.sqrt(dims[i]) for i in range(3)]
        bs = [rng.normal(size=dims[i + 1]) * 0.3 for i in range(3)]
        net = Network(Ws, bs)
        box = Box(-0.3 * np.ones(d), 0.3 * np.ones(d))
        m = maximize(net, box).value
        thr = m + 0.05 * (1 + abs(m))
        for k in totals:
            r = relu_split(net, box, np.array([[-1.0]]), np.array([-thr]), timeout=30,
                           engine="numpy", fsb_k=k)
            totals[k] += r.stats["domains"]
            solved[k] += r.status == "holds"
    print(f"{'branching':<22}{'holds proven':>14}{'sub-domains':>13}{'vs BaBSR':>10}")
    for k in totals:
        name = "BaBSR (fsb_k=1)" if k == 1 else f"FSB, k={k}"
        print(f"{name:<22}{solved[k]:>14}{totals[k]:>13}{totals[k] / max(totals[1], 1):>10.2f}")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps({"instances": n, "domains": totals, "holds": solved}, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--branching", action="store_true",
                    help="compare BaBSR with filtered smart branching instead")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "relu_bab.json"))
    a = ap.parse_args()
    if a.branching:
        branching(10 if a.quick else 30, a.out.replace("relu_bab.json", "relu_bab_branching.json"))
        return
    T = 5.0 if a.quick and a.timeout == 20.0 else a.timeout
    engines = (["crown"] if crown_available() else []) + ["numpy"]
    rows = []
    for name, net, box, C, d in instances(a.quick):
        row = {"instance": name}
        for eng in engines:
            t = time.monotonic()
            r = relu_split(net, box, C, d, timeout=T, engine=eng)
            row[eng] = (r.status, time.monotonic() - t, r.stats.get("domains", 0))
        t = time.monotonic()
        st, _, _ = milp_term(net, box, C, d, time_limit=T)
        row["milp"] = (st, time.monotonic() - t, 0)
        answers = {v[0] for k, v in row.items() if k != "instance" and v[0] != "unknown"}
        row["disagree"] = len(answers) > 1
        rows.append(row)
        print(name, {k: (v[0], round(v[1], 2)) for k, v in row.items() if isinstance(v, tuple)},
              "DISAGREE" if row["disagree"] else "", flush=True)
    print()
    print(f"{'method':<16}{'solved':>8}{'holds':>7}{'viol.':>7}{'time s':>9}{'MILP/ours (both solved)':>26}")
    summary = {}
    for m in [*engines, "milp"]:
        solved = [r for r in rows if r[m][0] != "unknown"]
        tot = sum(r[m][1] for r in rows)
        both = [r for r in rows if r[m][0] != "unknown" and r["milp"][0] != "unknown"]
        ratio = (sum(r["milp"][1] for r in both) / max(sum(r[m][1] for r in both), 1e-9)) if both else float("nan")
        summary[m] = {"solved": len(solved), "holds": sum(r[m][0] == "holds" for r in rows),
                      "violated": sum(r[m][0] == "violated" for r in rows), "time": tot,
                      "milp_over_ours": ratio}
        print(f"{'relu_split ' + m if m != 'milp' else 'MILP (HiGHS)':<16}{len(solved):>8}"
              f"{summary[m]['holds']:>7}{summary[m]['violated']:>7}{tot:>9.1f}{ratio:>26.2f}")
    wrong = sum(r["disagree"] for r in rows)
    print(f"\n{len(rows)} instances, timeout {T:g} s each; disagreements (wrong answers): {wrong}")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"timeout": T, "quick": a.quick, "summary": summary,
                                       "wrong": wrong, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
