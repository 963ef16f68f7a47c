"""How close an extracted network is to the original: parameters and function.

Parameters are compared after removing the symmetries every ReLU network has: both
networks are put in the normal form of :func:`relulab.symmetry.canonical` (each neuron's
incoming row scaled to largest entry 1, the factor pushed forward; dead, constant and
zero-outgoing neurons removed, parallel ones merged), then the neurons of each layer are
matched (Hungarian assignment on row distances, the columns of the next layer permuted
alike).  The function is compared by :func:`relulab.symmetry.equivalent` on a box
(``equal`` / ``different`` with a re-checked witness / ``unknown``) and by the largest
output difference on random points.

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> from relulab.symmetry import random_symmetry
    >>> f = Network([[[1.0, 2.0], [-1.0, 0.5]], [[1.0, -1.0]]], [[0.1, 0.2], [0.0]])
    >>> r = fidelity(f, random_symmetry(f, 3))
    >>> r.aligned, r.max_abs_error < 1e-12, r.equivalence
    (True, True, 'equal')
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..domain import Box
from ..network import Network
from ..results import Result
from ..tolerance import TINY

__all__ = ["Fidelity", "fidelity"]


@dataclass(frozen=True)
class Fidelity(Result):
    """Parameter and functional agreement of a recovered network with the original.

    Attributes:
        aligned: both normal forms have the same architecture, so parameters compare.
        max_abs_error: largest absolute parameter difference after alignment.
        max_rel_error: the same divided by the largest absolute parameter of the original.
        bits_abs, bits_rel: ``-log2`` of the two errors (bits of precision).
        equivalence: ``equal`` / ``different`` / ``unknown`` (relulab.symmetry.equivalent).
        equivalence_method, witness, witness_gap: how it was decided; a re-checked witness.
        max_output_error: largest ``|f - g|`` on ``n_samples`` random points of the box.
        widths_reference, widths_recovered: hidden widths of the two normal forms.
        complete (property, in the JSON): the functional verdict was reached (``equal`` or
            ``different``), not cut short by the timeout (``unknown``).  The sampled
            ``max_output_error`` is a sample whatever this says.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0, -1.0]], [[2.0]]], [[0.0], [1.0]])
        >>> f = fidelity(net, net, n_samples=100)
        >>> f.equivalence, f.complete, f.max_output_error, f.to_dict()["complete"]
        ('equal', True, 0.0, True)
    """

    aligned: bool
    max_abs_error: float | None
    max_rel_error: float | None
    bits_abs: float | None
    bits_rel: float | None
    equivalence: str
    equivalence_method: str
    witness: np.ndarray | None
    witness_gap: float | None
    max_output_error: float
    n_samples: int
    widths_reference: tuple[int, ...]
    widths_recovered: tuple[int, ...]
    domain: dict
    message: str

    @property
    def complete(self) -> bool:
        return self.equivalence != "unknown"

    def to_dict(self) -> dict:
        return {**super().to_dict(), "complete": self.complete}


def _bits(e: float | None) -> float | None:
    if e is None:
        return None
    return math.inf if e == 0 else -math.log2(e)


def _align(F: Network, G: Network) -> tuple[float, float] | None:
    from scipy.optimize import linear_sum_assignment

    if F.widths != G.widths:
        return None
    FW = [np.asarray(W, float) for W in F.weights]
    Fb = [np.asarray(b, float) for b in F.biases]
    GW = [np.asarray(W, float).copy() for W in G.weights]
    Gb = [np.asarray(b, float).copy() for b in G.biases]
    for k in range(len(FW) - 1):
        RF = np.hstack([FW[k], Fb[k][:, None]])
        RG = np.hstack([GW[k], Gb[k][:, None]])
        cost = np.abs(RF[:, None, :] - RG[None, :, :]).max(axis=2)
        _, perm = linear_sum_assignment(cost)
        GW[k], Gb[k] = GW[k][perm], Gb[k][perm]
        GW[k + 1] = GW[k + 1][:, perm]
    diffs = [np.abs(a - b).max() for a, b in zip(FW + Fb, GW + Gb, strict=True)]
    scale = max(np.abs(a).max() for a in FW + Fb)
    FS = F.skip if F.skip is not None else None
    GS = G.skip if G.skip is not None else None
    if FS is not None or GS is not None:
        m, d = F.output_dim, F.input_dim
        fs = FS if FS is not None else (np.zeros((m, d)), np.zeros(m))
        gs = GS if GS is not None else (np.zeros((m, d)), np.zeros(m))
        diffs += [np.abs(np.asarray(fs[0], float) - np.asarray(gs[0], float)).max(),
                  np.abs(np.asarray(fs[1], float) - np.asarray(gs[1], float)).max()]
    err = float(max(diffs))
    return err, err / max(scale, TINY)


def fidelity(reference: Network, recovered: Network, domain: Box | None = None, *,
             timeout: float | None = 30.0, n_samples: int = 20_000, seed: int = 0) -> Fidelity:
    """Compare ``recovered`` with ``reference`` (see the module docstring); the default
    box is ``[-1, 1]^d``; ``timeout`` bounds the functional check (``unknown`` past it).

    Example (the second network has its two neurons swapped and scaled: same function):
        >>> from relulab import Network
        >>> a = Network([[[1.0], [-1.0]], [[1.0, 2.0]]], [[0.0, 1.0], [0.0]])
        >>> b = Network([[[-2.0], [1.0]], [[1.0, 1.0]]], [[2.0, 0.0], [0.0]])
        >>> f = fidelity(a, b, n_samples=100)
        >>> f.aligned, f.max_abs_error < 1e-12, f.equivalence, f.complete
        (True, True, 'equal', True)
    """
    from ..symmetry import canonical, equivalent

    d = reference.input_dim
    box = domain if domain is not None else Box(-np.ones(d), np.ones(d))
    F, _ = canonical(reference.float())
    G, _ = canonical(recovered.float())
    al = _align(F, G)
    X = box.sample(n_samples, np.random.default_rng(seed))
    out_err = float(np.max(np.abs(reference.float()(X) - recovered.float()(X))))
    eq = equivalent(reference.float(), recovered.float(), box, timeout=timeout)
    msg = eq.message
    if al is None:
        msg = (f"normal forms differ in architecture ({list(F.widths)} vs {list(G.widths)}); "
               + msg)
    return Fidelity(
        aligned=al is not None,
        max_abs_error=None if al is None else al[0],
        max_rel_error=None if al is None else al[1],
        bits_abs=None if al is None else _bits(al[0]),
        bits_rel=None if al is None else _bits(al[1]),
        equivalence=eq.status,
        equivalence_method=eq.method,
        witness=eq.witness,
        witness_gap=eq.gap,
        max_output_error=out_err,
        n_samples=n_samples,
        widths_reference=F.widths,
        widths_recovered=G.widths,
        domain=box.to_dict(),
        message=msg,
    )
