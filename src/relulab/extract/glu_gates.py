"""Gate directions of a bias-free GLU block from forward queries (stage 1 and 2 of
:func:`relulab.extract.extract_glu`).

Far from the origin (inputs scaled by a large ``r``) SiLU and GELU act like ReLU, and a
ReLU-gated block ``sum_k w_k relu(g_k . x)(u_k . x)`` is a *piecewise quadratic form*:
between the gate hyperplanes ``g_k . x = 0`` it is ``x^T H x / 2``.  Two stages use that:

* **curvature along great half-circles** (:func:`scan_plane`): on a random plane the
  block restricted to ``r (cos t v1 + sin t v2)`` is, piece by piece, in the span of
  ``1, cos 2t, sin 2t``; a third finite difference of that span
  (``q[j+3] - (1 + 2 cos 2h)(q[j+2] - q[j+1]) - q[j]``) vanishes on a piece and not
  across a gate, so it marks the gate crossings.  Across one crossing the two pieces
  differ by ``w_k (g_k . x)(u_k . x)``: an output vector ``w_k`` times a scalar whose root
  between the two grid points is the exact crossing angle (the other root belongs to the
  value branch ``u_k``).  Crossings are told apart by their output direction ``w_k``.
* **gradient jumps** (:func:`gate_rows`): at the crossing point ``x*`` the gradient jumps
  by ``w_k (u_k . x*) g_k``; one-sided differences along every axis on both sides, each
  extrapolated to ``x*`` from two points of its piece (the gradient is linear on a
  piece), give the gate row ``g_k`` up to scale and sign.

Example:
    >>> import numpy as np
    >>> from relulab.extract import random_glu
    >>> from relulab.extract.oracle import QueryOracle
    >>> blk = random_glu(5, 3, act="relu", seed=1)
    >>> o = QueryOracle(blk, 5)
    >>> ks, _ = scan_plane(o, 5, 1.0, 512, np.random.default_rng(0), 1e-9)
    >>> sorted(round(float(abs(k.w_hat @ blk.W_out[:, 0]) / np.linalg.norm(blk.W_out[:, 0])), 6)
    ...        for k in ks)[-1]
    1.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..tolerance import TINY
from .oracle import QueryOracle

__all__ = ["Crossing", "scan_plane", "gate_rows", "correct_rows", "query_scaled"]

RANK1_SLACK = 1e3  # a crossing's difference vectors are parallel when s2 / s1 < this x the noise
FLOOR_SHARE = 0.1  # the output scale of a point is at least this x the mean over its circle
CLEAN_SLACK = 300.0  # a four-point window is on one piece when its third difference is below this x the noise
SIGNAL = 1e3  # a crossing's difference must exceed this x the noise (else rounding made it)
STEP_CAP = 0.05  # a difference step stays below this x the distance to the crossing
CHUNK = 8192  # rows per oracle call: memory of one batch stays below ~20 MB at d = 256


@dataclass(frozen=True)
class Crossing:
    """One gate crossing found on a half-circle.

    Attributes:
        x_hat: unit vector on the gate hyperplane (in the plane), t_hat: the unit tangent.
        w_hat: unit output direction of the unit that switches (sign arbitrary).
        gap_left, gap_right: angles from the crossing to the ends of the pieces known
            to be free of other crossings.
        strength: ``|d/dt|`` of the difference at the root (larger: better conditioned).
        snr: size of the difference over the output noise (``w_hat`` is good to ~1/snr).

    Example:
        >>> Crossing(np.ones(2), np.ones(2), np.ones(1), 0.1, 0.1, 1.0, 1e6).gap_left
        0.1
    """

    x_hat: np.ndarray
    t_hat: np.ndarray
    w_hat: np.ndarray
    gap_left: float
    gap_right: float
    strength: float
    snr: float = math.inf


def query_scaled(o: QueryOracle, X: np.ndarray, r: float) -> np.ndarray:
    """``o(r X) / r^2`` in chunks (the ReLU-limit view of the block at scale ``r``).

    Example:
        >>> o = QueryOracle(lambda X: (X ** 2).sum(1, keepdims=True), 2)
        >>> query_scaled(o, np.ones((3, 2)), 10.0).ravel().tolist()
        [2.0, 2.0, 2.0]
    """
    out = [o(r * X[i:i + CHUNK]) for i in range(0, X.shape[0], CHUNK)]
    return np.vstack(out) / (r * r)


def _trig_root(q: np.ndarray, ang: np.ndarray, lo: float, hi: float) -> float | None:
    """The single root in ``(lo, hi)`` of the trig quadratic through samples ``q`` at angles
    ``ang`` (local angles, least squares), or None when there is not exactly one."""
    B = np.stack([np.cos(ang) ** 2, np.cos(ang) * np.sin(ang), np.sin(ang) ** 2], axis=1)
    A, Bc, C = np.linalg.lstsq(B, q, rcond=None)[0]
    # A cos^2 + B cos sin + C sin^2 = 0 <=> C t^2 + B t + A = 0 with t = tan(angle)
    roots = np.roots([C, Bc, A]) if abs(C) > TINY * (abs(A) + abs(Bc)) else np.array([-A / Bc])
    inside = [math.atan(float(t.real)) for t in roots
              if abs(t.imag) <= TINY + 1e-9 * abs(t.real) and lo < math.atan(float(t.real)) < hi]  # tol: a real root
    return inside[0] if len(inside) == 1 else None


def scan_plane(o: QueryOracle, d: int, r: float, n: int, rng: np.random.Generator,
               noise: float, reach: int = 0, plane: tuple | None = None) -> tuple[list[Crossing], float]:
    """Gate crossings on the half-circle ``r (cos t v1 + sin t v2)``, ``t`` in ``[0, pi)``
    on ``n`` grid angles, of a random plane (see the module docstring).  ``noise`` is the
    relative precision of the outputs; crossings closer than four grid steps to another
    one are skipped (another plane finds them); ``reach`` lets a crossing's pieces extend
    up to that many more clean grid steps; ``plane`` = ``(v1, v2, Y)`` reuses a half-circle
    already queried (no query).  Returns the crossings and the fraction of
    four-point windows free of crossings (low: the grid is too coarse for the width).

    Example:
        >>> from relulab.extract import random_glu
        >>> blk = random_glu(4, 2, act="relu", seed=0)
        >>> ks, clean = scan_plane(QueryOracle(blk, 4), 4, 1.0, 256, np.random.default_rng(1), 1e-9)
        >>> len(ks) <= 2, clean > 0.9
        (True, True)
    """
    h = math.pi / n
    th = h * np.arange(n)
    if plane is None:
        V = np.linalg.qr(rng.normal(size=(d, 2)))[0]
        v1, v2 = V[:, 0], V[:, 1]
        P = np.cos(th)[:, None] * v1 + np.sin(th)[:, None] * v2
        Y = query_scaled(o, P, r)
    else:
        v1, v2, Y = plane
    c = 1.0 + 2.0 * math.cos(2.0 * h)
    res = Y[3:] - c * (Y[2:-1] - Y[1:-2]) - Y[:-3]  # res[j]: points j..j+3 on one piece?
    scale = np.linalg.norm(Y, axis=1)
    # rounding is relative to the terms that cancel, not to |f|: floor the scale at a
    # fraction of the circle's mean output
    scale = np.maximum(scale, FLOOR_SHARE * float(np.mean(scale)) + TINY)
    floor = noise * np.maximum(scale[3:], scale[:-3]) * CLEAN_SLACK
    clean = np.linalg.norm(res, axis=1) <= floor
    out: list[Crossing] = []
    for i in range(3, n - 5):
        # the crossing lies in (t_i, t_i+1): pieces i-3..i and i+1..i+4 are clean, i-2..i+1 not
        if not (clean[i - 3] and clean[i + 1]) or clean[i - 2]:
            continue
        L1 = c * (Y[i] - Y[i - 1]) + Y[i - 2]          # left piece continued to t_i+1
        L2 = c * (L1 - Y[i]) + Y[i - 1]                # ... and to t_i+2
        R0 = c * (Y[i + 1] - Y[i + 2]) + Y[i + 3]      # right piece continued back to t_i
        Rm = c * (R0 - Y[i + 1]) + Y[i + 2]            # ... and to t_i-1
        D = np.stack([Rm - Y[i - 1], R0 - Y[i], Y[i + 1] - L1, Y[i + 2] - L2])
        U, s, Wt = np.linalg.svd(D, full_matrices=False)
        if s[0] <= SIGNAL * noise * max(scale[i], TINY) or (len(s) > 1 and s[1] > RANK1_SLACK * noise * max(scale[i], TINY) + 1e-12 * s[0]):  # tol: rank one
            continue
        q = U[:, 0] * s[0]
        root = _trig_root(q, h * np.array([-1.0, 0.0, 1.0, 2.0]), 0.0, h)
        if root is None:
            continue
        tg = th[i] + root
        x_hat = math.cos(tg) * v1 + math.sin(tg) * v2
        t_hat = -math.sin(tg) * v1 + math.cos(tg) * v2
        slope = abs(q[2] - q[1]) / h
        snr = float(s[0] / max(noise * scale[i], TINY))
        # with ``reach`` the pieces extend as far as their windows stay clean, up to that
        # many grid steps more (noisy outputs want long difference steps)
        lo, hi = i - 3, i + 1
        while reach and lo > 0 and clean[lo - 1] and i - lo < reach:
            lo -= 1
        while reach and hi + 1 < clean.size and clean[hi + 1] and hi - i < reach:
            hi += 1
        out.append(Crossing(x_hat, t_hat, Wt[0], tg - th[lo], th[min(hi + 3, n - 1)] - tg, float(slope), snr))
    return out, float(np.mean(clean))


def gate_rows(o: QueryOracle, crossings: list[Crossing], r: float, step: float,
              batch: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """Gate rows (sign and scale arbitrary), a rank-one residual and the step used per
    crossing, from
    the gradient jump at each crossing point (module docstring).  ``step`` is the
    finite-difference step relative to ``r`` (capped inside the crossing's pieces);
    ``4 d + 4`` queries per crossing.

    A row is ``c (g . e_j) ((u . x*) + step (u . e_j))``: the second term is the
    one-sided differences' curvature; :func:`correct_rows` removes it once the value
    rows ``u`` are known.

    Example:
        >>> from relulab.extract import random_glu
        >>> blk = random_glu(4, 1, act="relu", seed=2)
        >>> o = QueryOracle(blk, 4)
        >>> ks, _ = scan_plane(o, 4, 1.0, 256, np.random.default_rng(0), 1e-9)
        >>> G, res, steps = gate_rows(o, ks[:1], 1.0, 1e-7)
        >>> g = blk.W_gate[0] / np.linalg.norm(blk.W_gate[0])
        >>> bool(abs(abs(G[0] @ g) / np.linalg.norm(G[0]) - 1) < 1e-9)
        True
    """
    if not crossings:
        return np.zeros((0, 0)), np.zeros(0), np.zeros(0)
    d = crossings[0].x_hat.size
    E = np.eye(d)
    rows, resid, steps = [], [], []
    for b0 in range(0, len(crossings), batch):
        chunk = crossings[b0:b0 + batch]
        pts = []
        for k in chunk:
            eR = math.tan(0.45 * k.gap_right)   # x* + 2 eta t stays inside the clean piece
            eL = math.tan(0.45 * k.gap_left)
            st = min(step, STEP_CAP * min(eR, eL))  # coarse outputs want long steps: not past the piece
            bases = [k.x_hat + eR * k.t_hat, k.x_hat + 2 * eR * k.t_hat,
                     k.x_hat - eL * k.t_hat, k.x_hat - 2 * eL * k.t_hat]
            pts.append(np.vstack([np.vstack([b, b + st * E]) for b in bases]))
            steps.append(st)
        Y = query_scaled(o, np.vstack(pts), r)
        per = 4 * (d + 1)
        for j, k in enumerate(chunk):
            Z = Y[j * per:(j + 1) * per].reshape(4, d + 1, -1)
            grad = (Z[:, 1:, :] - Z[:, :1, :]) / steps[b0 + j]         # (4, d, m): one-sided slopes
            jump = (2 * grad[0] - grad[1]) - (2 * grad[2] - grad[3])  # extrapolated to x*
            g = jump @ k.w_hat
            rows.append(g)
            resid.append(float(np.linalg.norm(jump - np.outer(g, k.w_hat)) / max(np.linalg.norm(jump), TINY)))
    return np.array(rows), np.array(resid), np.array(steps)


def correct_rows(raw: np.ndarray, x_hat: np.ndarray, V: np.ndarray, step: Any) -> np.ndarray:
    """Unit gate rows from :func:`gate_rows`' raw rows with the curvature term removed:
    ``g_j ~ raw_j / ((v . x*) + step v_j)`` for the value rows ``V`` (any scale) and the
    steps (one, or one per row).

    Example:
        >>> g, u, x = np.array([[0.6, 0.8]]), np.array([[1.0, 2.0]]), np.array([[0.8, -0.6]])
        >>> raw = g * ((u @ x.T) + 0.1 * u)
        >>> np.round(correct_rows(raw, x, u, 0.1), 12).tolist()  # the sign of raw is kept
        [[-0.6, -0.8]]
    """
    den = np.sum(V * x_hat, axis=1, keepdims=True) + np.reshape(step, (-1, 1)) * V
    den = np.where(np.abs(den) > TINY, den, TINY)
    G = raw / den
    G /= np.maximum(np.linalg.norm(G, axis=1, keepdims=True), TINY)
    ref = raw / np.maximum(np.linalg.norm(raw, axis=1, keepdims=True), TINY)
    return G * np.where(np.sum(G * ref, axis=1, keepdims=True) < 0, -1.0, 1.0)
