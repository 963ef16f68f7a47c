"""Functional dimension of layered ReLU networks: #params - #hidden (widths >= 2), and its drops.

Claim checked (Grillo and Montufar, 2026, "weighted polyhedral complexes" abstract in
/work/shared/seeds): "for every architecture whose input and hidden layers have width
at least two, there exists an open set of identifiable parameters. This implies that
the functional dimension of every such architecture is exactly the number of parameters
minus the number of hidden neurons."

What the script measures, with ``relulab.params.functional_dimension`` (rank of the
Jacobian of parameters -> outputs on a batch of points, singular-value gap reported;
exact rank in rational arithmetic for the small architectures):

1. generic parameters: for each architecture with input and hidden widths >= 2, random
   networks whose neurons all switch on the data (``switching_network``), many points;
   the best rank must equal #params - #hidden, stay there under a small perturbation
   (an open set), and match the exact rank;
2. plain random initialisation (He-style Gaussian weights, small biases): the fraction of
   draws that reach the bound, which is lower (dead or always-active neurons);
3. drops: a dead neuron (rank falls by its fan-in + fan-out, exactly), too few points
   (rank capped by #points x #outputs, and by the regions the points reach), and
   width-one layers, outside the theorem: compared with the same architecture at width
   two, far fewer random draws reach the bound.

Writes experiments/results/functional_dimension.{json,png} and prints the tables.
Run:  python experiments/functional_dimension.py [--seeds 10] [--out experiments/results]
"""

from __future__ import annotations

import argparse
import json
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

from relulab import Network
from relulab.params import (
    functional_dimension,
    network_from_parameters,
    parameter_vector,
    switching_network,
)

GENERIC = [
    [2, 2, 1],
    [2, 3, 1],
    [3, 3, 2],
    [2, 2, 2, 1],
    [2, 3, 3, 1],
    [3, 4, 4, 2],
    [2, 2, 2, 2, 2, 1],
    [2, 5, 5, 5, 1],
    [4, 8, 8, 1],
    [5, 10, 10, 10, 3],
]
EXACT_MAX_PARAMS = 50


def arch(dims) -> str:
    return "-".join(map(str, dims))


def he_network(dims, rng) -> Network:
    Ws = [
        rng.normal(size=(dims[k + 1], dims[k])) * np.sqrt(2 / dims[k]) for k in range(len(dims) - 1)
    ]
    bs = [rng.normal(size=dims[k + 1]) * 0.1 for k in range(len(dims) - 1)]
    return Network(Ws, bs)


def rounded(net: Network, den: int = 1024) -> Network:
    theta = parameter_vector(net)
    return network_from_parameters(
        net, np.array([Fraction(round(float(v) * den), den) for v in theta], dtype=object)
    )


def rational_points(X: np.ndarray, den: int = 64) -> np.ndarray:
    """The points rounded to multiples of 1/den, as Fractions (small denominators keep the
    exact elimination fast)."""
    return np.array(
        [[Fraction(round(float(v) * den), den) for v in row] for row in X], dtype=object
    )


def perturbed(net: Network, X: np.ndarray, rng, scale: float = 1e-6) -> Network:
    """A random perturbation of the parameters that changes no activation pattern on X."""
    theta = parameter_vector(net)
    base = net.pattern_vector(X)
    while scale > 1e-15:
        cand = network_from_parameters(net, theta + scale * rng.normal(size=theta.size))
        if np.array_equal(cand.pattern_vector(X), base):
            return cand
        scale /= 10
    return net


def exact_copy(net: Network, X: np.ndarray) -> tuple[Network, np.ndarray]:
    """The network and points rounded to dyadic rationals, as coarse as keeps every
    activation pattern on the points (small denominators keep exact elimination fast)."""
    base = net.pattern_vector(X)
    for bits in (10, 16, 24, 32, 40):
        den = 2**bits
        net_q = rounded(net, den)
        X_q = rational_points(X, den)
        if np.array_equal(net_q.float().pattern_vector(X_q.astype(float)), base):
            return net_q, X_q
    return net.exact(), X.astype(object)


def n_points_for(dims) -> int:
    bound = sum(dims[k] * dims[k + 1] + dims[k + 1] for k in range(len(dims) - 1)) - sum(dims[1:-1])
    return max(1000, 20 * bound // dims[-1])


def generic_rows(seeds: int) -> list[dict]:
    rows = []
    for dims in GENERIC:
        t0 = time.perf_counter()
        n = n_points_for(dims)
        ranks, gaps, he_ranks = [], [], []
        best = None
        for s in range(seeds):
            rng = np.random.default_rng(1000 + s)
            X = rng.normal(size=(n, dims[0]))
            net = switching_network(dims, X, seed=s)
            fd = functional_dimension(net, X)
            ranks.append(fd.rank)
            gaps.append(fd.numerical.gap)
            if best is None or fd.rank > best[2].rank:
                best = (net, X, fd)
            he = he_network(dims, rng)
            he_ranks.append(functional_dimension(he, X).rank)
        net, X, fd = best
        bound = fd.bound
        # an open set: perturb the best parameters a little -- small enough that no point of
        # the batch changes activation pattern -- and the rank stays
        rng = np.random.default_rng(7)
        pert = [functional_dimension(perturbed(net, X, rng), X).rank for _ in range(3)]
        exact = None
        if net.n_params <= EXACT_MAX_PARAMS:
            # exactly: parameters and points rounded to dyadic rationals (no pattern changes)
            net_q, X_q = exact_copy(net, X[:1000])
            exact = functional_dimension(net_q, X_q, exact=True).exact_rank
        rows.append(
            {
                "arch": arch(dims),
                "n_params": net.n_params,
                "n_hidden": net.n_neurons,
                "bound": bound,
                "n_points": n,
                "ranks": ranks,
                "best_rank": max(ranks),
                "fraction_at_bound": float(np.mean([r == bound for r in ranks])),
                "median_gap": float(np.median(gaps)),
                "perturbed_ranks": pert,
                "exact_rank_best": exact,
                "he_init_ranks": he_ranks,
                "he_init_fraction_at_bound": float(np.mean([r == bound for r in he_ranks])),
                "claim_holds": max(ranks) == bound
                and all(p == bound for p in pert)
                and (exact is None or exact == bound),
                "seconds": time.perf_counter() - t0,
            }
        )
    return rows


def drop_rows(seeds: int) -> list[dict]:
    rows = []
    # a dead neuron added to a generic network: rank = bound of the smaller architecture
    for dims, layer in (([3, 4, 4, 2], 0), ([3, 4, 4, 2], 1), ([2, 3, 3, 1], 0)):
        rng = np.random.default_rng(5)
        X = rng.normal(size=(n_points_for(dims), dims[0]))
        small = switching_network(dims, X, seed=0)
        Ws = [np.array(W) for W in small.weights]
        bs = [np.array(b) for b in small.biases]
        Ws[layer] = np.vstack([Ws[layer], rng.normal(size=(1, dims[layer]))])
        bs[layer] = np.append(bs[layer], -1e3)
        Ws[layer + 1] = np.hstack([Ws[layer + 1], rng.normal(size=(dims[layer + 2], 1))])
        big = Network(Ws, bs)
        fd = functional_dimension(big, X)
        big_dims = [big.input_dim, *big.widths, big.output_dim]
        rows.append(
            {
                "case": f"dead neuron in hidden layer {layer + 1}",
                "arch": arch(big_dims),
                "bound": fd.bound,
                "rank": fd.rank,
                "expected": fd.bound - dims[layer] - dims[layer + 2],
                "why": f"fan-in {dims[layer]} + bias + fan-out {dims[layer + 2]} - its rescaling",
                "small_arch_rank": functional_dimension(small, X).rank,
            }
        )
    # width-one layers (outside the theorem) against the same architecture with width two:
    # rank distribution over random switching draws on the same points
    for dims, twin in (
        ([2, 3, 1, 3, 1], [2, 3, 2, 3, 1]),
        ([2, 2, 1, 2, 1], [2, 2, 2, 2, 1]),
        ([2, 3, 1, 3, 3, 1], [2, 3, 2, 3, 3, 1]),
    ):
        for case, a in (("width-one bottleneck", dims), ("same with width two", twin)):
            ranks = []
            for s in range(seeds):
                rng = np.random.default_rng(3000 + s)
                X = rng.normal(size=(3000, a[0])) * 1.5
                fd = functional_dimension(switching_network(a, X, seed=s), X)
                ranks.append(fd.rank)
            rows.append(
                {
                    "case": case,
                    "arch": arch(a),
                    "bound": fd.bound,
                    "rank": max(ranks),
                    "expected": None,
                    "ranks": ranks,
                    "why": f"best of {seeds} draws; median {np.median(ranks):g}, at bound "
                    f"{np.mean([r == fd.bound for r in ranks]):.0%}",
                }
            )
    return rows


def points_curve() -> list[dict]:
    curves = []
    for dims in ([3, 4, 4, 2], [2, 3, 3, 1], [4, 8, 8, 1]):
        rng = np.random.default_rng(11)
        X = rng.normal(size=(n_points_for(dims), dims[0]))
        net = switching_network(dims, X, seed=0)
        full = functional_dimension(net, X)
        bound = full.bound
        ns = sorted(
            {1, 2, 3, 5, 8, 12, 16, 20, 25, 30, 40, 50, 60, 80, 100, 130, 160, 200}
            | {max(1, bound // dims[-1] + d) for d in (-1, 0, 1)}
        )
        ranks = [functional_dimension(net, X[:n]).rank for n in ns]
        curves.append(
            {
                "arch": arch(dims),
                "bound": bound,
                "full_rank": full.rank,
                "n": ns,
                "rank": ranks,
                "rows": [n * dims[-1] for n in ns],
            }
        )
    return curves


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    ax = axes[0]
    for c in result["points_curve"]:
        (line,) = ax.plot(c["n"], c["rank"], "o-", ms=3, label=f"{c['arch']} (bound {c['bound']})")
        ax.axhline(c["bound"], color=line.get_color(), ls=":", lw=1)
        ax.plot(c["n"], np.minimum(c["rows"], c["bound"]), color=line.get_color(), ls="--", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("number of points")
    ax.set_ylabel("rank of the realisation Jacobian")
    ax.set_title("too few points cap the rank (dashed: min(#points x #outputs, bound))")
    ax.legend(fontsize=8)
    ax = axes[1]
    gen = result["generic"]
    xs = np.arange(len(gen))
    ax.bar(xs - 0.27, [r["bound"] for r in gen], 0.27, label="#params - #hidden", color="#bbbbbb")
    ax.bar(
        xs, [r["best_rank"] for r in gen], 0.27, label="generic (switching) best", color="#1f77b4"
    )
    he_best = [max(r["he_init_ranks"]) for r in gen]
    he_med = [float(np.median(r["he_init_ranks"])) for r in gen]
    ax.bar(xs + 0.27, he_med, 0.27, label="He init, median", color="#ff7f0e")
    ax.plot(xs + 0.27, he_best, "k_", ms=10, label="He init, best")
    ax.set_xticks(xs)
    ax.set_xticklabels([r["arch"] for r in gen], rotation=45, ha="right", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("functional dimension")
    ax.set_title("widths >= 2: the bound is attained; random inits often fall below")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    gen = generic_rows(args.seeds)
    print("Claim: input and hidden widths >= 2 => functional dimension = #params - #hidden")
    hdr = (
        f"{'arch':>14} {'params':>6} {'hidden':>6} {'bound':>5} {'best':>5} {'exact':>5} "
        f"{'at bound':>8} {'He init at bound':>16} {'perturbed':>12} {'median gap':>10} "
        f"{'holds':>5}"
    )
    print(hdr)
    print("-" * len(hdr))
    for r in gen:
        print(
            f"{r['arch']:>14} {r['n_params']:>6} {r['n_hidden']:>6} {r['bound']:>5} "
            f"{r['best_rank']:>5} "
            f"{r['exact_rank_best'] if r['exact_rank_best'] is not None else '-':>5} "
            f"{r['fraction_at_bound']:>8.0%} {r['he_init_fraction_at_bound']:>16.0%} "
            f"{','.join(map(str, r['perturbed_ranks'])):>12} {r['median_gap']:>10.1e} "
            f"{'yes' if r['claim_holds'] else 'NO':>5}"
        )
    drops = drop_rows(args.seeds)
    print("\nWhere it drops")
    hdr2 = f"{'case':>36} {'arch':>12} {'bound':>5} {'rank':>5} {'expected':>8}  note"
    print(hdr2)
    print("-" * len(hdr2))
    for r in drops:
        exp = "-" if r["expected"] is None else str(r["expected"])
        print(
            f"{r['case']:>36} {r['arch']:>12} {r['bound']:>5} {r['rank']:>5} {exp:>8}  {r['why']}"
        )
    curves = points_curve()
    print("\nToo few points (rank vs #points)")
    for c in curves:
        print(
            f"{c['arch']:>12} bound {c['bound']}: "
            + ", ".join(f"{n}:{k}" for n, k in zip(c["n"], c["rank"], strict=True))
        )
    result = {
        "claim": "for layered ReLU networks with input and hidden widths >= 2 the functional "
        "dimension is #params - #hidden (Grillo and Montufar, 2026)",
        "generic": gen,
        "drops": drops,
        "points_curve": curves,
        "all_generic_hold": all(r["claim_holds"] for r in gen),
        "seconds": time.perf_counter() - t0,
    }
    (out / "functional_dimension.json").write_text(json.dumps(result, indent=2))
    try:
        plot(result, out / "functional_dimension.png")
        print(f"\nwrote {out / 'functional_dimension.json'} and {out / 'functional_dimension.png'}")
    except ImportError:
        print(f"\nwrote {out / 'functional_dimension.json'} (matplotlib missing: no figure)")
    print(
        f"claim reproduced for every architecture: {result['all_generic_hold']} "
        f"({result['seconds']:.0f} s)"
    )


if __name__ == "__main__":
    main()
