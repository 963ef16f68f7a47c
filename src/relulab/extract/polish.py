"""A last joint precision polish of a recovered ReLU network, on oracle rows already known.

Where every neuron of the recovered network is clearly on one side of its kink (the
pre-activation is far from 0 compared with the parameter error), the true network has the
same activation pattern, and with the pattern held fixed the output is a polynomial
(multilinear) in the parameters: ``f(x) = W_L D_{L-1}(x) (... D_1(x) (W_1 x + b_1) ...) + b_L``.
So all weights and biases can be refined together by Gauss-Newton on exact oracle values
``(x, y)``: the model is exact at those points, not an approximation.  The points are rows
the oracle already answered (:meth:`QueryOracle.keep_rows`), so the polish costs no query.

Optionally, critical points of neuron ``j`` of hidden layer ``k`` (points the attack
located on its kink surface) add the equations ``z_kj(x) = 0`` (divided by the norm of the
neuron's incoming row), which pin a rarely active neuron that few value rows see.

The scaling symmetry (a hidden neuron's incoming row times ``s > 0``, its outgoing column
divided by ``s``) leaves the output unchanged, so the least-squares problem is rank
deficient along those directions: the step solves the column-scaled normal equations
with those directions made definite (one Cholesky factor of the first Jacobian, reused
for every step: a chord Gauss-Newton; ``method="lstsq"``: a fresh Jacobian and an SVD
minimum-norm solve per step, the slower reference), the scaling part of each step is
projected out, and every hidden neuron's incoming row is rescaled to its norm before the
polish (the factor pushed into the next layer: the same function).

The rows are split at random into a fitting part and a held-out part; the polished network
is accepted only if its largest output error on the held-out rows does not grow (and the
fitting residual goes down); otherwise the input network is returned unchanged.

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> rng = np.random.default_rng(0)
    >>> true = Network([rng.normal(size=(4, 3)), rng.normal(size=(3, 4)), rng.normal(size=(1, 3))],
    ...                [rng.normal(size=4), rng.normal(size=3), rng.normal(size=1)])
    >>> X = rng.normal(size=(600, 3)); Y = true(X)
    >>> off = Network(true.weights, [b + 1e-7 for b in true.biases])
    >>> net, rep = polish(off, X, Y)
    >>> rep.accepted, rep.held_after < 1e-12 < rep.held_before
    (True, True)
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..limits import Deadline, dense_flop_rate
from ..network import Network
from ..results import Result
from ..tolerance import TINY

__all__ = ["PolishReport", "polish"]

# A neuron's pre-activation must exceed this x (|row| |input| + |bias|) at a point for the
# point to count as unambiguous: far above the ~1e-9 relative parameter error the polish
# starts from (so the true network has the same pattern there), far below typical margins.
MARGIN_RTOL = 1e-6  # tol: see the comment above
# Singular values below this x the largest are cut in the step: the scaling directions
# (exactly 0 up to rounding) and nothing the data determines.
RCOND = 1e-12  # tol: see the comment above
# Critical points lie on their neuron's surface to this (distance over row norm): traced
# points are located to ~1e-10 and better; another neuron's surface is far farther away.
ON_SURFACE_RTOL = 1e-7  # tol: see the comment above
# Ridge added to the unit-diagonal normal matrix (method "normal"): a direction whose
# eigenvalue is below it is damped per step, not solved (raised x100 if the Cholesky fails).
RIDGE = 1e-12  # tol: see the comment above
# A neuron's scaling direction counts as unseen by the rows if |Js z| is below this x |z|
# (exactly 0 up to rounding when its whole direction is free; O(1) when its row is held).
GAUGE_NULL_RTOL = 1e-8  # tol: see the comment above
# The first step's Jacobian costs about this many forward passes per output (the pass
# back with an m x m identity per row, the column norms and the scaling): the polish
# does not start when that and its factor would not end in the time left.
JACOBIAN_PASSES = 8


@dataclass(frozen=True)
class PolishReport(Result):
    """What :func:`polish` did.

    Attributes:
        accepted: the polished network is returned (else the input network, unchanged).
        points_fit, points_held: value rows used in the fit / held out for the check.
        critical_rows: critical-point equations used.
        fit_before, fit_after: largest absolute output residual on the fitting rows.
        held_before, held_after: largest absolute output error on the held-out rows.
        iterations: Gauss-Newton steps taken.

    Example:
        >>> PolishReport(False, 0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0, "no rows").accepted
        False
    """

    accepted: bool
    points_fit: int
    points_held: int
    critical_rows: int
    fit_before: float
    fit_after: float
    held_before: float
    held_after: float
    iterations: int
    message: str


def _params(net: Network) -> tuple[list[np.ndarray], list[np.ndarray]]:
    return ([np.array(W, dtype=float) for W in net.weights],
            [np.array(b, dtype=float).ravel() for b in net.biases])


def _forward(Ws, bs, X: np.ndarray, masks=None):
    """Activations per layer (input first) and pre-activations; with ``masks`` the pattern
    is the one given, not the one of the pre-activations."""
    acts, pres = [X], []
    a = X
    for k in range(len(Ws) - 1):
        z = a @ Ws[k].T + bs[k]
        pres.append(z)
        a = z * masks[k] if masks is not None else np.maximum(z, 0.0)
        acts.append(a)
    return acts, pres, a @ Ws[-1].T + bs[-1]


def _clear(Ws, bs, acts, pres) -> np.ndarray:
    """Rows where every hidden neuron is clearly on one side of its kink."""
    ok = np.ones(acts[0].shape[0], dtype=bool)
    for k, z in enumerate(pres):
        size = np.abs(acts[k]) @ np.abs(Ws[k]).T + np.abs(bs[k]) + TINY
        ok &= np.all(np.abs(z) > MARGIN_RTOL * size, axis=1)
    return ok


def _backprop(Ws, acts, masks, delta: np.ndarray, top: int) -> np.ndarray:
    """Jacobian rows of ``sum delta * z_top`` (``z_top``: layer ``top``'s pre-activation,
    ``top = len(Ws) - 1`` the output) with respect to all parameters, in the order
    ``W_0, b_0, W_1, b_1, ...``.  ``delta`` has shape (rows, outputs, n_top)."""
    R = delta.shape[0] * delta.shape[1]
    sizes = [p.size for W in Ws for p in (W, W[:, 0])]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    J = np.zeros((R, starts[-1]))  # filled in place: no stacking copy of a big matrix
    for k in range(min(top, len(Ws) - 1), -1, -1):
        n_out, n_in = Ws[k].shape
        dW = J[:, starts[2 * k]:starts[2 * k + 1]].reshape(delta.shape[0], delta.shape[1], n_out, n_in)
        np.multiply(delta[:, :, :, None], acts[k][:, None, None, :], out=dW)
        if not np.shares_memory(dW, J):  # reshape had to copy (not expected): write back
            J[:, starts[2 * k]:starts[2 * k + 1]] = dW.reshape(R, -1)
        J[:, starts[2 * k + 1]:starts[2 * k + 2]] = delta.reshape(R, -1)
        if k > 0:
            delta = (delta @ Ws[k]) * masks[k - 1][:, None, :]
    return J


def _unflatten(Ws, bs, theta: np.ndarray):
    out_W, out_b, i = [], [], 0
    for W, b in zip(Ws, bs, strict=True):
        out_W.append(theta[i:i + W.size].reshape(W.shape))
        i += W.size
        out_b.append(theta[i:i + b.size].copy())
        i += b.size
    return out_W, out_b


def _flatten(Ws, bs) -> np.ndarray:
    return np.concatenate([p for W, b in zip(Ws, bs, strict=True) for p in (W.ravel(), b)])


def _gauge(Ws, bs) -> np.ndarray:
    """An orthonormal basis of the scaling directions (one per hidden neuron: its incoming
    row and bias grow, its outgoing column shrinks), in the parameter order."""
    cols = _gauge_raw(Ws, bs)
    if not cols.shape[1]:
        return cols
    Q, R = np.linalg.qr(cols)
    return Q[:, np.abs(np.diag(R)) > TINY]


def _gauge_raw(Ws, bs) -> np.ndarray:
    """The scaling direction of each hidden neuron, one column each (not normalised)."""
    sizes = [p.size for W, b in zip(Ws, bs, strict=True) for p in (W, b)]
    starts = np.concatenate([[0], np.cumsum(sizes)])
    cols = []
    for k in range(len(Ws) - 1):
        for j in range(Ws[k].shape[0]):
            g = np.zeros(starts[-1])
            n_in = Ws[k].shape[1]
            g[starts[2 * k] + j * n_in: starts[2 * k] + (j + 1) * n_in] = Ws[k][j]
            g[starts[2 * k + 1] + j] = bs[k][j]
            n_next = Ws[k + 1].shape[1]
            g[starts[2 * k + 2] + j: starts[2 * k + 3]: n_next] = -Ws[k + 1][:, j]
            cols.append(g)
    if not cols:
        return np.zeros((starts[-1], 0))
    return np.stack(cols, axis=1)


def _regauge(Ws, bs, norms) -> None:
    """Rescale each hidden neuron's incoming row (and bias) back to the norm it had: the
    same function (positive scaling, pushed into the next layer)."""
    for k in range(len(Ws) - 1):
        cur = np.sqrt((Ws[k] ** 2).sum(axis=1) + bs[k] ** 2)
        f = np.where(cur > TINY, norms[k] / np.maximum(cur, TINY), 1.0)
        Ws[k] *= f[:, None]
        bs[k] *= f
        Ws[k + 1] /= f[None, :]


def _critical_rows(Ws, bs, critical, weight: float):
    """Residuals and Jacobian rows of ``z_kj(x) / |row_kj| = 0`` at the critical points
    (only where every neuron of the layers below is clearly on one side)."""
    res, jac = [], []
    for k, j, P in critical:
        P = np.atleast_2d(np.asarray(P, dtype=float))
        acts, pres, _ = _forward(Ws, bs, P)
        ok = _clear(Ws[:k], bs[:k], acts[:k + 1], pres[:k]) if k else np.ones(P.shape[0], bool)
        if not ok.any():
            continue
        masks = [z[ok] > 0 for z in pres]
        a_ok = [a[ok] for a in acts]
        nrm = float(np.sqrt(Ws[k][j] @ Ws[k][j] + bs[k][j] ** 2)) + TINY
        delta = np.zeros((int(ok.sum()), 1, Ws[k].shape[0]))
        delta[:, 0, j] = weight / nrm
        res.append(weight * pres[k][ok, j] / nrm)
        jac.append(_backprop(Ws, a_ok, masks, delta, k))
    if not res:
        return None
    return np.concatenate(res), np.vstack(jac)


def _normal_solver(Js: np.ndarray, gauge: np.ndarray):
    """A solver ``g -> step`` of ``(Js^T Js + P + lam I) step = g`` by one Cholesky factor.

    ``Js`` is the column-scaled Jacobian (unit columns), ``gauge`` the scaling directions
    in those coordinates (rows of the used parameters, one column per neuron).  ``P`` is
    the projector onto those that are null directions of ``Js`` (the fit cannot see them;
    not so for a neuron whose incoming row is held), so adding ``P`` makes the matrix
    definite without changing the step elsewhere.  ``lam`` (1e-12, raised
    x100 while the factorisation fails) damps directions the rows determine less than
    that; the repeated steps still move along them (each by the factor ``e / (e + lam)``
    of its eigenvalue ``e``) and the acceptance check decides.  Normal equations square the
    condition number, but each step only corrects a 1e-9 error, so a relative error of the
    step far above rounding still converges over the steps (iterative refinement)."""
    import scipy.linalg as sla

    A = Js.T @ Js  # numpy uses the symmetric rank-k update for this product
    if gauge.size:
        # keep a neuron's direction only where the rows cannot see it (|Js z| ~ rounding)
        null = np.linalg.norm(Js @ gauge, axis=0) <= GAUGE_NULL_RTOL * np.linalg.norm(gauge, axis=0)
        gauge = gauge[:, null]
    if gauge.size:
        Q, R = np.linalg.qr(gauge)
        Q = Q[:, np.abs(np.diag(R)) > TINY * max(1.0, float(np.abs(np.diag(R)).max(initial=0.0)))]
        A += Q @ Q.T
    lam = RIDGE
    while True:
        try:
            c = sla.cho_factor(A + lam * np.eye(A.shape[0]), lower=False, check_finite=False)
            return lambda g: sla.cho_solve(c, g, check_finite=False)
        except np.linalg.LinAlgError:
            if lam > 1e-4:
                raise
            lam *= 100.0


def polish(
    net: Network,
    X: np.ndarray,
    Y: np.ndarray,
    *,
    critical: list[tuple[int, int, np.ndarray]] | None = None,
    critical_weight: float = 1.0,
    holdout: float = 0.25,
    iterations: int = 12,
    max_points: int = 12000,
    max_params: int = 12000,
    method: str = "normal",
    seed: int = 0,
    deadline: Deadline | None = None,
) -> tuple[Network, PolishReport]:
    """Refine all parameters of ``net`` jointly on known oracle rows (module docstring).

    Args:
        net: the recovered network (no skip connection).
        X, Y: oracle rows ``Y = f(X)`` already answered (no query is made here).
        critical: optional ``(k, j, P)``: points ``P`` on the kink surface of neuron ``j``
            of hidden layer ``k`` (0-based), giving the equations ``z_kj(P) = 0``.
        critical_weight: weight of those equations (their residual is a pre-activation
            over the row norm, an input-space distance) against output residuals.
        holdout: share of the rows held out for the acceptance check.
        iterations: the most Gauss-Newton steps.
        max_points: the most value rows used in the fit (a random subset beyond).
        max_params: networks with more parameters are returned unpolished (the dense
            ``params x params`` normal matrix would not fit: 12,000 is 1.2 GB).
        method: ``"normal"`` (default): the column-scaled normal equations of the first
            Jacobian, Cholesky-factorised once, reused for every step (chord Gauss-Newton:
            the parameters move by ~1e-9 relative, so the Jacobian hardly changes; each
            further step is one residual and one ``J^T r``); ``"lstsq"``: a fresh Jacobian
            and an SVD least-squares solve per step (the slower reference).
        deadline: a :class:`~relulab.limits.Deadline`: the polish does not start when its
            first step (the Jacobian, timed by a forward pass, and its factorisation,
            estimated from :func:`~relulab.limits.dense_flop_rate`) would not end before
            it, does not factorise when the Jacobian took the time left, and takes no
            further step after it.

    Returns:
        ``(network, report)``: the polished network when accepted, else ``net``.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> f = Network([[[1.0, -1.0], [0.5, 2.0]], [[1.0, -2.0]]], [[0.1, -0.3], [0.2]])
        >>> X = np.random.default_rng(1).normal(size=(200, 2))
        >>> g, rep = polish(f, X, f(X))  # already exact: nothing to gain
        >>> rep.held_after <= rep.held_before + 1e-15
        True
    """
    import scipy.linalg  # noqa: F401 - loaded before the clock is read (0.4 s on a first call)

    X = np.asarray(X, dtype=float)
    Y = np.asarray(Y, dtype=float).reshape(X.shape[0], -1)
    Ws, bs = _params(net)
    if method not in ("normal", "lstsq"):
        raise ValueError(f"polish: method must be 'normal' or 'lstsq', got {method!r}")
    if net.skip is not None or len(Ws) < 2 or X.shape[0] < 4 or net.n_params > max_params:
        return net, PolishReport(False, 0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0,
                                 "not polished (no hidden layer, a skip term, too few rows or too many parameters)")
    rng = np.random.default_rng(seed)
    order = rng.permutation(X.shape[0])
    n_held = max(1, int(round(holdout * X.shape[0])))
    held, pool = order[:n_held], order[n_held:]
    acts, pres, out = _forward(Ws, bs, X[pool])
    clear = pool[_clear(Ws, bs, acts, pres)]
    if clear.size > max_points:
        clear = rng.choice(clear, size=max_points, replace=False)
    Xf, Yf = X[clear], Y[clear]
    held_before = float(np.max(np.abs(net(X[held]) - Y[held])))
    t_fwd = time.perf_counter()
    _, pres_f, out_f = _forward(Ws, bs, Xf)
    t_fwd = time.perf_counter() - t_fwd
    masks = [z > 0 for z in pres_f]
    fit_before = float(np.max(np.abs(out_f - Yf))) if Xf.shape[0] else 0.0

    def unpolished(why: str) -> tuple[Network, PolishReport]:
        return net, PolishReport(False, int(Xf.shape[0]), int(n_held), 0, fit_before, fit_before,
                                 held_before, held_before, 0, f"not polished ({why})")

    if Xf.shape[0] < 4:
        return unpolished("too few clear rows")
    left = None if deadline is None else deadline.left()
    p = net.n_params
    m = Yf.shape[1]
    # the first step: the Jacobian by backpropagation (m passes back, each a few forward
    # passes' work, timed on this machine by the pass above) and its normal-matrix factor
    # (its multiply-adds counted twice, as the measured flop rate counts them: one add
    # and one multiply each; counted once, 1,401 parameters took 2x the estimate)
    factor_need = 2.0 * (Xf.shape[0] * m * p * p + p**3 / 3.0) / dense_flop_rate()
    need = factor_need + JACOBIAN_PASSES * m * t_fwd
    if left is not None and need > left:
        return unpolished(f"time limit: {max(left, 0.0):.3g} s left, the first step needs about {need:.3g} s")
    norms = [np.sqrt((W ** 2).sum(axis=1) + b ** 2) for W, b in zip(Ws[:-1], bs[:-1], strict=False)]
    eye = np.broadcast_to(np.eye(m), (Xf.shape[0], m, m))

    def system(Ws, bs):
        acts, _, out = _forward(Ws, bs, Xf, masks)
        r = (out - Yf).ravel()
        J = _backprop(Ws, acts, masks, eye.copy(), len(Ws) - 1)
        n_crit = 0
        if critical:
            cr = _critical_rows(Ws, bs, critical, critical_weight)
            if cr is not None:
                n_crit = cr[0].size
                r, J = np.concatenate([r, cr[0]]), np.vstack([J, cr[1]])
        return r, J, n_crit

    def residual(Ws, bs) -> np.ndarray:
        r = (_forward(Ws, bs, Xf, masks)[2] - Yf).ravel()
        if critical:
            cr = _critical_rows(Ws, bs, critical, critical_weight)
            if cr is not None:
                r = np.concatenate([r, cr[0]])
        return r

    def score(Ws, bs) -> float:
        return float(np.max(np.abs(_forward(Ws, bs, Xf, masks)[2] - Yf)))

    # A neuron active on every fitting row is affine there: its bias trades against the
    # next layer's biases (and its row against the next layer's other inputs) with no
    # change on the rows, so its incoming row and bias are held as they are.
    frozen = np.zeros(_flatten(Ws, bs).size, dtype=bool)
    i = 0
    for k, (W, b) in enumerate(zip(Ws, bs, strict=True)):
        if k < len(Ws) - 1:
            on = masks[k].all(axis=0)
            frozen[i:i + W.size] = np.repeat(on, W.shape[1])
            frozen[i + W.size:i + W.size + b.size] = on
        i += W.size + b.size
    best = (fit_before, [W.copy() for W in Ws], [b.copy() for b in bs])
    steps, n_crit, worse = 0, 0, 0
    G = _gauge(Ws, bs)
    solve = None  # the factorised step of the first Jacobian (method "normal")
    for _ in range(iterations):
        if steps and deadline is not None and deadline.expired():
            break   # the best parameters so far are checked below as usual
        if solve is None or method == "lstsq":
            r, J, n_crit = system(Ws, bs)
            if not steps and deadline is not None and deadline.left() < factor_need:
                # the Jacobian took the time the factor needed: stop before it, unpolished
                return unpolished(f"time limit: the Jacobian took the time left, the factor needs "
                                  f"about {factor_need:.3g} s")
            col = np.sqrt((J ** 2).sum(axis=0))
            use = (col > TINY) & ~frozen  # parameters no row depends on (never active) stay
            Js = J[:, use] / col[use]
            if method == "normal":
                solve = _normal_solver(Js, (_gauge_raw(Ws, bs) * col[:, None])[use])
        else:
            r = residual(Ws, bs)
        step = np.zeros(J.shape[1])
        if method == "normal":
            step[use] = solve(Js.T @ -r) / col[use]
        else:
            sol, *_ = np.linalg.lstsq(Js, -r, rcond=RCOND)
            step[use] = sol / col[use]
        # Drop the step's scaling part (it is in the null space: the fit is unchanged), so
        # parameters no row sees (a zero column) stay consistent with their neuron's scale
        # (the directions of the start: the parameters move by ~1e-9 relative).
        step -= G @ (G.T @ step)
        Ws, bs = _unflatten(Ws, bs, _flatten(Ws, bs) + step)
        _regauge(Ws, bs, norms)
        steps += 1
        s = score(Ws, bs)
        if s < best[0]:
            best, worse = (s, [W.copy() for W in Ws], [b.copy() for b in bs]), 0
        else:
            # no progress: rounding reached (or the fixed pattern stopped holding); the
            # chord steps of "normal" may stall a step on the max-norm score, so allow two
            worse += 1
            if method == "lstsq" or worse >= 2:
                break
    fit_after, Ws, bs = best
    cand = Network(Ws, bs)
    held_after = float(np.max(np.abs(cand(X[held]) - Y[held])))
    ok = fit_after < fit_before and held_after <= held_before
    msg = (f"{'accepted' if ok else 'rejected'}: {Xf.shape[0]} value rows"
           f"{f' and {n_crit} critical-point equations' if n_crit else ''}, {steps} step(s); largest "
           f"output error on {n_held} held-out rows {held_before:.3g} -> {held_after:.3g}, on the "
           f"fitted rows {fit_before:.3g} -> {fit_after:.3g}")
    return (cand if ok else net), PolishReport(ok, int(Xf.shape[0]), int(n_held), int(n_crit),
                                               fit_before, fit_after, held_before,
                                               held_after, steps, msg)


def assign_critical(net: Network, k: int, P: np.ndarray, rtol: float = ON_SURFACE_RTOL) -> int | None:
    """The neuron of hidden layer ``k`` (0-based) whose kink surface the points ``P`` lie
    on: the one with the smallest median ``|z_kj| / |row_kj|``, if that is below ``rtol``
    (points of a surface the network does not hold give None).

    Example:
        >>> from relulab import Network
        >>> f = Network([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0]]], [[0.0, -0.5], [0.0]])
        >>> assign_critical(f, 0, np.array([[3.0, 0.5], [-1.0, 0.5]]))
        1
    """
    Ws, bs = _params(net)
    P = np.atleast_2d(np.asarray(P, dtype=float))
    _, pres, _ = _forward(Ws, bs, P)
    nrm = np.sqrt((Ws[k] ** 2).sum(axis=1) + bs[k] ** 2) + TINY
    med = np.median(np.abs(pres[k]) / nrm, axis=0)
    j = int(np.argmin(med))
    return j if med[j] <= rtol else None
