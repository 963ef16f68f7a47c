"""Refinement cascades at fixed width: ``f_k = R^k f_0`` by a ReLU network whose width
does not depend on k, with ``3k + 3`` hidden layers.

The cascade identity ``f_k(x) = sum_N c_k(N) f_0(2^k x - N)`` (``c_k = S^k delta_0``,
see :mod:`relulab.construct.refine_scheme`) is followed one binary digit at a time.
Write ``2^j x = N + y``.  The *residual* ``y`` lives on the circle R/Z (it doubles each
step), and ``f_k(x) = sum_l c_k(N - l) f_0(y + l)`` over a fixed window of l.  The
network carries, for every step j:

* ``h = 2 dist(2^j x, Z)``: the polygonal (tent) model of the circle point; it is
  continuous and doubles exactly by the tent map ``h -> 2 relu(h) - 4 relu(h - 1/2)``;
* two coordinate systems for the residual: chart A, ``y_A in [0, 1)`` (``N = floor``,
  seam at the integers) and chart B, ``y_B in [-1/2, 1/2)`` (``N = round``, seam at the
  half-integers), each with its window of cascade coefficients ``C(l) = c_j(N - l)``,
  split into non-negative parts ``C = C+ - C-`` (by the signs of the mask), and the
  products ``u+- = C+- y``.

A chart's quantities are discontinuous at its seam, so a network can only hold them
away from it: the invariant is "chart A exact where ``dist(p, 0) >= 1/8``, chart B
exact where ``dist(p, 1/2) >= 1/8``" (``p`` the circle point).  One step maps
``(C, u)`` of a source chart to a target chart by a *fixed* linear map for each
integer offset t (``N' = 2N + t``): chart B's target needs t = 1 from A (on
p in [1/4, 3/4]) and t = 0 from B (elsewhere); chart A's needs t in {0, 1} from A and
t in {0, -1} from B, the digit switch lying where chart A's target is at its seam.
The switches are the gadget ``base + relu(z - M(1 - s)) - relu(-z - M(1 - s))``,
exact when the selector s is 0 or 1, and also inside the selector's ramp because
there ``z = 0``: the source switch (by ``h``) ramps only around p = 1/4 and 3/4,
where both charts are exact and their updates give the same target-A values (the
target-B values there are at chart B's seam, so not needed).  No variable is ever
multiplied by a variable selector.

Readout: ``C+ f_0(y + l) = C+ phi(y)`` for a CPWL phi is linear in ``(C+, u+)`` and
``relu(u+ - t C+) = C+ relu(y - t)`` (``C+ >= 0``), so each chart reads ``f_k``
exactly where it is exact; the readouts are switched by ``h`` as above.

Size: a first hidden layer of ``relu(x - b)`` (b the breakpoints of the initial
signals, O(K + support) of them), three hidden layers per step of a width fixed by
the mask and the seed, and two readout layers.  Big-M constants grow like
``(2 rho)^k`` (rho: largest absolute row sum of the mask's two polyphase parts).

Example:
    >>> net = refinement_network([Fraction(1, 2), 1, Fraction(1, 2)], 2)    # the hat is refinable
    >>> [str(v) for v in net([[Fraction(1, 2)], [Fraction(7, 4)], [3]]).ravel()]
    ['1/2', '1/4', '0']
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..network import Network
from ..results import Result
from ._builder import Builder, Expr, F, check_size, esum
from .maxmin import ConstructionError
from .refine_scheme import check_seed, parse_mask, scheme_convergence, subdivision_iterate
from .subdivision import evaluate_cpwl

__all__ = ["refinement_network", "extended_forward", "RefinementCheck", "check_refinement_network", "MASKS",
           "refinement_sizes", "SparseExact",
           "prove_equal_1d"]

HALF = Fraction(1, 2)
# selector ramps: every ramp sits inside the 1/8-neighbourhood of a seam that the
# invariant allows to be garbage (see the module docstring for the case analysis)
RAMP0 = Fraction(1, 16)          # width of the level-0 ramps next to a seam
S_LO, S_HI = Fraction(3, 8), Fraction(5, 8)        # source switch: h in (3/8, 5/8)
DA_LO, DA_HI = Fraction(7, 16), Fraction(9, 16)    # digit of chart A: y_A in (7/16, 9/16)
DB_LO, DB_HI = Fraction(-1, 16), Fraction(1, 16)   # digit of chart B: y_B in (-1/16, 1/16)

MASKS = {
    "hat": [HALF, Fraction(1), HALF],
    "chaikin": [Fraction(1, 4), Fraction(3, 4), Fraction(3, 4), Fraction(1, 4)],
    "cubic-bspline": [Fraction(1, 8), HALF, Fraction(3, 4), HALF, Fraction(1, 8)],
    "four-point": [Fraction(-1, 16), Fraction(0), Fraction(9, 16), Fraction(1),
                   Fraction(9, 16), Fraction(0), Fraction(-1, 16)],
}


# ------------------------------------------------------------------ small gadgets
def _clip01(b: Builder, e: Expr) -> Expr:
    return b.relu(e) - b.relu(e - 1)


def _sel(b: Builder, gate: Expr, z: Expr, M: Fraction) -> Expr:
    """``gate * z`` when gate is 0 or 1 and ``|z| <= M`` (else between 0 and z)."""
    off = (1 - gate) * M
    return b.relu(z - off) - b.relu(-z - off)


def _cpwl_of_x(b: Builder, xs: Expr, nodes: list[tuple[Fraction, Fraction]],
               neuron: dict[Fraction, Expr]) -> Expr:
    """The CPWL function through ``nodes`` (constant outside), from relu(x - t) neurons."""
    out = Expr(b.layer + 1, {}, nodes[0][1])
    prev = Fraction(0)
    for i, (t, _) in enumerate(nodes):
        s = (nodes[i + 1][1] - nodes[i][1]) / (nodes[i + 1][0] - t) if i + 1 < len(nodes) else Fraction(0)
        if s != prev:
            if t not in neuron:
                neuron[t] = b.relu(xs - t)
            out = out + neuron[t] * (s - prev)
        prev = s
    return out


@dataclass
class _Chart:
    """Signals of one chart on the current layer: position y, and per window index
    the non-negative parts C+ / C- and u+- = C+- y (the minus parts only for signed masks)."""

    y: Expr
    cp: list[Expr]
    cm: list[Expr] | None
    up: list[Expr]
    um: list[Expr] | None


class _Cascade:
    def __init__(self, mask: list[Fraction], bp: list[Fraction], vals: list[Fraction]) -> None:
        self.a, self.bp, self.vals = mask, bp, vals
        K = len(mask) - 1
        s0, s1 = bp[0], bp[-1]
        lo = min(-1, math.floor(s0 - HALF) - 1)
        hi = max(K + 1, math.ceil(s1 + HALF) + 1)
        self.window = list(range(lo, hi + 1))
        self.signed = any(v < 0 for v in mask)
        self.U = {t: self._matrix(t) for t in (-1, 0, 1)}
        ap = sum((abs(v) for v in mask[0::2]), Fraction(0))
        aq = sum((abs(v) for v in mask[1::2]), Fraction(0))
        self.rho = max(ap, aq, Fraction(1))

    def _matrix(self, t: int) -> dict[int, list[tuple[int, Fraction]]]:
        """Row l of U_t: ``C'(l) = sum_l' a_(2l' + t - l) C(l')``; checks window closure."""
        K = len(self.a) - 1
        W = set(self.window)
        rows = {}
        for l in self.window:
            row = []
            for lp in range(math.ceil((l - t) / 2), math.floor((K + l - t) / 2) + 1):
                coef = self.a[2 * lp + t - l]
                if coef != 0:
                    if lp not in W:  # pragma: no cover - the window is chosen to close
                        raise ConstructionError(f"refinement window not closed at l={l}, t={t}")
                    row.append((lp, coef))
            rows[l] = row
        return rows

    # -------------------------------------------------------------- one option update
    def update(self, ch: _Chart, t: int) -> tuple[list[Expr], list[Expr] | None, list[Expr], list[Expr] | None]:
        """Target (C+, C-, u+, u-) of the fixed linear map with offset t (``y' = 2y - t``)."""
        idx = {l: i for i, l in enumerate(self.window)}
        layer = ch.y.layer
        cp, cm, up, um = [], [] if self.signed else None, [], [] if self.signed else None
        for l in self.window:
            pp, pm, qp, qm = [], [], [], []
            for lp, coef in self.U[t][l]:
                i = idx[lp]
                vp = ch.up[i] * 2 - ch.cp[i] * t
                if coef > 0:
                    pp.append(ch.cp[i] * coef)
                    qp.append(vp * coef)
                    if self.signed:
                        pm.append(ch.cm[i] * coef)
                        qm.append((ch.um[i] * 2 - ch.cm[i] * t) * coef)
                else:
                    # a negative entry swaps the parts: C+' gets |a| C-, C-' gets |a| C+
                    pm.append(ch.cp[i] * (-coef))
                    qm.append(vp * (-coef))
                    pp.append(ch.cm[i] * (-coef))
                    qp.append((ch.um[i] * 2 - ch.cm[i] * t) * (-coef))
            cp.append(esum(pp, layer))
            up.append(esum(qp, layer))
            if self.signed:
                cm.append(esum(pm, layer))
                um.append(esum(qm, layer))
        return cp, cm, up, um


def _flat(ch_parts: tuple, y: Expr) -> list[Expr]:
    cp, cm, up, um = ch_parts
    return [y, *cp, *(cm or []), *up, *(um or [])]


def _unflat(vals: list[Expr], w: int, signed: bool) -> _Chart:
    y, rest = vals[0], vals[1:]
    cp, rest = rest[:w], rest[w:]
    cm, rest = (rest[:w], rest[w:]) if signed else (None, rest)
    up, rest = rest[:w], rest[w:]
    um = rest[:w] if signed else None
    return _Chart(y, cp, cm, up, um)


def _nonneg_mask(n_total: int, w: int, signed: bool) -> list[bool]:
    """Which flat entries are non-negative (C+- parts): they are carried by one neuron."""
    kinds = [False] + [True] * w + ([True] * w if signed else []) + [False] * w + ([False] * w if signed else [])
    assert len(kinds) == n_total
    return kinds


MAX_REFINE_STEPS = 1000  # refinement steps relulab builds (their constants grow like (2 rho)^steps)


def refinement_network(mask: object, steps: int, seed_bp: Sequence[object] | None = None,
                       seed_vals: Sequence[object] | None = None,
                       require_convergent: bool = True) -> Network:
    """Exact network of the k-th refinement iterate ``f_k = R^k f_0`` (k = ``steps``)
    at fixed width: 1 + 3k + 2 hidden layers, the widths of the 3 layers of a step the
    same for every step (see the module docstring).  Default seed: the hat 0, 1, 0 at
    0, 1, 2.  A mask failing the sum rule is refused (the scheme cannot converge); one
    whose convergence cannot be certified (:func:`scheme_convergence`) too, unless
    ``require_convergent=False`` (the network is exact for any finite mask).

    Example:
        >>> net = refinement_network(MASKS["chaikin"], 3)
        >>> net.n_hidden_layers, max(net.widths) == max(refinement_network(MASKS["chaikin"], 5).widths)
        (12, True)
    """
    a = parse_mask(mask)
    if not isinstance(steps, (int, np.integer)) or isinstance(steps, bool) or steps < 0:
        raise ConstructionError(f"refinement steps must be an integer >= 0, got {steps!r}")
    check_size(f"refinement_network(steps={steps})", layers=3 * int(steps) + 3)
    if steps > MAX_REFINE_STEPS:
        # the exact big-M constants grow like (2 rho)^steps: building and measuring 600
        # steps took 40 CPU-s, 2000 ran on for minutes
        raise ConstructionError(f"refinement_network(steps={steps}): relulab builds at most "
                                f"{MAX_REFINE_STEPS} steps (the exact constants grow like (2 rho)^steps, "
                                "and the build time with their size)")
    conv = scheme_convergence(a)
    if conv.status == "divergent":
        raise ConstructionError(f"refinement mask does not define a convergent scheme: {conv.reason}")
    if conv.status == "unknown" and require_convergent:
        raise ConstructionError(f"refinement mask: convergence not certified ({conv.reason}); "
                                "refinement_network(..., require_convergent=False) builds it anyway "
                                "(the command line builds certified masks only)")
    bp, vals = check_seed([0, 1, 2] if seed_bp is None else seed_bp,
                          [0, 1, 0] if seed_vals is None else seed_vals)
    cas = _Cascade(a, bp, vals)
    b = Builder(1)
    (x,) = b.inputs()
    A, B, h = _initial(b, cas, x)
    bC, bU = Fraction(1), Fraction(1)
    for _ in range(int(steps)):
        bC, bU = cas.rho * bC, cas.rho * (2 * bU + bC)
        M = 2 * max(bC, bU, Fraction(2))
        A, B, h = _step(b, cas, A, B, h, M)
    out = _readout(b, cas, A, B, h, bC, bU)
    return b.build([out])


def _initial(b: Builder, cas: _Cascade, x: Expr) -> tuple[_Chart, _Chart, Expr]:
    """Level 0 (``c_0 = delta_0``): chart A window entry l is the indicator of
    floor(x) = l, chart B's of round(x) = l, each ramped within 1/16 of its seam."""
    lo, hi = cas.window[0], cas.window[-1]
    ms = range(lo - 2, hi + 3)
    r = RAMP0
    neuron: dict[Fraction, Expr] = {}
    hn = [(F(m), Fraction(0)) for m in ms] + [(m + HALF, Fraction(1)) for m in ms[:-1]]
    h = _cpwl_of_x(b, x, sorted(hn), neuron)
    ya = _cpwl_of_x(b, x, sorted([(m + r, r) for m in ms] + [(m + 1 - r, 1 - r) for m in ms]), neuron)
    yb = _cpwl_of_x(b, x, sorted([(m - HALF + r, -HALF + r) for m in ms]
                                 + [(m + HALF - r, HALF - r) for m in ms]), neuron)
    cpa, upa, cpb, upb = [], [], [], []
    for l in cas.window:
        cpa.append(_cpwl_of_x(b, x, [(F(l), F(0)), (l + r, F(1)), (l + 1 - r, F(1)), (F(l + 1), F(0))], neuron))
        upa.append(_cpwl_of_x(b, x, [(F(l), F(0)), (l + r, r), (l + 1 - r, 1 - r), (F(l + 1), F(0))], neuron))
        cpb.append(_cpwl_of_x(b, x, [(l - HALF, F(0)), (l - HALF + r, F(1)), (l + HALF - r, F(1)),
                                     (l + HALF, F(0))], neuron))
        upb.append(_cpwl_of_x(b, x, [(l - HALF, F(0)), (l - HALF + r, -HALF + r), (l + HALF - r, HALF - r),
                                     (l + HALF, F(0))], neuron))
    b.close()
    zero = [b.const(0) for _ in cas.window] if cas.signed else None
    A = _Chart(ya, cpa, zero, upa, list(zero) if zero else None)
    B = _Chart(yb, cpb, list(zero) if zero else None, upb, list(zero) if zero else None)
    return A, B, h


def _carry_list(b: Builder, vals: list[Expr], nonneg: list[bool]) -> list[Expr]:
    return [b.carry(v, nonneg=n) for v, n in zip(vals, nonneg, strict=True)]


def _step(b: Builder, cas: _Cascade, A: _Chart, B: _Chart, h: Expr,
          M: Fraction) -> tuple[_Chart, _Chart, Expr]:
    w, sg = len(cas.window), cas.signed
    # layer 1: selectors, the tent map, clipped positions, states carried
    h1 = b.relu(h) * 2 - b.relu(h - HALF) * 4
    s = _clip01(b, (h - S_LO) / (S_HI - S_LO))
    sa = _clip01(b, (A.y - DA_LO) / (DA_HI - DA_LO))
    sb = _clip01(b, (DB_HI - B.y) / (DB_HI - DB_LO))
    ya = b.relu(A.y) - b.relu(A.y - 1)
    yb = b.relu(B.y + HALF) - b.relu(B.y - HALF) - HALF
    flatA, flatB = _flat((A.cp, A.cm, A.up, A.um), A.y), _flat((B.cp, B.cm, B.up, B.um), B.y)
    nn = _nonneg_mask(len(flatA), w, sg)
    A1 = _unflat([ya, *_carry_list(b, flatA[1:], nn[1:])], w, sg)
    B1 = _unflat([yb, *_carry_list(b, flatB[1:], nn[1:])], w, sg)
    b.close()
    # layer 2: digit switches inside each source (target A), source switch for target B
    opt_a0 = _flat(cas.update(A1, 0), A1.y * 2)
    opt_a1 = _flat(cas.update(A1, 1), A1.y * 2 - 1)
    opt_b0 = _flat(cas.update(B1, 0), B1.y * 2)
    opt_bm = _flat(cas.update(B1, -1), B1.y * 2 + 1)
    xa = [b.carry(z0, nonneg=n) + _sel(b, sa, z1 - z0, M)
          for z0, z1, n in zip(opt_a0, opt_a1, nn, strict=True)]
    xb = [b.carry(z0, nonneg=n) + _sel(b, sb, z1 - z0, M)
          for z0, z1, n in zip(opt_b0, opt_bm, nn, strict=True)]
    # target B: t = 1 from chart A, t = 0 from chart B (its switch region is B's seam)
    tb = [b.carry(zb, nonneg=n) + _sel(b, s, za - zb, M)
          for za, zb, n in zip(opt_a1, opt_b0, nn, strict=True)]
    s2 = b.relu(s)
    h2 = b.relu(h1)
    b.close()
    # layer 3: source switch for target A (inside its ramp both sources agree)
    ta = [b.carry(zb, nonneg=n) + _sel(b, s2, za - zb, M)
          for za, zb, n in zip(xa, xb, nn, strict=True)]
    tb3 = [b.carry(v, nonneg=n) for v, n in zip(tb, nn, strict=True)]
    h3 = b.relu(h2)
    b.close()
    return _unflat(ta, w, sg), _unflat(tb3, w, sg), h3


def _phi(cas: _Cascade, l: int, lo: Fraction, hi: Fraction) -> tuple[Fraction, Fraction, list[tuple[Fraction, Fraction]]]:
    """``y -> f_0(y + l)`` on [lo, hi]: value at lo, first slope, (kink, slope change)."""
    bp, vals = cas.bp, cas.vals
    pts = sorted({lo, hi, *(t - l for t in bp if lo < t - l < hi)})
    ys = [evaluate_cpwl(bp, vals, p + l) for p in pts]
    slopes = [(ys[i + 1] - ys[i]) / (pts[i + 1] - pts[i]) for i in range(len(pts) - 1)]
    kinks = [(pts[i], slopes[i] - slopes[i - 1]) for i in range(1, len(slopes)) if slopes[i] != slopes[i - 1]]
    return ys[0], slopes[0], kinks


def _read_chart(b: Builder, cas: _Cascade, ch: _Chart, lo: Fraction, hi: Fraction,
                bC: Fraction, bU: Fraction) -> tuple[Expr, Fraction]:
    """``sum_l C(l) f_0(y + l)`` from (C+-, u+-); returns the signal and a bound on it."""
    parts = [(ch.cp, ch.up, 1)] + ([(ch.cm, ch.um, -1)] if cas.signed else [])
    lin = b.const(0)
    terms: list[Expr] = []
    bound = Fraction(0)
    for i, l in enumerate(cas.window):
        v0, s0, kinks = _phi(cas, l, lo, hi)
        for cs, us, sign in parts:
            c, u = cs[i], us[i]
            lin = lin + (c * v0 + (u - c * lo) * s0) * sign
            bound += abs(v0) * bC + abs(s0) * (bU + abs(lo) * bC)
            for t, d in kinks:
                terms.append(b.relu(u - c * t) * (d * sign))
                bound += abs(d) * (bU + abs(t) * bC)
    return b.carry(lin) + esum(terms, b.layer + 1), bound


def _readout(b: Builder, cas: _Cascade, A: _Chart, B: _Chart, h: Expr,
             bC: Fraction, bU: Fraction) -> Expr:
    s = _clip01(b, (h - S_LO) / (S_HI - S_LO))
    ra, ba = _read_chart(b, cas, A, Fraction(0), Fraction(1), bC, bU)
    rb, bb = _read_chart(b, cas, B, -HALF, HALF, bC, bU)
    b.close()
    M = 2 * max(ba, bb, Fraction(1))
    return b.carry(rb) + _sel(b, s, ra - rb, M)


# ------------------------------------------------------------------ checking
class SparseExact:
    """Exact forward pass over sparse layers (the cascade's matrices are mostly zero):
    integer numerators over one denominator per layer, like
    :class:`relulab.construct.ExactEvaluator`, without dense products.

    Example:
        >>> ev = SparseExact(refinement_network(MASKS["hat"], 1))
        >>> [str(v) for v in ev([Fraction(1, 2), Fraction(3, 2), 5])]
        ['1/2', '1/2', '0']
    """

    def __init__(self, net: Network) -> None:
        net = net.exact()
        if net.input_dim != 1 or net.output_dim != 1 or net.skip is not None:
            raise ConstructionError("SparseExact: a univariate, single-output network without skip")
        self.layers = []
        for W, bias in net.layers:
            den = 1
            for v in (*W.reshape(-1), *bias):
                den = den * v.denominator // math.gcd(den, v.denominator)
            rows = [[(j, int(v * den)) for j, v in enumerate(row) if v != 0] for row in W]
            self.layers.append((rows, [int(v * den) for v in bias], den))

    @staticmethod
    def start(xs: Sequence[Fraction]) -> tuple[list[np.ndarray], int]:
        """Inputs as integer numerators over one denominator."""
        den = 1
        for v in xs:
            den = den * v.denominator // math.gcd(den, v.denominator)
        return [np.array([int(v * den) for v in xs], dtype=object)], den

    def preact(self, i: int, H: list[np.ndarray], den: int) -> tuple[list[np.ndarray], int]:
        """Pre-activations of layer i (numerators, one array per neuron, and denominator)."""
        rows, bias, wden = self.layers[i]
        n = len(H[0])
        out = []
        for row, c in zip(rows, bias, strict=True):
            acc = np.full(n, c * den, dtype=object)
            for j, w in row:
                acc = acc + H[j] * w
            out.append(acc)
        D = den * wden
        g = D
        for a in out:
            for v in a:
                if g == 1:
                    break
                g = math.gcd(g, int(v))
        return [a // g for a in out], D // g

    def __call__(self, xs: Sequence[object]) -> list[Fraction]:
        """Exact outputs at the rational points ``xs``."""
        H, den = self.start([F(v) for v in xs])
        for i in range(len(self.layers)):
            H, den = self.preact(i, H, den)
            if i < len(self.layers) - 1:
                H = [np.where(a > 0, a, 0) for a in H]
        return [Fraction(int(v), den) for v in H[0]]


def prove_equal_1d(net: Network, bp: Sequence[Fraction], vals: Sequence[Fraction]) -> tuple[bool, int]:
    """Decide exactly whether the univariate network equals the compactly supported CPWL
    function with breakpoints ``bp`` and values ``vals`` on all of R; also returns the
    number of the network's kink candidates found.  Layer by layer, the pre-activations
    are affine between consecutive known points (every kink of the earlier layers is
    one), so a neuron kinks inside an interval exactly when its signs at the two ends
    are opposite, at the interpolated root, and beyond the outermost points (where every
    earlier layer is affine) where the line through the last two points crosses zero,
    with one more point past that root; after the last layer both functions are affine
    between consecutive points and on the two outer rays (each holds two points), so
    equal values at all of them prove equality.

    Example:
        >>> net = refinement_network(MASKS["chaikin"], 1)
        >>> bp, vals = subdivision_iterate(MASKS["chaikin"], [0, 1, 2], [0, 1, 0], 1)
        >>> prove_equal_1d(net, bp, vals)[0]
        True
    """
    ev = SparseExact(net)
    W0, b0 = net.exact().layers[0]
    kinks0 = [-b0[j] / W0[j, 0] for j in range(len(b0)) if W0[j, 0] != 0]
    lo = min([*kinks0, bp[0]]) - 1
    hi = max([*kinks0, bp[-1]]) + 1
    first = sorted({lo, hi, *bp, *(t for t in kinks0)})
    H, den = ev.start(first)
    batches = [[first, H, den]]          # points, current-layer values, denominator
    n_layers = len(ev.layers)
    for i in range(n_layers - 1):
        pre = [ev.preact(i, H, d) for _, H, d in batches]
        pts = [p for b in batches for p in b[0]]
        order = np.array(sorted(range(len(pts)), key=pts.__getitem__))
        mats = [np.stack(Z) for Z, _ in pre]                 # (width, points of the batch)
        allz = np.concatenate(mats, axis=1)[:, order]
        dens = np.concatenate([np.full(m.shape[1], d, dtype=object) for m, (_, d) in zip(mats, pre, strict=True)])[order]
        sign = (allz > 0).astype(np.int8) - (allz < 0).astype(np.int8)
        new = set()
        srt = [pts[t] for t in order]

        def root(j: int, a: int, c: int, srt=srt, allz=allz, dens=dens) -> Fraction | None:
            """Zero of neuron j's pre-activation on the line through sorted points a, c."""
            fa = Fraction(int(allz[j, a]), int(dens[a]))
            fc = Fraction(int(allz[j, c]), int(dens[c]))
            return None if fa == fc else srt[a] + (srt[c] - srt[a]) * fa / (fa - fc)

        for j, c in zip(*np.nonzero(sign[:, :-1] * sign[:, 1:] < 0), strict=True):
            new.add(root(j, c, c + 1))
        # Beyond the outermost points every earlier layer is affine (their kinks are all
        # points, and the last two points lie past them), so this layer's pre-activations
        # are affine there too and may still cross zero far out: extrapolate.
        last = len(pts) - 1
        for j in range(allz.shape[0]):
            r = root(j, last - 1, last)
            if r is not None and r > srt[last]:
                new |= {r, r + 1}
            r = root(j, 1, 0)
            if r is not None and r < srt[0]:
                new |= {r, r - 1}
        new -= set(pts)
        for b, (Z, d) in zip(batches, pre, strict=True):
            b[1], b[2] = [np.where(z > 0, z, 0) for z in Z], d
        if new:
            npts = sorted(new)
            Hn, dn = ev.start(npts)
            for t in range(i + 1):
                Hn, dn = ev.preact(t, Hn, dn)
                Hn = [np.where(z > 0, z, 0) for z in Hn]
            batches.append([npts, Hn, dn])
    pts, outs = [], []
    for b in batches:
        Z, d = ev.preact(n_layers - 1, b[1], b[2])
        pts += b[0]
        outs += [Fraction(int(v), d) for v in Z[0]]
    ok = all(y == evaluate_cpwl(bp, vals, x) for x, y in zip(pts, outs, strict=True))
    return ok, len(pts)


@dataclass(frozen=True)
class RefinementCheck(Result):
    """The fixed-width network of ``f_k`` checked against the scheme's exact iterate.

    ``ok``: the network equals the iterate exactly at every breakpoint of the iterate,
    at the midpoint of every piece, at two points outside the support and at the
    random rationals (``n_points`` points in all); ``proved`` (when asked for, else
    None): equality on all of R decided exactly by :func:`prove_equal_1d`, which
    looked at ``proof_points`` points (the network's kinks and the iterate's).  ``width`` is the widest hidden layer,
    ``step_widths`` the widths of one step's three layers (the same for every step).

    Example:
        >>> chk = check_refinement_network(MASKS["hat"], 2)
        >>> chk.ok, chk.hidden_layers, chk.pieces
        (True, 9, 2)
    """

    mask: tuple[Fraction, ...]
    steps: int
    ok: bool
    proved: bool | None
    proof_points: int | None
    n_points: int
    pieces: int
    width: int
    step_widths: tuple[int, ...]
    hidden_layers: int
    neurons: int
    first_mismatch: tuple[Fraction, Fraction, Fraction] | None


def refinement_sizes(net: Network, steps: int) -> tuple[int, ...]:
    """Widths of one step's three hidden layers (the first step's; all are equal).

    Example:
        >>> refinement_sizes(refinement_network(MASKS["hat"], 1), 1)
        (54, 161, 77)
    """
    return tuple(net.widths[1:4]) if steps > 0 else ()


def check_refinement_network(mask: object, steps: int, seed_bp: Sequence[object] | None = None,
                             seed_vals: Sequence[object] | None = None, n_random: int = 50,
                             rng_seed: int = 0, prove: bool = False) -> RefinementCheck:
    """Build :func:`refinement_network` and compare it exactly with
    :func:`subdivision_iterate` (the cascade identity, computed independently) at every
    breakpoint of the iterate, every piece's midpoint, outside the support and at
    ``n_random`` random rationals (drawn with ``rng_seed``); ``prove=True`` also decides
    equality on all of R (:func:`prove_equal_1d`; its cost grows like 2^k).

    Example:
        >>> chk = check_refinement_network(MASKS["cubic-bspline"], 1, prove=True)
        >>> chk.ok, chk.proved
        (True, True)
    """
    a = parse_mask(mask)
    sbp = [0, 1, 2] if seed_bp is None else seed_bp
    svals = [0, 1, 0] if seed_vals is None else seed_vals
    net = refinement_network(a, steps, sbp, svals)
    bp, vals = subdivision_iterate(a, sbp, svals, steps)
    pts = list(bp) + [(bp[i] + bp[i + 1]) / 2 for i in range(len(bp) - 1)]
    pts += [bp[0] - 1, bp[-1] + Fraction(7, 3)]
    rng = np.random.default_rng(rng_seed)
    span = bp[-1] - bp[0] + 2
    pts += [bp[0] - 1 + span * Fraction(int(v), 10007) for v in rng.integers(0, 10007, n_random)]
    Y = SparseExact(net)(pts)
    mismatch = None
    for p, y in zip(pts, Y, strict=True):
        want = evaluate_cpwl(bp, vals, p)
        if y != want:
            mismatch = (p, y, want)
            break
    proved, npf = None, None
    if prove:
        proved, npf = prove_equal_1d(net, bp, vals)
    return RefinementCheck(tuple(a), int(steps), mismatch is None, proved, npf, len(pts), len(bp) - 1,
                           max(net.widths), refinement_sizes(net, steps), net.n_hidden_layers,
                           net.n_neurons, mismatch)


def extended_forward(net: Network, X: Sequence[float] | np.ndarray) -> np.ndarray:
    """An exact 1-input ``net`` at the points ``X`` in numpy's extended precision (80-bit
    on x86): a reference for its float64 copy when exact evaluation of a deep network
    takes minutes (it carries 11 more bits through the same cancellations).

    Example:
        >>> net = Network([[[Fraction(1, 3)]], [[3]]], [[0], [0]], exact=True)
        >>> float(extended_forward(net, [1.0])[0])
        1.0
    """
    def ld(A: np.ndarray) -> np.ndarray:
        # the fixed-width layers are mostly zeros: only the nonzero entries are converted
        # (a Fraction built per entry took 40 s of a 150-step network's 57)
        flat = np.asarray(A, dtype=object).reshape(-1)
        out = np.zeros(flat.size, dtype=np.longdouble)
        for i in np.flatnonzero(flat != 0):
            v = flat[i]
            q = v if isinstance(v, Fraction) else Fraction(v)
            out[i] = np.longdouble(q.numerator) / np.longdouble(q.denominator)
        return out.reshape(np.shape(A))

    H = np.asarray(X, dtype=np.longdouble).reshape(-1, 1)
    Ws, bs = [ld(W) for W in net.weights], [ld(b) for b in net.biases]
    with np.errstate(all="ignore"):
        for W, b in zip(Ws[:-1], bs[:-1], strict=True):
            H = np.maximum(H @ W.T + b, 0)
        return (H @ Ws[-1].T + bs[-1]).ravel()
