"""Time and memory limits: how long a computation may run, and how much one
allocation or one computation may take.

A time limit of ``time_limit`` seconds becomes a :class:`Deadline` when the work
starts; every step then asks it how long it may still take.

relulab stops a computation that would exceed the budget with a
:class:`ResourceLimitError` (a :class:`~relulab.errors.RelulabError`, so the command line
prints one line and exits 1) instead of letting the operating system kill the process.
Long computations that can stop early (region enumeration) check the budget as they go
and return what they have, marked partial.

The memory budget is ``RELULAB_MEMORY_GB`` gigabytes when that variable is set, else half of
the memory available when relulab first asks (``MemAvailable`` on Linux; half of the
physical memory elsewhere).

Example:
    >>> check_bytes(1024, "a small array")      # fine: returns the number of bytes
    1024
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import time
from collections.abc import Iterator
from typing import Any

from .errors import RelulabError, is_positive_seconds

# check_seconds (the argument check of a time limit) is imported by name where needed
__all__ = ["Deadline", "ResourceLimitError", "memory_budget", "check_bytes", "available_memory", "memory_limit",
           "dense_flop_rate"]

_OVERRIDE: list[int] = []  # budgets set by memory_limit(), innermost last


class Deadline:
    """The moment ``time_limit`` seconds from now (``None``: no limit) run out, on the
    :func:`time.perf_counter` clock.

    :meth:`left` gives the seconds left (``None`` without a limit), never less than
    ``floor`` when one is given: a solver handed a zero or negative time limit would
    refuse it or stop at once, so callers that pass the rest on to a solver ask for a
    small positive floor.  :meth:`expired` says whether the moment has come (never
    without a limit; the floor plays no part).  ``at`` is the moment itself
    (``time.perf_counter()`` seconds, or ``None``), for code that compares it with the
    clock directly.

    Example:
        >>> d = Deadline(5.0)
        >>> 0 < d.left() <= 5.0, d.expired(), Deadline(None).left(), Deadline(None).expired()
        (True, False, None, False)
        >>> Deadline(0.0).expired(), Deadline(0.0, floor=1e-3).left(), Deadline(float("nan"), floor=1e-3).left()
        (True, 0.001, 0.001)
    """

    __slots__ = ("at", "floor")

    def __init__(self, time_limit: float | None, *, floor: float | None = None) -> None:
        self.at: float | None = None if time_limit is None else time.perf_counter() + time_limit
        self.floor = floor

    def left(self) -> float | None:
        """Seconds left (``None`` without a limit; at least ``floor`` when given)."""
        if self.at is None:
            return None
        left = self.at - time.perf_counter()
        if left != left:  # a NaN limit counts as spent, as in expired()
            left = 0.0
        return left if self.floor is None else max(left, self.floor)

    def expired(self) -> bool:
        """Whether the deadline has come (a NaN limit counts as spent)."""
        return self.at is not None and not time.perf_counter() < self.at


class ResourceLimitError(RelulabError):
    """A computation would exceed relulab's memory budget."""


def check_seconds(time_limit: object, where: str) -> float | None:
    """``time_limit`` as a positive number of seconds, or None: a zero, negative, NaN or
    non-numeric limit is one error naming ``where`` (it would stop the work at once and
    make its partial answer look like a result).

    Example:
        >>> check_seconds(2, "maximize"), check_seconds(None, "maximize")
        (2.0, None)
        >>> check_seconds(-1, "maximize")
        Traceback (most recent call last):
        relulab.errors.RelulabError: maximize: time_limit must be a positive number of seconds or None, got -1
    """
    if time_limit is None:
        return None
    if not is_positive_seconds(time_limit):
        raise RelulabError(f"{where}: time_limit must be a positive number of seconds or None, "
                           f"got {time_limit!r}")
    return float(time_limit)  # type: ignore[arg-type]


def available_memory() -> int:
    """Bytes of memory available now (Linux: MemAvailable; else the physical memory), and
    never more than the address space this process may still take (``ulimit -v``: under
    2.5 GB a count died on a raw MemoryError, the budget read from MemAvailable alone).

    Example:
        >>> available_memory() > 2**20
        True
    """
    avail = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    if avail is None:
        try:
            avail = int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        except (ValueError, OSError, AttributeError):
            avail = 8 * 2**30
    room = _address_space_left()
    return avail if room is None else max(min(avail, room), 0)


def _address_space_left() -> int | None:
    """Bytes of address space left under ``RLIMIT_AS`` (None: no limit, or unknown)."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY or soft <= 0:
            return None
        with open("/proc/self/statm") as fh:
            used = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        return int(soft) - used
    except (ImportError, OSError, ValueError, AttributeError):
        return None


def memory_budget() -> int:
    """The budget in bytes (inside :func:`memory_limit`: its budget; else
    ``RELULAB_MEMORY_GB``, else half the available memory).

    Example:
        >>> memory_budget() > 0
        True
    """
    if _OVERRIDE:
        return _OVERRIDE[-1]
    env = os.environ.get("RELULAB_MEMORY_GB")
    if env:
        try:
            gb = float(env)
        except ValueError:
            raise RelulabError(f"RELULAB_MEMORY_GB={env!r} is not a number") from None
        if not 0 < gb < math.inf or int(gb * 2**30) < 1:
            raise RelulabError(f"RELULAB_MEMORY_GB={env!r} must be a positive finite number of "
                               "gigabytes (at least one byte)")
        return int(gb * 2**30)
    # at least one byte: with nothing available (another process took it all) the budget
    # refuses every allocation, where 0 made memory_limit() raise in the verifier
    return max(available_memory() // 2, 1)


def check_bytes(n_bytes: float, what: str) -> int:
    """Raise :class:`ResourceLimitError` naming ``what`` if ``n_bytes`` exceeds the budget.

    Example:
        >>> check_bytes(10**18, "the dense form of layer 3")
        Traceback (most recent call last):
        ...
        relulab.limits.ResourceLimitError: the dense form of layer 3 needs 9.31e+08 GB; ...
    """
    budget = memory_budget()
    if n_bytes > budget:
        raise ResourceLimitError(
            f"{what} needs {n_bytes / 2**30:.3g} GB; the memory budget is {budget / 2**30:.3g} GB "
            "(set RELULAB_MEMORY_GB to change it)"
        )
    return int(n_bytes)


@contextlib.contextmanager
def memory_limit(n_bytes: int | None) -> Iterator[int]:
    """Within the block, :func:`memory_budget` (and so every :func:`check_bytes`) uses
    ``n_bytes`` (``None``: the default budget); yields the budget in force.

    Example:
        >>> with memory_limit(2048) as b:
        ...     b, memory_budget()
        (2048, 2048)
    """
    if n_bytes is not None and not 0 < n_bytes < math.inf:  # int() of inf or NaN raises
        raise RelulabError(f"memory budget must be a positive finite number of bytes, got {n_bytes}")
    b = memory_budget() if n_bytes is None else int(n_bytes)
    if b <= 0:
        raise RelulabError(f"memory budget must be positive, got {n_bytes}")
    _OVERRIDE.append(b)
    try:
        yield b
    finally:
        _OVERRIDE.pop()


@functools.lru_cache(maxsize=1)
def dense_flop_rate() -> float:
    """Floating-point operations per second of a dense float64 matrix product here (the
    best of three 384 x 384 products, about 0.1 GFLOP in all, measured once per process),
    for estimating whether one large factorisation fits the time left before starting it.

    Example:
        >>> dense_flop_rate() > 1e6
        True
    """
    import numpy as np

    n = 384
    A = np.random.default_rng(0).random((n, n))
    best = math.inf
    for _ in range(3):
        t = time.perf_counter()
        A @ A
        best = min(best, time.perf_counter() - t)
    return 2.0 * n**3 / max(best, 1e-9)  # tol: a clock tick (never divide by 0)


def rows_in_time(weights: Any, n: int, seconds: float | None, share: float, at_least: int) -> int:
    """How many of ``n`` rows forward passes through ``weights`` (weight matrices) can take
    in ``share`` of ``seconds`` (None: all ``n``), at least ``at_least``: a forward pass
    runs at about a quarter of :func:`dense_flop_rate`.

    Example:
        >>> import numpy as np
        >>> rows_in_time([np.ones((4, 2))], 2000, None, 0.25, 1), rows_in_time([np.ones((4, 2))], 2000, 1.0, 0.25, 1)
        (2000, 2000)
    """
    if seconds is None:
        return n
    import numpy as np

    per_row = 4.0 * 2.0 * sum(float(np.size(W)) for W in weights) / dense_flop_rate()
    return int(min(n, max(at_least, share * seconds / max(per_row, 1e-300))))  # tol: never divide by 0
