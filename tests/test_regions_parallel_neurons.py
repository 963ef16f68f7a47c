"""Parallel enumeration over cells cut along first-layer hyperplanes: every region lies
whole in one cell, the relabelled facets equal one process's rows bit for bit, the graph
is completed across the cutting hyperplanes, small inputs run in one process, and the
region estimate that plans the work is within a small factor of the truth."""

from __future__ import annotations

import numpy as np
import pytest
from test_regions_parallel import _net, assert_same_regions

from relulab import Box, Network, regions
from relulab.regions._neuron_cells import (
    _NeuronCellTask,
    choose_split_neurons,
    estimate_regions,
    neuron_cells,
)


@pytest.mark.parametrize("d,widths,seed,k", [(2, [10, 10], 3, 2), (3, [8, 8], 4, 3),
                                             (2, [12, 6, 6], 5, 3)])
def test_each_region_lies_whole_in_the_cell_of_its_signs(d, widths, seed, k):
    """The cells' regions are exactly the regions of the box, each once, and a region's
    bits on the cutting neurons are its cell's signs."""
    net = _net(d, widths, seed)
    box = Box(-np.ones(d), np.ones(d))
    neurons = choose_split_neurons(net, box, k)
    assert len(neurons) == k and all(j < widths[0] for j in neurons)
    cells = neuron_cells(net, box, neurons)
    task = _NeuronCellTask(net, box, neurons)
    one = regions.enumerate(net, box, vertices=True)
    seen = []
    for signs in cells:
        part = task((signs, True)).arrays
        P = np.unpackbits(part.packed_patterns, axis=1, count=sum(widths)).astype(bool)
        assert np.all(P[:, neurons] == np.array(signs)[None, :])
        seen += [p.tobytes() for p in part.packed_patterns]
    assert len(seen) == len(set(seen)) == len(one)                 # no region cut in two
    assert set(seen) == {p.tobytes() for p in one.packed_patterns}


def test_facets_on_cutting_hyperplanes_are_the_neuron_rows_bit_for_bit():
    net = _net(2, [9, 9], 8)
    box = Box([-1, -1], [1, 1])
    one = regions.enumerate(net, box, vertices=True)
    st = regions.enumerate(net, box, parallel="local", workers=2, cells=4)
    cut = st.info["split_neurons"]
    assert len(cut) == 2
    by = {r.pattern.tobytes(): r for r in one}
    checked = 0
    for r in st:
        o = by[r.pattern.tobytes()]
        assert np.array_equal(r.facet_ids, o.facet_ids)             # same order too
        for j in cut:
            if j in r.facet_ids:
                k = int(np.flatnonzero(r.facet_ids == j)[0])
                assert np.array_equal(r.A[k], o.A[k]) and r.b[k] == o.b[k]
                checked += 1
    assert checked > 0


@pytest.mark.parametrize("d,widths,seed,cells", [(3, [9, 9], 31, 4), (3, [7, 7, 7], 32, 8),
                                                 (2, [14, 14], 33, 16)])
def test_graph_across_cutting_hyperplanes_and_skeleton_equal_one_process(d, widths, seed, cells):
    """The cells' graphs plus the edges across the cutting hyperplanes give the graph one
    rebuilds from the facets; without vertex lists the union of the cells' skeletons
    gives every region's vertices."""
    net = _net(d, widths, seed)
    box = Box(-np.ones(d), np.ones(d))
    st = regions.enumerate(net, box, parallel="local", workers=2, cells=cells, vertices=False)
    assert st.info["cell_engines"] == ["skeleton"] and st._skeleton is not None
    assert st._edges is not None and st.vertex_ptr[-1] == 0
    assert_same_regions(regions.enumerate(net, box, vertices=True), st, net)
    E_cells = st._edges
    st._edges = None
    assert {tuple(e) for e in E_cells.tolist()} == {tuple(e) for e in regions.adjacency(st).tolist()}


def test_degenerate_cutting_hyperplane_falls_back_and_stays_exact():
    """First-layer hyperplanes through one point, the cut among them: the cells fall
    back to the per-region engine (and, in 3-D without vertex lists, every cell to
    vertex lists), still the regions of one process."""
    W1 = np.array([[1.0, 0, 0], [0, 1.0, 0], [1.0, 1.0, 0], [1.0, -1.0, 0.5], [0, 0, 1.0]])
    net = Network([W1, np.random.default_rng(1).normal(size=(4, 5)), np.ones((1, 4))],
                  [np.zeros(5), np.array([0.1, -0.2, 0.3, 0.2]), np.zeros(1)])
    box = Box(-np.ones(3), np.ones(3))
    one = regions.enumerate(net, box, vertices=True)
    for cells in (2, 4, 8):
        st = regions.enumerate(net, box, parallel="local", workers=2, cells=cells)
        assert "cells" in st.info["cell_engines"]
        assert_same_regions(one, st, net)


def test_small_input_runs_in_one_process_and_says_so():
    net = _net(2, [8, 8], 9)
    box = Box([-1, -1], [1, 1])
    rs = regions.enumerate(net, box, parallel="local", workers=2)
    assert rs.info["parallel"].startswith("one process") and rs.info["engine"] != "stitched"
    assert_same_regions(regions.enumerate(net, box, vertices=True), rs, net)
    assert regions.count(net, box, parallel="local", workers=2) == len(rs)


@pytest.mark.parametrize("d,w,seed", [(2, 20, 0), (3, 12, 1), (4, 10, 2), (5, 8, 3)])
def test_region_estimate_is_within_a_small_factor(d, w, seed):
    rng = np.random.default_rng(seed)
    dims = [d, w, w, 1]
    net = Network([rng.normal(size=(dims[i + 1], dims[i])) * np.sqrt(2 / dims[i]) for i in range(3)],
                  [rng.normal(size=dims[i + 1]) * 0.5 for i in range(3)])
    box = Box(-np.ones(d), np.ones(d))
    n, est = regions.count(net, box), estimate_regions(net, box)
    assert n / 3 < est < 3 * n


def test_box_cells_stitch_still_equals_one_process():
    """The box-cut stitch (regions cut by the cells and merged by pattern) stays exact."""
    from relulab.regions._stitch import enumerate_stitched

    net = _net(2, [12, 12], 10)
    box = Box([-1, -1], [1, 1])
    st = enumerate_stitched(net, box, regions.enumerate, workers=2, cells=7)
    assert st.info["engine"] == "stitched"
    assert_same_regions(regions.enumerate(net, box, vertices=True), st, net)
