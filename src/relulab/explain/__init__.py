"""Explanations read off the geometry of a ReLU network: exact "why" and "why not" for
its decisions, and decision rules, each certified (never sampled).

* :func:`why`: the region rule and a minimal decision-preserving interval rule at x;
* :func:`why_not`: the nearest counterfactual with a target decision (l1, l2, linf),
  with a proof of optimality, a gap, or a certificate that none exists;
* :func:`decision_rules`: the exact set of inputs with a decision inside a box, as few
  convex rules as greedy merging of the linear regions gives, with volume shares.

Example:
    >>> import numpy as np
    >>> from relulab import Network, Box, explain
    >>> net = Network([[[1.0, 0.0]]], [[0.0]])      # f = x0
    >>> explain.why(net, [0.5, 0.0], Box([-1, -1], [1, 1])).rule.text()
    'x0 >= 0 -> positive'
"""

from . import features
from .decision import (
    CF_MARGIN,
    Decision,
    ExplainError,
    all_decisions,
    as_decision,
    class_decision,
    decision_at,
    predicate_decision,
    sign_decision,
)
from .features import read_names
from .rule import Rule, rules_markdown, rules_table
from .rules import DecisionRules, decision_rules
from .why import WhyResult, why
from .why_not import NORMS, WhyNotResult, why_not

__all__ = [
    "why",
    "WhyResult",
    "why_not",
    "WhyNotResult",
    "NORMS",
    "decision_rules",
    "DecisionRules",
    "Rule",
    "rules_markdown",
    "rules_table",
    "Decision",
    "ExplainError",
    "as_decision",
    "decision_at",
    "all_decisions",
    "sign_decision",
    "class_decision",
    "predicate_decision",
    "read_names",
    "features",
    "CF_MARGIN",
]
