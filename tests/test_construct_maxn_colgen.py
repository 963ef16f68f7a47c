"""Column generation for the two-hidden-layer max_n system (construct.maxn_colgen).

Independent checks: the chain-of-subsets column against the placement column of
construct.maxn (exact, on every term of a family), the subset-lattice DP
(chain_histogram) against the n! explicit chains, the graph-automorphism stabiliser
against the permutation count; every solution column generation
finds is re-checked by the exact equation check of construct.maxn and evaluated exactly
against max on random rationals (eval_max_pairs) and, for small n, certified on the cone
with the exact symmetry proof (certify_max_pairs); a family known to contain no solution
(s = 1 items for n = 5: the plain search calls it infeasible) must not give one.
"""

from __future__ import annotations

import math
import os
from fractions import Fraction

import numpy as np
import pytest

from relulab.construct import (
    ConstructionError,
    PairTerm,
    certify_max_pairs,
    check_certificate,
    decide_family,
    eval_max_pairs,
    family_system,
    item_family,
    search_max_pairs,
)
from relulab.construct.maxn import _automorphism_count, _check, _column
from relulab.construct.maxn_colgen import (
    _chain_matrix,
    _cut_table,
    _full_column,
    _stabilizer_size,
    chain_histogram,
    colgen_max_pairs,
    decode,
    encode,
    orbit_column,
    random_item_terms,
)


def _as_fractions(K, coef, lin, div, n: int, encoded: bool) -> tuple[dict, list]:
    rows = decode(K, n) if encoded else K
    hyp = {tuple(r): Fraction(int(c), div) for r, c in zip(rows.tolist(), coef.tolist(), strict=True) if c}
    return hyp, [Fraction(int(v), div) for v in lin]


@pytest.mark.parametrize("n", [4, 5, 6, 7])
def test_chain_column_equals_placement_column(n: int) -> None:
    terms = [t for t in item_family(n, (2, 3)) if t.k == n][:25]
    terms += list(random_item_terms(n, n, 4, 5, seed=n))
    assert terms
    for t in terms:
        got = _as_fractions(*_full_column(t, n), n, encoded=True)
        want = _as_fractions(*_column(t, n), n, encoded=False)
        assert got == want, str(t)


@pytest.mark.parametrize("n", [7, 8])
def test_chain_histogram_equals_the_explicit_chains(n: int) -> None:
    # the subset-lattice DP against all n! listed chains, on terms of every size k <= n
    # (embedded in n coordinates) and on a random set function
    terms = [t for t in item_family(n, (2, 3)) if t.k in (n - 2, n)][:6]
    terms += list(random_item_terms(n, n, 4, 3, seed=n))
    for t in terms:
        B, w = chain_histogram(_cut_table(t, n), n)
        assert int(w.sum()) == int(np.prod(np.arange(1, n + 1)))
        E, one = _chain_matrix(t, n)
        rows, cnt = np.unique(E, axis=0, return_counts=True)
        order = np.lexsort(B.T[::-1])
        assert np.array_equal(B[order], rows) and np.array_equal(w[order], cnt), str(t)
        got = _full_column(t, n)
        want = _full_column(t, n, explicit=True)
        assert all(np.array_equal(a, b) for a, b in zip(got[:3], want[:3], strict=True)) and got[3] == want[3]
    table = np.random.default_rng(n).integers(-3, 4, 2**n)
    B, w = chain_histogram(table, n)
    E = table[_chains_of(n)]
    rows, cnt = np.unique(E, axis=0, return_counts=True)
    order = np.lexsort(B.T[::-1])
    assert np.array_equal(B[order], rows) and np.array_equal(w[order], cnt)


def _chains_of(n: int) -> np.ndarray:
    from relulab.construct.maxn_colgen import _chains

    return _chains(n)


def test_placement_column_equals_dp_column_on_smaller_terms() -> None:
    # n >= 7 reads every term (k < n too) off the chains; the placement method is independent
    n = 7
    for t in [t for t in item_family(n, (1, 2)) if t.k < n][::7]:
        got = _as_fractions(*orbit_column(t, n), n, encoded=True)
        want = _as_fractions(*_column(t, n), n, encoded=False)
        assert got == want, str(t)


def test_graph_automorphisms_equal_the_permutation_count() -> None:
    # the VF2 count used for k > 8 against the k! permutation count, on terms with k <= 8
    terms = [t for t in item_family(8, (2, 3)) if t.k >= 6][::40]
    assert len(terms) > 10
    for t in terms:
        C, v = t.canonical()
        assert _automorphism_count(C, v) == _stabilizer_size(t), str(t)
    # a term embedded in more coordinates: the unused ones permute freely
    for t in terms[:8]:
        e = PairTerm(11, t.pos, t.neg)
        want = _stabilizer_size(t) * math.factorial(11 - t.k)
        assert e.stabilizer_size() == _stabilizer_size(e) == want, str(t)
    # a symmetric 12-coordinate term: six disjoint pairs on each side, cyclically shifted
    ring = PairTerm(12, tuple(("m", 2 * i, 2 * i + 1) for i in range(6)),
                    tuple(sorted(("m", min(2 * i + 1, (2 * i + 2) % 12), max(2 * i + 1, (2 * i + 2) % 12))
                                 for i in range(6))))
    # the rotations by an even step and the reflections keeping the colours: 12 of the
    # 24 symmetries of the 12-cycle
    assert ring.stabilizer_size() == 12


def test_key_encoding_round_trip_and_limits() -> None:
    rng = np.random.default_rng(3)
    for n in (3, 9, 12):
        half = 1 << (62 // (n - 1) - 1)
        K = rng.integers(-half + 1, half, (50, n - 1))
        assert np.array_equal(decode(encode(K, n), n), K)
        with pytest.raises(ConstructionError, match="too large"):
            encode(np.full((1, n - 1), half), n)


def test_orbit_column_of_a_small_term_by_hand() -> None:
    # relu(max(x0, x1) - x2) on 3 inputs: the column's value on the sorted cone must be
    # the sum of the orbit's three neurons, evaluated from their definition
    t = PairTerm(3, (("m", 0, 1),), (("x", 2),))
    keys, coef, lin, div = orbit_column(t, 3)
    s = np.array([[Fraction(7), Fraction(3), Fraction(2)], [Fraction(5), Fraction(4), Fraction(-1)]])
    for x in s:
        t1, t2 = x[0] - x[1], x[1] - x[2]
        members = [max(max(x[a], x[b]) - x[c], 0) for a, b, c in ((0, 1, 2), (0, 2, 1), (1, 2, 0))]
        K = decode(keys, 3)
        val = sum(int(c) * max(int(k[0]) * t1 + int(k[1]) * t2, 0) for k, c in zip(K, coef, strict=True))
        val = (val + int(lin[0]) * t1 + int(lin[1]) * t2) / div
        assert val == sum(members)


def test_orbit_column_bad_input() -> None:
    with pytest.raises(ConstructionError, match="more than n"):
        orbit_column(PairTerm(5, (("m", 0, 1), ("m", 2, 3)), (("x", 4), ("x", 0))), 4)
    big = PairTerm(13, tuple(("m", 2 * i, 2 * i + 1) for i in range(6)) + (("x", 12),),
                   tuple(("m", 2 * i + 1, 2 * i + 2) for i in range(6)) + (("x", 0),))
    with pytest.raises(ConstructionError, match="n = 13 inputs"):
        orbit_column(big, 13)
    with pytest.raises(ConstructionError, match="2\\*\\*3 entries"):
        chain_histogram(np.zeros(7), 3)
    with pytest.raises(ConstructionError, match="n must be"):
        chain_histogram(np.zeros(2), 1)
    with pytest.raises(ConstructionError, match="colgen_max_pairs: n"):
        colgen_max_pairs(2, [], [])
    with pytest.raises(ConstructionError, match="random_item_terms"):
        next(iter(random_item_terms(5, 9, 2, 1)))


@pytest.mark.parametrize("n", [5, 6])
def test_column_generation_finds_exact_certified_solutions(n: int) -> None:
    res = colgen_max_pairs(n, item_family(n, (1,)), item_family(n, (2,)), time_limit=120)
    assert res.status == "found"
    sol = res.solution
    ok, nh, ne = _check(list(sol.terms), n)  # the plain search's exact equation check
    assert ok and ne > 0
    rng = np.random.default_rng(n)
    X = [[Fraction(int(a), int(b)) for a, b in zip(rng.integers(-99, 99, n), rng.integers(1, 9, n),
                                                   strict=True)] for _ in range(300)]
    X += [[Fraction(3)] * 2 + [Fraction(-1)] * (n - 2)]
    assert eval_max_pairs(n, sol, X) == [max(x) for x in X]
    cert = certify_max_pairs(n, sol)
    assert cert.status == "certified"


def test_column_generation_does_not_invent_a_solution() -> None:
    # s = 1 items a side on <= 4 coordinates has no max_5 (the full LP says infeasible);
    # column generation over the same family must end without a solution
    fam = item_family(5, (1,))
    assert search_max_pairs(5, fam).status == "infeasible"
    res = colgen_max_pairs(5, fam[:2], fam[2:], time_limit=60)
    assert res.status == "stalled" and res.solution is None and res.residual > 0


def test_column_generation_honours_its_time_limit() -> None:
    res = colgen_max_pairs(7, item_family(7, (1,)), item_family(7, (2, 3)), time_limit=0.5)
    assert res.status in ("partial", "found")
    assert res.status != "found" or res.solution is not None


# ------------------------------------------------------------------ exact decision
def _weights(n: int, terms, sol: dict) -> list:
    """decide_family's basis solution as (term, output weight): weight = x_j * divisor."""
    return [(terms[j], x * orbit_column(terms[j], n)[3]) for j, x in sol.items() if x != 0]


@pytest.mark.parametrize(("n", "masses"), [(4, (1,)), (5, (1,)), (5, (1, 2)), (6, (2,)), (7, (2,))])
def test_decide_family_agrees_with_highs_and_checks_exactly(n: int, masses: tuple) -> None:
    fam = item_family(n, masses)
    d = decide_family(n, fam)
    lp = search_max_pairs(n, fam).status  # HiGHS's float verdict on the same family
    assert d.status == ("found" if lp == "found" else "infeasible")
    if d.status == "found":
        ok, _, _ = _check(_weights(n, fam, d.solution), n)  # the placement columns, exactly
        assert ok
    else:
        A, b, _ = family_system(n, fam)
        assert check_certificate(A, b, d.certificate)
        r, v = next(iter(d.certificate.items()))
        assert not check_certificate(A, b, {**d.certificate, r: v + 1})


def test_check_certificate_refuses_non_certificates() -> None:
    A = np.array([[1, 0], [0, 1], [1, 1]])
    b = np.array([1, 1, 3])
    assert check_certificate(A, b, {0: 1, 1: 1, 2: -1})
    assert not check_certificate(A, b, {0: 1, 1: 1})  # y^T A != 0
    assert not check_certificate(np.array([[1], [1]]), np.array([2, 2]), {0: 1, 1: -1})  # y^T b = 0
    with pytest.raises(ConstructionError, match="decide_family: n"):
        decide_family(2, [])


def _stored_certificate(key: str) -> dict:
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "experiments" / "results" / "maxn_decide.json"
    data = json.loads(path.read_text())
    if key not in data:
        pytest.skip(f"{key} not in {path.name}")
    return data[key]


def _recheck(entry: dict, n: int, masses: tuple) -> None:
    """Map the stored certificate (hyperplanes written as gap forms) onto the freshly built
    system of the family and check y^T A = 0, y^T b != 0 in exact integers."""
    A, b, keys = family_system(n, item_family(n, masses))
    K = decode(np.array(keys, dtype=np.int64), n)
    row = {"H " + " ".join(map(str, k)): i for i, k in enumerate(K.tolist())}
    row.update({f"lin {m}": len(keys) + m for m in range(n - 1)})
    y = {row[name]: int(v) for name, v in entry["certificate"].items()}
    assert entry["status"] == "infeasible" and entry["columns"] == A.shape[1]
    assert check_certificate(A, b, y)


def test_stored_certificate_seven_inputs_two_items() -> None:
    _recheck(_stored_certificate("7:2"), 7, (2,))


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("RELULAB_LONG_TESTS"),
                    reason="builds the 6,431-column n = 9 system (about 2 CPU-minutes); "
                           "set RELULAB_LONG_TESTS=1")
def test_stored_certificate_nine_inputs_three_items() -> None:
    """The n = 9 proof: no combination of the 6,431 orbits with <= 3 items a side is max_9."""
    _recheck(_stored_certificate("9:2,3"), 9, (2, 3))


def test_solve_exact_against_fraction_elimination() -> None:
    from relulab.construct.maxn_cert import solve_rational
    from relulab.construct.maxn_modular import solve_exact

    rng = np.random.default_rng(11)
    for trial in range(30):
        rows, cols = int(rng.integers(2, 9)), int(rng.integers(1, 6))
        A = rng.integers(-5, 6, (rows, cols))
        x = [Fraction(int(p), int(q)) for p, q in zip(rng.integers(-9, 9, cols), rng.integers(1, 7, cols),
                                                     strict=True)]
        den = 1
        for v in x:
            den = den * v.denominator // np.gcd(den, v.denominator)
        b = np.array([int(sum(int(a) * v for a, v in zip(r, x, strict=True)) * den) for r in A])
        A2 = A * den
        got = solve_exact(A2, b)
        assert got is not None
        assert all(sum(int(a) * v for a, v in zip(r, got, strict=True)) == int(bb)
                   for r, bb in zip(A2, b, strict=True))
        if trial % 3 == 0:  # make it inconsistent: a row repeated with another right-hand side
            A3 = np.vstack([A2, A2[:1]])
            b3 = np.concatenate([b, [b[0] + 1]])
            assert solve_exact(A3, b3) is None
            M = [[Fraction(int(v)) for v in r] + [Fraction(int(bb))] for r, bb in zip(A3, b3, strict=True)]
            assert solve_rational(M, A3.shape[1]) is None


def test_random_terms_structure() -> None:
    ts = list(random_item_terms(9, 9, 4, 20, seed=4, disjoint=True))
    assert len(ts) == 20
    for t in ts:
        assert len({c for it in t.pos + t.neg for c in it[1:]}) == 9 and not set(t.pos) & set(t.neg)
        for side in (t.pos, t.neg):
            cs = [c for it in side for c in it[1:]]
            assert len(cs) == len(set(cs)) and len(side) == 4
