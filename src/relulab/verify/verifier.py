"""The complete verifier: attack first, then branch and bound over input splits.

:func:`verify` decides a :class:`~relulab.spec.Property` (or one
:class:`~relulab.spec.Specification`) for a network.  Every (case, unsafe term) pair
is decided on its own; the property holds when all of them do.

1. A falsification attack (random sampling, then projected sign-gradient descent on
   the unsafe-set margin) runs on every term first: violated instances typically
   resolve in milliseconds.
2. Branch and bound (:func:`relulab.verify.bab.decide_term`) splits the input box,
   bounding each sub-box with batched symbolic bounds (forward symbolic bounds,
   CROWN back-substitution of the still-unstable neurons, and optimised ReLU slopes
   in the last back-substitution through the output specification).
3. When few neurons are unstable on the whole box and input splitting has not
   finished within a quarter of the time, one MILP (:func:`relulab.verify.milp.milp_term`,
   HiGHS branching on ReLUs) gets half of what is left, then input splitting resumes.

Answers: ``holds`` only from the bounds (with the safety margin of
:mod:`relulab.tolerance`); ``violated`` only with a counterexample re-checked by a
forward pass (in the box within FEAS_TOL, in the unsafe set within FEAS_TOL);
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

import time as _time

import numpy as np

from ..network import Network
from ..spec import Property, SpecError, Specification
from ._threads import single_threaded_blas
from .attack import attack_terms, recheck
from .bab import AttackSchedule, decide_terms
from .milp import milp_term
from .result import VerificationResult

__all__ = ["verify"]


def _root_unstable(net: Network, box) -> int:
    from ..bounds import crown_batch, float_layers

    Ws, bs, _ = float_layers(net)
    pre, _ = crown_batch(Ws, bs, box.lo[None], box.hi[None], intermediate="hybrid")
    return int(sum(int(np.sum((a < 0) & (b > 0))) for a, b in pre))


def _as_property(prop: Property | Specification) -> Property:
    if isinstance(prop, Specification):
        return Property([prop])
    if isinstance(prop, Property):
        return prop
    raise SpecError(f"verify: expected a Property or Specification, got {type(prop).__name__}")


def verify(
    net: Network,
    prop: Property | Specification,
    timeout: float = 60.0,
    *,
    attack_time: float | None = None,
    batch: int = 1024,
    intermediate: str = "hybrid",
    alpha_iters: int = 5,
    milp_max_binaries: int = 200,
    seed: int = 0,
) -> VerificationResult:
    """Decide whether ``net`` satisfies ``prop`` (no input of the input set is mapped into
    the unsafe output set).  Returns a :class:`VerificationResult` with status
    ``holds``, ``violated`` (with a re-checked counterexample) or ``unknown``.

    Args:
        net: the network (an exact network is bounded in float64 and its
            counterexamples re-checked exactly).
        prop: the property.
        timeout: seconds for the whole property.
        attack_time: seconds for the first attack on each term (default: 2% of the
            timeout, at most 0.1 s; the branch and bound keeps searching locally).
        batch: sub-boxes bounded together in one numpy pass.
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
        >>> verify(net, Specification(Box([-1], [1]), [below]), timeout=10).status
        'holds'
        >>> above = OutputConstraint(np.array([[-1.0]]), np.array([-0.9]))       # unsafe: y >= 0.9
        >>> r = verify(net, Specification(Box([-1], [1]), [above]), timeout=10)
        >>> r.status, bool(abs(r.counterexample[0]) >= 0.9 - 1e-9)
        ('violated', True)
    """
    t0 = _time.time()
    deadline = t0 + float(timeout)
    p = _as_property(prop)
    if not p.cases:
        raise SpecError(f"{p.source or 'property'}: has no input cases")
    p.check_fits(net.input_dim, net.output_dim)
    fnet = net.float() if net.is_exact else net
    terms = []
    for ci, case in enumerate(p.cases):
        for ti, term in enumerate(case.unsafe):
            C = np.atleast_2d(np.asarray(term.C, dtype=np.float64))
            dv = np.asarray(term.d, dtype=np.float64).reshape(-1)
            if not (np.all(np.isfinite(C)) and np.all(np.isfinite(dv))):
                raise SpecError(f"{p.source or 'property'}: case {ci} term {ti} has non-finite entries")
            terms.append((case.input_box, C, dv))
    stats: dict = {"terms": len(terms), "boxes": 0}
    a_time = min(0.1, 0.01 * timeout) if attack_time is None else attack_time

    def found(x, box, method):
        y = np.asarray(fnet(x), dtype=np.float64)
        return VerificationResult(
            "violated", _time.time() - t0, np.asarray(x, float), y, method, stats=stats
        )

    with single_threaded_blas():
        # 1. attack every term briefly (cheap; most violated properties fall here)
        for box, C, dv in terms:
            if C.shape[0] == 0:  # an empty conjunction: every output is unsafe
                x = box.center
                if recheck(net, x, box, C, dv):
                    return found(x, box, "attack")
        hit = attack_terms(net, terms, time_limit=a_time, rng=seed)
        if hit is not None:
            return found(hit[1], terms[hit[0]][0], "attack")

        calls, sched = [seed], AttackSchedule(t0)

        def search(starts, seconds):  # the attack during branch and bound: every term
            calls[0] += 1
            hit = attack_terms(net, terms, time_limit=seconds, rng=calls[0], starts=starts, n_samples=256)
            return None if hit is None else hit[1]
        # 2. branch and bound: one tree per input box for all of its terms
        groups: dict = {}
        for box, C, dv in terms:
            groups.setdefault(box, []).append((C, dv))
        unknown_reason = ""
        for box, group in groups.items():
            if _time.time() > deadline:
                unknown_reason = "timeout"
                break
            st: dict = {}
            # Portfolio: when few neurons are unstable on the whole box, a MILP (ReLU
            # splitting by HiGHS) may beat input splitting (e.g. SAT-gadget networks):
            # input splitting first for a quarter of the time, then the MILP, then
            # input splitting again.
            small = _root_unstable(fnet, box) <= milp_max_binaries
            left = deadline - _time.time()
            first = _time.time() + (0.25 * left if small else left)
            kw = dict(batch=batch, intermediate=intermediate, alpha_iters=alpha_iters, stats=st,
                      check_net=net, search=search, schedule=sched)
            status, x, st, _ = decide_terms(fnet, box, group, deadline=first, **kw)
            if status == "unknown" and small and _time.time() < deadline:
                res = []
                for C, dv in group:  # the MILP decides the terms one by one
                    res.append(milp_term(fnet, box, C, dv, check_net=net,
                                         time_limit=0.5 * (deadline - _time.time())))
                    stats["milp"] = res[-1][2]
                    if res[-1][0] != "holds":
                        break
                status, x = res[-1][:2] if res[-1][0] != "holds" else ("holds", None)
                if status == "unknown" and _time.time() < deadline:
                    status, x, st, _ = decide_terms(fnet, box, group, deadline=deadline, **kw)
                if status == "unknown" and _time.time() >= deadline:
                    st["reason"] = "timeout"
            stats["boxes"] += st.get("boxes", 0)
            if status == "violated":
                return found(x, box, "branch-and-bound")
            if status == "unknown":
                unknown_reason = st.get("reason", "unknown")
                break
        if unknown_reason:
            return VerificationResult(
                "unknown", _time.time() - t0, method="branch-and-bound", reason=unknown_reason,
                stats=stats,
            )
    return VerificationResult("holds", _time.time() - t0, method="branch-and-bound", stats=stats)
