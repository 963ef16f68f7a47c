"""relulab.parallel: the local pool and Ray give the same answers; a dead worker costs only
its item (retried, answered once); Ctrl-C ends the map quietly; sweeps and verify-batch
write results as they finish and --resume runs only what is missing."""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
import pytest
from conftest import run_cli as run

from relulab.examples import example_path
from relulab.parallel import pmap, resolve_backend, sweep


def square(x):
    time.sleep(0.01)
    return x * x


class DieOnce:
    """Kills its worker process the first time it sees ``victim`` (a marker file remembers)."""

    def __init__(self, folder, victim):
        self.folder, self.victim = str(folder), victim

    def __call__(self, x):
        marker = os.path.join(self.folder, f"died-{x}")
        if x == self.victim and not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(1)
        return x * 10


def always_dies(x):
    if x == 1:
        os._exit(1)
    return x


def exits_at_1(x):
    if x == 1:
        sys.exit(3)
    return x


def interrupt_at_3(x):
    if x == 3:
        raise KeyboardInterrupt
    time.sleep(0.01)
    return x


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_local_map_equals_serial_map(workers):
    out = dict(pmap(square, range(9), workers=workers))
    assert out == {i: i * i for i in range(9)}


def test_dead_worker_costs_only_its_item(tmp_path):
    got = list(pmap(DieOnce(tmp_path, victim=4), range(8), workers=2))
    assert sorted(i for i, _ in got) == list(range(8))          # every item answered once
    assert dict(got) == {i: 10 * i for i in range(8)}
    assert (tmp_path / "died-4").exists()                         # the worker really died


def die_after_returning_0(x):
    """Returns, then (item 0 only) kills its own worker while it waits for the next item."""
    import signal
    import threading

    if x == 0:
        threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGKILL)).start()
    return x * 10


def test_a_worker_that_dies_between_items_costs_nothing():
    # the driver sent the next item down the dead worker's pipe: BrokenPipeError ended
    # the whole map after one result
    got = []
    for i, r in pmap(die_after_returning_0, list(range(6)), workers=2):
        got.append((i, r))
        time.sleep(0.5)  # a consumer that takes a moment: the worker dies meanwhile
    assert sorted(got) == [(i, 10 * i) for i in range(6)]


def test_item_that_always_kills_its_worker_is_reported_not_retried_forever():
    got = dict(pmap(always_dies, range(4), workers=2, retries=1))
    assert got[0] == 0 and got[2] == 2 and got[3] == 3
    assert got[1]["status"] == "error" and "died 2 times" in got[1]["reason"]


def test_interrupt_ends_the_map_with_what_finished():
    got = dict(pmap(interrupt_at_3, range(6), workers=1))
    assert got == {0: 0, 1: 1, 2: 2}
    got = dict(pmap(interrupt_at_3, range(40), workers=2))
    assert 3 not in got and all(v == k for k, v in got.items())


def test_errors_in_fn_propagate():
    with pytest.raises(ZeroDivisionError):
        list(pmap(lambda x: 1 / x, [1, 0], workers=1))


def test_bad_arguments():
    from relulab.errors import RelulabError

    with pytest.raises(RelulabError, match="backend"):
        list(pmap(abs, [1], backend="spark"))
    with pytest.raises(RelulabError, match="workers"):
        list(pmap(abs, [1], workers=0))
    # floats passed the range check and failed later with a TypeError
    for kwargs, what in (({"workers": 2.5}, "workers"), ({"chunksize": 1.5}, "chunksize"),
                         ({"chunksize": "2"}, "chunksize"), ({"retries": -1}, "retries")):
        with pytest.raises(RelulabError, match=f"{what} must be an integer"):
            list(pmap(abs, [1, 2, 3], **kwargs))


def test_sys_exit_in_a_worker_is_an_error_not_the_callers_exit():
    from relulab.errors import RelulabError

    # the worker's SystemExit was re-raised in the driver, which ended the caller's program
    with pytest.raises(RelulabError, match=r"raised SystemExit\(3\) in a worker"):
        list(pmap(exits_at_1, range(3), workers=2))


def test_sweep_does_not_resume_from_a_file_of_other_rows(tmp_path):
    from relulab.errors import RelulabError

    for text in ('[1, 2]\n', '{"a": 1}\n'):   # TypeError / KeyError 'params'
        path = tmp_path / "other.jsonl"
        path.write_text(text)
        with pytest.raises(RelulabError, match="row 1 is not a sweep row"):
            sweep(pow, {"base": [2], "exp": [2]}, path, workers=1)
        assert path.read_text() == text


def test_resolve_backend(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert resolve_backend(None) == ("local", None)
    monkeypatch.setenv("RAY_ADDRESS", "h:1")
    assert resolve_backend(None) == ("ray", "h:1")
    assert resolve_backend("auto") == ("ray", "auto")


def test_sweep_writes_one_line_per_run_and_resumes(tmp_path):
    path = tmp_path / "runs.jsonl"
    rows = sweep(pow, {"base": [2, 3], "exp": [1, 2]}, path, workers=2)
    assert sorted(r["result"] for r in rows) == [2, 3, 4, 9]
    assert len(path.read_text().splitlines()) == 4
    rows = sweep(pow, {"base": [2, 3, 5], "exp": [1, 2]}, path, workers=2)   # two new runs
    lines = [json.loads(s) for s in path.read_text().splitlines()]
    assert len(lines) == 6 and len(rows) == 6
    assert sorted(r["result"] for r in lines) == [2, 3, 4, 5, 9, 25]


# ------------------------------------------------------------------ verify-batch
def _instances(tmp_path, n_copies=2):
    from relulab.io import load_model, save_model

    net = load_model(example_path("tiny_2d.onnx"))
    lines = []
    for k in range(n_copies):
        save_model(net * (1.0 + k), tmp_path / f"net{k}.npz")
        for prop in ("holds", "violated"):
            (tmp_path / f"p_{prop}.vnnlib").write_bytes(example_path(f"tiny_2d_{prop}.vnnlib").read_bytes())
            lines.append(f"net{k}.npz,p_{prop}.vnnlib,20")
    (tmp_path / "inst.csv").write_text("\n".join(lines) + "\n")
    return len(lines)


def _full_batch(tmp_path, capsys):
    """The instances, a complete verify-batch run's JSON and its results file."""
    n = _instances(tmp_path)
    res = tmp_path / "res.jsonl"
    code, out, _ = run(capsys, "verify-batch", tmp_path / "inst.csv", "--workers", "2", "--json",
                       "--results", res)
    assert code == 0
    return n, json.loads(out), res


def test_verify_batch_resume_answers_only_missing_instances(tmp_path, capsys):
    n, full, res = _full_batch(tmp_path, capsys)
    assert len(res.read_text().splitlines()) == n
    # an interrupted run: only the first two answers made it to the file (plus a torn line)
    kept = res.read_text().splitlines()[:2]
    res.write_text("\n".join(kept) + "\n{\"status\": \"hol")
    code, out, _ = run(capsys, "verify-batch", tmp_path / "inst.csv", "--workers", "2", "--json",
                       "--results", res, "--resume")
    d = json.loads(out)
    assert code == 0 and d["run"]["resumed"] == 2
    rows = [json.loads(s) for s in res.read_text().splitlines()]  # the torn line was cut
    assert rows[:2] == [json.loads(s) for s in kept]
    assert len(rows) == n                             # only the missing ones ran
    assert [r["status"] for r in d["instances"]] == [r["status"] for r in full["instances"]]
    # an unreadable line that is not the last one is an error naming it
    res.write_text(kept[0] + "\nnot json\n" + kept[1] + "\n")
    code, _, err = run(capsys, "verify-batch", tmp_path / "inst.csv", "--results", res, "--resume")
    assert code == 1 and "line 2" in err and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "verify-batch", tmp_path / "inst.csv", "--resume")
    assert code == 1 and "--results" in err


def big_result(n):
    return {"x": np.arange(n, dtype=np.float64) * 0.5, "ids": np.arange(n, dtype=np.int64)[::-1].copy(),
            "name": f"item {n}"}


def test_large_results_travel_through_shared_memory_and_leave_nothing(tmp_path, monkeypatch):
    """Results whose arrays pass SHM_MIN_BYTES are written to a file the driver maps:
    equal to the serial results, writable, and the folder is gone afterwards."""
    import relulab.parallel as P

    folder = tmp_path / "shm"
    folder.mkdir()
    monkeypatch.setattr(P, "_shm_folder", lambda: str(folder))
    seen = []
    real = P._unpack
    monkeypatch.setattr(P, "_unpack", lambda r: seen.append(isinstance(r, P._Shared)) or real(r))
    sizes = [10, 300_000, 7, 200_000]
    got = dict(pmap(big_result, sizes, workers=2))
    for i, n in enumerate(sizes):
        want = big_result(n)
        assert got[i]["name"] == want["name"]
        assert np.array_equal(got[i]["x"], want["x"]) and np.array_equal(got[i]["ids"], want["ids"])
        got[i]["x"][:1] = -1.0                                   # writable, private copy
    assert sorted(seen) == [False, False, True, True]           # only the large ones
    assert not folder.exists()


def test_a_full_memory_file_system_falls_back_to_the_pipe(tmp_path, monkeypatch):
    import relulab.parallel as P

    missing = tmp_path / "no-such-folder"                     # every write fails
    monkeypatch.setattr(P, "_shm_folder", lambda: str(missing))
    got = dict(pmap(big_result, [300_000, 5], workers=2))
    assert np.array_equal(got[0]["x"], big_result(300_000)["x"]) and got[1]["name"] == "item 5"


# ------------------------------------------------------------------ Ray
def has_module(name):
    import sys

    return name in sys.modules


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'relulab[ray]')")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import sys

    from relulab.parallel import start_ray

    # workers that import relulab and a module of the work as they start
    assert start_ray(workers=2, preload=("relulab.cli.verify",)) > 0
    # Ray workers cannot import this test module: ship its functions by value
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield ray
    ray.shutdown()


def test_ray_workers_start_with_the_preloaded_modules(ray_local):
    from relulab.parallel import start_ray

    assert start_ray(workers=2) == 0.0                      # already started: nothing to do
    got = dict(pmap(has_module, ["relulab.cli.verify"] * 4, backend="ray", workers=2))
    assert got == {i: True for i in range(4)}


def test_ray_map_equals_local_map(ray_local):
    assert dict(pmap(square, range(12), backend="ray", workers=2)) == dict(pmap(square, range(12), workers=2))


def test_ray_chunks_equal_local_map(ray_local):
    assert dict(pmap(square, range(13), backend="ray", workers=2, chunksize=4)) == \
        dict(pmap(square, range(13), workers=2))


def test_ray_retries_a_dead_worker(ray_local, tmp_path):
    got = list(pmap(DieOnce(tmp_path, victim=2), range(5), backend="ray", workers=2))
    assert sorted(i for i, _ in got) == list(range(5)) and dict(got) == {i: 10 * i for i in range(5)}
    assert (tmp_path / "died-2").exists()


def test_verify_batch_ray_and_local_tables_agree(ray_local, tmp_path, capsys):
    _instances(tmp_path)
    code, out, _ = run(capsys, "verify-batch", tmp_path / "inst.csv", "--workers", "2", "--json")
    local = json.loads(out)
    code, out, _ = run(capsys, "verify-batch", tmp_path / "inst.csv", "--workers", "2", "--json",
                       "--ray", "auto")
    ray_rows = json.loads(out)
    assert code == 0 and ray_rows["run"]["backend"].startswith("ray")
    strip = lambda rows: [(r["model"], r["property"], r["status"]) for r in rows]  # noqa: E731
    assert strip(ray_rows["instances"]) == strip(local["instances"])
    for r in ray_rows["instances"]:
        if r["status"] == "violated":
            from relulab.io import load_model

            y = load_model(r["model"])(np.array(r["counterexample"]))
            assert np.allclose(y, r["output"])


@pytest.mark.parametrize("workers,chunksize", [(1, 3), (2, 4), (3, 20)])
def test_chunks_give_the_same_map(workers, chunksize):
    assert dict(pmap(square, range(11), workers=workers, chunksize=chunksize)) == {i: i * i for i in range(11)}


def test_a_dead_worker_costs_its_chunk_one_attempt(tmp_path):
    got = list(pmap(DieOnce(tmp_path, victim=5), range(9), workers=2, chunksize=3))
    assert sorted(i for i, _ in got) == list(range(9)) and dict(got) == {i: 10 * i for i in range(9)}
    assert (tmp_path / "died-5").exists()
    got = dict(pmap(always_dies, range(6), workers=2, retries=0, chunksize=2))
    assert got[0]["status"] == "error" and got[1]["status"] == "error"   # the chunk of item 1
    assert {k: v for k, v in got.items() if k > 1} == {2: 2, 3: 3, 4: 4, 5: 5}


# ------------------------------------------------------------------ Ray worker actors
def worker_pid(x):
    return os.getpid()


class CountsUnpickling:
    """A function that leaves a file in ``folder`` each time it is unpickled (a stand-in for
    a model sent to the workers)."""

    def __init__(self, folder):
        self.folder = str(folder)

    def __setstate__(self, state):
        self.__dict__.update(state)
        open(os.path.join(self.folder, f"unpickled-{os.getpid()}-{time.time_ns()}"), "w").close()

    def __call__(self, x):
        return x + 1


def test_ray_runs_on_the_same_long_lived_workers(ray_local):
    first = set(dict(pmap(worker_pid, range(20), backend="ray", workers=2)).values())
    second = set(dict(pmap(worker_pid, range(20), backend="ray", workers=2)).values())
    assert len(first) == 2 and first == second              # exactly two processes, kept
    assert os.getpid() not in first


def test_ray_sends_the_function_once_per_worker_per_map(ray_local, tmp_path):
    got = dict(pmap(CountsUnpickling(tmp_path), range(30), backend="ray", workers=2))
    assert got == {i: i + 1 for i in range(30)}
    assert 1 <= len(list(tmp_path.iterdir())) <= 2           # not once per item


def test_ray_item_that_always_kills_its_worker_is_reported_and_the_rest_complete(ray_local):
    got = dict(pmap(always_dies, range(6), backend="ray", workers=2, retries=1))
    assert {k: v for k, v in got.items() if k != 1} == {0: 0, 2: 2, 3: 3, 4: 4, 5: 5}
    assert got[1]["status"] == "error" and "died 2 times" in got[1]["reason"]
    # the workers were restarted: the next map runs normally on two processes
    assert len(set(dict(pmap(worker_pid, range(8), backend="ray", workers=2)).values())) == 2


def test_ray_interrupt_ends_the_map_with_what_finished(ray_local):
    got = dict(pmap(interrupt_at_3, range(40), backend="ray", workers=2))
    assert 3 not in got and all(v == k for k, v in got.items())
    assert dict(pmap(square, range(5), backend="ray", workers=2)) == {i: i * i for i in range(5)}


def slow_identity(x):
    time.sleep(0.2)
    return x


@pytest.mark.parametrize("backend", ["local", "ray"])
def test_ctrl_c_in_the_driver_stops_the_map_and_keeps_what_finished(backend, request):
    """SIGINT to the driver while items run (as Ctrl-C): the map ends early and quietly
    with correct results for what finished; the next map runs normally."""
    import signal
    import threading

    if backend == "ray":
        request.getfixturevalue("ray_local")
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        got = dict(pmap(slow_identity, range(60), backend=backend, workers=2))
    finally:
        timer.cancel()
    assert len(got) < 60 and all(v == k for k, v in got.items())
    assert dict(pmap(square, range(4), backend=backend, workers=2)) == {i: i * i for i in range(4)}


def test_stop_ray_workers_frees_their_cpus(ray_local):
    from relulab.parallel import stop_ray_workers

    dict(pmap(square, range(3), backend="ray", workers=2))
    assert ray_local.available_resources().get("CPU", 0) == 0       # held between maps
    assert stop_ray_workers() == 2
    deadline = time.time() + 30
    while ray_local.available_resources().get("CPU", 0) < 2 and time.time() < deadline:
        time.sleep(0.2)
    assert ray_local.available_resources().get("CPU", 0) == 2
    assert dict(pmap(square, range(4), backend="ray", workers=2)) == {i: i * i for i in range(4)}


def niceness(_):
    return os.nice(0)


def test_ray_workers_run_at_the_drivers_priority(ray_local):
    """Ray would start its workers 15 steps nicer than the driver; the local pool's run at
    the driver's priority, and so do relulab's Ray workers (a Ray started by start_ray)."""
    assert set(dict(pmap(niceness, range(4), backend="ray", workers=2)).values()) == {os.nice(0)}


class HoldsACpu:
    def ping(self):
        return os.getpid()


def test_ray_map_runs_on_the_workers_that_could_start(ray_local, monkeypatch):
    """Another job holds one of the two CPUs: the map does not wait for the second worker
    (which would start only when the CPU frees) but runs everything on the first."""
    import relulab.parallel as P

    P.stop_ray_workers()
    deadline = time.time() + 30
    while ray_local.available_resources().get("CPU", 0) < 2 and time.time() < deadline:
        time.sleep(0.2)
    blocker = ray_local.remote(num_cpus=1)(HoldsACpu).remote()
    ray_local.get(blocker.ping.remote())
    monkeypatch.setattr(P, "_WORKERS_WAIT_S", 1.0)
    try:
        got = dict(pmap(worker_pid, range(10), backend="ray", workers=2))
        assert len(got) == 10 and len(set(got.values())) == 1
    finally:
        ray_local.kill(blocker)
    # the second worker starts once the CPU is free, and the next map uses both
    monkeypatch.setattr(P, "_WORKERS_WAIT_S", 60.0)
    assert len(set(dict(pmap(worker_pid, range(20), backend="ray", workers=2)).values())) == 2


def test_sweep_resumes_after_a_torn_last_line(tmp_path):
    """A driver killed while writing leaves a last line without its newline: resuming
    cuts it off and runs that parameter set again; a bad line elsewhere is an error."""
    from relulab.errors import RelulabError

    path = tmp_path / "runs.jsonl"
    sweep(pow, {"base": [2, 3], "exp": [2]}, path, workers=1)
    with open(path, "a") as fh:
        fh.write('{"params": {"base": 4, "exp"')
    rows = sweep(pow, {"base": [2, 3, 4], "exp": [2]}, path, workers=1)
    assert sorted(r["result"] for r in rows) == [4, 9, 16]
    assert [json.loads(line)["result"] for line in path.read_text().splitlines()] == [4, 9, 16]
    path.write_text('{"params": {"base": 2, "exp": 2}, "result": 4}\nnot json\n')
    with pytest.raises(RelulabError, match="line 2"):
        sweep(pow, {"base": [2], "exp": [2]}, path, workers=1)


def test_resolve_backend_refuses_an_unknown_ray_value():
    from relulab.errors import RelulabError

    assert resolve_backend("auto") == ("ray", "auto")
    with pytest.raises(RelulabError, match="--ray must be"):
        resolve_backend("bogus")


def test_worker_counts_beyond_the_cap_are_refused():
    from relulab.errors import RelulabError
    from relulab.parallel import MAX_WORKERS, pmap

    with pytest.raises(RelulabError, match=f"between 1 and {MAX_WORKERS}"):
        list(pmap(len, ["a"], workers=MAX_WORKERS + 1))
    assert list(pmap(len, ["ab"], workers=1)) == [(0, 2)]


def test_a_results_file_whose_last_row_lacks_its_newline_stays_readable(tmp_path):
    # a writer stopped just before "\n" left a whole last row; the next append joined two
    # rows on one line and the following read failed
    import json

    from relulab.results import read_json_lines

    p = tmp_path / "rows.jsonl"
    p.write_text('{"a": 1}\n{"a": 2}')
    assert read_json_lines(p, "rows") == [{"a": 1}, {"a": 2}]
    with open(p, "a") as fh:
        fh.write(json.dumps({"a": 3}) + "\n")
    assert read_json_lines(p, "rows") == [{"a": 1}, {"a": 2}, {"a": 3}]
    p.write_text('{"a": 1}\n{"a": ')  # a torn row is still cut off
    assert read_json_lines(p, "rows") == [{"a": 1}] and p.read_text() == '{"a": 1}\n'


class MemoryErrorOnce:
    """Raises MemoryError the first time it sees ``victim`` (a marker file remembers); with
    ``always`` every time."""

    def __init__(self, folder, victim, always=False):
        self.folder, self.victim, self.always = str(folder), victim, always

    def __call__(self, x):
        marker = os.path.join(self.folder, f"oom-{x}")
        if x == self.victim and (self.always or not os.path.exists(marker)):
            open(marker, "w").close()
            raise MemoryError("simulated")
        time.sleep(0.05)
        return x * 10


@pytest.mark.parametrize("workers", [1, 2])
def test_an_item_out_of_memory_costs_only_that_item(tmp_path, workers):
    # a MemoryError raised in a worker was re-raised by the driver: the whole map ended,
    # and 4 of 6 items were lost
    got = dict(pmap(MemoryErrorOnce(tmp_path, victim=2, always=True), range(6), workers=workers))
    assert sorted(got) == list(range(6)) and all(got[i] == 10 * i for i in range(6) if i != 2)
    assert "out of memory (MemoryError: simulated)" in str(got[2])
    # retried first (in a pool by a fresh worker): a passing shortage costs nothing
    (tmp_path / "x").mkdir()
    again = dict(pmap(MemoryErrorOnce(tmp_path / "x", victim=3), range(6), workers=workers))
    assert again == {i: 10 * i for i in range(6)}


def test_resume_runs_again_the_instances_whose_worker_died(tmp_path, capsys):
    # aud_cli6 #5: a row "worker process died 3 times" (an OOM kill, a lost node) was
    # never retried by --resume; sweep likewise kept it as done
    n, full, res = _full_batch(tmp_path, capsys)
    rows = [json.loads(s) for s in res.read_text().splitlines()]
    lost = dict(rows[0], status="error", result="error", reason="worker process died 3 times")
    res.write_text("\n".join(json.dumps(r) for r in [lost, *rows[1:]]) + "\n")
    code, out, _ = run(capsys, "verify-batch", tmp_path / "inst.csv", "--json", "--results", res, "--resume")
    d = json.loads(out)
    assert code == 0 and d["run"]["resumed"] == n - 1
    assert [r["status"] for r in d["instances"]] == [r["status"] for r in full["instances"]]
    # sweep: the same for a row whose result is a dead worker's error
    out_file = tmp_path / "sweep.jsonl"
    out_file.write_text(json.dumps({"params": {"a": 1}, "result": {"status": "error",
                                    "reason": "worker process died 2 times"}}) + "\n"
                        + json.dumps({"params": {"a": 2}, "result": 4}) + "\n")
    rows = sweep(square_a, {"a": [1, 2]}, out_file, resume=True, workers=1)
    last = [json.loads(s) for s in out_file.read_text().splitlines()][-1]
    assert last == {"params": {"a": 1}, "result": 1}
    # the answer holds each point once: the dead worker's row is replaced, not kept beside
    assert sorted((r["params"]["a"], r["result"]) for r in rows) == [(1, 1), (2, 4)]


def square_a(a):
    return a * a


def test_a_ray_address_where_nothing_listens_is_refused_at_once():
    # aud_cli6 #2: Ray retried for good (still waiting after 280 s)
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'relulab[ray]')")
    from relulab.errors import RelulabError
    from relulab.parallel import _check_reachable, start_ray

    with pytest.raises(RelulabError, match="no Ray cluster answered there"):
        _check_reachable("127.0.0.1:1")
    if not ray.is_initialized():   # (a Ray this test process started already is used as it is)
        with pytest.raises(RelulabError, match="no Ray cluster answered there"):
            start_ray("127.0.0.1:1")


_TERM_DRIVER = """
import os, sys, time
from relulab.parallel import pmap

def slow(i):
    open(os.path.join(sys.argv[1], f"w{os.getpid()}"), "w").close()
    time.sleep(120)
    return i

for _ in pmap(slow, range(4), workers=2):
    pass
"""


def test_sigterm_to_the_driver_stops_its_workers(tmp_path):
    # aud_cli6 #3: a driver ended by SIGTERM (a scheduler, `kill PID`) left its workers
    # running as orphans for minutes
    import signal
    import subprocess

    script = tmp_path / "driver.py"
    script.write_text(_TERM_DRIVER)
    p = subprocess.Popen([sys.executable, str(script), str(tmp_path)])
    try:
        deadline = time.time() + 60
        while len(list(tmp_path.glob("w*"))) < 2 and time.time() < deadline:
            time.sleep(0.1)
        pids = [int(f.name[1:]) for f in tmp_path.glob("w*")]
        assert len(pids) == 2
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)

        def alive(pid: int) -> bool:
            try:
                state = open(f"/proc/{pid}/status").read().split("State:")[1].split()[0]
            except (FileNotFoundError, IndexError):
                return False
            return state not in ("Z", "X")   # a zombie has ended

        deadline = time.time() + 20
        while any(alive(q) for q in pids) and time.time() < deadline:
            time.sleep(0.1)
        assert not any(alive(q) for q in pids)
    finally:
        if p.poll() is None:
            p.kill()
