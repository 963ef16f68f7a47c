"""Sup-norm against L2 error of least-squares ReLU and smooth networks as the dimension grows.

Claim (abstract in shared/seeds, "uniform convergence of smoothly activated deep neural
network estimators"): least-squares ReLU estimators can suffer from the curse of
dimensionality in their *uniform* (sup-norm) convergence although they are L2-optimal,
while smoothly activated networks mitigate it by exploiting a low-dimensional
compositional structure of the target.

Setup: x ~ U[-1, 1]^d for d in {2, 4, 8, 16}; the target is a composition of
two-dimensional pieces of linear features,
    f(x) = sin(2 s1) cos(s2),  s1 = sum_{j odd} x_j / sqrt(d/2),  s2 = sum_{j even} x_j / sqrt(d/2),
y = f(x) + N(0, 0.3^2), n = 2000 training rows.  SmoothNetRegressor with the squared
loss, 2x64 networks, the same seeds, epochs and optimiser for activation relu, softplus,
silu and gelu.  Errors on 20,000 fresh points: L2 (root mean square) and the *sampled*
sup-norm (the largest error seen on those points: a lower bound of the true sup-norm, and
the same sample for every network).

What is reported: per d and activation, the mean over seeds of both errors and their
ratio sup/L2; the verdict says whether the smooth networks' sampled sup-norm error is below
ReLU's at the largest d and whether ReLU's sup/L2 ratio grows faster with d.

Run:  python experiments/uniform_convergence.py [--quick] [--out experiments/results]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from relulab.estimators import SmoothNetRegressor

ACTS = ("relu", "softplus", "silu", "gelu")


def target(X: np.ndarray) -> np.ndarray:
    d = X.shape[1]
    s1 = X[:, 0::2].sum(axis=1) / np.sqrt(d / 2)
    s2 = X[:, 1::2].sum(axis=1) / np.sqrt(d / 2)
    return np.sin(2 * s1) * np.cos(s2)


def run(args) -> list[dict]:
    rows = []
    for d in args.dims:
        test = np.random.default_rng(10_000 + d).uniform(-1, 1, size=(20_000, d))
        ft = target(test)
        for seed in range(args.seeds):
            rng = np.random.default_rng(100 * d + seed)
            X = rng.uniform(-1, 1, size=(args.n, d))
            y = target(X) + 0.3 * rng.normal(size=args.n)
            for act in ACTS:
                t0 = time.perf_counter()
                m = SmoothNetRegressor(activation=act, loss="squared", hidden=(64, 64), epochs=args.epochs,
                                       batch_size=128, learning_rate=3e-3, random_state=seed).fit(X, y)
                err = m.predict(test) - ft
                rows.append({"d": d, "seed": seed, "activation": act, "l2": float(np.sqrt(np.mean(err**2))),
                             "sup_sampled": float(np.max(np.abs(err))), "time_s": time.perf_counter() - t0})
                r = rows[-1]
                print(f"d={d:2d} seed {seed} {act:8s} L2 {r['l2']:.4f} sup {r['sup_sampled']:.4f} "
                      f"({r['time_s']:.1f}s)", flush=True)
    return rows


def summarise(rows: list[dict], dims: list[int]) -> dict:
    table = {}
    for d in dims:
        for act in ACTS:
            sel = [r for r in rows if r["d"] == d and r["activation"] == act]
            l2 = float(np.mean([r["l2"] for r in sel]))
            sup = float(np.mean([r["sup_sampled"] for r in sel]))
            table[f"{d}/{act}"] = {"d": d, "activation": act, "l2": l2, "sup_sampled": sup, "ratio": sup / l2}

    def slope(act: str, key: str) -> float:
        return float(np.polyfit(np.log(dims), np.log([table[f"{d}/{act}"][key] for d in dims]), 1)[0])

    slopes = {act: {"sup": slope(act, "sup_sampled"), "l2": slope(act, "l2"), "ratio": slope(act, "ratio")}
              for act in ACTS}
    dmax = max(dims)
    relu_sup = table[f"{dmax}/relu"]["sup_sampled"]
    smooth_better = {a: table[f"{dmax}/{a}"]["sup_sampled"] < relu_sup for a in ACTS[1:]}
    ratio_faster = {a: slopes["relu"]["ratio"] > slopes[a]["ratio"] for a in ACTS[1:]}
    verdict = {
        "smooth_sup_below_relu_at_max_d": smooth_better,
        "relu_sup_over_l2_grows_faster_than": ratio_faster,
        "held": bool(all(smooth_better.values()) and all(ratio_faster.values())),
        "statement": ("claim held on this run: every smooth network has a lower sampled sup-norm error than "
                      "ReLU at the largest d, and ReLU's sup/L2 ratio grows faster with d")
        if all(smooth_better.values()) and all(ratio_faster.values()) else
        ("claim did not (fully) hold on this run: see smooth_sup_below_relu_at_max_d and "
         "relu_sup_over_l2_grows_faster_than (False entries)"),
    }
    return {"table": table, "log_log_slopes_in_d": slopes, "verdict": verdict}


def figure(summary: dict, dims: list[int], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for k, act in enumerate(ACTS):
        t = [summary["table"][f"{d}/{act}"] for d in dims]
        axes[0].plot(dims, [r["l2"] for r in t], "o-", color=f"C{k}", label=act)
        axes[1].plot(dims, [r["sup_sampled"] for r in t], "o-", color=f"C{k}", label=act)
        axes[2].plot(dims, [r["ratio"] for r in t], "o-", color=f"C{k}", label=act)
    for ax, title in zip(axes, ["L2 error", "sampled sup-norm error", "sup / L2"], strict=True):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("input dimension d")
        ax.set_title(title)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default="experiments/results")
    args = ap.parse_args()
    args.dims, args.seeds, args.n, args.epochs = ([2, 8], 1, 1000, 30) if args.quick else ([2, 4, 8, 16], 3, 2000, 150)
    import torch

    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    rows = run(args)
    summary = summarise(rows, args.dims)
    name = "uniform_convergence_quick" if args.quick else "uniform_convergence"
    res = {"settings": {"dims": args.dims, "seeds": args.seeds, "n": args.n, "epochs": args.epochs,
                        "hidden": [64, 64], "noise_sd": 0.3, "test_points": 20_000},
           "rows": rows, **summary, "wall_s": time.perf_counter() - t0}
    (out / f"{name}.json").write_text(json.dumps(res, indent=1))
    figure(summary, args.dims, out / f"{name}.png")
    print(f"\n{'d':>3s} " + " ".join(f"{a + ' L2/sup':>20s}" for a in ACTS))
    for d in args.dims:
        print(f"{d:3d} " + " ".join(f"{summary['table'][f'{d}/{a}']['l2']:9.4f}/{summary['table'][f'{d}/{a}']['sup_sampled']:<9.4f}"
                                    for a in ACTS))
    print("log-log slope in d of sup/L2: " + ", ".join(
        f"{a} {summary['log_log_slopes_in_d'][a]['ratio']:.2f}" for a in ACTS))
    print(summary["verdict"]["statement"])


if __name__ == "__main__":
    main()
