"""Feature names and the user's restrictions on features (immutable ones, bounds).

Example:
    >>> names = feature_names(None, 3)
    >>> names, feature_index("x2", names)
    (('x0', 'x1', 'x2'), 2)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .decision import ExplainError

__all__ = ["feature_names", "feature_index", "mutable_mask", "feature_bounds", "read_names"]


def feature_names(names: Any, d: int) -> tuple[str, ...]:
    """``d`` feature names: the given ones (checked) or ``x0 .. x{d-1}``.

    Example:
        >>> feature_names(["speed", "gap"], 2)
        ('speed', 'gap')
    """
    if names is None:
        return tuple(f"x{i}" for i in range(d))
    names = tuple(str(n).strip() for n in names)
    if len(names) != d:
        raise ExplainError(f"features: {len(names)} names given; the network takes {d} inputs")
    if any(not n for n in names):
        raise ExplainError("features: a feature name is empty")
    if len(set(names)) != d:
        dup = next(n for n in names if names.count(n) > 1)
        raise ExplainError(f"features: the name {dup!r} appears twice")
    return names


def feature_index(f: Any, names: tuple[str, ...]) -> int:
    """Index of a feature given by name or index (one clear error when unknown).

    Example:
        >>> feature_index(1, ("a", "b"))
        1
    """
    if isinstance(f, (int, np.integer)) and not isinstance(f, bool):
        if not 0 <= int(f) < len(names):
            raise ExplainError(f"feature index {f} out of range (the network takes {len(names)} inputs)")
        return int(f)
    if isinstance(f, str):
        if f in names:
            return names.index(f)
        if f.isdigit() and int(f) < len(names):
            return int(f)
        raise ExplainError(f"unknown feature name {f!r}; the features are {', '.join(names)}")
    raise ExplainError(f"a feature must be a name or an index, got {f!r}")


def mutable_mask(mutable: Any, names: tuple[str, ...]) -> np.ndarray:
    """Boolean mask of the features a counterfactual may change (None: all).

    Example:
        >>> mutable_mask(["b"], ("a", "b")).tolist()
        [False, True]
    """
    d = len(names)
    if mutable is None:
        return np.ones(d, dtype=bool)
    if isinstance(mutable, (str, int, np.integer)):
        mutable = [mutable]
    arr = np.asarray(list(mutable))
    if arr.dtype == bool and arr.shape == (d,):
        return arr.copy()
    mask = np.zeros(d, dtype=bool)
    for f in mutable:
        mask[feature_index(f, names)] = True
    return mask


def feature_bounds(bounds: Any, names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds per feature (``-inf``/``inf`` where none).

    ``bounds`` is None, a dict ``{feature: (lo, hi)}`` (None for an open side), or an
    array of shape (d, 2).

    Example:
        >>> lo, hi = feature_bounds({"b": (0, None)}, ("a", "b"))
        >>> lo.tolist(), hi.tolist()
        ([-inf, 0.0], [inf, inf])
    """
    d = len(names)
    lo, hi = np.full(d, -np.inf), np.full(d, np.inf)
    if bounds is None:
        return lo, hi
    if isinstance(bounds, dict):
        items = list(bounds.items())
    else:
        arr = np.asarray(bounds, dtype=object)
        if arr.shape != (d, 2):
            raise ExplainError(f"bounds: give a dict {{feature: (lo, hi)}} or a ({d}, 2) array, "
                               f"got shape {arr.shape}")
        items = list(enumerate(arr.tolist()))
    for f, pair in items:
        i = feature_index(f, names)
        try:
            a, b = pair
        except (TypeError, ValueError):
            raise ExplainError(f"bounds of {names[i]!r}: give a pair (lo, hi), got {pair!r}") from None
        try:
            a = -np.inf if a is None else float(a)
            b = np.inf if b is None else float(b)
        except (TypeError, ValueError):
            raise ExplainError(f"bounds of {names[i]!r}: lo and hi must be numbers or None, got {pair!r}") from None
        if np.isnan(a) or np.isnan(b):
            raise ExplainError(f"bounds of {names[i]!r} are NaN")
        if a > b:
            raise ExplainError(f"bounds of {names[i]!r}: lower {a} > upper {b}")
        lo[i], hi[i] = max(lo[i], a), min(hi[i], b)
    return lo, hi


def read_names(path: str) -> tuple[str, ...]:
    """Feature names from a text file: one a line, or comma separated (blank lines and
    lines starting with # skipped).

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "names.txt")
        >>> _ = open(path, "w").write(chr(10).join(["# inputs", "speed, gap"]))
        >>> read_names(path)
        ('speed', 'gap')
    """
    from ..errors import FormatError

    try:
        with open(path) as fh:
            text = fh.read()
    except OSError as e:
        raise FormatError(f"{path}: cannot read feature names ({e.strerror})") from None
    except UnicodeDecodeError:
        raise FormatError(f"{path}: not a text file of names (one per line, or comma separated)") from None
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        out += [p.strip() for p in line.split(",") if p.strip()]
    if not out:
        raise FormatError(f"{path}: no feature names")
    return tuple(out)
