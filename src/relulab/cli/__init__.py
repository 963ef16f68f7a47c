"""The ``relulab`` command (typer + rich).

Each topic keeps its commands in its own module here (``core``, ``verify``,
``regions``, ...); a module defines ``register(app)`` and may define
``tour(console)``, one section of ``relulab tour``.

Example:
    $ relulab info model.onnx --json
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

from ._common import app, run_app

__all__ = ["app", "main", "TOPICS"]

# The order here is the order of `relulab --help` and of the tour.
TOPICS = ("core", "verify", "regions", "construct", "params", "symmetry", "train")


def _topic_modules():
    for name in TOPICS:
        mod = f"{__name__}.{name}"
        if importlib.util.find_spec(mod) is not None:
            yield importlib.import_module(mod)


for _m in _topic_modules():
    _m.register(app)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``relulab`` script."""
    run_app(sys.argv[1:] if argv is None else argv)
