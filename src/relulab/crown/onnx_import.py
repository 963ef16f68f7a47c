"""Reading an ONNX model into a :class:`~relulab.crown.graph.BoundGraph` (in progress)."""

from __future__ import annotations

from typing import Any

__all__: list[str] = []


def graph_from_onnx(model: Any) -> Any:
    from .graph import GraphError

    raise GraphError("from_onnx: not implemented yet")
