"""Exact constructions against the published numbers they reproduce or improve on.

Prints one table per claim: ours, the anchor (a published number or the tool users
would pick), and the ratio.  Everything "ours" is measured here, exactly.

* Turing machines in float64: how long an input stays exact (anchor: the PyTorch
  Siegelmann-Sontag package, about 8 characters for balanced parentheses).
* max_n hidden layers: the binary tree, and the two-hidden-layer max_5 and max_6 found
  by our search (anchor: two hidden layers, Bakaev et al. for 5, the n <= 12 result for 6;
  log2-tree depth 3).
* Lattice CPWL networks: our neuron count against Chen-Garudadri-Rao Thm 2.
* Yarotsky: the exact error of f_m against the theory 2^(-2m-2).
* Hardness gadget: ReLUs per clause (anchor: four).

Run:  python benchmarks/construct.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from relulab import construct as C


def turing_rows() -> list[dict]:
    rng = np.random.default_rng(0)
    rows = []
    for name, mk in C.MACHINES.items():
        tm = mk()
        alpha = {"binary-increment": "01", "balanced-parentheses": "()",
                 "unary-addition": "1+", "busy-beaver-2": "01"}[name]

        def gen(n: int, k: int, alpha: str = alpha, name: str = name) -> list[str]:
            out = ["(" * (n // 2) + ")" * (n - n // 2)] if name == "balanced-parentheses" else []
            return out + ["".join(rng.choice(list(alpha), n)) for _ in range(k - len(out))]

        t = time.perf_counter()
        rep = C.float_exact_length(tm, gen, max_length=40, runs_per_length=4)
        rows.append({"machine": name, "bits_per_symbol": rep.bits_per_symbol,
                     "float_exact_up_to": rep.max_exact_length,
                     "first_failure": rep.first_failure_length,
                     "anchor": 8 if name == "balanced-parentheses" else None,
                     "seconds": round(time.perf_counter() - t, 2)})
    return rows


def rows_maxn(quick: bool = False) -> list[dict]:
    """max_n: hidden layers and neurons of our structured two-hidden-layer networks (n <= 6,
    certified) and of the recursive substitution, against the published depth
    ceil(log_6(n/2)) + 1 (two hidden layers for n <= 12; the abstract gives no neuron counts)
    and the binary tree ceil(log2 n)."""
    rows = []
    for n in (2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 24, 32, 64, 72, 256):
        two = n in C.MAXN_STORED
        t = time.perf_counter()
        if n in C.MAXN_LARGE and not two:
            sol = C.stored_max_pairs(n)
            cert = "not run (--quick)" if quick else C.certify_max_pairs(n, sol).status
            layers, widths = 2, list(sol.widths)
        elif two:
            net = C.max_n_two_hidden(n)
            cert = C.certify_max_cones(net, n).status
            layers, widths = net.n_hidden_layers, list(net.widths)
        else:
            layers = C.deep_layers(n)
            built = n <= (13 if quick else 16)
            widths = list(C.max_n_deep(n).widths) if built else None
            cert = "built, sampled in tests" if built else "layer count only"
        rows.append({"n": n, "ours_hidden": layers, "ours_widths": widths, "status": cert,
                     "published_hidden": C.log6_layers(n), "tree_hidden": math.ceil(math.log2(n)),
                     "seconds": round(time.perf_counter() - t, 2)})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    ap.add_argument("--quick", action="store_true", help="build fewer deep networks")
    args = ap.parse_args()
    out: dict = {}

    print("Turing machines in float64 (longest input length run exactly, every step)")
    print(f"{'machine':24s} {'bits':>4s} {'ours':>5s} {'anchor':>6s} {'ratio':>6s}")
    out["turing"] = turing_rows()
    for r in out["turing"]:
        a = r["anchor"]
        ratio = f"{r['float_exact_up_to'] / a:.2f}" if a else "-"
        print(f"{r['machine']:24s} {r['bits_per_symbol']:4d} {r['float_exact_up_to']:5d} "
              f"{a if a else '-':>6} {ratio:>6s}")
    print("  (exact mode: integer arithmetic, any length; tests run inputs of length 60)")

    print("\nmax of n numbers: hidden layers")
    print(f"{'n':>3s} {'tree (ours)':>11s} {'2-layer (ours)':>14s} {'anchor':>7s} {'neurons 2-layer':>16s}")
    out["max"] = []
    for n in (2, 3, 4, 5, 6, 8, 16):
        tree = C.max_n(n)
        two = None
        if n in (5, 6):
            net = C.max5_two_hidden() if n == 5 else C.max6_two_hidden()
            cert = C.certify_max(net, n)
            two = (net.n_hidden_layers, net.n_neurons, cert.ok)
        anchor = 2 if n in (5, 6) else math.ceil(math.log2(n))
        out["max"].append({"n": n, "tree_hidden": tree.n_hidden_layers, "tree_neurons": tree.n_neurons,
                           "two_hidden": two, "anchor_hidden": anchor})
        two_s = f"{two[0]} (cert {'ok' if two[2] else 'FAILED'})" if two else "-"
        print(f"{n:3d} {tree.n_hidden_layers:11d} {two_s:>14s} {anchor:7d} "
              f"{two[1] if two else '-':>16}")

    print("\nlattice CPWL (q groups, each the min of all k components): neurons")
    print(f"{'k':>3s} {'q':>3s} {'ours':>6s} {'Chen Thm2':>9s} {'ratio':>6s} {'layers':>6s} {'bound':>5s}")
    out["lattice"] = []
    for k, q in [(2, 2), (3, 3), (4, 4), (5, 7), (8, 8), (16, 16)]:
        A = [[i] for i in range(k)]
        net = C.max_of_mins(A, list(range(k)), [list(range(k))] * q)
        s = C.lattice_size(net, k, q)
        out["lattice"].append(s.to_dict())
        print(f"{k:3d} {q:3d} {s.neurons:6d} {s.bound_neurons:9d} {s.neurons / s.bound_neurons:6.2f} "
              f"{s.hidden_layers:6d} {s.bound_hidden_layers:5d}")

    print("\nYarotsky x^2 on [0,1]: exact worst-case error")
    print(f"{'m':>3s} {'ours (exact)':>14s} {'theory':>14s} {'ratio':>6s}")
    out["yarotsky"] = []
    for m in range(1, 9):
        r = C.square_error(m)
        th = 2.0 ** (-2 * m - 2)
        out["yarotsky"].append({"m": m, "error": str(r.max_abs_error), "theory": th})
        print(f"{m:3d} {str(r.max_abs_error):>14s} {'2^-' + str(2 * m + 2):>14s} "
              f"{float(r.max_abs_error) / th:6.2f}")
    for m in (1, 2, 3):
        r = C.product_error(m)
        print(f"  product m={m}: exact max |p - xy| = {r.max_abs_error} (bound 2*2^-{2 * m + 2})")

    clauses = C.random_3cnf(10, 40, 0)
    net = C.sat_gadget(clauses, 10)
    print(f"\nhardness gadget: {net.n_neurons // 40} ReLUs per clause (anchor 4), fan-in "
          f"{max(sum(1 for v in row if v != 0) for row in net.weights[0])} (anchor <= 3)")
    out["gadget_relus_per_clause"] = net.n_neurons // 40

    print("\nmax_n, first layer relu(x_i - x_j) (construct.maxn): hidden layers, ours vs published")
    print(f"{'n':>4s} {'ours':>5s} {'published':>9s} {'ratio':>6s} {'tree':>5s} {'widths':>28s}  status")
    out["maxn"] = rows_maxn(args.quick)
    for r in out["maxn"]:
        w = "-" if r["ours_widths"] is None else ",".join(map(str, r["ours_widths"]))
        print(f"{r['n']:4d} {r['ours_hidden']:5d} {r['published_hidden']:9d} "
              f"{r['ours_hidden'] / r['published_hidden']:6.2f} {r['tree_hidden']:5d} {w:>28s}  {r['status']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2, default=str)


if __name__ == "__main__":
    main()
