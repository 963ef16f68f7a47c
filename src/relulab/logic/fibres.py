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
  first-layer one, less its weights into dead second-layer neurons, counted there);
* discrete: permutations of equal-role neurons within a layer (``n1'! n2'!`` for live,
  distinct neurons).

The normal form removes all of these: dead neurons dropped, stably active second-layer
neurons folded into an affine read-out of the first layer, every row replaced by the
primitive integer vector on its ray (common denominator cleared, gcd divided out: the
unique representative under positive rescaling) and sorted.  Two networks with equal normal forms are equal
(each transformation keeps the function: an exact statement).  When the normal forms
differ, :func:`fibre_equivalent` looks for an exact witness input; without one it
answers ``unknown`` - the description is the generic one, and a non-generic parameter
may have further symmetries.  Everything is exact and polynomial: ``O(n1 n2 + n log n)``
arithmetic operations on Python integers (rows are brought to common denominators once, so
no Fraction is normalised inside the loops: a width-64 pair takes a few milliseconds).

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

import math
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import is_int_at_least
from ..network import Network
from ..results import Result
from ._inputs import cube_box, network_arg, same_inputs
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


def _check(net: Network, where: str = "fibres") -> Network:
    network_arg(net, where)
    if net.n_hidden_layers != 2 or net.output_dim != 1 or net.skip is not None:
        raise GraphError(f"fibres: expected a three-layer network d -> n1 -> n2 -> 1 without skip, got {net!r}")
    return net.exact()


def _box(net: Network, box: Any, where: str = "fibres") -> tuple[list[Fraction], list[Fraction]]:
    d = net.input_dim
    if box is None:
        return [Fraction(0)] * d, [Fraction(1)] * d
    B = cube_box(net, box, where)
    return [Fraction(float(v)) for v in B.lo], [Fraction(float(v)) for v in B.hi]


def _status(net: Network, box, where: str = "fibres") -> tuple[list[str], list[str]]:
    """Exact interval status of every hidden neuron: "dead", "stable" or "live"."""
    lo, hi = _box(net, box, where)
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
    net = _check(net, "fibre")
    d, (n1, n2) = net.input_dim, net.widths
    s1, s2 = _status(net, box, "fibre")
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
        # a dead first-layer neuron frees its row, its bias and its outgoing weights, less
        # those into dead second-layer neurons: dead_layer2 counts them already
        "dead_layer1": sum(1 for i in range(n1) if s1[i] == "dead") * (d + 1 + n2 - len(dead2)),
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


def _ints(values) -> tuple[int, list[int]]:
    """``(L, ints)`` with ``values == [k / L for k in ints]`` (Fractions or ints in)."""
    fr = [Fraction(v) for v in values]
    return _common([v.numerator for v in fr], [v.denominator for v in fr])


def _common(nums: list[int], dens: list[int]) -> tuple[int, list[int]]:
    """``(L, ints)`` with ``nums[k] / dens[k] == ints[k] / L`` (dens positive)."""
    L = math.lcm(*dens) if dens else 1
    return L, [n * (L // d) for n, d in zip(nums, dens, strict=True)]


def _primitive(ints: list[int]) -> tuple[int, tuple[int, ...]]:
    """``(g, p)`` with ``ints == g * p``, ``g >= 0`` and ``p`` primitive (gcd 1)."""
    g = math.gcd(*ints)
    return g, (tuple(k // g for k in ints) if g else tuple(ints))


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
    W1, b1, W2, b2, W3, b3 = (net.weights[0], net.biases[0], net.weights[1], net.biases[1],
                              net.weights[2], net.biases[2])
    n1, n2 = net.widths
    lo, hi = _box(net, box)
    D, box_ints = _ints([*lo, *hi])
    Lo, Hi = box_ints[:len(lo)], box_ints[len(lo):]
    # First layer: row i = s_i * p_i with p_i primitive and s_i = g_i / L_i > 0; the
    # neuron is relu(s_i p_i.(x, 1)), so s_i moves into W2 and p_i is its canonical form.
    # Its exact interval on the box, times D / s_i, is [zl_i, zh_i] in integers.
    prim1: list[tuple[int, ...] | None] = []
    scale1: list[tuple[int, int]] = []
    ul: list[int] = []
    uh: list[int] = []
    for i in range(n1):
        L, ints = _ints([*W1[i], b1[i]])
        g, p = _primitive(ints)
        *w, b = p
        zl = b * D + sum(wk * (lk if wk > 0 else hk) for wk, lk, hk in zip(w, Lo, Hi, strict=True))
        zh = b * D + sum(wk * (hk if wk > 0 else lk) for wk, lk, hk in zip(w, Lo, Hi, strict=True))
        dead = g == 0 or zh <= 0
        prim1.append(None if dead else p)
        scale1.append((g, L))
        ul.append(max(zl, 0) if not dead else 0)
        uh.append(max(zh, 0) if not dead else 0)
    order1 = sorted({p for p in prim1 if p is not None})
    pos1 = {p: t for t, p in enumerate(order1)}
    live = [i for i in range(n1) if prim1[i] is not None]
    # exact entries are Fractions or ints: both have .numerator / .denominator
    W2q = [[W2[j, i] for i in live] for j in range(n2)]
    out_lin = [Fraction(0)] * len(order1)
    out_c = Fraction(b3[0])
    terms2: dict[tuple[int, ...], Fraction] = {}
    for j in range(n2):
        a = W3[0, j]
        if a == 0:
            continue
        # Row j in the canonical first-layer units: (W2[j, i] s_i for live i, b2[j]) = R / L2.
        bj = b2[j]
        L2, R = _common([w.numerator * scale1[i][0] for w, i in zip(W2q[j], live, strict=True)]
                        + [bj.numerator],
                        [w.denominator * scale1[i][1] for w, i in zip(W2q[j], live, strict=True)]
                        + [bj.denominator])
        Rb = R[-1]
        lo2 = Rb * D + sum(r * (ul[i] if r > 0 else uh[i]) for r, i in zip(R[:-1], live, strict=True))
        hi2 = Rb * D + sum(r * (uh[i] if r > 0 else ul[i]) for r, i in zip(R[:-1], live, strict=True))
        if hi2 <= 0:  # dead on the box: it hides what feeds it
            continue
        V = [0] * len(order1)  # equal rows (same neuron up to scale) add their weights
        for r, i in zip(R[:-1], live, strict=True):
            V[pos1[prim1[i]]] += r
        if lo2 >= 0:  # stable: a relu(v h + c) = a (v h + c), an affine read-out of h
            for t, v in enumerate(V):
                out_lin[t] += a * Fraction(v, L2)
            out_c += a * Fraction(Rb, L2)
            continue
        g, key = _primitive([*V, Rb])
        if g == 0:
            continue
        terms2[key] = terms2.get(key, Fraction(0)) + a * Fraction(g, L2)
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
    _check(f, "fibre_equivalent")
    _check(g, "fibre_equivalent")
    same_inputs(f, g, "fibre_equivalent")
    lo, hi = _box(f, box, "fibre_equivalent")
    if not is_int_at_least(n_samples, 0):
        raise GraphError(f"fibre_equivalent: n_samples must be an integer >= 0, got {n_samples!r}")
    if fibre_normal_form(f, box) == fibre_normal_form(g, box):
        return FibreTest("equal", "fibre normal form", None, time.perf_counter() - t0)
    if n_samples == 0:
        return FibreTest("unknown", "normal forms differ; no witness search (n_samples=0)", None,
                         time.perf_counter() - t0)
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
