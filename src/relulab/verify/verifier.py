"""The complete verifier: attack first, then branch and bound over input or ReLU splits.

:func:`verify` decides a :class:`~relulab.spec.Property` (or one
:class:`~relulab.spec.Specification`) for a network.  Every (case, unsafe term) pair
is decided on its own; the property holds when all of them do.

1. A falsification attack (random sampling, then projected sign-gradient descent on
   the unsafe-set margin) runs on every term first: violated instances typically
   resolve in milliseconds.
2. Branch and bound, chosen by the input dimension (``method="auto"``):

   * ``input-split`` (at most ``INPUT_SPLIT_MAX_DIM`` inputs, e.g. ACAS Xu):
     :func:`relulab.verify.bab.decide_term` splits the input box, bounding each sub-box
     with batched symbolic bounds;
   * ``relu-split`` (more inputs, or a structured ``relulab.crown.BoundGraph``):
     :func:`relulab.verify.relu_bab.relu_split` splits ReLU activations, bounding each
     sub-domain with alpha/beta-CROWN (numpy CROWN without torch);
   * both (a dense network with ``INPUT_SPLIT_MAX_DIM`` to ``PORTFOLIO_MAX_DIM`` inputs):
     input splitting on ``INPUT_SPLIT_SHARE`` of the time, then ReLU splitting.
3. When few neurons are unstable on the whole box and the branch and bound has not
   finished within a quarter of the time, one MILP (:func:`relulab.verify.milp.milp_term`,
   HiGHS branching on ReLUs) gets half of what is left, then the branch and bound resumes.

Limits: ``timeout`` holds in every phase (the attack's time limit, the bound
computations' batches sized to the time left, HiGHS's time limit set to the time left)
and ends ``unknown`` with the reason "timeout"; ``memory`` (bytes; default: the budget
of :mod:`relulab.limits`) is checked before every large allocation (batches are made
smaller to fit) and against the process's growth between rounds, and a phase that
cannot fit ends ``unknown`` with the reason "memory: ...".

Answers: ``holds`` only from the bounds (with the safety margin of
:mod:`relulab.tolerance`) or an exact LP / MILP; ``violated`` only with a
counterexample inside its box and in the unsafe set exactly, by a forward pass in
rational arithmetic on the weights' exact values (:mod:`relulab.verify._counterexample`;
float64 with a rounding margin above 200,000 parameters or for a structured model too
large to lower to a dense network, named in ``stats["counterexample_check"]``);
otherwise ``unknown``.

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> from relulab.domain import Box
    >>> from relulab.spec import OutputConstraint, Specification
    >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
    >>> unsafe = [OutputConstraint(np.array([[-1.0]]), np.array([-1.5]))]     # |x| >= 1.5
    >>> verify(net, Specification(Box([-1], [1]), unsafe)).status
    'holds'
    >>> r = verify(net, Specification(Box([-1], [2]), unsafe)); r.status, bool(r.output[0] >= 1.5)
    ('violated', True)
"""

from __future__ import annotations

import sys
import time as _time
from dataclasses import replace
from typing import Any

import numpy as np

from ..bounds import float_rounding_bounds, rounding_slack
from ..errors import FormatError, RelulabError
from ..limits import ResourceLimitError, memory_limit
from ..network import Network
from ..spec import Property, SpecError, Specification
from ._counterexample import CounterexampleCheck, certify_counterexample, float_unsafe
from ._threads import single_threaded_blas
from .attack import attack_terms, recheck
from .bab import AttackSchedule, decide_terms
from .budget import Budget
from .milp import milp_term
from .relu_bab import _same_neurons, crown_ready, relu_split, root_proven
from .result import VerificationResult

__all__ = ["verify", "load_for_verify", "INPUT_SPLIT_MAX_DIM"]

INPUT_SPLIT_MAX_DIM = 8  # input splitting up to this many inputs, ReLU splitting above
# between INPUT_SPLIT_MAX_DIM and this many inputs (a dense network), "auto" runs input
# splitting first on INPUT_SPLIT_SHARE of the time, then ReLU splitting on the rest: on the
# 14-input gcas network of VNN-COMP 2022's reach_prob_density, whose 64 ReLUs are all
# unstable on the box, input splitting decides every instance in < 0.2 CPU s where ReLU
# splitting (and the MILP) needed minutes
PORTFOLIO_MAX_DIM = 16
# the share of the time left that counting the root box's unstable neurons may take
ROOT_COUNT_SHARE = 0.1
INPUT_SPLIT_SHARE = 0.3
# the portfolio imports torch for its ReLU splitting only with this many seconds left (a
# cold import took 2-15 s on the loaded 2-core machine; the deadline must not pass during it)
LAZY_TORCH_MIN_LEFT = 60.0
# a phase that checks its clock only between rounds (input splitting, HiGHS) gets this share
# of its time: its last round then ends before the deadline, not after it
SLACK = 0.97
# a counterexample that fails its exact check gets its linear region searched (one LP) in
# the time left, and at least this many seconds (a candidate found at the deadline)
REPAIR_FLOOR = 0.1
# with torch not imported yet, runs shorter than this use the numpy engine (no start-up)
TORCH_MIN_TIMEOUT = 10.0
METHODS = ("auto", "input-split", "relu-split", "milp")
# a structured model's counterexample must clear this many float64 ulps of the largest
# value its forward pass computes (the rounding a few operations at that size may carry)
STRUCTURED_ROUNDING = 64 * float(np.finfo(np.float64).eps)
# bytes per sub-box of the input-splitting bounds, per (input + 1) x widest layer entry
_BOX_BYTES = 8 * 8


# ONNX operators whose dense lowering grows with the square of the activations
STRUCTURED_OPS = frozenset({"Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool",
                            "BatchNormalization"})


def load_for_verify(path: str, structured: bool | None = None) -> Network | Any:
    """Load a model for :func:`verify`: a dense :class:`~relulab.Network`, or, for an ONNX
    model with convolutions, pooling or batch norms (whose dense lowering would be far
    larger than the model) a structured ``relulab.crown.BoundGraph`` when torch is
    installed.  ``structured`` forces the choice.

    Example:
        >>> import os, tempfile
        >>> from relulab import Network
        >>> from relulab.io import save_model
        >>> p = os.path.join(tempfile.mkdtemp(), "abs.npz")
        >>> save_model(Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]]), p)
        >>> type(load_for_verify(p)).__name__
        'Network'
    """
    from pathlib import Path

    from ..io import load_model

    if structured is None:
        structured = False
        if Path(path).suffix.lower() == ".onnx" and Path(path).is_file():
            try:
                import onnx

                ops = {n.op_type for n in onnx.load(str(path), load_external_data=False).graph.node}
                structured = bool(ops & STRUCTURED_OPS)
            except ImportError:
                structured = False
            except Exception:  # noqa: BLE001 - an unreadable file: load_model names the problem
                structured = False
    if structured:
        from .relu_bab import crown_available

        if crown_available():
            from ..crown import BoundGraph

            try:
                return BoundGraph.from_onnx(str(path))
            except FormatError as graph_error:
                # an operator the structured bounder lacks (MaxPool with padding or
                # ceil_mode, a Slice of circular padding) may still lower to a dense
                # network, which load_model reads; when it cannot either, the structured
                # reader's message (the operator) is the one to show
                try:
                    return load_model(path)
                except RelulabError:
                    msg = str(graph_error)
                    raise type(graph_error)(msg if msg.startswith(str(path)) else f"{path}: {msg}") from None
    return load_model(path)


def _root_unstable(net: Network, box, seconds: float | None = None) -> int:
    """Unstable neurons of the root box (CROWN; interval bounds for the layers past
    ``seconds``): a count that picks between the MILP and ReLU splitting."""
    from ..bounds import crown_batch, float_layers

    Ws, bs, _ = float_layers(net)
    pre, _ = crown_batch(Ws, bs, box.lo[None], box.hi[None], intermediate="hybrid",
                         deadline=None if seconds is None or not np.isfinite(seconds) else _time.monotonic() + seconds)
    return int(sum(int(np.sum((a < 0) & (b > 0))) for a, b in pre))


def _as_property(prop: Property | Specification) -> Property:
    if isinstance(prop, Specification):
        return Property([prop])
    if isinstance(prop, Property):
        return prop
    raise SpecError(f"verify: expected a Property or Specification, got {type(prop).__name__}")


def _is_graph(model: Any) -> bool:
    return not isinstance(model, Network) and hasattr(model, "relus") and hasattr(model, "forward")


def _dims(model: Any) -> tuple[int, int]:
    if isinstance(model, Network):
        return model.input_dim, model.output_dim
    if _is_graph(model):
        return int(np.prod(model.input_shape)), int(model.output_dim)
    raise RelulabError(f"verify: expected a Network or a relulab.crown.BoundGraph, got {type(model).__name__}")


def _dense_of(model: Any) -> Network | None:
    """The dense Network of the model (None for a structured graph too large to lower)."""
    from .relu_bab import DENSE_MAX_NEURONS

    if isinstance(model, Network):
        return model
    if getattr(model, "n_neurons", DENSE_MAX_NEURONS + 1) > DENSE_MAX_NEURONS:
        return None
    try:
        return model.to_network()
    except RelulabError:
        return None


def _attack_graph(model, terms, bud: Budget, seconds: float, seed: int) -> np.ndarray | None:
    """PGD through the structured graph (:func:`relulab.verify.graph_attack.pgd_graph`),
    once per input box for all of its terms, ``seconds`` in all."""
    from .graph_attack import pgd_graph

    for box, C, _ in terms:
        if C.shape[0] == 0:  # an empty conjunction: every output is unsafe
            return box.center
    boxes: dict[tuple, list] = {}
    for box, C, dv in terms:
        boxes.setdefault((box.lo.tobytes(), box.hi.tobytes()), [box, []])[1].append((C, dv))
    for k, (box, cds) in enumerate(boxes.values()):
        share = min(seconds / len(boxes), max(bud.left(), 0.0))
        if share <= 0:
            break
        x = pgd_graph(model, box, cds, time_limit=share, rng=seed + k)
        if x is not None:
            return x
    return None


def verify(
    net: Network | Any,
    prop: Property | Specification,
    timeout: float = 60.0,
    *,
    memory: int | None = None,
    method: str = "auto",
    engine: str = "auto",
    attack_time: float | None = None,
    batch: int = 1024,
    intermediate: str = "hybrid",
    alpha_iters: int = 5,
    milp_max_binaries: int = 200,
    seed: int = 0,
) -> VerificationResult:
    """Decide whether ``net`` satisfies ``prop`` (no input of the input set is mapped into
    the unsafe output set).  Returns a :class:`VerificationResult` with status
    ``holds``, ``violated`` (with a re-checked counterexample) or ``unknown``, and
    ``method`` the procedure that decided it: "attack", "input-split", "relu-split" or
    "milp".

    Args:
        net: the network: a :class:`~relulab.Network` (an exact network is bounded in
            float64 and its counterexamples re-checked exactly) or a structured
            ``relulab.crown.BoundGraph`` (convolutions kept as convolutions).
        prop: the property.
        timeout: seconds for the whole property (every phase stops in time: then
            ``unknown`` with reason "timeout").
        memory: the memory budget in bytes (default: relulab.limits' budget, half the
            available memory); a phase that would exceed it ends ``unknown`` with the
            reason "memory: ...".
        method: "auto" (input splitting for at most ``INPUT_SPLIT_MAX_DIM`` inputs; for a
            dense network with up to ``PORTFOLIO_MAX_DIM`` inputs input splitting on
            ``INPUT_SPLIT_SHARE`` of the time, then ReLU splitting; ReLU splitting
            otherwise), "input-split", "relu-split" or "milp".
        engine: bound engine of ReLU splitting: "auto" (torch when installed, except for a
            run shorter than ``TORCH_MIN_TIMEOUT`` seconds before torch was imported),
            "crown" (torch) or "numpy".
        attack_time: seconds for the first attack on each term (default: 2% of the
            timeout, at most 0.1 s; the branch and bound keeps searching locally).
        batch: sub-boxes bounded together in one numpy pass (input splitting).
        intermediate: "hybrid" (default), "forward" or "crown" intermediate bounds.
        alpha_iters: optimisation steps of the last layer's ReLU slopes (0: off).
        milp_max_binaries: try a MILP (after a quarter of the time) when at most this
            many neurons are unstable on the whole input box.

    Example:
        >>> import numpy as np
        >>> from relulab import Box, Network
        >>> from relulab.spec import OutputConstraint, Specification
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
        >>> below = OutputConstraint(np.array([[1.0]]), np.array([-0.5]))        # unsafe: y <= -0.5
        >>> r = verify(net, Specification(Box([-1], [1]), [below]), timeout=10)
        >>> r.status, r.method
        ('holds', 'input-split')
        >>> above = OutputConstraint(np.array([[-1.0]]), np.array([-0.9]))       # unsafe: y >= 0.9
        >>> r = verify(net, Specification(Box([-1], [1]), [above]), timeout=10)
        >>> r.status, bool(abs(r.counterexample[0]) >= 0.9 - 1e-9)
        ('violated', True)
    """
    if not timeout > 0:
        raise RelulabError(f"verify: timeout must be positive, got {timeout}")
    if memory is not None and not memory > 0:
        raise RelulabError(f"verify: memory must be a positive number of bytes, got {memory}")
    if method not in METHODS:
        raise RelulabError(f"verify: method must be one of {', '.join(METHODS)}, got {method!r}")
    if intermediate not in ("hybrid", "forward", "crown"):
        raise RelulabError(f"verify: intermediate must be 'hybrid', 'forward' or 'crown', got {intermediate!r}")
    if not (isinstance(batch, (int, np.integer)) and batch >= 1):
        raise RelulabError(f"verify: batch must be a positive integer, got {batch!r}")
    if not (isinstance(alpha_iters, (int, np.integer)) and alpha_iters >= 0):
        raise RelulabError(f"verify: alpha_iters must be a non-negative integer, got {alpha_iters!r}")
    if attack_time is not None and not attack_time >= 0:
        raise RelulabError(f"verify: attack_time must be non-negative seconds, got {attack_time}")
    n_in, n_out = _dims(net)
    portfolio = False
    # the dense lowering of a structured model, made once (it was made to choose the
    # method and again by each run of the portfolio); like loading, before the clock
    dense = _dense_of(net)
    if method == "auto":
        # input splitting needs the dense network: a structured graph too large to lower
        # gets ReLU splitting whatever its number of inputs
        lowered = dense is not None
        method = "input-split" if n_in <= INPUT_SPLIT_MAX_DIM and lowered else "relu-split"
        portfolio = method == "relu-split" and n_in <= PORTFOLIO_MAX_DIM and lowered
    if engine == "auto" and method == "relu-split" and isinstance(net, Network) and (
            "torch" not in sys.modules and timeout < TORCH_MIN_TIMEOUT):
        engine = "numpy"  # a short run does not pay torch's start-up (seconds, cold)
    if engine != "numpy" and method == "relu-split" and not (portfolio and engine == "auto"):
        # importing torch counts as loading: done before the clock starts (the portfolio
        # imports it only when input splitting has not decided the property, and only with
        # LAZY_TORCH_MIN_LEFT seconds left: else its ReLU splitting runs on numpy)
        from .relu_bab import crown_available

        crown_available()
    bud = Budget(timeout, memory)
    p = _as_property(prop)
    if not p.cases:
        raise SpecError(f"{p.source or 'property'}: has no input cases")
    p.check_fits(n_in, n_out)
    terms = []
    for ci, case in enumerate(p.cases):
        for ti, term in enumerate(case.unsafe):
            C = np.atleast_2d(np.asarray(term.C, dtype=np.float64))
            dv = np.asarray(term.d, dtype=np.float64).reshape(-1)
            if not (np.all(np.isfinite(C)) and np.all(np.isfinite(dv))):
                raise SpecError(f"{p.source or 'property'}: case {ci} term {ti} has non-finite entries")
            terms.append((case.input_box, C, dv))
    stats: dict = {"terms": len(terms), "method_choice": method}
    # the provers bound the float64 rounding of an exact network: they prove the property
    # with each unsafe set widened by what the rounding can move C f (a counterexample is
    # still checked exactly, on the original property)
    check_terms = terms
    if isinstance(dense, Network) and dense.is_exact:
        terms = _widened_by_rounding(dense, terms, stats)
    with memory_limit(bud.memory), single_threaded_blas():
        try:
            if portfolio:
                stats["method_choice"] = "input-split, then relu-split"
                first = Budget(INPUT_SPLIT_SHARE * timeout, bud.memory)
                first.rss0 = bud.rss0
                r = _run(net, dense, terms, first, "input-split", engine, stats, attack_time, batch,
                         intermediate, alpha_iters, milp_max_binaries, seed, check_terms)
                if r.status != "unknown" or bud.expired():
                    return replace(r, time=bud.elapsed())
                if engine == "auto" and not crown_ready() and bud.left() < LAZY_TORCH_MIN_LEFT:
                    engine = "numpy"  # importing torch (seconds, more on a loaded machine) could overrun
            return _run(net, dense, terms, bud, method, engine, stats, attack_time, batch, intermediate,
                        alpha_iters, milp_max_binaries, seed, check_terms)
        except ResourceLimitError as e:
            reason = str(e) if str(e).startswith("memory") else f"memory: {e}"
            return VerificationResult("unknown", bud.elapsed(), method=method, reason=reason,
                                      stats=stats)


def _widened_by_rounding(dense: Network, terms: list, stats: dict) -> list:
    """The terms with each unsafe set ``C y <= d`` widened to ``C y <= d + |C| e``, ``e``
    the float rounding bound of the exact network on the term's box (computed once per
    box: the terms of a classification property share theirs)."""
    boxes: dict[tuple[bytes, bytes], Any] = {}
    for box, _, _ in terms:
        boxes.setdefault((box.lo.tobytes(), box.hi.tobytes()), box)
    # all boxes at once: the weights' rounding is found once (Fractions), not per box
    rows = float_rounding_bounds(dense, list(boxes.values()))
    per_box = dict(zip(boxes, [None] * len(boxes) if rows is None else list(rows), strict=True))
    widened = []
    for box, C, dv in terms:
        e = per_box[(box.lo.tobytes(), box.hi.tobytes())]
        if e is None:
            widened.append((box, C, dv))
            continue
        w = rounding_slack(C, e)
        widened.append((box, C, dv + w))
        stats["rounding_widening"] = max(stats.get("rounding_widening", 0.0), float(np.max(w)))
    return widened


def _run(model, dense: Network | None, terms, bud: Budget, method: str, engine: str, stats: dict,
         attack_time, batch: int, intermediate: str, alpha_iters: int, milp_max_binaries: int,
         seed: int, check_terms=None) -> VerificationResult:
    """One method on all terms; ``dense`` is :func:`_dense_of` the model.  ``check_terms``:
    the property a counterexample must violate exactly (default ``terms``; the provers'
    terms of an exact network are widened by its float rounding)."""
    check_terms = terms if check_terms is None else check_terms
    if dense is not None and not isinstance(model, Network) and not _same_neurons(model, dense):
        # a residual skip or a max-pool lowers to extra neurons, so the graph's split
        # vectors cannot index the lowering's leaf LPs: the ReLU splitting then runs on
        # the (small) lowering itself, where every leaf gets its LP
        model = dense
    if method in ("input-split", "milp") and dense is None:
        raise RelulabError(f"verify: method {method!r} needs the dense network; this structured "
                           "model is too large to lower (use relu-split)")
    fnet = None if dense is None else (dense.float() if dense.is_exact else dense)
    timeout = bud.left()
    a_time = min(0.1, 0.01 * timeout) if attack_time is None else attack_time

    def found(x, how):
        # the last gate: the point is in a box and unsafe there exactly (the searches
        # accept C f(x) <= d within an absolute FEAS_TOL, meaningless for a row of 1e-10)
        if dense is not None:
            # the gate's repair LP gets the time left (at least REPAIR_FLOOR seconds)
            left = bud.left()
            chk = certify_counterexample(dense, x, check_terms, deadline=None if not np.isfinite(left)
                                         else _time.perf_counter() + max(left, REPAIR_FLOOR))
        else:
            chk = _structured_check(model, x, check_terms)
        if not chk.ok:
            stats["rejected_candidates"] = stats.get("rejected_candidates", 0) + 1
            return unknown(chk.reason, how)
        stats["counterexample_check"] = chk.check
        return VerificationResult("violated", bud.elapsed(), chk.x, chk.output, how, stats=stats)

    def unknown(reason, how):
        return VerificationResult("unknown", bud.elapsed(), method=how, reason=reason, stats=stats)

    if dense is None:
        # a structured graph: one batch of samples per input box serves all its terms
        # (a structured model is larger: its attack gets up to 5% of the time, at most 5 s)
        g_time = max(a_time, min(0.05 * timeout, 5.0)) if attack_time is None else attack_time
        x = _attack_graph(model, terms, bud, g_time, seed)
        if x is not None and (r := found(x, "attack")).status == "violated":
            return r  # a candidate that fails the exact gate: the provers decide
    # 1. attack every term briefly (cheap; most violated properties fall here): one
    # space-filling design per input box, one targeted run per term
    if dense is not None:
        for box, C, dv in terms:
            if C.shape[0] == 0 and recheck(dense, box.center, box, C, dv) and \
                    (r := found(box.center, "attack")).status == "violated":
                return r  # an empty conjunction: all is unsafe
        if bud.expired():
            return unknown("timeout", method)
        hit = attack_terms(dense, terms, time_limit=min(a_time, max(bud.left(), 0.0)), rng=seed)
        if hit is not None and (r := found(hit[1], "attack")).status == "violated":
            return r
    roots: dict[tuple, dict] = {}  # per box: the root's bounds, reused by every term's search
    if method == "relu-split" and len(terms) > 1:
        # one root bound for all terms of a box: most terms of a classification property
        # are ruled out by it before any branching
        groups: dict[tuple, list[int]] = {}
        for i, (box, _, _) in enumerate(terms):
            groups.setdefault((box.lo.tobytes(), box.hi.tobytes()), []).append(i)
        keep = []
        for key, idx in groups.items():
            if bud.expired():
                return unknown("timeout", method)
            roots[key] = {}
            ok = root_proven(model, terms[idx[0]][0], [terms[i][1:] for i in idx], budget=bud,
                             engine=engine, keep=roots[key])
            keep += [i for i, o in zip(idx, ok, strict=True) if not o]
        stats["root_proven"] = len(terms) - len(keep)
        terms = [terms[i] for i in sorted(keep)]
    # 2. branch and bound: input splitting decides all terms of one input box in one tree
    # (with the attack re-run during the search); ReLU splitting and the MILP term by term
    if method == "input-split":
        groups_by_box: dict[tuple, tuple] = {}
        for box, C, dv in terms:
            groups_by_box.setdefault((box.lo.tobytes(), box.hi.tobytes()), (box, []))[1].append((C, dv))
        jobs = [(box, group) for box, group in groups_by_box.values()]
    else:
        jobs = [(box, [(C, dv)]) for box, C, dv in terms]
    calls, sched = [seed], AttackSchedule(_time.time() - bud.elapsed())

    def search(starts, seconds):  # the attack during input splitting: every term
        calls[0] += 1
        hit = attack_terms(dense, terms, time_limit=min(seconds, max(bud.left(), 0.0)),
                           rng=calls[0], starts=starts, n_samples=256)
        return None if hit is None else hit[1]

    decided_by = set()
    for box, group in jobs:
        if bud.expired():
            return unknown("timeout", method)
        if method == "input-split":
            status, x, how, reason = _decide_input_split(
                dense, fnet, box, group, bud, stats, batch, intermediate, alpha_iters,
                milp_max_binaries, search, sched)
        else:
            (C, dv), = group
            root = roots.get((box.lo.tobytes(), box.hi.tobytes()), {}).get("root")
            status, x, how, reason = _decide(model, dense, fnet, box, C, dv, bud, method, engine,
                                             stats, milp_max_binaries, seed, root)
        if status == "violated":
            return found(x, how)
        if status == "unknown":
            return unknown(reason, how)
        decided_by.add(how)
    how = method if method in decided_by or not decided_by else decided_by.pop()
    return VerificationResult("holds", bud.elapsed(), method=how, stats=stats)


def _structured_check(model, x, terms) -> CounterexampleCheck:
    """The last gate for a structured model (no dense network to evaluate exactly): the
    clipped point's float64 forward pass inside the unsafe set with a rounding margin."""
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    for box, C, dv in terms:
        xc = np.clip(x, box.lo, box.hi)
        y = np.asarray(model.forward(xc[None])[0], dtype=np.float64).reshape(-1)
        # the outputs' rounding error scales with the terms each node adds up (weights
        # near 1e8 cancelling to 3e-5 left errors near 1e-4, and a property that holds
        # was answered violated)
        err = model.forward_error(xc[None]) if hasattr(model, "forward_error") else 0.0
        ok, worst = float_unsafe(y, C, dv, err)
        if ok and hasattr(model, "largest_value"):
            # the rounding of a node's value is relative to the largest value the pass
            # computes, not to the outputs: an output of 0.7 computed through values of
            # 1e16 is uncertain by units (a clip rewritten as a difference of ReLUs was)
            carried = STRUCTURED_ROUNDING * float(model.largest_value(xc[None]))
            ok = worst + carried * float(np.max(np.abs(C).sum(axis=1), initial=0.0)) <= 0
        if ok:
            return CounterexampleCheck(True, xc, y, "float64 with rounding margin")
    return CounterexampleCheck(False, reason="numerical: a candidate counterexample meets the unsafe "
                                             "set only within float rounding")


def _decide(model, dense, fnet, box, C, dv, bud: Budget, method, engine, stats,
            milp_max_binaries, seed, root=None):
    """One term by ReLU splitting or the MILP: (status, x, method that decided, reason)."""

    def run_bab(share: float):  # ReLU splitting (input splitting: _decide_input_split)
        left = bud.left()
        sub = Budget(share * left, bud.memory)
        sub.rss0 = bud.rss0
        r = relu_split(model, box, C, dv, budget=sub, engine=engine, check_net=dense, seed=seed,
                       attack_time=0.0, root=root)
        rs = stats.setdefault("relu_split", {})
        for k, v in r.stats.items():
            rs[k] = rs.get(k, 0) + v if isinstance(v, (int, float)) and k != "engine" else v
        reason = r.reason
        if r.status == "unknown" and reason == "timeout" and bud.left() > 0:
            reason = "timeout"  # only the share ran out; the caller goes on
        return r.status, r.counterexample, reason

    if method == "milp":
        status, x, how = _milp(fnet, dense, box, C, dv, bud, stats, 1.0)
        return status, x, how, stats["milp"].get("reason", "timeout") if status == "unknown" else ""
    small = fnet is not None and _root_unstable(fnet, box, ROOT_COUNT_SHARE * bud.left()) <= milp_max_binaries
    status, x, reason = run_bab(0.25 if small else 1.0)
    if status != "unknown" or not small or reason.startswith("memory"):
        return status, x, method, reason
    if bud.left() > 0:
        mstatus, mx, _ = _milp(fnet, dense, box, C, dv, bud, stats, 0.5)
        if mstatus != "unknown":
            return mstatus, mx, "milp", ""
    if bud.left() > 0:
        status, x, reason = run_bab(1.0)
    if status == "unknown" and bud.left() <= 0:
        reason = "timeout"
    return status, x, method, reason


def _decide_input_split(dense, fnet, box, group, bud: Budget, stats, batch, intermediate,
                        alpha_iters, milp_max_binaries, search, sched):
    """All terms of one input box in one input-splitting tree (:func:`bab.decide_terms`),
    with the MILP portfolio: when few neurons are unstable on the box, input splitting
    gets a quarter of the time, then the MILP decides the terms one by one on half of
    what is left, then input splitting resumes where it stopped (its open sub-boxes are
    kept in ``st``).  Returns (status, x, method that decided, reason)."""
    n_max = max([W.shape[0] for W in fnet.weights], default=1)
    rows = sum(C.shape[0] for C, _ in group)
    per_box = _BOX_BYTES * (fnet.input_dim + 1) * n_max * (rows + 2)
    st: dict = {}
    kw = dict(batch=bud.fit(per_box, batch), intermediate=intermediate, alpha_iters=alpha_iters,
              stats=st, check_net=dense, search=search, schedule=sched)

    def run(share: float):
        status, x, _, _ = decide_terms(fnet, box, group,
                                       deadline=_time.time() + SLACK * share * bud.left(), **kw)
        bud.check_growth("input splitting")
        return status, x

    small = _root_unstable(fnet, box, ROOT_COUNT_SHARE * bud.left()) <= milp_max_binaries
    status, x = run(0.25 if small else 1.0)
    how = "input-split"
    if status == "unknown" and small and bud.left() > 0 and not st.get("reason", "").startswith("memory"):
        res = []
        for C, dv in group:  # the MILP decides the terms one by one
            res.append(_milp(fnet, dense, box, C, dv, bud, stats, 0.5))
            if res[-1][0] != "holds":
                break
        if res[-1][0] != "unknown":
            status, x, how = res[-1] if res[-1][0] == "violated" else ("holds", None, "milp")
        elif bud.left() > 0:
            status, x = run(1.0)
    in_split = stats.setdefault("input_split", {})
    in_split["boxes"] = in_split.get("boxes", 0) + st.get("boxes", 0)
    stats["boxes"] = in_split["boxes"]
    reason = st.get("reason", "") if status == "unknown" else ""
    if status == "unknown" and bud.left() <= 0:
        reason = "timeout"
    return status, x, how, reason


def _milp(fnet, dense, box, C, dv, bud: Budget, stats, share: float):
    """One MILP on ``share`` of the time left (HiGHS's own time limit)."""
    n_neurons = sum(W.shape[0] for W in fnet.weights)
    nnz = sum(W.size for W in fnet.weights)
    # the encoding (3 rows per neuron) and HiGHS's copies, search tree and factorisations
    bud.check_bytes(64.0 * (3 * nnz + 10 * n_neurons) * 4, "the MILP")
    status, x, mst = milp_term(fnet, box, C, dv, check_net=dense,
                               time_limit=max(SLACK * share * bud.left(), 1e-3))
    bud.check_growth("the MILP")
    stats["milp"] = mst
    return status, x, "milp"
