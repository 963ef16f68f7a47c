"""GLU blocks: the forward pass, the paired-query identities, the constructive stages
checked against the true block (crossings on gate hyperplanes, gate rows, width), and
whole recoveries checked on fresh inputs the attack never queried."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import erf

from relulab.extract import ExtractError, GLUBlock, QueryOracle, extract_glu, random_glu
from relulab.extract.glu import param_error
from relulab.extract.glu_gates import gate_rows, scan_plane


def _rel(a: GLUBlock, b, X: np.ndarray) -> np.ndarray:
    Y = b(X)
    return np.linalg.norm(a(X) - Y, axis=1) / np.linalg.norm(Y, axis=1).mean()


@pytest.mark.parametrize("act", ["silu", "gelu", "relu"])
def test_forward_and_paired_identities(act):
    blk = random_glu(5, 3, 2, act=act, seed=1)
    X = np.random.default_rng(0).normal(size=(50, 5))
    zg, zu = X @ blk.W_gate.T, X @ blk.W_up.T
    a = {"silu": zg / (1 + np.exp(-zg)), "relu": np.maximum(zg, 0),
         "gelu": 0.5 * zg * (1 + erf(zg / np.sqrt(2)))}[act]
    assert np.allclose(blk(X), (a * zu) @ blk.W_out.T, atol=1e-12)
    # act(z) - act(-z) = z: the even part is the activation-free quadratic form
    even = 0.5 * (blk(X) + blk(-X))
    assert np.allclose(even, 0.5 * (zg * zu) @ blk.W_out.T, atol=1e-12)


@pytest.mark.parametrize("act,scale", [("relu", 1.0), ("silu", 1e8), ("gelu", 1e8)])
def test_crossings_lie_on_gate_hyperplanes(act, scale):
    blk = random_glu(7, 6, 5, act=act, seed=4)
    o = QueryOracle(blk, 7)
    ks, clean = scan_plane(o, 7, scale, 512, np.random.default_rng(2), 2.2e-16)
    assert ks and clean > 0.9
    gn = blk.W_gate / np.linalg.norm(blk.W_gate, axis=1, keepdims=True)
    wn = blk.W_out / np.linalg.norm(blk.W_out, axis=0)
    raw, _, _ = gate_rows(o, ks, scale, 1e-6)
    for k, g in zip(ks, raw, strict=True):
        j = int(np.argmax(np.abs(wn.T @ k.w_hat)))
        assert abs(abs(wn[:, j] @ k.w_hat) - 1) < 1e-10      # the unit's output column
        assert abs(gn[j] @ k.x_hat) < 1e-12                   # the crossing is on its hyperplane
        assert abs(abs(gn[j] @ g) / np.linalg.norm(g) - 1) < 1e-9  # and its gate row


@pytest.mark.parametrize("act", ["silu", "gelu", "relu"])
@pytest.mark.parametrize("d,h,m", [(6, 4, None), (5, 12, 3), (3, 5, 4)])
def test_small_blocks_recovered_constructively(act, d, h, m):
    blk = random_glu(d, h, m, act=act, seed=d + h)
    r = extract_glu(blk, d, act=act, refine=False)
    assert r.status == "recovered" and not r.refined
    assert r.hidden == h and r.hidden_inferred  # the width counted from the crossings
    X = np.random.default_rng(99).normal(size=(500, d)) * 2.0
    assert np.max(_rel(r.block, blk, X)) < 1e-6
    assert r.worst_rel_error < 1e-6 and r.param_error["gate_max"] < 1e-6


@settings(max_examples=8, deadline=None)
@given(d=st.integers(3, 7), h=st.integers(1, 9), seed=st.integers(0, 10**6),
       act=st.sampled_from(["silu", "gelu", "relu"]))
def test_random_blocks_recovered(d, h, seed, act):
    blk = random_glu(d, h, act=act, seed=seed)
    r = extract_glu(blk, d, act=act, seed=seed % 97)
    X = np.random.default_rng(seed + 1).normal(size=(300, d))
    assert np.median(_rel(r.block, blk, X)) < 1e-6
    assert r.hidden == h
    # CPU seconds are kept for every stage that asked queries, and only for stages
    assert set(r.stage_queries) <= set(r.stage_cpu) and min(r.stage_cpu.values()) >= 0


def test_given_width_and_symmetry_aligned_parameters():
    blk = random_glu(8, 6, act="silu", seed=5)
    r = extract_glu(blk, 8, hidden=6, act="silu")
    assert r.hidden == 6 and not r.hidden_inferred
    p = param_error(r.block, blk)
    assert p["matched"] == 6 and p["gate_max"] < 1e-6 and p["product_max"] < 1e-6
    # SiLU gates are identifiable with magnitude and orientation: no rescaling needed
    gn = np.sort(np.linalg.norm(r.block.W_gate, axis=1))
    assert np.allclose(gn, np.sort(np.linalg.norm(blk.W_gate, axis=1)), rtol=1e-6)


def test_param_error_sees_through_symmetries_and_catches_changes():
    b = random_glu(4, 3, 2, act="relu", seed=7)
    perm = [2, 0, 1]
    c = np.array([0.5, 2.0, 3.0])
    same = GLUBlock(c[:, None] * b.W_gate[perm], -b.W_up[perm], -b.W_out[:, perm] / c, "relu")
    p = param_error(same, b)
    assert p["gate_max"] < 1e-12 and p["product_max"] < 1e-12
    off = GLUBlock(b.W_gate, b.W_up * 1.01, b.W_out, "relu")
    assert param_error(off, b)["product_max"] > 5e-3


def test_torch_module_oracle():
    torch = pytest.importorskip("torch")
    blk = random_glu(6, 5, 4, act="gelu", seed=8)

    class Glu(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.g = torch.nn.Linear(6, 5, bias=False, dtype=torch.float64)
            self.u = torch.nn.Linear(6, 5, bias=False, dtype=torch.float64)
            self.o = torch.nn.Linear(5, 4, bias=False, dtype=torch.float64)
            with torch.no_grad():
                self.g.weight.copy_(torch.as_tensor(blk.W_gate))
                self.u.weight.copy_(torch.as_tensor(blk.W_up))
                self.o.weight.copy_(torch.as_tensor(blk.W_out))

        def forward(self, x):
            return self.o(torch.nn.functional.gelu(self.g(x)) * self.u(x))

    r = extract_glu(Glu(), 6, act="gelu", reference=blk)
    assert r.hidden == 5 and r.median_rel_error < 1e-8 and r.param_error["gate_max"] < 1e-6


def test_float32_oracle_degrades_gracefully():
    blk = random_glu(6, 4, act="silu", seed=9)

    def f32(X):
        X = np.asarray(X, np.float32)
        z = X @ blk.W_gate.T.astype(np.float32)
        a = z / (np.float32(1) + np.exp(-np.clip(z, -80, 80)))
        return ((a * (X @ blk.W_up.T.astype(np.float32))) @ blk.W_out.T.astype(np.float32)).astype(float)

    r = extract_glu(f32, 6, act="silu", time_limit=20)
    assert r.noise > 1e-9  # the rounding is measured
    X = np.random.default_rng(3).normal(size=(300, 6))
    assert np.median(_rel(r.block, blk, X)) < 1e-2


def _rounded(blk: GLUBlock, kind: str):
    """The block evaluated in float32, or its float64 outputs rounded to bfloat16 (8-bit
    mantissa, by clearing the low 16 bits of the float32 pattern with rounding)."""
    if kind == "float32":
        g, u, w = (a.astype(np.float32) for a in (blk.W_gate, blk.W_up, blk.W_out))

        def f(X):
            X = np.asarray(X, np.float32)
            z = X @ g.T
            a = {"silu": lambda z: z / (np.float32(1) + np.exp(-np.clip(z, -80, 80))),
                 "relu": lambda z: np.maximum(z, np.float32(0))}[blk.act](z)
            return ((a * (X @ u.T)) @ w.T).astype(float)
        return f

    def b(X):
        bits = blk(X).astype(np.float32).view(np.uint32)
        bits = (bits + np.uint32(0x7FFF) + ((bits >> 16) & 1)) & np.uint32(0xFFFF0000)
        return bits.view(np.float32).astype(float)
    return b


@pytest.mark.parametrize("act", ["silu", "relu"])
def test_float32_noise_aware_path_counts_units_and_fits(act):
    # rounding makes duplicate and spurious units; merging, dropping unseen units and
    # median gate rows leave exactly the true width, and the polish fits to ~1e-5
    blk = random_glu(8, 12, act=act, seed=0)
    r = extract_glu(_rounded(blk, "float32"), 8, act=act, time_limit=20, reference=blk)
    assert r.status == "recovered" and r.hidden == 12 and r.hidden_inferred
    assert 1e-9 < r.noise < 1e-6 and not r.fallback  # float32 rounding, measured
    X = np.random.default_rng(5).normal(size=(400, 8))
    assert np.median(_rel(r.block, blk, X)) < 1e-3
    assert r.param_error["gate_median"] < 1e-3


def test_bf16_outputs_partial_with_named_fallback():
    blk = random_glu(6, 5, act="silu", seed=2)
    f = _rounded(blk, "bf16")
    Y = f(np.random.default_rng(0).normal(size=(50, 6)))
    assert 0 < np.max(np.abs(Y - blk(np.random.default_rng(0).normal(size=(50, 6))))) < 0.05
    # width unknown: nothing to fit, nothing invented
    r = extract_glu(f, 6, act="silu")
    assert r.status == "partial" and r.block is None and not r.fallback
    assert "no gate crossing" in r.message and "hidden=" in r.message
    # width given: a least-squares fit from random weights, flagged and still partial
    r2 = extract_glu(f, 6, hidden=5, act="silu", time_limit=5)
    assert r2.status == "partial" and r2.fallback and r2.block is not None
    assert "fallback" in r2.message and "no gate row" in r2.message
    assert r2.to_dict()["fallback"] is True
    # its validation numbers are measured on fresh pairs, against the rounded oracle
    X = np.random.default_rng(7).normal(size=(200, 6))
    assert np.isfinite(r2.median_rel_error) and r2.block(X).shape == (200, 6)


def test_budget_stops_partial_and_queries_are_counted():
    blk = random_glu(6, 4, act="relu", seed=1)
    calls = []

    def f(X):
        calls.append(len(X))
        return blk(X)

    r = extract_glu(f, 6, act="relu", budget=500)
    assert r.status == "partial" and r.queries <= 500 and r.queries == sum(calls)
    assert "budget" in r.message
    full = extract_glu(f, 6, act="relu")
    assert full.status == "recovered" and full.queries == sum(calls) - r.queries
    assert sum(full.stage_queries.values()) == full.queries


def test_glu_bad_input():
    with pytest.raises(ExtractError, match="shapes"):
        GLUBlock(np.eye(2), np.eye(3), np.eye(2))
    with pytest.raises(ExtractError, match="activation"):
        GLUBlock(np.eye(2), np.eye(2), np.eye(2), "tanh")
    with pytest.raises(ExtractError, match="act"):
        extract_glu(random_glu(2, 1), 2, 1, act="tanh")
    with pytest.raises(ExtractError, match="d > 0"):
        extract_glu(random_glu(2, 1), 0)
    with pytest.raises(ExtractError, match="hidden"):
        extract_glu(random_glu(2, 1), 2, hidden=0)
    with pytest.raises(ExtractError, match="reference"):
        extract_glu(random_glu(3, 1), 3, act="relu", reference=random_glu(3, 1, act="silu"))
    with pytest.raises(ExtractError, match="3-input"):
        extract_glu(random_glu(3, 1), 4)  # the block takes 3 inputs, not 4
    with pytest.raises(ExtractError, match="NaN"):
        extract_glu(lambda X: np.full((len(X), 1), np.nan), 3)


def test_even_fit_recovers_perturbed_directions():
    # Gauss-Newton on the even part from gate rows, value rows and output directions
    # all off by ~2 %: back to the true directions (an exact even part has one
    # decomposition up to scale and sign per unit)
    from relulab.extract.glu_linear import even_fit

    rng = np.random.default_rng(4)
    d, h, m = 8, 5, 8
    G = rng.normal(size=(h, d))
    G /= np.linalg.norm(G, axis=1, keepdims=True)
    W = rng.normal(size=(m, h))
    W /= np.linalg.norm(W, axis=0)
    V = rng.normal(size=(h, d))
    X = rng.normal(size=(300, d))
    E = 0.5 * ((X @ G.T) * (X @ V.T)) @ W.T

    def noisy(A):
        return A + 0.02 * rng.normal(size=A.shape) * np.abs(A).mean()

    G0, W0 = noisy(G), noisy(W)
    G1, V1, W1, res = even_fit(X, E, G0 / np.linalg.norm(G0, axis=1, keepdims=True), noisy(V),
                               W0 / np.linalg.norm(W0, axis=0), steps=12, cg_iter=200, cg_rtol=1e-12)
    assert res < 1e-9
    assert np.abs(np.abs(np.sum(G1 * G, axis=1)) - 1).max() < 1e-9
    assert np.abs(np.abs(np.sum(W1 * W, axis=0)) - 1).max() < 1e-9
    # fresh inputs: the fitted even part is the true one
    Xf = rng.normal(size=(50, d))
    Ef = 0.5 * ((Xf @ G1.T) * (Xf @ V1.T)) @ W1.T
    assert np.abs(Ef - 0.5 * ((Xf @ G.T) * (Xf @ V.T)) @ W.T).max() < 1e-8 * np.abs(Ef).max()


def test_float32_even_fit_path_recovers_width_and_gates():
    # enough outputs for the even part to fix G, V and W jointly (h (2d + m) well below
    # m d (d + 1) / 4): the noisy path refits the finite-difference gate rows there
    # (without the refit, no polish: gate rows ~7e-4 off, outputs ~2e-3; with it ~1e-7)
    blk = random_glu(16, 12, act="silu", seed=3)
    r = extract_glu(_rounded(blk, "float32"), 16, act="silu", refine=False, reference=blk)
    assert r.status == "recovered" and r.hidden == 12 and not r.fallback and not r.refined
    X = np.random.default_rng(6).normal(size=(400, 16))
    assert np.median(_rel(r.block, blk, X)) < 1e-5
    assert r.param_error["gate_median"] < 1e-5 and r.param_error["matched"] == 12


def test_too_few_units_is_partial_not_recovered():
    # one coarse half-circle sees 1 of 24 units: the block it returns does not compute f,
    # and the result says so instead of "recovered"
    blk = random_glu(8, 24, act="silu", seed=1)
    r = extract_glu(blk, 8, act="silu", grid=64, max_planes=1, refine=False)
    assert r.block is not None and r.hidden < 24
    assert r.median_rel_error > 0.1 and r.status == "partial" and "not recovered" in r.message


@pytest.mark.parametrize("act,scale", [("relu", 1.0), ("silu", 1e8)])
def test_window_scan_on_float32_outputs_finds_true_crossings(act, scale):
    # float32 outputs: every crossing the window scan reports lies on a true gate
    # hyperplane at the true crossing angle of that unit on the half-circle (brute
    # force from the weights), with the unit's output column, and most isolated true
    # crossings are found
    from relulab.extract.glu_scan import SNR_TO_W, scan_plane_windows

    d, h = 12, 16
    blk = random_glu(d, h, act=act, seed=11)
    ks, clean = scan_plane_windows(QueryOracle(_rounded(blk, "float32"), d), d, scale, 2048,
                                   np.random.default_rng(3))
    assert clean > 0.9 and len(ks) >= 8
    # the same plane (same generator draws) and the true crossing angles on it
    V = np.linalg.qr(np.random.default_rng(3).normal(size=(d, 2)))[0]
    ang = np.arctan2(-(blk.W_gate @ V[:, 0]), blk.W_gate @ V[:, 1]) % np.pi
    gn = blk.W_gate / np.linalg.norm(blk.W_gate, axis=1, keepdims=True)
    wn = blk.W_out / np.linalg.norm(blk.W_out, axis=0)
    for k in ks:
        snr = k.snr / SNR_TO_W  # the kink over its fit noise: placement and direction scale with it
        j = int(np.argmin(np.abs(gn @ k.x_hat)))
        assert abs(gn[j] @ k.x_hat) < max(1e-6, 3e-2 / snr)  # float32 inputs: ~1e-7 at best
        t = np.arctan2(k.x_hat @ V[:, 1], k.x_hat @ V[:, 0]) % np.pi
        assert abs(t - ang[j]) < np.pi / 2048  # within its grid step
        assert 1 - abs(wn[:, j] @ k.w_hat) < max(1e-8, (10 / snr) ** 2)
    # crossings with no other one within 16 grid steps (each window test needs room)
    s = np.sort(ang)
    gaps = np.diff(np.concatenate([[s[-1] - np.pi], s, [s[0] + np.pi]])) / (np.pi / 2048)
    isolated = int(np.sum((gaps[:-1] > 16) & (gaps[1:] > 16)))
    assert len(ks) >= 0.8 * isolated


def test_trig_roots_against_brute_force():
    from relulab.extract.glu_scan import trig_roots

    rng = np.random.default_rng(0)
    t = np.linspace(-1.5, 1.5, 300001)
    for _ in range(20):
        a, b, c = rng.normal(size=3)
        q = a * np.cos(t) ** 2 + b * np.cos(t) * np.sin(t) + c * np.sin(t) ** 2
        brute = t[:-1][np.sign(q[:-1]) != np.sign(q[1:])]
        got = trig_roots(np.array([a, b, c]), -1.5, 1.5)
        assert len(got) == len(brute)
        assert np.allclose(sorted(got), brute, atol=2e-5)


def test_wrong_gate_row_is_detected_by_its_spare_crossings_and_measured_again():
    # a unit's gate row measured across another unit's hyperplane is wrong; its other
    # crossing points (spares from later half-circles) expose it, and a new measurement
    # at a spare replaces it - checked against the true gate rows
    from relulab.extract.glu import EPS64, _Units
    from relulab.extract.glu_gates import correct_rows

    blk = random_glu(8, 6, act="relu", seed=4)
    o = QueryOracle(blk, 8)
    rng = np.random.default_rng(0)
    units = _Units(8)
    for _ in range(5):
        ks, _ = scan_plane(o, 8, 1.0, 1024, rng, EPS64)
        new = units.new_by_w(ks)
        if new:
            G, _, steps = gate_rows(o, new, 1.0, 1e-6)
            units.add(new, G, steps)
        units.plane += 1
    true_g = blk.W_gate / np.linalg.norm(blk.W_gate, axis=1, keepdims=True)
    match = np.argmax(np.abs(np.array(units.G) @ true_g.T), axis=1)
    V = blk.W_up[match]

    def row_errors():
        G = correct_rows(np.array(units.raw), np.array(units.x), V, np.array(units.step))
        return 1 - np.abs(np.sum(G * true_g[match], axis=1))

    with_spares = [j for j, sp in enumerate(units.spare) if sp]
    assert len(units.G) == 6 and with_spares and row_errors().max() < 1e-9
    j = with_spares[0]
    bad = units.raw[j] + 0.05 * np.linalg.norm(units.raw[j]) * rng.normal(size=8)
    units.raw[j], units.G[j] = bad, bad / np.linalg.norm(bad)
    assert row_errors()[j] > 1e-4  # the corruption is visible
    q = o.queries
    assert units.repair(o, V, 1.0, 1e-6) >= 1 and units.repaired >= 1 and units.suspect == 0
    assert o.queries > q  # measured again, not guessed
    assert row_errors().max() < 1e-9  # the wrong row is replaced by a right one


def test_a_gate_bias_is_not_blamed_on_coarse_outputs():
    # a gate bias keeps f(0) = 0, and the float64 block was reported as "outputs too
    # coarse (measured noise 3.1e-02)", a deviation no float format's rounding makes
    # (aud_ext5 #1); the status stays partial and the message names the bias
    b = random_glu(8, 16, 8, "silu", 0)
    cg = 0.5 * np.random.default_rng(100).normal(size=16)

    def f(X):
        Z = X @ b.W_gate.T + cg
        return (Z / (1 + np.exp(-Z)) * (X @ b.W_up.T)) @ b.W_out.T

    assert np.all(f(np.zeros((1, 8))) == 0)
    r = extract_glu(f, 8, act="silu", time_limit=30)
    assert r.status == "partial" and "not a bias-free GLU" in r.message and "too coarse" not in r.message.split(":")[0]
