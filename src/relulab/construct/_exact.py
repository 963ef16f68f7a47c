"""Fast exact forward passes: integer numerators over one shared denominator.

``Network.forward`` on Fraction arrays normalises a gcd at every product; checking a
construction on thousands of inputs is much faster with plain Python integers: each
layer is stored as an integer matrix over one denominator, a batch of values as an
integer array over one denominator, and the denominator is reduced once a layer.
The results are the same Fractions, exactly.

Example:
    >>> from relulab.construct import max_n
    >>> ev = ExactEvaluator(max_n(3))
    >>> ev([[1, 5, Fraction(11, 2)]]).tolist()
    [[Fraction(11, 2)]]
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..network import Network

__all__ = ["ExactEvaluator", "to_int_batch"]


def _int_form(a: np.ndarray) -> tuple[np.ndarray, int]:
    """(numerators as a Python-int object array, common denominator)."""
    flat = [Fraction(v) for v in np.asarray(a, dtype=object).reshape(-1)]
    d = 1
    for v in flat:
        d = d * v.denominator // math.gcd(d, v.denominator)
    num = np.empty(len(flat), dtype=object)
    for i, v in enumerate(flat):
        num[i] = v.numerator * (d // v.denominator)
    return num.reshape(np.shape(a)), d


def to_int_batch(X: object) -> tuple[np.ndarray, int]:
    """A batch of rationals (n, d) as integer numerators over one denominator."""
    X = np.asarray(X, dtype=object)
    if X.ndim == 1:
        X = X[None, :]
    return _int_form(X)


def _reduce(Zn: np.ndarray, D: int) -> tuple[np.ndarray, int]:
    g = D
    for v in Zn.reshape(-1):
        if g == 1:
            break
        g = math.gcd(g, v)
    if g > 1:
        Zn = Zn // g
        D //= g
    return Zn, D


class ExactEvaluator:
    """Exact batched forward pass of a network (float entries count by their binary value).

    Example:
        >>> import numpy as np
        >>> ev = ExactEvaluator(Network([[[Fraction(1, 3)]]], [[0]], exact=True))
        >>> ev.forward_int(np.array([[3]], dtype=object), 1)
        (array([[1]], dtype=object), 1)
    """

    def __init__(self, net: Network) -> None:
        net = net.exact()
        self.net = net
        self.layers = [(*_int_form(W.T), *_int_form(b)) for W, b in net.layers]
        self.skip = None if net.skip is None else (*_int_form(net.skip[0].T), *_int_form(net.skip[1]))

    def _affine(self, Hn: np.ndarray, dH: int, Wn: np.ndarray, dW: int, bn: np.ndarray,
                db: int) -> tuple[np.ndarray, int]:
        P = dW * dH
        D = P * db // math.gcd(P, db)
        return Hn.dot(Wn) * (D // P) + bn * (D // db), D

    def forward_int(self, Xn: np.ndarray, dX: int) -> tuple[np.ndarray, int]:
        """Forward pass on integer numerators ``Xn`` (n, d) over ``dX``."""
        Hn, dH = Xn, dX
        for Wn, dW, bn, db in self.layers[:-1]:
            Zn, D = self._affine(Hn, dH, Wn, dW, bn, db)
            Zn[Zn < 0] = 0
            Hn, dH = _reduce(Zn, D)
        Yn, D = self._affine(Hn, dH, *self.layers[-1])
        if self.skip is not None:
            Sn, dS, sn, ds = self.skip
            Kn, K = self._affine(Xn, dX, Sn, dS, sn, ds)
            DD = D * K // math.gcd(D, K)
            Yn, D = Yn * (DD // D) + Kn * (DD // K), DD
        return _reduce(Yn, D)

    def __call__(self, X: object) -> np.ndarray:
        """Exact outputs (an (n, m) array of Fractions) for a batch of rational inputs."""
        Xn, d = to_int_batch(X)
        Yn, D = self.forward_int(Xn, d)
        out = np.empty(Yn.shape, dtype=object)
        for idx, v in np.ndenumerate(Yn):
            out[idx] = Fraction(v, D)
        return out
