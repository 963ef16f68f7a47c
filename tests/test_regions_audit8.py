"""Regions audit 8 (aud_reg8): polytope domains under time and memory limits, the CLI
picture under a time limit, hit-and-run points inside their polytope, an unbounded
polytope whose Chebyshev LP failed."""

import json

import numpy as np
import pytest
from conftest import run_cli

from relulab import Network, Polytope, regions
from relulab.io import save_model
from relulab.limits import ResourceLimitError, memory_limit


def _net_and_polytope(d: int, m: int):
    rng = np.random.default_rng(2)
    net = Network([rng.normal(size=(30, d)), rng.normal(size=(1, 30))], [rng.normal(size=30), rng.normal(size=1)])
    return net, Polytope(rng.normal(size=(m, d)), np.abs(rng.normal(size=m)) + 0.1)


def test_a_polytope_domain_is_cut_under_the_time_limit():
    # a 12-D polytope of 48 rows: 12 s for a 0.5 s limit, all of it cutting the domain by
    # its rows before the first neuron.  (Not timed here: the cut asks the limit between
    # rows, so a limit already spent ends it at the first row, partial.)
    net, P = _net_and_polytope(12, 48)
    rs = regions.enumerate(net, P, time_limit=1e-9)
    assert rs.partial and len(rs) == 0 and "domain polytope" in rs.info["stopped"]


def test_a_polytope_too_large_to_cut_is_a_resource_limit_not_a_raw_memory_error():
    # 16 inputs, 40 rows: numpy's raw MemoryError of 1 GiB (count), or a set cut short
    net, P = _net_and_polytope(16, 40)
    with memory_limit(2 * 10**8):
        with pytest.raises(ResourceLimitError, match="cutting the 16-dimensional domain polytope"):
            regions.count(net, P)
        rs = regions.enumerate(net, P)
    assert rs.partial and len(rs) == 0 and rs.info["stopped"].startswith("memory:")


def test_regions_plot_after_a_time_limit_is_not_drawn(tmp_path, capsys):
    # the picture enumerated every region again with no limit: 67 s and 1.9 GB after a
    # 1 s limit on a 2-300-300-1 network.  A limit already spent cuts the enumeration.
    rng = np.random.default_rng(0)
    h = 60
    net = Network([rng.normal(size=(h, 2)), rng.normal(size=(h, h)) / np.sqrt(h), rng.normal(size=(1, h))],
                  [rng.normal(size=h) * 0.5, rng.normal(size=h) * 0.3, np.zeros(1)])
    save_model(net, tmp_path / "n.npz")
    code, out, _ = run_cli(capsys, "regions", tmp_path / "n.npz", "--time-limit", "1e-6",
                           "--plot", tmp_path / "p.png", "--json")
    d = json.loads(out)
    assert code == 0 and d["partial"] and d["plot"] is None and "not drawn" in d["plot_note"]
    assert not (tmp_path / "p.png").exists()
    # without a limit it is drawn
    code, out, _ = run_cli(capsys, "regions", tmp_path / "n.npz", "--plot", tmp_path / "p.png", "--json")
    assert code == 0 and json.loads(out)["plot"] and (tmp_path / "p.png").exists()


def test_hit_and_run_points_lie_inside_a_thin_far_slab():
    # a step to within rounding of a face landed outside it (1.6e-9 at 1.5e6)
    a = np.array([1.8308393291211154, 1.1117893816100257, 0.9957287061206603, 1.2631625511637135,
                  -1.1197342896208105, -0.5587321391925618, -0.2767731435693545])
    d = 7
    A = np.vstack([a, -a, np.eye(d), -np.eye(d)])
    b = np.r_[1476702.2392071795, -1476702.239205702, np.full(2 * d, 3e6)]
    P = Polytope(A, b)
    X = P.sample(2000, rng=0)
    assert P.contains(X, tol=0.0).all()
    assert all(P.contains_exactly(x) for x in X[:: 50])


def test_an_unbounded_polytope_whose_centre_lp_failed_is_built():
    A = [[-0.5163674647020098, 1.7308251969377266], [1.3994539532530212, 0.5796028550345662],
         [1.1898471545412344, 0.15394107746960092], [-0.5484547040431216, 0.47464232461917677]]
    b = [7.731943823900275, 33.513710555240024, 25.83738112808605, -5.067843050454927]
    P = Polytope(A, b)
    c, r = P.chebyshev_center()
    assert not P.is_bounded and r == np.inf and P.contains(c[None], tol=0.0).all()


def test_a_polytope_stays_frozen_and_its_enclosing_box_answers_without_single_coordinate_rows():
    # (a new exception class had taken the Polytope's dataclass decorator: assigning b was
    # accepted, and the cached box no longer held the set)
    import dataclasses
    import time

    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    A = np.vstack([Q, -Q])                      # a rotated cube: no single-coordinate row
    P = Polytope(A, np.ones(8))
    with pytest.raises(dataclasses.FrozenInstanceError):
        P.b = np.zeros(8)
    box = P.enclosing_box(time.perf_counter() - 1.0)   # deadline passed: the proven box
    X = P.sample(500, np.random.default_rng(1))
    assert ((X >= box.lo) & (X <= box.hi)).all()
    assert np.allclose(box.hi, np.abs(Q).sum(0), atol=1e-9)   # tol: the cube's exact reach


def test_sampling_a_high_dimensional_polytope_needs_no_bounding_box():
    # (reduce on a 100-D polytope of 400 rows spent 14 s on the bounding box that sampling
    # solved to reject from; rejection from it of a rotated cube accepts nothing)
    from relulab.domain import DomainError

    rng = np.random.default_rng(0)
    d = 30
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    P = Polytope(np.vstack([Q, -Q]), np.ones(2 * d))
    X = P.sample(300, np.random.default_rng(1))
    assert "_bbox" not in P.__dict__ and P.contains(X, tol=0.0).all() and len(X) == 300
    # an unbounded one is still refused
    H = Polytope(np.eye(d)[:1], np.ones(1))
    with pytest.raises(DomainError, match="unbounded"):
        H.sample(10, np.random.default_rng(0))
