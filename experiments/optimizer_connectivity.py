"""Optimizer-induced mode connectivity of two-layer ReLU networks: AdamW against Muon.

Claim checked (the abstract on optimizer-induced mode connectivity, seeds file): for
two-layer ReLU networks, the solutions reached by one optimizer (AdamW, Muon, ...) form a
connected set at sufficiently large width; in a small-width example AdamW and Muon
converge to disconnected zero-loss components separated by a loss barrier.

What is measured: a 1-D zig-zag regression task (4 points, 2 slope changes), two-layer
ReLU networks of a small width (near the minimal width that interpolates) and a large
width, each trained from several seeds by AdamW and by ``torch.optim.Muon`` (2-D weights;
biases in an AdamW group, as is usual), full batch, with decoupled weight decay.  For
every pair of solutions: the barrier (``max_t L - max(L_a, L_b)``, MSE on the training
points) along the straight path after aligning permutations and rescalings
(``relulab.dynamics.align``), and along an optimised Bezier curve
(``relulab.dynamics.bezier_search``).  Pairs are grouped as AdamW-AdamW, Muon-Muon and
AdamW-Muon.  The barriers are *sampled* on the path (41 points): an upper path found is
evidence of connectivity, a positive barrier after the curve search is evidence (not
proof) of disconnection.  The paper's own small-width example is not given in the
abstract; this task is our stand-in.

Writes optimizer_connectivity.{json,png}.  Run: python experiments/optimizer_connectivity.py [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

import numpy as np

X_TRAIN = np.linspace(-1.0, 1.0, 4)[:, None]
Y_TRAIN = np.array([0.0, 1.0, 0.0, 1.0])[:, None]


def train(width: int, opt_name: str, seed: int, steps: int, wd: float):
    import torch

    from relulab.io.torch import from_torch

    torch.manual_seed(seed)
    m = torch.nn.Sequential(torch.nn.Linear(1, width), torch.nn.ReLU(), torch.nn.Linear(width, 1)).double()
    X, Y = torch.tensor(X_TRAIN), torch.tensor(Y_TRAIN)
    mats = [p for p in m.parameters() if p.ndim == 2]
    vecs = [p for p in m.parameters() if p.ndim != 2]
    if opt_name == "adamw":
        opts = [torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=wd)]
    else:
        opts = [torch.optim.Muon(mats, lr=2e-2, weight_decay=wd, adjust_lr_fn="match_rms_adamw"),
                torch.optim.AdamW(vecs, lr=1e-2, weight_decay=wd)]
    scheds = [torch.optim.lr_scheduler.CosineAnnealingLR(o, steps, eta_min=0.0) for o in opts]
    for _ in range(steps):
        for o in opts:
            o.zero_grad()
        loss = 0.5 * ((m(X) - Y) ** 2).mean()
        loss.backward()
        for o, s in zip(opts, scheds, strict=True):
            o.step()
            s.step()
    net = from_torch(m)
    final = 0.5 * float(np.mean((net(X_TRAIN) - Y_TRAIN) ** 2))
    return net, final


def pair_barriers(nets: dict, bezier_steps: int) -> list[dict]:
    from relulab.dynamics import bezier_search

    rows = []
    keys = list(nets)
    for a, b in itertools.combinations(keys, 2):
        res = bezier_search(nets[a], nets[b], X_TRAIN, Y_TRAIN, steps=bezier_steps, lr=1e-2, batch_t=4)
        kind = "-".join(sorted({a[0], b[0]})) if a[0] != b[0] else f"{a[0]}-{a[0]}"
        rows.append({"a": list(a), "b": list(b), "group": kind,
                     "barrier_linear": res.linear.barrier, "barrier_bezier": res.curved.barrier,
                     "loss_a": res.linear.loss_a, "loss_b": res.linear.loss_b,
                     "distance": res.linear.distance,
                     "curve_linear": res.linear.losses.tolist(),
                     "curve_bezier": res.curved.losses.tolist()})
    return rows


ZERO_LOSS = 1e-4  # a solution counts as zero-loss (interpolating) below this training MSE


def summarise(rows: list[dict]) -> dict:
    """Barrier statistics per optimizer pair, over pairs whose two endpoints are zero-loss."""
    out = {}
    rows = [r for r in rows if max(r["loss_a"], r["loss_b"]) < ZERO_LOSS]
    for g in sorted({r["group"] for r in rows}):
        rs = [r for r in rows if r["group"] == g]
        out[g] = {"pairs": len(rs),
                  "barrier_linear_median": float(np.median([r["barrier_linear"] for r in rs])),
                  "barrier_linear_max": float(np.max([r["barrier_linear"] for r in rs])),
                  "barrier_bezier_median": float(np.median([r["barrier_bezier"] for r in rs])),
                  "barrier_bezier_min": float(np.min([r["barrier_bezier"] for r in rs])),
                  "barrier_bezier_max": float(np.max([r["barrier_bezier"] for r in rs]))}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    a = ap.parse_args()
    t0 = time.time()
    if a.quick:
        widths, seeds, steps, bsteps = [4, 128], {4: 2, 128: 2}, 1000, 60
    else:
        widths, seeds, steps, bsteps = [4, 512], {4: 5, 512: 3}, 3000, 300
    wd = 1e-3
    result: dict = {"claim": "same-optimizer solutions connected at large width; AdamW and Muon "
                    "solutions separated by a barrier at small width",
                    "task": "1-D zig-zag, 4 points", "weight_decay": wd, "steps": steps,
                    "seeds": {str(k): v for k, v in seeds.items()}, "zero_loss_threshold": ZERO_LOSS, "widths": {}}
    for w in widths:
        nets, losses = {}, {}
        for opt in ("adamw", "muon"):
            for s in range(seeds[w]):
                net, loss = train(w, opt, s, steps, wd)
                nets[(opt, s)] = net
                losses[f"{opt}/{s}"] = loss
        rows = pair_barriers(nets, bsteps)
        summ = summarise(rows)
        result["widths"][str(w)] = {"final_losses": losses, "pairs": rows, "summary": summ}
        print(f"width {w}: final train losses " + ", ".join(f"{k} {v:.1e}" for k, v in losses.items()))
        for g, s in summ.items():
            print(f"  {g:12s} pairs {s['pairs']:2d}  linear barrier median {s['barrier_linear_median']:.2e} "
                  f"max {s['barrier_linear_max']:.2e} | Bezier median {s['barrier_bezier_median']:.2e} "
                  f"min {s['barrier_bezier_min']:.2e} max {s['barrier_bezier_max']:.2e}", flush=True)
    small, large = (result["widths"][str(w)]["summary"] for w in widths)
    if "adamw-muon" not in small:
        print("small width: no AdamW-Muon pair with both endpoints at zero loss")
    tol = 1e-3  # a barrier below this (MSE units, targets in [0, 1]) counts as none
    same_large = max(large.get(g, {}).get("barrier_bezier_max", float("nan")) for g in ("adamw-adamw", "muon-muon"))
    cross_small = small.get("adamw-muon", {}).get("barrier_bezier_min", float("nan"))
    result["observed"] = {
        "same_optimizer_connected_at_large_width": bool(same_large < tol),
        "same_optimizer_max_bezier_barrier_large": same_large,
        "cross_optimizer_barrier_at_small_width": bool(cross_small > tol),
        "cross_optimizer_min_bezier_barrier_small": cross_small,
        "tolerance": tol,
        "note": "pairs with an endpoint above the zero-loss threshold are excluded from the summary "
                "(nan: no such pair)",
        "status": "sampled",
    }
    result["seconds"] = time.time() - t0
    result["quick"] = a.quick
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "optimizer_connectivity.json").write_text(json.dumps(result, indent=2))
    print("observed:", result["observed"])
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, len(widths), figsize=(5 * len(widths), 4))
        colors = {"adamw-adamw": "C0", "muon-muon": "C1", "adamw-muon": "C3"}
        for ax, w in zip(axes, widths, strict=True):
            seen = set()
            for r in result["widths"][str(w)]["pairs"]:
                t = np.linspace(0, 1, len(r["curve_linear"]))
                lab = r["group"] if r["group"] not in seen else None
                seen.add(r["group"])
                ax.plot(t, r["curve_linear"], color=colors[r["group"]], ls=":", alpha=0.6)
                ax.plot(t, r["curve_bezier"], color=colors[r["group"]], label=lab)
            ax.set_yscale("symlog", linthresh=1e-4)
            ax.set_title(f"width {w} (dotted: straight, solid: Bezier)")
            ax.set_xlabel("t")
            ax.set_ylabel("train MSE")
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / "optimizer_connectivity.png", dpi=120)
    except ImportError:
        print("matplotlib missing: no figure")
    print(f"wrote {out / 'optimizer_connectivity.json'} ({result['seconds']:.1f} s)")


if __name__ == "__main__":
    main()
