"""The explanation MILPs: relulab.verify's big-M encoding of the network over a domain,
plus rows on the outputs (a decision, or its violation as a disjunction), distance
variables (l1, linf) and an objective, solved on HiGHS through relulab.lp."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from ..bounds import linear_bounds, term_sizes_start, term_sizes_step
from ..domain import Box, Polytope
from ..lp import INF, LPModel, LPResult
from ..network import Network
from ..tolerance import MIP_GAP
from ..verify import encode
from ..verify.milp import drop_small, float_layers, symbolic_pre, tolerance_error

# HiGHS's feasibility tolerances for the explanation MILPs (defaults 1e-7 / 1e-6 would
# swallow the 1e-8 margins that tell a violation from a tie on a rule's boundary; at 1e-10
# HiGHS was seen to return a wrong "optimal" on a 4-32-32-2 policy).
FEAS_TOL_SOLVER = 1e-9  # tol: HiGHS feasibility, below the 1e-8 break margin
# Absolute MIP gap of the explanation MILPs: near zero, so that the relative gap decides
# also for objectives at or near 0 (a distance or a margin of a tie).
MIP_ABS_GAP = 1e-10  # tol: absolute MIP gap, below every margin that is compared
# After a HiGHS "solve error" (seen on ball MILPs whose binaries are all fixed, when the
# 1e-9 tolerances meet a set that is empty by about that much), the model is solved
# again with tolerances this much looser.  Looser feasibility only enlarges the set the
# solver accepts, so the retry stays conservative: "infeasible" is still proven, a
# minimum's bound is still a lower bound and a maximum's an upper bound; its points are
# re-checked by forward passes as every other solution is.
FEAS_TOL_RETRY = 1e-8  # tol: HiGHS feasibility of the retry after a solve error
# the relative rounding of the solver's double arithmetic, per layer, on the terms' sizes
SOLVER_ARITHMETIC = 64 * float(np.finfo(np.float64).eps)


class ExplainMILP:
    """Columns: the encoding's (the input ``x`` first), then the ones added here."""

    def __init__(self, net: Network, domain: Box | Polytope, pre: list | None = None) -> None:
        self.net = net.float() if net.is_exact else net
        self.domain = domain
        if self.net.n_hidden_layers == 0:
            self._affine_only()
            return
        self._layers = float_layers(self.net)
        self._box = domain if isinstance(domain, Box) else domain.bounding_box()
        self.pre = pre if pre is not None else symbolic_pre(*self._layers[:2], self._box)
        enc = encode(self.net, domain, self.pre)
        self.a_cols = enc.a_cols
        self.d = enc.d
        self.n = enc.n_vars
        self.rows: list[sp.csr_matrix] = [enc.A_ub]
        self.rhs: list[np.ndarray] = [enc.b_ub]
        self.lb = list(enc.lb)
        self.ub = list(enc.ub)
        self.integer = list(enc.integer)
        self.out_A = enc.out_A.toarray()
        self.out_c = enc.out_c
        self.n_binaries = enc.n_binaries

    def _affine_only(self) -> None:
        # no hidden layer (the encoding has nothing to encode): f(x) = W x + b (+ skip)
        W, b = self.net.weights[0], self.net.biases[0]
        if self.net.skip is not None:
            W, b = W + self.net.skip[0], b + self.net.skip[1]
        box = self.domain.bounding_box() if isinstance(self.domain, Polytope) else self.domain
        self.a_cols = []
        self.d = self.n = W.shape[1]
        P = self.domain.to_polytope() if isinstance(self.domain, Polytope) else None
        self.rows = [sp.csr_matrix(P.A if P is not None else np.zeros((0, self.d)))]
        self.rhs = [P.b if P is not None else np.zeros(0)]
        self.lb, self.ub = list(box.lo), list(box.hi)
        self.integer = [False] * self.d
        self.out_A, self.out_c = np.asarray(W, float), np.asarray(b, float)
        self.n_binaries = 0

    def _new_cols(self, k: int, lb: float, ub: float, integer: bool = False) -> np.ndarray:
        idx = np.arange(self.n, self.n + k)
        self.n += k
        self.lb += [lb] * k
        self.ub += [ub] * k
        self.integer += [integer] * k
        return idx

    def _add(self, A: np.ndarray, b: np.ndarray) -> None:
        A = np.atleast_2d(np.asarray(A, dtype=np.float64))
        if A.shape[1] < self.n:
            A = np.hstack([A, np.zeros((A.shape[0], self.n - A.shape[1]))])
        # entries HiGHS would drop are dropped here, the row moved outward by what they can
        # add over their columns' bounds: a relaxation (5e-10 relu(x) on x <= 1e9 in an
        # output row lost 0.5, and why_not proved "no counterfactual" where one exists)
        A, slack = drop_small(A, np.maximum(np.abs(np.asarray(self.lb, float)), np.abs(np.asarray(self.ub, float))))
        self.rows.append(sp.csr_matrix(A))
        self.rhs.append(np.asarray(b, float).reshape(-1) + slack)

    def output_rows(self, C: np.ndarray, d: np.ndarray, margin: float | np.ndarray = 0.0) -> None:
        """``C f(x) <= d - margin``."""
        C = np.atleast_2d(C)
        self._add(C @ self.out_A, d - margin - C @ self.out_c)

    def input_rows(self, A: np.ndarray, b: np.ndarray) -> None:
        """``A x <= b`` on the input columns."""
        A = np.atleast_2d(A)
        full = np.zeros((A.shape[0], self.n))
        full[:, : self.d] = A
        self._add(full, b)

    def violation(self, C: np.ndarray, d: np.ndarray, margin: float = 0.0) -> None:
        """At least one row with ``C_j f(x) >= d_j + margin`` (one binary per row; big-M
        from the symbolic lower bounds of ``C f - d`` over the domain)."""
        C = np.atleast_2d(C)
        d = np.asarray(d, float) + margin
        if C.shape[0] == 1:
            self._add(-C @ self.out_A, C @ self.out_c - d)
            return
        L = np.minimum(linear_bounds(self.net, self.domain, C, -d), 0.0) - 1.0
        s = self._new_cols(C.shape[0], 0.0, 1.0, integer=True)
        self.n_binaries += C.shape[0]
        A = np.zeros((C.shape[0], self.n))
        A[:, : self.out_A.shape[1]] = -C @ self.out_A
        A[np.arange(C.shape[0]), s] = -L
        self._add(A, C @ self.out_c - d - L)
        pick = np.zeros((1, self.n))
        pick[0, s] = -1.0
        self._add(pick, [-1.0])

    def distance(self, x0: np.ndarray, norm: str, weights: np.ndarray | None = None) -> np.ndarray:
        """Objective vector of ``||x - x0||`` (l1 or linf) with its helper columns."""
        d = self.d
        w = np.ones(d) if weights is None else weights
        if norm == "l1":
            t = self._new_cols(d, 0.0, INF)
            A = np.zeros((2 * d, self.n))
            A[np.arange(d), np.arange(d)] = 1.0
            A[np.arange(d), t] = -1.0
            A[d + np.arange(d), np.arange(d)] = -1.0
            A[d + np.arange(d), t] = -1.0
            self._add(A, np.concatenate([x0, -x0]))
            c = np.zeros(self.n)
            c[t] = w
            return c
        if norm == "linf":
            t = self._new_cols(1, 0.0, INF)
            A = np.zeros((2 * d, self.n))
            A[np.arange(d), np.arange(d)] = w
            A[d + np.arange(d), np.arange(d)] = -w
            A[:, t[0]] = -1.0
            self._add(A, np.concatenate([w * x0, -w * x0]))
            c = np.zeros(self.n)
            c[t[0]] = 1.0
            return c
        raise ValueError(norm)

    def margin_column(self, C: np.ndarray, d: np.ndarray, cap: float = 1e9) -> int:
        """A column ``s`` with ``C f(x) + s <= d`` (maximise it: the best margin)."""
        C = np.atleast_2d(C)
        s = self._new_cols(1, -cap, cap)
        A = np.zeros((C.shape[0], self.n))
        A[:, : self.out_A.shape[1]] = C @ self.out_A
        A[:, s[0]] = 1.0
        self._add(A, d - C @ self.out_c)
        return int(s[0])

    def solve(self, c: np.ndarray, *, maximize: bool = False, time_limit: float | None = None,
              gap: float = MIP_GAP) -> LPResult:
        """Solve with HiGHS.  A "solve error" is retried (see :data:`FEAS_TOL_RETRY`):
        first as an LP when every binary is fixed by its bounds (the same set without
        branch and bound), then with looser tolerances; ``info["solver_retry"]`` says
        how the returned answer was obtained.  ``"error"`` is returned only when every
        retry failed too (callers must not read it as a time limit)."""
        t0 = time.perf_counter()
        c = np.concatenate([c, np.zeros(self.n - len(c))])
        cols = [r if r.shape[1] == self.n else sp.hstack([r, sp.csr_matrix((r.shape[0], self.n - r.shape[1]))])
                for r in self.rows]
        A = sp.vstack(cols).tocsr()
        integer = np.array(self.integer, dtype=bool)
        lb, ub = np.array(self.lb, float), np.array(self.ub, float)
        # explanations separate "holds" from "breaks by a hair" (see BREAK_MARGIN in
        # why.py): the solver must not round a 1e-8 violation away
        attempts = [("", integer, FEAS_TOL_SOLVER)]
        fixed = integer & (lb == ub)
        if integer.any() and np.all(fixed[integer]):
            attempts.append(("as an LP (every binary fixed)", np.zeros_like(integer), FEAS_TOL_SOLVER))
        attempts.append((f"with feasibility tolerance {FEAS_TOL_RETRY:g}", integer, FEAS_TOL_RETRY))
        res = None
        for how, integ, tol in attempts:
            left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
            if left is not None and left <= 0 and res is not None:
                break
            model = LPModel(c, A_ub=A, b_ub=np.concatenate(self.rhs), lb=lb, ub=ub, integer=integ,
                            maximize=maximize, time_limit=left)
            model.set_feasibility_tol(primal=tol)
            if model.is_mip:
                model.set_feasibility_tol(mip=tol)
                model.set_mip_gap(rel=float(gap), abs=MIP_ABS_GAP)
            res = model.solve()
            res.info["feasibility_tol"] = tol
            if res.status != "error":
                if how:
                    res.info["solver_retry"] = f"HiGHS ended with a solve error; solved again {how}"
                return res
        # every attempt failed: no bound from it is trustworthy
        res = replace(res, bound=None)
        res.info["solver_retry"] = "HiGHS ended with a solve error; the retries failed or ran out of time"
        return res

    def tolerance_error(self, c: np.ndarray, tol: float) -> float:
        """What HiGHS's feasibility tolerance ``tol`` can hide in ``c . f`` (see
        :func:`relulab.verify.milp.tolerance_error`): a solver bound of ``c . f`` over the
        domain is proven once widened by it.  0 for a network without hidden layers
        (its one LP has no big-M rows to relax)."""
        if self.net.n_hidden_layers == 0:
            return 0.0
        C = np.atleast_2d(np.asarray(c, float))
        return float(np.max(tolerance_error(*self._layers, self.pre, self._box, C, tol=tol))) + \
            self.arithmetic_error(C)

    def arithmetic_error(self, c: np.ndarray) -> float:
        """What the solver's own double arithmetic can move ``c . f`` by: its rows' terms
        are as large as the layers' term sizes (with 2^40 pre-activations an optimum moved
        by 5e-5, far past what the feasibility tolerance's model gives).  0 for a network
        without hidden layers."""
        if self.net.n_hidden_layers == 0:
            return 0.0
        C = np.atleast_2d(np.asarray(c, float))
        Ws, bs, _ = self._layers
        T = term_sizes_start(self._box.lo, self._box.hi)
        for W, b in zip(Ws, bs, strict=True):
            T = term_sizes_step(T, W, b)
        return SOLVER_ARITHMETIC * len(Ws) * float(np.max(np.abs(C) @ T))

    def pattern_of(self, v: np.ndarray) -> list[np.ndarray]:
        """The activation pattern the solution ``v`` chose (its binaries, rounded)."""
        return [np.asarray(v[a] > 0.5) for a in self.a_cols]
