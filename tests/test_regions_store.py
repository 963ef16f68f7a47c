"""Regions streamed to disk (Parquet / JSON lines) read back equal to the in-memory
enumeration, chunk by chunk."""

from __future__ import annotations

import json

import numpy as np
import pytest

from relulab import Box, Network, regions
from relulab.errors import RelulabError


def _random_net(d: int, widths: list[int], seed: int) -> Network:
    rng = np.random.default_rng(seed)
    sizes = [d, *widths, 1]
    Ws = [rng.standard_normal((sizes[i + 1], sizes[i])) for i in range(len(sizes) - 1)]
    bs = [rng.standard_normal(sizes[i + 1]) * 0.5 for i in range(len(sizes) - 1)]
    return Network(Ws, bs)


def _same(a, b) -> None:
    assert a.index == b.index
    assert np.array_equal(a.pattern, b.pattern)
    for x, y in [(a.A, b.A), (a.b, b.b), (a.vertices, b.vertices),
                 (a.interior_point, b.interior_point), (a.affine[0], b.affine[0]),
                 (a.affine[1], b.affine[1])]:
        assert x.shape == y.shape and np.array_equal(x, y)   # float64 round-trips exactly
    assert np.array_equal(a.facet_ids, b.facet_ids)
    assert (a.radius, a.bounded, a.touches_domain) == (b.radius, b.bounded, b.touches_domain)


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
@pytest.mark.parametrize("d,widths,seed", [(2, [8, 6], 0), (3, [6, 5], 1)])
def test_round_trip_equals_enumeration(tmp_path, suffix, d, widths, seed):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow", reason="pyarrow (relulab[parquet]) not installed")
    net = _random_net(d, widths, seed)
    box = Box(-np.ones(d), np.ones(d))
    rs = regions.enumerate(net, box)
    path = tmp_path / f"r{suffix}"
    s = regions.write_regions(net, path, box, chunk=7)
    assert s.status == "complete" and s.regions == len(rs)
    assert s.chunks == -(-len(rs) // 7)
    back = list(regions.read_regions(path))
    # the file holds the stream exactly, field by field
    for a, b in zip(back, regions.iter_regions(net, box), strict=True):
        _same(a, b)
    # and the same regions as the in-memory enumeration (whose order may differ)
    assert sorted(r.pattern.tobytes() for r in back) == sorted(r.pattern.tobytes() for r in rs)
    # every stored region is a true region: its affine map matches the network inside it
    for r in back:
        x = r.interior_point
        assert np.allclose(net(x[None])[0], r.affine[0] @ x + r.affine[1], atol=1e-9)


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_max_regions_marks_partial(tmp_path, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow", reason="pyarrow (relulab[parquet]) not installed")
    net = _random_net(2, [8, 6], 3)
    box = Box([-1, -1], [1, 1])
    n = regions.count(net, box)
    cut = regions.write_regions(net, tmp_path / f"a{suffix}", box, max_regions=n - 1)
    assert (cut.status, cut.regions) == ("partial", n - 1)
    full = regions.write_regions(net, tmp_path / f"b{suffix}", box, max_regions=n)
    assert (full.status, full.regions) == ("complete", n)


def test_parquet_is_readable_by_pyarrow(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow (relulab[parquet]) not installed")
    net = _random_net(2, [5, 4], 5)
    path = tmp_path / "r.parquet"
    s = regions.write_regions(net, path, Box([-1, -1], [1, 1]), chunk=3)
    f = pq.ParquetFile(path)
    assert f.metadata.num_rows == s.regions and f.num_row_groups == s.chunks
    t = f.read(columns=["d", "n_facets", "A"])
    assert all(len(a) == k * dd for a, k, dd in zip(t["A"].to_pylist(), t["n_facets"].to_pylist(),
                                                    t["d"].to_pylist(), strict=True))


def test_bad_input(tmp_path):
    net = _random_net(2, [3], 0)
    with pytest.raises(RelulabError, match="region files end in"):
        regions.write_regions(net, tmp_path / "r.csv")
    with pytest.raises(RelulabError, match="chunk"):
        regions.write_regions(net, tmp_path / "r.jsonl", chunk=0)
    with pytest.raises(RelulabError, match="no such region file"):
        list(regions.read_regions(tmp_path / "missing.jsonl"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"index": 0}) + "\n")
    with pytest.raises(RelulabError, match=r"bad.jsonl:1: not a region record"):
        list(regions.read_regions(bad))
    assert not (tmp_path / "r.csv").exists() and not (tmp_path / "r.jsonl").exists()


def test_cli_out_streams_the_same_regions(tmp_path, capsys):
    from conftest import run_cli

    from relulab.examples import example_path, load_example

    path = tmp_path / "r.jsonl"
    code, out, _ = run_cli(capsys, "regions", str(example_path("tiny_2d")), "--box", "-1:1",
                           "--out", str(path), "--json")
    assert code == 0
    d = json.loads(out)
    net = load_example("tiny_2d")
    n = regions.count(net, Box([-1, -1], [1, 1]))
    assert (d["regions"], d["status"], d["format"]) == (n, "complete", "jsonl")
    assert sum(1 for _ in regions.read_regions(path)) == n
    code, _, err = run_cli(capsys, "regions", str(example_path("tiny_2d")), "--out",
                           str(path), "--count")
    assert code == 1 and "--out" in err and len(err.strip().splitlines()) == 1


def test_an_out_file_cut_by_the_memory_budget_says_why(tmp_path, capsys, monkeypatch):
    # an allocation failure ended the stream with 0 regions and "partial", and --out gave
    # no reason at all (aud_cli5 #1)
    from conftest import run_cli

    import relulab.regions._engine as engine
    from relulab.examples import example_path

    real, calls = engine._apply_neuron, [0]

    def failing(pb, b):
        calls[0] += 1
        if calls[0] > 3:
            raise MemoryError("Unable to allocate 1.37 GiB")
        return real(pb, b)

    monkeypatch.setattr(engine, "_apply_neuron", failing)
    path = tmp_path / "r.jsonl"
    code, out, _ = run_cli(capsys, "regions", str(example_path("tiny_2d")), "--box", "-1:1",
                           "--out", str(path), "--json")
    d = json.loads(out)
    assert code == 0 and d["status"] == "partial" and "memory" in d["stopped"] and "1.37 GiB" in d["stopped"]
    monkeypatch.setattr(engine, "_apply_neuron", real)
    net = _random_net(2, [8, 6], 3)
    cut = regions.write_regions(net, tmp_path / "a.jsonl", Box([-1, -1], [1, 1]), max_regions=2)
    assert cut.status == "partial" and "max_regions" in cut.stopped
    full = regions.write_regions(net, tmp_path / "b.jsonl", Box([-1, -1], [1, 1]))
    assert full.status == "complete" and full.stopped is None


def test_cancelled_terms_are_summed_in_chunks_with_the_same_values():
    # Zp[fr] over every flagged pair at once was (634818, 50, 6) = 1.4 GB on ACAS Xu,
    # twice over with its abs(), past the budget that sized the batch (aud_cli5 #1)
    import tracemalloc

    from relulab.regions._engine import _term_scale

    rng = np.random.default_rng(0)
    n, w, d = 2000, 50, 5
    W, bias = rng.normal(size=(w, w)), rng.normal(size=w)
    Zp = rng.normal(size=(n, w, d + 1))
    cur = rng.random((n, w)) > 0.3
    Z = np.einsum("ij,njk->nik", W, cur[:, :, None] * Zp)
    Z[:, :, d] += bias
    tracemalloc.start()
    got = _term_scale(W, bias, cur, Zp, Z, 1.0, 1.0)       # noise 1: every pair counts
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    fr, fj = np.divmod(got.key, w)
    assert fr.shape[0] == n * w
    direct = np.einsum("fi,fik->fk", np.abs(W)[fj] * cur[fr], np.abs(Zp[fr]))   # the definition
    direct[:, d] += np.abs(bias[fj])
    assert np.allclose(got.terms, direct, rtol=1e-12, atol=0)   # tol: summation order only
    assert peak < 0.5 * (n * w) * w * (d + 1) * 8      # far below one (pairs, w, d+1) array
