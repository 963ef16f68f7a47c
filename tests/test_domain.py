"""Domains: membership, sampling, bounding boxes, conversions, refusals."""

from __future__ import annotations

import numpy as np
import pytest

from relulab.domain import Box, DomainError, Polytope, as_domain


def test_box_membership_sampling_and_polytope(rng):
    B = Box([-1, 0, 2], [1, 0.5, 3])
    X = B.sample(1000, rng)
    assert X.shape == (1000, 3)
    assert B.contains(X).all()
    P = B.to_polytope()
    assert P.contains(X).all()
    outside = X + np.array([2.5, 0, 0])
    assert not B.contains(outside).any() and not P.contains(outside).any()
    bb = P.bounding_box()
    assert np.allclose(bb.lo, B.lo) and np.allclose(bb.hi, B.hi)
    assert B.vertices().shape == (8, 3)
    assert P.contains(B.vertices()).all()


def test_box_split():
    a, b = Box([0, 0], [2, 4]).split(1)
    assert a == Box([0, 0], [2, 2]) and b == Box([0, 2], [2, 4])


def test_polytope_triangle(rng):
    P = Polytope([[1, 1], [-1, 0], [0, -1]], [1, 0, 0])
    X = P.sample(500, rng)
    assert P.contains(X).all()
    assert (X.sum(axis=1) <= 1 + 1e-12).all()
    # the uniform distribution on the triangle has mean (1/3, 1/3)
    assert np.allclose(X.mean(axis=0), [1 / 3, 1 / 3], atol=0.05)
    bb = P.bounding_box()
    assert np.allclose(bb.lo, [0, 0]) and np.allclose(bb.hi, [1, 1])
    c, r = P.chebyshev_center()
    assert r == pytest.approx(1 / (2 + np.sqrt(2)))


def test_thin_polytope_sampling_falls_back_to_hit_and_run(rng):
    # a sliver along the diagonal fills a tiny part of its bounding box
    A = [[1, -1], [-1, 1], [1, 0], [-1, 0], [0, 1], [0, -1]]
    P = Polytope(A, [1e-4, 1e-4, 1, 1, 1, 1])
    X = P.sample(200, rng)
    assert P.contains(X).all()


def test_whole_space_is_unbounded():
    W = Polytope.whole_space(3)
    assert W.contains(np.full(3, 1e9))
    assert not W.is_bounded
    with pytest.raises(DomainError, match="unbounded"):
        W.bounding_box()


@pytest.mark.parametrize(
    "make,message",
    [
        (lambda: Box([0, 1], [1, 0]), "empty box: coordinate 1"),
        (lambda: Box([0, np.nan], [1, 1]), "finite"),
        (lambda: Box([0, 0], [1, np.inf]), "finite"),
        (lambda: Box([0], [1, 2]), "different sizes"),
        (lambda: Box([], []), "no coordinates"),
        (lambda: Polytope([[1, 0], [-1, 0]], [0, -1]), "empty polytope"),
        (lambda: Polytope([[1, 0]], [0, 1]), "rows in A"),
        (lambda: Polytope([[np.nan, 0]], [1]), "finite"),
        (lambda: Polytope([[0, 0]], [-1]), "empty polytope: row 0"),
        (lambda: as_domain("box"), "not a domain"),
        (lambda: as_domain(Box([0], [1]), dim=2), "dimension 1"),
    ],
)
def test_bad_domains_are_refused(make, message):
    with pytest.raises(DomainError, match=message):
        make()


def test_polytope_rows_with_small_coefficients_keep_their_set():
    # HiGHS drops matrix entries below 1e-9: x <= -1e10 written 1e-10 x <= -1 read as empty,
    # and |x| <= 10 written with rows of 1e-10 as unbounded; contains() used its absolute
    # tolerance on the unscaled rows and let x = 20 in
    P = Polytope([[1e-10]], [-1.0])
    assert P.contains([-2e10]) and not P.contains([-0.5e10])
    Q = Polytope([[1e-10], [-1e-10]], [1e-9, 1e-9])
    box = Q.bounding_box()
    # (proven bounds: outward by at most their rounding)
    assert -10.0 - 1e-12 < box.lo[0] <= -10.0 and 10.0 <= box.hi[0] < 10.0 + 1e-12  # tol: rounding
    assert Q.contains([9.99]) and not Q.contains([20.0])
    # the same set as given, exactly: each stored row is the given one times a power of two
    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 3)) * 10.0 ** rng.integers(-12, 12, size=(6, 1))
    b = rng.normal(size=6) * 10.0 ** rng.integers(-12, 12, size=6) + np.abs(A).sum(axis=1)
    R = Polytope(A, b)
    ratio = R.A / A
    assert np.all(ratio == ratio[:, :1]) and np.array_equal(R.b / b, ratio[:, 0])
    assert np.all(np.log2(ratio[:, 0]) == np.round(np.log2(ratio[:, 0])))


def test_boxes_with_huge_finite_bounds_sample_split_and_centre_inside():
    # hi - lo and lo + hi overflowed: samples were inf (outside the box), the centre of
    # [1e308, 1.7e308] was inf and split said "bounds must be finite"
    B = Box([-1e308, 1e308], [1e308, 1.7e308])
    X = B.sample(200, 0)
    assert np.isfinite(X).all() and B.contains(X, tol=0.0).all()
    assert np.ptp(X[:, 0]) > 1e307  # spread over the box, not stuck at a point
    c = B.center
    assert c.tolist() == [0.0, 1.35e308]
    left, right = B.split(1)
    assert left.hi[1] == right.lo[1] == 1.35e308
    # ordinary boxes are unchanged: the same draws as lo + r (hi - lo)
    C = Box([-1, 0], [1, 3])
    assert np.array_equal(C.sample(5, 1), C.lo + np.random.default_rng(1).random((5, 2)) * (C.hi - C.lo))
    tiny = Box([5e-324], [5e-324])
    assert tiny.center.tolist() == [5e-324]


def test_polytope_rows_with_entries_the_lp_solver_drops_are_refused():
    # HiGHS reads an entry of at most 1e-9 of its row's largest as 0, a different set:
    # x + 1e12 y <= 1 with x, y >= 0 (bounded) read as unbounded along x, and
    # x0 >= -1e-9 x1 with 0 <= x1 <= 1e9 read as x0 >= 0, so the bounding box, the bounds
    # and a maximum of -x0 (1, at (-1, 1e9)) came out as 0 and 2e-6, "optimal"
    with pytest.raises(DomainError, match="polytope row 2: its entry 0 is 1e-12 of the row's largest"):
        Polytope([[-1.0, 0.0], [0.0, -1.0], [1.0, 1e12]], [0.0, 0.0, 1.0])
    with pytest.raises(DomainError, match="polytope row 2: its entry 1 is 1e-09"):
        Polytope([[0.0, -1.0], [0.0, 1.0], [-1.0, -1e-9], [1.0, 0.0]], [0.0, 1e9, 0.0, 1.0])
    # an entry just above the cut is kept, and read as given: min x0 is -1.1e-9 * 1e9
    P = Polytope([[0.0, -1.0], [0.0, 1.0], [-1.0, -1.1e-9], [1.0, 0.0]], [0.0, 1e9, 0.0, 1.0])
    assert P.bounding_box().lo[0] <= -1.1 + 1e-9  # tol: LP rounding, proven outward
    # a truly unbounded one says so plainly
    with pytest.raises(DomainError, match=r"unbounded along coordinate 0$"):
        Polytope([[-1.0, 0.0], [0.0, -1.0], [0.0, 1.0]], [0.0, 0.0, 1.0]).bounding_box()


@pytest.mark.parametrize("far", [None, 1e8, 1e12, 1e19])
@pytest.mark.parametrize("gap", [1e-8, 3e-8, 1e-7])
def test_an_empty_polytope_is_refused_whatever_an_unrelated_row_bounds(far, gap):
    # x0 >= 0 and x0 <= -gap: empty.  A redundant x1 <= 1e8 once scaled the emptiness
    # tolerance of every row to 0.1, and the empty set was accepted
    A = [[-1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, -1.0]]
    b = [0.0, -gap, 1.0, 0.0]
    if far is not None:
        A, b = A + [[0.0, 1.0]], b + [far]
    with pytest.raises(DomainError, match="empty polytope"):
        Polytope(A, b)
    # and a thin non-empty one beside the same far row is kept
    P = Polytope([[-1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, -1.0]] + ([] if far is None else [[0.0, 1.0]]),
                 [0.0, gap, 1.0, 0.0] + ([] if far is None else [far]))
    x, _ = P.chebyshev_center()
    assert P.contains(x)
