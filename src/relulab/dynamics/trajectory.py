"""The result of a recorded training run, and the gradient-flow step-size check."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..network import Network
from ..results import Result, to_jsonable
from ._model import DynamicsError

__all__ = ["Trajectory", "FlowCheck", "PatternChanges"]


@dataclass(frozen=True)
class FlowCheck(Result):
    """Whether gradient descent followed gradient flow: at every recorded step the loss
    decrease ``L(t) - L(t+1)`` is compared with the first-order prediction
    ``lr * ||grad||^2``; ``max_rel_error`` is the largest relative difference over the
    ``checked`` steps and ``ok`` says it stayed within ``tol``.  Skipped: steps whose
    predicted decrease is below float resolution, and the ``kinks`` steps across which an
    activation pattern on the data changed (the gradient jumps there, so the prediction
    misses by a share that no step size shrinks; read through the model's ``nn.ReLU``
    modules).  A kink step is still held to the prediction, more loosely: ``kink_failures``
    counts those whose decrease misses it by more than 60 % of it (``KINK_TOL``) or by
    more than ``tol`` of the loss itself (a step that overshoots), and ``ok`` needs none.

    Example:
        >>> import numpy as np
        >>> from relulab.dynamics import mlp, train
        >>> t = train(mlp([3, 8, 1], seed=0), np.eye(3), np.array([1.0, 2.0, 3.0]), optimizer="flow", lr=0.01, steps=20)
        >>> t.flow.ok, t.flow.checked > 0, t.flow.tol
        (True, True, 0.1)
    """

    checked: int
    max_rel_error: float
    median_rel_error: float
    tol: float
    ok: bool
    kinks: int = 0
    kink_failures: int = 0


@dataclass(frozen=True)
class PatternChanges(Result):
    """Where activation patterns on the training data change: ``steps`` the recorded
    steps at which some neuron's pattern differs from the previous record,
    ``per_neuron[j]`` those steps for neuron ``j``, ``flips[j]`` its number of flipped
    (point, neuron) entries in total.

    Example:
        >>> import numpy as np
        >>> from relulab.dynamics import mlp, train
        >>> t = train(mlp([1, 2, 1], seed=0), np.array([[-1.0], [1.0]]), np.array([1.0, 1.0]), steps=3, every=1, record=["patterns"])
        >>> pc = t.pattern_changes()
        >>> type(pc).__name__, pc.flips.shape
        ('PatternChanges', (2,))
    """

    steps: np.ndarray
    per_neuron: tuple[tuple[int, ...], ...]
    flips: np.ndarray


@dataclass(frozen=True)
class Trajectory(Result):
    """A recorded training run.

    ``loss[t]`` is the objective the optimiser saw at step ``t`` (the full-data loss plus
    the coupled weight-decay penalty for full-batch methods, the minibatch loss for
    SGD-like ones), for ``t = 0 .. steps`` (the last entry is after the final update);
    ``record_steps`` the recorded steps, ``recorded_loss`` the full-data objective there,
    and ``records[name]`` every recorder's values stacked over the recorded steps.
    ``status`` is ``"completed"`` (all steps), ``"stopped"`` (the stop rule fired),
    ``"time_limit"``, ``"diverged"`` (non-finite loss) or ``"interrupted"``; the last
    three mark the run ``partial``.

    Example:
        >>> import numpy as np
        >>> from relulab.dynamics import mlp, train
        >>> t = train(mlp([2, 3, 1], seed=0), np.eye(2), np.ones(2), steps=4, every=2)
        >>> t.status, t.partial, t.loss.shape, t.record_steps.tolist(), sorted(t.records)
        ('completed', False, (5,), [0, 2, 4], ['norms'])
    """

    loss: np.ndarray
    record_steps: np.ndarray
    recorded_loss: np.ndarray
    records: dict[str, Any]
    optimizer: str
    lr: float
    batch_size: int
    steps: int
    seed: int
    device: str
    status: str
    seconds: float
    flow: FlowCheck | None = None
    network: Network | None = None
    _model: Any = field(default=None, repr=False, compare=False)

    @property
    def partial(self) -> bool:
        return self.status in ("time_limit", "diverged", "interrupted")

    @property
    def final_loss(self) -> float:
        return float(self.loss[-1])

    @property
    def model(self) -> Any:
        """The trained torch module (not serialised)."""
        return self._model

    def series(self, name: str) -> np.ndarray:
        """The stacked values of recorder ``name`` (``"loss"``: the per-step loss)."""
        if name == "loss":
            return self.loss
        if name not in self.records:
            raise DynamicsError(f"no recorder '{name}' in this trajectory; recorded: "
                                f"{', '.join(self.records) or '(none)'}")
        return self.records[name]

    def pattern_changes(self, name: str = "patterns") -> PatternChanges:
        """The recorded steps at which activation patterns changed (needs the
        ``"patterns"`` recorder).

        Example:
            >>> import numpy as np
            >>> from relulab.dynamics import mlp, train
            >>> t = train(mlp([1, 3, 1], seed=0), np.array([[1.0], [-1.0]]), [1.0, 1.0],
            ...           steps=5, record=["patterns"])
            >>> t.pattern_changes().flips.shape
            (3,)
        """
        P = np.asarray(self.series(name), dtype=bool)
        if P.ndim != 3:
            raise DynamicsError(f"recorder '{name}' is not an activation-pattern record")
        diff = P[1:] != P[:-1]  # (records - 1, n, neurons)
        per = diff.any(axis=1)  # (records - 1, neurons)
        rs = self.record_steps[1:]
        per_neuron = tuple(tuple(int(s) for s in rs[per[:, j]]) for j in range(P.shape[2]))
        return PatternChanges(steps=rs[per.any(axis=1)], per_neuron=per_neuron,
                              flips=diff.sum(axis=(0, 1)))

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["partial"] = self.partial
        d["final_loss"] = to_jsonable(self.final_loss)   # inf of a diverged run as "inf", as elsewhere
        d["records"] = {k: to_jsonable(v) for k, v in self.records.items()}
        net = self.network
        d["network"] = None if net is None else {
            "weights": to_jsonable(list(net.weights)), "biases": to_jsonable(list(net.biases)),
            "skip": None if net.skip is None else to_jsonable(list(net.skip))}
        return d
