"""The estimator commands: fit a quantile ReLU network (ConquerNet) to a CSV and save it.

Example:
    $ relulab fit-quantile data.csv --quantiles 0.1,0.5,0.9 --save q.npz --plot bands.png
    $ relulab regions q.npz --count      # the saved file is an ordinary relulab network
"""

from __future__ import annotations

import numpy as np
import typer

from ..errors import RelulabError
from ._common import (
    JSON_OPT,
    check_output_targets,
    check_seconds,
    console,
    parse_floats,
    print_json,
)

__all__ = ["register", "tour"]


#: relative fall of the epoch loss over the recent epochs above which a fit is reported
#: as not settled
UNSETTLED_DROP = 0.01
#: the recent epochs hold at least 10 epochs and this many optimiser steps: with fewer
#: rows than a minibatch an epoch is one Adam step, and a fit 6.7x the optimum fell a
#: steady 0.95% per 10 epochs, below the warning
SETTLE_STEPS = 100


def _widths(text: str) -> tuple[int, ...]:
    """``--hidden`` as positive layer widths (``linear``/``none``/empty: no hidden layer)."""
    if text.strip() in ("", "none", "linear"):
        return ()
    try:
        widths = tuple(int(t) for t in text.split(","))
    except ValueError:
        raise RelulabError(f"--hidden: expected comma-separated integers like 64,64, got {text!r}") from None
    if any(w < 1 for w in widths):
        raise RelulabError(f"--hidden: layer widths must be positive integers, got {text!r}")
    return widths


def _bandwidth(text: str) -> str | float:
    """``--bandwidth`` as ``"auto"`` or one positive finite number (one bandwidth for all levels)."""
    if text.strip() == "auto":
        return "auto"
    vals = parse_floats(text, "--bandwidth")
    if vals.size != 1 or not (np.isfinite(vals[0]) and vals[0] > 0):
        raise RelulabError(f"--bandwidth: expected 'auto' or one positive number (used for every level), got {text!r}")
    return float(vals[0])


def _check_options(loss: str, kernel: str, epochs: int, seed: int) -> None:
    """Refuse bad ``--loss``, ``--kernel``, ``--epochs`` and ``--seed`` before anything is fitted."""
    from ..estimators import KERNELS

    if loss not in ("conquer", "pinball"):
        raise RelulabError(f"--loss: expected conquer or pinball, got {loss!r}")
    if kernel not in KERNELS:
        raise RelulabError(f"--kernel: expected one of {', '.join(KERNELS)}, got {kernel!r}")
    if epochs < 1:
        raise RelulabError(f"--epochs: must be a positive integer, got {epochs}")
    if not 0 <= seed < 2**32:
        raise RelulabError(f"--seed: must be an integer in [0, 2**32), got {seed}")


def fit_quantile_cmd(
    data: str = typer.Argument(..., help="CSV: input columns then the target column."),
    quantiles: str = typer.Option("0.1,0.5,0.9", "--quantiles", help="Levels in (0, 1), increasing."),
    hidden: str = typer.Option("64,64", "--hidden", help="Hidden widths, e.g. 64,64; 'linear' for none."),
    loss: str = typer.Option("conquer", "--loss", help="conquer (smoothed check loss) or pinball."),
    kernel: str = typer.Option("gaussian", "--kernel",
                               help="gaussian | logistic | uniform | epanechnikov | triangular."),
    bandwidth: str = typer.Option("auto", "--bandwidth", help="'auto' (conquer rule) or one number, for every level, "
                                  "in response units."),
    epochs: int = typer.Option(200, "--epochs", help="Training epochs (minibatch Adam)."),
    seed: int = typer.Option(0, "--seed", help="Random seed (initial weights, minibatches)."),
    time_limit: float = typer.Option(None, "--time-limit", help="Seconds of training at most; a fit "
                                     "stopped by it keeps the weights reached (stopped: time_limit)."),
    save: str = typer.Option(None, "--save", "-o", "--out", help="Save network_ (.npz/.onnx/...)."),
    plot: str = typer.Option(None, "--plot", help="PNG of the quantile curves (one input column)."),
    json_out: bool = JSON_OPT,
) -> None:
    """Quantile regression by one ReLU network, one output per level (ConquerNet).

    The saved network is the fitted model: predict evaluates this same network, whose
    quantiles cannot cross by construction, so every relulab command applies to it.
    Training is a local method: the output says why it stopped, and warns when the loss
    was still falling by more than 1% over its recent epochs (at least 10 epochs and 100
    optimiser steps: recent_epochs in the JSON; raise --epochs).

    Example: relulab fit-quantile data.csv --quantiles 0.05,0.95 --epochs 100 --save q.npz
    """
    from ..estimators import QuantileNetRegressor, recent_drop
    from ..estimators.quantile import BandwidthError, check_quantiles
    from .train import read_csv

    taus = tuple(check_quantiles(parse_floats(quantiles, "--quantiles"), "--quantiles")[0].tolist())
    widths, bw = _widths(hidden), _bandwidth(bandwidth)
    _check_options(loss, kernel, epochs, seed)
    if loss == "pinball" and bw != "auto":  # the library's message named QuantileNetRegressor.fit
        raise RelulabError(f"--bandwidth {bandwidth}: applies to --loss conquer only; the pinball "
                           "loss is not smoothed (leave --bandwidth auto)")
    time_limit = check_seconds(time_limit, "--time-limit")
    X, y = read_csv(data)
    if X.shape[0] < 2:
        raise RelulabError(f"{data}: {X.shape[0]} data row(s); a quantile fit needs at least 2")
    if plot and X.shape[1] != 1:
        raise RelulabError(f"--plot: needs one input column, the data has {X.shape[1]}")
    check_output_targets(save, plot)
    m = QuantileNetRegressor(quantiles=taus, hidden=widths, loss=loss, kernel=kernel, bandwidth=bw,
                             epochs=epochs, random_state=seed, time_limit=time_limit)
    try:
        m.fit(X, y)
    except BandwidthError as e:  # it depends on y's scale: known only now
        raise RelulabError(f"--bandwidth {bandwidth}: {e}") from None
    q = m.predict(X)
    below = (y[:, None] <= q).mean(axis=0)
    if save:
        from ..io import save_model

        save_model(m.network_, save)
    if plot:
        _plot(m, X, y, plot)
    steps_per_epoch = -(-X.shape[0] // max(1, min(int(m.batch_size), X.shape[0])))
    recent = min(max(10, -(-SETTLE_STEPS // steps_per_epoch)), max(1, len(m.loss_curve_) - 1))
    out = {"data": data, "n": int(X.shape[0]), "d": int(X.shape[1]), "quantiles": m.quantiles_,
           "loss": loss, "kernel": kernel, "bandwidth": m.bandwidth_, "epochs_run": m.n_iter_,
           "stopped": m.stopped_, "loss_drop_last_10_epochs": recent_drop(m.loss_curve_, 10),
           "recent_epochs": recent, "loss_drop_recent": recent_drop(m.loss_curve_, recent),
           "mean_check_loss": -m.score(X, y), "fraction_below": below, "network": repr(m.network_),
           "widths": m.network_.widths, "saved": save}
    if json_out:
        print_json(out)
        return
    console.print(f"{loss} quantile network {m.network_!r} on {X.shape[0]} rows, {m.n_iter_} epochs; "
                  f"mean training check loss {out['mean_check_loss']:.6g}")
    if m.stopped_ == "time_limit":
        console.print(f"  [yellow]stopped by --time-limit {time_limit:g} after {m.n_iter_} epoch(s): "
                      "partial training[/yellow]")
    if len(m.loss_curve_) < 2:
        console.print("  [yellow]settledness unknown: one epoch ran; more --epochs may fit better[/yellow]")
    elif out["loss_drop_recent"] > UNSETTLED_DROP:
        console.print(f"  [yellow]not settled: the training loss fell by "
                      f"{100 * out['loss_drop_recent']:.2g}% over the last {recent} epochs "
                      f"({recent * steps_per_epoch} optimiser steps); more --epochs may fit better[/yellow]")
    for t, h, b in zip(m.quantiles_, m.bandwidth_, below, strict=True):
        # y <= fit: with ties (a constant y) every level reads 1.000, as it should
        console.print(f"  level {t:g}: bandwidth {h:.4g}, fraction of y at or below the fit {b:.3f}")
    if save:
        console.print(f"  saved to {save}")


def _plot(m, X: np.ndarray, y: np.ndarray, path: str) -> None:
    from ..errors import require

    if X.shape[1] != 1:
        raise RelulabError(f"--plot: needs one input column, the data has {X.shape[1]}")
    require("matplotlib", "plot")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    g = np.linspace(X.min(), X.max(), 500)[:, None]
    q = m.predict(g).reshape(len(g), -1)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.scatter(X[:, 0], y, s=4, c="grey", alpha=0.4)
    for k, t in enumerate(m.quantiles_):
        ax.plot(g[:, 0], q[:, k], lw=1.5, label=f"q {t:g}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    from ..plot import save_figure

    save_figure(fig, path, dpi=120)
    plt.close(fig)


def register(app: typer.Typer) -> None:
    app.command("fit-quantile")(fit_quantile_cmd)


def tour(console_) -> None:
    """Smoothed check losses and the conquer bandwidth; a small ConquerNet whose fit is a Network."""
    from ..estimators import conquer_bandwidth, smoothed_check_loss

    console_.rule("Statistical estimators")
    console_.print(f"  conquer bandwidth for tau 0.9, n 2000, 3 inputs: {conquer_bandwidth(0.9, 2000, 4):.4f}")
    vals = ", ".join(f"{k} {float(smoothed_check_loss(0.0, 0.9, 0.1, k)):.4f}"
                     for k in ("gaussian", "logistic", "uniform", "epanechnikov", "triangular"))
    console_.print(f"  smoothed check loss at 0 (tau 0.9, h 0.1): {vals}")
    try:
        from ..estimators import QuantileNetRegressor
    except ImportError:
        return
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(300, 1))
    y = X[:, 0] + 0.2 * rng.normal(size=300)
    m = QuantileNetRegressor(quantiles=(0.1, 0.9), hidden=(8,), epochs=20, random_state=0).fit(X, y)
    console_.print(f"  ConquerNet (0.1, 0.9) on 300 points: network_ = {m.network_!r}, "
                   f"predict is network_ bit for bit: {bool(np.array_equal(m.network_(X), m.predict(X)))}")
