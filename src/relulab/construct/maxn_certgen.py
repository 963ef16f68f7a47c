"""Exact column generation by infeasibility certificates (``certgen_max``): grow a
family of second-layer orbits for a two-hidden-layer max_n until it contains a solution,
or prove that no combination of *all* the candidates does.

Each round decides the working family exactly (:func:`relulab.construct.decide_system`):
either it is ``found`` (an exact rational solution, every equation checked), or it returns
an integer certificate y (``y^T A = 0`` on every working column, ``y^T b != 0``).  A
candidate column a can only help if ``y . a != 0`` (:func:`price_columns`; its new
hyperplanes have ``y = 0``), so those join the working family; if no candidate prices
non-zero, y proves the whole candidate pool (working family included) infeasible, checked
in exact integers over every column.  The fixed part (e.g. the item orbits) enters through
a column basis modulo a prime: it spans the same space over Q when the modular rank is
the rational rank, and every verdict is re-checked against the full fixed part exactly,
so a wrong basis can only give ``unknown``.

Example:
    >>> from relulab.construct import item_family, block_candidates
    >>> from relulab.construct.maxn_mixed import block_column, pair_column
    >>> fixed = [pair_column(t, 5) for t in item_family(5, (1,))]
    >>> pool = [block_column(t, 5) for t in block_candidates(5, kappa_max=1, v_max=1)]
    >>> r = certgen_max(5, fixed, pool)
    >>> r.status, r.rounds >= 1
    ('found', True)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..results import Result
from .maxmin import ConstructionError
from .maxn_decide import decide_system
from .maxn_mixed import (
    Column,
    certificate_rows,
    columns_system,
    extend_certificate,
    price_columns,
    pruning,
)
from .maxn_modular import basis_mod

__all__ = ["CertGenResult", "certgen_max"]

_PRIME = 2_147_483_629  # a prime below 2^31 for the fixed part's column basis


@dataclass(frozen=True)
class CertGenResult(Result):
    """Outcome of :func:`certgen_max`: ``status`` is ``found`` (``solution`` maps
    ("fixed", j) / ("pool", j) to an exact rational weight, every equation checked),
    ``infeasible`` (``certificate``, by row name, proves that no combination of the fixed
    columns and the whole pool is max_n; checked exactly on every column), ``partial`` (time or round
    budget hit: no verdict about the pool) or ``unknown`` (a modular step failed).
    ``pool_alive``: pool columns left by :func:`prune_columns` (the others are 0 in every
    solution, so the certificate need not price them: it is still checked on them).

    Example:
        >>> from relulab.construct.maxn_mixed import pair_column
        >>> from relulab.construct import item_family
        >>> r = certgen_max(5, [pair_column(t, 5) for t in item_family(5, (1,))], [])
        >>> r.status, r.pool_used
        ('infeasible', 0)
    """

    n: int
    status: str
    rounds: int
    pool_size: int
    pool_alive: int
    pool_used: int
    fixed_rank: int
    n_rows: int
    seconds: float
    history: list
    solution: dict | None
    certificate: dict[str, int] | None


def _rhs(n: int, named: dict[str, int]) -> int:
    """y . b for a named certificate: b is n - m - 1 on linear row m, 0 on hyperplanes."""
    return sum(int(v) * (n - int(k.split()[1]) - 1) for k, v in named.items() if k.startswith("lin"))


def certgen_max(n: int, fixed: Sequence[Column], pool: Sequence[Column], per_round: int = 200,
                max_rounds: int = 50, time_limit: float | None = None) -> CertGenResult:
    """Column generation by exact certificates (module docstring) over keyed columns
    (``block_column`` / ``orbit_column`` convention): ``fixed`` columns always take part,
    ``pool`` columns join ``per_round`` at a time (largest ``|y . a|`` first) while they
    price non-zero.  ``time_limit`` (seconds) is checked between rounds.

    Example:
        >>> from relulab.construct.maxn_mixed import pair_column
        >>> from relulab.construct import item_family
        >>> fixed = [pair_column(t, 5) for t in item_family(5, (1,))]
        >>> pool = [pair_column(t, 5) for t in item_family(5, (2,))]
        >>> r = certgen_max(5, fixed, pool, per_round=3)
        >>> r.status, r.pool_used <= len(pool)
        ('found', True)
    """
    if not isinstance(n, (int, np.integer)) or n < 3:
        raise ConstructionError(f"certgen_max: n must be an integer >= 3, got {n!r}")
    if per_round < 1 or max_rounds < 1:
        raise ConstructionError("certgen_max: per_round and max_rounds must be >= 1")
    t0 = time.monotonic()
    history: list = []
    basis: list[int] = []
    if fixed:
        A0, _, _ = columns_system(n, fixed)
        basis = basis_mod(A0, _PRIME)
        del A0
    work: list[int] = []
    in_work = np.ones(len(pool), dtype=bool)
    alive, dropped = pruning(pool, fixed)
    in_work[alive] = False  # pruned columns never join: their weight is 0 in any solution
    rounds = 0

    def result(status: str, rows: int, sol=None, cert=None) -> CertGenResult:
        return CertGenResult(n, status, rounds, len(pool), len(alive), len(work), len(basis), rows,
                             round(time.monotonic() - t0, 2), history, sol, cert)

    while True:
        cols = [fixed[j] for j in basis] + [pool[j] for j in work]
        if not cols:
            A, b, keys = columns_system(n, [(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                                             np.zeros(n - 1, dtype=np.int64))])
        else:
            A, b, keys = columns_system(n, cols)
        d = decide_system(n, A, b)
        rounds += 1
        history.append({"round": rounds, "columns": len(cols), "rows": int(A.shape[0]),
                        "rank": d.rank, "status": d.status,
                        "seconds": round(time.monotonic() - t0, 2)})
        if d.status == "unknown":
            return result("unknown", int(A.shape[0]))
        if d.status == "found":
            nb = len(basis)
            sol = {(("fixed", basis[j]) if j < nb else ("pool", work[j - nb])): v
                   for j, v in d.solution.items()}
            return result("found", int(A.shape[0]), sol=sol)
        named = certificate_rows(n, keys, d.certificate)
        rest = [j for j in range(len(pool)) if not in_work[j]]
        prices = price_columns(n, named, [pool[j] for j in rest]) if rest else []
        live = [(abs(p), j) for p, j in zip(prices, rest, strict=True) if p != 0]
        history[-1]["pricing_nonzero"] = len(live)
        if not live:
            # y proves the whole pool infeasible (extended to the pruned columns):
            # check it on every column exactly
            # (sparse: y . a for each column, and y . b on the linear rows)
            named = extend_certificate(n, named, pool, dropped)
            if any(price_columns(n, named, list(fixed) + list(pool))) or _rhs(n, named) == 0:
                return result("unknown", int(A.shape[0]))
            return result("infeasible", int(A.shape[0]), cert=named)
        if rounds >= max_rounds or (time_limit is not None and time.monotonic() - t0 > time_limit):
            return result("partial", int(A.shape[0]), cert=named)
        live.sort(reverse=True)
        for _, j in live[:per_round]:
            work.append(j)
            in_work[j] = True
