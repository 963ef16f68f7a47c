"""The error of :mod:`relulab.construct`, in a module of its own so that the low-level
builders can raise it without importing a construction.

Example:
    >>> from relulab.construct._errors import ConstructionError
    >>> issubclass(ConstructionError, Exception)
    True
"""

from __future__ import annotations

from ..errors import RelulabError

__all__ = ["ConstructionError"]


class ConstructionError(RelulabError):
    """A construction was asked for with invalid parameters."""
