"""Building, training and exporting the torch networks behind the estimators.

One multilayer perceptron (Linear layers with one activation between them, float64) is
trained by minibatch Adam on standardised inputs and responses.  Everything random (the
initial weights, the minibatch order) comes from one integer seed, so a fit is
reproducible.  Export folds the standardisation into the first and last layers and
returns a :class:`~relulab.Network` that computes the fitted function of the raw input.
"""

from __future__ import annotations

import contextlib
import numbers
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import RelulabError, require
from ..limits import check_bytes
from ..network import Network

ACTIVATIONS = ("relu", "softplus", "gelu", "silu")


def TRAIN_DTYPE(torch: Any) -> Any:  # noqa: N802  (a constant that needs the lazy torch)
    """Training runs in float32: about a third faster per step than float64 on CPU, and
    minibatch Adam's noise is far above float32 rounding.  Fitted weights are then used in
    float64 (predict and ``network_`` compute with the same float64 numbers)."""
    return torch.float32


def torch_module() -> Any:
    return require("torch", "torch")


@contextlib.contextmanager
def one_thread(torch: Any) -> Iterator[None]:
    """Train on one thread: the networks are small, so threads only add contention."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


# bytes per parameter while training: float32 weights, gradients and Adam's two moments,
# then the float64 network exported from them
BYTES_PER_PARAM = 32
# bytes per unit of a layer's output per row of a minibatch: the pre-activation and the
# activation (float32), each kept for the backward pass and met by a gradient of its size
BYTES_PER_ACTIVATION = 16


def check_model_bytes(sizes: Sequence[int], members: int, batch_rows: int = 0,
                      extra: float = 0.0) -> None:
    """Refuse (:class:`relulab.limits.ResourceLimitError`) ``members`` MLPs of layer sizes
    ``sizes`` that would not fit the memory budget while they train on minibatches of
    ``batch_rows`` rows, with ``extra`` bytes of data beside them, before torch tries (it
    failed with its own allocation error, or ran past the budget: the parameters alone
    were counted, and a 2048-wide layer on full batches of 60,000 rows took 1.8 GB).

    Example:
        >>> check_model_bytes([1, 64, 64, 3], 1, batch_rows=256)
    """
    n_params = sum((a + 1) * b for a, b in zip(sizes[:-1], sizes[1:], strict=True))
    n_units = sum(sizes[1:])
    need = members * (float(n_params) * BYTES_PER_PARAM + float(batch_rows) * n_units * BYTES_PER_ACTIVATION)
    check_bytes(need + float(extra), f"training {members} network(s) of layer sizes {list(sizes)}"
                + (f" on minibatches of {batch_rows} rows" if batch_rows else ""))


def build_mlp(torch: Any, d_in: int, hidden: Sequence[int], d_out: int, activation: str, seed: int,
              batch_rows: int = 0, extra: float = 0.0) -> Any:
    """``nn.Sequential`` Linear-act-...-Linear in float32 (the training precision),
    initialised from ``seed``; callers convert it to float64 after training.  The memory
    check counts minibatches of ``batch_rows`` rows and ``extra`` bytes of data."""
    nn = torch.nn
    act = {"relu": nn.ReLU, "softplus": nn.Softplus, "gelu": nn.GELU, "silu": nn.SiLU}[activation]
    layers: list[Any] = []
    sizes = [d_in, *hidden]
    check_model_bytes([d_in, *hidden, d_out], 1, batch_rows, extra)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for a, b in zip(sizes[:-1], sizes[1:], strict=True):
            layers += [nn.Linear(a, b, dtype=TRAIN_DTYPE(torch)), act()]
        layers.append(nn.Linear(sizes[-1], d_out, dtype=TRAIN_DTYPE(torch)))
    return nn.Sequential(*layers)


@dataclass
class TrainLog:
    """What a training run did: mean training loss per epoch, whether it stopped early, and
    the epoch (from 1) at which the loss or the weights stopped being finite (``None``: never).

    ``stopped`` says why it ended: ``"converged"`` (the ``tol`` rule), ``"epochs"`` (all
    epochs run), ``"time_limit"`` (the last epoch may be cut short; its loss is the mean
    over the rows it reached) or ``"diverged"``.
    """

    loss_curve: list[float]
    n_epochs: int
    converged: bool
    diverged_at: int | None = None
    stopped: str = "epochs"


def recent_drop(loss_curve: Sequence[float], epochs: int = 10) -> float:
    """The relative fall of the epoch loss over the last ``epochs`` epochs (0 with fewer
    than two epochs): how far from settled a run that was not stopped by ``tol`` is.

    Example:
        >>> recent_drop([4.0, 2.0, 1.0], epochs=2)
        0.75
    """
    try:
        c = [float(v) for v in loss_curve]
    except (TypeError, ValueError):
        raise RelulabError(f"recent_drop: loss_curve must be a sequence of numbers, got {loss_curve!r:.60}") from None
    if not (isinstance(epochs, numbers.Integral) and not isinstance(epochs, bool) and epochs >= 1):
        raise RelulabError(f"recent_drop: epochs must be an integer >= 1, got {epochs!r}")
    k = min(int(epochs), len(c) - 1)
    if k < 1:
        return 0.0
    before = c[-k - 1]
    return float((before - c[-1]) / abs(before)) if before != 0 else 0.0


def _all_finite(torch: Any, params: list[Any]) -> bool:
    """Whether every parameter tensor is finite."""
    with torch.no_grad():
        return all(bool(torch.isfinite(p).all()) for p in params)


def build_ensemble(torch: Any, B: int, d_in: int, hidden: Sequence[int], d_out: int, seed: int,
                   batch_rows: int = 0, extra: float = 0.0) -> list[Any]:
    """Parameters ``[W_1, b_1, ...]`` of ``B`` ReLU MLPs stacked on a leading axis.

    ``W_l`` has shape ``(B, out, in)``; each member is initialised like ``nn.Linear``
    (uniform on ``+-1/sqrt(fan_in)``), all from one generator seeded by ``seed``.  The
    memory check counts minibatches of ``batch_rows`` rows and ``extra`` bytes of data.
    """
    g = torch.Generator().manual_seed(int(seed))
    sizes = [d_in, *hidden, d_out]
    check_model_bytes(sizes, B, batch_rows, extra)
    params = []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        bound = 1.0 / np.sqrt(a)
        W = (torch.rand(B, b, a, generator=g, dtype=TRAIN_DTYPE(torch)) * 2 - 1) * bound
        c = (torch.rand(B, b, generator=g, dtype=TRAIN_DTYPE(torch)) * 2 - 1) * bound
        params += [W.requires_grad_(), c.requires_grad_()]
    return params


def ensemble_forward(torch: Any, params: list[Any], X: Any) -> Any:
    """All members on the same rows: ``(batch, d)`` -> ``(B, batch, out)``."""
    H = X.unsqueeze(0).expand(params[0].shape[0], -1, -1)
    n_layers = len(params) // 2
    for k in range(n_layers):
        W, c = params[2 * k], params[2 * k + 1]
        H = torch.baddbmm(c.unsqueeze(1), H, W.transpose(1, 2))
        if k < n_layers - 1:
            H = torch.relu(H)
    return H


def train(
    torch: Any,
    params: Any,
    forward: Callable[[Any], Any],
    objective: Callable[[Any, Any, Any], Any],
    X: np.ndarray,
    Y: np.ndarray,
    weights: np.ndarray | None,
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    weight_decay: float,
    tol: float,
    n_iter_no_change: int,
    seed: int,
    time_limit: float | None = None,
) -> TrainLog:
    """Minibatch Adam on ``sum_b mean_i w_bi * objective(forward(X_i), Y_i)``.

    ``objective(out, y, idx)`` returns one loss per row, shape ``(batch,)``, or per member
    and row, ``(B, batch)`` for an ensemble trained in one go.  ``weights`` is ``None``,
    ``(n,)`` or ``(B, n)``; each row of weights is rescaled to mean 1.  Adam acts
    elementwise, so the members of an ensemble train exactly as if trained one by one on
    the same minibatches.  Training stops when the epoch's mean loss has not improved by
    ``tol`` for ``n_iter_no_change`` epochs in a row (scikit-learn's MLP rule); ``tol <= 0``
    trains all ``epochs``.  Training stops at the first epoch whose mean loss or weights are
    not finite (a diverged run) and records it in ``TrainLog.diverged_at``.  With
    ``time_limit`` (seconds) it stops after the first minibatch that ends past the limit.
    """
    n = X.shape[0]
    dt = np.float32 if TRAIN_DTYPE(torch) == torch.float32 else np.float64
    Xt = torch.from_numpy(np.ascontiguousarray(X, dtype=dt))
    Yt = torch.from_numpy(np.ascontiguousarray(Y, dtype=dt))
    Wt = None
    if weights is not None:
        w = np.asarray(weights, dtype=np.float64)
        Wt = torch.from_numpy((w * (n / w.sum(axis=-1, keepdims=True))).astype(dt))
    bs = max(1, min(int(batch_size), n))
    params = list(params)
    try:   # the fused CPU kernel does one pass over all parameters per step
        opt = torch.optim.Adam(params, lr=lr, weight_decay=weight_decay, fused=True)
    except (RuntimeError, TypeError, ValueError):
        opt = torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)
    rng = np.random.default_rng(seed)
    # a minibatch above this many rows is one step in blocks whose gradients add up, the
    # clock read between blocks (one full-batch step of 30 members took 2-7 s past 0.2 s)
    chunk = max(1, int(STEP_BLOCK_FLOPS // (6 * sum(p.numel() for p in params))))
    curve: list[float] = []
    best, stall, converged, diverged = np.inf, 0, False, None
    deadline = None if time_limit is None else time.monotonic() + float(time_limit)
    out_of_time = False
    for epoch in range(1, int(epochs) + 1):
        perm = torch.from_numpy(rng.permutation(n))
        total, rows = 0.0, 0
        for start in range(0, n, bs):
            idx = perm[start : start + bs]
            if len(idx) <= chunk:
                per_row = objective(forward(Xt[idx]), Yt[idx], idx)
                if Wt is not None:
                    per_row = per_row * Wt[..., idx]
                loss = per_row.mean(dim=-1).sum()
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                total += float(loss.detach()) * len(idx)
                rows += len(idx)
            else:
                done, loss_sum, per_row = _chunked_step(opt, params, forward, objective, Xt, Yt, Wt, idx,
                                                        chunk, deadline)
                total += loss_sum
                rows += done
                if done < len(idx):
                    out_of_time = True
                    break
            if deadline is not None and time.monotonic() > deadline and \
                    (rows < n or epoch < int(epochs)):   # past the limit with work left
                out_of_time = True
                break
        members = 1 if per_row.ndim == 1 else per_row.shape[0]
        curve.append(total / rows / members)
        if not (np.isfinite(curve[-1]) and _all_finite(torch, params)):
            diverged = epoch
            break
        if out_of_time:
            break
        if tol > 0:
            if curve[-1] > best - tol:
                stall += 1
            else:
                stall = 0
            best = min(best, curve[-1])
            if stall >= n_iter_no_change:
                converged = True
                break
    stopped = ("diverged" if diverged is not None else "converged" if converged
               else "time_limit" if out_of_time else "epochs")
    return TrainLog(curve, len(curve), converged, diverged, stopped)


#: about this many floating-point operations (forward and backward) per block of a step
STEP_BLOCK_FLOPS = 3e8


def _chunked_step(opt: Any, params: list, forward: Callable, objective: Callable, Xt: Any, Yt: Any,
                  Wt: Any, idx: Any, chunk: int, deadline: float | None) -> tuple[int, float, Any]:
    """One Adam step on the minibatch ``idx`` in blocks of ``chunk`` rows: each block's
    ``sum / len(idx)`` adds its share of the minibatch mean's gradient.  Past
    ``deadline`` the step is taken on the blocks done (the rows are in random order, so
    they are a smaller minibatch; the gradient is rescaled to their mean).  Returns
    (rows done, the loss summed over them and the members, the last block's per-row loss)."""
    m = len(idx)
    opt.zero_grad(set_to_none=True)
    done, loss_sum, per_row = 0, 0.0, None
    for s in range(0, m, chunk):
        sub = idx[s : s + chunk]
        per_row = objective(forward(Xt[sub]), Yt[sub], sub)
        if Wt is not None:
            per_row = per_row * Wt[..., sub]
        (per_row.sum(dim=-1).sum() / m).backward()
        loss_sum += float(per_row.detach().sum())
        done += len(sub)
        if deadline is not None and time.monotonic() > deadline:
            break
    if done < m:
        for p in params:
            if p.grad is not None:
                p.grad.mul_(m / done)
    opt.step()
    return done, loss_sum, per_row


def predict_raw(torch: Any, model: Any, X: np.ndarray) -> np.ndarray:
    """The model's outputs on standardised inputs, as a float64 array (n, out)."""
    with torch.no_grad():
        return model(torch.from_numpy(np.ascontiguousarray(X, dtype=np.float64))).numpy()


def linear_layers(model: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(W, b)`` of every Linear layer of ``model`` in order, as float64 arrays."""
    out = []
    for m in model:
        if hasattr(m, "weight") and m.weight.ndim == 2:
            out.append((m.weight.detach().numpy().astype(np.float64), m.bias.detach().numpy().astype(np.float64)))
    return out


def export_network(
    layers: list[tuple[np.ndarray, np.ndarray]],
    x_mean: np.ndarray,
    x_scale: np.ndarray,
    out_map: tuple[np.ndarray, np.ndarray] | None,
    extra_relu_head: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> Network:
    """A ReLU :class:`Network` computing the fitted function of the raw input.

    ``x -> (x - x_mean) / x_scale`` is folded into the first layer.  ``extra_relu_head``
    ``(A, a, C)`` appends the layer ``z -> C relu(A z + a)`` after the trained network's
    output ``z`` (the non-crossing quantile head; ``A`` may be a scipy sparse matrix);
    ``out_map`` ``(M, m)`` then maps the output affinely (``y_mean + y_scale * q``; ``M``
    a matrix or a scalar).
    """
    Ws = [W.copy() for W, _ in layers]
    bs = [b.copy() for _, b in layers]
    bs[0] = bs[0] - Ws[0] @ (x_mean / x_scale)
    Ws[0] = Ws[0] / x_scale[None, :]
    if extra_relu_head is not None:
        A, a, C = extra_relu_head
        # the head's affine map A z + a composes with the last trained layer: no new ReLU
        # between them, so the head's ReLU layer *is* the next hidden layer.
        W_last, b_last = Ws[-1], bs[-1]
        Ws[-1], bs[-1] = np.asarray(A @ W_last), np.asarray(A @ b_last) + a
        Ws.append(C)
        bs.append(np.zeros(C.shape[0]))
    if out_map is not None:
        M, m = out_map
        if np.ndim(M) == 0:   # y_scale: the same numbers as y_scale * eye, without the matmul
            Ws[-1], bs[-1] = M * Ws[-1], M * bs[-1] + m
        else:
            Ws[-1], bs[-1] = M @ Ws[-1], M @ bs[-1] + m
    return Network(Ws, bs)
