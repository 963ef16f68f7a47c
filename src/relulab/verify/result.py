"""Result records of :mod:`relulab.verify` (small frozen dataclasses with ``to_dict()``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..results import Result
from ..tolerance import PROOF_MARGIN

__all__ = ["OptimumResult", "RangeResult", "VerificationResult", "ReluSplitResult"]


@dataclass(frozen=True)
class OptimumResult:
    """The optimum of ``c . f(x)`` over a domain (from :func:`maximize` / :func:`minimize`).

    Fields:
        sense: "max" or "min".
        status: "optimal" (the MILP solved: the optimum lies between ``value`` and
            ``bound``, which differ by the gap and the tolerance error; :attr:`exact`
            says whether that bracket is closed), "time_limit", or
            "unknown" (``info["reason"]`` "numerical: ...": a forward pass beat the
            solver's bound by more than its tolerances explain, so that bound was
            replaced by the verifier's CROWN bound).
        value: ``c . f(x)`` at ``x`` in rational arithmetic (the network's float
            weights taken exactly), rounded toward the inside of the bracket (down for
            "max", up for "min"); above 50,000 parameters of a float network, the float64
            forward pass moved inward by its rounding bound (``info["value_check"]``).
        x: an input in the domain attaining ``value`` (at least, for "max").
        bound: the proven bound on the optimum: an upper bound for "max", a lower
            bound for "min": the solver's bound widened by ``info["tolerance_error"]``,
            what HiGHS's feasibility tolerances (``MILP_FEAS_TOL``) can hide once later
            layers' weights amplify them (:func:`relulab.verify.milp.tolerance_error`).
        lp_value: the optimum of the LP relaxation of the MILP.
        gap: ``|lp_value - value|``, the relaxation gap.
        n_binaries: binary variables in the encoding (unstable neurons).
        time: seconds.
        scale: the spread (largest minus smallest) of ``c . f`` over the points the
            search evaluated, float64: the size :attr:`exact` measures the bracket by.

    ``upper_bound`` and ``lower_bound`` bracket the true optimum in both senses.

    Example:
        >>> from relulab import Box, Network
        >>> from relulab.verify import maximize, minimize
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
        >>> r = maximize(net, Box([-1], [2]))
        >>> r.sense, r.status, r.exact, round(r.value, 9), r.x.round(9).tolist()
        ('max', 'optimal', True, 2.0, [2.0])
        >>> round(minimize(net, Box([-1], [2])).value, 9)
        0.0
    """

    sense: str
    status: str
    value: float
    x: np.ndarray
    bound: float
    lp_value: float
    gap: float
    n_binaries: int
    time: float
    info: dict[str, Any] = field(default_factory=dict)
    scale: float = float("nan")

    @property
    def upper_bound(self) -> float:
        """Proven upper bound of the optimum (max: the bound; min: the attained value)."""
        return self.bound if self.sense == "max" else self.value

    @property
    def lower_bound(self) -> float:
        """Proven lower bound of the optimum (max: the attained value; min: the bound)."""
        return self.value if self.sense == "max" else self.bound

    @property
    def optimal(self) -> bool:
        """The MILP solved (its bracket may still be wide: see :attr:`exact`)."""
        return self.status == "optimal"

    @property
    def exact(self) -> bool:
        """The MILP solved and its proven bound within ``PROOF_MARGIN`` times the
        objective's size (the largest of ``|value|``, ``|bound|`` and :attr:`scale`, the
        objective's spread over the points evaluated) of the value found: ``value`` is the
        optimum, not one end of a bracket.  With weights of 1e6 the solver's tolerances can
        leave a bracket wider than the value itself even when it reports optimal.  (The LP
        relaxation's value is no measure: a big-M of 2^60 made it 5.8e17, and a bracket
        [0, 1.2e10] counted as exact.)"""
        size = max(abs(self.value), abs(self.bound), self.scale if np.isfinite(self.scale) else 0.0)
        return self.optimal and abs(self.bound - self.value) <= PROOF_MARGIN * size

    def to_dict(self) -> dict:
        return {
            "sense": self.sense,
            "status": self.status,
            "exact": self.exact,
            "value": self.value,
            "x": np.asarray(self.x).tolist(),
            "bound": self.bound,
            "upper_bound": self.upper_bound,
            "lower_bound": self.lower_bound,
            "lp_value": self.lp_value,
            "scale": self.scale,
            "gap": self.gap,
            "n_binaries": self.n_binaries,
            "time": self.time,
            **({"info": self.info} if self.info else {}),
        }


@dataclass(frozen=True)
class RangeResult:
    """Exact range of every output over a domain (from :func:`output_range`).

    ``lo[i]``/``hi[i]`` are attained at ``argmin[i]``/``argmax[i]``; ``status`` is
    "optimal" when every one of the 2 m MILPs was solved to optimality, "time_limit" when
    the time ran out (``lo_bound``/``hi_bound`` then bracket the range), "unknown" when
    the memory budget stopped a MILP (``reason`` "memory: ...": the bracket then comes
    from the symbolic bounds and a local search) or a MILP went wrong numerically
    (``reason`` "numerical: ...").  ``lo_bound``/``hi_bound`` always hold the proven
    bracket; :attr:`exact` says whether it is closed (within ``PROOF_MARGIN``).

    Example:
        >>> from relulab import Box, Network
        >>> from relulab.verify import output_range
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0], [1.0, -1.0]]], [[0.0, 0.0], [0.0, 0.0]])  # |x|, x
        >>> r = output_range(net, Box([-1], [2]))
        >>> r.status, r.lo.round(9).tolist(), r.hi.round(9).tolist(), r.argmax.round(9).tolist()
        ('optimal', [0.0, -1.0], [2.0, 2.0], [[2.0], [2.0]])
    """

    lo: np.ndarray
    hi: np.ndarray
    argmin: np.ndarray
    argmax: np.ndarray
    lo_bound: np.ndarray
    hi_bound: np.ndarray
    status: str
    time: float
    reason: str = ""

    @property
    def exact(self) -> bool:
        """Every MILP solved and every proven bound within ``PROOF_MARGIN`` times the
        output's size over the domain (``max(|lo|, |hi|)``) of the value found: the range
        itself, not a bracket.  The solver's tolerances, amplified by large later weights,
        can leave a bracket even when all are solved.  (Relative to the output's size, not
        to 1: outputs of 1e-7 were "exact" with brackets as wide as themselves.)"""
        if self.status != "optimal":
            return False
        size = np.maximum(np.abs(self.lo), np.abs(self.hi))
        gap = np.maximum(self.hi_bound - self.hi, self.lo - self.lo_bound)
        return bool(np.all(gap <= PROOF_MARGIN * size))

    def to_dict(self) -> dict:
        return {
            "status": self.status,
            "exact": self.exact,
            "reason": self.reason,
            "lo": self.lo.tolist(),
            "hi": self.hi.tolist(),
            "lo_bound": self.lo_bound.tolist(),
            "hi_bound": self.hi_bound.tolist(),
            "argmin": self.argmin.tolist(),
            "argmax": self.argmax.tolist(),
            "time": self.time,
        }


@dataclass(frozen=True)
class VerificationResult:
    """The answer of :func:`relulab.verify.verify`.

    ``status`` is "holds" (proven), "violated" (``counterexample`` is an input in the
    input set whose forward-pass output ``output`` lies in the unsafe set; re-checked),
    or "unknown" (time ran out or numerical trouble; ``reason`` says which).

    Example:
        >>> import numpy as np
        >>> from relulab import Box, Network
        >>> from relulab.spec import OutputConstraint, Specification
        >>> from relulab.verify import verify
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
        >>> unsafe = OutputConstraint(np.array([[-1.0]]), np.array([-0.9]))       # y >= 0.9
        >>> r = verify(net, Specification(Box([-1], [1]), [unsafe]), timeout=10)
        >>> r.status, bool(np.allclose(net(r.counterexample), r.output)), r.to_dict()["status"]
        ('violated', True, 'violated')
    """

    status: str
    time: float
    counterexample: np.ndarray | None = None
    output: np.ndarray | None = None
    method: str = ""
    reason: str = ""
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def vnncomp(self) -> str:
        """The VNN-COMP result word: unsat (holds), sat (violated) or timeout/unknown."""
        return {"holds": "unsat", "violated": "sat"}.get(
            self.status, "timeout" if self.reason == "timeout" else "unknown"
        )

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"status": self.status, "time": self.time, "method": self.method}
        if self.counterexample is not None:
            d["counterexample"] = np.asarray(self.counterexample).tolist()
            d["output"] = np.asarray(self.output).tolist()
        if self.reason:
            d["reason"] = self.reason
        if self.stats:
            d["stats"] = self.stats
        return d


@dataclass(frozen=True)
class ReluSplitResult(Result):
    """The answer of :func:`relulab.verify.relu_bab.relu_split` for one unsafe conjunction.

    ``status`` is "holds" (no input of the box is unsafe; proven), "violated"
    (``counterexample`` is unsafe by a plain forward pass) or "unknown" (``reason``:
    "timeout", "memory: ...", "numerical: ..." or "incomplete: ..."); ``stats`` counts sub-domains,
    rounds, leaves (linear pieces decided by LP) and attacks.

    Example:
        >>> r = ReluSplitResult("unknown", None, "timeout", {"domains": 7})
        >>> r.to_dict()
        {'status': 'unknown', 'counterexample': None, 'reason': 'timeout', 'stats': {'domains': 7}}
    """

    status: str
    counterexample: np.ndarray | None = None
    reason: str = ""
    stats: dict[str, Any] = field(default_factory=dict)
