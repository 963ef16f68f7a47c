"""Parameter fibres of three-layer bottleneck networks ``d -> n1 -> n2 -> 1`` on a box,
and the polynomial-time equivalence test they give.

The fibre of a parameter is the set of all parameters realising the same function.  Here
it is described by the transformations that generate it near a parameter:

* continuous: a positive rescaling of every live hidden neuron (``n1' + n2'``
  dimensions); for every second-layer neuron that is stably active on the box (it
  *preserves* the first layer's geometry: the output sees ``a_j (v_j·h + c_j)``, an
  affine function of ``h``), only the sums ``sum_j a_j v_j`` and ``c + sum_j a_j c_j``
  matter, which frees ``s (n1' + 2) + 1 - (n1' + 1)`` dimensions (``s >= 1`` such
  neurons); a dead neuron (never active on the box: it *hides* what feeds it) leaves its
  own parameters free (``n1 + 2`` for a second-layer neuron, ``d + 1 + n2`` for a
  first-layer one);
* discrete: permutations of equal-role neurons within a layer (``n1'! n2'!`` for live,
  distinct neurons).

The normal form removes all of these: dead neurons dropped, stably active second-layer
neurons folded into an affine read-out of the first layer, rows normalised (largest
entry 1 in absolute value) and sorted.  Two networks with equal normal forms are equal
(each transformation keeps the function: an exact statement).  When the normal forms
differ, :func:`fibre_equivalent` looks for an exact witness input; without one it
answers ``unknown`` - the description is the generic one, and a non-generic parameter
may have further symmetries.  Everything is exact (Fractions) and polynomial:
``O(n1 n2 + n log n)`` arithmetic operations for the normal form.

Example:
    >>> from relulab import Network
    >>> from relulab.symmetry import random_symmetry
    >>> f = Network([[[1, -1], [2, 1], [-1, 3]], [[1, 1, -1], [-1, 2, 1]], [[1, -2]]],
    ...             [[0, -1, 1], [1, -1], [0]]).exact()
    >>> fibre_equivalent(f, random_symmetry(f, 4)).status
    'equal'
    >>> fibre(f).dimension
    5
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..domain import Box
from ..network import Network
from ..results import Result
from .graph import GraphError

__all__ = ["fibre", "FibreDescription", "fibre_normal_form", "fibre_equivalent", "FibreTest"]


@dataclass(frozen=True)
class FibreDescription(Result):
    """The generic fibre of a bottleneck parameter.

    Attributes:
        architecture: ``(d, n1, n2, 1)``.
        dimension: the fibre's dimension (the continuous symmetries' count).
        continuous: dimension per kind of continuous symmetry.
        discrete_order: number of permutations in the discrete part.
        dead: ``(layer, neuron)`` of neurons never active on the box.
        stable: second-layer neurons always active on the box.
        predicted_functional_dimension: ``n_params - dimension``.

    Example:
        >>> from relulab import Network
        >>> f = Network([[[1, -1], [2, 1]], [[1, 1], [-1, 2]], [[1, -2]]], [[0, 1], [1, -1], [0]]).exact()
        >>> r = fibre(f)
        >>> r.architecture, r.dimension, r.discrete_order
        ((2, 2, 2, 1), 8, 2)
    """

    architecture: tuple[int, ...]
    dimension: int
    continuous: dict
    discrete_order: int
    dead: tuple
    stable: tuple
    predicted_functional_dimension: int


def _check(net: Network) -> Network:
    if net.n_hidden_layers != 2 or net.output_dim != 1 or net.skip is not None:
        raise GraphError(f"fibres: expected a three-layer network d -> n1 -> n2 -> 1 without skip, got {net!r}")
    return net.exact()


def _box(net: Network, box: Any) -> tuple[list[Fraction], list[Fraction]]:
    d = net.input_dim
    if box is None:
        return [Fraction(0)] * d, [Fraction(1)] * d
    B = box if isinstance(box, Box) else Box(*box)
    return [Fraction(float(v)) for v in B.lo], [Fraction(float(v)) for v in B.hi]


def _status(net: Network, box) -> tuple[list[str], list[str]]:
    """Exact interval status of every hidden neuron: "dead", "stable" or "live"."""
    lo, hi = _box(net, box)
    W1, b1, W2, b2 = net.weights[0], net.biases[0], net.weights[1], net.biases[1]
    s1, hlo, hhi = [], [], []
    for w, b in zip(W1, b1, strict=True):
        zl = b + sum((wi * (l if wi > 0 else h) for wi, l, h in zip(w, lo, hi, strict=True)), Fraction(0))
        zh = b + sum((wi * (h if wi > 0 else l) for wi, l, h in zip(w, lo, hi, strict=True)), Fraction(0))
        s1.append("dead" if zh <= 0 else ("stable" if zl >= 0 else "live"))
        hlo.append(max(zl, Fraction(0)))
        hhi.append(max(zh, Fraction(0)))
    s2 = []
    for w, b in zip(W2, b2, strict=True):
        zl = b + sum((wi * (l if wi > 0 else h) for wi, l, h in zip(w, hlo, hhi, strict=True)), Fraction(0))
        zh = b + sum((wi * (h if wi > 0 else l) for wi, l, h in zip(w, hlo, hhi, strict=True)), Fraction(0))
        s2.append("dead" if zh <= 0 else ("stable" if zl >= 0 else "live"))
    return s1, s2


def fibre(net: Network, box: Any = None) -> FibreDescription:
    """The generic fibre of ``net``'s parameter on ``box`` (default [0, 1]^d); see the
    module docstring for what is counted.

    Example:
        >>> from relulab import Network
        >>> f = Network([[[1, -1], [2, 1]], [[1, 1], [-1, 2]], [[1, -2]]], [[0, 1], [1, -1], [0]]).exact()
        >>> fibre(f).predicted_functional_dimension
        7
    """
    net = _check(net)
    d, (n1, n2) = net.input_dim, net.widths
    s1, s2 = _status(net, box)
    W3 = net.weights[2]
    live1 = [i for i in range(n1) if s1[i] != "dead"]
    live2 = [j for j in range(n2) if s2[j] == "live" and W3[0, j] != 0]
    stable2 = [j for j in range(n2) if s2[j] == "stable" and W3[0, j] != 0]
    dead2 = [j for j in range(n2) if s2[j] == "dead"]
    cont = {
        "rescale_layer1": len(live1),
        "rescale_layer2": len(live2),
        "stable_layer2_trade": (len(stable2) * (len(live1) + 2) + 1 - (len(live1) + 1)) if stable2 else 0,
        "dead_layer2": len(dead2) * (n1 + 2),
        "dead_layer1": sum(1 for i in range(n1) if s1[i] == "dead") * (d + 1 + n2),
    }
    dim = sum(cont.values())
    order = _fact(len(live1)) * _fact(len(live2))
    dead = tuple([(0, i) for i in range(n1) if s1[i] == "dead"] + [(1, j) for j in dead2])
    return FibreDescription((d, n1, n2, 1), dim, cont, order, dead, tuple(stable2), net.n_params - dim)


def _fact(n: int) -> int:
    out = 1
    for k in range(2, n + 1):
        out *= k
    return out


def _normalise(row: list[Fraction]) -> tuple[Fraction, list[Fraction]]:
    top = max(abs(v) for v in row)
    return top, [v / top for v in row]


def fibre_normal_form(net: Network, box: Any = None) -> tuple:
    """A hashable normal form: equal for parameters in the same generic fibre.

    Example:
        >>> from relulab import Network
        >>> f = Network([[[1, -1], [2, 1]], [[1, 1], [-1, 2]], [[1, -2]]], [[0, 1], [1, -1], [0]]).exact()
        >>> g = Network([[[2, -2], [2, 1]], [[0.5, 1], [-0.5, 2]], [[1, -2]]], [[0, 1], [1, -1], [0]]).exact()
        >>> fibre_normal_form(f) == fibre_normal_form(g)   # neuron 1 of layer 1 rescaled by 2
        True
    """
    net = _check(net)
    s1, s2 = _status(net, box)
    W1, b1, W2, b2, W3, b3 = (net.weights[0], net.biases[0], net.weights[1], net.biases[1],
                              net.weights[2], net.biases[2])
    n1, n2 = net.widths
    # First layer: live neurons, normalised rows; the factor moves into W2.
    rows1, scale1 = [], []
    keep1 = [i for i in range(n1) if s1[i] != "dead"]
    for i in keep1:
        top, r = _normalise([*W1[i], b1[i]])
        if top == 0:  # a constant neuron relu(b) = 0 (b <= 0, else it would be stable)
            continue
        rows1.append(tuple(r))
        scale1.append((i, top))
    # Merge equal normalised rows (same neuron up to scale): their outgoing weights add.
    order1 = sorted(set(rows1))
    pos1 = {r: t for t, r in enumerate(order1)}
    V = [[Fraction(0)] * len(order1) for _ in range(n2)]
    for (i, top), r in zip(scale1, rows1, strict=True):
        for j in range(n2):
            V[j][pos1[r]] += W2[j, i] * top
    out_lin = [Fraction(0)] * len(order1)
    out_c = b3[0]
    terms2 = {}
    for j in range(n2):
        a = W3[0, j]
        if s2[j] == "dead" or a == 0:
            continue
        if s2[j] == "stable":  # a relu(v h + c) = a (v h + c): an affine read-out of h
            for t in range(len(order1)):
                out_lin[t] += a * V[j][t]
            out_c += a * b2[j]
            continue
        row = [*V[j], b2[j]]
        top = max(abs(v) for v in row)
        if top == 0:
            continue
        key = tuple(v / top for v in row)
        terms2[key] = terms2.get(key, Fraction(0)) + a * top
    second = tuple(sorted((k, v) for k, v in terms2.items() if v != 0))
    return tuple(order1), second, tuple(out_lin), out_c


@dataclass(frozen=True)
class FibreTest(Result):
    """``status``: ``equal`` (same normal form: exact), ``different`` (exact witness) or
    ``unknown``; ``time`` in seconds.

    Example:
        >>> from relulab import Network
        >>> f = Network([[[1, -1], [2, 1]], [[1, 1], [-1, 2]], [[1, -2]]], [[0, 1], [1, -1], [0]]).exact()
        >>> r = fibre_equivalent(f, f)
        >>> r.status, r.method, r.witness
        ('equal', 'fibre normal form', None)
    """

    status: str
    method: str
    witness: tuple | None
    time: float


def fibre_equivalent(f: Network, g: Network, box: Any = None, *, n_samples: int = 64,
                     seed: int = 0) -> FibreTest:
    """Polynomial-time functional equivalence of two bottleneck parameters (see the
    module docstring): normal forms, then an exact witness search on ``n_samples``
    rational points of the box.

    Example:
        >>> from relulab import Network
        >>> f = Network([[[1, -1], [2, 1]], [[1, 1], [-1, 2]], [[1, -2]]], [[0, 1], [1, -1], [0]]).exact()
        >>> g = Network([[[1, -1], [2, 1]], [[1, 1], [-1, 2]], [[1, -3]]], [[0, 1], [1, -1], [0]]).exact()
        >>> r = fibre_equivalent(f, g)
        >>> x = [list(r.witness)]
        >>> r.status, r.method, bool(f(x)[0, 0] != g(x)[0, 0])
        ('different', 'exact witness', True)
    """
    t0 = time.perf_counter()
    if fibre_normal_form(f, box) == fibre_normal_form(g, box):
        return FibreTest("equal", "fibre normal form", None, time.perf_counter() - t0)
    lo, hi = _box(f, box)
    rng = np.random.default_rng(seed)
    F, G = f.exact(), g.exact()
    # Dyadic points with 10 bits: exact and cheap.
    U = rng.integers(0, 1025, size=(n_samples, len(lo)))
    X = np.array([[lo[k] + (hi[k] - lo[k]) * Fraction(int(u), 1024) for k, u in enumerate(row)] for row in U],
                 dtype=object)
    fx, gx = F(X)[:, 0], G(X)[:, 0]
    for i in range(n_samples):
        if fx[i] != gx[i]:
            return FibreTest("different", "exact witness", tuple(X[i]), time.perf_counter() - t0)
    return FibreTest("unknown", "no witness on samples", None, time.perf_counter() - t0)
