"""The proof that a hidden neuron is dead or stably active on a domain (the editable
layer lists the symmetry transforms work on live in :mod:`relulab.layers`).

A neuron's *status* on a domain is ``-1`` (dead: ``z <= 0`` everywhere, so ``relu(z) = 0``),
``+1`` (stably active: ``z >= 0`` everywhere, so ``relu(z) = z``) or ``0`` (unstable, or
not proved either way).  Status comes only from sound reasoning, never from sampling:

* exact interval propagation in rational arithmetic on a Box (the network's float
  entries are exact binary rationals, so this is exact for the network as given);
* symbolic (CROWN) bounds from :mod:`relulab.bounds`, accepted with a safety margin of
  ``PROOF_MARGIN`` relative to the size of the bound;
* for a Polytope, one LP per first-layer neuron over the polytope itself (same margin);
* optionally, the exact verifier (:func:`relulab.verify.maximize`) on the sub-network
  that computes the neuron's pre-activation (same margin).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..domain import Box, Polytope, as_domain
from ..errors import RelulabError, is_int_at_least, is_positive_seconds
from ..layers import as_kind, bool_mask, prefix_network
from ..limits import Deadline
from ..network import Network, NetworkError
from ..tolerance import PROOF_MARGIN, scaled_tol

# Exact interval arithmetic costs Python-object operations; above this size the float
# symbolic bounds alone are used.
_EXACT_INTERVAL_MAX_PARAMS = 20_000


# ------------------------------------------------------------------ neuron status
@dataclass(frozen=True)
class NeuronStatus:
    """Per hidden layer, each neuron's proved status (-1 dead, +1 stably active, 0 neither)
    and how it was proved (``"interval-exact"``, ``"symbolic"``, ``"lp"``, ``"verifier"``).

    Example:
        >>> from relulab import Box, Network
        >>> net = Network([[[1.0], [-1.0], [1.0]], [[1.0, 1.0, 1.0]]], [[2.0, -3.0, 0.0], [0.0]])
        >>> st = neuron_status(net, Box([-1], [1]))
        >>> st.status[0].tolist()           # stably active, dead, unstable
        [1, -1, 0]
    """

    status: tuple[np.ndarray, ...]
    how: tuple[tuple[str, ...], ...]

    @property
    def n_dead(self) -> int:
        return int(sum(int(np.sum(s == -1)) for s in self.status))

    @property
    def n_active(self) -> int:
        return int(sum(int(np.sum(s == 1)) for s in self.status))

    def to_dict(self) -> dict:
        return {
            "dead": self.n_dead,
            "stably_active": self.n_active,
            "status": [s.tolist() for s in self.status],
        }


def _exact_interval(net: Network, box: Box) -> list[tuple[np.ndarray, np.ndarray]]:
    """Pre-activation intervals of every hidden layer in exact rational arithmetic."""
    ex = net.exact()
    lo = as_kind(box.lo, True)
    hi = as_kind(box.hi, True)
    z0 = Fraction(0)
    out = []
    for W, b in zip(ex.weights[:-1], ex.biases[:-1], strict=True):
        pos = bool_mask(W > 0)
        Wp = np.where(pos, W, z0)
        Wn = np.where(pos, z0, W)
        zlo = Wp @ lo + Wn @ hi + b
        zhi = Wp @ hi + Wn @ lo + b
        out.append((zlo, zhi))
        lo = np.where(bool_mask(zlo > 0), zlo, z0)
        hi = np.where(bool_mask(zhi > 0), zhi, z0)
    return out


def _margin(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return PROOF_MARGIN * (1.0 + np.maximum(np.abs(lo), np.abs(hi)))


_EPS = float(np.finfo(np.float64).eps)  # unit of float64 rounding (2 x the unit roundoff)


def _gamma(n: int) -> float:
    """Relative error bound of a float64 dot product of length ``n`` (Higham's
    ``gamma_n``, taken generously: a few extra operations per entry)."""
    return (n + 4) * _EPS


def _magnitudes(net: Network, xabs: np.ndarray) -> list[np.ndarray]:
    """Sound bounds ``|h_k| <= H_k`` of every layer's activations (``H_0 = |x|``) by
    propagating ``|W| H + |b|`` (cruder than interval bounds but outward-rounded: it
    only weighs rounding-level terms)."""
    H = [xabs]
    for W, b in zip(net.weights[:-1], net.biases[:-1], strict=True):
        W, b = np.asarray(W, float), np.asarray(b, float)
        H.append((np.abs(W) @ H[-1] + np.abs(b)) * (1 + _gamma(W.shape[1])))
    return H


def _term_rounding(net: Network, domain: Box | Polytope) -> list[np.ndarray]:
    """Per hidden layer, a bound on what float64 rounding can move a computed bound of its
    pre-activations: the bounds are sums of terms no larger than the layer's magnitudes
    ``|W_k| H_{k-1} + |b_k|`` (:func:`_magnitudes`), each rounded, over a depth of ``k``
    layers.  A margin relative to the bound alone let terms of 3e13 cancel to +2.8e-5 and
    the neuron read "dead" (and two networks 27.8 apart "equal").

    Example:
        >>> net = Network([[[1.0], [1.0]], [[2e13, -2e13]], [[1.0]]], [[0.0, 0.0], [1e-5], [0.0]])
        >>> bool(_term_rounding(net, Box([0], [1]))[1][0] > 1e-3)   # terms of 2e13 cancel
        True
    """
    box = domain if isinstance(domain, Box) else domain.bounding_box()
    f = net.float()
    with np.errstate(over="ignore", invalid="ignore"):
        Z = _magnitudes(f, box.magnitudes)[1:]
    out = []
    depth_terms = 0
    for W, z in zip(f.weights[:-1], Z, strict=True):
        depth_terms += W.shape[1] + 4
        # generous: every term of the back-substitution rounded a few times per layer
        out.append(np.nan_to_num(4.0 * depth_terms * _EPS * z, nan=np.inf))
    return out


def _first_layer_lp(net: Network, poly: Polytope, deadline: Deadline | None = None,
                    box: Box | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Proven bounds on each first-layer pre-activation over a polytope: LP duality's
    bound (:meth:`relulab.lp.LPModel.proven_bound`), not HiGHS's objective, which is
    optimal only up to its 1e-7 dual tolerance (a reduced cost of 1e-8 on a variable
    ranging to 1e9 read a maximum of 1 for 11, and a live neuron was "dead").  A bound
    the duals do not give, or one past ``deadline``, stays infinite (undecided).  ``box``: the polytope's bounding box, when known (bounds on the variables)."""
    from ..lp import LPModel

    W = np.asarray(net.float().weights[0], dtype=np.float64)
    b = np.asarray(net.float().biases[0], dtype=np.float64)
    n = W.shape[0]
    lo = np.full(n, -np.inf)
    hi = np.full(n, np.inf)
    model = LPModel(np.zeros(poly.dim), A_ub=poly.A, b_ub=poly.b,
                    lb=None if box is None else box.lo, ub=None if box is None else box.hi)
    for i in range(n):
        for sign in (1.0, -1.0):
            if deadline is not None and deadline.expired():
                return lo, hi
            model.set_objective(sign * W[i], maximize=False)
            r = model.solve()
            if r.status != "optimal":
                continue
            v = model.proven_bound(r)
            if v is None or not np.isfinite(v):
                continue
            # the bias is added upward-safe: one rounding of the sum
            if sign > 0:
                lo[i] = np.nextafter(v + b[i], -np.inf)
            else:
                hi[i] = np.nextafter(-v + b[i], np.inf)
    return lo, hi


def neuron_status(
    net: Network,
    domain: Box | Polytope,
    *,
    use_verifier: bool = False,
    samples: np.ndarray | None = None,
    time_limit: float | None = None,
    max_verifier_calls: int = 200,
) -> NeuronStatus:
    """Prove which hidden neurons are dead or stably active on ``domain``.

    With ``use_verifier``, neurons that the bounds leave open but that never change sign
    on ``samples`` are tried with the exact verifier (one maximisation each, within
    ``time_limit`` seconds in all); on a Polytope the first layer's LPs also stop at
    ``time_limit`` (the neurons left stay undecided).

    Example:
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[2.0, -3.0], [0.0]])
        >>> neuron_status(net, Box([-1], [1])).status[0].tolist()
        [1, -1]
    """
    from ..bounds import symbolic_bounds

    if not isinstance(net, Network):
        raise NetworkError(f"neuron_status: net must be a relulab Network, got {type(net).__name__}")
    # (0 is allowed: a caller whose time is spent gets the bounds alone)
    if time_limit is not None and not (is_positive_seconds(time_limit) or time_limit == 0):
        raise RelulabError(f"neuron_status: time_limit must be a number of seconds >= 0 or None, "
                           f"got {time_limit!r}")
    if not is_int_at_least(max_verifier_calls, 0):
        raise RelulabError(f"neuron_status: max_verifier_calls must be an integer >= 0, got {max_verifier_calls!r}")
    domain = as_domain(domain, net.input_dim)   # one error naming a wrong dimension
    # the per-neuron LPs stop at the time limit (their neurons stay undecided), and the
    # verifier's maximisations get what they leave, not a fresh time limit of their own
    lp_deadline = Deadline(time_limit) if time_limit is not None else None
    # a polytope's bounds need its bounding box (2 LPs per input: 7 s at 100 inputs and
    # 400 rows); not found within the time limit, it is treated as unbounded (the first
    # layer's LPs only; sound, fewer neurons decided)
    bounded = True
    if isinstance(domain, Polytope):
        bounded = domain.bounded_by(None if lp_deadline is None else lp_deadline.at)
    L = net.n_hidden_layers
    status = [np.zeros(w, dtype=np.int8) for w in net.widths]
    how: list[list[str]] = [[""] * w for w in net.widths]
    if L == 0:
        return NeuronStatus(tuple(status), tuple(tuple(h) for h in how))

    def mark(k: int, mask: np.ndarray, code: int, why: str) -> None:
        for i in np.nonzero(mask & (status[k] == 0))[0]:
            status[k][i] = code
            how[k][i] = why

    if isinstance(domain, Box) and net.n_params <= _EXACT_INTERVAL_MAX_PARAMS:
        for k, (zlo, zhi) in enumerate(_exact_interval(net, domain)):
            mark(k, bool_mask(zhi <= 0), -1, "interval-exact")
            mark(k, bool_mask(zlo >= 0), 1, "interval-exact")
    if isinstance(domain, Polytope) and not bounded:
        # No bounds on an unbounded set; only the first layer can be decided by LP.
        lo, hi = _first_layer_lp(net, domain, lp_deadline)
        mg = _margin(np.nan_to_num(lo), np.nan_to_num(hi))
        mark(0, hi <= -mg, -1, "lp")
        mark(0, lo >= mg, 1, "lp")
    else:
        # a polytope's bounds: over its bounding box when known or found in time, else
        # over the (looser, sound) box of its single-coordinate rows; with that box alone
        # the bounds use no LP over the polytope (the box's 2 LPs per input took 10 s of
        # a 1 s limit at 100 inputs, 600 rows)
        region: Box | Polytope = domain
        if isinstance(domain, Polytope) and lp_deadline is not None:
            box = domain.enclosing_box(lp_deadline.at)
            if not domain.has_bounding_box:
                region = box
        sb = symbolic_bounds(net, region)
        slack = _term_rounding(net, region)
        for k in range(L):
            lo, hi = sb.pre_lo[k], sb.pre_hi[k]
            mg = np.maximum(_margin(lo, hi), slack[k])
            mark(k, hi <= -mg, -1, "symbolic")
            mark(k, lo >= mg, 1, "symbolic")
        if isinstance(domain, Polytope):
            lo, hi = _first_layer_lp(net, domain, lp_deadline,
                                     region if isinstance(region, Box) else domain.bounding_box())
            mg = _margin(np.nan_to_num(lo), np.nan_to_num(hi))
            mark(0, hi <= -mg, -1, "lp")
            mark(0, lo >= mg, 1, "lp")

    if use_verifier:
        _verifier_status(net, domain, status, how, samples, lp_deadline, max_verifier_calls)
    return NeuronStatus(tuple(status), tuple(tuple(h) for h in how))


def verifier_available() -> bool:
    try:
        from ..verify import maximize  # noqa: F401
    except ImportError:
        return False
    return True


def _verifier_status(net, domain, status, how, samples, deadline: Deadline | None, max_calls) -> None:
    if not verifier_available():
        return
    from ..verify import maximize

    if samples is None:
        samples = domain.sample(2000, np.random.default_rng(0))
    pre = net.float().preactivations(samples)
    deadline = deadline if deadline is not None else Deadline(None)
    calls = 0
    # The first layer is affine in the input: the interval / LP bounds above are already
    # exact there, so the verifier starts at the second hidden layer.
    for k in range(1, net.n_hidden_layers):
        for i in np.nonzero(status[k] == 0)[0]:
            z = pre[k][:, i]
            if np.all(z <= 0):
                sign, code = 1.0, -1  # looks dead: prove max z <= 0
            elif np.all(z >= 0):
                sign, code = -1.0, 1  # looks stably active: prove max (-z) <= 0
            else:
                continue
            if calls >= max_calls:
                return
            left = deadline.left()
            if left is not None and left <= 0:
                return
            sub = prefix_network(net.float(), k, int(i))
            res = maximize(sub, domain, np.array([sign]), time_limit=left)
            calls += 1
            ub = getattr(res, "upper_bound", None)
            if ub is None or not np.isfinite(ub):
                continue
            if ub <= -scaled_tol(ub, PROOF_MARGIN):
                status[k][i] = code
                how[k][i] = "verifier"
