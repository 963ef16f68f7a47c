"""relulab's native .npz format: exact round trips (float, Fraction, skip) and clear errors
on corrupt or foreign archives."""

from __future__ import annotations

import zipfile
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from conftest import random_network

from relulab import Network
from relulab.errors import FormatError
from relulab.io import load_model, save_model
from relulab.io.native import FORMAT_VERSION, load, save


def _random_exact(rng: np.random.Generator, dims: list[int], skip: bool = False) -> Network:
    def q(shape):
        num = rng.integers(-50, 51, size=shape)
        den = rng.integers(1, 40, size=shape)
        out = np.empty(shape, dtype=object)
        for idx in np.ndindex(*shape):
            out[idx] = Fraction(int(num[idx]), int(den[idx]))
        return out

    Ws = [q((dims[i + 1], dims[i])) for i in range(len(dims) - 1)]
    bs = [q((dims[i + 1],)) for i in range(len(dims) - 1)]
    sk = (q((dims[-1], dims[0])), q((dims[-1],))) if skip else None
    return Network(Ws, bs, sk, exact=True)


@pytest.mark.parametrize("skip", [False, True])
@pytest.mark.parametrize("dims", [[2, 3], [4, 8, 8, 3], [1, 5, 1]])
def test_float_round_trip(dims: list[int], skip: bool, tmp_path: Path) -> None:
    rng = np.random.default_rng(sum(dims))
    net = random_network(rng, dims, skip=skip)
    p = tmp_path / "n.npz"
    save(net, p)
    back = load(p)
    assert back == net and not back.is_exact
    assert (back.skip is None) == (not skip)
    for a, b in zip(back.weights + back.biases, net.weights + net.biases, strict=True):
        assert a.dtype == np.float64 and np.array_equal(a, b)
    X = rng.normal(size=(20, dims[0]))
    assert np.array_equal(back(X), net(X))


@pytest.mark.parametrize("skip", [False, True])
def test_exact_round_trip(skip: bool, tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    net = _random_exact(rng, [3, 4, 2], skip=skip)
    p = tmp_path / "e.npz"
    save_model(net, p)
    back = load_model(p)
    assert back.is_exact and back == net
    assert all(isinstance(v, Fraction) for W in back.weights for v in W.ravel())
    x = [Fraction(1, 3), Fraction(-2, 7), Fraction(5)]
    assert list(back(x)) == list(net(x))
    # A float network's exact() copy keeps its binary values exactly.
    fnet = random_network(rng, [2, 3, 1]).exact()
    save(fnet, p)
    assert load(p) == fnet


def test_saved_layout(tmp_path: Path) -> None:
    net = Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), [0.5]])
    p = tmp_path / "n.npz"
    save(net, p)
    with np.load(p) as z:
        assert str(z["format"]) == "relulab-network"
        assert int(z["version"]) == FORMAT_VERSION
        assert sorted(z.files) == sorted(["format", "version", "exact", "n_layers", "W0", "b0", "W1", "b1"])


def _archive(path: Path, **arrays) -> Path:
    base = {"format": np.array("relulab-network"), "version": np.array(1),
            "exact": np.array(0), "n_layers": np.array(1),
            "W0": np.eye(2), "b0": np.zeros(2)}
    base.update(arrays)
    np.savez(path, **{k: v for k, v in base.items() if v is not None})
    return path


@pytest.mark.parametrize(
    "arrays, match",
    [
        ({"version": np.array(2)}, "format version 2 is not supported"),
        ({"version": np.array("one")}, "'version' must be one integer"),
        ({"format": np.array("something-else")}, "not a relulab network archive"),
        ({"format": None}, "not a relulab network archive"),
        ({"n_layers": np.array([1, 2])}, "'n_layers' must be one integer"),
        ({"n_layers": np.array(2)}, "missing array 'W1'"),
        # a 2 KB file with n_layers = 10**12 built a set of 2e12 names (minutes, then OOM)
        ({"n_layers": np.array(10**12)}, "n_layers is 1000000000000, but the archive holds only 6 arrays"),
        ({"n_layers": np.array(0)}, "n_layers is 0; a network has at least one layer"),
        ({"W0": np.array([["a", "b"], ["c", "d"]])}, "array 'W0' is not numeric"),
        ({"W0": np.array([[np.nan, 0], [0, 1]])}, "layer 1: weight contains NaN"),
        ({"b0": np.zeros(3)}, "bias shape"),
        ({"skip_S": np.eye(2)}, "missing array 'skip_s'"),
        ({"exact": np.array(1), "W0": np.array([["1/2", "x"], ["0", "1"]])}, "'x', not a fraction"),
        ({"exact": np.array(1), "W0": np.array([["1/0", "0"], ["0", "1"]])}, "zero denominator"),
        ({"exact": np.array(1), "W0": np.array([["1_000", "0"], ["0", "1"]])}, "'1_000', not a fraction"),
        ({"exact": np.array(1), "W0": np.array([[True, False], [False, True]])}, "neither numbers"),
        ({"W1": np.ones((1, 2)), "b1": np.zeros(1)}, "unexpected array 'W1' \\(n_layers is 1\\)"),
    ],
)
def test_bad_archives(arrays: dict, match: str, tmp_path: Path) -> None:
    p = _archive(tmp_path / "bad.npz", **arrays)
    with pytest.raises(FormatError, match=match) as info:
        load(p)
    assert str(p) in str(info.value)


def test_archive_helper_is_valid(tmp_path: Path) -> None:
    assert load(_archive(tmp_path / "ok.npz")) == Network([np.eye(2)], [np.zeros(2)])


def test_exact_archive_with_float_arrays_keeps_each_floats_exact_value(tmp_path: Path) -> None:
    net = load(_archive(tmp_path / "f.npz", exact=np.array(1), W0=np.array([[0.1, 0.0], [0.0, 1.0]])))
    assert net.is_exact and net.weights[0][0, 0] == Fraction(0.1) != Fraction(1, 10)


def test_corrupt_files(tmp_path: Path) -> None:
    net = random_network(np.random.default_rng(1), [3, 16, 2])
    good = tmp_path / "good.npz"
    save(net, good)
    data = good.read_bytes()
    cases = {
        "truncated.npz": data[: len(data) // 2],
        "garbage.npz": b"this is not a zip archive at all",
        "empty.npz": b"",
    }
    flipped = bytearray(data)
    info = zipfile.ZipFile(good).getinfo("W0.npy")
    flipped[info.header_offset + 120] ^= 0xFF  # inside W0's data: the CRC check fails
    cases["flipped.npz"] = bytes(flipped)
    for name, content in cases.items():
        p = tmp_path / name
        p.write_bytes(content)
        with pytest.raises(FormatError, match=rf"{p}: not a"):
            load(p)
    npy = tmp_path / "array.npz"
    with open(npy, "wb") as fh:
        np.save(fh, np.zeros(3))
    with pytest.raises(FormatError, match="single .npy array"):
        load(npy)
    with pytest.raises(FormatError, match="no such file"):
        load_model(tmp_path / "missing.npz")


def test_exact_entries_too_long_to_convert_quickly_are_refused(tmp_path):
    # decimal text converts to int in time quadratic in its length: one weight 1/10^4000000
    # in a 16 KB compressed file took 99 s to load
    from relulab.io.native import MAX_ENTRY_DIGITS, load

    def write(n_digits):
        p = tmp_path / f"d{n_digits}.npz"
        np.savez_compressed(p, format=np.array("relulab-network"), version=np.array(1), exact=np.array(1),
                            n_layers=np.array(1), W0=np.array([["1/1" + "0" * n_digits]]), b0=np.array(["0"]))
        return p

    net = load(write(20_000))
    assert net.weights[0][0, 0] == Fraction(1, 10 ** 20_000)
    with pytest.raises(FormatError, match="at most 200000 digits"):
        load(write(MAX_ENTRY_DIGITS + 10))


def test_an_exact_save_of_a_modest_network_loads_back(tmp_path):
    # 60,000 entries of ~39 characters passed a cap of 2,000,000 characters per array on
    # save and were refused on load (aud_sess10 F3): short entries convert in linear time
    from relulab.io.native import load, save

    rng = np.random.default_rng(0)
    net = Network([rng.normal(size=(300, 200)), rng.normal(size=(1, 300))],
                  [rng.normal(size=300), np.zeros(1)]).exact()
    p = tmp_path / "n.npz"
    save(net, p)
    back = load(p)
    assert back == net and back.weights[0][7, 3] == Fraction(float(net.float().weights[0][7, 3]))


def test_many_long_entries_over_many_arrays_are_refused_by_their_squared_digits(tmp_path):
    # 8 layers of 9 entries of 200,000 digits passed every per-array cap and took 42 s
    from relulab.io.native import MAX_SQUARED_DIGITS, load, save

    big = "7" * 200_000
    arrays = {"format": np.array("relulab-network"), "version": np.array(1), "exact": np.array(1),
              "n_layers": np.array(8)}
    for k in range(8):
        a = np.full((3, 3), "0", dtype="<U200000")
        a.flat[:9] = big
        arrays[f"W{k}"], arrays[f"b{k}"] = a, np.full(3, "0")
    assert 72 * 200_000 ** 2 > MAX_SQUARED_DIGITS > 9 * 200_000 ** 2
    p = tmp_path / "slow.npz"
    np.savez(p, **arrays)
    with pytest.raises(FormatError, match="squared digits"):
        load(p)
    # save refuses what load would refuse: nothing is written
    sevens = (10**200_000 - 1) // 9 * 7        # the integer "7" * 200,000
    W = np.array([[Fraction(sevens)] * 9] * 9, dtype=object)
    deep = Network([W] * 8, [np.array([Fraction(0)] * 9, dtype=object)] * 8, exact=True)
    with pytest.raises(FormatError, match="squared digits"):
        save(deep, tmp_path / "deep.npz")
    assert not (tmp_path / "deep.npz").exists()


def test_arrays_beyond_the_memory_budget_are_refused_from_their_headers(tmp_path):
    # a <U200000 array is 800 KB per entry once read, whatever its text: np.load expanded
    # every array before any check
    from relulab.io.native import load
    from relulab.limits import ResourceLimitError, memory_limit

    a = np.full((10, 10), "0", dtype="<U200000")
    a.flat[0] = "7" * 200_000
    p = tmp_path / "wide.npz"
    np.savez_compressed(p, format=np.array("relulab-network"), version=np.array(1), exact=np.array(1),
                        n_layers=np.array(1), W0=a, b0=np.full(10, "0"))
    assert a.nbytes == 80_000_000
    with memory_limit(50_000_000), pytest.raises(ResourceLimitError, match=r"wide\.npz: reading its arrays"):
        load(p)
    assert load(p).weights[0][0, 0] == (10**200_000 - 1) // 9 * 7   # within the default budget


def test_an_npy_header_of_version_3_is_refused_not_read_unchecked(tmp_path):
    # version 3.0 headers were skipped by the memory check and np.load read them anyway:
    # a 780 KB file expanded to 1.56 GB under a 0.2 GB budget (aud_sess11 F2)
    import io

    from relulab.io.native import load

    def member(a, version):
        buf = io.BytesIO()
        np.lib.format.write_array(buf, a, version=version)
        return buf.getvalue()

    arrays = {"format": np.array("relulab-network"), "version": np.array(1), "exact": np.array(0),
              "n_layers": np.array(1), "W0": np.ones((1, 2)), "b0": np.zeros(1)}
    for version, ok in (((1, 0), True), ((2, 0), True), ((3, 0), False)):
        p = tmp_path / f"v{version[0]}.npz"
        with zipfile.ZipFile(p, "w") as z:
            for k, a in arrays.items():
                z.writestr(k + ".npy", member(a, version if k == "W0" else (1, 0)))
        if ok:
            assert load(p).weights[0].tolist() == [[1.0, 1.0]]
        else:
            with pytest.raises(FormatError, match=r"'W0\.npy' has npy format version 3\.0"):
                load(p)
