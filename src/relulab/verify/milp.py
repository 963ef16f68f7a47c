"""Exact mixed-integer encoding of a ReLU network (big-M) on HiGHS, via :mod:`relulab.lp`.

Variables: the input ``x``, then per hidden layer the post-activations ``h`` and one
binary ``a`` per neuron.  With pre-activation bounds ``lo <= z <= hi`` (the tightest
available: CROWN back-substitution, optionally LP tightening layer by layer) each
neuron reads::

    h >= z,   h >= 0,   h <= z - lo (1 - a),   h <= hi a,   a in {0, 1}

which is exact: ``a = 1`` forces ``h = z >= 0``, ``a = 0`` forces ``h = 0 >= z``.
A stable neuron gets its binary fixed by its bounds (no branching on it); only unstable
neurons count as binaries.

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> from relulab.domain import Box
    >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
    >>> r = maximize(net, Box([-1], [2]))
    >>> r.status, round(r.value, 9), r.x.round(9).tolist()
    ('optimal', 2.0, [2.0])
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from ..bounds import crown_batch, float_layers
from ..domain import Box, Polytope, as_domain
from ..errors import RelulabError
from ..limits import ResourceLimitError, check_bytes, check_seconds
from ..lp import INF, LPModel, LPResult, objective_scale
from ..network import Network, nearest_float
from ..tolerance import (
    BIG_M_FLOOR,
    FEAS_TOL,
    HIGHS_SMALL,
    HUGE_MILP_VALUE,
    MILP_FEAS_REL,
    MILP_FEAS_TOL,
    MIP_GAP,
    PROOF_MARGIN,
    ROUNDOFF,
    TINY,
    or_default,
    scaled_tol,
)
from ._centre import centre, centre_domain, shift_error
from ._counterexample import forward_error
from .result import OptimumResult, RangeResult

__all__ = ["MILPEncoding", "encode", "maximize", "minimize", "output_range", "tighten_bounds",
           "milp_term"]


@dataclass
class MILPEncoding:
    """The pieces of the MILP (rows ``A_ub v <= b_ub`` and ``A_eq v == b_eq``).

    ``h_cols[k]``/``a_cols[k]`` give the column indices of layer ``k``'s
    post-activations and binaries; ``out_A``, ``out_c`` express the outputs as
    ``y = out_A @ v + out_c``.

    Example:
        >>> import numpy as np
        >>> from relulab import Box, Network
        >>> from relulab.lp import solve
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
        >>> enc = encode(net, Box([-1], [2]))
        >>> r = solve(enc.out_A.toarray()[0], A_ub=enc.A_ub, b_ub=enc.b_ub, lb=enc.lb, ub=enc.ub,
        ...           integer=enc.integer, maximize=True)            # max |x| on [-1, 2]
        >>> r.status, round(r.objective, 9)
        ('optimal', 2.0)
    """

    n_vars: int
    A_ub: sp.csr_matrix
    b_ub: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    integer: np.ndarray
    out_A: sp.csr_matrix
    out_c: np.ndarray
    h_cols: list[np.ndarray]
    a_cols: list[np.ndarray]
    n_binaries: int
    d: int


def _domain_parts(domain: Box | Polytope) -> tuple[Box, np.ndarray | None, np.ndarray | None]:
    if isinstance(domain, Box):
        return domain, None, None
    # the bounding box, or the looser box a time limit left (Polytope.enclosing_box)
    return domain.enclosing_box(), domain.A, domain.b


def encode(
    net: Network,
    domain: Box | Polytope,
    pre: list[tuple[np.ndarray, np.ndarray]] | None = None,
) -> MILPEncoding:
    """Big-M MILP of ``net`` over ``domain`` with pre-activation bounds ``pre`` (computed by
    CROWN when not given).  Returns a :class:`MILPEncoding`.

    Example:
        >>> import numpy as np
        >>> from relulab import Box, Network
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
        >>> enc = encode(net, Box([-1], [2]))
        >>> enc.n_binaries, enc.d, enc.out_A.shape[1] == enc.n_vars     # both neurons unstable
        (2, 1, True)
    """
    domain = as_domain(domain, net.input_dim)
    Ws, bs, sk = float_layers(net)
    box, PA, Pb = _domain_parts(domain)
    if pre is None:
        pre = symbolic_pre(Ws, bs, box)
    d = net.input_dim
    widths = [W.shape[0] for W in Ws[:-1]]
    n_vars = d + 2 * sum(widths)
    lb = np.empty(n_vars)
    ub = np.empty(n_vars)
    integer = np.zeros(n_vars, dtype=bool)
    lb[:d], ub[:d] = box.lo, box.hi
    rows, cols, vals, rhs = [], [], [], []
    n_rows = 0
    if PA is not None and PA.shape[0]:
        # a domain row's entries HiGHS drops would cut points of the domain off: they are
        # dropped here and the row moved outward by what they can add (a relaxation)
        PA, slack = drop_small(PA, box.magnitudes)
        r_, c_ = np.nonzero(PA)
        rows.append(r_)
        cols.append(c_)
        vals.append(PA[r_, c_])
        rhs.append(Pb + slack)
        n_rows += PA.shape[0]
    prev_cols = np.arange(d)
    h_cols, a_cols = [], []
    pos = d
    n_bin = 0
    prev_mag = box.magnitudes   # the largest each input can be
    for k, (W, b) in enumerate(zip(Ws[:-1], bs[:-1], strict=True)):
        n = W.shape[0]
        # weights HiGHS would drop (at most its small_matrix_value) are dropped here, and
        # both rows that carry W are moved outward by what they can add: every true (x, h)
        # stays feasible (relu(5e-10 x) on |x| <= 1e9 had lost 0.5 silently, and maximize
        # read "optimal 1.000008" for 1.5)
        W, slack = drop_small(W, prev_mag)
        hc = np.arange(pos, pos + n)
        ac = np.arange(pos + n, pos + 2 * n)
        pos += 2 * n
        lo, hi = pre[k]
        lo = np.minimum(lo, hi)
        lo, hi = _big_m_floor(lo, hi)
        lb[hc], ub[hc] = 0.0, np.maximum(hi, 0.0)
        integer[ac] = True
        inactive = hi <= 0
        # a neuron with lo = hi = 0 is both; it outputs 0, so it counts as inactive (fixing
        # its binary to both 1 and 0 made the MILP infeasible)
        active = (lo >= 0) & ~inactive
        lb[ac] = np.where(active, 1.0, 0.0)
        ub[ac] = np.where(inactive, 0.0, 1.0)
        n_bin += int(np.sum(~active & ~inactive))
        Wr, Wc = np.nonzero(W)
        Wv = W[Wr, Wc]
        # (1)  z - h <= 0            ->  W h_prev - h <= -b
        rows += [n_rows + Wr, n_rows + np.arange(n)]
        cols += [prev_cols[Wc], hc]
        vals += [Wv, -np.ones(n)]
        rhs.append(-b + slack)
        n_rows += n
        # (2)  h - z + lo (1 - a) <= 0  ->  h - W h_prev - lo a <= b - lo
        # (an inactive neuron has a = 0 fixed; use its finite lo, harmless)
        rows += [n_rows + np.arange(n), n_rows + Wr, n_rows + np.arange(n)]
        cols += [hc, prev_cols[Wc], ac]
        vals += [np.ones(n), -Wv, -lo]
        rhs.append(b - lo + slack)
        n_rows += n
        # (3)  h - hi a <= 0
        rows += [n_rows + np.arange(n), n_rows + np.arange(n)]
        cols += [hc, ac]
        vals += [np.ones(n), -np.maximum(hi, 0.0)]
        rhs.append(np.zeros(n))
        n_rows += n
        h_cols.append(hc)
        a_cols.append(ac)
        prev_cols = hc
        prev_mag = np.maximum(hi, 0.0)
    if rows:
        A_ub = sp.csr_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
            shape=(n_rows, n_vars),
        )
    else:  # an affine network over a box: no constraint rows at all
        A_ub = sp.csr_matrix((0, n_vars))
    WL, bL = Ws[-1], bs[-1]
    m = WL.shape[0]
    out_A = sp.lil_matrix((m, n_vars))
    out_A[:, prev_cols] = WL
    out_c = bL.copy()
    if sk is not None:
        out_A[:, np.arange(d)] = out_A[:, np.arange(d)].toarray() + sk[0]
        out_c = out_c + sk[1]
    return MILPEncoding(
        n_vars, A_ub, np.concatenate(rhs) if rhs else np.zeros(0), lb, ub, integer,
        out_A.tocsr(), out_c,
        h_cols, a_cols, n_bin, d,
    )


def _big_m_floor(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An unstable neuron's big-M values raised to at least ``BIG_M_FLOOR`` in size.  A
    bound within rounding of 0 keeps its neuron unstable (:mod:`relulab.bounds`), and a
    big-M of 1e-13 is an entry HiGHS drops; a larger big-M is a weaker constraint, so the
    raise is sound.

    Example:
        >>> [v.tolist() for v in _big_m_floor(np.array([-1e-13, -2.0, 0.0]), np.array([1e-13, 3.0, 1.0]))]
        [[-1e-06, -2.0, 0.0], [1e-06, 3.0, 1.0]]
    """
    unstable = (lo < 0) & (hi > 0)
    return (np.where(unstable, np.minimum(lo, -BIG_M_FLOOR), lo),
            np.where(unstable, np.maximum(hi, BIG_M_FLOOR), hi))


def feasibility_tol(pre, box: Box, Ws=None, bs=None) -> float:
    """HiGHS's feasibility tolerance for the MILP with pre-activation bounds ``pre`` over
    ``box``: ``MILP_FEAS_TOL`` (1e-9), or ``MILP_FEAS_REL`` (1e-15) times the largest number
    in the encoding when that is more (float64 cannot resolve less on its rows).  With the
    layers ``Ws``, ``bs`` that includes the rows' terms: biases of 1e9 cancelling against
    weights of 1e3 on activations of 1e6 left pre-activations of 1e6, and with a
    tolerance of 1e-9 HiGHS's "optimal" bound was far under the maximum ("holds" on
    violated properties); at the terms' resolution it was right.

    Example:
        >>> from relulab import Box
        >>> feasibility_tol([(np.array([-1.0]), np.array([2.0]))], Box([-1], [1])) == MILP_FEAS_TOL
        True
        >>> feasibility_tol([(np.array([-1e10]), np.array([2.0]))], Box([-1], [1]))
        1e-05
    """
    big = max(_big_m(pre), float(np.max(np.abs(box.lo))), float(np.max(np.abs(box.hi))))
    if Ws is not None:
        big = max(big, _row_terms(Ws, bs, pre, box))
    return max(MILP_FEAS_TOL, MILP_FEAS_REL * big)


def _row_terms(Ws, bs, pre, box: Box) -> float:
    """The largest term on the encoding's layer rows ``z_k = W_k h_(k-1) + b_k``: a bias,
    or a weight times the largest its input can be (the box, then the ReLUs' bounds).

    Example:
        >>> _row_terms([np.array([[1e3]]), np.array([[2.0]])], [np.array([-1e9]), np.array([0.0])],
        ...            [(np.array([0.0]), np.array([5.0]))], Box([1e6], [1.1e6]))
        1100000000.0
    """
    h = float(max(np.max(np.abs(box.lo)), np.max(np.abs(box.hi))))
    big = 0.0
    with np.errstate(over="ignore"):
        for k, (W, b) in enumerate(zip(Ws, bs, strict=True)):
            # the layer's largest weight times its largest input, not each weight times its
            # own input: with inputs in different units (1e10 under weights of 1e-7 beside 1
            # under 1e3) HiGHS did not meet the finer tolerance (an "optimal" bound 270,000
            # under the maximum); such inputs are scaled first (verify._centre)
            big = max(big, float(np.max(np.abs(W), initial=0.0)) * h, float(np.max(np.abs(b), initial=0.0)))
            if k < len(pre):
                h = float(np.max(np.maximum(pre[k][1], 0.0), initial=0.0))   # relu's largest
    return big


def sound_tolerances(model: LPModel, Ws, bs, sk, pre, box: Box, C: np.ndarray) -> float:
    """Set HiGHS's feasibility tolerances of ``model`` (a MILP of :func:`encode` with
    pre-activation bounds ``pre`` over ``box``) to :func:`feasibility_tol`, and return what
    they can hide in ``C f`` (:func:`tolerance_error`, the largest over the rows of ``C``):
    the solver's bound of ``C f`` is proven only once widened by it.

    Example:
        >>> import numpy as np
        >>> from relulab import Box, Network
        >>> net, box = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]]), Box([-1], [2])  # |x|
        >>> layers = float_layers(net)
        >>> pre = symbolic_pre(layers[0], layers[1], box)
        >>> enc = encode(net, box, pre)
        >>> m = LPModel(enc.out_A.toarray()[0], A_ub=enc.A_ub, b_ub=enc.b_ub, lb=enc.lb, ub=enc.ub,
        ...             integer=enc.integer, maximize=True)
        >>> err = sound_tolerances(m, *layers, pre, box, np.array([[1.0]]))
        >>> bool(0 < err < 1e-7), bool(m.solve().bound <= 2 + err)   # max |x| on [-1, 2] is 2
        (True, True)
    """
    ftol = feasibility_tol(pre, box, Ws, bs)
    model.set_feasibility_tol(primal=ftol, mip=ftol if model.is_mip else None)
    model.set_exact_matrix()   # no entries made and dropped by presolve (see LPModel)
    return float(np.max(tolerance_error(Ws, bs, sk, pre, box, np.atleast_2d(C), tol=ftol)))


def _big_m(pre) -> float:
    """The largest big-M constant of the encoding (at least 1)."""
    return max([1.0] + [float(np.max(np.abs(np.concatenate(p)), initial=0.0)) for p in pre])


def tolerance_error(Ws, bs, sk, pre, box: Box, C: np.ndarray, tol: float = MILP_FEAS_TOL) -> np.ndarray:
    """How far ``C f(x)`` at a point the MILP accepts may be from ``C f`` at that point, per
    row of ``C``, when HiGHS honours its feasibility tolerance ``tol`` (rows, bounds and
    integrality).

    Within the tolerances an input may leave the box by ``tol (1 + |x|)``, and a neuron's
    output may differ from ``relu(z)`` by ``2 tol`` (a row and a bound), plus ``tol`` times
    its big-M constant when it is unstable (a binary at ``tol`` instead of 0 opens
    ``h <= hi a``; at ``1 - tol``, ``h >= z - lo (1 - a)``; a stable neuron's binary is
    fixed by its bounds).  A ReLU is 1-Lipschitz, so an error ``e_k`` in layer ``k`` moves the
    output by at most ``|C| |W_L| ... |W_(k+1)| e_k``; the sum over the layers is returned.
    The MILP's optimum is sound only beyond this (plus the gap): a spike of height 1e-6
    under an output weight of 1e6 is within the default tolerances.

    Example:
        >>> import numpy as np
        >>> from relulab import Box, Network
        >>> net = Network([[[1.0], [-1.0]], [[1e6, 1e6]]], [[0.0, 0.0], [0.0]])
        >>> Ws, bs, sk = float_layers(net)
        >>> pre = symbolic_pre(Ws, bs, Box([-1], [1]))
        >>> e = tolerance_error(Ws, bs, sk, pre, Box([-1], [1]), np.array([[1.0]]), tol=1e-9)
        >>> round(float(e[0]), 9)   # 2 x 1e6 x 3e-9 (the neurons) + 2e6 x 2e-9 (the input)
        0.01
    """
    C = np.abs(np.atleast_2d(np.asarray(C, dtype=np.float64)))
    # (weights HiGHS would drop from the layer rows are the encoding's own relaxation,
    # see encode; those of output rows, dropped_output_error)
    with np.errstate(over="ignore"):
        g = _nonneg_product(C, np.abs(Ws[-1]))  # sensitivity of each row to the last hidden layer
        err = np.zeros(C.shape[0])
        for k in range(len(Ws) - 2, -1, -1):
            lo, hi = pre[k]
            unstable = (lo < 0) & (hi > 0)
            err += _nonneg_product(g, tol * (2.0 + unstable * np.maximum(-lo, hi)))
            g = _nonneg_product(g, np.abs(Ws[k]))  # now the sensitivity to layer k's inputs
        if sk is not None:
            g = g + _nonneg_product(C, np.abs(sk[0]))
        err += _nonneg_product(g, tol * (1.0 + box.magnitudes))
    return err


def dropped_output_error(Ws, sk, pre, box: Box, C: np.ndarray) -> np.ndarray:
    """Per row of ``C``, what HiGHS can lose on the constraint rows ``C f(x)`` by dropping
    their entries of at most its small_matrix_value (``C W_L`` on the last hidden layer,
    ``C S`` on the inputs), over the layers' ranges.  (An objective keeps its small
    coefficients: this is for rows only.)

    Example:
        >>> Ws = [np.eye(1), np.array([[5e-10]])]
        >>> pre = [(np.array([-1e9]), np.array([1e9]))]
        >>> bool(dropped_output_error(Ws, None, pre, Box([-1e9], [1e9]), np.array([[1.0]]))[0] >= 0.5)
        True
    """
    C = np.atleast_2d(np.asarray(C, dtype=np.float64))
    last = box.magnitudes if len(Ws) == 1 else np.maximum(pre[-1][1], 0.0)
    with np.errstate(over="ignore"):
        err = _dropped(C @ Ws[-1], last)
        if sk is not None:
            err = err + _dropped(C @ sk[0], box.magnitudes)
    return err


def drop_small(M: np.ndarray, mag: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``M`` without the entries HiGHS would drop (nonzero, at most ``HIGHS_SMALL``), and
    per row what they can add over inputs of size up to ``mag`` (:func:`_dropped`): the
    rows ``M x <= b + slack`` keep every point of ``M x <= b`` (a relaxation).

    Example:
        >>> M, slack = drop_small(np.array([[5e-10, 1.0]]), np.array([1e9, 1.0]))
        >>> M.tolist(), bool(0.5 <= slack[0] < 0.5 + 1e-9)
        ([[0.0, 1.0]], True)
    """
    M = np.asarray(M, dtype=np.float64)
    return np.where(np.abs(M) <= HIGHS_SMALL, 0.0, M), _dropped(M, mag)


def _dropped(M: np.ndarray, mag: np.ndarray) -> np.ndarray:
    """Per row of ``M``, how much the entries HiGHS drops (nonzero, at most
    ``HIGHS_SMALL``: its small_matrix_value) can move the row over inputs of size up to
    ``mag``: a weight of 5e-10 on an input reaching 1e9 is 0.5, and the MILP of
    relu(5e-10 x) + relu(y) said "optimal 1.000008" for a maximum of 1.5.

    Example:
        >>> e = _dropped(np.array([[5e-10, 1.0], [0.0, 2.0]]), np.array([1e9, 1.0]))
        >>> bool(0.5 <= e[0] < 0.5 + 1e-9), float(e[1])
        (True, 0.0)
    """
    A = np.abs(np.asarray(M, dtype=np.float64))
    tiny = (A > 0) & (A <= HIGHS_SMALL)
    if not tiny.any():
        return np.zeros(A.shape[0])
    return _nonneg_product(np.where(tiny, A, 0.0), np.asarray(mag, dtype=np.float64)) * (1 + 2.0**-40)


def _nonneg_product(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``A @ B`` of nonnegative arrays that may hold inf (an overflowed error term), with
    ``0 x inf = 0``: a row with no sensitivity to a neuron gets none of its error (the
    plain product read NaN, and maximize reported a NaN bound as "optimal").

    Example:
        >>> _nonneg_product(np.array([[0.0, 1.0]]), np.array([np.inf, 2.0])).tolist()
        [2.0]
    """
    Ainf, Binf = np.isinf(A), np.isinf(B)
    out = np.where(Ainf, 0.0, A) @ np.where(Binf, 0.0, B)
    if Ainf.any() or Binf.any():
        reach = (Ainf.astype(np.float64) @ (B > 0)) + ((A > 0).astype(np.float64) @ Binf) > 0
        out = np.where(reach, np.inf, out)
    return out


def symbolic_pre(Ws, bs, box: Box) -> list[tuple[np.ndarray, np.ndarray]]:
    """CROWN pre-activation bounds over a box, as 1-D arrays per layer."""
    pre, _ = crown_batch(Ws, bs, box.lo[None], box.hi[None], intermediate="crown")
    return [(a[0].copy(), b[0].copy()) for a, b in pre]


def tighten_bounds(
    net: Network, domain: Box | Polytope, pre: list[tuple[np.ndarray, np.ndarray]] | None = None,
    time_limit: float | None = None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """LP-based bound tightening, layer by layer: minimise and maximise every unstable
    pre-activation over the LP relaxation of the layers before it (one warm-started
    :class:`~relulab.lp.LPModel` per layer).  Never looser than ``pre``.

    Example:
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]], [[1.0]]], [[0, 0], [-1.0], [0.0]])
        >>> [(p[1].round(6) + 0.0).tolist() for p in tighten_bounds(net, Box([-1], [1]))]
        [[1.0, 1.0], [0.0]]
    """
    domain = as_domain(domain, net.input_dim)
    Ws, bs, _ = float_layers(net)
    box, _, _ = _domain_parts(domain)
    pre = [(lo.copy(), hi.copy()) for lo, hi in (pre or symbolic_pre(Ws, bs, box))]
    t0 = _time.time()
    for k in range(1, len(Ws) - 1):
        if time_limit is not None and _time.time() - t0 > time_limit:
            break
        lo, hi = pre[k]
        unst = np.nonzero((lo < 0) & (hi > 0))[0]
        if unst.size == 0:
            continue
        enc = encode(net, domain, pre)
        model = LPModel(np.zeros(enc.n_vars), A_ub=enc.A_ub, b_ub=enc.b_ub, lb=enc.lb, ub=enc.ub)
        prev = enc.h_cols[k - 1]
        W, b = Ws[k], bs[k]
        for j in unst:
            if time_limit is not None and _time.time() - t0 > time_limit:
                break  # the neurons left keep their bounds (sound, looser)
            c = np.zeros(enc.n_vars)
            c[prev] = W[j]
            for sense in (False, True):
                model.set_objective(c, maximize=sense)
                if time_limit is not None:
                    # each LP within the time left (one LP ran seconds past the limit)
                    model.set_time_limit(max(time_limit - (_time.time() - t0), 1e-3))
                r = model.solve()
                opt = model.proven_bound(r) if r.status == "optimal" else None
                if opt is None:  # the objective is within HiGHS's tolerances only
                    continue
                # a small relative margin keeps the bound sound against LP tolerances
                v = opt + b[j]
                slack = scaled_tol(v, PROOF_MARGIN)
                if sense:
                    hi[j] = min(hi[j], v + slack)
                else:
                    lo[j] = max(lo[j], v - slack)
        pre[k] = (lo, np.maximum(hi, lo))
    return pre


def _objective(net: Network, c) -> np.ndarray:
    m = net.output_dim
    if c is None:
        if m != 1:
            raise RelulabError(
                f"maximize: the network has {m} outputs; give an objective vector c of length {m}"
            )
        return np.ones(1)
    c = np.asarray(c, dtype=np.float64).reshape(-1)
    if c.shape[0] != m:
        raise RelulabError(f"maximize: c has {c.shape[0]} entries; the network has {m} outputs")
    if not np.all(np.isfinite(c)):
        raise RelulabError("maximize: c must be finite")
    return c


def _fallback_points(domain: Box | Polytope, box: Box, extra: list[np.ndarray]) -> np.ndarray:
    pts = [box.center[None], *[e[None] for e in extra if e is not None]]
    P = np.concatenate(pts)
    P = np.clip(P, box.lo, box.hi)
    if isinstance(domain, Polytope):
        # a solver's point moved back from a centred polytope can sit outside by rounding
        # (a thin one near 2.7e6): pulled in, it keeps its value (the bounding box's
        # centre, first, is no solver's point)
        P = np.array([P[0]] + [domain.pulled_inside(p) for p in P[1:]])   # (a point inside stays)
        P = P[domain.contains(P)]
        if len(P) == 0:
            P = domain.chebyshev_center()[0][None]
    return P


def _pgd_best(net: Network, box: Box, c: np.ndarray, n: int = 2000, steps: int = 40,
              deadline: float | None = None) -> np.ndarray:
    """A good (not proven) maximiser of ``c . f`` over a box by sampling and projected
    sign-gradient ascent: the incumbent when the MILP stops at its time limit.  Past
    ``deadline`` (a ``time.time()`` value) only 64 samples and no ascent (on 2 m runs of
    ``range`` the full search took most of 18-87 s under a 0.3 s limit)."""
    from .attack import margin_grad

    late = deadline is not None and _time.time() > deadline
    if late:
        n, steps = 63, 0
    Ws, bs, sk = float_layers(net)
    rng = np.random.default_rng(0)
    X = np.concatenate([box.center[None], box.sample(n, rng)])
    C, d = -np.atleast_2d(c), np.zeros(1)  # the "margin" -c.f is minimised
    m, _ = margin_grad(Ws, bs, sk, X, C, d)
    X = X[np.argsort(m)[:64]]
    w = box.hi - box.lo
    for t in range(steps):
        if deadline is not None and _time.time() > deadline:
            break
        _, g = margin_grad(Ws, bs, sk, X, C, d)
        X = np.clip(X - 0.05 * (1 - t / steps) * w * np.sign(g), box.lo, box.hi)
    m, _ = margin_grad(Ws, bs, sk, X, C, d)
    return X[int(np.argmin(m))]


def _bab_max(net: Network, box: Box, c: np.ndarray, deadline: float, incumbent: float = -INF,
             batch: int = 512) -> tuple[float, np.ndarray, float]:
    """Input-splitting branch and bound on ``c . f`` over a box until ``deadline``:
    returns (proven upper bound, best point, its value).  Boxes whose CROWN upper bound
    (plus a rounding margin) is below the best value found are dropped."""
    from .attack import margins
    from .bab import _smear

    Ws, bs, sk = float_layers(net)
    C = -np.atleast_2d(c)
    zero = np.zeros(1)
    best_x, best = box.center.copy(), float(margins(Ws, bs, sk, box.center[None], C, zero)[0]) * -1
    if incumbent > best:
        best = incumbent
    # best first: the boxes with the largest upper bounds are refined first, so the
    # global bound (the largest open one) falls as fast as possible
    OL, OH, OU = box.lo[None].copy(), box.hi[None].copy(), np.full(1, INF)
    settled = -INF
    rounds = 0
    # the root is always bounded (one CROWN pass): a deadline that has already passed
    # gave +inf, a vacuous bound, where the symbolic one was at hand
    while len(OU) and (rounds == 0 or _time.time() < deadline):
        rounds += 1
        if len(OU) > batch:
            idx = np.argpartition(-OU, batch)[:batch]
            rest = np.ones(len(OU), dtype=bool)
            rest[idx] = False
            lo, hi = OL[idx], OH[idx]
            OL, OH, OU = OL[rest], OH[rest], OU[rest]
        else:
            lo, hi = OL, OH
            OL, OH, OU = OL[:0], OH[:0], OU[:0]
        pre, low, A, cc = crown_batch(Ws, bs, lo, hi, C=C, skip=sk, want_linear=True,
                                      intermediate="hybrid")
        mag = np.maximum(np.abs(lo), np.abs(hi))
        margin = PROOF_MARGIN * (1 + np.abs(cc[:, 0]) + np.sum(np.abs(A[:, 0]) * mag, axis=1))
        ub = -low[:, 0] + margin
        X = np.concatenate([(lo + hi) / 2, np.where(A[:, 0] > 0, lo, hi)])
        vals = -margins(Ws, bs, sk, X, C, zero)
        i = int(np.argmax(vals))
        if vals[i] > best:
            best, best_x = float(vals[i]), X[i].copy()
            alive = OU > best + scaled_tol(best)
            OL, OH, OU = OL[alive], OH[alive], OU[alive]
        keep = ub > best + scaled_tol(best)
        # A box whose bound is above the best value by no more than its own rounding
        # margin cannot be closed by splitting (the margin does not shrink with the
        # box): it is settled, its bound kept in the answer.  Without this a function
        # that is identically its best value (the difference of two equal networks)
        # split boxes until the deadline.
        settle = keep & (ub - margin <= best + scaled_tol(best))
        if np.any(settle):
            settled = max(settled, float(np.max(ub[settle])))
            keep &= ~settle
        if not np.any(keep):
            continue
        lo, hi, ub, A = lo[keep], hi[keep], ub[keep], A[keep]
        pre = [(a[keep], b[keep]) for a, b in pre]
        sm = _smear(Ws, pre, C, -ub[:, None], lo, hi)
        lin = np.abs(A[:, 0]) * (hi - lo)
        dim = np.argmax(sm / np.maximum(sm.max(1, keepdims=True), TINY)
                        + lin / np.maximum(lin.max(1, keepdims=True), TINY), axis=1)
        rows = np.arange(len(lo))
        if np.any(hi[rows, dim] - lo[rows, dim] <= ROUNDOFF * (box.hi - box.lo)[dim]):
            OL, OH, OU = np.concatenate([OL, lo]), np.concatenate([OH, hi]), np.concatenate([OU, ub])
            break  # cannot split further: their bounds stay open
        mid = (lo[rows, dim] + hi[rows, dim]) / 2
        hi1, lo2 = hi.copy(), lo.copy()
        hi1[rows, dim] = mid
        lo2[rows, dim] = mid
        OL = np.concatenate([OL, lo, lo2])
        OH = np.concatenate([OH, hi1, hi])
        OU = np.concatenate([OU, ub, ub])
    open_ub = float(np.max(OU)) if len(OU) else -INF
    return max(best, open_ub, settled), best_x, best


def _relu_bracket(net: Network, box: Box, c: np.ndarray, seconds: float) -> tuple[float, np.ndarray, float]:
    """(proven upper bound, best point, its value) of ``c . f`` over a box by ReLU-split
    branch and bound (:func:`relulab.verify.relu_bab.relu_split`) deciding "c . f(x) >= t"
    for thresholds t bisecting the bracket [best value, root bound] until ``seconds``
    are spent: "holds" lowers the bound to t, "violated" raises the value (its
    counterexample), "unknown" moves the next threshold towards the bound."""
    from .budget import Budget
    from .relu_bab import crown_ready, relu_split

    end = _time.monotonic() + seconds
    # the incumbent search gets half the seconds (without a deadline its 2,000 points x 40
    # steps took 2.9 s per bound on a 50-300-300-300-10 net: range --timeout 0.3 ran 61 s)
    x = _pgd_best(net, box, c, deadline=_time.time() + seconds / 2)
    value = float(net(x) @ c)
    upper = _root_upper(net, box, c)
    engine = "auto" if crown_ready() else "numpy"
    frac = 0.5
    while _time.monotonic() < end and upper - value > scaled_tol(value, PROOF_MARGIN):
        t = value + frac * (upper - value)
        left = end - _time.monotonic()
        r = relu_split(net, box, -c[None], np.array([-t]), budget=Budget(max(left / 3, 1e-3)),
                       engine=engine, attack_time=0.0)
        if r.status == "holds":
            upper, frac = t, 0.5
        elif r.status == "violated":
            xv = np.asarray(r.counterexample, dtype=np.float64)
            v = float(net(xv) @ c)
            if v > value:
                x, value = xv, v
            frac = 0.5
        elif r.reason.startswith("memory"):
            break
        else:
            frac = (1.0 + frac) / 2  # too close to decide in time: a looser threshold
    return max(upper, value), x, value


def _root_upper(net: Network, box: Box, c: np.ndarray) -> float:
    """A proven upper bound of ``c . f`` over the box from the verifier's bounds: the
    optimised (alpha-CROWN) bound when the torch engine is loaded, else CROWN with the
    last layer's slopes optimised; a rounding margin added."""
    from .relu_bab import crown_ready

    if crown_ready():  # (importing torch here would cost seconds of the time limit)
        from ..crown import BoundGraph, bound

        low = float(bound(BoundGraph.from_network(net), box.lo[None], box.hi[None], -c[None],
                          method="alpha", upper=False).lower[0, 0])
    else:
        from ..bounds import alpha_crown, relax_relu

        Ws, bs, sk = float_layers(net)
        pre, lw = crown_batch(Ws, bs, box.lo[None], box.hi[None], C=-c[None], skip=sk)
        la, _, _ = alpha_crown(-c[None, None], np.zeros((1, 1)), Ws, bs,
                               [relax_relu(a, b) for a, b in pre], box.lo[None], box.hi[None],
                               sk, 20)
        low = max(float(lw[0, 0]), float(la[0, 0]))
    return -low + PROOF_MARGIN * (1.0 + abs(low))


def _magnitude_hint(box: Box, pre: list[tuple[np.ndarray, np.ndarray]]) -> str:
    """Why HiGHS may have failed: the encoding's big-M values, when they are huge.

    HiGHS rejects or mis-solves models whose bounds reach about 1e15 (it treats 1e20 as
    infinite), which a box like [-1e15, 1e15]^d produces: name that rather than only
    the solver's status.
    """
    reach = max([float(np.max(np.abs(box.lo))), float(np.max(np.abs(box.hi)))]
                + [float(max(np.max(np.abs(a), initial=0.0), np.max(np.abs(b), initial=0.0))) for a, b in pre])
    if reach < HUGE_MILP_VALUE:
        return ""
    return (f" on a domain whose pre-activation bounds reach {reach:.3g} (the MILP's big-M "
            f"values; HiGHS fails from about {HUGE_MILP_VALUE:.0e}): give a smaller domain")


def _optimize(
    net: Network, domain, c, sense: str, time_limit: float | None, tighten: bool, mip_gap: float | None
) -> OptimumResult:
    t0 = _time.time()
    time_limit = check_seconds(time_limit, f"{sense}imize")
    domain = as_domain(domain, net.input_dim)
    cvec = _objective(net, c)
    fnet = net.float() if net.is_exact else net
    s = 1.0 if sense == "max" else -1.0
    if isinstance(domain, Polytope) and time_limit is not None:
        # its bounding box's 4 d LPs get a third of the time; past it, the box of its
        # single-coordinate rows stands in (sound, looser), for every use below
        domain.enclosing_box(_time.perf_counter() + time_limit / 3)
    box, _, _ = _domain_parts(domain)
    # the MILP and its LP relaxation run on a box far from the origin moved there (module
    # _centre: rows of 1e9 that cancel are beyond HiGHS's resolution); the points they
    # give are moved back and every value is the network's own
    moved = centre_domain(fnet, domain, box)
    mnet, mdom, mbox = (fnet, domain, box) if moved is None else (moved.net, moved.domain, moved.box)
    Ws, bs, sk = float_layers(mnet)
    pre = symbolic_pre(Ws, bs, mbox)
    if tighten:
        pre = tighten_bounds(mnet, mdom, pre, time_limit=None if time_limit is None else time_limit / 3)
    n_neurons = sum(W.shape[0] for W in Ws[:-1])
    # the encoding (3 rows per neuron) and HiGHS's copies, search tree and factorisations
    check_bytes(64.0 * 4 * (3 * sum(W.size for W in Ws) + 10 * n_neurons), f"the MILP of {sense}imize")
    enc = encode(mnet, mdom, pre)

    def back(u: np.ndarray) -> np.ndarray:
        return u if moved is None else moved.to_input(u, box)
    obj = (s * cvec) @ enc.out_A
    obj = np.asarray(obj).reshape(-1)
    const = float(s * cvec @ enc.out_c)
    # LP relaxation first: its value is reported, and its input is a fallback point.
    lp_left = None if time_limit is None else max(time_limit - (_time.time() - t0), 1e-3)
    lp_model = LPModel(obj, A_ub=enc.A_ub, b_ub=enc.b_ub, lb=enc.lb, ub=enc.ub, maximize=True,
                       time_limit=lp_left)
    sound_tolerances(lp_model, Ws, bs, sk, pre, mbox, (s * cvec)[None])
    lp = lp_model.solve()
    if lp.status != "optimal":
        lp = LPResult("time_limit")  # no value, no point: the bracket comes from the rest
    lp_value = s * (lp.objective + const) if lp.objective is not None else s * INF
    remaining = None if time_limit is None else max(time_limit - (_time.time() - t0), 1e-3)
    # With a time limit on a low-dimensional box, an input-splitting branch and bound
    # runs first for 40% of the time: its incumbent and bound are used if the MILP does
    # not finish (on ACAS Xu-sized networks it is far tighter than the MILP's bound).
    # Above 10 inputs the same share goes to ReLU-split branch and bound, bisecting on a
    # threshold between the best value found and the root bound.
    use_bab = remaining is not None and isinstance(domain, Box)
    if use_bab:
        if domain.dim <= 10:
            bab = _bab_max(fnet, domain, s * cvec, _time.time() + 0.4 * remaining)
        else:
            bab = _relu_bracket(fnet, domain, s * cvec, 0.4 * remaining)
        remaining = max(time_limit - (_time.time() - t0), 1e-3)
    # A small objective (outputs near 1e-7) is solved scaled up by a power of two: HiGHS's
    # dual tolerance and absolute gap are in the objective's units, and left as they are
    # they gave an "optimal" bound on the wrong side of the optimum.
    sigma = objective_scale(obj)
    model = LPModel(
        obj * sigma, A_ub=enc.A_ub, b_ub=enc.b_ub, lb=enc.lb, ub=enc.ub, integer=enc.integer,
        maximize=True, time_limit=remaining,
    )
    model.set_mip_gap(rel=or_default(mip_gap, MIP_GAP), abs=MIP_GAP)
    # what the solver's tolerances may hide: the MILP's bound is sound only beyond this
    err = sound_tolerances(model, Ws, bs, sk, pre, mbox, (s * cvec)[None])
    if moved is not None:
        err = _up(err + float(shift_error(Ws, (s * cvec)[None], moved)[0]))
    if time_limit is not None and time_limit - (_time.time() - t0) <= 0:
        # no time left: HiGHS's MIP presolve does not look at the clock (0.55 s under a
        # 1 ms limit on an 800 x 800 network), so the bracket comes from the rest
        res = LPResult("time_limit")
    else:
        res = model.solve()
    if sigma != 1.0:
        res = LPResult(res.status, res.x, None if res.objective is None else res.objective / sigma,
                       None if res.bound is None else res.bound / sigma, res.duals, res.info)
    cands = []
    if isinstance(domain, Box) and res.status != "optimal":
        cands.append(_pgd_best(fnet, domain, s * cvec,
                               deadline=None if time_limit is None else t0 + time_limit))
    if res.x is not None:
        cands.append(back(res.x[: enc.d]))
    if lp.x is not None:
        cands.append(back(lp.x[: enc.d]))
    P = _fallback_points(domain, box, cands)
    vals = fnet(P) @ (s * cvec)
    i = int(np.argmax(vals))
    x = P[i]
    value = float(vals[i])  # in "max" orientation
    scale = _spread(fnet, domain, box, s * cvec, vals)
    info: dict = {"nodes": res.info.get("nodes", 0), "tolerance_error": err}
    if res.status == "optimal":
        status = "optimal"
        bnd = res.bound if res.bound is not None else res.objective
        bound = _up(_up(float(bnd) + const) + err) if bnd is not None else value
    elif res.status == "time_limit":
        status = "time_limit"
        bound = _up(_up(float(res.bound) + const) + err) if res.bound is not None and np.isfinite(res.bound) else (
            _up(s * lp_value + err) if np.isfinite(lp_value) else INF
        )
        if use_bab:
            ub, xb, vb = bab
            bound = min(bound, ub)
            if vb > value:
                x, value = xb, vb
        if not np.isfinite(bound):
            # neither the MILP nor the LP bounded it in time: the verifier's own bound
            bound = max(_root_upper(fnet, box, s * cvec), value)
    else:
        # the domain is not empty (as_domain checked it), so "infeasible" or "error" is the
        # solver failing numerically (weights of 1e6 in a few layers do it): the bracket
        # comes from the verifier's own bound and the best point found
        status = "unknown"
        info["reason"] = (f"numerical: the MILP solver ended with status {res.status}"
                          + _magnitude_hint(mbox, pre) + "; the bound is the verifier's (CROWN) bound")
        bound = max(_root_upper(fnet, box, s * cvec), value)
    if status != "unknown" and value > bound + scaled_tol(bound, ROUNDOFF):
        # a forward pass beats the solver's bound by more than its tolerances can explain:
        # the MILP went wrong numerically, so its bound is dropped for the verifier's own
        status = "unknown"
        info["reason"] = (f"numerical: the point found gives {s * value:.17g}, beyond the MILP's "
                          f"bound {s * bound:.17g} and its tolerance error {err:.3g}; the bound is "
                          "the verifier's (CROWN) bound instead")
        bound = max(_root_upper(fnet, box, s * cvec), value)
    value, bound = _exact_bracket(net, box, s * cvec, x, value, bound, info)
    return OptimumResult(
        sense=sense,
        status=status,
        value=s * value + 0.0,  # no negative zero
        x=np.asarray(x, dtype=np.float64),
        bound=s * bound + 0.0,
        lp_value=lp_value,
        gap=abs(lp_value - s * value),
        n_binaries=enc.n_binaries,
        time=_time.time() - t0,
        info=info,
        scale=scale,
    )


def _spread(fnet: Network, domain: Box | Polytope, box: Box, c: np.ndarray, vals: np.ndarray) -> float:
    """How much ``c . f`` varies over the points evaluated and 16 samples of the domain:
    the size a closed bracket is measured by (:attr:`OptimumResult.exact`)."""
    S = box.sample(16, np.random.default_rng(0))
    if isinstance(domain, Polytope):
        S = S[domain.contains(S)]
    allv = np.concatenate([vals, fnet(S) @ c]) if len(S) else vals
    allv = allv[np.isfinite(allv)]
    return float(allv.max() - allv.min()) if allv.size else 0.0


def maximize(
    net: Network,
    domain: Box | Polytope,
    c=None,
    *,
    time_limit: float | None = None,
    tighten: bool = False,
    mip_gap: float | None = None,
) -> OptimumResult:
    """The exact maximum of ``c . f(x)`` over ``domain`` (a Box or Polytope), by MILP.

    ``c`` may be omitted for a one-output network.  The returned ``value`` is the
    forward-pass value at ``x``; ``bound`` (= ``upper_bound``) is HiGHS's proven bound
    widened by what its feasibility tolerances can hide (``info["tolerance_error"]``,
    :func:`tolerance_error`), so the maximum lies in ``[value, bound]``.
    ``tighten=True`` runs LP bound tightening first (fewer binaries, tighter big-M).

    Example:
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
        >>> r = maximize(net, Box([-3], [2])); round(r.value, 9), r.x.tolist(), r.n_binaries
        (3.0, [-3.0], 2)
    """
    return _optimize(net, domain, c, "max", time_limit, tighten, mip_gap)


def minimize(
    net: Network,
    domain: Box | Polytope,
    c=None,
    *,
    time_limit: float | None = None,
    tighten: bool = False,
    mip_gap: float | None = None,
) -> OptimumResult:
    """The exact minimum of ``c . f(x)`` over ``domain``; mirrors :func:`maximize`
    (``bound`` is then a proven *lower* bound, also available as ``lower_bound``).

    Example:
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
        >>> r = minimize(net, Box([-3], [2])); round(r.value, 9), 0 <= r.value - r.lower_bound < 1e-7
        (0.0, True)
    """
    return _optimize(net, domain, c, "min", time_limit, tighten, mip_gap)


def output_range(
    net: Network, domain: Box | Polytope, *, time_limit: float | None = None, tighten: bool = False
) -> RangeResult:
    """Exact lower and upper bounds of every output over ``domain`` (2 m MILPs).

    Example:
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0], [1.0, -1.0]]], [[0, 0], [0, 0]])
        >>> r = output_range(net, Box([-1], [2])); r.lo.round(9).tolist(), r.hi.round(9).tolist()
        ([0.0, -1.0], [2.0, 2.0])
    """
    t0 = _time.time()
    time_limit = check_seconds(time_limit, "output_range")
    domain = as_domain(domain, net.input_dim)
    m = net.output_dim
    lo, hi = np.empty(m), np.empty(m)
    lob, hib = np.empty(m), np.empty(m)
    amin, amax = [], []
    status, reason = "optimal", ""
    cheap: list = []  # the symbolic bounds, computed once if the memory budget stops a MILP

    def solve(opt, c, left):
        nonlocal reason
        if time_limit is not None and _time.time() - t0 >= time_limit:
            # the limit is spent: each further bound pays ~0.7 s of fixed work on a
            # 50-300-300-300-10 net (range --timeout 0.3 ran 14 s), so the rest come from
            # the symbolic bounds and a few samples (sound, looser), marked time_limit
            value, x, bound = _bracket_without_milp(net, domain, c, opt is maximize, cheap,
                                                    deadline=t0 + time_limit)
            return value, x, bound, False
        try:
            r = opt(net, domain, c, time_limit=left, tighten=tighten)
            if r.status == "unknown":
                reason = reason or r.info.get("reason", "numerical")
            return r.value, r.x, r.bound, r.optimal
        except ResourceLimitError as e:
            # the MILP would not fit: a sound bracket from the bounds and a local search
            reason = reason or (str(e) if str(e).startswith("memory") else f"memory: {e}")
            value, x, bound = _bracket_without_milp(net, domain, c, opt is maximize, cheap)
            return value, x, bound, False

    for i in range(m):
        c = np.zeros(m)
        c[i] = 1.0
        left = None if time_limit is None else max(time_limit - (_time.time() - t0), 1e-3) / (2 * (m - i))
        vmin, xmin, bmin, okmin = solve(minimize, c, left)
        left = None if time_limit is None else max(time_limit - (_time.time() - t0), 1e-3) / (2 * (m - i) - 1)
        vmax, xmax, bmax, okmax = solve(maximize, c, left)
        lo[i], hi[i] = vmin + 0.0, vmax + 0.0
        lob[i], hib[i] = bmin, bmax
        amin.append(xmin)
        amax.append(xmax)
        if not (okmin and okmax):
            status = "time_limit"
    if reason:
        status = "unknown"
    return RangeResult(lo, hi, np.array(amin), np.array(amax), lob, hib, status, _time.time() - t0,
                       reason)


def _bracket_without_milp(net: Network, domain: Box | Polytope, c: np.ndarray, upper: bool,
                          cheap: list, deadline: float | None = None) -> tuple[float, np.ndarray, float]:
    """(value found, its input, proven bound) of ``c . f`` (max when ``upper``, else min)
    without a MILP: the bound from :func:`relulab.bounds.symbolic_bounds` (interval
    bounds where even those exceed the memory budget), the value at the best of the
    domain's centre and a local search (boxes; a few samples past ``deadline``, a
    ``time.time()`` value).  ``cheap`` caches the bounds."""
    from ..bounds import interval_bounds, symbolic_bounds

    fnet = net.float() if net.is_exact else net
    if not cheap:
        try:
            cheap.append(symbolic_bounds(fnet, domain))
        except ResourceLimitError:
            cheap.append(interval_bounds(fnet, domain))
    nb = cheap[0]
    s = 1.0 if upper else -1.0
    box, _, _ = _domain_parts(domain)
    cands = [_pgd_best(fnet, box, s * c, n=256, steps=20, deadline=deadline)] if isinstance(domain, Box) else []
    P = _fallback_points(domain, box, cands)
    vals = fnet(P) @ (s * c)
    k = int(np.argmax(vals))
    # c is a unit vector: the bound of output i, widened by a rounding margin
    i = int(np.argmax(np.abs(c)))
    bnd = float(nb.out_hi[i]) if upper else -float(nb.out_lo[i])
    bnd += PROOF_MARGIN * (1.0 + abs(bnd))
    bnd = max(bnd, float(vals[k]))
    value, bnd = _exact_bracket(net, box, s * c, P[k], float(vals[k]), bnd, {})
    return s * value + 0.0, np.asarray(P[k], dtype=np.float64), s * bnd + 0.0


#: networks up to this many parameters get ``value`` in rational arithmetic (0.07 s for
#: ACAS Xu's 13k); above, the float64 pass moved inward by its rounding bound
EXACT_VALUE_MAX_PARAMS = 50_000


def _float_down(q: Fraction) -> float:
    """The largest float64 at most ``q`` (``-inf`` below float64's range)."""
    f = nearest_float(q)
    return float(np.nextafter(f, -np.inf)) if np.isfinite(f) and Fraction(f) > q else f


def _up(v: float) -> float:
    """One float step up: ``v`` came from one rounded sum whose exact value is below."""
    return float(np.nextafter(v, np.inf))


def _exact_bracket(net: Network, box: Box, c: np.ndarray, x: np.ndarray, value: float, bound: float,
                   info: dict) -> tuple[float, float]:
    """The sound bracket of ``c . f`` (max orientation) from the float search's point ``x``
    and proven ``bound``: ``value`` becomes ``c . f(x)`` of the network as given (its float
    weights or Fractions taken exactly), rounded down, so it never exceeds the maximum (the
    float pass of ``relu(x + 2^45) - 2^45`` at 0.2 gave 0.203125, above the maximum 0.2);
    above :data:`EXACT_VALUE_MAX_PARAMS` parameters of a float network, the float pass
    minus its rounding bound (:func:`forward_error`; ``info["value_check"]`` says which).
    An exact network whose weights are not all float64 numbers also widens the bound by
    the weights' rounding (:func:`relulab.bounds.float_rounding_bound`; ``2^60 (relu((1 +
    2^-60) x) - relu(x))`` rounds to 0 and its maximum 1 was reported as 0).  The bound is
    rounded up (``relu(x) + 2^57`` on [0, 1.5] read at most 2^57)."""
    from ..bounds import float_rounding_bound, rounding_slack

    x = np.asarray(x, dtype=np.float64).reshape(-1)
    e = float_rounding_bound(net, box) if net.is_exact else None
    if e is not None:
        widen = float(rounding_slack(c, e)[0])
        info["rounding_widening"] = widen
        bound = _up(bound + widen)
    if net.is_exact or net.n_params <= EXACT_VALUE_MAX_PARAMS:
        enet = net if net.is_exact else net.exact()
        y = enet(np.array([[Fraction(float(v)) for v in x]], dtype=object))[0]
        q = sum((Fraction(float(ci)) * yi for ci, yi in zip(c, y, strict=True)), Fraction(0))
        value = _float_down(q)
        info["value_check"] = "exact"
    else:
        y = net(x[None])[0]
        slack = float(np.abs(c) @ forward_error(net, x))
        value = float(np.nextafter(float(c @ y) - slack * (1 + 2.0**-40), -np.inf))
        info["value_check"] = "float64 minus its rounding bound"
    return value, max(bound, _up(value))


def milp_term(
    net: Network,
    box: Box,
    C: np.ndarray,
    d: np.ndarray,
    *,
    time_limit: float | None = None,
    check_net: Network | None = None,
) -> tuple[str, np.ndarray | None, dict]:
    """Decide one unsafe conjunction ``C f(x) <= d`` over ``box`` by one MILP:
    minimise ``t`` subject to ``C f(x) - d <= t``.  "holds" when HiGHS's proven lower
    bound on ``t`` exceeds a margin well above its feasibility tolerances (1e-6 of the
    encoding's scale) plus what those tolerances can hide once later layers amplify them
    (:func:`tolerance_error`); "violated" when its solution passes the forward-pass
    re-check; else "unknown".

    Example:
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
        >>> milp_term(net, Box([-1], [1]), np.array([[-1.0]]), np.array([-1.5]))[0]
        'holds'
    """
    from .attack import recheck

    fnet = net.float() if net.is_exact else net
    # a box far from the origin is moved there first (module _centre): rows of 1e9 that
    # cancel are beyond HiGHS's resolution
    moved = centre(fnet, box)
    mnet, mbox = (fnet, box) if moved is None else (moved.net, moved.box)
    Ws, bs, sk = float_layers(mnet)
    C = np.atleast_2d(np.asarray(C, dtype=np.float64))
    d = np.asarray(d, dtype=np.float64).reshape(-1)
    pre = symbolic_pre(Ws, bs, mbox)
    enc = encode(mnet, mbox, pre)
    nv = enc.n_vars
    CA = sp.csr_matrix(C @ enc.out_A.toarray())
    rows = sp.hstack([CA, sp.csr_matrix(-np.ones((C.shape[0], 1)))])
    A_ub = sp.vstack([sp.hstack([enc.A_ub, sp.csr_matrix((enc.A_ub.shape[0], 1))]), rows]).tocsr()
    b_ub = np.concatenate([enc.b_ub, d - C @ enc.out_c])
    obj = np.zeros(nv + 1)
    obj[-1] = 1.0
    integer = np.concatenate([enc.integer, [False]])
    model = LPModel(obj, A_ub=A_ub, b_ub=b_ub, lb=np.concatenate([enc.lb, [-INF]]),
                    ub=np.concatenate([enc.ub, [INF]]), integer=integer, time_limit=time_limit)
    err = sound_tolerances(model, Ws, bs, sk, pre, mbox, C)
    # the rows C f(x) - d <= t carry C W_L: entries of it HiGHS drops are an error too
    err = _up(err + float(np.max(dropped_output_error(Ws, sk, pre, mbox, C))))
    if moved is not None:
        err = _up(err + float(np.max(shift_error(Ws, C, moved))))
    res = model.solve()
    st = {"n_binaries": enc.n_binaries, "status": res.status, "nodes": res.info.get("nodes", 0)}
    if moved is not None:
        st["centred"] = True
    if res.x is not None and res.objective is not None and res.objective <= FEAS_TOL:
        x = np.clip(res.x[: enc.d], box.lo, box.hi) if moved is None else moved.to_input(res.x[: enc.d], box)
        if recheck(check_net or net, x, box, C, d):
            return "violated", x, st
    # margin relative to the size of the numbers in the encoding (big-M constants)
    scale = 1.0 + float(np.max(np.abs(d), initial=0.0)) + float(np.max(np.abs(C))) * _big_m(pre)
    bound = res.bound if res.bound is not None else None
    if res.status == "optimal" and res.objective is not None and bound is None:
        bound = res.objective
    margin = 1e-6 * scale + err  # tol: well above HiGHS's feasibility tolerance
    st["tolerance_error"] = err
    if bound is not None and np.isfinite(bound) and bound > margin:
        return "holds", None, st
    if res.status == "optimal":
        # solved, but the optimum is inside the proof margin (or its point failed the
        # forward re-check): numerical, not a time limit
        st["reason"] = (f"numerical: the MILP optimum {res.objective:.3g} is within its proof margin "
                        f"{margin:.3g} (big-M scale {scale:.3g}, tolerance error {err:.3g})"
                        if res.objective is not None else
                        "numerical: the MILP solution failed the forward re-check")
    elif res.status not in ("time_limit", "node_limit", "interrupted"):
        # the solver failed at once (an "error" on pre-activations of 1e20): numerical, not
        # a timeout, which the verifier otherwise reports for an unknown term
        st["reason"] = f"numerical: the MILP solver ended with status {res.status}" + _magnitude_hint(mbox, pre)
    return "unknown", None, st
