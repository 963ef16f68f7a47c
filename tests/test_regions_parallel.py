"""Region enumeration split over cells and stitched equals one process: the same
patterns, facets (by hyperplane), vertices and adjacency graph; valid interior points;
the same count. With cells that cut many regions, on random 2-D and 3-D networks, and
on Ray when it is installed."""

from __future__ import annotations

import numpy as np
import pytest

from relulab import Box, Network, regions


def _net(d, widths, seed):
    rng = np.random.default_rng(seed)
    dims = [d, *widths, 1]
    return Network([rng.normal(size=(dims[i + 1], dims[i])) for i in range(len(dims) - 1)],
                   [rng.normal(size=dims[i + 1]) * 0.5 for i in range(len(dims) - 1)])


def _by_pattern(rs):
    return {r.pattern.tobytes(): r for r in rs}


def assert_same_regions(one, st, net):
    a, b = _by_pattern(one), _by_pattern(st)
    assert set(a) == set(b) and len(st) == len(one)
    for k, r in a.items():
        s = b[k]
        assert sorted(r.facet_ids.tolist()) == sorted(s.facet_ids.tolist())
        va = np.array(sorted(map(tuple, np.round(r.vertices, 9))))
        vb = np.array(sorted(map(tuple, np.round(s.vertices, 9))))
        assert va.shape == vb.shape and np.allclose(va, vb, atol=1e-8)
        assert np.allclose(r.affine[0], s.affine[0]) and np.allclose(r.affine[1], s.affine[1])
        assert s.contains(s.interior_point) and s.radius > 0
        assert net.pattern_vector(s.interior_point[None])[0].astype(bool).tolist() == s.pattern.tolist()
        assert r.touches_domain == s.touches_domain
    ga, gb = regions.graph(one), regions.graph(st)
    ea = {frozenset((one[i].pattern.tobytes(), one[j].pattern.tobytes())) for i, j in ga.edges()}
    eb = {frozenset((st[i].pattern.tobytes(), st[j].pattern.tobytes())) for i, j in gb.edges()}
    assert ea == eb


@pytest.mark.parametrize("d,widths,seed,cells", [(2, [12, 12], 0, 7), (2, [16, 16, 16], 1, 9),
                                                 (3, [10, 10], 2, 6), (3, [12, 8], 3, 11)])
def test_stitched_enumeration_equals_one_process(d, widths, seed, cells):
    net = _net(d, widths, seed)
    box = Box(-np.ones(d), np.ones(d))
    one = regions.enumerate(net, box, vertices=True)
    st = regions.enumerate(net, box, parallel="local", workers=2, cells=cells)
    assert st.info["engine"] == "stitched" and not st.partial
    assert_same_regions(one, st, net)
    assert regions.count(net, box, parallel="local", workers=2, cells=cells) == len(one)


def test_cells_cover_the_box_and_cut_regions():
    from relulab.regions._stitch import split_cells

    net = _net(2, [16, 16], 4)
    box = Box([-1, -1], [1, 1])
    cells = split_cells(net, box, 8)
    assert len(cells) == 8
    assert np.isclose(sum(np.prod(c.hi - c.lo) for c in cells), 4.0)
    pieces = sum(len(regions.enumerate(net, c)) for c in cells)
    assert pieces > len(regions.enumerate(net, box))          # regions were cut and merged


def test_parallel_arguments_are_checked():
    from relulab.errors import RelulabError

    net = _net(2, [4], 0)
    with pytest.raises(RelulabError, match="parallel"):
        regions.enumerate(net, parallel="spark")
    with pytest.raises(RelulabError, match="max_regions"):
        regions.enumerate(net, parallel="local", max_regions=3)
    from relulab import Polytope

    with pytest.raises(RelulabError, match="Box"):
        regions.enumerate(net, Polytope.whole_space(2), parallel="local", workers=1)


def test_stitched_on_ray_equals_one_process():
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'relulab[ray]')")
    import os

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        net = _net(2, [12, 12], 7)
        box = Box([-1, -1], [1, 1])
        st = regions.enumerate(net, box, parallel="ray", workers=2, cells=5)
        assert_same_regions(regions.enumerate(net, box, vertices=True), st, net)
    finally:
        if started:
            ray.shutdown()
