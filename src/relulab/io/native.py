"""relulab's native format: a versioned ``.npz`` archive.

Layout (format version 1): ``format`` = "relulab-network", ``version`` = 1,
``n_layers``, ``W{k}`` and ``b{k}`` for k = 0 .. n_layers-1, optional ``skip_S`` and
``skip_s``.  Exact (Fraction) networks store each entry as a "p/q" string array
under the same names and set ``exact`` = 1, so a round trip is exact either way.

Example:
    >>> import numpy as np, tempfile, os
    >>> from relulab import Network
    >>> net = Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), [0.5]])
    >>> p = os.path.join(tempfile.mkdtemp(), "n.npz"); save(net, p)
    >>> load(p) == net
    True
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import zipfile
import zlib
from collections.abc import Iterator
from fractions import Fraction

import numpy as np

from ..errors import FormatError
from ..limits import ResourceLimitError, check_bytes
from ..network import Network, NetworkError
from ._atomic import atomic_path

__all__ = ["save", "load", "FORMAT_VERSION"]

FORMAT_VERSION = 1
_MAGIC = "relulab-network"
_RATIONAL = re.compile(r"[+-]?[0-9]+(/[0-9]+)?")
# the longest exact entry, and the most squared digits a file may hold in all (the sum of
# each entry's length squared, over every array): decimal text to int takes time
# quadratic in its length (one weight 1/10^4000000 in a 16 KB compressed file took 99 s
# to load; a 200,000-digit entry takes about 0.25 s), so 4e11 keeps a load to a few
# seconds.  Short entries count little: Network.exact() of a 300 x 200 layer (39
# characters each) is 9e7.  A cap on the sum of lengths per array refused that network
# and let 8 arrays of 9 long entries each take 42 s.
MAX_ENTRY_DIGITS = 200_000
MAX_SQUARED_DIGITS = 4 * 10**11
# memory per exact entry once read: the Fraction, its two ints and the object pointer
_FRACTION_BYTES = 200


@contextlib.contextmanager
def _any_length_integers() -> Iterator[None]:
    """Within the block, integers of any length convert to and from decimal strings:
    Python refuses more than 4,300 digits by default, and .npz (the exact format) failed
    on the rationals of a deep construction with a raw ValueError."""
    get = getattr(sys, "get_int_max_str_digits", None)
    if get is None:
        yield
        return
    before = get()
    sys.set_int_max_str_digits(0)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(before)


def _encode(a: np.ndarray, exact: bool) -> np.ndarray:
    if not exact:
        return np.asarray(a, dtype=np.float64)
    with _any_length_integers():
        return np.array([str(v) for v in a.reshape(-1)], dtype=np.str_).reshape(a.shape)


def _decode(a: np.ndarray, exact: bool, path: str, key: str) -> np.ndarray:
    if not exact:
        if a.dtype.kind not in "fiu":
            raise FormatError(f"{path}: array '{key}' is not numeric")
        return a.astype(np.float64)
    if a.dtype.kind in "iu":
        return np.array([Fraction(int(v)) for v in a.reshape(-1)], dtype=object).reshape(a.shape)
    if a.dtype.kind == "f":  # the exact value of each float (Fraction(str(0.1)) would be 1/10)
        if not np.all(np.isfinite(a)):
            raise FormatError(f"{path}: array '{key}' holds NaN or infinite entries")
        return np.array([Fraction(float(v)) for v in a.reshape(-1)], dtype=object).reshape(a.shape)
    if a.dtype.kind != "U":
        raise FormatError(f"{path}: array '{key}' is neither numbers nor 'p/q' strings")
    out = []
    for v in a.reshape(-1):
        # str(Fraction) is 'p' or 'p/q'; Fraction() itself would also take '1_000', '0.1e1'
        if not _RATIONAL.fullmatch(str(v)):
            raise FormatError(f"{path}: array '{key}' holds {str(v)[:40]!r}, not a fraction 'p/q'")
        try:
            with _any_length_integers():
                out.append(Fraction(str(v)))
        except ZeroDivisionError:
            raise FormatError(f"{path}: array '{key}' holds {str(v)[:40]!r}, a zero denominator") from None
    return np.array(out, dtype=object).reshape(a.shape)


def _check_digits(arrays: dict[str, np.ndarray], path: str) -> None:
    """Refuse exact text arrays that would take too long to convert: an entry longer than
    ``MAX_ENTRY_DIGITS``, or more than ``MAX_SQUARED_DIGITS`` squared digits in the file
    (checked by :func:`save` too, so that it never writes what :func:`load` refuses)."""
    _check_lengths(((key, np.char.str_len(a).astype(np.int64)) for key, a in arrays.items()
                    if a.dtype.kind == "U" and a.size and key != "format"), path)


#: a little below log10(2): digit counts from bit lengths stay lower bounds after rounding
_LOG10_2_BELOW = 0.30102999


def _length_at_least(v: Fraction) -> int:
    """A lower bound of ``len(str(v))`` from bit lengths, without the decimal conversion
    (quadratic: 720 entries of 200,000 digits took 5 minutes to print before the check)."""
    def digits(n: int) -> int:
        return int((n.bit_length() - 1) * _LOG10_2_BELOW) + 1 if n else 1

    p, q = v.numerator, v.denominator
    return digits(abs(p)) + (p < 0) + (0 if q == 1 else 1 + digits(q))


def _check_lengths(items, path: str, at_least: bool = False) -> None:
    """The limits of :func:`_check_digits` on ``(array name, entry lengths)`` pairs
    (``at_least``: the lengths are lower bounds)."""
    some = "at least " if at_least else ""
    total = 0
    for key, lengths in items:
        longest = int(lengths.max())
        if longest > MAX_ENTRY_DIGITS:
            raise FormatError(f"{path}: array '{key}' holds an entry of {some}{longest} characters; relulab "
                              f"reads exact entries of at most {MAX_ENTRY_DIGITS} digits (decimal text "
                              "converts in time quadratic in its length)")
        total += int(np.sum(lengths * lengths))
        if total > MAX_SQUARED_DIGITS:
            raise FormatError(f"{path}: the exact entries up to array '{key}' hold more than "
                              f"{MAX_SQUARED_DIGITS:.0e} squared digits in all (the sum of each entry's "
                              "length squared); relulab reads at most that much (decimal text converts "
                              "in time quadratic in its length)")


def _check_memory(z: np.lib.npyio.NpzFile, path: str) -> None:
    """Refuse, from the arrays' headers alone, an archive whose arrays (and the Fractions
    read from text entries) would not fit the memory budget: ``np.load`` expands every
    array, and a 10 x 10 array of dtype ``<U200000`` is 80 MB from 350 KB on disk."""
    need = 0
    for name in z.zip.namelist():
        with z.zip.open(name) as fh:
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
            elif version == (2, 0):
                shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
            else:  # 3.0 (utf-8 field names): relulab never writes it, and np.load would
                # read it unchecked (a 780 KB file expanded to 1.56 GB under 0.2 GB)
                raise FormatError(f"{path}: array '{name}' has npy format version "
                                  f"{version[0]}.{version[1]}; relulab reads versions 1.0 and 2.0")
        size = int(np.prod(shape, dtype=object))
        need += size * dtype.itemsize + (size * _FRACTION_BYTES if dtype.kind == "U" else 0)
    check_bytes(need, f"{path}: reading its arrays")


def save(net: Network, path: str | os.PathLike) -> None:
    """Write ``net`` to ``path`` (.npz), atomically.

    Example:
        >>> import os, tempfile
        >>> from relulab.examples import abs_net
        >>> path = os.path.join(tempfile.mkdtemp(), "abs.npz")
        >>> save(abs_net(), path)
        >>> load(path) == abs_net()            # Fraction weights come back exactly
        True
    """
    arrays: dict[str, np.ndarray] = {
        "format": np.array(_MAGIC),
        "version": np.array(FORMAT_VERSION),
        "exact": np.array(int(net.is_exact)),
        "n_layers": np.array(net.depth),
    }
    named = [x for k, (W, b) in enumerate(net.layers) for x in ((f"W{k}", W), (f"b{k}", b))]
    if net.skip is not None:
        named += [("skip_S", net.skip[0]), ("skip_s", net.skip[1])]
    if net.is_exact:
        # what load would refuse is refused before the decimal conversion (the exact check
        # follows on the text itself)
        _check_lengths(((key, np.array([_length_at_least(v) for v in a.reshape(-1)], dtype=np.int64))
                        for key, a in named if a.size), str(path), at_least=True)
    for key, a in named:
        arrays[key] = _encode(a, net.is_exact)
    _check_digits(arrays, str(path))
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **arrays)


def _int(data: dict, key: str, default: int | None, path: str) -> int:
    """A scalar integer entry of the archive (a corrupt one is a FormatError, not a crash)."""
    if key not in data:
        if default is None:
            raise FormatError(f"{path}: missing array '{key}'")
        return default
    a = data[key]
    if a.shape != () or a.dtype.kind not in "iub":
        raise FormatError(f"{path}: '{key}' must be one integer, got {a.dtype} of shape {a.shape}")
    return int(a)


def load(path: str | os.PathLike) -> Network:
    """Read a network written by :func:`save`.

    Example:
        >>> import os, tempfile
        >>> from relulab.examples import tiny_2d
        >>> path = os.path.join(tempfile.mkdtemp(), "tiny.npz")
        >>> save(tiny_2d(), path)
        >>> net = load(path)
        >>> net.widths, net == tiny_2d()
        ((8, 8), True)
    """
    p = str(path)
    try:
        z = np.load(p, allow_pickle=False)
        if not isinstance(z, np.lib.npyio.NpzFile):  # a bare .npy array
            raise FormatError(f"{p}: not a .npz archive (it holds a single .npy array)")
        with z:
            _check_memory(z, p)
            data = {k: z[k] for k in z.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError,
            KeyError, IndexError) as e:
        # NotImplementedError: zipfile meets a damaged compression method or version field
        if isinstance(e, (FormatError, ResourceLimitError)):  # both are ValueErrors
            raise
        raise FormatError(f"{p}: not a readable .npz archive ({type(e).__name__}: {e})") from None
    if str(data.get("format", "")) != _MAGIC:
        raise FormatError(f"{p}: not a relulab network archive (no format tag '{_MAGIC}')")
    version = _int(data, "version", -1, p)
    if version != FORMAT_VERSION:
        raise FormatError(f"{p}: format version {version} is not supported (this relulab reads {FORMAT_VERSION})")
    exact = bool(_int(data, "exact", 0, p))
    n = _int(data, "n_layers", None, p)
    if n < 1:
        raise FormatError(f"{p}: n_layers is {n}; a network has at least one layer")
    if 2 * n > len(data):  # each layer is two arrays: checked before any loop over n
        raise FormatError(f"{p}: n_layers is {n}, but the archive holds only {len(data)} arrays")
    known = {"format", "version", "exact", "n_layers", "skip_S", "skip_s",
             *(f"W{k}" for k in range(n)), *(f"b{k}" for k in range(n))}
    stray = sorted(set(data) - known)
    if stray:  # e.g. a layer beyond n_layers: loading without it would be another network
        raise FormatError(f"{p}: unexpected array '{stray[0]}' (n_layers is {n})")
    if exact:
        _check_digits(data, p)
    try:
        Ws = [_decode(data[f"W{k}"], exact, p, f"W{k}") for k in range(n)]
        bs = [_decode(data[f"b{k}"], exact, p, f"b{k}") for k in range(n)]
        skip = None
        if "skip_S" in data or "skip_s" in data:
            skip = (_decode(data["skip_S"], exact, p, "skip_S"), _decode(data["skip_s"], exact, p, "skip_s"))
    except KeyError as e:
        raise FormatError(f"{p}: missing array {e}") from None
    try:
        return Network(Ws, bs, skip, exact=exact)
    except NetworkError as e:
        raise FormatError(f"{p}: {e}") from None
