"""max_n with two hidden layers from subdivisions of the dilated simplex kD into cells
conv(Z1 u Z2) (relulab.construct.maxn_subdiv): the polytope route of issue 22, item 1.

Claims tested:
1. The valuation formula h_{kD} = sum over interior faces (-1)^(n-1-dim F) h_F turns a
   subdivision into cells into an exact two-hidden-layer max_n with the structured first
   layer: n = 3 (3D = hexagon + 3 corner triangles), n = 4 (D itself is one cell), and
   every symmetric regular subdivision of kD (k <= 3, n = 3, 4) found by a height search;
   each network certified exactly on all n! ordering cones.
2. Does kD_4 (n = 5) have a subdivision into lattice cells (Z1, Z2 sums of k items)?
   Searched as an exact-cover integer program over every full-dimensional lattice cell
   (one variable per cell or per cell orbit, one row per random point of kD that must be
   covered exactly once): a dissection would satisfy every row, so "infeasible" (HiGHS,
   float64) means there is none.  Control: 2D_3 (n = 4) is feasible.  k = 2: all cells, and
   all cells plus the Minkowski sums of two faces of D with <= 4 vertices; k = 3 (``--full``): cells invariant
   under S_5 or under the cyclic group Z_5 (the unrestricted k = 3 program, 90,005
   cells, did not finish in 400 s of HiGHS and is not run here); and kD_4 coned from its
   barycentre (k = 5): the facet tiled by lattice zonotopes and pyramids over them.

Writes experiments/results/maxn_subdiv.json.

Run:  python experiments/maxn_subdiv.py [--full]
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

import numpy as np

from relulab.construct import certify_max_cones
from relulab.construct.maxn_subdiv import (
    as_cell,
    item_vertices,
    lattice_points,
    regular_subdivision,
    subdivision_terms,
    terms_network,
)

ROOT = Path(__file__).resolve().parents[1]


def certify(n: int, k: int, cells: list) -> dict:
    terms = subdivision_terms(n, k, cells)
    net = terms_network(n, k, terms)
    cert = certify_max_cones(net, n, use_symmetry=False)
    return {"n": n, "k": k, "cells": len(cells), "face_terms": len(terms),
            "widths": list(net.widths), "certificate": cert.status, "cones": cert.cones_checked}


def symmetric_heights(n: int, k: int, lo: int = -4, hi: int = 4):
    """Every S_n-invariant integer height function on the lattice points of kD with values
    in [lo, hi] (one value per sorted composition; the first type fixed at 0)."""
    pts = lattice_points(n, k)
    types = sorted({tuple(sorted(p, reverse=True)) for p in pts})
    for hs in itertools.product(range(lo, hi + 1), repeat=len(types) - 1):
        h = dict(zip(types, (0,) + hs, strict=True))
        yield [h[tuple(sorted(p, reverse=True))] for p in pts]


def regular_search(n: int, k: int) -> dict:
    pts = lattice_points(n, k)
    tried = 0
    for heights in symmetric_heights(n, k):
        try:
            cells = regular_subdivision(pts, heights)
        except Exception:  # a flat lift (all points coplanar): no subdivision to test
            continue
        tried += 1
        found = [as_cell(n, k, c) for c in cells]
        if all(c is not None for c in found) and len(found) > 1:
            return {**certify(n, k, found), "heights_tried": tried, "heights": heights}
    return {"n": n, "k": k, "heights_tried": tried, "found": False}


def _perm_points(P, g, n):
    return frozenset(tuple(p[g.index(i)] for i in range(n)) for p in P)


def exact_cover(n: int, k: int, group: str, samples: int, time_limit: float, face_sums: bool = False) -> dict:
    """The exact-cover program over full-dimensional lattice cells (orbits under the group);
    ``face_sums`` (k = 2, trivial group) also offers the Minkowski sums F + G of two faces of
    D with at most 4 vertices each (two-neuron support functions, not cells)."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix
    from scipy.spatial import ConvexHull

    t0 = time.time()
    G = {"S": list(itertools.permutations(range(n))),
         "Z": [tuple((i + s) % n for i in range(n)) for s in range(n)],
         "1": [tuple(range(n))]}[group]
    items = [("x", i) for i in range(n)] + [("m", i, j) for i in range(n) for j in range(i + 1, n)]
    zs = list(itertools.combinations_with_replacement(items, k))
    V = {z: frozenset(item_vertices(z, n)) for z in zs}
    orbits: dict = {}
    for a, z1 in enumerate(zs):
        for z2 in zs[a:]:
            P = np.array(sorted(V[z1] | V[z2]))
            if len(P) < n or np.linalg.matrix_rank((P[1:] - P[0]).astype(float)) < n - 1:
                continue
            key = frozenset(map(tuple, P[ConvexHull(P[:, :-1].astype(float)).vertices]))
            can = min(tuple(sorted(_perm_points(key, g, n))) for g in G)
            orbits.setdefault(can, (z1, z2))
    if face_sums:
        E = np.eye(n, dtype=np.int64)
        faces = [f for r in range(1, 5) for f in itertools.combinations(range(n), r)]
        for F, H in itertools.combinations_with_replacement(faces, 2):
            P = np.array(sorted({tuple(E[a] + E[b]) for a in F for b in H}))
            if len(P) < n or np.linalg.matrix_rank((P[1:] - P[0]).astype(float)) < n - 1:
                continue
            key = frozenset(map(tuple, P[ConvexHull(P[:, :-1].astype(float)).vertices]))
            orbits.setdefault(tuple(sorted(key)), ("sum", F, H))
    X = np.random.default_rng(0).dirichlet(np.ones(n), size=samples) * k
    rows, cols, vals = [], [], []
    for c, can in enumerate(orbits):
        cover = np.zeros(samples)
        for m in {_perm_points(frozenset(can), g, n) for g in G}:
            eq = ConvexHull(np.array(sorted(m))[:, :-1].astype(float)).equations
            cover += ((X[:, :-1] @ eq[:, :-1].T + eq[:, -1]) <= -1e-9).all(axis=1)
        nz = np.flatnonzero(cover)
        rows += nz.tolist()
        cols += [c] * len(nz)
        vals += cover[nz].tolist()
    M = coo_matrix((vals, (rows, cols)), shape=(samples, len(orbits))).tocsr()
    res = milp(c=np.ones(len(orbits)), constraints=LinearConstraint(M, 1, 1),
               integrality=np.ones(len(orbits)), bounds=Bounds(0, 1),
               options={"time_limit": time_limit})
    verdict = {2: "infeasible (HiGHS)", 0: "feasible"}.get(res.status, f"no verdict ({res.message})")
    return {"n": n, "k": k, "group": group, "face_sums": face_sums, "cell_orbits": len(orbits),
            "sample_points": samples,
            "verdict": verdict, "seconds": round(time.time() - t0, 1)}


def cone_cover(samples: int = 4000, time_limit: float = 240) -> dict:
    """n = 5 as a cone from the barycentre c = (1,1,1,1,1) of 5D_4: a cell conv(Z u {c}) for a
    3-dim lattice zonotope Z in a facet, or conv(Z u [q, c]) for a 2-dim one and an apex
    q = c + e_i - e_j in the facet x_j = 0 (the only facet points q with c - q a pair
    direction).  Such a subdivision exists iff the facet 5T (x_4 = 0) is tiled by those 3-dim
    zonotopes and pyramids conv(Z u {q}); decided as an exact-cover program as above."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix
    from scipy.spatial import ConvexHull

    t0 = time.time()
    K, m = 5, 4
    items = [("x", i) for i in range(m)] + [("m", i, j) for i in range(m) for j in range(i + 1, m)]
    apexes = [tuple(1 + (a == i) for a in range(m)) for i in range(m)]

    def rank(P) -> int:
        A = np.array(sorted(P))
        return int(np.linalg.matrix_rank((A[1:] - A[0]).astype(float))) if len(A) > 1 else 0

    tiles: set = set()
    for z in itertools.combinations_with_replacement(items, K):
        V = frozenset(item_vertices(z, m))
        r = rank(V)
        if r == 3:
            tiles.add(V)
        elif r == 2:
            tiles.update(V | {q} for q in apexes if rank(V | {q}) == 3)
    tiles_l = list(tiles)
    X = np.random.default_rng(0).dirichlet(np.ones(m), size=samples) * K
    rows, cols = [], []
    for c, P in enumerate(tiles_l):
        eq = ConvexHull(np.array(sorted(P))[:, :-1].astype(float)).equations
        nz = np.flatnonzero(((X[:, :-1] @ eq[:, :-1].T + eq[:, -1]) <= -1e-9).all(axis=1))
        rows += nz.tolist()
        cols += [c] * len(nz)
    M = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(samples, len(tiles_l))).tocsr()
    res = milp(c=np.ones(len(tiles_l)), constraints=LinearConstraint(M, 1, 1),
               integrality=np.ones(len(tiles_l)), bounds=Bounds(0, 1), options={"time_limit": time_limit})
    verdict = {2: "infeasible (HiGHS)", 0: "feasible"}.get(res.status, f"no verdict ({res.message})")
    return {"n": 5, "k": 5, "search": "cone from the barycentre: tiles of the facet 5T", "tiles": len(tiles_l),
            "sample_points": samples, "verdict": verdict, "seconds": round(time.time() - t0, 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", action="store_true", help="also the k = 3 programs for n = 5 (minutes)")
    a = ap.parse_args()
    out: dict = {"explicit": [], "regular_search": [], "exact_cover": []}
    hexagon = (("m", 0, 1), ("m", 0, 2), ("m", 1, 2))
    n3 = [(hexagon, hexagon)] + [((("x", i),) * 3, (("x", i), ("x", i), ("m", j, l)))
                                 for i, j, l in ((0, 1, 2), (1, 0, 2), (2, 0, 1))]
    out["explicit"].append({"name": "3D_2 = hexagon + 3 corner triangles", **certify(3, 3, n3)})
    out["explicit"].append({"name": "D_3 = conv([e0,e1] u [e2,e3])",
                            **certify(4, 1, [((("m", 0, 1),), (("m", 2, 3),))])})
    for n, k in ((3, 2), (3, 3), (4, 2), (4, 3)):
        t0 = time.time()
        out["regular_search"].append({**regular_search(n, k), "seconds": round(time.time() - t0, 1)})
    out["exact_cover"].append(exact_cover(4, 2, "1", 2000, 60))  # control: 2D_3 has dissections
    out["exact_cover"].append(exact_cover(5, 2, "1", 3000, 200))
    out["exact_cover"].append(exact_cover(5, 2, "1", 4000, 200, face_sums=True))
    out["exact_cover"].append(cone_cover())
    if a.full:
        out["exact_cover"].append(exact_cover(5, 3, "S", 3000, 200))
        out["exact_cover"].append(exact_cover(5, 3, "Z", 2500, 300))
    for sec in out.values():
        for row in sec:
            print({k: v for k, v in row.items() if k != "heights"})
    path = ROOT / "experiments" / "results" / "maxn_subdiv.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
