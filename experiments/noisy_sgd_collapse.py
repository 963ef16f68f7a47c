"""Effective width collapse of wide two-layer ReLU networks under noisy SGD (mean-field
scaling), bounded by the number of linear dichotomies of the training inputs.

Claims checked (abstract in shared/seeds: "implicit bias of noisy stochastic gradient
descent in training wide two-layer ReLU networks for multivariate regression"):

(1) the input weights and biases concentrate on finitely many directions (effective width
    collapse: far fewer directions than neurons);
(2) their number is at most 2P - 1, P = the number of linear dichotomies of the training
    inputs (counted exactly: cells of the central arrangement {(w, b): w . x_i + b = 0},
    relulab.dynamics.linear_dichotomies, which enumerates them with relulab.regions);
(3) each learned direction has its own ternary activation pattern (sign(w . x_i + b) in
    {-1, 0, 1}) on the data.

Setting: n training inputs in R^d (d = 1: n = 5; d = 2: n = 4; uniform in [-1, 1]^d),
2 outputs with Gaussian targets; f(x) = (1/m) sum_j a_j relu(w_j . x + b_j) with m
neurons (mean-field scaling), all weights N(0, 1) at the start; noisy full-batch GD
(Langevin, the mean-field limit of noisy SGD): every particle theta_j = (w_j, b_j, a_j)
moves by -eta m grad_j(L) - eta lam theta_j + sqrt(2 eta tau) xi (time step eta = 0.2,
lam = 1e-2, tau = 1e-6), loss L = mean of (1/2)||f - y||^2.  At the end the directions of
(w_j, b_j) of the neurons carrying the function (contribution ||(w_j, b_j)|| |a_j| at
least 2 % of the largest) are clustered (single linkage on unit vectors, tolerance 0.05,
also 0.02 and 0.1 reported), and each cluster's mean direction gets its ternary pattern
(0 within 1e-2 relative).

Run:  python experiments/noisy_sgd_collapse.py [--quick] [--out DIR]
"""

from __future__ import annotations

import numpy as np
from _common import args, figure, verdict, write

from relulab.dynamics import (
    direction_clusters,
    effective_width,
    linear_dichotomies,
    mlp,
    ternary_patterns,
    train,
)
from relulab.dynamics.recorders import unit_rows

ETA, LAM, TAU = 0.2, 1e-2, 1e-6
SHARE = 0.02  # neurons below this share of the largest contribution are left out
TOL = 0.05


def run(d: int, n: int, m: int, steps: int, seed: int):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    Y = rng.normal(size=(n, 2))
    model = mlp([d, m, 2], out_bias=False, init="plain", init_scale=1.0, out_scale=1.0 / m,
                seed=seed)
    # the mean-field step: lr = eta m on every particle, decay lam / m in the objective
    # (gradient lam theta_j / m, times lr), noise sqrt(2 lr tau') = sqrt(2 eta tau)
    t = train(model, X, Y, loss="mse", optimizer="gd", lr=ETA * m, steps=steps,
              every=max(1, steps // 50), weight_decay=LAM / m, noise=TAU / m,
              record=["effective_width"], seed=seed)
    body = t.model.body
    W = body[0].weight.detach().numpy()
    b = body[0].bias.detach().numpy()
    A = body[2].weight.detach().numpy()
    V = np.hstack([W, b[:, None]])
    size = np.linalg.norm(V, axis=1) * np.linalg.norm(A, axis=0)
    keep = size >= SHARE * size.max()
    widths = {str(tol): effective_width(V, outgoing=A, tol=tol, min_share=SHARE)
              for tol in (0.02, 0.05, 0.1)}
    lab = direction_clusters(V[keep], TOL)
    means = np.array([unit_rows(V[keep][lab == c]).mean(axis=0) for c in np.unique(lab)])
    tern = ternary_patterns(means, X, tol=1e-2)
    unique = len({tuple(r) for r in tern}) == tern.shape[0]
    P = linear_dichotomies(X)
    return {"d": d, "n": n, "m": m, "seed": seed, "P": P, "bound": 2 * P - 1,
            "effective_width": widths, "carrying_neurons": int(keep.sum()),
            "ternary_unique": unique, "final_loss": t.final_loss,
            "ternary_patterns": tern.tolist()}, t


def main() -> None:
    a = args(__doc__)
    m = 400 if not a.quick else 100
    steps = 10000 if not a.quick else 2500
    cases = [(1, 5), (2, 4)]
    seeds = [0, 1, 2] if not a.quick else [0]
    rows, trajs = [], []
    for d, n in cases:
        for sd in seeds:
            r, t = run(d, n, m, steps, sd)
            rows.append(r)
            trajs.append(t)
            print(f"d={d} n={n} seed={sd}: P={r['P']} (bound 2P-1={r['bound']}), effective "
                  f"width {r['effective_width']} of {m} neurons ({r['carrying_neurons']} "
                  f"carrying), ternary patterns distinct: {r['ternary_unique']}, final loss "
                  f"{r['final_loss']:.2e}")
    k = str(TOL)
    collapse = all(r["effective_width"][k] <= m // 10 for r in rows)
    bound = all(r["effective_width"][k] <= r["bound"] for r in rows)
    uniq = all(r["ternary_unique"] for r in rows)
    res = {"setting": {"eta": ETA, "lam": LAM, "tau": TAU, "m": m, "steps": steps,
                       "share": SHARE, "tol": TOL}, "runs": rows, "claims": []}
    res["claims"].append(verdict(
        "(1) effective width collapse", collapse,
        f"directions (tol {TOL}) per run: {[r['effective_width'][k] for r in rows]} of {m} "
        f"neurons"))
    res["claims"].append(verdict(
        "(2) at most 2P - 1 directions", bound,
        f"bounds 2P-1: {[r['bound'] for r in rows]} (P counted exactly)"))
    res["claims"].append(verdict(
        "(3) one ternary pattern per direction", uniq,
        f"distinct ternary patterns for the cluster means in "
        f"{sum(r['ternary_unique'] for r in rows)}/{len(rows)} runs"))
    fig, ax = figure(1, 2, (11, 3.8))
    for r, t in zip(rows, trajs, strict=True):
        ax[0].plot(t.record_steps, t.records["effective_width"], label=f"d={r['d']} s={r['seed']}")
    ax[0].set_yscale("log")
    ax[0].set_title("effective width (all nonzero neurons, tol 1e-2)")
    ax[0].set_xlabel("step")
    ax[0].legend(fontsize=6)
    t = trajs[0]
    W = t.model.body[0].weight.detach().numpy()[:, 0]
    b = t.model.body[0].bias.detach().numpy()
    A = np.linalg.norm(t.model.body[2].weight.detach().numpy(), axis=0)
    ang = np.arctan2(b, W)
    ax[1].scatter(ang, A * np.hypot(W, b), s=6)
    ax[1].set_xlabel("angle of (w, b)")
    ax[1].set_ylabel("contribution |a| |(w, b)|")
    ax[1].set_title(f"d=1 neurons: {rows[0]['effective_width'][k]} directions")
    write(a, "noisy_sgd_collapse", res, fig)


if __name__ == "__main__":
    main()
