"""The p < 2 half of the l^p-Lipschitz dichotomy of random ReLU networks, at larger d.

Claim (Geuchen, Heindl, Stoeger, Voigtlaender; Dirksen, Finke, Geuchen, Stoeger,
Voigtlaender): for wide He-initialised networks R^d -> R, the l^p-Lipschitz constant
L_p behaves like ||g||_{p'} for p >= 2 but like ||g||_2 for p in [1, 2) (g standard
Gaussian in R^d, 1/p + 1/p' = 1); with symmetric random biases up to log-width and
depth factors.

Why a lower-bound test decides the p < 2 side: L_1 = sup_x ||grad f(x)||_inf.  At a
typical point the gradient of a random network looks like s(d) g for a Gaussian g, so
||grad f(x)||_inf / ||grad f(x)||_2 ~ E||g||_inf / E||g||_2 ~ sqrt(2 log d / d) -> 0.
If L_p behaved like ||g||_{p'} (the p >= 2 rule carried over), then
A_p(d) = L_p / (typical ||grad f||_2) would fall like E||g||_{p'} / E||g||_2 (slope
about -0.4 in log-log for p = 1 over d = 4..64, -0.17 for p = 1.5); the claim says it
stays bounded away from 0 (slope 0; the upper side is L_p <= L_2, and L_2 ~ ||g||_2 is
the p = 2 case).  A certified LOWER bound of A_p that stays flat therefore rules out
the ||g||_{p'} behaviour on what was measured; lower bounds alone can never contradict
the claim (they could be loose), so the verdicts are "holds on what was measured" or
"too wide to tell", never "contradicted" without an upper bound.

Measured: d in {4, 8, 16, 32, 64}, width 4d, depth 2 and 3, zero biases and N(0, 0.5^2)
biases, 3 seeds; for p in {1, 1.5, 2, inf} the global constant's certified lower bound
(relulab.lipschitz.ascent_lower: smoothed gradient ascent on the Jacobian's norm, every
value the exact operator norm of a region's Jacobian at a certified interior point,
re-checked here by Network.jacobian; each p takes the best of the four norms' witnesses); the typical ||grad f(x)||_r over 2000 Gaussian
points; at d = 4 the exact constants (region enumeration / LipMIP through
relulab.lipschitz.lipschitz) to show how tight the lower bounds are where they can be
checked.  ``--wide-width 16`` (zero biases, 2 seeds unless ``--wide-seeds``; more seeds
are added with ``--wide-seed-start``) writes random_lipschitz_wide_w16.*.  The test:
least-squares slope of log A_p against log d (depth-centred, all
networks), 95 % t-interval, against the two predicted slopes.

Run:  python experiments/random_lipschitz.py --wide [--quick]
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np

from relulab.lipschitz import ascent_lower, dual_exponent, vector_norm

PS = (1.0, 1.5, 2.0, float("inf"))
BIAS_SD = 0.5


def he_network(rng, d: int, width: int, depth: int, bias_sd: float):
    # the same initialisation as random_lipschitz.py (imported lazily there to keep
    # this module importable on its own)
    from random_lipschitz import he_network as make

    return make(rng, d, width, depth, bias_sd)


def gaussian_norms(d: int, n: int = 100_000, seed: int = 0) -> dict[str, float]:
    G = np.random.default_rng(seed).standard_normal((n, d))
    return {f"{r:g}": float(np.mean(vector_norm(G, r, axis=1))) for r in (1.0, 2.0, 3.0, float("inf"))}


def typical(net, d: int, n: int = 2000, seed: int = 1) -> dict[str, float]:
    """Mean ||grad f(x)||_r over Gaussian points (what random sampling sees)."""
    X = np.random.default_rng(seed).standard_normal((n, d))
    J = _grads(net, X)
    return {f"{r:g}": float(np.mean(vector_norm(J, r, axis=1))) for r in (1.0, 2.0, 3.0, float("inf"))}


def _grads(net, X: np.ndarray) -> np.ndarray:
    from relulab.lipschitz import jacobians

    return jacobians(net, X)[0][:, 0, :]


def measure(net, d: int, quick: bool, exact: bool) -> dict:
    out = {"typical": typical(net, d), "lower": {}, "exact": {}, "time": {}}
    restarts, steps = (32, 100) if quick else (48, 150)
    if exact:   # a bias-free network: one enumeration of [-1, 1]^d serves every norm
        from random_lipschitz import PS as ALL_PS
        from random_lipschitz import measure_all

        for p, m in zip(ALL_PS, measure_all(net, d, 30.0, d), strict=True):
            if p in PS:
                out["exact"][f"{p:g}"] = {"lower": m["lower"], "upper": m["upper"], "status": m["status"],
                                          "method": m["method"]}
    grads = []
    for p in PS:
        t = time.time()
        w = ascent_lower(net, None, p, None, restarts=restarts, steps=steps, seed=d)
        out["time"][f"{p:g}"] = time.time() - t
        # independent re-check of the witness: Network.jacobian at x, its dual norm
        J = np.asarray(net.jacobian(w.x[None]), float).ravel()
        v = float(vector_norm(J, dual_exponent(p)))
        assert abs(v - w.norm) <= 1e-9 * max(1.0, v), (v, w.norm)
        grads.append(J)
        out.setdefault("source", {})[f"{p:g}"] = w.source
    # every witness is a certified interior point, so its gradient bounds every norm's
    # constant: each p takes the best over the four witnesses
    for p in PS:
        vals = [float(vector_norm(J, dual_exponent(p))) for J in grads]
        out["lower"][f"{p:g}"] = max(vals)
        out["lower_from"] = out.get("lower_from", {}) | {f"{p:g}": f"{PS[int(np.argmax(vals))]:g}"}
        if exact:
            assert out["lower"][f"{p:g}"] <= out["exact"][f"{p:g}"]["upper"] * (1 + 1e-9)
    return out


def centred_slope(rows: list[dict], key) -> dict:
    """OLS slope of log(key) on log d with one intercept per depth; 95 % t-interval."""
    from scipy import stats

    xs, ys = [], []
    for depth in sorted({r["depth"] for r in rows}):
        sub = [r for r in rows if r["depth"] == depth]
        x = np.log([r["d"] for r in sub])
        y = np.log([key(r) for r in sub])
        xs.append(x - x.mean())
        ys.append(y - y.mean())
    x, y = np.concatenate(xs), np.concatenate(ys)
    b = float(x @ y / (x @ x))
    dof = len(x) - 1 - len(xs)
    se = math.sqrt(float(np.sum((y - b * x) ** 2)) / dof / float(x @ x))
    h = float(stats.t.ppf(0.975, dof)) * se
    return {"slope": b, "ci95": [b - h, b + h], "n": len(x)}


def predicted_slope(dims, norms, num: str, den: str = "2") -> float:
    x = np.log(np.asarray(dims, float))
    y = np.log([norms[d][num] / norms[d][den] for d in dims])
    return float(np.polyfit(x, y, 1)[0])


def verdicts(runs: list[dict], norms: dict, dims) -> list[dict]:
    out = []
    print(f"\n{'bias':>5} {'p':>4} {'slope log A_p':>14} {'95% CI':>18} {'claim':>7} {'alt':>7} verdict")
    for bias in sorted({r["bias_sd"] for r in runs}):
        for p in PS:
            key = f"{p:g}"
            rows = [r for r in runs if r["bias_sd"] == bias]
            fit = centred_slope(rows, lambda r, k=key: r["lower"][k] / r["typical"]["2"])
            dual = f"{dual_exponent(p):g}"
            s_dual = predicted_slope(dims, norms, dual)
            s_two = 0.0
            claim, alt = (s_two, s_dual) if p < 2 else (s_dual, s_two)
            lo_ci, hi_ci = fit["ci95"]
            if p == 2:
                verdict = "p' = 2: both predictions the same (slope 0)"
            else:
                mid = 0.5 * (claim + alt)
                up = claim > alt      # the claim predicts the larger slope (true for every p != 2)
                if up and lo_ci > mid:
                    verdict = "holds on what was measured"
                else:
                    verdict = "too wide to tell (lower bounds only)"
                if p > 2:
                    verdict += " (lower side only: L_p >= typical ||grad||_{p'} is automatic)"
            # the endpoint ratio: the certified lower bound's fall from the smallest to the
            # largest d, against the fall the ||g||_{p'} rule predicts
            d0, d1 = min(dims), max(dims)
            g0 = np.exp(np.mean([np.log(r["lower"][key] / r["typical"]["2"]) for r in rows if r["d"] == d0]))
            g1 = np.exp(np.mean([np.log(r["lower"][key] / r["typical"]["2"]) for r in rows if r["d"] == d1]))
            pred_alt = (norms[d1][dual] / norms[d1]["2"]) / (norms[d0][dual] / norms[d0]["2"])
            # descriptive, not certified (the denominator is a lower bound too): the same
            # network's L_p lower bound over its L_2 lower bound; the ||g||_{p'} rule says
            # it falls like E||g||_{p'} / E||g||_2, the claim (p < 2) that it stays put
            rel = centred_slope(rows, lambda r, k=key: r["lower"][k] / r["lower"]["2"]) if p != 2 else None
            out.append({"bias_sd": bias, "p": p, **fit, "pred_claim": claim, "pred_alt": alt,
                        "slope_over_L2_lower": rel,
                        "pred_dual_slope": s_dual, "A_first": float(g0), "A_last": float(g1),
                        "A_change": float(g1 / g0), "alt_change": float(pred_alt), "verdict": verdict})
            print(f"{bias:>5g} {p:>4g} {fit['slope']:>14.3f} [{lo_ci:>7.3f}, {hi_ci:>7.3f}] {claim:>7.3f} "
                  f"{alt:>7.3f} {verdict}")
            if rel is not None:
                print(f"{'':>10} (descriptive) slope of log(lower L_p / lower L_2): {rel['slope']:.3f} "
                      f"[{rel['ci95'][0]:.3f}, {rel['ci95'][1]:.3f}]")
    return out


def tightness(runs: list[dict]) -> dict:
    """Where exact values exist (d = 4): lower / exact per p."""
    out = {}
    for p in PS:
        k = f"{p:g}"
        v = [r["lower"][k] / r["exact"][k]["upper"] for r in runs if k in r.get("exact", {})
             and r["exact"][k]["status"] == "exact"]
        if v:
            out[k] = {"n_exact": len(v), "min": float(min(v)), "median": float(np.median(v))}
    return out


def plot(runs, norms, dims, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    biases = sorted({r["bias_sd"] for r in runs})
    fig, axes = plt.subplots(1, len(biases), figsize=(5.5 * len(biases), 4.2), squeeze=False)
    for ax, bias in zip(axes[0], biases, strict=True):
        for p, c in zip(PS, ("C0", "C1", "C2", "C3"), strict=True):
            k = f"{p:g}"
            gm = [np.exp(np.mean([np.log(r["lower"][k] / r["typical"]["2"]) for r in runs
                                  if r["d"] == d and r["bias_sd"] == bias])) for d in dims]
            ax.plot(dims, gm, "-o", color=c, label=f"p={k}: certified lower L_p / typical ||grad||_2")
            if p < 2:   # the ||g||_{p'} rule, anchored at the smallest d
                dual = f"{dual_exponent(p):g}"
                alt = [gm[0] * (norms[d][dual] / norms[d]["2"]) / (norms[dims[0]][dual] / norms[dims[0]]["2"])
                       for d in dims]
                ax.plot(dims, alt, ":", color=c, label=f"p={k}: if L_p ~ E||g||_{dual} (anchored at d={dims[0]}'s lower bound)")
        ty = [np.exp(np.mean([np.log(r["typical"]["inf"] / r["typical"]["2"]) for r in runs
                              if r["d"] == d and r["bias_sd"] == bias])) for d in dims]
        ax.plot(dims, ty, "--", color="grey", label="typical ||grad||_inf / ||grad||_2 (random points)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(f"input dimension d (width {runs[0]['width'] // runs[0]['d']}d, depths "
                      f"{sorted({r['depth'] for r in runs})})")
        ax.set_title(f"bias sd {bias:g}")
        ax.legend(fontsize=6)
    fig.suptitle("Certified lower bounds of L_p over the typical gradient norm (solid; geometric mean over seeds "
                 "and depths) against the ||g||_{p'} rule anchored at the smallest d (dotted); claim for p < 2: flat",
                 fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def wide_main(quick: bool, out: Path, depths: list[int] | None = None, width_factor: int = 4,
              biases: tuple[float, ...] = (0.0, BIAS_SD), seeds: int | None = None, seed_start: int = 0) -> None:
    """Run the networks of ``depths`` (default 2 and 3; quick: 2) and merge them with the
    other depths' runs already in ``out``.json, writing after every network (a run cut
    short keeps what it did), then the verdicts over all runs."""
    dims = [4, 8, 16] if quick else [4, 8, 16, 32, 64]
    depths = depths or ([2] if quick else [2, 3])
    seeds = seeds or (2 if quick else 3)
    norms = {d: gaussian_norms(d) for d in dims}
    jf = Path(str(out) + ".json")
    runs = []
    if jf.exists() and not quick:
        new = range(seed_start, seed_start + seeds)
        runs = [r for r in json.loads(jf.read_text())["runs"]
                if not (r["depth"] in depths and r["seed"] in new and r["bias_sd"] in biases)]
    t0 = time.time()

    def save(final: dict | None = None) -> None:
        res = {"claim": __doc__.split("\n\n")[1], "dims": dims, "depths": sorted({r["depth"] for r in runs}),
               "seeds": sorted({r["seed"] for r in runs}), "width": f"{width_factor}d", "bias_sd": BIAS_SD, "gaussian_norms": norms, "runs": runs,
               "quick": quick, "complete": final is not None, **(final or {})}
        jf.parent.mkdir(parents=True, exist_ok=True)
        jf.write_text(json.dumps(res, indent=1, default=str))

    for depth in depths:
        for d in dims:
            for bias in biases:
                for s in range(seed_start, seed_start + seeds):
                    net = he_network(np.random.default_rng(104729 * d + 31 * depth + s), d, width_factor * d,
                                     depth, bias)
                    m = measure(net, d, quick, exact=(not quick and d == dims[0] and bias == 0.0
                                                      and width_factor * d <= 16))
                    m.update(d=d, depth=depth, seed=s, bias_sd=bias, width=width_factor * d)
                    runs.append(m)
                    save()
                    print(f"bias {bias:g} depth {depth} d={d} seed={s}: lower "
                          + ", ".join(f"L_{k} >= {v:.3f}" for k, v in m["lower"].items())
                          + f"; typical ||grad||_2 {m['typical']['2']:.3f}, ||grad||_inf {m['typical']['inf']:.3f}"
                          + f" ({sum(m['time'].values()):.1f} s, {time.time() - t0:.0f} s in all)", flush=True)
    summarise_wide(runs, norms, dims, out, save, t0)


def resummarise(out: Path) -> None:
    """Verdicts, JSON and figure again from the runs stored in ``out``.json."""
    res = json.loads(Path(str(out) + ".json").read_text())
    runs, dims = res["runs"], res["dims"]
    norms = {int(k): v for k, v in res["gaussian_norms"].items()}

    def save(final: dict | None = None) -> None:
        res.update(final or {})
        res["complete"] = True
        Path(str(out) + ".json").write_text(json.dumps(res, indent=1, default=str))

    summarise_wide(runs, norms, dims, out, save, time.time() - float(res.get("seconds_this_run", 0.0)))


def summarise_wide(runs, norms, dims, out: Path, save, t0: float) -> None:
    jf = Path(str(out) + ".json")
    tests = verdicts(runs, norms, dims)
    tight = tightness(runs)
    for k, v in tight.items():
        print(f"  d = {dims[0]}, zero biases: lower / exact for p = {k}: min {v['min']:.3f}, "
              f"median {v['median']:.3f} over {v['n_exact']} exact constants")
    anchor = anchored_test(runs, norms, dims)
    save({"verdicts": tests, "tightness_at_smallest_d": tight, "anchored_test": anchor,
          "seconds_this_run": time.time() - t0})
    plot(runs, norms, dims, str(out) + ".png")
    print(f"\nwrote {jf} and {out}.png ({time.time() - t0:.0f} s)")


def anchored_test(runs: list[dict], norms: dict, dims) -> list[dict]:
    """Zero biases, p < 2: if L_p behaved like E||g||_{p'} (times the typical gradient
    scale, with a constant fixed where it is known exactly, at the smallest d), then at
    the largest d it would be at most EXACT(d_min) * (fall of E||g||_{p'}/E||g||_2).  The
    certified lower bound at the largest d above that value contradicts the ||g||_{p'} rule
    with that constant (geometric means over seeds and depths)."""
    out = []
    d0, d1 = min(dims), max(dims)
    for p in (1.0, 1.5):
        k, dual = f"{p:g}", f"{dual_exponent(p):g}"
        r0 = [r for r in runs if r["bias_sd"] == 0.0 and r["d"] == d0 and r["exact"].get(k, {}).get("status") == "exact"]
        r1 = [r for r in runs if r["bias_sd"] == 0.0 and r["d"] == d1]
        if not r0 or not r1:
            continue
        e0 = float(np.exp(np.mean([np.log(r["exact"][k]["upper"] / r["typical"]["2"]) for r in r0])))
        l1 = float(np.exp(np.mean([np.log(r["lower"][k] / r["typical"]["2"]) for r in r1])))
        fall = (norms[d1][dual] / norms[d1]["2"]) / (norms[d0][dual] / norms[d0]["2"])
        pred = e0 * fall
        out.append({"p": p, "exact_at_dmin": e0, "fall_if_gpprime": fall, "predicted_at_dmax": pred,
                    "certified_lower_at_dmax": l1, "lower_over_predicted": l1 / pred,
                    "verdict": ("the ||g||_{p'} rule (constant fixed at d_min) is contradicted" if l1 > pred
                                else "no contradiction of the ||g||_{p'} rule")})
        print(f"  p = {k}, zero biases: exact A at d={d0} {e0:.3f}; the ||g||_{dual} rule predicts "
              f"<= {pred:.3f} at d={d1}; certified lower bound {l1:.3f} ({l1 / pred:.2f}x)")
    return out
