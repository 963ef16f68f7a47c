"""Marginal regression with repeated measures: IMSE rate in (n, m) and jackknife coverage.

Claims (abstract in shared/seeds, "marginal regression ... repeated binary, count, or
continuous responses using ReLU deep neural networks"):

1. with n units and m measurements per unit, ReLU networks attain an integrated mean
   squared error of order n^-1 + (nm)^(-2b/(2b+d)) (up to logs) over b-Hoelder classes;
2. the infinitesimal jackknife over an ensemble gives valid pointwise inference.

Simulation: d = 1, x ~ U[0, 1], unit i has an unobserved random mean function
b_i(x) = a_i0 + a_i1 sin(pi x) (a ~ N(0, 0.4^2)), y_ij = f0(x_ij) + b_i(x_ij) + e_ij,
e ~ N(0, 0.5^2), f0(x) = sin(2 pi x); the marginal mean is f0.  Estimator:
MarginalNetRegressor (gaussian family, unit weights, bootstrap over units; one hidden
layer of 32 ReLUs, minibatch Adam, lr 1e-2, 64 rows per batch).

1. IMSE over a grid of (n, m), a few replications per cell: the log-log slopes in n (at
   the largest m) and in m (at the largest n), and a fit of IMSE = c1/n + c2 (nm)^-r
   with r free.  The theory predicts slope -1 in n once the between-unit term dominates,
   a slope in m that flattens towards 0 as m grows (the n^-1 floor), and r = 2b/(2b+1)
   (close to 1 for this very smooth f0; the optimisation and the finite network, not
   the theory, set the rate we can see).
2. Coverage over >= 200 replications (n = 50 units, m = 10, B = 200 members: the bias-corrected
   IJ needs B well above n) of the 90% and 95% IJ
   intervals at five points, (a) for f0(x) and (b) for the estimator's own mean over the
   replications (what a variance-only interval can cover; the gap between (a) and (b) is
   the network's bias).  Target: within 3 points of nominal at 95%.

Run:  python experiments/repeated_measures.py [--quick] [--out experiments/results]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from relulab.estimators import MarginalNetRegressor

X0 = np.array([0.1, 0.3, 0.5, 0.7, 0.9])


def f0(x: np.ndarray) -> np.ndarray:
    return np.sin(2 * np.pi * x)


def simulate(n: int, m: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    g = np.repeat(np.arange(n), m)
    x = rng.uniform(0, 1, size=n * m)
    a = 0.4 * rng.normal(size=(n, 2))
    y = f0(x) + a[g, 0] + a[g, 1] * np.sin(np.pi * x) + 0.5 * rng.normal(size=n * m)
    return x[:, None], y, g


def estimator(rows: int, B: int, hidden: tuple[int, ...], steps: int, seed: int) -> MarginalNetRegressor:
    batch = 64
    epochs = max(20, math.ceil(steps / math.ceil(rows / batch)))
    return MarginalNetRegressor(hidden=hidden, n_estimators=B, epochs=epochs, batch_size=batch,
                                learning_rate=1e-2, random_state=seed)


def imse_grid(args) -> list[dict]:
    grid = np.linspace(0, 1, 201)[:, None]
    out = []
    for n in args.ns:
        for m in args.ms:
            vals = []
            t0 = time.perf_counter()
            for r in range(args.reps):
                rng = np.random.default_rng(1000 * n + 10 * m + r)
                X, y, g = simulate(n, m, rng)
                est = estimator(n * m, args.B_imse, (32,), args.steps, r).fit(X, y, groups=g)
                vals.append(float(np.mean((est.predict(grid) - f0(grid[:, 0])) ** 2)))
            out.append({"n": n, "m": m, "imse": float(np.mean(vals)), "imse_reps": vals,
                        "time_s": time.perf_counter() - t0})
            print(f"n={n:4d} m={m:3d} IMSE {out[-1]['imse']:.5f} ({out[-1]['time_s']:.1f}s)", flush=True)
    return out


def slope(xs, ys) -> float:
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def rate_fit(cells: list[dict]) -> dict:
    n = np.array([c["n"] for c in cells], float)
    m = np.array([c["m"] for c in cells], float)
    v = np.array([c["imse"] for c in cells])
    best = None
    for r in np.linspace(0.2, 1.5, 131):
        A = np.column_stack([1 / n, (n * m) ** -r])
        # relative least squares (rows divided by the IMSE): every cell counts alike
        coef, _ = nnls(A / v[:, None], np.ones_like(v))
        pred = A @ coef
        err = float(np.sum((np.log(np.maximum(pred, 1e-300)) - np.log(v)) ** 2))
        if best is None or err < best[0]:
            best = (err, r, coef, pred)
    err, r, coef, pred = best
    r2 = 1 - err / float(np.sum((np.log(v) - np.log(v).mean()) ** 2))
    n_max, m_max = n.max(), m.max()
    at_mmax = [(c["n"], c["imse"]) for c in cells if c["m"] == m_max]
    at_nmax = [(c["m"], c["imse"]) for c in cells if c["n"] == n_max]
    return {
        "fitted_r": float(r), "c1_over_n": float(coef[0]), "c2_nm": float(coef[1]), "log_r2": float(r2),
        "slope_in_n_at_max_m": slope(*zip(*at_mmax, strict=True)),
        "slope_in_m_at_max_n": slope(*zip(*at_nmax, strict=True)),
        "slope_in_m_first_pair": slope(*zip(*at_nmax[:2], strict=True)),
        "slope_in_m_last_pair": slope(*zip(*at_nmax[-2:], strict=True)),
        "predicted": pred.tolist(),
    }


def coverage(args) -> dict:
    lo_hi = {0.1: [], 0.05: []}
    est_x0, var_x0 = [], []
    t0 = time.perf_counter()
    for r in range(args.cov_reps):
        if time.perf_counter() - t0 > args.budget_s and r >= 2:
            print(f"time budget of {args.budget_s:.0f}s reached after {r} replications: partial", flush=True)
            break
        rng = np.random.default_rng(50_000 + r)
        X, y, g = simulate(args.cov_n, args.cov_m, rng)
        est = estimator(args.cov_n * args.cov_m, args.B_cov, (32,), args.cov_steps, r).fit(X, y, groups=g)
        est_x0.append(est.predict(X0[:, None]))
        var_x0.append(est.predict_variance(X0[:, None]))
        for a in lo_hi:
            lo_hi[a].append(est.predict_interval(X0[:, None], alpha=a))
        if (r + 1) % 25 == 0:
            print(f"coverage replication {r + 1}/{args.cov_reps} ({time.perf_counter() - t0:.0f}s)", flush=True)
    E = np.array(est_x0)
    V = np.array(var_x0)
    centre = E.mean(axis=0)         # the estimator's own mean: the target of a variance-only interval
    done = len(est_x0)
    res = {"n_units": args.cov_n, "m": args.cov_m, "replications": done, "planned": args.cov_reps,
           "partial": done < args.cov_reps, "B": args.B_cov,
           "x0": X0.tolist(), "bias": (centre - f0(X0)).tolist(),
           "empirical_sd": E.std(axis=0, ddof=1).tolist(), "mean_ij_sd": np.sqrt(V.mean(axis=0)).tolist(),
           "time_s": time.perf_counter() - t0}
    for a, ivs in lo_hi.items():
        I = np.array(ivs)   # (reps, 5, 2)
        cov_f0 = ((I[..., 0] <= f0(X0)) & (f0(X0) <= I[..., 1])).mean(axis=0)
        cov_c = ((I[..., 0] <= centre) & (centre <= I[..., 1])).mean(axis=0)
        res[f"nominal_{1 - a:.2f}"] = {
            "coverage_f0": cov_f0.tolist(), "coverage_f0_mean": float(cov_f0.mean()),
            "coverage_estimator_mean": cov_c.tolist(), "coverage_estimator_mean_avg": float(cov_c.mean()),
            "mean_width": float((I[..., 1] - I[..., 0]).mean()),
        }
    return res


def figure(cells: list[dict], fit: dict, cov: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    if not cells:
        axes[0].set_visible(False)
    ms = sorted({c["m"] for c in cells})
    for k, m in enumerate(ms):
        sel = [c for c in cells if c["m"] == m]
        ns = [c["n"] for c in sel]
        axes[0].loglog(ns, [c["imse"] for c in sel], "o-", color=f"C{k}", label=f"m={m}")
        axes[0].loglog(ns, [fit["c1_over_n"] / n + fit["c2_nm"] * (n * m) ** -fit["fitted_r"] for n in ns],
                       ":", color=f"C{k}")
    if cells:
        axes[0].set_xlabel("units n")
        axes[0].set_ylabel("IMSE")
        axes[0].set_title(f"IMSE; dotted: c1/n + c2 (nm)^-r, r={fit['fitted_r']:.2f}")
        axes[0].legend()
    x = np.arange(len(cov["x0"]))
    for k, (key, lab) in enumerate([("nominal_0.90", "90%"), ("nominal_0.95", "95%")]):
        axes[1].plot(x, cov[key]["coverage_f0"], "o-", color=f"C{k}", label=f"{lab}: covers f0(x)")
        axes[1].plot(x, cov[key]["coverage_estimator_mean"], "s--", color=f"C{k}",
                     label=f"{lab}: covers E[estimate]")
        axes[1].axhline(float(key.split("_")[1]), color=f"C{k}", lw=0.8)
    axes[1].set_xticks(x, [str(v) for v in cov["x0"]])
    axes[1].set_xlabel("x0")
    axes[1].set_ylabel("coverage")
    axes[1].set_ylim(0, 1.02)
    axes[1].set_title(f"IJ coverage, {cov['replications']} replications, B={cov['B']}"
                      + (" (partial)" if cov["partial"] else ""))
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default="experiments/results")
    ap.add_argument("--budget-s", type=float, default=3000.0,
                    help="wall-clock budget of the coverage study; stops early and marks it partial")
    ap.add_argument("--coverage-only", action="store_true",
                    help="only the coverage study (writes repeated_measures_coverage.json/.png)")
    ap.add_argument("--cov-B", type=int, default=None, help="ensemble size of the coverage study")
    ap.add_argument("--cov-steps", type=int, default=None, help="Adam steps per coverage fit")
    args = ap.parse_args()
    if args.quick:
        args.ns, args.ms, args.reps, args.steps, args.B_imse = [25, 50, 100], [2, 8], 1, 300, 4
        args.cov_reps, args.cov_n, args.cov_m, args.B_cov, args.cov_steps = 30, 50, 10, 200, 600
    else:
        args.ns, args.ms, args.reps, args.steps, args.B_imse = [25, 50, 100, 200], [2, 5, 10, 20], 3, 1000, 5
        args.cov_reps, args.cov_n, args.cov_m, args.B_cov, args.cov_steps = 200, 50, 10, 200, 600
    if args.cov_B:
        args.B_cov = args.cov_B
    if args.cov_steps:
        args.cov_steps = args.cov_steps
    import torch

    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if args.coverage_only:
        cov = coverage(args)
        name = "repeated_measures_coverage" + ("_quick" if args.quick else "")
        (out / f"{name}.json").write_text(json.dumps({"settings": {k: v for k, v in vars(args).items() if k != "out"},
                                                      "coverage": cov, "wall_s": time.perf_counter() - t0}, indent=1))
        figure([], {}, cov, out / f"{name}.png")
        for key in ("nominal_0.90", "nominal_0.95"):
            c = cov[key]
            print(f"{key}: coverage of f0 {c['coverage_f0_mean']:.3f}, of the estimator's mean "
                  f"{c['coverage_estimator_mean_avg']:.3f}, mean width {c['mean_width']:.3f}")
        print(f"bias {np.round(cov['bias'], 3).tolist()}, empirical sd {np.round(cov['empirical_sd'], 3).tolist()}, "
              f"mean IJ sd {np.round(cov['mean_ij_sd'], 3).tolist()}; {cov['replications']} replications")
        return
    cells = imse_grid(args)
    fit = rate_fit(cells)
    cov = coverage(args)
    c95 = cov["nominal_0.95"]
    verdict = {
        "rate": (f"slope in n at m={max(args.ms)}: {fit['slope_in_n_at_max_m']:.2f} (theory -1 once n^-1 dominates); "
                 f"slope in m at n={max(args.ns)}: {fit['slope_in_m_first_pair']:.2f} (first pair) -> "
                 f"{fit['slope_in_m_last_pair']:.2f} (last pair) (theory: flattens towards 0); fitted r = "
                 f"{fit['fitted_r']:.2f} (theory 2b/(2b+1), near 1 for smooth f0), log-R^2 {fit['log_r2']:.3f}"),
        "coverage_95_f0": c95["coverage_f0_mean"],
        "coverage_95_estimator_mean": c95["coverage_estimator_mean_avg"],
        "coverage_within_3_points_of_95": bool(abs(c95["coverage_f0_mean"] - 0.95) <= 0.03),
        "coverage_replications": cov["replications"], "coverage_partial": cov["partial"],
    }
    name = "repeated_measures_quick" if args.quick else "repeated_measures"
    res = {"settings": {k: v for k, v in vars(args).items() if k not in ("out",)}, "imse": cells,
           "rate_fit": fit, "coverage": cov, "verdict": verdict, "wall_s": time.perf_counter() - t0}
    (out / f"{name}.json").write_text(json.dumps(res, indent=1))
    figure(cells, fit, cov, out / f"{name}.png")
    print("\n" + verdict["rate"])
    for key in ("nominal_0.90", "nominal_0.95"):
        c = cov[key]
        print(f"{key}: coverage of f0 {c['coverage_f0_mean']:.3f}, of the estimator's mean "
              f"{c['coverage_estimator_mean_avg']:.3f}, mean width {c['mean_width']:.3f}")
    print(f"bias at x0 {np.round(cov['bias'], 3).tolist()}, empirical sd {np.round(cov['empirical_sd'], 3).tolist()}, "
          f"mean IJ sd {np.round(cov['mean_ij_sd'], 3).tolist()}")
    print(f"95% coverage of f0 within 3 points of nominal: {verdict['coverage_within_3_points_of_95']}"
          f" ({cov['replications']} replications{', PARTIAL: time budget' if cov['partial'] else ''})")


if __name__ == "__main__":
    main()
