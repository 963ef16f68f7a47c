"""max_n with two hidden layers, found by an exact computer-assisted search, and certified.

The maximum ``s * max(u_1..u_n)`` is the support function ``h_P(u) = max_{v in P} <v, u>``
of the scaled simplex ``P = s * conv(e_1..e_n)``.  Support functions of zonotopes
``Z = a + sum [0, g]`` are one-hidden-layer functions, ``h_Z(u) = <a, u> + sum relu(<g, u>)``,
and the support function of ``conv(Z1 u Z2)`` is ``max(h_Z1, h_Z2) = h_Z2 + relu(h_Z1 - h_Z2)``:
a two-hidden-layer function.  The search

1. lists the zonotopes whose vertices are lattice points of ``2 * simplex`` (points,
   segments, parallelograms, parallelepipeds), and all polytopes ``conv(Z1 u Z2)``;
2. groups them into orbits under permutations of the coordinates (the target is
   symmetric, so a symmetric solution exists if any does) and takes as candidate
   functions the orbit sums of support functions, plus ``sum u_i``;
3. asks for ``2 max = sum_orbits c_O (orbit sum) + c_0 sum u_i`` at random integer
   points, minimising a weighted l1 norm of c by an LP (HiGHS), which returns a sparse
   vertex solution; the coefficients are rounded to nearby rationals;
4. builds the network and certifies it exactly (:func:`certify_max`).

For n = 5 and n = 6 this finds a network with two hidden layers (for n = 7 this candidate
family has no solution: a richer family would be needed) (the literature reports two
hidden layers suffice for max_5, Bakaev-Brunck-Hertrich-Stade-Yehudayoff; and for every
n <= 12 by a similar computer-assisted search); ``ceil(log2 5) = 3`` is what the binary
tree needs.  The stored solutions (:data:`MAX5_SOLUTION`, :data:`MAX6_SOLUTION`) are what
the search returns.

Certificate: every breakpoint of the network lies on a hyperplane ``<v - w, u> = 0``
with v, w lattice points of ``2 * simplex`` (generators are such differences, and on a
cell of that arrangement every h_Z is linear with a lattice-point gradient, so
``h_Z1 - h_Z2`` changes sign only on such a hyperplane).  The network and max are
therefore both linear on each cell of that arrangement, and both are invariant along
``(1, ..., 1)`` up to a linear term.  In each ordering cone ``u_s(1) >= ... >= u_s(n)``
we slice the pointed part by a simplex; each cell's slice is a polytope whose vertices
are vertices of the arrangement restricted to the slice.  Equality at all those vertices
(exact rationals), in all n! cones, and at ``+-(1, ..., 1)`` proves equality everywhere.

Example:
    >>> net = max5_two_hidden()
    >>> net.n_hidden_layers, net([3, -1, 7, 2, 0])[0]
    (2, Fraction(7, 1))
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..network import Network
from ..tolerance import FEAS_TOL
from ._builder import Builder, Expr, esum
from ._exact import ExactEvaluator
from .maxmin import ConstructionError

__all__ = [
    "lattice_points",
    "zonotopes",
    "candidate_orbits",
    "search_max_two_hidden",
    "max_two_hidden_from_terms",
    "max5_two_hidden",
    "certify_max",
    "MaxCertificate",
    "MaxSearchResult",
    "is_symmetric",
    "MAX5_SOLUTION",
    "MAX6_SOLUTION",
    "max6_two_hidden",
]

Point = tuple[int, ...]
Zono = tuple[Point, tuple[Point, ...]]  # (corner a, generators)


def lattice_points(n: int, s: int = 2) -> list[Point]:
    """Integer points of ``s * simplex`` in R^n (coordinates >= 0 summing to s).

    Example:
        >>> lattice_points(2, 2)
        [(2, 0), (1, 1), (0, 2)]
        >>> len(lattice_points(3, 2))       # C(4, 2)
        6
    """
    out = []
    for c in itertools.combinations_with_replacement(range(n), s):
        v = [0] * n
        for i in c:
            v[i] += 1
        out.append(tuple(v))
    return out


def _zono_vertices(z: Zono) -> frozenset[Point]:
    a, gens = z
    n = len(a)
    out = set()
    for k in range(len(gens) + 1):
        for sub in itertools.combinations(gens, k):
            out.add(tuple(a[i] + sum(g[i] for g in sub) for i in range(n)))
    return frozenset(out)


def zonotopes(points: list[Point], max_gens: int = 3) -> dict[frozenset[Point], Zono]:
    """Zonotopes (up to ``max_gens`` independent generators) whose vertices all lie in
    ``points``, keyed by their vertex set.

    Example:
        >>> Z = zonotopes(lattice_points(2, 2))
        >>> len(Z), all(len(vs) in (1, 2) for vs in Z)     # points and segments on a line
        (6, True)
    """
    pset = set(points)
    n = len(points[0])
    out: dict[frozenset[Point], Zono] = {}
    for a in points:
        out.setdefault(frozenset([a]), (a, ()))
        others = [tuple(q[i] - a[i] for i in range(n)) for q in points if q != a]
        for r in range(1, max_gens + 1):
            for gens in itertools.combinations(others, r):
                if np.linalg.matrix_rank(np.array(gens, dtype=float)) < r:
                    continue
                V = _zono_vertices((a, gens))
                if len(V) == 2**r and V <= pset:
                    out.setdefault(V, (a, gens))
    return out


@dataclass(frozen=True)
class _Orbit:
    rep: frozenset[Point]  # vertex set of conv(Z1 u Z2)
    z1: Zono
    z2: Zono
    members: tuple[tuple[int, ...], ...]  # permutations giving the distinct members


def _permute_point(p: Point, perm: tuple[int, ...]) -> Point:
    # coordinate i of the image is coordinate perm^-1(i) of p: (sigma p)_{perm[i]} = p_i
    out = [0] * len(p)
    for i, v in enumerate(p):
        out[perm[i]] = v
    return tuple(out)


def _permute_zono(z: Zono, perm: tuple[int, ...]) -> Zono:
    return (_permute_point(z[0], perm), tuple(_permute_point(g, perm) for g in z[1]))


def candidate_orbits(n: int, s: int = 2, max_gens: int = 3) -> list[_Orbit]:
    """Orbits (under coordinate permutations) of the polytopes ``conv(Z1 u Z2)`` with Z1, Z2
    zonotopes on the lattice points of ``s * simplex``.

    Example:
        >>> orbits = candidate_orbits(3)
        >>> len(orbits), all(len(next(iter(o.rep))) == 3 for o in orbits)
        (18, True)
    """
    pts = lattice_points(n, s)
    index = {p: i for i, p in enumerate(pts)}
    zs = list(zonotopes(pts, max_gens).items())
    bits = np.array([sum(1 << index[v] for v in V) for V, _ in zs], dtype=np.int64)
    perms = list(itertools.permutations(range(n)))
    act = np.array([[index[_permute_point(p, pr)] for p in pts] for pr in perms])  # (P, |pts|)
    pow2 = (1 << act).astype(np.int64)
    unions: dict[int, tuple[int, int]] = {}
    for i in range(len(zs)):
        u = bits[i] | bits[i:]
        for j, ub in zip(range(i, len(zs)), u.tolist(), strict=True):
            unions.setdefault(ub, (i, j))
    orbits = []
    seen: set[int] = set()
    for key in sorted(unions):
        if key in seen:
            continue
        members = [k for k in range(len(pts)) if key >> k & 1]
        images = pow2[:, members].sum(axis=1).tolist()  # the orbit: one image per permutation
        seen.update(images)
        i, j = unions[key]
        member_perms: dict[int, tuple[int, ...]] = {}
        for p, img in enumerate(images):
            member_perms.setdefault(int(img), perms[p])
        V = frozenset(pts[k] for k in members)
        orbits.append(_Orbit(V, zs[i][1], zs[j][1], tuple(member_perms.values())))
    return orbits


def _support(V: frozenset[Point] | list[Point], U: np.ndarray) -> np.ndarray:
    P = np.array(sorted(V), dtype=np.int64)
    return (U @ P.T).max(axis=1)


# stored result of search_max_two_hidden(5): (vertex set of the orbit representative,
# Z1, Z2, coefficient); the function is sum_c c * sum_{members} h_conv(Z1 u Z2) = 2 max.
# Found by search_max_two_hidden(5) (seed 0); the certificate is re-run in the tests.
MAX5_SOLUTION: tuple[tuple[Zono, Zono, Fraction], ...] = (
    # triangle conv([e1+e5, e2+e4] u {2 e3}) = conv({e1+e5} u segment)
    (((1, 0, 0, 0, 1), ()), ((0, 1, 0, 1, 0), ((0, -1, 2, -1, 0),)), Fraction(-1, 45)),
    # conv(parallelogram u segment)
    (((2, 0, 0, 0, 0), ((-1, 1, 0, 0, 0), (-1, 0, 0, 1, 0))),
     ((1, 0, 0, 0, 1), ((-1, 0, 2, 0, -1),)), Fraction(1, 45)),
    # conv(parallelogram u parallelogram)
    (((1, 1, 0, 0, 0), ((0, -1, 1, 0, 0), (-1, 0, 1, 0, 0))),
     ((1, 0, 0, 1, 0), ((0, 0, 0, -1, 1), (-1, 1, 0, 0, 0))), Fraction(-2, 45)),
    # tetrahedron 2 conv(e1, e2, e3, e4) = conv(segment u segment)
    (((2, 0, 0, 0, 0), ((-2, 2, 0, 0, 0),)), ((0, 0, 2, 0, 0), ((0, 0, -2, 2, 0),)),
     Fraction(4, 15)),
)


# Found by search_max_two_hidden(6, n_points=600) (seed 0); certified in the tests.
MAX6_SOLUTION: tuple[tuple[Zono, Zono, Fraction], ...] = (
    (((2, 0, 0, 0, 0, 0), ((-1, 0, 1, 0, 0, 0), (-1, 0, 0, 1, 0, 0))),
     ((1, 0, 0, 0, 1, 0), ((0, 0, 0, 0, -1, 1), (-1, 1, 0, 0, 0, 0))), Fraction(1, 45)),
    (((1, 1, 0, 0, 0, 0), ((0, -1, 0, 1, 0, 0), (-1, 0, 1, 0, 0, 0))),
     ((1, 0, 0, 0, 1, 0), ((0, 0, 0, 0, -1, 1), (-1, 1, 0, 0, 0, 0))), Fraction(-1, 45)),
    (((2, 0, 0, 0, 0, 0), ((-2, 2, 0, 0, 0, 0),)),
     ((0, 0, 2, 0, 0, 0), ((0, 0, -2, 2, 0, 0),)), Fraction(2, 15)),
    (((2, 0, 0, 0, 0, 0), ((-1, 1, 0, 0, 0, 0), (-1, 0, 0, 0, 0, 1))),
     ((0, 0, 2, 0, 0, 0), ((0, 0, -1, 1, 0, 0), (0, 0, -1, 0, 1, 0))), Fraction(-1, 90)),
)


def _terms_network(n: int, terms: list[tuple[Zono, Zono, Fraction]], lin: Fraction,
                   scale: int, centred: bool = False) -> Network:
    """``(sum_t c_t max(h_Z1, h_Z2) + lin * sum u) / scale`` as a 2-hidden-layer network.

    ``h_Z(u) = <a, u> + sum_g relu(<g, u>)`` (corner form), or with ``centred`` the
    permutation-equivariant ``<centre, u> + sum_g (relu(<g, u>) + relu(-<g, u>)) / 2``.
    """
    b = Builder(n)
    u = b.inputs()
    gens: dict[Point, Expr] = {}

    def neuron(g: Point) -> Expr:
        if g not in gens:
            gens[g] = b.relu(esum((u[i] * g[i] for i in range(n) if g[i]), 0))
        return gens[g]

    for z1, z2, _ in terms:
        for g in (*z1[1], *z2[1]):
            neuron(g)
            if centred:
                neuron(tuple(-x for x in g))
    pos = [b.relu(x) for x in u]
    neg = [b.relu(-x) for x in u]
    b.close()
    lay = b.layer
    lin_u = [pos[i] - neg[i] for i in range(n)]

    def h(z: Zono) -> Expr:
        a, gs = z
        if centred:
            centre = [Fraction(a[i]) + sum(Fraction(g[i], 2) for g in gs) for i in range(n)]
            e = esum((lin_u[i] * centre[i] for i in range(n) if centre[i]), lay)
            return e + esum(((gens[g] + gens[tuple(-x for x in g)]) / 2 for g in gs), lay)
        e = esum((lin_u[i] * a[i] for i in range(n) if a[i]), lay)
        return e + esum((gens[g] for g in gs), lay)

    hinge = []
    T = esum((lin_u[i] * lin for i in range(n)), lay)
    for z1, z2, c in terms:
        T = T + h(z2) * c
        if _zono_vertices(z1) != _zono_vertices(z2):
            hinge.append((b.relu(h(z1) - h(z2)), c))
    carried = b.relu(T) - b.relu(-T)
    b.close()
    out = carried + esum((y * c for y, c in hinge), b.layer)
    return b.build([out / scale])


def max_two_hidden_from_terms(n: int, orbit_terms: list[tuple[Zono, Zono, Fraction]],
                              lin: Fraction = Fraction(0), scale: int = 2,
                              symmetric: bool = False) -> Network:
    """The network ``(sum over orbits c * sum over the orbit of h_conv(Z1 u Z2)
    + lin * sum u) / scale``: 2 hidden layers, first layer one neuron per distinct
    generator plus 2n carrying u, second layer one neuron per non-zonotope member plus 2.

    ``symmetric=True`` splits each member's weight evenly over all its decompositions
    ``(sigma Z1, sigma Z2)``, so that permuting the inputs permutes the neurons (more
    neurons; :func:`is_symmetric` can then prove the symmetry structurally).

    Example:
        >>> r = search_max_two_hidden(3, n_points=100)
        >>> net = max_two_hidden_from_terms(3, list(r.terms), r.linear)
        >>> net == r.network, certify_max(net, 3).ok
        (True, True)
        >>> is_symmetric(max_two_hidden_from_terms(3, list(r.terms), r.linear, symmetric=True), 3)
        True
    """
    decomps: dict[frozenset[Point], dict[tuple[Zono, Zono], None]] = {}
    coef: dict[frozenset[Point], Fraction] = {}
    order: list[frozenset[Point]] = []
    for z1, z2, c in orbit_terms:
        local: dict[frozenset[Point], dict[tuple[Zono, Zono], None]] = {}
        for perm in itertools.permutations(range(n)):
            pz1, pz2 = _permute_zono(z1, perm), _permute_zono(z2, perm)
            key = _zono_vertices(pz1) | _zono_vertices(pz2)
            if key not in local:
                local[key] = {}
                order.append(key)
                coef[key] = coef.get(key, Fraction(0)) + Fraction(c)
            if symmetric or not local[key]:
                local[key][(_canonical_zono(pz1), _canonical_zono(pz2))] = None
        for key, d in local.items():
            decomps.setdefault(key, {}).update(d)
    terms = []
    for key in dict.fromkeys(order):
        ds = list(decomps[key])
        for z1, z2 in ds:
            terms.append((z1, z2, coef[key] / len(ds)))
    return _terms_network(n, terms, Fraction(lin), scale, centred=symmetric)


def _canonical_zono(z: Zono) -> Zono:
    """The same zonotope written with the lexicographically least corner and generators
    pointing away from it (so equal zonotopes give equal neurons)."""
    V = _zono_vertices(z)
    a = min(V)
    n = len(a)
    gens = []
    for g in z[1]:
        # orient each generator so that a + g is a vertex
        cand = tuple(a[i] + g[i] for i in range(n))
        gens.append(g if cand in V else tuple(-x for x in g))
    return (a, tuple(sorted(gens)))


@dataclass(frozen=True)
class MaxSearchResult:
    """Outcome of :func:`search_max_two_hidden`.

    Example:
        >>> r = search_max_two_hidden(3, n_points=100)
        >>> r.found, r.network.n_hidden_layers, r.certificate.ok, len(r.to_dict()["terms"]) == len(r.terms)
        (True, 2, True, True)
    """

    n: int
    found: bool
    n_candidate_orbits: int
    terms: tuple[tuple[Zono, Zono, Fraction], ...]
    linear: Fraction
    network: Network | None
    certificate: MaxCertificate | None

    def to_dict(self) -> dict:
        return {
            "n": self.n,
            "found": self.found,
            "n_candidate_orbits": self.n_candidate_orbits,
            "terms": [{"Z1": list(map(list, (z1[0], *z1[1]))), "Z2": list(map(list, (z2[0], *z2[1]))),
                       "coef": str(c)} for z1, z2, c in self.terms],
            "linear": str(self.linear),
            "widths": None if self.network is None else list(self.network.widths),
            "certificate": None if self.certificate is None else self.certificate.to_dict(),
        }


def search_max_two_hidden(n: int = 5, n_points: int = 400, seed: int = 0,
                          max_den: int = 10_000, symmetric: bool | None = None
                          ) -> MaxSearchResult:
    """Search for a two-hidden-layer network computing max of n numbers (see the module
    docstring); the result is certified exactly when found.  ``symmetric`` builds the
    structurally symmetric network (default for n >= 6) so that the certificate checks
    one ordering cone plus an exact symmetry proof instead of all n! cones.

    Example:
        >>> r = search_max_two_hidden(4, n_points=150)
        >>> r.found, r.network.n_hidden_layers, r.certificate.ok
        (True, 2, True)
    """
    from ..lp import solve

    if n < 2:
        raise ConstructionError(f"max search: n must be >= 2, got {n}")
    orbits = candidate_orbits(n)
    rng = np.random.default_rng(seed)
    U = rng.integers(-1000, 1001, size=(n_points, n)).astype(np.int64)
    cols = []
    for orb in orbits:
        col = np.zeros(n_points, dtype=np.int64)
        for perm in orb.members:
            V = frozenset(_permute_point(p, perm) for p in orb.rep)
            col += _support(V, U)
        cols.append(col)
    A = np.column_stack([*cols, U.sum(axis=1)]).astype(float)
    target = 2.0 * U.max(axis=1)
    m = A.shape[1]
    # weighted l1: a hinge neuron per member costs one, a zonotope (or the linear term) none
    w = np.array([len(o.members) * (_zono_vertices(o.z1) != _zono_vertices(o.z2))
                  for o in orbits] + [0], dtype=float) + 1e-3
    scale = np.abs(A).max()
    res = solve(np.concatenate([w, w]), A_eq=np.hstack([A, -A]) / scale, b_eq=target / scale,
                lb=np.zeros(2 * m))
    if not res.ok:
        return MaxSearchResult(n, False, len(orbits), (), Fraction(0), None, None)
    coef = res.x[:m] - res.x[m:]
    fr = [Fraction(float(v)).limit_denominator(max_den) for v in coef]
    terms = tuple((orbits[j].z1, orbits[j].z2, fr[j]) for j in range(m - 1) if fr[j] != 0)
    sym = n >= 6 if symmetric is None else symmetric  # n! cones get costly: prove symmetry
    net = max_two_hidden_from_terms(n, list(terms), fr[-1], symmetric=sym)
    cert = certify_max(net, n)
    return MaxSearchResult(n, cert.ok, len(orbits), terms, fr[-1], net, cert)


def max5_two_hidden() -> Network:
    """An exact network with **two** hidden layers computing ``max(u_1, ..., u_5)`` on all of
    R^5, from the stored solution of :func:`search_max_two_hidden` (certified by
    :func:`certify_max` in the tests).

    Example:
        >>> max5_two_hidden().widths
        (56, 112)
    """
    return max_two_hidden_from_terms(5, list(MAX5_SOLUTION))


def max6_two_hidden() -> Network:
    """An exact network with **two** hidden layers computing ``max(u_1, ..., u_6)`` on all of
    R^6 (the binary tree needs 3), from the stored solution of
    ``search_max_two_hidden(6)``; built in the structurally symmetric form so that
    :func:`certify_max` proves it with one ordering cone and a symmetry check.

    Example:
        >>> max6_two_hidden().widths
        (72, 632)
    """
    return max_two_hidden_from_terms(6, list(MAX6_SOLUTION), symmetric=True)


# ------------------------------------------------------------------ certificate
@dataclass(frozen=True)
class MaxCertificate:
    """Exact check that a network equals max of n numbers everywhere (module docstring).

    Example:
        >>> from relulab.construct import max_n
        >>> c = certify_max(max_n(4), 4)
        >>> c.ok, c.n_cones, c.first_failure       # every one of the 4! orderings checked
        (True, 24, None)
    """

    n: int
    ok: bool
    n_cones: int
    n_points: int
    n_hyperplanes: int
    first_failure: tuple[Fraction, ...] | None
    by_symmetry: bool = False  # cones covered by the exact symmetry check
    # why ok is False without a failing point: the assumption the check rests on (every
    # breakpoint on the arrangement) could not be verified for this network
    reason: str | None = None

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["first_failure"] = None if self.first_failure is None else [str(v) for v in self.first_failure]
        return d


def _solve_exact(M: list[list[Fraction]], rhs: list[Fraction]) -> list[Fraction] | None:
    k = len(M)
    A = [row[:] + [r] for row, r in zip(M, rhs, strict=True)]
    for col in range(k):
        piv = next((r for r in range(col, k) if A[r][col] != 0), None)
        if piv is None:
            return None
        A[col], A[piv] = A[piv], A[col]
        pv = A[col][col]
        A[col] = [v / pv for v in A[col]]
        for r in range(k):
            if r != col and A[r][col] != 0:
                f = A[r][col]
                A[r] = [a - f * c for a, c in zip(A[r], A[col], strict=True)]
    return [A[r][k] for r in range(k)]


def _merged_layers(net: Network) -> list[tuple[list[tuple[Fraction, ...]], np.ndarray]]:
    """Hidden layers with identical neurons merged (their outgoing weights summed): the
    function is unchanged and the neurons of each layer become distinct, so a symmetry
    maps neurons to neurons uniquely.  Returns [(rows (weights + bias), next W)]."""
    net = net.exact()
    Ws = [np.array(W, dtype=object) for W in net.weights]
    bs = [np.array(b, dtype=object) for b in net.biases]
    for k in range(len(Ws) - 1):
        rows = [(*Ws[k][j], bs[k][j]) for j in range(Ws[k].shape[0])]
        uniq: dict[tuple, int] = {}
        for r in rows:
            uniq.setdefault(r, len(uniq))
        nxt = np.full((Ws[k + 1].shape[0], len(uniq)), Fraction(0), dtype=object)
        for j, r in enumerate(rows):
            nxt[:, uniq[r]] += Ws[k + 1][:, j]
        keys = list(uniq)
        Ws[k] = np.array([r[:-1] for r in keys], dtype=object)
        bs[k] = np.array([r[-1] for r in keys], dtype=object)
        Ws[k + 1] = nxt
    return list(zip(Ws, bs, strict=True))


def is_symmetric(net: Network, n: int) -> bool:
    """Exact structural check that ``net(u)`` is invariant under every permutation of its
    n inputs: for a transposition and an n-cycle (which generate S_n), permuting the input
    columns must permute the (merged) neurons of each layer and fix the output layer.

    Example:
        >>> import numpy as np
        >>> from relulab.construct import max_n
        >>> is_symmetric(Network([np.eye(3), np.ones((1, 3))], [np.zeros(3), np.zeros(1)]).exact(), 3)
        True
        >>> is_symmetric(max_n(4), 4)      # computes a symmetric function, but its tree is not
        False
    """
    if net.skip is not None or net.input_dim != n:
        return False
    layers = _merged_layers(net)
    gens = [tuple([1, 0, *range(2, n)]), tuple([*range(1, n), 0])] if n > 1 else []
    for g in gens:
        # input column i of the permuted network is column g[i] of the original
        cols = list(g)
        for k, (W, b) in enumerate(layers):
            Wp = W[:, cols]
            if k == len(layers) - 1:
                if not np.all(Wp == W) or not np.all(b == b):
                    return False
                break
            index = {(*W[j], b[j]): j for j in range(W.shape[0])}
            mapping = []
            for j in range(Wp.shape[0]):
                t = index.get((*Wp[j], b[j]))
                if t is None:
                    return False
                mapping.append(t)
            if len(set(mapping)) != len(mapping):
                return False
            # next layer: column j of the permuted net is original neuron mapping[j];
            # the permuted next layer reads its inputs in that order
            inv = [0] * len(mapping)
            for j, t in enumerate(mapping):
                inv[t] = j
            cols = inv
    return True


def _slice_vertices(n: int, normals: set[Point]) -> list[Point]:
    """Integer representatives of the vertices of the arrangement ``{<h, u> = 0}`` restricted
    to the slice ``sum lambda = 1`` of the sorted cone's pointed part (u_n = 0,
    u = sum_k lambda_k r_k).  Candidates are prefiltered in float64 (integer systems:
    |det| < 1/2 means singular) and recomputed exactly."""
    rays = np.array([[1 if i < k else 0 for i in range(n)] for k in range(1, n)], dtype=np.int64)
    cut = []
    for h in sorted(normals):
        vals = rays @ np.array(h, dtype=np.int64)
        if vals.min() < 0 < vals.max():
            cut.append(vals)
    k = n - 1
    planes = np.array([*cut, *np.eye(k, dtype=np.int64)], dtype=np.int64)
    combos = np.array(list(itertools.combinations(range(len(planes)), k - 1)), dtype=np.int64)
    if len(combos) == 0:
        combos = np.zeros((1, 0), dtype=np.int64)
    out: set[Point] = set()
    ones = np.ones((1, k), dtype=np.int64)
    for start in range(0, len(combos), 50_000):
        cb = combos[start:start + 50_000]
        M = np.concatenate([planes[cb], np.broadcast_to(ones, (len(cb), 1, k))], axis=1)
        det = np.linalg.det(M.astype(float))
        ok = np.abs(det) > 0.5
        rhs = np.zeros(k)
        rhs[-1] = 1.0
        lam = np.full((len(cb), k), -1.0)
        lam[ok] = np.linalg.solve(M[ok].astype(float), np.broadcast_to(rhs, (int(ok.sum()), k))[..., None])[..., 0]
        keep = np.nonzero(ok & (lam.min(axis=1) > -FEAS_TOL))[0]
        # many plane tuples meet in one vertex: solve each distinct vertex once.  Distinct
        # vertices of these small integer systems differ by far more than 1e-10 (their
        # denominators are at most the Hadamard bound), so rounding never merges two.
        firsts: dict[tuple, int] = {}
        for i in keep:
            firsts.setdefault(tuple(np.round(lam[i], 10).tolist()), int(i))
        for i in firsts.values():
            Mi = [[Fraction(int(v)) for v in row] for row in M[i]]
            ex = _solve_exact(Mi, [Fraction(0)] * (k - 1) + [Fraction(1)])
            if ex is None or min(ex) < 0:
                continue
            u = [sum(ex[j] * int(rays[j][c]) for j in range(k)) for c in range(n)]
            den = 1
            for v in u:
                den = den * v.denominator // math.gcd(den, v.denominator)
            out.add(tuple(int(v * den) for v in u))  # homogeneity: scale to integers
    return sorted(out)


def _always_linear(W: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Neurons of a layer after the first that never bend: inputs are ReLU outputs
    (>= 0), so non-negative weights and bias keep the neuron active (relu(z) = z) and
    non-positive ones keep it at 0."""
    nonneg = np.array([all(v >= 0 for v in row) and c >= 0 for row, c in zip(W, b, strict=True)])
    nonpos = np.array([all(v <= 0 for v in row) and c <= 0 for row, c in zip(W, b, strict=True)])
    return nonneg | nonpos


def _downstream(Ws: list[np.ndarray], linear: list[np.ndarray], k: int, col: np.ndarray) -> tuple:
    """What the network reads of a layer-k neuron whose column into layer k + 1 is
    ``col``: its weights into the neurons that bend and the outputs, passed through the
    neurons that never bend (``linear``) as the linear maps they are."""
    out: list = []
    v = col
    for m in range(k + 1, len(Ws)):
        if m == len(Ws) - 1:       # the output layer reads v as it is
            out.extend(v)
            break
        lin = linear[m]
        out.extend(np.where(lin, 0, v))
        v = Ws[m + 1][:, lin].dot(v[lin]) if lin.any() else np.zeros(Ws[m + 1].shape[0], dtype=object)
    return tuple(out)


def _carry_pairs(Ws: list[np.ndarray], bs: list[np.ndarray], linear: list[np.ndarray], k: int) -> set[int]:
    """Neurons of hidden layer k that come in pairs ``relu(g)``, ``relu(-g)`` which the rest
    of the network reads with opposite weights: together linear (``g`` carried), so they
    bend nowhere (max_n's carries, and the +-sum neurons of the two-hidden-layer bases)."""
    W, b = Ws[k], bs[k]
    rows: dict[tuple, int] = {}
    for i in range(W.shape[0]):
        if b[i] == 0:
            rows.setdefault(tuple(W[i]), i)
    out: set[int] = set()
    for i in range(W.shape[0]):
        j = rows.get(tuple(-v for v in W[i]))
        if j is None or j == i or b[i] != 0 or not any(v != 0 for v in W[i]):
            continue
        di = _downstream(Ws, linear, k, Ws[k + 1][:, i])
        dj = _downstream(Ws, linear, k, Ws[k + 1][:, j])
        if all(a == -c for a, c in zip(di, dj, strict=True)):
            out.update((i, j))
    return out


def _integer_layers(Ws: list[np.ndarray], top: int) -> tuple[list[np.ndarray], bool]:
    """The hidden layers' weights each times the lcm of its denominators: integers, and a
    positive multiple of the layer (relu(c z) = c relu(z) for c > 0, and the network is
    bias-free), so every pre-activation keeps its sign and its zeros, exactly.  int64
    when every value along the way stays below 2^62 (``top`` bounds the inputs' entries),
    else Python integers (object arrays; the second value says so).  Fraction arithmetic
    took 100 s of the 103 s certificate of max2h n = 5.

    Example:
        >>> from fractions import Fraction as F
        >>> hidden, output = np.array([[F(1, 2), F(-1, 3)]], dtype=object), np.array([[F(1)]], dtype=object)
        >>> Wi, big = _integer_layers([hidden, output], 2)    # the output layer is not needed
        >>> len(Wi), Wi[0].tolist(), Wi[0].dtype, big
        (1, [[3, -2]], dtype('int64'), False)
    """
    out, bound = [], top
    for W in Ws[:-1]:
        den = math.lcm(*(Fraction(v).denominator for v in W.ravel())) if W.size else 1
        ints = [[int(Fraction(v) * den) for v in row] for row in W]
        out.append(ints)
        bound *= max((sum(abs(v) for v in row) for row in ints), default=0) + 1
    if bound < 2**62:
        return [np.array(m, dtype=np.int64).reshape(W.shape) for m, W in zip(out, Ws, strict=False)], False
    return [np.array(m, dtype=object).reshape(W.shape) for m, W in zip(out, Ws, strict=False)], True


def _bends_off_arrangement(net: Network, normals: set[Point], cones: list[list[Point]]) -> str | None:
    """Why the check of :func:`certify_max` would not be a proof for ``net``, or None when
    its assumption holds: a bias-free network (no skip) all of whose bends lie on the
    hyperplanes ``<h, u> = 0`` of ``normals`` (each containing (1, ..., 1)).  A first-layer
    neuron must bend on one of them; a deeper one must keep its sign on every cell of the
    arrangement in the checked cones.  Its pre-activation is linear on each cell, a cell
    is the cone over its slice vertices plus the line through (1, ..., 1), so that means
    ``g(1, ..., 1) = 0`` and no two slice vertices of one closed cell (sign vectors with no
    opposite entries) with strictly opposite signs.  Neurons that never bend
    (:func:`_always_linear`) and pairs ``relu(g)``, ``relu(-g)`` read with opposite weights
    (:func:`_carry_pairs`) are exempt."""
    net = net.exact()
    if net.skip is not None or any(v != 0 for b in net.biases for v in b):
        return "the check assumes a bias-free network without skip connection"
    Ws = [np.asarray(W, dtype=object) for W in net.weights]
    bs = [np.asarray(b, dtype=object) for b in net.biases]
    linear = [np.zeros(Ws[0].shape[0], dtype=bool)] + [_always_linear(Ws[k], bs[k]) for k in range(1, len(Ws) - 1)]
    carries = [_carry_pairs(Ws, bs, linear, k) for k in range(len(Ws) - 1)]
    for i, row in enumerate(Ws[0]):
        if i in carries[0] or all(v == 0 for v in row):
            continue
        den = math.lcm(*(Fraction(v).denominator for v in row))
        h = [int(Fraction(v) * den) for v in row]
        g = math.gcd(*h)
        h = tuple(v // g for v in h)
        if h not in normals and tuple(-v for v in h) not in normals:
            return f"first-layer neuron {i} bends on <{h}, u> = 0, not a hyperplane of the arrangement"
    N = np.array(sorted(normals), dtype=np.int64)
    Wi, exact_ints = _integer_layers(Ws, max(max(abs(v) for v in pt) for pts in cones for pt in pts) + 1)
    for pts in cones:
        P = np.array(pts, dtype=np.int64)
        S = np.sign(P @ N.T)
        pos, neg = (S > 0).astype(np.int64), (S < 0).astype(np.int64)
        same_cell = (pos @ neg.T + neg @ pos.T) == 0          # conformal: a common closed cell
        X = np.vstack([P, np.ones((1, P.shape[1]), dtype=np.int64)])
        H = X.astype(object) if exact_ints else X
        for k in range(len(Ws) - 1):
            Z = H.dot(Wi[k].T)
            if k > 0:
                for j in range(Z.shape[1]):
                    if j in carries[k] or linear[k][j]:
                        continue
                    z = Z[:-1, j]
                    if Z[-1, j] != 0:
                        return (f"hidden layer {k + 1} neuron {j} is not constant along (1, ..., 1), so it "
                                "bends off the arrangement")
                    up = np.flatnonzero(z > 0)
                    down = np.flatnonzero(z < 0)
                    if up.size and down.size and np.any(same_cell[np.ix_(up, down)]):
                        return f"hidden layer {k + 1} neuron {j} changes sign inside a cell of the arrangement"
            H = np.where(Z > 0, Z, 0)
    return None


def certify_max(net: Network, n: int, points: list[Point] | None = None,
                use_symmetry: bool | None = None) -> MaxCertificate:
    """Certify exactly that ``net`` computes ``max(u_1..u_n)`` on all of R^n, for networks
    whose breakpoints lie on hyperplanes ``<v - w, u> = 0`` for lattice points v, w of
    ``2 * simplex`` (true for :func:`max_two_hidden_from_terms` networks, and for any
    network whose breakpoints are in the braid arrangement, e.g. :func:`max_n`).  That
    assumption is verified first (:func:`_bends_off_arrangement`, exactly); where it
    cannot be, ``ok`` is False and ``reason`` says why (it is then no proof either way).

    When the network is exactly symmetric (:func:`is_symmetric`) only the cone
    ``u_1 >= ... >= u_n`` is checked (max is symmetric too); otherwise all n! cones.

    Example:
        >>> from relulab.construct import max_n
        >>> certify_max(max_n(4), 4).ok
        True
    """
    if net.input_dim != n or net.output_dim != 1:
        raise ConstructionError(f"certify_max: need a network R^{n} -> R, got {net!r}")
    pts = points or lattice_points(n)
    normals: set[Point] = set()
    for v in pts:
        for w in pts:
            d = tuple(a - b for a, b in zip(v, w, strict=True))
            if any(d):
                g = math.gcd(*d)
                d = tuple(x // g for x in d)
                if tuple(-x for x in d) not in normals:
                    normals.add(d)
    base = _slice_vertices(n, normals)
    sym = is_symmetric(net, n) if use_symmetry is None else use_symmetry
    if use_symmetry and not is_symmetric(net, n):
        raise ConstructionError("certify_max: the network is not symmetric; use_symmetry=False")
    cand = {tuple(1 for _ in range(n)), tuple(-1 for _ in range(n))}
    perms = [tuple(range(n))] if sym else list(itertools.permutations(range(n)))
    cones = [[_permute_point(p, perm) for p in base] for perm in perms]
    why = _bends_off_arrangement(net, normals, cones)
    if why is not None:
        return MaxCertificate(n, False, math.factorial(n), 0, len(normals), None, sym, reason=why)
    for pts in cones:
        cand.update(pts)
    X = np.array(sorted(cand), dtype=object)
    Y = ExactEvaluator(net)(X)[:, 0]
    bad = None
    for x, y in zip(X, Y, strict=True):
        if y != max(x):
            bad = tuple(Fraction(int(v)) for v in x)
            break
    return MaxCertificate(n, bad is None, math.factorial(n), len(X), len(normals), bad, sym)
