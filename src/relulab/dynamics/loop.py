"""The instrumented training loop: torch does the arithmetic, recorders measure."""

from __future__ import annotations

import numbers
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import RelulabError, is_int_at_least, is_positive_seconds, require
from ..tolerance import TINY
from ._model import DynamicsError, as_module, relu_parts, to_network
from .recorders import Context, resolve
from .trajectory import FlowCheck, Trajectory

__all__ = ["train", "LOSSES", "OPTIMIZERS"]

LOSSES = ("mse", "sse", "logistic", "squared_hinge")
OPTIMIZERS = ("gd", "flow", "sgd", "adam", "adamw")

# Gradient-flow mode accepts a step when the loss decrease matches lr * ||grad||^2 to 10 %:
# a first-order Taylor error of that size means the step is far from the flow's time scale.
FLOW_TOL = 0.1
# Predicted decreases below this fraction of the loss are below float64 resolution of the
# difference L(t) - L(t+1) and cannot be checked.
FLOW_RESOLUTION = 1e-11  # tol: float64 resolution of a loss difference (see above)
# A step across a kink (an activation pattern on the data changes) misses the prediction
# by up to about half at any step size (measured: decreases of 0.49-1.1 times it on runs
# that follow the flow); it must still stay within this share of it.
KINK_TOL = 0.6


def _prepare_data(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    try:
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise DynamicsError(f"X and y must be numeric arrays ({e})") from None
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[0] == 0:
        raise DynamicsError(f"X has shape {X.shape}; need (n, d) with n >= 1")
    if y.ndim == 1:
        y = y[:, None]
    if y.ndim != 2 or y.shape[0] != X.shape[0]:
        raise DynamicsError(f"X has {X.shape[0]} rows but y has shape {y.shape}; need "
                            f"y of shape ({X.shape[0]},) or ({X.shape[0]}, outputs)")
    for name, a in (("X", X), ("y", y)):
        if not np.all(np.isfinite(a)):
            bad = np.argwhere(~np.isfinite(a))[0]
            raise DynamicsError(f"{name} has a non-finite value (NaN or inf) at row {bad[0]}")
    return X, y


def _loss_fn(loss: str | Callable) -> Callable:
    import torch

    if callable(loss):
        return loss
    if loss == "mse":
        return lambda f, y: 0.5 * torch.mean(torch.sum((f - y) ** 2, dim=1))
    if loss == "sse":
        return lambda f, y: 0.5 * torch.sum((f - y) ** 2)
    if loss == "logistic":
        return lambda f, y: torch.mean(torch.nn.functional.softplus(-y * f))
    if loss == "squared_hinge":
        return lambda f, y: torch.mean(torch.relu(1.0 - y * f) ** 2)
    raise DynamicsError(f"unknown loss '{loss}'; use one of {', '.join(LOSSES)} or a "
                        "function (outputs, targets) -> scalar tensor")


def _decayed(model: Any, no_decay: Sequence[str] | str) -> list[Any]:
    """The parameters weight decay acts on: those whose name starts with none of the
    ``no_decay`` prefixes (one string is one prefix: iterated, its letters were prefixes)."""
    prefixes = (no_decay,) if isinstance(no_decay, str) else tuple(no_decay)
    for pre in prefixes:
        if not isinstance(pre, str) or not pre:
            raise DynamicsError(f"no_decay: expected parameter-name prefixes (non-empty strings), got {pre!r}")
    names = [n for n, _ in model.named_parameters()]
    if prefixes and not any(n.startswith(pre) for pre in prefixes for n in names):
        # a typo would leave the decay on everywhere, silently (a list of prefixes may
        # name parameters some models lack, such as "skip")
        raise DynamicsError(f"no_decay: {', '.join(map(repr, prefixes))} starts no parameter's name; "
                            f"the model's parameters are {', '.join(names)}")
    return [p for n, p in model.named_parameters()
            if p.requires_grad and not any(n.startswith(s) for s in prefixes)]


def _optimizer(name: Any, model: Any, lr: float, weight_decay: float, momentum: float,
               decayed: list[Any]):
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    if callable(name) and not isinstance(name, str):
        return name(params), "custom"
    if name in ("gd", "flow", "sgd"):
        return torch.optim.SGD(params, lr=lr, momentum=momentum if name == "sgd" else 0.0), name
    if name == "adam":
        return torch.optim.Adam(params, lr=lr), name
    if name == "adamw":  # decoupled decay on the decayed parameters only
        ids = {id(p) for p in decayed}
        groups = [{"params": [p for p in params if id(p) in ids], "weight_decay": weight_decay},
                  {"params": [p for p in params if id(p) not in ids], "weight_decay": 0.0}]
        return torch.optim.AdamW([g for g in groups if g["params"]], lr=lr), name
    raise DynamicsError(f"unknown optimizer '{name}'; use one of {', '.join(OPTIMIZERS)} or a "
                        "factory params -> torch.optim.Optimizer")


def _device(device: str) -> Any:
    import torch

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except RuntimeError as e:
        raise DynamicsError(f"device '{device}': {e}") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise DynamicsError(f"device '{device}': torch sees no CUDA device (use 'auto' or 'cpu')")
    return dev


def _check_representable(name: str, A: np.ndarray, dtype) -> None:
    """Refuse data that the model's float type cannot hold: in float32, inputs of 1e-50
    became 0 (a run "completed" on all-zero data) and 1e90 became inf."""
    import torch

    if dtype == torch.float64:
        return
    info = torch.finfo(dtype)
    a = np.abs(A[A != 0])
    if a.size and (a.max() > info.max or a.min() < info.tiny):
        raise DynamicsError(f"{name} has entries of size {a.min():.3g} to {a.max():.3g}, outside what the "
                            f"model's {str(dtype).replace('torch.', '')} holds ({info.tiny:.3g} to "
                            f"{info.max:.3g}): rescale the data or use a float64 model")


def train(net_or_module: Any, X: Any, y: Any, *, loss: str | Callable = "mse",
          optimizer: Any = "gd", lr: float = 1e-2, steps: int = 1000,
          batch_size: int | None = None, momentum: float = 0.0, weight_decay: float = 0.0,
          no_decay: Sequence[str] | str = (), noise: float = 0.0, record: Sequence[Any] = ("norms",),
          every: int = 10, seed: int = 0, stop: Callable[[Context, float], bool] | None = None,
          loss_tol: float | None = None, time_limit: float | None = None,
          flow_tol: float = FLOW_TOL, device: str = "auto", copy: bool = True,
          full_loss: bool = True) -> Trajectory:
    """Train a network with torch and record what happens.

    Args:
        net_or_module: a relulab :class:`~relulab.Network` (trained as
            ``relulab.io.torch.to_torch(net)``, skip kept trainable) or a torch module
            (:func:`relulab.dynamics.mlp` builds ReLU MLPs with small or mean-field
            initialisation); copied unless ``copy=False``.
        X, y: data ``(n, d)`` and ``(n,)`` or ``(n, outputs)``.
        loss: ``"mse"`` (mean of ``(1/2)||f - y||^2``), ``"sse"`` (sum of the same),
            ``"logistic"``, ``"squared_hinge"`` (labels +-1) or ``f(outputs, y)``.
        optimizer: ``"gd"`` (full batch), ``"flow"`` (full-batch GD whose every recorded
            step is checked against gradient flow, see :class:`FlowCheck`), ``"sgd"``
            (minibatches of ``batch_size``, each epoch a fresh permutation, with
            ``momentum``), ``"adam"``, ``"adamw"``, or a factory
            ``params -> torch.optim.Optimizer``.
        weight_decay: adds ``(weight_decay/2) ||theta||^2`` to the objective (coupled);
            for ``"adamw"`` it is AdamW's decoupled decay.  Parameters whose names start
            with one of ``no_decay`` (e.g. ``"skip"``, ``"body.0.bias"``) are not decayed.
        noise: Langevin temperature ``tau``: after every step ``theta += sqrt(2 lr tau) xi``
            (noisy SGD/GD).
        record: recorders (names, objects, ``(name, fn)`` pairs, see
            :mod:`relulab.dynamics.recorders`), measured at step 0, every ``every``
            steps and at the end.
        stop: ``stop(ctx, loss) -> bool`` checked at recorded steps; ``loss_tol`` stops
            at the first recorded step whose loss is at most that; ``time_limit``
            (seconds) stops early, partial.  A non-finite loss is caught at the next
            recorded step (status ``"diverged"``): losses stay on the device in between.
        device: ``"auto"`` (a GPU when torch sees one), ``"cpu"``, ``"cuda"``...
        full_loss: with minibatches, evaluate the full-data objective at every record
            (``recorded_loss``); False records the minibatch loss instead (online SGD
            over a large pool of fresh samples, where a full pass per record dominates).

    Returns:
        A :class:`Trajectory`.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> net = Network([[[1.0], [-1.0]], [[0.5, 0.5]]], [[0.0, 0.0], [0.0]])
        >>> t = train(net, [[1.0], [2.0]], [1.0, 3.0], lr=0.1, steps=200, record=[])
        >>> bool(t.final_loss < 1e-3 < t.loss[0])
        True
    """
    torch = require("torch", "torch")
    X, y = _prepare_data(X, y)
    model = as_module(net_or_module)
    if copy:
        import copy as _copy

        model = _copy.deepcopy(model)
    recs = resolve(record)
    for name, v, lo in (("steps", steps, 0), ("every", every, 1)):
        if not is_int_at_least(v, lo):
            # a float step count would never equal the loop's integer step: no end
            raise DynamicsError(f"{name}={v!r}: need an integer >= {lo}")
    steps, every = int(steps), int(every)
    if batch_size is not None and not is_int_at_least(batch_size, 1):
        raise DynamicsError(f"batch_size={batch_size!r}: need an integer >= 1 or None")
    if not is_int_at_least(seed, 0):
        raise DynamicsError(f"seed={seed!r}: need an integer >= 0")
    if isinstance(flow_tol, bool) or not (isinstance(flow_tol, numbers.Real) and np.isfinite(flow_tol)
                                          and flow_tol > 0):
        raise DynamicsError(f"flow_tol={flow_tol!r}: need a finite number > 0")
    if isinstance(loss, str) and loss in ("logistic", "squared_hinge") and not np.all(np.abs(y) == 1.0):
        bad = np.unique(y[np.abs(y) != 1.0])[:3].tolist()
        raise DynamicsError(f"y: loss '{loss}' needs labels -1 or +1, got {bad} (for 0/1 labels pass 2 * y - 1)")
    if not (isinstance(lr, numbers.Real) and not isinstance(lr, bool) and np.isfinite(lr) and lr > 0):
        raise DynamicsError(f"lr={lr!r}: need a positive finite number (the learning rate)")
    for name, v in (("noise", noise), ("weight_decay", weight_decay), ("momentum", momentum)):
        if not (isinstance(v, numbers.Real) and not isinstance(v, bool) and np.isfinite(v) and v >= 0):
            raise DynamicsError(f"{name}={v!r}: need a finite number >= 0")
    if momentum and optimizer != "sgd":
        raise DynamicsError(f"momentum={momentum!r}: momentum applies to optimizer='sgd' only "
                            f"(got {optimizer!r}), where it would be ignored")
    if batch_size is not None and optimizer in ("gd", "flow"):
        raise DynamicsError(f"batch_size={batch_size!r}: optimizer={optimizer!r} uses the full batch, "
                            "where batch_size would be ignored; use optimizer='sgd' for minibatches")
    if stop is not None and not callable(stop):
        raise DynamicsError(f"stop={stop!r}: need a function (ctx, loss) -> bool or None")
    if time_limit is not None and not is_positive_seconds(time_limit):
        raise DynamicsError(f"time_limit={time_limit!r}: need a positive number of seconds or None")
    if loss_tol is not None and not (isinstance(loss_tol, numbers.Real) and not isinstance(loss_tol, bool)
                                     and np.isfinite(loss_tol)):
        raise DynamicsError(f"loss_tol={loss_tol!r}: need a finite number or None")  # NaN never fired
    for r in recs:
        r.check(model, X)
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise DynamicsError("the module has no trainable parameters")
    dev = _device(device)
    model.to(dev)
    dtype = params[0].dtype
    for name, A in (("X", X), ("y", y)):
        _check_representable(name, A, dtype)
    Xt = torch.as_tensor(X, dtype=dtype, device=dev)
    yt = torch.as_tensor(y, dtype=dtype, device=dev)
    with torch.no_grad():
        try:
            out = model(Xt[:1])
        except RuntimeError as e:  # torch's "mat1 and mat2 shapes cannot be multiplied"
            raise DynamicsError(f"the model cannot read X of shape {tuple(X.shape)} "
                                f"({str(e).splitlines()[0]})") from None
    if out.reshape(1, -1).shape[1] != y.shape[1]:
        raise DynamicsError(f"the model has {out.reshape(1, -1).shape[1]} outputs but y has "
                            f"{y.shape[1]} columns")
    lossf = _loss_fn(loss)
    decayed = _decayed(model, no_decay)
    opt, opt_name = _optimizer(optimizer, model, lr, weight_decay, momentum, decayed)
    coupled = weight_decay > 0 and opt_name != "adamw"
    n = X.shape[0]
    full = opt_name in ("gd", "flow") or batch_size is None or int(batch_size) >= n
    bs = n if full else int(batch_size)
    gen = torch.Generator(device="cpu").manual_seed(int(seed))
    noise_std = float(np.sqrt(2.0 * lr * noise)) if noise > 0 else 0.0

    def objective(xb: Any, yb: Any) -> Any:
        val = lossf(model(xb).reshape(xb.shape[0], -1), yb)
        if coupled:
            val = val + 0.5 * weight_decay * sum(torch.sum(p * p) for p in decayed)
        return val

    # losses stay on the device until a record or the end: no host sync per step on a GPU
    losses: list[Any] = []
    rec_steps: list[int] = []
    rec_loss: list[float] = []
    values: dict[str, list[Any]] = {r.name: [] for r in recs}
    flow_pred: list[tuple[int, float]] = []  # (step, predicted decrease lr ||grad||^2)
    # gradient flow's check skips steps across which an activation pattern on the data
    # changes: the gradient jumps there, and the first-order prediction missed the
    # decrease by 30% at every step size (GD followed an RK4 flow to 0.1%); the patterns
    # are read by hooks on the model's ReLU modules during the objective's forward pass
    # (registered around that forward pass only: recorders read the model meanwhile, and
    # relulab's own readers refuse a module with hooks)
    kink_steps: set[int] = set()
    masks: dict[str, Any] = {"now": [], "prev": None}
    relus = [m for m in model.modules() if isinstance(m, torch.nn.ReLU)] if opt_name == "flow" else []

    def keep_mask(mod: Any, inp: Any, out: Any) -> None:
        masks["now"].append(out.detach() > 0)
    perm = torch.randperm(n, generator=gen)
    pos = 0
    status = "completed"
    t0 = time.perf_counter()

    def do_record(step: int, value: float) -> bool:
        ctx = Context(model=model, X=X, step=step, deadline=None if time_limit is None else t0 + time_limit)
        rec_steps.append(step)
        rec_loss.append(value)
        for r in recs:
            values[r.name].append(r.record(ctx))
        return stop is not None and bool(stop(ctx, value))

    try:
        step = 0
        while True:
            recording = step % every == 0 or step == steps
            if full:
                xb, yb = Xt, yt
            else:
                if pos + bs > n:
                    perm, pos = torch.randperm(n, generator=gen), 0
                idx = perm[pos:pos + bs].to(dev)
                pos += bs
                xb, yb = Xt[idx], yt[idx]
            opt.zero_grad(set_to_none=True)
            masks["now"], hooks = [], [m.register_forward_hook(keep_mask) for m in relus]
            try:
                val = objective(xb, yb)
            finally:
                for h in hooks:
                    h.remove()
            if relus:
                prev = masks["prev"]
                if prev is not None and (len(prev) != len(masks["now"]) or any(
                        not torch.equal(a, b) for a, b in zip(prev, masks["now"], strict=False))):
                    kink_steps.add(step - 1)
                masks["prev"] = masks["now"]
            losses.append(val.detach())
            if recording:
                lv = float(losses[-1])
                if not np.isfinite(lv):
                    status = "diverged"
                    break
                if full or not full_loss:
                    fl = lv
                else:
                    with torch.no_grad():
                        fl = float(objective(Xt, yt))
                if do_record(step, fl):
                    status = "stopped"
                    break
            if step == steps:
                break
            # (the full-data loss, as recorded: one minibatch's loss of 0 stopped a run at
            # step 0 whose recorded loss was 22)
            if recording and loss_tol is not None and fl <= loss_tol:
                status = "stopped"
                break
            if time_limit is not None and time.perf_counter() - t0 > time_limit:
                if not recording:
                    # the record holds the full-data objective, as every other record does
                    if full or not full_loss:
                        do_record(step, float(losses[-1]))
                    else:
                        with torch.no_grad():
                            do_record(step, float(objective(Xt, yt)))
                status = "time_limit"
                break
            val.backward()
            if opt_name == "flow" and recording:
                g2 = float(sum(torch.sum(p.grad * p.grad) for p in params if p.grad is not None))
                flow_pred.append((step, lr * g2))
            opt.step()
            if noise_std > 0:
                with torch.no_grad():
                    for p in params:
                        p.add_(torch.randn(p.shape, generator=gen, dtype=p.dtype).to(dev)
                               * noise_std)
            step += 1
    except KeyboardInterrupt:
        status = "interrupted"
    loss_arr = (torch.stack(losses).cpu().numpy().astype(np.float64) if losses
                else np.zeros(0))
    flow = None
    if opt_name == "flow":
        due = [(k, pred) for k, pred in flow_pred if k + 1 < loss_arr.size
               and pred > FLOW_RESOLUTION * max(abs(loss_arr[k]), TINY)]
        e = np.asarray([abs((loss_arr[k] - loss_arr[k + 1]) - pred) / pred
                        for k, pred in due if k not in kink_steps])
        # A kink step is excused from the tolerance, not from following the prediction:
        # across a kink the decrease stayed within (0.5, 1.1) of the prediction at every
        # step size that followed the flow, while a step that overshoots raises the loss
        # (lr = 1: 0.57 -> 3.39 -> 6.61 with ok=True, as every such step crossed a kink)
        # or falls by a small share of the prediction (lr = 0.3: 6 % of a predicted 5.68
        # on a loss of 1.42, 21x the flow's loss a step later).  A kink step fails the
        # check when its decrease misses the prediction by more than KINK_TOL of it, or by
        # more than flow_tol of the loss itself: a miss of half a tiny predicted decrease
        # (small steps chattering across a kink) leaves the loss on the flow's path, one
        # of half the loss (lr = 0.1: 65 % off the flow two steps in) does not.
        kink_failures = sum(1 for k, pred in due if k in kink_steps
                            and not abs((loss_arr[k] - loss_arr[k + 1]) - pred)
                            <= min(KINK_TOL * pred, flow_tol * abs(loss_arr[k])))
        flow = FlowCheck(checked=int(e.size), max_rel_error=float(e.max()) if e.size else 0.0,
                         median_rel_error=float(np.median(e)) if e.size else 0.0,
                         tol=float(flow_tol),
                         ok=bool(e.size and e.max() <= flow_tol and kink_failures == 0),
                         kinks=sum(1 for k, _ in due if k in kink_steps), kink_failures=kink_failures)
    records = {}
    for name, vals in values.items():
        try:
            records[name] = np.stack([np.asarray(v) for v in vals]) if vals else np.zeros((0,))
        except ValueError:  # shapes differ between steps
            records[name] = np.array(vals, dtype=object)
    net = None
    model.to("cpu")
    finite = all(bool(torch.isfinite(p).all()) for p in model.parameters())
    if finite and relu_parts(model) is not None:  # a diverged run has no network
        try:
            net = to_network(model)
        except RelulabError:
            # finite weights whose forward pass overflows float64 (lr = 1 running away):
            # the trajectory is kept, without a network, as for a diverged run
            net = None
    return Trajectory(loss=loss_arr, record_steps=np.asarray(rec_steps, dtype=int),
                      recorded_loss=np.asarray(rec_loss), records=records,
                      optimizer=opt_name, lr=float(lr), batch_size=bs, steps=int(loss_arr.size) - 1,
                      seed=int(seed), device=str(dev), status=status,
                      seconds=time.perf_counter() - t0, flow=flow, network=net, _model=model)
