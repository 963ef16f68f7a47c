"""The verification-hardness gadget: a 3-CNF formula as a one-hidden-layer network.

For a clause with literals ``y1, y2, y3`` (``y = x_i`` or ``1 - x_i``) the gadget is::

    h(y) = ( relu(2 y1 - 1) + relu(2 y2 - 1) + relu(2 y3 - 1) - relu(y1 + y2 + y3 - 1) ) / 3

four ReLUs of fan-in at most three.  On {0, 1}^3 with j literals true, h = (j - (j - 1))/3
= 1/3 when j >= 1 and 0 when j = 0.  Everywhere on [0, 1]^3, h <= 1/3 (drop the
relu on the last term: the rest is ``1 + sum_{y_i > 1/2} (y_i - 1) - sum_{others} y_i``)
and h <= 0 when every ``y_i <= 1/2``.  Hence rounding every coordinate at 1/2
(``x_i >= 1/2 -> 1``) never decreases ``g = sum_C h_C``: a clause whose rounded
literals are all false had all ``y_i <= 1/2``.  So the maximum of g over [0, 1]^n is
attained at a Boolean point and equals ``(m - unsat) / 3``, unsat being the least
number of unsatisfied clauses.

Example:
    >>> net = sat_gadget([(1, 2, 3), (-1, -2, -3)], 3)
    >>> net.widths, net([[1, 0, 0], [0, 0, 0]]).ravel().tolist()
    ((8,), [Fraction(2, 3), Fraction(1, 3)])
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..limits import check_bytes
from ..network import Network
from ._builder import Builder, check_size, esum
from ._exact import ExactEvaluator
from .maxmin import ConstructionError

__all__ = ["sat_gadget", "random_3cnf", "min_unsat", "round_half", "GadgetCheck",
           "check_gadget", "parse_dimacs"]

Clause = Sequence[int]


def _check_clauses(clauses: Sequence[Clause], n: int) -> None:
    if not clauses:
        raise ConstructionError("sat gadget: the formula has no clauses")
    for c, cl in enumerate(clauses, start=1):
        if not 1 <= len(cl) <= 3:
            raise ConstructionError(f"sat gadget: clause {c} has {len(cl)} literals (1 to 3 allowed)")
        for lit in cl:
            if not isinstance(lit, (int, np.integer)) or isinstance(lit, bool) or lit == 0 or abs(int(lit)) > n:
                raise ConstructionError(f"sat gadget: clause {c} has literal {lit}; use +-1..+-{n}")


def sat_gadget(clauses: Sequence[Clause], n: int) -> Network:
    """The network ``g`` on [0, 1]^n for a CNF with clauses of at most 3 literals
    (DIMACS-style: ``+i`` is x_i, ``-i`` its negation).  See the module docstring.

    Size: one hidden layer of 4 ReLUs per 3-literal clause (``k + 1`` for a clause of
    k literals), each reading at most 3 inputs; one output.
    ``max_{[0,1]^n} g = (m - unsat) / 3``.

    Example:
        >>> sat_gadget([(1, -2, 3)], 3).n_neurons
        4
    """
    check_size(f"sat_gadget ({len(clauses)} clauses)", neurons=4 * len(clauses))
    # the dense exact layers (hidden 4m x n, output 1 x 4m; 16 bytes an entry, see
    # Builder.close) before the build, not after minutes of it
    check_bytes(16.0 * 4 * len(clauses) * (n + 2), f"the exact sat gadget ({len(clauses)} clauses, {n} variables)")
    _check_clauses(clauses, n)
    b = Builder(n)
    x = b.inputs()
    parts = []
    for cl in clauses:
        ys = [x[lit - 1] if lit > 0 else 1 - x[-lit - 1] for lit in cl]
        terms = [b.relu(y * 2 - 1) for y in ys]
        total = ys[0]
        for y in ys[1:]:
            total = total + y
        h = terms[0]
        for t in terms[1:]:
            h = h + t
        h = h - b.relu(total - 1)
        parts.append(h / 3)
    return b.build([esum(parts, 1)])


def random_3cnf(n: int, m: int, rng: np.random.Generator | int | None = None) -> list[tuple[int, int, int]]:
    """m random clauses of 3 distinct variables out of n, each negated with probability 1/2.

    Example:
        >>> len(random_3cnf(5, 7, 0))
        7
    """
    if n < 3:
        raise ConstructionError(f"random 3-CNF needs n >= 3 variables, got {n}")
    check_size(f"random_3cnf({n}, {m}) (its sat gadget)", neurons=4 * m)  # before generating the clauses
    rng = np.random.default_rng(rng)
    out = []
    for _ in range(m):
        vs = rng.choice(n, size=3, replace=False) + 1
        signs = rng.choice([-1, 1], size=3)
        out.append(tuple(int(v * s) for v, s in zip(vs, signs, strict=True)))
    return out


def _all_assignments(n: int) -> np.ndarray:
    return np.array(list(itertools.product((0, 1), repeat=n)), dtype=np.int64).reshape(-1, n)


def min_unsat(clauses: Sequence[Clause], n: int) -> tuple[int, tuple[int, ...]]:
    """Brute force: the least number of unsatisfied clauses and an assignment reaching it.

    Example:
        >>> min_unsat([(1,), (-1,)], 1)                   # x1 and not x1: one clause must fail
        (1, (0,))
        >>> min_unsat([(1, 2), (-1, 2), (-2, 1)], 2)[0]
        0
    """
    _check_clauses(clauses, n)
    X = _all_assignments(n)
    unsat = np.zeros(len(X), dtype=np.int64)
    for cl in clauses:
        sat = np.zeros(len(X), dtype=bool)
        for lit in cl:
            col = X[:, abs(lit) - 1]
            sat |= (col == 1) if lit > 0 else (col == 0)
        unsat += ~sat
    i = int(np.argmin(unsat))
    return int(unsat[i]), tuple(int(v) for v in X[i])


def round_half(x: Sequence[Fraction]) -> list[Fraction]:
    """Coordinatewise rounding at 1/2 (``x_i >= 1/2 -> 1``, else 0).

    Example:
        >>> round_half([Fraction(1, 2), Fraction(1, 3), Fraction(9, 10)])
        [Fraction(1, 1), Fraction(0, 1), Fraction(1, 1)]
    """
    return [Fraction(1) if v >= Fraction(1, 2) else Fraction(0) for v in x]


@dataclass(frozen=True)
class GadgetCheck:
    """Exact checks of a gadget against brute force.

    Example:
        >>> chk = check_gadget([(1, 2, 3), (-1, -2, -3)], 3, n_samples=10)
        >>> chk.unsat, str(chk.max_boolean), str(chk.expected), chk.rounding_ok
        (0, '2/3', '2/3', True)
    """

    n: int
    m: int
    unsat: int
    max_boolean: Fraction  # the best value of g over {0,1}^n (exact)
    expected: Fraction  # (m - unsat) / 3
    rounding_ok: bool  # g(round(x)) >= g(x) on every sampled point
    n_samples: int

    @property
    def ok(self) -> bool:
        return self.max_boolean == self.expected and self.rounding_ok

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["max_boolean"] = str(self.max_boolean)
        d["expected"] = str(self.expected)
        d["ok"] = self.ok
        return d


def check_gadget(clauses: Sequence[Clause], n: int, n_samples: int = 200,
                 rng: np.random.Generator | int | None = 0) -> GadgetCheck:
    """Build the gadget and check, in exact arithmetic, that its maximum over {0,1}^n is
    ``(m - unsat)/3`` (brute force) and that rounding at 1/2 never decreases it on
    ``n_samples`` random rational points (denominators up to 16, plus exact halves).

    Example:
        >>> check_gadget(random_3cnf(6, 10, 1), 6, n_samples=20).ok
        True
    """
    net = sat_gadget(clauses, n)
    ev = ExactEvaluator(net)
    unsat, _ = min_unsat(clauses, n)
    best = max(ev(_all_assignments(n).astype(object))[:, 0])
    rng = np.random.default_rng(rng)
    num = rng.integers(0, 17, size=(n_samples, n))
    pts = np.array([[Fraction(int(v), 16) for v in row] for row in num], dtype=object)
    rounded = np.array([round_half(row) for row in pts], dtype=object)
    ok = bool(np.all(ev(rounded)[:, 0] >= ev(pts)[:, 0])) if n_samples else True
    return GadgetCheck(n, len(clauses), unsat, Fraction(best), Fraction(len(clauses) - unsat, 3),
                       ok, n_samples)


def parse_dimacs(text: str, source: str = "<string>") -> tuple[list[tuple[int, ...]], int]:
    """Read a DIMACS CNF (``p cnf n m`` then clauses ending in 0); returns (clauses, n).

    Example:
        >>> parse_dimacs("c two clauses\\np cnf 3 2\\n1 -2 0\\n2 3 0\\n")
        ([(1, -2), (2, 3)], 3)
    """
    from ..errors import FormatError

    n = None
    m_declared = header_line = 0
    clauses: list[tuple[int, ...]] = []
    cur: list[int] = []
    for ln, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("c") or line.startswith("%"):
            continue
        if line.startswith("p"):
            parts = line.split()
            if len(parts) != 4 or parts[1] != "cnf":
                raise FormatError(f"{source}:{ln}: expected 'p cnf NVARS NCLAUSES'")
            try:
                n = int(parts[2])
            except ValueError:
                raise FormatError(f"{source}:{ln}: bad variable count {parts[2]!r}") from None
            try:
                m_declared, header_line = int(parts[3]), ln
            except ValueError:
                raise FormatError(f"{source}:{ln}: bad clause count {parts[3]!r}") from None
            continue
        try:
            lits = [int(t) for t in line.split()]
        except ValueError:
            raise FormatError(f"{source}:{ln}: clause literals must be integers") from None
        for lit in lits:
            if lit == 0:
                if cur:
                    clauses.append(tuple(cur))
                cur = []
            else:
                cur.append(lit)
    if cur:
        clauses.append(tuple(cur))
    if n is None:
        raise FormatError(f"{source}: no 'p cnf' header")
    if len(clauses) != m_declared:  # a truncated or mis-headed file passed silently
        raise FormatError(f"{source}:{header_line}: the header declares {m_declared} clauses, "
                          f"the file has {len(clauses)}")
    for c in clauses:
        if len(c) > 3 or any(abs(v) > n for v in c):
            raise FormatError(f"{source}: clause {c} has more than 3 literals or a variable > {n}")
    return clauses, n
