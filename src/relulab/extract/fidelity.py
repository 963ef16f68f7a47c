"""How close an extracted network is to the original: parameters and function.

Parameters are compared after removing the symmetries every ReLU network has: both
networks are put in the normal form of :func:`relulab.symmetry.canonical` (each neuron's
incoming row scaled to largest entry 1, the factor pushed forward; dead, constant and
zero-outgoing neurons removed, parallel ones merged), then the neurons of each layer are
matched (Hungarian assignment on row distances, the columns of the next layer permuted
alike).  The function is compared by :func:`relulab.symmetry.equivalent` on a box
(``equal`` / ``different`` with a re-checked witness / ``unknown``) and by the largest
output difference on random points.

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> from relulab.symmetry import random_symmetry
    >>> f = Network([[[1.0, 2.0], [-1.0, 0.5]], [[1.0, -1.0]]], [[0.1, 0.2], [0.0]])
    >>> r = fidelity(f, random_symmetry(f, 3))
    >>> r.aligned, r.max_abs_error < 1e-12, r.equivalence
    (True, True, 'equal')
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..domain import Box
from ..errors import is_int_at_least, is_positive_seconds
from ..network import Network
from ..results import Result
from ..tolerance import TINY
from .oracle import ExtractError

__all__ = ["Fidelity", "fidelity"]

# Share of the time limit spent proving reference neurons dead on the box (when the normal
# forms differ in architecture); the rest goes to the functional check.
DEAD_SHARE = 0.5


@dataclass(frozen=True)
class Fidelity(Result):
    """Parameter and functional agreement of a recovered network with the original.

    Attributes:
        aligned: both normal forms have the same architecture, so parameters compare.
        max_abs_error: largest absolute parameter difference after alignment.
        max_rel_error: the same divided by the largest absolute parameter of the original.
        bits_abs, bits_rel: ``-log2`` of the two errors (bits of precision).
        equivalence: ``equal`` / ``different`` / ``unknown`` (relulab.symmetry.equivalent).
        equivalence_method, witness, witness_gap: how it was decided; a re-checked witness.
        max_output_error: largest ``|f - g|`` on ``n_samples`` random points of the box
            (where a network holds weights float64 rounds: evaluated exactly, on at most
            500 of the points, as many as a quarter of the time left allows, at least 8;
            ``n_samples`` says how many).
        widths_reference, widths_recovered: hidden widths of the two normal forms.
        dead_on_domain: reference neurons ``(layer, index)``, 0-based, proved never active
            on the box (bounds or the exact verifier) and so left out of the reference
            before the comparison: no query on the box can show them (only computed when
            the normal forms differ in architecture).
        active_on_domain: reference neurons proved active everywhere on the box (linear
            there: no query on it shows their hyperplane; computed with
            ``dead_on_domain``).  They stay in the reference of the comparison.
        equivalence_tol: the tolerance of the verdict: ``equal`` means
            ``max |f - g| <= equivalence_tol`` on the box (0 when it was decided exactly,
            in rational arithmetic; else ``EQUIV_TOL`` times the output scale); a
            ``different`` means a re-checked gap above it.
        equivalence_exact: the verdict was reached in exact rational arithmetic; when
            False an ``equal`` holds up to ``equivalence_tol`` only.
        equivalence_bound: a proved upper bound of ``max |f - g|`` on the box, when the
            check produced one.
        complete (property, in the JSON): the functional verdict was reached (``equal`` or
            ``different``), not cut short by the timeout (``unknown``).  The sampled
            ``max_output_error`` is a sample whatever this says.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0, -1.0]], [[2.0]]], [[0.0], [1.0]])
        >>> f = fidelity(net, net, n_samples=100)
        >>> f.equivalence, f.complete, f.max_output_error, f.to_dict()["complete"]
        ('equal', True, 0.0, True)
    """

    aligned: bool
    max_abs_error: float | None
    max_rel_error: float | None
    bits_abs: float | None
    bits_rel: float | None
    equivalence: str
    equivalence_method: str
    witness: np.ndarray | None
    witness_gap: float | None
    max_output_error: float
    n_samples: int
    widths_reference: tuple[int, ...]
    widths_recovered: tuple[int, ...]
    domain: dict
    message: str
    dead_on_domain: tuple[tuple[int, int], ...] = ()
    active_on_domain: tuple[tuple[int, int], ...] = ()
    equivalence_tol: float | None = None
    equivalence_exact: bool = False
    equivalence_bound: float | None = None

    @property
    def complete(self) -> bool:
        return self.equivalence != "unknown"

    def to_dict(self) -> dict:
        return {**super().to_dict(), "complete": self.complete}


def _bits(e: float | None) -> float | None:
    if e is None:
        return None
    return math.inf if e == 0 else -math.log2(e)


def _align(F: Network, G: Network) -> tuple[float, float] | None:
    from scipy.optimize import linear_sum_assignment

    if F.widths != G.widths:
        return None
    FW = [np.asarray(W, float) for W in F.weights]
    Fb = [np.asarray(b, float) for b in F.biases]
    GW = [np.asarray(W, float).copy() for W in G.weights]
    Gb = [np.asarray(b, float).copy() for b in G.biases]
    for k in range(len(FW) - 1):
        RF = np.hstack([FW[k], Fb[k][:, None]])
        RG = np.hstack([GW[k], Gb[k][:, None]])
        cost = np.abs(RF[:, None, :] - RG[None, :, :]).max(axis=2)
        _, perm = linear_sum_assignment(cost)
        GW[k], Gb[k] = GW[k][perm], Gb[k][perm]
        GW[k + 1] = GW[k + 1][:, perm]
    diffs = [np.abs(a - b).max() for a, b in zip(FW + Fb, GW + Gb, strict=True)]
    scale = max(np.abs(a).max() for a in FW + Fb)
    FS = F.skip if F.skip is not None else None
    GS = G.skip if G.skip is not None else None
    if FS is not None or GS is not None:
        m, d = F.output_dim, F.input_dim
        fs = FS if FS is not None else (np.zeros((m, d)), np.zeros(m))
        gs = GS if GS is not None else (np.zeros((m, d)), np.zeros(m))
        diffs += [np.abs(np.asarray(fs[0], float) - np.asarray(gs[0], float)).max(),
                  np.abs(np.asarray(fs[1], float) - np.asarray(gs[1], float)).max()]
    err = float(max(diffs))
    return err, err / max(scale, TINY)


def fidelity(reference: Network, recovered: Network, domain: Box | None = None, *,
             timeout: float | None = 30.0, n_samples: int = 20_000, seed: int = 0,
             tol: float | np.ndarray | None = None) -> Fidelity:
    """Compare ``recovered`` with ``reference`` (see the module docstring); the default
    box is ``[-1, 1]^d``; ``timeout`` bounds the functional check (``unknown`` past it);
    ``tol``: of the functional check (default :func:`relulab.symmetry.equivalent`'s), one
    number for every output, or one per output (outputs of very different sizes: each is
    then checked within its own tolerance, or up to half of it, and
    ``equivalence_tol`` is the largest of those applied).

    Example (the second network has its two neurons swapped and scaled: same function):
        >>> from relulab import Network
        >>> a = Network([[[1.0], [-1.0]], [[1.0, 2.0]]], [[0.0, 1.0], [0.0]])
        >>> b = Network([[[-2.0], [1.0]], [[1.0, 1.0]]], [[2.0, 0.0], [0.0]])
        >>> f = fidelity(a, b, n_samples=100)
        >>> f.aligned, f.max_abs_error < 1e-12, f.equivalence, f.complete
        (True, True, 'equal', True)
    """
    from ..symmetry import canonical, equivalent

    _check_args(reference, recovered, domain, timeout, n_samples)
    out_scale, tol = _per_output_scale(tol, reference.output_dim)
    d = reference.input_dim
    box = domain if domain is not None else Box(-np.ones(d), np.ones(d))
    t0 = time.monotonic()
    # the parameters are compared on float copies; the function on the networks as given:
    # an exact reference rounded to float64 first (2^60 relu((1 + 2^-60) x) - 2^60 relu(x),
    # x on [0, 1], became 0) was "equal", bound 0, to a recovered network 1 away from it
    ref = reference
    F, _ = canonical(ref.float())
    G, _ = canonical(recovered.float())
    al = _align(F, G)
    dead: tuple[tuple[int, int], ...] = ()
    active: tuple[tuple[int, int], ...] = ()
    if al is None and ref.n_hidden_layers:
        # Neurons dead on the box compute nothing there: the reference without them is the
        # same function on the box, and what an attack confined to the box can recover.
        ref, dead, active = _without_dead(ref, box,
                                          None if timeout is None else DEAD_SHARE * timeout)
        if dead:
            F, _ = canonical(ref.float())
            al = _align(F, G)
    X = box.sample(n_samples, np.random.default_rng(seed))
    # the exact samples get a share of the time left; the functional check the rest
    share = None if timeout is None else SAMPLE_SHARE * max(timeout - (time.monotonic() - t0), 0.0)
    out_err, n_used = _sampled_error(reference, recovered, X, share)
    left = None if timeout is None else max(timeout - (time.monotonic() - t0), 0.1 * timeout)
    if out_scale is None:
        eq = equivalent(ref, recovered, box, timeout=left, tol=tol)
        witness_gap, bound, tol_scale = eq.gap, eq.upper_bound, 1.0
    else:
        # each output scaled by a power of two (exactly) so that one tolerance checks it
        # within its own: max_j s_j |f_j - g_j| <= tol means |f_j - g_j| <= tol / s_j
        C = np.diag(out_scale)
        eq = equivalent(ref.with_output_map(C), recovered.with_output_map(C), box, timeout=left, tol=tol)
        tol_scale = float(1.0 / out_scale.min())
        bound = None if eq.upper_bound is None else float(eq.upper_bound) * tol_scale
        witness_gap = None if eq.witness is None else _unscaled_gap(ref, recovered, eq.witness)
    exact = bool(eq.exact)
    tol = 0.0 if exact and eq.status == "equal" else float(eq.tol) * tol_scale
    msg = eq.message
    if out_scale is not None:
        msg = "each output within its own tolerance (the largest " + f"{tol:.3g}): " + msg
    if eq.status == "equal" and not exact:
        msg = f"equal up to {tol:.3g} (not exact): " + msg
    if dead:
        msg = (f"reference neurons {list(dead)} (layer, index) are dead on the box: left out; "
               + msg)
    hit = reference.entry_not_a_float()
    if hit is not None:
        # its float copy may be another function (2^60 relu((1 + 2^-60) x) - 2^60 relu(x)
        # is relu(x), its copy 0): an alignment with it ("error 0") says nothing
        al = None
        msg = (f"the reference's {hit[0]} {list(hit[1])} is {hit[2]}, which float64 does not hold, "
               "so its parameters are not compared with float64 ones; " + msg)
    elif al is None:
        msg = (f"normal forms differ in architecture ({list(F.widths)} vs {list(G.widths)}); "
               + msg)
    return Fidelity(
        aligned=al is not None,
        max_abs_error=None if al is None else al[0],
        max_rel_error=None if al is None else al[1],
        bits_abs=None if al is None else _bits(al[0]),
        bits_rel=None if al is None else _bits(al[1]),
        equivalence=eq.status,
        equivalence_method=eq.method,
        witness=eq.witness,
        witness_gap=witness_gap,
        max_output_error=out_err,
        n_samples=n_used,
        widths_reference=F.widths,
        widths_recovered=G.widths,
        domain=box.to_dict(),
        message=msg,
        dead_on_domain=dead,
        active_on_domain=active,
        equivalence_tol=tol,
        equivalence_exact=exact,
        equivalence_bound=None if bound is None else float(bound),
    )


def _per_output_scale(tol: float | np.ndarray | None, m: int) -> tuple[np.ndarray | None, float | None]:
    """For per-output tolerances ``tol`` (m of them): powers of two ``s`` and one tolerance
    ``t`` with ``t / s_j`` between half of ``tol_j`` and ``tol_j``; ``(None, tol)`` for one
    number (or None).

    Example:
        >>> s, t = _per_output_scale(np.array([1e-6, 1e-16]), 2)
        >>> t, bool(5e-7 <= t / s[0] <= 1e-6), float(t / s[1])
        (1e-16, True, 1e-16)
    """
    if tol is None or np.ndim(tol) == 0:
        return None, tol
    t = np.asarray(tol, dtype=float).reshape(-1)
    if t.size != m or not np.all(np.isfinite(t) & (t > 0)):
        raise ExtractError(f"fidelity: tol must be one number or {m} finite numbers > 0 (one per "
                           f"output), got {np.asarray(tol).tolist()!r}")
    if np.all(t == t[0]):
        return None, float(t[0])
    low = float(t.min())
    # s_j >= low / tol_j, so low / s_j <= tol_j; powers of two keep the scaling exact
    return 2.0 ** np.ceil(np.log2(low / t)), low


def _unscaled_gap(f: Network, g: Network, x: np.ndarray) -> float:
    """``max_j |f_j(x) - g_j(x)|`` (exactly where either network is exact)."""
    if f.is_exact or g.is_exact:
        from fractions import Fraction

        xe = np.array([Fraction(float(v)) for v in np.asarray(x, float).reshape(-1)], dtype=object)
        return float(max(abs(a - b) for a, b in zip(f.exact()(xe), g.exact()(xe), strict=True)))
    return float(np.max(np.abs(f(np.asarray(x, float)) - g(np.asarray(x, float)))))


def _check_args(reference, recovered, domain, timeout, n_samples) -> None:
    """One clear error naming the argument at fault."""
    for name, net in (("reference", reference), ("recovered", recovered)):
        if not isinstance(net, Network):
            raise ExtractError(f"fidelity: {name} must be a relulab Network, got {type(net).__name__}")
    if recovered.input_dim != reference.input_dim:
        raise ExtractError(f"fidelity: recovered takes {recovered.input_dim} inputs, reference "
                           f"{reference.input_dim}")
    if recovered.output_dim != reference.output_dim:
        raise ExtractError(f"fidelity: recovered has {recovered.output_dim} outputs, reference "
                           f"{reference.output_dim}")
    if domain is not None and (not isinstance(domain, Box) or domain.dim != reference.input_dim):
        raise ExtractError(f"fidelity: domain must be a Box of dimension {reference.input_dim}, "
                           f"got {domain!r}")
    if timeout is not None and not is_positive_seconds(timeout):
        raise ExtractError(f"fidelity: timeout must be a number > 0 or None, got {timeout!r}")
    if not is_int_at_least(n_samples, 1):
        raise ExtractError(f"fidelity: n_samples must be an integer >= 1, got {n_samples!r}")


def _without_dead(net: Network, box: Box, time_limit: float | None) -> tuple[Network, tuple, tuple]:
    """``net`` with the outgoing weights of its neurons proved dead on ``box`` set to 0
    (the same function on the box), those neurons, and the neurons proved always active
    on ``box``."""
    from ..symmetry import neuron_status

    ns = neuron_status(net, box, use_verifier=True, time_limit=time_limit)
    dead = tuple((k, int(i)) for k, st in enumerate(ns.status) for i in np.nonzero(st == -1)[0])
    active = tuple((k, int(i)) for k, st in enumerate(ns.status) for i in np.nonzero(st == 1)[0])
    if not dead:
        return net, (), active
    return without_neurons(net, dead), dead, active


def without_neurons(net: Network, neurons) -> Network:
    """``net`` with the outgoing weights of ``neurons`` (``(layer, index)``, 0-based) set
    to 0 (an exact network stays exact).

    Example:
        >>> from fractions import Fraction
        >>> net = Network([[[1], [2]], [[Fraction(1, 3), 5]]], [[0, 0], [0]]).exact()
        >>> g = without_neurons(net, [(0, 1)])
        >>> g.is_exact, g([Fraction(1)])[0]
        (True, Fraction(1, 3))
    """
    if net.is_exact:
        Ws = [np.array(W, dtype=object, copy=True) for W in net.weights]
        for k, i in neurons:
            Ws[k + 1][:, i] = 0
        return Network(Ws, [np.array(b, dtype=object, copy=True) for b in net.biases], skip=net.skip).exact()
    Ws = [np.asarray(W, float).copy() for W in net.weights]
    for k, i in neurons:
        Ws[k + 1][:, i] = 0.0
    return Network(Ws, [np.asarray(b, float) for b in net.float().biases], skip=net.skip)


# Exact networks with weights float64 cannot hold are evaluated exactly on at most this
# many of the sampled points, in batches, while SAMPLE_SHARE of the time left lasts (at
# least EXACT_MIN_SAMPLES); 500 exact passes with no clock took 49 s under timeout=2 and
# left the functional check 0.2 s
EXACT_SAMPLES = 500
EXACT_MIN_SAMPLES = 8
EXACT_BATCH = 8
SAMPLE_SHARE = 0.25


def _sampled_error(reference: Network, recovered: Network, X: np.ndarray,
                   seconds: float | None = None) -> tuple[float, int]:
    """The largest output difference on the rows of ``X``, and how many rows were used: all
    in float64, or, where a network holds a weight that float64 rounds, rows evaluated
    exactly (the difference rounded to float) in batches until EXACT_SAMPLES rows or
    ``seconds`` (None: no limit) are used up, never fewer than EXACT_MIN_SAMPLES.

    Example:
        >>> from fractions import Fraction
        >>> f = Network([[[Fraction(1) + Fraction(1, 10**30)]], [[1]]], [[0], [0]]).exact()
        >>> err, n = _sampled_error(f, Network([[[1.0]], [[1.0]]], [[0.0], [0.0]]), np.ones((20, 1)), None)
        >>> 0 < err < 1e-29, n
        (True, 20)
    """
    if not any(n.is_exact and n.entry_not_a_float() is not None for n in (reference, recovered)):
        return float(np.max(np.abs(reference.float()(X) - recovered.float()(X)))), len(X)
    fe, ge = reference.exact(), recovered.exact()        # once: a float network converts each time
    stop = None if seconds is None else time.monotonic() + seconds
    worst, used = 0.0, 0
    rows = X[:EXACT_SAMPLES]
    while used < len(rows):
        if stop is not None and used >= EXACT_MIN_SAMPLES and time.monotonic() > stop:
            break
        batch = rows[used:used + EXACT_BATCH]   # float rows: read exactly by the exact networks
        fx, gx = fe(batch), ge(batch)
        worst = max(worst, max(float(abs(a - b)) for a, b in zip(np.ravel(fx), np.ravel(gx), strict=True)))
        used += len(batch)
    return worst, used
