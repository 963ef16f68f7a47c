"""Loss along paths between two solutions, after aligning their symmetries.

Two networks of the same architecture can compute (almost) the same function with very
different parameter vectors: hidden neurons may be permuted, and each neuron's incoming
weights and bias scaled by ``c > 0`` with its outgoing weights divided by ``c``.  A
straight line between such parameter vectors crosses high loss for no functional reason,
so :func:`align` first moves ``net_b`` within its symmetry orbit towards ``net_a``
(weight matching):

1. layer by layer, hidden neurons are matched by the cosine similarity of their incoming
   rows ``(w, b)`` with a linear assignment (``scipy.optimize.linear_sum_assignment``);
   the permutation is applied with :func:`relulab.symmetry.permute` (which also reorders
   the next layer's columns, so the next layer is matched in the new order);
2. each matched neuron of ``net_b`` is rescaled (:func:`relulab.symmetry.rescale`) so that
   its incoming row has the norm of its partner's in ``net_a``.

The result computes the same function as ``net_b``.  For a permuted-and-rescaled copy of
``net_a`` (with distinct neuron directions) it *is* ``net_a`` up to rounding, so the
barrier vanishes.

Paths (``t`` in [0, 1]):

* ``linear``: ``theta(t) = (1 - t) theta_a + t theta_b``;
* ``polyline``: straight from ``theta_a`` to a bend ``theta_c`` at ``t = 1/2``, then to
  ``theta_b``;
* ``bezier``: the quadratic Bezier curve ``(1-t)^2 theta_a + 2 t (1-t) theta_c +
  t^2 theta_b``.

Barrier convention: ``barrier = max_t L(theta(t)) - max(L(theta_a), L(theta_b))`` on the
evaluated grid (endpoints included), so it is >= 0 and is 0 exactly when no point of the
path is worse than the worse endpoint.  :func:`bezier_search` lowers it by optimising the
control point ``theta_c`` (Adam on the loss averaged over random ``t``; the curve-finding
method of Garipov et al. 2018); :func:`polyline_search` optimises several bends of a
piecewise-linear path the same way (a stronger search for barriers between solutions).

Losses: ``"mse"`` = ``1/(2n) sum ||f(x_i) - y_i||^2`` (as :func:`relulab.params.mse_loss_and_grad`)
and ``"logistic"`` = ``mean log(1 + exp(-y f(x)))`` for labels ``y`` in {-1, +1}.

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> from relulab.symmetry import random_symmetry
    >>> rng = np.random.default_rng(0)
    >>> net = Network([rng.normal(size=(5, 2)), rng.normal(size=(1, 5))],
    ...               [rng.normal(size=5), rng.normal(size=1)])
    >>> X = rng.normal(size=(20, 2)); Y = net(X)
    >>> copy = random_symmetry(net, rng=1)
    >>> raw = path_losses(net, copy, X, Y, align_first=False)
    >>> aligned = path_losses(net, copy, X, Y)
    >>> bool(raw.barrier > 0.01), bool(aligned.barrier < 1e-20)
    (True, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import RelulabError, is_int_at_least, require
from ..network import Network
from ..params import network_from_parameters, parameter_layout, parameter_vector
from ..results import Result
from ..symmetry import permute, rescale

__all__ = [
    "PathError",
    "PathResult",
    "BezierSearch",
    "align",
    "path_point",
    "path_losses",
    "bezier_search",
    "PolylineSearch",
    "polyline_search",
    "LOSSES",
    "PATHS",
    "layer_norms",
]

LOSSES = ("mse", "logistic")
PATHS = ("linear", "polyline", "bezier")


class PathError(RelulabError):
    """Two networks, a path or a loss that do not fit together."""


def _check_pair(net_a: Network, net_b: Network) -> None:
    if not isinstance(net_a, Network) or not isinstance(net_b, Network):
        raise PathError("paths: both endpoints must be relulab Networks")
    dims_a = (net_a.input_dim, *net_a.widths, net_a.output_dim)
    dims_b = (net_b.input_dim, *net_b.widths, net_b.output_dim)
    if dims_a != dims_b or (net_a.skip is None) != (net_b.skip is None):
        raise PathError(f"paths: architectures differ ({net_a!r} vs {net_b!r})")


def align(net_a: Network, net_b: Network) -> Network:
    """``net_b`` moved within its symmetry orbit (permutation + positive rescaling of hidden
    neurons) to be close to ``net_a``; computes the same function as ``net_b``.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> from relulab.symmetry import permute, rescale
        >>> a = Network([[[1.0], [-2.0]], [[3.0, 1.0]]], [[0.5, 0.0], [0.0]])
        >>> b = permute(rescale(a, [[4.0, 0.5]]), [[1, 0]])
        >>> align(a, b).allclose(a)
        True
    """
    from scipy.optimize import linear_sum_assignment

    _check_pair(net_a, net_b)
    a, b = net_a.float(), net_b.float()
    L = a.n_hidden_layers
    for k in range(L):
        Ra = np.c_[a.weights[k], a.biases[k]]
        Rb = np.c_[b.weights[k], b.biases[k]]
        na, nb = np.linalg.norm(Ra, axis=1), np.linalg.norm(Rb, axis=1)
        Ua = Ra / np.where(na > 0, na, 1.0)[:, None]
        Ub = Rb / np.where(nb > 0, nb, 1.0)[:, None]
        _, cols = linear_sum_assignment(-(Ua @ Ub.T))  # maximise total cosine similarity
        perms = [np.arange(w) for w in b.widths]
        perms[k] = cols
        b = permute(b, perms)
        nb = nb[cols]
        facs = [np.ones(w) for w in b.widths]
        facs[k] = np.where((na > 0) & (nb > 0), na / np.where(nb > 0, nb, 1.0), 1.0)
        b = rescale(b, facs)
    return b


def path_point(theta_a: np.ndarray, theta_b: np.ndarray, t: float, kind: str = "linear",
               control: np.ndarray | None = None) -> np.ndarray:
    """The parameter vector at ``t`` in [0, 1] on the path ``kind`` (see the module docstring).

    Example:
        >>> import numpy as np
        >>> path_point(np.zeros(2), np.ones(2), 0.5, "bezier", control=np.array([2.0, 0.0])).tolist()
        [1.25, 0.25]
    """
    if kind not in PATHS:
        raise PathError(f"path: unknown kind {kind!r} (expected one of {', '.join(PATHS)})")
    if not 0.0 <= t <= 1.0:
        raise PathError(f"path: t must lie in [0, 1], got {t}")
    if kind == "linear":
        return (1.0 - t) * theta_a + t * theta_b
    if control is None or np.shape(control) != np.shape(theta_a):
        raise PathError(f"path: kind {kind!r} needs a control point of shape {np.shape(theta_a)}")
    if kind == "polyline":
        if t <= 0.5:
            return (1.0 - 2 * t) * theta_a + 2 * t * control
        return (2.0 - 2 * t) * control + (2 * t - 1.0) * theta_b
    return (1 - t) ** 2 * theta_a + 2 * t * (1 - t) * control + t**2 * theta_b


def _int_arg(name: str, v: Any, lo: int) -> int:
    if not is_int_at_least(v, lo):
        raise PathError(f"{name}: must be an integer >= {lo}, got {v!r}")
    return int(v)


def _positive(name: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not (
            np.isfinite(v) and v > 0):
        raise PathError(f"{name}: must be a finite number > 0, got {v!r}")
    return float(v)


def _data(net: Network, X: Any, Y: Any, loss: str = "mse") -> tuple[np.ndarray, np.ndarray]:
    try:
        X = np.asarray(X, dtype=float)
        Y = np.asarray(Y, dtype=float)
    except (TypeError, ValueError) as e:
        raise PathError(f"X, Y: must be arrays of numbers ({e})") from None
    if X.ndim != 2 or X.shape[1] != net.input_dim or X.shape[0] == 0:
        raise PathError(f"X: expected a non-empty (n, {net.input_dim}) array, got shape {X.shape}")
    if Y.ndim == 0 or Y.shape[0] != X.shape[0] or Y.size != X.shape[0] * net.output_dim:
        raise PathError(f"Y: expected {X.shape[0]} rows (one per point of X) of {net.output_dim} targets, "
                        f"got shape {Y.shape}")
    Y = Y.reshape(X.shape[0], -1)
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(Y))):
        raise PathError("X, Y: contain NaN or infinite entries")
    if loss == "logistic" and not np.all(np.abs(Y) == 1.0):
        bad = np.unique(Y[np.abs(Y) != 1.0])[:3].tolist()
        raise PathError(f"Y: the logistic loss needs labels -1 or +1, got {bad} (for 0/1 labels pass 2 * Y - 1)")
    return X, Y


def _loss(out: np.ndarray, Y: np.ndarray, loss: str) -> float:
    if loss == "mse":
        return 0.5 * float(np.sum((out - Y) ** 2)) / out.shape[0]
    if loss == "logistic":
        return float(np.mean(np.logaddexp(0.0, -Y * out)))
    raise PathError(f"loss: unknown name {loss!r} (expected one of {', '.join(LOSSES)})")


@dataclass(frozen=True)
class PathResult(Result):
    """Loss along a path between two networks.

    Attributes:
        kind: ``linear``, ``polyline`` or ``bezier``.
        ts: the evaluated path positions (0 and 1 included).
        losses: the loss at each of them.
        loss_a, loss_b: the endpoints' losses.
        barrier: ``max(losses) - max(loss_a, loss_b)`` (>= 0; sampled on ``ts``).
        aligned: whether ``net_b`` was aligned to ``net_a`` first.
        distance: ``||theta_b - theta_a||`` after alignment (if any).
        status: ``"sampled"``: the maximum is over the grid, not certified.

    Example:
        >>> from relulab import Network
        >>> a = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])    # |x|
        >>> X, Y = [[-1.0], [0.0], [1.0]], [[1.0], [0.0], [1.0]]
        >>> r = path_losses(a, a, X, Y, n_points=3)
        >>> r.kind, r.ts.tolist(), r.losses.tolist(), r.barrier, r.status
        ('linear', [0.0, 0.5, 1.0], [0.0, 0.0, 0.0], 0.0, 'sampled')
    """

    kind: str
    loss: str
    ts: np.ndarray
    losses: np.ndarray
    loss_a: float
    loss_b: float
    barrier: float
    aligned: bool
    distance: float
    status: str = "sampled"


def _evaluate(net_a: Network, theta_a: np.ndarray, theta_b: np.ndarray, X: np.ndarray,
              Y: np.ndarray, kind: str, control: np.ndarray | None, ts: np.ndarray,
              loss: str) -> np.ndarray:
    return np.array([
        _loss(network_from_parameters(net_a, path_point(theta_a, theta_b, float(t), kind, control))(X), Y, loss)
        for t in ts
    ])


def path_losses(
    net_a: Network,
    net_b: Network,
    X: Any,
    Y: Any,
    *,
    kind: str = "linear",
    control: np.ndarray | None = None,
    n_points: int = 41,
    loss: str = "mse",
    align_first: bool = True,
) -> PathResult:
    """The loss on ``(X, Y)`` along a path from ``net_a`` to ``net_b`` (aligned first).

    ``control`` (for ``polyline`` / ``bezier``) is a parameter vector in the layout of
    :func:`relulab.params.parameter_vector`; without it the midpoint of the linear path is
    used, which makes both curves the straight line.  See the module docstring.

    Example:
        >>> from relulab import Network
        >>> a = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])    # |x|
        >>> b = Network([[[-1.0], [1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])    # |x|, neurons swapped
        >>> X, Y = [[-1.0], [0.0], [1.0]], [[1.0], [0.0], [1.0]]
        >>> raw = path_losses(a, b, X, Y, n_points=3, align_first=False)
        >>> raw.losses.tolist(), path_losses(a, b, X, Y, n_points=3).barrier   # aligning removes the barrier
        ([0.0, 0.3333333333333333, 0.0], 0.0)
    """
    _check_pair(net_a, net_b)
    if loss not in LOSSES:
        raise PathError(f"loss: unknown name {loss!r} (expected one of {', '.join(LOSSES)})")
    n_points = _int_arg("n_points", n_points, 2)
    X, Y = _data(net_a, X, Y, loss)
    b = align(net_a, net_b) if align_first else net_b.float()
    ta = parameter_vector(net_a.float()).astype(float)
    tb = parameter_vector(b).astype(float)
    if kind != "linear" and control is None:
        control = 0.5 * (ta + tb)
    if control is not None:
        control = np.asarray(control, dtype=float)
    ts = np.linspace(0.0, 1.0, int(n_points))
    losses = _evaluate(net_a, ta, tb, X, Y, kind, control, ts, loss)
    la, lb = float(losses[0]), float(losses[-1])
    return PathResult(
        kind=kind, loss=loss, ts=ts, losses=losses, loss_a=la, loss_b=lb,
        barrier=float(max(losses.max() - max(la, lb), 0.0)), aligned=bool(align_first),
        distance=float(np.linalg.norm(tb - ta)),
    )


@dataclass(frozen=True)
class BezierSearch(Result):
    """A Bezier (or polyline) path whose control point was optimised to lower the barrier.

    Attributes:
        linear: the straight path (after alignment), for comparison.
        curved: the optimised path.
        steps: optimisation steps taken.
        control: the optimised control point (parameter vector).
        status: always ``"sampled"``: the search runs a fixed number of steps with no
            convergence test, and each barrier is the largest loss at ``n_points``
            sampled positions; nothing here is proved minimal.

    Example:
        >>> from relulab import Network
        >>> a = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> X = [[-1.0], [0.0], [1.0]]; Y = [[1.0], [0.0], [1.0]]
        >>> r = bezier_search(a, a, X, Y, steps=2, n_points=5)
        >>> r.status, r.steps, float(r.linear.barrier)
        ('sampled', 2, 0.0)
    """

    linear: PathResult
    curved: PathResult
    steps: int
    control: np.ndarray

    @property
    def status(self) -> str:
        """``"sampled"``: a fixed-budget local search evaluated at sampled positions."""
        return "sampled"

    def to_dict(self) -> dict:
        return {
            "status": self.status,
            "linear": self.linear.to_dict(),
            "curved": self.curved.to_dict(),
            "steps": self.steps,
            "barrier_linear": self.linear.barrier,
            "barrier_curved": self.curved.barrier,
        }


def _torch_forward(lay: Any, theta: Any, X: Any, torch: Any) -> Any:
    d = lay.dims
    h = X
    for k in range(len(d) - 1):
        W = theta[lay.w_offset[k]: lay.w_offset[k] + d[k + 1] * d[k]].reshape(d[k + 1], d[k])
        b = theta[lay.b_offset[k]: lay.b_offset[k] + d[k + 1]]
        z = h @ W.T + b
        h = torch.relu(z) if k < len(d) - 2 else z
    if lay.skip_offset is not None:
        o, i = d[-1], d[0]
        S = theta[lay.skip_offset: lay.skip_offset + o * i].reshape(o, i)
        s = theta[lay.skip_offset + o * i: lay.skip_offset + o * i + o]
        h = h + X @ S.T + s
    return h



def _torch_loss(out: Any, Yt: Any, loss: str, torch: Any) -> Any:
    """The data loss of ``out`` against ``Yt`` in torch (mean squared error halved, or the
    logistic loss), as :func:`path_losses` measures it."""
    if loss == "mse":
        return 0.5 * ((out - Yt) ** 2).sum() / out.shape[0]
    return torch.nn.functional.softplus(-Yt * out).mean()


def _search_setup(net_a: Network, net_b: Network, X: Any, Y: Any, loss: str, align_first: bool,
                  torch: Any, where: str) -> tuple:
    """What both path searches start from: the checked data, ``net_b`` aligned to
    ``net_a`` (or as given), the parameter layout, both endpoints' parameter vectors and
    the data as torch tensors.  A bad argument's error starts with ``where`` (the search)."""
    try:
        _check_pair(net_a, net_b)
        if loss not in LOSSES:
            raise PathError(f"loss: unknown name {loss!r} (expected one of {', '.join(LOSSES)})")
        X, Y = _data(net_a, X, Y, loss)
    except PathError as e:
        raise PathError(f"{where}: {str(e).removeprefix('paths: ')}") from None
    b = align(net_a, net_b) if align_first else net_b.float()
    ta = torch.tensor(parameter_vector(net_a.float()).astype(float))
    tb = torch.tensor(parameter_vector(b).astype(float))
    return X, Y, b, parameter_layout(net_a), ta, tb, torch.tensor(X), torch.tensor(Y)

def bezier_search(
    net_a: Network,
    net_b: Network,
    X: Any,
    Y: Any,
    *,
    kind: str = "bezier",
    steps: int = 500,
    lr: float = 1e-2,
    batch_t: int = 8,
    n_points: int = 41,
    loss: str = "mse",
    align_first: bool = True,
    seed: int = 0,
) -> BezierSearch:
    """Optimise the control point of a ``bezier`` or ``polyline`` path between ``net_a``
    and (aligned) ``net_b`` to lower the loss along it: Adam on the loss averaged over
    ``batch_t`` uniform random ``t`` per step, starting from the midpoint.  Returns the
    straight and the curved path, both evaluated on ``n_points`` positions.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> rng = np.random.default_rng(1)
        >>> X = rng.normal(size=(30, 2)); Y = np.abs(X[:, :1])
        >>> def net(s):
        ...     r = np.random.default_rng(s)
        ...     return Network([r.normal(size=(6, 2)), r.normal(size=(1, 6))], [r.normal(size=6), r.normal(size=1)])
        >>> res = bezier_search(net(2), net(3), X, Y, steps=100)
        >>> bool(res.curved.barrier <= res.linear.barrier)
        True
    """
    torch = require("torch", "torch")
    if kind not in ("bezier", "polyline"):
        raise PathError(f"bezier_search: kind must be 'bezier' or 'polyline', got {kind!r}")
    steps, batch_t = _int_arg("steps", steps, 0), _int_arg("batch_t", batch_t, 1)
    lr, seed = _positive("lr", lr), _int_arg("seed", seed, 0)
    _int_arg("n_points", n_points, 2)
    X, Y, b, lay, ta, tb, Xt, Yt = _search_setup(net_a, net_b, X, Y, loss, align_first, torch, "bezier_search")
    c = (0.5 * (ta + tb)).clone().requires_grad_(True)
    opt = torch.optim.Adam([c], lr=lr)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        total = 0.0
        for t in torch.rand(batch_t, generator=gen, dtype=torch.float64):
            if kind == "bezier":
                th = (1 - t) ** 2 * ta + 2 * t * (1 - t) * c + t**2 * tb
            elif t <= 0.5:
                th = (1 - 2 * t) * ta + 2 * t * c
            else:
                th = (2 - 2 * t) * c + (2 * t - 1) * tb
            total = total + _torch_loss(_torch_forward(lay, th, Xt, torch), Yt, loss, torch)
        opt.zero_grad()
        (total / batch_t).backward()
        opt.step()
    control = _finite_search_result("bezier_search", c.detach().numpy().copy(), lr)
    lin = path_losses(net_a, b, X, Y, kind="linear", n_points=n_points, loss=loss, align_first=False)
    cur = path_losses(net_a, b, X, Y, kind=kind, control=control, n_points=n_points, loss=loss,
                      align_first=False)
    return BezierSearch(linear=_mark(lin, align_first), curved=_mark(cur, align_first),
                        steps=int(steps), control=control)


def _finite_search_result(where: str, points: np.ndarray, lr: float) -> np.ndarray:
    """``points`` (the optimised control point or bends) when finite; one error naming the
    search and its learning rate when Adam diverged (lr = 1e300 gave a NaN barrier, or a
    NetworkError about layer 1 that did not say where it came from).

    Example:
        >>> _finite_search_result("bezier_search", np.array([1.0, float("nan")]), 1e300)
        Traceback (most recent call last):
        ...
        relulab.dynamics.paths.PathError: bezier_search: the search diverged (lr=1e+300): ...
    """
    if not np.all(np.isfinite(points)):
        raise PathError(f"{where}: the search diverged (lr={lr:g}): the optimised path has "
                        "non-finite parameters; use a smaller lr")
    return points


def _mark(res: PathResult, aligned: bool) -> PathResult:
    from dataclasses import replace

    return replace(res, aligned=aligned)


@dataclass(frozen=True)
class PolylineSearch(Result):
    """A piecewise-linear path with several optimised bends (a stronger search than one
    Bezier control point).

    Attributes:
        linear: the straight path (after alignment), for comparison.
        ts: positions where the polyline's loss was evaluated (bends at ``j/(bends+1)``).
        losses: the loss there.
        loss_a, loss_b: the endpoints' losses.
        barrier: ``max(losses) - max(loss_a, loss_b)`` (>= 0) on the evaluated positions.
        bends: the optimised bend points, shape ``(bends, parameters)``.
        steps: optimisation steps taken.
        status: always ``"sampled"``: a fixed-budget local search evaluated at sampled
            positions; a positive barrier is evidence, not proof, of disconnection.

    Example:
        >>> from relulab import Network
        >>> a = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> r = polyline_search(a, a, [[-1.0], [1.0]], [[1.0], [1.0]], bends=2, steps=2)
        >>> r.status, r.bends.shape[0], float(r.barrier)
        ('sampled', 2, 0.0)
    """

    linear: PathResult
    ts: np.ndarray
    losses: np.ndarray
    loss_a: float
    loss_b: float
    barrier: float
    bends: np.ndarray
    steps: int

    @property
    def status(self) -> str:
        """``"sampled"``: a fixed-budget local search evaluated at sampled positions."""
        return "sampled"

    def to_dict(self) -> dict:
        return {"status": self.status, "barrier_linear": self.linear.barrier, "barrier": self.barrier,
                "ts": np.asarray(self.ts).tolist(), "losses": np.asarray(self.losses).tolist(),
                "loss_a": self.loss_a, "loss_b": self.loss_b,
                "steps": self.steps, "n_bends": int(self.bends.shape[0])}


def _polyline_theta(nodes: Any, t: Any) -> Any:
    """The point at ``t`` of the polyline through ``nodes`` (equally spaced in ``t``)."""
    k = nodes.shape[0] - 1
    s = min(max(float(t) * k, 0.0), k - 1e-12)  # tol: keep t = 1 inside the last segment
    j = int(s)
    u = s - j
    return (1 - u) * nodes[j] + u * nodes[j + 1]


def polyline_search(
    net_a: Network,
    net_b: Network,
    X: Any,
    Y: Any,
    *,
    bends: int = 4,
    steps: int = 500,
    lr: float = 1e-2,
    batch_t: int = 8,
    points_per_segment: int = 20,
    loss: str = "mse",
    align_first: bool = True,
    seed: int = 0,
) -> PolylineSearch:
    """Optimise ``bends`` interior points of a piecewise-linear path from ``net_a`` to
    (aligned) ``net_b``: Adam on the loss averaged over ``batch_t`` uniform random ``t``
    per step, the bends starting on the straight line (so ``steps = 0`` is the straight
    path).  The result is evaluated at ``points_per_segment`` positions per segment.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> rng = np.random.default_rng(1)
        >>> X = rng.normal(size=(30, 2)); Y = np.abs(X[:, :1])
        >>> def net(s):
        ...     r = np.random.default_rng(s)
        ...     return Network([r.normal(size=(6, 2)), r.normal(size=(1, 6))], [r.normal(size=6), r.normal(size=1)])
        >>> res = polyline_search(net(2), net(3), X, Y, bends=3, steps=100)
        >>> bool(res.barrier <= res.linear.barrier + 1e-9)
        True
    """
    torch = require("torch", "torch")
    bends, steps, batch_t = _int_arg("bends", bends, 1), _int_arg("steps", steps, 0), _int_arg("batch_t", batch_t, 1)
    points_per_segment = _int_arg("points_per_segment", points_per_segment, 1)
    lr, seed = _positive("lr", lr), _int_arg("seed", seed, 0)
    X, Y, b, lay, ta, tb, Xt, Yt = _search_setup(net_a, net_b, X, Y, loss, align_first, torch,
                                                   "polyline_search")
    fr = torch.linspace(0, 1, bends + 2, dtype=torch.float64)[1:-1, None]
    inner = ((1 - fr) * ta + fr * tb).clone().requires_grad_(True)
    opt = torch.optim.Adam([inner], lr=lr)
    gen = torch.Generator().manual_seed(seed)

    def path_loss(nodes: Any, t: Any) -> Any:
        return _torch_loss(_torch_forward(lay, _polyline_theta(nodes, t), Xt, torch), Yt, loss, torch)

    for _ in range(steps):
        nodes = torch.cat([ta[None], inner, tb[None]])
        total = sum(path_loss(nodes, t) for t in torch.rand(batch_t, generator=gen, dtype=torch.float64))
        opt.zero_grad()
        (total / batch_t).backward()
        opt.step()
    _finite_search_result("polyline_search", inner.detach().numpy(), lr)
    nodes = torch.cat([ta[None], inner, tb[None]]).detach()
    ts = np.linspace(0.0, 1.0, (bends + 1) * points_per_segment + 1)
    with torch.no_grad():
        losses = np.array([float(path_loss(nodes, t)) for t in ts])
    la, lb = float(losses[0]), float(losses[-1])
    lin = path_losses(net_a, b, X, Y, kind="linear", n_points=len(ts), loss=loss, align_first=False)
    return PolylineSearch(linear=_mark(lin, align_first), ts=ts, losses=losses, loss_a=la, loss_b=lb,
                          barrier=float(max(losses.max() - max(la, lb), 0.0)),
                          bends=nodes[1:-1].numpy().copy(), steps=int(steps))


def layer_norms(net: Network) -> dict[str, list[float]]:
    """The norms that decoupled weight decay bounds for the Lion-K optimizers, per layer:
    ``weights_max_abs`` (entrywise l_inf, the AdamW / Lion / sign-descent ball),
    ``weights_spectral`` (largest singular value, the Muon ball, one per weight matrix),
    ``biases_max_abs`` (biases train in an AdamW group under Muon too).  With weight decay
    ``lambda`` and the optimizer's update norm ``u`` (1 for sign descent), the iterates
    settle where the bounded norm is at most ``u / lambda``.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[3.0, 4.0]], [[-2.0]]], [[0.5], [0.0]])
        >>> layer_norms(net)
        {'weights_max_abs': [4.0, 2.0], 'weights_spectral': [5.0, 2.0], 'biases_max_abs': [0.5, 0.0]}
    """
    if not isinstance(net, Network):
        raise PathError("layer_norms: expected a relulab Network")
    f = net.float()
    return {
        "weights_max_abs": [float(np.abs(W).max()) if W.size else 0.0 for W in f.weights],
        "weights_spectral": [float(np.linalg.norm(W, 2)) if W.size else 0.0 for W in f.weights],
        "biases_max_abs": [float(np.abs(b).max()) if b.size else 0.0 for b in f.biases],
    }
