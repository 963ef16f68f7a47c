"""Symmetries and exact reduction of ReLU networks.

* :func:`canonical` - normal form under positive rescaling and permutation of neurons;
* :func:`equivalent` - exact functional equivalence on a domain (``equal`` /
  ``different`` with a re-checked witness / ``unknown``);
* :func:`equivalent_one_hidden_layer` - the purely algebraic decision on all of R^d;
* :func:`reduce` - a smaller network computing the same function on a domain;
* :func:`replace` and :func:`neuron_scores` - causal mechanism reduction (replace neurons
  by constants or affine maps of the retained ones, compiled into a smaller network).

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> from relulab.symmetry import canonical
    >>> net = Network([[[2.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 4.0], [0.0]])
    >>> canonical(net)[0].weights[0].ravel().tolist()
    [-0.25, 1.0]
"""

from ._status import NeuronStatus, neuron_status
from .canonical import CanonicalReport, canonical
from .equivalence import (
    EquivalenceError,
    EquivalenceResult,
    equivalent,
    equivalent_one_hidden_layer,
    one_hidden_layer_normal_form,
    whole_space_box,
)
from .mechanism import SCORES, Replacement, neuron_scores, plan, replace
from .reduce import ReduceResult, reduce
from .transforms import permute, random_symmetry, rescale

__all__ = [
    "canonical",
    "CanonicalReport",
    "equivalent",
    "equivalent_one_hidden_layer",
    "EquivalenceResult",
    "EquivalenceError",
    "whole_space_box",
    "one_hidden_layer_normal_form",
    "reduce",
    "ReduceResult",
    "replace",
    "Replacement",
    "neuron_scores",
    "plan",
    "SCORES",
    "rescale",
    "permute",
    "random_symmetry",
    "neuron_status",
    "NeuronStatus",
]
