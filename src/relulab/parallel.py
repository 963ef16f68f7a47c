"""One map over work items: a local process pool (default) or a Ray cluster.

:func:`pmap` runs ``fn(item)`` for every item and yields ``(index, result)`` as results
finish, whichever backend runs them:

* ``backend="local"``: a pool of ``workers`` processes on this machine (no extra
  dependency). A worker process that dies (killed, out of memory) costs only the item it
  was running: the pool is rebuilt and that item retried, up to ``retries`` times; after
  that the item's result is ``on_error(item, reason)``.
* ``backend="ray"``: long-lived Ray worker actors, one per CPU (``pip install
  'relulab[ray]'``). ``address=None`` joins the cluster named by ``RAY_ADDRESS`` if set,
  else starts a Ray instance on this machine for the run; ``"auto"`` or ``"HOST:PORT"``
  joins an existing cluster. Each worker has one item at a time, as in the local pool; a
  worker whose process dies is restarted by Ray and its item retried, up to ``retries``
  times. The workers stay between maps (:func:`stop_ray_workers` ends them).

Ctrl-C (KeyboardInterrupt) cancels everything still running and ends the iteration
quietly; the caller keeps what it received (and marks its answer partial). Results
arrive in completion order; callers that need input order sort by index.

:func:`sweep` runs a function over a parameter grid and appends one JSON line per run.

Example:
    >>> sorted(pmap(abs, [-2, 3, -1], workers=1))
    [(0, 2), (1, 3), (2, 1)]
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from .errors import RelulabError, is_int_at_least, require
from .limits import memory_budget

__all__ = ["pmap", "sweep", "resolve_backend", "start_ray", "stop_ray_workers", "BACKENDS",
           "MAX_WORKERS", "lost_to_worker"]

BACKENDS = ("local", "ray")
# the reasons of the error rows _retry_or_fail writes when a worker, not its item, failed
WORKER_LOSSES = ("worker process died", "out of memory")
# seconds a --ray HOST:PORT address gets to accept a connection before it is refused
RAY_CONNECT_S = 5.0
# the object store of a Ray started here: a quarter of relulab's memory budget, within these
RAY_STORE_MIN, RAY_STORE_MAX = 80 * 2**20, 2 * 2**30
# more workers than this is a typo, not a cluster: each is a process (or Ray actor)
MAX_WORKERS = 1024


def resolve_backend(ray: str | None) -> tuple[str, str | None]:
    """The backend and Ray address for a ``--ray`` option value.

    ``None`` -> local (unless ``RAY_ADDRESS`` is set: then Ray at that address);
    ``"local"`` -> Ray started on this machine; ``"auto"`` or ``"HOST:PORT"`` -> that cluster.

    Example:
        >>> resolve_backend("local"), resolve_backend("10.0.0.5:6379")
        (('ray', None), ('ray', '10.0.0.5:6379'))
    """
    if ray is None:
        env = os.environ.get("RAY_ADDRESS")
        return ("ray", env) if env else ("local", None)
    if ray == "local":
        return "ray", None
    host, _, port = ray.rpartition(":")
    if ray != "auto" and not (host and port.isdigit()):
        raise RelulabError(f"--ray must be local, auto or HOST:PORT, got {ray!r}")
    return "ray", ray


def _import_all(modules: tuple[str, ...]) -> None:
    """Import the modules (a Ray worker as it starts, and the local driver before it
    forks its workers); one that is not installed is skipped (the work that needs it
    reports the missing dependency itself)."""
    import importlib

    for m in modules:
        try:
            importlib.import_module(m)
        except ImportError:
            pass


# Ray's own activity that a run started here does not need: every core worker reports task
# events to the GCS each second (for the dashboard's task list), metrics are collected
# and exported, the raylet samples the machine's memory every 250 ms (relulab enforces its
# own memory budgets, relulab.limits) and dumps debug state every 10 s. Measured with
# `benchmarks/parallel.py --ray-profile`: see docs/parallel.md. And Ray starts its
# workers 15 steps nicer than the driver (to keep its daemons responsive), so that on a
# machine doing anything else they get a fraction of the CPU the local pool's workers
# get: relulab's workers run at the driver's priority. Only for a Ray instance started
# by start_ray (a cluster one joins keeps its own configuration).
RAY_SYSTEM_CONFIG = {
    "task_events_report_interval_ms": 0,
    "enable_metrics_collection": False,
    "memory_monitor_refresh_ms": 0,
    "debug_dump_period_milliseconds": 0,
    "worker_niceness": 0,
}

def start_ray(address: str | None = None, workers: int | None = None,
              preload: tuple[str, ...] = ()) -> float:
    """Start (``address=None`` and no ``RAY_ADDRESS``: on this machine, with ``workers``
    CPUs) or join a Ray cluster, and start ``workers`` long-lived worker actors (default:
    one per CPU of the cluster) that import ``relulab`` and the ``preload`` modules as
    they start; returns when they are up, with the seconds it took: the backend's
    start-up, paid once per cluster, not per batch. Does nothing (0.0) when Ray is
    already initialised in this process (:func:`pmap` then starts the workers it needs).

    Example:
        >>> start_ray(workers=0)
        Traceback (most recent call last):
        ...
        relulab.errors.RelulabError: start_ray: workers must be between 1 and 1024, got 0
        >>> import ray                                            # doctest: +SKIP
        >>> start_ray(workers=2, preload=("relulab.verify",))     # doctest: +SKIP
        3.1
        >>> ray.shutdown()                                        # doctest: +SKIP
    """
    import time

    if workers is not None and not 1 <= workers <= MAX_WORKERS:
        raise RelulabError(f"start_ray: workers must be between 1 and {MAX_WORKERS}, got {workers}")
    ray = require("ray", "ray")
    if ray.is_initialized():
        return 0.0
    t0 = time.perf_counter()
    kw: dict[str, Any] = {"log_to_driver": False, "include_dashboard": False}
    local = address is None and not os.environ.get("RAY_ADDRESS")
    if local:
        # "local": a new cluster on this machine.  Without it ray.init joins the cluster
        # last started here (/tmp/ray/ray_current_cluster), and one that has since died
        # failed the run ("Connecting to existing Ray cluster ...", then a ValueError)
        kw["address"] = "local"
        kw["num_cpus"] = workers or os.cpu_count() or 1
        kw["_system_config"] = RAY_SYSTEM_CONFIG
        # an object store sized by relulab's memory budget (Ray sizes it from the
        # machine's memory: under `ulimit -v` it could not map it, and the run ended
        # after 32 s with "GCS has become overloaded"); results are small, larger
        # objects spill to disk
        kw["object_store_memory"] = int(min(max(memory_budget() / 4, RAY_STORE_MIN), RAY_STORE_MAX))
        # no usage report (a thread in Ray's dashboard process) for a run started here
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    else:
        kw["address"] = address or os.environ.get("RAY_ADDRESS")
        _check_reachable(kw["address"])
    try:
        ray.init(**kw)
    except Exception as e:  # noqa: BLE001 - Ray's many start-up failures, in one line
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        where = ("could not start on this machine (its logs: /tmp/ray/session_latest/logs; the "
                 "local pool, --workers without --ray, needs no Ray)") if local else \
            f"could not join the cluster at {kw['address']}"
        raise RelulabError(f"Ray {where}: {type(e).__name__}: {first}") from None
    _ray_workers(ray, workers, ("relulab", *preload))     # up (or joining when CPUs free)
    return time.perf_counter() - t0


def lost_to_worker(row: Any) -> bool:
    """Whether a result row is an error of the worker, not of the item: its process died
    (killed, out of memory).  ``--resume`` and ``sweep(resume=True)`` run such rows again.

    Example:
        >>> lost_to_worker({"status": "error", "reason": "worker process died 3 times"})
        True
        >>> lost_to_worker({"status": "error", "reason": "bad property"}), lost_to_worker(None)
        (False, False)
    """
    return isinstance(row, dict) and row.get("status") == "error" and \
        str(row.get("reason", "")).startswith(WORKER_LOSSES)


def _check_reachable(address: str) -> None:
    """Refuse a ``HOST:PORT`` address where nothing answers within RAY_CONNECT_S: Ray
    itself retried for good (still waiting after 280 s, printing only its own warnings).
    Other forms (``auto``, ``ray://``) are left to Ray."""
    import socket

    host, _, port = address.rpartition(":")
    if "://" in address or not host or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=RAY_CONNECT_S).close()
    except OSError as e:
        raise RelulabError(f"--ray {address}: no Ray cluster answered there within "
                           f"{RAY_CONNECT_S:g} s ({e.strerror or e}); start one with `ray start "
                           "--head`, or give its HOST:PORT") from None


class _RayWorker:
    """The state of one Ray worker actor: the modules it imported, the functions it was
    sent (by key, the last few: a function may hold a network)."""

    def __init__(self, preload: tuple[str, ...]) -> None:
        _import_all(preload)
        self.fns: dict[str, Any] = {}

    def ready(self) -> int:
        return os.getpid()

    def set_fn(self, key: str, fn: Callable[[Any], Any], preload: tuple[str, ...]) -> None:
        _import_all(preload)
        self.fns[key] = fn
        while len(self.fns) > _KEPT_FNS:
            del self.fns[next(iter(self.fns))]

    def drop_fn(self, key: str) -> None:
        self.fns.pop(key, None)

    def run(self, key: str, item: Any) -> Any:
        fn = self.fns.get(key)
        if fn is None:              # restarted since set_fn (its process died): ask again
            return _MissingFn()
        return fn(item)


class _MissingFn:
    """What a worker actor answers for an item whose function it does not hold."""


# functions a worker actor keeps (maps that interleave on the same workers)
_KEPT_FNS = 4
# the Ray actor class of _RayWorker (made once: Ray exports a class per ray.remote call)
_ACTOR_CLASS: list = []
# the worker actors of this driver's Ray session ("session", "handles"): Ray ends an
# actor once the handle that created it is gone, so this keeps them alive between maps
_WORKERS: dict[str, Any] = {}


# seconds to wait for all worker actors to be up before a map starts on those that are
# (the others, waiting for CPUs other jobs of the cluster hold, join when they start)
_WORKERS_WAIT_S = 60.0


def _ray_workers(ray, workers: int | None, preload: tuple[str, ...]) -> tuple[list, list]:
    """``workers`` worker actors (default: one per CPU of the cluster, at most that many):
    those this driver started before, more where missing, each holding one CPU, restarted
    by Ray when its process dies. Returns the workers that are up and (worker, probe)
    pairs of those not up yet, once all are up, or ``_WORKERS_WAIT_S`` passed and at
    least one is."""
    cpus = max(int(ray.cluster_resources().get("CPU", 1)), 1)
    n = min(workers or cpus, cpus)
    session = _ray_session(ray)                       # a new ray.init: new workers
    if _WORKERS.get("session") != session:
        _WORKERS.clear()
        _WORKERS.update(session=session, handles=[])
    if not _ACTOR_CLASS:
        _ACTOR_CLASS.append(ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=0)(_RayWorker))
    handles = _WORKERS["handles"]
    while len(handles) < n:
        handles.append(_ACTOR_CLASS[0].remote(preload))
    probes = {_probe(a): a for a in handles[:n]}
    up, waiting = ray.wait(list(probes), num_returns=n, timeout=_WORKERS_WAIT_S)
    if not up:
        up, waiting = ray.wait(waiting, num_returns=1)
    ray.get(up)                                       # a worker that cannot start: its error
    return [probes[r] for r in up], [(probes[r], r) for r in waiting]


def stop_ray_workers() -> int:
    """End the Ray worker actors that :func:`start_ray` and :func:`pmap` started in this
    driver (they stay between maps, each holding one CPU of the cluster, so that no map
    pays for starting processes and importing modules); returns how many were ended.
    ``ray.shutdown()`` ends them too.

    Example:
        >>> stop_ray_workers()           # none started in this process
        0
    """
    import sys

    handles = _WORKERS.get("handles") or []
    ray = sys.modules.get("ray")
    live = ray is not None and ray.is_initialized()
    if live:
        live = _WORKERS.get("session") == _ray_session(ray)
    if not live:                        # none, or those of a Ray session that has ended
        _WORKERS.clear()
        return 0
    for h in handles:
        try:
            ray.kill(h)
        except Exception:  # noqa: BLE001 - already gone
            pass
    _WORKERS.clear()
    return len(handles)


def _ray_session(ray) -> tuple:
    """Which Ray session this driver is in (job and node): the worker actors of another
    session are not this one's."""
    ctx = ray.get_runtime_context()
    return ctx.get_job_id(), ctx.get_node_id()


def _probe(worker):
    """A call that returns once the worker actor is up (retried by Ray while it restarts)."""
    return worker.ready.options(max_task_retries=-1).remote()


def _error_result(item: Any, reason: str) -> dict:
    return {"status": "error", "reason": reason}


def pmap(
    fn: Callable[[Any], Any],
    items: Iterable[Any],
    *,
    backend: str = "local",
    workers: int | None = None,
    address: str | None = None,
    retries: int = 2,
    on_error: Callable[[Any, str], Any] = _error_result,
    chunksize: int = 1,
    preload: tuple[str, ...] = (),
) -> Iterator[tuple[int, Any]]:
    """Yield ``(index, fn(item))`` for every item, as results finish.

    ``fn`` and the items must pickle (a module-level function). ``workers`` defaults to
    the machine's CPU count (local) or the cluster's (Ray: at most that, one CPU each).
    ``chunksize``: items sent to a worker at once (one task each chunk: for many short
    items, where the backend's cost per task would dominate; a dead worker then costs its
    whole chunk one attempt).
    ``preload``: modules ``fn`` imports when it runs, imported before the work starts
    (by the driver before it forks local workers; by each Ray worker when it starts,
    see :func:`start_ray`), so that no item pays for them.

    Example:
        >>> sorted(pmap(len, ["ab", "c"], workers=2))       # (index, result), as they finish
        [(0, 2), (1, 1)]
        >>> sorted(pmap(abs, [-1, -2, -3], workers=2, chunksize=2))
        [(0, 1), (1, 2), (2, 3)]
    """
    items = list(items)
    if backend not in BACKENDS:
        raise RelulabError(f"pmap: backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    if workers is not None and not (is_int_at_least(workers, 1) and workers <= MAX_WORKERS):
        raise RelulabError(f"pmap: workers must be an integer between 1 and {MAX_WORKERS}, got {workers!r}")
    if not is_int_at_least(retries, 0):
        raise RelulabError(f"pmap: retries must be an integer of at least 0, got {retries!r}")
    if not is_int_at_least(chunksize, 1):
        raise RelulabError(f"pmap: chunksize must be an integer of at least 1, got {chunksize!r}")
    if not items:
        return
    if chunksize > 1:
        yield from _chunked(fn, items, chunksize, backend=backend, workers=workers,
                            address=address, retries=retries, on_error=on_error,
                            preload=preload)
        return
    if backend == "ray":
        yield from _ray_map(fn, items, workers, address, retries, on_error, preload)
        return
    _import_all(preload)
    if workers == 1:
        for i, item in enumerate(items):
            for attempt in range(1, retries + 2):
                try:
                    res = fn(item)
                    break
                except KeyboardInterrupt:
                    return                  # Ctrl-C: the caller keeps what finished
                except MemoryError as e:    # the item fails, not the map: retried as in a pool
                    why = f"out of memory (MemoryError: {e})" if str(e) else "out of memory (MemoryError)"
                    res = on_error(item, f"{why} {attempt} times")
            yield i, res
    else:
        yield from _local_map(fn, items, workers or os.cpu_count() or 1, retries, on_error)


class _Chunk:
    """``fn`` over a list of items, as one task."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def __call__(self, items: list) -> list:
        return [self.fn(x) for x in items]


def _chunked(fn, items, chunksize, *, on_error, **kw) -> Iterator[tuple[int, Any]]:
    starts = range(0, len(items), chunksize)
    chunks = [items[s : s + chunksize] for s in starts]

    def chunk_error(chunk: list, reason: str) -> list:
        return [on_error(x, reason) for x in chunk]

    for c, res in pmap(_Chunk(fn), chunks, on_error=chunk_error, **kw):
        for k, r in enumerate(res):
            yield starts[c] + k, r


# results whose arrays (out-of-band pickle buffers) hold at least this many bytes travel
# through a shared-memory file instead of the pipe
SHM_MIN_BYTES = 1 << 20
# offsets of the arrays in that file are aligned to this (numpy's preferred alignment)
_ALIGN = 64


class _Shared:
    """A result whose large arrays wait in a shared-memory file: the pickle stream, the
    file and each out-of-band buffer's (offset, length)."""

    def __init__(self, data: bytes, path: str, spans: list[tuple[int, int]]) -> None:
        self.data, self.path, self.spans = data, path, spans


def _pack(res: Any, folder: str | None) -> Any:
    """``res`` as it is, or as a :class:`_Shared` when its arrays are large: written once
    into a file under ``folder`` (tmpfs), which the driver maps instead of reading the
    bytes through the pipe and unpickling them into new arrays (pickle protocol 5)."""
    import pickle
    import tempfile

    if folder is None:
        return res
    bufs: list[pickle.PickleBuffer] = []
    data = pickle.dumps(res, protocol=5, buffer_callback=bufs.append)
    views = [b.raw() for b in bufs]
    if sum(v.nbytes for v in views) < SHM_MIN_BYTES:
        return res
    path = None
    try:
        fd, path = tempfile.mkstemp(dir=folder, suffix=".buf")
        spans, pos = [], 0
        with os.fdopen(fd, "wb", buffering=0) as fh:
            for v in views:
                pad = -pos % _ALIGN
                if pad:
                    fh.write(b"\0" * pad)
                    pos += pad
                spans.append((pos, v.nbytes))
                done = 0
                while done < v.nbytes:                 # a raw write may be partial
                    done += fh.write(v[done:])
                pos += v.nbytes
    except OSError:
        # the memory file system is full (a container's small /dev/shm): use the pipe
        if path is not None:
            try:
                os.unlink(path)
            except OSError:
                pass
        return res
    return _Shared(data, path, spans)


def _unpack(res: Any) -> Any:
    """The result a worker sent: a :class:`_Shared` one is mapped (its arrays are views
    of the file's pages, writable, private to the driver) and the file unlinked at once:
    the pages live as long as the arrays."""
    if not isinstance(res, _Shared):
        return res
    import mmap
    import pickle

    try:
        with open(res.path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            # private (copy on write) and populated at once: the arrays are read next
            flags = mmap.MAP_PRIVATE | getattr(mmap, "MAP_POPULATE", 0)
            mm = mmap.mmap(fh.fileno(), size, flags=flags,
                           prot=mmap.PROT_READ | mmap.PROT_WRITE) if size else None
    finally:
        os.unlink(res.path)
    view = memoryview(mm) if mm is not None else memoryview(bytearray())
    return pickle.loads(res.data, buffers=[view[o : o + n] for o, n in res.spans])


def _shm_folder() -> str | None:
    """A fresh folder on a memory file system for results in shared memory (None: none
    writable, results go through the pipe)."""
    import tempfile

    for root in ("/dev/shm", None):
        try:
            return tempfile.mkdtemp(prefix="relulab-", dir=root)
        except OSError:
            continue
    return None


def _die_with(parent: int) -> None:
    """Ask Linux to kill this worker when its driver dies (prctl PR_SET_PDEATHSIG), and
    exit now if it died already: a driver ended by SIGTERM (a scheduler, ``kill PID``)
    left its workers running as orphans for minutes.  Elsewhere nothing."""
    import ctypes
    import signal

    try:
        ctypes.CDLL("libc.so.6").prctl(1, int(signal.SIGKILL), 0, 0, 0)   # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:
        os._exit(0)


def _worker_loop(fn, conn, folder=None, parent: int | None = None) -> None:
    """A local worker: run items until told to stop; exceptions go back to the driver."""
    if parent is not None:
        _die_with(parent)
    while True:
        msg = conn.recv()
        if msg is None:
            return
        i, item = msg
        try:
            conn.send((i, True, _pack(fn(item), folder)))
        except BaseException as e:  # noqa: BLE001 - every failure is reported to the driver
            if isinstance(e, SystemExit):
                # sys.exit() in fn: re-raised in the driver it ended the caller's program
                e = RelulabError(f"pmap: the function raised {type(e).__name__}({e}) in a worker")
            try:
                conn.send((i, False, e))
            except Exception:  # noqa: BLE001 - an unpicklable exception: send its text
                conn.send((i, False, RuntimeError(f"{type(e).__name__}: {e}")))


def _local_map(fn, items, workers, retries, on_error) -> Iterator[tuple[int, Any]]:
    """Own worker processes (not a ProcessPoolExecutor): the driver knows which item each
    worker runs, so a worker that dies costs exactly that item one attempt."""
    import multiprocessing as mp
    import shutil
    from multiprocessing.connection import wait

    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    _release_free_memory()
    folder = _shm_folder()
    restore = _exit_on_sigterm()
    try:
        yield from _local_loop(ctx, wait, fn, items, workers, retries, on_error, folder)
    finally:
        restore()
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)   # files of results never received


def _exit_on_sigterm() -> Callable[[], None]:
    """While the map runs in the main thread with SIGTERM's default action: SIGTERM exits
    by SystemExit(143), so the workers are stopped and the shared-memory folder removed
    (the default action skipped both).  Returns what restores the handler."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return lambda: None

    def on_term(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)

    def restore() -> None:
        # (only our own handler: one installed meanwhile by other code stays)
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGTERM) is on_term:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)

    return restore


def _local_loop(ctx, wait, fn, items, workers, retries, on_error, folder):
    """The driver's loop of :func:`_local_map` (``folder``: where workers leave large
    results, see :func:`_pack`)."""
    queue = list(range(len(items)))[::-1]          # pop() takes the next item in order
    attempts = [0] * len(items)
    running: dict[Any, tuple[Any, int | None]] = {}  # conn -> (process, item index)

    def start():
        here, there = ctx.Pipe()
        p = ctx.Process(target=_worker_loop, args=(fn, there, folder, os.getpid()), daemon=True)
        p.start()
        there.close()
        running[here] = (p, None)

    def feed(conn, fresh_tries: int = 3):
        """Give ``conn``'s worker the next item, or tell it to stop.  A worker that died
        since its last result (the send fails) has not run the item: it goes back to
        the queue, with no attempt counted, and a fresh worker takes it."""
        p, _ = running[conn]
        if queue:
            i = queue.pop()
            try:
                conn.send((i, items[i]))
            except OSError:  # BrokenPipeError, ConnectionResetError: the worker is gone
                queue.append(i)
                del running[conn]
                conn.close()
                p.join(timeout=5)
                if fresh_tries <= 0:
                    raise RuntimeError("pmap: fresh worker processes die before their first item") from None
                start()
                feed(list(running)[-1], fresh_tries - 1)
                return
            running[conn] = (p, i)
        else:
            try:
                conn.send(None)
            except OSError:
                pass  # already gone: nothing to stop
            p.join(timeout=5)
            del running[conn]

    def _retry_or_fail(i: int, why: str) -> Iterator[tuple[int, Any]]:
        attempts[i] += 1
        if attempts[i] > retries:
            yield i, on_error(items[i], f"{why} {attempts[i]} times")
        else:
            queue.append(i)         # retried next, by a fresh worker

    try:
        for _ in range(min(workers, len(items))):
            start()
        for conn in list(running):
            feed(conn)
        while running:
            sentinels = {running[c][0].sentinel: c for c in running}
            ready = wait(list(running) + list(sentinels))
            for r in ready:
                conn = sentinels.get(r, r)
                if conn not in running:
                    continue
                p, i = running[conn]
                if r is conn and conn.poll():
                    try:
                        j, ok, res = conn.recv()
                    except (EOFError, OSError):
                        continue                    # died while sending: the sentinel follows
                    running[conn] = (p, None)
                    if not ok and isinstance(res, MemoryError):
                        # out of memory inside Python: as for a worker the system killed,
                        # the item alone fails (retried by a fresh worker), not the map
                        p.kill()
                        p.join(timeout=5)
                        del running[conn]
                        conn.close()
                        why = f"out of memory (MemoryError: {res})" if str(res) else "out of memory (MemoryError)"
                        yield from _retry_or_fail(j, why)
                        if queue:
                            start()
                            feed(list(running)[-1])
                        continue
                    if not ok:
                        raise res
                    yield j, _unpack(res)
                    feed(conn)
                elif not p.is_alive():
                    del running[conn]
                    conn.close()
                    if i is not None:
                        yield from _retry_or_fail(i, "worker process died")
                    if queue:
                        start()
                        feed(list(running)[-1])
    except (KeyboardInterrupt, GeneratorExit) as e:
        _stop(running)
        if isinstance(e, GeneratorExit):
            raise
        return
    except BaseException:
        _stop(running)
        raise


def _release_free_memory() -> None:
    """Hand the driver's freed heap back to the system before forking workers (glibc
    only; elsewhere nothing). A forked worker that reuses memory the driver freed but
    kept copies each page on first write; after a large computation in the driver that
    cost the workers of a region count 4x the page faults and about 8% more CPU time."""
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)   # already loaded: no search, no subprocess
    except (OSError, AttributeError):
        pass


def _stop(running: dict) -> None:
    for conn, (p, _) in list(running.items()):
        p.kill()
        p.join(timeout=5)
        conn.close()
    running.clear()


def _ray_map(fn, items, workers, address, retries, on_error, preload) -> Iterator[tuple[int, Any]]:
    """Items over Ray worker actors, one item in flight per worker as the local pool does
    (no worker waits while another has a queue); the driver knows which item each worker
    runs, so a worker whose process dies (Ray restarts it) costs exactly that item one
    attempt."""
    import uuid

    ray = require("ray", "ray")
    started = False
    if not ray.is_initialized():
        start_ray(address, workers, preload)
        started = True
    try:
        pool, later = _ray_workers(ray, workers, ("relulab", *preload))
        # the function (and what it holds, e.g. a model) goes to the object store once and
        # to each worker once per map, not with every item
        key, fn_ref = uuid.uuid4().hex, ray.put(fn)
        queue = list(range(len(items)))[::-1]          # pop() takes the next item in order
        attempts = [0] * len(items)
        # result ref -> (worker, item index); index None: a probe of a restarting worker
        running: dict[Any, tuple[Any, int | None]] = {}
        sent: dict[int, Any] = {}                      # worker -> its last set_fn's ref

        def feed(worker, send_fn=False):
            if send_fn:                                    # runs before the item (in order)
                sent[id(worker)] = worker.set_fn.remote(key, fn_ref, preload)
            if queue:
                i = queue.pop()
                running[worker.run.remote(key, items[i])] = (worker, i)

        def revive(worker):
            # Ray restarts a worker whose process died; calls made meanwhile fail at once,
            # so the worker gets items again only after this probe (retried by Ray) returns
            running[_probe(worker)] = (worker, None)

        for w in pool:
            feed(w, send_fn=True)
        for w, probe in later:                             # fed when they are up
            running[probe] = (w, None)
        try:
            while queue or any(i is not None for _, i in running.values()):
                if not running:                            # every worker is gone
                    for j in reversed(queue):
                        yield j, on_error(items[j], "no Ray worker left")
                    return
                ready, _ = ray.wait(list(running), num_returns=1)
                worker, i = running.pop(ready[0])
                try:
                    res = ray.get(ready[0])
                except ray.exceptions.RayActorError as e:     # its process died
                    if i is None:                          # gone for good: its items go elsewhere
                        continue
                    attempts[i] += 1
                    if attempts[i] > retries:
                        yield i, on_error(items[i], f"worker process died {attempts[i]} times "
                                                    f"({type(e).__name__})")
                    else:
                        queue.append(i)                    # retried next
                    revive(worker)
                    continue
                except ray.exceptions.RayTaskError as e:
                    cause = e.as_instanceof_cause()
                    if isinstance(cause, ray.exceptions.TaskCancelledError):
                        raise KeyboardInterrupt from None      # Ctrl-C inside the worker
                    raise cause from None
                if i is None:                              # restarted: without the function
                    feed(worker, send_fn=True)
                    continue
                if isinstance(res, _MissingFn):
                    try:
                        ray.get(sent[id(worker)])          # the function failed to arrive?
                    except ray.exceptions.RayTaskError as e:
                        raise e.as_instanceof_cause() from None
                    except ray.exceptions.RayActorError:
                        pass
                    queue.append(i)                        # restarted while idle: not an attempt
                    feed(worker, send_fn=True)
                    continue
                feed(worker)
                yield i, res
            for w in [*pool, *(w for w, _ in later)]:
                w.drop_fn.remote(key)                  # what the function holds is freed
        except (KeyboardInterrupt, GeneratorExit) as e:
            # stop what runs now: a restarted worker is idle (and imports its modules again)
            for worker in {id(w): w for w, i in running.values() if i is not None}.values():
                ray.kill(worker, no_restart=False)
            if isinstance(e, GeneratorExit):
                raise
    finally:
        if started:
            ray.shutdown()


def sweep(
    fn: Callable[..., Any],
    grid: dict[str, Iterable[Any]],
    out: str | os.PathLike,
    *,
    backend: str = "local",
    workers: int | None = None,
    address: str | None = None,
    resume: bool = True,
) -> list[dict]:
    """Run ``fn(**params)`` for every combination of ``grid`` and append one JSON line per
    run (``{"params": ..., "result": ...}``) to ``out`` as runs finish.

    With ``resume`` (the default), parameter sets already in ``out`` are not run again;
    the returned list holds every line of the file afterwards.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "runs.jsonl")
        >>> rows = sweep(pow, {"base": [2, 3], "exp": [2]}, path, workers=1)
        >>> sorted(r["result"] for r in rows)
        [4, 9]
    """
    from .results import read_json_lines, to_jsonable

    keys = list(grid)
    combos = [dict(zip(keys, vals, strict=True)) for vals in itertools.product(*grid.values())]
    path = Path(out)
    done = []
    if resume and path.is_file():
        done = read_json_lines(path, "a sweep")
        for k, r in enumerate(done):
            if not (isinstance(r, dict) and "params" in r):
                raise RelulabError(f"{path}: row {k + 1} is not a sweep row (no \"params\"): resume "
                                   "from a sweep's own output file, or pass resume=False")
    # (a row of a worker that died is retried: such losses are mostly transient; the new
    # row replaces it in the answer, the file keeps both)
    done = [r for r in done if not lost_to_worker(r.get("result"))]
    seen = {json.dumps(to_jsonable(r["params"]), sort_keys=True) for r in done}
    todo = [c for c in combos if json.dumps(to_jsonable(c), sort_keys=True) not in seen]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        for i, res in pmap(_Call(fn), todo, backend=backend, workers=workers, address=address):
            row = {"params": to_jsonable(todo[i]), "result": to_jsonable(res)}
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            done.append(row)
    return done


class _Call:
    """``fn(**params)`` as a picklable one-argument callable."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __call__(self, params: dict) -> Any:
        return self.fn(**params)
