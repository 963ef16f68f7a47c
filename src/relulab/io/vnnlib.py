"""VNN-LIB properties: read them into a :class:`relulab.spec.Property` and write them back.

A VNN-LIB file (the SMT-LIB subset of the VNN-COMP competitions) declares the
network's inputs ``X_0 .. X_{d-1}`` and outputs ``Y_0 .. Y_{m-1}`` and asserts
constraints whose conjunction describes a *counterexample*: an input in the input
set whose output is in the unsafe set.  relulab reads:

* ``(declare-const X_i Real)``, ``(declare-const Y_j Real)`` (and the equivalent
  ``(declare-fun X_i () Real)``); ``set-logic``, ``set-info``, ``set-option``,
  ``check-sat``, ``get-model`` and ``exit`` are ignored;
* ``(assert F)`` where ``F`` is built from ``and``, ``or``, ``true``, ``false``
  and comparisons ``<=``, ``>=``, ``<``, ``>``, ``=`` (chains such as
  ``(<= a b c)`` included) between linear terms: numbers (``-0.5``, ``1e-3``),
  variables, ``+``, ``-`` (also unary ``(- x)``), ``*`` with at most one
  non-constant factor, and ``/`` by a non-zero number;
* comments from ``;`` to the end of the line.

**Strict inequalities** (``<``, ``>``) are read as the non-strict ones: the
unsafe set is taken closed, as the VNN-COMP rules do (it differs from the open
set only on a boundary of measure zero, and float arithmetic cannot tell them
apart anyway).  ``write_vnnlib`` writes non-strict inequalities only.

**Numbers are float64**: a literal is read as its nearest float64, and a bound with a
coefficient, ``(>= (* 3 X_0) 1)``, as the nearest float64 of ``1 / 3`` (either side
of it); the box verified is that float64 box.

The assertions are put in disjunctive normal form.  In each disjunct every
constraint must involve only inputs or only outputs; the input constraints must
bound single inputs and together give every ``X_i`` a lower and an upper bound
(a box); the output constraints become the rows of ``C y <= d``.  Disjuncts with
the same box are gathered into one :class:`~relulab.spec.Specification` (a
disjunction of output conjunctions), so ``(assert (or (and X.. Y..) (and X.. Y..)))``
with different boxes gives several cases.  A comparison with no variable left (e.g.
``(<= 1 0)``, or ``(< Y_0 Y_0)`` whose terms cancel) becomes an all-zero output row that
keeps its truth value, strictness included: a false one is the row ``0 <= -1``.  Strict
comparisons between variables are read closed (above), so an unsafe set that is empty
only by strictness (``(< Y_0 Y_1)`` on a network whose two outputs are equal) is
reported violated at its boundary.

Errors: a syntax error, an unsupported construct (``=>``, ``not``, a product of
variables, an undeclared variable, a constraint mixing inputs and outputs or
coupling several inputs) raises :class:`~relulab.errors.FormatError` with
``file:line:col``; an input without a lower or upper bound raises FormatError
naming it; an empty box raises :class:`~relulab.domain.DomainError`; declared
sizes that differ from ``n_inputs`` / ``n_outputs`` raise
:class:`~relulab.spec.SpecError`.

Example:
    >>> prop = parse_vnnlib('''
    ... (declare-const X_0 Real)
    ... (declare-const Y_0 Real)
    ... (declare-const Y_1 Real)
    ... (assert (>= X_0 -1)) (assert (<= X_0 1))
    ... (assert (<= Y_0 Y_1))        ; unsafe when Y_0 is not the larger output
    ... ''')
    >>> case = prop.cases[0]
    >>> case.input_box, case.unsafe[0].C.tolist(), case.unsafe[0].d.tolist()
    (Box(lo=[-1.0], hi=[1.0]), [[1.0, -1.0]], [0.0])
"""

from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass
from itertools import product
from pathlib import Path

import numpy as np

from ..domain import Box, DomainError
from ..errors import FormatError
from ..limits import check_bytes
from ..spec import OutputConstraint, Property, SpecError, Specification
from ._atomic import atomic_path

__all__ = ["load_vnnlib", "parse_vnnlib", "write_vnnlib", "format_vnnlib", "MAX_DISJUNCTS", "MAX_DNF_ATOMS"]

#: Refuse properties whose disjunctive normal form has more disjuncts than this.
MAX_DISJUNCTS = 1_000_000
#: ... or more constraints in all (summed over the disjuncts): 17 asserts, each an "or" of
#: two 100-atom conjunctions, are 2^17 disjuncts of 1,700 constraints, gigabytes
MAX_DNF_ATOMS = 5_000_000


def _product_size(a: list[list], b: list[list]) -> tuple[int, int]:
    """Disjuncts and constraints of the DNF of ``a and b`` (each a list of conjunctions)."""
    return len(a) * len(b), len(b) * sum(map(len, a)) + len(a) * sum(map(len, b))

_TOKEN = re.compile(
    r"""(?P<ws>\s+)
      | (?P<comment>;[^\n]*)
      | (?P<lp>\()
      | (?P<rp>\))
      | (?P<str>"(?:[^"]|"")*")
      | (?P<qsym>\|[^|]*\|)
      | (?P<sym>[^\s();"|]+)
      | (?P<bad>.)""",
    re.X | re.S,
)
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z", re.ASCII)
_VAR = re.compile(r"([XY])_(0|[1-9]\d*)\Z", re.ASCII)  # \d alone took '٠' (Arabic-Indic) as 0
_IGNORED = {"set-logic", "set-info", "set-option", "check-sat", "get-model", "exit"}
_COMPARE = {"<=", ">=", "<", ">", "="}


# ------------------------------------------------------------------ s-expressions
@dataclass
class _Atom:
    text: str
    pos: int


@dataclass
class _List:
    items: list
    pos: int


class _Source:
    """Text plus a way to turn an offset into ``line:col`` (both 1-based)."""

    def __init__(self, text: str, name: str) -> None:
        self.text = text
        self.name = name
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def where(self, pos: int) -> str:
        line = bisect.bisect_right(self.starts, pos)
        col = pos - self.starts[line - 1] + 1
        return f"{self.name}:{line}:{col}"

    def error(self, pos: int, msg: str) -> FormatError:
        return FormatError(f"{self.where(pos)}: {msg}")


def _read_sexprs(src: _Source) -> list:
    """The top-level s-expressions of the text."""
    top: list = []
    stack: list[_List] = []
    for m in _TOKEN.finditer(src.text):
        kind = m.lastgroup
        if kind in ("ws", "comment"):
            continue
        pos = m.start()
        if kind == "lp":
            stack.append(_List([], pos))
        elif kind == "rp":
            if not stack:
                raise src.error(pos, "unexpected ')' (no '(' to close)")
            done = stack.pop()
            (stack[-1].items if stack else top).append(done)
        elif kind == "bad":
            raise src.error(pos, f"unexpected character {m.group()!r}")
        else:
            text = m.group()
            if kind == "qsym":
                text = text[1:-1]
            (stack[-1].items if stack else top).append(_Atom(text, pos))
    if stack:
        raise src.error(
            stack[-1].pos, "this '(' is never closed: expected ')' before the end of the file"
        )
    return top


# ---------------------------------------------------------------------- semantics
# A linear term: ({variable: coefficient}, constant); a variable is ("X", i) or ("Y", j).
_Lin = tuple[dict, float]
# DNF atoms: ("in", i, is_upper, value, pos) for a bound on X_i; ("out", {j: c}, d, pos)
# for the output row sum_j c_j Y_j <= d.


class _Parser:
    def __init__(self, src: _Source) -> None:
        self.src = src
        self.declared: dict[tuple[str, int], int] = {}

    def err(self, node, msg: str) -> FormatError:
        return self.src.error(node.pos, msg)

    # ---- commands
    def run(self) -> tuple[list[list[tuple]], int, int]:
        dnf: list[list[tuple]] = [[]]
        for node in _read_sexprs(self.src):
            if not isinstance(node, _List):
                raise self.err(node, f"expected '(' to start a command, found {node.text!r}")
            head = self._head(node, "a command (declare-const, assert)")
            if head == "declare-const":
                self._declare(node, 2)
            elif head == "declare-fun":
                self._declare(node, 3)
            elif head == "assert":
                if len(node.items) != 2:
                    raise self.err(node, "expected exactly one formula after 'assert'")
                part = self._bool(node.items[1])
                self._check_size(dnf, part, node)
                if len(part) == 1:
                    for conj in dnf:
                        conj.extend(part[0])
                else:
                    dnf = [a + b for a, b in product(dnf, part)]
            elif head in _IGNORED:
                continue
            else:
                raise self.err(node.items[0], f"unsupported command '{head}'")
        return dnf, *self._sizes()

    def _check_size(self, a: list[list], b: list[list], node) -> None:
        """Refuse, at ``node``, a conjunction whose DNF would pass the size limits."""
        n_disj, n_atoms = _product_size(a, b)
        if n_disj > MAX_DISJUNCTS:
            raise self.err(node, f"the property has more than {MAX_DISJUNCTS} disjuncts")
        if n_atoms > MAX_DNF_ATOMS:
            raise self.err(node, f"the property's disjunctive normal form has more than {MAX_DNF_ATOMS} "
                                 f"constraints ({n_disj} disjuncts)")

    def _head(self, node: _List, what: str) -> str:
        if not node.items or not isinstance(node.items[0], _Atom):
            raise self.err(node, f"expected {what} after '('")
        return node.items[0].text

    def _declare(self, node: _List, sort_at: int) -> None:
        items = node.items
        ok = len(items) == sort_at + 1 and all(isinstance(a, _Atom) for a in items[1:sort_at:2])
        if sort_at == 3 and ok:
            ok = isinstance(items[2], _List) and not items[2].items
        if not ok:
            form = "(declare-const NAME Real)" if sort_at == 2 else "(declare-fun NAME () Real)"
            raise self.err(node, f"expected {form}")
        name, sort = items[1], items[sort_at]
        if not isinstance(sort, _Atom) or sort.text != "Real":
            raise self.err(sort, "unsupported sort: relulab reads Real variables only")
        m = _VAR.match(name.text)
        if not m:
            raise self.err(
                name,
                f"unsupported variable name {name.text!r}: inputs are X_0, X_1, ... "
                "and outputs Y_0, Y_1, ...",
            )
        key = (m.group(1), int(m.group(2)))
        if key in self.declared:
            raise self.err(name, f"{name.text} is declared twice")
        self.declared[key] = name.pos

    def _sizes(self) -> tuple[int, int]:
        sizes = []
        for kind in "XY":
            idx = sorted(i for k, i in self.declared if k == kind)
            missing = next((i for i, v in enumerate(idx) if i != v), None)
            if missing is not None:
                raise FormatError(
                    f"{self.src.name}: {kind}_{missing} is not declared but {kind}_{idx[-1]} is "
                    "(variables must be numbered from 0 without gaps)"
                )
            sizes.append(len(idx))
        if sizes[0] == 0:
            raise FormatError(f"{self.src.name}: no input variable X_0, X_1, ... is declared")
        return sizes[0], sizes[1]

    # ---- formulas
    def _bool(self, node) -> list[list[tuple]]:
        """The formula as a list of conjunctions (disjunctive normal form)."""
        if isinstance(node, _Atom):
            if node.text == "true":
                return [[]]
            if node.text == "false":
                return []
            raise self.err(node, f"expected a constraint such as (<= X_0 1), found {node.text!r}")
        head = self._head(node, "an operator (and, or, <=, >=, <, >)")
        args = node.items[1:]
        if head == "and":
            out: list[list[tuple]] = [[]]
            for a in args:
                part = self._bool(a)
                self._check_size(out, part, node)
                out = [x + y for x, y in product(out, part)]
            return out
        if head == "or":
            out = []
            for a in args:
                out.extend(self._bool(a))
            return out
        if head in _COMPARE:
            if len(args) < 2:
                raise self.err(node, f"'{head}' needs at least two arguments")
            terms = [self._term(a) for a in args]
            links: list[_Lin] = []
            # A chain (<= a b c) means a <= b and b <= c; each link becomes "lin <= 0".
            for a, b in zip(terms, terms[1:]):  # noqa: B905
                if head in ("<=", "<"):
                    links.append(_sub(a, b))
                elif head in (">=", ">"):
                    links.append(_sub(b, a))
                else:
                    links += [_sub(a, b), _sub(b, a)]
            atoms: list[tuple] = []
            for lin in links:
                if not any(c != 0 for c in lin[0].values()) and \
                        not (-lin[1] > 0 if head in ("<", ">") else -lin[1] >= 0):
                    # no variable left and false, strictness included ((< Y_0 Y_0) read
                    # closed was 0 <= 0, true): the all-zero row 0 <= -1, false by a margin
                    lin = ({}, 1.0)
                atoms.append(self._atom(lin, node))
            return [atoms]
        raise self.err(
            node.items[0],
            f"unsupported operator '{head}' in a formula "
            "(relulab reads and, or, true, false, <=, >=, <, >, =)",
        )

    def _atom(self, lin: _Lin, node: _List) -> tuple:
        """The constraint ``lin <= 0`` as an input bound or an output row."""
        coefs, const = lin
        if not (np.isfinite(const) and all(np.isfinite(c) for c in coefs.values())):
            raise self.err(node, "the constraint's coefficients overflow float64")
        xs = {i: c for (k, i), c in coefs.items() if k == "X" and c != 0}
        ys = {j: c for (k, j), c in coefs.items() if k == "Y" and c != 0}
        if xs and ys:
            raise self.err(
                node, "unsupported: a constraint mixing inputs X_i and outputs Y_j"
            )
        if xs:
            if len(xs) > 1:
                names = ", ".join(f"X_{i}" for i in sorted(xs))
                raise self.err(
                    node,
                    f"unsupported: an input constraint involving several inputs ({names}); "
                    "relulab reads input boxes (bounds on single inputs)",
                )
            (i, c), = xs.items()
            value = (0.0 - const) / c + 0.0  # + 0.0 turns a -0.0 bound into 0.0
            if not np.isfinite(value):
                raise self.err(node, f"the bound on X_{i} is not a finite number")
            return ("in", i, c > 0, value, node.pos)
        return ("out", ys, 0.0 - const, node.pos)

    def _term(self, node) -> _Lin:
        if isinstance(node, _Atom):
            t = node.text
            if _NUMBER.match(t):
                v = float(t)
                if not np.isfinite(v):
                    raise self.err(node, f"the number {t} is out of the float64 range")
                return {}, v
            m = _VAR.match(t)
            if m:
                key = (m.group(1), int(m.group(2)))
                if key not in self.declared:
                    raise self.err(node, f"unknown variable '{t}' (not declared)")
                return {key: 1.0}, 0.0
            raise self.err(node, f"expected a number or a variable X_i / Y_j, found {t!r}")
        head = self._head(node, "an operator (+, -, *, /)")
        if head not in ("+", "-", "*", "/"):
            # checked before the arguments, so `(ite c a b)` names `ite`, not its condition
            raise self.err(
                node.items[0],
                f"unsupported operator '{head}' in a term (relulab reads +, -, *, / by a number)",
            )
        args = [self._term(a) for a in node.items[1:]]
        if not args:
            raise self.err(node, f"'{head}' needs arguments")
        if head == "+":
            out = args[0]
            for a in args[1:]:
                out = _add(out, a)
            return out
        if head == "-":
            if len(args) == 1:
                return _scale(args[0], -1.0)
            out = args[0]
            for a in args[1:]:
                out = _sub(out, a)
            return out
        if head == "*":
            var = [a for a in args if a[0]]
            if len(var) > 1:
                raise self.err(node, "unsupported: a non-linear product of variables")
            factor = 1.0
            for a in args:
                if not a[0]:
                    factor *= a[1]
            return _scale(var[0], factor) if var else ({}, factor)
        # head == "/"
        if len(args) != 2 or args[1][0]:
            raise self.err(node, "unsupported: '/' must divide a term by a number")
        if args[1][1] == 0:
            raise self.err(node, "division by zero")
        coefs, const = args[0]
        q = args[1][1]
        return {k: v / q for k, v in coefs.items()}, const / q


def _add(a: _Lin, b: _Lin) -> _Lin:
    coefs = dict(a[0])
    for k, v in b[0].items():
        coefs[k] = coefs.get(k, 0.0) + v
    return coefs, a[1] + b[1]


def _scale(a: _Lin, s: float) -> _Lin:
    return {k: v * s for k, v in a[0].items()}, a[1] * s


def _sub(a: _Lin, b: _Lin) -> _Lin:
    coefs = dict(a[0])
    for k, v in b[0].items():
        coefs[k] = coefs.get(k, 0.0) - v
    return coefs, a[1] - b[1]


# ------------------------------------------------------------------ to a Property
def _build(src: _Source, dnf: list[list[tuple]], d: int, m: int, declared: dict) -> Property:
    if not dnf:
        raise FormatError(
            f"{src.name}: the assertions can never hold (an empty disjunction): nothing to verify"
        )
    cases: list[Specification] = []
    index: dict[tuple[bytes, bytes], int] = {}
    many = len(dnf) > 1
    empty: DomainError | None = None   # the first disjunct with an empty box, when several
    for k, conj in enumerate(dnf):
        where = f" (in disjunct {k + 1} of {len(dnf)})" if many else ""
        lo = np.full(d, -np.inf)
        hi = np.full(d, np.inf)
        lo_at = [0] * d
        hi_at = [0] * d
        rows: list[np.ndarray] = []
        rhs: list[float] = []
        for atom in conj:
            if atom[0] == "in":
                _, i, upper, value, pos = atom
                if upper and value < hi[i]:
                    hi[i], hi_at[i] = value, pos
                elif not upper and value > lo[i]:
                    lo[i], lo_at[i] = value, pos
            else:
                _, ys, dv, pos = atom
                row = np.zeros(m)
                for j, c in ys.items():
                    row[j] = c
                rows.append(row)
                rhs.append(dv)
        for i in range(d):
            for bound, side in ((lo, "lower"), (hi, "upper")):
                if not np.isfinite(bound[i]):
                    raise FormatError(
                        f"{src.name}: X_{i} has no {side} bound{where} "
                        f"(declared at {src.where(declared[('X', i)])}); "
                        "every input needs a lower and an upper bound"
                    )
            if lo[i] > hi[i]:
                err = DomainError(
                    f"{src.name}: empty input box{where}: X_{i} >= {float(lo[i])!r} "
                    f"({src.where(lo_at[i])}) and X_{i} <= {float(hi[i])!r} "
                    f"({src.where(hi_at[i])})"
                )
                if not many:
                    raise err
                empty = empty or err
                break
        if many and lo.size and np.any(lo > hi):
            # one disjunct of several with an empty box is false: it adds no case (the
            # input set X_0 in [0, 0.4] or [0.6, 1] split over an "or" gave such ones)
            continue
        C = np.array(rows, dtype=np.float64).reshape(len(rows), m)
        term = OutputConstraint(C, np.array(rhs, dtype=np.float64))
        key = (lo.tobytes(), hi.tobytes())
        if key in index:
            cases[index[key]].unsafe.append(term)
        else:
            index[key] = len(cases)
            cases.append(Specification(Box(lo, hi), [term]))
    if not cases and empty is not None:
        raise empty   # every disjunct has an empty box
    return Property(cases, src.name)


def parse_vnnlib(
    text: str,
    source: str = "<string>",
    n_inputs: int | None = None,
    n_outputs: int | None = None,
) -> Property:
    """Parse VNN-LIB text into a :class:`~relulab.spec.Property` (see the module docstring).

    Example:
        >>> p = parse_vnnlib("(declare-const X_0 Real)(declare-const Y_0 Real)"
        ...                  "(assert (<= 0 X_0 1)) (assert (>= Y_0 2.5))")
        >>> p.cases[0].unsafe[0].C.tolist(), p.cases[0].unsafe[0].d.tolist()
        ([[-1.0]], [-2.5])
    """
    src = _Source(text, source)
    parser = _Parser(src)
    try:
        dnf, d, m = parser.run()
    except RecursionError:
        raise FormatError(f"{source}: formulas are nested too deeply to read") from None
    for given, found, what in ((n_inputs, d, "inputs X_i"), (n_outputs, m, "outputs Y_j")):
        if given is not None and given != found:
            raise SpecError(f"{source}: the property declares {found} {what}; expected {given}")
    return _build(src, dnf, d, m, parser.declared)


def load_vnnlib(
    path: str | os.PathLike, n_inputs: int | None = None, n_outputs: int | None = None
) -> Property:
    """Read a ``.vnnlib`` file into a :class:`~relulab.spec.Property`.

    ``n_inputs`` / ``n_outputs``, when given, must match the declared variables
    (``SpecError`` otherwise).

    Example:
        >>> prop = load_vnnlib("prop_3.vnnlib", n_inputs=5, n_outputs=5)   # doctest: +SKIP
        >>> prop.cases[0].unsafe[0].C[0].tolist()                          # doctest: +SKIP
        [1.0, -1.0, 0.0, 0.0, 0.0]

        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "prop.vnnlib")
        >>> with open(path, "w") as fh:
        ...     _ = fh.write("(declare-const X_0 Real)(declare-const Y_0 Real)"
        ...                  "(assert (<= 0 X_0 1))(assert (>= Y_0 2.5))")
        >>> prop = load_vnnlib(path, n_inputs=1, n_outputs=1)
        >>> prop.cases[0].input_box, prop.cases[0].unsafe[0].d.tolist()
        (Box(lo=[0.0], hi=[1.0]), [-2.5])
    """
    p = Path(path)
    from . import check_regular_file

    if p.exists():   # (a missing file: "cannot read" below, as before)
        check_regular_file(p)
        # the tokens, their objects and the line offsets: about 100 bytes per byte of text
        # (a 10 MB property took 863 MB past a 0.5 GB budget)
        size = p.stat().st_size
        check_bytes(100.0 * size, f"{path}: parsing its {size / 1e6:.3g} MB of text")
    try:
        text = p.read_text(encoding="utf-8-sig")  # utf-8-sig: a byte-order mark was read as a stray character
    except UnicodeDecodeError:
        raise FormatError(f"{path}: not a VNN-LIB text file (not UTF-8 text)") from None
    except OSError as e:
        raise FormatError(f"{path}: cannot read ({e.strerror or e})") from None
    return parse_vnnlib(text, str(path), n_inputs, n_outputs)


# ------------------------------------------------------------------------ writing
def _num(v: float) -> str:
    v = float(v)
    if not np.isfinite(v):
        raise FormatError(f"cannot write the non-finite number {v!r} to VNN-LIB")
    return repr(v)


def _row(c: np.ndarray, dv: float) -> str:
    """``c @ Y <= dv`` in a form that reads back to exactly ``c`` and ``dv``."""
    nz = [j for j in range(c.size) if c[j] != 0]
    if len(nz) == 1 and c[nz[0]] == 1.0:
        return f"(<= Y_{nz[0]} {_num(dv)})"
    if len(nz) == 1 and c[nz[0]] == -1.0:
        return f"(>= Y_{nz[0]} {_num(-dv)})"
    if len(nz) == 2 and dv == 0 and sorted(c[nz].tolist()) == [-1.0, 1.0]:
        i, j = (nz[0], nz[1]) if c[nz[0]] == 1.0 else (nz[1], nz[0])
        return f"(<= Y_{i} Y_{j})"
    if not nz:
        return f"(<= 0.0 {_num(dv)})"
    terms = " ".join(f"(* {_num(c[j])} Y_{j})" for j in nz)
    return f"(<= (+ {terms}) {_num(dv)})"


def _box(box: Box) -> list[str]:
    out = []
    for i, (a, b) in enumerate(zip(box.lo, box.hi, strict=True)):
        out += [f"(>= X_{i} {_num(a)})", f"(<= X_{i} {_num(b)})"]
    return out


def _terms(spec: Specification) -> list[list[str]]:
    """The output conjunctions of a case (a case with none gets an unsatisfiable row)."""
    if not spec.unsafe:
        return [["(<= 1.0 0.0)"]]
    return [[_row(t.C[r], t.d[r]) for r in range(t.C.shape[0])] for t in spec.unsafe]


def format_vnnlib(prop: Property, n_outputs: int | None = None) -> str:
    """The VNN-LIB text of a property (numbers at full precision, so it reads back exactly).

    ``n_outputs`` is needed only when no case has an output constraint to tell it.

    Example:
        >>> from relulab.domain import Box
        >>> spec = Specification(Box([0.0], [1.0]), [OutputConstraint(np.array([[1.0]]), np.array([2.0]))])
        >>> print(format_vnnlib(Property([spec])).splitlines()[-1])
        (assert (<= Y_0 2.0))
    """
    if not prop.cases:
        raise FormatError("cannot write a property with no case")
    d = prop.input_dim
    m = n_outputs
    for c in prop.cases:
        if c.input_box.dim != d:
            raise SpecError("the cases of the property have input boxes of different sizes")
        for t in c.unsafe:
            if m is None:
                m = int(t.C.shape[1])
            elif t.C.shape[1] != m:
                raise SpecError("the output constraints have different numbers of outputs")
    if m is None:
        raise SpecError("the number of outputs is unknown: give n_outputs")
    lines = [f"; {prop.source}" if prop.source else "; written by relulab", ""]
    lines += [f"(declare-const X_{i} Real)" for i in range(d)]
    lines += [""] + [f"(declare-const Y_{j} Real)" for j in range(m)] + [""]
    if len(prop.cases) == 1:
        spec = prop.cases[0]
        lines += [f"(assert {a})" for a in _box(spec.input_box)]
        terms = _terms(spec)
        if len(terms) == 1:
            lines += [f"(assert {r})" for r in terms[0]]
        else:
            lines.append("(assert (or")
            lines += ["    (and " + " ".join(t) + ")" for t in terms]
            lines.append("))")
    else:
        lines.append("(assert (or")
        for spec in prop.cases:
            box = " ".join(_box(spec.input_box))
            for t in _terms(spec):
                lines.append(f"    (and {box} " + " ".join(t) + ")")
        lines.append("))")
    return "\n".join(lines) + "\n"


def write_vnnlib(prop: Property, path: str | os.PathLike, n_outputs: int | None = None) -> None:
    """Write a property as VNN-LIB, atomically; :func:`load_vnnlib` reads it back exactly.

    Example:
        >>> import tempfile, os
        >>> from relulab.domain import Box
        >>> spec = Specification(Box([0.0], [1.0]), [OutputConstraint(np.array([[1.0, -1.0]]), np.array([0.0]))])
        >>> p = os.path.join(tempfile.mkdtemp(), "p.vnnlib"); write_vnnlib(Property([spec]), p)
        >>> load_vnnlib(p).cases[0].unsafe[0].C.tolist()
        [[1.0, -1.0]]
    """
    text = format_vnnlib(prop, n_outputs)
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
