"""Which ReLU to split next in branch and bound over activations.

Two heuristics of the BaBSR / filtered-smart-branching family, both working on the
per-domain arrays the bound computation already has:

* :func:`babsr_scores`: BaBSR's estimate of how much splitting an unstable neuron
  (pre-activation bounds ``l < 0 < u``) raises the lower bound of the objective row:
  the upper relaxation ``h <= u (z - l) / (u - l)`` enters the back-substituted bound
  with the neuron's backward coefficient ``lam`` when ``lam < 0`` and costs
  ``-lam * (-l u / (u - l))``; a split removes that term.  Neurons whose coefficient is
  positive get a small secondary score ``|lam| min(u, -l)`` (the lower relaxation's
  slack) so ties are broken towards neurons that matter at all.
* :func:`choose_fsb`: filtered smart branching: the ``k`` best candidates by BaBSR are
  *evaluated*: a cheap bound (one back-substitution, intermediate bounds kept) of both
  children of every candidate, and the candidate whose worse child is best wins
  (``k=1``: plain BaBSR).  Measured on 30 random "holds" instances (20-100 inputs,
  thresholds 5% above the exact maximum, numpy engine; ``benchmarks/relu_bab.py
  --branching``): k = 1, 2, 4, 8 needed 32052, 47612, 49294, 42498 sub-domains; the
  one-back-substitution estimate misses how a split tightens the later layers' bounds,
  so the branch and bound uses k = 1 by default.

Both take and return plain numpy arrays; the hidden layers are concatenated into one
flat neuron index (layer 0 first), the layout of the split assignments.

Example:
    >>> import numpy as np
    >>> lo, hi = np.array([[-1.0, -2.0, 1.0]]), np.array([[1.0, 0.5, 2.0]])
    >>> lam = np.array([[-1.0, -1.0, -1.0]])
    >>> s = babsr_scores(lo, hi, lam)
    >>> int(np.argmax(s[0])), bool(s[0, 2] == -np.inf)     # the stable neuron is never chosen
    (0, True)
"""

from __future__ import annotations

import numpy as np

from ..bounds import relax_relu

__all__ = ["babsr_scores", "backward_coeffs", "choose_fsb"]

SECONDARY = 1e-3  # weight of the lower-relaxation slack next to the intercept term (tie breaker)


def babsr_scores(lo: np.ndarray, hi: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """BaBSR scores (N, n) of every neuron from its pre-activation bounds and backward
    coefficient; ``-inf`` for neurons that are not unstable (they cannot be split).

    Example:
        >>> import numpy as np
        >>> babsr_scores(np.array([[-1.0]]), np.array([[3.0]]), np.array([[-2.0]])).round(6).tolist()
        [[1.502]]
    """
    unst = (lo < 0) & (hi > 0)
    den = np.where(unst, hi - lo, 1.0)
    intercept = np.where(unst, -lo * (hi / den), 0.0)  # a score: lo * hi can underflow
    main = np.maximum(-lam, 0.0) * intercept
    second = np.abs(lam) * np.minimum(np.maximum(hi, 0.0), np.maximum(-lo, 0.0))
    # (a neuron that does not touch the objective scores 0: still splittable, completeness)
    s = main + SECONDARY * second
    return np.where(unst, s, -np.inf)


def backward_coeffs(
    Ws: list[np.ndarray], relax: list[tuple[np.ndarray, np.ndarray, np.ndarray]], rows: np.ndarray
) -> list[np.ndarray]:
    """Backward coefficients of each hidden layer's ReLU outputs in the CROWN lower
    bound of ``rows @ y`` (rows (N, m), one objective row per domain): a list of (N, n_k).

    Example:
        >>> import numpy as np
        >>> Ws = [np.array([[1.0], [-1.0]]), np.array([[1.0, -2.0]])]
        >>> relax = [relax_relu(np.array([[-1.0, -1.0]]), np.array([[1.0, 1.0]]))]
        >>> backward_coeffs(Ws, relax, np.array([[1.0]]))[0].tolist()
        [[1.0, -2.0]]
    """
    L = len(Ws)
    out: list[np.ndarray] = [None] * (L - 1)  # type: ignore[list-item]
    lam = rows
    for j in range(L - 1, 0, -1):
        A = lam @ Ws[j]  # coefficient on h_{j-1}
        out[j - 1] = A
        al, su, _ = relax[j - 1]
        lam = np.where(A > 0, A * al, A * su)
    return out


def _last_bound(Ws, bs, relax, rows, lo, hi, skip) -> np.ndarray:
    """CROWN lower bound of ``rows @ y`` per domain (rows (N, m)) with the given
    relaxations: one back-substitution, concretised over the box."""
    L = len(Ws)
    lam = rows
    const = np.zeros(len(rows))
    for j in range(L - 1, -1, -1):
        const += lam @ bs[j]
        A = lam @ Ws[j]
        if j == 0:
            break
        al, su, tu = relax[j - 1]
        An = np.minimum(A, 0.0)
        lam = np.where(A > 0, A * al, An * su)
        const += np.sum(An * tu, axis=1)
    if skip is not None:
        A = A + rows @ skip[0]
        const = const + rows @ skip[1]
    return const + np.sum(np.maximum(A, 0.0) * lo + np.minimum(A, 0.0) * hi, axis=1)


def choose_fsb(
    Ws: list[np.ndarray],
    bs: list[np.ndarray],
    pre: list[tuple[np.ndarray, np.ndarray]],
    rows: np.ndarray,
    row_const: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    skip=None,
    k: int = 4,
) -> np.ndarray:
    """Filtered smart branching: the flat index of the neuron to split for each domain,
    or -1 where no neuron is unstable.

    The ``k`` best candidates by :func:`babsr_scores` are each bounded in both children
    (the neuron's relaxation replaced by the identity or by zero, other bounds kept) with
    one back-substitution of the objective row ``rows @ y + row_const``; the winner has
    the largest worse-child bound (ties: the larger BaBSR score).

    Example:
        >>> import numpy as np
        >>> Ws = [np.array([[1.0], [-1.0]]), np.array([[1.0, 1.0]])]     # |x|
        >>> bs = [np.zeros(2), np.zeros(1)]
        >>> pre = [(np.array([[-1.0, -2.0]]), np.array([[2.0, 1.0]]))]
        >>> choose_fsb(Ws, bs, pre, np.array([[1.0]]), np.zeros(1),
        ...            np.array([[-1.0]]), np.array([[2.0]])).tolist()
        [0]
    """
    N = rows.shape[0]
    relax = [relax_relu(a, b) for a, b in pre]
    lam = backward_coeffs(Ws, relax, rows)
    scores = np.concatenate([babsr_scores(a, b, g) for (a, b), g in zip(pre, lam, strict=True)], axis=1)
    n_tot = scores.shape[1]
    if n_tot == 0:
        return np.full(N, -1)
    if k <= 1:  # plain BaBSR: the best score
        pick = np.argmax(scores, axis=1)
        return np.where(np.isfinite(scores[np.arange(N), pick]), pick, -1)
    kk = min(k, n_tot)
    cand = np.argpartition(-scores, kk - 1, axis=1)[:, :kk]  # (N, kk)
    cs = np.take_along_axis(scores, cand, 1)
    order = np.argsort(-cs, axis=1, kind="stable")  # best score first: argmax breaks ties to it
    cand = np.take_along_axis(cand, order, 1)
    cs = np.take_along_axis(cs, order, 1)
    valid = np.isfinite(cs)
    # 2 kk children per domain, each one back-substitution with one neuron's relaxation fixed
    cuts = np.cumsum([0, *[a.shape[1] for a, _ in pre]])
    rep = 2 * kk
    big_relax = []
    for li, (al, su, tu) in enumerate(relax):
        A_ = np.repeat(al, rep, axis=0)
        S_ = np.repeat(su, rep, axis=0)
        T_ = np.repeat(tu, rep, axis=0)
        for c in range(kk):
            idx = cand[:, c]
            inl = (idx >= cuts[li]) & (idx < cuts[li + 1])
            where = np.nonzero(inl)[0]
            col = idx[where] - cuts[li]
            for child, val in ((0, 0.0), (1, 1.0)):  # child 0: inactive, child 1: active
                r_ = where * rep + 2 * c + child
                A_[r_, col] = val
                S_[r_, col] = val
                T_[r_, col] = 0.0
        big_relax.append((A_, S_, T_))
    child = _last_bound(Ws, bs, big_relax, np.repeat(rows, rep, axis=0),
                        np.repeat(lo, rep, axis=0), np.repeat(hi, rep, axis=0), skip)
    child = child.reshape(N, kk, 2) + row_const[:, None, None]
    worst = np.where(valid, child.min(axis=2), -np.inf)
    pick = np.argmax(worst, axis=1)
    out = cand[np.arange(N), pick]
    return np.where(valid.any(axis=1), out, -1)
