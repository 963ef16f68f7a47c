"""Editable layer lists of a network, for float64 and Fraction networks alike.

:class:`Layers` is a mutable working copy of a :class:`~relulab.Network`'s parameters:
delete or permute hidden neurons, collapse a layer whose neurons are all stable, fold
what follows an empty layer into a constant, add a skip, and turn it back into a
``Network``.  Transforms (canonical forms, reductions, mechanism replacement) edit a
``Layers`` and build one network at the end.  The small helpers make one code path
serve both number kinds.

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> lay = Layers.of(Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]]))
    >>> lay.delete(0, [1]); lay.network().widths
    (1,)
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .network import Network

__all__ = ["Layers", "prefix_network", "as_kind", "max_abs", "bool_mask", "zero", "zeros"]


# ----------------------------------------------------------------------------- arrays
def zero(exact: bool) -> Any:
    """The zero of the number kind (``Fraction(0)`` or ``0.0``).

    Example:
        >>> zero(True), zero(False)
        (Fraction(0, 1), 0.0)
    """
    return Fraction(0) if exact else 0.0


def zeros(shape: tuple[int, ...], exact: bool) -> np.ndarray:
    """An array of zeros of the number kind (object array of Fractions when exact).

    Example:
        >>> zeros((2,), True).tolist()
        [Fraction(0, 1), Fraction(0, 1)]
    """
    if exact:
        return np.full(shape, Fraction(0), dtype=object)
    return np.zeros(shape)


def as_kind(a: Any, exact: bool) -> np.ndarray:
    """A writable copy of ``a`` as a Fraction (object) or float64 array.

    Example:
        >>> as_kind([0.5, 2], True).tolist()
        [Fraction(1, 2), Fraction(2, 1)]
    """
    if exact:
        arr = np.asarray(a, dtype=object)
        out = np.empty(arr.shape, dtype=object)
        flat = out.reshape(-1)
        for i, v in enumerate(arr.reshape(-1)):
            flat[i] = v if isinstance(v, Fraction) else Fraction(v)
        return out
    return np.array(a, dtype=np.float64, copy=True)


def max_abs(a: np.ndarray) -> Any:
    """Largest absolute entry (a Fraction for exact arrays); 0 for an empty array.

    Example:
        >>> max_abs(np.array([1.0, -3.0])), max_abs(np.zeros(0))
        (3.0, 0)
    """
    if a.size == 0:
        return 0
    if a.dtype == object:
        return max(abs(v) for v in a.reshape(-1))
    return float(np.max(np.abs(a)))


def bool_mask(a: np.ndarray) -> np.ndarray:
    """A comparison on an object array gives objects; make it a real boolean array.

    Example:
        >>> bool_mask(as_kind([1, -1], True) > 0).dtype
        dtype('bool')
    """
    return np.asarray(a, dtype=bool)


@dataclass
class Layers:
    """A mutable working copy of a network's parameters (hidden layers + output layer).

    Example:
        >>> from relulab import Network
        >>> lay = Layers.of(Network([[[2.0]], [[3.0]]], [[0.0], [1.0]]))
        >>> lay.collapse(0, np.array([True])); lay.network().weights[0].tolist()
        [[6.0]]
    """

    Ws: list[np.ndarray]
    bs: list[np.ndarray]
    skip: tuple[np.ndarray, np.ndarray] | None
    exact: bool
    input_dim: int

    @staticmethod
    def of(net: Network) -> Layers:
        ex = net.is_exact
        skip = None
        if net.skip is not None:
            skip = (as_kind(net.skip[0], ex), as_kind(net.skip[1], ex))
        return Layers(
            [as_kind(W, ex) for W in net.weights],
            [as_kind(b, ex) for b in net.biases],
            skip,
            ex,
            net.input_dim,
        )

    @property
    def n_hidden(self) -> int:
        return len(self.Ws) - 1

    @property
    def widths(self) -> tuple[int, ...]:
        return tuple(int(W.shape[0]) for W in self.Ws[:-1])

    def delete(self, k: int, idx: list[int] | np.ndarray) -> None:
        """Remove neurons ``idx`` of hidden layer ``k`` (their outgoing weights go too)."""
        idx = np.asarray(sorted(set(int(i) for i in idx)), dtype=int)
        if idx.size == 0:
            return
        self.Ws[k] = np.delete(self.Ws[k], idx, axis=0)
        self.bs[k] = np.delete(self.bs[k], idx, axis=0)
        self.Ws[k + 1] = np.delete(self.Ws[k + 1], idx, axis=1)

    def permute(self, k: int, order: list[int] | np.ndarray) -> None:
        order = np.asarray(order, dtype=int)
        self.Ws[k] = self.Ws[k][order]
        self.bs[k] = self.bs[k][order]
        self.Ws[k + 1] = self.Ws[k + 1][:, order]

    def collapse(self, k: int, active: np.ndarray) -> None:
        """Replace hidden layer ``k`` by the affine map it computes when the neurons in
        ``active`` are the identity and the others are zero (all neurons stable), merging
        it into the next layer.  The network loses one hidden layer."""
        z = zero(self.exact)
        Wk = np.where(active[:, None], self.Ws[k], z)
        bk = np.where(active, self.bs[k], z)
        Wn = self.Ws[k + 1] @ Wk
        bn = self.Ws[k + 1] @ bk + self.bs[k + 1]
        self.Ws[k : k + 2] = [Wn]
        self.bs[k : k + 2] = [bn]
        if len(self.Ws) == 1 and self.skip is not None:
            # No hidden layer left: the network is affine; keep it as one layer.
            self.Ws[0] = self.Ws[0] + self.skip[0]
            self.bs[0] = self.bs[0] + self.skip[1]
            self.skip = None

    def constant_from(self, k: int) -> None:
        """Hidden layer ``k`` has no neurons left, so the next layer's pre-activation is its
        bias alone: everything from there on is constant.  Fold it to an affine network."""
        h = self.bs[k + 1]
        for j in range(k + 1, len(self.Ws) - 1):
            h = np.where(bool_mask(h > 0), h, zero(self.exact))
            h = self.Ws[j + 1] @ h + self.bs[j + 1]
        h0 = h
        m = h0.shape[0]
        if self.skip is not None:
            W0 = self.skip[0].copy()
            b0 = self.skip[1] + h0
        else:
            W0 = zeros((m, self.input_dim), self.exact)
            b0 = h0
        self.Ws = [W0]
        self.bs = [b0]
        self.skip = None

    def add_skip(self, S: np.ndarray, s: np.ndarray) -> None:
        if self.skip is None:
            self.skip = (S, s)
        else:
            self.skip = (self.skip[0] + S, self.skip[1] + s)

    def network(self) -> Network:
        return Network(self.Ws, self.bs, self.skip, exact=self.exact)


def prefix_network(net: Network, k: int, i: int) -> Network:
    """The network whose single output is the pre-activation of neuron ``i`` of hidden
    layer ``k`` (0-based).

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 2.0], [0.0]])
        >>> float(prefix_network(net, 0, 1)(np.array([[1.0]]))[0, 0])
        1.0
    """
    Ws = [*net.weights[:k], net.weights[k][i : i + 1]]
    bs = [*net.biases[:k], net.biases[k][i : i + 1]]
    return Network(Ws, bs, exact=net.is_exact)
