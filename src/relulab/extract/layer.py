"""Find the neurons of one layer: critical points on random lines, hyperplanes from
gradient jumps, clustering by hyperplane, a global test, and least-squares refinement.

Work happens in a :class:`~relulab.extract.space.Space` ``y`` where every earlier layer is
active, so the layer acts as ``relu(U y + beta)`` and its neurons switch on true
hyperplanes; deeper neurons switch on bent ones.  For each kink ``y*`` found on a line:

* if it lies on a hyperplane already known, it is one more point of that neuron;
* else the gradient is measured by finite differences on the two pieces beside it (exact
  on linear pieces): the jump is ``a u^T`` (rank one) and gives the normal ``u`` up to
  scale, and ``beta = -u . y*``;
* the candidate must be a *global* hyperplane: kinks are looked for at points of the
  hyperplane far from ``y*``; a deeper neuron's bent hyperplane fails this;
* finally every neuron's hyperplane is fitted by least squares (the null vector of
  ``[Y 1]``) through ``dim + 1`` or more critical points found on it, each located
  exactly by intersecting two linear pieces (precision refinement).

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> from relulab.extract.oracle import QueryOracle
    >>> from relulab.extract.space import Space
    >>> net = Network([[[1.0, 0.0], [1.0, 1.0]], [[1.0, -2.0]]], [[0.5, -0.5], [0.0]])
    >>> found = find_layer(QueryOracle(net), Space.input(2), np.random.default_rng(0))
    >>> sorted(np.round(np.abs(n.u / n.u[np.argmax(np.abs(n.u))]), 9).tolist() for n in found.neurons)
    [[1.0, 0.0], [1.0, 1.0]]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..tolerance import ROUNDOFF, TINY
from .lines import DETECT_RTOL, LineSearch
from .oracle import QueryOracle
from .space import Space

__all__ = ["Neuron", "LayerFound", "find_layer", "PLANE_RTOL"]

# A critical point belongs to a known hyperplane when it is this close to it (relative to
# the size of the space): gradient-estimated normals are good to ~1e-9, refined ones to ~1e-14.
PLANE_RTOL = 1e-6  # tol: far above the normals' error, far below the distance of other planes
JUMP_RANK_RTOL = 1e-6  # tol: a gradient jump is rank one when its 2nd singular value is below this x the 1st
GENERAL_POS_RTOL = 1e-8  # tol: points span a hyperplane when the 2nd-smallest singular value exceeds this x the largest
ON_PLANE_RTOL = 1e-10  # tol: refined points lie on one hyperplane to this (scaled) residual
MOVE_RTOL = 1e-9  # tol: a step along a line shorter than this x the space's scale does not move
# Above this many dimensions a hyperplane is refitted as a correction of its estimate
# (normal equations) rather than by an SVD of all its points.
FAST_FIT_DIM = 64
# Forward-difference step along a subspace basis direction (:func:`_jump_normal`), as a
# fraction of the half-piece (the axis step is 0.05 of it).
SUBSPACE_STEP = 0.005
# Two neurons with (u, beta) this close (up to sign) are one: refined ones agree to ~1e-13,
# an unrefined second estimate of the same hyperplane (a gradient spoilt by a nearby kink,
# still passing the global test) to ~1e-5; distinct neurons differ by O(1).
SAME_PLANE_TOL = 1e-4  # tol: see the comment above


@dataclass
class Neuron:
    """A hyperplane ``u . y + beta = 0`` (``|u| = 1``) and the critical points on it.

    Example:
        >>> Neuron(np.array([1.0, 0.0]), -0.5).dist(np.array([[2.0, 3.0]])).tolist()
        [1.5]
    """

    u: np.ndarray
    beta: float
    points: list[np.ndarray] = field(default_factory=list)
    refined: bool = False

    def dist(self, Y: np.ndarray) -> np.ndarray:
        return np.atleast_2d(Y) @ self.u + self.beta


@dataclass
class LayerFound:
    """The neurons of a layer found so far by :func:`find_layer`, and the work done (lines
    searched, critical points seen, candidates rejected as bent, kinks left unresolved).

    Example:
        >>> from relulab import Network
        >>> from relulab.extract.oracle import QueryOracle
        >>> from relulab.extract.space import Space
        >>> net = Network([[[1.0, 0.0], [1.0, 1.0]], [[1.0, -2.0]]], [[0.5, -0.5], [0.0]])
        >>> st = find_layer(QueryOracle(net), Space.input(2), np.random.default_rng(0))
        >>> len(st.neurons), st.lines > 0, len(st.critical_points) >= 2
        (2, True, True)
    """

    neurons: list[Neuron]
    lines: int
    critical_points: list[np.ndarray]
    rejected: int
    unresolved: int


class _Probe:
    """Queries in ``y`` coordinates through the oracle, with a fixed output projection."""

    def __init__(self, oracle: QueryOracle, space: Space, rho: np.ndarray, atol: float) -> None:
        self.oracle, self.space, self.rho, self.atol = oracle, space, rho, atol

    def f(self, Y: np.ndarray) -> np.ndarray:
        return self.oracle(self.space.to_x(np.atleast_2d(Y)))

    def g_line(self, y0: np.ndarray, r: np.ndarray):
        return lambda t: self.f(y0[None, :] + np.asarray(t)[:, None] * r[None, :]) @ self.rho

    def search(self, y0: np.ndarray, r: np.ndarray) -> LineSearch:
        return LineSearch(self.g_line(y0, r), DETECT_RTOL, self.atol * float(np.abs(self.rho).sum()))

    def gradient(self, y: np.ndarray, h, basis: np.ndarray | None = None) -> np.ndarray:
        """Forward differences along the coordinate axes: exact on a linear piece (m x n).
        With ``basis`` (n x k, orthonormal columns): the directional derivatives along its
        columns (m x k, ``k + 1`` queries instead of ``n + 1``); ``h`` may then be one step
        per column."""
        n = y.shape[0]
        D = np.eye(n) if basis is None else basis.T
        hh = np.broadcast_to(np.asarray(h, float), (D.shape[0],))[:, None]
        Y = np.vstack([y, y + hh * D])
        F = self.f(Y)
        return ((F[1:] - F[0]) / hh).T


def _random_direction(n: int, rng: np.random.Generator) -> np.ndarray:
    r = rng.normal(size=n)
    return r / np.linalg.norm(r)


def _random_line_kinks(probe: _Probe, rng: np.random.Generator, d: int, scale: float,
                       radius: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random line near the origin (start ``x0``, unit direction ``r``) and the kinks
    ``ts`` the probe finds on it within ``[-radius, radius]``: the search step shared by
    the first-layer-and-deeper line search and the tracer."""
    x0 = 0.5 * scale * rng.normal(size=d) / np.sqrt(d)
    r = _random_direction(d, rng)
    return x0, r, probe.search(x0, r).kinks(-radius, radius)


def _in_plane_direction(u: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=u.shape[0])
    v -= (v @ u) * u
    nv = np.linalg.norm(v)
    return v / nv if nv > 0 else v


def _locate_on_plane(probe: _Probe, nrn: Neuron, q: np.ndarray, rho: float) -> np.ndarray | None:
    """The critical point of ``nrn`` on the line through ``q`` along its normal (``q`` on the
    estimated hyperplane), found exactly from two linear pieces; None if not seen there."""
    q = q - nrn.dist(q)[0] * nrn.u
    sp = probe.space
    lo, hi = sp.t_range(q, nrn.u, np.inf, 0.0)
    rho = min(rho, -lo / 2.5, hi / 2.5) if np.isfinite(lo) or np.isfinite(hi) else rho
    if rho <= 0:
        return None
    t = probe.search(q, nrn.u).single(rho)
    return None if t is None else q + t * nrn.u


def _locate_batch(probe: _Probe, nrn: Neuron, Q: np.ndarray, rho: float) -> np.ndarray:
    """:func:`_locate_on_plane` for many points in two oracle calls (four points on each
    normal line, then one check at each intersection); rows not confirmed are NaN."""
    u = nrn.u
    Q = Q - np.outer(nrn.dist(Q), u)
    sp = probe.space
    rhos = np.full(Q.shape[0], rho)
    if sp.C.shape[0]:
        for i, q in enumerate(Q):
            lo, hi = sp.t_range(q, u, np.inf, 0.0)
            rhos[i] = min(rho, -lo / 2.5, hi / 2.5)
    out = np.full_like(Q, np.nan)
    use = rhos > 0
    if not use.any():
        return out
    Qu, R = Q[use], rhos[use]
    T = np.stack([-2 * R, -0.5 * R, 0.5 * R, 2 * R], axis=1)  # (k, 4)
    X = Qu[:, None, :] + T[:, :, None] * u[None, None, :]
    v = (probe.f(X.reshape(-1, Qu.shape[1])) @ probe.rho).reshape(-1, 4)
    s1 = (v[:, 1] - v[:, 0]) / (1.5 * R)
    s2 = (v[:, 3] - v[:, 2]) / (1.5 * R)
    tol = DETECT_RTOL * (1 + np.maximum(np.abs(v).max(axis=1), np.maximum(np.abs(s1), np.abs(s2)) * R))
    tol = tol + 40.0 * probe.atol * float(np.abs(probe.rho).sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (v[:, 2] - v[:, 1] - 0.5 * R * (s1 + s2)) / (s1 - s2)
    good = (np.abs(s1 - s2) * R > tol) & (np.abs(t) < R)
    if not good.any():
        return out
    P = Qu[good] + t[good, None] * u
    gt = probe.f(P) @ probe.rho
    conf = np.abs(gt - (v[good, 1] + s1[good] * (t[good] + 0.5 * R[good]))) <= tol[good]
    idx = np.nonzero(use)[0][np.nonzero(good)[0][conf]]
    out[idx] = P[conf]
    return out


def _jump_normal(probe: _Probe, y0, r, t, t_left, t_right,
                 basis=None) -> tuple[np.ndarray, float] | None:
    """Normal of the kink at ``y0 + t r`` from the gradient jump between the middles of the
    pieces beside it; None when the jump is not rank one (more than one neuron switched).

    ``basis``: None, or a callable ``(pl, pr) -> (Q, cap)`` giving an orthonormal basis
    (n x k) of a subspace that holds the gradients of both pieces beside the kink and the
    largest safe step along each column (k,) (None: the whole space).  The jump is then measured along Q only (``2 (k + 1)`` queries instead of
    ``2 (n + 1)``): with ``J = a u^T`` and ``u`` in span(Q), ``J Q = a (Q^T u)^T``, so
    ``u = Q (Q^T u)`` exactly (a deeper neuron's normal lies in the span of the first-layer
    rows active at the kink, whatever the deeper layers do)."""
    half = 0.5 * min(t - t_left, t_right - t)
    if half <= 0:
        return None
    pl, pr = y0 + (t - half) * r, y0 + (t + half) * r
    h = 0.05 * half
    got = None if basis is None else basis(pl, pr)
    # Along a basis direction (a combination of first-layer normals, and deeper normals lie
    # in the same span) a step meets other kinks sooner than along an axis: shorter steps.
    Q, hq = (None, h) if got is None else (got[0], np.minimum(SUBSPACE_STEP * half, got[1]))
    Gl = probe.gradient(pl, hq, Q)
    Gr = probe.gradient(pr, hq, Q)
    J = Gr - Gl
    U_, s, Vt = np.linalg.svd(J, full_matrices=False)
    if s[0] == 0 or (s.shape[0] > 1 and s[1] > JUMP_RANK_RTOL * s[0]):
        return None
    u = Vt[0]
    if Q is not None:
        u = Q @ u
        u = u / np.linalg.norm(u)  # unit already up to rounding
    return u, float(-(u @ (y0 + t * r)))


def _is_global(probe: _Probe, nrn: Neuron, rng: np.random.Generator, far: float) -> list[np.ndarray]:
    """Critical points of ``nrn`` at ``y* + s v`` and ``y* - s v`` (``v`` in the hyperplane,
    ``s`` large): every other hyperplane of the layer that meets this segment separates the
    two ends, so a deeper neuron's bent hyperplane cannot pass through both.  An empty list
    when no pair was confirmed (bent, or hidden by other kinks at every try)."""
    y = nrn.points[0]
    n = nrn.u.shape[0]
    # The window along the normal: another neuron's kink inside it hides this one.  Far out
    # in many dimensions many hyperplanes pass close by, so the window shrinks there (the
    # located kink's precision does not depend on it).
    frac = 1e-3 if n <= FAST_FIT_DIM else 1e-5
    for _ in range(4 if n <= FAST_FIT_DIM else 8):
        v = _in_plane_direction(nrn.u, rng)
        lo, hi = probe.space.t_range(y, v, far, 0.0)
        s_lo, s_hi = 0.9 * lo, 0.9 * hi
        if min(-s_lo, s_hi) <= 1e-3 * far:
            continue
        got = []
        for s in (s_lo, s_hi):
            p = _locate_on_plane(probe, nrn, y + s * v, frac * abs(s))
            if p is None or abs(nrn.dist(p)[0]) > PLANE_RTOL * (abs(s) + np.linalg.norm(y)):
                break
            got.append(p)
        if len(got) == 2:
            return got
    return []


def _plane_correct(Y: np.ndarray, u0: np.ndarray, b0: float) -> tuple[np.ndarray, float] | None:
    """The least-squares hyperplane through the points as a small correction of a good
    estimate ``(u0, b0)``: ``u = u0 + delta`` with ``delta`` orthogonal to ``u0``, from the
    normal equations of the centred points projected on the plane (``O(k n^2 + n^3 / 3)``,
    about ten times faster than the SVD of ``[Y 1]`` at a few hundred dimensions; the
    correction is tiny, so squaring the condition number costs nothing that matters)."""
    r = Y @ u0 + b0
    ybar, rbar = Y.mean(axis=0), float(r.mean())
    Yc = Y - ybar
    Yp = Yc - np.outer(Yc @ u0, u0)
    G = Yp.T @ Yp
    lam = float(np.trace(G)) / G.shape[0] + TINY
    G += lam * np.outer(u0, u0)  # pins the component along u0 to 0
    try:
        delta = -np.linalg.solve(G, Yp.T @ (r - rbar))
    except np.linalg.LinAlgError:
        return None
    u = u0 + delta
    b = b0 - rbar - float(delta @ ybar)
    nu = float(np.linalg.norm(u))
    return u / nu, b / nu


def _plane_fit(Y: np.ndarray, guess: tuple[np.ndarray, float] | None = None) -> tuple[np.ndarray, float] | None:
    """The hyperplane ``u . y + b = 0`` (``|u| = 1``) closest to the points (least squares:
    the smallest right singular vector of the centred, scaled ``[Y 1]``; with a good
    ``guess`` in many dimensions, :func:`_plane_correct`)."""
    if guess is not None and Y.shape[1] > FAST_FIT_DIM:
        return _plane_correct(Y, guess[0], guess[1])  # the caller checks it fits
    shift = Y.mean(axis=0)
    Z = Y - shift
    scale = float(np.abs(Z).max()) + TINY
    A = np.hstack([Z / scale, np.ones((Y.shape[0], 1))])
    _, s, Vt = np.linalg.svd(A, full_matrices=False)
    if s.shape[0] < 2 or s[-2] <= GENERAL_POS_RTOL * s[0]:
        return None  # points not in general position
    w = Vt[-1]
    u = w[:-1] / scale
    nu = float(np.linalg.norm(u))
    if nu == 0:
        return None
    u, b = u / nu, w[-1] / nu
    return u, float(b - u @ shift)


def refine_neuron(probe: _Probe, nrn: Neuron, rng: np.random.Generator, spread: float) -> None:
    """Refit ``nrn``'s hyperplane by least squares through about ``1.25 dim + 4`` exact
    critical points, dropping outliers (a kink of another neuron close by can shift one)."""
    n = nrn.u.shape[0]
    # Enough exact points to average the rounding of each; in many dimensions a small
    # surplus suffices (each point is exact to ~1e-14) and keeps queries and time down.
    want = n + 4 + n // 4 if n <= FAST_FIT_DIM else n + 24
    pts = list(nrn.points)
    base = nrn.points[0]
    k = int(1.2 * want) + 4
    Vd = rng.normal(size=(k, n))
    Vd -= np.outer(Vd @ nrn.u, nrn.u)
    Vd /= np.linalg.norm(Vd, axis=1, keepdims=True) + TINY
    Q = []
    for v in Vd:
        lo, hi = probe.space.t_range(base, v, spread, 0.0)
        if hi - lo > 0:
            Q.append(base + rng.uniform(0.8 * lo, 0.8 * hi) * v)
    if Q:
        # A narrow window (another neuron's kink inside it shifts the point found): the
        # located kink's precision does not depend on the window's width.
        found = _locate_batch(probe, nrn, np.asarray(Q), (1e-3 if n <= FAST_FIT_DIM else 1e-4) * spread)
        dist = np.abs(nrn.dist(found))
        ok = dist <= PLANE_RTOL * (spread + np.linalg.norm(base))
        if n > FAST_FIT_DIM and ok.sum() > 8:
            # the estimate is good to ~1e-10 already: points far further off are strays
            ok &= dist <= 100.0 * float(np.median(dist[ok])) + ROUNDOFF * (1.0 + np.abs(base).max())
        pts += list(found[ok])
    Y = np.asarray(pts)
    if Y.shape[0] < n + 1:
        return
    fit = _plane_fit(Y, (nrn.u, nrn.beta))
    if fit is None:
        return
    floor = ROUNDOFF * (1.0 + float(np.abs(Y).max()))
    for _ in range(4):
        # Stray points (another neuron's kink close by) spread their error over the fit:
        # drop every point far off the fit at once (the good ones sit at rounding level);
        # the rest must then fit far better, else they were not strays.
        u, b = fit
        r = np.abs(Y @ u + b)
        if r.max() <= floor or Y.shape[0] <= n + 1:
            break
        bad = r > max(floor, 100.0 * float(np.median(r)))
        if not bad.any():
            bad = r >= r.max()
        Y2 = Y[~bad]
        if Y2.shape[0] < n + 1:
            break
        fit2 = _plane_fit(Y2, fit)
        if fit2 is None or np.abs(Y2 @ fit2[0] + fit2[1]).max() > 0.5 * r.max():
            break
        Y, fit = Y2, fit2
    u, b = fit
    if np.abs(Y @ u + b).max() > ON_PLANE_RTOL * (1.0 + float(np.abs(Y).max())):
        return  # the points do not lie on one hyperplane: keep the gradient estimate
    if u @ nrn.u < 0:
        u, b = -u, -b
    # Keep the refit only when it agrees with the first estimate (no stray point used).
    if np.linalg.norm(u - nrn.u) < 1e-4:
        nrn.u, nrn.beta, nrn.points, nrn.refined = u, float(b), list(Y), True


def find_layer(
    oracle: QueryOracle,
    space: Space,
    rng: np.random.Generator,
    *,
    width: int | None = None,
    patience: int = 3,
    max_lines: int = 200,
    atol: float = 0.0,
    refine: bool = True,
    found: LayerFound | None = None,
) -> LayerFound:
    """The neurons of the layer acting on ``space`` (see the module docstring).

    Lines are drawn until ``width`` neurons are found, or (width unknown or some neurons
    never seen) until ``patience`` lines in a row bring nothing new.  ``found`` carries the
    progress (it is updated in place, so a budget stop leaves what was found).

    Example:
        >>> from relulab import Network
        >>> from relulab.extract.oracle import QueryOracle
        >>> from relulab.extract.space import Space
        >>> net = Network([[[1.0, 0.0], [1.0, 1.0]], [[1.0, -2.0]]], [[0.5, -0.5], [0.0]])
        >>> found = find_layer(QueryOracle(net), Space.input(2), np.random.default_rng(0))
        >>> sorted(np.round(np.abs(n.u / n.u[np.argmax(np.abs(n.u))]), 9).tolist() for n in found.neurons)
        [[1.0, 0.0], [1.0, 1.0]]
    """
    n = space.dim
    m = oracle.output_dim or 1
    if oracle.output_dim is None:
        m = oracle(space.to_x(space.center[None]))[0].shape[0]
    rho = rng.normal(size=m)
    probe = _Probe(oracle, space, rho, atol)
    st = found if found is not None else LayerFound([], 0, [], 0, 0)
    bent: list[Neuron] = []
    quiet = 0
    radius = r0 = 3.0 * space.scale * np.sqrt(n)
    while st.lines < max_lines and (width is None or len(st.neurons) < width):
        if quiet >= (patience if width is None else 3 * patience):
            break
        if width is not None and quiet >= patience and radius < 64 * r0:
            radius *= 2.0  # neurons still missing: their hyperplanes may lie further out
        st.lines += 1
        y0 = space.sample(rng)
        r = _random_direction(n, rng)
        if space.C.shape[0] and st.lines % 2 == 0:
            # In a peeled space (an orthant) a random line soon leaves through a face; a
            # direction into the orthant runs on to ``radius`` and crosses more hyperplanes.
            r = np.abs(r)
        elif space.C.shape[0]:
            r = np.where(y0 < 1e-2 * space.scale, np.abs(r), r)  # do not leave at once
        lo, hi = space.t_range(y0, r, radius, MOVE_RTOL * space.scale)
        if hi - lo <= MOVE_RTOL * space.scale:
            quiet += 1
            continue
        ls = probe.search(y0, r)
        ts = ls.kinks(lo, hi)
        st.unresolved += ls.unresolved
        new = False
        tb = [lo, *ts.tolist(), hi]
        for j, t in enumerate(ts):
            y = y0 + t * r
            st.critical_points.append(y)
            tol = PLANE_RTOL * (space.scale + np.linalg.norm(y))
            hit = [nr for nr in st.neurons if abs(nr.dist(y)[0]) <= tol]
            if hit:
                hit[0].points.append(y)
                continue
            if any(abs(b.dist(y)[0]) <= tol for b in bent):
                continue  # a deeper neuron seen before on the same local plane
            est = _jump_normal(probe, y0, r, t, tb[j], tb[j + 2])
            if est is None:
                st.rejected += 1
                continue
            cand = Neuron(est[0], est[1], [y])
            # In one dimension a hyperplane is a point: nothing to test away from it (and a
            # deeper neuron's kink cannot be told from a first-layer one).
            far = _is_global(probe, cand, rng, 4.0 * radius) if n > 1 else [y]
            if not far:
                bent.append(cand)
                st.rejected += 1
                continue
            st.neurons.append(cand)
            new = True
        quiet = 0 if new else quiet + 1
    if refine and n > 1:
        for nrn in st.neurons:
            # Closer to the first point when far points keep meeting other kinks.
            for spread in ((1.0, 0.25, 0.05) if n <= FAST_FIT_DIM else (0.25, 0.05)):
                refine_neuron(probe, nrn, rng, spread * space.scale * np.sqrt(n))
                if nrn.refined:
                    break
    st.neurons = _dedup(st.neurons, space.scale)
    return st


def _dedup(neurons: list[Neuron], scale: float) -> list[Neuron]:
    """One neuron per hyperplane: an early, rough normal can make a second point of a known
    neuron look new; after refinement both describe the same hyperplane (up to sign)."""
    out: list[Neuron] = []
    for nr in neurons:
        same = [o for o in out if min(np.abs(o.u - nr.u).max() + abs(o.beta - nr.beta) / (1 + scale),
                                      np.abs(o.u + nr.u).max() + abs(o.beta + nr.beta) / (1 + scale)) < SAME_PLANE_TOL]
        if same:
            if nr.refined and not same[0].refined:
                out[out.index(same[0])] = nr
            continue
        out.append(nr)
    return out
