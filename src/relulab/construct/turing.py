"""Turing machines as recurrent ReLU networks (Siegelmann-Sontag style), exact.

The tape is two stacks: ``R`` holds the head cell and everything to its right (head
cell on top), ``L`` everything to the left (nearest cell on top).  A stack of symbols
``a_1 a_2 ... a_n`` (top first; symbol indices, blank = 0) is the rational

    q = sum_i (2 a_i + 1) / B^i        with B = 2^b the least power of two >= 2K,

K the alphabet size, so the stacks live in a Cantor set; the empty stack is 0 and
reads as blank.  With the saturated-linear unit ``sigma(t) = relu(t) - relu(t - 1)``:

* ``ge_a(q) = sigma(B q - 2a)`` is 1 exactly when the top symbol is >= a (a >= 1);
* ``ne(q) = sigma(B q)`` is 1 exactly when the stack is non-empty;
* ``pop(q) = B q - 2 sum_a ge_a(q) - ne(q)`` (the empty stack pops to itself);
* ``push(a, q) = (2a + 1 + q) / B``.

One forward pass of :func:`compile_turing_machine`'s network is one machine step on
the vector ``[one-hot state, q_L, q_R]``.  Hidden layer 1 reads the stacks (sigma
units); layer 2 forms the case indicators ``c_{s,a} = relu(state_s + [top = a] - 1)``;
layer 3 gates each candidate next stack value ``v`` in [0, 1] by the indicator ``G``
of its group of cases, ``relu(v + G - 1) = v G`` exactly.  A halting state, or a
(state, symbol) pair without a transition, is a fixed point.

Every weight is an integer or a power of 1/2, so the float64 copy has the same
weights; its forward pass stays exact while the stacks hold about 50 / b symbols
(:func:`float_exact_length` measures it).

Example:
    >>> tm = binary_increment()
    >>> net = compile_turing_machine(tm)
    >>> cfg = run_network(tm, net, "1011")
    >>> tm.tape_string(cfg), cfg.state
    ('1100', 'done')
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..errors import RelulabError
from ..network import Network
from ..results import Result
from ._builder import Builder, Expr, esum
from ._exact import ExactEvaluator
from .maxmin import ConstructionError

__all__ = [
    "TuringMachine",
    "Config",
    "compile_turing_machine",
    "encode_config",
    "decode_config",
    "run_network",
    "run_batch",
    "float_exact_length",
    "machine_from_json",
    "binary_increment",
    "balanced_parentheses",
    "unary_addition",
    "busy_beaver_2",
    "MACHINES",
]

MOVES = ("L", "R", "S")


@dataclass(frozen=True)
class Config:
    """A machine configuration: state, left stack (nearest cell first), right stack
    (head cell first).  Blanks pushed onto a stack stay there (as in the network).

    Example:
        >>> tm = binary_increment()
        >>> cfg = tm.run("1011")            # 11 + 1
        >>> cfg.state, cfg.steps, tm.tape_string(cfg)
        ('done', 8, '1100')
    """

    state: str
    left: tuple[int, ...]
    right: tuple[int, ...]
    steps: int = 0


@dataclass(frozen=True)
class TuringMachine:
    """A deterministic one-tape machine.

    ``transitions`` maps ``(state, symbol)`` to ``(new state, written symbol, move)``
    with move in ``L R S``; ``symbols[0]`` is the blank; ``states[0]`` is the start.
    A halting state, or a missing transition, stops the machine.

    Example:
        >>> tm = busy_beaver_2()
        >>> cfg = tm.run("")
        >>> cfg.steps, tm.tape_string(cfg).count("1")
        (6, 4)
    """

    name: str
    states: tuple[str, ...]
    symbols: tuple[str, ...]
    transitions: tuple[tuple[tuple[str, str], tuple[str, str, str]], ...]
    halting: frozenset[str]

    @staticmethod
    def make(name: str, states: Sequence[str], symbols: Sequence[str],
             table: Mapping[tuple[str, str], tuple[str, str, str]],
             halting: Sequence[str]) -> TuringMachine:
        """Build and validate a machine from a dict transition table."""
        tm = TuringMachine(name, tuple(states), tuple(symbols), tuple(table.items()),
                           frozenset(halting))
        tm.validate()
        return tm

    def validate(self) -> None:
        if not self.states or not self.symbols:
            raise ConstructionError(f"machine {self.name}: needs states and symbols")
        if len(set(self.states)) != len(self.states) or len(set(self.symbols)) != len(self.symbols):
            raise ConstructionError(f"machine {self.name}: repeated state or symbol name")
        for h in self.halting:
            if h not in self.states:
                raise ConstructionError(f"machine {self.name}: halting state {h!r} is not a state")
        for (s, a), (t, w, mv) in self.transitions:
            where = f"machine {self.name}, transition ({s!r}, {a!r})"
            if s not in self.states or t not in self.states:
                raise ConstructionError(f"{where}: unknown state")
            if a not in self.symbols or w not in self.symbols:
                raise ConstructionError(f"{where}: unknown symbol")
            if mv not in MOVES:
                raise ConstructionError(f"{where}: move must be L, R or S, got {mv!r}")
            if s in self.halting:
                raise ConstructionError(f"{where}: halting states have no transitions")

    @property
    def table(self) -> dict[tuple[str, str], tuple[str, str, str]]:
        return dict(self.transitions)

    @property
    def base(self) -> int:
        """B: the least power of two >= 2K."""
        return 2 ** max(1, math.ceil(math.log2(2 * len(self.symbols))))

    def initial(self, word: str | Sequence[str]) -> Config:
        """Head on the first input symbol; the rest of the tape blank."""
        idx = {c: i for i, c in enumerate(self.symbols)}
        try:
            right = tuple(idx[c] for c in word)
        except KeyError as e:
            raise RelulabError(f"machine {self.name}: input symbol {e.args[0]!r} is not in "
                               f"its alphabet {self.symbols}") from None
        return Config(self.states[0], (), right)

    def halted(self, cfg: Config) -> bool:
        a = self.symbols[cfg.right[0]] if cfg.right else self.symbols[0]
        return cfg.state in self.halting or (cfg.state, a) not in self.table

    def step(self, cfg: Config) -> Config:
        """One step of the plain simulator (a halted configuration is returned as is)."""
        if self.halted(cfg):
            return cfg
        a = cfg.right[0] if cfg.right else 0
        t, w, mv = self.table[(cfg.state, self.symbols[a])]
        wi = self.symbols.index(w)
        rest = cfg.right[1:]
        if mv == "R":
            left, right = (wi, *cfg.left), rest
        elif mv == "S":
            left, right = cfg.left, (wi, *rest)
        else:
            top = cfg.left[0] if cfg.left else 0
            left, right = cfg.left[1:], (top, wi, *rest)
        return Config(t, left, right, cfg.steps + 1)

    def run(self, word: str | Sequence[str], max_steps: int = 10_000) -> Config:
        """Run the plain simulator until it halts (or ``max_steps``)."""
        cfg = self.initial(word)
        while not self.halted(cfg) and cfg.steps < max_steps:
            cfg = self.step(cfg)
        return cfg

    def tape_string(self, cfg: Config) -> str:
        """The tape contents without the blanks at either end."""
        cells = [self.symbols[a] for a in (*reversed(cfg.left), *cfg.right)]
        s = "".join(cells)
        return s.strip(self.symbols[0]) if len(self.symbols[0]) == 1 else s


# ------------------------------------------------------------------ encoding
def _stack_value(stack: Sequence[int], B: int) -> Fraction:
    q = Fraction(0)
    for a in reversed(stack):
        q = (2 * a + 1 + q) / B
    return q


def encode_config(tm: TuringMachine, cfg: Config) -> np.ndarray:
    """The network state ``[one-hot state, q_L, q_R]`` (Fractions) of a configuration.

    Example:
        >>> tm = binary_increment()
        >>> v = encode_config(tm, tm.initial("1011"))
        >>> len(v) == len(tm.states) + 2, decode_config(tm, v) == tm.initial("1011")
        (True, True)
    """
    v = [Fraction(int(s == cfg.state)) for s in tm.states]
    v += [_stack_value(cfg.left, tm.base), _stack_value(cfg.right, tm.base)]
    return np.array(v, dtype=object)


def _stack_decode(q: Fraction, B: int, K: int, limit: int = 100_000) -> tuple[int, ...]:
    out = []
    while q != 0:
        d = math.floor(q * B)
        if d % 2 == 0 or not 0 <= (d - 1) // 2 < K or len(out) > limit:
            raise RelulabError(f"value {q} is not a stack encoding in base {B}")
        out.append((d - 1) // 2)
        q = q * B - d
    return tuple(out)


def decode_config(tm: TuringMachine, vec: Sequence[object], steps: int = 0) -> Config:
    """Inverse of :func:`encode_config` (floats are read by their exact binary value).

    Example:
        >>> tm = binary_increment()
        >>> net = compile_turing_machine(tm)
        >>> v = encode_config(tm, tm.initial("1"))
        >>> for _ in range(3):
        ...     v = net(v)                  # one network pass is one machine step
        >>> decode_config(tm, v, steps=3) == tm.run("1", max_steps=3)
        True
    """
    vec = [Fraction(v) for v in vec]
    n = len(tm.states)
    hot = [i for i in range(n) if vec[i] == 1]
    if len(hot) != 1 or any(vec[i] != 0 for i in range(n) if i != hot[0]):
        raise RelulabError(f"state part {vec[:n]} is not one-hot")
    K = len(tm.symbols)
    return Config(tm.states[hot[0]], _stack_decode(vec[n], tm.base, K),
                  _stack_decode(vec[n + 1], tm.base, K), steps)


# ------------------------------------------------------------------ compiler
def compile_turing_machine(tm: TuringMachine) -> Network:
    """The recurrent step network of ``tm`` (see the module docstring).

    Input and output: ``[one-hot state (S), q_L, q_R]``, ``S + 2`` values.
    Size: 3 hidden layers; layer 1 has ``S + 2 + 4K`` neurons (state and stacks passed
    on, ``2(K - 1)`` sigma neurons for each stack's ``ge_a``, 2 for each ``ne``);
    layer 2 has ``N K + H + 5`` (N non-halting and H halting states: case indicators,
    halting flags, pop L, pop R, top L, q_L, q_R); layer 3 has ``S`` (next state) plus one
    gating neuron per distinct candidate value of each stack (at most ``K + 2`` for L,
    ``2K + 2`` for R).

    Example:
        >>> compile_turing_machine(busy_beaver_2())
        Network(5-13-10-9-5, exact)
    """
    tm.validate()
    S, K, B = len(tm.states), len(tm.symbols), tm.base
    sidx = {s: i for i, s in enumerate(tm.states)}
    aidx = {a: i for i, a in enumerate(tm.symbols)}
    table = tm.table
    b = Builder(S + 2)
    z = b.inputs()
    st_in, l_in, r_in = z[:S], z[S], z[S + 1]

    # layer 1: read both stacks
    st1 = [b.relu(e) for e in st_in]
    l1, r1 = b.relu(l_in), b.relu(r_in)
    ge_l = [b.sigma(l_in * B - 2 * a) for a in range(1, K)]
    ge_r = [b.sigma(r_in * B - 2 * a) for a in range(1, K)]
    ne_l, ne_r = b.sigma(l_in * B), b.sigma(r_in * B)
    b.close()
    lay = b.layer
    one = b.const(1)
    ge_r_full = [one, *ge_r, Expr(lay)]  # ge_0 = 1, ge_K = 0
    ind_r = [ge_r_full[a] - ge_r_full[a + 1] for a in range(K)]
    pop_l = l1 * B - esum(ge_l, lay) * 2 - ne_l
    pop_r = r1 * B - esum(ge_r, lay) * 2 - ne_r
    top_l = esum(ge_l, lay)

    # layer 2: case indicators and carried values
    cases: dict[tuple[str, int], Expr] = {}
    for s in tm.states:
        if s in tm.halting:
            continue
        for a in range(K):
            cases[(s, a)] = b.relu(st1[sidx[s]] + ind_r[a] - 1)
    halt_flags = {s: b.relu(st1[sidx[s]]) for s in tm.states if s in tm.halting}
    pl, pr, tl = b.relu(pop_l), b.relu(pop_r), b.relu(top_l)
    l2, r2 = b.relu(l1), b.relu(r1)
    b.close()

    # group the cases by the next value of each stack
    lay = b.layer
    zero = Expr(lay)
    new_state = {s: zero for s in tm.states}
    groups_l: dict[tuple, Expr] = {}
    groups_r: dict[tuple, Expr] = {}

    def add(groups: dict[tuple, Expr], key: tuple, ind: Expr) -> None:
        groups[key] = groups.get(key, zero) + ind

    for s, flag in halt_flags.items():
        new_state[s] = new_state[s] + flag
        add(groups_l, ("keep",), flag)
        add(groups_r, ("keep",), flag)
    for (s, a), c in cases.items():
        tr = table.get((s, tm.symbols[a]))
        if tr is None:  # no transition: a fixed point
            new_state[s] = new_state[s] + c
            add(groups_l, ("keep",), c)
            add(groups_r, ("keep",), c)
            continue
        t, w, mv = tr
        wi = aidx[w]
        new_state[t] = new_state[t] + c
        if mv == "R":
            add(groups_l, ("push", wi), c)
            add(groups_r, ("pop",), c)
        elif mv == "S":
            add(groups_l, ("keep",), c)
            add(groups_r, ("write", wi), c)
        else:
            add(groups_l, ("pop",), c)
            add(groups_r, ("back", wi), c)

    def value_l(key: tuple) -> Expr:
        if key[0] == "keep":
            return l2
        if key[0] == "pop":
            return pl
        return (l2 + 2 * key[1] + 1) / B  # push written symbol onto L

    def value_r(key: tuple) -> Expr:
        if key[0] == "keep":
            return r2
        if key[0] == "pop":
            return pr
        if key[0] == "write":
            return (pr + 2 * key[1] + 1) / B
        # move left: push the written symbol, then L's top symbol
        return ((pr + 2 * key[1] + 1) / B + tl * 2 + 1) / B

    # layer 3: gate each candidate value by its group indicator; pass the state on
    st3 = [b.relu(new_state[s]) for s in tm.states]
    out_l = esum((b.relu(value_l(k) + g - 1) for k, g in sorted(groups_l.items())), lay + 1)
    out_r = esum((b.relu(value_r(k) + g - 1) for k, g in sorted(groups_r.items())), lay + 1)
    b.close()
    return b.build([*st3, out_l, out_r])


# ------------------------------------------------------------------ running
def _as_inputs(tm: TuringMachine, words: Sequence[str]) -> list[Config]:
    return [tm.initial(w) for w in words]


def run_network(tm: TuringMachine, net: Network, word: str, max_steps: int = 10_000,
                mode: str = "exact") -> Config:
    """Iterate the step network from the initial configuration of ``word`` until the
    state vector stops changing (the machine halted) or ``max_steps``; return the
    decoded configuration.  ``mode``: "exact" (integer arithmetic) or "float".

    Example:
        >>> tm = unary_addition()
        >>> tm.tape_string(run_network(tm, compile_turing_machine(tm), "11+1"))
        '111'
    """
    traj = run_batch(tm, net, [word], max_steps, mode=mode, keep=False)
    vec, steps = traj
    return decode_config(tm, vec[0], steps[0])


def run_batch(tm: TuringMachine, net: Network, words: Sequence[str], max_steps: int,
              mode: str = "exact", keep: bool = False,
              ) -> tuple[np.ndarray | list[np.ndarray], list[int]]:
    """Run the network on many inputs at once.

    Returns ``(final states, steps taken)``, or with ``keep=True`` ``(list of the
    state arrays after each step, steps)`` (Fractions in exact mode, floats otherwise).
    A run stops when a step leaves its state unchanged: a halted machine, or a machine
    caught in a step that changes nothing (state, symbol and head kept), which never
    halts and so counts ``max_steps`` steps, as the simulator does.

    Example:
        >>> tm = binary_increment()
        >>> finals, steps = run_batch(tm, compile_turing_machine(tm), ["1", "11", "101"], 50)
        >>> steps == [tm.run(w).steps for w in ["1", "11", "101"]]
        True
        >>> [tm.tape_string(decode_config(tm, v)) for v in finals]
        ['10', '100', '110']
    """
    X0 = np.array([encode_config(tm, c) for c in _as_inputs(tm, words)], dtype=object)
    n = len(words)
    steps = np.zeros(n, dtype=np.int64)
    if mode == "exact":
        ev = ExactEvaluator(net)
        from ._exact import to_int_batch

        Xn, d = to_int_batch(X0)
        hist = [(Xn, d)] if keep else []
        done = np.zeros(n, dtype=bool)
        for _ in range(max_steps):
            Yn, D = ev.forward_int(Xn, d)
            # compare as fractions: cross-multiply (exact)
            same = np.asarray(Yn * d == Xn * D, dtype=bool).all(axis=1)
            steps += ~done & ~same
            done |= same
            Xn, d = Yn, D
            if keep:
                hist.append((Xn, d))
            if done.all():
                break

        def frac(Xn: np.ndarray, d: int) -> np.ndarray:
            out = np.empty(Xn.shape, dtype=object)
            for idx, v in np.ndenumerate(Xn):
                out[idx] = Fraction(v, d)
            return out

        final = frac(Xn, d)
        _count_endless_loops(tm, final, steps, max_steps)
        if keep:
            return [frac(a, dd) for a, dd in hist], steps.tolist()
        return final, steps.tolist()
    if mode != "float":
        raise RelulabError(f"mode must be 'exact' or 'float', got {mode!r}")
    fnet = net.float()
    X = np.array(X0, dtype=np.float64)
    with _one_blas_thread():
        out, _ = _run_float(fnet, X, n, steps, max_steps, keep)
    _count_endless_loops(tm, out[-1] if keep else out, steps, max_steps)
    return out, steps.tolist()


def _count_endless_loops(tm: TuringMachine, finals: np.ndarray, steps: np.ndarray,
                         max_steps: int) -> None:
    """A run that stopped at a fixed point of a configuration that is not halted (a
    transition that keeps state, symbol and head) would step forever: it counts
    ``max_steps`` steps, like the simulator.  ``steps`` is changed in place."""
    for i, v in enumerate(finals):
        if steps[i] < max_steps:
            try:
                cfg = decode_config(tm, v, int(steps[i]))
            except RelulabError:
                continue  # not a configuration (a float run past its exact range)
            if not tm.halted(cfg):
                steps[i] = max_steps


def _one_blas_thread():
    """Small repeated matmuls are much faster on one BLAS thread (threadpoolctl if present)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional: only a speed matter
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(1)


def _run_float(fnet: Network, X: np.ndarray, n: int, steps: np.ndarray, max_steps: int,
               keep: bool) -> tuple[np.ndarray | list[np.ndarray], list[int]]:
    histf = [X] if keep else []
    done = np.zeros(n, dtype=bool)
    for _ in range(max_steps):
        with np.errstate(all="ignore"):  # a float run past its exact range may blow up
            Y = fnet.forward(X, check_finite=False)
        same = np.all(Y == X, axis=1)
        steps += ~done & ~same
        done |= same
        X = Y
        if keep:
            histf.append(X)
        if done.all():
            break
    return (histf if keep else X), steps.tolist()


@dataclass(frozen=True)
class FloatExactness(Result):
    """How long a float64 run of a step network agrees exactly with the exact run."""

    machine: str
    base: int
    bits_per_symbol: int
    max_exact_length: int  # longest input length for which every tried run agreed
    first_failure_length: int | None
    runs_per_length: int


def float_exact_length(tm: TuringMachine, words_for_length, max_length: int = 40,
                       runs_per_length: int = 3, max_steps: int = 2000) -> FloatExactness:
    """Measure up to which input length the float64 network agrees bit for bit with the
    exact network at every step.  ``words_for_length(n, k)`` gives k inputs of length n.

    Example:
        >>> r = float_exact_length(binary_increment(), lambda n, k: ["1" * n] * k, max_length=6,
        ...                        runs_per_length=1)
        >>> r.max_exact_length, r.first_failure_length
        (6, None)
    """
    net = compile_turing_machine(tm)
    last_ok, fail = 0, None
    for n in range(1, max_length + 1):
        words = words_for_length(n, runs_per_length)
        ex, _ = run_batch(tm, net, words, max_steps, "exact", keep=True)
        fl, _ = run_batch(tm, net, words, max_steps, "float", keep=True)
        ok = len(ex) == len(fl) and all(
            np.isfinite(fr).all() and all(
                Fraction(float(f)) == e for f, e in zip(fr.reshape(-1), er.reshape(-1), strict=True))
            for fr, er in zip(fl, ex, strict=True))
        if not ok:
            fail = n
            break
        last_ok = n
    return FloatExactness(tm.name, tm.base, int(math.log2(tm.base)), last_ok, fail, runs_per_length)


def machine_from_json(text: str, source: str = "<string>") -> TuringMachine:
    """Read a machine from JSON: ``{"name", "states" (start first), "symbols" (blank
    first), "halting": [...], "transitions": [[state, symbol, new_state, write, move], ...]}``.

    Example:
        >>> tm = machine_from_json('{"states": ["q", "h"], "symbols": ["_", "1"], '
        ...     '"halting": ["h"], "transitions": [["q", "1", "q", "1", "R"], ["q", "_", "h", "1", "S"]]}')
        >>> tm.tape_string(tm.run("11"))
        '111'
    """
    import json

    from ..errors import FormatError

    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        raise FormatError(f"{source}:{e.lineno}:{e.colno}: invalid JSON ({e.msg})") from None
    if not isinstance(d, dict):
        raise FormatError(f"{source}: expected a JSON object")
    for key in ("states", "symbols", "transitions"):
        if key not in d:
            raise FormatError(f"{source}: missing key '{key}'")
    table = {}
    for i, t in enumerate(d["transitions"]):
        if not (isinstance(t, list) and len(t) == 5):
            raise FormatError(f"{source}: transition {i}: expected [state, symbol, new_state, "
                              "write, move]")
        s_, a, t_, w, mv = (str(v) for v in t)
        if (s_, a) in table:
            raise FormatError(f"{source}: transition {i}: ({s_!r}, {a!r}) defined twice")
        table[(s_, a)] = (t_, w, mv)
    try:
        return TuringMachine.make(str(d.get("name", source)), [str(v) for v in d["states"]],
                                  [str(v) for v in d["symbols"]], table,
                                  [str(v) for v in d.get("halting", [])])
    except ConstructionError as e:
        raise FormatError(f"{source}: {e}") from None


# ------------------------------------------------------------------ machines
def binary_increment() -> TuringMachine:
    """Adds one to a binary number (most significant bit first): walk right to the end,
    then turn trailing 1s into 0s and the first 0 (or the blank) into 1.

    Example:
        >>> tm = binary_increment()
        >>> [tm.tape_string(tm.run(w)) for w in ("0", "111", "1001")]
        ['1', '1000', '1010']
    """
    return TuringMachine.make(
        "binary-increment", ("right", "carry", "done"), ("_", "0", "1"),
        {
            ("right", "0"): ("right", "0", "R"),
            ("right", "1"): ("right", "1", "R"),
            ("right", "_"): ("carry", "_", "L"),
            ("carry", "1"): ("carry", "0", "L"),
            ("carry", "0"): ("done", "1", "S"),
            ("carry", "_"): ("done", "1", "S"),
        },
        ("done",),
    )


def balanced_parentheses() -> TuringMachine:
    """Decides whether a string of ( and ) is balanced: cross out the first ) and the
    nearest ( to its left, repeatedly; halts in ``accept`` or ``reject``.

    Example:
        >>> tm = balanced_parentheses()
        >>> [tm.run(w).state for w in ("(())()", "(()", ")(")]
        ['accept', 'reject', 'reject']
    """
    return TuringMachine.make(
        "balanced-parentheses", ("scan", "back", "check", "accept", "reject"),
        ("_", "(", ")", "X"),
        {
            ("scan", "("): ("scan", "(", "R"),
            ("scan", "X"): ("scan", "X", "R"),
            ("scan", ")"): ("back", "X", "L"),
            ("scan", "_"): ("check", "_", "L"),
            ("back", "X"): ("back", "X", "L"),
            ("back", "("): ("scan", "X", "R"),
            ("back", ")"): ("reject", ")", "S"),
            ("back", "_"): ("reject", "_", "S"),
            ("check", "X"): ("check", "X", "L"),
            ("check", "("): ("reject", "(", "S"),
            ("check", ")"): ("reject", ")", "S"),
            ("check", "_"): ("accept", "_", "S"),
        },
        ("accept", "reject"),
    )


def unary_addition() -> TuringMachine:
    """``1^a + 1^b -> 1^(a+b)``: turn each + into 1, walk to the end, erase the last 1.

    Example:
        >>> tm = unary_addition()
        >>> tm.tape_string(tm.run("11+111"))
        '11111'
    """
    return TuringMachine.make(
        "unary-addition", ("first", "second", "erase", "done"), ("_", "1", "+"),
        {
            ("first", "1"): ("first", "1", "R"),
            ("first", "+"): ("second", "1", "R"),
            ("first", "_"): ("done", "_", "S"),
            ("second", "1"): ("second", "1", "R"),
            ("second", "+"): ("second", "1", "R"),
            ("second", "_"): ("erase", "_", "L"),
            ("erase", "1"): ("done", "_", "S"),
            ("erase", "_"): ("done", "_", "S"),
        },
        ("done",),
    )


def busy_beaver_2() -> TuringMachine:
    """The 2-state, 2-symbol busy beaver: from a blank tape it halts after 6 steps
    leaving 4 ones (A0 -> 1RB, A1 -> 1LB, B0 -> 1LA, B1 -> 1RH).

    Example:
        >>> tm = busy_beaver_2()
        >>> cfg = run_network(tm, compile_turing_machine(tm), "")      # the network, not the machine
        >>> cfg.steps, tm.tape_string(cfg).count("1")
        (6, 4)
    """
    return TuringMachine.make(
        "busy-beaver-2", ("A", "B", "H"), ("0", "1"),
        {
            ("A", "0"): ("B", "1", "R"),
            ("A", "1"): ("B", "1", "L"),
            ("B", "0"): ("A", "1", "L"),
            ("B", "1"): ("H", "1", "R"),
        },
        ("H",),
    )


MACHINES = {
    "binary-increment": binary_increment,
    "balanced-parentheses": balanced_parentheses,
    "unary-addition": unary_addition,
    "busy-beaver-2": busy_beaver_2,
}
