"""max_n from subdivisions of kD into cells conv(Z1 u Z2) (construct.maxn_subdiv).

The identities are checked independently of the face computation: exact evaluation
against k * max on random rational vectors with ties, and the exact cone certificate on
every ordering cone."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction

import pytest

from relulab.construct import certify_max_cones
from relulab.construct.maxmin import ConstructionError
from relulab.construct.maxn_subdiv import (
    as_cell,
    cell_faces,
    eval_terms,
    item_vertices,
    lattice_points,
    regular_subdivision,
    subdivision_terms,
    terms_network,
)

HEX = (("m", 0, 1), ("m", 0, 2), ("m", 1, 2))
N3_CELLS = [(HEX, HEX)] + [((("x", i),) * 3, (("x", i), ("x", i), ("m", j, l)))
                           for i, j, l in ((0, 1, 2), (1, 0, 2), (2, 0, 1))]


def _vectors(n: int, count: int, seed: int) -> list[list[Fraction]]:
    rnd = random.Random(seed)
    out = []
    for _ in range(count):
        x = [Fraction(rnd.randint(-20, 20), rnd.randint(1, 6)) for _ in range(n)]
        if rnd.random() < 0.4:  # ties
            i, j = rnd.sample(range(n), 2)
            x[i] = x[j]
        out.append(x)
    return out


def _symmetric_subdivision(n: int, k: int):
    pts = lattice_points(n, k)
    types = sorted({tuple(sorted(p, reverse=True)) for p in pts})
    for hs in itertools.product(range(-4, 5), repeat=len(types) - 1):
        h = dict(zip(types, (0,) + hs, strict=True))
        try:
            cells = regular_subdivision(pts, [h[tuple(sorted(p, reverse=True))] for p in pts])
        except Exception:
            continue
        found = [as_cell(n, k, c) for c in cells]
        if len(found) > 1 and all(c is not None for c in found):
            return found
    return None


def test_lattice_points_and_vertices():
    assert len(lattice_points(4, 3)) == 20  # C(6, 3)
    assert all(sum(p) == 3 for p in lattice_points(4, 3))
    assert item_vertices((("m", 0, 1), ("m", 0, 1)), 2) == {(2, 0), (1, 1), (0, 2)}


def test_faces_of_a_square_pyramid():
    # conv([e0,e1] + [e2,e3] u {2 e0}) in 2D_3: 5 vertices, 8 edges, 5 facets, itself
    pts = item_vertices((("m", 0, 1), ("m", 2, 3)), 4) | item_vertices((("x", 0), ("x", 0)), 4)
    dims = sorted(d for _, d, _ in cell_faces(sorted(pts)))
    assert [dims.count(d) for d in range(4)] == [5, 8, 5, 1]


def test_n3_hexagon_subdivision_is_max3():
    terms = subdivision_terms(3, 3, N3_CELLS)
    assert sorted(s for s, _, _ in terms) == [-1, -1, -1, 1, 1, 1, 1]
    for x in _vectors(3, 300, 1):
        assert eval_terms(terms, x) == 3 * max(x)
    net = terms_network(3, 3, terms)
    for x in _vectors(3, 200, 2):
        assert net(x)[0] == max(x)
    assert certify_max_cones(net, 3, use_symmetry=False).status == "certified"


def test_missing_cell_is_refuted():
    terms = subdivision_terms(3, 3, N3_CELLS[:-1])  # the corner at e2 is missing
    net = terms_network(3, 3, terms)
    assert certify_max_cones(net, 3, use_symmetry=False).status == "failed"
    assert any(net(x)[0] != max(x) for x in _vectors(3, 50, 3))


@pytest.mark.parametrize("n,k", [(3, 2), (4, 2), (4, 3)])
def test_regular_subdivisions_give_certified_max(n, k):
    cells = _symmetric_subdivision(n, k)
    assert cells is not None
    terms = subdivision_terms(n, k, cells)
    for x in _vectors(n, 200, n * 10 + k):
        assert eval_terms(terms, x) == k * max(x)
    net = terms_network(n, k, terms)
    assert all(net(x)[0] == max(x) for x in _vectors(n, 100, k))
    assert certify_max_cones(net, n, use_symmetry=False).status == "certified"


def test_as_cell_refuses_the_4_simplex():
    # D_4 has 5 vertices; a cell conv(Z1 u Z2) with lattice zonotopes in D_4 has at most 4
    assert as_cell(5, 1, frozenset(lattice_points(5, 1))) is None


def test_bad_input():
    with pytest.raises(ConstructionError):
        subdivision_terms(3, 2, N3_CELLS)  # the cells have 3 items, not 2
    with pytest.raises(ConstructionError):
        cell_faces([(1, 0, 0), (0, 1, 0)])  # not full-dimensional
