"""Functional equivalence of ReLU networks, decided exactly.

:func:`equivalent` answers whether two networks (any architectures, same input and output
sizes) compute the same function on a Box or Polytope:

* ``equal`` - proved: either their normal forms (:func:`~relulab.symmetry.canonical`)
  coincide, or the exact MILP verifier bounds ``max |f_j - g_j|`` over the domain by
  ``tol`` for every output ``j`` (2 m maximisations on the network ``f - g``);
* ``different`` - with a witness input where ``|f(x) - g(x)| > tol``, re-checked by two
  separate forward passes (in rational arithmetic too when both networks are exact);
* ``unknown`` - the time ran out (or the verifier is missing) before either was shown.

Cheap steps run first: normal forms, then a sampling attack (most different pairs fall
there), then the verifier.

:func:`equivalent_one_hidden_layer` decides equivalence on all of R^d for networks with
at most one hidden layer from the complete description of their symmetries: write every
neuron as ``a relu(u . x + beta)`` with its hyperplane normalised (pivot entry 1), turn
the opposite orientation into the chosen one with ``relu(-z) = relu(z) - z`` (the twin
identity: the difference is affine), and sum the coefficients of each hyperplane.  Two
networks are equal on R^d if and only if every hyperplane gets the same total
coefficient and the affine parts agree: across a hyperplane with a nonzero total
coefficient the gradient jumps, and nothing else can cancel the jump.

Tolerance policy.  Exact (Fraction) networks are compared exactly where the method is
exact (normal forms, the algebraic decision, witnesses).  The verifier is float: its
``equal`` means ``max |f - g| <= tol`` (default ``1e-6 * max(1, typical |output|)``).

Example:
    >>> import numpy as np
    >>> from relulab import Network, Box
    >>> f = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])      # |x|
    >>> g = Network([[[2.0], [-3.0]], [[0.5, 1 / 3]]], [[0.0, 0.0], [0.0]])    # rescaled |x|
    >>> equivalent(f, g, Box([-1], [1])).status
    'equal'
    >>> equivalent_one_hidden_layer(f, Network([[[1.0]]], [[0.0]])).status   # |x| vs x
    'different'
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ..domain import Box, DomainError, Polytope, as_domain
from ..errors import RelulabError, is_int_at_least, is_positive_seconds
from ..layers import as_kind
from ..network import Network, NetworkError, nearest_float
from ..tolerance import EQUIV_TOL, MATCH_RTOL, PROOF_MARGIN, ROUNDOFF, TINY, or_default, scaled_tol
from ._status import _EPS, _gamma, _magnitudes, neuron_status, verifier_available
from .canonical import CanonicalReport, canonical

__all__ = [
    "EquivalenceError",
    "EquivalenceResult",
    "equivalent",
    "equivalent_one_hidden_layer",
    "whole_space_box",
    "one_hidden_layer_normal_form",
]


class EquivalenceError(RelulabError):
    """A bad argument of :func:`equivalent` (e.g. a negative or non-finite ``tol``)."""


@dataclass(frozen=True)
class EquivalenceResult:
    """The answer of :func:`equivalent`.

    Attributes:
        status: ``"equal"``, ``"different"`` or ``"unknown"``.
        method: what decided it: ``"canonical"``, ``"sampling"``, ``"bounds"`` (sound
            linear bounds of the difference on a box), ``"verifier"`` or ``"algebraic"``.
        tol: the tolerance of ``equal`` (0 for exact decisions).
        witness: for ``different``, an input where the networks differ.
        f_value, g_value: the two networks' outputs at the witness (forward passes).
        gap: ``max_j |f_j(w) - g_j(w)|`` at the witness (re-checked).
        upper_bound: a proved upper bound of ``max_j sup |f_j - g_j|`` on the domain
            (verifier or normal-form perturbation bound), when one is known.
        exact: True when the answer was obtained in exact rational arithmetic.
        message: one line of explanation.
        time: seconds.

    Example:
        >>> from relulab import Box, Network
        >>> f = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])       # |x|
        >>> g = Network([[[1.0], [-1.0]], [[1.0, 0.9]]], [[0.0, 0.0], [0.0]])       # not quite
        >>> r = equivalent(f, g, Box([-1], [1]))
        >>> r.status, bool(abs(float(f(r.witness)[0] - g(r.witness)[0]) - r.gap) < 1e-12), r.gap > 0
        ('different', True, True)
    """

    status: str
    method: str
    tol: float
    witness: np.ndarray | None = None
    f_value: np.ndarray | None = None
    g_value: np.ndarray | None = None
    gap: float | None = None
    upper_bound: float | None = None
    exact: bool = False
    message: str = ""
    time: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def equal(self) -> bool:
        return self.status == "equal"

    @property
    def different(self) -> bool:
        return self.status == "different"

    def to_dict(self) -> dict:
        def arr(a: Any) -> Any:
            if a is None:
                return None
            return [str(v) if isinstance(v, Fraction) and v.denominator != 1 else
                    (int(v) if isinstance(v, Fraction) else float(v)) for v in np.asarray(a).reshape(-1)]

        return {
            "status": self.status,
            "method": self.method,
            "tol": self.tol,
            "witness": arr(self.witness),
            "f_value": arr(self.f_value),
            "g_value": arr(self.g_value),
            "gap": self.gap,
            "upper_bound": self.upper_bound,
            "exact": self.exact,
            "message": self.message,
            "time": self.time,
            **({"details": self.details} if self.details else {}),
        }


# ------------------------------------------------------------------------ helpers
def _check_shapes(f: Network, g: Network) -> None:
    for name, v in (("f", f), ("g", g)):
        if not isinstance(v, Network):
            raise NetworkError(f"equivalent: {name} must be a relulab Network, got {type(v).__name__}")
    if f.input_dim != g.input_dim:
        raise NetworkError(f"equivalent: input sizes differ ({f.input_dim} vs {g.input_dim})")
    if f.output_dim != g.output_dim:
        raise NetworkError(f"equivalent: output sizes differ ({f.output_dim} vs {g.output_dim})")


def _to_fraction_vec(x: np.ndarray) -> np.ndarray:
    return as_kind(np.asarray(x).reshape(-1), True)


# up to this many parameters (both networks) a witness is re-checked in exact arithmetic
# (a Fraction pass costs about a microsecond per parameter)
EXACT_RECHECK_MAX_PARAMS = 2_000_000




def _recheck(
    f: Network, g: Network, x: np.ndarray, domain: Box | Polytope | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, bool] | None:
    """Re-evaluate a candidate witness by separate forward passes of ``f`` and ``g``.

    Returns ``(x, f(x), g(x), gap, exact)`` or None when ``x`` is outside the domain.  The
    gap is computed in rational arithmetic on the exact binary values of the inputs and
    of float weights (float passes made rounding error read as a difference: 1e12 relu(x)
    - 1e12 relu(c x) against its exact equal differed by 7.8e-5 in float64), except for
    networks of more than EXACT_RECHECK_MAX_PARAMS parameters (float passes, ``exact``
    False).
    """
    x = np.asarray(x).reshape(-1)
    if x.dtype != object:
        x = np.asarray(x, dtype=np.float64)
        if isinstance(domain, Box):
            x = np.clip(x, domain.lo, domain.hi)
        elif isinstance(domain, Polytope) and domain.contains(x) and not domain.contains_exactly(x):
            x = domain.pulled_inside(x)
    if domain is not None and not domain.contains_exactly(np.asarray(x, dtype=np.float64)):
        # the gap is measured in the domain only: a solver's point 4e-15 outside a
        # polytope saw a neuron that is 0 on it times 5.6e11 ('different', exact)
        return None
    if (f.is_exact and g.is_exact) or f.n_params + g.n_params <= EXACT_RECHECK_MAX_PARAMS:
        xe = _to_fraction_vec(x)
        fx, gx = f.exact()(xe), g.exact()(xe)
        # beyond float64 (|x| against x on [-1e308, 1e308]: 2e308) the gap reads inf
        gap = nearest_float(max(abs(a - b) for a, b in zip(fx, gx, strict=True)))
        return xe, fx, gx, gap, True
    xf = np.asarray(x, dtype=np.float64)
    fx, gx = f.float()(xf), g.float()(xf)
    return xf, fx, gx, float(np.max(np.abs(fx - gx))), False


def _output_scale(f: Network, g: Network, X: np.ndarray) -> float:
    """``max(1, largest |output| of f or g on X)``: the size of the numbers compared."""
    if len(X) == 0:  # n_samples=0: numpy's max of nothing raised
        return 1.0
    with np.errstate(over="ignore", invalid="ignore"):
        big = max(float(np.max(np.abs(f.float()(X)))), float(np.max(np.abs(g.float()(X)))))
    # a NaN output (inf - inf inside the float pass) is an overflow: Python's max(1.0, nan)
    # is 1.0, and the tolerance read 1e-6 where the outputs reach 1e298
    return np.inf if np.isnan(big) else max(1.0, big)


def _perturbation_bound(F: Network, G: Network, box: Box) -> float | None:
    """A sound bound of ``sup |F - G|`` on ``box`` for two networks of the same architecture
    (propagating ``|h_F - h_G|`` through the layers, ``relu`` being 1-Lipschitz)."""
    if F.widths != G.widths or (F.skip is None) != (G.skip is None):
        return None
    from ..bounds import interval_bounds

    Ff, Gf = F.float(), G.float()
    ib = interval_bounds(Ff, box)
    xabs = box.magnitudes
    H = xabs
    D = np.zeros_like(xabs)
    for k, (WF, bF, WG, bG) in enumerate(zip(Ff.weights, Ff.biases, Gf.weights, Gf.biases, strict=True)):
        D = np.abs(WF - WG) @ H + np.abs(WG) @ D + np.abs(bF - bG)
        if k < Ff.n_hidden_layers:
            H = np.maximum(ib.pre_hi[k], 0.0)
    if Ff.skip is not None:
        D = D + np.abs(Ff.skip[0] - Gf.skip[0]) @ xabs + np.abs(Ff.skip[1] - Gf.skip[1])
    same = all(np.array_equal(a, b) for a, b in zip(Ff.weights + Ff.biases, Gf.weights + Gf.biases, strict=True))
    if same and (Ff.skip is None or all(np.array_equal(a, b) for a, b in zip(Ff.skip, Gf.skip, strict=True))):
        # every weight difference is exactly zero: nothing to round.  (D itself was read:
        # 1e-200 relu(1e-200 x) against 2e-200 relu(1e-200 x) underflowed to D = 0, and two
        # different networks were "identical networks", bound 0)
        return 0.0
    # Slack for the rounding of this very computation.
    return float(np.max(D)) * (1 + ROUNDOFF) + TINY


def _float_error(net: Network, box: Box) -> float:
    """A sound bound of ``sup |net - net.float()|`` on ``box``: zero for a float network;
    for an exact one, each float weight is its rational value rounded to nearest (relative
    error below ``eps``), propagated through the layers (``relu`` is 1-Lipschitz)."""
    if not net.is_exact:
        return 0.0
    nf = net.float()
    xabs = box.magnitudes
    H = _magnitudes(nf, xabs)
    D = np.zeros_like(xabs)
    for k, (W, b) in enumerate(zip(nf.weights, nf.biases, strict=True)):
        aW, ab = np.abs(np.asarray(W, float)), np.abs(np.asarray(b, float))
        D = (aW @ D + 2 * _EPS * (aW @ H[k] + ab)) * (1 + _gamma(aW.shape[1]))
    if nf.skip is not None:
        D = D + 2 * _EPS * (np.abs(nf.skip[0]) @ xabs + np.abs(nf.skip[1])) * (1 + _gamma(len(xabs)))
    return float(np.max(D, initial=0.0))


def _canonical_error(net: Network, can: Network, rep: CanonicalReport, box: Box) -> float | None:
    """A sound bound of ``sup |net - can|`` on ``box`` for a float network and its normal
    form ``can = canonical(net, domain)`` (``rep`` its report), or None when the normal form
    lost a layer (``constant_from_layer``) and no layer-by-layer bound applies.

    Normalising and merging rounds, and merging rows that agree only to ``merge_tol``
    changes the function (by the row difference times the outgoing weights, which may be
    huge), so the normal form is *not* the same function.  This bound compares the two
    networks directly: each neuron ``j`` of ``net`` that the report maps to neuron ``p`` of
    ``can`` is written as ``h_j = a_j h'_p + e_j`` (``a_j > 0``, estimated from the rows;
    any positive value is sound, a good one is tight).  With ``A`` that matrix, the error
    ``D_k >= |h_k - A_k h'_k|`` obeys, row by row,

        ``z_j - a_j z'_p = W_j (h - A h') + (W A - a_j W')_p h' + (b_j - a_j b'_p)``,

    and ``|relu(z) - a relu(z')| <= |z - a z'|``.  Neurons without a counterpart count
    with their whole magnitude, except those proved dead on the domain (0) and constant
    ones (zero incoming weights: their exact value moves into the next bias).  The float
    rounding of this very computation is bounded by ``gamma_n`` terms."""
    if rep.constant_from_layer is not None or can.n_hidden_layers != net.n_hidden_layers:
        return None
    N, C = net.float(), can.float()
    xabs = box.magnitudes
    HN, HC = _magnitudes(N, xabs), _magnitudes(C, xabs)
    dead, const = set(rep.dead), set(rep.constant)
    groups = {(k, m[0]): m for k, m in rep.merged}
    L = N.n_hidden_layers
    d = N.input_dim
    pos = np.arange(d)            # counterpart in `can` of each neuron of the previous layer
    a = np.ones(d)                # its factor a_j (0: no counterpart)
    D = np.zeros(d)               # |h - A h'| on the previous layer
    hconst = np.zeros(d)          # exact value of constant neurons of the previous layer
    for k in range(L + 1):
        WN, bN = np.asarray(N.weights[k], float), np.asarray(N.biases[k], float)
        WC, bC = np.asarray(C.weights[k], float), np.asarray(C.biases[k], float)
        # WP = WN P for the map P (column i of WN goes to column pos[i] of `can`, times
        # a[i]), as a scatter-add: a dense P was n x n (1.2 GB and 10 s at 12,000 neurons)
        live = np.nonzero(a > 0)[0]
        WP = np.zeros((WN.shape[0], WC.shape[1]))
        np.add.at(WP.T, pos[live], (WN[:, live] * a[live]).T)
        PH = np.zeros(WN.shape[1])                      # |P| HC[k]
        PH[live] = a[live] * HC[k][pos[live]]
        bt = bN + WN @ hconst     # constant neurons of the previous layer, folded exactly
        g = _gamma(WN.shape[1])
        # Rounding of WP, bt and of the products with `a` below: gamma x magnitudes.
        round_W = g * (np.abs(WN) @ PH)
        round_b = g * (np.abs(bN) + np.abs(WN) @ hconst)
        if k < L:
            order = rep.order[k]
            tgt = np.full(WN.shape[0], -1)
            for p, j in enumerate(order):
                for i in groups.get((k, j), (j,)):
                    tgt[i] = p
        else:
            tgt = np.arange(WN.shape[0])
        n_out = WN.shape[0]
        new_a = np.zeros(n_out)
        E = np.zeros(n_out)
        for j in range(n_out):
            p = int(tgt[j])
            if p < 0:
                continue
            rN = np.append(WP[j], bt[j])
            rC = np.append(WC[p], bC[p])
            q = int(np.argmax(np.abs(rC)))
            aj = 1.0 if k == L else (rN[q] / rC[q] if rC[q] != 0 else 0.0)
            if not (np.isfinite(aj) and aj > 0):
                continue
            new_a[j] = aj
            M = np.abs(WP[j] - aj * WC[p]) @ HC[k]
            slack = round_W[j] + round_b[j] + 2 * g * aj * (np.abs(WC[p]) @ HC[k] + abs(bC[p]))
            E[j] = (np.abs(WN[j]) @ D + M + abs(bt[j] - aj * bC[p]) + slack) * (1 + g)
        if k == L:
            if N.skip is not None or C.skip is not None:
                SN = np.zeros((n_out, d)) if N.skip is None else np.asarray(N.skip[0], float)
                sN = np.zeros(n_out) if N.skip is None else np.asarray(N.skip[1], float)
                SC = np.zeros((n_out, d)) if C.skip is None else np.asarray(C.skip[0], float)
                sC = np.zeros(n_out) if C.skip is None else np.asarray(C.skip[1], float)
                E = E + (np.abs(SN - SC) @ xabs + np.abs(sN - sC)) * (1 + _gamma(d)) + g * (
                    (np.abs(SN) + np.abs(SC)) @ xabs + np.abs(sN) + np.abs(sC))
            return float(np.max(E, initial=0.0))
        hconst = np.zeros(n_out)
        for j in range(n_out):
            if new_a[j] > 0:
                continue
            if (k, j) in const and not WN[j].any():
                hconst[j] = max(bN[j], 0.0)    # zero incoming weights: h_j = relu(b_j) exactly
            elif (k, j) not in dead:
                E[j] = HN[k + 1][j]            # no counterpart: the whole activation
        pos, a, D = np.maximum(tgt, 0), new_a, E
    raise AssertionError("unreachable")


# Seconds per parameter of an exact network's normal form (Fraction arithmetic; measured
# 1.1e-5 to 2.5e-5: a 10-700-700-1 network took about 10 s, under a 1 s limit).  Compared
# with the whole time left: half of it turned a 1.1 s "equal (exact)" of a 3-120-120-1
# network into "unknown"
EXACT_CANONICAL_SECONDS = 2e-5


def _normal_forms_fit(f: Network, g: Network, timeout: float | None, t0: float) -> bool:
    """Whether the normal forms of ``f`` and ``g`` fit in the time left: those of
    exact networks are built in Fractions, at about EXACT_CANONICAL_SECONDS per parameter;
    float ones always fit (they cost little beside the forward passes already made).

    Example:
        >>> net = Network([[[1.0]], [[1.0]]], [[0.0], [0.0]])
        >>> _normal_forms_fit(net.exact(), net, 1.0, time.monotonic()), _normal_forms_fit(net, net, None, 0.0)
        (True, True)
    """
    if timeout is None:
        return True
    cost = EXACT_CANONICAL_SECONDS * sum(n.n_params for n in (f, g) if n.is_exact)
    return cost == 0 or cost <= timeout - (time.monotonic() - t0)


def _underflow_slack(nets: tuple[Network, ...], box: Box) -> float:
    """What float64 underflow can hide in a bound computed from ``nets`` on ``box``: the
    relative rounding analyses do not cover a product that underflows, which loses up to
    2^-1074 absolutely; later layers amplify that by at most the product of their largest
    row sums (and the box's reach).  Four such losses per parameter and neuron.

    Example:
        >>> net = Network([[[1e-200]], [[1e-200]]], [[0.0], [0.0]])
        >>> 0 < _underflow_slack((net,), Box([0.0], [1.0])) < 1e-320
        True
    """
    ops = 0
    amp = max(1.0, float(np.max(np.abs(box.lo), initial=0.0)), float(np.max(np.abs(box.hi), initial=0.0)))
    with np.errstate(over="ignore"):
        for net in nets:
            nf = net.float()
            ops += nf.n_params + sum(nf.widths) + nf.output_dim
            for W in nf.weights:
                amp *= max(1.0, float(np.max(np.abs(W).sum(axis=1), initial=0.0)))
        return 4.0 * ops * float(np.finfo(np.float64).smallest_subnormal) * amp


def _canonical_path_bound(f: Network, cf: Network, rf: CanonicalReport, g: Network, cg: Network,
                          rg: CanonicalReport, box: Box) -> float | None:
    """A sound bound of ``sup |f - g|`` on ``box`` through the normal forms:
    ``|f - cf| + |cf - cg| + |cg - g|``.  The outer terms count what normalising and
    merging changed (float networks: :func:`_canonical_error`; exact ones: their normal
    form is the same function, only its float copy rounds, :func:`_float_error`)."""
    if not f.is_exact and not g.is_exact and f == g:
        return 0.0
    mid = _perturbation_bound(cf, cg, box)
    if mid is None:
        return None
    ef = _float_error(cf, box) if f.is_exact else _canonical_error(f, cf, rf, box)
    eg = _float_error(cg, box) if g.is_exact else _canonical_error(g, cg, rg, box)
    if ef is None or eg is None:
        return None
    # the normal forms push each row's scale forward: 1e-200 relu(1e-200 x) became a zero
    # output weight, and two different networks were "identical networks", bound 0
    return float((ef + mid + eg) * (1 + ROUNDOFF)) + _underflow_slack((f, g), box)


# the fewest sampled points a time limit cuts a sample down to, and the share of the
# limit the sampled forward passes may take
MIN_POINTS, SAMPLE_SHARE = 200, 0.25


def points_in_time(nets: tuple[Network, ...], n: int, seconds: float | None) -> int:
    """How many of ``n`` points the forward passes of ``nets`` can take in ``SAMPLE_SHARE``
    of ``seconds`` (None: all), estimated from the weights' sizes and
    :func:`~relulab.limits.dense_flop_rate` (a forward pass runs at about a quarter of a
    matrix product's rate); at least ``MIN_POINTS``.  Sampling 10,000 points through
    12,000-neuron networks took seconds past a 0.5 s limit.

    Example:
        >>> f = Network([[[1.0]], [[1.0]]], [[0.0], [0.0]])
        >>> points_in_time((f,), 5000, None), points_in_time((f,), 5000, 10.0)
        (5000, 5000)
    """
    from ..limits import rows_in_time

    return rows_in_time([W for net in nets for W in net.weights], n, seconds, SAMPLE_SHARE, MIN_POINTS)


# exact networks holding numbers float64 does not: at most this many sampled points are
# also evaluated exactly, in batches of EXACT_BATCH, or one at a time within
# EXACT_SAMPLE_SHARE of a time limit (at least one: 8 exact passes of a 5-120-120-120-1
# network took 3.7 s under a 1 s limit)
EXACT_SAMPLE_POINTS, EXACT_BATCH, EXACT_SAMPLE_SHARE = 64, 8, 0.1


def _exact_sample_witness(f: Network, g: Network, X: np.ndarray, dom: Box | Polytope, tol: float,
                          seconds: float | None) -> tuple | None:
    """A re-checked witness (see :func:`_recheck`) among the first sampled points, found by
    exact passes: the float copies of an exact network can be another function (``2^60
    relu((1 + 2^-60) x) - 2^60 relu(x)`` is ``relu(x)``, its copy 0), so their gaps say
    nothing.  None when no exact gap exceeds ``tol`` within the points and time given.

    Example:
        >>> from fractions import Fraction as F
        >>> e = F(1, 2**60)
        >>> relu_x = Network([[[1 + e], [F(1)]], [[F(2**60), -F(2**60)]]], [[0, 0], [0]], exact=True)
        >>> zero = Network([[[1.0]], [[0.0]]], [[0.0], [0.0]])
        >>> _exact_sample_witness(relu_x, zero, np.array([[0.5]]), Box([0], [1]), 1e-9, None)[3]
        0.5
    """
    fe, ge = f.exact(), g.exact()     # once: a float network converts on each call
    stop = None if seconds is None else time.monotonic() + seconds
    rows = X[:EXACT_SAMPLE_POINTS]
    step = EXACT_BATCH if stop is None else 1
    used = 0
    while used < len(rows):
        if stop is not None and used >= 1 and time.monotonic() > stop:
            return None
        batch = rows[used:used + step]
        # (an exact network reads a float row as its binary value)
        gaps = [max(abs(a - b) for a, b in zip(fx, gx, strict=True)) for fx, gx in zip(fe(batch), ge(batch), strict=True)]
        i = int(np.argmax([float(v) for v in gaps]))
        if gaps[i] > tol:
            chk = _recheck(f, g, batch[i], dom)
            if chk is not None and chk[3] > tol:
                return chk
        used += len(batch)
    return None


def _domain_points(domain: Box | Polytope, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = domain.sample(n, rng)
    if isinstance(domain, Box) and domain.dim <= 10:
        X = np.concatenate([X, domain.vertices(), domain.center[None]])
    return X


# --------------------------------------------------------------------- main entry
def equivalent(
    f: Network,
    g: Network,
    domain: Box | Polytope | tuple | None = None,
    timeout: float | None = None,
    *,
    tol: float | None = None,
    fast: bool = True,
    n_samples: int = 2000,
    seed: int = 0,
) -> EquivalenceResult:
    """Decide whether ``f`` and ``g`` compute the same function on ``domain``.

    Args:
        f, g: networks with the same input and output sizes (any architectures).
        domain: a Box, a bounded Polytope or ``(lo, hi)``.  ``None`` means all of R^d
            and is decided algebraically; it needs networks with at most one hidden layer.
        timeout: seconds for the verifier in all (None: no limit); on timeout the answer
            is ``unknown`` unless a witness was found.
        tol: ``equal`` means ``max |f - g| <= tol`` on the domain (default
            ``1e-6 * max(1, largest |output| seen on samples)``); for ``domain=None`` it
            is the relative tolerance of the algebraic comparison (float networks).
        fast: try normal forms and a sampling attack before the verifier.
        n_samples: points of the sampling attack (under a ``timeout``, as many as a
            quarter of it allows, at least 200).

    Example:
        >>> f = Network([[[1.0], [-1.0]], [[1.0, -1.0]]], [[0.0, 0.0], [0.0]])      # x
        >>> g = Network([[[1.0]], [[1.0]]], [[0.0], [0.0]])                          # relu(x)
        >>> r = equivalent(f, g, Box([-1], [1])); r.status, r.gap > 0
        ('different', True)
        >>> equivalent(f, g, Box([0], [1])).status
        'equal'
    """
    t0 = time.monotonic()
    _check_shapes(f, g)
    _check_tol(tol, "equivalent: tol")
    if timeout is not None and not is_positive_seconds(timeout):
        raise RelulabError(f"equivalent: timeout must be a positive number of seconds or None, got {timeout!r}")
    if not is_int_at_least(n_samples, 0):
        raise RelulabError(f"equivalent: n_samples must be an integer >= 0, got {n_samples!r}")
    if not is_int_at_least(seed, 0):
        raise RelulabError(f"equivalent: seed must be an integer >= 0, got {seed!r}")
    if tol is not None and (isinstance(tol, bool) or not isinstance(tol, (int, float, np.integer, np.floating))
                            or not (tol >= 0)):
        raise RelulabError(f"equivalent: tol must be a number >= 0 or None, got {tol!r}")
    if domain is None or (isinstance(domain, Polytope) and domain.n_constraints == 0):
        if max(f.n_hidden_layers, g.n_hidden_layers) > 1:
            raise DomainError(
                "equivalent: on all of R^d only networks with at most one hidden layer are "
                "decided (algebraically); give a bounded domain (Box or Polytope)"
            )
        return equivalent_one_hidden_layer(f, g, rtol=tol)
    dom = as_domain(domain, f.input_dim)
    # under a timeout, boundedness gets half of it (a polytope without single-coordinate
    # rows needs its bounding box's 2 d LPs: 7 s at 100 inputs and 400 rows); undecided,
    # only the sampling attack runs
    bounded = True
    if isinstance(dom, Polytope):
        bounded = dom.bounded_by(None if timeout is None else time.perf_counter() + timeout / 2)
        if bounded is False:
            raise DomainError("equivalent: the polytope is unbounded; give a bounded domain")
    both_exact = f.is_exact and g.is_exact

    X = _domain_points(dom, points_in_time((f, g), n_samples, timeout), seed)
    out_scale = _output_scale(f, g, X)
    tol_v = EQUIV_TOL * out_scale if tol is None else float(tol)

    def done(status: str, method: str, **kw: Any) -> EquivalenceResult:
        return EquivalenceResult(status=status, method=method, tol=tol_v,
                                 time=time.monotonic() - t0, **kw)

    if not np.isfinite(tol_v):
        # outputs that overflow float64 made the default tolerance infinite, and every
        # pair "equal within the tolerance inf" (1e308 relu(x) against half of it)
        if both_exact and canonical(f, dom)[0] == canonical(g, dom)[0]:
            return done("equal", "canonical", upper_bound=0.0, exact=True,
                        message="identical normal forms (exact)")
        return done("unknown", "sampling",
                    message="the outputs overflow float64 on the domain, so a tolerance relative to "
                            "them is infinite and decides nothing: rescale the last layer or give tol")

    if fast:
        # Sampling attack first: any point with a gap above tol is a witness, and no proof
        # below may contradict one (a neuron "proved" dead by bounds whose rounding hid
        # +2.8e-5 made networks 27.8 apart "equal (exact)")
        with np.errstate(over="ignore", invalid="ignore"):
            gaps = np.max(np.abs(f.float()(X) - g.float()(X)), axis=1) if len(X) else np.zeros(0)
        # a NaN gap (inf - inf) must not hide the finite ones: argmax picked it first
        gaps = np.where(np.isnan(gaps), -np.inf, gaps)
        i = int(np.argmax(gaps)) if gaps.size else 0
        if gaps.size and gaps[i] > tol_v:
            chk = _recheck(f, g, X[i], dom)
            if chk is not None and chk[3] > tol_v:
                x, fx, gx, gap, ex = chk
                return done("different", "sampling", witness=x, f_value=fx, g_value=gx,
                            gap=gap, exact=ex, message=f"they differ by {gap:.6g} at a sampled input")
        if any(n.is_exact and n.entry_not_a_float() is not None for n in (f, g)):
            chk = _exact_sample_witness(f, g, X, dom, tol_v,
                                        None if timeout is None else EXACT_SAMPLE_SHARE * timeout)
            if chk is not None:
                x, fx, gx, gap, ex = chk
                return done("different", "sampling", witness=x, f_value=fx, g_value=gx, gap=gap,
                            exact=ex, message=f"they differ by {gap:.6g} at a sampled input (exact passes)")
        if bounded is None:
            return done("unknown", "sampling", message=f"no difference on {len(X)} sampled points; " + _UNBOXED)
        # on a polytope the neuron status solves two LPs per first-layer neuron: they get
        # a share of the time limit (the rest stay undecided; the verifier decides later)
        def status(net: Network) -> Any:
            if timeout is None or not isinstance(dom, Polytope):
                return None
            left = max(timeout - (time.monotonic() - t0), 0.0)
            return neuron_status(net, dom, time_limit=max(left / 4, 1e-3))

        if _normal_forms_fit(f, g, timeout, t0):
            cf, rf = canonical(f, dom, status=status(f))
            cg, rg = canonical(g, dom, status=status(g))
            if both_exact and cf == cg:
                return done("equal", "canonical", upper_bound=0.0, exact=True,
                            message="identical normal forms (exact)")
            # (a polytope's bounding box within the time limit, else a looser sound box)
            box = dom if isinstance(dom, Box) else dom.enclosing_box(
                None if timeout is None else time.perf_counter() + max(timeout - (time.monotonic() - t0), 0.0) / 4)
            pb = _canonical_path_bound(f, cf, rf, g, cg, rg, box)
        else:
            pb = None
        if pb is not None and pb <= tol_v:
            return done("equal", "canonical", upper_bound=pb,
                        message="identical networks" if pb == 0.0
                        else f"equal within the tolerance {tol_v:.3g}: normal forms of one shape, "
                             f"|f - g| <= {pb:.3g} on the domain (not identical)")

    if bounded is None:   # (fast=False: no sampling attack either)
        return done("unknown", "verifier", message="nothing was tried: " + _UNBOXED)
    if not verifier_available():
        return done("unknown", "verifier", message="the exact verifier (relulab.verify) is not available")
    return _by_verifier(f, g, dom, tol_v, timeout, t0, done, out_scale)


_UNBOXED = ("the polytope's bounding box (2 LPs per input) was not found in half of the time "
            "limit, and the proofs need it: give a longer timeout")


def _by_verifier(f, g, dom, tol_v, timeout, t0, done, out_scale: float = 1.0) -> EquivalenceResult:
    """``max |f - g|`` by 2 m MILP maximisations of ``+-(f_j - g_j)``.  HiGHS solves the
    MILP in floating point with feasibility tolerances: its "proved" bound can sit below
    the true maximum by about 1e-8 of the problem's scale.  The reported ``upper_bound``
    is therefore the solver's bound plus ``PROOF_MARGIN * max(1, |bound|, output scale)``,
    and ``equal`` needs that widened bound within ``tol``."""
    from ..verify import maximize

    D = f.float() - g.float()
    m = D.output_dim
    if D.n_hidden_layers == 0:
        return _affine_difference(f, g, D, dom, tol_v, done)
    if isinstance(dom, Box) and (timeout is None or time.monotonic() - t0 < timeout / 2):
        # an exact network is bounded through its float copy plus that copy's rounding
        # (_float_error): the difference of the exact networks themselves took seconds to
        # build and bound at width 700, past a 1 s limit
        sb = _sound_difference_bound(D, dom) + _float_error(f, dom) + _float_error(g, dom)
        if sb <= tol_v:
            return done("equal", "bounds", upper_bound=sb,
                        message=f"max |f - g| <= {sb:.3g} on the domain (linear bounds, moved outward "
                                "by their rounding)")
    ubs = []
    statuses = []
    best = None
    n_calls = 2 * m
    for call in range(n_calls):
        j, sign = divmod(call, 2)
        c = np.zeros(m)
        c[j] = 1.0 if sign == 0 else -1.0
        left = None
        if timeout is not None:
            left = timeout - (time.monotonic() - t0)
            if left <= 0:
                break
            left = left / (n_calls - call)
        r = maximize(D, dom, c, time_limit=left)
        statuses.append(r.status)
        ubs.append(float(r.upper_bound))
        if r.value > tol_v:
            chk = _recheck(f, g, r.x, dom)
            if chk is not None and chk[3] > tol_v and (best is None or chk[3] > best[3]):
                best = chk
                break  # one re-checked witness settles it
    if best is not None:
        x, fx, gx, gap, ex = best
        return done("different", "verifier", witness=x, f_value=fx, g_value=gx, gap=gap, exact=ex,
                    message=f"the verifier found an input where they differ by {gap:.6g}")
    ub = None
    if len(ubs) == n_calls:
        raw = max(ubs)
        ub = raw + PROOF_MARGIN * max(1.0, abs(raw), out_scale)
    if ub is not None and ub <= tol_v:
        return done("equal", "verifier", upper_bound=ub,
                    message=f"max |f - g| <= {ub:.3g} on the domain (MILP bound plus its tolerance margin)")
    why = "time limit" if len(ubs) < n_calls or "time_limit" in statuses else "bound above tol"
    return done("unknown", "verifier", upper_bound=ub,
                message=f"undecided ({why})", details={"statuses": statuses})


def _sound_difference_bound(D: Network, box: Box) -> float:
    """A sound upper bound of ``max_j sup |D_j|`` on ``box``: CROWN's lower bounds of
    ``+D_j`` and ``-D_j``, moved outward by their rounding.  The MILP's bound carries a
    margin of ``PROOF_MARGIN`` of the output scale, so it could never prove a difference
    of 1e-15 on outputs of 5 below a tolerance of 1e-8 (a constant network and its
    extracted copy read ``unknown``); this bound needs no margin.

    Example:
        >>> from relulab import Network, Box
        >>> D = Network([[[1.0], [-1.0]], [[1e-15, 1e-15]]], [[0.0, 0.0], [0.0]])
        >>> 0 < _sound_difference_bound(D, Box([-1], [1])) < 1e-14
        True
    """
    from ..bounds import linear_bounds

    m = D.output_dim
    with np.errstate(over="ignore", invalid="ignore"):
        low = linear_bounds(D, box, np.vstack([np.eye(m), -np.eye(m)]))
        bound = float(np.max(-low))
        if bound != bound:
            return float("inf")   # NaN (overflow): no bound
    # CROWN's rounding analysis is relative (1e-200 relu(1e-200 x) read max |f - 0| <= -0.0,
    # "equal" at tol 0): add what underflow can hide
    return max(bound, 0.0) + _underflow_slack((D,), box)


def _affine_difference(f, g, D, dom, tol_v, done) -> EquivalenceResult:
    """Both networks are affine: maximise each ``+-(f_j - g_j)`` exactly (closed form on a
    Box, one LP per row on a Polytope).  With an exact network the difference is taken in
    Fractions: float copies of ``(10**20 + 1) x`` and ``10**20 x`` are the same map."""
    from ..lp import solve

    A = np.asarray(D.weights[0], dtype=float)
    c = np.asarray(D.biases[0], dtype=float)
    if D.skip is not None:
        A, c = A + D.skip[0], c + D.skip[1]
    Ax = cx = None
    if f.is_exact or g.is_exact:
        E = f.exact() - g.exact()
        Ax, cx = E.weights[0], E.biases[0]
        if E.skip is not None:
            Ax, cx = Ax + E.skip[0], cx + E.skip[1]
        if not any(v != 0 for v in Ax.reshape(-1)) and not any(v != 0 for v in cx):
            return done("equal", "verifier", upper_bound=0.0, exact=True, message="identical affine maps")
        # what the float rows miss of the exact ones, at the domain's farthest point (the
        # differences taken in Fractions: Fraction - float would round them to 0)
        reach = np.maximum(np.abs(dom.bounding_box().lo), np.abs(dom.bounding_box().hi))
        dA = np.array([[abs(float(a - Fraction(float(b)))) for a, b in zip(ra, rb, strict=True)]
                       for ra, rb in zip(Ax, A, strict=True)]).reshape(A.shape)
        dc = np.array([abs(float(a - Fraction(float(b)))) for a, b in zip(cx, c, strict=True)])
        lost = (dA @ reach + dc) * (1 + ROUNDOFF) + TINY
    elif not A.any() and not c.any():
        return done("equal", "verifier", upper_bound=0.0, message="identical affine maps")
    best_x, best_v, ub = None, -np.inf, -np.inf
    for j, s in [(j, s) for j in range(A.shape[0]) for s in (1.0, -1.0)]:
        row, off = A[j] * s, c[j] * s
        if isinstance(dom, Box) and Ax is not None:
            x = np.where(Ax[j] * int(s) > 0, dom.hi, dom.lo)   # the exact row's signs
            ve = sum((a * int(s) * Fraction(float(xi)) for a, xi in zip(Ax[j], x, strict=True)),
                     cx[j] * int(s))
            v = float(ve)
            bound = v if Fraction(v) >= ve else float(np.nextafter(v, np.inf))
        elif isinstance(dom, Box):
            x = np.where(row > 0, dom.hi, dom.lo)
            v = float(row @ x + off)
            bound = v * (1 + ROUNDOFF) + TINY
        else:
            r = solve(-row, A_ub=dom.A, b_ub=dom.b)
            if not r.ok:
                return done("unknown", "verifier", message=f"LP over the polytope ended {r.status}")
            x = r.x
            v = float(row @ x + off)
            bound = v + scaled_tol(v) + (0.0 if Ax is None else float(lost[j]))
            if Ax is not None:   # the value at the LP's point, exactly
                v = float(sum((a * int(s) * Fraction(float(xi)) for a, xi in zip(Ax[j], x, strict=True)),
                              cx[j] * int(s)))
        ub = max(ub, bound)
        if v > best_v:
            best_x, best_v = x, v
    if best_v > tol_v:
        chk = _recheck(f, g, best_x, dom)
        if chk is not None and chk[3] > tol_v:
            x, fx, gx, gap, ex = chk
            return done("different", "verifier", witness=x, f_value=fx, g_value=gx, gap=gap, exact=ex,
                        message=f"affine networks differing by {gap:.6g}")
    if ub <= tol_v:
        return done("equal", "verifier", upper_bound=ub, message=f"affine difference at most {ub:.3g}")
    return done("unknown", "verifier", upper_bound=ub, message="undecided (bound above tol)")


# ------------------------------------------------------------- one hidden layer
def _one_layer_terms(net: Network, exact: bool, sign: int) -> tuple[list, np.ndarray, np.ndarray, tuple]:
    """The network as ``sum_h A_h relu(u_h . x + beta_h) + M x + c`` with each hyperplane
    normalised so that its pivot entry (first of largest absolute value) is 1.

    Also returns ``(Mabs, cabs)``: the sums of the absolute values of everything added
    into ``M`` and ``c`` (float networks: their rounding is at most ``gamma_n`` times
    these; zeros for exact networks)."""
    if net.n_hidden_layers > 1:
        raise NetworkError(
            f"the algebraic decision needs at most one hidden layer; the network has {net.n_hidden_layers}"
        )
    net = net.exact() if exact else net.float()
    d, m = net.input_dim, net.output_dim
    M = as_kind(np.zeros((m, d)), exact)
    c = as_kind(net.biases[-1], exact)
    Mabs, cabs = np.zeros((m, d)), np.zeros(m)
    if not exact:
        cabs = cabs + np.abs(c)
    if net.skip is not None:
        M = M + net.skip[0]
        c = c + net.skip[1]
        if not exact:
            Mabs, cabs = Mabs + np.abs(net.skip[0]), cabs + np.abs(net.skip[1])
    terms: list[tuple[np.ndarray, Any, np.ndarray]] = []
    if net.n_hidden_layers == 0:
        M = M + net.weights[0]
        if not exact:
            Mabs = Mabs + np.abs(net.weights[0])
        return terms, sign * M, sign * c, (Mabs, cabs)
    W, b, V = net.weights[0], net.biases[0], net.weights[1]
    for i in range(W.shape[0]):
        w, bi, v = W[i], b[i], V[:, i]
        if not np.asarray(v != 0, dtype=bool).any():
            continue
        absw = np.array([abs(x) for x in w], dtype=object if exact else float)
        top = max(absw)
        if top == 0:
            c = c + v * (bi if bi > 0 else 0 * bi)
            if not exact:
                cabs = cabs + np.abs(v) * max(bi, 0.0)
            continue
        # First index of the largest |w| (with a relative tie tolerance for floats, so
        # that rescaled copies pick the same pivot).
        p = next(j for j in range(len(w)) if (absw[j] == top if exact else absw[j] >= top * (1 - MATCH_RTOL)))
        piv = w[p]
        a = abs(piv)
        u = w / piv
        beta = bi / piv
        coef = v * a
        if piv < 0:
            # relu(-z) = relu(z) - z: the twin identity moves the orientation flip into
            # the affine part.
            M = M - np.outer(coef, u)
            c = c - coef * beta
            if not exact:
                Mabs = Mabs + np.abs(np.outer(coef, u))
                cabs = cabs + np.abs(coef * beta)
        terms.append((u, beta, sign * coef))
    return terms, sign * M, sign * c, (Mabs, cabs)


def _group_hyperplanes(terms: list, exact: bool, key_tol: float, scale: float = 1.0) -> list[tuple]:
    """Sum the coefficients of equal hyperplanes.

    Exact networks: identical ``(u, beta)``.  Float networks: a term ``(u, beta, a)`` joins
    the group of a representative ``(u0, beta0)`` when ``|u - u0| <= key_tol`` (entrywise)
    and moving it there changes the function by little: ``|a| |u - u0|_1 <= key_tol *
    scale`` and ``|a| |beta - beta0| <= key_tol * scale``.  (A test relative to ``|beta|``
    alone would group far-apart parallel hyperplanes: ``relu(x + 1e6) - relu(x + 1e6 +
    1e-4)`` is ``-1e-4``, not 0.)  Each float group is ``(u0, beta0, A, dev1, dev0)``
    with ``A`` the summed coefficients and ``dev1 = sum |a| |u - u0|_1``, ``dev0 = sum |a|
    |beta - beta0|`` (per output) what the grouping moved: the grouped function differs
    from the sum of the terms by at most ``dev0 + dev1 |x|_inf``."""
    groups: list[list] = []
    if exact:
        idx: dict[tuple, int] = {}
        for u, beta, coef in terms:
            key = (*u, beta)
            if key in idx:
                groups[idx[key]][2] = groups[idx[key]][2] + coef
            else:
                idx[key] = len(groups)
                groups.append([u, beta, coef])
        return [tuple(gr) for gr in groups]
    budget = key_tol * scale
    for u, beta, coef in terms:
        u = np.asarray(u, dtype=float)
        coef = np.asarray(coef, dtype=float)
        ca = np.abs(coef)
        top = float(np.max(ca))
        for gr in groups:
            du = float(np.sum(np.abs(gr[0] - u)))
            db = abs(gr[1] - float(beta))
            if np.max(np.abs(gr[0] - u)) <= key_tol and top * du <= budget and top * db <= budget:
                gr[2] = gr[2] + coef
                gr[3] = gr[3] + ca * du
                gr[4] = gr[4] + ca * db
                break
        else:
            groups.append([u, float(beta), coef, np.zeros_like(ca), np.zeros_like(ca)])
    return [tuple(gr) for gr in groups]


def _float_difference_bound(terms: list, groups: list, dM: np.ndarray, dc: np.ndarray,
                            mags: tuple, d: int) -> tuple[float, float]:
    """``(C0, C1)`` with ``|f(x) - g(x)| <= C0 + C1 |x|_inf`` for every ``x`` in R^d, from
    the grouped float terms of ``f - g`` (a sound bound on the networks' exact values).

    Each group contributes ``|A| relu(u0 . x + beta0) <= |A| (|u0|_1 |x|_inf +
    max(beta0, 0))`` plus what grouping moved (``dev1``, ``dev0``); the affine parts
    ``|dM|_1`` and ``|dc|``.  Rounding: normalising a neuron (``u = w / piv``, ``beta``,
    ``a = v |piv|``) and summing coefficients and affine parts err by at most ``gamma_n``
    times the magnitudes summed (``mags``: absolute sums of the affine parts)."""
    Mabs, cabs = mags
    g = _gamma(len(terms) + d)
    C1 = np.sum(np.abs(dM), axis=1) + g * np.sum(Mabs, axis=1)
    C0 = np.abs(dc) + g * cabs
    for u, beta, coef in terms:
        ca = np.abs(coef)
        C1 = C1 + g * ca * float(np.sum(np.abs(u)))
        C0 = C0 + g * ca * abs(float(beta))
    for u0, beta0, A, dev1, dev0 in groups:
        C1 = C1 + np.abs(A) * float(np.sum(np.abs(u0))) + dev1
        C0 = C0 + np.abs(A) * max(float(beta0), 0.0) + dev0
    return float(np.max(C0, initial=0.0)) * (1 + g), float(np.max(C1, initial=0.0)) * (1 + g)


def _check_tol(tol: float | None, name: str) -> None:
    """Reject a negative or non-finite tolerance (it would turn equal copies into
    'different' or every answer into 'unknown')."""
    if tol is None:
        return
    try:
        t = float(tol)
    except (TypeError, ValueError):
        raise EquivalenceError(f"{name} must be a finite number >= 0, got {tol!r}") from None
    if not np.isfinite(t) or t < 0:
        raise EquivalenceError(f"{name} must be a finite number >= 0, got {tol!r}")


def equivalent_one_hidden_layer(
    f: Network, g: Network, *, rtol: float | None = None, seed: int = 0
) -> EquivalenceResult:
    """Decide ``f == g`` on all of R^d for networks with at most one hidden layer, purely
    algebraically (see the module docstring).  Exact networks are compared exactly.
    Float networks: ``equal`` means ``|f(x) - g(x)| <= tol (1 + |x|_inf)`` for every
    ``x`` in R^d, with ``tol = rtol * scale`` (``rtol`` default 1e-9, ``scale`` the
    largest of 1, each network's net coefficient per hyperplane and its affine part),
    proved by a sound bound
    (``details``: ``bound_const``, ``bound_slope``) that counts what grouping near-equal
    hyperplanes and rounding moved.  ``different`` comes with a witness re-checked by
    exact forward passes (on the exact binary values of the weights) where the gap
    exceeds ``tol (1 + |x|_inf)`` (any nonzero gap for exact networks).

    Example:
        >>> f = Network([[[1.0, 0.0]], [[1.0]]], [[0.0], [0.0]])           # relu(x1)
        >>> g = Network([[[-2.0, 0.0]], [[0.5]]], [[0.0], [0.0]],
        ...             skip=([[1.0, 0.0]], [0.0]))                         # relu(-x1)+x1
        >>> equivalent_one_hidden_layer(f, g).status
        'equal'
    """
    t0 = time.monotonic()
    _check_shapes(f, g)
    _check_tol(rtol, "equivalent_one_hidden_layer: rtol")
    exact = f.is_exact and g.is_exact
    rt = or_default(rtol, MATCH_RTOL)
    with np.errstate(over="ignore", invalid="ignore"):  # inf / NaN terms decide nothing (below)
        tf, Mf, cf, magf = _one_layer_terms(f, exact, +1)
        tg, Mg, cg, magg = _one_layer_terms(g, exact, -1)
    dM, dc = Mf + Mg, cf + cg
    details: dict[str, Any] = {}
    if exact:
        groups = _group_hyperplanes(tf + tg, exact, rt)
        tol_out = 0.0
        kink = [gr for gr in groups if any(v != 0 for v in gr[2])]
        affine_differs = any(v != 0 for v in dM.reshape(-1)) or any(v != 0 for v in dc)
        is_equal = not kink and not affine_differs
    else:
        mags = [1.0, float(np.max(np.abs(Mf))), float(np.max(np.abs(cf)))]
        mags += [float(np.max(np.abs(t[2]))) for t in tf + tg]
        raw = max(mags)
        groups = _group_hyperplanes(tf + tg, exact, rt, raw)
        # 'equal' is relative to the size of the functions themselves: each network's
        # net coefficient per hyperplane and its affine part, not single neurons' terms
        # (terms of 1e12 that cancel made the tolerance 1e3, and relu(x) 'equal' to 0)
        scale = max([1.0, float(np.max(np.abs(Mf))), float(np.max(np.abs(cf))),
                     float(np.max(np.abs(Mg))), float(np.max(np.abs(cg)))]
                    + [float(np.max(np.abs(gr[2]))) for t in (tf, tg) for gr in _group_hyperplanes(t, exact, rt, raw)])
        tol_out = rt * scale
        kink = [gr for gr in groups if np.max(np.abs(gr[2])) > tol_out]
        # weights near 1e308 overflow the bound to inf or NaN: then not 'equal' (NaN <= tol
        # is False) and no warning leaks
        with np.errstate(over="ignore", invalid="ignore"):
            C0, C1 = _float_difference_bound(tf + tg, groups, dM, dc,
                                             (magf[0] + magg[0], magf[1] + magg[1]), f.input_dim)
        details.update(bound_const=C0, bound_slope=C1)
        # The bound, not the grouping, decides: it counts what grouping and rounding moved.
        is_equal = C0 <= tol_out and C1 <= tol_out
    details.update(hyperplanes=len(groups), differing_hyperplanes=len(kink))
    if is_equal:
        msg = f"same {len(groups)} hyperplanes with equal coefficients and equal affine parts"
        if not exact:
            msg += (f"; |f - g| <= {details['bound_const']:.3g} + {details['bound_slope']:.3g} |x|_inf "
                    f"(equal means within {tol_out:.3g} (1 + |x|_inf))")
        return EquivalenceResult(
            "equal", "algebraic", tol_out, exact=exact, time=time.monotonic() - t0, details=details,
            message=msg,
        )
    cands = _kink_witnesses(kink, groups, exact, f.input_dim, seed) if kink else []
    cands += _affine_witnesses(f.input_dim, exact)
    if not exact:
        cands += _hyperplane_points(tf + tg)
    fe, ge = f.exact(), g.exact()
    best, best_excess = None, None
    for x in cands:
        chk = _recheck(fe, ge, as_kind(x, True), None)
        if chk is None:
            continue
        # A float 'different' must beat the tolerance of 'equal' at that point.
        excess = chk[3] - tol_out * (1.0 + float(max((abs(float(v)) for v in chk[0]), default=0.0)))
        if best is None or excess > best_excess:
            best, best_excess = chk, excess
    if best is None or best[3] == 0 or best_excess <= 0:
        return EquivalenceResult(
            "unknown", "algebraic", tol_out, time=time.monotonic() - t0, details=details,
            message="coefficients differ (or near-equal hyperplanes were grouped) but no "
                    "witness beyond the tolerance was confirmed",
        )
    x, fx, gx, gap, _ = best
    if not exact:
        x = np.asarray([float(v) for v in x])
        fx = np.asarray([float(v) for v in fx])
        gx = np.asarray([float(v) for v in gx])
    why = (f"{len(kink)} hyperplane(s) with different total coefficients" if kink
           else "affine parts (or near-equal hyperplanes) differ")
    return EquivalenceResult(
        "different", "algebraic", tol_out, witness=x, f_value=fx, g_value=gx, gap=gap, exact=True,
        time=time.monotonic() - t0, details=details, message=why,
    )


def _hyperplane_points(terms: list, limit: int = 50) -> list[np.ndarray]:
    """The point of each hyperplane closest to the origin (up to ``limit`` of them): where
    parallel hyperplanes that were grouped show their difference at small ``|x|``."""
    pts = []
    for u, beta, _ in terms[:limit]:
        u = np.asarray(u, dtype=float)
        pts.append(-(float(beta) / float(u @ u)) * u)
    return pts


def _affine_witnesses(d: int, exact: bool) -> list[np.ndarray]:
    pts = [np.zeros(d)]
    for i in range(d):
        e = np.zeros(d)
        e[i] = 1.0
        pts.append(e)
    return pts


def _kink_witnesses(kink: list, groups: list, exact: bool, d: int, seed: int) -> list[np.ndarray]:
    """Three points on a line crossing a hyperplane whose total coefficient is nonzero,
    closer to it than to any other hyperplane: f - g has a kink there, so it cannot vanish
    at all three (a CPWL function zero at -eps, 0, eps with one kink in between would have
    no kink)."""
    rng = np.random.default_rng(seed)
    if exact:
        h = kink[0]
    else:
        h = max(kink, key=lambda gr: float(np.max(np.abs(gr[2]))))
    u, beta = h[0], h[1]
    others = [(gr[0], gr[1]) for gr in groups if gr is not h]
    for _ in range(50):
        if exact:
            p = np.array([Fraction(int(v), 97) for v in rng.integers(-300, 300, size=d)], dtype=object)
        else:
            p = rng.normal(size=d)
        uu = u @ u
        x0 = p - ((u @ p + beta) / uu) * u
        ts = []
        ok = True
        for uo, bo in others:
            val = uo @ x0 + bo
            if val == 0 or (not exact and abs(val) < ROUNDOFF):
                ok = False
                break
            slope = uo @ u
            if slope != 0:
                ts.append(abs(val / slope))
        if not ok:
            continue
        eps = min(ts) / 2 if ts else 1
        if exact:
            eps = min(Fraction(eps), Fraction(1))
        else:
            eps = min(float(eps), 1.0)
        return [x0 - eps * u, x0, x0 + eps * u]
    return [np.zeros(d)]


def one_hidden_layer_normal_form(net: Network, *, rtol: float | None = None) -> Network:
    """The complete normal form on R^d of a network with at most one hidden layer.

    One neuron per distinct hyperplane with a nonzero total coefficient, written as
    ``relu(u . x + beta)`` with pivot entry ``u_p = 1`` (orientations turned around by the
    twin identity ``relu(-z) = relu(z) - z``), sorted by ``(u, beta)``, with all affine
    terms in the skip.  Two exact networks compute the same function on R^d if and only if
    their normal forms are identical (``==``); float networks agree up to ``rtol``.

    Example:
        >>> f = Network([[[1.0], [-1.0]], [[1.0, -1.0]]], [[0.0, 0.0], [0.0]]).exact()  # x
        >>> nf = one_hidden_layer_normal_form(f); nf.n_hidden_layers, nf.weights[0].tolist()
        (0, [[Fraction(1, 1)]])
    """
    _check_tol(rtol, "one_hidden_layer_normal_form: rtol")
    rtol = or_default(rtol, MATCH_RTOL)
    exact = net.is_exact
    terms, M, c, _ = _one_layer_terms(net, exact, +1)
    if exact:
        groups = _group_hyperplanes(terms, exact, rtol)
        keep = [gr for gr in groups if any(v != 0 for v in gr[2])]
    else:
        scale = max([1.0] + [float(np.max(np.abs(t[2]))) for t in terms])
        # Grouping moves the function by at most rtol * scale per term (see
        # _group_hyperplanes): far-apart parallel hyperplanes stay apart.
        groups = _group_hyperplanes(terms, exact, rtol, scale)
        keep = [gr for gr in groups if float(np.max(np.abs(gr[2]))) > rtol * scale]
    if not keep:
        return Network([M], [c], exact=exact)
    keep.sort(key=lambda gr: (tuple(gr[0]), gr[1]))
    W = np.stack([np.asarray(gr[0], dtype=object if exact else float) for gr in keep])
    b = np.array([gr[1] for gr in keep], dtype=object if exact else float)
    V = np.stack([np.asarray(gr[2], dtype=object if exact else float) for gr in keep], axis=1)
    zero_s = as_kind(np.zeros(M.shape[0]), exact)
    return Network([W, V], [b, c], (M, zero_s), exact=exact)


def whole_space_box(*nets: Network) -> Box:
    """A box meeting every first-layer hyperplane of the given one-hidden-layer networks in
    its interior.  Two such networks are equal on R^d iff they are equal on this box (on
    the box, each hyperplane's total coefficient shows as a gradient jump, so equality
    there forces the algebraic criterion), which lets the verifier decide R^d.

    Example:
        >>> net = Network([[[1.0, 0.0]], [[1.0]]], [[-5.0], [0.0]])
        >>> whole_space_box(net).hi.tolist()
        [6.0, 6.0]
    """
    if not nets or not all(isinstance(n, Network) for n in nets):
        raise NetworkError("whole_space_box: give one or more relulab Networks")
    d = nets[0].input_dim
    R = 1.0
    for net in nets:
        if net.n_hidden_layers > 1:
            raise NetworkError("whole_space_box: networks must have at most one hidden layer")
        if net.n_hidden_layers == 0:
            continue
        nf = net.float()
        W, b = np.asarray(nf.weights[0], float), np.asarray(nf.biases[0], float)
        nn = np.sum(W * W, axis=1)
        ok = nn > 0
        if np.any(ok):
            P = -(b[ok] / nn[ok])[:, None] * W[ok]   # closest point of each hyperplane to 0
            R = max(R, float(np.max(np.abs(P))) + 1.0)
    return Box(-R * np.ones(d), R * np.ones(d))
