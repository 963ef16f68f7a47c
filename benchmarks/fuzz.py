"""Fuzz every loader and the command-line parsers with a large budget (issue 12).

Prints, per loader, the cases run, how many loaded, how many were rejected with
relulab's own one-line error, and the failures (any other exception, a hang, or a failing
command that left a file behind), with the first few failing inputs kept on disk.

    python benchmarks/fuzz.py                 # 4,000 cases per loader + 1,000 command lines
    python benchmarks/fuzz.py --cases 200     # quick
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fuzz"))
import harness  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=4000, help="cases per loader")
    ap.add_argument("--cli-cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kinds", default="onnx,vnnlib,nnet,npz,pt,cli")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "fuzz.json"))
    a = ap.parse_args()
    rows = []
    for kind in a.kinds.split(","):
        t0 = time.time()
        if kind == "cli":
            sink = io.StringIO()
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                st = harness.fuzz_cli(a.cli_cases, seed=a.seed)
        else:
            st = harness.fuzz_loader(kind, a.cases, seed=a.seed)
        row = {**st.to_dict(), "seconds": round(time.time() - t0, 1)}
        rows.append(row)
        print(f"{kind:7s} {row['cases']:6d} cases  {row['loaded']:6d} loaded  "
              f"{row['rejected']:6d} rejected  {row['failures']:3d} failures  {row['seconds']:7.1f} s",
              flush=True)
        for case, why in st.failures[:3]:
            print(f"    {case}: {why.splitlines()[0]}")
    total = {k: sum(r[k] for r in rows) for k in ("cases", "loaded", "rejected", "failures")}
    print(f"total   {total['cases']:6d} cases  {total['loaded']:6d} loaded  {total['rejected']:6d} "
          f"rejected  {total['failures']:3d} failures")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"per_kind": rows, "total": total, "seed": a.seed}, indent=2))


if __name__ == "__main__":
    main()
