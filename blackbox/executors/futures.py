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
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import pickle
import uuid
from typing import Any

from .._validate import check_choice, check_int
from ..core.problem import Problem
from ..core.rows import Rows, Shared
from ..errors import ConfigError, StateError, WorkerError
from .pool import PoolExecutor, WorkerLost
from .wire import pickle_problem
from .worker import Outcome, WorkerCache, evaluate_task, limit_threads, thread_env

__all__ = ["FuturesExecutor"]

KINDS = ("process", "thread")

_cache = WorkerCache()


def _init_process(threads: int | None) -> None:
    """Initializer of pool processes made here: cap native threads before any evaluation."""
    os.environ.update(thread_env(threads))
    limit_threads(threads)


def _process_main(token: str, problem_bytes: bytes, shared: Shared, rows: Rows, threads: int | None,
                  batch_size: int | None) -> Outcome:
    """A task in another process (or machine): everything it needs comes with it."""
    return evaluate_task(_cache, token, rows, lambda: pickle.loads(problem_bytes), lambda: shared,
                         key=shared.number, threads=threads, batch_size=batch_size, dumps=pickle.dumps)


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
        self._user_pool = pool
        self._pool: cf.Executor | None = pool
        self._token = ""
        self._problem_bytes = b""

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

    def close(self) -> None:
        if self._user_pool is None and self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        super().close()

    # -- the transport (see PoolExecutor) --------------------------------------------------------
    def _chunks(self, rows: int) -> int:
        return min(rows, self._workers * self.chunks_per_worker)

    def _submit(self, shared: Shared, rows: Rows) -> tuple[cf.Future, Any]:
        pool = self._pool
        if pool is None:
            raise StateError("FuturesExecutor has no pool before start(problem)")
        try:
            if self.in_process:
                return pool.submit(_thread_main, self._token, self._problem_bytes, shared, rows, self.batch_size), pool
            self.stats.task_bytes += len(self._problem_bytes) + shared.nbytes + rows.nbytes
            return pool.submit(_process_main, self._token, self._problem_bytes, shared, rows, self.threads,
                               self.batch_size), pool
        except (cf.BrokenExecutor, RuntimeError) as exc:
            raise WorkerLost(pool, exc) from exc

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
