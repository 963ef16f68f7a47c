"""A symbolic calculus for ReLU networks: Lukasiewicz formulas out of networks and back.

Claims checked (issue 21; abstracts on MV logic, bottleneck fibres and identifiability):

1. Every ReLU network on [0, 1]^n is a substitution graph of MV formulas (MV for integer
   weights, divisible MV for rational, Riesz MV for real) and comes back as a network
   computing exactly the same function: round trips on random small networks, decided
   exactly (identical normal forms, or the same exact affine map on every linear region).
2. Extraction of networks with 3 inputs and two hidden layers of width 8 takes < 1 s.
3. Equivalent networks are inter-derivable by node rewrites, layer collapses and layer
   expansions: derivation lengths for permuted + rescaled + padded copies (normal forms)
   and for deepened copies (flattening).
4. For three-layer bottleneck networks the fibre description gives a polynomial-time
   equivalence test: time against relulab.symmetry.equivalent (normal forms + MILP
   verifier) on growing widths, on pairs that differ by a hidden (bias-trade) symmetry.
5. For widths >= 2 an open set of parameters is identifiable: the fraction of sampled
   parameters that are locally identifiable (weighted polyhedral complex + rank).

Usage: python experiments/mv_calculus.py [--quick]
Writes experiments/results/mv_calculus.{json,png}.
"""

from __future__ import annotations

import argparse
import json
import time
from fractions import Fraction as F
from pathlib import Path

import numpy as np

from relulab import Box, Network
from relulab.logic import derive, equal_on_cube, to_formula, to_network
from relulab.logic.fibres import fibre_equivalent
from relulab.logic.identifiability import identifiability
from relulab.results import to_jsonable
from relulab.symmetry import equivalent, random_symmetry

OUT = Path(__file__).resolve().parent / "results"


def random_net(rng, kind: str, d: int, widths: list[int]) -> Network:
    dims = [d, *widths, 1]
    Ws, bs = [], []
    for a, b in zip(dims[:-1], dims[1:], strict=True):
        if kind == "int":
            Ws.append(rng.integers(-2, 3, (b, a)))
            bs.append(rng.integers(-1, 2, b))
        elif kind == "rat":
            Ws.append(np.array([[F(int(rng.integers(-6, 7)), int(rng.integers(1, 5))) for _ in range(a)]
                                for _ in range(b)], dtype=object))
            bs.append(np.array([F(int(rng.integers(-3, 4)), int(rng.integers(1, 5))) for _ in range(b)],
                               dtype=object))
        else:
            Ws.append(rng.normal(size=(b, a)))
            bs.append(rng.normal(size=b) * 0.5)
    return Network(Ws, bs, exact=kind != "real")


def round_trips(n_per_kind: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    out = {}
    for kind in ("int", "rat", "real"):
        stats = {"n": 0, "equal": 0, "methods": {}, "algebras": {}, "extract_s": [], "neurons_in": [],
                 "neurons_out": []}
        for _ in range(n_per_kind):
            d = int(rng.integers(1, 4))
            widths = [int(rng.integers(1, 5)) for _ in range(int(rng.integers(1, 3)))]
            net = random_net(rng, kind, d, widths)
            t0 = time.perf_counter()
            g = to_formula(net)
            stats["extract_s"].append(time.perf_counter() - t0)
            back = to_network(g)
            r = equal_on_cube(net.exact(), back)
            stats["n"] += 1
            stats["equal"] += r.status == "equal" and r.exact
            stats["methods"][r.method] = stats["methods"].get(r.method, 0) + 1
            stats["algebras"][g.algebra] = stats["algebras"].get(g.algebra, 0) + 1
            stats["neurons_in"].append(net.n_neurons)
            stats["neurons_out"].append(back.n_neurons)
        stats["max_extract_s"] = max(stats["extract_s"])
        out[kind] = stats
    return out


def extraction_times(n: int, seed: int = 1) -> list[float]:
    rng = np.random.default_rng(seed)
    ts = []
    for kind in ("int", "rat", "real"):
        for _ in range(n):
            net = random_net(rng, kind, 3, [8, 8])
            t0 = time.perf_counter()
            to_formula(net)
            ts.append(time.perf_counter() - t0)
    return ts


def padded_copy(net: Network, seed: int) -> Network:
    g = random_symmetry(net, seed)
    Ws = [np.array(W) for W in g.weights]
    bs = [np.array(b) for b in g.biases]
    d = net.input_dim
    Ws[0] = np.vstack([Ws[0], Ws[0][:1], np.array([[F(-1)] * d], dtype=object)])
    bs[0] = np.concatenate([bs[0], bs[0][:1], [F(-1)]])
    half = Ws[1][:, 0] / 2
    extra = np.full((Ws[1].shape[0], 2), F(0), dtype=object)
    extra[:, 0] = half
    extra[:, 1] = F(3)
    W1 = np.hstack([Ws[1], extra])
    W1[:, 0] = half
    Ws[1] = W1
    return Network(Ws, bs, exact=True)


def derivations(n: int, seed: int = 2) -> dict:
    rng = np.random.default_rng(seed)
    res = {"symmetric": [], "deepened": [], "status": {}}
    for t in range(n):
        net = random_net(rng, "int", 2, [3, 3]).exact()
        for name, other in (("symmetric", padded_copy(net, t)), ("deepened", net.deepen(3))):
            r = derive(net, other, timeout=60)
            res["status"][f"{name}:{r.status}"] = res["status"].get(f"{name}:{r.status}", 0) + 1
            if r.status == "found":
                res[name].append({"length": r.length, "counts": r.counts, "strategy": r.strategy,
                                  "verified": r.verified, "time": r.time})
    return res


def traded_pair(rng, n1: int) -> tuple[Network, Network]:
    """A bottleneck d=2 -> n1 -> n1/2 + 1 -> 1 network with one always-active second-layer
    neuron, and the copy whose bias moved into the output bias (same function, different
    parameters not related by scaling or permutation), randomly rescaled and permuted."""
    n2 = max(1, n1 // 2)
    W1 = np.array([[F(int(v), 4) for v in row] for row in rng.integers(-8, 9, (n1, 2))], dtype=object)
    c = rng.integers(2, 7, (n1, 2))
    b1 = np.array([-sum(W1[i, k] * F(int(c[i, k]), 8) for k in range(2)) for i in range(n1)], dtype=object)
    W2 = np.array([[F(int(v), 4) for v in row] for row in rng.integers(-8, 9, (n2 + 1, n1))], dtype=object)
    W2[-1] = np.abs(W2[-1])  # the stable neuron: nonnegative weights and a positive bias
    b2 = np.array([F(int(v), 8) for v in rng.integers(-4, 5, n2)] + [F(2)], dtype=object)
    W3 = np.array([[F(int(v), 2) for v in rng.integers(-4, 5, n2 + 1)]], dtype=object)
    W3[0, -1] = F(1)
    b3 = np.array([F(0)], dtype=object)
    f = Network([W1, W2, W3], [b1, b2, b3], exact=True)
    b2g = b2.copy()
    b2g[-1] = F(3)
    g = Network([W1, W2, W3], [b1, b2g, b3 - 1], exact=True)
    return f, random_symmetry(g, int(rng.integers(1 << 30)))


def fibre_vs_verifier(widths: list[int], verifier_timeout: float, seed: int = 3) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for w in widths:
        f, g = traded_pair(rng, w)
        t0 = time.perf_counter()
        a = fibre_equivalent(f, g)
        ta = time.perf_counter() - t0
        t0 = time.perf_counter()
        b = equivalent(f, g, Box([0, 0], [1, 1]), timeout=verifier_timeout)
        tb = time.perf_counter() - t0
        rows.append({"n1": w, "n2": f.widths[1], "fibre": a.status, "fibre_s": ta, "verifier": b.status,
                     "verifier_method": b.method, "verifier_s": tb, "ratio": tb / max(ta, 1e-9)})
        print(f"  n1={w:3d}: fibre {a.status:8s} {ta * 1e3:8.2f} ms | symmetry.equivalent {b.status:8s} "
              f"({b.method}) {tb:8.2f} s | ratio {tb / max(ta, 1e-9):10.0f}", flush=True)
    return rows


def identifiable_fraction(n: int, seed: int = 4) -> dict:
    rng = np.random.default_rng(seed)
    out = {}
    for arch in ((2, 2, 1), (2, 3, 2, 1), (3, 4, 3, 1)):
        ok = 0
        for _ in range(n):
            dims = list(arch)
            Ws, bs = [], []
            H = rng.uniform(0, 1, (300, dims[0]))
            for k in range(len(dims) - 1):
                W = rng.normal(size=(dims[k + 1], dims[k]))
                b = -(H @ W.T).mean(0) if k < len(dims) - 2 else np.zeros(dims[k + 1])
                Ws.append(W)
                bs.append(b)
                H = np.maximum(H @ W.T + b, 0)
            r = identifiability(Network(Ws, bs))
            ok += r.status == "locally identifiable"
        out["-".join(map(str, arch))] = {"sampled": n, "locally_identifiable": ok}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    q = args.quick
    OUT.mkdir(parents=True, exist_ok=True)
    t_all = time.perf_counter()
    print("1. round trips (exact)")
    rt = round_trips(20 if q else 170)
    for k, s in rt.items():
        print(f"  {k}: {s['equal']}/{s['n']} exactly equal; methods {s['methods']}; algebras {s['algebras']}")
    print("2. extraction time, 3 inputs, hidden 8-8")
    et = extraction_times(3 if q else 10)
    print(f"  max {max(et):.3f} s, median {float(np.median(et)):.3f} s")
    print("3. derivations")
    dv = derivations(3 if q else 12)
    for name in ("symmetric", "deepened"):
        L = [r["length"] for r in dv[name]]
        print(f"  {name}: {len(L)} found, lengths {L}")
    print(f"  status {dv['status']}")
    print("4. bottleneck fibre test vs relulab.symmetry.equivalent (pairs differing by a bias trade)")
    widths = [2, 4, 8] if q else [2, 4, 8, 16, 32, 64]
    fv = fibre_vs_verifier(widths, 10.0 if q else 60.0)
    print("5. identifiable parameters (widths >= 2)")
    idf = identifiable_fraction(5 if q else 30)
    for k, v in idf.items():
        print(f"  {k}: {v['locally_identifiable']}/{v['sampled']} locally identifiable")
    n_rt = sum(s["n"] for s in rt.values())
    n_eq = sum(s["equal"] for s in rt.values())
    verdicts = {
        "round_trip": f"{n_eq}/{n_rt} exactly equal" + (" (held)" if n_eq == n_rt else " (did NOT hold)"),
        "extraction_under_1s": bool(max(et) < 1.0),
        "derivations_found": dv["status"],
        "fibre_test_faster": all(r["fibre_s"] < r["verifier_s"] for r in fv),
        "fibre_agrees_when_verifier_decides": all(r["verifier"] in ("unknown", r["fibre"]) for r in fv),
        "identifiable_open_set_seen": all(v["locally_identifiable"] > 0 for v in idf.values()),
    }
    print("verdicts:", verdicts)
    data = {"quick": q, "round_trips": {k: {kk: vv for kk, vv in s.items() if kk != "extract_s"}
                                        for k, s in rt.items()},
            "extraction_s_3x8x8": et, "derivations": dv, "fibre_vs_verifier": fv,
            "identifiability": idf, "verdicts": verdicts, "seconds": time.perf_counter() - t_all}
    (OUT / "mv_calculus.json").write_text(json.dumps(to_jsonable(data), indent=1))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    ax[0].semilogy([r["n1"] for r in fv], [r["fibre_s"] for r in fv], "o-", label="fibre normal form")
    ax[0].semilogy([r["n1"] for r in fv], [r["verifier_s"] for r in fv], "s-", label="symmetry.equivalent")
    ax[0].set_xlabel("first hidden width n1 (n2 = n1/2 + 1)")
    ax[0].set_ylabel("seconds")
    ax[0].set_title("equivalence of bias-traded bottleneck pairs")
    ax[0].legend()
    for name, mk in (("symmetric", "o"), ("deepened", "s")):
        L = [r["length"] for r in dv[name]]
        ax[1].plot(range(len(L)), L, mk, label=name)
    ax[1].set_xlabel("pair")
    ax[1].set_ylabel("derivation length (local steps)")
    ax[1].set_title("derivations between equivalent networks")
    ax[1].legend()
    fig.tight_layout()
    fig.savefig(OUT / "mv_calculus.png", dpi=120)
    print(f"wrote {OUT / 'mv_calculus.json'} and .png")


if __name__ == "__main__":
    main()
