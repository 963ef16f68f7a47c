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
from ..layers import as_kind
from ..network import Network, NetworkError
from ..tolerance import EQUIV_TOL, MATCH_RTOL, ROUNDOFF, TINY, or_default, scaled_tol
from ._status import verifier_available
from .canonical import canonical

__all__ = [
    "EquivalenceResult",
    "equivalent",
    "equivalent_one_hidden_layer",
    "whole_space_box",
    "one_hidden_layer_normal_form",
]


@dataclass(frozen=True)
class EquivalenceResult:
    """The answer of :func:`equivalent`.

    Attributes:
        status: ``"equal"``, ``"different"`` or ``"unknown"``.
        method: what decided it: ``"canonical"``, ``"sampling"``, ``"verifier"`` or
            ``"algebraic"``.
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
    if f.input_dim != g.input_dim:
        raise NetworkError(f"equivalent: input sizes differ ({f.input_dim} vs {g.input_dim})")
    if f.output_dim != g.output_dim:
        raise NetworkError(f"equivalent: output sizes differ ({f.output_dim} vs {g.output_dim})")


def _to_fraction_vec(x: np.ndarray) -> np.ndarray:
    return as_kind(np.asarray(x).reshape(-1), True)


def _recheck(
    f: Network, g: Network, x: np.ndarray, domain: Box | Polytope | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, bool] | None:
    """Re-evaluate a candidate witness by separate forward passes of ``f`` and ``g``.

    Returns ``(x, f(x), g(x), gap, exact)`` or None when ``x`` is outside the domain.  When
    both networks are exact (or ``x`` holds Fractions), the gap is computed in rational
    arithmetic on the exact binary values of the inputs.
    """
    x = np.asarray(x).reshape(-1)
    if x.dtype != object:
        x = np.asarray(x, dtype=np.float64)
        if isinstance(domain, Box):
            x = np.clip(x, domain.lo, domain.hi)
    if domain is not None and not domain.contains(np.asarray(x, dtype=np.float64)):
        return None
    if f.is_exact and g.is_exact:
        xe = _to_fraction_vec(x)
        fx, gx = f(xe), g(xe)
        gap = float(max(abs(a - b) for a, b in zip(fx, gx, strict=True)))
        return xe, fx, gx, gap, True
    xf = np.asarray(x, dtype=np.float64)
    fx, gx = f.float()(xf), g.float()(xf)
    return xf, fx, gx, float(np.max(np.abs(fx - gx))), False


def _default_tol(f: Network, g: Network, X: np.ndarray) -> float:
    scale = max(1.0, float(np.max(np.abs(f.float()(X)))), float(np.max(np.abs(g.float()(X)))))
    return EQUIV_TOL * scale


def _perturbation_bound(F: Network, G: Network, box: Box) -> float | None:
    """A sound bound of ``sup |F - G|`` on ``box`` for two networks of the same architecture
    (propagating ``|h_F - h_G|`` through the layers, ``relu`` being 1-Lipschitz)."""
    if F.widths != G.widths or (F.skip is None) != (G.skip is None):
        return None
    from ..bounds import interval_bounds

    Ff, Gf = F.float(), G.float()
    ib = interval_bounds(Ff, box)
    xabs = np.maximum(np.abs(box.lo), np.abs(box.hi))
    H = xabs
    D = np.zeros_like(xabs)
    for k, (WF, bF, WG, bG) in enumerate(zip(Ff.weights, Ff.biases, Gf.weights, Gf.biases, strict=True)):
        D = np.abs(WF - WG) @ H + np.abs(WG) @ D + np.abs(bF - bG)
        if k < Ff.n_hidden_layers:
            H = np.maximum(ib.pre_hi[k], 0.0)
    if Ff.skip is not None:
        D = D + np.abs(Ff.skip[0] - Gf.skip[0]) @ xabs + np.abs(Ff.skip[1] - Gf.skip[1])
    if not D.any():
        return 0.0  # every weight difference is exactly zero: nothing to round
    # Slack for the rounding of this very computation.
    return float(np.max(D)) * (1 + ROUNDOFF) + TINY


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
        n_samples: points of the sampling attack.

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
    if domain is None or (isinstance(domain, Polytope) and domain.n_constraints == 0):
        if max(f.n_hidden_layers, g.n_hidden_layers) > 1:
            raise DomainError(
                "equivalent: on all of R^d only networks with at most one hidden layer are "
                "decided (algebraically); give a bounded domain (Box or Polytope)"
            )
        return equivalent_one_hidden_layer(f, g, rtol=tol)
    dom = as_domain(domain, f.input_dim)
    if isinstance(dom, Polytope) and not dom.is_bounded:
        raise DomainError("equivalent: the polytope is unbounded; give a bounded domain")
    both_exact = f.is_exact and g.is_exact

    X = _domain_points(dom, n_samples, seed)
    tol_v = _default_tol(f, g, X) if tol is None else float(tol)

    def done(status: str, method: str, **kw: Any) -> EquivalenceResult:
        return EquivalenceResult(status=status, method=method, tol=tol_v,
                                 time=time.monotonic() - t0, **kw)

    if fast:
        cf, _ = canonical(f, dom)
        cg, _ = canonical(g, dom)
        if both_exact and cf == cg:
            return done("equal", "canonical", upper_bound=0.0, exact=True,
                        message="identical normal forms (exact)")
        box = dom if isinstance(dom, Box) else dom.bounding_box()
        pb = _perturbation_bound(cf, cg, box)
        if pb is not None and pb <= tol_v:
            return done("equal", "canonical", upper_bound=pb,
                        message="identical normal forms (float weights)" if pb == 0.0
                        else f"normal forms agree; |f - g| <= {pb:.3g} on the domain")
        # Sampling attack: any point with a gap above tol is a witness.
        gaps = np.max(np.abs(f.float()(X) - g.float()(X)), axis=1)
        i = int(np.argmax(gaps))
        if gaps[i] > tol_v:
            chk = _recheck(f, g, X[i], dom)
            if chk is not None and chk[3] > tol_v:
                x, fx, gx, gap, ex = chk
                return done("different", "sampling", witness=x, f_value=fx, g_value=gx,
                            gap=gap, exact=ex, message=f"they differ by {gap:.6g} at a sampled input")

    if not verifier_available():
        return done("unknown", "verifier", message="the exact verifier (relulab.verify) is not available")
    return _by_verifier(f, g, dom, tol_v, timeout, t0, done)


def _by_verifier(f, g, dom, tol_v, timeout, t0, done) -> EquivalenceResult:
    from ..verify import maximize

    D = f.float() - g.float()
    m = D.output_dim
    if D.n_hidden_layers == 0:
        return _affine_difference(f, g, D, dom, tol_v, done)
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
    if len(ubs) == n_calls and max(ubs) <= tol_v:
        return done("equal", "verifier", upper_bound=max(ubs),
                    message=f"max |f - g| <= {max(ubs):.3g} on the domain (MILP bound)")
    why = "time limit" if len(ubs) < n_calls or "time_limit" in statuses else "bound above tol"
    return done("unknown", "verifier", upper_bound=max(ubs) if len(ubs) == n_calls else None,
                message=f"undecided ({why})", details={"statuses": statuses})


def _affine_difference(f, g, D, dom, tol_v, done) -> EquivalenceResult:
    """Both networks are affine: maximise each ``+-(f_j - g_j)`` exactly (closed form on a
    Box, one LP per row on a Polytope)."""
    from ..lp import solve

    A = np.asarray(D.weights[0], dtype=float)
    c = np.asarray(D.biases[0], dtype=float)
    if D.skip is not None:
        A, c = A + D.skip[0], c + D.skip[1]
    if not A.any() and not c.any():
        return done("equal", "verifier", upper_bound=0.0, message="identical affine maps")
    best_x, best_v, ub = None, -np.inf, -np.inf
    for row, off in [(A[j] * s, c[j] * s) for j in range(A.shape[0]) for s in (1.0, -1.0)]:
        if isinstance(dom, Box):
            x = np.where(row > 0, dom.hi, dom.lo)
            v = float(row @ x + off)
            bound = v * (1 + ROUNDOFF) + TINY
        else:
            r = solve(-row, A_ub=dom.A, b_ub=dom.b)
            if not r.ok:
                return done("unknown", "verifier", message=f"LP over the polytope ended {r.status}")
            x = r.x
            v = float(row @ x + off)
            bound = v + scaled_tol(v)
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
def _one_layer_terms(net: Network, exact: bool, sign: int) -> tuple[list, np.ndarray, np.ndarray]:
    """The network as ``sum_h A_h relu(u_h . x + beta_h) + M x + c`` with each hyperplane
    normalised so that its pivot entry (first of largest absolute value) is 1."""
    if net.n_hidden_layers > 1:
        raise NetworkError(
            f"the algebraic decision needs at most one hidden layer; the network has {net.n_hidden_layers}"
        )
    net = net.exact() if exact else net.float()
    d, m = net.input_dim, net.output_dim
    M = as_kind(np.zeros((m, d)), exact)
    c = as_kind(net.biases[-1], exact)
    if net.skip is not None:
        M = M + net.skip[0]
        c = c + net.skip[1]
    terms: list[tuple[np.ndarray, Any, np.ndarray]] = []
    if net.n_hidden_layers == 0:
        M = M + net.weights[0]
        return terms, sign * M, sign * c
    W, b, V = net.weights[0], net.biases[0], net.weights[1]
    for i in range(W.shape[0]):
        w, bi, v = W[i], b[i], V[:, i]
        if not np.asarray(v != 0, dtype=bool).any():
            continue
        absw = np.array([abs(x) for x in w], dtype=object if exact else float)
        top = max(absw)
        if top == 0:
            c = c + v * (bi if bi > 0 else 0 * bi)
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
        terms.append((u, beta, sign * coef))
    return terms, sign * M, sign * c


def _group_hyperplanes(terms: list, exact: bool, key_tol: float) -> list[tuple[np.ndarray, Any, np.ndarray]]:
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
    for u, beta, coef in terms:
        for gr in groups:
            if np.max(np.abs(gr[0] - u)) <= key_tol and abs(gr[1] - beta) <= scaled_tol(beta, key_tol):
                gr[2] = gr[2] + coef
                break
        else:
            groups.append([np.asarray(u, dtype=float), float(beta), np.asarray(coef, dtype=float)])
    return [tuple(gr) for gr in groups]


def equivalent_one_hidden_layer(
    f: Network, g: Network, *, rtol: float | None = None, seed: int = 0
) -> EquivalenceResult:
    """Decide ``f == g`` on all of R^d for networks with at most one hidden layer, purely
    algebraically (see the module docstring).  Exact networks are compared exactly; float
    networks up to a relative tolerance ``rtol`` (default 1e-9) on the normalised
    hyperplanes and coefficients.  ``different`` comes with a witness re-checked by
    forward passes (exactly, on the exact binary values of the weights).

    Example:
        >>> f = Network([[[1.0, 0.0]], [[1.0]]], [[0.0], [0.0]])           # relu(x1)
        >>> g = Network([[[-2.0, 0.0]], [[0.5]]], [[0.0], [0.0]],
        ...             skip=([[1.0, 0.0]], [0.0]))                         # relu(-x1)+x1
        >>> equivalent_one_hidden_layer(f, g).status
        'equal'
    """
    t0 = time.monotonic()
    _check_shapes(f, g)
    exact = f.is_exact and g.is_exact
    rt = or_default(rtol, MATCH_RTOL)
    tf, Mf, cf = _one_layer_terms(f, exact, +1)
    tg, Mg, cg = _one_layer_terms(g, exact, -1)
    groups = _group_hyperplanes(tf + tg, exact, rt)
    dM, dc = Mf + Mg, cf + cg
    if exact:
        scale = 0
        kink = [gr for gr in groups if any(v != 0 for v in gr[2])]
        affine_differs = any(v != 0 for v in dM.reshape(-1)) or any(v != 0 for v in dc)
    else:
        mags = [1.0, float(np.max(np.abs(Mf))), float(np.max(np.abs(cf)))]
        mags += [float(np.max(np.abs(t[2]))) for t in tf + tg]
        scale = max(mags)
        kink = [gr for gr in groups if np.max(np.abs(gr[2])) > rt * scale]
        affine_differs = bool(np.max(np.abs(dM)) > rt * scale or np.max(np.abs(dc)) > rt * scale)
    tol_out = 0.0 if exact else rt * scale
    details = {"hyperplanes": len(groups), "differing_hyperplanes": len(kink)}
    if not kink and not affine_differs:
        return EquivalenceResult(
            "equal", "algebraic", tol_out, exact=exact, time=time.monotonic() - t0, details=details,
            message=f"same {len(groups)} hyperplanes with equal coefficients and equal affine parts",
        )
    cands = _kink_witnesses(kink, groups, exact, f.input_dim, seed) if kink else _affine_witnesses(
        f.input_dim, exact)
    fe, ge = f.exact(), g.exact()
    best = None
    for x in cands:
        chk = _recheck(fe, ge, as_kind(x, True), None)
        if chk is not None and (best is None or chk[3] > best[3]):
            best = chk
    if best is None or best[3] == 0:
        return EquivalenceResult(
            "unknown", "algebraic", tol_out, time=time.monotonic() - t0, details=details,
            message="coefficients differ but no witness was confirmed",
        )
    x, fx, gx, gap, _ = best
    if not exact:
        x = np.asarray([float(v) for v in x])
        fx = np.asarray([float(v) for v in fx])
        gx = np.asarray([float(v) for v in gx])
    why = (f"{len(kink)} hyperplane(s) with different total coefficients" if kink
           else "affine parts differ")
    return EquivalenceResult(
        "different", "algebraic", tol_out, witness=x, f_value=fx, g_value=gx, gap=gap, exact=True,
        time=time.monotonic() - t0, details=details, message=why,
    )


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
    u, beta, _ = h
    others = [gr for gr in groups if gr is not h]
    for _ in range(50):
        if exact:
            p = np.array([Fraction(int(v), 97) for v in rng.integers(-300, 300, size=d)], dtype=object)
        else:
            p = rng.normal(size=d)
        uu = u @ u
        x0 = p - ((u @ p + beta) / uu) * u
        ts = []
        ok = True
        for uo, bo, _ in others:
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
    rtol = or_default(rtol, MATCH_RTOL)
    exact = net.is_exact
    terms, M, c = _one_layer_terms(net, exact, +1)
    groups = _group_hyperplanes(terms, exact, rtol)
    if exact:
        keep = [gr for gr in groups if any(v != 0 for v in gr[2])]
    else:
        scale = max([1.0] + [float(np.max(np.abs(gr[2]))) for gr in groups])
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
