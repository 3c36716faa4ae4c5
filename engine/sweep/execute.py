"""Run a sweep's cases: in this process, in a pool of processes on this machine, or on Dask.

Every way yields one row per case as cases finish (in no particular order; the tables sort by
case id), and no case's failure costs another its row.

``local`` (the default) is the standard library's ``ProcessPoolExecutor`` with the ``spawn``
start method and an initializer that loads the rulebase once per process. Cases go out in small
batches, never more than a few per worker at a time, so a sweep of 100,000 cases never sits in
memory as futures. durable-rules is C: a case that crashes it kills its process, which the pool
reports as ``BrokenProcessPool`` for every batch in flight. Those batches are then run again one
case per process, which finds the case that crashes (an error row naming the signal) and gives
the others their rows; a fresh pool takes the rest. A batch that runs longer than the per-case
timeout times its size is stopped the same way, and its cases are run alone with the timeout.

``dask`` sends the same batches to Dask's ``distributed`` scheduler (``pip install
'gpusizer[dask]'``): a ``LocalCluster`` of ``workers`` processes, or the cluster whose scheduler
``scheduler`` names. A worker that dies is retried by Dask on another; a batch that still fails
is an error row per case. A batch that runs past its time has its worker restarted and its cases
run one per task, so that the case that hangs gets a ``timeout`` row.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from ..errors import InputError
from .worker import Config, Task, init, run_many

BatchFn = Callable[[Config, list[Task]], list[dict[str, Any]]]
Stop = Callable[[], bool]

Row = dict[str, Any]
BATCH_MAX = 16  # cases in one batch at most
IN_FLIGHT = 3  # batches per worker submitted at once
STARTUP_S = 120.0  # a new pool's time to spawn and load the rulebase, before any case can time out


def cpu_count() -> int:
    """The CPUs this process may run on (its affinity, or the cgroup-aware count), at least 1."""
    counter: Callable[[], int | None] | None = getattr(os, "process_cpu_count", None)  # Python 3.13
    if counter is not None:
        return max(1, counter() or 1)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


def batch_size(total: int, workers: int) -> int:
    """Cases per batch: enough to keep messages few, few enough that every worker stays busy to the end."""
    return max(1, min(BATCH_MAX, total // max(1, workers * 8)))


def batches(tasks: Iterable[Task], size: int) -> Iterator[list[Task]]:
    """The tasks in lists of ``size``."""
    batch: list[Task] = []
    for t in tasks:
        batch.append(t)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def failed_row(task: Task, status: str, message: str) -> Row:
    """The row of a case that gave no answer of its own (its worker crashed or hung)."""
    return {
        "case": task.case,
        "key": task.key,
        "status": status,
        "values": {},
        "units": {},
        "error": message,
        "seconds": None,
    }


# -- one machine ---------------------------------------------------------------------------------


def _pool(config: Config, workers: int) -> cf.ProcessPoolExecutor:
    return cf.ProcessPoolExecutor(
        max_workers=workers, mp_context=multiprocessing.get_context("spawn"), initializer=init, initargs=(config,)
    )


def _death(processes: list[Any], patience: float = 30.0) -> str:
    """How a pool's processes ended, for the crash's message (a signal's name when one killed them). A
    process that died is reaped within moments, but on a loaded machine it can take seconds; ``patience``
    seconds in all are given to the processes to be reaped before the cause is left unnamed.
    """
    codes = []
    deadline = time.monotonic() + patience
    for p in processes:
        p.join(max(deadline - time.monotonic(), 0.1))
        code = p.exitcode
        # the broken pool's own thread reaps its processes too: where it reaped this one first, this thread's
        # wait found no child and returned at once, and the exit code is that thread's to set a moment later
        while code is None and time.monotonic() < deadline:
            time.sleep(0.02)
            code = p.exitcode
        if code is not None and code != 0:
            if code < 0:
                try:
                    codes.append(f"killed by {signal.Signals(-code).name}")
                except ValueError:
                    codes.append(f"killed by signal {-code}")
            else:
                codes.append(f"exit code {code}")
    return ", ".join(sorted(set(codes))) or "it ended abruptly"


def _kill(pool: cf.ProcessPoolExecutor) -> None:
    for p in list(getattr(pool, "_processes", {}).values()):
        if p.is_alive():
            p.kill()
    pool.shutdown(wait=True, cancel_futures=True)


def run_alone(config: Config, task: Task, timeout: float, fn: BatchFn = run_many) -> Row:
    """One case in a process of its own: its row, or why the process gave none."""
    pool = _pool(config, 1)
    processes: list[Any] = []
    try:
        # the new process loads the rulebase first; that time does not count against the case
        pool.submit(os.getpid).result()
        processes = list(getattr(pool, "_processes", {}).values())
        return pool.submit(fn, config, [task]).result(timeout=timeout)[0]
    except cf.TimeoutError:
        _kill(pool)
        return failed_row(task, "timeout", _timed_out(timeout))
    except BrokenProcessPool:
        why = _death(processes)
        pool.shutdown(wait=True)
        return failed_row(
            task,
            "crashed",
            f"the worker process running this case died ({why}): a crash in the rule engine's C code; "
            "this is a bug: report it with the case's workload",
        )
    finally:
        pool.shutdown(wait=True)


def run_local(
    config: Config,
    tasks: Iterable[Task],
    workers: int,
    *,
    total: int,
    timeout: float,
    poll: float = 0.2,
    fn: BatchFn = run_many,
    stop: Stop | None = None,
) -> Iterator[Row]:
    """The cases on ``workers`` processes of this machine (see the module's docstring).

    When the pool is lost, the batches that had started (seen running, or lost a second time)
    run again one case per process; those that had not are sent to a fresh pool. When ``stop``
    says so (it is asked at least every ``poll`` seconds), the pool's processes are ended and no
    more rows come.
    """
    size = batch_size(total, workers)
    pending = batches(tasks, size)
    retry: list[list[Task]] = []  # batches lost before they started, for the next pool
    tries: dict[int, int] = {}  # id(batch) -> pools it was lost with
    pool = _pool(config, workers)
    ready: float | None = None  # when the pool gave its first answer (its workers are loaded)
    inflight: dict[cf.Future[list[Row]], list[Any]] = {}  # future -> [batch, first seen running]
    try:
        while True:
            while len(inflight) < workers * IN_FLIGHT:
                batch = retry.pop(0) if retry else next(pending, None)
                if batch is None:
                    break
                inflight[pool.submit(fn, config, batch)] = [batch, None]
            if not inflight:
                return
            done, _ = cf.wait(list(inflight), timeout=poll, return_when=cf.FIRST_COMPLETED)
            if stop is not None and stop():
                _kill(pool)
                return
            now = time.monotonic()
            lost: list[list[Any]] = []
            for future in done:
                entry = inflight.pop(future)
                try:
                    rows = future.result()
                except BrokenProcessPool:
                    lost.append(entry)
                    continue
                ready = ready or now
                yield from rows
            hung: list[list[Any]] = []
            for future, entry in inflight.items():
                if entry[1] is None and future.running():
                    entry[1] = now
                if entry[1] is None:
                    continue
                # a batch is taken as running when it is queued for a worker, which may still be
                # loading the rulebase: its clock starts once the pool has answered (or after STARTUP_S)
                start = max(entry[1], ready) if ready is not None else entry[1] + STARTUP_S
                if now - start > timeout * len(entry[0]):
                    hung.append(entry)
            if not lost and not hung:
                continue
            # the pool is lost, or must be stopped for a case that hangs
            if hung:
                _kill(pool)
            else:
                pool.shutdown(wait=True, cancel_futures=True)
            lost += [e for e in inflight.values() if all(e is not h for h in hung)]
            inflight.clear()
            yield from _recover(config, hung, lost, retry, tries, timeout, fn)
            pool = _pool(config, workers)
            ready = None
    finally:
        for future in inflight:
            future.cancel()
        # a pool with every case answered is idle, and is joined: left to end on its own, its manager thread
        # could close its wake-up pipe before CPython 3.11's exit handler writes to it ("Exception ignored ...
        # Bad file descriptor", seen once at the end of benchmarks/sweep.py); one the caller stopped reading
        # mid-sweep is not waited for
        pool.shutdown(wait=not inflight, cancel_futures=True)


def _recover(
    config: Config,
    hung: list[list[Any]],
    lost: list[list[Any]],
    retry: list[list[Task]],
    tries: dict[int, int],
    timeout: float,
    fn: BatchFn,
) -> Iterator[Row]:
    """The rows of the batches a lost pool held: a hung case times out, a started batch runs one
    case per process, and a batch that had not started goes to the next pool (once).
    """
    for batch, _ in hung:
        if len(batch) == 1:
            yield failed_row(batch[0], "timeout", _timed_out(timeout))
        else:
            for task in batch:
                yield run_alone(config, task, timeout, fn)
    for batch, seen in lost:
        tries[id(batch)] = tries.get(id(batch), 0) + 1
        if seen is None and tries[id(batch)] < 2:
            retry.append(batch)
            continue
        for task in batch:
            yield run_alone(config, task, timeout, fn)


def _timed_out(timeout: float) -> str:
    return f"the case ran longer than {timeout:g} s and was stopped (raise --timeout if it needs longer)"


# -- Dask ----------------------------------------------------------------------------------------


def dask_missing() -> str | None:
    """Why the dask backend cannot run here, or None when it can."""
    try:
        import distributed  # noqa: F401
    except ImportError as exc:
        return f"Dask's distributed is not installed ({exc})"
    return None


def run_dask(
    config: Config,
    tasks: Iterable[Task],
    workers: int,
    *,
    total: int,
    scheduler: str | None,
    timeout: float = 300.0,
    poll: float = 0.5,
    fn: BatchFn = run_many,
    stop: Stop | None = None,
) -> Iterator[Row]:
    """The cases on a Dask cluster: a local one of ``workers`` processes, or ``scheduler``'s.

    A batch is timed from when the scheduler first shows it processing on a worker; one that runs
    longer than the per-case timeout times its size (twice that: a worker may hold one batch queued
    behind the one it runs) has its worker restarted (by its nanny) and its cases sent again one per
    task, so that the case that hangs gets a ``timeout`` row and the others their answers.
    """
    why = dask_missing()
    if why is not None:
        raise InputError(
            f"--backend dask needs Dask: {why}",
            help="install the extra: pip install 'gpusizer[dask]' (or run with --backend local)",
        )
    import importlib

    dd: Any = importlib.import_module("distributed")  # typed loosely: its API is only partly annotated
    Client, LocalCluster = dd.Client, dd.LocalCluster

    cluster = None
    if scheduler:
        client = Client(scheduler, timeout="30s")
        workers = max(1, sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values()))
    else:
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
        )
        client = Client(cluster)
    inflight: dict[Any, list[Any]] = {}  # future -> [batch, first seen processing]
    try:
        pending = batches(tasks, batch_size(total, workers))
        alone: list[Task] = []  # the cases of a batch that was stopped, to run one per task
        while True:
            while len(inflight) < workers * IN_FLIGHT:
                batch = [alone.pop(0)] if alone else next(pending, None)
                if batch is None:
                    break
                inflight[client.submit(fn, config, batch, pure=False)] = [batch, None]
            if not inflight:
                return
            with contextlib.suppress(TimeoutError, getattr(dd, "TimeoutError", TimeoutError)):
                dd.wait(list(inflight), timeout=poll, return_when="FIRST_COMPLETED")
            if stop is not None and stop():
                return
            for future in [f for f in inflight if f.done()]:
                batch = inflight.pop(future)[0]
                try:
                    rows = future.result()
                except Exception as exc:  # KilledWorker, a lost connection: each case of the batch says so
                    rows = [
                        failed_row(t, "crashed", f"the Dask task running this case failed: {type(exc).__name__}: {exc}")
                        for t in batch
                    ]
                yield from rows
            yield from _dask_hung(client, inflight, alone, timeout)
    finally:
        for future in inflight:
            future.cancel()
        client.close()
        if cluster is not None:
            cluster.close()


def _dask_hung(client: Any, inflight: dict[Any, list[Any]], alone: list[Task], timeout: float) -> Iterator[Row]:
    """Stop the batches that run past their time: restart the worker that runs each, give a case that
    ran alone its ``timeout`` row, and queue a larger batch's cases to run alone.
    """
    now = time.monotonic()
    processing = {key: w for w, keys in client.processing().items() for key in keys}
    hung: list[Any] = []
    for future, entry in inflight.items():
        if entry[1] is None and future.key in processing:
            entry[1] = now
        if entry[1] is not None and now - entry[1] > 2 * timeout * len(entry[0]):
            hung.append(future)
    for future in hung:
        batch = inflight.pop(future)[0]
        worker = processing.get(future.key)
        future.cancel()
        if worker is not None:
            # a worker without a nanny cannot be restarted: it stays busy, and the case is still answered
            with contextlib.suppress(Exception):
                client.restart_workers([worker])
        if len(batch) == 1:
            yield failed_row(batch[0], "timeout", _timed_out(timeout))
        else:
            alone.extend(batch)


def execute(
    config: Config,
    tasks: Iterable[Task],
    *,
    total: int,
    workers: int,
    backend: str = "local",
    scheduler: str | None = None,
    timeout: float = 300.0,
    fn: BatchFn = run_many,
    stop: Stop | None = None,
) -> Iterator[Row]:
    """One row per case, as cases finish. ``workers=0`` runs them in this process. ``fn`` runs a
    batch where the cases run (a module-level function, so that it pickles by name). ``stop``,
    asked between rows (and while the local pool works), ends the run early: the cases not yet
    answered get no row.
    """
    if backend == "dask":
        return run_dask(
            config, tasks, max(1, workers), total=total, scheduler=scheduler, timeout=timeout, fn=fn, stop=stop
        )
    if workers <= 0:
        return _inline(config, tasks, fn, stop)
    return run_local(config, tasks, workers, total=total, timeout=timeout, fn=fn, stop=stop)


def _inline(config: Config, tasks: Iterable[Task], fn: BatchFn, stop: Stop | None) -> Iterator[Row]:
    for t in tasks:
        if stop is not None and stop():
            return
        yield from fn(config, [t])
