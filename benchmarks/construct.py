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
* Turing machines as transformers (rows_turing2): every input up to length 10 checked
  step by step, and the longest input length run exactly in float64 / float32 beside
  the recurrent network's (anchor: about 8 for the PyTorch package).

Run:  python benchmarks/construct.py [--json out.json] [--quick]
* Refinement cascades (``rows_refine``): our fixed-width network of the k-th iterate
  (width, depth, neurons, exact check at every breakpoint) against the wide
  one-hidden-layer network of the same iterate (anchor for neurons: the published
  theorem gives fixed width and depth O(k) without constants).

Run:  python benchmarks/construct.py [--json out.json] [--only refine]
* max_n orbit columns (``rows_maxn_columns``): the subset-lattice DP against the n!
  explicit chains it replaced, per term (n = 8..10, compared exactly; 11, 12 DP only),
  and the orbit-factorised certificates of n = 9, 10.

Run:  python benchmarks/construct.py --only maxn-columns [--json benchmarks/results/construct_maxn_columns.json]
* max_n family decision (``rows_maxn_decide``): the n = 9 family decided on all rows by
  the numpy elimination against row generation with FLINT.

Run:  python benchmarks/construct.py --only maxn-decide [--json benchmarks/results/construct_maxn_decide.json]
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


# ------------------------------------------------------------------ turing2: the transformer
ALPHABETS = {"binary-increment": "01", "balanced-parentheses": "()", "unary-addition": "1+",
             "busy-beaver-2": "01"}


def _recurrent_float_exact_length(tm, gen, max_length: int, runs: int, dtype) -> int:
    """The recurrent step network with weights and states in ``dtype``: the longest input
    length whose every step equals the exact run (the weights, integers and powers of 1/2,
    are exact in both float types).  A run that overflows to inf/nan counts as a failure
    (``float_exact_length`` raises on those)."""
    from fractions import Fraction

    net = C.compile_turing_machine(tm)
    layers = [(np.asarray(W, dtype=dtype), np.asarray(b, dtype=dtype)) for W, b in net.layers]
    last = 0
    for n in range(1, max_length + 1):
        words = gen(n, runs)
        ex, _ = C.run_batch(tm, net, words, 5000, "exact", keep=True)
        X = np.asarray(ex[0], dtype=dtype)
        ok = True
        for E in ex:
            if not np.isfinite(X).all() or not all(
                    Fraction(float(f)) == e for f, e in zip(X.reshape(-1), E.reshape(-1), strict=True)):
                ok = False
                break
            with np.errstate(all="ignore"):
                for i, (W, b) in enumerate(layers):
                    X = X @ W.T + b
                    if i < len(layers) - 1:
                        X = np.maximum(X, dtype(0))
        if not ok:
            return last
        last = n
    return last


def _float32_horizon(tm, max_input: int) -> int:
    """The largest horizon for which the compiled transformer is exact in float32 by its
    value bound (binary search over the horizon)."""
    lo, hi = 1, 1 << 30
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if C.compile_transformer(tm, horizon=mid, max_input=max_input).exact_in("float32"):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _float32_failing_horizon(tm, gen) -> int | None:
    """The smallest compiled horizon 2^k (k = 16..24) at which float32 runs of short
    inputs (length <= 4) stop being exact: the scores scale with the horizon."""
    for k in range(16, 25):
        r = C.transformer_exact_length(tm, gen, max_length=4, runs_per_length=2, horizon=2**k,
                                       dtypes=("float32",))
        if r.first_failure_length["float32"] is not None:
            return 2**k
    return None


def rows_turing2(max_length: int = 40, runs: int = 4, exhaustive_length: int = 10) -> list[dict]:
    """The transformer simulator (Wei-Chen-Ma) beside the recurrent network: every input up
    to ``exhaustive_length`` checked step by step against the simulator (float32 and
    float64), and the longest input length at which float32 / float64 stay exact."""
    import itertools

    from relulab.construct.transformer import same_config

    rng = np.random.default_rng(0)
    rows = []
    for name, mk in C.MACHINES.items():
        tm = mk()
        alpha = ALPHABETS[name]

        def gen(n: int, k: int, alpha: str = alpha, name: str = name) -> list[str]:
            out = ["(" * (n // 2) + ")" * (n - n // 2)] if name == "balanced-parentheses" else []
            return out + ["".join(rng.choice(list(alpha), n)) for _ in range(k - len(out))]

        t = time.perf_counter()
        sim = C.compile_transformer(tm, horizon=400, max_input=exhaustive_length)
        checked, agree = 0, True
        for dtype in ("float64", "float32"):
            for n in range(exhaustive_length + 1):
                words = ["".join(w) for w in itertools.product(alpha, repeat=n)]
                for run, w in zip(C.run_transformer(sim, words, dtype=dtype), words, strict=True):
                    cfg = tm.initial(w)
                    for step in range(run.steps + 1):
                        agree &= same_config(tm, run.config(step), cfg)
                        cfg = tm.step(cfg)
                    agree &= run.halted and run.steps == tm.run(w).steps
                    checked += 1
        t_exh = time.perf_counter() - t
        t = time.perf_counter()
        tr = C.transformer_exact_length(tm, gen, max_length=max_length, runs_per_length=runs)
        t_tr = time.perf_counter() - t
        rec64 = _recurrent_float_exact_length(tm, gen, max_length, runs, np.float64)
        rec32 = _recurrent_float_exact_length(tm, gen, max_length, runs, np.float32)
        rows.append({
            "machine": name,
            "exhaustive_runs_checked": checked, "exhaustive_all_agree": bool(agree),
            "exhaustive_seconds": round(t_exh, 1),
            "transformer_float64": tr.max_exact_length["float64"],
            "transformer_float32": tr.max_exact_length["float32"],
            "transformer_first_failure": tr.first_failure_length,
            "transformer_float32_horizon": _float32_horizon(tm, max_length),
            "float32_fails_at_compiled_horizon": _float32_failing_horizon(tm, gen),
            "recurrent_float64": rec64,
            "recurrent_float32": rec32,
            "max_length_tried": max_length,
            "exhaustive_length": exhaustive_length,
            "transformer_seconds": round(t_tr, 1),
            "anchor": 8 if name == "balanced-parentheses" else None,
        })
    return rows


def print_turing2(rows: list[dict]) -> None:
    top = rows[0]["max_length_tried"]
    print("\nTuring machines as transformers (Wei-Chen-Ma) vs the recurrent network: longest "
          f"input length run exactly at every step (tried up to {top}; '>=' when no failure)")
    print(f"{'machine':22s} {'exh. runs':>10s} {'tf f64':>7s} {'rec f64':>7s} {'ratio':>6s} "
          f"{'tf f32':>7s} {'rec f32':>7s} {'ratio':>6s} {'anchor':>6s} {'f32 horizon':>11s}")

    def ge(v: int) -> str:
        return (">=" if v >= top else "") + str(v)

    for r in rows:
        tf64, tf32 = r["transformer_float64"], r["transformer_float32"]
        rec64, rec32 = r["recurrent_float64"], r["recurrent_float32"]
        r64 = ("~" if tf64 >= top and rec64 >= top else ">=" if tf64 >= top else "") + \
            format(tf64 / max(rec64, 1), ".1f")
        r32 = ("~" if tf32 >= top and rec32 >= top else ">=" if tf32 >= top else "") + \
            format(tf32 / max(rec32, 1), ".1f")
        exh = f"{r['exhaustive_runs_checked']} {'ok' if r['exhaustive_all_agree'] else 'BAD'}"
        print(f"{r['machine']:22s} {exh:>10s} {ge(tf64):>7s} {ge(rec64):>7s} {r64:>6s} "
              f"{ge(tf32):>7s} {ge(rec32):>7s} {r32:>6s} {r['anchor'] or '-':>6} "
              f"{r['transformer_float32_horizon']:>11d}")
    print(f"  exh. runs: every input up to length {rows[0].get('exhaustive_length', 10)}, float64 "
          "and float32, checked step by step against the simulator. tf: transformer (integer "
          "activations bounded by about 4 (T+1) w: exact in float32 for every run of up to "
          "'f32 horizon' steps); rec: the recurrent network (stacks in the mantissa, 2-3 bits "
          "per symbol); anchor: the PyTorch Siegelmann-Sontag package, float")
    print("  float32 breaks with the compiled horizon, not the input: compiled for 2^k steps, "
          "runs of inputs of length <= 4 first differ from int64 at k = "
          + ", ".join(f"{r['machine']}: {'-' if r['float32_fails_at_compiled_horizon'] is None else int(np.log2(r['float32_fails_at_compiled_horizon']))}"
                      for r in rows))
def rows_refine(max_steps: int = 10, check_up_to: int = 10, prove_up_to: int = 3) -> list[dict]:
    """Fixed-width refinement networks for k = 1..max_steps: sizes, the exact check
    against the scheme's iterate (every breakpoint and piece midpoint) up to check_up_to,
    and equality on all of R decided exactly (prove_equal_1d) up to prove_up_to."""
    rows = []
    for name in ("cubic-bspline", "four-point", "chaikin"):
        for k in range(1, max_steps + 1):
            t = time.perf_counter()
            if k <= check_up_to:
                chk = C.check_refinement_network(C.MASKS[name], k, n_random=0, prove=k <= prove_up_to)
                width, layers, neurons, ok = chk.width, chk.hidden_layers, chk.neurons, chk.ok
                proved = chk.proved
                pieces, npts = chk.pieces, chk.n_points
            else:
                net = C.refinement_network(C.MASKS[name], k)
                width, layers, neurons, ok = max(net.widths), net.n_hidden_layers, net.n_neurons, None
                proved = None
                pieces, npts = len(C.subdivision_iterate(C.MASKS[name], [0, 1, 2], [0, 1, 0], k)[0]) - 1, 0
            rows.append({"mask": name, "steps": k, "width": width, "hidden_layers": layers,
                         "neurons": neurons, "iterate_pieces": pieces,
                         "wide_neurons": pieces + 2, "exact_at_points": npts, "ok": ok,
                         "proved_on_R": proved,
                         "seconds": round(time.perf_counter() - t, 2)})
    return rows


def print_refine(rows: list[dict]) -> None:
    print("\nrefinement cascades, hat seed: fixed-width (ours) vs one hidden layer (wide)")
    print(f"{'mask':14s} {'k':>3s} {'width':>5s} {'layers':>6s} {'neurons':>7s} {'pieces':>6s} "
          f"{'wide':>6s} {'wide/ours':>9s} {'exact':>12s} {'proved':>6s}")
    for r in rows:
        chk = "-" if r["ok"] is None else (f"{r['exact_at_points']} pts" if r["ok"] else "MISMATCH")
        print(f"{r['mask']:14s} {r['steps']:3d} {r['width']:5d} {r['hidden_layers']:6d} "
              f"{r['neurons']:7d} {r['iterate_pieces']:6d} {r['wide_neurons']:6d} "
              f"{r['wide_neurons'] / r['neurons']:9.3f} {chk:>12s} "
              f"{'-' if r['proved_on_R'] is None else ('yes' if r['proved_on_R'] else 'NO'):>6s}")
    print("  (published: width fixed in k, depth O(k), no constants given; ours: 3k + 3 hidden layers)")


def rows_maxn(quick: bool = False) -> list[dict]:
    """max_n: hidden layers and neurons of our structured two-hidden-layer networks (n <= 10,
    certified; n = 9, 10 orbit-factorised) and of the recursive substitution, against the published depth
    ceil(log_6(n/2)) + 1 (two hidden layers for n <= 12; the abstract gives no neuron counts)
    and the binary tree ceil(log2 n)."""
    rows = []
    for n in (2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 16, 24, 32, 64, 72, 256):
        two = n in C.MAXN_STORED
        t = time.perf_counter()
        if n in C.MAXN_LARGE and not two:
            sol = C.stored_max_pairs(n)
            cert = "not run (--quick)" if quick else C.certify_max_pairs(n, sol).status
            layers, widths = 2, list(sol.widths)
        elif n in C.MAXN_ORBIT_SIZES:  # orbit-factorised (n = 9, 10): too large for weight matrices
            sol = C.stored_max_orbits(n)
            cert = "not run (--quick)" if quick else C.certify_max_orbits(n, sol).status
            layers, widths = 2, list(C.orbit_widths(n, sol))
        elif two:
            net = C.max_n_two_hidden(n)
            cert = C.certify_max_cones(net, n).status
            layers, widths = net.n_hidden_layers, list(net.widths)
        else:  # recursive substitution into every certified base (3..8): construct.max_deep
            dm = C.max_deep(n)
            layers, widths = dm.hidden_layers, list(dm.widths)
            cert = "not run (--quick)" if quick and max(dm.bases_used) > 6 else \
                f"{C.certify_max_deep(dm).status} (composition)"
        rows.append({"n": n, "ours_hidden": layers, "ours_widths": widths, "status": cert,
                     "ours_hidden_bases_3_6": C.deep_depth(n, [3, 4, 5, 6]),
                     "published_hidden": C.log6_layers(n), "tree_hidden": math.ceil(math.log2(n)),
                     "seconds": round(time.perf_counter() - t, 2)})
    return rows


def rows_maxn_columns(per_n: int = 40) -> list[dict]:
    """Orbit columns of the two-hidden-layer max_n system (the cost of every search and
    certificate for n >= 9): the subset-lattice DP (``chain_histogram``) against the n!
    explicit chains it replaced, on the terms of the stored solutions (n = 8: first
    ``per_n`` of stored_max_pairs(8); 9, 10: of stored_max_orbits), each column compared
    exactly; n = 11, 12 (random 5 + 5 segment terms) only by the DP: the explicit chains
    would need 11! x 10 int32 masks (1.6 GB) and 12! x 11 (21 GB)."""
    import random

    from relulab.construct.maxn_colgen import _full_column

    rows = []
    for n in (8, 9, 10, 11, 12):
        if n <= 10:
            sol = C.stored_max_pairs(n) if n == 8 else C.stored_max_orbits(n)
            terms = [t for t, _ in sol.terms][:per_n]
        else:
            rng = random.Random(n)
            edges = [("m", i, j) for i in range(n) for j in range(i + 1, n)]
            terms = []
            while len(terms) < (5 if n == 11 else 3):
                P, N = sorted(rng.sample(edges, 5)), sorted(rng.sample(edges, 5))
                if not set(P) & set(N) and len({c for e in P + N for c in e[1:]}) == n:
                    terms.append(C.PairTerm(n, tuple(P), tuple(N)))
        t = time.perf_counter()
        dp = [_full_column(t_, n, divisor=False) for t_ in terms]
        t_dp = (time.perf_counter() - t) / len(terms)
        row = {"n": n, "terms": len(terms), "dp_seconds_per_term": round(t_dp, 4),
               "hyperplanes_per_term": round(float(np.mean([len(c[0]) for c in dp])), 1)}
        if n <= 10:
            t = time.perf_counter()
            ex = [_full_column(t_, n, divisor=False, explicit=True) for t_ in terms]
            t_ex = (time.perf_counter() - t) / len(terms)
            same = all(all(np.array_equal(a, b) for a, b in zip(c1[:3], c2[:3], strict=True))
                       for c1, c2 in zip(dp, ex, strict=True))
            row.update(explicit_seconds_per_term=round(t_ex, 4), speedup=round(t_ex / t_dp, 1), equal=same)
        rows.append(row)
    for n in (9, 10):
        t = time.perf_counter()
        cert = C.certify_max_orbits(n, C.stored_max_orbits(n))
        rows.append({"n": n, "certificate": cert.status, "certificate_seconds": round(time.perf_counter() - t, 1),
                     "hyperplanes": cert.hyperplanes_checked})
    return rows


def rows_maxn_decide(ns: tuple[int, ...] = (9,)) -> list[dict]:
    """Exact decision of the family that contains max_n (``item_family(n, (2, 3)) +
    segment_orbits(4, n)``): :func:`relulab.construct.decide_system` on every row with
    the numpy elimination (the previous path) against row generation
    (:func:`relulab.construct.decide_rows`) with FLINT, same columns, both exact."""
    from relulab.construct import maxn_modular
    from relulab.construct.maxn_decide import columns_system, decide_system
    from relulab.construct.maxn_items import segment_orbits
    from relulab.construct.maxn_mixed import pair_column

    rows = []
    for n in ns:
        terms = [C.PairTerm(n, t.pos, t.neg) for t in C.item_family(n, (2, 3)) + segment_orbits(4, n)]
        t = time.perf_counter()
        cols = [pair_column(t_, n) for t_ in terms]
        t_cols = time.perf_counter() - t
        t = time.perf_counter()
        fast = C.decide_rows(n, cols, initial_rows=2000)
        t_fast = time.perf_counter() - t
        flint = maxn_modular._flint
        maxn_modular._flint = lambda: None  # the numpy elimination, as before FLINT
        try:
            t = time.perf_counter()
            A, b, _ = columns_system(n, cols)
            old = decide_system(n, A, b)
            t_old = time.perf_counter() - t
        finally:
            maxn_modular._flint = flint
        rows.append({"n": n, "columns": len(cols), "hyperplanes": fast.n_rows - n + 1,
                     "columns_seconds": round(t_cols, 1),
                     "all_rows_numpy": {"status": old.status, "rank": old.rank, "seconds": round(t_old, 1)},
                     "row_generation_flint": {"status": fast.status, "rank": fast.rank,
                                              "rows_used": fast.rows_used, "rounds": fast.rounds,
                                              "seconds": round(t_fast, 1)},
                     "speedup": round(t_old / t_fast, 1)})
    return rows


def print_maxn_decide(rows: list[dict]) -> None:
    print("\nmax_n family decision: all rows, numpy elimination vs row generation with FLINT")
    for r in rows:
        o, f = r["all_rows_numpy"], r["row_generation_flint"]
        print(f"  n = {r['n']}: {r['columns']} columns, {r['hyperplanes']} hyperplanes; numpy {o['status']} "
              f"rank {o['rank']} {o['seconds']} s; row generation {f['status']} rank {f['rank']} "
              f"({f['rows_used']} rows, {f['rounds']} rounds) {f['seconds']} s; speedup {r['speedup']}")


def print_maxn_columns(rows: list[dict]) -> None:
    print("\nmax_n orbit columns: subset-lattice DP vs the n! explicit chains (seconds per term)")
    print(f"{'n':>3s} {'terms':>5s} {'DP':>8s} {'explicit':>9s} {'speedup':>8s} {'equal':>6s} {'hyperplanes':>11s}")
    for r in rows:
        if "terms" in r:
            ex = f"{r['explicit_seconds_per_term']:9.3f}" if "speedup" in r else f"{'-':>9s}"
            sp = f"{r['speedup']:8.1f}" if "speedup" in r else f"{'-':>8s}"
            eq = str(r.get("equal", "-"))
            print(f"{r['n']:3d} {r['terms']:5d} {r['dp_seconds_per_term']:8.3f} {ex} {sp} {eq:>6s} "
                  f"{r['hyperplanes_per_term']:11.0f}")
        else:
            print(f"  certify_max_orbits({r['n']}): {r['certificate']}, {r['hyperplanes']} hyperplanes, "
                  f"{r['certificate_seconds']} s")


def print_maxn(rows: list[dict]) -> None:
    print("\nmax_n, first layer relu(x_i - x_j) (construct.maxn): hidden layers, ours vs published")
    print(f"{'n':>4s} {'ours':>5s} {'3..6':>5s} {'published':>9s} {'ratio':>6s} {'tree':>5s} {'widths':>28s}  status")
    for r in rows:
        w = "-" if r["ours_widths"] is None else ",".join(map(str, r["ours_widths"]))
        print(f"{r['n']:4d} {r['ours_hidden']:5d} {r['ours_hidden_bases_3_6']:5d} {r['published_hidden']:9d} "
              f"{r['ours_hidden'] / r['published_hidden']:6.2f} {r['tree_hidden']:5d} {w:>28s}  {r['status']}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    ap.add_argument("--quick", action="store_true",
                    help="shorter transformer rows, fewer deep max networks")
    ap.add_argument("--only", choices=["refine", "maxn", "maxn-columns", "maxn-decide"], default=None,
                    help="run one table only")
    args = ap.parse_args()
    out: dict = {}
    if args.only is not None:
        if args.only == "refine":
            out["refine"] = rows_refine()
            print_refine(out["refine"])
        elif args.only == "maxn-decide":
            out["maxn_decide"] = rows_maxn_decide()
            print_maxn_decide(out["maxn_decide"])
        elif args.only == "maxn-columns":
            out["maxn_columns"] = rows_maxn_columns()
            print_maxn_columns(out["maxn_columns"])
        else:
            out["maxn"] = rows_maxn(args.quick)
            print_maxn(out["maxn"])
        if args.json:
            with open(args.json, "w") as f:
                json.dump(out, f, indent=2, default=str)
        return

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
    out["activations"] = print_activations(rows_activations())
    out["turing2"] = rows_turing2(max_length=12 if args.quick else 40, runs=2 if args.quick else 4,
                                  exhaustive_length=6 if args.quick else 10)
    print_turing2(out["turing2"])
    out["refine"] = rows_refine()
    print_refine(out["refine"])

    out["maxn"] = rows_maxn(args.quick)
    print_maxn(out["maxn"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2, default=str)


def rows_activations() -> list[dict]:
    """Other activations (Zhang-Lu-Zhao 2024): our rho-network sizes against the paper's
    (3N, 2L) / (N, L) and the sup error (dense grid) as the scale t grows; integral
    representations: Monte Carlo error against the bound sqrt(V/N) and the exact 1-D grid."""
    from relulab import Box, Network
    from relulab.construct import integral as I
    from relulab.construct.activations import GADGET_CLASS, PAPER_FACTORS, approximate_relu_network

    rng = np.random.default_rng(0)
    dims = [2, 8, 8, 1]
    net = Network([rng.normal(size=(dims[i + 1], dims[i])) / np.sqrt(dims[i]) for i in range(3)],
                  [rng.normal(size=dims[i + 1]) * 0.5 for i in range(3)])
    box = Box([-1.0, -1.0], [1.0, 1.0])
    rows = []
    for name in GADGET_CLASS:
        t0 = time.perf_counter()
        reps = {t: approximate_relu_network(net, name, box, t, n_points=4000) for t in (10, 100, 1000)}
        r = reps[100]
        pw, pd = PAPER_FACTORS[GADGET_CLASS[name]]
        rows.append({"part": "activation", "activation": name, "gadget": r.gadget,
                     "max_width": max(r.widths), "paper_max_width": pw * max(net.widths),
                     "hidden_layers": len(r.widths), "paper_hidden_layers": pd * net.n_hidden_layers,
                     **{f"sup_error_t{t}": rep.sup_error for t, rep in reps.items()},
                     "a_priori_bound_t1000": reps[1000].a_priori_bound,
                     "seconds": round(time.perf_counter() - t0, 2)})
    for text, d in (("x^2 + xy", 2), ("x1^3 - 2x1*x2*x3 + x3^2", 3)):
        X = I.sample_distribution("ball", 4000, d, 1.0, seed=3)
        for form in ("plain", "sharpened"):
            rep = I.integral_representation(text, 1, form, dim=d)
            V = I.mc_variance(rep, X, n_wb=20000)
            N = 1024
            mse = float(np.mean([I.l2_error(I.quadrature_network(rep, N, "mc", s), rep.target, X) ** 2
                                 for s in range(20)]))
            rows.append({"part": "integral", "poly": text, "form": form, "width": N,
                         "rms_l2_error": mse ** 0.5, "bound": (V / N) ** 0.5})
    rep = I.integral_representation("x^3 - 2x^2 + x/2", 1, "sharpened")
    X = I.sample_distribution("ball", 4000, 1, 1.0, seed=3)
    for N in (16, 64, 256):
        qn = I.quadrature_network(rep, N, "grid")
        rows.append({"part": "integral-grid", "poly": "x^3 - 2x^2 + x/2", "width": N,
                     "exact": qn.is_exact, "l2_error": I.l2_error(qn, rep.target, X)})
    return rows


def print_activations(rows: list[dict]) -> list[dict]:
    print("\nReLU net 2-8-8-1 as a rho-network on [-1,1]^2: sizes (ours / paper) and sup error")
    print(f"{'activation':10s} {'gadget':9s} {'width':>9s} {'ratio':>5s} {'layers':>7s} "
          f"{'t=10':>9s} {'t=100':>9s} {'t=1000':>9s} {'bound t=1000':>12s}")
    for r in (r for r in rows if r["part"] == "activation"):
        print(f"{r['activation']:10s} {r['gadget']:9s} {r['max_width']:4d}/{r['paper_max_width']:<4d} "
              f"{r['max_width'] / r['paper_max_width']:5.2f} {r['hidden_layers']:3d}/{r['paper_hidden_layers']:<3d} "
              f"{r['sup_error_t10']:9.2e} {r['sup_error_t100']:9.2e} {r['sup_error_t1000']:9.2e} "
              f"{'-' if r['a_priori_bound_t1000'] is None else format(r['a_priori_bound_t1000'], '.2e'):>12s}")
    print("\nintegral representation, Monte Carlo N = 1024 (20 seeds): RMS L2 error vs bound sqrt(V/N)")
    for r in (r for r in rows if r["part"] == "integral"):
        print(f"  {r['poly']:26s} {r['form']:9s} rms {r['rms_l2_error']:.3e}  bound {r['bound']:.3e}  "
              f"ratio {r['rms_l2_error'] / r['bound']:.2f}")
    for r in (r for r in rows if r["part"] == "integral-grid"):
        print(f"  grid (exact={r['exact']}) {r['poly']} N={r['width']}: L2 error {r['l2_error']:.3e}")
    return rows


if __name__ == "__main__":
    main()
