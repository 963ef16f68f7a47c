"""What every estimator shares: input checks, standardisation, seeding, the training call.

scikit-learn is imported when an estimator class is first touched (``relulab.estimators``
loads this module lazily), torch only inside ``fit``.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from ..errors import RelulabError
from ..tolerance import power_of_two_exponent
from . import _torch


class EstimatorInputError(RelulabError):
    """Bad input to an estimator (a ``ValueError``, as scikit-learn expects)."""


def _where(est: Any, method: str) -> str:
    return f"{type(est).__name__}.{method}"


def _without_array_dump(msg: str) -> str:
    r"""scikit-learn's message on one line, without the data it appends ("Complex data not
    supported" printed the whole array).

    Example:
        >>> _without_array_dump("Expected 2D array, got 1D array instead:\narray=[1. 2.].\nReshape your data.")
        'Expected 2D array, got 1D array instead: Reshape your data.'
    """
    keep = [ln.strip() for ln in msg.splitlines() if ln.strip() and not ln.lstrip().startswith(("[", "array="))]
    return " ".join(keep)


def check_Xy(est: Any, X: Any, y: Any, method: str = "fit") -> tuple[np.ndarray, np.ndarray]:
    """Validate a training set (finite, numeric, 2-D ``X``, 1-D ``y``) and set n_features_in_."""
    if y is not None and np.asarray(y).dtype.kind in "USV":
        raise EstimatorInputError(f"{_where(est, method)}: y must be numeric, got an array of dtype {np.asarray(y).dtype}")
    try:
        X, y = validate_data(est, X, y, dtype=np.float64, y_numeric=True, ensure_min_samples=2)
        y = np.asarray(y, dtype=np.float64)
    except ValueError as e:   # a TypeError (e.g. dicts in X) passes: scikit-learn's checks expect it
        raise EstimatorInputError(f"{_where(est, method)}: {_without_array_dump(str(e))}") from None
    except OverflowError:     # a Python integer beyond float64 (10**400)
        raise EstimatorInputError(f"{_where(est, method)}: X and y must be within float64's range "
                                  f"(|value| <= {np.finfo(np.float64).max:.3g})") from None
    if not np.all(np.isfinite(y)):
        # an object y holding None becomes NaN only after scikit-learn's finiteness check
        raise EstimatorInputError(f"{_where(est, method)}: y contains NaN, infinite or missing (None) values")
    return X, y


def check_scored_y(est: Any, y: Any, n: int, sample_weight: Any = None) -> None:
    """Refuse a ``score`` target that is not finite, numeric, one value per row of ``X``;
    the same for ``sample_weight`` (also >= 0, not all zero)."""
    where = _where(est, "score")
    try:
        y = np.asarray(y, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError, OverflowError):
        raise EstimatorInputError(f"{where}: y must be numeric and within float64's range") from None
    if y.shape[0] != n:
        raise EstimatorInputError(f"{where}: y needs one value per row of X ({n}), got {y.shape[0]}")
    if not np.all(np.isfinite(y)):
        raise EstimatorInputError(f"{where}: y contains NaN or infinite values")
    if sample_weight is not None:
        try:
            w = np.asarray(sample_weight, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError, OverflowError):
            raise EstimatorInputError(f"{where}: sample_weight must be numeric") from None
        if w.shape[0] != n or not np.all(np.isfinite(w)) or np.any(w < 0) or not w.sum() > 0:
            raise EstimatorInputError(
                f"{where}: sample_weight must be finite and >= 0, not all zero, with one value per row of X ({n})")


def check_X(est: Any, X: Any, method: str = "predict") -> np.ndarray:
    """Validate prediction inputs against the fitted feature count."""
    check_is_fitted(est)
    try:
        return validate_data(est, X, dtype=np.float64, reset=False)
    except ValueError as e:
        raise EstimatorInputError(f"{_where(est, method)}: {_without_array_dump(str(e))}") from None
    except OverflowError:     # a Python integer beyond float64 (10**400)
        raise EstimatorInputError(f"{_where(est, method)}: X must be within float64's range "
                                  f"(|value| <= {np.finfo(np.float64).max:.3g})") from None


def power_of_two_scale(values: np.ndarray) -> float:
    """A power of two at most the largest finite ``|value|`` and above half of it (1 when
    there is none): dividing by it is exact, and leaves values of size about 1.

    Example:
        >>> power_of_two_scale(np.array([3e160, -1.0])) == 2.0 ** 533, power_of_two_scale(np.zeros(2))
        (True, 1.0)
    """
    return math.ldexp(1.0, power_of_two_exponent(values))   # <= the largest: no overflow


def forward_in_blocks(net: Any, X: np.ndarray, what: str) -> np.ndarray:
    """``net(X)`` in blocks of rows whose hidden layers fit the memory budget (a 5000-wide
    network on 20,000 points took 1.5 GB past a 0.2 GB budget, and more points a raw
    MemoryError); the same float64 arithmetic row by row, so the same outputs.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> forward_in_blocks(net, np.array([[-2.0], [3.0]]), "predict").ravel().tolist()
        [2.0, 3.0]
    """
    # a layer's pre-activations, its ReLU and the next product: 3 arrays of the widest layer
    per_row = 3 * 8.0 * max([net.input_dim, *net.widths, net.output_dim])
    with np.errstate(over="ignore", invalid="ignore"):
        Y = in_row_blocks(net, X, per_row, f"{what}: the network on a block of points")
    return finite_outputs(Y, X, what)


def finite_outputs(Y: np.ndarray, X: np.ndarray, what: str) -> np.ndarray:
    """``Y``, or one clear error naming the first row of ``X`` (finite inputs) whose
    outputs overflow float64 (inputs near 1.7e308 gave NaN predictions with only numpy's
    overflow warnings).

    Example:
        >>> finite_outputs(np.array([[1.0]]), np.array([[2.0]]), "predict").tolist()
        [[1.0]]
    """
    bad = ~np.all(np.isfinite(np.asarray(Y, dtype=np.float64).reshape(len(X), -1)), axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise EstimatorInputError(
            f"{what}: the fitted model's output overflows float64 at row {i} (inputs up to "
            f"{float(np.max(np.abs(X[i]))):.3g}): beyond the range it can be evaluated in")
    return Y


def in_row_blocks(fn: Callable[[np.ndarray], np.ndarray], X: np.ndarray, per_row: float, what: str,
                  axis: int = 0) -> np.ndarray:
    """``fn`` on blocks of rows of ``X`` that fit the memory budget at ``per_row`` bytes a
    row, joined along ``axis`` (``fn``'s answers are per row); one block when all fit.

    Example:
        >>> in_row_blocks(lambda A: 2 * A, np.arange(3.0)[:, None], 8.0, "double").ravel().tolist()
        [0.0, 2.0, 4.0]
    """
    from ..limits import check_bytes, memory_budget

    rows = max(1, int(memory_budget() // per_row))
    check_bytes(per_row * min(rows, len(X)), what)
    if len(X) <= rows:
        return fn(X)
    return np.concatenate([fn(X[i:i + rows]) for i in range(0, len(X), rows)], axis=axis)


def check_hidden(est: Any, hidden: Any) -> tuple[int, ...]:
    """The hidden widths as a tuple of positive integers (an integer is one layer; a bool,
    which Python counts as an integer, is refused: ``hidden=True`` read as width 1)."""
    if isinstance(hidden, (bool, np.bool_)) or (
            isinstance(hidden, (tuple, list)) and any(isinstance(h, (bool, np.bool_)) for h in hidden)):
        raise EstimatorInputError(f"{_where(est, 'fit')}: hidden must be a tuple of layer widths, got {hidden!r}")
    if isinstance(hidden, numbers.Integral):
        hidden = (int(hidden),)
    if isinstance(hidden, (str, bytes)):
        raise EstimatorInputError(f"{_where(est, 'fit')}: hidden must be a tuple of layer widths, got {hidden!r}")
    try:
        widths = tuple(int(h) for h in hidden)
    except (TypeError, ValueError):
        raise EstimatorInputError(f"{_where(est, 'fit')}: hidden must be a tuple of layer widths, got {hidden!r}") from None
    if any(h < 1 for h in widths) or any(int(h) != h for h in hidden):
        raise EstimatorInputError(f"{_where(est, 'fit')}: hidden widths must be positive integers, got {hidden!r}")
    return widths


def _is_number(value: Any) -> bool:
    """A real number that is not a bool (``weight_decay=True`` was read as 1)."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def finite_number(value: Any) -> bool:
    """A real number (not a bool) whose float64 value is finite.  Fractions and Python
    integers are numbers too: ``np.isfinite(Fraction(1, 10))`` raised a raw TypeError,
    and an integer beyond float64 (10**400) is not finite here.

    Example:
        >>> from fractions import Fraction
        >>> finite_number(Fraction(1, 10)), finite_number(10**400), finite_number(True)
        (True, False, False)
    """
    if not _is_number(value):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def check_choice(est: Any, name: str, value: Any, choices: Sequence[str]) -> str:
    if value not in choices:
        raise EstimatorInputError(
            f"{_where(est, 'fit')}: {name}={value!r} is not one of {', '.join(map(repr, choices))}"
        )
    return value


def check_positive(est: Any, name: str, value: Any, integer: bool = False) -> Any:
    """``value`` itself if it is a positive finite number (an integer if asked; never a bool)."""
    ok = finite_number(value) and value > 0
    if integer:
        ok = ok and isinstance(value, numbers.Integral)
    if not ok:
        kind = "a positive integer" if integer else "a positive finite number"
        raise EstimatorInputError(f"{_where(est, 'fit')}: {name} must be {kind}, got {value!r}")
    return value


def seed_of(est: Any, random_state: Any) -> int:
    """An integer seed for torch and numpy drawn from a scikit-learn ``random_state``."""
    if isinstance(random_state, (bool, np.bool_)):
        raise EstimatorInputError(f"{_where(est, 'fit')}: random_state must be None, an integer in [0, 2**32) "
                                  f"or a numpy RandomState, got {random_state!r}")
    try:
        return int(check_random_state(random_state).randint(0, 2**31 - 1))
    except (TypeError, ValueError):
        raise EstimatorInputError(f"{_where(est, 'fit')}: random_state must be None, an integer in [0, 2**32) "
                                  f"or a numpy RandomState, got {random_state!r}") from None


# relative spread at or below which a column is constant up to rounding: 64 ulps of its size
CONSTANT_SPREAD = 64 * float(np.finfo(np.float64).eps)


def standardiser(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column means and scales; a column constant up to rounding gets its own magnitude
    as scale (so nothing divides by 0, and its rounding noise standardises to about 0).

    Example:
        >>> m, s = standardiser(np.array([[1e-13, 5.0], [3e-13, 5.0]]))
        >>> (s / [1e-13, 1.0]).round(6).tolist(), m[1]
        ([1.0, 5.0], np.float64(5.0))
        >>> t = 1.7e18 + np.array([0.0, 2.0**20])   # nanosecond times spanning 1 ms: a real spread
        >>> float(standardiser(t[:, None])[1][0])
        524288.0

    Each column is divided by its largest absolute value first, so the sum of squares
    cannot overflow for any finite column (``A.std()`` overflows above about 1e154).
    """
    top = _magnitude(A)
    mean = (A / top).mean(axis=0) * top
    with np.errstate(over="ignore", invalid="ignore"):
        D = A - mean  # exact for values near the mean: their spread keeps its digits
    if np.all(np.isfinite(D)):
        dtop = _magnitude(D)
        spread = (D / dtop).std(axis=0) * dtop
    else:  # a column spanning beyond float64 (-1e308 .. 1e308): relative values throughout
        B = A / top
        spread = (B - B.mean(axis=0)).std(axis=0) * top
    # "constant" only below the rounding of the values and of their mean (a few ulps of
    # the column's size): a threshold of 1e-12 took nanosecond timestamps spanning 1 ms
    # (relative spread 6e-13) for a constant and fed them to the network at +-5e5; and a
    # constant column's scale is its size, not 1 (a column of 1e20 with one-ulp noise
    # standardised to +-1.6e4 and ruined the fit)
    scale = np.where(spread <= CONSTANT_SPREAD * top, top, spread)
    return mean, scale


# IQR / this is the standard deviation of a normal sample
IQR_PER_SD = 1.3489795003921634
# values within this share of max|y| of the median count as one atom there (zero-inflated
# responses): when they fill the middle half, the scale is the IQR of the other values
ATOM_REL = 1e-10  # tol: an atom's jitter, relative to the response's size


def _iqr_scale(v: np.ndarray, top: float) -> float:
    with np.errstate(over="ignore", invalid="ignore"):
        q25, q75 = np.quantile(v / top, [0.25, 0.75])
    return float(q75 - q25) * top / IQR_PER_SD


def robust_response_scale(y: np.ndarray) -> tuple[float, float]:
    """Centre and scale of a response for the robust losses (check, conquer, Huber): the
    median and the interquartile range / 1.349 (the standard deviation for normal data),
    so that outliers (up to a quarter of ``y``) do not set the bandwidth, Huber's threshold
    and Adam's step in response units (a single y of 1000 among 2000 values near 0 moved
    the 0.1 and 0.9 quantiles beyond every other point).

    When an atom fills the middle half (values within ``ATOM_REL`` of ``max|y|`` of the
    median: zero-inflated data) the IQR is the atom's jitter, and the scale is the IQR of
    the other values instead: with 60% zeros the standard deviation was used, and one
    outlier of 1e6 moved the 0.1 and 0.9 quantiles by 1,000; a jitter of 1e-12 gave a
    scale of 2e-12 and a flat 0.9 quantile where the true slope was 2.  (A wider range,
    q99 - q01, was tried for this: 1% of outliers then set the scale.)  An atom jittered
    by more than ``ATOM_REL`` still reads as the data's spread.  Failing both, it falls
    back to :func:`standardiser`; a response constant up to rounding gets a scale of its
    rounding (64 ulps of its size), so the fitted quantiles are that constant.

    Example:
        >>> y = np.r_[np.linspace(-1.0, 1.0, 999), 1e6]
        >>> c, s = robust_response_scale(y)
        >>> round(s, 3), float(standardiser(y[:, None])[1][0]) > 3e4
        (0.742, True)
        >>> z = np.r_[np.zeros(60), np.linspace(-4.0, -2.0, 20), np.linspace(2.0, 4.0, 20)]
        >>> round(robust_response_scale(z)[1], 3)                   # the IQR of the non-zeros
        4.409
        >>> robust_response_scale(np.full(5, 1000.0))
        (1000.0, 1.4210854715202004e-11)
    """
    top = float(_magnitude(y[:, None])[0])
    centre = float(np.median(y / top)) * top   # (the median of y near 1.2e308 overflowed)
    scale = _iqr_scale(y, top)
    if not (np.isfinite(scale) and scale > max(CONSTANT_SPREAD, ATOM_REL) * top):
        rest = y[np.abs(y - centre) > ATOM_REL * top]
        if rest.size >= 4:
            wide = _iqr_scale(rest, top)
            if np.isfinite(wide) and wide > CONSTANT_SPREAD * top:
                return centre, max(wide, scale if np.isfinite(scale) else 0.0)
    if np.isfinite(scale) and scale > CONSTANT_SPREAD * top:
        return centre, scale
    return response_scale(y)


def response_scale(y: np.ndarray) -> tuple[float, float]:
    """Mean and scale of a response for the squared and Gaussian losses: the standard
    deviation (:func:`standardiser`), except that a response constant up to rounding gets
    a scale of its rounding (64 ulps of its size), so the fit is that constant (with its
    size as the scale, the network's random start was multiplied by 1000 for y == 1000,
    and predictions were off by 5 after 200 epochs).

    Example:
        >>> response_scale(np.array([1.0, 3.0]))
        (2.0, 1.0)
        >>> response_scale(np.full(5, 1000.0))
        (1000.0, 1.4210854715202004e-11)
    """
    top = float(_magnitude(y[:, None])[0])
    mean, sd = standardiser(y[:, None])
    if float(sd[0]) == top and float(np.max(np.abs(y - mean[0]))) <= CONSTANT_SPREAD * top:
        # (never below float64's smallest normal number, nor above the size itself: the
        # rounding's scale of a constant below 1.6e-294 underflowed to 0, and the fit was
        # refused; subnormal constants are scaled by their size)
        tiny = float(np.finfo(np.float64).tiny)
        return float(mean[0]), min(top, max(CONSTANT_SPREAD * top, tiny))
    return float(mean[0]), float(sd[0])


def _magnitude(A: np.ndarray) -> np.ndarray:
    """Each column's largest absolute value (1 for a zero column)."""
    top = np.max(np.abs(A), axis=0)
    return np.where(top > 0, top, 1.0)


def standardise(est: Any, name: str, A: np.ndarray, mean: np.ndarray, scale: np.ndarray,
                folded: bool = False) -> np.ndarray:
    """``(A - mean) / scale``, refused with an error naming ``name`` if it does not fit in
    float32 (the training precision), or (``folded``: the scale will be folded into an
    exported network's first layer) if ``1 / scale`` overflows."""
    with np.errstate(over="ignore", divide="ignore"):
        inverse = 1.0 / np.asarray(scale, dtype=np.float64)
    if folded and not np.all(np.isfinite(inverse)):
        j = int(np.flatnonzero(~np.isfinite(inverse))[0])
        raise EstimatorInputError(
            f"{_where(est, 'fit')}: {name} column {j}'s spread {float(np.ravel(scale)[j]):.3g} is too small to fold "
            "into the network's first layer (1 / spread overflows float64); rescale that column")
    S = (A - mean) / scale
    if not np.all(np.abs(S) <= np.finfo(np.float32).max):
        raise EstimatorInputError(
            f"{_where(est, 'fit')}: {name} is out of range for float32 training: after standardisation "
            f"(none for a binomial or poisson response) |{name}| must be <= {float(np.finfo(np.float32).max):.3g}")
    return S


def check_trained(est: Any, log: _torch.TrainLog) -> None:
    """Refuse a training run whose loss or weights stopped being finite."""
    if log.diverged_at is not None:
        raise EstimatorInputError(
            f"{_where(est, 'fit')}: training diverged at epoch {log.diverged_at} (the loss or the weights "
            "stopped being finite); lower learning_rate" + (" or weight_decay" if getattr(est, "weight_decay", 0) else ""))


def keeps_state_on_failure(fit: Callable) -> Callable:
    """Make ``fit`` all or nothing: when it raises, the estimator's attributes are put back
    as they were.  ``fit`` sets fitted attributes as it goes (scalers, then the model):
    a refit that failed part-way paired the old model with the new scalers (predictions
    changed, once to 1e299), and a failed first fit looked fitted to scikit-learn (an
    ``AttributeError`` instead of ``NotFittedError``).

    Example:
        >>> class Est:
        ...     @keeps_state_on_failure
        ...     def fit(self, ok):
        ...         self.scale_ = 2.0
        ...         if not ok:
        ...             raise ValueError("bad data")
        ...         return self
        >>> e = Est()
        >>> try:
        ...     e.fit(False)
        ... except ValueError:
        ...     pass
        >>> hasattr(e, "scale_")
        False
    """
    @functools.wraps(fit)
    def all_or_nothing(self: Any, *args: Any, **kwargs: Any) -> Any:
        before = dict(self.__dict__)  # fit replaces attributes, never mutates the old ones
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise
    return all_or_nothing


class NetEstimatorBase(RegressorMixin, BaseEstimator):
    """Training settings shared by the network estimators (not used directly)."""

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """R^2 of ``predict(X)`` against ``y`` (scikit-learn's default), after checking ``y``."""
        n = check_X(self, X, "score").shape[0]   # (an error names score, not predict)
        check_scored_y(self, y, n, sample_weight)
        # predict gets X as given: the checked array has lost a dataframe's column names,
        # and every score warned "X does not have valid feature names"
        from sklearn.metrics import r2_score

        yt = np.asarray(y, dtype=np.float64)
        yp = np.asarray(self.predict(X), dtype=np.float64)
        # R^2 does not depend on the units: both scaled by one power of two, exactly
        # (scikit-learn squares raw residuals, and outputs of 1e160 gave NaN)
        s = power_of_two_scale(np.concatenate([yt.ravel(), yp.ravel()]))
        return float(r2_score(yt / s, yp / s, sample_weight=sample_weight))

    def _check_training_params(self) -> None:
        check_positive(self, "epochs", self.epochs, integer=True)
        check_positive(self, "batch_size", self.batch_size, integer=True)
        check_positive(self, "learning_rate", self.learning_rate)
        check_positive(self, "n_iter_no_change", self.n_iter_no_change, integer=True)
        f32 = np.finfo(np.float32)
        # training is in float32: a rate below its normal range rounds to 0 (1e-60 returned
        # the untrained network), and values beyond its range overflow
        if not f32.tiny <= self.learning_rate <= f32.max:
            raise EstimatorInputError(
                f"{_where(self, 'fit')}: learning_rate must lie in [{float(f32.tiny):.3g}, {float(f32.max):.3g}] "
                f"(float32 training), got {self.learning_rate!r}")
        if not (finite_number(self.weight_decay)
                and 0 <= self.weight_decay <= f32.max):
            raise EstimatorInputError(
                f"{_where(self, 'fit')}: weight_decay must be a number in [0, {float(f32.max):.3g}] "
                f"(float32 training), got {self.weight_decay!r}")
        if not finite_number(self.tol):
            raise EstimatorInputError(f"{_where(self, 'fit')}: tol must be a finite number, got {self.tol!r}")
        if self.time_limit is not None:
            check_positive(self, "time_limit", self.time_limit)

    def _record(self, log: _torch.TrainLog) -> None:
        """Keep how training went: ``loss_curve_``, ``n_iter_`` (epochs run, the last one
        perhaps cut short by the time limit), ``converged_`` (stopped by the ``tol`` rule)
        and ``stopped_`` (``"converged"``, ``"epochs"`` or ``"time_limit"``)."""
        self.loss_curve_ = log.loss_curve
        self.n_iter_ = log.n_epochs
        self.converged_ = log.converged
        self.stopped_ = log.stopped

    def _train(
        self,
        torch: Any,
        Xs: np.ndarray,
        Ys: np.ndarray,
        objective: Any,
        d_out: int,
        activation: str,
        seed: int,
        weights: np.ndarray | None = None,
        out_bias: np.ndarray | None = None,
        zero_rows: Sequence[int] | None = None,
        loss_bytes_per_row: float = 0.0,
    ) -> tuple[Any, _torch.TrainLog]:
        """Build the MLP (output bias ``out_bias``, last-layer rows ``zero_rows`` set to 0),
        train it, refuse a diverged run, and return the model in float64 with its log.
        ``loss_bytes_per_row``: what the objective's own temporaries take per minibatch row."""
        n = Xs.shape[0]
        # the data in float32 for torch (X, Y, weights), beside the float64 arrays here,
        # and the loss's temporaries on a minibatch
        data = 4.0 * n * (Xs.shape[1] + (Ys.size // max(n, 1)) + (0 if weights is None else 3))
        data += float(loss_bytes_per_row) * min(int(self.batch_size), n)
        model = _torch.build_mlp(torch, Xs.shape[1], self.hidden_, d_out, activation, seed,
                                 batch_rows=min(int(self.batch_size), n), extra=data)
        with torch.no_grad():
            if out_bias is not None:
                model[-1].bias.copy_(torch.as_tensor(np.asarray(out_bias), dtype=model[-1].bias.dtype))
            if zero_rows is not None:
                model[-1].weight[list(zero_rows)] = 0.0
        log = _torch.train(
            torch, model.parameters(), model, objective, Xs, Ys, weights,
            epochs=self.epochs, batch_size=self.batch_size, lr=float(self.learning_rate),
            weight_decay=float(self.weight_decay), tol=float(self.tol), n_iter_no_change=self.n_iter_no_change,
            seed=seed + 1, time_limit=self.time_limit,
        )
        check_trained(self, log)
        # predict and network_ both compute in float64 with the trained (float32) numbers
        model.double().eval()
        return model, log
