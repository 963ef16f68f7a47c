"""The one representation: a ReLU network as a list of affine layers.

A :class:`Network` with layers ``(W_1, b_1), ..., (W_L, b_L)`` computes::

    h_0 = x
    h_k = relu(W_k h_{k-1} + b_k)          for k = 1 .. L-1   (hidden layers)
    f(x) = W_L h_{L-1} + b_L  (+ S x + s)   the last layer is affine, no ReLU

with an optional affine skip ``(S, s)`` from the input straight to the output.
Weights follow torch's convention: ``W_k`` has shape ``(out, in)``.

Entries are float64 by default; :meth:`Network.exact` gives a copy whose entries
are :class:`fractions.Fraction` and whose forward pass on rational inputs is
exact.  Networks are immutable: every operation returns a new network.

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> net = Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
    >>> float(net([1.0, -2.0])[0])
    1.0
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from .errors import RelulabError
from .tolerance import ROUNDOFF, SMALLEST_SUBNORMAL, or_default

__all__ = ["Network", "NetworkError", "relu", "nearest_float"]


def is_float64_number(e: Any) -> bool:
    """Whether ``e`` (a Fraction, int or float) is exactly a float64 number.  Decided in
    integers where it can be (an odd numerator of at most 53 bits over a power of two up
    to 2^1022, or an integer of at most 53 significant bits below 2^1024: a Fraction per
    entry is slow), else by ``Fraction(float(e)) == e`` (subnormals; beyond float64's range
    it is not one).

    Example:
        >>> is_float64_number(Fraction(3, 8)), is_float64_number(Fraction(1, 3)), is_float64_number(2**60 + 1)
        (True, False, False)
        >>> is_float64_number(Fraction(3, 2**1074)), is_float64_number(10**400)
        (True, False)
    """
    if isinstance(e, float):
        return True
    n, d = (e.numerator, e.denominator) if hasattr(e, "denominator") else (int(e), 1)
    n = abs(n)
    if d == 1:
        if n == 0:
            return True
        odd = n >> ((n & -n).bit_length() - 1)  # drop trailing zero bits
        if odd.bit_length() <= 53 and n < 2**1024:
            return True
    elif d & (d - 1) == 0 and d.bit_length() - 1 <= 1022 and n.bit_length() <= 53:
        return True
    try:
        return Fraction(float(e)) == e
    except OverflowError:   # beyond float64's range (10^400)
        return False

class NetworkError(RelulabError):
    """A network was built from inconsistent or non-finite parameters."""


ArrayLike = Any


def _is_exact_array(a: np.ndarray) -> bool:
    return a.dtype == object


def _exact_value(v: Any) -> Fraction:
    """The Fraction a number stores exactly (numpy float32/float16/integer scalars too)."""
    if isinstance(v, Fraction):
        return v
    if isinstance(v, np.floating):
        v = float(v)  # exact: float64 holds every float16/float32 value
    elif isinstance(v, np.integer):
        v = int(v)
    return Fraction(v)


def _short(v: Any) -> str:
    """``repr(v)``, cut to 40 characters (a 400-digit integer in an error message)."""
    r = repr(v)
    return r if len(r) <= 40 else r[:37] + "..."


def _to_fraction_array(a: ArrayLike, what: str = "") -> np.ndarray:
    """Exact conversion: a float becomes the Fraction of its binary value.  Errors name
    ``what`` (e.g. "layer 2 bias") and the entry."""
    arr = np.asarray(a, dtype=object)
    out = np.empty(arr.shape, dtype=object)
    flat_in = arr.reshape(-1)
    flat_out = out.reshape(-1)
    for i, v in enumerate(flat_in):
        try:
            flat_out[i] = _exact_value(v)
        except (ValueError, OverflowError, TypeError):
            raise NetworkError(f"{what + ': ' if what else ''}entry {i} ({_short(v)}) has no exact "
                               "rational value") from None
    return out


def _freeze(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def nearest_float(v: Any) -> float:
    """The float64 nearest to a number (an exact Fraction output, say); beyond float64's
    range, an infinity of its sign instead of an OverflowError.

    Example:
        >>> nearest_float(Fraction(1, 3)), nearest_float(Fraction(-(10 ** 400)))
        (0.3333333333333333, -inf)
    """
    try:
        return float(v)
    except OverflowError:
        return float("inf") if v > 0 else float("-inf")


def relu(z: np.ndarray) -> np.ndarray:
    """Elementwise max(z, 0); keeps Fraction entries exact.

    Example:
        >>> from fractions import Fraction
        >>> relu(np.array([-1.5, 0.0, 2.0])).tolist()
        [0.0, 0.0, 2.0]
        >>> relu(np.array([Fraction(-1, 3), Fraction(2, 3)], dtype=object)).tolist()
        [Fraction(0, 1), Fraction(2, 3)]
    """
    if _is_exact_array(z):
        out = z.copy()
        out[~(z > 0).astype(bool)] = Fraction(0)
        return out
    return np.maximum(z, 0.0)


def _object_entries(a: ArrayLike) -> bool:
    """Whether ``a`` holds Python objects (Fractions, huge ints): the network is then exact.
    A ragged list is not decided here: :func:`_as_matrix` refuses it naming the layer."""
    try:
        return np.asarray(a).dtype == object
    except ValueError:
        return False


def _as_matrix(a: ArrayLike, exact: bool, what: str) -> np.ndarray:
    try:
        complex_entries = np.iscomplexobj(a)
    except ValueError:  # a ragged list: refused below with the layer's name
        complex_entries = False
    if complex_entries:
        raise NetworkError(f"{what}: complex entries; a ReLU network has real weights")
    if exact:
        arr = _to_fraction_array(a, what)
    else:
        try:
            arr = np.array(a, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise NetworkError(f"{what}: entries are not numbers ({e})") from None
        except OverflowError:  # a Python integer such as 10**400
            raise NetworkError(f"{what}: an entry is too large for float64 (above 1.8e308); "
                               "exact=True keeps it as a rational") from None
    return arr


class Network:
    """An immutable feed-forward ReLU network (see the module docstring).

    Args:
        weights: the layer matrices ``W_k`` of shape ``(out_k, in_k)``.
        biases: the layer offsets ``b_k`` of shape ``(out_k,)``.
        skip: optional ``(S, s)``: ``S`` of shape ``(out, in)`` and ``s`` of
            shape ``(out,)`` added to the output.
        exact: store entries as Fractions (defaults to True when any given
            array has object dtype, i.e. already holds Fractions).

    Example:
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> net([[-3.0], [2.0]]).ravel().tolist()   # |x|
        [3.0, 2.0]
    """

    __slots__ = ("_weights", "_biases", "_skip", "_exact", "_float_copy")
    # numpy defers to Network in `array * net` (which gave an object array of networks):
    # the product then fails with Python's TypeError, as for any unsupported operand
    __array_ufunc__ = None

    def __init__(
        self,
        weights: Sequence[ArrayLike],
        biases: Sequence[ArrayLike],
        skip: tuple[ArrayLike, ArrayLike] | None = None,
        *,
        exact: bool | None = None,
    ) -> None:
        try:
            weights = list(weights)
            biases = list(biases)
        except TypeError:
            raise NetworkError("weights and biases must be sequences of layers (one matrix and one "
                               f"vector per layer), got {type(weights).__name__} and "
                               f"{type(biases).__name__}") from None
        if len(weights) == 0:
            raise NetworkError("a network needs at least one affine layer")
        if len(weights) != len(biases):
            raise NetworkError(
                f"{len(weights)} weight matrices but {len(biases)} bias vectors"
            )
        if exact is None:
            exact = any(_object_entries(a) for a in [*weights, *biases])
        Ws, bs = [], []
        prev_out = None
        for k, (W, b) in enumerate(zip(weights, biases, strict=True), start=1):
            W = _as_matrix(W, exact, f"layer {k} weight")
            b = _as_matrix(b, exact, f"layer {k} bias")
            if W.ndim != 2:
                raise NetworkError(f"layer {k}: weight must be 2-D (out, in), got shape {W.shape}")
            if b.ndim != 1 or b.shape[0] != W.shape[0]:
                raise NetworkError(
                    f"layer {k}: bias shape {b.shape} does not match weight shape {W.shape}"
                )
            if prev_out is not None and W.shape[1] != prev_out:
                raise NetworkError(
                    f"layer {k}: weight takes {W.shape[1]} inputs but layer {k - 1} "
                    f"gives {prev_out} outputs"
                )
            if W.shape[0] == 0 or W.shape[1] == 0:
                raise NetworkError(f"layer {k}: empty weight matrix of shape {W.shape}")
            if not exact:
                if not np.all(np.isfinite(W)):
                    raise NetworkError(f"layer {k}: weight contains NaN or infinite entries")
                if not np.all(np.isfinite(b)):
                    raise NetworkError(f"layer {k}: bias contains NaN or infinite entries")
            prev_out = W.shape[0]
            Ws.append(_freeze(W))
            bs.append(_freeze(b))
        sk = None
        if skip is not None:
            if not (isinstance(skip, tuple | list) and len(skip) == 2):
                raise NetworkError("skip: expected a pair (S, s), the skip matrix and its bias")
            S = _as_matrix(skip[0], exact, "skip weight")
            s = _as_matrix(skip[1], exact, "skip bias")
            if S.shape != (Ws[-1].shape[0], Ws[0].shape[1]) or s.shape != (Ws[-1].shape[0],):
                raise NetworkError(
                    f"skip: shapes {S.shape} and {s.shape} do not match "
                    f"(out, in) = ({Ws[-1].shape[0]}, {Ws[0].shape[1]})"
                )
            if not exact and not (np.all(np.isfinite(S)) and np.all(np.isfinite(s))):
                raise NetworkError("skip: contains NaN or infinite entries")
            sk = (_freeze(S), _freeze(s))
        self._weights = tuple(Ws)
        self._biases = tuple(bs)
        self._skip = sk
        self._exact = bool(exact)

    def __getstate__(self) -> tuple[None, dict]:
        """The arrays and the kind, not the cached float copy (:meth:`float`): a copy
        rebuilds it, and pickles sent to workers stay their own size."""
        return None, {"_weights": self._weights, "_biases": self._biases, "_skip": self._skip,
                      "_exact": self._exact}

    def __setstate__(self, state: tuple[None, dict]) -> None:
        """Restore a pickled or copied network with its arrays read-only again (they came
        back writeable, and a write would have left a cached float copy stale).

        Example:
            >>> import copy
            >>> net = Network([[[Fraction(1, 3)]]], [[0]], exact=True)
            >>> c = copy.deepcopy(net)
            >>> c.weights[0].flags.writeable, c([Fraction(3)])[0]
            (False, Fraction(1, 1))
        """
        slots = state[1] if isinstance(state, tuple) else state
        for name, value in slots.items():
            if name == "_float_copy":
                continue
            object.__setattr__(self, name, value)
        for a in (*self._weights, *self._biases, *(self._skip or ())):
            a.setflags(write=False)

    # ------------------------------------------------------------------ shape
    @property
    def weights(self) -> tuple[np.ndarray, ...]:
        """The read-only layer matrices ``W_1 .. W_L``."""
        return self._weights

    @property
    def biases(self) -> tuple[np.ndarray, ...]:
        """The read-only layer offsets ``b_1 .. b_L``."""
        return self._biases

    @property
    def skip(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The affine input-to-output skip ``(S, s)`` or None."""
        return self._skip

    @property
    def layers(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """``[(W_1, b_1), ..., (W_L, b_L)]``."""
        return list(zip(self._weights, self._biases, strict=True))

    @property
    def is_exact(self) -> bool:
        """True when entries are Fractions."""
        return self._exact

    @property
    def input_dim(self) -> int:
        return int(self._weights[0].shape[1])

    @property
    def output_dim(self) -> int:
        return int(self._weights[-1].shape[0])

    @property
    def depth(self) -> int:
        """Number of affine layers (hidden layers + 1)."""
        return len(self._weights)

    @property
    def n_hidden_layers(self) -> int:
        return len(self._weights) - 1

    @property
    def widths(self) -> tuple[int, ...]:
        """Widths of the hidden layers."""
        return tuple(int(W.shape[0]) for W in self._weights[:-1])

    @property
    def n_neurons(self) -> int:
        """Number of hidden ReLU neurons."""
        return int(sum(self.widths))

    @property
    def n_params(self) -> int:
        """Number of weights and biases (the skip included)."""
        n = sum(W.size + b.size for W, b in self.layers)
        if self._skip is not None:
            n += self._skip[0].size + self._skip[1].size
        return int(n)

    def __repr__(self) -> str:
        arch = "-".join(str(w) for w in (self.input_dim, *self.widths, self.output_dim))
        extra = ", skip" if self._skip is not None else ""
        kind = "exact" if self._exact else "float64"
        return f"Network({arch}, {kind}{extra})"

    # ----------------------------------------------------------- conversions
    def exact(self) -> Network:
        """A copy with :class:`fractions.Fraction` entries (exact binary values).

        Example:
            >>> net = Network([[[0.5]]], [[0.25]]).exact()
            >>> net([[Fraction(1, 3)]])[0, 0]
            Fraction(5, 12)
        """
        if self._exact:
            return self
        skip = None if self._skip is None else (self._skip[0], self._skip[1])
        return Network(list(self._weights), list(self._biases), skip, exact=True)

    def float(self) -> Network:
        """A float64 copy (rounding each Fraction to the nearest float).  An exact
        network keeps its copy (its arrays are read-only): converting 490,000 Fractions
        took 0.5 s, and one equivalence check asked for it ten times.

        Example:
            >>> net = Network([[[Fraction(1, 3)]]], [[0]], exact=True)
            >>> net.float() is net.float(), float(net.float().weights[0][0, 0]) == 1 / 3
            (True, True)
        """
        if not self._exact:
            return self
        cached = getattr(self, "_float_copy", None)
        if cached is not None:
            return cached

        def f(a: np.ndarray, what: str) -> np.ndarray:
            try:
                return np.array([float(v) for v in a.reshape(-1)], dtype=np.float64).reshape(a.shape)
            except OverflowError:
                raise NetworkError(f"{what}: an entry is too large for float64 (above 1.8e308)") from None

        skip = None if self._skip is None else (f(self._skip[0], "skip weight"), f(self._skip[1], "skip bias"))
        copy = Network([f(W, f"layer {k + 1}: weight") for k, W in enumerate(self._weights)],
                       [f(b, f"layer {k + 1}: bias") for k, b in enumerate(self._biases)], skip)
        self._float_copy = copy
        return copy

    def entry_not_a_float(self) -> tuple[str, tuple[int, ...], Fraction] | None:
        """The first entry of an exact network that is not a float64 number, as ``(where,
        index, value)`` (where: "layer k weight", "layer k bias", "skip weight" or "skip
        bias"), or None when there is none (then :meth:`float` is the same network; a
        float network has none).

        Example:
            >>> Network([[[Fraction(1, 2), Fraction(1, 3)]]], [[0]], exact=True).entry_not_a_float()
            ('layer 1 weight', (0, 1), Fraction(1, 3))
        """
        if not self._exact:
            return None
        named = [(f"layer {k + 1} weight", W) for k, W in enumerate(self._weights)]
        named += [(f"layer {k + 1} bias", b) for k, b in enumerate(self._biases)]
        if self._skip is not None:
            named += [("skip weight", self._skip[0]), ("skip bias", self._skip[1])]
        for where, a in named:
            for idx, v in np.ndenumerate(a):
                if not is_float64_number(v):
                    return where, tuple(int(i) for i in idx), v
        return None

    # --------------------------------------------------------------- forward
    def _prepare_input(self, X: ArrayLike, check_finite: bool = True) -> tuple[np.ndarray, bool]:
        if self._exact:
            X = _to_fraction_array(X, "input")
        else:
            try:
                X = np.asarray(X, dtype=np.float64)
            except OverflowError:  # a Python integer such as 10**400
                raise NetworkError("input: an entry is too large for float64 (above 1.8e308); "
                                   "net.exact() evaluates it exactly") from None
            except (TypeError, ValueError) as e:  # complex, text, ragged rows
                raise NetworkError(f"input: entries are not real numbers in rows of equal length ({e})") from None
            # A NaN or inf input gives NaN outputs that look like answers downstream.
            if check_finite and not np.isfinite(X).all():
                bad = np.argwhere(~np.isfinite(np.atleast_2d(X)))[0]
                raise NetworkError(
                    f"input row {int(bad[0])}, coordinate {int(bad[-1])} is not finite "
                    f"({float(np.atleast_2d(X)[tuple(bad)])}); pass check_finite=False to allow it"
                )
        single = X.ndim == 1
        if single:
            X = X[None, :]
        if X.ndim != 2 or X.shape[1] != self.input_dim:
            raise NetworkError(
                f"input has shape {np.shape(X)}; the network takes {self.input_dim} inputs "
                "(a vector or an (n, d) batch)"
            )
        return X, single

    def preactivations(self, X: ArrayLike) -> list[np.ndarray]:
        """Pre-activation values of every hidden layer, each of shape (n, width)."""
        X, _ = self._prepare_input(X)
        out = []
        H = X
        for W, b in zip(self._weights[:-1], self._biases[:-1], strict=True):
            Z = H @ W.T + b
            out.append(Z)
            H = relu(Z)
        return out

    def rounding_bounds(self, X: ArrayLike) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per layer (the hidden ones, then the output with the skip), the float64 pass's
        pre-activations ``Z`` (n, width) at the rows of ``X`` and a bound ``E`` on each
        one's rounding error: ``E_k = |W_k| E_(k-1) + gamma_n (|W_k| |h_(k-1)| + |b_k|)``
        (a ReLU is 1-Lipschitz; ``gamma_n = n u / (1 - n u)`` for sums of ``n`` terms, ``u
        = 2^-53``), plus ``n`` times the smallest subnormal (results below the normal
        range round absolutely), times ``1 + 8 L u`` for the bound's own evaluation.  It scales with the
        terms each sum adds up, not with the sums: weights near 1e8 whose terms cancel
        leave errors near 1e-8.  An exact network is bounded through its float copy.

        Example:
            >>> net = Network([[[1e8], [1.0]], [[1.0, -1e8]]], [[0.0, 0.0], [0.0]])
            >>> Z, E = net.rounding_bounds([[1.0]])[-1]
            >>> float(Z[0, 0]), bool(E[0, 0] > 1e-8)
            (0.0, True)
        """
        f = self.float()
        X, _ = f._prepare_input(X)
        u = 2.0 ** -53
        safety = 1.0 + 8.0 * f.depth * u
        H, E = X, np.zeros_like(X)
        out = []
        for k, (W, b) in enumerate(zip(f._weights, f._biases, strict=True)):
            A = np.abs(W)
            n = W.shape[1] + 1
            terms = np.abs(H) @ A.T + np.abs(b)
            Z = H @ W.T + b
            if k == f.depth - 1 and f._skip is not None:
                S, s = f._skip
                n += S.shape[1] + 1
                terms = terms + np.abs(X) @ np.abs(S).T + np.abs(s)
                Z = Z + X @ S.T + s
            # (+ n eta: a sum or product landing in the subnormal range rounds by up to
            # eta = 2^-1074 absolutely, which a later weight of 1e300 magnifies)
            E = (E @ A.T + n * u / (1.0 - n * u) * terms + n * SMALLEST_SUBNORMAL) * safety
            out.append((Z, E))
            H = relu(Z)
        return out

    def forward(self, X: ArrayLike, check_finite: bool = True) -> np.ndarray:
        """Batched forward pass: ``X`` of shape (n, d) -> (n, m); a vector gives a vector.

        Non-finite inputs are refused with a :class:`NetworkError` unless
        ``check_finite=False`` (which skips the check, for speed in inner loops).

        Example:
            >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
            >>> net([[-2.0], [3.0]]).ravel().tolist()
            [2.0, 3.0]
            >>> net([float("nan")])
            Traceback (most recent call last):
            ...
            relulab.network.NetworkError: input row 0, coordinate 0 is not finite (nan); pass check_finite=False to allow it
        """
        X, single = self._prepare_input(X, check_finite)
        H = X
        for W, b in zip(self._weights[:-1], self._biases[:-1], strict=True):
            H = relu(H @ W.T + b)
        Y = H @ self._weights[-1].T + self._biases[-1]
        if self._skip is not None:
            Y = Y + X @ self._skip[0].T + self._skip[1]
        return Y[0] if single else Y

    __call__ = forward

    def activation_pattern(self, X: ArrayLike) -> list[np.ndarray]:
        """Boolean activation pattern (pre-activation > 0) of every hidden layer.

        For a batch ``X`` of shape (n, d) each entry has shape (n, width); for a single
        point each entry has shape (width,).
        """
        single = np.ndim(X) == 1
        pats = [np.asarray(Z > 0, dtype=bool) for Z in self.preactivations(X)]
        return [p[0] for p in pats] if single else pats

    def pattern_vector(self, X: ArrayLike) -> np.ndarray:
        """The activation pattern of all hidden layers concatenated (n, n_neurons)."""
        pats = self.activation_pattern(np.atleast_2d(np.asarray(X, dtype=object if self._exact else float)))
        if not pats:
            return np.zeros((np.atleast_2d(X).shape[0], 0), dtype=bool)
        return np.concatenate(pats, axis=1)

    def split_pattern(self, flat: ArrayLike) -> list[np.ndarray]:
        """A flat pattern over all hidden neurons (as :meth:`pattern_vector` gives one) as
        one boolean vector per hidden layer, the form :meth:`region_inequalities` and
        :meth:`affine_for_pattern` take.

        Example:
            >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]], [[1.0]]], [[0.0, 0.0], [0.0], [0.0]])
            >>> [p.tolist() for p in net.split_pattern([1, 0, 1])]
            [[True, False], [True]]
        """
        flat = np.asarray(flat, dtype=bool).reshape(-1)
        if flat.shape[0] != self.n_neurons:
            raise NetworkError(f"flat pattern has {flat.shape[0]} entries; the network has "
                               f"{self.n_neurons} hidden neurons")
        return np.split(flat, np.cumsum(self.widths)[:-1]) if self.widths else []

    def affine_for_pattern(self, pattern: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """The affine map ``(A, c)`` the network computes where the activation pattern is
        ``pattern`` (one boolean vector per hidden layer)."""
        if len(pattern) != self.n_hidden_layers:
            raise NetworkError(
                f"pattern has {len(pattern)} layers; the network has {self.n_hidden_layers}"
            )
        A = self._weights[0]
        c = self._biases[0]
        for k, p in enumerate(pattern):
            p = np.asarray(p, dtype=bool).reshape(-1)
            if p.shape[0] != self.widths[k]:
                raise NetworkError(
                    f"pattern layer {k + 1} has {p.shape[0]} entries; width is {self.widths[k]}"
                )
            zero = Fraction(0) if self._exact else 0.0
            A = np.where(p[:, None], A, zero)
            c = np.where(p, c, zero)
            W, b = self._weights[k + 1], self._biases[k + 1]
            A = W @ A
            c = W @ c + b
        if self._skip is not None:
            A = A + self._skip[0]
            c = c + self._skip[1]
        return A, c

    def region_inequalities(self, pattern: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """``(G, h)``: the closed linear region ``G x <= h`` of an activation pattern, one row
        per hidden neuron (active: pre-activation ``>= 0``; inactive: ``<= 0``), unscaled.

        Example:
            >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, -1.0], [0.0]])
            >>> G, h = net.region_inequalities([np.array([True, False])])
            >>> G.tolist(), h.tolist()      # x >= 0 and -x - 1 <= 0
            ([[-1.0], [-1.0]], [0.0, 1.0])
        """
        if len(pattern) != self.n_hidden_layers:
            raise NetworkError(
                f"pattern has {len(pattern)} layers; the network has {self.n_hidden_layers}")
        zero = Fraction(0) if self._exact else 0.0
        rows, rhs = [], []
        A, c = self._weights[0], self._biases[0]
        for k, p in enumerate(pattern):
            p = np.asarray(p, dtype=bool).reshape(-1)
            if p.shape[0] != self.widths[k]:
                raise NetworkError(
                    f"pattern layer {k + 1} has {p.shape[0]} entries; width is {self.widths[k]}")
            s = np.where(p, -1, 1)  # active: -z <= 0; inactive: z <= 0
            rows.append(s[:, None] * A)
            rhs.append(-s * c)
            A, c = np.where(p[:, None], A, zero), np.where(p, c, zero)
            A, c = self._weights[k + 1] @ A, self._weights[k + 1] @ c + self._biases[k + 1]
        if not rows:
            return np.zeros((0, self.input_dim), dtype=object if self._exact else float), \
                np.zeros(0, dtype=object if self._exact else float)
        return np.concatenate(rows, axis=0), np.concatenate(rhs)

    def local_affine(self, x: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """The exact affine map ``(A, c)`` with ``f(y) = A y + c`` on the linear region of ``x``.

        The region is that of the activation pattern at ``x`` (ties, pre-activation
        exactly 0, count as inactive; by continuity the map is still exact at ``x``).

        Example:
            >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
            >>> A, c = net.local_affine([-2.0]); A.tolist(), c.tolist()
            ([[-1.0]], [0.0])
        """
        x = np.asarray(x, dtype=object if self._exact else np.float64).reshape(-1)
        return self.affine_for_pattern(self.activation_pattern(x))

    def jacobian(self, x: ArrayLike) -> np.ndarray:
        """The Jacobian (m, d) at ``x`` (the linear part of :meth:`local_affine`)."""
        return self.local_affine(x)[0]

    # ------------------------------------------------------------- algebra
    def without_skip(self) -> Network:
        """An equivalent network with no skip: the input rides through each hidden layer
        as ``relu(x) - relu(-x)`` (2 d extra neurons per hidden layer)."""
        if self._skip is None:
            return self
        S, s = self._skip
        d = self.input_dim
        eye = _eye(d, self._exact)
        if self.n_hidden_layers == 0:
            return Network([self._weights[0] + S], [self._biases[0] + s], exact=self._exact)
        Ws, bs = [], []
        carry_in = np.concatenate([eye, -eye], axis=0)  # (2d, d)
        zeros_d2 = _zeros((2 * d,), self._exact)
        for k in range(self.n_hidden_layers):
            W, b = self._weights[k], self._biases[k]
            if k == 0:
                Ws.append(np.concatenate([W, carry_in], axis=0))
            else:
                # carry block reads the previous carry (2d) and rebuilds +-x
                pass_mat = np.concatenate([np.concatenate([eye, -eye], 1), np.concatenate([-eye, eye], 1)], 0)
                Ws.append(_block_diag(W, pass_mat, self._exact))
            bs.append(np.concatenate([b, zeros_d2]))
        WL = self._weights[-1]
        Ws.append(np.concatenate([WL, S, -S], axis=1))
        bs.append(self._biases[-1] + s)
        return Network(Ws, bs, exact=self._exact)

    def deepen(self, n_hidden_layers: int) -> Network:
        """An equivalent network with ``n_hidden_layers`` hidden layers (at least the current
        number): the output is carried through the extra layers as ``relu(y) - relu(-y)``."""
        if not isinstance(n_hidden_layers, int | np.integer) or isinstance(n_hidden_layers, bool):
            raise NetworkError(f"deepen: n_hidden_layers must be an integer, got {n_hidden_layers!r}")
        extra = n_hidden_layers - self.n_hidden_layers
        if extra < 0:
            raise NetworkError(
                f"cannot deepen a network with {self.n_hidden_layers} hidden layers "
                f"to {n_hidden_layers}"
            )
        if extra == 0:
            return self
        net = self.without_skip()
        m = net.output_dim
        eye = _eye(m, self._exact)
        Ws = list(net.weights[:-1])
        bs = list(net.biases[:-1])
        WL, bL = net.weights[-1], net.biases[-1]
        Ws.append(np.concatenate([WL, -WL], axis=0))
        bs.append(np.concatenate([bL, -bL]))
        pass_mat = np.concatenate([np.concatenate([eye, -eye], 1), np.concatenate([-eye, eye], 1)], 0)
        for _ in range(extra - 1):
            Ws.append(pass_mat)
            bs.append(_zeros((2 * m,), self._exact))
        Ws.append(np.concatenate([eye, -eye], axis=1))
        bs.append(_zeros((m,), self._exact))
        return Network(Ws, bs, exact=self._exact)

    def compose(self, inner: Network) -> Network:
        """``self`` after ``inner``: the network computing ``x -> self(inner(x))``.

        Example:
            >>> f = Network([[[2.0]]], [[1.0]]); g = Network([[[3.0]]], [[0.0]])
            >>> float(f.compose(g)([1.0])[0])
            7.0
        """
        _check_same_kind(self, inner)
        if inner.output_dim != self.input_dim:
            raise NetworkError(
                f"cannot compose: inner network gives {inner.output_dim} outputs, "
                f"outer takes {self.input_dim} inputs"
            )
        g = inner.without_skip()
        f = self.without_skip()
        W1, b1 = f.weights[0], f.biases[0]
        WL, bL = g.weights[-1], g.biases[-1]
        Ws = [*g.weights[:-1], W1 @ WL, *f.weights[1:]]
        bs = [*g.biases[:-1], W1 @ bL + b1, *f.biases[1:]]
        return Network(Ws, bs, exact=self._exact)

    def __matmul__(self, inner: Network) -> Network:
        """``f @ g`` is ``f.compose(g)``."""
        return self.compose(inner)

    def concat(self, other: Network) -> Network:
        """Same input, outputs stacked: ``x -> [self(x), other(x)]``."""
        _check_same_kind(self, other)
        if other.input_dim != self.input_dim:
            raise NetworkError(
                f"cannot concatenate: input sizes differ ({self.input_dim} vs {other.input_dim})"
            )
        L = max(self.n_hidden_layers, other.n_hidden_layers)
        f = self.deepen(L) if self.n_hidden_layers < L else self
        g = other.deepen(L) if other.n_hidden_layers < L else other
        Ws = [np.concatenate([f.weights[0], g.weights[0]], axis=0)]
        Ws += [_block_diag(a, c, self._exact) for a, c in zip(f.weights[1:], g.weights[1:], strict=True)]
        bs = [np.concatenate([a, c]) for a, c in zip(f.biases, g.biases, strict=True)]
        skip = _stack_skips(f, g)
        return Network(Ws, bs, skip, exact=self._exact)

    def parallel(self, other: Network) -> Network:
        """Side by side on split inputs: ``[x1, x2] -> [self(x1), other(x2)]``."""
        _check_same_kind(self, other)
        L = max(self.n_hidden_layers, other.n_hidden_layers)
        f = self.deepen(L) if self.n_hidden_layers < L else self
        g = other.deepen(L) if other.n_hidden_layers < L else other
        Ws = [_block_diag(a, c, self._exact) for a, c in zip(f.weights, g.weights, strict=True)]
        bs = [np.concatenate([a, c]) for a, c in zip(f.biases, g.biases, strict=True)]
        skip = None
        if f.skip is not None or g.skip is not None:
            fs = f.skip or (_zeros((f.output_dim, f.input_dim), self._exact), _zeros((f.output_dim,), self._exact))
            gs = g.skip or (_zeros((g.output_dim, g.input_dim), self._exact), _zeros((g.output_dim,), self._exact))
            skip = (_block_diag(fs[0], gs[0], self._exact), np.concatenate([fs[1], gs[1]]))
        return Network(Ws, bs, skip, exact=self._exact)

    def __add__(self, other: Network) -> Network:
        """Pointwise sum ``x -> self(x) + other(x)`` as one network."""
        if not isinstance(other, Network):
            return NotImplemented
        if other.output_dim != self.output_dim:
            raise NetworkError(
                f"cannot add: output sizes differ ({self.output_dim} vs {other.output_dim})"
            )
        m = self.output_dim
        both = self.concat(other)
        eye = _eye(m, self._exact)
        summer = Network([np.concatenate([eye, eye], axis=1)], [_zeros((m,), self._exact)], exact=self._exact)
        return _affine_after(summer, both)

    def __mul__(self, scalar: float | int | Fraction) -> Network:
        """Scalar multiple ``x -> scalar * self(x)``."""
        if isinstance(scalar, Network | str | bytes) or not np.isscalar(scalar) and not isinstance(scalar, Fraction):
            return NotImplemented
        try:
            s = _exact_value(scalar) if self._exact else float(scalar)
        except (ValueError, OverflowError, TypeError):
            raise NetworkError(f"cannot scale a{'n exact' if self._exact else ' float64'} "
                               f"network by {_short(scalar)}") from None
        if not self._exact and not np.isfinite(s):
            raise NetworkError(f"cannot scale a float64 network by {_short(scalar)}")
        Ws = [*self._weights[:-1], self._weights[-1] * s]
        bs = [*self._biases[:-1], self._biases[-1] * s]
        skip = None if self._skip is None else (self._skip[0] * s, self._skip[1] * s)
        return Network(Ws, bs, skip, exact=self._exact)

    __rmul__ = __mul__

    def __neg__(self) -> Network:
        return self * -1

    def __sub__(self, other: Network) -> Network:
        """Pointwise difference ``x -> self(x) - other(x)``."""
        if not isinstance(other, Network):
            return NotImplemented
        return self + (-other)

    def with_output_map(self, C: ArrayLike, d: ArrayLike | None = None) -> Network:
        """The network ``x -> C self(x) + d`` (an affine map folded into the last layer)."""
        C = _as_matrix(C, self._exact, "output map")
        if C.ndim == 1:
            C = C[None, :]
        if C.ndim != 2:
            raise NetworkError(f"output map must be a matrix (outputs, {self.output_dim}), got shape {C.shape}")
        if C.shape[1] != self.output_dim:
            raise NetworkError(f"output map takes {C.shape[1]} values; network gives {self.output_dim}")
        dd = _zeros((C.shape[0],), self._exact) if d is None else _as_matrix(d, self._exact, "output offset").reshape(-1)
        if dd.shape[0] != C.shape[0]:
            raise NetworkError(f"output offset has {dd.shape[0]} entries; the output map gives {C.shape[0]}")
        if not self._exact and not (np.all(np.isfinite(C)) and np.all(np.isfinite(dd))):
            raise NetworkError("output map: NaN or infinite entries")
        outer = Network([C], [dd], exact=self._exact)
        return _affine_after(outer, self)

    # ------------------------------------------------------------- equality
    def __eq__(self, other: object) -> bool:
        """Structural equality: same architecture and identical entries."""
        if not isinstance(other, Network):
            return NotImplemented
        if self.depth != other.depth or (self._skip is None) != (other._skip is None):
            return False
        pairs = list(zip(self._weights + self._biases, other._weights + other._biases, strict=True))
        if self._skip is not None:
            pairs += list(zip(self._skip, other._skip, strict=True))
        return all(a.shape == b.shape and bool(np.all(a == b)) for a, b in pairs)

    def __hash__(self) -> int:
        return hash((self.input_dim, self.widths, self.output_dim, self._skip is not None))

    def allclose(self, other: Network, rtol: float | None = None, atol: float = 0.0) -> bool:
        """Same architecture and entries equal up to a float tolerance (``rtol``
        default: :data:`relulab.tolerance.ROUNDOFF`)."""
        rtol = or_default(rtol, ROUNDOFF)
        if not isinstance(other, Network):
            raise NetworkError(f"allclose: compares two networks, got {type(other).__name__}")
        if self.depth != other.depth or (self._skip is None) != (other._skip is None):
            return False
        a_list = [*self._weights, *self._biases, *(self._skip or ())]
        b_list = [*other._weights, *other._biases, *(other._skip or ())]
        if self._exact or other._exact:
            # entries beyond float64 (10^400) are compared exactly: |a - b| <= atol + rtol |b|
            tol_r, tol_a = Fraction(float(rtol)), Fraction(float(atol))
            return all(a.shape == b.shape and all(abs(Fraction(x) - Fraction(y)) <= tol_a + tol_r * abs(Fraction(y))
                                                  for x, y in zip(a.reshape(-1), b.reshape(-1), strict=True))
                       for a, b in zip(a_list, b_list, strict=True))
        return all(
            a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol)
            for a, b in zip(a_list, b_list, strict=True)
        )


# ------------------------------------------------------------------ helpers
def _check_same_kind(a: Network, b: Network) -> None:
    if not isinstance(b, Network):   # compose(3) raised AttributeError 'is_exact'
        raise NetworkError(f"cannot combine a network with {type(b).__name__} {b!r:.40}: pass a Network")
    if a.is_exact != b.is_exact:
        raise NetworkError("cannot combine an exact (Fraction) network with a float64 one; "
                           "call .exact() or .float() on one of them first")


def _eye(n: int, exact: bool) -> np.ndarray:
    if exact:
        out = np.full((n, n), Fraction(0), dtype=object)
        for i in range(n):
            out[i, i] = Fraction(1)
        return out
    return np.eye(n)


def _zeros(shape: tuple[int, ...], exact: bool) -> np.ndarray:
    if exact:
        return np.full(shape, Fraction(0), dtype=object)
    return np.zeros(shape)


def _block_diag(a: np.ndarray, c: np.ndarray, exact: bool) -> np.ndarray:
    out = _zeros((a.shape[0] + c.shape[0], a.shape[1] + c.shape[1]), exact)
    out[: a.shape[0], : a.shape[1]] = a
    out[a.shape[0]:, a.shape[1]:] = c
    return out


def _stack_skips(f: Network, g: Network) -> tuple[np.ndarray, np.ndarray] | None:
    if f.skip is None and g.skip is None:
        return None
    ex = f.is_exact
    fs = f.skip or (_zeros((f.output_dim, f.input_dim), ex), _zeros((f.output_dim,), ex))
    gs = g.skip or (_zeros((g.output_dim, g.input_dim), ex), _zeros((g.output_dim,), ex))
    return np.concatenate([fs[0], gs[0]], axis=0), np.concatenate([fs[1], gs[1]])


def _affine_after(outer: Network, inner: Network) -> Network:
    """Fold the single affine layer ``outer`` into the last layer of ``inner``."""
    C, d = outer.weights[0], outer.biases[0]
    Ws = [*inner.weights[:-1], C @ inner.weights[-1]]
    bs = [*inner.biases[:-1], C @ inner.biases[-1] + d]
    skip = None if inner.skip is None else (C @ inner.skip[0], C @ inner.skip[1])
    return Network(Ws, bs, skip, exact=inner.is_exact)
