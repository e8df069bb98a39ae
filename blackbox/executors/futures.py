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
carries the run's problem (a small recipe), the generation's broadcast (center, state) and its
compact rows. Workers still build the problem and install the state once per run and generation
(a thread-local cache, so each thread of a thread pool or a Dask worker has its own problem). For
seed-only traffic use ``loky`` on one machine or the ``ray`` plugin across machines. Thread pools
share memory: nothing is pickled except one copy of the problem per thread.

A pool made here is replaced when one of its processes dies, and the rows in flight run again;
a pool you pass in is yours: when it breaks, the run stops with a WorkerError (Dask reschedules
tasks of lost workers on its own).
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import pickle
import uuid
from typing import Any

import numpy as np

from .._validate import check_choice, check_int
from ..core.executor import Executor
from ..core.population import Population
from ..core.problem import EvalResult, Problem
from ..errors import ConfigError, WorkerError
from .wire import (
    Broadcast,
    DispatchStats,
    Task,
    WorkerCache,
    decode_outcome,
    encode_outcome,
    join_results,
    limit_threads,
    pickle_problem,
    run_task,
    split_generation,
    thread_env,
)

__all__ = ["FuturesExecutor"]

KINDS = ("process", "thread")

_cache = WorkerCache()


def _init_process(threads: int | None) -> None:
    """Initializer of pool processes made here: cap native threads before any evaluation."""
    os.environ.update(thread_env(threads))
    limit_threads(threads)


def _process_main(payload: bytes) -> bytes:
    """A task in another process (or machine): everything it needs is in ``payload``."""
    token, problem_bytes, broadcast, packed, threads, batch_size = pickle.loads(payload)
    task = Task.unpack(packed)
    outcome = run_task(
        _cache, token, task, lambda: pickle.loads(problem_bytes), lambda: broadcast, threads, batch_size,
        key=(task.number, broadcast.dense_start),
    )
    return encode_outcome(outcome)


def _thread_main(token: str, problem_bytes: bytes, broadcast: Broadcast, task: Task, batch_size: int | None):
    """A task in a thread of this process: objects are shared, each thread has its own problem."""
    return run_task(_cache, token, task, lambda: pickle.loads(problem_bytes), lambda: broadcast, None, batch_size)


class FuturesExecutor(Executor):
    """Any ``concurrent.futures.Executor`` (yours, or a thread/process pool made from a spec).

    ``pool``: an executor you own (it is not shut down by ``close()``); or None to make one of
    ``kind`` ``"process"`` (default) or ``"thread"`` with ``workers`` workers.
    ``workers``: how many tasks run at once (default: the pool's ``_max_workers``, else the cores).
    ``chunks_per_worker``: tasks per worker and generation (each carries the center, so few).
    ``threads``: native threads per process of a pool made here (default 1).
    ``max_retries``: re-runs of rows lost with a dead process of a pool made here.
    """

    name = "futures"

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
        self.chunks_per_worker = check_int("chunks_per_worker", chunks_per_worker, minimum=1)
        self.threads = None if threads is None else check_int("threads", threads, minimum=1)
        self.max_retries = check_int("max_retries", max_retries, minimum=0)
        self.batch_size = None if batch_size is None else check_int("batch_size", batch_size, minimum=1)
        self.stats = DispatchStats()
        self._user_pool = pool
        self._pool: cf.Executor | None = pool
        self._token = ""
        self._problem_bytes = b""
        self._number = 0

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
            return cf.ThreadPoolExecutor(self._workers, thread_name_prefix="blackbox")
        return cf.ProcessPoolExecutor(
            self._workers, mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_process, initargs=(self.threads,),
        )

    def start(self, problem: Problem) -> None:
        problem_bytes = pickle_problem(problem)
        super().start(problem)
        if self._pool is None:
            self._pool = self._make_pool()
        self._token = uuid.uuid4().hex
        self._problem_bytes = problem_bytes
        self.stats.problem_bytes += len(self._problem_bytes)
        self._number = 0

    def close(self) -> None:
        if self._user_pool is None and self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        super().close()

    def evaluate(
        self, population: Population, seeds: np.ndarray, state: dict[str, Any] | None = None
    ) -> EvalResult:
        self._require_started()
        self._number += 1
        n_chunks = min(len(population), self._workers * self.chunks_per_worker)
        broadcast, tasks = split_generation(self._number, population, seeds, state, n_chunks)
        self.stats.generations += 1
        self.stats.broadcast_bytes += broadcast.nbytes
        results: dict[int, EvalResult] = {}
        todo = tasks
        while todo:
            broken = self._run(todo, broadcast, results)
            todo = [t for t in todo if t.start not in results]
            if todo:
                self._recover(todo, broken)
        return join_results(results)

    def _submit(self, task: Task, broadcast: Broadcast) -> cf.Future:
        self.stats.tasks += 1
        if self.in_process:
            return self._pool.submit(_thread_main, self._token, self._problem_bytes, broadcast, task,
                                     self.batch_size)
        payload = pickle.dumps(
            (self._token, self._problem_bytes, broadcast.for_task(task), task.pack(), self.threads,
             self.batch_size), protocol=5,
        )
        self.stats.task_bytes += len(payload)
        return self._pool.submit(_process_main, payload)

    def _run(self, tasks: list[Task], broadcast: Broadcast, results: dict[int, EvalResult]):
        """Submit and collect; returns the pool's failure if it broke (None otherwise)."""
        submitted: dict[cf.Future, Task] = {}
        broken = None
        try:
            for task in tasks:
                submitted[self._submit(task, broadcast)] = task
        except (cf.BrokenExecutor, RuntimeError) as exc:
            broken = exc
        waiting = set(submitted)
        try:
            while waiting:
                done, waiting = cf.wait(waiting, return_when=cf.FIRST_COMPLETED)
                for future in done:
                    task = submitted[future]
                    error = future.exception()
                    if isinstance(error, cf.BrokenExecutor):
                        broken = error
                        continue
                    if error is not None:
                        raise WorkerError(
                            f"the pool could not run rows {task.start}..{task.stop - 1}: "
                            f"{type(error).__name__}: {error}"
                        ) from error
                    data = future.result()
                    if isinstance(data, bytes):
                        self.stats.result_bytes += len(data)
                    result, meta = decode_outcome(data, task, "futures")
                    meta["broadcast_bytes"] = 0  # it travelled inside the task, already counted
                    self.stats.record(meta)
                    results[task.start] = result
        except BaseException:
            for future in waiting:
                future.cancel()
            raise
        return broken

    def _recover(self, todo: list[Task], broken: BaseException | None) -> None:
        """Replace a broken pool made here and count an attempt for the rows lost with it."""
        if self._user_pool is not None:
            raise WorkerError(
                f"the executor you passed ({type(self._user_pool).__name__}) broke while evaluating rows "
                f"{todo[0].start}..{todo[-1].stop - 1}: {broken}. Pass a new one, or use a pool that "
                f"replaces lost workers (loky, Dask, the ray plugin)"
            ) from broken
        self.stats.worker_failures += 1
        for task in todo:
            task.attempt += 1
            if task.attempt > self.max_retries:
                raise WorkerError(
                    f"rows {task.start}..{task.stop - 1} were in flight when a pool process died "
                    f"{task.attempt} times (max_retries={self.max_retries}); last failure: {broken}"
                ) from broken
        self.stats.resubmitted += len(todo)
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool = self._make_pool()
