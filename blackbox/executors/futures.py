"""Evaluate through any ``concurrent.futures.Executor``: thread or process pools, Dask, mpi4py.

From Python, hand over the pool you already have::

    from concurrent.futures import ThreadPoolExecutor
    bb.optimize(es, problem, FuturesExecutor(ThreadPoolExecutor(8)))

    from dask.distributed import Client                  # a Dask cluster
    client = Client("scheduler:8786")
    bb.optimize(es, problem, FuturesExecutor(client.get_executor(), workers=64))

    from mpi4py.futures import MPIPoolExecutor           # mpiexec -n 65 python -m mpi4py.futures run.py
    with MPIPoolExecutor() as pool:
        bb.optimize(es, problem, FuturesExecutor(pool, workers=64))

From a spec string (the command line), the adapter makes its own pool:
``futures:kind=thread,workers=4`` or ``futures:kind=process,workers=4``.

A pool that is not ours gives no way to address one worker, so every task is self-contained: it
carries the run's problem (a small recipe, as cloudpickle bytes made once per run: a stdlib pool
could not ship a notebook's class otherwise), the generation's shared part (center, state) and
its rows. Workers still build the problem and install the state once per run and generation
(a thread-local cache, so each thread of a thread pool or a Dask worker has its own problem). For
seed-only traffic use ``loky`` on one machine or the ``ray`` plugin across machines. Thread pools
share memory: nothing is pickled except one copy of the problem per thread.

A pool made here is replaced when one of its processes dies, and the rows in flight run again;
a pool you pass in is yours: when it breaks, the run stops with a WorkerError (Dask reschedules
tasks of lost workers on its own).

Bounds, for a pool made here: at most 4 workers per core unless ``oversubscribe=true``; with
``kind="process"``, ``timeout`` kills the process of a task that runs longer (its rows are then
retried one per task to find the hung ones, which raise or score -inf as ``on_timeout`` says, as
in loky), Ctrl-C kills the processes at once, and each process exits by itself within a second
once the driver is gone. A thread cannot be killed, and a pool you pass in is yours, so neither
takes a ``timeout``.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import pickle
import queue
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeAlias, TypeVar

from .._validate import check_choice, check_float, check_int
from ..core.problem import Problem
from ..core.rows import Rows, Shared
from ..errors import ConfigError, StateError, WorkerError
from .bounds import check_worker_count, quiet_resource_tracker, start_worker
from .markers import kill_overdue, mark_finished, mark_started, marker_file
from .pool import PoolExecutor, WorkerLost
from .shm import RunDirectory
from .wire import pickle_problem
from .worker import Outcome, WorkerCache, evaluate_task, limit_threads, thread_env

__all__ = ["FuturesExecutor"]

KINDS = ("process", "thread")

_cache = WorkerCache()


def _init_process(threads: int | None, driver: int | None = None) -> None:
    """Initializer of pool processes made here: cap native threads before any evaluation, leave
    Ctrl-C to the driver, and exit once the driver (pid ``driver``) is gone."""
    os.environ.update(thread_env(threads))
    limit_threads(threads)
    start_worker(driver)


def _process_main(token: str, problem_bytes: bytes, shared: Shared, rows: Rows, threads: int | None,
                  batch_size: int | None, marker: str | None = None) -> Outcome:
    """A task in another process (or machine): everything it needs comes with it. ``marker``: the
    start marker to write (a pool made here, with a timeout)."""
    path = None if marker is None else Path(marker)
    outcome = evaluate_task(_cache, token, rows, lambda: pickle.loads(problem_bytes), lambda: shared,
                            key=shared.number, threads=threads, batch_size=batch_size, dumps=pickle.dumps,
                            before=None if path is None else (lambda: mark_started(path)))
    if path is not None:
        mark_finished(path)
    return outcome


def _thread_main(token: str, problem_bytes: bytes, shared: Shared, rows: Rows, batch_size: int | None) -> Outcome:
    """A task in a thread of this process: objects are shared, each thread has its own problem."""
    return evaluate_task(_cache, token, rows, lambda: pickle.loads(problem_bytes), lambda: shared,
                         key=shared.number, batch_size=batch_size, dumps=None)


class FuturesExecutor(PoolExecutor):
    """Any ``concurrent.futures.Executor`` (yours, or a thread/process pool made from a spec).

    ``pool``: an executor you own (it is not shut down by ``close()``); or None to make one of
    ``kind`` ``"process"`` (default) or ``"thread"`` with ``workers`` workers.
    ``workers``: how many tasks run at once (default: the pool's ``_max_workers``, else the cores).
    ``chunks_per_worker``: tasks per worker and generation (each carries the center, so few).
    ``threads``: native threads per process of a pool made here (default 1).
    ``max_retries``: re-runs of rows lost with a dead process of a pool made here.
    ``timeout``: seconds a process of a pool made here (``kind="process"``) may spend on one task
    before it is killed; ``on_timeout``: ``"error"`` or ``"worst"``, as in loky.
    ``oversubscribe``: allow a pool made here more than 4 workers per core.
    """

    name = "futures"
    died = "a pool process died"

    def __init__(
        self,
        pool: cf.Executor | None = None,
        *,
        kind: str | None = None,
        workers: int | None = None,
        chunks_per_worker: int = 2,
        threads: int | None = 1,
        max_retries: int = 3,
        batch_size: int | None = None,
        timeout: float | None = None,
        on_timeout: str = "error",
        oversubscribe: bool = False,
    ):
        super().__init__()
        if pool is not None and not isinstance(pool, cf.Executor) and not hasattr(pool, "submit"):
            raise ConfigError(
                f"pool must be a concurrent.futures.Executor (or have submit()), got {type(pool).__name__}"
            )
        if pool is not None and kind is not None:
            raise ConfigError("pass either pool= (your executor) or kind= (one made here), not both")
        self.kind = None if pool is not None else check_choice("kind", kind or "process", KINDS)
        if workers is None:
            workers = getattr(pool, "_max_workers", None) or os.cpu_count() or 1
        self._workers = check_int("workers", workers, minimum=1)
        if pool is None:
            check_worker_count(f"futures:kind={self.kind}", self._workers, bool(oversubscribe),
                               "threads" if self.kind == "thread" else "processes")
        self.oversubscribe = bool(oversubscribe)
        self.timeout = None if timeout is None else check_float("timeout", timeout, positive=True)
        self.on_timeout = check_choice("on_timeout", on_timeout, ("error", "worst"))
        if self.timeout is not None and (pool is not None or self.kind != "process"):
            raise ConfigError(
                "futures:timeout needs a pool whose workers blackbox can stop: kind=process (a thread cannot "
                "be killed, and a pool you pass in is yours); use loky:timeout=... otherwise"
            )
        self.chunks_per_worker = check_int("chunks_per_worker", chunks_per_worker, minimum=1)
        self.threads = None if threads is None else check_int("threads", threads, minimum=1)
        self.max_retries = check_int("max_retries", max_retries, minimum=0)
        self.batch_size = None if batch_size is None else check_int("batch_size", batch_size, minimum=1)
        self._user_pool = pool
        self._pool: cf.Executor | None = pool
        self._token = ""
        self._problem_bytes = b""
        self._markers_dir: RunDirectory | None = None  # start markers, with a timeout
        self._task_ids = 0
        self._markers: dict[cf.Future[Outcome], int] = {}

    def __repr__(self) -> str:
        what = type(self._user_pool).__name__ if self._user_pool is not None else f"kind={self.kind!r}"
        return f"FuturesExecutor({what}, workers={self._workers})"

    @property
    def workers(self) -> int:
        return self._workers

    @property
    def in_process(self) -> bool:
        """True when tasks run in threads of this process (nothing needs pickling)."""
        pool = self._user_pool
        return isinstance(pool, cf.ThreadPoolExecutor) if pool is not None else self.kind == "thread"

    def _make_pool(self) -> cf.Executor:
        if self.kind == "thread":
            return DaemonThreadPool(self._workers)
        quiet_resource_tracker()  # before multiprocessing starts its tracker with this process's flags
        return cf.ProcessPoolExecutor(
            self._workers, mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_process, initargs=(self.threads, os.getpid()),
        )

    def start(self, problem: Problem) -> None:
        problem_bytes = pickle_problem(problem)
        super().start(problem)
        if self._pool is None:
            self._pool = self._make_pool()
        self._token = uuid.uuid4().hex
        self._problem_bytes = problem_bytes
        self.stats.problem_bytes += len(self._problem_bytes)
        if self.timeout is not None and self._markers_dir is None:
            self._markers_dir = RunDirectory()

    def close(self) -> None:
        if self._user_pool is None and self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._markers_dir is not None:
            self._markers_dir.cleanup()
            self._markers_dir = None
        super().close()

    # -- the transport (see PoolExecutor) --------------------------------------------------------
    def _chunks(self, rows: int) -> int:
        return min(rows, self._workers * self.chunks_per_worker)

    def _submit(self, shared: Shared, rows: Rows) -> tuple[cf.Future[Outcome], object]:
        pool = self._pool
        if pool is None:
            raise StateError("FuturesExecutor has no pool before start(problem)")
        try:
            if self.in_process:
                return pool.submit(_thread_main, self._token, self._problem_bytes, shared, rows, self.batch_size), pool
            self.stats.task_bytes += len(self._problem_bytes) + shared.nbytes + rows.nbytes
            marker = None
            if self._markers_dir is not None:
                self._task_ids += 1
                marker = str(marker_file(self._markers_dir.path, self._task_ids))
            future = pool.submit(_process_main, self._token, self._problem_bytes, shared, rows, self.threads,
                                 self.batch_size, marker)
        except (cf.BrokenExecutor, RuntimeError) as exc:
            raise WorkerLost(pool, exc) from exc
        if marker is not None:
            self._markers[future] = self._task_ids
        return future, pool

    def _released(self, future: cf.Future[Outcome]) -> None:
        self._markers.pop(future, None)

    def _retract(self, shared: Shared) -> None:
        self._markers.clear()

    def _overdue(self, running: list[cf.Future[Outcome]]) -> list[cf.Future[Outcome]]:
        """Kill the process of every task running longer than the timeout; return those tasks."""
        if self._markers_dir is None:
            return []
        return kill_overdue(self._markers_dir.path, self._markers, running, float(self.timeout or 0.0))

    def _interrupted(self, running: list[cf.Future[Outcome]]) -> None:
        """Ctrl-C or an exit during a generation: no evaluation may keep the command alive."""
        pool = self._pool
        if pool is None or self._user_pool is not None:
            return
        self._pool = None
        if isinstance(pool, cf.ProcessPoolExecutor):
            # Its manager thread fails every pending future once it sees the killed workers; a future
            # cancelled here as well makes Python 3.11's manager thread raise InvalidStateError and
            # print a traceback (CPython guards that call only from 3.12 on), so none is cancelled.
            _kill_processes(pool)
            pool.shutdown(wait=False, cancel_futures=False)
            return
        pool.shutdown(wait=False, cancel_futures=True)

    def _is_lost(self, error: BaseException) -> bool:
        return isinstance(error, cf.BrokenExecutor)

    def _received(self, outcome: Outcome) -> None:
        outcome.meta["shared_bytes"] = 0  # it travelled inside the task, already counted
        if not self.in_process:
            self.stats.result_bytes += outcome.nbytes

    def _could_not_run(self, rows: Rows, error: BaseException) -> WorkerError:
        return WorkerError(f"the pool could not run rows {rows.spans()}: {type(error).__name__}: {error}")

    def _replace(self, domain: Any, cause: BaseException, outstanding: list[Rows]) -> None:
        """Replace a broken pool made here; a pool you passed in is yours: the run stops."""
        if self._user_pool is not None:
            index = [int(i) for rows in outstanding for i in rows.index]
            raise WorkerError(
                f"the executor you passed ({type(self._user_pool).__name__}) broke while evaluating rows "
                f"{min(index)}..{max(index)}: {cause}. Pass a new one, or use a pool that "
                f"replaces lost workers (loky, Dask, the ray plugin)"
            ) from cause
        if self._pool is domain:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = self._make_pool()


def _kill_processes(pool: cf.ProcessPoolExecutor) -> None:
    """SIGKILL every process of ``pool`` (Python 3.14 has ``kill_workers()``; before, its process table)."""
    kill = getattr(pool, "kill_workers", None)
    if callable(kill):
        kill()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        try:
            process.kill()
        except (OSError, ValueError):  # already gone, or closed
            pass


P = ParamSpec("P")
R = TypeVar("R")
#: A call waiting in DaemonThreadPool's queue: its future, the function and its arguments.
_Call: TypeAlias = "tuple[cf.Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]"


class DaemonThreadPool(cf.Executor):
    """The thread pool of ``futures:kind=thread``: like ``ThreadPoolExecutor``, but its threads are
    daemons. A thread hung in an evaluation cannot be stopped; it must not keep the program alive
    after Ctrl-C (the interpreter waits for every thread of a ``ThreadPoolExecutor`` at exit)."""

    def __init__(self, workers: int):
        self._max_workers = workers
        self._queue: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False
        self._threads = [threading.Thread(target=self._work, name=f"blackbox-{i}", daemon=True)
                         for i in range(workers)]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> cf.Future[R]:
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new futures after shutdown")
            future: cf.Future[R] = cf.Future()
            self._queue.put((future, fn, args, kwargs))
            return future

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            future, fn, args, kwargs = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
                future.set_exception(exc)
            else:
                future.set_result(result)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if cancel_futures:
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    item[0].cancel()
        for _ in self._threads:
            self._queue.put(None)
        if wait:
            for thread in self._threads:
                thread.join()
