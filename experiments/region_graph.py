"""The dual graph of a ReLU network's linear regions: average degree and diameter.

Claim checked (the ICLR 2026 connectivity-graph paper behind relucent, "the average
degree of this graph is upper bounded by twice the input dimension regardless of the
width and depth of the network, and the diameter of this graph has an upper bound
that does not depend on input dimension, despite the number of regions increasing
exponentially with input dimension"):

* average degree <= 2 d for every network, random or trained, any width and depth;
* the diameter grows slowly with the input dimension d (while the number of regions
  grows fast).

Setup: input dimensions d = 2..6; random networks (PyTorch default initialisation,
``torch.manual_seed(s)``) of widths 8x2, 16x2 and 8x3, and the same 16x2
architecture trained (Adam, 300 steps) to regress a smooth target on 1000 points;
domain [-1, 1]^d.  Regions, the graph and its exact diameter come from
``relulab.regions``.  Writes ``region_graph.json`` and ``region_graph.png`` to
``--out`` (default ``experiments/results``).  Runs in a few minutes on 2 cores.

Run:  python experiments/region_graph.py [--dims 2,3,4,5,6] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from relulab import Box, Network, regions
from relulab.io.torch import from_torch

CLAIM = ("average degree of the region adjacency graph <= 2 d for any width and depth; "
         "diameter grows slowly with the input dimension d")


def torch_net(d: int, widths: list[int], seed: int):
    import torch

    torch.manual_seed(seed)
    layers: list = []
    prev = d
    for w in widths:
        layers += [torch.nn.Linear(prev, w), torch.nn.ReLU()]
        prev = w
    layers.append(torch.nn.Linear(prev, 1))
    return torch.nn.Sequential(*layers)


def train(model, d: int, seed: int, steps: int = 300):
    import torch

    g = torch.Generator().manual_seed(seed)
    X = torch.rand(1000, d, generator=g) * 2 - 1
    w = torch.randn(d, generator=g)
    y = (torch.sin(2.5 * X @ w) + 0.5 * (X**2).sum(1)).unsqueeze(1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(X) - y) ** 2).mean()
        loss.backward()
        opt.step()
    return model, float(loss.detach())


def measure(net: Network, d: int) -> dict:
    t0 = time.perf_counter()
    rs = regions.enumerate(net, Box(-np.ones(d), np.ones(d)))
    G = regions.graph(rs)
    s = G.graph["summary"]
    return {"regions": s.regions, "edges": s.edges, "avg_degree": s.avg_degree,
            "max_degree": s.max_degree, "diameter": s.diameter, "bounded": s.bounded,
            "touching_domain": s.touching_domain, "seconds": time.perf_counter() - t0,
            "avg_degree_le_2d": bool(s.avg_degree <= 2 * d)}


def main() -> None:
    ap = argparse.ArgumentParser(description=CLAIM)
    ap.add_argument("--dims", default="2,3,4,5,6")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = ap.parse_args()
    dims = [int(x) for x in args.dims.split(",")]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    archs = {"random 8x2": [8, 8], "random 16x2": [16, 16], "random 8x3": [8, 8, 8]}
    rows = []
    t_all = time.perf_counter()
    for d in dims:
        for label, widths in archs.items():
            for seed in range(args.seeds):
                r = measure(from_torch(torch_net(d, widths, seed)), d)
                rows.append({"d": d, "network": label, "seed": seed, **r})
                print(f"d={d} {label:12} seed {seed}: {r['regions']:6} regions, "
                      f"avg degree {r['avg_degree']:.3f} (2d = {2 * d}), "
                      f"diameter {r['diameter']}", flush=True)
        for seed in range(args.seeds):
            model, loss = train(torch_net(d, [16, 16], 100 + seed), d, seed)
            r = measure(from_torch(model), d)
            rows.append({"d": d, "network": "trained 16x2", "seed": seed, "train_mse": loss, **r})
            print(f"d={d} {'trained 16x2':12} seed {seed}: {r['regions']:6} regions, "
                  f"avg degree {r['avg_degree']:.3f} (2d = {2 * d}), "
                  f"diameter {r['diameter']}  (mse {loss:.3f})", flush=True)
    ok = all(r["avg_degree_le_2d"] for r in rows)
    verdict = ("holds on every network measured" if ok else
               "VIOLATED on: " + ", ".join(f"d={r['d']} {r['network']} seed {r['seed']}"
                                           for r in rows if not r["avg_degree_le_2d"]))
    diam = {}
    for d in dims:
        ds = [r["diameter"] for r in rows if r["d"] == d and r["diameter"] is not None]
        rg = [r["regions"] for r in rows if r["d"] == d]
        diam[d] = {"median_diameter": float(np.median(ds)), "median_regions": float(np.median(rg))}
    summary = {"claim": CLAIM, "avg_degree_le_2d": verdict, "by_dimension": diam,
               "seconds": time.perf_counter() - t_all}
    print(f"average degree <= 2d: {verdict}")
    for d in dims:
        print(f"  d={d}: median regions {diam[d]['median_regions']:.0f}, median diameter "
              f"{diam[d]['median_diameter']:.1f}")
    with open(out / "region_graph.json", "w") as f:
        json.dump({"summary": summary, "rows": rows}, f, indent=2)
    plot(rows, dims, out / "region_graph.png")
    print(f"wrote {out / 'region_graph.json'} and {out / 'region_graph.png'} "
          f"({summary['seconds']:.0f} s)")


def plot(rows: list[dict], dims: list[int], path: Path) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 3.6), layout="constrained")
    axs = fig.subplots(1, 3)
    labels = sorted({r["network"] for r in rows})
    for i, lab in enumerate(labels):
        rr = [r for r in rows if r["network"] == lab]
        x = np.array([r["d"] for r in rr]) + (i - len(labels) / 2) * 0.06
        axs[0].plot(x, [r["avg_degree"] for r in rr], "o", ms=4, label=lab)
        axs[1].plot(x, [r["diameter"] for r in rr], "o", ms=4, label=lab)
        axs[2].semilogy(x, [r["regions"] for r in rr], "o", ms=4, label=lab)
    dd = np.array(dims)
    axs[0].plot(dd, 2 * dd, "k--", lw=1, label="2d (bound)")
    axs[0].set_title("average degree")
    axs[1].set_title("diameter")
    axs[2].set_title("number of regions")
    for ax in axs:
        ax.set_xlabel("input dimension d")
        ax.set_xticks(dims)
    axs[0].legend(fontsize=7)
    fig.savefig(path, dpi=130)


if __name__ == "__main__":
    main()
