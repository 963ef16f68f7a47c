"""Exact reduction: a smaller network computing the same function on a domain.

:func:`reduce` repeats, until nothing changes:

1. :func:`~relulab.symmetry.canonical` on the domain: removes neurons proved dead
   (never active), neurons with zero outgoing weights, constant neurons, and merges
   neurons with the same normalised hyperplane;
2. folds stably active neurons (``relu(z) = z`` on the whole domain) where the
   architecture allows it without changing the function on the domain:

   * a hidden layer whose neurons are all stably active is affine on the domain and is
     multiplied into the next layer (one hidden layer fewer);
   * in a one-hidden-layer network, a stably active neuron is an affine function of the
     input and moves into the input-to-output skip; so does one neuron of each *twin*
     pair (opposite hyperplanes, ``a relu(z) + b relu(-z) = (a + b) relu(z) - b z``);
   * in deeper networks, a stably active neuron whose incoming weights are a linear
     combination of those of other stably active neurons of its layer is that
     combination plus a constant on the domain; its outgoing weights are redistributed.

Neuron status (dead / stably active) comes from sound bounds and, optionally, from the
exact verifier (:func:`~relulab.symmetry.neuron_status`).  The result is then checked by
:func:`~relulab.symmetry.equivalent` against the input and on random points.

Example:
    >>> import numpy as np
    >>> from relulab import Network, Box
    >>> # relu(x + 2) is x + 2 on [-1, 1]; relu(x - 3) is 0 there
    >>> net = Network([[[1.0], [1.0], [-1.0]], [[1.0, 5.0, 1.0]]], [[2.0, -3.0, 0.0], [0.0]])
    >>> r = reduce(net, Box([-1], [1]))
    >>> r.widths_before, r.widths_after, r.check.status
    ((3,), (1,), 'equal')
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ..domain import Box, Polytope, as_domain
from ..errors import RelulabError, is_int_at_least, is_positive_seconds
from ..layers import Layers
from ..network import Network, NetworkError
from ..tolerance import ROUNDOFF
from ._status import neuron_status, verifier_available
from .canonical import canonical
from .equivalence import EquivalenceResult, equivalent, points_in_time

__all__ = ["reduce", "ReduceResult"]

# the final check gets at least this share of the timeout, even when the neuron proofs
# and samples used it all (it had 1 s at least: 4 s in all for a 1 s limit)
CHECK_FLOOR = 0.25


@dataclass(frozen=True)
class ReduceResult:
    """The reduced network, what was removed and how the result was checked.

    ``removed`` counts neurons by reason: ``dead``, ``zero_outgoing``, ``constant``,
    ``merged``, ``collapsed`` (whole stably active layers), ``to_skip`` (stably active
    neurons of a one-hidden-layer network), ``twins`` and ``dependent_active``.
    ``check`` is the :func:`equivalent` answer comparing input and result on the domain
    (None when not asked); ``sample_max_deviation`` the largest output difference seen on
    ``sample_points`` random points of the domain.

    Example:
        >>> from relulab import Box, Network
        >>> net = Network([[[1.0], [1.0], [-1.0]], [[1.0, 5.0, 1.0]]], [[2.0, -3.0, 0.0], [0.0]])
        >>> r = reduce(net, Box([-1], [1]))
        >>> r.removed["dead"], r.check.status, r.sample_max_deviation < 1e-12
        (1, 'equal', True)
    """

    network: Network
    widths_before: tuple[int, ...]
    widths_after: tuple[int, ...]
    removed: dict[str, int]
    check: EquivalenceResult | None
    sample_max_deviation: float
    rounds: int
    log: tuple[str, ...] = field(default_factory=tuple)
    sample_points: int = 0

    @property
    def n_removed(self) -> int:
        return int(sum(self.widths_before) - sum(self.widths_after))

    @property
    def status(self) -> str:
        """"verified" (the check proved equality and no sample contradicts it),
        "unverified" (it ended unknown or found a difference, or the samples of the
        reduction differ by more than the check's tolerance) or "unchecked" (no check was
        asked for)."""
        if self.check is None:
            return "unchecked"
        tol = self.check.tol
        # an exact check (tol 0) leaves the float samples' rounding to it; nan: not agreed
        dev = self.sample_max_deviation
        agree = (not tol or dev <= tol) and not np.isnan(dev)
        return "verified" if self.check.status == "equal" and agree else "unverified"

    def to_dict(self) -> dict:
        return {
            "status": self.status,
            "widths_before": list(self.widths_before),
            "widths_after": list(self.widths_after),
            "neurons_before": int(sum(self.widths_before)),
            "neurons_after": int(sum(self.widths_after)),
            "removed": dict(self.removed),
            "check": None if self.check is None else self.check.to_dict(),
            "sample_max_deviation": self.sample_max_deviation,
            "sample_points": self.sample_points,
            "rounds": self.rounds,
            "log": list(self.log),
            "skip": self.network.skip is not None,
        }


def _solve_exact(B: np.ndarray, w: np.ndarray) -> np.ndarray | None:
    """alpha with ``alpha @ B == w`` in rational arithmetic, or None if w is not in the
    row space of B."""
    r, n = B.shape
    # Augmented system B^T alpha = w: n equations, r unknowns.
    M = [[B[j, i] for j in range(r)] + [w[i]] for i in range(n)]
    piv_cols = []
    row = 0
    for col in range(r):
        p = next((i for i in range(row, n) if M[i][col] != 0), None)
        if p is None:
            continue
        M[row], M[p] = M[p], M[row]
        pv = M[row][col]
        M[row] = [v / pv for v in M[row]]
        for i in range(n):
            if i != row and M[i][col] != 0:
                fac = M[i][col]
                M[i] = [a - fac * b for a, b in zip(M[i], M[row], strict=True)]
        piv_cols.append(col)
        row += 1
        if row == n:
            break
    if any(M[i][r] != 0 for i in range(row, n)):
        return None
    alpha = np.full(r, Fraction(0), dtype=object)
    for i, col in enumerate(piv_cols):
        alpha[col] = M[i][r]
    return alpha


def _express(rows: np.ndarray, exact: bool, rtol: float = 1e-10) -> tuple[list[int], dict[int, np.ndarray]]:  # tol: rank test
    """Greedy basis of the rows (in order) and, for every other row, its coefficients on
    the basis rows."""
    basis: list[int] = []
    combos: dict[int, np.ndarray] = {}
    for i in range(rows.shape[0]):
        w = rows[i]
        if basis:
            B = rows[basis]
            if exact:
                alpha = _solve_exact(B, w)
            else:
                alpha, *_ = np.linalg.lstsq(B.T, w, rcond=None)
                res = float(np.max(np.abs(B.T @ alpha - w)))
                if res > rtol * (1.0 + float(np.max(np.abs(w)))):
                    alpha = None
            if alpha is not None:
                combos[i] = alpha
                continue
        basis.append(i)
    return basis, combos


def _fold_round(lay: Layers, st: list[np.ndarray], allow_skip: bool, tol: float,
                counts: dict[str, int], log: list[str]) -> bool:
    """One pass of folding stably active neurons; returns whether anything changed."""
    changed = False
    ex = lay.exact
    # Whole stably active layers collapse into the next one (last first keeps indices valid).
    for k in reversed(range(lay.n_hidden)):
        if lay.Ws[k].shape[0] > 0 and np.all(st[k] == 1):
            n = lay.Ws[k].shape[0]
            lay.collapse(k, np.ones(n, dtype=bool))
            del st[k]
            counts["collapsed"] += n
            log.append(f"hidden layer {k} ({n} stably active neurons) multiplied into the next layer")
            changed = True
    if lay.n_hidden == 0:
        return changed
    if lay.n_hidden == 1 and allow_skip:
        W, b, V = lay.Ws[0], lay.bs[0], lay.Ws[1]
        act = [int(i) for i in np.nonzero(st[0] == 1)[0]]
        if act:
            S = V[:, act] @ W[act]
            s = V[:, act] @ b[act]
            lay.add_skip(S, s)
            counts["to_skip"] += len(act)
            log.append(f"{len(act)} stably active neuron(s) moved into the skip connection")
        # Twins: rows are normalised (largest entry 1 in absolute value), so opposite
        # hyperplanes have exactly opposite rows.
        R = np.concatenate([W, b[:, None]], axis=1)
        gone = set(act)
        twins = []
        for i in range(R.shape[0]):
            if i in gone:
                continue
            for j in range(i + 1, R.shape[0]):
                if j in gone:
                    continue
                same = (all(R[i] == -R[j]) if ex else
                        bool(np.max(np.abs(R[i] + R[j])) <= tol))
                if same:
                    # v_j relu(-z_i) = v_j relu(z_i) - v_j z_i
                    V[:, i] = V[:, i] + V[:, j]
                    lay.add_skip(-np.outer(V[:, j], W[i]), -V[:, j] * b[i])
                    gone.add(j)
                    twins.append((i, j))
                    break
        if twins:
            counts["twins"] += len(twins)
            log.append(f"{len(twins)} twin pair(s) (opposite hyperplanes) folded: one neuron each into the skip")
        if gone:
            lay.delete(0, sorted(gone))
            st[0] = np.delete(st[0], sorted(gone))
            changed = True
        if lay.Ws[0].shape[0] == 0:
            lay.constant_from(0)
            st.clear()
        return changed
    for k in range(lay.n_hidden):
        act = [int(i) for i in np.nonzero(st[k] == 1)[0]]
        if len(act) < 2:
            continue
        W, b = lay.Ws[k], lay.bs[k]
        basis, combos = _express(W[act], ex)
        if not combos:
            continue
        Wn = lay.Ws[k + 1]
        drop = []
        for ci, alpha in combos.items():
            i = act[ci]
            # alpha is on the basis as it was when row i came: its first len(alpha) rows
            # (a dependent row met before a later independent one has fewer)
            bj = [act[j] for j in basis[:len(alpha)]]
            const = b[i] - sum((alpha[t] * b[j] for t, j in enumerate(bj)), start=0 * b[i])
            for t, j in enumerate(bj):
                Wn[:, j] = Wn[:, j] + alpha[t] * Wn[:, i]
            lay.bs[k + 1] = lay.bs[k + 1] + const * Wn[:, i]
            drop.append(i)
        lay.delete(k, drop)
        st[k] = np.delete(st[k], drop)
        counts["dependent_active"] += len(drop)
        log.append(f"hidden layer {k}: {len(drop)} stably active neuron(s) written as combinations of others")
        changed = True
    return changed


def reduce(
    net: Network,
    domain: Box | Polytope | tuple,
    *,
    timeout: float | None = None,
    check: bool = True,
    allow_skip: bool = True,
    use_verifier: bool = True,
    n_check: int = 10_000,
    seed: int = 0,
    max_rounds: int = 10,
    merge_tol: float | None = None,
) -> ReduceResult:
    """The smallest network computing ``net``'s function on ``domain`` that these
    exact rules find (see the module docstring).

    Args:
        net: the network (float64 or exact; exact stays exact).
        domain: a Box or a bounded Polytope (or ``(lo, hi)``).
        timeout: seconds for the verifier in all: neuron proofs and the final check.
        check: compare the result with ``net`` by :func:`equivalent` on the domain.
        allow_skip: one-hidden-layer networks may gain an input-to-output skip.
        use_verifier: prove dead / stably active neurons that bounds leave open with the
            exact verifier (tried only on neurons that never change sign on samples).
        n_check: random domain points on which the result is compared too (under a
            ``timeout``, as many as a quarter of the time left allows, at least 200).
        merge_tol: float networks: normalised rows merged within this tolerance
            (:func:`canonical`'s default when None).  When the check finds a difference
            after such merges, the reduction is redone merging identical rows only (rows
            1e-12 apart under outgoing weights of 1e12 moved the output by 0.2).

    Example:
        >>> net = Network([[[1.0, 0.0], [2.0, 0.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> reduce(net, Box([-1, -1], [1, 1])).widths_after   # 2 relu(x1) = relu(2 x1)
        (1,)
    """
    if not isinstance(net, Network):
        raise NetworkError(f"reduce: net must be a relulab Network, got {type(net).__name__}")
    if timeout is not None and not is_positive_seconds(timeout):
        raise RelulabError(f"reduce: timeout must be a positive number of seconds or None, got {timeout!r}")
    for name, v in (("n_check", n_check), ("max_rounds", max_rounds), ("seed", seed)):
        if not is_int_at_least(v, 0):
            raise RelulabError(f"reduce: {name} must be an integer >= 0, got {v!r}")
    dom = as_domain(domain, net.input_dim)
    ex = net.is_exact
    tol = 0.0 if ex else ROUNDOFF
    use_verifier = use_verifier and verifier_available()
    rng = np.random.default_rng(seed)
    samples = dom.sample(2000, rng)
    counts = {k: 0 for k in ("dead", "zero_outgoing", "constant", "merged", "collapsed",
                             "to_skip", "twins", "dependent_active")}
    log: list[str] = []
    # Half of the time goes to neuron proofs (all rounds together), the rest to the check.
    t_start = time.monotonic()
    proofs_end = None if timeout is None else t_start + timeout / 2
    cur = net
    rounds = 0
    for _ in range(max_rounds):
        rounds += 1
        if cur.n_hidden_layers == 0:
            break
        st0 = neuron_status(cur, dom, use_verifier=use_verifier, samples=samples,
                            time_limit=None if proofs_end is None else max(0.0, proofs_end - time.monotonic()))
        can, rep = canonical(cur, dom, status=st0, merge_tol=merge_tol)
        counts["dead"] += len(rep.dead)
        counts["zero_outgoing"] += len(rep.zero_outgoing)
        counts["constant"] += len(rep.constant)
        counts["merged"] += sum(len(m) - 1 for _, m in rep.merged)
        if rep.n_removed:
            log.append(
                f"canonical: {len(rep.dead)} dead, {len(rep.zero_outgoing)} zero-outgoing, "
                f"{len(rep.constant)} constant, {sum(len(m) - 1 for _, m in rep.merged)} merged"
            )
        changed = rep.n_removed > 0
        cur = can
        if rep.constant_from_layer is not None or cur.n_hidden_layers == 0:
            log.append("the network is affine on the domain")
            break
        st = [st0.status[k][list(rep.order[k])].copy() for k in range(cur.n_hidden_layers)]
        lay = Layers.of(cur)
        if _fold_round(lay, st, allow_skip, tol, counts, log):
            changed = True
            cur = lay.network()
        if not changed:
            break
        if proofs_end is not None and time.monotonic() >= proofs_end:
            # each round bounds the whole network again (0.3 s for 800 x 800 weights)
            log.append(f"time limit: stopped after {rounds} rounds (the result computes the "
                       "same function; a later round might have removed more)")
            break

    dev = float(np.max(np.abs(net.float()(samples) - cur.float()(samples)), initial=0.0))
    left = None if timeout is None else max(0.0, timeout - (time.monotonic() - t_start))
    Xc = dom.sample(points_in_time((net, cur), n_check, left), rng)
    with np.errstate(over="ignore", invalid="ignore"):
        d_new = float(np.max(np.abs(net.float()(Xc) - cur.float()(Xc)), initial=0.0))
    # a NaN (inf - inf in a float pass) is no agreement: Python's max(dev, nan) dropped it
    dev = d_new if np.isnan(d_new) or np.isnan(dev) else max(dev, d_new)
    chk = None
    if check:
        # the check gets what is left, and at least CHECK_FLOOR of the time: a check given
        # (almost) no time answers unknown, and the result says "unverified"
        floor = None if timeout is None else CHECK_FLOOR * timeout
        left = None if timeout is None else max(floor, timeout - (time.monotonic() - t_start))
        chk = equivalent(net, cur, dom, timeout=left)
        if chk.status == "different" and counts["merged"] and not ex and merge_tol != 0.0:
            # the float merges moved the outputs: again, merging identical rows only
            left = None if timeout is None else max(floor, timeout - (time.monotonic() - t_start))
            return reduce(net, dom, timeout=left, check=check, allow_skip=allow_skip,
                          use_verifier=use_verifier, n_check=n_check, seed=seed,
                          max_rounds=max_rounds, merge_tol=0.0)
    return ReduceResult(
        network=cur,
        widths_before=net.widths,
        widths_after=cur.widths,
        removed=counts,
        check=chk,
        sample_max_deviation=dev,
        rounds=rounds,
        log=tuple(log),
        sample_points=len(samples) + len(Xc),
    )
