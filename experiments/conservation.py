"""Conservation laws of gradient flow in ReLU networks, seen through gradient descent.

Claim checked (Du, Hu and Lee, NeurIPS 2018; Marcotte, Gribonval and Peyre, NeurIPS
2023): along gradient flow of any loss, for every hidden neuron the balance
``||incoming weights and bias||^2 - ||outgoing weights||^2`` stays constant, because
the loss is invariant under the neuron's positive rescaling.  Gradient descent with
step ``eta`` changes it per step by exactly ``eta^2 (||g_in||^2 - ||g_out||^2)``, so
over a fixed training time ``T`` the drift is ``O(eta)``: it shrinks linearly with the
step size while the weights themselves move by O(1).

The script trains small networks on a regression task with plain gradient descent at
decreasing step sizes over the same training time, and records the largest drift of
the conserved quantities, the second-order bound ``sum_t eta^2 (||g_in||^2 +
||g_out||^2)``, how exactly each step obeys the one-step identity, and how far the
parameters moved.  The log-log slope of drift against step size should be about 1.

Writes experiments/results/conservation.{json,png} and prints the table.
Run:  python experiments/conservation.py [--time 4] [--out experiments/results]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from relulab import Network
from relulab.params import (
    conserved_quantities,
    gd_conservation,
    mse_loss_and_grad,
    parameter_vector,
)

ARCHS = [[2, 8, 1], [2, 6, 6, 1], [3, 10, 10, 2]]
STEPS = [0.2, 0.1, 0.05, 0.025, 0.0125, 0.00625]


def he_network(dims, seed: int) -> Network:
    rng = np.random.default_rng(seed)
    Ws = [
        rng.normal(size=(dims[k + 1], dims[k])) * np.sqrt(2 / dims[k]) for k in range(len(dims) - 1)
    ]
    bs = [rng.normal(size=dims[k + 1]) * 0.1 for k in range(len(dims) - 1)]
    return Network(Ws, bs)


def task(dims, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(64, dims[0]))
    cols = [np.sin(X @ rng.normal(size=dims[0])) for _ in range(dims[-1])]
    return X, np.stack(cols, axis=1)


def trajectory(net: Network, X, Y, lr: float, steps: int, every: int) -> list[list[float]]:
    """Conserved quantities every ``every`` steps (for the figure)."""
    out = [conserved_quantities(net).tolist()]
    Ws = [np.array(W) for W in net.weights]
    bs = [np.array(b) for b in net.biases]
    cur = net
    for t in range(1, steps + 1):
        _, gW, gb = mse_loss_and_grad(cur, X, Y)
        Ws = [W - lr * g for W, g in zip(Ws, gW, strict=True)]
        bs = [b - lr * g for b, g in zip(bs, gb, strict=True)]
        cur = Network(Ws, bs)
        if t % every == 0:
            out.append(conserved_quantities(cur).tolist())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time", type=float, default=4.0, help="training time T = steps x eta")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    T = args.time
    results = []
    print(
        "Claim: gradient flow conserves |in|^2 - |out|^2 per hidden neuron; gradient descent "
        "drifts by O(eta) over a fixed time"
    )
    hdr = (
        f"{'arch':>10} {'eta':>8} {'steps':>6} {'loss start':>10} {'loss end':>9} {'drift':>10} "
        f"{'bound':>10} {'step id. err':>12} {'|d theta|':>9} {'drift/eta':>9}"
    )
    print(hdr)
    print("-" * len(hdr))
    for dims in ARCHS:
        net = he_network(dims, 1)
        X, Y = task(dims)
        rows = []
        for lr in STEPS:
            steps = int(round(T / lr))
            run, trained = gd_conservation(net, X, Y, lr, steps)
            moved = float(np.abs(parameter_vector(trained) - parameter_vector(net)).max())
            r = run.to_dict()
            r.update(arch="-".join(map(str, dims)), param_move=moved)
            rows.append(r)
            print(
                f"{r['arch']:>10} {lr:>8.5f} {steps:>6} {run.loss_start:>10.4f} "
                f"{run.loss_end:>9.4f} "
                f"{run.drift:>10.2e} {run.bound:>10.2e} {run.identity_error:>12.1e} {moved:>9.3f} "
                f"{run.drift / lr:>9.3f}"
            )
        lr_arr = np.array([r["lr"] for r in rows])
        dr = np.array([r["drift"] for r in rows])
        slope = float(np.polyfit(np.log(lr_arr), np.log(dr), 1)[0])
        ok = all(b["drift"] < a["drift"] for a, b in zip(rows, rows[1:], strict=False)) and all(
            r["drift"] <= r["bound"] * (1 + 1e-9) + 1e-12 for r in rows
        )
        print(
            f"{'':>10} log-log slope of drift vs eta: {slope:.2f}; drift shrinks with eta and "
            f"stays under the bound: {'yes' if ok else 'NO'}"
        )
        results.append(
            {"arch": "-".join(map(str, dims)), "rows": rows, "slope": slope, "holds": ok}
        )
    # trajectories for the figure: the largest and smallest step on the 2-6-6-1 network
    dims = ARCHS[1]
    net = he_network(dims, 1)
    X, Y = task(dims)
    traj = {}
    for lr in (STEPS[0], STEPS[-1]):
        steps = int(round(T / lr))
        every = max(1, steps // 100)
        traj[str(lr)] = {
            "t": [i * every * lr for i in range(steps // every + 1)],
            "c": trajectory(net, X, Y, lr, steps, every),
        }
    result = {
        "claim": "gradient flow conserves ||in||^2 - ||out||^2 per hidden neuron; "
        "gradient descent drift is O(eta) over fixed time",
        "time": T,
        "archs": results,
        "trajectories": traj,
        "all_hold": all(r["holds"] for r in results),
        "seconds": time.perf_counter() - t0,
    }
    (out / "conservation.json").write_text(json.dumps(result, indent=2))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(11, 4.3))
        ax = axes[0]
        for r in results:
            lr = [x["lr"] for x in r["rows"]]
            (line,) = ax.loglog(
                lr,
                [x["drift"] for x in r["rows"]],
                "o-",
                label=f"{r['arch']} drift (slope {r['slope']:.2f})",
            )
            ax.loglog(lr, [x["bound"] for x in r["rows"]], "--", color=line.get_color(), lw=0.8)
        ax.set_xlabel("step size eta (same training time T)")
        ax.set_ylabel("max drift of |in|^2 - |out|^2")
        ax.set_title("drift shrinks linearly with the step (dashed: eta^2 bound)")
        ax.legend(fontsize=8)
        ax = axes[1]
        for (lr, tr), style in zip(traj.items(), ("-", ":"), strict=True):
            c = np.array(tr["c"])
            for j in range(c.shape[1]):
                ax.plot(
                    tr["t"],
                    c[:, j] - c[0, j],
                    style,
                    lw=1,
                    label=f"eta={lr}" if j == 0 else None,
                    color=f"C{j % 10}",
                )
        ax.set_xlabel("training time t = steps x eta")
        ax.set_ylabel("c_j(t) - c_j(0)")
        ax.set_title(
            f"{'-'.join(map(str, dims))}: every neuron's balance (solid eta={STEPS[0]}, "
            f"dotted eta={STEPS[-1]})",
            fontsize=9,
        )
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / "conservation.png", dpi=130)
        plt.close(fig)
        print(f"\nwrote {out / 'conservation.json'} and {out / 'conservation.png'}")
    except ImportError:
        print(f"\nwrote {out / 'conservation.json'} (matplotlib missing: no figure)")
    print(f"claim reproduced for every network: {result['all_hold']} ({result['seconds']:.0f} s)")


if __name__ == "__main__":
    main()
