"""LipMIP on Gurobi against relulab's exact Lipschitz routes, side by side in one run.

LipMIP (Jordan and Dimakis, NeurIPS 2020) computes the l1 and l_inf Lipschitz constant
of a scalar ReLU network over a box as a mixed-integer program on Gurobi.  Its reference
code is not on PyPI; ``gurobipy`` is, with a size-limited licence (2,000 variables and
2,000 constraints).  This script writes the LipMIP program afresh, directly in gurobipy
and with its own interval bounds (nothing from relulab's MILP encoding), and solves it
on Gurobi for the random networks of ``benchmarks/lipschitz.py`` part 1, next to
relulab's two exact routes on the same networks: region enumeration and relulab's
LipMIP program on HiGHS.  The three values must agree; the table gives the times and
the ratio.

The program, for f(x) = w_out . relu(W_L ... relu(W_1 x + b_1) ... + b_L) + c on a box:
- forward: z_k = W_k h_{k-1} + b_k, h_k = relu(z_k) with one binary a_k per neuron
  (h >= z, h >= 0, h <= z - l (1 - a), h <= u a; stable neurons fixed), where [l, u]
  are interval-arithmetic bounds;
- backward: the gradient g = W_1^T diag(a_1) ... W_L^T diag(a_L) w_out, each product of
  a bounded backward value v and a binary a linearised exactly (u = v a: u <= v_hi a,
  u >= v_lo a, u <= v - v_lo (1 - a), u >= v - v_hi (1 - a));
- objective: the dual norm of g: ||g||_inf for p = 1 (one binary per coordinate and
  sign choosing which |g_i| is maximised), ||g||_1 for p = inf (|g_i| through one sign
  binary per coordinate).
At a point where a neuron's pre-activation is 0 its binary is free, so the program
maximises over Clarke's generalised Jacobian; for networks in general position (random
weights) this equals the Lipschitz constant, which enumeration checks.

Run:  python benchmarks/lipmip_gurobi.py [--quick]      (needs ``pip install gurobipy``)
Writes benchmarks/results/lipmip_gurobi.json.
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from lipschitz import SIZES, random_networks  # noqa: E402  (the same networks as part 1)

from relulab import Network  # noqa: E402
from relulab.lipschitz import by_enumeration, by_milp  # noqa: E402

INF = float("inf")
GUROBI_THREADS = 1  # relulab's routes are single-threaded too


def interval_preactivations(net: Network, lo: np.ndarray, hi: np.ndarray):
    """Interval bounds of every hidden layer's pre-activations over the box [lo, hi]."""
    bounds = []
    h_lo, h_hi = lo.astype(float), hi.astype(float)
    for W, b in zip(net.weights[:-1], net.biases[:-1], strict=True):
        W = np.asarray(W, float)
        Wp, Wn = np.maximum(W, 0), np.minimum(W, 0)
        z_lo = Wp @ h_lo + Wn @ h_hi + np.asarray(b, float)
        z_hi = Wp @ h_hi + Wn @ h_lo + np.asarray(b, float)
        bounds.append((z_lo, z_hi))
        h_lo, h_hi = np.maximum(z_lo, 0), np.maximum(z_hi, 0)
    return bounds


def lipmip_gurobi(net: Network, lo, hi, p: float, time_limit: float = 600.0) -> dict:
    """Solve the LipMIP program for ``p`` in {1, inf} on Gurobi; value, status and time."""
    import gurobipy as gp
    from gurobipy import GRB

    t0 = time.perf_counter()
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    pre = interval_preactivations(net, lo, hi)
    m = gp.Model("lipmip")
    m.Params.OutputFlag = 0
    m.Params.Threads = GUROBI_THREADS
    m.Params.MIPGap = 0.0
    m.Params.MIPGapAbs = 0.0
    m.Params.FeasibilityTol = 1e-9  # tol: Gurobi's tightest, so the value is not inflated
    m.Params.IntFeasTol = 1e-9  # tol: Gurobi's tightest integrality tolerance
    m.Params.TimeLimit = time_limit

    x = m.addMVar(len(lo), lb=lo, ub=hi)
    h = x
    acts = []
    for (W, b), (z_lo, z_hi) in zip(zip(net.weights[:-1], net.biases[:-1], strict=True), pre, strict=True):
        W = np.asarray(W, float)
        n = W.shape[0]
        z = m.addMVar(n, lb=z_lo, ub=z_hi)
        m.addConstr(z == W @ h + np.asarray(b, float))
        a = m.addMVar(n, vtype=GRB.BINARY)
        hn = m.addMVar(n, lb=0.0, ub=np.maximum(z_hi, 0))
        for i in range(n):
            if z_lo[i] >= 0:
                m.addConstr(a[i] == 1)
                m.addConstr(hn[i] == z[i])
            elif z_hi[i] <= 0:
                m.addConstr(a[i] == 0)
                m.addConstr(hn[i] == 0)
            else:
                m.addConstr(hn[i] >= z[i])
                m.addConstr(hn[i] <= z[i] - z_lo[i] * (1 - a[i]))
                m.addConstr(hn[i] <= z_hi[i] * a[i])
        acts.append(a)
        h = hn

    # backward pass: v_L = w_out; u_k = v_k * a_k; v_{k-1} = W_k^T u_k; g = W_1^T u_1
    v = np.asarray(net.weights[-1], float).reshape(-1)
    v_expr, v_lo, v_hi = None, v.copy(), v.copy()
    for k in range(len(acts) - 1, -1, -1):
        a = acts[k]
        n = len(v_lo)
        u = m.addMVar(n, lb=np.minimum(v_lo, 0), ub=np.maximum(v_hi, 0))
        for i in range(n):
            if v_expr is None:  # the output weights are constants: u = w_i a_i is linear
                m.addConstr(u[i] == v_lo[i] * a[i])
            else:
                m.addConstr(u[i] <= v_hi[i] * a[i])
                m.addConstr(u[i] >= v_lo[i] * a[i])
                m.addConstr(u[i] <= v_expr[i] - v_lo[i] * (1 - a[i]))
                m.addConstr(u[i] >= v_expr[i] - v_hi[i] * (1 - a[i]))
        u_lo, u_hi = np.minimum(v_lo, 0), np.maximum(v_hi, 0)
        W = np.asarray(net.weights[k], float)
        Wp, Wn = np.maximum(W.T, 0), np.minimum(W.T, 0)
        v_lo, v_hi = Wp @ u_lo + Wn @ u_hi, Wp @ u_hi + Wn @ u_lo
        nxt = m.addMVar(W.shape[1], lb=v_lo, ub=v_hi)
        m.addConstr(nxt == W.T @ u)
        v_expr = nxt
    g, g_lo, g_hi = v_expr, v_lo, v_hi
    big = np.maximum(np.abs(g_lo), np.abs(g_hi))
    d = len(lo)

    if p == INF:  # ||g||_1 = sum_i |g_i|, |g_i| = max(g_i, -g_i) chosen by a sign binary
        s = m.addMVar(d, vtype=GRB.BINARY)
        y = m.addMVar(d, lb=0.0, ub=big)
        for i in range(d):
            m.addConstr(y[i] <= g[i] + 2 * big[i] * (1 - s[i]))
            m.addConstr(y[i] <= -g[i] + 2 * big[i] * s[i])
        m.setObjective(y.sum(), GRB.MAXIMIZE)
    elif p == 1.0:  # ||g||_inf = max_i max(g_i, -g_i): one (coordinate, sign) chosen
        top = float(big.max())
        sp_ = m.addMVar(d, vtype=GRB.BINARY)
        sn = m.addMVar(d, vtype=GRB.BINARY)
        t = m.addVar(lb=0.0, ub=top)
        m.addConstr(sp_.sum() + sn.sum() == 1)
        for i in range(d):
            m.addConstr(t <= g[i] + 2 * top * (1 - sp_[i]))
            m.addConstr(t <= -g[i] + 2 * top * (1 - sn[i]))
        m.setObjective(t, GRB.MAXIMIZE)
    else:
        raise ValueError(f"lipmip_gurobi: p must be 1 or inf, got {p}")

    m.optimize()
    optimal = m.Status == GRB.OPTIMAL
    return {
        "value": float(m.ObjVal) if m.SolCount else None,
        "bound": float(m.ObjBound),
        "optimal": optimal,
        "status": int(m.Status),
        "vars": int(m.NumVars),
        "constrs": int(m.NumConstrs),
        "seconds": time.perf_counter() - t0,
    }


def run(seeds: int, sizes) -> list[dict]:
    rows = []
    for d, widths, s, net, box in random_networks(seeds, sizes):
        for p, key in ((1.0, "1"), (INF, "inf")):
            t = time.perf_counter()
            e = by_enumeration(net, box, p, None)
            t_enum = time.perf_counter() - t
            t = time.perf_counter()
            h = by_milp(net, box, p, None)
            t_highs = time.perf_counter() - t
            gu = lipmip_gurobi(net, box.lo, box.hi, p)
            exact = e.lower
            row = {
                "d": d, "widths": widths, "seed": s, "p": key, "exact_enumeration": exact,
                "relulab_milp": h.lower, "relulab_milp_complete": bool(h.complete),
                "gurobi": gu["value"], "gurobi_optimal": gu["optimal"],
                "gurobi_vars": gu["vars"], "gurobi_constrs": gu["constrs"],
                "t_enumeration": t_enum, "t_relulab_milp": t_highs, "t_gurobi": gu["seconds"],
            }
            row["gurobi_rel_diff"] = (abs(gu["value"] - exact) / max(exact, 1e-300)
                                      if gu["value"] is not None else None)
            row["relulab_milp_rel_diff"] = abs(h.lower - exact) / max(exact, 1e-300)
            rows.append(row)
            print(f"  d={d} {widths} seed {s} p={key}: exact {exact:.9g} | relulab MILP "
                  f"{h.lower:.9g} ({t_highs:.3f} s) | Gurobi LipMIP {gu['value']:.9g} "
                  f"({gu['seconds']:.3f} s, {gu['vars']} vars) | enumeration {t_enum:.3f} s",
                  flush=True)
    return rows


def summary(rows: list[dict]) -> list[dict]:
    out = []
    for key in ("1", "inf"):
        r = [x for x in rows if x["p"] == key]
        t_e = np.array([x["t_enumeration"] for x in r])
        t_h = np.array([x["t_relulab_milp"] for x in r])
        t_g = np.array([x["t_gurobi"] for x in r])
        out.append({
            "p": key, "networks": len(r),
            "gurobi_optimal": sum(x["gurobi_optimal"] for x in r),
            "max_rel_diff_gurobi_vs_enumeration": max(x["gurobi_rel_diff"] for x in r),
            "max_rel_diff_highs_vs_enumeration": max(x["relulab_milp_rel_diff"] for x in r),
            "median_t_enumeration": float(np.median(t_e)),
            "median_t_relulab_milp": float(np.median(t_h)),
            "median_t_gurobi": float(np.median(t_g)),
            "total_t_enumeration": float(t_e.sum()),
            "total_t_relulab_milp": float(t_h.sum()),
            "total_t_gurobi": float(t_g.sum()),
            "ratio_gurobi_over_enumeration": float(t_g.sum() / t_e.sum()),
            "ratio_gurobi_over_relulab_milp": float(t_g.sum() / t_h.sum()),
        })
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="two sizes, one seed")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).with_name("results") / "lipmip_gurobi.json"))
    a = ap.parse_args()
    try:
        import gurobipy
    except ImportError:
        sys.exit("lipmip_gurobi: gurobipy is not installed (pip install gurobipy; its "
                 "size-limited licence is enough for these networks)")
    sizes = SIZES[:2] if a.quick else SIZES
    seeds = 1 if a.quick else a.seeds
    print(f"gurobipy {'.'.join(map(str, gurobipy.gurobi.version()))}, "
          f"{GUROBI_THREADS} thread; relulab enumeration and LipMIP on HiGHS, same networks")
    rows = run(seeds, sizes)
    summ = summary(rows)
    print("\n| p | networks | Gurobi optimal | max rel. diff. Gurobi / HiGHS vs enumeration "
          "| total s: enumeration | relulab MILP (HiGHS) | LipMIP on Gurobi | Gurobi / enumeration "
          "| Gurobi / relulab MILP |")
    print("|---|---|---|---|---|---|---|---|---|")
    for s in summ:
        print(f"| {s['p']} | {s['networks']} | {s['gurobi_optimal']} | "
              f"{s['max_rel_diff_gurobi_vs_enumeration']:.1e} / {s['max_rel_diff_highs_vs_enumeration']:.1e} | "
              f"{s['total_t_enumeration']:.2f} | {s['total_t_relulab_milp']:.2f} | "
              f"{s['total_t_gurobi']:.2f} | {s['ratio_gurobi_over_enumeration']:.1f}x | "
              f"{s['ratio_gurobi_over_relulab_milp']:.2f}x |")
    Path(a.out).write_text(json.dumps({
        "gurobipy": ".".join(map(str, gurobipy.gurobi.version())), "threads": GUROBI_THREADS,
        "quick": a.quick, "rows": rows, "summary": summ}, indent=1))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
