"""max_n with two hidden layers from a polyhedral subdivision of the dilated simplex.

``max(x) = h_D(x)``, the support function of the simplex ``D = conv(e_1..e_n)``, and
``k max(x) = h_{kD}(x)``.  A *cell* ``conv(Z1 u Z2)`` of two pair-direction lattice
zonotopes ``Z = sum of k items`` (an item is a point ``e_i`` or a segment ``[e_i, e_j]``:
the :class:`~relulab.construct.PairTerm` items ``x_i`` and ``m_ij = max(x_i, x_j)``) has
the support function ``max(h_Z1, h_Z2) = h_Z2 + relu(h_Z1 - h_Z2)``: one second-layer
neuron on the structured first layer ``relu(x_i - x_j)``.  Every face of a cell is
``conv(F1 u F2)`` with ``F_i`` faces of ``Z_i`` (or one of them alone), again a cell.

The support function is a valuation, so for a polyhedral subdivision of ``kD`` into cells

    h_{kD} = sum over interior faces F of (-1)^(dim D - dim F) h_F

(a face is interior when it is not contained in a facet ``x_i = 0`` of ``kD``).  Hence a
subdivision of ``kD`` into cells gives ``max_n`` exactly with two hidden layers and the
structured first layer.  This module

* finds the interior faces of a subdivision given by its cells and returns the signed
  face terms (:func:`subdivision_terms`), each as ``(sign, F1 items, F2 items | None)``;
* evaluates the signed sum exactly (:func:`eval_terms`) and builds the network
  (:func:`terms_network`) to be certified by :func:`~relulab.construct.certify_max_cones`;
* computes *regular* subdivisions of ``kD`` from heights on its lattice points
  (:func:`regular_subdivision`) and checks whether every cell is a cell in the sense
  above (:func:`as_cell`), which is how :func:`search_subdivision` looks for one.

The face lattice is computed from facets found in floating point (scipy's Qhull) and then
re-derived exactly: every facet normal is an exact integer null vector of its vertices,
every face is an intersection of facets, and every face's decomposition into
``conv(F1 u F2)`` is checked exactly against its vertex set; the final identity is
checked by the exact cone certificate, not by the geometry code.

Example (the brief's n = 3 example: 3D = hexagon + three corner triangles):
    >>> hexagon = (("m", 0, 1), ("m", 0, 2), ("m", 1, 2))
    >>> cells = [(hexagon, hexagon)] + [((("x", i),) * 3, (("x", i), ("x", i), ("m", j, l)))
    ...          for i, j, l in ((0, 1, 2), (1, 0, 2), (2, 0, 1))]
    >>> terms = subdivision_terms(3, 3, cells)
    >>> sorted(s for s, _, _ in terms)        # 4 two-dim faces, 3 interior edges
    [-1, -1, -1, 1, 1, 1, 1]
    >>> from fractions import Fraction
    >>> eval_terms(terms, [Fraction(2), Fraction(7), Fraction(-1)])
    Fraction(21, 1)
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from ..network import Network
from .maxmin import ConstructionError

__all__ = ["item_vertices", "cell_faces", "subdivision_terms", "eval_terms",
           "terms_network", "lattice_points", "regular_subdivision", "as_cell", "search_subdivision"]

Items = tuple  # a lattice zonotope: a tuple of items ("x", i) / ("m", i, j)
Cell = tuple   # (Items, Items): conv(Z1 u Z2)


def item_vertices(z: Items, n: int) -> set[tuple[int, ...]]:
    """All sums of one endpoint per item (a superset of the zonotope's vertices, all of
    them lattice points of the zonotope).

    Example:
        >>> sorted(item_vertices((("m", 0, 1), ("x", 2)), 3))
        [(0, 1, 1), (1, 0, 1)]
    """
    choices = [[it[1]] if it[0] == "x" else [it[1], it[2]] for it in z]
    out = set()
    for pick in itertools.product(*choices):
        p = [0] * n
        for i in pick:
            p[i] += 1
        out.add(tuple(p))
    return out


def _face_items(z: Items, c: Sequence[Fraction]) -> tuple[Items, Fraction]:
    """The face of the zonotope ``z`` maximising ``c`` (as items) and the maximum."""
    out, top = [], Fraction(0)
    for it in z:
        if it[0] == "x":
            out.append(it)
            top += c[it[1]]
        else:
            i, j = it[1], it[2]
            if c[i] > c[j]:
                out.append(("x", i))
            elif c[j] > c[i]:
                out.append(("x", j))
            else:
                out.append(it)
            top += max(c[i], c[j])
    return tuple(sorted(out)), top


def _rank(P: np.ndarray) -> int:
    """Exact affine rank of integer points (rows), by fraction-free elimination."""
    if len(P) <= 1:
        return 0
    M = [[int(v) for v in row] for row in (P[1:] - P[0])]
    rank, cols = 0, len(M[0])
    for c in range(cols):
        piv = next((r for r in range(rank, len(M)) if M[r][c] != 0), None)
        if piv is None:
            continue
        M[rank], M[piv] = M[piv], M[rank]
        for r in range(len(M)):
            if r != rank and M[r][c] != 0:
                a, b = M[rank][c], M[r][c]
                M[r] = [a * x - b * y for x, y in zip(M[r], M[rank], strict=True)]
        rank += 1
    return rank


def _on_plane(P: np.ndarray, eq: np.ndarray) -> np.ndarray:
    """The integer points on Qhull's (float) facet plane; the exact plane is re-derived
    from them by :func:`_facet_normal` and the points re-selected exactly by the caller."""
    vals = P.astype(np.float64) @ eq[:-1] + eq[-1]
    return P[np.abs(vals) <= 1e-7 * (1.0 + np.abs(P).max())]  # tol: only a pre-filter, the plane is re-derived exactly


def _facet_normal(P: np.ndarray, inside: np.ndarray) -> tuple[tuple[int, ...], int]:
    """Exact integer normal ``a`` and offset ``b`` (``a.p <= b`` on the polytope, equality
    on the facet points ``P``) in the projected coordinates (last one dropped)."""
    import sympy

    D = sympy.Matrix((P[1:] - P[0]).tolist())
    ns = D.nullspace()
    if len(ns) != 1:
        raise ConstructionError("facet normal: the facet points do not span a hyperplane")
    v = ns[0]
    den = sympy.ilcm(*[sympy.fraction(x)[1] for x in v])
    a = [int(x * den) for x in v]
    g = int(np.gcd.reduce([abs(x) for x in a if x != 0]))
    a = [x // g for x in a]
    b = sum(x * int(y) for x, y in zip(a, P[0], strict=True))
    if any(sum(x * int(y) for x, y in zip(a, q, strict=True)) > b for q in inside):
        a, b = [-x for x in a], -b
    return tuple(a), b


def cell_faces(points: Sequence[tuple[int, ...]]) -> list[tuple[frozenset, int, tuple[Fraction, ...]]]:
    """Every non-empty face of ``conv(points)`` (integer points on a hyperplane ``sum = k``,
    full-dimensional there): ``(vertex set, dimension, functional)`` where the functional
    (on R^n, last coordinate 0) lies in the relative interior of the face's normal cone
    (the sum of the normals of the facets containing it; 0 for the polytope itself).

    Example:
        >>> fs = cell_faces([(2, 0, 0), (0, 2, 0), (0, 0, 2)])
        >>> sorted(d for _, d, _ in fs)
        [0, 0, 0, 1, 1, 1, 2]
    """
    from scipy.spatial import ConvexHull

    pts = np.array(sorted(set(points)), dtype=np.int64)
    n = pts.shape[1]
    proj = pts[:, :-1]
    dim = _rank(proj)
    if dim != n - 1:
        raise ConstructionError(f"cell_faces: the cell has dimension {dim}, not {n - 1}")
    if dim == 1:
        lo, hi = proj[:, 0].argmin(), proj[:, 0].argmax()
        facets = [((-1,), frozenset({tuple(pts[lo])})), ((1,), frozenset({tuple(pts[hi])}))]
    else:
        hull = ConvexHull(proj.astype(np.float64))
        facets, seen = [], set()
        for eq in hull.equations:
            a, b = _facet_normal(_on_plane(proj, eq), proj)
            if (a, b) in seen:
                continue
            seen.add((a, b))
            on = frozenset(tuple(pts[r]) for r in range(len(pts))
                           if sum(x * int(y) for x, y in zip(a, proj[r], strict=True)) == b)
            facets.append((a, on))
    verts = frozenset(v for _, on in facets for v in on)
    # faces = intersections of facets (closure), each with the set of facets containing it
    faces: dict[frozenset, set[int]] = {verts: set()}
    for _, on in facets:
        faces.setdefault(on, set())
    changed = True
    while changed:
        changed = False
        for F in list(faces):
            for _, on in facets:
                G = F & on
                if G and G not in faces:
                    faces[G] = set()
                    changed = True
    out = []
    for F in faces:
        normal = [Fraction(0)] * n
        for a, on in facets:
            if F <= on and F != verts:
                for i, x in enumerate(a):
                    normal[i] += x
        d = _rank(np.array(sorted(F), dtype=np.int64)[:, :-1])
        out.append((F, d, tuple(normal)))
    return out


def _vertex_set(z: Items, n: int) -> frozenset:
    pts = item_vertices(z, n)
    return frozenset(pts)


def subdivision_terms(n: int, k: int, cells: Sequence[Cell]) -> list[tuple[int, Items, Items | None]]:
    """The signed face terms of a subdivision of ``kD`` (``D`` the simplex in R^n) into
    cells ``conv(Z1 u Z2)``: one ``(sign, F1, F2)`` per interior face ``F = conv(F1 u F2)``
    (``F2`` None when ``F`` is a face of one zonotope only), sign ``(-1)^(n-1-dim F)``.
    The caller's cells must form a subdivision: this is checked only through the volume
    (cells' volumes sum to the simplex's, exactly) and the final exact identity
    (:func:`eval_terms`, the cone certificate).

    Example:
        >>> terms = subdivision_terms(4, 1, [((("m", 0, 1),), (("m", 2, 3),))])
        >>> terms
        [(1, (('m', 0, 1),), (('m', 2, 3),))]
    """
    seen: dict[frozenset, tuple[int, Items, Items | None]] = {}
    for z1, z2 in cells:
        if len(z1) != k or len(z2) != k:
            raise ConstructionError(f"subdivision_terms: every zonotope needs {k} items, got {z1}, {z2}")
        pts = _vertex_set(z1, n) | _vertex_set(z2, n)
        for F, d, c in cell_faces(sorted(pts)):
            if any(all(v[i] == 0 for v in F) for i in range(n)):
                continue  # on the boundary of kD
            f1, t1 = _face_items(z1, c)
            f2, t2 = _face_items(z2, c)
            top = max(t1, t2)
            parts = [f for f, t in ((f1, t1), (f2, t2)) if t == top]
            if len(parts) == 2 and parts[0] == parts[1]:
                parts = parts[:1]
            got = frozenset().union(*(_vertex_set(p, n) for p in parts))
            # the face's vertices must be among the parts' points, and the parts inside F
            if not F <= got or not all(_in_face(q, F, c) for q in got):
                raise ConstructionError(f"subdivision_terms: face {sorted(F)} is not conv(F1 u F2)")
            term = (1 if (n - 1 - d) % 2 == 0 else -1, parts[0], parts[1] if len(parts) == 2 else None)
            if F in seen and seen[F][0] != term[0]:
                raise ConstructionError("subdivision_terms: one face with two dimensions")
            seen.setdefault(F, term)
    return list(seen.values())


def _in_face(q: tuple[int, ...], F: frozenset, c: Sequence[Fraction]) -> bool:
    v = next(iter(F))
    return sum(ci * qi for ci, qi in zip(c, q, strict=True)) == sum(ci * vi for ci, vi in zip(c, v, strict=True))


def _h(z: Items, x: Sequence[Fraction]) -> Fraction:
    return sum((x[it[1]] if it[0] == "x" else max(x[it[1]], x[it[2]]) for it in z), Fraction(0))


def eval_terms(terms: Sequence[tuple[int, Items, Items | None]], x: Sequence[object]) -> Fraction:
    """``sum sign * max(h_F1(x), h_F2(x))`` exactly (``= k max(x)`` for a subdivision of kD).

    Example:
        >>> eval_terms([(1, (("m", 0, 1),), (("m", 2, 3),))], [1, 4, 2, 3])
        Fraction(4, 1)
    """
    xs = [Fraction(v) for v in x]
    tot = Fraction(0)
    for s, f1, f2 in terms:
        tot += s * (_h(f1, xs) if f2 is None else max(_h(f1, xs), _h(f2, xs)))
    return tot


def _pair_form(z: Items, n: int) -> tuple[np.ndarray, np.ndarray]:
    """h_Z = v.x + sum C[i, j] relu(x_i - x_j) (i != j), integer (v, C)."""
    v = np.zeros(n, dtype=np.int64)
    C = np.zeros((n, n), dtype=np.int64)
    for it in z:
        if it[0] == "x":
            v[it[1]] += 1
        else:  # max(x_i, x_j) = x_j + relu(x_i - x_j)
            v[it[2]] += 1
            C[it[1], it[2]] += 1
    return v, C


def terms_network(n: int, k: int, terms: Sequence[tuple[int, Items, Items | None]]) -> Network:
    """The exact two-hidden-layer network of signed face terms, computing
    ``(1/k) sum sign max(h_F1, h_F2)``.  First layer: ``relu(x_i - x_j)`` for all ordered
    pairs and ``relu(+-sum x)``; second layer: ``relu(h_F1 - h_F2)`` per two-part term and
    ``relu(+-L)`` for the first-layer remainder ``L`` (the ``h_F2`` and one-part terms),
    using ``x_i = (sum x)/n + (1/n) sum_j (relu(x_i - x_j) - relu(x_j - x_i))``.

    Example:
        >>> net = terms_network(4, 1, [(1, (("m", 0, 1),), (("m", 2, 3),))])
        >>> net.widths, net([1, 4, 2, 3])[0]
        ((14, 3), Fraction(4, 1))
    """
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
    col = {p: r for r, p in enumerate(pairs)}
    F1 = len(pairs) + 2
    W1 = np.zeros((F1, n), dtype=object)
    for r, (i, j) in enumerate(pairs):
        W1[r, i], W1[r, j] = Fraction(1), Fraction(-1)
    W1[-2, :], W1[-1, :] = Fraction(1), Fraction(-1)
    W1 = np.vectorize(Fraction, otypes=[object])(W1)

    def row(v: np.ndarray, C: np.ndarray) -> np.ndarray:
        """A first-layer combination equal to v.x + sum C_ij relu(x_i - x_j)."""
        out = np.array([Fraction(0)] * F1, dtype=object)
        for (i, j), r in col.items():
            out[r] += int(C[i, j])
        tot = int(v.sum())
        out[-2] += Fraction(tot, n)
        out[-1] -= Fraction(tot, n)
        for i in range(n):
            if v[i]:
                for j in range(n):
                    if j != i:
                        out[col[(i, j)]] += Fraction(int(v[i]), n)
                        out[col[(j, i)]] -= Fraction(int(v[i]), n)
        return out

    rows, outs = [], []
    rest_v = np.zeros(n, dtype=np.int64)
    rest_C = np.zeros((n, n), dtype=np.int64)
    for s, f1, f2 in terms:
        v1, C1 = _pair_form(f1, n)
        if f2 is None:
            rest_v += s * v1
            rest_C += s * C1
            continue
        v2, C2 = _pair_form(f2, n)
        rows.append(row(v1 - v2, C1 - C2))
        outs.append(Fraction(s, k))
        rest_v += s * v2
        rest_C += s * C2
    L = row(rest_v, rest_C)
    rows += [L, -L]
    outs += [Fraction(1, k), Fraction(-1, k)]
    W2 = np.array(rows, dtype=object)
    W3 = np.array([outs], dtype=object)
    zeros = [np.full(F1, Fraction(0), dtype=object), np.full(len(rows), Fraction(0), dtype=object),
             np.full(1, Fraction(0), dtype=object)]
    return Network([W1, W2, W3], zeros, exact=True)


# ------------------------------------------------------------------ regular subdivisions
def lattice_points(n: int, k: int) -> list[tuple[int, ...]]:
    """The lattice points of ``kD`` in R^n (compositions of k into n parts).

    Example:
        >>> len(lattice_points(3, 3)), len(lattice_points(5, 3))
        (10, 35)
    """
    out = []
    for c in itertools.combinations(range(k + n - 1), n - 1):
        parts, prev = [], -1
        for b in c:
            parts.append(b - prev - 1)
            prev = b
        parts.append(k + n - 2 - prev)
        out.append(tuple(parts))
    return out


def regular_subdivision(points: Sequence[tuple[int, ...]], heights: Sequence[int]) -> list[frozenset]:
    """The cells (as point sets, every given point on the cell's lower lifted facet) of the
    regular subdivision of ``conv(points)`` by integer ``heights``, exactly: lower facets
    of the lifted hull found by Qhull, each facet's hyperplane re-derived in integers.

    Example:
        >>> pts = lattice_points(3, 2)
        >>> cells = regular_subdivision(pts, [sum(v * v for v in p) for p in pts])
        >>> sorted(len(c) for c in cells)          # 3 corner triangles + the middle one
        [3, 3, 3, 3]
    """
    from scipy.spatial import ConvexHull

    pts = np.array(points, dtype=np.int64)
    lifted = np.column_stack([pts[:, :-1], np.asarray(heights, dtype=np.int64)])
    hull = ConvexHull(lifted.astype(np.float64))
    cells, seen = [], set()
    for eq in hull.equations:
        if eq[-2] >= -1e-9:  # tol: Qhull float; a lower facet has a negative height component
            continue
        a, b = _facet_normal(_on_plane(lifted, eq), lifted)
        if a[-1] >= 0 or (a, b) in seen:
            continue
        seen.add((a, b))
        on = frozenset(tuple(int(v) for v in pts[r]) for r in range(len(pts))
                       if sum(x * int(y) for x, y in zip(a, lifted[r], strict=True)) == b)
        cells.append(on)
    return cells


def _zonotopes_inside(n: int, k: int, cell: frozenset) -> list[Items]:
    """Item zonotopes with k items whose lattice points all lie in the cell's point set
    (used for cells of a regular subdivision whose point set holds every lattice point
    of the cell; a zonotope in the cell has all its item sums among them)."""
    items = [("x", i) for i in range(n)] + [("m", i, j) for i in range(n) for j in range(i + 1, n)]
    out = []
    for z in itertools.combinations_with_replacement(items, k):
        if item_vertices(z, n) <= cell:
            out.append(z)
    return out


def as_cell(n: int, k: int, cell: frozenset, verts: frozenset | None = None) -> Cell | None:
    """Two item zonotopes with ``conv(Z1 u Z2) = conv(cell)`` (every point of Z1, Z2 in the
    cell's point set and every vertex among their item sums), or None.

    Example:
        >>> as_cell(4, 1, frozenset({(1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1)}))
        ((('m', 0, 1),), (('m', 2, 3),))
    """
    if verts is None:
        verts = frozenset(v for F, d, _ in cell_faces(sorted(cell)) if d == 0 for v in F)
    zs = _zonotopes_inside(n, k, cell)
    pts = {z: item_vertices(z, n) & verts for z in zs}
    zs = [z for z in zs if pts[z]]
    zs.sort(key=lambda z: -len(pts[z]))
    for a, z1 in enumerate(zs):
        need = verts - pts[z1]
        if not need:
            return (z1, z1)
        for z2 in zs[a:]:
            if need <= pts[z2]:
                return (z1, z2)
    return None


def search_subdivision(n: int, k: int, height_rows: Sequence[Sequence[int]]) -> tuple[list[Cell], list] | None:
    """Try symmetric height functions: heights ``h(p) = sum_r w_r * f_r(p)`` given directly
    as one height vector per row; the first whose regular subdivision of ``kD`` has only
    cells (:func:`as_cell`) is returned as ``(cells, heights)``, else None.

    Example:
        >>> pts = lattice_points(3, 3)
        >>> found = search_subdivision(3, 3, [[sum(v * v for v in p) for p in pts]])
        >>> found is not None
        True
    """
    pts = lattice_points(n, k)
    for heights in height_rows:
        cells = regular_subdivision(pts, heights)
        out = []
        for cell in cells:
            c = as_cell(n, k, cell)
            if c is None:
                break
            out.append(c)
        else:
            return out, list(heights)
    return None
