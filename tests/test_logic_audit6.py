"""Logic audit 6: a rewrite step replays only onto the formula it rewrote (aud_log6)."""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from relulab import Network
from relulab.logic import evaluate, node_rewrite, parse, replay, to_formula, to_network
from relulab.logic.rewrites import RewriteError


def test_a_rewrite_step_of_another_graph_is_refused():
    a = Network([[[1, 1]], [[1]]], [[-1], [0]]).exact()   # relu(x1 + x2 - 1) = x1 ⊙ x2
    c = Network([[[1, -1]], [[1]]], [[0], [0]]).exact()   # relu(x1 - x2) = x1 ⊙ ¬x2
    ga, gc = to_formula(a), to_formula(c)
    g2, st = node_rewrite(ga, 0, 0, parse("x2 ⊙ x1"))     # proved on a's graph
    # on its own graph the replay gives the same graph, which computes a
    h = replay(ga, [st])
    x = [F(1), F(1, 3)]
    assert evaluate(h.layers[0][0].formula, x) == evaluate(g2.layers[0][0].formula, x)
    assert to_network(h)([x]) == a([x])
    # on c's graph it swapped in x2 ⊙ x1 (0 at (1, 0)) under c's hint (1 at (1, 0))
    with pytest.raises(RewriteError, match="not the formula this rewrite was made on"):
        replay(gc, [st])
