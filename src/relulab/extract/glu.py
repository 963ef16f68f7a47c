"""Bias-free gated linear unit (GLU) blocks recovered from forward queries.

A block computes ``y = W_out (act(W_gate x) * (W_up x))`` with ``act`` one of SiLU,
GELU, ReLU.  :func:`extract_glu` recovers it constructively, stage by stage (the
multi-stage forward-query primitive of the GLU extraction abstract):

1. **gate candidates from curvature** - far from the origin SiLU and GELU act like ReLU
   and the block is a piecewise quadratic form; third finite differences along random
   great half-circles mark the gate crossings, each with its exact angle and the unit's
   output direction ``w_k`` (:mod:`relulab.extract.glu_gates`); distinct output
   directions count the units, so the width is inferred when not given;
2. **gate rows** from the gradient jump at each crossing point (``4 d + 4`` queries a
   unit), up to sign and magnitude; a row off the unit's other crossing points (found
   on later half-circles) is measured again there (:meth:`_Units.repair`);
3. **value branch** - all three activations satisfy ``act(z) - act(-z) = z``, so the
   even part of paired queries ``(f(x) + f(-x)) / 2 = sum_k w_k (g_k . x)(v_k . x) / 2``
   is free of orientation and magnitude and linear in the value rows: one linear solve
   (:mod:`relulab.extract.glu_linear`);
4. **orientation** from the odd part ``(f(x) - f(-x)) / 2`` far out (where
   ``psi(z) = act(z) + act(-z)`` is ``|z|``): one small linear solve for the signs;
5. **magnitude** (SiLU, GELU) from the odd part at scale one, where ``psi`` bends:
   Gauss-Newton over one scalar per unit;
6. a short least-squares polish from that estimate (:mod:`relulab.extract.glu_refine`),
   kept only when it lowers the training error.

Rounded outputs (measured precision coarser than ``1e-12``, e.g. a float32 model) take
a noise-aware path: the half-circles are scanned by window tests and least-squares
piece fits (:mod:`relulab.extract.glu_scan`; a four-point difference drowns in the
rounding on the fine grids wide blocks need), units measured twice merge, units no later half-circle saw are
dropped, each gate row is the median of up to five measurements; where the even part
has enough equations, Gauss-Newton on it refits gate rows, value rows and output
directions together (:func:`~relulab.extract.glu_linear.even_fit`) and units left with
a small share are dropped; units whose magnitude runs off are dropped, and the polish
(bounded by iterations) fits on 4 equations per parameter.  Outputs coarser than
``COARSE_ORACLE`` (bfloat16) hide the kinks: no crossing is sought and the result is
``partial``; with ``hidden`` given, a least-squares fit from random weights is returned,
flagged ``fallback``.

The recovered block is checked on fresh validation pairs (sampled: median and worst
relative output error) and, when the truth is known, by its parameters after aligning
permutation, orientation and the scalings the block allows.

Example:
    >>> import numpy as np
    >>> blk = random_glu(6, 4, act="silu", seed=3)
    >>> r = extract_glu(blk, 6)
    >>> r.status, r.hidden, r.hidden_inferred, r.median_rel_error < 1e-7
    ('recovered', 4, True, True)
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import is_int_at_least
from ..results import Result
from ..tolerance import TINY
from .glu_gates import Crossing, correct_rows, gate_rows, query_scaled, scan_plane
from .glu_linear import even_fit, magnitudes, orientations, value_rows
from .glu_refine import refine as refine_block
from .glu_scan import scan_plane_windows
from .oracle import BudgetExhausted, ExtractError, QueryOracle

__all__ = ["GLUBlock", "GLUResult", "extract_glu", "random_glu", "ACTIVATIONS"]

ACTIVATIONS = ("silu", "gelu", "relu")

REL_FLOOR = 1e-3  # relative errors divide by at least this x the mean output norm
EPS64 = 2.2e-16  # tol: float64 rounding, the least output noise assumed
FAR_SCALE = 1e8  # inputs this far out put SiLU / GELU gates of norm ~1 deep in their ReLU limit
FD_STEP = 1e-6  # tol: relative finite-difference step of the gradient jumps (curvature term corrected)
SAME_DIR = 1e-6  # tol: two unit directions are the same unit when 1 - |cos| is below this
NOISY_DIR = 1e4  # ... or below this x the relative output noise
NOISY_W = 1e4  # ... or below this / snr^2 of the crossing (extrapolated differences amplify the noise ~30x)
ORTHO_MAX = 1e-3  # tol: |g . x*| / |g| of a measured gate row above this: a false crossing
DEAD_UNIT = 1e-4  # a value row this small x the largest one carries no unit: a false crossing
WEAK_JUMP = 0.1  # |v . x*| / |v| below this / sqrt(d) (a 1-in-12 event): measure the unit again
UNEXPLAINED = 1e-6  # tol: an even-part fit worse than this (median relative) misses units: scan on
NOISY_FIT = 1e5  # ... or worse than this x the output noise (noisy gate rows limit the fit)
EVEN_SHARE = 0.5  # the even part solves V when V's unknowns are below this share of its equations
ROUGH_RTOL = 1e-6  # tol: value solves that only steer the next step stop at this relative residual (1e-9: same result, 1.5x the iterations)
VALUE_RTOL = 1e-11  # tol: ... and the last one here: gate rows carry ~1e-8 at best, beyond that CG iterations buy nothing (1e-14 before)
CORRECTIONS = 2  # rounds of gate-row correction and value re-solve (the second one settles)
POLISH_PAIRS = 4.0  # a noisy polish fits this many equations per parameter
FALLBACK_PAIRS = 16.0  # ... and a fit from random weights (no constructive start) this many
GOOD_FIT = 1e-6  # tol: a training error this small (median relative; 1e4 x below the sub-percent target) needs no least-squares polish
NOISY_ORACLE = 1e-12  # tol: outputs rounded coarser than this (relative) take the noise-aware path
COARSE_ORACLE = 1e-4  # ... and coarser than this no crossing is sought (bfloat16: 3e-4; 12 significand bits: 2e-5 still tried)
NOISY_MERGE = 100.0  # ... where two units merge when directions agree to NOISY_DIR x this x the noise
MERGE_MAX = 0.1  # ... but never looser (random units in d >= 16 are much further apart)
UNSEEN_PLANES = 3  # ... and a unit no later half-circle of this many saw again is dropped
MORE_ROWS = 4  # ... and each gate row is measured at this many more crossings (median)
EVEN_FIT_STEPS = 12  # Gauss-Newton steps of the noisy even-part fit (half before, half after dropping spurious units)
EVEN_FIT_CG = 50  # ... conjugate-gradient steps each (inexact Newton: enough for a descent step)
EVEN_FIT_FLOPS = 2e12  # ... and about this many flops in all (256 x 1024: 12 steps of 12; 3e12 before: 130 CPU s)
EVEN_FIT_RTOL = 1e-4  # ... stopped at this relative normal-equation residual
SPURIOUS_SHARE = 0.3  # ... a unit left with less than this x the median value row after the even fit is not one
NOT_RECOVERED = 0.05  # a median relative validation error above this (the abstract's figure for finite precision) is no recovery: partial
# ... nor one this many times above the oracle's measured noise (at least FIT_FLOOR): a
# GELU block attacked as SiLU gave 1.6e-2 on outputs good to 2e-16 and was "recovered"
FIT_NOISE_RATIO = 1e6
FIT_FLOOR = 1e-4  # tol: float64 blocks are recovered to 2e-7 at worst (256 x 1024)
# A smooth-activation block whose largest gates exceed 1 / CURVE_BELOW on typical inputs
# is validated again on CURVE_ROWS pairs of inputs that size times smaller (the bar
# raised to CURVE_NOISE_RATIO x the oracle's noise there)
CURVE_BELOW = 0.1
CURVE_ROWS = 128
CURVE_NOISE_RATIO = 100.0
POLISH_STEPS = 300  # most L-BFGS iterations of the polish (float32 64 x 256: 150 reach 6e-4)
FALLBACK_STEPS = 75  # ... and of the fallback from random weights (it stalls near 15-20 % anyway)
POLISH_FLOPS = 2e12  # ... fewer on big blocks: about this many flops in all (~25 iterations at 256 x 1024)
REPAIR_SPREAD = 100.0  # a gate row this many x the median misfit off its spare crossing points is wrong
REPAIR_TRIES = 2  # ... and is measured again at this many of its spares (the strongest)
MAGNITUDE_SPREAD = 10.0  # ... and a unit whose gate magnitude is this far from the median is dropped


def _act_np(z: np.ndarray, act: str) -> np.ndarray:
    if act == "relu":
        return np.maximum(z, 0.0)
    if act == "silu":
        from scipy.special import expit

        return z * expit(z)
    from scipy.special import erf

    return 0.5 * z * (1.0 + erf(z / math.sqrt(2.0)))


@dataclass(frozen=True)
class GLUBlock:
    """``y = W_out (act(W_gate x) * (W_up x))``; ``W_gate``, ``W_up``: (hidden, d),
    ``W_out``: (m, hidden).  Batched: ``block(X)`` with ``X`` of shape (n, d).

    Example:
        >>> b = GLUBlock(np.eye(2), np.eye(2), np.ones((1, 2)), "relu")
        >>> b(np.array([[1.0, -2.0]])).tolist()
        [[1.0]]
    """

    W_gate: np.ndarray
    W_up: np.ndarray
    W_out: np.ndarray
    act: str = "silu"

    def __post_init__(self) -> None:
        if self.act not in ACTIVATIONS:
            raise ExtractError(f"GLU activation must be one of {ACTIVATIONS}, got {self.act!r}")
        g, u, w = (np.asarray(a, dtype=float) for a in (self.W_gate, self.W_up, self.W_out))
        if g.ndim != 2 or g.shape != u.shape or w.ndim != 2 or w.shape[1] != g.shape[0]:
            raise ExtractError(f"GLU shapes do not fit: gate {g.shape}, up {u.shape}, out {w.shape}")
        object.__setattr__(self, "W_gate", g)
        object.__setattr__(self, "W_up", u)
        object.__setattr__(self, "W_out", w)

    @property
    def input_dim(self) -> int:
        return int(self.W_gate.shape[1])

    @property
    def hidden(self) -> int:
        return int(self.W_gate.shape[0])

    def __call__(self, X: Any) -> np.ndarray:
        X = np.atleast_2d(np.asarray(X, dtype=float))
        return (_act_np(X @ self.W_gate.T, self.act) * (X @ self.W_up.T)) @ self.W_out.T

    def to_dict(self) -> dict:
        return {"d": self.input_dim, "hidden": self.hidden, "outputs": int(self.W_out.shape[0]),
                "act": self.act}


def random_glu(d: int, hidden: int, m: int | None = None, act: str = "silu",
               seed: int | None = 0) -> GLUBlock:
    """A random block with the usual initial scales (rows of norm about 1).

    Example:
        >>> random_glu(3, 5).W_out.shape
        (3, 5)
    """
    rng = np.random.default_rng(seed)
    m = d if m is None else m
    return GLUBlock(rng.normal(size=(hidden, d)) / math.sqrt(d), rng.normal(size=(hidden, d)) / math.sqrt(d),
                    rng.normal(size=(m, hidden)) / math.sqrt(hidden), act)



@dataclass(frozen=True)
class GLUResult(Result):
    """What :func:`extract_glu` recovered.

    Attributes:
        block: the recovered block (None when stopped before the value branch).
        status: ``recovered`` (every stage ran, exactly as many units were found as given
            when a width was given, the time limit did not cut the polish and the median
            validation error is at most ``NOT_RECOVERED`` and ``FIT_NOISE_RATIO`` times
            the measured noise, or ``FIT_FLOOR``) or ``partial`` (the query budget
            ran out, units are missing or more than given, the time limit cut the polish,
            or the validation error is larger).
        hidden: the width of the block returned (before one, the width given or the units
            found); hidden_inferred: whether no width was given (counted from the crossings).
        queries, time: cost; stage_queries: queries per stage; stage_cpu: process
            CPU seconds per stage (the oracle's included; the polish is stage ``polish``).
        planes, grid: half-circles scanned and grid points on each.
        noise: the relative output precision assumed (measured by ``f(2x) = 4 f(x)`` of the
            even part when not given).
        refined: whether the final least-squares polish was kept.
        median_rel_error, worst_rel_error: ``|f(x) - g(x)| / |f(x)|`` on fresh validation
            pairs (sampled, not a bound); even_rel_error, odd_rel_error: the same for the
            two parts of the paired split.
        param_error: with a reference block, the largest and median relative errors of
            the gate rows and of the per-unit products ``w_k u_k^T`` after aligning units
            (permutation), and for ReLU the gate scale (moved into the product); None
            without a reference.
        message: one line.
        time_limited: the time limit stopped the polish or left it no time (``partial``).
        fallback: no unit was found (outputs too coarse) and the block is a least-squares
            fit from random weights of the given width: ``partial``, nothing identified.
        repaired: units whose gate row was off their other crossing points (the last
            round's check) and was measured again; suspect: those still off after it
            (kept: their value rows absorb what they can; the validation error shows it).

    Example:
        >>> r = extract_glu(random_glu(4, 1, act="relu"), 4, hidden=1, act="relu", budget=10)
        >>> r.status, r.block is None, r.to_dict()["status"]
        ('partial', True, 'partial')
    """

    block: GLUBlock | None
    status: str
    hidden: int | None
    hidden_inferred: bool
    queries: int
    time: float
    stage_queries: dict
    planes: int
    grid: int
    noise: float
    refined: bool
    median_rel_error: float | None
    worst_rel_error: float | None
    even_rel_error: float | None
    odd_rel_error: float | None
    param_error: dict | None
    message: str
    fallback: bool = False
    stage_cpu: dict | None = None
    repaired: int = 0
    suspect: int = 0
    time_limited: bool = False


def _curved_scale(blk: GLUBlock, X: np.ndarray) -> float | None:
    """For a smooth activation, the input size at which the block's largest gates are of
    size 1 on ``X`` (typical inputs), when that is below ``CURVE_BELOW``: at size 1 those
    gates sit where SiLU and GELU are ReLU to many digits, so a ReLU block fitted as one
    of them passed validation with gates 1e5 times too large.  None otherwise.

    Example:
        >>> blk = GLUBlock(np.array([[1e4, 0.0]]), np.eye(2)[:1], np.ones((1, 1)), "silu")
        >>> _curved_scale(blk, np.random.default_rng(0).normal(size=(64, 2))) < 1e-3
        True
    """
    if blk.act == "relu" or blk.hidden == 0:
        return None
    gate = float(np.max(np.median(np.abs(X @ np.asarray(blk.W_gate, float).T), axis=0)))
    if not gate > 1.0 / CURVE_BELOW or not math.isfinite(gate):
        return None
    return 1.0 / gate


def _rel_errors(Y: np.ndarray, P: np.ndarray) -> np.ndarray:
    """``|P - Y| / |Y|`` per row, ``|Y|`` floored at ``REL_FLOOR`` x its mean (a ReLU
    block is exactly 0 on whole regions, where a ratio would mean nothing); ``|P - Y|``
    itself where every ``Y`` is 0 (dividing by TINY printed errors of 1e299)."""
    ny = np.linalg.norm(Y, axis=1)
    floor = REL_FLOOR * float(np.mean(ny))
    return np.linalg.norm(P - Y, axis=1) / np.maximum(ny, floor if floor > 0 else 1.0)


# entries of the unit products formed at once by param_error
PRODUCT_CHUNK = 4_000_000


def param_error(block: GLUBlock, ref: GLUBlock) -> dict:
    """Parameter error of ``block`` against ``ref`` after matching units (Hungarian on the
    gate directions): relative errors of the gate rows (ReLU: of their directions, the
    scale moving into the product) and of each unit's ``w_k u_k^T``.

    Example:
        >>> b = random_glu(3, 2, act="relu", seed=1)
        >>> p = param_error(GLUBlock(2 * b.W_gate[::-1], b.W_up[::-1], b.W_out[:, ::-1] / 2, "relu"), b)
        >>> p["gate_max"] < 1e-12, p["product_max"] < 1e-12, p["matched"]
        (True, True, 2)
    """
    from scipy.optimize import linear_sum_assignment

    def units(b: GLUBlock) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        g = b.W_gate.copy()
        nrm = np.linalg.norm(g, axis=1)
        w, u = b.W_out.T.copy(), b.W_up.copy()  # unit k's product is w_k u_k^T
        if b.act == "relu":
            g = g / np.maximum(nrm, TINY)[:, None]
            w = w * nrm[:, None]
        return g, w, u

    g1, w1, u1 = units(block)
    g0, w0, u0 = units(ref)
    n0 = np.linalg.norm(g0, axis=1)
    cos = (g1 / np.maximum(np.linalg.norm(g1, axis=1), TINY)[:, None]) @ (g0 / np.maximum(n0, TINY)[:, None]).T
    rows, cols = linear_sum_assignment(-cos)
    ge = np.linalg.norm(g1[rows] - g0[cols], axis=1) / np.maximum(n0[cols], TINY)
    # ||w1 u1^T - w0 u0^T||_F per unit from the products themselves, a few units at a time
    # (PRODUCT_CHUNK entries: the (hidden, m, d) products at once are 0.5 GB at 256 x 1024).
    # The expansion through dw = w1 - w0, du = u1 - u0 cancelled: a unit's split w c, u / c
    # is free, and a block split with another c read 0.0 for errors of 1e-10 and 1.5e-4
    # for an exact rescaling.
    a1, b1, a0, b0 = w1[rows], u1[rows], w0[cols], u0[cols]
    step = max(1, PRODUCT_CHUNK // max(1, a1.shape[1] * b1.shape[1]))
    diff = np.concatenate([
        np.sqrt(np.sum((a1[i:i + step, :, None] * b1[i:i + step, None, :]
                        - a0[i:i + step, :, None] * b0[i:i + step, None, :]) ** 2, axis=(1, 2)))
        for i in range(0, len(a1), step)]) if len(a1) else np.zeros(0)
    pn = np.sqrt(np.sum(a0 * a0, 1) * np.sum(b0 * b0, 1))
    pe = diff / np.maximum(pn, TINY)
    return {"matched": int(len(rows)), "gate_max": float(ge.max()), "gate_median": float(np.median(ge)),
            "product_max": float(pe.max()), "product_median": float(np.median(pe))}


def _more_pairs(o: QueryOracle, rng: np.random.Generator, X: np.ndarray, Yp: np.ndarray,
                Yn: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Grow the paired queries (x, -x) to ``n`` Gaussian inputs: X, o(X) and o(-X), each
    asked in chunks of 4096 rows (every phase of the attack adds pairs this way)."""
    Xa = rng.normal(size=(n - X.shape[0], X.shape[1]))
    Yp = np.vstack([Yp] + [o(Xa[i:i + 4096]) for i in range(0, Xa.shape[0], 4096)])
    Yn = np.vstack([Yn] + [o(-Xa[i:i + 4096]) for i in range(0, Xa.shape[0], 4096)])
    return np.vstack([X, Xa]), Yp, Yn


def _measure_noise(o: QueryOracle, d: int, m: int, rng: np.random.Generator) -> float:
    """Relative output precision from the even part's exact homogeneity E(3x) = 9 E(x)
    (not 2: doubling is exact in binary floating point and would hide the rounding)."""
    X = rng.normal(size=(8, d))
    Y = o(np.vstack([X, -X, 3 * X, -3 * X]))
    e1, e3 = Y[:8] + Y[8:16], Y[16:24] + Y[24:]
    dev = np.linalg.norm(e3 - 9 * e1, axis=1) / np.maximum(
        np.linalg.norm(Y[16:24], axis=1) + np.linalg.norm(Y[24:], axis=1), TINY)
    return max(float(np.median(dev)) / 4.0, EPS64)


class _Units:
    """Units found so far: output and gate directions, deduplicated."""

    def __init__(self, m: int, noise: float = EPS64) -> None:
        self.m = m
        self.same = max(SAME_DIR, NOISY_DIR * noise)  # noisy outputs blur the directions
        self.W: list[np.ndarray] = []
        self.G: list[np.ndarray] = []
        self.raw: list[np.ndarray] = []
        self.x: list[np.ndarray] = []
        self.spare: list[list[Crossing]] = []
        self.step: list[float] = []
        self.first: list[Crossing] = []
        self.born: list[int] = []
        self.extra: list[list[tuple]] = []  # more (raw row, crossing point, step) per unit
        self.plane = 0
        self.repaired = 0  # units whose gate row failed the spare-crossing check (re-measured)
        self.suspect = 0  # ... and of those, still failing it after the new measurements

    def new_by_w(self, ks: list[Crossing]) -> list[Crossing]:
        if self.m < 3:  # too few outputs to tell units apart by w: the gates decide
            return ks
        out: list[Crossing] = []
        known = np.array(self.W) if self.W else np.zeros((0, self.m))
        for k in sorted(ks, key=lambda k: -k.strength):
            same = max(self.same, NOISY_W / k.snr / k.snr)  # w_hat is good to about 1 / snr
            if known.shape[0]:
                cos = np.abs(known @ k.w_hat)
                j = int(np.argmax(cos))
                if cos[j] > 1 - same:
                    self.spare[j].append(k)  # another crossing of a known unit: a spare
                    continue
            if any(abs(float(k.w_hat @ c.w_hat)) > 1 - same for c in out):
                continue
            out.append(k)
        return out

    def prune(self, V: np.ndarray) -> bool:
        """Drop units whose value row is negligible (false crossings); True if any."""
        size = np.linalg.norm(V, axis=1)
        keep = size > DEAD_UNIT * max(float(np.max(size)), TINY)
        if keep.all():
            return False
        self._keep(keep)
        return True

    def _keep(self, keep: np.ndarray) -> None:
        for name in ("W", "G", "raw", "x", "spare", "step", "first", "born", "extra"):
            setattr(self, name, [v for v, k in zip(getattr(self, name), keep, strict=True) if k])

    def remeasure(self, o: QueryOracle, V: np.ndarray, r: float, step: float) -> int:
        """Units whose crossing point is nearly orthogonal to their value row have a weak
        gradient jump: measure them again at their spare crossing best placed for ``V``."""
        rho = np.abs(np.sum(V * np.array(self.x), axis=1)) / np.maximum(np.linalg.norm(V, axis=1), TINY)
        redo, picks = [], []
        for j in np.flatnonzero(rho * math.sqrt(V.shape[1]) < WEAK_JUMP):
            if self.spare[j]:
                best = max(self.spare[j], key=lambda k: abs(float(k.x_hat @ V[j])))
                if abs(float(best.x_hat @ V[j])) > 2 * abs(float(self.x[j] @ V[j])):
                    redo.append(int(j))
                    picks.append(best)
        if picks:
            raw, _, steps = gate_rows(o, picks, r, step)
            for j, k, g, st in zip(redo, picks, raw, steps, strict=True):
                self.raw[j], self.x[j], self.step[j] = g, k.x_hat, float(st)
                self.G[j] = g / max(float(np.linalg.norm(g)), TINY)
        return len(picks)

    def repair(self, o: QueryOracle, V: np.ndarray, r: float, step: float) -> int:
        """Gate rows that are not orthogonal to their unit's other crossing points (the
        spares; a true row is orthogonal to every point of its hyperplane) are wrong -
        e.g. a difference that straddled another unit's hyperplane.  Such a unit
        (``REPAIR_SPREAD`` x the median misfit) is measured again at up to
        ``REPAIR_TRIES`` spares and keeps the row most orthogonal to all its crossing
        points.  Returns the number of rows replaced."""
        G = self.rows(V)
        pts = [np.array([self.x[j], *(c.x_hat for c in sp)]) for j, sp in enumerate(self.spare)]
        off = np.array([float(np.max(np.abs(P @ g))) for P, g in zip(pts, G, strict=True)])
        has = np.array([len(sp) > 0 for sp in self.spare])
        if not has.any():
            return 0
        bar = REPAIR_SPREAD * max(float(np.median(off[has])), EPS64)
        redo = [int(j) for j in np.flatnonzero(has & (off > bar))]
        picks, owner = [], []
        for j in redo:
            for c in sorted(self.spare[j], key=lambda c: -c.snr)[:REPAIR_TRIES]:
                picks.append(c)
                owner.append(j)
        if not picks:
            return 0
        raw, _, steps = gate_rows(o, picks, r, step)
        cand = correct_rows(raw, np.array([c.x_hat for c in picks]), V[owner], steps)
        fixed = 0
        for i, j in enumerate(owner):
            score = float(np.max(np.abs(pts[j] @ cand[i])))
            if score < off[j]:  # better than what the unit has: replace its measurement
                off[j] = score
                self.raw[j], self.x[j], self.step[j] = raw[i], picks[i].x_hat, float(steps[i])
                self.G[j] = raw[i] / max(float(np.linalg.norm(raw[i])), TINY)
                self.extra[j] = []  # the median partners were measured next to the bad row
                fixed += 1
        self.repaired = len(set(owner))
        self.suspect = int(np.sum(has & (off > bar)))  # still off after the new measurements
        return fixed

    def consolidate(self, tol: float) -> int:
        """Noisy outputs: merge units whose gate rows and output directions both agree to
        ``1 - |cos| < tol`` and whose crossing points lie within ``2 tol`` of each other's
        gate hyperplane (one unit measured twice), then drop units no later
        half-circle saw again (a true unit's hyperplane crosses every half-circle).
        Returns the number of units removed."""
        h = len(self.G)
        if h == 0:
            return 0
        Gm, Wm, Xm = np.array(self.G), np.array(self.W), np.array(self.x)
        # ... and each one's crossing point lies on the other's gate hyperplane (two
        # distinct units in few dimensions may agree in g and w by chance, rarely in this)
        on = np.abs(Gm @ Xm.T) < 2 * tol
        near = (np.abs(Gm @ Gm.T) > 1 - tol) & (np.abs(Wm @ Wm.T) > 1 - tol) & on & on.T
        keep = np.ones(h, dtype=bool)
        for j in sorted(range(h), key=lambda j: -len(self.spare[j])):
            if not keep[j]:
                continue
            for i in np.flatnonzero(near[j] & keep):
                if i != j:
                    keep[i] = False  # absorbed: its crossings are j's spares
                    self.spare[j].extend([self.first[i], *self.spare[i]])
        seen = np.array([len(sp) > 0 or self.plane - b < UNSEEN_PLANES for sp, b in zip(self.spare, self.born, strict=True)])
        keep &= seen
        self._keep(keep)
        return int(h - keep.sum())

    def measure_more(self, o: QueryOracle, r: float, step: float, k: int) -> int:
        """Measure each unit's gate row again at up to ``k`` of its spare crossings (the
        strongest) for a robust combination in :meth:`rows`.  Returns the count."""
        picks, owner = [], []
        for j, sp in enumerate(self.spare):
            done = len(self.extra[j])  # spares are only appended: the strongest k of the rest
            fresh = [c for c in sp if not any(c.x_hat is e[1] for e in self.extra[j])]
            for c in sorted(fresh, key=lambda c: -c.snr)[:max(0, k - done)]:
                picks.append(c)
                owner.append(j)
        if not picks:
            return 0
        raw, _, steps = gate_rows(o, picks, r, step)
        for j, c, g, st in zip(owner, picks, raw, steps, strict=True):
            self.extra[j].append((g, c.x_hat, float(st)))
        return len(picks)

    def rows(self, V: np.ndarray) -> np.ndarray:
        """Unit gate rows with the curvature term removed (:func:`correct_rows`), each the
        coordinate-wise median of its measurements (one bad difference, e.g. across
        another unit's hyperplane, moves a median little)."""
        G = correct_rows(np.array(self.raw), np.array(self.x), V, np.array(self.step))
        for j, ex in enumerate(self.extra):
            if not ex:
                continue
            R = correct_rows(np.array([e[0] for e in ex]), np.array([e[1] for e in ex]),
                             np.repeat(V[j:j + 1], len(ex), axis=0), np.array([e[2] for e in ex]))
            R *= np.where(R @ G[j] < 0, -1.0, 1.0)[:, None]
            g = np.median(np.vstack([G[j:j + 1], R]), axis=0)
            G[j] = g / max(float(np.linalg.norm(g)), TINY)
        return G

    def add(self, ks: list[Crossing], G: np.ndarray, steps: np.ndarray) -> int:
        added = 0
        for k, raw, st in zip(ks, G, steps, strict=True):
            g = raw / max(float(np.linalg.norm(raw)), TINY)
            dup = any(abs(float(g @ g2)) > 1 - self.same and abs(float(k.w_hat @ w2)) > 1 - self.same
                      for g2, w2 in zip(self.G, self.W, strict=True))
            if not dup:
                self.W.append(k.w_hat)
                self.G.append(g)
                self.raw.append(raw)
                self.x.append(k.x_hat)
                self.step.append(float(st))
                self.spare.append([])
                self.first.append(k)
                self.born.append(self.plane)
                self.extra.append([])
                added += 1
        return added


def extract_glu(
    oracle: Any,
    d: int,
    hidden: int | None = None,
    act: str = "silu",
    *,
    budget: int | None = None,
    noise: float | None = None,
    scale: float | None = None,
    grid: int | None = None,
    max_planes: int = 16,
    refine: bool = True,
    polish_steps: int | None = None,
    time_limit: float = 120.0,
    reference: GLUBlock | None = None,
    seed: int = 0,
) -> GLUResult:
    """Recover a bias-free GLU block from forward queries (module docstring: six stages).

    Args:
        oracle: the block as any batched callable (a :class:`GLUBlock`, a torch module,
            a function ``X -> Y``); only its outputs are used.
        d: input size.  hidden: the width (None: counted from the gate crossings).
        act: ``silu``, ``gelu`` or ``relu`` (the activation is assumed known).
        budget: most rows queried (stops with ``partial``).
        noise: relative precision of the outputs (None: measured).
        scale: how far out the ReLU-limit stages query (None: 1 for ReLU, 1e8 otherwise).
        grid: points per half-circle (None: 32 x hidden, or doubled until crossings are
            resolved).
        refine, polish_steps, time_limit: the final least-squares polish, its most L-BFGS
            iterations (None: ``POLISH_STEPS``, fewer on big blocks: about
            ``POLISH_FLOPS`` in all) and the seconds from the start of the call after which
            it does not start or stops (a wall-clock guard checked every 25 iterations: the
            iterations make the result the same on a busy machine; the earlier stages are
            not cut).  A polish the limit cut or skipped makes the result ``partial``
            (``time_limited``).
        max_planes: most half-circles scanned (an integer >= 1).
        reference: the true block, for ``param_error`` only (default: the oracle itself
            when it is a :class:`GLUBlock`).

    Example (the module docstring shows a full recovery; here the budget stops it):
        >>> r = extract_glu(random_glu(4, 1, act="relu"), 4, hidden=1, act="relu", budget=10)
        >>> r.status, r.queries <= 10
        ('partial', True)
    """
    t0 = time.monotonic()
    if act not in ACTIVATIONS:
        raise ExtractError(f"extract_glu: act must be one of {ACTIVATIONS}, got {act!r}")
    if d is None or not is_int_at_least(d, 1):
        raise ExtractError(f"extract_glu: give the input size d > 0 (an integer), got {d!r}")
    d = int(d)
    for name, v, lo in (("hidden", hidden, 1), ("polish_steps", polish_steps, 0)):
        if v is not None and not is_int_at_least(v, lo):
            raise ExtractError(f"extract_glu: {name} must be an integer >= {lo}, got {v!r}")
    for name, v in (("noise", noise), ("scale", scale)):
        if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise ExtractError(f"extract_glu: {name} must be a finite number > 0 or None, got {v!r}")
    if d < 2:
        raise ExtractError("extract_glu: d must be at least 2 (gate crossings are sought on "
                           f"half-circles of a plane of inputs), got {d}")
    if not is_int_at_least(max_planes, 1):
        raise ExtractError(f"extract_glu: max_planes must be an integer >= 1, got {max_planes!r}")
    if not (isinstance(time_limit, (int, float)) and time_limit > 0):
        raise ExtractError(f"extract_glu: time_limit must be a number > 0, got {time_limit!r}")
    if grid is not None and not is_int_at_least(grid, 16):
        raise ExtractError(f"extract_glu: grid must be an integer of at least 16 points, got {grid!r}")
    if not is_int_at_least(seed, 0):
        raise ExtractError(f"extract_glu: seed must be an integer >= 0, got {seed!r}")
    if reference is None and isinstance(oracle, GLUBlock):
        reference = oracle
    if reference is not None and not isinstance(reference, GLUBlock):
        raise ExtractError(f"extract_glu: reference must be a GLUBlock, got {type(reference).__name__}")
    if reference is not None and (reference.input_dim != d or reference.act != act):
        raise ExtractError(f"extract_glu: reference is a {reference.input_dim}-input {reference.act} "
                           f"block, expected {d} inputs and {act}")
    o = QueryOracle(oracle, d, budget)
    rng = np.random.default_rng(seed)
    r_far = float(scale) if scale is not None else (1.0 if act == "relu" else FAR_SCALE)
    stages: dict[str, int] = {}
    state: dict[str, Any] = {"planes": 0, "grid": 0, "noise": noise if noise is not None else EPS64,
                             "block": None, "refined": False, "fallback": "", "time_cut": ""}
    mark = [0]
    cpu: dict[str, float] = {}
    cpu_mark = [time.process_time()]

    def stage(name: str) -> None:
        stages[name] = stages.get(name, 0) + o.queries - mark[0]
        mark[0] = o.queries
        now = time.process_time()
        cpu[name] = round(cpu.get(name, 0.0) + now - cpu_mark[0], 3)
        cpu_mark[0] = now

    def result(status: str, msg: str, val: tuple | None = None, perr: dict | None = None) -> GLUResult:
        med, worst, ev, od = val if val is not None else (None, None, None, None)
        if state["block"] is not None:
            h = state["block"].hidden  # the width of the block returned, whatever was given
        else:
            h = hidden if hidden is not None else (len(units.G) if units.G else None)
        return GLUResult(state["block"], status, h, hidden is None and h is not None, o.queries,
                         time.monotonic() - t0, dict(stages), state["planes"], state["grid"],
                         float(state["noise"]), state["refined"], med, worst, ev, od, perr, msg,
                         bool(state["fallback"]), dict(cpu), units.repaired, units.suspect,
                         bool(state["time_cut"]))

    units = _Units(0)
    try:
        Y0 = o(rng.normal(size=(1, d)))
        m = Y0.shape[1]
        # a GLU block without biases gives exactly 0 at 0; an output bias breaks the
        # homogeneity the noise is measured by, and read as "outputs too coarse"
        f0 = float(np.linalg.norm(o(np.zeros((1, d)))))
        state["offset"] = f0 / max(float(np.linalg.norm(Y0)), TINY)
        if noise is None:
            state["noise"] = _measure_noise(o, d, m, rng)
        nz = float(state["noise"])
        units = _Units(m, nz)
        stage("setup")
        # 1-2: crossings on half-circles, gate rows from gradient jumps, until no new unit
        n_grid = int(grid) if grid is not None else (max(256, 32 * int(hidden)) if hidden else 256)
        step = FD_STEP * max(1.0, math.sqrt(nz / EPS64))
        X, Xo = np.zeros((0, d)), np.zeros((0, d))
        Yp = Yn = Oo = np.zeros((0, m))
        refinements = 0
        cg_res = 0.0
        for _ in range(max_planes):  # rounds: more planes while the even part is unexplained
            quiet = 0
            while state["planes"] < max_planes and nz <= COARSE_ORACLE:
                if nz > NOISY_ORACLE:  # rounded outputs: window tests and piece fits
                    ks, clean = scan_plane_windows(o, d, r_far, n_grid, rng, nz)
                else:
                    ks, clean = scan_plane(o, d, r_far, n_grid, rng, nz)
                if grid is None and hidden is None and clean < 0.9 and n_grid < 2**18:
                    n_grid *= 2  # crossings too dense for this grid: a finer one, same plane count
                    continue
                state["planes"] += 1
                units.plane = state["planes"]
                state["grid"] = n_grid
                new = units.new_by_w(ks)
                G, _, steps = gate_rows(o, new, r_far, step)
                if new:  # a true gate row is orthogonal to its crossing point
                    ok = np.abs(np.sum(G * np.array([k.x_hat for k in new]), axis=1)) <= \
                        ORTHO_MAX * max(1.0, math.sqrt(nz / EPS64)) * np.linalg.norm(G, axis=1)
                    new, G, steps = [k for k, f in zip(new, ok, strict=True) if f], G[ok], steps[ok]
                added = units.add(new, G, steps) if new else 0
                quiet = quiet + 1 if added == 0 else 0
                if added == 0 and grid is None and n_grid < 2**18 and refinements < 2:
                    n_grid *= 2  # crossings too close for this grid may part on a finer one
                    refinements += 1
                if hidden is not None and len(units.G) >= hidden:
                    break
                if quiet >= 2 and (hidden is None or not units.G):
                    break  # (no crossing at all on two half-circles: the outputs are too coarse)
            stage("gates")
            if nz > NOISY_ORACLE:
                units.consolidate(min(MERGE_MAX, NOISY_DIR * NOISY_MERGE * nz))
                per = (4 * d + 4) * max(len(units.G), 1)  # queries of one more row per unit
                left = o.remaining
                more = MORE_ROWS if left is None else min(MORE_ROWS, (left // 2) // per)
                units.measure_more(o, r_far, step, more)
                stage("gates")
            h = len(units.G)
            if h == 0:
                msg = (f"no gate crossing found on {state['planes']} half-circles (outputs too coarse? "
                       f"noise {nz:.1e}): no gate row, value row, orientation or magnitude identified")
                if nz > COARSE_ORACLE:
                    # the "noise" is how far the even part is from homogeneous of degree 2: the
                    # rounding of coarse outputs, or a block that is not this one (a gate or
                    # value bias keeps f(0) = 0, another gate activation); 3e-2 is no float
                    # format's rounding, so both causes are named
                    msg = (f"the even part of the outputs is not homogeneous of degree 2 (measured deviation "
                           f"{nz:.1e} above {COARSE_ORACLE:g}): the outputs are rounded too coarsely, or the "
                           f"block is not a bias-free GLU of the given activation (a gate or value bias keeps "
                           f"f(0) = 0); no gate crossing sought; no gate row, value row, orientation or "
                           f"magnitude identified")
                probe = None
                try:   # 8 more queries, on a generator of their own (the attack's is untouched)
                    probe = o(np.random.default_rng(seed + 7).normal(size=(8, d)))
                except BudgetExhausted:
                    pass
                if probe is not None and not np.any(probe):
                    # (the noise measured on outputs that are all 0 is float64's, so "too
                    # coarse" named the wrong cause, and the fallback fitted nothing)
                    return result("partial", f"the block's outputs are exactly 0 on all {o.queries} queries "
                                             "(a zero output layer?): there is nothing to identify")
                if state.get("offset", 0.0) > COARSE_ORACLE:
                    msg = (f"the block is not bias free: f(0) is {state['offset']:.1e} of an output's size, not 0 "
                           f"(an output bias, which the attack does not model, also breaks the noise "
                           f"measurement: {nz:.1e}); subtract f(0) from the oracle")
                if hidden is None or not refine:
                    return result("partial", msg + ("; give hidden= for a least-squares fallback"
                                                    if hidden is None else ""))
                state["fallback"] = msg
                break  # the least-squares fallback below
            W = np.array(units.W).T
            # 3: value rows from the even part (linear, free of orientation and magnitude)
            n_e = int(math.ceil(2.0 * h * d / m)) + 64
            if n_e > X.shape[0]:
                X, Yp, Yn = _more_pairs(o, rng, X, Yp, Yn, n_e)
            E = 0.5 * (Yp + Yn)
            # the even part fixes V when it has more equations than V unknowns; else the
            # odd part far out fixes s * V and the even part the signs s
            by_odd = h * d > EVEN_SHARE * m * d * (d + 1) / 2
            if by_odd and n_e > Xo.shape[0]:
                Xa = rng.normal(size=(n_e - Xo.shape[0], d))
                Xo = np.vstack([Xo, Xa])
                Oo = np.vstack([Oo, 0.5 * (query_scaled(o, Xa, r_far) - query_scaled(o, -Xa, r_far))])

            # rounded outputs: V solved to their noise level (the even fit or the polish
            # goes on from it); full precision: to VALUE_RTOL
            final_rtol = min(ROUGH_RTOL, max(VALUE_RTOL, nz))

            def solve(G: np.ndarray, W: np.ndarray, V0: np.ndarray | None, rough: bool = True,
                      by_odd: bool = by_odd, data: tuple = (X, E, Xo, Oo), final: float = final_rtol) -> tuple:
                # no wall-clock limit here: the value rows are the method, not a polish;
                # solves whose V only steers the next step (pruning, re-measuring, the
                # curvature correction) stop early, the last one at VALUE_RTOL
                Xs, Ys = (data[2], data[3]) if by_odd else (data[0], data[1])
                sol = value_rows(Xs, Ys, G, W, V0=V0, odd=by_odd, rtol=ROUGH_RTOL if rough else final)
                return sol.V, sol.residual

            V, cg_res = solve(np.array(units.G), W, None)
            if units.prune(V):  # false crossings get (almost) no value row: not units
                W, h = np.array(units.W).T, len(units.G)
                V, cg_res = solve(np.array(units.G), W, None)
            if units.remeasure(o, V, r_far, step):
                V, cg_res = solve(np.array(units.G), W, V)
            units.repair(o, V, r_far, step)  # the corrections below re-solve V
            # the gate rows' curvature term needs the value rows: correct, solve again
            for i in range(CORRECTIONS):
                G = units.rows(V)
                V, cg_res = solve(G, W, V, rough=i < CORRECTIONS - 1)
            if nz > NOISY_ORACLE and not by_odd and h * (2 * d + m) < EVEN_SHARE * m * d * (d + 1) / 2:
                # rounded outputs: the finite-difference gate rows are good to a few %;
                # Gauss-Newton on every even-part equation at once fits G, V and W to the
                # rounding level (the polish's pairs, fetched now)
                n_p = int(math.ceil(POLISH_PAIRS * h * (2 * d + m) / (2 * m)))
                if n_p > X.shape[0]:
                    X, Yp, Yn = _more_pairs(o, rng, X, Yp, Yn, n_p)
                    E = 0.5 * (Yp + Yn)
                # a conjugate-gradient step costs ~4 n h (d + m) flops: big blocks get fewer
                total = EVEN_FIT_FLOPS / (4.0 * X.shape[0] * h * (d + m))
                cg = int(min(EVEN_FIT_CG, max(10, total / EVEN_FIT_STEPS)))
                gn = int(min(EVEN_FIT_STEPS, max(4, total / cg))) // 2
                G, V, W, _ = even_fit(X, E, G, V, W, steps=gn, cg_iter=cg, cg_rtol=EVEN_FIT_RTOL)
                # units measured twice or made by rounding keep a small share of the even
                # part once the rest fits: dropped, and the fit continues without them
                size = np.linalg.norm(V, axis=1)
                keep = size > SPURIOUS_SHARE * float(np.median(size))
                if not keep.all():
                    units._keep(keep)
                    G, V, W, h = G[keep], V[keep], W[:, keep], int(keep.sum())
                G, V, W, _ = even_fit(X, E, G, V, W, steps=gn, cg_iter=cg, cg_rtol=EVEN_FIT_RTOL)
            stage("value")
            # 4: orientation from the other part (odd far out, or even)
            if by_odd:
                s = np.where(orientations(X, E, G, W, V, odd=False) >= 0, 1.0, -1.0)
                V = s[:, None] * V
            else:
                n_o = int(math.ceil(3.0 * h / m)) + 32
                if n_o > Xo.shape[0]:
                    Xa = rng.normal(size=(n_o - Xo.shape[0], d))
                    Xo = np.vstack([Xo, Xa])
                    Oo = np.vstack([Oo, 0.5 * (query_scaled(o, Xa, r_far) - query_scaled(o, -Xa, r_far))])
                s = np.where(orientations(Xo, Oo, G, W, V) >= 0, 1.0, -1.0)
            stage("orientation")
            fit = 0.5 * ((X @ G.T) * (X @ V.T)) @ W.T
            even_err = float(np.median(_rel_errors(E, fit)))
            if even_err <= max(UNEXPLAINED, NOISY_FIT * nz) or state["planes"] >= max_planes \
                    or (hidden is not None and h >= hidden) or cg_res > UNEXPLAINED:
                break
        if state["fallback"]:
            # nothing constructive to start from: least squares from random weights of the
            # given width (sampled quality only; no parameter is identified)
            h = int(hidden)
            blk = random_glu(d, h, m, act=act, seed=int(rng.integers(2**31)))  # not the caller's seed
            train = math.inf
        else:
            # 5: magnitude from the odd part at scale one (psi bends there)
            c = np.ones(h)
            if act != "relu":
                c, _ = magnitudes(X, 0.5 * (Yp - Yn), G, W, V, s, act)
                stage("magnitude")
            blk = GLUBlock((s * c)[:, None] * G, s[:, None] * V, W / c, act)
            if nz > NOISY_ORACLE and act != "relu":
                # a spurious unit's magnitude runs off (to 0 or 1e4 x the others) and stalls
                # the polish: such units are dropped before it
                mid = float(np.median(c))
                ok = (c > mid / MAGNITUDE_SPREAD) & (c < mid * MAGNITUDE_SPREAD)
                if not ok.all():
                    blk = GLUBlock(blk.W_gate[ok], blk.W_up[ok], blk.W_out[:, ok], act)
                    h = int(ok.sum())
            train = float(np.median(_rel_errors(np.vstack([Yp, Yn]), blk(np.vstack([X, -X])))))
        state["block"] = blk
        # 6: polish, only when the training pairs say it is needed
        if refine and train > max(GOOD_FIT, 10 * nz):
            # a noisy oracle: fit on enough pairs to average the rounding out
            per = FALLBACK_PAIRS if state["fallback"] else POLISH_PAIRS
            n_p = int(math.ceil(per * h * (2 * d + m) / (2 * m)))
            if state["fallback"]:  # no better than its start anyway: big blocks get fewer pairs
                n_p = min(n_p, max(X.shape[0], int(POLISH_FLOPS / (25 * 12.0 * h * (d + m)))))
            if n_p > X.shape[0]:
                X, Yp, Yn = _more_pairs(o, rng, X, Yp, Yn, n_p)
                stage("polish")
            left = time_limit - (time.monotonic() - t0)
            if polish_steps is None:  # an iteration costs ~12 n h (d + m) flops
                # bounded by iterations, not by the clock, for every oracle: the result and
                # its CPU time do not depend on the machine's load
                per_it = 12.0 * X.shape[0] * h * (d + m)
                n_steps = int(min(FALLBACK_STEPS if state["fallback"] else POLISH_STEPS,
                                  max(25, POLISH_FLOPS / per_it)))
            else:
                n_steps = int(polish_steps)
            if left <= 0:
                state["time_cut"] = (f"the time limit ({time_limit:g} s) was reached before the "
                                     "polish: not polished")
            else:
                pol = refine_block(blk, X, Yp, Yn, time_limit=left, steps=n_steps)
                if pol.status != "unchanged":
                    state["block"], state["refined"] = pol.block, True
                if pol.timed_out:
                    state["time_cut"] = f"the time limit ({time_limit:g} s) cut the polish short"
            stage("polish")
        blk = state["block"]
        # validation on fresh pairs
        Xv = rng.normal(size=(256, d))
        Yv = o(np.vstack([Xv, -Xv]))
        curve = None
        s_curve = _curved_scale(blk, Xv)
        if s_curve is not None:
            # and where the gates reach the activation's curved part
            Xc = s_curve * rng.normal(size=(CURVE_ROWS, d))
            curve = (s_curve, Xc, o(np.vstack([Xc, -Xc])))
        stage("validation")
    except BudgetExhausted as e:
        return result("partial", f"stopped: {e}")
    P = blk(np.vstack([Xv, -Xv]))
    nv = Xv.shape[0]
    rel = _rel_errors(Yv, P)
    ev = _rel_errors(0.5 * (Yv[:nv] + Yv[nv:]), 0.5 * (P[:nv] + P[nv:]))
    od = _rel_errors(0.5 * (Yv[:nv] - Yv[nv:]), 0.5 * (P[:nv] - P[nv:]))
    val = (float(np.median(rel)), float(np.max(rel)), float(np.median(ev)), float(np.median(od)))
    perr = param_error(blk, reference) if reference is not None else None
    h = blk.hidden
    missing = hidden is not None and h < hidden
    extra = hidden is not None and h > hidden
    # e.g. units missing, or another activation: the block does not compute f
    bar = min(NOT_RECOVERED, max(FIT_NOISE_RATIO * float(state["noise"]), FIT_FLOOR))
    off = val[0] > bar
    curved_off = None
    if curve is not None:
        s_c, Xc, Yc = curve
        # the oracle's noise relative to outputs about s^2 times smaller (a block at its
        # ReLU limit is homogeneous of degree 2); where it hides the bar, nothing is said
        bar_c = max(bar, CURVE_NOISE_RATIO * float(state["noise"]) / s_c**2)
        err_c = float(np.median(_rel_errors(Yc, blk(np.vstack([Xc, -Xc])))))
        if bar_c < NOT_RECOVERED and err_c > bar_c:
            curved_off = (s_c, err_c, bar_c)
    status = ("partial" if missing or extra or state["fallback"] or off or state["time_cut"]
              or curved_off else "recovered")
    msg = (f"GLU {d}x{h} ({act}) from {o.queries} queries: median relative validation error "
           f"{val[0]:.3g}, worst {val[1]:.3g} (sampled)")
    if state["fallback"]:
        msg = (f"{state['fallback']}; fallback: least-squares fit from random weights (width {h} given), "
               f"median relative validation error {val[0]:.3g}, worst {val[1]:.3g} (sampled) from {o.queries} queries")
    if missing:
        msg += f"; only {h} of {hidden} units found"
    if extra:
        msg += (f"; {h} units found where hidden={hidden} was given (the width given is wrong, "
                "or a unit is spurious)")
    if state["time_cut"]:
        msg += f"; {state['time_cut']} (partial)"
    if off and not state["fallback"]:
        msg += (f"; not recovered: median validation error above {bar:.3g} (min of {NOT_RECOVERED:g} and "
                f"{FIT_NOISE_RATIO:g} x the measured noise): units missing or wrong, or another activation")
    if curved_off is not None and not off:
        msg += (f"; not recovered: on inputs of size {curved_off[0]:.3g}, where the recovered gates "
                f"reach the {act} curve, the median relative error is {curved_off[1]:.3g} (above "
                f"{curved_off[2]:.3g}): gates of {1.0 / curved_off[0]:.3g} at inputs of size 1 "
                f"are where {act} is nearly ReLU, so they are not identified there (or the block "
                "has another activation, ReLU say)")
    if perr is not None and perr["matched"] < reference.hidden:
        # a reference unit with no recovered unit: a unit whose output is 1e-4 of the
        # others' passed the median validation bar ("recovered", width inferred 2 of 3)
        status = "partial"
        msg += f"; only {perr['matched']} of the reference's {reference.hidden} units matched"
    elif status == "recovered" and hidden is None and val[0] > FIT_NOISE_RATIO * float(state["noise"]):
        msg += (f"; the validation error is {val[0] / max(float(state['noise']), TINY):.2g} x the "
                "measured noise (under the floor of the bar): a unit whose outputs are about that "
                "small next to the others' may be missing from the inferred width")
    if units.repaired:
        msg += (f"; {units.repaired} gate rows off their spare crossings measured again"
                f" ({units.suspect} still off)")
    if cg_res > UNEXPLAINED:
        msg += f"; value solve residual {cg_res:.1e}"
    return result(status, msg, val, perr)
