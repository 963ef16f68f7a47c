"""Turing machines as transformers (after Wei, Chen and Ma, 2021), exact, in torch.

The second architecture of the Turing-machine compiler: the same
:class:`~relulab.construct.turing.TuringMachine` descriptions that
:func:`~relulab.construct.turing.compile_turing_machine` turns into a recurrent ReLU
network become an encoder-decoder transformer whose decoder emits one token per
machine step.  Nothing is trained: every weight is a small integer.

* The **encoder memory** holds the input word, one token per cell:
  ``[one-hot symbol, binary position]``.
* **Decoder token t** holds the configuration after t steps *without the tape*: the
  one-hot state, the head position ``h_t`` in ``w``-bit two's complement, the time
  ``t``, and the write of the previous step (its position ``h_{t-1}`` and symbol).
  The tape is never stored: it is recovered by attention.
* **Cross-attention** (hard, positional lookup) finds the input cell at ``h_t``:
  the score ``sum_i (2 b_i(h_t) - 1)(2 b_i(j) - 1)`` is ``w`` exactly when the bits of
  ``h_t`` and ``j`` agree, at most ``w - 2`` otherwise; a null key scoring ``w - 1``
  answers "outside the input" (a blank).
* **Self-attention** (hard, causal) finds the *latest* earlier write at ``h_t``:
  score ``C * agreement + s`` with ``C = horizon + 1`` puts every matching position
  above every other one, and among matches the latest time ``s`` wins; tokens
  without a write score ``2 C w`` lower; a null key scoring ``C w - 1`` answers "never
  written".  (Wei et al. find the latest write with log T layers of binary search over
  the time bits, which keeps the weights bounded; one layer with a time-weighted score
  is the same lookup, with scores up to about ``3 C w``.)
* **Feed-forward layers** (ReLU): the read symbol (last write, else the input cell,
  else blank), the transition table as case indicators ``relu(state_s + read_a - 1)``,
  and the head update ``h +- 1`` as a constant-depth binary increment / decrement
  (carry bits ``relu(sum of lower bits + R - i)``, then ``XOR`` by two ReLUs).

A halting state, or a (state, symbol) pair without a transition, writes back the read
symbol, stays, and raises the ``halted`` output.  All activations are integers whose
size is bounded by :attr:`TransformerTM.max_abs_value`, so the float32 and float64
forward passes are exact while that bound is below 2^24 and 2^53
(:func:`transformer_exact_length` measures it).

Example:
    >>> from relulab.construct import binary_increment
    >>> tm = binary_increment()
    >>> sim = compile_transformer(tm, horizon=40, max_input=8)
    >>> run = run_transformer(sim, ["1011"])[0]
    >>> run.steps, run.final_state, tm.tape_string(run.config(run.steps))
    (8, 'done', '1100')
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import RelulabError, require
from ..results import Result
from .maxmin import ConstructionError
from .turing import Config, TuringMachine

__all__ = [
    "HardAttentionSpec",
    "FeedForwardSpec",
    "TransformerTM",
    "compile_transformer",
    "TransformerRun",
    "run_transformer",
    "teacher_forced_streams",
    "same_config",
    "TransformerExactness",
    "transformer_exact_length",
    "DTYPES",
]

MOVES = ("L", "R", "S")
DTYPES = ("int64", "float64", "float32")
# largest integer each float type holds exactly (mantissa bits + 1)
EXACT_INT_LIMIT = {"int64": 2**62, "float64": 2**53, "float32": 2**24}


@dataclass(frozen=True, eq=False)
class HardAttentionSpec:
    """One hard-attention head, in integers: query ``Wq x + bq``, key ``Wk y + bk``,
    value ``Wv y + bv`` (added to the residual stream), plus a null key ``k0`` with
    value ``v0`` that every query also sees.  ``causal``: a query at position t sees
    keys 0..t only.

    Example:
        >>> from relulab.construct import binary_increment
        >>> sim = compile_transformer(binary_increment(), horizon=10, max_input=4)
        >>> [(a.name, a.causal) for a in sim.attention]
        [('cross', False), ('self', True)]
    """

    name: str
    Wq: np.ndarray
    bq: np.ndarray
    Wk: np.ndarray
    bk: np.ndarray
    Wv: np.ndarray
    bv: np.ndarray
    k0: np.ndarray
    v0: np.ndarray
    causal: bool


@dataclass(frozen=True, eq=False)
class FeedForwardSpec:
    """One ReLU feed-forward block ``x + W2 relu(W1 x + b1) + b2`` (integers).

    Example:
        >>> from relulab.construct import binary_increment
        >>> sim = compile_transformer(binary_increment(), horizon=10, max_input=4)
        >>> [(f.name, f.W1.shape[0]) for f in sim.feedforward]
        [('read', 7), ('transition', 9), ('carry', 10), ('xor', 10)]
    """

    name: str
    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray


@dataclass(frozen=True, eq=False)
class TransformerTM:
    """The compiled transformer of a machine (integer weights; see the module docstring).

    ``layout`` names the slices of the decoder's residual stream; ``memory_layout``
    those of the encoder memory.  Sublayers run in the order: cross-attention,
    self-attention, then the feed-forward blocks.

    Example:
        >>> from relulab.construct import busy_beaver_2
        >>> sim = compile_transformer(busy_beaver_2(), horizon=20, max_input=0)
        >>> sim.bits, sim.d_model, sim.n_layers
        (6, 47, 6)
    """

    machine: TuringMachine
    horizon: int
    max_input: int
    bits: int
    layout: dict[str, tuple[int, int]]
    memory_layout: dict[str, tuple[int, int]]
    attention: tuple[HardAttentionSpec, ...]
    feedforward: tuple[FeedForwardSpec, ...]
    _torch: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def d_model(self) -> int:
        return max(stop for _, stop in self.layout.values())

    @property
    def d_memory(self) -> int:
        return max(stop for _, stop in self.memory_layout.values())

    @property
    def n_layers(self) -> int:
        return len(self.attention) + len(self.feedforward)

    @property
    def n_params(self) -> int:
        arrs = [a for s in self.attention for a in (s.Wq, s.bq, s.Wk, s.bk, s.Wv, s.bv, s.k0, s.v0)]
        arrs += [a for f in self.feedforward for a in (f.W1, f.b1, f.W2, f.b2)]
        return int(sum(a.size for a in arrs))

    @property
    def max_abs_value(self) -> int:
        """A bound on every activation, score and partial sum of a run within the horizon
        (the self-attention score: ``|C agreement| + s + 2 C w``, summed in any order
        with partial sums below ``C w`` per term group, hence ``4 C w`` is safe)."""
        C = self.horizon + 1
        return 4 * C * self.bits + self.horizon + 2

    def exact_in(self, dtype: str) -> bool:
        """Whether every value of a run within the horizon is an integer the dtype holds."""
        if dtype not in EXACT_INT_LIMIT:
            raise RelulabError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        return self.max_abs_value < EXACT_INT_LIMIT[dtype]

    def sizes(self) -> dict:
        """Layer and parameter counts (for reports)."""
        return {"d_model": self.d_model, "d_memory": self.d_memory, "position_bits": self.bits,
                "horizon": self.horizon, "max_input": self.max_input,
                "attention_layers": [a.name for a in self.attention],
                "feedforward_hidden": {f.name: int(f.W1.shape[0]) for f in self.feedforward},
                "params": self.n_params}

    def torch_module(self, dtype: str = "float64"):
        """The torch ``nn.Module`` with these weights in ``dtype`` (int64, float64, float32).

        Example:
            >>> from relulab.construct import binary_increment
            >>> m = compile_transformer(binary_increment(), horizon=10, max_input=4).torch_module("float32")
            >>> type(m).__name__, next(m.parameters()).dtype
            ('TuringTransformer', torch.float32)
        """
        if dtype not in DTYPES:
            raise RelulabError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        if dtype not in self._torch:
            self._torch[dtype] = _classes()["TuringTransformer"](self, dtype)
        return self._torch[dtype]


# ------------------------------------------------------------------ compiler
def _bits_needed(max_input: int, horizon: int) -> int:
    """Two's complement width holding every head position in [-horizon, max_input + horizon]."""
    return max(2, math.ceil(math.log2(max_input + horizon + 1)) + 1)


def _twos(p: int, w: int) -> list[int]:
    """The w bits (least significant first) of p in two's complement."""
    u = p % (1 << w)
    return [(u >> i) & 1 for i in range(w)]


def compile_transformer(tm: TuringMachine, horizon: int = 1000, max_input: int = 64) -> TransformerTM:
    """Compile ``tm`` into a hard-attention encoder-decoder transformer that runs up to
    ``horizon`` steps on inputs of up to ``max_input`` symbols (these fix the position
    width ``w`` and the self-attention scale ``C = horizon + 1``).

    Example:
        >>> from relulab.construct import unary_addition
        >>> sim = compile_transformer(unary_addition(), horizon=50, max_input=10)
        >>> sim.bits, sim.exact_in("float32")
        (7, True)
    """
    tm.validate()
    if not isinstance(horizon, int) or horizon < 1:
        raise ConstructionError(f"transformer: horizon must be a positive integer, got {horizon!r}")
    if not isinstance(max_input, int) or max_input < 0:
        raise ConstructionError(f"transformer: max_input must be >= 0, got {max_input!r}")
    S, K = len(tm.states), len(tm.symbols)
    w = _bits_needed(max_input, horizon)
    C = horizon + 1
    sizes = [("st", S), ("pos", w), ("time", 1), ("hw", 1), ("wpos", w), ("wsym", K),
             ("init", K), ("last", K), ("found", 1), ("read", K), ("nst", S), ("nsym", K),
             ("move", 3), ("halted", 1), ("flip", w), ("npos", w)]
    layout, at = {}, 0
    for name, n in sizes:
        layout[name] = (at, at + n)
        at += n
    D = at
    mem = {"sym": (0, K), "pos": (K, K + w)}
    Dm = K + w

    def ix(name: str, i: int = 0) -> int:
        return layout[name][0] + i

    z = functools.partial(np.zeros, dtype=np.int64)

    # cross-attention: the input cell at h_t
    Wq, bq = z((w + 1, D)), z(w + 1)
    Wk, bk = z((w + 1, Dm)), z(w + 1)
    for i in range(w):
        Wq[i, ix("pos", i)], bq[i] = 2, -1
        Wk[i, mem["pos"][0] + i], bk[i] = 2, -1
    bq[w] = 1
    k0 = z(w + 1)
    k0[w] = w - 1
    Wv, bv = z((D, Dm)), z(D)
    for a in range(K):
        Wv[ix("init", a), mem["sym"][0] + a] = 1
    cross = HardAttentionSpec("cross", Wq, bq, Wk, bk, Wv, bv, k0, z(D), causal=False)

    # self-attention: the latest earlier write at h_t
    dk = w + 3
    Wq, bq = z((dk, D)), z(dk)
    Wk, bk = z((dk, D)), z(dk)
    for i in range(w):
        Wq[i, ix("pos", i)], bq[i] = 2 * C, -C
        Wk[i, ix("wpos", i)], bk[i] = 2, -1
    bq[w], Wk[w, ix("time")] = 1, 1  # + s: the latest write wins
    bq[w + 1], Wk[w + 1, ix("hw")], bk[w + 1] = 2 * C * w, 1, -1  # no write: - 2 C w
    bq[w + 2] = 1
    k0 = z(dk)
    k0[w + 2] = C * w - 1
    Wv, bv = z((D, D)), z(D)
    for a in range(K):
        Wv[ix("last", a), ix("wsym", a)] = 1
    bv[ix("found")] = 1
    selfatt = HardAttentionSpec("self", Wq, bq, Wk, bk, Wv, bv, k0, z(D), causal=True)

    # FFN 1: read = last write, else the input cell, else blank
    W1, b1, W2 = z((2 * K + 1, D)), z(2 * K + 1), z((D, 2 * K + 1))
    for a in range(K):
        W1[a, ix("last", a)] = 1
        W1[K + a, ix("init", a)], W1[K + a, ix("found")] = 1, -1
        W2[ix("read", a), a] = W2[ix("read", a), K + a] = 1
        W1[2 * K, ix("init", a)] = -1
    W1[2 * K, ix("found")], b1[2 * K] = -1, 1
    W2[ix("read", 0), 2 * K] = 1
    ffn_read = FeedForwardSpec("read", W1, b1, W2, z(D))

    # FFN 2: the transition table, one case indicator per (state, symbol)
    table = tm.table
    W1, b1, W2 = z((S * K, D)), z(S * K), z((D, S * K))
    for s, sname in enumerate(tm.states):
        for a in range(K):
            h = s * K + a
            W1[h, ix("st", s)], W1[h, ix("read", a)], b1[h] = 1, 1, -1
            tr = None if sname in tm.halting else table.get((sname, tm.symbols[a]))
            if tr is None:  # halted: same state, write back what was read, stay
                t_, u, mv = s, a, MOVES.index("S")
                W2[ix("halted"), h] = 1
            else:
                t_, u, mv = tm.states.index(tr[0]), tm.symbols.index(tr[1]), MOVES.index(tr[2])
            W2[ix("nst", t_), h] += 1
            W2[ix("nsym", u), h] += 1
            W2[ix("move", mv), h] += 1
    ffn_trans = FeedForwardSpec("transition", W1, b1, W2, z(D))

    # FFN 3: flip bit i on R when all lower bits are 1, on L when all are 0
    W1, b1, W2 = z((2 * w, D)), z(2 * w), z((D, 2 * w))
    for i in range(w):
        for j in range(i):
            W1[i, ix("pos", j)] = 1
            W1[w + i, ix("pos", j)] = -1
        W1[i, ix("move", MOVES.index("R"))], b1[i] = 1, -i
        W1[w + i, ix("move", MOVES.index("L"))] = 1
        W2[ix("flip", i), i] = W2[ix("flip", i), w + i] = 1
    ffn_carry = FeedForwardSpec("carry", W1, b1, W2, z(D))

    # FFN 4: new bit = XOR(bit, flip) = relu(bit - flip) + relu(flip - bit)
    W1, W2 = z((2 * w, D)), z((D, 2 * w))
    for i in range(w):
        W1[i, ix("pos", i)], W1[i, ix("flip", i)] = 1, -1
        W1[w + i, ix("pos", i)], W1[w + i, ix("flip", i)] = -1, 1
        W2[ix("npos", i), i] = W2[ix("npos", i), w + i] = 1
    ffn_xor = FeedForwardSpec("xor", W1, z(2 * w), W2, z(D))

    return TransformerTM(tm, horizon, max_input, w, layout, mem, (cross, selfatt),
                         (ffn_read, ffn_trans, ffn_carry, ffn_xor))


# ------------------------------------------------------------------ torch modules
@functools.cache
def _classes() -> dict:
    """The torch module classes, defined on first use (torch is imported lazily)."""
    torch = require("torch", "torch")
    nn = torch.nn

    def param(a: np.ndarray, dtype) -> nn.Parameter:
        return nn.Parameter(torch.as_tensor(np.asarray(a, dtype=np.int64)).to(dtype),
                            requires_grad=False)

    class HardAttention(nn.Module):
        """Hard attention: the output is the average of the values of the keys with the
        largest score (the null key included)."""

        def __init__(self, spec: HardAttentionSpec, dtype) -> None:
            super().__init__()
            self.name, self.causal = spec.name, spec.causal
            for k in ("Wq", "bq", "Wk", "bk", "Wv", "bv", "k0", "v0"):
                setattr(self, k, param(getattr(spec, k), dtype))

        def keys_values(self, y):
            return y @ self.Wk.T + self.bk, y @ self.Wv.T + self.bv

        def attend(self, q, K, V, mask=None):
            """q (B, Lq, dk), K (B, Lk, dk), V (B, Lk, dv), mask (B, Lq, Lk) of allowed keys."""
            # The null key is scored and weighted apart from K and V (no concatenation: in
            # step-by-step runs that copied the whole cache once per token).  Every term is
            # an integer in the exact range, so the order of the sums changes nothing.
            scores = q @ K.transpose(1, 2)
            null = (q @ self.k0).unsqueeze(-1)
            if mask is not None:
                low = (torch.iinfo(scores.dtype).min if not scores.dtype.is_floating_point
                       else -math.inf)
                scores = scores.masked_fill(~mask, low)
            best = null if K.shape[1] == 0 else torch.maximum(
                scores.amax(dim=-1, keepdim=True), null)
            top, top_null = scores == best, null == best
            count = top.sum(dim=-1, keepdim=True) + top_null
            out = top.to(V.dtype) @ V + top_null.to(V.dtype) * self.v0
            if V.dtype.is_floating_point:
                return out / count.to(V.dtype)
            if bool((count != 1).any()):
                raise RelulabError(f"{self.name}-attention: tied scores in integer mode")
            return out

        def forward(self, x, y, mask=None):
            q = x @ self.Wq.T + self.bq
            K, V = self.keys_values(y)
            return self.attend(q, K, V, mask)

    class FeedForward(nn.Module):
        def __init__(self, spec: FeedForwardSpec, dtype) -> None:
            super().__init__()
            self.name = spec.name
            for k in ("W1", "b1", "W2", "b2"):
                setattr(self, k, param(getattr(spec, k), dtype))

        def forward(self, x):
            return torch.relu(x @ self.W1.T + self.b1) @ self.W2.T + self.b2

    class TuringTransformer(nn.Module):
        """Decoder stack: cross-attention, causal self-attention, feed-forward blocks,
        each added to the residual stream."""

        def __init__(self, spec: TransformerTM, dtype_name: str) -> None:
            super().__init__()
            dtype = getattr(torch, dtype_name)
            self.spec, self.dtype = spec, dtype
            self.cross = HardAttention(spec.attention[0], dtype)
            self.self_attn = HardAttention(spec.attention[1], dtype)
            self.ffn = nn.ModuleList(FeedForward(f, dtype) for f in spec.feedforward)

        def forward(self, x, memory, memory_mask=None):
            """Full sequence in parallel: x (B, L, D) decoder tokens, memory (B, N, Dm),
            memory_mask (B, N) True on real cells; returns the residual stream."""
            B, L, _ = x.shape
            mm = None
            if memory_mask is not None:
                mm = memory_mask[:, None, :].expand(B, L, memory.shape[1])
            x = x + self.cross(x, memory, mm)
            causal = torch.ones(L, L, dtype=torch.bool).tril().expand(B, L, L)
            x = x + self.self_attn(x, x, causal)
            for f in self.ffn:
                x = x + f(x)
            return x

        def step(self, x, memory, memory_mask, cache):
            """One new token x (B, D) with the keys/values of the earlier tokens in
            ``cache`` (a dict, updated); returns its residual stream (B, D)."""
            x = x[:, None, :]
            mm = None if memory_mask is None else memory_mask[:, None, :]
            if "memory" not in cache:  # the memory's keys and values are the same every step
                cache["memory"] = self.cross.keys_values(memory)
            q = x @ self.cross.Wq.T + self.cross.bq
            x = x + self.cross.attend(q, *cache["memory"], mm)
            k, v = self.self_attn.keys_values(x)
            K, V = _append_cached(cache, k, v)
            q = x @ self.self_attn.Wq.T + self.self_attn.bq
            x = x + self.self_attn.attend(q, K, V)
            for f in self.ffn:
                x = x + f(x)
            return x[:, 0, :]

    return {"TuringTransformer": TuringTransformer, "HardAttention": HardAttention,
            "FeedForward": FeedForward}


def _append_cached(cache: dict, k, v):
    """Append one token's key and value (B, 1, d) to the cache and return views of all
    keys and values so far.  The buffers double when full, so a run of T tokens copies
    O(T) rows in all (concatenating per token copied O(T^2))."""
    n = cache.get("n", 0)
    if n == cache.get("capacity", 0):
        cap = max(16, 2 * n)
        for name, new in (("K", k), ("V", v)):
            buf = new.new_zeros((new.shape[0], cap, new.shape[2]))
            if n:
                buf[:, :n] = cache[name][:, :n]
            cache[name] = buf
        cache["capacity"] = cap
    cache["K"][:, n:n + 1] = k
    cache["V"][:, n:n + 1] = v
    cache["n"] = n + 1
    return cache["K"][:, :n + 1], cache["V"][:, :n + 1]


# ------------------------------------------------------------------ running
@dataclass(frozen=True)
class TransformerRun(Result):
    """One input run through the transformer: per decoder token t (t = 0..steps), the
    state, head position, read symbol and the write of step t-1; plus the input word.

    ``config(t)`` rebuilds the machine configuration after t steps from what the
    network produced (input cells overwritten by the writes so far) as a
    :class:`~relulab.construct.turing.Config`; ``configs()`` yields all of them in order.

    Example:
        >>> from relulab.construct import busy_beaver_2
        >>> tm = busy_beaver_2()
        >>> run = run_transformer(compile_transformer(tm, horizon=20, max_input=0), [""])[0]
        >>> run.steps, run.final_state, run.config(6) == tm.run("")
        (6, 'H', True)
    """

    machine: str
    word: tuple[int, ...]
    steps: int
    halted: bool
    states: tuple[str, ...]
    heads: tuple[int, ...]
    reads: tuple[int, ...]
    writes: tuple[tuple[int, int] | None, ...]  # (position, symbol) written by step t-1
    dtype: str
    exact_capacity: bool  # the dtype holds every value of a run within the horizon

    @property
    def final_state(self) -> str:
        return self.states[self.steps]

    def tape(self, t: int) -> dict[int, int]:
        """Tape after t steps: position -> symbol (blank cells omitted)."""
        cells = dict(enumerate(self.word))
        for wr in self.writes[1:t + 1]:
            if wr is not None:
                cells[wr[0]] = wr[1]
        return {p: a for p, a in cells.items() if a != 0}

    def config(self, t: int) -> Config:
        """The configuration after t steps, in the simulator's two-stack form (blank
        cells at the outer ends dropped)."""
        if not 0 <= t <= self.steps:
            raise RelulabError(f"step {t} is outside 0..{self.steps}")
        return self._config_of(self.tape(t), t)

    def configs(self) -> Iterator[Config]:
        """``config(0), config(1), ..., config(steps)``, with the tape updated one write
        at a time (``config(t)`` replays every write up to t: quadratic over a run)."""
        cells = dict(enumerate(self.word))
        for t in range(self.steps + 1):
            if t and self.writes[t] is not None:
                p, a = self.writes[t]
                cells[p] = a
            yield self._config_of({p: a for p, a in cells.items() if a != 0}, t)

    def _config_of(self, cells: dict[int, int], t: int) -> Config:
        h = self.heads[t]
        lo, hi = min([*cells, h]), max([*cells, h])
        left = tuple(cells.get(p, 0) for p in range(h - 1, lo - 1, -1))
        right = tuple(cells.get(p, 0) for p in range(h, hi + 1))
        return Config(self.states[t], left, right, t)


def _strip(tm: TuringMachine, cfg: Config) -> tuple:
    """A configuration up to blank cells: (state, {offset from head: nonblank symbol})."""
    cells = [*reversed(cfg.left), *cfg.right]
    head = len(cfg.left)
    return cfg.state, {i - head: a for i, a in enumerate(cells) if a != 0}


def same_config(tm: TuringMachine, a: Config, b: Config) -> bool:
    """Equal configurations up to blank cells (the simulator keeps pushed blanks); the
    step counters are not compared.

    Example:
        >>> from relulab.construct import binary_increment
        >>> tm = binary_increment()
        >>> same_config(tm, Config("done", (0, 0), (2, 0)), Config("done", (), (2,)))
        True
        >>> same_config(tm, Config("done", (), (2, 1)), Config("done", (), (2,)))
        False
    """
    return _strip(tm, a) == _strip(tm, b)


def _embed_memory(sim: TransformerTM, words: list[tuple[int, ...]], torch, dtype):
    K, w = len(sim.machine.symbols), sim.bits
    N = max([len(wd) for wd in words] + [1])
    M = np.zeros((len(words), N, sim.d_memory), dtype=np.int64)
    mask = np.zeros((len(words), N), dtype=bool)
    for b, wd in enumerate(words):
        for j, a in enumerate(wd):
            M[b, j, a] = 1
            M[b, j, K:K + w] = _twos(j, w)
            mask[b, j] = True
    return torch.as_tensor(M).to(dtype), torch.as_tensor(mask)


def _first_token(sim: TransformerTM, n: int) -> np.ndarray:
    x = np.zeros((n, sim.d_model), dtype=np.int64)
    x[:, sim.layout["st"][0]] = 1  # start state; position 0; time 0; no write
    return x


def _next_token(sim: TransformerTM, out, t: int, torch):
    """The decoder input of token t + 1 from token t's residual stream (a linear readout)."""
    L = sim.layout

    def sl(name: str) -> slice:
        return slice(*L[name])

    nxt = torch.zeros_like(out)
    nxt[:, sl("st")] = out[:, sl("nst")]
    nxt[:, sl("pos")] = out[:, sl("npos")]
    nxt[:, L["time"][0]] = t + 1
    nxt[:, L["hw"][0]] = 1
    nxt[:, sl("wpos")] = out[:, sl("pos")]
    nxt[:, sl("wsym")] = out[:, sl("nsym")]
    return nxt


def _as_words(tm: TuringMachine, words: Sequence[str | Sequence[str]]) -> list[tuple[int, ...]]:
    return [tm.initial(wd).right for wd in words]


def run_transformer(sim: TransformerTM, words: Sequence[str | Sequence[str]],
                    max_steps: int | None = None, dtype: str = "float64",
                    keep_streams: bool = False) -> list[TransformerRun]:
    """Run the transformer autoregressively (one decoder token per machine step, keys and
    values of earlier tokens cached) on each word until it halts or ``max_steps``
    (default: the horizon it was compiled for; more is refused).

    ``dtype``: "int64" (exact integer arithmetic), "float64" or "float32".  With
    ``keep_streams`` the returned runs are accompanied by the residual streams: the
    function then returns ``(runs, streams)`` with ``streams`` of shape (B, T+1, D).

    Example:
        >>> from relulab.construct import balanced_parentheses
        >>> tm = balanced_parentheses()
        >>> sim = compile_transformer(tm, horizon=100, max_input=10)
        >>> [r.final_state for r in run_transformer(sim, ["(())", "(()", ""], dtype="float32")]
        ['accept', 'reject', 'accept']
    """
    torch = require("torch", "torch")
    if dtype not in DTYPES:
        raise RelulabError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    tm = sim.machine
    T = sim.horizon if max_steps is None else int(max_steps)
    if not 0 <= T <= sim.horizon:
        raise RelulabError(f"max_steps {max_steps} is outside 0..{sim.horizon} (the horizon "
                           "compiled in; compile with a larger horizon)")
    ws = _as_words(tm, words)
    if not ws:
        raise RelulabError("run_transformer: no input words")
    longest = max(len(wd) for wd in ws)
    if longest > sim.max_input:
        raise RelulabError(f"input of length {longest} exceeds max_input {sim.max_input} "
                           "compiled in")
    model = sim.torch_module(dtype)
    tdt = model.dtype
    mem, mask = _embed_memory(sim, ws, torch, tdt)
    x = torch.as_tensor(_first_token(sim, len(ws))).to(tdt)
    L = sim.layout
    cache: dict = {}
    outs, tokens = [], [x]
    halted_at = np.full(len(ws), -1)
    with torch.no_grad():
        for t in range(T + 1):
            out = model.step(x, mem, mask, cache)
            outs.append(out)
            h = out[:, L["halted"][0]].to(torch.int64).numpy()
            newly = (h == 1) & (halted_at < 0)
            halted_at[newly] = t
            if (halted_at >= 0).all() or t == T:
                break
            x = _next_token(sim, out, t, torch)
            tokens.append(x)
    stream = torch.stack(outs, dim=1)  # (B, steps + 1, D)
    S = stream.to(torch.float64).numpy()
    runs = []
    for b, wd in enumerate(ws):
        last = int(halted_at[b]) if halted_at[b] >= 0 else S.shape[1] - 1
        runs.append(_decode_run(sim, wd, S[b, : last + 1], halted_at[b] >= 0, dtype))
    if keep_streams:
        return runs, stream  # type: ignore[return-value]
    return runs


def _onehot_rows(block: np.ndarray, what: str, tokens: np.ndarray | None = None) -> np.ndarray:
    """Index of the single 1 in every row of ``block`` (rows = tokens, default 0, 1, ...);
    the first row that is not one-hot is refused with its token number."""
    ok = ((block == 1).sum(axis=1) == 1) & (np.count_nonzero(block, axis=1) == 1)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        t = i if tokens is None else int(tokens[i])
        raise RelulabError(f"token {t}: {what} {block[i].tolist()} is not one-hot")
    return block.argmax(axis=1)


def _twos_rows(block: np.ndarray, what: str, w: int,
               tokens: np.ndarray | None = None) -> np.ndarray:
    """Two's complement integers (bits least significant first) of every row of ``block``
    (rows = tokens, default 0, 1, ...); the first row with a non-binary entry is refused
    with its token number."""
    ok = ((block == 0) | (block == 1)).all(axis=1)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        t = i if tokens is None else int(tokens[i])
        raise RelulabError(f"token {t}: {what} {block[i].tolist()} is not binary")
    u = block.astype(np.int64) @ (np.int64(1) << np.arange(w, dtype=np.int64))
    return np.where(u >= 1 << (w - 1), u - (1 << w), u)


def _decode_run(sim: TransformerTM, word: tuple[int, ...], S: np.ndarray, halted: bool,
                dtype: str) -> TransformerRun:
    # Decoded for all tokens at once: a per-token Python loop dominated the run time of
    # long batches (every input up to length 10, hundreds of steps each).
    tm, L, w = sim.machine, sim.layout, sim.bits

    def block(name: str) -> np.ndarray:
        return S[:, slice(*L[name])]

    states = _onehot_rows(block("st"), "state")
    heads = _twos_rows(block("pos"), "head position", w)
    reads = _onehot_rows(block("read"), "read symbol")
    wrote = np.flatnonzero(S[:, L["hw"][0]] == 1)
    wpos = _twos_rows(block("wpos")[wrote], "write position", w, wrote)
    wsym = _onehot_rows(block("wsym")[wrote], "written symbol", wrote)
    writes: list[tuple[int, int] | None] = [None] * len(S)
    for t, p, a in zip(wrote.tolist(), wpos.tolist(), wsym.tolist(), strict=True):
        writes[t] = (p, a)
    return TransformerRun(tm.name, word, len(S) - 1, bool(halted),
                          tuple(tm.states[i] for i in states.tolist()), tuple(heads.tolist()),
                          tuple(reads.tolist()), tuple(writes), dtype, sim.exact_in(dtype))


def teacher_forced_streams(sim: TransformerTM, words: Sequence[str], streams, dtype: str = "float64"):
    """The full-sequence (parallel, causally masked) forward pass on the decoder inputs
    that an autoregressive run produced; returns the residual streams (B, T+1, D),
    which must equal the run's own token by token.

    Example:
        >>> from relulab.construct import binary_increment
        >>> sim = compile_transformer(binary_increment(), horizon=20, max_input=4)
        >>> runs, st = run_transformer(sim, ["11", "10"], keep_streams=True)
        >>> bool((teacher_forced_streams(sim, ["11", "10"], st) == st).all())
        True
    """
    torch = require("torch", "torch")
    model = sim.torch_module(dtype)
    ws = _as_words(sim.machine, words)
    mem, mask = _embed_memory(sim, ws, torch, model.dtype)
    streams = streams.to(model.dtype)
    B, T1, _ = streams.shape
    xs = [torch.as_tensor(_first_token(sim, B)).to(model.dtype)]
    for t in range(T1 - 1):
        xs.append(_next_token(sim, streams[:, t], t, torch))
    with torch.no_grad():
        return model(torch.stack(xs, dim=1), mem, mask)


# ------------------------------------------------------------------ float exactness
@dataclass(frozen=True)
class TransformerExactness(Result):
    """Up to which input length float runs of the transformer agree bit for bit with
    its int64 run at every step (and with the machine simulator).

    Example:
        >>> from relulab.construct import binary_increment
        >>> r = transformer_exact_length(binary_increment(), lambda n, k: ["1" * n] * k,
        ...                              max_length=4, runs_per_length=1)
        >>> r.max_exact_length["float32"], r.first_failure_length["float32"]
        (4, None)
    """

    machine: str
    dtypes: tuple[str, ...]
    max_exact_length: dict[str, int]  # longest length at which every run agreed
    first_failure_length: dict[str, int | None]
    runs_per_length: int
    max_length_tried: int
    horizon: int
    position_bits: int
    guaranteed_exact: dict[str, bool]  # the value bound of the compiled network fits the dtype


def transformer_exact_length(tm: TuringMachine, words_for_length, max_length: int = 40,
                             runs_per_length: int = 3, horizon: int = 2000,
                             dtypes: Sequence[str] = ("float64", "float32")) -> TransformerExactness:
    """For n = 1..max_length: run ``words_for_length(n, k)`` in int64 and in each float
    dtype; a length counts as exact when every residual stream agrees bit for bit with
    the int64 one and the int64 run agrees with the machine simulator at every step.

    Example:
        >>> from relulab.construct import unary_addition
        >>> r = transformer_exact_length(unary_addition(), lambda n, k: ["1+" * (n // 2) + "1" * (n % 2)],
        ...                              max_length=3, runs_per_length=1, dtypes=("float32",))
        >>> r.max_exact_length
        {'float32': 3}
    """
    sim = compile_transformer(tm, horizon=horizon, max_input=max_length)
    best = {d: 0 for d in dtypes}
    fail: dict[str, int | None] = {d: None for d in dtypes}
    for n in range(1, max_length + 1):
        words = words_for_length(n, runs_per_length)
        ref_runs, ref = run_transformer(sim, words, dtype="int64", keep_streams=True)
        sim_ok = all(_matches_simulator(tm, r, wd) for r, wd in zip(ref_runs, words, strict=True))
        for d in dtypes:
            if fail[d] is not None:
                continue
            try:
                # as many steps as the exact run took: a wrong float run may never halt
                _, got = run_transformer(sim, words, max_steps=ref.shape[1] - 1, dtype=d,
                                         keep_streams=True)
            except RelulabError:  # a float run that went wrong decodes to garbage
                ok = False
            else:
                ok = sim_ok and got.shape == ref.shape and bool((got.to(ref.dtype) == ref).all()) \
                    and bool((got == ref.to(got.dtype)).all())
            if ok:
                best[d] = n
            else:
                fail[d] = n
        if all(f is not None for f in fail.values()):
            break
    return TransformerExactness(tm.name, tuple(dtypes), best, fail, runs_per_length, max_length,
                                horizon, sim.bits, {d: sim.exact_in(d) for d in dtypes})


def _matches_simulator(tm: TuringMachine, run: TransformerRun, word: str) -> bool:
    cfg = tm.initial(word)
    for t in range(run.steps + 1):
        if not same_config(tm, run.config(t), cfg) or run.reads[t] != (cfg.right[0] if cfg.right else 0):
            return False
        if t < run.steps:
            cfg = tm.step(cfg)
    return run.halted == tm.halted(cfg)
