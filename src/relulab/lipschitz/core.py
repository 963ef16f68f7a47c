"""The front door: :func:`lipschitz` picks routes, runs them within a time limit and
returns the bracket ``lower <= L <= upper`` with the route that closed it.

Example:
    >>> import numpy as np
    >>> from relulab import Network, Box
    >>> net = Network([[[1.0], [-1.0]], [[2.0, 1.0]]], [[0.0, 0.0], [0.0]])
    >>> r = lipschitz(net, Box([-1], [1]), p=1)
    >>> r.status, r.lower, r.method
    ('exact', 2.0, 'enumeration')
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from ..domain import Box, DomainError, Polytope, as_domain
from ..errors import RelulabError, is_positive_seconds
from ..limits import ResourceLimitError
from ..lp import chebyshev_center_zoomed, no_interior
from ..network import Network
from .bab import by_bab
from .enumeration import by_enumeration
from .lower import sampled_lower
from .milp import GLOBAL_MILP_MAX_REACH, by_milp, hyperplane_reach, milp_supported
from .norms import check_p
from .result import LipschitzResult
from .rounding import float_network
from .sdp import sdp_bab
from .upper import SDP_MAX_SIZE, interval_jacobian_bound, product_bound, sdp_bound

__all__ = ["lipschitz", "METHODS", "LIP_REL_TOL"]

METHODS = ("auto", "enumerate", "milp", "bab", "bounds")

# lower and upper "meet" within this relative gap: HiGHS proves MILP bounds up to its
# primal feasibility tolerance (1e-7 of big-M sized quantities), so a tighter test
# would call agreeing routes "bounded" at random.
LIP_REL_TOL = 1e-6  # tol: HiGHS's big-M feasibility accuracy (see above)


# beyond this many unstable neurons HiGHS rarely closes the LipMIP program in a minute
# (ACAS Xu: ~250), while input splitting still tightens the bracket in low dimension
MILP_MAX_UNSTABLE = 64
# input splitting only pays off in low dimension
BAB_MAX_DIM = 8
# without a time limit the branch and bound stops after this long with its bracket
BAB_DEFAULT_SECONDS = 60.0
# when the MILP's bracket stays open (its tolerance margin), "auto" gives the region
# enumeration and then branch and bound on boxes this long in all to close it, without a
# time limit
FOLLOW_SECONDS = 8.0


class LipschitzError(RelulabError):
    """Bad input to :func:`lipschitz` (norm, domain, method, output dimension)."""


def _check_domain(net: Network, domain: Any) -> Box | Polytope | None:
    if domain is None:
        return None
    dom = as_domain(domain, net.input_dim)
    if isinstance(dom, Box):
        flat = np.nonzero(dom.hi - dom.lo <= 0)[0]
        if flat.size:
            raise LipschitzError(
                f"lipschitz: the box has zero width in coordinate {int(flat[0])}; a Lipschitz "
                "constant over a domain needs a full-dimensional box")
        return dom
    if dom.n_constraints and dom.is_bounded:
        # zoomed: an absolute radius of 1e-9 refused the square [0.5, 0.5 + 1e-10]^2 as
        # flat, which as a Box has the constant 2.236
        x, rad = chebyshev_center_zoomed(dom.A, dom.b)
        if no_interior(x, rad):
            raise LipschitzError("lipschitz: the polytope has no interior (it is flat or a point)")
    return dom


_FLOAT_TINY = float(np.finfo(np.float64).tiny)


def layer_balanced(net: Network) -> Network:
    """The same function with every layer's weights scaled by a power of two towards the
    layers' geometric mean size (the biases by the product of the factors so far, the
    last layer by the inverse of that product): exact, as a ReLU is positively
    homogeneous and powers of two multiply without rounding, and the Jacobian is the
    same.  Bounds that multiply layers in another order no longer underflow part way:
    weights ``1e300, 1e-200, 1e-200`` (constant 1e-100) gave an interval Jacobian bound
    of 2.2e-308.  ``net`` itself where a scaled entry would leave float64's normal range.

    Example:
        >>> g = layer_balanced(Network([[[1e300]], [[1e-200]], [[1e-200]]], [[0.0], [0.0], [0.0]]))
        >>> [f"{float(W[0, 0]):.0e}" for W in g.weights], float(g([1.0])[0])
        (['6e-34', '6e-34', '3e-34'], 1e-100)
    """
    if net.n_hidden_layers == 0:
        return net
    Ws = [np.asarray(W, dtype=np.float64) for W in net.weights]
    bs = [np.asarray(b, dtype=np.float64) for b in net.biases]
    tops = [float(np.max(np.abs(W), initial=0.0)) for W in Ws]
    if not all(0 < t < np.inf for t in tops):
        return net
    exps = [math.frexp(t)[1] for t in tops]
    target = round(sum(exps) / len(exps))
    shifts = [target - e for e in exps[:-1]]
    shifts.append(-sum(shifts))              # the product of all the factors is 1
    if not any(shifts):
        return net
    cum = 0
    newW, newb = [], []
    with np.errstate(over="ignore", under="ignore"):
        for W, b, k in zip(Ws, bs, shifts, strict=True):
            cum += k
            W2 = np.ldexp(W, k)
            b2 = np.ldexp(b, cum)       # (cum is 0 at the last layer)
            for a, a2 in ((W, W2), (b, b2)):
                if not np.all(np.isfinite(a2)) or np.any((np.abs(a) >= _FLOAT_TINY) & (np.abs(a2) < _FLOAT_TINY)) \
                        or np.any((a != 0) & (a2 == 0)):
                    return net
            newW.append(W2)
            newb.append(b2)
    return Network(newW, newb, net.skip)


def _paths_underflow(net: Network) -> bool:
    """Whether some input-output path has all its weights nonzero while the largest
    product along any path (bounded in logarithms, widths included) is below float64's
    smallest normal number: a Jacobian there is nonzero in exact arithmetic and 0 in
    float64.

    Example:
        >>> _paths_underflow(Network([[[1e-200]], [[1e-200]]], [[0.0], [0.0]]))
        True
        >>> _paths_underflow(Network([[[1.0]], [[0.0]]], [[0.0], [0.0]]))
        False
    """
    f = net.float()
    if f.skip is not None and np.any(f.skip[0] != 0):
        return False    # (a skip's own weights reach the bound without a product)
    Ws = [np.abs(W) for W in f.weights]
    reach = Ws[0] > 0
    for W in Ws[1:]:
        reach = ((W > 0).astype(np.int64) @ reach.astype(np.int64)) > 0
    if not reach.any():
        return False    # no path: constant on every region, 0 is exact
    with np.errstate(divide="ignore"):
        log_top = sum(math.log(float(W.max())) + math.log(W.shape[1]) for W in Ws)
    return log_top < math.log(_FLOAT_TINY)


def _is_bias_free(net: Network) -> bool:
    from ..bounds import float_layers

    _, bs, sk = float_layers(net)
    return all(not np.any(b) for b in bs) and (sk is None or not np.any(sk[1]))


def _n_unstable(net: Network, dom: Box | None) -> int:
    from .milp import homogeneous_problem, preactivation_bounds

    if dom is None:
        H, ext = homogeneous_problem(net)
        pre = preactivation_bounds(H, ext)
    else:
        pre = preactivation_bounds(net, dom)
    return int(sum(int(np.sum((lo < 0) & (hi > 0))) for lo, hi in pre))


def _l2(p: float, q: float | None) -> bool:
    return p == 2 and (q is None or q == 2)


def _interval_seconds(net: Network) -> float:
    """Estimated seconds of the interval Jacobian bound: its pre-activation bounds
    substitute every layer back to the input (about ``2 n_k sum_j n_j n_(j-1)`` flops
    for layer ``k``), at the machine's dense float64 rate."""
    from ..limits import dense_flop_rate

    widths = [net.input_dim] + [W.shape[0] for W in net.weights]
    flops = 0.0
    for k in range(1, len(widths)):
        flops += 2.0 * widths[k] * sum(widths[j] * widths[j - 1] for j in range(1, k + 1))
    return flops / dense_flop_rate()


def _enumeration_small(net: Network, global_: bool) -> bool:
    """Whether the region count is small enough to enumerate (a rough guess from the
    hyperplane-arrangement count of the first layer and the depth)."""
    d, N = net.input_dim, net.n_neurons
    limits = {1: 2000, 2: 300, 3: 80, 4: 40, 5: 20}
    lim = limits.get(d, 0)
    if global_:
        lim = lim // 2
    return N <= lim


def lipschitz(
    net: Network,
    domain: Box | Polytope | tuple | None = None,
    p: float = 2,
    q: float | None = None,
    method: str = "auto",
    time_limit: float | None = None,
    *,
    sdp: bool | None = None,
    samples: int = 2000,
) -> LipschitzResult:
    """The Lipschitz constant ``sup ||f(x) - f(y)||_q / ||x - y||_p`` of ``net`` over
    ``domain`` (a Box, a Polytope or a ``(lo, hi)`` pair; all of R^d when None).

    Args:
        net: the network.
        domain: the input domain; None for the global constant over R^d.
        p: the input norm (any ``p >= 1``, ``inf`` included).
        q: the output norm; required when the network has more than one output.
        method: "auto" (enumeration when the region count is small, else the MILP for
            ``p in {1, inf}``, else input-splitting branch and bound on boxes in low
            dimension, else the bounds), "enumerate", "milp", "bab" or "bounds" (upper
            bounds and a sampled lower bound only).
        time_limit: seconds of wall-clock time; when it runs out the bracket found so
            far is returned (``partial`` True, ``status`` "bounded" unless it had already
            closed).  ``info["cpu_seconds"]`` reports the process CPU time it used.
        sdp: compute the LipSDP bound (p = q = 2); default: when the bracket is still
            open and the SDP is small enough.
        samples: points sampled for the lower bound.

    Returns:
        a :class:`LipschitzResult`; ``status`` is "exact" only when the certified lower
        bound and the proven upper bound agree to ``LIP_REL_TOL``.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0, 2.0]], [[3.0]]], [[0.0], [0.0]])   # 3 relu(x + 2 y)
        >>> r = lipschitz(net, p=float("inf"))
        >>> r.status, r.lower
        ('exact', 9.0)
    """
    t0, c0 = time.time(), time.process_time()
    if not isinstance(net, Network):
        raise LipschitzError(f"lipschitz: expected a relulab Network, got {type(net).__name__}")
    if method not in METHODS:
        raise LipschitzError(f"lipschitz: unknown method {method!r}; choose one of {', '.join(METHODS)}")
    p = check_p(p, "lipschitz: p")
    m = net.output_dim
    if q is not None:
        q = check_p(q, "lipschitz: q")
    elif m > 1:
        raise LipschitzError(
            f"lipschitz: the network has {m} outputs; give the output norm q (e.g. q=p)")
    if m == 1:
        q = None  # a scalar output: the constant is the dual norm of the gradient
    if sdp is not None and not isinstance(sdp, (bool, np.bool_)):
        raise LipschitzError(f"lipschitz: sdp must be True, False or None (automatic), got {sdp!r}")
    if sdp and not _l2(p, q):
        # (refused only after the whole route had run: 8-60 s)
        raise LipschitzError("lipschitz: the SDP bound is for p = q = 2 only")
    if time_limit is not None and not is_positive_seconds(time_limit):
        # a string limit ended in a raw TypeError from the comparison
        raise LipschitzError(f"lipschitz: time_limit must be a positive number of seconds or None, "
                             f"got {time_limit!r}")
    time_limit = None if time_limit is None else float(time_limit)
    net = layer_balanced(float_network(net, "lipschitz"))
    dom = _check_domain(net, domain)
    unbounded = isinstance(dom, Polytope) and (dom.n_constraints == 0 or not dom.is_bounded)
    if unbounded and method != "enumerate":
        if dom.n_constraints == 0:
            dom = None  # the whole space: the global constant
        else:
            raise LipschitzError(
                "lipschitz: the polytope is unbounded; give a bounded domain, domain=None for "
                "all of R^d, or method='enumerate'")
    global_ = dom is None
    work_dom = dom
    note = {}
    if global_ and _is_bias_free(net):
        # regions of a positively homogeneous network are cones from the origin: every
        # one meets [-1, 1]^d, so the global constant is the local one there
        work_dom = Box(-np.ones(net.input_dim), np.ones(net.input_dim))
        note["reduced"] = "bias-free network: global constant = constant on [-1, 1]^d"
    elif global_:
        note["reduced"] = "global: regions enumerated on R^d, or bounds/MILP on the homogenised network over [-1,1]^d x [0,1]"
    deadline = None if time_limit is None else t0 + time_limit
    uppers: dict[str, float] = {}
    lowers: dict[str, float] = {}
    witness = None
    partial = False

    def left() -> float | None:
        return None if deadline is None else deadline - time.time()

    def take(w):
        nonlocal witness
        if w is not None and (witness is None or w.norm > witness.norm):
            witness = w

    # cheap bounds first: they give a bracket even when nothing else finishes
    uppers["product"] = product_bound(net, p, q)
    if not unbounded:
        # its CROWN pass is cubic in the width (4 s on a 3000-wide layer): under a time
        # limit it runs only when its estimate fits half of the time left
        est = _interval_seconds(net)
        if deadline is None or est <= 0.5 * (deadline - time.time()):
            uppers["interval_jacobian"] = interval_jacobian_bound(net, work_dom, p, q)
        else:
            note["interval_jacobian"] = (f"skipped: its backward pass (about {est:.2g} s estimated) "
                                         "does not fit the time limit")
    sampling: dict = {}
    w = None if unbounded else sampled_lower(
        net, work_dom, p, q, n=samples, deadline=None if deadline is None else t0 + 0.1 * time_limit,
        report=sampling)
    if sampling.get("cut") and deadline is not None and time.time() > deadline:
        partial = True  # the limit ran out within the sampling: fewer samples than asked
    if w is not None:
        lowers["sampling"] = w.norm
        take(w)

    def closed() -> bool:
        lo = max(lowers.values(), default=0.0)
        return min(uppers.values()) - lo <= LIP_REL_TOL * lo

    route = "bounds"
    bab_ok = (work_dom is None or isinstance(work_dom, Box)) and net.input_dim <= BAB_MAX_DIM
    if method == "auto":
        if _enumeration_small(net, global_ and work_dom is None):
            route = "enumeration"
        else:
            # the global program cannot resolve regions far from the origin (see milp)
            far = work_dom is None and hyperplane_reach(net) > GLOBAL_MILP_MAX_REACH
            if milp_supported(p, q, m) and (not bab_ok or (not far and _n_unstable(net, work_dom)
                                                           <= MILP_MAX_UNSTABLE)):
                route = "milp"
            elif bab_ok:
                route = "bab"
            elif milp_supported(p, q, m):
                route = "milp"
    elif method == "bab":
        if not (work_dom is None or isinstance(work_dom, Box)):
            raise LipschitzError("lipschitz: method='bab' splits boxes; give a Box domain or None")
        route = "bab"
    elif method == "enumerate":
        route = "enumeration"
    elif method == "milp":
        route = "milp"
        if not milp_supported(p, q, m):
            raise LipschitzError(
                f"lipschitz: method='milp' needs p in {{1, inf}} and a scalar output or q in "
                f"{{1, inf}} (got p={p:g}, q={q}); use method='enumerate' or 'bounds'")
    info: dict[str, Any] = dict(note)
    def enumerate_until(until: float | None, own_share: bool) -> None:
        """The region enumeration up to ``until``; ``own_share``: a follow-up within a
        share of the time that the caller chose, whose stop is not the user's limit."""
        nonlocal partial
        e = by_enumeration(net, work_dom, p, q, until)
        info["regions"] = e.n_regions
        info["enumeration_seconds"] = e.seconds
        if e.n_vertex_mismatches:
            info["vertex_mismatches"] = e.n_vertex_mismatches
        info["pattern_check"] = e.pattern_check
        take(e.witness)
        if e.witness is not None:
            lowers["enumeration"] = e.lower
        if e.complete:
            uppers["enumeration"] = e.upper
        elif e.stopped:
            if own_share:
                info["enumeration_stopped"] = "the follow-up enumeration stopped at its share of the time"
            else:
                partial = True
        else:
            info["incomplete"] = ("the enumeration is not certified (a near tie, a merged "
                                  "sliver or a missed pattern): no upper bound from it")

    if route == "enumeration":
        if left() is not None and left() <= 0:
            partial = True
        else:
            try:
                enumerate_until(deadline, False)
            except DomainError as e:
                # the enumeration's float cuts can find a thin polytope far from the origin
                # empty (2e-4 wide near 2.7e6): "auto" goes on by another route
                if method != "auto":
                    raise
                info["enumeration_refused"] = str(e)
                route = "milp" if milp_supported(p, q, m) else ("bab" if bab_ok else "bounds")
    if route == "milp":
        if left() is not None and left() <= 0:
            partial = True
        else:
            r = by_milp(net, work_dom, p, q, deadline)
            info["binaries"] = r.n_binaries
            info["milp_seconds"] = r.seconds
            info.update({f"milp_{k}": v for k, v in r.info.items()})
            take(r.witness)
            if r.witness is not None:
                lowers["milp"] = r.lower
            if np.isfinite(r.upper):
                uppers["milp"] = r.upper
            if not r.complete:
                # a limit stopped it (partial), or the solver's numerics left no proof
                # (said in info, as partial is about limits)
                why = r.info.get("solver_error") or (
                    "HiGHS dropped small coefficients" if r.info.get("small_coefficients_dropped") else None)
                if why is None:
                    partial = True
                else:
                    info["incomplete"] = f"the MILP gave no proven bound: {why}"
            # the MILP's bound carries the margin its tolerances can hide (or it gave none):
            # with "auto", routes that do not lean on a solver's tolerances may close the
            # bracket in the time left (FOLLOW_SECONDS without a limit): the region
            # enumeration for 60 % of it, then branch and bound on a box
            follow = None
            if method == "auto" and not closed() and (left() is None or left() > 0):
                follow = time.time() + (FOLLOW_SECONDS if deadline is None else left())
                try:
                    enumerate_until(time.time() + 0.6 * (follow - time.time()), True)
                except DomainError as e:
                    info["enumeration_refused"] = str(e)
            if (follow is not None and bab_ok and isinstance(work_dom, Box) and not closed()
                    and time.time() < follow):
                bb = by_bab(net, work_dom, p, q, follow)
                info["bab_after_milp"] = {"boxes": bb.n_boxes, "complete": bool(bb.complete),
                                          "upper": float(bb.upper)}
                take(bb.witness)
                if bb.witness is not None:
                    lowers["bab"] = bb.lower
                uppers["bab"] = bb.upper
    elif route == "bab":
        if left() is not None and left() <= 0:
            partial = True
        else:
            if _l2(p, q) and isinstance(work_dom, Box):
                # l2: split the box down to pieces whose exact maximum is found from their
                # activation patterns (exact_box); the local LipSDP bounds the whole box
                # when the split does not close in time
                tl = left() if deadline is not None else BAB_DEFAULT_SECONDS
                bb = sdp_bab(net, work_dom, time_limit=max(tl, 1e-3), samples=samples)
                info["sdps"] = bb.n_sdps
                info["exact_boxes"] = bb.info.get("exact_boxes")
                if bb.info.get("root_sdp") is not None:
                    uppers["sdp"] = bb.info["root_sdp"]
                info["bab_bound"] = "interval+exact_pieces+local_sdp"
            else:
                bb = by_bab(net, work_dom, p, q, deadline if deadline is not None else time.time() + BAB_DEFAULT_SECONDS)
                info["exact_boxes"] = bb.n_exact
            info["boxes"] = bb.n_boxes
            take(bb.witness)
            if bb.witness is not None:
                lowers["bab"] = bb.lower
            uppers["bab"] = bb.upper
            if not bb.complete:
                partial = True
    want_sdp = sdp
    sdp_ok = _l2(p, q) and not unbounded
    if want_sdp is None:
        want_sdp = sdp_ok and not closed() and "sdp" not in uppers and (
            net.input_dim + net.n_neurons + m <= SDP_MAX_SIZE)
    if want_sdp:
        if not sdp_ok:
            raise LipschitzError("lipschitz: the SDP bound is for p = q = 2 only")
        tl = left()
        if tl is None or tl > 0:
            try:
                uppers["sdp"] = sdp_bound(net, work_dom, time_limit=tl)
            except ResourceLimitError as e:  # skipped for the time or memory it needs
                info["sdp_error"] = str(e)
                partial = True
            except RelulabError as e:
                info["sdp_error"] = str(e)
        else:
            partial = True
    lower = max(lowers.values(), default=0.0)
    # an upper bound below a re-checked lower bound is a numerical failure of that bound
    # (an SDP over [-1e200, 1e200]^2 gave 2.8e-6 under a witness of 1.22): it proves
    # nothing and must not close the bracket
    failed = {k: v for k, v in uppers.items() if not v >= lower - LIP_REL_TOL * (1.0 + lower)}
    if failed:
        info["failed_uppers"] = {k: float(v) for k, v in failed.items()}
        uppers = {k: v for k, v in uppers.items() if k not in failed}
    if not uppers:
        uppers = {"none": float("inf")}
    upper_name = min(uppers, key=uppers.get)
    upper = max(uppers[upper_name], lower)
    if upper < _FLOAT_TINY and _paths_underflow(net):
        # every path's weight product is below float64's range: the float routes read 0
        # for 1e-200 weights (constant 2e-400), so the smallest normal float is the bound
        upper = _FLOAT_TINY
        info["underflow"] = "every path's weight product underflows float64: the upper bound is its smallest normal number"
    # relative to the constant itself: with (1 + lower), constants near 3e-8 were called
    # exact with a bracket twice as wide
    exact = upper - lower <= LIP_REL_TOL * lower and witness is not None
    info["upper_from"] = upper_name
    # the limit is wall-clock; on a loaded machine the CPU seconds say what the search got
    info["cpu_seconds"] = time.process_time() - c0
    if time_limit is not None and time.time() - t0 > time_limit:
        partial = True   # a step ran past the limit (an SDP's last iteration): it was cut
    return LipschitzResult(
        lower=float(lower), upper=float(upper), status="exact" if exact else "bounded",
        method=route, p=p, q=q,
        domain="R^d" if global_ else dom.to_dict(),
        witness=witness, uppers=uppers, lowers=lowers, time=time.time() - t0,
        partial=bool(partial), info=info,
    )


