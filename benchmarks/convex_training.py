"""Convex training of two-layer ReLU networks vs Adam on the non-convex problem vs scnn.

Objective (all three evaluated the same way, on the returned network):
    (1/2)||f(X) - y||^2 + lam * sum_j |a_j| ||(w_j, b_j)||
(the balanced form of (lam/2)||theta||^2, hidden biases penalised, no output bias).

* ours: relulab.train.convex_fit, time to a certified optimum (duality gap <= 1e-8) over
  the sampled activation patterns, with the default interior-point solver (Clarabel, then
  Newton on the active face) and, for comparison, the first-order solver (FISTA +
  active-set Newton, 5000 iterations at most);
* Adam: a width-100 network trained full batch (lr 1e-2, float64); time until its objective
  is within 1e-2 and 1e-4 (relative) of ours, and its best objective in the budget;
* scnn (pip install pyscnn; it installs, but pulls a CUDA build of torch and cvxpy): its ReLU
  formulation (augmented Lagrangian over sampled patterns, group-l1 strength lam / n since it
  averages the loss), float64, default solver settings; its returned network is scored on
  the objective above.

Run:  python benchmarks/convex_training.py [--only 2-D]   (about 10 minutes, most of it
FISTA and Adam; the machine is shared, times are noisy)
"""

from __future__ import annotations

import sys
import time

import numpy as np

from relulab.train import convex_fit


def objective_params(W, b, a, X, y, lam) -> float:
    f = np.maximum(X @ W.T + b, 0.0) @ a
    pen = float(np.sum(np.abs(a) * np.sqrt(np.sum(W ** 2, axis=1) + b ** 2)))
    return 0.5 * float(np.sum((f - y) ** 2)) + lam * pen


def run_adam(X, y, lam, target, width=100, budget=60.0, seed=0):
    import torch

    torch.manual_seed(seed)
    dt = torch.float64
    Xt = torch.tensor(np.hstack([X, np.ones((X.shape[0], 1))]), dtype=dt)
    yt = torch.tensor(y, dtype=dt)
    W = (torch.randn(width, Xt.shape[1], dtype=dt) * 0.5).requires_grad_()
    a = (torch.randn(width, dtype=dt) * 0.5).requires_grad_()
    opt = torch.optim.Adam([W, a], lr=1e-2)
    t0 = time.perf_counter()
    hit2 = hit4 = None
    best = np.inf
    step = 0
    while time.perf_counter() - t0 < budget:
        opt.zero_grad()
        loss = 0.5 * ((torch.relu(Xt @ W.T) @ a - yt) ** 2).sum() + 0.5 * lam * (
            W.pow(2).sum() + a.pow(2).sum())
        loss.backward()
        opt.step()
        step += 1
        if step % 25 == 0:
            with torch.no_grad():
                Wn, an = W.numpy(), a.numpy()
                v = objective_params(Wn[:, :-1], Wn[:, -1], an, X, y, lam)
            best = min(best, v)
            el = time.perf_counter() - t0
            if hit2 is None and v <= target * (1 + 1e-2):
                hit2 = el
            if hit4 is None and v <= target * (1 + 1e-4):
                hit4 = el
                break
    return {"best": best, "t_1e-2": hit2, "t_1e-4": hit4, "steps": step}


def run_scnn(X, y, lam, max_neurons):
    try:
        from scnn.optimize import optimize
        from scnn.regularizers import NeuronGL1
    except ImportError:
        return None
    t0 = time.perf_counter()
    model, _ = optimize("relu", max_neurons, X, y, regularizer=NeuronGL1(lam / X.shape[0]),
                        bias=True, unitize_data=False, dtype="float64", verbose=False)
    el = time.perf_counter() - t0
    W1, b1, W2 = model.parameters
    return {"objective": objective_params(np.asarray(W1), np.asarray(b1), np.asarray(W2)[0],
                                          X, y, lam), "seconds": el}


def main() -> None:
    import warnings

    warnings.filterwarnings("ignore")
    rng = np.random.default_rng(0)
    X1 = rng.uniform(-2, 2, (40, 1))
    y1 = np.sin(2 * X1[:, 0]) + 0.1 * rng.normal(size=40)
    X2 = rng.normal(size=(30, 2))
    y2 = np.sin(2 * X2[:, 0]) + X2[:, 1] ** 2
    X5 = rng.normal(size=(100, 5))
    y5 = np.sin(X5[:, 0]) + X5[:, 1] * X5[:, 2]
    # 1-D and 2-D: every activation pattern (871 for the 2-D data) fits, so ours is the
    # certified global optimum; 5-D: 200 sampled patterns
    cases = [("1-D n=40", X1, y1, 0.1, 200), ("1-D n=40", X1, y1, 0.01, 200),
             ("1-D n=40", X1, y1, 0.001, 200), ("2-D n=30", X2, y2, 0.1, 1000),
             ("2-D n=30", X2, y2, 0.01, 1000), ("5-D n=100", X5, y5, 0.01, 200)]
    print(f"{'data':>9} {'lam':>6} {'patterns':>9} | {'ours obj':>10} {'gap':>8} {'ours s':>7} | "
          f"{'FISTA gap':>9} {'FISTA s':>7} | {'Adam best':>10} {'t 1e-2':>7} {'t 1e-4':>7} | "
          f"{'scnn obj':>10} {'scnn s':>7} | {'Adam/ours':>9} {'scnn/ours':>9}")

    def fmt(v):
        return f"{v:7.2f}" if v is not None else "    n/a"

    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else ""
    for name, X, y, lam, P in cases:
        if only not in name:
            continue
        fit = convex_fit(X, y, lam, max_patterns=P)
        # FISTA projects every group each step, by NNLS beyond 2 augmented dimensions: only
        # on univariate data, where it can finish in minutes
        fo = (convex_fit(X, y, lam, max_patterns=P, solver="fista", max_iter=5000)
              if X.shape[1] == 1 else None)
        ours = fit.objective
        adam = run_adam(X, y, lam, ours, budget=30.0)
        sc = run_scnn(X, y, lam, P)
        ratio = (f"{adam['t_1e-2'] / fit.seconds:9.1f}" if adam["t_1e-2"] is not None
                 else f"{'>' + format(30.0 / fit.seconds, '.0f'):>9}")
        sc_obj = f"{sc['objective']:10.6f}" if sc else f"{'n/a':>10}"
        sc_t = fmt(sc["seconds"]) if sc else "    n/a"
        sc_ratio = f"{sc['seconds'] / fit.seconds:9.1f}" if sc else f"{'n/a':>9}"
        cert = "" if fit.converged else "*"
        fcert = "" if fo is None or fo.converged else "*"
        fo_gap = f"{fo.gap:>8.1e}" if fo else f"{'n/a':>8}"
        fo_t = f"{fo.seconds:>7.2f}" if fo else f"{'n/a':>7}"
        pats = f"{fit.n_patterns}{' all' if fit.all_patterns else ''}"
        print(f"{name:>9} {lam:>6} {pats:>9} | {ours:>10.6f} {fit.gap:>7.1e}{cert} "
              f"{fit.seconds:>7.2f} | "
              f"{fo_gap}{fcert} {fo_t} | "
              f"{adam['best']:>10.6f} {fmt(adam['t_1e-2'])} {fmt(adam['t_1e-4'])} | "
              f"{sc_obj} {sc_t} | {ratio} {sc_ratio}", flush=True)
    print("(* = gap certificate not reached; the objective is then only an upper bound.\n"
          " Adam/ours: Adam's time to come within 1e-2 (relative) of our certified objective,\n"
          " divided by ours ('>' when it never did within 30 s). 'all': every activation\n"
          " pattern is used, so ours is the global optimum of the non-convex problem; in 5-D\n"
          " the patterns are sampled and Adam may find a network using other ones. scnn runs\n"
          " with its default solver settings and as many sampled patterns as ours; scnn/ours\n"
          " is a ratio of times only, see its objective.)")


if __name__ == "__main__":
    main()
