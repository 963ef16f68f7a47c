"""NNet, the ACAS Xu text format (Kyle Julian, Stanford 2016).

An ``.nnet`` file holds a fully connected ReLU network together with the
normalisation it expects.  After ``//`` comment lines it reads (comma-separated,
trailing commas allowed)::

    L, d, m, max_layer_size          number of affine layers, inputs, outputs
    n_0, n_1, ..., n_L               layer sizes (n_0 = d, n_L = m)
    0                                an unused flag
    min_1 .. min_d                   input minimums
    max_1 .. max_d                   input maximums
    mean_1 .. mean_d, mean_out       input means, then one mean for all outputs
    range_1 .. range_d, range_out    input ranges, then one range for all outputs
    then for each layer k: n_k weight rows of n_{k-1} numbers, then n_k biases, one a line

The function it defines on *raw* inputs ``x`` is::

    y = net((clip(x, min, max) - mean) / range) * range_out + mean_out

where ``net`` has a ReLU after every layer but the last.

relulab reads it into an :class:`NNetModel` (the network on normalised units plus
the normalisation, :func:`read_nnet`), or straight into one :class:`~relulab.Network`
(:func:`load_nnet`).  By default :func:`load_nnet` gives the raw -> raw function
*with* the clipping (``normalize=True``): that is what the file means, so
``relulab eval model.nnet`` and ``relulab convert model.nnet model.onnx`` keep the
file's meaning.  ``load_nnet(path, normalize=False)`` gives the bare network on
normalised units instead (the form in which the VNN-COMP ACAS Xu ONNX models and
their VNN-LIB properties are written).

Writing uses Python's shortest round-tripping float representation, so
``read_nnet(write_nnet(model))`` gives back exactly the same numbers.

Example:
    >>> import numpy as np, tempfile, os
    >>> from relulab import Network
    >>> net = Network([np.array([[1.0, -1.0]]), np.array([[2.0]])], [np.zeros(1), np.array([0.5])])
    >>> p = os.path.join(tempfile.mkdtemp(), "n.nnet"); save_nnet(net, p)
    >>> load_nnet(p) == net
    True
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import FormatError
from ..limits import ResourceLimitError, check_bytes
from ..network import Network, NetworkError
from ._atomic import atomic_path
from ._lowering import COMPACT_CLIP_MAX, NO_CLIP_BOUND

__all__ = ["NNetModel", "read_nnet", "write_nnet", "load_nnet", "save_nnet"]


def _ro(a: Any) -> np.ndarray:
    v = np.array(a, dtype=np.float64).reshape(-1)
    v.setflags(write=False)
    return v


@dataclass(frozen=True, eq=False)
class NNetModel:
    """The content of an ``.nnet`` file: a network on normalised units and its normalisation.

    ``network`` maps normalised inputs to normalised outputs.  ``input_min`` /
    ``input_max`` (shape (d,), may be infinite) clip raw inputs; ``input_mean`` /
    ``input_range`` normalise them; ``output_mean`` / ``output_range`` (one number
    each, as in the format) de-normalise the outputs.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> m = NNetModel(Network([np.eye(1)], [np.zeros(1)]), [0.0], [1.0], [0.0], [2.0], 1.0, 10.0)
        >>> m.evaluate([5.0]).tolist()        # clip to 1, normalise to 0.5, de-normalise
        [6.0]
    """

    network: Network
    input_min: np.ndarray
    input_max: np.ndarray
    input_mean: np.ndarray
    input_range: np.ndarray
    output_mean: float
    output_range: float

    def __init__(
        self,
        network: Network,
        input_min: Any,
        input_max: Any,
        input_mean: Any,
        input_range: Any,
        output_mean: float = 0.0,
        output_range: float = 1.0,
    ) -> None:
        if network.skip is not None:
            raise FormatError(
                "NNet has no input-output skip; pass net.without_skip() (an equivalent network)"
            )
        d = network.input_dim
        vals = {}
        for name, a in (
            ("input_min", input_min),
            ("input_max", input_max),
            ("input_mean", input_mean),
            ("input_range", input_range),
        ):
            try:
                v = _ro(a)
            except (TypeError, ValueError) as e:
                raise FormatError(f"NNet {name}: entries are not numbers ({e})") from None
            if v.size != d:
                raise FormatError(f"NNet {name} has {v.size} entries; the network takes {d} inputs")
            if np.any(np.isnan(v)):
                raise FormatError(f"NNet {name} contains NaN")
            vals[name] = v
        if not (np.all(np.isfinite(vals["input_mean"])) and np.all(np.isfinite(vals["input_range"]))):
            raise FormatError("NNet input means and ranges must be finite")
        zero = np.nonzero(vals["input_range"] == 0)[0]
        if zero.size:
            raise FormatError(f"NNet input range of input {int(zero[0])} is 0 (cannot normalise)")
        inf = np.nonzero((vals["input_min"] == np.inf) | (vals["input_max"] == -np.inf))[0]
        if inf.size:
            raise FormatError(f"NNet input {int(inf[0])}: a minimum of +inf or a maximum of -inf "
                              "clips every input to infinity")
        bad = np.nonzero(vals["input_min"] > vals["input_max"])[0]
        if bad.size:
            i = int(bad[0])
            raise FormatError(
                f"NNet input {i}: minimum {float(vals['input_min'][i])!r} > maximum {float(vals['input_max'][i])!r}"
            )
        om, orng = float(output_mean), float(output_range)
        if not (np.isfinite(om) and np.isfinite(orng)):
            raise FormatError("NNet output mean and range must be finite")
        object.__setattr__(self, "network", network)
        for name, v in vals.items():
            object.__setattr__(self, name, v)
        object.__setattr__(self, "output_mean", om)
        object.__setattr__(self, "output_range", orng)

    @classmethod
    def from_network(
        cls,
        net: Network,
        input_min: Any = None,
        input_max: Any = None,
        input_mean: Any = None,
        input_range: Any = None,
        output_mean: float = 0.0,
        output_range: float = 1.0,
    ) -> NNetModel:
        """Wrap a plain network: by default identity normalisation and infinite input bounds.

        A network with a skip is first rewritten without it; an exact (Fraction)
        network is rounded to float64 (NNet stores floats).

        Example:
            >>> import numpy as np
            >>> m = NNetModel.from_network(Network([np.eye(2)], [np.zeros(2)]))
            >>> m.input_min.tolist(), m.input_range.tolist()
            ([-inf, -inf], [1.0, 1.0])
        """
        net = net.without_skip().float()
        d = net.input_dim
        return cls(
            net,
            np.full(d, -np.inf) if input_min is None else input_min,
            np.full(d, np.inf) if input_max is None else input_max,
            np.zeros(d) if input_mean is None else input_mean,
            np.ones(d) if input_range is None else input_range,
            output_mean,
            output_range,
        )

    @property
    def normalises(self) -> bool:
        """Whether the file clips or normalises, so that its raw function and the bare
        network on normalised units differ.

        Example:
            >>> NNetModel.from_network(Network([np.eye(1)], [np.zeros(1)])).normalises
            False
        """
        return bool(np.any(np.isfinite(self.input_min)) or np.any(np.isfinite(self.input_max))
                    or np.any(self.input_mean != 0) or np.any(self.input_range != 1)
                    or self.output_mean != 0 or self.output_range != 1)

    @property
    def input_dim(self) -> int:
        return self.network.input_dim

    @property
    def output_dim(self) -> int:
        return self.network.output_dim

    def evaluate(self, raw_X: Any) -> np.ndarray:
        """The file's function on raw inputs: clip, normalise, run, de-normalise.

        ``raw_X`` is a vector (gives a vector) or an (n, d) batch.  With an exact
        ``network`` and rational inputs the computation is exact.
        """
        exact = self.network.is_exact
        X = np.asarray(raw_X, dtype=object if exact else np.float64)
        single = X.ndim == 1
        X2 = np.atleast_2d(X)
        if X2.ndim != 2 or X2.shape[1] != self.input_dim:
            raise NetworkError(
                f"input has shape {np.shape(raw_X)}; the network takes {self.input_dim} inputs"
            )
        p = self._params(exact)
        lo, hi = p["input_min"], p["input_max"]
        if exact:
            Xc = np.empty(X2.shape, dtype=object)
            for idx, v in np.ndenumerate(X2):
                v = Fraction(v)
                j = idx[1]
                if lo[j] is not None and v < lo[j]:
                    v = lo[j]
                if hi[j] is not None and v > hi[j]:
                    v = hi[j]
                Xc[idx] = v
        else:
            Xc = np.clip(X2, lo, hi)
        Y = self.network((Xc - p["input_mean"]) / p["input_range"])
        Y = Y * p["output_range"] + p["output_mean"]
        return Y[0] if single else Y

    def _params(self, exact: bool) -> dict[str, Any]:
        """The normalisation as floats, or as Fractions (None for an infinite bound)."""
        names = ("input_min", "input_max", "input_mean", "input_range")
        if not exact:
            out: dict[str, Any] = {n: getattr(self, n) for n in names}
            out["output_mean"], out["output_range"] = self.output_mean, self.output_range
            return out
        out = {}
        for n in names:
            out[n] = np.array(
                [Fraction(v) if np.isfinite(v) else None for v in getattr(self, n)], dtype=object
            )
        out["output_mean"] = Fraction(self.output_mean)
        out["output_range"] = Fraction(self.output_range)
        return out

    def to_network(self, clip: bool = True) -> Network:
        """One :class:`~relulab.Network` computing the raw -> raw function.

        The input normalisation is folded into the first layer and the output
        de-normalisation into the last.  With ``clip=True`` the clipping to
        ``[input_min, input_max]`` is built in exactly as one extra hidden layer of
        ``2 d`` neurons, using ``clip(x) = lo + relu(x - lo) - relu(x - hi)`` (an
        infinite bound, or one of float32's maximum or more, drops its term; a float bound
        beyond ``COMPACT_CLIP_MAX`` in magnitude takes two more neurons, see
        ``_clip_layer``); when every bound is infinite the clipping is the identity and
        no layer is added.  Exact networks give exact networks.

        Example:
            >>> import numpy as np
            >>> from relulab import Network
            >>> m = NNetModel(Network([np.eye(1)], [np.zeros(1)]), [0.0], [1.0], [0.0], [2.0], 1.0, 10.0)
            >>> net = m.to_network()
            >>> net.widths, net([5.0]).tolist()
            ((2,), [6.0])
        """
        exact = self.network.is_exact
        p = self._params(exact)
        Ws = list(self.network.weights)
        bs = list(self.network.biases)
        # x_n = (x - mean) / range, folded into the first layer.
        Ws[0] = Ws[0] / p["input_range"][None, :]
        bs[0] = bs[0] - Ws[0] @ p["input_mean"]
        # y = y_n * range_out + mean_out, folded into the last layer (the same layer
        # as the first when the network has no hidden layer: the maps compose).
        Ws[-1] = Ws[-1] * p["output_range"]
        bs[-1] = bs[-1] * p["output_range"] + p["output_mean"]
        if clip:
            layer = self._clip_layer(p, exact)
            if layer is not None:
                C0, c0, U, u = layer
                # clip(x) = U relu(C0 x + c0) + u, merged into the first affine layer.
                bs[0] = Ws[0] @ u + bs[0]
                Ws[0] = Ws[0] @ U
                Ws.insert(0, C0)
                bs.insert(0, c0)
        return Network(Ws, bs, exact=exact)

    def _clip_layer(self, p: dict[str, Any], exact: bool):
        """``(C0, c0, U, u)`` with ``clip(x) = U relu(C0 x + c0) + u``, or None if all bounds
        are infinite.  A bound of float32's maximum or more is no bound (the reference
        converters write +-3.40282e38 for "unbounded").  Float bounds beyond
        ``COMPACT_CLIP_MAX`` use ``x + relu(lo - x) - relu(x - hi)`` (``x`` carried as
        ``relu(x) - relu(-x)``), exact for ``x`` inside the bounds, because
        ``lo + relu(x - lo)`` loses ``x`` to rounding when ``|lo|`` is much larger."""
        d = self.input_dim
        lo, hi = p["input_min"], p["input_max"]

        def bounded(v) -> bool:  # None (exact), inf and NaN (float) are no bound: abs() < is False
            return v is not None and bool(abs(v) < NO_CLIP_BOUND)

        finite_lo = [bounded(v) for v in lo]
        finite_hi = [bounded(v) for v in hi]
        if not any(finite_lo) and not any(finite_hi):
            return None
        zero, one = (Fraction(0), Fraction(1)) if exact else (0.0, 1.0)
        dt = object if exact else np.float64
        # neurons relu(s x_j + t), each entering output j with coefficient c
        rows: list[tuple[int, Any, Any, Any]] = []
        u = np.full(d, zero, dtype=dt)
        for j in range(d):
            flo, fhi = finite_lo[j], finite_hi[j]
            big = not exact and max([abs(lo[j])] * flo + [abs(hi[j])] * fhi, default=0.0) > COMPACT_CLIP_MAX
            if big or not (flo or fhi):
                # x + relu(lo - x) - relu(x - hi), with x = relu(x) - relu(-x)
                rows += [(j, one, zero, one), (j, -one, zero, -one)]
                if flo:
                    rows.append((j, -one, lo[j], one))
                if fhi:
                    rows.append((j, one, -hi[j], -one))
            elif flo and fhi:
                # lo + relu(x - lo) - relu(x - hi)
                rows += [(j, one, -lo[j], one), (j, one, -hi[j], -one)]
                u[j] = lo[j]
            elif flo:
                # max(x, lo) = lo + relu(x - lo); the second neuron stays at 0
                rows += [(j, one, -lo[j], one), (j, zero, zero, zero)]
                u[j] = lo[j]
            else:
                # min(x, hi) = hi - relu(hi - x); the second neuron stays at 0
                rows += [(j, -one, hi[j], -one), (j, zero, zero, zero)]
                u[j] = hi[j]
        n = len(rows)
        # C0, U and the product folding U into the first layer are dense
        check_bytes(8.0 * n * (2 * d + self.network.weights[0].shape[0]),
                    f"the clip layer of {d} inputs ({n} neurons, dense)")
        C0 = np.full((n, d), zero, dtype=dt)
        c0 = np.full(n, zero, dtype=dt)
        U = np.full((d, n), zero, dtype=dt)
        for i, (j, sc, t, c) in enumerate(rows):
            C0[i, j], c0[i], U[j, i] = sc, t, c
        return C0, c0, U, u

    def __eq__(self, other: object) -> bool:
        """Equal networks and identical normalisation numbers."""
        if not isinstance(other, NNetModel):
            return NotImplemented
        return (
            self.network == other.network
            and all(
                np.array_equal(getattr(self, n), getattr(other, n))
                for n in ("input_min", "input_max", "input_mean", "input_range")
            )
            and self.output_mean == other.output_mean
            and self.output_range == other.output_range
        )

    def __hash__(self) -> int:
        return hash(self.network)

    def __repr__(self) -> str:
        return f"NNetModel({self.network!r})"

    def to_dict(self) -> dict:
        return {
            "network": repr(self.network),
            "input_min": self.input_min.tolist(),
            "input_max": self.input_max.tolist(),
            "input_mean": self.input_mean.tolist(),
            "input_range": self.input_range.tolist(),
            "output_mean": self.output_mean,
            "output_range": self.output_range,
        }


# --------------------------------------------------------------------- reading
_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?(inf|infinity|nan)",
                    re.IGNORECASE)


# the characters str.splitlines() ends a line at ("\r\n" counts twice here: an estimate)
_LINE_BREAKS = ("\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


class _Lines:
    """The data lines of an NNet file (comments and blank lines skipped), with line numbers."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        # every number is a Python string in a list until it is read: about 10 bytes of
        # memory per byte of text (a 177 MB file peaked at 1.63 GB), and about 130 bytes
        # per number whatever its length (a 12 MB file of "10," entries peaked at 525 MB),
        # checked up front.  Lines are counted as splitlines() splits them ("\r", "\x0b",
        # "\u2028", ...: a 30 MB file of "1\r" lines passed a "\n" count and peaked at
        # 3.2 GB), each about 220 bytes (its string, the stripped copy, the list, the tuple)
        lines = sum(text.count(c) for c in _LINE_BREAKS) + 1
        tokens = text.count(",") + lines
        check_bytes(max(12.0 * len(text), 140.0 * tokens + 220.0 * lines),
                    f"{path}: parsing its {len(text) / 2**20:.3g} MB of text ({tokens} numbers)")
        self.items: list[tuple[int, list[str]]] = []
        self.last_line = 0
        for no, raw in enumerate(text.splitlines(), start=1):
            self.last_line = no
            line = raw.strip()
            if not line or line.startswith("//"):
                continue
            toks = [t.strip() for t in line.split(",")]
            if toks and toks[-1] == "":  # the format ends lines with a comma
                toks.pop()
            self.items.append((no, toks))
        self.pos = 0
        self.line = 0  # number of the line read last

    def next(self, what: str) -> tuple[int, list[str]]:
        if self.pos >= len(self.items):
            after = self.items[-1][0] if self.items else self.last_line
            raise FormatError(f"{self.path}: file ends after line {after}; expected {what}")
        item = self.items[self.pos]
        self.pos += 1
        self.line = item[0]
        return item

    def numbers(self, what: str, n: int, kind: type = float, finite: bool = True) -> list:
        no, toks = self.next(what)
        if len(toks) != n:
            raise FormatError(
                f"{self.path}:{no}: expected {n} number{'s' if n != 1 else ''} ({what}), "
                f"found {len(toks)}"
            )
        out = []
        pattern = _INT if kind is int else _FLOAT
        for t in toks:
            try:
                # Python's int()/float() also take '1_0' and non-ASCII digits; C's atof
                # (the format's reference reader) does not, so neither does this one.
                if not pattern.fullmatch(t):
                    raise ValueError(t)
                v = kind(t)
            except ValueError:
                raise FormatError(
                    f"{self.path}:{no}: {t!r} is not {'an integer' if kind is int else 'a number'} ({what})"
                ) from None
            if kind is float and finite and not np.isfinite(v):
                raise FormatError(f"{self.path}:{no}: '{t}' is not a finite number ({what})")
            out.append(v)
        return out


def read_nnet(path: str | os.PathLike) -> NNetModel:
    """Read an ``.nnet`` file into an :class:`NNetModel`.

    Malformed files (wrong counts, non-numbers, a truncated file, trailing data)
    raise :class:`~relulab.errors.FormatError` naming the file and line.

    Example:
        >>> m = read_nnet("TestNetwork.nnet")                        # doctest: +SKIP
        >>> m.evaluate([1, 1, 1, 100, 1])                            # doctest: +SKIP
        array([270.94961805, 280.8974763 , 274.55254776, 288.10071007, 256.18037737])

        >>> import os, tempfile
        >>> from relulab.examples import xor_net
        >>> path = os.path.join(tempfile.mkdtemp(), "xor.nnet")
        >>> save_nnet(xor_net(), path)
        >>> model = read_nnet(path)
        >>> model.input_dim, model.output_dim, model.evaluate([[0.0, 1.0]]).ravel().tolist()
        (2, 1, [1.0])
    """
    p = str(path)
    try:
        with open(p, "rb") as fh:
            raw = fh.read()
    except OSError as e:
        raise FormatError(f"{p}: cannot read ({e.strerror or e})") from None
    if b"\0" in raw:
        raise FormatError(f"{p}: not an NNet text file (it holds NUL bytes)")
    # A byte-order mark is allowed; bytes that are not UTF-8 (e.g. Latin-1 in a '//'
    # comment) are kept as escapes, so they only matter where a number is expected.
    text = raw.removeprefix(b"\xef\xbb\xbf").decode("utf-8", errors="surrogateescape")
    lines = _Lines(p, text)
    L, d, m, _max_size = lines.numbers(
        "number of layers, inputs, outputs, largest layer size", 4, int
    )
    if L < 1 or d < 1 or m < 1:
        raise FormatError(f"{p}:{lines.line}: layer, input and output counts must be positive")
    sizes = lines.numbers(f"the {L + 1} layer sizes", L + 1, int)
    if min(sizes) < 1:
        raise FormatError(f"{p}:{lines.line}: layer sizes must be positive, got {sizes}")
    if sizes[0] != d or sizes[-1] != m:
        raise FormatError(
            f"{p}:{lines.line}: layer sizes start with {sizes[0]} and end with {sizes[-1]}; "
            f"the header says {d} inputs and {m} outputs"
        )
    lines.next("the (unused) symmetry flag")
    lo = lines.numbers(f"the {d} input minimums", d, finite=False)
    lo_line = lines.line
    hi = lines.numbers(f"the {d} input maximums", d, finite=False)
    hi_line = lines.line
    for i, (a, b) in enumerate(zip(lo, hi, strict=True)):
        if np.isnan(a) or a == np.inf:
            raise FormatError(f"{p}:{lo_line}: input {i} has minimum {a!r} (it must be a number below +inf)")
        if np.isnan(b) or b == -np.inf or a > b:
            raise FormatError(f"{p}:{hi_line}: input {i} has maximum {b!r} (minimum {a!r})")
    mean = lines.numbers(f"{d} input means and one output mean", d + 1)
    rng = lines.numbers(f"{d} input ranges and one output range", d + 1)
    if any(r == 0 for r in rng[:d]):
        raise FormatError(f"{p}:{lines.line}: an input range is 0 (cannot normalise)")
    Ws, bs = [], []
    for k in range(1, L + 1):
        n_in, n_out = sizes[k - 1], sizes[k]
        # rows are collected as read (not preallocated from the header's sizes), so a file
        # that declares more than it holds fails at its last line, not in the allocator
        W = np.array([lines.numbers(f"layer {k} weight row {r + 1} of {n_out}, {n_in} numbers", n_in)
                      for r in range(n_out)], dtype=np.float64).reshape(n_out, n_in)
        b = np.array([lines.numbers(f"layer {k} bias {r + 1} of {n_out}", 1)[0]
                      for r in range(n_out)], dtype=np.float64)
        Ws.append(W)
        bs.append(b)
    if lines.pos < len(lines.items):
        extra = lines.items[lines.pos][0]
        raise FormatError(f"{p}:{extra}: unexpected data after the last layer's biases")
    try:
        net = Network(Ws, bs)
        return NNetModel(net, lo, hi, mean[:d], rng[:d], mean[d], rng[d])
    except (NetworkError, FormatError) as e:
        raise FormatError(f"{p}: {e}") from None


def load_nnet(path: str | os.PathLike, normalize: bool = True, clip: bool = True) -> Network:
    """Load an ``.nnet`` file as one :class:`~relulab.Network`.

    ``normalize=True`` (the default, used by :func:`relulab.io.load_model`) gives the
    file's own raw -> raw function: normalisation folded into the first layer,
    de-normalisation into the last and, with ``clip=True``, the input clipping as
    one extra hidden layer (see :meth:`NNetModel.to_network`).  ``normalize=False``
    gives the bare network on normalised units (no clipping), the form used by the
    VNN-COMP ACAS Xu ONNX models and properties.

    Example:
        >>> net = load_nnet("TestNetwork.nnet")                      # doctest: +SKIP
        >>> net.widths                                               # doctest: +SKIP
        (10, 50, 50, 50, 50, 50, 50)

        >>> import os, tempfile
        >>> from relulab.examples import xor_net
        >>> path = os.path.join(tempfile.mkdtemp(), "xor.nnet")
        >>> save_nnet(xor_net(), path)
        >>> load_nnet(path, normalize=False)([[1.0, 0.0], [1.0, 1.0]]).ravel().tolist()
        [1.0, 0.0]
    """
    return nnet_network(read_nnet(path), path, normalize, clip)


def nnet_network(model: NNetModel, path: str | os.PathLike, normalize: bool = True,
                 clip: bool = True) -> Network:
    """The :class:`~relulab.Network` of an ``.nnet`` file already read (see
    :func:`load_nnet`); ``path`` names the file in errors.

    Example:
        >>> m = NNetModel(Network([np.eye(1)], [np.zeros(1)]), [0.0], [1.0], [0.0], [2.0], 1.0, 10.0)
        >>> nnet_network(m, "m.nnet")([[0.5]]).tolist()    # normalise to 0.25, de-normalise
        [[3.5]]
    """
    if not normalize:
        return model.network
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            return model.to_network(clip=clip)
    except NetworkError as e:  # e.g. the de-normalisation overflows float64
        raise FormatError(f"{path}: folding the (de)normalisation into the network fails: {e}") from None
    except ResourceLimitError as e:
        raise ResourceLimitError(f"{path}: {e}") from None


def _fmt(values: Any) -> str:
    # repr of a Python float is the shortest string that reads back to the same float.
    return ",".join(repr(float(v)) for v in values) + ","


def write_nnet(model: NNetModel, path: str | os.PathLike) -> None:
    """Write an :class:`NNetModel` to ``path`` atomically, every number at full precision.

    An exact (Fraction) network is rounded to the nearest float64 values.

    Example:
        >>> import numpy as np, tempfile, os
        >>> from relulab import Network
        >>> m = NNetModel(Network([np.eye(1)], [np.zeros(1)]), [0.0], [1.0], [0.0], [2.0], 1.0, 10.0)
        >>> p = os.path.join(tempfile.mkdtemp(), "m.nnet"); write_nnet(m, p)
        >>> read_nnet(p) == m
        True
    """
    net = model.network.float()
    sizes = [net.input_dim, *(W.shape[0] for W in net.weights)]
    out = [
        "// Neural Network File Format by Kyle Julian, Stanford 2016",
        "// written by relulab",
        f"{net.depth},{net.input_dim},{net.output_dim},{max(sizes)},",
        ",".join(str(s) for s in sizes) + ",",
        "0,",
        _fmt(model.input_min),
        _fmt(model.input_max),
        _fmt([*model.input_mean, model.output_mean]),
        _fmt([*model.input_range, model.output_range]),
    ]
    for W, b in net.layers:
        out.extend(_fmt(row) for row in W)
        out.extend(repr(float(v)) + "," for v in b)
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write("\n".join(out) + "\n")


def save_nnet(
    net: Network,
    path: str | os.PathLike,
    input_min: Any = None,
    input_max: Any = None,
    input_mean: Any = None,
    input_range: Any = None,
    output_mean: float = 0.0,
    output_range: float = 1.0,
) -> None:
    """Save a plain network as ``.nnet`` (atomically).

    By default with identity normalisation and infinite input bounds (written as
    ``-inf`` / ``inf``), so that :func:`load_nnet` gives back exactly ``net``.  A
    network with a skip is saved as ``net.without_skip()``; an exact network is
    rounded to float64.  Give the normalisation arguments to describe a network on
    normalised units (see :class:`NNetModel`).

    Example:
        >>> import numpy as np, tempfile, os
        >>> from relulab import Network
        >>> net = Network([np.eye(2)], [np.ones(2)])
        >>> p = os.path.join(tempfile.mkdtemp(), "n.nnet"); save_nnet(net, p)
        >>> load_nnet(p) == net
        True
    """
    model = NNetModel.from_network(
        net, input_min, input_max, input_mean, input_range, output_mean, output_range
    )
    write_nnet(model, path)
