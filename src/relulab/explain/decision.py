"""What a "decision" of a network is: the sign of its one output, the argmax class of
several outputs, or a user predicate (a conjunction of linear output constraints).

Every decision is stored in one closed form ``C y <= d`` on the outputs ``y``: the
decision holds at ``x`` (up to ties on its boundary) exactly when ``C f(x) <= d``.
Rows marked ``strict`` are strict in the exact semantics (``f < 0`` for "negative";
for class ``k`` a tie with an earlier class goes to that class, as ``numpy.argmax``
does), so a point that must *have* the decision by a forward pass keeps a margin
on them (see :data:`CF_MARGIN`).

Example:
    >>> import numpy as np
    >>> dec = class_decision(1, 3)
    >>> dec.C.tolist(), dec.d.tolist()
    ([[1.0, -1.0, 0.0], [0.0, -1.0, 1.0]], [0.0, 0.0])
    >>> dec.holds(np.array([[0.0, 2.0, 1.0], [3.0, 2.0, 1.0]])).tolist()
    [True, False]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import RelulabError
from ..network import Network
from ..tolerance import or_default

__all__ = [
    "Decision",
    "ExplainError",
    "sign_decision",
    "class_decision",
    "predicate_decision",
    "as_decision",
    "decision_at",
    "all_decisions",
    "CF_MARGIN",
    "OUTPUT_ROUNDING",
    "decision_tol",
    "margins",
    "check_class_names",
]

# A counterfactual must have the target decision by a plain forward pass, also on the
# strict side of a tie: every strict target row is required with this output margin,
# relative to floor + max|f(x)| (floor: min(1, the outputs' bound on the domain)); if LP rounding still leaves the point on the wrong side,
# the margin is put on every row and raised 100-fold (twice at most) for that point
# (see margins()).
CF_MARGIN = 1e-9  # tol: output margin of a counterfactual's strict side
# the outputs' own float64 rounding, relative to their size, that a comparison of them carries
OUTPUT_ROUNDING = 64 * float(np.finfo(np.float64).eps)


def decision_tol(rel: float, y: np.ndarray, floor: float, dec: Decision | None = None) -> float:
    """A tolerance on a decision's rows at outputs ``y``: ``rel`` of ``floor`` plus the
    rows' own size ``max |C y - d|`` (the differences the decision compares; without a
    decision, the outputs' size), plus the outputs' rounding ``OUTPUT_ROUNDING max |y|``.
    Relative to the outputs' size alone, a common offset of 1e9 on every logit (argmax
    unchanged) made wins by 1 ties, and an interval rule "always -> class 0".

    Example:
        >>> dec = class_decision(0, 2)
        >>> decision_tol(1e-8, np.array([1e9 + 1.0, 1e9]), 1.0, dec) < 1e-4
        True
    """
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    size = float(np.max(np.abs(y))) if y.size else 0.0
    rows = size if dec is None else float(np.max(np.abs(dec.C @ y - dec.d), initial=0.0))
    return rel * (floor + rows) + OUTPUT_ROUNDING * size


def margin_tol(rel: float, y: np.ndarray, floor: float) -> float:
    """A margin by which a target (or a broken decision) must be passed *away from* ``x``:
    ``rel`` of ``floor`` plus the outputs' rounding ``OUTPUT_ROUNDING max |y|``.  Not
    relative to the decision rows at ``x`` (:func:`decision_tol`): those are large where x
    is far from the boundary, while the target is met near it (``f(x) = 5e5`` made the
    margin 5e-4 where f is 1e-3 in size, and the nearest counterfactual 1.5 for 1.0).

    Example:
        >>> margin_tol(1e-9, np.array([5e5]), 1.0) < 1e-8
        True
    """
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    size = float(np.max(np.abs(y))) if y.size else 0.0
    return rel * floor + OUTPUT_ROUNDING * size


def margins(y0: np.ndarray, strict: np.ndarray | None = None, floor: float = 1.0,
            dec: Decision | None = None) -> tuple[Any, ...]:
    """The output margins tried in turn for a counterfactual of an input with outputs y0:
    scalars for every row, or, given the target's ``strict`` rows, per-row vectors whose
    first one puts the margin on the strict rows only.  That first one is the one a proof
    of "no counterfactual" uses: a non-strict row (``f >= 0``, a class that wins a tie)
    holds on its boundary, and a target that holds only with ``f = 0`` (on a whole region,
    as for ``-relu(x)`` on ``x <= 0``) was called unreachable when it needed a margin.
    ``floor``: :func:`relulab.explain._common.output_floor` (outputs below 1 scale it);
    the margin is :func:`margin_tol` (``dec`` is accepted for callers and not used: the
    rows' size at x says nothing about the target, which is met elsewhere).

    Example:
        >>> [float(f"{m:.3g}") for m in margins(np.array([1.0, -3.0]))]
        [1e-09, 1e-07, 1e-05]
        >>> [v.tolist() for v in margins(np.array([0.0]), np.array([False]))][:2]
        [[0.0], [1e-09]]
    """
    m = margin_tol(CF_MARGIN, y0, floor)
    if strict is None:
        return (m, 100 * m, 1e4 * m)
    strict = np.asarray(strict, dtype=bool)
    ones = np.ones(strict.shape[0])
    return (m * strict, m * ones, 100 * m * ones, 1e4 * m * ones)


class ExplainError(RelulabError):
    """Bad input to an explanation (a point outside the domain, an unknown feature or
    class, a target equal to the current decision...)."""


@dataclass(frozen=True, eq=False)
class Decision:
    """A decision as ``C y <= d`` on the outputs (see the module docstring).

    ``kind`` is "sign", "class" or "predicate"; ``value`` is "positive"/"negative",
    the class index, or None; ``label`` is how rules print it.

    Example:
        >>> from relulab import Network
        >>> dec = as_decision(Network([[[1.0]]], [[0.0]]), "positive")   # f >= 0
        >>> dec.kind, dec.label, dec.holds([[0.5], [0.0], [-0.5]]).tolist()
        ('sign', 'positive', [True, True, False])
    """

    kind: str
    value: Any
    C: np.ndarray
    d: np.ndarray
    strict: np.ndarray
    label: str

    @property
    def n_outputs(self) -> int:
        return int(self.C.shape[1])

    def holds(self, Y: Any, tol: float | None = None) -> np.ndarray:
        """Exact truth of the decision for each output row of ``Y`` (n, m).

        With ``tol = 0`` (the default, ``None``) this is the exact semantics: ``f >= 0`` /
        ``f < 0`` for a sign, ``argmax == k`` for a class (ties to the first index),
        ``C y <= d`` for a predicate; ``tol > 0`` relaxes every row by ``tol`` (closed form).
        """
        tol = or_default(tol, 0.0)
        Y = np.atleast_2d(np.asarray(Y, dtype=np.float64))
        if tol == 0.0 and self.kind == "class":
            return np.argmax(Y, axis=1) == self.value
        V = Y @ self.C.T - self.d
        if tol == 0.0:
            ok = np.where(self.strict[None, :], V < 0, V <= 0)
        else:
            ok = V <= tol
        return np.all(ok, axis=1)

    def margin(self, Y: Any) -> np.ndarray:
        """``max_i (C_i y - d_i)`` per row: <= 0 inside the (closed) decision set."""
        Y = np.atleast_2d(np.asarray(Y, dtype=np.float64))
        return np.max(Y @ self.C.T - self.d, axis=1)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "value": self.value, "label": self.label}


def sign_decision(positive: bool, label: str | None = None) -> Decision:
    """``f >= 0`` ("positive") or ``f < 0`` ("negative") for a one-output network.

    Example:
        >>> sign_decision(False).holds([[0.0], [-1.0]]).tolist()
        [False, True]
    """
    s = -1.0 if positive else 1.0
    name = "positive" if positive else "negative"
    return Decision("sign", name, np.array([[s]]), np.zeros(1), np.array([not positive]),
                    label or name)


def class_decision(k: int, m: int, label: str | None = None) -> Decision:
    """``argmax f = k`` among ``m`` outputs: ``y_j - y_k <= 0`` for every ``j != k``.

    Example:
        >>> class_decision(0, 2).C.tolist()
        [[-1.0, 1.0]]
    """
    if not 0 <= k < m:
        raise ExplainError(f"class {k} out of range: the network has {m} outputs (0..{m - 1})")
    rows = [j for j in range(m) if j != k]
    C = np.zeros((m - 1, m))
    C[np.arange(m - 1), rows] = 1.0
    C[:, k] = -1.0
    return Decision("class", int(k), C, np.zeros(m - 1), np.array([j < k for j in rows]),
                    label or f"class {k}")


def predicate_decision(C: Any, d: Any, label: str | None = None) -> Decision:
    """The conjunction ``C y <= d`` (closed; ``C`` of shape (k, m)).

    Example:
        >>> predicate_decision([[1.0, 0.0]], [0.5]).holds([[0.2, 9.0]]).tolist()
        [True]
    """
    C = np.atleast_2d(np.asarray(C, dtype=np.float64))
    d = np.asarray(d, dtype=np.float64).reshape(-1)
    if C.shape[0] != d.shape[0] or C.shape[0] == 0:
        raise ExplainError(f"predicate: C has shape {C.shape} but d has {d.shape[0]} entries")
    if not (np.all(np.isfinite(C)) and np.all(np.isfinite(d))):
        raise ExplainError("predicate: C and d must be finite")
    text = " and ".join(
        " + ".join(f"{v:g}*y{j}" for j, v in enumerate(row) if v != 0) + f" <= {di:g}"
        for row, di in zip(C, d, strict=True)
    )
    return Decision("predicate", None, C, d, np.zeros(C.shape[0], dtype=bool), label or text)


def check_class_names(class_names: Any, m: int) -> list[str] | None:
    """The class names as a list of ``m`` distinct names, or None (one clear error when
    they do not fit a network with ``m`` outputs).

    Names are looked up by position (class ``k`` is ``class_names[k]``), so a list of
    another length would silently name the wrong classes.  A one-output network decides
    by its sign ("positive" / "negative") and takes no class names.

    Example:
        >>> check_class_names(("left", "right"), 2)
        ['left', 'right']
    """
    if class_names is None:
        return None
    if isinstance(class_names, str):
        raise ExplainError(f"class_names: give a list of names, not one string ({class_names!r})")
    try:
        names = [str(n) for n in class_names]
    except TypeError:
        raise ExplainError(f"class_names: give a list of names, got {class_names!r}") from None
    if m == 1:
        raise ExplainError(f"class_names: {len(names)} names given, but a one-output network "
                           "decides by its sign ('positive' / 'negative') and has no classes")
    if len(names) != m:
        raise ExplainError(f"class_names: {len(names)} names given; the network has {m} outputs")
    if len(set(names)) != m:
        dup = next(n for n in names if names.count(n) > 1)
        raise ExplainError(f"class_names: the name {dup!r} appears twice")
    return names


def as_decision(net: Network, decision: Any, class_names: Any = None) -> Decision:
    """Turn a user's decision into a :class:`Decision` for ``net``.

    Accepts "positive"/"negative" (one output), a class index or class name (several
    outputs), a :class:`~relulab.spec.OutputConstraint`, a pair ``(C, d)``, or a
    :class:`Decision`.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0, 0.0], [0.0, 1.0]]], [[0.0, 0.0]])
        >>> as_decision(net, 1).label
        'class 1'
    """
    m = net.output_dim
    names = check_class_names(class_names, m)
    if isinstance(decision, Decision):
        dec = decision
    elif isinstance(decision, str) and names is not None and decision in names:
        # a class name given wins over the sign words ("negative"/"positive" classes)
        dec = class_decision(names.index(decision), m, decision)
    elif isinstance(decision, str) and decision.lower() in ("positive", "negative", "pos", "neg"):
        if m != 1:
            raise ExplainError(f"decision {decision!r} is a sign: the network has {m} outputs; "
                               "give a class index")
        dec = sign_decision(decision.lower().startswith("pos"))
    elif isinstance(decision, str) and decision.strip().isdigit() and m > 1:
        return as_decision(net, int(decision), class_names)
    elif isinstance(decision, (int, np.integer)) and not isinstance(decision, bool):
        if m == 1:
            raise ExplainError("a one-output network decides by the sign of its output: "
                               "give 'positive' or 'negative', not a class index")
        lab = names[int(decision)] if names is not None and 0 <= int(decision) < len(names) else None
        dec = class_decision(int(decision), m, lab)
    elif hasattr(decision, "C") and hasattr(decision, "d"):
        dec = predicate_decision(decision.C, decision.d)
    elif isinstance(decision, tuple) and len(decision) == 2:
        dec = predicate_decision(*decision)
    else:
        raise ExplainError(
            f"unknown decision {decision!r}: give 'positive'/'negative' (one output), a class "
            "index or name, or a predicate (C, d)"
        )
    if dec.n_outputs != m:
        raise ExplainError(f"decision reads {dec.n_outputs} outputs; the network has {m}")
    return dec


def decision_at(net: Network, x: Any, class_names: Any = None) -> Decision:
    """The decision the network takes at ``x``: its sign (one output) or argmax class.

    Example:
        >>> from relulab import Network
        >>> decision_at(Network([[[1.0]]], [[-1.0]]), [0.5]).label
        'negative'
    """
    fnet = net.float() if net.is_exact else net
    y = fnet(np.asarray(x, dtype=np.float64).reshape(1, -1))[0]
    if net.output_dim == 1:
        return sign_decision(bool(y[0] >= 0))
    k = int(np.argmax(y))
    names = check_class_names(class_names, net.output_dim)
    return class_decision(k, net.output_dim, names[k] if names is not None else None)


def all_decisions(net: Network, class_names: Any = None) -> list[Decision]:
    """Every decision of the network: both signs, or every class.

    Example:
        >>> from relulab import Network
        >>> [d.label for d in all_decisions(Network([[[1.0]]], [[0.0]]))]
        ['positive', 'negative']
    """
    names = check_class_names(class_names, net.output_dim)
    if net.output_dim == 1:
        return [sign_decision(True), sign_decision(False)]
    return [class_decision(k, net.output_dim, names[k] if names is not None else None)
            for k in range(net.output_dim)]
