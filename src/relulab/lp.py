"""The one thin wrapper over HiGHS (highspy) used by every LP and MILP in relulab.

Problems are stated as::

    minimize / maximize   c @ x
    subject to            A_ub @ x <= b_ub,   A_eq @ x == b_eq,   lb <= x <= ub,
                          x[j] integer where integer[j]

:func:`solve` answers one problem; :class:`LPModel` keeps a HiGHS instance alive so
that a sequence of related problems (new objectives, changed bounds, added rows)
re-solves from the previous basis (warm start), which is how batched bound
tightening and region enumeration stay fast.

Example:
    >>> r = solve([-1.0, -1.0], A_ub=[[1.0, 2.0], [3.0, 1.0]], b_ub=[4.0, 6.0])
    >>> r.status, round(r.objective, 6)
    ('optimal', -2.8)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from .errors import RelulabError
from .tolerance import MATCH_RTOL


class LPError(RelulabError, RuntimeError):
    """An LP that relulab needs ended without a usable answer (a RuntimeError as before)."""

__all__ = ["LPResult", "LPModel", "solve", "chebyshev_center", "chebyshev_center_zoomed", "no_interior", "INF"]

INF = float("inf")
# objectives whose largest coefficient is below this are scaled up (objective_scale)
SMALL_OBJECTIVE = 2.0 ** -4
# a time-limited LP with more nonzeros than this runs without presolve (set_time_limit)
PRESOLVE_OFF_NNZ = 10**6


@dataclass(frozen=True)
class LPResult:
    """Outcome of one solve.

    ``status`` is one of ``optimal``, ``infeasible``, ``unbounded``,
    ``infeasible_or_unbounded`` (HiGHS's presolve could not tell which), ``time_limit``,
    ``error``.  ``x`` and ``objective`` are set when a primal solution is known
    (for ``time_limit`` on a MILP: the incumbent, with ``bound`` the best dual bound).

    Example:
        >>> r = solve([1.0], lb=[2.0], ub=[5.0])
        >>> r.status, r.objective, r.x.tolist()
        ('optimal', 2.0, [2.0])
        >>> solve([1.0], A_ub=[[1.0]], b_ub=[-1.0], lb=[0.0]).status
        'infeasible'
    """

    status: str
    x: np.ndarray | None = None
    objective: float | None = None
    bound: float | None = None
    duals: np.ndarray | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "optimal"


_BANNER_SHOWN = False


def _highs():
    """A silent HiGHS instance.

    HiGHS prints a copyright banner to the C-level stdout when the first instance of a
    process is created, before any option can be set; it would corrupt ``--json``
    output, so that one construction runs with file descriptor 1 pointed at devnull.
    """
    global _BANNER_SHOWN
    import highspy

    if _BANNER_SHOWN:
        h = highspy.Highs()
    else:
        import os
        import sys

        sys.stdout.flush()
        saved = os.dup(1)
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 1)
            h = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            os.close(devnull)
        _BANNER_SHOWN = True
    h.setOptionValue("output_flag", False)
    return h


def _status_name(h) -> str:
    import highspy

    ms = h.getModelStatus()
    S = highspy.HighsModelStatus
    if ms == S.kOptimal:
        return "optimal"
    if ms == S.kInfeasible:
        return "infeasible"
    if ms in (S.kUnbounded, S.kUnboundedOrInfeasible):
        return "unbounded" if ms == S.kUnbounded else "infeasible_or_unbounded"
    if ms == S.kTimeLimit or ms == S.kInterrupt:
        return "time_limit"
    return "error"


def _solver_seconds(seconds: float) -> float:
    """A time limit as HiGHS takes it: at least a millisecond (zero or less it refuses), and
    a NaN limit counts as spent (HiGHS read NaN as no limit and ran on).

    Example:
        >>> _solver_seconds(2.5), _solver_seconds(-1.0), _solver_seconds(float("nan"))
        (2.5, 0.001, 0.001)
    """
    seconds = float(seconds)
    return seconds if seconds > 1e-3 else 1e-3


def _check_data(v: np.ndarray, what: str, inf_ok: bool) -> None:
    """Refuse NaN (and, where ``inf_ok`` is False, infinite) LP data: HiGHS answered
    "optimal" with objective NaN for a NaN cost and "unbounded" for a NaN matrix entry.

    Example:
        >>> _check_data(np.array([1.0, np.inf]), "b_ub", True)
        >>> _check_data(np.array([np.nan]), "costs c", False)
        Traceback (most recent call last):
        ...
        relulab.lp.LPError: LP data: the costs c hold NaN or infinite entries
    """
    bad = np.isnan(v) if inf_ok else ~np.isfinite(v)
    if np.any(bad):
        raise LPError(f"LP data: the {what} hold NaN{'' if inf_ok else ' or infinite'} entries")


def _csr(A: Any, n: int) -> sp.csr_matrix:
    if A is None:
        return sp.csr_matrix((0, n))
    if sp.issparse(A):
        return A.tocsr()
    A = np.atleast_2d(np.asarray(A, dtype=np.float64))
    if A.size == 0:
        return sp.csr_matrix((0, n))
    return sp.csr_matrix(A)


class LPModel:
    """A live HiGHS model for warm-started sequences of related LPs / MILPs.

    Example:
        >>> m = LPModel(c=[1.0, 0.0], A_ub=[[-1.0, -1.0]], b_ub=[-1.0], lb=[0, 0], ub=[1, 1])
        >>> m.solve().objective
        0.0
        >>> m.set_objective([1.0, 1.0]); m.solve().objective
        1.0
    """

    def __init__(
        self,
        c: Any,
        A_ub: Any = None,
        b_ub: Any = None,
        A_eq: Any = None,
        b_eq: Any = None,
        lb: Any = None,
        ub: Any = None,
        integer: Any = None,
        maximize: bool = False,
        time_limit: float | None = None,
        threads: int = 1,
    ) -> None:
        import highspy

        c = np.asarray(c, dtype=np.float64).reshape(-1)
        n = c.shape[0]
        self.n = n
        # an LP's small objective is solved scaled up (objective_scale); a MILP's is the
        # caller's to scale, as its gaps are in the objective's units
        self._scale = 1.0 if integer is not None and np.any(integer) else objective_scale(c)
        Aub = _csr(A_ub, n)
        Aeq = _csr(A_eq, n)
        bub = np.asarray(b_ub if b_ub is not None else [], dtype=np.float64).reshape(-1)
        beq = np.asarray(b_eq if b_eq is not None else [], dtype=np.float64).reshape(-1)
        if Aub.shape[1] != n or Aeq.shape[1] != n or Aub.shape[0] != bub.shape[0] or Aeq.shape[0] != beq.shape[0]:
            raise ValueError(
                f"LP shapes disagree: c has {n} entries, A_ub {Aub.shape}, b_ub {bub.shape}, "
                f"A_eq {Aeq.shape}, b_eq {beq.shape}"
            )
        lbv = np.full(n, -INF) if lb is None else np.asarray(lb, dtype=np.float64).reshape(-1)
        ubv = np.full(n, INF) if ub is None else np.asarray(ub, dtype=np.float64).reshape(-1)
        A = sp.vstack([Aub, Aeq]).tocsc()
        _check_data(c, "costs c", False)
        _check_data(A.data, "constraint matrix", False)
        for v, what in ((bub, "b_ub"), (beq, "b_eq"), (lbv, "lower bounds lb"), (ubv, "upper bounds ub")):
            _check_data(v, what, True)
        row_lo = np.concatenate([np.full(Aub.shape[0], -INF), beq])
        row_hi = np.concatenate([bub, beq])
        lp = highspy.HighsLp()
        lp.num_col_ = n
        lp.num_row_ = A.shape[0]
        lp.col_cost_ = c * self._scale
        lp.col_lower_ = lbv
        lp.col_upper_ = ubv
        lp.row_lower_ = row_lo
        lp.row_upper_ = row_hi
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = A.indptr.astype(np.int32)
        lp.a_matrix_.index_ = A.indices.astype(np.int32)
        lp.a_matrix_.value_ = A.data.astype(np.float64)
        lp.sense_ = highspy.ObjSense.kMaximize if maximize else highspy.ObjSense.kMinimize
        self._is_mip = False
        if integer is not None:
            integ = np.asarray(integer, dtype=bool).reshape(-1)
            if integ.any():
                self._is_mip = True
                lp.integrality_ = [
                    highspy.HighsVarType.kInteger if v else highspy.HighsVarType.kContinuous
                    for v in integ
                ]
        # a copy of the model for :meth:`proven_bound` (rebuilt from HiGHS after a change)
        self._mirror: tuple | None = (A, lbv, ubv, row_lo, row_hi)
        self._cost = c.copy()
        self._maximize = bool(maximize)
        self._h = _highs()
        self._exact_matrix = False
        self._h.setOptionValue("threads", int(threads))
        self._nnz = int(A.nnz)
        if time_limit is not None:
            self.set_time_limit(time_limit)
        self._h.passModel(lp)

    @property
    def is_mip(self) -> bool:
        return self._is_mip

    @property
    def h(self) -> Any:
        """The raw ``highspy.Highs`` instance: an escape hatch for experiments only.
        relulab modules use the methods of this class instead (``tests/test_structure.py``
        checks that no module reaches around them)."""
        return self._h

    def set_mip_gap(self, rel: float | None = None, abs: float | None = None) -> None:  # noqa: A002
        """Stop the branch and bound when the relative / absolute gap between the
        incumbent and the bound falls below these (``None``: leave HiGHS's setting).

        Example:
            >>> m = LPModel([-1.0, -1.0], A_ub=[[2.0, 2.0]], b_ub=[3.0], ub=[1, 1], integer=[1, 1])
            >>> m.set_mip_gap(rel=1e-9, abs=1e-9); m.solve().objective
            -1.0
        """
        if rel is not None:
            self._h.setOptionValue("mip_rel_gap", float(rel))
        if abs is not None:
            self._h.setOptionValue("mip_abs_gap", float(abs))

    def set_feasibility_tol(self, primal: float | None = None, mip: float | None = None,
                            dual: float | None = None) -> None:
        """Set HiGHS's primal / MIP / dual feasibility tolerances (``None``: leave its setting).

        Example:
            >>> m = LPModel([1.0], A_ub=[[-1.0]], b_ub=[-1.0])
            >>> m.set_feasibility_tol(primal=1e-9, mip=1e-9); m.solve().objective
            1.0
        """
        if primal is not None:
            self._h.setOptionValue("primal_feasibility_tolerance", float(primal))
        if mip is not None:
            self._h.setOptionValue("mip_feasibility_tolerance", float(mip))
        if dual is not None:
            self._h.setOptionValue("dual_feasibility_tolerance", float(dual))

    def set_exact_matrix(self) -> None:
        """Solve the model on its matrix as given: HiGHS's presolve off.  Presolve
        substitutes variables and so makes new matrix entries (products and ratios of the
        given ones), and drops those at most ``small_matrix_value`` (1e-9) with no
        allowance: second-layer weights of 2e-9 to 3.5e-9, each kept, left an "optimal"
        maximum 1.06e-6 under a point's exact value.  The entries HiGHS drops as given are
        dropped by relulab's encodings themselves, with outward slack; those presolve
        would make cannot be known in advance, so a MILP or LP whose bound is a proof
        runs without it.

        Example:
            >>> m = LPModel([1.0], A_ub=[[-1.0]], b_ub=[-1.0], integer=[1])
            >>> m.set_exact_matrix(); m.solve().objective
            1.0
        """
        self._h.setOptionValue("presolve", "off")
        self._exact_matrix = True

    def set_row_bounds(self, row: int, lo: float, hi: float) -> None:
        """Change the bounds ``lo <= A[row] x <= hi`` of one row (keeps the basis).

        Example:
            >>> m = LPModel([-1.0], A_ub=[[1.0]], b_ub=[1.0])
            >>> m.set_row_bounds(0, -INF, 2.0); m.solve().objective
            -2.0
        """
        self._h.changeRowBounds(int(row), float(lo), float(hi))
        self._mirror = None

    def set_time_limit(self, seconds: float | None) -> None:
        """Stop after ``seconds`` (None: no limit).  HiGHS's LP presolve does not look at
        the clock (6.6 s under a 1 s limit on a dense 3000 x 12000 LP), so a time-limited
        LP with more than ``PRESOLVE_OFF_NNZ`` nonzeros is solved without it; MIPs keep it
        (their branch and bound needs it, and checks the clock between nodes)."""
        self._h.setOptionValue("time_limit", INF if seconds is None else _solver_seconds(seconds))
        if not self._is_mip and self._nnz > PRESOLVE_OFF_NNZ and not self._exact_matrix:
            self._h.setOptionValue("presolve", "choose" if seconds is None else "off")

    def set_objective(self, c: Any, maximize: bool | None = None) -> None:
        """Replace the whole objective vector (keeps the basis for a warm start)."""
        import highspy

        c = np.asarray(c, dtype=np.float64).reshape(-1)
        _check_data(c, "costs c", False)
        if not self._is_mip:
            self._scale = objective_scale(c)
        self._h.changeColsCost(self.n, np.arange(self.n, dtype=np.int32), c * self._scale)
        self._cost = c.copy()
        if maximize is not None:
            self._maximize = bool(maximize)
            self._h.changeObjectiveSense(
                highspy.ObjSense.kMaximize if maximize else highspy.ObjSense.kMinimize
            )

    def set_bounds(self, cols: Any, lb: Any, ub: Any) -> None:
        """Change the bounds of the variables ``cols``."""
        cols = np.asarray(cols, dtype=np.int32).reshape(-1)
        self._h.changeColsBounds(
            cols.shape[0], cols, np.asarray(lb, float).reshape(-1), np.asarray(ub, float).reshape(-1)
        )
        self._mirror = None

    def add_rows(self, A: Any, lo: Any, hi: Any) -> None:
        """Append rows ``lo <= A x <= hi``."""
        A = _csr(A, self.n)
        self._h.addRows(
            A.shape[0],
            np.asarray(lo, float).reshape(-1),
            np.asarray(hi, float).reshape(-1),
            A.nnz,
            A.indptr.astype(np.int32),
            A.indices.astype(np.int32),
            A.data.astype(np.float64),
        )
        self._mirror = None

    def use_primal_simplex(self) -> None:
        """Solve with HiGHS's primal simplex: after :meth:`add_cols` the old basis stays
        primal feasible (new variables at a bound), so the primal simplex resumes where
        the dual one would restart from a dual phase 1 (column generation).

        Example:
            >>> m = LPModel([1.0, 2.0], A_eq=[[1.0, 1.0]], b_eq=[1.0], lb=[0, 0])
            >>> m.use_primal_simplex(); m.solve().objective
            1.0
        """
        self._h.setOptionValue("solver", "simplex")
        self._h.setOptionValue("simplex_strategy", 4)

    def add_cols(self, c: Any, lb: Any, ub: Any, A: Any) -> None:
        """Append variables with costs ``c``, bounds ``lb <= x <= ub`` and constraint
        columns ``A`` (shape: rows x new columns); keeps the basis, so the next
        :meth:`solve` warm-starts (column generation).

        Example:
            >>> m = LPModel([1.0], A_eq=[[1.0]], b_eq=[2.0], lb=[0.0])
            >>> m.solve().objective
            2.0
            >>> m.add_cols([0.5], [0.0], [INF], [[1.0]]); m.solve().objective
            1.0
        """
        import scipy.sparse as sp_

        c = np.asarray(c, dtype=np.float64).reshape(-1)
        M = sp_.csc_matrix(A if sp_.issparse(A) else np.asarray(A, dtype=np.float64).reshape(-1, c.shape[0]))
        if M.shape != (self.n_rows, c.shape[0]):
            raise ValueError(f"add_cols: A has shape {M.shape}, expected ({self.n_rows}, {c.shape[0]})")
        self._h.addCols(
            c.shape[0], c * self._scale,
            np.asarray(lb, float).reshape(-1), np.asarray(ub, float).reshape(-1),
            M.nnz, M.indptr.astype(np.int32), M.indices.astype(np.int32), M.data.astype(np.float64),
        )
        self.n += c.shape[0]
        self._cost = np.concatenate([self._cost, c])
        self._mirror = None
        if not self._is_mip and objective_scale(self._cost) != self._scale:
            # the new costs change the objective's size: rescale all of it (a leftover
            # 2^40 times a new cost of 1 made HiGHS fail)
            self._scale = objective_scale(self._cost)
            self._h.changeColsCost(self.n, np.arange(self.n, dtype=np.int32), self._cost * self._scale)

    def _model_copy(self) -> tuple:
        if self._mirror is None:
            lp = self._h.getLp()
            n, m = int(lp.num_col_), int(lp.num_row_)
            A = sp.csc_matrix((np.asarray(lp.a_matrix_.value_, dtype=np.float64),
                               np.asarray(lp.a_matrix_.index_), np.asarray(lp.a_matrix_.start_)),
                              shape=(m, n))
            self._mirror = (A, np.asarray(lp.col_lower_, dtype=np.float64),
                            np.asarray(lp.col_upper_, dtype=np.float64),
                            np.asarray(lp.row_lower_, dtype=np.float64),
                            np.asarray(lp.row_upper_, dtype=np.float64))
        return self._mirror

    def proven_bound(self, result: LPResult, exact: bool = False, lb: Any = None,
                     ub: Any = None) -> float | None:
        """A bound on this LP's optimum that holds whatever HiGHS's tolerances allowed:
        a lower bound when minimising, an upper bound when maximising (``None`` without
        duals, or where it is infinite).

        HiGHS's ``objective`` is optimal only up to its dual feasibility tolerance, an
        absolute 1e-7 on the reduced costs: with objective coefficients near 1e-6 an
        "optimal" vertex can be far from the optimum.  Weak duality gives a bound from
        *any* row multipliers ``y``: ``c . x = (c - A^T y) . x + y . (A x)``, each term
        bounded over the variables' and rows' bounds (Neumaier and Shcherbina's safe
        bound).  The solve's row duals make it tight; a multiplier whose row side is
        infinite is set to 0; the float rounding of the sums is added on.

        Example:
            >>> m = LPModel([1e-6, 1e-6], A_ub=[[-1.0, -1.0]], b_ub=[-1.0], lb=[0, 0], ub=[5, 5])
            >>> r = m.solve(); b = m.proven_bound(r)
            >>> bool(1e-6 - 1e-15 < b <= 1e-6)   # min x0 + x1 (times 1e-6) subject to x0 + x1 >= 1
            True

        ``exact=True`` sums in rationals (the multipliers and data as given, the result
        rounded down once) instead of adding a bound on the float rounding: tighter, and
        exact when the multipliers are; it costs a Fraction product per nonzero of the
        rows with a multiplier.

        ``lb``, ``ub`` (both or neither): the bound for this LP with these variable bounds
        instead of its own.  Weak duality holds for any multipliers, so the duals of a
        solve without them bound the LP with them (one solve serves both).
        """
        if self._is_mip or result.duals is None:
            return None
        A, own_lb, own_ub, rlo, rhi = self._model_copy()
        if (lb is None) != (ub is None):
            raise ValueError("proven_bound: give both lb and ub, or neither")
        if lb is None:
            lb, ub = own_lb, own_ub
        else:
            lb = np.broadcast_to(np.asarray(lb, dtype=np.float64), own_lb.shape)
            ub = np.broadcast_to(np.asarray(ub, dtype=np.float64), own_ub.shape)
        sign = -1.0 if self._maximize else 1.0  # bound min(sign c . x), then undo the sign
        c = sign * self._cost
        best = -INF
        for y in (sign * result.duals, -sign * result.duals):
            # a row's multiplier needs its bound on the side it pushes against
            y = np.where(np.isfinite(y) & (((y > 0) & np.isfinite(rlo)) | ((y < 0) & np.isfinite(rhi))), y, 0.0)
            if exact:
                best = max(best, _exact_dual_bound(A, c, y, lb, ub, rlo, rhi))
                continue
            r = c - A.T @ y
            value = _box_min(r, lb, ub) + _box_min(y, rlo, rhi)
            if not np.isfinite(value):
                continue
            # rounding of A^T y, the products and the two sums, each at most this much
            size = (float(np.abs(c) @ _magnitude(lb, ub)) + float((abs(A).T @ np.abs(y)) @ _magnitude(lb, ub))
                    + float(np.abs(y) @ _magnitude(rlo, rhi)))
            k = A.shape[0] + A.shape[1] + 4
            best = max(best, value - 2.0 * k * np.finfo(float).eps * size)
        if not np.isfinite(best):
            return None
        return sign * best

    @property
    def n_rows(self) -> int:
        return int(self._h.getNumRow())

    def delete_rows_from(self, first: int) -> None:
        """Drop every row from index ``first`` on (undo :meth:`add_rows`)."""
        idx = np.arange(first, self.n_rows, dtype=np.int32)
        if idx.size:
            self._h.deleteRows(idx.size, idx)
            self._mirror = None

    def solve(self) -> LPResult:
        h = self._h
        h.run()
        status = _status_name(h)
        info = h.getInfo()
        x = None
        obj = None
        if status == "optimal" or (status == "time_limit" and info.primal_solution_status == 2):
            sol = h.getSolution()
            x = np.array(sol.col_value, dtype=np.float64)
            obj = float(info.objective_function_value) / self._scale
        bound = None
        duals = None
        if self._is_mip:
            bound = float(info.mip_dual_bound)
        elif status == "optimal":
            duals = np.array(h.getSolution().row_dual, dtype=np.float64) / self._scale
        return LPResult(
            status=status,
            x=x,
            objective=obj,
            bound=bound,
            duals=duals,
            info={"mip_gap": float(info.mip_gap) if self._is_mip else 0.0,
                  "nodes": int(info.mip_node_count) if self._is_mip else 0,
                  "iterations": int(info.simplex_iteration_count)},
        )


def objective_scale(c: Any) -> float:
    """The power of two that brings a small objective's largest coefficient into [1, 2)
    (1 for an objective that is not small, or zero).  HiGHS's dual feasibility tolerance
    is absolute (1e-7 on the reduced costs): with coefficients near 1e-6 an "optimal"
    vertex may be far from the optimum.  A power of two scales exactly.

    Example:
        >>> objective_scale([3e-7, -1e-8]), objective_scale([0.5, 2.0]), objective_scale([0.0])
        (4194304.0, 1.0, 1.0)
    """
    big = float(np.max(np.abs(np.asarray(c, dtype=np.float64)), initial=0.0))
    if not (0.0 < big < SMALL_OBJECTIVE) or not np.isfinite(big):
        return 1.0
    return float(2.0 ** min(-np.floor(np.log2(big)), 1000.0))  # (2^1063 would overflow)


def _box_min(r: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    """min of r . x over lo <= x <= hi (entries with r = 0 add nothing, even at an
    infinite bound; -inf where a needed bound is infinite)."""
    pos, neg = r > 0, r < 0
    return float(np.sum(r[pos] * lo[pos]) + np.sum(r[neg] * hi[neg]))


def _exact_dual_bound(A: sp.csc_matrix, c: np.ndarray, y: np.ndarray, lb: np.ndarray, ub: np.ndarray,
                      rlo: np.ndarray, rhi: np.ndarray) -> float:
    """Weak duality's ``min (c - A^T y) . x + min y . (A x)`` over the bounds, summed in
    rationals and rounded down (-inf where a needed bound is infinite).

    Example:
        >>> A = sp.csc_matrix(np.array([[-1.0, -1.0]]))
        >>> _exact_dual_bound(A, np.array([0.5, 0.5]), np.array([-0.5]), np.zeros(2), np.full(2, 5.0),
        ...                   np.array([-INF]), np.array([-1.0]))   # min (x0 + x1) / 2, x0 + x1 >= 1
        0.5
    """
    from fractions import Fraction

    Ar = A.tocsr()
    r = [Fraction(float(v)) for v in c]
    total = Fraction(0)
    for i in np.flatnonzero(y):
        yi = Fraction(float(y[i]))
        for k in range(Ar.indptr[i], Ar.indptr[i + 1]):
            r[Ar.indices[k]] -= Fraction(float(Ar.data[k])) * yi
        side = rlo[i] if yi > 0 else rhi[i]
        total += yi * Fraction(float(side))
    for j, rj in enumerate(r):
        if rj != 0:
            side = lb[j] if rj > 0 else ub[j]
            if not np.isfinite(side):
                return -INF
            total += rj * Fraction(float(side))
    fl = float(total)
    return fl if Fraction(fl) <= total else float(np.nextafter(fl, -INF))


def _magnitude(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """max(|lo|, |hi|), the infinite sides counted as 0 (their multipliers are 0)."""
    return np.maximum(np.where(np.isfinite(lo), np.abs(lo), 0.0), np.where(np.isfinite(hi), np.abs(hi), 0.0))


def solve(
    c: Any,
    A_ub: Any = None,
    b_ub: Any = None,
    A_eq: Any = None,
    b_eq: Any = None,
    lb: Any = None,
    ub: Any = None,
    integer: Any = None,
    maximize: bool = False,
    time_limit: float | None = None,
) -> LPResult:
    """Solve one LP or MILP with HiGHS (see the module docstring for the form).

    Variables are free unless ``lb``/``ub`` say otherwise.

    Example:
        >>> r = solve([1.0, 1.0], A_ub=[[-2.0, -2.0]], b_ub=[-3.0], lb=[0, 0], integer=[True, True])
        >>> r.status, r.objective          # x1 + x2 >= 1.5 with integers: 2
        ('optimal', 2.0)
        >>> solve([-1.0], lb=[0.0]).status
        'unbounded'
    """
    return LPModel(c, A_ub, b_ub, A_eq, b_eq, lb, ub, integer, maximize, time_limit).solve()


def chebyshev_center(A: Any, b: Any, lb: Any = None, ub: Any = None) -> tuple[np.ndarray | None, float]:
    """Centre and radius of the largest ball inside ``{x : A x <= b}``.

    Returns ``(None, -inf)`` when the set is empty and ``(x, inf)`` when the ball is
    unbounded.  The LP caps the radius to stay bounded, above what any bounded set of
    these rows allows (twice the largest ``b_i / |A_i|`` or finite variable bound; at
    least 1e6, at most 1e15, where HiGHS's bounds would turn infinite): a radius at the
    cap reads as inf.

    Example:
        >>> x, r = chebyshev_center([[1, 0], [-1, 0], [0, 1], [0, -1]], [1, 1, 1, 1])
        >>> (np.round(x, 9) + 0.0).tolist(), round(r, 9)
        ([0.0, 0.0], 1.0)
    """
    A = np.atleast_2d(np.asarray(A, dtype=np.float64))
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    d = A.shape[1]
    norms = np.linalg.norm(A, axis=1)
    Aub = np.hstack([A, norms[:, None]])
    # a ball inside a bounded polytope has r <= max_i b_i / |A_i| (combine the rows with
    # the weights that sum their normals to 0); the variable bounds are rows too
    live = norms > 0
    reach = [np.abs(b[live]) / norms[live]]
    for v in (lb, ub):
        if v is not None:
            v = np.asarray(v, float)
            reach.append(np.abs(v[np.isfinite(v)]))
    scale = max((float(a.max()) for a in reach if a.size), default=0.0)
    cap = min(max(1e6, 2.0 * scale), 1e15)
    lbv = np.concatenate([np.full(d, -INF) if lb is None else np.asarray(lb, float), [0.0]])
    ubv = np.concatenate([np.full(d, INF) if ub is None else np.asarray(ub, float), [cap]])
    c = np.zeros(d + 1)
    c[-1] = -1.0
    r = solve(c, A_ub=Aub, b_ub=b, lb=lbv, ub=ubv)
    if r.status == "error" and lb is None and ub is None:
        # an unbounded set's optimal centres run off along its recession directions, and
        # HiGHS ended "error" on one (4 rows in 2-D, entries of size 1 to 30): again with
        # the centre kept within 1000 caps of the origin (room for a ball of the cap)
        K = 1e3 * cap
        r = solve(c, A_ub=Aub, b_ub=b, lb=np.concatenate([np.full(d, -K), [0.0]]),
                  ub=np.concatenate([np.full(d, K), [cap]]))
    if r.status == "infeasible":
        return None, -INF
    if not r.ok:
        raise LPError(f"Chebyshev-centre LP ended with status {r.status}"
                      + (" (bounds or coefficients beyond what HiGHS represents, e.g. a domain "
                         "reaching 1e100: give a smaller one)" if r.status == "error" else ""))
    rad = float(r.x[-1])
    return r.x[:d], (INF if rad >= cap * (1 - MATCH_RTOL) else rad)


# a Chebyshev radius below this share of the centre's scale is within HiGHS's tolerances
# of 0: the set may still hold a ball, which the zoom below looks for
THIN_RADIUS = 1e-9  # tol: HiGHS feasibility tolerance scale
# the zoom's window shrinks by this factor per step, for this many steps
ZOOM_FACTOR, ZOOM_STEPS = 1e-6, 5  # tol: window shrink per step


def chebyshev_center_zoomed(A: Any, b: Any, lb: Any = None, ub: Any = None) -> tuple[np.ndarray | None, float]:
    """:func:`chebyshev_center`, and when the radius is within the LP's tolerances of 0, a
    search for a ball in ever smaller windows around the centre: only the rows that can
    bind within the window are kept and the window is scaled to size 1, so a region
    ``1e-15`` wide becomes one HiGHS resolves.  A radius of 0 is then no proof of an empty
    interior: slabs 1e-14 wide were dropped as empty and a Lipschitz constant of 1 was
    called exactly 0.  (Still not a proof: a region thinner than about 100 times the
    rounding of its rows, about 1e-14 of their scale, is not looked for.)

    Example:
        >>> w = 1e-15          # the slab 0 <= x <= w inside [-1, 1]
        >>> chebyshev_center([[-1.0], [1.0]], [0.0, w], [-1.0], [1.0])[1] < w / 2   # HiGHS: 0
        True
        >>> x, r = chebyshev_center_zoomed([[-1.0], [1.0]], [0.0, w], [-1.0], [1.0])
        >>> bool(0 < x[0] < w), bool(0 < r <= w / 2)
        (True, True)
    """
    x, rad = chebyshev_center(A, b, lb, ub)
    if x is None or not np.isfinite(rad):
        return x, rad
    scale = max(1.0, float(np.max(np.abs(x), initial=0.0)))
    if rad > THIN_RADIUS * scale:
        return x, rad
    A = np.atleast_2d(np.asarray(A, dtype=np.float64))
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    d = A.shape[1]
    rows, rhs = [A], [b]
    for v, sign in ((ub, 1.0), (lb, -1.0)):
        if v is not None:
            v = np.asarray(v, dtype=np.float64).reshape(-1)
            fin = np.isfinite(v)
            rows.append(sign * np.eye(d)[fin])
            rhs.append(sign * v[fin])
    A_all, b_all = np.vstack(rows), np.concatenate(rhs)
    l1 = np.abs(A_all).sum(axis=1)
    window = ZOOM_FACTOR * scale
    for _ in range(ZOOM_STEPS):
        slack = b_all - A_all @ x
        # rows that no point of the window |x' - x|_inf <= window can reach stay satisfied
        near = slack <= 2.0 * l1 * window
        # the near rows' own rounding (as a distance): a ball must be far above it to be
        # believed, and a window near it would zoom into noise
        noise = 4.0 * 2.0 ** -53 * float(np.max(
            (np.abs(b_all[near]) + np.abs(A_all[near]) @ np.abs(x)) / np.maximum(l1[near], 1e-300),  # tol: no division by 0
            initial=0.0))
        if window < 1e4 * noise:
            break
        loc_A = np.vstack([A_all[near], np.eye(d), -np.eye(d)])
        loc_b = np.concatenate([slack[near] / window, np.ones(2 * d)])
        y, r = chebyshev_center(loc_A, loc_b)
        if y is None:
            return x, rad
        x = x + window * y
        if r > 1e-6 and window * r > 100.0 * noise:   # tol: clearly resolved, above rounding
            return x, window * r
        window *= ZOOM_FACTOR
    return x, rad


def no_interior(x: np.ndarray | None, rad: float) -> bool:
    """Whether a Chebyshev-centre LP's answer ``(x, rad)`` shows a region without interior
    (infeasible, or no ball of positive radius).

    Only such a set may be dropped as degenerate.  A positive radius, however small, is
    a set that may be real (a linear region of a spike 1e-9 wide, whose slope is 1e9): a
    caller must certify its centre or leave it undecided, never presume it away.

    Example:
        >>> no_interior(None, -np.inf), no_interior(np.zeros(1), 0.0), no_interior(np.zeros(1), 5e-10)
        (True, True, False)
    """
    return x is None or not rad > 0.0
