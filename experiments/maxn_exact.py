"""Exact decision (over Q, not HiGHS's float64 verdict) for the two-hidden-layer max_n system
of an item family: does the reduced system A c = b of ``search_max_pairs`` have a solution?

The unknowns (one output weight per orbit) are free, so this is linear algebra, not an LP:
b is in the column span of A or not.  A basis (columns Pc, rows R0) comes from a row
reduction modulo the prime 2^31 - 1; the unique basis solution x* is computed exactly
(python-flint, p-adic lifting) and the residual ``b - A[:, Pc] x*`` is evaluated exactly
on every row.  Zero residual: a rational solution (found).  A nonzero residual at row i
gives ``y = e_i - z`` (z^T A[R0, Pc] = A[i, Pc], exact); ``y^T A = 0`` on every column and
``y^T b != 0``, both checked in exact integers, prove that the family has **no** solution.

Claim checked: item_family(9, (2, 3)) (every orbit with <= 3 items a side) has no
two-hidden-layer max_9 solution, exactly; for n = 8 the same procedure finds a solution
(the control).

Needs python-flint (``pip install python-flint``; not a relulab dependency).  Building the
n = 9 system takes about 170 CPU-seconds (40 minutes on the loaded machine).

Writes ``experiments/results/maxn_exact.json``.

Run:  python experiments/maxn_exact.py [--n 9] [--quick (n = 6)]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

from relulab.construct import item_family
from relulab.construct.maxn import _column

ROOT = Path(__file__).resolve().parents[1]
PRIME = 2**31 - 1


def system(n: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The integer system of search_max_pairs over item_family(n, (2, 3)): hyperplane rows
    (= 0) and the n - 1 linear rows scaled by n (= n - m - 1); column t is orbit t's
    weight divided by its stabiliser size (an invertible rescaling of the unknowns)."""
    terms = item_family(n, (2, 3))
    rows: dict[tuple, int] = {}
    I, J, V, lins = [], [], [], []
    for c, t in enumerate(terms):
        K, coef, lin, _ = _column(t, n)
        for key, v in zip(map(tuple, K.tolist()), coef.tolist(), strict=True):
            if v:
                I.append(rows.setdefault(key, len(rows)))
                J.append(c)
                V.append(int(v))
        lins.append(lin)
    R = len(rows)
    A = np.zeros((R + n - 1, len(terms)), dtype=np.int64)
    np.add.at(A, (np.array(I), np.array(J)), np.array(V))
    A[R:] = n * np.array(lins).T
    b = np.zeros(R + n - 1, dtype=np.int64)
    b[R:] = [n - m - 1 for m in range(n - 1)]
    return A, b, len(terms)


def decide(A: np.ndarray, b: np.ndarray) -> dict:
    import flint

    R, m = A.shape
    E, r = flint.nmod_mat(A.tolist(), PRIME).rref()
    pc = []
    for i in range(r):
        pc.append(next(j for j in range(m) if int(E[i, j]) != 0))
    E2, r2 = flint.nmod_mat(A[:, pc].T.tolist(), PRIME).rref()
    r0 = [next(j for j in range(R) if int(E2[i, j]) != 0) for i in range(r2)]
    S = A[np.ix_(r0, pc)]
    x = flint.fmpz_mat(S.tolist()).solve(flint.fmpz_mat([[int(v)] for v in b[r0]]))
    xs = [Fraction(int(x[i, 0].p), int(x[i, 0].q)) for i in range(r)]
    D = math.lcm(*(v.denominator for v in xs))
    xi = np.array([int(v * D) for v in xs], dtype=object)
    res = b.astype(object) * D - A[:, pc].astype(object).dot(xi)
    bad = [k for k in range(R) if res[k] != 0]
    out: dict = {"rank_mod_p": r, "rows": R, "columns": m}
    if not bad:
        out.update(verdict="feasible (exact rational basis solution)", support=len(pc))
        return out
    i = bad[0]
    z = flint.fmpz_mat(S.T.tolist()).solve(flint.fmpz_mat([[int(v)] for v in A[i, pc]]))
    zs = [Fraction(int(z[k, 0].p), int(z[k, 0].q)) for k in range(r)]
    Dz = math.lcm(*(v.denominator for v in zs))
    rows = r0 + [i]
    y = np.array([-int(v * Dz) for v in zs] + [Dz], dtype=object)
    yA = y.dot(A[rows].astype(object))
    yb = int(y.dot(b[rows].astype(object)))
    ok = all(int(v) == 0 for v in yA) and yb != 0
    out.update(verdict="infeasible (exact certificate y: y^T A = 0, y^T b != 0)" if ok
               else "undecided (the mod-p basis missed a rational dependency)",
               certificate_rows=len(rows), certificate_digits=max(len(str(abs(int(v)))) for v in y),
               nonzero_residual_rows=len(bad))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="*", default=[8, 9])
    ap.add_argument("--quick", action="store_true", help="n = 6 only")
    args = ap.parse_args()
    try:
        import flint  # noqa: F401
    except ImportError:
        raise SystemExit("experiments/maxn_exact.py needs python-flint (pip install python-flint)") from None
    res_path = ROOT / "experiments" / "results" / "maxn_exact.json"
    old = json.loads(res_path.read_text()) if res_path.exists() else {}
    for n in [6] if args.quick else args.n:
        t = time.perf_counter()
        A, b, m = system(n)
        row = {"n": n, "family": "item_family(n, (2, 3))", "orbits": m,
               "build_seconds": round(time.perf_counter() - t, 1)}
        t = time.perf_counter()
        row.update(decide(A, b))
        row["decide_seconds"] = round(time.perf_counter() - t, 1)
        print(row, flush=True)
        old[str(n)] = row
    res_path.parent.mkdir(parents=True, exist_ok=True)
    res_path.write_text(json.dumps(old, indent=1) + "\n")


if __name__ == "__main__":
    main()
