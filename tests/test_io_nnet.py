"""NNet (ACAS Xu text format): known evaluation, exact folding of the normalisation and
clipping into one Network, exact round trips, and line-numbered errors on malformed files."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from conftest import random_network

from relulab import Network
from relulab.errors import FormatError
from relulab.io import load_model, save_model
from relulab.io.nnet import NNetModel, load_nnet, read_nnet, save_nnet, write_nnet

# The known evaluation of TestNetwork.nnet given in shared/data/README.md.
KNOWN_X = np.array([1.0, 1.0, 1.0, 100.0, 1.0])
KNOWN_Y = np.array([270.94961805, 280.8974763, 274.55254776, 288.10071007, 256.18037737])


@pytest.fixture(scope="module")
def test_nnet(shared_data: Path) -> Path:
    p = shared_data / "nnet" / "TestNetwork.nnet"
    if not p.is_file():
        pytest.skip(f"{p} not found")
    return p


@pytest.fixture(scope="module")
def model(test_nnet: Path) -> NNetModel:
    return read_nnet(test_nnet)


def _outside_points(model: NNetModel, rng: np.random.Generator, n: int) -> np.ndarray:
    """Raw inputs spread over twice the [min, max] box, so many coordinates are clipped."""
    lo, hi = model.input_min, model.input_max
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    return mid + rng.uniform(-2, 2, size=(n, lo.size)) * half


# ------------------------------------------------------------ known evaluation
def test_header_read(model: NNetModel) -> None:
    assert model.network.input_dim == 5 and model.network.output_dim == 5
    assert model.network.widths == (50,) * 6
    assert model.input_min.tolist() == [0.0, -3.141593, -3.141593, 100.0, 0.0]
    assert model.input_max.tolist() == [60760.0, 3.141593, 3.141593, 1200.0, 1200.0]
    assert model.input_mean.tolist() == [19791.091, 0.0, 0.0, 650.0, 600.0]
    assert model.output_mean == 7.5188840201 and model.output_range == 373.94992


def test_known_evaluation(model: NNetModel, test_nnet: Path) -> None:
    np.testing.assert_allclose(model.evaluate(KNOWN_X), KNOWN_Y, rtol=1e-5)
    net = model.to_network()
    assert net.widths == (10,) + (50,) * 6  # one clipping layer of 2 d neurons
    np.testing.assert_allclose(net(KNOWN_X), KNOWN_Y, rtol=1e-5)
    # load_nnet / load_model give the same raw -> raw network by default.
    assert load_nnet(test_nnet) == net
    np.testing.assert_allclose(load_model(test_nnet)(KNOWN_X), KNOWN_Y, rtol=1e-5)


def test_clipping(model: NNetModel) -> None:
    raw = np.array([-100.0, 5.0, -5.0, 50.0, 2000.0])  # every input outside [min, max]
    clipped = np.clip(raw, model.input_min, model.input_max)
    assert clipped.tolist() == [0.0, 3.141593, -3.141593, 100.0, 1200.0]
    y_clipped = model.evaluate(clipped)
    assert np.array_equal(model.evaluate(raw), y_clipped)
    net = model.to_network()
    np.testing.assert_allclose(net(raw), y_clipped, rtol=1e-10)
    np.testing.assert_allclose(net(clipped), y_clipped, rtol=1e-10)
    # Without the clipping layer the answer differs: the clipping is really exercised.
    unclipped = model.to_network(clip=False)(raw)
    assert np.max(np.abs(unclipped - y_clipped)) > 1.0


def test_single_network_matches_evaluate_on_batch(model: NNetModel, rng) -> None:
    X = _outside_points(model, rng, 500)
    ref = model.evaluate(X)
    got = model.to_network()(X)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9 * np.max(np.abs(ref)))
    # Inside the box the clip-free network is the same function too.
    Xin = np.clip(X, model.input_min, model.input_max)
    np.testing.assert_allclose(model.to_network(clip=False)(Xin), ref, rtol=1e-9, atol=1e-7)


def test_to_network_is_exact_in_rationals(model: NNetModel) -> None:
    exact = NNetModel(
        model.network.exact(), model.input_min, model.input_max, model.input_mean,
        model.input_range, model.output_mean, model.output_range,
    )
    net = exact.to_network()
    assert net.is_exact
    points = [
        [Fraction(1), Fraction(1), Fraction(1), Fraction(100), Fraction(1)],
        [Fraction(-7, 3), Fraction(22, 7), Fraction(-4), Fraction(1300), Fraction(601, 2)],
    ]
    for x in points:
        assert list(net(x)) == list(exact.evaluate(x))
    y = exact.evaluate(points[0])
    np.testing.assert_allclose([float(v) for v in y], KNOWN_Y, rtol=1e-5)


def test_normalised_network_is_acasxu_1_1(model: NNetModel, acasxu_dir: Path, rng) -> None:
    """TestNetwork.nnet is ACAS Xu network 1_1: on normalised inputs its bare network agrees
    with the VNN-COMP ONNX model run by onnxruntime (to the 6 digits the .nnet keeps)."""
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(str(acasxu_dir / "onnx" / "ACASXU_run2a_1_1_batch_2000.onnx"))
    name = sess.get_inputs()[0].name
    X = rng.uniform(-0.5, 0.5, size=(100, 5))
    Y = np.stack([sess.run(None, {name: x.reshape(1, 1, 1, 5).astype(np.float32)})[0].ravel() for x in X])
    np.testing.assert_allclose(model.network(X), Y, atol=1e-4)
    assert load_nnet(acasxu_dir.parent / "nnet" / "TestNetwork.nnet", normalize=False) == model.network


@pytest.mark.parametrize("seed", range(6))
def test_to_network_with_partial_bounds(seed: int) -> None:
    """Every mix of finite and infinite bounds, and a network with no hidden layer."""
    rng = np.random.default_rng(seed)
    d = 4
    dims = [d, 6, 3] if seed % 2 else [d, 3]
    net = random_network(rng, dims)
    lo = rng.normal(size=d) - 1
    hi = lo + rng.uniform(0.5, 2, size=d)
    lo[0] = -np.inf                # upper bound only
    hi[1] = np.inf                 # lower bound only
    lo[2], hi[2] = -np.inf, np.inf  # no bound
    m = NNetModel(net, lo, hi, rng.normal(size=d), rng.uniform(0.5, 3, size=d),
                  float(rng.normal()), float(rng.uniform(0.5, 3)))
    single = m.to_network()
    assert single.widths == (2 * d, *net.widths)
    X = rng.normal(size=(300, d)) * 3
    np.testing.assert_allclose(single(X), m.evaluate(X), rtol=1e-10, atol=1e-10)
    # Exactly, in rationals.
    mx = NNetModel(net.exact(), lo, hi, m.input_mean, m.input_range, m.output_mean, m.output_range)
    Xq = [[Fraction(int(v * 1000), 1000) for v in x] for x in X[:20]]
    assert np.all(mx.to_network()(Xq) == mx.evaluate(Xq))


def test_huge_and_float32_max_bounds_keep_the_input(rng) -> None:
    """The reference converters write +-3.40282e38 for "unbounded": that is no bound.  A
    finite bound of 1e20 is folded exactly for inputs inside it (lo + relu(x - lo) lost x
    to rounding: every input read 0, or 12345.678 read 16384)."""
    f32 = 3.40282e38
    net = random_network(rng, [4, 5, 2])
    lo = np.array([-f32, -1e20, -1e20, -2.0])
    hi = np.array([f32, 1e20, np.inf, 3.0])
    m = NNetModel(net, lo, hi, np.zeros(4), np.ones(4), 0.0, 1.0)
    single = m.to_network()
    X = np.vstack([rng.normal(size=(200, 4)) * 1e4, [[1.0, 12345.678, -3.0, 0.5], [5.0, 3e20, -4e20, 9.0]]])
    np.testing.assert_allclose(single(X), m.evaluate(X), rtol=1e-12, atol=1e-12)
    # inside the bounds the clip is the identity, exactly
    clip_only = NNetModel(Network([np.eye(2)], [np.zeros(2)]), lo[1:3], hi[1:3], np.zeros(2), np.ones(2), 0.0, 1.0)
    Xin = X[:200, 1:3]
    assert np.array_equal(clip_only.to_network()(Xin), Xin)
    # only sentinels: nothing to clip, no layer
    none = NNetModel(net, np.full(4, -f32), np.full(4, f32), np.zeros(4), np.ones(4), 0.0, 1.0)
    assert none.to_network() == net


def test_no_clip_layer_when_unbounded(rng) -> None:
    net = random_network(rng, [3, 5, 2])
    m = NNetModel.from_network(net)
    assert m.to_network() == net  # identity normalisation, infinite bounds: nothing added


# ------------------------------------------------------------------ round trips
def test_round_trip_exact(model: NNetModel, test_nnet: Path, tmp_path: Path) -> None:
    out = tmp_path / "copy.nnet"
    write_nnet(model, out)
    back = read_nnet(out)
    assert back == model
    assert back.network == model.network
    for name in ("input_min", "input_max", "input_mean", "input_range"):
        assert np.array_equal(getattr(back, name), getattr(model, name))
    assert (back.output_mean, back.output_range) == (model.output_mean, model.output_range)
    assert load_nnet(out) == load_nnet(test_nnet)
    # Writing what was read gives the same bytes again.
    out2 = tmp_path / "copy2.nnet"
    write_nnet(back, out2)
    assert out2.read_text() == out.read_text()


@pytest.mark.parametrize("dims", [[3, 4], [5, 7, 2], [2, 8, 8, 8, 3]])
def test_save_load_random_network_exact(dims: list[int], tmp_path: Path) -> None:
    rng = np.random.default_rng(len(dims))
    net = random_network(rng, dims)
    p = tmp_path / "r.nnet"
    save_nnet(net, p)
    assert load_nnet(p) == net
    assert load_nnet(p, normalize=False) == net
    save_model(net, tmp_path / "r2.nnet")
    assert load_model(tmp_path / "r2.nnet") == net


def test_save_with_normalisation(rng, tmp_path: Path) -> None:
    net = random_network(rng, [3, 6, 2])
    kw = dict(input_min=[-1.0, 0.0, 2.0], input_max=[1.0, 0.5, 3.0], input_mean=[0.1, 0.2, 2.5],
              input_range=[2.0, 0.5, 1.0 / 3.0], output_mean=-0.7, output_range=12.5)
    p = tmp_path / "n.nnet"
    save_nnet(net, p, **kw)
    m = read_nnet(p)
    assert m == NNetModel(net, **kw)
    assert load_nnet(p, normalize=False) == net
    X = rng.normal(size=(100, 3)) * 2
    np.testing.assert_allclose(load_nnet(p)(X), m.evaluate(X), rtol=1e-12, atol=1e-12)


def test_skip_and_exact_networks(rng, tmp_path: Path) -> None:
    net = random_network(rng, [3, 5, 2], skip=True)
    p = tmp_path / "s.nnet"
    save_nnet(net, p)
    back = load_nnet(p)
    assert back == net.without_skip()
    X = rng.normal(size=(50, 3))
    np.testing.assert_allclose(back(X), net(X), rtol=1e-12, atol=1e-12)
    ex = Network([[[Fraction(1, 3)]]], [[Fraction(1, 2)]])
    save_nnet(ex, p)  # NNet stores floats: the Fractions are rounded
    assert load_nnet(p) == ex.float()
    with pytest.raises(FormatError, match="skip"):
        NNetModel(net, [0] * 3, [1] * 3, [0] * 3, [1] * 3)


# ------------------------------------------------------------------ bad files
def _lines(test_nnet: Path) -> list[str]:
    return test_nnet.read_text().splitlines()


def _write(tmp_path: Path, lines: list[str]) -> Path:
    p = tmp_path / "bad.nnet"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_bad_header_count(test_nnet: Path, tmp_path: Path) -> None:
    lines = _lines(test_nnet)
    lines[1] = "7,5,5,"
    p = _write(tmp_path, lines)
    with pytest.raises(FormatError, match=rf"{p}:2: expected 4 numbers"):
        read_nnet(p)


def test_non_number(test_nnet: Path, tmp_path: Path) -> None:
    lines = _lines(test_nnet)
    lines[40] = lines[40].replace("e", "x", 1)
    p = _write(tmp_path, lines)
    with pytest.raises(FormatError, match=rf"{p}:41: '.*' is not a number \(layer 1 weight row"):
        read_nnet(p)


def test_wrong_row_length(test_nnet: Path, tmp_path: Path) -> None:
    lines = _lines(test_nnet)
    lines[10] = lines[10] + "1.0,"
    p = _write(tmp_path, lines)
    with pytest.raises(FormatError, match=rf"{p}:11: expected 5 numbers .* found 6"):
        read_nnet(p)


def test_truncated(test_nnet: Path, tmp_path: Path) -> None:
    lines = _lines(test_nnet)[:-3]
    p = _write(tmp_path, lines)
    with pytest.raises(FormatError, match=rf"{p}: file ends after line {len(lines)}; expected layer 7 bias 3"):
        read_nnet(p)


def test_trailing_data(test_nnet: Path, tmp_path: Path) -> None:
    lines = [*_lines(test_nnet), "1.0,"]
    p = _write(tmp_path, lines)
    with pytest.raises(FormatError, match=rf"{p}:{len(lines)}: unexpected data"):
        read_nnet(p)


def test_sizes_disagree_with_header(test_nnet: Path, tmp_path: Path) -> None:
    lines = _lines(test_nnet)
    lines[2] = "5,50,50,50,50,50,50,4,"
    p = _write(tmp_path, lines)
    with pytest.raises(FormatError, match=rf"{p}:3: layer sizes .* 5 outputs"):
        read_nnet(p)


def test_nan_weight_and_zero_range(test_nnet: Path, tmp_path: Path) -> None:
    lines = _lines(test_nnet)
    bad = list(lines)
    bad[20] = "nan," + bad[20].split(",", 1)[1]
    p = _write(tmp_path, bad)
    with pytest.raises(FormatError, match=rf"{p}:21: 'nan' is not a finite number"):
        read_nnet(p)
    bad = list(lines)
    bad[7] = "60261.0,0.0,6.28318530718,1100.0,1200.0,373.94992,"
    p = _write(tmp_path, bad)
    with pytest.raises(FormatError, match=rf"{p}:8: an input range is 0"):
        read_nnet(p)


def test_unreadable(tmp_path: Path) -> None:
    p = tmp_path / "bin.nnet"
    p.write_bytes(b"\xff\xfe\x00\x81garbage")
    with pytest.raises(FormatError, match="not an NNet text file"):
        read_nnet(p)
    with pytest.raises(FormatError, match="cannot read"):
        read_nnet(tmp_path / "missing.nnet")
    empty = tmp_path / "empty.nnet"
    empty.write_text("// only a comment\n")
    with pytest.raises(FormatError, match="file ends after line 1"):
        read_nnet(empty)



def test_mutated_files_never_crash(tmp_path: Path) -> None:
    """Random edits of a small .nnet file either read or raise FormatError."""
    rng = np.random.default_rng(11)
    p = tmp_path / "small.nnet"
    save_nnet(random_network(rng, [2, 3, 2]), p, input_min=[0, 0], input_max=[1, 1])
    lines = p.read_text().splitlines()
    pieces = ["", "1", "x", ",", "nan", "inf", "-1", "0,0,", "3,2,2,3,"]
    outcomes = {"read": 0, "refused": 0}
    bad = tmp_path / "mut.nnet"
    for _ in range(300):
        ls = list(lines)
        for _ in range(int(rng.integers(1, 3))):
            i = int(rng.integers(0, len(ls)))
            op = rng.integers(0, 3)
            if op == 0:
                del ls[i]
            elif op == 1:
                ls.insert(i, str(rng.choice(pieces)))
            else:
                ls[i] = ls[i].replace(",", str(rng.choice(pieces)), 1)
        bad.write_text("\n".join(ls))
        try:
            read_nnet(bad)
            outcomes["read"] += 1
        except FormatError:
            outcomes["refused"] += 1
    assert outcomes["refused"] > 0


_SMALL = ["2,2,1,3,", "2,3,1,", "0,", "-1.0,-2.0,", "1.0,2.0,", "0.0,0.5,1.0,", "1.0,2.0,3.0,",
          "1.0,2.0,", "3.0,4.0,", "5.0,6.0,", "0.1,", "0.2,", "0.3,", "1.0,-1.0,0.5,", "0.25,"]


def test_byte_order_mark_and_latin1_comment_are_read(tmp_path: Path) -> None:
    want = read_nnet(_write(tmp_path, _SMALL)).to_network()
    p = tmp_path / "bom.nnet"
    p.write_bytes(b"\xef\xbb\xbf" + "\n".join(_SMALL).encode() + b"\n")
    assert read_nnet(p).to_network() == want
    p = tmp_path / "latin1.nnet"
    p.write_bytes("// r\xe9seau\n".encode("latin-1") + "\n".join(_SMALL).encode() + b"\n")
    assert read_nnet(p).to_network() == want


@pytest.mark.parametrize("token", ["1_0", "\u0661", "0x1p3", "1e"])
def test_numbers_are_c_syntax_only(tmp_path: Path, token: str) -> None:
    # Python's float() reads '1_0' as 10 and an Arabic-Indic one as 1; atof does not.
    bad = list(_SMALL)
    bad[11] = token + ","
    with pytest.raises(FormatError, match=r":12: .* is not a number"):
        read_nnet(_write(tmp_path, bad))


def test_infinite_clip_bounds_are_refused_with_their_line(tmp_path: Path) -> None:
    bad = list(_SMALL)
    bad[3], bad[4] = "inf,-2.0,", "inf,2.0,"
    with pytest.raises(FormatError, match=r":4: input 0 has minimum inf"):
        read_nnet(_write(tmp_path, bad))
    bad[3], bad[4] = "5.0,-2.0,", "1.0,2.0,"                  # min > max: the maximums' line
    with pytest.raises(FormatError, match=r":5: input 0 has maximum 1.0 \(minimum 5.0\)"):
        read_nnet(_write(tmp_path, bad))
    with pytest.raises(FormatError, match="clips every input to infinity"):
        NNetModel(Network([np.eye(1)], [np.zeros(1)]), [np.inf], [np.inf], [0.0], [1.0])


def test_overflowing_denormalisation_names_the_file(tmp_path: Path) -> None:
    bad = list(_SMALL)
    bad[13] = "1.0,1e308,0.5,"                                   # weight 1e308 * output range 3
    p = _write(tmp_path, bad)
    read_nnet(p)                                                 # the file itself is valid
    with pytest.raises(FormatError, match=rf"{p}: folding the \(de\)normalisation"):
        load_nnet(p)


def test_a_clip_layer_beyond_the_memory_budget_is_refused_with_the_file(tmp_path: Path) -> None:
    # the dense clip layer of a wide file was allocated unchecked: "MemoryError: Unable to
    # allocate 13.4 GiB" for a 360 KB file of 30,000 inputs
    from relulab.limits import ResourceLimitError, memory_limit

    d = 2000
    m = NNetModel(Network([np.ones((1, d))], [np.zeros(1)]), -np.ones(d), np.ones(d), np.zeros(d),
                  np.ones(d), 0.0, 1.0)
    path = tmp_path / "wide.nnet"
    write_nnet(m, path)
    with memory_limit(50 * 2**20), pytest.raises(ResourceLimitError, match=r"wide\.nnet: the clip layer of 2000 inputs"):
        load_nnet(path)
    assert load_nnet(path, clip=False).widths == ()  # without the clip layer it fits


def test_the_parse_memory_check_counts_numbers_not_only_bytes(tmp_path):
    # each number costs about 130 bytes while parsed, whatever its length: a 12 MB file of
    # "10," entries peaked at 525 MB under a 0.15 GB budget (checked as 12 bytes per byte)
    from relulab.limits import ResourceLimitError, memory_limit

    w = 300
    net = Network([np.ones((w, w)), np.ones((1, w))], [np.zeros(w), np.zeros(1)])
    path = tmp_path / "short.nnet"
    save_model(net, path)
    text = path.read_text()
    assert 12 * len(text) < 8 * 2**20 < 140 * text.count(",")
    with memory_limit(8 * 2**20), pytest.raises(ResourceLimitError, match="numbers"):
        read_nnet(path)
    assert read_nnet(path).network.widths == (w,)


@pytest.mark.parametrize("brk", ["\r", "\x0b", "\u2028"])
def test_the_parse_memory_check_counts_every_line_break_splitlines_takes(tmp_path, brk):
    # splitlines() also ends lines at "\r" and others: a 30 MB file of "1\r" lines passed a
    # "\n" count (no commas, 12 bytes per byte) and peaked at 3.2 GB (aud_sess10 F5)
    from relulab.limits import ResourceLimitError, memory_limit

    path = tmp_path / "cr.nnet"
    n = 200_000
    path.write_bytes(("1" + brk).encode("utf-8") * n)
    with open(path, encoding="utf-8", newline="") as fh:
        text = fh.read()
    assert len(text.splitlines()) == n and 12 * len(text) < 8 * 2**20 < 220 * n
    with memory_limit(8 * 2**20), pytest.raises(ResourceLimitError, match="parsing"):
        read_nnet(path)
    with pytest.raises(FormatError, match=r"cr\.nnet:1: expected 4 numbers"):
        read_nnet(path)          # within the default budget: the header is read and refused
