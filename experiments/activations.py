"""ReLU networks as networks of other activations: sup error against the scale parameter.

Claim checked (Zhang, Lu, Zhao, JMLR 25(35), 2024): for every activation rho in their set
(LeakyReLU, ReLU^2, ELU, CELU, SELU, Softplus, GELU, SiLU, Swish, Mish, Sigmoid, Tanh,
Arctan, Softsign, dSiLU, SRS) a ReLU network of width N and depth L is approximated to
arbitrary accuracy on a bounded set by a rho-network of width 3N and depth 2L (width N,
depth L for ELU, CELU, SELU, Softplus, GELU, SiLU, Swish, Mish).  We measure, for
relulab.construct.replace_relu on random ReLU networks (2-16-16-1 and 4-12-12-12-1 on
[-1, 1]^d), the sup error on a dense grid refined by local search as the scale t
grows, and check
(a) sizes within (3N, 2L), and (1, 1) factors for the subset;
(b) the error falls below 1% of the output spread at some t <= 10^4 for every activation;
(c) it falls at least like 1/t, as the constructions' O(M/t) bounds say (fitted log-log
    slope on t = 10 .. 1000 at most -0.8; LeakyReLU is exact at every t); the slopes are
    reported (smooth activations with rho(0) = 0 fall somewhat faster pre-asymptotically);
(d) where the a-priori bound applies (scale, leaky, square classes) the measured error
    never exceeds it.
Writes experiments/results/activations.{json,png}.
Run:  python experiments/activations.py [--quick]
"""

from __future__ import annotations

import json
import time

import numpy as np
from _common import args

from relulab import Box, Network
from relulab.construct.activations import GADGET_CLASS, approximate_relu_network


def random_net(dims: list[int], seed: int) -> Network:
    rng = np.random.default_rng(seed)
    return Network([rng.normal(size=(dims[i + 1], dims[i])) / np.sqrt(dims[i]) for i in range(len(dims) - 1)],
                   [rng.normal(size=dims[i + 1]) * 0.5 for i in range(len(dims) - 1)])


def main() -> None:
    a = args(__doc__, parts=False)  # --quick, --out (created)
    out = a.out
    t0 = time.time()
    scales = [1, 3, 10, 30, 100, 300, 1000, 3000, 10000]
    nets = {"2-16-16-1": random_net([2, 16, 16, 1], 0)}
    if not a.quick:
        nets["4-12-12-12-1"] = random_net([4, 12, 12, 12, 1], 1)
    n_points = 3000 if a.quick else 20000
    res: dict = {"claim": __doc__.split("\n\n")[1], "rows": []}
    ok_a = ok_b = ok_c = ok_d = True
    for label, net in nets.items():
        d = net.input_dim
        box = Box(-np.ones(d), np.ones(d))
        Xs = np.random.default_rng(5).uniform(-1, 1, (5000, d))
        spread = float(np.ptp(net(Xs)))
        for name in GADGET_CLASS:
            errs, bounds, widths = [], [], None
            for t in scales:
                r = approximate_relu_network(net, name, box, t, n_points=n_points)
                errs.append(r.sup_error)
                bounds.append(r.a_priori_bound)
                widths = r.widths
            kind = GADGET_CLASS[name]
            wmax = 3 if kind != "scale" else 1
            dmax = 2 if kind != "scale" else 1
            size_ok = max(widths) <= wmax * max(net.widths) and len(widths) <= dmax * net.n_hidden_layers
            small = min(errs) < 0.01 * spread
            sel = [i for i, t in enumerate(scales) if 10 <= t <= 1000]
            slope = None
            if kind != "leaky":
                slope = float(np.polyfit(np.log([scales[i] for i in sel]), np.log([errs[i] for i in sel]), 1)[0])
            rate_ok = kind == "leaky" or slope <= -0.8
            bound_ok = all(b is None or e <= b + 1e-12 for e, b in zip(errs, bounds, strict=True))
            ok_a &= size_ok
            ok_b &= small
            ok_c &= rate_ok
            ok_d &= bound_ok
            res["rows"].append({"net": label, "activation": name, "gadget": kind, "relu_widths": list(net.widths),
                                "widths": list(widths), "scales": scales, "sup_error": errs,
                                "a_priori_bound": bounds, "output_spread": spread, "slope_10_1000": slope,
                                "size_ok": size_ok, "below_1pct": small, "rate_ok": rate_ok,
                                "within_bound": bound_ok})
            print(f"{label:13s} {name:10s} {kind:9s} widths {max(widths):3d} min err {min(errs):.2e} "
                  f"slope {slope if slope is None else round(slope, 2)} "
                  f"{'ok' if size_ok and small and rate_ok and bound_ok else 'CHECK'}")
    res["verdicts"] = [
        {"claim": "(a) sizes within (3N, 2L), (N, L) for the subset", "held": ok_a},
        {"claim": "(b) error below 1% of the output spread for some t <= 1e4", "held": ok_b},
        {"claim": "(c) error falls at least like 1/t on t = 10..1000 (slope <= -0.8)", "held": ok_c},
        {"claim": "(d) measured error <= a-priori bound where it applies", "held": ok_d},
    ]
    for v in res["verdicts"]:
        print(f"claim {v['claim']}: {'HELD' if v['held'] else 'DID NOT HOLD'}")
    res["quick"] = a.quick
    res["seconds"] = time.time() - t0

    from matplotlib.figure import Figure

    fig = Figure(figsize=(14, 5), layout="constrained")
    axes = [fig.add_subplot(1, len(nets), i + 1) for i in range(len(nets))]
    for ax, label in zip(axes, nets, strict=True):
        for i, r in enumerate(x for x in res["rows"] if x["net"] == label):
            e = np.maximum(r["sup_error"], 1e-17)
            style = {"scale": "-", "leaky": ":", "square": "-.", "sigmoidal": "--"}[r["gadget"]]
            ax.loglog(scales, e, style, marker="o", ms=2.5, color=f"C{i % 10}",
                      label=f"{r['activation']} ({r['gadget']})")
        ax.loglog(scales, [1.0 / t for t in scales], "k", lw=0.6, alpha=0.5, label="1/t")
        ax.set(xlabel="scale t", ylabel="sup error on a dense grid", title=f"ReLU net {label} on [-1,1]^d")
        ax.legend(fontsize=6, ncol=2)
    fig.savefig(out / "activations.png", dpi=110)
    res["figure"] = "activations.png"
    (out / "activations.json").write_text(json.dumps(res, indent=1))
    print(f"wrote {out / 'activations.json'} and .png in {res['seconds']:.0f} s")


if __name__ == "__main__":
    main()
