"""Saddle-to-saddle analysis: plateaus of the loss and the neurons that grow at each jump."""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import is_int_at_least
from ..results import Result
from ._model import DynamicsError
from .trajectory import Trajectory

__all__ = ["Plateau", "Jump", "SaddleEvents", "saddle_events", "plateaus"]

# A step is on a plateau when, over the next `window` steps, the loss falls by less than
# this fraction of the run's total drop: 1e-3 of the total drop per 1/200 of the run is a
# slope 5x below that of a linear decay, so the flats of a staircase pass and ramps do not.
FLAT_TOL = 1e-3


@dataclass(frozen=True)
class Plateau(Result):
    """Steps ``start..end`` (inclusive) where the loss stays flat, at value ``loss``
    (the median over the plateau).

    Example:
        >>> p = Plateau(start=0, end=40, loss=1.0)
        >>> p.to_dict()
        {'start': 0, 'end': 40, 'loss': 1.0}
    """

    start: int
    end: int
    loss: float


@dataclass(frozen=True)
class Jump(Result):
    """The drop between two plateaus (or after the last one): steps ``start..end``, the
    loss before and after, ``new_neurons``: neurons whose contribution
    ``||(w_i, b_i)|| * ||a_i||`` crosses ``active_share`` of the largest during the jump
    (in order of size afterwards), ``growing``: neurons whose contribution grows by at
    least the ``growth`` factor.

    Example:
        >>> j = Jump(start=41, end=60, loss_before=1.0, loss_after=0.5, new_neurons=(1,), growing=(1,))
        >>> j.loss_before - j.loss_after, j.new_neurons
        (0.5, (1,))
    """

    start: int
    end: int
    loss_before: float
    loss_after: float
    new_neurons: tuple[int, ...]
    growing: tuple[int, ...]


@dataclass(frozen=True)
class SaddleEvents(Result):
    """Plateaus and jumps of a trajectory; ``activation_order`` lists neurons in the order
    they became active (from ``new_neurons`` of successive jumps).

    Example:
        >>> ev = SaddleEvents(plateaus=(Plateau(0, 40, 1.0), Plateau(61, 99, 0.5)),
        ...                   jumps=(Jump(41, 60, 1.0, 0.5, (1,), (1,)), Jump(100, 120, 0.5, 0.0, (0,), (0,))),
        ...                   window=5, flat_tol=0.01)
        >>> ev.activation_order, ev.to_dict()["activation_order"]
        ((1, 0), [1, 0])
    """

    plateaus: tuple[Plateau, ...]
    jumps: tuple[Jump, ...]
    window: int
    flat_tol: float

    @property
    def activation_order(self) -> tuple[int, ...]:
        return tuple(j for jump in self.jumps for j in jump.new_neurons)

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["activation_order"] = list(self.activation_order)
        return d


def plateaus(loss: Any, window: int | None = None, flat_tol: float = FLAT_TOL,
             min_length: int | None = None) -> tuple[list[tuple[int, int]], int]:
    """Maximal runs of steps where the loss changes (falls or rises) by less than
    ``flat_tol`` times its total range over ``window`` steps (an integer, ``1 <= window < len(loss)``; default
    ``max(1, len(loss) // 200)``); runs shorter than ``min_length`` are dropped.

    Example:
        >>> L = np.r_[np.ones(100), np.linspace(1, 0.5, 10), 0.5 * np.ones(100)]
        >>> plateaus(L, window=5)[0]
        [(0, 100), (109, 209)]
    """
    try:
        L = np.asarray(loss, dtype=np.float64)
    except (TypeError, ValueError):
        raise DynamicsError("saddle_events needs a loss curve of numbers, got "
                            f"{type(loss).__name__}") from None
    if L.ndim != 1 or L.size < 3 or not np.all(np.isfinite(L)):
        raise DynamicsError("saddle_events needs a finite loss curve of at least 3 steps")
    T = L.size
    if window is not None and not (is_int_at_least(window, 1) and window < T):
        raise DynamicsError(f"window={window!r}: need an integer with 1 <= window < {T} (the number of steps)")
    if min_length is not None and not is_int_at_least(min_length, 1):
        raise DynamicsError(f"min_length={min_length!r}: need an integer >= 1")
    if isinstance(flat_tol, bool) or not (isinstance(flat_tol, numbers.Real) and 0 < flat_tol < np.inf):
        raise DynamicsError(f"flat_tol={flat_tol!r}: need a finite number > 0")  # NaN found no plateau
    w = max(1, T // 200) if window is None else int(window)
    min_len = 4 * w if min_length is None else int(min_length)
    drop = float(L.max() - L.min())
    if drop <= 0:
        return [(0, T - 1)], w
    ahead = np.concatenate([L[w:], np.full(w, L[-1])])
    # |change|: a rising loss (a spike, a diverging phase) is no plateau either
    flat = np.abs(L - ahead) < flat_tol * drop
    runs, start = [], None
    for t, f in enumerate(np.append(flat, False)):
        if f and start is None:
            start = t
        elif not f and start is not None:
            if t - start >= min_len:
                # the last `w` flat steps look ahead into the next ramp's start: keep them
                runs.append((start, min(T - 1, t - 1 + (w if t < T else 0))))
            start = None
    # the look-ahead extension can overlap the next run: merge
    merged: list[tuple[int, int]] = []
    for a, b in runs:
        if merged and a <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged, w


def _size_at(traj: Trajectory, step: int, norms: str, after: bool) -> np.ndarray:
    N = np.asarray(traj.series(norms), dtype=np.float64)
    rs = traj.record_steps
    i = int(np.searchsorted(rs, step, side="left" if after else "right"))
    i = min(max(i if after else i - 1, 0), rs.size - 1)
    return N[i, 0] * N[i, 1]


def saddle_events(traj: Trajectory, *, window: int | None = None, flat_tol: float = FLAT_TOL,
                  min_length: int | None = None, growth: float = 10.0,
                  active_share: float = 0.05, norms: str = "norms") -> SaddleEvents:
    """The plateaus of ``traj``'s loss and, at each jump, which neurons start growing.

    Neuron sizes come from the ``"norms"`` recorder (contribution = incoming norm times
    outgoing norm) at the recorded steps nearest the jump's ends; without that recorder
    the jumps carry no neurons.

    Example:
        >>> import numpy as np, torch
        >>> from relulab.dynamics import mlp, train
        >>> m = mlp([2, 2, 1], bias=False, out_bias=False)   # one neuron per data point
        >>> with torch.no_grad():
        ...     _ = m.body[0].weight.copy_(torch.tensor([[1e-4, -1e-4], [-1e-4, 1e-4]]))
        ...     _ = m.body[2].weight.fill_(1e-4)
        >>> X = np.diag([1.0, 2.0]); y = np.array([1.0, 1.0])
        >>> t = train(m, X, y, loss="sse", lr=0.01, steps=3000, every=20)
        >>> ev = saddle_events(t)
        >>> [round(p.loss, 2) for p in ev.plateaus], ev.activation_order
        ([1.0, 0.5, 0.0], (1, 0))
    """
    if isinstance(growth, bool) or not (isinstance(growth, numbers.Real) and 1 < growth < np.inf):
        raise DynamicsError(f"growth={growth!r}: need a finite number > 1")  # NaN found no jump
    if not (isinstance(active_share, int | float | np.number) and 0 <= active_share <= 1):
        # (NaN fails the comparison): a share outside [0, 1] marks no neuron, silently
        raise DynamicsError(f"active_share={active_share!r}: need a number in [0, 1]")
    if not isinstance(traj, Trajectory):
        raise DynamicsError(f"saddle_events needs a Trajectory (from train), got {type(traj).__name__}")
    runs, w = plateaus(traj.loss, window, flat_tol, min_length)
    L = traj.loss
    pl = tuple(Plateau(a, b, float(np.median(L[a:b + 1]))) for a, b in runs)
    have_norms = norms in traj.records and np.asarray(traj.records[norms]).ndim == 3
    ends = [(pl[k].end, pl[k + 1].start) for k in range(len(pl) - 1)]
    if pl and pl[-1].end < L.size - 1 and L[-1] < pl[-1].loss - flat_tol * (L.max() - L.min()):
        ends.append((pl[-1].end, L.size - 1))
    jumps = []
    for a, b in ends:
        new: tuple[int, ...] = ()
        grow: tuple[int, ...] = ()
        if have_norms:
            s0 = _size_at(traj, a, norms, after=False)
            s1 = _size_at(traj, b, norms, after=True)
            thr = active_share * float(s1.max()) if s1.size else 0.0
            crossed = np.nonzero((s0 < thr) & (s1 >= thr))[0]
            new = tuple(int(j) for j in crossed[np.argsort(-s1[crossed])])
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(s0 > 0, s1 / s0, np.inf)
            g = np.nonzero((ratio >= growth) & (s1 > 0))[0]
            grow = tuple(int(j) for j in g[np.argsort(-s1[g])])
        jumps.append(Jump(a, b, float(L[a]), float(L[b]), new, grow))
    return SaddleEvents(plateaus=pl, jumps=tuple(jumps), window=w, flat_tol=float(flat_tol))
