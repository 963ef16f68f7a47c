"""Decision problems around positivity (Froese et al.; W[l-1]-hard in the input
dimension), each answered exactly with a re-checked certificate.

* :func:`is_positive`: does ``f`` take a positive value on a Box/Polytope (one MILP
  maximisation) or anywhere on R^d?  For R^d: ``F(x, t) = t f(x / t)`` is positive
  somewhere in ``t > 0`` iff ``f`` is, and, being positively homogeneous, iff it is
  positive somewhere on ``[-1, 1]^d x (0, 1]``; a positive value at ``t = 0`` (the
  recession function) stays positive for small ``t > 0`` by continuity, so the closed
  box ``[-1, 1]^d x [0, 1]`` gives the same answer: one bounded MILP, exact.
* :func:`surjective`: a scalar CPWL ``f`` is onto R iff it is unbounded above and
  below, iff its recession function ``g`` (the bias-free network) takes a positive and a
  negative value (``|f - g|`` is bounded by :func:`offset_bound`).
* :func:`zonotope_contains`: ``Z1 in Z2`` iff ``h_Z1(u) <= h_Z2(u)`` for every ``u``,
  with the support function ``h_Z(u) = c . u + ||G^T u||_1``; the difference is a
  one-hidden-layer, positively homogeneous ReLU network of ``u`` (``|a| = relu(a) +
  relu(-a)``), so non-containment is its positivity on ``[-1, 1]^n``.

"Yes, positive" comes with an input where the forward pass in exact rational
arithmetic is > 0.  "Not positive" means the MILP proved the maximum ``<= POS_TOL``
relative to the output's scale (the tolerance policy of every MILP answer in relulab);
a time limit gives "unknown".

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> net = Network([[[1.0], [-1.0]], [[-1.0, -1.0]]], [[0.0, 0.0], [0.5]])   # 0.5 - |x|
    >>> is_positive(net).positive, is_positive(net * -1.0).positive
    (True, True)
    >>> minus = Network([[[1.0], [-1.0]], [[-1.0, -1.0]]], [[0.0, 0.0], [-0.5]])   # -0.5 - |x|
    >>> is_positive(minus).positive
    False
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..bounds import float_layers, interval_bounds
from ..domain import Box, Polytope, as_domain
from ..errors import RelulabError
from ..limits import check_seconds
from ..network import Network
from ..tolerance import MIP_GAP
from .jacobians import bias_free
from .milp import MIP_ABS_GAP, homogeneous_problem
from .result import ContainmentResult, PositivityResult, SurjectivityResult

__all__ = ["is_positive", "surjective", "zonotope_contains", "Zonotope", "offset_bound",
           "positivity_network", "POS_TOL"]

# A maximum proved <= POS_TOL * (1 + output scale) counts as "not positive": HiGHS's
# bounds are exact only up to its feasibility tolerances (~1e-7 of big-M quantities).
POS_TOL = 1e-7  # tol: HiGHS's big-M feasibility accuracy (see above)


def _exact_value(net: Network, x: np.ndarray) -> Fraction:
    """``f(x)`` in rational arithmetic at the float input ``x`` (exactly as given)."""
    X = np.array([[Fraction(float(v)) for v in x]], dtype=object)
    return net.exact()(X)[0, 0]


def _scalar(net: Network, what: str) -> Network:
    if not isinstance(net, Network):
        raise RelulabError(f"{what}: expected a relulab Network, got {type(net).__name__}")
    if net.output_dim != 1:
        raise RelulabError(f"{what}: the network has {net.output_dim} outputs; it needs a scalar output")
    from .rounding import float_network

    return float_network(net, what)


def _scale(net: Network, box: Box) -> float:
    b = interval_bounds(net, box)
    return float(np.max(np.abs(np.concatenate([b.out_lo, b.out_hi]))))


def _rd_witness(net: Network, xt: np.ndarray) -> np.ndarray | None:
    """An input of ``f`` with ``f > 0`` (exactly) from a point ``(x, t)`` where the
    homogenised network is positive: ``x / t``, or ``x / s`` for small ``s`` when
    ``t`` is 0 (positivity at ``t = 0`` persists for small ``t > 0``)."""
    x, t = xt[:-1], float(xt[-1])
    ts = ([t] if t > 0 else []) + [2.0 ** -k for k in range(0, 60, 2)]
    for s in ts:
        y = x / s
        if np.all(np.isfinite(y)) and _exact_value(net, y) > 0:
            return y
    return None


@dataclass(frozen=True)
class _Max:
    status: str
    value: float
    x: np.ndarray
    bound: float


def _maximize(net: Network, dom: Box | Polytope, time_limit: float | None) -> _Max:
    """max f over a bounded domain by the big-M MILP of :func:`relulab.verify.encode`, with
    the pre-activation bounds of :func:`relulab.lipschitz.milp.preactivation_bounds`
    (which mark neurons that are identically 0 as inactive)."""
    from ..lp import LPModel
    from ..verify.milp import (
        centre_domain,
        encode,
        shift_error,
        sound_tolerances,
    )
    from .milp import preactivation_bounds

    if net.n_hidden_layers == 0:
        net = net.deepen(1)  # the encoding needs a hidden layer; an equivalent network has one
    box = dom if isinstance(dom, Box) else dom.bounding_box()
    # a domain far from the origin is moved there first, as relulab.verify.maximize does
    # (first-layer biases of 3e6 cancelling over a thin polytope near 2.7e6 gave a bound
    # 0.6 under a point's exact value, and "nonpositive" for a positive network)
    moved = centre_domain(net.float() if net.is_exact else net, dom, box)
    mnet, mdom, mbox = (net, dom, box) if moved is None else (moved.net, moved.domain, moved.box)
    pre = preactivation_bounds(mnet, mdom)
    enc = encode(mnet, mdom, pre)
    # as in relulab.verify.maximize: tight feasibility, and the bound widened by what the
    # tolerances can hide once later weights amplify them
    Ws, bs, sk = float_layers(mnet)
    obj = np.asarray(enc.out_A[0].toarray()).reshape(-1)
    const = float(enc.out_c[0])
    model = LPModel(obj, A_ub=enc.A_ub, b_ub=enc.b_ub, lb=enc.lb, ub=enc.ub, integer=enc.integer,
                    maximize=True, time_limit=time_limit)
    model.set_mip_gap(rel=MIP_GAP, abs=MIP_ABS_GAP)
    err = sound_tolerances(model, Ws, bs, sk, pre, mbox, np.ones((1, 1)))
    if moved is not None:
        err += float(shift_error(Ws, np.ones((1, 1)), moved)[0])
    res = model.solve()
    if res.status not in ("optimal", "time_limit"):
        raise RelulabError(f"is_positive: the MILP ended with status {res.status}")
    if res.x is None:
        x = box.center
    elif moved is None:
        x = np.clip(res.x[: enc.d], box.lo, box.hi)
    else:
        x = moved.to_input(res.x[: enc.d], box)
    if isinstance(dom, Polytope):
        x = dom.pulled_inside(x)   # (a point inside stays)
    value = float(net(x[None])[0, 0])
    bound = float(res.bound) + const if res.bound is not None and np.isfinite(res.bound) else np.inf
    if res.status == "optimal" and res.objective is not None:
        bound = max(bound, float(res.objective) + const)
    bound += err
    status = res.status
    if value > bound:
        # a point beats the solver's bound beyond its tolerances: no proof from this MILP
        status, bound = "unknown", np.inf
    return _Max(status, value, x, max(bound, value))


def is_positive(net: Network, domain: Box | Polytope | tuple | None = None, *,
                time_limit: float | None = None) -> PositivityResult:
    """Does the scalar network take a positive value on ``domain`` (R^d when None)?

    Example:
        >>> from relulab import Network, Box
        >>> net = Network([[[1.0]], [[1.0]]], [[-2.0], [0.0]])   # relu(x - 2)
        >>> is_positive(net, Box([-1], [1])).positive, is_positive(net).positive
        (False, True)
    """
    t0 = time.time()
    time_limit = check_seconds(time_limit, "is_positive")   # NaN was taken as no limit
    net = _scalar(net, "is_positive")
    if domain is None:
        H, box = homogeneous_problem(net)
        prob_net, prob_dom, method = H, box, "milp (homogenised, R^d)"
    else:
        prob_dom = as_domain(domain, net.input_dim)
        if isinstance(prob_dom, Polytope) and (prob_dom.n_constraints == 0 or not prob_dom.is_bounded):
            if prob_dom.n_constraints == 0:
                return is_positive(net, None, time_limit=time_limit)
            raise RelulabError("is_positive: the polytope is unbounded; give a bounded one or None for R^d")
        prob_net, method = net, "milp"
    box = prob_dom if isinstance(prob_dom, Box) else prob_dom.bounding_box()
    r = _maximize(prob_net, prob_dom, time_limit)
    scale = _scale(prob_net, box)
    wit = None
    if r.value > 0:
        if domain is None:
            wit = _rd_witness(net, r.x)
        elif _exact_value(net, r.x) > 0 and prob_dom.contains_exactly(r.x):
            wit = np.asarray(r.x, dtype=np.float64)
    if wit is None and r.status == "optimal" and 0 < r.bound <= POS_TOL * (1.0 + scale):
        # a maximum within the solver's tolerance of 0: look for a point where f is
        # positive in exact arithmetic before answering "not positive" (relu((1 + 1e-10) x)
        # - relu(x) is 1e-10 x, positive at x = 1, and read "nonpositive")
        found = _exact_positive_point(prob_net, prob_dom, box, r.x)
        wit = found if found is None or domain is not None else _rd_witness(net, found)
    if wit is not None:
        val = float(net(wit[None])[0, 0])
        return PositivityResult(True, "positive", wit, val, float(r.value), float(r.bound),
                                method, time.time() - t0)
    if r.status == "optimal" and r.bound <= POS_TOL * (1.0 + scale):
        return PositivityResult(False, "nonpositive", None, None, float(r.value), float(r.bound),
                                method, time.time() - t0, within_tolerance=bool(r.bound > 0))
    return PositivityResult(None, "unknown", None, None, float(r.value), float(r.bound), method,
                            time.time() - t0)


# candidate points tried in exact arithmetic when the maximum is within tolerance of 0
EXACT_PROBES = 64


def _exact_positive_point(net: Network, dom: Box | Polytope, box: Box,
                          x: np.ndarray | None) -> np.ndarray | None:
    """A point of ``dom`` (``box`` its bounding box) where ``net`` is positive in exact arithmetic,
    among the solver's point, the box's corners (up to 2^10 of them) and EXACT_PROBES
    seeded points of the box; None when none is."""
    d = net.input_dim
    cands = [] if x is None else [np.asarray(x, dtype=np.float64).reshape(-1)[:d]]
    if d <= 10:
        corners = (np.arange(2 ** d)[:, None] >> np.arange(d)[None, :]) & 1
        cands += list(np.where(corners == 1, box.hi, box.lo))
    rng = np.random.default_rng(0)
    cands += list(rng.uniform(box.lo, box.hi, size=(EXACT_PROBES, d)))
    C = np.asarray(cands, dtype=np.float64)
    if not len(C):
        return None
    vals = net(C)[:, 0]
    for i in np.argsort(-vals):
        if vals[i] < -1e-6 * (1.0 + abs(vals).max()):  # tol: surely negative in floats too
            break
        c = C[i]
        if dom.contains_exactly(c) and _exact_value(net, c) > 0:
            return c
    return None


def offset_bound(net: Network) -> float:
    """A bound ``K`` with ``|f(x) - g(x)| <= K`` for all ``x``, where ``g`` is the
    bias-free network: the biases' effect pushed through ``|W|`` (ReLU is 1-Lipschitz).

    Example:
        >>> from relulab import Network
        >>> K = offset_bound(Network([[[1.0]], [[2.0]]], [[-1.0], [0.5]]))   # 2.5, rounded up
        >>> 2.5 <= K < 2.5 + 1e-14
        True
    """
    Ws, bs, sk = float_layers(net)
    delta = np.zeros(Ws[0].shape[1])
    u = 2.0 ** -52   # each sum of nonnegative terms, rounded up by its own error bound
    for W, b in zip(Ws, bs, strict=True):
        delta = (np.abs(W) @ delta + np.abs(b)) * (1.0 + (W.shape[1] + 2) * u)
    if sk is not None:
        delta = (delta + np.abs(sk[1])) * (1.0 + 2 * u)
    return float(np.max(delta))


def surjective(net: Network, *, time_limit: float | None = None) -> SurjectivityResult:
    """Is the scalar network onto R?  (Unbounded above and below, decided on the
    bias-free recession network over ``[-1, 1]^d``.)

    Example:
        >>> from relulab import Network
        >>> surjective(Network([[[1.0], [-1.0]], [[1.0, -2.0]]], [[0.0, 0.0], [0.0]])).surjective
        True
        >>> r = surjective(Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]]))   # |x|
        >>> r.surjective, r.status, r.missed < -1.0   # a float below -(K + 1), K = 0
        (False, 'bounded below', True)
    """
    t0 = time.time()
    net = _scalar(net, "surjective")
    g = bias_free(net)
    d = net.input_dim
    box = Box(-np.ones(d), np.ones(d))
    K = offset_bound(net)
    time_limit = check_seconds(time_limit, "surjective")   # -1 was accepted
    half = None if time_limit is None else time_limit / 2
    up = is_positive(g, box, time_limit=half)
    down = is_positive(-g, box, time_limit=half)
    ok_up = up.witness if up.positive else None
    ok_down = down.witness if down.positive else None
    if up.positive and down.positive:
        return SurjectivityResult(True, "surjective", ok_up, ok_down, None, K, time.time() - t0)
    if up.positive is False:
        # f <= g + K <= K everywhere; the missed value is a float above K + 1 (K + 1.0
        # rounds to K itself at K = 1e17, a value f takes).  Within the solver's
        # tolerance (the sign of g's maximum not proved) the result says so
        missed = float(np.nextafter(K + 1.0, np.inf))
        return SurjectivityResult(False, "bounded above", ok_up, ok_down, missed, K, time.time() - t0,
                                  within_tolerance=bool(up.within_tolerance))
    if down.positive is False:
        missed = float(np.nextafter(-K - 1.0, -np.inf))
        return SurjectivityResult(False, "bounded below", ok_up, ok_down, missed, K, time.time() - t0,
                                  within_tolerance=bool(down.within_tolerance))
    return SurjectivityResult(None, "unknown", ok_up, ok_down, None, K, time.time() - t0)


@dataclass(frozen=True)
class Zonotope:
    """The zonotope ``{c + G l : l in [-1, 1]^k}`` (``G`` of shape ``(n, k)``).

    Example:
        >>> Zonotope([0, 0], [[1, 0], [0, 2]]).support(np.array([1.0, 1.0]))
        3.0
    """

    center: np.ndarray
    generators: np.ndarray

    def __init__(self, center: Any, generators: Any) -> None:
        c = np.asarray(center, dtype=np.float64).reshape(-1)
        G = np.asarray(generators, dtype=np.float64)
        if G.ndim == 1:
            G = G.reshape(-1, 1)
        if G.ndim != 2 or G.shape[0] != c.shape[0]:
            raise RelulabError(
                f"zonotope: generators of shape {G.shape} do not match a center of size {c.shape[0]}")
        if not (np.all(np.isfinite(c)) and np.all(np.isfinite(G))):
            raise RelulabError("zonotope: center and generators must be finite numbers")
        object.__setattr__(self, "center", c)
        object.__setattr__(self, "generators", G)

    @property
    def dim(self) -> int:
        return int(self.center.shape[0])

    def support(self, u: np.ndarray) -> float:
        """``h(u) = max_{z in Z} u . z``."""
        u = np.asarray(u, dtype=np.float64)
        return float(self.center @ u + np.sum(np.abs(self.generators.T @ u)))

    def to_dict(self) -> dict:
        return {"center": self.center.tolist(), "generators": self.generators.tolist()}


def _as_zonotope(Z: Any, what: str) -> Zonotope:
    if isinstance(Z, Zonotope):
        return Z
    if isinstance(Z, tuple) and len(Z) == 2:
        return Zonotope(*Z)
    raise RelulabError(f"zonotope_contains: {what} is not a Zonotope or a (center, generators) pair")


def positivity_network(Z1: Zonotope, Z2: Zonotope) -> Network:
    """The one-hidden-layer network ``u -> h_Z1(u) - h_Z2(u)`` (positive somewhere iff
    Z1 is not inside Z2).

    Example:
        >>> Z = Zonotope([0.0], [[1.0]])
        >>> float(positivity_network(Zonotope([0.0], [[2.0]]), Z)([[1.0]])[0, 0])
        1.0
    """
    G1, G2 = Z1.generators, Z2.generators
    W1 = np.vstack([G1.T, -G1.T, G2.T, -G2.T])
    if W1.shape[0] == 0:
        W1 = np.zeros((1, Z1.dim))
    k1, k2 = G1.shape[1], G2.shape[1]
    W2 = np.concatenate([np.ones(2 * k1), -np.ones(2 * k2)])
    if W2.size == 0:
        W2 = np.zeros(1)
    skip = ((Z1.center - Z2.center)[None, :], np.zeros(1))
    return Network([W1, W2[None, :]], [np.zeros(W1.shape[0]), np.zeros(1)], skip)


def zonotope_contains(Z1: Zonotope | tuple, Z2: Zonotope | tuple, *,
                      time_limit: float | None = None) -> ContainmentResult:
    """Is zonotope ``Z1`` contained in zonotope ``Z2``?

    Example:
        >>> small = Zonotope([0, 0], [[1, 0], [0, 1]])
        >>> big = Zonotope([0, 0], [[2, 1], [0, 2]])
        >>> zonotope_contains(small, big).contained, zonotope_contains(big, small).contained
        (True, False)
    """
    t0 = time.time()
    Z1, Z2 = _as_zonotope(Z1, "Z1"), _as_zonotope(Z2, "Z2")
    if Z1.dim != Z2.dim:
        raise RelulabError(f"zonotope_contains: Z1 lives in dimension {Z1.dim}, Z2 in {Z2.dim}")
    phi = positivity_network(Z1, Z2)
    n = Z1.dim
    r = is_positive(phi, Box(-np.ones(n), np.ones(n)), time_limit=time_limit)
    if r.positive:
        u = r.witness
        z = Z1.center + Z1.generators @ np.sign(Z1.generators.T @ u)
        # exact re-check: u . z > h_Z2(u) in rationals
        F = [Fraction(float(v)) for v in u]
        lhs = sum(Fraction(float(a)) * b for a, b in zip(z, F, strict=True))
        h2 = sum(Fraction(float(a)) * b for a, b in zip(Z2.center, F, strict=True)) + sum(
            abs(sum(Fraction(float(g)) * b for g, b in zip(col, F, strict=True))) for col in Z2.generators.T)
        if lhs > h2:
            return ContainmentResult(False, "not contained", z, u, r.maximum, r.bound, time.time() - t0)
        return ContainmentResult(None, "unknown", None, u, r.maximum, r.bound, time.time() - t0)
    if r.positive is False:
        return ContainmentResult(True, "contained", None, None, r.maximum, r.bound, time.time() - t0,
                                 within_tolerance=r.within_tolerance)
    return ContainmentResult(None, "unknown", None, None, r.maximum, r.bound, time.time() - t0)
