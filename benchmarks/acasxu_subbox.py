"""Joint input splitting (one tree for a disjunction) against one tree per term, on
ACAS Xu sub-boxes the tuning never saw.

For random sub-boxes of the whole normalised input box (each side a fraction ``--frac``
of the full width) and the property "the advisory k chosen at the box's centre stays
minimal" (unsafe: a disjunction of 4 terms ``y_j <= y_k``), it decides the property with ``decide_terms`` (one tree) and with
``decide_term`` per term (the previous method), and prints the answers (they must
agree) and the CPU time of each, with the ratio.  The attack during the search is off
in both so that only the bounding and splitting are compared.

Usage: python benchmarks/acasxu_subbox.py [--n 20] [--frac 0.15] [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

LO = np.array([-0.328422877, -0.5, -0.5, -0.5, -0.5])
HI = np.array([0.679857769, 0.5, 0.5, 0.5, 0.5])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20, help="sub-boxes")
    ap.add_argument("--frac", type=float, default=0.04, help="side of a sub-box / full width")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per decision")
    ap.add_argument("--quick", action="store_true", help="6 sub-boxes")
    a = ap.parse_args()
    from rich.console import Console
    from rich.table import Table

    from relulab.domain import Box
    from relulab.io import load_model
    from relulab.verify.bab import AttackSchedule, decide_term, decide_terms

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from acasxu import data_dir

    onnx = data_dir() / "acasxu" / "onnx"
    nets = ["1_1", "2_3", "3_5", "4_7", "5_9"]
    rng = np.random.default_rng(0)
    n = 6 if a.quick else a.n
    t = Table(title=f"ACAS Xu sub-boxes ({a.frac:g} of the width): one tree per term vs one joint tree")
    for c in ("net", "advisory", "answer (per term)", "answer (joint)", "CPU per term (s)", "CPU joint (s)", "ratio"):
        t.add_column(c, justify="right")
    tot_a = tot_b = 0.0
    disagree = 0
    off = AttackSchedule(first=1e9)
    for i in range(n):
        nid = nets[i % len(nets)]
        net = load_model(onnx / f"ACASXU_run2a_{nid}_batch_2000.onnx")
        w = (HI - LO) * a.frac
        c0 = LO + rng.random(5) * (HI - LO - w)
        box = Box(c0, c0 + w)
        k = int(np.argmin(net(box.center)))  # the advisory at the centre: it may hold
        # unsafe: advisory k is not minimal, i.e. some other output <= y_k
        terms = [(np.eye(5)[[j]] - np.eye(5)[[k]], np.zeros(1)) for j in range(5) if j != k]
        p0 = time.process_time()
        ans_a = "holds"
        for C, d in terms:
            s, _, _ = decide_term(net, box, C, d, deadline=time.time() + a.timeout, schedule=off)
            if s != "holds":
                ans_a = s
                break
        p1 = time.process_time()
        ans_b = decide_terms(net, box, terms, deadline=time.time() + a.timeout, schedule=off)[0]
        p2 = time.process_time()
        tot_a += p1 - p0
        tot_b += p2 - p1
        decided = {ans_a, ans_b} <= {"holds", "violated"}
        disagree += int(decided and ans_a != ans_b)
        t.add_row(nid, str(k), ans_a, ans_b, f"{p1 - p0:.2f}", f"{p2 - p1:.2f}", f"{(p1 - p0) / max(p2 - p1, 1e-9):.1f}")
    t.add_row("all", "", "", f"{disagree} disagreements", f"{tot_a:.1f}", f"{tot_b:.1f}",
              f"{tot_a / max(tot_b, 1e-9):.1f}", style="bold")
    Console(width=140).print(t)


if __name__ == "__main__":
    main()
