"""Error classes shared by all of relulab.

Every error relulab raises on bad input derives from :class:`RelulabError` (itself a
``ValueError``); the command line prints its message as one line and exits 1.

Example:
    >>> from relulab.errors import RelulabError, FormatError
    >>> issubclass(FormatError, RelulabError)
    True
"""


class RelulabError(ValueError):
    """Base class of relulab's input errors."""


class FormatError(RelulabError):
    """A model or property file is malformed or uses something unsupported.

    The message names the file and the place (node, line and column) at fault.
    """


class MissingDependency(RelulabError, ImportError):
    """An optional dependency (torch, onnx, matplotlib...) is needed but not installed."""


def require(module: str, extra: str):
    """Import an optional dependency or raise :class:`MissingDependency` with an install hint."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependency(
            f"this needs the optional dependency '{module}': pip install 'relulab[{extra}]'"
        ) from None
