"""Argument checks shared by the logic modules: one clear error naming the function.

Example:
    >>> from relulab import Network
    >>> cube_box(Network([[[1.0, 1.0]], [[1.0]]], [[0.0], [0.0]]), None, "fibre").dim
    2
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from ..domain import Box, DomainError, Polytope, as_domain
from ..network import Network, NetworkError


def network_arg(obj: Any, where: str, name: str = "net") -> Network:
    """``obj`` when it is a :class:`~relulab.Network`, else one error naming ``where``."""
    if not isinstance(obj, Network):
        raise NetworkError(f"{where}: {name} must be a relulab Network, got {type(obj).__name__}")
    return obj


def exact_float_bounds(box: Any, where: str) -> None:
    """One error when a ``(lo, hi)`` box given in exact numbers (Fractions, big ints) has a
    bound that float64 cannot hold: a :class:`~relulab.domain.Box` is float64, so the
    bound would be rounded and an exact answer would be about another box (``equal`` on
    ``[0, 1/3]`` for networks that differ at ``x = 1/3``).

    Example:
        >>> from fractions import Fraction
        >>> exact_float_bounds(([Fraction(0)], [Fraction(1, 2)]), "demo")      # 1/2 is a float
        >>> exact_float_bounds(([Fraction(0)], [Fraction(1, 3)]), "demo")
        Traceback (most recent call last):
        ...
        relulab.domain.DomainError: demo: box bound 1/3 is not a float64 number (it would be rounded to 0.3333333333333333 and the exact answer would be about another box); give float bounds or rescale the inputs
    """
    if isinstance(box, Box) or not isinstance(box, (tuple, list)) or len(box) != 2:
        return
    for side in box:
        for v in np.asarray(side, dtype=object).reshape(-1):
            if isinstance(v, (float, np.floating)):
                continue
            try:
                exact, rounded = Fraction(v), float(v)
            except (TypeError, ValueError, OverflowError):
                continue  # as_domain names the bad value
            if Fraction(rounded) != exact:
                raise DomainError(
                    f"{where}: box bound {v} is not a float64 number (it would be rounded to {rounded!r} "
                    "and the exact answer would be about another box); give float bounds or rescale the inputs")


def cube_box(net: Network, box: Any, where: str) -> Box:
    """``box`` (default [0, 1]^d) as a :class:`~relulab.domain.Box` of ``net``'s input
    dimension; a wrong dimension, a non-box domain or an exact bound that float64 cannot
    hold is one error naming ``where``."""
    d = net.input_dim
    if box is None:
        return Box(np.zeros(d), np.ones(d))
    exact_float_bounds(box, where)
    try:
        dom = as_domain(box, d)
    except DomainError as e:
        raise DomainError(f"{where}: {e}") from None
    if isinstance(dom, Polytope):
        raise DomainError(f"{where}: the domain must be a box, got a polytope")
    return dom


def same_inputs(f: Network, g: Network, where: str) -> None:
    """One error when ``f`` and ``g`` take different numbers of inputs."""
    if f.input_dim != g.input_dim:
        raise NetworkError(f"{where}: the networks take {f.input_dim} and {g.input_dim} inputs")
