"""Error classes shared by all of relulab.

Every error relulab raises on bad input derives from :class:`RelulabError` (itself a
``ValueError``); the command line prints its message as one line and exits 1.

Example:
    >>> from relulab.errors import RelulabError, FormatError
    >>> issubclass(FormatError, RelulabError)
    True
"""

import numbers


class RelulabError(ValueError):
    """Base class of relulab's input errors."""


class FormatError(RelulabError):
    """A model or property file is malformed or uses something unsupported.

    The message names the file and the place (node, line and column) at fault.
    """


class UncertifiedCount(RelulabError):
    """A bare number (a region count) was asked for, but the computation could not certify
    it (a sign decision too close to call, or an unbounded domain left uncertified): it
    is refused rather than returned.  ``regions.enumerate`` returns such sets marked
    ``certified=False``."""


class MissingDependency(RelulabError, ImportError):
    """An optional dependency (torch, onnx, matplotlib...) is needed but not installed."""


def is_int_at_least(v: object, lo: int) -> bool:
    """Whether ``v`` is an integer (a Python or numpy int, not a bool) ``>= lo``: the check
    of counts, widths, depths and limits, whose callers word their own errors.

    Example:
        >>> is_int_at_least(3, 1), is_int_at_least(True, 0), is_int_at_least(2.0, 1)
        (True, False, False)
    """
    return isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= lo


def is_positive_seconds(v: object) -> bool:
    """Whether ``v`` is a real number (not a bool) ``> 0``: the check of time limits, whose
    callers word their own errors (NaN fails; inf passes, as no limit).

    Example:
        >>> is_positive_seconds(0.5), is_positive_seconds(0), is_positive_seconds(float("nan"))
        (True, False, False)
    """
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and v > 0


def require(module: str, extra: str):
    """Import an optional dependency or raise :class:`MissingDependency` with an install hint."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependency(
            f"this needs the optional dependency '{module}': pip install 'relulab[{extra}]'"
        ) from None
