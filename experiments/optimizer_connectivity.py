"""Optimizer-induced mode connectivity of two-layer ReLU networks: AdamW against Muon.

Claim checked (the abstract on optimizer-induced mode connectivity, seeds file): for
two-layer ReLU networks, the solutions reached by one optimizer (AdamW, Muon, ...) form a
connected set at sufficiently large width; in a small-width example AdamW and Muon
converge to disconnected zero-loss components separated by a loss barrier.

What is measured: two-layer ReLU networks on XOR (the four points of {-1, 1}^2, targets
0/1: sign-structured, the smallest task a width-1 network cannot fit) at a small width
(3, one above the minimal width 2) and a large width, each trained from many seeds by
AdamW and by Muon (2-D weights; biases in an AdamW group, as is usual), full batch, with
decoupled weight decay and a cosine schedule.  All seeds of one optimizer are trained at
once as a batch (``train_batch``): AdamW is ``torch.optim.AdamW`` itself on the stacked
parameters (it is per-coordinate), Muon is ``torch.optim.Muon``'s update (momentum 0.95,
Nesterov, its bfloat16 Newton-Schulz with the same coefficients, ``match_rms_adamw``
scaling) on each matrix of the stack; the run checks it against ``torch.optim.Muon`` on
one seed and records the largest parameter difference.  For every pair of zero-loss
solutions: the barrier (``max_t L - max(L_a, L_b)``, MSE on the training points) along the
straight path after aligning permutations and rescalings (``relulab.dynamics.align``),
along an optimised Bezier curve (``bezier_search``) and along an optimised 4-bend polyline
(``polyline_search``, the strongest search here).  Pairs are grouped as AdamW-AdamW,
Muon-Muon and AdamW-Muon.  The barriers are *sampled* on the path: a path found with no
barrier is evidence of connectivity, a positive barrier after the searches is evidence
(not proof) of disconnection.  The paper's own small-width example is not given in the
abstract; this task is our stand-in.  The solutions are then grouped into components
(joined when the best path found between them has no barrier above ``TOL``) and each
component's AdamW/Muon membership is reported.  ``--wd`` sets the weight decay (default
1e-3; another value writes ``optimizer_connectivity_wd<value>.{json,png}``).

The small-width separation is not reproduced on XOR; a designed example in which the two
optimizers' norm balls select different zero-loss components, with certified barriers, is
``optimizer_separation.py``.

Writes optimizer_connectivity.{json,png}.  Run: python experiments/optimizer_connectivity.py [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

import numpy as np

X_TRAIN = np.array([[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0], [-1.0, 1.0]])
Y_TRAIN = np.array([0.0, 0.0, 1.0, 1.0])[:, None]
LR_ADAMW, LR_MUON = 1e-2, 2e-2


def train(width: int, opt_name: str, seed: int, steps: int, wd: float):
    import torch

    from relulab.io.torch import from_torch

    torch.manual_seed(seed)
    m = torch.nn.Sequential(torch.nn.Linear(X_TRAIN.shape[1], width), torch.nn.ReLU(),
                            torch.nn.Linear(width, 1)).double()
    X, Y = torch.tensor(X_TRAIN), torch.tensor(Y_TRAIN)
    mats = [p for p in m.parameters() if p.ndim == 2]
    vecs = [p for p in m.parameters() if p.ndim != 2]
    if opt_name == "adamw":
        opts = [torch.optim.AdamW(m.parameters(), lr=LR_ADAMW, weight_decay=wd)]
    else:
        opts = [torch.optim.Muon(mats, lr=LR_MUON, weight_decay=wd, adjust_lr_fn="match_rms_adamw"),
                torch.optim.AdamW(vecs, lr=LR_ADAMW, weight_decay=wd)]
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


def _newton_schulz(G):
    """``torch.optim.Muon``'s orthogonalisation (bfloat16 quintic Newton-Schulz, its own
    coefficients and step count) on a stack of matrices; bit-identical per matrix."""
    import torch
    from torch.optim._muon import DEFAULT_A, DEFAULT_B, DEFAULT_C, DEFAULT_NS_STEPS, EPS

    X = G.bfloat16()
    tall = G.shape[1] > G.shape[2]
    if tall:
        X = X.transpose(1, 2)
    X = X / X.flatten(1).norm(dim=1).clamp(min=EPS)[:, None, None]
    for _ in range(DEFAULT_NS_STEPS):
        A = X @ X.transpose(1, 2)
        B = torch.baddbmm(A, A, A, beta=DEFAULT_B, alpha=DEFAULT_C)
        X = torch.baddbmm(X, B, X, beta=DEFAULT_A)
    return X.transpose(1, 2) if tall else X


def train_batch(width: int, opt_name: str, seeds: list[int], steps: int, wd: float):
    """The networks ``train(width, opt_name, s, steps, wd)`` for every ``s`` in ``seeds``,
    trained at once on stacked parameters (same initialisation per seed).  Returns
    (networks, final losses)."""
    import torch

    from relulab import Network

    d = X_TRAIN.shape[1]
    init = []
    for s in seeds:
        torch.manual_seed(s)
        m = torch.nn.Sequential(torch.nn.Linear(d, width), torch.nn.ReLU(), torch.nn.Linear(width, 1)).double()
        init.append([m[0].weight, m[2].weight, m[0].bias, m[2].bias])
    W1, W2, b1, b2 = (torch.stack([p[i].detach() for p in init]).clone().requires_grad_() for i in range(4))
    X, Y = torch.tensor(X_TRAIN), torch.tensor(Y_TRAIN)
    mats = [W1, W2]
    opt = torch.optim.AdamW(mats + [b1, b2] if opt_name == "adamw" else [b1, b2], lr=LR_ADAMW, weight_decay=wd)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    if opt_name == "muon":  # the Muon group's learning rate follows its own cosine schedule
        holder = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=LR_MUON)
        muon_sched = torch.optim.lr_scheduler.CosineAnnealingLR(holder, steps)
        bufs = [torch.zeros_like(W) for W in mats]

    def forward():
        H = torch.relu(torch.einsum("rhd,nd->rnh", W1, X) + b1[:, None, :])
        return torch.einsum("roh,rnh->rno", W2, H) + b2[:, None, :]

    def losses():
        return 0.5 * ((forward() - Y[None]) ** 2).mean(dim=(1, 2))

    for _ in range(steps):
        opt.zero_grad()
        for W in mats:
            W.grad = None
        losses().sum().backward()  # seeds are independent: each gets its own gradient
        if opt_name == "muon":
            lr = holder.param_groups[0]["lr"]
            with torch.no_grad():
                for W, buf in zip(mats, bufs, strict=True):
                    buf.lerp_(W.grad, 1 - 0.95)
                    upd = _newton_schulz(W.grad.lerp(buf, 0.95))
                    W.mul_(1 - lr * wd)
                    W.add_(upd, alpha=-lr * 0.2 * float(np.sqrt(max(W.shape[1], W.shape[2]))))
            holder.step()
            muon_sched.step()
        opt.step()
        sched.step()
    with torch.no_grad():
        final = losses().numpy()
    nets = [Network([W1[i].detach().numpy(), W2[i].detach().numpy()], [b1[i].detach().numpy(), b2[i].detach().numpy()])
            for i in range(len(seeds))]
    return nets, [float(v) for v in final]


def batch_check(width: int, steps: int, wd: float) -> dict:
    """Largest parameter difference between train_batch and the torch.optim run, one seed."""
    out = {}
    for opt in ("adamw", "muon"):
        nets, _ = train_batch(width, opt, [0, 1], steps, wd)
        ref, _ = train(width, opt, 1, steps, wd)
        out[opt] = float(max(np.abs(a - b).max() for a, b in zip(nets[1].weights + nets[1].biases,
                                                                 ref.weights + ref.biases, strict=True)))
    return out


def pair_barriers(nets: dict, bezier_steps: int, bends: int = 4, lr: float = 1e-2) -> list[dict]:
    from relulab.dynamics import bezier_search, polyline_search

    rows = []
    keys = list(nets)
    for a, b in itertools.combinations(keys, 2):
        res = bezier_search(nets[a], nets[b], X_TRAIN, Y_TRAIN, steps=bezier_steps, lr=lr, batch_t=4)
        poly = polyline_search(nets[a], nets[b], X_TRAIN, Y_TRAIN, bends=bends, steps=bezier_steps, lr=lr,
                               batch_t=4, points_per_segment=10)
        kind = "-".join(sorted({a[0], b[0]})) if a[0] != b[0] else f"{a[0]}-{a[0]}"
        rows.append({"a": list(a), "b": list(b), "group": kind,
                     "barrier_linear": res.linear.barrier, "barrier_bezier": res.curved.barrier,
                     "barrier_polyline": poly.barrier,
                     # the best of the three paths found (a search can end worse than the line)
                     "barrier_best": min(res.linear.barrier, res.curved.barrier, poly.barrier),
                     "loss_a": res.linear.loss_a, "loss_b": res.linear.loss_b,
                     "distance": res.linear.distance,
                     # curves for the figure, to 4 significant digits (keeps the JSON small)
                     "curve_linear": [float(f"{v:.4g}") for v in res.linear.losses],
                     "curve_bezier": [float(f"{v:.4g}") for v in res.curved.losses],
                     "curve_polyline": [float(f"{v:.4g}") for v in poly.losses]})
    return rows


ZERO_LOSS = 1e-4  # a solution counts as zero-loss (interpolating) below this training MSE


def summarise(rows: list[dict]) -> dict:
    """Barrier statistics per optimizer pair (all pairs here have zero-loss endpoints)."""
    out = {}
    for g in sorted({r["group"] for r in rows}):
        rs = [r for r in rows if r["group"] == g]
        st = {"pairs": len(rs)}
        for key in ("linear", "bezier", "polyline", "best"):
            v = np.array([r[f"barrier_{key}"] for r in rs])
            st[f"barrier_{key}_median"] = float(np.median(v))
            st[f"barrier_{key}_min"] = float(np.min(v))
            st[f"barrier_{key}_max"] = float(np.max(v))
            st[f"barrier_{key}_frac_above_tol"] = float(np.mean(v > TOL))
        out[g] = st
    return out


TOL = 1e-3  # a barrier below this (MSE units, targets in [0, 1]) counts as none


def components(rows: list[dict]) -> list[dict]:
    """Group the compared solutions into components: joined when the best path found
    between them has barrier < TOL (union-find over the pairs).  For each component, how
    many AdamW and Muon solutions it holds; a component holding both is a place where the
    two optimizers' solutions are connected."""
    parent: dict = {}

    def find(k):
        parent.setdefault(k, k)
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for r in rows:
        a, b = tuple(r["a"]), tuple(r["b"])
        find(a), find(b)
        if r["barrier_best"] < TOL:
            parent[find(a)] = find(b)
    groups: dict = {}
    for k in parent:
        groups.setdefault(find(k), []).append(k)
    return sorted(({"adamw": sum(k[0] == "adamw" for k in g), "muon": sum(k[0] == "muon" for k in g),
                    "members": [f"{k[0]}/{k[1]}" for k in sorted(g)]} for g in groups.values()),
                  key=lambda c: -(c["adamw"] + c["muon"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    ap.add_argument("--wd", type=float, default=1e-3, help="decoupled weight decay of both optimizers")
    a = ap.parse_args()
    suffix = "" if a.wd == 1e-3 else f"_wd{a.wd:g}"
    t0 = time.time()
    if a.quick:
        widths, seeds, keep, steps, bsteps = [3, 64], 4, 2, 1000, 40
    else:
        widths, seeds, keep, steps, bsteps = [2, 3, 256], 16, 5, 3000, 150
    wd = a.wd
    check = batch_check(3, 200, wd)
    print(f"batched trainer vs torch.optim (200 steps, one seed): max |param diff| {check}", flush=True)
    result: dict = {"claim": "same-optimizer solutions connected at large width; AdamW and Muon "
                    "solutions separated by a barrier at small width",
                    "task": "XOR on {-1, 1}^2, targets 0/1", "weight_decay": wd, "steps": steps,
                    "seeds_per_optimizer": seeds, "zero_loss_solutions_compared_per_optimizer": keep,
                    "path_search_steps": bsteps, "zero_loss_threshold": ZERO_LOSS, "tolerance": TOL,
                    "batched_vs_torch_optim_max_param_diff": check, "widths": {}}
    for w in widths:
        nets, losses = {}, {}
        for opt in ("adamw", "muon"):
            trained, fl = train_batch(w, opt, list(range(seeds)), steps, wd)
            for s, (net, loss) in enumerate(zip(trained, fl, strict=True)):
                losses[f"{opt}/{s}"] = loss
                if loss < ZERO_LOSS and sum(k[0] == opt for k in nets) < keep:
                    nets[(opt, s)] = net
        zero = {o: sum(losses[f"{o}/{s}"] < ZERO_LOSS for s in range(seeds)) for o in ("adamw", "muon")}
        # Adam moves every coordinate by ~lr per step: smaller steps for the wide networks
        rows = pair_barriers(nets, bsteps, lr=1e-2 if w <= 8 else 1e-3)
        summ = summarise(rows)
        comps = components(rows)
        result["widths"][str(w)] = {"final_losses": losses, "zero_loss_runs": zero, "pairs": rows, "summary": summ,
                                    "components": comps}
        print(f"width {w}: zero-loss runs {zero} of {seeds} each; compared {len(nets)}; components "
              + ", ".join(f"{c['adamw']}A+{c['muon']}M" for c in comps), flush=True)
        for g, st in summ.items():
            print(f"  {g:12s} pairs {st['pairs']:2d}  barrier median: straight {st['barrier_linear_median']:.2e} "
                  f"Bezier {st['barrier_bezier_median']:.2e} polyline {st['barrier_polyline_median']:.2e} | "
                  f"best path: min {st['barrier_best_min']:.2e} max {st['barrier_best_max']:.2e}, "
                  f"> {TOL:g} in {100 * st['barrier_best_frac_above_tol']:.0f}% of pairs", flush=True)
    large = result["widths"][str(widths[-1])]["summary"]

    def stat(summ, g, key):
        return summ.get(g, {}).get(key, float("nan"))

    same_large = max(stat(large, g, "barrier_best_max") for g in ("adamw-adamw", "muon-muon"))
    small = {}
    for w in widths[:-1]:
        sw = result["widths"][str(w)]["summary"]
        fr = {g: stat(sw, g, "barrier_best_frac_above_tol") for g in ("adamw-adamw", "muon-muon", "adamw-muon")}
        # the small-width claim: every cross pair separated while same-optimizer pairs connect
        fr["cross_optimizer_separated"] = bool(fr["adamw-muon"] == 1.0
                                               and max(fr["adamw-adamw"], fr["muon-muon"]) < 1.0)
        fr["mixed_components"] = sum(c["adamw"] > 0 and c["muon"] > 0
                                     for c in result["widths"][str(w)]["components"])
        small[str(w)] = fr
    result["observed"] = {
        "same_optimizer_connected_at_large_width": bool(same_large < TOL),
        "same_optimizer_max_best_barrier_large": same_large,
        "small_width_frac_pairs_with_barrier": small,
        "cross_optimizer_separated_at_small_width": any(v["cross_optimizer_separated"] for v in small.values()),
        "note": "nan: no pair of zero-loss solutions in that group",
        "status": "sampled",
    }
    result["seconds"] = time.time() - t0
    result["cpu_seconds"] = time.process_time()
    result["quick"] = a.quick
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"optimizer_connectivity{suffix}.json").write_text(json.dumps(result, indent=2))
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
                ax.plot(t, r["curve_linear"], color=colors[r["group"]], ls=":", alpha=0.4)
                tp = np.linspace(0, 1, len(r["curve_polyline"]))
                ax.plot(tp, r["curve_polyline"], color=colors[r["group"]], label=lab, alpha=0.8)
            ax.set_yscale("symlog", linthresh=1e-4)
            ax.set_title(f"width {w} (dotted: straight, solid: 4-bend polyline)")
            ax.set_xlabel("t")
            ax.set_ylabel("train MSE")
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / f"optimizer_connectivity{suffix}.png", dpi=120)
    except ImportError:
        print("matplotlib missing: no figure")
    print(f"wrote {out / f'optimizer_connectivity{suffix}.json'} ({result['seconds']:.1f} s)")


if __name__ == "__main__":
    main()
