"""The time and memory limits of one verification run, checked by every phase.

A :class:`Budget` carries the deadline (``time.monotonic`` seconds) and the memory
budget in bytes.  Phases ask it how long they may run (:meth:`Budget.left`), size
their batches with :meth:`Budget.fit` (how many items of a given size fit), check
big allocations before making them (:meth:`Budget.check_bytes`) and check the
process's growth since the run started between rounds (:meth:`Budget.check_growth`).
A memory check that fails raises :class:`~relulab.limits.ResourceLimitError`; the
verifier turns it into ``unknown`` with the reason ``memory: ...``.

Example:
    >>> b = Budget(timeout=10.0, memory=2**30)
    >>> 0 < b.left() <= 10.0, b.fit(2**20, want=4096) == 1024 // 2, b.expired()
    (True, True, False)
"""

from __future__ import annotations

import os
import time

from ..limits import ResourceLimitError, memory_budget

__all__ = ["Budget", "resident_memory"]

# a batch may take at most this share of the budget (the rest: the queue, the model)
BATCH_SHARE = 0.5


def resident_memory() -> int:
    """Resident memory of this process in bytes (0 where /proc is not available).

    Example:
        >>> resident_memory() >= 0
        True
    """
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class Budget:
    """Deadline and memory budget of one run (``timeout`` seconds from now; ``memory``
    bytes, default :func:`relulab.limits.memory_budget`).

    Example:
        >>> b = Budget(timeout=5.0, memory=10**6)
        >>> b.check_bytes(10**9, "a batch of sub-domains")
        Traceback (most recent call last):
        ...
        relulab.limits.ResourceLimitError: memory: a batch of sub-domains needs 0.931 GB; the budget is 0.000931 GB
    """

    def __init__(self, timeout: float | None = None, memory: int | None = None) -> None:
        self.start = time.monotonic()
        self.deadline = None if timeout is None else self.start + float(timeout)
        self.memory = int(memory_budget() if memory is None else memory)
        self.rss0 = resident_memory()

    def left(self) -> float:
        """Seconds left (inf without a deadline)."""
        return float("inf") if self.deadline is None else self.deadline - time.monotonic()

    def expired(self) -> bool:
        return self.left() <= 0

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def check_bytes(self, n_bytes: float, what: str) -> int:
        """Raise ResourceLimitError (reason ``memory: ...``) when ``n_bytes`` exceed the budget."""
        if n_bytes > self.memory:
            raise ResourceLimitError(
                f"memory: {what} needs {n_bytes / 2**30:.3g} GB; the budget is "
                f"{self.memory / 2**30:.3g} GB"
            )
        return int(n_bytes)

    def check_growth(self, what: str) -> None:
        """Raise ResourceLimitError when the process grew by more than the budget since
        the run started (the run's own allocations: queue, caches, solver)."""
        grown = resident_memory() - self.rss0
        if grown > self.memory:
            raise ResourceLimitError(
                f"memory: {what} grew the process by {grown / 2**30:.3g} GB; the budget is "
                f"{self.memory / 2**30:.3g} GB"
            )

    def fit(self, bytes_each: float, want: int) -> int:
        """How many items of ``bytes_each`` (at most ``want``) fit in the batch share of
        the budget; raises ResourceLimitError when not even one does."""
        room = int(BATCH_SHARE * self.memory // max(bytes_each, 1.0))
        if room < 1:
            self.check_bytes(bytes_each / BATCH_SHARE, "one sub-problem")
        return max(1, min(int(want), room))
