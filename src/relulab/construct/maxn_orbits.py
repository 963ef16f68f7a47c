"""Two-hidden-layer max_n networks too large to write as weight matrices (n = 9, 10):
orbit-factorised networks, their exact certificate and their exact evaluation.

**The network.**  The same structured network as :func:`relulab.construct.max_pairs_network`:
first layer ``relu(x_i - x_j)`` for all ordered pairs and ``relu(+-sum x)``; second layer
every member of the S_n-orbit of each :class:`relulab.construct.PairTerm` ``t``
(``relu(g_t o sigma)``, ``g_t = sum_{i<j} C_ij |x_i - x_j| + v . x``); output
``sum_t c_t * (orbit sum of t) + (1/n) sum x``.  For n = 9 the stored solution has 430
orbits and 24,593,726 second-layer neurons: its weight matrices would need about 14 GB
(float64), so it is kept as (term, output weight) pairs, the orbit-factorised form.

**Certificate** (:func:`certify_max_orbits`).  Permuting the inputs permutes the members
of every orbit and each orbit has one output weight, so the network is symmetric *by
construction* and the cone ``x_1 >= ... >= x_n`` stands for all n! ordering cones, which
cover R^n.  On that cone every member is ``relu(K . t)`` with an integer form K in the gaps
``t_m = x_(m) - x_(m+1) >= 0``, read off the term's cut function along the n! chains of
subsets (:func:`relulab.construct.maxn_colgen.orbit_column`); the bends along every
hyperplane must cancel exactly (Fractions over a common denominator, Python integers)
and the linear part must be ``max - mean``.  A nonzero net bend or a wrong linear part is
a refutation (``failed``).  Every term must be translation-invariant (as many items on
each side), which is checked too.

**Evaluation** (:func:`eval_max_orbits`), exact on rational inputs and independent of the
certificate's code: every second-layer neuron is evaluated in x-space, ``g_t(x o sigma)``
for all n! permutations sigma, as one integer-valued float64 matrix product per input
(``[|x_si - x_sj|, x_s] @ coefficients``, all terms at once; bounds below 2**53 checked),
and the sum over sigma counts each neuron ``|Stab_n(t)|`` times.

Example:
    >>> from relulab.construct import stored_max_pairs
    >>> sol = stored_max_pairs(5)
    >>> certify_max_orbits(5, sol).status
    'certified'
    >>> eval_max_orbits(5, sol, [[Fraction(1, 3), 2, -5, 2, 0]])
    [Fraction(2, 1)]
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from .maxmin import ConstructionError
from .maxn import MaxNCertificate, MaxPairsSolution, PairTerm, _orbit_data, _perms
from .maxn_colgen import (
    _MAX_CHAIN_K,
    _MAX_EXPLICIT_CHAINS,
    _cut_table,
    _stabilizer_size,
    chain_histogram,
    decode,
    orbit_column,
)
from .maxn_deep import _terms_arg, certified_bases, eval_max_deep, max_deep, term_inputs
from .maxn_items import _as_integers

__all__ = ["MAXN_ORBIT_SIZES", "stored_max_orbits", "certify_max_orbits", "eval_max_orbits",
           "orbit_widths", "eval_sum_of_maxes_two_hidden"]

_FLOAT_EXACT = 2**53  # integers below this add and multiply exactly in float64
_ROW_CHUNK = 40_000  # permutations per block of the evaluation (memory: rows x terms floats)


def _terms_of(solution: MaxPairsSolution | Sequence[tuple[PairTerm, Fraction]]
              ) -> list[tuple[PairTerm, Fraction]]:
    terms = solution.terms if isinstance(solution, MaxPairsSolution) else solution
    return [(t, Fraction(c)) for t, c in terms]


def _check_terms(n: int, terms: Sequence[tuple[PairTerm, Fraction]], who: str) -> None:
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 3:
        raise ConstructionError(f"{who}: n must be an integer >= 3, got {n!r}")
    if n > _MAX_CHAIN_K:
        raise ConstructionError(f"{who}: n = {n} inputs; at most {_MAX_CHAIN_K} are supported (the "
                                f"hyperplane keys pack n - 1 gap entries into one int64)")
    for t, _ in terms:
        if not isinstance(t, PairTerm) or t.k > n:
            raise ConstructionError(f"{who}: {t!r} is not a PairTerm on at most n = {n} coordinates")


def orbit_widths(n: int, solution: MaxPairsSolution | Sequence[tuple[PairTerm, Fraction]]
                 ) -> tuple[int, int]:
    """Hidden widths of the orbit-factorised network: ``n (n - 1) + 2`` first-layer
    neurons, and every orbit member plus the two neurons carrying ``sum x``.

    Example:
        >>> from relulab.construct import stored_max_pairs
        >>> orbit_widths(5, stored_max_pairs(5))
        (22, 77)
    """
    terms = _terms_of(solution)
    return n * (n - 1) + 2, sum(t.orbit_size(n) for t, c in terms if c != 0) + 2


def certify_max_orbits(n: int, solution: MaxPairsSolution | Sequence[tuple[PairTerm, Fraction]]
                       ) -> MaxNCertificate:
    """Exact proof (``certified``) or refutation (``failed``) that the orbit-factorised
    network of ``solution`` computes max of n inputs on R^n (module docstring): one cone,
    symmetric by construction, every hyperplane's net bend checked in exact integers.

    Example:
        >>> from relulab.construct import stored_max_pairs
        >>> terms = list(stored_max_pairs(4).terms)
        >>> certify_max_orbits(4, terms).cones_covered
        24
        >>> bad = [(terms[0][0], terms[0][1] * 2)] + terms[1:]
        >>> certify_max_orbits(4, bad).status
        'failed'
    """
    terms = _terms_of(solution)
    _check_terms(n, terms, "certify_max_orbits")
    widths = orbit_widths(n, terms)
    base = dict(n=n, widths=widths, hidden_layers=2, cones_checked=1, by_symmetry=True)
    for t, _ in terms:
        if len(t.pos) != len(t.neg):
            return MaxNCertificate(**base, status="failed", cones_covered=0, hyperplanes_checked=0,
                                   reason=f"the term {t} is not translation-invariant")
    weights = []
    cols = []
    for t, c in terms:
        if c == 0:
            continue
        keys, coef, lin, div = orbit_column(t, n)
        weights.append(c / div)
        cols.append((keys, coef, lin))
    den = math.lcm(*(w.denominator for w in weights)) if weights else 1
    ints = [int(w * den) for w in weights]
    bends: dict[int, int] = {}
    linear = [0] * (n - 1)
    for a, (keys, coef, lin) in zip(ints, cols, strict=True):
        for k, v in zip(keys.tolist(), coef.tolist(), strict=True):
            bends[k] = bends.get(k, 0) + a * v
        for m in range(n - 1):
            linear[m] += a * int(lin[m])
    nh = len(bends)
    bad = [k for k, v in bends.items() if v != 0]
    if bad:
        K = decode(np.array(bad[:1], dtype=np.int64), n)[0].tolist()
        return MaxNCertificate(**base, status="failed", cones_covered=0, hyperplanes_checked=nh,
                               reason=f"{len(bad)} hyperplanes keep a net bend, e.g. {K} . t = 0 "
                                      f"(t the gaps of the sorted inputs)")
    want = [den * (n - m - 1) for m in range(n - 1)]  # (1 - (m+1)/n) * n, times den / n below
    if [v * n for v in linear] != want:
        got = [str(Fraction(v, den)) for v in linear]
        return MaxNCertificate(**base, status="failed", cones_covered=0, hyperplanes_checked=nh,
                               reason=f"the linear part in the gaps is {got}, not max - mean")
    return MaxNCertificate(**base, status="certified", cones_covered=math.factorial(n),
                           hyperplanes_checked=nh, reason=None)


def _coefficient_matrix(n: int, terms: Sequence[tuple[PairTerm, Fraction]]) -> np.ndarray:
    """Column t holds the doubled integer form of g_t on n coordinates,
    ``[2C_ij for i < j] + [2v_i]``."""
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    M = np.zeros((len(pairs) + n, len(terms)), dtype=np.int64)
    for c, (t, _) in enumerate(terms):
        C, v = t.canonical()
        for r, (i, j) in enumerate(pairs):
            if i < t.k and j < t.k:
                M[r, c] = C[i, j]
        M[len(pairs):len(pairs) + t.k, c] = v
    return M


def _outputs(n: int, terms: Sequence[tuple[PairTerm, Fraction]], sums: np.ndarray,
             rows: Sequence[tuple[np.ndarray, int]]) -> list[Fraction]:
    """Network outputs from ``sums[r, t]`` = the sum over all n! permutations sigma of the
    doubled ``relu(g_t(x_r o sigma))``: each neuron counted |Stab_n(g_t)| =
    |Stab_k(g_t)| (n - k)! times, then the carried ``(1/n) sum x``, over each row's
    denominator."""
    weights = [c / (2 * _stabilizer_size(t) * math.factorial(n - t.k)) for t, c in terms]
    out = []
    for r, (xi, den) in enumerate(rows):
        val = sum((w * int(v) for w, v in zip(weights, sums[r].tolist(), strict=True)), Fraction(0))
        out.append((val + Fraction(int(xi[0].sum()), n)) / den)
    return out


def _chain_rows(t: PairTerm, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct gap forms ``K = (f(S_1), ..., f(S_(n-1)))`` of the doubled cut function
    f of t along all n! chains of subsets, with their multiplicities (no normalisation)."""
    return chain_histogram(_cut_table(t, n), n)


def _eval_chains(n: int, terms: Sequence[tuple[PairTerm, Fraction]], rows: Sequence[tuple[np.ndarray, int]]
                 ) -> list[Fraction]:
    """Exact outputs on the sorted inputs' gaps: sum over all n! permutations sigma of
    ``relu(g_t(x o sigma)) = relu(K_sigma . t) / 2`` (doubled form), each distinct K once
    with its count; integer-valued float64 under a checked 2**53 bound."""
    T = np.array([-np.diff(np.sort(xi[0])[::-1]) for xi, _ in rows], dtype=np.int64)  # gaps >= 0
    tsum = int(T.sum(axis=1).max(initial=0))
    Tf = T.T.astype(np.float64)
    S = np.zeros((len(rows), len(terms)), dtype=np.float64)
    for c, (t, _) in enumerate(terms):
        K, cnt = _chain_rows(t, n)
        if int(np.abs(K).max(initial=0)) * tsum * math.factorial(n) >= _FLOAT_EXACT:
            raise ConstructionError("eval_max_orbits: sums of second-layer values could exceed 2**53; "
                                    "scale the inputs down")
        Kf, cf = K.astype(np.float64), cnt.astype(np.float64)
        for a in range(0, len(K), _ROW_CHUNK):
            S[:, c] += np.maximum(Kf[a:a + _ROW_CHUNK] @ Tf, 0.0).T @ cf[a:a + _ROW_CHUNK]
    return _outputs(n, terms, S, rows)


def eval_max_orbits(n: int, solution: MaxPairsSolution | Sequence[tuple[PairTerm, Fraction]],
                    X: Sequence[Sequence[object]], method: str = "neurons") -> list[Fraction]:
    """Exact outputs of the orbit-factorised network on the rows of X (rationals), every
    second-layer neuron evaluated in x-space (module docstring); about one CPU-second per
    input for the stored n = 9 network.  ``method="chains"`` evaluates the same sum on the
    sorted input's gaps instead, ``relu(g_t(x o sigma)) = relu(K_sigma . t) / 2`` with
    ``K_sigma`` read off the term's cut function along the chain of sigma, each distinct
    ``K_sigma`` once with its count: a fixed cost per term (about 20 s for n = 9), then
    thousands of inputs per second (it shares the cut-function code with the certificate;
    the default does not).

    Example:
        >>> from relulab.construct import stored_max_pairs
        >>> eval_max_orbits(4, stored_max_pairs(4), [[1, 9, Fraction(-1, 2), 9]])
        [Fraction(9, 1)]
        >>> eval_max_orbits(4, stored_max_pairs(4), [[1, 9, Fraction(-1, 2), 9]], method="chains")
        [Fraction(9, 1)]
    """
    terms = [(t, c) for t, c in _terms_of(solution) if c != 0]
    _check_terms(n, terms, "eval_max_orbits")
    if method not in ("neurons", "chains"):
        raise ConstructionError(f"eval_max_orbits: method must be 'neurons' or 'chains', got {method!r}")
    # one common denominator per row keeps the integers small (an empty X raises here)
    rows = [_as_integers([r], n, "eval_max_orbits") for r in X] if len(X) else _as_integers(X, n, "eval_max_orbits")
    if method == "chains":
        return _eval_chains(n, terms, rows)
    if n > _MAX_EXPLICIT_CHAINS:
        raise ConstructionError(f"eval_max_orbits: method 'neurons' permutes the inputs n! times; "
                                f"n = {n} > {_MAX_EXPLICIT_CHAINS}: use method='chains'")
    M = _coefficient_matrix(n, terms)
    Mf = M.astype(np.float64)
    colsum = int(np.abs(M).sum(axis=0).max(initial=0))
    perms = _perms(n)
    pi, pj = np.triu_indices(n, 1)  # the pairs i < j, in the order of M's rows
    S = np.zeros((len(rows), len(terms)), dtype=np.float64)
    for r, (xi, _) in enumerate(rows):
        x = xi[0]
        if 2 * int(np.abs(x).max(initial=0)) * colsum * len(perms) >= _FLOAT_EXACT:
            raise ConstructionError("eval_max_orbits: sums of second-layer values could exceed "
                                    "2**53; scale the inputs down")
        xf = x.astype(np.float64)
        for a in range(0, len(perms), _ROW_CHUNK):
            XP = xf[perms[a:a + _ROW_CHUNK]]
            F = np.concatenate([np.abs(XP[:, pi] - XP[:, pj]), XP], axis=1)
            S[r] += np.maximum(F @ Mf, 0.0).sum(axis=0)
    return _outputs(n, terms, S, rows)


# n -> number of stored orbits (the solutions themselves are read on demand)
MAXN_ORBIT_SIZES: dict[int, int] = {n: len(v["terms"]) for n, v in _orbit_data().items()}


@functools.lru_cache(maxsize=4)
def stored_max_orbits(n: int) -> MaxPairsSolution:
    """The stored orbit-factorised solution for n (n = 9: 430 orbits), exactly as found
    by ``experiments/maxn_orbits.py`` (the status is ``found``: the search checked every
    equation of its system exactly; :func:`certify_max_orbits` re-proves it from the terms).

    Example:
        >>> sol = stored_max_orbits(9)
        >>> len(sol.terms), sol.widths[0]
        (430, 74)
    """
    data = _orbit_data()
    if n not in data:
        raise ConstructionError(f"stored_max_orbits: no stored orbit-factorised solution for n = {n} "
                                f"(stored: {sorted(data)})")
    d = data[n]
    terms = tuple((PairTerm.from_dict(t), Fraction(t["coef"])) for t in d["terms"])
    return MaxPairsSolution(n, "found", terms, int(d["n_candidates"]), int(d["n_hyperplanes"]),
                            int(d["n_hyperplanes"]) + n - 1)


def eval_sum_of_maxes_two_hidden(terms: Sequence[tuple[int, Sequence[Sequence[object]], Sequence[object]]],
                                 X: Sequence[Sequence[object]], method: str = "neurons") -> list[Fraction]:
    """Exact values at the rows of X of the **two-hidden-layer** network of a CPWL function
    ``f(x) = sum_t sign_t max_k (A_t[k] . x + c_t[k])`` (every CPWL function on R^d is such
    a sum with at most d + 1 maps per term): each term's max of k <= 10 affine maps through a
    certified two-hidden-layer max_k, after its affine maps (which fold into the first
    layer): k <= 8 through ``max_deep(k, hidden_layers=2)``, k = 9, 10 through the
    orbit-factorised :func:`stored_max_orbits` (``method`` as in :func:`eval_max_orbits`).
    So two hidden layers hold for d + 1 <= 10; more maps per term raise an error.

    Example:
        >>> eval_sum_of_maxes_two_hidden([(1, [[1], [-1], [0]], [0, 0, 1])], [[-3], [0]])
        [Fraction(3, 1), Fraction(1, 1)]
    """
    d, ts = _terms_arg(terms, "eval_sum_of_maxes_two_hidden")
    rows = [[Fraction(v) for v in r] for r in X]
    if not rows or any(len(r) != d for r in rows):
        raise ConstructionError(f"eval_sum_of_maxes_two_hidden: X must be a non-empty list of rows "
                                f"of {d} numbers")
    dense = max(certified_bases())  # the largest base max_deep substitutes (8)
    tot = [Fraction(0)] * len(rows)
    for t, (sign, A, c) in enumerate(ts):
        k = len(A)
        if k > dense and k not in MAXN_ORBIT_SIZES:
            raise ConstructionError(f"eval_sum_of_maxes_two_hidden: term {t} has {k} affine maps; "
                                    f"two-hidden-layer max_k is certified here for k <= "
                                    f"{max(dense, *MAXN_ORBIT_SIZES)}")
        Z = term_inputs(A, c, rows)
        if k <= dense:
            vals = eval_max_deep(max_deep(max(k, 2), hidden_layers=2), Z)
        else:
            vals = eval_max_orbits(k, stored_max_orbits(k), Z, method)
        tot = [a + sign * v for a, v in zip(tot, vals, strict=True)]
    return tot
