"""The black box: a query-counting wrapper around whatever computes the outputs.

:class:`QueryOracle` accepts a relulab :class:`~relulab.Network`, a torch module, an
onnxruntime ``InferenceSession`` or any batched callable ``X -> Y`` and counts every row
it is asked about.  With a ``budget`` a batch that would go past it is refused with
:class:`BudgetExhausted` (nothing of it is evaluated or counted), so an attack can stop
and return what it has.

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> net = Network([[[1.0, -1.0]], [[2.0]]], [[0.0], [1.0]])
    >>> o = QueryOracle(net, budget=5)
    >>> o(np.zeros((3, 2))).shape, o.queries
    ((3, 1), 3)
    >>> try:
    ...     o(np.zeros((3, 2)))
    ... except BudgetExhausted:
    ...     print("refused", o.queries)
    refused 3
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import RelulabError, is_int_at_least
from ..limits import Deadline
from ..network import Network

__all__ = ["QueryOracle", "BudgetExhausted", "ExtractError"]


class ExtractError(RelulabError):
    """Bad input to an extraction (oracle, dimensions, options)."""


class BudgetExhausted(RelulabError):
    """The query budget would be exceeded by the next batch."""


def _torch_fn(module: Any) -> Callable[[np.ndarray], np.ndarray]:
    """The module as a function, evaluated in float64: a float32 module's own rounding
    (1e-7 of its outputs) looks like kinks on every line to the attack's 1e-9 test, and
    one never finished; its float32 weights are exact in float64, so the copy computes
    the same function, to float64 precision."""
    import copy

    import torch

    params = list(module.parameters())
    dtype = params[0].dtype if params else torch.float64
    if params and dtype in (torch.float32, torch.float16, torch.bfloat16):
        module, dtype = copy.deepcopy(module).to(torch.float64), torch.float64

    def fn(X: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            y = module(torch.as_tensor(X, dtype=dtype))
        return y.detach().to(torch.float64).cpu().numpy()

    return fn


def _onnx_fn(sess: Any) -> Callable[[np.ndarray], np.ndarray]:
    inp = sess.get_inputs()[0]
    dtype = np.float64 if "double" in str(inp.type) else np.float32

    def fn(X: np.ndarray) -> np.ndarray:
        shape = list(inp.shape)
        Xc = X.astype(dtype)
        if len(shape) > 2:  # e.g. (n, 1, 1, d): the model flattens what we give it
            Xc = Xc.reshape([X.shape[0], *[s if isinstance(s, int) else 1 for s in shape[1:-1]], X.shape[1]])
        return np.asarray(sess.run(None, {inp.name: Xc})[0], dtype=np.float64)

    return fn


def _as_function(model: Any) -> tuple[Callable[[np.ndarray], np.ndarray], int | None]:
    if isinstance(model, Network):
        f = model.float()
        return f.forward, f.input_dim
    if hasattr(model, "get_inputs") and hasattr(model, "run"):
        shape = model.get_inputs()[0].shape
        last = shape[-1] if shape and isinstance(shape[-1], int) else None
        return _onnx_fn(model), last
    if hasattr(model, "parameters") and hasattr(model, "forward") and callable(model):
        # the input size of a Sequential's first layer when it is a Linear (a wrong d
        # otherwise ended in torch's "mat1 and mat2 shapes cannot be multiplied"); other
        # modules may register their layers in another order than they call them
        first = next(iter(model.children()), None) if type(model).__name__ == "Sequential" else None
        d = getattr(first, "in_features", None)
        return _torch_fn(model), d if isinstance(d, int) else None
    if callable(model):
        return model, None
    raise ExtractError(f"oracle: {type(model).__name__} is not callable (give a Network, a torch "
                       "module, an onnxruntime session or a function X -> Y)")


class QueryOracle:
    """Counts the rows queried from ``model`` (see the module docstring).

    Args:
        model: a Network, torch module, onnxruntime session, batched callable, or another
            QueryOracle (queries go through it, so its budget, deadline and count
            apply as well; this oracle's own count starts at 0).
        input_dim: the input size (taken from the model when it says).
        budget: the most rows that may be queried (None: unlimited).

        keep: keep a uniform random sample (reservoir) of at most this many answered
            rows ``(x, y)`` (0: none; memory ``keep x (d + m)`` floats); see :meth:`keep_rows`.

    Attributes:
        queries: rows answered so far; calls: batches answered.
        kept: the rows kept so far, ``(X, Y)`` (see :meth:`keep_rows`).

    Example:
        >>> import numpy as np
        >>> o = QueryOracle(lambda X: X.sum(axis=1, keepdims=True), input_dim=3, budget=10)
        >>> o(np.ones((4, 3))).ravel().tolist(), o.queries, o.calls
        ([3.0, 3.0, 3.0, 3.0], 4, 1)
    """

    def __init__(self, model: Any, input_dim: int | None = None, budget: int | None = None,
                 keep: int = 0) -> None:
        if isinstance(model, QueryOracle):
            # through the other oracle, so that its budget, time limit and count apply too
            self._fn, dim = model, model.input_dim
        else:
            self._fn, dim = _as_function(model)
        if input_dim is not None and dim is not None and int(input_dim) != dim:
            raise ExtractError(f"oracle: input_dim {input_dim} but the model takes {dim} inputs")
        self.input_dim = int(input_dim) if input_dim is not None else dim
        if budget is not None and not is_int_at_least(budget, 0):
            raise ExtractError(f"budget must be an integer >= 0, got {budget!r}")
        self.budget = None if budget is None else int(budget)
        self.queries = 0
        self.calls = 0
        #: once it has expired every batch is refused like one past the budget
        #: (:class:`BudgetExhausted`); None: no limit
        self.deadline: Deadline | None = None
        #: outputs are read as ``(y - out_offset) / out_scale`` (per output, or one number
        #: for all): extract_relu sets them for outputs far below 1 or far from 0 compared
        #: with how much they vary, so that its tolerances are relative to that variation
        #: (1 and 0 otherwise)
        self.out_scale: float | np.ndarray = 1.0
        self.out_offset: float | np.ndarray = 0.0
        self.output_dim: int | None = None
        self._keep = 0
        self._seen = 0  # rows offered to the reservoir (answered since keeping started)
        self._KX: np.ndarray | None = None
        self._KY: np.ndarray | None = None
        self._krng = np.random.default_rng(0)
        if keep:
            self.keep_rows(keep)

    def keep_rows(self, n: int, seed: int = 0) -> None:
        """From now on keep a uniform random sample of at most ``n`` of the answered rows
        (reservoir sampling: row ``t`` replaces a random slot with probability ``n / t``),
        so that later stages can reuse exact oracle values without new queries.  Rows
        answered before this call are not in it.  Calling it again with another ``n``
        starts over.

        Example:
            >>> import numpy as np
            >>> o = QueryOracle(lambda X: X[:, :1] * 2.0, input_dim=2)
            >>> o.keep_rows(3)
            >>> _ = o(np.arange(20.0).reshape(10, 2))
            >>> X, Y = o.kept
            >>> X.shape, bool(np.all(Y[:, 0] == 2 * X[:, 0])), o.queries
            ((3, 2), True, 10)
        """
        n = int(n)
        if n < 0:
            raise ExtractError(f"keep must be >= 0, got {n}")
        self._keep, self._seen = n, 0
        self._KX = self._KY = None
        self._krng = np.random.default_rng(seed)

    @property
    def keeping(self) -> int:
        """The reservoir size (0: no rows are kept)."""
        return self._keep

    @property
    def kept(self) -> tuple[np.ndarray, np.ndarray]:
        """The kept rows ``(X, Y)`` (copies; empty arrays when nothing is kept)."""
        if self._KX is None or self._KY is None:
            return np.zeros((0, self.input_dim or 0)), np.zeros((0, self.output_dim or 0))
        k = min(self._seen, self._keep)
        return self._KX[:k].copy(), self._normalised(self._KY[:k])

    def _reservoir(self, X: np.ndarray, Y: np.ndarray) -> None:
        n = self._keep
        if self._KX is None or self._KY is None:
            self._KX = np.empty((n, X.shape[1]))
            self._KY = np.empty((n, Y.shape[1]))
        t = self._seen + np.arange(X.shape[0])  # 0-based index of each row in the stream
        fill = t < n
        self._KX[t[fill]] = X[fill]
        self._KY[t[fill]] = Y[fill]
        rest = np.nonzero(~fill)[0]
        if rest.size:
            slot = self._krng.integers(0, t[rest] + 1)  # uniform in [0, t]
            take = slot < n
            self._KX[slot[take]] = X[rest[take]]
            self._KY[slot[take]] = Y[rest[take]]
        self._seen += X.shape[0]

    @property
    def remaining(self) -> int | None:
        return None if self.budget is None else self.budget - self.queries

    def __call__(self, X: Any) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X[None, :]
        if X.ndim != 2 or (self.input_dim is not None and X.shape[1] != self.input_dim):
            raise ExtractError(f"oracle: queries of shape {X.shape}, expected (n, {self.input_dim})")
        if not np.all(np.isfinite(X)):
            raise ExtractError("oracle: a query contains NaN or infinite entries")
        n = X.shape[0]
        if self.budget is not None and self.queries + n > self.budget:
            raise BudgetExhausted(f"query budget {self.budget} reached ({self.queries} used, {n} asked)")
        if self.deadline is not None and self.deadline.expired():
            raise BudgetExhausted(f"time limit reached ({self.queries} queries used)")
        raw = self._fn(X)   # the model's own errors reach the caller as they are
        if hasattr(raw, "detach") and hasattr(raw, "cpu"):
            raw = raw.detach().cpu().numpy()   # a torch tensor (one that requires grad too)
        if np.iscomplexobj(raw):
            raise ExtractError("oracle: the model's outputs are complex numbers; the attack needs real outputs")
        if isinstance(raw, np.ndarray) and raw.dtype == object and any(v is None for v in raw.reshape(-1)):
            raise ExtractError("oracle: the model's outputs contain None, not numbers")
        try:
            Y = np.asarray(raw, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise ExtractError(f"oracle: the model's outputs ({type(raw).__name__}) are not an array "
                               f"of numbers: {e}") from None
        if Y.ndim == 0 or Y.shape[0] != n or Y.size == 0:
            raise ExtractError(f"oracle: {n} queries gave outputs of shape {Y.shape}; "
                               f"expected one row per query")
        Y = Y.reshape(n, -1)
        if self.output_dim is not None and Y.shape[1] != self.output_dim:
            raise ExtractError(f"oracle: {Y.shape[1]} outputs per query, after {self.output_dim} before")
        if not np.all(np.isfinite(Y)):
            raise ExtractError("oracle: the model returned NaN or infinite outputs")
        self.queries += n
        self.calls += 1
        self.output_dim = Y.shape[1]
        if self._keep:
            self._reservoir(X, Y)   # as answered: kept rows are read in the current scale
        return self._normalised(Y)

    def _normalised(self, Y: np.ndarray) -> np.ndarray:
        """``Y`` in the units the attack reads (see ``out_scale``, ``out_offset``)."""
        if np.all(np.asarray(self.out_offset) == 0.0) and np.all(np.asarray(self.out_scale) == 1.0):
            return Y
        return (Y - self.out_offset) / self.out_scale
