"""Turing machines as recurrent ReLU networks, compared step by step with the simulator."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from relulab.construct import (
    MACHINES,
    TuringMachine,
    compile_turing_machine,
    decode_config,
    encode_config,
    float_exact_length,
    run_batch,
    run_network,
)
from relulab.construct.maxmin import ConstructionError
from relulab.errors import RelulabError

INPUT_ALPHABET = {
    "binary-increment": "01",
    "balanced-parentheses": "()",
    "unary-addition": "1+",
    "busy-beaver-2": "01",
}
MAX_STEPS = 400


def _words(alpha: str, lengths) -> list[str]:
    return ["".join(w) for n in lengths for w in itertools.product(alpha, repeat=n)]


def _trajectory(tm: TuringMachine, word: str, max_steps: int = MAX_STEPS) -> list:
    cfg = tm.initial(word)
    out = [cfg]
    while not tm.halted(cfg) and cfg.steps < max_steps:
        cfg = tm.step(cfg)
        out.append(cfg)
    return out


def _expected_float(tm: TuringMachine, cfg) -> list[float]:
    """A second implementation of the encoding: integer numerator over B^len, scaled by
    a power of two (exact in float64 for the stack lengths used here)."""
    b = int(math.log2(tm.base))
    row = [float(s == cfg.state) for s in tm.states]
    for stack in (cfg.left, cfg.right):
        num = 0
        for a in stack:
            num = num * tm.base + 2 * a + 1
        assert num < 2**53
        row.append(math.ldexp(num, -b * len(stack)))
    return row


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_every_input_up_to_length_10_step_by_step(name: str) -> None:
    """Float64 runs are exact here (stacks of at most 12 symbols, 3 bits each), so the
    float network agreeing bit for bit with the encoded simulator is an exact check."""
    tm = MACHINES[name]()
    net = compile_turing_machine(tm)
    words = _words(INPUT_ALPHABET[name], range(0, 11))
    hist, steps = run_batch(tm, net, words, MAX_STEPS, mode="float", keep=True)
    trajs = [_trajectory(tm, w) for w in words]
    assert steps == [len(t) - 1 for t in trajs]
    for t, H in enumerate(hist):
        want = np.array([_expected_float(tm, tr[min(t, len(tr) - 1)]) for tr in trajs])
        assert np.array_equal(H, want), f"{name}: step {t} differs"


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_exact_mode_short_random_and_long_inputs(name: str) -> None:
    tm = MACHINES[name]()
    net = compile_turing_machine(tm)
    alpha = INPUT_ALPHABET[name]
    rng = np.random.default_rng(len(name))
    words = _words(alpha, range(0, 6))
    words += ["".join(rng.choice(list(alpha), int(n))) for n in rng.integers(6, 11, 12)]
    long_len = 24 if name == "balanced-parentheses" else 60
    long_words = ["".join(rng.choice(list(alpha), long_len))]
    if name == "balanced-parentheses":
        long_words.append("(" * (long_len // 2) + ")" * (long_len // 2))  # accepted
    for batch in (words, long_words):  # separately: a batch runs as long as its slowest
        hist, steps = run_batch(tm, net, batch, 2000, mode="exact", keep=True)
        for i, w in enumerate(batch):
            tr = _trajectory(tm, w, 2000)
            assert steps[i] == len(tr) - 1
            for t, H in enumerate(hist):
                cfg = tr[min(t, len(tr) - 1)]
                assert list(H[i]) == list(encode_config(tm, cfg)), (w, t)
            d = decode_config(tm, hist[-1][i])
            assert (d.state, d.left, d.right) == (tr[-1].state, tr[-1].left, tr[-1].right)
    if name == "balanced-parentheses":
        assert run_network(tm, net, long_words[-1], 5000).state == "accept"


def test_machines_compute_their_functions() -> None:
    inc = MACHINES["binary-increment"]()
    net = compile_turing_machine(inc)
    for v in [0, 1, 2, 7, 10, 255, 1023]:
        word = format(v, "b")
        assert inc.tape_string(run_network(inc, net, word)) == format(v + 1, "b")
    add = MACHINES["unary-addition"]()
    net = compile_turing_machine(add)
    for a, b in [(0, 0), (3, 4), (10, 1), (0, 7)]:
        out = add.tape_string(run_network(add, net, "1" * a + "+" + "1" * b))
        assert out == "1" * (a + b)
    par = MACHINES["balanced-parentheses"]()
    net = compile_turing_machine(par)
    for w in ["", "()", "(())()", "(()", "())(", ")("]:
        depth, ok = 0, True
        for ch in w:
            depth += 1 if ch == "(" else -1
            ok &= depth >= 0
        assert run_network(par, net, w).state == ("accept" if ok and depth == 0 else "reject")
    bb = MACHINES["busy-beaver-2"]()
    cfg = run_network(bb, compile_turing_machine(bb), "")
    assert (cfg.state, cfg.steps, bb.tape_string(cfg).count("1")) == ("H", 6, 4)


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_sizes(name: str) -> None:
    tm = MACHINES[name]()
    net = compile_turing_machine(tm)
    S, K, H = len(tm.states), len(tm.symbols), len(tm.halting)
    assert net.input_dim == net.output_dim == S + 2
    assert net.n_hidden_layers == 3
    assert net.widths[0] == S + 2 + 4 * K
    assert net.widths[1] == (S - H) * K + H + 5
    assert net.widths[2] <= S + (K + 2) + (2 * K + 2)
    # every weight is an integer or a power of 1/2 (so float64 holds it exactly)
    for W, b in net.layers:
        for v in [*W.reshape(-1), *b]:
            v = Fraction(v)
            assert v.denominator & (v.denominator - 1) == 0


def test_float_runs_exact_well_beyond_8_symbols() -> None:
    tm = MACHINES["balanced-parentheses"]()
    rng = np.random.default_rng(0)

    def gen(n: int, k: int) -> list[str]:
        return ["(" * (n // 2) + ")" * (n - n // 2)] + [
            "".join(rng.choice(["(", ")"], n)) for _ in range(k - 1)]

    rep = float_exact_length(tm, gen, max_length=20, runs_per_length=2)
    # 3 bits a cell, 53-bit mantissa: stacks of up to ~16 cells stay exact
    assert rep.max_exact_length >= 12
    assert rep.first_failure_length is None or rep.first_failure_length <= 20


def test_bad_machines_and_inputs() -> None:
    with pytest.raises(ConstructionError, match="move must be L, R or S"):
        TuringMachine.make("bad", ("q", "h"), ("_", "1"), {("q", "1"): ("h", "1", "X")}, ("h",))
    with pytest.raises(ConstructionError, match="unknown symbol"):
        TuringMachine.make("bad", ("q", "h"), ("_",), {("q", "1"): ("h", "_", "R")}, ("h",))
    with pytest.raises(RelulabError, match="not in its alphabet"):
        MACHINES["binary-increment"]().initial("012")


@pytest.mark.parametrize("mode", ["exact", "float"])
def test_a_step_that_changes_nothing_is_an_endless_loop_not_a_halt(mode: str) -> None:
    """(q, a) -> (q, a, S) with no halting state: the network's state vector stops
    changing, but the machine never halts; the step count is max_steps, as the
    simulator's, while a real halt on another input keeps its count."""

    tm = TuringMachine.make("loop", ["q", "h"], ["_", "a", "b"],
                            {("q", "a"): ("q", "a", "S"), ("q", "b"): ("h", "a", "R")}, ["h"])
    net = compile_turing_machine(tm)
    for word in ("a", "b", "ab", "ba"):
        want = tm.run(word, max_steps=50)
        got = run_network(tm, net, word, max_steps=50, mode=mode)
        assert got == want, word
        assert tm.halted(got) == tm.halted(want)
    assert run_batch(tm, net, ["a", "b"], 50, mode=mode)[1] == [50, 1]
