"""Deeper layers, one linear region at a time.

Once layers ``1 .. k-1`` are known (with orientations), every input ``x`` has a known
activation pattern, and inside its linear region the active neurons of layer ``k-1``
are affine coordinates ``y = A x + a`` of the region.  Layer ``k`` acts on them as a
first layer acts on ``x``: its neurons that switch inside the region do so on true
hyperplanes ``w_P . y + b = 0``, found by :func:`~relulab.extract.layer.find_layer` in a
:class:`~relulab.extract.space.Space` for the region.  That gives each such neuron's
weights on the active coordinates ``P`` (and its bias) up to one positive factor.

Regions are chosen where layer ``k`` is known to switch: at critical points on random
input lines that no known neuron explains.  Partial rows from different regions are
merged when they agree (are parallel) on their common coordinates and bias, which fixes
the relative factor; a row is complete when every coordinate was active in some region
where the neuron switches.

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> from relulab.extract.oracle import QueryOracle
    >>> lay = [(np.eye(2), np.zeros(2))]            # first layer: relu(x1), relu(x2)
    >>> space, P = region_space(lay, np.array([1.0, -1.0]))
    >>> P.tolist(), space.dim                       # only neuron 0 is active there
    ([0], 1)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..tolerance import ROUNDOFF
from .layer import PLANE_RTOL, _Probe, _random_direction, _random_line_kinks, find_layer
from .lines import DETECT_RTOL
from .oracle import QueryOracle
from .signs import SIDE_RATIO, one_sided
from .space import Space

__all__ = ["PartialRow", "DeepLayer", "find_deep_layer", "region_space"]

# Two partial rows are the same neuron when their common part (weights and bias),
# normalised, agrees to this: exact rows agree to ~1e-12, distinct neurons by O(1).
MATCH_TOL = 1e-6  # tol: one neuron's rows agree to ~1e-12, distinct neurons by O(1)


@dataclass
class PartialRow:
    """A neuron of layer ``k``: weights on the coordinates known so far (NaN elsewhere),
    bias, and orientation votes (+1: active on the positive side, as stored).

    Example:
        >>> r = PartialRow(np.array([1.0, np.nan]), 0.5)
        >>> r.known.tolist(), r.complete, r.status
        ([True, False], False, 'new')
    """

    w: np.ndarray
    b: float
    votes: list[int] = field(default_factory=list)
    regions: int = 1
    x_points: list[np.ndarray] = field(default_factory=list)
    status: str = "new"  # "new", "global" (passed the global test) or "bent" (failed it)

    @property
    def known(self) -> np.ndarray:
        return ~np.isnan(self.w)

    @property
    def complete(self) -> bool:
        return bool(self.known.all())


@dataclass
class DeepLayer:
    """The rows of a deeper layer found by :func:`find_deep_layer`, and the work done
    (regions explored, input lines searched, regions skipped, critical points seen).

    Example:
        >>> from relulab import Network
        >>> from relulab.extract.oracle import QueryOracle
        >>> net = Network([np.eye(2), [[1.0, -2.0], [1.0, 1.0]], [[1.0, 1.0]]],
        ...               [[0.0, 0.0], [0.5, -0.25], [0.0]])
        >>> dl = find_deep_layer(QueryOracle(net), [(np.eye(2), np.zeros(2))], 2,
        ...                      np.random.default_rng(0), width=2)
        >>> len(dl.rows), all(r.complete for r in dl.rows), dl.regions > 0
        (2, True, True)
    """

    rows: list[PartialRow]
    regions: int
    lines: int
    skipped_regions: int
    critical_points: int


def _forward_affine(layers, x: np.ndarray):
    """The pattern at ``x`` and, for its region, ``h_{k-1} = A x + a`` plus the region's
    constraints ``Cx x + cx > 0``."""
    d = x.shape[0]
    A, a = np.eye(d), np.zeros(d)
    Cs, cs = [], []
    act = None
    for U, b in layers:
        ZA, Za = U @ A, U @ a + b
        z = ZA @ x + Za
        act = z > 0
        sgn = np.where(act, 1.0, -1.0)
        Cs.append(sgn[:, None] * ZA)
        cs.append(sgn * Za)
        A, a = ZA * act[:, None], Za * act
    return act, A, a, np.vstack(Cs), np.concatenate(cs)


def region_space(layers, x: np.ndarray) -> tuple[Space, np.ndarray] | None:
    """The coordinates of the linear region of ``layers`` containing ``x``: the active
    last-layer outputs, as a :class:`Space`; None when they are not independent (more
    active neurons than the region has dimensions).

    Example:
        >>> lay = [(np.eye(2), np.zeros(2))]            # first layer: relu(x1), relu(x2)
        >>> space, P = region_space(lay, np.array([1.0, 2.0]))
        >>> P.tolist(), space.dim, space.center.tolist()
        ([0, 1], 2, [1.0, 2.0])
        >>> region_space(lay, np.array([-1.0, -1.0])) is None   # nothing active
        True
    """
    act, A, a, Cx, cx = _forward_affine(layers, x)
    P = np.nonzero(act)[0]
    if P.size == 0:
        return None
    AP, aP = A[P], a[P]
    if np.linalg.matrix_rank(AP) < P.size:
        return None
    pinv = np.linalg.pinv(AP)
    ystar = AP @ x + aP
    Pm = pinv
    p = x - pinv @ ystar
    C = Cx @ Pm
    c = Cx @ p + cx
    keep = np.linalg.norm(C, axis=1) > ROUNDOFF * (1 + np.abs(c))  # rows constant on the region
    scale = float(np.median(np.abs(ystar))) + ROUNDOFF
    return Space(Pm, p, C[keep], c[keep], scale, ystar, bounded_walk=True), P


def _pattern_key(layers, x: np.ndarray) -> bytes:
    """The activation pattern of the known layers at ``x``, as a dictionary key."""
    H, bits = x, []
    for U, b in layers:
        z = U @ H + b
        bits.append(z > 0)
        H = np.maximum(z, 0.0)
    return np.packbits(np.concatenate(bits)).tobytes()


def _hidden(layers, X: np.ndarray) -> np.ndarray:
    H = X
    for U, b in layers:
        H = np.maximum(H @ U.T + b, 0.0)
    return H


def _explained(layers, rows: list[PartialRow], x: np.ndarray, tol: float) -> bool:
    """Whether the kink at ``x`` is a known neuron's: a recovered earlier neuron or a row
    of this layer whose known part covers the active coordinates at ``x``."""
    H = x
    for U, b in layers:
        z = U @ H + b
        if np.any(np.abs(z) <= tol * (1 + np.abs(U) @ np.abs(H) + abs(b).max())):
            return True
        H = np.maximum(z, 0.0)
    on = H > 0
    for r in rows:
        if not r.known[on].all():
            continue
        w = np.where(r.known, r.w, 0.0)
        if abs(w @ H + r.b) <= tol * (1 + np.abs(w) @ H + abs(r.b)):
            return True
    return False


def _merge(rows: list[PartialRow], w_full: np.ndarray, b: float, vote: int | None,
           x: np.ndarray) -> None:
    """Add a partial row (NaN off its region's coordinates) to ``rows``."""
    known = ~np.isnan(w_full)
    for r in rows:
        common = r.known & known
        if not common.any():
            continue
        va = np.append(r.w[common], r.b)
        vb = np.append(w_full[common], b)
        na, nb = np.linalg.norm(va), np.linalg.norm(vb)
        if na == 0 or nb == 0:
            continue
        cos = float(va @ vb) / (na * nb)
        if abs(abs(cos) - 1.0) > MATCH_TOL or np.abs(va / na - np.sign(cos) * vb / nb).max() > np.sqrt(MATCH_TOL):
            continue
        s = np.sign(cos) * na / nb  # scale the new part to the stored one
        new = known & ~r.known
        r.w[new] = s * w_full[new]
        r.regions += 1
        if vote is not None:
            r.votes.append(vote * int(np.sign(cos)))
        r.x_points.append(x)
        return
    rows.append(PartialRow(w_full.copy(), float(b), [] if vote is None else [vote], x_points=[x]))


def _explore_region(o: QueryOracle, layers, x: np.ndarray, rows: list[PartialRow],
                    rng: np.random.Generator, atol: float, n_prev: int, refine: bool = False) -> bool:
    rs = region_space(layers, x)
    if rs is None:
        return False
    space, P = rs
    fl = find_layer(o, space, rng, patience=2, atol=atol, max_lines=12, refine=refine)
    if not fl.neurons:
        return True
    U = np.array([nr.u for nr in fl.neurons])
    votes: list[int | None] = [None] * len(fl.neurons)
    if np.linalg.matrix_rank(U) == U.shape[0]:
        flips = one_sided(lambda Y: o(space.to_x(Y)), U, [nr.points[0] for nr in fl.neurons],
                          0.05 * space.scale, valid=lambda Y: space.valid(Y))
        votes = [None if f is None else (-1 if f else 1) for f in flips]
    for nr, v in zip(fl.neurons, votes, strict=True):
        w = np.full(n_prev, np.nan)
        w[P] = nr.u
        _merge(rows, w, nr.beta, v, space.to_x(nr.points[0][None])[0])
    return True


def find_deep_layer(
    o: QueryOracle,
    layers: list[tuple[np.ndarray, np.ndarray]],
    d: int,
    rng: np.random.Generator,
    *,
    width: int | None = None,
    scale: float = 1.0,
    patience: int = 3,
    max_lines: int = 60,
    atol: float = 0.0,
    rows: list[PartialRow] | None = None,
) -> DeepLayer:
    """The next layer after ``layers`` (oriented), region by region (module docstring).

    Example (layer 2 is ``relu(h1 - 2 h2 + 0.5)``, ``relu(h1 + h2 - 0.25)``: each row comes
    back up to a positive factor, oriented by its votes):
        >>> from relulab import Network
        >>> from relulab.extract.oracle import QueryOracle
        >>> net = Network([np.eye(2), [[1.0, -2.0], [1.0, 1.0]], [[1.0, 1.0]]],
        ...               [[0.0, 0.0], [0.5, -0.25], [0.0]])
        >>> dl = find_deep_layer(QueryOracle(net), [(np.eye(2), np.zeros(2))], 2,
        ...                      np.random.default_rng(0), width=2)
        >>> rows = [np.sign(r.votes[0]) * np.append(r.w, r.b) for r in dl.rows]
        >>> sorted((v / abs(v[0])).round(9).tolist() for v in rows)
        [[1.0, -2.0, 0.5], [1.0, 1.0, -0.25]]
    """
    n_prev = layers[-1][0].shape[0]
    rows = [] if rows is None else rows
    m = o.output_dim or o(np.zeros((1, d))).shape[1]
    probe = _Probe(o, Space.input(d, scale), rng.normal(size=m), atol)
    radius = 3.0 * scale * np.sqrt(d)
    quiet, lines, regions, skipped, cps = 0, 0, 0, 0, 0
    tol = max(PLANE_RTOL, 1e3 * DETECT_RTOL)
    visited: set[bytes] = set()  # each linear region is explored once
    while lines < max_lines and quiet < patience:
        done = [r for r in rows if r.status == "global" and r.complete]
        if width is not None and len(done) >= width:
            break
        lines += 1
        x0, r, ts = _random_line_kinks(probe, rng, d, scale, radius)
        cps += len(ts)
        new = False
        for t in rng.permutation(ts):
            x = x0 + t * r
            if _explained(layers, rows, x, tol):
                continue
            key = _pattern_key(layers, x)
            if key in visited:
                continue  # a deeper layer's kink, or one this region cannot show
            visited.add(key)
            before = _progress(rows)
            if _explore_region(o, layers, x, rows, rng, atol, n_prev):
                regions += 1
            else:
                skipped += 1
            for row in rows:
                if row.status == "new":
                    ok = _row_is_global(probe, layers, row, rng, radius)
                    if ok is not None:
                        row.status = "global" if ok else "bent"
            new = new or _progress(rows) != before
        quiet = 0 if new else quiet + 1
    for row in [r for r in rows if r.status != "bent"]:
        for _ in range(3 * n_prev):
            if row.complete:
                break
            x = _beyond_crossing(layers, row, rng)
            if x is None:
                break
            key = _pattern_key(layers, x)
            if key in visited:
                continue
            visited.add(key)
            if _explore_region(o, layers, x, rows, rng, atol, n_prev):
                regions += 1
    for row in rows:
        if row.status == "new":
            ok = _row_is_global(probe, layers, row, rng, radius)
            if ok is not None:
                row.status = "global" if ok else "bent"
    kept = _confirmed(rows, width)
    _orient(o, layers, kept, rng)
    return DeepLayer(kept, regions, lines, skipped, cps)


def _orient(o: QueryOracle, layers, rows: list[PartialRow], rng: np.random.Generator) -> None:
    """One-sided orientation votes for every row, at its critical points, moving along a
    direction that changes this row's pre-activation and no other row's (all rows of the
    layer, not only those switching in the region: an always-active one would move the
    output on both sides)."""
    if not rows:
        return
    W = np.array([np.where(r.known, r.w, 0.0) for r in rows])
    B = np.array([r.b for r in rows])
    for j, r in enumerate(rows):
        r.votes = []
        for x in r.x_points[:3]:
            rs = region_space(layers, x)
            if rs is None:
                continue
            space, P = rs
            M = W[:, P]
            live = np.abs(M).max(axis=1) > 0
            if not live[j] or np.linalg.matrix_rank(M[live]) < int(live.sum()):
                continue
            y = space.center
            idx = int(np.sum(live[:j]))
            flips = _one(o, space, M[live], idx, y)
            if flips is not None:
                r.votes.append(-1 if flips else 1)
            if len(r.votes) >= 2:
                break
    del B


def _one(o: QueryOracle, space: Space, M: np.ndarray, i: int, y: np.ndarray) -> bool | None:
    D = np.linalg.pinv(M)
    d = D[:, i] / np.linalg.norm(D[:, i])
    e = 0.05 * space.scale
    for _ in range(30):
        pts = np.array([y - e * d, y, y + e * d])
        if space.valid(pts).all():
            break
        e *= 0.5
    F = o(space.to_x(pts))
    minus = float(np.max(np.abs(F[0] - F[1])))
    plus = float(np.max(np.abs(F[2] - F[1])))
    if plus > SIDE_RATIO * minus:
        return False
    if minus > SIDE_RATIO * plus:
        return True
    return None


def _progress(rows: list[PartialRow]) -> tuple[int, int]:
    """Rows that passed the global test, and their known weights."""
    conf = [r for r in rows if r.status == "global"]
    return len(conf), sum(int(r.known.sum()) for r in conf)


def _confirmed(rows: list[PartialRow], width: int | None) -> list[PartialRow]:
    """The rows kept: those that passed the global test (most regions first), at most
    ``width``."""
    order = sorted([r for r in rows if r.status == "global"],
                   key=lambda r: (-int(r.known.sum()), -r.regions))
    if width is not None and len(order) < width:
        # Rows never testable (they switch only where an unknown weight matters), seen in
        # two regions at least, fill the known width.
        order += [r for r in rows if r.status == "new" and r.regions >= 2][: width - len(order)]
    return order if width is None else order[:width]


def _row_is_global(probe: _Probe, layers, row: PartialRow, rng: np.random.Generator,
                   radius: float) -> bool | None:
    """Whether ``row`` switches where it predicts on random input lines far from where it
    was found.  Inside one region of the earlier layers a deeper neuron's bent hyperplane
    looks flat (and even agrees across regions that share the pattern of the layers in
    between); at its predicted crossings elsewhere it does not switch.  The crossings are
    computed from the recovered layers alone; each is checked by locating the kink there."""
    d = probe.space.dim
    w = np.where(row.known, row.w, 0.0)
    hits, tries = 0, 0
    for _ in range(8):
        x0 = probe.space.sample(rng)
        r = _random_direction(d, rng)
        t = np.linspace(-radius, radius, 4001)
        X = x0 + t[:, None] * r
        H = _hidden(layers, X)
        z = H @ w + row.b
        ok_rows = ((H > 0) & ~row.known).sum(axis=1) == 0  # unknown weights do not matter there
        flip = np.nonzero((np.sign(z[:-1]) != np.sign(z[1:])) & ok_rows[:-1] & ok_rows[1:])[0]
        if flip.size == 0:
            continue
        i = int(rng.choice(flip))
        ta, tb = t[i], t[i + 1]
        for _ in range(60):  # bisection on the recovered network: no queries
            tm = 0.5 * (ta + tb)
            zm = _hidden(layers, (x0 + tm * r)[None])[0] @ w + row.b
            if np.sign(zm) == np.sign(z[i]):
                ta = tm
            else:
                tb = tm
        tc = 0.5 * (ta + tb)
        tries += 1
        rho = 0.25 * (t[1] - t[0])
        found = probe.search(x0 + tc * r, r).single(rho)
        if found is not None and abs(found) <= PLANE_RTOL * (1.0 + radius):
            hits += 1
            if hits >= 2:
                return True
        elif tries - hits >= 3:
            return False
    if tries == 0:
        return None  # no crossing where the known weights suffice: ask again later
    return hits >= 1 and tries == hits


def _beyond_crossing(layers, row: PartialRow, rng: np.random.Generator) -> np.ndarray | None:
    """A point just past where an earlier neuron whose weight in ``row`` is unknown turns
    on, reached from a critical point of ``row`` along its local hyperplane: the neuron's
    hyperplane probably continues into that region, where the weight shows."""
    x = row.x_points[int(rng.integers(len(row.x_points)))]
    d = x.shape[0]
    U, b = layers[-1]
    # Pre-activations of the last known layer as affine maps of x in this region.
    act, A, a, _, _ = _forward_affine(layers[:-1], x) if len(layers) > 1 else (None, np.eye(d), np.zeros(d), None, None)
    ZA, Za = U @ A, U @ a + b
    z = ZA @ x + Za
    on = z > 0
    w = np.where(row.known, row.w, 0.0)
    normal = (w * on) @ ZA
    cand = [k for k in np.nonzero(~row.known)[0] if not on[k]]
    if not cand or np.linalg.norm(normal) == 0:
        return None
    k = int(rng.choice(cand))
    g = ZA[k]
    v = g - (g @ normal) / (normal @ normal) * normal
    if g @ v <= ROUNDOFF * np.linalg.norm(g) ** 2:
        return None
    t = -z[k] / (g @ v)
    return x + 1.02 * t * v
