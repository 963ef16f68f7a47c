"""Conservation laws of gradient flow for ReLU networks.

For a hidden neuron with incoming weights and bias ``u = (W_k[j, :], b_k[j])`` and
outgoing weights ``v = W_{k+1}[:, j]``, the network is unchanged by
``(u, v) -> (c u, v / c)`` for every ``c > 0``; differentiating the loss along this
symmetry gives ``<u, dL/du> = <v, dL/dv>`` at every parameter, so gradient flow keeps

    ``c_j = ||u||^2 - ||v||^2``

constant (Du, Hu and Lee 2018; Marcotte, Gribonval and Peyre 2023).  Gradient descent with
step ``eta`` breaks it only at second order: one step changes ``c_j`` by exactly
``eta^2 (||dL/du||^2 - ||dL/dv||^2)``, so over a fixed training time ``T = steps * eta``
the drift is ``O(eta)``.  :func:`gd_conservation` runs plain gradient descent on the
mean squared error and records the drift, that bound, and how well the one-step
identity holds in floating point.

Example:
    >>> from relulab import Network
    >>> from relulab.params import conserved_quantities
    >>> net = Network([[[1.0, 2.0]], [[3.0]]], [[2.0], [0.0]])
    >>> conserved_quantities(net).tolist()     # 1 + 4 + 4 - 9
    [0.0]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import RelulabError, is_int_at_least
from ..network import Network

__all__ = ["conserved_quantities", "mse_loss_and_grad", "ConservationRun", "gd_conservation"]


def conserved_quantities(net: Network) -> np.ndarray:
    """For every hidden neuron (layer by layer), ``||incoming weights and bias||^2 -
    ||outgoing weights||^2``.  Exact (Fractions) for an exact network.

    The skip connection touches no hidden neuron and plays no part.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0], [0.0]], [[1.0, 2.0]]], [[1.0, 1.0], [5.0]])
        >>> conserved_quantities(net).tolist()
        [1.0, -3.0]
    """
    if not isinstance(net, Network):
        raise RelulabError(f"conserved_quantities: net must be a relulab Network, got {type(net).__name__}")
    out = []
    for k in range(net.depth - 1):
        W, b, Wn = net.weights[k], net.biases[k], net.weights[k + 1]
        out.append((W * W).sum(axis=1) + b * b - (Wn * Wn).sum(axis=0))
    if not out:
        return np.zeros(0, dtype=object if net.is_exact else float)
    return np.concatenate(out)


_MAX_LR = 1e100  # lr**2 enters the conservation identity; above this it overflows


def _training_data(net: Network, X, Y) -> tuple[np.ndarray, np.ndarray]:
    """``X`` as an ``(n, d)`` and ``Y`` as an ``(n, m)`` float array, both finite, or one
    clear error naming the mismatch."""
    try:
        X = np.atleast_2d(np.asarray(X, dtype=float))
        Y = np.asarray(Y, dtype=float)
    except (TypeError, ValueError):
        raise RelulabError("X and Y must be arrays of numbers") from None
    if X.ndim != 2 or X.shape[1] != net.input_dim:
        raise RelulabError(f"X has shape {X.shape}; the network takes {net.input_dim} inputs")
    if Y.ndim == 1 and net.output_dim == 1:
        Y = Y[:, None]
    if Y.ndim != 2 or Y.shape != (X.shape[0], net.output_dim):
        raise RelulabError(f"Y has shape {Y.shape}; expected ({X.shape[0]}, {net.output_dim}) "
                           "(one row of outputs per row of X)")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(Y))):
        raise RelulabError("X and Y must be finite (NaN or inf found)")
    if X.shape[0] == 0:
        raise RelulabError("X has no rows: the loss of an empty data set is undefined")
    return X, Y


def mse_loss_and_grad(net: Network, X, Y) -> tuple[float, list[np.ndarray], list[np.ndarray]]:
    """The loss ``1/(2n) sum_i ||f(x_i) - y_i||^2`` and its gradients ``(dW_k, db_k)``.

    Backpropagation inside the activation pattern (``relu'(0) = 0``); a skip connection's
    own gradients are not returned (it stays fixed in :func:`gd_conservation`).

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0]], [[1.0]]], [[0.0], [0.0]])
        >>> loss, gW, gb = mse_loss_and_grad(net, [[2.0]], [[1.0]])
        >>> loss, gW[0].tolist(), gW[1].tolist()
        (0.5, [[2.0]], [[2.0]])
    """
    net = net.float()
    X, Y = _training_data(net, X, Y)
    n = X.shape[0]
    Hs = [X]
    masks = []
    H = X
    for W, b in zip(net.weights[:-1], net.biases[:-1], strict=True):
        Z = H @ W.T + b
        masks.append(Z > 0)
        H = np.where(masks[-1], Z, 0.0)
        Hs.append(H)
    out = H @ net.weights[-1].T + net.biases[-1]
    if net.skip is not None:
        out = out + X @ net.skip[0].T + net.skip[1]
    R = (out - Y) / n
    loss = 0.5 * float(np.sum((out - Y) ** 2)) / n
    gW: list[np.ndarray] = [None] * net.depth  # type: ignore[list-item]
    gb: list[np.ndarray] = [None] * net.depth  # type: ignore[list-item]
    G = R
    for k in range(net.depth - 1, -1, -1):
        gW[k] = G.T @ Hs[k]
        gb[k] = G.sum(axis=0)
        if k > 0:
            G = np.where(masks[k - 1], G @ net.weights[k], 0.0)
    return loss, gW, gb


@dataclass(frozen=True)
class ConservationRun:
    """Gradient descent with step ``lr`` for ``steps`` steps and what it did to the
    conserved quantities.

    Attributes:
        drift: ``max_t max_j |c_j(t) - c_j(0)|`` over the run.
        bound: ``max_j sum_t lr^2 (||g_u||^2 + ||g_v||^2)``, which bounds the drift.
        identity_error: ``max_t max_j |c_j(t+1) - c_j(t) - lr^2 (||g_u||^2 - ||g_v||^2)|``:
            how far the one-step identity is from exact (floating-point rounding only).
        loss_start, loss_end: the loss before and after.
        c_start, c_end: the conserved quantities before and after.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> rng = np.random.default_rng(0)
        >>> net = Network([rng.normal(size=(4, 2)), rng.normal(size=(1, 4))],
        ...               [rng.normal(size=4), rng.normal(size=1)])
        >>> X = rng.normal(size=(20, 2)); Y = np.sin(X[:, :1])
        >>> run, _ = gd_conservation(net, X, Y, lr=0.01, steps=50)
        >>> run.steps, run.c_start.shape, bool(run.drift <= run.bound + 1e-12), run.identity_error < 1e-12
        (50, (4,), True, True)
    """

    lr: float
    steps: int
    drift: float
    bound: float
    identity_error: float
    loss_start: float
    loss_end: float
    c_start: np.ndarray
    c_end: np.ndarray

    @property
    def time(self) -> float:
        """Training time ``lr * steps`` (the gradient-flow clock)."""
        return self.lr * self.steps

    def to_dict(self) -> dict:
        return {
            "lr": self.lr,
            "steps": self.steps,
            "time": self.time,
            "drift": self.drift,
            "bound": self.bound,
            "identity_error": self.identity_error,
            "loss_start": self.loss_start,
            "loss_end": self.loss_end,
            "c_start": self.c_start.tolist(),
            "c_end": self.c_end.tolist(),
        }


def gd_conservation(net: Network, X, Y, lr: float, steps: int) -> tuple[ConservationRun, Network]:
    """Train ``net`` by plain gradient descent on the MSE and track the conserved quantities.

    Returns the record and the trained network.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> rng = np.random.default_rng(0)
        >>> net = Network([rng.normal(size=(4, 2)), rng.normal(size=(1, 4))],
        ...               [rng.normal(size=4), rng.normal(size=1)])
        >>> X = rng.normal(size=(20, 2)); Y = np.sin(X[:, :1])
        >>> run, _ = gd_conservation(net, X, Y, lr=0.01, steps=100)
        >>> run.drift <= run.bound * (1 + 1e-9) + 1e-12 and run.loss_end < run.loss_start
        True
    """
    if not is_int_at_least(steps, 0):
        raise RelulabError(f"gd_conservation: steps must be an integer >= 0, got {steps!r}")
    if isinstance(lr, bool) or not isinstance(lr, (int, float, np.integer, np.floating)) \
            or not (np.isfinite(lr) and 0 < lr < _MAX_LR):
        raise RelulabError(f"gd_conservation: lr must lie in (0, {_MAX_LR:g}), got {lr!r}")
    steps = int(steps)
    if not isinstance(net, Network):
        raise RelulabError(f"gd_conservation: expected a relulab Network, got {type(net).__name__}")
    net = net.float()
    X, Y = _training_data(net, X, Y)
    Ws = [np.array(W) for W in net.weights]
    bs = [np.array(b) for b in net.biases]
    skip = net.skip
    cur = net
    c0 = conserved_quantities(cur)
    c_prev = c0
    drift = 0.0
    acc = np.zeros_like(c0)
    ident = 0.0
    loss0 = None

    def diverged(step: int, *arrays) -> None:
        if not all(np.all(np.isfinite(a)) for a in arrays):
            raise RelulabError(f"gradient descent diverged at step {step}: the loss, its gradient or "
                               f"the weights are no longer finite (lr = {lr} is too large for this data)")

    # overflow is caught by the finiteness checks, not leaked as numpy warnings
    with np.errstate(over="ignore", invalid="ignore"):
        for step in range(steps):
            loss, gW, gb = mse_loss_and_grad(cur, X, Y)
            if loss0 is None:
                loss0 = loss
            # per hidden neuron: squared norms of the gradient of its incoming and outgoing weights
            gu = (
                np.concatenate([(gW[k] ** 2).sum(axis=1) + gb[k] ** 2 for k in range(len(Ws) - 1)])
                if len(Ws) > 1
                else np.zeros(0)
            )
            gv = (
                np.concatenate([(gW[k + 1] ** 2).sum(axis=0) for k in range(len(Ws) - 1)])
                if len(Ws) > 1
                else np.zeros(0)
            )
            for k in range(len(Ws)):
                Ws[k] = Ws[k] - lr * gW[k]
                bs[k] = bs[k] - lr * gb[k]
            diverged(step + 1, np.asarray(loss), gu, gv, *Ws, *bs)
            cur = Network(Ws, bs, skip)
            c = conserved_quantities(cur)
            if c.size:
                ident = max(ident, float(np.max(np.abs(c - c_prev - lr**2 * (gu - gv)))))
                acc = acc + lr**2 * (gu + gv)
                drift = max(drift, float(np.max(np.abs(c - c0))))
            diverged(step + 1, c, acc)
            c_prev = c
        loss_end, _, _ = mse_loss_and_grad(cur, X, Y)
        diverged(steps, np.asarray(loss_end))
    if loss0 is None:
        loss0 = loss_end
    run = ConservationRun(
        lr=float(lr),
        steps=int(steps),
        drift=drift,
        bound=float(acc.max()) if acc.size else 0.0,
        identity_error=ident,
        loss_start=float(loss0),
        loss_end=float(loss_end),
        c_start=c0,
        c_end=c_prev,
    )
    return run, cur
