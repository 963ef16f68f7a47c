"""Input domains: axis-aligned boxes and polytopes in H-representation.

Example:
    >>> from relulab.domain import Box
    >>> B = Box([0, 0], [1, 2])
    >>> B.contains([[0.5, 1.5], [2.0, 0.0]]).tolist()
    [True, False]
    >>> B.to_polytope().A.shape
    (4, 2)
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .errors import RelulabError, is_int_at_least
from .tolerance import FEAS_TOL, HIGHS_SMALL, or_default, scaled_tol

# HiGHS's infinity: a constraint bound of this size or more is read as no bound at all
LP_INFINITY = 1e20

# HiGHS's "infeasible" is not a proof: a nonempty set thinner or farther out (a slab of
# width 0 after rounding at 1e15) than its tolerances resolve reads infeasible too
EMPTY_BY_LP = ("empty polytope: the LP solver finds no x with A x <= b (a nonempty set thinner or "
               "farther out than its tolerances resolve reads so too: then rescale it)")
# polytopes with at most this many entries in A get their bounding box proven in rationals
EXACT_BOX_ENTRIES = 4096
# hit-and-run directions drawn this many at a time
HIT_RUN_BLOCK = 1024
# Polytope.sample solves the bounding box to reject from up to this dimension (above it,
# hit-and-run from the Chebyshev centre unless single-coordinate rows give a box)
SAMPLE_BOX_MAX_DIM = 20

__all__ = ["Box", "Polytope", "Domain", "DomainError", "as_domain"]


class DomainError(RelulabError):
    """An input domain is empty, inconsistent or has non-finite data."""


def _vec(a: Any, what: str) -> np.ndarray:
    try:
        v = np.array(a, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as e:
        raise DomainError(f"{what}: entries are not numbers ({e})") from None
    except OverflowError:  # a Python integer such as 10**400
        raise DomainError(f"{what}: an entry is too large for float64 (above 1.8e308)") from None
    return v


@dataclass(frozen=True, eq=False)
class Box:
    """The box ``{x : lo <= x <= hi}`` (closed, bounded, non-empty).

    Example:
        >>> Box([-1, -1], [1, 1]).center.tolist()
        [0.0, 0.0]
    """

    lo: np.ndarray
    hi: np.ndarray

    def __init__(self, lo: Any, hi: Any) -> None:
        lo_v, hi_v = _vec(lo, "box lower bound"), _vec(hi, "box upper bound")
        if lo_v.shape != hi_v.shape:
            raise DomainError(f"box bounds have different sizes ({lo_v.size} and {hi_v.size})")
        if lo_v.size == 0:
            raise DomainError("box has no coordinates")
        if not (np.all(np.isfinite(lo_v)) and np.all(np.isfinite(hi_v))):
            raise DomainError("box bounds must be finite numbers (no NaN or inf)")
        bad = np.nonzero(lo_v > hi_v)[0]
        if bad.size:
            i = int(bad[0])
            raise DomainError(
                f"empty box: coordinate {i} has lower bound {float(lo_v[i]):g} > upper bound {float(hi_v[i]):g}"
            )
        lo_v.setflags(write=False)
        hi_v.setflags(write=False)
        object.__setattr__(self, "lo", lo_v)
        object.__setattr__(self, "hi", hi_v)

    @property
    def dim(self) -> int:
        return int(self.lo.size)

    @property
    def center(self) -> np.ndarray:
        return _midpoint(self.lo, self.hi)

    @property
    def widths(self) -> np.ndarray:
        return self.hi - self.lo

    @property
    def magnitudes(self) -> np.ndarray:
        """The largest ``|x_i|`` over the box, per coordinate (the size the rounding and
        big-M bounds of a layer's input start from).

        Example:
            >>> Box([-3.0, 1.0], [2.0, 5.0]).magnitudes.tolist()
            [3.0, 5.0]
        """
        return np.maximum(np.abs(self.lo), np.abs(self.hi))

    @property
    def is_bounded(self) -> bool:
        return True

    def contains(self, X: Any, tol: float | None = None) -> np.ndarray | bool:
        """Membership of a point (bool) or of each row of a batch (bool array), with
        tolerance ``tol`` (default ``FEAS_TOL``)."""
        tol = or_default(tol, FEAS_TOL)
        X = _points(X)
        single = X.ndim == 1
        X2 = np.atleast_2d(X)
        self._check_dim(X2)
        ok = np.all((X2 >= self.lo - tol) & (X2 <= self.hi + tol), axis=1)
        return bool(ok[0]) if single else ok

    def contains_exactly(self, x: Any) -> bool:
        """Membership of one point with no tolerance (float comparisons are exact here).

        Example:
            >>> Box([0, 0], [1, 1]).contains_exactly([1.0, 1e-300]), Box([0], [1]).contains_exactly([1 + 2**-52])
            (True, False)
        """
        x = np.asarray(x, dtype=np.float64).reshape(-1)
        return bool(np.all(self.lo <= x) and np.all(x <= self.hi))

    def sample(self, n: int, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """``n`` points drawn uniformly from the box, shape (n, d)."""
        _check_count(n)
        rng = np.random.default_rng(rng)
        r = rng.random((n, self.dim))
        with np.errstate(over="ignore"):
            width = self.hi - self.lo
        if np.isfinite(width).all():
            return self.lo + r * width
        # a width beyond float64 (lo = -1e308, hi = 1e308): from the midpoint by half-widths
        X = self.center + (2 * r - 1) * (self.hi / 2 - self.lo / 2)
        return np.clip(X, self.lo, self.hi)

    def bounding_box(self) -> Box:
        return self

    def to_polytope(self) -> Polytope:
        d = self.dim
        A = np.vstack([np.eye(d), -np.eye(d)])
        b = np.concatenate([self.hi, -self.lo])
        return Polytope(A, b)

    def vertices(self) -> np.ndarray:
        """All 2^d corners (d <= 20)."""
        if self.dim > 20:
            raise DomainError(f"refusing to list 2^{self.dim} box corners")
        bits = (np.arange(2**self.dim)[:, None] >> np.arange(self.dim)) & 1
        return np.where(bits == 1, self.hi, self.lo)

    def split(self, axis: int, at: float | None = None) -> tuple[Box, Box]:
        """Two halves of the box, cut across ``axis`` (at its midpoint by default)."""
        if not (is_int_at_least(axis, 0) and axis < self.dim):
            raise DomainError(f"split: axis must be an integer in 0..{self.dim - 1}, got {axis!r}")
        try:
            m = float(_midpoint(self.lo[axis], self.hi[axis])) if at is None else float(at)
        except (TypeError, ValueError):
            raise DomainError(f"split: at must be a number, got {at!r}") from None
        hi1 = self.hi.copy()
        hi1[axis] = m
        lo2 = self.lo.copy()
        lo2[axis] = m
        return Box(self.lo, hi1), Box(lo2, self.hi)

    def _check_dim(self, X2: np.ndarray) -> None:
        if X2.ndim != 2 or X2.shape[1] != self.dim:
            raise DomainError(f"points have shape {X2.shape}; the domain has dimension {self.dim}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Box) and np.array_equal(self.lo, other.lo) and np.array_equal(self.hi, other.hi)

    def __hash__(self) -> int:
        return hash((self.lo.tobytes(), self.hi.tobytes()))

    def __repr__(self) -> str:
        return f"Box(lo={self.lo.tolist()}, hi={self.hi.tolist()})"

    def to_dict(self) -> dict:
        return {"type": "box", "lo": self.lo.tolist(), "hi": self.hi.tolist()}


class _OutOfTime(Exception):
    """The bounding box's LPs passed their deadline (:meth:`Polytope.enclosing_box`)."""


# shares of the way to the Chebyshev centre tried by Polytope.pulled_inside
PULL_SHARES = (1e-12, 1e-9, 1e-6)  # tol: moves of a solver's point within rounding of a polytope
# then the nearest point of the polytope shrunk by this many roundings of each row (k eps
# (|b| + |A| |x|)), solved at PULL_LP_TOL
PULL_ROUNDINGS = (16.0, 256.0, 4096.0, 65536.0)
PULL_LP_TOL = 1e-10  # tol: HiGHS's smallest primal feasibility tolerance


@dataclass(frozen=True, eq=False)
class Polytope:
    """The polyhedron ``{x : A x <= b}``.

    Each row is stored scaled by the power of two that puts its largest entry in [1, 2)
    in magnitude: the same set, exactly, and well scaled for the LPs.

    It must be non-empty.  It may be unbounded (then :meth:`bounding_box` and
    :meth:`sample` refuse); ``Polytope.whole_space(d)`` is all of R^d.

    Example:
        >>> P = Polytope([[1, 1], [-1, 0], [0, -1]], [1, 0, 0])   # a triangle
        >>> P.contains([0.2, 0.2]), P.bounding_box()
        (True, Box(lo=[0.0, 0.0], hi=[1.0, 1.0]))
    """

    A: np.ndarray
    b: np.ndarray

    def __init__(self, A: Any, b: Any, *, check_empty: bool = True) -> None:
        try:
            A_m = np.array(A, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise DomainError(f"polytope matrix A: entries are not numbers ({e})") from None
        except OverflowError:
            raise DomainError("polytope matrix A: an entry is too large for float64 (above 1.8e308)") from None
        b_v = _vec(b, "polytope right-hand side b")
        if A_m.ndim != 2:
            raise DomainError(f"polytope matrix A must be 2-D (rows, dim), got shape {A_m.shape}")
        if A_m.shape[0] != b_v.size:
            raise DomainError(f"polytope has {A_m.shape[0]} rows in A but {b_v.size} entries in b")
        if A_m.shape[1] == 0:
            raise DomainError("polytope has no coordinates")
        if not (np.all(np.isfinite(A_m)) and np.all(np.isfinite(b_v))):
            raise DomainError("polytope data must be finite numbers (no NaN or inf)")
        zero_rows = np.all(A_m == 0, axis=1)
        if np.any(zero_rows & (b_v < 0)):
            i = int(np.nonzero(zero_rows & (b_v < 0))[0][0])
            raise DomainError(f"empty polytope: row {i} reads 0 <= {b_v[i]!r}")
        A_m, b_v = _scale_rows(A_m, b_v)
        small = (A_m != 0) & (np.abs(A_m) <= HIGHS_SMALL)
        if np.any(small):
            # HiGHS reads these as 0: a different set, and every bound, maximum and
            # emptiness verdict of it would be about that set (x0 >= -1e-9 x1 with x1 up
            # to 1e9 read as x0 >= 0, and a maximum of 1 came out as 2e-6, "optimal")
            i, j = (int(v) for v in np.argwhere(small)[0])
            raise DomainError(
                f"polytope row {i}: its entry {j} is {abs(A_m[i, j]) / np.max(np.abs(A_m[i])):.3g} of the "
                f"row's largest, and the LP solver reads entries below {HIGHS_SMALL:.0e} of "
                "a row's largest as 0, which changes the set: rescale the inputs (or set the entry "
                "to 0 if it is noise)")
        far = np.abs(b_v) >= LP_INFINITY
        if np.any(far):
            # HiGHS reads 1e20 as infinite: the row would be dropped (or read as empty), and
            # a bounded polytope was called unbounded
            i = int(np.nonzero(far)[0][0])
            raise DomainError(f"polytope row {i} bounds A x at distance {abs(b_v[i]):.3g} (scaled to "
                              f"max |A_i| in [1, 2)); the LP solver reads {LP_INFINITY:.0e} and beyond as "
                              "infinite: rescale the inputs")
        A_m.setflags(write=False)
        b_v.setflags(write=False)
        object.__setattr__(self, "A", A_m)
        object.__setattr__(self, "b", b_v)
        if check_empty and A_m.shape[0] > 0:
            from .lp import chebyshev_center

            x, r = chebyshev_center(A_m, b_v)
            if x is None:
                raise DomainError(EMPTY_BY_LP)
            # relative to each row's own size, |b_i| + |A_i| |x| (the LP's rounding is ~1e-8
            # at coordinates of 1e8): the largest |b| of any row let a redundant x1 <= 1e8
            # widen every row's tolerance to 0.1, and a set empty by 1e-8 was accepted
            row_tol = scaled_tol(np.abs(b_v) + np.abs(A_m) @ np.abs(x), FEAS_TOL)
            bad = A_m @ x - b_v > row_tol
            if bad.any():
                # HiGHS's own tolerance (1e-7) accepted the point: decide at relulab's
                # (a set empty by 1e-7 was accepted, and sampling it failed later)
                tol = float(np.max(row_tol[bad]))
                gap = _least_violation(A_m, b_v)
                if gap > tol:
                    raise DomainError(f"empty polytope: no point satisfies A x <= b within {tol:.3g} "
                                      f"(every point misses some row by {gap:.3g} or more)")

    @staticmethod
    def whole_space(dim: int) -> Polytope:
        """All of R^dim (no inequalities)."""
        if not is_int_at_least(dim, 1):
            raise DomainError(f"whole_space: dim must be an integer of at least 1, got {dim!r}")
        return Polytope(np.zeros((0, dim)), np.zeros(0))

    @property
    def dim(self) -> int:
        return int(self.A.shape[1])

    @property
    def n_constraints(self) -> int:
        return int(self.A.shape[0])

    def contains(self, X: Any, tol: float | None = None) -> np.ndarray | bool:
        """Membership (``A x <= b + tol``, default ``FEAS_TOL``) of a point or of each row."""
        tol = or_default(tol, FEAS_TOL)
        X = _points(X)
        single = X.ndim == 1
        X2 = np.atleast_2d(X)
        if X2.ndim != 2 or X2.shape[1] != self.dim:
            raise DomainError(f"points have shape {X2.shape}; the domain has dimension {self.dim}")
        ok = np.all(X2 @ self.A.T <= self.b + tol, axis=1)
        return bool(ok[0]) if single else ok

    def contains_exactly(self, x: Any) -> bool:
        """Membership of one point decided in rational arithmetic, no tolerance (a
        solver's point 1e-16 outside passes :meth:`contains`, and a witness of a
        difference that exists only outside the polytope was reported).

        Example:
            >>> P = Polytope([[1.0, 1.0], [-1.0, 0.0], [0.0, -1.0]], [0.3, 0.0, 0.0])
            >>> P.contains_exactly([0.1, 0.2]), bool(P.contains([0.1, 0.2 + 1e-12]))
            (False, True)
        """
        X = [Fraction(float(v)) for v in np.asarray(x, dtype=np.float64).reshape(-1)]
        for row, rhs in zip(self.A, self.b, strict=True):
            if sum((Fraction(float(a)) * v for a, v in zip(row, X, strict=True) if a != 0),
                   Fraction(0)) > Fraction(float(rhs)):
                return False
        return True

    def pulled_inside(self, x: Any, shares: tuple[float, ...] = PULL_SHARES) -> np.ndarray:
        """``x`` moved towards the Chebyshev centre by the least of ``shares`` (of the
        way) that puts it inside in rational arithmetic; ``x`` itself when it is inside or
        none does (for a solver's point just outside by rounding).

        Example:
            >>> P = Polytope([[1.0, 1.0], [-1.0, 0.0], [0.0, -1.0]], [0.3, 0.0, 0.0])
            >>> y = P.pulled_inside([0.1, 0.2 + 1e-12])
            >>> P.contains_exactly(y), bool(np.abs(y - [0.1, 0.2]).max() < 1e-9)
            (True, True)
        """
        x = np.asarray(x, dtype=np.float64).reshape(-1)
        if self.contains_exactly(x):
            return x
        try:
            c, r = self.chebyshev_center()
        except DomainError:
            return x
        if c is None or not r > 0:
            return x
        for t in shares:
            y = x + t * (c - x)
            if self.contains_exactly(y):
                return y
        # towards the centre loses the value along a long thin polytope (a slab 2e-4 wide
        # near 2.7e6 needed 1 % of the way: 5 units along it); the nearest point (max-norm)
        # of the polytope shrunk by a few roundings of its rows is a shorter move
        return self._nearest_inside(x)

    def _nearest_inside(self, x: np.ndarray) -> np.ndarray:
        """The point nearest ``x`` (max-norm) with ``A y <= b - k eps (|b| + |A| |x|)``, for
        the first ``k`` of PULL_ROUNDINGS that puts it inside in rational arithmetic;
        ``x`` itself when none does."""
        from .lp import LPModel

        d, m = self.dim, self.A.shape[0]
        size = np.abs(self.b) + np.abs(self.A) @ np.abs(x)
        # variables (y, t): min t with -t <= y - x <= t and the shrunk rows
        eye = np.eye(d)
        A_ub = np.block([[self.A, np.zeros((m, 1))], [eye, -np.ones((d, 1))], [-eye, -np.ones((d, 1))]])
        cost = np.r_[np.zeros(d), 1.0]
        for k in PULL_ROUNDINGS:
            rhs = np.r_[self.b - k * np.finfo(np.float64).eps * size, x, -x]
            lp = LPModel(cost, A_ub=A_ub, b_ub=rhs, lb=np.r_[np.full(d, -np.inf), 0.0])
            lp.set_feasibility_tol(primal=PULL_LP_TOL)
            r = lp.solve()
            if r.status == "optimal" and r.x is not None:
                y = np.asarray(r.x[:d], dtype=np.float64)
                if self.contains_exactly(y):
                    return y
        return x

    def within_box(self, box: Box) -> Polytope:
        """The polytope cut by ``box`` (its rows and the box's), with ``box`` kept as its
        :meth:`enclosing_box`: no LP is solved for it (a moved copy of a polytope whose
        box is known need not solve its 2 d LPs again, outside any time limit).

        Example:
            >>> P = Polytope([[1.0, 1.0]], [1.0]).within_box(Box([0.0, 0.0], [2.0, 2.0]))
            >>> P.n_constraints, P.enclosing_box().hi.tolist(), P.contains([1.5, 0.5]), P.box_cut is not None
            (5, [2.0, 2.0], False, True)
        """
        eye = np.eye(self.dim)
        cut = Polytope(np.vstack([self.A, eye, -eye]), np.concatenate([self.b, box.hi, -box.lo]),
                       check_empty=False)
        object.__setattr__(cut, "_cut_box", box)   # the box's own rows hold every point
        return cut

    @property
    def box_cut(self) -> Box | None:
        """The box this polytope was cut by (:meth:`within_box`), which holds it; None for
        others (their :meth:`bounding_box` is solved)."""
        return self.__dict__.get("_cut_box")

    def bounding_box(self) -> Box:
        """The smallest box containing the polytope (2 d LPs, solved once and cached);
        refuses unbounded ones."""
        return self._kept_box()

    def _kept_box(self, deadline: float | None = None) -> Box:
        """The bounding box, solved once and kept, and so is a refusal (DomainError, raised
        again on every call); past ``deadline`` (a :func:`time.perf_counter` moment)
        ``_OutOfTime``, with nothing kept."""
        cached = self.__dict__.get("_bbox")
        if cached is None:
            try:
                cached = self._solve_bounding_box(deadline)
            except DomainError as e:
                cached = e
            object.__setattr__(self, "_bbox", cached)  # A and b are immutable
        if isinstance(cached, DomainError):
            raise DomainError(str(cached))
        return cached

    def enclosing_box(self, deadline: float | None = None) -> Box:
        """A box containing the polytope: the bounding box when it is known, or computed
        before ``deadline`` (a :func:`time.perf_counter` moment; None: no limit); past it,
        the box of the polytope's single-coordinate rows (sound, looser; kept for later
        calls), or, when they do not bound every coordinate, the bounding box after all.
        A region of a 100-input network spent 20 s of a 5 s limit on its 400 bounding-box
        LPs.

        Example:
            >>> import time
            >>> P = Polytope([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0], [1.0, 1.0]], [1, 1, 1, 1, 0.5])
            >>> P.enclosing_box(time.perf_counter() - 1.0).hi.tolist(), P.enclosing_box().hi.tolist()
            ([1.0, 1.0], [1.0, 1.0])
            >>> P.bounding_box().hi.tolist()
            [1.0, 1.0]
        """
        if self.has_bounding_box:
            return self.bounding_box()
        if self.box_cut is not None:
            return self.box_cut
        loose = self.__dict__.get("_loose_box")
        if loose is not None:
            return loose
        try:
            return self._kept_box(deadline)   # (a kept DomainError is raised again)
        except _OutOfTime:
            loose = self._rows_box()
            if loose is None:
                # no row bounds a coordinate alone (a rotated cube): the proven box it is,
                # past the deadline (a caller's answer needs some box)
                return self.bounding_box()
            object.__setattr__(self, "_loose_box", loose)
            return loose

    def _rows_box(self) -> Box | None:
        """The box the rows with one nonzero entry give (None when some coordinate is left
        unbounded): every point of the polytope meets them, so it lies in it."""
        lo, hi = np.full(self.dim, -np.inf), np.full(self.dim, np.inf)
        single = np.count_nonzero(self.A, axis=1) == 1
        for a, c in zip(self.A[single], self.b[single], strict=True):
            i = int(np.flatnonzero(a)[0])
            # rounded outward where the division is inexact: to nearest may cut a point off
            v = float(c / a[i])
            exact = Fraction(v) * Fraction(float(a[i])) == Fraction(float(c))   # (1/3 * 3 rounds to 1)
            if a[i] > 0:
                hi[i] = min(hi[i], v if exact else float(np.nextafter(v, np.inf)))
            else:
                lo[i] = max(lo[i], v if exact else float(np.nextafter(v, -np.inf)))
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))) or np.any(lo > hi):
            return None
        return Box(lo, hi)

    def _solve_bounding_box(self, deadline: float | None = None) -> Box:
        """The bounding box, proven: HiGHS's optima are within its tolerances only (a
        thin polytope's box missed a vertex by 1e-7 relative, and bounds and maxima over
        the polytope missed it with it).  One pass of LPs finds the box; LP duality then
        bounds each coordinate over the polytope cut to a box twice as large
        (:meth:`LPModel.proven_bound` with that box's bounds, from the same solves' duals,
        in rationals up to ``EXACT_BOX_ENTRIES`` entries).  The bounds lie strictly inside
        that larger box, so by convexity the polytope lies within them (a point outside
        would join a point inside by a segment through the larger box).  (A second pass
        of solves inside the larger box doubled the time: 14 s at 100 inputs, 400 rows.)"""
        from .lp import LPModel

        d = self.dim
        m = LPModel(np.zeros(d), A_ub=self.A, b_ub=self.b)
        lo, hi = np.empty(d), np.empty(d)
        solved = []
        for i in range(d):
            for sign, target in ((1.0, lo), (-1.0, hi)):
                if deadline is not None and time.perf_counter() >= deadline:
                    raise _OutOfTime
                c = np.zeros(d)
                c[i] = sign
                m.set_objective(c)
                r = m.solve()
                if r.status == "unbounded":
                    raise DomainError(f"polytope is unbounded along coordinate {i}")
                if r.status == "infeasible":   # (built with check_empty=False)
                    raise DomainError(EMPTY_BY_LP)
                if r.status != "optimal":  # (it was called unbounded whatever the status)
                    raise DomainError(f"polytope: the LP bounding coordinate {i} ended with status "
                                      f"{r.status} (a set this thin or this far out is beyond the "
                                      "LP solver's resolution)")
                target[i] = sign * r.objective
                solved.append((i, sign, c, r))
        hi = np.maximum(hi, lo)
        with np.errstate(over="ignore"):
            reach = np.maximum(hi - lo, np.maximum(np.abs(lo), np.abs(hi))) + 1.0
            outer_lo, outer_hi = lo - reach, hi + reach
        if not (np.all(np.isfinite(outer_lo)) and np.all(np.isfinite(outer_hi))):
            raise DomainError("polytope: its bounding box reaches beyond float64's range")
        # small polytopes sum the duality bound in rationals: a triangle's box is exact
        # (float sums widen it by their rounding, ~1e-14 here)
        small = self.A.size <= EXACT_BOX_ENTRIES
        for i, sign, c, r in solved:
            m.set_objective(c)   # (proven_bound reads the model's objective)
            bound = m.proven_bound(r, exact=small, lb=outer_lo, ub=outer_hi)
            if bound is None or not (outer_lo[i] < sign * bound < outer_hi[i]):
                raise DomainError(f"polytope: the bound along coordinate {i} could not be proven "
                                  f"(LP status {r.status}; a set this thin or this far out is beyond "
                                  "the LP solver's resolution)")
            (lo if sign > 0 else hi)[i] = sign * bound
        return Box(lo, np.maximum(hi, lo))

    @property
    def is_bounded(self) -> bool:
        try:
            self.bounding_box()
        except DomainError:
            return False
        return True

    @property
    def has_bounding_box(self) -> bool:
        """Whether the proven bounding box is known (solved and kept): then
        :meth:`bounding_box` costs nothing."""
        return isinstance(self.__dict__.get("_bbox"), Box)

    def bounded_by(self, deadline: float | None) -> bool | None:
        """:attr:`is_bounded`, decided before ``deadline`` (a :func:`time.perf_counter`
        moment; None: no limit), or None when it came first: the single-coordinate rows
        may show it at once, else it takes the bounding box's 2 d LPs (7 s at 100 inputs
        and 400 rows).

        Example:
            >>> import time
            >>> P = Polytope([[1.0, 1.0], [-1.0, 0.0], [0.0, -1.0]], [1.0, 0.0, 0.0])
            >>> P.bounded_by(time.perf_counter() - 1.0) is None, P.bounded_by(None)
            (True, True)
        """
        if "_bbox" not in self.__dict__ and deadline is not None and self._rows_box() is not None:
            return True
        try:
            self._kept_box(deadline)
        except _OutOfTime:
            return None
        except DomainError:
            return False
        return True

    def to_polytope(self) -> Polytope:
        return self

    def chebyshev_center(self) -> tuple[np.ndarray, float]:
        """Centre and radius of the largest inscribed ball (radius 0: not full-dimensional)."""
        from .lp import chebyshev_center

        x, r = chebyshev_center(self.A, self.b)
        if x is None:
            raise DomainError("empty polytope")
        return x, r

    def sample(self, n: int, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """``n`` points from the polytope: uniform by rejection from its bounding box, or,
        when the polytope fills little of the box, by hit-and-run, whose points are only
        roughly uniform (10 steps apart from the Chebyshev centre: a thin strip's deciles
        held 8 to 279 of 1,000 points).  Probes, not a statistical sample."""
        _check_count(n)
        rng = np.random.default_rng(rng)
        # the box to reject from: the bounding box when known, else the box of the
        # single-coordinate rows, else (up to SAMPLE_BOX_MAX_DIM inputs) the bounding box;
        # above that straight to hit-and-run (the bounding box of a 100-D polytope of 400
        # rows took 14 s, and rejection from it of a rotated cube accepts nothing)
        box = self.bounding_box() if self.has_bounding_box else self._rows_box()
        if box is None and self.dim <= SAMPLE_BOX_MAX_DIM:
            box = self.bounding_box()
        if box is None:
            return self._hit_and_run(n, rng)
        out: list[np.ndarray] = []
        got = 0
        for _ in range(20):
            cand = box.sample(max(4 * (n - got), 64), rng)
            keep = cand[self.contains(cand, tol=0.0)]
            out.append(keep[: n - got])
            got += min(len(keep), n - got)
            if got >= n:
                return np.concatenate(out)[:n]
            if got < n / 40:
                break   # at this rate 20 rounds would not fill the sample: hit-and-run now
        return self._hit_and_run(n, rng)

    def _hit_and_run(self, n: int, rng: np.random.Generator) -> np.ndarray:
        x, r = self.chebyshev_center()
        if r <= 0:
            raise DomainError("cannot sample a polytope that is not full-dimensional")
        if not np.isfinite(r):
            raise DomainError("cannot sample an unbounded polytope (it holds balls of any radius)")
        pts = np.empty((n, self.dim))
        slack = self.b - self.A @ x
        steps = n * 10
        # directions and their products with A drawn a block at a time: the chain's own
        # loop is then a few operations on vectors of length m per step
        for start in range(0, steps, HIT_RUN_BLOCK):
            k = min(HIT_RUN_BLOCK, steps - start)
            U = rng.normal(size=(k, self.dim))
            U /= np.linalg.norm(U, axis=1, keepdims=True)
            AU = U @ self.A.T
            with np.errstate(divide="ignore", invalid="ignore"):
                inv = 1.0 / AU
            pos, neg = AU > 0, AU < 0
            any_pos, any_neg = pos.any(axis=1), neg.any(axis=1)
            u = rng.random(k)
            for j in range(k):
                t = slack * inv[j]
                t_hi = t[pos[j]].min() if any_pos[j] else 1.0
                t_lo = t[neg[j]].max() if any_neg[j] else -1.0
                xn = x + (t_lo + u[j] * (t_hi - t_lo)) * U[j]
                # recomputed, not updated by -step * AU[j]: drift would leave the polytope
                sn = self.b - self.A @ xn
                if not np.any(sn < 0):
                    # (a step to within rounding of a face can land outside it, by 1.6e-9
                    # on a thin slab at 1.5e6: such a step is not taken)
                    x, slack = xn, sn
                i = start + j
                if i % 10 == 9:
                    pts[i // 10] = x
        return pts

    def __repr__(self) -> str:
        return f"Polytope({self.n_constraints} constraints in dimension {self.dim})"

    def to_dict(self) -> dict:
        return {"type": "polytope", "A": self.A.tolist(), "b": self.b.tolist()}


def _least_violation(A: np.ndarray, b: np.ndarray) -> float:
    """min over x of max_i (A_i x - b_i), at least 0, by one LP at a tight tolerance."""
    from .lp import LPModel

    m, d = A.shape
    c = np.zeros(d + 1)
    c[-1] = 1.0
    model = LPModel(c, A_ub=np.hstack([A, -np.ones((m, 1))]), b_ub=b,
                    lb=np.concatenate([np.full(d, -np.inf), [0.0]]))
    model.set_feasibility_tol(primal=1e-10, dual=1e-10)  # tol: below FEAS_TOL, to decide at it
    r = model.solve()
    return float(r.objective) if r.status == "optimal" else 0.0


def _points(X: Any) -> np.ndarray:
    """Points given to ``contains`` as a float array, or one error naming them."""
    try:
        return np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as e:
        raise DomainError(f"points: entries are not real numbers in rows of equal length ({e})") from None


def _check_count(n: Any) -> None:
    if not is_int_at_least(n, 0):
        raise DomainError(f"sample: n must be a non-negative integer, got {n!r}")


def _midpoint(lo: Any, hi: Any) -> Any:
    """(lo + hi) / 2, without overflow where lo + hi passes float64's largest value.

    Example:
        >>> float(_midpoint(1e308, 1.7e308)), float(_midpoint(-1.0, 2.0))
        (1.35e+308, 0.5)
    """
    with np.errstate(over="ignore"):
        m = (lo + hi) / 2
    return np.where(np.isfinite(m), m, lo / 2 + hi / 2)


def _scale_rows(A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row (A_i, b_i) times the power of two that puts max |A_i| in [1, 2): the same
    set, exactly (a power of two only shifts exponents), but rows of 1e-10 no longer fall
    under HiGHS's small-coefficient cut (which dropped them: x <= -1e10 read as empty) or
    under the absolute tolerance of :meth:`Polytope.contains`.  A row whose scaled b would
    overflow (a bound beyond 1e308 along it) is left as given.

    Example:
        >>> A, b = _scale_rows(np.array([[1e-10, 0.0], [3.0, -1.0]]), np.array([-1.0, 2.0]))
        >>> bool(A[0, 0] / 1e-10 == 2.0**34 == -b[0]), A[1].tolist(), float(b[1])
        (True, [1.5, -0.5], 1.0)
    """
    if A.size == 0:
        return A, b
    big = np.max(np.abs(A), axis=1)
    exp = np.frexp(big)[1] - 1  # 2^exp <= max |A_i| < 2^(exp + 1)
    exp[big == 0] = 0
    with np.errstate(over="ignore"):
        b2 = np.ldexp(b, -exp)
    exp[~np.isfinite(b2)] = 0
    return np.ldexp(A, -exp[:, None]), np.ldexp(b, -exp)


Domain = Box | Polytope


def as_domain(obj: Any, dim: int | None = None) -> Box | Polytope:
    """Accept a Box, a Polytope, or a pair ``(lo, hi)``; check its dimension.

    Example:
        >>> as_domain(([0, 0], [1, 1])).dim
        2
    """
    if isinstance(obj, (Box, Polytope)):
        dom = obj
    elif isinstance(obj, tuple) and len(obj) == 2:
        dom = Box(*obj)
    else:
        raise DomainError(f"not a domain: {obj!r} (give a Box, a Polytope or a (lo, hi) pair)")
    if dim is not None and dom.dim != dim:
        raise DomainError(f"domain has dimension {dom.dim}; the network takes {dim} inputs")
    return dom
