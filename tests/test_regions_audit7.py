"""Regions audit 7: a parallel enumeration keeps the near ties its problem found before
any region (aud_reg7 #1)."""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from relulab import Box, Network, regions


@pytest.mark.parametrize("cells", [2, 3, 4, 8])
def test_parallel_cells_keep_an_exact_networks_rounding_tie(cells):
    # x - 1/3 and -(x - (1/3 + 1e-20)): float64 rounds them onto one hyperplane, and the
    # exact network has 3 regions on [-1, 1] (one of width 1e-20); split into cells, the
    # skeleton's 2 regions were "certified" with no near tie
    a, dl = F(1, 3), F(1, 10**20)
    net = Network([[[F(1)], [F(-1)]], [[F(1), F(1)]]], [[-a, a + dl], [F(0)]], exact=True)
    patterns = {tuple(bool(z > 0) for z in net.preactivations([[x]])[0][0])
                for x in (F(0), a + dl / 2, F(1))}
    assert len(patterns) == 3    # the exact forward pass has three patterns
    rs = regions.enumerate(net, Box([-1.0], [1.0]), parallel="local", workers=1, cells=cells)
    assert len(rs) == 3 or (not rs.certified and rs.info["near_ties"] >= 1)
    assert rs.summary()["certified"] == rs.certified
