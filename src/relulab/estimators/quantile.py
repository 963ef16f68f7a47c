"""ConquerNet: quantile regression with one ReLU network and (smoothed) check losses.

:class:`QuantileNetRegressor` fits one network with one output per quantile level by
minimising the mean over levels of the check loss (``loss="pinball"``) or of its
convolution-smoothed version (``loss="conquer"``, see :mod:`.kernels`).

Non-crossing (``noncrossing=True``, several levels): the network's outputs ``z`` are
read as a base and increments, ``q_1 = z_1`` and ``q_k = q_{k-1} + relu(z_k)``.  The
quantile curves therefore never cross, anywhere in input space (guaranteed by
construction, not a penalty), and the head is ReLU + affine, so ``network_`` is an exact
ReLU network: one more hidden layer of ``K + 1`` neurons ``relu(z_1), relu(-z_1),
relu(z_2), ..., relu(z_K)`` and an output layer of partial sums.  An increment whose
pre-activation is negative over the data gets no gradient (the two levels then coincide);
at initialisation the increments' rows of the last layer are zero and their biases are the
gaps between the response's empirical quantiles (at least 0.01 standardised units), so
every increment starts positive, the same at every input.

Inputs and response are standardised before training; the data-driven bandwidth is
applied on the standardised response, and ``bandwidth_`` reports it in response units.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..limits import check_bytes
from ..network import Network
from . import _losses, _torch
from ._base import (
    EstimatorInputError,
    NetEstimatorBase,
    check_choice,
    check_hidden,
    check_scored_y,
    check_X,
    check_Xy,
    finite_number,
    forward_in_blocks,
    keeps_state_on_failure,
    robust_response_scale,
    seed_of,
    standardise,
    standardiser,
)
from .kernels import KERNELS, check_loss, conquer_bandwidth

__all__ = ["QuantileNetRegressor"]

# smallest starting increment between neighbouring quantile outputs (standardised
# response units): keeps every ReLU increment active at initialisation.
_MIN_INIT_GAP = 1e-2
# the K-level loss keeps about a dozen (rows x K) float32 temporaries for the backward pass
# (head sums, residuals, kernel terms and their gradients; measured: 45 bytes per row and
# level), with a margin
LOSS_BYTES_PER_LEVEL = 64


def check_quantiles(quantiles: Any, where: str) -> tuple[np.ndarray, bool]:
    """The levels as a sorted float array and whether a single number (or 0-d array) was given."""
    try:
        raw = np.asarray(quantiles)
        ok = raw.dtype.kind in "iuf" and not isinstance(quantiles, (str, bytes))
        q = np.atleast_1d(raw.astype(np.float64)) if ok else None
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise EstimatorInputError(f"{where}: quantiles must be numbers in (0, 1), got {quantiles!r}")
    scalar = raw.ndim == 0
    if q.ndim != 1 or q.size == 0:
        raise EstimatorInputError(f"{where}: quantiles must be a number or a 1-D sequence, got {quantiles!r}")
    if not np.all((q > 0) & (q < 1)):
        raise EstimatorInputError(f"{where}: quantiles must lie strictly between 0 and 1, got {q.tolist()}")
    if np.any(np.diff(q) <= 0):
        raise EstimatorInputError(f"{where}: quantiles must be strictly increasing, got {q.tolist()}")
    return q, scalar


def _noncrossing_head_np(z: np.ndarray) -> np.ndarray:
    """The non-crossing head on raw outputs ``z`` (n, K): ``q_1 = z_1``, ``q_k = q_(k-1) + relu(z_k)``."""
    return np.cumsum(np.concatenate([z[:, :1], np.maximum(z[:, 1:], 0.0)], axis=1), axis=1)


class BandwidthError(EstimatorInputError):
    """A fixed bandwidth that float32 training cannot use (known only once ``y`` is seen;
    the command line names ``--bandwidth`` in front of it)."""


class QuantileNetRegressor(NetEstimatorBase):
    """Quantile regression by a ReLU network (ConquerNet when ``loss="conquer"``).

    Args:
        quantiles: one level or an increasing sequence of levels in (0, 1).  A single
            number makes ``predict`` return a vector, a sequence an ``(n, K)`` array.
        hidden: hidden-layer widths; ``()`` gives a linear quantile model.
        loss: ``"conquer"`` (convolution-smoothed check loss) or ``"pinball"``.
        kernel: smoothing kernel (``"gaussian"``, ``"logistic"``, ``"uniform"``,
            ``"epanechnikov"``, ``"triangular"``).
        bandwidth: ``"auto"`` for the conquer rule (per level, on the standardised
            response, with ``p`` = number of inputs + 1) or a positive number in
            response units.
        noncrossing: enforce ``q_1 <= ... <= q_K`` by ReLU increments (see module doc).
        epochs, batch_size, learning_rate, weight_decay: minibatch Adam settings.
        tol, n_iter_no_change: stop when the epoch loss has not improved by ``tol`` for
            ``n_iter_no_change`` epochs (``tol=0`` trains all epochs).
        random_state: seed for initial weights and minibatch order.
        time_limit: seconds of training at most (``None``: no limit); a fit stopped by it
            keeps the weights reached and says so in ``stopped_``.

    Attributes:
        quantiles_, bandwidth_ (response units, one per level; 0 for pinball),
        network_ (a relulab :class:`~relulab.Network`; ``predict`` evaluates it),
        loss_curve_, n_iter_ (epochs run), converged_ (stopped by the ``tol`` rule),
        stopped_ (``"converged"``, ``"epochs"`` or ``"time_limit"``), n_features_in_.

    ``score`` is the *negative* mean check loss (greater is better, as scikit-learn's
    model selection expects).

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> X = rng.uniform(-1, 1, size=(200, 1)); y = X[:, 0] + 0.1 * rng.normal(size=200)
        >>> m = QuantileNetRegressor(quantiles=(0.1, 0.9), hidden=(8,), epochs=5,
        ...                          random_state=0).fit(X, y)
        >>> q = m.predict(X); q.shape, bool(np.all(q[:, 0] <= q[:, 1]))
        ((200, 2), True)
        >>> bool(np.array_equal(m.network_(X), q))
        True
    """

    def __init__(
        self,
        quantiles: Any = (0.1, 0.5, 0.9),
        hidden: Any = (64, 64),
        loss: str = "conquer",
        kernel: str = "gaussian",
        bandwidth: Any = "auto",
        noncrossing: bool = True,
        epochs: int = 200,
        batch_size: int = 256,
        learning_rate: float = 1e-3,
        weight_decay: float = 0.0,
        tol: float = 0.0,
        n_iter_no_change: int = 10,
        random_state: Any = None,
        time_limit: float | None = None,
    ) -> None:
        self.quantiles = quantiles
        self.hidden = hidden
        self.loss = loss
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.noncrossing = noncrossing
        self.epochs = epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.random_state = random_state
        self.time_limit = time_limit

    # ------------------------------------------------------------------ fit
    def _bandwidths(self, taus: np.ndarray, n: int, d: int, y_scale: float) -> np.ndarray:
        """Bandwidths on the standardised response scale, one per level."""
        if self.loss == "pinball":
            if not (isinstance(self.bandwidth, str) and self.bandwidth == "auto"):
                raise EstimatorInputError(
                    f"QuantileNetRegressor.fit: bandwidth={self.bandwidth!r} applies to loss='conquer' only; "
                    "the pinball loss is not smoothed (leave bandwidth='auto')")
            return np.zeros_like(taus)
        if isinstance(self.bandwidth, str) and self.bandwidth == "auto":
            return np.array([conquer_bandwidth(t, n, d + 1) for t in taus])
        b = self.bandwidth
        if not (finite_number(b) and b > 0):
            raise EstimatorInputError(
                f"QuantileNetRegressor.fit: bandwidth must be 'auto' or a positive finite number, got {b!r}"
            )
        h = float(b) / y_scale
        if not 0 < np.float32(h) < np.inf:
            raise BandwidthError(
                f"QuantileNetRegressor.fit: bandwidth={b!r} is {h:.3g} standardised response units, which "
                "rounds to 0 or overflows in float32 (the training precision)")
        return np.full_like(taus, h)

    @keeps_state_on_failure
    def fit(self, X: Any, y: Any) -> QuantileNetRegressor:
        """Fit the quantile network on ``X`` (n, d) and ``y`` (n,)."""
        taus, self._scalar = check_quantiles(self.quantiles, "QuantileNetRegressor.fit")
        check_choice(self, "loss", self.loss, ("conquer", "pinball"))
        check_choice(self, "kernel", self.kernel, KERNELS)
        self.hidden_ = check_hidden(self, self.hidden)
        self._check_training_params()
        X, y = check_Xy(self, X, y)
        n, d = X.shape
        self.x_mean_, self.x_scale_ = standardiser(X)
        # robust: one outlier must not set the bandwidth and Adam's step in response units
        self.y_mean_, self.y_scale_ = robust_response_scale(y)
        Xs = standardise(self, "X", X, self.x_mean_, self.x_scale_, folded=True)
        Ys = standardise(self, "y", y, self.y_mean_, self.y_scale_)
        h = self._bandwidths(taus, n, d, self.y_scale_)
        self.quantiles_ = taus
        self.bandwidth_ = h * self.y_scale_
        K = taus.size
        if not isinstance(self.noncrossing, (bool, np.bool_)):
            raise EstimatorInputError(
                f"QuantileNetRegressor.fit: noncrossing must be True or False, got {self.noncrossing!r}")
        head = bool(self.noncrossing) and K > 1
        if head:   # before training: the exported head must fit
            _check_head_bytes(K)
        start = np.quantile(Ys, taus)
        if head:
            start = np.concatenate([start[:1], np.maximum(np.diff(start), _MIN_INIT_GAP)])

        torch = _torch.torch_module()
        tau_t = torch.tensor(taus, dtype=_torch.TRAIN_DTYPE(torch))[None, :]
        h_t = torch.tensor(np.where(h > 0, h, 1.0), dtype=_torch.TRAIN_DTYPE(torch))[None, :]
        smooth, kernel = self.loss == "conquer", self.kernel

        def objective(out: Any, yb: Any, idx: Any) -> Any:
            q = self._head_torch(torch, out) if head else out
            u = yb[:, None] - q
            if smooth:
                per = _losses.smoothed_check_loss(torch, u, tau_t, h_t, kernel)
            else:
                per = _losses.check_loss(torch, u, tau_t)
            return per.mean(dim=1)

        seed = seed_of(self, self.random_state)
        # zero increment rows: each increment starts at its gap (> 0) at every input
        zero_rows = range(1, K) if head else None
        with _torch.one_thread(torch):
            self._model, log = self._train(torch, Xs, Ys, objective, K, "relu", seed, out_bias=start,
                                           zero_rows=zero_rows, loss_bytes_per_row=LOSS_BYTES_PER_LEVEL * K)
        self._head = head
        self._record(log)
        self.network_ = self._export()
        return self

    @staticmethod
    def _head_torch(torch: Any, z: Any) -> Any:
        return torch.cumsum(torch.cat([z[:, :1], torch.relu(z[:, 1:])], dim=1), dim=1)

    def _export(self) -> Network:
        K = self.quantiles_.size
        layers = _torch.linear_layers(self._model)
        head = None
        if self._head:
            # the dense K x (K + 1) partial sums are the network's last layer (K = 4,000:
            # 128 MB); A, one +-1 per row, stays sparse (a dense A @ W and an eye(K) output
            # map made the export O(K^3): 4.2 s)
            _check_head_bytes(K)
            A = sp.csr_matrix(([1.0, -1.0, *np.ones(K - 1)], ([0, 1, *range(2, K + 1)], [0, 0, *range(1, K)])),
                              shape=(K + 1, K))
            C = np.zeros((K, K + 1))
            C[:, 0], C[:, 1] = 1.0, -1.0
            C[:, 2:] = np.tril(np.ones((K, K - 1)), -1)
            head = (A, np.zeros(K + 1), C)
        out_map = (self.y_scale_, np.full(K, self.y_mean_))
        return _torch.export_network(layers, self.x_mean_, self.x_scale_, out_map, head)

    # -------------------------------------------------------------- predict
    def predict(self, X: Any) -> np.ndarray:
        """Predicted quantiles: ``(n,)`` for a single level, else ``(n, K)``.

        Computed by ``network_`` (the same float64 arithmetic, so the two are identical).
        """
        X = check_X(self, X)
        q = forward_in_blocks(self.network_, X, "QuantileNetRegressor.predict")
        return q[:, 0] if self._scalar else q

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Negative mean check loss over rows and levels (greater is better)."""
        check_X(self, X, "score")   # an error names score, not predict
        q = self.predict(X)          # as given: a dataframe keeps its column names
        check_scored_y(self, y, q.shape[0], sample_weight)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=np.float64).reshape(-1)
        q = q.reshape(q.shape[0], -1)
        losses = np.column_stack([check_loss(y - q[:, k], t) for k, t in enumerate(self.quantiles_)])
        return -float(np.average(losses.mean(axis=1), weights=sample_weight))

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        # score is a negative check loss, not R^2: the "score > 0.5" check does not apply
        tags.regressor_tags.poor_score = True
        return tags


def _check_head_bytes(K: int) -> None:
    """The exported non-crossing head (dense ``K x (K + 1)`` partial sums and its copies)
    against the memory budget."""
    check_bytes(3 * 8.0 * K * (K + 1), f"QuantileNetRegressor: the non-crossing head of {K} levels")
