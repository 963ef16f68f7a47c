"""A rule: a convex set of inputs ``{x in domain : A x <= b}`` that gets one decision,
and its rendering as readable inequalities with feature names.

Example:
    >>> import numpy as np
    >>> r = Rule(np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, -2.0]]), np.array([12.3, 0.0, -80.2]),
    ...          "brake", ("speed", "distance"))
    >>> r.text()
    '0 <= speed <= 12.3 and distance >= 40.1 -> brake'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..results import Result
from ..tolerance import FEAS_TOL, ROUNDOFF, or_default

__all__ = ["Rule", "render_conditions", "rules_markdown", "rules_table"]

# A coefficient this much smaller than a row's largest one is printed as absent: the
# rows come from unit-normalised float data, and 1e-12 relative is rounding noise.
AXIS_REL_TOL = 1e-12  # tol: relative rounding of unit-normalised rows


def _num(v: float, digits: int) -> str:
    """``v`` to ``digits`` significant digits, and at least to two places past its units
    (4 digits printed 10000.7 as "1e+04")."""
    if np.isfinite(v) and abs(v) >= 1:
        digits = min(17, max(digits, int(np.floor(np.log10(abs(v)))) + 3))
    s = f"{v:.{digits}g}"
    return "0" if s in ("-0", "0") else s


def _pair(lo: float, hi: float, digits: int) -> tuple[str, str]:
    """Both ends of an interval, with digits added until they read apart (an interval
    [9999.9, 10000.7] printed as "1e+04 <= x0 <= 1e+04")."""
    a, b = _num(lo, digits), _num(hi, digits)
    while a == b and lo != hi and digits < 17:
        digits += 1
        a, b = _num(lo, digits), _num(hi, digits)
    return a, b


def render_conditions(A: np.ndarray, b: np.ndarray, names: tuple[str, ...], digits: int = 4,
                      md: bool = False) -> list[str]:
    """One readable condition per feature bound (lower and upper merged) and per general
    half-space, in feature order.

    Example:
        >>> render_conditions(np.array([[1.0, 1.0]]), np.array([2.0]), ("a", "b"))
        ['a + b <= 2']
    """
    A = np.atleast_2d(np.asarray(A, float))
    b = np.asarray(b, float).reshape(-1)
    le = "≤" if md else "<="
    ge = "≥" if md else ">="
    lo: dict[int, float] = {}
    hi: dict[int, float] = {}
    general = []
    for a, c in zip(A, b, strict=True):
        big = np.max(np.abs(a)) if a.size else 0.0
        if big == 0:
            continue
        nz = np.flatnonzero(np.abs(a) > AXIS_REL_TOL * big)
        if nz.size == 1:
            i = int(nz[0])
            v = c / a[i]
            if a[i] > 0:
                hi[i] = min(hi.get(i, np.inf), v)
            else:
                lo[i] = max(lo.get(i, -np.inf), v)
        else:
            general.append((a / big, c / big, nz))
    out = []
    for i in sorted(set(lo) | set(hi)):
        nm = f"`{names[i]}`" if md else names[i]
        if i in lo and i in hi:
            a, c = _pair(lo[i], hi[i], digits)
            out.append(f"{a} {le} {nm} {le} {c}")
        elif i in hi:
            out.append(f"{nm} {le} {_num(hi[i], digits)}")
        else:
            out.append(f"{nm} {ge} {_num(lo[i], digits)}")
    for a, c, nz in general:
        rel = le
        if a[nz[0]] < 0:  # read "x + y >= c" rather than "-x - y <= -c"
            a, c, rel = -a, -c, ge
        terms = []
        for k, i in enumerate(nz):
            coef = a[i]
            nm = f"`{names[i]}`" if md else names[i]
            mag = "" if abs(abs(coef) - 1) < ROUNDOFF else _num(abs(coef), digits) + "*"
            sign = ("-" if coef < 0 else "") if k == 0 else (" - " if coef < 0 else " + ")
            terms.append(f"{sign}{mag}{nm}")
        out.append("".join(terms) + f" {rel} {_num(c, digits)}")
    return out


@dataclass(frozen=True, eq=False)
class Rule(Result):
    """``{x in domain : A x <= b} -> decision``.

    Example:
        >>> r = Rule(np.array([[1.0, 0.0]]), np.array([2.0]), "brake", ("speed", "gap"))
        >>> r.text(), bool(r.contains([1.0, 5.0])), bool(r.contains([3.0, 0.0]))
        ('speed <= 2 -> brake', True, False)

    Fields:
        A, b: the rule's own constraints (the domain's are implicit).
        decision: the decision's label.
        features: feature names.
        kind: "region" (a linear region cut by the decision), "interval" (axis-aligned
            bounds), "halfspace" (general) or "merged" (from :func:`decision_rules`).
        certified: the decision was proved on the whole rule (MILP or by construction).
        max_violation: the proven upper bound of ``max_i (C_i f(x) - d_i)`` over the rule
            (sound: widened by what the solver's tolerances can hide; on a certified rule
            at most ``RULE_TOL`` relative plus that widening), or None when not checked.
        volume_fraction: share of the domain's volume (when computed).
        witnesses: per constraint, an input that satisfies every other constraint but
            does not get the decision (forward-pass checked): proof the constraint is
            needed (a minimal rule has one for each).
    """

    A: np.ndarray
    b: np.ndarray
    decision: str
    features: tuple[str, ...]
    kind: str = "halfspace"
    certified: bool = False
    max_violation: float | None = None
    volume_fraction: float | None = None
    witnesses: tuple = field(default=())
    vertices: np.ndarray | None = None

    @property
    def n_constraints(self) -> int:
        return int(self.A.shape[0])

    def certificate_text(self) -> str:
        """How the rule was proved, in words: "certified" when the proven bound shows no
        input of the rule decided otherwise; "certified up to ties of e" when the proof
        allowed a tie of at most ``RULE_TOL`` of the outputs' scale and its bound shows
        another decision may win by up to e there (a thin strip of width 1e-12 read as
        one decision); "NOT certified" otherwise.

        Example:
            >>> r = Rule(np.zeros((0, 1)), np.zeros(0), "pos", ("x",), certified=True, max_violation=2e-13)
            >>> r.certificate_text()
            'certified up to ties of 2e-13'
        """
        if not self.certified:
            return "NOT certified"
        if self.max_violation is not None and self.max_violation > 0:
            return f"certified up to ties of {self.max_violation:.2g}"
        return "certified"

    @property
    def axis_aligned(self) -> bool:
        big = np.max(np.abs(self.A), axis=1, keepdims=True) if self.A.size else np.ones((0, 1))
        return bool(np.all(np.sum(np.abs(self.A) > AXIS_REL_TOL * big, axis=1) <= 1))

    @property
    def minimal(self) -> bool:
        """Every constraint has a witness that it cannot be dropped."""
        return len(self.witnesses) == self.n_constraints and all(w is not None for w in self.witnesses)

    def contains(self, X: Any, tol: float | None = None) -> np.ndarray | bool:
        """Whether points satisfy the rule's constraints (the domain is not checked);
        ``tol`` (default FEAS_TOL) relaxes every row."""
        tol = or_default(tol, FEAS_TOL)
        X = np.asarray(X, dtype=np.float64)
        single = X.ndim == 1
        ok = np.all(np.atleast_2d(X) @ self.A.T <= self.b + tol, axis=1)
        return bool(ok[0]) if single else ok

    def conditions(self, digits: int = 4, md: bool = False) -> list[str]:
        return render_conditions(self.A, self.b, self.features, digits, md)

    def text(self, digits: int = 4) -> str:
        """``"speed <= 12.3 and distance >= 40.1 -> brake"`` (numbers rounded for display)."""
        cond = self.conditions(digits)
        return (" and ".join(cond) if cond else "always (anywhere in the domain)") + f" -> {self.decision}"

    def markdown(self, digits: int = 4) -> str:
        cond = self.conditions(digits, md=True)
        body = " **and** ".join(cond) if cond else "*always (anywhere in the domain)*"
        return f"{body} → **{self.decision}**"

    def to_dict(self) -> dict:
        d = super().to_dict()
        d["text"] = self.text()
        d["axis_aligned"] = self.axis_aligned
        d["minimal"] = self.minimal
        return d


def rules_markdown(rules: list[Rule], title: str = "Rules", digits: int = 4) -> str:
    """A Markdown table of rules (condition, decision, volume share, certified).

    Example:
        >>> r = Rule(np.array([[1.0, 0.0]]), np.array([2.0]), "brake", ("speed", "gap"))
        >>> print(rules_markdown([r]).splitlines()[-1])
        | 0 | `speed` ≤ 2 | brake |  | - |
    """
    lines = [f"### {title}", "", "| # | if | then | share of domain | MILP-checked |",
             "|---|---|---|---|---|"]
    for i, r in enumerate(rules):
        cond = " and ".join(r.conditions(digits, md=True)) or "always"
        vf = "" if r.volume_fraction is None else f"{100 * r.volume_fraction:.2f}%"
        chk = _checked(r, "yes", "no")
        lines.append(f"| {i} | {cond} | {r.decision} | {vf} | {chk} |")
    return "\n".join(lines) + "\n"


def rules_table(rules: list[Rule], title: str = "rules", digits: int = 4, limit: int | None = 40):
    """A rich Table of rules (the first ``limit``).

    Example:
        >>> r = Rule(np.array([[1.0, 0.0]]), np.array([2.0]), "brake", ("speed", "gap"))
        >>> t = rules_table([r, r], limit=1)
        >>> t.title, t.row_count
        ('rules', 1)
    """
    from rich.table import Table

    t = Table(title=title)
    for col, j in (("#", "right"), ("if", "left"), ("then", "left"), ("share", "right"),
                   ("MILP-checked", "center")):
        t.add_column(col, justify=j)
    for i, r in enumerate(rules[:limit] if limit else rules):
        vf = "" if r.volume_fraction is None else f"{100 * r.volume_fraction:.2f}%"
        t.add_row(str(i), " and ".join(r.conditions(digits)) or "always", r.decision, vf,
                  _checked(r, "[green]yes[/green]", "[red]no[/red]"))
    if limit and len(rules) > limit:
        t.caption = f"... and {len(rules) - limit} more"
    return t


def _checked(r: Rule, yes: str, no: str) -> str:
    """The MILP-checked column: yes (with the ties the proof allowed, if any), no, or -."""
    if r.certified:
        tie = r.max_violation is not None and r.max_violation > 0
        return f"{yes} (ties <= {r.max_violation:.1g})" if tie else yes
    return "-" if r.max_violation is None else no
