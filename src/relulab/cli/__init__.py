"""The ``relulab`` command (typer + rich).

Each topic keeps its commands in its own module here (``core``, ``verify``,
``regions``, ...); a module defines ``register(app)`` and ``tour(console)``, one
section of ``relulab tour``.

Example:
    $ relulab info model.onnx --json
"""

from __future__ import annotations

import sys

from . import (
    construct,
    core,
    estimators,
    explain,
    extract,
    lipschitz,
    logic,
    params,
    regions,
    symmetry,
    train,
    verify,
)
from ._common import app, run_app, set_topics

__all__ = ["app", "main", "TOPICS"]

# The order here is the order of `relulab --help` and of the tour.
TOPICS = (core, verify, lipschitz, regions, construct, params, symmetry, train, estimators,
          logic, explain, extract)

for _topic in TOPICS:
    _topic.register(app)
set_topics(TOPICS)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``relulab`` script."""
    run_app(sys.argv[1:] if argv is None else argv)
