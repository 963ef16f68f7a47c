"""Parameter extraction: queries and precision against the published attack's numbers.

Carlini, Jagielski and Mironov (CRYPTO 2020, "Cryptanalytic extraction of neural network
models") report, for the sizes below, the queries and the worst-case parameter error
after alignment; their code (JAX) is not run here, so the comparison is against the
numbers they publish (marked "published").  Rows:

* ReLU networks (random weights, N(0, 1/fan_in), biases 0.5 N(0, 1)): queries (log2),
  worst parameter error after aligning permutation and scaling (bits = -log2), and the
  exact equivalence verdict of relulab.symmetry on [-1, 1]^d;
* the defence: outputs rounded to k decimals (the attack told the resolution) - queries
  and precision as k shrinks;
* bias-free GLU blocks are measured by benchmarks/extract_glu.py (its own JSON).

    python benchmarks/extract.py [--quick] [--out benchmarks/results/extract.json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from relulab import Network
from relulab.extract import extract_relu
from relulab.results import to_jsonable

# (architecture, published log2 queries, published worst error bits): the two numbers of
# Carlini et al. 2020's abstract; None where no number is available here.
PUBLISHED = {
    "10-20-20-1": (None, None),
    "40-20-10-10-1": (None, None),
    # "a 100,000-parameter neural network trained on the MNIST digit recognition task
    # with 2^21.5 queries ... worst-case parameter error 2^-25"
    "784-128-1": (21.5, 25.0),
    # the abstract's 4,000-parameter model ("2^18.5 queries ... 2^-40.4"), identified by
    # its weight count as 80-40-20-1 (80*40 + 40*20 + 20*1 = 4,020 weights)
    "80-40-20-1": (18.5, 40.4),
}
# Their Table 1 also lists 10-20-20-1 and 40-20-10-10-1, but its numbers are not
# available here (only the abstract is): None, no number invented for them.


def random_net(arch: list[int], seed: int) -> Network:
    rng = np.random.default_rng(seed)
    Ws = [rng.normal(size=(b, a)) / np.sqrt(a) for a, b in zip(arch[:-1], arch[1:], strict=True)]
    bs = [0.5 * rng.normal(size=b) for b in arch[1:]]
    return Network(Ws, bs)


def digits_net(seed: int = 0) -> Network:
    """A 784-128-1 network trained on scikit-learn's digits (8x8 images upsampled to 28x28,
    MNIST's size; target: the digit as a number), ReLU, by scikit-learn's MLPRegressor."""
    from sklearn.datasets import load_digits
    from sklearn.neural_network import MLPRegressor

    X8, y = load_digits(return_X_y=True)
    X = np.kron(X8.reshape(-1, 8, 8) / 16.0, np.ones((1, 4, 4)))  # 32 x 32
    X = X[:, 2:30, 2:30].reshape(len(X8), -1)  # crop to 28 x 28 = 784
    m = MLPRegressor(hidden_layer_sizes=(128,), activation="relu", max_iter=60, random_state=seed)
    m.fit(X, y.astype(float))
    return Network([m.coefs_[0].T, m.coefs_[1].T], [m.intercepts_[0], m.intercepts_[1]])


def relu_row(arch: list[int], seed: int, precision: float | None = None, decimals: int | None = None,
             refine: bool = True, net: Network | None = None, name: str | None = None,
             budget: int | None = None):
    net = random_net(arch, seed) if net is None else net
    oracle = (lambda X: net(X)) if decimals is None else (lambda X: np.round(net(X), decimals))
    t, c = time.monotonic(), time.process_time()
    r = extract_relu(oracle, arch[0], arch[1:-1], precision=precision, seed=seed, reference=net,
                     refine=refine, equivalence_timeout=60, budget=budget)
    wall, cpu = time.monotonic() - t, time.process_time() - c
    f = r.fidelity
    # A second functional check where the exact one may not finish: 10^5 random inputs.
    X = np.random.default_rng(seed + 1).uniform(-1, 1, size=(100_000, arch[0]))
    sampled = None if r.network is None else float(np.max(np.abs(net(X) - r.network(X))))
    return {
        "arch": "-".join(map(str, arch)), "net": name or "random", "params": net.n_params,
        "seed": seed, "refine": refine,
        "decimals": decimals, "status": r.status, "widths": list(r.widths),
        "orientation": list(r.orientation),
        "queries": r.queries, "log2_queries": round(r.log2_queries, 2),
        "max_abs_error": None if f is None else f.max_abs_error,
        "bits": None if f is None or f.bits_abs is None else round(f.bits_abs, 1),
        "equivalence": None if f is None else f.equivalence,
        # an "equal" is exact (rational arithmetic) or holds up to equivalence_tol only
        "equivalence_exact": None if f is None else f.equivalence_exact,
        "equivalence_tol": None if f is None else f.equivalence_tol,
        "max_output_error": None if f is None else f.max_output_error,
        "max_output_error_1e5": sampled,
        # how a functional match was established: the exact check on the box, else the
        # check within its tolerance, else 10^5 random points of the box below 1e-9, else none
        "verified": ("exact" if f is not None and f.equivalence == "equal" and f.equivalence_exact else
                     "tol" if f is not None and f.equivalence == "equal" else
                     "sampled-1e5" if sampled is not None and sampled < 1e-9 else "no"),
        "dead_on_box": [] if f is None else [list(x) for x in f.dead_on_domain],
        "time": round(wall, 1), "cpu_s": round(cpu, 1), "budget": budget,
        "notes": list(r.unidentified),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes only (about a minute)")
    ap.add_argument("--out", default="benchmarks/results/extract.json")
    ap.add_argument("--seeds", type=int, default=5,
                    help="random networks of 10-20-20-1 and 80-40-20-1 (seeds 0..N-1)")
    ap.add_argument("--deep-seeds", type=int, default=1,
                    help="random networks of 40-20-10-10-1 (seeds 0..N-1; about 1-5 CPU minutes each)")
    ap.add_argument("--archs", default="10-20-20-1,80-40-20-1,40-20-10-10-1,784-128-1,digits",
                    help="which ReLU rows (comma-separated; 'digits': the trained 784-128-1)")
    ap.add_argument("--no-defence", action="store_true", help="skip the rounding rows")
    ap.add_argument("--deep-budget", type=int, default=2**24,
                    help="query budget of the three-hidden-layer rows (partial when reached; "
                         "40-20-10-10-1 seed 0 needs 2^23.1 queries, about 60 CPU s; 0: no budget)")
    a = ap.parse_args()
    t0 = time.monotonic()
    if a.quick:
        relu = [relu_row(arch, s) for arch in ([10, 20, 1], [10, 8, 4, 1]) for s in range(2)]
    else:
        relu = []
        want = a.archs.split(",")
        for arch in [[10, 20, 20, 1], [80, 40, 20, 1], [40, 20, 10, 10, 1], [784, 128, 1]]:
            if "-".join(map(str, arch)) not in want:
                continue
            n_seeds = a.seeds if len(arch) == 4 else a.deep_seeds if len(arch) > 4 else 1
            for s in range(n_seeds):  # --seeds / --deep-seeds: seeds 0..N-1
                relu.append(relu_row(arch, s, budget=(a.deep_budget or None) if len(arch) > 4 else None))
                print(json.dumps({k: relu[-1][k] for k in ("arch", "status", "log2_queries", "bits",
                                                           "equivalence", "equivalence_exact", "equivalence_tol",
                                                           "time", "cpu_s")}), flush=True)
        if "digits" in want:
            relu.append(relu_row([784, 128, 1], 0, net=digits_net(0), name="digits-trained"))
    print("ReLU extraction (ours) vs the published attack (Carlini et al. 2020)")
    print(f"{'arch':>16} {'net':>15} {'seed':>4} {'params':>7} {'status':>9} {'log2 q':>7} {'bits':>6} {'equiv':>10} "
          f"{'max |f-g| 1e5':>13} {'wall s':>7} {'CPU s':>7} {'pub log2 q':>10} {'pub bits':>8} {'q ratio':>8}")
    for r in relu:
        pq, pb = PUBLISHED.get(r["arch"], (None, None))
        ratio = "-" if pq is None else f"2^{r['log2_queries'] - pq:+.1f}"
        samp = "-" if r["max_output_error_1e5"] is None else f"{r['max_output_error_1e5']:.1e}"
        print(f"{r['arch']:>16} {r['net']:>15} {r['seed']:>4} {r['params']:>7} {r['status']:>9} {r['log2_queries']:>7} "
              f"{str(r['bits']):>6} {str(r['equivalence']):>10} {samp:>13} {r['time']:>7} {r['cpu_s']:>7} {str(pq):>10} "
              f"{str(pb):>8} {ratio:>8}")
    defence = [] if a.no_defence else [relu_row([10, 8, 1], 0, precision=None if k is None else 0.5 * 10.0**-k, decimals=k)
               for k in ([None, 12, 10, 8, 6, 4] if not a.quick else [None, 10, 8, 6])]
    print("\nDefence: outputs rounded to k decimals (10-8-1 network)")
    print(f"{'k':>4} {'status':>9} {'log2 q':>7} {'bits':>6} {'equiv':>10} {'max out err':>12}")
    for r in defence:
        print(f"{str(r['decimals']):>4} {r['status']:>9} {r['log2_queries']:>7} {str(r['bits']):>6} "
              f"{str(r['equivalence']):>10} {r['max_output_error'] if r['max_output_error'] is not None else '-':>12}")
    total = time.monotonic() - t0
    cpu_total = sum(r["cpu_s"] for r in relu + defence)
    print(f"\ntotal {total:.0f} s wall, {cpu_total:.0f} CPU s in the extraction rows")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(to_jsonable({"relu": relu, "defence": defence,
                                                   "quick": a.quick, "total_s": total,
                                                   "cpu_s": cpu_total}), indent=1))


if __name__ == "__main__":
    main()
