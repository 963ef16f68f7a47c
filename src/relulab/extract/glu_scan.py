"""Gate crossings on a half-circle from *rounded* outputs (the noise-aware stage 1 of
:func:`relulab.extract.extract_glu`).

:func:`relulab.extract.glu_gates.scan_plane` tells pieces apart by a third difference
over four grid points; a kink changes that difference by about ``slope x step``, so on a
grid fine enough for a wide block (1,024 units need ~32 points per unit) a float32
oracle's rounding hides most crossings, and on a coarser grid they crowd.  Here the
grid stays fine and the statistics grow instead:

* **window test** - on every window of ``L`` consecutive grid points the outputs are
  projected off the span of ``cos^2, cos sin, sin^2`` (one projector for all windows:
  the span is rotation invariant); the residual norm over the local output scale is
  noise alone on a piece (its median over the circle measures the noise, independent
  of what the caller assumed) and grows with any kink inside;
* **segmentation** - maximal runs of clean windows are pieces; two runs separated by
  at most ``L - 1`` dirty windows hold one crossing between them (more: skipped);
* **piece fits** - each side's trig quadratic is fitted by least squares on up to
  ``PIECE_MAX`` points; the difference of the two fits is ``w_k (g_k.x)(u_k.x)``: rank
  one, its output direction ``w_k`` and its root between the pieces the crossing
  angle, each to the fit's precision (noise / sqrt(points)) instead of a four-point
  extrapolation's (noise x 30).

Example:
    >>> import numpy as np
    >>> from relulab.extract import random_glu
    >>> from relulab.extract.oracle import QueryOracle
    >>> blk = random_glu(6, 8, act="relu", seed=1)
    >>> f = lambda X: np.float32(blk(np.float32(X)))  # outputs rounded to float32
    >>> ks, clean = scan_plane_windows(QueryOracle(f, 6), 6, 1.0, 1024, np.random.default_rng(0))
    >>> g = blk.W_gate / np.linalg.norm(blk.W_gate, axis=1, keepdims=True)
    >>> len(ks) >= 4, max(float(np.min(np.abs(g @ k.x_hat))) for k in ks) < 1e-4
    (True, True)
"""

from __future__ import annotations

import math

import numpy as np

from ..tolerance import TINY
from .glu_gates import FLOOR_SHARE, Crossing, query_scaled, scan_plane
from .oracle import QueryOracle

__all__ = ["scan_plane_windows", "trig_roots"]

WINDOW = 12  # grid points of the window test (residual degrees of freedom: WINDOW - 3 per output)
DIRTY = 1.15  # a window whose residual exceeds this x the local median holds a kink (clean windows: < 1.09 at 256 x 1024 float32;
#   with (WINDOW - 3) x m degrees of freedom the noise residual is sharply concentrated) ...
DIRTY_Z = 5.0  # ... or this many of the noise norm's relative deviations 1 / sqrt(2 dof) when outputs are few
LOCAL = 257  # windows of the running median that measures the local noise level
PIECE_MAX = 48  # most grid points of a piece fitted on each side of a crossing
RANK1_MAX = 0.25  # the two fits' difference is rank one: s2 / s1 below this
SNR_MIN = 8.0  # ... and stands this far above the fit noise (else rounding made it)
SNR_TO_W = math.sqrt(1e3)  # the scan's snr is reported x this (Crossing.snr: w_hat good to ~NOISY_W / snr^2 in 1 - cos)
WINDOW_CHUNK = 4096  # windows per block of the residual computation (memory ~ chunk x m x WINDOW)


def trig_roots(coef: np.ndarray, lo: float, hi: float) -> list[float]:
    """Roots in ``(lo, hi)`` (angles in ``(-pi/2, pi/2)``) of
    ``a cos^2 + b cos sin + c sin^2`` for ``coef = (a, b, c)``.

    Example:
        >>> [round(t, 12) for t in trig_roots(np.array([-1.0, 0.0, 3.0]), -1.0, 1.0)]  # 3 tan^2 = 1
        [-0.523598775598, 0.523598775598]
    """
    a, b, c = (float(v) for v in coef)
    # a cos^2 + b cos sin + c sin^2 = 0  <=>  c t^2 + b t + a = 0 with t = tan(angle)
    if abs(c) > TINY * (abs(a) + abs(b)):
        roots = np.roots([c, b, a])
    elif abs(b) > TINY:
        roots = np.array([-a / b])
    else:
        return []
    out = []
    for t in roots:
        if abs(t.imag) <= TINY + 1e-9 * abs(t.real):  # tol: a real root
            ang = math.atan(float(t.real))
            if lo < ang < hi:
                out.append(ang)
    return out


def _basis(ang: np.ndarray) -> np.ndarray:
    c, s = np.cos(ang), np.sin(ang)
    return np.stack([c * c, c * s, s * s], axis=1)


def _window_residuals(Y: np.ndarray, h: float, L: int) -> np.ndarray:
    """``|| Q^T Y[j:j+L] ||`` for every window ``j``, ``Q`` an orthonormal basis of the
    complement of the trig span on ``L`` points ``h`` apart."""
    U = np.linalg.svd(_basis(h * np.arange(L)), full_matrices=True)[0]
    Q = U[:, 3:]                                            # (L, L - 3)
    n = Y.shape[0] - L + 1
    out = np.empty(n)
    for j0 in range(0, n, WINDOW_CHUNK):
        j1 = min(n, j0 + WINDOW_CHUNK)
        # windows j0..j1-1 as a strided view: (j1 - j0, m, L)
        win = np.lib.stride_tricks.sliding_window_view(Y[j0:j1 + L - 1], L, axis=0)
        R = np.einsum("jml,lk->jmk", win, Q, optimize=True)
        out[j0:j1] = np.sqrt(np.einsum("jmk,jmk->j", R, R))
    return out


def _runs(flags: np.ndarray) -> list[tuple[int, int]]:
    """Maximal runs ``(first, last)`` of True in ``flags``."""
    f = np.concatenate([[False], flags, [False]]).astype(np.int8)
    dif = np.diff(f)
    starts, ends = np.flatnonzero(dif == 1), np.flatnonzero(dif == -1) - 1
    return list(zip(starts.tolist(), ends.tolist(), strict=True))


def scan_plane_windows(o: QueryOracle, d: int, r: float, n: int, rng: np.random.Generator,
                       noise: float | None = None) -> tuple[list[Crossing], float]:
    """Gate crossings on the half-circle ``r (cos t v1 + sin t v2)`` of a random plane on
    ``n`` grid angles, by window tests and piece fits (module docstring); the output
    noise is measured on the circle itself.  With ``noise`` (the relative output
    precision) the four-point scan of :func:`~relulab.extract.glu_gates.scan_plane` also
    runs on the same samples and adds the crossings the window test left (strong kinks
    between crowded neighbours; few outputs make the window test weak).  Returns the
    crossings and the estimated fraction of four-point windows free of crossings (low:
    the grid is too coarse; the smaller of the two scans' estimates).

    Example:
        >>> from relulab.extract import random_glu
        >>> blk = random_glu(4, 2, act="relu", seed=0)
        >>> ks, clean = scan_plane_windows(QueryOracle(blk, 4), 4, 1.0, 512, np.random.default_rng(1))
        >>> len(ks) <= 2, clean > 0.9
        (True, True)
    """
    V = np.linalg.qr(rng.normal(size=(d, 2)))[0]
    v1, v2 = V[:, 0], V[:, 1]
    h = math.pi / n
    th = h * np.arange(n)
    P = np.cos(th)[:, None] * v1 + np.sin(th)[:, None] * v2
    Y = query_scaled(o, P, r)
    L = WINDOW
    scale = np.linalg.norm(Y, axis=1)
    scale = np.maximum(scale, FLOOR_SHARE * float(np.mean(scale)) + TINY)
    wscale = np.maximum.reduce([scale[i:i + n - L + 1] for i in range(0, L, L - 1)])
    from scipy.ndimage import median_filter

    rel = _window_residuals(Y, h, L) / wscale
    base = float(np.median(rel))
    local = np.maximum(median_filter(rel, size=min(LOCAL, rel.size), mode="nearest"), TINY)
    dirty = max(DIRTY, 1.0 + DIRTY_Z / math.sqrt(2.0 * (L - 3) * Y.shape[1]))
    clean = rel <= dirty * local
    runs = _runs(clean)
    out: list[Crossing] = []
    cuts = 0
    for (a1, b1), (a2, b2) in zip(runs[:-1], runs[1:], strict=True):
        cuts += 1
        if a2 - b1 > L:  # more dirty windows than one crossing makes: two or more
            continue
        pL, pR = b1 + L - 1, a2  # last point of the left piece, first of the right one
        lo_pt, hi_pt = (pL, pR) if pR == pL + 1 else (pR - 1, pL + 1)  # the crossing lies between
        left = np.arange(max(a1, lo_pt - PIECE_MAX + 1), lo_pt + 1)
        right = np.arange(hi_pt, min(b2 + L - 1, hi_pt + PIECE_MAX - 1) + 1)
        if left.size < 4 or right.size < 4:
            continue
        tc = 0.5 * (th[lo_pt] + th[hi_pt])
        BL, BR = _basis(th[left] - tc), _basis(th[right] - tc)
        CL, resL = np.linalg.lstsq(BL, Y[left], rcond=None)[:2]
        CR, resR = np.linalg.lstsq(BR, Y[right], rcond=None)[:2]
        m = Y.shape[1]
        dof = max(left.size + right.size - 6, 1) * m
        sig = math.sqrt((float(np.sum(resL)) + float(np.sum(resR))) / dof) if resL.size and resR.size else 0.0
        sig = max(sig, base * float(scale[lo_pt]) / math.sqrt(max(L - 3, 1) * m))
        # at the crossing (local angle 0) a fit's value is its cos^2 coefficient and its
        # slope its cos sin one; the curvature (sin^2) coefficient is the noisiest over a
        # short piece and is not used: the slope jump J = w_k s is the unit's output
        # direction, the value gap D0 = w_k s (tc - t*) places the crossing
        iL, iR = np.linalg.inv(BL.T @ BL), np.linalg.inv(BR.T @ BR)
        J = CR[1] - CL[1]
        D0 = CR[0] - CL[0]
        jn = float(np.linalg.norm(J))
        snr = jn / max(sig * math.sqrt(m * (iL[1, 1] + iR[1, 1])), TINY)
        if snr < SNR_MIN:
            continue
        w_hat = J / jn
        off = float(w_hat @ D0)
        # the value gap is parallel to the slope jump (rank one) when it stands out of its noise
        gap_noise = sig * math.sqrt(m * (iL[0, 0] + iR[0, 0]))
        if float(np.linalg.norm(D0 - off * w_hat)) > RANK1_MAX * abs(off) + 3.0 * gap_noise:
            continue
        t0 = -off / jn
        if not (th[lo_pt] - tc - 0.5 * h < t0 < th[hi_pt] - tc + 0.5 * h):
            continue
        tg = tc + t0
        x_hat = math.cos(tg) * v1 + math.sin(tg) * v2
        t_hat = -math.sin(tg) * v1 + math.cos(tg) * v2
        out.append(Crossing(x_hat, t_hat, w_hat, max(tg - th[left[0]], h), max(th[right[-1]] - tg, h),
                            jn, snr * SNR_TO_W))
    clean_w = max(0.0, 1.0 - 3.0 * cuts / n)
    if noise is None:
        return out, clean_w
    ks4, clean4 = scan_plane(o, d, r, n, rng, noise, plane=(v1, v2, Y))
    have = np.array([math.atan2(k.x_hat @ v2, k.x_hat @ v1) % math.pi for k in out])
    for k in ks4:
        t = math.atan2(k.x_hat @ v2, k.x_hat @ v1) % math.pi
        dist = np.abs(have - t) if have.size else np.array([math.inf])
        if np.min(np.minimum(dist, math.pi - dist)) > 2 * h:  # not found by the window test
            out.append(k)
    return out, min(clean_w, clean4)
