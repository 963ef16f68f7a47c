"""Recover a fully connected ReLU network from forward queries alone.

:func:`extract_relu` runs the attack layer by layer (see :mod:`.layer` for one layer,
:mod:`.signs` for orientations, :mod:`.trace` for deeper layers):

1. find the first layer's hyperplanes from critical points on random lines, cluster the
   critical points by hyperplane, infer the width when it is not given, refine each
   hyperplane by least squares through exact critical points;
2. orient each neuron (one-sided test when the normals are independent; otherwise the
   orientation is left open for step 3 or 4 to decide);
3. deeper layers: trace each neuron's kink surface across the cells of the known layers
   and solve for its row; the same rows say which neurons of the layer before are stored
   the wrong way round (a subset sum: polynomial when its terms are independent);
4. fit the output layer by least squares on the recovered features; the last hidden
   layer's orientations come from the affine part of that fit;
5. (two or more hidden layers, or ``polish=True``) polish all parameters jointly on
   oracle rows already answered (:mod:`.polish`; no new query), kept only if the
   largest output error on held-out rows does not grow.

What cannot be identified from queries is reported, not invented: a neuron that never
switches (dead or always active on what was explored), one with zero outgoing weight, and
parallel neurons (one hyperplane: they merge into one neuron).

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> net = Network([[[1.0, 0.5], [-1.0, 2.0], [0.3, -1.0]], [[1.0, -2.0, 0.5]]],
    ...               [[0.1, -0.2, 0.3], [0.0]])
    >>> r = extract_relu(net, 2)
    >>> r.status, r.network.widths, r.fidelity.equivalence
    ('complete', (3,), 'equal')
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..domain import Box
from ..errors import is_int_at_least, is_positive_seconds
from ..limits import Deadline
from ..network import Network
from ..results import Result
from ..tolerance import TINY
from .fidelity import Fidelity, fidelity, without_neurons
from .layer import LayerFound, find_layer
from .oracle import BudgetExhausted, ExtractError, QueryOracle
from .polish import assign_critical
from .polish import polish as polish_net
from .signs import EXTRACTION_DEADLINE, one_sided, other_subset, subset_signs
from .space import Space
from .trace import trace_layer

__all__ = ["ExtractionResult", "extract_relu"]

# The output fit is exact on recovered features when every neuron was found; a larger
# relative residual on fresh points means something was missed.
FIT_RTOL = 1e-7  # tol: see the comment above
# A last-layer neuron whose fitted output term is below this x the largest term is not
# used by the output (true output weights of trained networks are 1e-3 of the largest).
ZERO_OUT_RTOL = 1e-8  # tol: see the comment above
# A last-layer weight fitted from the output needs inputs where both of its neurons are
# active; this many are sought for the fit and as many again for its check, and fewer
# than MIN_SUPPORT rows with the pair active leave the weight unidentified.
SUPPORT_ROWS = 8
MIN_SUPPORT = 3
# A recovered network off the oracle's kept rows by more than this (relative; correct
# extractions measure 1e-15..2e-9 there) missed a neuron: the result is partial, unpolished.
KEPT_RTOL = 1e-6  # tol: see the comment above
# Oracle rows kept for the final polish (reservoir), at most this many floats in all.
KEEP_FLOATS = 1_000_000
KEEP_ROWS = 20_000
# Critical points per neuron given to the polish (a random subset of those traced).
CRITICAL_PER_NEURON = 40
POLISH_CRITICAL = False  # the critical-point equations in the polish (see docs/extract.md)
# The final polish runs by default from this many hidden layers (one hidden layer: not
# measured with the polish; 784-128-1 has 100k parameters, beyond its dense normal matrix).
POLISH_MIN_LAYERS = 2


@dataclass(frozen=True)
class ExtractionResult(Result):
    """What :func:`extract_relu` recovered.

    Attributes:
        network: the recovered network (None when the attack stopped before the output
            layer could be fitted).
        status: ``complete`` (the attack ran to its end and its output fit explains the
            oracle on the explored region; what holds there only is named in
            ``unidentified``, and away from the region the recovered network may differ)
            or ``partial`` (budget reached, a layer not recovered).
        queries: rows queried from the oracle; time: seconds.
        widths: hidden widths recovered; widths_expected: the ones given (or None).
        orientation: per layer, how neuron orientations were decided
            (``one-sided``, ``affine-fit``, ``skip``: left to an affine skip term).
        unidentified: what cannot be identified from queries, and how weights the traces
            missed were completed (one line each); with a reference, also its neurons
            that no query on the fidelity box can show (proved dead or always active
            there, or feeding only neurons dead there).
        polish: what the final joint polish did (None when it did not run).
        fit_residual: relative output error of the final fit on fresh points.
        fidelity: comparison with the reference network, when one is known.
        lines, critical_points: work done.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0], [-2.0]], [[1.0, 1.0]]], [[0.5, 1.0], [0.0]])
        >>> r = extract_relu(net, 1)
        >>> r.status, r.network.widths, r.fidelity.equivalence
        ('complete', (2,), 'equal')
    """

    network: Network | None
    status: str
    queries: int
    time: float
    widths: tuple[int, ...]
    widths_expected: tuple[int, ...] | None
    orientation: tuple[str, ...]
    unidentified: tuple[str, ...]
    fit_residual: float | None
    fidelity: Fidelity | None
    lines: int
    critical_points: int
    message: str
    polish: str | None = None
    layers: list = field(default_factory=list, repr=False)

    @property
    def log2_queries(self) -> float:
        return math.log2(self.queries) if self.queries > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d.pop("layers", None)
        d["network"] = None if self.network is None else repr(self.network)
        d["log2_queries"] = self.log2_queries
        return d


@dataclass
class _State:
    layers: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    orient: list[str] = field(default_factory=list)
    found: list[LayerFound] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    current: LayerFound | None = None
    traced: list = field(default_factory=list)
    unsupported: list = field(default_factory=list)  # last-layer weights the output fit cannot see
    polish: str | None = None  # what the final polish did


def _hidden(layers: list[tuple[np.ndarray, np.ndarray]], X: np.ndarray) -> np.ndarray:
    H = X
    for U, b in layers:
        H = np.maximum(H @ U.T + b, 0.0)
    return H


def _fit_points(st: _State, rng, d: int, scale: float) -> np.ndarray:
    """Inputs for the output fit, chosen without queries: random candidates at a few
    scales, and for every last-layer neuron three candidates where the recovered network
    says it is active (so that no feature column is all zero)."""
    n_last = st.layers[-1][0].shape[0] if st.layers else 0
    k = 2 * (n_last + d + 1) + 10
    X = scale * rng.normal(size=(k, d))
    if st.layers:
        C = scale * rng.normal(size=(4000, d)) * rng.choice([0.5, 1.0, 2.0, 4.0], size=(4000, 1))
        H = _hidden(st.layers, C)
        extra = []
        traced = st.traced[-1].neurons if st.traced and len(st.traced) == len(st.layers) - 1 else None
        for j in range(H.shape[1]):
            on = np.nonzero(H[:, j] > 0)[0]
            if on.size:
                extra.append(C[rng.choice(on, size=min(3, on.size), replace=False)])
            if traced is not None and j < len(traced):
                # Both sides of its traced surface: a rarely active (or rarely inactive)
                # neuron's output weight and orientation show only there.
                P = np.asarray(traced[j].points)
                N = np.asarray(traced[j].normals)
                idx = rng.choice(P.shape[0], size=min(3, P.shape[0]), replace=False)
                extra.append(np.vstack([P[idx] + 0.1 * scale * N[idx], P[idx] - 0.1 * scale * N[idx]]))
        # Weights of the last layer left to the output fit show only where both their
        # neurons are active: look for such inputs (still without queries) out to 8x the
        # scale, so that the fit and its check on fresh points both see them.
        unk = _unknown_last(st)
        if unk:
            extra.append(_support_points(st, rng, d, scale, unk))
        if extra:
            X = np.vstack([X, *extra])
    return X


def _support_points(st: _State, rng, d: int, scale: float, pairs) -> np.ndarray:
    """Inputs (chosen without queries, out to 8x the scale) where the recovered network
    has both neurons of each last-layer weight ``(q, l)`` in ``pairs`` active: a weight left
    to the output fit shows only there, so the fit and its check on fresh points need them."""
    U, b = st.layers[-1]
    C = scale * rng.normal(size=(20000, d)) * rng.choice([1.0, 2.0, 4.0, 8.0], size=(20000, 1))
    Hp = _hidden(st.layers[:-1], C)
    P = Hp @ U.T + b
    out = [np.zeros((0, d))]
    for q, lidx in pairs:
        on = np.nonzero((P[:, q] > 0) & (Hp[:, lidx] > 0))[0]
        if on.size:
            out.append(C[rng.choice(on, size=min(SUPPORT_ROWS, on.size), replace=False)])
    return np.vstack(out)


def _lstsq(F: np.ndarray, Y: np.ndarray) -> np.ndarray:
    coef, *_ = np.linalg.lstsq(F, Y, rcond=None)
    return coef


def _traced_layer(o, st: _State, k: int, d: int, rng, wk, scale, patience, atol, refine,
                  last: bool = False):
    """Layer ``k + 1`` by tracing (:mod:`.trace`); it also orients layer ``k``.  ``last``:
    it is the last hidden layer (known architecture), so points the output is not spanned
    on witness missing neurons."""
    U_prev, b_prev = st.layers[-1]
    tl = trace_layer(o, st.layers[:-1], U_prev, b_prev, d, rng, width=wk, scale=scale,
                     patience=patience, atol=atol, refine=refine, last=last)
    st.traced.append(tl)
    st.notes.extend(f"layer {k + 1}: {n}" for n in tl.notes)
    if tl.flip is not None and tl.W.shape[0]:
        f = tl.flip
        st.layers[-1] = (np.where(f[:, None], -U_prev, U_prev), np.where(f, -b_prev, b_prev))
        if st.orient[-1] in ("open", "none"):
            st.orient[-1] = "traced"
        elif f.any():
            st.orient[-1] = "traced (corrected)"
    elif tl.W.shape[0] and st.orient[-1] == "open":
        st.notes.append(f"layer {k}: orientation not decided (no subset of flips explains the "
                        f"traced surfaces of layer {k + 1})")
    bad = [i for i, n in enumerate(tl.neurons) if n.unknown]
    if bad:
        st.notes.append(f"layer {k + 1}: neuron(s) {bad} unidentified weights from layer {k} "
                        f"neurons {sorted({j for i in bad for j in tl.neurons[i].unknown})} (those "
                        "never switch on the traced surface; set to 0)")
    return tl.W, tl.b, "open"


def _unknown_last(st: _State) -> list[tuple[int, int]]:
    """(row, previous-layer neuron) of the last hidden layer's weights its traces left
    unidentified (set to 0)."""
    if not st.traced or len(st.traced) != len(st.layers) - 1:
        return []
    rows = st.traced[-1].neurons
    if len(rows) != st.layers[-1][0].shape[0]:
        return []
    return [(q, lidx) for q, t in enumerate(rows) for lidx in t.unknown]


def _complete_from_output(st: _State, X: np.ndarray, Y: np.ndarray) -> list[tuple[int, int]]:
    """Weights of the last hidden layer that its kink surfaces cannot show (the surface of
    neuron ``q`` never reaches neuron ``l``'s hyperplane: a neuron active almost everywhere
    whose rare inactive region lies on one side of ``l``) still shape the output wherever
    ``q`` is active: there ``f`` holds ``a_q (p_q + delta h_l)``.  So the output is fitted
    with the extra features ``[p_q > 0] h_l`` (the activity from the current row); their
    coefficient is ``a_q delta`` (whatever the stored orientation of ``q``, since
    ``relu(-p) = relu(p) - p`` and ``h`` is among the features), the row is updated and the
    fit repeated until the activity stops changing.  Returns the weights fixed (the caller
    checks the final fit on fresh inputs)."""
    unk = _unknown_last(st)
    if not unk:
        return []
    U, b = st.layers[-1]
    U = U.copy()
    ones = np.ones((X.shape[0], 1))
    Hp = _hidden(st.layers[:-1], X)
    n = U.shape[0]
    # Rows the current row puts on the wrong side bias each fit, and the error then halves
    # per round (measured), so allow rounds enough to reach rounding.
    for _ in range(80):
        P = Hp @ U.T + b
        H = np.maximum(P, 0.0)
        E = np.stack([(P[:, q] > 0) * Hp[:, lidx] for q, lidx in unk], axis=1)
        coef = _lstsq(np.hstack([H, E, Hp, ones]), Y)
        A, e = coef[:n], coef[n:n + len(unk)]
        step = 0.0
        for j, (q, lidx) in enumerate(unk):
            aa = float(A[q] @ A[q])
            if aa <= TINY:
                continue
            delta = float(A[q] @ e[j]) / aa
            U[q, lidx] += delta
            step = max(step, abs(delta) / (np.abs(U[q]).max() + TINY))
        if step <= 1e-15:  # tol: converged to rounding
            break
    st.layers[-1] = (U, b)
    # A weight is shown by the output only on rows where both of its neurons are active;
    # without enough of them the fit left it where it was (0), which no check can catch.
    P = Hp @ U.T + b
    st.unsupported = [(q, lidx) for q, lidx in unk
                      if int(((P[:, q] > 0) & (Hp[:, lidx] > 0)).sum()) < MIN_SUPPORT]
    return [w for w in unk if w not in st.unsupported]


def _output_layer(oracle, st: _State, rng, d, scale, orient_last: str):
    """Fit ``f = V h + c`` (and, when the last layer's orientation is open, find it from
    the affine part).  Returns (network, relative residual on fresh points, orientation)."""
    X = _fit_points(st, rng, d, scale)
    Y = oracle(X)
    filled = _complete_from_output(st, X, Y)
    for _ in range(3):
        # The fit moved the weights, so where the pairs are active moved too: look again.
        Xe = _support_points(st, rng, d, scale, st.unsupported) if st.unsupported else None
        if Xe is None or not Xe.shape[0]:
            break
        X, Y = np.vstack([X, Xe]), np.vstack([Y, oracle(Xe)])
        filled = _complete_from_output(st, X, Y)
    if filled:
        st.notes.append(f"layer {len(st.layers)}: weights (row, neuron of layer {len(st.layers) - 1}) "
                        f"{filled} fitted from the output (the rows' kink surfaces never cross those "
                        "neurons' hyperplanes; the output fit below checks them)")
    if st.unsupported:
        st.notes.append(f"layer {len(st.layers)}: weights (row, neuron of layer {len(st.layers) - 1}) "
                        f"{st.unsupported} not identified: no input was found where both neurons "
                        "are active, so neither the traces nor the output show them (left at 0)")
    H = _hidden(st.layers, X)
    ones = np.ones((X.shape[0], 1))
    skip = None
    if st.layers and orient_last == "open":
        # f = sum a_i relu(z_i) + M z_prev + c with z_prev the previous layer's output.
        U, b = st.layers[-1]
        Hp = _hidden(st.layers[:-1], X)
        coef = _lstsq(np.hstack([H, Hp, ones]), Y)
        n = H.shape[1]
        A, M = coef[:n], coef[n:-1].T
        flip = subset_signs(A, U, M)
        if flip is not None:
            alt = other_subset(A, U, M, flip)
            if alt is not None:
                # said nothing: an "equal" extraction 3 off in its parameters, unexplained
                which = [int(i) for i in np.flatnonzero(alt != flip)]   # 0-based, as every note
                st.notes.append(
                    f"layer {len(st.layers)}: the orientation of neurons {which} (of the recovered layer) is not identifiable "
                    "from queries: flipping them (relu(z) <-> relu(-z)) changes only the affine part, "
                    "which the output fit absorbs, and both choices fit; one was taken")
            U = np.where(flip[:, None], -U, U)
            b = np.where(flip, -b, b)
            st.layers[-1] = (U, b)
            orient_last = "affine-fit"
            H = _hidden(st.layers, X)
        elif len(st.layers) == 1:
            orient_last = "skip"
            skip = True
        else:
            orient_last = "unresolved"
    feats = np.hstack([H, X, ones]) if skip else np.hstack([H, ones])
    coef = _lstsq(feats, Y)
    n = H.shape[1]
    V = coef[:n].T
    if st.layers and n > 1:
        # A hyperplane taken for a neuron that the output does not use (a second, spoilt
        # estimate of a neuron's plane) gets a zero output weight: drop it and fit again.
        size = np.abs(V).max(axis=0) * (np.abs(H).max(axis=0) + TINY)
        zero = size <= ZERO_OUT_RTOL * float(size.max())
        if zero.any() and not zero.all():
            U, b = st.layers[-1]
            st.layers[-1] = (U[~zero], b[~zero])
            st.notes.append(f"layer {len(st.layers)}: {int(zero.sum())} hyperplane(s) with no output "
                            "weight (not a neuron of the function): dropped")
            H = H[:, ~zero]
            feats = np.hstack([H, X, ones]) if skip else np.hstack([H, ones])
            coef = _lstsq(feats, Y)
            n = H.shape[1]
            V = coef[:n].T
    if skip:
        S, c = coef[n:-1].T, coef[-1]
    else:
        c = coef[-1]
    # Check on fresh points.
    Xv = _fit_points(st, rng, d, scale)
    Yv = oracle(Xv)
    Hv = _hidden(st.layers, Xv)
    P = Hv @ V.T + c + (Xv @ S.T if skip else 0.0)
    res = float(np.max(np.abs(P - Yv)) / (1.0 + np.max(np.abs(Yv))))
    if st.layers:
        Ws = [U for U, _ in st.layers] + [V]
        bs = [b for _, b in st.layers] + [c]
    else:
        Ws, bs = [V if V.size else np.zeros((Y.shape[1], d))], [c]
    net = Network(Ws, bs, skip=(S, c * 0.0) if skip else None)
    return net, res, orient_last


def extract_relu(
    oracle: Any,
    d: int | None = None,
    widths: tuple[int, ...] | list[int] | None = None,
    *,
    budget: int | None = None,
    precision: float | None = None,
    scale: float = 1.0,
    seed: int = 0,
    refine: bool = True,
    reference: Network | None = None,
    domain: Box | None = None,
    patience: int = 3,
    max_layers: int = 8,
    equivalence_timeout: float | None = 30.0,
    polish: bool | None = None,
    time_limit: float | None = None,
) -> ExtractionResult:
    """Recover a ReLU network from its forward queries (see the module docstring).

    Args:
        oracle: a Network, torch module, onnxruntime session, batched callable ``X -> Y``
            or a :class:`QueryOracle`.  Only its forward outputs are used.
        d: the input size (taken from the oracle when it says).
        widths: the hidden widths if known (stops the search per layer once found and
            fixes the depth); None infers widths and depth.
        budget: the most rows that may be queried; reaching it returns a partial result.
        precision: the absolute resolution of the oracle's outputs (None: full float64);
            e.g. ``0.5 * 10**-k`` for outputs rounded to ``k`` decimals.
        scale: the size of the input region explored (lines through points of about this
            norm per coordinate).
        reference: the original network, only to report fidelity (a Network oracle is
            its own reference); the attack never reads it.
        domain: the box of the fidelity check (default ``[-scale, scale]^d``).
        polish: refine all parameters jointly at the end (:mod:`.polish`) on oracle rows
            kept while the attack ran (no new query); None: only for networks with
            POLISH_MIN_LAYERS (two) or more hidden layers.  The oracle keeps a bounded
            sample of its rows (:meth:`QueryOracle.keep_rows`) for this and for the final
            check: a result off those rows by more than KEPT_RTOL is ``partial`` (and not
            polished).
        time_limit: seconds for the attack and the polish (None: none); at the limit the
            next query batch is refused as past the budget and the result is ``partial``;
            the polish does not start when its first step would not end in the time left
            (it only refines, so the status stays), and stops there.  The fidelity check
            has its own ``equivalence_timeout``.

    Returns:
        An :class:`ExtractionResult`.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[2.0, -1.0], [1.0, 1.0]], [[1.0, 3.0]]], [[0.5, -0.25], [1.0]])
        >>> r = extract_relu(net, 2)
        >>> r.status, r.fidelity.max_abs_error < 1e-9, r.fidelity.equivalence
        ('complete', True, 'equal')
    """
    t0 = time.monotonic()
    # integers where integers are meant: widths="16" was read as (1, 6), d=2.5 as 2
    for name, v, lo in (("d", d, 1), ("budget", budget, 0), ("seed", seed, 0),
                        ("patience", patience, 1), ("max_layers", max_layers, 1)):
        if v is not None and not is_int_at_least(v, lo):
            raise ExtractError(f"extract_relu: {name} must be an integer >= {lo}, got {v!r}")
    if widths is not None and (isinstance(widths, (str, bytes)) or not hasattr(widths, "__iter__")
                               or not all(is_int_at_least(w, 1) for w in widths)):
        raise ExtractError(f"extract_relu: widths must be a list of integers >= 1, got {widths!r}")
    if precision is not None and not isinstance(precision, (int, float)):
        raise ExtractError(f"extract_relu: precision must be a number, got {precision!r}")
    # a caller's QueryOracle is wrapped, not reused: its budget, time limit and count
    # still apply (queries go through it), while this attack's count, limit, output scale
    # and kept rows are its own
    o = QueryOracle(oracle, d, budget)
    d = o.input_dim if d is None else int(d)
    if d is None or d <= 0:
        raise ExtractError("extract_relu: give the input size d (the oracle does not say)")
    if o.input_dim is None:
        o.input_dim = d
    if widths is not None:
        widths = tuple(int(w) for w in widths)
    # (2 x scale finite: the explored box [-scale, scale]^d must have a finite width)
    if not (isinstance(scale, (int, float)) and scale > 0 and math.isfinite(2.0 * scale)):
        raise ExtractError(f"extract_relu: scale must be a finite number > 0 (with 2 x scale finite), "
                           f"got {scale!r}")
    if precision is not None and not (precision >= 0 and math.isfinite(precision)):
        raise ExtractError(f"extract_relu: precision must be a finite number >= 0, got {precision}")
    if reference is None and isinstance(oracle, Network):
        reference = oracle
    if reference is not None and not isinstance(reference, Network):
        raise ExtractError(f"extract_relu: reference must be a relulab Network, got "
                           f"{type(reference).__name__}")
    if reference is not None and reference.input_dim != d:
        raise ExtractError(f"extract_relu: reference takes {reference.input_dim} inputs, the "
                           f"oracle {d} (d)")
    if equivalence_timeout is not None and not is_positive_seconds(equivalence_timeout):
        raise ExtractError(f"extract_relu: equivalence_timeout must be a number > 0 or None, "
                           f"got {equivalence_timeout!r}")
    if time_limit is not None and not is_positive_seconds(time_limit):
        raise ExtractError(f"extract_relu: time_limit must be a number of seconds > 0 or None, "
                           f"got {time_limit!r}")
    if domain is not None and (not isinstance(domain, Box) or domain.dim != d):
        # checked before the attack: the fidelity check refused it only after every query
        raise ExtractError(f"extract_relu: domain must be a Box of dimension {d}, got {domain!r}")
    # Every tolerance of the attack is relative to 1 + |value|: outputs far below 1 are
    # read in their own scale (outputs of 5e-9 came back "complete" as an affine map, the
    # kinks below the absolute floor), and an output far from 0 compared with how much it
    # varies is read less its offset (a bias of 1e8 hid neurons whose kinks are of size
    # 1); each output on its own (one of 1.6e4 hid another of 2.8e-4).  The recovered
    # network is mapped back at the end.  (Probed before rows are kept, with its own
    # generator: the attack itself is unchanged.)
    off, unit, probe = _output_units(o, d, scale, np.random.default_rng(seed + 1))
    coarse = None if precision is not None or probe is None else detected_precision(probe)
    if coarse is not None:
        # outputs rounded to float32 (or to k decimals) read as exact float64 kept the
        # attack looking for kinks in the rounding, without end when no limit was given
        precision = coarse[0]
    if reference is not None and o.output_dim is not None and reference.output_dim != o.output_dim:
        # known from the first probe: refused only after the whole attack, it lost the result
        raise ExtractError(f"extract_relu: reference has {reference.output_dim} outputs, the oracle "
                           f"{o.output_dim}")
    if not o.keeping:  # for the polish, and for the check that the result explains them
        o.keep_rows(min(KEEP_ROWS, KEEP_FLOATS // (d + 1)), seed)
    rng = np.random.default_rng(seed)
    atol = 0.0 if precision is None else float(precision)
    if np.any(off != 0.0) or np.any(unit != 1.0):
        o.out_offset, o.out_scale = off, unit
        # the oracle's own resolution, in the units read: float64 rounding of the
        # outputs' size (the offset included), and the precision given
        size = np.abs(off) + unit
        atol = float(np.max((atol + OUTPUT_ULPS * np.finfo(np.float64).eps * size) / unit))
    st = _State()
    if coarse is not None:
        st.notes.append(f"the oracle's outputs are {coarse[1]}: read with precision {coarse[0]:.3g} "
                        "(give precision= to set it)")
    net, res, status = None, None, "complete"
    unid_layers: set[int] = set()  # layers whose traces left weights unidentified
    n_layers = len(widths) if widths is not None else max_layers
    # the limit stops the attack at its next query batch, as the budget does (partial);
    # an oracle that is not piecewise linear otherwise keeps it looking for kinks
    deadline = None if time_limit is None else Deadline(float(time_limit))
    o.deadline = deadline
    token = EXTRACTION_DEADLINE.set(o.deadline)   # the orientation MILPs get what is left
    try:
        space = Space.input(d, scale)
        for k in range(n_layers):
            wk = None if widths is None else widths[k]
            if k == 0:
                st.current = LayerFound([], 0, [], 0, 0)
                fl = find_layer(o, space, rng, width=wk, patience=patience, atol=atol,
                                refine=refine, found=st.current)
                st.found.append(fl)
                U = np.array([nr.u for nr in fl.neurons]).reshape(-1, d)
                b = np.array([nr.beta for nr in fl.neurons])
                orient = "none"
                if U.shape[0] and np.linalg.matrix_rank(U) == U.shape[0]:
                    flip = one_sided(o, U, [nr.points[0] for nr in fl.neurons], 0.05 * scale)
                    for i, f in enumerate(flip):
                        if f:
                            U[i], b[i] = -U[i], -b[i]
                    orient = "one-sided" if all(f is not None for f in flip) else "open"
                elif U.shape[0]:
                    orient = "open"
            else:
                U, b, orient = _traced_layer(o, st, k, d, rng, wk, scale, patience, atol, refine,
                                             last=widths is not None and k == len(widths) - 1)
                if any(n.startswith(f"layer {k + 1}:") and "unidentified" in n for n in st.notes):
                    unid_layers.add(k + 1)
            if U.shape[0] == 0:
                if widths is not None:
                    st.notes.append(f"layer {k + 1}: no neuron switches on the explored region "
                                    "(dead or always active): not identifiable")
                    status = "partial"
                break
            if wk is not None and U.shape[0] < wk:
                st.notes.append(
                    f"layer {k + 1}: {wk - U.shape[0]} of {wk} neurons never seen: dead or always "
                    "active on the explored region, zero outgoing weight, or parallel to another "
                    "neuron (merged into it)")
                status = "partial"
            st.layers.append((U, b))
            st.orient.append(orient)
            last = widths is not None and k == len(widths) - 1
            if last:
                break
        orient_last = st.orient[-1] if st.orient and st.orient[-1] != "open" else (
            "open" if st.orient else "none")
        net, res, o_last = _output_layer(o, st, rng, d, scale, orient_last)
        if any(n.startswith(f"layer {len(st.layers)}: weights") and "fitted from the output" in n
               for n in st.notes) and res <= FIT_RTOL and not st.unsupported:
            unid_layers.discard(len(st.layers))  # the output fit identified them (checked)
        if unid_layers:
            status = "partial"
        if st.orient:
            st.orient[-1] = o_last
        if o_last == "unresolved":
            st.notes.append(f"layer {len(st.layers)}: orientation not decided by the output fit (no "
                            "subset of flips explains its affine part); the fit may still match "
                            "the function where it was measured")
            status = "partial"
        if widths is not None and len(st.layers) < len(widths):
            status = "partial"
        if res > FIT_RTOL:
            st.notes.append(f"the output fit leaves a relative error of {res:.3g}: some neuron or "
                            "layer was not recovered")
            status = "partial"
        elif widths is not None and any(U.shape[0] < w for (U, _), w in zip(st.layers, widths, strict=False)):
            st.notes.append(f"the output is fitted without the neurons never seen (relative "
                            f"error {res:.3g} on fresh inputs): they are not identifiable from queries "
                            "on the explored region (dead or always active there, or merged with a "
                            "parallel neuron); the recovered network is the function there")
    except BudgetExhausted as e:
        status = "partial"
        st.notes.append(f"stopped: {e}")
        if st.current is not None and st.current.neurons and (not st.found or st.found[-1] is not st.current):
            st.notes.append(f"layer {len(st.layers) + 1}: {len(st.current.neurons)} neuron(s) found "
                            "before the budget ran out")
    except BaseException:
        o.out_scale, o.out_offset = 1.0, 0.0
        raise
    finally:
        o.deadline = None  # no limit left for the polish and the final checks
        EXTRACTION_DEADLINE.reset(token)   # also when an error ends the attack
    kept_err = _kept_misfit(o, net)
    if kept_err is not None and kept_err > KEPT_RTOL and status == "complete":
        # the fit was checked near scale 1 only; rows the oracle answered elsewhere in the
        # explored region show a neuron seen there and not recovered
        status = "partial"
        st.notes.append(f"the recovered network misses the oracle's own answers on the rows it "
                        f"kept (largest relative error {kept_err:.3g}): some neuron seen there was "
                        "not recovered")
    if net is not None and res is not None and res <= FIT_RTOL and net.skip is None and (
            polish or (polish is None and len(st.layers) >= POLISH_MIN_LAYERS)) and o.kept[0].shape[0] \
            and kept_err is not None and kept_err <= KEPT_RTOL:
        # (the polish refines an extraction that fits to rounding; a structurally wrong one
        # it would only bend towards the far rows, away from the function near the box)
        net = _polish_step(o, st, net, rng, deadline)
    o.out_scale, o.out_offset = 1.0, 0.0
    if net is not None:
        net = _in_oracle_units(net, off, unit)
    elapsed = time.monotonic() - t0
    fid = None
    if reference is not None and net is not None:
        fbox = domain if domain is not None else Box(-scale * np.ones(d), scale * np.ones(d))
        fid = fidelity(reference, net, fbox, timeout=equivalence_timeout,
                       tol=_fidelity_tol(reference, fbox, seed))
        st.notes += _diagnose(reference, fid)
        if fid.equivalence == "different" and status == "complete":
            # "complete" says every queried row is explained; a re-checked witness of the
            # reference where no query went shows a neuron the attack never saw
            status = "partial"
            st.notes.append("the fidelity check found a re-checked input where the recovered network "
                            "and the reference differ by more than its tolerance: the queries did not "
                            "show the whole function (e.g. a neuron active only where no query went)")
    lines = sum(f.lines for f in st.found) + sum(t.lines for t in st.traced)
    cps = sum(len(f.critical_points) for f in st.found) + sum(t.seeds for t in st.traced)
    widths_found = tuple(U.shape[0] for U, _ in st.layers)
    if widths is not None and (len(widths_found) > len(widths)
                               or any(f > w for f, w in zip(widths_found, widths, strict=False))):
        # more neurons (or layers) than the architecture given: the function is recovered,
        # the stated architecture is contradicted (extract_glu says the same)
        if status == "complete":
            status = "partial"
        st.notes.append(f"hidden widths {list(widths_found)} found where widths={list(widths)} was given "
                        "(the widths given are wrong, or a neuron is spurious)")
    msg = (f"{status}: hidden widths {list(widths_found)} from {o.queries} queries "
           f"(2^{math.log2(max(o.queries, 1)):.1f})")
    hidden_ref = [n for n in st.notes if n.startswith("reference neuron") and " on the " in n]
    if hidden_ref:
        msg += (f"; {len(hidden_ref)} reference neurons are not observable on the fidelity box "
                "(see unidentified)")
        if fid is not None and fid.equivalence == "equal":
            msg += ": the recovered network is the function there only"
    return ExtractionResult(
        network=net, status=status, queries=o.queries, time=elapsed, widths=widths_found,
        widths_expected=widths, orientation=tuple(st.orient), unidentified=tuple(st.notes),
        fit_residual=res, fidelity=fid, lines=lines, critical_points=cps, message=msg, polish=st.polish,
        layers=[(U.copy(), b.copy()) for U, b in st.layers],
    )


# the fidelity check's tolerance relative to the outputs' size when they are below 1
FIDELITY_RTOL = 1e-6  # tol: equivalent's default EQUIV_TOL
# rows of the probe that measures the outputs' size
OUTPUT_PROBE_ROWS = 32
# outputs smaller than this (on the probe) are read in their own scale; larger ones as
# they are (the attack's tolerances were tuned on outputs of order 1 and above)
OUTPUT_SCALE_BELOW = 1e-3  # tol: far above the attack's 1e-9 kink floor


# an output whose middle value on the probe is more than this times its half-range there
# is read less that middle value
OFFSET_RATIO = 10.0
# the oracle's resolution in the units read: this many float64 ulps of the outputs' size
OUTPUT_ULPS = 4.0
# outputs found to be float32 numbers, or rounded to at most DETECT_MAX_DECIMALS decimals
# (a value within DETECT_ULPS float64 ulps of a multiple of 10^-k), on at least
# DETECT_MIN_VALUES distinct values of the probe, are read at that resolution
DETECT_MIN_VALUES = 8
DETECT_MAX_DECIMALS = 12
DETECT_ULPS = 8.0
# a kept-row misfit is relative to the output's range there, at least this much of its size
# (variations below the attack's kink floor are not resolved)
KEPT_FLOOR = 1e-9  # tol: the line search's DETECT_RTOL


def _output_units(o: QueryOracle, d: int, scale: float, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Per output, the ``(offset, scale)`` the attack reads the oracle in, from
    ``OUTPUT_PROBE_ROWS`` random points of ``[-scale, scale]^d`` (queries counted like the
    others), and the probe's outputs: the offset is the middle of the output's range there
    when that is more than ``OFFSET_RATIO`` times its half-range (else 0); the scale is
    the largest ``|y - offset|`` there when that is below ``OUTPUT_SCALE_BELOW`` (else 1).
    ``(0, 1, None)`` when the budget does not allow the probe; ``(0, 1)`` for an output
    constant on it."""
    try:
        Y = o(rng.uniform(-scale, scale, size=(OUTPUT_PROBE_ROWS, d)))
    except BudgetExhausted:
        return np.zeros(1), np.ones(1), None
    mid = (Y.max(axis=0) + Y.min(axis=0)) / 2
    half = (Y.max(axis=0) - Y.min(axis=0)) / 2
    off = np.where((half > 0) & (np.abs(mid) > OFFSET_RATIO * half), mid, 0.0)
    var = np.abs(Y - off).max(axis=0)
    unit = np.where((var > 0) & (var < OUTPUT_SCALE_BELOW), var, 1.0)
    return off, unit, Y


def detected_precision(Y: np.ndarray) -> tuple[float, str] | None:
    """The resolution of outputs ``Y`` (of random inputs) that are all float32 numbers, or
    all rounded to ``k <= 12`` decimals, and what they are; None for outputs that look
    like full float64 (fewer than 8 distinct nonzero values decide nothing).  float32
    gives four ulps at twice the largest value seen (at half an ulp the attack still
    looked for kinks in the rounding, 20 s and on); k decimals ``0.5 * 10**-k``.  Random
    float64 values pass neither test by chance (each value is a float32 with probability
    2^-29, within ``8 eps |z|`` of an integer ``|z| < 2^44`` with probability 2^-4 at most).

    Example:
        >>> y = np.random.default_rng(0).normal(size=(32, 1))
        >>> detected_precision(y) is None, detected_precision(y.astype(np.float32))[1]
        (True, 'float32 numbers')
        >>> detected_precision(np.round(y, 6))
        (5e-07, 'rounded to 6 decimals')
    """
    y = np.asarray(Y, dtype=float).ravel()
    y = y[np.isfinite(y) & (y != 0.0)]
    if np.unique(y).size < DETECT_MIN_VALUES:
        return None
    # decimals first: whole numbers (k = 0) are float32 numbers too
    for k in range(DETECT_MAX_DECIMALS + 1):
        z = y * 10.0 ** k
        if np.abs(z).max() >= 2.0 ** 44:   # float64 values are too near integers there
            break
        if np.all(np.abs(z - np.round(z)) <= DETECT_ULPS * np.finfo(np.float64).eps * np.abs(z)):
            return 0.5 * 10.0 ** -k, f"rounded to {k} decimals"
    if np.all(y.astype(np.float32).astype(np.float64) == y):
        return 2.0 * float(np.abs(y).max()) * 2.0 ** -21, "float32 numbers"
    return None


def _in_oracle_units(net: Network, off: np.ndarray, unit: np.ndarray) -> Network:
    """``x -> unit * net(x) + off`` (per output): the recovered network in the oracle's units."""
    if np.all(off == 0.0) and np.all(unit == 1.0):
        return net
    u = np.broadcast_to(unit, (net.output_dim,)).astype(float)
    o = np.broadcast_to(off, (net.output_dim,)).astype(float)
    Ws = [*net.weights[:-1], np.asarray(net.weights[-1], dtype=float) * u[:, None]]
    bs = [*net.biases[:-1], np.asarray(net.biases[-1], dtype=float) * u + o]
    skip = None if net.skip is None else (np.asarray(net.skip[0], dtype=float) * u[:, None],
                                          np.asarray(net.skip[1], dtype=float) * u)
    return Network(Ws, bs, skip)


def _fidelity_tol(reference: Network, box: Box, seed: int) -> np.ndarray:
    """The fidelity check's tolerance per output: FIDELITY_RTOL of the range each output
    of the reference has on the box (sampled; the reference only, no oracle query), so
    that an output far below another, or varying little around a large offset, is checked
    at its own size (an absolute 1e-6 passed a 50 % error on outputs of 5e-9; 1e-6 of a
    bias of 1e8 passed an error of 2).  One tolerance for all, the smallest, called a
    recovery exact to rounding "different" where another output was 1e10 times larger."""
    X = box.sample(256, np.random.default_rng(seed + 2))
    Y = np.asarray(reference.float()(X), dtype=float)
    spread = Y.max(axis=0) - Y.min(axis=0)
    # an output constant on the samples is checked at the attack's own resolution
    # (KEPT_FLOOR of its size), not 1e-6 of its size: 1e-6 of an offset of 1e7 passed a
    # bump of 2.5, the function's whole range, that no sample met
    return np.where(spread > 0, FIDELITY_RTOL * spread, KEPT_FLOOR * (1.0 + np.abs(Y).max(axis=0)))


def _critical(st: _State, net: Network, rng) -> list[tuple[int, int, np.ndarray]]:
    """The critical points the attack located, as ``(layer, neuron, points)`` of ``net``
    (each set matched to the neuron whose surface it lies on; unmatched sets dropped)."""
    sets: list[tuple[int, list]] = [(0, nr.points) for f in st.found[:1] for nr in f.neurons]
    sets += [(k + 1, t.points) for k, tl in enumerate(st.traced) for t in tl.neurons]
    out = []
    for k, pts in sets:
        if not pts or k >= len(net.weights) - 1:
            continue
        P = np.asarray(pts, dtype=float)
        if P.shape[0] > CRITICAL_PER_NEURON:
            P = P[rng.choice(P.shape[0], size=CRITICAL_PER_NEURON, replace=False)]
        j = assign_critical(net, k, P)
        if j is not None:
            out.append((k, j, P))
    return out


def _kept_misfit(o: QueryOracle, net: Network | None) -> float | None:
    """Largest error of ``net`` on the oracle rows kept, per output relative to that
    output's range on them (at least KEPT_FLOOR of its size): relative to ``1 + max |Y|``
    an affine map passed for a function of size 4e-10 that the output probe saw as 0."""
    X, Y = o.kept
    if net is None or not X.shape[0]:
        return None
    spread = Y.max(axis=0) - Y.min(axis=0)
    floor = KEPT_FLOOR * (1.0 + np.abs(Y).max(axis=0))
    # an output constant on the kept rows (spread under the floor) is read absolutely: an
    # error up to the floor is a fit of that constant (relative to the floor, a constant
    # 1e5 fitted to 2 ulps read 2e-6 > KEPT_RTOL, and a correct network was "partial")
    denom = np.where(spread <= floor, floor / KEPT_RTOL, np.maximum(spread, floor))
    return float(np.max(np.abs(net(X) - Y) / denom))


def _polish_step(o: QueryOracle, st: _State, net: Network, rng, deadline: Deadline | None) -> Network:
    """The final joint polish (:mod:`.polish`) on the rows the oracle kept: no new query;
    within what is left of the time limit."""
    X, Y = o.kept
    net2, rep = polish_net(net, X, Y, critical=_critical(st, net, rng) if POLISH_CRITICAL else None,
                           deadline=deadline)
    st.polish = f"final polish (no new query, rows the oracle already answered): {rep.message}"
    return net2


def _diagnose(reference: Network, fid: Fidelity | None = None) -> list[str]:
    """What the reference network has that no query can show (from its normal form), and
    with ``fid``, what no query on its box can show: neurons proved dead or always active
    there, and those whose output only reaches neurons dead there."""
    from ..symmetry import canonical

    # the reference as given: the float copy of an exact 2^60 relu((1 + 2^-60) x) -
    # 2^60 relu(x) merges its two neurons into one of zero outgoing weight
    _, rep = canonical(reference)
    out = []
    if fid is not None and (fid.dead_on_domain or fid.active_on_domain):
        lo, hi = fid.domain.get("lo"), fid.domain.get("hi")
        where = "the fidelity box"
        if lo and hi and len(set(lo)) == 1 and len(set(hi)) == 1:
            where = f"the box [{lo[0]:g}, {hi[0]:g}]^{len(lo)}"
        for k, i in fid.dead_on_domain:
            out.append(f"reference neuron {i} of layer {k + 1} is never active on {where}: not "
                       "observable there (the recovered network may differ outside it)")
        for k, i in fid.active_on_domain:
            out.append(f"reference neuron {i} of layer {k + 1} is active everywhere on {where} "
                       "(linear there): its hyperplane is not observable there")
        if fid.dead_on_domain:
            _, rep2 = canonical(without_neurons(reference, fid.dead_on_domain))
            gone = set(rep2.zero_outgoing)
            if rep2.constant_from_layer is not None:  # no neuron of that layer is left
                gone |= {(k, i) for k in range(rep2.constant_from_layer)
                         for i in range(reference.widths[k])}
            for k, i in sorted(gone - set(rep.zero_outgoing) - set(rep.constant)
                               - set(fid.dead_on_domain)):
                out.append(f"reference neuron {i} of layer {k + 1} only feeds neurons never active "
                           f"on {where}: not observable there")
    for k, i in rep.constant:
        out.append(f"reference neuron {i} of layer {k + 1} has no incoming weight (dead or "
                   "constant): not observable")
    for k, i in rep.zero_outgoing:
        out.append(f"reference neuron {i} of layer {k + 1} has zero outgoing weight: not observable")
    for k, grp in rep.merged:
        out.append(f"reference neurons {list(grp)} of layer {k + 1} are parallel (same hyperplane "
                   "and orientation): they merge into one")
    return out
