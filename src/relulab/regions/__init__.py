"""Linear regions of a ReLU network: exact enumeration, the polyhedral complex and its
adjacency graph, 1-D and 2-D slices.

Example:
    >>> import numpy as np
    >>> from relulab import Network, Box, regions
    >>> net = Network([np.eye(2), np.ones((1, 2))], [np.zeros(2), np.zeros(1)])
    >>> rs = regions.enumerate(net, Box([-1, -1], [1, 1]))
    >>> len(rs), regions.count(net)
    (4, 4)
"""

from ..tolerance import SIGN_TOL
from ._enumerate import count_regions as count
from ._enumerate import enumerate_regions as enumerate  # noqa: A001 - the documented name
from ._enumerate import iter_regions
from ._graph import GraphSummary, adjacency, graph, graph_summary
from ._slices import Polygon, Segment, Slice2D, along_segment, slice2d
from ._store import REGION_FORMATS, StoreSummary, read_regions, write_regions
from ._types import Region, RegionSet, neuron_label

__all__ = [
    "enumerate",
    "iter_regions",
    "count",
    "Region",
    "RegionSet",
    "neuron_label",
    "graph",
    "graph_summary",
    "GraphSummary",
    "adjacency",
    "along_segment",
    "Segment",
    "slice2d",
    "Slice2D",
    "Polygon",
    "SIGN_TOL",
    "write_regions",
    "read_regions",
    "StoreSummary",
    "REGION_FORMATS",
]
