"""The combinatorics of the training inputs that bounds what noisy SGD learns: the
number of linear dichotomies, and the ternary activation pattern of a direction."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..domain import Box
from ..errors import UncertifiedCount, is_int_at_least
from ..limits import Deadline, check_seconds
from ..network import Network
from ..tolerance import or_default
from ._model import DynamicsError

# |w . x + b| at most this x ||(w, b)|| x ||(x, 1)|| counts as 0 in a ternary pattern:
# directions from training are floats, and points on a hyperplane land within ~1e-15.
TERNARY_TOL = 1e-6  # tol: a data point on a neuron's hyperplane (float directions)

__all__ = ["linear_dichotomies", "ternary_patterns", "cover_count"]


def _augment(X: Any, bias: bool) -> np.ndarray:
    if not isinstance(bias, (bool, np.bool_)):
        raise DynamicsError(f"bias must be True or False, got {bias!r}")   # "no" counted as True
    try:
        X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise DynamicsError("need a finite (n, d) point set of real numbers (ragged rows, strings "
                            "or complex entries given)") from None
    X = X[:, None] if X.ndim == 1 else X
    if X.ndim != 2 or X.shape[0] == 0 or not np.all(np.isfinite(X)):
        raise DynamicsError(f"need a finite (n, d) point set, got shape {X.shape}")
    return np.hstack([X, np.ones((X.shape[0], 1))]) if bias else X


def _check_deadline(deadline: Deadline | None, what: str) -> None:
    """Refuse the count once the time limit has passed: there is no partial count."""
    if deadline is not None and deadline.expired():
        raise UncertifiedCount(f"linear_dichotomies: the time limit ran out while {what}; "
                               "no count is certified")


# D-subsets of the (augmented) points whose independence is decided exactly at most (in
# chunks of MINOR_CHUNK); beyond, the count is refused as uncertified (above 200,000 the
# check was skipped and a triple 1e-12 off collinear was miscounted by 2)
MINOR_CHECK_MAX = 5_000_000
MINOR_CHUNK = 100_000
# a D x D minor below this share of its Hadamard bound is decided in rationals (far above
# the float determinant's rounding error, about D^2 x 1e-16 of that bound)
MINOR_SCREEN = 1e-8  # tol: float determinant surely nonzero above this
# a nonzero minor below this share is a near degeneracy thinner than the float
# enumeration can resolve (its sign tolerance, see relulab.tolerance.SIGN_TOL)
MINOR_BLIND = 1e-12  # tol: below the region engine's resolution


def _general_position(Xa: np.ndarray, deadline: Deadline | None = None) -> tuple[bool | None, float]:
    """Whether the rows of ``Xa`` (n, D) are in general position (every min(n, D) of them
    linearly independent), decided exactly, with the smallest nonzero minor relative to
    its Hadamard bound (``inf`` when none was small).  ``None``: too many subsets.
    Refuses the count (:class:`UncertifiedCount`) once ``deadline`` has passed."""
    from itertools import combinations, islice
    from math import comb

    from ..params import exact_rank

    n, D = Xa.shape
    if n <= D:
        return exact_rank(Xa.tolist()) == n, np.inf
    if comb(n, D) > MINOR_CHECK_MAX:
        return None, np.inf
    general, smallest = True, np.inf
    subsets = combinations(range(n), D)
    while True:   # in chunks: millions of subsets in bounded memory
        idx = np.array(list(islice(subsets, MINOR_CHUNK)), dtype=np.int64)
        if idx.size == 0:
            break
        _check_deadline(deadline, "deciding general position")
        M = Xa[idx]
        rel = np.abs(np.linalg.det(M)) / np.prod(np.linalg.norm(M, axis=2), axis=1)
        for k in np.flatnonzero(~(rel > MINOR_SCREEN)):
            _check_deadline(deadline, "deciding general position")
            if exact_rank(M[k].tolist()) < D:
                general = False
            else:
                smallest = min(smallest, float(rel[k]))
    return general, smallest


# distinct hyperplanes up to which the degenerate count is exact (Whitney's formula:
# 2^n exact ranks)
WHITNEY_MAX = 12


def _distinct_hyperplanes(Xa: np.ndarray, deadline: Deadline | None = None) -> np.ndarray:
    """The rows of ``Xa`` with one row kept per hyperplane ``{v: v . x = 0}``: rows that
    are nonzero multiples of each other give the same hyperplane, hence the same side for
    every dichotomy.  Decided exactly: each row divided by its first nonzero entry, in
    rationals, is a key that multiples share (pairs compared in rationals took 26 s for
    2,000 points of size 1e-7, which a float screen could not tell apart)."""
    from fractions import Fraction

    seen: set[tuple] = set()
    keep: list[int] = []
    for i, row in enumerate(Xa.tolist()):
        if i % 256 == 0:
            _check_deadline(deadline, "finding repeated points")
        q = [Fraction(v) for v in row]
        lead = next(v for v in q if v != 0)   # (zero rows are refused before)
        key = tuple(v / lead for v in q)
        if key not in seen:
            seen.add(key)
            keep.append(i)
    return Xa[keep]


def _whitney_cells(H: np.ndarray, deadline: Deadline | None = None) -> int:
    """The cells of the central arrangement of the distinct hyperplanes with normals ``H``,
    exactly: ``sum over subsets S of (-1)^(|S| - rank S)`` (Whitney's formula for the
    characteristic polynomial at -1, by Zaslavsky's theorem), ranks in rationals."""
    from itertools import combinations

    from ..params import exact_rank

    n = H.shape[0]
    total = 1   # the empty set
    for k in range(1, n + 1):
        _check_deadline(deadline, "Whitney's formula")
        for S in combinations(range(n), k):
            total += -1 if (k - exact_rank(H[list(S)].tolist())) % 2 else 1
    return total


def _centred_exactly(X: np.ndarray) -> np.ndarray:
    """``X`` moved by its coordinate-wise median (a translation: the affine dichotomies do
    not change) when every difference is exact in float64, else ``X`` as it is.  The
    degeneracy screens measure minors of ``(x, 1)`` against their size, and data far from
    the origin (a 4 x 4 integer grid shifted by 1e4) read as nearly degenerate there."""
    med = np.median(X, axis=0)
    # the data value nearest the median per coordinate: differences of values within a
    # factor 2 of each other are exact (Sterbenz); the check below decides in any case
    c = X[np.argmin(np.abs(X - med), axis=0), np.arange(X.shape[1])]
    Y = X - c
    # the rounding error of each difference, exactly (Knuth's TwoSum of x and -c): it was
    # one Fraction per entry, 8.6 s for 400k x 3 points before the first deadline check
    with np.errstate(invalid="ignore", over="ignore"):
        back = Y - X
        err = (X - (Y - back)) + (-c - back)
    if np.all(err == 0):
        return Y
    return X


def linear_dichotomies(X: Any, bias: bool = True, time_limit: float | None = None) -> int:
    """The number ``P`` of dichotomies of the points ``X`` realisable by a hyperplane
    (``sign(w . x + b)`` with every point strictly on one side; ``bias=False``:
    hyperplanes through the origin), counted exactly.

    Repeated points count once.  Points in general position (every ``d + 1`` of the
    augmented points ``(x_i, 1)`` linearly independent, decided in rational arithmetic)
    have Cover's count :func:`cover_count`.  Otherwise, up to ``WHITNEY_MAX`` distinct
    points, the count is Whitney's formula over all subsets with exact ranks; beyond, it
    is the number of cells of the central
    arrangement ``{(w, b): w . x_i + b = 0}`` in parameter space, enumerated by
    :func:`relulab.regions.count` on the box ``[-1, 1]^(d+1)`` (every cell is a cone
    through the origin, so it meets the box).  A point set that is degenerate and also
    nearly degenerate elsewhere (a subset independent by less than ``MINOR_BLIND`` of
    its scale: cells thinner than the float enumeration resolves) raises
    :class:`~relulab.errors.UncertifiedCount` rather than return a number that may miss
    them.  The exact check covers up to ``MINOR_CHECK_MAX`` subsets; beyond, the
    enumeration's own near-tie check is the guard.  ``time_limit`` (seconds, None: none):
    past it the count is refused (:class:`~relulab.errors.UncertifiedCount`) within one
    chunk of subsets or one neuron of the enumeration; there is no partial count.

    Example:
        >>> linear_dichotomies([[0.0], [1.0], [2.0]])   # 2 * (1 + 2) on a line
        6
        >>> linear_dichotomies([[0.0, 0.0], [1.0, 0.0], [2.0, 1e-16], [0.0, 1.0]])  # general position
        14
    """
    deadline = Deadline(check_seconds(time_limit, "linear_dichotomies"))
    if bias:
        X = _centred_exactly(_augment(X, False))
    Xa = _augment(X, bias)
    D = Xa.shape[1]
    if np.any(np.linalg.norm(Xa, axis=1) == 0):
        raise DynamicsError("a zero point lies on every hyperplane through the origin: "
                            "use bias=True or drop it")
    Xa = _distinct_hyperplanes(Xa, deadline)   # repeated points (or multiples) are one hyperplane
    n = Xa.shape[0]
    general, smallest = _general_position(Xa, deadline)
    if general:
        return cover_count(n, D)
    if general is None:
        raise UncertifiedCount(
            f"linear_dichotomies: {n} points in {D} (augmented) dimensions have more than "
            f"{MINOR_CHECK_MAX:,} subsets of {D}: general position cannot be decided exactly, and a "
            "float enumeration can miss cells of nearly degenerate points, so no count is certified")
    if n <= WHITNEY_MAX:
        return _whitney_cells(Xa, deadline)
    if general is False and smallest < MINOR_BLIND:
        raise UncertifiedCount(
            f"linear_dichotomies: the points are degenerate (some {min(n, D)} of them are linearly "
            f"dependent) and nearly degenerate elsewhere (a subset independent by {smallest:.2g} of "
            "its scale): cells that thin are below the float enumeration's resolution, so the "
            "count is not certified; perturb or round the points")
    return _arrangement_cells(Xa, deadline)


def _arrangement_cells(Xa: np.ndarray, deadline: Deadline | None = None) -> int:
    """The cells of the central arrangement with normals the rows of ``Xa``, streamed by
    :func:`relulab.regions.iter_regions` on ``[-1, 1]^D`` (the general-position shortcut's
    independent check in the tests).  Every cell is a cone through the origin, so the
    box meets each in one piece and no whole-space count can add anything (the count
    would try one after near ties, for minutes).  A stream cut by the deadline or the
    memory budget, or with a sign decision too close to call, is refused."""
    import time

    from .. import regions

    n, D = Xa.shape
    net = Network([Xa, np.ones((1, n))], [np.zeros(n), np.zeros(1)])
    left = None if deadline is None else deadline.left()
    report: dict = {}
    cells = sum(1 for _ in regions.iter_regions(
        net, Box(-np.ones(D), np.ones(D)), report=report,
        deadline=None if left is None else time.time() + max(left, 0.0)))
    if report.get("partial"):
        raise UncertifiedCount(f"linear_dichotomies: the cell enumeration stopped ({report.get('stopped')}) "
                               f"after {cells} cells; no count is certified")
    if not report.get("certified", False):
        raise UncertifiedCount(
            f"linear_dichotomies: {report.get('near_ties')} sign decision(s) of the cell enumeration "
            "were too close to call at the float tolerance, so a thin cell may be merged and the "
            "count is not certified; perturb or round the points")
    return cells


def cover_count(n: int, dim: int) -> int:
    """Cover's count ``2 sum_{k < dim} C(n - 1, k)`` of the linear dichotomies of ``n``
    points in general position in ``R^dim`` (hyperplanes through the origin).

    Example:
        >>> cover_count(3, 2)
        6
    """
    from math import comb

    if not (is_int_at_least(n, 0) and is_int_at_least(dim, 1)):
        raise DynamicsError(f"cover_count: need n >= 0 points and dim >= 1 (integers), got {n!r}, {dim!r}")
    if n == 0:
        return 1   # the empty dichotomy
    return 2 * sum(comb(n - 1, k) for k in range(dim))


def ternary_patterns(V: Any, X: Any, tol: float | None = None) -> np.ndarray:
    """For each direction ``v = (w, b)`` (rows of ``V``), its ternary pattern on the data:
    ``sign(w . x_i + b)`` in {-1, 0, 1}, 0 where ``|w . x_i + b| <= tol * ||v|| * ||(x_i, 1)||``
    (``tol`` None: ``TERNARY_TOL``).

    Example:
        >>> ternary_patterns([[1.0, 0.0]], [[1.0], [0.0], [-1.0]]).tolist()
        [[1, 0, -1]]
    """
    tol = or_default(tol, TERNARY_TOL)
    if isinstance(tol, bool) or not (isinstance(tol, (int, float, np.number)) and 0 <= tol < np.inf):
        raise DynamicsError(f"ternary_patterns: tol must be a finite number >= 0, got {tol!r}")
    Xa = _augment(X, True)
    try:
        V = np.atleast_2d(np.asarray(V, dtype=np.float64))
    except (TypeError, ValueError):
        raise DynamicsError("ternary_patterns: the directions must be an (m, d + 1) array of numbers") from None
    if V.ndim != 2 or V.shape[1] != Xa.shape[1]:
        raise DynamicsError(f"directions have {V.shape[1]} entries; (x, 1) has {Xa.shape[1]}")
    if not np.all(np.isfinite(V)):
        raise DynamicsError("ternary_patterns: the directions contain NaN or infinite entries")
    Z = V @ Xa.T
    scale = np.linalg.norm(V, axis=1)[:, None] * np.linalg.norm(Xa, axis=1)[None, :]
    return np.where(np.abs(Z) <= tol * scale, 0, np.sign(Z)).astype(int)
