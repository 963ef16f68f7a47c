"""Exact explanations of a small ReLU control policy, read off its linear regions.

Claim checked (the seed abstract on causal explanations of learned control policies
from the geometry of ReLU networks, and relulab's issue 20): "why" and "why not"
explanations and decision rules extracted from the linear regions are the network's
own behaviour, so they are exact (100% fidelity) and certified, whereas a decision
tree distilled from samples is only approximately faithful; the rules are also fewer
than the leaves of affinitree's exact distilled tree.

Setup: CartPole (gymnasium CartPole-v1's dynamics). A known controller: LQR on the
dynamics linearised at the upright state, made bang-bang (push right when the LQR force
is positive).  A ReLU policy 4-H-H-2 (PyTorch, Adam) imitates it on states drawn from
the box below.  Then:

1. a rollout of the policy in gymnasium; at states along it, ``why`` (the certified,
   minimal interval rule) and ``why_not`` (the nearest state, l1 and l2, with the other
   action; once more with the cart's state immutable);
2. the decision rules of the 2-D slice (pole angle, pole angular velocity) at cart
   position = velocity = 0, drawn with ``relulab.plot.decision_rules2d``;
3. on that slice: relulab's rules vs affinitree's tree (leaves, raw and reduced) vs a
   scikit-learn DecisionTree fitted on samples labelled by the network (unlimited, and
   limited to relulab's rule count): rules / leaves, fidelity to the network on 10^5
   held-out states, time.

Writes ``policy_explanations.json`` and ``policy_explanations.png`` to ``--out``.
Run:  python experiments/policy_explanations.py [--quick] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from relulab import Box, Network, explain  # noqa: E402

CLAIM = ("rules and counterfactuals read off a ReLU policy's regions are exact (100% fidelity, "
         "certified) and fewer than affinitree's leaves; a decision tree fitted on samples is not "
         "exact")
FEATURES = ("cart position", "cart velocity", "pole angle", "pole angular velocity")
ACTIONS = ("push left", "push right")
BOX = Box([-2.4, -3.0, -0.21, -3.0], [2.4, 3.0, 0.21, 3.0])
SLICE = Box([-0.21, -3.0], [0.21, 3.0])


def lqr_gain() -> np.ndarray:
    """LQR gain of CartPole-v1's dynamics linearised at the upright state."""
    from scipy.linalg import solve_continuous_are

    g, mc, mp, l = 9.8, 1.0, 0.1, 0.5   # gymnasium's constants (l: half the pole length)
    mt = mc + mp
    den = l * (4.0 / 3.0 - mp / mt)
    A = np.zeros((4, 4))
    A[0, 1] = A[2, 3] = 1.0
    A[3, 2] = g / den
    A[1, 2] = -mp * l * A[3, 2] / mt
    B = np.zeros((4, 1))
    B[3, 0] = -1.0 / (mt * den)
    B[1, 0] = 1.0 / mt - mp * l * B[3, 0] / mt
    P = solve_continuous_are(A, B, np.diag([1.0, 1.0, 10.0, 1.0]), np.eye(1))
    return (B.T @ P).ravel()          # u = -K s


def controller(S: np.ndarray, K: np.ndarray) -> np.ndarray:
    return (-(S @ K) > 0).astype(int)   # 1: push right


def train_policy(K: np.ndarray, h: int, n: int, steps: int, seed: int = 0) -> tuple[Network, float]:
    import torch

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    S = BOX.sample(n, rng)
    y = controller(S, K)
    model = torch.nn.Sequential(torch.nn.Linear(4, h), torch.nn.ReLU(), torch.nn.Linear(h, h),
                                torch.nn.ReLU(), torch.nn.Linear(h, 2))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    Xt = torch.tensor(S / BOX.hi, dtype=torch.float32)     # scaled inputs for training only
    yt = torch.tensor(y)
    for _ in range(steps):
        idx = torch.randint(0, n, (1024,))
        loss = torch.nn.functional.cross_entropy(model(Xt[idx]), yt[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    Ws = [m.weight.detach().double().numpy() for m in model if isinstance(m, torch.nn.Linear)]
    bs = [m.bias.detach().double().numpy() for m in model if isinstance(m, torch.nn.Linear)]
    Ws[0] = Ws[0] / BOX.hi[None, :]     # fold the input scaling into the first layer
    net = Network(Ws, bs)
    T = BOX.sample(100_000, rng)
    acc = float(np.mean(np.argmax(net(T), 1) == controller(T, K)))
    return net, acc


def rollout(net: Network, steps: int, seed: int = 1) -> tuple[np.ndarray, int]:
    import gymnasium as gym

    env = gym.make("CartPole-v1")
    s, _ = env.reset(seed=seed)
    S = [np.asarray(s, float)]
    for _t in range(steps):
        a = int(np.argmax(net(np.asarray(s, float)[None])[0]))
        s, _, term, trunc, _ = env.step(a)
        S.append(np.asarray(s, float))
        if term or trunc:
            break
    env.close()
    return np.array(S), len(S) - 1


def slice_net(net: Network) -> Network:
    """The policy on (pole angle, angular velocity) with the cart at rest at 0."""
    W1 = net.weights[0][:, [2, 3]]
    return Network([W1, *net.weights[1:]], list(net.biases))


def explain_states(net: Network, S: np.ndarray, limit: float) -> list[dict]:
    out = []
    for s in S:
        s = np.clip(s, BOX.lo, BOX.hi)
        w = explain.why(net, s, BOX, features=FEATURES, class_names=ACTIONS, time_limit=limit)
        cur = int(np.argmax(net(s[None])[0]))
        row = {"state": s, "action": ACTIONS[cur], "why": w.rule.text(4) if w.rule else None,
               "why_certified": bool(w.rule and w.rule.certified), "why_minimal": bool(w.rule and w.rule.minimal),
               "region_rule_constraints": int(w.region_rule.n_constraints), "why_time": w.time}
        for norm, mutable in (("l1", None), ("l2", None), ("l1", ["pole angle", "pole angular velocity"])):
            r = explain.why_not(net, s, 1 - cur, BOX, norm=norm, mutable=mutable, features=FEATURES,
                                class_names=ACTIONS, time_limit=limit)
            key = f"why_not_{norm}" + ("_pole_only" if mutable else "")
            row[key] = {"status": r.status, "distance": r.distance, "lower_bound": r.lower_bound,
                        "changed": [(c["feature"], c["delta"]) for c in r.changed], "time": r.time,
                        "text": r.text(4)}
        out.append(row)
        print(f"  state {np.round(s, 3).tolist()}: {row['why']}", flush=True)
        print(f"    why not: {row['why_not_l1']['text']}", flush=True)
    return out


def compare_on_slice(net2: Network, quick: bool) -> tuple[dict, object, dict]:
    from sklearn.tree import DecisionTreeClassifier

    res: dict = {}
    t0 = time.perf_counter()
    dr = explain.decision_rules(net2, SLICE, features=FEATURES[2:], class_names=ACTIONS)
    res["relulab"] = {"rules": dr.n_rules, "regions": dr.n_regions, "time": time.perf_counter() - t0}
    rng = np.random.default_rng(7)
    Xte = SLICE.sample(100_000, rng)
    yte = np.argmax(net2(Xte), 1)
    lab = np.array([ACTIONS[k] for k in yte], dtype=object)
    res["relulab"]["fidelity"] = float(np.mean(dr.predict(Xte) == lab))
    # affinitree on the same 2-input network
    try:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
        from explain import affinitree_rules, fidelity_affinitree  # benchmarks/explain.py

        at = affinitree_rules(net2, SLICE)
        n_fid = 10_000 if quick else 100_000
        res["affinitree"] = {"leaves": at["leaves"], "leaves_reduced": at["leaves_reduced"],
                             "time": at["time_reduce"],
                             "fidelity": fidelity_affinitree(at["tree"], net2, Xte[:n_fid]),
                             "fidelity_points": n_fid}
    except ImportError as e:
        res["affinitree"] = {"error": str(e)}
    # scikit-learn trees fitted on samples labelled by the network
    trees = {}
    for n_train in ((10_000,) if quick else (10_000, 100_000)):
        Xtr = SLICE.sample(n_train, rng)
        ytr = np.argmax(net2(Xtr), 1)
        for name, kw in (("unlimited", {}), ("same_leaves", {"max_leaf_nodes": max(dr.n_rules, 2)})):
            t1 = time.perf_counter()
            tree = DecisionTreeClassifier(random_state=0, **kw).fit(Xtr, ytr)
            dt = time.perf_counter() - t1
            pred = tree.predict(Xte)
            key = f"sklearn_{name}_{n_train}"
            res[key] = {"leaves": int(tree.get_n_leaves()), "time": dt, "train_points": n_train,
                        "fidelity": float(np.mean(pred == yte))}
            trees[key] = tree
    return res, dr, {"X": Xte, "y": yte, "trees": trees}


def figure(dr, traj: np.ndarray, held: dict, comp: dict, path: Path) -> None:
    from matplotlib.figure import Figure

    from relulab import plot

    fig = Figure(figsize=(12, 5), layout="constrained")
    ax1, ax2 = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    plot.decision_rules2d(dr, labels=FEATURES[2:], trajectory=traj[:, [2, 3]], ax=ax1,
                          title=f"relulab: {dr.n_rules} exact rules (slice at cart = 0, at rest)")
    key = next(k for k in comp if k.startswith("sklearn_unlimited"))
    tree = held["trees"][key]
    X, y = held["X"], held["y"]
    wrong = tree.predict(X) != y
    plot.decision_rules2d(dr, labels=FEATURES[2:], ax=ax2, points=X[wrong][:3000],
                          title=f"sklearn tree ({comp[key]['leaves']} leaves): "
                                f"{int(wrong.sum())} of {len(y)} held-out states wrong")
    fig.savefig(path, dpi=130)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    K = lqr_gain()
    h = 16 if args.quick else 32
    net, acc = train_policy(K, h, 20_000 if args.quick else 60_000, 1500 if args.quick else 4000)
    print(f"policy 4-{h}-{h}-2 imitating bang-bang LQR (K = {np.round(K, 3).tolist()}): "
          f"agreement {100 * acc:.2f}% on 10^5 states", flush=True)
    traj, length = rollout(net, 200 if args.quick else 500)
    print(f"rollout in gymnasium CartPole-v1: {length} steps", flush=True)
    pick = traj[np.linspace(0, len(traj) - 1, 3 if args.quick else 6).astype(int)]
    rows = explain_states(net, pick, limit=30.0 if args.quick else 60.0)
    comp, dr, held = compare_on_slice(slice_net(net), args.quick)
    for k, v in comp.items():
        print(f"  {k}: {v}", flush=True)
    figure(dr, traj, held, comp, out / "policy_explanations.png")
    sk = [v for k, v in comp.items() if k.startswith("sklearn")]
    aff = comp.get("affinitree", {})
    held_claim = {
        "relulab_fidelity_100pct": comp["relulab"]["fidelity"] == 1.0,
        "all_why_rules_certified_and_minimal": all(r["why_certified"] and r["why_minimal"] for r in rows),
        "all_counterfactuals_optimal": all(r[k]["status"] in ("optimal", "infeasible") for r in rows
                                           for k in r if k.startswith("why_not")),
        "fewer_rules_than_affinitree_leaves": bool(aff.get("leaves") and comp["relulab"]["rules"] < aff["leaves"]),
        "fewer_rules_than_affinitree_reduced": bool(aff.get("leaves_reduced")
                                                    and comp["relulab"]["rules"] < aff["leaves_reduced"]),
        "sklearn_trees_not_exact": all(v["fidelity"] < 1.0 for v in sk),
    }
    result = {"claim": CLAIM, "held": held_claim, "lqr_gain": K, "policy": f"4-{h}-{h}-2",
              "imitation_agreement": acc, "rollout_steps": length, "explanations": rows,
              "slice_comparison": comp, "seconds": time.perf_counter() - t0, "quick": args.quick}
    from relulab.results import to_jsonable

    (out / "policy_explanations.json").write_text(json.dumps(to_jsonable(result), indent=1))
    print("claim:", CLAIM)
    print("held:", held_claim)
    print(f"wrote {out / 'policy_explanations.json'} and .png ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
