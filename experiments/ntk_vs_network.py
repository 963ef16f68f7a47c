"""NTK regression against trained ReLU networks: Fourier against architectural complexity.

Claim checked (the abstract on Fourier vs architectural complexity, seeds file): on the unit
circle, (a) for the depth-L iterated sawtooth, NTK regression needs Omega(4^L) samples while
depth-L ReLU networks need far fewer (polynomial in L); (b) on bandlimited smooth targets
the NTK is competitive or better; (c) on the hypercube sparse-parity model a standard
two-layer network beats the NTK by four to six orders of magnitude in test error.

Setup (ours; the abstract fixes no sizes):
(a) inputs ``x = (cos t, sin t)``, target ``T^L((1 + x_1)/2)`` with the tent map
    ``T(u) = 1 - |2u - 1|``: exactly an L-hidden-layer width-2 ReLU network
    (``sawtooth_network``), frequencies up to ~2^L.  NTK ridge regression
    (``relulab.dynamics.KernelRidge``, depth L, bias variance 1, ridge 1e-8) against
    ReLU networks with L hidden layers of width 32 (He weights, data-dependent biases,
    Adam with cosine schedule, full batch; several restarts, the lowest training loss
    kept) and, as a diagnostic that knows the solution (not a learning algorithm), the
    exact width-2 network plus N(0, 0.01^2) noise on every parameter, trained the same
    way (its starting error is recorded); for each L the smallest training size n (on a
    doubling grid) at which the test MSE falls below 1% of the target's variance
    ("samples needed"), and the NTK's growth per level;
(a') ERM over the class: the width-2 depth-L class (which contains the target) trained
    by multi-start Adam (128 restarts, random He start and a fold-structured random start),
    the lowest training loss kept; "ERM reached" only when that loss is ~0 (``part_erm``;
    ``--part erm`` reruns just this arm into an existing JSON);
(a'') ERM over the class by batched multi-start Levenberg-Marquardt
    (``relulab.dynamics.fit_multistart``, widths 2-4) and by basin hopping from its best
    restarts (``fit_basin_hopping``), the lowest *training* loss kept, ERM reached only where
    that loss is 0; a probe of empirical risk minimisers started near the target (and
    adversarially pulled away from it), and the NTK to L = 6 (``--part lm`` / ``--part hop``
    rerun these into an existing JSON; figure ``ntk_vs_network_erm.png``);
(b) target ``sum_{k<=3} a_k cos(k t) + b_k sin(k t)``: test MSE of both at several n;
(c) ``x`` uniform on ``{-1, 1}^d``, ``y = x_1 x_2 x_3`` (k = 3): NTK (depth 1) against a
    two-layer width-256 network (Adam, lr 2e-2, 10000 steps), test MSE and their ratio.

Writes ntk_vs_network.{json,png} and ntk_vs_network_erm.png.  Run: python experiments/ntk_vs_network.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from relulab.dynamics import KernelRidge
from relulab.results import to_jsonable

THRESH = 0.01  # "learned": test MSE below 1% of the target variance
# trained networks for the sawtooth: L hidden layers of `width`, `restarts` runs selected by
# training MSE; the oracle-initialised width-2 run starts at the exact network + noise
FULL_NET = {"width": 32, "restarts": 4, "steps": 3000, "lr": 3e-3, "oracle_noise": 0.01}
QUICK_NET = {"width": 16, "restarts": 2, "steps": 300, "lr": 3e-3, "oracle_noise": 0.01}
# the ERM arm: multi-start training of the width-2 class itself; "ERM reached" when the best
# training MSE is under erm_train_tol of the target variance (the class minimum is 0)
FULL_ERM = {"levels": [2, 3, 4], "ns": [64, 256], "restarts": 128, "steps": 1500, "lr": 1e-2, "erm_train_tol": 1e-4}
QUICK_ERM = {"levels": [2], "ns": [32], "restarts": 8, "steps": 200, "lr": 1e-2, "erm_train_tol": 1e-4}
# the recipe arm: width a bit above the minimal 2, many restarts kept by validation, warmup + cosine
FULL_RECIPE = {"levels": [2, 3, 4, 5], "ns": [2**p for p in range(4, 10)], "width": 4, "restarts": 32,
               "steps": 2000, "lr": 1e-2, "warmup": 0.05}
QUICK_RECIPE = {"levels": [2], "ns": [32, 64], "width": 4, "restarts": 8, "steps": 300, "lr": 1e-2, "warmup": 0.05}
# a wider variant (a probe at L = 3, n = 128 gave test 0.02 at width 16 against 0.4 at width 4)
FULL_RECIPE_W16 = {"levels": [2, 3, 4], "ns": [2**p for p in range(4, 10)], "width": 16, "restarts": 16,
                   "steps": 3000, "lr": 1e-2, "warmup": 0.05}
QUICK_RECIPE_W16 = {"levels": [2], "ns": [32], "width": 16, "restarts": 4, "steps": 200, "lr": 1e-2, "warmup": 0.05}
# the Levenberg-Marquardt ERM arm (relulab.dynamics.fit_multistart): `restarts` He and `restarts` fold
# starts per (L, w, n), `iters` LM iterations, at most `time_limit` s per start family; the minimiser
# probe: `probe_restarts` starts per noise level at the exact width-2 network
FULL_LM = {"levels": [2, 3, 4, 5], "widths": [2, 3, 4], "ns": [32, 64, 128, 256], "restarts": 128, "iters": 100,
           "time_limit": 60.0, "probe_levels": [2, 3, 4, 5, 6], "probe_ns": [2**p for p in range(3, 11)],
           "probe_noise": [0.01, 0.03, 0.1], "probe_restarts": 32, "decoy_points": 64, "decoy_amp": 1.0,
           "decoy_weight": 4, "probe_min_found": 16}
QUICK_LM = {"levels": [2], "widths": [2], "ns": [32], "restarts": 32, "iters": 60, "time_limit": 20.0,
            "probe_levels": [2, 3], "probe_ns": [16, 32], "probe_noise": [0.03], "probe_restarts": 8,
            "decoy_points": 16, "decoy_amp": 1.0, "decoy_weight": 4, "probe_min_found": 4}
# basin hopping over the width-2 class (fit_basin_hopping), at most `time_limit` s per fit.  30 s
# (was 80 s): the six L >= 4 fits all ran to the limit without approaching zero training loss
# (best 0.27-0.59 of the variance at 80 s), so the budget decides their cost, not their outcome;
# the 80-s rows stay in the JSON, carried over and labelled (sawtooth_erm_hop_80s)
FULL_HOP = {"levels": [2, 3, 4, 5], "ns": [64, 128, 256], "width": 2, "restarts": 512, "chains": 48, "children": 8,
            "rounds": 40, "iters": 100, "time_limit": 30.0}
HOP_80S_RUN = "9d61788"  # the commit whose --part hop run (80 s per fit) the full mode carries over
QUICK_HOP = {"levels": [2], "ns": [64], "width": 2, "restarts": 64, "chains": 8, "children": 4, "rounds": 3,
             "iters": 60, "time_limit": 15.0}
FULL_NTK_DEEP = {"levels": [2, 3, 4, 5, 6], "ns": [2**p for p in range(4, 13)]}
QUICK_NTK_DEEP = {"levels": [2, 3], "ns": [16, 64, 256]}
RECIPES = {"recipe": ("sawtooth_recipe", FULL_RECIPE, QUICK_RECIPE),
           "recipe16": ("sawtooth_recipe_w16", FULL_RECIPE_W16, QUICK_RECIPE_W16)}


def tent(u: np.ndarray, L: int) -> np.ndarray:
    """``T^L(u)`` for the tent map ``T(u) = 1 - |2u - 1|`` on [0, 1] (2^L linear pieces)."""
    for _ in range(L):
        u = 1.0 - np.abs(2.0 * u - 1.0)
    return u


def sawtooth(X: np.ndarray, L: int) -> np.ndarray:
    """The depth-L iterated sawtooth on the circle: ``T^L((1 + x_1) / 2)``.  Unlike
    ``T^L(angle / 2 pi)`` (which needs the arc length, not piecewise linear in ``x``) it is
    *exactly* a ReLU network with L hidden layers of width 2 (``sawtooth_network``), so it
    lies in the architecture class of the claim, while its Fourier spectrum reaches
    frequency ~ 2^L."""
    return tent((1.0 + X[:, 0]) / 2.0, L)


def sawtooth_network(L: int):
    """The exact network: ``u = (1 + x_1)/2 >= 0``, then ``T(v) = 2 relu(v) - 4 relu(v - 1/2)``
    on [0, 1], composed L times (weights 2 and -4 folded into the next layer)."""
    from relulab import Network

    Ws, bs = [np.array([[0.5, 0.0], [0.5, 0.0]])], [np.array([0.5, 0.0])]
    fold = np.array([[2.0, -4.0], [2.0, -4.0]])  # next layer's input is T(v) = 2 h_1 - 4 h_2
    for _ in range(L - 1):
        Ws.append(fold.copy())
        bs.append(np.array([0.0, -0.5]))
    Ws.append(np.array([[2.0, -4.0]]))
    bs.append(np.array([0.0]))
    return Network(Ws, bs)


def circle(t: np.ndarray) -> np.ndarray:
    return np.c_[np.cos(t), np.sin(t)]


def train_net(X, y, hidden: list[int], steps: int, lr: float, seed: int = 0):
    import torch

    torch.manual_seed(seed)
    layers, prev = [], X.shape[1]
    for w in hidden:
        layers += [torch.nn.Linear(prev, w), torch.nn.ReLU()]
        prev = w
    layers.append(torch.nn.Linear(prev, 1))
    m = torch.nn.Sequential(*layers)
    Xt, yt = torch.tensor(X, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)[:, None]
    opt = torch.optim.Adam(m.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((m(Xt) - yt) ** 2).mean()
        loss.backward()
        opt.step()
        sched.step()

    def predict(Z):
        with torch.no_grad():
            return m(torch.tensor(Z, dtype=torch.float32))[:, 0].double().numpy()

    return predict


def train_restarts(X, y, L: int, width: int, restarts: int, steps: int, lr: float, seed: int,
                   init=None, init_noise: float = 0.0, val=None, warmup: float = 0.0):
    """``restarts`` ReLU networks (L hidden layers of ``width``) trained at once as one
    batched ensemble (independent parameters, Adam is per-coordinate, so this is exactly
    ``restarts`` separate runs), full batch, MSE, cosine schedule.  Initialisation: He
    weights with data-dependent biases (each unit's kink at a random training point, so no
    unit starts dead), or, when ``init`` (a Network of that shape) is given, ``init`` plus
    N(0, init_noise^2) on every parameter.  Returns (train MSE per restart, predictor of
    the restart with the lowest training MSE: empirical risk minimisation over restarts).
    With ``val = (X_val, y_val)`` the restart with the lowest validation MSE is kept instead;
    ``warmup`` (a fraction of ``steps``) ramps the learning rate up linearly before the cosine."""
    import torch

    g = torch.Generator().manual_seed(seed)
    dims = [X.shape[1]] + [width] * L + [1]
    R = restarts
    Xt = torch.tensor(X.T)[None].expand(R, -1, -1)
    yt = torch.tensor(y)[None]
    Ws, bs = [], []
    with torch.no_grad():
        H = Xt
        for k in range(L + 1):
            if init is None or init == "fold":
                W = torch.randn(R, dims[k + 1], dims[k], generator=g, dtype=torch.float64) * np.sqrt(2.0 / dims[k])
                if init == "fold" and k < L:  # every unit of a layer reads the same direction
                    W = W[:, :1, :].expand(-1, dims[k + 1], -1).clone()
                P = W @ H
                j = torch.randint(0, X.shape[0], (R, dims[k + 1]), generator=g)
                b = -torch.gather(P, 2, j[:, :, None]) if k < L else torch.zeros(R, dims[k + 1], 1, dtype=torch.float64)
            else:  # a Network: its weights plus noise
                W = torch.tensor(init.weights[k])[None].repeat(R, 1, 1)
                b = torch.tensor(init.biases[k])[None, :, None].repeat(R, 1, 1)
                W += init_noise * torch.randn(W.shape, generator=g, dtype=torch.float64)
                b += init_noise * torch.randn(b.shape, generator=g, dtype=torch.float64)
                P = W @ H
            H = torch.relu(P + b)
            Ws.append(W.requires_grad_())
            bs.append(b.requires_grad_())

    def fwd(A):
        H = A
        for k in range(L + 1):
            H = Ws[k] @ H + bs[k]
            if k < L:
                H = torch.relu(H)
        return H[:, 0, :]

    opt = torch.optim.Adam(Ws + bs, lr=lr)
    ramp = int(warmup * steps)
    if ramp == 0:
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    else:
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda i: (i + 1) / ramp if i < ramp else 0.5 * (1 + np.cos(np.pi * (i - ramp) / (steps - ramp))))
    for _ in range(steps):
        opt.zero_grad()
        ((fwd(Xt) - yt) ** 2).mean(dim=1).sum().backward()
        opt.step()
        sched.step()
    with torch.no_grad():
        train = ((fwd(Xt) - yt) ** 2).mean(dim=1).numpy()
        if val is None:
            best = int(np.argmin(train))
        else:
            Xv = torch.tensor(val[0].T)[None].expand(R, -1, -1)
            best = int(np.argmin(((fwd(Xv) - torch.tensor(val[1])[None]) ** 2).mean(dim=1).numpy()))

    def predict(Z):
        with torch.no_grad():
            return fwd(torch.tensor(Z.T)[None].expand(R, -1, -1))[best].numpy()

    return train, predict


def mse(a, b) -> float:
    return float(np.mean((a - b) ** 2))


def _first_below(rows, key):
    return next((x["n"] for x in rows if x[key] is not None and x[key] < THRESH), None)


def part_sawtooth(levels, ns_ntk, ns_net, net_cfg, rng) -> dict:
    """Test MSE / variance against n for NTK ridge regression (depth L, bias variance 1)
    and for trained networks, per level L; the samples needed to fall below THRESH."""
    X_test = circle(rng.uniform(0, 2 * np.pi, 2000))
    rows = []
    for L in levels:
        y_test = sawtooth(X_test, L)
        var = float(np.var(y_test))
        exact = sawtooth_network(L)
        exact_err = float(np.max(np.abs(exact(X_test)[:, 0] - y_test)))
        done_net = 0
        for n in sorted(set(ns_ntk) | set(ns_net)):
            X = circle(rng.uniform(0, 2 * np.pi, n))
            y = sawtooth(X, L)
            row = {"L": L, "n": n, "ntk_rel_mse": None, "net_rel_mse": None, "net_train_mse": None,
                   "oracle_init_rel_mse": None, "oracle_start_rel_mse": None}
            if n in ns_ntk:
                k = KernelRidge("ntk", depth=L, bias_var=1.0, ridge=1e-8).fit(X, y)
                row["ntk_rel_mse"] = mse(k.predict(X_test), y_test) / var
            if n in ns_net and done_net < 2:  # stop a level's network grid 2 points after it learned
                tr, pred = train_restarts(X, y, L, net_cfg["width"], net_cfg["restarts"], net_cfg["steps"],
                                          net_cfg["lr"], seed=1000 * L + n)
                row["net_rel_mse"] = mse(pred(X_test), y_test) / var
                row["net_train_mse"] = float(tr.min())
                done_net += row["net_rel_mse"] < THRESH
                _, pred = train_restarts(X, y, L, 2, 1, net_cfg["steps"], net_cfg["lr"] / 3, seed=n + L,
                                         init=exact, init_noise=net_cfg["oracle_noise"])
                row["oracle_init_rel_mse"] = mse(pred(X_test), y_test) / var
                _, start = train_restarts(X, y, L, 2, 1, 0, 1e-3, seed=n + L, init=exact,
                                          init_noise=net_cfg["oracle_noise"])
                row["oracle_start_rel_mse"] = mse(start(X_test), y_test) / var  # before training
            rows.append(row)
            fmt = lambda v: "-" if v is None else f"{v:.2e}"  # noqa: E731
            print(f"  sawtooth L={L} n={n:5d}: NTK {fmt(row['ntk_rel_mse'])}  net {fmt(row['net_rel_mse'])} "
                  f"(train {fmt(row['net_train_mse'])})  oracle-init width 2 {fmt(row['oracle_init_rel_mse'])}",
                  flush=True)
        rows[-1]["exact_network_max_error"] = exact_err
    need = {}
    for L in levels:
        r = [x for x in rows if x["L"] == L]
        need[L] = {"ntk": _first_below(r, "ntk_rel_mse"), "net": _first_below(r, "net_rel_mse"),
                   "oracle_init": _first_below(r, "oracle_init_rel_mse")}
    growth = []
    for a, b in zip(levels, levels[1:], strict=False):
        if need[a]["ntk"] and need[b]["ntk"]:
            growth.append(need[b]["ntk"] / need[a]["ntk"])
    return {"target": "T^L((1 + x_1)/2) on the unit circle, T the tent map; exactly an L-hidden-layer "
                      "width-2 ReLU network",
            "rows": rows, "samples_needed": need, "ntk_growth_per_level": growth,
            "threshold_rel_mse": THRESH, "grid_ntk": ns_ntk, "grid_net": ns_net, "network": net_cfg,
            "exact_network_max_error": max(x.get("exact_network_max_error", 0.0) for x in rows)}


def part_erm(levels, ns, cfg, rng) -> dict:
    """ERM over the architecture class itself (L hidden layers of width 2, the class that
    contains the target exactly), approximated by multi-start gradient training: ``restarts``
    runs from (i) He weights with data-dependent biases and (ii) a fold-structured random
    start (every unit of a layer reads the same random direction, as the target's folds do;
    slopes and breakpoints random), the run with the lowest *training* MSE kept.  The
    estimator is ERM only if the selected run reaches the class's minimal training loss,
    which is 0 (the exact network interpolates); the best training MSE is recorded so
    that "ERM reached" is checked, not assumed."""
    X_test = circle(rng.uniform(0, 2 * np.pi, 2000))
    rows = []
    for L in levels:
        y_test = sawtooth(X_test, L)
        var = float(np.var(y_test))
        for n in ns:
            X = circle(rng.uniform(0, 2 * np.pi, n))
            y = sawtooth(X, L)
            row = {"L": L, "n": n}
            for arm, init in (("random", None), ("fold", "fold")):
                tr, pred = train_restarts(X, y, L, 2, cfg["restarts"], cfg["steps"], cfg["lr"],
                                          seed=7000 + 100 * L + n, init=init)
                row[f"{arm}_rel_mse"] = mse(pred(X_test), y_test) / var
                row[f"{arm}_best_train_rel_mse"] = float(tr.min()) / var
                row[f"{arm}_erm_reached"] = bool(tr.min() / var < cfg["erm_train_tol"])
            rows.append(row)
            print(f"  ERM arm L={L} n={n:4d}: random-start test {row['random_rel_mse']:.2e} "
                  f"(best train {row['random_best_train_rel_mse']:.1e}), fold-start test {row['fold_rel_mse']:.2e} "
                  f"(best train {row['fold_best_train_rel_mse']:.1e})", flush=True)
    need = {L: {arm: next((r["n"] for r in rows if r["L"] == L and r[f"{arm}_rel_mse"] < THRESH), None)
                for arm in ("random", "fold")} for L in levels}
    return {"what": "multi-start training of the width-2 depth-L class, best training loss kept",
            "config": cfg, "rows": rows, "samples_needed": need,
            "erm_reached_anywhere": any(r["random_erm_reached"] or r["fold_erm_reached"] for r in rows),
            "status": "sampled; an ERM value only where erm_reached (training MSE/variance < erm_train_tol)"}


def part_recipe(levels, ns, cfg, ntk_needed: dict, rng) -> dict:
    """A better training recipe for depth-L networks on the sawtooth: width ``cfg['width']``
    (a bit above the minimal class, width 2), ``cfg['restarts']`` restarts (half He with
    data-dependent biases, half fold-structured), linear warmup then cosine, and the restart
    kept by its MSE on a held-out quarter of the n training points (all n count as samples).
    For each L the smallest n on the grid with test MSE / variance < THRESH, beside the
    NTK's (from the sawtooth part) and the claim's 4^L growth."""
    X_test = circle(rng.uniform(0, 2 * np.pi, 2000))
    rows, need = [], {}
    for L in levels:
        y_test = sawtooth(X_test, L)
        var = float(np.var(y_test))
        need[L] = None
        for n in ns:
            X = circle(rng.uniform(0, 2 * np.pi, n))
            y = sawtooth(X, L)
            n_val = max(n // 4, 2)
            Xtr, ytr, val = X[n_val:], y[n_val:], (X[:n_val], y[:n_val])
            best = None
            for init in (None, "fold"):
                _, pred = train_restarts(Xtr, ytr, L, cfg["width"], cfg["restarts"] // 2, cfg["steps"], cfg["lr"],
                                         seed=9000 + 100 * L + n + (init is None), init=init, val=val,
                                         warmup=cfg["warmup"])
                v = mse(pred(val[0]), val[1])
                if best is None or v < best[0]:
                    best = (v, pred)
            row = {"L": L, "n": n, "val_rel_mse": best[0] / var, "test_rel_mse": mse(best[1](X_test), y_test) / var}
            rows.append(row)
            print(f"  recipe L={L} n={n:4d}: validation {row['val_rel_mse']:.2e}  test {row['test_rel_mse']:.2e}",
                  flush=True)
            if row["test_rel_mse"] < THRESH:
                need[L] = n
                break
    known = {int(k): v for k, v in ntk_needed.items()}  # JSON keys are strings
    base = next((known[L]["ntk"] for L in levels if known.get(L, {}).get("ntk")), None)
    table = [{"L": L, "ntk_measured": known.get(L, {}).get("ntk"),
              # the claim's Omega(4^L): the first level's measured NTK count times 4 per level
              "claim_ntk_4^L_scaled": None if base is None else base * 4 ** (L - levels[0]),
              "net_recipe_measured": need[L], "net_width32_measured": known.get(L, {}).get("net")}
             for L in levels]
    beats = [r["L"] for r in table if r["net_recipe_measured"] and r["ntk_measured"]
             and r["net_recipe_measured"] < r["ntk_measured"]]
    return {"what": "depth-L width-w networks, many restarts selected by validation, warmup + cosine",
            "config": cfg, "rows": rows, "samples_needed": need, "claim_vs_measured": table,
            "levels_where_net_needs_fewer_samples_than_ntk": beats,
            "status": "sampled (one data set per (L, n); samples needed on a doubling grid)"}


def layer_norm_summary(net) -> dict:
    """Weight norms of a fitted network (the claim bounds a variation norm R of the weights;
    the abstract does not define it, so three readings): the largest layer Frobenius norm,
    the *balanced* per-layer norm ``(prod_k |W_k|_F)^(1/(L+1))`` (the largest layer norm
    after the function-preserving rescaling ``W_k -> c_k W_k``, ``prod c_k = 1``, biases
    rescaled along), and the product of spectral norms (a Lipschitz bound)."""
    fro = [float(np.linalg.norm(W)) for W in net.weights]
    spec = [float(np.linalg.norm(W, 2)) for W in net.weights]
    return {"max_layer_fro": max(fro), "balanced_layer_fro": float(np.exp(np.mean(np.log(np.maximum(fro, 1e-300))))),
            "spectral_product": float(np.prod(spec))}


def part_ntk_deep(levels, ns, rng) -> dict:
    """NTK ridge regression (depth L, bias variance 1, ridge 1e-8, as in part_sawtooth) on the
    sawtooth up to deeper levels; a level's grid stops at the first n below THRESH."""
    X_test = circle(rng.uniform(0, 2 * np.pi, 2000))
    rows, need = [], {}
    for L in levels:
        y_test = sawtooth(X_test, L)
        var = float(np.var(y_test))
        need[L] = None
        for n in ns:
            X = circle(rng.uniform(0, 2 * np.pi, n))
            k = KernelRidge("ntk", depth=L, bias_var=1.0, ridge=1e-8).fit(X, sawtooth(X, L))
            e = mse(k.predict(X_test), y_test) / var
            rows.append({"L": L, "n": n, "ntk_rel_mse": e})
            print(f"  NTK L={L} n={n:5d}: {e:.2e}", flush=True)
            if e < THRESH:
                need[L] = n
                break
    growth = [need[b] / need[a] for a, b in zip(levels, levels[1:], strict=False) if need[a] and need[b]]
    return {"rows": rows, "samples_needed": need, "growth_per_level": growth, "grid": ns,
            "status": "sampled (one data set per (L, n); samples needed on a doubling grid)"}


def part_erm_lm(levels, widths, ns, cfg, ntk_need: dict, rng) -> dict:
    """ERM over the narrow class by batched multi-start Levenberg-Marquardt
    (``relulab.dynamics.fit_multistart``): for each (L, w, n), ``restarts`` He starts and
    ``restarts`` fold starts, the restart with the lowest *training* MSE kept (test data never
    used for selection).  ``erm_reached`` when that training MSE is 0 up to 1e-10 of the
    variance (the class contains the target at every w >= 2, so its minimum is 0); then the
    estimate is an empirical risk minimiser up to that tolerance.  Also recorded: the fraction of restarts
    that interpolate, the worst test error among them (every interpolating restart is an
    ERM solution), and the weight norms of the estimate.

    Then the *minimiser probe* (width 2): the same fitter started at the exact network plus
    N(0, s^2) noise on every parameter.  A run that interpolates is a genuine empirical risk
    minimiser of the class whatever its start, so the worst test error among these
    minimisers shows how much the class's ERM solutions can differ at this n (a sample of
    the minimisers near the target, not all of them: the start knows the target).  Adversarial
    minimisers: starts first pulled toward a decoy (the target +- its std at random points off
    the training set), then refitted to the training data alone.  "Probe samples needed": the
    first n on the grid where at least ``probe_min_found`` minimisers were found and all
    have test MSE < THRESH, confirmed at the next n."""
    from relulab.dynamics import fit_multistart

    X_test = circle(rng.uniform(0, 2 * np.pi, 2000))
    rows, need, probe, probe_need, probe_confirmed = [], {}, [], {}, {}
    all_levels = sorted(set(levels) | set(cfg["probe_levels"]))
    for L in all_levels:
        y_test = sawtooth(X_test, L)
        var = float(np.var(y_test))
        for w in widths if L in levels else ():
            need[f"{L},{w}"] = None
            for n in ns:
                X = circle(rng.uniform(0, 2 * np.pi, n))
                y = sawtooth(X, L)
                fits = [fit_multistart(X, y, L, w, restarts=cfg["restarts"], max_iter=cfg["iters"], start=st,
                                       seed=100 * L + 10 * w + n + j, time_limit=cfg["time_limit"])
                        for j, st in enumerate(("he", "fold"))]
                train = np.concatenate([f.train_mse for f in fits]) / float(np.var(y))
                tests = np.concatenate([((f.predict(X_test) - y_test) ** 2).mean(axis=1) for f in fits]) / var
                best = int(np.argmin(train))
                inter = train <= 1e-10  # tol: fit_multistart's INTERP_TOL (interpolation, relative)
                bf = fits[best // cfg["restarts"]]
                row = {"L": L, "width": w, "n": n, "restarts": 2 * cfg["restarts"],
                       "restarts_completed": sum(f.completed for f in fits), "lm_iterations": cfg["iters"],
                       "best_train_rel_mse": float(train[best]), "test_rel_mse": float(tests[best]),
                       "erm_reached": bool(inter[best]), "best_start": ("he", "fold")[best // cfg["restarts"]],
                       "interpolating_fraction": float(inter.mean()),
                       "interpolating_fraction_he": fits[0].interpolating_fraction,
                       "interpolating_fraction_fold": fits[1].interpolating_fraction,
                       "worst_interpolant_test_rel_mse": float(tests[inter].max()) if inter.any() else None,
                       "status": [f.status for f in fits],
                       "norms": layer_norm_summary(bf.networks([best % cfg["restarts"]])[0]),
                       "seconds": sum(f.seconds for f in fits)}
                rows.append(row)
                worst = row["worst_interpolant_test_rel_mse"]
                print(f"  LM-ERM L={L} w={w} n={n:4d}: best train {row['best_train_rel_mse']:.1e} test "
                      f"{row['test_rel_mse']:.2e}  interpolating {row['interpolating_fraction']:.4f}"
                      f" (worst {'-' if worst is None else f'{worst:.1e}'})  {row['seconds']:.1f}s", flush=True)
                if row["test_rel_mse"] < THRESH:
                    need[f"{L},{w}"] = n
                    break
        if L not in cfg["probe_levels"]:
            continue
        exact = sawtooth_network(L)
        probe_need[L] = None
        for n in cfg["probe_ns"]:
            X = circle(rng.uniform(0, 2 * np.pi, n))
            y = sawtooth(X, L)
            tests, norms = [], []
            for s in cfg["probe_noise"]:
                f = fit_multistart(X, y, L, 2, restarts=cfg["probe_restarts"], max_iter=cfg["iters"], start=exact,
                                   noise=s, seed=L * 1000 + n)
                idx = np.flatnonzero(f.train_mse / float(np.var(y)) <= 1e-10)  # tol: INTERP_TOL
                if idx.size:
                    tests += list(((f.predict(X_test, idx) - y_test) ** 2).mean(axis=1) / var)
                    norms += [layer_norm_summary(net)["balanced_layer_fro"] for net in f.networks(idx)]
            near = list(tests)
            # adversarial minimisers: first pulled toward a decoy (the target +- decoy_amp x its
            # std at random off-training points, the training points weighted decoy_weight x),
            # then refitted to the training data alone from there
            Z = circle(rng.uniform(0, 2 * np.pi, cfg["decoy_points"]))
            decoy = sawtooth(Z, L) + cfg["decoy_amp"] * float(np.std(y)) * rng.choice([-1.0, 1.0], len(Z))
            Xa = np.vstack([np.repeat(X, cfg["decoy_weight"], axis=0), Z])
            ya = np.r_[np.repeat(y, cfg["decoy_weight"]), decoy]
            R = cfg["probe_restarts"]
            pulled = fit_multistart(Xa, ya, L, 2, restarts=R, max_iter=cfg["iters"], start=exact, noise=0.03,
                                    seed=L * 1000 + n + 1)
            f = fit_multistart(X, y, L, 2, restarts=R, max_iter=cfg["iters"], start=pulled.networks(range(R)))
            idx = np.flatnonzero(f.train_mse / float(np.var(y)) <= 1e-10)  # tol: INTERP_TOL
            adv = list(((f.predict(X_test, idx) - y_test) ** 2).mean(axis=1) / var) if idx.size else []
            norms += [layer_norm_summary(net)["balanced_layer_fro"] for net in f.networks(idx)] if idx.size else []
            tests = near + adv
            row = {"L": L, "n": n, "minimisers_found": len(tests),
                   "starts": R * (len(cfg["probe_noise"]) + 1),
                   "near_minimisers": len(near), "adversarial_minimisers": len(adv),
                   "near_worst_test_rel_mse": float(np.max(near)) if near else None,
                   "adversarial_worst_test_rel_mse": float(np.max(adv)) if adv else None,
                   "median_test_rel_mse": float(np.median(tests)) if tests else None,
                   "worst_test_rel_mse": float(np.max(tests)) if tests else None,
                   "max_balanced_layer_fro": float(np.max(norms)) if norms else None}
            probe.append(row)
            nan = float("nan")
            print(f"  minimiser probe L={L} n={n:4d}: {len(near)} near / {len(adv)} adversarial minimisers, test median "
                  f"{row['median_test_rel_mse'] or nan:.1e} worst near {row['near_worst_test_rel_mse'] or nan:.1e} "
                  f"adversarial {row['adversarial_worst_test_rel_mse'] or nan:.1e}", flush=True)
            # "learned at n": >= probe_min_found minimisers, all under THRESH, here and at the next n
            row["all_below"] = bool(len(tests) >= cfg["probe_min_found"] and row["worst_test_rel_mse"] < THRESH)
            if row["all_below"] and probe_need[L] is not None:
                probe_confirmed[L] = True
                break
            probe_need[L] = n if row["all_below"] else None
        else:
            probe_confirmed[L] = False  # the grid ended before a second n confirmed it
    # the claim's numbers beside the measured ones: NTK Omega(4^L) scaled to the first level's
    # measured count; the class's minimax rate L w^2 R^2 / n .. L^2 w^2 R^2 / n scaled from the
    # first level's probe count with R the target's balanced norm (w = 2 fixed)
    R = {L: layer_norm_summary(sawtooth_network(L))["balanced_layer_fro"] for L in all_levels}
    L0 = all_levels[0]
    ntk = {int(k): v for k, v in ntk_need.items()}
    base_ntk = ntk.get(L0)
    base_net = probe_need.get(L0)
    table = []
    for L in all_levels:
        scale = (R[L] / R[L0]) ** 2
        table.append({
            "L": L, "ntk_measured": ntk.get(L),
            "claim_ntk_4^L_scaled": None if base_ntk is None else base_ntk * 4 ** (L - L0),
            "erm_lm_measured": {w: need[f"{L},{w}"] for w in widths} if L in levels else None,
            "erm_lm_reached_zero_loss": any(r["erm_reached"] for r in rows if r["L"] == L),
            "minimiser_probe_measured": probe_need.get(L),
            "claim_class_rate_scaled_low": None if base_net is None else base_net * (L / L0) * scale,
            "claim_class_rate_scaled_high": None if base_net is None else base_net * (L / L0) ** 2 * scale,
            "target_balanced_layer_fro": R[L]})
    return {"what": "ERM over depth-L width-w ReLU networks by batched multi-start Levenberg-Marquardt, lowest "
                    "training loss kept; and a probe of empirical risk minimisers started near the target",
            "config": cfg, "rows": rows, "samples_needed": need, "probe_rows": probe,
            "probe_samples_needed": probe_need, "probe_confirmed_at_next_n": probe_confirmed,
            "claim_vs_measured": table,
            "status": "sampled (one data set per (L, n); samples needed on a doubling grid; ERM exact only "
                      "where erm_reached)"}


def part_smooth(ns, steps, rng) -> dict:
    a, b = rng.normal(size=4), rng.normal(size=4)

    def f(t):
        return sum(a[k] * np.cos(k * t) + b[k] * np.sin(k * t) for k in range(4))

    t_test = rng.uniform(0, 2 * np.pi, 2000)
    y_test = f(t_test)
    var = float(np.var(y_test))
    rows = []
    for n in ns:
        t = rng.uniform(0, 2 * np.pi, n)
        X, y = circle(t), f(t)
        k = KernelRidge("ntk", depth=2, bias_var=1.0, ridge=1e-8).fit(X, y)
        e_ntk = mse(k.predict(circle(t_test)), y_test) / var
        e_net = mse(train_net(X, y, [32, 32], steps, 3e-3, seed=n)(circle(t_test)), y_test) / var
        rows.append({"n": n, "ntk_rel_mse": e_ntk, "net_rel_mse": e_net})
        print(f"  bandlimited n={n:4d}: NTK rel. MSE {e_ntk:.3e}  net {e_net:.3e}", flush=True)
    return {"rows": rows, "ntk_better_or_equal_at": [r["n"] for r in rows if r["ntk_rel_mse"] <= r["net_rel_mse"]]}


def part_parity(d, n, steps, rng) -> dict:
    X = rng.choice([-1.0, 1.0], size=(n, d))
    Xt = rng.choice([-1.0, 1.0], size=(2000, d))
    y, yt = X[:, 0] * X[:, 1] * X[:, 2], Xt[:, 0] * Xt[:, 1] * Xt[:, 2]
    k = KernelRidge("ntk", depth=1, bias_var=1.0, ridge=1e-6).fit(X, y)
    e_ntk = mse(k.predict(Xt), yt)
    e_net = mse(train_net(X, y, [256], steps, 2e-2, seed=1)(Xt), yt)
    ratio = e_ntk / max(e_net, 1e-300)
    print(f"  parity d={d} k=3 n={n}: NTK test MSE {e_ntk:.3e}  net {e_net:.3e}  ratio {ratio:.2e}", flush=True)
    return {"d": d, "k": 3, "n": n, "ntk_test_mse": e_ntk, "net_test_mse": e_net, "ratio": ratio,
            "orders_of_magnitude": float(np.log10(ratio)) if ratio > 0 else None}


def part_erm_hop(levels, ns, cfg, ntk_need: dict, rng) -> dict:
    """ERM over the width-w class by multi-start Levenberg-Marquardt plus basin hopping
    (``relulab.dynamics.fit_basin_hopping``: the best ``chains`` of ``restarts`` He starts
    each spawn ``children`` perturbed copies per round, refitted; a chain moves to its best
    child when that lowers the *training* MSE; stops when the best chain interpolates).  No
    target knowledge, no test data in any choice.  Per level, the first n on the grid with
    test MSE / variance < THRESH."""
    from relulab.dynamics import fit_basin_hopping

    X_test = circle(rng.uniform(0, 2 * np.pi, 2000))
    rows, need = [], {}
    for L in levels:
        y_test = sawtooth(X_test, L)
        var = float(np.var(y_test))
        need[L] = None
        for n in ns:
            X = circle(rng.uniform(0, 2 * np.pi, n))
            y = sawtooth(X, L)
            f = fit_basin_hopping(X, y, L, cfg["width"], restarts=cfg["restarts"], chains=cfg["chains"],
                                  children=cfg["children"], rounds=cfg["rounds"], max_iter=cfg["iters"],
                                  seed=500 + 10 * L + n, time_limit=cfg["time_limit"])
            tests = ((f.predict(X_test) - y_test) ** 2).mean(axis=1) / var
            inter = f.train_mse / float(np.var(y)) <= 1e-10  # tol: INTERP_TOL
            row = {"L": L, "n": n, "status": f.status, "erm_reached": f.status == "interpolated",
                   "best_train_rel_mse": float(f.train_mse[f.best] / np.var(y)), "test_rel_mse": float(tests[f.best]),
                   "lm_runs": f.restarts, "rounds": f.iterations, "interpolating_chains": int(inter.sum()),
                   "worst_interpolant_test_rel_mse": float(tests[inter].max()) if inter.any() else None,
                   "norms": layer_norm_summary(f.network), "seconds": f.seconds}
            rows.append(row)
            print(f"  hop-ERM L={L} n={n:4d}: {f.status} after {f.iterations} rounds ({f.restarts} LM runs, "
                  f"{f.seconds:.0f}s): best train {row['best_train_rel_mse']:.1e} test {row['test_rel_mse']:.2e}",
                  flush=True)
            if row["test_rel_mse"] < THRESH:
                need[L] = n
                break
    ntk = {int(k): v for k, v in ntk_need.items()}
    table = [{"L": L, "ntk_measured": ntk.get(L), "erm_hop_measured": need[L],
              "erm_hop_reached_zero_loss": any(r["erm_reached"] for r in rows if r["L"] == L)} for L in levels]
    return {"what": "ERM over depth-L width-w ReLU networks: multi-start LM + basin hopping, lowest training loss",
            "config": cfg, "rows": rows, "samples_needed": need, "claim_vs_measured": table,
            "status": "sampled (one data set per (L, n); ERM exact only where erm_reached; time-limited fits "
                      "say time_limit)"}


def run_hop_arm(quick: bool, ntk_need: dict) -> dict:
    t0 = time.time()
    c = dict(QUICK_HOP if quick else FULL_HOP)
    hop = part_erm_hop(c.pop("levels"), c.pop("ns"), c, ntk_need, np.random.default_rng(5))
    hop["seconds"] = time.time() - t0
    return hop


def run_lm_arms(quick: bool) -> tuple[dict, dict]:
    """The deep NTK grid and the Levenberg-Marquardt ERM arm (with its minimiser probe)."""
    t0 = time.time()
    c = dict(QUICK_NTK_DEEP if quick else FULL_NTK_DEEP)
    deep = part_ntk_deep(c["levels"], c["ns"], np.random.default_rng(3))
    deep["seconds"] = time.time() - t0
    t0 = time.time()
    c = dict(QUICK_LM if quick else FULL_LM)
    lm = part_erm_lm(c.pop("levels"), c.pop("widths"), c.pop("ns"), c, deep["samples_needed"], np.random.default_rng(4))
    lm["seconds"] = time.time() - t0
    lm["verdict"] = lm_verdict(deep, lm)
    print("verdict:", lm["verdict"], flush=True)
    return deep, lm


def lm_verdict(deep: dict, lm: dict, hop: dict | None = None) -> str:
    """One honest sentence from the measured counts (no hard-coded outcome)."""
    ntk = {int(k): v for k, v in deep["samples_needed"].items()}
    probe = {int(k): v for k, v in lm["probe_samples_needed"].items()}
    rows = lm["rows"] + (hop["rows"] if hop else [])
    reached = sorted({r["L"] for r in rows if r["erm_reached"]})
    fmt = lambda d: ", ".join(f"L={k}: {'>grid' if v is None else v}" for k, v in sorted(d.items()))  # noqa: E731
    g = deep["growth_per_level"]
    ntk_txt = f"NTK samples {fmt(ntk)} (growth per level {', '.join(f'{x:g}' for x in g) or 'n/a'}; claim 4)"
    erm_txt = (f"multi-start LM{' and basin hopping' if hop else ''} reached zero training loss (exact ERM) "
               f"only at L in {reached or 'none'}")
    if hop:
        hn = {int(k): v for k, v in hop["samples_needed"].items()}
        erm_txt += f"; basin-hopping ERM samples needed {fmt(hn)} (NTK at the same L: {fmt(ntk)})"
    probe_txt = f"every empirical risk minimiser found by the probe has test MSE < 1% from n: {fmt(probe)}"
    both = [L for L in ntk if ntk[L] and probe.get(L)]
    if both and all(probe[L] < ntk[L] for L in both) and len(both) >= 2:
        ratio = [ntk[L] / probe[L] for L in both]
        stat = (f"statistical side reproduced on the probe: minimisers need {min(ratio):g}-{max(ratio):g}x fewer "
                "samples than the NTK")
    else:
        stat = "statistical side not reproduced on the probe"
    comp = ("computational side: generic multi-start ERM does not find the minimiser beyond L = "
            f"{max(reached)}" if reached else "computational side: generic multi-start ERM found no minimiser")
    return f"{ntk_txt}; {erm_txt}; {probe_txt}; {stat}; {comp}."


def plot_lm(out: Path, deep: dict, lm: dict, hop: dict | None = None) -> None:
    """Samples needed (test MSE < 1% of the variance) against L, log scale: NTK, the LM ERM
    arm per width (where reached), the minimiser probe, and the claim's 4^L and poly(L) lines."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no figure")
        return
    fig, ax = plt.subplots(figsize=(6, 4.5))
    pts = sorted((int(k), v) for k, v in deep["samples_needed"].items() if v)
    if pts:
        ax.semilogy(*zip(*pts, strict=True), "o-", color="C0", label="NTK ridge (measured)")
    tab = lm["claim_vs_measured"]
    c4 = [(r["L"], r["claim_ntk_4^L_scaled"]) for r in tab if r["claim_ntk_4^L_scaled"]]
    if c4:
        ax.semilogy(*zip(*c4, strict=True), ":", color="C0", label="claim: NTK ~ 4^L (scaled)")
    pp = [(int(k), v) for k, v in lm["probe_samples_needed"].items() if v]
    if pp:
        ax.semilogy(*zip(*sorted(pp), strict=True), "s-", color="C3", label="ERM minimisers near target (probe)")
    for key, st in (("claim_class_rate_scaled_low", "--"), ("claim_class_rate_scaled_high", "-.")):
        cl = [(r["L"], r[key]) for r in tab if r[key]]
        if cl:
            ax.semilogy(*zip(*cl, strict=True), st, color="C3", alpha=0.6,
                        label="claim: class rate " + ("L R^2" if "low" in key else "L^2 R^2") + " (scaled)")
    for i, w in enumerate(sorted({r["width"] for r in lm["rows"]})):
        e = [(r["L"], r["n"]) for r in lm["rows"] if r["width"] == w and r["test_rel_mse"] < THRESH]
        miss = [(L, max(r["n"] for r in lm["rows"] if r["L"] == L and r["width"] == w))
                for L in sorted({r["L"] for r in lm["rows"]}) if all(x[0] != L for x in e)]
        if e:
            ax.semilogy(*zip(*e, strict=True), "^", color=f"C{4 + i}", ms=9, label=f"multi-start LM ERM, width {w}")
        if miss:
            ax.semilogy(*zip(*miss, strict=True), "x", color=f"C{4 + i}", ms=7,
                        label=f"width {w}: not learned up to this n")
    if hop:
        e = [(r["L"], r["n"]) for r in hop["rows"] if r["test_rel_mse"] < THRESH]
        miss = [(L, max(r["n"] for r in hop["rows"] if r["L"] == L)) for L in sorted({r["L"] for r in hop["rows"]})
                if all(x[0] != L for x in e)]
        if e:
            ax.semilogy(*zip(*e, strict=True), "D", color="C2", ms=8, mfc="none",
                        label="LM + basin hopping ERM, width 2")
        if miss:
            ax.semilogy(*zip(*miss, strict=True), "+", color="C2", ms=10, label="basin hopping: not learned up to this n")
    ax.set_xlabel("depth L of the sawtooth")
    ax.set_ylabel("samples for test MSE < 1% of variance")
    ax.set_title("iterated sawtooth on the circle")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "ntk_vs_network_erm.png", dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    ap.add_argument("--part", choices=["all", "erm", "lm", "hop", *RECIPES], default="all",
                    help="erm / lm / hop / recipe / recipe16: run only that arm and replace its section in an existing JSON")
    a = ap.parse_args()
    if a.part == "hop":
        path = Path(a.out) / "ntk_vs_network.json"
        old = json.loads(path.read_text()) if path.exists() else {}
        need = old.get("sawtooth_ntk_deep", {}).get("samples_needed", {})
        old["sawtooth_erm_hop"] = run_hop_arm(a.quick, need)
        old["sawtooth_erm_hop"]["run"] = "alone (--part hop); the other sections are from earlier runs"
        if "sawtooth_erm_lm" in old:
            old["sawtooth_erm_lm"]["verdict"] = lm_verdict(old["sawtooth_ntk_deep"], old["sawtooth_erm_lm"],
                                                           old["sawtooth_erm_hop"])
            print("verdict:", old["sawtooth_erm_lm"]["verdict"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(to_jsonable(old), indent=2))
        if "sawtooth_erm_lm" in old:
            plot_lm(path.parent, old["sawtooth_ntk_deep"], old["sawtooth_erm_lm"], old["sawtooth_erm_hop"])
        print(f"wrote the sawtooth_erm_hop section of {path}")
        return
    if a.part == "lm":
        path = Path(a.out) / "ntk_vs_network.json"
        old = json.loads(path.read_text()) if path.exists() else {}
        t0 = time.time()
        old["sawtooth_ntk_deep"], old["sawtooth_erm_lm"] = run_lm_arms(a.quick)
        old["sawtooth_erm_lm"]["run"] = "alone (--part lm); the other sections are from the last full run"
        old["sawtooth_erm_lm"]["cpu_seconds"] = time.process_time()
        old["sawtooth_erm_lm"]["total_seconds"] = time.time() - t0
        old.setdefault("quick", a.quick)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(to_jsonable(old), indent=2))
        plot_lm(path.parent, old["sawtooth_ntk_deep"], old["sawtooth_erm_lm"])
        print(f"wrote the sawtooth_ntk_deep and sawtooth_erm_lm sections of {path}")
        return
    if a.part in RECIPES:
        key, full, quick = RECIPES[a.part]
        path = Path(a.out) / "ntk_vs_network.json"
        old = json.loads(path.read_text()) if path.exists() else {}
        cfg = dict(quick if a.quick else full)
        t0 = time.time()
        need = old.get("sawtooth", {}).get("samples_needed", {})
        old[key] = part_recipe(cfg.pop("levels"), cfg.pop("ns"), cfg, need, np.random.default_rng(2))
        old[key]["seconds"] = time.time() - t0
        old[key]["cpu_seconds"] = time.process_time()
        old[key]["run"] = f"alone (--part {a.part}); the other sections are from the last full run"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(to_jsonable(old), indent=2))
        print(f"wrote the {key} section of {path}")
        return
    if a.part == "erm":
        path = Path(a.out) / "ntk_vs_network.json"
        old = json.loads(path.read_text()) if path.exists() else {}
        cfg = dict(QUICK_ERM if a.quick else FULL_ERM)
        t0 = time.time()
        old["sawtooth_erm"] = part_erm(cfg.pop("levels"), cfg.pop("ns"), cfg, np.random.default_rng(1))
        old["sawtooth_erm"]["seconds"] = time.time() - t0
        old["sawtooth_erm"]["run"] = "alone (--part erm); the other sections are from the last full run"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(to_jsonable(old), indent=2))
        print(f"wrote the sawtooth_erm section of {path}")
        return
    t0, c0 = time.time(), time.process_time()
    cpu: dict[str, float] = {}

    def timed(name, fn, *args):
        c = time.process_time()
        out = fn(*args)
        cpu[name] = time.process_time() - c
        return out

    rng = np.random.default_rng(0)
    hop80 = None
    if a.quick:
        saw = timed("sawtooth", part_sawtooth, [1, 2, 3], [16, 64, 256], [16, 64], dict(QUICK_NET), rng)
        smooth = timed("bandlimited", part_smooth, [16, 64], 400, rng)
        cfg = dict(QUICK_ERM)
        erm = timed("sawtooth_erm", part_erm, cfg.pop("levels"), cfg.pop("ns"), cfg, np.random.default_rng(1))
        recipes = {}
        for key, _, quick in RECIPES.values():
            cfg = dict(quick)
            recipes[key] = timed(key, part_recipe, cfg.pop("levels"), cfg.pop("ns"), cfg, saw["samples_needed"],
                                 np.random.default_rng(2))
        par = timed("parity", part_parity, 12, 600, 400, rng)
        deep, lm = timed("sawtooth_ntk_deep+sawtooth_erm_lm", run_lm_arms, True)
        hop = timed("sawtooth_erm_hop", run_hop_arm, True, deep["samples_needed"])
        lm["verdict"] = lm_verdict(deep, lm, hop)
    else:
        saw = timed("sawtooth", part_sawtooth, [1, 2, 3, 4, 5], [2**p for p in range(4, 13)],
                    [2**p for p in range(4, 10)], dict(FULL_NET), rng)
        smooth = timed("bandlimited", part_smooth, [16, 32, 64, 128], 1200, rng)
        # The multi-start Adam arms (erm, recipe, recipe16) are superseded by the
        # Levenberg-Marquardt ERM arm below and together took ~8 CPU minutes: the full mode
        # keeps it under the 15 minutes by running them only on request
        # (--part erm / recipe / recipe16); their sections are carried over from the last run.
        last_path = Path(a.out) / "ntk_vs_network.json"
        last = json.loads(last_path.read_text()) if last_path.exists() else {}
        erm = last.get("sawtooth_erm", {"rows": [], "run": "not run (--part erm)"})
        recipes = {key: last.get(key, {"rows": [], "run": f"not run (--part {name})"})
                   for name, (key, _, _) in RECIPES.items()}
        for sec in (erm, *recipes.values()):
            if "run" not in sec or not str(sec["run"]).startswith("not run"):
                sec["run"] = "carried over from an earlier run (the full mode does not rerun this arm)"
        # the basin-hopping arm at the old 80-s budget per fit, kept beside the 30-s rerun
        hop80 = last.get("sawtooth_erm_hop_80s")
        if hop80 is None and last.get("sawtooth_erm_hop", {}).get("config", {}).get("time_limit") == 80.0:
            hop80 = last["sawtooth_erm_hop"]
        if hop80 is not None:
            hop80["run"] = (f"carried over from run {HOP_80S_RUN} (--part hop, time_limit 80 s per fit); "
                            "not rerun by the full mode, which uses 30 s per fit (sawtooth_erm_hop)")
        par = timed("parity", part_parity, 16, 2000, 10000, rng)
        deep, lm = timed("sawtooth_ntk_deep+sawtooth_erm_lm", run_lm_arms, False)
        hop = timed("sawtooth_erm_hop", run_hop_arm, False, deep["samples_needed"])
        lm["verdict"] = lm_verdict(deep, lm, hop)
    result = {
        "claim": {"sawtooth": "NTK needs Omega(4^L) samples, depth-L networks polynomially many",
                  "bandlimited": "NTK competitive or better",
                  "parity": "two-layer network beats the NTK by 4-6 orders of magnitude in test error"},
        "sawtooth": saw, "sawtooth_erm": erm, **recipes, "bandlimited": smooth, "parity": par,
        "sawtooth_ntk_deep": deep, "sawtooth_erm_lm": lm, "sawtooth_erm_hop": hop,
        **({"sawtooth_erm_hop_80s": hop80} if hop80 is not None else {}),
        "observed": {
            "ntk_growth_per_level": saw["ntk_growth_per_level"],
            "claim_growth_per_level": 4.0,
            "samples_needed": saw["samples_needed"],
            "ntk_competitive_on_bandlimited": len(smooth["ntk_better_or_equal_at"]) > 0,
            "parity_orders_of_magnitude": par["orders_of_magnitude"],
            "claim_parity_orders": [4, 6],
        },
        "status": "sampled (one training run per setting)",
        "quick": a.quick,
        "seconds": time.time() - t0,
        "cpu_seconds": time.process_time() - c0,
        "cpu_seconds_by_section": cpu,
        "threads": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")},
        "time_target": "full mode <= ~10 CPU minutes (issue: under 15 minutes), quick mode under a minute",
    }
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "ntk_vs_network.json").write_text(json.dumps(to_jsonable(result), indent=2))
    plot_lm(out, deep, lm, hop)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(1, 3, figsize=(14, 4))
        for L in sorted({r["L"] for r in saw["rows"]}):
            r = [x for x in saw["rows"] if x["L"] == L]
            for key, style, lab in (("ntk_rel_mse", "o-", "NTK"), ("net_rel_mse", "s--", "net"),
                                    ("oracle_init_rel_mse", "x:", "oracle init")):
                pts = [(x["n"], x[key]) for x in r if x[key] is not None]
                if pts:
                    ax[0].loglog(*zip(*pts, strict=True), style, color=f"C{L}", label=f"{lab} L={L}")
        for L in sorted({r["L"] for r in erm["rows"]}):  # the ERM arm: best of the restarts, fold start
            pts = [(x["n"], x["fold_rel_mse"]) for x in erm["rows"] if x["L"] == L]
            ax[0].loglog(*zip(*pts, strict=True), "^", color=f"C{L}", mfc="none", label=f"ERM arm L={L}")
        for key, marker in (("sawtooth_recipe", "v"), ("sawtooth_recipe_w16", "D")):  # the recipe arms
            rec = recipes[key]
            for L in sorted({r["L"] for r in rec["rows"]}):
                pts = [(x["n"], x["test_rel_mse"]) for x in rec["rows"] if x["L"] == L]
                ax[0].loglog(*zip(*pts, strict=True), marker, color=f"C{L}", mfc="none", ms=4,
                             label=f"recipe width {rec['config']['width']} L={L}")
        ax[0].axhline(THRESH, color="k", ls=":")
        ax[0].set_title("iterated sawtooth on the circle")
        ax[0].set_xlabel("training points")
        ax[0].set_ylabel("test MSE / variance")
        ax[0].legend(fontsize=6)
        r = smooth["rows"]
        ax[1].loglog([x["n"] for x in r], [x["ntk_rel_mse"] for x in r], "o-", label="NTK")
        ax[1].loglog([x["n"] for x in r], [x["net_rel_mse"] for x in r], "s--", label="network")
        ax[1].set_title("bandlimited (frequencies <= 3)")
        ax[1].set_xlabel("training points")
        ax[1].legend(fontsize=8)
        ax[2].bar(["NTK", "2-layer net"], [par["ntk_test_mse"], par["net_test_mse"]])
        ax[2].set_yscale("log")
        ax[2].set_title(f"sparse parity d={par['d']}, k=3, n={par['n']}")
        fig.tight_layout()
        fig.savefig(out / "ntk_vs_network.png", dpi=120)
    except ImportError:
        print("matplotlib missing: no figure")
    print("observed:", json.dumps(to_jsonable(result["observed"])))
    print(f"wrote {out / 'ntk_vs_network.json'} ({result['seconds']:.1f} s)")


if __name__ == "__main__":
    main()
