"""Evaluate in worker processes on this machine with loky's reusable executor.

What crosses the process boundary, and how often:

- the problem: once per worker per run. It is written once to a private folder in shared memory
  (``/dev/shm``) and each worker reads it on its first task of the run, keeping it (and whatever it
  builds lazily: environments, networks) until the run ends;
- the generation's shared part (base vectors, sigma, noise table ``(size, seed)``, the problem's
  state as plain data): written once per generation to the same folder and mapped by each worker
  on its first task of the generation; arrays are read in place, never copied over;
- each task: a set of rows (offsets, signs, parents, seed groups, seeds: 33 bytes a row; a dense
  population's row values); each result: fitness, steps and per-row info.

The noise table is a memory-mapped cache file (``blackbox/core/noise.py``), so all workers share its
pages. Rows are split into a few chunks per worker, cut between mirrored pairs, and workers pull
chunks as they finish (load balance); when every row takes as many steps (HalfCheetah's fixed
1,000), one chunk per worker is already balanced and nobody waits at the generation's end. Workers run with torch, OpenMP and BLAS capped at ``threads``
threads (default 1) so that ``workers`` processes do not oversubscribe the cores.

Faults (the loop in :mod:`blackbox.executors.pool`): a worker that dies (SIGKILL, segfault, out of
memory) is replaced and every chunk that was in flight is evaluated again, up to ``max_retries``
times; results are identical to an undisturbed run. An exception in an evaluation is an :class:`EvaluationError` naming the row and seed, chained
to the original exception. With ``timeout``, a chunk that runs longer is killed, its rows are
retried one per task to find the hung ones, and those rows either raise (``on_timeout="error"``)
or score ``-inf`` (``"worst"``). Ctrl-C kills the workers at once and leaves no process behind.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, Protocol, TypeVar

import numpy as np

from .._validate import check_choice, check_float, check_int
from ..core.population import Population
from ..core.problem import EvalResult, Problem
from ..core.rows import Rows, Shared
from ..errors import ConfigError, StateError, WorkerError
from .bounds import check_worker_count, private_memory, quiet_resource_tracker, start_worker
from .markers import kill_overdue, mark_finished, mark_started, marker_file
from .pool import PoolExecutor, WorkerLost
from .shm import RunDirectory, load_file
from .wire import unshippable
from .worker import Outcome, WorkerCache, evaluate_task, thread_env

__all__ = ["LokyExecutor"]

#: With ``chunks_per_worker="auto"``: one chunk per worker while a generation keeps each worker
#: busy for less than this many seconds (dispatch cost dominates), or while every row takes the
#: same number of steps (equal work: one chunk a worker is balanced, and wait-free at the end of a
#: generation); otherwise AUTO_CHUNKS, so that workers that finish early take more.
AUTO_BUSY_SECONDS = 0.05
AUTO_CHUNKS = 4
#: Rows count as equal work when their steps differ by at most this fraction.
AUTO_EQUAL_STEPS = 0.02

_cache = WorkerCache()


def _problem_file(run_dir: str) -> Path:
    return Path(run_dir) / "problem"


def _shared_name(number: int) -> str:
    return f"generation-{number}"


def _shared_file(run_dir: str, number: int) -> Path:
    return Path(run_dir) / _shared_name(number)


def _worker_main(
    run_dir: str, token: str, task_id: int, number: int, rows: Rows, threads: int | None,
    batch_size: int | None, mark: bool, measure: bool = False,
) -> Outcome:
    """Runs in a loky worker: evaluate one set of rows of generation ``number``."""
    marker = marker_file(run_dir, task_id)
    outcome = evaluate_task(
        _cache, token, rows, lambda: load_file(_problem_file(run_dir)),
        lambda: load_file(_shared_file(run_dir, number)), key=number, threads=threads,
        batch_size=batch_size, before=(lambda: mark_started(marker)) if mark else None,
    )
    if mark:
        mark_finished(marker)
    if measure:
        outcome.meta["private_memory"] = private_memory()
    return outcome


P = ParamSpec("P")
R = TypeVar("R")


class _LokyPool(Protocol):
    """What this executor uses of loky's reusable executor (loky has no type information)."""

    def submit(self, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> cf.Future[R]: ...

    def shutdown(self, wait: bool = True, kill_workers: bool = False) -> None: ...


def _loky() -> tuple[Callable[..., _LokyPool], type[BaseException], type[BaseException]]:
    try:
        from loky import get_reusable_executor
        from loky.process_executor import BrokenProcessPool, ShutdownExecutorError
    except ImportError as exc:  # pragma: no cover - loky is a core dependency
        raise WorkerError("the loky executor needs the loky package: pip install loky") from exc
    return get_reusable_executor, BrokenProcessPool, ShutdownExecutorError


class LokyExecutor(PoolExecutor):
    """Worker processes on this machine (loky); compact row tasks, shared-memory broadcasts, retries.

    ``workers``: processes (default: every core loky sees, cgroup and affinity limits included).
    ``threads``: torch/BLAS/OpenMP threads per worker (default 1; None leaves them alone).
    ``chunks_per_worker``: tasks per worker and generation, or ``"auto"`` (1 while evaluations are
    quick or every row of the last generation took as many steps, 4 otherwise).
    ``timeout``: seconds a worker may spend on one task before it is killed; ``on_timeout``:
    ``"error"`` (raise EvaluationError naming the row) or ``"worst"`` (the hung rows score -inf).
    ``max_retries``: how often rows are re-run after their worker died before giving up.
    ``idle_timeout``: seconds idle workers wait for the next run before exiting.
    ``reuse``: keep workers alive after ``close()`` for the next run in this process.
    ``batch_size``: rows a worker passes to ``problem.evaluate`` at once (default: by memory).
    ``oversubscribe``: allow more than ``MAX_WORKERS_PER_CORE`` (4) workers per core.
    ``max_worker_memory``: megabytes of its own memory (anonymous pages and swap, not the shared
    noise table or broadcasts it maps) a worker may hold after a task; past it, the workers are
    restarted once the generation is over (a problem that leaks memory). Linux only.
    """

    name = "loky"

    def __init__(
        self,
        workers: int | None = None,
        *,
        threads: int | None = 1,
        chunks_per_worker: int | str = "auto",
        timeout: float | None = None,
        on_timeout: str = "error",
        max_retries: int = 3,
        idle_timeout: float = 300.0,
        reuse: bool = True,
        batch_size: int | None = None,
        oversubscribe: bool = False,
        max_worker_memory: float | None = None,
    ):
        super().__init__()
        if workers is None:
            from loky import cpu_count

            workers = cpu_count()
        self._workers = check_worker_count("loky", check_int("workers", workers, minimum=1), bool(oversubscribe))
        self.oversubscribe = bool(oversubscribe)
        self.max_worker_memory = None if max_worker_memory is None else check_float(
            "max_worker_memory", max_worker_memory, positive=True)
        if self.max_worker_memory is not None and private_memory() is None:
            raise ConfigError("loky:max_worker_memory needs /proc/PID/status (Linux) to measure a worker's own "
                              "memory; it is not available here")
        self._recycle = False  # a worker passed max_worker_memory in this generation
        self.threads = None if threads is None else check_int("threads", threads, minimum=1)
        if chunks_per_worker != "auto":
            chunks_per_worker = check_int("chunks_per_worker", chunks_per_worker, minimum=1)
        self.chunks_per_worker = chunks_per_worker
        self.timeout = None if timeout is None else check_float("timeout", timeout, positive=True)
        self.on_timeout = check_choice("on_timeout", on_timeout, ("error", "worst"))
        self.max_retries = check_int("max_retries", max_retries, minimum=0)
        self.idle_timeout = check_float("idle_timeout", idle_timeout, positive=True)
        self.reuse = bool(reuse)
        self.batch_size = None if batch_size is None else check_int("batch_size", batch_size, minimum=1)
        self._dir: RunDirectory | None = None
        self._token = ""
        self._task_ids = 0
        self._markers: dict[cf.Future[Outcome], int] = {}  # task id of each running task (its marker file)
        self._busy: float | None = None  # seconds each worker was busy in the last generation
        self._equal = False  # every row of the last generation took the same number of steps

    def __repr__(self) -> str:
        return f"LokyExecutor(workers={self._workers}, threads={self.threads})"

    @property
    def workers(self) -> int:
        return self._workers

    # -- the pool ---------------------------------------------------------------------------
    def _env(self) -> dict[str, str]:
        env = thread_env(self.threads)
        # loky recycles a worker whose resident memory grew by 300 MB since its first task; the
        # mapped noise table and broadcasts count as resident, so healthy workers would be
        # restarted over and over. Keep the user's own setting if there is one.
        env.setdefault("LOKY_MAX_MEMORY_LEAK_SIZE", os.environ.get("LOKY_MAX_MEMORY_LEAK_SIZE", "1e13"))
        return env

    def _pool(self) -> _LokyPool:
        get_reusable_executor, _, _ = _loky()
        quiet_resource_tracker()  # before loky starts its tracker with this process's flags
        # Each worker exits within a second once this process is gone (a SIGKILLed driver), instead
        # of idling for idle_timeout with the problem's memory; the same arguments every time, so
        # that loky reuses the pool.
        return get_reusable_executor(max_workers=self._workers, timeout=self.idle_timeout, env=self._env(),
                                     initializer=start_worker, initargs=(os.getpid(),))

    def _kill_pool(self) -> None:
        """Stop every worker now (Ctrl-C, or a worker that has to go)."""
        self._pool().shutdown(wait=True, kill_workers=True)

    # -- the protocol ------------------------------------------------------------------------
    def start(self, problem: Problem) -> None:
        run_dir = RunDirectory()
        try:  # the problem object itself, pickled once into shared memory
            size = run_dir.write("problem", problem, out_of_band=False, keep=True)
        except WorkerError:
            run_dir.cleanup()
            raise
        except Exception as exc:  # noqa: BLE001 - any pickling failure gets the same advice
            run_dir.cleanup()
            raise unshippable(problem, exc) from exc
        super().start(problem)
        if self._dir is not None:
            self._dir.cleanup()
        self._dir = run_dir
        self._token = uuid.uuid4().hex
        self._busy, self._equal = None, False
        self.stats.problem_bytes += size

    def close(self) -> None:
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None
        if not self.reuse:
            self._kill_pool()
        super().close()

    def _chunks(self, rows: int) -> int:
        if self.chunks_per_worker == "auto":
            quick = self._busy is not None and self._busy < AUTO_BUSY_SECONDS
            per = 1 if quick or self._equal else AUTO_CHUNKS
        else:
            per = int(self.chunks_per_worker)
        return min(rows, self._workers * per)

    def evaluate(
        self, population: Population, seeds: np.ndarray, state: dict[str, Any] | None = None
    ) -> EvalResult:
        seconds_before = self.stats.worker_seconds
        self._recycle = False
        result = super().evaluate(population, seeds, state)
        self._busy = (self.stats.worker_seconds - seconds_before) / self._workers
        if self._recycle:  # a worker holds more of its own memory than allowed: fresh workers
            self._kill_pool()
            self.stats.extra["recycled"] = self.stats.extra.get("recycled", 0) + 1
        steps = np.asarray(result.steps)
        self._equal = len(steps) > 1 and int(steps.max()) - int(steps.min()) <= AUTO_EQUAL_STEPS * int(steps.max())
        return result

    # -- the transport (see PoolExecutor) --------------------------------------------------------
    @property
    def _folder(self) -> RunDirectory:
        if self._dir is None:
            raise StateError("LokyExecutor has no shared folder before start(problem)")
        return self._dir

    def _publish(self, shared: Shared) -> None:
        self.stats.broadcast_bytes += self._folder.write(_shared_name(shared.number), shared)

    def _retract(self, shared: Shared) -> None:
        self._folder.remove(_shared_name(shared.number))
        self._markers.clear()

    def _submit(self, shared: Shared, rows: Rows) -> tuple[cf.Future[Outcome], object]:
        _, BrokenProcessPool, ShutdownExecutorError = _loky()
        pool = self._pool()
        self._task_ids += 1
        self.stats.task_bytes += rows.nbytes
        try:
            future = pool.submit(_worker_main, str(self._folder.path), self._token, self._task_ids, shared.number,
                                 rows, self.threads, self.batch_size, self.timeout is not None,
                                 self.max_worker_memory is not None)
        except (BrokenProcessPool, ShutdownExecutorError, RuntimeError) as exc:
            raise WorkerLost(pool, exc) from exc
        except OSError as exc:
            # A pipe of the pool broke under submit: a worker killed while loky was starting it, or the
            # manager's wake-up pipe closed as the pool broke (BrokenPipeError, seen when Ray actors
            # were killed at random moments). The pool is not to be trusted: its workers go, the next
            # submit gets a fresh pool, and the rows count as lost with a worker (retried).
            pool.shutdown(wait=False, kill_workers=True)
            raise WorkerLost(pool, exc) from exc
        self._markers[future] = self._task_ids
        return future, pool

    def _is_lost(self, error: BaseException) -> bool:
        _, BrokenProcessPool, ShutdownExecutorError = _loky()
        return isinstance(error, (BrokenProcessPool, ShutdownExecutorError))

    def _released(self, future: cf.Future[Outcome]) -> None:
        self._markers.pop(future, None)

    def _interrupted(self, running: list[cf.Future[Outcome]]) -> None:
        self._kill_pool()  # no worker may outlive Ctrl-C

    def _received(self, outcome: Outcome) -> None:
        super()._received(outcome)
        used = outcome.meta.get("private_memory")
        if self.max_worker_memory is not None and used is not None and used > self.max_worker_memory * 1e6:
            self._recycle = True

    def _overdue(self, running: list[cf.Future[Outcome]]) -> list[cf.Future[Outcome]]:
        """Kill the worker of every task running longer than the timeout; return those tasks."""
        return kill_overdue(self._folder.path, self._markers, running, float(self.timeout or 0.0))
