"""``relulab construct KIND``: build an exact network from a specification and save it.

Example:
    $ relulab construct max --n 8 -o max8.onnx
    $ relulab construct sawtooth --depth 10 -o saw.npz --json
    $ relulab construct adder --bits 4 -o add4.npz
    $ relulab construct turing --machine balanced-parentheses -o tm.npz
    $ relulab construct activation model.onnx --act gelu --scale 100 --box -1:1 -o gelu.onnx --json
    $ relulab construct integral --poly "x^2+xy" --width 256 --form sharpened
    $ relulab construct turing --machine binary-increment --arch transformer --input 0110 --json
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import typer

from ..errors import FormatError, RelulabError
from ..network import Network
from ..results import to_jsonable
from ._common import JSON_OPT, console, print_json, read_text_arg

__all__ = ["register", "tour", "KINDS", "build", "REGISTRY", "Construction", "Options"]

# ------------------------------------------------------------------ options
@dataclass(frozen=True)
class Options:
    """Every option of ``relulab construct`` (None: not given); each construction takes
    the few listed in its :class:`Construction`."""

    n: int | None = None
    depth: int | None = None
    m: int | None = None
    k: int | None = None
    op: str | None = None
    bits: int | None = None
    file: str | None = None
    terms: str | None = None
    n_vars: int | None = None
    breakpoints: str | None = None
    values: str | None = None
    left_slope: str = "0"
    right_slope: str = "0"
    random: str | None = None
    machine: str | None = None
    mask: str | None = None
    steps: int | None = None
    word: str | None = None
    model: str | None = None
    act: str | None = None
    scale: float | None = None
    box: str | None = None
    poly: str | None = None
    width: int | None = None
    rule: str = "grid"
    form: str = "plain"
    radius: str = "1"
    dist: str = "ball"
    arch: str = "recurrent"
    dtype: str = "float64"
    sigma: float | None = None
    bits_grid: int = 16
    noise_seed: int = 0
    seed: str | None = None
    d: int | None = None
    hidden_layers: int | None = None

    def given(self) -> list[str]:
        """The options set to something other than their default."""
        return [f.name for f in fields(self) if getattr(self, f.name) != f.default]


# the command-line spelling of each option
FLAGS = {
    "n": "--n", "depth": "--depth", "m": "--m", "k": "--k", "op": "--op", "bits": "--bits",
    "file": "--file", "terms": "--terms", "n_vars": "--vars", "breakpoints": "--breakpoints",
    "values": "--values", "left_slope": "--left-slope", "right_slope": "--right-slope",
    "random": "--random", "machine": "--machine", "mask": "--mask", "steps": "--steps",
    "word": "--input", "model": "MODEL", "act": "--act", "scale": "--scale", "box": "--box",
    "poly": "--poly", "width": "--width", "rule": "--rule", "form": "--form", "radius": "--radius",
    "dist": "--dist", "arch": "--arch", "dtype": "--dtype", "sigma": "--sigma",
    "bits_grid": "--grid-bits", "noise_seed": "--noise-seed", "seed": "--seed", "d": "--d",
    "hidden_layers": "--hidden-layers",
}


@dataclass(frozen=True)
class Construction:
    """One kind of ``relulab construct``: its help line, the options it takes, and the
    function that builds the network and the extra facts of the report."""

    name: str
    help: str
    options: tuple[str, ...]
    make: Callable[[str, Options], tuple[Network, dict]]


REGISTRY: dict[str, Construction] = {}


def construction(names: str | tuple[str, ...], help: str | dict[str, str],  # noqa: A002
                 options: tuple[str, ...] = ()):
    """Register the decorated builder under one name or several (same options)."""
    def deco(fn: Callable[[str, Options], tuple[Network, dict]]):
        for name in (names,) if isinstance(names, str) else names:
            text = help if isinstance(help, str) else help[name]
            REGISTRY[name] = Construction(name, text, options, fn)
        return fn
    return deco


def _need(value: Any, opt: str, kind: str) -> Any:
    if value is None:
        raise RelulabError(f"construct {kind}: {opt} is required")
    return value


def _read(path: str) -> str:
    return read_text_arg(path)


def _fractions(text: str, what: str) -> list:
    from fractions import Fraction

    parts = [p for p in text.replace(",", " ").split() if p]
    if not parts:
        raise RelulabError(f"{what}: no numbers given (write them like '1/2,1,1/2')")
    try:
        if any("_" in p for p in parts):  # "1_0" is a typo, not 10
            raise ValueError
        return [Fraction(p) for p in parts]
    except (ValueError, ZeroDivisionError):
        raise RelulabError(f"{what}: cannot read numbers from {text!r}") from None


# ------------------------------------------------------------------ constructions
@construction(("max", "min"), {"max": "max of n inputs (--n; --hidden-layers H: two-hidden-layer "
                                      "search or recursive substitution)",
                               "min": "min of n inputs (--n)"},
              ("n", "hidden_layers"))
def _max_min(kind: str, o: Options) -> tuple[Network, dict]:
    from .. import construct as C

    nn = _need(o.n, "--n", kind)
    if o.hidden_layers is None:
        net = C.max_n(nn) if kind == "max" else C.min_n(nn)
        return net, {"formula_hidden_layers": 0 if nn <= 1 else math.ceil(math.log2(nn))}
    if kind != "max":
        raise RelulabError("construct min: --hidden-layers applies to max only")
    return _max_layers(nn, o.hidden_layers)


def _max_layers(nn: int, hl: int) -> tuple[Network, dict]:
    """max of nn inputs with hl hidden layers: the certified two-hidden-layer network when
    hl = 2 and one is stored, else the recursive substitution into the certified bases
    (construct.max_deep), proved by composition and re-checked exactly at random points."""

    from .. import construct as C
    from ..construct.maxn_deep import MAX_DENSE_WEIGHTS
    from ..limits import ResourceLimitError

    if nn < 2:
        raise RelulabError(f"construct max: --n must be >= 2 with --hidden-layers, got {nn}")
    if hl < 1:
        raise RelulabError(f"construct max: --hidden-layers must be >= 1, got {hl}")
    stored_two = {2, *C.MAXN_STORED, *C.MAXN_LARGE, *C.MAXN_BLOCKS, *C.MAXN_ORBIT_SIZES}
    # two hidden layers where a stored base covers n (n = 9, 10 in orbit form), else the
    # recursion's depth; max of 2 needs one
    fewest = 1 if nn == 2 else (2 if nn in stored_two else C.deep_depth(nn))
    extra: dict[str, Any] = {
        "fewest_hidden_layers_here": fewest,
        "published_hidden_layers": C.log6_layers(nn),
        "stored_two_hidden_layer_n": sorted(stored_two),
    }
    if hl == 2 and nn in C.MAXN_ORBIT_SIZES:
        sol = C.stored_max_orbits(nn)
        widths = C.orbit_widths(nn, sol)
        extra.update(
            construction=("two-hidden-layer search (first layer relu(x_i - x_j)), orbit-factorised: "
                          "one output weight per S_n-orbit of second-layer neurons"),
            hidden_layers=2, hidden_widths=list(widths), orbits=len(sol.terms),
            certificate=C.certify_max_orbits(nn, sol).to_dict(),
            fewest_hidden_layers_here=2,
            not_saved_because=(f"this one has {widths[1]:,} second-layer neurons "
                               f"({widths[1] * widths[0]:,} weights): "
                               "relulab.construct.stored_max_orbits keeps it orbit-factorised and "
                               "eval_max_orbits evaluates it exactly"))
        return None, extra
    if hl == 2 and nn in C.MAXN_BLOCKS and nn not in C.MAXN_STORED:
        sol = C.stored_max_blocks(nn)
        extra["construction"] = ("two-hidden-layer search over block-symmetric orbits (first layer "
                                 "relu(x_i - x_j)); certificate from its integer arrays")
        extra["certificate"] = C.certify_max_blocks(nn, sol).to_dict()
        exact = nn in C.two_hidden_available()
        return C.max_blocks_network(nn, sol, exact=exact), extra
    if hl == 2 and nn in C.MAXN_LARGE and nn not in C.MAXN_STORED:
        sol = C.stored_max_pairs(nn)
        extra["construction"] = ("two-hidden-layer search (first layer relu(x_i - x_j)); float64 "
                                 "network, certificate from its integer arrays")
        extra["certificate"] = C.certify_max_pairs(nn, sol).to_dict()
        return C.max_pairs_network(nn, sol, exact=False), extra
    if hl < fewest:
        raise RelulabError(
            f"construct max: --hidden-layers {hl} is too few for --n {nn} here (needs {fewest} "
            f"with the certified two-hidden-layer bases {C.certified_bases()}; the paper's "
            f"12-input base would need {C.log6_layers(nn)})")
    if hl == 2 and (nn == 2 or nn in C.MAXN_STORED):
        net = C.max_n_two_hidden(nn)
        extra["construction"] = "two-hidden-layer search (first layer relu(x_i - x_j))"
        extra["certificate"] = C.certify_max_cones(net, nn).to_dict()
        return net, extra
    small = [b for b in C.certified_bases() if b <= 6]
    how = ("too many to build; relulab.construct.max_deep + eval_max_deep evaluate it exactly "
           "in factorised form")
    try:  # refused early when even its first layer is too large to expand
        dm = C.max_deep(nn, hl, small if C.deep_depth(nn, small) <= hl else None,
                        max_dense_weights=MAX_DENSE_WEIGHTS)
    except ResourceLimitError:
        raise RelulabError(f"construct max: the network for --n {nn} with --hidden-layers {hl} "
                           f"has more than {MAX_DENSE_WEIGHTS:,} dense weights, {how}") from None
    try:
        net = C.deep_max_network(dm)
    except RelulabError:
        try:  # too large for Fractions: float64 weights
            net = C.deep_max_network(dm, exact=False)
        except RelulabError:
            sizes = [nn, *dm.widths, 1]
            dense = sum(a * b for a, b in zip(sizes[:-1], sizes[1:], strict=True))
            raise RelulabError(
                f"construct max: the network for --n {nn} with --hidden-layers {hl} (widths "
                f"{list(dm.widths)}, bases {list(dm.bases_used)}) has {dense:,} dense weights, "
                f"{how}") from None
    rng = np.random.default_rng(0)
    X = [[Fraction(int(a), int(b)) for a, b in zip(rng.integers(-999, 1000, nn),
                                                   rng.integers(1, 30, nn), strict=True)]
         for _ in range(8)]
    ok = C.eval_max_deep(dm, X) == [max(x) for x in X]
    cert = C.certify_max_deep(dm).to_dict()
    if not ok:
        cert.update(status="failed", reason="an exact evaluation at a random point differs from max")
    extra["construction"] = (f"recursive substitution into the certified two-hidden-layer bases "
                             f"{list(dm.bases_used)}")
    extra["certificate"] = {**cert, "points_checked": len(X)}
    return net, extra


@construction("max2h", "max of n <= 6 inputs with two hidden layers, certified (--n)", ("n",))
def _max2h(kind: str, o: Options) -> tuple[Network, dict]:
    from .. import construct as C

    nn = _need(o.n, "--n", kind)
    if not 2 <= nn <= 6:
        raise RelulabError("construct max2h: --n must be 2..6 (the search covers those)")
    if nn == 6:
        net = C.max6_two_hidden()
    elif nn == 5:
        net = C.max5_two_hidden()
    else:
        net = C.search_max_two_hidden(nn).network
    return net, {"certificate": C.certify_max(net, nn).to_dict()}


@construction("cpwl1d", "univariate CPWL (--breakpoints, --values, --left-slope, --right-slope)",
              ("breakpoints", "values", "left_slope", "right_slope"))
def _cpwl1d(kind: str, o: Options) -> tuple[Network, dict]:
    from .. import construct as C

    bp = _fractions(_need(o.breakpoints, "--breakpoints", kind), "--breakpoints")
    vals = _fractions(_need(o.values, "--values", kind), "--values")
    return C.cpwl_1d(bp, vals, _one_fraction(o.left_slope, "--left-slope"),
                     _one_fraction(o.right_slope, "--right-slope")), {}


def _one_fraction(text: str, flag: str) -> Fraction:
    """One number of ``flag`` ("1,2" kept the 1 and dropped the 2 silently)."""
    vals = _fractions(text, flag)
    if len(vals) != 1:
        raise RelulabError(f"{flag}: expected one number, got {len(vals)} ({text!r})")
    return vals[0]


def _lattice_spec(A: Any, c: Any, groups: Any, path: str) -> tuple[list, list, list]:
    """The lattice file's A (rows of numbers), c and groups (lists of row indices),
    checked: every bad entry is named with its place in the file."""
    from fractions import Fraction

    def number(v: Any, where: str) -> Fraction:
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            raise FormatError(f"{path}: {where} is {json.dumps(v)}; expected a number")
        try:
            q = Fraction(str(v))
        except (ValueError, ZeroDivisionError):
            raise FormatError(f"{path}: {where} is {json.dumps(v)}; expected a finite number") from None
        return q

    if not isinstance(A, list) or not A or not all(isinstance(r, list) and r for r in A):
        raise FormatError(f"{path}: A must be a non-empty list of non-empty rows")
    rows = [[number(v, f"A[{i}][{j}]") for j, v in enumerate(r)] for i, r in enumerate(A)]
    if not isinstance(c, list):
        raise FormatError(f"{path}: c must be a list of numbers")
    cc = [number(v, f"c[{i}]") for i, v in enumerate(c)]
    if not isinstance(groups, list) or not all(isinstance(g, list) for g in groups):
        raise FormatError(f"{path}: groups must be a list of lists of row indices")
    for k, g in enumerate(groups):
        for j, v in enumerate(g):
            if isinstance(v, bool) or not isinstance(v, int):
                raise FormatError(f"{path}: groups[{k}][{j}] is {json.dumps(v)}; expected a row index (an integer)")
    return rows, cc, groups


@construction("lattice", "max-of-mins CPWL from a JSON file {A, c, groups} (--file)", ("file",))
def _lattice(kind: str, o: Options) -> tuple[Network, dict]:

    from .. import construct as C

    path = _need(o.file, "--file", kind)
    try:
        spec = json.loads(_read(path))
        A, c, groups = spec["A"], spec["c"], spec["groups"]
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise FormatError(f"{path}: expected JSON with keys A, c, groups ({e})") from None
    A, c, groups = _lattice_spec(A, c, groups, path)
    net = C.max_of_mins(A, c, groups)
    return net, {"size_vs_published_bound": C.lattice_size(net, len(A), len(groups)).to_dict()}


@construction("tent", "the tent map on [0, 1]")
def _tent(kind: str, o: Options) -> tuple[Network, dict]:
    from .. import construct as C

    return C.tent(), {}


@construction("sawtooth", "L-fold tent map, 2^L pieces (--depth)", ("depth",))
def _sawtooth(kind: str, o: Options) -> tuple[Network, dict]:
    from .. import construct as C

    L = _need(o.depth, "--depth", kind)
    net = C.sawtooth(L)
    return net, {"pieces_on_[0,1]": C.count_pieces(net, 0, 1) if L <= 12 else 2**L}


@construction("square", "Yarotsky's x^2 on [0, 1], error 2^(-2m-2) (--m)", ("m",))
def _square(kind: str, o: Options) -> tuple[Network, dict]:
    from .. import construct as C

    mm = _need(o.m, "--m", kind)
    # the exact check walks the 2^m pieces: past m = 10 it is not run, and says so
    extra = {"exact_max_error": C.square_error(mm).to_dict() if mm <= 10 else
             "not computed for m > 10 (2^m pieces); the construction's error is 2^(-2m-2)"}
    return C.yarotsky_square(mm), extra


@construction("product", "x*y on [0, 1]^2 by polarisation (--m)", ("m",))
def _product(kind: str, o: Options) -> tuple[Network, dict]:
    from .. import construct as C

    mm = _need(o.m, "--m", kind)
    extra = {"exact_max_error": C.product_error(mm).to_dict() if mm <= 4 else
             "not computed for m > 4 (the exact check walks every piece of the square)"}
    return C.product(mm), extra


@construction("monomial", "x^k on [0, 1] (--k, --m)", ("k", "m"))
def _monomial(kind: str, o: Options) -> tuple[Network, dict]:
    from .. import construct as C

    kk, mm = _need(o.k, "--k", kind), _need(o.m, "--m", kind)
    extra = {"max_error": C.monomial_error(kk, mm).to_dict()} if mm <= 5 and kk <= 5 else {}
    return C.monomial(kk, mm), extra


def _circuit_network(circ: Any) -> tuple[Network, dict]:
    """Compile a Boolean circuit, checked on every input when there are few."""
    from .. import construct as C

    net = C.compile_circuit(circ)
    extra: dict[str, Any] = {"inputs": list(circ.inputs), "outputs": list(circ.outputs)}
    if len(circ.inputs) <= 12:
        extra["exhaustive_check"] = C.check_circuit(circ, net).to_dict()
    return net, extra


@construction("gate", "one Boolean gate (--op AND|OR|NAND|NOR|XOR|XNOR|MAJ|NOT, --k fan-in)",
              ("op", "k"))
def _gate(kind: str, o: Options) -> tuple[Network, dict]:
    from .. import construct as C

    if o.k is not None and o.k < 1:
        raise RelulabError(f"--k: a gate needs at least 1 input, got {o.k}")
    return _circuit_network(C.gate(_need(o.op, "--op", kind), o.k))


@construction("dnf", "DNF formula (--terms '1 -2; 2 3', --vars n)", ("terms", "n_vars"))
def _dnf(kind: str, o: Options) -> tuple[Network, dict]:
    from .. import construct as C

    tt = _need(o.terms, "--terms", kind)
    try:
        parsed = [[int(v) for v in t.replace(",", " ").split()] for t in tt.split(";")]
    except ValueError:
        raise RelulabError(f"--terms: cannot read {tt!r}; write '1 -2; 2 3'") from None
    if not any(parsed):
        raise RelulabError(f"--terms: no literals in {tt!r}; write '1 -2; 2 3'")
    if o.n_vars is not None and o.n_vars < 1:
        raise RelulabError(f"--vars: a formula needs at least 1 variable, got {o.n_vars}")
    nv = o.n_vars or max(1, max(abs(v) for t in parsed for v in t))
    return _circuit_network(C.dnf(parsed, nv))


@construction("circuit", "a netlist file (--file; see docs/construct.md)", ("file",))
def _circuit(kind: str, o: Options) -> tuple[Network, dict]:
    from .. import construct as C

    path = _need(o.file, "--file", kind)
    return _circuit_network(C.parse_circuit(_read(path), path))


@construction("adder", "n-bit ripple-carry adder (--bits)", ("bits",))
def _adder(kind: str, o: Options) -> tuple[Network, dict]:
    from .. import construct as C

    return _circuit_network(C.ripple_carry_adder(_need(o.bits, "--bits", kind)))


@construction("comparator", "n-bit comparator, outputs gt eq lt (--bits)", ("bits",))
def _comparator(kind: str, o: Options) -> tuple[Network, dict]:
    from .. import construct as C

    return _circuit_network(C.comparator(_need(o.bits, "--bits", kind)))


def _clauses(kind: str, o: Options) -> tuple[list, int]:
    """The 3-CNF of --file DIMACS or --random n,m,seed: (clauses, number of variables)."""
    from .. import construct as C

    if o.file is not None:
        return C.parse_dimacs(_read(o.file), o.file)
    r = _need(o.random, "--file or --random", kind)
    try:
        nv, mc, seed = (int(v) for v in r.split(","))
    except ValueError:
        raise RelulabError(f"--random: expected n,m,seed, got {r!r}") from None
    if seed < 0:   # numpy's own message named neither the option nor the seed
        raise RelulabError(f"--random: the seed must be a non-negative integer, got {seed}")
    return C.random_3cnf(nv, mc, seed), nv


@construction("sat-gadget", "3-CNF hardness gadget (--file DIMACS or --random n,m,seed)",
              ("file", "random"))
def _sat_gadget(kind: str, o: Options) -> tuple[Network, dict]:
    from .. import construct as C

    clauses, nv = _clauses(kind, o)
    net = C.sat_gadget(clauses, nv)
    extra: dict[str, Any] = {"n_vars": nv, "n_clauses": len(clauses)}
    if nv <= 16:
        unsat, _ = C.min_unsat(clauses, nv)
        extra.update(unsat=unsat, max_over_cube=f"({len(clauses)} - {unsat})/3")
    return net, extra


@construction("turing",
              "Turing machine step network (--machine NAME or --file JSON; --input WORD runs it, "
              "at most --steps steps; --arch recurrent|transformer, --dtype for the transformer run)",
              ("file", "machine", "word", "arch", "dtype", "steps"))
def _turing(kind: str, o: Options) -> tuple[Network | None, dict]:
    from .. import construct as C

    if o.file is not None:
        tm = C.machine_from_json(_read(o.file), o.file)
    else:
        name = _need(o.machine, "--machine or --file", kind)
        if name not in C.MACHINES:
            raise RelulabError(f"--machine: unknown machine {name!r}; "
                               f"choose from {', '.join(sorted(C.MACHINES))}")
        tm = C.MACHINES[name]()
    if o.arch not in ("recurrent", "transformer"):
        raise RelulabError(f"--arch: expected recurrent or transformer, got {o.arch!r}")
    if o.steps is not None and (o.word is None or o.arch != "recurrent"):
        raise RelulabError("--steps: applies to a recurrent run (--input WORD, --arch recurrent)")
    if o.steps is not None and o.steps < 1:
        raise RelulabError(f"--steps: a run needs at least 1 step, got {o.steps}")
    if o.arch == "transformer":
        return None, _turing_transformer(tm, o)
    if o.dtype != "float64":
        raise RelulabError("--dtype applies to --arch transformer (the recurrent network runs "
                           "in exact integer arithmetic)")
    net = C.compile_turing_machine(tm)
    extra: dict[str, Any] = dict(machine=tm.name, states=list(tm.states), symbols=list(tm.symbols),
                                 base=tm.base, layout="[one-hot state, q_left, q_right]")
    if o.word is not None:
        # exact steps cost more as the tape's integers grow (100,000 steps of a machine that
        # moves right forever took 200 s): the default stops sooner, --steps raises it
        limit = TURING_STEP_LIMIT if o.steps is None else o.steps
        cfg = C.run_network(tm, net, o.word, max_steps=limit)
        sim = tm.run(o.word, max_steps=limit)
        # a run cut by the step limit said nothing of it: its state read as the final one
        extra["run"] = {"input": o.word, "final_state": cfg.state, "steps": cfg.steps,
                        "halted": tm.halted(cfg), "step_limit": limit,
                        "tape": tm.tape_string(cfg),
                        "agrees_with_simulator": (cfg.state, cfg.left, cfg.right, cfg.steps)
                        == (sim.state, sim.left, sim.right, sim.steps)}
    return net, extra


TRANSFORMER_HORIZON = 2000  # steps the CLI's transformer is compiled for
TURING_STEP_LIMIT = 10_000  # default steps of a recurrent run (network and simulator) before it stops


def _turing_transformer(tm: Any, o: Options) -> dict:
    from .. import construct as C
    from ..construct.transformer import same_config

    word = o.word or ""
    sim = C.compile_transformer(tm, horizon=TRANSFORMER_HORIZON, max_input=max(len(word), 1))
    extra: dict[str, Any] = {"arch": "transformer", "machine": tm.name,
                             "states": list(tm.states), "symbols": list(tm.symbols),
                             **sim.sizes(), "dtype": o.dtype,
                             "exact_in_dtype": sim.exact_in(o.dtype)}
    if o.word is not None:
        run = C.run_transformer(sim, [word], dtype=o.dtype)[0]
        ref = tm.run(word, max_steps=run.steps)
        cfg = tm.initial(word)
        agree = True
        for t in range(run.steps + 1):  # every step, not only the end
            agree &= same_config(tm, run.config(t), cfg)
            cfg = tm.step(cfg)
        extra["run"] = {"input": word, "final_state": run.final_state, "steps": run.steps,
                        "halted": run.halted, "tape": tm.tape_string(run.config(run.steps)),
                        "agrees_with_simulator": bool(agree and run.steps == ref.steps
                                                      and run.halted == tm.halted(ref))}
    return extra


@construction("smoothed-gadget",
              "hardness gadget perturbed as in smoothed verification, its max measured "
              "(--file DIMACS or --random n,m,seed; --sigma, --grid-bits, --noise-seed)",
              ("file", "random", "sigma", "bits_grid", "noise_seed"))
def _smoothed(kind: str, o: Options) -> tuple[Network, dict]:
    from .. import construct as C

    clauses, nv = _clauses(kind, o)
    if nv > 20:
        raise RelulabError(f"construct {kind}: at most 20 variables (unsat is found by brute force)")
    sigma = C.SIGMA_STAR if o.sigma is None else o.sigma
    net = C.perturb(C.normalized_gadget(clauses, nv), sigma, o.bits_grid, o.noise_seed)
    gap = C.smoothed_gap(clauses, nv, sigma=sigma, bits=o.bits_grid, seed=o.noise_seed)
    return net, {"n_vars": nv, "n_clauses": len(clauses), "measured": gap.to_dict()}


@construction("subdivision", "refinement iterate of the hat seed, wide network (--mask, --steps)",
              ("mask", "steps"))
def _subdivision(kind: str, o: Options) -> tuple[Network, dict]:
    from .. import construct as C

    mk = _refine_mask(_need(o.mask, "--mask", kind))  # coefficients or a named mask, as refine
    st = _need(o.steps, "--steps", kind)
    net = C.subdivision_network(mk, st)
    return net, {"breakpoints": net.n_neurons - 1}


@construction("activation",
              "a ReLU network MODEL as a network of another activation (--act, --scale, --box)",
              ("model", "act", "scale", "box"))
def _activation(kind: str, o: Options) -> tuple[Any, dict]:
    from .. import construct as C
    from ..construct.actfuncs import parse_activation
    from ._common import box_text, load_model_arg, parse_box

    path = _need(o.model, "MODEL", kind)
    act = _need(o.act, "--act", kind)
    net = load_model_arg(path)
    box = parse_box(o.box, net.input_dim)
    r = C.approximate_relu_network(net, parse_activation(act), box,
                                   o.scale if o.scale is not None else 100.0)
    d = r.to_dict()
    rho = d.pop("network")
    d["activation_params"] = d.pop("params")    # "params" is the report's parameter count
    return r.network, {**d, "formula": rho["formula"], "relu_hidden_layers": net.n_hidden_layers,
                       "box": box_text(box), "onnx_float32_steps": r.network.onnx_float32_steps}


@construction("integral",
              "two-layer ReLU network from the integral representation of a polynomial "
              "(--poly, --width, --rule grid|mc, --form plain|sharpened, --radius, --dist ball|sphere)",
              ("poly", "width", "rule", "form", "radius", "dist"))
def _integral(kind: str, o: Options) -> tuple[Network, dict]:
    from .. import construct as C

    text = _need(o.poly, "--poly", kind)
    width = _need(o.width, "--width", kind)
    radius = _fractions(o.radius, "--radius")[0]
    sphere = radius if (o.dist == "sphere" and o.form == "sharpened") else None
    rep = C.integral_representation(text, radius, o.form, sphere)
    net = C.quadrature_network(rep, width, o.rule)
    r = C.quadrature_report(rep.target, width, o.rule, o.form, radius, o.dist)
    d = r.to_dict()
    return net, {k: d[k] for k in ("polynomial", "form", "rule", "width", "distribution", "l2_error",
                                   "mc_bound", "n_samples", "status", "representation")}
def _refine_mask(text: str) -> list:
    from .. import construct as C

    if text in C.MASKS:
        return list(C.MASKS[text])
    if text.replace("-", "").isalpha():
        raise RelulabError(f"--mask: unknown mask {text!r}; give coefficients like '1/2,1,1/2' "
                           f"or one of {', '.join(C.MASKS)}")
    return _fractions(text, "--mask")


# the exact check at every breakpoint is quick up to here; beyond, say it was skipped
REFINE_CHECK_MAX_STEPS = 6
# the float copy's error past which it is flagged
REFINE_FLOAT_WARN = 1e-9  # tol: a float copy within rounding of an O(1) function
# points at which the float64 network is compared with the exact iterate (or estimated)
REFINE_FLOAT_POINTS = 257


@construction("refine", "refinement iterate at fixed width, 3k+3 hidden layers (--mask, --steps, --seed "
              "hat or --breakpoints/--values)", ("mask", "steps", "seed", "breakpoints", "values"))
def _refine(kind: str, o: Options) -> tuple[Network, dict]:

    from .. import construct as C
    from ..construct.refine_scheme import MAX_ITERATE_BREAKPOINTS, iterate_size
    from ..limits import check_bytes

    mk = _refine_mask(_need(o.mask, "--mask", kind))
    st = _need(o.steps, "--steps", kind)
    if o.breakpoints is not None or o.values is not None:
        if o.seed is not None:
            raise RelulabError("construct refine: give --seed or --breakpoints/--values, not both")
        bp = _fractions(_need(o.breakpoints, "--breakpoints", kind), "--breakpoints")
        vals = _fractions(_need(o.values, "--values", kind), "--values")
    elif o.seed in (None, "hat"):
        bp, vals = [0, 1, 2], [0, 1, 0]
    else:
        raise RelulabError(f"--seed: unknown seed {o.seed!r}; use 'hat' or --breakpoints/--values")
    if st > 3:
        # the exact network's references and the float64 and extended-precision copies
        # measured below: 16 + 8 + 16 bytes a weight (400 steps passed the budget at 1.93 GB
        # after 141 s); the widths do not depend on the steps, so two small builds size it
        p2, p3 = (C.refinement_network(mk, k, bp, vals).n_params for k in (2, 3))
        check_bytes(40.0 * (p3 + (st - 3) * (p3 - p2)),
                    f"construct refine --steps {st}: the exact network and its float copies")
    net = C.refinement_network(mk, st, bp, vals)
    extra: dict = {"steps": st, "mask": [str(v) for v in C.parse_mask(mk)],
                   "convergence": C.scheme_convergence(mk).status,
                   "step_widths": list(C.refinement_sizes(net, st))}
    # the iterate's pieces (what the wide network needs) number ~2^steps: counted only
    # while that is cheap; the network above does not need them
    if iterate_size(C.parse_mask(mk), len(bp), st) <= MAX_ITERATE_BREAKPOINTS:
        ibp, ivals = C.subdivision_iterate(mk, bp, vals, st)
        extra.update(iterate_pieces=len(ibp) - 1, wide_network_neurons=len(ibp) + 1)
        # the big-M constants grow like (2 rho)^k: say what float64 makes of them
        X = np.random.default_rng(0).uniform(float(ibp[0]) - 0.5, float(ibp[-1]) + 0.5, REFINE_FLOAT_POINTS)
        exact = np.array([float(C.evaluate_cpwl(ibp, ivals, Fraction(x))) for x in X])
        with np.errstate(all="ignore"):
            err = float(np.max(np.abs(net.float()(X[:, None]).ravel() - exact)))
        extra["float64_max_error"] = f"{err:.3g} (sampled: {REFINE_FLOAT_POINTS} random points against the exact iterate)"
    else:
        extra["iterate_pieces"] = f"not counted (more than {MAX_ITERATE_BREAKPOINTS} possible breakpoints)"
        # the float copy is still measured (its big-M constants made the saved ONNX off by
        # 58 at 40 steps, with nothing said): exact evaluation of so deep a network takes
        # minutes, so against the same network in 80-bit extended precision, which carries
        # 11 more bits through the same cancellations (an estimate, said as such)
        X = np.random.default_rng(0).uniform(float(min(bp)) - 0.5, float(max(bp)) + 0.5, REFINE_FLOAT_POINTS)
        if np.finfo(np.longdouble).nmant > 52:
            exact = C.extended_forward(net, X)
            with np.errstate(all="ignore"):
                err = float(np.max(np.abs(net.float()(X[:, None]).ravel() - exact)))
            extra["float64_max_error"] = (f"{err:.3g} (estimated: {REFINE_FLOAT_POINTS} random points "
                                          "against 80-bit extended precision)")
    if "float64_max_error" in extra and not err <= REFINE_FLOAT_WARN * (1 + float(np.max(np.abs(exact)))):
        extra["float64_warning"] = (f"the float64 copy (and a saved ONNX file) is off by {err:.3g}: its "
                                    "big-M constants grow like (2 rho)^steps; use the exact network "
                                    "(save as .npz, which keeps Fractions) for this many steps")
    if st <= REFINE_CHECK_MAX_STEPS:
        chk = C.check_refinement_network(mk, st, bp, vals)
        extra["check"] = (f"exact at {chk.n_points} points (every breakpoint and midpoint)"
                          if chk.ok else f"MISMATCH at x = {chk.first_mismatch[0]}")
    else:
        extra["check"] = (f"skipped (steps > {REFINE_CHECK_MAX_STEPS}; "
                          "relulab.construct.check_refinement_network checks it)")
    return net, extra


def _int_or_size(v: Any) -> Any:
    """``v``, or for an integer too long to print (Python refuses past 4300 digits) its
    size as text: '2^1000000 <= v < 2^1000001'."""
    if isinstance(v, int) and v.bit_length() > 4000:
        b = v.bit_length()
        return f"2^{b - 1} <= value < 2^{b}"
    return v


@construction("hierarchy", "depth-hierarchy target F_(d,k): k hidden layers, width 3d (--d, --k)",
              ("d", "k"))
def _hierarchy(kind: str, o: Options) -> tuple[Network, dict]:
    from .. import construct as C

    dd, kk = _need(o.d, "--d", kind), _need(o.k, "--k", kind)
    net = C.hierarchy_network(dd, kk)
    extra: dict = {"scale": _int_or_size(C.hierarchy_scale(dd, kk)), "offset": _int_or_size(2 ** dd),
                   "shallow_width_bound": _int_or_size(C.shallow_width_bound(dd, kk))}
    if dd * 2 ** ((kk - 1) * dd) <= 4096:
        r = C.hierarchy_report(dd, kk)
        extra.update({"regions": r.regions, "max_gradient_norm": r.max_gradient_norm,
                      "value_range": list(r.value_range)})
    else:
        extra["regions"] = "not counted (more than 4096 expected)"
    if dd > HIERARCHY_FLOAT_D:
        # the shift by 2^d sits in the biases: exact, but a float copy rounds it away
        extra["float64_warning"] = (f"the offset 2^{dd} lies in the biases: the float64 copy (and a "
                                    "saved ONNX file) loses the cube's detail (0.98 off at d = 55); "
                                    "save as .npz, which keeps Fractions")
    return net, extra


# beyond this d the hierarchy's float copy is off by more than 1e-7 inside its cube
HIERARCHY_FLOAT_D = 30


KINDS = {name: c.help for name, c in REGISTRY.items()}


def build(kind: str, **options: Any) -> tuple[Network | None, dict]:
    """Build construction ``kind`` from its options (the keyword names of
    :class:`Options`); returns the network and extra facts for the report.  An unknown
    kind, and an option the construction does not take, are refused."""
    c = REGISTRY.get(kind)
    if c is None:
        raise RelulabError(f"unknown construction {kind!r}; choose from {', '.join(KINDS)}")
    try:
        opts = Options(**options)
    except TypeError as e:
        raise RelulabError(f"construct {kind}: {e}") from None
    stray = [FLAGS[name] for name in opts.given() if name not in c.options]
    if stray:
        takes = ", ".join(FLAGS[name] for name in c.options) or "no options"
        raise RelulabError(f"construct {kind}: {', '.join(stray)} does not apply "
                           f"(it takes {takes})")
    return c.make(kind, opts)


def construct_cmd(
    kind: str = typer.Argument(..., help="What to build: " + ", ".join(KINDS)),
    model: str | None = typer.Argument(None, help="activation: the ReLU model file."),
    output: str | None = typer.Option(None, "-o", "--out", "--output", help="Save to .onnx/.npz/.nnet/.pt."),
    n: int | None = typer.Option(None, "--n", help="Number of inputs (max, min)."),
    depth: int | None = typer.Option(None, "--depth", help="Sawtooth depth L."),
    m: int | None = typer.Option(None, "--m", help="Yarotsky level m (square, product, monomial)."),
    k: int | None = typer.Option(None, "--k", help="Monomial degree or gate fan-in."),
    op: str | None = typer.Option(None, "--op", help="Gate type."),
    bits: int | None = typer.Option(None, "--bits", help="Adder / comparator width."),
    file: str | None = typer.Option(None, "--file",
                                    help="Netlist, DIMACS, lattice JSON or machine JSON file."),
    terms: str | None = typer.Option(None, "--terms", help="DNF terms, e.g. '1 -2; 2 3'."),
    n_vars: int | None = typer.Option(None, "--vars", help="DNF variable count."),
    breakpoints: str | None = typer.Option(None, "--breakpoints", help="e.g. '0,1/2,1'."),
    values: str | None = typer.Option(None, "--values", help="Values at the breakpoints."),
    left_slope: str = typer.Option("0", "--left-slope", help="cpwl1d: slope left of the first breakpoint."),
    right_slope: str = typer.Option("0", "--right-slope", help="cpwl1d: slope right of the last breakpoint."),
    random: str | None = typer.Option(None, "--random", help="Random 3-CNF 'n,m,seed'."),
    machine: str | None = typer.Option(None, "--machine", help="Turing machine name."),
    word: str | None = typer.Option(None, "--input", help="Turing: run the network on this input."),
    mask: str | None = typer.Option(None, "--mask", help="Subdivision mask, e.g. '1/2,1,1/2'."),
    steps: int | None = typer.Option(None, "--steps",
                                     help="Refinement steps; turing --input: the most steps to run "
                                          "(default 10000)."),
    act: str | None = typer.Option(None, "--act", help="activation: gelu, sigmoid, tanh, ... (16); swish:beta=2."),
    scale: float | None = typer.Option(None, "--scale",
                                       help="activation: construction parameter t (default 100)."),
    box: str | None = typer.Option(None, "--box", help="activation: input box lo:hi or lo1:hi1,..."),
    poly: str | None = typer.Option(None, "--poly", help="integral: polynomial, e.g. 'x^2+xy'."),
    width: int | None = typer.Option(None, "--width", help="integral: quadrature neurons."),
    rule: str = typer.Option("grid", "--rule", help="integral: grid (d <= 2) or mc."),
    form: str = typer.Option("plain", "--form", help="integral: plain or sharpened."),
    radius: str = typer.Option("1", "--radius", help="integral: the ball |x| <= radius."),
    dist: str = typer.Option("ball", "--dist", help="integral: D uniform on the ball or sphere."),
    arch: str = typer.Option("recurrent", "--arch",
                             help="Turing: recurrent (Siegelmann-Sontag) or transformer (Wei-Chen-Ma)."),
    dtype: str = typer.Option("float64", "--dtype",
                              help="Turing transformer run: float64, float32 or int64."),
    sigma: float | None = typer.Option(None, "--sigma", help="smoothed-gadget noise (default 2^-11)."),
    bits_grid: int = typer.Option(16, "--grid-bits", help="smoothed-gadget dyadic grid 2^-bits."),
    noise_seed: int = typer.Option(0, "--noise-seed", min=0, help="smoothed-gadget noise seed."),
    seed: str | None = typer.Option(None, "--seed", help="Refinement seed: 'hat' (default)."),
    d: int | None = typer.Option(None, "--d", help="Input dimension (hierarchy)."),
    hidden_layers: int | None = typer.Option(
        None, "--hidden-layers",
        help="max: this many hidden layers (2: the certified search network; more: recursive "
             "substitution), e.g. construct max --n 6 --hidden-layers 2 -o max6.onnx"),
    json_out: bool = JSON_OPT,
) -> None:
    """Build an exact construction (rational weights), report its size, optionally save it.

    Example: relulab construct max --n 6 --hidden-layers 2 -o max6.onnx
    """
    if output is not None:
        from ..io import check_model_target

        check_model_target(output, "-o")  # before the construction, not after it
        if kind == "activation" and Path(output).suffix.lower() not in (".onnx", ".pt"):
            # a network of another activation has no .npz/.nnet form (refused after the work)
            raise RelulabError(f"-o {output}: a network of another activation saves as .onnx or .pt")
    net, extra = build(kind, n=n, depth=depth, m=m, k=k, op=op, bits=bits, file=file,
                       terms=terms, n_vars=n_vars, breakpoints=breakpoints, values=values,
                       left_slope=left_slope, right_slope=right_slope, random=random,
                       machine=machine, mask=mask, steps=steps, word=word, model=model, act=act,
                       scale=scale, box=box, poly=poly, width=width, rule=rule, form=form,
                       radius=radius, dist=dist, arch=arch, dtype=dtype,
                       sigma=sigma, bits_grid=bits_grid, noise_seed=noise_seed, seed=seed, d=d,
                       hidden_layers=hidden_layers)
    if net is None:  # no network to hand over (the transformer; orbit-factorised max): report only
        if output is not None:
            why = extra.get("not_saved_because",
                            "this construction is a transformer (use --arch recurrent to save)")
            raise RelulabError(f"construct {kind}: -o saves ReLU networks as weight files; {why}")
        report = {"kind": kind, "saved_to": None, **extra}
        if json_out:
            print_json(report)
            return
        console.print(f"[bold]{kind}[/bold] ({extra.get('arch', extra.get('construction', ''))})",
                      soft_wrap=True)
        for key, v in to_jsonable(extra).items():
            console.print(f"  {key}: {v}", highlight=False, soft_wrap=True, markup=False)
        return
    # an exact network saved to a float format (.onnx, .nnet, .pt) holds rounded weights
    # where they are not binary fractions (4/15): the file is then not the certified network
    rounded = (output is not None and isinstance(net, Network) and net.is_exact
               and Path(output).suffix.lower() != ".npz" and net.entry_not_a_float() is not None)
    report = {
        "kind": kind,
        "input_dim": net.input_dim,
        "output_dim": net.output_dim,
        "hidden_layers": net.n_hidden_layers,
        "hidden_widths": list(net.widths),
        "neurons": net.n_neurons,
        "params": net.n_params,
        "exact": net.is_exact,
        "saved_to": output,
        **({"saved_exact": not rounded} if output is not None and isinstance(net, Network) else {}),
        **extra,
    }
    # the report is made printable before anything is written: an integer of 4300 digits
    # (2^14300 pieces) failed after the file was saved, and a failed command left it
    report = to_jsonable(report)
    if output is not None:
        from ..io import save_model

        if isinstance(net, Network):
            save_model(net, output)
        else:   # a network of another activation (construct activation): .onnx or .pt
            net.save(output)
    if json_out:
        print_json(report)
        return
    console.print(f"[bold]{kind}[/bold]: {net!r}, {net.n_hidden_layers} hidden layers, "
                  f"{net.n_neurons} neurons, {net.n_params} parameters "
                  f"({'exact rationals' if net.is_exact else 'float64'})",
                  soft_wrap=True)
    for key in extra:
        console.print(f"  {key}: {report[key]}", highlight=False, soft_wrap=True, markup=False)
    if output:
        console.print(f"saved to {output}" + (
            " (weights rounded to float64: the file is not the exact network above; "
            "save to .npz to keep the exact rationals)" if rounded else ""), soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("construct", help="Build exact networks: " + ", ".join(KINDS) + ".")(construct_cmd)


def tour(console_) -> None:  # noqa: ANN001 - a rich Console
    """A short section of ``relulab tour``."""
    from fractions import Fraction

    from .. import construct as C

    console_.rule("Exact constructions (rational weights, checked exactly)")
    net = C.max_n(8)
    console_.print(f"  max of 8 numbers: {net!r}; max_8(3,-1,7,2,0,5,1/2,6) = "
                   f"{net([3, -1, 7, 2, 0, 5, Fraction(1, 2), 6])[0]}")
    m5 = C.max_n_two_hidden(5)
    console_.print(f"  max of 5 with TWO hidden layers (first layer relu(x_i - x_j)): {m5!r}, "
                   f"{C.certify_max_cones(m5, 5).status} on R^5 (the tree needs 3)")
    dm = C.max_deep(18, bases=[4, 5, 6])
    console_.print(f"  max of 18 by substituting group maxima into those bases: {dm.hidden_layers} hidden "
                   f"layers {list(dm.widths)}, {C.certify_max_deep(dm).status} by composition "
                   f"(the tree needs 5; with the 8-input base: {C.deep_depth(32)} layers up to n = 32)")
    console_.print(f"  sawtooth depth 6: width 2, {C.count_pieces(C.sawtooth(6), 0, 1)} linear pieces")
    r = C.square_error(4)
    console_.print(f"  Yarotsky x^2, m=4: exact max error {r.max_abs_error} at x = {r.argmax[0]}")
    chk = C.check_circuit(C.ripple_carry_adder(3))
    console_.print(f"  3-bit adder as one network: {chk.n_checked}/{chk.n_checked} inputs exact"
                   if chk.ok else "  adder check FAILED")
    tm = C.balanced_parentheses()
    tnet = C.compile_turing_machine(tm)
    cfg = C.run_network(tm, tnet, "(()())")
    console_.print(f"  Turing machine as a recurrent ReLU net {tnet!r}: '(()())' -> "
                   f"{cfg.state} after {cfg.steps} forward passes")
    from ..domain import Box

    errs = [C.approximate_relu_network(net, "gelu", Box([-1] * 8, [1] * 8), t, n_points=2000).sup_error
            for t in (10, 100, 1000)]
    console_.print("  max_8 as a GELU network (same size): sampled sup error on [-1,1]^8 at "
                   "scale 10/100/1000: " + " / ".join(f"{e:.1e}" for e in errs))
    rep = C.integral_representation("x^3 - x/2", 1, "sharpened")
    console_.print(f"  x^3 - x/2 as an integral over ReLU neurons: exact at x = 1/3 "
                   f"({rep.exact_value([Fraction(1, 3)]) == Fraction(1, 27) - Fraction(1, 6)}); "
                   f"64-neuron exact quadrature net {C.quadrature_network(rep, 64)!r}")
    rnet = C.refinement_network(C.MASKS["chaikin"], 5)
    pieces = len(C.subdivision_iterate(C.MASKS["chaikin"], [0, 1, 2], [0, 1, 0], 5)[0]) - 1
    console_.print(f"  Chaikin refinement f_5 ({pieces} pieces) at fixed width {max(rnet.widths)}: "
                   f"{rnet.n_hidden_layers} hidden layers (3 per step)")

