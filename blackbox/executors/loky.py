"""Evaluate in worker processes on this machine with loky's reusable executor.

What crosses the process boundary, and how often:

- the problem: once per worker per run. It is written once to a private folder in shared memory
  (``/dev/shm``) and each worker reads it on its first task of the run, keeping it (and whatever it
  builds lazily: environments, networks) until the run ends;
- the generation's broadcast (distinct base vectors, sigma, noise table ``(size, seed)``, problem
  state; a dense population's rows): written once per generation to the same folder and mapped by
  each worker on its first task of the generation; arrays are read in place, never copied over;
- each task: a chunk of compact rows (offsets, signs, parents, seeds: 32 bytes a row); each result:
  fitness, steps and per-row info.

The noise table is a memory-mapped cache file (``blackbox/noise.py``), so all workers share its
pages. Rows are split into a few chunks per worker, cut between mirrored pairs, and workers pull
chunks as they finish (load balance). Workers run with torch, OpenMP and BLAS capped at ``threads``
threads (default 1) so that ``workers`` processes do not oversubscribe the cores.

Faults: a worker that dies (SIGKILL, segfault, out of memory) is replaced and every chunk that was
in flight is evaluated again, up to ``max_retries`` times; results are identical to an undisturbed
run. An exception in an evaluation is an :class:`EvaluationError` naming the row and seed, chained
to the original exception. With ``timeout``, a chunk that runs longer is killed, its rows are
retried one per task to find the hung ones, and those rows either raise (``on_timeout="error"``)
or score ``-inf`` (``"worst"``). Ctrl-C kills the workers at once and leaves no process behind.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import pickle
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from .._validate import check_choice, check_float, check_int
from ..core.executor import Executor
from ..core.population import Population
from ..core.problem import EvalResult, Problem
from ..errors import WorkerError
from .shm import RunDirectory, load_file
from .wire import (
    DispatchStats,
    Task,
    WorkerCache,
    decode_outcome,
    encode_outcome,
    evaluation_timeout_error,
    join_results,
    pickle_problem,
    run_task,
    split_generation,
    task_row_bytes,
    thread_env,
)

__all__ = ["LokyExecutor"]

#: With ``chunks_per_worker="auto"``: one chunk per worker while a generation keeps each worker
#: busy for less than this many seconds (dispatch cost dominates), otherwise AUTO_CHUNKS.
AUTO_BUSY_SECONDS = 0.05
AUTO_CHUNKS = 4

_cache = WorkerCache()


def _problem_file(run_dir: str) -> Path:
    return Path(run_dir) / "problem"


def _broadcast_file(run_dir: str, number: int) -> Path:
    return Path(run_dir) / f"generation-{number}"


def _marker_file(run_dir: str, task_id: int) -> Path:
    return Path(run_dir) / f"running-{task_id}"


def _worker_main(payload: bytes) -> bytes:
    """Runs in a loky worker: evaluate one task, return the pickled outcome."""
    run_dir, token, task_id, packed, threads, batch_size, mark = pickle.loads(payload)
    task = Task.unpack(packed)
    marker = _marker_file(run_dir, task_id)

    def start_marker() -> None:
        if mark:
            marker.write_text(f"{os.getpid()} {time.time()!r}")

    outcome = run_task(
        _cache, token, task, lambda: pickle.loads(load_file(_problem_file(run_dir))),
        lambda: load_file(_broadcast_file(run_dir, task.number)), threads, batch_size, start_marker,
    )
    if mark:
        marker.unlink(missing_ok=True)
    return encode_outcome(outcome)


def _loky():
    try:
        from loky import get_reusable_executor
        from loky.process_executor import BrokenProcessPool, ShutdownExecutorError
    except ImportError as exc:  # pragma: no cover - loky is a core dependency
        raise WorkerError("the loky executor needs the loky package: pip install loky") from exc
    return get_reusable_executor, BrokenProcessPool, ShutdownExecutorError


class LokyExecutor(Executor):
    """Worker processes on this machine (loky); seed-only tasks, shared-memory broadcasts, retries.

    ``workers``: processes (default: every core loky sees, cgroup and affinity limits included).
    ``threads``: torch/BLAS/OpenMP threads per worker (default 1; None leaves them alone).
    ``chunks_per_worker``: tasks per worker and generation, or ``"auto"`` (1 while evaluations are
    quick, 4 once a generation keeps workers busy for 50 ms or more).
    ``timeout``: seconds a worker may spend on one task before it is killed; ``on_timeout``:
    ``"error"`` (raise EvaluationError naming the row) or ``"worst"`` (the hung rows score -inf).
    ``max_retries``: how often rows are re-run after their worker died before giving up.
    ``idle_timeout``: seconds idle workers wait for the next run before exiting.
    ``reuse``: keep workers alive after ``close()`` for the next run in this process.
    ``batch_size``: rows a worker passes to ``problem.evaluate`` at once (default: by memory).
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
    ):
        super().__init__()
        if workers is None:
            from loky import cpu_count

            workers = cpu_count()
        self._workers = check_int("workers", workers, minimum=1)
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
        self.stats = DispatchStats()
        self._dir: RunDirectory | None = None
        self._token = ""
        self._number = 0
        self._task_ids = 0
        self._busy = None  # seconds each worker was busy in the last generation

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

    def _pool(self):
        get_reusable_executor, _, _ = _loky()
        return get_reusable_executor(max_workers=self._workers, timeout=self.idle_timeout, env=self._env())

    def _kill_pool(self) -> None:
        """Stop every worker now (Ctrl-C, or a worker that has to go)."""
        get_reusable_executor, _, _ = _loky()
        pool = get_reusable_executor(max_workers=self._workers, timeout=self.idle_timeout, env=self._env())
        pool.shutdown(wait=True, kill_workers=True)

    # -- the protocol ------------------------------------------------------------------------
    def start(self, problem: Problem) -> None:
        problem_bytes = pickle_problem(problem)
        super().start(problem)
        if self._dir is not None:
            self._dir.cleanup()
        self._dir = RunDirectory()
        self._token = uuid.uuid4().hex
        self._number = 0
        self._busy = None
        self.stats.problem_bytes += self._dir.write("problem", problem_bytes, out_of_band=False, keep=True)

    def close(self) -> None:
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None
        if not self.reuse:
            self._kill_pool()
        super().close()

    def _chunks(self, rows: int) -> int:
        per = self.chunks_per_worker
        if per == "auto":
            per = 1 if self._busy is not None and self._busy < AUTO_BUSY_SECONDS else AUTO_CHUNKS
        return min(rows, self._workers * per)

    def evaluate(
        self, population: Population, seeds: np.ndarray, state: dict[str, Any] | None = None
    ) -> EvalResult:
        self._require_started()
        self._number += 1
        number = self._number
        broadcast, tasks = split_generation(number, population, seeds, state, self._chunks(len(population)))
        name = f"generation-{number}"
        size = self._dir.write(name, broadcast)
        self.stats.generations += 1
        self.stats.broadcast_bytes += size
        seconds_before = self.stats.worker_seconds
        try:
            results, worst = self._run(tasks, broadcast)
        except BaseException as exc:
            if not isinstance(exc, Exception):  # Ctrl-C, SystemExit: no worker may outlive us
                self._kill_pool()
            raise
        finally:
            self._dir.remove(name)
        self._busy = (self.stats.worker_seconds - seconds_before) / self._workers
        return join_results(results, worst)

    # -- running tasks, with retries and timeouts --------------------------------------------
    def _submit(self, pool, task: Task, broadcast) -> tuple[cf.Future, int]:
        self._task_ids += 1
        payload = pickle.dumps(
            (str(self._dir.path), self._token, self._task_ids, task.pack(), self.threads, self.batch_size,
             self.timeout is not None),
            protocol=5,
        )
        self.stats.tasks += 1
        self.stats.task_bytes += len(payload) + task_row_bytes(broadcast, task)
        return pool.submit(_worker_main, payload), self._task_ids

    def _run(self, tasks: list[Task], broadcast) -> tuple[dict[int, EvalResult], list[Task]]:
        """Results keyed by first row, and the tasks whose rows hung and score worst."""
        _, BrokenProcessPool, ShutdownExecutorError = _loky()
        results: dict[int, EvalResult] = {}
        worst: list[Task] = []
        todo = list(tasks)
        while todo:
            pool = self._pool()
            submitted: dict[cf.Future, tuple[Task, int]] = {}
            broken: BaseException | None = None
            try:
                for task in todo:
                    future, task_id = self._submit(pool, task, broadcast)
                    submitted[future] = (task, task_id)
            except (BrokenProcessPool, ShutdownExecutorError, RuntimeError) as exc:
                broken = exc
            hung, broken = self._collect(submitted, results, broken)
            todo = [t for t in todo if t.start not in results]
            if not todo:
                break
            if hung:
                todo = self._after_timeout(todo, hung, worst)
                continue
            self.stats.worker_failures += 1
            for task in todo:
                task.attempt += 1
                if task.attempt > self.max_retries:
                    raise WorkerError(
                        f"rows {task.start}..{task.stop - 1} were in flight when a worker died "
                        f"{task.attempt} times (max_retries={self.max_retries}); last failure: {broken}"
                    ) from broken
            self.stats.resubmitted += len(todo)
        return results, worst

    def _collect(self, submitted, results, broken):
        """Wait for every submitted task; returns (tasks that timed out, the pool's failure)."""
        _, BrokenProcessPool, ShutdownExecutorError = _loky()
        waiting = set(submitted)
        hung: list[Task] = []
        poll = None if self.timeout is None else max(0.01, min(0.5, self.timeout / 10))
        try:
            while waiting:
                done, waiting = cf.wait(waiting, timeout=poll, return_when=cf.FIRST_COMPLETED)
                for future in done:
                    task, _ = submitted[future]
                    error = future.exception()
                    if error is None:
                        data = future.result()
                        self.stats.result_bytes += len(data)
                        result, meta = decode_outcome(data, task, "loky")
                        self.stats.record(meta)
                        results[task.start] = result
                    elif isinstance(error, (BrokenProcessPool, ShutdownExecutorError)):
                        broken = error
                    else:
                        raise WorkerError(f"loky could not run rows {task.start}..{task.stop - 1}: "
                                          f"{type(error).__name__}: {error}") from error
                if self.timeout is not None and waiting:
                    hung.extend(self._kill_hung(submitted, waiting))
        except BaseException:
            for future in waiting:
                future.cancel()
            raise
        return hung, broken

    def _kill_hung(self, submitted, waiting) -> list[Task]:
        """Kill the worker of every task running longer than the timeout; return those tasks."""
        now = time.time()
        hung = []
        for future in list(waiting):
            task, task_id = submitted[future]
            marker = _marker_file(str(self._dir.path), task_id)
            try:
                pid_text, started = marker.read_text().split()
            except (OSError, ValueError):
                continue  # not started yet, or just finished
            if now - float(started) > self.timeout and not future.done():
                hung.append(task)
                self.stats.timeouts += 1
                marker.unlink(missing_ok=True)
                try:
                    os.kill(int(pid_text), signal.SIGKILL)
                except ProcessLookupError:
                    pass
        return hung

    def _after_timeout(self, todo: list[Task], hung: list[Task], worst: list[Task]) -> list[Task]:
        """Rows of a hung chunk are retried one per task; a hung single row is settled for good."""
        hung_starts = {t.start for t in hung}
        again: list[Task] = []
        for task in todo:
            if task.start not in hung_starts:
                again.append(task)
            elif len(task) > 1:
                again.extend(task.split())
            elif self.on_timeout == "error":
                raise evaluation_timeout_error(task, self.timeout)
            else:
                worst.append(task)
        self.stats.resubmitted += len(again)
        return again
