"""The l^p-Lipschitz constants of random ReLU networks: the dichotomy at p = 2.

Claim (Geuchen, Heindl, Stoeger, Voigtlaender: "l^p-Lipschitz constants of random ReLU
networks"): for wide He-initialised networks R^d -> R with zero biases, the
l^p-Lipschitz constant behaves like ||g||_{p'} (g a standard Gaussian vector in R^d,
1/p + 1/p' = 1) for p in [2, inf], but like ||g||_2 for p in [1, 2), up to a factor
logarithmic in the depth; with symmetric random biases the bounds differ by a factor
logarithmic in the width and linear in the depth.

What is measured: for input dimensions d from 2 up to what the exact or tightly
bracketed routes reach here, for zero biases and for N(0, sigma_b^2) biases, the global
constant of several random networks for p in {1, 1.5, 2, 3, inf} (exact where a route
closes, else the bracket [lower, upper]), divided by E||g||_{p'} and by E||g||_2 (Monte
Carlo).  If the claim holds, the ratio to the predicted normalisation stays flat in d
while the other drifts.  Flatness is measured by the least-squares slope of
log(ratio) against log(d); the claim's side should have the smaller |slope|.  At
these small d, E||g||_inf and E||g||_2 differ little (p = 1), so the p < 2 side is hard
to tell apart: the script says so when the slopes are close, and it reports the
brackets' width.

Networks: hidden weights N(0, 2 / fan_in) (He), output weights N(0, 1 / fan_in);
``--width`` neurons in each of ``--depth`` hidden layers.

Run:  python experiments/random_lipschitz.py [--quick]
Writes experiments/results/random_lipschitz.json and .png.

The p < 2 half at larger d (``--wide [--quick]``, experiments/random_lipschitz_wide.py):
certified lower bounds of L_p by smoothed gradient ascent for d up to 64, width 4d,
depth 2 and 3, against the typical gradient norm; writes random_lipschitz_wide.{json,png}.
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from relulab import Box, Network, regions  # noqa: E402
from relulab.domain import Polytope  # noqa: E402
from relulab.lipschitz import (  # noqa: E402
    LIP_REL_TOL,
    by_enumeration,
    dual_exponent,
    lipschitz,
    vector_norm,
)

PS = (1.0, 1.5, 2.0, 3.0, float("inf"))
# route beyond enumeration ("auto", or "bab": the branch and bound, which for bias-free
# networks runs on the faces of [-1, 1]^d, with local LipSDP for p = 2); set by --method
METHOD = "auto"
RESULTS = Path(__file__).with_name("results")


def he_network(rng, d: int, width: int, depth: int, bias_sd: float) -> Network:
    dims = [d] + [width] * depth + [1]
    Ws, bs = [], []
    for i in range(len(dims) - 1):
        var = (2.0 if i < len(dims) - 2 else 1.0) / dims[i]
        Ws.append(rng.standard_normal((dims[i + 1], dims[i])) * np.sqrt(var))
        bs.append(rng.standard_normal(dims[i + 1]) * bias_sd)
    return Network(Ws, bs)


def gaussian_norms(d: int, n: int = 200_000, seed: int = 0) -> dict[str, float]:
    G = np.random.default_rng(seed).standard_normal((n, d))
    out = {"2": float(np.mean(vector_norm(G, 2.0, axis=1)))}
    for p in PS:
        out[f"{p:g}'"] = float(np.mean(vector_norm(G, dual_exponent(p), axis=1)))
    return out


def measure_all(net: Network, d: int, time_limit: float, enum_dim: int) -> list[dict]:
    """The global constant for every p: one whole-space enumeration serves all norms where
    the regions are few (exact); beyond, ``method="auto"`` takes the MILP (p in {1, inf})
    or the branch-and-bound / SDP bracket."""
    out = []
    bias_free = not any(np.any(b) for b in net.biases)
    if d <= enum_dim or (bias_free and d <= enum_dim + 1):
        t = time.time()
        # a bias-free network's regions are cones from 0: [-1, 1]^d meets them all
        dom = Box(-np.ones(d), np.ones(d)) if bias_free else Polytope.whole_space(d)
        rs = regions.enumerate(net, dom)
        t_enum = time.time() - t
        for p in PS:
            t = time.time()
            e = by_enumeration(net, dom if bias_free else None, p, None, region_set=rs)
            exact = e.complete and e.upper - e.lower <= LIP_REL_TOL * (1 + e.lower)
            out.append({"lower": e.lower, "upper": e.upper, "status": "exact" if exact else "bounded",
                        "method": "enumeration", "time": time.time() - t + t_enum, "regions": len(rs)})
        return out
    for p in PS:
        r = lipschitz(net, None, p=p, method=METHOD, time_limit=time_limit)
        out.append({"lower": r.lower, "upper": r.upper, "status": r.status, "method": r.method,
                    "time": r.time, "upper_from": r.info.get("upper_from")})
    return out


def slope(ds, vals) -> float:
    x, y = np.log(np.asarray(ds, float)), np.log(np.asarray(vals, float))
    return float(np.polyfit(x, y, 1)[0]) if len(set(ds)) > 1 else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="d in 2..4, 2 seeds, width 12, 5 s per constant")
    ap.add_argument("--dims", type=str, default="2,3,4,5,6")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--depth", type=int, default=2)
    ap.add_argument("--bias-sd", type=float, default=0.5)
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--enum-dim", type=int, default=3, help="enumerate R^d exactly up to this d")
    ap.add_argument("--out", default=str(RESULTS / "random_lipschitz"))
    ap.add_argument("--from-json", help="re-summarise and re-plot the runs of an earlier JSON")
    ap.add_argument("--biases", type=str, default=None,
                    help="bias standard deviations to run now (default: 0 and --bias-sd)")
    ap.add_argument("--keep-from", help="an earlier JSON whose runs are kept for the (bias, d) pairs "
                    "not run now (to extend a long run by a few dimensions)")
    ap.add_argument("--method", default="auto", help="route beyond enumeration: auto or bab")
    ap.add_argument("--wide", action="store_true",
                    help="the p < 2 test: certified lower bounds of L_p at d up to 64, width 4d "
                    "(writes random_lipschitz_wide.{json,png}; with --quick: d <= 16)")
    ap.add_argument("--wide-width", type=int, default=4,
                    help="with --wide: width = this times d (not 4: zero biases, 2 seeds, file suffix _wN)")
    ap.add_argument("--wide-seeds", type=int, default=None, help="with --wide: networks per (d, depth, bias)")
    ap.add_argument("--wide-seed-start", type=int, default=0,
                    help="with --wide: first seed (later seeds are added to the JSON's runs)")
    ap.add_argument("--wide-depths", default=None,
                    help="with --wide: the depths to run now (e.g. 2), merged with the others in the JSON")
    a = ap.parse_args()
    if a.wide and a.from_json:
        from random_lipschitz_wide import resummarise

        resummarise(Path(a.from_json).with_suffix(""))
        return
    if a.wide:
        from random_lipschitz_wide import wide_main

        name = "random_lipschitz_wide" + ("_quick" if a.quick else "") + (f"_w{a.wide_width}" if a.wide_width != 4 else "")
        wide_main(a.quick, RESULTS / name, [int(v) for v in a.wide_depths.split(",")] if a.wide_depths else None,
                  a.wide_width,
                  tuple(float(v) for v in a.biases.split(",")) if a.biases
                  else ((0.0,) if a.wide_width != 4 else (0.0, a.bias_sd)),
                  a.wide_seeds or (2 if a.wide_width != 4 else None), a.wide_seed_start)
        return
    global METHOD
    METHOD = a.method
    if a.from_json:
        old = json.loads(Path(a.from_json).read_text())
        norms = {int(k): v for k, v in old["gaussian_norms"].items()}
        old["summary"] = summarise(old["runs"], norms, (0.0, old["bias_sd"]))
        old["slope_tests"] = slope_tests(old["runs"], norms, (0.0, old["bias_sd"]))
        Path(a.out + ".json").write_text(json.dumps(old, indent=1, default=str))
        plot(old["summary"], a.out + ".png")
        print(f"wrote {a.out}.json and {a.out}.png")
        return
    if a.quick:
        dims, seeds, width, tl = [2, 3, 4], 2, 12, 5.0
    else:
        dims, seeds, width, tl = [int(v) for v in a.dims.split(",")], a.seeds, a.width, a.time_limit
    run_biases = (0.0, a.bias_sd) if a.biases is None else tuple(float(v) for v in a.biases.split(","))
    runs = []
    if a.keep_from:
        old = json.loads(Path(a.keep_from).read_text())
        runs = [r for r in old["runs"] if not (r["bias_sd"] in run_biases and r["d"] in dims)]
        dims_all = sorted(set(dims) | {r["d"] for r in runs})
    else:
        dims_all = dims
    norms = {d: gaussian_norms(d) for d in dims_all}
    t0 = time.time()
    for bias in run_biases:
        for d in dims:
            for s in range(seeds):
                net = he_network(np.random.default_rng(7919 * d + s), d, width, a.depth, bias)
                for p, m in zip(PS, measure_all(net, d, tl, a.enum_dim), strict=True):
                    m.update(d=d, seed=s, bias_sd=bias, p=p)
                    runs.append(m)
                    print(f"bias {bias:g} d={d} seed={s} p={p:g}: [{m['lower']:.4g}, {m['upper']:.4g}] "
                          f"{m['status']} ({m['method']}, {m['time']:.1f} s)", flush=True)
    biases = (0.0, a.bias_sd)
    summary = summarise(runs, norms, biases)
    tests = slope_tests(runs, norms, biases)
    out = {"slope_tests": tests, "claim": __doc__.split("\n\n")[1], "dims": dims_all, "seeds": seeds, "width": width,
           "depth": a.depth, "bias_sd": a.bias_sd, "time_limit": tl, "gaussian_norms": norms,
           "runs": runs, "summary": summary, "seconds": time.time() - t0, "quick": a.quick}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out + ".json").write_text(json.dumps(out, indent=1, default=str))
    plot(summary, a.out + ".png")
    print(f"\nwrote {a.out}.json and {a.out}.png ({time.time() - t0:.0f} s)")


TIGHT = 1.1  # a bracket upper/lower within this counts as measured (most are exact)


def summarise(runs: list[dict], norms: dict, biases) -> list[dict]:
    """Per (bias, p): the geometric mean over seeds of the bracket midpoints per d, using
    only the dimensions where every bracket is within TIGHT; the slopes of
    log(L / E||g||_{p'}) and log(L / E||g||_2) against log d, and a verdict."""
    summary = []
    print(f"\n{'bias':>5} {'p':>4} {'dims used':>12} {'slope vs p_':>12} {'slope vs 2':>11} "
          f"{'predicted':>10} {'flatter':>8} {'widest':>8} verdict")
    for bias in biases:
        for p in PS:
            rs = [r for r in runs if r["p"] == p and r["bias_sd"] == bias and r["lower"] > 0]
            ds_all = sorted({r["d"] for r in rs})
            widest = {d: max(r["upper"] / r["lower"] for r in rs if r["d"] == d) for d in ds_all}
            ds = [d for d in ds_all if widest[d] <= TIGHT]
            mids = [float(np.exp(np.mean([0.5 * np.log(r["lower"] * r["upper"])
                                          for r in rs if r["d"] == d]))) for d in ds]
            key = f"{p:g}'"
            r_dual = [mv / norms[d][key] for mv, d in zip(mids, ds, strict=True)]
            r_two = [mv / norms[d]["2"] for mv, d in zip(mids, ds, strict=True)]
            s_dual = slope(ds, r_dual) if len(ds) >= 2 else float("nan")
            s_two = slope(ds, r_two) if len(ds) >= 2 else float("nan")
            predicted = "p'" if p >= 2 else "2"
            flatter = "p'" if abs(s_dual) < abs(s_two) else "2"
            if p == 2:
                verdict = "p' = 2: both the same"
            elif len(ds) < 3:
                verdict = "brackets too wide to tell"
            elif abs(abs(s_dual) - abs(s_two)) < 0.1:
                verdict = "too close to tell at these d"
            else:
                verdict = "consistent with the claim" if flatter == predicted else "not seen"
            # brackets beyond the tight dimensions, for the record
            loose = {d: [min(r["lower"] for r in rs if r["d"] == d), max(r["upper"] for r in rs if r["d"] == d)]
                     for d in ds_all if d not in ds}
            summary.append({"bias_sd": bias, "p": p, "dims": ds, "midpoints": mids,
                            "ratio_dual": r_dual, "ratio_2": r_two, "slope_dual": s_dual,
                            "slope_2": s_two, "predicted": predicted, "flatter": flatter,
                            "widest_bracket": widest, "loose_dims": loose, "verdict": verdict})
            print(f"{bias:>5g} {p:>4g} {','.join(map(str, ds)):>12} {s_dual:>12.3f} {s_two:>11.3f} "
                  f"{predicted:>10} {flatter:>8} {max(widest.values()):>8.2f} {verdict}")
    return summary


def slope_tests(runs: list[dict], norms: dict, biases) -> list[dict]:
    """Per (bias, p != 2): a statistical test of which normalisation fits.  The ratio
    L / E||g||_r is flat in d exactly when log L grows with log d at the slope of
    log E||g||_r; so the least-squares slope of log L (every network separately, bracket
    midpoints, only dimensions where every bracket is within TIGHT) is compared with the
    two predicted slopes (of E||g||_{p'} and of E||g||_2 over the same d).  The verdict
    is decided only when the 95 % confidence interval of the slope (t distribution,
    n - 2 degrees of freedom) lies entirely on one side of the midpoint between the two
    predictions; a constant factor (the claim's log-depth factor) does not change a slope."""
    from scipy import stats

    out = []
    print(f"\n{'bias':>5} {'p':>4} {'n':>3} {'slope log L':>12} {'95% CI':>18} {'pred p_':>8} {'pred 2':>7} verdict")
    for bias in biases:
        for p in PS:
            if p == 2:
                continue
            rs = [r for r in runs if r["p"] == p and r["bias_sd"] == bias and r["lower"] > 0]
            ds_all = sorted({r["d"] for r in rs})
            ds = [d for d in ds_all if max(r["upper"] / r["lower"] for r in rs if r["d"] == d) <= TIGHT]
            use = [r for r in rs if r["d"] in ds]
            if len(ds) < 3 or len(use) < 4:
                out.append({"bias_sd": bias, "p": p, "dims": ds, "verdict": "too few tight dimensions"})
                continue
            x = np.log([r["d"] for r in use])
            y = np.array([0.5 * np.log(r["lower"] * r["upper"]) for r in use])
            fit = stats.linregress(x, y)
            half = float(stats.t.ppf(0.975, len(use) - 2) * fit.stderr)
            lo_ci, hi_ci = fit.slope - half, fit.slope + half
            key = f"{p:g}'"
            s_dual = slope(ds, [norms[d][key] for d in ds])
            s_two = slope(ds, [norms[d]["2"] for d in ds])
            mid = 0.5 * (s_dual + s_two)
            sign = 1.0 if s_dual > s_two else -1.0     # the p' side of the midpoint
            if sign * (lo_ci - mid) > 0 and sign * (hi_ci - mid) > 0:
                verdict = "fits E||g||_{p'}"
            elif sign * (lo_ci - mid) < 0 and sign * (hi_ci - mid) < 0:
                verdict = "fits E||g||_2"
            else:
                verdict = "undecided: the interval straddles the midpoint"
            claim = "E||g||_{p'}" if p >= 2 else "E||g||_2"
            agrees = None if verdict.startswith("undecided") else verdict.endswith(claim)
            out.append({"bias_sd": bias, "p": p, "dims": ds, "n": len(use), "slope": float(fit.slope),
                        "ci95": [float(lo_ci), float(hi_ci)], "pred_dual": s_dual, "pred_2": s_two,
                        "verdict": verdict, "claim": claim, "agrees_with_claim": agrees})
            print(f"{bias:>5g} {p:>4g} {len(use):>3} {fit.slope:>12.3f} [{lo_ci:>7.3f}, {hi_ci:>7.3f}] "
                  f"{s_dual:>8.3f} {s_two:>7.3f} {verdict}")
    return out


def plot(summary, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    biases = sorted({s["bias_sd"] for s in summary})
    fig, axes = plt.subplots(len(biases), 2, figsize=(10, 4 * len(biases)), squeeze=False)
    for row, bias in enumerate(biases):
        for col, (key, label) in enumerate((("ratio_dual", "L_p / E||g||_{p'}"), ("ratio_2", "L_p / E||g||_2"))):
            ax = axes[row, col]
            for s in summary:
                if s["bias_sd"] != bias:
                    continue
                style = "-" if s["p"] >= 2 else "--"
                ax.plot(s["dims"], s[key], style, marker="o", label=f"p={s['p']:g}")
            ax.set_xlabel("input dimension d")
            ax.set_title(f"{label}, bias sd {bias:g}")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.legend(fontsize=8)
    fig.suptitle("Random He networks: flat lines = the normalisation that matches "
                 "(claim: p >= 2 solid flat on the left, p < 2 dashed flat on the right)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
