"""Lukasiewicz (MV-algebra) logic for ReLU networks."""
from .compile import to_network  # noqa: F401
from .extract import ExtractionError, to_formula  # noqa: F401
from .formula import *  # noqa: F401,F403
from .graph import GraphError, Node, SubstitutionGraph  # noqa: F401
from .parse import FormulaSyntaxError, parse  # noqa: F401
from .printing import to_text  # noqa: F401
from .truncated import truncated_affine  # noqa: F401
