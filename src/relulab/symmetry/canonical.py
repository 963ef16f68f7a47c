"""A normal form of a ReLU network under the symmetries every ReLU network has.

Two symmetries leave the function of a layered ReLU network unchanged whatever its
weights: scaling a hidden neuron's incoming weights and bias by ``c > 0`` while dividing
its outgoing weights by ``c`` (because ``relu(c z) = c relu(z)``), and permuting the
neurons of a hidden layer.  :func:`canonical` picks one representative of each orbit:

1. layer by layer, each neuron's incoming row ``(w, b)`` is divided by its largest
   absolute entry (a rational operation, so exact networks stay exact) and the factor is
   pushed into the outgoing weights;
2. the neurons of the layer are sorted by their normalised rows (lexicographically), which
   fixes the order of the next layer's columns before that layer is normalised.

On the way it also removes what provably contributes nothing: neurons whose incoming
weights are all zero (a constant ``relu(b)``, folded into the next bias), neurons whose
outgoing weights are all zero, and it merges neurons with the same normalised row (their
outgoing weights are summed, since ``relu(z) + relu(z) = 2 relu(z)``).  These hold on all
of R^d.  Given a domain, neurons proved dead on it (never active) are removed too, so the
result computes the same function *on the domain*.

Float networks: rows that agree to ``merge_tol`` (default 1e-12, on rows normalised to
largest entry 1) count as the same; the normal forms of a float network and of a
rescaled, permuted copy usually agree up to rounding (compare with ``Network.allclose``),
but not always in shape: merged neurons whose outgoing weights cancel exactly in one copy
and leave a ``1e-15`` residue in the other give widths (1, 2) and (1, 3).  Use
:func:`relulab.symmetry.equivalent` to compare functions.
Exact (Fraction) networks: everything is exact and the normal forms are identical.

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> net = Network([[[2.0], [-1.0], [4.0]], [[1.0, 3.0, 0.5]]], [[0.0, 1.0, 0.0], [0.0]])
    >>> can, rep = canonical(net)
    >>> can.widths, [list(m) for _, m in rep.merged]   # 2x and 4x the same neuron
    ((2,), [[0, 2]])
    >>> float(can([1.5])[0]) == float(net([1.5])[0])
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cmp_to_key

import numpy as np

from ..domain import Box, Polytope, as_domain
from ..layers import Layers, bool_mask, max_abs, zero
from ..network import Network, NetworkError
from ..tolerance import MATCH_RTOL, ROUNDOFF, or_default
from ._status import NeuronStatus, neuron_status

# coordinates of normalised rows this close are equal when ordering them (far above the
# few-ulp noise of rescaling, below the merge tolerance 1e-12)
ORDER_TOL = 1e-13  # tol: see _row_order

__all__ = ["canonical", "CanonicalReport"]

Neuron = tuple[int, int]  # (hidden layer, original index), both 0-based


@dataclass(frozen=True)
class CanonicalReport:
    """What :func:`canonical` did.  Neurons are named ``(layer, index)`` by their position
    in the *input* network, both 0-based (layer 0 is the first hidden layer).

    Example:
        >>> from relulab import Box, Network
        >>> net = Network([[[1.0], [1.0], [2.0]], [[1.0, 0.0, 1.0]]], [[-5.0, 0.0, 0.0], [0.0]])
        >>> can, rep = canonical(net, Box([-1], [1]))   # neuron 0 dead on [-1, 1]; 1 has no output
        >>> rep.widths_before, rep.widths_after, rep.dead, rep.zero_outgoing
        ((3,), (1,), ((0, 0),), ((0, 1),))
    """

    widths_before: tuple[int, ...]
    widths_after: tuple[int, ...]
    dead: tuple[Neuron, ...]
    zero_outgoing: tuple[Neuron, ...]
    constant: tuple[Neuron, ...]
    merged: tuple[tuple[int, tuple[int, ...]], ...]
    order: tuple[tuple[int, ...], ...]
    constant_from_layer: int | None
    domain: dict | None
    exact: bool

    @property
    def n_removed(self) -> int:
        return int(sum(self.widths_before) - sum(self.widths_after))

    def to_dict(self) -> dict:
        return {
            "widths_before": list(self.widths_before),
            "widths_after": list(self.widths_after),
            "removed": self.n_removed,
            "dead": [list(n) for n in self.dead],
            "zero_outgoing": [list(n) for n in self.zero_outgoing],
            "constant": [list(n) for n in self.constant],
            "merged": [{"layer": k, "neurons": list(m)} for k, m in self.merged],
            "order": [list(o) for o in self.order],
            "constant_from_layer": self.constant_from_layer,
            "domain": self.domain,
            "exact": self.exact,
        }


def _row_order(R: np.ndarray, exact: bool) -> list[int]:
    """The rows' lexicographic order.  Float rows (normalised to max-abs 1) compare
    coordinate by coordinate with coordinates within ORDER_TOL counted equal: rescaling
    noise (a few ulp) must not decide the order, and a fixed rounding grid (9 decimals,
    before) has boundaries where it does (0.8999999995 rounds either way).  Rows left
    unmerged differ by more than the merge tolerance somewhere, so some coordinate
    decides.

    Example:
        >>> R = np.array([[0.5 + 1e-16, 1.0], [0.5, -1.0]])
        >>> _row_order(R, False)
        [1, 0]
    """
    if exact:
        return sorted(range(R.shape[0]), key=lambda i: tuple(R[i]))

    def cmp(i: int, j: int) -> int:
        diff = R[i] - R[j]
        big = np.flatnonzero(np.abs(diff) > ORDER_TOL)
        return 0 if big.size == 0 else (-1 if diff[big[0]] < 0 else 1)

    # started from the rows' plain lexicographic order, which the comparison changes only
    # among near-ties, the sort makes about n comparisons instead of n log n (1.5 s of
    # Python comparisons at 6,000 neurons)
    start = np.lexsort(R.T[::-1]) if R.shape[0] else np.arange(0)
    return sorted((int(i) for i in start), key=cmp_to_key(cmp))


def _group_rows(R: np.ndarray, exact: bool, tol: float) -> list[list[int]]:
    """Groups of equal rows (exactly, or within ``tol`` in max norm for floats), each group
    listed in increasing index order, groups ordered by their first member."""
    n = R.shape[0]
    if exact:
        seen: dict[tuple, list[int]] = {}
        for i in range(n):
            seen.setdefault(tuple(R[i]), []).append(i)
        return sorted(seen.values(), key=lambda g: g[0])
    assigned = np.zeros(n, dtype=bool)
    groups = []
    if n == 0:
        return groups
    # candidates by the first coordinate (rows within tol in max norm are within tol
    # there): a sort and a window instead of every row against every other (O(n^2):
    # 15 s of canonical alone at 12,000 neurons, past any time limit); same groups
    order = np.argsort(R[:, 0], kind="stable")
    first = R[order, 0]
    for i in range(n):
        if assigned[i]:
            continue
        a = np.searchsorted(first, R[i, 0] - tol, side="left")
        b = np.searchsorted(first, R[i, 0] + tol, side="right")
        cand = np.sort(order[a:b])
        cand = cand[~assigned[cand]]
        close = cand[np.max(np.abs(R[cand] - R[i]), axis=1) <= tol]
        members = [int(j) for j in close]
        assigned[members] = True
        groups.append(members)
    return groups


# merge_tol is a rounding tolerance: rows further apart than this are different neurons,
# and merging them changes the function by their distance times the outgoing weight
MAX_MERGE_TOL = 1e-6  # tol: far above float rounding, far below real differences


def canonical(
    net: Network,
    domain: Box | Polytope | tuple | None = None,
    *,
    merge_tol: float | None = None,
    status: NeuronStatus | None = None,
) -> tuple[Network, CanonicalReport]:
    """The normal form of ``net`` under positive rescaling and permutation of hidden
    neurons, with provably useless neurons removed (see the module docstring).

    Args:
        net: the network (float64 or exact).
        domain: optional Box or Polytope; neurons proved dead on it are removed, and the
            result then equals ``net`` only on the domain.
        merge_tol: float networks only: normalised rows within this max-norm distance
            are merged (default 1e-12).
        status: precomputed :func:`~relulab.symmetry.neuron_status` of ``net`` on ``domain``.

    Returns:
        ``(network, report)``.

    Example:
        >>> from fractions import Fraction as F
        >>> f = Network([[[1, 2], [3, -1]], [[1, 1]]], [[0, 1], [0]]).exact()
        >>> g = Network([[[6, -2], [F(1, 2), 1]], [[F(1, 2), 2]]], [[2, 0], [0]])  # swap + rescale
        >>> canonical(f)[0] == canonical(g)[0]
        True
    """
    if not isinstance(net, Network):
        raise NetworkError(f"canonical: net must be a relulab Network, got {type(net).__name__}")
    dom = None if domain is None else as_domain(domain, net.input_dim)
    lay = Layers.of(net)
    ex = lay.exact
    if merge_tol is not None and not (isinstance(merge_tol, (int, float)) and 0 <= merge_tol <= MAX_MERGE_TOL):
        raise NetworkError(f"canonical: merge_tol must be a number in [0, {MAX_MERGE_TOL:g}] (a rounding "
                           f"tolerance on rows normalised to largest entry 1), got {merge_tol!r}")
    if status is not None and tuple(len(s) for s in status.status) != tuple(net.widths):
        raise NetworkError(f"canonical: status has layer widths {tuple(len(s) for s in status.status)}; "
                           f"the network has {tuple(net.widths)} (a status of another network?)")
    tol = 0.0 if ex else or_default(merge_tol, ROUNDOFF)
    widths_before = net.widths
    ids: list[list[int]] = [list(range(w)) for w in widths_before]
    dead: list[Neuron] = []
    zero_out: list[Neuron] = []
    const: list[Neuron] = []
    merged: list[tuple[int, tuple[int, ...]]] = []
    order: list[tuple[int, ...]] = []
    constant_from: int | None = None

    if dom is not None:
        st = status if status is not None else neuron_status(net, dom)
        for k in range(lay.n_hidden):
            idx = [int(i) for i in np.nonzero(st.status[k] == -1)[0]]
            dead += [(k, i) for i in idx]
            lay.delete(k, idx)
            ids[k] = [i for i in ids[k] if i not in set(idx)]

    k = 0
    while k < lay.n_hidden:
        W, b = lay.Ws[k], lay.bs[k]
        # Neurons with no incoming weight output the constant relu(b): fold into next bias.
        wzero = [i for i in range(W.shape[0]) if max_abs(W[i]) == 0]
        for i in wzero:
            c = b[i] if b[i] > 0 else zero(ex)
            lay.bs[k + 1] = lay.bs[k + 1] + lay.Ws[k + 1][:, i] * c
        const += [(k, ids[k][i]) for i in wzero]
        _drop(lay, ids, k, wzero)
        _drop_zero_outgoing(lay, ids, k, zero_out)

        W, b = lay.Ws[k], lay.bs[k]
        n = W.shape[0]
        if n > 0:
            R = np.concatenate([W, b[:, None]], axis=1)
            scale = [max_abs(R[i]) for i in range(n)]
            with np.errstate(over="ignore"):  # checked just below, with the place named
                for i in range(n):
                    R[i] = R[i] / scale[i]
                    lay.Ws[k + 1][:, i] = lay.Ws[k + 1][:, i] * scale[i]
            if not ex and not np.all(np.isfinite(lay.Ws[k + 1])):
                raise NetworkError(
                    f"canonical: moving the scale of layer {k + 1}'s neurons into layer {k + 2} "
                    "overflows float64 (weights near 1e308); convert the network with .exact() "
                    "or rescale it")
            lay.Ws[k] = R[:, :-1].copy()
            lay.bs[k] = R[:, -1].copy()

            groups = _group_rows(R, ex, tol)
            if any(len(g) > 1 for g in groups):
                Wn = lay.Ws[k + 1]
                drop = []
                for g in groups:
                    if len(g) > 1:
                        Wn[:, g[0]] = _col_sum(Wn, g)
                        drop += g[1:]
                        merged.append((k, tuple(ids[k][i] for i in g)))
                _drop(lay, ids, k, drop)
                _drop_zero_outgoing(lay, ids, k, zero_out)

            R = np.concatenate([lay.Ws[k], lay.bs[k][:, None]], axis=1)
            perm = _row_order(R, ex)
            lay.permute(k, perm)
            ids[k] = [ids[k][i] for i in perm]
        order.append(tuple(ids[k]))
        if lay.Ws[k].shape[0] == 0:
            constant_from = k
            lay.constant_from(k)
            break
        k += 1

    out = lay.network()
    report = CanonicalReport(
        widths_before=widths_before,
        widths_after=out.widths,
        dead=tuple(dead),
        zero_outgoing=tuple(zero_out),
        constant=tuple(const),
        merged=tuple(merged),
        order=tuple(order),
        constant_from_layer=constant_from,
        domain=None if dom is None else dom.to_dict(),
        exact=ex,
    )
    return out, report


def _col_sum(W: np.ndarray, cols: list[int]) -> np.ndarray:
    s = W[:, cols[0]].copy()
    for j in cols[1:]:
        s = s + W[:, j]
    return s


def _drop(lay: Layers, ids: list[list[int]], k: int, idx: list[int]) -> None:
    if not idx:
        return
    gone = set(idx)
    lay.delete(k, idx)
    ids[k] = [v for i, v in enumerate(ids[k]) if i not in gone]


def _drop_zero_outgoing(lay: Layers, ids: list[list[int]], k: int, log: list[Neuron]) -> None:
    Wn = lay.Ws[k + 1]
    zs = [i for i in range(Wn.shape[1]) if not bool_mask(Wn[:, i] != 0).any()]
    log += [(k, ids[k][i]) for i in zs]
    _drop(lay, ids, k, zs)


def same_form(a: Network, b: Network, rtol: float | None = None) -> bool:
    """Whether two normal forms coincide: identical entries for exact networks, equal up to
    ``rtol`` (relative to each array's largest entry) for float ones."""
    rtol = or_default(rtol, MATCH_RTOL)
    if a.is_exact and b.is_exact:
        return a == b
    if a.depth != b.depth or (a.skip is None) != (b.skip is None):
        return False
    A = [*a.weights, *a.biases, *(a.skip or ())]
    B = [*b.weights, *b.biases, *(b.skip or ())]
    for x, y in zip(A, B, strict=True):
        if x.shape != y.shape:
            return False
        xf, yf = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        sc = max(1.0, float(np.max(np.abs(xf), initial=0.0)), float(np.max(np.abs(yf), initial=0.0)))
        if not np.all(np.abs(xf - yf) <= rtol * sc):
            return False
    return True
