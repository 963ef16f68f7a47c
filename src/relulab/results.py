"""Result records that serialise themselves, and the one JSON conversion of relulab.

Every algorithm returns a small frozen dataclass; ``--json`` prints its ``to_dict()``.
:class:`Result` derives ``to_dict()`` from the dataclass fields (private fields, whose
names start with ``_``, are left out) with every value made JSON-ready by
:func:`to_jsonable`, so a result type only writes ``to_dict`` by hand when it adds
derived quantities.  This module sits below every topic package and the CLI: no
algorithm module needs to import :mod:`relulab.cli` to serialise.

Example:
    >>> from dataclasses import dataclass
    >>> import numpy as np
    >>> @dataclass(frozen=True)
    ... class Answer(Result):
    ...     status: str
    ...     x: np.ndarray
    >>> Answer("holds", np.array([0.5, 1.0])).to_dict()
    {'status': 'holds', 'x': [0.5, 1.0]}
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from .errors import RelulabError

__all__ = ["Result", "to_jsonable", "read_json_lines", "huge_text"]


def to_jsonable(obj: Any) -> Any:
    """Turn numpy arrays and scalars, Fractions, tuples and results into JSON values.

    Fractions become ``"p/q"`` strings (integers stay integers) so nothing exact is
    rounded; non-finite floats become the strings ``"inf"``, ``"-inf"``, ``"nan"``.

    Example:
        >>> from fractions import Fraction
        >>> to_jsonable({"a": np.arange(2), "b": Fraction(1, 3), "c": float("inf")})
        {'a': [0, 1], 'b': '1/3', 'c': 'inf'}
    """
    if hasattr(obj, "to_dict") and not isinstance(obj, type):
        return to_jsonable(obj.to_dict())
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, Fraction):
        if _too_long(obj.numerator) or _too_long(obj.denominator):
            return huge_text(obj)
        return str(obj) if obj.denominator != 1 else obj.numerator
    if isinstance(obj, int) and not isinstance(obj, bool) and _too_long(obj):
        return huge_text(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        obj = float(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    return obj


# integers past this many bits are written by their size: Python refuses to turn one of
# more than 4300 digits (about 14,284 bits) into text (a report of 2^14300 pieces failed
# after its file was saved); 4000 bits, before, rounded numbers Python still prints
HUGE_BITS = 14_000
BITS_PER_DIGIT = 3.3219280948873626   # log2(10)


def _too_long(n: int) -> bool:
    digits = sys.get_int_max_str_digits()   # 0: no limit (then HUGE_BITS alone)
    limit = HUGE_BITS if digits == 0 else min(HUGE_BITS, int(digits * BITS_PER_DIGIT) - 64)
    return abs(n).bit_length() > limit


def huge_text(v: int | Fraction) -> str:
    """A number too long to print exactly, as its leading digits and decimal exponent.

    Example:
        >>> huge_text(2**20000)
        '~3.9803e+6020'
        >>> huge_text(Fraction(-1, 3 * 10**5000))
        '~-3.3333e-5001'
    """
    q = Fraction(v)
    if q == 0:
        return "0"
    lg = math.log10(abs(q.numerator)) - math.log10(q.denominator)
    e = math.floor(lg)
    m = 10 ** (lg - e)
    if m >= 9.99995:   # (rounded up to 10.0000)
        m, e = m / 10, e + 1
    return f"~{'-' if q < 0 else ''}{m:.4f}e{'+' if e >= 0 else '-'}{abs(e)}"


class Result:
    """Mixin for frozen result dataclasses: ``to_dict()`` from the public fields.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass(frozen=True)
        ... class Bracket(Result):
        ...     lower: float
        ...     upper: float
        ...     _cache: object = None
        >>> Bracket(1.0, 2.0).to_dict()
        {'lower': 1.0, 'upper': 2.0}
    """

    def to_dict(self) -> dict[str, Any]:
        """The public fields as JSON-ready values (see :func:`to_jsonable`)."""
        return {
            f.name: to_jsonable(getattr(self, f.name))
            for f in dataclasses.fields(self)  # type: ignore[arg-type]
            if not f.name.startswith("_")
        }


def read_json_lines(path: str | os.PathLike, what: str) -> list[Any]:
    """The rows of a JSON-lines file that relulab appends to as work finishes (a sweep's
    runs, ``verify-batch --results``).  A torn last line (the writer stopped mid-line, so
    no newline ends it) is cut off the file, so that the next append starts a line of its
    own and the unfinished item is done again; a whole last row without its newline gets
    one; any other unreadable line is an error naming it.  A missing file has no rows.

    Example:
        >>> import os, tempfile
        >>> p = os.path.join(tempfile.mkdtemp(), "rows.jsonl")
        >>> _ = open(p, "w").write('{"a": 1}\\n{"a": 2}\\n{"a": ')
        >>> read_json_lines(p, "a results file")
        [{'a': 1}, {'a': 2}]
        >>> open(p).read()
        '{"a": 1}\\n{"a": 2}\\n'
    """
    p = Path(path)
    if not p.is_file():
        return []
    lines = p.read_bytes().splitlines(keepends=True)
    rows = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError:  # not JSON, or not UTF-8
            # a torn row: the last line, unended, of a file of rows (or a row begun on
            # the first line); a user's text file named by mistake is not cut
            torn = i == len(lines) - 1 and not line.endswith((b"\n", b"\r"))
            if torn and (rows or line.lstrip().startswith((b"{", b"["))):
                with open(p, "r+b") as fh:
                    fh.truncate(sum(len(x) for x in lines[:i]))
                break
            raise RelulabError(f"{p}: line {i + 1} is not a JSON row of {what}") from None
    else:
        if lines and lines[-1].strip() and not lines[-1].endswith((b"\n", b"\r")):
            # a whole last row whose newline was never written: end it, or the next append
            # would join two rows on one line
            with open(p, "ab") as fh:
                fh.write(b"\n")
    return rows
