"""Recorders: what :func:`relulab.dynamics.train` measures at each recorded step.

A recorder has a ``name`` and a ``record(ctx)`` method returning a numpy array (or a
number); the trajectory stacks its values over the recorded steps.  Pass recorders by
name (``"norms"``, ``"directions"``, ``"patterns"``, ``"effective_width"``,
``"params"``, ``"outputs"``) or as objects (:class:`Alignment`, :class:`RegionCount`,
:class:`DistanceTo` need arguments), or as ``(name, function_of_model)`` pairs.

Per-neuron recorders see hidden layer ``layer`` (default 0) of a ReLU network.  The
activation-pattern and region recorders use the :class:`~relulab.Network` of the
current parameters (built once per recorded step by :func:`to_network`), so they are
exactly what relulab's forward pass says.

Example:
    >>> import numpy as np
    >>> from relulab.dynamics import mlp, train
    >>> X = np.eye(2); y = np.array([1.0, 2.0])
    >>> t = train(mlp([2, 4, 1], seed=0), X, y, steps=3, record=["norms", "patterns"])
    >>> t.records["norms"].shape, t.records["patterns"].shape
    ((2, 2, 4), (2, 2, 4))
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import UncertifiedCount
from ..limits import check_bytes, memory_budget
from ..network import Network
from ..tolerance import or_default
from ._model import DynamicsError, hidden_layer, require_relu, to_network

__all__ = [
    "Recorder",
    "NeuronNorms",
    "Directions",
    "Alignment",
    "ActivationPatterns",
    "EffectiveWidth",
    "RegionCount",
    "DistanceTo",
    "Params",
    "Outputs",
    "FunctionRecorder",
    "effective_width",
    "resolve",
    "RECORDER_NAMES",
]

# Directions whose unit vectors (weights and bias) lie within this Euclidean distance are
# one direction: 1e-2 is about 0.6 degrees, well above float noise, well below the angle
# between the distinct directions the experiments plant or learn.
DIRECTION_TOL = 1e-2


@dataclass
class Context:
    """What a recorder sees: the torch model, the training data and the step (and the
    run's deadline, a ``time.perf_counter()`` value, when ``train`` has a time limit: a
    slow recorder stops there)."""

    model: Any
    X: np.ndarray
    step: int
    _net: Network | None = field(default=None, repr=False)
    deadline: float | None = None

    @property
    def network(self) -> Network:
        """The current parameters as a relulab Network (built once per step)."""
        if self._net is None:
            self._net = to_network(self.model)
        return self._net


class Recorder:
    """Base class: ``name`` and ``record(ctx)``; ``needs_relu`` if it reads neurons.

    Example:
        >>> import numpy as np
        >>> from relulab.dynamics import mlp, train
        >>> class Width(Recorder):
        ...     name = "width"
        ...     def record(self, ctx):
        ...         return ctx.network.widths[0]
        >>> t = train(mlp([2, 3, 1], seed=0), np.eye(2), np.ones(2), steps=2, every=1, record=[Width()])
        >>> t.records["width"].tolist()
        [3, 3, 3]
    """

    name = "recorder"
    needs_relu = True

    def check(self, model: Any, X: np.ndarray) -> None:
        """Raise a one-line error before training if the recorder cannot work."""
        if self.needs_relu:
            require_relu(model, f"recorder '{self.name}'")

    def record(self, ctx: Context) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass
class NeuronNorms(Recorder):
    """Per neuron of hidden layer ``layer``: ``[incoming norm, outgoing norm]``, shape
    (2, width); the incoming norm includes the bias.

    Example:
        >>> import numpy as np
        >>> from relulab.dynamics import mlp, train
        >>> t = train(mlp([2, 3, 1], seed=0), np.eye(2), np.ones(2), steps=2, every=1, record=[NeuronNorms()])
        >>> t.records["norms"].shape   # (records, [in, out], neurons)
        (3, 2, 3)
    """

    layer: int = 0
    name: str = "norms"

    def record(self, ctx: Context) -> np.ndarray:
        W, b, A = hidden_layer(ctx.model, self.layer)
        inc = np.sqrt(np.sum(W * W, axis=1) + b * b)
        return np.stack([inc, np.linalg.norm(A, axis=0)])


@dataclass
class Directions(Recorder):
    """Unit vector of each neuron's ``(w, b)`` (or ``w`` with ``include_bias=False``),
    shape (width, d + 1); a zero neuron gives a zero row.

    Example:
        >>> import numpy as np
        >>> from relulab.dynamics import mlp, train
        >>> t = train(mlp([2, 3, 1], seed=0), np.eye(2), np.ones(2), steps=2, every=1, record=[Directions()])
        >>> D = t.records["directions"]
        >>> D.shape, np.allclose(np.linalg.norm(D, axis=2), 1.0)
        ((3, 3, 3), True)
    """

    layer: int = 0
    include_bias: bool = True
    name: str = "directions"

    def record(self, ctx: Context) -> np.ndarray:
        W, b, _ = hidden_layer(ctx.model, self.layer)
        V = np.hstack([W, b[:, None]]) if self.include_bias else W
        return unit_rows(V)


@dataclass
class Alignment(Recorder):
    """Cosine between each neuron's input weight (``include_bias`` appends the bias) and
    each of the given directions: shape (width, k).

    Example:
        >>> import numpy as np
        >>> from relulab.dynamics import mlp, train
        >>> rec = Alignment(targets=[[1.0, 0.0]])
        >>> t = train(mlp([2, 3, 1], seed=0), np.eye(2), np.ones(2), steps=2, every=1, record=[rec])
        >>> A = t.records["alignment"]
        >>> A.shape, bool(np.all(np.abs(A) <= 1))
        ((3, 3, 1), True)
    """

    targets: Any = None
    layer: int = 0
    include_bias: bool = False
    name: str = "alignment"

    def __post_init__(self) -> None:
        T = np.atleast_2d(np.asarray(self.targets, dtype=np.float64))
        if self.targets is None or T.size == 0 or not np.all(np.isfinite(T)):
            raise DynamicsError("Alignment(targets=...): need finite target directions (k, d)")
        self.targets = unit_rows(T)

    def check(self, model: Any, X: np.ndarray) -> None:
        super().check(model, X)
        W, _, _ = hidden_layer(model, self.layer)
        d = W.shape[1] + (1 if self.include_bias else 0)
        if self.targets.shape[1] != d:
            raise DynamicsError(f"Alignment targets have {self.targets.shape[1]} entries; "
                                f"neuron vectors have {d}")

    def record(self, ctx: Context) -> np.ndarray:
        W, b, _ = hidden_layer(ctx.model, self.layer)
        V = np.hstack([W, b[:, None]]) if self.include_bias else W
        return unit_rows(V) @ self.targets.T


@dataclass
class ActivationPatterns(Recorder):
    """The activation pattern (pre-activation > 0) of every hidden neuron on every
    training point, shape (n, n_neurons), from relulab's forward pass.

    Example:
        >>> import numpy as np
        >>> from relulab.dynamics import mlp, train
        >>> t = train(mlp([2, 3, 1], seed=0), np.eye(2), np.ones(2), steps=2, every=1, record=[ActivationPatterns()])
        >>> t.records["patterns"].shape   # (records, points, neurons)
        (3, 2, 3)
    """

    name: str = "patterns"

    def record(self, ctx: Context) -> np.ndarray:
        return ctx.network.pattern_vector(ctx.X)


@dataclass
class EffectiveWidth(Recorder):
    """The number of distinct input-weight directions of hidden layer ``layer`` up to
    ``tol`` (see :func:`effective_width`).

    Example:
        >>> import numpy as np
        >>> from relulab.dynamics import mlp, train
        >>> t = train(mlp([2, 3, 1], seed=0), np.eye(2), np.ones(2), steps=2, every=1, record=[EffectiveWidth()])
        >>> t.records["effective_width"].tolist()
        [3, 3, 3]
    """

    layer: int = 0
    tol: float = DIRECTION_TOL
    min_share: float = 0.0
    name: str = "effective_width"

    def record(self, ctx: Context) -> int:
        W, b, A = hidden_layer(ctx.model, self.layer)
        try:
            # under train's time limit the clustering stops there (a 10,000-wide layer's
            # step-0 record ran 6 s past a 1 s limit)
            return effective_width(np.hstack([W, b[:, None]]), outgoing=A, tol=self.tol,
                                   min_share=self.min_share, deadline=ctx.deadline)
        except UncertifiedCount as e:
            warnings.warn(f"EffectiveWidth: no count at step {ctx.step}: {e}", stacklevel=2)
            return float("nan")


@dataclass
class RegionCount(Recorder):
    """The number of linear regions on a box (``relulab.regions.count``) or, with
    ``segment=(a, b)``, the number of pieces on that segment
    (``relulab.regions.along_segment``).  A count that cannot be certified (a region
    thinner than the float tolerance may be merged) is recorded as NaN with a warning,
    and training goes on.

    Example:
        >>> import numpy as np
        >>> from relulab.dynamics import mlp, train
        >>> rec = RegionCount(segment=([-1.0, -1.0], [1.0, 1.0]))
        >>> t = train(mlp([2, 3, 1], seed=0), np.eye(2), np.ones(2), steps=2, every=1, record=[rec])
        >>> t.records["regions"].tolist()
        [2, 4, 4]
    """

    box: Any = None
    segment: Any = None
    name: str = "regions"

    def __post_init__(self) -> None:
        if (self.box is None) == (self.segment is None):
            raise DynamicsError("RegionCount: give exactly one of box=Box(...) or segment=(a, b)")

    def record(self, ctx: Context) -> int:
        from .. import regions

        try:
            if self.segment is not None:
                a, b = self.segment
                left = None if ctx.deadline is None else ctx.deadline - time.perf_counter()
                if left is not None and left <= 0:
                    # the record made when the time limit stopped a run: no time left for a
                    # count (one ran 10 s past a 1 s limit on a 1000-wide network)
                    warnings.warn(f"RegionCount: no count at step {ctx.step}: the time limit came first",
                                  stacklevel=2)
                    return float("nan")
                # and a count started before it stops at it (the step-0 count ran 4 s past a
                # 0.5 s limit): UncertifiedCount below
                seg = regions.along_segment(ctx.network, a, b, time_limit=left)
                if not seg.certified:
                    # breakpoints within rounding of each other may hide a piece (two
                    # kinks 1e-12 apart read 2 pieces where there are 3): none is recorded
                    warnings.warn(f"RegionCount: no count at step {ctx.step}: the count along "
                                  "the segment is not certified", stacklevel=2)
                    return float("nan")
                return seg.n_pieces
            if ctx.deadline is None:
                return regions.count(ctx.network, self.box)
            # under train's time limit: an enumeration that stops at the deadline (a count
            # on a 5-48-48-1 network ran for minutes past a 2 s limit)
            left = ctx.deadline - time.perf_counter()
            rs = None if left <= 0 else regions.enumerate(ctx.network, self.box, time_limit=left)
            if rs is None or rs.partial or not rs.certified:
                why = "the time limit came first" if rs is None or rs.partial else "it is not certified"
                warnings.warn(f"RegionCount: no count at step {ctx.step}: {why}", stacklevel=2)
                return float("nan")
            return len(rs)
        except UncertifiedCount as e:
            # a long run must not die on one uncertified snapshot; a wrong count is worse
            # than none, so none is recorded
            warnings.warn(f"RegionCount: no certified count at step {ctx.step}: {e}", stacklevel=2)
            return float("nan")


@dataclass
class DistanceTo(Recorder):
    """Distance of the current function to a reference :class:`Network` on ``points``
    (default: the training inputs): ``norm="max"`` (largest absolute difference) or
    ``"rms"``.

    Example:
        >>> import numpy as np
        >>> from relulab.dynamics import mlp, train, to_network
        >>> m = mlp([2, 3, 1], seed=0)
        >>> start = to_network(m)
        >>> t = train(m, np.eye(2), np.ones(2), steps=2, every=1, record=[DistanceTo(start, np.eye(2))])
        >>> d = t.records["distance"]
        >>> float(d[0]), bool(d[-1] > 0)
        (0.0, True)
    """

    reference: Network | None = None
    points: Any = None
    norm: str = "max"
    name: str = "distance"

    def __post_init__(self) -> None:
        if not isinstance(self.reference, Network):
            raise DynamicsError("DistanceTo(reference=...): the reference must be a relulab Network")
        if self.norm not in ("max", "rms"):
            raise DynamicsError(f"DistanceTo norm '{self.norm}': use 'max' or 'rms'")

    def check(self, model: Any, X: np.ndarray) -> None:
        super().check(model, X)
        P = X if self.points is None else np.atleast_2d(np.asarray(self.points, float))
        if P.shape[1] != self.reference.input_dim:
            raise DynamicsError(f"DistanceTo: the reference takes {self.reference.input_dim} "
                                f"inputs, the points have {P.shape[1]}")
        self._ref = self.reference(P)
        self._P = P

    def record(self, ctx: Context) -> float:
        diff = ctx.network(self._P) - self._ref
        if self.norm == "max":
            return float(np.max(np.abs(diff)))
        return float(np.sqrt(np.mean(diff * diff)))


@dataclass
class Params(Recorder):
    """All parameters flattened in ``model.parameters()`` order.

    Example:
        >>> import numpy as np
        >>> from relulab.dynamics import mlp, train
        >>> t = train(mlp([2, 3, 1], seed=0), np.eye(2), np.ones(2), steps=2, every=1, record=[Params()])
        >>> t.records["params"].shape   # 2*3 + 3 + 3*1 + 1 parameters
        (3, 13)
    """

    name: str = "params"
    needs_relu: bool = False

    def record(self, ctx: Context) -> np.ndarray:
        return np.concatenate([p.detach().cpu().numpy().astype(np.float64).ravel()
                               for p in ctx.model.parameters()])


@dataclass
class Outputs(Recorder):
    """The model's outputs on the training inputs, shape (n, outputs).

    Example:
        >>> import numpy as np
        >>> from relulab.dynamics import mlp, train
        >>> t = train(mlp([2, 3, 1], seed=0), np.eye(2), np.ones(2), steps=2, every=1, record=[Outputs()])
        >>> t.records["outputs"].shape
        (3, 2, 1)
    """

    name: str = "outputs"
    needs_relu: bool = False

    def record(self, ctx: Context) -> np.ndarray:
        import torch

        p = next(ctx.model.parameters())
        with torch.no_grad():
            out = ctx.model(torch.as_tensor(ctx.X, dtype=p.dtype, device=p.device))
        return out.detach().cpu().numpy().astype(np.float64).reshape(ctx.X.shape[0], -1)


@dataclass
class FunctionRecorder(Recorder):
    """Any function of the torch model: ``FunctionRecorder("w00", lambda m: ...)``.

    Example:
        >>> import numpy as np
        >>> from relulab.dynamics import mlp, train
        >>> rec = FunctionRecorder("bias0", lambda m: float(m.body[0].bias.detach()[0]))
        >>> t = train(mlp([2, 3, 1], seed=0), np.eye(2), np.ones(2), steps=2, every=1, record=[rec])
        >>> t.records["bias0"].shape
        (3,)
    """

    name: str = "function"
    fn: Callable[[Any], Any] | None = None
    needs_relu: bool = False

    def record(self, ctx: Context) -> Any:
        return self.fn(ctx.model)


RECORDER_NAMES: dict[str, Callable[[], Recorder]] = {
    "norms": NeuronNorms,
    "directions": Directions,
    "patterns": ActivationPatterns,
    "effective_width": EffectiveWidth,
    "params": Params,
    "outputs": Outputs,
}


def resolve(record: Sequence[Any]) -> list[Recorder]:
    """Recorder objects from names, objects and ``(name, function)`` pairs; one error
    for an unknown name or a repeated one.

    Example:
        >>> [r.name for r in resolve(["norms", Params(), ("w", lambda m: 0.0)])]
        ['norms', 'params', 'w']
    """
    if isinstance(record, (str, Recorder)):
        record = [record]
    out: list[Recorder] = []
    for r in record:
        if isinstance(r, str):
            if r not in RECORDER_NAMES:
                raise DynamicsError(f"unknown recorder '{r}'; known: {', '.join(RECORDER_NAMES)} "
                                    "(Alignment, RegionCount, DistanceTo take arguments)")
            out.append(RECORDER_NAMES[r]())
        elif isinstance(r, Recorder):
            out.append(r)
        elif isinstance(r, tuple) and len(r) == 2 and isinstance(r[0], str) and callable(r[1]):
            out.append(FunctionRecorder(name=r[0], fn=r[1]))
        else:
            raise DynamicsError(f"record entry {r!r}: give a recorder name, a Recorder or a "
                                "(name, function) pair")
    names = [r.name for r in out]
    dup = {n for n in names if names.count(n) > 1}
    if dup or "loss" in names:
        raise DynamicsError(f"recorder names must be unique and not 'loss': {sorted(dup | ({'loss'} & set(names)))}")
    return out


# ------------------------------------------------------------------ geometry helpers
def _by_largest_entry(V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(V / top, top)`` with ``top`` each row's largest absolute entry (zero rows stay
    zero): lengths of the scaled rows do not underflow (a row of size 1e-170 squared to 0)."""
    V = np.asarray(V, dtype=np.float64)
    top = np.max(np.abs(V), axis=1, keepdims=True) if V.shape[1] else np.zeros((V.shape[0], 1))
    return np.divide(V, top, out=np.zeros_like(V), where=top > 0), top[:, 0]


def row_norms(V: np.ndarray) -> np.ndarray:
    """The rows' Euclidean lengths, without underflow for rows of size 1e-160.

    Example:
        >>> row_norms(np.array([[3e-170, 4e-170], [0.0, 0.0]])).tolist()
        [5e-170, 0.0]
    """
    U, top = _by_largest_entry(V)
    return top * np.linalg.norm(U, axis=1)


def unit_rows(V: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero); each row is first divided by its
    largest entry, so rows of size 1e-160 (whose squares underflow) keep their direction."""
    V, _ = _by_largest_entry(V)
    n = np.linalg.norm(V, axis=1, keepdims=True)
    return np.divide(V, n, out=np.zeros_like(V), where=n > 0)


# unit vectors of exactly parallel rows differ by a few ulps: distances up to this many
# float64 epsilons count as 0 (the direction tolerance is never below it)
PARALLEL_ULPS = 8


#: screened (row, neuron) pairs per block of direction_clusters: the deadline is read between
#: blocks (and between chunks of this many close pairs)
_BLOCK_ENTRIES = 2_000_000


def direction_clusters(V: Any, tol: float | None = None, deadline: float | None = None) -> np.ndarray:
    """Cluster labels of the rows of ``V`` by direction: rows whose unit vectors lie
    within ``tol`` (Euclidean; None: ``DIRECTION_TOL``) are joined, and clusters are the
    connected components (single linkage).  Zero rows get label -1.  The pairs are
    screened in blocks of rows within the memory budget; ``deadline`` (a
    ``time.perf_counter()`` value, None: none): past it, between blocks, the clustering
    stops with :class:`~relulab.errors.UncertifiedCount` (there is no partial answer).

    Example:
        >>> direction_clusters([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 0.0]]).tolist()
        [0, 0, 1, -1]
    """
    tol = or_default(tol, DIRECTION_TOL)
    if isinstance(tol, bool) or not (isinstance(tol, (int, float, np.number)) and 0 <= tol < np.inf):
        raise DynamicsError(f"direction tol must be a finite number >= 0, got {tol!r}")
    try:
        V = np.asarray(V, dtype=np.float64)
    except (TypeError, ValueError):
        raise DynamicsError("direction_clusters: V must be an (m, d) array of numbers") from None
    if V.ndim != 2:
        raise DynamicsError(f"direction_clusters: V must be an (m, d) array (one row per neuron), "
                            f"got shape {V.shape}")
    if not np.all(np.isfinite(V)):
        raise DynamicsError("the neurons' directions contain NaN or infinite entries")
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    U = unit_rows(V)
    live = np.any(V != 0, axis=1)
    labels = -np.ones(U.shape[0], dtype=int)
    idx = np.nonzero(live)[0]
    if idx.size == 0:
        return labels
    Ul = U[idx]
    m = Ul.shape[0]
    # squared distances from the Gram matrix screen the pairs (2 - 2 cos cancels: about
    # 1e-8 of resolution, and exactly parallel rows read as distinct at tol 1e-8 or less);
    # the pairs it passes are measured directly.  One block of rows at a time (an m x m
    # Gram took 2.2 GB for 12,000 neurons), and each block's pairs are folded at once into
    # the components so far (a collapsed layer has m^2 close pairs)
    eps = float(np.finfo(np.float64).eps)
    t = max(float(tol), PARALLEL_ULPS * eps)
    d = Ul.shape[1]
    per_pair = 8.0 * 3 * d  # the direct check of a screened pair (two rows, their difference)
    per_row = 8.0 * 6 * m   # a block row of the Gram, its test, its pairs and their edges
    check_bytes(64 * per_row + 64 * per_pair + 8.0 * 6 * m, f"direction clusters of {m} neurons")
    share = memory_budget() // 4
    # and small enough that the deadline is read every few million pairs (a collapsed
    # 6,000-neuron layer in one block ran 5 s past a 0.5 s deadline)
    block = int(min(m, max(64, min(share // per_row, _BLOCK_ENTRIES // m))))
    chunk = int(max(64, min(share // per_pair, _BLOCK_ENTRIES)))
    root = np.arange(m)

    def check_deadline(start: int) -> None:
        if deadline is not None and time.perf_counter() > deadline:
            raise UncertifiedCount(f"direction clusters: the time limit came after {start} of "
                                   f"{m} neurons")

    for start in range(0, m, block):
        check_deadline(start)
        rows = Ul[start:start + block]
        near = 2.0 - 2.0 * (rows @ Ul.T) <= t * t + 8.0 * eps
        # pairs already in one component add nothing (a collapsed layer: all of them)
        near &= root[start:start + block, None] != root[None, :]
        i, j = np.nonzero(near)
        if i.size == 0:
            continue
        i += start
        parts = []
        for k in range(0, i.size, chunk):
            if k:
                check_deadline(start)
            parts.append(np.linalg.norm(Ul[i[k:k + chunk]] - Ul[j[k:k + chunk]], axis=1) <= t)
        close = np.concatenate(parts)
        # the components so far (each neuron joined to its root) and this block's pairs
        src = np.concatenate([np.arange(m), i[close]])
        dst = np.concatenate([root, j[close]])
        adj = coo_matrix((np.ones(src.size, dtype=bool), (src, dst)), shape=(m, m)).tocsr()
        _, comp = connected_components(adj, directed=False)
        # each component's smallest neuron is its root (a label is no neuron of it)
        _, first = np.unique(comp, return_index=True)
        root = first[comp]
    labels[idx] = np.unique(root, return_inverse=True)[1]
    return labels


def effective_width(V: Any, outgoing: Any = None, tol: float | None = None,
                    min_share: float = 0.0, deadline: float | None = None) -> int:
    """The number of distinct directions among the rows of ``V`` (neurons' ``(w, b)``),
    rows within ``tol`` of each other (unit vectors, single linkage; None: ``DIRECTION_TOL``)
    counting once.

    Neurons whose contribution ``||v_i|| * ||a_i||`` (``a_i`` the outgoing weights, when
    given) is at most ``min_share`` times the largest are left out; exact zeros always.
    ``deadline``: see :func:`direction_clusters`.

    Example:
        >>> effective_width([[1, 0], [2, 0], [0, 1], [0, 0]])
        2
    """
    try:
        V = np.atleast_2d(np.asarray(V, dtype=np.float64))
    except (TypeError, ValueError):
        raise DynamicsError("effective_width: V must be an (m, d) array of numbers") from None
    if V.ndim != 2:
        raise DynamicsError(f"effective_width: V must be an (m, d) array (one row per neuron), got shape {V.shape}")
    if isinstance(min_share, bool) or not (isinstance(min_share, (int, float, np.number)) and 0 <= min_share <= 1):
        raise DynamicsError(f"effective_width: min_share must be a number in [0, 1], got {min_share!r}")
    size = row_norms(V)   # (a row of size 1e-170 squared to 0 under np.linalg.norm)
    if outgoing is not None:
        A = np.asarray(outgoing, dtype=np.float64)
        if A.size % V.shape[0] or not np.all(np.isfinite(A)):
            raise DynamicsError(f"effective_width: outgoing needs finite weights, a multiple of the "
                                f"{V.shape[0]} neurons, got shape {A.shape}")
        size = size * np.linalg.norm(A.reshape(-1, V.shape[0]), axis=0)
    if not np.all(np.isfinite(size)):
        raise DynamicsError("effective_width: the neurons' directions contain NaN or infinite entries")
    keep = size > (min_share * size.max() if size.size else 0.0)
    keep &= size > 0
    lab = direction_clusters(V[keep], tol, deadline)
    return int(np.unique(lab[lab >= 0]).size)
