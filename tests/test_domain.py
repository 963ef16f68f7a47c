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
