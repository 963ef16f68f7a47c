"""max_n with few hidden layers by recursive substitution into ANY certified two-hidden-layer base.

Every certified two-hidden-layer max network of :mod:`relulab.construct.maxn` (item
solutions n <= 8, block solutions) has the first layer ``relu(y_a - y_b)`` for all
ordered pairs (plus ``relu(+-sum y)``).  Feed it the maxima ``y_a = max(G_a)`` of n0
groups: then ``relu(y_a - y_b) = max(G_a u G_b) - max(G_b)`` (both sides are
``max(y_a, y_b) - y_b``), a difference of two outputs of max networks one level down, and
``sum y / n0`` is carried by ``relu(T) - relu(-T)``.  So a base for n0 inputs turns
networks of depth h - 1 for sets of ``cap(h - 1)`` inputs into one of depth h for

    cap(h) = ceil(cap(h-1) / 2) + (n0 - 1) * floor(cap(h-1) / 2),   cap(1) = 2

inputs (n0 groups whose pairwise unions have at most cap(h - 1) inputs); with n0 = 12
this is the paper's ``ceil(log_6(n / 2)) + 1``, with the largest base stored here (8)
it is ``ceil(log_4(n / 2)) + 1``.

**Representation** (:class:`DeepMax`).  A node is a set S of inputs at a level h; its
value is ``max(S)`` as a linear form over its own neurons at layer h.  A node's neurons
read only the values of its children (the groups, their pairwise unions, or itself one
level down when carried) through a small integer *template* shared by every node with the
same base: the dense weight matrix of layer h is ``template (x) child output weights``,
which for an 8-input base has ~10^10 entries and is never formed.  :func:`eval_max_deep`
evaluates exactly along this factorisation (the same sums in another order; inputs are
scaled to integers per row, exact because the network is bias-free and so positively
homogeneous); :func:`deep_max_network` expands it into a :class:`relulab.Network` when the
dense size allows.

**Proof** (:func:`certify_max_deep`): by induction over the levels.  Leaves are the
identities ``max(x_i) = relu(x_i) - relu(-x_i)`` and ``max(x_i, x_j) = relu(x_i - x_j) +
relu(x_j) - relu(-x_j)``; a carry is ``v = relu(v) - relu(-v)``; a base node is correct when
its base network is certified (:func:`relulab.construct.certify_max_pairs` /
:func:`relulab.construct.certify_max_blocks`: an exact proof on R^n0), its children's sets
are exactly its groups and their pairwise unions, and its template is the base's second
layer re-read through ``relu(y_a - y_b) = max(G_a u G_b) - max(G_b)`` (checked against the
base's own integer arrays).

Example:
    >>> dm = max_deep(12)
    >>> dm.hidden_layers, dm.bases_used
    (3, (4, 6))
    >>> eval_max_deep(dm, [[3, -1, 7, 2, 0, 5, 1, 9, 4, 4, -8, 6]])
    [Fraction(9, 1)]
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ..limits import ResourceLimitError
from ..network import Network
from ..results import Result
from .maxmin import ConstructionError, check_lattice_groups

# deeper than this the cost recursion nears Python's recursion limit; a max network needs
# ceil(log_6(n / 2)) + 1 hidden layers, the rest only carry
MAX_DEEP_LAYERS = 500
# and more inputs than this have too many nodes to list (0.56 n^2: 2.2 million at 2000)
MAX_DEEP_N = 2048

__all__ = ["DeepMax", "DeepMaxCertificate", "certified_bases", "deep_cap", "deep_depth",
           "max_deep", "eval_max_deep", "deep_max_network", "certify_max_deep", "max_n_deep",
           "max_of_mins_deep", "sum_of_maxes_deep", "eval_sum_of_maxes",
           "sum_of_maxes_network"]

_FLOAT_EXACT = 2**53  # integers below this add and multiply exactly in float64
_CHUNK = 4 * 10**6  # entries of one (inputs x neurons) block in the evaluator (memory bound)
MAX_DENSE_WEIGHTS = 2 * 10**7  # largest dense float64 weight count deep_max_network expands
_DENSE_EXACT_LIMIT = 10**7  # largest dense Fraction weight count (zeros share one object)


# ------------------------------------------------------------------ the bases
@dataclass(frozen=True)
class _Base:
    """A certified two-hidden-layer base for n0 inputs, as a template over child slots:
    slots 0..n0-1 are the groups, then the unions (a, b), a < b, row-major; rows are the
    base's second-layer neurons then the two carries; ``T / tden`` are the weights."""

    n0: int
    T: np.ndarray  # (K, slots) integers
    tden: int
    outs: tuple[Fraction, ...]
    source: str


def _union_slot(n0: int, a: int, b: int) -> int:
    a, b = min(a, b), max(a, b)
    return n0 + a * (2 * n0 - a - 1) // 2 + (b - a - 1)


def _base_arrays(n0: int) -> tuple[np.ndarray, int, list[Fraction], str]:
    """(second-layer numerators N2 over the pair features, their denominator, output
    weights, source) of the stored certified base for n0, carries excluded."""
    from .maxn import MAXN_LARGE, MAXN_STORED, _pairs_arrays, stored_max_pairs
    from .maxn_blocks import MAXN_BLOCKS, max_blocks_arrays, stored_max_blocks

    if n0 in MAXN_STORED or n0 in MAXN_LARGE:
        _, N2, outs = _pairs_arrays(n0, stored_max_pairs(n0))
        return N2[:-2, :-2], 2 * n0, outs[:-2], "item"
    if n0 in MAXN_BLOCKS:
        _, N2, outs = max_blocks_arrays(n0, stored_max_blocks(n0))
        return N2[:-2, :-2], n0, outs[:-2], "block"
    raise ConstructionError(f"max_deep: no stored two-hidden-layer base for n = {n0}")


@functools.lru_cache(maxsize=16)
def _base(n0: int) -> _Base:
    N2, den, outs, source = _base_arrays(n0)
    pairs = [(i, j) for i in range(n0) for j in range(n0) if i != j]  # pair_first_layer order
    slots = n0 + n0 * (n0 - 1) // 2
    K = N2.shape[0]
    T = np.zeros((K + 2, slots), dtype=np.int64)
    for f, (i, j) in enumerate(pairs):  # relu(y_i - y_j) = val(U_ij) - val(G_j)
        T[:K, _union_slot(n0, i, j)] += N2[:, f] * n0
        T[:K, j] -= N2[:, f] * n0
    T[K, :n0] = den  # relu(+-sum y / n0): weights +-den / (den n0)
    T[K + 1, :n0] = -den
    return _Base(n0, T, den * n0, tuple(outs) + (Fraction(1), Fraction(-1)), source)


def certified_bases() -> list[int]:
    """Every n0 >= 3 with a stored, exactly certifiable two-hidden-layer max network whose
    first layer is ``relu(x_i - x_j)``: the recursion's bases.

    Example:
        >>> certified_bases()
        [3, 4, 5, 6, 7, 8]
    """
    from .maxn import MAXN_LARGE, MAXN_STORED
    from .maxn_blocks import MAXN_BLOCKS

    return sorted({n for n in (*MAXN_STORED, *MAXN_LARGE, *MAXN_BLOCKS) if n >= 3})


@functools.lru_cache(maxsize=16)
def _neurons(n0: int) -> int:
    """Second-layer neurons of base n0 (carries included), without building it."""
    from .maxn import MAXN_LARGE, MAXN_STORED
    from .maxn_blocks import stored_max_blocks

    terms = MAXN_STORED.get(n0) or MAXN_LARGE.get(n0)
    if terms:
        return sum(t.orbit_size(n0) for t, _ in terms) + 2
    return stored_max_blocks(n0).widths[1]


def _bases_arg(bases: Sequence[int] | None, who: str) -> tuple[int, ...]:
    avail = certified_bases()
    if bases is None:
        return tuple(avail)
    bad = [b for b in bases if b not in avail]
    if bad or not bases:
        raise ConstructionError(f"{who}: no two-hidden-layer base for n = {bad or list(bases)} "
                                f"(certified bases: {avail})")
    return tuple(sorted(set(int(b) for b in bases)))


def _cap_of(cap: int, n0: int) -> int:
    return (cap + 1) // 2 + (n0 - 1) * (cap // 2)


def deep_cap(hidden_layers: int, bases: Sequence[int] | None = None) -> int:
    """Largest n whose max :func:`max_deep` computes with ``hidden_layers`` hidden layers
    (module docstring's recursion, the best base at each level; default every certified
    base).

    Example:
        >>> [deep_cap(h) for h in (1, 2, 3, 4)], [deep_cap(h, [6]) for h in (2, 3, 4)]
        ([2, 8, 32, 128], [6, 18, 54])
    """
    if not isinstance(hidden_layers, (int, np.integer)) or hidden_layers < 1:
        raise ConstructionError(f"deep_cap: hidden_layers must be an integer >= 1, got {hidden_layers!r}")
    bs = _bases_arg(bases, "deep_cap")
    cap = 2
    for _ in range(int(hidden_layers) - 1):
        cap = max(cap, *(_cap_of(cap, b) for b in bs))
    return cap


def deep_depth(n: int, bases: Sequence[int] | None = None) -> int:
    """Fewest hidden layers :func:`max_deep` needs for max of n inputs (with the stored
    bases up to 8: ``ceil(log_4(n / 2)) + 1`` for n >= 3; the paper's 12-input base would
    give ``ceil(log_6(n / 2)) + 1``).

    Example:
        >>> [deep_depth(n) for n in (2, 3, 8, 9, 32, 33, 64)]
        [1, 2, 2, 3, 3, 4, 4]
    """
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise ConstructionError(f"deep_depth: n must be an integer >= 1, got {n!r}")
    h = 1
    while deep_cap(h, bases) < n:
        h += 1
    return h


# ------------------------------------------------------------------ the plan
@dataclass(frozen=True)
class DeepMax(Result):
    """A max_n network of depth ``hidden_layers`` in factorised form (module docstring).

    ``levels[h-1]`` lists the nodes of hidden layer h as ``(inputs, kind, base, children)``:
    kind "leaf" (h = 1, one or two inputs), "carry" (its own set one level down) or "base"
    (``base`` inputs; children: the group nodes then the union nodes, indices into the
    level below).  ``widths`` are the hidden-layer widths of the expanded network.

    Example:
        >>> dm = max_deep(5)
        >>> dm.widths, dm.bases_used, dm.log6_hidden_layers
        ((20, 77), (5,), 2)
    """

    n: int
    hidden_layers: int
    bases_used: tuple[int, ...]
    widths: tuple[int, ...]
    log6_hidden_layers: int
    levels: tuple[tuple[tuple[tuple[int, ...], str, int, tuple[int, ...]], ...], ...] = field(repr=False)

    @property
    def n_neurons(self) -> int:
        return sum(self.widths)

    def to_dict(self) -> dict:
        return {"n": self.n, "hidden_layers": self.hidden_layers, "bases_used": list(self.bases_used),
                "widths": list(self.widths), "n_neurons": self.n_neurons,
                "log6_hidden_layers": self.log6_hidden_layers,
                "nodes_per_level": [len(lv) for lv in self.levels]}


def _log6(n: int) -> int:
    h = 1
    while 2 * 6 ** (h - 1) < n:
        h += 1
    return h


def _split(size: int, n0: int) -> list[int]:
    """Group sizes for a base of n0 inputs: as equal as possible, largest first; with fewer
    inputs than n0 the last group is repeated (max is unchanged; its nodes are shared)."""
    groups = min(n0, size)
    q, r = divmod(size, groups)
    sizes = [q + 1] * r + [q] * (groups - r)
    return sizes + [sizes[-1]] * (n0 - groups)


def max_deep(n: int, hidden_layers: int | None = None, bases: Sequence[int] | None = None,
             max_dense_weights: int | None = None) -> DeepMax:
    """max of n inputs with ``hidden_layers`` hidden layers (default and minimum
    :func:`deep_depth`) by recursive substitution into the certified two-hidden-layer
    bases (default all of :func:`certified_bases`).  At every node the base is chosen to
    minimise the total neuron count among those that keep the depth (a dynamic program over
    set sizes); nodes for equal sets at equal levels are shared.

    ``max_dense_weights``: refuse (:class:`relulab.limits.ResourceLimitError`) as soon as the expanded network's first
    layer alone would hold more weights than this (n times its ``relu(x_i - x_j)`` neurons),
    instead of listing every node first; for callers that will expand it
    (:func:`deep_max_network`).  The factorised form itself needs no such limit.

    Example:
        >>> dm = max_deep(18, bases=[4, 5, 6])
        >>> dm.hidden_layers, dm.bases_used, eval_max_deep(dm, [list(range(18))])
        (3, (4, 6), [Fraction(17, 1)])
    """
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 2:
        raise ConstructionError(f"max_deep: n must be an integer >= 2, got {n!r}")
    n = int(n)
    if n > MAX_DEEP_N:  # before anything: the nodes number about 0.56 n^2 (2.2 million, 24 s at n = 2000)
        raise ConstructionError(f"max_deep: n = {n}; relulab describes max of at most {MAX_DEEP_N} inputs "
                                f"(listing the recursion's ~n^2 nodes takes minutes and gigabytes beyond)")
    bs = _bases_arg(bases, "max_deep")
    need = deep_depth(n, bs)
    H = need if hidden_layers is None else hidden_layers
    if not isinstance(H, (int, np.integer)) or H < need:
        raise ConstructionError(
            f"max_deep: {H} hidden layers cannot compute max of {n} inputs with the certified "
            f"bases {list(bs)} (needs {need}; {H} hidden layers reach n <= "
            f"{deep_cap(max(int(H), 1), bs) if isinstance(H, (int, np.integer)) and H >= 1 else 1})")
    H = int(H)
    if H > MAX_DEEP_LAYERS:  # the cost recursion runs H deep; extra layers only carry
        raise ConstructionError(f"max_deep: {H} hidden layers; relulab builds at most {MAX_DEEP_LAYERS} "
                                f"(max of {n} needs {need})")
    caps = [0, 2]
    for _ in range(H):
        caps.append(max(caps[-1], *(_cap_of(caps[-1], b) for b in bs)))
    size_of = {b: _neurons(b) for b in bs}

    @functools.cache
    def cost(size: int, h: int) -> tuple[int, int]:
        """(neurons, chosen base; 0 = leaf, 1 = carry) of the cheapest node."""
        if h == 1:
            return (2 if size == 1 else 3, 0)
        if size <= caps[h - 1]:
            return (cost(size, h - 1)[0] + 2, 1)
        best = None
        for b in bs:
            sz = _split(size, b)
            if sz[0] + sz[1] > caps[h - 1]:
                continue
            tot = size_of[b] + sum(cost(s, h - 1)[0] for s in sz)
            tot += sum(cost(sz[a] + sz[c], h - 1)[0] for a in range(len(sz)) for c in range(a + 1, len(sz)))
            if best is None or tot < best[0]:
                best = (tot, b)
        assert best is not None, (size, h)
        return best

    levels: list[dict[tuple[int, ...], tuple]] = [dict() for _ in range(H + 1)]
    # each two-input leaf owns one first-layer neuron relu(x_i - x_j): n weights
    pair_cap = None if max_dense_weights is None else max_dense_weights // n
    pair_leaves = 0

    def need_node(S: tuple[int, ...], h: int) -> None:
        nonlocal pair_leaves
        if S in levels[h]:
            return
        _, how = cost(len(S), h)
        if how == 0:
            levels[h][S] = ("leaf", 0, ())
            pair_leaves += len(S) == 2
            if pair_cap is not None and pair_leaves > pair_cap:
                raise ResourceLimitError(
                    f"max_deep: max of {n} inputs with {H} hidden layers has more than "
                    f"{max_dense_weights:,} dense weights in its first layer alone (more than "
                    f"{pair_cap:,} neurons relu(x_i - x_j) on {n} inputs); not listed further")
        elif how == 1:
            need_node(S, h - 1)
            levels[h][S] = ("carry", 0, (S,))
        else:
            sizes, groups, start = _split(len(S), how), [], 0
            for s in sizes[:len(S)]:
                groups.append(S[start:start + s])
                start += s
            groups += [groups[-1]] * (how - len(groups))
            kids = list(groups) + [tuple(sorted(set(groups[a]) | set(groups[c])))
                                   for a in range(how) for c in range(a + 1, how)]
            for k in kids:
                need_node(k, h - 1)
            levels[h][S] = ("base", how, tuple(kids))

    need_node(tuple(range(n)), H)
    out_levels = []
    widths = []
    used: set[int] = set()
    for h in range(1, H + 1):
        below = {S: i for i, S in enumerate(levels[h - 1])} if h > 1 else {}
        nodes, w = [], 0
        for S, (kind, b, kids) in levels[h].items():
            nodes.append((S, kind, b, tuple(below[k] for k in kids)))
            if kind == "base":
                used.add(b)
                w += _base(b).T.shape[0]
            elif kind == "carry":
                w += 2
        out_levels.append(tuple(nodes))
        widths.append(len(_pool(nodes)[0]) if h == 1 else w)
    return DeepMax(n, H, tuple(sorted(used)), tuple(widths), _log6(n), tuple(out_levels))


def _pool(leaves) -> tuple[list[tuple], list[tuple[list[int], list[Fraction]]]]:
    """The first hidden layer: one shared pool of neurons ``relu(x_i - x_j)`` (i < j,
    ("d", i, j)), ``relu(x_i)`` ("p", i) and ``relu(-x_i)`` ("m", i), and every leaf's value
    as (pool indices, weights): ``max(x_i) = relu(x_i) - relu(-x_i)``, ``max(x_i, x_j) =
    relu(x_i - x_j) + relu(x_j) - relu(-x_j)``."""
    index: dict[tuple, int] = {}
    forms = []
    for S, _, _, _ in leaves:
        if len(S) == 1:
            keys, ws = [("p", S[0]), ("m", S[0])], [Fraction(1), Fraction(-1)]
        else:
            keys, ws = [("d", S[0], S[1]), ("p", S[1]), ("m", S[1])], [Fraction(1), Fraction(1), Fraction(-1)]
        forms.append(([index.setdefault(k, len(index)) for k in keys], ws))
    return list(index), forms


# ------------------------------------------------------------------ exact evaluation
def _int_rows(X: Sequence[Sequence[object]], n: int, who: str) -> tuple[list[list[int]], list[int]]:
    """Rows of rationals as integer rows and their (positive) row denominators."""
    try:
        rows = [[Fraction(v) for v in r] for r in X]
    except (TypeError, ValueError) as e:
        raise ConstructionError(f"{who}: X must hold rational numbers ({e})") from None
    if not rows or any(len(r) != n for r in rows):
        raise ConstructionError(f"{who}: X must be a non-empty list of rows of {n} numbers")
    dens = [math.lcm(*(v.denominator for v in r)) for r in rows]
    return [[int(v * d) for v in r] for r, d in zip(rows, dens, strict=True)], dens


def _apply(T: np.ndarray, outs: Sequence[Fraction], V: np.ndarray) -> tuple[np.ndarray, int]:
    """``sum_k outs_k relu(T_k . v)`` for every row v of V (Python integers), exactly:
    integer numerators over the returned denominator."""
    D = math.lcm(*(w.denominator for w in outs))
    groups: dict[int, list[int]] = {}
    for k, w in enumerate(outs):
        if w:
            groups.setdefault(int(w * D), []).append(k)
    vmax = int(np.abs(V).max(initial=0))
    rowmax = int(np.abs(T).sum(axis=1).max(initial=0))
    tot = np.zeros(V.shape[0], dtype=object)
    if vmax * rowmax < _FLOAT_EXACT:  # every pre-activation an exact float64 integer
        Vf = V.astype(np.float64)
        per = max(1, _FLOAT_EXACT // max(1, vmax * rowmax))  # neurons summed exactly at once
        step = max(1, min(per, _CHUNK // max(1, V.shape[0])))
        for wnum, idx in groups.items():
            acc = np.zeros(V.shape[0], dtype=object)
            for a in range(0, len(idx), step):
                Tf = T[idx[a:a + step]].astype(np.float64)
                s = np.maximum(Vf @ Tf.T, 0.0).sum(axis=1)
                acc = acc + np.array([int(x) for x in s.tolist()], dtype=object)
            tot = tot + acc * wnum
    else:  # Python integers (slow; huge inputs only)
        P = V.astype(object).dot(T.T.astype(object))
        P[P < 0] = 0
        for wnum, idx in groups.items():
            tot = tot + P[:, idx].sum(axis=1) * wnum
    return tot, D


def eval_max_deep(dm: DeepMax, X: Sequence[Sequence[object]]) -> list[Fraction]:
    """Exact outputs of the network ``dm`` at the rows of X (rationals), along its
    factorised form (module docstring): every node's neurons computed from its children's
    exact values; each row is scaled to integers first (the network is bias-free).

    Example:
        >>> eval_max_deep(max_deep(9), [[Fraction(1, 3), 2, -5, 2, 0, 7, 7, -1, 3]])
        [Fraction(7, 1)]
    """
    Xi, dens = _int_rows(X, dm.n, "eval_max_deep")
    B = len(Xi)
    Xo = np.array(Xi, dtype=object).reshape(B, dm.n)
    # exact node values of the level below: (integer numerators, common denominator)
    vals: list[tuple[np.ndarray, int]] = []
    for nodes in dm.levels:
        cur = []
        for S, kind, b, kids in nodes:
            if kind == "leaf":
                if len(S) == 1:
                    v = Xo[:, S[0]]
                    cur.append((np.maximum(v, 0) - np.maximum(-v, 0), 1))
                else:
                    xi, xj = Xo[:, S[0]], Xo[:, S[1]]
                    cur.append((np.maximum(xi - xj, 0) + np.maximum(xj, 0) - np.maximum(-xj, 0), 1))
                continue
            if kind == "carry":
                v, d = vals[kids[0]]
                cur.append((np.maximum(v, 0) - np.maximum(-v, 0), d))
                continue
            base = _base(b)
            L = math.lcm(*(vals[k][1] for k in kids))
            C = np.stack([vals[k][0] * (L // vals[k][1]) for k in kids], axis=1)
            tot, D = _apply(base.T, base.outs, C)
            den = D * base.tden * L
            if all(t % den == 0 for t in tot.tolist()):
                cur.append((tot // den, 1))
            else:  # not an input value: keep the exact rational (the check will fail)
                cur.append((tot, den))
        vals = cur
    num, den = vals[0]
    return [Fraction(int(v), den * d) for v, d in zip(num.tolist(), dens, strict=True)]


# ------------------------------------------------------------------ the expanded network
def deep_max_network(dm: DeepMax, exact: bool = True) -> Network:
    """The :class:`relulab.Network` of ``dm`` (dense weights; bias-free): layer h's
    weights are every node's template times its children's output weights.  Refuses when
    the dense weights would exceed 1e7 Fractions (``exact``) or 2e7 floats (e.g. bases 7, 8 inside).

    Example:
        >>> net = deep_max_network(max_deep(9))
        >>> net.n_hidden_layers, net([4, -1, 9, 2, 0, 3, 8, 1, 5])[0]
        (3, Fraction(9, 1))
    """
    sizes = [dm.n, *dm.widths, 1]
    dense = sum(a * b for a, b in zip(sizes[:-1], sizes[1:], strict=True))
    limit = _DENSE_EXACT_LIMIT if exact else MAX_DENSE_WEIGHTS
    if dense > limit:
        raise ConstructionError(
            f"deep_max_network: the dense network for n = {dm.n} with {dm.hidden_layers} hidden "
            f"layers (widths {list(dm.widths)}) has {dense} weights (> {limit}"
            f"{'' if exact else ' in float64'}); evaluate it exactly with eval_max_deep")
    zero = Fraction(0) if exact else 0.0
    dtype = object if exact else np.float64

    def num(v: Fraction) -> object:
        return v if exact else float(v)

    pool, forms = _pool(dm.levels[0])
    W = np.full((len(pool), dm.n), zero, dtype=dtype)
    for r, key in enumerate(pool):
        if key[0] == "d":
            W[r, key[1]], W[r, key[2]] = num(Fraction(1)), num(Fraction(-1))
        else:
            W[r, key[1]] = num(Fraction(1 if key[0] == "p" else -1))
    Ws = [W]
    prev = forms  # every node of the level below: (neuron indices, output weights)
    for h, nodes in enumerate(dm.levels[1:], start=2):
        W = np.full((sizes[h], sizes[h - 1]), zero, dtype=dtype)
        r, cur = 0, []
        for _, kind, b, kids in nodes:
            if kind == "carry":
                T, tden, o = np.array([[1], [-1]]), 1, [Fraction(1), Fraction(-1)]
            else:
                base = _base(b)
                T, tden, o = base.T, base.tden, list(base.outs)
            for sl, k in enumerate(kids):
                cols, ko = prev[k]
                nz = np.nonzero(T[:, sl])[0]
                for c, wc in zip(cols, ko, strict=True):
                    for rr in nz:
                        W[r + rr, c] += num(Fraction(int(T[rr, sl])) * wc / tden)
            cur.append((list(range(r, r + len(o))), o))
            r += len(o)
        Ws.append(W)
        prev = cur
    cols, o = prev[0]
    Wout = np.full((1, sizes[-2]), zero, dtype=dtype)
    for c, wc in zip(cols, o, strict=True):
        Wout[0, c] += num(wc)
    Ws.append(Wout)
    return Network(Ws, [np.full(W.shape[0], zero, dtype=dtype) for W in Ws], exact=exact)


# ------------------------------------------------------------------ the proof
@dataclass(frozen=True)
class DeepMaxCertificate(Result):
    """Proof by composition that a :class:`DeepMax` network equals max on R^n (module
    docstring): status "certified" when every base used is certified exactly on R^n0 and
    every node's structure checks; else "failed" with the reason.

    Example:
        >>> c = certify_max_deep(max_deep(12))
        >>> c.status, c.bases
        ('certified', {4: 'certified', 6: 'certified'})
    """

    n: int
    status: str
    hidden_layers: int
    nodes_checked: int
    bases: dict[int, str]
    reason: str | None


@functools.lru_cache(maxsize=16)
def _base_certificate(n0: int) -> str:
    from .maxn import MAXN_LARGE, MAXN_STORED, certify_max_pairs, stored_max_pairs
    from .maxn_blocks import certify_max_blocks, stored_max_blocks

    if n0 in MAXN_STORED or n0 in MAXN_LARGE:
        return certify_max_pairs(n0, stored_max_pairs(n0)).status
    return certify_max_blocks(n0, stored_max_blocks(n0)).status


def _template_ok(b: int) -> bool:
    """The template re-read independently and proved: the template's pre-activations
    equal the base's second layer at the features relu(y_i - y_j) for every y in R^b
    (exact integers).  Both sides are linear on each ordering cone of y (max(y_a, y_c)
    and relu(y_i - y_j) are), so agreeing at every cone's generators proves it: those are
    the 0/1 vectors (the rays) and -(1, ..., 1) (with (1, ..., 1), the lineality).  2^b + 1
    points; it was 3 random points, which a wrong relu(y_c - y_a) term could pass."""
    N2, den, _, _ = _base_arrays(b)
    base = _base(b)
    Y = ((np.arange(2 ** b)[:, None] >> np.arange(b)[None, :]) & 1).astype(np.int64)
    Y = np.vstack([Y, -np.ones((1, b), dtype=np.int64)])
    pairs = [(a, c) for a in range(b) for c in range(a + 1, b)]
    slots = np.hstack([Y] + [np.maximum(Y[:, [a]], Y[:, [c]]) for a, c in pairs])
    feats = np.stack([np.maximum(Y[:, i] - Y[:, j], 0) for i in range(b) for j in range(b) if i != j], axis=1)
    pre = slots @ base.T[:-2].T
    if not np.array_equal(pre, feats @ N2.T * b):
        return False
    return bool(np.array_equal(slots @ base.T[-2], den * Y.sum(axis=1)))


def certify_max_deep(dm: DeepMax) -> DeepMaxCertificate:
    """Prove ``dm`` computes max on R^n by composition (module docstring): each base's
    exact cone certificate (an 8-input base takes about a minute, cached), each node's
    children sets (the groups cover the node's set; unions are exactly the pairwise
    unions; a carry reads its own set) and each template against its base's arrays.

    Example:
        >>> certify_max_deep(max_deep(7, bases=[4])).status
        'certified'
    """
    certs = {b: _base_certificate(b) for b in dm.bases_used}
    base = dict(n=dm.n, hidden_layers=dm.hidden_layers, bases=certs)
    bad = [b for b, s in certs.items() if s != "certified"]
    if bad:
        return DeepMaxCertificate(**base, status="failed", nodes_checked=0,
                                  reason=f"base {bad[0]} is not certified ({certs[bad[0]]})")
    for b in dm.bases_used:
        if not _template_ok(b):
            return DeepMaxCertificate(**base, status="failed", nodes_checked=0,
                                      reason=f"the template of base {b} does not match its arrays")
    checked = 0
    for h, nodes in enumerate(dm.levels, start=1):
        below = dm.levels[h - 2] if h > 1 else ()
        for S, kind, b, kids in nodes:
            checked += 1
            where = f"node {list(S)} at hidden layer {h}"
            if kind == "leaf":
                ok = h == 1 and len(S) in (1, 2) and not kids
            elif kind == "carry":
                ok = h > 1 and len(kids) == 1 and below[kids[0]][0] == S
            else:
                sets = [set(below[k][0]) for k in kids]
                groups, unions = sets[:b], sets[b:]
                ok = (h > 1 and len(kids) == b + b * (b - 1) // 2
                      and set().union(*groups) == set(S)
                      and unions == [groups[a] | groups[c] for a in range(b) for c in range(a + 1, b)])
            if not ok:
                return DeepMaxCertificate(**base, status="failed", nodes_checked=checked,
                                          reason=f"{where}: its children do not match its kind {kind}")
    top = dm.levels[-1]
    if len(top) != 1 or top[0][0] != tuple(range(dm.n)):
        return DeepMaxCertificate(**base, status="failed", nodes_checked=checked,
                                  reason="the top node is not the set of all inputs")
    return DeepMaxCertificate(**base, status="certified", nodes_checked=checked, reason=None)


# ------------------------------------------------------------------ dense networks
# the bases whose dense substitution stays small (item solutions, at most 842 neurons)
SMALL_BASES = (3, 4, 5, 6)


def max_n_deep(n: int, hidden_layers: int | None = None,
               bases: Sequence[int] | None = None) -> Network:
    """max of n inputs as an exact dense :class:`relulab.Network`:
    ``deep_max_network(max_deep(n, hidden_layers, bases))`` with the small bases 3..6 by
    default (``ceil(log_3(n / 2)) + 1`` hidden layers); pass ``bases`` (e.g.
    :func:`certified_bases`) for fewer layers when the dense network stays small enough, or
    use :func:`max_deep` with :func:`eval_max_deep` for any size.  A 2 in ``bases`` (the
    one-hidden-layer max of two) is accepted and ignored.

    Example:
        >>> net = max_n_deep(9, bases=[5])
        >>> net.n_hidden_layers, net([4, -1, 9, 2, 0, 3, 8, 1, 5])[0]
        (3, Fraction(9, 1))
    """
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 2:
        raise ConstructionError(f"max_n_deep: n must be an integer >= 2, got {n!r}")
    bs = SMALL_BASES if bases is None else [b for b in bases if b != 2] or [3]
    try:
        dm = max_deep(int(n), hidden_layers, bs)
    except ConstructionError as e:
        raise ConstructionError(str(e).replace("max_deep:", "max_n_deep:", 1)) from None
    return deep_max_network(dm)




def max_of_mins_deep(A: Sequence[Sequence[object]], c: Sequence[object],
                     groups: Sequence[Sequence[int]], bases: Sequence[int] | None = None) -> Network:
    """The lattice CPWL function ``f(x) = max_i min_{j in groups[i]} (A[j] . x + c[j])`` of
    :func:`relulab.construct.max_of_mins`, with every min and the max computed by
    :func:`max_n_deep` (``min(z) = -max(-z)``) instead of pairwise trees:
    ``deep_layers(max |S_i|) + deep_layers(q)`` hidden layers (with the default bases 3..6,
    log base 3 instead of 2 at each level).

    Example:
        >>> net = max_of_mins_deep([[1], [-1], [0]], [0, 0, 1], [[0, 2], [1, 2]])   # min(|x|, 1)
        >>> net([[-3], [Fraction(1, 2)]]).ravel().tolist()
        [Fraction(1, 1), Fraction(1, 2)]
    """
    from ._builder import F

    rows = [list(r) for r in A]
    if not rows or any(len(r) != len(rows[0]) for r in rows) or not rows[0]:
        raise ConstructionError("max_of_mins_deep: A must be a non-empty (k, d) matrix")
    groups = check_lattice_groups("max_of_mins_deep", len(rows), c, groups)
    Wf = np.array([[F(v) for v in r] for r in rows], dtype=object)
    cf = np.array([F(v) for v in c], dtype=object)
    mins = None
    for g in groups:
        g = list(g)
        if len(g) == 1:  # an affine piece: no hidden layer (concat pads it with carries)
            part = Network([Wf[g]], [cf[g]], exact=True)
        else:
            neg = Network([-Wf[g]], [-cf[g]], exact=True)  # -z for the group's pieces
            part = (max_n_deep(len(g), bases=bases) * -1).compose(neg)  # min = -max(-z)
        mins = part if mins is None else mins.concat(part)
    assert mins is not None
    if len(groups) == 1:
        return mins
    return max_n_deep(len(groups), bases=bases).compose(mins)


# ------------------------------------------------------------------ CPWL as sums of maxima
def _terms_arg(terms, who: str) -> tuple[int, list[tuple[int, list[list[Fraction]], list[Fraction]]]]:
    if not terms:
        raise ConstructionError(f"{who}: need at least one term (sign, A, c)")
    d = None
    out = []
    for t, term in enumerate(terms):
        try:
            sign, A, c = term
        except (TypeError, ValueError):
            raise ConstructionError(f"{who}: term {t} must be (sign, A, c)") from None
        if sign not in (1, -1):
            raise ConstructionError(f"{who}: term {t} has sign {sign!r}; use +1 or -1")
        rows = [[Fraction(v) for v in r] for r in A]
        cc = [Fraction(v) for v in c]
        if not rows or len(cc) != len(rows) or any(len(r) != len(rows[0]) for r in rows):
            raise ConstructionError(f"{who}: term {t} needs A (k, d) and c (k,) with k >= 1")
        if d is None:
            d = len(rows[0])
        if len(rows[0]) != d or d == 0:
            raise ConstructionError(f"{who}: term {t} has {len(rows[0])} columns; term 0 has {d}")
        out.append((int(sign), rows, cc))
    assert d is not None
    return d, out


def sum_of_maxes_deep(terms: Sequence[tuple[int, Sequence[Sequence[object]], Sequence[object]]]
                      ) -> tuple[int, list[DeepMax]]:
    """A CPWL function ``f(x) = sum_t sign_t max_k (A_t[k] . x + c_t[k])`` (every CPWL
    function on R^d has such a form with at most d + 1 affine maps per term) as a ReLU
    network: each max through :func:`max_deep` on its affine maps (one term's network
    reads ``A_t x + c_t``; a constant input 1 carries the offsets), the terms summed at the
    output, so the depth is the deepest term's: :func:`deep_depth` (d + 1), two hidden
    layers for d + 1 <= 8.  Returns (hidden layers, the per-term max networks); evaluate
    with :func:`eval_sum_of_maxes`.

    Example:
        >>> H, nets = sum_of_maxes_deep([(1, [[1], [-1], [0]], [0, 0, 1])])   # max(|x|, 1)
        >>> H, [m.n for m in nets]
        (2, [3])
    """
    _, ts = _terms_arg(terms, "sum_of_maxes_deep")
    H = max(deep_depth(len(A)) if len(A) > 1 else 1 for _, A, _ in ts)
    return H, [max_deep(len(A), hidden_layers=H) if len(A) > 1 else max_deep(2, hidden_layers=H)
               for _, A, _ in ts]


def term_inputs(A: list[list[Fraction]], c: list[Fraction], rows: list[list[Fraction]]
                ) -> list[list[Fraction]]:
    """The inputs of one term's max network at the rows: ``A x + c``, a single map z
    doubled (``max(z, z)``: every max network here has at least 2 inputs)."""
    Z = [[sum((a * x for a, x in zip(Ak, r, strict=True)), ck) for Ak, ck in zip(A, c, strict=True)]
         for r in rows]
    return [[z[0], z[0]] for z in Z] if len(A) == 1 else Z


def eval_sum_of_maxes(terms: Sequence[tuple[int, Sequence[Sequence[object]], Sequence[object]]],
                      X: Sequence[Sequence[object]]) -> list[Fraction]:
    """Exact values of the network of :func:`sum_of_maxes_deep` at the rows of X: each
    term's max network evaluated exactly (:func:`eval_max_deep`) on its affine maps.

    Example:
        >>> eval_sum_of_maxes([(1, [[1], [-1], [0]], [0, 0, 1]), (-1, [[0]], [1])], [[-3], [0]])
        [Fraction(2, 1), Fraction(0, 1)]
    """
    d, ts = _terms_arg(terms, "eval_sum_of_maxes")
    rows = [[Fraction(v) for v in r] for r in X]
    if not rows or any(len(r) != d for r in rows):
        raise ConstructionError(f"eval_sum_of_maxes: X must be a non-empty list of rows of {d} numbers")
    _, nets = sum_of_maxes_deep(terms)
    tot = [Fraction(0)] * len(rows)
    for (sign, A, c), dm in zip(ts, nets, strict=True):
        vals = eval_max_deep(dm, term_inputs(A, c, rows))
        tot = [t + sign * v for t, v in zip(tot, vals, strict=True)]
    return tot


def sum_of_maxes_network(terms: Sequence[tuple[int, Sequence[Sequence[object]], Sequence[object]]]
                         ) -> Network:
    """The exact dense :class:`relulab.Network` of :func:`sum_of_maxes_deep`: every term's
    max network (:func:`deep_max_network`) after its affine maps, side by side, summed with
    its sign; ``deep_depth(k)`` hidden layers for k affine maps per term (two for
    k <= 8; terms with k >= 7 are too large for dense Fraction weights, so use
    :func:`eval_sum_of_maxes` there).

    Example:
        >>> net = sum_of_maxes_network([(1, [[1], [-1], [0]], [0, 0, 1]), (-1, [[0]], [1])])
        >>> net.n_hidden_layers, net([[-3], [0]]).ravel().tolist()
        (2, [Fraction(2, 1), Fraction(0, 1)])
    """
    from ._builder import F

    _, ts = _terms_arg(terms, "sum_of_maxes_network")
    H, dms = sum_of_maxes_deep(terms)
    total = None
    for (sign, A, c), dm in zip(ts, dms, strict=True):
        Wf = np.array([[F(v) for v in r] for r in A], dtype=object)
        cf = np.array([F(v) for v in c], dtype=object)
        if len(A) == 1:
            Wf, cf = np.concatenate([Wf, Wf]), np.concatenate([cf, cf])
        inner = Network([Wf], [cf], exact=True)
        part = deep_max_network(dm).compose(inner) * sign
        total = part if total is None else total + part
    assert total is not None
    return total

