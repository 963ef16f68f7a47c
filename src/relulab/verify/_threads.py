"""Run OpenBLAS single-threaded inside the verifier.

The bound computations do many mid-sized matrix products; on a small shared machine
a multi-threaded BLAS spends more time synchronising than computing (measured here:
a 3000x50 by 50x50 product took 20x longer with two threads on a loaded 2-core
machine than with one).  Parallelism comes from worker processes instead.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterator

_LIB: list = []


def _openblas():
    if _LIB:
        return _LIB[0]
    lib = None
    try:
        with open("/proc/self/maps") as fh:
            paths = sorted({ln.split()[-1] for ln in fh if "openblas" in ln and ".so" in ln})
        for p in paths:
            cand = ctypes.CDLL(p)
            for set_name, get_name in (
                ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
                ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
                ("openblas_set_num_threads", "openblas_get_num_threads"),
            ):
                if hasattr(cand, set_name) and hasattr(cand, get_name):
                    lib = (getattr(cand, set_name), getattr(cand, get_name))
                    break
            if lib:
                break
    except OSError:
        lib = None
    _LIB.append(lib)
    return lib


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Context manager: OpenBLAS with one thread inside, the previous count restored after."""
    lib = _openblas()
    if lib is None:
        yield
        return
    setter, getter = lib
    before = int(getter())
    setter(1)
    try:
        yield
    finally:
        setter(before)
