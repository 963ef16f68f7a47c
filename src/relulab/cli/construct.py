"""``relulab construct KIND``: build an exact network from a specification and save it.

Example:
    $ relulab construct max --n 8 -o max8.onnx
    $ relulab construct sawtooth --depth 10 -o saw.npz --json
    $ relulab construct adder --bits 4 -o add4.npz
    $ relulab construct turing --machine balanced-parentheses -o tm.npz
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from fractions import Fraction
from typing import Any

import typer

from ..errors import FormatError, RelulabError
from ..network import Network
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
    "word": "--input", "hidden_layers": "--hidden-layers",
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
    try:
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
    hl = 2 and one is stored, else the recursive substitution (checked exactly at random
    rational points of every tried ordering: 'sampled')."""
    import numpy as np

    from .. import construct as C

    if nn < 2:
        raise RelulabError(f"construct max: --n must be >= 2 with --hidden-layers, got {nn}")
    if hl < 1:
        raise RelulabError(f"construct max: --hidden-layers must be >= 1, got {hl}")
    fewest = 2 if nn in C.MAXN_LARGE else C.deep_layers(nn)
    extra: dict[str, Any] = {
        "fewest_hidden_layers_here": fewest,
        "published_hidden_layers": C.log6_layers(nn),
        "stored_two_hidden_layer_n": sorted({2, *C.MAXN_STORED, *C.MAXN_LARGE}),
    }
    if hl == 2 and nn in C.MAXN_LARGE and nn not in C.MAXN_STORED:
        sol = C.stored_max_pairs(nn)
        extra["construction"] = ("two-hidden-layer search (first layer relu(x_i - x_j)); float64 "
                                 "network, certificate from its integer arrays")
        extra["certificate"] = C.certify_max_pairs(nn, sol).to_dict()
        return C.max_pairs_network(nn, sol, exact=False), extra
    if hl < fewest:
        raise RelulabError(
            f"construct max: --hidden-layers {hl} is too few for --n {nn} here (needs {fewest}; "
            f"two hidden layers are stored for n in {extra['stored_two_hidden_layer_n']})")
    if hl == 2 and (nn == 2 or nn in C.MAXN_STORED):
        net = C.max_n_two_hidden(nn)
        extra["construction"] = "two-hidden-layer search (first layer relu(x_i - x_j))"
        extra["certificate"] = C.certify_max_cones(net, nn).to_dict()
        return net, extra
    net = C.max_n_deep(nn, hidden_layers=hl)
    rng = np.random.default_rng(0)
    X = [[Fraction(int(a), int(b)) for a, b in zip(rng.integers(-999, 1000, nn),
                                                   rng.integers(1, 30, nn), strict=True)]
         for _ in range(8)]
    Y = C.ExactEvaluator(net)(np.array(X, dtype=object))[:, 0]
    ok = all(y == max(x) for x, y in zip(X, Y, strict=True))
    extra["construction"] = "recursive substitution into the stored two-hidden-layer networks"
    extra["certificate"] = {"status": "sampled" if ok else "failed", "points": len(X),
                            "bases_certified": "by certify_max_cones (relulab.construct)"}
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
    return C.cpwl_1d(bp, vals, _fractions(o.left_slope, "--left-slope")[0],
                     _fractions(o.right_slope, "--right-slope")[0]), {}


@construction("lattice", "max-of-mins CPWL from a JSON file {A, c, groups} (--file)", ("file",))
def _lattice(kind: str, o: Options) -> tuple[Network, dict]:
    from fractions import Fraction

    from .. import construct as C

    path = _need(o.file, "--file", kind)
    try:
        spec = json.loads(_read(path))
        A, c, groups = spec["A"], spec["c"], spec["groups"]
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise FormatError(f"{path}: expected JSON with keys A, c, groups ({e})") from None
    A = [[Fraction(str(v)) for v in row] for row in A]
    c = [Fraction(str(v)) for v in c]
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
    extra = {"exact_max_error": C.square_error(mm).to_dict()} if mm <= 10 else {}
    return C.yarotsky_square(mm), extra


@construction("product", "x*y on [0, 1]^2 by polarisation (--m)", ("m",))
def _product(kind: str, o: Options) -> tuple[Network, dict]:
    from .. import construct as C

    mm = _need(o.m, "--m", kind)
    extra = {"exact_max_error": C.product_error(mm).to_dict()} if mm <= 4 else {}
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

    return _circuit_network(C.gate(_need(o.op, "--op", kind), o.k or 2))


@construction("dnf", "DNF formula (--terms '1 -2; 2 3', --vars n)", ("terms", "n_vars"))
def _dnf(kind: str, o: Options) -> tuple[Network, dict]:
    from .. import construct as C

    tt = _need(o.terms, "--terms", kind)
    try:
        parsed = [[int(v) for v in t.replace(",", " ").split()] for t in tt.split(";")]
    except ValueError:
        raise RelulabError(f"--terms: cannot read {tt!r}; write '1 -2; 2 3'") from None
    nv = o.n_vars or max(abs(v) for t in parsed for v in t)
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


@construction("sat-gadget", "3-CNF hardness gadget (--file DIMACS or --random n,m,seed)",
              ("file", "random"))
def _sat_gadget(kind: str, o: Options) -> tuple[Network, dict]:
    from .. import construct as C

    if o.file is not None:
        clauses, nv = C.parse_dimacs(_read(o.file), o.file)
    else:
        r = _need(o.random, "--file or --random", kind)
        try:
            nv, mc, seed = (int(v) for v in r.split(","))
        except ValueError:
            raise RelulabError(f"--random: expected n,m,seed, got {r!r}") from None
        clauses = C.random_3cnf(nv, mc, seed)
    net = C.sat_gadget(clauses, nv)
    extra: dict[str, Any] = {"n_vars": nv, "n_clauses": len(clauses)}
    if nv <= 16:
        unsat, _ = C.min_unsat(clauses, nv)
        extra.update(unsat=unsat, max_over_cube=f"({len(clauses)} - {unsat})/3")
    return net, extra


@construction("turing",
              "Turing machine step network (--machine NAME or --file JSON; --input WORD runs it)",
              ("file", "machine", "word"))
def _turing(kind: str, o: Options) -> tuple[Network, dict]:
    from .. import construct as C

    if o.file is not None:
        tm = C.machine_from_json(_read(o.file), o.file)
    else:
        name = _need(o.machine, "--machine or --file", kind)
        if name not in C.MACHINES:
            raise RelulabError(f"--machine: unknown machine {name!r}; "
                               f"choose from {', '.join(sorted(C.MACHINES))}")
        tm = C.MACHINES[name]()
    net = C.compile_turing_machine(tm)
    extra: dict[str, Any] = dict(machine=tm.name, states=list(tm.states), symbols=list(tm.symbols),
                                 base=tm.base, layout="[one-hot state, q_left, q_right]")
    if o.word is not None:
        cfg = C.run_network(tm, net, o.word, max_steps=100_000)
        sim = tm.run(o.word, max_steps=100_000)
        extra["run"] = {"input": o.word, "final_state": cfg.state, "steps": cfg.steps,
                        "tape": tm.tape_string(cfg),
                        "agrees_with_simulator": (cfg.state, cfg.left, cfg.right, cfg.steps)
                        == (sim.state, sim.left, sim.right, sim.steps)}
    return net, extra


@construction("subdivision", "refinement iterate of the hat seed, wide network (--mask, --steps)",
              ("mask", "steps"))
def _subdivision(kind: str, o: Options) -> tuple[Network, dict]:
    from .. import construct as C

    mk = _fractions(_need(o.mask, "--mask", kind), "--mask")
    st = _need(o.steps, "--steps", kind)
    net = C.subdivision_network(mk, st)
    return net, {"breakpoints": net.n_neurons - 1}


KINDS = {name: c.help for name, c in REGISTRY.items()}


def build(kind: str, **options: Any) -> tuple[Network, dict]:
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
    output: str | None = typer.Option(None, "-o", "--output", help="Save to .onnx/.npz/.nnet/.pt."),
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
    left_slope: str = typer.Option("0", "--left-slope"),
    right_slope: str = typer.Option("0", "--right-slope"),
    random: str | None = typer.Option(None, "--random", help="Random 3-CNF 'n,m,seed'."),
    machine: str | None = typer.Option(None, "--machine", help="Turing machine name."),
    word: str | None = typer.Option(None, "--input", help="Turing: run the network on this input."),
    mask: str | None = typer.Option(None, "--mask", help="Subdivision mask, e.g. '1/2,1,1/2'."),
    steps: int | None = typer.Option(None, "--steps", help="Refinement steps."),
    hidden_layers: int | None = typer.Option(
        None, "--hidden-layers",
        help="max: this many hidden layers (2: the certified search network; more: recursive "
             "substitution), e.g. construct max --n 6 --hidden-layers 2 -o max6.onnx"),
    json_out: bool = JSON_OPT,
) -> None:
    """Build an exact construction (rational weights), report its size, optionally save it."""
    net, extra = build(kind, n=n, depth=depth, m=m, k=k, op=op, bits=bits, file=file,
                       terms=terms, n_vars=n_vars, breakpoints=breakpoints, values=values,
                       left_slope=left_slope, right_slope=right_slope, random=random,
                       machine=machine, mask=mask, steps=steps, word=word,
                       hidden_layers=hidden_layers)
    if output is not None:
        from ..io import save_model

        save_model(net, output)
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
        **extra,
    }
    if json_out:
        print_json(report)
        return
    console.print(f"[bold]{kind}[/bold]: {net!r}, {net.n_hidden_layers} hidden layers, "
                  f"{net.n_neurons} neurons, {net.n_params} parameters (exact rationals)",
                  soft_wrap=True)
    for key, v in extra.items():
        console.print(f"  {key}: {v}", highlight=False, soft_wrap=True, markup=False)
    if output:
        console.print(f"saved to {output}")


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

