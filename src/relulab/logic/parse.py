"""Parse MV formulas from text (the syntax :func:`relulab.logic.to_text` prints).

Syntax (Unicode or ASCII; binding loosest first):

* ``a → b`` / ``a -> b`` (right-associative), ``a ∨ b`` / ``a | b``, ``a ∧ b`` / ``a & b``,
  ``a ⊕ b`` / ``a + b``, ``a ⊙ b`` / ``a * b`` (left-associative);
* prefix: ``¬a`` / ``~a`` / ``!a``, ``δn(a)`` / ``dn(a)`` (a / n), ``r·a`` / ``r@a``
  (Riesz scalar, ``r`` in [0, 1] written ``p/q`` or as a decimal);
* atoms: ``x1``, ``x_1`` (1-based), ``0``, ``1``, brackets;
* shared sub-terms, as :func:`relulab.logic.to_text` writes large formulas: lines
  ``t1 := term`` before the formula, each name usable in later lines.

Errors raise :class:`FormulaSyntaxError` with the column (1-based) and a caret line.

Example:
    >>> from fractions import Fraction
    >>> from relulab.logic import evaluate
    >>> phi = parse("x1 + ~x1")
    >>> evaluate(phi, [Fraction(2, 7)])
    Fraction(1, 1)
    >>> str(parse("x1 -> x2 -> d3(x_1)"))
    'x1 → x2 → δ3(x1)'
    >>> str(parse("t1 := x1 + x2\\nt1 * ~t1"))
    '(x1 ⊕ x2) ⊙ ¬(x1 ⊕ x2)'
"""

from __future__ import annotations

import re
from fractions import Fraction

from ..errors import is_int_at_least
from .formula import (
    Formula,
    FormulaError,
    const,
    div,
    impl,
    join,
    meet,
    n_vars,
    neg,
    odot,
    oplus,
    scal,
    var,
)

__all__ = ["parse", "FormulaSyntaxError"]


class FormulaSyntaxError(FormulaError):
    """A formula's text does not parse; ``position`` is the 1-based column at fault."""

    def __init__(self, text: str, position: int, what: str) -> None:
        self.text = text
        self.position = position
        self.what = what
        line = text.replace("\n", " ")
        #: the text and a caret under the offending column (for display)
        self.caret = f"{line}\n{' ' * (position - 1)}^"
        super().__init__(f"formula: column {position}: {what} (in {line!r})")


_TOKEN = re.compile(
    r"\s*(?:"
    r"(?P<var>[xX]_?(?P<idx>\d+))"
    r"|(?P<name>t\d+)"
    r"|(?P<define>:=)"
    r"|(?P<div>(?:δ|d|delta)_?(?P<n>\d+)(?=\s*\())"
    r"|(?P<num>\d+(?:/\d+|\.\d+)?)"
    r"|(?P<op>->|→|⊕|⊙|∨|∧|¬|·|[-+*|&~!@()])"
    r")"
)

_BINARY = {
    "→": ("impl", 1), "->": ("impl", 1),
    "∨": ("join", 2), "|": ("join", 2),
    "∧": ("meet", 3), "&": ("meet", 3),
    "⊕": ("oplus", 4), "+": ("oplus", 4),
    "⊙": ("odot", 5), "*": ("odot", 5),
}
_BUILD = {"impl": impl, "join": join, "meet": meet, "oplus": oplus, "odot": odot}


def _tokenize(text: str) -> list[tuple[str, str, int]]:
    """(kind, value, column) triples; kind is var / div / num / op / end."""
    out: list[tuple[str, str, int]] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            out.append(("end", "", pos + 1))
            return out
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise FormulaSyntaxError(text, pos + 1, f"unexpected character {text[pos]!r}")
        if m.group("var"):
            out.append(("var", m.group("idx"), m.start("var") + 1))
        elif m.group("name"):
            out.append(("name", m.group("name"), m.start("name") + 1))
        elif m.group("define"):
            out.append(("define", ":=", m.start("define") + 1))
        elif m.group("div"):
            out.append(("div", m.group("n"), m.start("div") + 1))
        elif m.group("num"):
            out.append(("num", m.group("num"), m.start("num") + 1))
        else:
            if m.group("op") == "-":
                raise FormulaSyntaxError(text, m.start("op") + 1, "'-' is not an MV operation (did you mean '->' or '~'?)")
            out.append(("op", m.group("op"), m.start("op") + 1))
        pos = m.end()


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0
        self.names: dict[str, Formula] = {}

    def definitions(self) -> None:
        """The ``tN := term`` lines before the formula."""
        while self.peek()[0] == "name" and self.toks[self.i + 1][0] == "define":
            tok = self.take()
            self.take()
            if tok[1] in self.names:
                raise self.fail(tok, f"{tok[1]} is defined twice")
            self.names[tok[1]] = self.expr()

    def peek(self) -> tuple[str, str, int]:
        return self.toks[self.i]

    def take(self) -> tuple[str, str, int]:
        t = self.toks[self.i]
        self.i += 1
        return t

    def fail(self, tok: tuple[str, str, int], what: str) -> FormulaSyntaxError:
        return FormulaSyntaxError(self.text, tok[2], what)

    def expr(self, min_level: int = 1) -> Formula:
        left = self.unary()
        while True:
            kind, val, _ = self.peek()
            if kind != "op" or val not in _BINARY:
                return left
            op, lvl = _BINARY[val]
            if lvl < min_level:
                return left
            self.take()
            # impl is right-associative: its right side may hold another impl.
            right = self.expr(lvl if op == "impl" else lvl + 1)
            left = _BUILD[op](left, right)

    def unary(self) -> Formula:
        tok = self.take()
        kind, val, col = tok
        if kind == "op" and val in ("¬", "~", "!"):
            return neg(self.unary())
        if kind == "op" and val == "(":
            inner = self.expr()
            close = self.take()
            if close[:2] != ("op", ")"):
                raise self.fail(close, f"expected ')' to close the '(' at column {col}")
            return inner
        if kind == "var":
            idx = int(val)
            if idx < 1:
                raise self.fail(tok, f"variable x{val}: indices start at 1")
            return var(idx)
        if kind == "name":
            if val not in self.names:
                raise self.fail(tok, f"{val} is not defined (write '{val} := ...' before its use)")
            return self.names[val]
        if kind == "define":
            raise self.fail(tok, "':=' must follow a name tN at the start of a line")
        if kind == "div":
            n = int(val)
            if n < 1:
                raise self.fail(tok, f"δ{val}: n must be at least 1")
            opener = self.take()
            if opener[:2] != ("op", "("):
                raise self.fail(opener, "expected '(' after δn")
            inner = self.expr()
            close = self.take()
            if close[:2] != ("op", ")"):
                raise self.fail(close, f"expected ')' to close δ{n}(")
            return div(n, inner)
        if kind == "num":
            if re.fullmatch(r"\d+/0+", val):
                # Fraction("1/0") raises ZeroDivisionError: report it as a syntax error.
                raise self.fail(tok, f"the number {val} has a zero denominator")
            r = Fraction(val)
            nxt = self.peek()
            if nxt[0] == "op" and nxt[1] in ("·", "@"):
                self.take()
                if not 0 <= r <= 1:
                    raise self.fail(tok, f"the scalar {val} is outside [0, 1]")
                return scal(r, self.unary())
            if r not in (0, 1):
                raise self.fail(tok, f"the constant {val} is not 0 or 1 (write δn(1) or r·1)")
            return const(r)
        if kind == "end":
            raise self.fail(tok, "unexpected end of formula")
        raise self.fail(tok, f"unexpected {_shown(tok)!r}")


def _shown(tok: tuple) -> str:
    """A token as written (a variable or δ token keeps only its index: "x1 x2" said '2')."""
    if tok[0] == "var":
        return f"x{tok[1]}"
    return f"δ{tok[1]}" if tok[0] == "div" else str(tok[1])


def parse(text: str, n_vars: int | None = None) -> Formula:
    """Read a formula from ``text``.

    Args:
        text: the formula (see the module docstring for the syntax).
        n_vars: when given, every variable index must be at most ``n_vars``.

    Raises:
        FormulaSyntaxError: with the column of the first offending token.
        FormulaError: a variable index beyond ``n_vars``.

    Example:
        >>> phi = parse("x1 -> x2")
        >>> str(phi), phi is impl(var(1), var(2))
        ('x1 → x2', True)
    """
    if not isinstance(text, str):
        raise FormulaError(f"parse: expected a string, got {type(text).__name__}")
    if n_vars is not None and not is_int_at_least(n_vars, 1):
        raise FormulaError(f"parse: the number of inputs must be an integer >= 1, got {n_vars!r}")
    p = _Parser(text)
    try:
        p.definitions()
        phi = p.expr()
    except RecursionError:  # the descent is recursive: one level per nested operator
        col = p.toks[min(p.i, len(p.toks) - 1)][2]
        raise FormulaError(f"formula: nested too deeply to read (past column {col} of "
                           f"{len(text)}); write it with fewer nested operators") from None
    tok = p.peek()
    if tok[0] != "end":
        raise p.fail(tok, f"unexpected {_shown(tok)!r} after a complete formula")
    if n_vars is not None:
        _check_vars(phi, n_vars, text)
    return phi


def _check_vars(phi: Formula, n: int, text: str) -> None:
    top = n_vars(phi)
    if top > n:
        m = re.search(rf"[xX]_?0*{top}(?!\d)", text)
        where = f" (column {m.start() + 1})" if m else ""
        raise FormulaError(f"formula: variable x{top}{where} is beyond the {n} input(s) x1..x{n}")
