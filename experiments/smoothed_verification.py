"""Smoothed verification of the 3-CNF gadget: extensive vs constant verification gaps.

Claims checked (the abstract on smoothed verification, seeds line 25):

1. Exact identity: for every E3SAT formula with m clauses, the four-ReLU-per-clause
   gadget has max over [0, 1]^n equal to (m - unsat)/3 (checked here by MILP with an
   exact re-evaluation, and by exact vertex enumeration for n = 3).
2. At the fixed noise level sigma* = 2^-11 (every weight and bias perturbed by
   N(0, sigma^2), clipped to [-2, 2], rounded to the dyadic grid 2^-16), a verification
   gap linear in m survives the perturbation (the abstract: with probability at least
   1 - e^(-m/8)).  "Survives": the maximum moves by less than half the gap.
3. The "computational checks" illustrate different scaling: the shift of the maximum
   grows with m, so a constant gap (unsat = 1, gap 1/3) is eventually swamped while an
   extensive gap (unsat = m/8, gap m/24) keeps pace as long as sigma is small.

Formulas: k disjoint blocks of 8 clauses on 3 variables (block_formula): all blocks
unsatisfiable (extensive) or one (constant).  The gadget's blocks are separable, so the
maximum is measured block by block (relulab.verify.maximize per block, exact sum);
tests cross-check this against one whole-network MILP and brute force.

Run:  python experiments/smoothed_verification.py [--quick]
Writes experiments/results/smoothed_verification.{json,png}.
"""

from __future__ import annotations

import json
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
from _common import args

from relulab import Box
from relulab.construct import (
    SIGMA_STAR,
    ExactEvaluator,
    block_formula,
    exact_max_bruteforce,
    min_unsat,
    normalized_gadget,
    random_3cnf,
    smoothed_gap,
)
from relulab.results import to_jsonable
from relulab.verify import maximize

BITS = 16
ID_TOL = 1e-6  # MILP tolerance for the identity check (values are multiples of 1/3)


def identity_check(quick: bool) -> dict:
    rows = []
    formulas = [(block_formula(k, u), 3 * k) for k, u in [(1, 1), (2, 0), (3, 2), (4, 4)]]
    rng = np.random.default_rng(0)
    for _ in range(3 if quick else 8):
        n = int(rng.integers(5, 11))
        m = int(rng.integers(n, 6 * n))
        formulas.append((random_3cnf(n, m, rng), n))
    for clauses, n in formulas:
        net = normalized_gadget(clauses, n)
        unsat = min_unsat(clauses, n)[0]
        want = Fraction(len(clauses) - unsat, 3)
        r = maximize(net.float(), Box(np.zeros(n), np.ones(n)), time_limit=120)
        x = [Fraction(float(v)) for v in np.clip(r.x, 0, 1)]
        val = Fraction(ExactEvaluator(net)(np.array([x], dtype=object))[0, 0])
        ok = r.status == "optimal" and val <= want and abs(float(val - want)) <= ID_TOL \
            and r.upper_bound <= float(want) + ID_TOL
        brute = str(exact_max_bruteforce(net)[0]) if n == 3 else None
        if brute is not None:
            ok = ok and Fraction(brute) == want
        rows.append({"n": n, "m": len(clauses), "unsat": unsat, "expected": str(want),
                     "milp_value_exact": str(val), "milp_upper": r.upper_bound,
                     "status": r.status, "bruteforce": brute, "ok": bool(ok)})
    return {"rows": rows, "held": all(r["ok"] for r in rows)}


def gap_grid(ks, sigmas, seeds, time_limit: float) -> list[dict]:
    rows = []
    for sigma in sigmas:
        for k in ks:
            for family, ub in (("extensive", k), ("constant", 1)):
                for seed in seeds:
                    r = smoothed_gap(block_formula(k, ub), 3 * k, sigma=sigma, bits=BITS,
                                     seed=seed, unsat=ub, time_limit=time_limit)
                    d = r.to_dict()
                    d["family"] = family
                    rows.append(d)
                    print(f"sigma=2^{np.log2(sigma):.0f} m={r.m:4d} {family:9s} seed={seed} "
                          f"shift={float(r.shift):+.4f} gap={float(r.gap):.3f} "
                          f"survives={r.survives} {r.status} {r.seconds:.1f}s", flush=True)
    return rows


def summarise(rows: list[dict], sigmas) -> dict:
    out = {}
    for sigma in sigmas:
        for family in ("extensive", "constant"):
            sel = [r for r in rows if r["sigma"] == sigma and r["family"] == family]
            ms = sorted({r["m"] for r in sel})
            out[f"{family}@{sigma}"] = [
                {"m": m,
                 "mean_abs_shift": float(np.mean([abs(float(Fraction(r["shift"])))
                                                  for r in sel if r["m"] == m])),
                 "gap": float(Fraction(next(r["gap"] for r in sel if r["m"] == m))),
                 "survive_fraction": float(np.mean([r["survives"] for r in sel if r["m"] == m])),
                 "all_optimal": all(r["status"] == "optimal" for r in sel if r["m"] == m)}
                for m in ms]
    return out


def note(rows: list[dict], summary: dict, sigmas) -> str:
    """The honest reading of the numbers measured (computed from them)."""
    star = max(p["mean_abs_shift"] for f in ("extensive", "constant")
               for p in summary[f"{f}@{SIGMA_STAR}"])
    slopes = {s: float(np.median([p["mean_abs_shift"] / p["m"] for p in summary[f"extensive@{s}"]]))
              for s in sigmas}
    timed = [r for r in rows if r["status"] != "optimal"]
    parts = [
        "Diagnostics, as the abstract says, not evidence for the complexity theorem.",
        f"At sigma* = 2^-11 the largest mean shift measured is {star:.3g}, far below half of "
        "either gap, so the constant gap also survives at every m measured here; the different "
        "scaling shows at larger sigma.",
        "The shift grows about linearly in m: median shift per clause (extensive family) "
        + ", ".join(f"{v:.2g} at sigma=2^{np.log2(s):.0f}" for s, v in slopes.items())
        + f" (about {np.median([v / s for s, v in slopes.items()]):.2f} sigma), against half the "
        "extensive gap per clause 1/48 = 0.021: the linear gap survives only for sigma below a "
        "constant, as the theorem's fixed sigma* requires, and at sigma = 2^-4 it fails for "
        "large m.",
    ]
    if timed:
        parts.append(f"{len(timed)} of {len(rows)} maxima hit the time limit; they are judged by "
                     "the worse end of their bracket (largest bracket "
                     f"{max(r['bracket'] for r in timed):.2g}).")
    return " ".join(parts)


def plot(summary: dict, sigmas, path: Path) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.2), layout="constrained")
    a1, a2 = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    colors = dict(zip(sigmas, ("tab:green", "tab:blue", "tab:red", "tab:purple"), strict=False))
    ms_all = sorted({p["m"] for v in summary.values() for p in v})
    for key, pts in summary.items():
        family, sigma = key.split("@")
        sigma = float(sigma)
        ms = [p["m"] for p in pts]
        style = "-o" if family == "extensive" else "--s"
        lab = f"{family}, sigma=2^{np.log2(sigma):.0f}"
        a1.plot(ms, [max(p["mean_abs_shift"], 1e-6) for p in pts], style, color=colors[sigma], label=lab)
        a2.plot(ms, [p["survive_fraction"] for p in pts], style, color=colors[sigma], label=lab)
    a1.plot(ms_all, [m / 48 for m in ms_all], "k-", lw=2, label="half extensive gap m/48")
    a1.plot(ms_all, [1 / 6] * len(ms_all), "k--", lw=2, label="half constant gap 1/6")
    a1.set(xscale="log", yscale="log", xlabel="clauses m", ylabel="|max perturbed - max base|",
           title="shift of the maximum (exact)")
    a2.set(xscale="log", xlabel="clauses m", ylabel="fraction of seeds where the gap survives",
           ylim=(-0.05, 1.05), title="gap survives (shift < gap / 2)")
    a1.legend(fontsize=7)
    a2.legend(fontsize=7)
    fig.savefig(path, dpi=120)


def main() -> None:
    a = args(__doc__, parts=False)  # --quick, --out (created)
    out = a.out
    t0 = time.time()
    sigmas = [SIGMA_STAR, 2.0**-6, 2.0**-4]
    ks = [1, 2, 4] if a.quick else [1, 2, 4, 8, 16, 32]
    seeds = [0] if a.quick else [0, 1, 2]
    ident = identity_check(a.quick)
    print(f"identity max = (m - unsat)/3 on {len(ident['rows'])} formulas: {ident['held']}")
    rows = gap_grid(ks, sigmas, seeds, time_limit=60.0)
    summary = summarise(rows, sigmas)

    def fam(f: str, s: float) -> list[dict]:
        return summary[f"{f}@{s}"]

    all_opt = all(r["status"] == "optimal" for r in rows)
    star_ext = all(p["survive_fraction"] == 1.0 for p in fam("extensive", SIGMA_STAR))
    mid = 2.0**-6
    const_mid, ext_mid = fam("constant", mid), fam("extensive", mid)
    scaling = (const_mid[-1]["survive_fraction"] < const_mid[0]["survive_fraction"]
               and all(p["survive_fraction"] == 1.0 for p in ext_mid))
    growth = {f"{f}@{s}": [round(p["mean_abs_shift"] / p["m"], 5) for p in fam(f, s)]
              for s in sigmas for f in ("extensive", "constant")}
    verdicts = [
        {"claim": "max of the gadget over [0,1]^n = (m - unsat)/3", "held": ident["held"]},
        {"claim": "at sigma* = 2^-11 the extensive gap survives for every m and seed measured",
         "held": star_ext},
        {"claim": "at sigma = 2^-6 the constant gap is swamped as m grows while the extensive "
                  "gap survives", "held": scaling},
    ]
    for v in verdicts:
        print(f"claim: {v['claim']}: {'HELD' if v['held'] else 'DID NOT HOLD'}")
    result = {
        "claims": verdicts,
        "note": note(rows, summary, sigmas),
        "all_maxima_optimal": all_opt,
        "bits": BITS, "sigmas": sigmas, "ks": ks, "seeds": seeds,
        "identity": ident, "summary": summary, "shift_per_clause": growth, "runs": rows,
        "quick": a.quick, "seconds": time.time() - t0,
    }
    plot(summary, sigmas, out / "smoothed_verification.png")
    (out / "smoothed_verification.json").write_text(json.dumps(to_jsonable(result), indent=1))
    print(f"wrote {out}/smoothed_verification.json and .png in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
