"""Argument checks shared by why, why_not and decision_rules."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..domain import Box, Polytope, as_domain
from ..errors import RelulabError
from ..network import Network
from ..tolerance import FEAS_TOL
from .decision import ExplainError


def float_net(net: Network) -> Network:
    """The float64 network the explanations work on: ``net`` itself, or the float copy of
    an exact network whose every weight and bias is a float64 number (the same function).
    An exact network holding other numbers is refused, naming the first: its float copy
    is another function (``x - 1/3`` at the float nearest 1/3 is negative, its copy's
    output 0 read "positive").

    Example:
        >>> from fractions import Fraction as F
        >>> float_net(Network([[[F(1)]]], [[F(-1, 3)]]))
        Traceback (most recent call last):
        ...
        relulab.explain.decision.ExplainError: explain works in float64: the bias 1 of layer 1 of this exact network is -1/3, which float64 does not hold; explain net.float() to explain its float64 copy
    """
    if not isinstance(net, Network):
        raise ExplainError(f"expected a relulab.Network, got {type(net).__name__}")
    hit = net.entry_not_a_float()
    if hit is not None:
        where, idx, value = hit               # ("layer 1 bias", (0,), -1/3), ("skip weight", ...)
        *owner, kind = where.split()
        pos = str(idx[0] + 1) if len(idx) == 1 else "(" + ", ".join(str(i + 1) for i in idx) + ")"
        place = f"{kind} {pos} of {' '.join(owner)}" if owner[0] == "layer" else f"skip {kind} {pos}"
        raise ExplainError(
            f"explain works in float64: the {place} of this exact network is {value}, which float64 "
            "does not hold; explain net.float() to explain its float64 copy")
    return net.float() if net.is_exact else net


def output_size(net: Network, domain: Box | Polytope) -> float:
    """The proven bound of ``max |f|`` over the domain (symbolic bounds; inf when they
    overflow).

    Example:
        >>> from relulab import Box
        >>> round(output_size(Network([[[3.0]]], [[1e9]]), Box([-1], [1])), 3)   # a sound bound: a hair above
        1000000003.0
    """
    from ..bounds import symbolic_bounds

    try:
        b = symbolic_bounds(net, domain)
    except RelulabError:
        return float("inf")
    m = float(max(np.max(np.abs(b.out_lo)), np.max(np.abs(b.out_hi))))
    return m if np.isfinite(m) else float("inf")


def output_floor(net: Network, domain: Box | Polytope) -> float:
    """The floor of the explanations' relative output tolerances, ``tol * (floor +
    |f|)``: 1, or the proven bound of ``|f|`` over the domain when that is smaller.

    With a floor of 1 the tolerances were absolute in output units, and a network whose
    outputs are all below them was misread: ``1e-9 x`` was "always positive" (certified)
    on a box half of which is negative, and outputs ``(0, 1e-12)`` made class 0 win a
    region class 1 holds.  Scaling a network's outputs changes no decision; with this
    floor it changes no explanation either, for outputs below 1.

    Example:
        >>> from relulab import Box
        >>> net = Network([[[1e-9]]], [[0.0]])
        >>> a, b = output_floor(net, Box([-1], [1])), output_floor(Network([[[3.0]]], [[0.0]]), Box([-1], [1]))
        >>> float(f"{a:.12g}"), b          # 1e-9 (its proven bound, moved outward by its rounding)
        (1e-09, 1.0)
    """
    m = output_size(net, domain)
    if not np.isfinite(m):   # bounds that overflow say nothing: keep the floor of 1
        return 1.0
    # an identically zero network: every comparison is exact (a floor of 0 would divide)
    return min(1.0, max(m, OUTPUT_FLOOR_MIN))


# the smallest floor (outputs identically 0): far below any float output's rounding
OUTPUT_FLOOR_MIN = 1e-300  # tol: an output bound of exactly 0
# The MILPs behind why and why_not (HiGHS, feasibility tolerance 1e-9 in output units)
# cannot tell outputs below about this apart from 0: with outputs of 1e-9 x a point at
# 5e-10 was "on the decision boundary".  Such networks are refused with the fix.
OUTPUT_RESOLUTION = 1e-7  # tol: HiGHS feasibility tolerance x 100


def check_output_resolution(net: Network, domain: Box | Polytope, where: str) -> float:
    """:func:`output_floor`, after one clear error when the outputs on the whole domain
    are below ``OUTPUT_RESOLUTION`` (scaling the last layer changes no decision).

    Example:
        >>> from relulab import Box
        >>> check_output_resolution(Network([[[1e-9]]], [[0.0]]), Box([-1], [1]), "why")
        Traceback (most recent call last):
        ...
        relulab.explain.decision.ExplainError: why: the outputs are at most 1e-09 in size on this domain, below what its MILPs resolve (1e-07); multiply the last layer by a constant (no decision changes) and explain that network
    """
    fl = output_floor(net, domain)
    if fl < OUTPUT_RESOLUTION and fl > OUTPUT_FLOOR_MIN:
        raise ExplainError(f"{where}: the outputs are at most {fl:.3g} in size on this domain, below what "
                           f"its MILPs resolve ({OUTPUT_RESOLUTION:g}); multiply the last layer by a "
                           "constant (no decision changes) and explain that network")
    return fl


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


def check_flag(where: str, **flags: Any) -> None:
    """Each flag is True or False (``certify_rules="no"`` certified).

    Example:
        >>> check_flag("why", certify_rules="no")
        Traceback (most recent call last):
        ...
        relulab.explain.decision.ExplainError: why: certify_rules must be True or False, got 'no'
    """
    for name, v in flags.items():
        if not isinstance(v, (bool, np.bool_)):
            raise ExplainError(f"{where}: {name} must be True or False, got {v!r}")


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
