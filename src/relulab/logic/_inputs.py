"""Argument checks shared by the logic modules: one clear error naming the function.

Example:
    >>> from relulab import Network
    >>> cube_box(Network([[[1.0, 1.0]], [[1.0]]], [[0.0], [0.0]]), None, "fibre").dim
    2
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..domain import Box, DomainError, Polytope, as_domain
from ..network import Network, NetworkError


def network_arg(obj: Any, where: str, name: str = "net") -> Network:
    """``obj`` when it is a :class:`~relulab.Network`, else one error naming ``where``."""
    if not isinstance(obj, Network):
        raise NetworkError(f"{where}: {name} must be a relulab Network, got {type(obj).__name__}")
    return obj


def cube_box(net: Network, box: Any, where: str) -> Box:
    """``box`` (default [0, 1]^d) as a :class:`~relulab.domain.Box` of ``net``'s input
    dimension; a wrong dimension or a non-box domain is one error naming ``where``."""
    d = net.input_dim
    if box is None:
        return Box(np.zeros(d), np.ones(d))
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
