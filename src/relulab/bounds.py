"""Interval and symbolic linear bound propagation (CROWN / DeepPoly back-substitution).

Every hidden neuron's pre-activation ``z`` is bounded over an input domain by
``lo <= z <= hi``; a neuron is *stably active* when ``lo >= 0``, *stably inactive*
when ``hi <= 0`` and *unstable* otherwise.

* :func:`interval_bounds` pushes boxes through the layers (interval arithmetic).
* :func:`symbolic_bounds` bounds every neuron by a linear function of the input,
  obtained by back-substituting through the earlier layers with the triangle
  relaxation of each unstable ReLU (upper line through ``(lo, 0)`` and ``(hi, hi)``,
  lower line of slope 0 or 1, whichever has the smaller area: CROWN's adaptive
  choice), then concretised over the domain.  It is at least as tight as intervals
  (each neuron keeps the better of the two bounds).
* :func:`linear_bounds` bounds ``C f(x) + d`` directly by back-substitution through the
  output map, which is much tighter than bounding ``f`` and then applying ``C``.

The numeric core (:func:`crown_batch`) works on MANY boxes at once (arrays of shape
``(N, d)``); the verifier's branch and bound calls it with thousands of sub-boxes.

For a :class:`~relulab.domain.Polytope` the intermediate bounds are concretised over
its bounding box (sound, cheap) and the output bounds with one LP per bound over
the polytope itself.

Floating point: bounds are computed in float64 rounded to nearest and then moved
outward by their rounding, so they are sound.  Every pre-activation bound is moved to
the tighter of two outward bounds (:func:`_move_outward`): the interval bounds with their
own rounding carried layer by layer (a sum of ``n + 1`` terms is off by ``gamma_{n+1}``
times its terms' sizes, and the inputs' rounding passes through the weights; a
structural 0, every term exact, stays decided), or the bound widened by ``ops`` unit
roundoffs of the terms' sizes ``|W| T + |b|``.  A neuron's sign is therefore decided only
where it is proved: rounded to nearest, ``1 + 2^-53 - 1`` read 0, a live neuron read dead,
and under a weight of 2^60 its 128 was lost.  The output bounds are moved outward by
:func:`output_rounding`.  An exact (Fraction) network is bounded through its float64
rounding and the bounds widened by the rounding of its weights
(:func:`float_rounding_bound`), so they bound the exact network.  Code that turns a
bound into a proof still keeps a margin (see :mod:`relulab.tolerance`) and re-checks
counterexamples.

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> from relulab.domain import Box
    >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
    >>> b = symbolic_bounds(net, Box([-1], [2]))
    >>> b.out_lo.round(9).tolist(), b.out_hi.round(9).tolist(), b.n_unstable
    ([0.0], [2.0], 2)
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .domain import Box, Polytope, as_domain
from .errors import RelulabError
from .limits import check_bytes, memory_budget
from .network import Network, is_float64_number
from .tolerance import ROUNDOFF, UNIT_ROUNDOFF, scaled_tol

__all__ = [
    "NetworkBounds",
    "float_rounding_bound",
    "float_rounding_bounds",
    "rounding_slack",
    "interval_bounds",
    "symbolic_bounds",
    "linear_bounds",
    "crown_batch",
    "float_layers",
    "FloatLayers",
    "relax_relu",
    "concretise",
    "alpha_crown",
    "output_rounding",
    "term_sizes_start",
    "term_sizes_step",
]


# --------------------------------------------------------------------------- helpers
class FloatLayers(NamedTuple):
    """The float64 layers of a network, built once for the batched kernel
    (:func:`crown_batch`, :func:`alpha_crown`): contiguous weights ``Ws`` (out, in),
    biases ``bs`` and the affine ``skip`` ``(S, s)`` or None.  Unpacks as
    ``Ws, bs, skip = float_layers(net)``.

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> L = float_layers(Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]]))
        >>> [W.shape for W in L.Ws], L.skip is None
        ([(2, 1), (1, 2)], True)
    """

    Ws: list[np.ndarray]
    bs: list[np.ndarray]
    skip: tuple[np.ndarray, np.ndarray] | None


def float_layers(net: Network) -> FloatLayers:
    """The float64 weights, biases and skip of ``net`` (exact networks are rounded).

    Example:
        >>> from relulab import Network
        >>> Ws, bs, skip = float_layers(Network([[[2.0]]], [[1.0]]))
        >>> Ws[0].tolist(), bs[0].tolist(), skip
        ([[2.0]], [1.0], None)
    """
    f = net.float() if net.is_exact else net
    Ws = [np.ascontiguousarray(W, dtype=np.float64) for W in f.weights]
    bs = [np.ascontiguousarray(b, dtype=np.float64) for b in f.biases]
    sk = None
    if f.skip is not None:
        sk = (np.asarray(f.skip[0], dtype=np.float64), np.asarray(f.skip[1], dtype=np.float64))
    return FloatLayers(Ws, bs, sk)


def _rounding_of(exact: np.ndarray, rounded: np.ndarray) -> np.ndarray:
    """``|exact - rounded|`` entrywise as floats at least as large: each exact Fraction
    difference rounded to a float and moved up one step where that fell below it (a
    difference under float64's smallest subnormal read 0 when rounded to nearest).

    Example:
        >>> from fractions import Fraction as F
        >>> _rounding_of(np.array([F(1, 10**400)]), np.array([0.0]))[0] > 0
        np.True_
    """
    from fractions import Fraction

    out = np.empty(rounded.size, dtype=np.float64)
    for i, (e, r) in enumerate(zip(exact.reshape(-1), rounded.reshape(-1), strict=True)):
        if is_float64_number(e):
            out[i] = 0.0  # the common case (an exact copy of a float network)
            continue
        v = abs(Fraction(e) - Fraction(float(r)))
        fl = float(v)
        out[i] = fl if Fraction(fl) >= v else math.nextafter(fl, math.inf)
    return out.reshape(rounded.shape)


def _rounding_per_layer(net: Network, box: Box) -> list[np.ndarray] | None:
    """For an exact network, bounds on ``|z_k(x) - z'_k(x)|`` over the box for every
    layer's pre-activation ``z_k`` (the last: the output, skip included), where ``z'`` is
    the float network's; None when every entry is a float64 number.  See
    :func:`float_rounding_bound`."""
    errs = _rounding_per_layer_batch(net, box.lo[None], box.hi[None])
    return None if errs is None else [e[0] for e in errs]


def _weight_rounding(net: Network) -> tuple | None:
    """``(|dW_k|, |db_k|, |dskip| or None)``: how far rounding to float64 moved each
    entry of an exact network (None when it moved none)."""
    if not net.is_exact:
        return None
    g = net.float()
    dWs = [_rounding_of(np.asarray(W), np.asarray(Wg)) for W, Wg in zip(net.weights, g.weights, strict=True)]
    dbs = [_rounding_of(np.asarray(b), np.asarray(bg)) for b, bg in zip(net.biases, g.biases, strict=True)]
    dsk = None if net.skip is None else (_rounding_of(np.asarray(net.skip[0]), np.asarray(g.skip[0])),
                                         _rounding_of(np.asarray(net.skip[1]), np.asarray(g.skip[1])))
    if not any(np.any(a) for a in dWs + dbs + ([] if dsk is None else list(dsk))):
        return None
    return dWs, dbs, dsk


def _rounding_per_layer_batch(net: Network, lo: np.ndarray, hi: np.ndarray) -> list[np.ndarray] | None:
    """:func:`_rounding_per_layer` for a batch of boxes (rows of ``lo``, ``hi``), one
    array of shape ``(boxes, width)`` per layer: the weights' rounding (a Fraction per
    entry) is found once for all of them (2,000 boxes of a property took 130 s, one
    pass over the weights each)."""
    rounding = _weight_rounding(net)
    if rounding is None:
        return None
    dWs, dbs, dsk = rounding
    Ws, bs, sk = float_layers(net.float())
    pre, _, _ = interval_batch(Ws, bs, lo, hi, sk)
    xmag = np.maximum(np.abs(lo), np.abs(hi))
    hmag, e = xmag, np.zeros_like(xmag)
    tiny = np.finfo(np.float64).smallest_subnormal
    errs: list[np.ndarray] = []
    with np.errstate(over="ignore"):
        for k, (W, dW, db) in enumerate(zip(Ws, dWs, dbs, strict=True)):
            e = e @ np.abs(W).T + (hmag + e) @ dW.T + db
            if k == len(Ws) - 1 and dsk is not None:
                e = e + xmag @ dsk[0].T + dsk[1]
            # the recursion's own rounding: relative, and absolute where a product of
            # subnormals underflowed (each of the n + 2 terms by at most one subnormal)
            e = e * (1 + 2.0**-30) + tiny * (W.shape[1] + 3)
            errs.append(e)
            if k < len(Ws) - 1:
                plo, phi = pre[k]
                hmag = np.maximum(np.maximum(np.abs(plo), np.abs(phi)), 0.0)
    return errs


def float_rounding_bound(net: Network, box: Box) -> np.ndarray | None:
    """For an exact (Fraction) network, a bound per output of ``|f(x) - g(x)|`` over the
    box, where ``g = net.float()`` (every weight rounded to float64), or None when every
    entry is a float64 number (then ``g`` is ``f``).  The float provers bound ``g``: a
    "holds" for ``f`` needs this much more margin (``2^60 (relu((1 + 2^-60) x) - relu(x))``
    is ``x`` on [0, 1], its rounding is 0, and a violated property read "holds").

    Layer by layer, ``e_k = |W_k| e_(k-1) + |dW_k| (|h_(k-1)| + e_(k-1)) + |db_k|`` with
    ``|h|`` from interval arithmetic on ``g`` (ReLU is 1-Lipschitz).

    Example:
        >>> from fractions import Fraction as F
        >>> net = Network([[[F(1) + F(1, 2**60)]], [[F(2**60)]]], [[F(0)], [F(0)]])
        >>> float(float_rounding_bound(net, Box([0.0], [1.0]))[0]) >= 1.0
        True
    """
    net, dom = _checked(net, box, "float_rounding_bound")
    box = dom if isinstance(dom, Box) else dom.bounding_box()   # a (lo, hi) pair or a Polytope
    errs = _rounding_per_layer(net, box)
    return None if errs is None else errs[-1]


def float_rounding_bounds(net: Network, boxes: list[Box]) -> np.ndarray | None:
    """:func:`float_rounding_bound` for each of ``boxes`` (a list; one row each), the
    weights' rounding found once; None when every entry is a float64 number (or the list
    is empty).

    Example:
        >>> from fractions import Fraction as F
        >>> net = Network([[[F(1, 3)]], [[F(1)]]], [[F(0)], [F(0)]])
        >>> e = float_rounding_bounds(net, [Box([0.0], [1.0]), Box([0.0], [8.0])])
        >>> e.shape, bool(0 < e[0, 0] < e[1, 0] < 1e-14)
        ((2, 1), True)
    """
    if isinstance(boxes, (Box, Polytope, np.ndarray)) or not isinstance(boxes, (list, tuple)):
        raise RelulabError(f"float_rounding_bounds: boxes must be a list of boxes, got {type(boxes).__name__} "
                           "(one box: float_rounding_bound)")
    if not boxes:
        return None   # (no box: nothing to widen)
    doms = [_checked(net, box, "float_rounding_bounds")[1] for box in boxes]
    boxes = [d if isinstance(d, Box) else d.bounding_box() for d in doms]
    lo = np.stack([b.lo for b in boxes])
    hi = np.stack([b.hi for b in boxes])
    errs = _rounding_per_layer_batch(net, lo, hi)
    return None if errs is None else errs[-1]


def rounding_slack(C: np.ndarray, e: np.ndarray) -> np.ndarray:
    """``|C| e`` rounded up: how far the rounding bound ``e`` of the outputs
    (:func:`float_rounding_bound`) can move each row of ``C f``.

    Example:
        >>> bool(rounding_slack(np.array([[1.0, -2.0]]), np.array([0.5, 0.25]))[0] >= 1.0)
        True
    """
    C = np.atleast_2d(np.asarray(C, dtype=np.float64))
    with np.errstate(over="ignore"):
        return (np.abs(C) @ e) * (1 + 2.0**-40) + np.finfo(np.float64).smallest_subnormal * (C.shape[1] + 1)


def _widened(lo: np.ndarray, hi: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``[lo - e, hi + e]``, each side rounded outward."""
    with np.errstate(over="ignore"):
        return np.nextafter(lo - e, -np.inf), np.nextafter(hi + e, np.inf)


def relax_relu(lo: np.ndarray, hi: np.ndarray, adaptive: bool = True):
    """ReLU relaxation slopes per neuron from pre-activation bounds, all of shape (N, n).

    Returns (lower slope, upper slope, upper intercept): ``al*z <= relu(z) <= su*z + tu``
    on ``[lo, hi]``.  ``adaptive``: lower slope 0 or 1, whichever leaves the smaller
    area (CROWN); otherwise the upper slope (DeepPoly-style parallel lines).

    Example:
        >>> al, su, tu = relax_relu(np.array([[-1.0, 1.0]]), np.array([[3.0, 2.0]]))
        >>> al.tolist(), su.tolist(), tu.tolist()
        ([[1.0, 1.0]], [[0.75, 1.0]], [[0.75, 0.0]])
    """
    active = lo >= 0
    unstable = (lo < 0) & (hi > 0)
    # su = hi / (hi - lo) and tu = -lo hi / (hi - lo), written as 1 / (1 - lo / hi) and
    # hi / (1 - hi / lo): hi - lo overflows for bounds near the float range (su was 0 and
    # the line relu <= 0) and lo * hi underflows near 1e-160 (tu was 0, below relu)
    h = np.where(unstable, hi, 1.0)
    lneg = np.where(unstable, lo, -1.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        su = np.where(active, 1.0, np.where(unstable, 1.0 / (1.0 - lneg / h), 0.0))
        tu = np.where(unstable, h / (1.0 - h / lneg), 0.0)
    if adaptive:
        al = np.where(active, 1.0, np.where(unstable, (hi >= -lo).astype(np.float64), 0.0))
    else:
        al = su.copy()
    return al, su, tu


def concretise(A: np.ndarray, c: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """min over the box [lo, hi] of A x + c, for A (N, r, d), c (N, r), lo/hi (N, d).

    Example:
        >>> concretise(np.array([[[1.0, -2.0]]]), np.array([[0.5]]),
        ...            np.array([[0.0, 0.0]]), np.array([[1.0, 1.0]])).tolist()
        [[-1.5]]
    """
    Ap = np.maximum(A, 0.0)
    An = np.minimum(A, 0.0)
    return c + np.einsum("nrd,nd->nr", Ap, lo) + np.einsum("nrd,nd->nr", An, hi)


def _concretise_fw(E: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """min over the box of forward equations E (N, d + 1, n) (last row: constants)."""
    A = E[:, :-1, :]
    return E[:, -1, :] + np.einsum("ndk,nd->nk", np.maximum(A, 0.0), lo) + np.einsum(
        "ndk,nd->nk", np.minimum(A, 0.0), hi
    )


def _backsub(
    Lam: np.ndarray,
    k: int,
    Ws: list[np.ndarray],
    bs: list[np.ndarray],
    relax: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray]:
    """Lower-bound ``Lam @ z_k`` (z_k: pre-activation of layer k, 0-based) by a linear
    function of the input.  ``Lam`` has shape (N, r, n_k).  Returns (A, c): A (N, r, d)."""
    N, r, _ = Lam.shape
    const = np.zeros((N, r))
    for j in range(k, -1, -1):
        W, b = Ws[j], bs[j]
        const += Lam @ b
        A = (Lam.reshape(N * r, -1) @ W).reshape(N, r, W.shape[1])
        if j == 0:
            return A, const
        al, su, tu = relax[j - 1]
        # Lam = A+ * al + A- * su, written to touch the big array fewer times
        An = np.minimum(A, 0.0)
        Lam = A * al[:, None, :]
        Lam -= An * (al - su)[:, None, :]
        const += np.matmul(An, tu[:, :, None])[..., 0]
    raise AssertionError("unreachable")


#: neurons back-substituted together by :func:`_refine` (with 128 boxes a block)
REFINE_STEP = 64


def _refine(zlo, zhi, k, Ws, bs, relax, lo, hi, chunk: int = 128) -> None:
    """Tighten (in place) the bounds of the unstable neurons of layer ``k`` by
    back-substitution.  Only neurons unstable in a box are bounded (a stable neuron's
    relaxation does not depend on its bounds); each box gets its own list, padded to
    the longest list within a chunk of boxes with similar counts."""
    unst = (zlo < 0) & (zhi > 0)
    cnt = unst.sum(axis=1)
    if not cnt.any():
        return
    n = zlo.shape[1]
    by_count = np.argsort(cnt, kind="stable")
    by_count = by_count[cnt[by_count] > 0]
    # one back-substituted row holds a few arrays of the widest layer it passes: the boxes
    # (and, for one box, its neurons) are taken as many at a time as a quarter of the
    # memory budget allows (a 10-5000-5000-2 network took 2.5 GB under a 0.5 GB budget,
    # then a raw numpy MemoryError)
    width = max(max(W.shape) for W in Ws[: k + 1])
    row_bytes = 4 * 8 * width
    room = memory_budget() // 4
    # one neuron of one box (its two rows) must fit that quarter
    check_bytes(4 * 2 * row_bytes, f"symbolic bounds of hidden layer {k + 1} (width "
                f"{width}: one neuron's back-substitution, 4 times)")
    s = 0
    while s < by_count.size:
        # the counts ascend: the last box of a full chunk has the most unstable neurons
        most = int(cnt[by_count[min(s + chunk, by_count.size) - 1]])
        ix = by_count[s : s + int(max(1, min(chunk, room // (2 * most * row_bytes))))]
        s += ix.size
        M = ix.size
        U = int(cnt[ix].max())
        # stable sort puts each box's unstable neurons first
        order_all = np.argsort(~unst[ix], axis=1, kind="stable")[:, :U]  # (M, U)
        # a fixed block of neurons (shrunk only when the budget needs it): BLAS rounds a
        # row by the shape of its product, and blocks sized by the free memory made the
        # bounds (and a borderline branch) differ by ulps from run to run
        step = int(max(1, min(U, REFINE_STEP, room // (2 * M * row_bytes))))
        sub = [(r[0][ix], r[1][ix], r[2][ix]) for r in relax]
        zl, zh = zlo[ix], zhi[ix]
        rows = np.arange(M)[:, None]
        for u0 in range(0, U, step):
            order = order_all[:, u0 : u0 + step]
            V = order.shape[1]
            valid = (u0 + np.arange(V))[None, :] < cnt[ix][:, None]
            Lam = np.zeros((M, 2 * V, n))
            Lam[rows, np.arange(V)[None, :], order] = valid
            Lam[rows, V + np.arange(V)[None, :], order] = -valid.astype(np.float64)
            A, c = _backsub(Lam, k, Ws, bs, sub)
            del Lam
            low = concretise(A, c, lo[ix], hi[ix])
            new_lo = np.where(valid, low[:, :V], -np.inf)
            new_hi = np.where(valid, -low[:, V:], np.inf)
            cur_lo = np.take_along_axis(zl, order, 1)
            cur_hi = np.take_along_axis(zh, order, 1)
            np.put_along_axis(zl, order, np.maximum(cur_lo, new_lo), 1)
            np.put_along_axis(zh, order, np.minimum(cur_hi, new_hi), 1)
        zlo[ix] = zl
        zhi[ix] = zh


def alpha_crown(C, dd, Ws, bs, relax, lo, hi, skip, iters: int, lr: float = 0.5):
    """alpha-CROWN on the last back-substitution: optimise the lower slopes of the
    unstable ReLUs (one slope per box, row and neuron, in [0, 1]; every choice gives a
    valid bound) by sign-gradient ascent on the bound, intermediate bounds fixed.

    ``C`` (N, r, m) / ``dd`` (N, r): the rows ``C y + dd`` to lower-bound per box;
    ``relax``: per hidden layer the :func:`relax_relu` triple of the boxes.
    Returns the best bound found per box and row, and its linear form (A, c).

    Example:
        >>> Ws, bs = [np.array([[1.0], [-1.0]]), np.array([[1.0, 1.0]])], [np.zeros(2), np.zeros(1)]
        >>> lo, hi = np.array([[-1.0]]), np.array([[2.0]])
        >>> pre, _ = crown_batch(Ws, bs, lo, hi)
        >>> best, A, c = alpha_crown(np.ones((1, 1, 1)), np.zeros((1, 1)), Ws, bs,
        ...                          [relax_relu(*pre[0])], lo, hi, None, iters=5)
        >>> bool(best[0, 0] <= 0.0)          # |x| >= 0: a valid lower bound
        True
    """
    N, L = lo.shape[0], len(Ws)
    # C may differ per box: (N, r, m); dd then (N, r)
    C3 = np.ascontiguousarray(np.broadcast_to(C, (N, *C.shape[-2:])))
    r = C3.shape[1]
    alphas = [np.repeat(al[:, None, :], r, axis=1) for al, _, _ in relax]
    unst = [((su > 0) & (su < 1))[:, None, :] for _, su, _ in relax]
    best = np.full((N, r), -np.inf)
    bestA = np.zeros((N, r, lo.shape[1]))
    bestc = np.zeros((N, r))
    SC = None if skip is None else (C3 @ skip[0], C3 @ skip[1])
    for it in range(iters + 1):
        Lam = C3
        const = np.zeros((N, r)) + dd
        As: list[np.ndarray] = [None] * L  # As[j]: coefficient on h_{j-1}
        for j in range(L - 1, -1, -1):
            const += Lam @ bs[j]
            A = (Lam.reshape(N * r, -1) @ Ws[j]).reshape(N, r, Ws[j].shape[1])
            As[j] = A
            if j == 0:
                break
            _, su, tu = relax[j - 1]
            An = np.minimum(A, 0.0)
            Lam = np.where(A > 0, A * alphas[j - 1], An * su[:, None, :])
            const += np.einsum("nrk,nk->nr", An, tu)
        A0 = As[0]
        if SC is not None:
            A0 = A0 + SC[0]
            const = const + SC[1]
        xs = np.where(A0 > 0, lo[:, None, :], hi[:, None, :])
        bound = const + np.einsum("nrd,nrd->nr", A0, xs)
        better = bound > best
        best = np.where(better, bound, best)
        bestA = np.where(better[..., None], A0, bestA)
        bestc = np.where(better, const, bestc)
        if it == iters:
            break
        # gradient of the bound with respect to every layer's coefficients, input side up
        G = xs @ Ws[0].T + bs[0]  # d bound / d Lam_0
        for k in range(L - 1):
            A_next = As[k + 1]
            grad_alpha = G * np.maximum(A_next, 0.0)
            G_k = G
            if k + 1 < L - 1:
                _, su, tu = relax[k]
                dA = np.where(A_next > 0, G_k * alphas[k], G_k * su[:, None, :]) + np.where(
                    A_next < 0, tu[:, None, :], 0.0
                )
                G = dA @ Ws[k + 1].T + bs[k + 1]
            step = lr * (1.0 - it / iters)
            alphas[k] = np.where(
                unst[k], np.clip(alphas[k] + step * np.sign(grad_alpha), 0.0, 1.0), alphas[k]
            )
    return best - output_rounding(Ws, bs, skip, lo, hi, C3, dd), bestA, bestc


def output_rounding(Ws, bs, skip, lo, hi, C, dd, hidden_terms: np.ndarray | None = None) -> np.ndarray:
    """A bound on the rounding of a back-substituted lower bound of ``C y + dd`` over the
    boxes ``lo``/``hi`` (N, d): the operations behind it (every layer's fan-in, summed
    once per layer the substitution passes) times the unit roundoff times the sizes of
    the terms ``|C| (|W| ... |W| |x| + ...) + |dd|``, doubled.  ``C`` (r, m) or (N, r, m).
    ``hidden_terms``: those sizes at the last hidden layer when already carried
    (:func:`crown_batch` does), so that only the output layer is added here.

    Example:
        >>> Ws, bs = [np.array([[2.0 ** 40]]), np.array([[1.0]])], [np.array([-(2.0 ** 40)]), np.zeros(1)]
        >>> r = output_rounding(Ws, bs, None, np.array([[0.0]]), np.array([[1.0]]), np.eye(1), np.zeros(1))
        >>> bool(0 < r[0, 0] < 1e-2)
        True
    """
    T0 = term_sizes_start(np.asarray(lo, float), np.asarray(hi, float))
    if hidden_terms is not None and len(Ws) > 1:
        T = hidden_terms
    else:
        T = T0
        for k in range(len(Ws) - 1):
            T = term_sizes_step(T, Ws[k], bs[k])
    T = term_sizes_step(T, Ws[-1], bs[-1])
    # the back-substitution's sums, layer by layer, and the first product C @ W, whose
    # sums run over a row of C (m terms: C = ones over 2,000 outputs lost 39 half-ulps)
    ops = sum(sum(V.shape[1] + 1 for V in Ws[: k + 1]) for k in range(len(Ws))) + Ws[-1].shape[0]
    if skip is not None:
        T = T + T0 @ np.abs(skip[0]).T + np.abs(skip[1])
        ops += Ws[0].shape[1] + 1
    C = np.asarray(C, float)
    mag = np.einsum("nrm,nm->nr", np.abs(C), T) if C.ndim == 3 else T @ np.abs(C).T
    return 2.0 * ops * UNIT_ROUNDOFF * (mag + np.abs(dd))


class BoundsOverflow(RelulabError):
    """Bounds of a network over a domain overflowed float64 (the domain or the weights are
    too large)."""


def _refuse_overflow(bounds_fn):
    """Run ``bounds_fn`` (Ws, bs, lo, hi, ...) -> (pre, arrays...) with float warnings
    off, and refuse its result with one line when it holds a NaN: a box of 1e200 gives
    inf - inf = NaN, which every test of stability would read as "stable"."""

    @functools.wraps(bounds_fn)
    def checked(Ws, bs, lo, hi, *args, **kwargs):
        with np.errstate(over="ignore", invalid="ignore"):
            out = bounds_fn(Ws, bs, lo, hi, *args, **kwargs)
        pre, rest = out[0], out[1:]
        if any(np.isnan(a).any() for a in rest) or any(np.isnan(a).any() or np.isnan(b).any() for a, b in pre):
            scale = float(np.max(np.abs(np.concatenate([np.ravel(lo), np.ravel(hi)]))))
            wmax = max(float(np.max(np.abs(W))) for W in Ws)
            raise BoundsOverflow(
                f"bound propagation overflowed float64 on a domain reaching |x| = {scale:.3g} "
                f"with weights up to {wmax:.3g}: give a smaller domain, or rescale the network")
        return out

    return checked


def _layer_seconds(N: int, d: int, Ws: list[np.ndarray], k: int, intermediate: str) -> float:
    """Estimated seconds of hidden layer ``k``'s forward equations and back-substitution
    (``intermediate`` "crown"/"hybrid"/"forward") at the machine's dense flop rate."""
    from .limits import dense_flop_rate

    n_out = Ws[k].shape[0]
    flops = 4.0 * N * (d + 1) * Ws[k].shape[1] * n_out if intermediate in ("forward", "hybrid") else 0.0
    if intermediate in ("crown", "hybrid") and k > 0:
        flops += 4.0 * N * n_out * sum(W.shape[0] * W.shape[1] for W in Ws[:k])
    return flops / dense_flop_rate()


@_refuse_overflow
def crown_batch(
    Ws: list[np.ndarray],
    bs: list[np.ndarray],
    lo: np.ndarray,
    hi: np.ndarray,
    C: np.ndarray | None = None,
    d: np.ndarray | None = None,
    skip: tuple[np.ndarray, np.ndarray] | None = None,
    prev: list[tuple[np.ndarray, np.ndarray]] | None = None,
    want_linear: bool = False,
    intermediate: str = "crown",
    deadline: float | None = None,
):
    """CROWN bounds for a batch of boxes (refused with :class:`BoundsOverflow` when they
    overflow float64).

    Args:
        Ws, bs: float layers (see :func:`float_layers`).
        lo, hi: boxes, shape (N, d).
        C, d: the output expression ``C y + d`` to lower-bound (C of shape (r, m)); by
            default the identity stacked with its negation (lower and upper bounds).
        skip: the network's affine skip.
        prev: known pre-activation bounds per hidden layer (each (N, n_k)) to intersect
            with, e.g. the parent box's bounds in branch and bound.
        want_linear: also return the linear lower bound (A, c) of each row, sound at
            every point of its box (its rounding subtracted from ``c``).
        intermediate: "crown" (back-substitution for every layer) or "interval".
        deadline: a ``time.monotonic()`` value past which the remaining hidden layers get
            interval bounds only (sound, looser): a deep lowered max-pool tree spent 80 s
            in back-substitutions under a 2 s limit.

    Returns:
        ``(pre, lower)`` or ``(pre, lower, A, c)``: ``pre`` the list of (lo, hi) of each
        hidden layer's pre-activations, ``lower`` (N, r) the lower bounds of ``C y + d``.

    Example:
        >>> Ws = [np.array([[1.0], [-1.0]]), np.array([[1.0, 1.0]])]
        >>> bs = [np.zeros(2), np.zeros(1)]
        >>> pre, low = crown_batch(Ws, bs, np.array([[-1.0]]), np.array([[2.0]]))
        >>> low.round(6).tolist()    # lower bounds of y and -y
        [[-1.0, -2.0]]
    """
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    N = lo.shape[0]
    L = len(Ws)
    pre: list[tuple[np.ndarray, np.ndarray]] = []
    relax: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    # Interval bounds ride along: they are nearly free and can be tighter for a neuron.
    ilo, ihi = lo, hi
    T, ops = term_sizes_start(lo, hi), 0   # the terms' sizes, for the rounding of the others
    EL = EU = np.zeros((N, lo.shape[1] + 1, 0))  # forward equations of the last layer
    for k in range(L - 1):
        if deadline is not None and intermediate != "interval" and (
                time.monotonic() + _layer_seconds(N, lo.shape[1], Ws, k, intermediate) > deadline):
            # (the estimate first: one layer's forward equations of a 6400-input model
            # took 2.6 s, one matrix product that cannot stop half way)
            intermediate = "interval"
        W, b = Ws[k], bs[k]
        Wp, Wn = np.maximum(W, 0.0), np.minimum(W, 0.0)
        zlo = ilo @ Wp.T + ihi @ Wn.T + b
        zhi = ihi @ Wp.T + ilo @ Wn.T + b
        sound_i = _interval_outward(zlo, zhi, ilo, ihi, Wp, Wn, b)
        if prev is not None:
            zlo = np.maximum(zlo, prev[k][0])
            zhi = np.minimum(zhi, prev[k][1])
        if k > 0 and intermediate in ("forward", "hybrid"):
            # Forward symbolic bounds: linear lower/upper functions of the input carried
            # through the layers (cheap: (d + 1) columns per neuron).
            zl_eq = EL @ Wp.T + EU @ Wn.T
            zu_eq = EU @ Wp.T + EL @ Wn.T
            zl_eq[:, -1, :] += b
            zu_eq[:, -1, :] += b
            flo = _concretise_fw(zl_eq, lo, hi)
            fhi = -_concretise_fw(-zu_eq, lo, hi)
            zlo = np.maximum(zlo, flo)
            zhi = np.minimum(zhi, fhi)
        if (k > 1 or (k == 1 and intermediate == "crown")) and intermediate in ("crown", "hybrid"):
            # (for layer 2 back-substitution equals the forward bounds: skipped in hybrid)
            _refine(zlo, zhi, k, Ws, bs, relax, lo, hi)
        zhi = np.maximum(zhi, zlo)  # rounding can cross them by an ulp
        # back-substitution sums every earlier layer's terms: count them all
        ops += W.shape[1] + 1 + (sum(V.shape[1] + 1 for V in Ws[:k]) if intermediate != "interval" else 0)
        T = term_sizes_step(T, W, b)
        zlo, zhi = _move_outward(zlo, zhi, sound_i, 2.0 * ops * UNIT_ROUNDOFF * T)
        if prev is not None:
            # the parent's bounds hold (a split's 0 among them): snapping must not undo it
            zlo = np.maximum(zlo, prev[k][0])
            zhi = np.maximum(np.minimum(zhi, prev[k][1]), zlo)
        pre.append((zlo, zhi))
        relax.append(relax_relu(zlo, zhi))
        if intermediate in ("forward", "hybrid"):
            al, su, tu = relax[-1]
            if k == 0:
                # z_1 = W x + b exactly: both equations are the same
                zl_eq = np.empty((N, lo.shape[1] + 1, W.shape[0]))
                zl_eq[:, :-1, :] = W.T[None]
                zl_eq[:, -1, :] = b
                zu_eq = zl_eq
            EL = zl_eq * al[:, None, :]
            EU = zu_eq * su[:, None, :]
            EU[:, -1, :] += tu
        ilo, ihi = np.maximum(zlo, 0.0), np.maximum(zhi, 0.0)   # sound: no rounding left
    m = Ws[-1].shape[0]
    if C is None:
        C = np.concatenate([np.eye(m), -np.eye(m)], 0)
    C = np.asarray(C, dtype=np.float64)
    dd = np.zeros(C.shape[0]) if d is None else np.asarray(d, dtype=np.float64)
    Lam = np.ascontiguousarray(np.broadcast_to(C, (N, *C.shape)))
    A, c = _backsub(Lam, L - 1, Ws, bs, relax)
    if skip is not None:
        A = A + (C @ skip[0])[None]
        c = c + (C @ skip[1])[None]
    c = c + dd
    # the last back-substitution's own rounding: 2^40 + 2^40 c - 2^40 rounds to 0, and a
    # margin scaled by the cancelled coefficient proved a violated property
    rad = output_rounding(Ws, bs, skip, lo, hi, C, dd, hidden_terms=T)
    lower = concretise(A, c, lo, hi) - rad
    if want_linear:
        # the linear form itself is the raw back-substitution: moved down by the same
        # radius (which holds at every point of the box), it is a sound lower bound there,
        # for an LP over a polytope inside the box or a Farkas combination of the rows (both
        # used the raw form, and a 2^60 cancellation read 1 too high)
        return pre, lower, A, np.nextafter(c - rad, -np.inf)
    return pre, lower



def term_sizes_start(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The size of the inputs, ``max(|lo|, |hi|)``: the start of the terms' sizes, which
    (carried by :func:`term_sizes_step`, times the operations' count and the unit
    roundoff) bound the rounding of any sum a bound or a composed map is built from.

    Example:
        >>> term_sizes_start(np.array([-3.0, 1.0]), np.array([2.0, 5.0])).tolist()
        [3.0, 5.0]
    """
    return np.maximum(np.abs(lo), np.abs(hi))


def term_sizes_step(T: np.ndarray, W: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The terms' sizes carried one layer, ``|W| T + |b|``: every interval and CROWN term
    of the layer is at most that.  ``T`` is (n,) or (N, n) for N boxes.

    Example:
        >>> W, b = np.array([[1.0, -2.0]]), np.array([-1.0])
        >>> term_sizes_step(np.array([3.0, 5.0]), W, b).tolist()
        [14.0]
    """
    T = np.abs(W) @ T.T if T.ndim == 1 else T @ np.abs(W).T
    return T + np.abs(b)


def _interval_outward(zlo, zhi, ilo, ihi, Wp, Wn, b) -> tuple[np.ndarray, np.ndarray]:
    """Outward (sound) versions of the interval bounds ``zlo``/``zhi`` just computed from
    the sound bounds ``ilo``/``ihi``: each sum of ``n + 1`` terms is off by at most
    ``gamma_{n+1}`` times the sum of its terms' sizes (doubled).  A bound whose terms are
    all exact (a ReLU's lower bound 0 under positive weights) keeps rounding 0, so a
    structural 0 stays a decided sign."""
    g = 2.0 * (Wp.shape[1] + 2) * UNIT_ROUNDOFF
    Wm = -Wn
    rlo = (g * np.abs(ilo)) @ Wp.T + (g * np.abs(ihi)) @ Wm.T + g * np.abs(b)
    rhi = (g * np.abs(ihi)) @ Wp.T + (g * np.abs(ilo)) @ Wm.T + g * np.abs(b)
    return zlo - rlo, zhi + rhi


def _move_outward(zlo: np.ndarray, zhi: np.ndarray, sound_i: tuple[np.ndarray, np.ndarray],
                  r: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """Bounds moved to their outward (sound) versions, so a sign is decided only where
    one is proved.

    A bound is sound in two ways: the interval bounds with their own rounding
    (``sound_i``, :func:`_interval_outward`), or the bound itself widened by ``r`` (the
    rounding of CROWN's back-substitution and of the forward equations: ``ops`` unit
    roundoffs of the terms' sizes, doubled); the tighter is kept.  Rounded to nearest, a
    bound ``1 + 2^-53 - 1`` read 0 and a neuron whose maximum is 2^-53 read dead (under
    2^60 it was worth 128, and a violated property read 'holds')."""
    sound_lo = np.maximum(sound_i[0], zlo - r)
    sound_hi = np.minimum(sound_i[1], zhi + r)
    # every bound is made outward, not only those that decide a sign: an unstable
    # neuron's upper bound read 1.9e-6 for 2.8e-6 (1000 relu(x0 + x1 - 1e10)), and its
    # relaxation lost the rest ('holds' for f >= 2.5e-3, max 2.8e-3).  One more ulp
    # covers the rounding of the subtraction itself.
    lo = np.where(sound_lo < zlo, np.nextafter(sound_lo, -np.inf), zlo)
    hi = np.where(sound_hi > zhi, np.nextafter(sound_hi, np.inf), zhi)
    return lo, np.maximum(hi, lo)


@_refuse_overflow
def interval_batch(Ws, bs, lo, hi, skip=None):
    """Interval arithmetic for a batch of boxes: (pre, out_lo, out_hi); refused
    (:class:`BoundsOverflow`) where it overflows to NaN, as :func:`crown_batch` is."""
    pre = []
    ilo, ihi = np.asarray(lo, float), np.asarray(hi, float)
    for k in range(len(Ws) - 1):
        W, b = Ws[k], bs[k]
        Wp, Wn = np.maximum(W, 0.0), np.minimum(W, 0.0)
        zlo = ilo @ Wp.T + ihi @ Wn.T + b
        zhi = ihi @ Wp.T + ilo @ Wn.T + b
        sound_i = _interval_outward(zlo, zhi, ilo, ihi, Wp, Wn, b)
        zlo, zhi = _move_outward(zlo, zhi, sound_i, np.inf)
        pre.append((zlo, zhi))
        ilo, ihi = np.maximum(zlo, 0.0), np.maximum(zhi, 0.0)
    W, b = Ws[-1], bs[-1]
    Wp, Wn = np.maximum(W, 0.0), np.minimum(W, 0.0)
    olo = ilo @ Wp.T + ihi @ Wn.T + b
    ohi = ihi @ Wp.T + ilo @ Wn.T + b
    olo, ohi = _interval_outward(olo, ohi, ilo, ihi, Wp, Wn, b)   # the outputs too
    if skip is not None:
        S, s = skip
        Sp, Sn = np.maximum(S, 0.0), np.minimum(S, 0.0)
        x_lo, x_hi = np.asarray(lo, float), np.asarray(hi, float)
        slo, shi = _interval_outward(x_lo @ Sp.T + x_hi @ Sn.T + s, x_hi @ Sp.T + x_lo @ Sn.T + s,
                                     x_lo, x_hi, Sp, Sn, s)
        # the sum of the two parts rounds once more: one ulp outward
        olo, ohi = np.nextafter(olo + slo, -np.inf), np.nextafter(ohi + shi, np.inf)
    return pre, olo, ohi


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class NetworkBounds:
    """Bounds of every hidden pre-activation and of every output over a domain.

    ``pre_lo[k]``/``pre_hi[k]`` bound hidden layer ``k`` (0-based); ``out_lo``/``out_hi``
    bound the outputs.  ``method`` is "interval" or "symbolic".

    Example:
        >>> from relulab import Box, Network
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])   # |x|
        >>> b = symbolic_bounds(net, Box([-1], [2]))
        >>> b.pre_lo[0].round(9).tolist(), b.pre_hi[0].round(9).tolist(), b.n_unstable, b.method
        ([-1.0, -2.0], [2.0, 1.0], 2, 'symbolic')
    """

    pre_lo: tuple[np.ndarray, ...]
    pre_hi: tuple[np.ndarray, ...]
    out_lo: np.ndarray
    out_hi: np.ndarray
    method: str

    @property
    def n_active(self) -> int:
        """Neurons with pre-activation >= 0 on the whole domain."""
        return int(sum(int(np.sum(lo >= 0)) for lo in self.pre_lo))

    @property
    def n_inactive(self) -> int:
        """Neurons with pre-activation <= 0 on the whole domain."""
        return int(sum(int(np.sum((hi <= 0) & (lo < 0))) for lo, hi in zip(self.pre_lo, self.pre_hi, strict=True)))

    @property
    def n_unstable(self) -> int:
        """Neurons whose pre-activation takes both signs (as far as the bounds tell)."""
        return int(sum(int(np.sum((lo < 0) & (hi > 0))) for lo, hi in zip(self.pre_lo, self.pre_hi, strict=True)))

    def unstable_per_layer(self) -> list[int]:
        return [int(np.sum((lo < 0) & (hi > 0))) for lo, hi in zip(self.pre_lo, self.pre_hi, strict=True)]

    def to_dict(self) -> dict:
        return {
            "method": self.method,
            "out_lo": self.out_lo.tolist(),
            "out_hi": self.out_hi.tolist(),
            "pre_lo": [a.tolist() for a in self.pre_lo],
            "pre_hi": [a.tolist() for a in self.pre_hi],
            "n_active": self.n_active,
            "n_inactive": self.n_inactive,
            "n_unstable": self.n_unstable,
            "unstable_per_layer": self.unstable_per_layer(),
        }


def _box_of(domain: Box | Polytope) -> Box:
    # a box holding the domain: its bounding box, or the box a moved copy was cut by
    # (solving that copy's bounding box again cost 2 d LPs outside any time limit)
    if isinstance(domain, Box):
        return domain
    return domain.box_cut if domain.box_cut is not None else domain.bounding_box()


def _checked(net: object, domain: object, where: str) -> tuple[Network, Box | Polytope]:
    """``net`` and ``domain`` (as a Box or Polytope of its input dimension), or one error
    naming ``where`` (a path or None read 'str object has no attribute input_dim')."""
    if not isinstance(net, Network):
        raise RelulabError(f"{where}: expected a relulab Network, got {type(net).__name__} "
                           "(load a file with relulab.io.load_model)")
    return net, as_domain(domain, net.input_dim)


def interval_bounds(net: Network, domain: Box | Polytope) -> NetworkBounds:
    """Interval bound propagation over ``domain`` (a Polytope is replaced by its bounding box).

    Example:
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> interval_bounds(net, Box([-1], [2])).out_hi.round(9).tolist()   # 3, moved outward
        [3.0]
    """
    net, domain = _checked(net, domain, "interval_bounds")
    box = _box_of(domain)
    Ws, bs, sk = float_layers(net)
    pre, olo, ohi = interval_batch(Ws, bs, box.lo[None], box.hi[None], sk)
    return _of_exact_network(net, box, NetworkBounds(
        tuple(p[0][0] for p in pre), tuple(p[1][0] for p in pre), olo[0], ohi[0], "interval"
    ))


def _of_exact_network(net: Network, box: Box, b: NetworkBounds) -> NetworkBounds:
    """The bounds ``b`` of ``net.float()`` widened into bounds of the exact ``net`` by the
    rounding of its weights (:func:`float_rounding_bound`, layer by layer); ``b`` as it is
    for a float network or one whose entries are all float64 numbers."""
    errs = _rounding_per_layer(net, box)
    if errs is None:
        return b
    pre = [_widened(lo, hi, e) for lo, hi, e in zip(b.pre_lo, b.pre_hi, errs[:-1], strict=True)]
    olo, ohi = _widened(b.out_lo, b.out_hi, errs[-1])
    return NetworkBounds(tuple(p[0] for p in pre), tuple(p[1] for p in pre), olo, ohi, b.method)


def _poly_min(domain: Polytope, A: np.ndarray, c: np.ndarray, box_low: np.ndarray) -> np.ndarray:
    """Sound lower bounds over the polytope of the rows of ``A x + c``, a linear lower
    bound sound on the polytope's bounding box (:func:`crown_batch` with ``want_linear``):
    each row's minimum (one warm-started LP per row), never below ``box_low``, the sound
    bound over that box."""
    from .lp import LPModel

    box = _box_of(domain)   # the box the linear bound was found on
    model = LPModel(np.zeros(domain.dim), A_ub=domain.A, b_ub=domain.b, lb=box.lo, ub=box.hi)
    out = np.empty(A.shape[0])
    for i in range(A.shape[0]):
        model.set_objective(A[i])
        r = model.solve()
        # HiGHS's "optimal" objective is within its tolerances only (a warm-started vertex
        # was 3.5e-7 relative above the minimum); the dual bound is proven
        lp_min = model.proven_bound(r) if r.status == "optimal" else None
        if lp_min is None:
            out[i] = -np.inf   # the box bound below stands
        else:
            # the sum's rounding (half an ulp of each side) keeps it a lower bound
            out[i] = lp_min + c[i] - scaled_tol(lp_min + c[i], ROUNDOFF)
    # both are sound lower bounds: keep the better one
    return np.maximum(out, box_low)


def symbolic_bounds(net: Network, domain: Box | Polytope) -> NetworkBounds:
    """Symbolic linear bounds (CROWN back-substitution) of every neuron and output.

    Each bound is intersected with the interval bound, so the result is at least as
    tight as :func:`interval_bounds`.

    Example:
        >>> net = Network([[[1.0], [-1.0]], [[1.0, -1.0]]], [[0.0, 0.0], [0.0]])   # x
        >>> b = symbolic_bounds(net, Box([-1], [2]))
        >>> b.out_lo.round(9).tolist(), b.out_hi.round(9).tolist()
        ([-1.0], [2.0])
    """
    net, domain = _checked(net, domain, "symbolic_bounds")
    box = _box_of(domain)
    Ws, bs, sk = float_layers(net)
    m = net.output_dim
    C = np.concatenate([np.eye(m), -np.eye(m)], 0)
    pre, low, A, c = crown_batch(Ws, bs, box.lo[None], box.hi[None], C=C, skip=sk, want_linear=True)
    if isinstance(domain, Polytope):
        low = _poly_min(domain, A[0], c[0], low[0])[None]
    olo, ohi = low[0, :m], -low[0, m:]
    try:  # intersect with the interval bound, which can only tighten it
        _, ilo, ihi = interval_batch(Ws, bs, box.lo[None], box.hi[None], sk)
        olo, ohi = np.maximum(olo, ilo[0]), np.minimum(ohi, ihi[0])
    except BoundsOverflow:  # interval arithmetic overflowed where back-substitution did not
        pass
    return _of_exact_network(net, box, NetworkBounds(
        tuple(p[0][0] for p in pre), tuple(p[1][0] for p in pre), olo, np.maximum(ohi, olo), "symbolic"
    ))


def linear_bounds(
    net: Network, domain: Box | Polytope, C: np.ndarray, d: np.ndarray | None = None
) -> np.ndarray:
    """Lower bounds of each row of ``C f(x) + d`` over ``domain``, back-substituting
    through ``C`` itself (tighter than bounding ``f`` first).

    Example:
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0], [1.0, -1.0]]], [[0, 0], [0, 0]])
        >>> linear_bounds(net, Box([0.5], [1]), np.array([[1.0, -1.0]])).round(9).tolist()   # 0, moved outward by its rounding
        [-0.0]
    """
    net, domain = _checked(net, domain, "linear_bounds")
    box = _box_of(domain)
    Ws, bs, sk = float_layers(net)
    if C is None:
        raise RelulabError("linear_bounds: C is required (one row per linear form of the outputs)")
    try:
        C = np.atleast_2d(np.asarray(C, dtype=np.float64))
        d = None if d is None else np.asarray(d, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError, OverflowError) as e:
        raise RelulabError(f"linear_bounds: C and d must be arrays of numbers ({e})") from None
    if C.ndim != 2 or C.shape[1] != net.output_dim or C.shape[0] == 0:
        raise RelulabError(f"linear_bounds: C must have at least one row and {net.output_dim} columns "
                           f"(one per output), got shape {C.shape}")
    if d is not None:
        if d.shape[0] != C.shape[0]:
            raise RelulabError(f"linear_bounds: d must have one entry per row of C ({C.shape[0]}), got {d.shape[0]}")
    if not (np.all(np.isfinite(C)) and (d is None or np.all(np.isfinite(d)))):
        raise RelulabError("linear_bounds: C and d must be finite (NaN or inf found)")
    _, low, A, c = crown_batch(Ws, bs, box.lo[None], box.hi[None], C=C, d=d, skip=sk, want_linear=True)
    low = _poly_min(domain, A[0], c[0], low[0]) if isinstance(domain, Polytope) else low[0]
    errs = _rounding_per_layer(net, box)
    if errs is not None:   # an exact network: the float network's bound, less its rounding
        with np.errstate(over="ignore"):
            low = np.nextafter(low - rounding_slack(C, errs[-1]), -np.inf)
    return low
