"""Result records of :mod:`relulab.lipschitz`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..results import Result

__all__ = ["LipschitzWitness", "LipschitzResult", "PositivityResult", "SurjectivityResult",
           "ContainmentResult"]


@dataclass(frozen=True)
class LipschitzWitness(Result):
    """A point strictly inside a linear region of the domain, the region's Jacobian and
    its operator norm (a certified lower bound on the Lipschitz constant).

    ``x`` was re-checked: every hidden pre-activation at ``x`` is away from zero (so the
    Jacobian is the region's), ``x`` lies in the domain, and ``jacobian`` is the
    forward-mode Jacobian at ``x``.  ``source`` names the route that found it.

    Example:
        >>> from relulab import Network, Box
        >>> from relulab.lipschitz import lipschitz
        >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]])   # 2 relu(x) + relu(-x)
        >>> w = lipschitz(net, Box([-1], [1])).witness
        >>> w.norm, w.jacobian.tolist(), bool(w.x[0] > 0)
        (2.0, [[2.0]], True)
    """

    x: np.ndarray
    jacobian: np.ndarray
    norm: float
    source: str
    pattern: str = ""


@dataclass(frozen=True)
class LipschitzResult(Result):
    """The Lipschitz constant of a network over a domain: ``lower <= L <= upper``.

    ``status`` is "exact" when ``upper - lower <= LIP_REL_TOL * lower`` (then
    ``value`` is ``lower``), otherwise "bounded".  ``method`` names the route that gave
    the final bracket; ``uppers``/``lowers`` hold every bound computed (name -> value);
    ``partial`` is True when a time limit (or the memory budget) stopped a route early;
    ``info["incomplete"]`` says why a route ended without a proof otherwise.

    Example:
        >>> from relulab import Network, Box
        >>> from relulab.lipschitz import lipschitz
        >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> r = lipschitz(net, Box([-1], [1]), p=1)
        >>> r.status, r.value, r.ratio, r.partial
        ('exact', 2.0, 1.0, False)
    """

    lower: float
    upper: float
    status: str
    method: str
    p: float
    q: float | None
    domain: Any
    witness: LipschitzWitness | None
    uppers: dict[str, float]
    lowers: dict[str, float]
    time: float
    partial: bool = False
    info: dict = field(default_factory=dict)

    @property
    def exact(self) -> bool:
        return self.status == "exact"

    @property
    def value(self) -> float | None:
        """The constant when exact, else None."""
        return self.lower if self.exact else None

    @property
    def ratio(self) -> float:
        """``upper / lower`` (inf when the lower bound is 0)."""
        if self.lower <= 0:
            return float("inf") if self.upper > 0 else 1.0
        return self.upper / self.lower

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["value"] = self.value
        d["ratio"] = self.ratio
        return d


@dataclass(frozen=True)
class PositivityResult(Result):
    """Does ``f`` take a positive value on the domain (all of R^d when ``domain`` is None)?

    ``positive`` is True with a ``witness`` where ``f(witness) > 0`` was re-checked by a
    forward pass in exact rational arithmetic; False when the maximum was proved
    ``<= tolerance`` (``within_tolerance`` True when the proven bound is above 0: the
    sign itself is then not proved); None ("unknown") when a time limit stopped the search.
    ``maximum``/``bound`` are the best value found and the proven upper bound of the
    maximum over the (bounded) problem actually solved: for R^d that is the
    homogenised network on ``[-1, 1]^d x [0, 1]``, whose sign, not size, is the answer.

    Example:
        >>> from relulab import Network, Box
        >>> from relulab.lipschitz import is_positive
        >>> r = is_positive(Network([[[1.0]], [[1.0]]], [[-0.5], [0.0]]), Box([-1], [1]))   # relu(x - 1/2)
        >>> r.positive, r.status, bool(r.witness[0] > 0.5)
        (True, 'positive', True)
    """

    positive: bool | None
    status: str
    witness: np.ndarray | None
    value: float | None
    maximum: float
    bound: float
    method: str
    time: float
    # "nonpositive" from a proven bound that is above 0 but within the tolerance: the
    # maximum is at most ``bound`` (f = 1e-8 - |x - 0.3| is such a case over R), not
    # shown to be <= 0
    within_tolerance: bool = False


@dataclass(frozen=True)
class SurjectivityResult(Result):
    """Is a scalar network onto R?  ``up``/``down``: directions ``r`` with ``g(r) > 0`` /
    ``g(r) < 0`` for the recession function ``g`` (so ``f(s r) -> +inf`` / ``-inf``).
    When not surjective, ``missed`` is a value that ``f`` provably never takes
    (``|f(x) - g(x)| <= offset_bound`` everywhere and ``g`` has no positive / negative
    value), unless ``within_tolerance`` says that ``g``'s sign rests on the solver's
    tolerance.

    Example:
        >>> from relulab import Network
        >>> from relulab.lipschitz import surjective
        >>> r = surjective(Network([[[1.0], [-1.0]], [[1.0, -2.0]]], [[0.0, 0.0], [0.0]]))   # relu(x) - 2 relu(-x)
        >>> r.surjective, r.status, r.up.tolist(), r.down.tolist()
        (True, 'surjective', [1.0], [-1.0])
    """

    surjective: bool | None
    status: str
    up: np.ndarray | None
    down: np.ndarray | None
    missed: float | None
    offset_bound: float
    time: float
    # True when the "not onto" answer rests on a maximum within the solver's tolerance of
    # 0 (the sign of the recession function's maximum is not proved)
    within_tolerance: bool = False


@dataclass(frozen=True)
class ContainmentResult(Result):
    """Is zonotope Z1 inside zonotope Z2?  When not, ``point`` is a point of Z1 (a
    generator-sign vertex) outside Z2 and ``direction`` a ``u`` with
    ``u . point > h_Z2(u)`` (re-checked), so ``u`` separates ``point`` from Z2.
    ``excess`` is the largest ``h_Z1(u) - h_Z2(u)`` over ``||u||_inf <= 1`` (proved
    ``<= tolerance`` when contained).

    Example:
        >>> from relulab.lipschitz import Zonotope, zonotope_contains
        >>> r = zonotope_contains(Zonotope([0, 0], [[2, 0], [0, 1]]), Zonotope([0, 0], [[1, 0], [0, 1]]))
        >>> r.contained, r.status, r.point.tolist()
        (False, 'not contained', [-2.0, 0.0])
    """

    contained: bool | None
    status: str
    point: np.ndarray | None
    direction: np.ndarray | None
    excess: float
    bound: float
    time: float
    # "contained" from a proven excess bound above 0 but within the tolerance: Z1 may
    # stick out of Z2 by up to ``bound`` (1e-10 was seen), not shown to be inside
    within_tolerance: bool = False
