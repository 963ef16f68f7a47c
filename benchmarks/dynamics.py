"""Recorder overhead of relulab.dynamics.train against a plain torch training loop.

The anchor is what a researcher writes by hand: a float64 ``nn.Sequential``, full-batch
``torch.optim.SGD``, ``zero_grad / loss / backward / step`` and nothing else.  relulab's
loop trains the same model from the same initial weights on the same data, recording
every 10 steps (the issue's target: at most 2x the plain loop).  Recorder sets: none
(the loop's own bookkeeping), the default ``norms``, the per-neuron set (norms,
directions, effective width) and everything exact on the data (adds activation patterns,
which build a relulab Network through from_torch at each record).  Every row checks that
relulab's final loss equals the plain loop's (same arithmetic, to 1e-12 relative).
The median of --repeats runs is reported.

Run:  python benchmarks/dynamics.py [--steps 2000] [--repeats 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from relulab.dynamics import mlp, train

SETS = {
    "none": [],
    "norms": ["norms"],
    "per-neuron": ["norms", "directions", "effective_width"],
    "+patterns": ["norms", "directions", "effective_width", "patterns"],
}


def plain_loop(model, X, y, lr, steps):
    import torch

    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)[:, None]
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    t0 = time.perf_counter()
    for _ in range(steps + 1):
        opt.zero_grad()
        loss = 0.5 * torch.mean(torch.sum((model(Xt) - yt) ** 2, dim=1))
        loss.backward()
        opt.step()
    return time.perf_counter() - t0, float(loss.detach())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    import copy

    import torch

    torch.set_num_threads(args.threads)
    rows = []
    print(f"{'size (n, d, m)':>16} {'recorders':>11} {'torch s':>8} {'relulab s':>9} "
          f"{'ratio':>6} {'same loss':>9}")
    for n, d, m in [(200, 10, 100), (1000, 20, 256)]:
        rng = np.random.default_rng(0)
        X = rng.normal(size=(n, d))
        y = np.sin(X @ rng.normal(size=d))
        model = mlp([d, m, 1], seed=0)
        for name, rec in SETS.items():
            tp, tr, same = [], [], True
            for _ in range(args.repeats):
                m1 = copy.deepcopy(model)
                secs, plain_loss = plain_loop(m1, X, y, 0.05, args.steps)
                tp.append(secs)
                t0 = time.perf_counter()
                t = train(model, X, y, optimizer="gd", lr=0.05, steps=args.steps, every=10,
                          record=rec, device="cpu")
                tr.append(time.perf_counter() - t0)
                # the plain loop's last loss is at step `steps` before its final update
                same &= abs(t.loss[-1] - plain_loss) <= 1e-12 * abs(plain_loss)
            a, b = statistics.median(tp), statistics.median(tr)
            rows.append({"n": n, "d": d, "m": m, "recorders": name, "torch_s": a,
                         "relulab_s": b, "ratio": b / a, "same_loss": bool(same)})
            print(f"{str((n, d, m)):>16} {name:>11} {a:8.3f} {b:9.3f} {b / a:6.2f} "
                  f"{str(same):>9}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"steps": args.steps, "every": 10, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
