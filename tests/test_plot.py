"""Plots: the figures build, save, and show what the region data says."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_network

pytest.importorskip("matplotlib")

from relulab import plot, regions  # noqa: E402


def test_regions2d_draws_every_polygon(tmp_path):
    net = random_network(np.random.default_rng(0), [2, 8, 6, 1])
    path = tmp_path / "r.png"
    fig = plot.regions2d(net, color="output", contours=4, path=str(path))
    assert path.stat().st_size > 1000
    ax = fig.axes[0]
    n = len(regions.slice2d(net))
    assert len(ax.collections[0].get_paths()) == n
    assert ax.get_title() == f"{n} linear regions"


def test_function1d_marks_breakpoints(tmp_path):
    net = random_network(np.random.default_rng(1), [1, 10, 10, 1])
    fig = plot.function1d(net, -2, 2, path=str(tmp_path / "f.png"))
    seg = regions.along_segment(net, [-2.0], [2.0])
    line, marks = fig.axes[0].lines[:2]
    assert len(marks.get_xdata()) == seg.n_pieces - 1
    assert np.allclose(line.get_xdata(), seg.points[:, 0])


def test_region_graph_plot(tmp_path):
    net = random_network(np.random.default_rng(2), [2, 6, 6, 1])
    G = regions.graph(regions.enumerate(net))
    fig = plot.region_graph(G, path=str(tmp_path / "g.png"))
    assert len(fig.axes[0].collections[0].get_segments()) == G.number_of_edges()
    fig2 = plot.region_graph(G, layout="spring")
    assert fig2.axes
