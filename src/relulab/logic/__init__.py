"""Lukasiewicz (MV-algebra) logic for ReLU networks: formulas out of networks and back.

A ReLU network on the unit cube computes a truth function of many-valued (Lukasiewicz)
logic.  This package makes that concrete and exact (Fractions throughout):

* :class:`Formula` - MV terms over ``x_1 .. x_n`` (⊕, ¬, ⊙, ∨, ∧, →; ``δ_n`` for
  rational weights; scalars ``r·`` for real ones); :func:`evaluate`, :func:`to_text`,
  :func:`parse`, :func:`simplify`;
* :func:`to_formula` - a network -> its :class:`SubstitutionGraph` (one formula per
  node, layered), with the algebra it needs; :func:`to_network` - back to a network;
* the local operations :func:`node_rewrite`, :func:`collapse_layer`,
  :func:`expand_layer`; :func:`normal_form` of a graph; :func:`derive` - a derivation
  between equivalent networks; :func:`equal_on_cube` - exact equality on the cube;
* :mod:`relulab.logic.fibres` - parameter fibres of bottleneck networks;
  :mod:`relulab.logic.identifiability` - identifiability from the regions.

Example:
    >>> from relulab import Network
    >>> from relulab.logic import to_formula, to_network, equal_on_cube
    >>> net = Network([[[1, 1], [1, -1]], [[1, 1]]], [[-1, 0], [0]]).exact()
    >>> g = to_formula(net)
    >>> g.algebra, str(g.layers[0][0].formula)
    ('MV', 'x1 ⊙ x2')
    >>> equal_on_cube(to_network(g), net).status
    'equal'
"""

from .compile import to_network
from .derive import DerivationResult, derive, invert, replay
from .equality import EqualityResult, equal_on_cube
from .extract import METHODS, ExtractionError, to_formula
from .fibres import FibreDescription, FibreTest, fibre, fibre_equivalent, fibre_normal_form
from .formula import (
    ALGEBRAS,
    ONE,
    ZERO,
    Formula,
    FormulaError,
    algebra_of,
    const,
    depth,
    div,
    evaluate,
    impl,
    join,
    meet,
    n_vars,
    neg,
    odot,
    oplus,
    scal,
    size,
    substitute,
    var,
    variables,
)
from .graph import GraphError, Node, SubstitutionGraph
from .identifiability import IdentifiabilityReport, identifiability
from .normal_form import NormalFormResult, normal_form
from .parse import FormulaSyntaxError, parse
from .printing import to_text
from .rewrites import (
    RewriteError,
    Step,
    apply_step,
    collapse_layer,
    expand_layer,
    formulas_equal,
    node_rewrite,
)
from .simplify import fingerprint, simplify
from .truncated import truncated_affine

__all__ = [
    "Formula", "FormulaError", "FormulaSyntaxError", "var", "const", "ZERO", "ONE", "neg", "oplus",
    "odot", "join", "meet", "impl", "div", "scal", "evaluate", "n_vars", "variables", "size", "depth",
    "substitute", "algebra_of", "ALGEBRAS", "parse", "to_text", "simplify", "fingerprint",
    "truncated_affine", "SubstitutionGraph", "Node", "GraphError", "to_formula", "ExtractionError",
    "METHODS", "to_network", "equal_on_cube", "EqualityResult", "node_rewrite", "collapse_layer",
    "expand_layer", "apply_step", "formulas_equal", "Step", "RewriteError", "normal_form",
    "NormalFormResult", "derive", "DerivationResult", "replay", "invert", "fibre", "fibre_equivalent",
    "fibre_normal_form", "FibreDescription", "FibreTest", "identifiability", "IdentifiabilityReport",
]
