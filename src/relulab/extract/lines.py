"""Kinks of a piecewise-linear function of one variable, located exactly.

On a line ``x(t) = x0 + t r`` a ReLU network is continuous and piecewise linear in ``t``.
Between two kinks it is a straight line, so two queries inside a piece give that piece
exactly (up to the rounding of the oracle), and two adjacent pieces intersect exactly at
the kink between them: no bisection down to machine precision is needed.

:class:`LineSearch` does this in two passes:

1. *explore*: on an interval, the lines through the two ends (two queries each) are
   intersected; one more query at the intersection confirms a single kink (the value
   lies on both lines); otherwise the interval is halved and each half explored;
2. *refine*: the pieces between the kinks found are measured again away from their ends
   (at 1/4, 1/2 and 3/4: the middle one checks that the piece really is linear, else it
   is explored again) and adjacent pieces are intersected: the kinks to rounding error.

Example:
    >>> import numpy as np
    >>> g = lambda t: np.abs(t - 0.3) + 2 * np.maximum(t + 0.1, 0.0)
    >>> LineSearch(g).kinks(-1.0, 1.0).round(12).tolist()
    [-0.1, 0.3]
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..tolerance import ROUNDOFF
from .oracle import ExtractError

__all__ = ["LineSearch", "DETECT_RTOL"]

# A piece counts as linear when four of its values lie on one line to this relative
# tolerance: far above float64 rounding (1e-16) so that rounding never looks like a kink,
# far below the jump of any kink worth finding.
DETECT_RTOL = 1e-9  # tol: see the comment above
# Where a kink is confirmed: this fraction of the interval to each side of it.  Small, so
# that two kinks closer than this to each other are the only ones that can pass as one.
_EPS_FRAC = 1e-4
# The refine pass checks each kink again at this factor closer in, and again, while its
# jump over the distance stays above the tolerance.
_CLOSER = 0.1
# Two kinks closer than this fraction of the interval are one (seen from both sides).
DEDUP_RTOL = 1e-9  # tol: far below _EPS_FRAC, above the rounding of the located kinks


class LineSearch:
    """Exact kink location for a scalar function ``g(t)`` of one variable (vectorised:
    ``g`` takes an array of ``t`` and returns an array of values).

    Args:
        g: the function; every call is a batch of queries.
        rtol: relative tolerance of the linearity checks (``DETECT_RTOL``).
        atol: absolute tolerance added to it (the oracle's output resolution, e.g.
            ``10**-k`` when outputs are rounded to ``k`` decimals).

    Example:
        >>> g = lambda t: np.maximum(t - 0.25, 0.0) - 3 * np.maximum(-t, 0.0)
        >>> LineSearch(g).kinks(-1.0, 1.0).round(12).tolist()
        [0.0, 0.25]
    """

    def __init__(self, g: Callable[[np.ndarray], np.ndarray], rtol: float = DETECT_RTOL,
                 atol: float = 0.0) -> None:
        for name, v in (("rtol", rtol), ("atol", atol)):
            # a negative or NaN tolerance fails every linearity test: the search halved
            # every branch to depth 60 and never returned
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                    or not (np.isfinite(v) and v >= 0):
                raise ExtractError(f"LineSearch: {name} must be a finite number >= 0, got {v!r}")
        self.g = g
        self.rtol = float(rtol)
        self.atol = float(atol)
        self.unresolved = 0  # intervals shorter than the resolution that still bend

    def _vals(self, ts: list[float]) -> np.ndarray:
        t = np.asarray(ts, dtype=np.float64)
        v = np.asarray(self.g(t), dtype=np.float64).reshape(-1)
        if v.size != t.size:
            raise ExtractError(f"LineSearch: g returned {v.size} values for {t.size} points; it must "
                               "return one value per point of its array argument")
        if not np.all(np.isfinite(v)):
            # a NaN fails every linearity test, so the search would halve to depth 60
            i = int(np.argmin(np.isfinite(v)))
            where = f" at t = {t[i]:g}"
            raise ExtractError(f"LineSearch: g returned {v[i]}{where}; the function must be finite "
                               "on the interval")
        return v

    def _tol(self, *scale: float) -> float:
        # Lines through two values a sixteenth of an interval apart, extrapolated over
        # it, carry up to ~32 times the output resolution: below that nothing bends.
        return self.rtol * (1.0 + max(abs(s) for s in scale)) + 40.0 * self.atol

    # ----------------------------------------------------------------- explore
    def _explore(self, a: float, b: float, ga: float, gb: float, min_len: float,
                 out: list[float], depth: int = 0) -> None:
        L = b - a
        if L <= min_len or depth > 60:
            self.unresolved += 1
            out.append(0.5 * (a + b))
            return
        dl = L / 16.0
        ga2, gb2, gm = self._vals([a + dl, b - dl, a + 0.5 * L])
        sa = (ga2 - ga) / dl
        sb = (gb - gb2) / dl
        tol = self._tol(ga, gb, sa * L, sb * L)
        if (abs(ga + sa * L - gb) <= tol and abs(ga + sa * (L - dl) - gb2) <= tol
                and abs(ga + sa * 0.5 * L - gm) <= tol):
            return  # four points and the middle on one line: a linear piece
        if abs(sa - sb) * L > tol:
            t = a + (gb - ga - sb * L) / (sa - sb)
            if a + dl < t < b - dl:
                # Just left of t the function must follow line A, just right line B:
                # the value at t alone would also agree when two kinks hide on one side.
                e = _EPS_FRAC * L
                gl, gr = self._vals([t - e, t + e])
                if (abs(gl - (ga + sa * (t - e - a))) <= tol and abs(gr - (gb + sb * (t + e - b))) <= tol
                        and abs(gm - self._two_lines(a, ga, sa, b, gb, sb, t, a + 0.5 * L)) <= tol):
                    out.append(t)
                    return
        m = a + 0.5 * L
        self._explore(a, m, ga, gm, min_len, out, depth + 1)
        self._explore(m, b, gm, gb, min_len, out, depth + 1)

    @staticmethod
    def _two_lines(a, ga, sa, b, gb, sb, t, x) -> float:
        """The value at ``x`` of the function made of line A up to ``t`` and line B after."""
        return ga + sa * (x - a) if x <= t else gb + sb * (x - b)

    # ------------------------------------------------------------------ refine
    def _refine(self, a: float, b: float, approx: list[float], min_len: float) -> list[float]:
        verified: list[float] = []
        for _ in range(8):
            bounds = [a, *approx, b]
            ts = []
            for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
                ts += [lo + 0.25 * (hi - lo), lo + 0.5 * (hi - lo), lo + 0.75 * (hi - lo)]
            v = self._vals(ts).reshape(-1, 3)
            lines = []
            redo: list[tuple[int, list[float]]] = []
            for j, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
                t1, t2 = lo + 0.25 * (hi - lo), lo + 0.75 * (hi - lo)
                s = (v[j, 2] - v[j, 0]) / (t2 - t1)
                lines.append((t1, v[j, 0], s))
                tol = self._tol(v[j, 0], v[j, 2], s * (hi - lo))
                if abs(0.5 * (v[j, 0] + v[j, 2]) - v[j, 1]) > tol:
                    more: list[float] = []
                    g_lo, g_hi = self._vals([lo + 0.125 * (hi - lo), hi - 0.125 * (hi - lo)])
                    self._explore(lo + 0.125 * (hi - lo), hi - 0.125 * (hi - lo), g_lo, g_hi,
                                  min_len, more)
                    redo.append((j, more))
            if redo:
                new = list(approx)
                for _, more in redo:
                    new += more
                approx = sorted(new)
                continue
            exact = []
            for j, t0 in enumerate(approx):
                (p1, v1, s1), (p2, v2, s2) = lines[j], lines[j + 1]
                t = t0
                if s1 != s2:
                    # v1 + s1 (t - p1) = v2 + s2 (t - p2)
                    t = (v2 - v1 + s1 * p1 - s2 * p2) / (s1 - s2)
                exact.append(t)
            # A kink is confirmed when the function there lies on both adjacent lines;
            # a second kink hidden in an outer quarter of a piece breaks this.
            ok_range = [lines[j][0] < t < lines[j + 1][0] for j, t in enumerate(exact)]
            pts = [t if ok else t0 for t, t0, ok in zip(exact, approx, ok_range, strict=True)]
            eps = [_EPS_FRAC * min(t - lines[j][0], lines[j + 1][0] - t) if ok_range[j] else 0.0
                   for j, t in enumerate(pts)]
            # Each kink is also checked closer in, down to where its jump falls below the
            # tolerance: two kinks 1e-6 apart, both inside eps, passed as one kink at the
            # meeting point of the outer lines, where the function is linear (aud_ext6 #7)
            checks = [(j, e) for j, e in enumerate(eps)]
            tols = []
            for j, t in enumerate(pts):
                p1, v1, s1 = lines[j]
                p2, v2, s2 = lines[j + 1]
                tols.append(self._tol(v1, v2, s1 * (t - p1), s2 * (t - p2)))
                e = eps[j] * _CLOSER
                while ok_range[j] and e > min_len and e * abs(s1 - s2) > 4.0 * tols[j]:
                    checks.append((j, e))
                    e *= _CLOSER
            tv = self._vals([pts[j] + s * e for j, e in checks for s in (-1.0, 1.0)]).reshape(-1, 2)
            off_lines = set()
            for (j, e), (gl, gr) in zip(checks, tv, strict=True):
                p1, v1, s1 = lines[j]
                p2, v2, s2 = lines[j + 1]
                t = pts[j]
                if abs(v1 + s1 * (t - e - p1) - gl) > tols[j] or abs(v2 + s2 * (t + e - p2) - gr) > tols[j]:
                    off_lines.add(j)
            bad = []
            flat = []
            for j in range(len(pts)):
                s1, s2 = lines[j][2], lines[j + 1][2]
                span = lines[j + 1][0] - lines[j][0]
                if abs(s1 - s2) * span <= tols[j]:
                    # The pieces on both sides lie on one line: no kink between them
                    # (e.g. a chord across a kink hugging an end of the explored interval
                    # passed for one); merge them.
                    flat.append(j)
                elif not ok_range[j] or j in off_lines:
                    bad.append(j)
            verified = [t for j, t in enumerate(exact) if j not in set(bad) | set(flat)]
            if not bad:
                if flat:
                    approx = verified
                    if not approx:
                        return []
                    continue
                return exact
            new = list(verified)
            for j in bad:
                lo, hi = lines[j][0], lines[j + 1][0]
                g_lo, g_hi = self._vals([lo, hi])
                more: list[float] = []
                self._explore(lo, hi, g_lo, g_hi, min_len, more)
                new += more if more else [approx[j]]
            approx = sorted(set(new))
        # Out of rounds: only the kinks confirmed from both sides in the last one are
        # reported (an unconfirmed one may be no kink at all); the others count as
        # unresolved.
        self.unresolved += max(0, len(approx) - len(verified))
        return verified

    # ------------------------------------------------------------------ public
    def kinks(self, a: float, b: float, n_init: int = 4) -> np.ndarray:
        """All kinks of ``g`` in ``(a, b)`` (those whose jump exceeds the tolerance), sorted."""
        if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(b - a)):
            raise ExtractError(f"LineSearch.kinks: the interval ({a}, {b}) must have finite ends "
                               "and a finite length")
        if not a < b:
            # a reversed interval returned no kink, with the one inside it unreported
            raise ExtractError(f"LineSearch.kinks: the interval ({a}, {b}) must have a < b")
        grid = np.linspace(a, b, n_init + 1)
        gv = self._vals(list(grid))
        min_len = ROUNDOFF * (abs(a) + abs(b) + (b - a))
        approx: list[float] = []
        for i in range(n_init):
            self._explore(float(grid[i]), float(grid[i + 1]), float(gv[i]), float(gv[i + 1]),
                          min_len, approx)
        # A kink exactly on an inner grid point is invisible to both intervals beside it
        # (each is linear up to its end).  When neither holds a kink the two chords meet
        # there at the same slope unless the point is a kink; otherwise three values a
        # small step around the point tell.
        h = (b - a) / n_init
        e = _EPS_FRAC * h
        inner = [k for k in range(1, n_init)
                 if not any(abs(t - grid[k]) <= e for t in approx)]
        if inner:
            side = self._vals([float(grid[k]) + s * e for k in inner for s in (-1.0, 1.0)])
            side = side.reshape(-1, 2)
            for (gl, gr), k in zip(side, inner, strict=True):
                lo, hi = float(grid[k - 1]), float(grid[k + 1])
                s1 = (gv[k] - gv[k - 1]) / h
                s2 = (gv[k + 1] - gv[k]) / h
                tol = self._tol(gv[k - 1], gv[k], gv[k + 1], s1 * h, s2 * h)
                quiet = not any(lo < t < hi for t in approx)
                if ((quiet and abs(s1 - s2) * h > tol)
                        or abs(gl + gr - 2.0 * gv[k]) > tol):
                    approx.append(float(grid[k]))
        approx = sorted(approx)
        # A kink exactly on a grid point is seen from both sides: keep one.
        dedup: list[float] = []
        for t in approx:
            if not dedup or t - dedup[-1] > DEDUP_RTOL * (b - a):
                dedup.append(t)
        if not dedup:
            return np.zeros(0)
        return np.asarray(sorted(self._refine(a, b, dedup, min_len)))

    def single(self, rho: float) -> float | None:
        """The kink in ``(-rho, rho)`` when ``g`` is linear on ``[-2 rho, -rho / 2]`` and on
        ``[rho / 2, 2 rho]`` with one kink between (checked by three more queries: at the
        kink and a small step to each side of it); else None."""
        v = self._vals([-2 * rho, -0.5 * rho, 0.5 * rho, 2 * rho])
        s1 = (v[1] - v[0]) / (1.5 * rho)
        s2 = (v[3] - v[2]) / (1.5 * rho)
        tol = self._tol(*v, s1 * rho, s2 * rho)
        if abs(s1 - s2) * rho <= tol:
            return None
        t = (v[2] - v[1] + s1 * (-0.5 * rho) - s2 * (0.5 * rho)) / (s1 - s2)
        if not -rho < t < rho:
            return None
        # Just left of t the function must follow the left line and just right of it the
        # right one: the value at t alone also agrees when two kinks of opposite jumps
        # lie between (their outer lines can meet on one of them, away from both kinks).
        e = _EPS_FRAC * rho
        gt, gl, gr = self._vals([t, t - e, t + e])
        if (abs(gt - (v[1] + s1 * (t + 0.5 * rho))) > tol
                or abs(gl - (v[1] + s1 * (t - e + 0.5 * rho))) > tol
                or abs(gr - (v[2] + s2 * (t + e - 0.5 * rho))) > tol):
            return None
        return float(t)
