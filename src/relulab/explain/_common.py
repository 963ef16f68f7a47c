"""Argument checks shared by why, why_not and decision_rules."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..domain import Box, Polytope, as_domain
from ..network import Network
from ..tolerance import FEAS_TOL
from .decision import ExplainError


def float_net(net: Network) -> Network:
    if not isinstance(net, Network):
        raise ExplainError(f"expected a relulab.Network, got {type(net).__name__}")
    return net.float() if net.is_exact else net


def check_point(x: Any, domain: Box | Polytope, what: str = "x") -> np.ndarray:
    """``x`` as a finite float vector inside ``domain`` (one clear error otherwise)."""
    try:
        v = np.asarray(x, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise ExplainError(f"{what}: not a vector of numbers ({x!r})") from None
    if v.shape[0] != domain.dim:
        raise ExplainError(f"{what} has {v.shape[0]} entries; the network takes {domain.dim} inputs")
    if not np.all(np.isfinite(v)):
        raise ExplainError(f"{what} contains NaN or infinite entries")
    if not domain.contains(v, tol=FEAS_TOL):
        raise ExplainError(f"{what} = {v.tolist()} lies outside the domain {domain!r}")
    return v


def check_time_limit(time_limit: Any) -> float | None:
    """``time_limit`` as positive seconds, or None (one clear error otherwise).

    A zero, negative or NaN limit would stop every search at once and make its
    partial answer look like a result, so it is refused rather than clipped."""
    if time_limit is None:
        return None
    try:
        t = float(time_limit)
    except (TypeError, ValueError):
        raise ExplainError(f"time_limit must be a number of seconds, got {time_limit!r}") from None
    if not t > 0:   # also catches NaN
        raise ExplainError(f"time_limit must be positive, got {time_limit}")
    return t


def check_domain(net: Network, domain: Any) -> Box | Polytope:
    if domain is None:
        raise ExplainError("give a domain: a relulab.Box, a Polytope or a (lo, hi) pair")
    dom = as_domain(domain, net.input_dim)
    if isinstance(dom, Polytope) and not dom.is_bounded:
        raise ExplainError("the domain must be bounded (a Box or a bounded Polytope)")
    return dom
