"""Exact max / min networks: binary trees of pairwise max, and max-of-mins (lattice) CPWL.

The pairwise maximum uses three ReLUs, ``max(a, b) = relu(b - a) + relu(a) - relu(-a)``,
the form of the CPWL2ReLUNetwork construction (Chen, Garudadri, Rao, NeurIPS 2022);
the minimum likewise ``min(a, b) = relu(a) - relu(-a) - relu(a - b)``.  A value left
over at an odd level is carried by two ReLUs, ``relu(a) - relu(-a)``.

Example:
    >>> from fractions import Fraction
    >>> net = max_n(5)
    >>> net([3, -1, 7, 2, 0]).tolist(), net.n_hidden_layers
    ([Fraction(7, 1)], 3)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import is_int_at_least
from ..limits import check_bytes
from ..network import Network
from ..results import Result
from ._builder import Builder, Expr, F
from ._errors import ConstructionError

__all__ = [
    "max_n",
    "min_n",
    "tree_widths",
    "max_of_mins",
    "LatticeSize",
    "lattice_size",
    "chen_bound",
]


def check_int(v: object, what: str, lo: int) -> int:
    """``v`` as an int if it is an integer (not a bool) ``>= lo``, else one
    ConstructionError naming ``what``."""
    if not is_int_at_least(v, lo):
        raise ConstructionError(f"{what} must be an integer >= {lo}, got {v!r}")
    return int(v)


def _levels(m: int) -> int:
    return 0 if m <= 1 else math.ceil(math.log2(m))


def _reduce_level(b: Builder, items: list[Expr], op: str) -> list[Expr]:
    """One tree level: pair up neighbours (3 ReLUs each), carry an odd last item (2 ReLUs)."""
    out = []
    for i in range(0, len(items) - 1, 2):
        a, c = items[i], items[i + 1]
        if op == "max":
            out.append(b.carry(a) + b.relu(c - a))
        else:
            out.append(b.carry(a) - b.relu(a - c))
    if len(items) % 2:
        out.append(b.carry(items[-1]))
    return out


def tree_widths(n: int) -> tuple[int, ...]:
    """Hidden widths of :func:`max_n` / :func:`min_n`: a level with m values has
    ``3 * floor(m / 2) + 2 * (m mod 2)`` neurons and leaves ``ceil(m / 2)`` values.

    Example:
        >>> tree_widths(5)
        (8, 5, 3)
    """
    widths = []
    m = n
    while m > 1:
        widths.append(3 * (m // 2) + 2 * (m % 2))
        m = (m + 1) // 2
    return tuple(widths)


def _tree(n: int, op: str) -> Network:
    n = check_int(n, f"{op}_n: n", 1)
    # the layers are dense matrices of Python numbers (8 bytes a reference at least):
    # refuse before allocating what the memory budget cannot hold (n = 100,000: 112 GB)
    widths = (n, *tree_widths(n), 1)
    check_bytes(8.0 * sum(a * b for a, b in zip(widths[:-1], widths[1:], strict=True)),
                f"{op}_n({n}): the exact weight matrices")
    b = Builder(n)
    items = b.inputs()
    while len(items) > 1:
        items = _reduce_level(b, items, op)
        b.close()
    return b.build(items)


def max_n(n: int) -> Network:
    """The exact network computing ``max(x_1, ..., x_n)`` on all of R^n.

    Size: ``ceil(log2 n)`` hidden layers of widths :func:`tree_widths` (``n = 2^k``
    gives ``3n/2, 3n/4, ..., 3``; total ``3(n - 1)`` neurons when n is a power of two).

    Example:
        >>> max_n(4).widths
        (6, 3)
    """
    return _tree(n, "max")


def min_n(n: int) -> Network:
    """The exact network computing ``min(x_1, ..., x_n)``; same size as :func:`max_n`.

    Example:
        >>> min_n(3)([2, -5, 1]).tolist()
        [Fraction(-5, 1)]
    """
    return _tree(n, "min")


# ---------------------------------------------------------------- lattice CPWL
@dataclass(frozen=True)
class LatticeSize(Result):
    """Size of a :func:`max_of_mins` network next to the published bound.

    Example:
        >>> net = max_of_mins([[1], [-1], [0]], [0, 0, 1], [[0, 2], [1, 2]])   # min(|x|, 1)
        >>> s = lattice_size(net, 3, 2)
        >>> (s.hidden_layers, s.neurons), (s.bound_hidden_layers, s.bound_neurons)
        ((2, 9), (3, 25))
    """

    n_components: int  # k: distinct affine pieces
    n_groups: int  # q: terms of the outer max
    hidden_layers: int
    neurons: int
    bound_neurons: int  # Chen, Garudadri, Rao (NeurIPS 2022), Theorem 2
    bound_hidden_layers: int


def chen_bound(k: int, q: int) -> tuple[int, int]:
    """Published bound for a CPWL function with k linear components and q pieces
    (max over q mins of at most k components): ``(neurons, hidden layers)`` =
    ``((3 * 2^ceil(log2 k) + 2 ceil(log2 k) - 3) q + 3 * 2^ceil(log2 q) - 2 ceil(log2 k) - 3,
    ceil(log2 k) + ceil(log2 q))``.

    Example:
        >>> chen_bound(4, 4)
        (57, 4)
    """
    lk, lq = _levels(k), _levels(q)
    return (3 * 2**lk + 2 * lk - 3) * q + 3 * 2**lq - 2 * lk - 3, lk + lq


def check_lattice_groups(where: str, k: int, c: Sequence, groups: Sequence[Sequence[int]]) -> list[list[int]]:
    """The checks shared by the max-of-mins constructions: ``c`` has one entry per row of
    ``A`` (``k``), and every group is a non-empty sequence of integer indices of rows that
    exist (one clear error each, prefixed by ``where``).  Returns the groups with repeated
    indices dropped (a min of a piece with itself is that piece: ``[0, 0, 0, 0, 0]``
    built 4 layers beside a published bound counting it once).

    Example:
        >>> check_lattice_groups("f", 2, [0, 0], [[1, 1, 0], [0]])
        [[1, 0], [0]]
    """
    if len(c) != k:
        raise ConstructionError(f"{where}: A has {k} rows but c has {len(c)} entries")
    if isinstance(groups, (str, bytes)) or not isinstance(groups, Sequence) or not groups:
        raise ConstructionError(f"{where}: groups must be a non-empty list of lists of row indices")
    out = []
    for gi, g in enumerate(groups):
        if isinstance(g, (str, bytes)) or not isinstance(g, (Sequence, np.ndarray)):
            raise ConstructionError(f"{where}: group {gi} is {g!r}; each group is a list of row indices")
        if len(g) == 0:
            raise ConstructionError(f"{where}: every group needs at least one component")
        for j in g:
            if not (is_int_at_least(j, 0) and j < k):
                raise ConstructionError(f"{where}: group {gi} names component {j!r}; "
                                        f"components are integers 0..{k - 1}")
        out.append(list(dict.fromkeys(int(j) for j in g)))
    return out


def max_of_mins(A: Sequence[Sequence[object]], c: Sequence[object],
                groups: Sequence[Sequence[int]]) -> Network:
    """The network of ``f(x) = max_i min_{j in groups[i]} (A[j] . x + c[j])`` (a lattice,
    i.e. max-of-mins, representation of a CPWL function; every CPWL function has one).

    All mins are reduced in parallel by pairwise trees (3 ReLUs a pair, 2 to carry a
    value), then the max: ``ceil(log2 max|S_i|) + ceil(log2 q)`` hidden layers.
    :func:`lattice_size` puts the neuron count next to the published bound
    :func:`chen_bound`; on every instance tested (random and worst-case k = q) it is below.

    Example:
        >>> net = max_of_mins([[1], [-1], [0]], [0, 0, 1], [[0, 2], [1, 2]])  # min(|x|, 1)
        >>> net([[-3], [F('1/2')]]).ravel().tolist()
        [Fraction(1, 1), Fraction(1, 2)]
    """
    A = np.asarray(A, dtype=object)
    if A.ndim != 2 or A.shape[0] == 0:
        raise ConstructionError("max_of_mins: A must be a non-empty (k, d) matrix")
    k, d = A.shape
    groups = check_lattice_groups("max_of_mins", k, c, groups)
    b = Builder(d)
    x = b.inputs()
    pieces = []
    for j in range(k):
        e = b.const(F(c[j]))
        for i in range(d):
            if A[j, i] != 0:
                e = e + x[i] * F(A[j, i])
        pieces.append(e)
    cur = [[pieces[j] for j in g] for g in groups]
    # mins of all groups in parallel; a finished group is carried (2 ReLUs)
    while any(len(g) > 1 for g in cur):
        cur = [_reduce_level(b, g, "min") for g in cur]
        b.close()
    items = [g[0] for g in cur]
    while len(items) > 1:
        items = _reduce_level(b, items, "max")
        b.close()
    return b.build(items)


def lattice_size(net: Network, k: int, q: int) -> LatticeSize:
    """Our size next to :func:`chen_bound` for a network from :func:`max_of_mins`.

    Example:
        >>> net = max_of_mins([[1], [-1], [0]], [0, 0, 1], [[0, 2], [1, 2]])
        >>> s = lattice_size(net, 3, 2)
        >>> s.neurons <= s.bound_neurons and s.hidden_layers <= s.bound_hidden_layers
        True
    """
    bn, bl = chen_bound(k, q)
    return LatticeSize(k, q, net.n_hidden_layers, net.n_neurons, bn, bl)

