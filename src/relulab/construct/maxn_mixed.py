"""Mixed families for a two-hidden-layer max_n: item orbits (:class:`PairTerm`) and
block-symmetric orbits (:class:`BlockTerm`) in one exact linear system, and pricing of
candidate orbits by a stored integer infeasibility certificate.

Both kinds of orbit sum are, on the sorted cone, ``sum coef relu(K t) + lin . t`` with K
primitive integer gap forms (first non-zero entry positive), so they share one system:
rows are the hyperplanes K (keys of :func:`relulab.construct.maxn_colgen.encode`) and the
n - 1 linear rows, in the convention of :func:`relulab.construct.family_system` (linear
rows scaled by n, right-hand side ``n - m - 1``).  An output weight is a free rational, so
a column's scale is irrelevant and block columns are used unscaled.

An integer certificate y of a family (``y^T A = 0`` on every column, ``y^T b != 0``) stays
a certificate for the family plus new columns a with ``y . a = 0`` (new hyperplanes get
``y = 0``): :func:`price_columns` computes ``y . a`` exactly, a cheap necessary test for a
candidate to help at all.

Example:
    >>> from relulab.construct import item_family, BlockTerm
    >>> d = decide_mixed(5, item_family(5, (1,)), [])
    >>> d.status
    'infeasible'
    >>> t = BlockTerm((4, 1), ((0, 0, 2), (0, 1, -1)), (0, 0))
    >>> price_columns(5, d.certificate_by_row, [block_column(t, 5)])[0] != 0
    True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..results import Result
from .maxmin import ConstructionError
from .maxn import PairTerm
from .maxn_blocks import BlockTerm, _column
from .maxn_colgen import decode, encode, orbit_column
from .maxn_decide import FamilyDecision, columns_system, decide_system

__all__ = ["block_column", "pair_column", "columns_system", "MixedDecision", "decide_mixed", "price_columns",
           "certificate_rows", "prune_columns", "pruning", "extend_certificate"]

Column = tuple[np.ndarray, np.ndarray, np.ndarray]  # sorted int64 keys, integer coefs, linear part


def block_column(t: BlockTerm, n: int) -> Column:
    """The orbit column of a block term in the keyed convention of ``orbit_column``:
    (sorted encoded hyperplane keys, integer bend coefficients, integer linear part).

    Example:
        >>> t = BlockTerm((2, 1), ((0, 0, 1), (0, 1, -1)), (1, -2))
        >>> keys, coef, lin = block_column(t, 3)
        >>> decode(keys, 3).tolist(), coef.tolist(), lin.tolist()
        ([[1, -1]], [1], [1, 0])
    """
    if not isinstance(t, BlockTerm) or t.n != n:
        raise ConstructionError(f"block_column: expected a BlockTerm on n = {n} inputs, got {t!r}")
    K, coef, lin = _column(t)
    keep = coef != 0
    keys = encode(K[keep], n)
    order = np.argsort(keys)
    return keys[order], coef[keep][order], lin


def pair_column(t: PairTerm, n: int) -> Column:
    """The orbit column of an item term (``orbit_column`` without its divisor, as in
    ``family_system``) as a keyed column (keys, coefs, linear part).

    Example:
        >>> t = PairTerm(3, (("x", 0), ("x", 0)), (("x", 1), ("x", 2)))   # relu(2 x0 - x1 - x2)
        >>> keys, coef, lin = pair_column(t, 3)
        >>> decode(keys, 3).tolist(), coef.tolist(), lin.tolist()
        ([[1, -1]], [2], [2, 4])
    """
    keys, coef, lin, _ = orbit_column(t, n, divisor=False)
    return keys, coef, lin


@dataclass(frozen=True)
class MixedDecision(Result):
    """Exact verdict on a mixed family (:func:`decide_mixed`): ``status`` found /
    infeasible / unknown as in :class:`FamilyDecision`; ``solution`` maps column index
    (pair terms first, then block terms) to its rational weight in the system's
    convention; ``certificate_by_row`` is the infeasibility certificate keyed by row name
    (``"H k1 ... k_(n-1)"`` for a hyperplane, ``"lin m"`` for a linear row), the format of
    the stored certificates.

    Example:
        >>> from relulab.construct import item_family
        >>> d = decide_mixed(5, item_family(5, (1, 2)), [])
        >>> d.status, d.n_pair_terms, d.n_block_terms
        ('found', 175, 0)
    """

    n: int
    status: str
    rank: int
    n_rows: int
    n_pair_terms: int
    n_block_terms: int
    solution: dict | None
    certificate_by_row: dict[str, int] | None


def certificate_rows(n: int, keys: Sequence[int], cert: dict[int, int]) -> dict[str, int]:
    """Name the rows of a certificate ``{row index: integer}`` of a system with hyperplane
    ``keys``: ``"H k1 ... k_(n-1)"`` or ``"lin m"``.

    Example:
        >>> certificate_rows(3, [int(encode(np.array([[1, -1]]), 3)[0])], {0: 2, 2: -1})
        {'H 1 -1': 2, 'lin 1': -1}
    """
    R = len(keys)
    K = decode(np.array([keys[i] for i in cert if i < R], dtype=np.int64), n)
    names, j = {}, 0
    for i in cert:
        if i < R:
            names["H " + " ".join(map(str, K[j].tolist()))] = int(cert[i])
            j += 1
        else:
            names[f"lin {i - R}"] = int(cert[i])
    return names


def decide_mixed(n: int, pair_terms: Sequence[PairTerm], block_terms: Sequence[BlockTerm],
                 pair_columns: Sequence[Column] | None = None) -> MixedDecision:
    """Decide exactly whether some combination of the item orbits ``pair_terms`` and the
    block orbits ``block_terms`` is max_n (first layer ``relu(x_i - x_j)``): the modular
    basis solution and the exact checks of :func:`relulab.construct.decide_family`.
    ``pair_columns`` may pass the pair terms' columns already built (the 9-input item
    columns cost minutes).

    Example:
        >>> from relulab.construct import item_family, block_candidates
        >>> decide_mixed(5, item_family(5, (1,)), block_candidates(5)).status
        'found'
    """
    if not isinstance(n, (int, np.integer)) or n < 3:
        raise ConstructionError(f"decide_mixed: n must be an integer >= 3, got {n!r}")
    if any(t.k > n for t in pair_terms):
        raise ConstructionError(f"decide_mixed: a pair term has more than n = {n} coordinates")
    if pair_columns is None:
        pair_columns = [pair_column(t, n) for t in pair_terms]
    elif len(pair_columns) != len(pair_terms):
        raise ConstructionError("decide_mixed: pair_columns and pair_terms differ in length")
    cols = list(pair_columns) + [block_column(t, n) for t in block_terms]
    if not cols:
        raise ConstructionError("decide_mixed: the family is empty")
    A, b, keys = columns_system(n, cols)
    d: FamilyDecision = decide_system(n, A, b)
    named = certificate_rows(n, keys, d.certificate) if d.certificate else None
    return MixedDecision(n, d.status, d.rank, d.n_rows, len(pair_terms), len(block_terms),
                         d.solution, named)


def price_columns(n: int, certificate: dict[str, int], cols: Sequence[Column]) -> list[int]:
    """``y . a`` in exact integers for each keyed column a (in the system convention:
    linear rows scaled by n), y the named certificate (rows absent from it are 0).  A
    column with price 0 leaves y a certificate for the family plus that column.

    Example:
        >>> from relulab.construct import item_family
        >>> d = decide_mixed(5, item_family(5, (1,)), [])
        >>> price_columns(5, d.certificate_by_row, [pair_column(t, 5) for t in item_family(5, (1,))])
        [0, 0, 0, 0, 0, 0, 0]
    """
    hk, hv = [], []
    lin = [0] * (n - 1)
    for name, v in certificate.items():
        parts = name.split()
        if parts[0] == "H":
            if len(parts) != n:
                raise ConstructionError(f"price_columns: row {name!r} is not a gap form for n = {n}")
            hk.append([int(x) for x in parts[1:]])
            hv.append(int(v))
        elif parts[0] == "lin":
            lin[int(parts[1])] = int(v)
        else:
            raise ConstructionError(f"price_columns: unknown row name {name!r}")
    ck = encode(np.array(hk, dtype=np.int64).reshape(-1, n - 1), n)
    order = np.argsort(ck)
    ck, cv = ck[order], np.array(hv, dtype=object)[order]
    out = []
    for keys, coef, ln in cols:
        tot = sum(lin[m] * n * int(ln[m]) for m in range(n - 1))
        if len(ck) and len(keys):
            at = np.minimum(np.searchsorted(ck, keys), len(ck) - 1)
            hit = np.nonzero(ck[at] == keys)[0]
            tot += sum(cv[at[h]] * int(coef[h]) for h in hit.tolist())
        out.append(tot)
    return out


def prune_columns(cols: Sequence[Column], fixed: Sequence[Column] = ()) -> list[int]:
    """Indices of the columns of ``cols`` that can carry a non-zero weight: a column that
    is the only one (among ``fixed`` and the surviving ``cols``) bending along some
    hyperplane must have weight 0 there, so it is dropped, repeatedly.

    Example:
        >>> c = lambda ks: (np.array(ks, dtype=np.int64), np.ones(len(ks), dtype=np.int64), np.zeros(2))
        >>> prune_columns([c([1, 2]), c([2, 3]), c([1, 3]), c([4])])
        [0, 1, 2]
        >>> prune_columns([c([1, 2]), c([2, 5])], fixed=[c([1])])
        []
    """
    return pruning(cols, fixed)[0]


def pruning(cols: Sequence[Column], fixed: Sequence[Column] = ()) -> tuple[list[int], list[tuple[int, int]]]:
    """:func:`prune_columns` with its record: (survivors, ``[(column, key), ...]``) where
    each dropped column comes with a hyperplane key along which it was the only column
    left bending, in the order of dropping (used to extend a certificate to them).

    Example:
        >>> c = lambda ks: (np.array(ks, dtype=np.int64), np.ones(len(ks), dtype=np.int64), np.zeros(2))
        >>> pruning([c([1, 2]), c([2, 5])], fixed=[c([1])])
        ([], [(1, 5), (0, 2)])
    """
    live = list(range(len(cols)))
    dropped: list[tuple[int, int]] = []
    fixed_keys = np.unique(np.concatenate([np.asarray(c[0], dtype=np.int64) for c in fixed])) \
        if fixed else np.zeros(0, dtype=np.int64)
    while True:
        allk = np.concatenate([np.asarray(cols[j][0], dtype=np.int64) for j in live] + [fixed_keys]) \
            if live else fixed_keys
        uk, cnt = np.unique(allk, return_counts=True)
        single = uk[cnt == 1]
        keep = []
        for j in live:
            ks = np.asarray(cols[j][0], dtype=np.int64)
            hit = np.isin(ks, single)
            if hit.any():
                dropped.append((j, int(ks[hit.argmax()])))
            else:
                keep.append(j)
        if len(keep) == len(live):
            return keep, dropped
        live = keep


def extend_certificate(n: int, certificate: dict[str, int], cols: Sequence[Column],
                       dropped: Sequence[tuple[int, int]]) -> dict[str, int]:
    """Extend a named certificate of the surviving columns to the columns dropped by
    :func:`pruning`: in reverse order of dropping, put on each dropped column's own
    hyperplane the value that makes its price 0 (that row is zero on every column still
    to be settled before it, and b is 0 there), then clear denominators.

    Example:
        >>> c = lambda ks, l: (np.array(ks, dtype=np.int64), np.ones(len(ks), dtype=np.int64), np.array(l))
        >>> cols = [c([encode(np.array([[1, -1]]), 3)[0]], [1, 0])]
        >>> y = extend_certificate(3, {"lin 0": 1}, cols, [(0, int(cols[0][0][0]))])
        >>> y, price_columns(3, y, cols)
        ({'lin 0': 1, 'H 1 -1': -3}, [0])
    """
    y: dict[str, Fraction] = {k: Fraction(v) for k, v in certificate.items()}
    for j, key in reversed(list(dropped)):
        keys, coef, _ = cols[j]
        pos = int(np.nonzero(np.asarray(keys) == key)[0][0])
        name = "H " + " ".join(map(str, decode(np.array([key], dtype=np.int64), n)[0].tolist()))
        den = math.lcm(*(v.denominator for v in y.values()))
        yi = {k: int(v * den) for k, v in y.items()}
        p = price_columns(n, yi, [cols[j]])[0]
        if p:
            y[name] = y.get(name, Fraction(0)) - Fraction(p, den * int(coef[pos]))
    den = math.lcm(*(v.denominator for v in y.values()))
    out = {k: int(v * den) for k, v in y.items() if v}
    g = math.gcd(*out.values())
    return {k: v // g for k, v in out.items()}
