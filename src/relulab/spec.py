"""Properties to verify: an input set and an *unsafe* output set.

This is the in-memory form of a VNN-LIB property (``relulab.io.vnnlib`` parses
files into it).  The property *holds* when no input in the input set is mapped
into the unsafe output set, which is a disjunction of conjunctions of linear
constraints on the outputs::

    unsafe(y)  <=>  OR_k ( C_k @ y <= d_k )

An input set that is a union of boxes is a list of boxes (the property must hold
on every one).  Input disjunctions that pair each box with its own output terms
(``(or (and X.. Y..) ...)`` in VNN-LIB) are kept as separate ``Specification``
cases in :class:`Property`.

Example:
    >>> import numpy as np
    >>> from relulab.domain import Box
    >>> s = Specification(Box([0], [1]), [OutputConstraint(np.array([[1.0]]), np.array([0.5]))])
    >>> s.is_unsafe(np.array([0.2])), s.is_unsafe(np.array([0.7]))
    (True, False)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .domain import Box
from .errors import RelulabError
from .tolerance import FEAS_TOL, or_default

__all__ = ["OutputConstraint", "Specification", "Property", "SpecError"]


class SpecError(RelulabError):
    """A property does not fit the network or is malformed."""


@dataclass(frozen=True)
class OutputConstraint:
    """A conjunction ``C @ y <= d`` (C of shape (k, m)).

    Example:
        >>> c = OutputConstraint(np.array([[1.0, -1.0]]), np.array([0.0]))   # y0 <= y1
        >>> c.satisfied(np.array([[1.0, 2.0], [3.0, 2.0]])).tolist(), c.margin(np.array([[3.0, 2.0]])).tolist()
        ([True, False], [1.0])
    """

    C: np.ndarray
    d: np.ndarray

    def __post_init__(self) -> None:
        # arrays of the right shapes, finite: a wrong shape would broadcast silently
        try:
            C = np.asarray(self.C, dtype=np.float64)
            d = np.asarray(self.d, dtype=np.float64)
        except (TypeError, ValueError, OverflowError) as e:
            raise SpecError(f"output constraint: C and d must be numeric arrays within float64 ({e})") from None
        if C.ndim != 2:
            raise SpecError(f"output constraint: C must be a 2-D array (k constraints x m outputs), got shape {C.shape}")
        if d.ndim != 1 or d.shape[0] != C.shape[0]:
            raise SpecError(f"output constraint: d must have one entry per row of C ({C.shape[0]}), got shape {d.shape}")
        if not (np.all(np.isfinite(C)) and np.all(np.isfinite(d))):
            raise SpecError("output constraint: C and d must be finite (NaN or inf found)")
        object.__setattr__(self, "C", C)
        object.__setattr__(self, "d", d)

    def satisfied(self, Y: np.ndarray, tol: float | None = None) -> np.ndarray:
        """Row-wise truth for a batch ``Y`` of shape (n, m) (tolerance default ``FEAS_TOL``)."""
        tol = or_default(tol, FEAS_TOL)
        Y = np.atleast_2d(Y)
        if self.C.shape[0] == 0:
            return np.ones(Y.shape[0], dtype=bool)
        return np.all(Y @ self.C.T <= self.d + tol, axis=1)

    def margin(self, Y: np.ndarray) -> np.ndarray:
        """max_i (C_i y - d_i): <= 0 exactly when the conjunction holds at y."""
        Y = np.atleast_2d(Y)
        if self.C.shape[0] == 0:
            return np.full(Y.shape[0], -np.inf)
        return np.max(Y @ self.C.T - self.d, axis=1)


@dataclass(frozen=True)
class Specification:
    """One input box and a disjunction of output conjunctions describing unsafe outputs.

    Example:
        >>> from relulab import Box
        >>> spec = Specification(Box([0, 0], [1, 1]), [OutputConstraint(np.array([[1.0, -1.0]]), np.array([0.0]))])
        >>> spec.is_unsafe(np.array([1.0, 2.0])), spec.is_unsafe(np.array([3.0, 2.0]))
        (True, False)
    """

    input_box: Box
    unsafe: list[OutputConstraint] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.input_box, Box):
            raise SpecError(f"specification: the input set must be a relulab Box, got {type(self.input_box).__name__}")
        terms = list(self.unsafe)
        if any(not isinstance(t, OutputConstraint) for t in terms):
            raise SpecError("specification: every unsafe term must be an OutputConstraint")
        if len({t.C.shape[1] for t in terms}) > 1:
            raise SpecError("specification: the unsafe terms refer to different numbers of outputs "
                            f"({sorted({t.C.shape[1] for t in terms})})")
        object.__setattr__(self, "unsafe", terms)

    @property
    def n_outputs(self) -> int:
        return int(self.unsafe[0].C.shape[1]) if self.unsafe else 0

    def is_unsafe(self, y: np.ndarray, tol: float | None = None) -> bool | np.ndarray:
        """Whether an output (or each row of a batch) lies in the unsafe set."""
        Y = np.atleast_2d(np.asarray(y, dtype=np.float64))
        hit = np.zeros(Y.shape[0], dtype=bool)
        for term in self.unsafe:
            hit |= term.satisfied(Y, tol)
        return bool(hit[0]) if np.ndim(y) == 1 else hit

    def check_fits(self, input_dim: int, output_dim: int, where: str = "property") -> None:
        if self.input_box.dim != input_dim:
            raise SpecError(
                f"{where}: the input box has {self.input_box.dim} coordinates; "
                f"the network takes {input_dim} inputs"
            )
        for term in self.unsafe:
            if term.C.shape[1] != output_dim:
                raise SpecError(
                    f"{where}: output constraints refer to {term.C.shape[1]} outputs; "
                    f"the network gives {output_dim}"
                )


@dataclass(frozen=True)
class Property:
    """A whole VNN-LIB property: one or more cases, each an input box with unsafe outputs.

    The property holds when every case holds.

    Example:
        >>> from relulab import Box
        >>> case = Specification(Box([0], [1]), [OutputConstraint(np.array([[-1.0]]), np.array([-2.0]))])
        >>> prop = Property([case, Specification(Box([1], [2]), case.unsafe)], source="two cases")
        >>> len(prop.cases), prop.input_dim
        (2, 1)
    """

    cases: list[Specification]
    source: str = ""

    @property
    def input_dim(self) -> int:
        return self.cases[0].input_box.dim

    def check_fits(self, input_dim: int, output_dim: int) -> None:
        for c in self.cases:
            c.check_fits(input_dim, output_dim, self.source or "property")
