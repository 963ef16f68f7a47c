"""Causal mechanism reduction: replace hidden neurons by constants or by affine functions
of the retained neurons of their layer, and compile the result into a smaller dense
network.

A trained network is a deterministic causal model whose variables are the neurons.
Replacing neuron ``i`` of hidden layer ``k`` (activation ``a_i = relu(z_i)``) by

* ``by="constant"``: its mean activation on the data, ``a_i := mean(a_i)``, or
* ``by="affine"``: the least-squares affine function of the *retained* neurons of the same
  layer, ``a_i := sum_j alpha_j a_j + beta`` (fitted on the data),

makes its contribution to the next layer affine in the retained activations, so it folds
exactly into the next layer's weights and bias: a smaller dense network, no new layer.
Layers are processed in order, each fitted on the activations of the already reduced
network (the downstream effects of upstream replacements are taken into account).

Scores for choosing which neurons to keep (higher = more important; see
:func:`neuron_scores`):

* ``"variance"`` - variance-based pruning (VBP): ``Var(a_i)``.  Not invariant under the
  positive rescalings that leave the function unchanged;
* ``"logit_distortion"`` - ``E ||d f / d a_i (x)||^2 (a_i(x) - mean a_i)^2``: the
  (first-order) output distortion of mean-replacing ``a_i``; exact for the last hidden
  layer and invariant under rescalings (the gradient scales inversely to the activation);
* ``"mean_replacement"`` - the measured ``E ||f(x) - f_{a_i := mean}(x)||^2`` by forward
  passes with the intervention (also invariant).

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> net = Network([[[1.0], [2.0], [-1.0]], [[1.0, 1.0, 1.0]]], [[0.0, 0.0, 0.0], [0.0]])
    >>> X = np.linspace(0, 1, 11)[:, None]       # on x >= 0, neuron 1 is 2 * neuron 0
    >>> r = replace(net, [(0, 1)], by="affine", data=X)
    >>> r.network.widths, bool(np.allclose(r.network(X), net(X)))
    ((2,), True)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import RelulabError, is_int_at_least
from ..layers import Layers
from ..network import Network

__all__ = ["replace", "Replacement", "neuron_scores", "plan", "SCORES"]

SCORES = ("mean_replacement", "variance", "logit_distortion")

Neuron = tuple[int, int]


@dataclass(frozen=True)
class Replacement:
    """A compiled replacement.

    Attributes:
        network: the smaller dense network (float64).
        replaced: the replaced neurons ``(layer, index)``, 0-based, indices of the input.
        kept: per hidden layer, the original indices of the retained neurons in order.
        by: ``"constant"`` or ``"affine"``.
        coefficients: per replaced neuron ``"k:i"``: ``{"const": c}`` or
            ``{"alpha": [...], "beta": b}`` (alpha over the retained neurons of layer k).
        fit_residual: per replaced neuron, the RMS error of its replacement on the data.
        data_max_deviation: ``max |f(X) - g(X)|`` over the data.
        data_rms_deviation: root mean square of ``f(X) - g(X)``.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> net = Network([[[1.0], [2.0], [-1.0]], [[1.0, 1.0, 1.0]]], [[0.0, 0.0, 0.0], [0.0]])
        >>> X = np.linspace(0, 1, 11)[:, None]
        >>> r = replace(net, [(0, 1)], by="affine", data=X)     # neuron 1 = 2 * neuron 0 on X
        >>> r.replaced, r.kept, r.by, r.data_max_deviation < 1e-12
        (((0, 1),), ((0, 2),), 'affine', True)
    """

    network: Network
    replaced: tuple[Neuron, ...]
    kept: tuple[tuple[int, ...], ...]
    by: str
    coefficients: dict
    fit_residual: dict
    data_max_deviation: float
    data_rms_deviation: float

    def to_dict(self) -> dict:
        return {
            "by": self.by,
            "replaced": [list(n) for n in self.replaced],
            "kept": [list(k) for k in self.kept],
            "widths_after": list(self.network.widths),
            "coefficients": self.coefficients,
            "fit_residual": self.fit_residual,
            "data_max_deviation": self.data_max_deviation,
            "data_rms_deviation": self.data_rms_deviation,
        }


def _hidden_acts(lay: Layers, X: np.ndarray, upto: int) -> np.ndarray:
    H = X
    for k in range(upto + 1):
        H = np.maximum(H @ lay.Ws[k].T + lay.bs[k], 0.0)
    return H


def _check_data(net: Network, data: np.ndarray | None, where: str = "replace") -> np.ndarray:
    if data is None:
        raise RelulabError(f"{where}: data=X is needed to fit the replacements")
    try:
        X = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError):
        raise RelulabError(f"{where}: data must be an (n, d) array of numbers") from None
    if X.ndim != 2 or X.shape[1] != net.input_dim:
        raise RelulabError(f"{where}: data has shape {X.shape}; the network takes {net.input_dim} inputs")
    if X.shape[0] == 0:
        raise RelulabError(f"{where}: data is empty")
    if not np.all(np.isfinite(X)):
        raise RelulabError(f"{where}: data contains NaN or infinite entries")
    return X


def _neuron_list(net: Network, neurons: Iterable[Sequence[int]]) -> list[set[int]]:
    per = [set() for _ in net.widths]
    try:
        neurons = list(neurons)
    except TypeError:
        raise RelulabError(f"replace: neurons must be a list of (layer, index) pairs, got {neurons!r}") from None
    for n in neurons:
        # whole numbers only: (0, 0.7) was read as neuron 0
        if not (isinstance(n, (tuple, list)) and len(n) == 2 and all(is_int_at_least(v, 0) for v in n)):
            raise RelulabError(f"replace: a neuron is a (layer, index) pair of integers >= 0, got {n!r}")
        k, i = int(n[0]), int(n[1])
        if not 0 <= k < net.n_hidden_layers:
            raise RelulabError(f"replace: hidden layer {k} does not exist (0..{net.n_hidden_layers - 1})")
        if not 0 <= i < net.widths[k]:
            raise RelulabError(f"replace: layer {k} has {net.widths[k]} neurons; no neuron {i}")
        per[k].add(i)
    return per


def replace(
    net: Network,
    neurons: Iterable[Sequence[int]],
    by: str = "constant",
    data: np.ndarray | None = None,
    *,
    ridge: float = 0.0,
) -> Replacement:
    """Replace hidden ``neurons`` (``(layer, index)`` pairs, 0-based) by constants or
    affine maps of the retained neurons of their layer, fitted on ``data``, and compile the
    result into a smaller dense network (see the module docstring).

    Args:
        ridge: optional ridge penalty of the affine least-squares fit (0: plain least
            squares, which reproduces an exactly affine dependence).

    Example:
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
        >>> r = replace(net, [(0, 1)], by="constant", data=[[-1.0], [1.0]])
        >>> r.coefficients, r.network([[2.0]]).tolist()
        ({'0:1': {'const': 0.5}}, [[2.5]])
    """
    if by not in ("constant", "affine"):
        raise RelulabError(f"replace: by must be 'constant' or 'affine', not {by!r}")
    if isinstance(ridge, bool) or not isinstance(ridge, (int, float)) or not (np.isfinite(ridge) and ridge >= 0):
        raise RelulabError(f"replace: ridge must be a finite number >= 0, got {ridge!r}")
    X = _check_data(net, data)
    per = _neuron_list(net, neurons)
    fnet = net.float()
    lay = Layers.of(fnet)
    coefs: dict = {}
    resid: dict = {}
    kept: list[tuple[int, ...]] = []
    replaced: list[Neuron] = []
    k = 0
    for k_orig in range(net.n_hidden_layers):
        R = sorted(per[k_orig])
        keep = [i for i in range(net.widths[k_orig]) if i not in per[k_orig]]
        kept.append(tuple(keep))
        if lay.n_hidden == 0:
            # An upstream layer was replaced entirely; nothing is left to replace.
            replaced += [(k_orig, i) for i in R]
            continue
        if not R:
            k += 1
            continue
        A = _hidden_acts(lay, X, k)
        Wn = lay.Ws[k + 1]
        bn = lay.bs[k + 1]
        if by == "affine" and keep:
            Z = np.concatenate([A[:, keep], np.ones((A.shape[0], 1))], axis=1)
            T = A[:, R]
            if ridge > 0:
                G = Z.T @ Z + ridge * np.diag([1.0] * len(keep) + [0.0])
                sol = np.linalg.solve(G, Z.T @ T)
            else:
                sol, *_ = np.linalg.lstsq(Z, T, rcond=None)
            fit = Z @ sol
            for t, i in enumerate(R):
                alpha, beta = sol[:-1, t], float(sol[-1, t])
                coefs[f"{k_orig}:{i}"] = {"alpha": alpha.tolist(), "beta": beta}
                resid[f"{k_orig}:{i}"] = float(np.sqrt(np.mean((fit[:, t] - T[:, t]) ** 2)))
            # a_R = A_keep alpha + beta: the next layer sees W_R a_R = (W_R alpha^T) a_keep + W_R beta
            Wn[:, keep] = Wn[:, keep] + Wn[:, R] @ sol[:-1].T
            lay.bs[k + 1] = bn + Wn[:, R] @ sol[-1]
        else:
            mu = A[:, R].mean(axis=0)
            for t, i in enumerate(R):
                coefs[f"{k_orig}:{i}"] = {"const": float(mu[t])}
                resid[f"{k_orig}:{i}"] = float(np.sqrt(np.mean((A[:, i] - mu[t]) ** 2)))
            lay.bs[k + 1] = bn + Wn[:, R] @ mu
        lay.delete(k, R)
        replaced += [(k_orig, i) for i in R]
        if lay.Ws[k].shape[0] == 0:
            lay.constant_from(k)
        else:
            k += 1
    g = lay.network()
    D = fnet(X) - g(X)
    return Replacement(
        network=g,
        replaced=tuple(replaced),
        kept=tuple(kept),
        by=by,
        coefficients=coefs,
        fit_residual=resid,
        data_max_deviation=float(np.max(np.abs(D))),
        data_rms_deviation=float(np.sqrt(np.mean(D**2))),
    )


# ---------------------------------------------------------------------------- scores
def _activations(net: Network, X: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
    Z = net.preactivations(X)
    return Z, [np.maximum(z, 0.0) for z in Z]


def _output_grads(net: Network, Z: list[np.ndarray], k: int) -> np.ndarray:
    """d f / d a_k at each data point: shape (n, m, width_k)."""
    Ws = net.weights
    L = net.n_hidden_layers
    n = Z[0].shape[0]
    G = np.broadcast_to(np.asarray(Ws[L], dtype=float), (n, *Ws[L].shape)).copy()
    for j in range(L - 1, k, -1):
        G = (G * (Z[j] > 0)[:, None, :]) @ np.asarray(Ws[j], dtype=float)
    return G


def neuron_scores(net: Network, X: np.ndarray, score: str = "logit_distortion") -> list[np.ndarray]:
    """Importance of every hidden neuron on data ``X`` (one array per hidden layer; higher
    means more important).  ``score`` is one of ``SCORES`` (see the module docstring).

    Example:
        >>> net = Network([[[1.0], [1.0]], [[10.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> X = np.linspace(-1, 1, 21)[:, None]
        >>> [s.round(3).tolist() for s in neuron_scores(net, X, "variance")]
        [[0.115, 0.115]]
        >>> [s.round(3).tolist() for s in neuron_scores(net, X, "logit_distortion")]
        [[11.474, 0.115]]
    """
    if score not in SCORES:
        raise RelulabError(f"unknown score {score!r}; choose one of {', '.join(SCORES)}")
    net = net.float()
    X = _check_data(net, X, "neuron_scores")
    Z, A = _activations(net, X)
    out: list[np.ndarray] = []
    if score == "variance":
        return [a.var(axis=0) for a in A]
    if score == "logit_distortion":
        for k, a in enumerate(A):
            G = _output_grads(net, Z, k)                    # (n, m, w)
            dev = a - a.mean(axis=0)                        # (n, w)
            out.append(np.mean(np.sum(G**2, axis=1) * dev**2, axis=0))
        return out
    # mean_replacement: intervene on each neuron in turn and run the rest of the network.
    Y = net(X)
    L = net.n_hidden_layers
    for k in range(L):
        a = A[k]
        mu = a.mean(axis=0)
        s = np.empty(a.shape[1])
        for i in range(a.shape[1]):
            H = a.copy()
            H[:, i] = mu[i]
            for j in range(k + 1, L):
                H = np.maximum(H @ net.weights[j].T + net.biases[j], 0.0)
            Yi = H @ net.weights[L].T + net.biases[L]
            if net.skip is not None:
                Yi = Yi + X @ net.skip[0].T + net.skip[1]
            s[i] = float(np.mean(np.sum((Y - Yi) ** 2, axis=1)))
        out.append(s)
    return out


def plan(scores: list[np.ndarray], keep: int | Sequence[int] | float) -> list[Neuron]:
    """The neurons to replace so that each hidden layer keeps its ``keep`` highest-scoring
    neurons (an int for every layer, one int per layer, or a fraction in (0, 1]).  Ties are
    broken by the lower index.

    Example:
        >>> plan([np.array([0.3, 0.1, 0.2])], 2)
        [(0, 1)]
    """
    out: list[Neuron] = []
    if isinstance(keep, (bool, np.bool_)):
        raise RelulabError(f"plan: keep must be an integer, a fraction or one integer per layer, got {keep!r}")
    per_layer = not isinstance(keep, (int, float, np.integer, np.floating))
    if per_layer:
        try:
            keep = list(keep)
        except TypeError:
            raise RelulabError(f"plan: keep must be an integer, a fraction or one integer per layer, "
                               f"got {keep!r}") from None
        if len(keep) != len(scores) or not all(is_int_at_least(v, 0) for v in keep):
            raise RelulabError(f"plan: keep needs one integer >= 0 per hidden layer ({len(scores)}), got {keep!r}")
    elif isinstance(keep, (int, np.integer)) and not isinstance(keep, bool) and keep < 0:
        raise RelulabError(f"plan: keep must be >= 0, got {keep}")
    for k, s in enumerate(scores):
        w = s.shape[0]
        if isinstance(keep, (float, np.floating)):
            if not 0 < keep <= 1:
                raise RelulabError(f"plan: a fraction to keep must be in (0, 1], got {keep}")
            n_keep = max(1, int(round(float(keep) * w)))
        elif not per_layer:
            n_keep = int(keep)
        else:
            n_keep = int(keep[k])
        n_keep = min(max(n_keep, 0), w)
        order = sorted(range(w), key=lambda i: (-s[i], i))
        out += [(k, i) for i in sorted(order[n_keep:])]
    return out
