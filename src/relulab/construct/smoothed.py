"""Smoothed-verification diagnostics for the 3-CNF hardness gadget.

The smoothed model of exact verification: every weight and bias of a network is
perturbed independently by Gaussian noise ``N(0, sigma^2)``, clipped to [-2, 2] and
rounded to the dyadic grid ``2^-bits`` (:func:`perturb`).  The base networks are the
clause gadgets of :mod:`relulab.construct.hardness`, written with every coefficient
in [-1, 1] (:func:`normalized_gadget`: the same function as
:func:`~relulab.construct.hardness.sat_gadget`), whose maximum over [0, 1]^n is
``(m - unsat) / 3``.  The *verification gap* of a formula is its distance to the
satisfiable value, ``m/3 - max = unsat/3``: *extensive* when unsat grows with m
(:func:`block_formula` with every block unsatisfiable), *constant* when unsat = 1.

:func:`smoothed_gap` measures, with :func:`relulab.verify.maximize` (MILP) and an
exact rational re-evaluation, how far the maximum of the perturbed network moves, and
whether the gap survives (the shift is less than half the gap, so the threshold test
``max >= m/3 - gap/2`` still gives the base formula's answer).
:func:`exact_max_bruteforce` is the independent check on tiny instances: every vertex
of the arrangement of the neurons' hyperplanes and the box, in exact arithmetic.

Example:
    >>> clauses = block_formula(2, unsat_blocks=1)
    >>> r = smoothed_gap(clauses, 6, sigma=2**-11, bits=16, seed=0)
    >>> r.m, r.unsat, str(r.base_max), r.status, r.survives
    (16, 1, '5', 'optimal', True)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..network import Network
from ..results import Result
from ._builder import Builder, Expr
from ._exact import ExactEvaluator
from .hardness import min_unsat
from .maxmin import ConstructionError

__all__ = [
    "normalized_gadget",
    "perturb",
    "block_formula",
    "exact_max_bruteforce",
    "SmoothedGap",
    "smoothed_gap",
    "SIGMA_STAR",
]

SIGMA_STAR = 2.0**-11  # the fixed noise level of the smoothed-hardness theorem
CLIP = 2  # perturbed coefficients are clipped to [-CLIP, CLIP]
BRUTE_FORCE_MAX_SYSTEMS = 200_000  # vertex systems the brute force is willing to solve


def normalized_gadget(clauses: Sequence[Sequence[int]], n: int) -> Network:
    """The clause gadget with every weight and bias in [-1, 1]:
    ``h = 2/3 sum_i relu(y_i - 1/2) - 2/3 relu((y1 + y2 + y3 - 1) / 2)``, the same
    function as :func:`~relulab.construct.hardness.sat_gadget` (each term halved inside
    the ReLU and doubled outside).  Literals ``y = x_i`` or ``1 - x_i``.

    Example:
        >>> from relulab.construct import sat_gadget
        >>> cl = [(1, -2, 3), (-1, 2, -3)]
        >>> g, h = normalized_gadget(cl, 3), sat_gadget(cl, 3)
        >>> x = [[0, 1, 0], [Fraction(1, 3), Fraction(3, 4), Fraction(1, 5)]]
        >>> bool((g(x) == h(x)).all()), max(abs(v) for W, b in g.layers for v in [*W.ravel(), *b]) <= 1
        (True, True)
    """
    from .hardness import sat_gadget

    sat_gadget(clauses, n)  # the same validation of the clauses
    b = Builder(n)
    x = b.inputs()
    out = Expr(1)
    half, two_thirds = Fraction(1, 2), Fraction(2, 3)
    for cl in clauses:
        ys = [x[lit - 1] if lit > 0 else 1 - x[-lit - 1] for lit in cl]
        total = ys[0]
        for y in ys[1:]:
            total = total + y
        for y in ys:
            out = out + b.relu(y - half) * two_thirds
        out = out - b.relu((total - 1) * half) * two_thirds
    return b.build([out])


def perturb(net: Network, sigma: float, bits: int, seed: int | np.random.Generator | None = 0,
            support: str = "nonzero") -> Network:
    """The smoothed instance: every weight and bias ``v`` becomes
    ``round(clip(v + sigma z, -2, 2) * 2^bits) / 2^bits`` with ``z ~ N(0, 1)``
    independent (exact Fractions on the dyadic grid).  ``support="nonzero"`` (default)
    perturbs every weight of the base network's connections and every bias, so the
    perturbed gadget keeps hidden fan-in three, as in the theorem's class of networks;
    ``"all"`` perturbs every entry of every weight matrix (zeros too: a dense network).

    Example:
        >>> net = normalized_gadget([(1, 2, 3)], 3)
        >>> p = perturb(net, 2**-8, bits=12, seed=1)
        >>> vals = [v for W, b in p.layers for v in [*W.ravel(), *b]]
        >>> all(v.denominator <= 2**12 and -2 <= v <= 2 for v in vals), p == perturb(net, 2**-8, 12, 1)
        (True, True)
    """
    if not (isinstance(sigma, (int, float)) and math.isfinite(sigma) and sigma >= 0):
        raise ConstructionError(f"perturb: sigma must be a finite number >= 0, got {sigma!r}")
    if not isinstance(bits, (int, np.integer)) or not 0 <= bits <= 50:
        raise ConstructionError(f"perturb: bits must be an integer in 0..50, got {bits!r}")
    if support not in ("all", "nonzero"):
        raise ConstructionError(f"perturb: support must be 'all' or 'nonzero', got {support!r}")
    if net.skip is not None:
        raise ConstructionError("perturb: networks with a skip connection are not supported")
    rng = np.random.default_rng(seed)
    scale = 2**bits

    def noisy(a: np.ndarray, keep: np.ndarray) -> np.ndarray:
        base = np.asarray(a, dtype=np.float64)
        z = rng.standard_normal(base.shape)
        v = np.clip(base + sigma * z * keep, -CLIP, CLIP)
        grid = np.rint(v * scale).astype(np.int64)  # v * 2^bits is exact in float64
        out = np.empty(base.shape, dtype=object)
        for idx, g in np.ndenumerate(grid):
            out[idx] = Fraction(int(g), scale)
        return out

    Ws, bs = [], []
    for W, b in net.layers:
        keep = np.ones(W.shape) if support == "all" else (np.asarray(W, dtype=float) != 0)
        Ws.append(noisy(W, keep.astype(float)))
        bs.append(noisy(b, np.ones(len(b))))
    return Network(Ws, bs)


def block_formula(k: int, unsat_blocks: int) -> list[tuple[int, int, int]]:
    """An E3SAT formula of ``k`` blocks of 8 clauses on disjoint triples of variables
    (n = 3k, m = 8k): the first ``unsat_blocks`` blocks hold all 8 sign patterns (exactly
    one clause of each fails under any assignment), the others 7 distinct patterns and
    one repeated (satisfiable).  So ``unsat = unsat_blocks``: extensive gap with
    ``unsat_blocks = k``, constant with 1.

    Example:
        >>> from relulab.construct import min_unsat
        >>> cl = block_formula(3, unsat_blocks=2)
        >>> len(cl), min_unsat(cl, 9)[0]
        (24, 2)
    """
    if k < 1 or not 0 <= unsat_blocks <= k:
        raise ConstructionError(f"block formula: need k >= 1 and 0 <= unsat_blocks <= k, got "
                                f"k={k}, unsat_blocks={unsat_blocks}")
    patterns = list(itertools.product((1, -1), repeat=3))
    out = []
    for blk in range(k):
        v = (3 * blk + 1, 3 * blk + 2, 3 * blk + 3)
        pats = patterns if blk < unsat_blocks else patterns[:7] + patterns[:1]
        out += [tuple(s * x for s, x in zip(p, v, strict=True)) for p in pats]
    return out


def _solve_exact(A: list[list[Fraction]], c: list[Fraction]) -> list[Fraction] | None:
    """Gaussian elimination in Fractions; None when the system is singular."""
    n = len(A)
    M = [row[:] + [ci] for row, ci in zip(A, c, strict=True)]
    for col in range(n):
        piv = next((r for r in range(col, n) if M[r][col] != 0), None)
        if piv is None:
            return None
        M[col], M[piv] = M[piv], M[col]
        p = M[col][col]
        for r in range(n):
            if r != col and M[r][col] != 0:
                f = M[r][col] / p
                M[r] = [a - f * b for a, b in zip(M[r], M[col], strict=True)]
    return [M[i][n] / M[i][i] for i in range(n)]


def exact_max_bruteforce(net: Network, lo: Sequence[object] | None = None,
                         hi: Sequence[object] | None = None) -> tuple[Fraction, list[Fraction]]:
    """The exact maximum of a one-hidden-layer, one-output network over a box (default
    [0, 1]^n): the function is affine on each cell of the arrangement of the neurons'
    hyperplanes, so its maximum over the box is attained at a vertex of that
    arrangement cut by the box; every n-subset of hyperplanes and facets is solved in
    exact arithmetic.  For tiny instances (a test oracle).

    Example:
        >>> v, x = exact_max_bruteforce(normalized_gadget([(1, 2, 3), (-1, -2, 3)], 3))
        >>> str(v)
        '2/3'
    """
    ex = net.exact()
    if ex.n_hidden_layers != 1 or ex.output_dim != 1 or ex.skip is not None:
        raise ConstructionError("exact_max_bruteforce: needs one hidden layer, one output, no skip")
    n = ex.input_dim
    lo = [Fraction(0)] * n if lo is None else [Fraction(v) for v in lo]
    hi = [Fraction(1)] * n if hi is None else [Fraction(v) for v in hi]
    if len(lo) != n or len(hi) != n or any(a > b for a, b in zip(lo, hi, strict=True)):
        raise ConstructionError(f"exact_max_bruteforce: need a box of dimension {n} with lo <= hi")
    W, b = ex.layers[0]
    planes = [([Fraction(v) for v in W[i]], -Fraction(b[i])) for i in range(W.shape[0])
              if any(v != 0 for v in W[i])]
    for j in range(n):
        e = [Fraction(int(i == j)) for i in range(n)]
        planes += [(e, lo[j]), (e, hi[j])]
    if math.comb(len(planes), n) > BRUTE_FORCE_MAX_SYSTEMS:
        raise ConstructionError(f"exact_max_bruteforce: {math.comb(len(planes), n)} vertex systems "
                                f"is too many (limit {BRUTE_FORCE_MAX_SYSTEMS})")
    ev = ExactEvaluator(ex)
    best: tuple[Fraction, list[Fraction]] | None = None
    seen = set()
    for sub in itertools.combinations(planes, n):
        x = _solve_exact([p[0] for p in sub], [p[1] for p in sub])
        if x is None or any(not lo[j] <= x[j] <= hi[j] for j in range(n)):
            continue
        key = tuple(x)
        if key in seen:
            continue
        seen.add(key)
        v = Fraction(ev(np.array([x], dtype=object))[0, 0])
        if best is None or v > best[0]:
            best = (v, x)
    assert best is not None  # the box corners are always vertices
    return best


@dataclass(frozen=True)
class SmoothedGap(Result):
    """How the maximum of one perturbed gadget moved (see :func:`smoothed_gap`).

    ``perturbed_max`` is exact: the perturbed network evaluated in rational arithmetic at
    the maximiser the MILP returned (a point of the box, so a proven lower bound);
    ``perturbed_upper`` is the MILP's proven upper bound (floating point, HiGHS's
    tolerances).  ``status``: "optimal" (the two agree to ``bracket``), or
    "time_limit" (only the bracket is known; ``survives`` then uses the worse end).

    Example:
        >>> r = smoothed_gap(block_formula(1, 1), 3, sigma=0.0, bits=20, seed=0)
        >>> r.bracket < 1e-6, abs(float(r.shift)) < 1e-5, r.survives
        (True, True, True)
    """

    m: int
    n: int
    unsat: int
    base_max: Fraction  # (m - unsat) / 3, exact
    gap: Fraction  # unsat / 3: distance to the satisfiable value m / 3
    sigma: float
    bits: int
    seed: int
    support: str
    perturbed_max: Fraction  # exact value at the maximiser found
    perturbed_upper: float  # proven upper bound (MILP)
    status: str
    shift: Fraction  # perturbed_max - base_max
    worst_shift: float  # the largest |shift| consistent with the bracket
    bracket: float  # perturbed_upper - perturbed_max
    survives: bool  # worst_shift < gap / 2
    n_binaries: int
    seconds: float


def _components(net: Network) -> list[tuple[list[int], list[int]]]:
    """Groups (inputs, hidden neurons) of a one-hidden-layer network that share no input:
    the connected components of the neuron-input graph (neurons reading nothing are
    constants and go with the first group)."""
    W = net.weights[0]
    n, H = net.input_dim, W.shape[0]
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    reads = [[j for j in range(n) if W[h, j] != 0] for h in range(H)]
    for js in reads:
        for j in js[1:]:
            parent[find(j)] = find(js[0])
    groups: dict[int, tuple[list[int], list[int]]] = {}
    for j in range(n):
        groups.setdefault(find(j), ([], []))[0].append(j)
    order = sorted(groups)
    for h, js in enumerate(reads):
        groups[find(js[0]) if js else order[0]][1].append(h)
    return [groups[r] for r in order]


def _split_max(pnet: Network, time_limit: float | None) -> tuple[np.ndarray, float, str, int]:
    """Maximise a one-hidden-layer, one-output network over [0, 1]^n component by
    component (exact: the function is a sum over components of functions of disjoint
    inputs, plus the output bias).  Returns (maximiser, upper bound, status, binaries)."""
    from ..domain import Box
    from ..verify import maximize

    fnet = pnet.float()
    (W1, b1), (W2, b2) = fnet.layers
    comps = _components(fnet)
    x = np.zeros(fnet.input_dim)
    upper, status, nbin = float(b2[0]), "optimal", 0
    per = None if time_limit is None else time_limit / len(comps)
    for js, hs in comps:
        if not hs:
            continue
        sub = Network([W1[np.ix_(hs, js)], W2[:, hs]], [b1[hs], np.zeros(1)])
        r = maximize(sub, Box(np.zeros(len(js)), np.ones(len(js))), time_limit=per)
        x[js] = r.x
        upper += float(r.upper_bound)
        nbin += r.n_binaries
        if r.status != "optimal":
            status = "time_limit"
    return x, upper, status, nbin


def smoothed_gap(clauses: Sequence[Sequence[int]], n: int, sigma: float = SIGMA_STAR,
                 bits: int = 16, seed: int = 0, support: str = "nonzero",
                 time_limit: float | None = 120.0, unsat: int | None = None,
                 method: str = "components") -> SmoothedGap:
    """Perturb the normalized gadget of ``clauses`` (:func:`perturb`) and measure the
    maximum of the perturbed network over [0, 1]^n by :func:`relulab.verify.maximize`,
    re-evaluated exactly at the maximiser.  ``unsat`` (the least number of unsatisfied
    clauses) is computed by brute force when not given (n <= 20).

    ``method``: "components" maximises each group of neurons that shares no input with
    the others separately (exact, as the network is their sum; with the default
    support the blocks of :func:`block_formula` are separate), "whole" runs one MILP.

    Example:
        >>> r = smoothed_gap(block_formula(2, 2), 6, sigma=2**-6, bits=12, seed=3)
        >>> r.unsat, str(r.gap), r.status, r.survives == (r.worst_shift < float(r.gap) / 2)
        (2, '2/3', 'optimal', True)
    """
    import time

    from ..domain import Box
    from ..verify import maximize

    t0 = time.perf_counter()
    if method not in ("components", "whole"):
        raise ConstructionError(f"smoothed_gap: method must be 'components' or 'whole', got {method!r}")
    m = len(clauses)
    if unsat is None:
        if n > 20:
            raise ConstructionError(f"smoothed_gap: give unsat for n = {n} > 20 (brute force)")
        unsat = min_unsat(clauses, n)[0]
    base = Fraction(m - unsat, 3)
    pnet = perturb(normalized_gadget(clauses, n), sigma, bits, seed, support)
    if method == "whole":
        res = maximize(pnet.float(), Box(np.zeros(n), np.ones(n)), time_limit=time_limit)
        xs, up, status, nbin = res.x, float(res.upper_bound), res.status, res.n_binaries
        status = "optimal" if status == "optimal" else "time_limit"
    else:
        xs, up, status, nbin = _split_max(pnet, time_limit)
    x = [Fraction(float(v)) for v in np.clip(np.asarray(xs, dtype=float), 0.0, 1.0)]
    val = Fraction(ExactEvaluator(pnet)(np.array([x], dtype=object))[0, 0])
    upper = max(up, float(val))
    bracket = upper - float(val)
    shift = val - base
    worst = max(abs(float(shift)), abs(upper - float(base)))
    gap = Fraction(unsat, 3)
    return SmoothedGap(m, n, unsat, base, gap, float(sigma), int(bits), int(seed), support, val,
                       upper, status, shift, worst, bracket, bool(worst < float(gap) / 2),
                       nbin, time.perf_counter() - t0)
