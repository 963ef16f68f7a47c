"""Causal mechanism reduction on a trained digits classifier.

Claim checked (causal mechanism reduction, CMR; seed abstract in shared/seeds): replacing
hidden neurons by constants or by affine functions of the retained neurons compiles into
a smaller dense network; the choice of neurons matters, and "functionally identical ReLU
networks should induce the same reduction": under exact positive rescalings of the hidden
neurons (same function), the kept set of variance-based pruning (VBP) collapses towards
chance-level overlap while the logit-distortion score is exactly invariant.

What it does:

1. trains a 64-48-32-10 ReLU classifier on scikit-learn's digits data (8x8 images; the
   data ship with scikit-learn, nothing is downloaded);
2. for every score (mean-replacement error, variance, logit distortion, and a random
   baseline) and each number of neurons kept per layer, replaces the other neurons by
   their mean ("constant") or by least squares on the retained ones ("affine"), compiles
   the smaller network, and measures test accuracy, agreement with the full network's
   predictions and the maximum output (logit) deviation on the test set;
3. applies 20 random positive rescalings (factors exp(U(-2, 2)) per neuron, checked to
   leave the function unchanged) and measures how much of each score's kept set survives.

Writes ``mechanism_reduction.json`` and ``mechanism_reduction.png`` to ``--out``
(default ``experiments/results``).

Run:  python experiments/mechanism_reduction.py [--out DIR] [--quick]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from relulab import Network
from relulab.symmetry import canonical, neuron_scores, plan, replace, rescale
from relulab.symmetry.canonical import same_form

CLAIM = (
    "Replacing neurons by constants or affine maps of retained neurons compiles into a "
    "smaller dense network; under exact positive rescalings (same function) the VBP kept "
    "set changes (towards chance-level overlap) while the logit-distortion kept set does not."
)


def load_data(seed: int = 0):
    """Digits from scikit-learn, scaled to [0, 1], split 70/30."""
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError as e:  # pragma: no cover - the experiment needs scikit-learn
        raise SystemExit(f"this experiment needs scikit-learn ({e}); pip install scikit-learn") from None
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)
    return Xtr, Xte, ytr, yte


def train(Xtr, ytr, hidden=(48, 32), seed: int = 0) -> tuple[Network, dict]:
    """A ReLU MLP (scikit-learn, Adam, small weight decay) as a relulab Network (logits)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    clf = MLPClassifier(hidden_layer_sizes=hidden, activation="relu", alpha=1e-4,
                        max_iter=400, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(Xtr, ytr)
    net = Network([W.T for W in clf.coefs_], list(clf.intercepts_))
    # sanity: relulab's logits give scikit-learn's predictions
    assert np.array_equal(clf.classes_[np.argmax(net(Xtr), axis=1)], clf.predict(Xtr))
    return net, {"n_iter": int(clf.n_iter_), "classes": clf.classes_.tolist()}


def accuracy(net: Network, X, y) -> float:
    return float(np.mean(np.argmax(net(X), axis=1) == y))


def random_scores(net: Network, rng) -> list[np.ndarray]:
    return [rng.random(w) for w in net.widths]


def sweep(net, Xtr, Xte, yte, keeps, rng) -> dict:
    base_pred = np.argmax(net(Xte), axis=1)
    scores = {s: neuron_scores(net, Xtr, s) for s in ("mean_replacement", "variance", "logit_distortion")}
    scores["random"] = random_scores(net, rng)
    out: dict = {}
    for name, sc in scores.items():
        for by in ("constant", "affine"):
            rows = []
            for frac in keeps:
                neurons = plan(sc, float(frac))
                r = replace(net, neurons, by=by, data=Xtr)
                g = r.network
                D = net(Xte) - g(Xte)
                rows.append({
                    "keep_fraction": float(frac),
                    "neurons_kept": int(sum(g.widths)) if g.n_hidden_layers else 0,
                    "widths": list(g.widths),
                    "test_accuracy": accuracy(g, Xte, yte),
                    "agreement": float(np.mean(np.argmax(g(Xte), axis=1) == base_pred)),
                    "max_output_deviation": float(np.max(np.abs(D))),
                    "rms_output_deviation": float(np.sqrt(np.mean(D**2))),
                })
            out[f"{name}/{by}"] = rows
    return out


def invariance(net, Xtr, n_trials: int, keep: float, rng) -> dict:
    """Kept-set overlap between the network and randomly rescaled copies of it."""
    names = ("variance", "logit_distortion", "mean_replacement")
    ref = {s: plan(neuron_scores(net, Xtr, s), keep) for s in names}
    n_replaced = len(ref["variance"])
    n_total = sum(net.widths)
    n_kept = n_total - n_replaced
    res = {s: {"overlap": [], "identical": 0} for s in names}
    max_dev = 0.0
    canonical_same = True
    can_ref = canonical(net)[0]
    for _ in range(n_trials):
        facs = [np.exp(rng.uniform(-2, 2, size=w)) for w in net.widths]
        g = rescale(net, facs)
        max_dev = max(max_dev, float(np.max(np.abs(g(Xtr) - net(Xtr)))))
        canonical_same &= same_form(canonical(g)[0], can_ref, rtol=1e-9)
        for s in names:
            rep = plan(neuron_scores(g, Xtr, s), keep)
            kept_ref = {(k, i) for k, w in enumerate(net.widths) for i in range(w)} - set(ref[s])
            kept_g = {(k, i) for k, w in enumerate(net.widths) for i in range(w)} - set(rep)
            res[s]["overlap"].append(len(kept_ref & kept_g) / max(1, len(kept_ref)))
            res[s]["identical"] += int(kept_ref == kept_g)
    # chance level: expected overlap of a uniformly random kept set of the same size per layer
    chance = sum((w - len([n for n in ref["variance"] if n[0] == k])) ** 2 / w
                 for k, w in enumerate(net.widths)) / n_kept
    return {
        "trials": n_trials,
        "keep_fraction": keep,
        "neurons_kept": n_kept,
        "chance_overlap": chance,
        "max_function_change_under_rescaling": max_dev,
        "canonical_forms_identical": bool(canonical_same),
        **{s: {"mean_overlap": float(np.mean(v["overlap"])), "min_overlap": float(np.min(v["overlap"])),
               "identical_sets": v["identical"]} for s, v in res.items()},
    }


def figure(res: dict, inv: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.3))
    colors = {"mean_replacement": "C0", "variance": "C1", "logit_distortion": "C2", "random": "0.5"}
    for key, rows in res["sweep"].items():
        name, by = key.split("/")
        x = [r["neurons_kept"] for r in rows]
        ls = "-" if by == "constant" else "--"
        # mean replacement and logit distortion nearly coincide: draw the former wider, below
        lw = 4 if name == "mean_replacement" else 1.5
        alpha = 0.4 if name == "mean_replacement" else 1.0
        axes[0].plot(x, [r["test_accuracy"] for r in rows], ls, color=colors[name], marker=".",
                     lw=lw, alpha=alpha, label=f"{name} ({by})")
        axes[1].plot(x, [r["max_output_deviation"] for r in rows], ls, color=colors[name],
                     marker=".", lw=lw, alpha=alpha)
    axes[0].axhline(res["full_test_accuracy"], color="k", lw=0.8)
    axes[0].set_xlabel("hidden neurons kept")
    axes[0].set_ylabel("test accuracy")
    axes[0].legend(fontsize=7)
    axes[0].set_title("accuracy of the compiled network")
    axes[1].set_xlabel("hidden neurons kept")
    axes[1].set_ylabel("max |logit deviation| on test set")
    axes[1].set_title("output deviation (solid: constant, dashed: affine)")
    names = ["variance", "logit_distortion", "mean_replacement"]
    axes[2].bar(range(3), [inv[n]["mean_overlap"] for n in names], color=[colors[n] for n in names])
    axes[2].axhline(inv["chance_overlap"], color="k", ls=":", label="chance")
    axes[2].set_xticks(range(3), ["variance (VBP)", "logit distortion", "mean replacement"])
    axes[2].set_ylabel("kept-set overlap after rescaling")
    axes[2].set_ylim(0, 1.05)
    axes[2].set_title(f"{inv['trials']} random positive rescalings (same function)")
    axes[2].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    ap.add_argument("--quick", action="store_true", help="fewer keep levels and trials")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    t0 = time.time()
    Xtr, Xte, ytr, yte = load_data(args.seed)
    net, info = train(Xtr, ytr, seed=args.seed)
    keeps = [1.0, 0.5, 0.25] if args.quick else [1.0, 0.8, 0.6, 0.5, 0.4, 0.3, 0.2, 0.15, 0.1, 0.05]
    res: dict = {
        "claim": CLAIM,
        "dataset": "scikit-learn digits (1797 8x8 images, 10 classes), 70/30 split, pixels / 16",
        "network": repr(net),
        "training": info,
        "full_test_accuracy": accuracy(net, Xte, yte),
        "full_train_accuracy": accuracy(net, Xtr, ytr),
        "fit_data": "training set (scores, means and least squares); metrics on the test set",
    }
    res["sweep"] = sweep(net, Xtr, Xte, yte, keeps, rng)
    inv = invariance(net, Xtr, 5 if args.quick else 20, 0.5, rng)
    res["invariance"] = inv
    res["seconds"] = time.time() - t0
    (out / "mechanism_reduction.json").write_text(json.dumps(res, indent=2))
    figure(res, inv, out / "mechanism_reduction.png")

    print(f"{res['network']}: test accuracy {res['full_test_accuracy']:.4f}")
    print(f"{'score / replacement':34s} " + " ".join(f"{k:>7.2f}" for k in keeps) + "   (keep fraction)")
    for key, rows in res["sweep"].items():
        print(f"{key:34s} " + " ".join(f"{r['test_accuracy']:7.3f}" for r in rows) + "   accuracy")
    for key, rows in res["sweep"].items():
        print(f"{key:34s} " + " ".join(f"{r['max_output_deviation']:7.2g}" for r in rows) + "   max dev")
    print(f"rescaling invariance ({inv['trials']} trials, keep {inv['neurons_kept']} neurons, "
          f"function change {inv['max_function_change_under_rescaling']:.2g}, canonical forms identical: "
          f"{inv['canonical_forms_identical']}):")
    for s in ("variance", "logit_distortion", "mean_replacement"):
        print(f"  {s:18s} mean overlap {inv[s]['mean_overlap']:.3f}  min {inv[s]['min_overlap']:.3f}  "
              f"identical sets {inv[s]['identical_sets']}/{inv['trials']}")
    print(f"  chance overlap     {inv['chance_overlap']:.3f}")
    print(f"wrote {out / 'mechanism_reduction.json'} and {out / 'mechanism_reduction.png'} "
          f"({res['seconds']:.1f} s)")
    return res


if __name__ == "__main__":
    main()
