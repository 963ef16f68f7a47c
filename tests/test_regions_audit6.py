"""Sixth regions audit: exact networks whose rows float64 makes one hyperplane (negated or
scaled near-copies) or loses (rows below its normal range), and the region store's
reasons and errors.  Each case failed before its fix."""

from __future__ import annotations

import json
from fractions import Fraction as F

import numpy as np
import pytest

from relulab import Box, Network, regions
from relulab.errors import RelulabError, UncertifiedCount

THIRD, TINY = F(1, 3), F(1, 10**20)


def _exact_patterns(net: Network, xs) -> set[tuple[bool, ...]]:
    return {tuple(bool(z > 0) for z in net.preactivations([[x]])[0][0]) for x in xs}


@pytest.mark.parametrize("scale", [F(-1), F(5), F(3, 11), F(-7), F(5, 13), F(6, 11)])
def test_a_scaled_or_negated_near_copy_is_a_near_tie(scale):
    # x - 1/3 and scale (x - (1/3 + 1e-20)): three regions (the exact forward pass below),
    # which float64 makes two; only bit-equal rows of one sign were caught, and these gave
    # 2 regions, certified, and a count of 2 (aud_reg6 #5)
    net = Network([[[F(1)], [scale]], [[F(1), F(1)]]], [[-THIRD, -scale * (THIRD + TINY)], [F(0)]],
                  exact=True)
    assert len(_exact_patterns(net, [F(0), THIRD + TINY / 2, F(1)])) == 3
    rs = regions.enumerate(net, Box([-1.0], [1.0]))
    assert not rs.certified and rs.info["near_ties"] >= 1
    with pytest.raises(UncertifiedCount):
        regions.count(net, Box([-1.0], [1.0]))
    # an exactly proportional copy is one hyperplane: 2 regions, certified
    same = Network([[[F(1)], [scale]], [[F(1), F(1)]]], [[-THIRD, -scale * THIRD], [F(0)]], exact=True)
    assert len(_exact_patterns(same, [F(0), F(1)] + [THIRD + k * TINY for k in (-1, 1)])) == 2
    rs = regions.enumerate(same, Box([-1.0], [1.0]))
    assert rs.certified and len(rs) == 2 and regions.count(same, Box([-1.0], [1.0])) == 2


def test_a_near_copy_in_two_dimensions_is_a_near_tie():
    row = [F(1, 3), F(1, 7)]
    b = F(-1, 5)
    net = Network([[row, [-v for v in row]], [[F(1), F(1)]]], [[b, -(b - TINY)], [F(0)]], exact=True)
    rs = regions.enumerate(net, Box([-1.0, -1.0], [1.0, 1.0]))
    assert not rs.certified


@pytest.mark.parametrize("w, b", [(F(1, 10**400), F(1, 10**401)), (F(1, 10**320), F(123, 10**323))])
def test_an_exact_row_below_float64s_normal_range_is_refused(w, b):
    # 1e-400 rounded to 0 and its hyperplane at x = -0.1 vanished (2 regions of 3,
    # certified); 1e-320 became subnormal and moved past its neighbour (aud_reg6 #6)
    net = Network([[[w], [F(1)]], [[F(1), F(1)]]], [[b, F(12301, 10**5)], [F(0)]], exact=True)
    seg = regions.along_segment(net, [-1], [1])     # exact: the hyperplane is there
    assert len(seg.breakpoints) == 4
    with pytest.raises(RelulabError, match="neuron 1 of hidden layer 1 has an exact row below"):
        regions.enumerate(net, Box([-1.0], [1.0]))
    with pytest.raises(RelulabError, match="below float64's normal range"):
        regions.count(net, Box([-1.0], [1.0]))
    # the same neuron rescaled (row times 10^400 or 10^320, its output weight divided by
    # it) has the same regions, and is enumerated: 3, certified
    s = 1 / w
    scaled = Network([[[w * s], [F(1)]], [[1 / s, F(1)]]], [[b * s, F(12301, 10**5)], [F(0)]], exact=True)
    rs = regions.enumerate(scaled, Box([-1.0], [1.0]))
    assert rs.certified and len(rs) == 3


def test_a_float_row_of_subnormals_is_refused_and_a_tiny_entry_is_not():
    sub = Network([[[1e-320], [1.0]], [[1.0, 1.0]]], [[1.23e-321, 0.12301], [0.0]])
    with pytest.raises(RelulabError, match="neuron 1 of hidden layer 1 has a row below"):
        regions.enumerate(sub, Box([-1.0], [1.0]))
    # one subnormal entry beside a normal one moves the hyperplane by nothing visible
    ok = Network([[[1e-320, 1.0], [1.0, 0.0]], [[1.0, 1.0]]], [[0.5, 0.0], [0.0]])
    rs = regions.enumerate(ok, Box([-1.0, -1.0], [1.0, 1.0]))
    assert rs.certified and len(rs) == 4


def _net2():
    return Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])


def test_write_regions_names_an_interruption_and_keeps_whole_chunks(tmp_path, monkeypatch):
    import relulab.regions._store as S

    calls = [0]
    orig_row = S._row

    def row(r):
        calls[0] += 1
        if calls[0] == 3:
            raise KeyboardInterrupt
        return orig_row(r)

    monkeypatch.setattr(S, "_row", row)
    s = regions.write_regions(_net2(), tmp_path / "a.jsonl", Box([-1, -1], [1, 1]))
    assert (s.status, s.stopped, s.regions) == ("partial", "interrupted (Ctrl-C)", 2)  # said max_regions (None)
    monkeypatch.setattr(S, "_row", orig_row)
    # a Ctrl-C inside the JSON writer escaped write_regions; the file now ends after the
    # last whole chunk and reads back
    dumps, seen = json.dumps, [0]

    def dumps_once(*a, **k):
        seen[0] += 1
        if seen[0] == 3:
            raise KeyboardInterrupt
        return dumps(*a, **k)

    monkeypatch.setattr(S.json, "dumps", dumps_once)
    s = regions.write_regions(_net2(), tmp_path / "b.jsonl", Box([-1, -1], [1, 1]), chunk=2)
    monkeypatch.setattr(S.json, "dumps", dumps)
    assert (s.status, s.stopped, s.regions, s.chunks) == ("partial", "interrupted (Ctrl-C)", 2, 1)
    back = list(regions.read_regions(tmp_path / "b.jsonl"))
    assert len(back) == 2 and all(r.pattern.shape == (2,) for r in back)


def test_read_regions_names_a_record_with_an_infinite_count(tmp_path):
    p = tmp_path / "g.jsonl"
    regions.write_regions(_net2(), p, Box([-1, -1], [1, 1]))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(p.read_text().splitlines()[0].replace('"d":2', '"d":1e999') + "\n")
    with pytest.raises(RelulabError, match=r"bad.jsonl:1: not a region record"):
        list(regions.read_regions(bad))


def test_bfs_refuses_vertices_it_does_not_compute():
    with pytest.raises(RelulabError, match="method='bfs' keeps no vertices"):
        regions.enumerate(_net2(), Box([-1, -1], [1, 1]), method="bfs", vertices=True)
    rs = regions.enumerate(_net2(), Box([-1, -1], [1, 1]), method="bfs")
    assert len(rs) == 4 and rs.certified
